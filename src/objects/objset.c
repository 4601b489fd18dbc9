/* objset.c -- member sets of shared objects and the nearest-object query.
 *
 * mp__atree is a treap in one array (like mp__tset) whose nodes also keep
 * the maximum value of their subtree; split/merge maintain it.  A query
 * "nearest key on one side of K whose value reaches th" walks the search
 * path of K and enters at most one subtree whose maximum reaches th, so it
 * costs O(log n) expected.
 *
 * mp__objset stores every member [f,l] of object o four times:
 *   by_first (o, f) and by_last (o, l): neighbours inside one object;
 *   after:  key (l, ~o), value = first time of o's next member (or ~0),
 *           i.e. the hole of o that opens just after this member;
 *   before: key (f, o),  value = ~(1 + last of o's previous member) (or ~0),
 *           i.e. the hole of o that closes just before this member.
 * An interval [F,L] fits the hole after member m iff l_m < F and the hole
 * ends after L; the member with the largest such l_m is the nearest one on
 * the left over all objects.  The before-tree gives the nearest on the
 * right.  Members of one object are disjoint, so all keys are distinct. */
#include "objset.h"

#include <stdlib.h>
#include <string.h>

void mp__atree_init(mp__atree *t) {
    memset(t, 0, sizeof *t);
    t->root = MP__NIL;
    t->free_list = MP__NIL;
    t->seed = 2463534242u;
}

void mp__atree_free(mp__atree *t) {
    free(t->node);
    mp__atree_init(t);
}

static inline int kcmp(uint64_t a1, uint64_t a2, uint64_t b1, uint64_t b2) {
    if (a1 != b1) return a1 < b1 ? -1 : 1;
    if (a2 != b2) return a2 < b2 ? -1 : 1;
    return 0;
}

static inline uint64_t agg_of(const mp__anode *nd, size_t t) {
    return t == MP__NIL ? 0 : nd[t].agg;
}

static inline void pull(mp__anode *nd, size_t t) {
    uint64_t a = mp__max64(agg_of(nd, nd[t].left), agg_of(nd, nd[t].right));
    nd[t].agg = mp__max64(a, nd[t].v);
}

/* Splits t into keys before (k1,k2) and the rest; with incl, a key equal
 * to (k1,k2) goes to the left part. */
static void split(mp__anode *nd, size_t t, uint64_t k1, uint64_t k2, bool incl, size_t *l,
                  size_t *r) {
    if (t == MP__NIL) {
        *l = *r = MP__NIL;
        return;
    }
    int c = kcmp(nd[t].k1, nd[t].k2, k1, k2);
    if (c < 0 || (c == 0 && incl)) {
        split(nd, nd[t].right, k1, k2, incl, &nd[t].right, r);
        *l = t;
    } else {
        split(nd, nd[t].left, k1, k2, incl, l, &nd[t].left);
        *r = t;
    }
    pull(nd, t);
}

static size_t merge(mp__anode *nd, size_t l, size_t r) {
    if (l == MP__NIL) return r;
    if (r == MP__NIL) return l;
    if (nd[l].prio > nd[r].prio) {
        nd[l].right = merge(nd, nd[l].right, r);
        pull(nd, l);
        return l;
    }
    nd[r].left = merge(nd, l, nd[r].left);
    pull(nd, r);
    return r;
}

mp_status mp__atree_put(mp__atree *t, uint64_t k1, uint64_t k2, uint64_t v) {
    size_t a, b, mid, c;
    split(t->node, t->root, k1, k2, false, &a, &b);
    split(t->node, b, k1, k2, true, &mid, &c);
    if (mid == MP__NIL) {
        if (t->free_list != MP__NIL) {
            mid = t->free_list;
            t->free_list = t->node[mid].left;
        } else {
            mp_status s = mp__grow((void **)&t->node, &t->cap, t->used + 1, sizeof *t->node);
            if (s != MP_OK) { /* put the tree back together before failing */
                t->root = merge(t->node, a, c);
                return s;
            }
            mid = t->used++;
        }
        t->seed ^= t->seed << 13;
        t->seed ^= t->seed >> 17;
        t->seed ^= t->seed << 5;
        t->node[mid] = (mp__anode){k1, k2, v, v, t->seed, MP__NIL, MP__NIL};
    } else {
        t->node[mid].v = t->node[mid].agg = v; /* keys are distinct: a lone node */
    }
    t->root = merge(t->node, merge(t->node, a, mid), c);
    return MP_OK;
}

static size_t last_below(const mp__anode *nd, size_t t, uint64_t k1, uint64_t k2,
                         uint64_t th) {
    while (t != MP__NIL && nd[t].agg >= th) {
        if (kcmp(nd[t].k1, nd[t].k2, k1, k2) >= 0) {
            t = nd[t].left;
            continue;
        }
        size_t r = last_below(nd, nd[t].right, k1, k2, th);
        if (r != MP__NIL) return r;
        if (nd[t].v >= th) return t;
        t = nd[t].left;
    }
    return MP__NIL;
}

static size_t first_above(const mp__anode *nd, size_t t, uint64_t k1, uint64_t k2,
                          uint64_t th) {
    while (t != MP__NIL && nd[t].agg >= th) {
        if (kcmp(nd[t].k1, nd[t].k2, k1, k2) <= 0) {
            t = nd[t].right;
            continue;
        }
        size_t r = first_above(nd, nd[t].left, k1, k2, th);
        if (r != MP__NIL) return r;
        if (nd[t].v >= th) return t;
        t = nd[t].right;
    }
    return MP__NIL;
}

bool mp__atree_last_below(const mp__atree *t, uint64_t k1, uint64_t k2, uint64_t th,
                          uint64_t *o1, uint64_t *o2) {
    size_t x = last_below(t->node, t->root, k1, k2, th);
    if (x == MP__NIL) return false;
    *o1 = t->node[x].k1;
    *o2 = t->node[x].k2;
    return true;
}

bool mp__atree_first_above(const mp__atree *t, uint64_t k1, uint64_t k2, uint64_t th,
                           uint64_t *o1, uint64_t *o2) {
    size_t x = first_above(t->node, t->root, k1, k2, th);
    if (x == MP__NIL) return false;
    *o1 = t->node[x].k1;
    *o2 = t->node[x].k2;
    return true;
}

/* ---- objset ------------------------------------------------------------ */

void mp__objset_init(mp__objset *s) {
    mp__tset_init(&s->by_first);
    mp__tset_init(&s->by_last);
    mp__atree_init(&s->after);
    mp__atree_init(&s->before);
}

void mp__objset_free(mp__objset *s) {
    mp__tset_free(&s->by_first);
    mp__tset_free(&s->by_last);
    mp__atree_free(&s->after);
    mp__atree_free(&s->before);
}

bool mp__objset_prev_last(const mp__objset *s, uint64_t o, uint64_t t, uint64_t *last) {
    uint64_t k1, k2;
    if (!mp__tset_prev(&s->by_last, o, t, &k1, &k2) || k1 != o) return false;
    *last = k2;
    return true;
}

bool mp__objset_next_first(const mp__objset *s, uint64_t o, uint64_t t, uint64_t *first) {
    uint64_t k1, k2;
    if (!mp__tset_next(&s->by_first, o, t, &k1, &k2) || k1 != o) return false;
    *first = k2;
    return true;
}

mp_status mp__objset_add(mp__objset *s, uint64_t o, uint64_t first, uint64_t last) {
    uint64_t pl = 0, nf = 0;
    bool has_p = mp__objset_prev_last(s, o, first, &pl);
    bool has_n = mp__objset_next_first(s, o, last, &nf);
    mp_status st = mp__tset_insert(&s->by_first, o, first);
    if (st == MP_OK) st = mp__tset_insert(&s->by_last, o, last);
    /* The new member splits one hole of o in two. */
    if (st == MP_OK && has_p) st = mp__atree_put(&s->after, pl, ~o, first);
    if (st == MP_OK) st = mp__atree_put(&s->after, last, ~o, has_n ? nf : UINT64_MAX);
    if (st == MP_OK && has_n) st = mp__atree_put(&s->before, nf, o, ~(last + 1));
    if (st == MP_OK) st = mp__atree_put(&s->before, first, o, has_p ? ~(pl + 1) : UINT64_MAX);
    return st;
}

bool mp__objset_nearest(const mp__objset *s, uint64_t first, uint64_t last, uint64_t *gap,
                        uint64_t *o) {
    uint64_t k1, k2, g = 0, best = 0;
    bool found = false;
    /* Left: member ending before `first` whose hole reaches past `last`;
     * among equal ends the key ~o makes the lowest object come last. */
    if (mp__atree_last_below(&s->after, first, 0, last + 1, &k1, &k2)) {
        g = first - k1 - 1;
        best = ~k2;
        found = true;
    }
    /* Right: member starting after `last` whose hole starts at or before
     * `first` (value ~(start) >= ~first). */
    if (mp__atree_first_above(&s->before, last, UINT64_MAX, ~first, &k1, &k2)) {
        uint64_t gr = k1 - last - 1;
        if (!found || gr < g || (gr == g && k2 < best)) {
            g = gr;
            best = k2;
            found = true;
        }
    }
    if (found) {
        *gap = g;
        *o = best;
    }
    return found;
}
