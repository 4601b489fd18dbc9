/* preload.h -- private declarations shared by the files of
 * libmemplan-preload.so (preload/preload.c, registry.c, env.c, record.c,
 * smallcache.c, why.c).
 * Nothing here is exported: the library exports only the malloc family. */
#ifndef MEMPLAN_PRELOAD_H
#define MEMPLAN_PRELOAD_H

#include <stdatomic.h>
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
    int (*mallopt)(int, int);     /* the same */
} mpp_real;

extern mpp_real mpp__real;

/* Set while this thread is inside memplan: its calls to the malloc family
 * go straight to the real allocator and are not recorded (preload.c). */
extern _Thread_local int mpp__guard __attribute__((tls_model("initial-exec")));

/* One message on stderr, formatted into a stack buffer (no allocation). */
void mpp__say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- numbers in the environment (env.c) ---- */
enum { MPP_NUM_OK = 0, MPP_NUM_BAD = 1, MPP_NUM_RANGE = 2 };
/* "123", "64K", "1.5M", "2GiB", "10MB" (see env.c) into *out; MPP_NUM_*. */
int mpp__parse_size(const char *s, size_t *out);
/* Reads variable name into *dst; a malformed value is reported once,
 * naming the accepted forms and the default dflt, and *dst is kept. */
void mpp__env_size(const char *name, size_t *dst, const char *dflt);

/* ---- MEMPLAN_TRACE: the run's malloc events as a trace (record.c) ---- */
extern _Atomic int mpp__rec_on;   /* 1 while recording: the only cost when off */
/* Reads MEMPLAN_TRACE and MEMPLAN_TRACE_MAX; 1 if recording starts. */
int mpp__rec_init(void);
/* Events of the calling thread (never called with mpp__guard set). */
void mpp__rec_alloc(void *p, size_t size);
void mpp__rec_free(void *p);
/* The real realloc with its free and allocation recorded as one step. */
void *mpp__rec_realloc(void *p, size_t size);
/* In a forked child: stop, never write. */
void mpp__rec_fork_child(void);
/* At exit: writes the trace; a line on stderr when verbose, when the bound
 * was hit or when it cannot be written. */
void mpp__rec_finish(int verbose);

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

/* ---- the per-thread cache of freed 1-64 KiB blocks (smallcache.c) ---- */
/* Sets the per-thread bound in bytes (0: no cache); once, before use. */
void mpp__small_init(size_t cap_bytes);
/* A block of at least size bytes: from the calling thread's cache, else
 * from the real malloc (NULL as it returns it). */
void *mpp__small_malloc(size_t size);
/* posix_memalign's contract, from the cache where the first block of the
 * class is aligned to align (<= 64), else from the real posix_memalign. */
int mpp__small_memalign(void **out, size_t align, size_t size);
/* 1 if p, a block of the real allocator, was kept in the cache. */
int mpp__small_free(void *p);
/* Requests served from the caches so far (threads that exited + this one). */
uint64_t mpp__small_hits(void);

/* ---- why the arena is not replaying (why.c) ---- */
typedef struct mpp_why {
    int state;               /* the arena's mp_arena_state */
    int failed;              /* out of memory: nothing to say */
    size_t max_learn, warmup;
    size_t events;           /* traced events of the learning arena */
    size_t period, iterations, prefix;   /* a period found but not confirmed */
    size_t candidates, distinct;         /* candidate iterations, distinct patterns */
    size_t longest, longest_events;      /* longest run of equal ones, their length */
} mpp_why;

struct mp_arena_t;
/* Looks at the arena's learning trace under its lock (why.c's header). */
void mpp__why_compute(struct mp_arena_t *a, mpp_why *w);
/* One sentence, "" when there is nothing to explain (replaying). */
void mpp__why_text(const mpp_why *w, char *buf, size_t cap);

#endif /* MEMPLAN_PRELOAD_H */
