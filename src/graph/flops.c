/* flops.c -- how much compute a node costs, for the planners that trade
 * memory for time (recomputation, swapping).
 *
 * The exporter writes attrs.flops for the ops it knows; for the rest, and
 * for graphs built in C, an estimate from the op and shapes: 2*MACs for
 * conv (from the weight [Cout, Cin/g, kh, kw]), linear (weight [out, in])
 * and matmul (input 0's last dimension), one per output element otherwise,
 * nothing for views.  A gradient node costs twice its forward node (the
 * usual rule: one product for the input gradient, one for the weight's). */
#include "../core/internal.h"
#include "graph_internal.h"

#include <string.h>

static uint64_t reduction_length(const mp_graph_t *g, const mp_graph_node_t *nd,
                                 const mp_op_info_t *info) {
    if (!strcmp(info->name, "conv2d") && nd->n_inputs >= 2) {
        const mp_graph_tensor_t *w = mp_graph_tensor(g, nd->inputs[1]);
        if (w->rank == 4) return w->shape[1] * w->shape[2] * w->shape[3];
    } else if (!strcmp(info->name, "linear") && nd->n_inputs >= 2) {
        const mp_graph_tensor_t *w = mp_graph_tensor(g, nd->inputs[1]);
        if (w->rank == 2) return w->shape[1];
    } else if (!strcmp(info->name, "matmul") && nd->n_inputs >= 1) {
        const mp_graph_tensor_t *a = mp_graph_tensor(g, nd->inputs[0]);
        if (a->rank >= 1) return a->shape[a->rank - 1];
    }
    return 0;
}

uint64_t mp__graph_estimate_flops(const mp_graph_t *g, size_t id) {
    const mp_graph_node_t *nd = mp_graph_node(g, id);
    const mp_op_info_t *info = mp_op_info(nd->op);
    uint64_t out = 0;
    for (size_t k = 0; k < nd->n_outputs; k++) out += mp_graph_tensor(g, nd->outputs[k])->numel;
    if (info->view) return 0;
    uint64_t k = reduction_length(g, nd, info);
    if (k == 0) return out;
    return k > UINT64_MAX / 2 / (out ? out : 1) ? UINT64_MAX / 4 : 2 * k * out;
}

uint64_t mp__graph_node_flops(const mp_graph_t *g, size_t id) {
    const mp_graph_node_t *nd = mp_graph_node(g, id);
    mp_op_attrs_t a;
    mp_graph_node_attrs(g, id, &a);
    if (a.forward_node != MP_GRAPH_NONE && a.forward_node != id) {
        uint64_t f = mp__graph_node_flops(g, a.forward_node);
        return f > UINT64_MAX / 2 ? UINT64_MAX / 2 : 2 * f;
    }
    return nd->flops ? nd->flops : mp__graph_estimate_flops(g, id);
}
