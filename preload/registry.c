/* registry.c -- which pointers belong to the arena (libmemplan-preload.so).
 *
 * free, realloc and malloc_usable_size must tell the arena's blocks from
 * everything else the program holds.  Every block served through the arena
 * is put here, under its address, with its requested size: an open
 * addressing table (linear probing, deletion by backward shift, doubling
 * at half load) under one mutex, allocated from the real allocator.
 *
 * The table sits behind a counting filter: FILTER atomic counters indexed
 * by a hash of the address.  put increments the counter of p, a removal
 * decrements it.  A lookup whose counter is 0 needs no lock: p is not ours.
 * That answer is exact, not a guess, because a block is registered before
 * its address is returned to the program, and the program can only free it
 * after that (it had to receive the address).  Arena blocks are aligned to
 * 64, so any other address is rejected even before the filter.
 *
 * Cost: the common free of a small block is two loads; a lookup of a
 * registered block (or of one sharing its filter counter) is O(1) expected
 * under the lock. */
#include "preload.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define FILTER_BITS 16
#define ARENA_ALIGN 64

typedef struct rent {
    uintptr_t p;   /* 0: empty */
    size_t size;
} rent;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static rent *tab;
static size_t cap, used;
static _Atomic uint32_t filter[(size_t)1 << FILTER_BITS];
static int verify;
static _Atomic uint64_t overlaps;

static uint64_t mix(uintptr_t p) {
    return ((uint64_t)p >> 6) * 0x9e3779b97f4a7c15ull;
}

static size_t fslot(uintptr_t p) { return (size_t)(mix(p) >> (64 - FILTER_BITS)); }

static size_t home(uintptr_t p, size_t mask) {
    uint64_t h = mix(p);
    return (size_t)(h ^ (h >> 29)) & mask;
}

/* Slot of p, or the empty slot where it would go.  cap > 0. */
static size_t find(uintptr_t p) {
    size_t mask = cap - 1, i = home(p, mask);
    while (tab[i].p && tab[i].p != p) i = (i + 1) & mask;
    return i;
}

static int grow(void) {
    size_t nc = cap ? 2 * cap : 256;
    rent *t = mpp__real.calloc(nc, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < cap; i++)
        if (tab[i].p) {
            size_t j = home(tab[i].p, nc - 1);
            while (t[j].p) j = (j + 1) & (nc - 1);
            t[j] = tab[i];
        }
    mpp__real.free(tab);
    tab = t;
    cap = nc;
    return 0;
}

static void erase(size_t i) {
    size_t mask = cap - 1, j = i;
    tab[i].p = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!tab[j].p) break;
        size_t h = home(tab[j].p, mask);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            tab[i] = tab[j];
            tab[j].p = 0;
            i = j;
        }
    }
    used--;
}

int mpp__reg_put(void *ptr, size_t size) {
    uintptr_t p = (uintptr_t)ptr;
    int rc = 0;
    pthread_mutex_lock(&mu);
    if (2 * (used + 1) > cap && grow() != 0) {
        rc = -1;
    } else {
        if (verify) {   /* O(table): only when asked for */
            for (size_t i = 0; i < cap; i++)
                if (tab[i].p && tab[i].p < p + size && p < tab[i].p + tab[i].size)
                    atomic_fetch_add_explicit(&overlaps, 1, memory_order_relaxed);
        }
        size_t i = find(p);
        if (tab[i].p) {   /* the same address twice: the old entry is stale */
            atomic_fetch_add_explicit(&overlaps, 1, memory_order_relaxed);
        } else {
            used++;
            atomic_fetch_add_explicit(&filter[fslot(p)], 1, memory_order_relaxed);
        }
        tab[i] = (rent){p, size};
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int mpp__reg_get(void *ptr, size_t *size, int take) {
    uintptr_t p = (uintptr_t)ptr;
    if (p % ARENA_ALIGN || !atomic_load_explicit(&filter[fslot(p)], memory_order_relaxed))
        return 0;
    int found = 0;
    pthread_mutex_lock(&mu);
    if (cap) {
        size_t i = find(p);
        if (tab[i].p) {
            found = 1;
            *size = tab[i].size;
            if (take) {
                erase(i);
                atomic_fetch_sub_explicit(&filter[fslot(p)], 1, memory_order_relaxed);
            }
        }
    }
    pthread_mutex_unlock(&mu);
    return found;
}

void mpp__reg_lock(void) { pthread_mutex_lock(&mu); }
void mpp__reg_unlock(void) { pthread_mutex_unlock(&mu); }
void mpp__reg_set_verify(int on) { verify = on; }
uint64_t mpp__reg_overlaps(void) { return atomic_load(&overlaps); }

size_t mpp__reg_live(void) {
    pthread_mutex_lock(&mu);
    size_t n = used;
    pthread_mutex_unlock(&mu);
    return n;
}
