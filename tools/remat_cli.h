/* remat_cli.h -- what `memplan remat` (cmd_remat.c) shares with its
 * printing (remat_print.c): the options, one row per plan, the state. */
#ifndef MEMPLAN_REMAT_CLI_H
#define MEMPLAN_REMAT_CLI_H

#include "cli.h"

typedef struct opts {
    const char *path, *policy, *strategy, *svg, *graph_out;
    bool json, run, persistent, has_budget;
    uint64_t budget, seed;
} opts;

typedef struct row {
    char name[128];            /* the policy asked for, or the plan's for --budget */
    char plan[64];             /* what the plan calls itself */
    char *error;               /* why the policy does not apply (malloc'ed) */
    mp_status status;
    mp_remat_eval_t e;
    double seconds;            /* making and evaluating the plan */
    double run_s;              /* executing it (--run), not in seconds */
    bool ran, identical;
    char differ[160];          /* the first output that differs */
    size_t outputs;
} row;

typedef struct state {
    opts o;
    mp_graph_t *fwd;
    mp_remat_t *r;
    row *rows;
    size_t n_rows;
    uint64_t none_peak;
    bool have_none;
    uint64_t forward_flops;
    mp_exec_result_t plain;    /* the plain step, naive (for --run) */
    bool have_plain;
    /* the plan drawn (--svg) and written (--graph-out) */
    size_t drawn;
    mp_graph_t *graph;
    mp_graph_plan_t gplan;
    /* --budget */
    mp_remat_fit_t fit;
    bool fitted;
} state;

/* "3.63 GFLOP"-style rendering, and a as a percentage of b (0 when b is 0). */
const char *remat_flops_human(uint64_t f, char *buf, size_t len);
double remat_pct(uint64_t a, uint64_t b);

/* The result as one JSON object, or as the table, on stdout. */
void remat_print_json(const state *s);
void remat_print_text(const state *s);

#endif
