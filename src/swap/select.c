/* select.c -- AutoSwap's selection (zhang2019 sec. IV-D) in two modes.
 *
 * Candidates are ranked by a key (one score, or BO's weighted sum) and
 * taken in that order.
 *   limit:        taken while the peak of the updated load (each taken
 *                 candidate out over the ops inside its gap: the paper's
 *                 LOAD') is above the limit; the plan is then simulated
 *                 with the limit enforced, which gives its real overhead.
 *                 The updated load is a segment tree over ops with range
 *                 add and global max: O((n + ops) log ops).
 *   no overhead:  the longest prefix of the ranking whose simulation (no
 *                 limit) has no stall, found by bisection on the prefix
 *                 length (stall grows with the prefix in practice; the
 *                 result is simulated and always has zero stall), then
 *                 the next candidates in rank order, each kept when the
 *                 plan stays stall-free and its peak falls (48 tries at
 *                 most): O(log n + 48) simulations.
 * A limit below load_min (mp_swap_load_min) cannot be met by the
 * candidates and is refused with load_min in the message. */
#include "swap_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp_swap_select_opts_default(mp_swap_select_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->mode = MP_SWAP_NO_OVERHEAD;
    o->score = MP_SWAP_BO;
    o->min_size = 1u << 20;
    o->bo_evals = 40;
    o->seed = 1;
}

/* ---- the updated load: a max segment tree with lazy range add ---------- */

typedef struct segtree {
    size_t n;
    int64_t *mx, *lazy;
} segtree;

static void st_build(segtree *t, size_t node, size_t lo, size_t hi, const uint64_t *v) {
    if (hi - lo == 1) {
        t->mx[node] = (int64_t)v[lo];
        return;
    }
    size_t mid = lo + (hi - lo) / 2;
    st_build(t, 2 * node, lo, mid, v), st_build(t, 2 * node + 1, mid, hi, v);
    t->mx[node] = t->mx[2 * node] > t->mx[2 * node + 1] ? t->mx[2 * node] : t->mx[2 * node + 1];
}

static void st_add(segtree *t, size_t node, size_t lo, size_t hi, size_t a, size_t b, int64_t d) {
    if (b <= lo || hi <= a) return;
    if (a <= lo && hi <= b) {
        t->mx[node] += d, t->lazy[node] += d;
        return;
    }
    size_t mid = lo + (hi - lo) / 2;
    st_add(t, 2 * node, lo, mid, a, b, d), st_add(t, 2 * node + 1, mid, hi, a, b, d);
    int64_t l = t->mx[2 * node], r = t->mx[2 * node + 1];
    t->mx[node] = (l > r ? l : r) + t->lazy[node];
}

static mp_status st_make(segtree *t, const uint64_t *load, size_t n) {
    t->n = n;
    t->mx = calloc(4 * n + 4, sizeof *t->mx);
    t->lazy = calloc(4 * n + 4, sizeof *t->lazy);
    if (!t->mx || !t->lazy) return free(t->mx), free(t->lazy), MP__NOMEM();
    if (n) st_build(t, 1, 0, n, load);
    return MP_OK;
}

/* Takes a candidate out over the ops inside its gap. */
static void st_take(segtree *t, const mp_swap_item_t *c, int64_t size) {
    if (!t->n) return;
    if (c->after < c->before) {
        st_add(t, 1, 0, t->n, c->after + 1, c->before, -size);
    } else {
        st_add(t, 1, 0, t->n, c->after + 1, t->n, -size);
        st_add(t, 1, 0, t->n, 0, c->before, -size);
    }
}

/* ---- plans --------------------------------------------------------------- */

static mp_status plan_prefix(const mp_swap_item_t *cand, const size_t *order, size_t k,
                             const char *score, mp_swap_plan_t *plan) {
    memset(plan, 0, sizeof *plan);
    plan->item = malloc((k + 1) * sizeof *plan->item);
    if (!plan->item) return MP__NOMEM();
    for (size_t i = 0; i < k; i++) plan->item[i] = cand[order[i]];
    plan->n = k;
    snprintf(plan->score, sizeof plan->score, "%s", score);
    return MP_OK;
}

/* Ranks by key, highest first; ties by candidate index (deterministic). */
typedef struct keyed {
    double key;
    size_t i;
} keyed;

static int by_key(const void *a, const void *b) {
    const keyed *x = a, *y = b;
    if (x->key != y->key) return x->key > y->key ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

static mp_status rank(const double *key, size_t n, size_t **order) {
    keyed *k = malloc((n + 1) * sizeof *k);
    *order = malloc((n + 1) * sizeof **order);
    if (!k || !*order) return free(k), free(*order), *order = NULL, MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (keyed){key[i], i};
    qsort(k, n, sizeof *k, by_key);
    for (size_t i = 0; i < n; i++) (*order)[i] = k[i].i;
    free(k);
    return MP_OK;
}

/* The prefix length that brings LOAD' to the limit (n when none does). */
static mp_status limit_prefix(const mp_swap_iter_t *it, const mp_swap_item_t *cand,
                              const size_t *order, size_t n, uint64_t limit, size_t *k) {
    uint64_t *load = malloc((it->n_ops + 1) * sizeof *load), peak;
    size_t peak_op;
    segtree t = {0};
    mp_status s = load ? mp_swap_load(it, load, &peak, &peak_op) : MP__NOMEM();
    if (!s) s = st_make(&t, load, it->n_ops);
    size_t i = 0;
    while (!s && i < n && (t.n ? (uint64_t)t.mx[1] : 0) > limit) {
        st_take(&t, &cand[order[i]], (int64_t)it->var[cand[order[i]].var].size);
        i++;
    }
    *k = i;
    free(load), free(t.mx), free(t.lazy);
    return s;
}

/* Simulates the first k of the ranking. */
static mp_status simulate_prefix(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                                 const mp_swap_item_t *cand, const size_t *order, size_t k,
                                 uint64_t limit, const char *score, mp_swap_plan_t *plan,
                                 mp_swap_sim_t *sim) {
    mp_status s = plan_prefix(cand, order, k, score, plan);
    if (!s) s = mp_swap_simulate(it, link, plan, limit, sim);
    if (s) mp_swap_plan_free(plan);
    return s;
}

/* The longest zero-stall prefix by bisection over [0, n]; *k its length. */
static mp_status no_overhead_prefix(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                                    const mp_swap_item_t *cand, const size_t *order, size_t n,
                                    size_t *k) {
    size_t lo = 0, hi = n;          /* prefix lo has no stall; find the largest */
    while (lo < hi) {
        size_t mid = lo + (hi - lo + 1) / 2;
        mp_swap_plan_t p;
        mp_swap_sim_t sim;
        mp_status s = simulate_prefix(it, link, cand, order, mid, 0, "", &p, &sim);
        if (s) return s;
        bool ok = sim.stall_ns == 0;
        mp_swap_sim_free(&sim), mp_swap_plan_free(&p);
        if (ok) lo = mid;
        else hi = mid - 1;
    }
    *k = lo;
    return MP_OK;
}

/* After the prefix, the next candidates of the ranking are tried one by
 * one (at most EXTEND_TRIES simulations): one is kept when the plan stays
 * free of stalls and its peak falls.  order is rearranged so that the
 * kept ones follow the prefix; *k grows by their number. */
#define EXTEND_TRIES 48

static mp_status extend_no_overhead(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                                    const mp_swap_item_t *cand, size_t *order, size_t n,
                                    size_t *k) {
    mp_swap_plan_t p;
    mp_swap_sim_t sim;
    mp_status s = simulate_prefix(it, link, cand, order, *k, 0, "", &p, &sim);
    if (s) return s;
    uint64_t peak = sim.peak;
    mp_swap_sim_free(&sim), mp_swap_plan_free(&p);
    for (size_t t = *k, tries = 0; t < n && tries < EXTEND_TRIES; t++, tries++) {
        size_t keep = order[*k];
        order[*k] = order[t], order[t] = keep;           /* try order[t] next */
        if ((s = simulate_prefix(it, link, cand, order, *k + 1, 0, "", &p, &sim))) return s;
        bool better = sim.stall_ns == 0 && sim.peak < peak;
        if (better) peak = sim.peak, (*k)++;
        else order[t] = order[*k], order[*k] = keep;      /* undo */
        mp_swap_sim_free(&sim), mp_swap_plan_free(&p);
    }
    return MP_OK;
}

mp_status mp__swap_select_ranked(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                                 const mp_swap_select_opts_t *o, const mp_swap_item_t *cand,
                                 size_t n, const double *key, const char *score,
                                 mp_swap_plan_t *plan, mp_swap_sim_t *sim) {
    size_t *order, k = 0;
    mp_status s = rank(key, n, &order);
    if (s) return s;
    if (o->mode == MP_SWAP_LIMIT) s = limit_prefix(it, cand, order, n, o->limit, &k);
    else s = no_overhead_prefix(it, link, cand, order, n, &k);
    if (!s && o->mode != MP_SWAP_LIMIT) s = extend_no_overhead(it, link, cand, order, n, &k);
    mp_swap_sim_t local, *out = sim ? sim : &local;
    uint64_t limit = o->mode == MP_SWAP_LIMIT ? o->limit : 0;
    if (!s) s = simulate_prefix(it, link, cand, order, k, limit, score, plan, out);
    /* LOAD' ignores timing: when the simulation misses the limit, take
     * the next candidates too, one at a time (EXTEND_TRIES at most). */
    for (size_t t = 0; !s && !out->limit_met && k < n && t < EXTEND_TRIES; t++) {
        mp_swap_plan_free(plan), mp_swap_sim_free(out);
        s = simulate_prefix(it, link, cand, order, ++k, limit, score, plan, out);
    }
    if (!s && !sim) mp_swap_sim_free(&local);
    free(order);
    return s;
}

static const char *score_name(mp_swap_score s) {
    static const char *names[] = {"doa", "aoa", "wdoa", "swdoa", "bo"};
    return s <= MP_SWAP_BO ? names[s] : "?";
}

/* The four scores of the candidates, score-major: k * n + i. */
mp_status mp__swap_all_scores(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                              const mp_swap_item_t *cand, size_t n, double **scores) {
    *scores = malloc((4 * n + 1) * sizeof **scores);
    if (!*scores) return MP__NOMEM();
    double *s = *scores;
    mp_status st = mp_swap_scores(it, link, cand, n, s, s + n, s + 2 * n, s + 3 * n);
    if (st) free(*scores), *scores = NULL;
    return st;
}

static mp_status check_limit(const mp_swap_iter_t *it, const mp_swap_select_opts_t *o) {
    if (o->mode != MP_SWAP_LIMIT) return MP_OK;
    uint64_t load_min;
    mp_status s = mp_swap_load_min(it, o->min_size, &load_min);
    if (!s && o->limit < load_min)
        s = mp__err(MP_EINVAL, "limit %llu bytes is below load_min %llu bytes, the least load "
                    "swapping every candidate can reach", (unsigned long long)o->limit,
                    (unsigned long long)load_min);
    return s;
}

mp_status mp_swap_select(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                         const mp_swap_select_opts_t *opts, mp_swap_plan_t *plan,
                         mp_swap_sim_t *sim) {
    if (!plan) return mp__err(MP_EINVAL, "swap select: no plan to fill");
    memset(plan, 0, sizeof *plan);
    if (sim) memset(sim, 0, sizeof *sim);
    mp_swap_select_opts_t o;
    if (opts) o = *opts;
    else mp_swap_select_opts_default(&o);
    if (!it || !link) return mp__err(MP_EINVAL, "swap select: need an iteration and a link");
    if (o.score > MP_SWAP_BO || (o.mode != MP_SWAP_LIMIT && o.mode != MP_SWAP_NO_OVERHEAD))
        return mp__err(MP_EINVAL, "swap select: unknown score or mode");
    mp_status s = mp_swap_iter_validate(it);
    if (!s) s = check_limit(it, &o);
    mp_swap_item_t *cand = NULL;
    size_t n = 0;
    if (!s) s = mp_swap_candidates(it, o.min_size, &cand, &n);
    double *scores = NULL;
    if (!s) s = mp__swap_all_scores(it, link, cand, n, &scores);
    if (!s && o.score == MP_SWAP_BO)
        s = mp__swap_bo(it, link, &o, cand, n, scores, plan, sim);
    else if (!s)
        s = mp__swap_select_ranked(it, link, &o, cand, n, scores + (size_t)o.score * n,
                                   score_name(o.score), plan, sim);
    free(cand), free(scores);
    return s;
}
