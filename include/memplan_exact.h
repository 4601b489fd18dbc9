/* memplan_exact.h -- the exact offset planner: smallest footprints with a
 * proof (src/exact/).  Included by memplan.h; not meant to be included alone.
 *
 * Offset planning (Dynamic Storage Allocation) is NP-hard, so the heuristic
 * strategies can only say "optimal" when a plan meets the max-live-bytes
 * bound.  The exact search decides "do these buffers fit in C bytes?" by a
 * branch and bound over canonical plans (every buffer on the top of a buffer
 * below it or at 0, placed in non-decreasing offset order, as in MiniMalloc,
 * Moffitt, ASPLOS 2024) with per-section inference, dominance rules and a
 * table of failed states, and minimises the footprint from the best
 * heuristic plan down.  Independent parts of the problem (no buffer live
 * across a cut in time) are solved separately.  It stops at a node or time
 * limit and then reports the gap it has proved.  docs/exact.md describes the
 * search and its results.
 *
 * Usage:
 *
 *     mp_exact_opts_t o;  mp_exact_opts_default(&o);
 *     o.time_limit = 10;                       // seconds
 *     mp_plan_t plan;  mp_exact_report_t r;
 *     if (mp_exact_solve(b, n, &o, &plan, &r) != MP_OK) return fail(mp_last_error());
 *     if (r.status == MP_EXACT_OPTIMAL) printf("optimal: %llu\n", r.footprint);
 *     else printf("within [%llu, %llu]\n", r.lower_bound, r.footprint);
 *     mp_plan_free(&plan);
 *
 * The strategy "exact" of the registry is mp_exact_solve with the default
 * options; its limits come from the environment (see mp_exact_opts_default).
 */
#ifndef MEMPLAN_EXACT_H
#define MEMPLAN_EXACT_H

#ifndef MEMPLAN_H
#error "include memplan.h, not memplan_exact.h"
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mp_exact_opts_t {
    double time_limit;   /* seconds of wall time for the whole call; <= 0: none */
    uint64_t node_limit; /* search nodes for the whole call; 0: none */
    uint64_t nodes_per_buffer; /* a node limit of this many per buffer, kept
                            between 10^4 and 2*10^6; 0: none.  With both node
                            limits, the smaller applies. */
    uint64_t capacity;   /* 0: minimise the footprint; otherwise only decide
                            whether the buffers fit in capacity bytes */
    int no_heuristics;   /* 1: start from the naive plan instead of "auto"'s
                            (for testing the search alone) */
    /* NULL, or n entries: buffer i's offset fixed in advance, MP_NOT_FIXED
     * where the search places it (include/memplan_fixed.h), as
     * mp_auto_opts_t.fixed.  Fixed buffers are obstacles that never move;
     * the start is auto's (or, with no_heuristics, naive's) plan around
     * them (mp_plan_compute_fixed). */
    const uint64_t *fixed;
} mp_exact_opts_t;

/* Fills the defaults of the strategy "exact": capacity 0 (minimise),
 * heuristics on, time_limit from the environment variable
 * MEMPLAN_EXACT_TIME (seconds, default 5), and a node limit: the number in
 * MEMPLAN_EXACT_NODES when it is set (0: none), else 5000 nodes per buffer
 * (nodes_per_buffer).  With a node limit the search's course depends on
 * node counts alone (the time limit only stops it), so the result is the
 * same on every machine as long as the time limit is not reached first. */
void mp_exact_opts_default(mp_exact_opts_t *o);

typedef enum mp_exact_status {
    MP_EXACT_OPTIMAL = 0, /* minimise: footprint == lower_bound, proven optimal */
    MP_EXACT_GAP = 1,     /* minimise: a limit stopped it; lower_bound < footprint */
    MP_EXACT_FITS = 2,    /* decide: the plan fits in the capacity */
    MP_EXACT_NO_FIT = 3,  /* decide: proven that no plan fits (lower_bound > capacity) */
    MP_EXACT_UNKNOWN = 4  /* decide: a limit stopped it before an answer */
} mp_exact_status;

/* Name of a status: "optimal", "gap", "fits", "no-fit", "unknown". */
const char *mp_exact_status_name(mp_exact_status s);

typedef struct mp_exact_report_t {
    mp_exact_status status;
    uint64_t footprint;   /* of the plan returned */
    uint64_t lower_bound; /* proven: no valid plan has a smaller footprint */
    uint64_t load_bound;  /* max over time of live bytes (mp_bounds_t.offsets) */
    uint64_t start;       /* footprint of the plan the search started from */
    const char *start_strategy; /* the heuristic that made it */
    uint64_t nodes;       /* search nodes visited */
    double seconds;       /* wall time of the call */
    size_t parts;         /* independent parts (cuts in time) */
    size_t parts_open;    /* parts whose optimum is not proven (minimise) or
                             whose answer is unknown (decide) */
    int hit_limit;        /* 1 when a node or time limit stopped the search */
} mp_exact_report_t;

/* Plans n buffers with the exact search and fills *out (free with
 * mp_plan_free) with the best plan found; report may be NULL.  Minimising,
 * the plan is never larger than "auto"'s (unless no_heuristics).  Deciding,
 * the plan fits in the capacity when the status is MP_EXACT_FITS and is
 * the best plan found otherwise.  With opts->fixed the plan keeps every
 * fixed buffer at its offset (mp_plan_check_fixed passes), is never larger
 * than mp_plan_compute_fixed(..., "auto", ...)'s, and lower_bound is at
 * least the largest end of a fixed buffer (deciding: a capacity below it
 * is no-fit at once).  The problem (and the fixed offsets, as
 * mp_fixed_validate) is validated first; a limit reached is no error.  On
 * failure *out is zeroed. */
mp_status mp_exact_solve(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *opts,
                         mp_plan_t *out, mp_exact_report_t *report);

/* A lower bound on every plan's footprint, at least mp_bounds_t.offsets:
 * buffers clipped to windows of time across the whole run (the fullest
 * first, widening until the window is the whole problem), each window's
 * capacities refuted by the exact search raise it, within the limits of
 * opts (NULL: the defaults; capacity and no_heuristics are ignored).
 * With opts->fixed the bound is for the plans that keep those buffers at
 * their offsets: at least the largest fixed end, and each window's search
 * takes the fixed buffers live in it as obstacles (the fixed offsets are
 * validated first, as mp_fixed_validate).  Above 3000 buffers it is the
 * max-load bound (and the largest fixed end). */
mp_status mp_exact_lower_bound(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *opts,
                               uint64_t *lower_bound);

/* ---- anytime "auto" (src/exact/anytime.c) ---------------------------------
 * "auto" given time: its heuristics first, then, until the time limit or a
 * proof of optimality, the exact search (problems whose parts have at most
 * 3000 buffers) or local improvement of the plan (larger parts), on one
 * thread per core (two at most).  It always holds a valid plan, never worse
 * than auto's, and ends with what it proved: optimal, or a gap. */

/* What the progress callback sees; offset and the strings are valid only
 * during the call. */
typedef struct mp_anytime_progress_t {
    double seconds;          /* since the call began */
    uint64_t footprint;      /* of the plan held now */
    uint64_t lower_bound;    /* proven now */
    const char *source;      /* what made the plan: a heuristic's name,
                                "exact" or "improve" */
    const uint64_t *offset;  /* the plan held now: n offsets, valid */
    size_t n;
} mp_anytime_progress_t;

typedef struct mp_auto_opts_t {
    double time_limit;       /* seconds for the whole call; <= 0: "auto" as
                                mp_plan_auto, the heuristics alone */
    unsigned threads;        /* 0: two on a machine of two cores or more; else
                                1 or 2 */
    /* Called (NULL: never) after the heuristics and whenever the plan held
     * improves or the proven bound rises, one call at a time, from the
     * calling thread or a worker; it must not call into the same plan. */
    void (*progress)(void *ctx, const mp_anytime_progress_t *p);
    void *ctx;
    /* NULL, or n entries: buffer i's offset fixed in advance, MP_NOT_FIXED
     * where the planner places it (include/memplan_fixed.h).  Fixed buffers
     * stay where they are in every plan held; the others start from auto's
     * plan around them (mp_plan_compute_fixed) and only they move. */
    const uint64_t *fixed;
} mp_auto_opts_t;

/* Plans n buffers as "auto" does and, with a time limit, goes on improving
 * the plan and the bound until the limit or a proof of optimality; fills
 * *out (free with mp_plan_free; its strategy is what made the plan: a
 * heuristic's name, "exact" or "improve") and report (may be
 * NULL): status MP_EXACT_OPTIMAL or MP_EXACT_GAP, footprint, lower_bound,
 * start (auto's footprint) and start_strategy, nodes of the exact search,
 * seconds, hit_limit (the time ran out before a proof).  opts NULL: no time
 * limit.  With opts->fixed the plan keeps every fixed buffer at its offset
 * (mp_plan_check_fixed passes), is never larger than
 * mp_plan_compute_fixed(..., "auto", ...)'s, and lower_bound is at least
 * the largest end of a fixed buffer.  The problem (and the fixed offsets,
 * as mp_fixed_validate) is validated first; on failure *out is zeroed. */
mp_status mp_plan_auto_opts(const mp_buffer_t *b, size_t n, const mp_auto_opts_t *opts,
                            mp_plan_t *out, mp_exact_report_t *report);

#ifdef __cplusplus
}
#endif

#endif /* MEMPLAN_EXACT_H */
