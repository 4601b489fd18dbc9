/* arena_learn.c -- how the replay arena learns: period detection and its
 * confirmation rules, planning a learned iteration into the region,
 * retiring a region, returning to learning (the rules are in arena.c's
 * header and docs/arena.md). */
#include "arena_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- regions and planning ---------------------------------------------------- */

mp_status mp__arena_retire(mp_arena_t *a) {
    size_t live = a->n_stale;
    for (size_t i = 0; i < a->npl; i++) live += a->pl[i]->nlive;
    if (live == 0) {
        if (a->base) mp__arena_back_free(a, a->base, a->region);
    } else {
        if (mp__grow((void **)&a->ret, &a->cap_ret, a->n_ret + 1, sizeof *a->ret) != MP_OK)
            return MP__NOMEM();
        /* table room first, so that the moves below cannot fail half-way */
        if (mp__atab_reserve(a, live) != MP_OK) return MP__NOMEM();
        for (size_t i = 0; i < a->npl; i++) {
            aplan *p = a->pl[i];
            for (size_t s = mp__aplan_next_live(p, 0); s != SIZE_MAX; s = mp__aplan_next_live(p, s + 1)) {
                (void)mp__atab_put(a, (uintptr_t)(a->base + p->L.off[s]), p->live_req[s],
                                   K_RETIRED | (p->live_tr[s] ? K_TRACED : 0));
                mp__aplan_unlive(p, s);
            }
        }
        for (size_t k = 0; k < a->n_stale; k++)
            (void)mp__atab_put(a, (uintptr_t)(a->base + a->stale[k].off), a->stale[k].req,
                               K_RETIRED | (a->stale[k].tr ? K_TRACED : 0));
        a->n_stale = 0;
        a->ret[a->n_ret++] = (retired){a->base, a->region, live};
        a->st.retired_regions = a->n_ret;
    }
    a->base = NULL;
    a->region = 0;
    mp__arena_publish(a);
    return MP_OK;
}

/* The statistics that describe the plan serving now. */
static void describe(mp_arena_t *a, const aplan *p) {
    a->st.planned_footprint = p->L.footprint;
    a->st.lower_bound = p->L.lower_bound;
    a->st.region_bytes = a->region;
    a->st.planned_blocks = p->L.nplaced;
    a->st.cross_blocks = p->m - p->L.nplaced;
    a->st.iteration_length = p->m;
}

mp_status mp__arena_plan(mp_arena_t *a, aplan *p) {
    alayout L;
    mp_status st = mp__aplan_solve(a, p, &L);
    if (st != MP_OK) return st;
    if (L.footprint > a->region) {
        unsigned char *nb = mp__arena_back_alloc(a, L.footprint);
        if (!nb) {
            mp__alayout_free(&L);
            return mp__err(MP_ENOMEM, "backing allocator failed for the region");
        }
        if (mp__arena_retire(a) != MP_OK) {
            mp__arena_back_free(a, nb, L.footprint);
            mp__alayout_free(&L);
            return MP__NOMEM();
        }
        a->base = nb;
        a->region = L.footprint;
        mp__arena_publish(a);
    } else if (mp__aplan_to_stale(a, p) != MP_OK) {
        mp__alayout_free(&L);
        return MP__NOMEM();
    }
    mp__aplan_install(p, &L);
    describe(a, p);
    return MP_OK;
}

/* Gives up learning: forward everything from now on. */
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

void mp__arena_drop_all(mp_arena_t *a) {
    for (size_t i = 0; i < a->npl; i++) mp__aplan_free(a->pl[i]);
    a->npl = 0;
    a->cur = NULL;
    a->multi = false;
    a->pos = 0;
    a->last = NULL;
    for (size_t i = 0; i < a->ncand; i++) mp__aplan_free(a->cand[i]);
    a->ncand = 0;
    free(a->log);
    a->log = NULL;
    a->nlog = a->cap_log = 0;
    a->seg_live = 0;
    a->unmatched = false;
    a->npend = 0;
}

/* Ends learning: the trace goes, replay starts. */
static void start_replay(mp_arena_t *a) {
    mp_trace_free(a->trace);
    a->trace = NULL;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    a->state = MP_ARENA_REPLAYING;
}

/* Installs plan p (planned already) as the only one, replacing the old
 * plans (whose region was retired), and starts replaying at position pos. */
static void adopt(mp_arena_t *a, aplan *p, size_t pos) {
    /* traced blocks are ordinary forwarded blocks from now on */
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p) a->tab[i].kind = (a->tab[i].kind & K_RETIRED) ? K_RETIRED : K_FORWARD;
    a->pl[0] = p;
    a->npl = 1;
    a->cur = a->last = p;
    a->pos = pos % p->m;
    describe(a, p);
    start_replay(a);
}

/* ---- period detection ---------------------------------------------------------- */

/* Runs period detection; on success sets up the slots and the plan (while
 * relearning, in place of the old ones). */
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
    if (!per.found) {   /* no period: maybe several patterns */
        if (mp__arena_try_patterns(a)) start_replay(a);
        return;
    }
    /* Rules (a)-(c) of arena.c's header.  (b) is what rejects an inner
     * repeat: its steady state is short next to what precedes it. */
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
    unsigned char *cross = calloc(m, 1);
    if (!cross) {
        free(rec);
        mp_period_free(&per);
        give_up(a);
        return;
    }
    size_t r = 0, tail = 0;
    for (size_t i = from; i < to; i++)
        if (ev[i].kind == MP_EV_ALLOC) {
            if (ev[i].end == MP_TRACE_NEVER || ev[i].end >= to) cross[r] = 1;
            r++;
        }
    for (size_t i = per.start[per.iterations]; i < n; i++) tail += ev[i].kind == MP_EV_ALLOC;
    size_t period = per.period;
    mp_period_free(&per);
    aplan *pl;
    st = mp__aplan_new(rec, cross, m, &pl);
    free(cross);
    if (st != MP_OK) {
        give_up(a);
        return;
    }
    /* relearning: the old region's live blocks go to the table first, so
     * that the new plan gets a region of its own */
    if (a->npl && mp__arena_retire(a) != MP_OK) {
        mp__aplan_free(pl);
        give_up(a);
        return;
    }
    mp__arena_drop_all(a);
    if (mp__arena_plan(a, pl) != MP_OK) {
        mp__aplan_free(pl);
        passthrough(a);
        return;
    }
    a->st.period_events = period;
    mp_trace_stats_t ts;
    if (mp_trace_stats(a->trace, &ts) == MP_OK) a->st.learned_peak_bytes = ts.peak_bytes;
    adopt(a, pl, tail);
}

void mp__arena_trace_step(mp_arena_t *a, void *p, uint64_t size) {
    if (mp_trace_record_alloc(a->trace, (uintptr_t)p, size, MP_TRACE_NO_NS) != MP_OK) {
        give_up(a);
        return;
    }
    size_t n;
    (void)mp_trace_events(a->trace, &n);
    if (n >= a->opt.max_learn_events) give_up(a);
    else if (n >= a->next_check) try_detect(a);
}

void mp__arena_relearn(mp_arena_t *a) {
    if (mp_trace_create(&a->trace) != MP_OK) {
        a->trace = NULL;
        return;
    }
    a->next_check = 64;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    a->st.relearns++;
}

void mp__arena_start_over(mp_arena_t *a) {
    mp_trace_t *t;
    if (mp_trace_create(&t) != MP_OK) return;
    if (mp__arena_retire(a) != MP_OK) {   /* the plans go on */
        mp_trace_free(t);
        return;
    }
    mp__arena_drop_all(a);
    mp_trace_free(a->trace);
    a->trace = t;
    a->state = MP_ARENA_LEARNING;
    a->next_check = 64;
    a->orphans = 0;
    a->cuts = 0;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    a->st.relearns++;
}
