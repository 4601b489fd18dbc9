/* test_oom.c -- every allocation failure is handled: for each strategy,
 * the bounds and the checker, fail the k-th allocation for k = 1, 2, ...
 * until the call succeeds; every failing run must return MP_ENOMEM (and
 * nothing else), leave the plan zeroed, and leak nothing (ASan's leak
 * checker runs at exit in the sanitizer build).  malloc, calloc and realloc
 * are wrapped at link time (-Wl,--wrap), so only this test sees it. */
#include "gen.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static long countdown = -1; /* fail when it reaches 0; -1: never */

static bool fail_now(void) { return countdown >= 0 && countdown-- == 0; }

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return fail_now() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }

static bool zeroed(const mp_plan_t *p) {
    static const mp_plan_t z;
    return !memcmp(p, &z, sizeof z);
}

/* Runs one call with the k-th allocation failing, for every k until it
 * succeeds; returns how many failure points were exercised. */
static long sweep_strategy(const mp_buffer_t *b, size_t n, const char *name) {
    long k = 0;
    for (;; k++) {
        mp_plan_t p;
        countdown = k;
        mp_status s = mp_plan_compute(b, n, name, &p);
        countdown = -1;
        if (s == MP_OK) {
            MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
            mp_plan_free(&p);
            return k;
        }
        if (!MP_CHECK(s == MP_ENOMEM && zeroed(&p)))
            fprintf(stderr, "  %s, allocation %ld: %s (%s)\n", name, k, mp_status_name(s),
                    mp_last_error());
        mp_plan_free(&p);
    }
}

static long sweep_other(const mp_buffer_t *b, size_t n) {
    long k = 0, points = 0;
    mp_plan_t p;
    MP_CHECK_OK(mp_plan_compute(b, n, "greedy-size", &p));
    for (int which = 0; which < 2; which++)
        for (k = 0;; k++, points++) {
            mp_bounds_t bd;
            countdown = k;
            mp_status s = which ? mp_plan_check(b, n, &p, NULL) : mp_bounds_compute(b, n, &bd);
            countdown = -1;
            if (s == MP_OK) break;
            MP_CHECK(s == MP_ENOMEM);
        }
    mp_plan_free(&p);
    return points;
}

/* The readers: records and plan CSV from files written here. */
static long sweep_io(const mp_buffer_t *b, size_t n) {
    char rec[] = "/tmp/mp_oom_rec_XXXXXX", plan[] = "/tmp/mp_oom_plan_XXXXXX";
    int fr = mkstemp(rec), fp = mkstemp(plan);
    long points = 0;
    mp_plan_t p;
    if (!MP_CHECK(fr >= 0 && fp >= 0)) return 0;
    MP_CHECK_OK(mp_records_write(rec, b, n));
    MP_CHECK_OK(mp_plan_compute(b, n, "objects-greedy-size", &p));
    MP_CHECK_OK(mp_plan_write_csv(plan, b, n, &p));
    mp_plan_free(&p);
    for (int which = 0; which < 2; which++)
        for (long k = 0;; k++, points++) {
            mp_buffer_t *rb = NULL;
            size_t rn = 0;
            countdown = k;
            mp_status s = which ? mp_plan_read_csv(plan, b, n, &p) : mp_records_read(rec, &rb, &rn);
            countdown = -1;
            free(rb);
            if (which && s == MP_OK) mp_plan_free(&p);
            if (s == MP_OK) break;
            MP_CHECK(s == MP_ENOMEM);
        }
    remove(rec), remove(plan);
    return points;
}

int main(void) {
    for (int shape = 0; shape < MP_GEN_SHAPES; shape++) {
        size_t n = 40;
        mp_buffer_t b[40];
        mp_gen_problem(b, n, (mp_gen_shape)shape, 1234 + shape);
        long points = sweep_other(b, n) + sweep_io(b, n);
        for (size_t s = 0; s < mp_strategy_count(); s++)
            points += sweep_strategy(b, n, mp_strategy_info(s)->name);
        MP_CHECK(points > 100); /* the sweep really failed allocations */
    }
    return mp_test_finish("test_oom");
}
