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

/* The counts per time, in blocks of TB times, under a max tree over the
 * blocks.  Counts are at most n < 2^32, so a tree node is two 32-bit
 * words side by side, its max and tag on one cache line.  A range add
 * walks the counts of its two end blocks (contiguous: a cache line or
 * four each) and tags the whole blocks between in the tree, which has
 * only m / TB leaves and so stays in cache: the walks touch times at
 * random, and cache misses were most of this bound's time with a tree
 * over single times. */
enum { TB = 64 };

typedef struct mtnode {
    uint32_t mx, add;     /* mx = max over the subtree, add included */
} mtnode;

typedef struct maxtree {
    size_t m, cap;        /* times; leaves (blocks, a power of two) */
    uint32_t *cnt;        /* per time: count, less the adds of whole blocks */
    mtnode *t;            /* leaf cap + b: mx = max of block b's counts + add */
} maxtree;

static mp_status maxtree_init(maxtree *t, size_t m) {
    t->m = m;
    t->cap = 1;
    while (t->cap * TB < m) t->cap *= 2;
    t->cnt = calloc(m, sizeof *t->cnt);
    t->t = calloc(2 * t->cap, sizeof *t->t);
    return t->cnt && t->t ? MP_OK : MP__NOMEM();
}

static inline uint32_t max32(uint32_t a, uint32_t b) { return a > b ? a : b; }

static void refresh_up(mtnode *x, size_t v) {
    for (; v >= 1; v /= 2) x[v].mx = max32(x[2 * v].mx, x[2 * v + 1].mx) + x[v].add;
}

/* Adds 1 to the counts of times [l, r], all in block b. */
static void block_inc(maxtree *t, size_t l, size_t r) {
    mtnode *leaf = &t->t[t->cap + l / TB];
    uint32_t mx = leaf->mx - leaf->add;
    for (size_t i = l; i <= r; i++) mx = max32(mx, ++t->cnt[i]);
    if (mx + leaf->add == leaf->mx) return; /* nothing above changes */
    leaf->mx = mx + leaf->add;
    refresh_up(t->t, (t->cap + l / TB) / 2);
}

/* Adds 1 to blocks [l, r] (inclusive) in the tree, bottom-up: tag the
 * O(log) canonical nodes, then refresh the maxima on the two boundary
 * paths, which join below the root: from there one path is refreshed. */
static void blocks_inc(maxtree *t, size_t l, size_t r) {
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
    refresh_up(x, a);
}

/* Adds 1 to times [l, r] (inclusive). */
static void maxtree_inc(maxtree *t, size_t l, size_t r) {
    size_t bl = l / TB, br = r / TB;
    if (bl == br) {
        block_inc(t, l, r);
        return;
    }
    block_inc(t, l, bl * TB + TB - 1);
    block_inc(t, br * TB, r);
    if (bl + 1 < br) blocks_inc(t, bl + 1, br - 1);
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
    /* The spans ride in b (both < 2^32): no random reads after the sort.
     * The order among equal sizes does not matter. */
    if (s == MP_OK) {
        for (size_t i = 0; i < n; i++)
            k[i] = (mp__key){UINT64_MAX - b[i].size, (uint64_t)span[2 * i] << 32 | span[2 * i + 1], i};
        s = mp__sort_keys_a(k, n);
    }
    uint64_t sum = 0;
    for (size_t j = 0; s == MP_OK && j < n;) {
        uint64_t sz = UINT64_MAX - k[j].a;
        for (; j < n && UINT64_MAX - k[j].a == sz; j++)
            maxtree_inc(&t, k[j].b >> 32, k[j].b & UINT32_MAX);
        uint64_t next = j < n ? UINT64_MAX - k[j].a : 0;
        sum += (uint64_t)t.t[1].mx * (sz - next);
    }
    *out = sum;
    free(k);
    free(t.cnt);
    free(t.t);
    return s;
}

/* Sweep: +size at first, -size at last+1, retirements first at equal
 * times (inclusive lifetimes).  Gives the peak of live bytes and of live
 * buffers.  Starts and retirements are sorted apart (starts often are in
 * order already) and merged; sizes ride in b, so the sweep reads the
 * events alone. */
static mp_status sweep(const mp_buffer_t *b, size_t n, uint64_t *bytes, uint64_t *count) {
    mp__key *st = malloc((n ? n : 1) * sizeof *st), *en = malloc((n ? n : 1) * sizeof *en);
    mp_status s = st && en ? MP_OK : MP__NOMEM();
    for (size_t i = 0; s == MP_OK && i < n; i++) {
        st[i] = (mp__key){b[i].first, b[i].size, i};
        en[i] = (mp__key){b[i].last + 1, b[i].size, i};
    }
    if (s == MP_OK) s = mp__sort_keys_a(st, n);
    if (s == MP_OK) s = mp__sort_keys_a(en, n);
    uint64_t live = 0, peak = 0, k = 0, peak_k = 0;
    for (size_t x = 0, y = 0; s == MP_OK && x < n;) {
        if (en[y].a <= st[x].a) { /* y < n: every start ends later */
            live -= en[y++].b, k--;
        } else {
            live += st[x++].b, k++;
            peak = mp__max64(peak, live), peak_k = mp__max64(peak_k, k);
        }
    }
    free(st);
    free(en);
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

mp_status mp__load_peak(const mp_buffer_t *b, size_t n, bool aligned, uint64_t *peak, uint64_t *t) {
    *peak = *t = 0;
    if (!n) return MP_OK;
    mp__key *k = malloc(2 * n * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        k[2 * i] = (mp__key){b[i].first, 1, i};
        k[2 * i + 1] = (mp__key){b[i].last + 1, 0, i};   /* last < UINT64_MAX */
    }
    mp_status st = mp__sort_keys(k, 2 * n);
    uint64_t live = 0;
    for (size_t j = 0; st == MP_OK && j < 2 * n; j++) {
        uint64_t sz = aligned ? mp_buffer_aligned_size(&b[k[j].i]) : 0;
        if (!sz) sz = b[k[j].i].size;
        live = k[j].b ? live + sz : live - sz;
        if (live > *peak) *peak = live, *t = k[j].a;
    }
    free(k);
    return st;
}
