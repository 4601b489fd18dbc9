/* memplan.h -- the public header of libmemplan: include this one.
 *
 * memplan plans where every tensor of a deep network lives, so that buffers
 * whose lifetimes do not overlap share memory.  Everything reduces to one
 * problem: a list of buffers {id, first, last, size, align} with inclusive
 * logical times.  Two buffers conflict when [first,last] intervals intersect.
 * A plan gives each buffer an offset in one arena ("offset calculation") or
 * a shared object ("shared objects", e.g. GPU textures); it is valid when no
 * two conflicting buffers overlap in address (or share an object).
 *
 * Usage:
 *
 *     mp_buffer_t b[3] = {
 *         {.id = 0, .first = 0, .last = 1, .size = 1024},
 *         {.id = 1, .first = 1, .last = 2, .size = 2048},
 *         {.id = 2, .first = 2, .last = 3, .size = 1024},
 *     };
 *     mp_plan_t plan;
 *     if (mp_plan_compute(b, 3, "greedy-size", &plan) != MP_OK) {
 *         fprintf(stderr, "memplan: %s\n", mp_last_error());
 *         return 1;
 *     }
 *     // plan.offset[i] is where b[i] lives; plan.footprint the arena size.
 *     assert(mp_plan_check(b, 3, &plan, NULL) == MP_OK);
 *     mp_plan_free(&plan);
 *
 * Conventions: functions that can fail return mp_status (MP_OK = 0) and set a
 * thread-local message read by mp_last_error(); the library never exits or
 * prints.  The caller owns what it passes in; what the library fills in is
 * released by the matching mp_*_free.  Sizes are 64-bit.  The same input
 * gives the same plan on every machine (ties are broken by input order).
 */
#ifndef MEMPLAN_H
#define MEMPLAN_H

#include <stddef.h>
#include <stdint.h>

/* The headers below are parts of this one (each refuses to be included
 * alone), by subsystem:
 *   memplan_core.h     the problem, plans, strategies, bounds, checker, files
 *   memplan_runtime.h  traces, iteration detection, the replay arena
 *   memplan_graph.h    graphs, liveness, backward, sharing, orders
 *   memplan_exec.h     the reference executor
 *   memplan_remat.h    recomputation
 *   memplan_exact.h    the exact planner
 *   memplan_fixed.h    pre-placed buffers and pools
 *   memplan_swap.h     swapping, the joint plan, the executed swap step */

/* the problem, plans, strategies, bounds, the checker, files */
#include "memplan_core.h"

/* allocation traces, iteration detection, the replay arena (src/runtime/) */
#include "memplan_runtime.h"

/* computation graphs (src/graph/) */
#include "memplan_graph.h"

/* the reference executor (src/exec/) */
#include "memplan_exec.h"

/* recomputation: chen2016's mirror transform and policies, Revolve, the
 * chain dynamic program, the budget contract (src/remat/) */
#include "memplan_remat.h"

/* the exact offset planner: optimal plans with a proof, or a proven gap
 * (src/exact/) */
#include "memplan_exact.h"

/* pre-placed buffers: offsets fixed in advance (src/offsets/fixed.c) */
#include "memplan_fixed.h"

/* swapping: timed iterations, the transfer model, the simulator, AutoSwap's
 * scores and selection (src/swap/) */
#include "memplan_swap.h"

#endif /* MEMPLAN_H */

