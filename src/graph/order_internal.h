/* order_internal.h -- the memory model of a graph that the order search
 * works on, shared by order.c (peak, driver), order_model.c (building it),
 * order_greedy.c (list scheduling), order_dfs.c (memory-first DFS) and
 * order_local.c (local improvement).  Nothing here is public.
 *
 * The model keeps only what decides live bytes under the lifetime rules of
 * docs/graph-format.md.  A "tracked root" is a tensor that owns bytes > 0
 * and is not persistent (persistent ones, when counted, add the same
 * constant to every step).  With step s running node v:
 *
 *     live[s] = held[s-1] + alloc(v)       (+ dead0 at step 0)
 *     held[s] = held[s-1] + alloc(v) - freed(v, order)
 *
 * where held[-1] = init_held (inputs someone reads or the graph returns),
 * alloc(v) the bytes of v's tracked outputs, and freed(v) the bytes of the
 * roots whose lifetime ends at v: inputs v reads last (unless graph
 * outputs) and v's outputs that nothing reads (transient).  dead0 is the
 * inputs nobody reads or returns: live at step 0 only, whatever runs there.
 *
 * Dependencies are the loader's (a node after the producers of the tensors
 * it reads) plus the producer of the root of every tensor read, so that
 * every reader of a root (or its aliases) runs after the root's producer
 * and the formulas above are exact.  Reads of a root by its own producer
 * change no lifetime and are dropped. */
#ifndef MEMPLAN_ORDER_INTERNAL_H
#define MEMPLAN_ORDER_INTERNAL_H

#include "graph_internal.h"

/* Candidates the greedy lookahead examines per level. */
#define MP__ORDER_BRANCH 4
/* Largest lookahead depth honoured (the work per step is BRANCH^depth). */
#define MP__ORDER_MAX_LOOKAHEAD 6

typedef struct mp__omodel {
    size_t n;                  /* nodes */
    size_t nr;                 /* tracked roots */
    /* per node, compressed rows (x_off has n + 1 entries) */
    size_t *pred_off, *pred;   /* distinct predecessor nodes */
    size_t *succ_off, *succ;   /* distinct successor nodes */
    size_t *in_off, *in;       /* distinct tracked roots read (own outputs excluded) */
    size_t *out_off, *out;     /* tracked roots produced */
    int64_t *alloc;            /* bytes of the tracked outputs */
    int64_t *held;             /* of those, the ones read later or returned */
    size_t *gpos;              /* the node's step in the graph's own order */
    /* per tracked root */
    int64_t *bytes;
    size_t *producer;          /* node, or MP_GRAPH_NONE for inputs */
    unsigned char *is_out;     /* a graph output (or aliased by one): never freed */
    size_t *rd_off, *rd;       /* distinct reader nodes (its own producer excluded) */
    int64_t init_held;         /* inputs alive after step 0 */
    int64_t dead0;             /* inputs alive at step 0 only */
    size_t max_deg;            /* max over nodes of succ + in + out counts */
} mp__omodel;

/* Builds the model of g (MP_EOVERFLOW when the tracked bytes exceed 2^62,
 * so that every signed sum below fits).  Persistent tensors are left out:
 * counted, they add one constant to every step and change no decision.
 * On failure *m is zeroed. */
mp_status mp__omodel_build(const mp_graph_t *g, mp__omodel *m);
void mp__omodel_free(mp__omodel *m);

/* Fills order[0..n) with a topological order of the model's edges, ties by
 * the given position (so it is the given order whenever that one respects
 * the model's edges).  Returns false if the edges have a cycle (a graph
 * whose aliases are produced before their roots). */
bool mp__omodel_topo(const mp__omodel *m, size_t *order, mp_status *st);

/* Live bytes (without the persistent constant) of every step of order,
 * into prof[0..n); returns the peak.  order must respect the model's
 * edges.  O(n + reads). */
int64_t mp__omodel_profile(const mp__omodel *m, const size_t *order, int64_t *prof,
                           size_t *pos_scratch);

/* Greedy list scheduling with lookahead (order_greedy.c) into order. */
mp_status mp__order_greedy(const mp__omodel *m, size_t lookahead, size_t *order);

/* Memory-first depth-first order (order_dfs.c) into order; topo is any
 * topological order of the model's edges. */
mp_status mp__order_dfs(const mp__omodel *m, const size_t *topo, size_t *order);

/* Local improvement of order in place (order_local.c); *passes counts the
 * passes run.  order must respect the model's edges. */
mp_status mp__order_improve(const mp__omodel *m, size_t *order, size_t max_passes,
                            size_t *passes);

#endif /* MEMPLAN_ORDER_INTERNAL_H */
