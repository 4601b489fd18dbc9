/* kernel_check.h -- what the kernel tests share (test_kernels.c,
 * test_kernels_views.c): a seeded splitmix64, random buffers, shapes,
 * "every element near" checks, and the central finite-difference check of
 * a backward kernel against its forward.  Header-only and static: the
 * includer defines `fd_par`, the parameters its cases carry, first. */
#ifndef MP_TEST_KERNEL_CHECK_H
#define MP_TEST_KERNEL_CHECK_H

#include "harness.h"
#include "exec/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x1234abcdULL;

static uint64_t next_u64(void) {   /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi). */
static float uni(float lo, float hi) {
    return lo + (hi - lo) * (float)((double)(next_u64() >> 40) / (double)(1ULL << 24));
}

static float *rand_buf(uint64_t n, float lo, float hi) {
    float *p = malloc((n ? n : 1) * sizeof *p);
    for (uint64_t i = 0; i < n; i++) p[i] = uni(lo, hi);
    return p;
}

static mp__kshape shp(size_t rank, const uint64_t *d) {
    mp__kshape s;
    memset(&s, 0, sizeof s);
    s.rank = rank;
    for (size_t i = 0; i < rank; i++) s.d[i] = d[i];
    return s;
}

/* Every y[i] within tol of want[i]. */
static bool near_all(const float *y, const double *want, size_t n, double tol) {
    for (size_t i = 0; i < n; i++)
        if (!(fabs(y[i] - want[i]) <= tol)) {
            fprintf(stderr, "  element %zu: got %.9g, want %.9g\n", i, y[i], want[i]);
            return false;
        }
    return true;
}

enum { FD_MAX_IN = 5 };

typedef struct fd_case {
    const char *name;
    size_t n_in;
    float *in[FD_MAX_IN];
    uint64_t in_n[FD_MAX_IN];
    int check[FD_MAX_IN];       /* compare the gradient of input j */
    uint64_t out_n;
    void (*fwd)(const struct fd_case *, float *out);
    void (*bwd)(const struct fd_case *, const float *dy, const float *out, float **grad);
    fd_par p;
} fd_case;

static double dot(const float *a, const float *b, uint64_t n) {
    double s = 0;
    for (uint64_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* Tolerances.  Inputs are O(1) and h = 2^-7 (so x +- h is exact in float
 * for |x| < 2).  The truncation error of a central difference is h^2/6
 * |f'''| ~ 1e-5 |f'''|; the rounding error of L is a few float ulps of the
 * affected outputs' sum (~1e-6 here), divided by 2h gives ~1e-4.  So
 * |fd - g| <= 1e-3 + 1e-3 |g| has a margin of ~10x over both, while a
 * wrong gradient (a missing factor, a wrong index) is off by O(|g|). */
static const double FD_H = 0x1p-7, FD_ATOL = 1e-3, FD_RTOL = 1e-3;

static void fd_check(fd_case *c) {
    float *out = malloc((c->out_n ? c->out_n : 1) * sizeof *out);
    float *tmp = malloc((c->out_n ? c->out_n : 1) * sizeof *tmp);
    float *dy = rand_buf(c->out_n, -1, 1);
    float *grad[FD_MAX_IN] = {0};
    c->fwd(c, out);
    for (size_t j = 0; j < c->n_in; j++)
        if (c->check[j]) {
            grad[j] = malloc((c->in_n[j] ? c->in_n[j] : 1) * sizeof(float));
            for (uint64_t e = 0; e < c->in_n[j]; e++) grad[j][e] = NAN;   /* must be written */
        }
    c->bwd(c, dy, out, grad);
    double worst = 0, worst_abs = 0;
    for (size_t j = 0; j < c->n_in; j++) {
        if (!c->check[j]) continue;
        for (uint64_t e = 0; e < c->in_n[j]; e++) {
            float v = c->in[j][e], xp = v + (float)FD_H, xm = v - (float)FD_H;
            c->in[j][e] = xp;
            c->fwd(c, tmp);
            double lp = dot(dy, tmp, c->out_n);
            c->in[j][e] = xm;
            c->fwd(c, tmp);
            double lm = dot(dy, tmp, c->out_n);
            c->in[j][e] = v;
            double fd = (lp - lm) / ((double)xp - (double)xm), g = grad[j][e];
            double r = fabs(fd - g) / (FD_ATOL + FD_RTOL * fabs(g));
            if (!(r <= worst)) {
                worst = isnan(r) ? INFINITY : r;
                worst_abs = fabs(fd - g);
            }
        }
    }
    if (!(worst <= 1.0) || getenv("MP_TEST_VERBOSE"))
        fprintf(stderr, "  %s: finite differences off by %.3g (%.3g x tolerance)\n", c->name,
                worst_abs, worst);
    MP_CHECK(worst <= 1.0);
    free(out), free(tmp), free(dy);
    for (size_t j = 0; j < c->n_in; j++) free(grad[j]), free(c->in[j]);
}

/* Adds input j of n values uniform in [lo, hi), gradient checked. */
static void fd_in(fd_case *c, uint64_t n, float lo, float hi) {
    size_t j = c->n_in++;
    c->in[j] = rand_buf(n, lo, hi);
    c->in_n[j] = n;
    c->check[j] = 1;
}

#endif
