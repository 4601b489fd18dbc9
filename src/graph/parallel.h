/* parallel.h -- the dependency structure the sharing pass and its checker
 * share (src/graph/parallel.c): the graph's DAG as adjacency lists, the
 * readers of every tensor's memory, the exact ancestor relation (bitsets),
 * and the note's path colouring with its reachability index.  Nothing here
 * is public.
 *
 * "u touches the memory of root r" means u produces r or reads r or any
 * alias of r.  A node P may write memory last holding r, while other ops may
 * run in parallel, only when every node touching r is P or an ancestor of P
 * (the MXNet note, "Allocation for Parallel Operations"). */
#ifndef MEMPLAN_GRAPH_PARALLEL_H
#define MEMPLAN_GRAPH_PARALLEL_H

#include "graph_internal.h"

/* The DAG of g.  Node u precedes v (an edge u -> v) when v reads a tensor
 * that u produces, or an alias whose root u produces (reading a view reads
 * the root's memory); an edge always goes forward in the order.  Lists hold
 * distinct nodes, in a fixed order. */
typedef struct mp__dag {
    size_t n;                   /* nodes */
    size_t *pred_at, *pred;     /* preds of v: pred[pred_at[v] .. pred_at[v+1]) */
    size_t *succ_at, *succ;     /* succs of v, likewise */
    size_t *rd_at, *rd;         /* per tensor: the distinct nodes reading it or
                                   any alias of it (empty for aliases) */
} mp__dag;

/* Builds the lists in O(tensors + nodes + node inputs) plus the sorts. */
mp_status mp__dag_build(const mp_graph_t *g, mp__dag *d);
void mp__dag_free(mp__dag *d);

/* The exact ancestor relation: one bitset per node of its ancestors and
 * itself, n^2/8 bytes, built in O(edges x n/64).  Larger than
 * MP__ANC_MAX_BYTES is refused with MP_ENOMEM (about 90k nodes). */
#define MP__ANC_MAX_BYTES ((uint64_t)1 << 30)
typedef struct mp__anc {
    size_t words;               /* 64-bit words per node */
    uint64_t *bits;
} mp__anc;

mp_status mp__anc_build(const mp_graph_t *g, const mp__dag *d, mp__anc *a);
void mp__anc_free(mp__anc *a);

/* Is u an ancestor of v, or v itself? */
static inline bool mp__anc_has(const mp__anc *a, size_t u, size_t v) {
    return (a->bits[v * a->words + u / 64] >> (u % 64)) & 1;
}

/* The path colouring: colours 0..k-1, each the not-yet-coloured nodes of
 * one longest path (one point per uncoloured node), found k times; nodes
 * left over have colour MP_GRAPH_NONE.  A colour's nodes lie on one path, so
 * they are totally ordered by ancestry, in step order.  reach[v*k + c] is
 * 1 + the step of the latest colour-c node that is v or an ancestor of v
 * (0: none), which answers "is u an ancestor of v" exactly for coloured u. */
#define MP__COLOUR_MAX_PATHS 512
typedef struct mp__colour {
    size_t k;
    size_t *colour;             /* per node */
    uint32_t *reach;            /* n x k */
} mp__colour;

/* Colours at most MP__COLOUR_MAX_PATHS paths (fewer when the index would
 * pass 256 MiB): O(k (nodes + edges)) time, O(k nodes) memory. */
mp_status mp__colour_build(const mp_graph_t *g, const mp__dag *d, mp__colour *c);
void mp__colour_free(mp__colour *c);

/* Is u provably an ancestor of v (or v)?  Exact for coloured u; for an
 * uncoloured u, true when u or one of its direct successors is provably an
 * ancestor (sound, not complete). */
bool mp__colour_anc(const mp_graph_t *g, const mp__dag *d, const mp__colour *c, size_t u,
                    size_t v);

/* Fills prot[t] for every tensor: true when sharing must never free or
 * overwrite t's memory (meaningful for roots): a graph input or any tensor
 * no node produces, a graph output (or the root of one), a tensor of kind
 * output, a parameter or gradient.  (src/graph/share.c) */
void mp__share_protected(const mp_graph_t *g, bool *prot);

/* MP_EINVAL unless p's arrays fit g (sizes, storage ids in range).
 * (src/graph/gplan.c) */
mp_status mp__graph_plan_shape(const mp_graph_t *g, const mp_graph_plan_t *p);

#endif /* MEMPLAN_GRAPH_PARALLEL_H */
