/* exact.h -- private interface of the exact offset search (src/exact/).
 *
 * The pieces, one file each:
 *   part.c    a normalized problem cut into independent parts, each with its
 *             time sections, overlap lists and static orders
 *   search.c  the decision "does part p fit in capacity C?" by depth-first
 *             search over canonical plans, with inference and dominance
 *   memo.c    the table of states proven to fail (transpositions)
 *   solve.c   minimisation of one part: restarts, bisection, limits
 *   bound.c   lower bounds from exact searches on time windows
 *   lns.c     ruin and recreate of plans too large for the search
 *   peak.c    peak-first orders for whole-plan first fits
 *   anytime.c "auto" with a time limit
 *   api.c     mp_exact_solve, the strategy "exact", options and reports
 */
#ifndef MP_EXACT_INTERNAL_H
#define MP_EXACT_INTERNAL_H

#include "../core/internal.h"

#include <stdatomic.h>

#define MP__XNONE UINT32_MAX

/* ---- parts (part.c) ------------------------------------------------------ */

/* One independent part: buffers 0..n-1 (local numbers), live in time
 * sections sf[i]..sl[i] (inclusive indices of the elementary intervals
 * between the part's event points).  Two buffers conflict iff their section
 * ranges meet; adj lists each buffer's conflicting buffers (CSR). */
typedef struct mp__xpart {
    size_t n, ns;
    size_t *gid;           /* local -> index in the whole problem */
    uint64_t *size;        /* aligned size */
    uint64_t *align;       /* >= 1 */
    uint32_t *sf, *sl;
    size_t *adj_at;        /* n + 1 entries */
    uint32_t *adj;
    uint64_t load;         /* max over sections of live bytes: a lower bound */
    uint64_t unit;         /* gcd of sizes, alignments > 1 and fixed offsets:
                              every canonical offset and footprint is a
                              multiple of it */
    uint64_t *fix;         /* NULL, or per buffer its fixed offset
                              (MP_NOT_FIXED: free; mp__xpart_fix) */
    uint64_t fix_end;      /* max end of a fixed buffer: a lower bound */
} mp__xpart;

/* Builds the part of the normalized problem b made of the m buffers idx[]
 * (in that local order).  MP_ENOMEM only. */
mp_status mp__xpart_build(const mp_buffer_t *b, const size_t *idx, size_t m, mp__xpart *p);
void mp__xpart_free(mp__xpart *p);
/* Gives the part the fixed offsets of the whole problem (fixed[gid]; NULL
 * or none of its buffers fixed: nothing changes): p->fix, p->fix_end and
 * the unit.  MP_ENOMEM only. */
mp_status mp__xpart_fix(mp__xpart *p, const uint64_t *fixed);

/* Splits the normalized problem into maximal groups of buffers connected by
 * overlapping lifetimes: *idx is the buffers grouped part by part (each
 * group sorted by first time, then index), *at the n_parts + 1 group starts.
 * O(n log n).  Free both with free(). */
mp_status mp__xsplit(const mp_buffer_t *b, size_t n, size_t **idx, size_t **at, size_t *n_parts);

/* Static order number k of a part into order[0..n) (a permutation), keys
 * decreasing, ties by index.  With T the largest section load over a
 * buffer's lifetime, W its lifetime and A its area: 0 T-W-A, 1 W-A-T,
 * 2 T-A-W, 3 size-W-T; k >= 4: order k % 4 with up to 30% noise from k,
 * and for odd k the buffers of sections with large weight[] (failures of
 * earlier searches; NULL: none) first.  scratch holds 3n doubles. */
void mp__xorder(const mp__xpart *p, unsigned k, const double *weight, uint32_t *order,
                double *scratch);

/* ---- limits shared by the searches of one call ---------------------------- */

typedef struct mp__xlimit {
    uint64_t nodes;        /* visited so far */
    uint64_t node_limit;   /* 0: none */
    double deadline;       /* mp__xnow() value, 0: none */
    bool hit;              /* a node or time limit stopped a search */
    atomic_int *stop;      /* NULL, or set by another thread to stop this one */
} mp__xlimit;

double mp__xnow(void);     /* monotonic seconds */

/* ---- the table of failed states (memo.c) ----------------------------------- */

typedef struct mp__xmemo_entry {
    uint64_t k1, k2;       /* 128-bit key of (unplaced set, their floors) */
    uint64_t olast;        /* weakest (olast, rlast) known to fail */
    uint32_t rlast;
    uint32_t gen;          /* entry valid only in its generation */
} mp__xmemo_entry;

typedef struct mp__xmemo {
    mp__xmemo_entry *e;
    size_t mask;
    uint32_t gen;
} mp__xmemo;

mp_status mp__xmemo_init(mp__xmemo *m, size_t n_buffers);
void mp__xmemo_free(mp__xmemo *m);
void mp__xmemo_clear(mp__xmemo *m);   /* O(1): a new generation */
/* True when the state is known to fail at (olast, rlast) or weaker. */
bool mp__xmemo_fails(const mp__xmemo *m, uint64_t k1, uint64_t k2, uint64_t olast, uint32_t rlast);
void mp__xmemo_store(mp__xmemo *m, uint64_t k1, uint64_t k2, uint64_t olast, uint32_t rlast);

/* ---- the decision search (search.c) --------------------------------------- */

typedef struct mp__xsearch mp__xsearch;   /* workspace for one part */

typedef enum mp__xanswer {
    MP__X_NO = 0,          /* proven: nothing fits */
    MP__X_YES = 1,         /* found: off[] fits */
    MP__X_UNKNOWN = 2      /* budget or limit reached */
} mp__xanswer;

mp_status mp__xsearch_new(const mp__xpart *p, mp__xsearch **out);
void mp__xsearch_free(mp__xsearch *s);

/* Per section: how often a search failed there (weights for orders). */
const double *mp__xsearch_weights(const mp__xsearch *s);

/* Decides whether part p fits in capacity cap, trying buffers in static
 * order order[] (a permutation), for at most budget nodes (0: no budget)
 * and within lim; with learn, its failures count in the weights.  On
 * MP__X_YES fills off[0..n) with a plan of footprint <= cap.  Allocates
 * nothing: always MP_OK. */
mp_status mp__xsearch_run(mp__xsearch *s, const uint32_t *order, uint64_t cap, uint64_t budget,
                          bool learn, mp__xlimit *lim, mp__xanswer *ans, uint64_t *off);

/* ---- minimising a part (solve.c) ------------------------------------------- */

typedef struct mp__xsolver {
    mp__xpart part;
    mp__xsearch *ws;
    uint32_t *order;
    double *scratch;       /* 3n entries for mp__xorder */
    uint64_t *best;        /* offsets of the best plan, footprint hi */
    uint64_t *trial;       /* offsets found by the last search */
    uint64_t lo, hi;       /* proven lower bound, best footprint */
    unsigned round;        /* learning searches so far (their order number) */
    unsigned iround;       /* the others */
    uint64_t probe;        /* last improving capacity that ran out of budget */
    uint64_t probe_budget; /* and that budget */
} mp__xsolver;

/* Sets up the solver of a built part (takes it over) with a starting plan
 * start[0..n) (local offsets, valid) and a proven lower bound lo. */
mp_status mp__xsolver_init(mp__xsolver *v, mp__xpart *p, const uint64_t *start, uint64_t lo);
void mp__xsolver_free(mp__xsolver *v);

/* One search of the minimisation with a node budget, in the next static
 * order: at the capacity the part must reach (mp__xsolver_target), or,
 * with improve, at the middle between it (or the last capacity that ran
 * out of a budget as large) and hi - unit.  A plan found lowers hi to its
 * footprint, a refutation raises lo. */
mp_status mp__xsolver_step(mp__xsolver *v, uint64_t floor_lo, bool improve, uint64_t budget,
                           mp__xlimit *lim);

/* The capacity the part must reach for the whole problem to reach
 * floor_lo: the largest multiple of its unit <= max(lo, floor_lo), at
 * least lo.  The part is closed when hi <= it. */
uint64_t mp__xsolver_target(const mp__xsolver *v, uint64_t floor_lo);

/* One decision at capacity cap with the next static order (learning ones
 * and the others each have their own sequence); on YES the plan becomes
 * best if smaller, on NO lo rises above cap. */
mp_status mp__xsolver_decide(mp__xsolver *v, uint64_t cap, uint64_t budget, bool learn,
                             mp__xlimit *lim, mp__xanswer *ans);

/* ---- options (api.c) ----------------------------------------------------------- */

/* Parts above this many buffers are not searched: the model takes O(n^2)
 * memory (conflict lists, candidate stack). */
#define MP__X_MAX_N 3000

/* The options (opts, or the defaults when NULL) into *o, and the problem
 * validated and normalized into *nb (free() it; NULL on failure). */
mp_status mp__xprepare(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *opts,
                       mp_exact_opts_t *o, mp_buffer_t **nb);

/* The strategy "exact" on the normalized problem b around the fixed
 * offsets fixed[0..n) (NULL or none fixed: as mp__offsets_exact; else
 * valid, as mp_fixed_validate checks): mp_exact_solve's run with the
 * default options (mp_exact_opts_default), the plan into offset[0..n),
 * every fixed buffer at its offset, and its report into *rep (NULL: not
 * wanted).  A limit reached is no error; MP_ENOMEM only. */
mp_status mp__xsolve_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed, uint64_t *offset,
                           mp_exact_report_t *rep);

/* The node limit of a call on n buffers under o (0: none). */
uint64_t mp__xnode_limit(const mp_exact_opts_t *o, size_t n);

/* ---- minimising from a given plan, for anytime "auto" (anytime.c) ------------ */

/* What mp__xminimise tells its caller while it runs. */
typedef struct mp__xhooks {
    unsigned stream;       /* 0: the orders of mp_exact_solve; k > 0: other sequences */
    atomic_int *stop;      /* NULL, or a flag that stops the search when set */
    /* called when the plan improves (off: the whole plan, footprint) or the
     * proven lower bound rises (off NULL); NULL: not called */
    void (*publish)(void *ctx, const uint64_t *off, uint64_t footprint, uint64_t lower_bound);
    void *ctx;
    /* NULL, or the problem's fixed offsets (MP_NOT_FIXED: free): the search
     * keeps those buffers where they are (search.c) */
    const uint64_t *fixed;
} mp__xhooks;

/* Minimises the normalized problem b from the valid plan off[0..n) (its
 * footprint start_fp came from start_strategy) within o's limits, as
 * mp_exact_solve does after its heuristics; off receives the best plan and
 * rep the report.  Parts above MP__X_MAX_N buffers are left as they are.
 * With h->fixed, off[] has every fixed buffer at its offset and keeps it,
 * and the lower bound includes the largest fixed end. */
mp_status mp__xminimise(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *o, uint64_t *off,
                        const char *start_strategy, const mp__xhooks *h, mp_exact_report_t *rep);

/* The largest part (buffers connected by overlapping lifetimes) of the
 * normalized problem b: the exact search models parts up to MP__X_MAX_N. */
mp_status mp__xlargest_part(const mp_buffer_t *b, size_t n, size_t *largest);

/* ---- local improvement of large plans (lns.c) -------------------------------- */

typedef struct mp__xlns mp__xlns;

/* A ruin-and-recreate improver of the valid plan off[0..n) of the
 * normalized problem b, with its own random sequence from seed. */
mp_status mp__xlns_new(const mp_buffer_t *b, size_t n, const uint64_t *off, uint64_t seed,
                       mp__xlns **out);
void mp__xlns_free(mp__xlns *l);
/* Keeps the buffers with fixed[i] != MP_NOT_FIXED (fixed NULL: none; the
 * plan has them there) where they are in every step and rebuild; fixed
 * must outlive l. */
void mp__xlns_fix(mp__xlns *l, const uint64_t *fixed);
/* Steps end early, keeping the plan they started from, after deadline
 * (mp__xnow() time; 0: none) or once *stop is set (stop may be NULL). */
void mp__xlns_limit(mp__xlns *l, double deadline, atomic_int *stop);
/* One step; *improved when the footprint fell.  The plan stays valid. */
mp_status mp__xlns_step(mp__xlns *l, bool *improved);
uint64_t mp__xlns_footprint(const mp__xlns *l);
const uint64_t *mp__xlns_plan(const mp__xlns *l);
/* Places every buffer anew by first fit in the order of rule (0: size, then
 * lifetime, decreasing; 1: by offset; 2: lifetime, then size; 3: as 0 with
 * random swaps; 4-6: size, then first ascending, last descending, lifetime
 * ascending; 7: area) and keeps the plan when it is no worse. */
mp_status mp__xlns_rebuild(mp__xlns *l, unsigned rule, bool *improved);
/* Places every buffer anew by first fit in order[0..n) (a permutation)
 * and keeps the plan when it is no worse. */
mp_status mp__xlns_rebuild_order(mp__xlns *l, const size_t *order, bool *improved);
/* Continues from another valid plan (e.g. a better one of another thread). */
void mp__xlns_adopt(mp__xlns *l, const uint64_t *off);

/* ---- peak-first orders for whole-plan first fits (peak.c) -------------------- */

/* How many variants mp__xpeak_order knows (variant numbers wrap around). */
unsigned mp__xpeak_variants(void);
/* order[0..n): the buffers live at the first time of the largest load of
 * the normalized problem b, then the others, each group sorted by the keys
 * variant names (the first variants are the ones worth trying first).
 * MP_ENOMEM only. */
mp_status mp__xpeak_order(const mp_buffer_t *b, size_t n, unsigned variant, size_t *order);

/* Overflow-safe "x + y <= cap". */
static inline bool mp__xfits(uint64_t x, uint64_t y, uint64_t cap) {
    return x <= cap && y <= cap - x;
}

/* order[0..n): greedy-by-size, larger buffers first, ties to the longer
 * lifetime, then the index (the order of mp__xlns_rebuild's rule 0).
 * MP_ENOMEM only. */
mp_status mp__xsize_order(const mp_buffer_t *b, size_t n, size_t *order);

/* ---- stronger lower bounds (bound.c) ------------------------------------------ */

/* Raises *lo, a proven lower bound of the normalized problem b (at least
 * its max-load bound), by exact decisions on time windows of 3, 5, 9, ...
 * sections across the whole time axis, the last being the whole problem;
 * windows wider than max_width sections are skipped (0: none).  Stops at
 * lim's limits; *lo stays proven whatever stops it.  Nothing above
 * MP__X_MAX_N buffers.  MP_ENOMEM only. */
mp_status mp__xbound_raise(const mp_buffer_t *b, size_t n, size_t max_width, mp__xlimit *lim,
                           uint64_t *lo);
/* mp__xbound_raise with fixed offsets (NULL, or n entries, MP_NOT_FIXED:
 * free; valid): *lo rises to the largest fixed end first, and each
 * window's search takes the fixed buffers live in it as obstacles at their
 * offsets, so *lo stays a bound of every plan that keeps them there. */
mp_status mp__xbound_raise_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                                 size_t max_width, mp__xlimit *lim, uint64_t *lo);

#endif /* MP_EXACT_INTERNAL_H */
