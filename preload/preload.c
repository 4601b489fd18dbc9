/* preload.c -- libmemplan-preload.so: the replay arena under an unmodified
 * program, through LD_PRELOAD (issue 5 item 4; docs/preload.md).
 *
 * It defines malloc, free, calloc, realloc, reallocarray, posix_memalign,
 * aligned_alloc, memalign, valloc, pvalloc and malloc_usable_size.  Every
 * request below MEMPLAN_THRESHOLD bytes, or asking for an alignment above
 * 64, goes to the real allocator (dlsym(RTLD_NEXT, ...)).  The others go to
 * one mp_arena_t whose backing allocator is the real one: it learns the
 * loop, detects its period and then serves each request from its planned
 * offset (src/runtime/arena.c).  Blocks served that way are registered
 * (registry.c), so free, realloc and malloc_usable_size know them; every
 * other pointer goes to the real functions untouched.
 *
 * Rules that keep the program safe:
 * - a thread-local guard: while a thread is inside memplan (the arena and
 *   the planners call malloc themselves), its calls go to the real
 *   allocator;
 * - dlsym may allocate before the real functions are known: those requests
 *   are served from a static bootstrap buffer, whose blocks are never
 *   passed to the real free;
 * - any failure on the arena path (no arena, a planner error, the registry
 *   cannot grow) forwards the request instead;
 * - after fork, the child stops using the arena (another thread may have
 *   held its lock): new requests are forwarded and frees of arena blocks
 *   inherited from the parent are leaked, never passed to the real free;
 * - at exit the arena is never destroyed, because blocks may still be live
 *   and later destructors may still free them.
 *
 * Trim: the blocks forwarded while learning go back to the real allocator,
 * which keeps them cached (glibc raises its mmap threshold after the first
 * large free, so later large blocks come from its heap and stay there).
 * When the real allocator is glibc (its malloc_trim is defined by the same
 * object as its malloc), malloc_trim(0) runs once when the arena starts
 * replaying, before the region's pages are touched, and once more after
 * the first replayed iteration, when the blocks live at the switch have
 * been freed (MEMPLAN_TRIM=0 turns it off); not again after the arena
 * returns to learning (MEMPLAN_RELEARN, the arena's relearn_after).
 *
 * Around that: MEMPLAN_TRACE records every call of the program as a trace
 * (record.c; one relaxed load per call when it is off), the numbers in the
 * environment take units (env.c), and at exit the summary says in KiB/MiB
 * what the arena did and, when it is not replaying, why (why.c). */
#define _GNU_SOURCE
#include "preload.h"

#include "memplan.h"
#include "../src/runtime/arena_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define ARENA_ALIGN 64
#define DEFAULT_THRESHOLD ((size_t)64 << 10)

enum { MODE_OFF = 0, MODE_ON = 1, MODE_CHILD = 2 };

mpp_real mpp__real;

static _Atomic int resolved;
static pthread_mutex_t resolve_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t arena_mu = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local int t_resolving __attribute__((tls_model("initial-exec")));
_Thread_local int mpp__guard __attribute__((tls_model("initial-exec")));

static _Atomic int mode = MODE_OFF;
static _Atomic(mp_arena_t *) arena;
static size_t threshold = DEFAULT_THRESHOLD;
static size_t warmup, max_edits;
static size_t relearn = SIZE_MAX;   /* MEMPLAN_RELEARN; SIZE_MAX: the arena's default */
static size_t patterns;             /* MEMPLAN_PATTERNS; 0: the arena's default */
static int summary, trim = 1, lean = 1;
static char stats_path[4096];
static char strategy[64] = "auto";

/* counters of the preload front (the arena counts the rest) */
static _Atomic uint64_t n_noarena, n_align_fwd, n_arena_fail, n_realloc_moves, n_child_leaks;
static _Atomic uint64_t n_trims, n_trims_released;
/* 0: learning, 1: trimmed at the switch to replay, 2: done (or never) */
static _Atomic int trim_phase;

/* ---- the bootstrap buffer (served while dlsym runs) ---------------------- */

static _Alignas(64) unsigned char boot[(size_t)64 << 10];
static _Atomic size_t boot_top;

static int is_boot(const void *p) {
    return (const unsigned char *)p >= boot && (const unsigned char *)p < boot + sizeof boot;
}

static void *boot_alloc(size_t size, size_t align) {
    if (align < 16) align = 16;
    size_t old = atomic_load(&boot_top), start;
    do {
        start = (old + 16 + align - 1) & ~(align - 1);
        if (size > sizeof boot || start > sizeof boot - size) return NULL;
    } while (!atomic_compare_exchange_weak(&boot_top, &old, start + size));
    memcpy(boot + start - sizeof size, &size, sizeof size);   /* zeroed already */
    return boot + start;
}

static size_t boot_size(const void *p) {
    size_t n;
    memcpy(&n, (const unsigned char *)p - sizeof n, sizeof n);
    return n;
}

/* ---- the real functions ---------------------------------------------------- */

void mpp__say(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n > (int)sizeof buf - 1) n = (int)sizeof buf - 1;
    if (n > 0) (void)!write(2, buf, (size_t)n);
}

static void *sym(const char *name) { return dlsym(RTLD_NEXT, name); }

/* 1 when the real functions are usable; 0 while this thread runs dlsym. */
static int resolve(void);

static inline int ready(void) {
    if (__builtin_expect(atomic_load_explicit(&resolved, memory_order_acquire), 1)) return 1;
    return resolve();
}

/* ready's slow side: resolves the real functions once. */
static int resolve(void) {
    if (t_resolving) return 0;
    t_resolving = 1;
    pthread_mutex_lock(&resolve_mu);
    if (!atomic_load(&resolved)) {
        mpp_real r;
        r.malloc = (void *(*)(size_t))sym("malloc");
        r.free = (void (*)(void *))sym("free");
        r.calloc = (void *(*)(size_t, size_t))sym("calloc");
        r.realloc = (void *(*)(void *, size_t))sym("realloc");
        r.posix_memalign = (int (*)(void **, size_t, size_t))sym("posix_memalign");
        r.aligned_alloc = (void *(*)(size_t, size_t))sym("aligned_alloc");
        r.memalign = (void *(*)(size_t, size_t))sym("memalign");
        r.valloc = (void *(*)(size_t))sym("valloc");
        r.pvalloc = (void *(*)(size_t))sym("pvalloc");
        r.malloc_usable_size = (size_t(*)(void *))sym("malloc_usable_size");
        /* glibc's malloc_trim would be the wrong one for another allocator
         * preloaded after this library: keep it only if it comes from the
         * object that defines the real malloc */
        r.malloc_trim = (int (*)(size_t))sym("malloc_trim");
        Dl_info im, it;
        if (r.malloc_trim && !(r.malloc && dladdr((void *)r.malloc, &im) &&
                               dladdr((void *)r.malloc_trim, &it) && im.dli_fbase == it.dli_fbase))
            r.malloc_trim = NULL;
        r.mallopt = r.malloc_trim ? (int (*)(int, int))sym("mallopt") : NULL;
        if (r.mallopt && !(dladdr((void *)r.mallopt, &it) && im.dli_fbase == it.dli_fbase))
            r.mallopt = NULL;
        if (!r.malloc || !r.free || !r.calloc || !r.realloc || !r.posix_memalign ||
            !r.memalign || !r.malloc_usable_size) {
            mpp__say("memplan-preload: the real allocator was not found (dlsym RTLD_NEXT)\n");
            abort();
        }
        mpp__real = r;
        atomic_store_explicit(&resolved, 1, memory_order_release);
    }
    pthread_mutex_unlock(&resolve_mu);
    t_resolving = 0;
    return 1;
}

/* ---- the arena path ---------------------------------------------------------- */

/* Lean backing (MEMPLAN_LEAN, on by default): blocks of at least LEAN_MIN
 * bytes that the arena forwards (while learning, its fallbacks) and its
 * regions are mapped and unmapped directly, so that memory freed while
 * learning goes back to the system at once instead of staying in the real
 * allocator's cache (glibc keeps what it frees once its mmap threshold has
 * risen).  Pages are page-aligned, more than the arena's 64. */
#define LEAN_MIN ((uint64_t)64 << 10)
#define LEAN_TRIM_THRESHOLD (4 << 20)

static size_t page_round(uint64_t size) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return ((size_t)size + pg - 1) & ~(pg - 1);
}

static void *back_alloc(void *user, uint64_t size, uint64_t align) {
    (void)user;
    void *p = NULL;
    if (size > SIZE_MAX / 2) return NULL;
    if (lean && size >= LEAN_MIN) {
        p = mmap(NULL, page_round(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    return mpp__real.posix_memalign(&p, (size_t)align, (size_t)size) == 0 ? p : NULL;
}

static void back_free(void *user, void *p, uint64_t size) {
    (void)user;
    if (lean && size >= LEAN_MIN) (void)munmap(p, page_round(size));
    else mpp__real.free(p);
}

/* The arena, created on first use; NULL if it cannot be (then MODE_OFF). */
static mp_arena_t *get_arena(void) {
    mp_arena_t *a = atomic_load_explicit(&arena, memory_order_acquire);
    if (a) return a;
    pthread_mutex_lock(&arena_mu);
    a = atomic_load(&arena);
    if (!a) {
        mp_arena_options_t o;
        mp_arena_options_default(&o);
        o.backing_alloc = back_alloc;
        o.backing_free_sized = back_free;
        o.align = ARENA_ALIGN;
        o.strategy = strategy;
        if (warmup) o.warmup_iterations = warmup;
        if (max_edits) o.max_edits = max_edits;
        if (relearn != SIZE_MAX) o.relearn_after = relearn;
        if (patterns) o.max_patterns = patterns;
        if (mp_arena_create(&o, &a) != MP_OK) {
            mpp__say("memplan-preload: no arena (%s); forwarding everything\n", mp_last_error());
            a = NULL;
            atomic_store(&mode, MODE_OFF);
        } else {
            atomic_store_explicit(&arena, a, memory_order_release);
        }
    }
    pthread_mutex_unlock(&arena_mu);
    return a;
}

/* True when a request of size bytes aligned to align goes to the arena. */
static int wants_arena(size_t size, size_t align) {
    if (mpp__guard || atomic_load_explicit(&mode, memory_order_acquire) != MODE_ON) return 0;
    if (size < threshold) return 0;
    if (align > ARENA_ALIGN) {
        atomic_fetch_add_explicit(&n_align_fwd, 1, memory_order_relaxed);
        return 0;
    }
    return 1;
}

/* Runs the real malloc_trim(0) and counts it. */
static void do_trim(void) {
    atomic_fetch_add_explicit(&n_trims, 1, memory_order_relaxed);
    if (mpp__real.malloc_trim(0))
        atomic_fetch_add_explicit(&n_trims_released, 1, memory_order_relaxed);
}

/* Called after each arena request until the trims are done (see the
 * header): a stats snapshot while learning, nothing afterwards. */
static void maybe_trim(mp_arena_t *a) {
    int ph = atomic_load_explicit(&trim_phase, memory_order_relaxed);
    if (ph >= 2) return;
    if (!trim || !mpp__real.malloc_trim) {
        atomic_store(&trim_phase, 2);
        return;
    }
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    if (st.state == MP_ARENA_PASSTHROUGH) {
        atomic_store(&trim_phase, 2);
    } else if (st.state == MP_ARENA_REPLAYING) {
        int want = st.iterations >= 1 ? 2 : 1;   /* one thread per phase trims */
        if (ph < want && atomic_compare_exchange_strong(&trim_phase, &ph, want)) do_trim();
    }
}

/* A block from the arena; NULL means: forward instead.  Blocks the arena
 * forwarded are registered; region blocks are not: the arena publishes the
 * span of its regions, and free asks the arena about pointers inside it. */
static void *big_alloc(size_t size) {
    int saved = errno;
    void *p = NULL;
    bool in_region = false;
    mpp__guard = 1;
    mp_arena_t *a = get_arena();
    if (!a) atomic_fetch_add_explicit(&n_noarena, 1, memory_order_relaxed);
    if (a && mp__arena_alloc_ex(a, size, &p, &in_region) != MP_OK) p = NULL;
    if (p && !in_region && mpp__reg_put(p, size) != 0) {
        (void)mp_arena_free(a, p);
        p = NULL;
    }
    if (!p) atomic_fetch_add_explicit(&n_arena_fail, 1, memory_order_relaxed);
    if (a) maybe_trim(a);
    mpp__guard = 0;
    errno = saved;
    return p;
}

/* Frees a block the registry said was ours (already taken out of it). */
static void big_free(void *p) {
    int saved = errno;
    mp_arena_t *a = atomic_load_explicit(&arena, memory_order_acquire);
    if (atomic_load(&mode) == MODE_CHILD || !a) {
        atomic_fetch_add_explicit(&n_child_leaks, 1, memory_order_relaxed);
    } else {
        mpp__guard = 1;
        if (mp_arena_free(a, p) != MP_OK)   /* cannot happen; never guess: leak it */
            atomic_fetch_add_explicit(&n_arena_fail, 1, memory_order_relaxed);
        mpp__guard = 0;
    }
    errno = saved;
}

/* The arena, if p may lie in one of its regions (lock-free).  Never while
 * this thread is inside memplan: memplan's own blocks are not the arena's,
 * and the arena's lock may be held. */
static mp_arena_t *region_arena(const void *p) {
    if (mpp__guard) return NULL;
    mp_arena_t *a = atomic_load_explicit(&arena, memory_order_acquire);
    return a && mp__arena_in_regions(a, p) ? a : NULL;
}

/* Frees p if it is a block of the arena's regions (or another arena
 * block inside their span); 0 if it is not the arena's. */
static int region_free(void *p) {
    mp_arena_t *a = region_arena(p);
    if (!a || (uintptr_t)p % ARENA_ALIGN) return 0;
    if (atomic_load(&mode) == MODE_CHILD) {   /* the arena is not used again: leak */
        atomic_fetch_add_explicit(&n_child_leaks, 1, memory_order_relaxed);
        return 1;
    }
    int saved = errno;
    mpp__guard = 1;
    int ok = mp_arena_free(a, p) == MP_OK;
    mpp__guard = 0;
    errno = saved;
    return ok;
}

/* 1 and the requested size if p is an arena block (registered or in a
 * region); in a forked child, every pointer in the regions' span counts. */
static int arena_block(void *p, size_t *size) {
    if (mpp__reg_get(p, size, 0)) return 1;
    mp_arena_t *a = region_arena(p);
    if (!a || (uintptr_t)p % ARENA_ALIGN) return 0;
    uint64_t n = 0;
    int saved = errno, found;
    if (atomic_load(&mode) == MODE_CHILD) {
        found = 1;
        n = mpp__real.malloc_usable_size(p);   /* unknown: only for realloc's copy */
    } else {
        mpp__guard = 1;
        found = mp__arena_block_size(a, p, &n);
        mpp__guard = 0;
    }
    errno = saved;
    *size = (size_t)n;
    return found;
}

/* ---- the interposed functions ------------------------------------------------- */

/* True when this call of the program is to be recorded (MEMPLAN_TRACE):
 * one relaxed load when tracing is off. */
static int recording(void) {
    return atomic_load_explicit(&mpp__rec_on, memory_order_relaxed) && !mpp__guard;
}

/* Records an allocation returned to the program and passes it on. */
static void *noted(void *p, size_t size) {
    if (p && recording()) mpp__rec_alloc(p, size);
    return p;
}

/* A block for a request that goes to the arena, NULL: forward it. */
static inline void *arena_alloc(size_t size) {
    mp_arena_t *a = atomic_load_explicit(&arena, memory_order_acquire);
    /* the replay that follows the plan: no errno to keep, nothing to
     * register (a region block), no trim left to make */
    void *p = a && atomic_load_explicit(&trim_phase, memory_order_relaxed) >= 2
                  ? mp__arena_alloc_fast(a, size) : NULL;
    return p ? p : big_alloc(size);
}

EXPORT void *malloc(size_t size) {
    if (!ready()) return boot_alloc(size, 16);
    void *p = wants_arena(size, ARENA_ALIGN) ? arena_alloc(size) : NULL;
    return noted(p ? p : mpp__small_malloc(size), size);
}

EXPORT void free(void *p) {
    size_t n;
    if (!p || is_boot(p)) return;
    if (!ready()) return;   /* only while dlsym runs on this thread: leak */
    if (recording()) mpp__rec_free(p);   /* before the address can be reused */
    /* a live block of the current plan first: it is never registered, and
     * the registry's filter is a cache miss */
    mp_arena_t *a = region_arena(p);
    if (a && atomic_load_explicit(&mode, memory_order_relaxed) == MODE_ON && mp__arena_free_fast(a, p))
        return;
    if (mpp__reg_get(p, &n, 1)) {
        big_free(p);
        return;
    }
    if (region_free(p) || mpp__small_free(p)) return;
    mpp__real.free(p);
}

EXPORT void *calloc(size_t count, size_t size) {
    if (!ready()) return boot_alloc(count && size > SIZE_MAX / count ? SIZE_MAX : count * size, 16);
    if (count && size > SIZE_MAX / count) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = wants_arena(count * size, ARENA_ALIGN) ? arena_alloc(count * size) : NULL;
    if (p) return noted(memset(p, 0, count * size), count * size);
    return noted(mpp__real.calloc(count, size), count * size);
}

EXPORT void *realloc(void *p, size_t size) {
    size_t old;
    if (!ready()) {
        void *q = boot_alloc(size, 16);
        if (q && p && is_boot(p)) memcpy(q, p, boot_size(p) < size ? boot_size(p) : size);
        return q;
    }
    if (!p) return malloc(size);
    if (is_boot(p) || arena_block(p, &old)) {
        if (is_boot(p)) old = boot_size(p);
        if (size == 0) {   /* glibc: realloc(p, 0) frees p */
            free(p);
            return NULL;
        }
        void *q = malloc(size);
        if (!q) return NULL;   /* p untouched */
        memcpy(q, p, old < size ? old : size);
        atomic_fetch_add_explicit(&n_realloc_moves, 1, memory_order_relaxed);
        free(p);
        return q;
    }
    if (recording()) return mpp__rec_realloc(p, size);
    return mpp__real.realloc(p, size);
}

EXPORT void *reallocarray(void *p, size_t count, size_t size) {
    if (count && size > SIZE_MAX / count) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, count * size);
}

static int align_ok(size_t align) { return align && !(align & (align - 1)); }

EXPORT int posix_memalign(void **out, size_t align, size_t size) {
    if (!ready()) {
        if (!align_ok(align) || align % sizeof(void *)) return EINVAL;
        return (*out = boot_alloc(size, align)) ? 0 : ENOMEM;
    }
    void *p = NULL;
    if (align_ok(align) && align % sizeof(void *) == 0 && wants_arena(size, align))
        p = arena_alloc(size);
    if (p) {
        *out = p;
    } else {
        int r = mpp__small_memalign(out, align, size);
        if (r) return r;
    }
    noted(*out, size);
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t size) {
    if (!ready()) return align_ok(align) ? boot_alloc(size, align) : NULL;
    void *p = align_ok(align) && wants_arena(size, align) ? arena_alloc(size) : NULL;
    if (p) return noted(p, size);
    if (mpp__real.aligned_alloc) return noted(mpp__real.aligned_alloc(align, size), size);
    return noted(mpp__real.memalign(align, size), size);
}

EXPORT void *memalign(size_t align, size_t size) {
    if (!ready()) return align_ok(align) ? boot_alloc(size, align) : NULL;
    void *p = align_ok(align) && wants_arena(size, align) ? arena_alloc(size) : NULL;
    return noted(p ? p : mpp__real.memalign(align, size), size);
}

/* Page-aligned requests are above the arena's alignment: always forwarded. */
EXPORT void *valloc(size_t size) {
    if (!ready()) return boot_alloc(size, 4096);
    if (mpp__real.valloc) return noted(mpp__real.valloc(size), size);
    return noted(mpp__real.memalign((size_t)sysconf(_SC_PAGESIZE), size), size);
}

EXPORT void *pvalloc(size_t size) {
    if (!ready()) return boot_alloc(size, 4096);
    if (mpp__real.pvalloc) return noted(mpp__real.pvalloc(size), size);
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    if (size > SIZE_MAX - pg) {
        errno = ENOMEM;
        return NULL;
    }
    return noted(mpp__real.memalign(pg, size ? (size + pg - 1) & ~(pg - 1) : pg), size);
}

EXPORT size_t malloc_usable_size(void *p) {
    size_t n;
    if (!p) return 0;
    if (is_boot(p)) return boot_size(p);
    if (!ready()) return 0;
    if (arena_block(p, &n)) return n;
    return mpp__real.malloc_usable_size(p);
}

/* ---- configuration, fork, exit ---------------------------------------------- */

static int env_flag(const char *name) {
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0;
}

static void env_copy(const char *name, char *dst, size_t cap) {
    const char *s = getenv(name);
    if (!s || !*s) return;
    if (strlen(s) >= cap) mpp__say("memplan-preload: %s is too long, ignored\n", name);
    else memcpy(dst, s, strlen(s) + 1);
}

static void fork_prepare(void) { mpp__reg_lock(); }
static void fork_parent(void) { mpp__reg_unlock(); }
static void fork_child(void) {
    mpp__reg_unlock();
    mpp__rec_fork_child();
    if (atomic_load(&mode) == MODE_ON) atomic_store(&mode, MODE_CHILD);
}

__attribute__((constructor)) static void preload_init(void) {
    if (!ready()) return;
    mpp__guard = 1;
    int off = env_flag("MEMPLAN_DISABLE");
    mpp__env_size("MEMPLAN_THRESHOLD", &threshold, "64 KiB");
    if (threshold == 0) threshold = 1;
    mpp__env_size("MEMPLAN_WARMUP", &warmup, "2");
    mpp__env_size("MEMPLAN_MAX_EDITS", &max_edits, "2");
    mpp__env_size("MEMPLAN_RELEARN", &relearn, "4");
    mpp__env_size("MEMPLAN_PATTERNS", &patterns, "16");
    size_t small_cap = (size_t)1 << 20;
    mpp__env_size("MEMPLAN_SMALL_CACHE", &small_cap, "1 MiB");
    mpp__small_init(off ? 0 : small_cap);
    env_copy("MEMPLAN_STRATEGY", strategy, sizeof strategy);
    env_copy("MEMPLAN_STATS", stats_path, sizeof stats_path);
    summary = env_flag("MEMPLAN_SUMMARY");
    const char *tr = getenv("MEMPLAN_TRIM");
    if (tr && strcmp(tr, "0") == 0) trim = 0;
    const char *ln = getenv("MEMPLAN_LEAN");
    if (ln && strcmp(ln, "0") == 0) lean = 0;
    /* glibc raises its heap trim threshold (to twice the largest block it
     * unmapped) once the program frees a big block; under the lean backing
     * it never sees one, stays at 128 KiB and returns the top of its heap
     * at nearly every free of a small block, to map it again at the next
     * malloc.  LEAN_TRIM_THRESHOLD bounds what it keeps instead. */
    if (lean && !off && mpp__real.mallopt) (void)mpp__real.mallopt(M_TRIM_THRESHOLD, LEAN_TRIM_THRESHOLD);
    mpp__reg_set_verify(env_flag("MEMPLAN_VERIFY"));
    /* the handlers also stop a forked child's tracing: without them, no trace */
    if (pthread_atfork(fork_prepare, fork_parent, fork_child) != 0) off = 1;
    else mpp__rec_init();
    mpp__guard = 0;
    atomic_store(&mode, off ? MODE_OFF : MODE_ON);
}

/* Appends a formatted line to buf (capacity cap, *len used). */
static void add(char *buf, size_t cap, size_t *len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n > 0) *len = *len + (size_t)n < cap ? *len + (size_t)n : cap - 1;
}

#define U(x) ((unsigned long long)(x))

static void write_stats(const mp_arena_stats_t *s, const mpp_why *w) {
    static char buf[4096];
    size_t n = 0, c = sizeof buf;
    add(buf, c, &n, "# memplan-preload stats\nthreshold %llu\nbig_requests %llu\n"
        "forwarded_alignment %llu\narena_failures %llu\nrealloc_moves %llu\n"
        "leaked_after_fork %llu\noverlaps %llu\nregistered_live %llu\ntrims %llu\n"
        "trims_released %llu\nsmall_cache_hits %llu\n", U(threshold), U(s->requests + n_noarena), U(n_align_fwd), U(n_arena_fail),
        U(n_realloc_moves), U(n_child_leaks), U(mpp__reg_overlaps()), U(mpp__reg_live()),
        U(n_trims), U(n_trims_released), U(mpp__small_hits()));
    add(buf, c, &n, "state %s\nreplan_pending %d\niteration_length %llu\nperiod_events %llu\n"
        "planned_blocks %llu\ncross_blocks %llu\niterations %llu\nplanned_footprint %llu\n"
        "lower_bound %llu\nregion_bytes %llu\nlearned_peak_bytes %llu\n",
        mp_arena_state_name(s->state), s->replan_pending, U(s->iteration_length),
        U(s->period_events), U(s->planned_blocks), U(s->cross_blocks), U(s->iterations),
        U(s->planned_footprint), U(s->lower_bound), U(s->region_bytes),
        U(s->learned_peak_bytes));
    add(buf, c, &n, "live_bytes %llu\npeak_live_bytes %llu\nlive_blocks %llu\nbacking_bytes %llu\n"
        "peak_backing_bytes %llu\nrequests %llu\nfrees %llu\nserved_learning %llu\n"
        "served_arena %llu\n", U(s->live_bytes), U(s->peak_live_bytes), U(s->live_blocks),
        U(s->backing_bytes), U(s->peak_backing_bytes), U(s->requests), U(s->frees),
        U(s->served_learning), U(s->served_arena));
    add(buf, c, &n, "fb_interrupted %llu\nfb_unforeseen %llu\nfb_overlap %llu\nfb_too_large %llu\n"
        "fb_cross %llu\nfb_small %llu\nfb_passthrough %llu\nreoptimizations %llu\n"
        "detections %llu\nretired_regions %llu\nrelearns %llu\nfb_unmatched %llu\npatterns %llu\n",
        U(s->fb_interrupted),
        U(s->fb_unforeseen), U(s->fb_overlap), U(s->fb_too_large), U(s->fb_cross),
        U(s->fb_small), U(s->fb_passthrough), U(s->reoptimizations), U(s->detections),
        U(s->retired_regions), U(s->relearns), U(s->fb_unmatched), U(s->patterns));
    add(buf, c, &n, "traced_events %llu\nunconfirmed_period %llu\ncandidate_iterations %llu\n"
        "distinct_patterns %llu\nlongest_repeat %llu\nlongest_repeat_events %llu\n",
        U(w->events), U(w->period), U(w->candidates), U(w->distinct), U(w->longest),
        U(w->longest_events));
    int fd = strcmp(stats_path, "-") == 0 ? 2 : open(stats_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        mpp__say("memplan-preload: cannot write %s\n", stats_path);
        return;
    }
    (void)!write(fd, buf, n);
    if (fd != 2) close(fd);
}

/* "1.5 MiB", "1010 KiB", "64 KiB", "512 B": three significant digits, in a
 * static buffer (one of four, so that a line can hold four). */
static const char *human(uint64_t v) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    static char buf[4][32];
    static int k;
    int u = 0;
    double x = (double)v;
    while (x >= 1024.0 && u < 6) x /= 1024.0, u++;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], u && x < 1000.0 ? "%.3g %s" : "%.0f %s", x, unit[u]);
    return buf[k];
}

/* The one-line summary (docs/preload.md, "The summary"). */
static void print_summary(int m, const mp_arena_stats_t *s) {
    uint64_t fb = s->fb_interrupted + s->fb_unforeseen + s->fb_overlap + s->fb_too_large +
                  s->fb_cross + s->fb_small + s->fb_passthrough + s->fb_unmatched;
    mpp__say("memplan-preload: %s, threshold %s, %llu big requests: %llu from the arena, "
             "%llu learning, %llu fallbacks (%llu too large, %llu cross, %llu unforeseen, "
             "%llu overlap); %llu iterations of %llu requests, footprint %s (bound %s, learned "
             "peak %s), %llu patterns, %llu unmatched, %llu replans, %llu relearns, %llu overlaps\n",
             m == MODE_OFF ? "disabled" : mp_arena_state_name(s->state), human(threshold),
             U(s->requests + n_noarena), U(s->served_arena), U(s->served_learning), U(fb), U(s->fb_too_large),
             U(s->fb_cross), U(s->fb_unforeseen), U(s->fb_overlap), U(s->iterations),
             U(s->iteration_length), human(s->planned_footprint), human(s->lower_bound),
             human(s->learned_peak_bytes), U(s->patterns), U(s->fb_unmatched),
             U(s->reoptimizations), U(s->relearns),
             U(mpp__reg_overlaps()));
}

/* The line saying why the arena is not replaying, if it is not. */
static void print_why(int m, const mp_arena_t *a, const mpp_why *w) {
    static char buf[512];
    if (m == MODE_OFF) return;
    if (!a && n_noarena == 0)
        snprintf(buf, sizeof buf, "not replaying: no request of at least %s (MEMPLAN_THRESHOLD)",
                 human(threshold));
    else mpp__why_text(w, buf, sizeof buf);
    if (buf[0]) mpp__say("memplan-preload: %s\n", buf);
}

__attribute__((destructor)) static void preload_fini(void) {
    int m = atomic_load(&mode);
    if (m == MODE_CHILD || !atomic_load(&resolved)) return;
    mpp__rec_finish(summary);
    if (!summary && !stats_path[0]) return;
    mpp__guard = 1;
    mp_arena_stats_t s;
    mpp_why w;
    memset(&s, 0, sizeof s);
    memset(&w, 0, sizeof w);
    mp_arena_t *a = atomic_load(&arena);
    if (a) {   /* the arena stays: blocks may be live */
        mp_arena_stats(a, &s);
        mpp__why_compute(a, &w);
    }
    if (stats_path[0]) write_stats(&s, &w);
    if (summary) {
        print_summary(m, &s);
        print_why(m, a, &w);
    }
    mpp__guard = 0;
}
