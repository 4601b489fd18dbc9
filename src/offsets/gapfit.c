/* gapfit.c -- the placer behind greedy-size, greedy-breadth and SmartPool.
 *
 * Buffers are placed one at a time in an order the strategy chooses.  To
 * place t we ask the interval index of placed buffers (an mp__itree: leaves
 * are the buffers by (first, index), each node holds 1 + the largest last
 * of the placed buffers below it) for those whose lifetime meets t's, sort
 * them by offset and walk them as pisarchyk2020 Alg. 3 L.7-20 does: prev is
 * the highest end seen so far, a gap is [prev, offset_x) and fits t when
 * align_up(prev) + size_t <= offset_x.
 * The walk visits exactly the free address ranges over t's lifetime below
 * the highest conflicting end, lowest first; the policy picks one of them
 * (see gapfit.h), else t goes at align_up(highest conflicting end).
 *
 * Cost per buffer: O((k + 1) log n) for the query and O(k log k) for the
 * sort, k = number of conflicting placed buffers.  On DNN-shaped inputs k
 * is small, so a whole plan is O(n log n); in the worst case (every buffer
 * conflicting with every other) it is O(n^2 log n), like Alg. 3 itself.
 *
 * Speed (10^6 DNN-shaped buffers, k ~ 13): size order visits times at
 * random, so what a placement reads is kept by leaf of the index (buffers
 * sorted by first), where t's neighbours in time are its neighbours in
 * memory; the query climbs from t's leaf rather than descending from the
 * root and scans the leaves in blocks; only offsets and ends are sorted;
 * placements are prefetched a few ahead.  Together these took placement
 * from ~7 us to ~1.5 us per buffer on the development machine. */
#include "gapfit.h"

#include <stdlib.h>
#include <string.h>

mp_status mp__gapfit_init(mp__gapfit *g, const mp_buffer_t *b, size_t n, uint64_t *offset,
                          mp__gap_policy policy) {
    memset(g, 0, sizeof *g);
    g->offset = offset;
    g->policy = policy;
    mp_status s = mp__itree_init(&g->placed, b, n);
    if (s != MP_OK) return s;
    g->lfirst = malloc((n ? n : 1) * sizeof *g->lfirst);
    g->lbuf = malloc((n ? n : 1) * sizeof *g->lbuf);
    g->lrange = calloc(n ? n : 1, sizeof *g->lrange);
    if (!g->lfirst || !g->lbuf || !g->lrange) return MP__NOMEM();
    for (size_t j = 0; j < n; j++) {
        const mp_buffer_t *x = &b[g->placed.order[j]];
        g->lfirst[j] = x->first;
        g->lbuf[j] = (mp__gapbuf){x->first, x->last, x->size, x->align};
    }
    return MP_OK;
}

void mp__gapfit_free(mp__gapfit *g) {
    mp__itree_free(&g->placed);
    free(g->lfirst);
    free(g->lbuf);
    free(g->lrange);
    free(g->found);
    free(g->hit);
    free(g->tmp);
    memset(g, 0, sizeof *g);
}

/* ---- finding the conflicting placed buffers ------------------------------ */

/* The index is searched down to blocks of BLOCK consecutive leaves, whose
 * leaf values (two cache lines) are then scanned without branching:
 * cheaper than descending the last levels one unpredictable branch at a
 * time.  A power of two. */
enum { BLOCK = 16 };

/* Leaves are sorted by first, so we gallop right from j: O(log d) reads
 * near j for a prefix that ends d leaves later. */
size_t mp__gapfit_prefix(const mp__gapfit *g, size_t j, uint64_t hi) {
    const size_t n = g->placed.n;
    size_t ok = j, step = 1, bad = j + 1;
    while (bad < n && g->lfirst[bad] <= hi) {
        ok = bad;
        step *= 2;
        bad = ok + step < n ? ok + step : n;
    }
    while (bad - ok > 1) { /* first(ok) <= hi; bad == n or first(bad) > hi */
        size_t mid = ok + (bad - ok) / 2;
        if (g->lfirst[mid] <= hi) ok = mid;
        else bad = mid;
    }
    return bad;
}

/* Appends the leaves in [a, b) (b - a <= BLOCK) whose tree value > lo. */
static mp_status scan_leaves(mp__gapfit *g, const uint64_t *tree, size_t a, size_t b,
                             uint64_t lo) {
    if (g->found_cap - g->n_found < BLOCK) {
        mp_status s = mp__grow((void **)&g->found, &g->found_cap, g->n_found + BLOCK,
                               sizeof *g->found);
        if (s != MP_OK) return s;
    }
    const uint64_t *leaf = tree + g->placed.cap;
    size_t len = g->n_found;
    for (size_t j = a; j < b; j++) {
        g->found[len] = j;
        len += leaf[j] > lo;
    }
    g->n_found = len;
    return MP_OK;
}

/* Reports the leaves below node v (covering at least a block) whose value
 * is above lo; every node entered has such a leaf below it. */
static mp_status report_below(mp__gapfit *g, const uint64_t *tree, size_t v, uint64_t lo) {
    const size_t blocks = g->placed.cap / BLOCK; /* nodes >= blocks cover one block */
    size_t sp = 0, stack[2 * 64 + 2];            /* two entries per level at most */
    stack[sp++] = v;
    while (sp) {
        v = stack[--sp];
        if (v >= blocks) {
            size_t a = (v - blocks) * BLOCK;
            mp_status s = scan_leaves(g, tree, a, a + BLOCK, lo);
            if (s != MP_OK) return s;
            continue;
        }
        if (tree[2 * v] > lo) stack[sp++] = 2 * v;
        if (tree[2 * v + 1] > lo) stack[sp++] = 2 * v + 1;
    }
    return MP_OK;
}

/* Bottom-up, unlike mp__itree_query, so that the reads start next to the
 * end of the prefix (t's neighbourhood) rather than at the root: the
 * prefix's partial last block is scanned, the rest split into O(log n)
 * whole subtrees from its right end leftward, and only subtrees whose max
 * is above lo are entered. */
mp_status mp__gapfit_collect(mp__gapfit *g, const uint64_t *tree, size_t p, uint64_t lo) {
    const size_t cap = g->placed.cap, pb = p & ~(size_t)(BLOCK - 1);
    g->n_found = 0;
    if (cap < BLOCK) return scan_leaves(g, tree, 0, p, lo); /* n < BLOCK */
    mp_status s = scan_leaves(g, tree, pb, p, lo);
    size_t l = cap / BLOCK, r = (cap + pb) / BLOCK;
    for (; s == MP_OK && l < r; l /= 2, r /= 2) {
        if ((r & 1) && tree[r - 1] > lo) s = report_below(g, tree, r - 1, lo);
        if (s == MP_OK && (l & 1) && tree[l] > lo) s = report_below(g, tree, l, lo);
        l += l & 1;
    }
    return s;
}

/* ---- sorting them by offset ----------------------------------------------- */

/* Stable insertion sort by offset of k hits from h into out. */
static void insertion_sort(const mp__gaphit *h, mp__gaphit *out, size_t k) {
    for (size_t i = 0; i < k; i++) {
        mp__gaphit v = h[i];
        size_t j = i;
        for (; j > 0 && out[j - 1].off > v.off; j--) out[j] = out[j - 1];
        out[j] = v;
    }
}

static void merge_runs(const mp__gaphit *src, mp__gaphit *dst, size_t k, size_t w) {
    for (size_t lo = 0; lo < k; lo += 2 * w) {
        size_t mid = lo + w < k ? lo + w : k, hi = lo + 2 * w < k ? lo + 2 * w : k;
        size_t a = lo, b = mid, o = lo;
        while (a < mid && b < hi) dst[o++] = src[b].off < src[a].off ? src[b++] : src[a++];
        while (a < mid) dst[o++] = src[a++];
        while (b < hi) dst[o++] = src[b++];
    }
}

/* Fills g->hit[0..k) with the found conflicts sorted by offset: runs of RUN
 * are insertion-sorted, then merged bottom-up (stable throughout).  Alg. 3 keeps
 * its list by offset alone; how equal offsets are ordered cannot change
 * the walk, since the first of them ends above where the others start. */
static mp_status sort_hits(mp__gapfit *g) {
    enum { RUN = 16 };
    size_t k = g->n_found;
    mp_status s = mp__grow((void **)&g->tmp, &g->tmp_cap, k, sizeof *g->tmp);
    if (s == MP_OK) s = mp__grow((void **)&g->hit, &g->hit_cap, k, sizeof *g->hit);
    if (s != MP_OK) return s;
    for (size_t i = 0; i < k; i++) g->tmp[i] = g->lrange[g->found[i]];
    for (size_t lo = 0; lo < k; lo += RUN)
        insertion_sort(g->tmp + lo, g->hit + lo, k - lo < RUN ? k - lo : RUN);
    mp__gaphit *src = g->hit, *dst = g->tmp;
    for (size_t w = RUN; w < k; w *= 2) {
        merge_runs(src, dst, k, w);
        mp__gaphit *t = src;
        src = dst;
        dst = t;
    }
    if (src != g->hit) { /* the answer is in tmp: swap the buffers */
        g->tmp = g->hit;
        g->hit = src;
        size_t c = g->tmp_cap;
        g->tmp_cap = g->hit_cap;
        g->hit_cap = c;
    }
    return MP_OK;
}

/* ---- choosing the gap ------------------------------------------------------- */

/* The offset for t (alignment a, size s) given its conflicting placed
 * buffers x[0..k) by offset.  Gap sizes are raw (offset_x - prev), as in
 * Alg. 3 L.14; alignment only decides whether t fits and where it starts. */
static uint64_t choose(const mp__gapfit *g, uint64_t a, uint64_t s, const mp__gaphit *x,
                       size_t k) {
    uint64_t prev = 0, best = 0, best_gap = UINT64_MAX;
    bool found = false;
    for (size_t j = 0; j < k; j++) {
        uint64_t cand = mp__align_up(prev, a);
        if (cand < x[j].off && x[j].off - cand >= s) {
            if (g->policy == MP__GAP_SMARTPOOL_FIRST) return cand;
            if (x[j].off - prev < best_gap) { /* strict: ties keep the lower gap */
                best_gap = x[j].off - prev;
                best = cand;
                found = true;
            }
        }
        prev = mp__max64(prev, x[j].end);
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

/* Switches leaf j on in the index, as mp__itree_set does.  Placing only
 * ever raises a node's max, so the climb stops at the first ancestor that
 * already reaches the new value: O(1) steps on most placements. */
static void activate_leaf(mp__itree *it, size_t j, uint64_t last1) {
    size_t v = it->cap + j;
    it->maxlast1[v] = last1;
    for (v /= 2; v >= 1 && it->maxlast1[v] < last1; v /= 2) it->maxlast1[v] = last1;
}

mp_status mp__gapfit_place_leaf(mp__gapfit *g, size_t j) {
    const mp__gapbuf x = g->lbuf[j];
    mp_status s = mp__gapfit_collect(g, g->placed.maxlast1, mp__gapfit_prefix(g, j, x.last),
                                     x.first);
    if (s == MP_OK) s = sort_hits(g);
    if (s != MP_OK) return s;
    uint64_t off = choose(g, x.align, x.size, g->hit, g->n_found);
    g->lrange[j] = (mp__gaphit){off, off + x.size};
    g->top = mp__max64(g->top, off + x.size);
    activate_leaf(&g->placed, j, x.last + 1);
    return MP_OK;
}

void mp__gapfit_finish(const mp__gapfit *g) {
    for (size_t j = 0; j < g->placed.n; j++) g->offset[g->placed.order[j]] = g->lrange[j].off;
}

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

/* Starts loading what placing leaf j will read: its data and the index
 * nodes above it up to where the tree is hot anyway. */
static void prefetch_leaf(const mp__gapfit *g, size_t j) {
    const mp__itree *it = &g->placed;
    PREFETCH(&g->lfirst[j]);
    PREFETCH(&g->lbuf[j]);
    PREFETCH(&g->lrange[j]);
    size_t v = it->cap + j;
    for (int level = 0; level < 14 && v > 1; level++, v /= 2) PREFETCH(&it->maxlast1[v]);
}

mp_status mp__gapfit_run(const mp_buffer_t *b, size_t n, const size_t *order,
                         mp__gap_policy policy, uint64_t *offset) {
    /* Placements in an order unrelated to time (size order) land in a cold
     * part of memory each time: we work by leaf throughout and fetch a few
     * placements ahead, then copy the offsets out once at the end. */
    enum { AHEAD = 8 };
    mp__gapfit g;
    size_t *seq = malloc((n ? n : 1) * sizeof *seq);
    mp_status s = seq ? mp__gapfit_init(&g, b, n, offset, policy) : MP__NOMEM();
    if (!seq) memset(&g, 0, sizeof g);
    for (size_t i = 0; s == MP_OK && i < n; i++) seq[i] = g.placed.pos[order[i]];
    for (size_t i = 0; s == MP_OK && i < n; i++) {
        if (i + AHEAD < n) prefetch_leaf(&g, seq[i + AHEAD]);
        s = mp__gapfit_place_leaf(&g, seq[i]);
    }
    if (s == MP_OK) mp__gapfit_finish(&g);
    mp__gapfit_free(&g);
    free(seq);
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
