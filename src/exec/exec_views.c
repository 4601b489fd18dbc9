/* exec_views.c -- the executor's views: where every alias lies in its
 * root's memory (offset and strides, from the view op's arguments), the
 * view ops (reshape/view, permute, transpose, expand, chunk, getitem,
 * stochastic_depth) and their gradients.
 *
 * The fx exporter gives a view's output no bytes of its own (alias_of), so
 * a permuted or chunked alias is not contiguous in its root.  Kernels take
 * contiguous operands: exec.c gathers a strided input into a scratch copy
 * right before the node that reads it runs (mp__exec_unview), from the
 * root's memory as it is at that moment, so a plan that let the root be
 * overwritten still shows up.  A view op whose output owns bytes (a graph
 * that materialises it) copies.  The gradients of the views that move
 * elements scatter dY back through the same strides into zeros (summed in
 * double: expand's broadcast dims); reshape's and stochastic_depth's are
 * dY itself.  The arguments are read from the node's raw attrs (args,
 * kwargs), which mp_op_attrs_t does not hold. */
#include "exec_internal.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

const struct json_t *mp__exec_arg(const mp__exec *x, size_t id, size_t pos, const char *kw) {
    const json_t *a = mp__graph_node_attrs_json(x->g, id);
    if (!json_is_object(a)) return NULL;
    const json_t *kws = json_object_get(a, "kwargs");
    if (kw && json_is_object(kws)) {
        const json_t *v = json_object_get(kws, kw);
        if (v) return v;
    }
    const json_t *args = json_object_get(a, "args");
    return json_is_array(args) ? json_array_get(args, pos) : NULL;
}

static int get_i64(const json_t *v, int64_t *out) {
    if (!json_is_integer(v)) return 0;
    *out = (int64_t)json_integer_value(v);
    return 1;
}

/* An int list given as one list argument at pos (or kwargs kw) or as
 * integers from pos on (permute(0, 2, 3, 1)).  Returns the count, or -1. */
static int int_list(const mp__exec *x, size_t id, size_t pos, const char *kw, int64_t *out) {
    const json_t *v = mp__exec_arg(x, id, pos, kw);
    int n = 0;
    if (json_is_array(v)) {
        if (json_array_size(v) > MP_MAX_RANK) return -1;
        for (size_t i = 0; i < json_array_size(v); i++)
            if (!get_i64(json_array_get(v, i), &out[n++])) return -1;
        return n;
    }
    for (; n < MP_MAX_RANK; n++) {
        v = mp__exec_arg(x, id, pos + (size_t)n, NULL);
        if (!v) break;
        if (!get_i64(v, &out[n])) return -1;
    }
    return n;
}

/* ---- view descriptors -------------------------------------------------------- */

static void contiguous(const mp_graph_tensor_t *T, int64_t offset, mp__view *v) {
    int64_t acc = 1;
    v->offset = offset;
    v->strided = 0;
    for (size_t d = T->rank; d-- > 0;) {
        v->st[d] = acc;
        acc *= (int64_t)T->shape[d];
    }
}

/* Is v the contiguous layout of T (dims of length 1 have any stride)? */
static int is_contiguous(const mp_graph_tensor_t *T, const mp__view *v) {
    int64_t acc = 1;
    for (size_t d = T->rank; d-- > 0;) {
        if (T->shape[d] != 1 && v->st[d] != acc) return 0;
        acc *= (int64_t)T->shape[d];
    }
    return 1;
}

static int view_kind(const char *op) {
    static const char *const names[] = {"reshape", "flatten", "stochastic_depth", "permute",
                                        "transpose", "expand", "chunk", "getitem"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (!strcmp(op, names[i])) return i;
    return -1;
}
enum { V_RESHAPE, V_FLATTEN, V_SDEPTH, V_PERMUTE, V_TRANSPOSE, V_EXPAND, V_CHUNK, V_GETITEM };

/* getitem's index: ints, slices {"slice": [start, stop, step]}, None. */
static mp_status index_view(const mp__exec *x, size_t id, const mp_graph_tensor_t *X, const mp__view *in,
                            const mp_graph_tensor_t *Y, mp__view *out) {
    const json_t *ix = mp__exec_arg(x, id, 1, NULL);
    size_t n = json_is_array(ix) ? json_array_size(ix) : 1, d = 0, r = 0;
    out->offset = in->offset;
    for (size_t k = 0; k < n; k++) {
        const json_t *it = json_is_array(ix) ? json_array_get(ix, k) : ix;
        int64_t i;
        if (json_is_null(it)) {   /* None: a new axis of length 1 */
            if (r >= Y->rank || Y->shape[r] != 1)
                return mp__exec_err((mp__exec *)x, id, "index does not fit the output");
            out->st[r++] = 0;
            continue;
        }
        if (d >= X->rank) return mp__exec_err((mp__exec *)x, id, "too many indices");
        int64_t len = (int64_t)X->shape[d];
        if (get_i64(it, &i)) {
            if (i < 0) i += len;
            if (i < 0 || i >= len) return mp__exec_err((mp__exec *)x, id, "index %lld out of range", (long long)i);
            out->offset += i * in->st[d++];
            continue;
        }
        const json_t *sl = json_object_get(it, "slice");
        if (!json_is_array(sl) || json_array_size(sl) != 3)
            return mp__exec_err((mp__exec *)x, id, "index item %zu is neither an int, a slice nor None", k);
        int64_t lo = 0, hi = len, step = 1;
        if (!json_is_null(json_array_get(sl, 2)) && (!get_i64(json_array_get(sl, 2), &step) || step < 1))
            return mp__exec_err((mp__exec *)x, id, "slice step must be a positive int");
        if (get_i64(json_array_get(sl, 0), &lo)) lo = lo < 0 ? lo + len : lo;
        if (get_i64(json_array_get(sl, 1), &hi)) hi = hi < 0 ? hi + len : hi;
        lo = lo < 0 ? 0 : lo > len ? len : lo;
        hi = hi < lo ? lo : hi > len ? len : hi;
        if (r >= Y->rank || Y->shape[r] != (uint64_t)((hi - lo + step - 1) / step))
            return mp__exec_err((mp__exec *)x, id, "slice on dim %zu does not give the output's length", d);
        out->offset += lo * in->st[d];
        out->st[r++] = in->st[d++] * step;
    }
    for (; d < X->rank; d++, r++) {
        if (r >= Y->rank || Y->shape[r] != X->shape[d])
            return mp__exec_err((mp__exec *)x, id, "index result does not fit the output");
        out->st[r] = in->st[d];
    }
    if (r != Y->rank) return mp__exec_err((mp__exec *)x, id, "index result does not fit the output");
    return MP_OK;
}

/* Output k of view node id, given its input's place *in: *out. */
static mp_status view_of(const mp__exec *x, size_t id, int kind, size_t k, const mp__view *in,
                         mp__view *out) {
    mp__exec *xm = (mp__exec *)x;
    const mp_graph_node_t *nd = &x->g->node[id];
    const mp_graph_tensor_t *X = mp__xt(x, nd->inputs[0]), *Y = mp__xt(x, nd->outputs[k]);
    int64_t v[MP_MAX_RANK];
    size_t a, b;
    mp_status s;
    memset(out, 0, sizeof *out);
    switch (kind) {
    case V_RESHAPE: case V_FLATTEN: case V_SDEPTH:
        if (X->numel != Y->numel) return mp__exec_err(xm, id, "output has another number of elements");
        if (kind == V_SDEPTH && mp__xsame(x, nd->inputs[0], nd->outputs[k])) {
            *out = *in;
            return MP_OK;
        }
        if (in->strided) return mp__exec_err(xm, id, "a reshaping view of a non-contiguous view");
        contiguous(Y, in->offset, out);
        return MP_OK;
    case V_PERMUTE: {
        int n = int_list(x, id, 1, "dims", v);
        if (n != (int)X->rank || Y->rank != X->rank) return mp__exec_err(xm, id, "permutation does not fit the rank");
        unsigned seen = 0;
        for (size_t i = 0; i < X->rank; i++) {
            if ((s = mp__xaxis(x, id, v[i], X->rank, &a)) != MP_OK) return s;
            if (seen >> a & 1 || Y->shape[i] != X->shape[a])
                return mp__exec_err(xm, id, "not a permutation of the input's dims to the output's");
            seen |= 1u << a;
            out->st[i] = in->st[a];
        }
        break;
    }
    case V_TRANSPOSE: {
        int64_t d0, d1;
        if (!get_i64(mp__exec_arg(x, id, 1, "dim0"), &d0) || !get_i64(mp__exec_arg(x, id, 2, "dim1"), &d1))
            return mp__exec_err(xm, id, "transpose needs two int dims");
        if ((s = mp__xaxis(x, id, d0, X->rank, &a)) || (s = mp__xaxis(x, id, d1, X->rank, &b))) return s;
        memcpy(out->st, in->st, sizeof out->st);
        out->st[a] = in->st[b];
        out->st[b] = in->st[a];
        if (Y->rank != X->rank || Y->shape[a] != X->shape[b] || Y->shape[b] != X->shape[a])
            return mp__exec_err(xm, id, "output is not the transposed input");
        break;
    }
    case V_EXPAND: {
        /* sizes are Y's shape (-1 keeps a dim); only length-1 dims grow */
        if (Y->rank < X->rank) return mp__exec_err(xm, id, "expand to a lower rank");
        size_t lead = Y->rank - X->rank;
        for (size_t i = 0; i < Y->rank; i++) {
            if (i < lead) {
                out->st[i] = 0;
                continue;
            }
            uint64_t xd = X->shape[i - lead];
            if (xd == Y->shape[i]) out->st[i] = in->st[i - lead];
            else if (xd == 1) out->st[i] = 0;
            else return mp__exec_err(xm, id, "expand changes a dim of length %llu", (unsigned long long)xd);
        }
        break;
    }
    case V_CHUNK: {
        int64_t chunks, dim = 0;
        if (!get_i64(mp__exec_arg(x, id, 1, "chunks"), &chunks) || chunks < 1)
            return mp__exec_err(xm, id, "chunk needs a positive chunk count");
        const json_t *dv = mp__exec_arg(x, id, 2, "dim");
        if (dv && !get_i64(dv, &dim)) return mp__exec_err(xm, id, "chunk's dim is not an int");
        if ((s = mp__xaxis(x, id, dim, X->rank, &a)) != MP_OK) return s;
        uint64_t len = X->shape[a], cs = (len + (uint64_t)chunks - 1) / (uint64_t)chunks;
        uint64_t lo = (uint64_t)k * cs;
        if (Y->rank != X->rank || lo >= len || Y->shape[a] != (len - lo < cs ? len - lo : cs))
            return mp__exec_err(xm, id, "output %zu is not chunk %zu of the input", k, k);
        for (size_t i = 0; i < X->rank; i++)
            if (i != a && Y->shape[i] != X->shape[i]) return mp__exec_err(xm, id, "chunk changes another dim");
        memcpy(out->st, in->st, sizeof out->st);
        out->offset = in->offset + (int64_t)lo * in->st[a];
        out->strided = !is_contiguous(Y, out);
        return MP_OK;
    }
    default:
        if ((s = index_view(x, id, X, in, Y, out)) != MP_OK) return s;
        out->strided = !is_contiguous(Y, out);
        return MP_OK;
    }
    out->offset = in->offset;
    out->strided = !is_contiguous(Y, out);
    return MP_OK;
}

mp_status mp__exec_views_layout(mp__exec *x, uint64_t *span) {
    const mp_graph_t *g = x->g;
    for (size_t t = 0; t < g->n_tensors; t++) contiguous(&g->tensor[t], 0, &x->view[t]);
    for (size_t step = 0; step < g->n_nodes; step++) {
        size_t id = g->order[step];
        const mp_graph_node_t *nd = &g->node[id];
        int kind = view_kind(mp_op_info(nd->op)->name);
        for (size_t k = 0; k < nd->n_outputs; k++) {
            size_t o = nd->outputs[k];
            const mp_graph_tensor_t *O = &g->tensor[o];
            if (O->root == o) continue;
            size_t in = nd->n_inputs ? nd->inputs[0] : MP_GRAPH_NONE;
            if (in == MP_GRAPH_NONE || g->tensor[in].root != O->root) {
                contiguous(O, 0, &x->view[o]);   /* an alias of something it does not read */
            } else if (kind >= 0) {
                mp_status s = view_of(x, id, kind, k, &x->view[in], &x->view[o]);
                if (s != MP_OK) return s;
            } else if (mp__xsame(x, in, o)) {
                x->view[o] = x->view[in];
            } else if (x->view[in].strided) {
                return mp__exec_err(x, id, "output %zu reshapes a non-contiguous view", o);
            } else {
                contiguous(O, x->view[in].offset, &x->view[o]);
            }
        }
    }
    /* addresses and extents: [lo, hi] element offsets within the root */
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp_graph_tensor_t *T = &g->tensor[t];
        if (T->root == t) continue;
        const mp__view *v = &x->view[t];
        int64_t lo = v->offset, hi = v->offset;
        for (size_t d = 0; d < T->rank; d++) {
            if (!T->shape[d]) hi = lo - 1;
            else hi += v->st[d] * (int64_t)(T->shape[d] - 1);
        }
        uint64_t es = T->dtype_size, root_span = span[T->root];
        if (!v->strided) hi = lo + (int64_t)T->numel - 1;
        if (lo < 0 || (hi >= lo && (uint64_t)(hi + 1) * es > root_span))
            return mp__err(MP_EINVAL, "exec: alias %zu '%s' covers more bytes than its root %zu '%s'", t,
                           T->name, T->root, g->tensor[T->root].name);
        x->addr[t] = x->addr[T->root] + (uint64_t)lo * es;
        span[t] = hi >= lo ? (uint64_t)(hi - lo + 1) * es : 0;
    }
    return MP_OK;
}

mp_status mp__exec_unview(const mp__exec *x, size_t t, float **out) {
    const mp_graph_tensor_t *T = mp__xt(x, t);
    float *buf = malloc(T->numel ? T->numel * sizeof *buf : sizeof *buf);
    if (!buf) return MP__NOMEM();
    mp__kshape s = mp__xshape(x, t);
    mp__k_gather((const float *)(const void *)x->addr[T->root], x->view[t].offset, x->view[t].st, &s, buf);
    *out = buf;
    return MP_OK;
}

/* ---- the view ops --------------------------------------------------------------- */

/* An aliased output is already in place; an owned one is gathered from
 * input 0 (contiguous here: exec.c gathered it if it was strided). */
static mp_status op_view(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    (void)a;
    int kind = view_kind(mp_op_info(nd->op)->name);
    if (nd->n_inputs < 1 || nd->n_outputs < 1) return mp__exec_err(x, id, "expects an input and outputs");
    mp_status s = mp__xfloat(x, id, nd->inputs[0]);
    if (s != MP_OK) return s;
    mp__view in, out;
    contiguous(mp__xt(x, nd->inputs[0]), 0, &in);
    for (size_t k = 0; k < nd->n_outputs; k++) {
        size_t o = nd->outputs[k];
        if ((s = mp__xfloat(x, id, o)) != MP_OK) return s;
        if ((s = view_of(x, id, kind, k, &in, &out)) != MP_OK) return s;
        if (mp__xt(x, o)->root != o) continue;
        mp__kshape ys = mp__xshape(x, o);
        mp__k_gather(mp__xf(x, nd->inputs[0]), out.offset, out.st, &ys, mp__xf(x, o));
    }
    return MP_OK;
}

/* The forward node of gradient node id, checked: dY per forward output,
 * one gradient output for input 0. */
static mp_status grad_begin(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a,
                            const mp_graph_node_t **f) {
    size_t fid = a->forward_node;
    if (fid == MP_GRAPH_NONE || fid >= x->g->n_nodes || fid == id) return mp__exec_err(x, id, "no forward_node");
    *f = &x->g->node[fid];
    if (a->grad_mask != 1 || nd->n_outputs != 1 || (*f)->n_inputs < 1)
        return mp__exec_err(x, id, "expects one gradient, of the forward node's input 0");
    if (nd->n_inputs != (*f)->n_outputs)
        return mp__exec_err(x, id, "needs the gradient of every output of the forward node (%zu of %zu given)",
                            nd->n_inputs, (*f)->n_outputs);
    mp_status s;
    for (size_t k = 0; k < nd->n_inputs; k++) {
        if ((s = mp__xfloat(x, id, nd->inputs[k])) != MP_OK) return s;
        if (!mp__xsame(x, nd->inputs[k], (*f)->outputs[k]))
            return mp__exec_err(x, id, "dY %zu's shape differs from forward output %zu's", k, k);
    }
    if ((s = mp__xfloat(x, id, nd->outputs[0])) != MP_OK) return s;
    if (!mp__xsame(x, nd->outputs[0], (*f)->inputs[0]))
        return mp__exec_err(x, id, "the gradient's shape differs from the forward input's");
    return MP_OK;
}

/* reshape, stochastic_depth: dX is dY (a view of it, or a copy). */
static mp_status g_view_pass(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    const mp_graph_node_t *f = NULL;
    mp_status s = grad_begin(x, id, nd, a, &f);
    if (s != MP_OK) return s;
    mp__xcopy(mp__xf(x, nd->outputs[0]), mp__xf(x, nd->inputs[0]), mp__xt(x, nd->inputs[0])->numel);
    return MP_OK;
}

/* permute, transpose, expand, chunk, getitem: dX = 0, then each dY added
 * back through the strides its output had over a contiguous x. */
static mp_status g_view_scatter(mp__exec *x, size_t id, const mp_graph_node_t *nd, const mp_op_attrs_t *a) {
    const mp_graph_node_t *f = NULL;
    mp_status s = grad_begin(x, id, nd, a, &f);
    if (s != MP_OK) return s;
    size_t fid = a->forward_node, dx = nd->outputs[0];
    int kind = view_kind(mp_op_info(f->op)->name);
    uint64_t n = mp__xt(x, dx)->numel;
    double *acc = calloc(n ? n : 1, sizeof *acc);
    if (!acc) return MP__NOMEM();
    mp__view in, out;
    contiguous(mp__xt(x, f->inputs[0]), 0, &in);
    for (size_t k = 0; k < nd->n_inputs && s == MP_OK; k++) {
        if ((s = view_of(x, fid, kind, k, &in, &out)) != MP_OK) break;
        mp__kshape ys = mp__xshape(x, nd->inputs[k]);
        mp__k_scatter_add(mp__xf(x, nd->inputs[k]), &ys, out.offset, out.st, acc);
    }
    float *d = mp__xf(x, dx);
    for (uint64_t i = 0; s == MP_OK && i < n; i++) d[i] = (float)acc[i];
    free(acc);
    return s;
}

static const mp__exec_op TABLE[] = {
    {"reshape", op_view, 0},
    {"stochastic_depth", op_view, 0},
    {"permute", op_view, 0},
    {"transpose", op_view, 0},
    {"expand", op_view, 0},
    {"chunk", op_view, 0},
    {"getitem", op_view, 0},
    {"reshape_backward", g_view_pass, 0},
    {"stochastic_depth_backward", g_view_pass, 0},
    {"permute_backward", g_view_scatter, 0},
    {"transpose_backward", g_view_scatter, 0},
    {"expand_backward", g_view_scatter, 0},
    {"chunk_backward", g_view_scatter, 0},
    {"getitem_backward", g_view_scatter, 0},
};

const mp__exec_op *mp__exec_ops_view(size_t *n) {
    *n = sizeof TABLE / sizeof TABLE[0];
    return TABLE;
}
