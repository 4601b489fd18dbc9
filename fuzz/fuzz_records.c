/* fuzz_records.c -- libFuzzer target: a records CSV through everything that
 * plans it.
 *
 * The input is read as a records file (mp_records_read); a readable problem
 * gets its bounds, every strategy's plan (each proven by the checker and
 * compared with the bounds; "auto" no larger than any of its candidates), a
 * short exact search on small problems (no larger than auto's plan), the
 * SVG writer, and two round trips: records written and read back give the
 * same buffers, a plan written as CSV and read back gives the same offsets.
 * The same text is read with its fixed offsets in pools (the offset and
 * pool columns, two pools given): accepted, the pools are planned around
 * the fixed buffers, the plan must keep them and pass the checker, and
 * survive the pool plan CSV.  A reader's refusal must come with a message. */
#include "fuzz.h"

#include <memplan_exact.h>
#include <stdlib.h>
#include <string.h>

/* Every strategy on every input: the slowest (objects-mincostflow and the
 * exact search) are superlinear, so problems above this size are skipped
 * once read, and the exact search gets a node limit instead of its default
 * five seconds. */
enum { MAX_BUFFERS = 1000, EXACT_MAX_BUFFERS = 24 };

static void round_trip_records(const mp_buffer_t *b, size_t n) {
    const char *path = fz_tmp("records.csv");
    FZ_CHECK(mp_records_write(path, b, n) == MP_OK, "mp_records_write failed");
    mp_buffer_t *c = NULL;
    size_t m = 0;
    FZ_CHECK(mp_records_read(path, &c, &m) == MP_OK, "records written cannot be read back");
    FZ_CHECK(m == n, "records read back: count differs");
    for (size_t i = 0; i < n; i++) {
        uint64_t a1 = b[i].align > 1 ? b[i].align : 1, a2 = c[i].align > 1 ? c[i].align : 1;
        FZ_CHECK(b[i].id == c[i].id && b[i].first == c[i].first && b[i].last == c[i].last &&
                     b[i].size == c[i].size && a1 == a2,
                 "records read back differ");
    }
    free(c);
}

static void round_trip_plan(const mp_buffer_t *b, size_t n, const mp_plan_t *p) {
    const char *path = fz_tmp("plan.csv");
    FZ_CHECK(mp_plan_write_csv(path, b, n, p) == MP_OK, "mp_plan_write_csv failed");
    mp_plan_t q;
    FZ_CHECK(mp_plan_read_csv(path, b, n, &q) == MP_OK, "plan written cannot be read back");
    FZ_CHECK(q.n == n && q.footprint == p->footprint && !q.object == !p->object,
             "plan read back differs");
    for (size_t i = 0; i < n; i++)
        FZ_CHECK(q.offset[i] == p->offset[i], "plan read back: offsets differ");
    FZ_CHECK(mp_plan_check(b, n, &q, NULL) == MP_OK, "plan read back fails the checker");
    mp_plan_free(&q);
}

/* The text read with fixed offsets in two pools (mp_records_read_pools):
 * planned around them, checked, and through the pool plan CSV. */
static void pools_fixed(const char *path) {
    static const mp_pool_t pools[2] = {{"fast", 4096}, {"dram", 0}};
    mp_buffer_t *b = NULL;
    uint64_t *fixed = NULL;
    size_t n = 0, *fpool = NULL;
    mp_status st = mp_records_read_pools(path, pools, 2, &b, &n, &fixed, &fpool);
    if (st != MP_OK) {
        FZ_CHECK(b == NULL && fixed == NULL && fpool == NULL, "a failed pool read left arrays");
        FZ_CHECK(mp_last_error()[0] != 0, "a failed pool read without a message");
        return;
    }
    FZ_CHECK(!fixed == !fpool, "fixed offsets without their pools");
    for (size_t i = 0; fixed && i < n; i++)
        FZ_CHECK(fixed[i] == MP_NOT_FIXED || fpool[i] < 2, "a fixed buffer in no pool given");
    if (n <= MAX_BUFFERS) {
        mp_pool_opts_t o = {.fixed = fixed, .fixed_pool = fpool};
        mp_pool_plan_t p;
        st = mp_plan_pools_opts(b, n, pools, 2, &o, &p, NULL);
        FZ_CHECK(st == MP_OK || st == MP_ENOMEM, "planning pools around valid fixed offsets failed");
        if (st == MP_OK) {
            FZ_CHECK(mp_pool_plan_check_fixed(b, n, pools, 2, fixed, fpool, &p) == MP_OK,
                     "a pool plan fails the checker or moved a fixed buffer");
            const char *out = fz_tmp("pools.csv");
            FZ_CHECK(mp_pool_plan_write_csv(out, b, n, pools, &p) == MP_OK, "mp_pool_plan_write_csv failed");
            mp_pool_plan_t q;
            FZ_CHECK(mp_pool_plan_read_csv(out, b, n, pools, 2, &q) == MP_OK,
                     "a pool plan written cannot be read back");
            for (size_t i = 0; i < n; i++)
                FZ_CHECK(q.pool[i] == p.pool[i] && q.offset[i] == p.offset[i], "pool plan read back differs");
            mp_pool_plan_free(&q);
            mp_pool_plan_free(&p);
        }
    }
    free(b), free(fixed), free(fpool);
}

/* The candidates of "auto" (src/offsets/auto.c): it keeps the smallest of
 * their plans, so its footprint can exceed none of theirs. */
static const char *const AUTO_CANDIDATES[] = {"greedy-size", "strip-bestfit", "greedy-breadth",
                                              "smartpool-bestfit", "smartpool-firstfit", "inorder"};

static int auto_candidate(const char *name) {
    for (size_t i = 0; i < sizeof AUTO_CANDIDATES / sizeof AUTO_CANDIDATES[0]; i++)
        if (strcmp(name, AUTO_CANDIDATES[i]) == 0) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FZ_MAX_INPUT) return 0;
    mp_buffer_t *b = NULL;
    size_t n = 0;
    const char *path = fz_file(data, size);
    pools_fixed(path);
    mp_status st = mp_records_read(path, &b, &n);
    if (st != MP_OK) {
        FZ_CHECK(b == NULL, "a failed read left a buffer array");
        FZ_CHECK(mp_last_error()[0] != 0, "a failed read without a message");
        return 0;
    }
    FZ_CHECK(mp_problem_validate(b, n) == MP_OK, "the reader returned an invalid problem");
    FZ_CHECK(fz_nul_only_in_comments(data, size, 0), "a NUL byte outside a comment was accepted");
    if (n > MAX_BUFFERS) {
        free(b);
        return 0;
    }
    mp_bounds_t bd;
    FZ_CHECK(mp_bounds_compute(b, n, &bd) == MP_OK, "mp_bounds_compute failed");
    FZ_CHECK(bd.offsets <= bd.objects && bd.objects <= bd.naive, "bounds out of order");
    round_trip_records(b, n);

    uint64_t best_candidate = UINT64_MAX, auto_footprint = UINT64_MAX;
    for (size_t i = 0; i < mp_strategy_count(); i++) {
        const mp_strategy_info_t *info = mp_strategy_info(i);
        if (strcmp(info->name, "exact") == 0) continue;   /* below, with limits */
        if (info->all_limit && n > info->all_limit) continue;
        mp_plan_t p;
        st = mp_plan_compute(b, n, info->name, &p);
        if (st == MP_ENOMEM) continue;
        FZ_CHECK(st == MP_OK, info->name);
        fz_check_plan(b, n, &p, &bd, info->name);
        if (auto_candidate(info->name) && p.footprint < best_candidate) best_candidate = p.footprint;
        if (strcmp(info->name, "auto") == 0) auto_footprint = p.footprint;
        if (i == 0 || info->kind == MP_KIND_OBJECTS) round_trip_plan(b, n, &p);
        if (i == 0) FZ_CHECK(mp_plan_write_svg("/dev/null", b, n, &p, bd.offsets, "fuzz") == MP_OK,
                             "mp_plan_write_svg failed");
        mp_plan_free(&p);
    }
    FZ_CHECK(auto_footprint == UINT64_MAX || best_candidate == UINT64_MAX ||
                 auto_footprint <= best_candidate,
             "auto is larger than one of its candidates");
    if (n <= EXACT_MAX_BUFFERS) {
        mp_exact_opts_t o;
        mp_exact_opts_default(&o);
        o.time_limit = 1.0;
        o.node_limit = 20000;
        o.nodes_per_buffer = 0;
        mp_exact_report_t rep;
        mp_plan_t p;
        st = mp_exact_solve(b, n, &o, &p, &rep);
        if (st == MP_OK) {
            fz_check_plan(b, n, &p, &bd, "exact");
            FZ_CHECK(rep.lower_bound >= bd.offsets && rep.lower_bound <= p.footprint,
                     "exact: lower bound out of place");
            FZ_CHECK(auto_footprint == UINT64_MAX || p.footprint <= auto_footprint,
                     "exact is larger than auto");
            mp_plan_free(&p);
        } else {
            FZ_CHECK(st == MP_ENOMEM, "mp_exact_solve failed");
        }
    }
    free(b);
    return 0;
}
