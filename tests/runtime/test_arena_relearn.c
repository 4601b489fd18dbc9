/* test_arena_relearn.c -- the replay arena's return to learning
 * (docs/arena.md, "Returning to learning"): a program that replays loop A
 * and then switches to a different loop B relearns once and replays B from
 * a new plan, with canaries and an overlap check on every block, and with
 * blocks of A still live at the switch freed correctly afterwards; stray
 * fallbacks never relearn; relearn_after = 0 never relearns. */
#include "canary.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>


/* ---- the two loops ----------------------------------------------------------- */

/* Loop A, 6 requests: a carry block that lives into the next iteration
 * (a cross slot), then five temporaries each freed before the next one is
 * taken (so the plan puts all five at one offset).  keep: the temporaries
 * stay live to the end of the iteration (a deviation: overlaps); big: the
 * third temporary's size instead of 2048 (larger: a too-large fallback). */
static uint64_t carry;
static void loop_a(mp_arena_t *a, int keep, uint64_t big) {
    static const uint64_t sz[5] = {4096, 8192, 2048, 16384, 1024};
    uint64_t c = mp_canary_take(a, 512, NULL), t[5];
    if (carry) mp_canary_give(a, carry);
    carry = c;
    for (int i = 0; i < 5; i++) {
        t[i] = mp_canary_take(a, i == 2 && big ? big : sz[i], NULL);
        if (!keep) mp_canary_give(a, t[i]);
    }
    if (keep)
        for (int i = 0; i < 5; i++) mp_canary_give(a, t[i]);
}

/* Loop B, NB requests, all live together and freed at the end: against
 * A's plan (one offset for five slots) at most one per A-iteration fits. */
#define NB 13
static void loop_b(mp_arena_t *a) {
    uint64_t t[NB];
    for (int i = 0; i < NB; i++) t[i] = mp_canary_take(a, 3000 + 1000 * (uint64_t)((i * 5) % NB), NULL);
    for (int i = NB - 1; i >= 0; i--) mp_canary_give(a, t[i]);
}

static uint64_t misses(const mp_arena_stats_t *s) {
    return s->fb_unforeseen + s->fb_overlap + s->fb_too_large;
}

static uint64_t total(const mp_arena_stats_t *s) {
    return s->served_learning + s->served_arena + s->fb_interrupted + s->fb_unforeseen +
           s->fb_overlap + s->fb_too_large + s->fb_cross + s->fb_small + s->fb_passthrough + s->fb_unmatched;
}

static mp_arena_t *make(size_t relearn_after) {
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    o.relearn_after = relearn_after;
    mp_arena_t *a = NULL;
    MP_CHECK_OK(mp_arena_create(&o, &a));
    mp_canary_forget();
    carry = 0;
    return a;
}

/* Replays A, switches to B in the middle of an A iteration (two of A's
 * temporaries live at the switch), runs B for 40 iterations. */
static void test_switch(size_t relearn_after) {
    mp_arena_t *a = make(relearn_after);
    if (!a) return;
    mp_arena_stats_t st;
    for (int it = 0; it < 10; it++) loop_a(a, 0, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st.iteration_length, 6);
    MP_CHECK_EQ_U64(st.relearns, 0);
    /* half an iteration of A whose blocks stay live across the switch */
    uint64_t c = mp_canary_take(a, 512, NULL), h1 = mp_canary_take(a, 4096, NULL), h2;
    mp_canary_give(a, carry);
    carry = c;
    h2 = mp_canary_take(a, 8192, NULL);
    mp_canary_give(a, h1);
    h1 = mp_canary_take(a, 2048, NULL);
    mp_arena_stats(a, &st);
    uint64_t served_switch = st.served_arena;
    MP_CHECK(served_switch > 0);
    for (int it = 0; it < 40; it++) loop_b(a);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    if (relearn_after == 0) {
        MP_CHECK_EQ_U64(st.relearns, 0);
        MP_CHECK_EQ_U64(st.iteration_length, 6);
        /* the old plan stays and mostly falls back */
        MP_CHECK(misses(&st) > 40 * NB / 2);
    } else {
        MP_CHECK_EQ_U64(st.relearns, 1);
        MP_CHECK_EQ_U64(st.iteration_length, NB);
        /* A's blocks live at the switch keep A's region alive, retired */
        MP_CHECK(st.retired_regions >= 1);
        /* a plan of B: every later request is served or a cross slot,
         * and every non-cross slot is served in each iteration */
        MP_CHECK_EQ_U64(st.planned_blocks + st.cross_blocks, NB);
        MP_CHECK(st.planned_blocks >= 1);
        mp_arena_stats_t s0 = st;
        for (int it = 0; it < 10; it++) loop_b(a);
        mp_arena_stats(a, &st);
        MP_CHECK_EQ_U64(misses(&st), misses(&s0));
        MP_CHECK_EQ_U64(st.served_arena - s0.served_arena, 10 * st.planned_blocks);
        MP_CHECK_EQ_U64(st.served_arena - s0.served_arena + st.fb_cross - s0.fb_cross, 10 * NB);
        MP_CHECK(st.served_arena > served_switch + 10 * st.planned_blocks - 1);
        MP_CHECK_EQ_U64(st.relearns, 1);
    }
    /* A's blocks from before the switch: their canaries are intact and
     * they free (a retired region is released with its last block) */
    mp_canary_give(a, h1);
    mp_canary_give(a, h2);
    mp_canary_give(a, carry);
    carry = 0;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.retired_regions, 0);
    MP_CHECK_EQ_U64(st.live_blocks, 0);
    MP_CHECK_EQ_U64(st.requests, total(&st));
    MP_CHECK_EQ_U64(st.frees, st.requests);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
    MP_CHECK_EQ_U64(st.backing_bytes, 0);
}

/* Stray fallbacks: a deviation in every third iteration, and two whole
 * iterations mostly falling back (at most 12 requests: at most three
 * windows of 6 touched, fewer than relearn_after = 4). */
static void test_stray(void) {
    mp_arena_t *a = make(4);
    if (!a) return;
    mp_arena_stats_t st, s0;
    for (int it = 0; it < 10; it++) loop_a(a, 0, 0);
    mp_arena_stats(a, &s0);
    MP_CHECK_EQ_U64(s0.state, MP_ARENA_REPLAYING);
    for (int it = 0; it < 60; it++) {
        if (it == 30 || it == 31) {
            loop_a(a, 1, 0);
        } else if (it % 3 == 0) {   /* one request larger than ever: one fallback */
            loop_a(a, 0, 2048 + 64 * (uint64_t)(it + 1));
        } else {
            loop_a(a, 0, 0);
        }
    }
    mp_canary_give(a, carry);
    carry = 0;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.relearns, 0);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK(misses(&st) > misses(&s0));          /* the deviations happened */
    MP_CHECK(st.served_arena - s0.served_arena > 60 * 5 / 2);
    MP_CHECK_EQ_U64(st.requests, total(&st));
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
}

int main(void) {
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    MP_CHECK_EQ_U64(o.relearn_after, 4);   /* the documented default */
    test_switch(4);
    test_switch(1);
    test_switch(0);
    test_stray();
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
    return mp_test_finish("arena_relearn");
}
