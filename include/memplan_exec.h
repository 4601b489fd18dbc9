/* memplan_exec.h -- the reference executor (src/exec/): float32 CPU
 * kernels that run a graph on a plan's arena or naively, to prove plans.
 * Included by memplan.h; not meant to be included alone.
 *
 *     mp_exec_result_t naive, planned;
 *     mp_exec_opts_t o = {.seed = 7, .poison = 1};
 *     mp_exec_run(g, &o, &naive);
 *     o.plan = &p;                                    // a graph plan of g
 *     mp_exec_run(g, &o, &planned);
 *     // every output of planned is bit-identical to naive's
 *     mp_exec_result_free(&naive);  mp_exec_result_free(&planned);
 */
#ifndef MEMPLAN_EXEC_H
#define MEMPLAN_EXEC_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_exec.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the reference executor (src/exec/) ----------------------------------
 * float32 CPU kernels that run a graph with every planned tensor placed in
 * one arena by a graph plan, or each in its own allocation (the naive run).
 * It proves plans: the same seed must give bit-identical outputs both ways. */

typedef struct mp_exec_opts_t {
    uint64_t seed;               /* inputs and parameters get pseudo-random
                                    values from the seed and the tensor id */
    const mp_graph_plan_t *plan; /* NULL: the naive run */
    int poison;                  /* fill a tensor's memory with NaNs just
                                    before its producer runs */
    const float *const *init;    /* optional per-tensor values for inputs and
                                    parameters (NULL or NULL entries: seeded) */
} mp_exec_opts_t;

typedef struct mp_exec_result_t {
    size_t n_tensors;
    void **data;                 /* per tensor: a copy of every graph output
                                    (loss, gradients, logits), else NULL */
    uint64_t *bytes;             /* their sizes */
    uint64_t arena_bytes;        /* the arena the plan used (0 when naive) */
    double seconds;              /* wall time of the run */
} mp_exec_result_t;

/* MP_OK when every node of g has a kernel, else MP_ENOTFOUND naming the
 * first node and op that has none. */
mp_status mp_exec_supported(const mp_graph_t *g);

/* Runs g once and copies its outputs into *out (free with
 * mp_exec_result_free).  MP_ENOTFOUND for an op without a kernel,
 * MP_EINVAL for a plan not made for g.  On failure *out is zeroed. */
mp_status mp_exec_run(const mp_graph_t *g, const mp_exec_opts_t *opts, mp_exec_result_t *out);

void mp_exec_result_free(mp_exec_result_t *r);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_EXEC_H */
