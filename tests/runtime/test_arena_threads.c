/* test_arena_threads.c -- four threads hammer one replay arena: the arena
 * first learns a loop on one thread and starts replaying, then every thread
 * runs the loop concurrently (the interleaving is a deviation the plan did
 * not foresee).  Every block is filled with its own pattern and checked
 * before it is freed, and a shared registry checks that no two live blocks
 * ever overlap. */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define ROUNDS 150
#define MAXLIVE 512

typedef struct blk {
    unsigned char *p;
    uint64_t size;
} blk;

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static blk reg[MAXLIVE];
static size_t nreg;
static long overlaps, bad_canaries, failures;

static unsigned char pat(uintptr_t p, uint64_t k, unsigned salt) {
    return (unsigned char)((p >> 6) * 31 + k * 13 + salt);
}

static unsigned char *take(mp_arena_t *a, uint64_t size, unsigned salt) {
    void *p = NULL;
    if (mp_arena_alloc(a, size, &p) != MP_OK || !p) {
        __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    unsigned char *c = p;
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nreg; i++)
        if (c < reg[i].p + reg[i].size && reg[i].p < c + size) overlaps++;
    if (nreg < MAXLIVE) reg[nreg++] = (blk){c, size};
    pthread_mutex_unlock(&reg_mu);
    for (uint64_t k = 0; k < size; k++) c[k] = pat((uintptr_t)c, k, salt);
    return c;
}

static void give(mp_arena_t *a, unsigned char *c, uint64_t size, unsigned salt) {
    if (!c) return;
    for (uint64_t k = 0; k < size; k++)
        if (c[k] != pat((uintptr_t)c, k, salt)) {
            __atomic_add_fetch(&bad_canaries, 1, __ATOMIC_RELAXED);
            break;
        }
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nreg; i++)
        if (reg[i].p == c) {
            reg[i] = reg[--nreg];
            break;
        }
    pthread_mutex_unlock(&reg_mu);
    if (mp_arena_free(a, c) != MP_OK) __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
}

/* One iteration of a small training-like loop. */
static void iteration(mp_arena_t *a, unsigned salt) {
    static const uint64_t sz[5] = {1024, 3072, 512, 4096, 2048};
    unsigned char *act[5], *g = NULL;
    for (int l = 0; l < 5; l++) {
        act[l] = take(a, sz[l], salt);
        unsigned char *t = take(a, 256 * (uint64_t)(l + 1), salt);
        give(a, t, 256 * (uint64_t)(l + 1), salt);
    }
    for (int l = 4; l >= 0; l--) {
        unsigned char *ng = take(a, sz[l], salt);
        if (g) give(a, g, sz[l + 1], salt);
        g = ng;
        give(a, act[l], sz[l], salt);
    }
    give(a, g, sz[0], salt);
}

typedef struct job {
    mp_arena_t *a;
    unsigned salt;
} job;

static void *worker(void *arg) {
    job *j = arg;
    for (int r = 0; r < ROUNDS; r++) {
        if (r % 17 == 5) mp_arena_interrupt(j->a);
        iteration(j->a, j->salt);
        if (r % 17 == 5 && mp_arena_resume(j->a) != MP_OK)
            __atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
        if (r % 23 == 0) mp_arena_mark_iteration(j->a);
    }
    return NULL;
}

int main(void) {
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return mp_test_finish("arena_threads");
    for (int i = 0; i < 20; i++) iteration(a, 0);
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    pthread_t th[THREADS];
    job jobs[THREADS];
    for (int t = 0; t < THREADS; t++) {
        jobs[t] = (job){a, (unsigned)t + 1};
        MP_CHECK(pthread_create(&th[t], NULL, worker, &jobs[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(overlaps, 0);
    MP_CHECK_EQ_U64(bad_canaries, 0);
    MP_CHECK_EQ_U64(failures, 0);
    MP_CHECK_EQ_U64(st.live_blocks, 0);
    MP_CHECK_EQ_U64(st.live_bytes, 0);
    MP_CHECK(st.served_arena > 0);
    MP_CHECK_EQ_U64(st.requests, st.served_learning + st.served_arena + st.fb_interrupted +
                                     st.fb_unforeseen + st.fb_overlap + st.fb_too_large +
                                     st.fb_cross + st.fb_small + st.fb_passthrough + st.fb_unmatched);
    MP_CHECK_EQ_U64(st.frees, st.requests);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 0);
    MP_CHECK_EQ_U64(st.backing_bytes, 0);
    return mp_test_finish("arena_threads");
}
