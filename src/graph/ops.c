/* ops.c -- the op registry: what the graph layer knows of each op.
 *
 * One table of canonical ops (forward ops, their X_backward gradient ops,
 * sum_n, ones and generic_backward; /tmp/brief/ops.md and docs/graph.md),
 * declared minimally as the MXNet memory note asks: may the output overwrite
 * input 0, is it a view, which forward values does the gradient read.  The
 * exporter's spellings (nn.Conv2d, F.relu, operator.add, aten::relu, ...)
 * map onto the canonical entries through one table sorted by spelling, so a
 * lookup is a binary search.  Shape inference lives in ops_shapes.c. */
#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>

/* Canonical ops, in the order mp_op_at lists them. */
enum {
    OP_RELU, OP_SIGMOID, OP_TANH, OP_RELU6, OP_SILU, OP_HARDSWISH, OP_HARDSIGMOID, OP_GELU,
    OP_DROPOUT, OP_IDENTITY, OP_ADD, OP_SUB, OP_MUL, OP_LINEAR, OP_MATMUL, OP_CONV2D,
    OP_BATCHNORM2D, OP_LAYERNORM, OP_MAXPOOL2D, OP_AVGPOOL2D, OP_ADAPTIVE_AVGPOOL2D,
    OP_FLATTEN, OP_CONCAT, OP_SOFTMAX, OP_SOFTMAX_XENT, OP_MEAN,
    OP_RESHAPE, OP_PERMUTE, OP_TRANSPOSE, OP_EXPAND, OP_CHUNK, OP_GETITEM, OP_STOCHASTIC_DEPTH,
    OP_INTERPOLATE, OP_REDUCE_MEAN,
    OP_RELU_BACKWARD, OP_SIGMOID_BACKWARD, OP_TANH_BACKWARD, OP_RELU6_BACKWARD,
    OP_SILU_BACKWARD, OP_HARDSWISH_BACKWARD, OP_HARDSIGMOID_BACKWARD, OP_GELU_BACKWARD,
    OP_DROPOUT_BACKWARD, OP_IDENTITY_BACKWARD, OP_ADD_BACKWARD, OP_SUB_BACKWARD,
    OP_MUL_BACKWARD, OP_LINEAR_BACKWARD, OP_MATMUL_BACKWARD, OP_CONV2D_BACKWARD,
    OP_BATCHNORM2D_BACKWARD, OP_LAYERNORM_BACKWARD, OP_MAXPOOL2D_BACKWARD,
    OP_AVGPOOL2D_BACKWARD, OP_ADAPTIVE_AVGPOOL2D_BACKWARD, OP_FLATTEN_BACKWARD,
    OP_CONCAT_BACKWARD, OP_SOFTMAX_BACKWARD, OP_SOFTMAX_XENT_BACKWARD, OP_MEAN_BACKWARD,
    OP_RESHAPE_BACKWARD, OP_PERMUTE_BACKWARD, OP_TRANSPOSE_BACKWARD, OP_EXPAND_BACKWARD,
    OP_CHUNK_BACKWARD, OP_GETITEM_BACKWARD, OP_STOCHASTIC_DEPTH_BACKWARD,
    OP_INTERPOLATE_BACKWARD, OP_REDUCE_MEAN_BACKWARD,
    OP_SUM_N, OP_ONES, OP_GENERIC_BACKWARD,
    OP_COUNT
};

#define IN MP_GRAD_NEEDS_INPUTS
#define OUT MP_GRAD_NEEDS_OUTPUTS

/* Forward op: name, in place, view, gradient needs, gradient op. */
#define FWD(name, inplace, view, needs) \
    {name, 1, inplace, view, 1, needs, name "_backward", 1}
/* Gradient op (never differentiated again): name, in place over dY, view. */
#define BWD(name, inplace, view) {name "_backward", 1, inplace, view, 0, 0, NULL, 1}

static const mp_op_info_t OPS[OP_COUNT] = {
    /* Activations whose gradient is a function of y alone read the output;
     * the others read x.  All may overwrite x (the sharing pass decides
     * whether it is safe: the note's in-place trap). */
    [OP_RELU] = FWD("relu", 1, 0, OUT),
    [OP_SIGMOID] = FWD("sigmoid", 1, 0, OUT),
    [OP_TANH] = FWD("tanh", 1, 0, OUT),
    [OP_RELU6] = FWD("relu6", 1, 0, IN),
    [OP_SILU] = FWD("silu", 1, 0, IN),
    [OP_HARDSWISH] = FWD("hardswish", 1, 0, IN),
    [OP_HARDSIGMOID] = FWD("hardsigmoid", 1, 0, IN),
    [OP_GELU] = FWD("gelu", 1, 0, IN),
    [OP_DROPOUT] = FWD("dropout", 1, 0, 0),
    [OP_IDENTITY] = FWD("identity", 0, 0, 0),
    /* add/sub/mul: in place only when the output has input 0's shape (the
     * sharing pass compares shapes); the gradient of add/sub reads no value. */
    [OP_ADD] = FWD("add", 1, 0, 0),
    [OP_SUB] = FWD("sub", 1, 0, 0),
    [OP_MUL] = FWD("mul", 1, 0, IN),
    [OP_LINEAR] = FWD("linear", 0, 0, IN),
    [OP_MATMUL] = FWD("matmul", 0, 0, IN),
    [OP_CONV2D] = FWD("conv2d", 0, 0, IN),
    [OP_BATCHNORM2D] = FWD("batchnorm2d", 0, 0, IN),
    [OP_LAYERNORM] = FWD("layernorm", 0, 0, IN),
    [OP_MAXPOOL2D] = FWD("maxpool2d", 0, 0, IN | OUT),
    [OP_AVGPOOL2D] = FWD("avgpool2d", 0, 0, 0),
    [OP_ADAPTIVE_AVGPOOL2D] = FWD("adaptive_avgpool2d", 0, 0, 0),
    [OP_FLATTEN] = FWD("flatten", 0, 1, 0),
    [OP_CONCAT] = FWD("concat", 0, 0, 0),
    [OP_SOFTMAX] = FWD("softmax", 0, 0, OUT),
    [OP_SOFTMAX_XENT] = FWD("softmax_xent", 0, 0, IN),
    /* The loss add_loss uses for outputs that are not [N, K] logits: the
     * mean of every element; its gradient needs only x's shape. */
    [OP_MEAN] = FWD("mean", 0, 0, 0),
    /* The exporter's views (their outputs are aliases of input 0 in the fx
     * graphs; alias_of says so, whatever the flag): the gradient reads no
     * forward value, only shapes and the call's arguments.  view is 1 only
     * for those that keep the layout (reshape; stochastic_depth, the
     * identity of eval mode like dropout, which the exporter makes an
     * alias): an op may then write its output over the root in place.
     * Over a permuted, expanded, chunked or indexed view it may not: a
     * strided kernel would read elements it has already overwritten.
     * mp_graph_builder_op gives those outputs their own bytes (a copy).
     * chunk has one output per chunk; getitem is tensor indexing. */
    [OP_RESHAPE] = FWD("reshape", 0, 1, 0),
    [OP_PERMUTE] = FWD("permute", 0, 0, 0),
    [OP_TRANSPOSE] = FWD("transpose", 0, 0, 0),
    [OP_EXPAND] = FWD("expand", 0, 0, 0),
    [OP_CHUNK] = FWD("chunk", 0, 0, 0),
    [OP_GETITEM] = FWD("getitem", 0, 0, 0),
    [OP_STOCHASTIC_DEPTH] = FWD("stochastic_depth", 0, 1, 0),
    /* F.interpolate (nearest, bilinear): the gradient needs only shapes. */
    [OP_INTERPOLATE] = FWD("interpolate", 0, 0, 0),
    /* Tensor.mean over given dims (all when none); keepdim. */
    [OP_REDUCE_MEAN] = FWD("reduce_mean", 0, 0, 0),

    /* Elementwise gradients have dY's shape and may overwrite dY. */
    [OP_RELU_BACKWARD] = BWD("relu", 1, 0),
    [OP_SIGMOID_BACKWARD] = BWD("sigmoid", 1, 0),
    [OP_TANH_BACKWARD] = BWD("tanh", 1, 0),
    [OP_RELU6_BACKWARD] = BWD("relu6", 1, 0),
    [OP_SILU_BACKWARD] = BWD("silu", 1, 0),
    [OP_HARDSWISH_BACKWARD] = BWD("hardswish", 1, 0),
    [OP_HARDSIGMOID_BACKWARD] = BWD("hardsigmoid", 1, 0),
    [OP_GELU_BACKWARD] = BWD("gelu", 1, 0),
    [OP_DROPOUT_BACKWARD] = BWD("dropout", 1, 0),
    [OP_IDENTITY_BACKWARD] = BWD("identity", 0, 0),
    [OP_ADD_BACKWARD] = BWD("add", 0, 0),
    [OP_SUB_BACKWARD] = BWD("sub", 0, 0),
    [OP_MUL_BACKWARD] = BWD("mul", 0, 0),
    [OP_LINEAR_BACKWARD] = BWD("linear", 0, 0),
    [OP_MATMUL_BACKWARD] = BWD("matmul", 0, 0),
    [OP_CONV2D_BACKWARD] = BWD("conv2d", 0, 0),
    [OP_BATCHNORM2D_BACKWARD] = BWD("batchnorm2d", 0, 0),
    [OP_LAYERNORM_BACKWARD] = BWD("layernorm", 0, 0),
    [OP_MAXPOOL2D_BACKWARD] = BWD("maxpool2d", 0, 0),
    [OP_AVGPOOL2D_BACKWARD] = BWD("avgpool2d", 0, 0),
    [OP_ADAPTIVE_AVGPOOL2D_BACKWARD] = BWD("adaptive_avgpool2d", 0, 0),
    /* The gradient of a flatten is dY reshaped: a view of dY. */
    [OP_FLATTEN_BACKWARD] = BWD("flatten", 0, 1),
    [OP_CONCAT_BACKWARD] = BWD("concat", 0, 0),
    [OP_SOFTMAX_BACKWARD] = BWD("softmax", 0, 0),
    [OP_SOFTMAX_XENT_BACKWARD] = BWD("softmax_xent", 0, 0),
    [OP_MEAN_BACKWARD] = BWD("mean", 0, 0),
    /* Shape-only views: the gradient is dY reshaped, a view of dY.  The
     * others move or sum elements: a new tensor (permute back, the sum over
     * expanded dims, the chunks joined, zeros with dY scattered in). */
    [OP_RESHAPE_BACKWARD] = BWD("reshape", 0, 1),
    [OP_PERMUTE_BACKWARD] = BWD("permute", 0, 0),
    [OP_TRANSPOSE_BACKWARD] = BWD("transpose", 0, 0),
    [OP_EXPAND_BACKWARD] = BWD("expand", 0, 0),
    [OP_CHUNK_BACKWARD] = BWD("chunk", 0, 0),
    [OP_GETITEM_BACKWARD] = BWD("getitem", 0, 0),
    [OP_STOCHASTIC_DEPTH_BACKWARD] = BWD("stochastic_depth", 0, 1),
    [OP_INTERPOLATE_BACKWARD] = BWD("interpolate", 0, 0),
    [OP_REDUCE_MEAN_BACKWARD] = BWD("reduce_mean", 0, 0),

    /* Gradient aggregation: sums into input 0. */
    [OP_SUM_N] = {"sum_n", 1, 1, 0, 0, 0, NULL, 1},
    /* The loss gradient seed. */
    [OP_ONES] = {"ones", 1, 0, 0, 0, 0, NULL, 1},
    /* Gradient of an op the registry does not know: a placeholder for the
     * memory plan, no kernel. */
    [OP_GENERIC_BACKWARD] = {"generic_backward", 1, 0, 0, 0, 0, NULL, 0},
};

/* Ops the registry does not know: assume the worst for memory (never in
 * place, never a view, the gradient reads everything). */
static const mp_op_info_t UNKNOWN = {"unknown", 0, 0, 0, 1, IN | OUT, "generic_backward", 0};

#undef IN
#undef OUT
#undef FWD
#undef BWD

/* Every spelling, canonical names included, sorted by strcmp (bsearch). */
typedef struct spelling {
    const char *s;
    unsigned short op;
} spelling;

static const spelling SPELLINGS[] = {
    {"F.adaptive_avg_pool2d", OP_ADAPTIVE_AVGPOOL2D},
    {"F.avg_pool2d", OP_AVGPOOL2D},
    {"F.conv2d", OP_CONV2D},
    {"F.dropout", OP_DROPOUT},
    {"F.gelu", OP_GELU},
    {"F.hardsigmoid", OP_HARDSIGMOID},
    {"F.hardswish", OP_HARDSWISH},
    {"F.interpolate", OP_INTERPOLATE},
    {"F.layer_norm", OP_LAYERNORM},
    {"F.linear", OP_LINEAR},
    {"F.max_pool2d", OP_MAXPOOL2D},
    {"F.relu", OP_RELU},
    {"F.relu6", OP_RELU6},
    {"F.sigmoid", OP_SIGMOID},
    {"F.silu", OP_SILU},
    {"F.softmax", OP_SOFTMAX},
    {"F.tanh", OP_TANH},
    {"Tensor.add", OP_ADD},
    {"Tensor.chunk", OP_CHUNK},
    {"Tensor.contiguous", OP_IDENTITY},
    {"Tensor.expand", OP_EXPAND},
    {"Tensor.flatten", OP_FLATTEN},
    {"Tensor.matmul", OP_MATMUL},
    {"Tensor.mean", OP_REDUCE_MEAN},
    {"Tensor.permute", OP_PERMUTE},
    {"Tensor.relu", OP_RELU},
    {"Tensor.reshape", OP_RESHAPE},
    {"Tensor.sigmoid", OP_SIGMOID},
    {"Tensor.softmax", OP_SOFTMAX},
    {"Tensor.tanh", OP_TANH},
    {"Tensor.transpose", OP_TRANSPOSE},
    {"Tensor.view", OP_RESHAPE},
    {"adaptive_avgpool2d", OP_ADAPTIVE_AVGPOOL2D},
    {"adaptive_avgpool2d_backward", OP_ADAPTIVE_AVGPOOL2D_BACKWARD},
    {"add", OP_ADD},
    {"add_backward", OP_ADD_BACKWARD},
    {"aten::add.Tensor", OP_ADD},
    {"aten::bmm", OP_MATMUL},
    {"aten::mm", OP_MATMUL},
    {"aten::mul.Tensor", OP_MUL},
    {"aten::relu", OP_RELU},
    {"aten::relu_", OP_RELU},
    {"avgpool2d", OP_AVGPOOL2D},
    {"avgpool2d_backward", OP_AVGPOOL2D_BACKWARD},
    {"batchnorm2d", OP_BATCHNORM2D},
    {"batchnorm2d_backward", OP_BATCHNORM2D_BACKWARD},
    {"chunk", OP_CHUNK},
    {"chunk_backward", OP_CHUNK_BACKWARD},
    {"concat", OP_CONCAT},
    {"concat_backward", OP_CONCAT_BACKWARD},
    {"conv2d", OP_CONV2D},
    {"conv2d_backward", OP_CONV2D_BACKWARD},
    {"dropout", OP_DROPOUT},
    {"dropout_backward", OP_DROPOUT_BACKWARD},
    {"expand", OP_EXPAND},
    {"expand_backward", OP_EXPAND_BACKWARD},
    {"flatten", OP_FLATTEN},
    {"flatten_backward", OP_FLATTEN_BACKWARD},
    {"gelu", OP_GELU},
    {"gelu_backward", OP_GELU_BACKWARD},
    {"generic_backward", OP_GENERIC_BACKWARD},
    {"getitem", OP_GETITEM},
    {"getitem_backward", OP_GETITEM_BACKWARD},
    {"hardsigmoid", OP_HARDSIGMOID},
    {"hardsigmoid_backward", OP_HARDSIGMOID_BACKWARD},
    {"hardswish", OP_HARDSWISH},
    {"hardswish_backward", OP_HARDSWISH_BACKWARD},
    {"identity", OP_IDENTITY},
    {"identity_backward", OP_IDENTITY_BACKWARD},
    {"interpolate", OP_INTERPOLATE},
    {"interpolate_backward", OP_INTERPOLATE_BACKWARD},
    {"layernorm", OP_LAYERNORM},
    {"layernorm_backward", OP_LAYERNORM_BACKWARD},
    {"linear", OP_LINEAR},
    {"linear_backward", OP_LINEAR_BACKWARD},
    {"matmul", OP_MATMUL},
    {"matmul_backward", OP_MATMUL_BACKWARD},
    {"maxpool2d", OP_MAXPOOL2D},
    {"maxpool2d_backward", OP_MAXPOOL2D_BACKWARD},
    {"mean", OP_MEAN},
    {"mean_backward", OP_MEAN_BACKWARD},
    {"mul", OP_MUL},
    {"mul_backward", OP_MUL_BACKWARD},
    {"nn.AdaptiveAvgPool2d", OP_ADAPTIVE_AVGPOOL2D},
    {"nn.AvgPool2d", OP_AVGPOOL2D},
    {"nn.BatchNorm2d", OP_BATCHNORM2D},
    {"nn.Conv2d", OP_CONV2D},
    {"nn.Dropout", OP_DROPOUT},
    {"nn.Flatten", OP_FLATTEN},
    {"nn.GELU", OP_GELU},
    {"nn.Hardsigmoid", OP_HARDSIGMOID},
    {"nn.Hardswish", OP_HARDSWISH},
    {"nn.Identity", OP_IDENTITY},
    {"nn.LayerNorm", OP_LAYERNORM},
    {"nn.Linear", OP_LINEAR},
    {"nn.MaxPool2d", OP_MAXPOOL2D},
    {"nn.ReLU", OP_RELU},
    {"nn.ReLU6", OP_RELU6},
    {"nn.SiLU", OP_SILU},
    {"nn.Sigmoid", OP_SIGMOID},
    {"nn.Softmax", OP_SOFTMAX},
    {"nn.Tanh", OP_TANH},
    {"ones", OP_ONES},
    {"operator.add", OP_ADD},
    {"operator.getitem", OP_GETITEM},
    {"operator.matmul", OP_MATMUL},
    {"operator.mul", OP_MUL},
    {"operator.sub", OP_SUB},
    {"permute", OP_PERMUTE},
    {"permute_backward", OP_PERMUTE_BACKWARD},
    {"reduce_mean", OP_REDUCE_MEAN},
    {"reduce_mean_backward", OP_REDUCE_MEAN_BACKWARD},
    {"relu", OP_RELU},
    {"relu6", OP_RELU6},
    {"relu6_backward", OP_RELU6_BACKWARD},
    {"relu_backward", OP_RELU_BACKWARD},
    {"reshape", OP_RESHAPE},
    {"reshape_backward", OP_RESHAPE_BACKWARD},
    {"sigmoid", OP_SIGMOID},
    {"sigmoid_backward", OP_SIGMOID_BACKWARD},
    {"silu", OP_SILU},
    {"silu_backward", OP_SILU_BACKWARD},
    {"softmax", OP_SOFTMAX},
    {"softmax_backward", OP_SOFTMAX_BACKWARD},
    {"softmax_xent", OP_SOFTMAX_XENT},
    {"softmax_xent_backward", OP_SOFTMAX_XENT_BACKWARD},
    {"stochastic_depth", OP_STOCHASTIC_DEPTH},
    {"stochastic_depth_backward", OP_STOCHASTIC_DEPTH_BACKWARD},
    {"sub", OP_SUB},
    {"sub_backward", OP_SUB_BACKWARD},
    {"sum_n", OP_SUM_N},
    {"tanh", OP_TANH},
    {"tanh_backward", OP_TANH_BACKWARD},
    {"torch.add", OP_ADD},
    {"torch.avg_pool2d", OP_AVGPOOL2D},
    {"torch.bmm", OP_MATMUL},
    {"torch.cat", OP_CONCAT},
    {"torch.chunk", OP_CHUNK},
    {"torch.flatten", OP_FLATTEN},
    {"torch.matmul", OP_MATMUL},
    {"torch.mean", OP_REDUCE_MEAN},
    {"torch.mul", OP_MUL},
    {"torch.permute", OP_PERMUTE},
    {"torch.relu", OP_RELU},
    {"torch.reshape", OP_RESHAPE},
    {"torch.sigmoid", OP_SIGMOID},
    {"torch.softmax", OP_SOFTMAX},
    {"torch.tanh", OP_TANH},
    {"torch.transpose", OP_TRANSPOSE},
    {"torchvision.ops.stochastic_depth.stochastic_depth", OP_STOCHASTIC_DEPTH},
    {"transpose", OP_TRANSPOSE},
    {"transpose_backward", OP_TRANSPOSE_BACKWARD},
};

static int cmp_spelling(const void *key, const void *elem) {
    return strcmp((const char *)key, ((const spelling *)elem)->s);
}

/* The entry for op (canonical or exporter spelling); never NULL. */
const mp_op_info_t *mp_op_info(const char *op) {
    if (!op) return &UNKNOWN;
    const spelling *s = bsearch(op, SPELLINGS, sizeof SPELLINGS / sizeof SPELLINGS[0],
                                sizeof SPELLINGS[0], cmp_spelling);
    return s ? &OPS[s->op] : &UNKNOWN;
}

/* Number of canonical ops. */
size_t mp_op_count(void) { return OP_COUNT; }

/* The i-th canonical op, NULL past the end. */
const mp_op_info_t *mp_op_at(size_t i) { return i < OP_COUNT ? &OPS[i] : NULL; }
