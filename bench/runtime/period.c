/* period.c -- speed of iteration detection (src/runtime/period.c) and of
 * the replay arena's learning phase (src/runtime/arena.c), for
 * bench/runtime/run.
 *
 *   bench_period [--quick] [--events N] [--reps R]
 *
 * Cases (N events each, 10^6 by default, 10^5 with --quick):
 *   find-periodic   mp_period_find: a 3000-symbol warm-up, then a 1000-symbol
 *                   body over 16 symbols repeated with strays (an insertion
 *                   every 7th iteration, a deletion every 11th)
 *   find-random     mp_period_find: uniform symbols from an alphabet of 64
 *   find-constant   mp_period_find: one symbol
 *   detect-trace    mp_period_detect: a training-like trace (4 weights, then
 *                   iterations of 5 activations, a workspace, frees, and a
 *                   block carried into the next iteration; 24 events each)
 *   arena-aperiodic mp_arena_alloc/free on random sizes and lifetimes with
 *                   max_learn_events = N: every detection attempt the arena
 *                   makes while learning, until it gives up (the worst case)
 *   arena-periodic  mp_arena_alloc/free on an inference-like loop (100
 *                   weights, then iterations of 200 allocations: 100 layers
 *                   of distinct sizes) until the arena replays; events =
 *                   the events up to the switch
 * Each case runs R times (5, or 3 with --quick); one line per case:
 *   case=NAME events=N median_s=T min_s=T max_s=T ns_per_event=X [found=0|1
 *   period=P detections=D]
 * The arena cases include the backing allocator (malloc) and the trace, so
 * their time is the whole learning phase, not detection alone.  Exit
 * status 1 if a case gives a wrong answer (the period of a periodic case,
 * a period on the random stream, replay never reached). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memplan.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, size_t events, double *t, int reps, const char *extra) {
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    printf("case=%s events=%zu median_s=%.4f min_s=%.4f max_s=%.4f ns_per_event=%.1f%s%s\n",
           name, events, t[reps / 2], t[0], t[reps - 1], t[reps / 2] * 1e9 / (double)events,
           extra[0] ? " " : "", extra);
    fflush(stdout);
}

/* ---- mp_period_find on symbol streams ------------------------------------- */

static uint64_t *periodic(size_t n) {
    uint64_t *s = malloc(n * sizeof *s), body[1000];
    if (!s) return NULL;
    for (size_t i = 0; i < 1000; i++) body[i] = next() % 16;
    size_t k = 0;
    for (; k < 3000 && k < n; k++) s[k] = 16 + next() % 16;
    for (size_t it = 0; k < n; it++)
        for (size_t i = 0; i < 1000 && k < n; i++) {
            if (it % 7 == 3 && i == it * 37 % 1000 && k < n) s[k++] = 12345;
            if (it % 11 == 5 && i == it * 91 % 1000) continue;
            if (k < n) s[k++] = body[i];
        }
    return s;
}

static int run_find(const char *name, const uint64_t *s, size_t n, int reps, size_t want) {
    double t[16];
    mp_period_t pr = {0};
    for (int r = 0; r < reps; r++) {
        mp_period_free(&pr);
        double t0 = now();
        if (mp_period_find(s, n, NULL, &pr) != MP_OK) {
            fprintf(stderr, "%s: %s\n", name, mp_last_error());
            return 1;
        }
        t[r] = now() - t0;
    }
    char extra[96];
    snprintf(extra, sizeof extra, "found=%d period=%zu", pr.found, pr.period);
    report(name, n, t, reps, extra);
    int bad = want ? !(pr.found && pr.period == want) : pr.found;
    mp_period_free(&pr);
    if (bad) fprintf(stderr, "%s: wrong answer\n", name);
    return bad;
}

/* ---- mp_period_detect on a trace --------------------------------------------- */

static mp_trace_t *training_trace(size_t n) {
    mp_trace_t *t;
    if (mp_trace_create(&t) != MP_OK) return NULL;
    for (uint64_t w = 1; w <= 4; w++) (void)mp_trace_record_alloc(t, w, 1000 * w, MP_TRACE_NO_NS);
    uint64_t carry = 0, h = 1000;
    size_t len;
    while (mp_trace_events(t, &len), len + 24 <= n) {
        uint64_t act[5];
        for (int l = 0; l < 5; l++) {
            (void)mp_trace_record_access(t, 1 + (uint64_t)(l % 4), 0, MP_TRACE_NO_NS);
            act[l] = ++h;
            (void)mp_trace_record_alloc(t, act[l], 4096u << l, MP_TRACE_NO_NS);
            (void)mp_trace_record_access(t, act[l], 1, MP_TRACE_NO_NS);
        }
        uint64_t ws = ++h;
        (void)mp_trace_record_alloc(t, ws, 300000, MP_TRACE_NO_NS);
        (void)mp_trace_record_free(t, ws, MP_TRACE_NO_NS);
        for (int l = 4; l >= 0; l--) (void)mp_trace_record_free(t, act[l], MP_TRACE_NO_NS);
        uint64_t c = ++h;
        (void)mp_trace_record_alloc(t, c, 512, MP_TRACE_NO_NS);
        if (carry) (void)mp_trace_record_free(t, carry, MP_TRACE_NO_NS);
        carry = c;
    }
    return t;
}

static int run_detect(size_t n, int reps) {
    mp_trace_t *t = training_trace(n);
    if (!t) return 1;
    size_t len;
    (void)mp_trace_events(t, &len);
    double tm[16];
    mp_period_t pr = {0};
    for (int r = 0; r < reps; r++) {
        mp_period_free(&pr);
        double t0 = now();
        if (mp_period_detect(t, NULL, &pr) != MP_OK) {
            mp_trace_free(t);
            return 1;
        }
        tm[r] = now() - t0;
    }
    char extra[96];
    snprintf(extra, sizeof extra, "found=%d period=%zu", pr.found, pr.period);
    report("detect-trace", len, tm, reps, extra);
    int bad = !(pr.found && pr.period == 24);
    mp_period_free(&pr);
    mp_trace_free(t);
    if (bad) fprintf(stderr, "detect-trace: wrong answer\n");
    return bad;
}

/* ---- the arena's learning phase ------------------------------------------------ */

/* Random sizes and lifetimes until the arena has traced n events and gone
 * to pass-through.  Returns the events traced (0 on failure). */
static size_t arena_aperiodic(size_t n, double *secs, uint64_t *detections) {
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    o.max_learn_events = n;
    mp_arena_t *a;
    if (mp_arena_create(&o, &a) != MP_OK) return 0;
    void *live[64] = {0};
    size_t events = 0;
    mp_arena_stats_t st;
    double t0 = now();
    for (;;) {
        size_t i = next() % 64;
        if (live[i]) {
            (void)mp_arena_free(a, live[i]);
            live[i] = NULL;
        } else if (mp_arena_alloc(a, 64 + next() % 100000, &live[i]) != MP_OK) {
            break;
        }
        events++;
        if (events % 1024 == 0) {
            mp_arena_stats(a, &st);
            if (st.state != MP_ARENA_LEARNING) break;
        }
    }
    *secs = now() - t0;
    mp_arena_stats(a, &st);
    *detections = st.detections;
    for (size_t i = 0; i < 64; i++) (void)mp_arena_free(a, live[i]);
    mp_arena_destroy(a, NULL);
    return st.state == MP_ARENA_PASSTHROUGH ? events : 0;
}

/* 100 weights, then iterations of 200 allocations (a chain of activations
 * with a workspace each) until the arena replays.  Returns the trace length
 * at the switch (0 on failure); *period = allocations per iteration. */
static size_t arena_periodic(double *secs, uint64_t *detections, size_t *period) {
    mp_arena_t *a;
    if (mp_arena_create(NULL, &a) != MP_OK) return 0;
    void *w[100], *prev = NULL;
    size_t events = 0;
    mp_arena_stats_t st = {0};
    double t0 = now();
    for (int i = 0; i < 100; i++, events++)
        if (mp_arena_alloc(a, 100000 + 64 * (uint64_t)i, &w[i]) != MP_OK) return 0;
    for (int it = 0; it < 50 && st.state == MP_ARENA_LEARNING; it++)
        for (int l = 0; l < 100; l++) {
            void *x, *ws;
            /* sizes with no inner repeat (docs/arena.md: a run of repeats
             * twice as long as the prefix would be taken for the period) */
            if (mp_arena_alloc(a, 4096 + 64 * (uint64_t)(l * 7919 % 1000), &x) != MP_OK ||
                mp_arena_alloc(a, 65536, &ws) != MP_OK)
                return 0;
            (void)mp_arena_free(a, ws);
            events += prev ? 4 : 3;   /* free(NULL) is no event */
            (void)mp_arena_free(a, prev);
            prev = x;
            mp_arena_stats(a, &st);
            if (st.state != MP_ARENA_LEARNING) break;
        }
    *secs = now() - t0;
    *detections = st.detections;
    *period = st.iteration_length;
    (void)mp_arena_free(a, prev);
    mp_arena_destroy(a, NULL);
    return st.state == MP_ARENA_REPLAYING ? events : 0;
}

static int run_arena(size_t n, int reps) {
    double t[16];
    uint64_t det = 0;
    size_t ev = 0, per = 0;
    for (int r = 0; r < reps; r++)
        if (!(ev = arena_aperiodic(n, &t[r], &det))) {
            fprintf(stderr, "arena-aperiodic: did not go to pass-through\n");
            return 1;
        }
    char extra[96];
    snprintf(extra, sizeof extra, "found=0 period=0 detections=%llu", (unsigned long long)det);
    report("arena-aperiodic", ev, t, reps, extra);
    for (int r = 0; r < reps; r++)
        if (!(ev = arena_periodic(&t[r], &det, &per)) || per != 200) {
            fprintf(stderr, "arena-periodic: no replay with 200 requests per iteration\n");
            return 1;
        }
    snprintf(extra, sizeof extra, "found=1 period=%zu detections=%llu", per,
             (unsigned long long)det);
    report("arena-periodic", ev, t, reps, extra);
    return 0;
}

int main(int argc, char **argv) {
    size_t n = 1000000;
    int reps = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) n = 100000, reps = 3;
        else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc) n = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--events N] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (n < 10000 || reps < 1 || reps > 16) {
        fprintf(stderr, "need N >= 10000 and 1 <= R <= 16\n");
        return 2;
    }
    int bad = 0;
    uint64_t *s = periodic(n);
    if (!s) return 1;
    bad |= run_find("find-periodic", s, n, reps, 1000);
    for (size_t i = 0; i < n; i++) s[i] = next() % 64;
    bad |= run_find("find-random", s, n, reps, 0);
    for (size_t i = 0; i < n; i++) s[i] = 3;
    bad |= run_find("find-constant", s, n, reps, 1);
    free(s);
    bad |= run_detect(n, reps);
    bad |= run_arena(n, reps);
    return bad;
}
