/* graph_internal.h -- the layout of a loaded graph, shared by the files of
 * src/graph/.  Nothing here is public.
 *
 * A graph owns a handful of flat arrays: the tensors and nodes the public
 * accessors hand out, and three pools their pointers point into (dimensions,
 * tensor ids of node inputs and outputs, and strings), each allocated once
 * at its exact size.  Besides, it keeps a reference to each node's "attrs"
 * object and to the "model" object of the file (jansson values, shared and
 * never modified once loaded), so that attributes can be read
 * (mp_graph_node_attrs) and a saved graph keeps them. */
#ifndef MEMPLAN_GRAPH_INTERNAL_H
#define MEMPLAN_GRAPH_INTERNAL_H

#include "../core/internal.h"

struct json_t;   /* jansson's json_t; only graph.c, attrs.c, builder.c and save.c look inside */

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
    struct json_t **attrs;  /* n_nodes: each node's attrs object (one reference), or NULL */
    struct json_t *model;   /* the model object (one reference), or NULL */
};

/* Is kind persistent (parameters and gradients live over the whole run)? */
static inline bool mp__graph_persistent(mp_tensor_kind k) {
    return k == MP_TENSOR_PARAMETER || k == MP_TENSOR_GRADIENT;
}

/* Builds and validates a graph from a parsed memplan-graph/1 document (the
 * loader's every check; MP_EPARSE naming name and the JSON path).  root is
 * borrowed: the graph takes its own references to what it keeps. */
mp_status mp__graph_from_json(struct json_t *root, const char *name, mp_graph_t **out);

/* The raw attrs object of node id (NULL when the file had none) and the
 * model object (NULL when none).  Read only: they may be shared. */
const struct json_t *mp__graph_node_attrs_json(const mp_graph_t *g, size_t id);
const struct json_t *mp__graph_model_json(const mp_graph_t *g);

/* Tensor / node id of g as its memplan-graph/1 object (a new reference;
 * a node's attrs are shared, not copied).  MP_ENOMEM only.  (save.c) */
mp_status mp__graph_tensor_json(const mp_graph_t *g, size_t id, struct json_t **out);
mp_status mp__graph_node_json(const mp_graph_t *g, size_t id, struct json_t **out);

/* Bytes per element of a dtype name and its canonical static spelling;
 * 0 / NULL for a dtype the format does not know. */
uint64_t mp__dtype_size(const char *dtype, const char **canonical);

/* Is op a 2-D convolution by one of its spellings (its kernel is then the
 * weight's, input 1)?  (attrs.c) */
bool mp__op_is_conv(const char *op);

/* The kind's name in the file ("input", "activation", ...); NULL if out of range. */
const char *mp__tensor_kind_name(mp_tensor_kind k);

/* Recompute transform helpers (builder.c): a copy of node `node` of g (op,
 * attrs) over other tensors, and replacing a node's inputs. */
/* FLOPs of one run of node id: attrs.flops, else an estimate from the op
 * and shapes; a gradient node twice its forward node's (src/graph/flops.c). */
uint64_t mp__graph_node_flops(const mp_graph_t *g, size_t id);
/* The estimate alone (ignores attrs.flops). */
uint64_t mp__graph_estimate_flops(const mp_graph_t *g, size_t id);

mp_status mp__builder_copy_node(mp_graph_builder_t *b, const mp_graph_t *g, size_t node, const char *name,
                                const size_t *in, size_t n_in, const size_t *out, size_t n_out, size_t *id);
mp_status mp__builder_set_inputs(mp_graph_builder_t *b, size_t id, const size_t *in, size_t n_in);
/* A new tensor `name` of `bytes` bytes made node's scratch (its workspace,
 * live at its step only); nothing when bytes is 0.  (builder.c) */
mp_status mp__builder_scratch(mp_graph_builder_t *b, size_t node, const char *name, uint64_t bytes);

#endif /* MEMPLAN_GRAPH_INTERNAL_H */
