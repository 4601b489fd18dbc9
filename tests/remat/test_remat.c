/* test_remat.c -- recomputation (src/remat/) proven by execution.
 *
 * Every policy on a uniform tanh chain, a ResNet-style graph, an unrolled
 * LSTM, random DAGs and three corpus models (Release builds): the plan's training graph is
 * shared, placed, checked (mp_graph_plan_check through mp_remat_evaluate),
 * run on its planned arena with NaN poisoning, and its loss and every
 * parameter gradient compared bit for bit with the naive run of the plain
 * training graph; the arena the run used equals the planned peak.  Also:
 * m = 0 gives mp_graph_backward's graph node for node; accumulated
 * gradients equal summed ones bit for bit, with a lower peak; sqrt(n) and log n
 * plans have the memory of sec. 4's formulas on uniform chains; Alg. 3 on a
 * hand-worked chain; the budget contract on random graphs (accepted =>
 * peak <= budget, extra compute non-increasing in the budget, infeasible
 * budgets name the smallest peak); malformed policies. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- graphs -------------------------------------------------------------- */

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t pick(uint64_t n) {   /* xorshift64* */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (rng * 0x2545F4914F6CDD1DULL >> 11) % n;
}

typedef struct bld {
    mp_graph_builder_t *b;
    int failed;
} bld;

static size_t value(bld *g, mp_tensor_kind kind, const char *dtype, size_t rank, const uint64_t *shape) {
    size_t id = 0;
    if (!g->failed && mp_graph_builder_tensor(g->b, NULL, dtype, shape, rank, kind, MP_GRAPH_NONE, &id)) g->failed = 1;
    return id;
}

static size_t apply(bld *g, const char *op, const mp_op_attrs_t *a, size_t n, const size_t *in) {
    size_t out = 0;
    if (!g->failed && mp_graph_builder_op(g->b, op, op, in, n, a, 1, &out, NULL)) {
        fprintf(stderr, "  %s: %s\n", op, mp_last_error());
        g->failed = 1;
    }
    return out;
}
#define A(g, op, ...) apply((g), (op), NULL, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t), (size_t[]){__VA_ARGS__})

/* logits [N, K] -> softmax_xent against an int64 target; the graph. */
static mp_graph_t *close_graph(bld *g, size_t logits, uint64_t n) {
    size_t target = value(g, MP_TENSOR_INPUT, "int64", 1, &n);
    size_t loss = A(g, "softmax_xent", logits, target);
    mp_graph_t *out = NULL;
    if (!g->failed) mp_graph_builder_set_kind(g->b, loss, MP_TENSOR_OUTPUT);
    if (!g->failed && mp_graph_builder_finish(g->b, NULL, &loss, 1, loss, &out))
        fprintf(stderr, "  finish: %s\n", mp_last_error());
    mp_graph_builder_free(g->b);
    return out;
}

static size_t fc(bld *g, size_t x, uint64_t in, uint64_t out) {
    size_t w = value(g, MP_TENSOR_PARAMETER, NULL, 2, (uint64_t[]){out, in});
    size_t b = value(g, MP_TENSOR_PARAMETER, NULL, 1, (uint64_t[]){out});
    return A(g, "linear", x, w, b);
}

/* n uniform stages: x -> tanh -> tanh -> ... (each [4, 16], 256 bytes), a
 * linear classifier at the end.  tanh's gradient reads its output, so the
 * plain step keeps all n values: the chain of sec. 4.3. */
static mp_graph_t *chain(size_t n) {
    bld g = {0};
    mp_graph_builder_new("chain", &g.b);
    size_t x = value(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){4, 16});
    size_t w = value(&g, MP_TENSOR_PARAMETER, NULL, 2, (uint64_t[]){16, 16});
    x = A(&g, "linear", x, w);
    for (size_t i = 0; i < n; i++) x = A(&g, "tanh", x);
    return close_graph(&g, fc(&g, x, 16, 3), 4);
}

static size_t conv_bn_relu(bld *g, size_t x, uint64_t cin, uint64_t cout, int64_t stride, int relu) {
    mp_op_attrs_t a;
    mp_op_attrs_init(&a);
    a.stride[0] = a.stride[1] = stride;
    a.padding[0] = a.padding[1] = 1;
    size_t w = value(g, MP_TENSOR_PARAMETER, NULL, 4, (uint64_t[]){cout, cin, 3, 3});
    size_t y = apply(g, "conv2d", &a, 2, (size_t[]){x, w});
    size_t p[4];
    for (int k = 0; k < 4; k++) p[k] = value(g, MP_TENSOR_PARAMETER, NULL, 1, &cout);
    mp_graph_builder_set_trainable(g->b, p[2], 0);
    mp_graph_builder_set_trainable(g->b, p[3], 0);
    y = A(g, "batchnorm2d", y, p[0], p[1], p[2], p[3]);
    return relu ? A(g, "relu", y) : y;
}

/* blocks basic residual blocks of 6 channels on 6x6, stem and head. */
static mp_graph_t *resnet(size_t blocks) {
    bld g = {0};
    mp_graph_builder_new("resnet", &g.b);
    size_t x = value(&g, MP_TENSOR_INPUT, NULL, 4, (uint64_t[]){2, 3, 6, 6});
    x = conv_bn_relu(&g, x, 3, 6, 1, 1);
    for (size_t i = 0; i < blocks; i++) {
        size_t y = conv_bn_relu(&g, conv_bn_relu(&g, x, 6, 6, 1, 1), 6, 6, 1, 0);
        x = A(&g, "relu", A(&g, "add", y, x));
    }
    x = A(&g, "flatten", A(&g, "adaptive_avgpool2d", x));
    return close_graph(&g, fc(&g, x, 6, 4), 2);
}

/* An LSTM cell unrolled over steps, weights shared. */
static mp_graph_t *lstm(size_t steps) {
    bld g = {0};
    mp_graph_builder_new("lstm", &g.b);
    const uint64_t N = 2, F = 3, H = 4;
    size_t h = value(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){N, H});
    size_t c = value(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){N, H});
    size_t W[4], B[4];
    for (int k = 0; k < 4; k++) {
        W[k] = value(&g, MP_TENSOR_PARAMETER, NULL, 2, (uint64_t[]){H, F + H});
        B[k] = value(&g, MP_TENSOR_PARAMETER, NULL, 1, &H);
    }
    for (size_t t = 0; t < steps; t++) {
        size_t z = A(&g, "concat", value(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){N, F}), h), gate[4];
        for (int k = 0; k < 4; k++) gate[k] = A(&g, "linear", z, W[k], B[k]);
        size_t i = A(&g, "sigmoid", gate[0]), f = A(&g, "sigmoid", gate[1]);
        size_t gg = A(&g, "tanh", gate[2]), o = A(&g, "sigmoid", gate[3]);
        c = A(&g, "add", A(&g, "mul", f, c), A(&g, "mul", i, gg));
        h = A(&g, "mul", o, A(&g, "tanh", c));
    }
    return close_graph(&g, fc(&g, h, H, 5), N);
}

/* A random DAG of [3, 8] values: elementwise ops, linears, joins. */
static mp_graph_t *random_dag(size_t n) {
    static const char *const un[] = {"relu", "tanh", "sigmoid", "gelu", "silu"}, *const bin[] = {"add", "mul", "sub"};
    bld g = {0};
    mp_graph_builder_new("random", &g.b);
    size_t v[64], nv = 0;
    v[nv++] = value(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){3, 8});
    for (size_t i = 0; i < n && nv < 64; i++) {
        size_t x = v[nv - 1 - (pick(3) ? 0 : pick(nv))], y;
        switch (pick(4)) {
        case 0: y = fc(&g, x, 8, 8); break;
        case 1: y = A(&g, bin[pick(3)], x, v[pick(nv)]); break;
        default: y = A(&g, un[pick(5)], x); break;
        }
        v[nv++] = y;
    }
    return close_graph(&g, fc(&g, v[nv - 1], 8, 4), 3);
}

/* ---- proving plans ---------------------------------------------------------- */

static const char *const POLICIES[] = {"none", "sqrt", "cheap", "budget", "logn", "logn=2", "revolve", "optimal"};

/* Runs plan p of r on its planned arena and compares with the naive run
 * of the plain training graph (plain). */
static void prove(const mp_remat_t *r, const mp_remat_plan_t *p, const mp_exec_result_t *plain, const char *what) {
    mp_remat_eval_t e;
    mp_graph_t *g = NULL;
    mp_graph_plan_t gp;
    if (!MP_CHECK_OK(mp_remat_evaluate_full(r, p, &e, &g, &gp))) {
        fprintf(stderr, "  %s %s\n", what, p->policy);
        return;
    }
    MP_CHECK_OK(mp_graph_plan_check(g, &gp, MP_PARALLEL_ANY));
    MP_CHECK(e.lower_bound <= e.peak);
    mp_exec_opts_t o = {.seed = 7, .plan = &gp, .poison = 1};
    mp_exec_result_t res;
    if (MP_CHECK_OK(mp_exec_run(g, &o, &res))) {
        MP_CHECK_EQ_U64(res.arena_bytes, e.peak);
        size_t n, n2;
        const size_t *outs = mp_graph_outputs(g, &n);
        mp_graph_outputs(mp_remat_graph(r), &n2);
        MP_CHECK_EQ_U64(n, n2);
        for (size_t k = 0; k < n; k++) {
            size_t t = outs[k];
            bool same = res.data[t] && plain->data[t] && res.bytes[t] == plain->bytes[t] &&
                        !memcmp(res.data[t], plain->data[t], res.bytes[t]);
            if (!MP_CHECK(same)) fprintf(stderr, "  %s %s: output %zu differs\n", what, p->policy, t);
        }
        mp_exec_result_free(&res);
    }
    mp_graph_plan_free(&gp);
    mp_graph_free(g);
}

/* Every policy on fwd; returns the context (caller frees). */
static mp_remat_t *prove_all(mp_graph_t *fwd, const char *what) {
    mp_remat_t *r = NULL;
    if (!MP_CHECK(fwd != NULL) || !MP_CHECK_OK(mp_remat_new(fwd, NULL, &r))) {
        mp_graph_free(fwd);
        return NULL;
    }
    mp_graph_free(fwd);   /* the context keeps what it needs */
    mp_exec_opts_t o = {.seed = 7, .poison = 1};
    mp_exec_result_t plain;
    if (!MP_CHECK_OK(mp_exec_run(mp_remat_graph(r), &o, &plain))) return r;
    for (size_t i = 0; i < sizeof POLICIES / sizeof *POLICIES; i++) {
        mp_remat_plan_t p;
        mp_status s = mp_remat_policy(r, POLICIES[i], &p);
        if (!MP_CHECK_OK(s)) {
            fprintf(stderr, "  %s %s: %s\n", what, POLICIES[i], mp_last_error());
            continue;
        }
        prove(r, &p, &plain, what);
        mp_remat_plan_free(&p);
    }
    mp_exec_result_free(&plain);
    return r;
}

/* m = 0: the graph is mp_graph_backward's, node for node. */
static void test_identity(void) {
    mp_graph_t *fwd = resnet(2), *t = NULL, *g = NULL;
    mp_remat_t *r = NULL;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    if (!MP_CHECK_OK(mp_graph_backward(fwd, &bo, &t, NULL)) || !MP_CHECK_OK(mp_remat_new(fwd, NULL, &r))) goto out;
    mp_remat_plan_t p;
    if (!MP_CHECK_OK(mp_remat_policy(r, "none", &p))) goto out;
    for (size_t i = 0; i < p.n_actions; i++) MP_CHECK(p.action[i].kind == MP_REMAT_BACKWARD);
    if (MP_CHECK_OK(mp_remat_apply(r, &p, &g))) {
        MP_CHECK_EQ_U64(mp_graph_node_count(g), mp_graph_node_count(t));
        MP_CHECK_EQ_U64(mp_graph_tensor_count(g), mp_graph_tensor_count(t));
        size_t n1, n2;
        const size_t *o1 = mp_graph_order(g, &n1), *o2 = mp_graph_order(t, &n2);
        MP_CHECK(n1 == n2 && !memcmp(o1, o2, n1 * sizeof *o1));
        for (size_t v = 0; v < mp_graph_node_count(t); v++) {
            const mp_graph_node_t *a = mp_graph_node(g, v), *b = mp_graph_node(t, v);
            MP_CHECK(!strcmp(a->op, b->op) && a->n_inputs == b->n_inputs &&
                     (!a->n_inputs || !memcmp(a->inputs, b->inputs, a->n_inputs * sizeof *a->inputs)));
        }
    }
    mp_remat_plan_free(&p);
out:
    mp_graph_free(g);
    mp_graph_free(t);
    mp_graph_free(fwd);
    mp_remat_free(r);
}

/* accumulate (the default of mp_remat_opts_t): each gradient contribution
 * is added as it arrives.  On the LSTM, whose four weights get a
 * contribution from every step, the plain step's peak drops (one running
 * sum instead of every step's contribution at once) and the loss and
 * gradients are bit-identical to the sum_n graph (both add left to right). */
static void test_accumulate(void) {
    mp_graph_t *fwd = lstm(8), *g[2] = {NULL, NULL};
    mp_exec_result_t res[2];
    uint64_t peak[2] = {0, 0};
    for (int acc = 0; acc < 2; acc++) {
        mp_backward_opts_t bo = {.add_loss = 1, .accumulate = acc};
        mp_backward_stats_t st;
        mp_exec_opts_t o = {.seed = 3, .poison = 1};
        memset(&res[acc], 0, sizeof res[acc]);
        if (!MP_CHECK_OK(mp_graph_backward(fwd, &bo, &g[acc], &st))) continue;
        MP_CHECK(st.aggregations > 0);
        MP_CHECK_OK(mp_graph_peak(g[acc], NULL, 0, &peak[acc]));
        MP_CHECK_OK(mp_exec_run(g[acc], &o, &res[acc]));
    }
    if (g[0] && g[1]) {
        fprintf(stderr, "  lstm(8) plain peak: sum_n %llu, accumulate %llu bytes\n", (unsigned long long)peak[0],
                (unsigned long long)peak[1]);
        MP_CHECK(peak[1] < peak[0]);
        size_t n0, n1;
        const size_t *o0 = mp_graph_outputs(g[0], &n0), *o1 = mp_graph_outputs(g[1], &n1);
        MP_CHECK_EQ_U64(n0, n1);
        for (size_t k = 0; k < n0 && k < n1; k++)
            MP_CHECK(res[0].data[o0[k]] && res[1].data[o1[k]] && res[0].bytes[o0[k]] == res[1].bytes[o1[k]] &&
                     !memcmp(res[0].data[o0[k]], res[1].data[o1[k]], res[0].bytes[o0[k]]));
    }
    for (int acc = 0; acc < 2; acc++) {
        mp_exec_result_free(&res[acc]);
        mp_graph_free(g[acc]);
    }
    mp_graph_free(fwd);
}

/* Peak of a policy on the uniform chain of n stages, and its recomputes. */
static uint64_t chain_peak(size_t n, const char *policy, size_t *recomputed, size_t *cuts) {
    mp_remat_t *r = NULL;
    mp_graph_t *fwd = chain(n);
    uint64_t peak = 0;
    mp_remat_plan_t p;
    mp_remat_eval_t e;
    if (MP_CHECK_OK(mp_remat_new(fwd, NULL, &r)) && MP_CHECK_OK(mp_remat_policy(r, policy, &p))) {
        if (MP_CHECK_OK(mp_remat_evaluate(r, &p, &e))) peak = e.peak, *recomputed = e.recomputed;
        mp_remat_cuts(r, cuts);
        mp_remat_plan_free(&p);
    }
    mp_remat_free(r);
    mp_graph_free(fwd);
    return peak;
}

/* sec. 4.3 and 4.4 on n uniform stages of S = 256 bytes: the plain step
 * keeps n values; sqrt(n) keeps ~sqrt(n) segment ends plus one segment of
 * ~sqrt(n) values, recomputing each dropped value once; logn=1 keeps ~log2 n
 * values at each level, recomputing each value ~log2 n times. */
static void test_formulas(void) {
    const uint64_t S = 256;
    size_t rec, cuts;
    for (size_t n = 16; n <= 144; n *= 3) {
        uint64_t none = chain_peak(n, "none", &rec, &cuts);
        MP_CHECK(cuts >= n);              /* every tanh is a cut */
        MP_CHECK(none >= n * S);
        uint64_t sq = chain_peak(n, "sqrt", &rec, &cuts);
        double rn = sqrt((double)n), l2 = log2((double)n);
        MP_CHECK(sq <= (uint64_t)((2 * rn + 8) * (double)S));
        MP_CHECK(rec <= n + 2);           /* at most one extra forward pass */
        uint64_t lg = chain_peak(n, "logn", &rec, &cuts);
        MP_CHECK(lg <= (uint64_t)((2 * l2 + 8) * (double)S));
        MP_CHECK((double)rec <= (l2 + 1) * (double)(n + 2));
        fprintf(stderr, "  chain %zu: none %llu, sqrt %llu, logn %llu bytes (recomputed %zu)\n", n,
                (unsigned long long)none, (unsigned long long)sq, (unsigned long long)lg, rec);
        MP_CHECK(lg < sq && sq < none);
    }
}

/* n linear layers [4, 16] -> [4, 16], a classifier: every layer a stage. */
static mp_graph_t *linears(size_t n) {
    bld g = {0};
    mp_graph_builder_new("linears", &g.b);
    size_t x = value(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){4, 16});
    for (size_t i = 0; i < n; i++) x = fc(&g, x, 16, 16);
    return close_graph(&g, fc(&g, x, 16, 3), 4);
}

/* A chain schedule's plan drops the recomputations nobody reads: on a
 * chain of linears, "recompute stage i, then its gradients" for every i
 * would be one forward pass, but a linear's gradient reads its input (the
 * previous stage's output, still the first pass's) and not its output, so
 * none of those copies is read and the plan recomputes nothing -- with the
 * same gradients.  The chain model knows it: each stage's grad_flops (a run
 * right before its own BACKWARD) is 0, and so is the modelled cost. */
static void test_chain_prune(void) {
    mp_graph_t *fwd = linears(8);
    mp_remat_t *r = NULL;
    mp_chain_t c;
    if (!MP_CHECK_OK(mp_remat_new(fwd, NULL, &r)) || !MP_CHECK_OK(mp_remat_chain(r, &c))) goto out;
    MP_CHECK(c.n >= 9);
    mp_chain_op_t *ops = malloc(3 * c.n * sizeof *ops);
    size_t n_ops = 0;
    uint64_t peak, modelled;
    for (size_t i = 0; i < c.n; i++) ops[n_ops++] = (mp_chain_op_t){MP_CHAIN_FORWARD, i};
    for (size_t i = c.n; i-- > 0;) {
        ops[n_ops++] = (mp_chain_op_t){MP_CHAIN_FORWARD, i};
        ops[n_ops++] = (mp_chain_op_t){MP_CHAIN_BACKWARD, i};
    }
    MP_CHECK_OK(mp_chain_simulate(&c, ops, n_ops, &peak, &modelled));
    MP_CHECK(c.grad_flops != NULL);
    for (size_t i = 0; c.grad_flops && i + 1 < c.n; i++) MP_CHECK(c.grad_flops[i] == 0 && c.fwd_flops[i] > 0);
    MP_CHECK_EQ_U64(modelled, 0);
    mp_remat_plan_t p;
    mp_remat_eval_t e;
    if (MP_CHECK_OK(mp_remat_plan_chain(r, &c, ops, n_ops, "recompute-before-gradient", &p))) {
        if (MP_CHECK_OK(mp_remat_evaluate(r, &p, &e))) MP_CHECK(e.recomputed == 0 && e.extra_flops == 0);
        mp_exec_opts_t o = {.seed = 7, .poison = 1};
        mp_exec_result_t plain;
        if (MP_CHECK_OK(mp_exec_run(mp_remat_graph(r), &o, &plain))) {
            prove(r, &p, &plain, "linears");
            mp_exec_result_free(&plain);
        }
        mp_remat_plan_free(&p);
    }
    free(ops);
    mp_chain_free(&c);
out:
    mp_remat_free(r);
    mp_graph_free(fwd);
}

/* Alg. 3 by hand on the chain of 4 tanh stages (after linear): forward
 * steps 0 linear (256 B), 1-4 tanh (256 B each), 5 linear [4,3] (48 B),
 * 6 softmax_xent (4 B).  Cuts: steps 0..5 (each value is the only one
 * crossing).  With B = 600: temp 256, 512, 768 > 600 at step 2 -> keep
 * step 2, x = 256, y = 768, temp 0; then 256, 512, 560 at step 5 (560 <=
 * 600); the last stage adds 4 -> y = max(768, 564) = 768.  So m = 0 only at
 * step 2 (and the forced loss), x = 256, y = 768.  With B = 0 every cut is
 * kept: x = 6 cuts' bytes = 5*256 + 48 = 1328, y = 256; B0 = sqrt(x*y) =
 * sqrt(339968) = 583.07 -> 583. */
static void test_alg3(void) {
    mp_graph_t *fwd = chain(4);
    mp_remat_t *r = NULL;
    if (!MP_CHECK_OK(mp_remat_new(fwd, NULL, &r))) goto out;
    size_t nf = mp_remat_forward_count(r);
    MP_CHECK_EQ_U64(nf, 7);
    uint32_t m[7];
    uint64_t x, y;
    MP_CHECK_OK(mp_remat_alg3(r, 600, m, &x, &y));
    MP_CHECK_EQ_U64(x, 256);
    MP_CHECK_EQ_U64(y, 768);
    const size_t *order = mp_graph_order(mp_remat_graph(r), &nf);
    for (size_t s = 0; s < 6; s++) MP_CHECK_EQ_U64(m[order[s]], s == 2 ? 0 : 1);
    MP_CHECK_OK(mp_remat_alg3(r, 0, m, &x, &y));
    MP_CHECK_EQ_U64(x, 1328);
    MP_CHECK_EQ_U64(y, 256);
    mp_remat_plan_t p;
    if (MP_CHECK_OK(mp_remat_policy(r, "budget", &p))) {
        MP_CHECK(strstr(p.policy, "budget B=") != NULL);
        mp_remat_plan_free(&p);
    }
out:
    mp_remat_free(r);
    mp_graph_free(fwd);
}

/* The budget contract on a graph: budgets from below the smallest peak to
 * above the plain one. */
static void test_budget(mp_graph_t *fwd, const char *what) {
    mp_remat_t *r = NULL;
    if (!MP_CHECK_OK(mp_remat_new(fwd, NULL, &r))) {
        mp_graph_free(fwd);
        return;
    }
    mp_graph_free(fwd);
    mp_remat_plan_t p;
    mp_remat_fit_t fit;
    mp_status s = mp_remat_fit(r, NULL, 1, NULL, NULL, &p, &fit);
    MP_CHECK(s == MP_EINVAL && !fit.feasible && p.action == NULL);
    char want[64];
    snprintf(want, sizeof want, "is %llu bytes", (unsigned long long)fit.min_peak);
    MP_CHECK(strstr(mp_last_error(), want) != NULL);
    uint64_t lo = fit.min_peak, prev_extra = UINT64_MAX;
    mp_remat_eval_t e0;
    MP_CHECK_OK(mp_remat_policy(r, "none", &p));
    MP_CHECK_OK(mp_remat_evaluate(r, &p, &e0));
    mp_remat_plan_free(&p);
    MP_CHECK(lo <= e0.peak);
    if (lo > 1) {
        s = mp_remat_fit(r, NULL, lo - 1, NULL, NULL, &p, &fit);
        MP_CHECK(s == MP_EINVAL);
    }
    for (int k = 0; k <= 4; k++) {
        uint64_t budget = lo + (e0.peak - lo) * (uint64_t)k / 4;
        if (!MP_CHECK_OK(mp_remat_fit(r, NULL, budget, NULL, NULL, &p, &fit))) continue;
        mp_remat_eval_t e;
        MP_CHECK_OK(mp_remat_evaluate(r, &p, &e));   /* measured again, independently */
        if (!MP_CHECK(e.peak <= budget && e.peak == fit.eval.peak))
            fprintf(stderr, "  %s: budget %llu, plan %s peaks at %llu\n", what, (unsigned long long)budget, p.policy,
                    (unsigned long long)e.peak);
        MP_CHECK(e.extra_flops <= prev_extra);
        prev_extra = e.extra_flops;
        mp_remat_plan_free(&p);
    }
    MP_CHECK_EQ_U64(prev_extra, 0);   /* at the plain peak nothing is recomputed */
    mp_remat_free(r);
}

static void test_errors(void) {
    mp_graph_t *fwd = chain(4);
    mp_remat_t *r = NULL;
    if (!MP_CHECK_OK(mp_remat_new(fwd, NULL, &r))) goto out;
    static const char *const bad[] = {"nope", "segments", "segments=", "segments=1,x", "segments=99",
                                      "segments=1,", "logn=0", "logn=k", "revolve=-1", "sqrtx"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mp_remat_plan_t p;
        if (!MP_CHECK(mp_remat_policy(r, bad[i], &p) == MP_EINVAL && p.action == NULL))
            fprintf(stderr, "  accepted '%s'\n", bad[i]);
        MP_CHECK(strstr(mp_last_error(), "policy") != NULL);
    }
    mp_remat_plan_t p;
    if (MP_CHECK_OK(mp_remat_policy(r, "segments=1,3", &p))) {
        p.action[p.n_actions - 1].kind = MP_REMAT_RECOMPUTE;   /* a gradient missing */
        mp_graph_t *g = NULL;
        MP_CHECK(mp_remat_apply(r, &p, &g) == MP_EINVAL && g == NULL);
        mp_remat_plan_free(&p);
    }
    /* a training graph is refused */
    mp_graph_t *t = NULL;
    mp_remat_t *r2 = NULL;
    mp_backward_opts_t bo = {0};
    if (MP_CHECK_OK(mp_graph_backward(fwd, &bo, &t, NULL))) {
        MP_CHECK(mp_remat_new(t, NULL, &r2) == MP_EINVAL && r2 == NULL);
        MP_CHECK(strstr(mp_last_error(), "already has gradients") != NULL);
    }
    mp_graph_free(t);
out:
    mp_remat_free(r);
    mp_graph_free(fwd);
}

static void test_corpus(const char *model) {
    char path[256];
    snprintf(path, sizeof path, "../bench/corpus/inference/%s.graph.json.gz", model);
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_load(path, &g))) return;
    if (mp_exec_supported(g) != MP_OK) {
        fprintf(stderr, "  %s: not executable (%s)\n", model, mp_last_error());
        mp_graph_free(g);
        return;
    }
    mp_remat_free(prove_all(g, model));
    fprintf(stderr, "  %s: every policy bit-identical\n", model);
}

int main(int argc, char **argv) {
    (void)argc;
    (void)argv;
    test_identity();
    test_accumulate();
    test_alg3();
    test_chain_prune();
    test_errors();
    test_formulas();
    mp_remat_free(prove_all(chain(12), "chain"));
    mp_remat_free(prove_all(resnet(4), "resnet"));
    mp_remat_free(prove_all(lstm(6), "lstm"));
    for (int i = 0; i < 12; i++) mp_remat_free(prove_all(random_dag(6 + (size_t)i * 2), "random"));
    for (int i = 0; i < 2; i++) test_budget(random_dag(10 + (size_t)i * 6), "random");
    test_budget(resnet(3), "resnet");
    test_budget(lstm(5), "lstm");
#if defined(MP_DEBUG) || defined(__SANITIZE_ADDRESS__)
    /* Debug/ASan builds run the corpus models only on request (~minutes). */
    if (argc > 1 || getenv("MP_TEST_SLOW"))
#endif
    {
        test_corpus("resnet18");
        test_corpus("squeezenet1_1");
        test_corpus("mobilenet_v2");
    }
    /* MP_TEST_SLOW=1 (Release: about ten minutes): every other corpus model
     * the executor runs whose plain step stays under 400 MB. */
    if (getenv("MP_TEST_SLOW")) {
        static const char *const more[] = {"alexnet", "convnext_tiny", "densenet121", "efficientnet_b0",
                                           "googlenet", "inception_v3", "mobilenet_v3_large",
                                           "mobilenet_v3_small", "regnet_y_400mf", "resnet34", "resnet50",
                                           "resnet101", "resnet152", "shufflenet_v2_x1_0", "squeezenet1_0",
                                           "vgg16", "vgg19"};
        for (size_t i = 0; i < sizeof more / sizeof *more; i++) test_corpus(more[i]);
    }
    return mp_test_finish("test_remat");
}
