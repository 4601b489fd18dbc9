/* builder.c -- making graphs in memory: mp_graph_builder_* and
 * mp_graph_with_order.
 *
 * A builder holds the memplan-graph/1 document it is making (jansson
 * arrays of tensor and node objects, the model object) plus, per tensor,
 * its root and producer, which the calls need to validate their arguments
 * without walking the document (builder_internal.h).  Finishing
 * (builder_finish.c) wraps the arrays into a document and hands it to
 * mp__graph_from_json, the loader's own validation, so a
 * built graph has passed every check a loaded one has, and the attrs the
 * builder writes are read back by mp_graph_node_attrs like a file's.
 * Every call either succeeds or leaves the builder as it was. */
#include "graph_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "graph_json.h"
#include "builder_internal.h"

/* ---- small helpers ------------------------------------------------------------ */


static json_t *tensor_obj(const mp_graph_builder_t *b, size_t t) { return json_array_get(b->tensors, t); }

static mp_tensor_kind kind_of(const mp_graph_builder_t *b, size_t t) {
    const char *k = json_string_value(json_object_get(tensor_obj(b, t), "kind"));
    for (int i = MP_TENSOR_INPUT; i <= MP_TENSOR_OUTPUT; i++)
        if (k && !strcmp(k, mp__tensor_kind_name((mp_tensor_kind)i))) return (mp_tensor_kind)i;
    return MP_TENSOR_ACTIVATION;
}

/* Is s well-formed UTF-8 (no overlong forms, surrogates or code points
 * above U+10FFFF)?  JSON text must be. */
static bool utf8_valid(const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned c = *p++, n, cp;
        if (c < 0x80) continue;
        if (c >= 0xc2 && c <= 0xdf) n = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef) n = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4) n = 3, cp = c & 0x07;
        else return false;
        for (unsigned k = 0; k < n; k++, p++) {
            if ((*p & 0xc0) != 0x80) return false;
            cp = cp << 6 | (*p & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return false;
    }
    return true;
}

/* A JSON string of s (NULL: ""); MP_EINVAL naming call and what when s is
 * not UTF-8. */
static mp_status make_string(const char *s, const char *call, const char *what, json_t **out) {
    *out = NULL;
    if (s && !utf8_valid(s)) return mp__err(MP_EINVAL, "%s: %s is not valid UTF-8", call, what);
    *out = json_string(s ? s : "");
    return *out ? MP_OK : MP__NOMEM();
}

static json_t *pair(const int64_t p[2]) {
    return json_pack("[I,I]", (json_int_t)p[0], (json_int_t)p[1]);
}

/* Makes room for n tensors in the per-tensor arrays. */
static mp_status reserve(mp_graph_builder_t *b, size_t n) {
    if (n <= b->cap) return MP_OK;
    size_t cap = b->cap, cap2 = b->cap;
    mp_status s = mp__grow((void **)&b->root, &cap, n, sizeof *b->root);
    if (!s) s = mp__grow((void **)&b->producer, &cap2, n, sizeof *b->producer);
    if (s) return s;
    b->cap = cap < cap2 ? cap : cap2;
    return MP_OK;
}

/* Drops the tensors from id n on (undoing a failed mp_graph_builder_op). */
static void truncate_tensors(mp_graph_builder_t *b, size_t n) {
    while (n_tensors(b) > n) json_array_remove(b->tensors, n_tensors(b) - 1);
}

/* ---- life cycle ------------------------------------------------------------------ */

static mp_status make(json_t *model, mp_graph_builder_t **out) {
    mp_graph_builder_t *b = calloc(1, sizeof *b);
    if (!b) {
        json_decref(model);
        return MP__NOMEM();
    }
    b->model = model;
    b->tensors = json_array();
    b->nodes = json_array();
    if (!b->tensors || !b->nodes) {
        mp_graph_builder_free(b);
        return MP__NOMEM();
    }
    *out = b;
    return MP_OK;
}

/* A new, empty builder. */
mp_status mp_graph_builder_new(const char *model_name, mp_graph_builder_t **out) {
    if (!out) return mp__err(MP_EINVAL, "mp_graph_builder_new: NULL out");
    *out = NULL;
    json_t *model = NULL, *name = NULL;
    if (model_name) {
        mp_status s = make_string(model_name, "mp_graph_builder_new", "model_name", &name);
        if (s) return s;
        model = json_object();
        if (!model || json_object_set_new(model, "name", name)) {
            if (!model) json_decref(name);
            json_decref(model);
            return MP__NOMEM();
        }
    }
    return make(model, out);
}

/* A builder holding a copy of g (without order, outputs, loss). */
mp_status mp_graph_builder_from(const mp_graph_t *g, mp_graph_builder_t **out) {
    if (!out || !g) return mp__err(MP_EINVAL, "mp_graph_builder_from: NULL argument");
    *out = NULL;
    json_t *model = g->model ? json_deep_copy(g->model) : NULL;
    if (g->model && !model) return MP__NOMEM();
    mp_graph_builder_t *b = NULL;
    mp_status s = make(model, &b);
    if (!s) s = reserve(b, g->n_tensors);
    for (size_t i = 0; !s && i < g->n_tensors; i++) {
        json_t *o;
        if (!(s = mp__graph_tensor_json(g, i, &o)) && json_array_append_new(b->tensors, o))
            s = MP__NOMEM();
        b->root[i] = g->tensor[i].root;
        b->producer[i] = g->tensor[i].producer;
    }
    for (size_t i = 0; !s && i < g->n_nodes; i++) {
        json_t *o;
        if (!(s = mp__graph_node_json(g, i, &o)) && json_array_append_new(b->nodes, o)) s = MP__NOMEM();
    }
    if (s) {
        mp_graph_builder_free(b);
        return s;
    }
    *out = b;
    return MP_OK;
}

/* Releases a builder; NULL is fine. */
void mp_graph_builder_free(mp_graph_builder_t *b) {
    if (!b) return;
    json_decref(b->model);
    json_decref(b->tensors);
    json_decref(b->nodes);
    free(b->root);
    free(b->producer);
    free(b);
}

/* ---- tensors ------------------------------------------------------------------------ */

/* Adds a tensor (arguments checked here); call names the public function. */
static mp_status new_tensor(mp_graph_builder_t *b, const char *call, const char *name,
                            const char *dtype, const uint64_t *shape, size_t rank, mp_tensor_kind kind,
                            size_t alias_of, size_t *id) {
    const char *nm = name ? name : "";   /* for messages */
    size_t n = n_tensors(b);
    const char *dt;
    uint64_t esize = mp__dtype_size(dtype ? dtype : "float32", &dt);
    if (!esize) return mp__err(MP_EINVAL, "%s: tensor '%s': unknown dtype \"%s\"", call, nm, dtype);
    if (rank > MP_MAX_RANK)
        return mp__err(MP_EINVAL, "%s: tensor '%s': rank %zu is above MP_MAX_RANK (%d)", call,
                       nm, rank, MP_MAX_RANK);
    if (rank && !shape) return mp__err(MP_EINVAL, "%s: tensor '%s': NULL shape of rank %zu", call, nm, rank);
    if (!mp__tensor_kind_name(kind))
        return mp__err(MP_EINVAL, "%s: tensor '%s': unknown kind %d", call, nm, (int)kind);
    if (alias_of != MP_GRAPH_NONE && alias_of >= n)
        return mp__err(MP_EINVAL, "%s: tensor '%s': alias_of %zu does not exist (%zu tensors)", call,
                       nm, alias_of, n);
    uint64_t numel = 1;
    for (size_t k = 0; k < rank; k++) {
        if (shape[k] > (uint64_t)INT64_MAX || (shape[k] && numel > (uint64_t)INT64_MAX / shape[k]))
            return mp__err(MP_EINVAL, "%s: tensor '%s': the number of elements overflows", call, nm);
        numel *= shape[k];
    }
    if (numel > (uint64_t)INT64_MAX / esize)
        return mp__err(MP_EINVAL, "%s: tensor '%s': the size in bytes overflows", call, nm);
    size_t root = alias_of == MP_GRAPH_NONE ? n : b->root[alias_of];
    json_t *str = NULL, *o = NULL, *dims = NULL;
    mp_status s = make_string(name, call, "the tensor name", &str);
    if (s) return s;
    if ((s = reserve(b, n + 1))) {
        json_decref(str);
        return s;
    }
    o = json_object();
    dims = json_array();
    int bad = !o || !dims;
    for (size_t k = 0; !bad && k < rank; k++)
        bad = json_array_append_new(dims, json_integer((json_int_t)shape[k]));
    if (bad) {
        json_decref(str);
        json_decref(dims);
        json_decref(o);
        return MP__NOMEM();
    }
    bad |= json_object_set_new(o, "id", json_integer((json_int_t)n));
    bad |= json_object_set_new(o, "name", str);
    bad |= json_object_set_new(o, "shape", dims);
    bad |= json_object_set_new(o, "dtype", json_string(dt));
    json_int_t bytes = alias_of == MP_GRAPH_NONE ? (json_int_t)(numel * esize) : 0;
    bad |= json_object_set_new(o, "bytes", json_integer(bytes));
    bad |= json_object_set_new(o, "kind", json_string(mp__tensor_kind_name(kind)));
    /* The format points aliases at their root (no chains). */
    bad |= json_object_set_new(o, "alias_of",
                               alias_of == MP_GRAPH_NONE ? json_null() : json_integer((json_int_t)root));
    if (kind == MP_TENSOR_PARAMETER) bad |= json_object_set_new(o, "trainable", json_true());
    if (bad || json_array_append_new(b->tensors, o)) {
        if (bad) json_decref(o);
        return MP__NOMEM();
    }
    b->root[n] = root;
    b->producer[n] = MP_GRAPH_NONE;
    *id = n;
    return MP_OK;
}

/* Adds a tensor; MP_EINVAL for a bad dtype, rank, kind or alias. */
mp_status mp_graph_builder_tensor(mp_graph_builder_t *b, const char *name, const char *dtype,
                                  const uint64_t *shape, size_t rank, mp_tensor_kind kind,
                                  size_t alias_of, size_t *id) {
    if (!b || !id) return mp__err(MP_EINVAL, "mp_graph_builder_tensor: NULL builder or id");
    return new_tensor(b, "mp_graph_builder_tensor", name, dtype, shape, rank, kind, alias_of, id);
}

static mp_status check_tensor(const mp_graph_builder_t *b, const char *call, size_t t) {
    if (!b) return mp__err(MP_EINVAL, "%s: NULL builder", call);
    if (t >= n_tensors(b))
        return mp__err(MP_EINVAL, "%s: tensor %zu does not exist (%zu tensors)", call, t, n_tensors(b));
    return MP_OK;
}

/* Marks a parameter trainable or not; MP_EINVAL for any other tensor. */
mp_status mp_graph_builder_set_trainable(mp_graph_builder_t *b, size_t tensor, int trainable) {
    const char *call = "mp_graph_builder_set_trainable";
    mp_status s = check_tensor(b, call, tensor);
    if (s) return s;
    if (kind_of(b, tensor) != MP_TENSOR_PARAMETER)
        return mp__err(MP_EINVAL, "%s: tensor %zu is not a parameter", call, tensor);
    if (json_object_set_new(tensor_obj(b, tensor), "trainable", json_boolean(trainable))) return MP__NOMEM();
    return MP_OK;
}

/* Records which parameter a gradient tensor belongs to (MP_GRAPH_NONE: none). */
mp_status mp_graph_builder_set_grad_of(mp_graph_builder_t *b, size_t tensor, size_t param) {
    const char *call = "mp_graph_builder_set_grad_of";
    mp_status s = check_tensor(b, call, tensor);
    if (s) return s;
    if (kind_of(b, tensor) != MP_TENSOR_GRADIENT)
        return mp__err(MP_EINVAL, "%s: tensor %zu is not a gradient", call, tensor);
    json_t *o = tensor_obj(b, tensor);
    if (param == MP_GRAPH_NONE) {
        json_object_del(o, "grad_of");
        return MP_OK;
    }
    if (param >= n_tensors(b) || kind_of(b, param) != MP_TENSOR_PARAMETER)
        return mp__err(MP_EINVAL, "%s: tensor %zu: grad_of %zu is not a parameter", call, tensor, param);
    if (json_object_set_new(o, "grad_of", json_integer((json_int_t)param))) return MP__NOMEM();
    return MP_OK;
}

/* Changes a tensor's kind; trainable and grad_of go with the kinds they belong to. */
mp_status mp_graph_builder_set_kind(mp_graph_builder_t *b, size_t tensor, mp_tensor_kind kind) {
    const char *call = "mp_graph_builder_set_kind";
    mp_status s = check_tensor(b, call, tensor);
    if (s) return s;
    if (!mp__tensor_kind_name(kind))
        return mp__err(MP_EINVAL, "%s: tensor %zu: unknown kind %d", call, tensor, (int)kind);
    json_t *o = tensor_obj(b, tensor);
    if (kind == MP_TENSOR_PARAMETER && !json_object_get(o, "trainable") &&
        json_object_set_new(o, "trainable", json_true()))
        return MP__NOMEM();
    if (json_object_set_new(o, "kind", json_string(mp__tensor_kind_name(kind)))) return MP__NOMEM();
    if (kind != MP_TENSOR_PARAMETER) json_object_del(o, "trainable");
    if (kind != MP_TENSOR_GRADIENT) json_object_del(o, "grad_of");
    return MP_OK;
}

/* A scratch is an owning activation whose producer is its node; the
 * loader's checks (graph.c) then keep it unread and out of the outputs. */
mp_status mp_graph_builder_set_scratch(mp_graph_builder_t *b, size_t node, size_t tensor) {
    const char *call = "mp_graph_builder_set_scratch";
    mp_status s = check_tensor(b, call, tensor);
    if (s) return s;
    json_t *o = json_array_get(b->nodes, node);
    if (!o) return mp__err(MP_EINVAL, "%s: node %zu does not exist", call, node);
    if (json_object_get(o, "scratch"))
        return mp__err(MP_EINVAL, "%s: node %zu has a scratch tensor already", call, node);
    if (b->producer[tensor] != MP_GRAPH_NONE || b->root[tensor] != tensor ||
        kind_of(b, tensor) != MP_TENSOR_ACTIVATION)
        return mp__err(MP_EINVAL, "%s: tensor %zu is produced, a view or not an activation", call,
                       tensor);
    if (json_object_set_new(o, "scratch", json_integer((json_int_t)tensor))) return MP__NOMEM();
    b->producer[tensor] = node;
    return MP_OK;
}

/* A new tensor `name` of `bytes` bytes (uint8 [bytes]) as node's scratch
 * (mp_graph_backward, the recompute transform); nothing when bytes is 0. */
mp_status mp__builder_scratch(mp_graph_builder_t *b, size_t node, const char *name, uint64_t bytes) {
    if (!bytes) return MP_OK;
    size_t t;
    mp_status s = mp_graph_builder_tensor(b, name, "uint8", &bytes, 1, MP_TENSOR_ACTIVATION, MP_GRAPH_NONE, &t);
    return s ? s : mp_graph_builder_set_scratch(b, node, t);
}

size_t mp_graph_builder_tensor_count(const mp_graph_builder_t *b) { return b ? n_tensors(b) : 0; }
size_t mp_graph_builder_node_count(const mp_graph_builder_t *b) { return b ? n_nodes(b) : 0; }

/* The shape of a tensor into shape[0..*rank) (shape may be NULL; it must
 * hold MP_MAX_RANK dimensions; a longer shape is MP_EINVAL, *rank set). */
mp_status mp_graph_builder_shape(const mp_graph_builder_t *b, size_t tensor, uint64_t *shape,
                                 size_t *rank) {
    const char *call = "mp_graph_builder_shape";
    mp_status s = check_tensor(b, call, tensor);
    if (s) return s;
    if (!rank) return mp__err(MP_EINVAL, "%s: NULL rank", call);
    json_t *dims = json_object_get(tensor_obj(b, tensor), "shape");
    *rank = json_array_size(dims);
    if (*rank > MP_MAX_RANK)
        return mp__err(MP_EINVAL, "%s: tensor %zu has rank %zu, above MP_MAX_RANK", call, tensor, *rank);
    for (size_t k = 0; shape && k < *rank; k++)
        shape[k] = (uint64_t)json_integer_value(json_array_get(dims, k));
    return MP_OK;
}

/* ---- nodes ------------------------------------------------------------------------------ */

/* The attrs object the builder writes: every field of a, so that
 * mp_graph_node_attrs reads back exactly a, plus the two flags every node
 * has.  NULL on failure. */
static json_t *attrs_json(const mp_op_attrs_t *a, int inplace_capable) {
    json_t *o = json_object();
    if (!o) return NULL;
    int bad = 0;
    bad |= json_object_set_new(o, "inplace_capable", json_boolean(inplace_capable));
    bad |= json_object_set_new(o, "inplace", json_false());
    bad |= json_object_set_new(o, "kernel_size", pair(a->kernel));
    bad |= json_object_set_new(o, "stride", pair(a->stride));
    bad |= json_object_set_new(o, "padding", pair(a->padding));
    bad |= json_object_set_new(o, "dilation", pair(a->dilation));
    bad |= json_object_set_new(o, "groups", json_integer((json_int_t)a->groups));
    bad |= json_object_set_new(o, "output_size", pair(a->output_size));
    bad |= json_object_set_new(o, "dim", json_integer((json_int_t)a->dim));
    bad |= json_object_set_new(o, "end_dim", json_integer((json_int_t)a->end_dim));
    bad |= json_object_set_new(o, "ceil_mode", json_boolean(a->ceil_mode));
    bad |= json_object_set_new(o, "count_include_pad", json_boolean(a->count_include_pad));
    bad |= json_object_set_new(o, "eps", json_real(a->eps));
    bad |= json_object_set_new(o, "momentum", json_real(a->momentum));
    bad |= json_object_set_new(o, "alpha", json_real(a->alpha));
    if (a->forward_node != MP_GRAPH_NONE)
        bad |= json_object_set_new(o, "forward_node", json_integer((json_int_t)a->forward_node));
    if (a->grad_mask) bad |= json_object_set_new(o, "grad_mask", json_integer((json_int_t)a->grad_mask));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* The exporter's inplace_capable: the op may write its single output over
 * its first input, which has the output's shape and dtype, owns its memory
 * and is not persistent.  Whether that is safe is the planner's business. */
static int inplace_capable(const mp_graph_builder_t *b, const char *op, const size_t *in, size_t n_in,
                           const size_t *out, size_t n_out) {
    if (!mp_op_info(op)->inplace || n_in < 1 || n_out != 1) return 0;
    json_t *x = tensor_obj(b, in[0]), *y = tensor_obj(b, out[0]);
    mp_tensor_kind k = kind_of(b, b->root[in[0]]);
    return json_equal(json_object_get(x, "shape"), json_object_get(y, "shape")) &&
           json_equal(json_object_get(x, "dtype"), json_object_get(y, "dtype")) &&
           b->root[out[0]] == out[0] && !mp__graph_persistent(k);
}

/* Adds a node (arguments checked here); call names the public function. */
static mp_status new_node(mp_graph_builder_t *b, const char *call, const char *name, const char *op,
                          const size_t *in, size_t n_in, const size_t *out, size_t n_out,
                          const mp_op_attrs_t *attrs, size_t *id) {
    const char *nm = name ? name : "";   /* for messages */
    size_t n = n_tensors(b), v = n_nodes(b);
    if (!op) return mp__err(MP_EINVAL, "%s: node '%s': NULL op", call, nm);
    if ((n_in && !in) || (n_out && !out))
        return mp__err(MP_EINVAL, "%s: node '%s': NULL inputs or outputs", call, nm);
    for (size_t k = 0; k < n_in; k++)
        if (in[k] >= n)
            return mp__err(MP_EINVAL, "%s: node '%s': input %zu is tensor %zu, which does not exist "
                           "(%zu tensors)", call, nm, k, in[k], n);
    mp_op_attrs_t def;
    if (!attrs) mp_op_attrs_init(&def);
    else def = *attrs;
    if (!isfinite(def.eps) || !isfinite(def.momentum) || !isfinite(def.alpha))
        return mp__err(MP_EINVAL, "%s: node '%s': eps, momentum and alpha must be finite", call, nm);
    if (def.forward_node != MP_GRAPH_NONE && def.forward_node >= v)
        return mp__err(MP_EINVAL, "%s: node '%s': forward_node %zu does not exist (%zu nodes)", call,
                       nm, def.forward_node, v);
    /* A convolution's kernel is its weight's, whatever attrs says. */
    if (mp__op_is_conv(op) && n_in >= 2) {
        json_t *w = json_object_get(tensor_obj(b, in[1]), "shape");
        if (json_array_size(w) == 4) {
            def.kernel[0] = (int64_t)json_integer_value(json_array_get(w, 2));
            def.kernel[1] = (int64_t)json_integer_value(json_array_get(w, 3));
        }
    }
    /* Claim the outputs, undoing the claims on failure. */
    mp_status s = MP_OK;
    size_t k = 0;
    for (; k < n_out && !s; k++) {
        size_t t = out[k];
        if (t >= n)
            s = mp__err(MP_EINVAL, "%s: node '%s': output %zu is tensor %zu, which does not exist "
                        "(%zu tensors)", call, nm, k, t, n);
        else if (b->producer[t] == v)
            s = mp__err(MP_EINVAL, "%s: node '%s': tensor %zu is listed twice in the outputs", call,
                        nm, t);
        else if (b->producer[t] != MP_GRAPH_NONE)
            s = mp__err(MP_EINVAL, "%s: node '%s': tensor %zu is already produced by node %zu", call,
                        nm, t, b->producer[t]);
        else b->producer[t] = v;
    }
    json_t *o = NULL, *str = NULL, *opstr = NULL;
    if (!s) s = make_string(name, call, "the node name", &str);
    if (!s) s = make_string(op, call, "the op", &opstr);
    if (!s) {
        o = json_object();
        int bad = !o;
        if (o) {
            bad |= json_object_set_new(o, "id", json_integer((json_int_t)v));
            bad |= json_object_set_new(o, "name", str);
            bad |= json_object_set_new(o, "op", opstr);
            str = opstr = NULL;
            bad |= json_object_set_new(o, "inputs", mp__json_id_array(in, n_in));
            bad |= json_object_set_new(o, "outputs", mp__json_id_array(out, n_out));
            int capable = inplace_capable(b, op, in, n_in, out, n_out);
            bad |= json_object_set_new(o, "attrs", attrs_json(&def, capable));
        }
        if (bad) {
            json_decref(o);
            s = MP__NOMEM();
        } else if (json_array_append_new(b->nodes, o)) {
            s = MP__NOMEM();
        }
    }
    json_decref(opstr);
    json_decref(str);
    if (s) {
        while (k-- > 0)
            if (out[k] < n && b->producer[out[k]] == v) b->producer[out[k]] = MP_GRAPH_NONE;
        return s;
    }
    if (id) *id = v;
    return MP_OK;
}

/* Adds a node over existing tensors. */
mp_status mp_graph_builder_node(mp_graph_builder_t *b, const char *name, const char *op,
                                const size_t *in, size_t n_in, const size_t *out, size_t n_out,
                                const mp_op_attrs_t *attrs, size_t *id) {
    if (!b) return mp__err(MP_EINVAL, "mp_graph_builder_node: NULL builder");
    return new_node(b, "mp_graph_builder_node", name, op, in, n_in, out, n_out, attrs, id);
}

/* Adds a node and its outputs, shaped by mp_op_infer. */
mp_status mp_graph_builder_op(mp_graph_builder_t *b, const char *name, const char *op,
                              const size_t *in, size_t n_in, const mp_op_attrs_t *attrs,
                              size_t n_out, size_t *out, size_t *node) {
    const char *nm = name ? name : "";   /* for messages */
    const char *call = "mp_graph_builder_op";
    if (!b || !op) return mp__err(MP_EINVAL, "%s: NULL builder or op", call);
    if ((n_in && !in) || !out || !n_out)
        return mp__err(MP_EINVAL, "%s: node '%s': NULL inputs, NULL outputs or no outputs", call, nm);
    size_t n = n_tensors(b);
    for (size_t k = 0; k < n_in; k++)
        if (in[k] >= n)
            return mp__err(MP_EINVAL, "%s: node '%s': input %zu is tensor %zu, which does not exist "
                           "(%zu tensors)", call, nm, k, in[k], n);
    uint64_t(*ishape)[MP_MAX_RANK] = malloc((n_in ? n_in : 1) * sizeof *ishape);
    const uint64_t **iptr = malloc((n_in ? n_in : 1) * sizeof *iptr);
    size_t *irank = malloc((n_in ? n_in : 1) * sizeof *irank), *orank = malloc(n_out * sizeof *orank);
    const char **idtype = malloc((n_in ? n_in : 1) * sizeof *idtype);
    const char **odtype = malloc(n_out * sizeof *odtype);
    uint64_t(*oshape)[MP_MAX_RANK] = malloc(n_out * sizeof *oshape);
    mp_status s = MP_OK;
    if (!ishape || !iptr || !irank || !orank || !idtype || !odtype || !oshape) s = MP__NOMEM();
    for (size_t k = 0; !s && k < n_in; k++) {
        s = mp_graph_builder_shape(b, in[k], ishape[k], &irank[k]);
        iptr[k] = ishape[k];
        idtype[k] = json_string_value(json_object_get(tensor_obj(b, in[k]), "dtype"));
    }
    size_t got = 0;
    if (!s) {
        mp_op_attrs_t def;
        if (!attrs) mp_op_attrs_init(&def);
        s = mp_op_infer(op, attrs ? attrs : &def, iptr, irank, idtype, n_in, oshape, orank, odtype, n_out,
                        &got);
        if (s) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", mp_last_error());
            s = mp__err(s, "%s: node '%s' (%s): %s", call, nm, op, msg);
        } else if (got != n_out) {
            s = mp__err(MP_EINVAL, "%s: node '%s' (%s): the op has %zu outputs, %zu asked for", call,
                        nm, op, got, n_out);
        }
    }
    /* The outputs: activations named after the node (name:k past the first);
     * a view's output is an alias of its input's root, with its kind. */
    int view = n_in && mp_op_info(op)->view;
    char *tname = NULL;
    if (!s) {
        size_t len = strlen(nm) + 24;
        if (!(tname = malloc(len))) s = MP__NOMEM();
        for (size_t k = 0; !s && k < n_out; k++) {
            if (k) snprintf(tname, len, "%s:%zu", nm, k);
            else snprintf(tname, len, "%s", nm);
            size_t alias = k == 0 && view ? b->root[in[0]] : MP_GRAPH_NONE;
            mp_tensor_kind kind = alias == MP_GRAPH_NONE ? MP_TENSOR_ACTIVATION : kind_of(b, alias);
            s = new_tensor(b, call, tname, odtype[k], oshape[k], orank[k], kind, alias, &out[k]);
            if (!s && alias != MP_GRAPH_NONE) {
                /* trainable and grad_of follow the kind, as in the file format. */
                json_t *src = tensor_obj(b, alias), *dst = tensor_obj(b, out[k]);
                const char *keys[2] = {"trainable", "grad_of"};
                for (int j = 0; j < 2 && !s; j++) {
                    json_t *v = json_object_get(src, keys[j]);
                    if (v && json_object_set(dst, keys[j], v)) s = MP__NOMEM();
                }
            }
        }
    }
    if (!s) s = new_node(b, call, name, op, in, n_in, out, n_out, attrs, node);
    if (s) truncate_tensors(b, n);
    free(tname);
    free(ishape);
    free(iptr);
    free(irank);
    free(orank);
    free(idtype);
    free(odtype);
    free(oshape);
    return s;
}
