/* joint.c -- keep, swap or recompute, per tensor, in one plan (issue 10
 * item 7; beyond zhang2019, which swaps only, and chen2016, which only
 * recomputes).
 *
 * A joint plan is a recompute plan (src/remat/: which forward values are
 * dropped and rebuilt before the gradients that read them) and a swap plan
 * over the resulting training step (which of the values still kept move
 * to the host between two accesses).  Both are judged in one currency:
 * the simulated iteration time on a device and link (recomputed nodes are
 * ops of the step, timed from their FLOPs like every other op; swaps cost
 * their stalls), under one limit on the memory load.
 *
 * The search: a fixed set of recompute candidates that depends on the
 * graph only (none, cheap, sqrt, Alg. 3 + grid, logn=2, Revolve and the
 * chain DP at a ladder of modelled limits), each turned into its timed
 * iteration once (mp_swap_joint_new).  At a limit (mp_swap_joint_at):
 * each candidate whose own peak fits costs its compute time; one that does
 * not fit gets AutoSwap's limit-mode selection on its iteration; the
 * cheapest feasible one wins.  Candidate "none" with swapping is the
 * swap-only plan and the candidates that fit alone give the
 * recompute-only one, so the joint plan is never worse than either: it is
 * chosen from a superset.  Cost per limit: O(candidates x selection). */
#include "swap_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JOINT_MAX 32

typedef struct joint_cand {
    char name[64];
    mp_swap_iter_t it;
    uint64_t compute_ns, peak, load_min;
} joint_cand;

struct mp_swap_joint_t {
    mp_swap_link_t link;
    mp_swap_joint_opts_t o;
    size_t n;
    joint_cand c[JOINT_MAX];
};

void mp_swap_joint_opts_default(mp_swap_joint_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->score = MP_SWAP_SWDOA;
    o->min_size = 1u << 20;
    o->ladder = 12;
}

void mp_swap_joint_free(mp_swap_joint_t *j) {
    if (!j) return;
    for (size_t k = 0; k < j->n; k++) mp_swap_iter_free(&j->c[k].it);
    free(j);
}

/* The chain model's peak when everything is kept, the top of the DP's
 * ladder: every stage's values are live when the first pass ends, so it is
 * the sum of all_bytes (as fit.c's ladder takes it).  0 without a chain. */
static uint64_t keep_all_model(const mp_remat_t *r) {
    mp_chain_t c;
    if (mp_remat_chain(r, &c) != MP_OK) return 0;
    uint64_t peak = 0;
    for (size_t i = 0; i < c.n; i++) peak += c.all_bytes[i];
    mp_chain_free(&c);
    return peak;
}

/* Adds the candidate of one recompute policy: the training graph it
 * gives, timed on dev.  A policy that does not apply to this graph (an
 * invalid limit, no chain) is skipped; running out of memory is not. */
static mp_status add_cand(mp_swap_joint_t *j, const mp_remat_t *r, const char *policy,
                          const mp_swap_device_t *dev) {
    if (j->n == JOINT_MAX) return MP_OK;
    mp_remat_plan_t p;
    mp_status s = mp_remat_policy(r, policy, &p);
    if (s) return s == MP_ENOMEM ? s : MP_OK;
    joint_cand *c = &j->c[j->n];
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", p.policy);
    for (size_t k = 0; k < j->n; k++)
        if (!strcmp(j->c[k].name, c->name)) {     /* the same plan twice (ladder rungs) */
            mp_remat_plan_free(&p);
            return MP_OK;
        }
    mp_graph_t *train = NULL;
    s = mp_remat_apply(r, &p, &train);
    mp_remat_plan_free(&p);
    if (!s) s = mp_swap_iter_from_graph(train, dev, &c->it);
    mp_graph_free(train);
    if (!s) s = mp_swap_load(&c->it, NULL, &c->peak, NULL);
    if (!s) s = mp_swap_load_min(&c->it, j->o.min_size, &c->load_min);
    if (s) {
        mp_swap_iter_free(&c->it);
        return s;
    }
    for (size_t k = 0; k < c->it.n_ops; k++) c->compute_ns += c->it.op[k].ns;
    j->n++;
    return MP_OK;
}

mp_status mp_swap_joint_new(const mp_graph_t *fwd, const mp_swap_device_t *dev, const mp_swap_link_t *link,
                            const mp_swap_joint_opts_t *opts, mp_swap_joint_t **out) {
    if (!out) return mp__err(MP_EINVAL, "swap joint: NULL out");
    *out = NULL;
    if (!fwd || !dev || !link) return mp__err(MP_EINVAL, "swap joint: need a forward graph, a device and a link");
    mp_swap_joint_t *j = calloc(1, sizeof *j);
    if (!j) return MP__NOMEM();
    j->link = *link;
    if (opts) j->o = *opts;
    else mp_swap_joint_opts_default(&j->o);
    if (j->o.ladder > JOINT_MAX - 8) j->o.ladder = JOINT_MAX - 8;
    mp_remat_t *r = NULL;
    mp_status s = mp_remat_new(fwd, NULL, &r);
    static const char *const fixed[] = {"none", "cheap", "sqrt", "budget", "logn=2", "revolve"};
    for (size_t k = 0; !s && k < sizeof fixed / sizeof *fixed; k++) s = add_cand(j, r, fixed[k], dev);
    uint64_t top = s ? 0 : keep_all_model(r);
    double m = (double)top;
    for (size_t k = 0; !s && top && k < j->o.ladder; k++) {
        char pol[48];
        m *= 0.8;      /* 12 rungs: down to 7% of keeping everything */
        snprintf(pol, sizeof pol, "optimal=%llu", (unsigned long long)m);
        s = add_cand(j, r, pol, dev);
    }
    mp_remat_free(r);
    if (!s && (j->n == 0 || strcmp(j->c[0].name, "none")))
        s = mp__err(MP_EINVAL, "swap joint: the plain training step could not be built");
    if (s) {
        mp_swap_joint_free(j);
        return s;
    }
    *out = j;
    return MP_OK;
}

size_t mp_swap_joint_count(const mp_swap_joint_t *j) { return j ? j->n : 0; }

uint64_t mp_swap_joint_plain_peak(const mp_swap_joint_t *j) { return j && j->n ? j->c[0].peak : 0; }

uint64_t mp_swap_joint_least_peak(const mp_swap_joint_t *j) {
    uint64_t v = UINT64_MAX;
    for (size_t k = 0; j && k < j->n; k++) {
        uint64_t x = j->c[k].load_min < j->c[k].peak ? j->c[k].load_min : j->c[k].peak;
        if (x < v) v = x;
    }
    return j && j->n ? v : 0;
}

/* Candidate k at limit: alone when its peak fits, else with AutoSwap's
 * limit-mode selection; ch->feasible says whether the limit was met. */
static mp_status eval_cand(const mp_swap_joint_t *j, size_t k, uint64_t limit, int allow_swap,
                           mp_swap_choice_t *ch) {
    const joint_cand *c = &j->c[k];
    uint64_t base = j->c[0].compute_ns;
    memset(ch, 0, sizeof *ch);
    snprintf(ch->remat, sizeof ch->remat, "%s", c->name);
    if (c->peak <= limit) {
        ch->feasible = 1, ch->peak = c->peak, ch->total_ns = c->compute_ns;
        ch->overhead = base ? (double)c->compute_ns / (double)base - 1 : 0;
        return MP_OK;
    }
    if (!allow_swap || limit < c->load_min) return MP_OK;
    mp_swap_select_opts_t so;
    mp_swap_select_opts_default(&so);
    so.mode = MP_SWAP_LIMIT, so.limit = limit, so.score = j->o.score, so.min_size = j->o.min_size;
    mp_swap_plan_t plan;
    mp_swap_sim_t sim;
    mp_status s = mp_swap_select(&c->it, &j->link, &so, &plan, &sim);
    if (s) return s == MP_ENOMEM ? s : MP_OK;   /* no selection meets it */
    if (sim.limit_met) {
        ch->feasible = 1, ch->n_swapped = plan.n, ch->peak = sim.peak, ch->total_ns = sim.total_ns;
        ch->overhead = base ? (double)sim.total_ns / (double)base - 1 : 0;
    }
    mp_swap_plan_free(&plan);
    mp_swap_sim_free(&sim);
    return MP_OK;
}

static void keep_better(const mp_swap_choice_t *c, mp_swap_choice_t *best) {
    if (!c->feasible) return;
    if (!best->feasible || c->total_ns < best->total_ns || (c->total_ns == best->total_ns && c->peak < best->peak))
        *best = *c;
}

mp_status mp_swap_joint_at(const mp_swap_joint_t *j, uint64_t limit, mp_swap_choice_t *swap_only,
                           mp_swap_choice_t *remat_only, mp_swap_choice_t *joint) {
    if (!j || !joint) return mp__err(MP_EINVAL, "swap joint: NULL argument");
    mp_swap_choice_t none = {0}, ro = {0}, jo = {0}, ch;
    mp_status s = MP_OK;
    for (size_t k = 0; k < j->n && !s; k++) {
        if ((s = eval_cand(j, k, limit, 1, &ch))) break;
        if (k == 0) none = ch;
        keep_better(&ch, &jo);
        if (ch.feasible && ch.n_swapped == 0) keep_better(&ch, &ro);
    }
    if (s) return s;
    if (!none.feasible) snprintf(none.remat, sizeof none.remat, "none");
    if (swap_only) *swap_only = none;
    if (remat_only) *remat_only = ro;
    *joint = jo;
    return MP_OK;
}
