/* test_period.c -- iteration detection on synthetic streams: pure
 * periodic, warm-up prefix, stray events inserted / deleted / changed,
 * nested loops, non-periodic streams, a training-like trace (boundary
 * placement, blocks across iterations, records of one iteration planned
 * and checked), and long streams that must be fast. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef MP_DEBUG
#define LONG_N 100000     /* sanitizer builds: keep the run short */
#else
#define LONG_N 1000000
#endif

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

typedef struct stream {
    uint64_t *s;
    size_t n, cap;
} stream;

static void put(stream *st, uint64_t x) {
    if (st->n == st->cap) {
        st->cap = st->cap ? 2 * st->cap : 1024;
        st->s = realloc(st->s, st->cap * sizeof *st->s);
    }
    st->s[st->n++] = x;
}

/* body[0..p) of symbols drawn from an alphabet of size alpha (0: unique). */
static void make_body(uint64_t *body, size_t p, uint64_t alpha) {
    for (size_t i = 0; i < p; i++) body[i] = alpha ? next() % alpha : next();
}

static void check_found(const mp_period_t *pr, size_t period, size_t prefix, size_t iters,
                        size_t tail, size_t edits) {
    MP_CHECK(pr->found);
    MP_CHECK_EQ_U64(pr->period, period);
    MP_CHECK_EQ_U64(pr->prefix, prefix);
    MP_CHECK_EQ_U64(pr->iterations, iters);
    MP_CHECK_EQ_U64(pr->tail, tail);
    MP_CHECK_EQ_U64(pr->edits, edits);
    if (pr->found) MP_CHECK_EQ_U64(pr->start[0], pr->prefix);
}

static void test_pure(void) {
    uint64_t body[64];
    for (uint64_t alpha = 0; alpha <= 3; alpha += 3) {
        make_body(body, 37, alpha);
        stream st = {0};
        for (int m = 0; m < 20; m++)
            for (int i = 0; i < 37; i++) put(&st, body[i]);
        mp_period_t pr;
        MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
        check_found(&pr, 37, 0, 20, 0, 0);
        for (size_t j = 0; pr.found && j <= pr.iterations; j++) MP_CHECK_EQ_U64(pr.start[j], 37 * j);
        mp_period_free(&pr);
        /* Ending in the middle of an iteration: the partial one is the tail. */
        st.n -= 10;
        MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
        check_found(&pr, 37, 0, 19, 27, 0);
        mp_period_free(&pr);
        free(st.s);
    }
    /* Period 1 and 2, and exactly two iterations. */
    uint64_t one[50], two[50];
    for (int i = 0; i < 50; i++) one[i] = 7, two[i] = (uint64_t)(i % 2);
    mp_period_t pr;
    MP_CHECK_OK(mp_period_find(one, 50, NULL, &pr));
    check_found(&pr, 1, 0, 50, 0, 0);
    mp_period_free(&pr);
    MP_CHECK_OK(mp_period_find(two, 50, NULL, &pr));
    check_found(&pr, 2, 0, 25, 0, 0);
    mp_period_free(&pr);
    make_body(body, 40, 0);
    uint64_t twice[80];
    memcpy(twice, body, 40 * sizeof *body);
    memcpy(twice + 40, body, 40 * sizeof *body);
    MP_CHECK_OK(mp_period_find(twice, 80, NULL, &pr));
    check_found(&pr, 40, 0, 2, 0, 0);
    mp_period_free(&pr);
    /* Three iterations required: two are not enough. */
    mp_period_params_t pp;
    mp_period_params_default(&pp);
    pp.min_iterations = 3;
    MP_CHECK_OK(mp_period_find(twice, 80, &pp, &pr));
    MP_CHECK(!pr.found && pr.start == NULL);
    mp_period_free(&pr);
}

static void test_prefix(void) {
    uint64_t body[100];
    make_body(body, 100, 0);
    stream st = {0};
    for (int i = 0; i < 250; i++) put(&st, next());   /* warm-up longer than an iteration */
    for (int m = 0; m < 12; m++)
        for (int i = 0; i < 100; i++) put(&st, body[i]);
    for (int i = 0; i < 30; i++) put(&st, body[i]);
    mp_period_t pr;
    MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
    check_found(&pr, 100, 250, 12, 30, 0);
    mp_period_free(&pr);
    /* A teardown tail shorter than an iteration is tolerated. */
    for (int i = 0; i < 60; i++) put(&st, next());
    MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
    check_found(&pr, 100, 250, 12, 90, 0);
    mp_period_free(&pr);
    free(st.s);
}

static void test_strays(void) {
    for (uint64_t alpha = 0; alpha <= 5; alpha += 5) {
        uint64_t body[80];
        make_body(body, 80, alpha);
        stream st = {0};
        for (int m = 0; m < 30; m++)
            for (int i = 0; i < 80; i++) {
                if (m == 4 && i == 40) put(&st, 999999);           /* inserted */
                if (m == 9 && i == 17) continue;                   /* deleted */
                if (m == 14 && i == 60) {                          /* changed */
                    put(&st, 888888);
                    continue;
                }
                if (m == 20 && (i == 5 || i == 70)) put(&st, 777777); /* two in one */
                put(&st, body[i]);
            }
        mp_period_t pr;
        MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
        check_found(&pr, 80, 0, 30, 0, 5);
        /* The strays do not shift the iterations after them. */
        MP_CHECK(pr.found && pr.start[5] == 5 * 80 + 1 && pr.start[10] == 10 * 80 &&
                 pr.start[21] == 21 * 80 + 2);
        MP_CHECK(pr.found && pr.clean == 29);
        mp_period_free(&pr);
        /* With no edits allowed the steady state starts right after the
         * last stray (event 20*80 + 70 + 1), in the middle of the loop
         * body: bare symbols give no reason to prefer another phase. */
        mp_period_params_t pp;
        mp_period_params_default(&pp);
        pp.max_edits = 0;
        MP_CHECK_OK(mp_period_find(st.s, st.n, &pp, &pr));
        check_found(&pr, 80, 20 * 80 + 72, 9, 10, 0);
        mp_period_free(&pr);
        /* Three strays in one iteration exceed the default k = 2: the
         * steady state starts after that iteration. */
        st.n = 0;
        for (int m = 0; m < 30; m++)
            for (int i = 0; i < 80; i++) {
                if (m == 3 && i % 13 == 5) put(&st, 555555 + (uint64_t)i);
                put(&st, body[i]);
            }
        /* Six strays 13 apart: however the boundary falls, one of two
         * neighbouring iterations holds three of them, more than k = 2. */
        MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
        MP_CHECK(pr.found && pr.period == 80 && pr.prefix > 3 * 80 + 31 &&
                 pr.prefix <= 4 * 80 + 6 && pr.iterations >= 25 && pr.tail < 80 &&
                 pr.edits <= 2 * 2);
        mp_period_free(&pr);
        free(st.s);
    }
}

static void test_nested(void) {
    /* outer iteration = A B B B B C, |A| = 5, |B| = 7, |C| = 6: period 39 */
    for (uint64_t alpha = 0; alpha <= 4; alpha += 4) {
        uint64_t A[5], B[7], C[6];
        make_body(A, 5, alpha);
        make_body(B, 7, alpha);
        make_body(C, 6, alpha);
        if (alpha) A[0] = 100, C[5] = 101;   /* keep the outer loop visible */
        stream st = {0};
        for (int i = 0; i < 13; i++) put(&st, 200 + (uint64_t)i);   /* warm-up */
        for (int m = 0; m < 25; m++) {
            for (int i = 0; i < 5; i++) put(&st, A[i]);
            for (int r = 0; r < 4; r++)
                for (int i = 0; i < 7; i++) put(&st, B[i]);
            for (int i = 0; i < 6; i++) put(&st, C[i]);
        }
        mp_period_t pr;
        MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
        check_found(&pr, 39, 13, 25, 0, 0);
        mp_period_free(&pr);
        /* Ending inside the inner loop still gives the outer period. */
        st.n -= 6 + 7 + 3;
        MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
        check_found(&pr, 39, 13, 24, 39 - 16, 0);
        mp_period_free(&pr);
        free(st.s);
    }
    /* Three levels: (A (B C^3)^2 D), inner repeats not a divisor issue. */
    stream st = {0};
    for (int m = 0; m < 10; m++) {
        put(&st, 1);
        for (int r = 0; r < 2; r++) {
            put(&st, 2);
            for (int q = 0; q < 3; q++) put(&st, 3), put(&st, 4);
        }
        put(&st, 5), put(&st, 6);
    }
    mp_period_t pr;
    MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
    check_found(&pr, 17, 0, 10, 0, 0);
    mp_period_free(&pr);
    free(st.s);
}

static void test_not_periodic(void) {
    for (uint64_t alpha = 0; alpha <= 4; alpha += 2) {
        stream st = {0};
        for (int i = 0; i < 20000; i++) put(&st, alpha ? next() % alpha : next());
        mp_period_t pr;
        MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
        MP_CHECK(!pr.found && pr.period == 0 && pr.start == NULL);
        mp_period_free(&pr);
        free(st.s);
    }
    /* A repeat that happens once in the middle is not a steady state. */
    uint64_t body[50];
    make_body(body, 50, 0);
    stream st = {0};
    for (int i = 0; i < 1000; i++) put(&st, next());
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < 50; i++) put(&st, body[i]);
    for (int i = 0; i < 1000; i++) put(&st, next());
    mp_period_t pr;
    MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
    MP_CHECK(!pr.found);
    mp_period_free(&pr);
    free(st.s);
    MP_CHECK_OK(mp_period_find(NULL, 0, NULL, &pr));
    MP_CHECK(!pr.found);
    uint64_t x = 1;
    MP_CHECK_OK(mp_period_find(&x, 1, NULL, &pr));
    MP_CHECK(!pr.found);
}

/* A training-like loop: 4 weights allocated in a warm-up with a scratch
 * buffer, then iterations of: read weights, forward activations, backward
 * frees, a "carry" block allocated in each iteration and freed in the next
 * (like an optimizer state swapped each step). */
static mp_trace_t *training_trace(int iters, size_t *per_iter) {
    mp_trace_t *t;
    MP_CHECK_OK(mp_trace_create(&t));
    for (uint64_t w = 1; w <= 4; w++) MP_CHECK_OK(mp_trace_record_alloc(t, w, 1000 * w, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_alloc(t, 50, 77777, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_free(t, 50, MP_TRACE_NO_NS));
    uint64_t carry = 0, h = 1000;
    size_t before = 0, n;
    for (int m = 0; m < iters; m++) {
        mp_trace_events(t, &before);
        uint64_t act[5];
        for (int l = 0; l < 5; l++) {
            MP_CHECK_OK(mp_trace_record_access(t, 1 + (uint64_t)(l % 4), 0, MP_TRACE_NO_NS));
            act[l] = ++h;
            MP_CHECK_OK(mp_trace_record_alloc(t, act[l], 4096u << l, MP_TRACE_NO_NS));
            MP_CHECK_OK(mp_trace_record_access(t, act[l], 1, MP_TRACE_NO_NS));
        }
        uint64_t ws = ++h;
        MP_CHECK_OK(mp_trace_record_alloc(t, ws, 300000, MP_TRACE_NO_NS));
        MP_CHECK_OK(mp_trace_record_free(t, ws, MP_TRACE_NO_NS));
        for (int l = 4; l >= 0; l--) MP_CHECK_OK(mp_trace_record_free(t, act[l], MP_TRACE_NO_NS));
        uint64_t c = ++h;
        MP_CHECK_OK(mp_trace_record_alloc(t, c, 512, MP_TRACE_NO_NS));
        if (carry) MP_CHECK_OK(mp_trace_record_free(t, carry, MP_TRACE_NO_NS));
        carry = c;
        mp_trace_events(t, &n);
    }
    *per_iter = n - before;
    return t;
}

static void test_trace_loop(void) {
    size_t p;
    mp_trace_t *t = training_trace(12, &p);
    MP_CHECK_EQ_U64(p, 15 + 2 + 5 + 2);
    mp_period_t pr;
    MP_CHECK_OK(mp_period_detect(t, NULL, &pr));
    MP_CHECK(pr.found && pr.period == p);
    /* Every iteration but the first two (the first one has no carry to
     * free; with the boundary before the carry's allocation the first
     * iteration takes the warm-up's scratch block as 2 substitutions and
     * the second lacks the free) is exactly p events long, and the stream ends within one period of the last. */
    for (size_t j = 2; pr.found && j < pr.iterations; j++)
        MP_CHECK_EQ_U64(pr.start[j + 1] - pr.start[j], p);
    MP_CHECK(pr.found && pr.prefix <= 6 && pr.iterations >= 11 && pr.tail < p);
    /* The boundary is at a cut with the fewest live bytes: the weights and
     * one carry block (two cuts tie: around the carry's alloc/free pair). */
    size_t n;
    const mp_event_t *ev = mp_trace_events(t, &n);
    uint64_t live = 0;
    for (size_t i = 0; pr.found && i < pr.start[pr.clean]; i++)
        live += ev[i].kind == MP_EV_ALLOC ? ev[i].size : ev[i].kind == MP_EV_FREE ? 0 - ev[i].size : 0;
    MP_CHECK_EQ_U64(live, 10000 + 512);
    /* One carry block per steady iteration crosses into the next. */
    MP_CHECK(pr.n_cross + 1 >= pr.iterations && pr.n_cross <= pr.iterations);
    for (size_t i = 0; i < pr.n_cross; i++) MP_CHECK(ev[pr.cross[i]].size == 512);
    /* The clean iteration's records plan and check; its bound is the
     * iteration's peak: 5 activations + workspace, plus the new carry
     * block if the window starts with its allocation (the old one was
     * allocated before the window and is not a record of it). */
    MP_CHECK(pr.found && pr.clean > 0);
    mp_buffer_t *b;
    size_t k;
    MP_CHECK_OK(mp_trace_records(t, pr.start[pr.clean], pr.start[pr.clean + 1], &b, &k));
    MP_CHECK_EQ_U64(k, 7);
    mp_plan_t plan;
    MP_CHECK_OK(mp_plan_compute(b, k, "auto", &plan));
    MP_CHECK_OK(mp_plan_check(b, k, &plan, NULL));
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, k, &bd));
    MP_CHECK(bd.offsets == 4096u * 31 + 300000 + 512 || bd.offsets == 4096u * 31 + 300000);
    mp_plan_free(&plan);
    free(b);
    mp_period_free(&pr);
    mp_trace_free(t);
}

/* A loop of iters iterations, each allocating 40 blocks (4 KiB, 8 KiB, ...)
 * and freeing them in reverse, after one weight block (handle 1) allocated
 * before it.  Iteration stray_it gets one read (write: 1) of the weight
 * after its allocation number stray_at, when that many blocks are live. */
static mp_trace_t *stray_trace(int iters, int stray_it, int stray_at, int write) {
    mp_trace_t *t;
    MP_CHECK_OK(mp_trace_create(&t));
    MP_CHECK_OK(mp_trace_record_alloc(t, 1, 1000000, MP_TRACE_NO_NS));
    uint64_t h = 100;
    for (int m = 0; m < iters; m++) {
        for (int b = 0; b < 40; b++) {
            MP_CHECK_OK(mp_trace_record_alloc(t, h + (uint64_t)b, 4096u * (uint64_t)(b + 1),
                                              MP_TRACE_NO_NS));
            if (m == stray_it && b == stray_at)
                MP_CHECK_OK(mp_trace_record_access(t, 1, write, MP_TRACE_NO_NS));
        }
        for (int b = 40; b-- > 0;) MP_CHECK_OK(mp_trace_record_free(t, h + (uint64_t)b, MP_TRACE_NO_NS));
        h += 40;
    }
    return t;
}

/* One stray read or write inside one iteration: the period is the loop's
 * (80 events), every iteration is found, the boundary is where only the
 * weight is live (right after it, event 1), one edit in all, and no block
 * crosses iterations.  Before period.c measured a free's distance in
 * allocations and frees only, the stray shifted every free of its
 * iteration, the iteration failed, and for a stray in iteration 4 of 6
 * (after the last allocation, where all 40 blocks are live) the boundary
 * landed where everything is live and 39 blocks were marked crossing. */
static void test_trace_stray(void) {
    static const int cases[][3] = {{6, 4, 39}, {6, 3, 39}, {10, 6, 39}, {20, 10, 19},
                                   {20, 1, 0}, {20, 18, 39}, {6, 0, 20}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int write = 0; write <= 1; write++) {
            int iters = cases[c][0], it = cases[c][1];
            mp_trace_t *t = stray_trace(iters, it, cases[c][2], write);
            mp_period_t pr;
            MP_CHECK_OK(mp_period_detect(t, NULL, &pr));
            MP_CHECK(pr.found);
            MP_CHECK_EQ_U64(pr.period, 80);
            MP_CHECK_EQ_U64(pr.prefix, 1);
            MP_CHECK_EQ_U64(pr.iterations, (uint64_t)iters);
            MP_CHECK_EQ_U64(pr.tail, 0);
            MP_CHECK_EQ_U64(pr.edits, 1);
            MP_CHECK_EQ_U64(pr.n_cross, 0);
            /* the stray's iteration is one event longer, the others exact */
            for (size_t j = 0; pr.found && j < pr.iterations; j++)
                MP_CHECK_EQ_U64(pr.start[j], 1 + 80 * j + (j > (size_t)it));
            mp_period_free(&pr);
            mp_trace_free(t);
        }
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_long(void) {
    uint64_t body[1000];
    make_body(body, 1000, 16);
    stream st = {0};
    for (int i = 0; i < 3000; i++) put(&st, 16 + next() % 16);   /* other symbols */
    for (size_t it = 0; st.n < LONG_N; it++) {
        for (size_t i = 0; i < 1000; i++) {
            if (it % 7 == 3 && i == it * 37 % 1000) put(&st, 12345);   /* strays */
            if (it % 11 == 5 && i == it * 91 % 1000) continue;
            put(&st, body[i]);
        }
    }
    double t0 = now();
    mp_period_t pr;
    MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
    double dt = now() - t0;
    /* A template taken at a phase just before the warm-up's end may take
     * up to k = 2 warm-up events as substitutions into the first
     * iteration (and leave as many loop events to the tail). */
    MP_CHECK(pr.found && pr.period == 1000 && pr.prefix <= 3000 && pr.prefix >= 2998 &&
             pr.tail == 3000 - pr.prefix);
    MP_CHECK(pr.found && pr.iterations == (LONG_N - 3000) / 1000);
    mp_period_free(&pr);
    /* Non-periodic and constant streams of the same length. */
    for (size_t i = 0; i < st.n; i++) st.s[i] = next() % 64;
    double t1 = now();
    MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
    MP_CHECK(!pr.found);
    mp_period_free(&pr);
    for (size_t i = 0; i < st.n; i++) st.s[i] = 3;
    MP_CHECK_OK(mp_period_find(st.s, st.n, NULL, &pr));
    MP_CHECK(pr.found && pr.period == 1 && pr.iterations == st.n);
    mp_period_free(&pr);
    double dt2 = now() - t1;
    printf("long streams of %zu events: periodic %.3f s, random + constant %.3f s\n", st.n, dt,
           dt2);
    /* Times are printed, not asserted: speed claims come from
     * bench/runtime/period.c (bench_period, run by bench/runtime/run), and
     * a loaded CI machine must not turn a correct run red. */
    free(st.s);
    /* A long trace. */
    size_t p;
    mp_trace_t *t = training_trace(LONG_N / 24, &p);
    t0 = now();
    MP_CHECK_OK(mp_period_detect(t, NULL, &pr));
    dt = now() - t0;
    MP_CHECK(pr.found && pr.period == p && pr.n_cross + 1 >= pr.iterations);
    printf("long trace: %.3f s\n", dt);
    mp_period_free(&pr);
    mp_trace_free(t);
}

int main(void) {
    test_pure();
    test_prefix();
    test_strays();
    test_nested();
    test_not_periodic();
    test_trace_loop();
    test_trace_stray();
    test_long();
    return mp_test_finish("test_period");
}
