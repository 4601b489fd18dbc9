/* fuzz_plan_csv.c -- libFuzzer target: a plan CSV read for a problem, then
 * the plan checker.
 *
 * The input is a records file and a plan file separated by a line "%%"
 * (records, "\n%%\n", plan); without the separator the whole input is the
 * plan, read for a fixed problem of five buffers (two aligned) so that
 * mutations of a plan alone reach the checker.  A plan the reader accepts
 * goes through mp_plan_check: accepted, its footprint must match the
 * checker's and respect the offsets bound; refused, it must say why.  The
 * same text is also read as a pool plan (pools from the file, then two given
 * pools) and checked pool by pool. */
#include "fuzz.h"

#include <stdlib.h>

/* The checker is O(n log n); the cap only keeps single inputs fast. */
enum { MAX_BUFFERS = 4000 };

static const mp_buffer_t fixed[] = {
    {.id = 0, .first = 0, .last = 1, .size = 100, .align = 0},
    {.id = 1, .first = 1, .last = 2, .size = 200, .align = 64},
    {.id = 2, .first = 2, .last = 3, .size = 100, .align = 0},
    {.id = 7, .first = 0, .last = 3, .size = 24, .align = 8},
    {.id = 9, .first = 3, .last = 3, .size = 1, .align = 0},
};

/* The text as a pool plan: with the file's pools and with two given ones. */
static void pool_plan(const uint8_t *text, size_t len, const mp_buffer_t *b, size_t n) {
    static const mp_pool_t given[2] = {{"fast", 256}, {"dram", 0}};
    for (int round = 0; round < 2; round++) {
        mp_pool_plan_t p;
        mp_status st = mp_pool_plan_read_csv(fz_file(text, len), b, n, round ? given : NULL,
                                             round ? 2 : 0, &p);
        if (st != MP_OK) {
            FZ_CHECK(p.pool == NULL && p.name == NULL, "a failed pool read left a plan");
            FZ_CHECK(mp_last_error()[0] != 0, "a failed pool read without a message");
            continue;
        }
        FZ_CHECK(p.n == n && (round || p.name != NULL || p.n_pools == 0), "pool plan shape");
        mp_pool_t found[16];
        const mp_pool_t *pools = given;
        if (!round) {
            FZ_CHECK(p.n_pools <= 16, "more than 16 pools read");
            for (size_t j = 0; j < p.n_pools; j++) found[j] = (mp_pool_t){p.name[j], 0};
            pools = found;
        }
        st = mp_pool_plan_check(b, n, pools, p.n_pools, &p);
        FZ_CHECK(st == MP_OK || mp_last_error()[0] != 0, "a refused pool plan without a message");
        mp_pool_plan_free(&p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FZ_MAX_INPUT) return 0;
    const uint8_t *plan_text;
    size_t plan_n;
    size_t rec_n = fz_split(data, size, "\n%%\n", &plan_text, &plan_n);
    mp_buffer_t *b = NULL;
    const mp_buffer_t *pb = fixed;
    size_t n = sizeof fixed / sizeof fixed[0];
    if (plan_text) {
        if (mp_records_read(fz_file(data, rec_n), &b, &n) != MP_OK) return 0;
        pb = b;
        if (n > MAX_BUFFERS) goto done;
    } else {
        plan_text = data;
        plan_n = size;
    }
    mp_bounds_t bd;
    FZ_CHECK(mp_bounds_compute(pb, n, &bd) == MP_OK, "mp_bounds_compute failed");
    pool_plan(plan_text, plan_n, pb, n);
    mp_plan_t p;
    mp_status st = mp_plan_read_csv(fz_file(plan_text, plan_n), pb, n, &p);
    if (st != MP_OK) {
        FZ_CHECK(p.offset == NULL && p.n == 0, "a failed read left a plan");
        FZ_CHECK(mp_last_error()[0] != 0, "a failed read without a message");
        goto done;
    }
    FZ_CHECK(p.n == n, "plan read for n buffers has another count");
    FZ_CHECK(fz_nul_only_in_comments(plan_text, plan_n, 0), "a NUL byte outside a comment was accepted");
    mp_check_report_t rep;
    st = mp_plan_check(pb, n, &p, &rep);
    if (st == MP_OK) {
        FZ_CHECK(rep.footprint == p.footprint, "checker and reader disagree on the footprint");
        FZ_CHECK(p.footprint >= bd.offsets, "a valid plan below the offsets lower bound");
        FZ_CHECK(!p.object || p.footprint >= bd.objects, "a valid object plan below the objects bound");
    } else {
        FZ_CHECK(st == MP_ECONFLICT || st == MP_EINVAL || st == MP_EOVERFLOW,
                 "unexpected checker status");
        FZ_CHECK(mp_last_error()[0] != 0, "a refused plan without a message");
    }
    mp_plan_free(&p);
done:
    free(b);
    return 0;
}
