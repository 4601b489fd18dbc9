/* chain_dp.c -- the least recomputation of a heterogeneous chain under a
 * memory limit: a dynamic program in the style of Rotor (Beaumont,
 * Eyraud-Dubois, Herrmann, Joly, Shilova, "Optimal checkpointing for
 * heterogeneous chains: how to train deep neural networks with limited
 * memory", 2019), extended to the liveness model of mp_chain_simulate.
 *
 * A sub-problem X(q, r, s, t, m) reverses stages s..t (BACKWARD(t) down to
 * BACKWARD(s)) from the copy of out(s-1) (its "source"), within m memory
 * units that include the source and, when q = 1, the values of stage t+1,
 * held from outside and differentiated first (BACKWARD(t+1) needs out(t)).
 * r says how it ends: 0 with BACKWARD(s) done and the source held to the
 * end; 1 with the source released after its last read, stage s's values
 * held and BACKWARD(s) left to the caller; 2 the same with nothing of stage
 * s held.  Each sub-problem runs forward from its source to a first kept
 * stage j (its output only, or all its values) and splits in two smaller
 * ones; docs/remat-chains.md has the recurrence and its derivation.
 *
 * Memory is counted in units: exact (the gcd of the sizes) when the chain's
 * total fits in `slots` units, else sizes rounded up to ceil(limit / slots)
 * bytes, so that every schedule the DP accepts truly fits.  The schedule
 * returned is always re-simulated and its simulated numbers returned.
 */
#include "../core/internal.h"

#include <stdlib.h>

#define DP_INF UINT64_MAX
#define DP_MAX_STAGES 128               /* above: merge stages first */
#define DP_MAX_WORK 150000000ull        /* table entries x interval lengths (about 1 s) */

typedef struct dp_t {
    size_t n;
    const uint64_t *fwd;
    const uint64_t *own;                /* a run right before its own BACKWARD */
    uint64_t *fsum;                     /* prefix sums of fwd (n + 1) */
    int64_t *ou, *au;                   /* out / all sizes in units */
    int64_t mu;                         /* the limit in units */
    size_t *cap[2];                     /* per (s, t): largest stored m */
    size_t *off[2];                     /* per (s, t): offset in tab[q][r] */
    uint64_t *tab[2][3];
} dp_t;

/* A candidate: which first kept stage j and what kind of split. */
enum { C_NONE, C_BASE, C_CK, C_ALL, C_TOP_CK, C_TOP_ALL };
typedef struct dp_choice {
    int kind, r2;
    size_t j;
} dp_choice;

static uint64_t add_sat(uint64_t a, uint64_t b) {
    if (a == DP_INF || b == DP_INF || a > DP_INF - 1 - b) return DP_INF;
    return a + b;
}

static int64_t src_u(const dp_t *d, size_t s) { return s ? d->ou[s - 1] : 0; }

/* X(q, r, s, t, m) from the tables; past a sub-problem's stored range its
 * value no longer changes (everything fits: each stage runs once), below 0
 * memory nothing fits.  q = 1 with t = s-1 is the base "BACKWARD(s) with
 * stage s held".  O(1). */
static uint64_t X(const dp_t *d, int q, int r, size_t s, size_t t, int64_t m) {
    if (m < 0) return DP_INF;
    if (q == 1 && t + 1 == s) return (r == 0 && d->au[s] + src_u(d, s) <= m) ? 0 : DP_INF;
    size_t p = s * d->n + t, c = d->cap[q][p];
    return d->tab[q][r][d->off[q][p] + ((uint64_t)m > c ? c : (size_t)m)];
}

static void take(uint64_t v, dp_choice ch, uint64_t *best, dp_choice *bc) {
    if (v < *best) *best = v, *bc = ch;
}

/* The candidates with first kept stage j < t (the continuation after the
 * right part depends on how that part ended). */
static void cands_inner(const dp_t *d, int q, int r, size_t s, size_t t, size_t j, int64_t m, uint64_t f,
                        uint64_t *best, dp_choice *bc) {
    int64_t o = src_u(d, s);
    for (int r2 = 0; r2 < 3; r2++) {
        if (r2 == 2 && q == 0 && j + 1 == t) continue; /* would be X itself again */
        uint64_t right = X(d, q, r2, j + 1, t, m - o);
        uint64_t cont = r2 == 0 ? X(d, 0, r, s, j, m) : r2 == 1 ? X(d, 1, r, s, j, m) : X(d, 0, r, s, j + 1, m);
        take(add_sat(f, add_sat(right, cont)), (dp_choice){C_CK, r2, j}, best, bc);
    }
    if (j > s) {
        uint64_t right = X(d, q, 0, j + 1, t, m - o - d->au[j] + d->ou[j]);
        take(add_sat(f, add_sat(right, X(d, 1, r, s, j - 1, m))), (dp_choice){C_ALL, 0, j}, best, bc);
    } else {
        int64_t mm = r == 0 ? m - o - d->au[s] + d->ou[s] : r == 1 ? m - d->au[s] + d->ou[s] : m;
        take(add_sat(f, X(d, q, 0, s + 1, t, mm)), (dp_choice){C_ALL, 0, j}, best, bc);
    }
}

/* q = 1, j = t: the sweep ends at out(t), BACKWARD(t+1) runs, then stage t
 * is redone (kept output only) or its kept values are used. */
static void cands_top(const dp_t *d, int r, size_t s, size_t t, int64_t m, uint64_t f, uint64_t *best,
                      dp_choice *bc) {
    int64_t o = src_u(d, s), A = d->au[t + 1];
    if (A + o + d->ou[t] <= m) take(add_sat(f, X(d, 0, r, s, t, m)), (dp_choice){C_TOP_CK, 0, t}, best, bc);
    if (t > s) {
        if (A + o + d->au[t] <= m)
            take(add_sat(f, X(d, 1, r, s, t - 1, m)), (dp_choice){C_TOP_ALL, 0, t}, best, bc);
    } else if (r == 0 ? A + o + d->au[t] <= m : r == 1 ? A + d->au[t] <= m : A + d->ou[t] <= m) {
        take(f, (dp_choice){C_TOP_ALL, 0, t}, best, bc);
    }
}

/* The least cost of X(q, r, s, t, m) over every candidate, and which.  The
 * base X(0, 0, s, s) runs stage s right before BACKWARD(s), which costs its
 * grad_flops (`own`); stage n-1's base is the first pass itself, run in
 * full.  O(t - s) table reads. */
static uint64_t best_at(const dp_t *d, int q, int r, size_t s, size_t t, int64_t m, dp_choice *bc) {
    uint64_t best = DP_INF;
    int64_t o = src_u(d, s), A = q ? d->au[t + 1] : 0, sw = 0;
    *bc = (dp_choice){C_NONE, 0, 0};
    if (q == 0 && s == t) {
        if (r != 2 && o + d->au[s] <= m) best = r == 0 && s + 1 < d->n ? d->own[s] : d->fwd[s], *bc = (dp_choice){C_BASE, 0, s};
        return best;
    }
    size_t top = q ? t : t - 1;
    for (size_t j = s; j <= top; j++) {
        int64_t need = A + o + d->au[j] + (j > s ? d->ou[j - 1] : 0);
        if (need > sw) sw = need;
        if (sw > m) break;
        uint64_t f = d->fsum[j + 1] - d->fsum[s];
        if (j < t) cands_inner(d, q, r, s, t, j, m, f, &best, bc);
        else cands_top(d, r, s, t, m, f, &best, bc);
    }
    return best;
}

/* ---- building the tables ------------------------------------------------- */

/* Units past which sub-problem (q, s, t) keeps everything: source, all of
 * s..t, and stage t+1 for q = 1; capped at the limit.  O(1) with sums. */
static size_t sat_units(const dp_t *d, const int64_t *asum, int q, size_t s, size_t t) {
    int64_t v = src_u(d, s) + asum[t + 1] - asum[s] + (q ? d->au[t + 1] : 0);
    return (size_t)(v < d->mu ? v : d->mu);
}

/* Lays the tables out (offsets and caps) and returns the number of
 * candidate evaluations filling them takes, or 0 when an allocation fails. */
static uint64_t dp_layout(dp_t *d, const int64_t *asum, size_t *total) {
    size_t n = d->n, tot[2] = {0, 0};
    uint64_t work = 0;
    for (int q = 0; q < 2; q++) {
        d->cap[q] = calloc(n * n, sizeof(size_t));
        d->off[q] = calloc(n * n, sizeof(size_t));
        if (!d->cap[q] || !d->off[q]) return 0;
        for (size_t s = 0; s < n; s++)
            for (size_t t = s; t + q < n; t++) {
                size_t p = s * n + t, c = sat_units(d, asum, q, s, t);
                d->cap[q][p] = c, d->off[q][p] = tot[q], tot[q] += c + 1;
                work += (uint64_t)(c + 1) * (t - s + 1) * 5;
            }
    }
    total[0] = tot[0], total[1] = tot[1];
    return work ? work : 1;
}

/* Fills every table by increasing t - s (q = 0 before q = 1: X(1, s, t)
 * reads X(0, s, t)).  O(n^3 * units) candidate evaluations. */
static mp_status dp_fill(dp_t *d, const size_t *total) {
    for (int q = 0; q < 2; q++)
        for (int r = 0; r < 3; r++)
            if (!(d->tab[q][r] = malloc((total[q] ? total[q] : 1) * sizeof(uint64_t)))) return MP__NOMEM();
    dp_choice ch;
    for (size_t len = 0; len < d->n; len++)
        for (size_t s = 0; s + len < d->n; s++)
            for (int q = 0; q < 2; q++) {
                size_t t = s + len, p = s * d->n + t;
                if (t + q >= d->n) continue;
                for (int r = 0; r < 3; r++)
                    for (size_t m = 0; m <= d->cap[q][p]; m++)
                        d->tab[q][r][d->off[q][p] + m] = best_at(d, q, r, s, t, (int64_t)m, &ch);
            }
    return MP_OK;
}

/* ---- the schedule ------------------------------------------------------- */

typedef struct ops_buf {
    mp_chain_op_t *v;
    size_t len, cap;
    int nomem;
} ops_buf;

static void put(ops_buf *b, mp_chain_op_kind k, size_t stage) {
    if (b->nomem) return;
    if (b->len == b->cap) {
        size_t nc = b->cap ? 2 * b->cap : 64;
        mp_chain_op_t *nv = realloc(b->v, nc * sizeof *nv);
        if (!nv) {
            b->nomem = 1;
            return;
        }
        b->v = nv, b->cap = nc;
    }
    b->v[b->len++] = (mp_chain_op_t){k, stage};
}

static void emit_x(const dp_t *d, ops_buf *b, int q, int r, size_t s, size_t t, int64_t m);

/* The ops of a CK / ALL split at j (after the sweep s..j). */
static void emit_inner(const dp_t *d, ops_buf *b, int q, int r, size_t s, size_t t, int64_t m, dp_choice c) {
    int64_t o = src_u(d, s);
    size_t j = c.j;
    if (c.kind == C_CK) {
        emit_x(d, b, q, c.r2, j + 1, t, m - o);
        if (c.r2 == 0) emit_x(d, b, 0, r, s, j, m);
        else if (c.r2 == 1) emit_x(d, b, 1, r, s, j, m);
        else emit_x(d, b, 0, r, s, j + 1, m);
    } else if (j > s) {
        emit_x(d, b, q, 0, j + 1, t, m - o - d->au[j] + d->ou[j]);
        emit_x(d, b, 1, r, s, j - 1, m);
    } else {
        int64_t mm = r == 0 ? m - o - d->au[s] + d->ou[s] : r == 1 ? m - d->au[s] + d->ou[s] : m;
        emit_x(d, b, q, 0, s + 1, t, mm);
        if (r == 0) put(b, MP_CHAIN_BACKWARD, s);
    }
}

/* Re-derives the choice of X(q, r, s, t, m) and emits its ops.  Depth and
 * work: O(n) per sub-problem visited, O(n * ops) in all. */
static void emit_x(const dp_t *d, ops_buf *b, int q, int r, size_t s, size_t t, int64_t m) {
    if (q == 1 && t + 1 == s) {
        put(b, MP_CHAIN_BACKWARD, s);
        return;
    }
    dp_choice c;
    best_at(d, q, r, s, t, m, &c);
    if (c.kind == C_BASE) {
        put(b, MP_CHAIN_FORWARD, s);
        if (r == 0) put(b, MP_CHAIN_BACKWARD, s);
        return;
    }
    for (size_t k = s; k <= c.j; k++) put(b, MP_CHAIN_FORWARD, k);
    if (c.kind == C_CK || c.kind == C_ALL) {
        emit_inner(d, b, q, r, s, t, m, c);
        return;
    }
    put(b, MP_CHAIN_BACKWARD, t + 1);
    if (c.kind == C_TOP_CK) emit_x(d, b, 0, r, s, t, m);
    else if (t > s) emit_x(d, b, 1, r, s, t - 1, m);
    else if (r == 0) put(b, MP_CHAIN_BACKWARD, s);
}

/* The schedule of least memory, max_i out(i-1) + all(i): after the first
 * pass, each stage is recomputed from the input right before its
 * BACKWARD.  O(n^2) ops. */
static void least_memory_schedule(size_t n, ops_buf *b) {
    for (size_t i = 0; i < n; i++) put(b, MP_CHAIN_FORWARD, i);
    put(b, MP_CHAIN_BACKWARD, n - 1);
    for (size_t i = n - 1; i-- > 0;) {
        for (size_t k = 0; k <= i; k++) put(b, MP_CHAIN_FORWARD, k);
        put(b, MP_CHAIN_BACKWARD, i);
    }
}

/* ---- the entry point ------------------------------------------------------ */

static mp_status chain_args(const mp_chain_t *c, mp_chain_op_t **ops, size_t *n_ops) {
    if (!c || !ops || !n_ops) return mp__err(MP_EINVAL, "chain: NULL argument");
    if (c->n && (!c->fwd_flops || !c->out_bytes || !c->all_bytes))
        return mp__err(MP_EINVAL, "chain: missing fwd_flops, out_bytes or all_bytes");
    uint64_t sum = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->all_bytes[i] < c->out_bytes[i])
            return mp__err(MP_EINVAL, "chain: stage %zu has all_bytes < out_bytes", i);
        if (sum > UINT64_MAX - c->all_bytes[i]) return mp__err(MP_EOVERFLOW, "chain: sizes overflow 64 bits");
        sum += c->all_bytes[i];
    }
    return MP_OK;
}

static uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

/* Bytes per unit: the gcd of the sizes when the total then fits in `slots`
 * units (exact), else ceil(total / slots).  O(n). */
static uint64_t pick_unit(const mp_chain_t *c, size_t slots, uint64_t total, uint64_t limit) {
    uint64_t g = 0;
    for (size_t i = 0; i < c->n; i++) g = gcd64(gcd64(g, c->out_bytes[i]), c->all_bytes[i]);
    if (g == 0) return 1;
    if (total / g <= slots) return g;
    /* the memory axis runs to the limit only: units of limit/slots resolve
     * a small limit as finely as a large one (units of total/slots made a
     * checkpoint of a long chain cost a fraction of the whole chain) */
    return limit / slots + (limit % slots != 0);
}

static void dp_free(dp_t *d) {
    free(d->fsum), free(d->ou), free(d->au);
    for (int q = 0; q < 2; q++) {
        free(d->cap[q]), free(d->off[q]);
        for (int r = 0; r < 3; r++) free(d->tab[q][r]);
    }
}

/* Sizes in units of u (rounded up, clamped past the limit) and the sums the
 * DP reads.  O(n). */
static mp_status dp_init(dp_t *d, const mp_chain_t *c, uint64_t limit, uint64_t u, int64_t *asum) {
    size_t n = c->n;
    d->n = n, d->fwd = c->fwd_flops, d->own = c->grad_flops ? c->grad_flops : c->fwd_flops;
    d->fsum = calloc(n + 1, sizeof *d->fsum);
    d->ou = calloc(n, sizeof *d->ou);
    d->au = calloc(n, sizeof *d->au);
    if (!d->fsum || !d->ou || !d->au) return MP__NOMEM();
    uint64_t mu = limit / u, clamp = mu + 1;
    if (mu > (uint64_t)n * 1024 * 1024) mu = (uint64_t)n * 1024 * 1024; /* never reached: units <= slots */
    d->mu = (int64_t)mu;
    asum[0] = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t o = c->out_bytes[i] / u + (c->out_bytes[i] % u != 0);
        uint64_t a = c->all_bytes[i] / u + (c->all_bytes[i] % u != 0);
        d->ou[i] = (int64_t)(o < clamp ? o : clamp);
        d->au[i] = (int64_t)(a < clamp ? a : clamp);
        asum[i + 1] = asum[i] + d->au[i];
        d->fsum[i + 1] = add_sat(d->fsum[i], c->fwd_flops[i]);
    }
    return MP_OK;
}

/* Runs the DP in units of u and, when the limit admits a schedule in those
 * units, emits it.  *found says whether it did, *cost its forward FLOPs
 * (the first pass included). */
static mp_status dp_run(const mp_chain_t *c, uint64_t limit, uint64_t u, ops_buf *b, int *found,
                        uint64_t *cost) {
    dp_t d = {0};
    size_t total[2];
    int64_t *asum = calloc(c->n + 1, sizeof *asum);
    mp_status st = asum ? dp_init(&d, c, limit, u, asum) : MP__NOMEM();
    if (st == MP_OK && !dp_layout(&d, asum, total)) st = MP__NOMEM();
    if (st == MP_OK) st = dp_fill(&d, total);
    *found = 0;
    if (st == MP_OK && (*cost = X(&d, 0, 0, 0, c->n - 1, d.mu)) != DP_INF) {
        emit_x(&d, b, 0, 0, 0, c->n - 1, d.mu);
        *found = 1;
    }
    free(asum);
    dp_free(&d);
    return st;
}

/* Work of the DP in units of u (see dp_layout), without allocating. */
static uint64_t dp_work(const mp_chain_t *c, uint64_t limit, uint64_t u) {
    uint64_t mu = limit / u, work = 0;
    for (size_t s = 0; s < c->n; s++) {
        uint64_t acc = s ? c->out_bytes[s - 1] / u + 1 : 0;
        for (size_t t = s; t < c->n; t++) {
            acc += c->all_bytes[t] / u + 1;
            uint64_t cap = acc < mu ? acc : mu;
            work += 2 * (cap + 1) * (t - s + 1) * 5;
            if (work > DP_MAX_WORK) return work;
        }
    }
    return work;
}

/* FLOPs of one forward pass (saturating), what the DP's totals include. */
static uint64_t d_base(const mp_chain_t *c) {
    uint64_t v = 0;
    for (size_t i = 0; i < c->n; i++) v = add_sat(v, c->fwd_flops[i]);
    return v;
}

/* Checks the schedule by simulation and hands it over.  O(ops). */
static mp_status finish(const mp_chain_t *c, uint64_t limit, ops_buf *b, mp_chain_op_t **ops, size_t *n_ops,
                        uint64_t *extra) {
    uint64_t peak = 0, ex = 0;
    mp_status st = b->nomem ? MP__NOMEM() : mp_chain_simulate(c, b->v, b->len, &peak, &ex);
    if (st == MP_OK && peak > limit)
        st = mp__err(MP_EINVAL, "chain: internal error: the schedule peaks at %llu > %llu bytes",
                     (unsigned long long)peak, (unsigned long long)limit);
    if (st) {
        free(b->v);
        return st;
    }
    *ops = b->v, *n_ops = b->len;
    if (extra) *extra = ex;
    return MP_OK;
}

/* Recomputed FLOPs of least_memory_schedule (saturating).  O(n). */
static uint64_t least_memory_cost(const mp_chain_t *c) {
    uint64_t pre = 0, cost = 0;
    for (size_t i = 0; i + 1 < c->n; i++) {
        cost = add_sat(cost, add_sat(pre, c->grad_flops ? c->grad_flops[i] : c->fwd_flops[i]));
        pre = add_sat(pre, c->fwd_flops[i]);
    }
    return cost;
}

/* The least-recomputation schedule within mem_limit: refuses limits below
 * max_i out(i-1) + all(i) (no schedule fits), picks the unit (exact when
 * the chain's sizes fit in `slots` units of their gcd, else limit/slots;
 * coarser while the DP would exceed its work bound), runs the DP and keeps
 * the least-memory schedule instead when rounding left the DP nothing or
 * something dearer.  With exact units the cost never grows as the limit
 * grows; with rounded ones it may by the rounding (the budget contract of
 * fit.c measures every plan and does not rely on it).  Time O(n^3 * units), memory
 * O(n^2 * units), units <= slots. */
mp_status mp_chain_optimal(const mp_chain_t *c, uint64_t mem_limit, size_t slots, mp_chain_op_t **ops,
                           size_t *n_ops, uint64_t *extra_flops) {
    mp_status st = chain_args(c, ops, n_ops);
    if (st) return st;
    *ops = NULL, *n_ops = 0;
    if (extra_flops) *extra_flops = 0;
    if (c->n == 0) return MP_OK;
    if (c->n > DP_MAX_STAGES)
        return mp__err(MP_EINVAL, "chain: %zu stages; the DP takes at most %d (merge stages first)", c->n,
                       DP_MAX_STAGES);
    uint64_t least = 0, total = 0;
    for (size_t i = 0; i < c->n; i++) {
        uint64_t v = c->all_bytes[i] + (i ? c->out_bytes[i - 1] : 0);
        if (v > least) least = v;
        total += c->all_bytes[i];
    }
    if (mem_limit < least)
        return mp__err(MP_EINVAL, "chain: no schedule fits in %llu bytes; the least is %llu",
                       (unsigned long long)mem_limit, (unsigned long long)least);
    uint64_t limit = mem_limit < total ? mem_limit : total;
    uint64_t u = pick_unit(c, slots ? slots : 500, total, limit);
    while (dp_work(c, limit, u) > DP_MAX_WORK) u = u > UINT64_MAX / 2 ? UINT64_MAX : 2 * u;
    ops_buf b = {0};
    for (size_t i = 0; i < c->n; i++) put(&b, MP_CHAIN_FORWARD, i);
    for (size_t i = c->n; i-- > 0;) put(&b, MP_CHAIN_BACKWARD, i);
    uint64_t keep_peak = 0;
    if (!b.nomem && mp_chain_simulate(c, b.v, b.len, &keep_peak, NULL) == MP_OK && keep_peak <= mem_limit)
        return finish(c, mem_limit, &b, ops, n_ops, extra_flops); /* nothing to recompute */
    b.len = 0;
    int found = 0;
    uint64_t cost = DP_INF;
    st = dp_run(c, limit, u, &b, &found, &cost);
    if (st == MP_OK && (!found || cost > add_sat(least_memory_cost(c), d_base(c)))) {
        b.len = 0;
        least_memory_schedule(c->n, &b);
    }
    if (st) {
        free(b.v);
        return st;
    }
    return finish(c, mem_limit, &b, ops, n_ops, extra_flops);
}
