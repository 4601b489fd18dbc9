/* preload.h -- private declarations shared by the files of
 * libmemplan-preload.so (preload/preload.c, preload/registry.c).
 * Nothing here is exported: the library exports only the malloc family. */
#ifndef MEMPLAN_PRELOAD_H
#define MEMPLAN_PRELOAD_H

#include <stddef.h>
#include <stdint.h>

/* The real allocator (the next definition after this library, normally
 * glibc's), resolved with dlsym(RTLD_NEXT, ...). */
typedef struct mpp_real {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
    int (*malloc_trim)(size_t);   /* NULL unless defined by the same object as malloc */
} mpp_real;

extern mpp_real mpp__real;

/* ---- the registry of blocks served through the arena (registry.c) ----
 * A hash table from block address to requested size, under one mutex, in
 * front of a lock-free counting filter: a pointer whose filter counter is 0
 * (nearly every pointer of the program) is known not to be ours without
 * taking the lock.  Every block the arena hands out is 64-aligned. */

/* Adds p; 0 on success, -1 if the table could not grow (p not added). */
int mpp__reg_put(void *p, size_t size);
/* 1 and *size if p is registered (take: also removes it), else 0. */
int mpp__reg_get(void *p, size_t *size, int take);
/* fork handlers: hold the registry lock across fork. */
void mpp__reg_lock(void);
void mpp__reg_unlock(void);
/* Verification (MEMPLAN_VERIFY=1): each put checks the new block against
 * every registered block and counts overlaps. */
void mpp__reg_set_verify(int on);
uint64_t mpp__reg_overlaps(void);
size_t mpp__reg_live(void);

#endif /* MEMPLAN_PRELOAD_H */
