/* parallel.c -- the dependency structure behind parallel-safe sharing: the
 * DAG as adjacency lists, the readers of each tensor's memory, the exact
 * ancestor relation as bitsets, and the MXNet note's path colouring.
 *
 * Costs (n nodes, E edges, R node inputs, T tensors):
 *   - mp__dag_build: O(T + n + R) time and memory.
 *   - mp__anc_build: O(n^2 / 8) bytes and O((n + E) n / 64) time; fine up
 *     to a few tens of thousands of nodes, refused (MP_ENOMEM) above
 *     MP__ANC_MAX_BYTES rather than letting the machine swap.
 *   - mp__colour_build: each colour is one longest-path search, O(n + E);
 *     at most k <= MP__COLOUR_MAX_PATHS of them, then the reachability
 *     index in O(k (n + E)) time and 4 k n bytes.  This is the note's
 *     "O(n) if we only search for the first k paths". */
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

void mp__dag_free(mp__dag *d) {
    free(d->pred_at), free(d->pred), free(d->succ_at), free(d->succ);
    free(d->rd_at), free(d->rd);
    memset(d, 0, sizeof *d);
}

/* The node whose output u must precede v for v's input t, or NONE: the
 * producer of t, or (second) of its root. */
static size_t dep(const mp_graph_t *g, size_t t, int second) {
    const mp_graph_tensor_t *x = &g->tensor[t];
    if (!second) return x->producer;
    return x->root != t ? g->tensor[x->root].producer : MP_GRAPH_NONE;
}

/* Fills the predecessor lists (count, then fill); stamp is n scratch. */
static mp_status build_preds(const mp_graph_t *g, mp__dag *d, size_t *stamp) {
    size_t n = g->n_nodes, total = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t v = 0; v < n; v++) stamp[v] = MP_GRAPH_NONE;
        size_t at = 0;
        for (size_t v = 0; v < n; v++) {
            const mp_graph_node_t *nd = &g->node[v];
            if (pass) d->pred_at[v] = at;
            for (size_t i = 0; i < nd->n_inputs; i++)
                for (int k = 0; k < 2; k++) {
                    size_t u = dep(g, nd->inputs[i], k);
                    /* A root produced after its view is read cannot order
                     * anything; the order is the graph's topological order. */
                    if (u == MP_GRAPH_NONE || u == v || stamp[u] == v ||
                        g->node[u].step >= nd->step)
                        continue;
                    stamp[u] = v;
                    if (pass) d->pred[at] = u;
                    at++;
                }
        }
        if (!pass) {
            total = at;
            d->pred_at = malloc((n + 1) * sizeof *d->pred_at);
            d->pred = malloc((total ? total : 1) * sizeof *d->pred);
            if (!d->pred_at || !d->pred) return MP__NOMEM();
        } else {
            d->pred_at[n] = at;
        }
    }
    /* Successors: the transpose, by counting. */
    d->succ_at = calloc(n + 1, sizeof *d->succ_at);
    d->succ = malloc((total ? total : 1) * sizeof *d->succ);
    if (!d->succ_at || !d->succ) return MP__NOMEM();
    for (size_t e = 0; e < total; e++) d->succ_at[d->pred[e] + 1]++;
    for (size_t u = 0; u < n; u++) d->succ_at[u + 1] += d->succ_at[u];
    for (size_t u = 0; u < n; u++) stamp[u] = d->succ_at[u];
    for (size_t v = 0; v < n; v++)
        for (size_t e = d->pred_at[v]; e < d->pred_at[v + 1]; e++) d->succ[stamp[d->pred[e]]++] = v;
    return MP_OK;
}

/* Fills the reader lists per root; stamp is T scratch. */
static mp_status build_readers(const mp_graph_t *g, mp__dag *d, size_t *stamp) {
    size_t nt = g->n_tensors;
    d->rd_at = calloc(nt + 1, sizeof *d->rd_at);
    if (!d->rd_at) return MP__NOMEM();
    for (size_t t = 0; t < nt; t++) stamp[t] = MP_GRAPH_NONE;
    size_t total = 0;
    for (size_t v = 0; v < g->n_nodes; v++) {
        const mp_graph_node_t *nd = &g->node[v];
        for (size_t i = 0; i < nd->n_inputs; i++) {
            size_t r = g->tensor[nd->inputs[i]].root;
            if (stamp[r] == v) continue;
            stamp[r] = v;
            d->rd_at[r + 1]++;
            total++;
        }
    }
    for (size_t t = 0; t < nt; t++) d->rd_at[t + 1] += d->rd_at[t];
    d->rd = malloc((total ? total : 1) * sizeof *d->rd);
    if (!d->rd) return MP__NOMEM();
    size_t *fill = stamp; /* reused as the write cursor per root */
    for (size_t t = 0; t < nt; t++) fill[t] = d->rd_at[t];
    /* Nodes are visited in id order, so node v already listed for root r
     * is exactly when r's last entry so far is v. */
    for (size_t v = 0; v < g->n_nodes; v++) {
        const mp_graph_node_t *nd = &g->node[v];
        for (size_t i = 0; i < nd->n_inputs; i++) {
            size_t r = g->tensor[nd->inputs[i]].root;
            if (fill[r] > d->rd_at[r] && d->rd[fill[r] - 1] == v) continue;
            d->rd[fill[r]++] = v;
        }
    }
    return MP_OK;
}

mp_status mp__dag_build(const mp_graph_t *g, mp__dag *d) {
    memset(d, 0, sizeof *d);
    d->n = g->n_nodes;
    size_t m = g->n_nodes > g->n_tensors ? g->n_nodes : g->n_tensors;
    size_t *stamp = malloc((m ? m : 1) * sizeof *stamp);
    mp_status s = stamp ? build_preds(g, d, stamp) : MP__NOMEM();
    if (s == MP_OK) s = build_readers(g, d, stamp);
    free(stamp);
    if (s != MP_OK) mp__dag_free(d);
    return s;
}

void mp__anc_free(mp__anc *a) {
    free(a->bits);
    memset(a, 0, sizeof *a);
}

mp_status mp__anc_build(const mp_graph_t *g, const mp__dag *d, mp__anc *a) {
    memset(a, 0, sizeof *a);
    size_t n = g->n_nodes;
    size_t words = (n + 63) / 64;
    uint64_t bytes = (uint64_t)n * words * 8;
    if (n && bytes / n / 8 != words) bytes = UINT64_MAX;
    if (bytes > MP__ANC_MAX_BYTES)
        return mp__err(MP_ENOMEM,
                       "ancestor sets of %zu nodes need %llu bytes (more than the %llu allowed)", n,
                       (unsigned long long)bytes, (unsigned long long)MP__ANC_MAX_BYTES);
    a->words = words;
    a->bits = calloc(n && words ? n * words : 1, sizeof *a->bits);
    if (!a->bits) return MP__NOMEM();
    /* In execution order every predecessor's set is complete before use. */
    for (size_t s = 0; s < n; s++) {
        size_t v = g->order[s];
        uint64_t *row = a->bits + v * words;
        row[v / 64] |= (uint64_t)1 << (v % 64);
        for (size_t e = d->pred_at[v]; e < d->pred_at[v + 1]; e++) {
            const uint64_t *pr = a->bits + d->pred[e] * words;
            for (size_t w = 0; w < words; w++) row[w] |= pr[w];
        }
    }
    return MP_OK;
}

void mp__colour_free(mp__colour *c) {
    free(c->colour);
    free(c->reach);
    memset(c, 0, sizeof *c);
}

/* One longest-path search over the whole DAG where an uncoloured node is
 * worth 1 and a coloured one 0 (as MXNet's FindBestPath with importance
 * zeroed once coloured): paths may cross coloured nodes, only the others get
 * colour c.  Returns the number of nodes coloured.  Ties go to the smaller
 * step, so the colouring is deterministic. */
static size_t colour_path(const mp_graph_t *g, const mp__dag *d, size_t *colour, size_t *best,
                          size_t *nxt, size_t c) {
    size_t n = g->n_nodes;
    for (size_t s = n; s-- > 0;) {
        size_t v = g->order[s], b = 0, x = MP_GRAPH_NONE;
        for (size_t e = d->succ_at[v]; e < d->succ_at[v + 1]; e++) {
            size_t u = d->succ[e];
            if (best[u] > b || (best[u] == b && b && g->node[u].step < g->node[x].step)) {
                b = best[u];
                x = u;
            }
        }
        best[v] = b + (colour[v] == MP_GRAPH_NONE);
        nxt[v] = x;
    }
    size_t start = MP_GRAPH_NONE;
    for (size_t s = 0; s < n; s++)
        if (start == MP_GRAPH_NONE || best[g->order[s]] > best[start]) start = g->order[s];
    if (start == MP_GRAPH_NONE || !best[start]) return 0;
    size_t got = 0;
    for (size_t v = start; v != MP_GRAPH_NONE; v = nxt[v])
        if (colour[v] == MP_GRAPH_NONE) colour[v] = c, got++;
    return got;
}

mp_status mp__colour_build(const mp_graph_t *g, const mp__dag *d, mp__colour *c) {
    memset(c, 0, sizeof *c);
    size_t n = g->n_nodes;
    if (n >= UINT32_MAX) return mp__err(MP_ENOMEM, "path colouring: %zu nodes is too many", n);
    size_t kmax = MP__COLOUR_MAX_PATHS;
    size_t budget = ((size_t)256 << 20) / 4 / (n ? n : 1);
    if (kmax > budget) kmax = budget ? budget : 1;
    c->colour = malloc((n ? n : 1) * sizeof *c->colour);
    size_t *best = malloc((n ? n : 1) * sizeof *best);
    size_t *nxt = malloc((n ? n : 1) * sizeof *nxt);
    if (!c->colour || !best || !nxt) {
        free(best), free(nxt);
        mp__colour_free(c);
        return MP__NOMEM();
    }
    for (size_t v = 0; v < n; v++) c->colour[v] = MP_GRAPH_NONE;
    while (c->k < kmax && colour_path(g, d, c->colour, best, nxt, c->k)) c->k++;
    free(best), free(nxt);
    size_t k = c->k;
    c->reach = calloc(n && k ? n * k : 1, sizeof *c->reach);
    if (!c->reach) {
        mp__colour_free(c);
        return MP__NOMEM();
    }
    for (size_t s = 0; s < n; s++) {
        size_t v = g->order[s];
        uint32_t *row = c->reach + v * k;
        for (size_t e = d->pred_at[v]; e < d->pred_at[v + 1]; e++) {
            const uint32_t *pr = c->reach + d->pred[e] * k;
            for (size_t j = 0; j < k; j++)
                if (pr[j] > row[j]) row[j] = pr[j];
        }
        if (c->colour[v] != MP_GRAPH_NONE) row[c->colour[v]] = (uint32_t)(s + 1);
    }
    return MP_OK;
}

/* Exact for a coloured u: its colour's ancestors of v form a prefix of the
 * colour's chain, ending at step reach - 1. */
static bool coloured_anc(const mp_graph_t *g, const mp__colour *c, size_t u, size_t v) {
    return c->reach[v * c->k + c->colour[u]] >= g->node[u].step + 1;
}

bool mp__colour_anc(const mp_graph_t *g, const mp__dag *d, const mp__colour *c, size_t u,
                    size_t v) {
    if (u == v) return true;
    if (c->colour[u] != MP_GRAPH_NONE) return coloured_anc(g, c, u, v);
    for (size_t e = d->succ_at[u]; e < d->succ_at[u + 1]; e++) {
        size_t w = d->succ[e];
        if (w == v || (c->colour[w] != MP_GRAPH_NONE && coloured_anc(g, c, w, v))) return true;
    }
    return false;
}
