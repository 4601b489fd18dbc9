/* builder_internal.h -- the builder's state, shared by builder.c (tensors,
 * nodes) and builder_finish.c (finishing, and the copies the recompute
 * transform makes).  Private to src/graph/. */
#ifndef MP_GRAPH_BUILDER_INTERNAL_H
#define MP_GRAPH_BUILDER_INTERNAL_H

#include "graph_internal.h"

#include <jansson.h>

struct mp_graph_builder_t {
    json_t *model;      /* the model object, or NULL */
    json_t *tensors;    /* tensor objects, id = index */
    json_t *nodes;      /* node objects, id = index */
    size_t *root;       /* per tensor: the tensor owning its memory */
    size_t *producer;   /* per tensor: the node producing it, or MP_GRAPH_NONE */
    size_t cap;         /* entries allocated in root and producer */
};

static inline size_t n_tensors(const mp_graph_builder_t *b) { return json_array_size(b->tensors); }
static inline size_t n_nodes(const mp_graph_builder_t *b) { return json_array_size(b->nodes); }

#endif
