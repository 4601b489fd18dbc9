/* gapfit.h -- private to src/offsets: the gap-finding placer shared by
 * greedy-size, greedy-breadth (pisarchyk2020 sec. 5.2-5.3, Alg. 3) and the
 * two SmartPool fits (zhang2019 sec. III-C).
 *
 * A strategy decides the order; the placer decides where each buffer goes
 * once it is its turn.  It keeps the placed buffers in an interval index,
 * so placing buffer t costs O((k + 1) log n + k log k) for the k placed
 * buffers that conflict with t; or, on dense traces (k in the hundreds and
 * more), in the gap index of gapindex.c: a query merges O(log T) sets of
 * address ranges (T time sections), O(log log T) per range passed, and
 * placing adds t's range to O(log T) sets.
 * Not thread-safe; one placer per plan. */
#ifndef MEMPLAN_GAPFIT_H
#define MEMPLAN_GAPFIT_H

#include "../core/internal.h"

/* How the placer picks among the free address ranges over t's lifetime. */
typedef enum mp__gap_policy {
    /* Alg. 3: smallest gap below or between conflicting buffers that fits
     * (ties: lowest); else on top of the highest conflicting buffer. */
    MP__GAP_PISARCHYK,
    /* SmartPool best fit: smallest fitting hole in [0, pool_top), counting
     * the hole between the highest conflicting buffer and pool_top. */
    MP__GAP_SMARTPOOL_BEST,
    /* SmartPool first fit: lowest fitting hole in [0, pool_top). */
    MP__GAP_SMARTPOOL_FIRST
} mp__gap_policy;

/* A placed buffer's address range [off, end). */
typedef struct mp__gaphit {
    uint64_t off, end;
} mp__gaphit;

/* A buffer as the placer reads it when placing it. */
typedef struct mp__gapbuf {
    uint64_t first, last, size, align;
} mp__gapbuf;

/* An address range [lo, hi). */
typedef struct mp__span {
    uint64_t lo, hi;
} mp__span;

/* A union of address ranges: disjoint, non-touching, by address. */
typedef struct mp__spanset {
    mp__span *s;
    size_t len, cap;
} mp__spanset;

/* A set being merged: the start of its next range, that range, the end. */
typedef struct mp__heapent {
    uint64_t lo;
    const mp__span *at, *end;
} mp__heapent;

/* The index of placed buffers for dense traces (gapindex.c): a segment
 * tree over time sections whose nodes keep merged address ranges, so that
 * the free ranges over a lifetime come out by address without a sort. */
typedef struct mp__gapindex {
    uint64_t *times;         /* distinct start times: section i starts at times[i] */
    size_t nt, cap;          /* sections; leaves (a power of two >= nt) */
    mp__spanset *own;        /* per node: buffers whose lifetime decomposes into it */
    mp__spanset *below;      /* per node: buffers decomposing into it or under it */
    mp__heapent *heap;       /* query scratch: the sets to merge */
    size_t nq, heap_cap;
    mp__span *gap;           /* the last query's free ranges, by address */
    size_t n_gap, gap_cap;
} mp__gapindex;

/* Prepares an empty index over the start times first[0..n) (ascending). */
mp_status mp__gapindex_init(mp__gapindex *x, const uint64_t *first, size_t n);
void mp__gapindex_free(mp__gapindex *x);
/* Records that [off, end) is taken over [first, last] (first one of the
 * start times).  MP_ENOMEM only. */
mp_status mp__gapindex_add(mp__gapindex *x, uint64_t first, uint64_t last, uint64_t off,
                           uint64_t end);
/* Fills x->gap[0..x->n_gap) with the free ranges over [first, last] below
 * *top, the highest end taken over it (0 if none), lowest first.  With fit,
 * stops after the first range that holds fit->size bytes at fit->align
 * (then *top is not set).  MP_ENOMEM only. */
mp_status mp__gapindex_gaps(mp__gapindex *x, uint64_t first, uint64_t last,
                            const mp__gapbuf *fit, uint64_t *top);

/* Which index the placer uses: 0 by the trace's density (the default),
 * 1 always the interval tree plus sort, 2 always the gap index.  The plans
 * are the same; tests set it to compare both with the oracles. */
extern int mp__gapfit_index;

typedef struct mp__gapfit {
    uint64_t *offset;        /* the caller's output, filled by mp__gapfit_finish */
    mp__gap_policy policy;
    /* The placed buffers.  Its layout and invariant are mp__itree's, but
     * only init/free go through itree.c: placing switches leaves on from
     * gapfit.c (cheaper when leaves only ever turn on) and queries climb
     * from a leaf (mp__gapfit_collect). */
    mp__itree placed;
    /* Everything by leaf of `placed` (buffers sorted by first), so that t's
     * neighbours in time are its neighbours in memory. */
    uint64_t *lfirst;        /* first, dense for the prefix search */
    mp__gapbuf *lbuf;        /* the buffer */
    mp__gaphit *lrange;      /* its address range once placed */
    size_t *found;           /* leaves of the conflicts of the buffer being placed */
    size_t n_found, found_cap;
    mp__gaphit *hit, *tmp;   /* the same conflicts by offset; sort scratch */
    size_t hit_cap, tmp_cap;
    uint64_t top;            /* pool top: max end of every placed buffer */
    bool dense;              /* placing through `index` rather than `placed` */
    mp__gapindex index;
    mp__span *gap;           /* sparse path: the free ranges from the hits */
    size_t gap_cap;
} mp__gapfit;

/* Prepares a placer for the normalized problem b[0..n).  Buffers are
 * named by leaf: leaf j is buffer g->placed.order[j], and leaves are sorted
 * by (first, index). */
mp_status mp__gapfit_init(mp__gapfit *g, const mp_buffer_t *b, size_t n, uint64_t *offset,
                          mp__gap_policy policy);
void mp__gapfit_free(mp__gapfit *g);

/* Places the unplaced buffer at leaf j by the policy and marks it placed. */
mp_status mp__gapfit_place_leaf(mp__gapfit *g, size_t j);

/* Writes the offset of every (placed) buffer to the caller's offset[]. */
void mp__gapfit_finish(const mp__gapfit *g);

/* Number of leaves whose buffer starts at or before hi, given that leaf
 * j's does; O(log d) for a prefix ending d leaves after j. */
size_t mp__gapfit_prefix(const mp__gapfit *g, size_t j, uint64_t hi);

/* Fills g->found[0..g->n_found) with the leaves j < p whose value in tree
 * (a max tree shaped like g->placed.maxlast1: last + 1, 0 = absent) is
 * above lo, i.e. the buffers of the tree live at some time >= lo that
 * start in the prefix.  O((k + 1) log n) for k leaves found. */
mp_status mp__gapfit_collect(mp__gapfit *g, const uint64_t *tree, size_t p, uint64_t lo);

/* Places b[order[0]], b[order[1]], ... in turn (order is a permutation)
 * and fills offset[]. */
mp_status mp__gapfit_run(const mp_buffer_t *b, size_t n, const size_t *order,
                         mp__gap_policy policy, uint64_t *offset);

/* Fills idx[0..n) with buffer indices by size non-increasing, ties by index. */
mp_status mp__order_by_size_desc(const mp_buffer_t *b, size_t n, size_t *idx);

#endif /* MEMPLAN_GAPFIT_H */
