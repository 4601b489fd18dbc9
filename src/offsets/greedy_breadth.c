/* greedy_breadth.c -- Greedy by Breadth for Offset Calculation
 * (pisarchyk2020 sec. 5.3).
 *
 * Operators are visited by breadth (sum of sizes live at them) largest
 * first, ties earlier first; each operator's not yet placed live buffers are
 * placed largest first (ties: input order) into the smallest fitting gap,
 * exactly as greedy-size does (the shared placer in gapfit.c).
 *
 * The operators are the distinct start times (see mp__start_times); they
 * are read off the placer's leaves, which are the buffers sorted by first.
 * All breadths come from one sweep over the buffers by first and by last,
 * O(n log n).  A second max tree over the same leaves holds the unplaced
 * buffers: a stabbing query at an operator reports its unplaced live
 * buffers, which are placed and switched off at once, so each buffer is
 * reported once and finding them all costs O(n log n); placing adds the
 * placer's cost. */
#include "gapfit.h"
#include "../strategies/strategies.h"

#include <stdlib.h>
#include <string.h>

/* An operator: its time, the first leaf starting then, its breadth. */
typedef struct op {
    uint64_t time, breadth;
    size_t leaf;
} op;

/* The distinct start times of the leaves (sorted by first) and their
 * breadths: a sweep adding buffers as they start and dropping them once
 * their last is passed.  *ops gets at most n entries. */
static mp_status operators(const mp__gapfit *g, op *ops, size_t *m) {
    const size_t n = g->placed.n;
    mp__key *by_last = malloc((n ? n : 1) * sizeof *by_last);
    if (!by_last) return MP__NOMEM();
    for (size_t j = 0; j < n; j++) by_last[j] = (mp__key){g->lbuf[j].last, 0, j};
    mp_status s = mp__sort_keys(by_last, n);
    /* A buffer with last < T also has first < T, so it was added before it
     * is taken away: the running sum never underflows. */
    uint64_t sum = 0;
    size_t k = 0, q = 0;
    for (size_t j = 0; s == MP_OK && j < n;) {
        uint64_t t = g->lfirst[j];
        size_t start = j;
        for (; j < n && g->lfirst[j] == t; j++) sum += g->lbuf[j].size;
        for (; q < n && by_last[q].a < t; q++) sum -= g->lbuf[by_last[q].i].size;
        ops[k++] = (op){t, sum, start};
    }
    free(by_last);
    *m = k;
    return s;
}

/* Operators by breadth non-increasing, ties by time. */
static mp_status by_breadth(const op *ops, size_t m, mp__key *order) {
    for (size_t j = 0; j < m; j++) order[j] = (mp__key){~ops[j].breadth, ops[j].time, j};
    return mp__sort_keys(order, m);
}

/* The unplaced buffers as a max tree shaped like the placer's index:
 * leaf j holds last + 1 while leaf j is unplaced, 0 after. */
static uint64_t *unplaced_tree(const mp__gapfit *g) {
    const size_t cap = g->placed.cap;
    uint64_t *t = calloc(2 * cap, sizeof *t);
    if (!t) return NULL;
    for (size_t j = 0; j < g->placed.n; j++) t[cap + j] = g->lbuf[j].last + 1;
    for (size_t v = cap - 1; v >= 1; v--) t[v] = mp__max64(t[2 * v], t[2 * v + 1]);
    return t;
}

/* Switches leaf j off; the climb stops where a max no longer changes. */
static void remove_leaf(uint64_t *t, size_t cap, size_t j) {
    size_t v = cap + j;
    t[v] = 0;
    for (v /= 2; v >= 1; v /= 2) {
        uint64_t m = mp__max64(t[2 * v], t[2 * v + 1]);
        if (t[v] == m) break;
        t[v] = m;
    }
}

/* Places the unplaced buffers live at operator o, largest first (ties by
 * buffer index); key is scratch room for n entries. */
static mp_status place_operator(mp__gapfit *g, uint64_t *unplaced, const op *o, mp__key *key) {
    size_t p = mp__gapfit_prefix(g, o->leaf, o->time);
    mp_status s = mp__gapfit_collect(g, unplaced, p, o->time);
    size_t k = g->n_found; /* g->found is reused by each placement: copy */
    for (size_t i = 0; s == MP_OK && i < k; i++) {
        size_t j = g->found[i];
        key[i] = (mp__key){~g->lbuf[j].size, g->placed.order[j], j};
    }
    if (s == MP_OK) s = mp__sort_keys(key, k);
    for (size_t i = 0; s == MP_OK && i < k; i++) {
        s = mp__gapfit_place_leaf(g, key[i].i);
        remove_leaf(unplaced, g->placed.cap, key[i].i);
    }
    return s;
}

/* Greedy by Breadth (offsets) on a normalized problem. */
mp_status mp__offsets_greedy_breadth(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    mp__gapfit g;
    size_t m = 0;
    op *ops = malloc((n ? n : 1) * sizeof *ops);
    mp__key *order = malloc((n ? n : 1) * sizeof *order);
    mp__key *key = malloc((n ? n : 1) * sizeof *key);
    uint64_t *unplaced = NULL;
    mp_status s = mp__gapfit_init(&g, b, n, offset, MP__GAP_PISARCHYK);
    if (s == MP_OK && (!ops || !order || !key || !(unplaced = unplaced_tree(&g))))
        s = MP__NOMEM();
    if (s == MP_OK) s = operators(&g, ops, &m);
    if (s == MP_OK) s = by_breadth(ops, m, order);
    for (size_t i = 0; s == MP_OK && i < m; i++)
        s = place_operator(&g, unplaced, &ops[order[i].i], key);
    if (s == MP_OK) mp__gapfit_finish(&g);
    mp__gapfit_free(&g);
    free(ops), free(order), free(key), free(unplaced);
    return s;
}
