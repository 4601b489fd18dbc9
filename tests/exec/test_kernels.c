/* test_kernels.c -- the float32 kernels of the reference executor.
 *
 * Forward kernels against tiny cases computed by hand (convolution with
 * padding, stride, groups and dilation; pooling with ceil_mode and
 * count_include_pad; broadcasting add/sub/mul; linear; batch norm; the
 * loss) and against direct double-precision oracles written here (conv,
 * GEMM, batched matmul).  Every backward kernel against central finite
 * differences of its forward: for random x and a random upstream gradient
 * dy, L(x) = sum dy . f(x) is accumulated in double, and the kernel's
 * gradient must match (L(x + h e_i) - L(x - h e_i)) / 2h for every input
 * element i.  The GEMM gives the same bits wherever its operands live. */
#include "harness.h"
#include "exec/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Parameters of one case (each case uses what it needs). */
typedef struct fd_par {
    int op;                     /* mp__unop, mp__binop or pooling kind */
    float alpha;
    mp__kshape s[3];            /* a, b, y for binary and matmul */
    uint64_t d[4];
    const mp__conv *conv;
    const mp__pool *pool;
    const int64_t *target;
} fd_par;

#include "kernel_check.h"

/* ---- forward: hand-computed cases --------------------------------------- */

static void test_conv_by_hand(void) {
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[4];
    /* 2x2 kernel of ones over the 3x3 input padded by 1, stride 2: windows
     * {0,0,0,1}, {0,0,2,3}, {0,4,0,7}, {5,6,8,9}. */
    float ones[4] = {1, 1, 1, 1};
    mp__conv p = {.n = 1, .c = 1, .h = 3, .w = 3, .o = 1, .kh = 2, .kw = 2, .oh = 2, .ow = 2,
                  .sh = 2, .sw = 2, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1};
    MP_CHECK_OK(mp__k_conv2d(&p, x, ones, NULL, y));
    MP_CHECK(near_all(y, (double[]){1, 5, 11, 28}, 4, 0));
    /* dilation 2: the 2x2 kernel [[1,2],[3,4]] meets the corners 1, 3, 7, 9. */
    float w[4] = {1, 2, 3, 4};
    mp__conv d = {.n = 1, .c = 1, .h = 3, .w = 3, .o = 1, .kh = 2, .kw = 2, .oh = 1, .ow = 1,
                  .sh = 1, .sw = 1, .ph = 0, .pw = 0, .dh = 2, .dw = 2, .groups = 1};
    MP_CHECK_OK(mp__k_conv2d(&d, x, w, NULL, y));
    MP_CHECK(near_all(y, (double[]){1 * 1 + 2 * 3 + 3 * 7 + 4 * 9}, 1, 0));
    /* groups 2: channels [2, 3]; output channels 0,1 read channel 0 (weights
     * 1, 2), 2,3 read channel 1 (weights 3, 4); bias 1. */
    float xg[2] = {2, 3}, wg[4] = {1, 2, 3, 4}, bg[4] = {1, 1, 1, 1}, yg[4];
    mp__conv g = {.n = 1, .c = 2, .h = 1, .w = 1, .o = 4, .kh = 1, .kw = 1, .oh = 1, .ow = 1,
                  .sh = 1, .sw = 1, .ph = 0, .pw = 0, .dh = 1, .dw = 1, .groups = 2};
    MP_CHECK_OK(mp__k_conv2d(&g, xg, wg, bg, yg));
    MP_CHECK(near_all(yg, (double[]){3, 5, 10, 13}, 4, 0));
}

/* A direct double oracle for convolution. */
static void conv_oracle(const mp__conv *p, const float *x, const float *w, const float *b,
                        double *y, double *mag) {
    uint64_t cg = p->c / p->groups, og = p->o / p->groups;
    for (uint64_t n = 0; n < p->n; n++)
        for (uint64_t o = 0; o < p->o; o++)
            for (uint64_t oy = 0; oy < p->oh; oy++)
                for (uint64_t ox = 0; ox < p->ow; ox++) {
                    double s = b ? b[o] : 0, m = b ? fabs(b[o]) : 0;
                    uint64_t g = o / og;
                    for (uint64_t c = 0; c < cg; c++)
                        for (int64_t i = 0; i < (int64_t)p->kh; i++)
                            for (int64_t j = 0; j < (int64_t)p->kw; j++) {
                                int64_t iy = (int64_t)oy * p->sh - p->ph + i * p->dh;
                                int64_t ix = (int64_t)ox * p->sw - p->pw + j * p->dw;
                                if (iy < 0 || ix < 0 || iy >= (int64_t)p->h ||
                                    ix >= (int64_t)p->w)
                                    continue;
                                double t = (double)w[((o * cg + c) * p->kh + (uint64_t)i) *
                                                         p->kw + (uint64_t)j] *
                                           x[((n * p->c + g * cg + c) * p->h + (uint64_t)iy) *
                                                 p->w + (uint64_t)ix];
                                s += t;
                                m += fabs(t);
                            }
                    uint64_t at = ((n * p->o + o) * p->oh + oy) * p->ow + ox;
                    y[at] = s;
                    mag[at] = m;
                }
}

static const mp__conv conv_cases[] = {
    /* groups 2, stride (2,1), padding (1,0), dilation (1,2) */
    {.n = 2, .c = 4, .h = 5, .w = 6, .o = 6, .kh = 3, .kw = 2, .oh = 3, .ow = 4,
     .sh = 2, .sw = 1, .ph = 1, .pw = 0, .dh = 1, .dw = 2, .groups = 2},
    /* pointwise (the path without im2col) */
    {.n = 2, .c = 3, .h = 3, .w = 4, .o = 5, .kh = 1, .kw = 1, .oh = 3, .ow = 4,
     .sh = 1, .sw = 1, .ph = 0, .pw = 0, .dh = 1, .dw = 1, .groups = 1},
    /* depthwise 3x3, padding 1 */
    {.n = 1, .c = 3, .h = 4, .w = 4, .o = 3, .kh = 3, .kw = 3, .oh = 4, .ow = 4,
     .sh = 1, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 3},
    /* K > one GEMM block (256) and P not a multiple of 16 */
    {.n = 1, .c = 40, .h = 5, .w = 5, .o = 7, .kh = 3, .kw = 3, .oh = 3, .ow = 3,
     .sh = 2, .sw = 2, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .groups = 1},
};

static void test_conv_oracle(void) {
    for (size_t t = 0; t < sizeof conv_cases / sizeof conv_cases[0]; t++) {
        const mp__conv *p = &conv_cases[t];
        uint64_t nx = p->n * p->c * p->h * p->w, nw = p->o * (p->c / p->groups) * p->kh * p->kw;
        uint64_t ny = p->n * p->o * p->oh * p->ow;
        float *x = rand_buf(nx, -1, 1), *w = rand_buf(nw, -1, 1), *b = rand_buf(p->o, -1, 1);
        float *y = malloc(ny * sizeof *y);
        double *ref = malloc(ny * sizeof *ref), *mag = malloc(ny * sizeof *mag);
        MP_CHECK_OK(mp__k_conv2d(p, x, w, b, y));
        conv_oracle(p, x, w, b, ref, mag);
        /* float accumulation of K products: error below K ulps of the sum
         * of magnitudes (2^-24 each). */
        bool ok = true;
        uint64_t K = (p->c / p->groups) * p->kh * p->kw + 1;
        for (uint64_t i = 0; i < ny; i++)
            if (!(fabs(y[i] - ref[i]) <= (double)K * 0x1p-24 * mag[i] + 1e-30)) ok = false;
        MP_CHECK(ok);
        free(x), free(w), free(b), free(y), free(ref), free(mag);
    }
}

static void test_gemm(void) {
    /* sizes around the blocking: m % 4, n % 16, k > 256 */
    static const uint64_t dims[][3] = {{1, 1, 1}, {5, 17, 3}, {9, 40, 300}, {4, 16, 256}};
    for (size_t t = 0; t < 4; t++) {
        uint64_t m = dims[t][0], n = dims[t][1], k = dims[t][2];
        float *a = rand_buf(m * k, -1, 1), *b = rand_buf(k * n + 1, -1, 1);
        float *c = malloc(m * n * sizeof *c), *c2 = malloc((m * n + 1) * sizeof *c2);
        mp__gemm(m, n, k, a, k, 1, b, n, c, n, 0);
        bool ok = true;
        for (uint64_t i = 0; i < m; i++)
            for (uint64_t j = 0; j < n; j++) {
                double s = 0, mag = 0;
                for (uint64_t q = 0; q < k; q++) {
                    s += (double)a[i * k + q] * b[q * n + j];
                    mag += fabs((double)a[i * k + q] * b[q * n + j]);
                }
                if (!(fabs(c[i * n + j] - s) <= (double)k * 0x1p-24 * mag)) ok = false;
            }
        MP_CHECK(ok);
        /* Same values at other addresses (shifted by one float): same bits. */
        memmove(b + 1, b, k * n * sizeof *b);
        mp__gemm(m, n, k, a, k, 1, b + 1, n, c2 + 1, n, 0);
        MP_CHECK(memcmp(c, c2 + 1, m * n * sizeof *c) == 0);
        /* A transposed through strides equals A copied transposed. */
        float *at = malloc(m * k * sizeof *at);
        for (uint64_t i = 0; i < m; i++)
            for (uint64_t q = 0; q < k; q++) at[q * m + i] = a[i * k + q];
        mp__gemm(m, n, k, at, 1, m, b + 1, n, c2, n, 0);
        MP_CHECK(memcmp(c, c2, m * n * sizeof *c) == 0);
        free(a), free(b), free(c), free(c2), free(at);
    }
}

/* linear takes y = x W^T for many rows and y^T = W x^T for few: each
 * element adds the same products in the same order, so a row computed
 * alone equals the same row computed in a batch, bit for bit, and both
 * match a double oracle. */
static void test_linear_paths(void) {
    const uint64_t m = 7, in = 40, out = 5;
    float *x = rand_buf(m * in, -1, 1), *w = rand_buf(out * in, -1, 1), *b = rand_buf(out, -1, 1);
    float y[7 * 5], row[5];
    MP_CHECK_OK(mp__k_linear(x, w, b, y, m, in, out));
    bool same = true, near = true;
    for (uint64_t i = 0; i < m; i++) {
        MP_CHECK_OK(mp__k_linear(x + i * in, w, b, row, 1, in, out));
        same &= memcmp(row, y + i * out, sizeof row) == 0;
        for (uint64_t j = 0; j < out; j++) {
            double s = 0, mag = fabs(b[j]);
            for (uint64_t k = 0; k < in; k++) {
                s += (double)x[i * in + k] * w[j * in + k];
                mag += fabs((double)x[i * in + k] * w[j * in + k]);
            }
            near &= fabs(y[i * out + j] - (s + b[j])) <= (double)(in + 1) * 0x1p-24 * mag;
        }
    }
    MP_CHECK(same);
    MP_CHECK(near);
    free(x), free(w), free(b);
}

static void test_pool_by_hand(void) {
    float x[16], y[4];
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    /* 4x4, kernel 3, stride 2, ceil_mode: floor gives 1x1, ceil 2x2
     * (the last window starts at 2 < 4, inside).  Windows: rows/cols
     * {0..2} and {2..3}. */
    MP_CHECK_EQ_U64(mp__pool_out_len(4, 3, 2, 0, 1, 0), 1);
    MP_CHECK_EQ_U64(mp__pool_out_len(4, 3, 2, 0, 1, 1), 2);
    /* ceil_mode drops a last window starting in the right padding:
     * in 5, k 2, s 2, p 1: ceil((5+2-2)/2)+1 = 4, but (4-1)*2 = 6 >= 5+1. */
    MP_CHECK_EQ_U64(mp__pool_out_len(5, 2, 2, 1, 1, 1), 3);
    mp__pool p = {.n = 1, .c = 1, .h = 4, .w = 4, .oh = 2, .ow = 2, .kh = 3, .kw = 3,
                  .sh = 2, .sw = 2, .ph = 0, .pw = 0, .dh = 1, .dw = 1, .count_include_pad = 1};
    mp__k_maxpool2d(&p, x, y);
    MP_CHECK(near_all(y, (double[]){11, 12, 15, 16}, 4, 0));
    /* averages: 54/9; rows 0-2 x cols 2-3 = 45/6; rows 2-3 x cols 0-2 =
     * 72/6; rows 2-3 x cols 2-3 = 54/4 (the window ends at the input). */
    mp__k_avgpool2d(&p, x, y);
    MP_CHECK(near_all(y, (double[]){6, 7.5, 12, 13.5}, 4, 0));
    /* [[1,2],[3,4]], kernel 2, stride 2, padding 1: each window holds one
     * element and three pads. */
    float x2[4] = {1, 2, 3, 4};
    mp__pool q = {.n = 1, .c = 1, .h = 2, .w = 2, .oh = 2, .ow = 2, .kh = 2, .kw = 2,
                  .sh = 2, .sw = 2, .ph = 1, .pw = 1, .dh = 1, .dw = 1, .count_include_pad = 1};
    mp__k_avgpool2d(&q, x2, y);
    MP_CHECK(near_all(y, (double[]){0.25, 0.5, 0.75, 1.0}, 4, 0));
    q.count_include_pad = 0;
    mp__k_avgpool2d(&q, x2, y);
    MP_CHECK(near_all(y, (double[]){1, 2, 3, 4}, 4, 0));
    mp__k_maxpool2d(&q, x2, y);
    MP_CHECK(near_all(y, (double[]){1, 2, 3, 4}, 4, 0));
    /* max with dilation 2 over 1..16: window (0,0) taps rows/cols {0,2}. */
    mp__pool r = {.n = 1, .c = 1, .h = 4, .w = 4, .oh = 2, .ow = 2, .kh = 2, .kw = 2,
                  .sh = 1, .sw = 1, .ph = 0, .pw = 0, .dh = 2, .dw = 2};
    mp__k_maxpool2d(&r, x, y);
    MP_CHECK(near_all(y, (double[]){11, 12, 15, 16}, 4, 0));
    /* adaptive 5x5 (values 0..24) -> 2x2: windows [0,3) and [2,5); the mean
     * of an arithmetic 3x3 block is its centre. */
    float x5[25];
    for (int i = 0; i < 25; i++) x5[i] = (float)i;
    mp__pool a = {.n = 1, .c = 1, .h = 5, .w = 5, .oh = 2, .ow = 2};
    mp__k_adaptive_avgpool2d(&a, x5, y);
    MP_CHECK(near_all(y, (double[]){6, 8, 16, 18}, 4, 1e-6));
}

static void test_binary_by_hand(void) {
    float a[6] = {1, 2, 3, 4, 5, 6}, b3[3] = {10, 20, 30}, b21[2] = {2, 3}, y[6];
    mp__kshape s23 = shp(2, (uint64_t[]){2, 3}), s3 = shp(1, (uint64_t[]){3});
    mp__kshape s21 = shp(2, (uint64_t[]){2, 1}), s0 = shp(0, NULL);
    mp__k_binary(MP__B_ADD, 1.0f, a, &s23, b3, &s3, y, &s23);
    MP_CHECK(near_all(y, (double[]){11, 22, 33, 14, 25, 36}, 6, 0));
    mp__k_binary(MP__B_MUL, 1.0f, a, &s23, b21, &s21, y, &s23);
    MP_CHECK(near_all(y, (double[]){2, 4, 6, 12, 15, 18}, 6, 0));
    mp__k_binary(MP__B_SUB, 2.0f, a, &s23, b3, &s3, y, &s23);
    MP_CHECK(near_all(y, (double[]){-19, -38, -57, -16, -35, -54}, 6, 0));
    float two = 2;
    mp__k_binary(MP__B_MUL, 1.0f, a, &s23, &two, &s0, y, &s23);
    MP_CHECK(near_all(y, (double[]){2, 4, 6, 8, 10, 12}, 6, 0));
    /* both sides broadcast: [2,1] + [3] -> [2,3] */
    mp__k_binary(MP__B_ADD, 1.0f, b21, &s21, b3, &s3, y, &s23);
    MP_CHECK(near_all(y, (double[]){12, 22, 32, 13, 23, 33}, 6, 0));
    /* in place over a */
    mp__k_binary(MP__B_ADD, 1.0f, a, &s23, b3, &s3, a, &s23);
    MP_CHECK(near_all(a, (double[]){11, 22, 33, 14, 25, 36}, 6, 0));
    /* gradients reduce over broadcast dims: d(a + b)/db for b [3] sums the
     * two rows of dy; for mul by b [2,1] the rows of dy * a. */
    float dy[6] = {1, 2, 3, 4, 5, 6}, a2[6] = {1, 1, 1, 2, 2, 2}, db3[3], db21[2];
    MP_CHECK_OK(mp__k_binary_backward(MP__B_ADD, 1.0f, dy, &s23, NULL, &s23, NULL, &s3, NULL, db3));
    MP_CHECK(near_all(db3, (double[]){5, 7, 9}, 3, 0));
    MP_CHECK_OK(
        mp__k_binary_backward(MP__B_MUL, 1.0f, dy, &s23, a2, &s23, b21, &s21, NULL, db21));
    MP_CHECK(near_all(db21, (double[]){6, 30}, 2, 0));
}

static void test_misc_by_hand(void) {
    /* linear: [1, 2] with W = [[1,0],[0,1],[1,1]], b = [0,0,1] -> [1,2,4] */
    float x[2] = {1, 2}, w[6] = {1, 0, 0, 1, 1, 1}, b[3] = {0, 0, 1}, y[3];
    MP_CHECK_OK(mp__k_linear(x, w, b, y, 1, 2, 3));
    MP_CHECK(near_all(y, (double[]){1, 2, 4}, 3, 0));
    /* batch norm of [1,2,3,4] (n 2, c 1, hw 2): mean 2.5, variance 1.25 */
    float xb[4] = {1, 2, 3, 4}, yb[4];
    MP_CHECK_OK(mp__k_batchnorm(xb, NULL, NULL, yb, 2, 1, 2, 1e-5));
    double s = 1 / sqrt(1.25 + 1e-5);
    MP_CHECK(near_all(yb, (double[]){-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s}, 4, 1e-6));
    /* the loss of [[0,0]] against 0 is ln 2; of [[1,2,3]] against 2 it is
     * ln(e + e^2 + e^3) - 3 */
    float l0[2] = {0, 0}, l1[3] = {1, 2, 3}, loss;
    int64_t t0 = 0, t2 = 2, bad = 3;
    MP_CHECK_OK(mp__k_softmax_xent(l0, &t0, 1, 2, &loss));
    MP_CHECK(fabs(loss - log(2.0)) < 1e-7);
    MP_CHECK_OK(mp__k_softmax_xent(l1, &t2, 1, 3, &loss));
    MP_CHECK(fabs(loss - (log(exp(1.0) + exp(2.0) + exp(3.0)) - 3)) < 1e-6);
    MP_CHECK(mp__k_softmax_xent(l1, &bad, 1, 3, &loss) == MP_EINVAL);
    /* concat of [2,1] and [2,2] on dim 1 */
    float c0[2] = {1, 2}, c1[4] = {3, 4, 5, 6}, yc[6];
    mp__k_concat((const float *[]){c0, c1}, (uint64_t[]){1, 2}, 2, yc, 2, 1);
    MP_CHECK(near_all(yc, (double[]){1, 3, 4, 2, 5, 6}, 6, 0));
    /* activations at a few points */
    float xa[4] = {-4, -1, 0.5f, 7}, ya[4];
    mp__k_unary(MP__U_RELU6, xa, ya, 4);
    MP_CHECK(near_all(ya, (double[]){0, 0, 0.5, 6}, 4, 0));
    mp__k_unary(MP__U_HARDSWISH, xa, ya, 4);
    MP_CHECK(near_all(ya, (double[]){0, -1.0 * 2 / 6, 0.5 * 3.5 / 6, 7}, 4, 1e-7));
    mp__k_unary(MP__U_GELU, xa, ya, 4);
    MP_CHECK(near_all(ya, (double[]){-4 * 0.5 * erfc(4 / sqrt(2.0)), -0.5 * erfc(1 / sqrt(2.0)),
                                     0.25 * (1 + erf(0.5 / sqrt(2.0))), 7 * 0.5 * (1 + erf(7 / sqrt(2.0)))},
                      4, 1e-6));
    float nan = NAN;
    mp__k_unary(MP__U_RELU, &nan, ya, 1);
    MP_CHECK(isnan(ya[0]));   /* NaN propagates: poisoned reads stay visible */
}

/* ---- backward: central finite differences ------------------------------ */




/* unary ops (backward run in place over a copy of dy, as the plan may) */
static void un_f(const fd_case *c, float *y) { mp__k_unary(c->p.op, c->in[0], y, c->in_n[0]); }
static void un_b(const fd_case *c, const float *dy, const float *y, float **g) {
    memcpy(g[0], dy, c->in_n[0] * sizeof *dy);
    const float *v = mp__k_unary_grad_from_output(c->p.op) ? y : c->in[0];
    mp__k_unary_backward(c->p.op, g[0], v, g[0], c->in_n[0]);
}

static void bin_f(const fd_case *c, float *y) {
    mp__k_binary(c->p.op, c->p.alpha, c->in[0], &c->p.s[0], c->in[1], &c->p.s[1], y, &c->p.s[2]);
}
static void bin_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_binary_backward(c->p.op, c->p.alpha, dy, &c->p.s[2], c->in[0], &c->p.s[0],
                                      c->in[1], &c->p.s[1], g[0], g[1]));
}

static void sum_f(const fd_case *c, float *y) {
    mp__k_sum_n((const float *const *)c->in, c->n_in, y, c->out_n);
}
static void sum_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;   /* the gradient of a sum is dy itself, for every term */
    for (size_t j = 0; j < c->n_in; j++) memcpy(g[j], dy, c->out_n * sizeof *dy);
}

static void lin_f(const fd_case *c, float *y) {
    MP_CHECK_OK(mp__k_linear(c->in[0], c->in[1], c->in[2], y, c->p.d[0], c->p.d[1], c->p.d[2]));
}
static void lin_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_linear_backward(dy, c->in[0], c->in[1], c->p.d[0], c->p.d[1], c->p.d[2],
                                      g[0], g[1], g[2]));
}

static void mm_f(const fd_case *c, float *y) {
    MP_CHECK_OK(mp__k_matmul(c->in[0], &c->p.s[0], c->in[1], &c->p.s[1], y, &c->p.s[2]));
}
static void mm_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_matmul_backward(dy, &c->p.s[2], c->in[0], &c->p.s[0], c->in[1], &c->p.s[1],
                                      g[0], g[1]));
}

static void conv_f(const fd_case *c, float *y) {
    MP_CHECK_OK(mp__k_conv2d(c->p.conv, c->in[0], c->in[1], c->in[2], y));
}
static void conv_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_conv2d_backward(c->p.conv, dy, c->in[0], c->in[1], g[0], g[1], g[2]));
}

static void pool_f(const fd_case *c, float *y) {
    if (c->p.op == 0) mp__k_maxpool2d(c->p.pool, c->in[0], y);
    else if (c->p.op == 1) mp__k_avgpool2d(c->p.pool, c->in[0], y);
    else mp__k_adaptive_avgpool2d(c->p.pool, c->in[0], y);
}
static void pool_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    if (c->p.op == 0) mp__k_maxpool2d_backward(c->p.pool, dy, c->in[0], g[0]);
    else if (c->p.op == 1) MP_CHECK_OK(mp__k_avgpool2d_backward(c->p.pool, dy, g[0]));
    else MP_CHECK_OK(mp__k_adaptive_avgpool2d_backward(c->p.pool, dy, g[0]));
}

static void bn_f(const fd_case *c, float *y) {
    MP_CHECK_OK(mp__k_batchnorm(c->in[0], c->in[1], c->in[2], y, c->p.d[0], c->p.d[1], c->p.d[2],
                                1e-5));
}
static void bn_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_batchnorm_backward(dy, c->in[0], c->in[1], c->p.d[0], c->p.d[1], c->p.d[2],
                                         1e-5, g[0], g[1], g[2]));
}

static void ln_f(const fd_case *c, float *y) {
    mp__k_layernorm(c->in[0], c->in[1], c->in[2], y, c->p.d[0], c->p.d[1], 1e-5);
}
static void ln_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_layernorm_backward(dy, c->in[0], c->in[1], c->p.d[0], c->p.d[1], 1e-5, g[0],
                                         g[1], g[2]));
}

static void sm_f(const fd_case *c, float *y) {
    mp__k_softmax(c->in[0], y, c->p.d[0], c->p.d[1], c->p.d[2]);
}
static void sm_b(const fd_case *c, const float *dy, const float *y, float **g) {
    mp__k_softmax_backward(dy, y, g[0], c->p.d[0], c->p.d[1], c->p.d[2]);
}

static void xent_f(const fd_case *c, float *y) {
    MP_CHECK_OK(mp__k_softmax_xent(c->in[0], c->p.target, c->p.d[0], c->p.d[1], y));
}
static void xent_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_softmax_xent_backward(dy[0], c->in[0], c->p.target, c->p.d[0], c->p.d[1],
                                            g[0]));
}

static void cat_f(const fd_case *c, float *y) {
    mp__k_concat((const float *const *)c->in, c->p.d, c->n_in, y, 2, 3);
}
static void cat_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    mp__k_split(dy, g, c->p.d, c->n_in, 2, 3);
}

/* Moves values within 4h of a kink of the op away from it. */
static void avoid_kinks(float *x, uint64_t n, const float *kinks, size_t k) {
    for (uint64_t i = 0; i < n; i++)
        for (size_t j = 0; j < k; j++)
            if (fabsf(x[i] - kinks[j]) < 4 * (float)FD_H) x[i] = kinks[j] + 5 * (float)FD_H;
}

static void fd_unary(void) {
    static const char *names[] = {"relu", "sigmoid", "tanh", "relu6", "silu", "hardswish",
                                  "hardsigmoid", "gelu", "identity"};
    static const float kinks[] = {-3, 0, 3, 6};
    for (int op = MP__U_RELU; op <= MP__U_IDENTITY; op++) {
        fd_case c = {.name = names[op], .fwd = un_f, .bwd = un_b, .out_n = 60, .p.op = op};
        fd_in(&c, 60, -4.5f, 7.5f);
        avoid_kinks(c.in[0], 60, kinks, 4);
        fd_check(&c);
    }
}

static void fd_binary(void) {
    static const struct {
        int op;
        float alpha;
        size_t ra, rb, ry;
        uint64_t a[3], b[3], y[3];
    } t[] = {
        {MP__B_ADD, 0.5f, 3, 2, 3, {2, 1, 3}, {4, 1}, {2, 4, 3}},
        {MP__B_SUB, 2.0f, 2, 1, 2, {3, 4}, {4}, {3, 4}},
        {MP__B_MUL, 1.0f, 3, 2, 3, {2, 1, 3}, {4, 1}, {2, 4, 3}},
        {MP__B_MUL, 1.0f, 2, 2, 2, {3, 4}, {3, 4}, {3, 4}},
        {MP__B_MUL, 1.0f, 2, 0, 2, {3, 4}, {0}, {3, 4}},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        fd_case c = {.name = "binary", .fwd = bin_f, .bwd = bin_b};
        c.p.op = t[i].op;
        c.p.alpha = t[i].alpha;
        c.p.s[0] = shp(t[i].ra, t[i].a);
        c.p.s[1] = shp(t[i].rb, t[i].b);
        c.p.s[2] = shp(t[i].ry, t[i].y);
        fd_in(&c, mp__kshape_numel(&c.p.s[0]), -1, 1);
        fd_in(&c, mp__kshape_numel(&c.p.s[1]), -1, 1);
        c.out_n = mp__kshape_numel(&c.p.s[2]);
        fd_check(&c);
    }
}

static void fd_products(void) {
    fd_case s = {.name = "sum_n", .fwd = sum_f, .bwd = sum_b, .out_n = 10};
    for (int j = 0; j < 3; j++) fd_in(&s, 10, -1, 1);
    fd_check(&s);

    fd_case l = {.name = "linear", .fwd = lin_f, .bwd = lin_b, .out_n = 12, .p.d = {3, 5, 4}};
    fd_in(&l, 15, -1, 1);
    fd_in(&l, 20, -1, 1);
    fd_in(&l, 4, -1, 1);
    fd_check(&l);
    fd_case l2 = {.name = "linear", .fwd = lin_f, .bwd = lin_b, .out_n = 15, .p.d = {5, 4, 3}};
    fd_in(&l2, 20, -1, 1);   /* more rows than outputs: the other GEMM layout */
    fd_in(&l2, 12, -1, 1);
    fd_in(&l2, 3, -1, 1);
    fd_check(&l2);

    /* a [2,1,3,4] b [3,4,2] -> y [2,3,3,2]: both batch dims broadcast */
    fd_case m = {.name = "matmul", .fwd = mm_f, .bwd = mm_b, .out_n = 36};
    m.p.s[0] = shp(4, (uint64_t[]){2, 1, 3, 4});
    m.p.s[1] = shp(3, (uint64_t[]){3, 4, 2});
    m.p.s[2] = shp(4, (uint64_t[]){2, 3, 3, 2});
    fd_in(&m, 24, -1, 1);
    fd_in(&m, 24, -1, 1);
    fd_check(&m);

    for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++) {
        const mp__conv *p = &conv_cases[i];
        fd_case c = {.name = "conv2d", .fwd = conv_f, .bwd = conv_b, .p.conv = p,
                     .out_n = p->n * p->o * p->oh * p->ow};
        fd_in(&c, p->n * p->c * p->h * p->w, -1, 1);
        fd_in(&c, p->o * (p->c / p->groups) * p->kh * p->kw, -1, 1);
        fd_in(&c, p->o, -1, 1);
        fd_check(&c);
    }
}

static void fd_pools(void) {
    static const mp__pool pools[] = {
        /* max: padding 1, stride 2, ceil_mode (5 -> 3) */
        {.n = 2, .c = 2, .h = 5, .w = 5, .oh = 3, .ow = 3, .kh = 3, .kw = 3, .sh = 2, .sw = 2,
         .ph = 1, .pw = 1, .dh = 1, .dw = 1},
        /* max: dilation 2, overlapping windows */
        {.n = 1, .c = 2, .h = 5, .w = 6, .oh = 3, .ow = 4, .kh = 2, .kw = 2, .sh = 1, .sw = 1,
         .ph = 0, .pw = 0, .dh = 2, .dw = 2},
        /* avg: padding 1, ceil_mode (5 -> 3, 4 -> 3), pads counted or not */
        {.n = 1, .c = 2, .h = 5, .w = 4, .oh = 3, .ow = 3, .kh = 2, .kw = 2, .sh = 2, .sw = 2,
         .ph = 1, .pw = 1, .count_include_pad = 1},
        {.n = 1, .c = 2, .h = 5, .w = 4, .oh = 3, .ow = 3, .kh = 2, .kw = 2, .sh = 2, .sw = 2,
         .ph = 1, .pw = 1, .count_include_pad = 0},
        /* adaptive 5x7 -> 3x2 (overlapping windows) */
        {.n = 2, .c = 1, .h = 5, .w = 7, .oh = 3, .ow = 2},
    };
    static const int kind[] = {0, 0, 1, 1, 2};
    MP_CHECK_EQ_U64(mp__pool_out_len(5, 3, 2, 1, 1, 1), 3);
    MP_CHECK_EQ_U64(mp__pool_out_len(4, 2, 2, 1, 1, 1), 3);
    MP_CHECK_EQ_U64(mp__pool_out_len(5, 2, 1, 0, 2, 0), 3);
    for (size_t i = 0; i < 5; i++) {
        const mp__pool *p = &pools[i];
        uint64_t nx = p->n * p->c * p->h * p->w;
        fd_case c = {.name = "pool", .fwd = pool_f, .bwd = pool_b, .p.pool = p, .p.op = kind[i],
                     .out_n = p->n * p->c * p->oh * p->ow};
        fd_in(&c, nx, -1, 1);
        if (kind[i] == 0) {
            /* distinct values 0.05 apart (> 2h), shuffled: no maximum
             * changes under the perturbation */
            for (uint64_t e = 0; e < nx; e++) c.in[0][e] = 0.05f * (float)e - 1.0f;
            for (uint64_t e = nx; e-- > 1;) {
                uint64_t r = next_u64() % (e + 1);
                float t = c.in[0][e];
                c.in[0][e] = c.in[0][r];
                c.in[0][r] = t;
            }
        }
        fd_check(&c);
    }
}

static void fd_norms(void) {
    fd_case b = {.name = "batchnorm", .fwd = bn_f, .bwd = bn_b, .out_n = 24, .p.d = {3, 2, 4}};
    fd_in(&b, 24, -1, 1);
    fd_in(&b, 2, 0.5f, 1.5f);
    fd_in(&b, 2, -1, 1);
    fd_check(&b);

    fd_case l = {.name = "layernorm", .fwd = ln_f, .bwd = ln_b, .out_n = 15, .p.d = {3, 5}};
    fd_in(&l, 15, -1, 1);
    fd_in(&l, 5, 0.5f, 1.5f);
    fd_in(&l, 5, -1, 1);
    fd_check(&l);

    fd_case s = {.name = "softmax", .fwd = sm_f, .bwd = sm_b, .out_n = 24, .p.d = {2, 4, 3}};
    fd_in(&s, 24, -2, 2);
    fd_check(&s);

    static const int64_t target[3] = {3, 0, 2};
    fd_case x = {.name = "softmax_xent", .fwd = xent_f, .bwd = xent_b, .out_n = 1,
                 .p.d = {3, 4}, .p.target = target};
    fd_in(&x, 12, -2, 2);
    fd_check(&x);

    fd_case k = {.name = "concat", .fwd = cat_f, .bwd = cat_b, .out_n = 36, .p.d = {1, 2, 3}};
    fd_in(&k, 6, -1, 1);
    fd_in(&k, 12, -1, 1);
    fd_in(&k, 18, -1, 1);
    fd_check(&k);
}

static void test_finite_differences(void) {
    fd_unary();
    fd_binary();
    fd_products();
    fd_pools();
    fd_norms();
}

int main(void) {
    test_conv_by_hand();
    test_conv_oracle();
    test_gemm();
    test_linear_paths();
    test_pool_by_hand();
    test_binary_by_hand();
    test_misc_by_hand();
    test_finite_differences();
    return mp_test_finish("kernels");
}
