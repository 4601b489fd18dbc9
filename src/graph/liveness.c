/* liveness.c -- lifetimes of a graph's tensors and the usage records they
 * give, by the rules of docs/graph-format.md ("How tensors, aliases and
 * lifetimes are counted"), the same derivation as
 * python/memplan/records.py:
 *
 *   - step s runs node order[s]; N steps, end = max(N - 1, 0);
 *   - a tensor owning memory lives from its producer's step (0 when no node
 *     produces it) to the last step reading it or any alias of it, at least
 *     its own step; a graph output (or an alias of one) lives to end;
 *   - a node's scratch tensor (its workspace) lives at the node's step only;
 *   - parameters and gradients live over [0, end];
 *   - one record per owning tensor with bytes > 0, persistent ones only on
 *     request, sorted by id; no records at all when there are no steps.
 *
 * O(tensors + node inputs and outputs). */
#include "graph_internal.h"

#include <stdlib.h>

void mp_graph_lifetimes(const mp_graph_t *g, uint64_t *first, uint64_t *last) {
    uint64_t end = g->n_nodes ? g->n_nodes - 1 : 0;
    for (size_t i = 0; i < g->n_tensors; i++) first[i] = last[i] = 0;
    for (size_t s = 0; s < g->n_nodes; s++) {
        const mp_graph_node_t *nd = &g->node[g->order[s]];
        for (size_t k = 0; k < nd->n_outputs; k++) {
            size_t t = nd->outputs[k];
            if (g->tensor[t].alias_of == MP_GRAPH_NONE) first[t] = last[t] = s;
        }
        if (nd->scratch != MP_GRAPH_NONE) first[nd->scratch] = last[nd->scratch] = s;
    }
    for (size_t s = 0; s < g->n_nodes; s++) {
        const mp_graph_node_t *nd = &g->node[g->order[s]];
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t r = g->tensor[nd->inputs[k]].root;
            if (s > last[r]) last[r] = s;
        }
    }
    for (size_t k = 0; k < g->n_outputs; k++) last[g->tensor[g->outputs[k]].root] = end;
    for (size_t i = 0; i < g->n_tensors; i++) {
        const mp_graph_tensor_t *t = &g->tensor[i];
        if (t->alias_of == MP_GRAPH_NONE && mp__graph_persistent(t->kind)) {
            first[i] = 0;
            last[i] = end;
        }
    }
    for (size_t i = 0; i < g->n_tensors; i++) {
        size_t r = g->tensor[i].root;
        if (r != i) {
            first[i] = first[r];
            last[i] = last[r];
        }
    }
}

mp_status mp_graph_records(const mp_graph_t *g, int include_persistent, mp_buffer_t **b,
                           size_t *n) {
    *b = NULL;
    *n = 0;
    if (!g->n_nodes) return MP_OK;
    size_t nt = g->n_tensors;
    uint64_t *first = malloc((nt ? nt : 1) * sizeof *first);
    uint64_t *last = malloc((nt ? nt : 1) * sizeof *last);
    if (!first || !last) {
        free(first);
        free(last);
        return MP__NOMEM();
    }
    mp_graph_lifetimes(g, first, last);
    size_t count = 0;
    for (size_t i = 0; i < nt; i++) {
        const mp_graph_tensor_t *t = &g->tensor[i];
        if (t->alias_of == MP_GRAPH_NONE && t->bytes &&
            (include_persistent || !mp__graph_persistent(t->kind)))
            count++;
    }
    mp_buffer_t *out = count ? malloc(count * sizeof *out) : NULL;
    if (count && !out) {
        free(first);
        free(last);
        return MP__NOMEM();
    }
    size_t k = 0;
    for (size_t i = 0; i < nt; i++) {
        const mp_graph_tensor_t *t = &g->tensor[i];
        if (t->alias_of == MP_GRAPH_NONE && t->bytes &&
            (include_persistent || !mp__graph_persistent(t->kind)))
            out[k++] = (mp_buffer_t){.id = i, .first = first[i], .last = last[i], .size = t->bytes};
    }
    free(first);
    free(last);
    *b = out;
    *n = count;
    return MP_OK;
}
