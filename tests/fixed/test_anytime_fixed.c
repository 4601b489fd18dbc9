/* test_anytime_fixed.c -- anytime "auto" (mp_plan_auto_opts with a time
 * limit), mp_exact_solve (opts.fixed) and pools with a time limit, around
 * fixed buffers.
 *
 * Random problems with a few buffers fixed at random aligned offsets (not
 * overlapping one another, often leaving holes below them).  Every plan
 * the call returns, and every plan its progress callback shows, passes
 * mp_plan_check_fixed; its footprint is at most that of
 * mp_plan_compute_fixed(..., "auto", ...), the plan without the limit; its
 * lower bound is at least the max-load bound and every fixed end.  On
 * problems of at most 7 buffers the bound and the optimum are checked
 * against an oracle that shares no code with the planners: the least
 * footprint of first fit around the fixed buffers over every order of the
 * free ones (first fit in the order of an optimal plan's offsets puts each
 * free buffer at or below its offset there, since the fixed buffers and
 * those placed before it leave that offset clear).  A part above 3000
 * buffers takes the local-improvement route; pools keep their fixed
 * buffers and never hold fewer bytes in the first pool than without the
 * limit. */
#include "exact/exact.h"
#include "gen.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

/* ---- the oracle ---------------------------------------------------------- */

typedef struct oracle {
    mp_buffer_t b[8];      /* sizes rounded up to the alignment, align >= 1 */
    size_t n;
    uint64_t off[8];
    bool placed[8];        /* fixed ones from the start */
    uint64_t best;
} oracle;

static bool together(const mp_buffer_t *x, const mp_buffer_t *y) {
    return x->first <= y->last && y->first <= x->last;
}

/* Can buffer i lie at `at` beside every placed buffer? */
static bool room_at(const oracle *o, size_t i, uint64_t at) {
    for (size_t j = 0; j < o->n; j++)
        if (j != i && o->placed[j] && together(&o->b[i], &o->b[j]) &&
            at < o->off[j] + o->b[j].size && o->off[j] < at + o->b[i].size)
            return false;
    return true;
}

/* The lowest offset where i fits: 0 or the aligned end of a placed buffer. */
static uint64_t lowest(const oracle *o, size_t i) {
    uint64_t a = o->b[i].align, at = room_at(o, i, 0) ? 0 : UINT64_MAX;
    for (size_t j = 0; j < o->n; j++) {
        if (!o->placed[j] || !together(&o->b[i], &o->b[j])) continue;
        uint64_t c = (o->off[j] + o->b[j].size + a - 1) / a * a;
        if (c < at && room_at(o, i, c)) at = c;
    }
    return at;
}

static void orders(oracle *o, uint64_t top) {
    if (top >= o->best) return;
    bool any = false;
    for (size_t i = 0; i < o->n; i++) {
        if (o->placed[i]) continue;
        any = true;
        o->off[i] = lowest(o, i);
        o->placed[i] = true;
        uint64_t end = o->off[i] + o->b[i].size;
        orders(o, end > top ? end : top);
        o->placed[i] = false;
    }
    if (!any) o->best = top;
}

static uint64_t optimum(const mp_buffer_t *b, size_t n, const uint64_t *fixed) {
    oracle o = {.n = n, .best = UINT64_MAX};
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        o.b[i] = b[i];
        o.b[i].align = b[i].align ? b[i].align : 1;
        o.b[i].size = mp_buffer_aligned_size(&b[i]);
        o.placed[i] = fixed && fixed[i] != MP_NOT_FIXED;
        o.off[i] = o.placed[i] ? fixed[i] : 0;
        if (o.placed[i] && o.off[i] + o.b[i].size > top) top = o.off[i] + o.b[i].size;
    }
    orders(&o, top);
    return o.best;
}

/* ---- helpers ------------------------------------------------------------- */

/* Fixes about `want` random buffers at random aligned offsets below
 * `range`, clear of the fixed buffers live with them; the rest free. */
static void fix_some(const mp_buffer_t *b, size_t n, size_t want, uint64_t range, uint64_t *st,
                     uint64_t *fx) {
    for (size_t i = 0; i < n; i++) fx[i] = MP_NOT_FIXED;
    for (size_t k = 0; k < want; k++) {
        size_t i = (size_t)(mp_gen_next(st) % n);
        uint64_t a = b[i].align ? b[i].align : 1, z = mp_buffer_aligned_size(&b[i]);
        for (int tries = 0; tries < 20 && fx[i] == MP_NOT_FIXED; tries++) {
            uint64_t at = mp_gen_next(st) % (range + 1) / a * a;
            bool clear = true;
            for (size_t j = 0; clear && j < n; j++)
                if (fx[j] != MP_NOT_FIXED && together(&b[i], &b[j]))
                    clear = at >= fx[j] + mp_buffer_aligned_size(&b[j]) || fx[j] >= at + z;
            if (clear) fx[i] = at;
        }
    }
}

static uint64_t fixed_end(const mp_buffer_t *b, size_t n, const uint64_t *fx) {
    uint64_t e = 0;
    for (size_t i = 0; i < n; i++)
        if (fx[i] != MP_NOT_FIXED && fx[i] + mp_buffer_aligned_size(&b[i]) > e)
            e = fx[i] + mp_buffer_aligned_size(&b[i]);
    return e;
}

/* What the progress callback saw: every plan checked with the fixed ones. */
typedef struct watch {
    const mp_buffer_t *b;
    const uint64_t *fixed;
    long calls, bad;
    uint64_t last_fp;
} watch;

static void look(void *ctx, const mp_anytime_progress_t *p) {
    watch *w = ctx;
    mp_plan_t q = {.n = p->n, .offset = (uint64_t *)p->offset, .footprint = p->footprint};
    w->calls++;
    if (mp_plan_check_fixed(w->b, p->n, w->fixed, &q, NULL) != MP_OK || p->lower_bound > p->footprint ||
        p->footprint > w->last_fp)
        w->bad++;
    w->last_fp = p->footprint;
}

/* Anytime auto around fx: checked as the top says; the report back. */
static mp_exact_report_t anytime(const mp_buffer_t *b, size_t n, const uint64_t *fx, double limit,
                                 unsigned threads, uint64_t *base_fp) {
    mp_exact_report_t r;
    memset(&r, 0, sizeof r);
    mp_plan_t base, p;
    if (!MP_CHECK_OK(mp_plan_compute_fixed(b, n, fx, "auto", &base))) return r;
    *base_fp = base.footprint;
    mp_plan_free(&base);
    watch w = {.b = b, .fixed = fx, .last_fp = UINT64_MAX};
    mp_auto_opts_t o = {.time_limit = limit, .threads = threads, .progress = look, .ctx = &w,
                        .fixed = fx};
    if (!MP_CHECK_OK(mp_plan_auto_opts(b, n, &o, &p, &r))) return r;
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
    MP_CHECK_OK(mp_plan_check_fixed(b, n, fx, &p, NULL));
    MP_CHECK(p.footprint == r.footprint && r.footprint <= *base_fp && r.start == *base_fp);
    MP_CHECK(r.lower_bound >= bd.offsets && r.lower_bound >= fixed_end(b, n, fx));
    MP_CHECK(r.lower_bound <= r.footprint);
    MP_CHECK((r.status == MP_EXACT_OPTIMAL) == (r.lower_bound == r.footprint));
    MP_CHECK(w.calls > 0 && w.bad == 0);
    mp_plan_free(&p);
    return r;
}

/* ---- tests --------------------------------------------------------------- */

/* Tiny problems: the bound and the plan against the oracle; each proven. */
static void test_tiny(void) {
    uint64_t st = 11;
    long proven = 0, runs = 0, below_base = 0;
    for (int iter = 0; iter < 300; iter++) {
        mp_buffer_t b[7];
        uint64_t fx[7], base;
        size_t n = 3 + (size_t)(mp_gen_next(&st) % 5);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 7000 + (uint64_t)iter);
        mp_bounds_t bd;
        if (!MP_CHECK_OK(mp_bounds_compute(b, n, &bd))) continue;
        fix_some(b, n, 1 + (size_t)(mp_gen_next(&st) % 3), bd.offsets + bd.offsets / 2, &st, fx);
        if (!MP_CHECK_OK(mp_fixed_validate(b, n, fx))) continue;
        uint64_t opt = optimum(b, n, fx);
        mp_exact_report_t r = anytime(b, n, fx, 2, 1 + (unsigned)(iter % 2), &base);
        runs++;
        MP_CHECK(r.lower_bound <= opt && opt <= r.footprint);
        proven += r.status == MP_EXACT_OPTIMAL;
        below_base += r.footprint < base;
        if (r.status == MP_EXACT_OPTIMAL && !MP_CHECK_EQ_U64(r.footprint, opt))
            fprintf(stderr, "  iter %d n %zu: optimal %llu claimed, the oracle says %llu\n", iter, n,
                    (unsigned long long)r.footprint, (unsigned long long)opt);
    }
    /* seven buffers take the search microseconds: every one proven */
    MP_CHECK_EQ_U64(proven, runs);
    MP_CHECK(below_base > 0); /* the search did improve on auto somewhere */
    fprintf(stderr, "tiny: %ld problems, %ld proven, %ld below auto's plan\n", runs, proven, below_base);
}

/* Larger problems, both routes: the exact search (parts up to 3000) and
 * local improvement (one part of 3200 buffers). */
static void test_larger(void) {
    uint64_t st = 23;
    static mp_buffer_t b[3200];
    static uint64_t fx[3200];
    for (int iter = 0; iter < 40; iter++) {
        size_t n = 20 + (size_t)(mp_gen_next(&st) % 120);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 8000 + (uint64_t)iter);
        mp_bounds_t bd;
        if (!MP_CHECK_OK(mp_bounds_compute(b, n, &bd))) continue;
        fix_some(b, n, 2 + (size_t)(mp_gen_next(&st) % 6), bd.offsets, &st, fx);
        uint64_t base;
        anytime(b, n, fx, 0.05, 1 + (unsigned)(iter % 2), &base);
    }
    size_t n = 3200, largest = 0;
    mp_gen_problem(b, n, MP_GEN_CHAIN, 4242);
    for (size_t i = 0; i < n; i++) b[i].first = i / 2, b[i].last = i / 2 + 3; /* one part */
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
    fix_some(b, n, 12, bd.offsets, &st, fx);
    mp_buffer_t *nb = NULL;
    mp_exact_opts_t xo;
    if (MP_CHECK_OK(mp__xprepare(b, n, NULL, &xo, &nb)) && MP_CHECK_OK(mp__xlargest_part(nb, n, &largest)))
        MP_CHECK(largest > MP__X_MAX_N); /* so the route is local improvement */
    free(nb);
    uint64_t base;
    for (unsigned threads = 1; threads <= 2; threads++) anytime(b, n, fx, 0.3, threads, &base);
}

static uint64_t pool_bytes(const mp_buffer_t *b, size_t n, const mp_pool_plan_t *p, size_t j) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += p->pool[i] == j ? mp_buffer_aligned_size(&b[i]) : 0;
    return s;
}

/* The first pool's search plans its fixed buffers, then every free
 * buffer (in index order): each plan it shows must be valid for them. */
typedef struct pool_watch {
    mp_buffer_t sub[40];
    uint64_t sfx[40];
    size_t m;
    long calls, bad;
} pool_watch;

static void pool_look(void *ctx, size_t pool, const mp_anytime_progress_t *p) {
    pool_watch *w = ctx;
    if (pool != 0) return;
    mp_plan_t q = {.n = p->n, .offset = (uint64_t *)p->offset, .footprint = p->footprint};
    w->calls++;
    w->bad += p->n != w->m || mp_plan_check_fixed(w->sub, w->m, w->sfx, &q, NULL) != MP_OK;
}

/* Pool j's buffers in plan p into sub[] with their fixed offsets (those
 * fixed in pool j; the rest free) into sfx[]: how many, SIZE_MAX above
 * `most`; *fend: the largest fixed end among them. */
static size_t pool_part(const mp_buffer_t *b, size_t n, const uint64_t *fx, const size_t *fp,
                        const mp_pool_plan_t *p, size_t j, mp_buffer_t *sub, uint64_t *sfx,
                        size_t most, uint64_t *fend) {
    size_t m = 0;
    *fend = 0;
    for (size_t i = 0; i < n; i++) {
        if (p->pool[i] != j) continue;
        bool f = fx[i] != MP_NOT_FIXED && fp[i] == j;
        if (f && fx[i] + mp_buffer_aligned_size(&b[i]) > *fend) *fend = fx[i] + mp_buffer_aligned_size(&b[i]);
        if (m == most) return SIZE_MAX;
        sub[m] = b[i], sfx[m++] = f ? fx[i] : MP_NOT_FIXED;
    }
    return m;
}

/* The pools of test_pools with the strategy "exact": each pool's search
 * takes the pool's fixed buffers as obstacles.  Checked plans, and each
 * pool's report true for the buffers it holds: its bound at least its
 * load and fixed end, at most the oracle's optimum, and "optimal" only at
 * that optimum. */
static void check_pools_exact(const mp_buffer_t *b, size_t n, const mp_pool_t *pools,
                              const uint64_t *fx, const size_t *fp, long *proven) {
    mp_pool_opts_t o = {.strategy = "exact", .fixed = fx, .fixed_pool = fp};
    mp_pool_plan_t p;
    mp_exact_report_t r[2];
    if (!MP_CHECK_OK(mp_plan_pools_opts(b, n, pools, 2, &o, &p, r))) return;
    MP_CHECK_OK(mp_pool_plan_check_fixed(b, n, pools, 2, fx, fp, &p));
    MP_CHECK(!strcmp(p.strategy, "exact"));
    for (size_t j = 0; j < 2; j++) {
        mp_buffer_t sub[7];
        uint64_t sfx[7], fend;
        size_t m = pool_part(b, n, fx, fp, &p, j, sub, sfx, 7, &fend);
        MP_CHECK(r[j].footprint == p.footprint[j] && r[j].lower_bound <= r[j].footprint);
        MP_CHECK(r[j].lower_bound >= fend && r[j].lower_bound >= r[j].load_bound);
        MP_CHECK((r[j].status == MP_EXACT_OPTIMAL) == (r[j].lower_bound == r[j].footprint));
        *proven += r[j].status == MP_EXACT_OPTIMAL;
        if (m == SIZE_MAX) continue;
        uint64_t opt = optimum(sub, m, sfx);
        MP_CHECK(r[j].lower_bound <= opt);
        if (r[j].status == MP_EXACT_OPTIMAL) MP_CHECK_EQ_U64(r[j].footprint, opt);
    }
    mp_pool_plan_free(&p);
}

/* Pools: some buffers of a plain pool plan fixed where it put them, then
 * planned with and without a time limit, and by "exact". */
static void test_pools(void) {
    uint64_t st = 31;
    long proven = 0;
    for (int iter = 0; iter < 60; iter++) {
        mp_buffer_t b[40], sub[7];
        uint64_t fx[40], sfx[7];
        size_t fp[40];
        size_t n = 6 + (size_t)(mp_gen_next(&st) % 34);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 9000 + (uint64_t)iter);
        mp_bounds_t bd;
        if (!MP_CHECK_OK(mp_bounds_compute(b, n, &bd))) continue;
        mp_pool_t pools[2] = {{"fast", bd.offsets / 2 + 1}, {"dram", 0}};
        mp_pool_plan_t p0, p1, p;
        if (!MP_CHECK_OK(mp_plan_pools(b, n, pools, 2, "greedy-size", &p0))) continue;
        for (size_t i = 0; i < n; i++) {
            bool f = mp_gen_next(&st) % 4 == 0;
            fx[i] = f ? p0.offset[i] : MP_NOT_FIXED, fp[i] = f ? p0.pool[i] : 0;
        }
        mp_pool_plan_free(&p0);
        mp_pool_opts_t plain = {.fixed = fx, .fixed_pool = fp};
        pool_watch pw = {.m = 0};
        for (int pass = 0; pass < 2; pass++) /* pool 0's fixed buffers, then the free ones */
            for (size_t i = 0; i < n; i++)
                if (pass ? fx[i] == MP_NOT_FIXED : fx[i] != MP_NOT_FIXED && fp[i] == 0)
                    pw.sub[pw.m] = b[i], pw.sfx[pw.m++] = fx[i];
        mp_pool_opts_t timed = {.fixed = fx, .fixed_pool = fp, .time_limit = 0.04,
                                .progress = pool_look, .ctx = &pw};
        mp_exact_report_t r[2];
        if (!MP_CHECK_OK(mp_plan_pools_opts(b, n, pools, 2, &plain, &p1, NULL))) continue;
        if (MP_CHECK_OK(mp_plan_pools_opts(b, n, pools, 2, &timed, &p, r))) {
            MP_CHECK_OK(mp_pool_plan_check_fixed(b, n, pools, 2, fx, fp, &p));
            MP_CHECK(pool_bytes(b, n, &p, 0) >= pool_bytes(b, n, &p1, 0));
            MP_CHECK(pw.calls > 0 && pw.bad == 0);
            for (size_t j = 0; j < 2; j++) {
                uint64_t fend;
                size_t m = pool_part(b, n, fx, fp, &p, j, sub, sfx, 7, &fend);
                MP_CHECK(r[j].footprint == p.footprint[j] && r[j].lower_bound <= r[j].footprint);
                MP_CHECK(r[j].lower_bound >= fend && r[j].lower_bound >= r[j].load_bound);
                if (m != SIZE_MAX) MP_CHECK(r[j].lower_bound <= optimum(sub, m, sfx));
            }
            mp_pool_plan_free(&p);
        }
        mp_pool_plan_free(&p1);
        check_pools_exact(b, n, pools, fx, fp, &proven);
    }
    MP_CHECK(proven > 0);
    fprintf(stderr, "pools, exact: %ld of 120 pools proven optimal\n", proven);
}

/* mp_exact_solve with opts.fixed, one call: the plan checked with the
 * fixed offsets and the report's claims against the plan and the bounds;
 * the report back (zeroed on failure). */
static mp_exact_report_t exact(const mp_buffer_t *b, size_t n, const uint64_t *fx, int naive,
                               uint64_t capacity, uint64_t base_fp) {
    mp_exact_report_t r;
    memset(&r, 0, sizeof r);
    mp_exact_opts_t o = {.capacity = capacity, .no_heuristics = naive, .fixed = fx};
    mp_plan_t p;
    mp_bounds_t bd;
    if (!MP_CHECK_OK(mp_exact_solve(b, n, &o, &p, &r)) || !MP_CHECK_OK(mp_bounds_compute(b, n, &bd)))
        return r;
    MP_CHECK_OK(mp_plan_check_fixed(b, n, fx, &p, NULL));
    MP_CHECK(p.footprint == r.footprint && r.footprint <= r.start);
    if (!naive) MP_CHECK(r.start == base_fp);
    MP_CHECK(r.lower_bound >= bd.offsets && r.lower_bound >= fixed_end(b, n, fx));
    if (!capacity) MP_CHECK((r.status == MP_EXACT_OPTIMAL) == (r.lower_bound == r.footprint));
    if (capacity) MP_CHECK(r.status != MP_EXACT_FITS || r.footprint <= capacity);
    if (capacity) MP_CHECK(r.status != MP_EXACT_NO_FIT || r.lower_bound > capacity);
    mp_plan_free(&p);
    return r;
}

/* mp_exact_solve around fixed buffers on tiny problems, without limits:
 * minimising (from auto's plan and from naive's) finds the oracle's
 * optimum and proves it; deciding at the optimum fits, one unit below it
 * (and below the largest fixed end) is refuted.  Invalid fixed offsets
 * are refused as mp_fixed_validate refuses them. */
static void test_exact_solve(void) {
    uint64_t st = 17;
    long runs = 0, below_base = 0;
    for (int iter = 0; iter < 300; iter++) {
        mp_buffer_t b[7];
        uint64_t fx[7];
        size_t n = 3 + (size_t)(mp_gen_next(&st) % 5);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 7500 + (uint64_t)iter);
        mp_bounds_t bd;
        mp_plan_t base;
        if (!MP_CHECK_OK(mp_bounds_compute(b, n, &bd))) continue;
        fix_some(b, n, 1 + (size_t)(mp_gen_next(&st) % 3), bd.offsets + bd.offsets / 2, &st, fx);
        if (!MP_CHECK_OK(mp_plan_compute_fixed(b, n, fx, "auto", &base))) continue;
        uint64_t opt = optimum(b, n, fx), fend = fixed_end(b, n, fx);
        runs++;
        for (int naive = 0; naive <= 1; naive++) {
            mp_exact_report_t r = exact(b, n, fx, naive, 0, base.footprint);
            MP_CHECK(r.status == MP_EXACT_OPTIMAL && !r.hit_limit);
            if (!MP_CHECK_EQ_U64(r.footprint, opt))
                fprintf(stderr, "  iter %d n %zu naive %d: %llu, the oracle says %llu\n", iter, n,
                        naive, (unsigned long long)r.footprint, (unsigned long long)opt);
            below_base += !naive && r.footprint < base.footprint;
        }
        mp_plan_t q; /* the strategy "exact" around them: the same search, default limits */
        if (MP_CHECK_OK(mp_plan_compute_fixed(b, n, fx, "exact", &q))) {
            MP_CHECK_OK(mp_plan_check_fixed(b, n, fx, &q, NULL));
            MP_CHECK(q.footprint == opt && !strcmp(q.strategy, "exact"));
            mp_plan_free(&q);
        }
        MP_CHECK(exact(b, n, fx, 1, opt, base.footprint).status == MP_EXACT_FITS);
        if (opt > 1) MP_CHECK(exact(b, n, fx, 0, opt - 1, base.footprint).status == MP_EXACT_NO_FIT);
        if (fend > 1) MP_CHECK(exact(b, n, fx, 0, fend - 1, base.footprint).status == MP_EXACT_NO_FIT);
        mp_plan_free(&base);
    }
    MP_CHECK(below_base > 0); /* the search did improve on auto somewhere */
    fprintf(stderr, "exact: %ld problems, %ld below auto's plan\n", runs, below_base);
    /* a misaligned fixed offset: refused, the plan zeroed */
    mp_buffer_t b[] = {{1, 0, 4, 100, 8}, {2, 2, 6, 50, 0}};
    uint64_t fx[] = {4, MP_NOT_FIXED};
    mp_exact_opts_t o = {.fixed = fx};
    mp_plan_t p = {.n = 99};
    MP_CHECK(mp_exact_solve(b, 2, &o, &p, NULL) == MP_EINVAL && p.n == 0 && !p.offset);
    MP_CHECK(strstr(mp_last_error(), "alignment") != NULL);
}

/* The example of docs/exact.md: two buffers that cannot use the hole
 * below a fixed one must go above it. */
static void test_example(void) {
    mp_buffer_t b[] = {{1, 0, 3, 100, 16}, {2, 2, 4, 50, 0}, {3, 3, 8, 64, 64}, {4, 1, 7, 30, 0},
                       {5, 5, 8, 80, 0}};
    uint64_t fx[] = {0, MP_NOT_FIXED, 128, MP_NOT_FIXED, MP_NOT_FIXED}, base;
    mp_exact_report_t r = anytime(b, 5, fx, 2, 0, &base);
    MP_CHECK_EQ_U64(r.footprint, optimum(b, 5, fx));
    MP_CHECK(r.status == MP_EXACT_OPTIMAL);
}

int main(void) {
    test_example();
    test_tiny();
    test_exact_solve();
    test_larger();
    test_pools();
    return mp_test_finish("test_anytime_fixed");
}
