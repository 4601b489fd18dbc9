/* test_auto_fits.c -- plain "auto" (no time limit) and its whole-plan
 * first fits (src/offsets/auto.c):
 *
 * - on random problems of every generator shape, and on problems with few
 *   distinct sizes (where the ties of a size order decide), auto's plan
 *   passes the checker and is never above greedy-by-size first fit (larger
 *   first, ties to the longer lifetime, then input order), nor above first
 *   fit in the peak-first orders it always tries when no strategy meets
 *   the bound (variants 0, 1, 10, 9 and 6 of src/exact/peak.c), all
 *   computed here by a literal first fit.
 * On idealloc's traces, plain auto meets the max-load bound: tested in
 * tests/exact/test_peak.c, which gets the path of ../shared/dsa-bench. */
#include "exact/exact.h"
#include "gen.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lowest aligned offset of b[i] clear of the placed buffers that share
 * time with it: 0 or the aligned end of one of them, whichever is lowest
 * and free (the lowest free offset is one of those). */
static uint64_t lowest_free(const mp_buffer_t *b, const uint64_t *off, const bool *placed,
                            size_t n, size_t i) {
    uint64_t best = UINT64_MAX;
    for (size_t c = 0; c <= n; c++) { /* c == n: offset 0 */
        if (c < n && (!placed[c] || b[c].first > b[i].last || b[i].first > b[c].last)) continue;
        uint64_t x = c == n ? 0 : mp__align_up(off[c] + b[c].size, b[i].align);
        bool clear = x < best;
        for (size_t d = 0; clear && d < n; d++)
            if (placed[d] && b[d].first <= b[i].last && b[i].first <= b[d].last)
                clear = off[d] + b[d].size <= x || x + b[i].size <= off[d];
        if (clear) best = x;
    }
    return best;
}

/* First fit in order[] (a permutation of the normalized problem b). */
static uint64_t literal_first_fit(const mp_buffer_t *b, size_t n, const size_t *order,
                                  uint64_t *off) {
    bool *placed = calloc(n ? n : 1, sizeof *placed);
    uint64_t fp = 0;
    for (size_t k = 0; placed && k < n; k++) {
        size_t i = order[k];
        off[i] = lowest_free(b, off, placed, n, i);
        placed[i] = true;
        fp = mp__max64(fp, off[i] + b[i].size);
    }
    free(placed);
    return fp;
}

/* Greedy by size, as the issue means it: larger first, ties to the longer
 * lifetime, then input order (a selection sort, independent of the
 * library's sorts). */
static void size_order(const mp_buffer_t *b, size_t n, size_t *order) {
    for (size_t k = 0; k < n; k++) order[k] = k;
    for (size_t k = 0; k < n; k++)
        for (size_t m = k + 1; m < n; m++) {
            const mp_buffer_t *x = &b[order[m]], *y = &b[order[k]];
            uint64_t lx = x->last - x->first, ly = y->last - y->first;
            if (x->size > y->size || (x->size == y->size && lx > ly) ||
                (x->size == y->size && lx == ly && order[m] < order[k])) {
                size_t t = order[k];
                order[k] = order[m], order[m] = t;
            }
        }
}

static void check_instance(const mp_buffer_t *raw, size_t n, const char *what) {
    mp_buffer_t *b;
    if (!MP_CHECK_OK(mp__normalize(raw, n, &b))) return;
    mp_plan_t p;
    mp_auto_report_t r;
    if (MP_CHECK_OK(mp_plan_auto(raw, n, &p, &r))) {
        MP_CHECK_OK(mp_plan_check(raw, n, &p, NULL));
        MP_CHECK(r.optimal == (p.footprint == r.lower_bound));
        size_t *order = malloc((n ? n : 1) * sizeof *order);
        uint64_t *off = malloc((n ? n : 1) * sizeof *off);
        static const int tried[] = {-1, 0, 1, 10, 9, 6}; /* -1: by size */
        for (size_t k = 0; order && off && k < sizeof tried / sizeof *tried; k++) {
            int v = tried[k];
            if (v < 0) size_order(b, n, order);
            else if (!MP_CHECK_OK(mp__xpeak_order(b, n, (unsigned)v, order))) break;
            uint64_t fp = literal_first_fit(b, n, order, off);
            MP_CHECK(mp_test_check_offsets(b, n, off));
            if (!MP_CHECK(p.footprint <= fp))
                fprintf(stderr, "  %s, n %zu: auto %llu (%s) above order %d's first fit %llu\n",
                        what, n, (unsigned long long)p.footprint, r.winner, v,
                        (unsigned long long)fp);
        }
        free(order), free(off);
        mp_plan_free(&p);
    }
    free(b);
}

static void test_random(void) {
    enum { N = 120 };
    mp_buffer_t b[N];
    uint64_t st = 11;
    for (int iter = 0; iter < 420; iter++) {
        mp_gen_shape shape = (mp_gen_shape)(iter % MP_GEN_SHAPES);
        size_t n = 1 + (size_t)(mp_gen_next(&st) % N);
        mp_gen_problem(b, n, shape, 500 + (uint64_t)iter);
        if (iter % 2) /* few distinct sizes: ties decide the size order */
            for (size_t i = 0; i < n; i++) b[i].size = 64 << (mp_gen_next(&st) % 3);
        check_instance(b, n, mp_gen_shape_name[shape]);
    }
    check_instance(b, 0, "empty");
}

int main(void) {
    test_random();
    return mp_test_finish("test_auto_fits");
}
