/* test_oom_graph.c -- every allocation failure in the graph layer is
 * handled: loading, the backward pass, sharing in every mode, placement,
 * the graph-plan checker, order search, reordering, the executor and
 * recomputation (context, every policy, evaluation, transform, budget
 * search) each run with the k-th allocation failing, for k = 0, 1, ... until the call
 * succeeds.  Every failing call must return MP_ENOMEM, leave its output
 * empty, and leak nothing (ASan's leak checker runs at exit in the
 * sanitizer build).  malloc, calloc and realloc of memplan's own code are
 * wrapped at link time (-Wl,--wrap, as in test_oom.c); jansson's internal
 * allocations are not, so they never fail here. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);

static long countdown = -1; /* fail when it reaches 0; -1: never */

static bool fail_now(void) { return countdown >= 0 && countdown-- == 0; }

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return fail_now() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }

/* One call of the graph layer, with what it needs; returns its status and
 * whether its output was left empty. */
typedef struct call {
    const char *name;
    mp_status (*run)(const mp_graph_t *g, bool *empty);
} call;

static const mp_graph_t *g_train; /* the training graph, for the later calls */

static mp_status c_load(const mp_graph_t *g, bool *empty) {
    (void)g;
    mp_graph_t *out = (mp_graph_t *)1;
    mp_status s = mp_graph_load("graph/mlp.json", &out);
    *empty = s == MP_OK || out == NULL;
    mp_graph_free(s == MP_OK ? out : NULL);
    return s;
}

static mp_status c_backward(const mp_graph_t *g, bool *empty) {
    mp_backward_opts_t o = {.add_loss = 1};
    mp_graph_t *out = (mp_graph_t *)1;
    mp_status s = mp_graph_backward(g, &o, &out, NULL);
    *empty = s == MP_OK || out == NULL;
    mp_graph_free(s == MP_OK ? out : NULL);
    return s;
}

static bool plan_empty(const mp_graph_plan_t *p) {
    static const mp_graph_plan_t z;
    return !memcmp(p, &z, sizeof z);
}

static mp_status share_mode(bool inplace, bool share, mp_parallel_mode par, bool *empty) {
    mp_share_opts_t o = {.inplace = inplace, .share = share, .parallel = par};
    mp_graph_plan_t p;
    mp_status s = mp_graph_share(g_train, &o, &p);
    *empty = s == MP_OK || plan_empty(&p);
    countdown = -1;
    if (s == MP_OK) MP_CHECK_OK(mp_graph_plan_check(g_train, &p, par));
    mp_graph_plan_free(&p);
    return s;
}

static mp_status c_inplace(const mp_graph_t *g, bool *e) { (void)g; return share_mode(1, 0, MP_PARALLEL_ANY, e); }
static mp_status c_share(const mp_graph_t *g, bool *e) { (void)g; return share_mode(1, 1, MP_PARALLEL_ANY, e); }
static mp_status c_ancestor(const mp_graph_t *g, bool *e) { (void)g; return share_mode(1, 1, MP_PARALLEL_ANCESTOR, e); }
static mp_status c_colour(const mp_graph_t *g, bool *e) { (void)g; return share_mode(1, 1, MP_PARALLEL_COLOUR, e); }

/* Placement and the checker fail on a plan made before the countdown. */
static mp_graph_plan_t made;

static mp_status c_place(const mp_graph_t *g, bool *empty) {
    (void)g;
    mp_graph_plan_t before = made;
    uint64_t footprint = made.footprint;
    mp_status s = mp_graph_plan_place(g_train, &made, "greedy-size");
    /* On failure the plan is left as it was (still valid). */
    *empty = s == MP_OK || (made.footprint == footprint && made.offset == before.offset);
    countdown = -1;
    if (s == MP_OK) MP_CHECK_OK(mp_graph_plan_check(g_train, &made, MP_PARALLEL_ANY));
    return s;
}

static mp_status c_check(const mp_graph_t *g, bool *empty) {
    (void)g;
    *empty = true;
    return mp_graph_plan_check(g_train, &made, MP_PARALLEL_ANY);
}

static mp_status c_order(const mp_graph_t *g, bool *empty) {
    (void)g;
    size_t n = mp_graph_node_count(g_train);
    size_t *order = __real_malloc(n * sizeof *order); /* the caller's, never failing */
    mp_order_report_t r;
    mp_status s = mp_graph_order_search(g_train, NULL, order, &r);
    *empty = true; /* order is the caller's array: nothing to leave empty */
    if (s == MP_OK) MP_CHECK(r.searched_peak <= r.given_peak);
    free(order);
    return s;
}

static mp_status c_with_order(const mp_graph_t *g, bool *empty) {
    (void)g;
    size_t n;
    const size_t *order = mp_graph_order(g_train, &n);
    mp_graph_t *out = (mp_graph_t *)1;
    mp_status s = mp_graph_with_order(g_train, order, &out);
    *empty = s == MP_OK || out == NULL;
    mp_graph_free(s == MP_OK ? out : NULL);
    return s;
}

static mp_status c_exec(const mp_graph_t *g, bool *empty) {
    (void)g;
    mp_exec_opts_t o = {.seed = 3, .plan = &made, .poison = 1};
    mp_exec_result_t r;
    mp_status s = mp_exec_run(g_train, &o, &r);
    static const mp_exec_result_t z;
    *empty = s == MP_OK || !memcmp(&r, &z, sizeof z);
    mp_exec_result_free(&r);
    return s;
}

/* Recomputation (src/remat/): the context, each policy's plan and its
 * evaluation, the transform, and the budget search. */
static const mp_remat_t *g_remat; /* made before the countdown */

static mp_status c_remat_new(const mp_graph_t *g, bool *empty) {
    mp_remat_t *r = (mp_remat_t *)1;
    mp_status s = mp_remat_new(g, NULL, &r);
    *empty = s == MP_OK || r == NULL;
    mp_remat_free(s == MP_OK ? r : NULL);
    return s;
}

static bool remat_plan_empty(const mp_remat_plan_t *p) {
    static const mp_remat_plan_t z;
    return !memcmp(p, &z, sizeof z);
}

static mp_status remat_policy(const char *policy, bool *empty) {
    mp_remat_plan_t p;
    mp_remat_eval_t e;
    mp_status s = mp_remat_policy(g_remat, policy, &p);
    *empty = s == MP_OK || remat_plan_empty(&p);
    if (s == MP_OK) {
        s = mp_remat_evaluate(g_remat, &p, &e);
        static const mp_remat_eval_t z;
        *empty = s == MP_OK || !memcmp(&e, &z, sizeof z);
    }
    mp_remat_plan_free(&p);
    return s;
}

static mp_status c_sqrt(const mp_graph_t *g, bool *e) { (void)g; return remat_policy("sqrt", e); }
static mp_status c_cheap(const mp_graph_t *g, bool *e) { (void)g; return remat_policy("cheap", e); }
static mp_status c_budget(const mp_graph_t *g, bool *e) { (void)g; return remat_policy("budget", e); }
static mp_status c_logn(const mp_graph_t *g, bool *e) { (void)g; return remat_policy("logn=2", e); }
static mp_status c_revolve(const mp_graph_t *g, bool *e) { (void)g; return remat_policy("revolve", e); }
static mp_status c_optimal(const mp_graph_t *g, bool *e) { (void)g; return remat_policy("optimal", e); }

static mp_status c_remat_apply(const mp_graph_t *g, bool *empty) {
    (void)g;
    mp_remat_plan_t p;
    mp_graph_t *out = (mp_graph_t *)1;
    long saved = countdown;
    countdown = -1;   /* the plan itself is made before */
    mp_status s = mp_remat_policy(g_remat, "segments=0", &p);
    countdown = saved;
    if (s == MP_OK) s = mp_remat_apply(g_remat, &p, &out);
    *empty = s == MP_OK || out == NULL;
    mp_graph_free(s == MP_OK ? out : NULL);
    mp_remat_plan_free(&p);
    return s;
}

static mp_status c_remat_fit(const mp_graph_t *g, bool *empty) {
    (void)g;
    mp_remat_plan_t p;
    mp_remat_fit_t f;
    mp_status s = mp_remat_fit(g_remat, NULL, UINT64_MAX, NULL, NULL, &p, &f);
    *empty = s == MP_OK || remat_plan_empty(&p);
    mp_remat_plan_free(&p);
    return s;
}

static const call calls[] = {
    {"mp_graph_load", c_load},         {"mp_graph_backward", c_backward},
    {"share in-place", c_inplace},     {"share", c_share},
    {"share ancestor", c_ancestor},    {"share colour", c_colour},
    {"mp_graph_plan_place", c_place},  {"mp_graph_plan_check", c_check},
    {"mp_graph_order_search", c_order}, {"mp_graph_with_order", c_with_order},
    {"mp_exec_run", c_exec},
    {"mp_remat_new", c_remat_new},     {"remat sqrt", c_sqrt},
    {"remat cheap", c_cheap},          {"remat budget", c_budget},
    {"remat logn=2", c_logn},          {"remat revolve", c_revolve},
    {"remat optimal", c_optimal},      {"mp_remat_apply", c_remat_apply},
    {"mp_remat_fit", c_remat_fit},
};

int main(void) {
    mp_graph_t *fwd, *train;
    if (!MP_CHECK_OK(mp_graph_load("graph/mlp.json", &fwd))) return mp_test_finish("oom-graph");
    mp_backward_opts_t bo = {.add_loss = 1};
    MP_CHECK_OK(mp_graph_backward(fwd, &bo, &train, NULL));
    g_train = train;
    mp_share_opts_t so = {.inplace = 1, .share = 1};
    MP_CHECK_OK(mp_graph_share(train, &so, &made));
    mp_remat_t *remat = NULL;
    MP_CHECK_OK(mp_remat_new(fwd, NULL, &remat));
    g_remat = remat;

    long points = 0;
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        for (long k = 0;; k++, points++) {
            bool empty = false;
            countdown = k;
            mp_status s = calls[c].run(fwd, &empty);
            countdown = -1;
            if (s == MP_OK) break;
            if (!MP_CHECK(s == MP_ENOMEM && empty)) {
                fprintf(stderr, "  %s, allocation %ld: %s (%s)\n", calls[c].name, k,
                        mp_status_name(s), mp_last_error());
                break;
            }
        }
    }
    printf("oom-graph: %ld failure points\n", points);
    mp_graph_plan_free(&made);
    mp_remat_free(remat);
    mp_graph_free(train);
    mp_graph_free(fwd);
    return mp_test_finish("oom-graph");
}
