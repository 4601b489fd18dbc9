/* mincostflow.c -- shared objects as a minimum-cost flow (Lee et al. 2019,
 * the "Min-cost Flow" row of pisarchyk2020 Table 1; TFLite GPU delegate,
 * memory_management/min_cost_flow_assignment.cc).
 *
 * The network (facts of the TFLite construction): a source, a sink, and two
 * vertices per buffer, L_i ("i's object is free after i") and R_i ("i needs
 * an object").  Every edge has capacity 1:
 *   source -> L_i cost 0;  R_i -> sink cost 0;
 *   source -> R_i cost size_i             (i opens a new object);
 *   L_j -> R_i cost max(0, size_i - size_j) whenever last_j < first_i
 *                                          (i reuses j's object after j).
 * All R_i -> sink edges are saturated by a minimum-cost maximum flow; the
 * reuse edges carrying flow chain buffers into objects, each chain starting
 * at a buffer fed straight from the source.  The cost counts an object as
 * the sum of its size increases along the chain, an upper bound of its
 * final size (the maximum of its members).
 *
 * This file solves the same problem as an assignment: each buffer (row)
 * takes one column, either its private "new object" column or one L_j,
 * each L_j at most once.  Rows are added in (first, index) order and each
 * is routed along a shortest augmenting path (successive shortest paths
 * with potentials; Dijkstra on a binary heap that prefers free columns
 * among equal distances and stops at the first free column it pops).  The
 * O(n^2) reuse edges are never stored: the L_j open to a row are a prefix
 * of the buffers sorted by last, and columns are numbered in that order so
 * a row's edges are one sequential scan.  A column whose distance exceeds
 * that of the best free column seen is not queued: it could only be popped
 * after the search has stopped.  Objects are numbered by their first
 * buffer in (first, index) order.  Distances and potentials are 128-bit: a
 * path mixes up to n positive and negative costs of up to 2^64.
 *
 * Cost: n searches; each scans O(n) edges of every row it reaches and
 * queues some of them, O(n^2 log n) per search in the worst case
 * (O(n^3 log n) in all), about n^2 times the rows reached per search on
 * DNN-shaped inputs.  O(n) memory.  Meant for up to a few thousand
 * buffers. */
#include "../core/internal.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

typedef __int128 i128;

#define NONE ((size_t)-1)

typedef struct hitem {
    i128 d;
    size_t c;
    bool matched;
} hitem;

/* Columns 0..n-1 are L columns in (last, index) order (column p is buffer
 * lefts[p]); column n + i is row i's new-object column. */
typedef struct mcf {
    const mp_buffer_t *b;
    size_t n;
    size_t *lefts;       /* column -> buffer */
    uint64_t *llast, *lsize;
    size_t *mrow;        /* row -> column */
    size_t *mcol;        /* column -> row */
    i128 *prow, *pcol;   /* potentials */
    i128 *dist;          /* per column, valid when seen[c] == stamp */
    size_t *seen, *popped, *from, stamp;
    size_t *order;       /* popped columns of the current search */
    size_t norder;
    hitem *heap;
    size_t nheap, capheap;
} mcf;

/* Ties: free columns first (they end the search), then by number. */
static bool hless(const hitem *x, const hitem *y) {
    if (x->d != y->d) return x->d < y->d;
    if (x->matched != y->matched) return x->matched < y->matched;
    return x->c < y->c;
}

static mp_status hpush(mcf *m, i128 d, size_t c) {
    mp_status s = mp__grow((void **)&m->heap, &m->capheap, m->nheap + 1, sizeof *m->heap);
    if (s != MP_OK) return s;
    hitem e = {d, c, m->mcol[c] != NONE};
    size_t i = m->nheap++;
    while (i > 0 && hless(&e, &m->heap[(i - 1) / 2])) {
        m->heap[i] = m->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    m->heap[i] = e;
    return MP_OK;
}

static hitem hpop(mcf *m) {
    hitem top = m->heap[0], last = m->heap[--m->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m->nheap) break;
        if (c + 1 < m->nheap && hless(&m->heap[c + 1], &m->heap[c])) c++;
        if (!hless(&m->heap[c], &last)) break;
        m->heap[i] = m->heap[c];
        i = c;
    }
    if (m->nheap) m->heap[i] = last;
    return top;
}

/* Cost of the edge row r -> column c. */
static uint64_t cost(const mcf *m, size_t r, size_t c) {
    uint64_t sr = m->b[r].size;
    if (c >= m->n) return sr;
    return sr > m->lsize[c] ? sr - m->lsize[c] : 0;
}

/* Reduced cost of the residual edge row -> column. */
static i128 rcost(const mcf *m, size_t r, size_t c) {
    return (i128)cost(m, r, c) + m->prow[r] - m->pcol[c];
}

/* Offers column c at distance d (reached from row r); *ub is the smallest
 * distance of a free column seen so far. */
static mp_status offer(mcf *m, size_t r, size_t c, i128 d, i128 *ub) {
    if (m->popped[c] == m->stamp) return MP_OK;
    if (m->seen[c] == m->stamp && d >= m->dist[c]) return MP_OK;
    m->seen[c] = m->stamp;
    m->dist[c] = d;
    m->from[c] = r;
    if (d > *ub) return MP_OK;
    if (m->mcol[c] == NONE) *ub = d;
    return hpush(m, d, c);
}

/* Relaxes every residual edge out of row r, whose distance is dr.  The
 * edge to r's own column was used to reach r: that column is popped. */
static mp_status relax_row(mcf *m, size_t r, i128 dr, i128 *ub) {
    mp_status s = offer(m, r, m->n + r, dr + rcost(m, r, m->n + r), ub);
    uint64_t sr = m->b[r].size, fr = m->b[r].first;
    i128 base = dr + m->prow[r];
    for (size_t c = 0; s == MP_OK && c < m->n && m->llast[c] < fr; c++) {
        if (m->popped[c] == m->stamp) continue;
        i128 d = base + (i128)(sr > m->lsize[c] ? sr - m->lsize[c] : 0) - m->pcol[c];
        if (m->seen[c] != m->stamp || d < m->dist[c]) s = offer(m, r, c, d, ub);
    }
    return s;
}

/* Gives row r0 a column along a shortest augmenting path. */
static mp_status add_row(mcf *m, size_t r0) {
    m->stamp++;
    m->nheap = 0;
    m->norder = 0;
    i128 ub = ((i128)1) << 126;
    mp_status s = relax_row(m, r0, 0, &ub);
    size_t end = NONE;
    while (s == MP_OK && end == NONE) {
        hitem h = hpop(m); /* never empty: r0's own column is free */
        if (m->popped[h.c] == m->stamp || h.d != m->dist[h.c]) continue;
        m->popped[h.c] = m->stamp;
        m->order[m->norder++] = h.c;
        size_t r = m->mcol[h.c];
        if (r == NONE) {
            end = h.c;
        } else { /* matched edges stay tight: r is as far as its column */
            MP__ASSERT(rcost(m, r, h.c) == 0);
            s = relax_row(m, r, h.d, &ub);
        }
    }
    if (s != MP_OK) return s;
    /* Potentials: popped vertices move by (distance - D), so every residual
     * edge keeps a non-negative reduced cost and the path becomes tight. */
    i128 D = m->dist[end];
    m->prow[r0] -= D;
    for (size_t j = 0; j < m->norder; j++) {
        size_t c = m->order[j];
        m->pcol[c] += m->dist[c] - D;
        if (m->mcol[c] != NONE) m->prow[m->mcol[c]] += m->dist[c] - D;
    }
    for (size_t c = end;;) { /* flip the path */
        size_t r = m->from[c], prev = m->mrow[r];
        m->mrow[r] = c;
        m->mcol[c] = r;
        if (r == r0) break;
        c = prev;
    }
    return MP_OK;
}

/* Turns the matching into object numbers along the chains. */
static void chains(const mcf *m, const size_t *byfirst, size_t *object, size_t *k) {
    size_t nobj = 0, *colof = m->from; /* reuse: buffer -> its L column */
    for (size_t c = 0; c < m->n; c++) colof[m->lefts[c]] = c;
    for (size_t j = 0; j < m->n; j++) {
        size_t r = byfirst[j];
        if (m->mrow[r] < m->n) continue; /* reuses an object */
        for (size_t x = r; x != NONE; x = m->mcol[colof[x]]) object[x] = nobj;
        nobj++;
    }
    *k = nobj;
}

static mp_status setup(mcf *m, size_t n) {
    size_t c2 = 2 * n;
    m->lefts = malloc(n * sizeof *m->lefts);
    m->llast = malloc(n * sizeof *m->llast);
    m->lsize = malloc(n * sizeof *m->lsize);
    m->mrow = malloc(n * sizeof *m->mrow);
    m->mcol = malloc(c2 * sizeof *m->mcol);
    m->prow = calloc(n, sizeof *m->prow);
    m->pcol = calloc(c2, sizeof *m->pcol);
    m->dist = malloc(c2 * sizeof *m->dist);
    m->seen = calloc(c2, sizeof *m->seen);
    m->popped = calloc(c2, sizeof *m->popped);
    m->from = malloc(c2 * sizeof *m->from);
    m->order = malloc(c2 * sizeof *m->order);
    if (!m->lefts || !m->llast || !m->lsize || !m->mrow || !m->mcol || !m->prow || !m->pcol ||
        !m->dist || !m->seen || !m->popped || !m->from || !m->order)
        return MP__NOMEM();
    for (size_t i = 0; i < n; i++) m->mrow[i] = NONE;
    for (size_t c = 0; c < c2; c++) m->mcol[c] = NONE;
    mp__key *k = malloc(n * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){m->b[i].last, 0, i};
    mp_status s = mp__sort_keys(k, n);
    for (size_t c = 0; s == MP_OK && c < n; c++) {
        m->lefts[c] = k[c].i;
        m->llast[c] = m->b[k[c].i].last;
        m->lsize[c] = m->b[k[c].i].size;
    }
    free(k);
    return s;
}

static void teardown(mcf *m) {
    free(m->lefts), free(m->llast), free(m->lsize), free(m->mrow), free(m->mcol);
    free(m->prow), free(m->pcol), free(m->dist), free(m->seen), free(m->popped);
    free(m->from), free(m->order), free(m->heap);
}

mp_status mp__objects_mincostflow(const mp_buffer_t *b, size_t n, size_t *object, size_t *k) {
    *k = 0;
    if (n <= 1) { /* nothing to share */
        if (n == 1) object[0] = 0, *k = 1;
        return MP_OK;
    }
    mcf m = {.b = b, .n = n};
    size_t *byfirst = malloc(n * sizeof *byfirst);
    mp_status s = byfirst ? setup(&m, n) : MP__NOMEM();
    if (s == MP_OK) s = mp__order_by_first(b, n, byfirst);
    for (size_t j = 0; s == MP_OK && j < n; j++) s = add_row(&m, byfirst[j]);
    if (s == MP_OK) chains(&m, byfirst, object, k);
    teardown(&m);
    free(byfirst);
    return s;
}
