/* greedy_breadth.c -- Greedy by Breadth for Offset Calculation
 * (pisarchyk2020 sec. 5.3).
 *
 * Operators are visited by breadth (sum of sizes live at them) largest
 * first, ties earlier first; each operator's not yet placed live buffers are
 * placed largest first (ties: input order) into the smallest fitting gap,
 * exactly as greedy-size does (the shared placer in gapfit.c).
 *
 * The operators are the distinct start times (see mp__start_times).  All
 * breadths come from one sweep over the buffers sorted by first and by last,
 * O(n log n).  A second interval index holds the unplaced buffers: a
 * stabbing query at an operator reports its unplaced live buffers, which
 * are placed and switched off at once, so each buffer is reported once and
 * the whole order costs O(n log n); placing adds the placer's cost. */
#include "gapfit.h"

#include <stdlib.h>

/* br[j] = sum of sizes of buffers live at times[j] (sorted, distinct). */
static mp_status breadths(const mp_buffer_t *b, size_t n, const uint64_t *times, size_t m,
                          uint64_t *br) {
    size_t *by_first = malloc((n ? n : 1) * sizeof *by_first);
    mp__key *by_last = malloc((n ? n : 1) * sizeof *by_last);
    mp_status s = (by_first && by_last) ? MP_OK : MP__NOMEM();
    if (s == MP_OK) s = mp__order_by_first(b, n, by_first);
    for (size_t i = 0; s == MP_OK && i < n; i++) by_last[i] = (mp__key){b[i].last, 0, i};
    if (s == MP_OK) s = mp__sort_keys(by_last, n);
    /* A buffer with last < T also has first < T, so it was added before it
     * is taken away: the running sum never underflows. */
    uint64_t sum = 0;
    for (size_t j = 0, p = 0, q = 0; s == MP_OK && j < m; j++) {
        for (; p < n && b[by_first[p]].first <= times[j]; p++) sum += b[by_first[p]].size;
        for (; q < n && by_last[q].a < times[j]; q++) sum -= b[by_last[q].i].size;
        br[j] = sum;
    }
    free(by_first);
    free(by_last);
    return s;
}

/* Operators (indices into times) by breadth non-increasing, ties by time. */
static mp_status operator_order(const uint64_t *times, const uint64_t *br, size_t m,
                                mp__key *ops) {
    for (size_t j = 0; j < m; j++) ops[j] = (mp__key){~br[j], times[j], j};
    return mp__sort_keys(ops, m);
}

/* Places the unplaced buffers live at time t, largest first. */
static mp_status place_operator(mp__gapfit *g, mp__itree *unplaced, uint64_t t, size_t **live,
                                size_t *live_cap, mp__key **key, size_t *key_cap) {
    size_t k = 0;
    mp_status s = mp__itree_query(unplaced, t, t, live, &k, live_cap);
    if (s == MP_OK) s = mp__grow((void **)key, key_cap, k, sizeof **key);
    if (s != MP_OK) return s;
    for (size_t j = 0; j < k; j++) (*key)[j] = (mp__key){~g->b[(*live)[j]].size, 0, (*live)[j]};
    if ((s = mp__sort_keys(*key, k)) != MP_OK) return s;
    for (size_t j = 0; j < k; j++) {
        if ((s = mp__gapfit_place(g, (*key)[j].i)) != MP_OK) return s;
        mp__itree_set(unplaced, (*key)[j].i, false);
    }
    return MP_OK;
}

static mp_status place_all(const mp_buffer_t *b, size_t n, const uint64_t *times,
                           const mp__key *ops, size_t m, uint64_t *offset) {
    mp__gapfit g;
    mp__itree unplaced;
    size_t *live = NULL, live_cap = 0, key_cap = 0;
    mp__key *key = NULL;
    mp_status s = mp__gapfit_init(&g, b, n, offset, MP__GAP_PISARCHYK);
    mp_status s2 = mp__itree_init(&unplaced, b, n);
    if (s == MP_OK) s = s2;
    for (size_t i = 0; s == MP_OK && i < n; i++) mp__itree_set(&unplaced, i, true);
    for (size_t j = 0; s == MP_OK && j < m; j++)
        s = place_operator(&g, &unplaced, times[ops[j].i], &live, &live_cap, &key, &key_cap);
    free(live);
    free(key);
    mp__itree_free(&unplaced);
    mp__gapfit_free(&g);
    return s;
}

/* Greedy by Breadth (offsets) on a normalized problem. */
mp_status mp__offsets_greedy_breadth(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    uint64_t *times, *br = NULL;
    size_t m;
    mp__key *ops = NULL;
    mp_status s = mp__start_times(b, n, &times, &m);
    if (s != MP_OK) return s;
    br = malloc((m ? m : 1) * sizeof *br);
    ops = malloc((m ? m : 1) * sizeof *ops);
    if (!br || !ops) s = MP__NOMEM();
    if (s == MP_OK) s = breadths(b, n, times, m, br);
    if (s == MP_OK) s = operator_order(times, br, m, ops);
    if (s == MP_OK) s = place_all(b, n, times, ops, m, offset);
    free(times);
    free(br);
    free(ops);
    return s;
}
