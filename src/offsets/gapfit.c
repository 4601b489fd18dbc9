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
 * Traces with hundreds of buffers live at once (the idealloc traces: k in
 * the thousands) go through a second index instead, gapindex.c, which
 * yields the free ranges over t's lifetime by address without collecting
 * and sorting the conflicts; the gaps and so the plans are the same.  The
 * choice is made once per plan from the average number of conflicts.
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

int mp__gapfit_index = 0;

/* Conflicts per buffer from which the gap index is used.  Measured with
 * greedy-size (Release, 2-core VM): on the idealloc traces the index wins
 * from ~400 conflicts on (pangu, 1300: 41 vs 222 ms; S_1, 3000: ~6x); on
 * random lifetimes and sizes, which fragment memory so that there are
 * nearly as many gaps as conflicts, it loses up to ~2000 (512: 1.17 vs
 * 0.96 s at n = 10^5).  512 takes it for the traces it was made for. */
enum { DENSE_CONFLICTS = 512 };

/* Whether buffers conflict with DENSE_CONFLICTS others on average: each
 * pair is counted once, at the later start, by galloping from each leaf
 * to the end of the starts within its lifetime (O(n log d)). */
static bool is_dense(const mp__gapfit *g) {
    const size_t n = g->placed.n;
    uint64_t pairs = 0;
    for (size_t j = 0; j < n; j++) pairs += mp__gapfit_prefix(g, j, g->lbuf[j].last) - j - 1;
    return n > 0 && 2 * pairs >= (uint64_t)DENSE_CONFLICTS * n;
}

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
    g->dense = mp__gapfit_index == 2 || (mp__gapfit_index == 0 && is_dense(g));
    return g->dense ? mp__gapindex_init(&g->index, g->lfirst, n) : MP_OK;
}

void mp__gapfit_free(mp__gapfit *g) {
    mp__itree_free(&g->placed);
    free(g->lfirst);
    free(g->lbuf);
    free(g->lrange);
    free(g->found);
    free(g->hit);
    free(g->tmp);
    free(g->gap);
    if (g->dense) mp__gapindex_free(&g->index);
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

/* The offset for t (alignment a, size s) given the free ranges gap[0..k)
 * over its lifetime below top, the highest end of its conflicting placed
 * buffers, lowest first.  These are the gaps [prev, offset_x) of Alg. 3's
 * walk over the conflicting buffers by offset (L.7-20) that are not empty;
 * gap sizes are raw, as in Alg. 3 L.14, and alignment only decides whether
 * t fits and where it starts. */
static uint64_t choose(const mp__gapfit *g, uint64_t a, uint64_t s, const mp__span *gap,
                       size_t k, uint64_t top) {
    uint64_t best = 0, best_gap = UINT64_MAX;
    bool found = false;
    for (size_t j = 0; j < k; j++) {
        uint64_t cand = mp__align_up(gap[j].lo, a);
        if (cand < gap[j].hi && gap[j].hi - cand >= s) {
            if (g->policy == MP__GAP_SMARTPOOL_FIRST) return cand;
            if (gap[j].hi - gap[j].lo < best_gap) { /* strict: ties keep the lower gap */
                best_gap = gap[j].hi - gap[j].lo;
                best = cand;
                found = true;
            }
        }
    }
    /* SmartPool also counts the hole [top, pool_top) between the highest
     * conflicting buffer and the top of the pool.  For first fit it is the
     * same offset as extending the pool, so only best fit needs it. */
    if (g->policy == MP__GAP_SMARTPOOL_BEST && top < g->top) {
        uint64_t cand = mp__align_up(top, a);
        if (cand < g->top && g->top - cand >= s && g->top - top < best_gap) return cand;
    }
    return found ? best : mp__align_up(top, a);
}

/* The free ranges between the k conflicts x[] (by offset), as the walk of
 * Alg. 3 meets them: prev is the highest end seen so far, and [prev,
 * offset_x) is a gap when not empty.  Returns the highest end. */
static mp_status gaps_of_hits(mp__gapfit *g, const mp__gaphit *x, size_t k, size_t *n_gap,
                              uint64_t *top) {
    mp_status s = mp__grow((void **)&g->gap, &g->gap_cap, k, sizeof *g->gap);
    if (s != MP_OK) return s;
    uint64_t prev = 0;
    size_t m = 0;
    for (size_t j = 0; j < k; j++) {
        if (x[j].off > prev) g->gap[m++] = (mp__span){prev, x[j].off};
        prev = mp__max64(prev, x[j].end);
    }
    *n_gap = m;
    *top = prev;
    return MP_OK;
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
    uint64_t top, off;
    mp_status s;
    if (g->dense) {
        /* First fit needs no gap above the first that fits. */
        top = 0;
        s = mp__gapindex_gaps(&g->index, x.first, x.last,
                              g->policy == MP__GAP_SMARTPOOL_FIRST ? &x : NULL, &top);
        if (s != MP_OK) return s;
        off = choose(g, x.align, x.size, g->index.gap, g->index.n_gap, top);
        s = mp__gapindex_add(&g->index, x.first, x.last, off, off + x.size);
        if (s != MP_OK) return s;
    } else {
        size_t n_gap;
        s = mp__gapfit_collect(g, g->placed.maxlast1, mp__gapfit_prefix(g, j, x.last), x.first);
        if (s == MP_OK) s = sort_hits(g);
        if (s == MP_OK) s = gaps_of_hits(g, g->hit, g->n_found, &n_gap, &top);
        if (s != MP_OK) return s;
        off = choose(g, x.align, x.size, g->gap, n_gap, top);
        activate_leaf(&g->placed, j, x.last + 1);
    }
    g->lrange[j] = (mp__gaphit){off, off + x.size};
    g->top = mp__max64(g->top, off + x.size);
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
        if (s == MP_OK && mp__watch_stop(i, g.top)) s = (mp_status)MP__STOPPED;
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
