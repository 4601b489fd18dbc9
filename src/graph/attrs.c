/* attrs.c -- an op's hyper-parameters (mp_op_attrs_t) read from a node's
 * "attrs" object.
 *
 * Three places can hold them, read in this order, later ones winning:
 * the exporter's module "config" (nn.Conv2d's kernel_size, stride, ...),
 * keys at the top of attrs (what mp_graph_builder_node writes, plus
 * forward_node and grad_mask of gradient nodes), and the arguments of a
 * traced function call: "args" by position through a table of the
 * signatures of the functions that take attributes (F.max_pool2d,
 * torch.flatten, torch.cat, ...; tensors appear there as {"tensor": id})
 * and "kwargs" by name.  A value of the wrong type is ignored (the node
 * keeps the value before it): attributes never make a loaded graph fail.
 * Defaults are PyTorch's. */
#include "graph_internal.h"

#include <math.h>
#include <string.h>

#include <jansson.h>

/* Fills the defaults of memplan.h. */
void mp_op_attrs_init(mp_op_attrs_t *a) {
    memset(a, 0, sizeof *a);
    a->kernel[0] = a->kernel[1] = 1;
    a->stride[0] = a->stride[1] = 1;
    a->dilation[0] = a->dilation[1] = 1;
    a->groups = 1;
    a->output_size[0] = a->output_size[1] = 1;
    a->dim = 1;
    a->end_dim = -1;
    a->count_include_pad = 1;
    a->eps = 1e-5;
    a->momentum = 0.1;
    a->alpha = 1.0;
    a->forward_node = MP_GRAPH_NONE;
    a->grad_mask = 0;
}

/* ---- typed values ----------------------------------------------------------- */

/* An integer (a boolean counts as 0/1, a real only when integral). */
static bool get_int(const json_t *v, int64_t *out) {
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d == floor(d) && fabs(d) < 9.0e18) {
            *out = (int64_t)d;
            return true;
        }
    }
    return false;
}

/* A pair: one integer for both, or a list of one or two integers. */
static bool get_pair(const json_t *v, int64_t out[2]) {
    int64_t x, y;
    if (get_int(v, &x) && !json_is_boolean(v)) {
        out[0] = out[1] = x;
        return true;
    }
    if (!json_is_array(v)) return false;
    size_t n = json_array_size(v);
    if (n == 1 && get_int(json_array_get(v, 0), &x)) {
        out[0] = out[1] = x;
        return true;
    }
    if (n == 2 && get_int(json_array_get(v, 0), &x) && get_int(json_array_get(v, 1), &y)) {
        out[0] = x;
        out[1] = y;
        return true;
    }
    return false;
}

static bool get_real(const json_t *v, double *out) {
    if (!json_is_number(v)) return false;
    *out = json_number_value(v);
    return true;
}

static void set_flag(const json_t *v, int *out) {
    int64_t x;
    if (get_int(v, &x)) *out = x != 0;
}

/* ---- one key ---------------------------------------------------------------- */

typedef struct reading {
    mp_op_attrs_t *a;
    bool stride_given, kernel_given;
} reading;

/* Applies key = v if key names an attribute; anything else is ignored. */
static void apply(reading *r, const char *key, const json_t *v) {
    mp_op_attrs_t *a = r->a;
    int64_t x;
    if (!v || json_is_null(v)) return;
    if (!strcmp(key, "kernel_size")) {
        if (get_pair(v, a->kernel)) r->kernel_given = true;
    } else if (!strcmp(key, "stride")) {
        /* An empty list (aten's max_pool2d default) means "the kernel". */
        if (get_pair(v, a->stride)) r->stride_given = true;
        else if (json_is_array(v) && !json_array_size(v)) r->stride_given = false;
    } else if (!strcmp(key, "padding")) {
        get_pair(v, a->padding);   /* "same"/"valid" strings are not read */
    } else if (!strcmp(key, "dilation")) {
        get_pair(v, a->dilation);
    } else if (!strcmp(key, "output_size")) {
        get_pair(v, a->output_size);
    } else if (!strcmp(key, "groups")) {
        if (get_int(v, &x)) a->groups = x;
    } else if (!strcmp(key, "dim") || !strcmp(key, "start_dim")) {
        if (get_int(v, &x) && !json_is_boolean(v)) a->dim = x;
    } else if (!strcmp(key, "end_dim")) {
        if (get_int(v, &x) && !json_is_boolean(v)) a->end_dim = x;
    } else if (!strcmp(key, "eps")) {
        get_real(v, &a->eps);
    } else if (!strcmp(key, "momentum")) {
        get_real(v, &a->momentum);
    } else if (!strcmp(key, "alpha")) {
        get_real(v, &a->alpha);
    } else if (!strcmp(key, "ceil_mode")) {
        set_flag(v, &a->ceil_mode);
    } else if (!strcmp(key, "count_include_pad")) {
        set_flag(v, &a->count_include_pad);
    }
}

/* Reads every attribute key of an object (config, attrs, kwargs). */
static void apply_object(reading *r, const json_t *o) {
    const char *key;
    json_t *v;
    if (!json_is_object(o)) return;
    json_object_foreach((json_t *)o, key, v) apply(r, key, v);
}

/* ---- positional arguments ------------------------------------------------------
 * The signatures of the calls whose positional arguments carry attributes;
 * NULL marks a tensor or an argument that is not one.  dim0: PyTorch's
 * default dim / start_dim is 0 for these (ours is 1, as for nn.Flatten). */

typedef struct signature {
    const char *op;
    bool dim0;
    const char *arg[9];
} signature;

static const signature signatures[] = {
    {"F.max_pool2d", false, {NULL, "kernel_size", "stride", "padding", "dilation", "ceil_mode"}},
    {"F.avg_pool2d", false, {NULL, "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"}},
    {"torch.avg_pool2d", false, {NULL, "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"}},
    {"F.adaptive_avg_pool2d", false, {NULL, "output_size"}},
    {"torch.flatten", true, {NULL, "start_dim", "end_dim"}},
    {"Tensor.flatten", true, {NULL, "start_dim", "end_dim"}},
    {"torch.cat", true, {NULL, "dim"}},
    {"F.softmax", false, {NULL, "dim"}},
    {"torch.softmax", false, {NULL, "dim"}},
    {"Tensor.softmax", false, {NULL, "dim"}},
    {"F.conv2d", false, {NULL, NULL, NULL, "stride", "padding", "dilation", "groups"}},
    {"F.layer_norm", false, {NULL, NULL, NULL, NULL, "eps"}},
    {"F.batch_norm", false, {NULL, NULL, NULL, NULL, NULL, NULL, "momentum", "eps"}},
    /* aten (training graphs): the schema's order. */
    {"aten::convolution", false, {NULL, NULL, NULL, "stride", "padding", "dilation", NULL, NULL, "groups"}},
    {"aten::max_pool2d_with_indices", false, {NULL, "kernel_size", "stride", "padding", "dilation", "ceil_mode"}},
    {"aten::avg_pool2d", false, {NULL, "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"}},
    {"aten::native_batch_norm", false, {NULL, NULL, NULL, NULL, NULL, NULL, "momentum", "eps"}},
    {"aten::cat", true, {NULL, "dim"}},
    {"aten::_softmax", false, {NULL, "dim"}},
    {"aten::_log_softmax", false, {NULL, "dim"}},
};

static const signature *find_signature(const char *op) {
    for (size_t k = 0; k < sizeof signatures / sizeof signatures[0]; k++)
        if (!strcmp(signatures[k].op, op)) return &signatures[k];
    return NULL;
}

static bool is_pooling(const char *op) {
    static const char *const pools[] = {"nn.MaxPool2d", "F.max_pool2d", "nn.AvgPool2d", "F.avg_pool2d",
                                        "torch.avg_pool2d", "aten::max_pool2d_with_indices",
                                        "aten::avg_pool2d", "maxpool2d", "avgpool2d"};
    for (size_t k = 0; k < sizeof pools / sizeof pools[0]; k++)
        if (!strcmp(pools[k], op)) return true;
    return false;
}

bool mp__op_is_conv(const char *op) {
    return !strcmp(op, "nn.Conv2d") || !strcmp(op, "F.conv2d") || !strcmp(op, "aten::convolution") ||
           !strcmp(op, "conv2d");
}

/* The attributes of node id: defaults, config, attrs keys, args, kwargs. */
void mp_graph_node_attrs(const mp_graph_t *g, size_t id, mp_op_attrs_t *a) {
    mp_op_attrs_init(a);
    if (!g || id >= g->n_nodes) return;
    const mp_graph_node_t *nd = &g->node[id];
    const json_t *attrs = g->attrs[id];
    const signature *sig = find_signature(nd->op);
    reading r = {.a = a};
    if (sig && sig->dim0) a->dim = 0;
    if (json_is_object(attrs)) {
        apply_object(&r, json_object_get(attrs, "config"));
        apply_object(&r, attrs);
        int64_t x;
        if (get_int(json_object_get(attrs, "forward_node"), &x) && x >= 0 && (uint64_t)x < g->n_nodes)
            a->forward_node = (size_t)x;
        if (get_int(json_object_get(attrs, "grad_mask"), &x) && x >= 0) a->grad_mask = (uint64_t)x;
        const json_t *args = json_object_get(attrs, "args");
        if (sig && json_is_array(args))
            for (size_t k = 0; k < json_array_size(args) && k < sizeof sig->arg / sizeof sig->arg[0]; k++)
                if (sig->arg[k]) apply(&r, sig->arg[k], json_array_get(args, k));
        apply_object(&r, json_object_get(attrs, "kwargs"));
    }
    if (mp__op_is_conv(nd->op) && !r.kernel_given && nd->n_inputs >= 2) {
        const mp_graph_tensor_t *w = &g->tensor[nd->inputs[1]];
        if (w->rank == 4) {
            a->kernel[0] = (int64_t)w->shape[2];
            a->kernel[1] = (int64_t)w->shape[3];
        }
    }
    if (is_pooling(nd->op) && !r.stride_given) {
        a->stride[0] = a->kernel[0];
        a->stride[1] = a->kernel[1];
    }
}
