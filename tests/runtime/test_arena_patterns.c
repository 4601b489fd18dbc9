/* test_arena_patterns.c -- several iteration patterns (src/runtime/
 * arena_pattern.c, docs/arena.md "Several patterns"): random interleavings
 * of 2 to 5 patterns (two of them share their first two sizes, so the
 * choice waits for the third), learned and replayed; then deviations
 * (late frees, extra and missing requests, larger sizes) and a pattern
 * never seen before, which is forwarded and learned when it recurs; a
 * long pattern cut while unmatched, whose pieces must not be learned; a
 * long loop after short start-up patterns, learned by starting over.
 * Every block carries a canary and is checked against every live block;
 * every request is counted exactly once. */
#include "canary.h"
#include "harness.h"

#include <stdlib.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

#define MAXP 6
#define NREQ 12
static uint64_t hold[16];
static size_t nhold;

/* Size of request i of pattern k (pattern 1 starts like pattern 0). */
static uint64_t size_of(int k, int i) {
    int kk = k == 1 && i < 2 ? 0 : k;
    return 4096 * (uint64_t)(kk + 1) + 640 * (uint64_t)((i * 5 + kk) % 7);
}

/* One iteration of pattern k: a chain (each block freed two requests
 * later) with one block living to the end; all freed at the end.  dev:
 * inject deviations at random. */
static void iteration(mp_arena_t *a, int k, int dev) {
    uint64_t id[NREQ] = {0};
    int n = NREQ - (k % 3);
    for (int i = 0; i < n; i++) {
        uint64_t size = size_of(k, i);
        if (dev && rnd() % 20 == 0) size += 64 + rnd() % 2048;            /* larger */
        if (dev && i > 2 && rnd() % 30 == 0) continue;                    /* missing */
        id[i] = mp_canary_take(a, size, NULL);
        if (dev && rnd() % 20 == 0) {                                     /* extra */
            uint64_t x = mp_canary_take(a, 1024 + rnd() % 9000, NULL);
            if (nhold < 16 && rnd() % 2) hold[nhold++] = x;
            else mp_canary_give(a, x);
        }
        if (i >= 2 && i - 2 != 1 && id[i - 2]) {
            if (dev && nhold < 16 && rnd() % 25 == 0) hold[nhold++] = id[i - 2];   /* late */
            else mp_canary_give(a, id[i - 2]);
            id[i - 2] = 0;
        }
    }
    for (int i = 0; i < n; i++)
        if (id[i]) mp_canary_give(a, id[i]);
    if (!dev || rnd() % 2)   /* late blocks go at the end of a later iteration */
        while (nhold) mp_canary_give(a, hold[--nhold]);
}

static void test_mix(int np) {
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return;
    uint64_t w1 = mp_canary_take(a, 100000, NULL), w2 = mp_canary_take(a, 7000, NULL);
    int prev = -1, same = 0;
    for (int it = 0; it < 60; it++) {   /* random order, never three alike in a row */
        int k = (int)(rnd() % (uint64_t)np);
        same = k == prev ? same + 1 : 0;
        if (same == 2) k = (k + 1) % np, same = 0;
        prev = k;
        iteration(a, k, 0);
    }
    mp_arena_stats_t st, st0;
    mp_arena_stats(a, &st0);
    MP_CHECK_EQ_U64(st0.state, MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st0.patterns, np);
    for (int it = 0; it < 100; it++) iteration(a, (int)(rnd() % (uint64_t)np), 0);
    mp_arena_stats(a, &st);
    /* clean iterations: everything from the region but the two requests
     * pattern 0 and 1 need to tell each other apart */
    uint64_t reqs = st.requests - st0.requests, served = st.served_arena - st0.served_arena;
    MP_CHECK(served + 2 * 100 >= reqs);
    MP_CHECK(served * 10 >= reqs * 8);
    MP_CHECK_EQ_U64(st.fb_overlap - st0.fb_overlap, 0);
    mp_canary_check_counts(a);
    /* deviations, and a new pattern np that recurs */
    for (int it = 0; it < 300; it++) {
        int k = (int)(rnd() % (uint64_t)(np + 1));
        iteration(a, k, it % 3 == 0);
        mp_canary_check_counts(a);
    }
    while (nhold) mp_canary_give(a, hold[--nhold]);
    mp_arena_stats(a, &st);
    /* the new pattern is learned (a deviation that happened twice may be too) */
    MP_CHECK(st.patterns >= (size_t)np + 1 && st.patterns <= 16);
    MP_CHECK(st.fb_unmatched > 0);
    uint64_t s1 = st.served_arena, r1 = st.requests;
    for (int it = 0; it < 50; it++) iteration(a, (int)(rnd() % (uint64_t)(np + 1)), 0);
    mp_arena_stats(a, &st);
    MP_CHECK((st.served_arena - s1) * 10 >= (st.requests - r1) * 7);   /* back in step */
    mp_canary_give(a, w1);
    mp_canary_give(a, w2);
    mp_canary_check_counts(a);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
}

/* max_patterns = 1: the same stream never replays. */
static void test_off(void) {
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    o.max_patterns = 1;
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(&o, &a))) return;
    for (int it = 0; it < 60; it++) iteration(a, it % 3 == 2 ? 2 : it % 2, 0);
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK(st.state != MP_ARENA_REPLAYING || st.patterns <= 1);
    MP_CHECK_EQ_U64(st.fb_unmatched, 0);
    mp_canary_check_counts(a);
    mp_arena_destroy(a, NULL);
}

/* A long pattern like a transformer request: LONG requests in a chain,
 * with a temporary block taken and given back after every fourth (a
 * request that is all freed at once, inside the iteration). */
#define LONG 200
static void long_iteration(mp_arena_t *a) {
    uint64_t id[LONG] = {0};
    for (int i = 0; i < LONG; i++) {
        id[i] = mp_canary_take(a, 8192 + 64 * (uint64_t)(i * 37 % 199), NULL);   /* no period inside */
        if (i % 4 == 3) mp_canary_give(a, mp_canary_take(a, 20000 + 64 * (uint64_t)(i * 11 % 197), NULL));
        if (i >= 2) mp_canary_give(a, id[i - 2]), id[i - 2] = 0;
    }
    mp_canary_give(a, id[LONG - 2]);
    mp_canary_give(a, id[LONG - 1]);
}

/* The long pattern is seen once while learning (a candidate), then recurs
 * among short ones.  Its second and third occurrences are unmatched and
 * longer than twice the short plans: cut there, the iterations that
 * followed began inside it, and their pieces (a temporary block taken and
 * given back) must not become patterns of their own.  It is learned and
 * replayed; no other pattern appears. */
static void test_long(void) {
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return;
    uint64_t w = mp_canary_take(a, 100000, NULL);
    static const int order[] = {0, 1, 0, 2, 1, 0, 1, 2, 0, 2, 1, 1, 0, 2, 0, 1, 2, 2, 0, 1};
    for (int r = 0; r < 3; r++)
        for (size_t it = 0; it < sizeof order / sizeof *order; it++) {
            if (order[it] == 2) long_iteration(a);
            else iteration(a, order[it], 0);
            mp_canary_check_counts(a);
        }
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st.patterns, 3);
    uint64_t s0 = st.served_arena, r0 = st.requests;
    long_iteration(a);
    mp_arena_stats(a, &st);
    uint64_t reqs = st.requests - r0;
    MP_CHECK_EQ_U64(reqs, LONG + LONG / 4);
    MP_CHECK(st.served_arena - s0 + 2 >= reqs);   /* all but the undecided first ones */
    mp_canary_give(a, w);
    mp_canary_check_counts(a);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
}

/* A training step: its input lives through the whole step and is freed
 * last, after a chain of STEP requests (each freed two requests later). */
#define STEP 150
static void step_iteration(mp_arena_t *a) {
    uint64_t in = mp_canary_take(a, 300000, NULL), id[STEP] = {0};
    for (int i = 0; i < STEP; i++) {
        id[i] = mp_canary_take(a, 8192 + 64 * (uint64_t)(i * 37 % 199), NULL);
        if (i >= 2) mp_canary_give(a, id[i - 2]), id[i - 2] = 0;
    }
    mp_canary_give(a, id[STEP - 2]);
    mp_canary_give(a, id[STEP - 1]);
    mp_canary_give(a, in);
}

/* Short patterns first (a program's start-up), then only training steps,
 * never seen while learning.  Each step is unmatched and cut at twice the
 * short plans' length; what follows the cut began inside it and its input
 * is still live when it ends, so nothing is ever learned from the steps.
 * After relearn_after cuts in a row the arena drops the short plans and
 * learns from scratch: the steps are replayed.  With relearn_after 0 they
 * never are (what happened before the start-over existed). */
static void test_startup(size_t relearn_after) {
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    o.relearn_after = relearn_after;
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(&o, &a))) return;
    static const int order[] = {0, 1, 0, 2, 1, 0, 1, 2, 0, 2, 1, 1, 0, 2, 0, 1, 2, 2, 0, 1};
    for (size_t it = 0; it < sizeof order / sizeof *order; it++) iteration(a, order[it], 0);
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st.patterns, 3);
    for (int it = 0; it < 30; it++) {
        step_iteration(a);
        mp_canary_check_counts(a);
    }
    mp_arena_stats(a, &st);
    uint64_t s0 = st.served_arena, r0 = st.requests;
    for (int it = 0; it < 3; it++) step_iteration(a);
    mp_arena_stats(a, &st);
    uint64_t served = st.served_arena - s0, reqs = st.requests - r0;
    MP_CHECK_EQ_U64(reqs, 3 * (STEP + 1));
    if (relearn_after) {
        MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
        MP_CHECK(st.relearns >= 1);
        MP_CHECK(served + 3 >= reqs);   /* the period may start mid-step: one cross block a step */
    } else {
        MP_CHECK_EQ_U64(served, 0);
        MP_CHECK_EQ_U64(st.relearns, 0);
    }
    mp_canary_check_counts(a);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
}

int main(void) {
    for (int np = 2; np <= 5; np++) test_mix(np);
    test_off();
    test_long();
    test_startup(4);
    test_startup(0);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
    return mp_test_finish("arena_patterns");
}
