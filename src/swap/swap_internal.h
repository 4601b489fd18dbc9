/* swap_internal.h -- private helpers shared by the files of src/swap/.
 * Nothing here is public. */
#ifndef MEMPLAN_SWAP_INTERNAL_H
#define MEMPLAN_SWAP_INTERNAL_H

#include "../core/internal.h"

#include <time.h>

/* Monotonic seconds, for the measured presets. */
static inline double mp__seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The roofline time of an op on device d (device.c). */
uint64_t mp__swap_op_ns(const mp_swap_device_t *d, uint64_t flops, uint64_t bytes);

/* Selection with a given key per candidate (highest first), in opts'
 * mode; score names the plan (select.c). */
mp_status mp__swap_select_ranked(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                                 const mp_swap_select_opts_t *o, const mp_swap_item_t *cand,
                                 size_t n, const double *key, const char *score,
                                 mp_swap_plan_t *plan, mp_swap_sim_t *sim);

/* The four scores (DOA, AOA, WDOA, SWDOA), score-major: scores[k*n + i];
 * malloc'ed (select.c). */
mp_status mp__swap_all_scores(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                              const mp_swap_item_t *cand, size_t n, double **scores);

/* BO: the weights of the standardised scores tuned by Bayesian
 * optimisation of the simulated objective (bo.c). */
mp_status mp__swap_bo(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                      const mp_swap_select_opts_t *o, const mp_swap_item_t *cand, size_t n,
                      const double *scores, mp_swap_plan_t *plan, mp_swap_sim_t *sim);

/* ---- per-variable access lists (load.c) ---------------------------------- */

/* An iteration's accesses by variable: variable v is accessed by the ops
 * ops[start[v] .. start[v + 1]), ascending; first/last are the first and
 * last of them.  total: the sum of all variable sizes (fits in 64 bits). */
typedef struct mp__swap_index {
    size_t *first, *last, *start, *ops;
    uint64_t total;
} mp__swap_index;

/* Validates it (mp_swap_iter_validate, sizes' sum) and builds the index. */
mp_status mp__swap_index_build(const mp_swap_iter_t *it, mp__swap_index *x);
void mp__swap_index_free(mp__swap_index *x);
/* The position of the first access of v at an op >= op (start[v + 1]: none). */
size_t mp__swap_index_lower(const mp__swap_index *x, size_t v, size_t op);
/* The load curve with no swapping on a built index (mp_swap_load). */
mp_status mp__swap_load_curve(const mp_swap_iter_t *it, const mp__swap_index *x, uint64_t *op_load,
                              uint64_t *peak, size_t *peak_op);

#endif
