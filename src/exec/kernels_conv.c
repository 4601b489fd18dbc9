/* kernels_conv.c -- 2-D convolution (groups, stride, padding, dilation) and
 * its gradients, by im2col and the fixed-order GEMM of kernels_gemm.c.
 *
 * Per image and group: col[(c kh + i) kw + j][p] holds the input element
 * that kernel tap (c, i, j) meets at output position p (0 in the padding);
 * then y_g = W_g col, dW_g += dy_g col^T (images in increasing order) and
 * dcol = W_g^T dy_g, scattered back by col2im in a fixed order.  A 1x1
 * convolution with stride 1 and no padding reads the input in place of col. */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

/* Rows of col for one group: (C / groups) kh kw; columns oh ow. */
static void im2col(const mp__conv *p, const float *x, float *col) {
    uint64_t cg = p->c / p->groups, P = p->oh * p->ow;
    for (uint64_t c = 0; c < cg; c++) {
        const float *xc = x + c * p->h * p->w;
        for (int64_t i = 0; i < (int64_t)p->kh; i++) {
            for (int64_t j = 0; j < (int64_t)p->kw; j++) {
                float *row = col + ((c * p->kh + (uint64_t)i) * p->kw + (uint64_t)j) * P;
                for (int64_t oy = 0; oy < (int64_t)p->oh; oy++) {
                    int64_t iy = oy * p->sh - p->ph + i * p->dh;
                    float *r = row + (uint64_t)oy * p->ow;
                    if (iy < 0 || iy >= (int64_t)p->h) {
                        memset(r, 0, p->ow * sizeof *r);
                        continue;
                    }
                    const float *xr = xc + (uint64_t)iy * p->w;
                    for (int64_t ox = 0; ox < (int64_t)p->ow; ox++) {
                        int64_t ix = ox * p->sw - p->pw + j * p->dw;
                        r[ox] = (ix < 0 || ix >= (int64_t)p->w) ? 0.0f : xr[ix];
                    }
                }
            }
        }
    }
}

/* dx (one group's channels) += the col entries, visiting col in row order;
 * dx must be zeroed first. */
static void col2im(const mp__conv *p, const float *col, float *dx) {
    uint64_t cg = p->c / p->groups, P = p->oh * p->ow;
    for (uint64_t c = 0; c < cg; c++) {
        float *xc = dx + c * p->h * p->w;
        for (int64_t i = 0; i < (int64_t)p->kh; i++) {
            for (int64_t j = 0; j < (int64_t)p->kw; j++) {
                const float *row = col + ((c * p->kh + (uint64_t)i) * p->kw + (uint64_t)j) * P;
                for (int64_t oy = 0; oy < (int64_t)p->oh; oy++) {
                    int64_t iy = oy * p->sh - p->ph + i * p->dh;
                    if (iy < 0 || iy >= (int64_t)p->h) continue;
                    const float *r = row + (uint64_t)oy * p->ow;
                    float *xr = xc + (uint64_t)iy * p->w;
                    for (int64_t ox = 0; ox < (int64_t)p->ow; ox++) {
                        int64_t ix = ox * p->sw - p->pw + j * p->dw;
                        if (ix >= 0 && ix < (int64_t)p->w) xr[ix] += r[ox];
                    }
                }
            }
        }
    }
}

/* A 1x1, stride-1, unpadded convolution: col is the input itself. */
static int pointwise(const mp__conv *p) {
    return p->kh == 1 && p->kw == 1 && p->sh == 1 && p->sw == 1 && p->ph == 0 && p->pw == 0 &&
           p->oh == p->h && p->ow == p->w;
}

mp_status mp__k_conv2d(const mp__conv *p, const float *x, const float *w, const float *b,
                       float *y) {
    uint64_t G = p->groups, cg = p->c / G, og = p->o / G, P = p->oh * p->ow;
    uint64_t K = cg * p->kh * p->kw;
    int direct = pointwise(p);
    float *col = NULL;
    if (!direct && K != 0 && P != 0) {
        col = malloc(K * P * sizeof *col);
        if (!col) return MP__NOMEM();
    }
    for (uint64_t n = 0; n < p->n; n++) {
        for (uint64_t g = 0; g < G; g++) {
            const float *xg = x + (n * p->c + g * cg) * p->h * p->w;
            float *yg = y + (n * p->o + g * og) * P;
            const float *src = xg;
            if (!direct) {
                im2col(p, xg, col);
                src = col;
            }
            mp__gemm(og, P, K, w + g * og * K, K, 1, src, P, yg, P, 0);
            if (b)
                for (uint64_t o = 0; o < og; o++) {
                    float bo = b[g * og + o];
                    float *yo = yg + o * P;
                    for (uint64_t q = 0; q < P; q++) yo[q] += bo;
                }
        }
    }
    free(col);
    return MP_OK;
}

mp_status mp__k_conv2d_backward(const mp__conv *p, const float *dy, const float *x,
                                const float *w, float *dx, float *dw, float *db) {
    uint64_t G = p->groups, cg = p->c / G, og = p->o / G, P = p->oh * p->ow;
    uint64_t K = cg * p->kh * p->kw;
    int direct = pointwise(p);
    float *col = NULL, *colt = NULL;
    mp_status st = MP_OK;
    if (K != 0 && P != 0) {
        /* col for dW (im2col of x), transposed into colt for the GEMM; and
         * col again as dcol for dx. */
        col = malloc(K * P * sizeof *col);
        colt = malloc(K * P * sizeof *colt);
        if (!col || !colt) {
            st = MP__NOMEM();
            goto done;
        }
    }
    if (db) {
        for (uint64_t o = 0; o < p->o; o++) {
            double s = 0.0;
            for (uint64_t n = 0; n < p->n; n++) {
                const float *d = dy + (n * p->o + o) * P;
                for (uint64_t q = 0; q < P; q++) s += d[q];
            }
            db[o] = (float)s;
        }
    }
    if (dw && (p->n == 0 || K == 0 || P == 0)) memset(dw, 0, p->o * K * sizeof *dw);
    if (dx) memset(dx, 0, p->n * p->c * p->h * p->w * sizeof *dx);
    if (K == 0 || P == 0) goto done;
    for (uint64_t n = 0; n < p->n; n++) {
        for (uint64_t g = 0; g < G; g++) {
            const float *dyg = dy + (n * p->o + g * og) * P;
            const float *wg = w + g * og * K;
            if (dw) {
                /* dW_g[og, K] (+)= dy_g[og, P] col^T[P, K] */
                const float *src = x + (n * p->c + g * cg) * p->h * p->w;
                if (!direct) {
                    im2col(p, src, col);
                    src = col;
                }
                for (uint64_t r = 0; r < K; r++)
                    for (uint64_t q = 0; q < P; q++) colt[q * K + r] = src[r * P + q];
                mp__gemm(og, K, P, dyg, P, 1, colt, K, dw + g * og * K, K, n > 0);
            }
            if (dx) {
                /* dcol[K, P] = W_g^T[K, og] dy_g[og, P] */
                float *dxg = dx + (n * p->c + g * cg) * p->h * p->w;
                if (direct) {
                    mp__gemm(K, P, og, wg, 1, K, dyg, P, dxg, P, 0);
                } else {
                    mp__gemm(K, P, og, wg, 1, K, dyg, P, col, P, 0);
                    col2im(p, col, dxg);
                }
            }
        }
    }
done:
    free(col);
    free(colt);
    return st;
}
