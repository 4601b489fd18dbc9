/* exec_resize.c -- F.interpolate (nearest, bilinear) and the mean over
 * chosen dimensions (Tensor.mean(dims, keepdim)), forward and gradient.
 * Their arguments come from the node's raw attrs (mp__exec_arg): the
 * output shape is the graph's, so only the mode, align_corners and a given
 * scale_factor (which sets the source step when recompute_scale_factor is
 * not true, as in PyTorch) are read for interpolate, and the dims for the
 * mean. */
#include "exec_internal.h"

#include <string.h>

#include <jansson.h>

/* Node fid (interpolate): x[n,c,h,w] -> y[n,c,oh,ow] and the mode. */
static mp_status interp_params(mp__exec *x, size_t fid, mp__interp *p) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    if (nd->n_inputs < 1 || nd->n_outputs != 1) return mp__exec_err(x, fid, "expects an input and an output");
    const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[0]), *Y = mp__xt(x, nd->outputs[0]);
    mp_status s = mp__xfloat(x, fid, nd->inputs[0]);
    if (s == MP_OK) s = mp__xfloat(x, fid, nd->outputs[0]);
    if (s != MP_OK) return s;
    if (X->rank != 4 || Y->rank != 4 || X->shape[0] != Y->shape[0] || X->shape[1] != Y->shape[1] ||
        !X->shape[2] || !X->shape[3])
        return mp__exec_err(x, fid, "expects x[N,C,H,W] and y[N,C,H',W'] (2-D interpolation only)");
    memset(p, 0, sizeof *p);
    p->n = X->shape[0], p->c = X->shape[1], p->h = X->shape[2], p->w = X->shape[3];
    p->oh = Y->shape[2], p->ow = Y->shape[3];
    const json_t *mode = mp__exec_arg(x, fid, 3, "mode");
    const char *m = json_is_string(mode) ? json_string_value(mode) : "nearest";
    if (!strcmp(m, "nearest")) p->mode = 0;
    else if (!strcmp(m, "bilinear")) p->mode = 1;
    else return mp__exec_err(x, fid, "interpolation mode '%s' has no kernel (nearest, bilinear)", m);
    p->align_corners = json_is_true(mp__exec_arg(x, fid, 4, "align_corners"));
    const json_t *sf = mp__exec_arg(x, fid, 2, "scale_factor");
    const json_t *rc = mp__exec_arg(x, fid, 5, "recompute_scale_factor");
    if (json_is_number(sf) || json_is_array(sf)) {
        const json_t *sh = json_is_array(sf) ? json_array_get(sf, 0) : sf;
        const json_t *sw = json_is_array(sf) ? json_array_get(sf, 1) : sf;
        if (!json_is_number(sh) || !json_is_number(sw) || json_number_value(sh) <= 0 ||
            json_number_value(sw) <= 0)
            return mp__exec_err(x, fid, "bad scale_factor");
        if (!json_is_true(rc)) {
            p->scale_h = 1.0 / json_number_value(sh);
            p->scale_w = 1.0 / json_number_value(sw);
        }
    }
    return MP_OK;
}

static mp_status op_interp(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    (void)a;
    mp__interp p;
    mp_status s = interp_params(x, id, &p);
    if (s == MP_OK) mp__k_interp(&p, mp__xf(x, nd->inputs[0]), mp__xf(x, nd->outputs[0]));
    return s;
}

/* The forward node of gradient node id and its dY/dX, checked. */
static mp_status grad_one(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a,
                          size_t *fid) {
    *fid = a->forward_node;
    if (*fid == MP_GRAPH_NONE || *fid >= x->g->n_nodes || *fid == id) return mp__exec_err(x, id, "no forward_node");
    const mp_graph_node_t *f = &x->g->node[*fid];
    if (a->grad_mask != 1 || nd->n_outputs != 1 || nd->n_inputs < 1 || f->n_outputs != 1 || f->n_inputs < 1)
        return mp__exec_err(x, id, "expects dY and the gradient of forward input 0");
    mp_status s = mp__xfloat(x, id, nd->inputs[0]);
    if (s == MP_OK) s = mp__xfloat(x, id, nd->outputs[0]);
    if (s != MP_OK) return s;
    if (!mp__xsame(x, nd->inputs[0], f->outputs[0]) || !mp__xsame(x, nd->outputs[0], f->inputs[0]))
        return mp__exec_err(x, id, "dY or dX does not have its forward value's shape");
    return MP_OK;
}

static mp_status g_interp(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    size_t fid;
    mp__interp p;
    mp_status s = grad_one(x, id, nd, a, &fid);
    if (s == MP_OK) s = interp_params(x, fid, &p);
    if (s == MP_OK) s = mp__k_interp_backward(&p, mp__xf(x, nd->inputs[0]), mp__xf(x, nd->outputs[0]));
    return s;
}

/* Node fid (reduce_mean): the reduced dims as a bit set; the output must
 * hold the kept ones (keepdim or not). */
static mp_status mean_params(mp__exec *x, size_t fid, uint64_t *dims) {
    const mp_graph_node_t *nd = &x->g->node[fid];
    if (nd->n_inputs < 1 || nd->n_outputs != 1) return mp__exec_err(x, fid, "expects an input and an output");
    mp_status s = mp__xfloat(x, fid, nd->inputs[0]);
    if (s == MP_OK) s = mp__xfloat(x, fid, nd->outputs[0]);
    if (s != MP_OK) return s;
    const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[0]), *Y = mp__xt(x, nd->outputs[0]);
    const json_t *dv = mp__exec_arg(x, fid, 1, "dim");
    size_t ax;
    *dims = 0;
    if (!dv || json_is_null(dv)) {
        *dims = X->rank ? ((uint64_t)1 << X->rank) - 1 : 0;
    } else {
        size_t n = json_is_array(dv) ? json_array_size(dv) : 1;
        for (size_t k = 0; k < n; k++) {
            const json_t *e = json_is_array(dv) ? json_array_get(dv, k) : dv;
            if (!json_is_integer(e)) return mp__exec_err(x, fid, "mean's dims are not ints");
            if ((s = mp__xaxis(x, fid, (int64_t)json_integer_value(e), X->rank, &ax)) != MP_OK) return s;
            *dims |= (uint64_t)1 << ax;
        }
    }
    /* the output: the kept dims, with 1s where reduced when keepdim */
    uint64_t drop[MP_MAX_RANK], keep[MP_MAX_RANK];
    size_t nd_ = 0;
    for (size_t d = 0; d < X->rank; d++) {
        keep[d] = *dims >> d & 1 ? 1 : X->shape[d];
        if (!(*dims >> d & 1)) drop[nd_++] = X->shape[d];
    }
    int ok_drop = Y->rank == nd_ && (!nd_ || !memcmp(Y->shape, drop, nd_ * sizeof *drop));
    int ok_keep = Y->rank == X->rank && (!X->rank || !memcmp(Y->shape, keep, X->rank * sizeof *keep));
    if (!ok_drop && !ok_keep)
        return mp__exec_err(x, fid, "output shape is not the input's without the reduced dims");
    return MP_OK;
}

static mp_status op_reduce_mean(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    (void)a;
    uint64_t dims = 0;
    mp_status s = mean_params(x, id, &dims);
    if (s != MP_OK) return s;
    mp__kshape xs = mp__xshape(x, nd->inputs[0]);
    return mp__k_reduce_mean(mp__xf(x, nd->inputs[0]), &xs, dims, mp__xf(x, nd->outputs[0]));
}

static mp_status g_reduce_mean(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    size_t fid;
    uint64_t dims = 0;
    mp_status s = grad_one(x, id, nd, a, &fid);
    if (s == MP_OK) s = mean_params(x, fid, &dims);
    if (s != MP_OK) return s;
    mp__kshape xs = mp__xshape(x, nd->outputs[0]);
    mp__k_reduce_mean_backward(mp__xf(x, nd->inputs[0]), &xs, dims, mp__xf(x, nd->outputs[0]));
    return MP_OK;
}

static const mp__exec_op TABLE[] = {
    {"interpolate", op_interp, 0},
    {"interpolate_backward", g_interp, 0},
    {"reduce_mean", op_reduce_mean, 0},
    {"reduce_mean_backward", g_reduce_mean, 0},
};

const mp__exec_op *mp__exec_ops_resize(size_t *n) {
    *n = sizeof TABLE / sizeof TABLE[0];
    return TABLE;
}
