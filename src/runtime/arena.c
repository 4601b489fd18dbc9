/* arena.c -- the replay arena: profile-guided allocation at run time
 * (sekiyama2018 sec. 4.2-4.3, zhang2019 sec. V).  This file holds the
 * replay path, allocations and frees; creation, the lock's slow side and
 * the other entry points are in arena_api.c, learning in arena_learn.c,
 * one plan's layout in arena_plan.c.
 *
 * Learning.  Every request (except those below min_block or between
 * interrupt and resume) goes to the backing allocator and is recorded in a
 * trace under its address; frees of traced blocks are recorded too.  When
 * the trace has grown by a quarter since the last attempt (at least 64
 * events) mp_period_detect runs on it (warmup_iterations repeats needed):
 * O(n) per attempt, O(1) amortized per event.  A period p found on a trace
 * of n events, with its steady state from event s, is accepted when
 *   (a) the steady state holds warmup_iterations + 1 whole iterations: it
 *       predicted one more iteration than it took to find it;
 *   (b) n - s >= max(2s, s + p): the steady state (with its partial last
 *       iteration) spans twice everything before it, and a period more;
 *   (c) it still repeats: the events after its last whole iteration are
 *       at most p + max_edits.
 * A run of identical blocks inside one step (a ResNet stage, the layers
 * of a transformer) repeats too and can pass (a); it fails (b) in every
 * step after the first, where the whole first step lies before it, and in
 * the first step unless it is twice as long as everything traced before
 * it (the weights' allocations included); once the run has ended it fails
 * (c).  A period found before (a)-(c) hold schedules the next attempt
 * where they can first hold (or n/8 events later, if that is sooner).
 * Once accepted, the records of the clean iteration become the slots
 * 0..m-1 (one per allocation, in order); a slot whose block outlives the
 * iteration is marked cross and is always forwarded.  The other slots are
 * planned (mp_plan_compute, then mp_plan_check), one region of the
 * footprint is allocated, and the phase is set from the allocations
 * already seen in the partial last iteration.
 *
 * Replaying.  The request is slot s = lambda; lambda advances per request
 * and wraps at m.  It is served at base + offset[s] when all hold:
 * s is not cross; size <= the planned size of s (otherwise the new size is
 * remembered and a re-plan waits for the next boundary, lambda = 0); the
 * block of s from an earlier iteration is not live (busy slot); and
 * [offset, offset + aligned size) overlaps no live block in the region.
 * The last check looks only at the live slots among s's conflicts (the
 * slots whose planned ranges meet s's, precomputed as words of a bitset,
 * arena_plan.c) and at the blocks an earlier plan left live in the region
 * (the stale list, usually empty): O(1) for a replay that follows the
 * plan, no search tree and no allocation per request.  Anything else is
 * forwarded and counted.
 *
 * Frees: an address inside the current region is looked up in the plan's
 * table of offsets (O(1) expected), then in the stale list; any other
 * address in a hash table of forwarded blocks (O(1) expected), which also
 * holds blocks left in retired regions.
 *
 * Re-planning (at a boundary, after a too-large request): the slots are
 * planned again with their largest sizes.  If the new footprint fits the
 * region, the region is kept and its live blocks move to the stale list,
 * so the overlap rule protects them; otherwise a new region is allocated
 * and the old one is released once its last live block is freed.
 *
 * Several patterns (arena_pattern.c): a stream with no period whose
 * iterations recur in a few distinct kinds gets one plan per kind, all in
 * one region; an iteration's first sizes choose the plan, and an iteration
 * that departs from every plan is forwarded and learned when it recurs.
 *
 * Returning to learning: every m requests that reach replay form one
 * window (counted apart from the position, which mark_iteration moves);
 * a window is bad when more than half of its requests fell back as
 * unforeseen, overlap or too large.  After relearn_after consecutive bad
 * windows the program has changed its loop (or a wrong period was
 * accepted), and a fresh trace starts.  The old plan keeps serving what it
 * can meanwhile: every request and free is recorded as while learning,
 * and when a period is accepted on the new trace the region is retired
 * like on a re-plan and the new plan replaces the old one.
 *
 * The lock.  One mutex guards the whole state, but the thread that
 * created the arena (the owner) does not take it while no other thread
 * has called: it marks itself inside (in_fast) and checks that the arena
 * is not shared, with only a compiler barrier between the two.  The first
 * call from another thread takes the mutex, sets shared, and runs
 * membarrier(2), which makes every thread of the process pass a full
 * memory barrier; afterwards either the owner's mark is visible (and the
 * thread waits until it is cleared) or the owner sees shared and takes the
 * mutex from then on (the asymmetric Dekker pattern).  Where membarrier
 * is not available the arena is shared from the start.  The backing
 * callbacks run inside the lock either way. */
#define _GNU_SOURCE
#include "arena_internal.h"

#include <stdlib.h>
#include <string.h>

void mp__arena_publish(mp_arena_t *a) {
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    if (a->base) lo = (uintptr_t)a->base, hi = lo + a->region;
    for (size_t r = 0; r < a->n_ret; r++) {
        uintptr_t b = (uintptr_t)a->ret[r].base;
        lo = b < lo ? b : lo;
        hi = b + a->ret[r].size > hi ? b + a->ret[r].size : hi;
    }
    atomic_store_explicit(&a->env_lo, lo, memory_order_release);
    atomic_store_explicit(&a->env_hi, hi, memory_order_release);
}

/* ---- the replay path ------------------------------------------------------------ */

/* True when [o, o + e) meets a live block of plan p other than slot s's
 * (s's own is the busy check), or a stale block. */
static inline bool overlaps(const mp_arena_t *a, const aplan *p, size_t s, uint64_t o, uint64_t e) {
    const alayout *L = &p->L;
    if (__builtin_expect(L->dmask != NULL, 1)) {
        /* the same number of words for every slot: a loop the branch
         * predictor learns, exits taken only on a live conflict */
        const uint64_t *dm = L->dmask + s * L->words;
        for (size_t w = 0; w < L->words; w++) {
            uint64_t x = p->lbits[w] & dm[w];
            while (x) {   /* live conflicting slots: in a replay that follows the plan, none */
                size_t t = w * 64 + (size_t)__builtin_ctzll(x);
                if (L->off[t] < o + e && p->live_end[t] > o) return true;
                x &= x - 1;
            }
        }
    } else if (L->cword) {
        for (uint32_t k = L->cstart[s]; k < L->cstart[s + 1]; k++) {
            uint64_t x = p->lbits[L->cword[k]] & L->cmask[k];
            while (x) {   /* live conflicting slots: in a replay that follows the plan, none */
                size_t t = (size_t)L->cword[k] * 64 + (size_t)__builtin_ctzll(x);
                if (L->off[t] < o + e && p->live_end[t] > o) return true;
                x &= x - 1;
            }
        }
    } else {   /* no conflict lists: every live slot */
        for (size_t t = mp__aplan_next_live(p, 0); t != SIZE_MAX; t = mp__aplan_next_live(p, t + 1))
            if (L->off[t] < o + e && p->live_end[t] > o) return true;
    }
    for (size_t k = 0; k < a->n_stale; k++)
        if (a->stale[k].off < o + e && a->stale[k].end > o) return true;
    return false;
}

/* Closes the window of m replayed requests (see watch). */
static void window_end(mp_arena_t *a) {
    a->bad_windows = 2 * a->win_miss > a->win_reqs ? a->bad_windows + 1 : 0;
    a->win_reqs = a->win_miss = 0;
    if (a->bad_windows >= a->opt.relearn_after) mp__arena_relearn(a);
}

/* Counts one replayed request (miss: it fell back as unforeseen, overlap
 * or too large) and closes the window after m of them. */
static inline void watch(mp_arena_t *a, size_t m, bool miss) {
    if (!a->opt.relearn_after || a->trace) return;
    a->win_miss += miss;
    if (++a->win_reqs >= m) window_end(a);
}

static mp_status replay_slot(mp_arena_t *a, uint64_t size, void **out);

/* Serves a request while replaying: the region, or a counted fallback. */
static mp_status replay(mp_arena_t *a, uint64_t size, void **out) {
    if (a->multi) {   /* several patterns: which one, and is it still that one */
        bool served;
        mp_status st = mp__arena_choose(a, size, out, &served);
        if (!served) return st;
        st = replay_slot(a, size, out);
        if (st == MP_OK) mp__arena_log(a, *out, size);
        if (!a->cur) mp__arena_seg_abandon(a);   /* the plan's iteration is complete */
        return st;
    }
    return replay_slot(a, size, out);
}

/* Slot s of plan p takes [o, o + ext) of the region for a request of
 * size bytes (every check passed). */
static inline void *take(mp_arena_t *a, aplan *p, size_t s, uint64_t o, uint64_t ext, uint64_t size) {
    p->live_end[s] = o + ext;
    p->live_req[s] = size;
    p->lbits[s / 64] |= (uint64_t)1 << (s % 64);
    p->nlive++;
    p->L.gtab[p->L.gix[s]].own = (uint32_t)s + 1;
    mp__arena_live_add(a, size);
    a->st.served_arena++;
    return a->base + o;
}

/* True when slot s of plan p can serve a request of size bytes, aligned
 * to ext, at o: the deviation rule (docs/arena.md).  Cross slots have
 * planned size 0; with no region, region is 0. */
static inline bool fits(const mp_arena_t *a, const aplan *p, size_t s, uint64_t o, uint64_t ext,
                        uint64_t size) {
    return size <= p->L.psize[s] && !p->live_end[s] && o + ext <= a->region &&
           !overlaps(a, p, s, o, ext);
}

/* The replay that follows the plan, when nothing calls for the general
 * path (replay_slot): one plan, no trace, no interrupt, no re-plan due, no
 * window of watch() closing.  Serves slot pos and counts the request, or
 * returns NULL and changes nothing.  It calls nothing outside this file,
 * so it neither allocates nor touches errno. */
static inline void *hit(mp_arena_t *a, uint64_t size) {
    aplan *p = a->cur;
    if (!a->gate || size < a->opt.min_block) return NULL;
    size_t s = a->pos;
    if ((s == 0 && p->replan) || (a->opt.relearn_after && a->win_reqs + 1 >= p->m)) return NULL;
    uint64_t o = p->L.off[s], ext = mp__align_up(size, a->opt.align);
    if (!fits(a, p, s, o, ext, size)) return NULL;
    if (++a->pos == p->m) {
        a->pos = 0;
        a->st.iterations++;
    }
    if (a->opt.relearn_after) a->win_reqs++;
    a->st.requests++;
    return take(a, p, s, o, ext, size);
}

/* Serves slot pos of the current plan, or a counted fallback. */
static mp_status replay_slot(mp_arena_t *a, uint64_t size, void **out) {
    aplan *p = a->cur;
    if (a->pos == 0 && p->replan) {   /* an iteration boundary */
        if (mp__arena_plan(a, p) == MP_OK) {
            p->replan = false;
            a->st.reoptimizations++;
        }
    }
    size_t s = a->pos, m = p->m;
    if (++a->pos == m) {
        a->pos = 0;
        a->st.iterations++;
        if (a->multi) a->cur = NULL;   /* the next request chooses */
    }
    const alayout *L = &p->L;
    uint64_t o = L->off[s], ext = mp__align_up(size, a->opt.align);
    if (fits(a, p, s, o, ext, size)) {
        *out = take(a, p, s, o, ext, size);
        if (a->multi) p->stamp[s] = (uint32_t)a->seg_gen;
        if (a->trace) {
            p->live_tr[s] = 1;
            mp__arena_trace_step(a, *out, size);
        }
        watch(a, m, false);
        return MP_OK;
    }
    uint64_t *why;
    if (o == CROSS) {
        why = &a->st.fb_cross;
    } else if (size > L->psize[s]) {
        p->slot[s].size = mp__max64(p->slot[s].size, size);
        p->replan = true;
        why = &a->st.fb_too_large;
    } else if (!a->base || p->live_end[s]) {
        why = &a->st.fb_unforeseen;
    } else {
        why = &a->st.fb_overlap;
    }
    mp_status st = mp__arena_forward(a, size, a->trace ? K_TRACED : K_FORWARD, out);
    if (st == MP_OK) {
        (*why)++;
        if (a->trace) mp__arena_trace_step(a, *out, size);
        watch(a, m, why != &a->st.fb_cross);
    }
    return st;
}

mp_status mp_arena_alloc(mp_arena_t *a, uint64_t size, void **out) {
    return mp__arena_alloc_ex(a, size, out, NULL);
}

mp_status mp__arena_alloc_ex(mp_arena_t *a, uint64_t size, void **out, bool *in_region) {
    *out = NULL;
    if (size == 0) return mp__err(MP_EINVAL, "arena request of 0 bytes");
    if (size > UINT64_MAX - a->opt.align)
        return mp__err(MP_EOVERFLOW, "arena request of %llu bytes", (unsigned long long)size);
    bool fast = mp__arena_lock(a);
    void *q = hit(a, size);
    if (q) {
        *out = q;
        if (in_region) *in_region = true;
        mp__arena_unlock(a, fast);
        return MP_OK;
    }
    a->st.requests++;
    mp_status st;
    if (size < a->opt.min_block) {
        if ((st = mp__arena_forward(a, size, K_FORWARD, out)) == MP_OK) a->st.fb_small++;
    } else if (a->interrupted) {
        if ((st = mp__arena_forward(a, size, K_FORWARD, out)) == MP_OK) a->st.fb_interrupted++;
    } else if (a->state == MP_ARENA_REPLAYING) {
        st = replay(a, size, out);
    } else if (a->state == MP_ARENA_PASSTHROUGH) {
        if ((st = mp__arena_forward(a, size, K_FORWARD, out)) == MP_OK) a->st.fb_passthrough++;
    } else {
        if ((st = mp__arena_forward(a, size, K_TRACED, out)) == MP_OK) {
            a->st.served_learning++;
            mp__arena_trace_step(a, *out, size);
        }
    }
    if (in_region)
        *in_region = st == MP_OK && a->base && (uintptr_t)*out >= (uintptr_t)a->base &&
                     (uintptr_t)*out - (uintptr_t)a->base < a->region;
    mp__arena_unlock_slow(a, fast);
    return st;
}

/* The slot of plan p whose live block starts at offset o, or SIZE_MAX:
 * first the learned order of frees (usually right), then the table. */
static inline size_t region_slot(aplan *p, uint64_t o) {
    size_t s = p->fexp;
    if (s >= p->m || !p->live_end[s] || p->L.off[s] != o) s = mp__aplan_owner(p, o);
    return s;
}

/* Frees slot s of plan p, whose block is at ptr. */
static inline void free_slot(mp_arena_t *a, aplan *p, size_t s) {
    p->fexp = p->L.fnext[s];
    mp__aplan_unlive(p, s);
    mp__arena_live_sub(a, p->live_req[s]);
    a->st.frees++;
}

/* Frees a pointer in the current region; false if it is not a live block start. */
static bool free_region(mp_arena_t *a, uintptr_t ptr) {
    uint64_t o = (uint64_t)(ptr - (uintptr_t)a->base);
    aplan *p = a->last;
    size_t s = p ? region_slot(p, o) : SIZE_MAX;
    if (s != SIZE_MAX) {
        if (p->live_tr[s] && a->trace) (void)mp_trace_record_free(a->trace, ptr, MP_TRACE_NO_NS);
        free_slot(a, p, s);
        if (a->multi) mp__arena_note_free(a, ptr, p, s, 0);
        return true;
    }
    for (size_t k = 0; k < a->n_stale; k++)
        if (a->stale[k].off == o) {
            ablk b = a->stale[k];
            a->stale[k] = a->stale[--a->n_stale];
            if (b.tr && a->trace) (void)mp_trace_record_free(a->trace, ptr, MP_TRACE_NO_NS);
            mp__arena_live_sub(a, b.req);
            a->st.frees++;
            if (a->multi) mp__arena_note_free(a, ptr, NULL, 0, 0);
            return true;
        }
    return false;
}

/* Frees the table entry i (a forwarded block or one in a retired region). */
static void free_entry(mp_arena_t *a, size_t i) {
    bent e = a->tab[i];
    mp__atab_erase(a, i);
    mp__arena_live_sub(a, e.size);
    if ((e.kind & K_TRACED) && a->trace)
        (void)mp_trace_record_free(a->trace, e.p, MP_TRACE_NO_NS);
    if (!(e.kind & K_RETIRED)) {
        mp__arena_back_free(a, (void *)e.p, e.size);
        if (a->multi) mp__arena_note_free(a, e.p, NULL, 0, e.kind);
        return;
    }
    for (size_t r = 0; r < a->n_ret; r++) {
        uintptr_t b = (uintptr_t)a->ret[r].base;
        if (e.p >= b && e.p - b < a->ret[r].size) {
            if (--a->ret[r].live == 0) {
                mp__arena_back_free(a, a->ret[r].base, a->ret[r].size);
                a->ret[r] = a->ret[--a->n_ret];
                a->st.retired_regions = a->n_ret;
                mp__arena_publish(a);
            }
            return;
        }
    }
}

int mp__arena_block_size(mp_arena_t *a, const void *ptr, uint64_t *size) {
    uintptr_t p = (uintptr_t)ptr;
    int found = 0;
    bool fast = mp__arena_lock(a);
    if (a->base && p >= (uintptr_t)a->base && p - (uintptr_t)a->base < a->region) {
        uint64_t o = (uint64_t)(p - (uintptr_t)a->base);
        size_t s = a->last ? mp__aplan_owner(a->last, o) : SIZE_MAX;
        if (s != SIZE_MAX) found = 1, *size = a->last->live_req[s];
        for (size_t k = 0; !found && k < a->n_stale; k++)
            if (a->stale[k].off == o) found = 1, *size = a->stale[k].req;
    } else if (a->slots) {
        size_t i = mp__atab_find(a, p);
        if (a->tab[i].p) found = 1, *size = a->tab[i].size;
    }
    mp__arena_unlock_slow(a, fast);
    return found;
}

mp_status mp_arena_free(mp_arena_t *a, void *ptr) {
    if (!ptr) return MP_OK;
    uintptr_t p = (uintptr_t)ptr;
    mp_status st = MP_OK;
    bool fast = mp__arena_lock(a);
    if (a->base && p >= (uintptr_t)a->base && p - (uintptr_t)a->base < a->region) {
        if (!free_region(a, p)) st = mp__err(MP_EINVAL, "free of %p: no live arena block", ptr);
    } else {
        size_t i = a->slots ? mp__atab_find(a, p) : 0;
        if (!a->slots || !a->tab[i].p) st = mp__err(MP_EINVAL, "free of %p: not from this arena", ptr);
        else free_entry(a, i), a->st.frees++;
    }
    mp__arena_unlock_slow(a, fast);
    return st;
}

void *mp__arena_alloc_fast(mp_arena_t *a, uint64_t size) {
    bool fast = mp__arena_lock(a);
    void *q = hit(a, size);
    mp__arena_unlock(a, fast);
    return q;
}

bool mp__arena_free_fast(mp_arena_t *a, const void *ptr) {
    uintptr_t p = (uintptr_t)ptr;
    bool done = false;
    bool fast = mp__arena_lock(a);
    aplan *pl = a->last;
    if (a->base && p >= (uintptr_t)a->base && p - (uintptr_t)a->base < a->region && pl &&
        !a->trace && !a->multi) {
        size_t s = region_slot(pl, (uint64_t)(p - (uintptr_t)a->base));
        if (s != SIZE_MAX) {
            free_slot(a, pl, s);
            done = true;
        }
    }
    mp__arena_unlock_slow(a, fast);
    return done;
}

