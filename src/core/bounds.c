/* bounds.c -- lower bounds on any plan's footprint, in O(n log n).
 *
 * Offsets: at every operator all live buffers coexist, so no plan is smaller
 * than the largest operator breadth (pisarchyk2020 sec. 5.1).
 * Shared objects: the i-th largest object is at least the i-th positional
 * maximum, so their sum bounds any assignment (pisarchyk2020 sec. 4.1).
 *
 * The offset bound (and the peak count of live buffers) is a sweep over
 * sorted events.  The objects bound comes from a max-tree over the
 * operator times with range add.  For the objects bound, write c(s) = max over time of the
 * number of live buffers of size >= s.  The i-th positional maximum is >= s
 * exactly when c(s) >= i, so the sum of positional maxima equals the sum
 * over distinct sizes s_1 > s_2 > ... of c(s_j) * (s_j - s_{j+1}), s_{m+1} = 0.
 * Inserting buffers in decreasing size with +1 per buffer gives every c(s_j)
 * as the tree's global max. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Counts are at most n < 2^32, so a node is two 32-bit words side by side:
 * the tree (2^21 nodes at 10^6 times) is half the size, and a node's max
 * and tag share a cache line -- the walks below touch nodes at random, and
 * cache misses are most of this bound's time. */
typedef struct mtnode {
    uint32_t mx, add;     /* mx = max over the subtree, add included */
} mtnode;

typedef struct maxtree {
    size_t cap;
    mtnode *t;
} maxtree;

static mp_status maxtree_init(maxtree *t, size_t m) {
    t->cap = 1;
    while (t->cap < m) t->cap *= 2;
    t->t = calloc(2 * t->cap, sizeof *t->t);
    return t->t ? MP_OK : MP__NOMEM();
}

static inline uint32_t max32(uint32_t a, uint32_t b) { return a > b ? a : b; }

/* Adds 1 to positions [l, r] (inclusive), bottom-up: tag the O(log m)
 * canonical nodes, then refresh the maxima on the two boundary paths, which
 * join below the root: from there one path is refreshed. */
static void maxtree_inc(maxtree *t, size_t l, size_t r) {
    mtnode *x = t->t;
    size_t lo = l + t->cap, hi = r + t->cap + 1;
    size_t a = lo / 2, b = (hi - 1) / 2;
    for (; lo < hi; lo /= 2, hi /= 2) {
        if (lo & 1) x[lo].mx++, x[lo++].add++;
        if (hi & 1) --hi, x[hi].mx++, x[hi].add++;
    }
    for (; a != b; a /= 2, b /= 2) {
        x[a].mx = max32(x[2 * a].mx, x[2 * a + 1].mx) + x[a].add;
        x[b].mx = max32(x[2 * b].mx, x[2 * b + 1].mx) + x[b].add;
    }
    for (; a >= 1; a /= 2) x[a].mx = max32(x[2 * a].mx, x[2 * a + 1].mx) + x[a].add;
}

/* span[2i] = index of buffer i's first among the sorted distinct start
 * times, span[2i + 1] = index of the last start time <= its last: one sort
 * of the buffers by first (which also yields the times) and one by last,
 * each with a merged walk.  Returns the times in *times[0..*m). */
static mp_status spans(const mp_buffer_t *b, size_t n, size_t *span, uint64_t **times,
                       size_t *m) {
    mp__key *k = malloc(n * sizeof *k);
    uint64_t *t = malloc(n * sizeof *t);
    mp_status s = k && t ? MP_OK : MP__NOMEM();
    size_t nt = 0;
    if (s == MP_OK) {
        for (size_t i = 0; i < n; i++) k[i] = (mp__key){b[i].first, 0, i};
        s = mp__sort_keys(k, n);
    }
    for (size_t j = 0; s == MP_OK && j < n; j++) {
        if (nt == 0 || t[nt - 1] != k[j].a) t[nt++] = k[j].a;
        span[2 * k[j].i] = nt - 1;
    }
    if (s == MP_OK) {
        for (size_t i = 0; i < n; i++) k[i] = (mp__key){b[i].last, 0, i};
        s = mp__sort_keys(k, n);
    }
    for (size_t j = 0, p = 0; s == MP_OK && j < n; j++) {
        while (p + 1 < nt && t[p + 1] <= k[j].a) p++;
        span[2 * k[j].i + 1] = p;
    }
    free(k);
    if (s != MP_OK) free(t), t = NULL, nt = 0;
    *times = t;
    *m = nt;
    return s;
}

static mp_status objects_bound(const mp_buffer_t *b, size_t n, size_t m, const size_t *span,
                               uint64_t *out) {
    mp__key *k = malloc(n * sizeof *k);
    maxtree t = {0};
    mp_status s = k ? maxtree_init(&t, m) : MP__NOMEM();
    if (s == MP_OK) {
        for (size_t i = 0; i < n; i++) k[i] = (mp__key){UINT64_MAX - b[i].size, 0, i};
        s = mp__sort_keys(k, n);
    }
    uint64_t sum = 0;
    for (size_t j = 0; s == MP_OK && j < n;) {
        uint64_t sz = UINT64_MAX - k[j].a;
        for (; j < n && UINT64_MAX - k[j].a == sz; j++)
            maxtree_inc(&t, span[2 * k[j].i], span[2 * k[j].i + 1]);
        uint64_t next = j < n ? UINT64_MAX - k[j].a : 0;
        sum += (uint64_t)t.t[1].mx * (sz - next);
    }
    *out = sum;
    free(k);
    free(t.t);
    return s;
}

/* Sweep: +size at first, -size at last+1, retirements first at equal
 * times (inclusive lifetimes).  Gives the peak of live bytes and of live
 * buffers. */
static mp_status sweep(const mp_buffer_t *b, size_t n, uint64_t *bytes, uint64_t *count) {
    mp__key *ev = malloc((n ? 2 * n : 1) * sizeof *ev);
    if (!ev) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        ev[2 * i] = (mp__key){b[i].first, 1, 2 * i};
        ev[2 * i + 1] = (mp__key){b[i].last + 1, 0, 2 * i + 1};
    }
    mp_status s = mp__sort_keys(ev, 2 * n);
    uint64_t live = 0, peak = 0, k = 0, peak_k = 0;
    for (size_t e = 0; s == MP_OK && e < 2 * n; e++) {
        const mp_buffer_t *x = &b[ev[e].i / 2];
        if (ev[e].b) {
            live += x->size, k++;
            peak = mp__max64(peak, live), peak_k = mp__max64(peak_k, k);
        } else {
            live -= x->size, k--;
        }
    }
    free(ev);
    *bytes = peak;
    if (count) *count = peak_k;
    return s;
}

mp_status mp__offsets_bound(const mp_buffer_t *b, size_t n, uint64_t *out) {
    return sweep(b, n, out, NULL);
}

mp_status mp_bounds_compute(const mp_buffer_t *b, size_t n, mp_bounds_t *out) {
    memset(out, 0, sizeof *out);
    mp_status s = mp_problem_validate(b, n);
    if (s != MP_OK || n == 0) return s;
    mp_buffer_t *nb = NULL;
    uint64_t *times = NULL;
    size_t m = 0, *span = NULL;
    s = mp__normalize(b, n, &nb);
    if (s == MP_OK && n > UINT32_MAX) s = mp__err(MP_EOVERFLOW, "bounds: more than 2^32 buffers");
    if (s == MP_OK && !(span = malloc(2 * n * sizeof *span))) s = MP__NOMEM();
    if (s == MP_OK) s = spans(nb, n, span, &times, &m);
    for (size_t i = 0; s == MP_OK && i < n; i++) out->naive += nb[i].size;
    if (s == MP_OK) s = sweep(nb, n, &out->offsets, &out->peak_count);
    if (s == MP_OK) s = objects_bound(nb, n, m, span, &out->objects);
    free(span);
    free(times);
    free(nb);
    if (s != MP_OK) memset(out, 0, sizeof *out);
    return s;
}
