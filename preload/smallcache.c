/* smallcache.c -- a per-thread cache of freed mid-size blocks in front of
 * the real allocator (libmemplan-preload.so).
 *
 * Requests below MEMPLAN_THRESHOLD (64 KiB) never reach the arena: they are
 * the program's small tensors and interpreter objects, which do not repeat
 * with a clean period.  glibc serves them from its own per-thread cache
 * only up to 1 KiB and 7 blocks of a size; the rest goes through its
 * locked bins and, next to the top of the heap, through consolidation:
 * about 35 ns per malloc/free pair for the small blocks of a training
 * step's trace, against 8 ns for tcmalloc (bench/runtime/replay.c).
 *
 * The cache keeps such blocks after free and hands them out again to the
 * next request of the same size class, on the same thread, without a lock.
 * Classes: 8 per power of two from 256 B to 64 KiB (65 of them).  A
 * request of s bytes in [256 B, 64 KiB] uses class ceil(s) and, on a miss,
 * asks the real allocator for that class's size, so that the block lands
 * in the same class when freed (at most 12.5% more than asked).  A freed
 * block goes to the class floor(malloc_usable_size), so a block in a class
 * always holds at least that class's size: whatever its origin (calloc,
 * realloc, memalign), it is big enough for every request served from the
 * class.  A freed block holds the link to the next one in its first word
 * and its usable size in the second.  posix_memalign with an alignment up
 * to 64 takes the first block of its class when that one is aligned.
 *
 * Bounds: at most MEMPLAN_SMALL_CACHE bytes (default 1 MiB, 0 turns the
 * cache off) per thread, counted by usable size.  A free that would pass
 * the bound first returns the whole cache to the real allocator: no block
 * stays for good in a class the program has stopped asking for, and the
 * cost is one real free per cached block, paid once per bound's worth of
 * frees.  A thread's blocks go back to the real allocator when it exits
 * (a pthread key's destructor), and after that the thread caches nothing.  Only blocks of the real allocator
 * arrive here: preload.c's free asks the arena and the registry first. */
#include "preload.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#define MIN_SHIFT 8    /* 256 B */
#define MAX_SHIFT 16   /* 64 KiB */
#define STEPS 8        /* classes per power of two */
#define NCLASS ((MAX_SHIFT - MIN_SHIFT) * STEPS + 1)
#define MIN_SIZE ((size_t)1 << MIN_SHIFT)
#define MAX_SIZE ((size_t)1 << MAX_SHIFT)

typedef struct tcache {
    void *head[NCLASS];
    size_t bytes;       /* usable bytes held */
    uint64_t hits;      /* requests served from head[] */
    int state;          /* 0: fresh, 1: key set (flushed at exit), 2: exited */
} tcache;

static _Thread_local tcache tc __attribute__((tls_model("initial-exec")));
static size_t cap = (size_t)1 << 20;
static pthread_key_t key;
static int have_key;
static _Atomic uint64_t exited_hits;   /* hits of threads that have exited */

/* Size of class c: (STEPS + m) << (e - 3) for c = (e - MIN_SHIFT) * STEPS + m. */
static size_t class_size(unsigned c) {
    unsigned e = MIN_SHIFT + c / STEPS, m = c % STEPS;
    return (size_t)(STEPS + m) << (e - 3);
}

/* The largest class whose size is at most n; MIN_SIZE <= n <= MAX_SIZE. */
static unsigned class_floor(size_t n) {
    unsigned e = 63u - (unsigned)__builtin_clzll((unsigned long long)n);
    return (e - MIN_SHIFT) * STEPS + (unsigned)((n >> (e - 3)) & (STEPS - 1));
}

/* Returns every block of this thread's cache to the real allocator. */
static void drain(void) {
    for (unsigned c = 0; c < NCLASS; c++)
        while (tc.head[c]) {
            void *p = tc.head[c];
            memcpy(&tc.head[c], p, sizeof(void *));
            mpp__real.free(p);
        }
    tc.bytes = 0;
}

/* The key's destructor, at the thread's exit: drain, and cache no more. */
static void thread_exit(void *unused) {
    (void)unused;
    drain();
    tc.state = 2;
    atomic_fetch_add_explicit(&exited_hits, tc.hits, memory_order_relaxed);
    tc.hits = 0;
}

void mpp__small_init(size_t cap_bytes) {
    cap = cap_bytes;
    have_key = cap && pthread_key_create(&key, thread_exit) == 0;
    if (!have_key) cap = 0;   /* no way to flush at thread exit: no cache */
}

/* The class serving requests of size bytes, or NCLASS: not cached. */
static unsigned class_of_request(size_t size) {
    if (size < MIN_SIZE || size > MAX_SIZE || !cap) return NCLASS;
    unsigned c = class_floor(size);
    return class_size(c) < size ? c + 1 : c;
}

/* Takes the first block of class c off this thread's list. */
static void *pop(unsigned c) {
    void *p = tc.head[c];
    size_t n;
    memcpy(&tc.head[c], p, sizeof(void *));
    memcpy(&n, (char *)p + sizeof(void *), sizeof n);
    tc.bytes -= n;
    tc.hits++;
    return p;
}

void *mpp__small_malloc(size_t size) {
    unsigned c = class_of_request(size);
    if (c == NCLASS) return mpp__real.malloc(size);
    return tc.head[c] ? pop(c) : mpp__real.malloc(class_size(c));
}

int mpp__small_memalign(void **out, size_t align, size_t size) {
    bool ok = align && !(align & (align - 1)) && align % sizeof(void *) == 0 && align <= 64;
    unsigned c = ok ? class_of_request(size) : NCLASS;
    if (c == NCLASS) return mpp__real.posix_memalign(out, align, size);
    if (tc.head[c] && (uintptr_t)tc.head[c] % align == 0) {
        *out = pop(c);
        return 0;
    }
    /* a miss allocates the class's size, so that the block comes back here */
    return mpp__real.posix_memalign(out, align, class_size(c));
}

int mpp__small_free(void *p) {
    if (!cap || tc.state == 2) return 0;
    size_t n = mpp__real.malloc_usable_size(p);
    if (n < MIN_SIZE || n > MAX_SIZE || n > cap) return 0;
    /* full: start again rather than pick a victim.  Blocks of a class that
     * no request uses any more must not stay for good */
    if (tc.bytes + n > cap) drain();
    if (tc.state == 0) {   /* first block of this thread: flush it at exit */
        if (pthread_setspecific(key, &tc) != 0) return 0;
        tc.state = 1;
    }
    unsigned c = class_floor(n);
    memcpy(p, &tc.head[c], sizeof(void *));
    memcpy((char *)p + sizeof(void *), &n, sizeof n);
    tc.head[c] = p;
    tc.bytes += n;
    return 1;
}

uint64_t mpp__small_hits(void) {
    return atomic_load_explicit(&exited_hits, memory_order_relaxed) + tc.hits;
}
