/* ops_check.c -- mp_graph_check_shapes: every node whose op the registry
 * can infer is re-inferred from its input shapes and attributes and
 * compared with the shapes the graph holds.  Gradient nodes (attrs
 * forward_node set) are checked against their forward node instead: the
 * gradient of forward input i has input i's shape and dtype. */
#include "graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *fmt_shape(char *buf, size_t cap, const uint64_t *s, size_t rank) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (size_t i = 0; i < rank && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ",%llu" : "%llu", (unsigned long long)s[i]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
}

static bool same_shape(const uint64_t *x, size_t rx, const uint64_t *y, size_t ry) {
    return rx == ry && (!rx || !memcmp(x, y, rx * sizeof *x));
}

static const char *node_label(const mp_graph_node_t *nd) { return nd->name[0] ? nd->name : "(unnamed)"; }

/* Output k of gradient node id must have the shape and dtype of the forward
 * input its grad_mask bit selects. */
static mp_status check_gradient(const mp_graph_t *g, size_t id, const mp_op_attrs_t *a, bool *checked) {
    const mp_graph_node_t *nd = &g->node[id];
    *checked = false;
    if (a->forward_node >= g->n_nodes) return MP_OK;   /* not made by mp_graph_backward */
    const mp_graph_node_t *f = &g->node[a->forward_node];
    size_t k = 0;
    char x[160], y[160];
    for (size_t i = 0; i < f->n_inputs && i < 64; i++) {
        if (!(a->grad_mask >> i & 1)) continue;
        if (k >= nd->n_outputs) break;
        const mp_graph_tensor_t *want = &g->tensor[f->inputs[i]], *got = &g->tensor[nd->outputs[k]];
        if (!same_shape(want->shape, want->rank, got->shape, got->rank) || strcmp(want->dtype, got->dtype))
            return mp__err(MP_EINVAL,
                           "node %zu '%s' (%s): output %zu is %s %s in the graph, but the gradient of input %zu of node %zu '%s' is %s %s",
                           id, node_label(nd), nd->op, k, got->dtype, fmt_shape(x, sizeof x, got->shape, got->rank),
                           i, a->forward_node, node_label(f), want->dtype,
                           fmt_shape(y, sizeof y, want->shape, want->rank));
        k++;
    }
    /* popcount over the forward node's inputs */
    size_t want_n = 0;
    for (size_t i = 0; i < f->n_inputs && i < 64; i++) want_n += a->grad_mask >> i & 1;
    if (want_n != nd->n_outputs)
        return mp__err(MP_EINVAL, "node %zu '%s' (%s): %zu outputs, but grad_mask selects %zu inputs of node %zu '%s'",
                       id, node_label(nd), nd->op, nd->n_outputs, want_n, a->forward_node, node_label(f));
    *checked = true;
    return MP_OK;
}

/* Checks every inferable node of g against its shapes (see memplan.h). */
mp_status mp_graph_check_shapes(const mp_graph_t *g, size_t *n_unchecked) {
    size_t unchecked = 0, max_in = 1;
    if (n_unchecked) *n_unchecked = 0;
    for (size_t i = 0; i < g->n_nodes; i++)
        if (g->node[i].n_inputs > max_in) max_in = g->node[i].n_inputs;
    const uint64_t **shape = malloc(max_in * sizeof *shape);
    size_t *rank = malloc(max_in * sizeof *rank);
    const char **dtype = malloc(max_in * sizeof *dtype);
    mp_status st = MP_OK;
    if (!shape || !rank || !dtype) {
        st = MP__NOMEM();
        goto done;
    }
    for (size_t s = 0; s < g->n_nodes && st == MP_OK; s++) {
        size_t id = g->order[s];
        const mp_graph_node_t *nd = &g->node[id];
        const mp_op_info_t *info = mp_op_info(nd->op);
        mp_op_attrs_t a;
        mp_graph_node_attrs(g, id, &a);
        if (a.forward_node != MP_GRAPH_NONE) {
            bool checked;
            st = check_gradient(g, id, &a, &checked);
            unchecked += !checked;
            continue;
        }
        for (size_t i = 0; i < nd->n_inputs; i++) {
            const mp_graph_tensor_t *t = &g->tensor[nd->inputs[i]];
            shape[i] = t->shape;
            rank[i] = t->rank;
            dtype[i] = t->dtype;
        }
        uint64_t out[1][MP_MAX_RANK];
        size_t out_rank[1], n_out;
        const char *out_dtype[1];
        mp_status r = mp_op_infer(nd->op, &a, shape, rank, dtype, nd->n_inputs, out, out_rank, out_dtype, 1, &n_out);
        if (r == MP_ENOTFOUND) {
            unchecked++;
            continue;
        }
        if (r != MP_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", mp_last_error());
            st = mp__err(r, "node %zu '%s' (%s): %s", id, node_label(nd), nd->op, why);
            break;
        }
        if (nd->n_outputs != n_out) {
            st = mp__err(MP_EINVAL, "node %zu '%s' (%s): has %zu outputs, %s gives %zu", id, node_label(nd),
                         nd->op, nd->n_outputs, info->name, n_out);
            break;
        }
        const mp_graph_tensor_t *t = &g->tensor[nd->outputs[0]];
        if (!same_shape(t->shape, t->rank, out[0], out_rank[0]) || strcmp(t->dtype, out_dtype[0])) {
            char x[160], y[160];
            st = mp__err(MP_EINVAL, "node %zu '%s' (%s): output '%s' is %s %s in the graph, but %s gives %s %s", id,
                         node_label(nd), nd->op, t->name, t->dtype, fmt_shape(x, sizeof x, t->shape, t->rank),
                         info->name, out_dtype[0], fmt_shape(y, sizeof y, out[0], out_rank[0]));
        }
    }
done:
    free(shape);
    free(rank);
    free(dtype);
    if (st == MP_OK && n_unchecked) *n_unchecked = unchecked;
    return st;
}
