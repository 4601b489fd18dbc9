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
 * never makes an empty line.  A line is named by its left position; a table
 * indexed by position holds its end, height and previous line (a linked
 * list).  The lowest line comes from a radix heap of (height, left) keys,
 * which fits because the lowest height never drops (an ordered set works
 * too but was several times slower here).  Keys are never deleted: a key
 * whose line has since been merged away or raised is skipped when popped.
 *
 * Which buffer fits a line [a, e) best is a two-sided query: first >= a,
 * end <= e, longest lifetime.  Buffers are ranked by (first, index), so the
 * ones starting in the line are a run of ranks.  A short run is scanned.
 * Otherwise a segment tree over the ranks (per node: the best unplaced
 * buffer and the least end) is searched branch and bound, which is fast
 * unless many long buffers start in the line but end past it; after a fixed
 * number of node visits the search goes on in a 2-d tree over (first, end)
 * (per node: bounding box and best unplaced buffer, refreshed lazily),
 * built on first need, whose worst case is O(sqrt n) nodes per query.
 *
 * Complexity: at most n placements and 2n+1 lifts (a lift removes a line,
 * a placement adds at most two), each O(log n) for the segment tree and
 * O(1) amortized for the heap, plus a scan of at most 16 leaves, at most
 * 256 segment-tree visits, or an O(sqrt n) 2-d tree search (the tree costs
 * O(n log n) expected to build, by quickselect).  On DNN-shaped inputs the
 * 2-d tree is rarely or never needed and the whole is O(n log n); the
 * worst case is O(n sqrt n).  Memory O(n), about 200-300 bytes a buffer.
 * Measured on a 2-core VM (Release): 10^6 MP_GEN_DNN buffers in ~1.5-2.5 s,
 * mostly cache misses: the lowest line jumps about the whole run. */
#include "../core/internal.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

#define SCAN 16          /* runs up to this long are scanned */
#define BUDGET 256       /* segment-tree visits before the 2-d tree takes over */

/* Per rank (buffers in (first, index) order), so that the candidates of a
 * line sit together in memory. */
typedef struct item {
    size_t x;              /* the buffer */
    size_t f, g;           /* positions of first and last + 1 */
    uint64_t len;          /* last - first */
} item;

/* A candidate, or the best below a tree node: MP__NIL x for none. */
typedef struct cand {
    uint64_t len;
    size_t x, r;           /* buffer and rank */
} cand;

/* A segment-tree node: the best unplaced buffer below it and the least
 * end position of the unplaced buffers below it (SIZE_MAX if none). */
typedef struct node {
    cand best;
    size_t mine;
} node;

/* A 2-d tree node (Eytzinger layout: children 2i and 2i+1) holding one
 * rank, the bounding box of its subtree's (first, end) positions, and the
 * best unplaced buffer of its subtree -- possibly placed since, then still
 * an upper bound, and recomputed when it matters. */
typedef struct kdn {
    size_t fmin, fmax, gmin, gmax;
    size_t r;
    cand best;
} kdn;

/* Per position a: the line starting there, if live. */
typedef struct line {
    uint64_t h;            /* height */
    size_t end;            /* end position: the next line's left */
    size_t prev;           /* previous line's left, MP__NIL for the first */
    size_t run;            /* first rank whose buffer starts at or after a */
    bool live;             /* a line starts at a */
} line;

/* A line's key: lowest first, then leftmost. */
typedef struct lkey {
    uint64_t h;
    size_t a;
} lkey;

typedef struct lbucket {
    lkey *k;
    size_t len, cap;
} lbucket;

typedef struct strip {
    const mp_buffer_t *b;
    size_t n, m;           /* buffers; positions (distinct first / last+1) */
    item *it;              /* by rank */
    bool *placed;          /* by rank */
    line *ln;              /* by position; m-1 is max last + 1, never a line */
    size_t cap;            /* leaves of the segment tree */
    node *t;               /* the segment tree: root 1, rank r at leaf cap + r */
    size_t visits;         /* segment-tree visits left in this search */
    kdn *kd;               /* the 2-d tree, nodes 1..n; built on first use */
    lbucket bk[65];        /* radix heap of the lines' keys, some stale */
    uint64_t last;         /* the last height popped */
    uint64_t top;          /* the footprint so far: highest buffer end */
} strip;

static const cand NONE = {0, MP__NIL, MP__NIL};

/* Longer lifetime wins; equal lifetimes go to the lower index. */
static bool beats(const cand *p, const cand *q) {
    if (p->x == MP__NIL) return false;
    if (q->x == MP__NIL) return true;
    return p->len != q->len ? p->len > q->len : p->x < q->x;
}

static cand cand_of(const strip *s, size_t r) {
    return s->placed[r] ? NONE : (cand){s->it[r].len, s->it[r].x, r};
}

/* ---- setup ------------------------------------------------------------ */

/* Positions: each first and last+1 gets the rank of its value among the
 * distinct values.  One sort of 2n keys, which also yields the ranks: key
 * 2i is buffer i's first, so the even keys come in (first, index) order. */
static mp_status compress(strip *s) {
    size_t n = s->n;
    mp__key *k = malloc(2 * n * sizeof *k);
    size_t *rank = malloc(n * sizeof *rank);
    mp_status st = MP_OK;
    if (!k || !rank) st = MP__NOMEM();
    for (size_t i = 0; st == MP_OK && i < n; i++) {
        k[2 * i] = (mp__key){s->b[i].first, 0, 2 * i};
        k[2 * i + 1] = (mp__key){s->b[i].last + 1, 0, 2 * i + 1};
    }
    if (st == MP_OK) st = mp__sort_keys(k, 2 * n);
    if (st == MP_OK) {
        size_t m = 0, r = 0;
        for (size_t j = 0; j < 2 * n; j++) {
            if (j > 0 && k[j].a != k[j - 1].a) m++;
            size_t i = k[j].i / 2;
            if (k[j].i % 2 == 0) {
                rank[i] = r;
                s->it[r++] = (item){i, m, 0, s->b[i].last - s->b[i].first};
            } else {
                s->it[rank[i]].g = m; /* last + 1 > first: its first came earlier */
            }
        }
        s->m = m + 1;
    }
    free(k);
    free(rank);
    return st;
}

static void pull(strip *s, size_t v) {
    const node *l = &s->t[2 * v], *r = l + 1;
    s->t[v].best = beats(&l->best, &r->best) ? l->best : r->best;
    s->t[v].mine = l->mine < r->mine ? l->mine : r->mine;
}

static mp_status push(strip *s, size_t a, uint64_t h);

static mp_status build(strip *s) {
    mp_status st = compress(s);
    if (st != MP_OK) return st;
    for (size_t r = 0, p = 0; p < s->m; p++) {
        while (r < s->n && s->it[r].f < p) r++;
        s->ln[p] = (line){0, 0, MP__NIL, r, false};
    }
    for (s->cap = 1; s->cap < s->n; s->cap *= 2) {}
    s->t = malloc(2 * s->cap * sizeof *s->t);
    if (!s->t) return MP__NOMEM();
    for (size_t r = 0; r < s->cap; r++)
        s->t[s->cap + r] = r < s->n ? (node){cand_of(s, r), s->it[r].g} : (node){NONE, SIZE_MAX};
    for (size_t v = s->cap - 1; v >= 1; v--) pull(s, v);
    /* One line over all time at height 0. */
    s->ln[0].end = s->m - 1;
    s->ln[0].live = true;
    return push(s, 0, 0);
}

/* ---- candidates: segment tree ----------------------------------------- */

/* Marks the buffer at rank r placed. */
static void take(strip *s, size_t r) {
    s->placed[r] = true;
    size_t v = s->cap + r;
    s->t[v] = (node){NONE, SIZE_MAX};
    for (v /= 2; v >= 1; v /= 2) {
        node old = s->t[v];
        pull(s, v);
        if (old.best.x == s->t[v].best.x && old.mine == s->t[v].mine) break; /* no change above */
    }
}

/* The best buffer below node v (inside the query) ending by position e, if
 * it beats *ans; false when the visit budget ran out. */
static bool descend(strip *s, size_t v, size_t e, cand *ans) {
    if (s->visits == 0) return false;
    s->visits--;
    const node *t = &s->t[v];
    if (t->mine > e || !beats(&t->best, ans)) return true;
    if (s->it[t->best.r].g <= e) {
        *ans = t->best;
        return true;
    }
    if (v >= s->cap) return true;
    size_t l = 2 * v, r = l + 1;
    /* The child holding the better buffer first: it most likely settles
     * the answer and prunes its sibling. */
    if (beats(&s->t[r].best, &s->t[l].best)) l = r, r = 2 * v;
    return descend(s, l, e, ans) && descend(s, r, e, ans);
}

/* ---- candidates: 2-d tree --------------------------------------------- */

/* Left subtree size of a complete binary tree of s nodes. */
static size_t left_size(size_t s) {
    size_t half = 1; /* half the width of the last full level */
    while (4 * half - 1 <= s) half *= 2;
    size_t rest = s - (2 * half - 1);
    return half - 1 + (rest < half ? rest : half);
}

/* A point while building: rank and end position.  Dimension 0 orders by
 * rank (= by (first, index)), dimension 1 by (end, rank). */
typedef struct kpt {
    size_t g, r;
} kpt;

static bool kd_lt(kpt x, kpt y, int dim) {
    if (dim == 0 || x.g == y.g) return x.r < y.r;
    return x.g < y.g;
}

static void swap(kpt *p, size_t i, size_t j) {
    kpt t = p[i];
    p[i] = p[j];
    p[j] = t;
}

/* Moves the k-th smallest of p[lo, hi) to p[k], smaller ones before it:
 * quickselect, median-of-three pivot. */
static void select_kth(kpt *p, size_t lo, size_t hi, size_t k, int dim) {
    while (hi - lo > 2) {
        size_t mid = lo + (hi - lo) / 2, z = hi - 1;
        if (kd_lt(p[mid], p[lo], dim)) swap(p, lo, mid);
        if (kd_lt(p[z], p[lo], dim)) swap(p, lo, z);
        if (kd_lt(p[mid], p[z], dim)) swap(p, mid, z);
        size_t at = lo;
        for (size_t i = lo; i < z; i++)
            if (kd_lt(p[i], p[z], dim)) swap(p, i, at++);
        swap(p, at, z);
        if (at == k) return;
        if (k < at) hi = at;
        else lo = at + 1;
    }
    if (hi - lo == 2 && kd_lt(p[lo + 1], p[lo], dim)) swap(p, lo, lo + 1);
}

/* Node i gets the median of p[lo, hi) on dim; its subtrees the rest. */
static void kd_build(strip *s, size_t i, kpt *p, size_t lo, size_t hi, int dim) {
    size_t mid = lo + left_size(hi - lo);
    select_kth(p, lo, hi, mid, dim);
    size_t r = p[mid].r;
    kdn *k = &s->kd[i];
    *k = (kdn){s->it[r].f, s->it[r].f, s->it[r].g, s->it[r].g, r, cand_of(s, r)};
    if (lo < mid) kd_build(s, 2 * i, p, lo, mid, !dim);
    if (mid + 1 < hi) kd_build(s, 2 * i + 1, p, mid + 1, hi, !dim);
    for (size_t c = 2 * i; c <= 2 * i + 1 && c <= s->n; c++) {
        const kdn *q = &s->kd[c];
        k->fmin = q->fmin < k->fmin ? q->fmin : k->fmin;
        k->fmax = q->fmax > k->fmax ? q->fmax : k->fmax;
        k->gmin = q->gmin < k->gmin ? q->gmin : k->gmin;
        k->gmax = q->gmax > k->gmax ? q->gmax : k->gmax;
        if (beats(&q->best, &k->best)) k->best = q->best;
    }
}

static mp_status kd_init(strip *s) {
    kpt *p = malloc(s->n * sizeof *p);
    s->kd = malloc((s->n + 1) * sizeof *s->kd);
    if (!p || !s->kd) {
        free(p);
        return MP__NOMEM();
    }
    for (size_t r = 0; r < s->n; r++) p[r] = (kpt){s->it[r].g, r};
    kd_build(s, 1, p, 0, s->n, 0);
    free(p);
    return MP_OK;
}

/* Brings node i's best up to date after placements below it. */
static void refresh(strip *s, size_t i) {
    kdn *k = &s->kd[i];
    if (k->best.x == MP__NIL || !s->placed[k->best.r]) return;
    k->best = cand_of(s, k->r);
    for (size_t c = 2 * i; c <= 2 * i + 1 && c <= s->n; c++) {
        refresh(s, c);
        if (beats(&s->kd[c].best, &k->best)) k->best = s->kd[c].best;
    }
}

/* The best buffer below node i with first >= a and end <= e, if it beats
 * *ans.  A stale best bounds from above, so pruning needs no refresh. */
static void kd_search(strip *s, size_t i, size_t a, size_t e, cand *ans) {
    kdn *k = &s->kd[i];
    if (k->fmax < a || k->gmin > e || !beats(&k->best, ans)) return;
    refresh(s, i);
    if (!beats(&k->best, ans)) return;
    if (k->fmin >= a && k->gmax <= e) {
        *ans = k->best;
        return;
    }
    const item *x = &s->it[k->r];
    cand own = cand_of(s, k->r);
    if (x->f >= a && x->g <= e && beats(&own, ans)) *ans = own;
    size_t l = 2 * i, r = l + 1;
    if (r <= s->n && beats(&s->kd[r].best, &s->kd[l].best)) l = r, r = 2 * i;
    if (l <= s->n) kd_search(s, l, a, e, ans);
    if (r <= s->n) kd_search(s, r, a, e, ans);
}

/* Rank of the best unplaced buffer for the line [a, e), or MP__NIL. */
static mp_status search(strip *s, size_t a, size_t e, size_t *out) {
    size_t lo = s->ln[a].run, hi = s->ln[e].run;
    cand ans = NONE;
    if (hi - lo <= SCAN) { /* leaves of a short run are contiguous */
        for (const node *t = &s->t[s->cap + lo], *z = &s->t[s->cap + hi]; t < z; t++)
            if (t->mine <= e && beats(&t->best, &ans)) ans = t->best;
        *out = ans.r;
        return MP_OK;
    }
    bool done = true;
    s->visits = BUDGET;
    for (size_t l = lo + s->cap, r = hi + s->cap; done && l < r; l /= 2, r /= 2) {
        if (l & 1) done = descend(s, l++, e, &ans);
        if (done && (r & 1)) done = descend(s, --r, e, &ans);
    }
    if (!done) { /* ans so far is a lower bound the 2-d tree starts from */
        mp_status st;
        if (!s->kd && (st = kd_init(s)) != MP_OK) return st;
        kd_search(s, 1, a, e, &ans);
    }
    *out = ans.r;
    return MP_OK;
}

/* ---- the lowest line --------------------------------------------------
 * The lowest height never drops: placing leaves the rest of the line at
 * its height and raises the middle, lifting raises the line.  So the keys
 * go in a radix heap (Ahuja, Mehlhorn, Orlin and Tarjan 1990): bucket
 * i > 0 holds keys whose height first differs from the last popped height
 * at bit i-1, bucket 0 those at exactly that height, kept as a binary heap
 * by left position.  A key moves to a lower bucket at most 64 times, and
 * buckets are appended to in order, which keeps memory traffic low. */

static unsigned bucket_of(uint64_t h, uint64_t last) {
    uint64_t d = h ^ last;
    if (d == 0) return 0;
#if defined(__GNUC__)
    return 64 - (unsigned)__builtin_clzll(d);
#else
    unsigned i = 0;
    for (; d; d >>= 1) i++;
    return i;
#endif
}

static mp_status bucket_add(strip *s, unsigned i, lkey k) {
    lbucket *q = &s->bk[i];
    mp_status st = mp__grow((void **)&q->k, &q->cap, q->len + 1, sizeof *q->k);
    if (st != MP_OK) return st;
    size_t j = q->len++;
    if (i == 0) /* sift up by left position */
        for (; j > 0 && k.a < q->k[(j - 1) / 2].a; j = (j - 1) / 2) q->k[j] = q->k[(j - 1) / 2];
    q->k[j] = k;
    return MP_OK;
}

/* Records that the line at a now has height h (never below the last
 * popped height). */
static mp_status push(strip *s, size_t a, uint64_t h) {
    MP__ASSERT(h >= s->last);
    return bucket_add(s, bucket_of(h, s->last), (lkey){h, a});
}

/* Refills bucket 0 from the first non-empty bucket: its least height
 * becomes the last popped height and its keys move to lower buckets. */
static mp_status refill(strip *s) {
    unsigned i = 1;
    while (i < 65 && s->bk[i].len == 0) i++;
    MP__ASSERT(i < 65);
    lbucket *q = &s->bk[i];
    uint64_t least = q->k[0].h;
    for (size_t j = 1; j < q->len; j++) least = mp__min64(least, q->k[j].h);
    s->last = least;
    size_t len = q->len;
    q->len = 0;
    for (size_t j = 0; j < len; j++) {
        mp_status st = bucket_add(s, bucket_of(q->k[j].h, least), q->k[j]);
        if (st != MP_OK) return st;
    }
    return MP_OK;
}

static mp_status pop(strip *s, lkey *out) {
    lbucket *q = &s->bk[0];
    mp_status st;
    if (q->len == 0 && (st = refill(s)) != MP_OK) return st;
    *out = q->k[0];
    lkey last = q->k[--q->len];
    size_t i = 0, n = q->len;
    for (size_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && q->k[c + 1].a < q->k[c].a) c++;
        if (q->k[c].a >= last.a) break;
        q->k[i] = q->k[c];
    }
    if (n) q->k[i] = last;
    return MP_OK;
}

/* ---- the skyline ------------------------------------------------------ */

/* The lowest, then leftmost line.  Every live line has a current key in
 * the heap; a key is current iff its line is live at that height. */
static mp_status lowest(strip *s, size_t *a) {
    for (;;) {
        lkey k;
        mp_status st = pop(s, &k);
        if (st != MP_OK) return st;
        if (s->ln[k.a].live && s->ln[k.a].h == k.h) {
            *a = k.a;
            return MP_OK;
        }
    }
}

/* The line after the one at a, MP__NIL at the right end. */
static size_t next_of(const strip *s, size_t a) {
    return s->ln[a].end == s->m - 1 ? MP__NIL : s->ln[a].end;
}

static void link_next(strip *s, size_t a) {
    size_t nx = next_of(s, a);
    if (nx != MP__NIL) s->ln[nx].prev = a;
}

/* Puts the buffer at rank r on the line at a, whose key was just popped:
 * the line at a and every line whose height changes get a key. */
static mp_status place(strip *s, size_t a, size_t r, uint64_t *offset) {
    line *ln = s->ln;
    const mp_buffer_t *bx = &s->b[s->it[r].x];
    size_t e = ln[a].end, f = s->it[r].f, g = s->it[r].g;
    uint64_t h = ln[a].h, off = mp__align_up(h, bx->align), top = off + bx->size;
    offset[s->it[r].x] = off;
    s->top = mp__max64(s->top, top);
    take(s, r);
    mp_status st;
    if (g < e) { /* right remainder [g, e) stays at h */
        ln[g].h = h, ln[g].end = e, ln[g].prev = f, ln[g].live = true;
        link_next(s, g);
        if ((st = push(s, g, h)) != MP_OK) return st;
    }
    if (a < f) { /* left remainder [a, f) stays at h */
        ln[a].end = f;
        ln[f].prev = a;
        if ((st = push(s, a, h)) != MP_OK) return st;
    }
    ln[f].h = top, ln[f].end = g, ln[f].live = true; /* prev is ln[a].prev if f == a */
    link_next(s, f);
    /* The raised line may now be as high as an untouched neighbour. */
    size_t nx = g == e ? next_of(s, f) : MP__NIL;
    if (nx != MP__NIL && ln[nx].h == top) {
        ln[nx].live = false;
        ln[f].end = ln[nx].end;
        link_next(s, f);
    }
    size_t pv = a == f ? ln[f].prev : MP__NIL;
    if (pv != MP__NIL && ln[pv].h == top) {
        ln[f].live = false;
        ln[pv].end = ln[f].end;
        link_next(s, pv);
        return MP_OK;
    }
    return push(s, f, top);
}

/* Nothing fits the line at a: merge it into its lower neighbour, or both
 * when they are equally high (sekiyama2018 Fig. 1d). */
static mp_status lift(strip *s, size_t a) {
    line *ln = s->ln;
    size_t pv = ln[a].prev, nx = next_of(s, a);
    MP__ASSERT(pv != MP__NIL || nx != MP__NIL);
    if (pv != MP__NIL && (nx == MP__NIL || ln[pv].h <= ln[nx].h)) {
        ln[a].live = false;
        ln[pv].end = ln[a].end;
        if (nx != MP__NIL && ln[nx].h == ln[pv].h) {
            ln[nx].live = false;
            ln[pv].end = ln[nx].end;
        }
        link_next(s, pv);
        return MP_OK;
    }
    ln[nx].live = false;
    ln[a].h = ln[nx].h;
    ln[a].end = ln[nx].end;
    link_next(s, a);
    return push(s, a, ln[a].h);
}

static mp_status pack(strip *s, uint64_t *offset) {
    for (size_t placed = 0, step = 0; placed < s->n; step++) {
        size_t a, r;
        if (mp__watch_stop(step, s->top)) return (mp_status)MP__STOPPED; /* auto.c */
        mp_status st = lowest(s, &a);
        if (st == MP_OK) st = search(s, a, s->ln[a].end, &r);
        if (st == MP_OK && r == MP__NIL) st = lift(s, a);
        else if (st == MP_OK) st = place(s, a, r, offset), placed++;
        if (st != MP_OK) return st;
    }
    return MP_OK;
}

mp_status mp__offsets_strip_bestfit(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    if (n == 0) return MP_OK;
    strip s = {.b = b, .n = n};
    s.it = malloc(n * sizeof *s.it);
    s.placed = calloc(n, sizeof *s.placed);
    s.ln = malloc(2 * n * sizeof *s.ln); /* at most 2n positions */
    mp_status st;
    if (!s.it || !s.placed || !s.ln) st = MP__NOMEM();
    else if ((st = build(&s)) == MP_OK) st = pack(&s, offset);
    free(s.it), free(s.placed), free(s.ln), free(s.t), free(s.kd);
    for (int i = 0; i < 65; i++) free(s.bk[i].k);
    return st;
}
