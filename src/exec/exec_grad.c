/* exec_grad.c -- the gradient ops of the reference executor (X_backward,
 * sum_n, ones).
 *
 * A gradient node's layout is mp_graph_backward's: inputs = dY, then the
 * forward values its op declares; outputs = the gradients of the forward
 * inputs whose bit is set in grad_mask, in input order.  The forward node
 * (attrs.forward_node) gives the shapes and hyper-parameters, and its own
 * input/output ids name x, W, y.  A binding reads a forward value only when
 * the gradient node lists it as an input: anything else may already have
 * been overwritten under a shared plan, so reading it is refused. */
#include "exec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gctx {
    size_t id, fid;                 /* the gradient node, its forward node */
    const mp_graph_node_t *nd, *f;
    mp_op_attrs_t fa;               /* the forward node's attributes */
    uint64_t mask;
    size_t dy;
} gctx;

/* The gradient output for forward input i, or MP_GRAPH_NONE. */
static size_t gout(const gctx *c, size_t i) {
    if (i >= 64 || !(c->mask >> i & 1)) return MP_GRAPH_NONE;
    size_t k = 0;
    for (size_t j = 0; j < i; j++) k += c->mask >> j & 1;
    return c->nd->outputs[k];
}

static float *gptr(const mp__exec *x, size_t t) { return t == MP_GRAPH_NONE ? NULL : mp__xf(x, t); }

/* Checks the layout against the forward node and fills c. */
static mp_status gbegin(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a,
                        gctx *c) {
    c->id = id;
    c->nd = nd;
    c->fid = a->forward_node;
    c->mask = a->grad_mask;
    if (c->fid == MP_GRAPH_NONE || c->fid >= x->g->n_nodes || c->fid == id)
        return mp__exec_err(x, id, "no forward_node");
    c->f = &x->g->node[c->fid];
    c->fa = x->attrs[c->fid];
    if (c->f->n_outputs != 1 || nd->n_inputs < 1)
        return mp__exec_err(x, id, "expects dY and a single-output forward node");
    c->dy = nd->inputs[0];
    mp_status s = mp__xfloat(x, id, c->dy);
    if (s != MP_OK) return s;
    if (!mp__xsame(x, c->dy, c->f->outputs[0]))
        return mp__exec_err(x, id, "dY's shape differs from the forward output's");
    size_t k = 0;
    for (size_t i = 0; i < 64; i++) {
        if (!(c->mask >> i & 1)) continue;
        if (i >= c->f->n_inputs || k >= nd->n_outputs)
            return mp__exec_err(x, id, "grad_mask does not match the forward inputs and the outputs");
        size_t o = nd->outputs[k++];
        if ((s = mp__xfloat(x, id, o)) != MP_OK) return s;
        if (!mp__xsame(x, o, c->f->inputs[i]))
            return mp__exec_err(x, id, "output %zu's shape differs from forward input %zu's", k - 1, i);
    }
    if (k != nd->n_outputs) return mp__exec_err(x, id, "more outputs than grad_mask bits");
    return MP_OK;
}

/* The tensor holding forward value t (an input or output of the forward
 * node) for this gradient node.  The node reads t itself, or -- after the
 * recompute transform (src/remat/) -- a recomputed copy of it in t's place
 * of the layout mp_graph_backward gives: dY first, then the forward values
 * grad_needs declares (inputs, then outputs, each tensor once), so the copy
 * is found by position.  Anything else is returned as is (gneed refuses it). */
static size_t fval(const gctx *c, size_t t) {
    const mp_graph_node_t *nd = c->nd, *f = c->f;
    for (size_t i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] == t) return t;
    unsigned needs = mp_op_info(f->op)->grad_needs;
    size_t n_needed = 0, at = MP_GRAPH_NONE;
    for (int pass = 0; pass < 2; pass++) {
        if (!(needs & (pass ? MP_GRAD_NEEDS_OUTPUTS : MP_GRAD_NEEDS_INPUTS))) continue;
        const size_t *v = pass ? f->outputs : f->inputs;
        size_t n = pass ? f->n_outputs : f->n_inputs;
        for (size_t i = 0; i < n; i++) {
            bool seen = false;   /* listed before: inputs, then outputs before i */
            for (size_t j = 0; j < i && !seen; j++) seen = v[j] == v[i];
            for (size_t j = 0; pass && j < f->n_inputs && !seen && (needs & MP_GRAD_NEEDS_INPUTS); j++)
                seen = f->inputs[j] == v[i];
            if (seen) continue;
            if (v[i] == t) at = n_needed;
            n_needed++;
        }
    }
    if (at == MP_GRAPH_NONE || n_needed > nd->n_inputs) return t;
    return nd->inputs[nd->n_inputs - n_needed + at];
}
#define GIN(i) fval(&c, c.f->inputs[i])
#define GOUT(k) fval(&c, c.f->outputs[k])

/* MP_OK when the gradient node reads tensor t (so its value is live). */
static mp_status gneed(const mp__exec *x, const gctx *c, size_t t) {
    for (size_t i = 0; i < c->nd->n_inputs; i++)
        if (c->nd->inputs[i] == t) return MP_OK;
    return mp__exec_err(x, c->id, "its kernel needs tensor %zu '%s', which the node does not read", t,
                        mp__xt(x, t)->name);
}

/* Zeroes the gradients of forward inputs first.. (inputs the op does not
 * differentiate, such as batch norm's running statistics). */
static void gzero_from(const mp__exec *x, const gctx *c, size_t first) {
    for (size_t i = first; i < c->f->n_inputs; i++) {
        size_t o = gout(c, i);
        if (o != MP_GRAPH_NONE) memset(x->addr[o], 0, mp__xt(x, o)->numel * sizeof(float));
    }
}

#define BEGIN                                                                             \
    gctx c;                                                                               \
    memset(&c, 0, sizeof c);                                                              \
    mp_status s = gbegin(x, id, nd, a, &c);                                               \
    if (s != MP_OK) return s
#define NEED(t)                                                                           \
    do {                                                                                  \
        if ((s = gneed(x, &c, (t))) != MP_OK) return s;                                   \
    } while (0)

/* ---- elementwise -------------------------------------------------------- */

static mp_status run_unary_grad(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                const mp_op_attrs_t *a, int op) {
    BEGIN;
    size_t dx = gout(&c, 0);
    if (dx == MP_GRAPH_NONE) return MP_OK;
    uint64_t n = mp__xt(x, dx)->numel;
    if (op < 0) {   /* dropout, identity, flatten: the gradient is dY */
        mp__xcopy(mp__xf(x, dx), mp__xf(x, c.dy), n);
        return MP_OK;
    }
    size_t v = mp__k_unary_grad_from_output(op) ? GOUT(0) : GIN(0);
    NEED(v);
    if ((s = mp__xfloat(x, id, v)) != MP_OK) return s;
    mp__k_unary_backward(op, mp__xf(x, c.dy), mp__xf(x, v), mp__xf(x, dx), n);
    return MP_OK;
}

#define UNARY_GRAD(fn, op)                                                                \
    static mp_status fn(mp__exec *x, size_t id, const mp_graph_node_t *nd,                \
                        const mp_op_attrs_t *a) {                                         \
        return run_unary_grad(x, id, nd, a, op);                                          \
    }
UNARY_GRAD(g_relu, MP__U_RELU)
UNARY_GRAD(g_sigmoid, MP__U_SIGMOID)
UNARY_GRAD(g_tanh, MP__U_TANH)
UNARY_GRAD(g_relu6, MP__U_RELU6)
UNARY_GRAD(g_silu, MP__U_SILU)
UNARY_GRAD(g_hardswish, MP__U_HARDSWISH)
UNARY_GRAD(g_hardsigmoid, MP__U_HARDSIGMOID)
UNARY_GRAD(g_gelu, MP__U_GELU)
UNARY_GRAD(g_pass, -1)

static mp_status run_binary_grad(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                 const mp_op_attrs_t *a, mp__binop op) {
    BEGIN;
    mp__kshape as, bs, ys;
    if ((s = mp__exec_binary_shapes(x, c.fid, c.f, &as, &bs, &ys)) != MP_OK) return s;
    size_t da = gout(&c, 0), db = gout(&c, 1), ai = GIN(0), bi = GIN(1);
    if (op == MP__B_MUL) {
        if (db != MP_GRAPH_NONE) NEED(ai);
        if (da != MP_GRAPH_NONE) NEED(bi);
    }
    int mul = op == MP__B_MUL;
    s = mp__k_binary_backward(op, (float)c.fa.alpha, mp__xf(x, c.dy), &ys,
                              mul ? mp__xf(x, ai) : NULL, &as, mul ? mp__xf(x, bi) : NULL, &bs,
                              gptr(x, da), gptr(x, db));
    return s;
}

static mp_status g_add(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    return run_binary_grad(x, id, nd, a, MP__B_ADD);
}
static mp_status g_sub(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    return run_binary_grad(x, id, nd, a, MP__B_SUB);
}
static mp_status g_mul(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    return run_binary_grad(x, id, nd, a, MP__B_MUL);
}

/* ---- products ----------------------------------------------------------- */

static mp_status g_linear(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                          const mp_op_attrs_t *a) {
    BEGIN;
    uint64_t m, in, out;
    if ((s = mp__exec_linear_params(x, c.fid, &m, &in, &out)) != MP_OK) return s;
    size_t dx = gout(&c, 0), dw = gout(&c, 1), db = gout(&c, 2);
    if (dw != MP_GRAPH_NONE) NEED(GIN(0));
    if (dx != MP_GRAPH_NONE) NEED(GIN(1));
    return mp__k_linear_backward(mp__xf(x, c.dy), mp__xf(x, GIN(0)),
                                 mp__xf(x, GIN(1)), m, in, out, gptr(x, dx), gptr(x, dw),
                                 gptr(x, db));
}

static mp_status g_matmul(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                          const mp_op_attrs_t *a) {
    BEGIN;
    mp__kshape as, bs, ys;
    if ((s = mp__exec_matmul_shapes(x, c.fid, c.f, &as, &bs, &ys)) != MP_OK) return s;
    size_t da = gout(&c, 0), db = gout(&c, 1);
    if (db != MP_GRAPH_NONE) NEED(GIN(0));
    if (da != MP_GRAPH_NONE) NEED(GIN(1));
    return mp__k_matmul_backward(mp__xf(x, c.dy), &ys, mp__xf(x, GIN(0)), &as,
                                 mp__xf(x, GIN(1)), &bs, gptr(x, da), gptr(x, db));
}

static mp_status g_conv2d(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                          const mp_op_attrs_t *a) {
    BEGIN;
    mp__conv p;
    if ((s = mp__exec_conv_params(x, c.fid, &c.fa, &p)) != MP_OK) return s;
    size_t dx = gout(&c, 0), dw = gout(&c, 1), db = gout(&c, 2);
    if (dw != MP_GRAPH_NONE) NEED(GIN(0));
    if (dx != MP_GRAPH_NONE) NEED(GIN(1));
    return mp__k_conv2d_backward(&p, mp__xf(x, c.dy), mp__xf(x, GIN(0)),
                                 mp__xf(x, GIN(1)), gptr(x, dx), gptr(x, dw), gptr(x, db));
}

/* ---- pooling, normalisation --------------------------------------------- */

static mp_status run_pool_grad(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                               const mp_op_attrs_t *a, int kind) {
    BEGIN;
    mp__pool p;
    if ((s = mp__exec_pool_params(x, c.fid, &c.fa, kind, &p)) != MP_OK) return s;
    size_t dx = gout(&c, 0);
    if (dx == MP_GRAPH_NONE) return MP_OK;
    if (kind == 0) {
        NEED(GIN(0));
        mp__k_maxpool2d_backward(&p, mp__xf(x, c.dy), mp__xf(x, GIN(0)), mp__xf(x, dx));
        return MP_OK;
    }
    if (kind == 1) return mp__k_avgpool2d_backward(&p, mp__xf(x, c.dy), mp__xf(x, dx));
    return mp__k_adaptive_avgpool2d_backward(&p, mp__xf(x, c.dy), mp__xf(x, dx));
}

static mp_status g_maxpool(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                           const mp_op_attrs_t *a) {
    return run_pool_grad(x, id, nd, a, 0);
}
static mp_status g_avgpool(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                           const mp_op_attrs_t *a) {
    return run_pool_grad(x, id, nd, a, 1);
}
static mp_status g_adaptive(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                            const mp_op_attrs_t *a) {
    return run_pool_grad(x, id, nd, a, 2);
}

static mp_status run_norm_grad(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                               const mp_op_attrs_t *a, int layer) {
    BEGIN;
    uint64_t outer, ch, inner;
    if ((s = mp__exec_norm_params(x, c.fid, layer, &outer, &ch, &inner)) != MP_OK) return s;
    size_t dx = gout(&c, 0), dw = gout(&c, 1), db = gout(&c, 2);
    size_t w = c.f->n_inputs > 1 ? GIN(1) : MP_GRAPH_NONE;
    if (dx != MP_GRAPH_NONE || dw != MP_GRAPH_NONE) NEED(GIN(0));
    if (dx != MP_GRAPH_NONE && w != MP_GRAPH_NONE) NEED(w);
    const float *xv = mp__xf(x, GIN(0)), *wv = gptr(x, w);
    if (layer)
        s = mp__k_layernorm_backward(mp__xf(x, c.dy), xv, wv, outer, ch, c.fa.eps, gptr(x, dx),
                                     gptr(x, dw), gptr(x, db));
    else
        s = mp__k_batchnorm_backward(mp__xf(x, c.dy), xv, wv, outer, ch, inner, c.fa.eps,
                                     gptr(x, dx), gptr(x, dw), gptr(x, db));
    if (s == MP_OK) gzero_from(x, &c, 3);
    return s;
}

static mp_status g_batchnorm(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                             const mp_op_attrs_t *a) {
    return run_norm_grad(x, id, nd, a, 0);
}
static mp_status g_layernorm(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                             const mp_op_attrs_t *a) {
    return run_norm_grad(x, id, nd, a, 1);
}

/* ---- axis ops and losses ------------------------------------------------ */

static mp_status g_concat(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                          const mp_op_attrs_t *a) {
    BEGIN;
    size_t k = c.f->n_inputs;
    uint64_t *len = malloc(k * sizeof *len + 1), outer, inner;
    float **dst = malloc(k * sizeof *dst + 1);
    if (!len || !dst) s = MP__NOMEM();
    else s = mp__exec_concat_params(x, c.fid, &c.fa, len, &outer, &inner);
    if (s == MP_OK) {
        for (size_t i = 0; i < k; i++) dst[i] = gptr(x, gout(&c, i));
        mp__k_split(mp__xf(x, c.dy), dst, len, k, outer, inner);
    }
    free(len);
    free(dst);
    return s;
}

static mp_status g_softmax(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                           const mp_op_attrs_t *a) {
    BEGIN;
    uint64_t o, l, i;
    if ((s = mp__exec_softmax_params(x, c.fid, &c.fa, &o, &l, &i)) != MP_OK) return s;
    size_t dx = gout(&c, 0);
    if (dx == MP_GRAPH_NONE) return MP_OK;
    NEED(GOUT(0));
    mp__k_softmax_backward(mp__xf(x, c.dy), mp__xf(x, GOUT(0)), mp__xf(x, dx), o, l, i);
    return MP_OK;
}

static mp_status g_xent(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                        const mp_op_attrs_t *a) {
    BEGIN;
    uint64_t n, k;
    if ((s = mp__exec_xent_params(x, c.fid, &n, &k)) != MP_OK) return s;
    size_t dl = gout(&c, 0);
    if (dl == MP_GRAPH_NONE) return MP_OK;
    NEED(GIN(0));
    NEED(GIN(1));
    s = mp__k_softmax_xent_backward(mp__xf(x, c.dy)[0], mp__xf(x, GIN(0)),
                                    x->addr[GIN(1)], n, k, mp__xf(x, dl));
    if (s == MP_OK) return s;
    char why[256];
    snprintf(why, sizeof why, "%s", mp_last_error());
    return mp__exec_err(x, id, "%s", why);
}

static mp_status g_mean(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                        const mp_op_attrs_t *a) {
    BEGIN;
    size_t dx = gout(&c, 0);
    if (dx == MP_GRAPH_NONE) return MP_OK;
    uint64_t n = mp__xt(x, dx)->numel;
    float g = (float)(n ? (double)mp__xf(x, c.dy)[0] / (double)n : 0.0);
    mp__k_fill(mp__xf(x, dx), g, n);
    return MP_OK;
}

/* ---- aggregation and the seed ------------------------------------------- */

static mp_status op_sum_n(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                          const mp_op_attrs_t *a) {
    (void)a;
    if (nd->n_inputs < 2 || nd->n_outputs != 1)
        return mp__exec_err(x, id, "expects 2 or more inputs and 1 output");
    size_t y = nd->outputs[0];
    mp_status s = mp__xfloat(x, id, y);
    for (size_t i = 0; s == MP_OK && i < nd->n_inputs; i++) {
        s = mp__xfloat(x, id, nd->inputs[i]);
        if (s == MP_OK && !mp__xsame(x, nd->inputs[i], y))
            s = mp__exec_err(x, id, "input %zu's shape differs from the output's", i);
    }
    if (s != MP_OK) return s;
    const float **src = malloc(nd->n_inputs * sizeof *src);
    if (!src) return MP__NOMEM();
    for (size_t i = 0; i < nd->n_inputs; i++) src[i] = mp__xf(x, nd->inputs[i]);
    mp__k_sum_n(src, nd->n_inputs, mp__xf(x, y), mp__xt(x, y)->numel);
    free(src);
    return MP_OK;
}

static mp_status op_ones(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                         const mp_op_attrs_t *a) {
    (void)a;
    if (nd->n_outputs != 1) return mp__exec_err(x, id, "expects 1 output");
    mp_status s = mp__xfloat(x, id, nd->outputs[0]);
    if (s == MP_OK) mp__k_fill(mp__xf(x, nd->outputs[0]), 1.0f, mp__xt(x, nd->outputs[0])->numel);
    return s;
}

static const mp__exec_op TABLE[] = {
    {"relu_backward", g_relu, 1},
    {"sigmoid_backward", g_sigmoid, 1},
    {"tanh_backward", g_tanh, 1},
    {"relu6_backward", g_relu6, 1},
    {"silu_backward", g_silu, 1},
    {"hardswish_backward", g_hardswish, 1},
    {"hardsigmoid_backward", g_hardsigmoid, 1},
    {"gelu_backward", g_gelu, 1},
    {"dropout_backward", g_pass, 1},
    {"identity_backward", g_pass, 1},
    {"flatten_backward", g_pass, 0},
    {"add_backward", g_add, 0},
    {"sub_backward", g_sub, 0},
    {"mul_backward", g_mul, 0},
    {"linear_backward", g_linear, 0},
    {"matmul_backward", g_matmul, 0},
    {"conv2d_backward", g_conv2d, 0},
    {"maxpool2d_backward", g_maxpool, 0},
    {"avgpool2d_backward", g_avgpool, 0},
    {"adaptive_avgpool2d_backward", g_adaptive, 0},
    {"batchnorm2d_backward", g_batchnorm, 0},
    {"layernorm_backward", g_layernorm, 0},
    {"concat_backward", g_concat, 0},
    {"softmax_backward", g_softmax, 0},
    {"softmax_xent_backward", g_xent, 0},
    {"mean_backward", g_mean, 0},
    {"sum_n", op_sum_n, 1},
    {"ones", op_ones, 0},
};

const mp__exec_op *mp__exec_ops_grad(size_t *n) {
    *n = sizeof TABLE / sizeof TABLE[0];
    return TABLE;
}
