/* swap_cli.h -- the parts of `memplan swap` in other files. */
#ifndef MEMPLAN_SWAP_CLI_H
#define MEMPLAN_SWAP_CLI_H

#include "memplan.h"

#include <stdbool.h>

typedef struct cli_swap_joint_args {
    const char *path;
    const mp_swap_device_t *dev;
    const mp_swap_link_t *link;
    mp_swap_score score;
    uint64_t min_size, limit;
    bool has_limit, json;
} cli_swap_joint_args;

/* `memplan swap --joint` (swap_joint.c): exit status as the command's. */
int cli_swap_joint(const cli_swap_joint_args *a);

/* One printed score's plan and its simulation, for --run. */
typedef struct cli_swap_run_row {
    const char *score;
    const mp_swap_plan_t *plan;
    const mp_swap_sim_t *sim;
} cli_swap_run_row;

/* `memplan swap --run` (swap_run.c): runs each row's plan and the plain
 * step on the reference executor; prints text lines, or with json one
 * object (no newline: it sits inside the command's object).  EXIT_INVALID
 * when some output differs from the plain step's. */
int cli_swap_run(const mp_graph_t *train, const mp_swap_iter_t *it, const cli_swap_run_row *rows, size_t n_rows,
                 bool json);

/* `memplan swap TRACE` (swap_trace.c): the timed iteration of a trace
 * with op boundaries; errors printed, exit status as the command's. */
int cli_swap_trace_iter(const char *path, mp_swap_iter_t *it);

/* `memplan swap --write-trace OUT GRAPH` (swap_trace.c): the training
 * step's trace, timed by dev, or recorded on the reference executor when
 * measure; a line (or JSON object) saying what was written. */
int cli_swap_write_trace(const char *out, const mp_graph_t *train, const mp_swap_device_t *dev, bool measure,
                         bool json);

#endif
