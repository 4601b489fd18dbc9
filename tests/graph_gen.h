/* graph_gen.h -- random memplan-graph/1 graphs as JSON text, deterministic
 * in their seed, for tests of the graph layer (sharing, parallel safety),
 * an O(n^2) oracle judging graph plans by definition, and helpers that run
 * the library's graph-plan calls through the harness's checks.
 *
 * A graph has a few inputs and parameters, then n_nodes ops that read
 * earlier tensors (mostly recent ones, so lifetimes look like a network's):
 * in-place-capable ops from the registry (relu, add, mul), unknown ops with
 * attrs.inplace_capable, views (flatten: an alias of the input's root),
 * ops with several inputs or outputs, a few float16 outputs, tensors
 * nobody reads, graph outputs (one of them sometimes a view).  The order is
 * a random topological order, not the creation order. */
#ifndef MP_TEST_GRAPH_GEN_H
#define MP_TEST_GRAPH_GEN_H

#include "memplan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* JSON text of a random graph with n_nodes >= 1 nodes; malloc'ed (free()),
 * NULL when out of memory.  mp_graph_parse accepts it. */
char *mp_graph_gen_json(uint64_t seed, size_t n_nodes);

/* The oracle: ancestor sets by depth-first search (u precedes v when v
 * reads a tensor u produces or a view of one), the nodes touching each
 * tensor's memory (its producer and every node reading it or a view), and
 * the lifetimes. */
typedef struct mp_graph_oracle_t {
    size_t n, nt;
    bool *anc;      /* anc[v * n + u]: u is v or an ancestor of v */
    bool *touch;    /* touch[t * n + u]: u produces t or reads it or a view */
    uint64_t *first, *last;
} mp_graph_oracle_t;

/* false when out of memory (free it anyway). */
bool mp_graph_oracle_init(const mp_graph_t *g, mp_graph_oracle_t *o);
void mp_graph_oracle_free(mp_graph_oracle_t *o);

/* Judges plan p of g over all pairs of planned tensors, with half-step
 * lifetimes (2 first, + 1 when written in place, to 2 last): *seq is
 * whether no two tensors alive together overlap in memory, *par whether in
 * addition every two that overlap in memory are ordered (every node
 * touching the earlier is an ancestor of the later one's producer). */
void mp_graph_oracle_judge(const mp_graph_t *g, const mp_graph_oracle_t *o,
                           const mp_graph_plan_t *p, bool *seq, bool *par);

/* mp_graph_parse of a string (name "test.json"), checked; NULL on failure. */
mp_graph_t *mp_test_graph_parse(const char *json);

/* mp_graph_share with these options into *p, then mp_graph_plan_check in
 * the ANY mode and in par; returns the footprint (0 on failure; *p must be
 * freed either way). */
uint64_t mp_test_share(const mp_graph_t *g, int inplace, int share, mp_parallel_mode par,
                       int include_persistent, mp_graph_plan_t *p);

/* Sum of the sizes of mp_graph_records: what no sharing must cost. */
uint64_t mp_test_naive_bytes(const mp_graph_t *g, int include_persistent);

/* The offsets lower bound of p's own half-step records (mp_graph_plan_records). */
uint64_t mp_test_records_bound(const mp_graph_t *g, const mp_graph_plan_t *p);

#endif
