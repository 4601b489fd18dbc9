/* kernels_softmax.c -- softmax, the softmax cross-entropy loss, and
 * concatenation with its inverse (the gradient of concat).
 *
 * Exponentials and sums are taken in double after subtracting the row
 * maximum, so the loss is accurate to float rounding, which is what the
 * finite-difference checks of the gradients need. */
#include "kernels.h"

#include <math.h>
#include <string.h>

void mp__k_softmax(const float *x, float *y, uint64_t outer, uint64_t len, uint64_t inner) {
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t i = 0; i < inner; i++) {
            const float *p = x + o * len * inner + i;
            float *q = y + o * len * inner + i;
            double m = -INFINITY, s = 0.0;
            for (uint64_t j = 0; j < len; j++)
                if (p[j * inner] > m || isnan(p[j * inner])) m = p[j * inner];
            for (uint64_t j = 0; j < len; j++) s += exp(p[j * inner] - m);
            for (uint64_t j = 0; j < len; j++) q[j * inner] = (float)(exp(p[j * inner] - m) / s);
        }
}

void mp__k_softmax_backward(const float *dy, const float *y, float *dx, uint64_t outer,
                            uint64_t len, uint64_t inner) {
    for (uint64_t o = 0; o < outer; o++)
        for (uint64_t i = 0; i < inner; i++) {
            uint64_t base = o * len * inner + i;
            double s = 0.0;
            for (uint64_t j = 0; j < len; j++)
                s += (double)dy[base + j * inner] * y[base + j * inner];
            for (uint64_t j = 0; j < len; j++)
                dx[base + j * inner] =
                    (float)((double)y[base + j * inner] * (dy[base + j * inner] - s));
        }
}

/* Row maximum and log of the sum of exp(x - max). */
static void row_lse(const float *x, uint64_t k, double *max, double *logsum) {
    double m = -INFINITY, s = 0.0;
    for (uint64_t j = 0; j < k; j++)
        if (x[j] > m || isnan(x[j])) m = x[j];
    for (uint64_t j = 0; j < k; j++) s += exp(x[j] - m);
    *max = m;
    *logsum = log(s);
}

/* Target i, checked against [0, k). */
static mp_status target_at(const void *target, uint64_t i, uint64_t k, uint64_t *t) {
    int64_t v;
    memcpy(&v, (const char *)target + i * sizeof v, sizeof v);
    if (v < 0 || (uint64_t)v >= k)
        return mp__err(MP_EINVAL, "softmax_xent: target[%llu] = %lld is outside [0, %llu)",
                       (unsigned long long)i, (long long)v, (unsigned long long)k);
    *t = (uint64_t)v;
    return MP_OK;
}

mp_status mp__k_softmax_xent(const float *logits, const void *target, uint64_t n, uint64_t k,
                             float *loss) {
    double total = 0.0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t = 0;
        mp_status st = target_at(target, i, k, &t);
        if (st != MP_OK) return st;
        double m, ls;
        row_lse(logits + i * k, k, &m, &ls);
        total += m + ls - logits[i * k + t];
    }
    *loss = (float)(n ? total / (double)n : 0.0);
    return MP_OK;
}

mp_status mp__k_softmax_xent_backward(float dl, const float *logits, const void *target,
                                      uint64_t n, uint64_t k, float *dlogits) {
    double scale = n ? (double)dl / (double)n : 0.0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t = 0;
        mp_status st = target_at(target, i, k, &t);
        if (st != MP_OK) return st;
        const float *x = logits + i * k;
        double m, ls;
        row_lse(x, k, &m, &ls);
        for (uint64_t j = 0; j < k; j++) {
            double p = exp(x[j] - m - ls);
            dlogits[i * k + j] = (float)(scale * (p - (j == t ? 1.0 : 0.0)));
        }
    }
    return MP_OK;
}

void mp__k_concat(const float *const *x, const uint64_t *len, size_t k, float *y, uint64_t outer,
                  uint64_t inner) {
    uint64_t total = 0;
    for (size_t i = 0; i < k; i++) total += len[i];
    for (uint64_t o = 0; o < outer; o++) {
        float *dst = y + o * total * inner;
        for (size_t i = 0; i < k; i++) {
            uint64_t run = len[i] * inner;
            memcpy(dst, x[i] + o * run, run * sizeof *dst);
            dst += run;
        }
    }
}

void mp__k_split(const float *y, float *const *x, const uint64_t *len, size_t k, uint64_t outer,
                 uint64_t inner) {
    uint64_t total = 0;
    for (size_t i = 0; i < k; i++) total += len[i];
    for (uint64_t o = 0; o < outer; o++) {
        const float *src = y + o * total * inner;
        for (size_t i = 0; i < k; i++) {
            uint64_t run = len[i] * inner;
            if (x[i]) memcpy(x[i] + o * run, src, run * sizeof *src);
            src += run;
        }
    }
}
