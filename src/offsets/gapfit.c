/* gapfit.c -- the placer behind greedy-size, greedy-breadth and SmartPool.
 *
 * Buffers are placed one at a time in an order the strategy chooses.  To
 * place t we ask the interval index of placed buffers for those whose
 * lifetime meets t's, sort them by (offset, index) and walk them as
 * pisarchyk2020 Alg. 3 L.7-20 does: prev is the highest end seen so far, a
 * gap is [prev, offset_x) and fits t when align_up(prev) + size_t <= offset_x.
 * The walk visits exactly the free address ranges over t's lifetime below
 * the highest conflicting end, lowest first; the policy picks one of them
 * (see gapfit.h), else t goes at align_up(highest conflicting end).
 *
 * Cost per buffer: O((k + 1) log n) for the query and O(k log k) for the
 * sort, k = number of conflicting placed buffers.  On DNN-shaped inputs k
 * is small, so a whole plan is O(n log n); in the worst case (every buffer
 * conflicting with every other) it is O(n^2 log n), like Alg. 3 itself. */
#include "gapfit.h"

#include <stdlib.h>
#include <string.h>

mp_status mp__gapfit_init(mp__gapfit *g, const mp_buffer_t *b, size_t n, uint64_t *offset,
                          mp__gap_policy policy) {
    memset(g, 0, sizeof *g);
    g->b = b;
    g->offset = offset;
    g->policy = policy;
    return mp__itree_init(&g->placed, b, n);
}

void mp__gapfit_free(mp__gapfit *g) {
    mp__itree_free(&g->placed);
    free(g->hit);
    free(g->key);
    memset(g, 0, sizeof *g);
}

/* The offset for t given its conflicting placed buffers x[0..k) sorted by
 * (offset, index).  Gap sizes are raw (offset_x - prev), as in Alg. 3 L.14;
 * alignment only decides whether t fits and where in the gap it starts. */
static uint64_t choose(const mp__gapfit *g, size_t t, const mp__key *x, size_t k) {
    const uint64_t a = g->b[t].align, s = g->b[t].size;
    uint64_t prev = 0, best = 0, best_gap = UINT64_MAX;
    bool found = false;
    for (size_t j = 0; j < k; j++) {
        uint64_t ox = x[j].a, cand = mp__align_up(prev, a);
        if (cand < ox && ox - cand >= s) {
            if (g->policy == MP__GAP_SMARTPOOL_FIRST) return cand;
            if (ox - prev < best_gap) { /* strict: ties keep the lower gap */
                best_gap = ox - prev;
                best = cand;
                found = true;
            }
        }
        prev = mp__max64(prev, ox + g->b[x[j].i].size);
    }
    /* SmartPool also counts the hole [prev, pool_top) between the highest
     * conflicting buffer and the top of the pool.  For first fit it is the
     * same offset as extending the pool, so only best fit needs it. */
    if (g->policy == MP__GAP_SMARTPOOL_BEST && prev < g->top) {
        uint64_t cand = mp__align_up(prev, a);
        if (cand < g->top && g->top - cand >= s && g->top - prev < best_gap) return cand;
    }
    return found ? best : mp__align_up(prev, a);
}

/* Number of leaves of the index whose buffer starts at or before t's last.
 * Leaves are sorted by first and t's own leaf qualifies, so we gallop right
 * from it: O(log d) reads near t for a prefix that ends d leaves later. */
static size_t prefix_after(const mp__itree *it, size_t t) {
    const uint64_t hi = it->b[t].last;
    size_t ok = it->pos[t], step = 1, bad = ok + 1;
    while (bad < it->n && it->b[it->order[bad]].first <= hi) {
        ok = bad;
        step *= 2;
        bad = ok + step < it->n ? ok + step : it->n;
    }
    while (bad - ok > 1) { /* first(ok) <= hi; bad == n or first(bad) > hi */
        size_t mid = ok + (bad - ok) / 2;
        if (it->b[it->order[mid]].first <= hi) ok = mid;
        else bad = mid;
    }
    return bad;
}

/* Reports the active leaves below node v whose last reaches lo. */
static mp_status report_below(mp__gapfit *g, size_t v, uint64_t lo) {
    const mp__itree *it = &g->placed;
    size_t sp = 0, stack[130];
    stack[sp++] = v;
    while (sp) {
        v = stack[--sp];
        if (v >= it->cap) {
            mp_status s = mp__grow((void **)&g->hit, &g->hit_cap, g->hit_len + 1, sizeof *g->hit);
            if (s != MP_OK) return s;
            g->hit[g->hit_len++] = it->order[v - it->cap];
            continue;
        }
        if (it->maxlast1[2 * v] > lo) stack[sp++] = 2 * v;
        if (it->maxlast1[2 * v + 1] > lo) stack[sp++] = 2 * v + 1;
    }
    return MP_OK;
}

/* Fills g->hit with the placed buffers whose lifetime meets t's.  The same
 * answer as mp__itree_query on g->placed, found bottom-up: the prefix of
 * leaves starting by t's last is split into O(log n) whole subtrees from
 * t's end of the tree outward, and only subtrees whose largest active last
 * reaches t's first are entered.  Starting next to t rather than at the
 * root keeps the reads local, which matters when buffers come in an order
 * unrelated to time (greedy-size visits times at random). */
static mp_status conflicts(mp__gapfit *g, size_t t) {
    const mp__itree *it = &g->placed;
    const uint64_t lo = g->b[t].first;
    g->hit_len = 0;
    size_t l = it->cap, r = it->cap + prefix_after(it, t);
    for (; l < r; l /= 2, r /= 2) {
        mp_status s = MP_OK;
        if ((r & 1) && it->maxlast1[r - 1] > lo) s = report_below(g, r - 1, lo);
        if (s == MP_OK && (l & 1) && it->maxlast1[l] > lo) s = report_below(g, l, lo);
        if (s != MP_OK) return s;
        l += l & 1;
    }
    return MP_OK;
}

mp_status mp__gapfit_place(mp__gapfit *g, size_t t) {
    const mp_buffer_t *bt = &g->b[t];
    mp_status s = conflicts(g, t);
    if (s != MP_OK) return s;
    size_t k = g->hit_len;
    if ((s = mp__grow((void **)&g->key, &g->key_cap, k, sizeof *g->key)) != MP_OK) return s;
    for (size_t j = 0; j < k; j++) g->key[j] = (mp__key){g->offset[g->hit[j]], 0, g->hit[j]};
    if ((s = mp__sort_keys(g->key, k)) != MP_OK) return s;
    uint64_t off = choose(g, t, g->key, k);
    g->offset[t] = off;
    g->top = mp__max64(g->top, off + bt->size);
    mp__itree_set(&g->placed, t, true);
    return MP_OK;
}

mp_status mp__gapfit_run(const mp_buffer_t *b, size_t n, const size_t *order,
                         mp__gap_policy policy, uint64_t *offset) {
    mp__gapfit g;
    mp_status s = mp__gapfit_init(&g, b, n, offset, policy);
    for (size_t i = 0; s == MP_OK && i < n; i++) s = mp__gapfit_place(&g, order[i]);
    mp__gapfit_free(&g);
    return s;
}

mp_status mp__order_by_size_desc(const mp_buffer_t *b, size_t n, size_t *idx) {
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    /* Complementing the size turns the ascending sort into a descending one
     * while the index still breaks ties upward. */
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){~b[i].size, 0, i};
    mp_status s = mp__sort_keys(k, n);
    if (s == MP_OK)
        for (size_t i = 0; i < n; i++) idx[i] = k[i].i;
    free(k);
    return s;
}
