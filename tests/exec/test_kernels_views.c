/* test_kernels_views.c -- the executor's kernels for the fx exporter's
 * shape ops (kernels_view.c): F.interpolate (nearest, bilinear with and
 * without align_corners, a given scale factor), the mean over chosen dims,
 * and the strided gather that reads permuted / expanded / chunked aliases
 * with its adjoint (the views' gradients).  Values worked out by hand with
 * PyTorch's formulas, and every gradient against central finite
 * differences of its forward, as in test_kernels.c (the helpers both
 * share are in kernel_check.h). */
#include "harness.h"
#include "exec/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Parameters of one case (each case uses what it needs). */
typedef struct fd_par {
    mp__kshape s[1];            /* reduce_mean's input, the gather's output */
    const mp__interp *interp;
    uint64_t dims;              /* reduce_mean */
    int64_t off, st[MP_MAX_RANK];   /* gather */
} fd_par;

#include "kernel_check.h"

/* ---- backward: central finite differences ------------------------------ */




/* interpolate, reduce_mean, and the strided gather (whose gradient is
 * mp__k_scatter_add through the same strides) */
static void interp_f(const fd_case *c, float *y) { mp__k_interp(c->p.interp, c->in[0], y); }
static void interp_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    MP_CHECK_OK(mp__k_interp_backward(c->p.interp, dy, g[0]));
}
static void rmean_f(const fd_case *c, float *y) { MP_CHECK_OK(mp__k_reduce_mean(c->in[0], &c->p.s[0], c->p.dims, y)); }
static void rmean_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    mp__k_reduce_mean_backward(dy, &c->p.s[0], c->p.dims, g[0]);
}
static void gather_f(const fd_case *c, float *y) { mp__k_gather(c->in[0], c->p.off, c->p.st, &c->p.s[0], y); }
static void gather_b(const fd_case *c, const float *dy, const float *y, float **g) {
    (void)y;
    double *acc = calloc(c->in_n[0], sizeof *acc);
    mp__k_scatter_add(dy, &c->p.s[0], c->p.off, c->p.st, acc);
    for (uint64_t i = 0; i < c->in_n[0]; i++) g[0][i] = (float)acc[i];
    free(acc);
}

static void fd_views(void) {
    static const mp__interp cases[] = {
        /* nearest 3x4 -> 5x7 and 4x6 -> 2x3 (down), bilinear up and down,
         * align_corners both ways, a given scale_factor (1 / 2.5) */
        {.n = 2, .c = 2, .h = 3, .w = 4, .oh = 5, .ow = 7, .mode = 0},
        {.n = 1, .c = 2, .h = 4, .w = 6, .oh = 2, .ow = 3, .mode = 0},
        {.n = 2, .c = 2, .h = 3, .w = 4, .oh = 5, .ow = 7, .mode = 1},
        {.n = 1, .c = 3, .h = 5, .w = 6, .oh = 3, .ow = 4, .mode = 1},
        {.n = 2, .c = 1, .h = 3, .w = 4, .oh = 5, .ow = 7, .mode = 1, .align_corners = 1},
        {.n = 1, .c = 2, .h = 1, .w = 4, .oh = 3, .ow = 1, .mode = 1, .align_corners = 1},
        {.n = 1, .c = 2, .h = 2, .w = 2, .oh = 5, .ow = 5, .mode = 1, .scale_h = 0.4, .scale_w = 0.4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const mp__interp *q = &cases[i];
        fd_case c = {.name = "interpolate", .fwd = interp_f, .bwd = interp_b, .p.interp = q,
                     .out_n = q->n * q->c * q->oh * q->ow};
        fd_in(&c, q->n * q->c * q->h * q->w, -1, 1);
        fd_check(&c);
    }
    /* mean over dims {1, 3}, {0}, all, none of [2,3,4,5] */
    static const uint64_t dims[] = {0xA, 0x1, 0xF, 0x0};
    for (size_t i = 0; i < 4; i++) {
        fd_case c = {.name = "reduce_mean", .fwd = rmean_f, .bwd = rmean_b, .p.dims = dims[i]};
        c.p.s[0] = shp(4, (uint64_t[]){2, 3, 4, 5});
        uint64_t out = 1;
        for (size_t d = 0; d < 4; d++) out *= dims[i] >> d & 1 ? 1 : c.p.s[0].d[d];
        c.out_n = out;
        fd_in(&c, 120, -1, 1);
        fd_check(&c);
    }
    /* gather: x[2,3,4] permuted to [4,2,3] (strides 1,12,4); expand of
     * x[3] to [2,3] (stride 0: the gradient sums); a chunk [1,2,4] at
     * offset 4 of x[1,4,4] */
    {
        fd_case c = {.name = "gather permute", .fwd = gather_f, .bwd = gather_b, .out_n = 24};
        c.p.s[0] = shp(3, (uint64_t[]){4, 2, 3});
        memcpy(c.p.st, (int64_t[]){1, 12, 4}, 3 * sizeof(int64_t));
        fd_in(&c, 24, -1, 1);
        fd_check(&c);
    }
    {
        fd_case c = {.name = "gather expand", .fwd = gather_f, .bwd = gather_b, .out_n = 6};
        c.p.s[0] = shp(2, (uint64_t[]){2, 3});
        memcpy(c.p.st, (int64_t[]){0, 1}, 2 * sizeof(int64_t));
        fd_in(&c, 3, -1, 1);
        fd_check(&c);
    }
    {
        fd_case c = {.name = "gather chunk", .fwd = gather_f, .bwd = gather_b, .out_n = 8, .p.off = 4};
        c.p.s[0] = shp(3, (uint64_t[]){1, 2, 4});
        memcpy(c.p.st, (int64_t[]){16, 4, 1}, 3 * sizeof(int64_t));
        fd_in(&c, 16, -1, 1);
        fd_check(&c);
    }
}

/* Interpolation and views on values worked out by hand (PyTorch's
 * formulas: nearest src = floor(dst in/out); bilinear half-pixel src =
 * (dst + 0.5) in/out - 0.5 clamped at 0; align_corners src = dst (in-1)/(out-1)). */
static void test_views_by_hand(void) {
    /* x = [[0, 1], [2, 3]] (1x1x2x2) */
    const float x[4] = {0, 1, 2, 3};
    float y[16];
    /* nearest 2x2 -> 3x3: src rows/cols floor(o * 2/3) = 0, 0, 1 */
    mp__interp p = {.n = 1, .c = 1, .h = 2, .w = 2, .oh = 3, .ow = 3, .mode = 0};
    mp__k_interp(&p, x, y);
    MP_CHECK(near_all(y, (const double[]){0, 0, 1, 0, 0, 1, 2, 2, 3}, 9, 0));
    /* bilinear 2x2 -> 4x4, half-pixel: src = (o + 0.5)/2 - 0.5 = -0.25
     * (clamped 0), 0.25, 0.75, 1.25 (-> index 1, weight 0.25 of the clamped
     * 1: value 1); along a row of [0, 1]: 0, 0.25, 0.75, 1; the rows add
     * 2 * (that row profile): 0, 0.5, 1.5, 2 */
    p = (mp__interp){.n = 1, .c = 1, .h = 2, .w = 2, .oh = 4, .ow = 4, .mode = 1};
    mp__k_interp(&p, x, y);
    MP_CHECK(near_all(y, (const double[]){0, 0.25, 0.75, 1, 0.5, 0.75, 1.25, 1.5,
                                          1.5, 1.75, 2.25, 2.5, 2, 2.25, 2.75, 3}, 16, 1e-7));
    /* align_corners 2x2 -> 3x3: src = 0, 0.5, 1: the corners and midpoints */
    p = (mp__interp){.n = 1, .c = 1, .h = 2, .w = 2, .oh = 3, .ow = 3, .mode = 1, .align_corners = 1};
    mp__k_interp(&p, x, y);
    MP_CHECK(near_all(y, (const double[]){0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3}, 9, 1e-7));
    /* mean of [[0, 1], [2, 3]] over dim 0: [1, 2]; over dim 1: [0.5, 2.5] */
    mp__kshape s = shp(2, (uint64_t[]){2, 2});
    MP_CHECK_OK(mp__k_reduce_mean(x, &s, 1, y));
    MP_CHECK(near_all(y, (const double[]){1, 2}, 2, 0));
    MP_CHECK_OK(mp__k_reduce_mean(x, &s, 2, y));
    MP_CHECK(near_all(y, (const double[]){0.5, 2.5}, 2, 0));
    /* transpose of [[0, 1], [2, 3]]: strides (1, 2) */
    mp__k_gather(x, 0, (const int64_t[]){1, 2}, &s, y);
    MP_CHECK(near_all(y, (const double[]){0, 2, 1, 3}, 4, 0));
}


int main(void) {
    test_views_by_hand();
    fd_views();
    return mp_test_finish("kernels_views");
}
