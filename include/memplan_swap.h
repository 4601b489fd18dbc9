/* memplan_swap.h -- swapping: move what is not in use to host memory and
 * bring it back before its next access, with the transfers hidden under
 * computation (zhang2019's AutoSwap, sec. IV; src/swap/).  Included by
 * memplan.h; not meant to be included alone.
 *
 * The input is one training iteration as a *timed iteration*: a sequence of
 * ops, each with a compute time, reading and writing variables, made from
 * a graph and a device model (mp_swap_iter_from_graph) or from a trace
 * with op boundaries (mp_swap_iter_from_trace).  A
 * variable that is not persistent is allocated when its first op starts
 * and freed when its last op ends; a persistent one (parameters, their
 * gradients, optimizer state) is always allocated.  The memory load at a
 * moment is the sum of the sizes of the variables on the device
 * (zhang2019 Def. 2).  A swap takes one variable out after one of its
 * accesses and brings it back before its next access (for a persistent
 * variable the next access may be in the next iteration).  Transfers run
 * on two copy streams beside one compute stream (sec. IV-E); the simulator
 * gives the load curve, the stall time and the overhead of a swap plan.
 *
 * Usage:
 *
 *     mp_swap_iter_t it;  mp_swap_device_t dev;  mp_swap_link_t link;
 *     mp_swap_device_preset("gtx1080ti", &dev);
 *     mp_swap_link_preset("pcie3", &link);
 *     if (mp_swap_iter_from_graph(train, &dev, &it) != MP_OK) return fail(mp_last_error());
 *     mp_swap_select_opts_t o;  mp_swap_select_opts_default(&o);
 *     o.mode = MP_SWAP_NO_OVERHEAD;                 // largest load cut, zero stall
 *     mp_swap_plan_t plan;  mp_swap_sim_t sim;
 *     mp_swap_select(&it, &link, &o, &plan, &sim);
 *     printf("peak load %llu -> %llu bytes, overhead %.1f%%\n",
 *            (unsigned long long)sim.original_peak, (unsigned long long)sim.peak,
 *            100.0 * sim.overhead);
 *     mp_swap_plan_free(&plan);  mp_swap_sim_free(&sim);  mp_swap_iter_free(&it);
 */
#ifndef MEMPLAN_SWAP_H
#define MEMPLAN_SWAP_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_swap.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- timed iterations (src/swap/iter.c) ---------------------------------- */

typedef struct mp_swap_var_t {
    uint64_t size;           /* bytes, > 0 */
    int persistent;          /* allocated for the whole run (parameters, gradients) */
    char *name;              /* owned by the iteration; "" when unnamed */
} mp_swap_var_t;

typedef struct mp_swap_access_t {
    size_t var;
    int write;               /* 1 write, 0 read */
} mp_swap_access_t;

typedef struct mp_swap_op_t {
    uint64_t ns;             /* compute time of the op */
    size_t first;            /* its accesses: access[first .. first + n) */
    size_t n;
    char *name;              /* owned by the iteration; "" when unnamed */
} mp_swap_op_t;

/* One iteration; plain data, free with mp_swap_iter_free.  Every variable
 * is accessed by at least one op; an op accesses a variable at most once
 * (a read-and-write is a write). */
typedef struct mp_swap_iter_t {
    size_t n_vars, n_ops, n_access;
    mp_swap_var_t *var;
    mp_swap_op_t *op;
    mp_swap_access_t *access;
} mp_swap_iter_t;

/* A device's speed for estimated op times (a roofline): an op takes
 * max(FLOPs / flops, bytes it touches / bytes_per_s) / efficiency +
 * launch_ns. */
typedef struct mp_swap_device_t {
    char name[32];
    double flops;            /* peak FLOP/s */
    double bytes_per_s;      /* peak device memory bandwidth */
    double efficiency;       /* the fraction of peak kernels reach (0 or 1: peak) */
    uint64_t launch_ns;      /* fixed cost per op */
} mp_swap_device_t;

/* Presets: "gtx1080ti" (zhang2019's GPU), "v100", "h100", and "cpu" (this
 * machine, measured by a short GEMM and memcpy run, about 0.2 s).  The
 * numbers and their sources are in docs/swap.md.  MP_ENOTFOUND naming the
 * presets for another name. */
mp_status mp_swap_device_preset(const char *name, mp_swap_device_t *out);
const char *mp_swap_device_preset_name(size_t i);    /* NULL past the end */

/* The timed iteration of a graph: one op per node in the execution order,
 * timed by dev from the node's FLOPs (attrs.flops, else an estimate; a
 * gradient node costs twice its forward node) and the bytes it reads and
 * writes; one variable per tensor that owns memory (views access their
 * root), parameters and gradients persistent.  Names are the graph's. */
mp_status mp_swap_iter_from_graph(const mp_graph_t *g, const mp_swap_device_t *dev,
                                  mp_swap_iter_t *out);

/* Replaces the op times of it = mp_swap_iter_from_graph(train, ...) by
 * the kernel times measured running train on the reference CPU executor
 * (src/exec/exec_time.c): the median of reps runs (0: 3) per op.  The
 * "measured here" producer of timed iterations: only meaningful for this
 * CPU.  MP_EINVAL when it is not of train, MP_ENOTFOUND for an op the
 * executor cannot run. */
mp_status mp_swap_iter_measure(const mp_graph_t *train, size_t reps, mp_swap_iter_t *it);

/* The timed iteration of a trace with op boundaries (memplan-trace/1 'o'
 * lines, docs/trace-format.md): one op per boundary, timed by its
 * duration, owning the events up to the next boundary; one variable per
 * block some op accesses (reads, writes, and allocations inside an op,
 * which are writes), named by its handle ("0x..."), numbered by handle;
 * a block allocated before the first boundary and never freed is
 * persistent.  Rules and why: src/swap/iter_trace.c.  MP_EINVAL when the
 * trace has no op boundaries (a malloc/free trace: nothing says which op
 * accesses what or for how long). */
mp_status mp_swap_iter_from_trace(const mp_trace_t *t, mp_swap_iter_t *out);

/* The trace of a timed iteration, which mp_swap_iter_from_trace reads
 * back as the same iteration (variable names aside): handle 1 + v for
 * variable v; persistent variables, and those first read, allocated before
 * the first op; every other variable allocated in the op of its first
 * access; non-persistent ones freed in the op of their last.  With
 * mp_swap_iter_from_graph it is the "graph and device model" producer.
 * *out: free with mp_trace_free.  MP_EINVAL for an invalid iteration. */
mp_status mp_swap_iter_to_trace(const mp_swap_iter_t *it, mp_trace_t **out);

/* The reference CPU executor records one training step of train as a
 * trace (src/exec/exec_trace.c): parameters, gradients and inputs
 * allocated before the first op (the executor's own allocations, their
 * addresses the handles); every other tensor that owns memory malloc'ed
 * right before the step that first writes it and freed after the step
 * that last accesses it (the step's outputs stay); per step an op
 * boundary named after the node, its reads and writes (a view's are its
 * root's).  The step runs reps times (0: 3) and each op's duration is the
 * median of its kernel times, as mp_swap_iter_measure's; the events are
 * those of the last run.  *out: free with mp_trace_free.  MP_ENOTFOUND
 * for an op the executor cannot run. */
mp_status mp_swap_trace_record(const mp_graph_t *train, size_t reps, mp_trace_t **out);

/* Checks the invariants above; MP_EINVAL naming the op or variable. */
mp_status mp_swap_iter_validate(const mp_swap_iter_t *it);

/* Releases what it owns and zeroes it; NULL and zeroed ones are fine. */
void mp_swap_iter_free(mp_swap_iter_t *it);

/* ---- the transfer model (src/swap/link.c) -------------------------------- */

/* A transfer of b bytes takes lat_ns + b / bytes_per_s in each direction. */
typedef struct mp_swap_link_t {
    char name[32];
    uint64_t out_lat_ns;     /* device -> host */
    double out_bytes_per_s;
    uint64_t in_lat_ns;      /* host -> device */
    double in_bytes_per_s;
} mp_swap_link_t;

/* Presets: "pcie3" (zhang2019's SINGA measurements, PCIe 3.0 x16, pinned
 * memory: out 47.2 us + bytes / 13.2 GB/s, in 9.7 us + bytes / 12.2 GB/s),
 * "pcie4", "pcie5", "nvlink-c2c", and "measured" (a host memcpy benchmark
 * on this machine).  Sources in docs/swap.md.  MP_ENOTFOUND otherwise. */
mp_status mp_swap_link_preset(const char *name, mp_swap_link_t *out);
const char *mp_swap_link_preset_name(size_t i);      /* NULL past the end */

/* "BW,LAT": the same bandwidth (bytes/s, SI suffixes K M G allowed: 12G)
 * and latency (ns, or with us/ms suffix) both ways.  MP_EINVAL naming the
 * field otherwise. */
mp_status mp_swap_link_parse(const char *text, mp_swap_link_t *out);

/* Transfer times of size bytes. */
uint64_t mp_swap_out_ns(const mp_swap_link_t *l, uint64_t size);
uint64_t mp_swap_in_ns(const mp_swap_link_t *l, uint64_t size);

/* ---- swap plans and the simulator (src/swap/simulate.c) -------------------- */

/* One variable swapped once: out after its access at op `after`, back
 * before its next access at op `before` (before < after: the next access
 * is in the next iteration, for persistent variables).  The variable must
 * not be accessed by any op strictly between them (cyclically). */
typedef struct mp_swap_item_t {
    size_t var;
    size_t after;
    size_t before;
} mp_swap_item_t;

typedef struct mp_swap_plan_t {
    size_t n;
    mp_swap_item_t *item;
    char score[32];          /* what chose it: "doa", "wdoa", "bo", "user", ... */
} mp_swap_plan_t;

void mp_swap_plan_free(mp_swap_plan_t *p);

/* Checks a plan against an iteration: items name variables and ops of
 * it, each (after, before) is a gap between two consecutive accesses of
 * the variable, a variable's gaps do not overlap.  MP_EINVAL naming the item. */
mp_status mp_swap_plan_validate(const mp_swap_iter_t *it, const mp_swap_plan_t *p);

/* What one simulated iteration did. */
typedef struct mp_swap_sim_t {
    uint64_t compute_ns;     /* sum of op times: the iteration with no swapping */
    uint64_t total_ns;       /* with the plan's transfers and the stalls they cause */
    uint64_t stall_ns;       /* total_ns - compute_ns */
    double overhead;         /* stall_ns / compute_ns */
    uint64_t original_peak;  /* peak load with no swapping */
    uint64_t peak;           /* peak load with the plan */
    int limit_met;           /* peak <= limit (1 when there is no limit) */
    size_t n_ops;
    uint64_t *op_start_ns;   /* per op: when it started */
    uint64_t *op_load;       /* per op: the highest load while it ran */
    uint64_t *out_start_ns, *out_end_ns;   /* per plan item: its swap-out */
    uint64_t *in_start_ns, *in_end_ns;     /* per plan item: its swap-in */
} mp_swap_sim_t;

/* Simulates one iteration (sec. IV-E), steady state (persistent variables
 * swapped across the iteration boundary are out at its start): one compute
 * stream runs the ops in order; the swap-out stream takes the items in
 * order of `after`, each starting when its access ends and the previous
 * swap-out has finished; the swap-in stream takes them in order of
 * `before`, each started as late as lets it finish when op `before` would
 * start if nothing stalled from the op where it is released on, but never
 * before the previous swap-in has finished; an op waits for the swap-ins of
 * the variables it accesses.  With limit > 0 an op that would allocate
 * above the limit waits for swap-outs to finish, and a swap-in that would
 * waits for memory to come back while the ops before the one needing it
 * can run; when nothing pending can free memory it goes on and limit_met
 * is 0.  limit 0: no limit.  op_load[j] is the highest load from the end of
 * op j-1 to the end of op j; before == after is a persistent variable
 * accessed once per iteration.  Details: docs/swap.md.  Free with
 * mp_swap_sim_free. */
mp_status mp_swap_simulate(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                           const mp_swap_plan_t *plan, uint64_t limit, mp_swap_sim_t *out);

void mp_swap_sim_free(mp_swap_sim_t *s);

/* The load curve with no swapping (per op, the load while it runs), its
 * peak and the op where it is first reached. */
mp_status mp_swap_load(const mp_swap_iter_t *it, uint64_t *op_load, uint64_t *peak,
                       size_t *peak_op);

/* zhang2019 sec. VI-B1: the peak load when every candidate variable
 * (mp_swap_candidates) is on the device only while an op accesses it
 * (swapped out and in synchronously around every access): the least load a
 * plan of candidates can reach. */
mp_status mp_swap_load_min(const mp_swap_iter_t *it, uint64_t min_size, uint64_t *load_min);

/* SmartPool after AutoSwap (sec. V): the device residencies of a plan as
 * simulated, one usage record per stretch a variable stays on the device,
 * over simulated time in ns (first = start, last = end - 1), ids 0..n-1.
 * Any planner places them (mp_plan_compute): the footprint of swapping.
 * *out malloc'ed (free()). */
mp_status mp_swap_residency(const mp_swap_iter_t *it, const mp_swap_plan_t *plan,
                            const mp_swap_sim_t *sim, mp_buffer_t **out, size_t *n);

/* The load curve as an SVG picture (src/io/swap_svg.c): per op, the load
 * with no swapping and with plan as sim simulated it, limit (0: none) as a
 * dashed line, peaks marked, sizes in binary units; title may be NULL.
 * Written safely (a temporary file renamed into place; "-" is stdout).
 * MP_EIO naming path on a write error. */
mp_status mp_swap_write_svg(const char *path, const char *title, const mp_swap_iter_t *it,
                            const mp_swap_plan_t *plan, const mp_swap_sim_t *sim, uint64_t limit);

/* ---- selection (src/swap/score.c, select.c, bo.c) -------------------------- */

typedef enum mp_swap_score {
    MP_SWAP_DOA = 0,         /* duration of absence: gap time - transfer times */
    MP_SWAP_AOA = 1,         /* DOA x size (DOA / size when DOA < 0, sec. IV-B) */
    MP_SWAP_WDOA = 2,        /* area under the load curve over the gap */
    MP_SWAP_SWDOA = 3,       /* WDOA recomputed on the updated load after each pick */
    MP_SWAP_BO = 4           /* the four standardised, weighted; weights by Bayesian
                                optimisation of the simulated objective (sec. IV-C) */
} mp_swap_score;

typedef enum mp_swap_mode {
    MP_SWAP_NO_OVERHEAD = 0, /* the largest load reduction whose simulated stall is 0 */
    MP_SWAP_LIMIT = 1        /* meet `limit` with the least simulated overhead */
} mp_swap_mode;

typedef struct mp_swap_select_opts_t {
    mp_swap_mode mode;
    mp_swap_score score;
    uint64_t limit;          /* MP_SWAP_LIMIT: the memory load limit in bytes */
    uint64_t min_size;       /* candidates: at least this many bytes (default 1 MiB) */
    size_t bo_evals;         /* MP_SWAP_BO: simulated evaluations (default 40) */
    uint64_t seed;           /* MP_SWAP_BO: deterministic for a seed (default 1) */
} mp_swap_select_opts_t;

void mp_swap_select_opts_default(mp_swap_select_opts_t *o);

/* Candidates (sec. IV-A): variables of at least min_size bytes whose
 * lifetime crosses the peak, each with the gap between its two accesses
 * around the peak op; *out malloc'ed (free()). */
mp_status mp_swap_candidates(const mp_swap_iter_t *it, uint64_t min_size, mp_swap_item_t **out,
                             size_t *n);

/* The four scores of each candidate (sec. IV-B) on the load with no
 * swapping; SWDOA as the WDOA each candidate had when picked in the
 * submodular order (so that sorting by it gives that order).  Arrays of n
 * doubles, the caller's. */
mp_status mp_swap_scores(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                         const mp_swap_item_t *cand, size_t n, double *doa, double *aoa,
                         double *wdoa, double *swdoa);

/* Selection (sec. IV-D): candidates by decreasing score, added while the
 * load (updated as each is taken out over its absence) is above the
 * limit; in MP_SWAP_NO_OVERHEAD the longest prefix whose simulation has no
 * stall.  Fills *plan (free with mp_swap_plan_free) and, if sim is not
 * NULL, its simulation (free with mp_swap_sim_free).  MP_EINVAL naming
 * load_min when the limit is below it. */
mp_status mp_swap_select(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                         const mp_swap_select_opts_t *opts, mp_swap_plan_t *plan,
                         mp_swap_sim_t *sim);

/* ---- keep, swap or recompute: the joint plan (src/swap/joint.c) ----------- *
 *
 *     mp_swap_joint_t *j;  mp_swap_choice_t so, ro, jo;
 *     mp_swap_joint_new(fwd, &dev, &link, NULL, &j);      // candidates, once
 *     mp_swap_joint_at(j, limit, &so, &ro, &jo);          // per limit
 *     printf("joint: %s + %zu swapped, +%.1f%%\n", jo.remat, jo.n_swapped, 100 * jo.overhead);
 *     mp_swap_joint_free(j);
 */

typedef struct mp_swap_joint_opts_t {
    mp_swap_score score;     /* the swap selection's score (default SWDOA; BO
                                costs 40 simulations per candidate and limit) */
    uint64_t min_size;       /* swap candidates' least size (default 1 MiB) */
    size_t ladder;           /* chain-DP recompute candidates (default 12, at most 24) */
} mp_swap_joint_opts_t;

void mp_swap_joint_opts_default(mp_swap_joint_opts_t *o);

/* One plan at a limit: the recompute plan, how many variables are swapped
 * on top of it, and the simulated step. */
typedef struct mp_swap_choice_t {
    char remat[64];          /* the recompute plan: "none", "cheap", "optimal M=..." */
    size_t n_swapped;
    uint64_t peak;           /* simulated peak memory load */
    uint64_t total_ns;       /* the step: recomputation and swap stalls included */
    double overhead;         /* total_ns / the plain step's compute time - 1 */
    int feasible;            /* 0: nothing of its kind meets the limit (rest 0) */
} mp_swap_choice_t;

typedef struct mp_swap_joint_t mp_swap_joint_t;   /* opaque: the candidates */

/* Builds the training step of forward graph fwd under each recompute
 * candidate (none, cheap, sqrt, Alg. 3 + grid, logn=2, Revolve, the chain
 * DP at a ladder of modelled limits) and times it on dev: O(candidates x
 * graph).  opts NULL: defaults.  Free with mp_swap_joint_free. */
mp_status mp_swap_joint_new(const mp_graph_t *fwd, const mp_swap_device_t *dev, const mp_swap_link_t *link,
                            const mp_swap_joint_opts_t *opts, mp_swap_joint_t **out);

/* At a load limit in bytes: the swap-only plan (no recomputation), the
 * recompute-only plan (the cheapest candidate that fits alone) and the
 * joint plan (the cheapest candidate, swapping on top where it does not
 * fit alone).  The joint set includes both others, so the joint plan is
 * never slower than either.  swap_only and remat_only may be NULL. */
mp_status mp_swap_joint_at(const mp_swap_joint_t *j, uint64_t limit, mp_swap_choice_t *swap_only,
                           mp_swap_choice_t *remat_only, mp_swap_choice_t *joint);

size_t mp_swap_joint_count(const mp_swap_joint_t *j);          /* candidates */
uint64_t mp_swap_joint_plain_peak(const mp_swap_joint_t *j);   /* no recompute, no swap */
uint64_t mp_swap_joint_least_peak(const mp_swap_joint_t *j);   /* below: nothing is feasible */
void mp_swap_joint_free(mp_swap_joint_t *j);

/* ---- the executed swap step (src/exec/exec_swap.c) ----------------------- *
 *
 *     mp_swap_run_t run;  mp_swap_run_opts_t ro;  mp_swap_run_opts_default(&ro);
 *     mp_swap_run(train, &it, &plan, &sim, &ro, &run);   // it, sim: of train
 *     ... run.result as mp_exec_run's; run.stall_seconds beside sim.stall_ns
 *     mp_swap_run_free(&run);
 */

typedef struct mp_swap_run_opts_t {
    uint64_t seed;           /* inputs and parameters, as mp_exec_opts_t (default 1) */
    int poison;              /* NaN-fill slots given up and slots about to be
                                swapped in, and outputs before their producer (default 1) */
    const char *strategy;    /* places the device residencies (NULL: "auto") */
    uint64_t copy_delay_ns;  /* tests: every copy sleeps this long first (default 0) */
    int skip_in_waits;       /* tests: steps do not wait for swap-ins (a wrong
                                schedule, which poison must expose) */
} mp_swap_run_opts_t;

void mp_swap_run_opts_default(mp_swap_run_opts_t *o);

typedef struct mp_swap_run_t {
    mp_exec_result_t result;    /* the step's outputs, as mp_exec_run's */
    uint64_t device_bytes;      /* the device pool: every residency placed, checked */
    uint64_t persistent_bytes;  /* persistent variables never swapped (own allocations) */
    uint64_t host_bytes;        /* the host pool: one buffer per item */
    size_t swaps;               /* items run (one swap-out and one swap-in each) */
    double seconds;             /* the step's wall time */
    double stall_seconds;       /* the compute thread waiting for copies */
} mp_swap_run_t;

/* Runs training graph train with swap plan `plan` over it = its timed
 * iteration (mp_swap_iter_from_graph(train, ...)) and sim = the plan's
 * simulation, which places each transfer between steps.  Each variable's
 * stretches on the device between swaps are usage records placed by a
 * core strategy (checked) in a device pool; two copy threads move the
 * items to a host pool and back; a step waits for the swap-ins it reads
 * and for the swap-outs whose memory it may reuse.  MP_EINVAL for an
 * iteration, simulation or plan not of train; MP_ENOTFOUND as
 * mp_exec_run.  Free with mp_swap_run_free. */
mp_status mp_swap_run(const mp_graph_t *train, const mp_swap_iter_t *it, const mp_swap_plan_t *plan,
                      const mp_swap_sim_t *sim, const mp_swap_run_opts_t *opts, mp_swap_run_t *out);

void mp_swap_run_free(mp_swap_run_t *r);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_SWAP_H */
