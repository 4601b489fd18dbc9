/* gapfit.h -- private to src/offsets: the gap-finding placer shared by
 * greedy-size, greedy-breadth (pisarchyk2020 sec. 5.2-5.3, Alg. 3) and the
 * two SmartPool fits (zhang2019 sec. III-C).
 *
 * A strategy decides the order; the placer decides where each buffer goes
 * once it is its turn.  It keeps the placed buffers in an interval index,
 * so placing buffer t costs O((k + 1) log n + k log k) for the k placed
 * buffers that conflict with t. */
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

typedef struct mp__gapfit {
    const mp_buffer_t *b;
    uint64_t *offset;        /* the caller's output; valid for placed buffers */
    mp__gap_policy policy;
    mp__itree placed;        /* active = already placed */
    size_t *hit;             /* conflict query results (scratch) */
    size_t hit_len, hit_cap;
    mp__key *key;            /* conflicts as (offset, 0, index) (scratch) */
    size_t key_cap;
    uint64_t top;            /* pool top: max end of every placed buffer */
} mp__gapfit;

/* Prepares a placer for the normalized problem b[0..n) writing offset[]. */
mp_status mp__gapfit_init(mp__gapfit *g, const mp_buffer_t *b, size_t n, uint64_t *offset,
                          mp__gap_policy policy);
void mp__gapfit_free(mp__gapfit *g);

/* Places unplaced buffer t by the placer's policy and marks it placed. */
mp_status mp__gapfit_place(mp__gapfit *g, size_t t);

/* Places b[order[0]], b[order[1]], ... in turn (order is a permutation). */
mp_status mp__gapfit_run(const mp_buffer_t *b, size_t n, const size_t *order,
                         mp__gap_policy policy, uint64_t *offset);

/* Fills idx[0..n) with buffer indices by size non-increasing, ties by index. */
mp_status mp__order_by_size_desc(const mp_buffer_t *b, size_t n, size_t *idx);

#endif /* MEMPLAN_GAPFIT_H */
