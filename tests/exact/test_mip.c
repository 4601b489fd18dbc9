/* test_mip.c -- sekiyama2018 sec. 3.1's MIP (mip.c, solved by GLPK) as the
 * oracle of the exact search and the heuristics.
 *
 * On random problems of up to 12 buffers and on slices of MiniMalloc's hard
 * set (12 buffers live around one moment, clipped to it): the MIP's optimum
 * equals the exact search's proven optimum, its own plan passes the
 * checker at that footprint, and no offset heuristic nor "auto" goes below
 * it.  Built without GLPK, the program only says it was skipped (exit 77,
 * ctest's SKIP_RETURN_CODE). */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef MP_HAVE_GLPK
int main(void) {
    puts("skipped: GLPK not found (install libglpk-dev and re-run cmake)");
    return 77;
}
#else
#include "mip.h"

static uint64_t next(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static size_t n_compared, n_limit;

/* The MIP against the exact search and every offset heuristic on b. */
static void compare(const mp_buffer_t *b, size_t n, const char *what) {
    mp_bounds_t bd;
    if (!MP_CHECK_OK(mp_bounds_compute(b, n, &bd))) return;
    mp_exact_opts_t eo = {.time_limit = 20};
    mp_plan_t ep;
    mp_exact_report_t er;
    if (!MP_CHECK_OK(mp_exact_solve(b, n, &eo, &ep, &er))) return;
    MP_CHECK_OK(mp_plan_check(b, n, &ep, NULL));
    MP_CHECK(er.status == MP_EXACT_OPTIMAL);
    uint64_t opt = 0, *off = calloc(n ? n : 1, sizeof *off);
    mp_mip_result m = mp_mip_solve(b, n, bd.offsets, bd.naive, 20.0, &opt, off);
    MP_CHECK(m != MP_MIP_ERROR);
    if (m == MP_MIP_LIMIT) {
        n_limit++;
        fprintf(stderr, "  %s: GLPK hit its time limit\n", what);
    } else if (m == MP_MIP_OPTIMAL) {
        n_compared++;
        MP_CHECK(mp_test_check_offsets(b, n, off));
        uint64_t f = 0;
        for (size_t i = 0; i < n; i++) f = f > off[i] + mp_buffer_aligned_size(&b[i]) ? f : off[i] + mp_buffer_aligned_size(&b[i]);
        MP_CHECK_EQ_U64(f, opt);
        if (!MP_CHECK_EQ_U64(ep.footprint, opt))
            fprintf(stderr, "  %s: exact %llu, MIP %llu\n", what,
                    (unsigned long long)ep.footprint, (unsigned long long)opt);
        for (size_t s = 0; s < mp_strategy_count(); s++) {
            const mp_strategy_info_t *in = mp_strategy_info(s);
            if (in->kind == MP_KIND_OBJECTS) continue;
            uint64_t h = mp_test_plan(b, n, in->name, NULL);
            if (!MP_CHECK(h >= opt))
                fprintf(stderr, "  %s: %s %llu below the MIP optimum %llu\n", what, in->name,
                        (unsigned long long)h, (unsigned long long)opt);
        }
    }
    free(off);
    mp_plan_free(&ep);
}

/* Random problems: few distinct times and sizes (ties, exact fits), some
 * alignments. */
static void test_random(void) {
    uint64_t s = 0x9e3779b97f4a7c15ull;
    mp_buffer_t b[12];
    for (int t = 0; t < 600; t++) {
        size_t n = 1 + next(&s) % 12;
        uint64_t span = 3 + next(&s) % 8;
        for (size_t i = 0; i < n; i++) {
            uint64_t f = next(&s) % span, l = f + next(&s) % (span - f);
            uint64_t al = next(&s) % 4 == 0 ? (uint64_t)1 << (next(&s) % 4) : 0;
            b[i] = (mp_buffer_t){.id = i, .first = f, .last = l,
                                 .size = 1 + next(&s) % 7 * (1 + next(&s) % 3), .align = al};
        }
        char what[64];
        snprintf(what, sizeof what, "random #%d (n=%zu)", t, n);
        compare(b, n, what);
    }
}

static int by_first(const void *x, const void *y) {
    const mp_buffer_t *a = x, *b = y;
    return a->first < b->first ? -1 : a->first > b->first ? 1 : a->id < b->id ? -1 : a->id > b->id;
}

/* Slices of the hard set: the 12 buffers live at several moments, with
 * their lifetimes as they are (each slice is a problem of its own). */
static void test_hard_slices(const char *dir) {
    static const char *const files[] = {"A", "D", "J", "K"};
    size_t done = 0;
    for (size_t f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/minimalloc/challenging/%s.1048576.csv", dir, files[f]);
        mp_buffer_t *all;
        size_t n;
        if (mp_records_read(path, &all, &n) != MP_OK) {
            printf("  %s: not readable (%s), slice skipped\n", path, mp_last_error());
            continue;
        }
        qsort(all, n, sizeof *all, by_first);
        uint64_t tmax = 0;
        for (size_t i = 0; i < n; i++) tmax = tmax > all[i].last ? tmax : all[i].last;
        for (int k = 1; k <= 4; k++) { /* moments at 1/5 .. 4/5 of the run */
            uint64_t t = tmax / 5 * (uint64_t)k;
            mp_buffer_t sl[12];
            size_t m = 0;
            for (size_t i = 0; i < n && m < 12; i++)
                if (all[i].first <= t && t <= all[i].last) sl[m++] = all[i];
            /* and neighbours in time, until 12 */
            for (size_t i = 0; i < n && m < 12; i++)
                if (all[i].first > t) sl[m++] = all[i];
            char what[64];
            snprintf(what, sizeof what, "%s slice %d (n=%zu)", files[f], k, m);
            compare(sl, m, what);
            done++;
        }
        free(all);
    }
    printf("  %zu hard-set slices\n", done);
}

int main(int argc, char **argv) {
    test_random();
    if (argc > 1) test_hard_slices(argv[1]);
    else puts("  no dsa-bench directory given: hard-set slices skipped");
    printf("  %zu problems compared with the MIP, %zu stopped by its time limit\n", n_compared,
           n_limit);
    MP_CHECK(n_limit * 10 <= n_compared); /* the oracle must actually decide */
    return mp_test_finish("mip");
}
#endif
