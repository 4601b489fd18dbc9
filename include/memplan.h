/* memplan.h -- the one public header of libmemplan.
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
 * plan (ties: the first); stops early once a plan meets the lower bound,
 * since nothing can beat it.  report may be NULL. */
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

/* ---- runtime: traces and iteration detection (src/runtime/) ----------
 * A trace is the list of memory events of a running program: allocations
 * (a handle the program chooses, e.g. the address, and a size), frees, and
 * optionally reads and writes of a block, each with an optional wall time.
 * The logical time of an event is its index in the trace (0, 1, 2, ...).
 * A block is live from its allocation event up to, not including, its free
 * event.  Text format: docs/trace-format.md. */

typedef enum mp_event_kind {
    MP_EV_ALLOC = 0,
    MP_EV_FREE = 1,
    MP_EV_READ = 2,
    MP_EV_WRITE = 3
} mp_event_kind;

#define MP_TRACE_NO_NS UINT64_MAX   /* mp_event_t.ns when no wall time */
#define MP_TRACE_NEVER UINT64_MAX   /* mp_event_t.end of a block never freed */

/* One event.  block and end link the events of one block: block is the
 * index of the allocation event of the block (an allocation's own index),
 * end (allocations only) the index of its free event or MP_TRACE_NEVER. */
typedef struct mp_event_t {
    uint64_t handle;
    uint64_t size;    /* allocations: bytes (> 0); other events: the block's size */
    uint64_t ns;      /* wall time in ns, or MP_TRACE_NO_NS */
    uint64_t block;
    uint64_t end;
    mp_event_kind kind;
} mp_event_t;

typedef struct mp_trace_t mp_trace_t;   /* opaque */

/* Creates an empty trace; release it with mp_trace_free. */
mp_status mp_trace_create(mp_trace_t **out);
/* Releases a trace; NULL is fine. */
void mp_trace_free(mp_trace_t *t);

/* Records an allocation of size > 0 bytes under a handle that is not live.
 * MP_EINVAL if the handle is live or size is 0, MP_EOVERFLOW if the total
 * of allocated sizes would overflow.  ns may be MP_TRACE_NO_NS.  On failure
 * the trace is unchanged. */
mp_status mp_trace_record_alloc(mp_trace_t *t, uint64_t handle, uint64_t size, uint64_t ns);
/* Records the free of a live handle (MP_EINVAL if it is not live). */
mp_status mp_trace_record_free(mp_trace_t *t, uint64_t handle, uint64_t ns);
/* Records a read (write = 0) or write of a live handle (MP_EINVAL if not). */
mp_status mp_trace_record_access(mp_trace_t *t, uint64_t handle, int write, uint64_t ns);

/* The events so far, *n of them; valid until the next record call. */
const mp_event_t *mp_trace_events(const mp_trace_t *t, size_t *n);

/* Reads a trace file (header "# memplan-trace/1").  Malformed input is
 * MP_EPARSE with "FILE:LINE: field 'NAME': what is wrong". */
mp_status mp_trace_read(const char *path, mp_trace_t **out);
/* Writes a trace file (temporary file, then rename). */
mp_status mp_trace_write(const char *path, const mp_trace_t *t);

/* Usage records of the events [from, to) (to <= number of events): one
 * buffer per allocation in the window, id = its rank among the window's
 * allocations (0, 1, ...), first = its event index - from, last = index of
 * its free - 1 - from, or to - 1 - from if it is not freed in the window;
 * align 0.  Frees and accesses of blocks allocated before from are
 * ignored.  *b is malloc'ed (NULL when *n is 0): release it with free(). */
mp_status mp_trace_records(const mp_trace_t *t, size_t from, size_t to, mp_buffer_t **b,
                           size_t *n);

typedef struct mp_trace_stats_t {
    size_t events, allocs, frees, reads, writes;
    uint64_t bytes;        /* sum of allocated sizes */
    uint64_t peak_bytes;   /* max over logical time of live bytes */
    size_t peak_time;      /* first event index at which peak_bytes is live */
    size_t peak_blocks;    /* max over logical time of live blocks */
    size_t live_blocks;    /* blocks still live after the last event */
    uint64_t live_bytes;
    uint64_t ns_first, ns_last;  /* first and last wall times, MP_TRACE_NO_NS if none */
} mp_trace_stats_t;

/* Statistics of the whole trace in one pass, O(events). */
mp_status mp_trace_stats(const mp_trace_t *t, mp_trace_stats_t *out);

/* Parameters of iteration detection (see src/runtime/period.c). */
typedef struct mp_period_params_t {
    size_t max_edits;      /* edits tolerated per iteration (default 2); the
                              effective bound for period p is min(max_edits, p/8) */
    size_t min_iterations; /* full iterations needed (default 2; below 2 means 2) */
} mp_period_params_t;

/* Fills the defaults. */
void mp_period_params_default(mp_period_params_t *p);

/* The repeating part of an event stream.  Iteration j spans events
 * [start[j], start[j+1]) for j < iterations; the events before start[0]
 * are the warm-up prefix, those from start[iterations] on the tail (a
 * partial iteration, teardown).  Iterations may differ from the period by
 * the stray events they contain. */
typedef struct mp_period_t {
    int found;            /* 0: no period (every other field 0/NULL) */
    size_t period;        /* events of one iteration (the template) */
    size_t prefix;        /* = start[0] */
    size_t iterations;
    size_t *start;        /* iterations + 1 entries */
    size_t edits;         /* total edits over all iterations vs. the template */
    size_t clean;         /* an iteration with no edits (the last one), or the
                             one with fewest edits */
    size_t tail;          /* events from start[iterations] to the end */
    size_t *cross;        /* allocation event indices of blocks allocated in an
                             iteration and freed in a later one or never */
    size_t n_cross;
} mp_period_t;

/* Finds the period of a trace (symbols: allocation size; free and the
 * distance back to its allocation; access kind and block size), puts
 * the iteration boundary where the fewest bytes are live, and lists the
 * blocks that live across iterations.  params may be NULL (defaults).
 * Release *out with mp_period_free. */
mp_status mp_period_detect(const mp_trace_t *t, const mp_period_params_t *params,
                           mp_period_t *out);

/* The same on a bare symbol sequence (equal symbols = equal events); no
 * boundary placement, cross is empty. */
mp_status mp_period_find(const uint64_t *sym, size_t n, const mp_period_params_t *params,
                         mp_period_t *out);

/* Releases what a period owns and zeroes it. */
void mp_period_free(mp_period_t *p);

/* Draws the memory load (live bytes over logical time) as SVG, with the
 * iteration boundaries of period (may be NULL) marked. */
mp_status mp_trace_write_svg(const char *path, const mp_trace_t *t, const mp_period_t *period,
                             const char *title);

/* ---- runtime: the replay arena (src/runtime/arena.c) ----
 * An allocator for programs whose allocations repeat every iteration
 * (sekiyama2018 sec. 4, zhang2019 sec. V).  While learning it forwards every
 * request to a backing allocator and records a trace; once two consecutive
 * iterations repeat it plans one iteration, allocates one region of the
 * planned footprint and serves the i-th request of every iteration at
 * base + offset[i] in O(1) when the iteration follows the plan.  It never hands out memory that overlaps a
 * live block: whatever the plan did not foresee goes to the backing
 * allocator and is counted.  All calls are thread-safe (one mutex).
 * docs/arena.md describes the state machine and the exact rules. */

typedef struct mp_arena_t mp_arena_t;   /* opaque */

typedef struct mp_arena_options_t {
    /* Backing allocator: returns size bytes aligned to align (a power of
     * two), or NULL; and releases such a block.  NULL: posix_memalign/free.
     * Called with the arena's lock held: they must not call the arena. */
    void *(*backing_alloc)(void *user, uint64_t size, uint64_t align);
    void (*backing_free)(void *user, void *ptr);
    /* Optional: called instead of backing_free with the size that was
     * asked of backing_alloc (e.g. for munmap).  NULL: backing_free. */
    void (*backing_free_sized)(void *user, void *ptr, uint64_t size);
    void *backing_user;
    uint64_t align;            /* alignment of every block (default 64, power of two) */
    uint64_t min_block;        /* smaller requests always go to the backing
                                  allocator and are not traced (default 0) */
    const char *strategy;      /* planner (default "auto"); copied */
    size_t warmup_iterations;  /* iterations that must repeat before replay
                                  (default 2, zhang2019) */
    size_t max_edits;          /* stray events tolerated per iteration by
                                  period detection (default 2) */
    size_t max_learn_events;   /* give up learning (pass-through) after this
                                  many traced events (default 1 << 22) */
    size_t relearn_after;      /* while replaying: after this many consecutive
                                  iterations (m replayed requests each) in which
                                  more than half the requests fell back as
                                  unforeseen, overlap or too large, learn again
                                  (default 4; 0: never) */
    size_t max_patterns;       /* iteration patterns planned at most when the
                                  stream has no single period (docs/arena.md,
                                  "Several patterns"; 0: the default, 16, the
                                  most; 1: one period only) */
} mp_arena_options_t;

typedef enum mp_arena_state {
    MP_ARENA_LEARNING = 0,     /* forwarding and tracing */
    MP_ARENA_REPLAYING = 1,    /* serving from the planned region */
    MP_ARENA_PASSTHROUGH = 2   /* gave up: forwarding only */
} mp_arena_state;

typedef struct mp_arena_stats_t {
    mp_arena_state state;
    int replan_pending;        /* a re-plan waits for the next iteration boundary */
    size_t iteration_length;   /* requests per iteration (0 while learning) */
    size_t period_events;      /* trace events per iteration */
    size_t position;           /* index of the next request in the iteration */
    size_t planned_blocks;     /* requests per iteration placed in the region */
    size_t cross_blocks;       /* requests per iteration that live across iterations */
    uint64_t iterations;       /* iteration boundaries passed while replaying */
    uint64_t planned_footprint;/* bytes the current plan needs */
    uint64_t lower_bound;      /* max live bytes of the planned blocks (aligned) */
    uint64_t region_bytes;     /* size of the current region (>= footprint) */
    uint64_t learned_peak_bytes; /* peak live bytes of the trace learned from */
    uint64_t live_bytes, peak_live_bytes;  /* requested bytes of live blocks */
    size_t live_blocks;
    uint64_t backing_bytes, peak_backing_bytes; /* held from the backing
                                  allocator: regions + forwarded blocks */
    uint64_t requests, frees;
    uint64_t served_learning;  /* forwarded while learning */
    uint64_t served_arena;     /* served from the region */
    uint64_t fb_interrupted;   /* between interrupt and resume */
    uint64_t fb_unforeseen;    /* slot still busy (late free, extra request) or no region */
    uint64_t fb_overlap;       /* planned place overlaps a live block */
    uint64_t fb_too_large;     /* larger than planned (re-plan scheduled) */
    uint64_t fb_cross;         /* planned as living across iterations */
    uint64_t fb_small;         /* below min_block */
    uint64_t fb_passthrough;   /* in the pass-through state */
    uint64_t reoptimizations;  /* re-plans done */
    uint64_t detections;       /* period detections run while learning */
    size_t retired_regions;    /* old regions kept alive by live blocks */
    size_t released_blocks;    /* live blocks released by free_all / destroy */
    uint64_t released_bytes;
    uint64_t relearns;         /* returns from replaying to learning (relearn_after) */
    uint64_t fb_unmatched;     /* several patterns: forwarded in an iteration that matched
                                  no planned pattern (yet) */
    size_t patterns;           /* iteration patterns planned (1: one period) */
} mp_arena_stats_t;

/* Fills the defaults. */
void mp_arena_options_default(mp_arena_options_t *opt);

/* Creates an arena (opt NULL: defaults).  MP_EINVAL for a bad alignment,
 * MP_ENOTFOUND for an unknown strategy, MP_ENOMEM. */
mp_status mp_arena_create(const mp_arena_options_t *opt, mp_arena_t **out);

/* Releases every live block and region and the arena; final (may be NULL)
 * receives the last statistics, live blocks counted as released.  NULL is fine. */
void mp_arena_destroy(mp_arena_t *a, mp_arena_stats_t *final);

/* Allocates size > 0 bytes aligned to opt.align into *out.  MP_EINVAL for
 * size 0, MP_ENOMEM when the backing allocator fails (*out = NULL). */
mp_status mp_arena_alloc(mp_arena_t *a, uint64_t size, void **out);

/* Frees a block of this arena (NULL is a no-op).  MP_EINVAL, and nothing
 * is freed, for a pointer the arena did not hand out or already freed. */
mp_status mp_arena_free(mp_arena_t *a, void *ptr);

/* Requests from now to the matching resume are forwarded and do not count
 * as requests of the iteration (sekiyama2018 sec. 4.3).  Nests. */
void mp_arena_interrupt(mp_arena_t *a);
/* Ends one interrupt; MP_EINVAL if none is open. */
mp_status mp_arena_resume(mp_arena_t *a);

/* Optional: tells the arena that an iteration starts now (sekiyama2018's
 * lambda := 1).  While replaying, the next request is request 0 of the
 * iteration; a pending re-plan happens.  No effect while learning. */
void mp_arena_mark_iteration(mp_arena_t *a);

/* Releases every live block (the program must not use them any more);
 * keeps what was learned and planned; the next request starts an iteration. */
void mp_arena_free_all(mp_arena_t *a);

/* Current statistics. */
void mp_arena_stats(mp_arena_t *a, mp_arena_stats_t *out);

/* Name of a state, e.g. "replaying". */
const char *mp_arena_state_name(mp_arena_state s);

/* ---- graphs (src/graph/) -------------------------------------------------
 * A computation graph with an execution order, read from a memplan-graph/1
 * JSON file (docs/graph-format.md; plain or gzip-compressed), and the usage
 * records its liveness gives (docs/graph.md).  A loaded graph has passed
 * every check of the format, so the accessors need no error handling.
 * Tensor and node ids are their indices, 0..count-1. */

typedef struct mp_graph_t mp_graph_t;   /* opaque */

#define MP_GRAPH_NONE ((size_t)-1)      /* "no tensor / no node" */

typedef enum mp_tensor_kind {
    MP_TENSOR_INPUT = 0,
    MP_TENSOR_ACTIVATION = 1,
    MP_TENSOR_PARAMETER = 2,   /* persistent */
    MP_TENSOR_GRADIENT = 3,    /* persistent */
    MP_TENSOR_OUTPUT = 4
} mp_tensor_kind;

typedef struct mp_graph_tensor_t {
    const char *name;       /* "" when the file has none */
    const char *dtype;      /* e.g. "float32" */
    uint64_t dtype_size;    /* bytes per element */
    const uint64_t *shape;  /* rank dimensions (NULL when rank is 0) */
    size_t rank;
    uint64_t numel;         /* product of the dimensions (1 for a scalar) */
    uint64_t bytes;         /* memory owned: numel x dtype_size, 0 for an alias */
    mp_tensor_kind kind;
    size_t alias_of;        /* the base named in the file, or MP_GRAPH_NONE */
    size_t root;            /* the non-alias tensor owning the memory (itself
                               for an owner; chains are followed to the end) */
    size_t producer;        /* the node producing it, or MP_GRAPH_NONE */
    int trainable;          /* parameters: 1 for weights, 0 for buffers */
    size_t grad_of;         /* gradients: the parameter, else MP_GRAPH_NONE */
} mp_graph_tensor_t;

typedef struct mp_graph_node_t {
    const char *name;       /* "" when the file has none */
    const char *op;         /* e.g. "aten::convolution", "nn.Conv2d" */
    const size_t *inputs;   /* tensor ids read */
    size_t n_inputs;
    const size_t *outputs;  /* tensor ids produced (each by this node only) */
    size_t n_outputs;
    size_t step;            /* its position in the execution order */
    int inplace_capable;    /* attrs.inplace_capable (0 when absent) */
    int inplace;            /* attrs.inplace (0 when absent) */
    uint64_t flops;         /* attrs.flops (0 when absent) */
} mp_graph_node_t;

/* Reads and validates a graph file (gzip or plain JSON).  MP_EIO if it
 * cannot be read; MP_EPARSE for anything malformed, with mp_last_error()
 * naming the file and the JSON path of the bad value ("g.json:
 * tensors[12].bytes: expected an integer").  Free with mp_graph_free. */
mp_status mp_graph_load(const char *path, mp_graph_t **out);

/* The same from JSON text in memory; name stands for the file in errors. */
mp_status mp_graph_parse(const char *text, size_t len, const char *name, mp_graph_t **out);

/* Releases a graph; NULL is fine. */
void mp_graph_free(mp_graph_t *g);

/* Counts, the model's name ("" if none) and the i-th tensor / node (NULL
 * past the end).  Pointers stay valid until mp_graph_free. */
size_t mp_graph_tensor_count(const mp_graph_t *g);
size_t mp_graph_node_count(const mp_graph_t *g);
const char *mp_graph_model_name(const mp_graph_t *g);
const mp_graph_tensor_t *mp_graph_tensor(const mp_graph_t *g, size_t id);
const mp_graph_node_t *mp_graph_node(const mp_graph_t *g, size_t id);

/* The execution order (node ids; step s runs order[s]), the graph's output
 * tensors, and the loss tensor (MP_GRAPH_NONE when there is none). */
const size_t *mp_graph_order(const mp_graph_t *g, size_t *n);
const size_t *mp_graph_outputs(const mp_graph_t *g, size_t *n);
size_t mp_graph_loss(const mp_graph_t *g);

typedef struct mp_graph_stats_t {
    size_t tensors, nodes, steps;
    size_t aliases;             /* tensors that are views of another */
    uint64_t owned_bytes;       /* bytes of every tensor that owns memory */
    uint64_t persistent_bytes;  /* of those, parameters and gradients */
} mp_graph_stats_t;

/* Counts and byte totals of a graph (MP_EOVERFLOW if a total overflows). */
mp_status mp_graph_stats(const mp_graph_t *g, mp_graph_stats_t *out);

/* Lifetimes of every tensor by the rules of docs/graph-format.md: first[i]
 * and last[i] (inclusive steps) for i < mp_graph_tensor_count; an alias
 * gets its root's.  Both arrays are the caller's.  O(tensors + reads). */
void mp_graph_lifetimes(const mp_graph_t *g, uint64_t *first, uint64_t *last);

/* Usage records of the graph: one per tensor that owns bytes > 0, id = the
 * tensor id, sorted by id, align 0; parameters and gradients only when
 * include_persistent (spanning every step).  Empty when there are no
 * steps.  Exactly python/memplan/records.py.  *b is malloc'ed (NULL when
 * *n is 0): release it with free(). */
mp_status mp_graph_records(const mp_graph_t *g, int include_persistent, mp_buffer_t **b,
                           size_t *n);

/* ---- node attributes (src/graph/attrs.c) ---------------------------------
 * The hyper-parameters an op needs, read from a node's "attrs" (the
 * exporter's module "config", an fx function's args/kwargs, or the keys the
 * builder writes) and filled with PyTorch's defaults where absent. */

#define MP_MAX_RANK 8

typedef struct mp_op_attrs_t {
    int64_t kernel[2];      /* pooling kernel (conv: from the weight's shape) */
    int64_t stride[2];      /* default 1 (pooling: the kernel) */
    int64_t padding[2];     /* default 0 */
    int64_t dilation[2];    /* default 1 */
    int64_t groups;         /* default 1 */
    int64_t output_size[2]; /* adaptive pooling, default 1x1 */
    int64_t dim;            /* concat / softmax axis, flatten start_dim; default 1 */
    int64_t end_dim;        /* flatten, default -1 */
    int ceil_mode;          /* pooling, default 0 */
    int count_include_pad;  /* avg pooling, default 1 */
    double eps;             /* normalisation, default 1e-5 */
    double momentum;        /* batch norm, default 0.1 */
    double alpha;           /* add/sub: out = a + alpha * b, default 1 */
    size_t forward_node;    /* backward ops: the forward node they differentiate,
                               else MP_GRAPH_NONE */
    uint64_t grad_mask;     /* backward ops: bit i set when input i of the forward
                               node gets a gradient; outputs follow the bit order */
} mp_op_attrs_t;

/* Fills *a with the defaults above (forward_node MP_GRAPH_NONE, grad_mask 0). */
void mp_op_attrs_init(mp_op_attrs_t *a);

/* The attributes of node id of g: defaults, then the file's values
 * (attrs.config, then attrs keys, then the positional args/kwargs of the fx
 * functions that take them: F.max_pool2d, torch.flatten, torch.cat, ...).
 * Never fails; unknown keys are ignored. */
void mp_graph_node_attrs(const mp_graph_t *g, size_t id, mp_op_attrs_t *a);

/* ---- building and saving graphs (src/graph/builder.c, save.c) ------------
 * A builder collects tensors and nodes and turns them into a graph that has
 * passed every check mp_graph_load makes.  The backward pass, the tests and
 * the CLI build graphs this way.
 *
 *     mp_graph_builder_t *b;  size_t x, w, y, node;  mp_graph_t *g;
 *     uint64_t xs[2] = {4, 8}, ws[2] = {3, 8};
 *     mp_graph_builder_new("tiny", &b);
 *     mp_graph_builder_tensor(b, "x", NULL, xs, 2, MP_TENSOR_INPUT, MP_GRAPH_NONE, &x);
 *     mp_graph_builder_tensor(b, "w", NULL, ws, 2, MP_TENSOR_PARAMETER, MP_GRAPH_NONE, &w);
 *     mp_graph_builder_op(b, "fc", "linear", (size_t[]){x, w}, 2, NULL, 1, &y, &node);
 *     mp_graph_builder_finish(b, NULL, &y, 1, MP_GRAPH_NONE, &g);
 *     mp_graph_builder_free(b);
 */

typedef struct mp_graph_builder_t mp_graph_builder_t;   /* opaque */

/* A new, empty builder; model_name may be NULL. */
mp_status mp_graph_builder_new(const char *model_name, mp_graph_builder_t **out);

/* A builder holding a copy of g's tensors, nodes (with their attrs) and
 * model metadata, to extend it.  The order, outputs and loss are not
 * copied: pass them to finish. */
mp_status mp_graph_builder_from(const mp_graph_t *g, mp_graph_builder_t **out);

/* Releases a builder; NULL is fine. */
void mp_graph_builder_free(mp_graph_builder_t *b);

/* Adds a tensor and returns its id in *id.  dtype NULL means "float32";
 * shape has rank dimensions.  alias_of is MP_GRAPH_NONE or an existing
 * tensor whose memory this one views (it then owns 0 bytes).  Parameters
 * are trainable unless mp_graph_builder_set_trainable says otherwise.
 * MP_EINVAL for an unknown dtype, rank > MP_MAX_RANK or a bad alias. */
mp_status mp_graph_builder_tensor(mp_graph_builder_t *b, const char *name, const char *dtype,
                                  const uint64_t *shape, size_t rank, mp_tensor_kind kind,
                                  size_t alias_of, size_t *id);
mp_status mp_graph_builder_set_trainable(mp_graph_builder_t *b, size_t tensor, int trainable);
mp_status mp_graph_builder_set_grad_of(mp_graph_builder_t *b, size_t tensor, size_t param);
mp_status mp_graph_builder_set_kind(mp_graph_builder_t *b, size_t tensor, mp_tensor_kind kind);

/* Adds a node reading in[0..n_in) and producing out[0..n_out) (existing
 * tensors).  attrs NULL means the defaults; the builder stores every field
 * so that mp_graph_node_attrs gives them back.  *id may be NULL. */
mp_status mp_graph_builder_node(mp_graph_builder_t *b, const char *name, const char *op,
                                const size_t *in, size_t n_in, const size_t *out, size_t n_out,
                                const mp_op_attrs_t *attrs, size_t *id);

/* Adds a node and n_out new activation tensors whose shapes and dtypes the
 * op registry infers from the inputs (mp_op_infer); their ids go to out[],
 * the node's to *node (may be NULL).  A view op's output is an alias of
 * input 0's root.  MP_EINVAL with the op's complaint if the shapes do not fit. */
mp_status mp_graph_builder_op(mp_graph_builder_t *b, const char *name, const char *op,
                              const size_t *in, size_t n_in, const mp_op_attrs_t *attrs,
                              size_t n_out, size_t *out, size_t *node);

/* Number of tensors and nodes so far, and the shape of a tensor. */
size_t mp_graph_builder_tensor_count(const mp_graph_builder_t *b);
size_t mp_graph_builder_node_count(const mp_graph_builder_t *b);
mp_status mp_graph_builder_shape(const mp_graph_builder_t *b, size_t tensor, uint64_t *shape,
                                 size_t *rank);

/* Makes the graph: order (NULL: the nodes in creation order), the output
 * tensors and the loss (MP_GRAPH_NONE for none).  The result passed every
 * check of mp_graph_load (MP_EPARSE otherwise, naming the rule).  The
 * builder stays usable and must still be freed. */
mp_status mp_graph_builder_finish(mp_graph_builder_t *b, const size_t *order,
                                  const size_t *outputs, size_t n_outputs, size_t loss,
                                  mp_graph_t **out);

/* Writes g as memplan-graph/1 (gzip when path ends in ".gz"), through a
 * temporary file renamed at the end: on failure nothing is left behind.
 * mp_graph_load of the file gives back the same graph. */
mp_status mp_graph_save(const mp_graph_t *g, const char *path);

/* A copy of g that runs in another order (a permutation of the node ids
 * that runs every producer before its readers; MP_EINVAL otherwise). */
mp_status mp_graph_with_order(const mp_graph_t *g, const size_t *order, mp_graph_t **out);

/* ---- the op registry (src/graph/ops.c) -----------------------------------
 * What the graph layer knows of each op, declared minimally (the MXNet
 * note): can its output overwrite its input, which forward values does its
 * gradient read, what shapes does it produce.  Canonical names are short
 * ("conv2d", "relu", "add", "linear", ...; docs/graph.md lists them); the
 * exporter's spellings (nn.Conv2d, F.relu, operator.add, aten::relu, ...)
 * map onto them. */

enum { MP_GRAD_NEEDS_INPUTS = 1, MP_GRAD_NEEDS_OUTPUTS = 2 };

typedef struct mp_op_info_t {
    const char *name;       /* canonical name */
    int known;              /* 0: the conservative entry for unknown ops */
    int inplace;            /* output 0 may be written over input 0 */
    int view;               /* output 0 is a view of input 0 (owns no bytes) */
    int differentiable;     /* has a gradient op */
    unsigned grad_needs;    /* forward values the gradient reads (MP_GRAD_NEEDS_*) */
    const char *backward;   /* canonical name of the gradient op, NULL if none */
    int executable;         /* the reference executor has a kernel for it */
} mp_op_info_t;

/* The entry for an op name, canonical or exporter spelling.  Never NULL:
 * an unknown op gets a conservative entry (known 0, not in place, not a
 * view, differentiable, gradient reads inputs and outputs, backward
 * "generic_backward", not executable). */
const mp_op_info_t *mp_op_info(const char *op);

/* Number of canonical ops and the i-th (NULL past the end). */
size_t mp_op_count(void);
const mp_op_info_t *mp_op_at(size_t i);

/* Shapes and dtypes of the outputs of op applied to inputs of the given
 * shapes/dtypes: fills out_shape[k][0..out_rank[k]) and out_dtype[k] for
 * k < *n_out <= max_out.  MP_ENOTFOUND for an op the registry cannot infer,
 * MP_EINVAL (message says why) when the inputs do not fit. */
mp_status mp_op_infer(const char *op, const mp_op_attrs_t *a, const uint64_t *const *in_shape,
                      const size_t *in_rank, const char *const *in_dtype, size_t n_in,
                      uint64_t (*out_shape)[MP_MAX_RANK], size_t *out_rank,
                      const char **out_dtype, size_t max_out, size_t *n_out);

/* Checks every node whose op the registry can infer against the shapes in
 * the graph: MP_EINVAL naming the node, the op and both shapes on the first
 * mismatch.  *n_unchecked (may be NULL) counts nodes it could not infer. */
mp_status mp_graph_check_shapes(const mp_graph_t *g, size_t *n_unchecked);

/* ---- the backward graph (src/graph/backward.c) ---------------------------
 * From a forward graph and a loss, the training graph: the forward nodes,
 * then one gradient node per forward node the loss depends on, in reverse
 * order; gradient aggregation ("sum_n") where a value feeds several ops;
 * no gradient for values nothing trainable flows into (the note's Backward
 * Prune); parameter gradients (kind gradient, grad_of) appended to the
 * outputs.  A gradient node reads the output gradients, then exactly the
 * forward values its op declares (grad_needs), and records forward_node and
 * grad_mask in its attrs. */

typedef struct mp_backward_opts_t {
    int add_loss;           /* when g has no loss: append softmax_xent of the
                               single output (logits [N, K]) against a new
                               int64 input "target" [N] */
    int accumulate;         /* add each gradient contribution as it arrives
                               instead of one sum_n after the last; a
                               parameter's sum lives in its gradient from the
                               first contribution on (an identity copies it
                               there, each later add writes into it through an
                               alias): a weight shared by T steps of an RNN
                               keeps no contribution live (MXNet's in-place
                               accumulation, chen2016 sec. 5.3) */
} mp_backward_opts_t;

typedef struct mp_backward_stats_t {
    size_t forward_nodes, backward_nodes;
    size_t aggregations;    /* sum_n nodes (accumulate: add nodes) */
    size_t pruned;          /* forward nodes given no gradient node */
    size_t param_grads;
} mp_backward_stats_t;

/* Builds the training graph of fwd into *out.  MP_EINVAL when fwd has no
 * loss and opts->add_loss is 0 (or it cannot be added), or when fwd already
 * has gradients.  opts and stats may be NULL. */
mp_status mp_graph_backward(const mp_graph_t *fwd, const mp_backward_opts_t *opts,
                            mp_graph_t **out, mp_backward_stats_t *stats);

/* ---- in-place, sharing and placement (src/graph/share.c, parallel.c) -----
 * The note's counter algorithm (chen2016 Fig. 2): walk the order keeping a
 * counter of pending readers per storage; an op writes its output over its
 * input when the op allows it and the counter is 1; a storage whose counter
 * reaches 0 goes to a free box from which later outputs take the best size
 * match.  Each tensor gets a storage; storages are placed in one arena. */

typedef enum mp_parallel_mode {
    MP_PARALLEL_ANY = 0,      /* sequential execution only */
    MP_PARALLEL_ANCESTOR = 1, /* share only along the ancestor relation (exact) */
    MP_PARALLEL_COLOUR = 2    /* the note's path-colouring heuristic */
} mp_parallel_mode;

typedef struct mp_share_opts_t {
    int inplace;              /* write outputs over inputs when safe */
    int share;                /* reuse freed storages (the free box) */
    mp_parallel_mode parallel;
    int include_persistent;   /* parameters and gradients in the arena too */
} mp_share_opts_t;

typedef struct mp_graph_plan_t {
    size_t n_tensors;
    size_t *storage;          /* per tensor: its storage, or MP_GRAPH_NONE when
                                 not planned (persistent unless included, 0
                                 bytes); an alias has its root's */
    size_t *inplace_of;       /* per tensor: the input it overwrote, or MP_GRAPH_NONE */
    size_t n_storages;
    uint64_t *storage_size;   /* bytes of each storage */
    uint64_t *offset;         /* each storage's offset in the arena */
    uint64_t footprint;       /* arena bytes */
    size_t n_inplace;         /* ops run in place */
    size_t n_reused;          /* tensors placed in a storage another freed */
    const char *placement;    /* "sequential" or the strategy that placed it */
} mp_graph_plan_t;

/* Assigns storages to g's tensors by opts and lays them out end to end
 * (footprint = sum of storage sizes).  With everything off each owning
 * tensor is its own storage.  On failure *out is zeroed. */
mp_status mp_graph_share(const mp_graph_t *g, const mp_share_opts_t *opts, mp_graph_plan_t *out);

/* Re-places p's storages with a core strategy (offsets or objects, or
 * "auto"): each storage becomes one usage record over the half-steps its
 * tensors live (mp_graph_plan_records).  The plan is checked.  A planner
 * knows only lifetimes: the placed plan is safe for sequential execution,
 * not necessarily for parallel execution even if p was (a check in a
 * parallel mode says so). */
mp_status mp_graph_plan_place(const mp_graph_t *g, mp_graph_plan_t *p, const char *strategy);

/* The plan as an ordinary offset problem: one record per planned owning
 * tensor (id = tensor id) over half-steps -- produced at 2*first, or
 * 2*first + 1 when written in place over its input, live to 2*last -- and
 * an offset plan placing it at its storage's offset.  mp_plan_check of the
 * pair proves no two tensors alive together overlap.  Free *b with free()
 * and *plan with mp_plan_free. */
mp_status mp_graph_plan_records(const mp_graph_t *g, const mp_graph_plan_t *p, mp_buffer_t **b,
                                size_t *n, mp_plan_t *plan);

/* Proves p valid for g (records + mp_plan_check, storages large enough,
 * in-place writes only over an input read last by that op) and, when
 * parallel is not MP_PARALLEL_ANY, that no two tensors sharing memory are
 * touched by ops that could run in parallel.  MP_ECONFLICT naming them. */
mp_status mp_graph_plan_check(const mp_graph_t *g, const mp_graph_plan_t *p,
                              mp_parallel_mode parallel);

/* Releases what p owns and zeroes it; NULL and zeroed plans are fine. */
void mp_graph_plan_free(mp_graph_plan_t *p);

/* ---- memory-aware order (src/graph/order.c) ------------------------------ */

typedef struct mp_order_opts_t {
    size_t lookahead;         /* greedy lookahead depth, default (0) 2 */
    size_t max_passes;        /* local-improvement passes, default (0) 4 */
    int include_persistent;   /* count parameters and gradients */
} mp_order_opts_t;

typedef struct mp_order_report_t {
    uint64_t given_peak;      /* peak live bytes of the graph's own order */
    uint64_t searched_peak;   /* of the order returned (never above given) */
    size_t passes;            /* local-improvement passes run */
} mp_order_report_t;

/* Peak live bytes of g run in order (NULL: g's own), by the lifetimes of
 * mp_graph_records: the offsets lower bound of that order. */
mp_status mp_graph_peak(const mp_graph_t *g, const size_t *order, int include_persistent,
                        uint64_t *peak);

/* Searches a topological order of g with a lower peak: greedy by bytes
 * allocated minus bytes freed with lookahead (depth capped at 6), a
 * memory-first DFS, then single-node moves that keep dependencies; returns
 * the best of those and the given order (the given one on ties) in
 * order[0..node_count).  opts and report may be NULL. */
mp_status mp_graph_order_search(const mp_graph_t *g, const mp_order_opts_t *opts, size_t *order,
                                mp_order_report_t *report);

/* ---- the reference executor (src/exec/) ----------------------------------
 * float32 CPU kernels that run a graph with every planned tensor placed in
 * one arena by a graph plan, or each in its own allocation (the naive run).
 * It proves plans: the same seed must give bit-identical outputs both ways. */

typedef struct mp_exec_opts_t {
    uint64_t seed;               /* inputs and parameters get pseudo-random
                                    values from the seed and the tensor id */
    const mp_graph_plan_t *plan; /* NULL: the naive run */
    int poison;                  /* fill a tensor's memory with NaNs just
                                    before its producer runs */
    const float *const *init;    /* optional per-tensor values for inputs and
                                    parameters (NULL or NULL entries: seeded) */
} mp_exec_opts_t;

typedef struct mp_exec_result_t {
    size_t n_tensors;
    void **data;                 /* per tensor: a copy of every graph output
                                    (loss, gradients, logits), else NULL */
    uint64_t *bytes;             /* their sizes */
    uint64_t arena_bytes;        /* the arena the plan used (0 when naive) */
    double seconds;              /* wall time of the run */
} mp_exec_result_t;

/* MP_OK when every node of g has a kernel, else MP_ENOTFOUND naming the
 * first node and op that has none. */
mp_status mp_exec_supported(const mp_graph_t *g);

/* Runs g once and copies its outputs into *out (free with
 * mp_exec_result_free).  MP_ENOTFOUND for an op without a kernel,
 * MP_EINVAL for a plan not made for g.  On failure *out is zeroed. */
mp_status mp_exec_run(const mp_graph_t *g, const mp_exec_opts_t *opts, mp_exec_result_t *out);

void mp_exec_result_free(mp_exec_result_t *r);

#ifdef __cplusplus
}
#endif

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
