/* iter.c -- timed iterations: the swap planner's input, and the producer
 * that makes one from a graph and a device model.
 *
 * A graph step becomes an op that reads its inputs and writes its outputs;
 * a variable is a tensor that owns memory (a view's access is its root's);
 * parameters and gradients are persistent.  The op's time is the device's
 * roofline time for the node's FLOPs and the bytes it touches. */
#include "swap_internal.h"
#include "../graph/graph_internal.h"

#include <stdlib.h>
#include <string.h>

void mp_swap_iter_free(mp_swap_iter_t *it) {
    if (!it) return;
    for (size_t v = 0; v < it->n_vars && it->var; v++) free(it->var[v].name);
    for (size_t o = 0; o < it->n_ops && it->op; o++) free(it->op[o].name);
    free(it->var), free(it->op), free(it->access);
    memset(it, 0, sizeof *it);
}

mp_status mp_swap_iter_validate(const mp_swap_iter_t *it) {
    if (!it || (it->n_vars && !it->var) || (it->n_ops && !it->op) || (it->n_access && !it->access))
        return mp__err(MP_EINVAL, "swap iteration: missing arrays");
    size_t *seen = calloc(it->n_vars + 1, sizeof *seen);   /* 1 + last op that accessed it */
    if (!seen) return MP__NOMEM();
    mp_status s = MP_OK;
    for (size_t v = 0; v < it->n_vars && !s; v++)
        if (!it->var[v].size) s = mp__err(MP_EINVAL, "swap iteration: variable %zu has size 0", v);
    for (size_t o = 0; o < it->n_ops && !s; o++) {
        const mp_swap_op_t *op = &it->op[o];
        if (op->first > it->n_access || op->n > it->n_access - op->first) {
            s = mp__err(MP_EINVAL, "swap iteration: op %zu: accesses out of range", o);
            break;
        }
        for (size_t k = 0; k < op->n && !s; k++) {
            size_t v = it->access[op->first + k].var;
            if (v >= it->n_vars)
                s = mp__err(MP_EINVAL, "swap iteration: op %zu: variable %zu does not exist", o, v);
            else if (seen[v] == o + 1)
                s = mp__err(MP_EINVAL, "swap iteration: op %zu accesses variable %zu twice", o, v);
            else
                seen[v] = o + 1;
        }
    }
    for (size_t v = 0; v < it->n_vars && !s; v++)
        if (!seen[v]) s = mp__err(MP_EINVAL, "swap iteration: variable %zu is never accessed", v);
    free(seen);
    return s;
}

/* Per tensor: its variable (MP_GRAPH_NONE for tensors owning nothing). */
static mp_status number_vars(const mp_graph_t *g, size_t *var_of, size_t *n_vars) {
    size_t nt = mp_graph_tensor_count(g), n = 0;
    for (size_t t = 0; t < nt; t++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, t);
        var_of[t] = x->root == t && x->bytes > 0 ? n++ : MP_GRAPH_NONE;
    }
    for (size_t t = 0; t < nt; t++)
        if (var_of[t] == MP_GRAPH_NONE) var_of[t] = var_of[mp_graph_tensor(g, t)->root];
    *n_vars = n;
    return MP_OK;
}

static char *dup_name(const char *s) { return strdup(s ? s : ""); }

static mp_status fill_vars(const mp_graph_t *g, const size_t *var_of, mp_swap_iter_t *it) {
    for (size_t t = 0, nt = mp_graph_tensor_count(g); t < nt; t++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, t);
        if (x->root != t || var_of[t] == MP_GRAPH_NONE) continue;
        mp_swap_var_t *v = &it->var[var_of[t]];
        v->size = x->bytes;
        v->persistent = mp__graph_persistent(x->kind);
        if (!(v->name = dup_name(x->name))) return MP__NOMEM();
    }
    return MP_OK;
}

/* Adds access (var, write) to the op being built, merging a repeat. */
static void add_access(mp_swap_iter_t *it, mp_swap_op_t *op, size_t var, int write) {
    for (size_t k = 0; k < op->n; k++)
        if (it->access[op->first + k].var == var) {
            it->access[op->first + k].write |= write;
            return;
        }
    it->access[op->first + op->n++] = (mp_swap_access_t){var, write};
}

static mp_status fill_ops(const mp_graph_t *g, const size_t *var_of, const mp_swap_device_t *dev,
                          mp_swap_iter_t *it) {
    size_t n_steps;
    const size_t *order = mp_graph_order(g, &n_steps);
    for (size_t s = 0; s < n_steps; s++) {
        const mp_graph_node_t *nd = mp_graph_node(g, order[s]);
        mp_swap_op_t *op = &it->op[s];
        op->first = it->n_access;
        for (size_t i = 0; i < nd->n_inputs; i++)
            if (var_of[nd->inputs[i]] != MP_GRAPH_NONE) add_access(it, op, var_of[nd->inputs[i]], 0);
        for (size_t i = 0; i < nd->n_outputs; i++)
            if (var_of[nd->outputs[i]] != MP_GRAPH_NONE) add_access(it, op, var_of[nd->outputs[i]], 1);
        it->n_access += op->n;
        uint64_t bytes = 0;
        for (size_t k = 0; k < op->n; k++) bytes += it->var[it->access[op->first + k].var].size;
        op->ns = mp__swap_op_ns(dev, mp__graph_node_flops(g, order[s]), bytes);
        if (!(op->name = dup_name(nd->name))) return MP__NOMEM();
    }
    it->n_ops = n_steps;
    return MP_OK;
}

/* Variables nothing accesses (a tensor no node reads or writes) are
 * dropped: they are no part of the iteration's memory traffic. */
static void drop_unaccessed(mp_swap_iter_t *it, size_t *renum) {
    for (size_t v = 0; v < it->n_vars; v++) renum[v] = 0;
    for (size_t a = 0; a < it->n_access; a++) renum[it->access[a].var] = 1;
    size_t n = 0;
    for (size_t v = 0; v < it->n_vars; v++) {
        if (!renum[v]) {
            free(it->var[v].name);
            continue;
        }
        it->var[n] = it->var[v];
        renum[v] = n++;
    }
    for (size_t a = 0; a < it->n_access; a++) it->access[a].var = renum[it->access[a].var];
    it->n_vars = n;
}

mp_status mp_swap_iter_from_graph(const mp_graph_t *g, const mp_swap_device_t *dev,
                                  mp_swap_iter_t *out) {
    if (!out) return mp__err(MP_EINVAL, "swap iteration: no output");
    memset(out, 0, sizeof *out);
    if (!g || !dev || !(dev->flops > 0) || !(dev->bytes_per_s > 0))
        return mp__err(MP_EINVAL, "swap iteration: need a graph and a device with positive rates");
    size_t nt = mp_graph_tensor_count(g), n_steps, reads = 0;
    const size_t *order = mp_graph_order(g, &n_steps);
    for (size_t s = 0; s < n_steps; s++) {
        const mp_graph_node_t *nd = mp_graph_node(g, order[s]);
        reads += nd->n_inputs + nd->n_outputs;
    }
    size_t *var_of = malloc((nt + 1) * sizeof *var_of);
    if (!var_of) return MP__NOMEM();
    number_vars(g, var_of, &out->n_vars);
    out->var = calloc(out->n_vars + 1, sizeof *out->var);
    out->op = calloc(n_steps + 1, sizeof *out->op);
    out->access = calloc(reads + 1, sizeof *out->access);
    size_t *renum = malloc((out->n_vars + 1) * sizeof *renum);
    mp_status s = !out->var || !out->op || !out->access || !renum ? MP__NOMEM() : MP_OK;
    if (!s) s = fill_vars(g, var_of, out);
    if (!s) s = fill_ops(g, var_of, dev, out);
    if (!s) drop_unaccessed(out, renum);
    free(var_of), free(renum);
    if (s) mp_swap_iter_free(out);
    return s;
}
