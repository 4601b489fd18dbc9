/* kernels_pool.c -- max, average and adaptive average 2-D pooling and
 * their gradients, with PyTorch's window rules (padding, dilation for max,
 * ceil_mode, count_include_pad).
 *
 * Window sums accumulate in double in row-major window order; gradients
 * scatter in increasing output order into a double plane, so every result
 * has one fixed summation order. */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t mp__pool_out_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode) {
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    /* floor division (num may be negative for a window larger than the input) */
    int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
    int64_t out = q + 1;
    /* the last window must start inside the input or its left padding */
    if (ceil_mode && (out - 1) * s >= in + p) out--;
    return out;
}

/* The window of output position o along one axis: taps start, start + d,
 * ... below end (already clipped to the input). */
static void max_window(int64_t o, int64_t k, int64_t s, int64_t p, int64_t d, int64_t in,
                       int64_t *start, int64_t *end) {
    int64_t st = o * s - p;
    int64_t en = st + (k - 1) * d + 1;
    if (en > in) en = in;
    while (st < 0) st += d;
    *start = st;
    *end = en;
}

/* Index in the plane of the first maximum of window (oy, ox): PyTorch's
 * rule: a value replaces the maximum when greater or NaN.  -1 when the
 * window is empty. */
static int64_t argmax(const mp__pool *p, const float *xp, int64_t oy, int64_t ox) {
    int64_t h0, h1, w0, w1;
    max_window(oy, p->kh, p->sh, p->ph, p->dh, (int64_t)p->h, &h0, &h1);
    max_window(ox, p->kw, p->sw, p->pw, p->dw, (int64_t)p->w, &w0, &w1);
    int64_t best = -1;
    float m = -INFINITY;
    for (int64_t iy = h0; iy < h1; iy += p->dh)
        for (int64_t ix = w0; ix < w1; ix += p->dw) {
            int64_t i = iy * (int64_t)p->w + ix;
            float v = xp[i];
            if (best < 0) best = i;   /* PyTorch starts at the first tap */
            if (v > m || isnan(v)) {
                best = i;
                m = v;
            }
        }
    return best;
}

void mp__k_maxpool2d(const mp__pool *p, const float *x, float *y) {
    uint64_t planes = p->n * p->c;
    for (uint64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * p->h * p->w;
        float *yp = y + pl * p->oh * p->ow;
        for (int64_t oy = 0; oy < (int64_t)p->oh; oy++)
            for (int64_t ox = 0; ox < (int64_t)p->ow; ox++) {
                int64_t i = argmax(p, xp, oy, ox);
                yp[oy * (int64_t)p->ow + ox] = i < 0 ? -INFINITY : xp[i];
            }
    }
}

void mp__k_maxpool2d_backward(const mp__pool *p, const float *dy, const float *x, float *dx) {
    uint64_t planes = p->n * p->c;
    memset(dx, 0, planes * p->h * p->w * sizeof *dx);
    for (uint64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * p->h * p->w;
        const float *dp = dy + pl * p->oh * p->ow;
        float *gp = dx + pl * p->h * p->w;
        for (int64_t oy = 0; oy < (int64_t)p->oh; oy++)
            for (int64_t ox = 0; ox < (int64_t)p->ow; ox++) {
                int64_t i = argmax(p, xp, oy, ox);
                if (i >= 0) gp[i] += dp[oy * (int64_t)p->ow + ox];
            }
    }
}

/* Average window of output (oy, ox): clipped bounds and the divisor. */
static void avg_window(const mp__pool *p, int64_t oy, int64_t ox, int64_t *h0, int64_t *h1,
                       int64_t *w0, int64_t *w1, double *div) {
    int64_t H = (int64_t)p->h, W = (int64_t)p->w;
    int64_t hs = oy * p->sh - p->ph, ws = ox * p->sw - p->pw;
    int64_t he = hs + p->kh, we = ws + p->kw;
    if (he > H + p->ph) he = H + p->ph;
    if (we > W + p->pw) we = W + p->pw;
    int64_t pool = (he - hs) * (we - ws);
    if (hs < 0) hs = 0;
    if (ws < 0) ws = 0;
    if (he > H) he = H;
    if (we > W) we = W;
    *h0 = hs;
    *h1 = he;
    *w0 = ws;
    *w1 = we;
    int64_t cnt = (he > hs && we > ws) ? (he - hs) * (we - ws) : 0;
    *div = (double)(p->count_include_pad ? pool : cnt);
}

void mp__k_avgpool2d(const mp__pool *p, const float *x, float *y) {
    uint64_t planes = p->n * p->c;
    for (uint64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * p->h * p->w;
        float *yp = y + pl * p->oh * p->ow;
        for (int64_t oy = 0; oy < (int64_t)p->oh; oy++)
            for (int64_t ox = 0; ox < (int64_t)p->ow; ox++) {
                int64_t h0, h1, w0, w1;
                double div, s = 0.0;
                avg_window(p, oy, ox, &h0, &h1, &w0, &w1, &div);
                for (int64_t iy = h0; iy < h1; iy++)
                    for (int64_t ix = w0; ix < w1; ix++) s += xp[iy * (int64_t)p->w + ix];
                yp[oy * (int64_t)p->ow + ox] = div > 0 ? (float)(s / div) : 0.0f;
            }
    }
}

mp_status mp__k_avgpool2d_backward(const mp__pool *p, const float *dy, float *dx) {
    uint64_t planes = p->n * p->c, hw = p->h * p->w;
    double *acc = malloc((hw ? hw : 1) * sizeof *acc);
    if (!acc) return MP__NOMEM();
    for (uint64_t pl = 0; pl < planes; pl++) {
        const float *dp = dy + pl * p->oh * p->ow;
        memset(acc, 0, hw * sizeof *acc);
        for (int64_t oy = 0; oy < (int64_t)p->oh; oy++)
            for (int64_t ox = 0; ox < (int64_t)p->ow; ox++) {
                int64_t h0, h1, w0, w1;
                double div;
                avg_window(p, oy, ox, &h0, &h1, &w0, &w1, &div);
                if (!(div > 0)) continue;
                double g = dp[oy * (int64_t)p->ow + ox] / div;
                for (int64_t iy = h0; iy < h1; iy++)
                    for (int64_t ix = w0; ix < w1; ix++) acc[iy * (int64_t)p->w + ix] += g;
            }
        float *gp = dx + pl * hw;
        for (uint64_t i = 0; i < hw; i++) gp[i] = (float)acc[i];
    }
    free(acc);
    return MP_OK;
}

/* Adaptive window along one axis: [floor(o in / out), ceil((o + 1) in / out)). */
static void adaptive_window(uint64_t o, uint64_t in, uint64_t out, uint64_t *s, uint64_t *e) {
    *s = (o * in) / out;
    *e = ((o + 1) * in + out - 1) / out;
}

void mp__k_adaptive_avgpool2d(const mp__pool *p, const float *x, float *y) {
    uint64_t planes = p->n * p->c;
    for (uint64_t pl = 0; pl < planes; pl++) {
        const float *xp = x + pl * p->h * p->w;
        float *yp = y + pl * p->oh * p->ow;
        for (uint64_t oy = 0; oy < p->oh; oy++) {
            uint64_t h0, h1;
            adaptive_window(oy, p->h, p->oh, &h0, &h1);
            for (uint64_t ox = 0; ox < p->ow; ox++) {
                uint64_t w0, w1;
                adaptive_window(ox, p->w, p->ow, &w0, &w1);
                double s = 0.0;
                for (uint64_t iy = h0; iy < h1; iy++)
                    for (uint64_t ix = w0; ix < w1; ix++) s += xp[iy * p->w + ix];
                double cnt = (double)((h1 - h0) * (w1 - w0));
                yp[oy * p->ow + ox] = cnt > 0 ? (float)(s / cnt) : 0.0f;
            }
        }
    }
}

mp_status mp__k_adaptive_avgpool2d_backward(const mp__pool *p, const float *dy, float *dx) {
    uint64_t planes = p->n * p->c, hw = p->h * p->w;
    double *acc = malloc((hw ? hw : 1) * sizeof *acc);
    if (!acc) return MP__NOMEM();
    for (uint64_t pl = 0; pl < planes; pl++) {
        const float *dp = dy + pl * p->oh * p->ow;
        memset(acc, 0, hw * sizeof *acc);
        for (uint64_t oy = 0; oy < p->oh; oy++) {
            uint64_t h0, h1;
            adaptive_window(oy, p->h, p->oh, &h0, &h1);
            for (uint64_t ox = 0; ox < p->ow; ox++) {
                uint64_t w0, w1;
                adaptive_window(ox, p->w, p->ow, &w0, &w1);
                double cnt = (double)((h1 - h0) * (w1 - w0));
                if (!(cnt > 0)) continue;
                double g = dp[oy * p->ow + ox] / cnt;
                for (uint64_t iy = h0; iy < h1; iy++)
                    for (uint64_t ix = w0; ix < w1; ix++) acc[iy * p->w + ix] += g;
            }
        }
        float *gp = dx + pl * hw;
        for (uint64_t i = 0; i < hw; i++) gp[i] = (float)acc[i];
    }
    free(acc);
    return MP_OK;
}
