/* strategies.h -- private to the library: the strategy registry and the
 * strategies' entry points.  The problem model (src/core/) knows no
 * strategy; the planners (src/offsets/, src/objects/, src/exact/) define
 * the entry points declared here, and src/strategies/registry.c lists them
 * and runs one by name (mp_plan_compute, mp_plan_auto). */
#ifndef MEMPLAN_STRATEGIES_H
#define MEMPLAN_STRATEGIES_H

#include "../core/internal.h"

/* ---- strategy signatures ---------------------------------------------- */

/* An offset strategy fills offset[0..n) for a valid, normalized problem.
 * It may fail only with MP_ENOMEM. */
typedef mp_status (*mp__offsets_fn)(const mp_buffer_t *b, size_t n,
                                    uint64_t *offset);

/* A shared-object strategy fills object[0..n) with object numbers
 * 0..*n_objects-1.  Object sizes (max of members) and the contiguous layout
 * are derived by the caller. */
typedef mp_status (*mp__objects_fn)(const mp_buffer_t *b, size_t n,
                                    size_t *object, size_t *n_objects);

typedef struct mp__strategy {
    mp_strategy_info_t info;
    mp__offsets_fn offsets;   /* exactly one of offsets/objects is set, */
    mp__objects_fn objects;   /* neither for "auto" */
    bool in_auto;             /* run by "auto" */
} mp__strategy;

/* The registry in its fixed order (src/strategies/registry.c). */
const mp__strategy *mp__registry(size_t *count);

/* Runs one non-meta strategy on a normalized problem into *out. */
mp_status mp__run_strategy(const mp__strategy *st, const mp_buffer_t *b, size_t n,
                           mp_plan_t *out);

/* "auto" on a normalized problem (src/offsets/auto.c). */
mp_status mp__auto(const mp_buffer_t *b, size_t n, mp_plan_t *out, mp_auto_report_t *rep);

/* The strategies, each defined in its own file. */
mp_status mp__offsets_naive(const mp_buffer_t *b, size_t n, uint64_t *offset);
mp_status mp__offsets_greedy_size(const mp_buffer_t *b, size_t n, uint64_t *offset);
mp_status mp__offsets_greedy_breadth(const mp_buffer_t *b, size_t n, uint64_t *offset);
mp_status mp__offsets_strip_bestfit(const mp_buffer_t *b, size_t n, uint64_t *offset);
mp_status mp__offsets_smartpool_bestfit(const mp_buffer_t *b, size_t n, uint64_t *offset);
mp_status mp__offsets_smartpool_firstfit(const mp_buffer_t *b, size_t n, uint64_t *offset);
mp_status mp__offsets_inorder(const mp_buffer_t *b, size_t n, uint64_t *offset);
mp_status mp__offsets_exact(const mp_buffer_t *b, size_t n, uint64_t *offset); /* src/exact/ */

mp_status mp__objects_naive(const mp_buffer_t *b, size_t n, size_t *object, size_t *k);
mp_status mp__objects_greedy_size(const mp_buffer_t *b, size_t n, size_t *object, size_t *k);
mp_status mp__objects_greedy_size_improved(const mp_buffer_t *b, size_t n, size_t *object, size_t *k);
mp_status mp__objects_greedy_breadth(const mp_buffer_t *b, size_t n, size_t *object, size_t *k);
mp_status mp__objects_inorder(const mp_buffer_t *b, size_t n, size_t *object, size_t *k);
mp_status mp__objects_mincostflow(const mp_buffer_t *b, size_t n, size_t *object, size_t *k);

/* The offset strategy (or "auto", or "exact") named name into *out, for a
 * task that shared-object strategies cannot do: MP_ENOTFOUND for an
 * unknown name, MP_EINVAL "strategy 'NAME' cannot TASK (...)" for those. */
mp_status mp__offset_strategy(const char *name, const char *task, const mp__strategy **out);

#endif
