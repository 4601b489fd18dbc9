/* order_dfs.c -- a memory-first depth-first order (one candidate of
 * mp_graph_order_search), after Sethi and Ullman's rule for trees: of the
 * subtrees a node needs, evaluate first the one whose peak exceeds what it
 * leaves behind by the most, so big transients happen while little is held.
 *
 * need(v), in topological order, treats v's predecessors c_1..c_k (sorted
 * by need(c) - held(c), largest first, ties by given position) as separate
 * subtrees each leaving held(c) bytes behind:
 *
 *     need(v) = max( max_i (held(c_1) + ... + held(c_{i-1}) + need(c_i)),
 *                    held(c_1) + ... + held(c_k) + alloc(v) ).
 *
 * Exact on trees; on DAGs shared subtrees are counted once per parent, a
 * heuristic (the search keeps whichever candidate order is best).  The
 * order is the post-order of a depth-first search from the sinks (in given
 * order) visiting predecessors in that sorted order, each node once.
 * O(n + edges log edges). */
#include "order_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct kid {
    int64_t key;
    size_t gpos, node;
} kid;

static inline bool kid_before(const kid *a, const kid *b) {
    return a->key > b->key || (a->key == b->key && a->gpos < b->gpos);
}

/* Stable bottom-up merge sort of x[0..n) with tmp of the same size. */
static void kid_sort(kid *x, kid *tmp, size_t n) {
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = kid_before(&x[j], &x[i]) ? x[j++] : x[i++];
            while (i < mid) tmp[k++] = x[i++];
            while (j < hi) tmp[k++] = x[j++];
        }
        memcpy(x, tmp, n * sizeof *x);
    }
}

/* Saturating addition: needs are estimates and may add up past 2^63. */
static inline int64_t sat_add(int64_t a, int64_t b) {
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

mp_status mp__order_dfs(const mp__omodel *m, const size_t *topo, size_t *order) {
    size_t n = m->n, ne = m->pred_off[n];
    if (!n) return MP_OK;
    int64_t *need = malloc(n * sizeof *need);
    kid *kids = malloc((ne ? ne : 1) * sizeof *kids);
    kid *tmp = malloc((ne ? ne : 1) * sizeof *tmp);
    size_t *stack = malloc(n * sizeof *stack), *next = malloc(n * sizeof *next);
    size_t *sinks = malloc(n * sizeof *sinks);
    unsigned char *seen = calloc(n, 1);
    if (!need || !kids || !tmp || !stack || !next || !sinks || !seen) {
        free(need);
        free(kids);
        free(tmp);
        free(stack);
        free(next);
        free(sinks);
        free(seen);
        return MP__NOMEM();
    }
    for (size_t s = 0; s < n; s++) {
        size_t v = topo[s], lo = m->pred_off[v], d = m->pred_off[v + 1] - lo;
        for (size_t k = 0; k < d; k++) {
            size_t c = m->pred[lo + k];
            kids[lo + k] = (kid){need[c] - m->held[c], m->gpos[c], c};
        }
        kid_sort(kids + lo, tmp, d);
        int64_t acc = 0, peak = 0;
        for (size_t k = 0; k < d; k++) {
            size_t c = kids[lo + k].node;
            int64_t here = sat_add(acc, need[c]);
            if (here > peak) peak = here;
            acc = sat_add(acc, m->held[c]);
        }
        int64_t top = sat_add(acc, m->alloc[v]);
        need[v] = top > peak ? top : peak;
    }
    /* Sinks in given order (stack[] serves as position -> node until the
     * search starts). */
    size_t *at = stack, ns = 0, k = 0;
    for (size_t v = 0; v < n; v++) at[m->gpos[v]] = v;
    for (size_t p = 0; p < n; p++)
        if (m->succ_off[at[p] + 1] == m->succ_off[at[p]]) sinks[ns++] = at[p];
    for (size_t i = 0; i < ns; i++) {
        size_t root = sinks[i];
        if (seen[root]) continue;
        size_t sp = 0;
        stack[sp++] = root;
        next[root] = m->pred_off[root];
        seen[root] = 1;
        while (sp) {
            size_t v = stack[sp - 1];
            if (next[v] < m->pred_off[v + 1]) {
                size_t c = kids[next[v]++].node;
                if (!seen[c]) {
                    seen[c] = 1;
                    next[c] = m->pred_off[c];
                    stack[sp++] = c;
                }
            } else {
                order[k++] = v;
                sp--;
            }
        }
    }
    free(need);
    free(kids);
    free(tmp);
    free(stack);
    free(next);
    free(sinks);
    free(seen);
    if (k != n) return mp__err(MP_EINVAL, "graph: order search: depth-first order incomplete");
    return MP_OK;
}
