/* ops_shapes.c -- shape and dtype inference for the canonical ops, and the
 * check of a graph's shapes against it.
 *
 * The formulas are PyTorch's (1.13): numpy broadcasting for add/sub/mul,
 * torch.matmul's batch broadcasting and 1-D promotion, and for convolution
 * and pooling  out = floor((H + 2p - d(k-1) - 1) / s) + 1  (pooling with
 * ceil_mode rounds up, but the last window must start inside the input or
 * its left padding).  Gradient ops are not inferred here (their outputs are
 * the shapes of forward values a gradient node need not read); the graph
 * check verifies them against their forward node instead. */
#include "graph_internal.h"

#include <stdio.h>
#include <string.h>

/* The shapes of one inference call, and where its answer goes. */
typedef struct infer_ctx {
    const char *op;               /* canonical name, for messages */
    const mp_op_attrs_t *a;
    const uint64_t *const *in;
    const size_t *rank;
    const char *const *dtype;
    size_t n_in;
    uint64_t (*out)[MP_MAX_RANK];
    size_t *out_rank;
    const char **out_dtype;
} infer_ctx;

/* "[1,3,224,224]" into buf. */
static const char *fmt_shape(char *buf, size_t cap, const uint64_t *s, size_t rank) {
    size_t n = 0;
    n += (size_t)snprintf(buf + n, cap - n, "[");
    for (size_t i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ",%llu" : "%llu", (unsigned long long)s[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

#define SHAPE_BUF 160

static const char *in_dtype(const infer_ctx *c, size_t i) {
    return c->dtype && c->dtype[i] ? c->dtype[i] : "float32";
}

static bool is_float(const char *dt) {
    return !strcmp(dt, "float32") || !strcmp(dt, "float16") || !strcmp(dt, "bfloat16") ||
           !strcmp(dt, "float64");
}

static mp_status want_inputs(const infer_ctx *c, size_t lo, size_t hi) {
    if (c->n_in >= lo && c->n_in <= hi) return MP_OK;
    if (lo == hi) return mp__err(MP_EINVAL, "%s: expects %zu inputs, got %zu", c->op, lo, c->n_in);
    return mp__err(MP_EINVAL, "%s: expects %zu to %zu inputs, got %zu", c->op, lo, hi, c->n_in);
}

/* Shapes of rank 0 may be NULL: never hand NULL to memcpy/memcmp. */
static bool same_dims(const uint64_t *x, const uint64_t *y, size_t rank) {
    return !rank || !memcmp(x, y, rank * sizeof *x);
}

static void set_out(infer_ctx *c, const uint64_t *s, size_t rank, const char *dt) {
    if (rank) memcpy(c->out[0], s, rank * sizeof *s);
    c->out_rank[0] = rank;
    c->out_dtype[0] = dt;
}

/* relu, sigmoid, ..., identity, softmax: one input, same shape. */
static mp_status infer_same(infer_ctx *c) {
    mp_status s = want_inputs(c, 1, 1);
    if (s) return s;
    set_out(c, c->in[0], c->rank[0], in_dtype(c, 0));
    return MP_OK;
}

/* add, sub, mul: numpy broadcasting.  With one tensor input the other
 * operand was a Python number (operator.add(x, 1)). */
static mp_status infer_broadcast(infer_ctx *c) {
    mp_status s = want_inputs(c, 1, 2);
    if (s) return s;
    if (c->n_in == 1) return infer_same(c);
    size_t ra = c->rank[0], rb = c->rank[1], r = ra > rb ? ra : rb;
    uint64_t o[MP_MAX_RANK];
    for (size_t i = 0; i < r; i++) {
        /* dimension i counted from the right */
        uint64_t da = i < ra ? c->in[0][ra - 1 - i] : 1, db = i < rb ? c->in[1][rb - 1 - i] : 1;
        if (da != db && da != 1 && db != 1) {
            char x[SHAPE_BUF], y[SHAPE_BUF];
            return mp__err(MP_EINVAL, "%s: shapes %s and %s do not broadcast", c->op,
                           fmt_shape(x, sizeof x, c->in[0], ra), fmt_shape(y, sizeof y, c->in[1], rb));
        }
        o[r - 1 - i] = da == 1 ? db : da;
    }
    /* The result takes the floating operand's type (a float times an
     * integer mask is a float). */
    const char *dt = in_dtype(c, 0);
    if (!is_float(dt) && is_float(in_dtype(c, 1))) dt = in_dtype(c, 1);
    set_out(c, o, r, dt);
    return MP_OK;
}

/* linear: x[..., in] W[out, in] b[out] -> [..., out]. */
static mp_status infer_linear(infer_ctx *c) {
    mp_status s = want_inputs(c, 2, 3);
    if (s) return s;
    char x[SHAPE_BUF], y[SHAPE_BUF];
    const uint64_t *w = c->in[1];
    if (c->rank[0] < 1 || c->rank[1] != 2 || c->in[0][c->rank[0] - 1] != w[1])
        return mp__err(MP_EINVAL, "linear: input %s does not fit weight %s (expects [..., in] and [out, in])",
                       fmt_shape(x, sizeof x, c->in[0], c->rank[0]), fmt_shape(y, sizeof y, w, c->rank[1]));
    if (c->n_in == 3 && (c->rank[2] != 1 || c->in[2][0] != w[0]))
        return mp__err(MP_EINVAL, "linear: bias %s does not fit weight %s",
                       fmt_shape(x, sizeof x, c->in[2], c->rank[2]), fmt_shape(y, sizeof y, w, 2));
    uint64_t o[MP_MAX_RANK];
    memcpy(o, c->in[0], c->rank[0] * sizeof *o);   /* rank >= 1 here */
    o[c->rank[0] - 1] = w[0];
    set_out(c, o, c->rank[0], in_dtype(c, 0));
    return MP_OK;
}

/* matmul: torch.matmul -- 1-D operands are promoted (and the added
 * dimension removed again), batch dimensions broadcast. */
static mp_status infer_matmul(infer_ctx *c) {
    mp_status s = want_inputs(c, 2, 2);
    if (s) return s;
    size_t ra = c->rank[0], rb = c->rank[1];
    const uint64_t *a = c->in[0], *b = c->in[1];
    char x[SHAPE_BUF], y[SHAPE_BUF];
    if (ra == 0 || rb == 0)
        return mp__err(MP_EINVAL, "matmul: both operands need at least one dimension, got %s and %s",
                       fmt_shape(x, sizeof x, a, ra), fmt_shape(y, sizeof y, b, rb));
    uint64_t k_a = a[ra - 1], k_b = rb == 1 ? b[0] : b[rb - 2];
    if (k_a != k_b)
        return mp__err(MP_EINVAL, "matmul: inner dimensions differ in %s x %s (%llu vs %llu)",
                       fmt_shape(x, sizeof x, a, ra), fmt_shape(y, sizeof y, b, rb),
                       (unsigned long long)k_a, (unsigned long long)k_b);
    size_t ba = ra >= 2 ? ra - 2 : 0, bb = rb >= 2 ? rb - 2 : 0, nb = ba > bb ? ba : bb;
    uint64_t o[MP_MAX_RANK];
    size_t r = 0;
    for (size_t i = 0; i < nb; i++) {
        uint64_t da = i < ba ? a[ba - 1 - i] : 1, db = i < bb ? b[bb - 1 - i] : 1;
        if (da != db && da != 1 && db != 1)
            return mp__err(MP_EINVAL, "matmul: batch dimensions of %s and %s do not broadcast",
                           fmt_shape(x, sizeof x, a, ra), fmt_shape(y, sizeof y, b, rb));
        o[nb - 1 - i] = da == 1 ? db : da;
    }
    r = nb;
    if (ra >= 2) o[r++] = a[ra - 2];
    if (rb >= 2) o[r++] = b[rb - 1];
    if (r > MP_MAX_RANK) return mp__err(MP_EINVAL, "matmul: result has more than %d dimensions", MP_MAX_RANK);
    set_out(c, o, r, in_dtype(c, 0));
    return MP_OK;
}

/* One spatial output size by PyTorch's formula; MP_EINVAL when empty.
 * ceil_mode: rounds up, then drops a last window that would start in the
 * right padding (ATen's pooling_output_shape). */
static mp_status out_size(const infer_ctx *c, size_t axis, int64_t in, int64_t k, int64_t s,
                          int64_t p, int64_t d, int ceil_mode, uint64_t *out) {
    if (k < 1 || s < 1 || d < 1 || p < 0)
        return mp__err(MP_EINVAL, "%s: bad window on axis %zu (kernel %lld, stride %lld, padding %lld, dilation %lld)",
                       c->op, axis, (long long)k, (long long)s, (long long)p, (long long)d);
    int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    /* floor division (num may be negative: the window does not fit) */
    int64_t q = num >= 0 ? num / s : -((-num + s - 1) / s);
    int64_t o = q + 1;
    if (ceil_mode && (o - 1) * s >= in + p) o--;
    if (o < 1)
        return mp__err(MP_EINVAL, "%s: input size %lld on axis %zu is too small for kernel %lld (dilation %lld, padding %lld, stride %lld): output would be %lld",
                       c->op, (long long)in, axis, (long long)k, (long long)d, (long long)p, (long long)s,
                       (long long)o);
    *out = (uint64_t)o;
    return MP_OK;
}

/* conv2d: x[N,C,H,W] (or [C,H,W]) W[O,C/g,kh,kw] b[O] -> [N,O,H',W']. */
static mp_status infer_conv2d(infer_ctx *c) {
    mp_status s = want_inputs(c, 2, 3);
    if (s) return s;
    const mp_op_attrs_t *a = c->a;
    size_t rx = c->rank[0];
    const uint64_t *x = c->in[0], *w = c->in[1];
    char xs[SHAPE_BUF], ws[SHAPE_BUF];
    if ((rx != 4 && rx != 3) || c->rank[1] != 4)
        return mp__err(MP_EINVAL, "conv2d: expects input [N,C,H,W] and weight [O,C/groups,kh,kw], got %s and %s",
                       fmt_shape(xs, sizeof xs, x, rx), fmt_shape(ws, sizeof ws, w, c->rank[1]));
    int64_t g = a->groups;
    uint64_t ch = x[rx - 3];
    if (g < 1 || ch != w[1] * (uint64_t)g || w[0] % (uint64_t)g)
        return mp__err(MP_EINVAL, "conv2d: input %s has %llu channels, weight %s with groups %lld expects %llu (and out channels divisible by groups)",
                       fmt_shape(xs, sizeof xs, x, rx), (unsigned long long)ch,
                       fmt_shape(ws, sizeof ws, w, 4), (long long)g,
                       (unsigned long long)(w[1] * (uint64_t)(g < 1 ? 1 : g)));
    if (c->n_in == 3 && (c->rank[2] != 1 || c->in[2][0] != w[0]))
        return mp__err(MP_EINVAL, "conv2d: bias %s does not fit weight %s",
                       fmt_shape(xs, sizeof xs, c->in[2], c->rank[2]), fmt_shape(ws, sizeof ws, w, 4));
    uint64_t o[4];
    memcpy(o, x, rx * sizeof *o);
    o[rx - 3] = w[0];
    for (size_t i = 0; i < 2; i++)
        if ((s = out_size(c, i, (int64_t)x[rx - 2 + i], (int64_t)w[2 + i], a->stride[i], a->padding[i],
                          a->dilation[i], 0, &o[rx - 2 + i])))
            return s;
    set_out(c, o, rx, in_dtype(c, 0));
    return MP_OK;
}

/* batchnorm2d: x[N,C,H,W], then per-channel tensors [C] (weight, bias,
 * running statistics; any may be absent) and scalars (num_batches_tracked). */
static mp_status infer_batchnorm2d(infer_ctx *c) {
    mp_status s = want_inputs(c, 1, 6);
    if (s) return s;
    char xs[SHAPE_BUF], ps[SHAPE_BUF];
    if (c->rank[0] != 4)
        return mp__err(MP_EINVAL, "batchnorm2d: expects input [N,C,H,W], got %s",
                       fmt_shape(xs, sizeof xs, c->in[0], c->rank[0]));
    for (size_t i = 1; i < c->n_in; i++)
        if (c->rank[i] != 0 && (c->rank[i] != 1 || c->in[i][0] != c->in[0][1]))
            return mp__err(MP_EINVAL, "batchnorm2d: input %zu %s does not fit %llu channels of %s", i,
                           fmt_shape(ps, sizeof ps, c->in[i], c->rank[i]),
                           (unsigned long long)c->in[0][1], fmt_shape(xs, sizeof xs, c->in[0], 4));
    set_out(c, c->in[0], 4, in_dtype(c, 0));
    return MP_OK;
}

/* layernorm: x[..., D...] with weight and bias of the normalised shape
 * (the trailing dimensions of x). */
static mp_status infer_layernorm(infer_ctx *c) {
    mp_status s = want_inputs(c, 1, 3);
    if (s) return s;
    char xs[SHAPE_BUF], ps[SHAPE_BUF];
    size_t rx = c->rank[0];
    for (size_t i = 1; i < c->n_in; i++) {
        size_t r = c->rank[i];
        if (r < 1 || r > rx || !same_dims(c->in[i], c->in[0] + rx - r, r))
            return mp__err(MP_EINVAL, "layernorm: input %zu %s is not the trailing shape of %s", i,
                           fmt_shape(ps, sizeof ps, c->in[i], r), fmt_shape(xs, sizeof xs, c->in[0], rx));
    }
    set_out(c, c->in[0], rx, in_dtype(c, 0));
    return MP_OK;
}

/* maxpool2d / avgpool2d on [N,C,H,W] or [C,H,W]. */
static mp_status infer_pool(infer_ctx *c, bool max) {
    mp_status s = want_inputs(c, 1, 1);
    if (s) return s;
    const mp_op_attrs_t *a = c->a;
    size_t rx = c->rank[0];
    char xs[SHAPE_BUF];
    if (rx != 4 && rx != 3)
        return mp__err(MP_EINVAL, "%s: expects input [N,C,H,W], got %s", c->op,
                       fmt_shape(xs, sizeof xs, c->in[0], rx));
    uint64_t o[4];
    memcpy(o, c->in[0], rx * sizeof *o);
    for (size_t i = 0; i < 2; i++) {
        int64_t k = a->kernel[i], st = a->stride[i] > 0 ? a->stride[i] : k;
        /* ATen: "pad should be at most half of kernel size" */
        if (a->padding[i] > k / 2)
            return mp__err(MP_EINVAL, "%s: padding %lld exceeds half the kernel %lld on axis %zu", c->op,
                           (long long)a->padding[i], (long long)k, i);
        if ((s = out_size(c, i, (int64_t)c->in[0][rx - 2 + i], k, st, a->padding[i],
                          max ? a->dilation[i] : 1, a->ceil_mode, &o[rx - 2 + i])))
            return s;
    }
    set_out(c, o, rx, in_dtype(c, 0));
    return MP_OK;
}

/* adaptive_avgpool2d: [N,C,oh,ow]; an output size <= 0 keeps the input's
 * (PyTorch's None). */
static mp_status infer_adaptive(infer_ctx *c) {
    mp_status s = want_inputs(c, 1, 1);
    if (s) return s;
    size_t rx = c->rank[0];
    char xs[SHAPE_BUF];
    if (rx != 4 && rx != 3)
        return mp__err(MP_EINVAL, "adaptive_avgpool2d: expects input [N,C,H,W], got %s",
                       fmt_shape(xs, sizeof xs, c->in[0], rx));
    uint64_t o[4];
    memcpy(o, c->in[0], rx * sizeof *o);
    for (size_t i = 0; i < 2; i++)
        if (c->a->output_size[i] > 0) o[rx - 2 + i] = (uint64_t)c->a->output_size[i];
    set_out(c, o, rx, in_dtype(c, 0));
    return MP_OK;
}

/* flatten: dimensions dim..end_dim merged (negative counts from the end; a
 * scalar flattens to [1]). */
static mp_status infer_flatten(infer_ctx *c) {
    mp_status s = want_inputs(c, 1, 1);
    if (s) return s;
    size_t rx = c->rank[0];
    uint64_t one = 1;
    const uint64_t *x = rx ? c->in[0] : &one;
    int64_t r = rx ? (int64_t)rx : 1, lo = c->a->dim, hi = c->a->end_dim;
    if (lo < 0) lo += r;
    if (hi < 0) hi += r;
    char xs[SHAPE_BUF];
    if (lo < 0 || lo >= r || hi < 0 || hi >= r || lo > hi)
        return mp__err(MP_EINVAL, "flatten: dimensions %lld..%lld out of range for %s",
                       (long long)c->a->dim, (long long)c->a->end_dim, fmt_shape(xs, sizeof xs, c->in[0], rx));
    uint64_t o[MP_MAX_RANK], p = 1;
    size_t n = 0;
    for (int64_t i = 0; i < lo; i++) o[n++] = x[i];
    for (int64_t i = lo; i <= hi; i++) p *= x[i];
    o[n++] = p;
    for (int64_t i = hi + 1; i < r; i++) o[n++] = x[i];
    set_out(c, o, n, in_dtype(c, 0));
    return MP_OK;
}

/* concat: every input has the same rank and the same dimensions except dim. */
static mp_status infer_concat(infer_ctx *c) {
    if (c->n_in < 1) return mp__err(MP_EINVAL, "concat: expects at least one input");
    size_t r = c->rank[0];
    int64_t d = c->a->dim < 0 ? c->a->dim + (int64_t)r : c->a->dim;
    char xs[SHAPE_BUF], ys[SHAPE_BUF];
    if (d < 0 || d >= (int64_t)r)
        return mp__err(MP_EINVAL, "concat: dim %lld out of range for %s", (long long)c->a->dim,
                       fmt_shape(xs, sizeof xs, c->in[0], r));
    uint64_t o[MP_MAX_RANK];
    memcpy(o, c->in[0], r * sizeof *o);   /* r >= 1: dim is in range */
    for (size_t i = 1; i < c->n_in; i++) {
        bool ok = c->rank[i] == r;
        for (size_t j = 0; ok && j < r; j++)
            if ((int64_t)j != d && c->in[i][j] != o[j]) ok = false;
        if (!ok)
            return mp__err(MP_EINVAL, "concat: input %zu %s does not fit %s on dim %lld", i,
                           fmt_shape(ys, sizeof ys, c->in[i], c->rank[i]),
                           fmt_shape(xs, sizeof xs, c->in[0], r), (long long)d);
        o[d] += c->in[i][d];
    }
    set_out(c, o, r, in_dtype(c, 0));
    return MP_OK;
}

/* softmax_xent: logits[N,K] and integer targets [N] -> a scalar. */
static mp_status infer_xent(infer_ctx *c) {
    mp_status s = want_inputs(c, 2, 2);
    if (s) return s;
    char xs[SHAPE_BUF], ys[SHAPE_BUF];
    if (c->rank[0] != 2 || c->rank[1] != 1 || c->in[1][0] != c->in[0][0] || is_float(in_dtype(c, 1)) ||
        !is_float(in_dtype(c, 0)))
        return mp__err(MP_EINVAL, "softmax_xent: expects float logits [N,K] and integer targets [N], got %s %s and %s %s",
                       in_dtype(c, 0), fmt_shape(xs, sizeof xs, c->in[0], c->rank[0]), in_dtype(c, 1),
                       fmt_shape(ys, sizeof ys, c->in[1], c->rank[1]));
    set_out(c, NULL, 0, in_dtype(c, 0));
    return MP_OK;
}

/* mean: any float tensor -> a scalar. */
static mp_status infer_mean(infer_ctx *c) {
    mp_status s = want_inputs(c, 1, 1);
    if (s) return s;
    if (!is_float(in_dtype(c, 0)))
        return mp__err(MP_EINVAL, "mean: expects a float tensor, got %s", in_dtype(c, 0));
    set_out(c, NULL, 0, in_dtype(c, 0));
    return MP_OK;
}

/* sum_n: n >= 2 inputs of one shape and dtype. */
static mp_status infer_sum_n(infer_ctx *c) {
    if (c->n_in < 2) return mp__err(MP_EINVAL, "sum_n: expects at least 2 inputs, got %zu", c->n_in);
    char xs[SHAPE_BUF], ys[SHAPE_BUF];
    for (size_t i = 1; i < c->n_in; i++)
        if (c->rank[i] != c->rank[0] || !same_dims(c->in[i], c->in[0], c->rank[0]) ||
            strcmp(in_dtype(c, i), in_dtype(c, 0)))
            return mp__err(MP_EINVAL, "sum_n: input %zu %s %s differs from input 0 %s %s", i, in_dtype(c, i),
                           fmt_shape(ys, sizeof ys, c->in[i], c->rank[i]), in_dtype(c, 0),
                           fmt_shape(xs, sizeof xs, c->in[0], c->rank[0]));
    set_out(c, c->in[0], c->rank[0], in_dtype(c, 0));
    return MP_OK;
}

typedef struct shape_rule {
    const char *op;
    int kind;
} shape_rule;

enum { R_SAME, R_BCAST, R_LINEAR, R_MATMUL, R_CONV, R_BN, R_LN, R_MAXPOOL, R_AVGPOOL,
       R_ADAPTIVE, R_FLATTEN, R_CONCAT, R_XENT, R_MEAN, R_SUM_N };

/* The ops with an inference rule, by canonical name. */
static const shape_rule RULES[] = {
    {"relu", R_SAME}, {"sigmoid", R_SAME}, {"tanh", R_SAME}, {"relu6", R_SAME},
    {"silu", R_SAME}, {"hardswish", R_SAME}, {"hardsigmoid", R_SAME}, {"gelu", R_SAME},
    {"dropout", R_SAME}, {"identity", R_SAME}, {"softmax", R_SAME}, {"stochastic_depth", R_SAME},
    {"add", R_BCAST}, {"sub", R_BCAST}, {"mul", R_BCAST},
    {"linear", R_LINEAR}, {"matmul", R_MATMUL}, {"conv2d", R_CONV},
    {"batchnorm2d", R_BN}, {"layernorm", R_LN}, {"maxpool2d", R_MAXPOOL},
    {"avgpool2d", R_AVGPOOL}, {"adaptive_avgpool2d", R_ADAPTIVE}, {"flatten", R_FLATTEN},
    {"concat", R_CONCAT}, {"softmax_xent", R_XENT}, {"mean", R_MEAN}, {"sum_n", R_SUM_N},
};

/* Output shapes and dtypes of op on the given inputs (see memplan.h). */
mp_status mp_op_infer(const char *op, const mp_op_attrs_t *a, const uint64_t *const *in_shape,
                      const size_t *in_rank, const char *const *in_dtype, size_t n_in,
                      uint64_t (*out_shape)[MP_MAX_RANK], size_t *out_rank,
                      const char **out_dtype, size_t max_out, size_t *n_out) {
    if (n_out) *n_out = 0;
    const mp_op_info_t *info = mp_op_info(op);
    const shape_rule *rule = NULL;
    for (size_t i = 0; info->known && i < sizeof RULES / sizeof RULES[0]; i++)
        if (!strcmp(RULES[i].op, info->name)) rule = &RULES[i];
    if (!rule)
        return mp__err(MP_ENOTFOUND, "%s: no shape inference for this op%s", op ? op : "(null)",
                       info->known ? " (its output shapes are not a function of its inputs)" : " (unknown op)");
    if (!out_shape || !out_rank || !out_dtype || !n_out || max_out < 1 || (n_in && (!in_shape || !in_rank)))
        return mp__err(MP_EINVAL, "%s: mp_op_infer needs input shapes and room for one output", info->name);
    for (size_t i = 0; i < n_in; i++)
        if (in_rank[i] > MP_MAX_RANK || (in_rank[i] && !in_shape[i]))
            return mp__err(MP_EINVAL, "%s: input %zu has rank %zu (at most %d)", info->name, i, in_rank[i],
                           MP_MAX_RANK);
    mp_op_attrs_t def;
    if (!a) {
        mp_op_attrs_init(&def);
        a = &def;
    }
    infer_ctx c = {info->name, a, in_shape, in_rank, in_dtype, n_in, out_shape, out_rank, out_dtype};
    mp_status s;
    switch (rule->kind) {
    case R_SAME: s = infer_same(&c); break;
    case R_BCAST: s = infer_broadcast(&c); break;
    case R_LINEAR: s = infer_linear(&c); break;
    case R_MATMUL: s = infer_matmul(&c); break;
    case R_CONV: s = infer_conv2d(&c); break;
    case R_BN: s = infer_batchnorm2d(&c); break;
    case R_LN: s = infer_layernorm(&c); break;
    case R_MAXPOOL: s = infer_pool(&c, true); break;
    case R_AVGPOOL: s = infer_pool(&c, false); break;
    case R_ADAPTIVE: s = infer_adaptive(&c); break;
    case R_FLATTEN: s = infer_flatten(&c); break;
    case R_CONCAT: s = infer_concat(&c); break;
    case R_XENT: s = infer_xent(&c); break;
    case R_MEAN: s = infer_mean(&c); break;
    default: s = infer_sum_n(&c); break;
    }
    if (s == MP_OK) *n_out = 1;
    return s;
}
