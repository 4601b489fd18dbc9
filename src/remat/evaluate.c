/* evaluate.c -- what a plan costs, measured on its graph: the transform,
 * in-place and sharing (mp_graph_share), placement by a core planner, the
 * graph-plan checker; the offsets lower bound of the placed records; the
 * recomputed FLOPs and the values kept from the first forward pass.
 * "peak" is the physical arena of the final plan -- the quantity the budget
 * contract (fit.c) compares with the user's budget. */
#include "remat_internal.h"

#include <stdlib.h>
#include <string.h>

/* Forward values (owning, not persistent) of the first pass read by a
 * gradient or a recomputation: what the plan keeps. */
static mp_status count_kept(const mp_remat_t *r, const mp_graph_t *g, size_t *kept) {
    size_t nt = mp_graph_tensor_count(g), n_order;
    const size_t *order = mp_graph_order(g, &n_order);
    bool *mark = calloc(nt ? nt : 1, sizeof *mark);
    if (!mark) return MP__NOMEM();
    *kept = 0;
    for (size_t s = r->n_fwd; s < n_order; s++) {
        const mp_graph_node_t *nd = mp_graph_node(g, order[s]);
        for (size_t i = 0; i < nd->n_inputs; i++) {
            size_t root = mp_graph_tensor(g, nd->inputs[i])->root;
            const mp_graph_tensor_t *t = mp_graph_tensor(g, root);
            if (t->producer == MP_GRAPH_NONE || t->producer >= r->n_fwd || mark[root]) continue;
            if (t->kind == MP_TENSOR_PARAMETER || t->kind == MP_TENSOR_GRADIENT || !t->bytes) continue;
            mark[root] = true;
            ++*kept;
        }
    }
    free(mark);
    return MP_OK;
}

/* Offsets lower bound of the plan's records (max live bytes). */
static mp_status records_bound(const mp_graph_t *g, const mp_graph_plan_t *gp, uint64_t *lb) {
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_plan_t pl;
    memset(&pl, 0, sizeof pl);
    mp_status s = mp_graph_plan_records(g, gp, &b, &n, &pl);
    mp_bounds_t bd;
    if (!s) s = n ? mp_bounds_compute(b, n, &bd) : MP_OK;
    *lb = !s && n ? bd.offsets : 0;
    free(b);
    mp_plan_free(&pl);
    return s;
}

mp_status mp_remat_evaluate_full(const mp_remat_t *r, const mp_remat_plan_t *p, mp_remat_eval_t *e,
                                 mp_graph_t **graph_out, mp_graph_plan_t *plan_out) {
    if (graph_out) *graph_out = NULL;
    if (plan_out) memset(plan_out, 0, sizeof *plan_out);
    if (!e) return mp__err(MP_EINVAL, "mp_remat_evaluate: NULL result");
    memset(e, 0, sizeof *e);
    mp_graph_t *g = NULL;
    mp_graph_plan_t gp;
    memset(&gp, 0, sizeof gp);
    mp_status s = mp_remat_apply(r, p, &g);
    if (s) return s;
    /* A core planner shares by itself, and better than the counter
     * algorithm's storages, which it could not split: give it the in-place
     * storages only.  "sequential" keeps the counter algorithm's layout. */
    bool place = strcmp(r->strategy, "sequential") != 0;
    mp_share_opts_t so = {.inplace = r->opts.inplace, .share = place ? 0 : r->opts.share,
                          .parallel = MP_PARALLEL_ANY, .include_persistent = r->opts.include_persistent};
    if ((s = mp_graph_share(g, &so, &gp))) goto done;
    if (place && (s = mp_graph_plan_place(g, &gp, r->strategy))) goto done;
    if ((s = mp_graph_plan_check(g, &gp, MP_PARALLEL_ANY))) goto done;
    if ((s = records_bound(g, &gp, &e->lower_bound))) goto done;
    if ((s = count_kept(r, g, &e->kept))) goto done;
    e->peak = gp.footprint;
    e->forward_flops = r->total_flops;
    for (size_t i = 0; i < p->n_actions; i++) {
        if (p->action[i].kind != MP_REMAT_RECOMPUTE) continue;
        e->recomputed++;
        uint64_t f = r->flops[p->action[i].node];
        e->extra_flops = e->extra_flops > UINT64_MAX - f ? UINT64_MAX : e->extra_flops + f;
    }
    e->nodes = mp_graph_node_count(g);
done:
    if (s || !graph_out) mp_graph_free(g);
    else *graph_out = g;
    if (s || !plan_out) mp_graph_plan_free(&gp);
    else *plan_out = gp;
    if (s) memset(e, 0, sizeof *e);
    return s;
}

mp_status mp_remat_evaluate(const mp_remat_t *r, const mp_remat_plan_t *p, mp_remat_eval_t *e) {
    return mp_remat_evaluate_full(r, p, e, NULL, NULL);
}
