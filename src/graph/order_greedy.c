/* order_greedy.c -- greedy list scheduling for a low peak, with a bounded
 * lookahead (the first stage of mp_graph_order_search).
 *
 * State after some steps: L, the bytes held; P, the peak so far; for each
 * root the number of its readers still to run and the sum of their ids
 * (when one reader is left, the sum is its id: O(1) to find, no scan); for
 * each node fdyn, the bytes its run would free from its inputs (roots it is
 * the last remaining reader of, already produced, not graph outputs),
 * raised incrementally when a root gets down to one reader.  A ready
 * node's key is delta = held(v) - fdyn(v), what running it adds to L;
 * ties go to the node's position in the given order, so where nothing is
 * to be gained the given order comes back.
 *
 * Each step takes the BRANCH best ready nodes by key from a lazy heap
 * (stale entries carry an old version and are skipped) and scores each by
 * a lookahead of depth d: run it, then recursively the BRANCH best of the
 * candidates left plus what the run made ready or cheaper, down to depth
 * d; a sequence's score is (peak reached, bytes held at its end),
 * compared in that order; a node's score is its best sequence's.  The
 * best-scoring candidate runs (ties: key order); the others go back to the
 * heap.  Runs are undone exactly (unapply reverses apply).
 *
 * Cost: O(n log n + reads) for the heap and bookkeeping, plus per step
 * BRANCH^(d-1) simulated runs of O(degree) each, so about
 * O(BRANCH^(d-1) (n + edges + reads)) in all; 4 runs per step at the
 * default depth 2. */
#include "order_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct hent {
    int64_t key;
    size_t gpos, node, ver;
} hent;

typedef struct score {
    int64_t peak, live;
} score;

typedef struct gstate {
    const mp__omodel *m;
    size_t *indeg, *remaining, *idsum, *ver, *stamp;
    unsigned char *produced, *done;
    int64_t *fdyn;
    int64_t L, P;
    size_t step, stampv;
    hent *heap;
    size_t hn;
    size_t *lvl;     /* per lookahead level: a pool of width entries */
    size_t width;
    size_t *touched; /* per level: max_deg entries */
} gstate;

static inline int64_t key_of(const gstate *s, size_t v) { return s->m->held[v] - s->fdyn[v]; }

static inline bool hless(const hent *a, const hent *b) {
    return a->key < b->key || (a->key == b->key && a->gpos < b->gpos);
}

static void hpush(gstate *s, size_t v) {
    hent e = {key_of(s, v), s->m->gpos[v], v, ++s->ver[v]};
    size_t i = s->hn++;
    while (i && hless(&e, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = e;
}

/* Re-inserts an entry as it was (a candidate not chosen stays valid). */
static void hrepush(gstate *s, hent e) {
    size_t i = s->hn++;
    while (i && hless(&e, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = e;
}

static hent hpop(gstate *s) {
    hent top = s->heap[0], last = s->heap[--s->hn];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->hn) break;
        if (c + 1 < s->hn && hless(&s->heap[c + 1], &s->heap[c])) c++;
        if (!hless(&s->heap[c], &last)) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->hn) s->heap[i] = last;
    return top;
}

static inline bool ready(const gstate *s, size_t v) { return !s->done[v] && !s->indeg[v]; }

/* Runs c: updates counters, and lists in touched the nodes whose fdyn rose
 * or that became ready (possibly twice).  Returns how many. */
static size_t apply(gstate *s, size_t c, size_t *touched) {
    const mp__omodel *m = s->m;
    size_t nt = 0;
    s->done[c] = 1;
    for (size_t k = m->in_off[c]; k < m->in_off[c + 1]; k++) {
        size_t r = m->in[k];
        s->remaining[r]--;
        s->idsum[r] -= c;
        if (s->remaining[r] == 1 && s->produced[r] && !m->is_out[r]) {
            s->fdyn[s->idsum[r]] += m->bytes[r];
            touched[nt++] = s->idsum[r];
        }
    }
    for (size_t k = m->out_off[c]; k < m->out_off[c + 1]; k++) {
        size_t r = m->out[k];
        s->produced[r] = 1;
        if (s->remaining[r] == 1 && !m->is_out[r]) {
            s->fdyn[s->idsum[r]] += m->bytes[r];
            touched[nt++] = s->idsum[r];
        }
    }
    for (size_t k = m->succ_off[c]; k < m->succ_off[c + 1]; k++)
        if (!--s->indeg[m->succ[k]]) touched[nt++] = m->succ[k];
    return nt;
}

/* Exactly undoes apply(s, c). */
static void unapply(gstate *s, size_t c) {
    const mp__omodel *m = s->m;
    for (size_t k = m->succ_off[c]; k < m->succ_off[c + 1]; k++) s->indeg[m->succ[k]]++;
    for (size_t k = m->out_off[c]; k < m->out_off[c + 1]; k++) {
        size_t r = m->out[k];
        if (s->remaining[r] == 1 && !m->is_out[r]) s->fdyn[s->idsum[r]] -= m->bytes[r];
        s->produced[r] = 0;
    }
    for (size_t k = m->in_off[c]; k < m->in_off[c + 1]; k++) {
        size_t r = m->in[k];
        if (s->remaining[r] == 1 && s->produced[r] && !m->is_out[r])
            s->fdyn[s->idsum[r]] -= m->bytes[r];
        s->remaining[r]++;
        s->idsum[r] += c;
    }
    s->done[c] = 0;
}

static inline bool sless(score a, score b) {
    return a.peak < b.peak || (a.peak == b.peak && a.live < b.live);
}

static inline bool kless(const gstate *s, size_t a, size_t b) {
    int64_t ka = key_of(s, a), kb = key_of(s, b);
    return ka < kb || (ka == kb && s->m->gpos[a] < s->m->gpos[b]);
}

/* Score of running c now and then the best continuation of depth d drawn
 * from pool[0..np) (ready nodes other than c) and what c's run touches. */
static score sim(gstate *s, size_t c, size_t d, const size_t *pool, size_t np) {
    const mp__omodel *m = s->m;
    int64_t step_peak = s->L + m->alloc[c] + (s->step == 0 ? m->dead0 : 0);
    score here = {step_peak > s->P ? step_peak : s->P, s->L + m->held[c] - s->fdyn[c]};
    if (!d || s->step + 1 >= m->n) return here;
    int64_t L0 = s->L, P0 = s->P;
    size_t *touched = s->touched + d * (m->max_deg + 1);
    size_t nt = apply(s, c, touched);
    s->L = here.live;
    s->P = here.peak;
    s->step++;
    /* The next level's pool: what is left, plus newly ready or cheaper. */
    size_t *p2 = s->lvl + d * s->width, n2 = 0;
    size_t sv = ++s->stampv;
    for (size_t i = 0; i < np; i++) {
        p2[n2++] = pool[i];
        s->stamp[pool[i]] = sv;
    }
    for (size_t i = 0; i < nt; i++) {
        size_t w = touched[i];
        if (s->stamp[w] != sv && ready(s, w)) {
            s->stamp[w] = sv;
            p2[n2++] = w;
        }
    }
    /* Its BRANCH best by key to the front (selection: the pool is small). */
    size_t top = n2 < MP__ORDER_BRANCH ? n2 : MP__ORDER_BRANCH;
    for (size_t i = 0; i < top; i++) {
        size_t b = i;
        for (size_t j = i + 1; j < n2; j++)
            if (kless(s, p2[j], p2[b])) b = j;
        size_t t = p2[i];
        p2[i] = p2[b];
        p2[b] = t;
    }
    score best = here;
    for (size_t i = 0; i < top; i++) {
        /* The child's pool is p2 without entry i: swap it to the end. */
        size_t c2 = p2[i];
        p2[i] = p2[n2 - 1];
        p2[n2 - 1] = c2;
        score sc = sim(s, c2, d - 1, p2, n2 - 1);
        p2[n2 - 1] = p2[i];
        p2[i] = c2;
        if (i == 0 || sless(sc, best)) best = sc;
    }
    s->step--;
    s->L = L0;
    s->P = P0;
    unapply(s, c);
    return best;
}

static void state_free(gstate *s) {
    free(s->indeg);
    free(s->remaining);
    free(s->idsum);
    free(s->ver);
    free(s->stamp);
    free(s->produced);
    free(s->done);
    free(s->fdyn);
    free(s->heap);
    free(s->lvl);
    free(s->touched);
}

mp_status mp__order_greedy(const mp__omodel *m, size_t lookahead, size_t *order) {
    size_t n = m->n, nr = m->nr;
    if (!n) return MP_OK;
    if (lookahead < 1) lookahead = 1;
    if (lookahead > MP__ORDER_MAX_LOOKAHEAD) lookahead = MP__ORDER_MAX_LOOKAHEAD;
    gstate s;
    memset(&s, 0, sizeof s);
    s.m = m;
    size_t n1 = n ? n : 1, r1 = nr ? nr : 1;
    /* Heap entries: every node once when ready, once per rise of its fdyn
     * (at most once per input), and the candidates put back each step. */
    size_t hcap = n + m->in_off[n] + m->out_off[n] + m->succ_off[n] + MP__ORDER_BRANCH + 1;
    s.width = MP__ORDER_BRANCH + (lookahead + 1) * (m->max_deg + 1);
    s.indeg = malloc(n1 * sizeof *s.indeg);
    s.remaining = malloc(r1 * sizeof *s.remaining);
    s.idsum = malloc(r1 * sizeof *s.idsum);
    s.ver = calloc(n1, sizeof *s.ver);
    s.stamp = calloc(n1, sizeof *s.stamp);
    s.produced = calloc(r1, 1);
    s.done = calloc(n1, 1);
    s.fdyn = calloc(n1, sizeof *s.fdyn);
    s.heap = malloc(hcap * sizeof *s.heap);
    s.lvl = malloc((lookahead + 1) * s.width * sizeof *s.lvl);
    s.touched = malloc((lookahead + 1) * (m->max_deg + 1) * sizeof *s.touched);
    if (!s.indeg || !s.remaining || !s.idsum || !s.ver || !s.stamp || !s.produced || !s.done ||
        !s.fdyn || !s.heap || !s.lvl || !s.touched) {
        state_free(&s);
        return MP__NOMEM();
    }
    for (size_t r = 0; r < nr; r++) {
        s.remaining[r] = m->rd_off[r + 1] - m->rd_off[r];
        s.idsum[r] = 0;
        for (size_t k = m->rd_off[r]; k < m->rd_off[r + 1]; k++) s.idsum[r] += m->rd[k];
        s.produced[r] = m->producer[r] == MP_GRAPH_NONE;
        if (s.produced[r] && s.remaining[r] == 1 && !m->is_out[r])
            s.fdyn[s.idsum[r]] += m->bytes[r];
    }
    s.L = m->init_held;
    for (size_t v = 0; v < n; v++) {
        s.indeg[v] = m->pred_off[v + 1] - m->pred_off[v];
        if (!s.indeg[v]) hpush(&s, v);
    }
    hent cand[MP__ORDER_BRANCH];
    size_t pool[MP__ORDER_BRANCH];
    mp_status st = MP_OK;
    for (size_t step = 0; step < n; step++) {
        size_t nc = 0;
        while (nc < MP__ORDER_BRANCH && s.hn) {
            hent e = hpop(&s);
            if (!s.done[e.node] && e.ver == s.ver[e.node]) cand[nc++] = e;
        }
        if (!nc) { /* cannot happen on an acyclic model */
            st = mp__err(MP_EINVAL, "graph: order search found no ready node at step %zu", step);
            break;
        }
        size_t pick = 0;
        if (nc > 1) {
            score best = {0, 0};
            for (size_t i = 0; i < nc; i++) {
                size_t np = 0;
                for (size_t j = 0; j < nc; j++)
                    if (j != i) pool[np++] = cand[j].node;
                score sc = sim(&s, cand[i].node, lookahead - 1, pool, np);
                if (i == 0 || sless(sc, best)) {
                    best = sc;
                    pick = i;
                }
            }
        }
        size_t c = cand[pick].node;
        int64_t step_peak = s.L + m->alloc[c] + (step == 0 ? m->dead0 : 0);
        if (step_peak > s.P) s.P = step_peak;
        s.L += m->held[c] - s.fdyn[c];
        size_t nt = apply(&s, c, s.touched);
        for (size_t i = 0; i < nc; i++)
            if (i != pick) hrepush(&s, cand[i]);
        for (size_t i = 0; i < nt; i++)
            if (ready(&s, s.touched[i])) hpush(&s, s.touched[i]);
        s.step = step + 1;
        order[step] = c;
    }
    state_free(&s);
    return st;
}
