/* strip_bestfit.c -- best-fit strip packing (sekiyama2018 sec. 3.2, after
 * Burke et al. 2004): time across, offset up.
 *
 * The packed region's upper outline is a skyline of "offset lines": time
 * segments that partition [min first, max last], each at a height.  Until
 * every buffer is placed: take the lowest line (ties: leftmost); among
 * unplaced buffers whose lifetime lies inside it pick the longest
 * (last - first; ties: lowest index) and put it at the line's height rounded
 * up to its alignment; the line splits in up to three and the middle rises
 * to offset + size.  If nothing fits, "lift" the line: merge it into its
 * lower neighbour (both neighbours if they are equally high).  Adjacent
 * lines of equal height are always merged, so the neighbours of the lowest
 * line are strictly higher.  Alignment padding between a line and the
 * buffer on it is lost to the rest of that line.
 *
 * Times are compressed to the positions of the distinct values of first
 * and last+1, and lines are half-open position ranges [a, e), so a split
 * never makes an empty line.  A line is named by its left position: arrays
 * indexed by it hold its end, height and previous line, and an ordered set
 * keyed (height, left) yields the lowest line.  The candidates of a line
 * [a, e) are the buffers starting in it, a contiguous run of the buffers
 * sorted by first; a segment tree over that order keeps, per node, the best
 * unplaced buffer and the least end position, and is searched branch and
 * bound: a node is entered only if its best beats the answer so far and
 * something in it ends by e; a node inside the run whose best ends by e
 * answers for the whole node.
 *
 * Complexity: at most n placements and 2n lifts, each O(log n) for the set,
 * plus the search.  A search costs O(log n) times (1 + the unplaced
 * buffers starting in the line, ending past it and longer than the answer).
 * On DNN-shaped inputs few buffers cross any point, so the whole is
 * O(n log n); the worst case (many long, nested lifetimes) is O(n^2). */
#include "../core/internal.h"

#include <stdlib.h>

typedef struct strip {
    const mp_buffer_t *b;
    size_t n, m;           /* buffers; positions (distinct first / last+1) */
    size_t *fpos, *epos;   /* buffer -> position of first, of last + 1 */
    size_t *order;         /* rank -> buffer, by (first, index) */
    size_t *run;           /* position -> first rank starting at or after it */
    size_t cap;            /* leaves of the segment tree */
    size_t *best;          /* node -> best unplaced buffer, MP__NIL if none */
    size_t *mine;          /* node -> least epos of unplaced buffers */
    size_t *end, *prev;    /* line at left position a: end position, previous */
    uint64_t *h;           /* line at a: height */
    mp__tset lines;        /* (height, left position) of every line */
} strip;

/* Longer lifetime wins; equal lifetimes go to the lower index. */
static bool better(const mp_buffer_t *b, size_t x, size_t y) {
    if (y == MP__NIL) return true;
    uint64_t lx = b[x].last - b[x].first, ly = b[y].last - b[y].first;
    return lx != ly ? lx > ly : x < y;
}

static void pull(strip *s, size_t v) {
    size_t l = 2 * v, r = l + 1;
    size_t x = s->best[l], y = s->best[r];
    s->best[v] = x != MP__NIL && better(s->b, x, y) ? x : y;
    s->mine[v] = s->mine[l] < s->mine[r] ? s->mine[l] : s->mine[r];
}

/* Positions: every first and last+1 gets the rank of its value among the
 * distinct values.  Two n-sized sorts. */
static mp_status compress(strip *s) {
    size_t n = s->n;
    mp__key *k = malloc(2 * n * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        k[2 * i] = (mp__key){s->b[i].first, 0, 2 * i};
        k[2 * i + 1] = (mp__key){s->b[i].last + 1, 0, 2 * i + 1};
    }
    mp_status st = mp__sort_keys(k, 2 * n);
    if (st == MP_OK) {
        size_t m = 0;
        for (size_t j = 0; j < 2 * n; j++) {
            if (j > 0 && k[j].a != k[j - 1].a) m++;
            size_t i = k[j].i / 2;
            if (k[j].i % 2) s->epos[i] = m;
            else s->fpos[i] = m;
        }
        s->m = m + 1;
    }
    free(k);
    return st;
}

static mp_status build(strip *s) {
    size_t n = s->n;
    mp_status st;
    if ((st = compress(s)) != MP_OK || (st = mp__order_by_first(s->b, n, s->order)) != MP_OK)
        return st;
    for (size_t r = 0, p = 0; p < s->m; p++) {
        while (r < n && s->fpos[s->order[r]] < p) r++;
        s->run[p] = r;
    }
    for (s->cap = 1; s->cap < n; s->cap *= 2) {}
    s->best = malloc(2 * s->cap * sizeof *s->best);
    s->mine = malloc(2 * s->cap * sizeof *s->mine);
    if (!s->best || !s->mine) return MP__NOMEM();
    for (size_t r = 0; r < s->cap; r++) {
        s->best[s->cap + r] = r < n ? s->order[r] : MP__NIL;
        s->mine[s->cap + r] = r < n ? s->epos[s->order[r]] : SIZE_MAX;
    }
    for (size_t v = s->cap - 1; v >= 1; v--) pull(s, v);
    /* One line over all time at height 0; position m-1 is max last + 1. */
    s->end[0] = s->m - 1;
    s->prev[0] = MP__NIL;
    s->h[0] = 0;
    return mp__tset_insert(&s->lines, 0, 0);
}

/* Marks the buffer at rank r placed. */
static void remove_rank(strip *s, size_t r) {
    size_t v = s->cap + r;
    s->best[v] = MP__NIL;
    s->mine[v] = SIZE_MAX;
    for (v /= 2; v >= 1; v /= 2) pull(s, v);
}

/* Best unplaced buffer among ranks [lo_q, hi_q) ending by position e.  Node v
 * covers ranks [lo, hi).  *ans is the best so far. */
static void search(const strip *s, size_t v, size_t lo, size_t hi, size_t lo_q, size_t hi_q,
                   size_t e, size_t *ans) {
    if (hi <= lo_q || hi_q <= lo) return;
    size_t x = s->best[v];
    if (x == MP__NIL || s->mine[v] > e || !better(s->b, x, *ans)) return;
    if (lo_q <= lo && hi <= hi_q && s->epos[x] <= e) {
        *ans = x;
        return;
    }
    if (hi - lo == 1) return;
    size_t mid = lo + (hi - lo) / 2, l = 2 * v, r = l + 1;
    /* The child holding the better buffer first: it most likely settles
     * the answer and prunes its sibling. */
    if (s->best[l] != MP__NIL && better(s->b, s->best[l], s->best[r])) {
        search(s, l, lo, mid, lo_q, hi_q, e, ans);
        search(s, r, mid, hi, lo_q, hi_q, e, ans);
    } else {
        search(s, r, mid, hi, lo_q, hi_q, e, ans);
        search(s, l, lo, mid, lo_q, hi_q, e, ans);
    }
}

/* The line after the one at a, MP__NIL at the right end. */
static size_t next_of(const strip *s, size_t a) {
    return s->end[a] == s->m - 1 ? MP__NIL : s->end[a];
}

static void link_next(strip *s, size_t a) {
    size_t nx = next_of(s, a);
    if (nx != MP__NIL) s->prev[nx] = a;
}

/* Puts buffer x on the line at a (height h, end e). */
static mp_status place(strip *s, size_t a, size_t x, uint64_t *offset) {
    const mp_buffer_t *bx = &s->b[x];
    size_t e = s->end[a], f = s->fpos[x], g = s->epos[x];
    uint64_t h = s->h[a], off = mp__align_up(h, bx->align), top = off + bx->size;
    offset[x] = off;
    mp__tset_erase(&s->lines, h, a);
    mp_status st;
    if (g < e) { /* right remainder [g, e) stays at h */
        s->end[g] = e, s->h[g] = h, s->prev[g] = f;
        link_next(s, g);
        if ((st = mp__tset_insert(&s->lines, h, g)) != MP_OK) return st;
    }
    if (a < f) { /* left remainder [a, f) stays at h */
        s->end[a] = f;
        if ((st = mp__tset_insert(&s->lines, h, a)) != MP_OK) return st;
        s->prev[f] = a;
    }
    s->end[f] = g, s->h[f] = top; /* prev[f] is prev[a] when f == a */
    link_next(s, f);
    /* The raised line may now be as high as an untouched neighbour. */
    size_t nx = g == e ? next_of(s, f) : MP__NIL;
    if (nx != MP__NIL && s->h[nx] == top) {
        mp__tset_erase(&s->lines, top, nx);
        s->end[f] = s->end[nx];
        link_next(s, f);
    }
    size_t pv = a == f ? s->prev[f] : MP__NIL;
    if (pv != MP__NIL && s->h[pv] == top) {
        s->end[pv] = s->end[f];
        link_next(s, pv);
        return MP_OK;
    }
    return mp__tset_insert(&s->lines, top, f);
}

/* Nothing fits the line at a: merge it into its lower neighbour, or both
 * when they are equally high (sekiyama2018 Fig. 1d). */
static mp_status lift(strip *s, size_t a) {
    size_t pv = s->prev[a], nx = next_of(s, a);
    MP__ASSERT(pv != MP__NIL || nx != MP__NIL);
    mp__tset_erase(&s->lines, s->h[a], a);
    if (pv != MP__NIL && (nx == MP__NIL || s->h[pv] <= s->h[nx])) {
        s->end[pv] = s->end[a];
        if (nx != MP__NIL && s->h[nx] == s->h[pv]) {
            mp__tset_erase(&s->lines, s->h[nx], nx);
            s->end[pv] = s->end[nx];
        }
        link_next(s, pv);
        return MP_OK;
    }
    mp__tset_erase(&s->lines, s->h[nx], nx);
    s->h[a] = s->h[nx];
    s->end[a] = s->end[nx];
    link_next(s, a);
    return mp__tset_insert(&s->lines, s->h[a], a);
}

static mp_status pack(strip *s, size_t *rank, uint64_t *offset) {
    for (size_t r = 0; r < s->n; r++) rank[s->order[r]] = r;
    for (size_t placed = 0; placed < s->n;) {
        uint64_t h, a64;
        bool any = mp__tset_ceil(&s->lines, 0, 0, &h, &a64);
        MP__ASSERT(any);
        (void)any;
        size_t a = (size_t)a64, e = s->end[a], x = MP__NIL;
        search(s, 1, 0, s->cap, s->run[a], s->run[e], e, &x);
        mp_status st;
        if (x == MP__NIL) {
            st = lift(s, a);
        } else {
            remove_rank(s, rank[x]);
            placed++;
            st = place(s, a, x, offset);
        }
        if (st != MP_OK) return st;
    }
    return MP_OK;
}

mp_status mp__offsets_strip_bestfit(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    if (n == 0) return MP_OK;
    strip s = {.b = b, .n = n};
    mp__tset_init(&s.lines);
    size_t m2 = 2 * n; /* positions are at most 2n */
    size_t *rank = malloc(n * sizeof *rank);
    s.fpos = malloc(n * sizeof *s.fpos);
    s.epos = malloc(n * sizeof *s.epos);
    s.order = malloc(n * sizeof *s.order);
    s.run = malloc(m2 * sizeof *s.run);
    s.end = malloc(m2 * sizeof *s.end);
    s.prev = malloc(m2 * sizeof *s.prev);
    s.h = malloc(m2 * sizeof *s.h);
    mp_status st;
    if (!rank || !s.fpos || !s.epos || !s.order || !s.run || !s.end || !s.prev || !s.h)
        st = MP__NOMEM();
    else if ((st = build(&s)) == MP_OK)
        st = pack(&s, rank, offset);
    free(rank), free(s.fpos), free(s.epos), free(s.order), free(s.run);
    free(s.end), free(s.prev), free(s.h), free(s.best), free(s.mine);
    mp__tset_free(&s.lines);
    return st;
}
