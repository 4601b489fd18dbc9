/* kernels_norm.c -- batch norm (batch statistics) and layer norm, forward
 * and backward.
 *
 * Batch norm uses the batch's mean and biased variance, as PyTorch does in
 * training mode; the running statistics are neither read nor updated, so a
 * run has no state beyond its inputs.  Statistics are two-pass sums in
 * double, in a fixed order (image, then position); the gradient recomputes
 * them from x, so the backward node needs only the forward inputs. */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>

/* Mean and 1 / sqrt(var + eps) of channel ch of x[n, c, hw]. */
static void bn_stats(const float *x, uint64_t n, uint64_t c, uint64_t hw, uint64_t ch, double eps,
                     double *mean, double *invstd) {
    double s = 0.0, m = (double)(n * hw);
    for (uint64_t i = 0; i < n; i++) {
        const float *p = x + (i * c + ch) * hw;
        for (uint64_t q = 0; q < hw; q++) s += p[q];
    }
    double mu = m > 0 ? s / m : 0.0, v = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        const float *p = x + (i * c + ch) * hw;
        for (uint64_t q = 0; q < hw; q++) {
            double d = p[q] - mu;
            v += d * d;
        }
    }
    *mean = mu;
    *invstd = 1.0 / sqrt((m > 0 ? v / m : 0.0) + eps);
}

mp_status mp__k_batchnorm(const float *x, const float *w, const float *b, float *y, uint64_t n,
                          uint64_t c, uint64_t hw, double eps) {
    for (uint64_t ch = 0; ch < c; ch++) {
        double mu, is;
        bn_stats(x, n, c, hw, ch, eps, &mu, &is);
        double scale = (w ? w[ch] : 1.0) * is, shift = b ? b[ch] : 0.0;
        for (uint64_t i = 0; i < n; i++) {
            const float *p = x + (i * c + ch) * hw;
            float *o = y + (i * c + ch) * hw;
            for (uint64_t q = 0; q < hw; q++) o[q] = (float)((p[q] - mu) * scale + shift);
        }
    }
    return MP_OK;
}

mp_status mp__k_batchnorm_backward(const float *dy, const float *x, const float *w, uint64_t n,
                                   uint64_t c, uint64_t hw, double eps, float *dx, float *dw,
                                   float *db) {
    double m = (double)(n * hw);
    for (uint64_t ch = 0; ch < c; ch++) {
        double mu, is;
        bn_stats(x, n, c, hw, ch, eps, &mu, &is);
        double sdy = 0.0, sdyx = 0.0;   /* sum dy, sum dy xhat */
        for (uint64_t i = 0; i < n; i++) {
            const float *p = x + (i * c + ch) * hw, *d = dy + (i * c + ch) * hw;
            for (uint64_t q = 0; q < hw; q++) {
                sdy += d[q];
                sdyx += d[q] * ((p[q] - mu) * is);
            }
        }
        if (dw) dw[ch] = (float)sdyx;
        if (db) db[ch] = (float)sdy;
        if (!dx || !(m > 0)) continue;
        double k = (w ? w[ch] : 1.0) * is / m;
        for (uint64_t i = 0; i < n; i++) {
            const float *p = x + (i * c + ch) * hw, *d = dy + (i * c + ch) * hw;
            float *o = dx + (i * c + ch) * hw;
            for (uint64_t q = 0; q < hw; q++) {
                double xh = (p[q] - mu) * is;
                o[q] = (float)(k * (m * d[q] - sdy - xh * sdyx));
            }
        }
    }
    return MP_OK;
}

/* Mean and 1 / sqrt(var + eps) of one row. */
static void ln_stats(const float *x, uint64_t d, double eps, double *mean, double *invstd) {
    double s = 0.0, v = 0.0;
    for (uint64_t j = 0; j < d; j++) s += x[j];
    double mu = d ? s / (double)d : 0.0;
    for (uint64_t j = 0; j < d; j++) v += (x[j] - mu) * (x[j] - mu);
    *mean = mu;
    *invstd = 1.0 / sqrt((d ? v / (double)d : 0.0) + eps);
}

void mp__k_layernorm(const float *x, const float *w, const float *b, float *y, uint64_t rows,
                     uint64_t d, double eps) {
    for (uint64_t r = 0; r < rows; r++) {
        const float *p = x + r * d;
        float *o = y + r * d;
        double mu, is;
        ln_stats(p, d, eps, &mu, &is);
        for (uint64_t j = 0; j < d; j++)
            o[j] = (float)((p[j] - mu) * is * (w ? w[j] : 1.0) + (b ? b[j] : 0.0));
    }
}

mp_status mp__k_layernorm_backward(const float *dy, const float *x, const float *w,
                                   uint64_t rows, uint64_t d, double eps, float *dx, float *dw,
                                   float *db) {
    double *acc = calloc(2 * (d ? d : 1), sizeof *acc);   /* sum dy xhat, sum dy */
    if (!acc) return MP__NOMEM();
    for (uint64_t r = 0; r < rows; r++) {
        const float *p = x + r * d, *g = dy + r * d;
        double mu, is, sg = 0.0, sgx = 0.0;
        ln_stats(p, d, eps, &mu, &is);
        for (uint64_t j = 0; j < d; j++) {
            double xh = (p[j] - mu) * is, gj = g[j] * (w ? w[j] : 1.0);
            acc[j] += g[j] * xh;
            acc[d + j] += g[j];
            sg += gj;
            sgx += gj * xh;
        }
        if (!dx || !d) continue;
        float *o = dx + r * d;
        for (uint64_t j = 0; j < d; j++) {
            double xh = (p[j] - mu) * is, gj = g[j] * (w ? w[j] : 1.0);
            o[j] = (float)(is / (double)d * ((double)d * gj - sg - xh * sgx));
        }
    }
    for (uint64_t j = 0; j < d; j++) {
        if (dw) dw[j] = (float)acc[j];
        if (db) db[j] = (float)acc[d + j];
    }
    free(acc);
    return MP_OK;
}
