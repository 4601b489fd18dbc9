/* report_train.c -- for `memplan report --train`: what recomputation and
 * swapping would do to the training graph, through the library's own
 * entry points (memplan_remat.h, memplan_swap.h), as a second table.
 *
 * Recomputation: the policies none, sqrt, cheap and budget with the
 * library's defaults (mp_remat_new: running sums of gradients, in-place,
 * sharing, placed by auto), each evaluated and checked by
 * mp_remat_evaluate.  Swapping: AutoSwap's selection with no overhead,
 * simulated on the gtx1080ti and pcie3 presets (docs/swap.md).  A step the
 * graph does not allow (no differentiable op, say) becomes a note, not a
 * failure: the rest of the page still stands. */
#include "report.h"

#include <stdlib.h>
#include <string.h>

static rp_extra *add_extra(rp_report *r) {
    rp_extra *e = realloc(r->extra, (r->n_extra + 1) * sizeof *e);
    if (!e) return NULL;
    r->extra = e;
    memset(&e[r->n_extra], 0, sizeof *e);
    return &e[r->n_extra++];
}

static double pct(uint64_t part, uint64_t whole) {
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static int no_memory(void) {
    fprintf(stderr, "memplan: out of memory\n");
    return EXIT_INPUT;
}

static int recompute(rp_report *r, const mp_remat_t *rm) {
    static const char *const policies[] = {"none", "sqrt", "cheap", "budget"};
    uint64_t base = 0;
    for (size_t i = 0; i < sizeof policies / sizeof policies[0]; i++) {
        mp_remat_plan_t p = {0};
        mp_remat_eval_t e = {0};
        mp_status st = mp_remat_policy(rm, policies[i], &p);
        if (st == MP_OK) st = mp_remat_evaluate(rm, &p, &e);
        rp_extra *x = add_extra(r);
        if (!x) {
            mp_remat_plan_free(&p);
            return no_memory();
        }
        snprintf(x->name, sizeof x->name, "recompute: %s", p.policy[0] ? p.policy : policies[i]);
        if (st != MP_OK) {
            snprintf(x->note, sizeof x->note, "not possible: %s", mp_last_error());
        } else {
            if (i == 0) base = e.peak;
            x->memory = e.peak;
            x->baseline = base;
            snprintf(x->cost, sizeof x->cost, "+%.1f%% forward FLOPs",
                     pct(e.extra_flops, e.forward_flops));
            char h[32];
            snprintf(x->note, sizeof x->note, "%zu recompute nodes, %zu values kept; bound %s",
                     e.recomputed, e.kept, cli_human(e.lower_bound, h, sizeof h));
        }
        mp_remat_plan_free(&p);
    }
    return EXIT_OK;
}

static int swap(rp_report *r, const mp_graph_t *train) {
    mp_swap_device_t dev;
    mp_swap_link_t link;
    mp_swap_iter_t it = {0};
    mp_swap_plan_t plan = {0};
    mp_swap_sim_t sim = {0};
    mp_swap_select_opts_t o;
    mp_swap_select_opts_default(&o);
    o.mode = MP_SWAP_NO_OVERHEAD;
    mp_status st = mp_swap_device_preset("gtx1080ti", &dev);
    if (st == MP_OK) st = mp_swap_link_preset("pcie3", &link);
    if (st == MP_OK) st = mp_swap_iter_from_graph(train, &dev, &it);
    if (st == MP_OK) st = mp_swap_select(&it, &link, &o, &plan, &sim);
    rp_extra *x = add_extra(r);
    int rc = x ? EXIT_OK : no_memory();
    if (x) {
        snprintf(x->name, sizeof x->name, "swap: AutoSwap, no overhead");
        if (st != MP_OK) {
            snprintf(x->note, sizeof x->note, "not possible: %s", mp_last_error());
        } else {
            x->memory = sim.peak;
            x->baseline = sim.original_peak;
            snprintf(x->cost, sizeof x->cost, "+%.1f%% time", 100.0 * sim.overhead);
            snprintf(x->note, sizeof x->note,
                     "peak load, not arena: %zu variables swapped (%s score), simulated on "
                     "gtx1080ti + pcie3",
                     plan.n, plan.score);
        }
    }
    mp_swap_plan_free(&plan);
    mp_swap_sim_free(&sim);
    mp_swap_iter_free(&it);
    return rc;
}

int rp_training(rp_report *r, const mp_graph_t *fwd) {
    mp_remat_t *rm = NULL;
    if (mp_remat_new(fwd, NULL, &rm) != MP_OK) {
        rp_fact_add(r, "recomputation", "not possible: %s", mp_last_error());
        return EXIT_OK;
    }
    int rc = recompute(r, rm);
    if (rc == EXIT_OK) rc = swap(r, mp_remat_graph(rm));
    mp_remat_free(rm);
    return rc;
}
