/* arena.c -- the replay arena: profile-guided allocation at run time
 * (sekiyama2018 sec. 4.2-4.3, zhang2019 sec. V).
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
 * Once warmup_iterations iterations repeat, the records of the clean
 * iteration become the slots 0..m-1 (one per allocation, in order); a slot
 * whose block outlives the iteration is marked cross and is always
 * forwarded.  The other slots are planned (mp_plan_compute, then
 * mp_plan_check), one region of the footprint is allocated, and the phase
 * is set from the allocations already seen in the partial last iteration.
 *
 * Replaying.  The request is slot s = lambda; lambda advances per request
 * and wraps at m.  It is served at base + offset[s] when all hold:
 * s is not cross; size <= the planned size of s (otherwise the new size is
 * remembered and a re-plan waits for the next boundary, lambda = 0); the
 * block of s from an earlier iteration is not live (busy slot); and
 * [offset, offset + aligned size) overlaps no live block in the region.
 * The live region blocks are disjoint, kept in an ordered set by (offset,
 * slot), so the last check looks at the predecessor and the successor of
 * offset only: O(log n).  Anything else is forwarded and counted.
 *
 * Frees: an address inside the current region is found in the ordered set
 * (O(log n)); any other address in a hash table of forwarded blocks
 * (O(1) expected), which also holds blocks left in retired regions.
 *
 * Re-planning (at a boundary, after a too-large request): the slots are
 * planned again with their largest sizes.  If the new footprint fits the
 * region, the region is kept and its live blocks stay in the ordered set,
 * so the overlap rule protects them; otherwise a new region is allocated
 * and the old one is released once its last live block is freed.
 *
 * Returning to learning: every m requests that reach replay form one
 * window (counted apart from the position, which mark_iteration moves);
 * a window is bad when more than half of its requests fell back as
 * unforeseen, overlap or too large.  After relearn_after consecutive bad
 * windows the program has changed its loop (or a wrong period was
 * accepted), and a fresh trace starts.  The old plan keeps serving what it
 * can meanwhile (so a program that never repeats again, e.g. threads
 * interleaving, loses nothing): every request and free is recorded as
 * while learning, and when a period is accepted on the new trace the
 * region is retired like on a re-plan and the new plan replaces the old
 * one.  O(1) per request, plus the detection attempts, as in learning.
 *
 * One mutex guards the whole state; the backing callbacks run under it. */
#include "arena_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- planning ------------------------------------------------------------- */

/* Moves the live blocks of the current region to a retired region. */
static mp_status retire_region(mp_arena_t *a) {
    if (a->live.count == 0) {
        if (a->base) mp__arena_back_free(a, a->base, a->region);
    } else {
        if (mp__grow((void **)&a->ret, &a->cap_ret, a->n_ret + 1, sizeof *a->ret) != MP_OK)
            return MP__NOMEM();
        /* table room first, so that the move below cannot fail half-way */
        if (mp__atab_reserve(a, a->live.count) != MP_OK) return MP__NOMEM();
        uint64_t o, s;
        bool more = mp__tset_ceil(&a->live, 0, 0, &o, &s);
        while (more) {
            (void)mp__atab_put(a, (uintptr_t)(a->base + o), a->live_req[s],
                          K_RETIRED | (a->live_tr[s] ? K_TRACED : 0));
            a->live_end[s] = 0;
            a->live_tr[s] = 0;
            more = mp__tset_next(&a->live, o, s, &o, &s);
        }
        a->ret[a->n_ret++] = (retired){a->base, a->region, a->live.count};
        a->st.retired_regions = a->n_ret;
        mp__tset_free(&a->live);
    }
    a->base = NULL;
    a->region = 0;
    return MP_OK;
}

/* Plans the non-cross slots with their largest sizes and makes sure a
 * region of the footprint exists.  On failure the old plan stays. */
static mp_status plan(mp_arena_t *a) {
    size_t nb = 0;
    for (size_t i = 0; i < a->m; i++) nb += a->off[i] != CROSS;
    mp_buffer_t *b = malloc((nb ? nb : 1) * sizeof *b);
    if (!b) return MP__NOMEM();
    nb = 0;
    for (size_t i = 0; i < a->m; i++)
        if (a->off[i] != CROSS) {
            b[nb] = a->slot[i];
            b[nb].id = i;
            b[nb++].align = a->opt.align;
        }
    mp_plan_t p = {0};
    mp_bounds_t bd = {0};
    mp_status st = MP_OK;
    if (nb) {
        st = mp_plan_compute(b, nb, a->strategy, &p);
        if (st == MP_OK) st = mp_plan_check(b, nb, &p, NULL);
        if (st == MP_OK) st = mp_bounds_compute(b, nb, &bd);
    }
    if (st == MP_OK && p.footprint > a->region) {
        st = retire_region(a);
        if (st == MP_OK) {
            a->base = mp__arena_back_alloc(a, p.footprint);
            if (a->base) a->region = p.footprint;
            else st = mp__err(MP_ENOMEM, "backing allocator failed for the region");
        }
    }
    if (st == MP_OK) {
        for (size_t j = 0; j < nb; j++) {
            a->off[b[j].id] = p.offset[j];
            a->psize[b[j].id] = b[j].size;
        }
        a->st.planned_footprint = p.footprint;
        a->st.lower_bound = bd.offsets;
        a->st.region_bytes = a->region;
        a->st.planned_blocks = nb;
        a->st.cross_blocks = a->m - nb;
    }
    mp_plan_free(&p);
    free(b);
    return st;
}

/* Gives up learning: mp__arena_forward everything from now on. */
static void passthrough(mp_arena_t *a) {
    mp_trace_free(a->trace);
    a->trace = NULL;
    a->state = MP_ARENA_PASSTHROUGH;
}

/* Stops learning: while relearning the old plan just goes on (the trace's
 * blocks keep their flag, harmless: a free unknown to a later trace is
 * rejected by it); while learning, pass-through. */
static void give_up(mp_arena_t *a) {
    if (a->state != MP_ARENA_REPLAYING) {
        passthrough(a);
        return;
    }
    mp_trace_free(a->trace);
    a->trace = NULL;
}

/* Frees the slot arrays of the plan. */
static void drop_plan(mp_arena_t *a) {
    free(a->slot);
    free(a->psize);
    free(a->off);
    free(a->live_end);
    free(a->live_req);
    free(a->live_tr);
    a->slot = NULL;
    a->psize = a->off = a->live_end = a->live_req = NULL;
    a->live_tr = NULL;
    a->m = a->pos = 0;
    a->replan = false;
}

/* Runs period detection; on success sets up the slots and the plan (while
 * relearning, in place of the old one). */
static void try_detect(mp_arena_t *a) {
    size_t n;
    const mp_event_t *ev = mp_trace_events(a->trace, &n);
    a->next_check = n + (n / 4 > 64 ? n / 4 : 64);
    a->st.detections++;
    mp_period_params_t pp = {a->opt.max_edits, a->opt.warmup_iterations};
    mp_period_t per;
    if (mp_period_detect(a->trace, &pp, &per) != MP_OK) {
        give_up(a);
        return;
    }
    if (!per.found) return;
    /* Rules (a)-(c) of the header.  (b) is what rejects an inner repeat:
     * its steady state is short next to what precedes it. */
    size_t p = per.period, s = per.start[0];
    size_t w = a->opt.warmup_iterations < 2 ? 2 : a->opt.warmup_iterations;
    size_t span = mp__max64(3 * s, 2 * s + p);   /* (b): n >= span */
    if (per.iterations < w + 1 || n < span || per.tail > p + a->opt.max_edits) {
        /* try again where (a) and (b) can first hold (iterations may be a
         * few events longer than p: then at the usual pace), at most n/8
         * events later */
        size_t ready = mp__max64(s + (w + 1) * p, span), pace = n + mp__max64(64, n / 8);
        a->next_check = ready > n ? mp__min64(ready, pace) : pace;
        mp_period_free(&per);
        return;
    }
    size_t from = per.start[per.clean], to = per.start[per.clean + 1], m;
    mp_buffer_t *rec = NULL;
    mp_status st = mp_trace_records(a->trace, from, to, &rec, &m);
    if (st != MP_OK || m == 0) {
        free(rec);
        mp_period_free(&per);
        if (st != MP_OK) give_up(a);
        return;
    }
    if (a->m) {   /* relearning: the old region's live blocks go to the table */
        if (retire_region(a) != MP_OK) {
            free(rec);
            mp_period_free(&per);
            give_up(a);
            return;
        }
        drop_plan(a);
    }
    a->slot = rec;
    a->psize = calloc(m, sizeof *a->psize);
    a->off = calloc(m, sizeof *a->off);
    a->live_end = calloc(m, sizeof *a->live_end);
    a->live_req = calloc(m, sizeof *a->live_req);
    a->live_tr = calloc(m, 1);
    a->m = m;
    if (!a->psize || !a->off || !a->live_end || !a->live_req || !a->live_tr) {
        mp_period_free(&per);
        passthrough(a);
        return;
    }
    size_t r = 0, tail = 0;
    for (size_t i = from; i < to; i++)
        if (ev[i].kind == MP_EV_ALLOC) {
            if (ev[i].end == MP_TRACE_NEVER || ev[i].end >= to) a->off[r] = CROSS;
            r++;
        }
    for (size_t i = per.start[per.iterations]; i < n; i++) tail += ev[i].kind == MP_EV_ALLOC;
    a->st.period_events = per.period;
    mp_period_free(&per);
    mp_trace_stats_t ts;
    if (mp_trace_stats(a->trace, &ts) == MP_OK) a->st.learned_peak_bytes = ts.peak_bytes;
    if (plan(a) != MP_OK) {
        passthrough(a);
        return;
    }
    /* traced blocks are ordinary forwarded blocks from now on */
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p) a->tab[i].kind = (a->tab[i].kind & K_RETIRED) ? K_RETIRED : K_FORWARD;
    mp_trace_free(a->trace);
    a->trace = NULL;
    a->pos = tail % m;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    a->st.iteration_length = m;
    a->state = MP_ARENA_REPLAYING;
}

/* Starts learning afresh while the old plan goes on serving (the header:
 * returning to learning).  Without memory for a trace, nothing changes. */
static void relearn(mp_arena_t *a) {
    if (mp_trace_create(&a->trace) != MP_OK) {
        a->trace = NULL;
        return;
    }
    a->next_check = 64;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    a->st.relearns++;
}

/* Counts one replayed request (miss: it fell back as unforeseen, overlap
 * or too large) and closes the window after m of them. */
static void watch(mp_arena_t *a, bool miss) {
    if (!a->opt.relearn_after || a->trace) return;
    a->win_miss += miss;
    if (++a->win_reqs < a->m) return;
    a->bad_windows = 2 * a->win_miss > a->win_reqs ? a->bad_windows + 1 : 0;
    a->win_reqs = a->win_miss = 0;
    if (a->bad_windows >= a->opt.relearn_after) relearn(a);
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
    if (!o.backing_alloc || !o.backing_free) {
        o.backing_alloc = mp__arena_libc_alloc;
        o.backing_free = mp__arena_libc_free;
    }
    if (!o.max_learn_events) o.max_learn_events = DEFAULT_MAX_LEARN;
    mp_arena_t *a = calloc(1, sizeof *a);
    if (!a) return MP__NOMEM();
    a->opt = o;
    strcpy(a->strategy, o.strategy);
    a->opt.strategy = a->strategy;
    a->next_check = 64;
    mp__tset_init(&a->live);
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

/* Records a block just handed out in the trace and runs detection when
 * due (learning, or relearning while replaying). */
static void trace_step(mp_arena_t *a, void *p, uint64_t size) {
    if (mp_trace_record_alloc(a->trace, (uintptr_t)p, size, MP_TRACE_NO_NS) != MP_OK) {
        give_up(a);
        return;
    }
    size_t n;
    (void)mp_trace_events(a->trace, &n);
    if (n >= a->opt.max_learn_events) give_up(a);
    else if (n >= a->next_check) try_detect(a);
}

/* Serves a request while replaying: the region, or a counted fallback. */
static mp_status replay(mp_arena_t *a, uint64_t size, void **out) {
    if (a->pos == 0 && a->replan) {   /* an iteration boundary */
        if (plan(a) == MP_OK) {
            a->replan = false;
            a->st.reoptimizations++;
        }
    }
    size_t s = a->pos;
    a->pos = (a->pos + 1) % a->m;
    if (a->pos == 0) a->st.iterations++;
    uint64_t *why;
    uint64_t o = a->off[s], ext = mp__align_up(size, a->opt.align);
    if (o == CROSS) {
        why = &a->st.fb_cross;
    } else if (size > a->psize[s]) {
        a->slot[s].size = mp__max64(a->slot[s].size, size);
        a->replan = true;
        why = &a->st.fb_too_large;
    } else if (!a->base || a->live_end[s]) {
        why = &a->st.fb_unforeseen;
    } else {
        uint64_t po, ps, no, ns;
        bool hit = o + ext > a->region;
        if (!hit && mp__tset_floor(&a->live, o, UINT64_MAX, &po, &ps)) hit = a->live_end[ps] > o;
        if (!hit && mp__tset_ceil(&a->live, o, 0, &no, &ns)) hit = no < o + ext;
        if (!hit) {
            if (mp__tset_insert(&a->live, o, s) != MP_OK) return MP__NOMEM();
            a->live_end[s] = o + ext;
            a->live_req[s] = size;
            mp__arena_live_add(a, size);
            a->st.served_arena++;
            *out = a->base + o;
            if (a->trace) {
                a->live_tr[s] = 1;
                trace_step(a, *out, size);
            }
            watch(a, false);
            return MP_OK;
        }
        why = &a->st.fb_overlap;
    }
    mp_status st = mp__arena_forward(a, size, a->trace ? K_TRACED : K_FORWARD, out);
    if (st == MP_OK) {
        (*why)++;
        if (a->trace) trace_step(a, *out, size);
        watch(a, why != &a->st.fb_cross);
    }
    return st;
}

mp_status mp_arena_alloc(mp_arena_t *a, uint64_t size, void **out) {
    *out = NULL;
    if (size == 0) return mp__err(MP_EINVAL, "arena request of 0 bytes");
    if (size > UINT64_MAX - a->opt.align)
        return mp__err(MP_EOVERFLOW, "arena request of %llu bytes", (unsigned long long)size);
    pthread_mutex_lock(&a->mu);
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
            trace_step(a, *out, size);
        }
    }
    pthread_mutex_unlock(&a->mu);
    return st;
}

/* Frees a pointer in the current region; false if it is not a live block start. */
static bool free_region(mp_arena_t *a, uintptr_t p) {
    uint64_t o = (uint64_t)(p - (uintptr_t)a->base), fo, s;
    if (!mp__tset_floor(&a->live, o, UINT64_MAX, &fo, &s) || fo != o) return false;
    mp__tset_erase(&a->live, o, s);
    a->live_end[s] = 0;
    if (a->live_tr[s] && a->trace) (void)mp_trace_record_free(a->trace, p, MP_TRACE_NO_NS);
    a->live_tr[s] = 0;
    mp__arena_live_sub(a, a->live_req[s]);
    return true;
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
        return;
    }
    for (size_t r = 0; r < a->n_ret; r++) {
        uintptr_t b = (uintptr_t)a->ret[r].base;
        if (e.p >= b && e.p - b < a->ret[r].size) {
            if (--a->ret[r].live == 0) {
                mp__arena_back_free(a, a->ret[r].base, a->ret[r].size);
                a->ret[r] = a->ret[--a->n_ret];
                a->st.retired_regions = a->n_ret;
            }
            return;
        }
    }
}

mp_status mp_arena_free(mp_arena_t *a, void *ptr) {
    if (!ptr) return MP_OK;
    uintptr_t p = (uintptr_t)ptr;
    mp_status st = MP_OK;
    pthread_mutex_lock(&a->mu);
    if (a->base && p >= (uintptr_t)a->base && p - (uintptr_t)a->base < a->region) {
        if (!free_region(a, p)) st = mp__err(MP_EINVAL, "free of %p: no live arena block", ptr);
    } else {
        size_t i = a->slots ? mp__atab_find(a, p) : 0;
        if (!a->slots || !a->tab[i].p) st = mp__err(MP_EINVAL, "free of %p: not from this arena", ptr);
        else free_entry(a, i);
    }
    if (st == MP_OK) a->st.frees++;
    pthread_mutex_unlock(&a->mu);
    return st;
}

void mp_arena_interrupt(mp_arena_t *a) {
    pthread_mutex_lock(&a->mu);
    a->interrupted++;
    pthread_mutex_unlock(&a->mu);
}

mp_status mp_arena_resume(mp_arena_t *a) {
    mp_status st = MP_OK;
    pthread_mutex_lock(&a->mu);
    if (a->interrupted) a->interrupted--;
    else st = mp__err(MP_EINVAL, "mp_arena_resume without mp_arena_interrupt");
    pthread_mutex_unlock(&a->mu);
    return st;
}

void mp_arena_mark_iteration(mp_arena_t *a) {
    pthread_mutex_lock(&a->mu);
    if (a->state == MP_ARENA_REPLAYING && a->pos != 0) {
        a->pos = 0;
        a->st.iterations++;
    }
    pthread_mutex_unlock(&a->mu);
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
    mp__tset_free(&a->live);
    if (a->live_end) memset(a->live_end, 0, a->m * sizeof *a->live_end);
    if (a->live_tr) memset(a->live_tr, 0, a->m);
    a->st.live_blocks = 0;
    a->st.live_bytes = 0;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    if (a->trace) {   /* the trace's live handles are gone: start learning afresh */
        mp_trace_free(a->trace);
        a->trace = NULL;
        a->next_check = 64;
        if (mp_trace_create(&a->trace) != MP_OK && a->state == MP_ARENA_LEARNING)
            a->state = MP_ARENA_PASSTHROUGH;   /* relearning just stops */
    }
    a->pos = 0;
}

void mp_arena_free_all(mp_arena_t *a) {
    pthread_mutex_lock(&a->mu);
    release_all(a);
    pthread_mutex_unlock(&a->mu);
}

void mp_arena_stats(mp_arena_t *a, mp_arena_stats_t *out) {
    pthread_mutex_lock(&a->mu);
    *out = a->st;
    out->state = a->state;
    out->replan_pending = a->replan;
    out->position = a->pos;
    pthread_mutex_unlock(&a->mu);
}

void mp_arena_destroy(mp_arena_t *a, mp_arena_stats_t *final) {
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    release_all(a);
    if (a->base) mp__arena_back_free(a, a->base, a->region);
    a->base = NULL;
    a->region = 0;
    pthread_mutex_unlock(&a->mu);
    if (final) {
        *final = a->st;
        final->state = a->state;
        final->replan_pending = a->replan;
        final->position = a->pos;
    }
    mp_trace_free(a->trace);
    free(a->tab);
    free(a->ret);
    free(a->slot);
    free(a->psize);
    free(a->off);
    free(a->live_end);
    free(a->live_req);
    free(a->live_tr);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
