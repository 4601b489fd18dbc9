/* order.c -- memory-aware execution orders: the peak live bytes of a graph
 * run in a given order (mp_graph_peak) and the search for an order with a
 * lower peak (mp_graph_order_search).
 *
 * The problem (pisarchyk2020 sec. 7.1 leaves it as future work): the usage
 * records, hence every plan's lower bound, depend on the topological order
 * the graph runs in.  Finding the order of least peak is NP-hard in general
 * (it contains register sufficiency, Sethi 1975), so the search combines
 * heuristics and keeps the best order found:
 *
 *   1. greedy list scheduling (order_greedy.c): among the ready nodes, the
 *      BRANCH (4) best by bytes allocated minus bytes freed, each scored by
 *      a lookahead of opts->lookahead steps (default 2), ties by the given
 *      position; O(4^(d-1) (n + edges + reads) + n log n);
 *   2. a memory-first depth-first order (order_dfs.c), Sethi-Ullman's rule
 *      applied to the DAG as if it were a tree; O(n + edges log edges);
 *   3. local improvement (order_local.c) of the best of the given, greedy
 *      and DFS orders, and of the given order too when another won: moves
 *      of single nodes inside their dependency windows that lower the peak
 *      (or the number of steps at the peak), evaluated in O(deg log n)
 *      each with a segment tree; at most opts->max_passes passes (default
 *      4) of O((n + edges) log n + reads + 64 n) each;
 *   4. the result is the order of least peak among all of these, the given
 *      order on ties, so it is never worse than the given one.
 *
 * Every peak reported is recomputed by mp_graph_peak's own code from the
 * order, independently of the search's incremental bookkeeping. */
#include "order_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- peak -------------------------------------------------------------- */

/* Scratch of the peak computation, reused across candidate orders. */
typedef struct peak_ws {
    size_t *pos;      /* node -> step */
    uint64_t *first;  /* per tensor (roots only used) */
    uint64_t *last;
    uint64_t *diff;   /* n + 1 */
} peak_ws;

static void ws_free(peak_ws *w) {
    free(w->pos);
    free(w->first);
    free(w->last);
    free(w->diff);
}

static mp_status ws_init(const mp_graph_t *g, peak_ws *w) {
    size_t n = g->n_nodes, nt = g->n_tensors;
    w->pos = malloc((n ? n : 1) * sizeof *w->pos);
    w->first = malloc((nt ? nt : 1) * sizeof *w->first);
    w->last = malloc((nt ? nt : 1) * sizeof *w->last);
    w->diff = malloc((n + 1) * sizeof *w->diff);
    if (!w->pos || !w->first || !w->last || !w->diff) {
        ws_free(w);
        return MP__NOMEM();
    }
    return MP_OK;
}

/* Is tensor t a record of mp_graph_records(g, include_persistent)? */
static inline bool recorded(const mp_graph_tensor_t *t, int include_persistent) {
    return t->alias_of == MP_GRAPH_NONE && t->bytes &&
           (include_persistent || !mp__graph_persistent(t->kind));
}

/* The peak of order (validated: a permutation running every producer
 * before its readers), by the lifetime rules of liveness.c computed from
 * the positions: O(tensors + reads). */
static mp_status peak_of(const mp_graph_t *g, const size_t *order, int include_persistent,
                         peak_ws *w, uint64_t *peak) {
    size_t n = g->n_nodes, nt = g->n_tensors;
    *peak = 0;
    if (!n) return MP_OK;
    for (size_t v = 0; v < n; v++) w->pos[v] = MP_GRAPH_NONE;
    for (size_t s = 0; s < n; s++) {
        if (order[s] >= n)
            return mp__err(MP_EINVAL,
                           "order[%zu]: node %zu does not exist (the graph has %zu nodes)", s,
                           order[s], n);
        if (w->pos[order[s]] != MP_GRAPH_NONE)
            return mp__err(MP_EINVAL, "order[%zu]: node %zu appears twice (also order[%zu])", s,
                           order[s], w->pos[order[s]]);
        w->pos[order[s]] = s;
    }
    uint64_t end = n - 1, total = 0;
    for (size_t t = 0; t < nt; t++) {
        const mp_graph_tensor_t *x = &g->tensor[t];
        w->first[t] = w->last[t] = x->producer == MP_GRAPH_NONE ? 0 : w->pos[x->producer];
    }
    for (size_t v = 0; v < n; v++) {
        const mp_graph_node_t *nd = &g->node[v];
        uint64_t s = w->pos[v];
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t t = nd->inputs[k], p = g->tensor[t].producer, r = g->tensor[t].root;
            if (p != MP_GRAPH_NONE && w->pos[p] >= s)
                return mp__err(MP_EINVAL,
                               "order[%llu]: node %zu '%s' reads tensor %zu '%s' before node %zu "
                               "'%s' (step %zu) produces it",
                               (unsigned long long)s, v, nd->name, t, g->tensor[t].name, p,
                               g->node[p].name, w->pos[p]);
            if (s > w->last[r]) w->last[r] = s;
        }
    }
    for (size_t k = 0; k < g->n_outputs; k++) w->last[g->tensor[g->outputs[k]].root] = end;
    memset(w->diff, 0, (n + 1) * sizeof *w->diff);
    for (size_t t = 0; t < nt; t++) {
        const mp_graph_tensor_t *x = &g->tensor[t];
        if (!recorded(x, include_persistent)) continue;
        uint64_t f = w->first[t], l = w->last[t];
        if (mp__graph_persistent(x->kind)) f = 0, l = end;
        if (x->bytes > UINT64_MAX - total)
            return mp__err(MP_EOVERFLOW, "graph: the recorded tensors exceed 2^64 bytes");
        total += x->bytes;
        /* Unsigned wrap-around is harmless: every prefix sum is a true live
         * total, at most total, which fits. */
        w->diff[f] += x->bytes;
        w->diff[l + 1] -= x->bytes;
    }
    uint64_t run = 0, best = 0;
    for (size_t s = 0; s < n; s++) {
        run += w->diff[s];
        if (run > best) best = run;
    }
    *peak = best;
    return MP_OK;
}

mp_status mp_graph_peak(const mp_graph_t *g, const size_t *order, int include_persistent,
                        uint64_t *peak) {
    peak_ws w;
    if (!g || !peak) return mp__err(MP_EINVAL, "mp_graph_peak: NULL graph or result");
    *peak = 0;
    mp_status st = ws_init(g, &w);
    if (st) return st;
    st = peak_of(g, order ? order : g->order, include_persistent, &w, peak);
    ws_free(&w);
    return st;
}

/* ---- search ------------------------------------------------------------ */

/* Keeps cand in best when its (exact) peak is strictly lower. */
static mp_status consider(const mp_graph_t *g, int incl, peak_ws *w, const size_t *cand,
                          size_t *best, uint64_t *best_peak) {
    uint64_t p;
    mp_status st = peak_of(g, cand, incl, w, &p);
    if (st) return st;
    if (p < *best_peak) {
        *best_peak = p;
        memcpy(best, cand, g->n_nodes * sizeof *best);
    }
    return MP_OK;
}

mp_status mp_graph_order_search(const mp_graph_t *g, const mp_order_opts_t *opts, size_t *order,
                                mp_order_report_t *report) {
    if (!g || (!order && g->n_nodes))
        return mp__err(MP_EINVAL, "mp_graph_order_search: NULL graph or order");
    mp_order_opts_t o = opts ? *opts : (mp_order_opts_t){0};
    if (!o.lookahead) o.lookahead = 2;
    if (!o.max_passes) o.max_passes = 4;
    size_t n = g->n_nodes;
    mp_order_report_t rep = {0};
    if (report) *report = rep;
    memcpy(order, g->order, n * sizeof *order);

    peak_ws w;
    mp__omodel m;
    mp_status st = ws_init(g, &w);
    if (st) return st;
    st = peak_of(g, g->order, o.include_persistent, &w, &rep.given_peak);
    rep.searched_peak = rep.given_peak;
    if (st || n < 2) goto out;
    if ((st = mp__omodel_build(g, &m))) goto out;

    size_t *base = malloc(n * sizeof *base), *cand = malloc(n * sizeof *cand);
    size_t *start = malloc(n * sizeof *start);
    if (!base || !cand || !start) {
        st = MP__NOMEM();
        goto done;
    }
    /* base: the given order, or the nearest order respecting the model's
     * extra edges (root producers) if it does not; none for a model with a
     * cycle, whose graph then keeps its order. */
    if (!mp__omodel_topo(&m, base, &st)) goto done;
    uint64_t start_peak = UINT64_MAX;
    if ((st = consider(g, o.include_persistent, &w, base, start, &start_peak))) goto done;
    if ((st = mp__order_greedy(&m, o.lookahead, cand))) goto done;
    if ((st = consider(g, o.include_persistent, &w, cand, start, &start_peak))) goto done;
    if ((st = mp__order_dfs(&m, base, cand))) goto done;
    if ((st = consider(g, o.include_persistent, &w, cand, start, &start_peak))) goto done;

    /* The given order is the result unless something is strictly lower. */
    uint64_t best_peak = rep.given_peak;
    if ((st = consider(g, o.include_persistent, &w, start, order, &best_peak))) goto done;
    size_t passes = 0;
    bool from_base = !memcmp(base, start, n * sizeof *base);
    if ((st = mp__order_improve(&m, start, o.max_passes, &passes))) goto done;
    rep.passes += passes;
    if ((st = consider(g, o.include_persistent, &w, start, order, &best_peak))) goto done;
    if (!from_base) {
        /* The given order improved on its own may end elsewhere. */
        memcpy(cand, base, n * sizeof *cand);
        if ((st = mp__order_improve(&m, cand, o.max_passes, &passes))) goto done;
        rep.passes += passes;
        if ((st = consider(g, o.include_persistent, &w, cand, order, &best_peak))) goto done;
    }
    rep.searched_peak = best_peak;
done:
    free(base);
    free(cand);
    free(start);
    mp__omodel_free(&m);
out:
    ws_free(&w);
    if (st) memcpy(order, g->order, n * sizeof *order);
    else if (report) *report = rep;
    return st;
}
