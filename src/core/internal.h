/* internal.h -- private helpers shared across libmemplan's source files.
 *
 * Nothing here is public: names are mp__*.  It holds the error setter, the
 * strategy signatures every planner implements, and the three small
 * containers the planners are built on (a key sort, an interval index and
 * an ordered set).
 */
#ifndef MEMPLAN_INTERNAL_H
#define MEMPLAN_INTERNAL_H

#include "memplan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors ----------------------------------------------------------- */

/* Sets the thread-local message (printf format) and returns s. */
mp_status mp__err(mp_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
#define MP__NOMEM() mp__err(MP_ENOMEM, "out of memory")

/* Debug-build invariant checks (MP_DEBUG). */
#ifdef MP_DEBUG
#include <assert.h>
#define MP__ASSERT(x) assert(x)
#else
#define MP__ASSERT(x) ((void)0)
#endif

/* ---- arithmetic ------------------------------------------------------- */

static inline uint64_t mp__align_up(uint64_t x, uint64_t a) {
    /* a is a power of two >= 1; callers guarantee no overflow (validated
     * problems have aligned sums that fit in 64 bits). */
    return (x + a - 1) & ~(a - 1);
}
static inline bool mp__overlap(const mp_buffer_t *x, const mp_buffer_t *y) {
    return x->first <= y->last && y->first <= x->last;
}
static inline uint64_t mp__max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static inline uint64_t mp__min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* ---- normalized problems ---------------------------------------------- */

/* Copy of b with align >= 1 and size rounded up to align.  Every strategy
 * receives such a copy, so strategies never think about rounding sizes;
 * they must still place buffer i at a multiple of b[i].align. */
mp_status mp__normalize(const mp_buffer_t *b, size_t n, mp_buffer_t **out);

/* Builds a complete plan from an object assignment: object sizes are the max
 * of their members, objects are laid out contiguously in object order (each
 * start aligned to the largest alignment of its members).  Takes ownership
 * of object[] (freed on failure too). */
mp_status mp__plan_from_objects(const mp_buffer_t *b, size_t n, size_t *object,
                                size_t n_objects, mp_plan_t *out);

/* Max over time of live bytes of a normalized problem (sweep, O(n log n)). */
mp_status mp__offsets_bound(const mp_buffer_t *b, size_t n, uint64_t *out);

/* Fills plan->footprint from offsets. */
uint64_t mp__footprint(const mp_buffer_t *b, size_t n, const uint64_t *offset);

/* ---- sorting ---------------------------------------------------------- */

/* A sort key: ordered by a, then b, then i.  Sorting is deterministic and
 * i (usually the buffer index) breaks every tie. */
typedef struct mp__key {
    uint64_t a, b;
    size_t i;
} mp__key;

/* Sorts k[0..n) ascending; O(n log n) merge sort.  MP_ENOMEM on failure. */
mp_status mp__sort_keys(mp__key *k, size_t n);
/* The largest live load and the first time it is reached: one sweep over
 * the sorted start and end events (ends at last + 1, before starts at the
 * same time).  aligned: count aligned sizes (a size whose aligned size is
 * 0 counts as is).  *peak = *t = 0 for n = 0.  (bounds.c) */
mp_status mp__load_peak(const mp_buffer_t *b, size_t n, bool aligned, uint64_t *peak, uint64_t *t);
/* Sorts k[0..n) by a alone, stably: keys with equal a keep their input
 * order, b and i travel with them as payload.  MP_ENOMEM on failure. */
mp_status mp__sort_keys_a(mp__key *k, size_t n);

/* Fills idx[0..n) with buffer indices ordered by (first, index). */
mp_status mp__order_by_first(const mp_buffer_t *b, size_t n, size_t *idx);

/* Distinct operator times: the sorted distinct values of b[i].first.
 * Profiles at other times are subsets of the profile at the latest start
 * before them, so these times are the only operators that matter. */
mp_status mp__start_times(const mp_buffer_t *b, size_t n, uint64_t **times,
                          size_t *n_times);

/* ---- interval index ----------------------------------------------------
 * A static index over all n buffers (sorted by first) in which buffers are
 * switched on and off; it reports the active buffers whose interval meets a
 * query interval in O((k + 1) log n) for k reported buffers.  The planners
 * use it to find, e.g., the already-placed buffers that conflict with the
 * one being placed, without scanning all of them. */
typedef struct mp__itree {
    size_t n, cap;           /* buffers, leaves (power of two) */
    const mp_buffer_t *b;
    size_t *order;           /* leaf position -> buffer index */
    size_t *pos;             /* buffer index -> leaf position */
    uint64_t *maxlast1;      /* per node: 1 + max last of active buffers, 0 = none */
    size_t *stack;           /* query scratch */
} mp__itree;

mp_status mp__itree_init(mp__itree *t, const mp_buffer_t *b, size_t n);
void mp__itree_free(mp__itree *t);
void mp__itree_set(mp__itree *t, size_t i, bool active);

/* Appends to *out (a growable array of *len used, *cap allocated) the
 * indices of active buffers with first <= hi and last >= lo, in leaf order
 * (first, index).  MP_ENOMEM on failure. */
mp_status mp__itree_query(mp__itree *t, uint64_t lo, uint64_t hi,
                          size_t **out, size_t *len, size_t *cap);

/* First fit among the active buffers of an index: the lowest offset, a
 * multiple of b[i].align, at which buffer i clears every active buffer whose
 * lifetime meets its own, given their offsets off[].  O((k + 1) log n + k
 * log k) for k such buffers.  The scratch starts zeroed and is released by
 * mp__fit_scratch_free.  MP_ENOMEM only. */
typedef struct mp__fit_scratch {
    size_t *q, len, cap;
    mp__key *keys;
    size_t kcap;
} mp__fit_scratch;

mp_status mp__itree_first_fit(mp__itree *t, const uint64_t *off, size_t i, mp__fit_scratch *sc,
                              uint64_t *at);
void mp__fit_scratch_free(mp__fit_scratch *sc);

/* Checks fixed offsets (include/memplan_fixed.h) of a valid problem; with
 * path and line (each buffer's line in the file) errors name the file's
 * line and field 'offset' (src/offsets/fixed.c). */
mp_status mp__fixed_check(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                          const char *path, const size_t *line);

/* How many buffers fixed[] fixes (fixed NULL: none). */
size_t mp__fixed_count(const uint64_t *fixed, size_t n);

/* The highest end of a fixed buffer, offset + size (0: none fixed): every
 * plan's footprint is at least this. */
uint64_t mp__fixed_end(const mp_buffer_t *b, size_t n, const uint64_t *fixed);


/* ---- ordered set -------------------------------------------------------
 * A treap of distinct keys (k1, k2) ordered lexicographically, with O(log n)
 * expected insert, erase and neighbour queries.  Used as the free-region
 * box, the skyline of strip packing and the checker's live set. */
typedef struct mp__tset_node {
    uint64_t k1, k2;
    uint32_t prio;
    size_t left, right;      /* node numbers, MP__NIL for none */
} mp__tset_node;

#define MP__NIL ((size_t)-1)

typedef struct mp__tset {
    mp__tset_node *node;
    size_t root, cap, used, free_list, count;
    uint32_t seed;
} mp__tset;

void mp__tset_init(mp__tset *s);
void mp__tset_free(mp__tset *s);
/* MP_ENOMEM on failure; inserting a present key is a no-op. */
mp_status mp__tset_insert(mp__tset *s, uint64_t k1, uint64_t k2);
/* Returns true if the key was present. */
bool mp__tset_erase(mp__tset *s, uint64_t k1, uint64_t k2);
/* Smallest key >= (k1,k2); false if none. */
bool mp__tset_ceil(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2);
/* Largest key <= (k1,k2); false if none. */
bool mp__tset_floor(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2);
/* Smallest key > (k1,k2) / largest key < (k1,k2). */
bool mp__tset_next(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2);
bool mp__tset_prev(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2);

/* ---- growable arrays -------------------------------------------------- */

/* Ensures *cap >= need for an array of elements of size width. */
mp_status mp__grow(void **arr, size_t *cap, size_t need, size_t width);

/* ---- auto's watch over a running candidate (auto.c) ------------------- */

/* Offset strategies that build a plan in steps call mp__watch_stop every
 * step with the footprint so far (which never drops).  Outside auto it is
 * always false.  Inside auto it is true once the candidate can no longer
 * win -- its footprint so far exceeds a finished candidate's, or equals it
 * and that candidate comes first in auto's order -- and the strategy then
 * returns MP__STOPPED.  It may also block for a while: a candidate already
 * above the offset bound waits while another candidate, which may still
 * meet the bound, runs (see auto.c).  Polled every 4096 steps. */
typedef struct mp__watch mp__watch;
extern _Thread_local mp__watch *mp__cur_watch;
bool mp__watch_poll(mp__watch *w, uint64_t partial);
enum { MP__STOPPED = 100 }; /* an mp_status only strategies under auto return */
static inline bool mp__watch_stop(size_t step, uint64_t partial) {
    return (step & 4095) == 0 && mp__cur_watch && mp__watch_poll(mp__cur_watch, partial);
}

#endif /* MEMPLAN_INTERNAL_H */
