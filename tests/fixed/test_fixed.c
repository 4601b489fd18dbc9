/* test_fixed.c -- pre-placed buffers (src/offsets/fixed.c, the records'
 * offset column).
 *
 * Random problems of every generator shape with a random part of the
 * buffers fixed where a valid plan put them: every offset strategy and
 * "auto" plan the rest around them, every plan passes mp_plan_check_fixed
 * (valid, fixed buffers in place), "auto" is never above a strategy it
 * runs; all fixed gives back that plan.  Then the errors: misaligned and
 * colliding fixed offsets (both buffers named, with file lines from the
 * reader), strategies that cannot take them, a plan that moved one. */
#include "harness.h"
#include "gen.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint64_t next(uint64_t *s) { return mp_gen_next(s); }

/* Fixes about one buffer in `every` (none when every is 0) at its offset
 * in greedy-size's plan. */
static void fix_some(const mp_buffer_t *b, size_t n, uint64_t *fixed, unsigned every,
                     uint64_t *st) {
    mp_plan_t p;
    MP_CHECK_OK(mp_plan_compute(b, n, "greedy-size", &p));
    for (size_t i = 0; i < n; i++)
        fixed[i] = every && next(st) % every == 0 && p.offset ? p.offset[i] : MP_NOT_FIXED;
    mp_plan_free(&p);
}

static void test_random(void) {
    static mp_buffer_t b[400];
    static uint64_t fixed[400];
    uint64_t st = 77;
    size_t nreg = mp_strategy_count();
    for (int iter = 0; iter < 140; iter++) {
        size_t n = 2 + next(&st) % (iter < 100 ? 60 : 400);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 1000 + (uint64_t)iter);
        fix_some(b, n, fixed, 1 + (unsigned)(iter % 5), &st);
        uint64_t fixed_end = 0;
        for (size_t i = 0; i < n; i++)
            if (fixed[i] != MP_NOT_FIXED && fixed[i] + mp_buffer_aligned_size(&b[i]) > fixed_end)
                fixed_end = fixed[i] + mp_buffer_aligned_size(&b[i]);
        mp_plan_t a;
        if (!MP_CHECK_OK(mp_plan_compute_fixed(b, n, fixed, "auto", &a))) continue;
        MP_CHECK_OK(mp_plan_check_fixed(b, n, fixed, &a, NULL));
        MP_CHECK(a.footprint >= fixed_end);
        for (size_t k = 0; k < nreg; k++) {
            const mp_strategy_info_t *in = mp_strategy_info(k);
            if (in->kind != MP_KIND_OFFSETS || !strcmp(in->name, "exact")) continue;
            mp_plan_t p;
            if (!MP_CHECK_OK(mp_plan_compute_fixed(b, n, fixed, in->name, &p))) continue;
            if (!MP_CHECK_OK(mp_plan_check_fixed(b, n, fixed, &p, NULL)))
                fprintf(stderr, "  %s, problem %d: %s\n", in->name, iter, mp_last_error());
            if (strcmp(in->name, "naive"))
                MP_CHECK(a.footprint <= p.footprint); /* auto runs it */
            mp_plan_free(&p);
        }
        mp_plan_free(&a);
    }
    /* everything fixed: that plan back; nothing fixed: mp_plan_compute */
    size_t n = 120;
    mp_gen_problem(b, n, MP_GEN_UNIFORM, 5);
    mp_plan_t g, p;
    MP_CHECK_OK(mp_plan_compute(b, n, "strip-bestfit", &g));
    for (size_t i = 0; i < n; i++) fixed[i] = g.offset[i];
    MP_CHECK_OK(mp_plan_compute_fixed(b, n, fixed, "greedy-size", &p));
    MP_CHECK(!memcmp(p.offset, g.offset, n * sizeof *p.offset) && p.footprint == g.footprint);
    mp_plan_free(&p);
    MP_CHECK_OK(mp_plan_compute_fixed(b, n, NULL, "strip-bestfit", &p));
    MP_CHECK(!memcmp(p.offset, g.offset, n * sizeof *p.offset));
    mp_plan_free(&p);
    for (size_t i = 0; i < n; i++) fixed[i] = MP_NOT_FIXED;
    MP_CHECK_OK(mp_plan_compute_fixed(b, n, fixed, "strip-bestfit", &p));
    MP_CHECK(!memcmp(p.offset, g.offset, n * sizeof *p.offset));
    mp_plan_free(&p), mp_plan_free(&g);
}

static bool says(const char *a, const char *b) {
    bool ok = strstr(mp_last_error(), a) && (!b || strstr(mp_last_error(), b));
    if (!ok) fprintf(stderr, "  message: %s\n", mp_last_error());
    return ok;
}

static void test_errors(void) {
    mp_buffer_t b[] = {{10, 0, 5, 100, 16}, {11, 3, 8, 50, 0}, {12, 6, 9, 64, 0}};
    uint64_t fx[3] = {8, MP_NOT_FIXED, MP_NOT_FIXED};
    mp_plan_t p;
    MP_CHECK(mp_plan_compute_fixed(b, 3, fx, "auto", &p) == MP_EINVAL && p.offset == NULL);
    MP_CHECK(says("id 10", "alignment 16"));
    uint64_t clash[3] = {0, 64, MP_NOT_FIXED};
    MP_CHECK(mp_plan_compute_fixed(b, 3, clash, "greedy-size", &p) == MP_EINVAL);
    MP_CHECK(says("id 10", "id 11"));
    uint64_t ok[3] = {0, 112, MP_NOT_FIXED}; /* 100 rounds to 112 */
    MP_CHECK(mp_plan_compute_fixed(b, 3, ok, "objects-greedy-size", &p) == MP_EINVAL);
    MP_CHECK(says("objects-greedy-size", "shared objects"));
    MP_CHECK(mp_plan_compute_fixed(b, 3, ok, "exact", &p) == MP_EINVAL && says("exact", NULL));
    MP_CHECK(mp_plan_compute_fixed(b, 3, ok, "nope", &p) == MP_ENOTFOUND);
    uint64_t huge[3] = {(UINT64_MAX - 200) / 16 * 16, MP_NOT_FIXED, MP_NOT_FIXED};
    MP_CHECK(mp_plan_compute_fixed(b, 3, huge, "auto", &p) == MP_EINVAL);
    MP_CHECK(says("too large", NULL));
    MP_CHECK_OK(mp_plan_compute_fixed(b, 3, ok, "auto", &p));
    MP_CHECK_OK(mp_plan_check_fixed(b, 3, ok, &p, NULL));
    MP_CHECK(p.offset[0] == 0 && p.offset[1] == 112 && p.footprint == 162);
    uint64_t other[3] = {0, 114, MP_NOT_FIXED};
    MP_CHECK(mp_plan_check_fixed(b, 3, other, &p, NULL) == MP_ECONFLICT && says("id 11", "114"));
    mp_plan_free(&p);
}

static void test_records(void) {
    char dir[] = "/tmp/mp_fixed_XXXXXX";
    if (!MP_CHECK(mkdtemp(dir) != NULL)) return;
    const char *path = mp_test_path(dir, "r.csv");
    mp_test_write_file(path, "id,lower,upper,size,alignment,offset\n"
                             "1,0,4,100,16,0\n"
                             "2,2,6,50,1,\n"
                             "3,3,9,64,64,128\n");
    mp_buffer_t *b;
    uint64_t *fx;
    size_t n;
    if (MP_CHECK_OK(mp_records_read_fixed(path, &b, &n, &fx))) {
        MP_CHECK(n == 3 && fx && fx[0] == 0 && fx[1] == MP_NOT_FIXED && fx[2] == 128);
        MP_CHECK(b[0].align == 16 && b[1].align == 1 && b[2].last == 8);
        mp_plan_t p;
        MP_CHECK_OK(mp_plan_compute_fixed(b, n, fx, "auto", &p));
        MP_CHECK_OK(mp_plan_check_fixed(b, n, fx, &p, NULL));
        MP_CHECK(p.offset[1] == 192 && p.footprint == 242); /* above both fixed ones */
        mp_plan_free(&p);
        free(b), free(fx);
    }
    MP_CHECK_OK(mp_records_read(path, &b, &n)); /* the plain reader ignores the column */
    free(b);
    mp_test_write_file(path, "id,first,last,size\n1,0,4,100\n");
    MP_CHECK_OK(mp_records_read_fixed(path, &b, &n, &fx));
    MP_CHECK(fx == NULL && n == 1);
    free(b);
    static const char *const bad[][2] = {
        {"id,first,last,size,offset\n1,0,4,100,x\n", ":2: field 'offset'"},
        {"id,first,last,size,offset\n1,0,4,100,0\n2,4,5,8,96\n", ":3: field 'offset': buffer id 2 overlaps buffer id 1 (line 2)"},
        {"id,first,last,size,align,offset\n1,0,4,100,8,4\n", ":2: field 'offset': 4 is not a multiple of the alignment 8"},
        {"id,first,last,size,offset\n1,0,4,100,18446744073709551615\n", ":2: field 'offset'"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mp_test_write_file(path, bad[k][0]);
        mp_status s = mp_records_read_fixed(path, &b, &n, &fx);
        MP_CHECK((s == MP_EPARSE || s == MP_EINVAL) && b == NULL && fx == NULL);
        MP_CHECK(says(bad[k][1], NULL));
    }
    unlink(path);
    rmdir(dir);
}

int main(void) {
    test_random();
    test_errors();
    test_records();
    return mp_test_finish("test_fixed");
}
