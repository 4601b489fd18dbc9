/* graph_stages.h -- the memory stages `memplan graph` compares on one graph
 * (every tensor its own memory, in-place, sharing, parallel-safe sharing,
 * each core planner), computed and proven by tools/graph_stages.c. */
#ifndef MEMPLAN_GRAPH_STAGES_H
#define MEMPLAN_GRAPH_STAGES_H

#include "cli.h"

typedef struct gs_stage {
    char key[64];         /* machine name: "none", "share", "inplace+auto", ... */
    char label[96];       /* for people: "sharing, parallel-safe (ancestor)" */
    uint64_t footprint;
    size_t n_inplace, n_reused;
    double ms;            /* time to compute and place it */
    bool skipped;         /* a strategy 'all' skips at this size (all_limit) */
    mp_graph_plan_t plan; /* proven by mp_graph_plan_check */
} gs_stage;

typedef struct gs_request {
    bool inplace, share;  /* stages asked for */
    bool ancestor, colour;/* parallel-safe sharing rows */
    const char **strategies; /* core planners placing the in-place storages */
    size_t n_strategies;
    bool include_persistent;
    bool all;             /* strategies came from 'all': honour all_limit */
} gs_request;

typedef struct gs_result {
    gs_stage *stage;
    size_t n;
    uint64_t lower_bound;         /* offsets bound of the plain records */
    uint64_t lower_bound_inplace; /* of the records after in-place */
} gs_result;

/* Computes and checks every stage of req on g.  Prints the error and
 * returns EXIT_INPUT (or EXIT_INVALID for a plan the checker rejects). */
int gs_compute(const mp_graph_t *g, const gs_request *req, gs_result *out);

/* The stage with the smallest footprint (the first on ties; skipped
 * stages never win). */
const gs_stage *gs_best(const gs_result *r);

void gs_free(gs_result *r);

#endif
