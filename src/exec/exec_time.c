/* exec_time.c -- op times measured on the reference executor, for swap
 * planning (issue 10 item 1: a timed iteration recorded from a real
 * training step instead of a device model's estimate).  The step is run
 * `reps` times with the plain layout; each step's kernel time is taken
 * between the executor's before/after hooks, and the median over the runs
 * replaces the iteration's estimate. */
#include "exec_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct timing {
    uint64_t *ns;        /* reps x steps */
    size_t rep, steps;
    struct timespec t0;
} timing;

static uint64_t elapsed_ns(const struct timespec *a, const struct timespec *b) {
    int64_t d = (int64_t)(b->tv_sec - a->tv_sec) * 1000000000 + (b->tv_nsec - a->tv_nsec);
    return d > 0 ? (uint64_t)d : 0;
}

static mp_status t_before(void *ctx, mp__exec *x, uint64_t *span, size_t step) {
    (void)x, (void)span, (void)step;
    clock_gettime(CLOCK_MONOTONIC, &((timing *)ctx)->t0);
    return MP_OK;
}

static mp_status t_after(void *ctx, mp__exec *x, uint64_t *span, size_t step) {
    timing *t = ctx;
    struct timespec now;
    (void)x, (void)span;
    clock_gettime(CLOCK_MONOTONIC, &now);
    t->ns[t->rep * t->steps + step] = elapsed_ns(&t->t0, &now);
    return MP_OK;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

mp_status mp_swap_iter_measure(const mp_graph_t *train, size_t reps, mp_swap_iter_t *it) {
    if (!train || !it) return mp__err(MP_EINVAL, "swap measure: NULL argument");
    size_t steps;
    mp_graph_order(train, &steps);
    if (it->n_ops != steps)
        return mp__err(MP_EINVAL, "swap measure: the iteration has %zu ops, the graph %zu steps", it->n_ops, steps);
    if (reps == 0) reps = 3;
    if (reps > 99) reps = 99;
    timing t = {.steps = steps};
    uint64_t *col = malloc((reps + 1) * sizeof *col);
    t.ns = calloc(reps * steps + 1, sizeof *t.ns);
    if (!t.ns || !col) {
        free(t.ns), free(col);
        return MP__NOMEM();
    }
    mp__exec_hooks h = {&t, NULL, t_before, t_after, NULL};
    mp_exec_opts_t o = {.seed = 1};
    mp_status s = MP_OK;
    for (t.rep = 0; t.rep < reps && !s; t.rep++) {
        mp_exec_result_t r;
        if (!(s = mp__exec_run_hooked(train, &o, &h, &r))) mp_exec_result_free(&r);
    }
    for (size_t j = 0; j < steps && !s; j++) {
        for (size_t k = 0; k < reps; k++) col[k] = t.ns[k * steps + j];
        qsort(col, reps, sizeof *col, cmp_u64);
        it->op[j].ns = col[reps / 2];
    }
    free(t.ns), free(col);
    return s;
}
