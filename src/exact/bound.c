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
 * Fixed buffers (pre-placed, MP_NOT_FIXED elsewhere) are obstacles of each
 * window's search at their offsets (search.c, "Fixed buffers").  Sound: a
 * plan of the whole problem restricted to a window is a plan of the window
 * with every fixed buffer live there at its offset, so a window refuted at
 * C with its obstacles refutes C for the whole problem too.  The bound
 * starts at the largest fixed end (no plan ends below a buffer it may not
 * move), and the unit includes the fixed offsets (every canonical offset
 * is then a multiple of it, so the optimum is).  The skip above becomes:
 * the free buffers stacked from 0 end at or below the lowest fixed offset
 * of the window (the obstacles, clear of one another, then stay where they
 * are: a plan within the bound).
 *
 * Cost: the searches, bounded by the limits, plus O(n^2) to model the
 * problem (so only up to MP__X_MAX_N buffers; above, the max-load bound)
 * and O(n) per window to clip it. */
#include "exact.h"

#include <stdlib.h>
#include <string.h>

/* Decides the clipped problem c[0..m) with fixed offsets cfix[0..m) (NULL:
 * none) at capacity cap: NO if one of its parts is refuted, YES if all
 * fit, else UNKNOWN.  Restarts over static orders with doubling budgets
 * from 1000 nodes up to budget. */
static mp_status decide_window(const mp_buffer_t *c, const uint64_t *cfix, size_t m, uint64_t cap,
                               uint64_t budget, mp__xlimit *lim, mp__xanswer *ans) {
    size_t *idx = NULL, *at = NULL, np = 0;
    mp_status s = mp__xsplit(c, m, &idx, &at, &np);
    *ans = MP__X_YES;
    for (size_t k = 0; s == MP_OK && k < np && *ans != MP__X_NO; k++) {
        mp__xpart p;
        mp__xsearch *ws = NULL;
        if ((s = mp__xpart_build(c, idx + at[k], at[k + 1] - at[k], &p)) != MP_OK) break;
        if ((s = mp__xpart_fix(&p, cfix)) != MP_OK) {
            mp__xpart_free(&p);
            break;
        }
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
    const uint64_t *fixed; /* NULL, or the fixed offsets */
    uint64_t *cfix;        /* the clipped buffers' fixed offsets (with fixed) */
} axis;

static void axis_free(axis *x) {
    mp__xpart_free(&x->whole);
    free(x->start), free(x->load), free(x->win), free(x->key), free(x->cfix);
}

static mp_status axis_build(const mp_buffer_t *b, size_t n, const uint64_t *fixed, axis *x) {
    memset(x, 0, sizeof *x);
    size_t *all = malloc(n * sizeof *all);
    if (!all) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) all[i] = i;
    mp_status s = mp__xpart_build(b, all, n, &x->whole);
    free(all);
    if (s == MP_OK) s = mp__xpart_fix(&x->whole, fixed); /* the unit, fix_end */
    if (s != MP_OK) return s;
    if (x->whole.fix && !(x->cfix = malloc(n * sizeof *x->cfix))) return MP__NOMEM();
    x->fixed = x->whole.fix ? fixed : NULL;
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

/* Clips the buffers live in sections [a, z] into c (their fixed offsets
 * into x->cfix); returns how many, and in *easy whether a plan within lo
 * is plain: the free ones stacked from 0 (their total size, saturating)
 * end at or below lo and every fixed offset of the window. */
static size_t clip(const mp_buffer_t *b, size_t n, axis *x, size_t a, size_t z, uint64_t lo,
                   mp_buffer_t *c, bool *easy) {
    uint64_t t0 = x->start[a], t1 = x->start[z + 1] - 1, sum = 0, room = lo;
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (x->whole.sf[i] <= z && x->whole.sl[i] >= a) {
            c[m] = b[i];
            c[m].first = mp__max64(b[i].first, t0), c[m].last = mp__min64(b[i].last, t1);
            uint64_t f = x->fixed ? x->fixed[i] : MP_NOT_FIXED;
            if (x->cfix) x->cfix[m] = f;
            if (f != MP_NOT_FIXED) room = mp__min64(room, f); /* its end is <= lo */
            else sum = mp__xfits(sum, b[i].size, UINT64_MAX) ? sum + b[i].size : UINT64_MAX;
            m++;
        }
    *easy = sum <= room;
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

/* Raises *lo by the window of sections [a, z], clipped into c[0..m): from
 * *lo up, capacities 1, 2, 4, ... units above the last one refuted until
 * one is not refuted, then bisection between; each refuted capacity C
 * raises *lo to the next multiple of the unit above C.  (One unit at a
 * time took hundreds of thousands of searches where a fixed buffer leaves
 * a large hole below it and the unit is 1.) */
static mp_status window_raise(const mp_buffer_t *b, size_t n, axis *x, size_t a, size_t z,
                              mp_buffer_t *c, size_t m, uint64_t budget, mp__xlimit *lim,
                              uint64_t *lo) {
    uint64_t u = x->whole.unit, g = 1, top = 0; /* top: a capacity not refuted; 0: none */
    bool easy = false;
    mp_status s = MP_OK;
    while (s == MP_OK && !easy && !lim->hit) {
        uint64_t cap;
        if (top) {
            if (top <= *lo) break;
            cap = *lo + (top - *lo) / 2 / u * u;
        } else {
            if (g - 1 > (UINT64_MAX - *lo) / u) break;
            cap = *lo + (g - 1) * u;
        }
        mp__xanswer ans;
        if ((s = decide_window(c, x->cfix, m, cap, budget, lim, &ans)) != MP_OK) break;
        if (ans != MP__X_NO) {
            if (cap == *lo) break; /* nothing to refute at the bound itself */
            top = cap;
            continue;
        }
        if (cap > UINT64_MAX - u) break; /* cannot happen: fixed ends and sizes fit */
        *lo = cap - cap % u + u, g *= 2;
        clip(b, n, x, a, z, *lo, c, &easy);
    }
    return s;
}

mp_status mp__xbound_raise(const mp_buffer_t *b, size_t n, size_t max_width, mp__xlimit *lim,
                           uint64_t *lo) {
    return mp__xbound_raise_fixed(b, n, NULL, max_width, lim, lo);
}

mp_status mp__xbound_raise_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                                 size_t max_width, mp__xlimit *lim, uint64_t *lo) {
    *lo = mp__max64(*lo, mp__fixed_end(b, n, fixed)); /* a fixed end bounds every plan */
    if (!n || n > MP__X_MAX_N) return MP_OK;
    axis x;
    mp_status s = axis_build(b, n, fixed, &x);
    mp_buffer_t *c = malloc(n * sizeof *c);
    if (s == MP_OK && !c) s = MP__NOMEM();
    size_t ns = x.whole.ns;
    uint64_t budget = 4000;
    /* one section alone has a gap only below or between fixed buffers */
    for (size_t h = 1; s == MP_OK && !lim->hit && (ns > 1 || x.cfix); h *= 2, budget *= 2) {
        size_t w = mp__min64(2 * h + 1, ns);
        if (max_width && w > max_width) break;
        size_t nw = window_starts(&x, h);
        for (size_t k = 0; s == MP_OK && k < nw && !lim->hit; k++) {
            size_t a = x.win[k];
            bool easy;
            size_t m = clip(b, n, &x, a, a + w - 1, *lo, c, &easy);
            if (!easy) s = window_raise(b, n, &x, a, a + w - 1, c, m, budget, lim, lo);
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
    if (s == MP_OK && o.fixed) s = mp_fixed_validate(b, n, o.fixed);
    uint64_t lo = 0;
    if (s == MP_OK) s = mp__offsets_bound(nb, n, &lo);
    mp__xlimit lim = {0};
    lim.node_limit = mp__xnode_limit(&o, n);
    lim.deadline = o.time_limit > 0 ? mp__xnow() + o.time_limit : 0;
    if (s == MP_OK) s = mp__xbound_raise_fixed(nb, n, o.fixed, 0, &lim, &lo);
    free(nb);
    if (s == MP_OK) *lower_bound = lo;
    return s;
}
