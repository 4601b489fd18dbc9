/* anytime.c -- "auto" with a time limit: the heuristics, then the exact
 * search or local improvement until the limit or a proof.
 *
 * The call runs "auto" first (its plan is the start, so the result is never
 * worse than any heuristic auto runs), and stops there without a time limit
 * or when the plan meets the max-load bound.  Otherwise one worker per
 * thread (two at most; the caller's thread is one) improves a shared best
 * plan under a mutex until the deadline:
 *   - when every part of the problem (buffers connected by overlapping
 *     lifetimes) has at most MP__X_MAX_N buffers, each worker runs the
 *     exact minimisation (api.c) from auto's plan with its own sequence of
 *     static orders; plans found and lower bounds refuted by either are
 *     proven, so the shared bound is the larger and the shared plan the
 *     better, and a proof of optimality stops both;
 *   - otherwise (or above EXACT_MAX_TOTAL buffers in all, where the
 *     search's memory for every part adds up) each worker runs ruin and
 *     recreate (lns.c) with its own
 *     random sequence, taking over the shared plan when the other worker's
 *     is better; the bound stays the max-load bound.
 * The progress callback sees every improvement, with the plan held.
 *
 * Fixed buffers (o->fixed, pre-placed by a compiler): the start is auto's
 * plan around them (src/offsets/fixed.c), and both routes treat them as
 * obstacles that never move: the exact search lists each at its offset in
 * its canonical order and lets nothing overlap it (search.c, "Fixed
 * buffers"), local improvement never lifts them out (lns.c).  So every
 * plan held keeps them in place.  The bound is the max-load bound raised
 * to the largest fixed end (no plan can end below a buffer it may not
 * move), by the windows of bound.c (each takes the fixed buffers live in
 * it as obstacles) and by the search's refutations. */
#include "exact.h"
#include "../strategies/strategies.h"
#include "../offsets/pools.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_WORKERS = 2, LNS_SYNC = 64 /* steps between looks at the shared plan */ };

/* The exact search sets up every part (O(m) memory for its table of failed
 * states and O(m^2) for its candidates, per part of m buffers): above this
 * many buffers in all, local improvement (O(n) memory) is used instead. */
#define EXACT_MAX_TOTAL 20000

typedef struct shared {
    pthread_mutex_t mu;
    const mp_buffer_t *b;
    size_t n;
    const mp_auto_opts_t *o;
    double t0, deadline;
    uint64_t *best, fp, lb;  /* the plan held, its footprint, the proven bound */
    const char *source;
    atomic_int stop;
    uint64_t nodes;
    bool exact;              /* workers run the exact search (else improvement) */
    unsigned nw;             /* workers */
    const char *start_strategy;
    const uint64_t *fixed;   /* NULL, or the fixed offsets (o->fixed) */
} shared;

/* Under the lock: the callback with the plan held. */
static void tell(shared *sh) {
    if (!sh->o->progress) return;
    mp_anytime_progress_t p = {mp__xnow() - sh->t0, sh->fp, sh->lb, sh->source, sh->best, sh->n};
    sh->o->progress(sh->o->ctx, &p);
}

/* A plan (off, may be NULL) or a bound from a worker. */
static void offer(shared *sh, const uint64_t *off, uint64_t fp, uint64_t lb, const char *source) {
    pthread_mutex_lock(&sh->mu);
    bool news = false;
    if (off && fp < sh->fp) {
        memcpy(sh->best, off, sh->n * sizeof *off);
        sh->fp = fp, sh->source = source, news = true;
    }
    if (lb > sh->lb) sh->lb = lb, news = true;
    if (sh->lb >= sh->fp) atomic_store(&sh->stop, 1);
    if (news) tell(sh);
    pthread_mutex_unlock(&sh->mu);
}

static void exact_publish(void *ctx, const uint64_t *off, uint64_t fp, uint64_t lb) {
    offer(ctx, off, fp, lb, "exact");
}

typedef struct worker {
    shared *sh;
    unsigned k;
    mp_status s;
    char why[256];           /* its error message (errors are per thread) */
} worker;

static double remaining(const shared *sh) {
    double r = sh->deadline - mp__xnow();
    return r > 1e-3 ? r : 1e-3;
}

static mp_status run_exact(worker *w) {
    shared *sh = w->sh;
    uint64_t *off = malloc((sh->n ? sh->n : 1) * sizeof *off);
    if (!off) return MP__NOMEM();
    pthread_mutex_lock(&sh->mu);
    memcpy(off, sh->best, sh->n * sizeof *off);
    pthread_mutex_unlock(&sh->mu);
    mp_exact_opts_t eo = {.time_limit = remaining(sh)};
    mp__xhooks h = {w->k, &sh->stop, exact_publish, sh, sh->fixed};
    mp_exact_report_t rep;
    mp_status s = mp__xminimise(sh->b, sh->n, &eo, off, sh->start_strategy, &h, &rep);
    if (s == MP_OK) {
        offer(sh, off, rep.footprint, rep.lower_bound, "exact");
        pthread_mutex_lock(&sh->mu);
        sh->nodes += rep.nodes;
        pthread_mutex_unlock(&sh->mu);
    }
    free(off);
    return s;
}

/* Whole-plan first fits each worker tries first: the peak-first orders
 * (peak.c; the workers share out the variants, which meet the max-load
 * bound on idealloc's S_1 and pangu), then size-first orders with
 * different ties (mp__xlns_rebuild), the first of which is best of them on
 * S_1; then windows (mp__xlns_step) and, every LNS_REBUILD steps, a whole
 * rebuild in size order with random swaps. */
static const unsigned first_rules[MAX_WORKERS][2] = {{4, 5}, {0, 6}};
enum { LNS_REBUILD = 32 };

/* Step number step of worker w among its peak-first variants, then its
 * first rules; *past when step is beyond them (nothing done). */
static mp_status first_fits(worker *w, mp__xlns *l, size_t *order, uint64_t step, bool *better,
                            bool *past) {
    shared *sh = w->sh;
    uint64_t v = w->k + (uint64_t)sh->nw * step, nv = mp__xpeak_variants();
    *past = false;
    if (v < nv) {
        mp_status s = mp__xpeak_order(sh->b, sh->n, (unsigned)v, order);
        return s == MP_OK ? mp__xlns_rebuild_order(l, order, better) : s;
    }
    uint64_t r = step - (nv - w->k + sh->nw - 1) / sh->nw; /* steps past the variants */
    if (r < 2) return mp__xlns_rebuild(l, first_rules[w->k][r], better);
    *past = true;
    return MP_OK;
}

static mp_status run_lns(worker *w) {
    shared *sh = w->sh;
    mp__xlns *l;
    size_t *order = malloc((sh->n ? sh->n : 1) * sizeof *order);
    if (!order) return MP__NOMEM();
    pthread_mutex_lock(&sh->mu);
    mp_status s = mp__xlns_new(sh->b, sh->n, sh->best, w->k + 1, &l);
    pthread_mutex_unlock(&sh->mu);
    if (s != MP_OK) {
        free(order);
        return s;
    }
    mp__xlns_limit(l, sh->deadline, &sh->stop);
    mp__xlns_fix(l, sh->fixed);
    bool firsts = true; /* still in the whole-plan first fits */
    for (uint64_t step = 0, lns = 0; s == MP_OK; step++) {
        if (atomic_load(&sh->stop) || mp__xnow() >= sh->deadline) break;
        bool better = false, past = !firsts;
        if (firsts && (s = first_fits(w, l, order, step, &better, &past)) == MP_OK && past)
            firsts = false;
        if (s == MP_OK && past) {
            if (lns > 0 && lns % LNS_REBUILD == 0) s = mp__xlns_rebuild(l, 3, &better);
            else s = mp__xlns_step(l, &better);
            lns++;
        }
        if (s != MP_OK) break;
        if (better) offer(sh, mp__xlns_plan(l), mp__xlns_footprint(l), 0, "improve");
        if (step % LNS_SYNC == 1) {
            pthread_mutex_lock(&sh->mu);
            if (sh->fp < mp__xlns_footprint(l)) mp__xlns_adopt(l, sh->best);
            pthread_mutex_unlock(&sh->mu);
        }
    }
    mp__xlns_free(l);
    free(order);
    return s;
}

static void *work(void *arg) {
    worker *w = arg;
    w->s = w->sh->exact ? run_exact(w) : run_lns(w);
    if (w->s != MP_OK) {
        snprintf(w->why, sizeof w->why, "%s", mp_last_error());
        atomic_store(&w->sh->stop, 1); /* the other stops too */
    }
    return NULL;
}

static unsigned workers(const mp_auto_opts_t *o) {
    if (o->threads) return o->threads < MAX_WORKERS ? o->threads : MAX_WORKERS;
    return sysconf(_SC_NPROCESSORS_ONLN) > 1 ? MAX_WORKERS : 1;
}

/* The improvement phase from auto's plan in sh->best. */
static mp_status improve(shared *sh) {
    size_t largest;
    mp_status s = mp__xlargest_part(sh->b, sh->n, &largest);
    if (s != MP_OK) return s;
    sh->exact = largest <= MP__X_MAX_N && sh->n <= EXACT_MAX_TOTAL;
    unsigned nw = sh->nw = workers(sh->o);
    worker w[MAX_WORKERS];
    pthread_t th[MAX_WORKERS];
    bool started[MAX_WORKERS] = {false};
    for (unsigned k = 0; k < nw; k++) w[k] = (worker){sh, k, MP_OK, ""};
    for (unsigned k = 1; k < nw; k++) started[k] = pthread_create(&th[k], NULL, work, &w[k]) == 0;
    work(&w[0]);
    for (unsigned k = 1; k < nw; k++)
        if (started[k]) pthread_join(th[k], NULL);
    for (unsigned k = 0; k < nw; k++) /* the message on the caller's thread */
        if (w[k].s != MP_OK) return mp__err(w[k].s, "anytime auto: %s", w[k].why);
    return MP_OK;
}

mp_status mp__anytime_from(const mp_buffer_t *b, size_t n, const mp_auto_opts_t *o, double t0,
                           uint64_t *off, const char **source, mp_exact_report_t *rep) {
    uint64_t fp = mp__footprint(b, n, off), load;
    mp_status s = mp__offsets_bound(b, n, &load);
    if (s != MP_OK) return s;
    shared sh = {.b = b, .n = n, .o = o, .t0 = t0, .best = off, .fp = fp, .lb = load,
                 .source = *source, .start_strategy = *source};
    if (mp__fixed_count(o->fixed, n)) /* a fixed end bounds every plan */
        sh.fixed = o->fixed, sh.lb = mp__max64(sh.lb, mp__fixed_end(b, n, o->fixed));
    sh.deadline = t0 + (o->time_limit > 0 ? o->time_limit : 0);
    atomic_init(&sh.stop, 0);
    if (pthread_mutex_init(&sh.mu, NULL) != 0)
        return mp__err(MP_ENOMEM, "anytime auto: no mutex to be had");
    tell(&sh);
    if (o->time_limit > 0 && sh.fp > sh.lb && n) { /* windows of <= 17 sections (bound.c): */
        mp__xlimit lim = {.deadline = mp__xnow() + (sh.deadline - mp__xnow()) / 10}; /* cheap */
        uint64_t lb = sh.lb;
        if ((s = mp__xbound_raise_fixed(b, n, sh.fixed, 17, &lim, &lb)) == MP_OK && lb > sh.lb)
            sh.lb = lb, tell(&sh);
    }
    if (s == MP_OK && o->time_limit > 0 && sh.fp > sh.lb && n) s = improve(&sh);
    pthread_mutex_destroy(&sh.mu);
    if (s != MP_OK) return s;
    *source = sh.source;
    *rep = (mp_exact_report_t){
        .status = sh.fp == sh.lb ? MP_EXACT_OPTIMAL : MP_EXACT_GAP, .footprint = sh.fp,
        .lower_bound = sh.lb, .load_bound = load, .start = fp, .start_strategy = sh.start_strategy,
        .nodes = sh.nodes, .seconds = mp__xnow() - t0,
        .hit_limit = o->time_limit > 0 && sh.fp > sh.lb};
    return MP_OK;
}

mp_status mp_plan_auto_opts(const mp_buffer_t *b, size_t n, const mp_auto_opts_t *opts,
                            mp_plan_t *out, mp_exact_report_t *report) {
    if (!out) return mp__err(MP_EINVAL, "mp_plan_auto_opts: NULL plan");
    memset(out, 0, sizeof *out);
    mp_auto_opts_t none = {0};
    const mp_auto_opts_t *o = opts ? opts : &none;
    if (o->time_limit != o->time_limit)
        return mp__err(MP_EINVAL, "mp_plan_auto_opts: time_limit is not a number");
    size_t nf = mp__fixed_count(o->fixed, n);
    mp_exact_opts_t xo;
    mp_buffer_t *nb;
    const mp__strategy *st = NULL;
    mp_status s = nf ? mp_fixed_validate(b, n, o->fixed) : MP_OK;
    if (s == MP_OK && nf) s = mp__offset_strategy("auto", "place around fixed offsets", &st);
    if (s == MP_OK) s = mp__xprepare(b, n, NULL, &xo, &nb);
    if (s != MP_OK) return s;
    double t0 = mp__xnow();
    mp_plan_t start = {0};
    mp_auto_report_t ar = {0};
    mp_exact_report_t rep;
    const char *source = NULL;
    /* auto's plan, around the fixed buffers when there are any */
    if ((s = nf ? mp__plan_fixed(nb, n, o->fixed, st, &start) : mp__auto(nb, n, &start, &ar)) == MP_OK) {
        source = nf ? start.strategy : ar.winner;
        s = mp__anytime_from(nb, n, o, t0, start.offset, &source, &rep);
    }
    free(nb);
    if (s != MP_OK) {
        mp_plan_free(&start);
        return s;
    }
    start.footprint = rep.footprint;
    start.strategy = source;
    *out = start;
    if (report) *report = rep;
    return MP_OK;
}
