/* test_pools_fixed.c -- pools with fixed buffers and pools with a time
 * limit (src/offsets/pools.c, the records' pool column).
 *
 * Random problems of every generator shape: a pool plan is made, a random
 * part of its buffers is fixed where it put them (so the fixed offsets are
 * valid in their pools), and mp_plan_pools_opts plans the rest around
 * them; every plan passes mp_pool_plan_check_fixed, keeps each fixed buffer
 * in its pool at its offset, survives the plan CSV both ways, and reads
 * back from a records CSV with offset and pool columns.  The errors, each
 * naming what it must.  With a time limit: the plan valid, the first pool
 * holding no fewer bytes than without the limit, each pool's reported
 * bound a true bound (at most the optimum of the buffers it holds, proven
 * by the exact search on small pools).  Fixed buffers with a time limit:
 * tests/fixed/test_anytime_fixed.c. */
#include "harness.h"
#include "gen.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool says(const char *a, const char *b) {
    bool ok = strstr(mp_last_error(), a) && (!b || strstr(mp_last_error(), b));
    if (!ok) fprintf(stderr, "  message: %s\n", mp_last_error());
    return ok;
}

static uint64_t pool_bytes(const mp_buffer_t *b, size_t n, const mp_pool_plan_t *p, size_t j) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        if (p->pool[i] == j) s += mp_buffer_aligned_size(&b[i]);
    return s;
}

/* The plan written as CSV and read back (pools given): the same plan, and
 * valid with the fixed buffers in place. */
static void csv_round_trip(const char *dir, const mp_buffer_t *b, size_t n, const mp_pool_t *pools,
                           size_t k, const uint64_t *fixed, const size_t *fp,
                           const mp_pool_plan_t *p) {
    const char *path = mp_test_path(dir, "plan.csv");
    MP_CHECK_OK(mp_pool_plan_write_csv(path, b, n, pools, p));
    mp_pool_plan_t q;
    if (!MP_CHECK_OK(mp_pool_plan_read_csv(path, b, n, pools, k, &q))) return;
    for (size_t i = 0; i < n; i++) MP_CHECK(q.pool[i] == p->pool[i] && q.offset[i] == p->offset[i]);
    MP_CHECK_OK(mp_pool_plan_check_fixed(b, n, pools, k, fixed, fp, &q));
    mp_pool_plan_free(&q);
    unlink(path);
}

/* The problem written as records with offset and pool columns (a fixed
 * buffer of pool 0 leaves the pool empty: the first is the default) and
 * read back with mp_records_read_pools: the same buffers, offsets, pools. */
static void records_round_trip(const char *dir, const mp_buffer_t *b, size_t n,
                               const mp_pool_t *pools, size_t k, const uint64_t *fixed,
                               const size_t *fp) {
    const char *path = mp_test_path(dir, "records.csv");
    FILE *f = fopen(path, "w");
    if (!MP_CHECK(f != NULL)) return;
    fprintf(f, "id,first,last,size,align,pool,offset\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%llu,%llu,%llu,%llu,%llu,", (unsigned long long)b[i].id,
                (unsigned long long)b[i].first, (unsigned long long)b[i].last,
                (unsigned long long)b[i].size, (unsigned long long)(b[i].align ? b[i].align : 1));
        if (fixed[i] != MP_NOT_FIXED)
            fprintf(f, "%s,%llu\n", fp[i] ? pools[fp[i]].name : "", (unsigned long long)fixed[i]);
        else
            fprintf(f, ",\n");
    }
    fclose(f);
    mp_buffer_t *c;
    uint64_t *cf;
    size_t m, *cp;
    if (MP_CHECK_OK(mp_records_read_pools(path, pools, k, &c, &m, &cf, &cp))) {
        MP_CHECK(m == n && cf && cp);
        for (size_t i = 0; cf && cp && i < n && i < m; i++) {
            MP_CHECK(c[i].id == b[i].id && cf[i] == fixed[i]);
            MP_CHECK(fixed[i] == MP_NOT_FIXED || cp[i] == fp[i]);
        }
        free(c), free(cf), free(cp);
    }
    unlink(path);
}

static void test_random(void) {
    static mp_buffer_t b[300];
    static uint64_t fixed[300];
    static size_t fp[300];
    char dir[] = "/tmp/mp_poolsfx_XXXXXX";
    if (!MP_CHECK(mkdtemp(dir) != NULL)) return;
    uint64_t st = 91;
    for (int iter = 0; iter < 70; iter++) {
        size_t n = 2 + mp_gen_next(&st) % 298;
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 700 + (uint64_t)iter);
        mp_plan_t a;
        if (!MP_CHECK_OK(mp_plan_compute(b, n, "auto", &a))) continue;
        uint64_t f = a.footprint;
        mp_plan_free(&a);
        mp_pool_t pools[3] = {{"fast", f / (2 + iter % 5)}, {"mid", f / 3}, {"dram", 0}};
        if (!pools[0].capacity) pools[0].capacity = 1;
        if (!pools[1].capacity) pools[1].capacity = 1;
        size_t k = 2 + iter % 2;
        if (k == 2) pools[1] = pools[2];
        mp_pool_plan_t p0, p;
        if (!MP_CHECK_OK(mp_plan_pools(b, n, pools, k, "greedy-size", &p0))) continue;
        unsigned every = 1 + (unsigned)(iter % 4);
        size_t nf = 0;
        for (size_t i = 0; i < n; i++) {
            bool fix = mp_gen_next(&st) % every == 0;
            fixed[i] = fix ? p0.offset[i] : MP_NOT_FIXED;
            fp[i] = fix ? p0.pool[i] : 0;
            nf += fix;
        }
        mp_pool_plan_free(&p0);
        const char *strategy = iter % 3 == 0 ? "greedy-size" : iter % 3 == 1 ? "strip-bestfit" : "auto";
        mp_pool_opts_t o = {.strategy = strategy, .fixed = fixed, .fixed_pool = fp};
        mp_exact_report_t rep[3];
        if (!MP_CHECK_OK(mp_plan_pools_opts(b, n, pools, k, &o, &p, rep))) {
            fprintf(stderr, "  problem %d (%zu fixed): %s\n", iter, nf, mp_last_error());
            continue;
        }
        if (!MP_CHECK_OK(mp_pool_plan_check_fixed(b, n, pools, k, fixed, fp, &p)))
            fprintf(stderr, "  problem %d: %s\n", iter, mp_last_error());
        for (size_t i = 0; i < n; i++)
            if (fixed[i] != MP_NOT_FIXED) MP_CHECK(p.pool[i] == fp[i] && p.offset[i] == fixed[i]);
        for (size_t j = 0; j < k; j++) {
            MP_CHECK(!pools[j].capacity || p.footprint[j] <= pools[j].capacity);
            MP_CHECK(rep[j].footprint == p.footprint[j] && rep[j].lower_bound <= rep[j].footprint);
            MP_CHECK((rep[j].status == MP_EXACT_OPTIMAL) == (rep[j].lower_bound == rep[j].footprint));
        }
        if (iter % 5 == 0) {
            csv_round_trip(dir, b, n, pools, k, fixed, fp, &p);
            records_round_trip(dir, b, n, pools, k, fixed, fp);
        }
        mp_pool_plan_free(&p);
    }
    rmdir(dir);
}

static void test_errors(void) {
    /* 1 and 2 live together; 3 later */
    mp_buffer_t b[] = {{10, 0, 5, 100, 16}, {11, 3, 8, 50, 0}, {12, 6, 9, 64, 0}};
    mp_pool_t pools[2] = {{"fast", 128}, {"dram", 0}};
    uint64_t fx[3] = {0, 100, MP_NOT_FIXED};
    size_t same[3] = {0, 1, 0}, both0[3] = {0, 0, 0}, bad_pool[3] = {0, 2, 0};
    mp_pool_plan_t p;
    mp_pool_opts_t o = {.fixed = fx, .fixed_pool = same};
    /* the same addresses in two pools: no collision; in one, both named */
    uint64_t fx0[3] = {0, 0, MP_NOT_FIXED};
    o.fixed = fx0;
    if (MP_CHECK_OK(mp_plan_pools_opts(b, 3, pools, 2, &o, &p, NULL))) {
        MP_CHECK_OK(mp_pool_plan_check_fixed(b, 3, pools, 2, fx0, same, &p));
        MP_CHECK(p.pool[0] == 0 && p.pool[1] == 1 && p.offset[1] == 0);
        /* the checker: a fixed buffer in another pool, or moved in its own */
        MP_CHECK(mp_pool_plan_check_fixed(b, 3, pools, 2, fx0, both0, &p) == MP_ECONFLICT);
        MP_CHECK(says("id 11", "not at its fixed offset 0 in pool 'fast'"));
        uint64_t moved[3] = {0, 64, MP_NOT_FIXED};
        MP_CHECK(mp_pool_plan_check_fixed(b, 3, pools, 2, moved, same, &p) == MP_ECONFLICT);
        MP_CHECK(says("is at 0 in pool 'dram'", "fixed offset 64 in pool 'dram'"));
        mp_pool_plan_free(&p);
    }
    o.fixed_pool = both0;
    MP_CHECK(mp_plan_pools_opts(b, 3, pools, 2, &o, &p, NULL) == MP_EINVAL && p.pool == NULL);
    MP_CHECK(says("id 10", "id 11") && says("in pool 'fast'", NULL));
    /* beyond the capacity: the buffer, the pool and the capacity named */
    o.fixed = fx, o.fixed_pool = both0;
    MP_CHECK(mp_plan_pools_opts(b, 3, pools, 2, &o, &p, NULL) == MP_EINVAL);
    MP_CHECK(says("id 11", "ends at 150, beyond the capacity 128 of pool 'fast'"));
    /* without fixed_pool every fixed buffer is in the first pool: the same */
    o.fixed_pool = NULL;
    MP_CHECK(mp_plan_pools_opts(b, 3, pools, 2, &o, &p, NULL) == MP_EINVAL);
    MP_CHECK(says("id 11", "beyond the capacity 128 of pool 'fast'"));
    o.fixed_pool = bad_pool;
    MP_CHECK(mp_plan_pools_opts(b, 3, pools, 2, &o, &p, NULL) == MP_EINVAL && says("id 11", "pool 2 of 2"));
    uint64_t mis[3] = {8, MP_NOT_FIXED, MP_NOT_FIXED};
    o.fixed = mis, o.fixed_pool = same;
    MP_CHECK(mp_plan_pools_opts(b, 3, pools, 2, &o, &p, NULL) == MP_EINVAL);
    MP_CHECK(says("id 10", "alignment 16"));
    /* a time limit with fixed buffers: each stays in its pool, 12 goes
     * into fast beside 10 (they never live together); both pools are
     * proven optimal, fast at the end of its fixed buffer */
    o.fixed = fx0, o.fixed_pool = same, o.time_limit = 0.1;
    mp_exact_report_t tr[2];
    if (MP_CHECK_OK(mp_plan_pools_opts(b, 3, pools, 2, &o, &p, tr))) {
        MP_CHECK_OK(mp_pool_plan_check_fixed(b, 3, pools, 2, fx0, same, &p));
        MP_CHECK(p.pool[2] == 0 && p.footprint[0] == 112 && p.footprint[1] == 50);
        MP_CHECK(tr[0].status == MP_EXACT_OPTIMAL && tr[0].lower_bound == 112);
        MP_CHECK(tr[1].status == MP_EXACT_OPTIMAL && tr[1].lower_bound == 50);
        mp_pool_plan_free(&p);
    }
    /* a time limit: auto only */
    mp_pool_opts_t t = {.strategy = "greedy-size", .time_limit = 0.1};
    MP_CHECK(mp_plan_pools_opts(b, 3, pools, 2, &t, &p, NULL) == MP_EINVAL && says("auto only", NULL));
    /* the fixed buffers of a pool the others never reach keep it */
    mp_pool_t three[3] = {{"fast", 1024}, {"mid", 1024}, {"dram", 0}};
    size_t in2[3] = {2, 0, 0};
    uint64_t f2[3] = {32, MP_NOT_FIXED, MP_NOT_FIXED};
    mp_pool_opts_t u = {.fixed = f2, .fixed_pool = in2};
    mp_exact_report_t rep[3];
    if (MP_CHECK_OK(mp_plan_pools_opts(b, 3, three, 3, &u, &p, rep))) {
        MP_CHECK(p.pool[0] == 2 && p.offset[0] == 32 && p.footprint[2] == 144 && p.footprint[1] == 0);
        /* no plan of the pool ends below its fixed buffer: 32 + 112 */
        MP_CHECK(rep[2].footprint == 144 && rep[2].lower_bound == 144 && rep[2].status == MP_EXACT_OPTIMAL);
        MP_CHECK_OK(mp_pool_plan_check_fixed(b, 3, three, 3, f2, in2, &p));
        mp_pool_plan_free(&p);
    }
}

static void test_reader(void) {
    char dir[] = "/tmp/mp_poolsrd_XXXXXX";
    if (!MP_CHECK(mkdtemp(dir) != NULL)) return;
    const char *path = mp_test_path(dir, "r.csv");
    mp_pool_t pools[2] = {{"fast", 256}, {"dram", 0}};
    mp_test_write_file(path, "id,first,last,size,offset,pool\n1,0,4,100,0,fast\n2,2,6,50,,\n"
                             "3,3,9,64,0,dram\n4,4,9,8,120,\n");
    mp_buffer_t *b;
    uint64_t *fx;
    size_t n, *fp;
    if (MP_CHECK_OK(mp_records_read_pools(path, pools, 2, &b, &n, &fx, &fp))) {
        MP_CHECK(n == 4 && fx[1] == MP_NOT_FIXED && fx[2] == 0 && fp[0] == 0 && fp[2] == 1 && fp[3] == 0);
        free(b), free(fx), free(fp);
    }
    MP_CHECK_OK(mp_records_read(path, &b, &n)); /* the plain reader ignores the column */
    MP_CHECK(n == 4);
    free(b);
    MP_CHECK(mp_records_read_fixed(path, &b, &n, &fx) == MP_EPARSE && b == NULL && fx == NULL);
    MP_CHECK(says(":2: field 'pool': 'fast': fixed offsets in pools need the pools", NULL));
    mp_test_write_file(path, "id,first,last,size,pool\n1,0,4,100,\n"); /* no offsets: nothing fixed */
    if (MP_CHECK_OK(mp_records_read_pools(path, pools, 2, &b, &n, &fx, &fp))) {
        MP_CHECK(fx == NULL && fp == NULL && n == 1);
        free(b);
    }
    static const char *const bad[][2] = {
        {"id,first,last,size,offset,pool\n1,0,4,100,0,sram\n", ":2: field 'pool': 'sram' is not one of the 2 pools given"},
        {"id,first,last,size,offset,pool\n1,0,4,100,,fast\n", ":2: field 'pool': 'fast' for a buffer without a fixed offset"},
        {"id,first,last,size,offset,pool\n1,0,4,100,200,fast\n", ":2: field 'offset': buffer id 1 ends at 300, beyond the capacity 256 of pool 'fast'"},
        {"id,first,last,size,offset,pool\n1,0,4,100,0,dram\n2,4,5,8,96,dram\n", ":3: field 'offset': buffer id 2 overlaps buffer id 1 (line 2), both fixed and live at once in pool 'dram'"},
        {"id,first,last,size,offset,pool,pool\n1,0,4,100,0,dram,dram\n", "column 'pool' given twice"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        mp_test_write_file(path, bad[k][0]);
        mp_status s = mp_records_read_pools(path, pools, 2, &b, &n, &fx, &fp);
        MP_CHECK((s == MP_EPARSE || s == MP_EINVAL) && b == NULL && fx == NULL && fp == NULL);
        MP_CHECK(says(bad[k][1], NULL));
    }
    mp_test_write_file(path, "id,first,last,size,offset,pool\n1,0,4,100,0,fast\n2,4,5,8,96,dram\n");
    if (MP_CHECK_OK(mp_records_read_pools(path, pools, 2, &b, &n, &fx, &fp))) /* two pools: clear */
        free(b), free(fx), free(fp);
    unlink(path);
    rmdir(dir);
}

/* Is lb at most the optimum of the buffers of pool j?  Proven by the exact
 * search where the pool holds few buffers (else only lb <= footprint). */
static bool bound_true(const mp_buffer_t *b, size_t n, const mp_pool_plan_t *p, size_t j,
                       uint64_t lb) {
    mp_buffer_t sub[16];
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (p->pool[i] == j) {
            if (m == 16) return lb <= p->footprint[j];
            sub[m++] = b[i];
        }
    mp_exact_opts_t o;
    mp_exact_opts_default(&o);
    o.time_limit = 5, o.node_limit = 0, o.nodes_per_buffer = 0;
    mp_plan_t q;
    mp_exact_report_t r;
    if (!MP_CHECK_OK(mp_exact_solve(sub, m, &o, &q, &r))) return false;
    mp_plan_free(&q);
    return r.status != MP_EXACT_OPTIMAL || lb <= r.footprint;
}

static void test_time_limit(void) {
    static mp_buffer_t b[120];
    uint64_t st = 5;
    for (int iter = 0; iter < 150; iter++) {
        size_t n = 10 + mp_gen_next(&st) % (iter < 140 ? 60 : 110);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 900 + (uint64_t)iter);
        mp_plan_t a;
        if (!MP_CHECK_OK(mp_plan_compute(b, n, "auto", &a))) continue;
        /* a fast pool of 2/8 to 6/8 of auto's plan: the improved plan of
         * all the buffers is smaller, yet fills it with fewer bytes often
         * enough (one in twelve here) that keeping the better filling matters */
        uint64_t cap = a.footprint * (2 + (uint64_t)(iter % 5)) / 8;
        mp_pool_t pools[2] = {{"fast", cap ? cap : 1}, {"dram", 0}};
        mp_plan_free(&a);
        mp_pool_plan_t p0, p;
        mp_exact_report_t r0[2], r[2];
        mp_pool_opts_t plain = {0}, timed = {.time_limit = 0.02};
        if (!MP_CHECK_OK(mp_plan_pools_opts(b, n, pools, 2, &plain, &p0, r0))) continue;
        if (MP_CHECK_OK(mp_plan_pools_opts(b, n, pools, 2, &timed, &p, r))) {
            MP_CHECK_OK(mp_pool_plan_check(b, n, pools, 2, &p));
            uint64_t b0 = pool_bytes(b, n, &p0, 0), b1 = pool_bytes(b, n, &p, 0);
            MP_CHECK(b1 >= b0); /* the first pool: never fewer bytes */
            bool same = b1 == b0;
            for (size_t i = 0; same && i < n; i++) same = (p.pool[i] == 0) == (p0.pool[i] == 0);
            if (same) MP_CHECK(p.footprint[0] <= p0.footprint[0] && p.footprint[1] <= p0.footprint[1]);
            for (size_t j = 0; j < 2; j++) {
                MP_CHECK(r[j].footprint == p.footprint[j] && r[j].lower_bound <= r[j].footprint);
                MP_CHECK(r[j].lower_bound >= r[j].load_bound);
                MP_CHECK(!r[j].hit_limit || r[j].status == MP_EXACT_GAP);
                MP_CHECK(bound_true(b, n, &p, j, r[j].lower_bound));
            }
            mp_pool_plan_free(&p);
        }
        mp_pool_plan_free(&p0);
    }
}

int main(void) {
    test_random();
    test_errors();
    test_reader();
    test_time_limit();
    return mp_test_finish("test_pools_fixed");
}
