/* memplan_graph.h -- computation graphs (src/graph/): reading and
 * building memplan-graph/1 graphs, liveness and usage records, the op
 * registry, the backward graph, in-place and sharing, placement and
 * memory-aware orders.  Included by memplan.h; not meant to be included
 * alone.
 *
 *     mp_graph_t *g, *train;
 *     if (mp_graph_load("resnet18.graph.json.gz", &g) != MP_OK) return fail(mp_last_error());
 *     mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
 *     mp_graph_backward(g, &bo, &train, NULL);          // the training step
 *     mp_graph_plan_t p;
 *     mp_graph_share(train, NULL, &p);                  // in-place and sharing
 *     mp_graph_plan_place(train, &p, "auto");           // storages at offsets
 *     ... p.footprint; mp_graph_plan_check(train, &p, MP_PARALLEL_ANY) == MP_OK
 *     mp_graph_plan_free(&p);  mp_graph_free(train);  mp_graph_free(g);
 */
#ifndef MEMPLAN_GRAPH_H
#define MEMPLAN_GRAPH_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_graph.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- graphs (src/graph/) -------------------------------------------------
 * A computation graph with an execution order, read from a memplan-graph/1
 * JSON file (docs/graph-format.md; plain or gzip-compressed), and the usage
 * records its liveness gives (docs/graph.md).  A loaded graph has passed
 * every check of the format, so the accessors need no error handling.
 * Tensor and node ids are their indices, 0..count-1. */

typedef struct mp_graph_t mp_graph_t;   /* opaque */

#define MP_GRAPH_NONE ((size_t)-1)      /* "no tensor / no node" */

typedef enum mp_tensor_kind {
    MP_TENSOR_INPUT = 0,
    MP_TENSOR_ACTIVATION = 1,
    MP_TENSOR_PARAMETER = 2,   /* persistent */
    MP_TENSOR_GRADIENT = 3,    /* persistent */
    MP_TENSOR_OUTPUT = 4
} mp_tensor_kind;

typedef struct mp_graph_tensor_t {
    const char *name;       /* "" when the file has none */
    const char *dtype;      /* e.g. "float32" */
    uint64_t dtype_size;    /* bytes per element */
    const uint64_t *shape;  /* rank dimensions (NULL when rank is 0) */
    size_t rank;
    uint64_t numel;         /* product of the dimensions (1 for a scalar) */
    uint64_t bytes;         /* memory owned: numel x dtype_size, 0 for an alias */
    mp_tensor_kind kind;
    size_t alias_of;        /* the base named in the file, or MP_GRAPH_NONE */
    size_t root;            /* the non-alias tensor owning the memory (itself
                               for an owner; chains are followed to the end) */
    size_t producer;        /* the node producing it, or MP_GRAPH_NONE */
    int trainable;          /* parameters: 1 for weights, 0 for buffers */
    size_t grad_of;         /* gradients: the parameter, else MP_GRAPH_NONE */
} mp_graph_tensor_t;

typedef struct mp_graph_node_t {
    const char *name;       /* "" when the file has none */
    const char *op;         /* e.g. "aten::convolution", "nn.Conv2d" */
    const size_t *inputs;   /* tensor ids read */
    size_t n_inputs;
    const size_t *outputs;  /* tensor ids produced (each by this node only) */
    size_t n_outputs;
    size_t step;            /* its position in the execution order */
    int inplace_capable;    /* attrs.inplace_capable (0 when absent) */
    int inplace;            /* attrs.inplace (0 when absent) */
    uint64_t flops;         /* attrs.flops (0 when absent) */
    uint64_t workspace;     /* attrs.workspace: bytes it needs only while it runs (0 when absent) */
    uint64_t backward_workspace; /* attrs.backward_workspace: the same for its backward node */
    size_t scratch;         /* the tensor standing for its workspace (the file's "scratch"), live
                               at its step only and read by no node; MP_GRAPH_NONE when none.
                               mp_graph_backward and the recompute transform add one per node
                               whose workspace is > 0 */
} mp_graph_node_t;

/* Reads and validates a graph file (gzip or plain JSON).  MP_EIO if it
 * cannot be read; MP_EPARSE for anything malformed, with mp_last_error()
 * naming the file and the JSON path of the bad value ("g.json:
 * tensors[12].bytes: expected an integer").  Free with mp_graph_free. */
mp_status mp_graph_load(const char *path, mp_graph_t **out);

/* The same from JSON text in memory; name stands for the file in errors. */
mp_status mp_graph_parse(const char *text, size_t len, const char *name, mp_graph_t **out);

/* Releases a graph; NULL is fine. */
void mp_graph_free(mp_graph_t *g);

/* Counts, the model's name ("" if none) and the i-th tensor / node (NULL
 * past the end).  Pointers stay valid until mp_graph_free. */
size_t mp_graph_tensor_count(const mp_graph_t *g);
size_t mp_graph_node_count(const mp_graph_t *g);
const char *mp_graph_model_name(const mp_graph_t *g);
const mp_graph_tensor_t *mp_graph_tensor(const mp_graph_t *g, size_t id);
const mp_graph_node_t *mp_graph_node(const mp_graph_t *g, size_t id);

/* The execution order (node ids; step s runs order[s]), the graph's output
 * tensors, and the loss tensor (MP_GRAPH_NONE when there is none). */
const size_t *mp_graph_order(const mp_graph_t *g, size_t *n);
const size_t *mp_graph_outputs(const mp_graph_t *g, size_t *n);
size_t mp_graph_loss(const mp_graph_t *g);

typedef struct mp_graph_stats_t {
    size_t tensors, nodes, steps;
    size_t aliases;             /* tensors that are views of another */
    uint64_t owned_bytes;       /* bytes of every tensor that owns memory */
    uint64_t persistent_bytes;  /* of those, parameters and gradients */
} mp_graph_stats_t;

/* Counts and byte totals of a graph (MP_EOVERFLOW if a total overflows). */
mp_status mp_graph_stats(const mp_graph_t *g, mp_graph_stats_t *out);

/* Lifetimes of every tensor by the rules of docs/graph-format.md: first[i]
 * and last[i] (inclusive steps) for i < mp_graph_tensor_count; an alias
 * gets its root's.  Both arrays are the caller's.  O(tensors + reads). */
void mp_graph_lifetimes(const mp_graph_t *g, uint64_t *first, uint64_t *last);

/* Usage records of the graph: one per tensor that owns bytes > 0, id = the
 * tensor id, sorted by id, align 0; parameters and gradients only when
 * include_persistent (spanning every step).  Empty when there are no
 * steps.  Exactly python/memplan/records.py.  *b is malloc'ed (NULL when
 * *n is 0): release it with free(). */
mp_status mp_graph_records(const mp_graph_t *g, int include_persistent, mp_buffer_t **b,
                           size_t *n);

/* ---- node attributes (src/graph/attrs.c) ---------------------------------
 * The hyper-parameters an op needs, read from a node's "attrs" (the
 * exporter's module "config", an fx function's args/kwargs, or the keys the
 * builder writes) and filled with PyTorch's defaults where absent. */

#define MP_MAX_RANK 8

typedef struct mp_op_attrs_t {
    int64_t kernel[2];      /* pooling kernel (conv: from the weight's shape) */
    int64_t stride[2];      /* default 1 (pooling: the kernel) */
    int64_t padding[2];     /* default 0 */
    int64_t dilation[2];    /* default 1 */
    int64_t groups;         /* default 1 */
    int64_t output_size[2]; /* adaptive pooling, default 1x1 */
    int64_t dim;            /* concat / softmax axis, flatten start_dim; default 1 */
    int64_t end_dim;        /* flatten, default -1 */
    int ceil_mode;          /* pooling, default 0 */
    int count_include_pad;  /* avg pooling, default 1 */
    double eps;             /* normalisation, default 1e-5 */
    double momentum;        /* batch norm, default 0.1 */
    double alpha;           /* add/sub: out = a + alpha * b, default 1 */
    size_t forward_node;    /* backward ops: the forward node they differentiate,
                               else MP_GRAPH_NONE */
    uint64_t grad_mask;     /* backward ops: bit i set when input i of the forward
                               node gets a gradient; outputs follow the bit order */
} mp_op_attrs_t;

/* Fills *a with the defaults above (forward_node MP_GRAPH_NONE, grad_mask 0). */
void mp_op_attrs_init(mp_op_attrs_t *a);

/* The attributes of node id of g: defaults, then the file's values
 * (attrs.config, then attrs keys, then the positional args/kwargs of the fx
 * functions that take them: F.max_pool2d, torch.flatten, torch.cat, ...).
 * Never fails; unknown keys are ignored. */
void mp_graph_node_attrs(const mp_graph_t *g, size_t id, mp_op_attrs_t *a);

/* ---- building and saving graphs (src/graph/builder.c, save.c) ------------
 * A builder collects tensors and nodes and turns them into a graph that has
 * passed every check mp_graph_load makes.  The backward pass, the tests and
 * the CLI build graphs this way.
 *
 *     mp_graph_builder_t *b;  size_t x, w, y, node;  mp_graph_t *g;
 *     uint64_t xs[2] = {4, 8}, ws[2] = {3, 8};
 *     mp_graph_builder_new("tiny", &b);
 *     mp_graph_builder_tensor(b, "x", NULL, xs, 2, MP_TENSOR_INPUT, MP_GRAPH_NONE, &x);
 *     mp_graph_builder_tensor(b, "w", NULL, ws, 2, MP_TENSOR_PARAMETER, MP_GRAPH_NONE, &w);
 *     mp_graph_builder_op(b, "fc", "linear", (size_t[]){x, w}, 2, NULL, 1, &y, &node);
 *     mp_graph_builder_finish(b, NULL, &y, 1, MP_GRAPH_NONE, &g);
 *     mp_graph_builder_free(b);
 */

typedef struct mp_graph_builder_t mp_graph_builder_t;   /* opaque */

/* A new, empty builder; model_name may be NULL. */
mp_status mp_graph_builder_new(const char *model_name, mp_graph_builder_t **out);

/* A builder holding a copy of g's tensors, nodes (with their attrs) and
 * model metadata, to extend it.  The order, outputs and loss are not
 * copied: pass them to finish. */
mp_status mp_graph_builder_from(const mp_graph_t *g, mp_graph_builder_t **out);

/* Releases a builder; NULL is fine. */
void mp_graph_builder_free(mp_graph_builder_t *b);

/* Adds a tensor and returns its id in *id.  dtype NULL means "float32";
 * shape has rank dimensions.  alias_of is MP_GRAPH_NONE or an existing
 * tensor whose memory this one views (it then owns 0 bytes).  Parameters
 * are trainable unless mp_graph_builder_set_trainable says otherwise.
 * MP_EINVAL for an unknown dtype, rank > MP_MAX_RANK or a bad alias. */
mp_status mp_graph_builder_tensor(mp_graph_builder_t *b, const char *name, const char *dtype,
                                  const uint64_t *shape, size_t rank, mp_tensor_kind kind,
                                  size_t alias_of, size_t *id);
mp_status mp_graph_builder_set_trainable(mp_graph_builder_t *b, size_t tensor, int trainable);
mp_status mp_graph_builder_set_grad_of(mp_graph_builder_t *b, size_t tensor, size_t param);
mp_status mp_graph_builder_set_kind(mp_graph_builder_t *b, size_t tensor, mp_tensor_kind kind);
/* Makes tensor (an owning activation nothing produces or reads yet) node's
 * scratch: the memory the node holds only while it runs (its lifetime is
 * the node's step).  MP_EINVAL for a bad id, a node that has one already or
 * a tensor that is produced, a view or not an activation. */
mp_status mp_graph_builder_set_scratch(mp_graph_builder_t *b, size_t node, size_t tensor);

/* Adds a node reading in[0..n_in) and producing out[0..n_out) (existing
 * tensors).  attrs NULL means the defaults; the builder stores every field
 * so that mp_graph_node_attrs gives them back.  *id may be NULL. */
mp_status mp_graph_builder_node(mp_graph_builder_t *b, const char *name, const char *op,
                                const size_t *in, size_t n_in, const size_t *out, size_t n_out,
                                const mp_op_attrs_t *attrs, size_t *id);

/* Adds a node and n_out new activation tensors whose shapes and dtypes the
 * op registry infers from the inputs (mp_op_infer); their ids go to out[],
 * the node's to *node (may be NULL).  A view op's output is an alias of
 * input 0's root.  MP_EINVAL with the op's complaint if the shapes do not fit. */
mp_status mp_graph_builder_op(mp_graph_builder_t *b, const char *name, const char *op,
                              const size_t *in, size_t n_in, const mp_op_attrs_t *attrs,
                              size_t n_out, size_t *out, size_t *node);

/* Number of tensors and nodes so far, and the shape of a tensor. */
size_t mp_graph_builder_tensor_count(const mp_graph_builder_t *b);
size_t mp_graph_builder_node_count(const mp_graph_builder_t *b);
mp_status mp_graph_builder_shape(const mp_graph_builder_t *b, size_t tensor, uint64_t *shape,
                                 size_t *rank);

/* Makes the graph: order (NULL: the nodes in creation order), the output
 * tensors and the loss (MP_GRAPH_NONE for none).  The result passed every
 * check of mp_graph_load (MP_EPARSE otherwise, naming the rule).  The
 * builder stays usable and must still be freed. */
mp_status mp_graph_builder_finish(mp_graph_builder_t *b, const size_t *order,
                                  const size_t *outputs, size_t n_outputs, size_t loss,
                                  mp_graph_t **out);

/* Writes g as memplan-graph/1 (gzip when path ends in ".gz"), through a
 * temporary file renamed at the end: on failure nothing is left behind.
 * mp_graph_load of the file gives back the same graph. */
mp_status mp_graph_save(const mp_graph_t *g, const char *path);

/* A copy of g that runs in another order (a permutation of the node ids
 * that runs every producer before its readers; MP_EINVAL otherwise). */
mp_status mp_graph_with_order(const mp_graph_t *g, const size_t *order, mp_graph_t **out);

/* ---- the op registry (src/graph/ops.c) -----------------------------------
 * What the graph layer knows of each op, declared minimally (the MXNet
 * note): can its output overwrite its input, which forward values does its
 * gradient read, what shapes does it produce.  Canonical names are short
 * ("conv2d", "relu", "add", "linear", ...; docs/graph.md lists them); the
 * exporter's spellings (nn.Conv2d, F.relu, operator.add, aten::relu, ...)
 * map onto them. */

enum { MP_GRAD_NEEDS_INPUTS = 1, MP_GRAD_NEEDS_OUTPUTS = 2 };

typedef struct mp_op_info_t {
    const char *name;       /* canonical name */
    int known;              /* 0: the conservative entry for unknown ops */
    int inplace;            /* output 0 may be written over input 0 */
    int view;               /* output 0 is a view of input 0 (owns no bytes) */
    int differentiable;     /* has a gradient op */
    unsigned grad_needs;    /* forward values the gradient reads (MP_GRAD_NEEDS_*) */
    const char *backward;   /* canonical name of the gradient op, NULL if none */
    int executable;         /* the reference executor has a kernel for it */
} mp_op_info_t;

/* The entry for an op name, canonical or exporter spelling.  Never NULL:
 * an unknown op gets a conservative entry (known 0, not in place, not a
 * view, differentiable, gradient reads inputs and outputs, backward
 * "generic_backward", not executable). */
const mp_op_info_t *mp_op_info(const char *op);

/* Number of canonical ops and the i-th (NULL past the end). */
size_t mp_op_count(void);
const mp_op_info_t *mp_op_at(size_t i);

/* Shapes and dtypes of the outputs of op applied to inputs of the given
 * shapes/dtypes: fills out_shape[k][0..out_rank[k]) and out_dtype[k] for
 * k < *n_out <= max_out.  MP_ENOTFOUND for an op the registry cannot infer,
 * MP_EINVAL (message says why) when the inputs do not fit. */
mp_status mp_op_infer(const char *op, const mp_op_attrs_t *a, const uint64_t *const *in_shape,
                      const size_t *in_rank, const char *const *in_dtype, size_t n_in,
                      uint64_t (*out_shape)[MP_MAX_RANK], size_t *out_rank,
                      const char **out_dtype, size_t max_out, size_t *n_out);

/* Checks every node whose op the registry can infer against the shapes in
 * the graph: MP_EINVAL naming the node, the op and both shapes on the first
 * mismatch.  *n_unchecked (may be NULL) counts nodes it could not infer. */
mp_status mp_graph_check_shapes(const mp_graph_t *g, size_t *n_unchecked);

/* ---- the backward graph (src/graph/backward.c) ---------------------------
 * From a forward graph and a loss, the training graph: the forward nodes,
 * then one gradient node per forward node the loss depends on, in reverse
 * order; gradient aggregation ("sum_n") where a value feeds several ops;
 * no gradient for values nothing trainable flows into (the note's Backward
 * Prune); parameter gradients (kind gradient, grad_of) appended to the
 * outputs.  A gradient node reads the output gradients, then exactly the
 * forward values its op declares (grad_needs), and records forward_node and
 * grad_mask in its attrs. */

typedef struct mp_backward_opts_t {
    int add_loss;           /* when g has no loss: append softmax_xent of the
                               single output (logits [N, K]) against a new
                               int64 input "target" [N] */
    int accumulate;         /* add each gradient contribution as it arrives
                               instead of one sum_n after the last; a
                               parameter's sum lives in its gradient from the
                               first contribution on (an identity copies it
                               there, each later add writes into it through an
                               alias): a weight shared by T steps of an RNN
                               keeps no contribution live (MXNet's in-place
                               accumulation, chen2016 sec. 5.3) */
} mp_backward_opts_t;

typedef struct mp_backward_stats_t {
    size_t forward_nodes, backward_nodes;
    size_t aggregations;    /* sum_n nodes (accumulate: add nodes) */
    size_t pruned;          /* forward nodes given no gradient node */
    size_t param_grads;
} mp_backward_stats_t;

/* Builds the training graph of fwd into *out.  MP_EINVAL when fwd has no
 * loss and opts->add_loss is 0 (or it cannot be added), or when fwd already
 * has gradients.  opts and stats may be NULL. */
mp_status mp_graph_backward(const mp_graph_t *fwd, const mp_backward_opts_t *opts,
                            mp_graph_t **out, mp_backward_stats_t *stats);

/* ---- in-place, sharing and placement (src/graph/share.c, parallel.c) -----
 * The note's counter algorithm (chen2016 Fig. 2): walk the order keeping a
 * counter of pending readers per storage; an op writes its output over its
 * input when the op allows it and the counter is 1; a storage whose counter
 * reaches 0 goes to a free box from which later outputs take the best size
 * match.  Each tensor gets a storage; storages are placed in one arena. */

typedef enum mp_parallel_mode {
    MP_PARALLEL_ANY = 0,      /* sequential execution only */
    MP_PARALLEL_ANCESTOR = 1, /* share only along the ancestor relation (exact) */
    MP_PARALLEL_COLOUR = 2    /* the note's path-colouring heuristic */
} mp_parallel_mode;

typedef struct mp_share_opts_t {
    int inplace;              /* write outputs over inputs when safe */
    int share;                /* reuse freed storages (the free box) */
    mp_parallel_mode parallel;
    int include_persistent;   /* parameters and gradients in the arena too */
} mp_share_opts_t;

typedef struct mp_graph_plan_t {
    size_t n_tensors;
    size_t *storage;          /* per tensor: its storage, or MP_GRAPH_NONE when
                                 not planned (persistent unless included, 0
                                 bytes); an alias has its root's */
    size_t *inplace_of;       /* per tensor: the input it overwrote, or MP_GRAPH_NONE */
    size_t n_storages;
    uint64_t *storage_size;   /* bytes of each storage */
    uint64_t *offset;         /* each storage's offset in the arena */
    uint64_t footprint;       /* arena bytes */
    size_t n_inplace;         /* ops run in place */
    size_t n_reused;          /* tensors placed in a storage another freed */
    const char *placement;    /* "sequential" or the strategy that placed it */
} mp_graph_plan_t;

/* Assigns storages to g's tensors by opts and lays them out end to end
 * (footprint = sum of storage sizes).  With everything off each owning
 * tensor is its own storage.  On failure *out is zeroed. */
mp_status mp_graph_share(const mp_graph_t *g, const mp_share_opts_t *opts, mp_graph_plan_t *out);

/* Re-places p's storages with a core strategy (offsets or objects, or
 * "auto"): each storage becomes one usage record over the half-steps its
 * tensors live (mp_graph_plan_records).  The plan is checked.  A planner
 * knows only lifetimes: the placed plan is safe for sequential execution,
 * not necessarily for parallel execution even if p was (a check in a
 * parallel mode says so). */
mp_status mp_graph_plan_place(const mp_graph_t *g, mp_graph_plan_t *p, const char *strategy);

/* The plan as an ordinary offset problem: one record per planned owning
 * tensor (id = tensor id) over half-steps -- produced at 2*first, or
 * 2*first + 1 when written in place over its input, live to 2*last -- and
 * an offset plan placing it at its storage's offset.  mp_plan_check of the
 * pair proves no two tensors alive together overlap.  Free *b with free()
 * and *plan with mp_plan_free. */
mp_status mp_graph_plan_records(const mp_graph_t *g, const mp_graph_plan_t *p, mp_buffer_t **b,
                                size_t *n, mp_plan_t *plan);

/* Proves p valid for g (records + mp_plan_check, storages large enough,
 * in-place writes only over an input read last by that op) and, when
 * parallel is not MP_PARALLEL_ANY, that no two tensors sharing memory are
 * touched by ops that could run in parallel.  MP_ECONFLICT naming them. */
mp_status mp_graph_plan_check(const mp_graph_t *g, const mp_graph_plan_t *p,
                              mp_parallel_mode parallel);

/* Releases what p owns and zeroes it; NULL and zeroed plans are fine. */
void mp_graph_plan_free(mp_graph_plan_t *p);

/* ---- memory-aware order (src/graph/order.c) ------------------------------ */

typedef struct mp_order_opts_t {
    size_t lookahead;         /* greedy lookahead depth, default (0) 2 */
    size_t max_passes;        /* local-improvement passes, default (0) 4 */
    int include_persistent;   /* count parameters and gradients */
} mp_order_opts_t;

typedef struct mp_order_report_t {
    uint64_t given_peak;      /* peak live bytes of the graph's own order */
    uint64_t searched_peak;   /* of the order returned (never above given) */
    size_t passes;            /* local-improvement passes run */
} mp_order_report_t;

/* Peak live bytes of g run in order (NULL: g's own), by the lifetimes of
 * mp_graph_records: the offsets lower bound of that order. */
mp_status mp_graph_peak(const mp_graph_t *g, const size_t *order, int include_persistent,
                        uint64_t *peak);

/* Searches a topological order of g with a lower peak: greedy by bytes
 * allocated minus bytes freed with lookahead (depth capped at 6), a
 * memory-first DFS, then single-node moves that keep dependencies; returns
 * the best of those and the given order (the given one on ties) in
 * order[0..node_count).  opts and report may be NULL. */
mp_status mp_graph_order_search(const mp_graph_t *g, const mp_order_opts_t *opts, size_t *order,
                                mp_order_report_t *report);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_GRAPH_H */
