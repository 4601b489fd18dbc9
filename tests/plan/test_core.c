/* test_core.c -- validation, lower bounds and the plan checker. */
#include "core/internal.h"
#include "gen.h"
#include "harness.h"
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* An instance built to have the properties pisarchyk2020 states for its
 * Fig. 2 (operator #3's breadth is 36+28+16 = 80; the third positional
 * maximum is max(16,16,16,10) = 16).  Operators are times 0..7:
 *   op0 {A32}            op1 {A32,B28,C16}    op2 {D36,B28,C16}
 *   op3 {D36,B28,E16}    op4 {E16,F8}         op5 {G64,F8}
 *   op6 {G64,I40,H10}    op7 {H10}
 * Breadths: 32, 76, 80, 80, 24, 72, 114, 10 -> offset bound 114.
 * Positional maxima: 1st max(32,32,36,36,16,64,64,10) = 64,
 * 2nd max(28,28,28,8,8,40) = 40, 3rd max(16,16,16,10) = 16 -> objects
 * bound 64+40+16 = 120.  Naive: 32+28+16+36+16+8+64+10+40 = 250. */
static const mp_buffer_t fig2[] = {
    {0, 0, 1, 32, 0}, {1, 1, 3, 28, 0}, {2, 1, 2, 16, 0}, {3, 2, 3, 36, 0}, {4, 3, 4, 16, 0},
    {5, 4, 5, 8, 0},  {6, 5, 6, 64, 0}, {7, 6, 7, 10, 0}, {8, 6, 6, 40, 0},
};

static void test_paper_facts(void) {
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(fig2, N(fig2), &bd));
    MP_CHECK_EQ_U64(bd.offsets, 114);
    MP_CHECK_EQ_U64(bd.objects, 120);
    MP_CHECK_EQ_U64(bd.naive, 250);
    MP_CHECK_EQ_U64(bd.peak_count, 3);
}

/* Bounds of three small graphs, derived by hand.
 * Chain a(40)->b(10)->c(30)->d(20): tensor k lives [k, k+1] (d: [3,3]).
 *   Profiles: t0 {40}, t1 {40,10}, t2 {10,30}, t3 {30,20}.
 *   Offsets bound = max(40, 50, 40, 50) = 50.  Positional maxima:
 *   1st max(40,40,30,30) = 40, 2nd max(10,10,20) = 20 -> objects 60.
 * Residual block: x(16) [0,3] feeds conv1 -> y(32) [1,2] -> conv2 ->
 *   z(8) [2,3], then add(x, z) -> out(16) [3,3].
 *   Profiles: t0 {16}, t1 {16,32}, t2 {16,32,8}, t3 {16,8,16}.
 *   Offsets bound = max(16, 48, 56, 40) = 56.  Positional maxima:
 *   1st 32, 2nd max(16,16,16) = 16, 3rd max(8,8) = 8 -> objects 56.
 * Branch and join: in(10) [0,2] feeds p(20) [1,3] and q(5) [2,3];
 *   join(p, q) -> r(10) [3,3].  Profiles: t0 {10}, t1 {10,20},
 *   t2 {10,20,5}, t3 {20,5,10}.  Offsets bound = max(10, 30, 35, 35) = 35.
 *   Positional maxima: 1st 20, 2nd 10, 3rd 5 -> objects 35. */
static void test_small_graph_bounds(void) {
    static const struct { mp_buffer_t b[4]; uint64_t off, obj, naive; } g[] = {
        {{{0, 0, 1, 40, 0}, {1, 1, 2, 10, 0}, {2, 2, 3, 30, 0}, {3, 3, 3, 20, 0}}, 50, 60, 100},
        {{{0, 0, 3, 16, 0}, {1, 1, 2, 32, 0}, {2, 2, 3, 8, 0}, {3, 3, 3, 16, 0}}, 56, 56, 72},
        {{{0, 0, 2, 10, 0}, {1, 1, 3, 20, 0}, {2, 2, 3, 5, 0}, {3, 3, 3, 10, 0}}, 35, 35, 45},
    };
    for (size_t i = 0; i < N(g); i++) {
        mp_bounds_t bd;
        MP_CHECK_OK(mp_bounds_compute(g[i].b, 4, &bd));
        MP_CHECK_EQ_U64(bd.offsets, g[i].off);
        MP_CHECK_EQ_U64(bd.objects, g[i].obj);
        MP_CHECK_EQ_U64(bd.naive, g[i].naive);
    }
}

/* Alignment rounds sizes up: sizes 10 and 20 with align 16 become 16 and
 * 32; live together they need 48. */
static void test_alignment_bounds(void) {
    mp_buffer_t b[] = {{1, 0, 1, 10, 16}, {2, 1, 2, 20, 16}};
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, 2, &bd));
    MP_CHECK_EQ_U64(bd.offsets, 48);
    MP_CHECK_EQ_U64(bd.naive, 48);
    MP_CHECK_EQ_U64(bd.objects, 48);
    MP_CHECK_EQ_U64(mp_buffer_aligned_size(&b[0]), 16);
}

static void test_validation(void) {
    struct { mp_buffer_t b[2]; size_t n; mp_status want; const char *text; } cases[] = {
        {{{1, 5, 3, 8, 0}}, 1, MP_EINVAL, "last 3 < first 5"},
        {{{1, 0, 3, 0, 0}}, 1, MP_EINVAL, "size 0"},
        {{{1, 0, 3, 8, 3}}, 1, MP_EINVAL, "not a power of two"},
        {{{1, 0, UINT64_MAX, 8, 0}}, 1, MP_EINVAL, "last must be"},
        {{{7, 0, 1, 8, 0}, {7, 2, 3, 8, 0}}, 2, MP_EINVAL, "duplicate id 7"},
        {{{1, 0, 1, UINT64_MAX / 2 + 1, 0}, {2, 0, 1, UINT64_MAX / 2 + 1, 0}}, 2, MP_EOVERFLOW,
         "overflows"},
        {{{1, 0, 1, UINT64_MAX, 2}}, 1, MP_EOVERFLOW, "overflows"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        mp_status s = mp_problem_validate(cases[i].b, cases[i].n);
        MP_CHECK(s == cases[i].want);
        if (!MP_CHECK(strstr(mp_last_error(), cases[i].text) != NULL))
            fprintf(stderr, "  case %zu: '%s'\n", i, mp_last_error());
        mp_plan_t p;
        MP_CHECK(mp_plan_compute(cases[i].b, cases[i].n, "naive", &p) == cases[i].want);
        MP_CHECK(p.offset == NULL);
    }
    mp_plan_t p;
    MP_CHECK(mp_plan_compute(fig2, N(fig2), "no-such", &p) == MP_ENOTFOUND);
    MP_CHECK_OK(mp_problem_validate(NULL, 0));
}

/* Hand-made plans for the checker. */
static void test_checker_cases(void) {
    /* a [0,1] 10 B, b [1,2] 10 B (conflict at t=1), c [2,3] 10 B. */
    mp_buffer_t b[] = {{1, 0, 1, 10, 0}, {2, 1, 2, 10, 0}, {3, 2, 3, 10, 0}};
    uint64_t good[] = {0, 10, 0};        /* a and c share: they never meet */
    uint64_t overlap[] = {0, 9, 0};      /* b starts inside a while both live */
    uint64_t touch[] = {0, 10, 10};      /* b and c meet at t=2 */
    mp_plan_t p = {.n = 3, .offset = good, .footprint = 20};
    MP_CHECK_OK(mp_plan_check(b, 3, &p, NULL));
    p.footprint = 30;
    MP_CHECK(mp_plan_check(b, 3, &p, NULL) == MP_ECONFLICT);
    MP_CHECK(strstr(mp_last_error(), "claims footprint 30") != NULL);
    p = (mp_plan_t){.n = 3, .offset = overlap, .footprint = 19};
    mp_check_report_t r;
    MP_CHECK(mp_plan_check(b, 3, &p, &r) == MP_ECONFLICT);
    MP_CHECK(r.first_bad == 1 && r.second_bad == 0);
    MP_CHECK(strstr(mp_last_error(), "buffers 2 [1,2]") != NULL);
    p = (mp_plan_t){.n = 3, .offset = touch, .footprint = 20};
    MP_CHECK(mp_plan_check(b, 3, &p, NULL) == MP_ECONFLICT);
    /* Alignment: with align 8 buffer a must sit at a multiple of 8. */
    mp_buffer_t al[] = {{1, 0, 1, 10, 8}};
    uint64_t off5[] = {5}, off8[] = {8};
    p = (mp_plan_t){.n = 1, .offset = off5, .footprint = 21};
    MP_CHECK(mp_plan_check(al, 1, &p, NULL) == MP_ECONFLICT);
    MP_CHECK(strstr(mp_last_error(), "not a multiple of align 8") != NULL);
    p = (mp_plan_t){.n = 1, .offset = off8, .footprint = 24};
    MP_CHECK_OK(mp_plan_check(al, 1, &p, NULL));
    /* Objects: a and b share object 0 while both live at t=1. */
    size_t obj_bad[] = {0, 0, 1}, obj_good[] = {0, 1, 0};
    uint64_t sz2[] = {10, 10}, sz_small[] = {5, 10};
    uint64_t off_obj_bad[] = {0, 0, 10}, off_obj_good[] = {0, 10, 0};
    p = (mp_plan_t){3, off_obj_bad, 20, obj_bad, sz2, 2, "x"};
    MP_CHECK(mp_plan_check(b, 3, &p, NULL) == MP_ECONFLICT);
    p = (mp_plan_t){3, off_obj_good, 20, obj_good, sz2, 2, "x"};
    MP_CHECK_OK(mp_plan_check(b, 3, &p, NULL));
    p = (mp_plan_t){3, off_obj_good, 20, obj_good, sz_small, 2, "x"};
    MP_CHECK(mp_plan_check(b, 3, &p, NULL) == MP_ECONFLICT);
    MP_CHECK(strstr(mp_last_error(), "exceeds its object") != NULL);
}

/* O(n^2) verdict: any conflicting pair overlapping in address? */
static bool pairwise_valid(const mp_buffer_t *b, size_t n, const uint64_t *off) {
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (mp__overlap(&b[i], &b[j]) && off[i] < off[j] + b[j].size &&
                off[j] < off[i] + b[i].size)
                return false;
    return true;
}

static void test_checker_random(void) {
    uint64_t st = 42;
    long agree = 0, valid_seen = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t n = 1 + mp_gen_next(&st) % 40;
        mp_buffer_t *b = malloc(n * sizeof *b);
        uint64_t *off = malloc(n * sizeof *off);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), st);
        for (size_t i = 0; i < n; i++) b[i].align = 0;
        /* Offsets from a valid plan, then perturb some to make conflicts. */
        mp_plan_t p;
        MP_CHECK_OK(mp_plan_compute(b, n, "naive", &p));
        memcpy(off, p.offset, n * sizeof *off);
        uint64_t span = p.footprint;
        mp_plan_free(&p);
        for (size_t i = 0; i < n; i++)
            if (mp_gen_next(&st) % 3 == 0) off[i] = mp_gen_next(&st) % (span / 2 + 1);
        mp_buffer_t *nb;
        MP_CHECK_OK(mp__normalize(b, n, &nb));
        p = (mp_plan_t){.n = n, .offset = off, .footprint = mp__footprint(nb, n, off)};
        bool want = pairwise_valid(nb, n, off);
        bool got = mp_plan_check(b, n, &p, NULL) == MP_OK;
        agree += want == got;
        valid_seen += want;
        if (want != got) fprintf(stderr, "checker disagrees with pairwise oracle, n=%zu\n", n);
        free(nb), free(b), free(off);
    }
    MP_CHECK_EQ_U64(agree, 3000);
    MP_CHECK(valid_seen > 100 && valid_seen < 2900); /* both verdicts exercised */
}

static void test_bounds_random(void) {
    uint64_t st = 7;
    long agree = 0;
    for (int iter = 0; iter < 3000; iter++) {
        /* The last 100 larger: deeper max-trees, radix-sorted keys. */
        size_t n = 1 + mp_gen_next(&st) % (iter < 2900 ? 60 : 1500);
        mp_buffer_t *b = malloc(n * sizeof *b);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), st + iter);
        mp_bounds_t fast, slow;
        MP_CHECK_OK(mp_bounds_compute(b, n, &fast));
        oracle_bounds(b, n, &slow);
        agree += !memcmp(&fast, &slow, sizeof fast);
        free(b);
    }
    MP_CHECK_EQ_U64(agree, 3000);
}

/* The interval index against a scan: random switching and queries. */
static void test_itree(void) {
    uint64_t st = 11;
    long agree = 0, total = 0;
    for (int iter = 0; iter < 200; iter++) {
        size_t n = 1 + mp_gen_next(&st) % 300;
        mp_buffer_t *b = malloc(n * sizeof *b);
        bool *on = calloc(n, sizeof *on);
        mp_gen_problem(b, n, (mp_gen_shape)(iter % MP_GEN_SHAPES), st);
        mp__itree t;
        MP_CHECK_OK(mp__itree_init(&t, b, n));
        size_t *hits = NULL, len = 0, cap = 0;
        for (int q = 0; q < 50; q++) {
            size_t i = mp_gen_next(&st) % n;
            on[i] = !on[i];
            mp__itree_set(&t, i, on[i]);
            uint64_t lo = b[mp_gen_next(&st) % n].first, hi = lo + mp_gen_next(&st) % 20;
            len = 0;
            MP_CHECK_OK(mp__itree_query(&t, lo, hi, &hits, &len, &cap));
            size_t want = 0;
            bool ok = true;
            for (size_t k = 0; k < n; k++) want += on[k] && b[k].first <= hi && b[k].last >= lo;
            for (size_t k = 0; k < len; k++)
                ok &= on[hits[k]] && b[hits[k]].first <= hi && b[hits[k]].last >= lo &&
                      (k == 0 || b[hits[k - 1]].first <= b[hits[k]].first);
            agree += ok && want == len;
            total++;
        }
        free(hits);
        mp__itree_free(&t);
        free(b), free(on);
    }
    MP_CHECK_EQ_U64(agree, total);
}

/* The ordered set against a sorted array of present keys. */
static void test_tset(void) {
    mp__tset s;
    mp__tset_init(&s);
    enum { K = 64 };
    bool present[K][4] = {{false}};
    uint64_t st = 5;
    long agree = 0, erases = 0, erase_agree = 0;
    for (int op = 0; op < 20000; op++) {
        uint64_t a = mp_gen_next(&st) % K, b = mp_gen_next(&st) % 4;
        if (mp_gen_next(&st) % 2) {
            MP_CHECK_OK(mp__tset_insert(&s, a, b));
            present[a][b] = true;
        } else {
            bool was = present[a][b];
            erase_agree += mp__tset_erase(&s, a, b) == was;
            erases++;
            present[a][b] = false;
        }
        /* ceil/next/floor/prev of a random probe vs a scan */
        uint64_t pa = mp_gen_next(&st) % K, pb = mp_gen_next(&st) % 4, x1, x2;
        long want_ceil = -1, want_next = -1, want_floor = -1, want_prev = -1;
        for (long k = 0; k < K * 4; k++) {
            long probe = (long)(pa * 4 + pb);
            if (!present[k / 4][k % 4]) continue;
            if (k >= probe && want_ceil < 0) want_ceil = k;
            if (k > probe && want_next < 0) want_next = k;
            if (k <= probe) want_floor = k;
            if (k < probe) want_prev = k;
        }
        bool ok = true;
        bool f = mp__tset_ceil(&s, pa, pb, &x1, &x2);
        ok &= f == (want_ceil >= 0) && (!f || (long)(x1 * 4 + x2) == want_ceil);
        f = mp__tset_next(&s, pa, pb, &x1, &x2);
        ok &= f == (want_next >= 0) && (!f || (long)(x1 * 4 + x2) == want_next);
        f = mp__tset_floor(&s, pa, pb, &x1, &x2);
        ok &= f == (want_floor >= 0) && (!f || (long)(x1 * 4 + x2) == want_floor);
        f = mp__tset_prev(&s, pa, pb, &x1, &x2);
        ok &= f == (want_prev >= 0) && (!f || (long)(x1 * 4 + x2) == want_prev);
        agree += ok;
    }
    size_t count = 0;
    for (int a = 0; a < K; a++)
        for (int b = 0; b < 4; b++) count += present[a][b];
    MP_CHECK_EQ_U64(s.count, count);
    MP_CHECK_EQ_U64(agree, 20000);
    MP_CHECK_EQ_U64(erase_agree, erases);
    mp__tset_free(&s);
}

int main(void) {
    test_itree();
    test_tset();
    test_paper_facts();
    test_small_graph_bounds();
    test_alignment_bounds();
    test_validation();
    test_checker_cases();
    test_checker_random();
    test_bounds_random();
    return mp_test_finish("test_core");
}
