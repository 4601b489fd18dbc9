/* remat_internal.h -- the analysis a recompute context holds, shared by the
 * files of src/remat/.  Nothing here is public.
 *
 * The training graph is mp_graph_backward's: its first n_fwd steps are the
 * forward nodes (ids 0..n_fwd-1, step order = fwd_order), then a prelude of
 * gradient-free nodes (the "ones" seed), then per forward node with a
 * gradient its gradient node followed by the sums that complete right after
 * it (a "group").  Plans name forward nodes; apply.c replays groups. */
#ifndef MEMPLAN_REMAT_INTERNAL_H
#define MEMPLAN_REMAT_INTERNAL_H

#include "../core/internal.h"

struct mp_remat_t {
    mp_remat_opts_t opts;
    char strategy[64];          /* opts.strategy's copy */
    mp_graph_t *train;          /* the training graph (owned) */
    size_t n_fwd;               /* forward nodes = forward steps */
    const size_t *fwd_order;    /* train's order[0..n_fwd) */
    size_t *step_of;            /* per forward node id: its step */
    uint64_t *flops;            /* per forward node id */
    uint64_t *bytes;            /* per forward node id: owned output bytes */
    uint64_t total_flops;       /* one forward pass */
    bool *forced;               /* per forward node id: an output or the loss (kept) */
    /* backward groups: group k = [grp_start[k], grp_start[k+1]) of train's
     * order, gradient of forward node grp_node[k]; the prelude is
     * [n_fwd, grp_start[0]) */
    size_t n_groups;
    size_t *grp_start;          /* n_groups + 1 */
    size_t *grp_node;           /* n_groups */
    /* the chain: cut steps, and per cut the crossing values' bytes */
    size_t n_cuts;
    size_t *cut;                /* forward steps, increasing */
    uint64_t *cut_bytes;        /* bytes of the values crossing each cut */
    size_t *cross;              /* producers of the crossing values of cut i:
                                   cross[cross_start[i] .. cross_start[i+1]) */
    size_t *cross_start;        /* n_cuts + 1 */
};

/* The forward node producing tensor t of the training graph (following an
 * alias to the node that made the view), or MP_GRAPH_NONE for inputs,
 * parameters and backward values. */
size_t mp__remat_producer(const mp_remat_t *r, size_t t);

/* A plan from mirror counts m (the caller's array, n_fwd entries): the
 * generic step shared by the mirror policies.  (mirror.c) */
mp_status mp__remat_plan_from_mirror(const mp_remat_t *r, const uint32_t *m, const char *policy,
                                     mp_remat_plan_t *out);

/* m[v] = 0 for the producers of the values crossing cut i. */
void mp__remat_keep_cut(const mp_remat_t *r, size_t i, uint32_t *m);

/* A new mirror array of n_fwd entries, all `fill`.  NULL when out of memory. */
uint32_t *mp__remat_mirror_new(const mp_remat_t *r, uint32_t fill);

/* Sets policy text (truncated) into p->policy. */
void mp__remat_name(mp_remat_plan_t *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Policies implemented outside policy.c. */
mp_status mp__remat_policy_budget(const mp_remat_t *r, mp_remat_plan_t *out);
mp_status mp__remat_budget_grid(const mp_remat_t *r, uint64_t *grid, size_t *n_grid);
mp_status mp__remat_policy_revolve(const mp_remat_t *r, size_t slots, mp_remat_plan_t *out);
/* The chain DP at mem_limit with `slots` units (0: the DP's default), or
 * without a limit (0) the least one within one extra forward pass. */
mp_status mp__remat_policy_optimal(const mp_remat_t *r, uint64_t mem_limit, size_t slots, mp_remat_plan_t *out);

#endif /* MEMPLAN_REMAT_INTERNAL_H */
