/* arena.c -- the replay arena: profile-guided allocation at run time
 * (sekiyama2018 sec. 4.2-4.3, zhang2019 sec. V).  This file holds the
 * entry points, the lock and the replay path; learning is in
 * arena_learn.c, one plan's layout in arena_plan.c.
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

#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- the lock ----------------------------------------------------------------- */

static bool membarrier_ready(void) {
    static _Atomic int ok = -1;   /* -1: not asked yet */
    int v = atomic_load(&ok);
    if (v < 0) {
        long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
        v = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
            syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
        atomic_store(&ok, v);
    }
    return v == 1;
}

bool mp__arena_lock(mp_arena_t *a) {
    if (!atomic_load_explicit(&a->shared, memory_order_relaxed) &&
        pthread_equal(a->owner, pthread_self())) {
        atomic_store_explicit(&a->in_fast, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);   /* the other side runs membarrier */
        if (!atomic_load_explicit(&a->shared, memory_order_relaxed)) {
            atomic_thread_fence(memory_order_acquire);
            return true;
        }
        atomic_store_explicit(&a->in_fast, 0, memory_order_release);
    }
    pthread_mutex_lock(&a->mu);
    if (!atomic_load_explicit(&a->shared, memory_order_relaxed)) {
        atomic_store(&a->shared, 1);
        (void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0);
        while (atomic_load_explicit(&a->in_fast, memory_order_acquire)) sched_yield();
    }
    return false;
}

void mp__arena_unlock(mp_arena_t *a, bool fast) {
    if (fast) atomic_store_explicit(&a->in_fast, 0, memory_order_release);
    else pthread_mutex_unlock(&a->mu);
}

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
static bool overlaps(const mp_arena_t *a, const aplan *p, size_t s, uint64_t o, uint64_t e) {
    const alayout *L = &p->L;
    if (L->cword) {
        for (uint32_t k = L->cstart[s]; k < L->cstart[s + 1]; k++) {
            uint64_t x = p->lbits[L->cword[k]] & L->cmask[k];
            while (x) {   /* live conflicting slots: in a replay that follows the plan, none */
                size_t t = (size_t)L->cword[k] * 64 + (size_t)__builtin_ctzll(x);
                if (L->off[t] < o + e && p->live_end[t] > o) return true;
                x &= x - 1;
            }
        }
    } else {
        for (size_t k = 0; k < p->nlive; k++) {
            size_t t = p->lv[k];
            if (L->off[t] < o + e && p->live_end[t] > o) return true;
        }
    }
    for (size_t k = 0; k < a->n_stale; k++)
        if (a->stale[k].off < o + e && a->stale[k].end > o) return true;
    return false;
}

/* Counts one replayed request (miss: it fell back as unforeseen, overlap
 * or too large) and closes the window after m of them. */
static void watch(mp_arena_t *a, size_t m, bool miss) {
    if (!a->opt.relearn_after || a->trace) return;
    a->win_miss += miss;
    if (++a->win_reqs < m) return;
    a->bad_windows = 2 * a->win_miss > a->win_reqs ? a->bad_windows + 1 : 0;
    a->win_reqs = a->win_miss = 0;
    if (a->bad_windows >= a->opt.relearn_after) mp__arena_relearn(a);
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
    uint64_t *why;
    const alayout *L = &p->L;
    uint64_t o = L->off[s], ext = mp__align_up(size, a->opt.align);
    if (o == CROSS) {
        why = &a->st.fb_cross;
    } else if (size > L->psize[s]) {
        p->slot[s].size = mp__max64(p->slot[s].size, size);
        p->replan = true;
        why = &a->st.fb_too_large;
    } else if (!a->base || p->live_end[s]) {
        why = &a->st.fb_unforeseen;
    } else if (o + ext > a->region || overlaps(a, p, s, o, ext)) {
        why = &a->st.fb_overlap;
    } else {
        p->live_end[s] = o + ext;
        p->live_req[s] = size;
        p->lbits[s / 64] |= (uint64_t)1 << (s % 64);
        p->lvpos[s] = (uint32_t)p->nlive;
        p->lv[p->nlive++] = (uint32_t)s;
        L->gown[L->grp[s]] = (uint32_t)s + 1;
        p->stamp[s] = (uint32_t)a->seg_gen;
        mp__arena_live_add(a, size);
        a->st.served_arena++;
        *out = a->base + o;
        if (a->trace) {
            p->live_tr[s] = 1;
            mp__arena_trace_step(a, *out, size);
        }
        watch(a, m, false);
        return MP_OK;
    }
    mp_status st = mp__arena_forward(a, size, a->trace ? K_TRACED : K_FORWARD, out);
    if (st == MP_OK) {
        (*why)++;
        if (a->trace) mp__arena_trace_step(a, *out, size);
        watch(a, m, why != &a->st.fb_cross);
    }
    return st;
}

/* ---- public entry points --------------------------------------------------- */

void mp_arena_options_default(mp_arena_options_t *opt) {
    memset(opt, 0, sizeof *opt);
    opt->align = 64;
    opt->strategy = "auto";
    opt->warmup_iterations = 2;
    opt->max_edits = 2;
    opt->max_learn_events = DEFAULT_MAX_LEARN;
    opt->relearn_after = 4;
    opt->max_patterns = MAX_PATTERNS;
}

const char *mp_arena_state_name(mp_arena_state s) {
    switch (s) {
    case MP_ARENA_LEARNING: return "learning";
    case MP_ARENA_REPLAYING: return "replaying";
    case MP_ARENA_PASSTHROUGH: return "passthrough";
    }
    return "unknown";
}

mp_status mp_arena_create(const mp_arena_options_t *opt, mp_arena_t **out) {
    *out = NULL;
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    if (opt) o = *opt;
    if (!o.strategy) o.strategy = "auto";
    if (o.align == 0) o.align = 64;
    if (o.align & (o.align - 1))
        return mp__err(MP_EINVAL, "arena alignment %llu is not a power of two",
                       (unsigned long long)o.align);
    if (strlen(o.strategy) >= 64 || !mp_strategy_find(o.strategy))
        return mp__err(MP_ENOTFOUND, "unknown strategy '%s'", o.strategy);
    if (!o.backing_alloc || (!o.backing_free && !o.backing_free_sized)) {
        o.backing_alloc = mp__arena_libc_alloc;
        o.backing_free = mp__arena_libc_free;
        o.backing_free_sized = NULL;
    }
    if (!o.max_learn_events) o.max_learn_events = DEFAULT_MAX_LEARN;
    if (!o.max_patterns || o.max_patterns > MAX_PATTERNS) o.max_patterns = MAX_PATTERNS;
    mp_arena_t *a = calloc(1, sizeof *a);
    if (!a) return MP__NOMEM();
    a->opt = o;
    strcpy(a->strategy, o.strategy);
    a->opt.strategy = a->strategy;
    a->next_check = 64;
    a->owner = pthread_self();
    atomic_init(&a->shared, membarrier_ready() ? 0 : 1);
    atomic_init(&a->in_fast, 0);
    atomic_init(&a->env_lo, UINTPTR_MAX);
    atomic_init(&a->env_hi, 0);
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return MP__NOMEM();
    }
    if (mp_trace_create(&a->trace) != MP_OK) {
        pthread_mutex_destroy(&a->mu);
        free(a);
        return MP__NOMEM();
    }
    *out = a;
    return MP_OK;
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
    mp__arena_unlock(a, fast);
    return st;
}

/* Frees a pointer in the current region; false if it is not a live block start. */
static bool free_region(mp_arena_t *a, uintptr_t ptr) {
    uint64_t o = (uint64_t)(ptr - (uintptr_t)a->base);
    aplan *p = a->last;
    size_t s = p ? mp__aplan_owner(p, o) : SIZE_MAX;
    if (s != SIZE_MAX) {
        uint32_t k = p->lvpos[s];
        p->lv[k] = p->lv[--p->nlive];
        p->lvpos[p->lv[k]] = k;
        p->live_end[s] = 0;
        p->lbits[s / 64] &= ~((uint64_t)1 << (s % 64));
        p->L.gown[p->L.grp[s]] = 0;
        if (p->live_tr[s] && a->trace) (void)mp_trace_record_free(a->trace, ptr, MP_TRACE_NO_NS);
        p->live_tr[s] = 0;
        mp__arena_live_sub(a, p->live_req[s]);
        if (a->multi) mp__arena_note_free(a, ptr, p, s, 0);
        return true;
    }
    for (size_t k = 0; k < a->n_stale; k++)
        if (a->stale[k].off == o) {
            ablk b = a->stale[k];
            a->stale[k] = a->stale[--a->n_stale];
            if (b.tr && a->trace) (void)mp_trace_record_free(a->trace, ptr, MP_TRACE_NO_NS);
            mp__arena_live_sub(a, b.req);
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
    mp__arena_unlock(a, fast);
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
        else free_entry(a, i);
    }
    if (st == MP_OK) a->st.frees++;
    mp__arena_unlock(a, fast);
    return st;
}

void mp_arena_interrupt(mp_arena_t *a) {
    bool fast = mp__arena_lock(a);
    a->interrupted++;
    mp__arena_unlock(a, fast);
}

mp_status mp_arena_resume(mp_arena_t *a) {
    mp_status st = MP_OK;
    bool fast = mp__arena_lock(a);
    if (a->interrupted) a->interrupted--;
    else st = mp__err(MP_EINVAL, "mp_arena_resume without mp_arena_interrupt");
    mp__arena_unlock(a, fast);
    return st;
}

void mp_arena_mark_iteration(mp_arena_t *a) {
    bool fast = mp__arena_lock(a);
    if (a->state == MP_ARENA_REPLAYING && a->cur && a->pos != 0) {
        a->pos = 0;
        a->st.iterations++;
    }
    if (a->multi) mp__arena_seg_abandon(a);
    mp__arena_unlock(a, fast);
}

/* Releases every live block; counts them as released. */
static void release_all(mp_arena_t *a) {
    a->st.released_blocks += a->st.live_blocks;
    a->st.released_bytes += a->st.live_bytes;
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p && !(a->tab[i].kind & K_RETIRED))
            mp__arena_back_free(a, (void *)a->tab[i].p, a->tab[i].size);
    memset(a->tab, 0, a->slots * sizeof *a->tab);
    a->used = 0;
    for (size_t r = 0; r < a->n_ret; r++) mp__arena_back_free(a, a->ret[r].base, a->ret[r].size);
    a->n_ret = 0;
    a->st.retired_regions = 0;
    for (size_t i = 0; i < a->npl; i++) {
        aplan *p = a->pl[i];
        for (size_t k = 0; k < p->nlive; k++) {
            size_t s = p->lv[k];
            p->live_end[s] = 0;
            p->live_tr[s] = 0;
            p->L.gown[p->L.grp[s]] = 0;
        }
        memset(p->lbits, 0, (p->m + 63) / 64 * sizeof *p->lbits);
        p->nlive = 0;
    }
    a->n_stale = 0;
    a->st.live_blocks = 0;
    a->st.live_bytes = 0;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    mp__arena_seg_abandon(a);
    if (a->trace) {   /* the trace's live handles are gone: start learning afresh */
        mp_trace_free(a->trace);
        a->trace = NULL;
        a->next_check = 64;
        if (mp_trace_create(&a->trace) != MP_OK && a->state == MP_ARENA_LEARNING)
            a->state = MP_ARENA_PASSTHROUGH;   /* relearning just stops */
    }
    a->pos = 0;
    if (a->multi) a->cur = NULL;
    mp__arena_publish(a);
}

void mp_arena_free_all(mp_arena_t *a) {
    bool fast = mp__arena_lock(a);
    release_all(a);
    mp__arena_unlock(a, fast);
}

static void snapshot(const mp_arena_t *a, mp_arena_stats_t *out) {
    *out = a->st;
    out->state = a->state;
    out->replan_pending = a->cur && a->cur->replan;
    out->position = a->pos;
    out->patterns = a->npl;
}

void mp_arena_stats(mp_arena_t *a, mp_arena_stats_t *out) {
    bool fast = mp__arena_lock(a);
    snapshot(a, out);
    mp__arena_unlock(a, fast);
}

void mp_arena_destroy(mp_arena_t *a, mp_arena_stats_t *final) {
    if (!a) return;
    bool fast = mp__arena_lock(a);
    release_all(a);
    if (a->base) mp__arena_back_free(a, a->base, a->region);
    a->base = NULL;
    a->region = 0;
    mp__arena_unlock(a, fast);
    if (final) snapshot(a, final);
    mp_trace_free(a->trace);
    mp__arena_drop_all(a);
    free(a->tab);
    free(a->ret);
    free(a->stale);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
