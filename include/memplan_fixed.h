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
 * Shared-object strategies and "exact" cannot take fixed buffers: MP_EINVAL
 * naming the strategy.  fixed NULL (or nothing fixed): mp_plan_compute. */
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
 * to the next (src/offsets/pools.c). */

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

/* Fills the k pools in order with the named offset strategy (or "auto"):
 * per pool, the strategy plans every buffer still unplaced; the pool keeps
 * the buffers that end within its capacity there, then, largest first, any
 * other that still fits by first fit; the rest go on.  MP_EINVAL when
 * buffers are left after the last pool (make it unlimited) or for a
 * shared-object strategy or "exact".  Free *out with mp_pool_plan_free. */
mp_status mp_plan_pools(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                        const char *strategy, mp_pool_plan_t *out);

/* Proves a pool plan valid: every pool index below k, within each pool no
 * two conflicting buffers overlap and every offset is aligned, each pool's
 * footprint within its capacity and equal to the one recorded.  MP_OK, or
 * MP_ECONFLICT naming the pool and buffer. */
mp_status mp_pool_plan_check(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
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
