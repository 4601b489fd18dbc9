/* test_exact.c -- the exact offset search (src/exact/) against brute force.
 *
 * The oracle here shares no code with the solver: the optimum of a tiny
 * problem is the smallest footprint of first fit (each buffer at the lowest
 * aligned offset free of the conflicting buffers placed before it) over all
 * n! orders -- first fit in the order of an optimal plan's offsets places
 * every buffer at or below its offset there, so the minimum is the optimum.
 * On thousands of random problems of n <= 7 the solver must prove that
 * optimum, decide "fits" at it and "no fit" one byte below it, with every
 * static order of the search; every plan goes through the checker.  Then
 * the limits: a time limit is kept and reported as a gap or "unknown", a
 * node limit gives the same plan every run. */
#include "exact/exact.h"
#include "gen.h"
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the brute-force oracle ------------------------------------------------ */

typedef struct brute {
    const mp_buffer_t *b;  /* normalized: align >= 1, size a multiple of it */
    size_t n;
    size_t perm[8];
    bool used[8];
    uint64_t off[8];
    uint64_t best;
} brute;

static bool meets(const mp_buffer_t *x, const mp_buffer_t *y) {
    return x->first <= y->last && y->first <= x->last;
}

/* Lowest aligned offset for buffer i clear of the conflicting buffers in
 * perm[0..k): 0 or the aligned top of one of them, the first that fits. */
static uint64_t first_fit(const brute *br, size_t k, size_t i) {
    const mp_buffer_t *b = br->b;
    uint64_t best = UINT64_MAX;
    for (size_t c = 0; c <= k; c++) {
        uint64_t o = 0;
        if (c < k) {
            size_t j = br->perm[c];
            if (!meets(&b[i], &b[j])) continue;
            o = br->off[j] + b[j].size;
            o = (o + b[i].align - 1) / b[i].align * b[i].align;
        }
        bool ok = o < best;
        for (size_t d = 0; ok && d < k; d++) {
            size_t j = br->perm[d];
            if (meets(&b[i], &b[j]) && o < br->off[j] + b[j].size && br->off[j] < o + b[i].size)
                ok = false;
        }
        if (ok) best = o;
    }
    return best;
}

static void brute_rec(brute *br, size_t k, uint64_t top) {
    if (top >= br->best) return;
    if (k == br->n) {
        br->best = top;
        return;
    }
    for (size_t i = 0; i < br->n; i++) {
        if (br->used[i]) continue;
        br->off[i] = first_fit(br, k, i);
        br->perm[k] = i;
        br->used[i] = true;
        uint64_t t = br->off[i] + br->b[i].size;
        brute_rec(br, k + 1, t > top ? t : top);
        br->used[i] = false;
    }
}

static uint64_t brute_opt(const mp_buffer_t *raw, size_t n) {
    mp_buffer_t b[8];
    for (size_t i = 0; i < n; i++) {
        b[i] = raw[i];
        if (!b[i].align) b[i].align = 1;
        b[i].size = (b[i].size + b[i].align - 1) / b[i].align * b[i].align;
    }
    brute br = {.b = b, .n = n, .best = UINT64_MAX};
    brute_rec(&br, 0, 0);
    return n ? br.best : 0;
}

/* ---- helpers ----------------------------------------------------------------- */

static mp_exact_opts_t unlimited(int no_heuristics, uint64_t capacity) {
    return (mp_exact_opts_t){.time_limit = 0, .node_limit = 0, .capacity = capacity,
                             .no_heuristics = no_heuristics};
}

/* mp_exact_solve, its plan through the checker; returns the report. */
static mp_exact_report_t solve(const mp_buffer_t *b, size_t n, mp_exact_opts_t o) {
    mp_plan_t p;
    mp_exact_report_t r;
    memset(&r, 0, sizeof r);
    if (!MP_CHECK_OK(mp_exact_solve(b, n, &o, &p, &r))) return r;
    MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
    MP_CHECK_EQ_U64(p.footprint, r.footprint);
    MP_CHECK(r.lower_bound <= r.footprint && r.load_bound <= r.lower_bound);
    MP_CHECK(r.footprint <= r.start);
    mp_plan_free(&p);
    return r;
}

/* Every static order of the internal search decides each part at cap the
 * same way: "fits" (with a valid plan) iff want_fit. */
static void all_orders_agree(const mp_buffer_t *raw, size_t n, uint64_t cap, bool want_fit) {
    mp_buffer_t *b;
    size_t *idx, *at, np;
    if (!MP_CHECK_OK(mp__normalize(raw, n, &b))) return;
    MP_CHECK_OK(mp__xsplit(b, n, &idx, &at, &np));
    bool all_fit = true;
    for (size_t k = 0; k < np; k++) {
        mp__xpart p;
        mp__xsearch *s;
        MP_CHECK_OK(mp__xpart_build(b, idx + at[k], at[k + 1] - at[k], &p));
        MP_CHECK_OK(mp__xsearch_new(&p, &s));
        uint32_t order[64];
        double scratch[3 * 64];
        uint64_t off[64];
        bool fit0 = false;
        for (unsigned o = 0; o < 8; o++) {
            mp__xlimit lim = {0};
            mp__xanswer a;
            mp__xorder(&p, o, NULL, order, scratch);
            MP_CHECK_OK(mp__xsearch_run(s, order, cap, 0, true, &lim, &a, off));
            MP_CHECK(a != MP__X_UNKNOWN);
            if (o == 0) fit0 = a == MP__X_YES;
            if (!MP_CHECK((a == MP__X_YES) == fit0))
                fprintf(stderr, "  part %zu, order %u disagrees at cap %llu\n", k, o,
                        (unsigned long long)cap);
            if (a != MP__X_YES) continue;
            /* the part's plan: inside cap, no two conflicting buffers meet */
            for (size_t i = 0; i < p.n; i++) {
                MP_CHECK(off[i] % p.align[i] == 0 && off[i] + p.size[i] <= cap);
                for (size_t j = 0; j < i; j++) {
                    const mp_buffer_t *x = &b[p.gid[i]], *y = &b[p.gid[j]];
                    if (meets(x, y))
                        MP_CHECK(off[i] + p.size[i] <= off[j] || off[j] + p.size[j] <= off[i]);
                }
            }
        }
        all_fit &= fit0;
        mp__xsearch_free(s);
        mp__xpart_free(&p);
    }
    MP_CHECK(all_fit == want_fit);
    free(b), free(idx), free(at);
}

/* A tiny random problem: few distinct times and sizes, so that ties,
 * identical buffers and exact fits are common; some alignments. */
static size_t tiny_problem(mp_buffer_t *b, uint64_t *st) {
    size_t n = 1 + mp_gen_next(st) % 7;
    uint64_t span = 2 + mp_gen_next(st) % 7, smax = 1 + mp_gen_next(st) % 12;
    bool aligned = mp_gen_next(st) % 4 == 0;
    for (size_t i = 0; i < n; i++) {
        b[i].id = 100 + i;
        b[i].first = mp_gen_next(st) % span;
        b[i].last = b[i].first + mp_gen_next(st) % (span - b[i].first + 1);
        b[i].size = 1 + mp_gen_next(st) % smax;
        b[i].align = aligned ? (uint64_t[]){0, 1, 2, 4, 8}[mp_gen_next(st) % 5] : 0;
    }
    return n;
}

static void check_tiny(const mp_buffer_t *b, size_t n, long iter) {
    uint64_t opt = brute_opt(b, n);
    long failed = mp_test_failed;
    mp_exact_report_t r = solve(b, n, unlimited(1, 0));
    MP_CHECK_EQ_U64(r.footprint, opt);
    MP_CHECK(r.status == MP_EXACT_OPTIMAL && r.lower_bound == opt && !r.hit_limit);
    r = solve(b, n, unlimited(0, 0));
    MP_CHECK_EQ_U64(r.footprint, opt);
    MP_CHECK(r.status == MP_EXACT_OPTIMAL);
    r = solve(b, n, unlimited(1, opt));
    MP_CHECK(r.status == MP_EXACT_FITS && r.footprint <= opt);
    if (opt > 1) {
        r = solve(b, n, unlimited(1, opt - 1));
        MP_CHECK(r.status == MP_EXACT_NO_FIT && r.lower_bound >= opt);
        all_orders_agree(b, n, opt - 1, false);
    }
    all_orders_agree(b, n, opt, true);
    uint64_t lb = 0;
    MP_CHECK_OK(mp_exact_lower_bound(b, n, NULL, &lb));
    MP_CHECK(lb <= opt);
    mp_exact_opts_t o = unlimited(0, 0);
    MP_CHECK_OK(mp_exact_lower_bound(b, n, &o, &lb)); /* the last window is all */
    MP_CHECK_EQ_U64(lb, opt);
    if (mp_test_failed != failed) {
        fprintf(stderr, "  tiny instance %ld (optimum %llu):\n", iter, (unsigned long long)opt);
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "    id %llu [%llu, %llu] size %llu align %llu\n",
                    (unsigned long long)b[i].id, (unsigned long long)b[i].first,
                    (unsigned long long)b[i].last, (unsigned long long)b[i].size,
                    (unsigned long long)b[i].align);
    }
}

static void test_tiny_random(void) {
    uint64_t st = 20250511;
    mp_buffer_t b[8];
    for (long iter = 0; iter < 3000; iter++) check_tiny(b, tiny_problem(b, &st), iter);
    /* the generator's shapes too (sizes of all magnitudes, times far apart) */
    for (long iter = 0; iter < 700; iter++) {
        size_t n = 1 + (size_t)iter % 7;
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 77 + (uint64_t)iter);
        check_tiny(b, n, 3000 + iter);
    }
}

/* Middle-sized problems, beyond brute force: the optimum proven with the
 * heuristics' start and without agree, and every order agrees at it. */
static void test_middle(void) {
    uint64_t st = 99;
    for (int iter = 0; iter < 60; iter++) {
        size_t n = 8 + mp_gen_next(&st) % 9;
        mp_buffer_t b[16];
        uint64_t span = 4 + mp_gen_next(&st) % 10;
        for (size_t i = 0; i < n; i++) {
            b[i] = (mp_buffer_t){.id = i, .first = mp_gen_next(&st) % span,
                                 .size = 1 + mp_gen_next(&st) % 16};
            b[i].last = b[i].first + mp_gen_next(&st) % 4;
        }
        mp_exact_report_t r1 = solve(b, n, unlimited(1, 0)), r2 = solve(b, n, unlimited(0, 0));
        MP_CHECK(r1.status == MP_EXACT_OPTIMAL && r2.status == MP_EXACT_OPTIMAL);
        MP_CHECK_EQ_U64(r1.footprint, r2.footprint);
        all_orders_agree(b, n, r1.footprint, true);
        if (r1.footprint > 1) all_orders_agree(b, n, r1.footprint - 1, false);
    }
}

/* A perfect packing: the rectangle [0, 60) x [0, 1024 KiB) cut at random,
 * across or along, into buffers (up to depth cuts deep).  Every section is
 * exactly full, so the optimum is 1 MiB, which the search must find rather
 * than prove. */
static void puzzle_cut(mp_buffer_t *b, size_t *n, uint64_t *st, uint64_t t0, uint64_t t1,
                       uint64_t y0, uint64_t y1, int depth) {
    uint64_t w = t1 - t0, h = y1 - y0;
    if (depth == 0 || (w < 2 && h < 2) || mp_gen_next(st) % 8 == 0) {
        b[*n] = (mp_buffer_t){.id = *n, .first = t0, .last = t1 - 1, .size = h * 1024};
        ++*n;
    } else if ((mp_gen_next(st) % 2 && w >= 2) || h < 2) {
        uint64_t c = t0 + 1 + mp_gen_next(st) % (w - 1);
        puzzle_cut(b, n, st, t0, c, y0, y1, depth - 1);
        puzzle_cut(b, n, st, c, t1, y0, y1, depth - 1);
    } else {
        uint64_t c = y0 + 1 + mp_gen_next(st) % (h - 1);
        puzzle_cut(b, n, st, t0, t1, y0, c, depth - 1);
        puzzle_cut(b, n, st, t0, t1, c, y1, depth - 1);
    }
}

static size_t puzzle(mp_buffer_t *b, uint64_t seed, int depth) {
    size_t n = 0;
    puzzle_cut(b, &n, &seed, 0, 60, 0, 1024, depth);
    return n;
}

/* Tiny perfect packings (a 6 x 8 rectangle cut into at most 8 buffers),
 * then as often one buffer dropped, grown by a unit or lived one time
 * longer: sections with no slack or nearly none, where rules (A) and (B)
 * of search.c skip children.  Brute force decides the optimum. */
static void test_tiny_packings(void) {
    uint64_t st = 4242;
    mp_buffer_t b[8];
    for (long iter = 0; iter < 1500; iter++) {
        size_t n = 0;
        puzzle_cut(b, &n, &st, 0, 6, 0, 8, 3);
        size_t v = mp_gen_next(&st) % n;
        switch (mp_gen_next(&st) % 4) {
        case 1: if (n > 1) b[v] = b[--n]; break;
        case 2: b[v].size += 1024; break;
        case 3: b[v].last++; break;
        default: break;
        }
        if (iter % 5 == 0) b[v].align = 2048;
        check_tiny(b, n, 10000 + iter);
    }
}

static void test_limits(void) {
    static mp_buffer_t b[1024];
    const uint64_t opt = 1024 * 1024;
    size_t n = puzzle(b, 5, 9); /* 226 buffers this search does not solve in 1 s */
    /* a time limit is kept: a gap over the true bound, or the optimum */
    mp_exact_opts_t o = unlimited(0, 0);
    o.time_limit = 0.3;
    double t0 = mp__xnow();
    mp_exact_report_t r = solve(b, n, o);
    double took = mp__xnow() - t0;
    MP_CHECK(took < 3.0); /* 0.3 s plus the heuristics, with sanitizer slack */
    MP_CHECK(r.load_bound == opt && r.lower_bound == opt);
    MP_CHECK(r.status == MP_EXACT_OPTIMAL ? r.footprint == opt
                                         : r.status == MP_EXACT_GAP && r.hit_limit &&
                                               r.footprint > opt && r.parts_open > 0);
    /* deciding at the optimum within the limit: fits, or unknown -- never
     * "no fit", it does fit */
    o.capacity = opt;
    mp_exact_report_t d = solve(b, n, o);
    MP_CHECK(d.status == MP_EXACT_FITS ? d.footprint <= opt
                                      : d.status == MP_EXACT_UNKNOWN && d.hit_limit &&
                                            d.parts_open > 0);
    /* a node limit: the same plan every run */
    o = unlimited(0, 0);
    o.node_limit = 20000;
    mp_plan_t p1, p2;
    mp_exact_report_t r1, r2;
    MP_CHECK_OK(mp_exact_solve(b, n, &o, &p1, &r1));
    MP_CHECK_OK(mp_exact_solve(b, n, &o, &p2, &r2));
    MP_CHECK(p1.footprint == p2.footprint && !memcmp(p1.offset, p2.offset, n * sizeof *p1.offset));
    MP_CHECK(r1.nodes <= o.node_limit && r1.nodes == r2.nodes);
    MP_CHECK(r1.status == MP_EXACT_OPTIMAL || r1.hit_limit);
    MP_CHECK_OK(mp_plan_check(b, n, &p1, NULL));
    mp_plan_free(&p1), mp_plan_free(&p2);
    /* the strategy: never worse than auto, its node limit from the
     * environment */
    setenv("MEMPLAN_EXACT_NODES", "20000", 1);
    mp_plan_t a, e;
    MP_CHECK_OK(mp_plan_compute(b, n, "auto", &a));
    MP_CHECK_OK(mp_plan_compute(b, n, "exact", &e));
    MP_CHECK_OK(mp_plan_check(b, n, &e, NULL));
    MP_CHECK(e.footprint <= a.footprint && !strcmp(e.strategy, "exact"));
    mp_plan_free(&a), mp_plan_free(&e);
    unsetenv("MEMPLAN_EXACT_NODES");
    /* easier puzzles are solved to their optimum */
    int solved = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        n = puzzle(b, seed, 7);
        o = unlimited(0, 0);
        o.node_limit = 200000;
        r = solve(b, n, o);
        MP_CHECK(r.lower_bound == opt);
        solved += r.status == MP_EXACT_OPTIMAL;
    }
    MP_CHECK(solved >= 6);
}

static void test_edges(void) {
    mp_exact_report_t r = solve(NULL, 0, unlimited(0, 0));
    MP_CHECK(r.status == MP_EXACT_OPTIMAL && r.footprint == 0);
    mp_buffer_t one[] = {{7, 3, 3, 100, 16}};
    r = solve(one, 1, unlimited(1, 0));
    MP_CHECK(r.status == MP_EXACT_OPTIMAL && r.footprint == 112);
    r = solve(one, 1, unlimited(1, 50));
    MP_CHECK(r.status == MP_EXACT_NO_FIT);
    /* sizes near 2^63: nothing may overflow */
    uint64_t big = (UINT64_C(1) << 63) - 1;
    mp_buffer_t huge[] = {{1, 0, 0, big, 0}, {2, 1, 1, big, 0}, {3, 0, 1, 1, 0}};
    r = solve(huge, 3, unlimited(1, 0));
    MP_CHECK(r.status == MP_EXACT_OPTIMAL && r.footprint == big + 1);
    r = solve(huge, 3, unlimited(1, UINT64_MAX));
    MP_CHECK(r.status == MP_EXACT_FITS);
    /* times far apart: three independent parts */
    mp_buffer_t far[] = {{1, 0, 10, 8, 0}, {2, UINT64_MAX - 5, UINT64_MAX - 2, 8, 0},
                         {3, 1000000000000ull, 1000000000001ull, 16, 0}};
    r = solve(far, 3, unlimited(1, 0));
    MP_CHECK(r.status == MP_EXACT_OPTIMAL && r.footprint == 16);
    /* invalid input is an error, not a crash */
    mp_buffer_t bad[] = {{1, 5, 4, 8, 0}};
    mp_plan_t p;
    MP_CHECK(mp_exact_solve(bad, 1, NULL, &p, NULL) == MP_EINVAL);
    MP_CHECK(p.offset == NULL);
    MP_CHECK(!strcmp(mp_exact_status_name(MP_EXACT_GAP), "gap"));
}

/* ---- anytime "auto" (mp_plan_auto_opts) ------------------------------------ */

/* Watches the progress: every plan held passes the checker, footprints
 * never rise, bounds never fall and never pass the footprint. */
typedef struct watch {
    const mp_buffer_t *b;
    size_t n;
    uint64_t fp, lb;
    long calls, bad;
} watch;

static void watch_progress(void *ctx, const mp_anytime_progress_t *p) {
    watch *w = ctx;
    mp_plan_t pl = {.n = p->n, .offset = (uint64_t *)p->offset, .footprint = p->footprint};
    if (p->n != w->n || mp_plan_check(w->b, w->n, &pl, NULL) != MP_OK) w->bad++;
    if (w->calls && (p->footprint > w->fp || p->lower_bound < w->lb)) w->bad++;
    if (p->lower_bound > p->footprint || !p->source) w->bad++;
    w->fp = p->footprint, w->lb = p->lower_bound, w->calls++;
}

/* Anytime auto on b for limit seconds with threads: the plan is checked,
 * never worse than any heuristic auto runs, its statement true (opt: the
 * known optimum, 0: unknown).  Returns the report. */
static mp_exact_report_t anytime(const mp_buffer_t *b, size_t n, double limit, unsigned threads,
                                 uint64_t opt) {
    watch w = {.b = b, .n = n};
    mp_auto_opts_t o = {.time_limit = limit, .threads = threads, .progress = watch_progress,
                        .ctx = &w};
    mp_plan_t p;
    mp_exact_report_t r;
    memset(&r, 0, sizeof r);
    double t0 = mp__xnow();
    if (!MP_CHECK_OK(mp_plan_auto_opts(b, n, &o, &p, &r))) return r;
    double took = mp__xnow() - t0;
    MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
    MP_CHECK(w.bad == 0 && w.calls >= 1 && w.fp == p.footprint);
    MP_CHECK(p.footprint == r.footprint && r.lower_bound <= r.footprint && r.footprint <= r.start);
    MP_CHECK(r.status == (r.footprint == r.lower_bound ? MP_EXACT_OPTIMAL : MP_EXACT_GAP));
    MP_CHECK(r.hit_limit == (r.status == MP_EXACT_GAP && limit > 0));
    if (opt) MP_CHECK(r.lower_bound <= opt && opt <= r.footprint);
    MP_CHECK(took < limit + 10.0); /* the heuristics and slack for sanitizers */
    static const char *const heur[] = {"greedy-size", "strip-bestfit", "greedy-breadth",
                                       "smartpool-bestfit", "smartpool-firstfit", "inorder"};
    for (size_t k = 0; k < sizeof heur / sizeof heur[0]; k++) {
        mp_plan_t h;
        MP_CHECK_OK(mp_plan_compute(b, n, heur[k], &h));
        if (!MP_CHECK(p.footprint <= h.footprint))
            fprintf(stderr, "  anytime %llu above %s's %llu\n", (unsigned long long)p.footprint,
                    heur[k], (unsigned long long)h.footprint);
        mp_plan_free(&h);
    }
    mp_plan_free(&p);
    return r;
}

static void test_anytime(void) {
    /* no time limit: exactly "auto" */
    static mp_buffer_t b[1 + 16384];
    for (int shape = 0; shape < MP_GEN_SHAPES; shape++) {
        mp_gen_problem(b, 300, (mp_gen_shape)shape, 11 + (uint64_t)shape);
        mp_plan_t a, t;
        mp_exact_report_t r;
        mp_auto_report_t ar;
        MP_CHECK_OK(mp_plan_auto(b, 300, &a, &ar));
        MP_CHECK_OK(mp_plan_auto_opts(b, 300, NULL, &t, &r));
        MP_CHECK(a.footprint == t.footprint && !strcmp(a.strategy, t.strategy) &&
                 !memcmp(a.offset, t.offset, 300 * sizeof *a.offset));
        MP_CHECK(r.lower_bound == ar.lower_bound && !r.hit_limit && r.nodes == 0);
        mp_plan_free(&a), mp_plan_free(&t);
    }
    /* tiny problems: the statement against brute force */
    uint64_t st = 4242;
    for (int iter = 0; iter < 150; iter++) {
        size_t n = tiny_problem(b, &st);
        uint64_t opt = brute_opt(b, n);
        mp_exact_report_t r = anytime(b, n, 0.5, 1 + iter % 2, opt);
        MP_CHECK(r.status == MP_EXACT_OPTIMAL && r.footprint == opt);
    }
    /* a perfect packing the search does not solve at once: both threads,
     * one thread; the bound is the optimum */
    const uint64_t opt = 1024 * 1024;
    size_t n = puzzle(b, 5, 9);
    for (unsigned th = 1; th <= 2; th++) {
        mp_exact_report_t r = anytime(b, n, 0.5, th, opt);
        MP_CHECK(r.lower_bound == opt);
    }
    /* a part above the exact search's size: local improvement */
    /* (a perfect packing above one buffer live throughout, so that it is
     * one part) */
    n = 0;
    for (uint64_t seed = 1; n <= MP__X_MAX_N && seed < 20; seed++) {
        b[0] = (mp_buffer_t){.id = 0, .first = 0, .last = 1999, .size = 1024};
        n = 1, st = seed;
        puzzle_cut(b, &n, &st, 0, 2000, 1, 1024, 14); /* at most 2^14 more */
    }
    MP_CHECK(n > MP__X_MAX_N);
    for (unsigned th = 1; th <= 2; th++) {
        mp_exact_report_t r = anytime(b, n, 1.0, th, opt);
        if (!MP_CHECK(r.lower_bound == opt && r.nodes == 0))
            fprintf(stderr, "  n %zu lb %llu nodes %llu\n", n, (unsigned long long)r.lower_bound, (unsigned long long)r.nodes);
    }
    /* errors, not crashes */
    mp_buffer_t bad[] = {{1, 5, 4, 8, 0}};
    mp_plan_t p;
    mp_auto_opts_t o = {.time_limit = 1};
    MP_CHECK(mp_plan_auto_opts(bad, 1, &o, &p, NULL) == MP_EINVAL && p.offset == NULL);
    o.time_limit = NAN;
    MP_CHECK(mp_plan_auto_opts(b, 3, &o, &p, NULL) == MP_EINVAL && p.offset == NULL);
    MP_CHECK(mp_plan_auto_opts(b, 3, NULL, NULL, NULL) == MP_EINVAL);
}

int main(void) {
    test_edges();
    test_tiny_random();
    test_middle();
    test_tiny_packings();
    test_limits();
    test_anytime();
    return mp_test_finish("test_exact");
}
