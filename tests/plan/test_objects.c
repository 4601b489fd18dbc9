/* test_objects.c -- the five shared-object strategies against hand-derived
 * answers, their literal oracles, the objects lower bound and themselves.
 *
 *   greedy-size, greedy-size-improved, greedy-breadth, inorder: the fast
 *     form equals the oracle object for object on random instances;
 *   mincostflow: same flow cost as an independent Bellman-Ford solver of
 *     the same network (equal-cost optima may differ, see oracle_objects.c);
 *   every plan passes the checker and sums to >= the objects bound;
 *   two runs give the same answer. */
#include "core/internal.h"
#include "strategies/strategies.h"
#include "gen.h"
#include "objects/objset.h"
#include "harness.h"
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

typedef mp_status (*objfn)(const mp_buffer_t *, size_t, size_t *, size_t *);

static const struct {
    const char *name; /* registry name */
    objfn fast, oracle;
} S[] = {
    {"objects-greedy-size", mp__objects_greedy_size, oracle_objects_greedy_size},
    {"objects-greedy-size-improved", mp__objects_greedy_size_improved,
     oracle_objects_greedy_size_improved},
    {"objects-greedy-breadth", mp__objects_greedy_breadth, oracle_objects_greedy_breadth},
    {"objects-inorder", mp__objects_inorder, oracle_objects_inorder},
    {"objects-mincostflow", mp__objects_mincostflow, oracle_objects_mincostflow},
};
enum { NS = sizeof S / sizeof S[0], MCF = 4 };

/* Checks an assignment of a normalized problem (numbers 0..k-1 all used,
 * checker-valid plan) and returns the total object size, 0 on failure. */
static uint64_t check_assignment(const mp_buffer_t *b, size_t n, const size_t *obj, size_t k) {
    size_t *used = calloc(k + 1, sizeof *used), *copy = malloc((n + 1) * sizeof *copy);
    bool ok = MP_CHECK(used && copy);
    for (size_t i = 0; ok && i < n; i++) {
        ok &= MP_CHECK(obj[i] < k);
        if (ok) used[obj[i]]++;
    }
    for (size_t o = 0; ok && o < k; o++) ok &= MP_CHECK(used[o] > 0);
    free(used);
    if (!ok) {
        free(copy);
        return 0;
    }
    memcpy(copy, obj, n * sizeof *copy);
    mp_plan_t p;
    if (!MP_CHECK_OK(mp__plan_from_objects(b, n, copy, k, &p))) return 0;
    uint64_t total = 0;
    for (size_t o = 0; o < k; o++) total += p.object_size[o];
    if (!MP_CHECK_OK(mp_plan_check(b, n, &p, NULL))) total = 0;
    mp_plan_free(&p);
    return total;
}

/* The min-cost-flow objective of an assignment: each object costs the size
 * of its first buffer plus every size increase along its members in time. */
static uint64_t flow_cost(const mp_buffer_t *b, size_t n, const size_t *obj, size_t k) {
    uint64_t total = 0;
    for (size_t o = 0; o < k; o++) {
        size_t prev = (size_t)-1;
        for (;;) { /* next member of o after prev in time */
            size_t nx = (size_t)-1;
            for (size_t i = 0; i < n; i++)
                if (obj[i] == o && (prev == (size_t)-1 || b[i].first > b[prev].last) &&
                    (nx == (size_t)-1 || b[i].first < b[nx].first))
                    nx = i;
            if (nx == (size_t)-1) break;
            if (prev == (size_t)-1) total += b[nx].size;
            else if (b[nx].size > b[prev].size) total += b[nx].size - b[prev].size;
            prev = nx;
        }
    }
    return total;
}

/* Runs strategy s on a hand-made problem (already normalized: align 1) and
 * compares with the expected objects and total size. */
static void expect(int s, const mp_buffer_t *b, size_t n, const size_t *want, size_t want_k,
                   uint64_t want_total) {
    size_t obj[16], k = 0;
    if (!MP_CHECK_OK(S[s].fast(b, n, obj, &k))) return;
    bool ok = MP_CHECK_EQ_U64(k, want_k);
    for (size_t i = 0; ok && i < n; i++) ok &= MP_CHECK_EQ_U64(obj[i], want[i]);
    ok &= MP_CHECK_EQ_U64(check_assignment(b, n, obj, k), want_total);
    if (!ok) fprintf(stderr, "  strategy %s\n", S[s].name);
    size_t o2[16], k2 = 0; /* the oracle agrees on hand instances too */
    if (MP_CHECK_OK(S[s].oracle(b, n, o2, &k2)))
        MP_CHECK_EQ_U64(check_assignment(b, n, o2, k2), want_total);
}

#define B(id, f, l, sz) {id, f, l, sz, 1}

static void test_hand(void) {
    /* Chain: t0 [0,1] 4, t1 [1,2] 8, t2 [2,3] 2, t3 [3,4] 6; neighbours
     * conflict.  Sorted profiles [4], [8,4], [8,2], [6,2]: PM = 8, 4, so
     * the bound is 12.
     * greedy-size (t1,t3,t0,t2): t1 -> 0; t3 fits 0; t0 meets t1 -> 1;
     *   t2 meets 0's t1 and t3, fits 1.
     * greedy-breadth: breadths 4,12,10,8; op 1 gives t1 -> 0, t0 -> 1; op 2
     *   t2: only 1 (4 >= 2) is free -> 1; op 3 t3: only 0 (8 >= 6) -> 0.
     * improved: stages {8}: t1 -> 0; (4,8): t3 -> 0 (gap 0); {4}: t0 meets
     *   0 -> 1; below 4: t2 -> 1 (gap 0).
     * inorder: t0 -> 0 (4); t1 -> 1 (8); at 2 t0 frees 0, t2 takes it; at 3
     *   t1 frees 1 (8 >= 6), t3 takes it.
     * mincostflow: reuse edges L0->R2 (0), L0->R3 (2), L1->R3 (0); t0, t1
     *   are new (4 + 8); t2 <- L0, t3 <- L1 cost 0: 12, the only optimum.
     *   Chains t0,t2 and t1,t3 numbered by head.
     * All: objects 8 and 4, total 12 = bound. */
    const mp_buffer_t chain[] = {B(0, 0, 1, 4), B(1, 1, 2, 8), B(2, 2, 3, 2), B(3, 3, 4, 6)};
    const size_t c_size[] = {1, 0, 1, 0}, c_in[] = {0, 1, 0, 1};
    expect(0, chain, 4, c_size, 2, 12);
    expect(1, chain, 4, c_size, 2, 12);
    expect(2, chain, 4, c_size, 2, 12);
    expect(3, chain, 4, c_in, 2, 12);
    expect(4, chain, 4, c_in, 2, 12);

    /* Residual block: x [0,3] 8 feeds conv a [1,2] 16 -> conv c [2,3] 8 and
     * the add y [3,4] 8.  Only a and y do not meet (and none with x).
     * Profiles [8], [16,8], [16,8,8], [8,8,8]: PM = 16, 8, 8, bound 32.
     * greedy-size (a,x,c,y): a -> 0, x -> 1, c -> 2, y: 2 and 1 meet it,
     *   0 (a) fits -> 0.
     * greedy-breadth: breadths 8,24,32,24; op 2: a -> 0, x -> 1, c -> 2;
     *   op 3: y fits only 0 -> 0.
     * improved: stage {16}: a -> 0; stage {8}: y fits 0 with gap 0 -> 0;
     *   x, c fit nothing: x (lower index) -> 1, then c -> 2.
     * inorder: x -> 0, a -> 1, c -> 2; at 3 a frees 1 (16 <= 8*16), y -> 1.
     * mincostflow: only edge L_a -> R_y (cost 0): x, a, c new, y after a.
     * All: objects 16, 8, 8: 32 = bound. */
    const mp_buffer_t res[] = {B(0, 0, 3, 8), B(1, 1, 2, 16), B(2, 2, 3, 8), B(3, 3, 4, 8)};
    const size_t r_size[] = {1, 0, 2, 0}, r_in[] = {0, 1, 2, 1};
    expect(0, res, 4, r_size, 3, 32);
    expect(1, res, 4, r_size, 3, 32);
    expect(2, res, 4, r_size, 3, 32);
    expect(3, res, 4, r_in, 3, 32);
    expect(4, res, 4, r_in, 3, 32);

    /* Branch and join: in [0,2] 10 feeds branch A [1,3] 6 and branch B
     * [2,3] 4, joined into out [3,4] 12, read by next [4,5] 10.
     * Profiles [10], [10,6], [10,6,4], [12,6,4], [12,10]: PM = 12, 10, 4,
     * bound 26.
     * greedy-size (out,in,next,A,B): out -> 0; in fits 0; next meets out ->
     *   1; A: newest 1 (next) fits -> 1; B meets all -> 2.
     * greedy-breadth: breadths 10,16,20,22,22; op 3 (earlier of the 22s):
     *   out -> 0, A -> 1, B -> 2; op 4: next fits 1 (6) and 2 (4), none
     *   >= 10, so the largest, 1, grows to 10; op 2: in fits 0 (12) -> 0.
     * improved: {12}: out -> 0; {10}: in fits 0 (gap 0), next meets -> 1;
     *   (4,10): A fits 1 (gap 0); {4}: B meets all -> 2.
     * inorder: in -> 0, A -> 1, B -> 2; at 3 in frees 0 (10 >= 12/16),
     *   out grows it; at 4 A, B free 1 (6) and 2 (4): next takes the
     *   largest below 10, 1.
     * mincostflow: in, A, B new (20); out <- L_in (2) and next <- L_A (4)
     *   is the unique optimum (26; out new costs 12, next <- L_B costs 6).
     * All: objects {out,in} 12, {A,next} 10, {B} 4: 26 = bound. */
    const mp_buffer_t bj[] = {B(0, 0, 2, 10), B(1, 1, 3, 6), B(2, 2, 3, 4), B(3, 3, 4, 12),
                              B(4, 4, 5, 10)};
    const size_t bj_size[] = {0, 1, 2, 0, 1};
    for (int s = 0; s < NS; s++) expect(s, bj, 5, bj_size, 3, 26);

    /* All sizes 8: b0 [0,1], b1 [0,4], b2 [5,9], b3 [2,3]; b1 meets b0 and
     * b3.  greedy-size (index order): b0 -> 0, b1 -> 1, b2: newest 1 fits
     * -> 1, b3 fits only 0.  improved (one stage): b0 opens 0; gaps to 0:
     * b3 0, b2 3 -> b3; then b2 gap 1 -> 0; b1 opens 1. */
    const mp_buffer_t eq[] = {B(0, 0, 1, 8), B(1, 0, 4, 8), B(2, 5, 9, 8), B(3, 2, 3, 8)};
    const size_t eq_size[] = {0, 1, 1, 0}, eq_imp[] = {0, 1, 0, 0};
    expect(0, eq, 4, eq_size, 2, 16);
    expect(1, eq, 4, eq_imp, 2, 16);

    /* MXNet's size window [need/16, need*16]: a freed 32 is too big for a
     * 1 (new object: 33); a freed 1 is too small to grow to 32 (33), a
     * freed 2 is not (2 >= 32/16: grows, 32). */
    const mp_buffer_t w1[] = {B(0, 0, 0, 32), B(1, 1, 1, 1)};
    const mp_buffer_t w2[] = {B(0, 0, 0, 1), B(1, 1, 1, 32)};
    const mp_buffer_t w3[] = {B(0, 0, 0, 2), B(1, 1, 1, 32)};
    const size_t two[] = {0, 1}, one[] = {0, 0};
    expect(3, w1, 2, two, 2, 33);
    expect(3, w2, 2, two, 2, 33);
    expect(3, w3, 2, one, 1, 32);

    /* Degenerate sizes: nothing, and one buffer (one object). */
    for (int s = 0; s < NS; s++) {
        size_t obj[1] = {7}, k = 9;
        MP_CHECK_OK(S[s].fast(chain, 0, obj, &k));
        MP_CHECK_EQ_U64(k, 0);
        const size_t z[] = {0};
        expect(s, chain, 1, z, 1, 4);
    }
}

/* One random instance: every strategy against its oracle, the bound and a
 * second run; with api, also through mp_plan_compute on the raw input. */
static void one_random(const mp_buffer_t *raw, size_t n, bool with_mcf, bool api) {
    mp_buffer_t *b;
    mp_bounds_t bd;
    if (!MP_CHECK_OK(mp__normalize(raw, n, &b))) return;
    MP_CHECK_OK(mp_bounds_compute(raw, n, &bd));
    size_t *f = malloc(n * sizeof *f), *f2 = malloc(n * sizeof *f2), *o = malloc(n * sizeof *o);
    for (int s = 0; s < NS && f && f2 && o; s++) {
        if (s == MCF && !with_mcf) continue;
        size_t kf = 0, kf2 = 0, ko = 0;
        if (!MP_CHECK_OK(S[s].fast(b, n, f, &kf)) || !MP_CHECK_OK(S[s].oracle(b, n, o, &ko)))
            continue;
        bool ok = MP_CHECK(check_assignment(b, n, f, kf) >= bd.objects);
        bool same = kf == ko && memcmp(f, o, n * sizeof *f) == 0;
        if (s == MCF || !same) /* an identical oracle plan was just checked */
            ok &= MP_CHECK(check_assignment(b, n, o, ko) >= bd.objects);
        if (s == MCF) ok &= MP_CHECK_EQ_U64(flow_cost(b, n, f, kf), flow_cost(b, n, o, ko));
        else ok &= MP_CHECK(same);
        MP_CHECK_OK(S[s].fast(b, n, f2, &kf2)); /* determinism */
        ok &= MP_CHECK(kf2 == kf && memcmp(f, f2, n * sizeof *f) == 0);
        if (api) ok &= MP_CHECK(mp_test_plan(raw, n, S[s].name, NULL) > 0);
        if (!ok) fprintf(stderr, "  %s n=%zu\n", S[s].name, n);
    }
    free(f), free(f2), free(o), free(b);
}

static void test_random(void) {
    mp_buffer_t b[200];
    uint64_t rng = 12345;
    for (int iter = 0; iter < 1200; iter++) {
        mp_gen_shape shape = (mp_gen_shape)(iter % MP_GEN_SHAPES);
        /* mostly small (the oracles are cubic), one in 40 up to 200 */
        size_t n = iter % 40 == 39 ? 1 + mp_gen_next(&rng) % 200 : 1 + mp_gen_next(&rng) % 40;
        mp_gen_problem(b, n, shape, (uint64_t)iter + 1);
        one_random(b, n, n <= 60 && iter % 3 == 0, iter % 4 == 0);
    }
}

/* Many buffers sharing few sizes and start times: exercises ties. */
static void test_ties(void) {
    mp_buffer_t b[48];
    uint64_t rng = 777;
    for (int iter = 0; iter < 400; iter++) {
        size_t n = 1 + mp_gen_next(&rng) % 48;
        for (size_t i = 0; i < n; i++) {
            uint64_t f = mp_gen_next(&rng) % 6;
            b[i] = (mp_buffer_t){i, f, f + mp_gen_next(&rng) % 3, 1 + mp_gen_next(&rng) % 3, 0};
        }
        one_random(b, n, iter % 2 == 0, iter % 4 == 0);
    }
}

/* mp__conf keeps bit sets of busy objects until they pass a memory budget,
 * then uses the interval index.  Budget 0 forces the index from the
 * start; small budgets switch in the middle of a run (once more than 64
 * or 128 objects exist).  The answer must not change. */
static void test_conf_modes(void) {
    mp_buffer_t raw[200];
    size_t saved = mp__conf_budget_words, f[200], o[200], kf, ko;
    const size_t budgets[] = {0, 150, 400};
    for (int iter = 0; iter < 240; iter++) {
        size_t n = 20 + (size_t)iter % 180;
        mp_gen_problem(raw, n, iter % 2 ? MP_GEN_UNIFORM : MP_GEN_LONGLIVED, (uint64_t)iter + 99);
        mp_buffer_t *b;
        if (!MP_CHECK_OK(mp__normalize(raw, n, &b))) continue;
        for (int s = 0; s < 3; s += 2) { /* greedy-size, greedy-breadth */
            mp__conf_budget_words = budgets[iter % 3];
            bool ok = MP_CHECK_OK(S[s].fast(b, n, f, &kf));
            mp__conf_budget_words = saved;
            ok &= MP_CHECK_OK(S[s].oracle(b, n, o, &ko));
            ok &= MP_CHECK(kf == ko && memcmp(f, o, n * sizeof *f) == 0);
            if (!ok) fprintf(stderr, "  %s n=%zu budget %zu\n", S[s].name, n, budgets[iter % 3]);
        }
        free(b);
    }
    mp__conf_budget_words = saved;
}

int main(void) {
    test_hand();
    test_random();
    test_ties();
    test_conf_modes();
    return mp_test_finish("objects");
}
