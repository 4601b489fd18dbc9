/* exec_ops_shape.c -- forward ops that move or reduce along an axis:
 * flatten (a view), concat, softmax, the softmax cross-entropy loss and the
 * mean loss.  Same conventions as exec_ops.c. */
#include "exec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mp_status one_out(mp__exec *x, size_t id, const mp_graph_node_t *nd, size_t n_in) {
    if (nd->n_inputs < n_in || nd->n_outputs != 1)
        return mp__exec_err(x, id, "expects %zu input(s) and 1 output, has %zu and %zu", n_in,
                            nd->n_inputs, nd->n_outputs);
    mp_status s = mp__xfloat(x, id, nd->inputs[0]);
    return s != MP_OK ? s : mp__xfloat(x, id, nd->outputs[0]);
}

/* flatten: output an alias of the input (nothing to do) or, in a graph
 * where it owns memory, a copy. */
static mp_status op_flatten(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                            const mp_op_attrs_t *a) {
    (void)a;
    mp_status s = one_out(x, id, nd, 1);
    if (s != MP_OK) return s;
    size_t in = nd->inputs[0], out = nd->outputs[0];
    if (mp__xt(x, in)->numel != mp__xt(x, out)->numel)
        return mp__exec_err(x, id, "flatten changes the number of elements");
    mp__xcopy(mp__xf(x, out), mp__xf(x, in), mp__xt(x, in)->numel);
    return MP_OK;
}

mp_status mp__exec_concat_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a, uint64_t *len,
                                 uint64_t *outer, uint64_t *inner) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    mp_status s = one_out(x, fid, nd, 1);
    if (s != MP_OK) return s;
    const mp_graph_tensor_t *Y = mp__xt(x, nd->outputs[0]);
    size_t ax;
    if ((s = mp__xaxis(x, fid, a->dim, Y->rank, &ax)) != MP_OK) return s;
    uint64_t total = 0;
    for (size_t i = 0; i < nd->n_inputs; i++) {
        const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[i]);
        if ((s = mp__xfloat(x, fid, nd->inputs[i])) != MP_OK) return s;
        if (X->rank != Y->rank) return mp__exec_err(x, fid, "input %zu has another rank", i);
        for (size_t d = 0; d < Y->rank; d++)
            if (d != ax && X->shape[d] != Y->shape[d])
                return mp__exec_err(x, fid, "input %zu differs from the output off the axis", i);
        len[i] = X->shape[ax];
        total += len[i];
    }
    if (total != Y->shape[ax]) return mp__exec_err(x, fid, "the inputs do not add up to the output");
    *outer = *inner = 1;
    for (size_t d = 0; d < ax; d++) *outer *= Y->shape[d];
    for (size_t d = ax + 1; d < Y->rank; d++) *inner *= Y->shape[d];
    return MP_OK;
}

static mp_status op_concat(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                           const mp_op_attrs_t *a) {
    uint64_t *len = malloc(nd->n_inputs * sizeof *len + 1);
    const float **src = malloc(nd->n_inputs * sizeof *src + 1);
    uint64_t outer, inner;
    mp_status s = (!len || !src) ? MP__NOMEM() : mp__exec_concat_params(x, id, a, len, &outer, &inner);
    if (s == MP_OK) {
        for (size_t i = 0; i < nd->n_inputs; i++) src[i] = mp__xf(x, nd->inputs[i]);
        mp__k_concat(src, len, nd->n_inputs, mp__xf(x, nd->outputs[0]), outer, inner);
    }
    free(len);
    free(src);
    return s;
}

mp_status mp__exec_softmax_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a,
                                  uint64_t *outer, uint64_t *len, uint64_t *inner) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    mp_status s = one_out(x, fid, nd, 1);
    if (s != MP_OK) return s;
    if (!mp__xsame(x, nd->inputs[0], nd->outputs[0]))
        return mp__exec_err(x, fid, "output shape differs from the input's");
    const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[0]);
    size_t ax;
    if ((s = mp__xaxis(x, fid, a->dim, X->rank, &ax)) != MP_OK) return s;
    *outer = *inner = 1;
    for (size_t d = 0; d < ax; d++) *outer *= X->shape[d];
    for (size_t d = ax + 1; d < X->rank; d++) *inner *= X->shape[d];
    *len = X->shape[ax];
    return MP_OK;
}

static mp_status op_softmax(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                            const mp_op_attrs_t *a) {
    uint64_t o, l, i;
    mp_status s = mp__exec_softmax_params(x, id, a, &o, &l, &i);
    if (s == MP_OK) mp__k_softmax(mp__xf(x, nd->inputs[0]), mp__xf(x, nd->outputs[0]), o, l, i);
    return s;
}

mp_status mp__exec_xent_params(mp__exec *x, size_t fid, uint64_t *n, uint64_t *k) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    mp_status s = one_out(x, fid, nd, 2);
    if (s != MP_OK) return s;
    const mp_graph_tensor_t *L = mp__xt(x, nd->inputs[0]), *T = mp__xt(x, nd->inputs[1]);
    if (L->rank != 2 || strcmp(T->dtype, "int64") != 0 || T->numel != L->shape[0] ||
        mp__xt(x, nd->outputs[0])->numel != 1)
        return mp__exec_err(x, fid, "expects logits [N, K], an int64 target [N] and a scalar loss");
    *n = L->shape[0];
    *k = L->shape[1];
    return MP_OK;
}

static mp_status op_softmax_xent(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                 const mp_op_attrs_t *a) {
    (void)a;
    uint64_t n, k;
    mp_status s = mp__exec_xent_params(x, id, &n, &k);
    if (s != MP_OK) return s;
    s = mp__k_softmax_xent(mp__xf(x, nd->inputs[0]), x->addr[nd->inputs[1]], n, k,
                           mp__xf(x, nd->outputs[0]));
    if (s == MP_OK) return s;
    char why[256];   /* the kernel's message, before it is overwritten */
    snprintf(why, sizeof why, "%s", mp_last_error());
    return mp__exec_err(x, id, "%s", why);
}

/* mean: the mean of every element of x (the loss add_loss appends for
 * outputs that are not [N, K] logits), summed in double in index order. */
static mp_status op_mean(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                         const mp_op_attrs_t *a) {
    (void)a;
    mp_status s = one_out(x, id, nd, 1);
    if (s != MP_OK) return s;
    if (mp__xt(x, nd->outputs[0])->numel != 1) return mp__exec_err(x, id, "the mean is one element");
    const float *p = mp__xf(x, nd->inputs[0]);
    uint64_t n = mp__xt(x, nd->inputs[0])->numel;
    double sum = 0.0;
    for (uint64_t i = 0; i < n; i++) sum += p[i];
    mp__xf(x, nd->outputs[0])[0] = (float)(n ? sum / (double)n : 0.0);
    return MP_OK;
}

static const mp__exec_op TABLE[] = {
    {"flatten", op_flatten, 0},
    {"concat", op_concat, 0},
    {"softmax", op_softmax, 0},
    {"softmax_xent", op_softmax_xent, 0},
    {"mean", op_mean, 0},
};

const mp__exec_op *mp__exec_ops_shape(size_t *n) {
    *n = sizeof TABLE / sizeof TABLE[0];
    return TABLE;
}
