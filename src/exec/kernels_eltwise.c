/* kernels_eltwise.c -- elementwise kernels: activations, broadcasting
 * add/sub/mul and their gradients (reduced to the input shapes), sum_n.
 *
 * Activations are evaluated in double and rounded once, so they are as
 * accurate as float allows.  NaN propagates through every activation
 * (relu of NaN is NaN, as in PyTorch): a poisoned value that a planned run
 * reads by mistake reaches the outputs instead of being squashed. */
#include "kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t mp__kshape_numel(const mp__kshape *s) {
    uint64_t n = 1;
    for (size_t i = 0; i < s->rank; i++) n *= s->d[i];
    return n;
}

/* ---- unary -------------------------------------------------------------- */

static float unary1(mp__unop op, float xf) {
    double x = xf;
    switch (op) {
    case MP__U_RELU: return xf <= 0.0f ? 0.0f : xf;
    case MP__U_SIGMOID: return (float)(1.0 / (1.0 + exp(-x)));
    case MP__U_TANH: return (float)tanh(x);
    case MP__U_RELU6: return xf <= 0.0f ? 0.0f : (xf >= 6.0f ? 6.0f : xf);
    case MP__U_SILU: return (float)(x / (1.0 + exp(-x)));
    case MP__U_HARDSWISH:
        return xf <= -3.0f ? 0.0f : (xf >= 3.0f ? xf : (float)(x * (x + 3.0) / 6.0));
    case MP__U_HARDSIGMOID:
        return xf <= -3.0f ? 0.0f : (xf >= 3.0f ? 1.0f : (float)(x / 6.0 + 0.5));
    case MP__U_GELU: return (float)(0.5 * x * (1.0 + erf(x * 0.70710678118654752440)));
    case MP__U_IDENTITY: return xf;
    }
    return xf;
}

void mp__k_unary(mp__unop op, const float *x, float *y, uint64_t n) {
    if (op == MP__U_RELU) {   /* the hot one: a loop the compiler vectorizes */
        for (uint64_t i = 0; i < n; i++) y[i] = x[i] <= 0.0f ? 0.0f : x[i];
        return;
    }
    for (uint64_t i = 0; i < n; i++) y[i] = unary1(op, x[i]);
}

int mp__k_unary_grad_from_output(mp__unop op) {
    return op == MP__U_RELU || op == MP__U_SIGMOID || op == MP__U_TANH;
}

/* f'(.) at v (the output for relu/sigmoid/tanh, the input otherwise); at
 * the kinks the one-sided value PyTorch uses. */
static double deriv1(mp__unop op, float vf) {
    double v = vf;
    switch (op) {
    case MP__U_RELU: return vf > 0.0f ? 1.0 : 0.0;
    case MP__U_SIGMOID: return v * (1.0 - v);
    case MP__U_TANH: return 1.0 - v * v;
    case MP__U_RELU6: return (vf > 0.0f && vf < 6.0f) ? 1.0 : 0.0;
    case MP__U_SILU: {
        double s = 1.0 / (1.0 + exp(-v));
        return s * (1.0 + v * (1.0 - s));
    }
    case MP__U_HARDSWISH: return vf < -3.0f ? 0.0 : (vf <= 3.0f ? (2.0 * v + 3.0) / 6.0 : 1.0);
    case MP__U_HARDSIGMOID: return (vf > -3.0f && vf < 3.0f) ? 1.0 / 6.0 : 0.0;
    case MP__U_GELU:
        return 0.5 * (1.0 + erf(v * 0.70710678118654752440)) +
               v * exp(-0.5 * v * v) * 0.39894228040143267794;
    case MP__U_IDENTITY: return 1.0;
    }
    return 1.0;
}

void mp__k_unary_backward(mp__unop op, const float *dy, const float *v, float *dx, uint64_t n) {
    if (op == MP__U_RELU) {
        for (uint64_t i = 0; i < n; i++) dx[i] = v[i] > 0.0f ? dy[i] : 0.0f;
        return;
    }
    for (uint64_t i = 0; i < n; i++) dx[i] = (float)((double)dy[i] * deriv1(op, v[i]));
}

/* ---- broadcasting ------------------------------------------------------- */

/* Strides of x (right-aligned to y's dimensions) in y's index space: 0
 * along dimensions x broadcasts. */
static void bcast_strides(const mp__kshape *ys, const mp__kshape *xs, uint64_t *st) {
    size_t off = ys->rank - xs->rank;
    uint64_t s = 1;
    for (size_t d = ys->rank; d-- > 0;) {
        if (d < off) {
            st[d] = 0;
            continue;
        }
        uint64_t xd = xs->d[d - off];
        st[d] = (xd == 1) ? 0 : s;
        s *= xd;
    }
}

static int same_shape(const mp__kshape *a, const mp__kshape *b) {
    if (a->rank != b->rank) return 0;
    for (size_t i = 0; i < a->rank; i++)
        if (a->d[i] != b->d[i]) return 0;
    return 1;
}

/* An odometer over y's index space: rows of y's last dimension, with the
 * offsets of two broadcast operands. */
typedef struct walk {
    size_t rank;
    uint64_t dim[MP_MAX_RANK], sa[MP_MAX_RANK], sb[MP_MAX_RANK], idx[MP_MAX_RANK];
    uint64_t ia, ib;    /* offsets of the current row's first element */
    uint64_t len;       /* row length (y's last dimension, 1 for a scalar) */
    uint64_t rows;
} walk;

static void walk_init(walk *w, const mp__kshape *ys, const mp__kshape *as, const mp__kshape *bs) {
    w->rank = ys->rank;
    for (size_t d = 0; d < ys->rank; d++) {
        w->dim[d] = ys->d[d];
        w->idx[d] = 0;
    }
    bcast_strides(ys, as, w->sa);
    if (bs) bcast_strides(ys, bs, w->sb);
    else
        for (size_t d = 0; d < ys->rank; d++) w->sb[d] = 0;
    w->ia = w->ib = 0;
    w->len = ys->rank ? ys->d[ys->rank - 1] : 1;
    w->rows = w->len ? mp__kshape_numel(ys) / w->len : 0;
}

/* Stride of the last dimension (0 for a scalar y). */
static uint64_t last_a(const walk *w) { return w->rank ? w->sa[w->rank - 1] : 0; }
static uint64_t last_b(const walk *w) { return w->rank ? w->sb[w->rank - 1] : 0; }

static void walk_next(walk *w) {
    if (w->rank < 2) return;
    for (size_t d = w->rank - 1; d-- > 0;) {
        w->ia += w->sa[d];
        w->ib += w->sb[d];
        if (++w->idx[d] < w->dim[d]) return;
        w->ia -= w->sa[d] * w->dim[d];
        w->ib -= w->sb[d] * w->dim[d];
        w->idx[d] = 0;
    }
}

void mp__k_binary(mp__binop op, float alpha, const float *a, const mp__kshape *as,
                  const float *b, const mp__kshape *bs, float *y, const mp__kshape *ys) {
    walk w;
    walk_init(&w, ys, as, bs);
    uint64_t la = last_a(&w), lb = last_b(&w), len = w.len;
    for (uint64_t r = 0; r < w.rows; r++) {
        const float *pa = a + w.ia, *pb = b + w.ib;
        float *py = y + r * len;
        switch (op) {
        case MP__B_ADD:
            for (uint64_t j = 0; j < len; j++) py[j] = pa[j * la] + alpha * pb[j * lb];
            break;
        case MP__B_SUB:
            for (uint64_t j = 0; j < len; j++) py[j] = pa[j * la] - alpha * pb[j * lb];
            break;
        case MP__B_MUL:
            for (uint64_t j = 0; j < len; j++) py[j] = pa[j * la] * pb[j * lb];
            break;
        }
        walk_next(&w);
    }
}

/* dx = sum over the positions of y that read x's element of scale * dy
 * (times other, broadcast, when other is not NULL). */
static mp_status reduce_grad(const float *dy, const mp__kshape *ys, const mp__kshape *xs,
                             const float *other, const mp__kshape *os, double scale, float *dx) {
    uint64_t nx = mp__kshape_numel(xs);
    if (same_shape(xs, ys)) {
        uint64_t n = nx;
        if (!other) {
            for (uint64_t i = 0; i < n; i++) dx[i] = (float)(scale * dy[i]);
            return MP_OK;
        }
        if (same_shape(os, ys)) {
            for (uint64_t i = 0; i < n; i++) dx[i] = (float)(scale * ((double)dy[i] * other[i]));
            return MP_OK;
        }
    }
    /* General case: walk y with x (and other) broadcast, summing into a
     * double accumulator of x's shape (so "reduced" inputs of x's own
     * shape also land here when other broadcasts). */
    double *acc = calloc(nx ? nx : 1, sizeof *acc);
    if (!acc) return MP__NOMEM();
    walk w;
    walk_init(&w, ys, xs, other ? os : NULL);
    uint64_t lx = last_a(&w), lo = last_b(&w), len = w.len;
    for (uint64_t r = 0; r < w.rows; r++) {
        const float *pd = dy + r * len;
        double *pa = acc + w.ia;
        if (other) {
            const float *po = other + w.ib;
            for (uint64_t j = 0; j < len; j++) pa[j * lx] += (double)pd[j] * po[j * lo];
        } else {
            for (uint64_t j = 0; j < len; j++) pa[j * lx] += pd[j];
        }
        walk_next(&w);
    }
    for (uint64_t i = 0; i < nx; i++) dx[i] = (float)(scale * acc[i]);
    free(acc);
    return MP_OK;
}

mp_status mp__k_binary_backward(mp__binop op, float alpha, const float *dy, const mp__kshape *ys,
                                const float *a, const mp__kshape *as, const float *b,
                                const mp__kshape *bs, float *da, float *db) {
    mp_status st = MP_OK;
    switch (op) {
    case MP__B_ADD:
    case MP__B_SUB:
        if (db) st = reduce_grad(dy, ys, bs, NULL, NULL, op == MP__B_ADD ? alpha : -alpha, db);
        if (st == MP_OK && da) st = reduce_grad(dy, ys, as, NULL, NULL, 1.0, da);
        return st;
    case MP__B_MUL:
        if (db) st = reduce_grad(dy, ys, bs, a, as, 1.0, db);
        if (st == MP_OK && da) st = reduce_grad(dy, ys, as, b, bs, 1.0, da);
        return st;
    }
    return st;
}

void mp__k_sum_n(const float *const *x, size_t k, float *y, uint64_t n) {
    /* Blocks of B elements summed in a local buffer: element i adds its
     * terms left to right, ((x0 + x1) + x2) + ..., the loops vectorise, and
     * y may be any of the inputs (it is written after they are read). */
    enum { B = 256 };
    float acc[B];
    for (uint64_t i0 = 0; i0 < n; i0 += B) {
        uint64_t m = n - i0 < B ? n - i0 : B;
        const float *x0 = x[0] + i0, *x1 = x[1] + i0;
        for (uint64_t i = 0; i < m; i++) acc[i] = x0[i] + x1[i];
        for (size_t j = 2; j < k; j++) {
            const float *xj = x[j] + i0;
            for (uint64_t i = 0; i < m; i++) acc[i] += xj[i];
        }
        memcpy(y + i0, acc, m * sizeof *acc);
    }
}

void mp__k_fill(float *y, float v, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) y[i] = v;
}
