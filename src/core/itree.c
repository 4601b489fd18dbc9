/* itree.c -- interval index: which active buffers meet [lo, hi]?
 *
 * Leaves are the buffers sorted by (first, index); each node keeps 1 + the
 * largest `last` among its active leaves (0 when none is active).  Buffers
 * with first <= hi form a prefix of the leaves; within it we descend only
 * into nodes whose max last reaches lo, so a query costs O((k + 1) log n)
 * for k answers.  Switching a buffer on or off updates one root path.
 * First fit (mp__itree_first_fit) sorts the k answers by offset and walks
 * up from 0 to the first gap that holds the buffer. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

mp_status mp__itree_init(mp__itree *t, const mp_buffer_t *b, size_t n) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->b = b;
    t->cap = 1;
    while (t->cap < n) t->cap *= 2;
    t->order = malloc((n ? n : 1) * sizeof *t->order);
    t->pos = malloc((n ? n : 1) * sizeof *t->pos);
    t->maxlast1 = calloc(2 * t->cap, sizeof *t->maxlast1);
    /* The DFS holds at most two frames per level (65 levels for any
     * size_t) of three words each. */
    t->stack = malloc(3 * 132 * sizeof *t->stack);
    if (!t->order || !t->pos || !t->maxlast1 || !t->stack) {
        mp__itree_free(t);
        return MP__NOMEM();
    }
    mp_status s = mp__order_by_first(b, n, t->order);
    if (s != MP_OK) {
        mp__itree_free(t);
        return s;
    }
    for (size_t p = 0; p < n; p++) t->pos[t->order[p]] = p;
    return MP_OK;
}

void mp__itree_free(mp__itree *t) {
    free(t->order);
    free(t->pos);
    free(t->maxlast1);
    free(t->stack);
    memset(t, 0, sizeof *t);
}

void mp__itree_set(mp__itree *t, size_t i, bool active) {
    size_t v = t->cap + t->pos[i];
    t->maxlast1[v] = active ? t->b[i].last + 1 : 0;
    for (v /= 2; v >= 1; v /= 2) t->maxlast1[v] = mp__max64(t->maxlast1[2 * v], t->maxlast1[2 * v + 1]);
}

/* Number of leaves whose buffer starts at or before hi. */
static size_t prefix_len(const mp__itree *t, uint64_t hi) {
    size_t lo = 0, up = t->n;
    while (lo < up) {
        size_t mid = lo + (up - lo) / 2;
        if (t->b[t->order[mid]].first <= hi) lo = mid + 1;
        else up = mid;
    }
    return lo;
}

mp_status mp__itree_query(mp__itree *t, uint64_t lo, uint64_t hi, size_t **out, size_t *len,
                          size_t *cap) {
    size_t p = prefix_len(t, hi);
    if (p == 0 || t->n == 0) return MP_OK;
    /* DFS over nodes; a node at `level` covers leaves [l, l + (cap >> level))
     * and is entered only if it starts inside the prefix and its max last
     * reaches lo.  Frames are (node, l, level) triples; the right child is
     * pushed first so answers come out in leaf order. */
    size_t sp = 0, *st = t->stack;
    st[sp++] = 1, st[sp++] = 0, st[sp++] = 0;
    while (sp) {
        size_t level = st[--sp], l = st[--sp], v = st[--sp];
        if (t->maxlast1[v] < lo + 1 || l >= p) continue;
        if (v >= t->cap) {
            mp_status s = mp__grow((void **)out, cap, *len + 1, sizeof **out);
            if (s != MP_OK) return s;
            (*out)[(*len)++] = t->order[v - t->cap];
            continue;
        }
        size_t half = (t->cap >> level) / 2;
        st[sp++] = 2 * v + 1, st[sp++] = l + half, st[sp++] = level + 1;
        st[sp++] = 2 * v, st[sp++] = l, st[sp++] = level + 1;
    }
    return MP_OK;
}

mp_status mp__itree_first_fit(mp__itree *t, const uint64_t *off, size_t i, mp__fit_scratch *sc,
                              uint64_t *at) {
    const mp_buffer_t *bi = &t->b[i];
    sc->len = 0;
    mp_status s = mp__itree_query(t, bi->first, bi->last, &sc->q, &sc->len, &sc->cap);
    if (s == MP_OK) s = mp__grow((void **)&sc->keys, &sc->kcap, sc->len + 1, sizeof *sc->keys);
    if (s != MP_OK) return s;
    for (size_t k = 0; k < sc->len; k++) sc->keys[k] = (mp__key){off[sc->q[k]], 0, sc->q[k]};
    if ((s = mp__sort_keys(sc->keys, sc->len)) != MP_OK) return s;
    uint64_t a = bi->align ? bi->align : 1, pos = 0;
    for (size_t k = 0; k < sc->len; k++) {
        size_t j = sc->keys[k].i;
        if (off[j] >= pos && off[j] - pos >= bi->size) break; /* the gap below j holds it */
        uint64_t e = off[j] + t->b[j].size;
        if (e > pos) pos = (e + a - 1) / a * a;
    }
    *at = pos;
    return MP_OK;
}

void mp__fit_scratch_free(mp__fit_scratch *sc) {
    free(sc->q), free(sc->keys);
    memset(sc, 0, sizeof *sc);
}
