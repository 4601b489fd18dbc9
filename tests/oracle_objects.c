/* oracle_objects.c -- the shared-object strategies written literally, with
 * plain arrays and pairwise checks over all assigned buffers (pisarchyk2020
 * Alg. 1 and 2, sec. 4.4; the MXNet note's box simulation; the min-cost
 * flow network of Lee et al. 2019 solved by Bellman-Ford on an adjacency
 * matrix).  O(k n^2) to O(n^4); for tests and the bench only. */
#include "oracle.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool meets(const mp_buffer_t *x, const mp_buffer_t *y) {
    uint64_t max_first = x->first > y->first ? x->first : y->first;
    uint64_t min_last = x->last < y->last ? x->last : y->last;
    return max_first <= min_last;
}

/* Alg. 1 L.18-23: no buffer assigned to obj meets t. */
static bool suitable(const mp_buffer_t *b, size_t n, const size_t *obj, size_t o, size_t t) {
    for (size_t x = 0; x < n; x++)
        if (obj[x] == o && meets(&b[t], &b[x])) return false;
    return true;
}

/* Buffer order by size non-increasing, ties by index (selection sort). */
static void by_size(const mp_buffer_t *b, size_t n, size_t *ord) {
    for (size_t i = 0; i < n; i++) ord[i] = i;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (b[ord[j]].size > b[ord[i]].size ||
                (b[ord[j]].size == b[ord[i]].size && ord[j] < ord[i])) {
                size_t t = ord[i];
                ord[i] = ord[j];
                ord[j] = t;
            }
}

#define NIL ((size_t)-1)

/* ---- Greedy by Size (Alg. 2) --------------------------------------------- */

mp_status oracle_objects_greedy_size(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k) {
    size_t *ord = malloc((n ? n : 1) * sizeof *ord), nobj = 0;
    if (!ord) return MP_ENOMEM;
    by_size(b, n, ord);
    for (size_t i = 0; i < n; i++) obj[i] = NIL;
    for (size_t r = 0; r < n; r++) {
        size_t t = ord[r], best = NIL;
        for (size_t o = 0; o < nobj; o++)
            if (suitable(b, n, obj, o, t)) best = o; /* L.14-15: the last one wins */
        obj[t] = best == NIL ? nobj++ : best;
    }
    *k = nobj;
    free(ord);
    return MP_OK;
}

/* ---- Greedy by Breadth (Alg. 1) ------------------------------------------ */

mp_status oracle_objects_greedy_breadth(const mp_buffer_t *b, size_t n, size_t *obj,
                                        size_t *k) {
    size_t *ops = malloc((n ? n : 1) * sizeof *ops), *ord = malloc((n ? n : 1) * sizeof *ord);
    uint64_t *br = malloc((n ? n : 1) * sizeof *br), *osz = malloc((n ? n : 1) * sizeof *osz);
    if (!ops || !ord || !br || !osz) {
        free(ops), free(ord), free(br), free(osz);
        return MP_ENOMEM;
    }
    /* Operators: the distinct start times, named by a buffer starting there. */
    size_t m = 0, nobj = 0;
    for (size_t i = 0; i < n; i++) {
        bool dup = false;
        for (size_t j = 0; j < m; j++) dup |= b[ops[j]].first == b[i].first;
        if (dup) continue;
        br[m] = 0;
        for (size_t x = 0; x < n; x++)
            if (b[x].first <= b[i].first && b[i].first <= b[x].last) br[m] += b[x].size;
        ops[m++] = i;
    }
    /* L.4: breadth non-increasing, ties: earlier time. */
    for (size_t i = 0; i < m; i++)
        for (size_t j = i + 1; j < m; j++)
            if (br[j] > br[i] || (br[j] == br[i] && b[ops[j]].first < b[ops[i]].first)) {
                size_t t = ops[i];
                ops[i] = ops[j], ops[j] = t;
                uint64_t u = br[i];
                br[i] = br[j], br[j] = u;
            }
    by_size(b, n, ord);
    for (size_t i = 0; i < n; i++) obj[i] = NIL;
    for (size_t p = 0; p < m; p++) {
        uint64_t tm = b[ops[p]].first;
        for (size_t r = 0; r < n; r++) { /* the profile, largest first */
            size_t t = ord[r];
            if (obj[t] != NIL || b[t].first > tm || tm > b[t].last) continue;
            size_t best = NIL;
            for (size_t o = 0; o < nobj; o++) {
                bool better = true; /* L.11-17 */
                if (best != NIL) {
                    if (osz[best] < b[t].size) {
                        if (osz[o] <= osz[best]) better = false;
                    } else if (osz[o] >= osz[best] || osz[o] < b[t].size) {
                        better = false;
                    }
                }
                if (suitable(b, n, obj, o, t) && better) best = o;
            }
            if (best == NIL) {
                best = nobj++;
                osz[best] = b[t].size;
            } else if (osz[best] < b[t].size) {
                osz[best] = b[t].size;
            }
            obj[t] = best;
        }
    }
    *k = nobj;
    free(ops), free(ord), free(br), free(osz);
    return MP_OK;
}

/* ---- Greedy by Size Improved (sec. 4.4) ---------------------------------- */

/* Distinct positional maxima, descending, from brute-force sorted profiles. */
static size_t positional_maxima(const mp_buffer_t *b, size_t n, uint64_t *pm) {
    uint64_t *prof = malloc((n ? n : 1) * sizeof *prof), *all = calloc(n + 1, sizeof *all);
    size_t depth = 0;
    for (size_t i = 0; prof && all && i < n; i++) { /* operator at b[i].first */
        size_t c = 0;
        for (size_t x = 0; x < n; x++)
            if (b[x].first <= b[i].first && b[i].first <= b[x].last) prof[c++] = b[x].size;
        for (size_t p = 0; p < c; p++) /* sort descending */
            for (size_t q = p + 1; q < c; q++)
                if (prof[q] > prof[p]) {
                    uint64_t t = prof[p];
                    prof[p] = prof[q], prof[q] = t;
                }
        for (size_t p = 0; p < c; p++)
            if (prof[p] > all[p]) all[p] = prof[p];
        if (c > depth) depth = c;
    }
    size_t m = 0;
    for (size_t p = 0; all && p < depth; p++)
        if (m == 0 || all[p] != pm[m - 1]) pm[m++] = all[p];
    free(prof), free(all);
    return m;
}

static size_t stage_of(const uint64_t *pm, size_t m, uint64_t sz) {
    for (size_t j = 0; j < m; j++) {
        if (sz == pm[j]) return 2 * j;
        if (sz > pm[j]) return 2 * j - 1;
    }
    return 2 * m - 1;
}

/* Idle steps between two disjoint intervals. */
static uint64_t gap(const mp_buffer_t *x, const mp_buffer_t *y) {
    return x->last < y->first ? y->first - x->last - 1 : x->first - y->last - 1;
}

mp_status oracle_objects_greedy_size_improved(const mp_buffer_t *b, size_t n, size_t *obj,
                                              size_t *k) {
    uint64_t *pm = malloc((n ? n : 1) * sizeof *pm), *g = malloc((n ? n : 1) * sizeof *g);
    size_t *ord = malloc((n ? n : 1) * sizeof *ord), *stage = malloc((n ? n : 1) * sizeof *stage);
    bool *hit = malloc((n ? n : 1) * sizeof *hit);
    size_t nobj = 0;
    if (!pm || !g || !ord || !stage || !hit) {
        free(pm), free(g), free(ord), free(stage), free(hit);
        return MP_ENOMEM;
    }
    size_t m = positional_maxima(b, n, pm);
    by_size(b, n, ord);
    for (size_t i = 0; i < n; i++) obj[i] = NIL, stage[i] = stage_of(pm, m, b[i].size);
    for (size_t st = 0; st < 2 * m; st++) {
        for (;;) {
            size_t bt = NIL, bo = NIL, left = 0;
            uint64_t bg = 0;
            for (size_t t = 0; t < n; t++) {
                if (obj[t] != NIL || stage[t] != st) continue;
                left++;
                /* every assigned x against t: does its object meet t, and
                 * how close is it */
                for (size_t o = 0; o < nobj; o++) hit[o] = false, g[o] = UINT64_MAX;
                for (size_t x = 0; x < n; x++) {
                    if (obj[x] == NIL) continue;
                    if (meets(&b[t], &b[x])) hit[obj[x]] = true;
                    else if (gap(&b[t], &b[x]) < g[obj[x]]) g[obj[x]] = gap(&b[t], &b[x]);
                }
                for (size_t o = 0; o < nobj; o++)
                    if (!hit[o] && (bt == NIL || g[o] < bg)) /* t, o ascending: first wins */
                        bt = t, bo = o, bg = g[o];
            }
            if (left == 0) break;
            if (bt == NIL) { /* the largest remaining opens an object */
                for (size_t r = 0; r < n && bt == NIL; r++)
                    if (obj[ord[r]] == NIL && stage_of(pm, m, b[ord[r]].size) == st) bt = ord[r];
                bo = nobj++;
            }
            obj[bt] = bo;
        }
    }
    *k = nobj;
    free(pm), free(g), free(ord), free(stage), free(hit);
    return MP_OK;
}

/* ---- MXNet box simulation ------------------------------------------------ */

mp_status oracle_objects_inorder(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k) {
    enum { RANGE = 16 }; /* nnvm's NNVM_EXEC_MATCH_RANGE default */
    uint64_t *osz = malloc((n ? n : 1) * sizeof *osz);
    bool *freeo = malloc((n ? n : 1) * sizeof *freeo), *gone = calloc(n + 1, sizeof *gone);
    if (!osz || !freeo || !gone) {
        free(osz), free(freeo), free(gone);
        return MP_ENOMEM;
    }
    size_t nobj = 0;
    for (size_t i = 0; i < n; i++) obj[i] = NIL;
    uint64_t now = 0;
    bool any = false;
    for (;;) { /* next start time after `now` */
        uint64_t next = UINT64_MAX;
        bool found = false;
        for (size_t i = 0; i < n; i++)
            if ((!any || b[i].first > now) && (!found || b[i].first < next))
                next = b[i].first, found = true;
        if (!found) break;
        now = next, any = true;
        for (size_t x = 0; x < n; x++) /* ended lives free their objects */
            if (obj[x] != NIL && !gone[x] && b[x].last < now) gone[x] = true, freeo[obj[x]] = true;
        for (size_t t = 0; t < n; t++) {
            if (b[t].first != now) continue;
            uint64_t need = b[t].size, hi = need > UINT64_MAX / RANGE ? UINT64_MAX : need * RANGE;
            size_t best = NIL;
            for (size_t o = 0; o < nobj; o++) /* smallest >= need, lowest number */
                if (freeo[o] && osz[o] >= need && osz[o] <= hi &&
                    (best == NIL || osz[o] < osz[best]))
                    best = o;
            if (best == NIL) { /* else the largest < need, highest number */
                size_t cand = NIL;
                for (size_t o = 0; o < nobj; o++)
                    if (freeo[o] && osz[o] < need && osz[o] >= need / RANGE &&
                        (cand == NIL || osz[o] >= osz[cand]))
                        cand = o;
                if (cand != NIL) osz[cand] = need;
                best = cand;
            }
            if (best == NIL) {
                best = nobj++;
                osz[best] = need;
            }
            freeo[best] = false;
            obj[t] = best;
        }
    }
    *k = nobj;
    free(osz), free(freeo), free(gone);
    return MP_OK;
}

/* ---- min-cost flow ---------------------------------------------------------
 * The TFLite network built literally: vertex S = 2n, T = 2n+1, L_i = i,
 * R_i = n+i, capacity-1 edges S->L_i (0), S->R_i (size_i), L_j->R_i
 * (max(0, size_i - size_j)) for last_j < first_i, R_i->T (0).  Successive
 * shortest S-T paths by Bellman-Ford over the residual adjacency matrix,
 * one unit at a time until T is unreachable.  Equal-cost optima are common
 * (e.g. two equal buffers can swap successors), and this solver and the
 * shipped one break such ties differently, so tests compare the flow cost
 * and validity, not object numbers. */

typedef __int128 i128;

mp_status oracle_objects_mincostflow(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k) {
    size_t V = 2 * n + 2, S = 2 * n, T = 2 * n + 1;
    bool *edge = calloc(V * V, sizeof *edge), *flow = calloc(V * V, sizeof *flow);
    i128 *cost = calloc(V * V, sizeof *cost), *dist = malloc(V * sizeof *dist);
    size_t *pred = malloc(V * sizeof *pred);
    bool *seen = malloc(V * sizeof *seen), *dirty = malloc(V * sizeof *dirty);
    if (!edge || !flow || !cost || !dist || !pred || !seen || !dirty) {
        free(edge), free(flow), free(cost), free(dist), free(pred), free(seen), free(dirty);
        return MP_ENOMEM;
    }
#define AT(u, v) ((u) * V + (v))
    for (size_t i = 0; i < n; i++) {
        edge[AT(S, i)] = true;
        edge[AT(S, n + i)] = true, cost[AT(S, n + i)] = b[i].size;
        edge[AT(n + i, T)] = true;
        for (size_t j = 0; j < n; j++)
            if (b[j].last < b[i].first) {
                edge[AT(j, n + i)] = true;
                cost[AT(j, n + i)] = b[i].size > b[j].size ? b[i].size - b[j].size : 0;
            }
    }
    /* Neighbour lists (either direction) so a Bellman-Ford round costs
     * O(edges), not O(V^2). */
    size_t *deg = calloc(V, sizeof *deg), *adj = malloc(V * V * sizeof *adj);
    if (!deg || !adj) {
        free(edge), free(flow), free(cost), free(dist), free(pred), free(seen), free(dirty);
        free(deg), free(adj);
        return MP_ENOMEM;
    }
    for (size_t u = 0; u < V; u++)
        for (size_t v = 0; v < V; v++)
            if (edge[AT(u, v)] || edge[AT(v, u)]) adj[AT(u, deg[u]++)] = v;
    for (;;) {
        for (size_t v = 0; v < V; v++) seen[v] = dirty[v] = false, dist[v] = 0, pred[v] = NIL;
        seen[S] = dirty[S] = true;
        bool changed = true;
        for (size_t round = 0; changed && round < V; round++) {
            changed = false; /* a round relaxes the vertices improved since */
            for (size_t u = 0; u < V; u++) {
                if (!dirty[u]) continue;
                dirty[u] = false;
                for (size_t a = 0; a < deg[u]; a++) {
                    size_t v = adj[AT(u, a)];
                    i128 c; /* residual edge u->v: unused forward or used backward */
                    if (edge[AT(u, v)] && !flow[AT(u, v)]) c = cost[AT(u, v)];
                    else if (edge[AT(v, u)] && flow[AT(v, u)]) c = -cost[AT(v, u)];
                    else continue;
                    if (v != S && (!seen[v] || dist[u] + c < dist[v])) {
                        dist[v] = dist[u] + c, pred[v] = u, seen[v] = dirty[v] = true;
                        changed = true;
                    }
                }
            }
        }
        if (!seen[T]) break;
        for (size_t v = T; v != S; v = pred[v]) {
            size_t u = pred[v];
            if (edge[AT(u, v)]) flow[AT(u, v)] = true;
            else flow[AT(v, u)] = false;
        }
    }
    /* Objects: chains from buffers fed by S, heads in (first, index) order. */
    size_t nobj = 0;
    for (size_t i = 0; i < n; i++) obj[i] = NIL;
    for (;;) {
        size_t h = NIL;
        for (size_t i = 0; i < n; i++)
            if (obj[i] == NIL && flow[AT(S, n + i)] &&
                (h == NIL || b[i].first < b[h].first))
                h = i;
        if (h == NIL) break;
        for (size_t x = h; x != NIL;) {
            obj[x] = nobj;
            size_t nx = NIL;
            for (size_t i = 0; i < n; i++)
                if (flow[AT(x, n + i)]) nx = i;
            x = nx;
        }
        nobj++;
    }
#undef AT
    *k = nobj;
    free(edge), free(flow), free(cost), free(dist), free(pred), free(seen), free(dirty);
    free(deg), free(adj);
    return MP_OK;
}
