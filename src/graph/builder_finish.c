/* builder_finish.c -- the end of a builder's work: mp_graph_builder_finish
 * and mp_graph_with_order wrap the builder's arrays into a memplan-graph/1
 * document and pass it through the loader's checks (mp__graph_from_json);
 * mp__builder_copy_node and mp__builder_set_inputs are the two edits the
 * recompute transform (src/remat/apply.c) makes to a copy of a graph. */
#include "builder_internal.h"

#include <stdio.h>

#include "graph_json.h"

/* ---- finishing ------------------------------------------------------------------------------ */

/* The document of the builder with this order, outputs and loss, through
 * the loader's checks; name stands for the file in its messages. */
static mp_status finish(mp_graph_builder_t *b, const char *name, const size_t *order, const size_t *outputs,
                        size_t n_outputs, size_t loss, mp_graph_t **out) {
    size_t n = n_nodes(b);
    json_t *root = json_object(), *ord = NULL;
    if (!root) return MP__NOMEM();
    if (order) ord = mp__json_id_array(order, n);
    else if ((ord = json_array()))
        for (size_t k = 0; k < n; k++)
            if (json_array_append_new(ord, json_integer((json_int_t)k))) {
                json_decref(ord);
                ord = NULL;
                break;
            }
    int bad = 0;
    bad |= json_object_set_new(root, "format", json_string("memplan-graph/1"));
    if (b->model) bad |= json_object_set(root, "model", b->model);
    bad |= json_object_set(root, "tensors", b->tensors);
    bad |= json_object_set(root, "nodes", b->nodes);
    bad |= json_object_set_new(root, "order", ord);
    bad |= json_object_set_new(root, "outputs", mp__json_id_array(outputs, n_outputs));
    bad |= json_object_set_new(root, "loss",
                               loss == MP_GRAPH_NONE ? json_null() : json_integer((json_int_t)loss));
    mp_status s = bad ? MP__NOMEM() : mp__graph_from_json(root, name, out);
    json_decref(root);
    return s;
}

/* Makes the graph; the builder stays as it is. */
mp_status mp_graph_builder_finish(mp_graph_builder_t *b, const size_t *order, const size_t *outputs,
                                  size_t n_outputs, size_t loss, mp_graph_t **out) {
    if (!out) return mp__err(MP_EINVAL, "mp_graph_builder_finish: NULL out");
    *out = NULL;
    if (!b || (n_outputs && !outputs))
        return mp__err(MP_EINVAL, "mp_graph_builder_finish: NULL builder or outputs");
    return finish(b, "mp_graph_builder_finish", order, outputs, n_outputs, loss, out);
}

/* A copy of g running in order: g's document with another order goes
 * through the loader's checks again, whose complaint (not a permutation, a
 * node before its producer) becomes MP_EINVAL. */
mp_status mp_graph_with_order(const mp_graph_t *g, const size_t *order, mp_graph_t **out) {
    if (!out) return mp__err(MP_EINVAL, "mp_graph_with_order: NULL out");
    *out = NULL;
    if (!g || !order) return mp__err(MP_EINVAL, "mp_graph_with_order: NULL graph or order");
    mp_graph_builder_t *b;
    mp_status s = mp_graph_builder_from(g, &b);
    if (s) return s;
    s = finish(b, "mp_graph_with_order", order, g->outputs, g->n_outputs, g->loss, out);
    mp_graph_builder_free(b);
    if (s == MP_EPARSE) {
        char msg[768];
        snprintf(msg, sizeof msg, "%s", mp_last_error());
        s = mp__err(MP_EINVAL, "%s", msg);
    }
    return s;
}

/* ---- copies for the recompute transform (src/remat/apply.c) ------------------------ */

/* Adds node `node` of g again (its op and attrs, the raw file attrs
 * included, so the executor reads the same view arguments) over inputs in[]
 * and producing out[] (existing tensors nothing produces yet). */
mp_status mp__builder_copy_node(mp_graph_builder_t *b, const mp_graph_t *g, size_t node, const char *name,
                                const size_t *in, size_t n_in, const size_t *out, size_t n_out, size_t *id) {
    const char *call = "mp__builder_copy_node";
    size_t n = n_tensors(b), v = n_nodes(b);
    if (node >= g->n_nodes) return mp__err(MP_EINVAL, "%s: node %zu does not exist", call, node);
    for (size_t k = 0; k < n_in; k++)
        if (in[k] >= n) return mp__err(MP_EINVAL, "%s: input tensor %zu does not exist", call, in[k]);
    for (size_t k = 0; k < n_out; k++)
        if (out[k] >= n || b->producer[out[k]] != MP_GRAPH_NONE)
            return mp__err(MP_EINVAL, "%s: output tensor %zu does not exist or is produced", call, out[k]);
    json_t *o = json_object();
    int bad = !o;
    if (o) {
        bad |= json_object_set_new(o, "id", json_integer((json_int_t)v));
        bad |= json_object_set_new(o, "name", json_string(name ? name : ""));
        bad |= json_object_set_new(o, "op", json_string(g->node[node].op));
        bad |= json_object_set_new(o, "inputs", mp__json_id_array(in, n_in));
        bad |= json_object_set_new(o, "outputs", mp__json_id_array(out, n_out));
        if (g->attrs[node]) bad |= json_object_set(o, "attrs", g->attrs[node]);
    }
    if (bad || json_array_append_new(b->nodes, o)) {
        if (bad) json_decref(o);
        return MP__NOMEM();
    }
    for (size_t k = 0; k < n_out; k++) b->producer[out[k]] = v;
    if (id) *id = v;
    return MP_OK;
}

/* Replaces the inputs of node id (existing tensors). */
mp_status mp__builder_set_inputs(mp_graph_builder_t *b, size_t id, const size_t *in, size_t n_in) {
    size_t n = n_tensors(b);
    json_t *o = json_array_get(b->nodes, id);
    if (!o) return mp__err(MP_EINVAL, "mp__builder_set_inputs: node %zu does not exist", id);
    for (size_t k = 0; k < n_in; k++)
        if (in[k] >= n) return mp__err(MP_EINVAL, "mp__builder_set_inputs: tensor %zu does not exist", in[k]);
    json_t *arr = mp__json_id_array(in, n_in);
    if (!arr || json_object_set_new(o, "inputs", arr)) return MP__NOMEM();
    return MP_OK;
}
