/* memplan_fixed.h -- pre-placed buffers: offsets fixed in advance
 * (src/offsets/fixed.c, src/io/records.c), and memory pools of limited size
 * (src/offsets/pools.c).  Included by memplan.h; not meant to be included
 * alone.
 *
 * Compilers such as TVM's USMP and TFLite Micro place some buffers
 * themselves (a model input in a given region, a persistent tensor) and ask
 * for the rest around them.  A problem then comes with fixed[0..n):
 * fixed[i] is buffer i's offset, or MP_NOT_FIXED when the planner chooses.
 *
 *     mp_buffer_t *b;  uint64_t *fixed;  size_t n;
 *     if (mp_records_read_fixed("model.csv", &b, &n, &fixed) != MP_OK) die(mp_last_error());
 *     mp_plan_t plan;
 *     if (mp_plan_compute_fixed(b, n, fixed, "auto", &plan) != MP_OK) die(mp_last_error());
 *     assert(mp_plan_check_fixed(b, n, fixed, &plan, NULL) == MP_OK);
 *     mp_plan_free(&plan), free(b), free(fixed);
 */
#ifndef MEMPLAN_FIXED_H
#define MEMPLAN_FIXED_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_fixed.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MP_NOT_FIXED UINT64_MAX   /* fixed[i]: the planner places buffer i */

/* Checks fixed offsets against a valid problem: each is a multiple of its
 * buffer's alignment, no two fixed buffers with overlapping lifetimes
 * overlap in address, and every fixed end plus the sum of all aligned sizes
 * fits in 64 bits.  MP_EINVAL naming the buffer (both, for an overlap) by
 * index and id.  fixed NULL: nothing fixed, MP_OK. */
mp_status mp_fixed_validate(const mp_buffer_t *b, size_t n, const uint64_t *fixed);

/* Plans n buffers with the named offset strategy (or "auto") around the
 * fixed ones: the strategy places the free buffers alone, then every free
 * buffer that meets a fixed one (or one moved before it) moves to the
 * lowest offset clear of them (first fit, in the order of the strategy's
 * offsets).  "auto" keeps the best of its candidates so treated and of a
 * first fit of the free buffers by decreasing size around the fixed ones.
 * "exact" is mp_exact_solve with the default options
 * (mp_exact_opts_default) and opts.fixed: its search places the free
 * buffers with the fixed ones as obstacles, from auto's plan around them,
 * so it is never above "auto" here; its report is not returned (call
 * mp_exact_solve for the proof).  Shared-object strategies cannot take
 * fixed buffers: MP_EINVAL naming the strategy.  fixed NULL (or nothing
 * fixed): mp_plan_compute. */
mp_status mp_plan_compute_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                                const char *strategy, mp_plan_t *out);

/* mp_plan_check, and every fixed buffer at its fixed offset: MP_ECONFLICT
 * naming the buffer otherwise. */
mp_status mp_plan_check_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                              const mp_plan_t *plan, mp_check_report_t *report);

/* mp_records_read, and the records' optional "offset" column (the name
 * MiniMalloc's CSV gives it) as fixed offsets: *fixed gets n entries
 * (MP_NOT_FIXED where the field is empty), or NULL when the file has no
 * such column or no row fills it.  Fixed offsets are validated (mp_fixed_validate, with the
 * file's line numbers).  Free both with free(). */
mp_status mp_records_read_fixed(const char *path, mp_buffer_t **b, size_t *n, uint64_t **fixed);

/* ---- pools ----------------------------------------------------------------
 * Several memories of limited size, e.g. 256 KiB of fast on-chip SRAM and
 * DRAM: the first pool gets as many buffers as it can hold, the rest go on
 * to the next (src/offsets/pools.c).  A fixed offset is an offset in a
 * pool: fixed buffers say which (the records' pool column; none: the
 * first), are placed first in their pool and the rest fill around them. */

typedef struct mp_pool_t {
    const char *name;     /* for messages and the plan CSV */
    uint64_t capacity;    /* bytes; 0: unlimited */
} mp_pool_t;

/* Where each buffer lives: pool[i] (an index into the pools) and offset[i]
 * within that pool; footprint[j] is pool j's (0 when empty). */
typedef struct mp_pool_plan_t {
    size_t n, n_pools;
    size_t *pool;
    uint64_t *offset;
    uint64_t *footprint;
    const char *strategy; /* static name of the strategy that placed them */
    char **name;          /* the pools' names when read from a file without
                             given pools (mp_pool_plan_read_csv), else NULL */
} mp_pool_plan_t;

/* mp_records_read_fixed for pools: also the records' optional "pool"
 * column, the name of one of the k pools, given only with a fixed offset.
 * *pool gets n entries (the pool of each fixed buffer; an empty field: pool
 * 0; 0 for free buffers) when *fixed does, else NULL.  The fixed offsets are
 * checked pool by pool (mp_plan_pools_opts's checks, with the file's line
 * numbers): aligned, clear of the other fixed buffers of their pool, within
 * its capacity.  MP_EPARSE or MP_EINVAL naming file, line and field; on
 * failure all three are NULL.  Free each with free().  mp_records_read_fixed
 * refuses a file whose pool column names a pool, and mp_records_read
 * ignores the column. */
mp_status mp_records_read_pools(const char *path, const mp_pool_t *pools, size_t k,
                                mp_buffer_t **b, size_t *n, uint64_t **fixed, size_t **pool);

/* Fills the k pools in order with the named offset strategy (or "auto"):
 * per pool, the strategy plans every buffer still unplaced; the pool keeps
 * the buffers that end within its capacity there, then, largest first, any
 * other that still fits by first fit; the rest go on.  "exact" plans
 * each pool with mp_exact_solve's defaults (its limits apply per pool).
 * MP_EINVAL when buffers are left after the last pool (make it unlimited)
 * or for a shared-object strategy.  Free *out with mp_pool_plan_free. */
mp_status mp_plan_pools(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                        const char *strategy, mp_pool_plan_t *out);

/* What mp_plan_pools_opts takes besides the problem; all zero: "auto",
 * nothing fixed, no time limit. */
typedef struct mp_pool_opts_t {
    const char *strategy;     /* NULL: "auto" */
    const uint64_t *fixed;    /* NULL, or n entries: buffer i's offset in its
                                 pool, MP_NOT_FIXED when the planner places it */
    const size_t *fixed_pool; /* NULL: every fixed buffer in pool 0; else n
                                 entries, the pool of each fixed buffer (read
                                 only where fixed) */
    double time_limit;        /* "auto" only: seconds for the whole call;
                                 <= 0: none (mp_plan_pools).  Fixed buffers
                                 stay in place (mp_auto_opts_t.fixed) */
    unsigned threads;         /* as mp_auto_opts_t.threads */
    /* With a time limit, called (NULL: never) as mp_auto_opts_t.progress
     * is, for pool `pool`; p->offset and p->n are those of the buffers that
     * pool's search plans: the pool's fixed buffers, then those not yet
     * placed, each group in buffer order. */
    void (*progress)(void *ctx, size_t pool, const mp_anytime_progress_t *p);
    void *ctx;
} mp_pool_opts_t;

/* mp_plan_pools with options.  Fixed buffers go to their pool at their
 * offset first (MP_EINVAL naming the buffer when misaligned, beyond its
 * pool's capacity -- the pool and capacity named -- or overlapping another
 * fixed buffer of that pool live at the same time -- both named); then each
 * pool is filled as mp_plan_pools does, its strategy planning around the
 * pool's fixed buffers (mp_plan_compute_fixed).  With a time limit each
 * pool's plan is improved by anytime "auto" (mp_plan_auto_opts) for its
 * share of the time left (the time left divided among the pools left; all
 * of it when the pool takes every buffer left, as the last does), and the
 * pool keeps the better of the plain and the improved filling: more bytes,
 * then a smaller footprint; so, pool by pool, given the buffers that reach
 * it, never worse than without the limit.  With the strategy "exact" (no
 * time limit) each pool's search is mp_exact_solve's, the pool's fixed
 * buffers its obstacles.  report (NULL, or k entries) gets per pool:
 * footprint, lower_bound proven for the buffers it holds (the anytime or
 * exact search's when the pool holds all it planned, else the larger of
 * their max-load bound and their largest fixed end), load_bound, status
 * (MP_EXACT_OPTIMAL or MP_EXACT_GAP), start (the footprint without the
 * time limit; with "exact", the pool's own footprint), start_strategy,
 * nodes, seconds, hit_limit.  On failure *out is empty. */
mp_status mp_plan_pools_opts(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                             const mp_pool_opts_t *opts, mp_pool_plan_t *out,
                             mp_exact_report_t *report);

/* Proves a pool plan valid: every pool index below k, within each pool no
 * two conflicting buffers overlap and every offset is aligned, each pool's
 * footprint within its capacity and equal to the one recorded.  MP_OK, or
 * MP_ECONFLICT naming the pool and buffer. */
mp_status mp_pool_plan_check(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                             const mp_pool_plan_t *plan);

/* mp_pool_plan_check, and every fixed buffer (fixed[i] != MP_NOT_FIXED)
 * in its pool (fixed_pool[i]; fixed_pool NULL: pool 0) at its fixed offset:
 * MP_ECONFLICT naming the buffer otherwise.  fixed NULL: mp_pool_plan_check. */
mp_status mp_pool_plan_check_fixed(const mp_buffer_t *b, size_t n, const mp_pool_t *pools,
                                   size_t k, const uint64_t *fixed, const size_t *fixed_pool,
                                   const mp_pool_plan_t *plan);

/* Releases what a pool plan owns and zeroes it; NULL is fine. */
void mp_pool_plan_free(mp_pool_plan_t *plan);

/* Writes "id,offset,size,pool" rows in buffer order (pool: its name),
 * replacing path as the other writers do. */
mp_status mp_pool_plan_write_csv(const char *path, const mp_buffer_t *b, size_t n,
                                 const mp_pool_t *pools, const mp_pool_plan_t *plan);

/* Reads a pool plan CSV ("id,offset[,size],pool", as mp_pool_plan_write_csv
 * writes it; rows in any order, every buffer once).  With pools (k > 0) each
 * row's pool must name one of them and out->n_pools = k; with pools NULL
 * the pools are the names met in the file in order of first appearance (at
 * most 16), kept in out->name.  Footprints are computed from the offsets.
 * MP_EPARSE naming file, line and field; on failure *out is empty.  Free
 * *out with mp_pool_plan_free. */
mp_status mp_pool_plan_read_csv(const char *path, const mp_buffer_t *b, size_t n,
                                const mp_pool_t *pools, size_t k, mp_pool_plan_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MEMPLAN_FIXED_H */
