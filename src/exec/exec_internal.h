/* exec_internal.h -- what the files of the reference executor share: the
 * run's state, the op table and the helpers the op bindings use.
 *
 * exec.c lays the tensors out (arena or own allocations), initialises and
 * poisons them and runs the nodes; exec_ops.c binds the forward ops and
 * exec_grad.c the gradient ops to the kernels of kernels.h; exec_views.c
 * places aliases in their roots (strided views) and binds the view ops,
 * exec_resize.c interpolate and the mean over dims.  A binding
 * reads a node's tensors and attributes, checks every shape the kernel will
 * index by (a graph may come from a file), and calls the kernel. */
#ifndef MP_EXEC_INTERNAL_H
#define MP_EXEC_INTERNAL_H

#include "kernels.h"

#include "../graph/graph_internal.h"

/* Where a tensor's elements lie in its root's memory: element (i0, i1, ...)
 * is root[offset + i0 st[0] + i1 st[1] + ...] (in elements).  strided is 0
 * when that is the contiguous layout of the tensor's shape (then the
 * tensor is simply at root + offset). */
typedef struct mp__view {
    int64_t offset;
    int64_t st[MP_MAX_RANK];
    int strided;
} mp__view;

/* The state of one run. */
typedef struct mp__exec {
    const mp_graph_t *g;
    char **addr;                /* per tensor: its memory (an alias: within its
                                   root's; a strided alias: its first element,
                                   or a contiguous copy while a node reads it) */
    const mp_op_attrs_t *attrs; /* per node: mp_graph_node_attrs */
    mp__view *view;             /* per tensor (exec_views.c) */
} mp__exec;

/* Runs node id (nd = its node, a = its attributes). */
typedef mp_status (*mp__exec_fn)(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                 const mp_op_attrs_t *a);

typedef struct mp__exec_op {
    const char *name;           /* canonical op name (mp_op_info) */
    mp__exec_fn run;
    int inplace;                /* output 0 may be input 0's memory */
} mp__exec_op;

/* The tables: forward ops of exec_ops.c and exec_ops_shape.c, gradient
 * ops of exec_grad.c. */
const mp__exec_op *mp__exec_ops_main(size_t *n);
const mp__exec_op *mp__exec_ops_shape(size_t *n);
const mp__exec_op *mp__exec_ops_grad(size_t *n);
const mp__exec_op *mp__exec_ops_view(size_t *n);     /* exec_views.c */
const mp__exec_op *mp__exec_ops_resize(size_t *n);   /* exec_resize.c */

/* (exec_views.c) Fills x->view for every tensor, in the graph's order: a
 * root is contiguous at offset 0; an alias made by a view op (reshape,
 * permute, transpose, expand, chunk, getitem, ...) gets its place in the
 * root from the op's arguments; any other alias takes input 0's place.
 * Sets addr[t] and span[t] of aliases to the bytes they cover; MP_EINVAL
 * when a view does not fit its root or its op's arguments. */
mp_status mp__exec_views_layout(mp__exec *x, uint64_t *span);

/* A run with hooks (the executed swap step, exec_swap.c): `place` gives a
 * root tensor's memory (NULL: the executor allocates it, as without a
 * plan), `before`/`after` run around each step and may move root tensors
 * (then call mp__exec_views_layout with `span`), `end` runs after the last
 * step, before the outputs are copied.  Any hook may be NULL; a status
 * other than MP_OK stops the run. */
typedef struct mp__exec_hooks {
    void *ctx;
    mp_status (*place)(void *ctx, size_t t, uint64_t bytes, char **addr);
    mp_status (*before)(void *ctx, mp__exec *x, uint64_t *span, size_t step);
    mp_status (*after)(void *ctx, mp__exec *x, uint64_t *span, size_t step);
    mp_status (*end)(void *ctx, mp__exec *x, uint64_t *span);
} mp__exec_hooks;

mp_status mp__exec_run_hooked(const mp_graph_t *g, const mp_exec_opts_t *opts, const mp__exec_hooks *h,
                              mp_exec_result_t *out);

/* (exec_views.c) A contiguous copy of strided tensor t, read from its
 * root's memory now (free() it); MP_ENOMEM. */
mp_status mp__exec_unview(const mp__exec *x, size_t t, float **out);

/* (exec_views.c) The raw JSON argument of node id: kwargs[kw] when
 * present (kw may be NULL), else args[pos]; NULL when neither. */
const struct json_t *mp__exec_arg(const mp__exec *x, size_t id, size_t pos, const char *kw);

/* The entry for a canonical op name, NULL if there is no kernel. */
const mp__exec_op *mp__exec_find(const char *name);

/* ---- helpers for the bindings (exec.c) ----------------------------------- */

/* MP_EINVAL with "exec: node ID 'NAME' (OP): " and the message. */
mp_status mp__exec_err(const mp__exec *x, size_t id, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline const mp_graph_tensor_t *mp__xt(const mp__exec *x, size_t t) {
    return &x->g->tensor[t];
}
static inline float *mp__xf(const mp__exec *x, size_t t) { return (float *)(void *)x->addr[t]; }

/* The shape of tensor t. */
mp__kshape mp__xshape(const mp__exec *x, size_t t);

/* Do tensors t and u have the same shape? */
int mp__xsame(const mp__exec *x, size_t t, size_t u);

/* MP_OK when tensor t is float32, else MP_EINVAL naming node id. */
mp_status mp__xfloat(const mp__exec *x, size_t id, size_t t);

/* Normalises an axis (negative counts from the end) into [0, rank);
 * MP_EINVAL naming node id when out of range. */
mp_status mp__xaxis(const mp__exec *x, size_t id, int64_t dim, size_t rank, size_t *out);

/* Copies n floats from src to dst unless they are the same memory. */
void mp__xcopy(float *dst, const float *src, uint64_t n);

/* ---- shape checks shared by an op and its gradient (exec_ops.c) -------- */

/* Node id of op add/sub/mul: 2 float32 inputs and 1 output whose shape is
 * their numpy broadcast; fills the three shapes. */
mp_status mp__exec_binary_shapes(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                 mp__kshape *as, mp__kshape *bs, mp__kshape *ys);

/* Forward node fid of op linear: x[..., in] W[out, in] b[out] (optional)
 * -> y[..., out]; m is the product of the batch dims. */
mp_status mp__exec_linear_params(mp__exec *x, size_t fid, uint64_t *m, uint64_t *in,
                                 uint64_t *out);

/* Node id of op matmul: a[..., m, k] b[..., k, n] -> y[..., m, n]. */
mp_status mp__exec_matmul_shapes(mp__exec *x, size_t id, const mp_graph_node_t *nd,
                                 mp__kshape *as, mp__kshape *bs, mp__kshape *ys);

/* Forward node fid of op conv2d: checks its shapes against a and fills p. */
mp_status mp__exec_conv_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a, mp__conv *p);

/* Forward node fid of a pooling op (kind 0 max, 1 avg, 2 adaptive avg):
 * checks the output size against the window and fills p. */
mp_status mp__exec_pool_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a, int kind,
                               mp__pool *p);

/* Forward node fid of op batchnorm2d (layer 0) or layernorm (layer 1): x,
 * then the optional weight and bias of c elements (inputs 1 and 2; batch
 * norm's running statistics, inputs 3 and 4, are not read).  x is viewed
 * as [outer, c, inner]. */
mp_status mp__exec_norm_params(mp__exec *x, size_t fid, int layer, uint64_t *outer, uint64_t *c,
                               uint64_t *inner);

/* (exec_ops_shape.c) Forward node fid of op concat: every input has the
 * output's shape except along the axis, whose lengths add up; fills len[]
 * (one per input, the caller's) and x viewed as [outer, len, inner]. */
mp_status mp__exec_concat_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a, uint64_t *len,
                                 uint64_t *outer, uint64_t *inner);

/* Forward node fid of op softmax: x viewed as [outer, len, inner]. */
mp_status mp__exec_softmax_params(mp__exec *x, size_t fid, const mp_op_attrs_t *a,
                                  uint64_t *outer, uint64_t *len, uint64_t *inner);

/* Forward node fid of op softmax_xent: logits [n, k] float32, target [n]
 * int64, a one-element float32 loss. */
mp_status mp__exec_xent_params(mp__exec *x, size_t fid, uint64_t *n, uint64_t *k);

#endif /* MP_EXEC_INTERNAL_H */
