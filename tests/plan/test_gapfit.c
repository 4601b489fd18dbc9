/* test_gapfit.c -- greedy-size, greedy-breadth, smartpool-bestfit and
 * smartpool-firstfit (src/offsets/gapfit.c and its users).
 *
 * Hand-made instances with offsets derived by hand, the fast forms against
 * the literal oracles (tests/oracle_gapfit.c) on random instances of every
 * shape, on DNN-shaped instances of 2000 buffers and on dense ones (hundreds
 * of buffers live at once), and determinism.  The placer has two indexes
 * (the interval tree plus a sort, and the gap index of gapindex.c); every
 * comparison runs with each forced and with the automatic choice. */
#include "harness.h"
#include "gen.h"
#include "oracle.h"

#include "core/internal.h"
#include "strategies/strategies.h"
#include "offsets/gapfit.h"

#include <stdlib.h>
#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define B(i, f, l, s) {.id = (i), .first = (f), .last = (l), .size = (s)}
#define BA(i, f, l, s, al) {.id = (i), .first = (f), .last = (l), .size = (s), .align = (al)}

typedef mp_status (*offsets_fn)(const mp_buffer_t *, size_t, uint64_t *);

static const struct {
    const char *name;
    offsets_fn fast, oracle;
} strat[] = {
    {"greedy-size", mp__offsets_greedy_size, oracle_greedy_size},
    {"greedy-breadth", mp__offsets_greedy_breadth, oracle_greedy_breadth},
    {"smartpool-bestfit", mp__offsets_smartpool_bestfit, oracle_smartpool_bestfit},
    {"smartpool-firstfit", mp__offsets_smartpool_firstfit, oracle_smartpool_firstfit},
};

/* Plans b with the public entry point (checker included) and compares every
 * offset and the footprint with what the comment above the call derived. */
static void expect(const mp_buffer_t *b, size_t n, const char *strategy, const uint64_t *want,
                   uint64_t want_footprint) {
    mp_plan_t p;
    uint64_t f = mp_test_plan(b, n, strategy, &p);
    if (!MP_CHECK(p.offset != NULL)) return;
    MP_CHECK_EQ_U64(f, want_footprint);
    for (size_t i = 0; i < n; i++)
        if (!MP_CHECK_EQ_U64(p.offset[i], want[i])) fprintf(stderr, "  %s buffer %zu\n", strategy, i);
    mp_plan_free(&p);
}

/* Chain a -> b -> c -> d: tensor i is made by op i and read by op i+1.
 *   a [0,1] 32, b [1,2] 64, c [2,3] 16, d [3,4] 48.
 * Breadths: t0 32, t1 a+b 96, t2 b+c 80, t3 c+d 64: lower bound 96.
 * greedy-size, order b d a c:
 *   b: nothing placed -> 0.  d: conflicts nothing (b ends at 2) -> 0.
 *   a: conflicts b [0,64): no room below 0 -> end of b = 64.
 *   c: conflicts b [0,64), d [0,48): no gap, highest end 64 -> 64.
 * smartpool (both fits), same order:
 *   b -> 0 (pool empty, extended).  d: hole [0,64) of the pool -> 0.
 *   a: conflicts b, the pool top is 64 = end of b, no hole -> 64.
 *   c: conflicts b, d; hole [64,96) between b's end and the top fits -> 64.
 * greedy-breadth, operators t1 (96), t2 (80), t3 (64), t0 (32):
 *   t1: b (64) -> 0, then a: conflicts b -> 64.
 *   t2: c: conflicts b [0,64) -> 64.
 *   t3: d: conflicts c [64,80): gap [0,64) fits -> 0.
 * Every plan: a 64, b 0, c 64, d 0, footprint 96 (optimal). */
static void test_chain(void) {
    mp_buffer_t b[] = {B(0, 0, 1, 32), B(1, 1, 2, 64), B(2, 2, 3, 16), B(3, 3, 4, 48)};
    uint64_t want[] = {64, 0, 64, 0};
    for (size_t s = 0; s < N_OF(strat); s++) expect(b, N_OF(b), strat[s].name, want, 96);
}

/* Residual block: op0 makes x, op1 conv(x) -> y1, op2 conv(y1) -> y2,
 * op3 add(x, y2) -> z, op4 reads z.
 *   x [0,3] 40, y1 [1,2] 24, y2 [2,3] 24, z [3,4] 40.
 * Breadths: t0 40, t1 64, t2 88, t3 x+y2+z 104: lower bound 104.
 * greedy-size, order x z y1 y2 (ties by index):
 *   x -> 0.  z: conflicts x [0,40) -> 40.  y1: conflicts x only -> 40.
 *   y2: conflicts x [0,40), y1 [40,64), z [40,80): no gap -> 80.
 * smartpool (both), same order:
 *   x -> 0; z: top is 40 = end of x -> 40 (top 80).
 *   y1: conflicts x; hole [40,80) up to the top fits 24 -> 40.
 *   y2: conflicts x, y1, z: highest end 80 = top -> 80.
 * greedy-breadth, operators t3 (104), t2, t1, t0:
 *   t3: x (40, idx 0) -> 0; z (40, idx 3): conflicts x -> 40;
 *       y2: conflicts x [0,40), z [40,80) -> 80.
 *   t2: y1: conflicts x [0,40), y2 [80,104): gap [40,80) fits -> 40.
 * Every plan: x 0, y1 40, y2 80, z 40, footprint 104 (optimal). */
static void test_residual(void) {
    mp_buffer_t b[] = {B(0, 0, 3, 40), B(1, 1, 2, 24), B(2, 2, 3, 24), B(3, 3, 4, 40)};
    uint64_t want[] = {0, 40, 80, 40};
    for (size_t s = 0; s < N_OF(strat); s++) expect(b, N_OF(b), strat[s].name, want, 104);
}

/* Branch and join: op0 makes a; op1 reads a, makes b; op2 reads a, makes c;
 * op3 reads b and c, makes d; op4 reads d.
 *   a [0,2] 32, b [1,3] 16, c [2,3] 16, d [3,4] 64.
 * Breadths: t0 32, t1 48, t2 a+b+c 64, t3 b+c+d 96: lower bound 96.
 * greedy-size, order d a b c:
 *   d -> 0.  a: no conflict (a ends at 2) -> 0.
 *   b: conflicts a [0,32), d [0,64): no gap -> 64.
 *   c: conflicts a [0,32), d [0,64), b [64,80): no gap -> 80.
 * greedy-breadth, operators t3 (96), t2 (64), t1, t0:
 *   t3: d -> 0; b (idx 1): conflicts d -> 64; c: conflicts d, b -> 80.
 *   t2: a: conflicts b [64,80), c [80,96): gap [0,64) fits -> 0.
 * smartpool (both), order d a b c:
 *   d -> 0 (top 64); a: hole [0,64) -> 0; b: conflicts a, d, highest
 *   end 64 = top -> 64 (top 80); c: conflicts a, d, b: end 80 = top -> 80.
 * Every plan: a 0, b 64, c 80, d 0, footprint 96 (optimal). */
static void test_branch_join(void) {
    mp_buffer_t b[] = {B(0, 0, 2, 32), B(1, 1, 3, 16), B(2, 2, 3, 16), B(3, 3, 4, 64)};
    uint64_t want[] = {0, 64, 80, 0};
    for (size_t s = 0; s < N_OF(strat); s++) expect(b, N_OF(b), strat[s].name, want, 96);
}

/* Where best fit and Alg. 3 part ways: the hole between the highest
 * conflicting block and the pool top counts for SmartPool only.
 *   Y [0,0] 130, W [1,1] 60, X [1,2] 40, T [2,2] 30, Z [1,2] 30.
 * Breadths: t0 130, t1 W+X+Z 130, t2 X+T+Z 100: lower bound 130.
 * Order for all three: Y W X T Z (T before Z by index).
 *   Y -> 0 (pool top 130).  W: conflicts nothing -> 0 (SmartPool: hole
 *   [0,130)).  X: conflicts W [0,60) -> 60 (SmartPool: hole [60,130)).
 *   T: conflicts X [60,100).
 *     greedy-size: the only gap is [0,60) -> 0.
 *     best fit: holes [0,60) (60) and [100,130) (30); smaller -> 100.
 *     first fit: lowest hole [0,60) -> 0.
 *   Z: conflicts W, X and T.
 *     greedy-size / first fit: W [0,60), T [0,30), X [60,100) -> 100.
 *     best fit: W [0,60), X [60,100), T [100,130): end 130 -> 130.
 * greedy-size and first fit: footprint 130 (optimal); best fit 160. */
static void test_best_fit_differs(void) {
    mp_buffer_t b[] = {B(0, 0, 0, 130), B(1, 1, 1, 60), B(2, 1, 2, 40), B(3, 2, 2, 30),
                       B(4, 1, 2, 30)};
    uint64_t gs[] = {0, 0, 60, 0, 100}, best[] = {0, 0, 60, 100, 130};
    expect(b, N_OF(b), "greedy-size", gs, 130);
    expect(b, N_OF(b), "smartpool-firstfit", gs, 130);
    expect(b, N_OF(b), "smartpool-bestfit", best, 160);
}

/* Alignment.  Normalized sizes: A 100, B 64, D 8 -> 32 (align 32),
 * C 16.  A [0,2], B [1,2] align 64, D [1,1] align 32, C [2,2] align 16.
 * Order A B D C.
 *   A -> 0.  B: conflicts A [0,100) -> up(100, 64) = 128.
 *   D: conflicts A [0,100), B [128,192): gap [100,128) starts at
 *      up(100, 32) = 128, no room -> up(192, 32) = 192.
 *      (SmartPool: same gap; top 192 = highest end, extend -> 192.)
 *   C: conflicts A, B (not D): gap [100,128), up(100, 16) = 112,
 *      112 + 16 = 128 fits -> 112.  (Best fit: hole [100,128) of 28
 *      beats the top hole [192,224) of 32; first fit takes it too.)
 * Plan: A 0, B 128, C 112, D 192, footprint 224 for all three. */
static void test_alignment(void) {
    mp_buffer_t b[] = {BA(0, 0, 2, 100, 1), BA(1, 1, 2, 64, 64), BA(2, 2, 2, 16, 16),
                       BA(3, 1, 1, 8, 32)};
    uint64_t want[] = {0, 128, 112, 192};
    expect(b, N_OF(b), "greedy-size", want, 224);
    expect(b, N_OF(b), "smartpool-bestfit", want, 224);
    expect(b, N_OF(b), "smartpool-firstfit", want, 224);
}

/* Empty and single-buffer problems: nothing to place, or one buffer at 0. */
static void test_tiny(void) {
    mp_buffer_t one[] = {BA(7, 5, 9, 3, 8)};
    uint64_t want[] = {0};
    for (size_t s = 0; s < N_OF(strat); s++) {
        uint64_t off = 1;
        MP_CHECK_OK(strat[s].fast(NULL, 0, &off));
        MP_CHECK_EQ_U64(off, 1);
        expect(one, 1, strat[s].name, want, 8);
    }
}

/* Fast form == oracle, byte for byte, on one normalized problem; the
 * oracle's plan goes through the checker.  With full set, also the public
 * entry point (checker, bounds) and determinism (a second run). */
static void compare(const mp_buffer_t *raw, size_t n, const char *what, uint64_t seed,
                    bool full) {
    mp_buffer_t *b;
    if (!MP_CHECK_OK(mp__normalize(raw, n, &b))) return;
    uint64_t *f = malloc(n * sizeof *f), *g = malloc(n * sizeof *g), *o = malloc(n * sizeof *o);
    for (size_t s = 0; s < N_OF(strat); s++) {
        bool ok = MP_CHECK_OK(strat[s].oracle(b, n, o));
        ok &= MP_CHECK(mp_test_check_offsets(raw, n, o));
        for (int mode = 0; mode <= 2; mode++) { /* automatic, tree, gap index */
            mp__gapfit_index = mode;
            bool same = MP_CHECK_OK(strat[s].fast(b, n, f));
            same &= MP_CHECK(memcmp(f, o, n * sizeof *f) == 0);
            if (!same) fprintf(stderr, "  index mode %d\n", mode);
            ok &= same;
        }
        mp__gapfit_index = 0;
        if (full) {
            ok &= MP_CHECK_OK(strat[s].fast(b, n, g));
            ok &= MP_CHECK(memcmp(f, g, n * sizeof *f) == 0);
            ok &= MP_CHECK(mp_test_plan(raw, n, strat[s].name, NULL) == mp__footprint(b, n, f));
        }
        if (!ok) fprintf(stderr, "  %s on %s n=%zu seed=%llu\n", strat[s].name, what, n,
                         (unsigned long long)seed);
    }
    free(f), free(g), free(o), free(b);
}

/* Every shape, n from 1 to 200; one instance in eight also goes through
 * the public entry point and is planned twice. */
static void test_random_shapes(int per_shape) {
    mp_buffer_t *b = malloc(200 * sizeof *b);
    for (int shape = 0; shape < MP_GEN_SHAPES; shape++)
        for (uint64_t seed = 1; seed <= (uint64_t)per_shape; seed++) {
            size_t n = 1 + (size_t)((seed * 37) % 200);
            mp_gen_problem(b, n, (mp_gen_shape)shape, seed);
            compare(b, n, mp_gen_shape_name[shape], seed, seed % 8 == 0);
        }
    free(b);
}

/* The case that matters for speed: DNN-shaped, 2000 buffers. */
static void test_random_dnn_large(int count) {
    enum { N = 2000 };
    mp_buffer_t *b = malloc(N * sizeof *b);
    for (int seed = 1; seed <= count; seed++) {
        mp_gen_problem(b, N, MP_GEN_DNN, 1000 + (uint64_t)seed);
        compare(b, N, "dnn-2000", 1000 + (uint64_t)seed, seed == 1);
    }
    free(b);
}

/* Dense: n buffers over about n/8 time steps, each live for up to the
 * whole run, so hundreds conflict with each buffer (the idealloc traces'
 * shape, where the automatic choice takes the gap index); sizes span
 * three orders of magnitude, some buffers are aligned, some lifetimes are
 * single steps and some times repeat, so gaps of every kind appear. */
static void test_random_dense(int count) {
    enum { NMAX = 800 };
    mp_buffer_t *b = malloc(NMAX * sizeof *b);
    for (int seed = 1; seed <= count; seed++) {
        uint64_t st = 0x9e3779b97f4a7c15ull * (uint64_t)seed;
        size_t n = 100 + (size_t)(mp_gen_next(&st) % (NMAX - 100));
        uint64_t steps = 2 + n / 8;
        for (size_t i = 0; i < n; i++) {
            uint64_t f = mp_gen_next(&st) % steps, r = mp_gen_next(&st);
            uint64_t len = r % 4 == 0 ? 0 : mp_gen_next(&st) % (steps - f);
            uint64_t size = 1 + mp_gen_next(&st) % (r % 3 == 0 ? 4096 : 64);
            uint64_t align = r % 7 == 0 ? 16 : r % 11 == 0 ? 256 : 0;
            b[i] = (mp_buffer_t){.id = i, .first = f, .last = f + len, .size = size, .align = align};
        }
        compare(b, n, "dense", (uint64_t)seed, seed % 8 == 0);
    }
    free(b);
}

/* Sanitized debug builds run everything ~20x slower (the four O(n^2)
 * oracles take ~0.5 s per 2000-buffer instance there), so they check a
 * sample for memory errors; the optimized build checks the full counts:
 * 7 x 300 random instances, 200 DNN instances of 2000 buffers and 300
 * dense ones. */
#ifdef MP_DEBUG
#define PER_SHAPE 150
#define DNN_LARGE 4
#define DENSE 20
#else
#define PER_SHAPE 300
#define DNN_LARGE 200
#define DENSE 300
#endif

int main(int argc, char **argv) {
    test_chain();
    test_residual();
    test_branch_join();
    test_best_fit_differs();
    test_alignment();
    test_tiny();
    test_random_shapes(PER_SHAPE);
    test_random_dnn_large(argc > 1 ? atoi(argv[1]) : DNN_LARGE);
    test_random_dense(DENSE);
    return mp_test_finish("gapfit");
}
