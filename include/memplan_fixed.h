/* memplan_fixed.h -- pre-placed buffers: offsets fixed in advance
 * (src/offsets/fixed.c, src/io/records.c).  Included by memplan.h; not
 * meant to be included alone.
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
 * such column.  Fixed offsets are validated (mp_fixed_validate, with the
 * file's line numbers).  Free both with free(). */
mp_status mp_records_read_fixed(const char *path, mp_buffer_t **b, size_t *n, uint64_t **fixed);

#ifdef __cplusplus
}
#endif

#endif /* MEMPLAN_FIXED_H */
