/* lowq.h -- private to src/offsets: the queue of skyline lines behind
 * strip-bestfit (strip_bestfit.c), a monotone priority queue of
 * (height, position) keys.
 *
 * Keys pop lowest height first, then lowest position.  The height of a
 * pushed key is never below the last popped height (the skyline's lowest
 * line never drops).  Pushing a key twice keeps one copy; keys are never
 * deleted, so a caller skips keys whose line has changed since.
 *
 * Heights go in a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990):
 * bucket i > 0 holds keys whose height first differs from the last popped
 * height at bit i-1; a key moves to a lower bucket at most 64 times, and
 * buckets are only appended to.  The keys at exactly the last popped
 * height are a set of positions: a bitset with one summary level per 64x
 * (find the next set bit from a cursor in O(log_64 m)), small enough to
 * stay in cache, where a binary heap by position was a third of
 * strip-bestfit's instructions. */
#ifndef MEMPLAN_LOWQ_H
#define MEMPLAN_LOWQ_H

#include "../core/internal.h"

typedef struct mp__lowq_key {
    uint64_t h;
    uint32_t a;
} mp__lowq_key;

typedef struct mp__lowq {
    struct {
        mp__lowq_key *k;
        size_t len, cap;
    } bk[65];              /* bk[0] unused: those keys are in `lev` */
    uint64_t *lev[8];      /* bitset levels: lev[0] positions, lev[l+1] its
                            * non-zero words; the top level is one word */
    size_t nbits[8];       /* bits per level */
    size_t nlev;
    uint64_t last;         /* the last popped height */
    size_t cur;            /* no position below it is in the bitset */
} mp__lowq;

/* An empty queue for positions [0, m), last popped height 0. */
mp_status mp__lowq_init(mp__lowq *q, size_t m);
void mp__lowq_free(mp__lowq *q);
/* Adds (h, a), h >= q->last.  MP_ENOMEM only. */
mp_status mp__lowq_push(mp__lowq *q, uint32_t a, uint64_t h);
/* Removes the least key into *a, *h; *a = UINT32_MAX when the queue is
 * empty.  MP_ENOMEM only (moving keys between buckets). */
mp_status mp__lowq_pop(mp__lowq *q, uint32_t *a, uint64_t *h);
/* The least position >= x among the keys at the last popped height,
 * UINT32_MAX if none: what the next pops return unless keys are pushed
 * meanwhile, a hint for prefetching. */
uint32_t mp__lowq_next(const mp__lowq *q, uint32_t x);

#endif /* MEMPLAN_LOWQ_H */
