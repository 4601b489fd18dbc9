/* objset.h -- private helpers of the shared-object strategies.
 *
 * mp__objset records which buffer intervals each shared object holds and
 * answers, in O(log n) expected each:
 *   - the neighbours of an interval inside one object (the member ending
 *     last before it, the member starting first after it);
 *   - over ALL objects at once, the object whose nearest member is closest
 *     in time to an interval that fits into one of its idle gaps ("holes").
 * The second query is what Greedy by Size Improved (pisarchyk2020 sec.
 * 4.4) repeats; it uses two treaps augmented with a subtree maximum
 * (mp__atree) over the members: one keyed by each member's last time
 * whose value is where the hole after it ends, one keyed by each member's
 * first time whose value encodes where the hole before it starts. */
#ifndef MEMPLAN_OBJSET_H
#define MEMPLAN_OBJSET_H

#include "../core/internal.h"

/* ---- augmented ordered set ----------------------------------------------
 * Distinct keys (k1, k2), lexicographic, each with a value v; every node
 * keeps agg = max v in its subtree, so "the nearest key on one side whose
 * value reaches th" costs one root path. */
typedef struct mp__anode {
    uint64_t k1, k2, v, agg;
    uint32_t prio;
    size_t left, right;
} mp__anode;

typedef struct mp__atree {
    mp__anode *node;
    size_t root, cap, used, free_list;
    uint32_t seed;
} mp__atree;

void mp__atree_init(mp__atree *t);
void mp__atree_free(mp__atree *t);
/* Inserts (k1,k2) with value v, replacing the value if the key exists. */
mp_status mp__atree_put(mp__atree *t, uint64_t k1, uint64_t k2, uint64_t v);
/* Largest key < (k1,k2) whose value is >= th; false if none. */
bool mp__atree_last_below(const mp__atree *t, uint64_t k1, uint64_t k2, uint64_t th,
                          uint64_t *o1, uint64_t *o2);
/* Smallest key > (k1,k2) whose value is >= th; false if none. */
bool mp__atree_first_above(const mp__atree *t, uint64_t k1, uint64_t k2, uint64_t th,
                           uint64_t *o1, uint64_t *o2);

/* ---- member sets of all objects ----------------------------------------- */
typedef struct mp__objset {
    mp__tset by_first;   /* (object, first) of every member */
    mp__tset by_last;    /* (object, last) of every member */
    mp__atree after;     /* (last, ~object) -> first of the object's next member, or ~0 */
    mp__atree before;    /* (first, object) -> ~(1 + last of the previous member), or ~0 */
} mp__objset;

void mp__objset_init(mp__objset *s);
void mp__objset_free(mp__objset *s);

/* Adds [first,last] to object o.  The caller guarantees it meets no member
 * of o (the object is free over it). */
mp_status mp__objset_add(mp__objset *s, uint64_t o, uint64_t first, uint64_t last);

/* Last time of o's member ending latest before time t; false if none. */
bool mp__objset_prev_last(const mp__objset *s, uint64_t o, uint64_t t, uint64_t *last);
/* First time of o's member starting earliest after time t; false if none. */
bool mp__objset_next_first(const mp__objset *s, uint64_t o, uint64_t t, uint64_t *first);

/* Over every object free during [first,last], the one whose nearest member
 * is closest in time; gap = idle time steps between that member and the
 * interval.  Ties: lower object number.  False if no object is free. */
bool mp__objset_nearest(const mp__objset *s, uint64_t first, uint64_t last, uint64_t *gap,
                        uint64_t *o);

#endif /* MEMPLAN_OBJSET_H */
