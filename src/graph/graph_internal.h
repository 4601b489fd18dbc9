/* graph_internal.h -- the layout of a loaded graph, shared by the files of
 * src/graph/.  Nothing here is public.
 *
 * A graph owns a handful of flat arrays: the tensors and nodes the public
 * accessors hand out, and three pools their pointers point into (dimensions,
 * tensor ids of node inputs and outputs, and strings), each allocated once
 * at its exact size. */
#ifndef MEMPLAN_GRAPH_INTERNAL_H
#define MEMPLAN_GRAPH_INTERNAL_H

#include "../core/internal.h"

struct mp_graph_t {
    size_t n_tensors, n_nodes, n_outputs;
    mp_graph_tensor_t *tensor;
    mp_graph_node_t *node;
    size_t *order;          /* n_nodes node ids: step -> node */
    size_t *outputs;        /* n_outputs tensor ids */
    size_t loss;            /* tensor id or MP_GRAPH_NONE */
    const char *model_name; /* into strings */
    uint64_t *dims;         /* pool of every tensor's shape */
    size_t *ids;            /* pool of every node's inputs and outputs */
    char *strings;          /* pool of names and ops, NUL-terminated */
};

/* Is kind persistent (parameters and gradients live over the whole run)? */
static inline bool mp__graph_persistent(mp_tensor_kind k) {
    return k == MP_TENSOR_PARAMETER || k == MP_TENSOR_GRADIENT;
}

#endif /* MEMPLAN_GRAPH_INTERNAL_H */
