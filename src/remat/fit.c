/* fit.c -- the budget contract (mp_remat_fit).
 *
 * A budget is the physical peak of the final plan (mp_remat_evaluate), not
 * an estimate.  The search enumerates a candidate set that depends on the
 * graph and the policy only -- never on the budget -- measures every
 * candidate, and returns the least extra compute among those whose peak
 * fits.  Hence: an accepted plan never exceeds the budget, and as the
 * budget grows the feasible set only grows, so the extra compute returned
 * never increases (the property PyTorch's min-cut budget lacks: pytorch
 * issue 197838).  When nothing fits, the smallest measured peak is the
 * answer to "how little can this train in".
 *
 * Candidates: none, cheap, sqrt, logn=1..3, Alg. 3 at each point of the
 * Appendix A grid, Revolve with s = 1, 2, 3, 4, 6, 8, 12, 16, 24, 32
 * slots (below the stage count), and the chain DP at 40 modelled limits
 * from the keep-all model down by factors of 0.93 (to 6% of it).  A named policy restricts the
 * set to its own candidates.  O(candidates x evaluation). */
#include "remat_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { C_NAMED, C_ALG3, C_REVOLVE, C_OPTIMAL } ckind;

typedef struct cand {
    ckind kind;
    const char *name;      /* C_NAMED: a policy string */
    uint64_t param;        /* B, slots or modelled limit */
} cand;


/* the DP's modelled limits: the keep-all model times 0.93^k, k = 0..39
 * (down to 6%), at 160 memory units each (about 0.1 s a DP).  Measured
 * peaks follow the model only roughly, so the ladder is dense: with 18
 * steps of 0.85 the DP lost to Alg. 3 at Alg. 3's own peak on 3 of the 24
 * corpus graphs, with these 40 on 1 (bench/remat). */
#define DP_LADDER 40
#define DP_LADDER_SLOTS 160
/* named 3, logn 3, the grid (at most 8), Revolve 10, the ladder */
#define MAX_CAND (3 + 3 + 8 + 10 + DP_LADDER)
static const size_t rev_slots[] = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};

static bool wants(const char *policy, const char *name) {
    return !policy || !strcmp(policy, "auto") || !strcmp(policy, name);
}

/* The candidate list of policy (see the top of the file). */
static mp_status candidates(const mp_remat_t *r, const char *policy, cand *c, size_t *n) {
    static const char *const named[] = {"none", "cheap", "sqrt"};
    static const char *const logn[] = {"logn=1", "logn=2", "logn=3"};
    *n = 0;
    bool any = false;
    if (policy && strchr(policy, '=')) {   /* a policy with its parameter: that plan alone */
        c[(*n)++] = (cand){C_NAMED, policy, 0};
        return MP_OK;
    }
    for (size_t i = 0; i < 3; i++)
        if (wants(policy, named[i])) c[(*n)++] = (cand){C_NAMED, named[i], 0}, any = true;
    if (policy && !strcmp(policy, "segments"))
        return mp__err(MP_EINVAL, "budget: policy 'segments' needs its list (segments=A,B,...)");
    if (wants(policy, "logn")) {
        for (size_t i = 0; i < 3; i++) c[(*n)++] = (cand){C_NAMED, logn[i], 0};
        any = true;
    }
    if (wants(policy, "budget")) {
        uint64_t grid[8];
        size_t ng;
        mp_status s = mp__remat_budget_grid(r, grid, &ng);
        if (s) return s;
        for (size_t i = 0; i < ng; i++) c[(*n)++] = (cand){C_ALG3, NULL, grid[i]};
        any = true;
    }
    if (wants(policy, "revolve")) {
        for (size_t i = 0; i < sizeof rev_slots / sizeof *rev_slots; i++)
            if (rev_slots[i] < r->n_cuts + 1) c[(*n)++] = (cand){C_REVOLVE, NULL, rev_slots[i]};
        any = true;
    }
    if (wants(policy, "optimal")) {
        for (size_t i = 0; i < DP_LADDER; i++) c[(*n)++] = (cand){C_OPTIMAL, NULL, i};
        any = true;
    }
    if (!any)
        return mp__err(MP_EINVAL, "budget: unknown policy '%s' (auto, none, cheap, sqrt, logn, budget, revolve, optimal)",
                       policy);
    return MP_OK;
}

/* The modelled keep-all peak of r's chain (the top of the DP ladder). */
static mp_status chain_top(const mp_remat_t *r, uint64_t *top) {
    mp_chain_t c;
    mp_status s = mp_remat_chain(r, &c);
    if (s) return s;
    *top = 0;
    for (size_t i = 0; i < c.n; i++) *top += c.all_bytes[i];
    mp_chain_free(&c);
    return MP_OK;
}

/* The plan of candidate c; MP_EINVAL when it does not apply (skipped). */
static mp_status make(const mp_remat_t *r, const cand *c, uint64_t top, mp_remat_plan_t *p) {
    if (c->kind == C_NAMED) return mp_remat_policy(r, c->name, p);
    if (c->kind == C_REVOLVE) return mp__remat_policy_revolve(r, (size_t)c->param, p);
    if (c->kind == C_OPTIMAL) {
        uint64_t limit = (uint64_t)((double)top * pow(0.93, (double)c->param));
        return mp__remat_policy_optimal(r, limit ? limit : 1, DP_LADDER_SLOTS, p);
    }
    uint32_t *m = mp__remat_mirror_new(r, 1);
    if (!m) return MP__NOMEM();
    uint64_t x, y;
    mp_status s = mp_remat_alg3(r, c->param, m, &x, &y);
    if (!s) s = mp__remat_plan_from_mirror(r, m, "budget", p);
    if (!s) mp__remat_name(p, "budget B=%llu", (unsigned long long)c->param);
    free(m);
    return s;
}

mp_status mp_remat_fit(const mp_remat_t *r, const char *policy, uint64_t budget,
                       void (*progress)(void *ctx, size_t done, size_t total), void *ctx, mp_remat_plan_t *out,
                       mp_remat_fit_t *fit) {
    if (!out || !fit) return mp__err(MP_EINVAL, "mp_remat_fit: NULL out or fit");
    memset(out, 0, sizeof *out);
    memset(fit, 0, sizeof *fit);
    if (!r) return mp__err(MP_EINVAL, "mp_remat_fit: NULL context");
    cand c[MAX_CAND];
    size_t n;
    uint64_t top = 0;
    mp_status s = candidates(r, policy, c, &n);
    if (!s) s = chain_top(r, &top);
    if (s) return s;
    mp_remat_plan_t best;
    memset(&best, 0, sizeof best);
    char min_name[64] = "";
    fit->min_peak = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        mp_remat_plan_t p;
        mp_remat_eval_t e;
        s = make(r, &c[i], top, &p);
        if (!s) {
            s = mp_remat_evaluate(r, &p, &e);
            if (s) mp_remat_plan_free(&p);
        }
        if (progress) progress(ctx, i + 1, n);
        if (s == MP_EINVAL) {   /* does not apply to this graph (e.g. no chain) */
            s = MP_OK;
            continue;
        }
        if (s) break;
        fit->candidates++;
        if (e.peak < fit->min_peak) {
            fit->min_peak = e.peak;
            snprintf(min_name, sizeof min_name, "%s", p.policy);
        }
        bool fits = e.peak <= budget;
        bool better = fits && (!fit->feasible || e.extra_flops < fit->eval.extra_flops ||
                               (e.extra_flops == fit->eval.extra_flops && e.peak < fit->eval.peak));
        if (better) {
            mp_remat_plan_free(&best);
            best = p;
            fit->eval = e;
            fit->feasible = 1;
        } else {
            mp_remat_plan_free(&p);
        }
    }
    if (s) {
        mp_remat_plan_free(&best);
        return s;
    }
    if (!fit->candidates) return mp__err(MP_EINVAL, "budget: no plan of policy '%s' applies to this graph", policy);
    if (!fit->feasible)
        return mp__err(MP_EINVAL, "budget %llu bytes cannot be met: the smallest peak of the %zu plans tried is %llu bytes (%s)",
                       (unsigned long long)budget, fit->candidates, (unsigned long long)fit->min_peak, min_name);
    *out = best;
    return MP_OK;
}
