/* bound.c -- lower bounds from exact searches on time windows.
 *
 * Clip every buffer to a window of time sections [a, z]: conflicts inside
 * the window are unchanged, so any plan of the whole problem is a plan of
 * the window and OPT(window) <= OPT.  A window has far fewer buffers and
 * sections than the whole, so the decision search can often refute there
 * a capacity it cannot refute on the whole: each refutation of C raises
 * the bound to the next multiple of the unit above C (every canonical
 * footprint is a multiple of the gcd of sizes and alignments).
 *
 * Which windows: those of 2h + 1 sections for h = 1, 2, 4, ..., started
 * every h sections (so consecutive ones overlap by half), tried at each
 * width by decreasing largest load (the fuller the window, the less waste
 * it needs to refute the bound), each with a node budget that doubles with
 * the width, until the window is the whole problem.  One section alone
 * never helps: its buffers pairwise conflict and stack without a gap.  A
 * window whose buffers stacked all together fit under the bound is
 * skipped.  The waste that lifts an optimum above the max-load bound need
 * not lie at the fullest section, so every part of the time axis gets its
 * windows (the first version here looked only around the peak).
 *
 * Cost: the searches, bounded by the limits, plus O(n^2) to model the
 * problem (so only up to MP__X_MAX_N buffers; above, the max-load bound)
 * and O(n) per window to clip it. */
#include "exact.h"

#include <stdlib.h>
#include <string.h>

/* Decides the clipped problem c[0..m) at capacity cap: NO if one of its
 * parts is refuted, YES if all fit, else UNKNOWN.  Restarts over static
 * orders with doubling budgets from 1000 nodes up to budget. */
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

/* The whole problem's sections: their start times and loads. */
typedef struct axis {
    mp__xpart whole;
    uint64_t *start;       /* ns + 1 entries: section t is [start[t], start[t + 1]) */
    uint64_t *load;        /* ns entries */
    size_t *win;           /* window starts of one width, sorted for trying */
    uint64_t *key;         /* their largest loads */
} axis;

static void axis_free(axis *x) {
    mp__xpart_free(&x->whole);
    free(x->start), free(x->load), free(x->win), free(x->key);
}

static mp_status axis_build(const mp_buffer_t *b, size_t n, axis *x) {
    memset(x, 0, sizeof *x);
    size_t *all = malloc(n * sizeof *all);
    if (!all) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) all[i] = i;
    mp_status s = mp__xpart_build(b, all, n, &x->whole);
    free(all);
    if (s != MP_OK) return s;
    size_t ns = x->whole.ns;
    x->start = calloc(ns + 1, sizeof *x->start);
    x->load = calloc(ns + 1, sizeof *x->load);
    x->win = malloc((ns + 1) * sizeof *x->win);
    x->key = malloc((ns + 1) * sizeof *x->key);
    if (!x->start || !x->load || !x->win || !x->key) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        x->start[x->whole.sf[i]] = b[i].first;
        x->start[x->whole.sl[i] + 1] = b[i].last + 1;
        for (uint32_t t = x->whole.sf[i]; t <= x->whole.sl[i]; t++) x->load[t] += b[i].size;
    }
    return MP_OK;
}

/* Clips the buffers live in sections [a, z] into c; returns how many, and
 * in *sum their total size (saturating). */
static size_t clip(const mp_buffer_t *b, size_t n, const axis *x, size_t a, size_t z,
                   mp_buffer_t *c, uint64_t *sum) {
    uint64_t t0 = x->start[a], t1 = x->start[z + 1] - 1;
    size_t m = 0;
    *sum = 0;
    for (size_t i = 0; i < n; i++)
        if (x->whole.sf[i] <= z && x->whole.sl[i] >= a) {
            c[m] = b[i];
            c[m].first = mp__max64(b[i].first, t0), c[m].last = mp__min64(b[i].last, t1);
            *sum = mp__xfits(*sum, b[i].size, UINT64_MAX) ? *sum + b[i].size : UINT64_MAX;
            m++;
        }
    return m;
}

/* Window starts of width 2h + 1 (every h sections; the last one flush with
 * the end) into x->win, by decreasing largest load, ties by start. */
static size_t window_starts(axis *x, size_t h) {
    size_t ns = x->whole.ns, w = 2 * h + 1, k = 0;
    if (w >= ns) {
        x->win[0] = 0;
        return 1;
    }
    for (size_t a = 0;; a += h) {
        if (a + w > ns) a = ns - w;
        uint64_t mx = 0;
        for (size_t t = a; t < a + w; t++) mx = mp__max64(mx, x->load[t]);
        size_t j = k++; /* insertion: few windows, and this keeps ties stable */
        while (j > 0 && x->key[j - 1] < mx) x->win[j] = x->win[j - 1], x->key[j] = x->key[j - 1], j--;
        x->win[j] = a, x->key[j] = mx;
        if (a + w == ns) break;
    }
    return k;
}

mp_status mp__xbound_raise(const mp_buffer_t *b, size_t n, size_t max_width, mp__xlimit *lim,
                           uint64_t *lo) {
    if (!n || n > MP__X_MAX_N) return MP_OK;
    axis x;
    mp_status s = axis_build(b, n, &x);
    mp_buffer_t *c = malloc(n * sizeof *c);
    if (s == MP_OK && !c) s = MP__NOMEM();
    size_t ns = x.whole.ns;
    uint64_t budget = 4000;
    for (size_t h = 1; s == MP_OK && !lim->hit && ns > 1; h *= 2, budget *= 2) {
        size_t w = mp__min64(2 * h + 1, ns);
        if (max_width && w > max_width) break;
        size_t nw = window_starts(&x, h);
        for (size_t k = 0; s == MP_OK && k < nw && !lim->hit; k++) {
            size_t a = x.win[k];
            uint64_t sum;
            size_t m = clip(b, n, &x, a, a + w - 1, c, &sum);
            mp__xanswer ans = MP__X_NO;
            while (s == MP_OK && sum > *lo && ans == MP__X_NO && !lim->hit) {
                s = decide_window(c, m, *lo, budget, lim, &ans);
                if (s == MP_OK && ans == MP__X_NO) *lo += x.whole.unit - *lo % x.whole.unit;
            }
        }
        if (w == ns) break; /* that was the whole problem */
    }
    axis_free(&x);
    free(c);
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
    if (s == MP_OK) s = mp__xbound_raise(nb, n, 0, &lim, &lo);
    free(nb);
    if (s == MP_OK) *lower_bound = lo;
    return s;
}
