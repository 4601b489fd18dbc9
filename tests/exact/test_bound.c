/* test_bound.c -- the exact planner's lower bounds (src/exact/bound.c)
 * never exceed the optimum, and do exceed the max-load bound where waste
 * is forced.
 *
 * The oracle is written for this file alone: the optimum of a tiny problem
 * is the least footprint of "lowest fit" (each buffer, in a given order,
 * at the lowest aligned offset where it meets no earlier buffer it
 * conflicts with) over every order -- lowest fit in the order of an
 * optimal plan's offsets puts each buffer at or below its offset there.
 * On thousands of random problems of at most 7 buffers: the bound from
 * windows alone (3 and 5 sections, never the whole problem), with node
 * limits and without, is at least the max-load bound and at most the
 * optimum; without limits, where the last window is the whole problem, it
 * is the optimum.  A crafted problem (a perfect packing beside a small
 * gadget whose alignments force a hole) needs a window away from the
 * fullest section to rise above the max-load bound; the public bound and
 * anytime auto's proven bound must rise there too.  With fixed buffers
 * (each window's search takes those live in it as obstacles) the same
 * checks hold against the optimum of the plans that keep them in place,
 * from max(load, largest fixed end) up, and a crafted gap between two
 * fixed buffers too small for a free one raises the bound where the
 * windows without obstacles cannot. */
#include "exact/exact.h"
#include "gen.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

enum { TINY = 7 };

/* ---- the oracle -------------------------------------------------------------- */

static bool live_together(const mp_buffer_t *x, const mp_buffer_t *y) {
    return !(x->last < y->first || y->last < x->first);
}

/* Footprint of lowest fit in order ord[0..n) of the normalized b, the
 * buffers with fixed[i] != MP_NOT_FIXED (fixed NULL: none) placed there
 * first and skipped in the order. */
static uint64_t lowest_fit(const mp_buffer_t *b, size_t n, const uint64_t *fixed, const size_t *ord) {
    uint64_t off[TINY], top = 0;
    size_t done[TINY], m = 0; /* the buffers placed */
    for (size_t i = 0; fixed && i < n; i++)
        if (fixed[i] != MP_NOT_FIXED) {
            off[i] = fixed[i], done[m++] = i;
            if (fixed[i] + b[i].size > top) top = fixed[i] + b[i].size;
        }
    for (size_t k = 0; k < n; k++) {
        size_t xi = ord[k];
        const mp_buffer_t *x = &b[xi];
        if (fixed && fixed[xi] != MP_NOT_FIXED) continue;
        uint64_t at = 0;
        for (bool moved = true; moved;) { /* climb over whatever is in the way */
            moved = false;
            for (size_t q = 0; q < m; q++) {
                const mp_buffer_t *y = &b[done[q]];
                uint64_t oy = off[done[q]];
                if (!live_together(x, y) || oy >= at + x->size || oy + y->size <= at) continue;
                at = (oy + y->size + x->align - 1) / x->align * x->align;
                moved = true;
            }
        }
        off[xi] = at, done[m++] = xi;
        if (at + x->size > top) top = at + x->size;
    }
    return top;
}

/* The next order in lexicographic order; false after the last. */
static bool next_order(size_t *ord, size_t n) {
    size_t i = n - 1;
    while (i > 0 && ord[i - 1] > ord[i]) i--;
    if (i == 0) return false;
    size_t j = n - 1;
    while (ord[j] < ord[i - 1]) j--;
    size_t t = ord[i - 1];
    ord[i - 1] = ord[j], ord[j] = t;
    for (size_t a = i, z = n - 1; a < z; a++, z--) t = ord[a], ord[a] = ord[z], ord[z] = t;
    return true;
}

/* The least footprint of every plan that keeps the fixed buffers (fixed
 * NULL: none) in place: lowest fit in the order of an optimal plan's
 * offsets puts each free buffer at or below its offset there (that offset
 * is clear of the fixed buffers and of those placed before it). */
static uint64_t optimum(const mp_buffer_t *b, size_t n, const uint64_t *fixed) {
    size_t ord[TINY];
    for (size_t i = 0; i < n; i++) ord[i] = i;
    uint64_t best = UINT64_MAX;
    if (!n) return 0;
    do {
        uint64_t f = lowest_fit(b, n, fixed, ord);
        if (f < best) best = f;
    } while (next_order(ord, n));
    return best;
}

/* ---- helpers ------------------------------------------------------------------- */

/* The normalized copy of b (the bound's input) into *nb, and its max-load. */
static uint64_t normalized(const mp_buffer_t *b, size_t n, mp_buffer_t **nb) {
    mp_exact_opts_t o;
    uint64_t load = 0;
    *nb = NULL;
    if (MP_CHECK_OK(mp__xprepare(b, n, NULL, &o, nb))) MP_CHECK_OK(mp__offsets_bound(*nb, n, &load));
    return load;
}

/* mp__xbound_raise from the max-load bound, windows up to max_width
 * sections (0: all), at most node_limit nodes (0: none); with fixed (NULL:
 * none), mp__xbound_raise_fixed around those buffers. */
static uint64_t raised(const mp_buffer_t *nb, size_t n, const uint64_t *fixed, uint64_t load,
                       size_t max_width, uint64_t node_limit) {
    mp__xlimit lim = {0};
    lim.node_limit = node_limit;
    uint64_t lo = load;
    if (fixed) MP_CHECK_OK(mp__xbound_raise_fixed(nb, n, fixed, max_width, &lim, &lo));
    else MP_CHECK_OK(mp__xbound_raise(nb, n, max_width, &lim, &lo));
    return lo;
}

static void dump(const char *what, const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                 uint64_t opt) {
    fprintf(stderr, "  %s (optimum %llu):\n", what, (unsigned long long)opt);
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, "    [%llu, %llu] size %llu align %llu", (unsigned long long)b[i].first,
                (unsigned long long)b[i].last, (unsigned long long)b[i].size,
                (unsigned long long)b[i].align);
        if (fixed && fixed[i] != MP_NOT_FIXED) fprintf(stderr, " fixed at %llu", (unsigned long long)fixed[i]);
        fputc('\n', stderr);
    }
}

/* ---- tiny random problems ---------------------------------------------------- */

/* A tiny random problem: few distinct times, small sizes and, in two of
 * three, alignments. */
static size_t random_tiny(mp_buffer_t *b, uint64_t *st) {
    size_t n = 2 + mp_gen_next(st) % (TINY - 1);
    uint64_t span = 3 + mp_gen_next(st) % 6, smax = 2 + mp_gen_next(st) % 9;
    bool aligned = mp_gen_next(st) % 3 != 0;
    for (size_t i = 0; i < n; i++) {
        b[i].id = i;
        b[i].first = mp_gen_next(st) % span;
        b[i].last = b[i].first + mp_gen_next(st) % (span - b[i].first);
        b[i].size = 1 + mp_gen_next(st) % smax;
        b[i].align = aligned ? (uint64_t[]){1, 2, 4, 8}[mp_gen_next(st) % 4] : 0;
    }
    return n;
}

/* Fixes up to `want` random buffers of the normalized nb at random aligned
 * offsets up to range, each clear of the fixed buffers live with it; the
 * rest free.  Returns the largest fixed end. */
static uint64_t pin(const mp_buffer_t *nb, size_t n, size_t want, uint64_t range, uint64_t *st,
                    uint64_t *fx) {
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) fx[i] = MP_NOT_FIXED;
    for (size_t k = 0; k < want; k++) {
        size_t i = (size_t)(mp_gen_next(st) % n);
        uint64_t at = mp_gen_next(st) % (range + 1) / nb[i].align * nb[i].align;
        bool clear = fx[i] == MP_NOT_FIXED;
        for (size_t j = 0; clear && j < n; j++)
            clear = fx[j] == MP_NOT_FIXED || !live_together(&nb[i], &nb[j]) ||
                    at >= fx[j] + nb[j].size || fx[j] >= at + nb[i].size;
        if (!clear) continue;
        fx[i] = at;
        if (at + nb[i].size > end) end = at + nb[i].size;
    }
    return end;
}

/* Per kind of problem, [0] without and [1] with fixed buffers: */
static long above_load[2]; /* windows of 3-5 sections beat max(load, largest fixed end) */
static long waste[2];      /* the optimum is above it */

/* The checks on one problem, with 1-3 of its buffers fixed at random when
 * st is given (from st): every bound lies between max(load, largest fixed
 * end) and the optimum of the plans that keep them in place, and without
 * limits reaches it.  With only_waste, none unless the optimum is above
 * that.  Returns whether it was checked. */
static bool check_tiny(const mp_buffer_t *b, size_t n, long iter, uint64_t *st, bool only_waste) {
    mp_buffer_t *nb;
    uint64_t fxs[TINY], *fx = st ? fxs : NULL, load = normalized(b, n, &nb);
    if (!nb) return false;
    uint64_t end = st ? pin(nb, n, 1 + (size_t)(mp_gen_next(st) % 3), load + load / 2, st, fxs) : 0;
    uint64_t lo0 = load > end ? load : end, opt = optimum(nb, n, fx);
    if (only_waste && opt == lo0) {
        free(nb);
        return false;
    }
    long failed = mp_test_failed;
    uint64_t w3 = raised(nb, n, fx, load, 3, 0), w5 = raised(nb, n, fx, load, 5, 0);
    MP_CHECK(lo0 <= w3 && w3 <= w5 && w5 <= opt);
    above_load[st != NULL] += w5 > lo0, waste[st != NULL] += opt > lo0;
    uint64_t lim = raised(nb, n, fx, load, 0, 1 + (uint64_t)iter % 3000);
    MP_CHECK(lo0 <= lim && lim <= opt);
    MP_CHECK_EQ_U64(raised(nb, n, fx, load, 0, 0), opt); /* the last window is all */
    uint64_t pub = 0;
    mp_exact_opts_t o = {.time_limit = 0, .node_limit = 0, .fixed = fx};
    MP_CHECK_OK(mp_exact_lower_bound(b, n, &o, &pub));
    MP_CHECK_EQ_U64(pub, opt);
    if (mp_test_failed != failed) dump(fx ? "tiny problem, fixed buffers" : "tiny problem", b, n, fx, opt);
    free(nb);
    return true;
}

static void test_tiny(void) {
    uint64_t st = 20261125;
    mp_buffer_t b[TINY];
    for (long iter = 0; iter < 3000; iter++) check_tiny(b, random_tiny(b, &st), iter, NULL, false);
    for (long iter = 0; iter < 600; iter++) { /* the generator's shapes too */
        size_t n = 1 + (size_t)iter % TINY;
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 4242 + (uint64_t)iter);
        check_tiny(b, n, iter, NULL, false);
    }
    /* Optima above the load bound are rare (about 1 in 300 here), and only
     * they can catch a bound that rises too far: draw until 100 of them. */
    long found = 0, drawn = 0;
    for (; found < 100 && drawn < 200000; drawn++)
        found += check_tiny(b, random_tiny(b, &st), drawn, NULL, true);
    MP_CHECK(found == 100 && above_load[0] > 0);
    fprintf(stderr, "test_bound: optimum above max-load on %ld problems (%ld drawn for 100), "
            "windows of 3-5 sections beat max-load on %ld\n", waste[0], drawn, above_load[0]);
}

/* Problems of 8-16 buffers: windows alone never exceed the optimum the
 * exact search proves. */
static void test_middle(void) {
    uint64_t st = 7;
    mp_buffer_t b[16];
    for (int iter = 0; iter < 150; iter++) {
        size_t n = 8 + mp_gen_next(&st) % 9;
        uint64_t span = 4 + mp_gen_next(&st) % 10;
        for (size_t i = 0; i < n; i++) {
            b[i].id = i;
            b[i].first = mp_gen_next(&st) % span;
            b[i].last = b[i].first + mp_gen_next(&st) % (span - b[i].first);
            b[i].size = 1 + mp_gen_next(&st) % 12;
            b[i].align = iter % 2 ? (uint64_t[]){1, 2, 4}[mp_gen_next(&st) % 3] : 0;
        }
        mp_exact_opts_t o = {.time_limit = 0, .node_limit = 0, .no_heuristics = 1};
        mp_plan_t p;
        mp_exact_report_t r;
        if (!MP_CHECK_OK(mp_exact_solve(b, n, &o, &p, &r))) continue;
        MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
        MP_CHECK(r.status == MP_EXACT_OPTIMAL);
        mp_buffer_t *nb;
        uint64_t load = normalized(b, n, &nb);
        if (nb) {
            uint64_t w = raised(nb, n, NULL, load, 9, 20000);
            if (!MP_CHECK(w <= p.footprint)) dump("middle problem", b, n, NULL, p.footprint);
        }
        free(nb);
        mp_plan_free(&p);
    }
}

/* ---- a crafted problem --------------------------------------------------------- */

enum { K = 1024, ROWS = 7 };

/* Rows of K bytes over times [0, 40], each cut into lifetimes at random:
 * a perfect packing of load ROWS * K everywhere. */
static size_t rows(mp_buffer_t *b, uint64_t seed) {
    size_t n = 0;
    for (int r = 0; r < ROWS; r++)
        for (uint64_t t = 0; t <= 40;) {
            uint64_t len = 1 + mp_gen_next(&seed) % 9, end = t + len - 1 > 40 ? 40 : t + len - 1;
            b[n] = (mp_buffer_t){.id = n, .first = t, .last = end, .size = K};
            n++, t = end + 1;
        }
    return n;
}

/* The rows, then, at times 100-103, a gadget of load 6K whose optimum is
 * 8K: two 2K buffers aligned to 4K (at 100 and at 103) each push an
 * unaligned 2K buffer to [4K, 6K), and those two live together at
 * 101-102.  The gadget is three sections, so its window of 3 proves 8K;
 * windows around the fullest sections (the packing's) never could. */
static size_t crafted(mp_buffer_t *b, uint64_t seed) {
    size_t n = rows(b, seed);
    static const uint64_t g[4][4] = {
        {100, 100, 2 * K, 4 * K}, {100, 102, 2 * K, 1}, {101, 103, 2 * K, 1}, {103, 103, 2 * K, 4 * K}};
    for (int i = 0; i < 4; i++, n++)
        b[n] = (mp_buffer_t){.id = n, .first = g[i][0], .last = g[i][1], .size = g[i][2], .align = g[i][3]};
    return n;
}

static void test_crafted(void) {
    mp_buffer_t b[ROWS * 41 + 4];
    for (uint64_t seed = 1; seed <= 5; seed++) {
        size_t n = crafted(b, seed);
        mp_buffer_t *nb;
        uint64_t load = normalized(b, n, &nb);
        if (!nb) return;
        MP_CHECK_EQ_U64(optimum(nb + n - 4, 4, NULL), 8 * K); /* the gadget alone, by the oracle */
        MP_CHECK_EQ_U64(load, ROWS * K);
        MP_CHECK_EQ_U64(raised(nb, n, NULL, load, 3, 0), 8 * K);
        free(nb);
        uint64_t pub = 0;
        MP_CHECK_OK(mp_exact_lower_bound(b, n, NULL, &pub));
        MP_CHECK_EQ_U64(pub, 8 * K);
        /* anytime auto's proven bound: the gadget's 8K (its plan meets it) */
        mp_auto_opts_t ao = {.time_limit = 2, .threads = 1};
        mp_plan_t p;
        mp_exact_report_t r;
        if (!MP_CHECK_OK(mp_plan_auto_opts(b, n, &ao, &p, &r))) continue;
        MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
        MP_CHECK_EQ_U64(r.load_bound, ROWS * K);
        MP_CHECK(r.lower_bound == 8 * K && r.footprint == 8 * K && r.status == MP_EXACT_OPTIMAL);
        mp_plan_free(&p);
    }
}

/* ---- fixed buffers ------------------------------------------------------------- */

static void test_tiny_fixed(void) {
    uint64_t st = 1125;
    mp_buffer_t b[TINY];
    for (long iter = 0; iter < 1200; iter++) check_tiny(b, random_tiny(b, &st), iter, &st, false);
    for (long iter = 0; iter < 400; iter++) {
        size_t n = 1 + (size_t)iter % TINY;
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), 9191 + (uint64_t)iter);
        check_tiny(b, n, iter, &st, false);
    }
    long found = 0, drawn = 0;
    for (; found < 100 && drawn < 200000; drawn++)
        found += check_tiny(b, random_tiny(b, &st), drawn, &st, true);
    MP_CHECK(found == 100 && above_load[1] > 0);
    fprintf(stderr, "test_bound: fixed buffers: optimum above max(load, fixed end) on %ld problems "
            "(%ld drawn for 100), windows of 3-5 sections beat it on %ld\n", waste[1], drawn,
            above_load[1]);
}

/* The rows beside a gadget of three buffers at times 100-102: F1 (2K) fixed
 * at 0 and F2 (2K) fixed at 4K, both live throughout, and X (3K) free,
 * live at 101, too large for the 2K between them: X goes to 6K, so the
 * optimum is 9K, while the load is 7K (rows and gadget alike) and the
 * largest fixed end 6K.  Without the obstacles the gadget stacks in 7K. */
static void test_crafted_fixed(void) {
    mp_buffer_t b[ROWS * 41 + 3];
    uint64_t fx[ROWS * 41 + 3];
    for (uint64_t seed = 1; seed <= 3; seed++) {
        size_t n = rows(b, seed);
        for (size_t i = 0; i < n; i++) fx[i] = MP_NOT_FIXED;
        b[n] = (mp_buffer_t){.id = n, .first = 100, .last = 102, .size = 2 * K}, fx[n++] = 0;
        b[n] = (mp_buffer_t){.id = n, .first = 100, .last = 102, .size = 2 * K}, fx[n++] = 4 * K;
        b[n] = (mp_buffer_t){.id = n, .first = 101, .last = 101, .size = 3 * K}, fx[n++] = MP_NOT_FIXED;
        mp_buffer_t *nb;
        uint64_t load = normalized(b, n, &nb);
        if (!nb) return;
        MP_CHECK_EQ_U64(optimum(nb + n - 3, 3, fx + n - 3), 9 * K); /* the gadget, by the oracle */
        MP_CHECK_EQ_U64(load, ROWS * K);
        MP_CHECK_EQ_U64(raised(nb, n, fx, load, 3, 0), 9 * K);
        MP_CHECK_EQ_U64(raised(nb, n, NULL, load, 3, 0), ROWS * K); /* no obstacles: no proof */
        free(nb);
        uint64_t pub = 0;
        mp_exact_opts_t o;
        mp_exact_opts_default(&o);
        o.fixed = fx;
        MP_CHECK_OK(mp_exact_lower_bound(b, n, &o, &pub));
        MP_CHECK_EQ_U64(pub, 9 * K);
        mp_auto_opts_t ao = {.time_limit = 2, .threads = 1, .fixed = fx};
        mp_plan_t p;
        mp_exact_report_t r;
        if (!MP_CHECK_OK(mp_plan_auto_opts(b, n, &ao, &p, &r))) continue;
        MP_CHECK_OK(mp_plan_check_fixed(b, n, fx, &p, NULL));
        MP_CHECK(r.lower_bound == 9 * K && r.footprint == 9 * K && r.status == MP_EXACT_OPTIMAL);
        mp_plan_free(&p);
    }
}

int main(void) {
    test_tiny();
    test_middle();
    test_crafted();
    test_tiny_fixed();
    test_crafted_fixed();
    return mp_test_finish("test_bound");
}
