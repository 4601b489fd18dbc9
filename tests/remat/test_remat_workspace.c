/* test_remat_workspace.c -- per-op workspace (attrs.workspace and
 * attrs.backward_workspace, docs/graph-format.md) in training graphs and
 * recomputation plans.
 *
 * On the hand-sized MLP of tests/graph/mlp.json, a workspace W far larger
 * than every value is put on one node (its forward run, its backward node,
 * or a recomputed copy).  The plan's lower bound must then be W plus the
 * bytes the same plan holds at that node's step without the workspace,
 * counted here from the plain plan's own records (not from the code under
 * test): without the term it stays below W.  Every plan is checked
 * (mp_remat_evaluate_full, mp_graph_plan_check) and run by the executor on
 * its planned arena, its outputs compared bit for bit with the plain
 * training graph's. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W_FWD (1u << 20)
#define W_BWD (3u << 20)

/* mlp.json with workspaces on relu (forward) and fc2 (backward); 0: none. */
static mp_graph_t *mlp(uint64_t relu_ws, uint64_t fc2_bwd_ws) {
    char text[4096];
    snprintf(text, sizeof text,
             "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"mlp\"},\"tensors\":["
             "{\"id\":0,\"name\":\"x\",\"shape\":[4,8],\"dtype\":\"float32\",\"bytes\":128,\"kind\":\"input\",\"alias_of\":null},"
             "{\"id\":1,\"name\":\"w1\",\"shape\":[16,8],\"dtype\":\"float32\",\"bytes\":512,\"kind\":\"parameter\",\"alias_of\":null,\"trainable\":true},"
             "{\"id\":2,\"name\":\"b1\",\"shape\":[16],\"dtype\":\"float32\",\"bytes\":64,\"kind\":\"parameter\",\"alias_of\":null,\"trainable\":true},"
             "{\"id\":3,\"name\":\"h1\",\"shape\":[4,16],\"dtype\":\"float32\",\"bytes\":256,\"kind\":\"activation\",\"alias_of\":null},"
             "{\"id\":4,\"name\":\"h2\",\"shape\":[4,16],\"dtype\":\"float32\",\"bytes\":256,\"kind\":\"activation\",\"alias_of\":null},"
             "{\"id\":5,\"name\":\"w2\",\"shape\":[3,16],\"dtype\":\"float32\",\"bytes\":192,\"kind\":\"parameter\",\"alias_of\":null,\"trainable\":true},"
             "{\"id\":6,\"name\":\"logits\",\"shape\":[4,3],\"dtype\":\"float32\",\"bytes\":48,\"kind\":\"output\",\"alias_of\":null}],"
             "\"nodes\":["
             "{\"id\":0,\"name\":\"fc1\",\"op\":\"linear\",\"inputs\":[0,1,2],\"outputs\":[3]},"
             "{\"id\":1,\"name\":\"relu\",\"op\":\"relu\",\"inputs\":[3],\"outputs\":[4],\"attrs\":{\"workspace\":%llu}},"
             "{\"id\":2,\"name\":\"fc2\",\"op\":\"linear\",\"inputs\":[4,5],\"outputs\":[6],\"attrs\":{\"backward_workspace\":%llu}}],"
             "\"order\":[0,1,2],\"outputs\":[6],\"loss\":null}",
             (unsigned long long)relu_ws, (unsigned long long)fc2_bwd_ws);
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_parse(text, strlen(text), "mlp-ws", &g))) fprintf(stderr, "  %s\n", mp_last_error());
    return g;
}

static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static size_t node_named(const mp_graph_t *g, const char *name) {
    for (size_t v = 0; v < mp_graph_node_count(g); v++)
        if (!strcmp(mp_graph_node(g, v)->name, name)) return v;
    return MP_GRAPH_NONE;
}

/* Bytes the checked plan (g, gp) holds at the reading half-step of `step`
 * (mp_graph_plan_records: step s is half-step 2s). */
static uint64_t live_at(const mp_graph_t *g, const mp_graph_plan_t *gp, size_t step) {
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_plan_t pl;
    uint64_t sum = 0;
    if (MP_CHECK_OK(mp_graph_plan_records(g, gp, &b, &n, &pl)))
        for (size_t i = 0; i < n; i++)
            if (b[i].first <= 2 * step && 2 * step <= b[i].last) sum += b[i].size;
    free(b);
    mp_plan_free(&pl);
    return sum;
}

/* Evaluates plan m (mirror counts; NULL: none) of fwd, proves it by the
 * executor against the plain step, and returns its lower bound; *graph and
 * *plan handed over when not NULL. */
static uint64_t evaluate(const mp_graph_t *fwd, const uint32_t *m, mp_graph_t **graph, mp_graph_plan_t *plan,
                         size_t *scratches) {
    mp_remat_t *r = NULL;
    mp_remat_eval_t e = {0};
    mp_graph_t *g = NULL;
    mp_graph_plan_t gp;
    memset(&gp, 0, sizeof gp);
    if (!fwd || !MP_CHECK_OK(mp_remat_new(fwd, NULL, &r))) return 0;
    uint32_t none[8] = {0};
    mp_remat_plan_t p;
    if (MP_CHECK_OK(mp_remat_plan_mirror(r, m ? m : none, "test", &p))) {
        if (MP_CHECK_OK(mp_remat_evaluate_full(r, &p, &e, &g, &gp))) {
            MP_CHECK_OK(mp_graph_plan_check(g, &gp, MP_PARALLEL_ANY));
            MP_CHECK(e.lower_bound <= e.peak);
            mp_exec_opts_t o = {.seed = 7, .plan = &gp, .poison = 1};
            mp_exec_opts_t naive = {.seed = 7, .poison = 1};
            mp_exec_result_t res, plain;
            if (MP_CHECK_OK(mp_exec_run(g, &o, &res))) {
                MP_CHECK_EQ_U64(res.arena_bytes, e.peak);
                if (MP_CHECK_OK(mp_exec_run(mp_remat_graph(r), &naive, &plain))) {
                    size_t n;
                    const size_t *outs = mp_graph_outputs(g, &n);
                    for (size_t k = 0; k < n; k++) {
                        size_t t = outs[k];
                        MP_CHECK(res.data[t] && plain.data[t] && res.bytes[t] == plain.bytes[t] &&
                                 !memcmp(res.data[t], plain.data[t], res.bytes[t]));
                    }
                    mp_exec_result_free(&plain);
                }
                mp_exec_result_free(&res);
            }
            *scratches = 0;
            for (size_t v = 0; v < mp_graph_node_count(g); v++) {
                size_t t = mp_graph_node(g, v)->scratch;
                if (t != MP_GRAPH_NONE) ++*scratches;
            }
        }
        mp_remat_plan_free(&p);
    }
    mp_remat_free(r);
    if (graph) *graph = g;
    else mp_graph_free(g);
    if (plan) *plan = gp;
    else mp_graph_plan_free(&gp);
    return e.lower_bound;
}

/* The plain plan of mlp() and the lower bound with one workspace: W plus
 * the most the plain plan holds at the steps of the nodes named in `names`
 * (nodes of the plain plan's graph: "re:relu" for a recomputed copy). */
static void expect(const char *what, const uint32_t *m, const char *const *names, uint64_t relu_ws,
                   uint64_t bwd_ws, size_t want_scratches) {
    mp_graph_t *plain_fwd = mlp(0, 0), *ws_fwd = mlp(relu_ws, bwd_ws), *g0 = NULL;
    mp_graph_plan_t gp0;
    size_t n0 = 0, n1 = 0;
    uint64_t lb0 = evaluate(plain_fwd, m, &g0, &gp0, &n0);
    uint64_t lb1 = evaluate(ws_fwd, m, NULL, NULL, &n1);
    uint64_t w = relu_ws + bwd_ws, held = 0;
    for (size_t i = 0; g0 && names[i]; i++) {
        size_t v = node_named(g0, names[i]);
        if (MP_CHECK(v != MP_GRAPH_NONE)) held = max_u64(held, live_at(g0, &gp0, mp_graph_node(g0, v)->step));
    }
    if (!MP_CHECK_EQ_U64(lb1, w + held)) fprintf(stderr, "  %s: %llu held beside it\n", what, (unsigned long long)held);
    MP_CHECK(lb0 < w);
    MP_CHECK_EQ_U64(n0, 0);
    if (!MP_CHECK_EQ_U64(n1, want_scratches)) fprintf(stderr, "  %s: scratch tensors\n", what);
    mp_graph_plan_free(&gp0);
    mp_graph_free(g0);
    mp_graph_free(plain_fwd);
    mp_graph_free(ws_fwd);
}

/* The loader's checks of "scratch" and the workspace attrs, each with the
 * file and field it names; a saved training graph keeps its scratch. */
static void test_format(void) {
    static const struct {
        const char *nodes, *outputs, *want;
    } bad[] = {
        {"{\"id\":0,\"op\":\"relu\",\"inputs\":[0],\"outputs\":[1],\"scratch\":2},"
         "{\"id\":1,\"op\":\"relu\",\"inputs\":[2],\"outputs\":[3]}",
         "[3]", "t.json: nodes[1].inputs[0]: tensor 2 is node 0's scratch, which no node reads"},
        {"{\"id\":0,\"op\":\"relu\",\"inputs\":[0],\"outputs\":[1],\"scratch\":2},"
         "{\"id\":1,\"op\":\"relu\",\"inputs\":[1],\"outputs\":[3]}",
         "[3,2]", "t.json: outputs: tensor 2 is node 0's scratch, which is no output"},
        {"{\"id\":0,\"op\":\"relu\",\"inputs\":[0],\"outputs\":[1],\"scratch\":0},"
         "{\"id\":1,\"op\":\"relu\",\"inputs\":[1],\"outputs\":[3]}",
         "[3]", "t.json: nodes[0].scratch: tensor 0 'x' must be an activation that owns its memory"},
        {"{\"id\":0,\"op\":\"relu\",\"inputs\":[0],\"outputs\":[1]},"
         "{\"id\":1,\"op\":\"relu\",\"inputs\":[1],\"outputs\":[3],\"scratch\":1}",
         "[3]", "t.json: nodes[1].scratch: tensor 1 is already produced by node 0 ''"},
        {"{\"id\":0,\"op\":\"relu\",\"inputs\":[0],\"outputs\":[1],\"attrs\":{\"workspace\":\"big\"}},"
         "{\"id\":1,\"op\":\"relu\",\"inputs\":[1],\"outputs\":[3]}",
         "[3]", "t.json: nodes[0].attrs.workspace: expected an integer, got a string"},
        {"{\"id\":0,\"op\":\"relu\",\"inputs\":[0],\"outputs\":[1],\"attrs\":{\"backward_workspace\":-1}},"
         "{\"id\":1,\"op\":\"relu\",\"inputs\":[1],\"outputs\":[3]}",
         "[3]", "t.json: nodes[0].attrs.backward_workspace: "},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[2048];
        snprintf(text, sizeof text,
                 "{\"format\":\"memplan-graph/1\",\"tensors\":["
                 "{\"id\":0,\"name\":\"x\",\"shape\":[4],\"dtype\":\"float32\",\"bytes\":16,\"kind\":\"input\",\"alias_of\":null},"
                 "{\"id\":1,\"shape\":[4],\"dtype\":\"float32\",\"bytes\":16,\"kind\":\"activation\",\"alias_of\":null},"
                 "{\"id\":2,\"shape\":[100],\"dtype\":\"uint8\",\"bytes\":100,\"kind\":\"activation\",\"alias_of\":null},"
                 "{\"id\":3,\"shape\":[4],\"dtype\":\"float32\",\"bytes\":16,\"kind\":\"output\",\"alias_of\":null}],"
                 "\"nodes\":[%s],\"order\":[0,1],\"outputs\":%s}",
                 bad[i].nodes, bad[i].outputs);
        mp_graph_t *g = NULL;
        mp_status s = mp_graph_parse(text, strlen(text), "t.json", &g);
        MP_CHECK(s == MP_EPARSE && g == NULL);
        if (!MP_CHECK(strncmp(mp_last_error(), bad[i].want, strlen(bad[i].want)) == 0))
            fprintf(stderr, "  case %zu: %s\n", i, mp_last_error());
    }
    /* A training graph with scratch tensors saved and loaded again: the
     * same scratch, its lifetime the node's step alone. */
    mp_graph_t *fwd = mlp(W_FWD, W_BWD), *train = NULL, *back = NULL;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    char dir[] = "/tmp/mp_ws_XXXXXX";
    if (fwd && MP_CHECK_OK(mp_graph_backward(fwd, &bo, &train, NULL)) && MP_CHECK(mkdtemp(dir) != NULL)) {
        const char *path = mp_test_path(dir, "train.json");
        if (MP_CHECK_OK(mp_graph_save(train, path)) && MP_CHECK_OK(mp_graph_load(path, &back))) {
            size_t nt = mp_graph_tensor_count(back), found = 0;
            MP_CHECK_EQ_U64(nt, mp_graph_tensor_count(train));
            uint64_t *first = calloc(nt, sizeof *first), *last = calloc(nt, sizeof *last);
            if (first && last) mp_graph_lifetimes(back, first, last);
            for (size_t v = 0; first && last && v < mp_graph_node_count(back); v++) {
                const mp_graph_node_t *nd = mp_graph_node(back, v);
                MP_CHECK_EQ_U64(nd->scratch, mp_graph_node(train, v)->scratch);
                if (nd->scratch == MP_GRAPH_NONE) continue;
                found++;
                MP_CHECK_EQ_U64(first[nd->scratch], nd->step);
                MP_CHECK_EQ_U64(last[nd->scratch], nd->step);
                MP_CHECK_EQ_U64(mp_graph_tensor(back, nd->scratch)->producer, v);
            }
            MP_CHECK_EQ_U64(found, 2);   /* relu's, and fc2's backward node's */
            free(first);
            free(last);
            remove(path);
        }
        remove(dir);
    }
    mp_graph_free(back);
    mp_graph_free(train);
    mp_graph_free(fwd);
}

int main(void) {
    test_format();
    /* the forward run of relu; its backward node; fc2's backward node */
    expect("forward", NULL, (const char *[]){"relu", NULL}, W_FWD, 0, 1);
    expect("backward", NULL, (const char *[]){"bwd:fc2", NULL}, 0, W_BWD, 1);
    /* relu dropped and recomputed: its copy holds the workspace again, at
     * the copy's step, as well as the first run at its own */
    uint32_t m[8] = {0, 1, 0};
    expect("recompute", m, (const char *[]){"relu", "re:relu", NULL}, W_FWD, 0, 2);
    return mp_test_finish("test_remat_workspace");
}
