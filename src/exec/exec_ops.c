/* exec_ops.c -- the forward ops of the reference executor: each binding
 * checks the shapes its kernel will index by and calls the kernel.
 *
 * Semantics (docs/exec.md): dropout is the identity (eval mode, so runs are
 * deterministic); batch norm normalises with the batch's own statistics
 * (training mode) and leaves the running statistics alone; gelu is the erf
 * form; add/sub compute a + alpha b; flatten is a view (nothing to do when
 * its output is, as always in a built graph, an alias of its input). */
#include "exec_internal.h"

#include <string.h>

#define NIN(k)                                                                            \
    do {                                                                                  \
        if (nd->n_inputs < (k) || nd->n_outputs != 1)                                     \
            return mp__exec_err(x, id, "expects %d input(s) and 1 output, has %zu and %zu", \
                                (int)(k), nd->n_inputs, nd->n_outputs);                   \
    } while (0)
#define FLOATS(t)                                                                         \
    do {                                                                                  \
        mp_status s_ = mp__xfloat(x, id, (t));                                            \
        if (s_ != MP_OK) return s_;                                                       \
    } while (0)

/* ---- elementwise -------------------------------------------------------- */

static mp_status run_unary(mp__exec *x, size_t id, const mp_graph_node_t *nd, mp__unop op) {
    NIN(1);
    size_t in = nd->inputs[0], out = nd->outputs[0];
    FLOATS(in);
    FLOATS(out);
    if (mp__xt(x, in)->numel != mp__xt(x, out)->numel)
        return mp__exec_err(x, id, "output has %llu elements, input %llu",
                            (unsigned long long)mp__xt(x, out)->numel,
                            (unsigned long long)mp__xt(x, in)->numel);
    if (op == MP__U_IDENTITY) mp__xcopy(mp__xf(x, out), mp__xf(x, in), mp__xt(x, in)->numel);
    else mp__k_unary(op, mp__xf(x, in), mp__xf(x, out), mp__xt(x, in)->numel);
    return MP_OK;
}

#define UNARY(fn, op)                                                                     \
    static mp_status fn(mp__exec *x, size_t id, const mp_graph_node_t *nd,                \
                        const mp_op_attrs_t *a) {                                         \
        (void)a;                                                                          \
        return run_unary(x, id, nd, op);                                                  \
    }
UNARY(op_relu, MP__U_RELU)
UNARY(op_sigmoid, MP__U_SIGMOID)
UNARY(op_tanh, MP__U_TANH)
UNARY(op_relu6, MP__U_RELU6)
UNARY(op_silu, MP__U_SILU)
UNARY(op_hardswish, MP__U_HARDSWISH)
UNARY(op_hardsigmoid, MP__U_HARDSIGMOID)
UNARY(op_gelu, MP__U_GELU)
UNARY(op_identity, MP__U_IDENTITY)   /* also dropout (eval mode) */

/* Is ys the numpy broadcast of as and bs? */
static int broadcasts(const mp__kshape *as, const mp__kshape *bs, const mp__kshape *ys) {
    size_t r = as->rank > bs->rank ? as->rank : bs->rank;
    if (ys->rank != r) return 0;
    for (size_t i = 0; i < r; i++) {
        uint64_t da = i < r - as->rank ? 1 : as->d[i - (r - as->rank)];
        uint64_t db = i < r - bs->rank ? 1 : bs->d[i - (r - bs->rank)];
        if (da != db && da != 1 && db != 1) return 0;
        if (ys->d[i] != (da == 1 ? db : da)) return 0;
    }
    return 1;
}

mp_status mp__exec_binary_shapes(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                 mp__kshape *as, mp__kshape *bs, mp__kshape *ys) {
    if (nd->n_inputs != 2 || nd->n_outputs != 1)
        return mp__exec_err(x, id, "expects 2 tensor inputs and 1 output, has %zu and %zu",
                            nd->n_inputs, nd->n_outputs);
    for (size_t i = 0; i < 2; i++) FLOATS(nd->inputs[i]);
    FLOATS(nd->outputs[0]);
    *as = mp__xshape(x, nd->inputs[0]);
    *bs = mp__xshape(x, nd->inputs[1]);
    *ys = mp__xshape(x, nd->outputs[0]);
    if (!broadcasts(as, bs, ys)) return mp__exec_err(x, id, "output shape is not the broadcast of the inputs'");
    return MP_OK;
}

static mp_status run_binary(mp__exec *x, size_t id, const mp_graph_node_t *nd, mp__binop op,
                            double alpha) {
    mp__kshape as, bs, ys;
    mp_status s = mp__exec_binary_shapes(x, id, nd, &as, &bs, &ys);
    if (s != MP_OK) return s;
    mp__k_binary(op, (float)alpha, mp__xf(x, nd->inputs[0]), &as, mp__xf(x, nd->inputs[1]), &bs,
                 mp__xf(x, nd->outputs[0]), &ys);
    return MP_OK;
}

static mp_status op_add(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    return run_binary(x, id, nd, MP__B_ADD, a->alpha);
}
static mp_status op_sub(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    return run_binary(x, id, nd, MP__B_SUB, a->alpha);
}
static mp_status op_mul(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    (void)a;
    return run_binary(x, id, nd, MP__B_MUL, 1.0);
}

/* ---- products ----------------------------------------------------------- */

mp_status mp__exec_linear_params(mp__exec *x, size_t fid, uint64_t *m, uint64_t *in,
                                 uint64_t *out) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    size_t id = fid;
    NIN(2);
    size_t xi = nd->inputs[0], w = nd->inputs[1], b = nd->n_inputs > 2 ? nd->inputs[2] : MP_GRAPH_NONE;
    size_t y = nd->outputs[0];
    FLOATS(xi);
    FLOATS(w);
    FLOATS(y);
    if (b != MP_GRAPH_NONE) FLOATS(b);
    const mp_graph_tensor_t *X = mp__xt(x, xi), *W = mp__xt(x, w), *Y = mp__xt(x, y);
    if (X->rank < 1 || W->rank != 2 || Y->rank != X->rank || X->shape[X->rank - 1] != W->shape[1] ||
        Y->shape[Y->rank - 1] != W->shape[0] ||
        (b != MP_GRAPH_NONE && mp__xt(x, b)->numel != W->shape[0]))
        return mp__exec_err(x, id, "shapes do not fit x[..., in] W[out, in] b[out] -> y[..., out]");
    *m = 1;
    for (size_t i = 0; i + 1 < X->rank; i++) {
        if (X->shape[i] != Y->shape[i]) return mp__exec_err(x, id, "output batch dims differ from x's");
        *m *= X->shape[i];
    }
    *in = W->shape[1];
    *out = W->shape[0];
    return MP_OK;
}

static mp_status op_linear(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                           const mp_op_attrs_t *a) {
    (void)a;
    uint64_t m, in, out;
    mp_status s = mp__exec_linear_params(x, id, &m, &in, &out);
    if (s != MP_OK) return s;
    return mp__k_linear(mp__xf(x, nd->inputs[0]), mp__xf(x, nd->inputs[1]),
                        nd->n_inputs > 2 ? mp__xf(x, nd->inputs[2]) : NULL,
                        mp__xf(x, nd->outputs[0]), m, in, out);
}

mp_status mp__exec_matmul_shapes(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                 mp__kshape *as, mp__kshape *bs, mp__kshape *ys) {
    NIN(2);
    FLOATS(nd->inputs[0]);
    FLOATS(nd->inputs[1]);
    FLOATS(nd->outputs[0]);
    *as = mp__xshape(x, nd->inputs[0]);
    *bs = mp__xshape(x, nd->inputs[1]);
    *ys = mp__xshape(x, nd->outputs[0]);
    if (as->rank < 2 || bs->rank < 2)
        return mp__exec_err(x, id, "matmul of a 1-D tensor is not supported");
    mp__kshape ab = *as, bb = *bs, yb = *ys;   /* batch parts */
    ab.rank -= 2;
    bb.rank -= 2;
    if (yb.rank < 2) return mp__exec_err(x, id, "output rank below 2");
    yb.rank -= 2;
    if (as->d[as->rank - 1] != bs->d[bs->rank - 2] || ys->d[ys->rank - 2] != as->d[as->rank - 2] ||
        ys->d[ys->rank - 1] != bs->d[bs->rank - 1] || !broadcasts(&ab, &bb, &yb))
        return mp__exec_err(x, id, "shapes do not fit a[..., m, k] b[..., k, n] -> y[..., m, n]");
    return MP_OK;
}

static mp_status op_matmul(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                           const mp_op_attrs_t *a) {
    (void)a;
    mp__kshape as, bs, ys;
    mp_status s = mp__exec_matmul_shapes(x, id, nd, &as, &bs, &ys);
    if (s != MP_OK) return s;
    return mp__k_matmul(mp__xf(x, nd->inputs[0]), &as, mp__xf(x, nd->inputs[1]), &bs,
                        mp__xf(x, nd->outputs[0]), &ys);
}

mp_status mp__exec_conv_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a, mp__conv *p) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    size_t id = fid;
    NIN(2);
    for (size_t i = 0; i < nd->n_inputs && i < 3; i++) FLOATS(nd->inputs[i]);
    FLOATS(nd->outputs[0]);
    const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[0]), *W = mp__xt(x, nd->inputs[1]);
    const mp_graph_tensor_t *Y = mp__xt(x, nd->outputs[0]);
    if (X->rank != 4 || W->rank != 4 || Y->rank != 4)
        return mp__exec_err(x, id, "conv2d needs 4-D x, weight and output");
    if (a->groups < 1 || a->stride[0] < 1 || a->stride[1] < 1 || a->dilation[0] < 1 ||
        a->dilation[1] < 1 || a->padding[0] < 0 || a->padding[1] < 0)
        return mp__exec_err(x, id, "bad stride, padding, dilation or groups");
    *p = (mp__conv){.n = X->shape[0], .c = X->shape[1], .h = X->shape[2], .w = X->shape[3],
                    .o = W->shape[0], .kh = W->shape[2], .kw = W->shape[3], .oh = Y->shape[2],
                    .ow = Y->shape[3], .sh = a->stride[0], .sw = a->stride[1], .ph = a->padding[0],
                    .pw = a->padding[1], .dh = a->dilation[0], .dw = a->dilation[1],
                    .groups = (uint64_t)a->groups};
    if (p->c % p->groups || p->o % p->groups || W->shape[1] * p->groups != p->c ||
        Y->shape[0] != p->n || Y->shape[1] != p->o ||
        (int64_t)p->oh != mp__pool_out_len((int64_t)p->h, (int64_t)p->kh, p->sh, p->ph, p->dh, 0) ||
        (int64_t)p->ow != mp__pool_out_len((int64_t)p->w, (int64_t)p->kw, p->sw, p->pw, p->dw, 0) ||
        (nd->n_inputs > 2 && mp__xt(x, nd->inputs[2])->numel != p->o))
        return mp__exec_err(x, id, "shapes do not fit conv2d (groups %lld, stride %lldx%lld, padding %lldx%lld, dilation %lldx%lld)",
                            (long long)a->groups, (long long)p->sh, (long long)p->sw,
                            (long long)p->ph, (long long)p->pw, (long long)p->dh, (long long)p->dw);
    return MP_OK;
}

static mp_status op_conv2d(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                           const mp_op_attrs_t *a) {
    mp__conv p;
    mp_status s = mp__exec_conv_params(x, id, a, &p);
    if (s != MP_OK) return s;
    return mp__k_conv2d(&p, mp__xf(x, nd->inputs[0]), mp__xf(x, nd->inputs[1]),
                        nd->n_inputs > 2 ? mp__xf(x, nd->inputs[2]) : NULL,
                        mp__xf(x, nd->outputs[0]));
}

/* ---- pooling ------------------------------------------------------------ */

mp_status mp__exec_pool_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a, int kind,
                               mp__pool *p) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    size_t id = fid;
    NIN(1);
    FLOATS(nd->inputs[0]);
    FLOATS(nd->outputs[0]);
    const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[0]), *Y = mp__xt(x, nd->outputs[0]);
    if (X->rank != 4 || Y->rank != 4 || Y->shape[0] != X->shape[0] || Y->shape[1] != X->shape[1])
        return mp__exec_err(x, id, "pooling needs x[N, C, H, W] -> y[N, C, H', W']");
    int dil = kind == 0;
    *p = (mp__pool){.n = X->shape[0], .c = X->shape[1], .h = X->shape[2], .w = X->shape[3],
                    .oh = Y->shape[2], .ow = Y->shape[3], .kh = a->kernel[0], .kw = a->kernel[1],
                    .sh = a->stride[0], .sw = a->stride[1], .ph = a->padding[0],
                    .pw = a->padding[1], .dh = dil ? a->dilation[0] : 1,
                    .dw = dil ? a->dilation[1] : 1, .count_include_pad = a->count_include_pad};
    if (kind == 2) {
        if ((p->oh == 0 || p->ow == 0) && X->numel)
            return mp__exec_err(x, id, "adaptive pooling to an empty output");
        return MP_OK;
    }
    if (p->kh < 1 || p->kw < 1 || p->sh < 1 || p->sw < 1 || p->dh < 1 || p->dw < 1 ||
        p->ph < 0 || p->pw < 0 || 2 * p->ph > p->kh || 2 * p->pw > p->kw ||
        (int64_t)p->oh != mp__pool_out_len((int64_t)p->h, p->kh, p->sh, p->ph, p->dh, a->ceil_mode) ||
        (int64_t)p->ow != mp__pool_out_len((int64_t)p->w, p->kw, p->sw, p->pw, p->dw, a->ceil_mode))
        return mp__exec_err(x, id, "output %llux%llu does not fit the window (kernel %lldx%lld, stride %lldx%lld, padding %lldx%lld, ceil_mode %d)",
                            (unsigned long long)p->oh, (unsigned long long)p->ow,
                            (long long)p->kh, (long long)p->kw, (long long)p->sh, (long long)p->sw,
                            (long long)p->ph, (long long)p->pw, a->ceil_mode);
    return MP_OK;
}

#define POOL(fn, kind, call)                                                              \
    static mp_status fn(mp__exec *x, size_t id, const mp_graph_node_t *nd,                \
                        const mp_op_attrs_t *a) {                                         \
        mp__pool p;                                                                       \
        mp_status s = mp__exec_pool_params(x, id, a, kind, &p);                           \
        if (s != MP_OK) return s;                                                         \
        call(&p, mp__xf(x, nd->inputs[0]), mp__xf(x, nd->outputs[0]));                    \
        return MP_OK;                                                                     \
    }
POOL(op_maxpool2d, 0, mp__k_maxpool2d)
POOL(op_avgpool2d, 1, mp__k_avgpool2d)
POOL(op_adaptive_avgpool2d, 2, mp__k_adaptive_avgpool2d)

/* ---- normalisation ------------------------------------------------------ */

mp_status mp__exec_norm_params(mp__exec *x, size_t fid, int layer, uint64_t *outer, uint64_t *c,
                               uint64_t *inner) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    size_t id = fid;
    NIN(1);
    FLOATS(nd->inputs[0]);
    FLOATS(nd->outputs[0]);
    const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[0]);
    if (!mp__xsame(x, nd->inputs[0], nd->outputs[0]) || X->rank < (layer ? 1u : 2u))
        return mp__exec_err(x, id, "output shape differs from x's, or x has too few dims");
    if (layer) {
        *c = X->shape[X->rank - 1];
        *outer = *c ? X->numel / *c : 0;
        *inner = 1;
    } else {
        *outer = X->shape[0];
        *c = X->shape[1];
        *inner = 1;
        for (size_t i = 2; i < X->rank; i++) *inner *= X->shape[i];
    }
    for (size_t i = 1; i < 3 && i < nd->n_inputs; i++) {
        FLOATS(nd->inputs[i]);
        if (mp__xt(x, nd->inputs[i])->numel != *c)
            return mp__exec_err(x, id, "input %zu has %llu elements, not %llu", i,
                                (unsigned long long)mp__xt(x, nd->inputs[i])->numel,
                                (unsigned long long)*c);
    }
    return MP_OK;
}

static mp_status op_batchnorm2d(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                const mp_op_attrs_t *a) {
    uint64_t n, c, hw;
    mp_status s = mp__exec_norm_params(x, id, 0, &n, &c, &hw);
    if (s != MP_OK) return s;
    return mp__k_batchnorm(mp__xf(x, nd->inputs[0]), nd->n_inputs > 1 ? mp__xf(x, nd->inputs[1]) : NULL,
                           nd->n_inputs > 2 ? mp__xf(x, nd->inputs[2]) : NULL,
                           mp__xf(x, nd->outputs[0]), n, c, hw, a->eps);
}

static mp_status op_layernorm(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                              const mp_op_attrs_t *a) {
    uint64_t rows, d, one;
    mp_status s = mp__exec_norm_params(x, id, 1, &rows, &d, &one);
    if (s != MP_OK) return s;
    mp__k_layernorm(mp__xf(x, nd->inputs[0]), nd->n_inputs > 1 ? mp__xf(x, nd->inputs[1]) : NULL,
                    nd->n_inputs > 2 ? mp__xf(x, nd->inputs[2]) : NULL, mp__xf(x, nd->outputs[0]),
                    rows, d, a->eps);
    return MP_OK;
}

static const mp__exec_op TABLE[] = {
    {"relu", op_relu, 1},
    {"sigmoid", op_sigmoid, 1},
    {"tanh", op_tanh, 1},
    {"relu6", op_relu6, 1},
    {"silu", op_silu, 1},
    {"hardswish", op_hardswish, 1},
    {"hardsigmoid", op_hardsigmoid, 1},
    {"gelu", op_gelu, 1},
    {"dropout", op_identity, 1},
    {"identity", op_identity, 1},
    {"add", op_add, 1},
    {"sub", op_sub, 1},
    {"mul", op_mul, 1},
    {"linear", op_linear, 0},
    {"matmul", op_matmul, 0},
    {"conv2d", op_conv2d, 0},
    {"maxpool2d", op_maxpool2d, 0},
    {"avgpool2d", op_avgpool2d, 0},
    {"adaptive_avgpool2d", op_adaptive_avgpool2d, 0},
    {"batchnorm2d", op_batchnorm2d, 0},
    {"layernorm", op_layernorm, 0},
};

const mp__exec_op *mp__exec_ops_main(size_t *n) {
    *n = sizeof TABLE / sizeof TABLE[0];
    return TABLE;
}
