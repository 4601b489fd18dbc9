/* fuzz_remat.c -- libFuzzer target: a forward graph through recomputation.
 *
 * The input is a graph file (as fuzz_graph), optionally followed by a line
 * "@@" and a policy spelling ("segments=0,3", "logn=2", ...) for the
 * policy parser.  A graph mp_remat_new accepts goes through every policy
 * (and the fuzzed one): each plan validated, evaluated (transformed,
 * shared, placed and proven by the checker inside mp_remat_evaluate, its
 * peak at least its lower bound) and applied; a Revolve schedule over the
 * chain simulated and turned into a plan; the budget contract at the
 * smallest and a middle budget; and on small graphs the executor: a plan
 * with recomputation must train bit-identically to the plain step. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

/* Evaluating a plan shares, places and checks the whole training graph, and
 * "budget" and mp_remat_fit evaluate several candidates: graphs above
 * these sizes skip the costly parts. */
enum { MAX_NODES = 120, FIT_MAX_NODES = 40, EXEC_MAX_NODES = 32 };
#define EXEC_MAX_BYTES (128u * 1024u)

static const char *const POLICIES[] = {"none", "sqrt", "cheap", "segments=0,1", "logn",
                                       "logn=2", "revolve", "revolve=2", "budget", "optimal"};

static int ok_or_resource(mp_status st) {
    return st == MP_OK || st == MP_ENOMEM || st == MP_EOVERFLOW;
}

/* Outputs of the training graph h against the plain step's: bit-identical. */
static void same_training(const mp_graph_t *plain, const mp_graph_t *h) {
    mp_graph_stats_t s;
    if (mp_graph_node_count(h) > EXEC_MAX_NODES || mp_graph_stats(h, &s) != MP_OK ||
        s.owned_bytes > EXEC_MAX_BYTES || mp_exec_supported(h) != MP_OK)
        return;
    mp_exec_opts_t o = {.seed = 3};
    mp_exec_result_t a, b;
    if (mp_exec_run(plain, &o, &a) != MP_OK) return;
    FZ_CHECK(mp_exec_run(h, &o, &b) == MP_OK, "the recomputing step failed, the plain did not");
    size_t n;
    const size_t *outs = mp_graph_outputs(plain, &n);
    for (size_t k = 0; k < n; k++) {
        size_t t = outs[k];
        FZ_CHECK(t < b.n_tensors && a.data[t] && b.data[t] && a.bytes[t] == b.bytes[t] &&
                     memcmp(a.data[t], b.data[t], a.bytes[t]) == 0,
                 "recomputation changed an output of the training step");
    }
    mp_exec_result_free(&a);
    mp_exec_result_free(&b);
}

static void run_plan(const mp_remat_t *r, mp_remat_plan_t *p, int exec) {
    FZ_CHECK(mp_remat_plan_validate(r, p) == MP_OK, "a policy's plan does not validate");
    mp_remat_eval_t e;
    mp_status st = mp_remat_evaluate(r, p, &e);
    FZ_CHECK(ok_or_resource(st), "mp_remat_evaluate failed");
    if (st == MP_OK) FZ_CHECK(e.peak >= e.lower_bound, "a peak below its lower bound");
    mp_graph_t *h = NULL;
    st = mp_remat_apply(r, p, &h);
    FZ_CHECK(ok_or_resource(st), "mp_remat_apply failed");
    if (st == MP_OK && exec) same_training(mp_remat_graph(r), h);
    mp_graph_free(h);
    mp_remat_plan_free(p);
}

static void policy(const mp_remat_t *r, const char *name, int exec) {
    mp_remat_plan_t p;
    mp_status st = mp_remat_policy(r, name, &p);
    if (st == MP_OK) run_plan(r, &p, exec);
    else FZ_CHECK(p.action == NULL && mp_last_error()[0], "a refused policy without a message");
}

static void chains(const mp_remat_t *r) {
    mp_chain_t c;
    if (mp_remat_chain(r, &c) != MP_OK) return;
    mp_chain_op_t *ops = NULL;
    size_t n_ops = 0;
    if (c.n >= 1 && mp_revolve_schedule(c.n, 2, &ops, &n_ops) == MP_OK) {
        uint64_t peak, extra;
        FZ_CHECK(mp_chain_simulate(&c, ops, n_ops, &peak, &extra) == MP_OK,
                 "a revolve schedule does not simulate");
        mp_remat_plan_t p;
        FZ_CHECK(mp_remat_plan_chain(r, &c, ops, n_ops, "revolve", &p) == MP_OK,
                 "a revolve schedule gives no plan");
        run_plan(r, &p, 0);
    }
    free(ops);
    mp_chain_free(&c);
}

static void fit(const mp_remat_t *r) {
    mp_remat_plan_t p;
    mp_remat_fit_t f;
    mp_status st = mp_remat_fit(r, NULL, 0, NULL, NULL, &p, &f);   /* nothing fits 0 bytes */
    FZ_CHECK(st != MP_OK || f.min_peak == 0, "a plan fits a budget of 0");
    if (st == MP_OK) {
        mp_remat_plan_free(&p);
        return;
    }
    uint64_t budget = f.min_peak;
    st = mp_remat_fit(r, NULL, budget, NULL, NULL, &p, &f);
    FZ_CHECK(ok_or_resource(st), "the smallest peak reported is not reachable");
    if (st == MP_OK) {
        FZ_CHECK(f.feasible && f.eval.peak <= budget, "a fitted plan above its budget");
        mp_remat_plan_free(&p);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FZ_MAX_INPUT) return 0;
    char text[128];
    size_t n = size;
    int has_policy = fz_tail(data, &n, text, sizeof text);
    mp_graph_t *g = fz_graph(data, n);
    if (!g) return 0;
    if (mp_graph_node_count(g) > MAX_NODES) {
        mp_graph_free(g);
        return 0;
    }
    mp_remat_t *r = NULL;
    mp_status st = mp_remat_new(g, NULL, &r);
    mp_graph_free(g);
    if (st != MP_OK) {
        FZ_CHECK(r == NULL && mp_last_error()[0], "a refused graph without a message");
        return 0;
    }
    int small = mp_graph_node_count(mp_remat_graph(r)) <= FIT_MAX_NODES;
    for (size_t k = 0; k < sizeof POLICIES / sizeof POLICIES[0]; k++)
        if (small || strcmp(POLICIES[k], "budget")) policy(r, POLICIES[k], k == 1 || k == 2);
    if (has_policy) policy(r, text, 0);
    chains(r);
    if (small) fit(r);
    mp_remat_free(r);
    return 0;
}
