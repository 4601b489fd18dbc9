/* gapindex.c -- the placer's index for traces with many buffers live at
 * once: which address ranges are free over a time window, lowest first,
 * without collecting and sorting every placed buffer that meets it.
 *
 * Time is cut into sections at the distinct start times; a segment tree
 * over the sections holds, per node v, two unions of address ranges:
 *   own(v):   the buffers whose lifetime decomposes into v (v is one of the
 *             O(log T) maximal nodes inside the lifetime, "canonical");
 *   below(v): the buffers with a canonical node at v or under it.
 * A placed buffer meets a window iff, for some leaf in both, its canonical
 * node is under the window's (it is in below() of the window's canonical
 * node) or above it (in own() of an ancestor of a window's canonical node,
 * i.e. a node that meets the window without lying inside it).  So the
 * address ranges taken over a window are the union of O(log T) sets, and
 * the same two walks place a buffer (add it to those sets) and query.
 *
 * Each set is kept merged: disjoint, non-touching ranges by address.
 * Placed buffers are never removed, so merging loses nothing, and sets stay
 * short where buffers pack tightly.  The free ranges of the union come from
 * a merge of the sets' ranges by start (a heap of the m sets): O(log m)
 * per range of the m sets.
 *
 * The free ranges below the highest taken end are exactly what the
 * pisarchyk2020 Alg. 3 walk over the conflicting buffers by offset visits
 * (gapfit.c), so the placer picks the same gap either way. */
#include "gapfit.h"

#include <stdlib.h>
#include <string.h>

mp_status mp__gapindex_init(mp__gapindex *x, const uint64_t *first, size_t n) {
    memset(x, 0, sizeof *x);
    x->times = malloc((n ? n : 1) * sizeof *x->times);
    if (!x->times) return MP__NOMEM();
    for (size_t j = 0; j < n; j++)
        if (x->nt == 0 || x->times[x->nt - 1] != first[j]) x->times[x->nt++] = first[j];
    x->cap = 1;
    while (x->cap < x->nt) x->cap *= 2;
    x->own = calloc(2 * x->cap, sizeof *x->own);
    x->below = calloc(2 * x->cap, sizeof *x->below);
    if (!x->own || !x->below) return MP__NOMEM();
    return MP_OK;
}

void mp__gapindex_free(mp__gapindex *x) {
    for (size_t v = 0; x->own && v < 2 * x->cap; v++) free(x->own[v].s);
    for (size_t v = 0; x->below && v < 2 * x->cap; v++) free(x->below[v].s);
    free(x->own), free(x->below), free(x->times);
    free(x->heap), free(x->gap);
    memset(x, 0, sizeof *x);
}

/* ---- one merged set ----------------------------------------------------- */

/* Index of the first range of s ending at or after at (touching counts:
 * [a, at) and [at, b) merge), s->len if none. */
static size_t first_reaching(const mp__spanset *s, uint64_t at) {
    size_t lo = 0, hi = s->len;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->s[mid].hi < at) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Adds [lo, hi) to s, merging it with every range it overlaps or touches. */
static mp_status set_add(mp__spanset *s, uint64_t lo, uint64_t hi) {
    size_t i = first_reaching(s, lo), j = i;
    while (j < s->len && s->s[j].lo <= hi) j++; /* ranges i..j-1 merge with it */
    if (j > i) {
        s->s[i].lo = mp__min64(s->s[i].lo, lo);
        s->s[i].hi = mp__max64(s->s[j - 1].hi, hi);
        memmove(s->s + i + 1, s->s + j, (s->len - j) * sizeof *s->s);
        s->len -= j - i - 1;
        return MP_OK;
    }
    if (s->len == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 4;
        mp__span *p = realloc(s->s, cap * sizeof *p);
        if (!p) return MP__NOMEM();
        s->s = p, s->cap = cap;
    }
    memmove(s->s + i + 1, s->s + i, (s->len - i) * sizeof *s->s);
    s->s[i] = (mp__span){lo, hi};
    s->len++;
    return MP_OK;
}

/* ---- the nodes of a lifetime -------------------------------------------- */

/* Section of a start time (present in times[]). */
static size_t section_of_first(const mp__gapindex *x, uint64_t t) {
    size_t lo = 0, hi = x->nt;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->times[mid] <= t) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* Last section starting at or before t (t >= the first start time). */
static size_t section_of_last(const mp__gapindex *x, uint64_t t) {
    size_t lo = 0, hi = x->nt;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->times[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

/* Calls visit(x, v, canonical, arg) for the canonical nodes of sections
 * [f, l] and for their strict ancestors (the nodes that meet [f, l]
 * without lying inside it), each once.  Times compare by section since a
 * lifetime [first, last] meets section i's start iff first <= times[i] <=
 * last, and two lifetimes meet iff their section ranges do (sections begin
 * at starts only). */
typedef mp_status (*visit_fn)(mp__gapindex *x, size_t v, bool canonical, void *arg);

static mp_status walk(mp__gapindex *x, size_t f, size_t l, visit_fn visit, void *arg) {
    mp_status s = MP_OK;
    for (size_t a = f + x->cap, b = l + x->cap + 1; s == MP_OK && a < b; a /= 2, b /= 2) {
        if (a & 1) s = visit(x, a++, true, arg);
        if (s == MP_OK && (b & 1)) s = visit(x, --b, true, arg);
    }
    /* Ancestors of leaf f, then those of leaf l below where the two paths
     * join; node v at height h covers leaves [v * 2^h - cap, +2^h). */
    size_t fv = f + x->cap, lv = l + x->cap;
    for (unsigned h = 0; s == MP_OK && (fv >> h) >= 1; h++) {
        size_t v = fv >> h, lo = (v << h) - x->cap, hi = lo + ((size_t)1 << h) - 1;
        if (!(lo >= f && hi <= l)) s = visit(x, v, false, arg);
    }
    for (unsigned h = 0; s == MP_OK && (lv >> h) != (fv >> h); h++) {
        size_t v = lv >> h, lo = (v << h) - x->cap, hi = lo + ((size_t)1 << h) - 1;
        if (!(lo >= f && hi <= l)) s = visit(x, v, false, arg);
    }
    return s;
}

/* ---- placing ------------------------------------------------------------- */

static mp_status visit_add(mp__gapindex *x, size_t v, bool canonical, void *arg) {
    const mp__span *r = arg;
    mp_status s = set_add(&x->below[v], r->lo, r->hi);
    if (s == MP_OK && canonical) s = set_add(&x->own[v], r->lo, r->hi);
    return s;
}

mp_status mp__gapindex_add(mp__gapindex *x, uint64_t first, uint64_t last, uint64_t off,
                           uint64_t end) {
    mp__span r = {off, end};
    return walk(x, section_of_first(x, first), section_of_last(x, last), visit_add, &r);
}

/* ---- querying ------------------------------------------------------------ */

static mp_status visit_collect(mp__gapindex *x, size_t v, bool canonical, void *arg) {
    (void)arg;
    const mp__spanset *set = canonical ? &x->below[v] : &x->own[v];
    if (set->len == 0) return MP_OK;
    mp_status s = mp__grow((void **)&x->heap, &x->heap_cap, x->nq + 1, sizeof *x->heap);
    if (s == MP_OK) x->heap[x->nq++] = (mp__heapent){set->s[0].lo, set->s, set->s + set->len};
    return s;
}

/* The query's sets as a binary min-heap on the start of each set's next
 * range (the set's cursor), so that the ranges of the union come out by
 * start: O(log m) per range. */
static void sift_down(mp__gapindex *x, size_t i, size_t m) {
    mp__heapent e = x->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && x->heap[c + 1].lo < x->heap[c].lo) c++;
        if (x->heap[c].lo >= e.lo) break;
        x->heap[i] = x->heap[c];
        i = c;
    }
    x->heap[i] = e;
}

mp_status mp__gapindex_gaps(mp__gapindex *x, uint64_t first, uint64_t last,
                            const mp__gapbuf *fit, uint64_t *top) {
    x->nq = 0;
    x->n_gap = 0;
    mp_status s = walk(x, section_of_first(x, first), section_of_last(x, last), visit_collect,
                       NULL);
    if (s != MP_OK) return s;
    size_t m = x->nq;
    for (size_t i = m; i-- > 0;) sift_down(x, i, m);
    /* pos: the highest end of the ranges taken so far; a range starting
     * above it leaves the gap [pos, start). */
    uint64_t pos = 0;
    while (m) {
        mp__heapent *e = &x->heap[0];
        const mp__span r = *e->at;
        if (r.lo > pos) {
            if (x->n_gap == x->gap_cap) {
                s = mp__grow((void **)&x->gap, &x->gap_cap, x->n_gap + 1, sizeof *x->gap);
                if (s != MP_OK) return s;
            }
            x->gap[x->n_gap++] = (mp__span){pos, r.lo};
            uint64_t cand = mp__align_up(pos, fit ? fit->align : 1);
            if (fit && cand < r.lo && r.lo - cand >= fit->size) break; /* first fit found */
        }
        pos = mp__max64(pos, r.hi);
        if (++e->at < e->end) e->lo = e->at->lo;
        else x->heap[0] = x->heap[--m];
        sift_down(x, 0, m);
    }
    *top = pos;
    return MP_OK;
}
