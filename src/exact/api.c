/* api.c -- mp_exact_solve, the strategy "exact", options and reports.
 *
 * The driver: validate and normalize; take "auto"'s plan as the start (so
 * the result is never worse than any heuristic it runs) and the max-load
 * bound; stop there when they meet.  Otherwise cut the problem into
 * independent parts (solve.c minimises one part) and restart searches over
 * the parts that can still matter -- those whose best plan is above the
 * largest proven lower bound of any part, since the footprint is the
 * largest part's -- with node budgets of the Luby sequence (1 1 2 1 1 2 4
 * ... times MP__X_UNIT), until every part is closed or a limit is reached.
 * Luby's sequence is within a log factor of the best restart schedule when
 * the run lengths are unknown, and the searches here are heavy-tailed: the
 * right static order solves a hard-set instance in a thousand nodes, a
 * wrong one not in millions.  Parts above MP__X_MAX_N buffers keep their
 * heuristic plan (their search model takes O(n^2) memory).  Deciding a
 * capacity works the same way with every search at that capacity.  Fixed
 * buffers (opts.fixed) change only the start -- auto's plan around them
 * (src/offsets/fixed.c) -- and the bound, raised to their largest end; the
 * search takes them as obstacles (search.c, "Fixed buffers"). */
#include "exact.h"
#include "../strategies/strategies.h"
#include "../offsets/pools.h"

#include <stdlib.h>
#include <string.h>

#define MP__X_UNIT 1000     /* nodes: restart budgets are this times Luby's sequence */
#define MP__X_IMPROVE 8     /* one restart in 8 looks for a better plan, the others
                               search at the bound the problem must reach */

const char *mp_exact_status_name(mp_exact_status s) {
    switch (s) {
    case MP_EXACT_OPTIMAL: return "optimal";
    case MP_EXACT_GAP: return "gap";
    case MP_EXACT_FITS: return "fits";
    case MP_EXACT_NO_FIT: return "no-fit";
    case MP_EXACT_UNKNOWN: return "unknown";
    }
    return "?";
}

static double env_double(const char *name, double dflt) {
    const char *v = getenv(name);
    if (!v || !*v) return dflt;
    char *end;
    double d = strtod(v, &end);
    return *end || d != d ? dflt : d;
}

void mp_exact_opts_default(mp_exact_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->time_limit = env_double("MEMPLAN_EXACT_TIME", 5.0);
    double nodes = env_double("MEMPLAN_EXACT_NODES", -1);
    if (nodes < 0) o->nodes_per_buffer = 5000;
    else o->node_limit = nodes >= 1.8e19 ? UINT64_MAX : (uint64_t)nodes;
}

uint64_t mp__xnode_limit(const mp_exact_opts_t *o, size_t n) {
    uint64_t lim = o->node_limit;
    if (o->nodes_per_buffer) {
        uint64_t per = (uint64_t)n > UINT64_MAX / o->nodes_per_buffer ? UINT64_MAX
                                                                       : n * o->nodes_per_buffer;
        per = mp__min64(mp__max64(per, 10000), 2000000);
        lim = lim ? mp__min64(lim, per) : per;
    }
    return lim;
}

/* The state of one call: the parts and their solvers. */
typedef struct run {
    const mp_buffer_t *b;
    size_t n;
    const mp_exact_opts_t *o;
    mp__xlimit lim;
    size_t *idx, *at, n_parts;
    mp__xsolver *sv;          /* per part; part.n == 0 when not searched */
    uint64_t *lo, *hi;        /* per part */
    uint64_t *off;            /* the whole plan */
    const mp__xhooks *h;      /* NULL, or anytime "auto"'s hooks */
    const uint64_t *fixed;    /* NULL, or fixed offsets (h->fixed) */
} run;

static void run_free(run *r) {
    for (size_t k = 0; r->sv && k < r->n_parts; k++) mp__xsolver_free(&r->sv[k]);
    free(r->idx), free(r->at), free(r->sv), free(r->lo), free(r->hi);
}

/* Builds each part's solver from the start plan r->off. */
static mp_status setup_parts(run *r) {
    mp_status s = mp__xsplit(r->b, r->n, &r->idx, &r->at, &r->n_parts);
    if (s != MP_OK) return s;
    size_t np = r->n_parts ? r->n_parts : 1;
    r->sv = calloc(np, sizeof *r->sv);
    r->lo = calloc(np, sizeof *r->lo);
    r->hi = calloc(np, sizeof *r->hi);
    uint64_t *start = malloc((r->n ? r->n : 1) * sizeof *start);
    if (!r->sv || !r->lo || !r->hi || !start) s = MP__NOMEM();
    for (size_t k = 0; s == MP_OK && k < r->n_parts; k++) {
        const size_t *g = r->idx + r->at[k];
        size_t m = r->at[k + 1] - r->at[k];
        mp__xpart p;
        if (m > MP__X_MAX_N) { /* not searched: its own footprint and load */
            uint64_t f = 0;
            for (size_t i = 0; i < m; i++) f = mp__max64(f, r->off[g[i]] + r->b[g[i]].size);
            r->hi[k] = f;
            mp_buffer_t *sub = malloc(m * sizeof *sub);
            if (!sub) { s = MP__NOMEM(); break; }
            for (size_t i = 0; i < m; i++) sub[i] = r->b[g[i]];
            s = mp__offsets_bound(sub, m, &r->lo[k]);
            free(sub);
            for (size_t i = 0; r->fixed && i < m; i++) /* a fixed buffer's end bounds it */
                if (r->fixed[g[i]] != MP_NOT_FIXED)
                    r->lo[k] = mp__max64(r->lo[k], r->fixed[g[i]] + r->b[g[i]].size);
            continue;
        }
        if ((s = mp__xpart_build(r->b, g, m, &p)) != MP_OK) break;
        if ((s = mp__xpart_fix(&p, r->fixed)) != MP_OK) {
            mp__xpart_free(&p);
            break;
        }
        for (size_t i = 0; i < m; i++) start[i] = r->off[g[i]];
        if ((s = mp__xsolver_init(&r->sv[k], &p, start, mp__max64(p.load, p.fix_end))) != MP_OK) {
            mp__xpart_free(&p);
            break;
        }
        r->lo[k] = r->sv[k].lo, r->hi[k] = r->sv[k].hi;
        if (r->h && r->h->stream) { /* another thread's sequences of orders */
            r->sv[k].round = 4 + 100003u * r->h->stream;
            r->sv[k].iround = 50001u * r->h->stream;
        }
    }
    free(start);
    return s;
}

static uint64_t max_of(const uint64_t *x, size_t n) {
    uint64_t m = 0;
    for (size_t i = 0; i < n; i++) m = mp__max64(m, x[i]);
    return m;
}

/* The Luby sequence 1 1 2 1 1 2 4 1 1 2 1 1 2 4 8 ... (i >= 1). */
static uint64_t luby(uint64_t i) {
    for (;;) {
        uint64_t k = 1;
        while (((uint64_t)1 << k) - 1 < i) k++;
        if (i == ((uint64_t)1 << k) - 1) return (uint64_t)1 << (k - 1);
        i -= ((uint64_t)1 << (k - 1)) - 1;
    }
}

/* True in the second half of the node limit, or without one of the time
 * limit.  With a node limit the clock is left out: the switch to more
 * improving restarts changes every later search, so a switch by time made
 * the nodes to a proof depend on the machine's speed (G of the hard set:
 * 877 407 in one run, 737 632 without the switch). */
static bool late(const run *r) {
    const mp__xlimit *l = &r->lim;
    if (l->node_limit) return l->nodes > l->node_limit / 2;
    return l->deadline > 0 && mp__xnow() > l->deadline - r->o->time_limit / 2;
}

static void collect(run *r);

/* Tells the hooks of a better plan or a higher bound than last told. */
static void publish(run *r, uint64_t *told_fp, uint64_t *told_lb) {
    if (!r->h || !r->h->publish) return;
    uint64_t fp = max_of(r->hi, r->n_parts), lb = max_of(r->lo, r->n_parts);
    if (fp < *told_fp) {
        collect(r);
        r->h->publish(r->h->ctx, r->off, fp, lb);
    } else if (lb > *told_lb) {
        r->h->publish(r->h->ctx, NULL, 0, lb);
    }
    *told_fp = mp__min64(*told_fp, fp), *told_lb = mp__max64(*told_lb, lb);
}

/* Minimising: restarts over the parts that can still lower the footprint.
 * Of every MP__X_IMPROVE restarts one looks for a better plan, the others
 * search at the bound; each kind has its own Luby sequence of budgets
 * (and the solver its own sequence of orders), so that the searches at
 * the bound run exactly as they would alone, only slower. */
static mp_status minimise(run *r) {
    mp_status s = MP_OK;
    uint64_t nb = 0, ni = 0, told_fp = max_of(r->hi, r->n_parts), told_lb = 0;
    for (uint64_t i = 1; s == MP_OK && !r->lim.hit; i++) {
        bool improve = i % MP__X_IMPROVE == 0 || (late(r) && i % 2 == 0);
        uint64_t g = max_of(r->lo, r->n_parts), budget = MP__X_UNIT * luby(improve ? ++ni : ++nb);
        bool open = false;
        for (size_t k = 0; s == MP_OK && k < r->n_parts && !r->lim.hit; k++) {
            mp__xsolver *v = &r->sv[k];
            if (!v->part.n || r->hi[k] <= mp__xsolver_target(v, g)) continue;
            open = true;
            s = mp__xsolver_step(v, g, improve, budget, &r->lim);
            r->lo[k] = v->lo, r->hi[k] = v->hi;
            g = mp__max64(g, v->lo);
        }
        publish(r, &told_fp, &told_lb);
        if (!open) break;
    }
    return s;
}

/* Deciding capacity cap: restarts with Luby budgets on each part above it,
 * until every part fits, one is refuted, or a limit is reached. */
static mp_status decide(run *r, uint64_t cap) {
    mp_status s = MP_OK;
    for (uint64_t i = 1; s == MP_OK && !r->lim.hit; i++) {
        bool open = false;
        for (size_t k = 0; s == MP_OK && k < r->n_parts && !r->lim.hit; k++) {
            mp__xsolver *v = &r->sv[k];
            if (r->hi[k] <= cap || r->lo[k] > cap || !v->part.n) continue;
            mp__xanswer a;
            open = true;
            s = mp__xsolver_decide(v, cap, MP__X_UNIT * luby(i), true, &r->lim, &a);
            r->lo[k] = v->lo, r->hi[k] = v->hi;
            if (a == MP__X_NO) return s; /* one part that cannot fit settles it */
        }
        if (!open) break;
    }
    return s;
}

/* Writes the parts' best plans into r->off. */
static void collect(run *r) {
    for (size_t k = 0; k < r->n_parts; k++) {
        const mp__xsolver *v = &r->sv[k];
        for (size_t i = 0; i < v->part.n; i++) r->off[v->part.gid[i]] = v->best[i];
    }
}

/* The search from the plan in off[] (made by start_strategy), started at
 * t0: off[] receives the best plan. */
static mp_status run_from(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *o, uint64_t *off,
                          const char *start_strategy, const mp__xhooks *h, double t0,
                          mp_exact_report_t *rep) {
    run r = {.b = b, .n = n, .o = o, .off = off, .h = h, .fixed = h ? h->fixed : NULL};
    r.lim.node_limit = mp__xnode_limit(o, n);
    r.lim.deadline = o->time_limit > 0 ? t0 + o->time_limit : 0;
    r.lim.stop = h ? h->stop : NULL;
    memset(rep, 0, sizeof *rep);
    rep->start_strategy = start_strategy;
    mp_status s = mp__offsets_bound(b, n, &rep->load_bound);
    if (s != MP_OK) return s;
    rep->start = mp__footprint(b, n, off);
    uint64_t cap = o->capacity, lb0 = mp__max64(rep->load_bound, mp__fixed_end(b, n, r.fixed));
    bool settled = cap ? rep->start <= cap || lb0 > cap : rep->start == lb0;
    if (!settled) s = setup_parts(&r);
    if (!settled && s == MP_OK) s = cap ? decide(&r, cap) : minimise(&r);
    if (s != MP_OK) {
        run_free(&r);
        return s;
    }
    if (!settled) collect(&r);
    rep->parts = settled ? 0 : r.n_parts;
    rep->lower_bound = settled ? lb0 : mp__max64(lb0, max_of(r.lo, r.n_parts));
    rep->footprint = mp__footprint(b, n, off);
    for (size_t k = 0; !settled && k < r.n_parts; k++)
        rep->parts_open += cap ? r.hi[k] > cap && r.lo[k] <= cap : r.hi[k] > rep->lower_bound;
    if (cap) {
        rep->status = rep->footprint <= cap ? MP_EXACT_FITS
                      : rep->lower_bound > cap ? MP_EXACT_NO_FIT : MP_EXACT_UNKNOWN;
        if (rep->status != MP_EXACT_UNKNOWN) rep->parts_open = 0;
    } else {
        rep->status = rep->footprint == rep->lower_bound ? MP_EXACT_OPTIMAL : MP_EXACT_GAP;
    }
    rep->nodes = r.lim.nodes;
    rep->hit_limit = r.lim.hit;
    rep->seconds = mp__xnow() - t0;
    run_free(&r);
    return s;
}

/* The whole call on a normalized problem: off[] receives the plan.  With
 * fixed buffers (o->fixed, validated) the start is auto's (or naive's)
 * plan around them and the search takes them as obstacles (the hooks carry
 * them; nothing else of the hooks is set). */
static mp_status exact_run(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *o,
                           uint64_t *off, mp_exact_report_t *rep) {
    double t0 = mp__xnow();
    mp_plan_t start = {0};
    mp_auto_report_t ar = {0};
    mp_status s;
    const char *from = "naive";
    bool any = mp__fixed_count(o->fixed, n) > 0;
    mp__xhooks h = {.fixed = o->fixed};
    if (any) {
        const mp__strategy *st;
        s = mp__offset_strategy(o->no_heuristics ? "naive" : "auto", "place around fixed offsets", &st);
        if (s == MP_OK) s = mp__plan_fixed(b, n, o->fixed, st, &start);
        if (s == MP_OK) memcpy(off, start.offset, n * sizeof *off), from = start.strategy;
        mp_plan_free(&start);
    } else if (!o->no_heuristics && n) {
        s = mp__auto(b, n, &start, &ar);
        if (s == MP_OK) memcpy(off, start.offset, n * sizeof *off);
        from = ar.winner;
        mp_plan_free(&start);
    } else {
        s = mp__offsets_naive(b, n, off);
    }
    if (s != MP_OK) return s;
    return run_from(b, n, o, off, from, any ? &h : NULL, t0, rep);
}

mp_status mp__xminimise(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *o, uint64_t *off,
                        const char *start_strategy, const mp__xhooks *h, mp_exact_report_t *rep) {
    mp_exact_opts_t mo = *o;
    mo.capacity = 0;
    return run_from(b, n, &mo, off, start_strategy, h, mp__xnow(), rep);
}

mp_status mp__xlargest_part(const mp_buffer_t *b, size_t n, size_t *largest) {
    size_t *idx, *at, np;
    mp_status s = mp__xsplit(b, n, &idx, &at, &np);
    *largest = 0;
    for (size_t k = 0; s == MP_OK && k < np; k++) *largest = mp__max64(*largest, at[k + 1] - at[k]);
    if (s == MP_OK) free(idx), free(at);
    return s;
}

mp_status mp__xprepare(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *opts,
                       mp_exact_opts_t *o, mp_buffer_t **nb) {
    if (opts) *o = *opts;
    else mp_exact_opts_default(o);
    *nb = NULL;
    mp_status s = mp_problem_validate(b, n);
    return s == MP_OK ? mp__normalize(b, n, nb) : s;
}

mp_status mp_exact_solve(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *opts,
                         mp_plan_t *out, mp_exact_report_t *report) {
    if (!out) return mp__err(MP_EINVAL, "mp_exact_solve: NULL plan");
    memset(out, 0, sizeof *out);
    mp_exact_opts_t o;
    mp_buffer_t *nb = NULL;
    mp_status s = mp__xprepare(b, n, opts, &o, &nb);
    if (s == MP_OK && o.fixed) s = mp_fixed_validate(b, n, o.fixed);
    uint64_t *off = s == MP_OK ? calloc(n ? n : 1, sizeof *off) : NULL;
    if (s == MP_OK && !off) s = MP__NOMEM();
    mp_exact_report_t rep;
    if (s == MP_OK) s = exact_run(nb, n, &o, off, &rep);
    free(nb);
    if (s != MP_OK) {
        free(off);
        return s;
    }
    *out = (mp_plan_t){.n = n, .offset = off, .footprint = rep.footprint, .strategy = "exact"};
    if (report) *report = rep;
    return MP_OK;
}

mp_status mp__xsolve_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed, uint64_t *offset,
                           mp_exact_report_t *rep) {
    mp_exact_opts_t o;
    mp_exact_opts_default(&o);
    o.fixed = fixed;
    mp_exact_report_t none;
    return exact_run(b, n, &o, offset, rep ? rep : &none);
}

/* The registry's "exact": mp_exact_solve with the default options. */
mp_status mp__offsets_exact(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    return mp__xsolve_fixed(b, n, NULL, offset, NULL);
}
