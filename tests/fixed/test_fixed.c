/* test_fixed.c -- pre-placed buffers (src/offsets/fixed.c, the records'
 * offset column).
 *
 * Random problems of every generator shape with a random part of the
 * buffers fixed where a valid plan put them: every offset strategy and
 * "auto" plan the rest around them, every plan passes mp_plan_check_fixed
 * (valid, fixed buffers in place), "auto" is never above a strategy it
 * runs; all fixed gives back that plan.  Then the errors: misaligned and
 * colliding fixed offsets (both buffers named, with file lines from the
 * reader), strategies that cannot take them, a plan that moved one.
 * Pools: every plan through mp_pool_plan_check, capacities kept, pools
 * filled in order, the checker's own errors. */
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
        size_t n = 2 + next(&st) % (iter < 100 ? 60 : 398); /* at most 399 */
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
    /* "exact" plans around them too: 2 (64 B) fits below 1's 112 */
    if (MP_CHECK_OK(mp_plan_compute_fixed(b, 3, ok, "exact", &p))) {
        MP_CHECK_OK(mp_plan_check_fixed(b, 3, ok, &p, NULL));
        MP_CHECK(p.footprint == 162 && p.offset[2] == 0 && !strcmp(p.strategy, "exact"));
        mp_plan_free(&p);
    }
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
    mp_test_write_file(path, "id,first,last,size,offset\n1,0,4,100,\n2,1,2,8,\n");
    MP_CHECK_OK(mp_records_read_fixed(path, &b, &n, &fx)); /* an empty column: nothing fixed */
    MP_CHECK(fx == NULL && n == 2);
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

/* ---- pools ------------------------------------------------------------------ */

/* A pool plan written and read back, with its pools given and with the
 * pools taken from the file: the same pools, offsets and footprints, and
 * valid by the checker. */
static void pool_round_trip(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                            const mp_pool_plan_t *p) {
    char dir[] = "/tmp/mp_pools_XXXXXX";
    if (!MP_CHECK(mkdtemp(dir) != NULL)) return;
    const char *path = mp_test_path(dir, "p.csv");
    MP_CHECK_OK(mp_pool_plan_write_csv(path, b, n, pools, p));
    mp_pool_plan_t q;
    if (MP_CHECK_OK(mp_pool_plan_read_csv(path, b, n, pools, k, &q))) {
        MP_CHECK(q.n_pools == k && q.name == NULL);
        for (size_t i = 0; i < n; i++) MP_CHECK(q.pool[i] == p->pool[i] && q.offset[i] == p->offset[i]);
        for (size_t j = 0; j < k; j++) MP_CHECK(q.footprint[j] == p->footprint[j]);
        MP_CHECK_OK(mp_pool_plan_check(b, n, pools, k, &q));
        mp_pool_plan_free(&q);
    }
    if (MP_CHECK_OK(mp_pool_plan_read_csv(path, b, n, NULL, 0, &q))) {
        /* the file's pools in order of first appearance: map them by name */
        for (size_t i = 0; i < n; i++) {
            MP_CHECK(q.pool[i] < q.n_pools && q.offset[i] == p->offset[i]);
            MP_CHECK(q.pool[i] < q.n_pools && !strcmp(q.name[q.pool[i]], pools[p->pool[i]].name));
        }
        mp_pool_plan_free(&q);
    }
    unlink(path);
    rmdir(dir);
}

static void test_pools(void) {
    static mp_buffer_t b[300];
    uint64_t st = 31;
    for (int iter = 0; iter < 80; iter++) {
        size_t n = 2 + next(&st) % 298; /* at most 299 */
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 500 + (uint64_t)iter);
        mp_plan_t a;
        MP_CHECK_OK(mp_plan_compute(b, n, "auto", &a));
        uint64_t f = a.footprint;
        mp_plan_free(&a);
        mp_pool_t pools[3] = {{"fast", f / (2 + iter % 6)}, {"mid", f / 3}, {"dram", 0}};
        if (!pools[0].capacity) pools[0].capacity = 1;
        if (!pools[1].capacity) pools[1].capacity = 1;
        const char *strategy = iter % 2 ? "auto" : "greedy-size";
        mp_pool_plan_t p;
        for (size_t k = 2; k <= 3; k++) {
            mp_pool_t *use = k == 2 ? (mp_pool_t[]){pools[0], pools[2]} : pools;
            if (!MP_CHECK_OK(mp_plan_pools(b, n, use, k, strategy, &p))) continue;
            if (!MP_CHECK_OK(mp_pool_plan_check(b, n, use, k, &p)))
                fprintf(stderr, "  pools, problem %d: %s\n", iter, mp_last_error());
            MP_CHECK(p.footprint[0] <= use[0].capacity);
            size_t in0 = 0;
            bool one_fits = false; /* then the fast pool cannot stay empty */
            for (size_t i = 0; i < n; i++) {
                in0 += p.pool[i] == 0;
                one_fits |= mp_buffer_aligned_size(&b[i]) <= use[0].capacity;
            }
            MP_CHECK((in0 > 0) == one_fits);
            if (iter % 8 == 0) pool_round_trip(b, n, use, k, &p);
            mp_pool_plan_free(&p);
        }
        /* a fast pool as large as auto's plan takes everything */
        mp_pool_t big[2] = {{"fast", f}, {"dram", 0}};
        if (MP_CHECK_OK(mp_plan_pools(b, n, big, 2, "auto", &p))) {
            size_t in0 = 0;
            for (size_t i = 0; i < n; i++) in0 += p.pool[i] == 0;
            MP_CHECK(in0 == n && p.footprint[1] == 0);
            mp_pool_plan_free(&p);
        }
    }
    /* ten buffers of 10 bytes live together, 35 bytes fast: three fit */
    for (size_t i = 0; i < 10; i++) b[i] = (mp_buffer_t){i, 0, 5, 10, 0};
    mp_pool_t two[2] = {{"fast", 35}, {"dram", 0}};
    mp_pool_plan_t p;
    if (MP_CHECK_OK(mp_plan_pools(b, 10, two, 2, "greedy-size", &p))) {
        size_t in0 = 0;
        for (size_t i = 0; i < 10; i++) in0 += p.pool[i] == 0;
        MP_CHECK(in0 == 3 && p.footprint[0] == 30 && p.footprint[1] == 70);
        MP_CHECK_OK(mp_pool_plan_check(b, 10, two, 2, &p));
        /* the checker: over capacity, an overlap, a pool that does not exist */
        mp_pool_t tight[2] = {{"fast", 25}, {"dram", 0}};
        MP_CHECK(mp_pool_plan_check(b, 10, tight, 2, &p) == MP_ECONFLICT);
        MP_CHECK(says("pool 'fast'", "exceeds its capacity 25"));
        size_t i0 = 0;
        while (p.pool[i0] != 0) i0++;
        uint64_t keep = p.offset[i0];
        p.offset[i0] = p.offset[i0] == 0 ? 10 : 0;
        MP_CHECK(mp_pool_plan_check(b, 10, two, 2, &p) == MP_ECONFLICT && says("pool 'fast'", "overlaps"));
        p.offset[i0] = keep;
        p.pool[i0] = 2;
        MP_CHECK(mp_pool_plan_check(b, 10, two, 2, &p) == MP_ECONFLICT && says("pool 2 of 2", NULL));
        p.pool[i0] = 0;
        char dir[] = "/tmp/mp_pools_XXXXXX";
        if (MP_CHECK(mkdtemp(dir) != NULL)) {
            const char *path = mp_test_path(dir, "p.csv");
            MP_CHECK_OK(mp_pool_plan_write_csv(path, b, 10, two, &p));
            FILE *fp = fopen(path, "r");
            char line[128] = "";
            MP_CHECK(fp && fgets(line, sizeof line, fp) && !strcmp(line, "id,offset,size,pool\n"));
            if (fp) fclose(fp);
            /* a pool the file names that is not given; a plain plan; no pool column */
            mp_pool_t other[2] = {{"sram", 35}, {"dram", 0}};
            mp_pool_plan_t q;
            MP_CHECK(mp_pool_plan_read_csv(path, b, 10, other, 2, &q) == MP_EPARSE && q.pool == NULL);
            MP_CHECK(says("field 'pool': 'fast' is not one of the 2 pools given", NULL));
            mp_plan_t plain;
            MP_CHECK(mp_plan_read_csv(path, b, 10, &plain) == MP_EPARSE);
            MP_CHECK(says("header: column 'pool': this is a pool plan", NULL));
            FILE *w = fopen(path, "w");
            if (w) fputs("id,offset\n", w), fclose(w);
            MP_CHECK(mp_pool_plan_read_csv(path, b, 10, NULL, 0, &q) == MP_EPARSE);
            MP_CHECK(says("header: need a column 'pool'", NULL));
            unlink(path);
            rmdir(dir);
        }
        mp_pool_plan_free(&p);
    }
    /* errors */
    mp_pool_t small[2] = {{"fast", 35}, {"sram", 40}};
    MP_CHECK(mp_plan_pools(b, 10, small, 2, "auto", &p) == MP_EINVAL && p.pool == NULL);
    MP_CHECK(says("do not fit in the pools", "'sram'"));
    MP_CHECK(mp_plan_pools(b, 10, two, 2, "objects-naive", &p) == MP_EINVAL && says("objects-naive", NULL));
    MP_CHECK(mp_plan_pools(b, 10, two, 0, "auto", &p) == MP_EINVAL);
    MP_CHECK(mp_plan_pools(b, 10, two, 2, "nope", &p) == MP_ENOTFOUND);
}

int main(void) {
    test_random();
    test_errors();
    test_records();
    test_pools();
    return mp_test_finish("test_fixed");
}
