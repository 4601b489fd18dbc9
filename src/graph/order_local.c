/* order_local.c -- local improvement of an order (the second stage of
 * mp_graph_order_search): move one node earlier or later inside its
 * dependency window while the peak, or at equal peak the number of steps
 * at the peak, strictly decreases.
 *
 * Why a move is cheap to evaluate.  Moving v from step i to step j shifts
 * the steps between by one and changes nothing else for every tensor not
 * related to v: the event order of all other nodes is kept, so each such
 * tensor is live at the same nodes as before.  Only v's outputs and input
 * roots change lifetimes (order_internal.h, model).  Moving v earlier
 * (j < i), the node at old step u in [j, i-1] moves to u+1 and gains v's
 * held outputs and loses each input root r (not a graph output) that v
 * read last, once u >= t_r = max(j, last other reader's new step):
 *
 *     new[u+1] = live[u] + held(v) - sum{ bytes(r) : u >= t_r }
 *     new[j]   = live[j] - alloc(node at j) + alloc(v)
 *
 * (live[j] - alloc(node at j) is what is held across the boundary before
 * step j: it contains v's inputs and not its outputs).  Moving v later
 * (j > i), old step u in [i+1, j] moves to u-1, loses held(v) and keeps
 * each input root alive once u > max(i, last other reader's step):
 *
 *     new[u-1] = live[u] - held(v) + sum{ bytes(r) : u > t_r }
 *     new[j]   = held_after(j) - held(v) + alloc(v) + sum{ bytes(r) : r not
 *                held after j in the old order }
 *
 * So the new values in the range are the old ones plus a step function
 * with at most deg(v) + 1 pieces.  A segment tree over live[] holding
 * (max, count of max) answers each piece in O(log n): a move is evaluated
 * in O(deg(v) log n + reads of v's inputs), independent of how far it
 * goes; an accepted move rewrites its range, O(|i - j| + log n).
 *
 * A pass visits every node once (in the order at the start of the pass).
 * Nodes whose window holds no peak step are skipped (no move of theirs can
 * lower the peak or the count).  Targets tried: both ends of the window,
 * the neighbouring step, and the first and last peak steps in the part of
 * the window the node crosses.  The best improving target is taken.  A
 * pass stops early once the steps rewritten by accepted moves exceed
 * 64 n, so a pass costs O((n + edges) log n + reads + 64 n).  Passes stop
 * when one accepts nothing or after max_passes. */
#include "order_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct seg {
    int64_t max;
    size_t cnt;
} seg;

typedef struct thr {
    int64_t at;     /* last other reader's step, -1 when none */
    int64_t bytes;
} thr;

typedef struct piece {
    int64_t start;  /* first old step the delta applies to */
    int64_t delta;
} piece;

typedef struct lstate {
    const mp__omodel *m;
    size_t n, size;
    seg *t;
    int64_t *prof, *tmp;
    size_t *ord, *pos;
    thr *thr;
    piece *pc;
    size_t nthr;
    int64_t out_bytes;  /* held after the last step: the graph outputs */
} lstate;

static const seg NOSEG = {INT64_MIN, 0};

static inline seg combine(seg a, seg b) {
    if (a.max > b.max) return a;
    if (b.max > a.max) return b;
    return (seg){a.max, a.cnt + b.cnt};
}

static inline bool sbetter(seg a, seg b) {
    return a.max < b.max || (a.max == b.max && a.cnt < b.cnt);
}

/* (max, count) over steps [l, r]; NOSEG when empty. */
static seg query(const lstate *s, size_t l, size_t r) {
    seg a = NOSEG, b = NOSEG;
    if (l > r) return NOSEG;
    for (l += s->size, r += s->size + 1; l < r; l >>= 1, r >>= 1) {
        if (l & 1) a = combine(a, s->t[l++]);
        if (r & 1) b = combine(s->t[--r], b);
    }
    return combine(a, b);
}

/* Rewrites the leaves of [l, r] from prof and their ancestors. */
static void refresh(lstate *s, size_t l, size_t r) {
    for (size_t p = l; p <= r; p++) s->t[s->size + p] = (seg){s->prof[p], 1};
    for (l = (l + s->size) >> 1, r = (r + s->size) >> 1; l; l >>= 1, r >>= 1)
        for (size_t x = l; x <= r; x++) s->t[x] = combine(s->t[2 * x], s->t[2 * x + 1]);
}

/* First (last = 0) or last (last = 1) step in [l, r] at value >= P, or
 * MP_GRAPH_NONE.  Descends only into subtrees that hold one. */
static size_t find(const lstate *s, size_t x, size_t nl, size_t nr, size_t l, size_t r,
                   int64_t P, int last) {
    if (nr < l || nl > r || s->t[x].max < P) return MP_GRAPH_NONE;
    if (nl == nr) return nl;
    size_t mid = nl + (nr - nl) / 2, got;
    if (!last) {
        got = find(s, 2 * x, nl, mid, l, r, P, last);
        return got != MP_GRAPH_NONE ? got : find(s, 2 * x + 1, mid + 1, nr, l, r, P, last);
    }
    got = find(s, 2 * x + 1, mid + 1, nr, l, r, P, last);
    return got != MP_GRAPH_NONE ? got : find(s, 2 * x, nl, mid, l, r, P, last);
}

static size_t find_peak(const lstate *s, size_t l, size_t r, int last) {
    if (l > r) return MP_GRAPH_NONE;
    return find(s, 1, 0, s->size - 1, l, r, s->t[1].max, last);
}

static int thr_cmp(const void *a, const void *b) {
    int64_t x = ((const thr *)a)->at, y = ((const thr *)b)->at;
    return (x > y) - (x < y);
}

/* A move of v from i to j: the old steps [a, z] that shift, the offsets
 * added to them (base + pieces), and v's value at its new step. */
typedef struct move {
    size_t i, j, a, z, np;
    int64_t base, vval;
} move;

/* Fills mv (and s->pc) for moving v from i to j; s->thr holds v's input
 * roots sorted by their last other reader's step. */
static void prepare(lstate *s, size_t v, size_t i, size_t j, move *mv) {
    const mp__omodel *m = s->m;
    mv->i = i;
    mv->j = j;
    mv->np = 0;
    if (j < i) {
        mv->a = j;
        mv->z = i - 1;
        mv->base = m->held[v];
        mv->vval = s->prof[j] - m->alloc[s->ord[j]] + m->alloc[v];
        for (size_t k = 0; k < s->nthr; k++) {
            int64_t at = s->thr[k].at;
            if (at >= (int64_t)j && at <= (int64_t)i - 1) at++; /* shifted with the range */
            if (at < (int64_t)j) at = (int64_t)j;
            s->pc[mv->np++] = (piece){at, -s->thr[k].bytes};
        }
    } else {
        mv->a = i + 1;
        mv->z = j;
        mv->base = -m->held[v];
        int64_t after = j + 1 < s->n ? s->prof[j + 1] - m->alloc[s->ord[j + 1]] : s->out_bytes;
        mv->vval = after - m->held[v] + m->alloc[v];
        for (size_t k = 0; k < s->nthr; k++) {
            int64_t at = s->thr[k].at;
            if (at <= (int64_t)j) mv->vval += s->thr[k].bytes;
            if (at < (int64_t)i) at = (int64_t)i;
            s->pc[mv->np++] = (piece){at + 1, s->thr[k].bytes};
        }
    }
}

/* (peak, count) of the profile after mv: unchanged steps from the tree,
 * the shifted range piece by piece with its offset, and v's new step. */
static seg evaluate(const lstate *s, const move *mv) {
    size_t lo = mv->i < mv->j ? mv->i : mv->j, hi = mv->i < mv->j ? mv->j : mv->i;
    seg acc = combine(lo ? query(s, 0, lo - 1) : NOSEG, query(s, hi + 1, s->n - 1));
    acc = combine(acc, (seg){mv->vval, 1});
    size_t cur = mv->a;
    int64_t off = mv->base;
    for (size_t k = 0; k < mv->np; k++) {
        int64_t st = s->pc[k].start;
        if (st > (int64_t)mv->z) break;
        if (st > (int64_t)cur) {
            seg q = query(s, cur, (size_t)st - 1);
            acc = combine(acc, (seg){q.max + off, q.cnt});
            cur = (size_t)st;
        }
        off += s->pc[k].delta;
    }
    seg q = query(s, cur, mv->z);
    if (q.cnt) acc = combine(acc, (seg){q.max + off, q.cnt});
    return acc;
}

/* Performs mv: the shifted steps get their new values and positions, v its
 * new step; the tree is refreshed over the range. */
static void apply_move(lstate *s, size_t v, const move *mv) {
    size_t i = mv->i, j = mv->j, k = 0;
    int64_t off = mv->base;
    for (size_t u = mv->a; u <= mv->z; u++) {
        while (k < mv->np && s->pc[k].start <= (int64_t)u) off += s->pc[k++].delta;
        s->tmp[u - mv->a] = s->prof[u] + off;
    }
    size_t lo = i < j ? i : j, hi = i < j ? j : i;
    if (j < i) {
        for (size_t u = i; u-- > j;) {
            s->ord[u + 1] = s->ord[u];
            s->prof[u + 1] = s->tmp[u - mv->a];
        }
    } else {
        for (size_t u = i + 1; u <= j; u++) {
            s->ord[u - 1] = s->ord[u];
            s->prof[u - 1] = s->tmp[u - mv->a];
        }
    }
    s->ord[j] = v;
    s->prof[j] = mv->vval;
    for (size_t p = lo; p <= hi; p++) s->pos[s->ord[p]] = p;
    refresh(s, lo, hi);
}

/* One pass; returns the number of moves accepted. */
static size_t pass(lstate *s, size_t *snap, size_t *check_pos, int64_t *check_prof) {
    const mp__omodel *m = s->m;
    size_t n = s->n, accepted = 0, budget = 64 * n;
    memcpy(snap, s->ord, n * sizeof *snap);
    (void)check_pos;
    (void)check_prof;
    for (size_t idx = 0; idx < n && budget; idx++) {
        size_t v = snap[idx], i = s->pos[v], lo = 0, hi = n - 1;
        if (m->dead0 && i == 0) continue; /* step 0 also holds the dead inputs */
        for (size_t k = m->pred_off[v]; k < m->pred_off[v + 1]; k++)
            if (s->pos[m->pred[k]] + 1 > lo) lo = s->pos[m->pred[k]] + 1;
        for (size_t k = m->succ_off[v]; k < m->succ_off[v + 1]; k++)
            if (s->pos[m->succ[k]] - 1 < hi) hi = s->pos[m->succ[k]] - 1;
        if (m->dead0 && lo == 0) lo = 1;
        seg cur = s->t[1];
        if (lo == hi || query(s, lo, hi).max < cur.max) continue;
        s->nthr = 0;
        for (size_t k = m->in_off[v]; k < m->in_off[v + 1]; k++) {
            size_t r = m->in[k];
            if (m->is_out[r]) continue; /* never freed: moving v changes nothing */
            int64_t at = -1;
            for (size_t q = m->rd_off[r]; q < m->rd_off[r + 1]; q++)
                if (m->rd[q] != v && (int64_t)s->pos[m->rd[q]] > at) at = (int64_t)s->pos[m->rd[q]];
            s->thr[s->nthr++] = (thr){at, m->bytes[r]};
        }
        if (s->nthr > 1) qsort(s->thr, s->nthr, sizeof *s->thr, thr_cmp);
        size_t cand[8], nc = 0;
        if (lo < i) {
            cand[nc++] = lo;
            cand[nc++] = i - 1;
            cand[nc++] = find_peak(s, lo, i - 1, 0);
            cand[nc++] = find_peak(s, lo, i - 1, 1);
        }
        if (i < hi) {
            cand[nc++] = hi;
            cand[nc++] = i + 1;
            cand[nc++] = find_peak(s, i + 1, hi, 0);
            cand[nc++] = find_peak(s, i + 1, hi, 1);
        }
        seg best = cur;
        size_t bestj = MP_GRAPH_NONE;
        move mv;
        for (size_t c = 0; c < nc; c++) {
            size_t j = cand[c];
            bool dup = j == MP_GRAPH_NONE;
            for (size_t d = 0; d < c && !dup; d++) dup = cand[d] == j;
            if (dup) continue;
            size_t a = i < j ? i : j, b = i < j ? j : i;
            if (query(s, a, b).max < cur.max) continue; /* touches no peak step */
            prepare(s, v, i, j, &mv);
            seg sc = evaluate(s, &mv);
            if (sbetter(sc, best)) {
                best = sc;
                bestj = j;
            }
        }
        if (bestj == MP_GRAPH_NONE) continue;
        prepare(s, v, i, bestj, &mv);
        apply_move(s, v, &mv);
        accepted++;
        size_t work = (i < bestj ? bestj - i : i - bestj) + 1;
        budget = work < budget ? budget - work : 0;
#ifdef MP_DEBUG
        /* The incremental profile must be the one recomputed from scratch. */
        int64_t peak = mp__omodel_profile(m, s->ord, check_prof, check_pos);
        MP__ASSERT(peak == s->t[1].max);
        for (size_t p = 0; p < n; p++) MP__ASSERT(check_prof[p] == s->prof[p]);
        for (size_t p = 0; p < n; p++) MP__ASSERT(check_pos[s->ord[p]] == p);
        (void)peak;
#endif
    }
    return accepted;
}

mp_status mp__order_improve(const mp__omodel *m, size_t *order, size_t max_passes,
                            size_t *passes) {
    size_t n = m->n;
    *passes = 0;
    if (n < 2 || !max_passes) return MP_OK;
    lstate s;
    memset(&s, 0, sizeof s);
    s.m = m;
    s.n = n;
    s.size = 1;
    while (s.size < n) s.size *= 2;
    size_t max_in = 1;
    for (size_t v = 0; v < n; v++)
        if (m->in_off[v + 1] - m->in_off[v] > max_in) max_in = m->in_off[v + 1] - m->in_off[v];
    s.t = malloc(2 * s.size * sizeof *s.t);
    s.prof = malloc(n * sizeof *s.prof);
    s.tmp = malloc(n * sizeof *s.tmp);
    s.ord = malloc(n * sizeof *s.ord);
    s.pos = malloc(n * sizeof *s.pos);
    s.thr = malloc(max_in * sizeof *s.thr);
    s.pc = malloc(max_in * sizeof *s.pc);
    size_t *snap = malloc(n * sizeof *snap);
    size_t *check_pos = NULL;
    int64_t *check_prof = NULL;
    mp_status st = MP_OK;
#ifdef MP_DEBUG
    check_pos = malloc(n * sizeof *check_pos);
    check_prof = malloc(n * sizeof *check_prof);
    if (!check_pos || !check_prof) st = MP__NOMEM();
#endif
    if (!s.t || !s.prof || !s.tmp || !s.ord || !s.pos || !s.thr || !s.pc || !snap) st = MP__NOMEM();
    if (!st) {
        memcpy(s.ord, order, n * sizeof *order);
        mp__omodel_profile(m, s.ord, s.prof, s.pos);
        for (size_t r = 0; r < m->nr; r++)
            if (m->is_out[r]) s.out_bytes += m->bytes[r];
        /* Leaves first, then every inner node bottom-up (refresh() would
         * read inner nodes right of the leaves' parents before they are
         * set: valgrind's uninitialised reads of issue 13). */
        for (size_t p = 0; p < n; p++) s.t[s.size + p] = (seg){s.prof[p], 1};
        for (size_t p = n; p < s.size; p++) s.t[s.size + p] = NOSEG;
        for (size_t x = s.size - 1; x >= 1; x--) s.t[x] = combine(s.t[2 * x], s.t[2 * x + 1]);
        while (*passes < max_passes) {
            ++*passes;
            if (!pass(&s, snap, check_pos, check_prof)) break;
        }
        memcpy(order, s.ord, n * sizeof *order);
    }
    free(s.t);
    free(s.prof);
    free(s.tmp);
    free(s.ord);
    free(s.pos);
    free(s.thr);
    free(s.pc);
    free(snap);
    free(check_pos);
    free(check_prof);
    return st;
}
