/* arena_internal.h -- the replay arena's state, shared by arena.c (the
 * entry points, the lock, the replay path), arena_learn.c (period
 * detection, patterns, switching plans), arena_plan.c (one plan: offsets,
 * conflict lists, offset groups) and arena_table.c (the backing allocator,
 * the table of forwarded blocks, live accounting). */
#ifndef MP_ARENA_INTERNAL_H
#define MP_ARENA_INTERNAL_H

#include "../core/internal.h"

#include <pthread.h>
#include <stdatomic.h>

#define CROSS UINT64_MAX          /* offset of a slot never placed in the region */
#define DEFAULT_MAX_LEARN ((size_t)1 << 22)
#define MAX_PATTERNS 16           /* plans kept at once (several iteration patterns) */
#define SIG_MAX 8                 /* request sizes a pattern is recognised from */
#define DENSE_SLOTS 512           /* up to this many slots, dense conflict masks */

/* kinds of table entries; K_TRACED is a flag: the block is in the trace;
 * K_SEG: allocated inside an unmatched iteration (arena_learn.c) */
enum { K_FORWARD = 1, K_RETIRED = 2, K_TRACED = 4, K_SEG = 8 };

typedef struct bent {   /* a forwarded block (or one left in a retired region) */
    uintptr_t p;        /* 0: empty slot */
    uint64_t size;
    int kind;
} bent;

typedef struct retired {
    unsigned char *base;
    uint64_t size;
    size_t live;
} retired;

typedef struct ablk {   /* a live region block placed by an earlier plan */
    uint64_t off, end, req;
    int tr;
} ablk;

/* One distinct offset of a layout and the slot whose live block starts
 * there (two live blocks never start at one offset: they would overlap). */
typedef struct agrp {
    uint64_t key;       /* the offset */
    uint32_t own;       /* slot + 1 of the live block there, 0: none */
    uint32_t used;      /* 1: the entry holds an offset */
} agrp;

/* Where a plan puts its slots (arena_plan.c): rebuilt as a whole by each
 * planning, swapped in only when every step succeeded. */
typedef struct alayout {
    uint64_t *psize;    /* planned size per slot (0: cross) */
    uint64_t *off;      /* offset or CROSS */
    uint32_t *cstart;   /* slot s's conflict words: [cstart[s], cstart[s+1]) */
    uint32_t *cword;    /* word index into the live bitset; NULL: scan the live list */
    uint64_t *cmask;    /* slots of that word whose planned ranges meet s's */
    uint64_t *dmask;    /* m <= DENSE_SLOTS: slot s's conflicts as whole words,
                         * [s * words, (s + 1) * words) (a fixed-length check) */
    size_t words;       /* words of the live bitset, (m + 63) / 64 */
    uint32_t *fnext;    /* per placed slot: the slot whose block the learned
                         * iteration freed next (the free path's guess) */
    uint32_t ffirst;    /* the first freed in the learned iteration */
    agrp *gtab;         /* open addressing: the distinct offsets (offset groups) */
    uint32_t *gix;      /* index in gtab of each placed slot's offset */
    size_t ngrp, gmask, nplaced;
    uint64_t footprint, lower_bound;
} alayout;

/* One learned iteration pattern: its slots, layout and live blocks. */
typedef struct aplan {
    size_t m;
    mp_buffer_t *slot;  /* records of the learned iteration, sizes: largest seen */
    uint64_t *sig;      /* the learned request sizes (the signature's source) */
    alayout L;
    uint64_t *live_end; /* end offset of the slot's live block, 0: none */
    uint64_t *live_req; /* its requested size */
    unsigned char *live_tr;   /* 1: that block is in the (relearning) trace */
    uint64_t *lbits;    /* live slots as a bitset */
    uint32_t *stamp;    /* multi-pattern: generation of the iteration that took the slot */
    size_t nlive;       /* live slots (bits set in lbits) */
    size_t fexp;        /* the slot expected to be freed next (L.fnext) */
    size_t sigk;        /* sizes compared to recognise it (multi-pattern) */
    bool replan;
    uint64_t hash;      /* pattern hash (multi-pattern) */
} aplan;

struct mp_arena_t {
    pthread_mutex_t mu;
    _Atomic int shared;         /* 1: every call takes mu (a second thread came) */
    _Atomic int in_fast;        /* the owner thread is inside a call without mu */
    pthread_t owner;
    uintptr_t owner_tp;         /* the owner's thread pointer (arena.c, is_owner) */
    _Atomic uintptr_t env_lo, env_hi;   /* spans the current and retired regions */
    mp_arena_options_t opt;
    char strategy[64];
    mp_arena_state state;
    bool gate;                  /* replaying one plan, no trace, no interrupt (arena.c, hit) */
    size_t interrupted;
    mp_trace_t *trace;          /* while learning or relearning */
    size_t next_check;
    /* the plans: one (a period) or several (patterns) */
    aplan *pl[MAX_PATTERNS];
    size_t npl;
    aplan *cur;                 /* the plan serving; NULL between patterns */
    aplan *last;                /* the plan whose live arrays hold the region's blocks */
    size_t pos;
    bool multi;                 /* several patterns: choose at each boundary */
    uint64_t cand_mask;         /* plans still matching the iteration's first sizes */
    size_t npend;               /* requests of the iteration seen before a match */
    unsigned char *base;
    uint64_t region;
    ablk *stale;                /* live blocks of an earlier plan in this region */
    size_t n_stale, cap_stale;
    retired *ret;
    size_t n_ret, cap_ret;
    bent *tab;                  /* forwarded blocks, open addressing */
    size_t slots, used;
    size_t win_reqs, win_miss;  /* the current window of m replayed requests */
    size_t bad_windows;         /* consecutive windows mostly falling back */
    /* the iteration under way (multi-pattern): its events, so that an
     * iteration found unmatched half-way can still be learned */
    struct { uintptr_t p; uint64_t size; } *log;   /* size 0: a free */
    size_t nlog, cap_log;
    bool log_full;
    bool unmatched;             /* forwarded until its blocks are all freed */
    size_t seg_live;            /* blocks of the unmatched iteration still live */
    size_t seg_reqs;            /* requests of the iteration so far */
    size_t longest;             /* requests of the longest plan */
    uint64_t seg_gen;           /* the iteration's generation (table kind, stamps) */
    size_t orphans;             /* live blocks of an iteration cut unlearned (arena_pattern.c) */
    size_t cuts;                /* unmatched iterations cut in a row, none learned or served between */
    uint64_t orphan_gen;        /* its generation */
    aplan *cand[MAX_PATTERNS];  /* patterns seen once, not laid out (newest first) */
    size_t ncand;
    mp_arena_stats_t st;
};

/* A 64-bit mixer (for pattern hashes). */
static inline uint64_t mp__mix64(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* ---- arena_table.c ---- */
/* Backing allocator (libc default) and accounting of the bytes it holds. */
void *mp__arena_libc_alloc(void *user, uint64_t size, uint64_t align);
void mp__arena_libc_free(void *user, void *p);
void *mp__arena_back_alloc(mp_arena_t *a, uint64_t size);
void mp__arena_back_free(mp_arena_t *a, void *p, uint64_t size);
/* The table of forwarded blocks: index of p's entry or of the empty slot
 * where it would go; room for extra more; insert; erase entry i. */
size_t mp__atab_find(const mp_arena_t *a, uintptr_t p);
mp_status mp__atab_reserve(mp_arena_t *a, size_t extra);
mp_status mp__atab_put(mp_arena_t *a, uintptr_t p, uint64_t size, int kind);
void mp__atab_erase(mp_arena_t *a, size_t i);
/* Live block accounting (requested bytes). */
static inline void mp__arena_live_add(mp_arena_t *a, uint64_t size) {
    a->st.live_blocks++;
    a->st.live_bytes += size;
    if (a->st.live_bytes > a->st.peak_live_bytes) a->st.peak_live_bytes = a->st.live_bytes;
}
static inline void mp__arena_live_sub(mp_arena_t *a, uint64_t size) {
    a->st.live_blocks--;
    a->st.live_bytes -= size;
}
/* Forwards a request to the backing allocator; kind K_TRACED marks it as
 * recorded in the trace (the caller records it). */
mp_status mp__arena_forward(mp_arena_t *a, uint64_t size, int kind, void **out);

/* ---- arena_plan.c ---- */
/* Above this many conflicting pairs a layout keeps no conflict lists and
 * the replay check scans the live slots (a variable for the tests). */
extern size_t mp__arena_max_pairs;
/* A plan of m slots over rec (taken over, also on failure); cross[i]: slot
 * i lives across iterations (never placed).  No layout yet. */
mp_status mp__aplan_new(mp_buffer_t *rec, const unsigned char *cross, size_t m, aplan **out);
void mp__aplan_free(aplan *p);
/* Lays out p's placed slots at their largest sizes with the arena's
 * strategy (checked by mp_plan_check) into *L, with conflict lists and
 * offset groups.  p's own layout is untouched. */
mp_status mp__aplan_solve(const mp_arena_t *a, const aplan *p, alayout *L);
/* Installs L in p (p must have no live block); frees the old layout. */
void mp__aplan_install(aplan *p, alayout *L);
void mp__alayout_free(alayout *L);
/* The gtab entry of offset o, or NULL: O(1) expected. */
static inline agrp *mp__aplan_group(const aplan *p, uint64_t o) {
    const alayout *L = &p->L;
    if (!L->gtab) return NULL;
    uint64_t x = o * 0x9e3779b97f4a7c15ull;
    size_t h = (size_t)(x ^ (x >> 31)) & L->gmask;
    for (; L->gtab[h].used; h = (h + 1) & L->gmask)
        if (L->gtab[h].key == o) return &L->gtab[h];
    return NULL;
}
/* Slot of the live block starting at offset o, or SIZE_MAX: O(1) expected. */
static inline size_t mp__aplan_owner(const aplan *p, uint64_t o) {
    const agrp *g = mp__aplan_group(p, o);
    return g && g->own ? (size_t)g->own - 1 : SIZE_MAX;
}
/* The first live slot of p at or after slot s, or SIZE_MAX (a walk of the
 * live bitset; clearing bits behind it is safe). */
static inline size_t mp__aplan_next_live(const aplan *p, size_t s) {
    size_t nw = (p->m + 63) / 64;
    if (s >= p->m) return SIZE_MAX;
    size_t w = s / 64;
    uint64_t x = p->lbits[w] & (~(uint64_t)0 << (s % 64));
    while (!x) {
        if (++w == nw) return SIZE_MAX;
        x = p->lbits[w];
    }
    return w * 64 + (size_t)__builtin_ctzll(x);
}
/* Marks slot s of p not live (its block left the plan's live set). */
static inline void mp__aplan_unlive(aplan *p, size_t s) {
    p->live_end[s] = 0;
    p->live_tr[s] = 0;
    p->lbits[s / 64] &= ~((uint64_t)1 << (s % 64));
    p->L.gtab[p->L.gix[s]].own = 0;
    p->nlive--;
}
/* Moves p's live blocks to the arena's stale list (a re-plan or a switch
 * of plans keeps them protected); MP_ENOMEM leaves everything as it was. */
mp_status mp__aplan_to_stale(mp_arena_t *a, aplan *p);

/* ---- arena_learn.c ---- */
/* Records a block just handed out in the trace; runs detection when due. */
void mp__arena_trace_step(mp_arena_t *a, void *p, uint64_t size);
/* Plans every pattern again whose replan flag is set, or the current one. */
mp_status mp__arena_plan(mp_arena_t *a, aplan *p);
/* Moves the live region blocks to a retired region (the table keeps them). */
mp_status mp__arena_retire(mp_arena_t *a);
/* Starts learning afresh while the old plans go on (relearn_after). */
void mp__arena_relearn(mp_arena_t *a);
/* Drops every plan (the region retired) and learns from scratch, as a new
 * arena does; nothing changes if the trace or the retirement fails. */
void mp__arena_start_over(mp_arena_t *a);

/* ---- arena_pattern.c ---- */
/* With no period in the learning trace: cuts it into segments and, if
 * enough of them repeat, plans each repeated pattern and replays them
 * (multi); true if it did (the caller ends learning). */
bool mp__arena_try_patterns(mp_arena_t *a);
/* Multi-pattern, before the replay path: picks a plan at an iteration
 * boundary from the first sizes, notices a request that departs from the
 * serving plan; served: the caller serves slot pos of cur (and logs it),
 * otherwise the request was forwarded here. */
mp_status mp__arena_choose(mp_arena_t *a, uint64_t size, void **out, bool *served);
/* Multi-pattern: a request served by the caller (region or fallback). */
void mp__arena_log(mp_arena_t *a, void *p, uint64_t size);
/* Multi-pattern: a block was freed: a region block of slot s of plan pl
 * (pl NULL: a forwarded block of table kind kind). */
void mp__arena_note_free(mp_arena_t *a, uintptr_t p, const aplan *pl, size_t s, int kind);
/* Ends an unmatched iteration without learning it; the next request
 * starts an iteration (mark_iteration, free_all). */
void mp__arena_seg_abandon(mp_arena_t *a);
/* Frees every plan, candidate and the segment trace. */
void mp__arena_drop_all(mp_arena_t *a);

/* ---- the lock (arena.c's header; slow side in arena_api.c) ---- */
/* The calling thread is the owner: its thread pointer (one register read)
 * where the compiler gives it, else pthread_self.  Unique among live
 * threads either way; a thread created after the owner exited may inherit
 * the owner's identity, which is harmless (the owner no longer calls). */
#if (defined(__x86_64__) || defined(__aarch64__)) && defined(__has_builtin)
#if __has_builtin(__builtin_thread_pointer)
#define MP_HAVE_TP 1
#endif
#endif
static inline bool mp__arena_is_owner(const mp_arena_t *a) {
#ifdef MP_HAVE_TP
    return a->owner_tp == (uintptr_t)__builtin_thread_pointer();
#else
    return pthread_equal(a->owner, pthread_self());
#endif
}
/* Takes mu, and hands the arena over to it on the first call from a
 * thread other than the owner; returns false. */
bool mp__arena_lock_slow(mp_arena_t *a);
/* The arena's lock: without mu for the owner thread while no other thread
 * has called; returns what to pass to unlock. */
static inline bool mp__arena_lock(mp_arena_t *a) {
    if (__builtin_expect(!atomic_load_explicit(&a->shared, memory_order_relaxed), 1) &&
        mp__arena_is_owner(a)) {
        atomic_store_explicit(&a->in_fast, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);   /* the other side runs membarrier */
        if (__builtin_expect(!atomic_load_explicit(&a->shared, memory_order_relaxed), 1)) {
            atomic_thread_fence(memory_order_acquire);
            return true;
        }
        atomic_store_explicit(&a->in_fast, 0, memory_order_release);
    }
    return mp__arena_lock_slow(a);
}
static inline void mp__arena_unlock(mp_arena_t *a, bool fast) {
    if (fast) atomic_store_explicit(&a->in_fast, 0, memory_order_release);
    else pthread_mutex_unlock(&a->mu);
}
/* Unlocks after a call that may have changed what arena.c's hit() depends
 * on (every entry point but hit itself): one plan replaying, no trace, no
 * interrupt. */
static inline void mp__arena_unlock_slow(mp_arena_t *a, bool fast) {
    a->gate = a->state == MP_ARENA_REPLAYING && !a->multi && !a->trace && !a->interrupted && a->cur;
    mp__arena_unlock(a, fast);
}

/* ---- arena.c ---- */
/* Publishes the span of the current and retired regions (after a change). */
void mp__arena_publish(mp_arena_t *a);
/* Lock-free: false when p lies outside every region of the arena (so it is
 * not a region block); true means it may be one.  A region block stays
 * inside the published span while it is live. */
static inline bool mp__arena_in_regions(mp_arena_t *a, const void *p) {
    uintptr_t x = (uintptr_t)p;
    return x >= atomic_load_explicit(&a->env_lo, memory_order_acquire) &&
           x < atomic_load_explicit(&a->env_hi, memory_order_acquire);
}
/* 1 and the requested size if p is a live block of the arena (region,
 * retired region or forwarded), else 0. */
/* mp_arena_alloc, also saying whether the block lies in the current
 * region (in_region may be NULL). */
mp_status mp__arena_alloc_ex(mp_arena_t *a, uint64_t size, void **out, bool *in_region);
int mp__arena_block_size(mp_arena_t *a, const void *p, uint64_t *size);
/* The replay that follows the plan, for the preload's malloc and free:
 * a block of the current region (the request counted as mp_arena_alloc
 * counts it), or NULL and nothing changed: then call mp__arena_alloc_ex.
 * Neither allocates, calls the backing allocator or touches errno. */
void *mp__arena_alloc_fast(mp_arena_t *a, uint64_t size);
/* Frees p if it is a live block of the current plan in the current region
 * and no trace or pattern choice needs to see the free; false otherwise
 * (nothing changed: then call mp_arena_free). */
bool mp__arena_free_fast(mp_arena_t *a, const void *p);

#endif
