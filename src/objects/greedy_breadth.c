/* greedy_breadth.c -- Greedy by Breadth for shared objects (pisarchyk2020
 * sec. 4.2, Alg. 1).
 *
 * Operators are the distinct start times (a profile at any other time is a
 * subset of the one at the latest start before it).  They are visited by
 * breadth non-increasing (ties: earlier time); the not yet assigned buffers
 * of each profile go by size non-increasing (ties: index).  A buffer takes,
 * among the suitable objects (none of their buffers meets its interval),
 * the smallest one at least as large as it; if all are smaller, the largest
 * one, which grows to its size; if none is suitable, a new object.  Alg. 1
 * scans objects in creation order and keeps the first of equal sizes, so
 * ties go to the lower object number.
 *
 * Two interval indexes: one over unassigned buffers lists each profile's
 * remaining buffers (each buffer is reported once over the whole run), one
 * over assigned buffers gives the objects a buffer conflicts with, which
 * are marked and skipped in an ordered set of (size, object).
 * Cost: O(n log n + sum over buffers of (c + 1) log n), c = assigned
 * buffers meeting its interval; the literal form is O(k n^2). */
#include "../core/internal.h"

#include <stdlib.h>

typedef struct bstate {
    const mp_buffer_t *b;
    size_t *object, nobj;
    uint64_t *osize;     /* current size of each object */
    size_t *mark;        /* mark[o] = 1 + buffer for which o conflicts */
    mp__tset bysize;     /* (size, object) of every object */
    mp__itree done;      /* assigned buffers */
    size_t *hits, nhits, caphits;
} bstate;

/* Breadth of every operator time: a difference array over time indices. */
static void breadths(const mp_buffer_t *b, size_t n, const uint64_t *times, size_t m,
                     uint64_t *br) {
    for (size_t t = 0; t <= m; t++) br[t] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t lo = 0, hi = m; /* first time index > last */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (times[mid] <= b[i].last) lo = mid + 1;
            else hi = mid;
        }
        size_t a = 0, z = m; /* index of b[i].first */
        while (a < z) {
            size_t mid = a + (z - a) / 2;
            if (times[mid] < b[i].first) a = mid + 1;
            else z = mid;
        }
        br[a] += b[i].size; /* wraps and unwraps: only prefix sums are used */
        br[lo] -= b[i].size;
    }
    for (size_t t = 1; t < m; t++) br[t] += br[t - 1];
}

/* Marks the objects that conflict with t, and returns the next unmarked
 * key at or after (k1,k2) (dir > 0) or before it (dir < 0). */
static bool unmarked(const bstate *st, size_t t, uint64_t k1, uint64_t k2, int dir,
                     uint64_t *o1, uint64_t *o2) {
    bool ok = dir > 0 ? mp__tset_ceil(&st->bysize, k1, k2, o1, o2)
                      : mp__tset_prev(&st->bysize, k1, k2, o1, o2);
    while (ok && st->mark[*o2] == t + 1)
        ok = dir > 0 ? mp__tset_next(&st->bysize, *o1, *o2, o1, o2)
                     : mp__tset_prev(&st->bysize, *o1, *o2, o1, o2);
    return ok;
}

static mp_status assign(bstate *st, size_t t) {
    const mp_buffer_t *b = st->b;
    st->nhits = 0;
    mp_status s = mp__itree_query(&st->done, b[t].first, b[t].last, &st->hits, &st->nhits,
                                  &st->caphits);
    if (s != MP_OK) return s;
    for (size_t h = 0; h < st->nhits; h++) st->mark[st->object[st->hits[h]]] = t + 1;
    uint64_t sz = b[t].size, k1, k2, o;
    if (unmarked(st, t, sz, 0, +1, &k1, &k2)) {
        o = k2; /* smallest suitable with size >= sz, lowest number */
    } else if (unmarked(st, t, sz, 0, -1, &k1, &k2)) {
        /* largest suitable below sz; the lowest number of that size */
        unmarked(st, t, k1, 0, +1, &k1, &k2);
        o = k2;
        mp__tset_erase(&st->bysize, k1, o);
        st->osize[o] = sz;
        if ((s = mp__tset_insert(&st->bysize, sz, o)) != MP_OK) return s;
    } else {
        o = st->nobj++;
        st->osize[o] = sz;
        st->mark[o] = 0;
        if ((s = mp__tset_insert(&st->bysize, sz, o)) != MP_OK) return s;
    }
    st->object[t] = (size_t)o;
    mp__itree_set(&st->done, t, true);
    return MP_OK;
}

/* Assigns the unassigned buffers live at time tm, largest first. */
static mp_status do_operator(bstate *st, mp__itree *todo, uint64_t tm, size_t **live,
                             size_t *cap, mp__key **kb, size_t *kcap) {
    size_t len = 0;
    mp_status s = mp__itree_query(todo, tm, tm, live, &len, cap);
    if (s == MP_OK) s = mp__grow((void **)kb, kcap, len + 1, sizeof **kb);
    if (s != MP_OK) return s;
    for (size_t j = 0; j < len; j++)
        (*kb)[j] = (mp__key){UINT64_MAX - st->b[(*live)[j]].size, 0, (*live)[j]};
    s = mp__sort_keys(*kb, len);
    for (size_t j = 0; s == MP_OK && j < len; j++) {
        mp__itree_set(todo, (*kb)[j].i, false);
        s = assign(st, (*kb)[j].i);
    }
    return s;
}

mp_status mp__objects_greedy_breadth(const mp_buffer_t *b, size_t n, size_t *object,
                                     size_t *k) {
    *k = 0;
    if (n == 0) return MP_OK;
    bstate st = {.b = b, .object = object};
    mp__tset_init(&st.bysize);
    uint64_t *times = NULL, *br = NULL;
    size_t m = 0, *live = NULL, lcap = 0, kcap = 0;
    mp__key *ops = NULL, *kb = NULL;
    mp__itree todo = {0};
    mp_status s = mp__start_times(b, n, &times, &m);
    if (s == MP_OK) {
        st.osize = malloc(n * sizeof *st.osize);
        st.mark = malloc(n * sizeof *st.mark);
        br = malloc((m + 1) * sizeof *br);
        ops = malloc(m * sizeof *ops);
        if (!st.osize || !st.mark || !br || !ops) s = MP__NOMEM();
    }
    if (s == MP_OK) s = mp__itree_init(&st.done, b, n);
    if (s == MP_OK) s = mp__itree_init(&todo, b, n);
    if (s == MP_OK) {
        for (size_t i = 0; i < n; i++) mp__itree_set(&todo, i, true);
        breadths(b, n, times, m, br);
    }
    if (s == MP_OK) {
        for (size_t t = 0; t < m; t++) ops[t] = (mp__key){UINT64_MAX - br[t], times[t], t};
        s = mp__sort_keys(ops, m);
    }
    for (size_t j = 0; s == MP_OK && j < m; j++)
        s = do_operator(&st, &todo, ops[j].b, &live, &lcap, &kb, &kcap);
    *k = st.nobj;
    mp__itree_free(&st.done);
    mp__itree_free(&todo);
    mp__tset_free(&st.bysize);
    free(st.osize), free(st.mark), free(st.hits);
    free(times), free(br), free(ops), free(live), free(kb);
    return s;
}
