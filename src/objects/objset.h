/* objset.h -- private helpers of the shared-object strategies.
 *
 * mp__conf answers "which objects hold a buffer that meets buffer t?" for
 * the greedy strategies.  Times are compressed to operator indices (the
 * distinct start times); a buffer spans a range of them, and two buffers
 * conflict iff their ranges meet.  Normally it keeps, per time index, a
 * bit set of busy objects inside a 64-ary OR tree, so a query or an update
 * costs O((min(span, 126 per level) + height) * W) words for
 * W = ceil(objects / 64): a few cache lines on DNN-shaped inputs.  When
 * those bit sets would pass a memory budget (many objects over many times)
 * it switches to the interval index of assigned buffers and marks their
 * objects, O((c + 1) log n) for c conflicting buffers.  Both answer exactly
 * the same.
 *
 * mp__holes indexes the idle gaps ("holes") of every object so that the
 * object whose nearest member is closest in time to an interval that fits
 * into one of its holes is found in O(log n) (Greedy by Size Improved).
 * mp__maxtree is the static max segment tree with leaf-climbing searches
 * under both. */
#ifndef MEMPLAN_OBJSET_H
#define MEMPLAN_OBJSET_H

#include "../core/internal.h"

#define MP__NONE ((size_t)-1)

/* ---- static max segment tree ---------------------------------------------
 * n leaves (all 0 at first), values uint64.  Searches start at a leaf and
 * climb, so answers close to the start cost O(log distance). */
typedef struct mp__maxtree {
    size_t cap;          /* leaves, a power of two */
    uint64_t *v;         /* 2 * cap nodes; v[cap + i] is leaf i */
} mp__maxtree;

mp_status mp__maxtree_init(mp__maxtree *t, size_t n);
void mp__maxtree_free(mp__maxtree *t);
/* Sets leaf i to x (and the maxima above it). */
void mp__maxtree_set(mp__maxtree *t, size_t i, uint64_t x);
/* Largest leaf < p whose value is >= th, or MP__NONE. */
size_t mp__maxtree_last_before(const mp__maxtree *t, size_t p, uint64_t th);
/* Smallest leaf >= p whose value is >= th, or MP__NONE. */
size_t mp__maxtree_first_from(const mp__maxtree *t, size_t p, uint64_t th);

/* ---- conflicts: objects busy during a buffer's life ---------------------- */

/* Words of bit sets the mask mode may use before switching to the interval
 * index.  A variable so tests can force either mode. */
extern size_t mp__conf_budget_words;

typedef struct mp__conf {
    const mp_buffer_t *b;
    size_t n, *object;        /* the caller's assignment */
    bool *assigned;
    size_t m, *lo, *hi;       /* time indices; each buffer's span of them */
    size_t nobj;              /* objects known (numbers < nobj) */
    bool use_mask;
    /* mask mode: levels of the 64-ary tree, W words per node */
    size_t W, levels, len[12], off[12];
    uint64_t *any, *full, *q; /* q: the last query's bit set */
    /* index mode */
    mp__itree tree;
    size_t *mark, markcap, stamp, *hits, nhits, caphits;
} mp__conf;

mp_status mp__conf_init(mp__conf *c, const mp_buffer_t *b, size_t n, size_t *object);
void mp__conf_free(mp__conf *c);
/* Finds the objects busy during buffer t's life (t not yet assigned). */
mp_status mp__conf_query(mp__conf *c, size_t t);
/* After mp__conf_query: is object o busy? */
bool mp__conf_busy(const mp__conf *c, size_t o);
/* After mp__conf_query: the highest object below `below` that is not
 * busy, or MP__NONE. */
size_t mp__conf_highest_free(const mp__conf *c, size_t below);
/* After mp__conf_query: the lowest object >= o that is not busy, or
 * MP__NONE. */
size_t mp__conf_next_free(const mp__conf *c, size_t o);
/* Records that buffer t now lives in object o (o <= objects known). */
mp_status mp__conf_add(mp__conf *c, size_t t, size_t o);

/* ---- holes of all objects ------------------------------------------------- */
typedef struct mp__holes {
    const mp_buffer_t *b;
    size_t n;
    const size_t *object;
    size_t *byl, *posl;       /* buffers by (last, index) and their positions */
    size_t *byf, *posf;       /* buffers by (first, index) */
    uint64_t *lastk, *firstk; /* the sort keys, for galloping searches */
    size_t *prev, *next;      /* neighbour members in time, MP__NONE */
    mp__maxtree after;        /* at posl[m]: end of the hole after member m
                               * (next member's first, or ~0); 0 = no member */
    mp__maxtree before;       /* at posf[m]: ~(start of the hole before m),
                               * start = previous member's last + 1, or 0 */
} mp__holes;

/* A hole found for an interval: object o, gap to its nearest member, and
 * the members around it (MP__NONE for the open ends). */
typedef struct mp__hole {
    uint64_t gap;
    size_t o, left, right;
} mp__hole;

mp_status mp__holes_init(mp__holes *h, const mp_buffer_t *b, size_t n, const size_t *object);
void mp__holes_free(mp__holes *h);
/* Makes t a member of object[t], between members left and right. */
void mp__holes_add(mp__holes *h, size_t t, size_t left, size_t right);
/* Over every object with a hole containing buffer t's interval, the one
 * whose nearest member is closest (ties: lower object).  False if none. */
bool mp__holes_nearest(const mp__holes *h, size_t t, mp__hole *out);

#endif /* MEMPLAN_OBJSET_H */
