/* test_strategies.c -- every strategy on thousands of random instances of
 * several shapes: the checker accepts every plan, lower bound <= footprint
 * <= naive, "auto" is no worse than any strategy it runs, and planning is
 * deterministic.  Plus edge cases every strategy must survive. */
#include "core/internal.h"
#include "exact/exact.h"
#include "gen.h"
#include "offsets/gapfit.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static bool same_plan(const mp_plan_t *a, const mp_plan_t *b) {
    if (a->n != b->n || a->footprint != b->footprint || a->n_objects != b->n_objects) return false;
    if (a->n && memcmp(a->offset, b->offset, a->n * sizeof *a->offset)) return false;
    if (!a->object != !b->object) return false;
    return !a->object || !a->n || !memcmp(a->object, b->object, a->n * sizeof *a->object);
}

/* Plans one instance with every strategy; returns false on any failure. */
static void plan_all(const mp_buffer_t *b, size_t n, bool determinism) {
    uint64_t best_auto_candidate = UINT64_MAX;
    for (size_t s = 0; s < mp_strategy_count(); s++) {
        const mp_strategy_info_t *info = mp_strategy_info(s);
        if (info->all_limit && n > info->all_limit) continue;
        mp_plan_t p;
        uint64_t f = mp_test_plan(b, n, info->name, &p);
        if (f == 0 && n > 0) {
            fprintf(stderr, "  (strategy %s)\n", info->name);
            mp_plan_free(&p);
            continue;
        }
        if (info->kind == MP_KIND_OFFSETS && strcmp(info->name, "naive") &&
            f < best_auto_candidate)
            best_auto_candidate = f;
        if (info->kind == MP_KIND_META && n > 0)
            MP_CHECK(f <= best_auto_candidate);
        if (determinism) {
            mp_plan_t q;
            MP_CHECK_OK(mp_plan_compute(b, n, info->name, &q));
            if (!MP_CHECK(same_plan(&p, &q))) fprintf(stderr, "  nondeterministic: %s\n", info->name);
            mp_plan_free(&q);
        }
        mp_plan_free(&p);
    }
}

static void test_random(void) {
    uint64_t st = 2024;
    for (int iter = 0; iter < 2100; iter++) {
        mp_gen_shape shape = (mp_gen_shape)(iter % MP_GEN_SHAPES);
        size_t n = 1 + mp_gen_next(&st) % (iter % 10 == 0 ? 300 : 50);
        mp_buffer_t *b = malloc(n * sizeof *b);
        mp_gen_problem(b, n, shape, st);
        long before = mp_test_failed;
        plan_all(b, n, iter % 7 == 0);
        if (mp_test_failed != before)
            fprintf(stderr, "  instance: shape %s, n %zu, iter %d\n", mp_gen_shape_name[shape], n, iter);
        free(b);
    }
}

static void test_edges(void) {
    /* Empty problem: every strategy gives an empty plan of footprint 0. */
    plan_all(NULL, 0, true);
    /* One buffer. */
    mp_buffer_t one[] = {{5, 3, 3, 100, 0}};
    plan_all(one, 1, true);
    /* Sizes near 2^63: a and b never meet, c meets both; the naive sum is
     * exactly 2^64-1, so nothing may overflow on the way. */
    uint64_t big = (UINT64_C(1) << 63) - 1;
    mp_buffer_t huge[] = {{1, 0, 0, big, 0}, {2, 1, 1, big, 0}, {3, 0, 1, 1, 0}};
    plan_all(huge, 3, true);
    /* Equal sizes, identical intervals: all conflict, footprint = sum. */
    mp_buffer_t same[8];
    for (size_t i = 0; i < 8; i++) same[i] = (mp_buffer_t){i, 4, 9, 64, 0};
    plan_all(same, 8, true);
    /* Times far apart (no arrays indexed by raw time). */
    mp_buffer_t far[] = {{1, 0, 10, 8, 0}, {2, UINT64_MAX - 5, UINT64_MAX - 2, 8, 0},
                         {3, 1000000000000ull, 1000000000001ull, 16, 0}};
    plan_all(far, 3, true);
    /* Mixed alignments. */
    mp_buffer_t al[] = {{1, 0, 2, 3, 1}, {2, 1, 3, 5, 64}, {3, 2, 4, 7, 8}, {4, 0, 4, 1, 256}};
    plan_all(al, 4, true);
}

/* Sequential first fits after auto's strategies (src/offsets/auto.c): in
 * its documented order, each replacing want when strictly smaller, until
 * one meets the bound or six in a row found nothing smaller.  -1: greedy
 * by size, v >= 0: peak-first variant v. */
static void sequential_fits(const mp_buffer_t *raw, size_t n, uint64_t bound, mp_plan_t *want) {
    static const int fits[] = {-1, 0, 1, 10, 9, 6, 3, 8, 2, 4, 5, 7, 11};
    mp_buffer_t *b;
    if (!MP_CHECK_OK(mp__normalize(raw, n, &b))) return;
    size_t *order = malloc(n * sizeof *order);
    uint64_t *off = malloc(n * sizeof *off);
    size_t idle = 0;
    for (size_t k = 0; order && off && k < sizeof fits / sizeof *fits && want->footprint > bound &&
                       idle < 6;
         k++) {
        if (fits[k] < 0) MP_CHECK_OK(mp__xsize_order(b, n, order));
        else MP_CHECK_OK(mp__xpeak_order(b, n, (unsigned)fits[k], order));
        MP_CHECK_OK(mp__gapfit_run(b, n, order, MP__GAP_SMARTPOOL_FIRST, off));
        uint64_t fp = mp__footprint(b, n, off);
        idle = fp < want->footprint ? 0 : idle + 1;
        if (!idle) {
            memcpy(want->offset, off, n * sizeof *off);
            want->footprint = fp;
            want->strategy = fits[k] < 0 ? "size-firstfit" : "peak-firstfit";
        }
    }
    free(order), free(off), free(b);
}

/* auto on instances big enough for its two threads: its plan must be,
 * byte for byte, the one a sequential run without the watch picks -- the
 * first candidate in auto's order of the smallest footprint, stopping at
 * the first that meets the bound, then the first fits -- whether
 * candidates were stopped or made to wait (src/offsets/auto.c) or not.  Shapes where one candidate meets
 * the bound (DNN: strip-bestfit, after greedy-size passed it and waited)
 * and where none does. */
static void auto_vs_sequential(mp_gen_shape shape, size_t n, uint64_t seed) {
    mp_buffer_t *b = malloc(n * sizeof *b);
    mp_gen_problem(b, n, shape, seed);
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
    /* auto's documented order (src/offsets/auto.c, docs/strategies.md). */
    static const char *const order[] = {"greedy-size", "strip-bestfit", "greedy-breadth",
                                        "smartpool-bestfit", "smartpool-firstfit", "inorder"};
    mp_plan_t want = {0};
    for (size_t s = 0; s < sizeof order / sizeof order[0] && !(want.n && want.footprint == bd.offsets); s++) {
        mp_plan_t p;
        MP_CHECK_OK(mp_plan_compute(b, n, order[s], &p));
        if (!want.n || p.footprint < want.footprint) mp_plan_free(&want), want = p;
        else mp_plan_free(&p);
    }
    sequential_fits(b, n, bd.offsets, &want);
    for (int rep = 0; rep < 2; rep++) {
        mp_plan_t p;
        mp_auto_report_t r;
        MP_CHECK_OK(mp_plan_auto(b, n, &p, &r));
        MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
        MP_CHECK(same_plan(&p, &want));
        MP_CHECK(want.strategy && r.winner && !strcmp(r.winner, want.strategy));
        MP_CHECK(r.optimal == (want.footprint == bd.offsets) && r.lower_bound == bd.offsets);
        mp_plan_free(&p);
    }
    mp_plan_free(&want);
    free(b);
}

static void test_auto_threads(void) {
    auto_vs_sequential(MP_GEN_DNN, 40000, 99);
    for (uint64_t seed = 1; seed <= 2; seed++)
        for (int shape = 0; shape < MP_GEN_SHAPES; shape++)
            if (shape != MP_GEN_UNIFORM) /* quadratic at this size */
                auto_vs_sequential((mp_gen_shape)shape, 25000, seed);
}

int main(void) {
    test_auto_threads();
    test_edges();
    test_random();
    return mp_test_finish("test_strategies");
}
