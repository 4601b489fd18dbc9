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

#endif
