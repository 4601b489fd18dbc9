/* test_arena_fast.c -- the replay arena's O(1) path (src/runtime/arena.c,
 * arena_plan.c): a loop with random deviations served through the
 * conflict masks, through the live-slot scan that replaces them when
 * there are too many pairs, and through the preload's entry points; a
 * loop wider than the dense masks with frees in shuffled order; a re-plan that keeps the region while blocks
 * of the old layout are live (the stale list); the owner thread's
 * lock-free path handed over to the mutex when a second thread calls.
 * Every block carries a canary and is checked against every live block. */
#include "canary.h"
#include "harness.h"
#include "runtime/arena_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* One iteration of a loop of 24 blocks with fixed lifetimes (the first
 * 8 live to the end, the others are freed two requests later); dev
 * injects deviations: late frees, extra requests, larger sizes, a missing
 * request.  held[] keeps the late blocks until the next iteration. */
#define NB 24
static uint64_t held[8];
static size_t nheld;

static void iteration(mp_arena_t *a, int dev) {
    uint64_t id[NB] = {0};
    for (size_t k = 0; k < nheld; k++) mp_canary_give(a, held[k]);
    nheld = 0;
    for (int i = 0; i < NB; i++) {
        uint64_t size = 1024 + 320 * (uint64_t)((i * 7) % 11);
        if (dev && rnd() % 16 == 0) size += 1 + rnd() % 4096;            /* larger */
        if (dev && rnd() % 32 == 0) continue;                             /* missing */
        id[i] = mp_canary_take(a, size, NULL);
        if (dev && rnd() % 16 == 0) {                                     /* extra */
            uint64_t x = mp_canary_take(a, 512 + rnd() % 8192, NULL);
            if (rnd() % 2 && nheld < 8) held[nheld++] = x;
            else mp_canary_give(a, x);
        }
        if (i >= 10 && id[i - 2]) {
            if (dev && rnd() % 16 == 0 && nheld < 8) held[nheld++] = id[i - 2];   /* late */
            else mp_canary_give(a, id[i - 2]);
            id[i - 2] = 0;
        }
    }
    for (int i = 0; i < NB; i++)
        if (id[i]) {
            if (dev && rnd() % 24 == 0 && nheld < 8) held[nheld++] = id[i];
            else mp_canary_give(a, id[i]);
        }
}

/* The loop, then 200 iterations with deviations; pairs: the conflict
 * list limit (0: always the live-list scan). */
static void test_deviations(size_t pairs) {
    size_t keep = mp__arena_max_pairs;
    mp__arena_max_pairs = pairs;
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return;
    for (int it = 0; it < 6; it++) iteration(a, 0);
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    uint64_t served = st.served_arena;
    iteration(a, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.served_arena - served, NB);   /* a clean iteration: all from the region */
    for (int it = 0; it < 200; it++) {
        iteration(a, 1);
        if (it % 10 == 9) mp_arena_mark_iteration(a);
        mp_canary_check_counts(a);
    }
    mp_arena_stats(a, &st);
    MP_CHECK(st.served_arena > served + 200 * NB / 4);
    MP_CHECK(st.fb_unforeseen + st.fb_overlap + st.fb_too_large > 0);
    for (size_t k = 0; k < nheld; k++) mp_canary_give(a, held[k]);
    nheld = 0;
    mp_canary_check_counts(a);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
    mp__arena_max_pairs = keep;
}

/* A too-large request makes the next boundary re-plan; the new footprint
 * still fits the region (the request is smaller than the region), so the
 * region is kept while two blocks of the old layout are live: they must
 * stay protected and be freed correctly. */
static const uint64_t sz[6] = {8192, 4096, 4096, 2048, 1024, 1024};

/* One iteration of six blocks, each freed after the next is taken; the
 * last one extra bytes larger. */
static void chain(mp_arena_t *a, uint64_t extra) {
    uint64_t id[6];
    for (int i = 0; i < 6; i++) {
        id[i] = mp_canary_take(a, sz[i] + (i == 5 ? extra : 0), NULL);
        if (i >= 1) mp_canary_give(a, id[i - 1]);
    }
    mp_canary_give(a, id[5]);
}

static void test_stale(void) {
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return;
    for (int it = 0; it < 8; it++) chain(a, it == 5 ? 512 : 0);
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st.reoptimizations, 1);
    uint64_t region = st.region_bytes, served = st.served_arena;
    /* two blocks live over the boundary, then a too-large request and a re-plan */
    uint64_t keep1 = mp_canary_take(a, 8192, NULL), keep2 = mp_canary_take(a, 4096, NULL);
    for (int i = 2; i < 6; i++) mp_canary_give(a, mp_canary_take(a, i == 4 ? 1536 : sz[i], NULL));
    for (int it = 0; it < 3; it++) chain(a, 0);   /* the old blocks are still live */
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.reoptimizations, 2);
    MP_CHECK_EQ_U64(st.region_bytes, region);   /* kept */
    MP_CHECK(st.served_arena > served);
    mp_canary_give(a, keep1);
    mp_canary_give(a, keep2);
    for (int it = 0; it < 2; it++) chain(a, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.live_blocks, 0);
    uint64_t s2 = st.served_arena;
    chain(a, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.served_arena - s2, 6);   /* stale blocks gone: all served again */
    /* a bad free is refused whatever the path */
    MP_CHECK_EQ_U64(mp_arena_free(a, (char *)a + 1), MP_EINVAL);
    mp_arena_destroy(a, NULL);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
}

/* The owner thread replays without the mutex; another thread's first call
 * hands the arena over to the mutex, and both go on correctly. */
typedef struct tctx {
    mp_arena_t *a;
    int errors;
} tctx;

static void *other(void *arg) {
    tctx *c = arg;
    for (int i = 0; i < 2000; i++) {
        void *p = NULL;
        if (mp_arena_alloc(c->a, 3000 + (uint64_t)i % 7 * 64, &p) != MP_OK || !p) {
            c->errors++;
            continue;
        }
        memset(p, 0x5a, 3000);
        for (int k = 0; k < 3000; k += 97)
            if (((unsigned char *)p)[k] != 0x5a) c->errors++;
        if (mp_arena_free(c->a, p) != MP_OK) c->errors++;
    }
    return NULL;
}

static void test_handover(void) {
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return;
    for (int it = 0; it < 6; it++) iteration(a, 0);
    MP_CHECK_EQ_U64(atomic_load(&a->in_fast), 0);
    tctx c = {a, 0};
    pthread_t t;
    MP_CHECK(pthread_create(&t, NULL, other, &c) == 0);
    for (int it = 0; it < 200; it++) iteration(a, 0);   /* concurrently */
    pthread_join(t, NULL);
    MP_CHECK_EQ_U64(c.errors, 0);
    MP_CHECK_EQ_U64(atomic_load(&a->shared), 1);
    for (int it = 0; it < 4; it++) iteration(a, 0);
    mp_canary_check_counts(a);
    mp_arena_destroy(a, NULL);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
}

/* The preload's entry points (mp__arena_alloc_fast, mp__arena_free_fast)
 * tried before the general ones, as libmemplan-preload does, through the
 * same random deviations. */
static void *fast_alloc(mp_arena_t *a, uint64_t size) { return mp__arena_alloc_fast(a, size); }
static int fast_free(mp_arena_t *a, void *p) { return mp__arena_free_fast(a, p); }

static void test_preload_path(void) {
    mp_canary_alloc_hook = fast_alloc;
    mp_canary_free_hook = fast_free;
    test_deviations((size_t)1 << 22);
    mp_canary_alloc_hook = NULL;
    mp_canary_free_hook = NULL;
}

/* A loop of WIDE requests (more than DENSE_SLOTS: the conflict lists as
 * (word, mask) pairs instead of whole words), blocks freed in a shuffled
 * order (the free path's guess of the next free is mostly wrong), with
 * random late frees and larger sizes. */
#define WIDE 600
static void wide_iteration(mp_arena_t *a, int dev) {
    static uint64_t id[WIDE];
    static uint64_t late[4];
    static size_t nlate;
    size_t order[8];
    uint64_t frame = mp_canary_take(a, 4096, NULL);   /* live through the iteration */
    for (int i = 1; i < WIDE; i++) {
        uint64_t size = 256 + 64 * (((uint64_t)i * 2654435761u >> 7) % 29);   /* no period inside */
        if (dev && rnd() % 64 == 0) size += 64 + rnd() % 2048;
        id[i] = mp_canary_take(a, size, NULL);
        if (i % 8 == 0 && i >= 16) {   /* the eight before the last eight, shuffled */
            for (int k = 0; k < 8; k++) order[k] = (size_t)(i - 15 + k);
            for (int k = 7; dev && k > 0; k--) {
                size_t j = (size_t)(rnd() % (uint64_t)(k + 1)), t = order[k];
                order[k] = order[j], order[j] = t;
            }
            for (int k = 0; k < 8; k++) {
                if (dev && nlate < 4 && rnd() % 128 == 0) late[nlate++] = id[order[k]];
                else mp_canary_give(a, id[order[k]]);
                id[order[k]] = 0;
            }
        }
    }
    for (int i = 1; i < WIDE; i++)
        if (id[i]) mp_canary_give(a, id[i]), id[i] = 0;
    mp_canary_give(a, frame);
    while (nlate && (!dev || rnd() % 2)) mp_canary_give(a, late[--nlate]);
}

static void test_wide(void) {
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return;
    for (int it = 0; it < 6; it++) wide_iteration(a, 0);
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st.iteration_length, WIDE);
    MP_CHECK(a->cur && a->cur->L.dmask == NULL && a->cur->L.cword != NULL);
    uint64_t served = st.served_arena;
    wide_iteration(a, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.served_arena - served, WIDE);
    for (int it = 0; it < 30; it++) {
        wide_iteration(a, 1);
        mp_canary_check_counts(a);
    }
    wide_iteration(a, 0);
    wide_iteration(a, 0);
    mp_canary_check_counts(a);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
}

int main(void) {
    test_deviations((size_t)1 << 22);
    test_deviations(0);
    test_preload_path();
    test_wide();
    test_stale();
    test_handover();
    return mp_test_finish("arena_fast");
}
