/* memplan_runtime.h -- at run time: allocation traces and iteration
 * detection, and the replay arena that learns a program's iterations and
 * serves them from a plan (src/runtime/; the preload library builds on it).
 * Included by memplan.h; not meant to be included alone.
 *
 *     mp_arena_t *a;
 *     if (mp_arena_create(NULL, &a) != MP_OK) return fail(mp_last_error());
 *     for (int it = 0; it < steps; it++) {
 *         void *x, *y;
 *         mp_arena_alloc(a, 4096, &x);  mp_arena_alloc(a, 8192, &y);
 *         ...                                 // learned, then served from a plan
 *         mp_arena_free(a, x);  mp_arena_free(a, y);
 *         mp_arena_mark_iteration(a);         // optional: says where one ends
 *     }
 *     mp_arena_destroy(a, NULL);
 */
#ifndef MEMPLAN_RUNTIME_H
#define MEMPLAN_RUNTIME_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_runtime.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- runtime: traces and iteration detection (src/runtime/) ----------
 * A trace is the list of memory events of a running program: allocations
 * (a handle the program chooses, e.g. the address, and a size), frees, and
 * optionally reads and writes of a block, each with an optional wall time,
 * and optionally op boundaries: an op (a kernel) with its duration, owning
 * the events after it up to the next boundary (the swap planner's timed
 * iterations, mp_swap_iter_from_trace).  The logical time of an event is
 * its index in the trace (0, 1, 2, ...), op boundaries included.  A block
 * is live from its allocation event up to, not including, its free event.
 * Text format: docs/trace-format.md. */

typedef enum mp_event_kind {
    MP_EV_ALLOC = 0,
    MP_EV_FREE = 1,
    MP_EV_READ = 2,
    MP_EV_WRITE = 3,
    MP_EV_OP = 4      /* an op boundary: size = the op's duration in ns, block = its
                         rank among the ops (mp_trace_op_name), handle and end 0 */
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

/* Records an op boundary: an op of duration_ns nanoseconds begins; the
 * events recorded after it, up to the next boundary, are its.  name may be
 * NULL or "" (no name); it is copied.  MP_ENOMEM only. */
mp_status mp_trace_record_op(mp_trace_t *t, uint64_t duration_ns, const char *name);
/* The name of op k (event.block of an MP_EV_OP event), "" when unnamed,
 * NULL past the last op; valid until the next record call. */
const char *mp_trace_op_name(const mp_trace_t *t, size_t op);
/* The number of op boundaries. */
size_t mp_trace_op_count(const mp_trace_t *t);

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
    size_t events, allocs, frees, reads, writes, ops;
    uint64_t op_ns;        /* sum of the ops' durations (saturates at 2^64-1) */
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

#ifdef __cplusplus
}
#endif
#endif /* MEMPLAN_RUNTIME_H */
