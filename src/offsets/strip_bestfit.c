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
 * list).  The lowest line comes from a monotone queue of (height, left)
 * keys (lowq.c), which fits because the lowest height never drops (an
 * ordered set works too but was several times slower here).  Keys are
 * never deleted: a key whose line has since been merged away or raised is
 * skipped when popped.
 *
 * Which buffer fits a line [a, e) best is a two-sided query: first >= a,
 * end <= e, longest lifetime.  Buffers are ranked by (first, index), so the
 * ones starting in the line are a run of ranks; "longest, then lowest
 * index" is precomputed as one 32-bit priority per buffer (a sort), so
 * comparing two candidates is comparing two integers.  A short run is
 * scanned.  Otherwise a segment tree over blocks of 16 ranks (per node: the
 * best unplaced buffer and the least end) is searched branch and bound,
 * scanning the blocks it reaches, which is fast unless many long buffers
 * start in the line but end past it; after a fixed number of node visits
 * the search goes on in a 2-d tree over (first, end) (per node: bounding
 * box and best unplaced buffer, refreshed lazily), built on first need,
 * whose worst case is O(sqrt n) nodes per query.
 *
 * Speed.  The lowest line jumps about the whole run, so nearly every step
 * starts with cache misses; the layout keeps their number down: 8 bytes per
 * rank for the query (priority and end), 16 per placement record, 24 per
 * position, a tree 16 times smaller than one over ranks, and the buffers
 * themselves (40 bytes each) never read while packing.  The next lines at
 * the lowest height are prefetched a step ahead, and a per-position bound
 * on the least end lifts most lines nothing fits (one or two positions
 * long, typically) without reading their buffers.  Measured at 10^6
 * DNN-shaped buffers (2-core VM, Release, side by side, loaded): ~0.7 s of
 * CPU against ~1.25 s for the previous layout (docs/benchmarks-planning.md).
 *
 * Complexity: at most n placements and 2n+1 lifts (a lift removes a line,
 * a placement adds at most two), each O(log n) for the segment tree and
 * O(log_64 n) for the queue (plus at most 64 moves per key), plus a
 * scan of at most 31 ranks, at most 256 tree visits, or an O(sqrt n) 2-d
 * tree search (the tree costs O(n log n) expected to build, by
 * quickselect).  On DNN-shaped inputs the 2-d tree is rarely or never
 * needed and the whole is O(n log n); the
 * worst case is O(n sqrt n).  Memory O(n), at most about 150 bytes a
 * buffer while setting up, 100 while packing.
 * Positions and ranks are 32-bit: at most 2^31 - 2 buffers. */
#include "lowq.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

#define SCAN 16          /* runs up to this long are scanned */
enum { BLK = 16 };       /* ranks per leaf of the segment tree */
#define NONE UINT32_MAX  /* no buffer; the priority of a placed one */

/* Segment-tree visits before the 2-d tree takes over.  Tests lower it to
 * reach the 2-d tree, which DNN-shaped inputs never need. */
size_t mp__strip_budget = 256;

/* Per rank (buffers in (first, index) order): what a query reads.  prio
 * ranks the buffer by (longest lifetime, lowest index), 0 the best; NONE
 * once placed.  g is the position of last + 1. */
typedef struct leaf {
    uint32_t prio, g;
} leaf;

/* Per rank: what placing reads. */
typedef struct rec {
    uint64_t size;
    uint32_t f;            /* position of first */
    uint32_t x;            /* the buffer */
} rec;

/* A candidate: priority (NONE for none) and rank. */
typedef struct cand {
    uint32_t prio, r;
} cand;

/* A segment-tree node: the best unplaced buffer below it (priority, rank,
 * end) and the least end of the unplaced buffers below it (NONE if none). */
typedef struct node {
    uint32_t prio, r, g, mine;
} node;

/* A 2-d tree node (Eytzinger layout: children 2i and 2i+1) holding one
 * rank, the bounding box of its subtree's (first, end) positions, and the
 * best unplaced buffer of its subtree -- possibly placed since, then still
 * an upper bound, and recomputed when it matters. */
typedef struct kdn {
    uint32_t fmin, fmax, gmin, gmax;
    uint32_t r;
    cand best;
} kdn;

/* Per position a: the line starting there, if any (end == 0: none, since
 * a line ends after it starts). */
typedef struct line {
    uint64_t h;            /* height */
    uint32_t end;          /* end position: the next line's left */
    uint32_t prev;         /* previous line's left, NONE for the first */
    uint32_t run;          /* first rank whose buffer starts at or after a */
    uint32_t erun;         /* run of its end: kept with end, so a search
                            * reads one line, not two */
    uint32_t ming;         /* at most the least end of the unplaced buffers
                            * starting at a (NONE: none), see search */
} line;

typedef struct strip {
    const mp_buffer_t *b;
    size_t n, m;           /* buffers; positions (distinct first / last+1) */
    leaf *lf;              /* by rank */
    rec *rc;               /* by rank */
    uint8_t *ashift;       /* by rank: log2 of the alignment; NULL if all 1 */
    line *ln;              /* by position; m-1 is max last + 1, never a line */
    size_t cap;            /* leaves (blocks) of the segment tree */
    node *t;               /* the segment tree: root 1, block q at leaf cap + q */
    size_t visits;         /* segment-tree visits left in this search */
    kdn *kd;               /* the 2-d tree, nodes 1..n; built on first use */
    mp__lowq q;            /* the lines' keys, some stale */
    uint64_t top;          /* the footprint so far: highest buffer end */
} strip;

#if defined(__GNUC__)
#define PREFETCH(p) __builtin_prefetch(p)
#else
#define PREFETCH(p) ((void)(p))
#endif

static uint32_t min32(uint32_t a, uint32_t b) { return a < b ? a : b; }
static uint32_t max32(uint32_t a, uint32_t b) { return a > b ? a : b; }

static cand cand_of(const strip *s, size_t r) { return (cand){s->lf[r].prio, (uint32_t)r}; }

/* ---- setup ------------------------------------------------------------ */

/* Positions: each first and last+1 gets the rank of its value among the
 * distinct values.  Firsts sorted by (first, index) are the ranks (often
 * sorted already: then the sort is one pass); the ends are sorted apart
 * and the two merged by time.  Then one sort of n keys by (longest,
 * index) gives the priorities. */
static mp_status compress(strip *s) {
    size_t n = s->n;
    mp__key *kf = malloc(n * sizeof *kf), *kl = malloc(n * sizeof *kl);
    uint32_t *rank = malloc(n * sizeof *rank);
    mp_status st = kf && kl && rank ? MP_OK : MP__NOMEM();
    for (size_t i = 0; st == MP_OK && i < n; i++) {
        kf[i] = (mp__key){s->b[i].first, 0, i};
        kl[i] = (mp__key){s->b[i].last + 1, 0, i};
    }
    if (st == MP_OK) st = mp__sort_keys(kf, n);
    if (st == MP_OK) st = mp__sort_keys(kl, n);
    if (st == MP_OK) {
        uint32_t m = 0;
        uint64_t at = kf[0].a; /* the least time: a first */
        for (size_t x = 0, y = 0; x < n || y < n;) {
            bool first = y == n || (x < n && kf[x].a <= kl[y].a);
            uint64_t t = first ? kf[x].a : kl[y].a;
            if (t != at) m++, at = t;
            if (first) {
                size_t i = kf[x].i;
                rank[i] = (uint32_t)x;
                s->rc[x++] = (rec){s->b[i].size, m, (uint32_t)i};
            } else { /* last + 1 > first: its first came earlier */
                s->lf[rank[kl[y++].i]].g = m;
            }
        }
        s->m = (size_t)m + 1;
        /* Complemented lengths sort longest first, ties by index. */
        for (size_t i = 0; i < n; i++) kf[i] = (mp__key){~(s->b[i].last - s->b[i].first), 0, i};
        st = mp__sort_keys(kf, n);
    }
    for (size_t j = 0; st == MP_OK && j < n; j++) s->lf[rank[kf[j].i]].prio = (uint32_t)j;
    for (size_t i = 0; st == MP_OK && i < n; i++)
        if (s->b[i].align > 1 && !s->ashift && !(s->ashift = calloc(n, 1))) st = MP__NOMEM();
    for (size_t i = 0; st == MP_OK && s->ashift && i < n; i++)
        for (uint64_t al = s->b[i].align; al > 1; al >>= 1) s->ashift[rank[i]]++;
    free(kf);
    free(kl);
    free(rank);
    return st;
}

/* The best unplaced buffer and least end among ranks [lo, hi) of block q. */
static node block_node(const strip *s, size_t q) {
    node v = {NONE, 0, 0, NONE};
    size_t lo = q * BLK, hi = lo + BLK < s->n ? lo + BLK : s->n;
    for (size_t r = lo; r < hi; r++) {
        leaf l = s->lf[r];
        if (l.prio == NONE) continue;
        if (l.prio < v.prio) v.prio = l.prio, v.r = (uint32_t)r, v.g = l.g;
        if (l.g < v.mine) v.mine = l.g;
    }
    return v;
}

static void pull(strip *s, size_t v) {
    const node *l = &s->t[2 * v], *r = l + 1;
    uint32_t mine = l->mine < r->mine ? l->mine : r->mine;
    s->t[v] = l->prio < r->prio ? *l : *r;
    s->t[v].mine = mine;
}

static mp_status push(strip *s, uint32_t a, uint64_t h);

static mp_status build(strip *s) {
    mp_status st = compress(s);
    if (st == MP_OK) st = mp__lowq_init(&s->q, s->m);
    if (st != MP_OK) return st;
    for (size_t r = 0, p = 0; p < s->m; p++) {
        while (r < s->n && s->rc[r].f < p) r++;
        s->ln[p] = (line){0, 0, NONE, (uint32_t)r, 0, NONE};
        for (size_t q = r; q < s->n && s->rc[q].f == p; q++)
            s->ln[p].ming = min32(s->ln[p].ming, s->lf[q].g);
    }
    size_t blocks = (s->n + BLK - 1) / BLK;
    for (s->cap = 1; s->cap < blocks; s->cap *= 2) {}
    s->t = malloc(2 * s->cap * sizeof *s->t);
    if (!s->t) return MP__NOMEM();
    for (size_t q = 0; q < s->cap; q++)
        s->t[s->cap + q] = q < blocks ? block_node(s, q) : (node){NONE, 0, 0, NONE};
    for (size_t v = s->cap - 1; v >= 1; v--) pull(s, v);
    /* One line over all time at height 0. */
    s->ln[0].end = (uint32_t)(s->m - 1);
    s->ln[0].erun = (uint32_t)s->n;
    return push(s, 0, 0);
}

/* ---- candidates: segment tree ----------------------------------------- */

/* Marks the buffer at rank r placed.  A node above changes only if the
 * one below did. */
static void take(strip *s, size_t r) {
    s->lf[r].prio = NONE;
    size_t v = s->cap + r / BLK;
    node was = s->t[v];
    s->t[v] = block_node(s, r / BLK);
    while (v > 1 && (was.prio != s->t[v].prio || was.mine != s->t[v].mine)) {
        v /= 2;
        was = s->t[v];
        pull(s, v);
    }
}

/* The best unplaced buffer of ranks [lo, hi) ending by position e, if it
 * beats *ans. */
static void scan(const strip *s, size_t lo, size_t hi, uint32_t e, cand *ans) {
    for (size_t r = lo; r < hi; r++)
        if (s->lf[r].g <= e && s->lf[r].prio < ans->prio) *ans = (cand){s->lf[r].prio, (uint32_t)r};
}

/* The best buffer below node v (inside the query) ending by position e, if
 * it beats *ans; false when the visit budget ran out. */
static bool descend(strip *s, size_t v, uint32_t e, cand *ans) {
    if (s->visits == 0) return false;
    s->visits--;
    const node *t = &s->t[v];
    if (t->mine > e || t->prio >= ans->prio) return true;
    if (t->g <= e) {
        *ans = (cand){t->prio, t->r};
        return true;
    }
    if (v >= s->cap) {
        size_t lo = (v - s->cap) * BLK;
        scan(s, lo, lo + BLK < s->n ? lo + BLK : s->n, e, ans);
        return true;
    }
    size_t l = 2 * v, r = l + 1;
    /* The child holding the better buffer first: it most likely settles
     * the answer and prunes its sibling. */
    if (s->t[r].prio < s->t[l].prio) l = r, r = 2 * v;
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
    uint32_t g, r;
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
    uint32_t r = p[mid].r, f = s->rc[r].f, g = s->lf[r].g;
    kdn *k = &s->kd[i];
    *k = (kdn){f, f, g, g, r, cand_of(s, r)};
    if (lo < mid) kd_build(s, 2 * i, p, lo, mid, !dim);
    if (mid + 1 < hi) kd_build(s, 2 * i + 1, p, mid + 1, hi, !dim);
    for (size_t c = 2 * i; c <= 2 * i + 1 && c <= s->n; c++) {
        const kdn *q = &s->kd[c];
        k->fmin = min32(k->fmin, q->fmin), k->fmax = max32(k->fmax, q->fmax);
        k->gmin = min32(k->gmin, q->gmin), k->gmax = max32(k->gmax, q->gmax);
        if (q->best.prio < k->best.prio) k->best = q->best;
    }
}

static mp_status kd_init(strip *s) {
    kpt *p = malloc(s->n * sizeof *p);
    s->kd = malloc((s->n + 1) * sizeof *s->kd);
    if (!p || !s->kd) {
        free(p);
        return MP__NOMEM();
    }
    for (size_t r = 0; r < s->n; r++) p[r] = (kpt){s->lf[r].g, (uint32_t)r};
    kd_build(s, 1, p, 0, s->n, 0);
    free(p);
    return MP_OK;
}

/* Brings node i's best up to date after placements below it. */
static void refresh(strip *s, size_t i) {
    kdn *k = &s->kd[i];
    if (k->best.prio == NONE || s->lf[k->best.r].prio != NONE) return;
    k->best = cand_of(s, k->r);
    for (size_t c = 2 * i; c <= 2 * i + 1 && c <= s->n; c++) {
        refresh(s, c);
        if (s->kd[c].best.prio < k->best.prio) k->best = s->kd[c].best;
    }
}

/* The best buffer below node i with first >= a and end <= e, if it beats
 * *ans.  A stale best bounds from above, so pruning needs no refresh. */
static void kd_search(strip *s, size_t i, uint32_t a, uint32_t e, cand *ans) {
    kdn *k = &s->kd[i];
    if (k->fmax < a || k->gmin > e || k->best.prio >= ans->prio) return;
    refresh(s, i);
    if (k->best.prio >= ans->prio) return;
    if (k->fmin >= a && k->gmax <= e) {
        *ans = k->best;
        return;
    }
    cand own = cand_of(s, k->r);
    if (s->rc[k->r].f >= a && s->lf[k->r].g <= e && own.prio < ans->prio) *ans = own;
    size_t l = 2 * i, r = l + 1;
    if (r <= s->n && s->kd[r].best.prio < s->kd[l].best.prio) l = r, r = 2 * i;
    if (l <= s->n) kd_search(s, l, a, e, ans);
    if (r <= s->n) kd_search(s, r, a, e, ans);
}

/* Rank of the best unplaced buffer for the line [a, e), or MP__NIL.
 * Most lines that nothing fits are a position or two long, and their
 * positions' ming (in the lines just read) say so without reading the
 * buffers: leading positions whose ming is past e are skipped.  Then the
 * ranks of the run not in whole blocks are scanned, the whole blocks
 * searched in the tree. */
static mp_status search(strip *s, uint32_t a, uint32_t e, size_t *out) {
    enum { PEEK = 4 };
    uint32_t p = a;
    while (p < e && p - a < PEEK && s->ln[p].ming > e) p++;
    *out = MP__NIL;
    if (p == e) return MP_OK;
    size_t lo = s->ln[p].run, hi = s->ln[a].erun;
    size_t bl = (lo + BLK - 1) / BLK, bh = hi / BLK; /* whole blocks [bl, bh) */
    cand ans = {NONE, 0};
    if (hi - lo <= SCAN || bl >= bh) {
        if (lo < hi) PREFETCH(&s->rc[lo]); /* place reads one of them */
        scan(s, lo, hi, e, &ans);
    } else {
        scan(s, lo, bl * BLK, e, &ans);
        scan(s, bh * BLK, hi, e, &ans);
        bool done = true;
        s->visits = mp__strip_budget;
        for (size_t l = bl + s->cap, r = bh + s->cap; done && l < r; l /= 2, r /= 2) {
            if (l & 1) done = descend(s, l++, e, &ans);
            if (done && (r & 1)) done = descend(s, --r, e, &ans);
        }
        if (!done) { /* ans so far is a lower bound the 2-d tree starts from */
            mp_status st;
            if (!s->kd && (st = kd_init(s)) != MP_OK) return st;
            kd_search(s, 1, a, e, &ans);
        }
    }
    *out = ans.prio == NONE ? MP__NIL : ans.r;
    return MP_OK;
}

/* Records that the line at a now has height h (never below the last
 * popped height). */
static mp_status push(strip *s, uint32_t a, uint64_t h) { return mp__lowq_push(&s->q, a, h); }

/* ---- the skyline ------------------------------------------------------ */

/* The lowest, then leftmost line.  Every live line has a current key in
 * the queue; a key is current iff its line is live at that height.  The
 * next keys at this height are most likely the next steps' lines. */
static mp_status lowest(strip *s, uint32_t *a) {
    for (;;) {
        uint64_t h;
        mp_status st = mp__lowq_pop(&s->q, a, &h);
        if (st != MP_OK) return st;
        MP__ASSERT(*a != NONE); /* a live line has a key */
        /* Two steps ahead: the line after next (its key), and the ranks
         * of the next line, whose key was loading since the last step. */
        uint32_t n1 = mp__lowq_next(&s->q, *a);
        uint32_t n2 = n1 == NONE ? NONE : mp__lowq_next(&s->q, n1 + 1);
        if (n2 != NONE) PREFETCH(&s->ln[n2]);
        if (n1 != NONE) PREFETCH(&s->lf[s->ln[n1].run]), PREFETCH(&s->rc[s->ln[n1].run]);
        if (s->ln[*a].end && s->ln[*a].h == h) return MP_OK;
    }
}

/* The line after the one at a, NONE at the right end. */
static uint32_t next_of(const strip *s, uint32_t a) {
    return s->ln[a].end == s->m - 1 ? NONE : s->ln[a].end;
}

static void link_next(strip *s, uint32_t a) {
    uint32_t nx = next_of(s, a);
    if (nx != NONE) s->ln[nx].prev = a;
}

/* The line at a absorbs the line at b, which follows it. */
static void absorb(line *ln, uint32_t a, uint32_t b) {
    ln[a].end = ln[b].end, ln[a].erun = ln[b].erun;
    ln[b].end = 0;
}

/* Puts the buffer at rank r on the line at a, whose key was just popped:
 * the line at a and every line whose height changes get a key. */
static mp_status place(strip *s, uint32_t a, size_t r, uint64_t *offset) {
    line *ln = s->ln;
    const rec x = s->rc[r];
    uint32_t e = ln[a].end, er = ln[a].erun, f = x.f, g = s->lf[r].g;
    uint64_t h = ln[a].h, off = s->ashift ? mp__align_up(h, (uint64_t)1 << s->ashift[r]) : h;
    uint64_t top = off + x.size;
    offset[x.x] = off;
    s->top = mp__max64(s->top, top);
    take(s, r);
    if (g == ln[f].ming) { /* f's bound may rise: recompute it where cheap */
        size_t lo = ln[f].run, hi = ln[f + 1].run;
        uint32_t least = NONE;
        for (size_t q = lo; hi - lo <= 2 * BLK && q < hi; q++)
            if (s->lf[q].prio != NONE) least = min32(least, s->lf[q].g);
        if (hi - lo <= 2 * BLK) ln[f].ming = least;
    }
    mp_status st;
    if (g < e) { /* right remainder [g, e) stays at h */
        ln[g].h = h, ln[g].end = e, ln[g].erun = er, ln[g].prev = f;
        link_next(s, g);
        if ((st = push(s, g, h)) != MP_OK) return st;
    }
    if (a < f) { /* left remainder [a, f) stays at h */
        ln[a].end = f, ln[a].erun = ln[f].run;
        ln[f].prev = a;
        if ((st = push(s, a, h)) != MP_OK) return st;
    }
    /* prev is ln[a].prev if f == a */
    ln[f].h = top, ln[f].end = g, ln[f].erun = g < e ? ln[g].run : er;
    link_next(s, f);
    /* The raised line may now be as high as an untouched neighbour. */
    uint32_t nx = g == e ? next_of(s, f) : NONE;
    if (nx != NONE && ln[nx].h == top) {
        absorb(ln, f, nx);
        link_next(s, f);
    }
    uint32_t pv = a == f ? ln[f].prev : NONE;
    if (pv != NONE && ln[pv].h == top) {
        absorb(ln, pv, f);
        link_next(s, pv);
        return MP_OK;
    }
    return push(s, f, top);
}

/* Nothing fits the line at a: merge it into its lower neighbour, or both
 * when they are equally high (sekiyama2018 Fig. 1d). */
static mp_status lift(strip *s, uint32_t a) {
    line *ln = s->ln;
    uint32_t pv = ln[a].prev, nx = next_of(s, a);
    MP__ASSERT(pv != NONE || nx != NONE);
    if (pv != NONE && (nx == NONE || ln[pv].h <= ln[nx].h)) {
        absorb(ln, pv, a);
        if (nx != NONE && ln[nx].h == ln[pv].h) absorb(ln, pv, nx);
        link_next(s, pv);
        return MP_OK;
    }
    ln[a].h = ln[nx].h;
    absorb(ln, a, nx);
    link_next(s, a);
    return push(s, a, ln[a].h);
}

static mp_status pack(strip *s, uint64_t *offset) {
    for (size_t placed = 0, step = 0; placed < s->n; step++) {
        uint32_t a;
        size_t r;
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
    if (n > (UINT32_MAX - 2) / 2)
        return mp__err(MP_EOVERFLOW, "strip-bestfit: more than 2^31 - 2 buffers");
    strip s = {.b = b, .n = n};
    s.lf = malloc(n * sizeof *s.lf);
    s.rc = malloc(n * sizeof *s.rc);
    s.ln = malloc((2 * n + 1) * sizeof *s.ln); /* at most 2n positions */
    mp_status st;
    if (!s.lf || !s.rc || !s.ln) st = MP__NOMEM();
    else if ((st = build(&s)) == MP_OK) st = pack(&s, offset);
    free(s.lf), free(s.rc), free(s.ashift), free(s.ln), free(s.t), free(s.kd);
    mp__lowq_free(&s.q);
    return st;
}
