/* test_ops.c -- the op registry (src/graph/ops*.c).
 *
 * The registry's declarations against the table of /tmp/brief/ops.md typed
 * in again here (an independent copy: in place, view, gradient needs),
 * every exporter spelling, the conservative entry for unknown ops; shape
 * inference on cases computed by hand with PyTorch's formulas (written out
 * next to each case); mp_graph_check_shapes on every corpus inference
 * graph, and on a corpus graph with one shape corrupted.
 * Runs from tests/ (ctest's working directory). */
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IN MP_GRAD_NEEDS_INPUTS
#define OUT MP_GRAD_NEEDS_OUTPUTS

/* ---- the table -------------------------------------------------------------- */

typedef struct want_op {
    const char *name;
    int inplace, view;
    unsigned needs;
} want_op;

/* ops.md's forward table, plus "mean" (the loss add_loss uses for outputs
 * that are not [N,K] logits). */
static const want_op forward_ops[] = {
    {"relu", 1, 0, OUT},       {"sigmoid", 1, 0, OUT},     {"tanh", 1, 0, OUT},
    {"relu6", 1, 0, IN},       {"silu", 1, 0, IN},         {"hardswish", 1, 0, IN},
    {"hardsigmoid", 1, 0, IN}, {"gelu", 1, 0, IN},         {"dropout", 1, 0, 0},
    {"identity", 0, 0, 0},     {"add", 1, 0, 0},           {"sub", 1, 0, 0},
    {"mul", 1, 0, IN},         {"linear", 0, 0, IN},       {"matmul", 0, 0, IN},
    {"conv2d", 0, 0, IN},      {"batchnorm2d", 0, 0, IN},  {"layernorm", 0, 0, IN},
    {"maxpool2d", 0, 0, IN | OUT}, {"avgpool2d", 0, 0, 0}, {"adaptive_avgpool2d", 0, 0, 0},
    {"flatten", 0, 1, 0},      {"concat", 0, 0, 0},        {"softmax", 0, 0, OUT},
    {"softmax_xent", 0, 0, IN}, {"mean", 0, 0, 0},
    /* the fx exporter's views (outputs are aliases in its graphs; their
     * gradients read no forward value; view 1 only where the layout is
     * kept, so nothing is written in place over a permuted alias),
     * interpolate and the mean over dims */
    {"reshape", 0, 1, 0},      {"permute", 0, 0, 0},       {"transpose", 0, 0, 0},
    {"expand", 0, 0, 0},       {"chunk", 0, 0, 0},         {"getitem", 0, 0, 0},
    {"stochastic_depth", 0, 1, 0}, {"interpolate", 0, 0, 0}, {"reduce_mean", 0, 0, 0},
};
#define N_FORWARD (sizeof forward_ops / sizeof forward_ops[0])

/* Gradient ops that may run in place over dY (ops.md). */
static const char *const inplace_backward[] = {
    "relu_backward", "sigmoid_backward", "tanh_backward", "relu6_backward", "silu_backward",
    "hardswish_backward", "hardsigmoid_backward", "gelu_backward", "dropout_backward"};

static bool in_list(const char *s, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i])) return true;
    return false;
}

static void test_table(void) {
    /* 35 forward ops, 35 gradient ops, sum_n, ones, generic_backward */
    MP_CHECK_EQ_U64(mp_op_count(), 2 * N_FORWARD + 3);
    MP_CHECK(mp_op_at(mp_op_count()) == NULL);
    for (size_t i = 0; i < N_FORWARD; i++) {
        const want_op *w = &forward_ops[i];
        const mp_op_info_t *o = mp_op_info(w->name);
        char bw[64];
        snprintf(bw, sizeof bw, "%s_backward", w->name);
        bool ok = MP_CHECK(!strcmp(o->name, w->name));
        ok &= MP_CHECK(o->known && o->differentiable && o->executable);
        ok &= MP_CHECK(o->inplace == w->inplace && o->view == w->view && o->grad_needs == w->needs);
        ok &= MP_CHECK(o->backward && !strcmp(o->backward, bw));
        const mp_op_info_t *b = mp_op_info(bw);
        ok &= MP_CHECK(!strcmp(b->name, bw) && b->known && !b->differentiable && b->executable);
        ok &= MP_CHECK(b->backward == NULL && b->grad_needs == 0);
        ok &= MP_CHECK(b->inplace == in_list(bw, inplace_backward, 9));
        /* gradients that are dY reshaped: views of dY */
        ok &= MP_CHECK(b->view == (!strcmp(bw, "flatten_backward") || !strcmp(bw, "reshape_backward") ||
                                   !strcmp(bw, "stochastic_depth_backward")));
        if (!ok) fprintf(stderr, "  op %s\n", w->name);
    }
    const mp_op_info_t *o = mp_op_info("sum_n");
    MP_CHECK(o->known && o->inplace && !o->view && !o->differentiable && o->executable);
    o = mp_op_info("ones");
    MP_CHECK(o->known && !o->inplace && !o->differentiable && o->executable);
    o = mp_op_info("generic_backward");
    MP_CHECK(o->known && !o->differentiable && !o->executable);
    /* every entry mp_op_at lists is found under its own name, and executable
     * is 1 for all but generic_backward */
    for (size_t i = 0; i < mp_op_count(); i++) {
        const mp_op_info_t *e = mp_op_at(i);
        MP_CHECK(mp_op_info(e->name) == e);
        MP_CHECK(e->executable == (strcmp(e->name, "generic_backward") != 0));
        MP_CHECK(e->known);
    }
}

/* Every spelling of ops.md and the canonical op it must map to. */
static const char *const spellings[][2] = {
    {"nn.ReLU", "relu"}, {"F.relu", "relu"}, {"torch.relu", "relu"}, {"aten::relu", "relu"},
    {"aten::relu_", "relu"}, {"nn.ReLU6", "relu6"}, {"F.relu6", "relu6"}, {"nn.Sigmoid", "sigmoid"},
    {"torch.sigmoid", "sigmoid"}, {"nn.Tanh", "tanh"}, {"torch.tanh", "tanh"}, {"nn.SiLU", "silu"},
    {"F.silu", "silu"}, {"nn.Hardswish", "hardswish"}, {"nn.Hardsigmoid", "hardsigmoid"},
    {"nn.GELU", "gelu"}, {"F.gelu", "gelu"}, {"nn.Dropout", "dropout"}, {"F.dropout", "dropout"},
    {"nn.Identity", "identity"}, {"Tensor.contiguous", "identity"}, {"operator.add", "add"},
    {"torch.add", "add"}, {"Tensor.add", "add"}, {"aten::add.Tensor", "add"}, {"operator.sub", "sub"},
    {"operator.mul", "mul"}, {"torch.mul", "mul"}, {"aten::mul.Tensor", "mul"}, {"nn.Linear", "linear"},
    {"F.linear", "linear"}, {"torch.matmul", "matmul"}, {"operator.matmul", "matmul"},
    {"torch.bmm", "matmul"}, {"aten::mm", "matmul"}, {"aten::bmm", "matmul"}, {"nn.Conv2d", "conv2d"},
    {"F.conv2d", "conv2d"}, {"nn.BatchNorm2d", "batchnorm2d"}, {"nn.LayerNorm", "layernorm"},
    {"F.layer_norm", "layernorm"}, {"nn.MaxPool2d", "maxpool2d"}, {"F.max_pool2d", "maxpool2d"},
    {"nn.AvgPool2d", "avgpool2d"}, {"torch.avg_pool2d", "avgpool2d"}, {"F.avg_pool2d", "avgpool2d"},
    {"nn.AdaptiveAvgPool2d", "adaptive_avgpool2d"}, {"F.adaptive_avg_pool2d", "adaptive_avgpool2d"},
    {"torch.flatten", "flatten"}, {"nn.Flatten", "flatten"}, {"Tensor.flatten", "flatten"},
    {"torch.cat", "concat"}, {"F.softmax", "softmax"}, {"nn.Softmax", "softmax"},
    /* beyond ops.md's list: functions without attributes, and softmax
     * spellings whose dim mp_graph_node_attrs reads */
    {"Tensor.relu", "relu"}, {"F.sigmoid", "sigmoid"}, {"Tensor.sigmoid", "sigmoid"},
    {"F.tanh", "tanh"}, {"Tensor.tanh", "tanh"}, {"F.hardswish", "hardswish"},
    {"F.hardsigmoid", "hardsigmoid"}, {"Tensor.matmul", "matmul"}, {"torch.softmax", "softmax"},
    {"Tensor.softmax", "softmax"},
    /* the fx exporter's shape ops (the corpus inference graphs) */
    {"Tensor.view", "reshape"}, {"Tensor.reshape", "reshape"}, {"torch.reshape", "reshape"},
    {"Tensor.permute", "permute"}, {"torch.permute", "permute"}, {"torch.transpose", "transpose"},
    {"Tensor.transpose", "transpose"}, {"Tensor.expand", "expand"}, {"Tensor.chunk", "chunk"},
    {"torch.chunk", "chunk"}, {"operator.getitem", "getitem"},
    {"torchvision.ops.stochastic_depth.stochastic_depth", "stochastic_depth"},
    {"F.interpolate", "interpolate"}, {"Tensor.mean", "reduce_mean"}, {"torch.mean", "reduce_mean"},
};

static void test_spellings(void) {
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
        const mp_op_info_t *o = mp_op_info(spellings[i][0]);
        if (!MP_CHECK(o->known && !strcmp(o->name, spellings[i][1])))
            fprintf(stderr, "  %s -> %s, want %s\n", spellings[i][0], o->name, spellings[i][1]);
        /* the alias's entry is the canonical entry itself */
        MP_CHECK(o == mp_op_info(spellings[i][1]));
    }
    /* unknown ops, near misses included: the conservative entry */
    const char *unknown[] = {"nn.MultiheadAttention", "torchvision.models.swin_transformer.shifted_window_attention",
                             "nn.relu", "Relu", "relu ", "", "aten::convolution", "zzz", "AAA",
                             "generic_backward_", "sum_n2"};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        const mp_op_info_t *o = mp_op_info(unknown[i]);
        bool ok = MP_CHECK(o && !o->known && !o->inplace && !o->view && o->differentiable);
        ok &= MP_CHECK(o->grad_needs == (IN | OUT) && o->backward && !strcmp(o->backward, "generic_backward"));
        ok &= MP_CHECK(!o->executable && o->name);
        if (!ok) fprintf(stderr, "  unknown op '%s'\n", unknown[i]);
    }
    MP_CHECK(!mp_op_info(NULL)->known);
}

/* ---- inference -------------------------------------------------------------- */

typedef struct shp {
    size_t rank;
    uint64_t d[MP_MAX_RANK];
    const char *dtype;
} shp;

static shp S0(void) { return (shp){0, {0}, NULL}; }
#define S(...) ((shp){sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t), {__VA_ARGS__}, NULL})

/* Infers op on ins; returns the status, the output in *out. */
static mp_status infer(const char *op, const mp_op_attrs_t *a, const shp *ins, size_t n, shp *out) {
    const uint64_t *p[16];
    size_t r[16];
    const char *dt[16];
    for (size_t i = 0; i < n; i++) {
        p[i] = ins[i].d;
        r[i] = ins[i].rank;
        dt[i] = ins[i].dtype ? ins[i].dtype : "float32";
    }
    uint64_t o[2][MP_MAX_RANK];
    size_t orank[2], nout = 99;
    const char *odt[2] = {NULL, NULL};
    mp_status s = mp_op_infer(op, a, p, r, dt, n, o, orank, odt, 2, &nout);
    if (s == MP_OK) {
        MP_CHECK_EQ_U64(nout, 1);
        out->rank = orank[0];
        memcpy(out->d, o[0], orank[0] * sizeof(uint64_t));
        out->dtype = odt[0];
    } else {
        MP_CHECK_EQ_U64(nout, 0);
    }
    return s;
}

static bool same(const shp *x, const shp *y) {
    if (x->rank != y->rank) return false;
    for (size_t i = 0; i < x->rank; i++)
        if (x->d[i] != y->d[i]) return false;
    return true;
}

/* op on ins must give want (float32 unless want.dtype says otherwise). */
static void expect(int line, const char *op, const mp_op_attrs_t *a, const shp *ins, size_t n, shp want) {
    shp got;
    mp_status s = infer(op, a, ins, n, &got);
    bool ok = s == MP_OK && same(&got, &want) &&
              !strcmp(got.dtype, want.dtype ? want.dtype : "float32");
    mp_test_report(ok, __FILE__, line, op);
    if (!ok) fprintf(stderr, "  %s: %s\n", mp_status_name(s), s ? mp_last_error() : "wrong shape or dtype");
}

/* op on ins must fail with st, the message naming the op and holding sub. */
static void expect_err(int line, const char *op, const mp_op_attrs_t *a, const shp *ins, size_t n,
                       mp_status st, const char *sub) {
    shp got;
    mp_status s = infer(op, a, ins, n, &got);
    bool ok = s == st && strstr(mp_last_error(), mp_op_info(op)->known ? mp_op_info(op)->name : op) &&
              (!sub || strstr(mp_last_error(), sub));
    mp_test_report(ok, __FILE__, line, op);
    if (!ok) fprintf(stderr, "  got %s: %s\n", mp_status_name(s), s ? mp_last_error() : "");
}

#define EXPECT(op, a, want, ...)                                                            \
    do {                                                                                   \
        shp ins_[] = {__VA_ARGS__};                                                         \
        expect(__LINE__, op, a, ins_, sizeof ins_ / sizeof ins_[0], want);                 \
    } while (0)
#define EXPECT_ERR(op, a, st, sub, ...)                                                      \
    do {                                                                                   \
        shp ins_[] = {__VA_ARGS__};                                                         \
        expect_err(__LINE__, op, a, ins_, sizeof ins_ / sizeof ins_[0], st, sub);          \
    } while (0)

static mp_op_attrs_t window(int64_t k, int64_t s, int64_t p, int64_t d, int ceil) {
    mp_op_attrs_t a;
    mp_op_attrs_init(&a);
    a.kernel[0] = a.kernel[1] = k;
    a.stride[0] = a.stride[1] = s;
    a.padding[0] = a.padding[1] = p;
    a.dilation[0] = a.dilation[1] = d;
    a.ceil_mode = ceil;
    return a;
}

static void test_conv(void) {
    mp_op_attrs_t a = window(0, 2, 3, 1, 0);
    /* ResNet's stem: (224 + 6 - 1*(7-1) - 1) / 2 + 1 = 223/2 + 1 = 112 */
    EXPECT("nn.Conv2d", &a, S(2, 64, 112, 112), S(2, 3, 224, 224), S(64, 3, 7, 7), S(64));
    EXPECT("conv2d", &a, S(2, 64, 112, 112), S(2, 3, 224, 224), S(64, 3, 7, 7));
    /* unbatched [C,H,W] */
    EXPECT("conv2d", &a, S(64, 112, 112), S(3, 224, 224), S(64, 3, 7, 7));
    /* dilation 2, no padding: (32 - 2*(3-1) - 1)/1 + 1 = 28 */
    a = window(0, 1, 0, 2, 0);
    EXPECT("conv2d", &a, S(1, 16, 28, 28), S(1, 8, 32, 32), S(16, 8, 3, 3));
    /* AlexNet: (224 + 4 - 10 - 1)/4 + 1 = 217/4 + 1 = 55 */
    a = window(0, 4, 2, 1, 0);
    EXPECT("conv2d", &a, S(1, 64, 55, 55), S(1, 3, 224, 224), S(64, 3, 11, 11), S(64));
    /* depthwise: groups 32, weight [32,1,3,3], padding 1 keeps 10x10 */
    a = window(0, 1, 1, 1, 0);
    a.groups = 32;
    EXPECT("conv2d", &a, S(1, 32, 10, 10), S(1, 32, 10, 10), S(32, 1, 3, 3));
    /* groups 32 needs weight [O, 1, ...]: [32,2,3,3] expects 64 channels */
    EXPECT_ERR("conv2d", &a, MP_EINVAL, "[32,2,3,3]", S(1, 32, 10, 10), S(32, 2, 3, 3));
    /* groups 4 over 8 channels: weight [12,2,1,1]; out channels 10 are not divisible */
    a = window(0, 1, 0, 1, 0);
    a.groups = 4;
    EXPECT("conv2d", &a, S(1, 12, 10, 10), S(1, 8, 10, 10), S(12, 2, 1, 1));
    EXPECT_ERR("conv2d", &a, MP_EINVAL, "groups 4", S(1, 8, 10, 10), S(10, 2, 1, 1));
    /* asymmetric stride (2,1) and padding (0,1): H (9-3)/2+1 = 4, W (9+2-3)/1+1 = 9 */
    a = window(0, 1, 0, 1, 0);
    a.stride[0] = 2;
    a.padding[1] = 1;
    EXPECT("conv2d", &a, S(1, 5, 4, 9), S(1, 2, 9, 9), S(5, 2, 3, 3));
    /* input smaller than the kernel: (2 - 2 - 1)/1 + 1 = 0 */
    a = window(0, 1, 0, 1, 0);
    EXPECT_ERR("conv2d", &a, MP_EINVAL, "too small", S(1, 3, 2, 2), S(4, 3, 3, 3));
    EXPECT_ERR("conv2d", &a, MP_EINVAL, "[1,3,8,8]", S(1, 3, 8, 8), S(4, 2, 3, 3));   /* channels */
    EXPECT_ERR("conv2d", &a, MP_EINVAL, "bias", S(1, 3, 8, 8), S(4, 3, 3, 3), S(5));
    EXPECT_ERR("conv2d", &a, MP_EINVAL, NULL, S(3, 8, 8, 1, 1), S(4, 3, 3, 3));       /* rank 5 */
    EXPECT_ERR("conv2d", &a, MP_EINVAL, NULL, S(1, 3, 8, 8));                          /* no weight */
}

static void test_pool(void) {
    /* AlexNet's pools: k3 s2 on 55: (55-3)/2+1 = 27 */
    mp_op_attrs_t a = window(3, 2, 0, 1, 0);
    EXPECT("nn.MaxPool2d", &a, S(1, 64, 27, 27), S(1, 64, 55, 55));
    /* GoogLeNet's ceil_mode pool on 112: floor (112-3)/2+1 = 55; ceil
     * (112-3+1)/2+1 = 56, and the last window starts at 110 < 112 */
    EXPECT("maxpool2d", &a, S(1, 64, 55, 55), S(1, 64, 112, 112));
    a.ceil_mode = 1;
    EXPECT("maxpool2d", &a, S(1, 64, 56, 56), S(1, 64, 112, 112));
    /* ceil_mode with the last window dropped: H 5, k2 s2 p1: ceil gives
     * (5+2-1-1+1)/2+1 = 4, but window 4 would start at 6 >= 5 + 1: 3 */
    a = window(2, 2, 1, 1, 1);
    EXPECT("maxpool2d", &a, S(1, 1, 3, 3), S(1, 1, 5, 5));
    /* ceil_mode kept: H 6, k3 s2 p1: (6+2-2-1+1)/2+1 = 4, start 6 < 7; floor gives 3 */
    a = window(3, 2, 1, 1, 1);
    EXPECT("maxpool2d", &a, S(1, 1, 4, 4), S(1, 1, 6, 6));
    a.ceil_mode = 0;
    EXPECT("maxpool2d", &a, S(1, 1, 3, 3), S(1, 1, 6, 6));
    /* dilation 2: (10 - 2*2 - 1)/1 + 1 = 6 */
    a = window(3, 1, 0, 2, 0);
    EXPECT("maxpool2d", &a, S(2, 3, 6, 6), S(2, 3, 10, 10));
    /* avg pooling ignores dilation: DenseNet's k2 s2 on 56 -> 28; Inception's k3 s1 p1 keeps 35 */
    a = window(2, 2, 0, 1, 0);
    EXPECT("nn.AvgPool2d", &a, S(1, 128, 28, 28), S(1, 128, 56, 56));
    a = window(3, 1, 1, 1, 0);
    EXPECT("torch.avg_pool2d", &a, S(1, 192, 35, 35), S(1, 192, 35, 35));
    /* stride 0 or less stands for "the kernel" */
    a = window(2, 0, 0, 1, 0);
    EXPECT("avgpool2d", &a, S(1, 1, 4, 3), S(1, 1, 8, 7));
    /* padding above half the kernel; kernel larger than the input */
    a = window(3, 1, 2, 1, 0);
    EXPECT_ERR("maxpool2d", &a, MP_EINVAL, "padding 2", S(1, 1, 8, 8));
    a = window(5, 1, 0, 1, 0);
    EXPECT_ERR("avgpool2d", &a, MP_EINVAL, "too small", S(1, 1, 4, 4));
    EXPECT_ERR("maxpool2d", &a, MP_EINVAL, "[4,4]", S(4, 4));
    /* adaptive: AlexNet's 6x6 on 13x13; 1x1; an output size <= 0 keeps the input's */
    mp_op_attrs_t b;
    mp_op_attrs_init(&b);
    b.output_size[0] = b.output_size[1] = 6;
    EXPECT("nn.AdaptiveAvgPool2d", &b, S(1, 256, 6, 6), S(1, 256, 13, 13));
    EXPECT("adaptive_avgpool2d", NULL, S(1, 1024, 1, 1), S(1, 1024, 7, 7));
    b.output_size[0] = 0;
    b.output_size[1] = 3;
    EXPECT("adaptive_avgpool2d", &b, S(2, 8, 9, 3), S(2, 8, 9, 5));
}

static void test_elementwise(void) {
    EXPECT("nn.ReLU", NULL, S(1, 64, 112, 112), S(1, 64, 112, 112));
    shp h = S(2, 3);
    h.dtype = "float16";
    shp want = S(2, 3);
    want.dtype = "float16";
    EXPECT("gelu", NULL, want, h);
    EXPECT("softmax", NULL, S(4, 10), S(4, 10));
    EXPECT("identity", NULL, S0(), S0());
    EXPECT_ERR("relu", NULL, MP_EINVAL, "1 inputs, got 2", S(2), S(2));
    /* broadcasting: [96,1,1] * [1,96,56,56] (ConvNeXt's layer scale) */
    EXPECT("operator.mul", NULL, S(1, 96, 56, 56), S(96, 1, 1), S(1, 96, 56, 56));
    EXPECT("add", NULL, S(3, 4), S(3, 1), S(1, 4));
    EXPECT("sub", NULL, S(2, 2), S0(), S(2, 2));
    EXPECT("add", NULL, S(5, 2, 3), S(5, 2, 3), S(3));
    EXPECT("add", NULL, S(7, 7), S(7, 7));   /* x + 1: the number is no input */
    EXPECT_ERR("add", NULL, MP_EINVAL, "[2,3] and [4,3]", S(2, 3), S(4, 3));
    /* a float times an integer mask is a float */
    shp m = S(2, 3);
    m.dtype = "bool";
    EXPECT("mul", NULL, S(2, 3), m, S(2, 3));
}

static void test_linear_matmul(void) {
    EXPECT("nn.Linear", NULL, S(8, 197, 3072), S(8, 197, 768), S(3072, 768), S(3072));
    EXPECT("linear", NULL, S(4, 5), S(4, 9216), S(5, 9216));
    EXPECT_ERR("linear", NULL, MP_EINVAL, "[4,100]", S(4, 100), S(5, 99));
    EXPECT_ERR("linear", NULL, MP_EINVAL, "bias", S(4, 99), S(5, 99), S(4));
    /* batch dims broadcast: [2,1] with [3] -> [2,3] */
    EXPECT("torch.matmul", NULL, S(2, 3, 4, 6), S(2, 1, 4, 5), S(3, 5, 6));
    EXPECT("matmul", NULL, S0(), S(5), S(5));          /* dot product */
    EXPECT("matmul", NULL, S(3, 6), S(5), S(3, 5, 6)); /* 1-D times batch */
    EXPECT("matmul", NULL, S(4), S(4, 5), S(5));       /* matrix times vector */
    EXPECT("aten::mm", NULL, S(4, 7), S(4, 5), S(5, 7));
    EXPECT("torch.bmm", NULL, S(8, 4, 7), S(8, 4, 5), S(8, 5, 7));
    EXPECT_ERR("matmul", NULL, MP_EINVAL, "inner", S(4, 5), S(6, 7));
    EXPECT_ERR("matmul", NULL, MP_EINVAL, "batch", S(2, 4, 5), S(3, 5, 6));
}

static void test_shape_ops(void) {
    mp_op_attrs_t a;
    mp_op_attrs_init(&a);   /* dim 1, end_dim -1 */
    EXPECT("torch.flatten", &a, S(1, 9216), S(1, 256, 6, 6));
    a.dim = 0;
    EXPECT("flatten", &a, S(9216), S(1, 256, 6, 6));
    EXPECT("flatten", &a, S(1), S0());   /* a scalar flattens to [1] */
    a.dim = 1;
    a.end_dim = 2;
    EXPECT("flatten", &a, S(2, 12, 5), S(2, 3, 4, 5));
    a.dim = -2;
    a.end_dim = -1;
    EXPECT("flatten", &a, S(2, 3, 20), S(2, 3, 4, 5));
    a.dim = 3;
    a.end_dim = 1;
    EXPECT_ERR("flatten", &a, MP_EINVAL, "[2,3,4,5]", S(2, 3, 4, 5));
    a.dim = 4;
    a.end_dim = -1;
    EXPECT_ERR("flatten", &a, MP_EINVAL, "out of range", S(2, 3, 4, 5));

    mp_op_attrs_init(&a);
    EXPECT("torch.cat", &a, S(1, 96, 56, 56), S(1, 64, 56, 56), S(1, 32, 56, 56));
    EXPECT("concat", &a, S(1, 64, 56, 56), S(1, 64, 56, 56));   /* DenseNet's one-input cat */
    a.dim = -1;
    EXPECT("concat", &a, S(2, 3, 9), S(2, 3, 4), S(2, 3, 5));
    EXPECT_ERR("concat", &a, MP_EINVAL, "input 1 [2,4,5]", S(2, 3, 4), S(2, 4, 5));
    EXPECT_ERR("concat", &a, MP_EINVAL, NULL, S(2, 3, 4), S(2, 3));
    a.dim = 3;
    EXPECT_ERR("concat", &a, MP_EINVAL, "dim 3", S(2, 3, 4));

    /* batch norm: x, weight, bias, running mean and var [C], num_batches_tracked [] */
    EXPECT("nn.BatchNorm2d", NULL, S(2, 16, 8, 8), S(2, 16, 8, 8), S(16), S(16), S(16), S(16), S0());
    EXPECT_ERR("batchnorm2d", NULL, MP_EINVAL, "[8]", S(2, 16, 8, 8), S(8), S(16));
    EXPECT_ERR("batchnorm2d", NULL, MP_EINVAL, NULL, S(2, 16));
    EXPECT("nn.LayerNorm", NULL, S(1, 56, 56, 96), S(1, 56, 56, 96), S(96), S(96));
    EXPECT("layernorm", NULL, S(4, 5, 6), S(4, 5, 6), S(5, 6));
    EXPECT_ERR("layernorm", NULL, MP_EINVAL, "[95]", S(1, 56, 56, 96), S(95), S(95));

    shp t = S(4);
    t.dtype = "int64";
    EXPECT("softmax_xent", NULL, S0(), S(4, 10), t);
    EXPECT_ERR("softmax_xent", NULL, MP_EINVAL, "[4]", S(4, 10), S(4));   /* float target */
    shp t5 = S(5);
    t5.dtype = "int64";
    EXPECT_ERR("softmax_xent", NULL, MP_EINVAL, "[5]", S(4, 10), t5);
    EXPECT("mean", NULL, S0(), S(1, 21, 520, 520));
    EXPECT_ERR("mean", NULL, MP_EINVAL, NULL, t);
    EXPECT("sum_n", NULL, S(2, 3), S(2, 3), S(2, 3), S(2, 3));
    EXPECT("sum_n", NULL, S0(), S0(), S0());
    EXPECT_ERR("sum_n", NULL, MP_EINVAL, "2 inputs", S(2, 3));
    EXPECT_ERR("sum_n", NULL, MP_EINVAL, "[3,2]", S(2, 3), S(3, 2));

    /* nothing to infer from: gradient ops, the seed, unknown ops */
    EXPECT_ERR("relu_backward", NULL, MP_ENOTFOUND, NULL, S(2));
    EXPECT_ERR("ones", NULL, MP_ENOTFOUND, NULL, S(2));
    EXPECT_ERR("nn.MultiheadAttention", NULL, MP_ENOTFOUND, "unknown", S(1, 197, 768));
    /* no room for an output */
    const uint64_t d[1] = {2};
    const uint64_t *p[1] = {d};
    size_t r[1] = {1}, n = 5, orank[1];
    uint64_t o[1][MP_MAX_RANK];
    const char *odt[1];
    MP_CHECK(mp_op_infer("relu", NULL, p, r, NULL, 1, o, orank, odt, 0, &n) == MP_EINVAL && n == 0);
    /* NULL dtypes mean float32 */
    MP_CHECK_OK(mp_op_infer("relu", NULL, p, r, NULL, 1, o, orank, odt, 1, &n));
    MP_CHECK(n == 1 && orank[0] == 1 && o[0][0] == 2 && !strcmp(odt[0], "float32"));
}

/* ---- graphs ----------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The corpus inference graphs, sorted (names malloc'ed). */
static size_t corpus(char ***names) {
    DIR *d = opendir("../bench/corpus/inference");
    size_t n = 0, cap = 64;
    *names = malloc(cap * sizeof **names);
    struct dirent *e;
    while (d && *names && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 14 && !strcmp(e->d_name + len - 14, ".graph.json.gz") && n < cap) {
            char *p = malloc(len + 40);
            snprintf(p, len + 40, "../bench/corpus/inference/%s", e->d_name);
            (*names)[n++] = p;
        }
    }
    if (d) closedir(d);
    qsort(*names, n, sizeof **names, cmp_str);
    return n;
}

static void test_corpus(void) {
    char **names;
    size_t n = corpus(&names), total = 0, unchecked_total = 0;
    MP_CHECK(n >= 24);
    for (size_t i = 0; i < n; i++) {
        mp_graph_t *g;
        if (!MP_CHECK_OK(mp_graph_load(names[i], &g))) continue;
        size_t un = 99999;
        if (!MP_CHECK_OK(mp_graph_check_shapes(g, &un))) fprintf(stderr, "  %s\n", names[i]);
        MP_CHECK(un < mp_graph_node_count(g));
        printf("  %-34s %4zu nodes, %3zu not inferable\n", strrchr(names[i], '/') + 1, mp_graph_node_count(g), un);
        total += mp_graph_node_count(g);
        unchecked_total += un;
        /* NULL count is fine */
        MP_CHECK_OK(mp_graph_check_shapes(g, NULL));
        mp_graph_free(g);
        free(names[i]);
    }
    printf("  corpus: %zu nodes, %zu checked, %zu not inferable\n", total, total - unchecked_total, unchecked_total);
    free(names);
}

/* A corpus file, decompressed into a malloc'ed string. */
static char *gunzip(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap + 1);
    int got;
    while (buf && (got = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)got;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    gzclose(f);
    if (buf) buf[n] = 0;
    *len = n;
    return buf;
}

/* Replaces the first occurrence of from by to (same length or shorter). */
static bool patch(char *text, const char *from, const char *to) {
    char *p = strstr(text, from);
    size_t lf = strlen(from), lt = strlen(to);
    if (!p || lt > lf) return false;
    memcpy(p, to, lt);
    memmove(p + lt, p + lf, strlen(p + lf) + 1);
    return true;
}

static void test_corrupt(void) {
    size_t len;
    char *text = gunzip("../bench/corpus/inference/resnet18.graph.json.gz", &len);
    if (!MP_CHECK(text)) return;
    /* conv1's output claims width 111 (bytes to match, so the file loads):
     * (224 + 6 - 6 - 1)/2 + 1 = 112 */
    MP_CHECK(patch(text, "{\"id\":2,\"name\":\"conv1\",\"shape\":[1,64,112,112],\"dtype\":\"float32\",\"bytes\":3211264",
                   "{\"id\":2,\"name\":\"conv1\",\"shape\":[1,64,112,111],\"dtype\":\"float32\",\"bytes\":3182592"));
    mp_graph_t *g;
    if (MP_CHECK_OK(mp_graph_parse(text, strlen(text), "resnet18-bad", &g))) {
        MP_CHECK(mp_graph_check_shapes(g, NULL) == MP_EINVAL);
        const char *m = mp_last_error();
        MP_CHECK(strstr(m, "node 0 'conv1'") && strstr(m, "nn.Conv2d") && strstr(m, "[1,64,112,111]") &&
                 strstr(m, "[1,64,112,112]"));
        printf("  corrupted: %s\n", m);
        mp_graph_free(g);
    }
    free(text);

    /* A corrupted input shape: the op itself rejects the node. */
    const char *bad =
        "{\"format\":\"memplan-graph/1\",\"tensors\":["
        "{\"id\":0,\"name\":\"x\",\"shape\":[2,8],\"dtype\":\"float32\",\"bytes\":64,\"kind\":\"input\"},"
        "{\"id\":1,\"name\":\"w\",\"shape\":[4,7],\"dtype\":\"float32\",\"bytes\":112,\"kind\":\"parameter\",\"trainable\":true},"
        "{\"id\":2,\"name\":\"y\",\"shape\":[2,4],\"dtype\":\"float32\",\"bytes\":32,\"kind\":\"output\"}],"
        "\"nodes\":[{\"id\":0,\"name\":\"fc\",\"op\":\"nn.Linear\",\"inputs\":[0,1],\"outputs\":[2]}],"
        "\"order\":[0],\"outputs\":[2]}";
    if (MP_CHECK_OK(mp_graph_parse(bad, strlen(bad), "bad", &g))) {
        MP_CHECK(mp_graph_check_shapes(g, NULL) == MP_EINVAL);
        MP_CHECK(strstr(mp_last_error(), "node 0 'fc' (nn.Linear)") && strstr(mp_last_error(), "[4,7]"));
        mp_graph_free(g);
    }
}

int main(void) {
    test_table();
    test_spellings();
    test_conv();
    test_pool();
    test_elementwise();
    test_linear_matmul();
    test_shape_ops();
    test_corpus();
    test_corrupt();
    return mp_test_finish("test_ops");
}
