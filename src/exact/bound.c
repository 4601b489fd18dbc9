/* bound.c -- lower bounds from exact searches on time windows.
 *
 * Clip every buffer to a window of time sections [a, b]: conflicts inside
 * the window are unchanged, so any plan of the whole problem is a plan of
 * the window and OPT(window) <= OPT.  A window around the fullest section
 * has the same max-load bound as the whole problem but far fewer buffers
 * and sections, so the decision search can often refute a capacity there
 * that it cannot refute on the whole: each refutation of C raises the
 * bound to the next multiple of the unit above C.  Windows grow by
 * doubling their half-width until they cover everything (the last one is
 * the whole problem), each getting a doubling node budget.  Cost: the
 * searches, bounded by the options' limits, plus O(n^2) to model the
 * problem (so only up to MP__X_MAX_N buffers; above, the max-load bound). */
#include "exact.h"

#include <stdlib.h>
#include <string.h>

/* Decides the clipped problem c[0..m) at capacity cap: NO if one of its
 * parts is refuted, YES if all fit, else UNKNOWN.  Restarts over static
 * orders with doubling budgets from budget0 up to budget. */
static mp_status decide_window(const mp_buffer_t *c, size_t m, uint64_t cap, uint64_t budget,
                               mp__xlimit *lim, mp__xanswer *ans) {
    size_t *idx = NULL, *at = NULL, np = 0;
    mp_status s = mp__xsplit(c, m, &idx, &at, &np);
    *ans = MP__X_YES;
    for (size_t k = 0; s == MP_OK && k < np && *ans != MP__X_NO; k++) {
        mp__xpart p;
        mp__xsearch *ws = NULL;
        if ((s = mp__xpart_build(c, idx + at[k], at[k + 1] - at[k], &p)) != MP_OK) break;
        uint32_t *order = malloc(p.n * sizeof *order);
        double *scratch = malloc(3 * p.n * sizeof *scratch);
        uint64_t *off = malloc(p.n * sizeof *off);
        if (!order || !scratch || !off) s = MP__NOMEM();
        if (s == MP_OK) s = mp__xsearch_new(&p, &ws);
        mp__xanswer a = MP__X_UNKNOWN;
        for (uint64_t bud = 1000; s == MP_OK && a == MP__X_UNKNOWN && bud <= budget && !lim->hit;
             bud *= 2) {
            mp__xorder(&p, (unsigned)(bud / 1000) % 7, mp__xsearch_weights(ws), order, scratch);
            s = mp__xsearch_run(ws, order, cap, bud, true, lim, &a, off);
        }
        if (a != MP__X_YES) *ans = a;
        mp__xsearch_free(ws);
        free(order), free(scratch), free(off);
        mp__xpart_free(&p);
    }
    free(idx), free(at);
    return s;
}

/* Windows around the fullest section of the normalized problem b. */
static mp_status windows(const mp_buffer_t *b, size_t n, mp__xlimit *lim, uint64_t *lo) {
    size_t *all = malloc((n ? n : 1) * sizeof *all);
    mp_buffer_t *c = malloc((n ? n : 1) * sizeof *c);
    mp__xpart whole;
    memset(&whole, 0, sizeof whole);
    mp_status s = all && c ? MP_OK : MP__NOMEM();
    for (size_t i = 0; i < n; i++) all[i] = i;
    /* the whole problem as one model, for its sections and loads */
    if (s == MP_OK) s = mp__xpart_build(b, all, n, &whole);
    uint64_t *start = NULL;
    size_t peak = 0;
    if (s == MP_OK && !(start = calloc(whole.ns + 1, sizeof *start))) s = MP__NOMEM();
    if (s == MP_OK) { /* section start times and the first fullest section */
        for (size_t i = 0; i < n; i++) start[whole.sf[i]] = b[i].first;
        for (size_t i = 0; i < n; i++) start[whole.sl[i] + 1] = b[i].last + 1;
        uint64_t *load = calloc(whole.ns + 1, sizeof *load);
        if (!load) s = MP__NOMEM();
        for (size_t i = 0; s == MP_OK && i < n; i++)
            for (uint32_t t = whole.sf[i]; t <= whole.sl[i]; t++) load[t] += b[i].size;
        for (size_t t = 0; s == MP_OK && t < whole.ns; t++)
            if (load[t] > load[peak]) peak = t;
        free(load);
    }
    uint64_t budget = 4000;
    for (size_t w = 1; s == MP_OK && !lim->hit && whole.ns; w *= 2, budget *= 2) {
        size_t a = peak > w ? peak - w : 0, z = peak + w < whole.ns ? peak + w : whole.ns - 1;
        uint64_t t0 = start[a], t1 = start[z + 1] - 1;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (whole.sf[i] <= z && whole.sl[i] >= a) {
                c[m] = b[i];
                c[m].first = mp__max64(b[i].first, t0), c[m].last = mp__min64(b[i].last, t1);
                m++;
            }
        mp__xanswer ans = MP__X_NO;
        while (s == MP_OK && ans == MP__X_NO && !lim->hit) {
            s = decide_window(c, m, *lo, budget, lim, &ans);
            if (s == MP_OK && ans == MP__X_NO) *lo += whole.unit - *lo % whole.unit;
        }
        if (a == 0 && z + 1 == whole.ns) break; /* that was the whole problem */
    }
    mp__xpart_free(&whole);
    free(all), free(c), free(start);
    return s;
}

mp_status mp_exact_lower_bound(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *opts,
                               uint64_t *lower_bound) {
    if (!lower_bound) return mp__err(MP_EINVAL, "mp_exact_lower_bound: NULL result");
    mp_exact_opts_t o;
    mp_buffer_t *nb;
    mp_status s = mp__xprepare(b, n, opts, &o, &nb);
    uint64_t lo = 0;
    if (s == MP_OK) s = mp__offsets_bound(nb, n, &lo);
    mp__xlimit lim = {0};
    lim.node_limit = mp__xnode_limit(&o, n);
    lim.deadline = o.time_limit > 0 ? mp__xnow() + o.time_limit : 0;
    if (s == MP_OK && n && n <= MP__X_MAX_N) s = windows(nb, n, &lim, &lo);
    free(nb);
    if (s == MP_OK) *lower_bound = lo;
    return s;
}
