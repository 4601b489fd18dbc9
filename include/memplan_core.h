/* memplan_core.h -- the problem and its plans: buffers, plans, the
 * strategies, lower bounds, the checker, and files (records, plan CSV,
 * SVG pictures).  Included by memplan.h; not meant to be included alone.
 *
 *     mp_buffer_t b[3] = {
 *         {.id = 0, .first = 0, .last = 1, .size = 1024},
 *         {.id = 1, .first = 1, .last = 2, .size = 2048},
 *         {.id = 2, .first = 2, .last = 3, .size = 1024},
 *     };
 *     mp_plan_t plan;
 *     if (mp_plan_compute(b, 3, "greedy-size", &plan) != MP_OK) return fail(mp_last_error());
 *     // plan.offset[i] is where b[i] lives; plan.footprint the arena size
 *     assert(mp_plan_check(b, 3, &plan, NULL) == MP_OK);
 *     mp_plan_free(&plan);
 */
#ifndef MEMPLAN_CORE_H
#define MEMPLAN_CORE_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_core.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MP_VERSION "0.1.0"

typedef enum mp_status {
    MP_OK = 0,
    MP_EINVAL = 1,   /* invalid argument or problem (message says which) */
    MP_ENOMEM = 2,   /* out of memory */
    MP_EOVERFLOW = 3,/* a 64-bit sum would overflow */
    MP_EPARSE = 4,   /* malformed input file (message names file:line:field) */
    MP_EIO = 5,      /* cannot open, read or write a file */
    MP_ECONFLICT = 6,/* plan checker: the plan is not valid */
    MP_ENOTFOUND = 7 /* unknown strategy name */
} mp_status;

/* One buffer of the problem: live at every logical time first..last
 * (inclusive), size bytes, placed at an offset that is a multiple of align
 * (a power of two; 0 means 1).  The planners round size up to align. */
typedef struct mp_buffer_t {
    uint64_t id;
    uint64_t first;
    uint64_t last;
    uint64_t size;
    uint64_t align;
} mp_buffer_t;

/* A plan for n buffers, in the order of the buffer array it was made for.
 * offset[i] is always filled (objects strategies lay their objects out
 * contiguously, object 0 at offset 0).  For shared-object plans object[i]
 * names buffer i's object and object_size[] holds n_objects sizes; for
 * offset plans object is NULL and n_objects is 0. */
typedef struct mp_plan_t {
    size_t n;
    uint64_t *offset;
    uint64_t footprint;   /* max over i of offset[i] + aligned size */
    size_t *object;       /* NULL for offset plans */
    uint64_t *object_size;
    size_t n_objects;
    const char *strategy; /* static name of the strategy that made it */
} mp_plan_t;

/* Thread-local text of the last error, "" if none.  Valid until the next
 * failing call on the same thread. */
const char *mp_last_error(void);

/* MP_VERSION of the library linked or loaded (a binding's check). */
const char *mp_version(void);

/* Name of a status code, e.g. "MP_EINVAL". */
const char *mp_status_name(mp_status s);

/* ---- problems --------------------------------------------------------- */

/* Checks n buffers: last >= first, size > 0, align 0 or a power of two,
 * distinct ids, last < UINT64_MAX, and that the sum of aligned sizes plus
 * the worst alignment padding (align - 1 each) fits in 64 bits, so that no
 * plan's footprint can overflow.  On failure returns MP_EINVAL or MP_EOVERFLOW and names the first
 * offending buffer by index and id. */
mp_status mp_problem_validate(const mp_buffer_t *b, size_t n);

/* Size of b rounded up to its alignment; 0 if that overflows. */
uint64_t mp_buffer_aligned_size(const mp_buffer_t *b);

/* ---- lower bounds ----------------------------------------------------- */

typedef struct mp_bounds_t {
    uint64_t naive;       /* sum of aligned sizes: every buffer its own region */
    uint64_t offsets;     /* max over time of live bytes (max operator breadth) */
    uint64_t objects;     /* sum of positional maxima (pisarchyk2020 sec. 4.1) */
    uint64_t peak_count;  /* max over time of live buffers */
} mp_bounds_t;

/* Computes the three bounds in O(n log n).  The problem must be valid. */
mp_status mp_bounds_compute(const mp_buffer_t *b, size_t n, mp_bounds_t *out);

/* ---- strategies ------------------------------------------------------- */

typedef enum mp_strategy_kind {
    MP_KIND_OFFSETS = 0,
    MP_KIND_OBJECTS = 1,
    MP_KIND_META = 2      /* "auto" */
} mp_strategy_kind;

typedef struct mp_strategy_info_t {
    const char *name;     /* e.g. "greedy-size" */
    mp_strategy_kind kind;
    const char *source;   /* the paper and section it implements */
    const char *summary;  /* one line */
    size_t all_limit;     /* "all" skips it above this many buffers (0: never) */
} mp_strategy_info_t;

/* Number of strategies and the i-th one's description (NULL past the end).
 * The order is fixed; "auto" breaks ties by it. */
size_t mp_strategy_count(void);
const mp_strategy_info_t *mp_strategy_info(size_t i);
const mp_strategy_info_t *mp_strategy_find(const char *name);

/* Plans n buffers with the named strategy and fills *out (caller frees it
 * with mp_plan_free).  The problem is validated first.  On failure *out is
 * zeroed and nothing needs freeing. */
mp_status mp_plan_compute(const mp_buffer_t *b, size_t n, const char *strategy,
                          mp_plan_t *out);

/* What "auto" did: the winner, and whether it meets the offset bound. */
typedef struct mp_auto_report_t {
    const char *winner;
    uint64_t lower_bound;
    int optimal;          /* 1 when footprint == lower_bound */
    size_t tried;         /* strategies run before stopping */
} mp_auto_report_t;

/* "auto": runs the offset strategies in fixed order and keeps the smallest
 * plan (ties: the first); when none meets the lower bound, whole-plan first
 * fits follow (greedy-by-size order, then the peak-first orders), each kept
 * only when strictly smaller.  Stops early once a plan meets the lower
 * bound, since nothing can beat it.  The plan is the same on any number of
 * threads.  report may be NULL. */
mp_status mp_plan_auto(const mp_buffer_t *b, size_t n, mp_plan_t *out,
                       mp_auto_report_t *report);

/* Releases what a plan owns and zeroes it.  NULL and zeroed plans are fine. */
void mp_plan_free(mp_plan_t *plan);

/* ---- the plan checker ------------------------------------------------- */

typedef struct mp_check_report_t {
    uint64_t footprint;   /* recomputed max(offset + aligned size) */
    size_t first_bad;     /* index of a buffer in the first conflict found */
    size_t second_bad;    /* the other buffer, or (size_t)-1 */
} mp_check_report_t;

/* Proves in O(n log n) that plan is valid for b: no two conflicting buffers
 * overlap in address, every offset is aligned, plan->footprint equals the
 * recomputed footprint, and for object plans no two conflicting buffers
 * share an object and every object is at least as large as its buffers.
 * Returns MP_OK, or MP_ECONFLICT with mp_last_error() naming the buffers.
 * report may be NULL. */
mp_status mp_plan_check(const mp_buffer_t *b, size_t n, const mp_plan_t *plan,
                        mp_check_report_t *report);

/* ---- files (src/io/) ---------------------------------------------------
 * Readers report malformed input as MP_EPARSE with "FILE:LINE: field
 * 'NAME': what is wrong".  Writers (these, mp_trace_write,
 * mp_trace_write_svg and mp_graph_save) replace a regular file through a
 * temporary file beside it, renamed over it only when complete and keeping
 * its permission bits, so a failed write leaves no partial output; a
 * symbolic link is followed and its final target replaced the same way
 * (the link stays a link); "-" (stdout), FIFOs and devices are written
 * directly; a directory is refused.  Every write error, ENOSPC included,
 * is MP_EIO "PATH: write failed: REASON" (docs/formats.md, "Outputs"). */

/* Reads a records CSV: header "id,first,last,size" (inclusive times) or
 * "id,lower,upper,size" (half-open, MiniMalloc's benchmarks); an optional
 * "align"/"alignment" column; MiniMalloc's optional "hint", "gaps" and
 * "offset" columns are accepted and ignored.  The result is validated.
 * *b is malloc'ed: release it with free(). */
mp_status mp_records_read(const char *path, mp_buffer_t **b, size_t *n);

/* Writes "id,first,last,size" (plus "align" when any align is not 0/1). */
mp_status mp_records_write(const char *path, const mp_buffer_t *b, size_t n);

/* Writes a plan as "id,offset,size" rows in buffer order; object plans add
 * an "object" column.  Sizes written are the aligned sizes. */
mp_status mp_plan_write_csv(const char *path, const mp_buffer_t *b, size_t n,
                            const mp_plan_t *plan);

/* Reads a plan CSV written for the n buffers b (rows may come in any order;
 * every id must appear exactly once; an "object" column makes an object
 * plan).  Footprint is recomputed from the offsets.  Free with mp_plan_free. */
mp_status mp_plan_read_csv(const char *path, const mp_buffer_t *b, size_t n,
                           mp_plan_t *out);

/* Draws the plan as SVG (docs/svg.md): time across, address up, one
 * rectangle per buffer with a <title> (id, size, interval), the peak step
 * marked, the footprint and the lower bound (when > 0) as lines. */
mp_status mp_plan_write_svg(const char *path, const mp_buffer_t *b, size_t n,
                            const mp_plan_t *plan, uint64_t lower_bound,
                            const char *title);

/* What mp_plan_write_svg_opts draws besides the plan; zero means none. */
typedef struct mp_svg_opts_t {
    const char *title;         /* heading, e.g. the model's name */
    uint64_t lower_bound;      /* drawn dashed when > 0 */
    const char *bound_name;    /* the bound's kind in its label; NULL:
                                  "objects" for an object plan, else "offsets" */
    const char *const *names;  /* NULL, or names[i] of buffer i: in its
                                  tooltip, and on it when it is large */
} mp_svg_opts_t;

/* mp_plan_write_svg with options (opts NULL: no title, no bound).  The
 * largest buffers get their name (or "id N") written on them where it
 * fits.  MP_EINVAL for a buffer with last < first or last == UINT64_MAX. */
mp_status mp_plan_write_svg_opts(const char *path, const mp_buffer_t *b, size_t n,
                                 const mp_plan_t *plan, const mp_svg_opts_t *opts);

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_CORE_H */
