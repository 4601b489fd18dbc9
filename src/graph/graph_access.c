/* graph_access.c -- what a loaded graph offers its readers: counts, the
 * tensor and node records, the order, the outputs, the raw attrs and model
 * objects, whole-graph statistics, and freeing it.  The graph itself is
 * made by graph.c's loader (or the builder, through the same checks). */
#include "graph_internal.h"

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

void mp_graph_free(mp_graph_t *g) {
    if (!g) return;
    free(g->tensor);
    free(g->node);
    free(g->order);
    free(g->outputs);
    free(g->dims);
    free(g->ids);
    free(g->strings);
    if (g->attrs)
        for (size_t i = 0; i < g->n_nodes; i++) json_decref(g->attrs[i]);
    free(g->attrs);
    json_decref(g->model);
    free(g);
}

size_t mp_graph_tensor_count(const mp_graph_t *g) { return g->n_tensors; }
size_t mp_graph_node_count(const mp_graph_t *g) { return g->n_nodes; }
const char *mp_graph_model_name(const mp_graph_t *g) { return g->model_name; }

const mp_graph_tensor_t *mp_graph_tensor(const mp_graph_t *g, size_t id) {
    return id < g->n_tensors ? &g->tensor[id] : NULL;
}

const mp_graph_node_t *mp_graph_node(const mp_graph_t *g, size_t id) {
    return id < g->n_nodes ? &g->node[id] : NULL;
}

const size_t *mp_graph_order(const mp_graph_t *g, size_t *n) {
    *n = g->n_nodes;
    return g->order;
}

const size_t *mp_graph_outputs(const mp_graph_t *g, size_t *n) {
    *n = g->n_outputs;
    return g->outputs;
}

size_t mp_graph_loss(const mp_graph_t *g) { return g->loss; }

const json_t *mp__graph_node_attrs_json(const mp_graph_t *g, size_t id) {
    return id < g->n_nodes ? g->attrs[id] : NULL;
}

const json_t *mp__graph_model_json(const mp_graph_t *g) { return g->model; }

mp_status mp_graph_stats(const mp_graph_t *g, mp_graph_stats_t *out) {
    memset(out, 0, sizeof *out);
    out->tensors = g->n_tensors;
    out->nodes = out->steps = g->n_nodes;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const mp_graph_tensor_t *t = &g->tensor[i];
        if (t->alias_of != MP_GRAPH_NONE) {
            out->aliases++;
            continue;
        }
        if (out->owned_bytes > UINT64_MAX - t->bytes)
            return mp__err(MP_EOVERFLOW, "graph: the total of tensor bytes overflows 64 bits");
        out->owned_bytes += t->bytes;
        if (mp__graph_persistent(t->kind)) out->persistent_bytes += t->bytes;
    }
    return MP_OK;
}
