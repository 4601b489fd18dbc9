/* graph.c -- validating memplan-graph/1 documents into graphs (the
 * accessors of a loaded graph are in graph_access.c).
 *
 * The text (read from a file by save.c's mp_graph_load, or given to
 * mp_graph_parse) is parsed with jansson; the tree is then copied into the flat layout of
 * graph_internal.h in two passes (one to size the pools, one to fill them)
 * and checked against every rule of docs/graph-format.md: the format
 * string, ids equal to indices, ids that exist, alias chains that end at a
 * tensor owning memory, bytes = elements x dtype size, every tensor
 * produced by at most one node, an acyclic graph, and an order that is a
 * permutation of the nodes running every producer before its readers.
 * Every error names the file and the JSON path of the offending value,
 * written out only when there is an error (jpath): the recompute transform
 * reads a whole graph back through these checks for every plan it
 * evaluates, and formatting each field's path beforehand took a third of
 * that time.
 * Each node's attrs object and the model object are kept by reference.
 * The builder (builder.c) goes through the same checks, via
 * mp__graph_from_json.  Time and memory O(size of the file). */
#include "graph_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define FORMAT "memplan-graph/1"

static const struct {
    const char *name;
    uint64_t size;
} dtypes[] = {
    {"float32", 4}, {"float16", 2}, {"bfloat16", 2}, {"float64", 8}, {"int64", 8},
    {"int32", 4},   {"int16", 2},   {"int8", 1},     {"uint8", 1},   {"bool", 1},
};

static const char *const kinds[] = {"input", "activation", "parameter", "gradient", "output"};

uint64_t mp__dtype_size(const char *dtype, const char **canonical) {
    for (size_t k = 0; dtype && k < sizeof dtypes / sizeof dtypes[0]; k++)
        if (!strcmp(dtypes[k].name, dtype)) {
            if (canonical) *canonical = dtypes[k].name;
            return dtypes[k].size;
        }
    if (canonical) *canonical = NULL;
    return 0;
}

const char *mp__tensor_kind_name(mp_tensor_kind k) {
    return (unsigned)k < sizeof kinds / sizeof kinds[0] ? kinds[k] : NULL;
}

/* ---- errors ----------------------------------------------------------- */

/* MP_EPARSE with "FILE: message". */
static mp_status bad(const char *file, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static mp_status bad(const char *file, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mp__err(MP_EPARSE, "%s: %s", file, msg);
}

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "something else";
}

/* ---- JSON paths ----------------------------------------------------------
 * arr[i].key[k], each part optional from the right ("format", "order[3]",
 * "tensors[2].name", "nodes[5].inputs[1]"); a key may hold a dot
 * ("attrs.flops").  Formatted by path_str when an error names it. */

#define NO_INDEX ((size_t)-1)

typedef struct jpath {
    const char *arr;
    size_t i;
    const char *key;
    size_t k;
} jpath;

#define AT(a) (&(jpath){(a), NO_INDEX, NULL, NO_INDEX})
#define AT_I(a, i) (&(jpath){(a), (i), NULL, NO_INDEX})
#define AT_F(a, i, key) (&(jpath){(a), (i), (key), NO_INDEX})
#define AT_FK(a, i, key, k) (&(jpath){(a), (i), (key), (k)})

typedef struct { char s[160]; } path_buf;

static const char *path_str(const jpath *p, path_buf *b) {
    char idx[24] = "", sub[24] = "";
    if (p->i != NO_INDEX) snprintf(idx, sizeof idx, "[%zu]", p->i);
    if (p->k != NO_INDEX) snprintf(sub, sizeof sub, "[%zu]", p->k);
    snprintf(b->s, sizeof b->s, "%s%s%s%s%s", p->arr, idx, p->key ? "." : "", p->key ? p->key : "",
             sub);
    return b->s;
}

/* ---- typed fields ------------------------------------------------------
 * v is the value (NULL when the key is absent); at its JSON path. */

static mp_status get_u64(const char *file, const json_t *v, const jpath *at, uint64_t *out) {
    path_buf w;
    if (!v) return bad(file, "%s: missing", path_str(at, &w));
    if (!json_is_integer(v))
        return bad(file, "%s: expected an integer, got %s", path_str(at, &w), type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < 0)
        return bad(file, "%s: expected a non-negative integer, got %lld", path_str(at, &w), (long long)x);
    *out = (uint64_t)x;
    return MP_OK;
}

/* An id below limit; what is "tensor" or "node". */
static mp_status get_id(const char *file, const json_t *v, const jpath *at, size_t limit,
                        const char *what, size_t *out) {
    uint64_t x = 0;
    mp_status s = get_u64(file, v, at, &x);
    if (s) return s;
    path_buf w;
    if (x >= limit)
        return bad(file, "%s: %s %llu does not exist (the graph has %zu %ss)", path_str(at, &w), what,
                   (unsigned long long)x, limit, what);
    *out = (size_t)x;
    return MP_OK;
}

/* An id or null; absent is null. */
static mp_status get_opt_id(const char *file, const json_t *v, const jpath *at, size_t limit,
                            const char *what, size_t *out) {
    *out = MP_GRAPH_NONE;
    if (!v || json_is_null(v)) return MP_OK;
    path_buf w;
    if (!json_is_integer(v))
        return bad(file, "%s: expected a %s id or null, got %s", path_str(at, &w), what, type_name(v));
    return get_id(file, v, at, limit, what, out);
}

/* what[i].id of an entry of the tensors or nodes array, which must equal
 * its index i (a smaller id is reported as a duplicate). */
static mp_status get_index_id(const char *file, const json_t *v, const char *what,
                              const char *noun, size_t i) {
    uint64_t id = 0;
    mp_status s;
    const jpath *at = AT_F(what, i, "id");
    if ((s = get_u64(file, json_object_get(v, "id"), at, &id))) return s;
    if (id == i) return MP_OK;
    path_buf w;
    if (id < i)
        return bad(file, "%s: duplicate id %llu (%s[%llu] has it)", path_str(at, &w),
                   (unsigned long long)id, what, (unsigned long long)id);
    return bad(file, "%s: expected %zu (a %s's id is its index), got %llu", path_str(at, &w), i, noun,
               (unsigned long long)id);
}

static mp_status get_bool(const char *file, const json_t *v, const jpath *at, int *out) {
    *out = 0;
    if (!v) return MP_OK;
    path_buf w;
    if (!json_is_boolean(v))
        return bad(file, "%s: expected true or false, got %s", path_str(at, &w), type_name(v));
    *out = json_is_true(v);
    return MP_OK;
}

static mp_status get_string(const char *file, const json_t *v, const jpath *at, bool required,
                            const char **out) {
    *out = "";
    if (!v && !required) return MP_OK;
    path_buf w;
    if (!v) return bad(file, "%s: missing", path_str(at, &w));
    if (!json_is_string(v))
        return bad(file, "%s: expected a string, got %s", path_str(at, &w), type_name(v));
    *out = json_string_value(v);
    return MP_OK;
}

static mp_status get_array(const char *file, const json_t *v, const jpath *at, json_t **out) {
    path_buf w;
    if (!v) return bad(file, "%s: missing", path_str(at, &w));
    if (!json_is_array(v)) return bad(file, "%s: expected an array, got %s", path_str(at, &w), type_name(v));
    *out = (json_t *)v;
    return MP_OK;
}

/* ---- building ------------------------------------------------------------ */

typedef struct builder {
    const char *file;
    mp_graph_t *g;
    size_t n_dims, n_ids, n_chars;   /* used so far in each pool */
} builder;

/* Copies a string into the pool (sized by the first pass). */
static const char *keep(builder *b, const char *s) {
    size_t len = strlen(s);
    char *d = b->g->strings + b->n_chars;
    memcpy(d, s, len + 1);
    b->n_chars += len + 1;
    return d;
}

/* What keep() will take for v: a missing name is kept as "" (1 byte). */
static size_t str_cost(const json_t *v) {
    return json_is_string(v) ? strlen(json_string_value(v)) + 1 : 1;
}
static size_t arr_cost(const json_t *v) { return json_is_array(v) ? json_array_size(v) : 0; }

/* First pass: exact pool sizes; values of the wrong type count nothing
 * (the second pass reports them). */
static void size_pools(json_t *tensors, json_t *nodes, json_t *model, size_t *dims, size_t *ids,
                       size_t *chars) {
    *dims = *ids = 0;
    *chars = str_cost(json_is_object(model) ? json_object_get(model, "name") : NULL);
    size_t i;
    json_t *v;
    json_array_foreach(tensors, i, v) {
        *dims += arr_cost(json_object_get(v, "shape"));
        *chars += str_cost(json_object_get(v, "name"));
    }
    json_array_foreach(nodes, i, v) {
        *ids += arr_cost(json_object_get(v, "inputs")) + arr_cost(json_object_get(v, "outputs"));
        *chars += str_cost(json_object_get(v, "name")) + str_cost(json_object_get(v, "op"));
    }
}

static mp_status read_tensor(builder *b, size_t i, const json_t *v) {
    const char *file = b->file;
    mp_graph_t *g = b->g;
    mp_graph_tensor_t *t = &g->tensor[i];
    path_buf w;
    mp_status s;
    if (!json_is_object(v))
        return bad(file, "tensors[%zu]: expected an object, got %s", i, type_name(v));
    if ((s = get_index_id(file, v, "tensors", "tensor", i))) return s;
    const char *str = "";
    if ((s = get_string(file, json_object_get(v, "name"), AT_F("tensors", i, "name"), false, &str)))
        return s;
    t->name = keep(b, str);

    json_t *shape = NULL;
    if ((s = get_array(file, json_object_get(v, "shape"), AT_F("tensors", i, "shape"), &shape))) return s;
    t->rank = json_array_size(shape);
    t->shape = t->rank ? g->dims + b->n_dims : NULL;
    t->numel = 1;
    bool overflow = false;
    for (size_t k = 0; k < t->rank; k++) {
        uint64_t d = 0;
        if ((s = get_u64(file, json_array_get(shape, k), AT_FK("tensors", i, "shape", k), &d))) return s;
        g->dims[b->n_dims++] = d;
        if (d && t->numel > UINT64_MAX / d) overflow = true;
        else t->numel *= d;
    }
    if (overflow) return bad(file, "tensors[%zu].shape: the number of elements overflows 64 bits", i);

    const jpath *at = AT_F("tensors", i, "dtype");
    if ((s = get_string(file, json_object_get(v, "dtype"), at, true, &str))) return s;
    size_t k = 0;
    while (k < sizeof dtypes / sizeof dtypes[0] && strcmp(dtypes[k].name, str)) k++;
    if (k == sizeof dtypes / sizeof dtypes[0])
        return bad(file, "%s: unknown dtype \"%s\"", path_str(at, &w), str);
    t->dtype = dtypes[k].name;
    t->dtype_size = dtypes[k].size;

    at = AT_F("tensors", i, "kind");
    if ((s = get_string(file, json_object_get(v, "kind"), at, true, &str))) return s;
    k = 0;
    while (k < sizeof kinds / sizeof kinds[0] && strcmp(kinds[k], str)) k++;
    if (k == sizeof kinds / sizeof kinds[0])
        return bad(file, "%s: unknown kind \"%s\" (input, activation, parameter, gradient, output)",
                   path_str(at, &w), str);
    t->kind = (mp_tensor_kind)k;

    if ((s = get_opt_id(file, json_object_get(v, "alias_of"), AT_F("tensors", i, "alias_of"),
                        g->n_tensors, "tensor", &t->alias_of)))
        return s;
    if ((s = get_bool(file, json_object_get(v, "trainable"), AT_F("tensors", i, "trainable"),
                      &t->trainable)))
        return s;
    if ((s = get_opt_id(file, json_object_get(v, "grad_of"), AT_F("tensors", i, "grad_of"),
                        g->n_tensors, "tensor", &t->grad_of)))
        return s;

    at = AT_F("tensors", i, "bytes");
    if ((s = get_u64(file, json_object_get(v, "bytes"), at, &t->bytes))) return s;
    if (t->alias_of != MP_GRAPH_NONE) {
        if (t->bytes)
            return bad(file, "%s: an alias owns no memory, expected 0, got %llu", path_str(at, &w),
                       (unsigned long long)t->bytes);
    } else {
        if (t->numel > UINT64_MAX / t->dtype_size)
            return bad(file, "%s: %llu elements of %s overflow 64 bits", path_str(at, &w),
                       (unsigned long long)t->numel, t->dtype);
        uint64_t want = t->numel * t->dtype_size;
        if (t->bytes != want)
            return bad(file, "%s: %llu, but %llu elements of %s take %llu", path_str(at, &w),
                       (unsigned long long)t->bytes, (unsigned long long)t->numel, t->dtype,
                       (unsigned long long)want);
    }
    t->root = MP_GRAPH_NONE;
    t->producer = MP_GRAPH_NONE;
    return MP_OK;
}

/* Reads nodes[i]'s tensor list key ("inputs" or "outputs") into the pool. */
static mp_status read_id_list(builder *b, size_t i, const json_t *v, const char *key,
                              const size_t **list, size_t *n) {
    json_t *arr = NULL;
    mp_status s;
    if ((s = get_array(b->file, json_object_get(v, key), AT_F("nodes", i, key), &arr))) return s;
    *n = json_array_size(arr);
    size_t *d = b->g->ids + b->n_ids;
    *list = *n ? d : NULL;
    for (size_t k = 0; k < *n; k++) {
        if ((s = get_id(b->file, json_array_get(arr, k), AT_FK("nodes", i, key, k), b->g->n_tensors,
                        "tensor", &d[k])))
            return s;
    }
    b->n_ids += *n;
    return MP_OK;
}

/* nodes[i].scratch: an optional tensor id, the memory node i holds only
 * while it runs (docs/graph-format.md): an owning activation no other node
 * produces; that nothing reads it and it is no output is checked once the
 * order is known (check_scratch). */
static mp_status read_scratch(builder *b, size_t i, const json_t *v) {
    mp_graph_t *g = b->g;
    const jpath *at = AT_F("nodes", i, "scratch");
    path_buf w;
    mp_status s = get_opt_id(b->file, v, at, g->n_tensors, "tensor", &g->node[i].scratch);
    size_t t = g->node[i].scratch;
    if (s || t == MP_GRAPH_NONE) return s;
    mp_graph_tensor_t *x = &g->tensor[t];
    if (x->alias_of != MP_GRAPH_NONE || x->kind != MP_TENSOR_ACTIVATION)
        return bad(b->file, "%s: tensor %zu '%s' must be an activation that owns its memory",
                   path_str(at, &w), t, x->name);
    if (x->producer != MP_GRAPH_NONE)
        return bad(b->file, "%s: tensor %zu is already produced by node %zu '%s'", path_str(at, &w), t,
                   x->producer, g->node[x->producer].name);
    x->producer = i;
    return MP_OK;
}

/* A scratch tensor is read by no node and is no graph output nor the loss. */
static mp_status check_scratch(builder *b) {
    const mp_graph_t *g = b->g;
    for (size_t v = 0; v < g->n_nodes; v++) {
        const mp_graph_node_t *nd = &g->node[v];
        for (size_t k = 0; k < nd->n_inputs; k++) {
            const mp_graph_tensor_t *x = &g->tensor[g->tensor[nd->inputs[k]].root];
            if (x->producer != MP_GRAPH_NONE && g->node[x->producer].scratch == (size_t)(x - g->tensor))
                return bad(b->file, "nodes[%zu].inputs[%zu]: tensor %zu is node %zu's scratch, which no node reads",
                           v, k, nd->inputs[k], x->producer);
        }
    }
    for (size_t k = 0; k <= g->n_outputs; k++) {
        size_t t = k < g->n_outputs ? g->outputs[k] : g->loss;
        if (t == MP_GRAPH_NONE) continue;
        const mp_graph_tensor_t *x = &g->tensor[g->tensor[t].root];
        if (x->producer != MP_GRAPH_NONE && g->node[x->producer].scratch == (size_t)(x - g->tensor))
            return bad(b->file, "%s: tensor %zu is node %zu's scratch, which is no output",
                       k < g->n_outputs ? "outputs" : "loss", t, x->producer);
    }
    return MP_OK;
}

static mp_status read_node(builder *b, size_t i, const json_t *v) {
    const char *file = b->file;
    mp_graph_t *g = b->g;
    mp_graph_node_t *nd = &g->node[i];
    mp_status s;
    if (!json_is_object(v)) return bad(file, "nodes[%zu]: expected an object, got %s", i, type_name(v));
    if ((s = get_index_id(file, v, "nodes", "node", i))) return s;
    const char *str = "";
    if ((s = get_string(file, json_object_get(v, "name"), AT_F("nodes", i, "name"), false, &str)))
        return s;
    nd->name = keep(b, str);
    if ((s = get_string(file, json_object_get(v, "op"), AT_F("nodes", i, "op"), true, &str))) return s;
    nd->op = keep(b, str);
    if ((s = read_id_list(b, i, v, "inputs", &nd->inputs, &nd->n_inputs))) return s;
    if ((s = read_id_list(b, i, v, "outputs", &nd->outputs, &nd->n_outputs))) return s;
    for (size_t k = 0; k < nd->n_outputs; k++) {
        mp_graph_tensor_t *t = &g->tensor[nd->outputs[k]];
        if (t->producer == i)
            return bad(file, "nodes[%zu].outputs[%zu]: tensor %zu is listed twice", i, k, nd->outputs[k]);
        if (t->producer != MP_GRAPH_NONE)
            return bad(file, "nodes[%zu].outputs[%zu]: tensor %zu is already produced by node %zu '%s'",
                       i, k, nd->outputs[k], t->producer, g->node[t->producer].name);
        t->producer = i;
    }
    if ((s = read_scratch(b, i, json_object_get(v, "scratch")))) return s;
    const json_t *attrs = json_object_get(v, "attrs");
    nd->step = MP_GRAPH_NONE;
    if (!attrs || json_is_null(attrs)) return MP_OK;
    if (!json_is_object(attrs))
        return bad(file, "nodes[%zu].attrs: expected an object, got %s", i, type_name(attrs));
    g->attrs[i] = json_incref((json_t *)attrs);
    if ((s = get_bool(file, json_object_get(attrs, "inplace_capable"),
                      AT_F("nodes", i, "attrs.inplace_capable"), &nd->inplace_capable)))
        return s;
    if ((s = get_bool(file, json_object_get(attrs, "inplace"), AT_F("nodes", i, "attrs.inplace"),
                      &nd->inplace)))
        return s;
    const json_t *fl = json_object_get(attrs, "flops");
    if (fl && (s = get_u64(file, fl, AT_F("nodes", i, "attrs.flops"), &nd->flops))) return s;
    static const char *const ws_keys[2] = {"attrs.workspace", "attrs.backward_workspace"};
    uint64_t *ws_out[2] = {&nd->workspace, &nd->backward_workspace};
    for (int k = 0; k < 2; k++) {
        const json_t *x = json_object_get(attrs, ws_keys[k] + strlen("attrs."));
        if (x && (s = get_u64(file, x, AT_F("nodes", i, ws_keys[k]), ws_out[k]))) return s;
    }
    return MP_OK;
}

/* Follows every alias chain to the tensor that owns the memory; a chain
 * that comes back to itself is an error.  O(tensors): each tensor's root is
 * found once, walks stop at resolved tensors. */
static mp_status resolve_aliases(builder *b) {
    mp_graph_t *g = b->g;
    size_t n = g->n_tensors;
    size_t *mark = malloc((n ? n : 1) * sizeof *mark);
    if (!mark) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        mark[i] = MP_GRAPH_NONE;
        if (g->tensor[i].alias_of == MP_GRAPH_NONE) g->tensor[i].root = i;
    }
    for (size_t i = 0; i < n; i++) {
        size_t cur = i;
        while (g->tensor[cur].root == MP_GRAPH_NONE) {
            if (mark[cur] == i) {
                char chain[256];
                size_t len = (size_t)snprintf(chain, sizeof chain, "%zu", cur);
                size_t x = g->tensor[cur].alias_of;
                for (int k = 0; k < 16 && len < sizeof chain; k++) {
                    len += (size_t)snprintf(chain + len, sizeof chain - len, " -> %zu", x);
                    if (x == cur) break;
                    x = g->tensor[x].alias_of;
                }
                if (x != cur && len < sizeof chain) snprintf(chain + len, sizeof chain - len, " -> ...");
                free(mark);
                return bad(b->file, "tensors[%zu].alias_of: alias cycle %s", cur, chain);
            }
            mark[cur] = i;
            cur = g->tensor[cur].alias_of;
        }
        size_t root = g->tensor[cur].root;
        for (cur = i; g->tensor[cur].root == MP_GRAPH_NONE; cur = g->tensor[cur].alias_of)
            g->tensor[cur].root = root;
    }
    free(mark);
    return MP_OK;
}

/* Kahn's algorithm on producer -> reader edges; when some nodes are left,
 * walks back from one of them through unfinished producers until a node
 * repeats, and reports that cycle in data-flow order.  O(nodes + reads). */
static mp_status check_acyclic(builder *b) {
    mp_graph_t *g = b->g;
    size_t n = g->n_nodes;
    if (!n) return MP_OK;
    size_t *indeg = calloc(n, sizeof *indeg), *start = calloc(n + 1, sizeof *start);
    size_t *queue = malloc(n * sizeof *queue), *succ = NULL;
    size_t edges = 0;
    mp_status s = MP_OK;
    if (!indeg || !start || !queue) goto nomem;
    for (size_t v = 0; v < n; v++)
        for (size_t k = 0; k < g->node[v].n_inputs; k++) {
            size_t p = g->tensor[g->node[v].inputs[k]].producer;
            if (p == MP_GRAPH_NONE) continue;
            start[p + 1]++;
            indeg[v]++;
            edges++;
        }
    for (size_t v = 0; v < n; v++) start[v + 1] += start[v];
    succ = malloc((edges ? edges : 1) * sizeof *succ);
    if (!succ) goto nomem;
    for (size_t v = 0; v < n; v++)
        for (size_t k = 0; k < g->node[v].n_inputs; k++) {
            size_t p = g->tensor[g->node[v].inputs[k]].producer;
            if (p != MP_GRAPH_NONE) succ[start[p]++] = v;
        }
    for (size_t v = n; v > 0; v--) start[v] = start[v - 1];   /* undo the fill's shift */
    start[0] = 0;
    size_t head = 0, tail = 0;
    for (size_t v = 0; v < n; v++)
        if (!indeg[v]) queue[tail++] = v;
    while (head < tail) {
        size_t p = queue[head++];
        for (size_t e = start[p]; e < start[p + 1]; e++)
            if (--indeg[succ[e]] == 0) queue[tail++] = succ[e];
    }
    if (tail < n) {
        /* queue is reused as the walk, start as each node's place in it. */
        size_t v = 0;
        while (!indeg[v]) v++;
        for (size_t u = 0; u < n; u++) start[u] = MP_GRAPH_NONE;
        size_t len = 0;
        while (start[v] == MP_GRAPH_NONE) {
            start[v] = len;
            queue[len++] = v;
            size_t next = MP_GRAPH_NONE;
            for (size_t k = 0; k < g->node[v].n_inputs && next == MP_GRAPH_NONE; k++) {
                size_t p = g->tensor[g->node[v].inputs[k]].producer;
                if (p != MP_GRAPH_NONE && indeg[p]) next = p;
            }
            v = next;   /* exists: an unfinished node has an unfinished producer */
        }
        /* queue[from] = v reads from queue[from + 1], ..., queue[len - 1]
         * reads from v: in data-flow order v -> queue[len - 1] -> ... -> v. */
        char text[512];
        size_t from = start[v];
        size_t at = (size_t)snprintf(text, sizeof text, "node %zu '%s'", v, g->node[v].name);
        for (size_t k = len; k-- > from + 1 && at < sizeof text;)
            at += (size_t)snprintf(text + at, sizeof text - at, " -> node %zu '%s'", queue[k],
                                   g->node[queue[k]].name);
        if (at < sizeof text) snprintf(text + at, sizeof text - at, " -> node %zu '%s'", v, g->node[v].name);
        s = bad(b->file, "nodes: the graph has a cycle: %s", text);
    }
    goto done;
nomem:
    s = MP__NOMEM();
done:
    free(indeg);
    free(start);
    free(queue);
    free(succ);
    return s;
}

/* order: a permutation of the node ids in which every node runs after the
 * producers of what it reads. */
static mp_status read_order(builder *b, json_t *order) {
    mp_graph_t *g = b->g;
    const char *file = b->file;
    mp_status s;
    size_t len = json_array_size(order);
    if (len != g->n_nodes)
        return bad(file, "order: %zu entr%s for %zu node%s (every node exactly once)", len,
                   len == 1 ? "y" : "ies", g->n_nodes, g->n_nodes == 1 ? "" : "s");
    for (size_t k = 0; k < len; k++) {
        size_t v = 0;
        if ((s = get_id(file, json_array_get(order, k), AT_I("order", k), g->n_nodes, "node", &v))) return s;
        if (g->node[v].step != MP_GRAPH_NONE)
            return bad(file, "order[%zu]: node %zu appears twice (also order[%zu])", k, v, g->node[v].step);
        g->node[v].step = k;
        g->order[k] = v;
    }
    if ((s = check_acyclic(b))) return s;
    for (size_t k = 0; k < len; k++) {
        const mp_graph_node_t *nd = &g->node[g->order[k]];
        for (size_t j = 0; j < nd->n_inputs; j++) {
            size_t t = nd->inputs[j], p = g->tensor[t].producer;
            if (p != MP_GRAPH_NONE && g->node[p].step >= k)
                return bad(file,
                           "order[%zu]: node %zu '%s' (step %zu) reads tensor %zu '%s' before "
                           "node %zu '%s' (step %zu) produces it",
                           k, g->order[k], nd->name, k, t, g->tensor[t].name, p, g->node[p].name,
                           g->node[p].step);
        }
    }
    return MP_OK;
}

static mp_status build(builder *b, json_t *root) {
    const char *file = b->file;
    mp_graph_t *g = b->g;
    mp_status s;
    if (!json_is_object(root)) return bad(file, "expected a JSON object at the top level, got %s", type_name(root));
    const char *fmt = "";
    if ((s = get_string(file, json_object_get(root, "format"), AT("format"), true, &fmt))) return s;
    if (strcmp(fmt, FORMAT)) return bad(file, "format: \"%s\" is not supported (expected \"" FORMAT "\")", fmt);
    json_t *tensors = NULL, *nodes = NULL, *order = NULL, *outputs = NULL, *model = json_object_get(root, "model");
    if ((s = get_array(file, json_object_get(root, "tensors"), AT("tensors"), &tensors))) return s;
    if ((s = get_array(file, json_object_get(root, "nodes"), AT("nodes"), &nodes))) return s;
    if ((s = get_array(file, json_object_get(root, "order"), AT("order"), &order))) return s;
    if ((s = get_array(file, json_object_get(root, "outputs"), AT("outputs"), &outputs))) return s;
    if (model && !json_is_object(model)) return bad(file, "model: expected an object, got %s", type_name(model));

    size_t nd, ni, nc;
    size_pools(tensors, nodes, model, &nd, &ni, &nc);
    g->n_tensors = json_array_size(tensors);
    g->n_nodes = json_array_size(nodes);
    g->n_outputs = json_array_size(outputs);
    g->tensor = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *g->tensor);
    g->node = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *g->node);
    g->order = malloc((g->n_nodes ? g->n_nodes : 1) * sizeof *g->order);
    g->outputs = malloc((g->n_outputs ? g->n_outputs : 1) * sizeof *g->outputs);
    g->dims = malloc((nd ? nd : 1) * sizeof *g->dims);
    g->ids = malloc((ni ? ni : 1) * sizeof *g->ids);
    g->strings = malloc(nc);
    g->attrs = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *g->attrs);
    if (!g->tensor || !g->node || !g->order || !g->outputs || !g->dims || !g->ids || !g->strings ||
        !g->attrs)
        return MP__NOMEM();
    if (model) g->model = json_incref(model);
    const char *name = "";
    if ((s = get_string(file, model ? json_object_get(model, "name") : NULL, AT("model.name"), false, &name)))
        return s;
    g->model_name = keep(b, name);

    for (size_t i = 0; i < g->n_tensors; i++)
        if ((s = read_tensor(b, i, json_array_get(tensors, i)))) return s;
    if ((s = resolve_aliases(b))) return s;
    for (size_t i = 0; i < g->n_nodes; i++)
        if ((s = read_node(b, i, json_array_get(nodes, i)))) return s;
    if ((s = read_order(b, order))) return s;
    for (size_t k = 0; k < g->n_outputs; k++)
        if ((s = get_id(file, json_array_get(outputs, k), AT_I("outputs", k), g->n_tensors, "tensor",
                        &g->outputs[k])))
            return s;
    if ((s = get_opt_id(file, json_object_get(root, "loss"), AT("loss"), g->n_tensors, "tensor", &g->loss)))
        return s;
    return check_scratch(b);
}

/* ---- entry points -------------------------------------------------------- */

mp_status mp__graph_from_json(json_t *root, const char *name, mp_graph_t **out) {
    *out = NULL;
    builder b = {.file = name, .g = calloc(1, sizeof(mp_graph_t))};
    mp_status s = b.g ? build(&b, root) : MP__NOMEM();
    if (s) {
        mp_graph_free(b.g);
        return s;
    }
    *out = b.g;
    return MP_OK;
}

mp_status mp_graph_parse(const char *text, size_t len, const char *name, mp_graph_t **out) {
    *out = NULL;
    if (!text || !name) return mp__err(MP_EINVAL, "mp_graph_parse: NULL argument");
    json_error_t err;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root) return mp__err(MP_EPARSE, "%s:%d:%d: %s", name, err.line, err.column, err.text);
    mp_status s = mp__graph_from_json(root, name, out);
    json_decref(root);
    return s;
}
