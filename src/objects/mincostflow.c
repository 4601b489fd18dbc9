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
 * is routed by a shortest augmenting path (successive shortest paths with
 * potentials, Dijkstra on a binary heap, stopping at the first free column
 * it pops).  The O(n^2) reuse edges are never stored: the L_j available to
 * a row are a prefix of the buffers sorted by last.  A relaxation whose
 * distance exceeds the best free column already seen is not queued; such a
 * column could only be popped after the search has stopped, so the result
 * is unchanged.  Objects are numbered by their first buffer in (first,
 * index) order.  Distances and potentials are 128-bit: a path mixes up to n
 * positive and negative costs of up to 2^64.
 *
 * Cost: O(n) rows x (rows reached by the search) x O(n log n) per reached
 * row: O(n^3 log n) in the worst case, about O(n^2 log n) on DNN-shaped
 * inputs where augmenting paths are short; O(n) memory. */
#include "../core/internal.h"

#include <stdlib.h>

typedef __int128 i128;

#define NONE ((size_t)-1)

typedef struct hitem {
    i128 d;
    size_t c;
} hitem;

typedef struct mcf {
    const mp_buffer_t *b;
    size_t n;
    size_t *lefts;       /* buffers by (last, index) */
    size_t *mrow;        /* row -> column */
    size_t *mcol;        /* column -> row; columns 0..n-1 = L_j, n+i = new for row i */
    i128 *prow, *pcol;   /* potentials */
    i128 *dist;          /* per column, valid when seen[c] == stamp */
    size_t *seen, *popped, *from, stamp;
    size_t *order;       /* popped columns of the current search */
    size_t norder;
    hitem *heap;
    size_t nheap, capheap;
} mcf;

static bool hless(const hitem *x, const hitem *y) {
    return x->d != y->d ? x->d < y->d : x->c < y->c;
}

static mp_status hpush(mcf *m, i128 d, size_t c) {
    mp_status s = mp__grow((void **)&m->heap, &m->capheap, m->nheap + 1, sizeof *m->heap);
    if (s != MP_OK) return s;
    hitem e = {d, c};
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

static uint64_t cost(const mcf *m, size_t r, size_t c) {
    uint64_t sr = m->b[r].size;
    if (c >= m->n) return sr;
    uint64_t sc = m->b[c].size;
    return sr > sc ? sr - sc : 0;
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

/* Relaxes every residual edge out of row r, whose distance is dr. */
static mp_status relax_row(mcf *m, size_t r, i128 dr, i128 *ub) {
    mp_status s = offer(m, r, m->n + r, dr + rcost(m, r, m->n + r), ub);
    for (size_t j = 0; s == MP_OK && j < m->n; j++) {
        size_t c = m->lefts[j];
        if (m->b[c].last >= m->b[r].first) break;
        if (c != m->mrow[r]) s = offer(m, r, c, dr + rcost(m, r, c), ub);
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
    size_t nobj = 0;
    for (size_t j = 0; j < m->n; j++) {
        size_t r = byfirst[j];
        if (m->mrow[r] < m->n) continue; /* reuses an object */
        for (size_t x = r; x != NONE; x = m->mcol[x]) object[x] = nobj;
        nobj++;
    }
    *k = nobj;
}

static mp_status setup(mcf *m, size_t n) {
    size_t c2 = 2 * n;
    m->lefts = malloc(n * sizeof *m->lefts);
    m->mrow = malloc(n * sizeof *m->mrow);
    m->mcol = malloc(c2 * sizeof *m->mcol);
    m->prow = calloc(n, sizeof *m->prow);
    m->pcol = calloc(c2, sizeof *m->pcol);
    m->dist = malloc(c2 * sizeof *m->dist);
    m->seen = calloc(c2, sizeof *m->seen);
    m->popped = calloc(c2, sizeof *m->popped);
    m->from = malloc(c2 * sizeof *m->from);
    m->order = malloc(c2 * sizeof *m->order);
    if (!m->lefts || !m->mrow || !m->mcol || !m->prow || !m->pcol || !m->dist || !m->seen ||
        !m->popped || !m->from || !m->order)
        return MP__NOMEM();
    for (size_t i = 0; i < n; i++) m->mrow[i] = NONE;
    for (size_t c = 0; c < c2; c++) m->mcol[c] = NONE;
    mp__key *k = malloc(n * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){m->b[i].last, 0, i};
    mp_status s = mp__sort_keys(k, n);
    for (size_t i = 0; s == MP_OK && i < n; i++) m->lefts[i] = k[i].i;
    free(k);
    return s;
}

static void teardown(mcf *m) {
    free(m->lefts), free(m->mrow), free(m->mcol), free(m->prow), free(m->pcol);
    free(m->dist), free(m->seen), free(m->popped), free(m->from), free(m->order);
    free(m->heap);
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
