/* test_exec.c -- the reference executor proves graph plans.
 *
 * For random forward graphs (chains and DAGs of conv2d, batch norm,
 * activations, add/sub/mul with broadcasting, concat, pooling, ending in
 * linear + softmax_xent), a ResNet-style graph and an unrolled LSTM with
 * shared weights: build the training graph (mp_graph_backward), plan it
 * (mp_graph_share with in-place and sharing, then re-placed with
 * greedy-size and auto, and with the parameters in the arena), check every
 * plan with mp_graph_plan_check, run it with poison and compare every
 * output (loss, logits, each parameter gradient) with the naive run byte
 * for byte.  The gradients agree with central finite differences of the
 * loss.  A plan that lets a live tensor be overwritten is caught; a plan
 * for another graph and an op without kernel are refused.  In Release
 * builds, the corpus resnet18 and mobilenet_v2 inference graphs run
 * planned and naive with identical outputs. */
#include "harness.h"
#include "exec/exec_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- building graphs ------------------------------------------------------ */

static uint64_t rng = 0x243F6A8885A308D3ULL;

static uint64_t next_u64(void) {   /* splitmix64 */
    uint64_t z = (rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static uint64_t pick(uint64_t n) { return next_u64() % n; }

typedef struct gb {
    mp_graph_builder_t *b;
    int failed;
    size_t n;   /* names */
} gb;

static size_t tensor(gb *g, mp_tensor_kind kind, const char *dtype, size_t rank, const uint64_t *shape) {
    char name[32];
    snprintf(name, sizeof name, "%s%zu", kind == MP_TENSOR_PARAMETER ? "p" : "in", g->n++);
    size_t id = 0;
    if (mp_graph_builder_tensor(g->b, name, dtype, shape, rank, kind, MP_GRAPH_NONE, &id) != MP_OK) {
        fprintf(stderr, "  tensor: %s\n", mp_last_error());
        g->failed = 1;
    }
    return id;
}
#define PARAM(g, ...) \
    tensor((g), MP_TENSOR_PARAMETER, NULL, sizeof((uint64_t[]){__VA_ARGS__}) / 8, (uint64_t[]){__VA_ARGS__})

/* op on inputs in[0..n) with attrs a (NULL: defaults); its one output. */
static size_t op(gb *g, const char *name, const size_t *in, size_t n, const mp_op_attrs_t *a) {
    char nm[32];
    snprintf(nm, sizeof nm, "%s%zu", name, g->n++);
    size_t out = 0;
    if (g->failed) return 0;
    if (mp_graph_builder_op(g->b, nm, name, in, n, a, 1, &out, NULL) != MP_OK) {
        fprintf(stderr, "  op %s: %s\n", name, mp_last_error());
        g->failed = 1;
    }
    return out;
}
#define OP(g, name, a, ...) op((g), (name), (size_t[]){__VA_ARGS__}, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t), (a))

static mp_op_attrs_t attrs(void) {
    mp_op_attrs_t a;
    mp_op_attrs_init(&a);
    return a;
}

static uint64_t dim(gb *g, size_t t, size_t i) {
    uint64_t s[MP_MAX_RANK];
    size_t r;
    if (mp_graph_builder_shape(g->b, t, s, &r) != MP_OK || i >= r) {
        g->failed = 1;
        return 1;
    }
    return s[i];
}

static size_t conv(gb *g, size_t x, uint64_t o, int64_t k, int64_t stride, int64_t pad,
                   int64_t dil, int64_t groups, int bias) {
    mp_op_attrs_t a = attrs();
    a.stride[0] = a.stride[1] = stride;
    a.padding[0] = a.padding[1] = pad;
    a.dilation[0] = a.dilation[1] = dil;
    a.groups = groups;
    uint64_t c = dim(g, x, 1);
    size_t w = PARAM(g, o, c / (uint64_t)groups, (uint64_t)k, (uint64_t)k);
    if (bias) return OP(g, "conv2d", &a, x, w, PARAM(g, o));
    return OP(g, "conv2d", &a, x, w);
}

static size_t bn(gb *g, size_t x) {
    uint64_t c = dim(g, x, 1);
    size_t w = PARAM(g, c), b = PARAM(g, c), rm = PARAM(g, c), rv = PARAM(g, c);
    mp_graph_builder_set_trainable(g->b, rm, 0);
    mp_graph_builder_set_trainable(g->b, rv, 0);
    return OP(g, "batchnorm2d", NULL, x, w, b, rm, rv);
}

static size_t linear(gb *g, size_t x, uint64_t out) {
    uint64_t in = dim(g, x, 1);
    return OP(g, "linear", NULL, x, PARAM(g, out, in), PARAM(g, out));
}

/* Appends softmax_xent of logits [N, K] and finishes: outputs loss, logits. */
static mp_graph_t *finish(gb *g, size_t logits) {
    uint64_t n = dim(g, logits, 0);
    size_t target = tensor(g, MP_TENSOR_INPUT, "int64", 1, &n);
    size_t loss = OP(g, "softmax_xent", NULL, logits, target);
    mp_graph_t *out = NULL;
    if (!g->failed) {
        mp_graph_builder_set_kind(g->b, loss, MP_TENSOR_OUTPUT);
        mp_graph_builder_set_kind(g->b, logits, MP_TENSOR_OUTPUT);
        if (mp_graph_builder_finish(g->b, NULL, (size_t[]){loss, logits}, 2, loss, &out) != MP_OK)
            fprintf(stderr, "  finish: %s\n", mp_last_error());
    }
    mp_graph_builder_free(g->b);
    return out;
}

static void begin(gb *g, const char *model) {
    memset(g, 0, sizeof *g);
    if (mp_graph_builder_new(model, &g->b) != MP_OK) g->failed = 1;
}

/* ResNet-style: conv-bn-relu stem, maxpool, a basic block, a downsampling
 * block with a 1x1 projection, adaptive average pooling, flatten, linear. */
static mp_graph_t *build_resnet(void) {
    gb g;
    begin(&g, "resnet-mini");
    size_t x = tensor(&g, MP_TENSOR_INPUT, NULL, 4, (uint64_t[]){2, 3, 12, 12});
    mp_op_attrs_t mp = attrs();
    mp.kernel[0] = mp.kernel[1] = 3;
    mp.stride[0] = mp.stride[1] = 2;
    mp.padding[0] = mp.padding[1] = 1;
    size_t h = OP(&g, "maxpool2d", &mp, OP(&g, "relu", NULL, bn(&g, conv(&g, x, 8, 3, 1, 1, 1, 1, 0))));
    /* block 1: 8 -> 8 */
    size_t y = OP(&g, "relu", NULL, bn(&g, conv(&g, h, 8, 3, 1, 1, 1, 1, 0)));
    y = bn(&g, conv(&g, y, 8, 3, 1, 1, 1, 1, 0));
    h = OP(&g, "relu", NULL, OP(&g, "add", NULL, y, h));
    /* block 2: 8 -> 16, stride 2, projection shortcut */
    y = OP(&g, "relu", NULL, bn(&g, conv(&g, h, 16, 3, 2, 1, 1, 1, 0)));
    y = bn(&g, conv(&g, y, 16, 3, 1, 1, 1, 1, 0));
    size_t sc = bn(&g, conv(&g, h, 16, 1, 2, 0, 1, 1, 0));
    h = OP(&g, "relu", NULL, OP(&g, "add", NULL, y, sc));
    size_t p = OP(&g, "adaptive_avgpool2d", NULL, h);
    return finish(&g, linear(&g, OP(&g, "flatten", NULL, p), 5));
}

/* An unrolled LSTM over T steps sharing its weights: per step four linears
 * on [x_t, h] for the gates, sigmoid/tanh, c = f c + i g, h = o tanh(c);
 * then a linear classifier on the last h. */
static mp_graph_t *build_lstm(size_t steps) {
    gb g;
    begin(&g, "lstm-mini");
    const uint64_t N = 2, F = 3, H = 4;
    size_t h = tensor(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){N, H});
    size_t c = tensor(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){N, H});
    size_t W[4], B[4];
    for (int k = 0; k < 4; k++) W[k] = PARAM(&g, H, F + H), B[k] = PARAM(&g, H);
    for (size_t t = 0; t < steps; t++) {
        size_t xt = tensor(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){N, F});
        size_t z = OP(&g, "concat", NULL, xt, h);
        size_t gate[4];
        for (int k = 0; k < 4; k++) gate[k] = OP(&g, "linear", NULL, z, W[k], B[k]);
        size_t i = OP(&g, "sigmoid", NULL, gate[0]), f = OP(&g, "sigmoid", NULL, gate[1]);
        size_t gg = OP(&g, "tanh", NULL, gate[2]), o = OP(&g, "sigmoid", NULL, gate[3]);
        c = OP(&g, "add", NULL, OP(&g, "mul", NULL, f, c), OP(&g, "mul", NULL, i, gg));
        h = OP(&g, "mul", NULL, o, OP(&g, "tanh", NULL, c));
    }
    return finish(&g, linear(&g, OP(&g, "relu", NULL, linear(&g, h, 6)), 5));
}

/* A random DAG of 4-D ops ending in a classifier. */
static mp_graph_t *build_random(int idx) {
    gb g;
    begin(&g, "random");
    size_t vals[32], nv = 0;
    uint64_t hw = 6 + pick(3);
    vals[nv++] = tensor(&g, MP_TENSOR_INPUT, NULL, 4, (uint64_t[]){2, 2 + pick(2), hw, hw});
    static const char *un[] = {"relu", "sigmoid", "tanh", "relu6", "silu", "hardswish",
                               "hardsigmoid", "gelu", "dropout", "identity"};
    size_t ops = 4 + pick(6) + (size_t)idx % 3;
    for (size_t s = 0; s < ops && !g.failed && nv < 30; s++) {
        /* operands: mostly recent values, sometimes older ones (a DAG) */
        size_t x = vals[nv - 1 - (pick(3) == 0 ? pick(nv) : 0)];
        uint64_t C = dim(&g, x, 1), Hh = dim(&g, x, 2);
        size_t y = MP_GRAPH_NONE;
        switch (pick(7)) {
        case 0: {
            int64_t k = 1 + (int64_t)pick(3), st = 1 + (int64_t)pick(2), d = 1 + (int64_t)pick(2);
            int64_t pad = (int64_t)pick((uint64_t)k / 2 + 1 + (d > 1));
            uint64_t o = 2 + pick(4);
            int64_t grp = (C % 2 == 0 && o % 2 == 0 && pick(2)) ? 2 : 1;
            if ((int64_t)Hh + 2 * pad - d * (k - 1) - 1 < 0) break;
            y = conv(&g, x, o, k, st, pad, d, grp, (int)pick(2));
            break;
        }
        case 1: y = bn(&g, x); break;
        case 2: y = OP(&g, un[pick(10)], NULL, x); break;
        case 3: {   /* with a same-shaped value, else broadcast a [C,1,1] parameter */
            static const char *bin[] = {"add", "sub", "mul"};
            size_t other = MP_GRAPH_NONE;
            for (size_t j = nv; j-- > 0;)
                if (vals[j] != x && dim(&g, vals[j], 1) == C && dim(&g, vals[j], 2) == Hh &&
                    dim(&g, vals[j], 3) == dim(&g, x, 3))
                    other = vals[j], j = 0;
            mp_op_attrs_t a = attrs();
            a.alpha = pick(2) ? 1.0 : 0.5;
            if (other == MP_GRAPH_NONE) other = PARAM(&g, C, 1, 1);
            y = OP(&g, bin[pick(3)], &a, x, other);
            break;
        }
        case 4: {
            size_t other = vals[pick(nv)];
            if (dim(&g, other, 2) != Hh || dim(&g, other, 3) != dim(&g, x, 3)) break;
            y = OP(&g, "concat", NULL, x, other);
            break;
        }
        default: {
            mp_op_attrs_t a = attrs();
            int max = (int)pick(2);
            int64_t k = 2 + (int64_t)pick(2), st = 1 + (int64_t)pick(2);
            a.kernel[0] = a.kernel[1] = k;
            a.stride[0] = a.stride[1] = st;
            a.padding[0] = a.padding[1] = (int64_t)pick((uint64_t)k / 2 + 1);
            a.ceil_mode = (int)pick(2);
            a.count_include_pad = (int)pick(2);
            if (max && pick(3) == 0) a.dilation[0] = a.dilation[1] = 2;
            if ((int64_t)Hh < a.dilation[0] * (k - 1) + 1) break;
            y = OP(&g, max ? "maxpool2d" : "avgpool2d", &a, x);
            break;
        }
        }
        if (y != MP_GRAPH_NONE && !g.failed) vals[nv++] = y;
    }
    mp_op_attrs_t ap = attrs();
    ap.output_size[0] = ap.output_size[1] = 1 + pick(2);
    size_t f = OP(&g, "flatten", NULL, OP(&g, "adaptive_avgpool2d", &ap, vals[nv - 1]));
    /* a 2-D tail: layer norm, matmul, softmax gating, an MLP layer */
    if (pick(2)) {
        uint64_t d = dim(&g, f, 1);
        f = OP(&g, "layernorm", NULL, f, PARAM(&g, d), PARAM(&g, d));
    }
    if (pick(2)) f = OP(&g, "matmul", NULL, f, PARAM(&g, dim(&g, f, 1), 6));
    if (pick(3) == 0) f = OP(&g, "mul", NULL, f, OP(&g, "softmax", NULL, f));
    if (pick(2)) f = OP(&g, "relu", NULL, linear(&g, f, 6));
    return finish(&g, linear(&g, f, 4));
}

/* ---- running and comparing -------------------------------------------------- */

/* Initial values of every float tensor no node produces (the test owns
 * them, so finite differences can perturb them). */
typedef struct inits {
    size_t n;
    float **v;
} inits;

static void inits_make(const mp_graph_t *g, inits *in) {
    in->n = mp_graph_tensor_count(g);
    in->v = calloc(in->n, sizeof *in->v);
    for (size_t t = 0; t < in->n; t++) {
        const mp_graph_tensor_t *T = mp_graph_tensor(g, t);
        if (T->root != t || T->producer != MP_GRAPH_NONE || strcmp(T->dtype, "float32")) continue;
        in->v[t] = malloc((T->numel ? T->numel : 1) * sizeof(float));
        double scale = T->kind == MP_TENSOR_PARAMETER && T->rank >= 2
                           ? 1.0 / sqrt((double)(T->numel / T->shape[0])) : 1.0;
        for (uint64_t i = 0; i < T->numel; i++)
            in->v[t][i] = (float)(scale * ((double)(next_u64() >> 40) * 0x1p-23 - 1.0));
    }
}

static void inits_free(inits *in) {
    for (size_t t = 0; t < in->n; t++) free(in->v[t]);
    free(in->v);
}

static mp_exec_opts_t opts_for(const inits *in, const mp_graph_plan_t *plan, int poison) {
    mp_exec_opts_t o = {.seed = 42, .plan = plan, .poison = poison,
                        .init = (const float *const *)in->v};
    return o;
}

/* Every output of g identical in both results (bytes and bits). */
static bool same_outputs(const mp_graph_t *g, const mp_exec_result_t *a, const mp_exec_result_t *b,
                         const char *what) {
    size_t n;
    const size_t *outs = mp_graph_outputs(g, &n);
    for (size_t k = 0; k < n; k++) {
        size_t t = outs[k];
        if (!a->data[t] || !b->data[t] || a->bytes[t] != b->bytes[t] ||
            memcmp(a->data[t], b->data[t], a->bytes[t]) != 0) {
            fprintf(stderr, "  %s: output %zu '%s' differs\n", what, t, mp_graph_tensor(g, t)->name);
            return false;
        }
    }
    return true;
}

/* Every float output finite (the naive run never reads poison). */
static bool finite_outputs(const mp_graph_t *g, const mp_exec_result_t *r) {
    size_t n;
    const size_t *outs = mp_graph_outputs(g, &n);
    for (size_t k = 0; k < n; k++) {
        const float *f = r->data[outs[k]];
        for (uint64_t i = 0; f && i < r->bytes[outs[k]] / 4; i++)
            if (!isfinite(f[i])) return false;
    }
    return n > 0;
}

/* Bytes of the tensors a plan places: what they would take unshared. */
static uint64_t planned_bytes(const mp_graph_t *g, const mp_graph_plan_t *p) {
    uint64_t s = 0;
    for (size_t t = 0; t < p->n_tensors; t++)
        if (p->storage[t] != MP_GRAPH_NONE && mp_graph_tensor(g, t)->root == t)
            s += mp_graph_tensor(g, t)->bytes;
    return s;
}

typedef struct plan_cfg {
    const char *name;
    int inplace, share, persistent;
    const char *place;          /* NULL: the sequential layout of mp_graph_share */
    mp_parallel_mode parallel;
} plan_cfg;

/* The first four share memory (counted by prove_plans). */
static const plan_cfg CFGS[] = {
    {"share+inplace", 1, 1, 0, NULL, MP_PARALLEL_ANY},
    {"share+inplace/greedy-size", 1, 1, 0, "greedy-size", MP_PARALLEL_ANY},
    {"share+inplace/auto", 1, 1, 0, "auto", MP_PARALLEL_ANY},
    {"persistent/greedy-size", 1, 1, 1, "greedy-size", MP_PARALLEL_ANY},
    {"inplace only", 1, 0, 0, NULL, MP_PARALLEL_ANY},
    {"share, ancestor-safe", 1, 1, 0, NULL, MP_PARALLEL_ANCESTOR},
    {"share, colour-safe", 1, 1, 0, NULL, MP_PARALLEL_COLOUR},
};
enum { N_SHARING = 4 };

static mp_status make_plan(const mp_graph_t *g, const plan_cfg *c, mp_graph_plan_t *p) {
    mp_share_opts_t so = {.inplace = c->inplace, .share = c->share, .parallel = c->parallel,
                          .include_persistent = c->persistent};
    mp_status s = mp_graph_share(g, &so, p);
    if (s == MP_OK && c->place) s = mp_graph_plan_place(g, p, c->place);
    return s;
}

/* Runs every plan configuration against the naive run of g; counts the
 * plans whose arena is smaller than their tensors' total. */
static void prove_plans(const mp_graph_t *g, const inits *in, const char *name, size_t *shared) {
    mp_exec_result_t naive, plain, r;
    mp_exec_opts_t o = opts_for(in, NULL, 1);
    if (!MP_CHECK_OK(mp_exec_run(g, &o, &naive))) return;
    MP_CHECK(finite_outputs(g, &naive));
    MP_CHECK_EQ_U64(naive.arena_bytes, 0);
    o.poison = 0;   /* poison changes nothing when the graph reads only what it wrote */
    if (MP_CHECK_OK(mp_exec_run(g, &o, &plain))) MP_CHECK(same_outputs(g, &naive, &plain, name));
    mp_exec_result_free(&plain);
    for (size_t k = 0; k < sizeof CFGS / sizeof CFGS[0]; k++) {
        mp_graph_plan_t p;
        if (!MP_CHECK_OK(make_plan(g, &CFGS[k], &p))) continue;
        if (!MP_CHECK_OK(mp_graph_plan_check(g, &p, CFGS[k].parallel))) fprintf(stderr, "  plan %s\n", CFGS[k].name);
        o = opts_for(in, &p, 1);
        if (MP_CHECK_OK(mp_exec_run(g, &o, &r))) {
            char what[96];
            snprintf(what, sizeof what, "%s, %s", name, CFGS[k].name);
            MP_CHECK(same_outputs(g, &naive, &r, what));
            MP_CHECK_EQ_U64(r.arena_bytes, p.footprint);
            mp_exec_result_free(&r);
        }
        uint64_t total = planned_bytes(g, &p);
        MP_CHECK(p.footprint <= total);
        if (k < N_SHARING && p.footprint < total) (*shared)++;
        mp_graph_plan_free(&p);
    }
    mp_exec_result_free(&naive);
}

/* The loss of g with entry e of tensor p set to v. */
static double loss_at(const mp_graph_t *g, inits *in, size_t p, uint64_t e, float v) {
    float keep = in->v[p][e];
    in->v[p][e] = v;
    mp_exec_opts_t o = opts_for(in, NULL, 0);
    mp_exec_result_t r;
    double l = NAN;
    if (MP_CHECK_OK(mp_exec_run(g, &o, &r))) l = *(const float *)r.data[mp_graph_loss(g)];
    mp_exec_result_free(&r);
    in->v[p][e] = keep;
    return l;
}

/* Gradients against central differences of the loss, for the entry of
 * largest gradient of max_params parameters spread over the network.
 *
 * Tolerance: the loss is a float32 near 1 (ulp 2^-23 ~ 1.2e-7) and every
 * run recomputes the whole net, so L(x + h) - L(x - h) is off by a few
 * ulps; 16 ulps over 2h gives the absolute part 1e-6 / h (1.3e-4 at
 * h = 2^-7; the differences measured are below 1e-5).  The truncation
 * error h^2/6 |f'''| is ~1e-5 |f'''| at h = 2^-7; the relative part
 * 2e-2 |g| covers it.  A wrong gradient is off by O(|g|).  The loss is
 * only piecewise smooth (relu, max pooling): a kink within h of the point
 * spoils the difference at h but not at steps below its distance, so when
 * h = 2^-7 fails, two consecutive halvings down to 2^-13 that both agree
 * also pass; a wrong gradient fails at every step. */
static void check_gradients(const mp_graph_t *g, inits *in, size_t max_params, const char *name) {
    mp_exec_result_t base;
    mp_exec_opts_t o = opts_for(in, NULL, 0);
    if (!MP_CHECK_OK(mp_exec_run(g, &o, &base))) return;
    size_t n_out, checked = 0, n_grads = 0;
    const size_t *outs = mp_graph_outputs(g, &n_out);
    for (size_t k = 0; k < n_out; k++) n_grads += mp_graph_tensor(g, outs[k])->kind == MP_TENSOR_GRADIENT;
    for (size_t k = 0, seen = 0; k < n_out && checked < max_params; k++) {
        const mp_graph_tensor_t *G = mp_graph_tensor(g, outs[k]);
        if (G->kind != MP_TENSOR_GRADIENT) continue;
        size_t j = seen++;
        /* max_params of the n_grads gradients, evenly spread */
        if (n_grads > max_params && j * max_params / n_grads == (j + 1) * max_params / n_grads)
            continue;
        size_t p = G->grad_of;
        const float *grad = base.data[outs[k]];
        uint64_t e = 0;
        for (uint64_t i = 1; i < G->numel; i++)
            if (fabsf(grad[i]) > fabsf(grad[e])) e = i;
        double gr = grad[e], fd = NAN;
        float v = in->v[p][e];
        int run = 0;   /* consecutive step sizes that agree */
        bool ok = false;
        for (int q = 7; q <= 13 && !ok; q++) {
            float h = ldexpf(1.0f, -q);
            fd = (loss_at(g, in, p, e, v + h) - loss_at(g, in, p, e, v - h)) /
                 ((double)(v + h) - (double)(v - h));
            run = fabs(fd - gr) <= 1e-6 / h + 2e-2 * fabs(gr) ? run + 1 : 0;
            ok = (q == 7 && run == 1) || run == 2;
        }
        if (!ok || getenv("MP_TEST_VERBOSE"))
            fprintf(stderr, "  %s: d loss / d %s[%llu]: backward %.6g, differences %.6g\n", name,
                    mp_graph_tensor(g, p)->name, (unsigned long long)e, gr, fd);
        MP_CHECK(ok);
        checked++;
    }
    MP_CHECK(checked == (n_grads < max_params ? n_grads : max_params));
    mp_exec_result_free(&base);
}

/* The training graph of fwd, proved: plans and gradients. */
static mp_graph_t *prove(mp_graph_t *fwd, const char *name, size_t max_params, size_t *shared,
                         int add_loss) {
    mp_graph_t *g = NULL;
    if (!MP_CHECK(fwd != NULL)) return NULL;
    mp_backward_stats_t st;
    mp_backward_opts_t bo = {.add_loss = add_loss};
    if (!MP_CHECK_OK(mp_graph_backward(fwd, &bo, &g, &st))) {
        fprintf(stderr, "  %s: %s\n", name, mp_last_error());
        mp_graph_free(fwd);
        return NULL;
    }
    mp_graph_free(fwd);
    MP_CHECK(st.param_grads > 0);
    if (!MP_CHECK_OK(mp_exec_supported(g))) fprintf(stderr, "  %s: %s\n", name, mp_last_error());
    inits in;
    inits_make(g, &in);
    prove_plans(g, &in, name, shared);
    if (max_params) check_gradients(g, &in, max_params, name);
    inits_free(&in);
    return g;
}

/* Forward graphs without a loss, for mp_graph_backward's add_loss: a conv
 * net with a 4-D output (the loss is the mean) and an MLP with logits
 * [N, K] (softmax_xent against a "target" input the executor fills). */
static mp_graph_t *build_no_loss(int logits) {
    gb g;
    begin(&g, "no-loss");
    size_t y;
    if (logits) {
        size_t x = tensor(&g, MP_TENSOR_INPUT, NULL, 2, (uint64_t[]){3, 4});
        y = linear(&g, OP(&g, "gelu", NULL, linear(&g, x, 5)), 3);
    } else {
        size_t x = tensor(&g, MP_TENSOR_INPUT, NULL, 4, (uint64_t[]){2, 3, 5, 5});
        y = OP(&g, "tanh", NULL, conv(&g, x, 4, 3, 1, 1, 1, 1, 1));
    }
    mp_graph_t *out = NULL;
    if (!g.failed && mp_graph_builder_finish(g.b, NULL, &y, 1, MP_GRAPH_NONE, &out) != MP_OK)
        fprintf(stderr, "  finish: %s\n", mp_last_error());
    mp_graph_builder_free(g.b);
    return out;
}

/* The training graph run in a memory-aware order (mp_graph_order_search,
 * mp_graph_with_order) and planned for that order: every node computes the
 * same values from the same inputs, so the outputs are the naive run's. */
static void test_reordered(const mp_graph_t *g, const char *name) {
    size_t n = mp_graph_node_count(g);
    size_t *order = malloc(n * sizeof *order);
    mp_graph_t *r = NULL;
    mp_order_report_t rep;
    if (MP_CHECK_OK(mp_graph_order_search(g, NULL, order, &rep)) &&
        MP_CHECK_OK(mp_graph_with_order(g, order, &r))) {
        MP_CHECK(rep.searched_peak <= rep.given_peak);
        inits in;
        inits_make(g, &in);
        mp_exec_result_t naive, planned;
        mp_graph_plan_t p;
        mp_exec_opts_t o = opts_for(&in, NULL, 1);
        if (MP_CHECK_OK(mp_exec_run(g, &o, &naive))) {
            if (MP_CHECK_OK(make_plan(r, &CFGS[1], &p))) {
                MP_CHECK_OK(mp_graph_plan_check(r, &p, MP_PARALLEL_ANY));
                o.plan = &p;
                if (MP_CHECK_OK(mp_exec_run(r, &o, &planned))) {
                    MP_CHECK(same_outputs(g, &naive, &planned, name));
                    mp_exec_result_free(&planned);
                }
                mp_graph_plan_free(&p);
            }
            mp_exec_result_free(&naive);
        }
        inits_free(&in);
    }
    mp_graph_free(r);
    free(order);
}

/* ---- refusals and a wrong plan ------------------------------------------------ */

/* A plan that lets a live tensor be overwritten: the checker rejects it
 * and the executor's outputs show it (or it refuses to run it). */
static void test_wrong_plan(const mp_graph_t *g) {
    mp_graph_plan_t p;
    const plan_cfg *c = &CFGS[0];
    if (!MP_CHECK_OK(make_plan(g, c, &p))) return;
    size_t n = mp_graph_tensor_count(g);
    uint64_t *first = malloc(n * sizeof *first), *last = malloc(n * sizeof *last);
    mp_graph_lifetimes(g, first, last);
    /* a: a planned value still needed much later (saved for the backward
     * pass); b: a planned value produced while a is live, that fits in a's
     * storage and is not produced by a reader of a. */
    size_t a = MP_GRAPH_NONE, b = MP_GRAPH_NONE;
    for (size_t i = 0; i < n && b == MP_GRAPH_NONE; i++) {
        const mp_graph_tensor_t *A = mp_graph_tensor(g, i);
        if (A->root != i || p.storage[i] == MP_GRAPH_NONE || last[i] < first[i] + 4) continue;
        for (size_t j = 0; j < n; j++) {
            const mp_graph_tensor_t *B = mp_graph_tensor(g, j);
            if (B->root != j || p.storage[j] == MP_GRAPH_NONE || p.storage[j] == p.storage[i] ||
                first[j] <= first[i] + 1 || first[j] + 2 > last[i] || B->bytes > p.storage_size[p.storage[i]])
                continue;
            const mp_graph_node_t *nd = mp_graph_node(g, B->producer);
            bool reads = false;
            for (size_t k = 0; k < nd->n_inputs; k++) reads |= mp_graph_tensor(g, nd->inputs[k])->root == i;
            if (reads) continue;
            a = i, b = j;
            break;
        }
    }
    free(first);
    free(last);
    if (!MP_CHECK(b != MP_GRAPH_NONE)) {
        mp_graph_plan_free(&p);
        return;
    }
    p.storage[b] = p.storage[a];
    p.inplace_of[b] = MP_GRAPH_NONE;
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) != MP_OK);
    inits in;
    inits_make(g, &in);
    mp_exec_result_t naive, bad;
    mp_exec_opts_t o = opts_for(&in, NULL, 1);
    if (MP_CHECK_OK(mp_exec_run(g, &o, &naive))) {
        o.plan = &p;
        mp_status st = mp_exec_run(g, &o, &bad);
        bool caught = st != MP_OK;
        if (st == MP_OK) {
            size_t no;
            const size_t *outs = mp_graph_outputs(g, &no);
            for (size_t k = 0; k < no; k++)
                caught |= memcmp(naive.data[outs[k]], bad.data[outs[k]], naive.bytes[outs[k]]) != 0;
            mp_exec_result_free(&bad);
        }
        MP_CHECK(caught);
        mp_exec_result_free(&naive);
    }
    inits_free(&in);
    mp_graph_plan_free(&p);
}

static void test_refusals(const mp_graph_t *g, const mp_graph_t *other) {
    /* a plan made for another graph */
    mp_graph_plan_t p;
    mp_exec_result_t r;
    if (MP_CHECK_OK(make_plan(other, &CFGS[0], &p))) {
        mp_exec_opts_t o = {.seed = 1, .plan = &p};
        MP_CHECK(mp_exec_run(g, &o, &r) == MP_EINVAL);
        MP_CHECK(r.data == NULL && r.n_tensors == 0);
        MP_CHECK(strstr(mp_last_error(), "tensors") != NULL);
        mp_graph_plan_free(&p);
    }
    /* an op without a kernel, and the gradient of one */
    mp_graph_builder_t *b;
    mp_graph_t *u = NULL;
    size_t x, y, z;
    MP_CHECK_OK(mp_graph_builder_new("custom", &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "x", NULL, (uint64_t[]){2, 3}, 2, MP_TENSOR_INPUT, MP_GRAPH_NONE, &x));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "y", NULL, (uint64_t[]){2, 3}, 2, MP_TENSOR_ACTIVATION, MP_GRAPH_NONE, &y));
    MP_CHECK_OK(mp_graph_builder_node(b, "mystery", "my.op", &x, 1, &y, 1, NULL, NULL));
    MP_CHECK_OK(mp_graph_builder_op(b, "act", "relu", &y, 1, NULL, 1, &z, NULL));
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &z, 1, MP_GRAPH_NONE, &u));
    mp_graph_builder_free(b);
    if (u) {
        MP_CHECK(mp_exec_supported(u) == MP_ENOTFOUND);
        MP_CHECK(strstr(mp_last_error(), "mystery") && strstr(mp_last_error(), "my.op"));
        MP_CHECK(mp_exec_run(u, NULL, &r) == MP_ENOTFOUND);
        MP_CHECK(r.data == NULL);
    }
    mp_graph_free(u);
}

/* tests/graph/views.json: an fx-style graph as the exporter writes it
 * (views are aliases, arguments in args/kwargs) with every view op and
 * interpolate mode: conv -> Tensor.permute (strided alias) -> layernorm ->
 * torch.permute -> stochastic_depth -> add (in place over a strided view
 * when the plan allows) -> view -> transpose -> contiguous -> view ->
 * chunk(2, dim=1) (strided halves) -> interpolate bilinear / nearest
 * (scale_factor 2) / bilinear align_corners -> mean over dims (keepdim
 * and not) -> reshape; a parameter through expand and getitem
 * [:, 0]; linear.  Planned runs must match the naive run bit for bit and
 * the parameter gradients (through every view's backward) must match
 * finite differences. */
static mp_graph_t *load_views(void) {
    mp_graph_t *g = NULL;
    MP_CHECK_OK(mp_graph_load("graph/views.json", &g));
    return g;
}

/* The registry's "executable" flag is exactly "the executor has a kernel". */
static void test_registry(void) {
    size_t n = mp_op_count(), with = 0;
    for (size_t i = 0; i < n; i++) {
        const mp_op_info_t *info = mp_op_at(i);
        bool has = mp__exec_find(info->name) != NULL;
        if (has != (info->executable != 0))
            fprintf(stderr, "  op %s: executable %d, kernel %d\n", info->name, info->executable, has);
        MP_CHECK(has == (info->executable != 0));
        with += has;
    }
    MP_CHECK(with >= 50);
    MP_CHECK(mp__exec_find("generic_backward") == NULL);
}

/* ---- corpus inference graphs ---------------------------------------------- */

static void test_corpus(const char *model) {
    char path[256];
    snprintf(path, sizeof path, "../bench/corpus/inference/%s.graph.json.gz", model);
    mp_graph_t *g;
    if (!MP_CHECK_OK(mp_graph_load(path, &g))) return;
    if (MP_CHECK_OK(mp_exec_supported(g))) {
        inits in;
        inits_make(g, &in);
        mp_graph_plan_t p;
        mp_exec_result_t naive, r;
        mp_exec_opts_t o = opts_for(&in, NULL, 1);
        if (MP_CHECK_OK(make_plan(g, &CFGS[0], &p))) {
            MP_CHECK_OK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY));
            if (MP_CHECK_OK(mp_exec_run(g, &o, &naive))) {
                MP_CHECK(finite_outputs(g, &naive));
                o.plan = &p;
                if (MP_CHECK_OK(mp_exec_run(g, &o, &r))) {
                    MP_CHECK(same_outputs(g, &naive, &r, model));
                    MP_CHECK(p.footprint < planned_bytes(g, &p));
                    fprintf(stderr, "  %s: naive run %.3f s, planned %.3f s, arena %llu of %llu bytes\n",
                            model, naive.seconds, r.seconds, (unsigned long long)p.footprint,
                            (unsigned long long)planned_bytes(g, &p));
                    mp_exec_result_free(&r);
                }
                mp_exec_result_free(&naive);
            }
            mp_graph_plan_free(&p);
        }
        inits_free(&in);
    } else {
        fprintf(stderr, "  %s: %s\n", model, mp_last_error());
    }
    mp_graph_free(g);
}

int main(void) {
    test_registry();
    size_t shared = 0, plans = 0;
    for (int i = 0; i < 48; i++) {
        mp_graph_t *g = prove(build_random(i), "random", 3, &shared, 0);
        mp_graph_free(g);
        plans += N_SHARING;
    }
    MP_CHECK(shared * 4 >= plans * 3);   /* most random training graphs share memory */
    size_t before = shared;
    mp_graph_t *res = prove(build_resnet(), "resnet", 8, &shared, 0);
    MP_CHECK_EQ_U64(shared - before, N_SHARING);   /* every sharing plan shares */
    before = shared;
    mp_graph_t *lstm = prove(build_lstm(4), "lstm", 8, &shared, 0);
    MP_CHECK_EQ_U64(shared - before, N_SHARING);
    mp_graph_free(prove(build_no_loss(0), "add_loss mean", 4, &shared, 1));
    mp_graph_free(prove(build_no_loss(1), "add_loss softmax_xent", 4, &shared, 1));
    mp_graph_free(prove(load_views(), "views", 8, &shared, 1));
    if (res && lstm) {
        test_reordered(res, "resnet reordered");
        test_reordered(lstm, "lstm reordered");
        test_wrong_plan(res);
        test_wrong_plan(lstm);
        test_refusals(res, lstm);
    }
    mp_graph_free(res);
    mp_graph_free(lstm);
#if defined(MP_DEBUG) || defined(__SANITIZE_ADDRESS__)
    /* Debug/ASan builds run the corpus graphs only on request (~minutes). */
    if (getenv("MP_TEST_SLOW"))
#endif
    {
        test_corpus("resnet18");
        test_corpus("mobilenet_v2");
        test_corpus("shufflenet_v2_x1_0");   /* view, transpose, chunk, mean over dims */
        test_corpus("efficientnet_b0");      /* stochastic_depth */
    }
    return mp_test_finish("exec");
}
