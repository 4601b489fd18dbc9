/* tset.c -- an ordered set of (k1, k2) keys: a treap in one array.
 *
 * Nodes live in a growable array and are named by number, so growing never
 * invalidates links; erased nodes go to a free list.  Priorities come from a
 * fixed xorshift sequence, so shapes (and timings) are the same every run.
 * Split/merge formulation, recursion depth O(log n) expected. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void mp__tset_init(mp__tset *s) {
    memset(s, 0, sizeof *s);
    s->root = MP__NIL;
    s->free_list = MP__NIL;
    s->seed = 2463534242u;
}

void mp__tset_free(mp__tset *s) {
    free(s->node);
    mp__tset_init(s);
}

static inline int cmp(uint64_t a1, uint64_t a2, uint64_t b1, uint64_t b2) {
    if (a1 != b1) return a1 < b1 ? -1 : 1;
    if (a2 != b2) return a2 < b2 ? -1 : 1;
    return 0;
}

/* Splits t into keys < (k1,k2) and keys >= (k1,k2). */
static void split(mp__tset_node *nd, size_t t, uint64_t k1, uint64_t k2, size_t *l, size_t *r) {
    if (t == MP__NIL) {
        *l = *r = MP__NIL;
        return;
    }
    if (cmp(nd[t].k1, nd[t].k2, k1, k2) < 0) {
        split(nd, nd[t].right, k1, k2, &nd[t].right, r);
        *l = t;
    } else {
        split(nd, nd[t].left, k1, k2, l, &nd[t].left);
        *r = t;
    }
}

static size_t merge(mp__tset_node *nd, size_t l, size_t r) {
    if (l == MP__NIL) return r;
    if (r == MP__NIL) return l;
    if (nd[l].prio > nd[r].prio) {
        nd[l].right = merge(nd, nd[l].right, r);
        return l;
    }
    nd[r].left = merge(nd, l, nd[r].left);
    return r;
}

static size_t find(const mp__tset *s, uint64_t k1, uint64_t k2) {
    size_t t = s->root;
    while (t != MP__NIL) {
        int c = cmp(k1, k2, s->node[t].k1, s->node[t].k2);
        if (c == 0) return t;
        t = c < 0 ? s->node[t].left : s->node[t].right;
    }
    return MP__NIL;
}

mp_status mp__tset_insert(mp__tset *s, uint64_t k1, uint64_t k2) {
    if (find(s, k1, k2) != MP__NIL) return MP_OK;
    size_t x;
    if (s->free_list != MP__NIL) {
        x = s->free_list;
        s->free_list = s->node[x].left;
    } else {
        mp_status st = mp__grow((void **)&s->node, &s->cap, s->used + 1, sizeof *s->node);
        if (st != MP_OK) return st;
        x = s->used++;
    }
    s->seed ^= s->seed << 13;
    s->seed ^= s->seed >> 17;
    s->seed ^= s->seed << 5;
    s->node[x] = (mp__tset_node){k1, k2, s->seed, MP__NIL, MP__NIL};
    size_t l, r;
    split(s->node, s->root, k1, k2, &l, &r);
    s->root = merge(s->node, merge(s->node, l, x), r);
    s->count++;
    return MP_OK;
}

bool mp__tset_erase(mp__tset *s, uint64_t k1, uint64_t k2) {
    size_t *link = &s->root;
    while (*link != MP__NIL) {
        size_t t = *link;
        int c = cmp(k1, k2, s->node[t].k1, s->node[t].k2);
        if (c == 0) {
            *link = merge(s->node, s->node[t].left, s->node[t].right);
            s->node[t].left = s->free_list;
            s->free_list = t;
            s->count--;
            return true;
        }
        link = c < 0 ? &s->node[t].left : &s->node[t].right;
    }
    return false;
}

/* Smallest key > or >= (k1,k2), per strict. */
static bool upper(const mp__tset *s, uint64_t k1, uint64_t k2, bool strict, uint64_t *o1,
                  uint64_t *o2) {
    size_t t = s->root, best = MP__NIL;
    while (t != MP__NIL) {
        int c = cmp(s->node[t].k1, s->node[t].k2, k1, k2);
        if (c > 0 || (c == 0 && !strict)) {
            best = t;
            t = s->node[t].left;
        } else {
            t = s->node[t].right;
        }
    }
    if (best == MP__NIL) return false;
    *o1 = s->node[best].k1;
    *o2 = s->node[best].k2;
    return true;
}

static bool lower(const mp__tset *s, uint64_t k1, uint64_t k2, bool strict, uint64_t *o1,
                  uint64_t *o2) {
    size_t t = s->root, best = MP__NIL;
    while (t != MP__NIL) {
        int c = cmp(s->node[t].k1, s->node[t].k2, k1, k2);
        if (c < 0 || (c == 0 && !strict)) {
            best = t;
            t = s->node[t].right;
        } else {
            t = s->node[t].left;
        }
    }
    if (best == MP__NIL) return false;
    *o1 = s->node[best].k1;
    *o2 = s->node[best].k2;
    return true;
}

bool mp__tset_ceil(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2) {
    return upper(s, k1, k2, false, o1, o2);
}
bool mp__tset_next(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2) {
    return upper(s, k1, k2, true, o1, o2);
}
bool mp__tset_floor(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2) {
    return lower(s, k1, k2, false, o1, o2);
}
bool mp__tset_prev(const mp__tset *s, uint64_t k1, uint64_t k2, uint64_t *o1, uint64_t *o2) {
    return lower(s, k1, k2, true, o1, o2);
}
