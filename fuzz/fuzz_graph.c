/* fuzz_graph.c -- libFuzzer target: a graph file (memplan-graph/1 JSON, or
 * gzip) through the graph layer.
 *
 * A graph the reader accepts goes through: stats, lifetimes, shape checks,
 * its usage records planned and checked, in-place and sharing in every
 * parallel mode (each plan proven by mp_graph_plan_check), placement by a
 * core strategy, the order search (its peak recomputed, its order accepted
 * by mp_graph_with_order), a save/load round trip (every tensor, node and
 * the order the same), the backward graph and the same plans on it, and on
 * small graphs the reference executor: a planned run must give
 * bit-identical outputs to the naive run. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

/* The order search and the executor are the slow parts (the search is
 * quadratic in nodes with its lookahead, the kernels are real float32
 * loops), so they run only on graphs below these sizes. */
enum { ORDER_MAX_NODES = 200, EXEC_MAX_NODES = 48, RECORDS_MAX = 2000 };
#define EXEC_MAX_BYTES (256u * 1024u)

typedef struct share_cfg {
    int inplace, share;
    mp_parallel_mode parallel;
    int include_persistent;
} share_cfg;

static const share_cfg CFGS[] = {
    {0, 0, MP_PARALLEL_ANY, 0}, {1, 0, MP_PARALLEL_ANY, 0}, {1, 1, MP_PARALLEL_ANY, 0},
    {1, 1, MP_PARALLEL_ANCESTOR, 0}, {1, 1, MP_PARALLEL_COLOUR, 0}, {1, 1, MP_PARALLEL_ANY, 1},
};

static int ok_or_resource(mp_status st) {
    return st == MP_OK || st == MP_ENOMEM || st == MP_EOVERFLOW;
}

/* The graph's own usage records, planned and checked. */
static void plan_records(const mp_graph_t *g) {
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_status st = mp_graph_records(g, 1, &b, &n);
    FZ_CHECK(ok_or_resource(st), "mp_graph_records failed");
    if (st == MP_OK) fz_plan_checked(b, n, RECORDS_MAX, "greedy-size");
    free(b);
}

/* Every sharing configuration, proven; the sequential one re-placed. */
static void share_all(const mp_graph_t *g) {
    for (size_t k = 0; k < sizeof CFGS / sizeof CFGS[0]; k++) {
        mp_share_opts_t o = {CFGS[k].inplace, CFGS[k].share, CFGS[k].parallel,
                             CFGS[k].include_persistent};
        mp_graph_plan_t p;
        mp_status st = mp_graph_share(g, &o, &p);
        FZ_CHECK(ok_or_resource(st), "mp_graph_share failed");
        if (st != MP_OK) continue;
        FZ_CHECK(mp_graph_plan_check(g, &p, o.parallel) == MP_OK, "a sharing plan fails its check");
        if (k == 2 || k == 5) {
            const char *strategy = k == 2 ? "auto" : "objects-greedy-size";
            st = mp_graph_plan_place(g, &p, strategy);
            FZ_CHECK(ok_or_resource(st), "mp_graph_plan_place failed");
            if (st == MP_OK)
                FZ_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) == MP_OK,
                         "a placed plan fails its check");
        }
        mp_graph_plan_free(&p);
    }
}

static void order_search(const mp_graph_t *g) {
    size_t n = mp_graph_node_count(g);
    if (n > ORDER_MAX_NODES) return;
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    FZ_CHECK(order != NULL, "out of memory");
    mp_order_report_t rep;
    mp_status st = mp_graph_order_search(g, NULL, order, &rep);
    FZ_CHECK(ok_or_resource(st), "mp_graph_order_search failed");
    if (st == MP_OK) {
        FZ_CHECK(rep.searched_peak <= rep.given_peak, "the searched order is worse than the given");
        uint64_t peak = 0;
        FZ_CHECK(mp_graph_peak(g, order, 0, &peak) == MP_OK && peak == rep.searched_peak,
                 "the searched order's peak differs from its report");
        mp_graph_t *h = NULL;
        FZ_CHECK(mp_graph_with_order(g, order, &h) == MP_OK, "the searched order is not valid");
        mp_graph_free(h);
    }
    free(order);
}

static void save_load(const mp_graph_t *g) {
    const char *path = fz_tmp("graph.json");
    FZ_CHECK(mp_graph_save(g, path) == MP_OK, "mp_graph_save failed");
    mp_graph_t *h = NULL;
    FZ_CHECK(mp_graph_load(path, &h) == MP_OK, "a saved graph cannot be read back");
    mp_graph_stats_t a, b;
    FZ_CHECK(mp_graph_stats(g, &a) == MP_OK && mp_graph_stats(h, &b) == MP_OK,
             "mp_graph_stats failed");
    FZ_CHECK(memcmp(&a, &b, sizeof a) == 0, "the graph read back has other stats");
    for (size_t i = 0; i < mp_graph_tensor_count(g); i++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, i), *y = mp_graph_tensor(h, i);
        FZ_CHECK(!strcmp(x->name, y->name) && !strcmp(x->dtype, y->dtype) && x->rank == y->rank &&
                     x->bytes == y->bytes && x->kind == y->kind && x->alias_of == y->alias_of &&
                     x->producer == y->producer && x->grad_of == y->grad_of &&
                     (!x->rank || !memcmp(x->shape, y->shape, x->rank * sizeof *x->shape)),
                 "a tensor read back differs");
    }
    size_t n1, n2;
    const size_t *o1 = mp_graph_order(g, &n1), *o2 = mp_graph_order(h, &n2);
    FZ_CHECK(n1 == n2 && (!n1 || !memcmp(o1, o2, n1 * sizeof *o1)), "the order read back differs");
    for (size_t i = 0; i < mp_graph_node_count(g); i++) {
        const mp_graph_node_t *x = mp_graph_node(g, i), *y = mp_graph_node(h, i);
        FZ_CHECK(!strcmp(x->op, y->op) && x->n_inputs == y->n_inputs && x->n_outputs == y->n_outputs &&
                     x->inplace == y->inplace && x->flops == y->flops &&
                     (!x->n_inputs || !memcmp(x->inputs, y->inputs, x->n_inputs * sizeof *x->inputs)) &&
                     (!x->n_outputs || !memcmp(x->outputs, y->outputs, x->n_outputs * sizeof *x->outputs)),
                 "a node read back differs");
    }
    mp_graph_free(h);
}

/* The naive run against a planned one: bit-identical outputs. */
static void execute(const mp_graph_t *g) {
    mp_graph_stats_t s;
    if (mp_graph_node_count(g) > EXEC_MAX_NODES || mp_graph_stats(g, &s) != MP_OK ||
        s.owned_bytes > EXEC_MAX_BYTES || mp_exec_supported(g) != MP_OK)
        return;
    mp_exec_opts_t o = {.seed = 7, .plan = NULL, .poison = 1, .init = NULL};
    mp_exec_result_t naive, planned;
    if (mp_exec_run(g, &o, &naive) != MP_OK) return;
    mp_share_opts_t so = {1, 1, MP_PARALLEL_ANY, 0};
    mp_graph_plan_t p;
    if (mp_graph_share(g, &so, &p) == MP_OK && mp_graph_plan_place(g, &p, "auto") == MP_OK) {
        o.plan = &p;
        FZ_CHECK(mp_exec_run(g, &o, &planned) == MP_OK, "the planned run failed, the naive did not");
        FZ_CHECK(planned.n_tensors == naive.n_tensors, "runs differ in tensors");
        for (size_t i = 0; i < naive.n_tensors; i++) {
            FZ_CHECK(!naive.data[i] == !planned.data[i], "runs differ in outputs");
            FZ_CHECK(!naive.data[i] || (naive.bytes[i] == planned.bytes[i] &&
                                        memcmp(naive.data[i], planned.data[i], naive.bytes[i]) == 0),
                     "the planned run's output differs from the naive run's");
        }
        mp_exec_result_free(&planned);
    }
    mp_graph_plan_free(&p);
    mp_exec_result_free(&naive);
}

static void analyse(const mp_graph_t *g) {
    mp_graph_stats_t s;
    FZ_CHECK(ok_or_resource(mp_graph_stats(g, &s)), "mp_graph_stats failed");
    size_t nt = mp_graph_tensor_count(g);
    uint64_t *first = malloc((nt ? nt : 1) * sizeof *first), *last = malloc((nt ? nt : 1) * sizeof *last);
    FZ_CHECK(first && last, "out of memory");
    mp_graph_lifetimes(g, first, last);
    free(first), free(last);
    size_t unchecked;
    (void)mp_graph_check_shapes(g, &unchecked);   /* a mismatch is an answer, not an error */
    plan_records(g);
    share_all(g);
    order_search(g);
    execute(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FZ_MAX_INPUT) return 0;
    mp_graph_t *g = fz_graph(data, size);
    if (!g) return 0;
    analyse(g);
    save_load(g);
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = size & 1};
    mp_graph_t *train = NULL;
    if (mp_graph_backward(g, &bo, &train, NULL) == MP_OK) {
        analyse(train);
        mp_graph_free(train);
    } else {
        FZ_CHECK(train == NULL && mp_last_error()[0], "a failed backward without a message");
    }
    mp_graph_free(g);
    return 0;
}
