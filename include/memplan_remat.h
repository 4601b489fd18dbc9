/* memplan_remat.h -- recomputation: train in less memory by recomputing
 * dropped forward values during the backward pass (src/remat/).  Included
 * by memplan.h; not meant to be included alone.
 *
 * chen2016 (sec. 4, Alg. 1-3) drops intermediate results of the forward
 * pass and recomputes them from the closest kept result just before the
 * gradient ops that need them.  memplan represents every such plan as a
 * schedule over the training graph of mp_graph_backward: after the forward
 * pass (every forward node once, as today), a list of actions, each either
 * "recompute forward node v" or "run the gradient of forward node v".  A
 * recompute reads the latest copies of its inputs and makes new copies of
 * its outputs; a gradient reads the latest copies of the forward values it
 * needs.  Turning a schedule into a graph (mp_remat_apply) is therefore
 * correct for every schedule: a plan changes only memory and compute, and
 * liveness, sharing, every planner, the checker and the executor work on
 * the result unchanged.
 *
 * Usage:
 *
 *     mp_remat_t *r;  mp_remat_plan_t p;  mp_remat_eval_t e;
 *     mp_remat_opts_t o;  mp_remat_opts_default(&o);
 *     if (mp_remat_new(fwd, &o, &r) != MP_OK) return fail(mp_last_error());
 *     mp_remat_policy(r, "sqrt", &p);          // a plan (here chen2016's sqrt(n))
 *     mp_remat_evaluate(r, &p, &e);            // transform, share, place, check
 *     printf("peak %llu bytes, +%.1f%% forward FLOPs\n",
 *            (unsigned long long)e.peak, 100.0 * e.extra_flops / e.forward_flops);
 *     mp_graph_t *train;  mp_remat_apply(r, &p, &train);   // the graph itself
 *     mp_graph_free(train);  mp_remat_plan_free(&p);  mp_remat_free(r);
 */
#ifndef MEMPLAN_REMAT_H
#define MEMPLAN_REMAT_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_remat.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mp_remat_t mp_remat_t;   /* opaque: a training graph and its analysis */

typedef struct mp_remat_opts_t {
    int add_loss;              /* as mp_backward_opts_t (default 1) */
    int accumulate;            /* as mp_backward_opts_t (default 1: running sums
                                  of gradient contributions) */
    int include_persistent;    /* count parameters and gradients in peaks (default 0:
                                  chen2016's "feature map" memory) */
    int inplace, share;        /* the graph plan under the placement (default 1, 1) */
    const char *strategy;      /* core planner placing the storages (default "auto") */
} mp_remat_opts_t;

/* Fills *o with the defaults above. */
void mp_remat_opts_default(mp_remat_opts_t *o);

/* Builds the training graph of fwd (mp_graph_backward) and what the
 * policies need: per forward node its FLOPs (attrs.flops, else an estimate
 * from the op and shapes), its owned output bytes, and the chain of cut
 * points (mp_remat_cuts).  opts NULL means the defaults.  *out keeps its
 * own copies: fwd may be freed at once.  MP_EINVAL as
 * mp_graph_backward (no loss, already a training graph). */
mp_status mp_remat_new(const mp_graph_t *fwd, const mp_remat_opts_t *opts, mp_remat_t **out);

/* Releases r; NULL is fine. */
void mp_remat_free(mp_remat_t *r);

/* The training graph with no recomputation (exactly mp_graph_backward's),
 * and the number of its forward nodes (ids 0..n-1 of the training graph are
 * fwd's nodes, then an added loss node).  Valid until mp_remat_free. */
const mp_graph_t *mp_remat_graph(const mp_remat_t *r);
size_t mp_remat_forward_count(const mp_remat_t *r);

/* Per forward node id: FLOPs of one run and owned output bytes. */
uint64_t mp_remat_node_flops(const mp_remat_t *r, size_t node);
uint64_t mp_remat_node_bytes(const mp_remat_t *r, size_t node);

/* The cut points: forward steps s (increasing; indices into the forward
 * order) such that every value crossing from s to s+1 was made after the
 * previous cut -- segment boundaries for Alg. 1-3, stage boundaries of chain
 * schedules (docs/remat.md).  Valid until mp_remat_free. */
const size_t *mp_remat_cuts(const mp_remat_t *r, size_t *n);

/* ---- plans ---------------------------------------------------------------- */

typedef enum mp_remat_action_kind {
    MP_REMAT_RECOMPUTE = 1,    /* run forward node `node` again */
    MP_REMAT_BACKWARD = 2      /* run the gradient node of forward node `node` (and
                                  the gradient sums that complete right after it) */
} mp_remat_action_kind;

typedef struct mp_remat_action_t {
    mp_remat_action_kind kind;
    size_t node;               /* a forward node id of the training graph */
} mp_remat_action_t;

typedef struct mp_remat_plan_t {
    char policy[64];           /* what made it, e.g. "sqrt", "budget B=1.2e9" */
    size_t n_forward;          /* forward nodes of the training graph */
    uint32_t *mirror;          /* per forward node: chen2016's m(v) (0 keep, k > 0
                                  recomputed k times); NULL for a schedule made
                                  directly (revolve, optimal) */
    size_t n_actions;
    mp_remat_action_t *action; /* after the forward pass; the gradients appear in
                                  the training graph's backward order */
} mp_remat_plan_t;

/* Releases what p owns and zeroes it; NULL and zeroed plans are fine. */
void mp_remat_plan_free(mp_remat_plan_t *p);

/* The plan of mirror counts m[0..n_forward) by chen2016 Alg. 2: before each
 * gradient, the copies it needs are recomputed together with every dropped
 * ancestor they need (in step order); a value with m(v) = k is kept at its
 * k-th recomputation and passed through before that (sec. 4.4's recursion).
 * Graph outputs and the loss are always kept (m forced to 0).  m all 0
 * gives no action but the gradients.  On failure *out is zeroed. */
mp_status mp_remat_plan_mirror(const mp_remat_t *r, const uint32_t *m, const char *policy,
                               mp_remat_plan_t *out);

/* Checks a plan: actions name forward nodes, the gradients appear exactly
 * once each in the training graph's order.  MP_EINVAL naming the action. */
mp_status mp_remat_plan_validate(const mp_remat_t *r, const mp_remat_plan_t *p);

/* The training graph of the plan (the mirror transform): r's graph with a
 * recompute node per RECOMPUTE action (named "re:NAME", its outputs
 * "re:NAME" copies, aliases of copies for views) and the gradient nodes
 * reading the latest copies; the execution order is the plan's.  A plan
 * without recompute actions gives r's graph node for node.  Free with
 * mp_graph_free. */
mp_status mp_remat_apply(const mp_remat_t *r, const mp_remat_plan_t *p, mp_graph_t **out);

/* ---- evaluating plans --------------------------------------------------------- */

typedef struct mp_remat_eval_t {
    uint64_t peak;             /* arena bytes of the final plan: the transformed
                                  graph, shared by opts, placed by opts.strategy
                                  and checked (+ persistent bytes when counted) */
    uint64_t lower_bound;      /* max live bytes of the transformed graph's
                                  in-place storages: no placement does better */
    uint64_t forward_flops;    /* one forward pass */
    uint64_t extra_flops;      /* the recompute nodes' */
    size_t recomputed;         /* recompute nodes */
    size_t kept;               /* forward values (owning, not persistent) a
                                  gradient reads from the first forward pass */
    size_t nodes;              /* nodes of the transformed graph */
} mp_remat_eval_t;

/* Transforms, shares, places and checks (mp_graph_plan_check) the plan and
 * fills *e.  If plan_out is not NULL the graph and its placed plan are
 * handed over (free with mp_graph_free and mp_graph_plan_free). */
mp_status mp_remat_evaluate(const mp_remat_t *r, const mp_remat_plan_t *p, mp_remat_eval_t *e);
mp_status mp_remat_evaluate_full(const mp_remat_t *r, const mp_remat_plan_t *p, mp_remat_eval_t *e,
                                 mp_graph_t **graph_out, mp_graph_plan_t *plan_out);

/* ---- policies (src/remat/policy_*.c) ---------------------------------------------
 * Each is a pure function from r and its parameters to a plan.
 *   "none"            m = 0 everywhere (today's training graph)
 *   "segments=A,B,.." Alg. 1: keep the outputs of forward steps A, B, ...
 *                     (0-based step indices of the forward order), drop the rest
 *   "sqrt"            about sqrt(n) equal segments over the cut points
 *   "cheap"           sec. 4.2: keep conv/linear/matmul results, drop the rest
 *                     (batch norm, activations, pooling, views; add, mul
 *                     and concat are kept)
 *   "budget"          Alg. 3 with Appendix A's grid: B0 = sqrt(x*y) from a B=0
 *                     run, six B on [B0/sqrt2, sqrt2*B0]; each plan is evaluated
 *                     exactly and the one with the smallest peak kept
 *   "logn" / "logn=K" sec. 4.4's recursion: K kept per level (default 1)
 *   "revolve"         Griewank-Walther's binomial schedule over the cut-point
 *                     chain with the fewest slots whose recomputation is at most
 *                     one forward pass
 *   "optimal"         the chain dynamic program (Rotor-style) under the budget
 * With a budget (mp_remat_fit) every policy's candidates are evaluated and
 * the least extra compute whose measured peak fits is returned. */

/* Makes the plan of a policy spelled as above.  MP_EINVAL naming the
 * policy for an unknown name, a bad parameter or a step out of range. */
mp_status mp_remat_policy(const mp_remat_t *r, const char *policy, mp_remat_plan_t *out);

/* Names of the policies, for --help and tests; NULL past the end. */
const char *mp_remat_policy_name(size_t i);

/* Alg. 3 for one B over candidate steps (the cut points): m, and the
 * paper's x (bytes of the kept stage outputs) and y (largest stage). */
mp_status mp_remat_alg3(const mp_remat_t *r, uint64_t B, uint32_t *m, uint64_t *x, uint64_t *y);

typedef struct mp_remat_fit_t {
    int feasible;              /* some candidate fits the budget */
    uint64_t min_peak;         /* the smallest peak of every candidate */
    size_t candidates;         /* plans evaluated */
    mp_remat_eval_t eval;      /* of the plan returned */
} mp_remat_fit_t;

/* The budget contract: among the candidate plans of `policy` (NULL or
 * "auto": every policy's), the one with the least extra FLOPs whose
 * evaluated peak is <= budget (ties: smaller peak, then candidate order).
 * The candidate set does not depend on the budget, so the extra compute
 * returned never grows as the budget grows.  When none fits: MP_EINVAL
 * with the smallest achievable peak in the message and in fit->min_peak,
 * *out zeroed.  progress (may be NULL) is called after each candidate. */
mp_status mp_remat_fit(const mp_remat_t *r, const char *policy, uint64_t budget,
                       void (*progress)(void *ctx, size_t done, size_t total), void *ctx,
                       mp_remat_plan_t *out, mp_remat_fit_t *fit);

/* ---- chains (src/remat/revolve.c, chain_dp.c) ---------------------------------
 * A chain of n stages (the forward steps between consecutive cut points):
 * stage i reads the output of stage i-1 (stage 0: the graph's inputs).
 * Schedules over a chain are lists of chain ops; mp_remat_plan_chain turns
 * one into a plan. */

typedef enum mp_chain_op_kind {
    MP_CHAIN_FORWARD = 1,      /* run stage `stage` forward (its first run, or a
                                  recomputation from the latest copy of its input) */
    MP_CHAIN_BACKWARD = 2      /* run stage `stage`'s gradients (stages in
                                  decreasing order, each once) */
} mp_chain_op_kind;

typedef struct mp_chain_op_t {
    mp_chain_op_kind kind;
    size_t stage;
} mp_chain_op_t;

typedef struct mp_chain_t {
    size_t n;                  /* stages */
    uint64_t *fwd_flops;       /* per stage: one forward run */
    uint64_t *bwd_flops;       /* per stage: its gradients */
    uint64_t *out_bytes;       /* per stage: its output (what a checkpoint stores) */
    uint64_t *all_bytes;       /* per stage: every value it produces that its
                                  gradients read, with its output */
    size_t *first_node;        /* per stage: index into the forward order of its
                                  first node; stage i spans [first_node[i],
                                  first_node[i+1]) (n+1 entries) */
    uint64_t *grad_flops;      /* optional (NULL: fwd_flops): per stage, a run
                                  that only feeds its own gradients -- a
                                  FORWARD(i) right before BACKWARD(i), when
                                  out(i) has no reader left */
} mp_chain_t;

/* The chain of r's cut points (stages = runs of forward steps between
 * them).  Free with mp_chain_free. */
mp_status mp_remat_chain(const mp_remat_t *r, mp_chain_t *out);
void mp_chain_free(mp_chain_t *c);

/* Revolve (Griewank & Walther, ACM TOMS 26(1) 2000): the least number of
 * recomputed stage runs t(n, s) (FORWARDs after the first pass) that
 * reverse the uniform chain of n stages with s checkpoint slots, one of
 * which holds the input throughout (Griewank-Walther's convention): at every
 * op at most s - 1 live stage outputs that the op neither reads nor makes
 * and that are not the output of the stage whose BACKWARD comes next (unit
 * sizes: peak <= s + 2).  With r the least integer with C(s+r, s) >= n:
 *     t(n, s) = (r-1)*n - C(s+r, s+1) + 1      (n >= 1, s >= 1),
 * t(0, s) = t(1, s) = 0, UINT64_MAX when s = 0 and n > 1 (and past 64 bits).
 * Griewank-Walther's r*n - C(s+r, r-1) counts the first pass's n-1 advances
 * too.  docs/remat-chains.md. */
uint64_t mp_revolve_cost(uint64_t n, uint64_t s);

/* A schedule reaching t(n, s) on the uniform chain of n stages with at most
 * s checkpoints held at once besides the input: the first forward pass,
 * then recomputations and backward ops.  *ops malloc'ed (free()). */
mp_status mp_revolve_schedule(size_t n, size_t s, mp_chain_op_t **ops, size_t *n_ops);

/* The chain dynamic program (Beaumont et al., Rotor, 2019): a schedule of
 * least recomputed FLOPs whose modelled activation memory (checkpoints +
 * the all_bytes of stages being differentiated) stays <= mem_limit, memory
 * discretised into `slots` buckets (0: 500).  MP_EINVAL with the least
 * feasible modelled memory when none fits.  *ops malloc'ed (free()). */
mp_status mp_chain_optimal(const mp_chain_t *c, uint64_t mem_limit, size_t slots, mp_chain_op_t **ops,
                           size_t *n_ops, uint64_t *extra_flops);

/* The modelled memory peak and recomputed FLOPs of a chain schedule (the
 * model the DP optimises; the measured peak is mp_remat_evaluate's), and a
 * check that it is a valid schedule: MP_EINVAL naming the op otherwise. */
mp_status mp_chain_simulate(const mp_chain_t *c, const mp_chain_op_t *ops, size_t n_ops,
                            uint64_t *peak, uint64_t *extra_flops);

/* A plan from a chain schedule over r's chain: each forward stage op after
 * the first run of that stage recomputes its nodes, each backward stage op
 * runs its nodes' gradients in the training graph's order. */
mp_status mp_remat_plan_chain(const mp_remat_t *r, const mp_chain_t *c, const mp_chain_op_t *ops,
                              size_t n_ops, const char *policy, mp_remat_plan_t *out);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_REMAT_H */
