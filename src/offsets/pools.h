/* pools.h -- what pools and fixed offsets share across files: the checks of
 * fixed offsets in pools (fixed.c, used by the records reader), planning
 * around fixed buffers (fixed.c, used by pools.c) and anytime "auto" from a
 * given plan (src/exact/anytime.c, used by pools.c).  Private. */
#ifndef MEMPLAN_POOLS_H
#define MEMPLAN_POOLS_H

#include "../core/internal.h"
#include "../strategies/strategies.h"

/* mp__fixed_check for fixed buffers in pools: buffer i's fixed offset is
 * in pool pool[i] (< k; NULL: pool 0).  Alignment and 64-bit room as
 * mp__fixed_check; fixed buffers collide only within one pool (the message
 * names the pool); a fixed buffer must end within its pool's capacity (0:
 * unlimited).  With path and line, errors name the file's line and field
 * 'offset'; MP_EINVAL. */
mp_status mp__fixed_check_pools(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                                const size_t *pool, const mp_pool_t *pools, size_t k,
                                const char *path, const size_t *line);

/* Plans the normalized problem b (fixed offsets valid) with st around the
 * fixed buffers, as mp_plan_compute_fixed does (st: a registry entry, auto's
 * included).  *out owns its offsets. */
mp_status mp__plan_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                         const mp__strategy *st, mp_plan_t *out);

/* Anytime "auto" from the plan off[] (made by *source) of the normalized
 * problem b: improves off[] in place until t0 + o->time_limit (mp__xnow's
 * clock; o->time_limit <= 0: not at all) or a proof of optimality, and
 * fills *rep as mp_plan_auto_opts does, start being off[]'s footprint on
 * entry.  The progress callback sees the plan held first.  *source becomes
 * what made the final plan.  With o->fixed, off[] must hold every fixed
 * buffer at its offset, and they stay there. */
mp_status mp__anytime_from(const mp_buffer_t *b, size_t n, const mp_auto_opts_t *o, double t0,
                           uint64_t *off, const char **source, mp_exact_report_t *rep);

#endif /* MEMPLAN_POOLS_H */
