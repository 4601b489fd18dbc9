/* kernels_view.c -- strided gather and its adjoint (the executor's views:
 * permute, transpose, expand, chunk, indexing), F.interpolate (nearest and
 * bilinear) and the mean over chosen dimensions, with their gradients.
 * Same rules as the other kernels: one thread, sums in double in a fixed
 * index order. */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- strided views --------------------------------------------------------- */

void mp__k_gather(const float *base, int64_t offset, const int64_t *st, const mp__kshape *s,
                  float *y) {
    uint64_t n = mp__kshape_numel(s), idx[MP_MAX_RANK] = {0};
    int64_t off = offset;
    for (uint64_t i = 0; i < n; i++) {
        y[i] = base[off];
        /* odometer: bump the last dimension, carry leftwards */
        for (size_t d = s->rank; d-- > 0;) {
            off += st[d];
            if (++idx[d] < s->d[d]) break;
            off -= st[d] * (int64_t)idx[d];
            idx[d] = 0;
        }
    }
}

void mp__k_scatter_add(const float *dy, const mp__kshape *s, int64_t offset, const int64_t *st,
                       double *acc) {
    uint64_t n = mp__kshape_numel(s), idx[MP_MAX_RANK] = {0};
    int64_t off = offset;
    for (uint64_t i = 0; i < n; i++) {
        acc[off] += dy[i];
        for (size_t d = s->rank; d-- > 0;) {
            off += st[d];
            if (++idx[d] < s->d[d]) break;
            off -= st[d] * (int64_t)idx[d];
            idx[d] = 0;
        }
    }
}

/* ---- interpolation ---------------------------------------------------------- */

/* Source taps of output pixel o along one axis: i0, i1 and their weights
 * (nearest: i0 only, weight 1). */
static void taps(int mode, int align, double scale, uint64_t in, uint64_t out, uint64_t o,
                 uint64_t *i0, uint64_t *i1, double *w0, double *w1) {
    double sc = scale > 0 ? scale : (double)in / (double)out;
    if (mode == 0) {
        double f = floor((double)o * sc);
        uint64_t i = f < 0 ? 0 : (uint64_t)f;
        *i0 = *i1 = i < in ? i : in - 1;
        *w0 = 1.0;
        *w1 = 0.0;
        return;
    }
    double src;
    if (align) src = out > 1 ? (double)o * (double)(in - 1) / (double)(out - 1) : 0.0;
    else {
        src = sc * ((double)o + 0.5) - 0.5;
        if (src < 0) src = 0;
    }
    double f = floor(src);
    uint64_t i = (uint64_t)f;
    if (i > in - 1) i = in - 1;
    *i0 = i;
    *i1 = i + 1 < in ? i + 1 : in - 1;
    *w1 = src - (double)i;
    if (*w1 < 0) *w1 = 0;
    *w0 = 1.0 - *w1;
}

void mp__k_interp(const mp__interp *p, const float *x, float *y) {
    for (uint64_t pl = 0; pl < p->n * p->c; pl++) {
        const float *xp = x + pl * p->h * p->w;
        float *yp = y + pl * p->oh * p->ow;
        for (uint64_t oy = 0; oy < p->oh; oy++) {
            uint64_t y0, y1, x0, x1;
            double a0, a1, b0, b1;
            taps(p->mode, p->align_corners, p->scale_h, p->h, p->oh, oy, &y0, &y1, &a0, &a1);
            for (uint64_t ox = 0; ox < p->ow; ox++) {
                taps(p->mode, p->align_corners, p->scale_w, p->w, p->ow, ox, &x0, &x1, &b0, &b1);
                double v = a0 * (b0 * xp[y0 * p->w + x0] + b1 * xp[y0 * p->w + x1]) +
                           a1 * (b0 * xp[y1 * p->w + x0] + b1 * xp[y1 * p->w + x1]);
                if (p->mode == 0) v = xp[y0 * p->w + x0];   /* NaN-exact, no 0 * x */
                yp[oy * p->ow + ox] = (float)v;
            }
        }
    }
}

mp_status mp__k_interp_backward(const mp__interp *p, const float *dy, float *dx) {
    uint64_t plane = p->h * p->w;
    double *acc = malloc((plane ? plane : 1) * sizeof *acc);
    if (!acc) return MP__NOMEM();
    for (uint64_t pl = 0; pl < p->n * p->c; pl++) {
        const float *dp = dy + pl * p->oh * p->ow;
        memset(acc, 0, plane * sizeof *acc);
        for (uint64_t oy = 0; oy < p->oh; oy++) {
            uint64_t y0, y1, x0, x1;
            double a0, a1, b0, b1;
            taps(p->mode, p->align_corners, p->scale_h, p->h, p->oh, oy, &y0, &y1, &a0, &a1);
            for (uint64_t ox = 0; ox < p->ow; ox++) {
                taps(p->mode, p->align_corners, p->scale_w, p->w, p->ow, ox, &x0, &x1, &b0, &b1);
                double g = dp[oy * p->ow + ox];
                if (p->mode == 0) {
                    acc[y0 * p->w + x0] += g;
                    continue;
                }
                acc[y0 * p->w + x0] += g * a0 * b0;
                acc[y0 * p->w + x1] += g * a0 * b1;
                acc[y1 * p->w + x0] += g * a1 * b0;
                acc[y1 * p->w + x1] += g * a1 * b1;
            }
        }
        for (uint64_t i = 0; i < plane; i++) dx[pl * plane + i] = (float)acc[i];
    }
    free(acc);
    return MP_OK;
}

/* ---- mean over dimensions ----------------------------------------------------- */

/* Index into the reduced output of each input element, as strides over
 * the input's dimensions (0 on reduced ones); returns the count reduced. */
static uint64_t kept_strides(const mp__kshape *s, uint64_t dims, int64_t *st) {
    int64_t acc = 1;
    uint64_t count = 1;
    for (size_t d = s->rank; d-- > 0;) {
        if (dims >> d & 1) {
            st[d] = 0;
            count *= s->d[d];
        } else {
            st[d] = acc;
            acc *= (int64_t)s->d[d];
        }
    }
    return count;
}

mp_status mp__k_reduce_mean(const float *x, const mp__kshape *s, uint64_t dims, float *y) {
    int64_t st[MP_MAX_RANK];
    uint64_t count = kept_strides(s, dims, st), n = mp__kshape_numel(s);
    uint64_t m = count ? n / count : 0;
    double *acc = calloc(m ? m : 1, sizeof *acc);
    if (!acc) return MP__NOMEM();
    mp__k_scatter_add(x, s, 0, st, acc);
    for (uint64_t i = 0; i < m; i++) y[i] = (float)(acc[i] / (double)count);
    free(acc);
    return MP_OK;
}

void mp__k_reduce_mean_backward(const float *dy, const mp__kshape *s, uint64_t dims, float *dx) {
    int64_t st[MP_MAX_RANK];
    uint64_t count = kept_strides(s, dims, st);
    mp__k_gather(dy, 0, st, s, dx);
    for (uint64_t i = 0, n = mp__kshape_numel(s); i < n; i++) dx[i] = (float)((double)dx[i] / (double)count);
}
