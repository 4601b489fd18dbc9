/* test_backward.c -- mp_graph_backward (src/graph/backward.c).
 *
 * Hand-built forward graphs whose backward graphs are written out node by
 * node below (derived by hand from the layout rules of docs/graph.md:
 * gradient inputs = dY, then the forward values the op's grad_needs
 * declares; outputs = gradients of the inputs in grad_mask): a chain MLP, a
 * value read twice (one sum_n), a shared weight, a frozen branch and a dead
 * branch (pruned), the minimal needs of relu/conv/add/flatten, the note's
 * in-place trap structure; refusals; and every corpus inference graph with
 * add_loss: the result passes the shape check, its records plan validly,
 * and training needs more memory than inference.
 * Runs from tests/ (ctest's working directory). */
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------ */

static size_t tensor_named(const mp_graph_t *g, const char *name) {
    for (size_t i = 0; i < mp_graph_tensor_count(g); i++)
        if (!strcmp(mp_graph_tensor(g, i)->name, name)) return i;
    fprintf(stderr, "  no tensor '%s'\n", name);
    return MP_GRAPH_NONE;
}

/* Splits "a b c" into tensor ids of g; returns the count. */
static size_t ids_of(const mp_graph_t *g, const char *names, size_t *ids) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", names);
    size_t n = 0;
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) ids[n++] = tensor_named(g, tok);
    return n;
}

static bool same_ids(const size_t *a, size_t n, const size_t *b, size_t m) {
    if (n != m) return false;
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return false;
    return true;
}

/* The node at step s must be name/op reading ins and writing outs (tensor
 * names, space-separated); for gradient nodes also forward node and mask. */
static void expect_step(int line, const mp_graph_t *g, size_t s, const char *name, const char *op,
                        const char *ins, const char *outs, const char *fwd, uint64_t mask) {
    size_t n_order;
    const size_t *order = mp_graph_order(g, &n_order);
    if (!mp_test_report(s < n_order, __FILE__, line, "step exists")) return;
    const mp_graph_node_t *nd = mp_graph_node(g, order[s]);
    size_t want_in[64], want_out[64];
    size_t ni = ids_of(g, ins, want_in), no = ids_of(g, outs, want_out);
    bool ok = !strcmp(nd->name, name) && !strcmp(nd->op, op) && same_ids(nd->inputs, nd->n_inputs, want_in, ni) &&
              same_ids(nd->outputs, nd->n_outputs, want_out, no);
    mp_op_attrs_t a;
    mp_graph_node_attrs(g, order[s], &a);
    if (fwd) {
        const mp_graph_node_t *f = a.forward_node != MP_GRAPH_NONE ? mp_graph_node(g, a.forward_node) : NULL;
        ok &= f && !strcmp(f->name, fwd) && a.grad_mask == mask;
    } else {
        ok &= a.forward_node == MP_GRAPH_NONE;
    }
    mp_test_report(ok, __FILE__, line, name);
    if (!ok) {
        fprintf(stderr, "  step %zu: got '%s' %s in [", s, nd->name, nd->op);
        for (size_t i = 0; i < nd->n_inputs; i++) fprintf(stderr, " %s", mp_graph_tensor(g, nd->inputs[i])->name);
        fprintf(stderr, " ] out [");
        for (size_t i = 0; i < nd->n_outputs; i++) fprintf(stderr, " %s", mp_graph_tensor(g, nd->outputs[i])->name);
        fprintf(stderr, " ] forward_node %zu mask %llu\n", a.forward_node, (unsigned long long)a.grad_mask);
    }
}
#define STEP(g, s, name, op, ins, outs) expect_step(__LINE__, g, s, name, op, ins, outs, NULL, 0)
#define BSTEP(g, s, name, op, ins, outs, fwd, mask) expect_step(__LINE__, g, s, name, op, ins, outs, fwd, mask)

/* The graph's outputs must be exactly these tensors. */
static void expect_outputs(int line, const mp_graph_t *g, const char *names) {
    size_t want[64], n;
    size_t m = ids_of(g, names, want);
    const size_t *out = mp_graph_outputs(g, &n);
    if (!mp_test_report(same_ids(out, n, want, m), __FILE__, line, names)) {
        fprintf(stderr, "  outputs:");
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", mp_graph_tensor(g, out[i])->name);
        fprintf(stderr, "\n");
    }
}
#define OUTPUTS(g, names) expect_outputs(__LINE__, g, names)

/* Every training graph: shapes check, records plan validly (greedy-size,
 * through the checker), parameter gradients are kind gradient of their
 * parameter with its shape.  Returns the naive bytes of its records. */
static uint64_t validate(const mp_graph_t *g) {
    size_t un;
    MP_CHECK_OK(mp_graph_check_shapes(g, &un));
    for (size_t i = 0; i < mp_graph_tensor_count(g); i++) {
        const mp_graph_tensor_t *t = mp_graph_tensor(g, i);
        if (t->kind != MP_TENSOR_GRADIENT) continue;
        const mp_graph_tensor_t *p = t->grad_of != MP_GRAPH_NONE ? mp_graph_tensor(g, t->grad_of) : NULL;
        MP_CHECK(p && p->kind == MP_TENSOR_PARAMETER && p->trainable && p->rank == t->rank &&
                 (!t->rank || !memcmp(p->shape, t->shape, t->rank * sizeof *t->shape)) && t->alias_of == MP_GRAPH_NONE);
    }
    mp_buffer_t *b;
    size_t n;
    uint64_t naive = 0;
    if (!MP_CHECK_OK(mp_graph_records(g, 0, &b, &n))) return 0;
    for (size_t i = 0; i < n; i++) naive += b[i].size;
    if (n) MP_CHECK(mp_test_plan(b, n, "greedy-size", NULL) > 0);
    free(b);
    return naive;
}

/* ---- builders for the hand-made graphs ----------------------------------------- */

static size_t tensor(mp_graph_builder_t *b, const char *name, const char *dtype, mp_tensor_kind kind,
                     size_t rank, const uint64_t *shape) {
    size_t id = MP_GRAPH_NONE;
    MP_CHECK_OK(mp_graph_builder_tensor(b, name, dtype, shape, rank, kind, MP_GRAPH_NONE, &id));
    return id;
}
#define T(b, name, kind, ...) \
    tensor(b, name, NULL, kind, sizeof((uint64_t[]){__VA_ARGS__}) / sizeof(uint64_t), (uint64_t[]){__VA_ARGS__})

static size_t op(mp_graph_builder_t *b, const char *name, const char *opname, const size_t *in, size_t n,
                 const mp_op_attrs_t *a) {
    size_t out = MP_GRAPH_NONE;
    if (!MP_CHECK_OK(mp_graph_builder_op(b, name, opname, in, n, a, 1, &out, NULL))) fprintf(stderr, "  node %s\n", name);
    return out;
}
#define OP(b, name, opname, a, ...) \
    op(b, name, opname, (size_t[]){__VA_ARGS__}, sizeof((size_t[]){__VA_ARGS__}) / sizeof(size_t), a)

static mp_graph_t *finish(mp_graph_builder_t *b, size_t out) {
    mp_graph_t *g = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &out, 1, MP_GRAPH_NONE, &g));
    mp_graph_builder_free(b);
    return g;
}

static mp_graph_t *backward(const mp_graph_t *fwd, mp_backward_stats_t *st) {
    mp_backward_opts_t o = {.add_loss = 1};
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_backward(fwd, &o, &g, st))) return NULL;
    return g;
}

/* ---- the cases ------------------------------------------------------------------ */

/* x[4,8] -> fc1 (W1,b1) -> relu -> fc2 (W2,b2) -> logits [4,3]; add_loss.
 *   loss = softmax_xent(fc2, target) reads logits and target;
 *   softmax_xent_backward: [dL, logits, target] -> d fc2 (target is int: mask 1)
 *   linear_backward (fc2): [d fc2, relu, W2, b2] -> d relu, dW2, db2 (mask 111)
 *   relu_backward: [d relu, relu] (needs the output only) -> d fc1
 *   linear_backward (fc1): [d fc1, x, W1, b1] -> dW1, db1 (x is an input: mask 110) */
static void test_mlp(void) {
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("mlp", &b));
    size_t x = T(b, "x", MP_TENSOR_INPUT, 4, 8);
    size_t w1 = T(b, "W1", MP_TENSOR_PARAMETER, 16, 8), b1 = T(b, "b1", MP_TENSOR_PARAMETER, 16);
    size_t w2 = T(b, "W2", MP_TENSOR_PARAMETER, 3, 16), b2 = T(b, "b2", MP_TENSOR_PARAMETER, 3);
    size_t h = OP(b, "fc1", "nn.Linear", NULL, x, w1, b1);
    size_t r = OP(b, "relu", "nn.ReLU", NULL, h);
    size_t y = OP(b, "fc2", "nn.Linear", NULL, r, w2, b2);
    mp_graph_t *fwd = finish(b, y);
    mp_backward_stats_t st;
    mp_graph_t *g = fwd ? backward(fwd, &st) : NULL;
    if (!g) {
        mp_graph_free(fwd);
        return;
    }
    MP_CHECK_EQ_U64(mp_graph_node_count(g), 9);
    STEP(g, 0, "fc1", "nn.Linear", "x W1 b1", "fc1");
    STEP(g, 1, "relu", "nn.ReLU", "fc1", "relu");
    STEP(g, 2, "fc2", "nn.Linear", "relu W2 b2", "fc2");
    STEP(g, 3, "loss", "softmax_xent", "fc2 target", "loss");
    STEP(g, 4, "seed:loss", "ones", "", "grad:loss");
    BSTEP(g, 5, "bwd:loss", "softmax_xent_backward", "grad:loss fc2 target", "grad:fc2", "loss", 1);
    BSTEP(g, 6, "bwd:fc2", "linear_backward", "grad:fc2 relu W2 b2", "grad:relu grad:W2 grad:b2", "fc2", 7);
    BSTEP(g, 7, "bwd:relu", "relu_backward", "grad:relu relu", "grad:fc1", "relu", 1);
    BSTEP(g, 8, "bwd:fc1", "linear_backward", "grad:fc1 x W1 b1", "grad:W1 grad:b1", "fc1", 6);
    /* the loss, then the parameter gradients in parameter order */
    OUTPUTS(g, "loss grad:W1 grad:b1 grad:W2 grad:b2");
    MP_CHECK_EQ_U64(mp_graph_loss(g), tensor_named(g, "loss"));
    const mp_graph_tensor_t *t = mp_graph_tensor(g, tensor_named(g, "target"));
    MP_CHECK(t->kind == MP_TENSOR_INPUT && !strcmp(t->dtype, "int64") && t->rank == 1 && t->shape[0] == 4);
    t = mp_graph_tensor(g, tensor_named(g, "loss"));
    MP_CHECK(t->kind == MP_TENSOR_OUTPUT && t->rank == 0 && !strcmp(t->dtype, "float32"));
    /* the logits are no longer an output */
    MP_CHECK(mp_graph_tensor(g, tensor_named(g, "fc2"))->kind == MP_TENSOR_ACTIVATION);
    t = mp_graph_tensor(g, tensor_named(g, "grad:W2"));
    MP_CHECK(t->kind == MP_TENSOR_GRADIENT && t->grad_of == w2);
    MP_CHECK(mp_graph_tensor(g, tensor_named(g, "grad:relu"))->kind == MP_TENSOR_ACTIVATION);
    MP_CHECK(st.forward_nodes == 4 && st.backward_nodes == 4 && st.aggregations == 0 && st.pruned == 0 &&
             st.param_grads == 4);
    /* every op of this graph has a kernel */
    for (size_t i = 0; i < mp_graph_node_count(g); i++) MP_CHECK(mp_op_info(mp_graph_node(g, i)->op)->executable);
    size_t un;
    MP_CHECK_OK(mp_graph_check_shapes(g, &un));
    MP_CHECK_EQ_U64(un, 1);   /* the seed: its shape is not a function of inputs */
    validate(g);
    (void)r;
    (void)h;
    mp_graph_free(g);

    /* No loss and no add_loss: refused. */
    MP_CHECK(mp_graph_backward(fwd, &(mp_backward_opts_t){0}, &g, NULL) == MP_EINVAL);
    MP_CHECK(g == NULL && strstr(mp_last_error(), "no loss"));
    MP_CHECK(mp_graph_backward(fwd, NULL, &g, NULL) == MP_EINVAL);
    mp_graph_free(fwd);

    /* A graph with a loss already (outputs fc, xent): nothing is added, the
     * loss goes first, the other output stays. */
    MP_CHECK_OK(mp_graph_builder_new("withloss", &b));
    x = T(b, "x", MP_TENSOR_INPUT, 4, 8);
    w1 = T(b, "W", MP_TENSOR_PARAMETER, 3, 8);
    size_t tg = tensor(b, "labels", "int64", MP_TENSOR_INPUT, 1, (uint64_t[]){4});
    y = OP(b, "fc", "linear", NULL, x, w1);
    size_t l = OP(b, "xent", "softmax_xent", NULL, y, tg);
    fwd = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, (size_t[]){y, l}, 2, l, &fwd));
    mp_graph_builder_free(b);
    if (fwd && MP_CHECK_OK(mp_graph_backward(fwd, NULL, &g, &st))) {
        MP_CHECK_EQ_U64(mp_graph_node_count(g), 5);
        STEP(g, 2, "seed:xent", "ones", "", "grad:xent");
        BSTEP(g, 3, "bwd:xent", "softmax_xent_backward", "grad:xent fc labels", "grad:fc", "xent", 1);
        BSTEP(g, 4, "bwd:fc", "linear_backward", "grad:fc x W", "grad:W", "fc", 2);
        OUTPUTS(g, "xent fc grad:W");
        MP_CHECK_EQ_U64(mp_graph_loss(g), l);
        MP_CHECK(st.forward_nodes == 2 && st.backward_nodes == 2);
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
}

/* A value read twice gets one sum_n, right after its last contribution:
 *   h = fc(x, W); a = relu(h); s = sigmoid(h); c = add(a, s); loss = xent(c)
 * Backward, reverse order: loss, add, sigmoid (-> grad:h@sig), relu
 * (-> grad:h@relu), then sum:h = sum_n(grad:h@sig, grad:h@relu) -> grad:h,
 * then fc. */
static void test_sum(void) {
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("twice", &b));
    size_t x = T(b, "x", MP_TENSOR_INPUT, 2, 4), w = T(b, "W", MP_TENSOR_PARAMETER, 5, 4);
    size_t h = OP(b, "h", "linear", NULL, x, w);
    size_t a = OP(b, "relu", "relu", NULL, h);
    size_t s = OP(b, "sig", "sigmoid", NULL, h);
    size_t c = OP(b, "c", "operator.add", NULL, a, s);
    mp_graph_t *fwd = finish(b, c);
    mp_backward_stats_t st;
    mp_graph_t *g = fwd ? backward(fwd, &st) : NULL;
    if (g) {
        MP_CHECK_EQ_U64(mp_graph_node_count(g), 12);
        STEP(g, 4, "loss", "softmax_xent", "c target", "loss");
        STEP(g, 5, "seed:loss", "ones", "", "grad:loss");
        BSTEP(g, 6, "bwd:loss", "softmax_xent_backward", "grad:loss c target", "grad:c", "loss", 1);
        BSTEP(g, 7, "bwd:c", "add_backward", "grad:c", "grad:relu grad:sig", "c", 3);
        BSTEP(g, 8, "bwd:sig", "sigmoid_backward", "grad:sig sig", "grad:h@sig", "sig", 1);
        BSTEP(g, 9, "bwd:relu", "relu_backward", "grad:relu relu", "grad:h@relu", "relu", 1);
        STEP(g, 10, "sum:h", "sum_n", "grad:h@sig grad:h@relu", "grad:h");
        BSTEP(g, 11, "bwd:h", "linear_backward", "grad:h x W", "grad:W", "h", 2);
        OUTPUTS(g, "loss grad:W");
        MP_CHECK(st.aggregations == 1 && st.backward_nodes == 5 && st.pruned == 0 && st.param_grads == 1);
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);

    /* A shared weight: W feeds two layers; its gradient is the sum_n of the
     * two contributions, and the sum (not the partials) is the gradient.
     *   h1 = fc1(x, W); r = relu(h1); h2 = fc2(r, W); loss = xent(h2) */
    MP_CHECK_OK(mp_graph_builder_new("shared", &b));
    x = T(b, "x", MP_TENSOR_INPUT, 2, 6);
    w = T(b, "W", MP_TENSOR_PARAMETER, 6, 6);
    h = OP(b, "fc1", "linear", NULL, x, w);
    a = OP(b, "r", "relu", NULL, h);
    c = OP(b, "fc2", "linear", NULL, a, w);
    fwd = finish(b, c);
    g = fwd ? backward(fwd, &st) : NULL;
    if (g) {
        BSTEP(g, 6, "bwd:fc2", "linear_backward", "grad:fc2 r W", "grad:r grad:W@fc2", "fc2", 3);
        BSTEP(g, 7, "bwd:r", "relu_backward", "grad:r r", "grad:fc1", "r", 1);
        BSTEP(g, 8, "bwd:fc1", "linear_backward", "grad:fc1 x W", "grad:W@fc1", "fc1", 2);
        STEP(g, 9, "sum:W", "sum_n", "grad:W@fc2 grad:W@fc1", "grad:W");
        MP_CHECK_EQ_U64(mp_graph_node_count(g), 10);
        OUTPUTS(g, "loss grad:W");
        MP_CHECK(mp_graph_tensor(g, tensor_named(g, "grad:W@fc1"))->kind == MP_TENSOR_ACTIVATION);
        MP_CHECK(mp_graph_tensor(g, tensor_named(g, "grad:W"))->kind == MP_TENSOR_GRADIENT);
        MP_CHECK(st.aggregations == 1 && st.param_grads == 1);
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
}

/* Pruning.  x[2,4] input, Wf frozen (trainable false), Wt and Wd trainable.
 *   f  = lin_f(x, Wf)        frozen: no input requires a gradient -> pruned
 *   xr = relu_x(x)           input-only path                      -> pruned
 *   t  = lin_t(xr, Wt)       -> gradient node, dWt only (mask 2)
 *   u  = add(f, t)           -> gradient of t only (mask 2)
 *   d  = lin_d(x, Wd)        requires a gradient but the loss does not read
 *                               it (a second output)              -> pruned
 *   loss = xent(u) */
static void test_prune(void) {
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("frozen", &b));
    size_t x = T(b, "x", MP_TENSOR_INPUT, 2, 4);
    size_t wf = T(b, "Wf", MP_TENSOR_PARAMETER, 3, 4), wt = T(b, "Wt", MP_TENSOR_PARAMETER, 3, 4);
    size_t wd = T(b, "Wd", MP_TENSOR_PARAMETER, 7, 4);
    MP_CHECK_OK(mp_graph_builder_set_trainable(b, wf, 0));
    size_t f = OP(b, "lin_f", "linear", NULL, x, wf);
    size_t xr = OP(b, "relu_x", "relu", NULL, x);
    size_t t = OP(b, "lin_t", "linear", NULL, xr, wt);
    size_t u = OP(b, "u", "add", NULL, f, t);
    size_t d = OP(b, "lin_d", "linear", NULL, x, wd);
    mp_graph_t *fwd = NULL, *g = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, (size_t[]){u, d}, 2, MP_GRAPH_NONE, &fwd));
    mp_graph_builder_free(b);
    mp_backward_stats_t st;
    if (fwd && (g = backward(fwd, &st))) {
        MP_CHECK_EQ_U64(mp_graph_node_count(g), 6 + 1 + 3);
        STEP(g, 5, "loss", "softmax_xent", "u target", "loss");
        STEP(g, 6, "seed:loss", "ones", "", "grad:loss");
        BSTEP(g, 7, "bwd:loss", "softmax_xent_backward", "grad:loss u target", "grad:u", "loss", 1);
        BSTEP(g, 8, "bwd:u", "add_backward", "grad:u", "grad:lin_t", "u", 2);
        BSTEP(g, 9, "bwd:lin_t", "linear_backward", "grad:lin_t relu_x Wt", "grad:Wt", "lin_t", 2);
        /* the second output stays an output, after the loss */
        OUTPUTS(g, "loss lin_d grad:Wt");
        MP_CHECK(st.forward_nodes == 6 && st.backward_nodes == 3 && st.pruned == 3 && st.param_grads == 1);
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
    (void)d;
}

/* Minimal needs: relu reads only y, conv reads x and W, add and flatten
 * read no forward value, flatten's gradient is a view of dY.
 *   x[1,3,8,8]; c = conv(x, W[4,3,3,3]) [1,4,6,6]; r = relu(c); s = add(r, c);
 *   v = flatten(s) [1,144]; y = fc(v, Wl[5,144]) [1,5]; loss = xent(y)
 * c is read by relu and add: grad:c = sum_n(grad:c@s, grad:c@r). */
static void test_needs(void) {
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("needs", &b));
    size_t x = T(b, "x", MP_TENSOR_INPUT, 1, 3, 8, 8), w = T(b, "W", MP_TENSOR_PARAMETER, 4, 3, 3, 3);
    size_t wl = T(b, "Wl", MP_TENSOR_PARAMETER, 5, 144);
    size_t c = OP(b, "c", "conv2d", NULL, x, w);
    size_t r = OP(b, "r", "nn.ReLU", NULL, c);
    size_t s = OP(b, "s", "add", NULL, r, c);
    mp_op_attrs_t fa;
    mp_op_attrs_init(&fa);   /* dim 1 */
    size_t v = OP(b, "v", "torch.flatten", &fa, s);
    size_t y = OP(b, "y", "linear", NULL, v, wl);
    mp_graph_t *fwd = finish(b, y), *g = NULL;
    mp_backward_stats_t st;
    if (fwd && (g = backward(fwd, &st))) {
        MP_CHECK(mp_graph_tensor(g, v)->alias_of == s);   /* the builder made flatten a view */
        BSTEP(g, 8, "bwd:y", "linear_backward", "grad:y v Wl", "grad:v grad:Wl", "y", 3);
        BSTEP(g, 9, "bwd:v", "flatten_backward", "grad:v", "grad:s", "v", 1);
        BSTEP(g, 10, "bwd:s", "add_backward", "grad:s", "grad:r grad:c@s", "s", 3);
        BSTEP(g, 11, "bwd:r", "relu_backward", "grad:r r", "grad:c@r", "r", 1);
        STEP(g, 12, "sum:c", "sum_n", "grad:c@s grad:c@r", "grad:c");
        BSTEP(g, 13, "bwd:c", "conv2d_backward", "grad:c x W", "grad:W", "c", 2);
        MP_CHECK_EQ_U64(mp_graph_node_count(g), 14);
        /* flatten_backward's output views grad:v's memory */
        MP_CHECK_EQ_U64(mp_graph_tensor(g, tensor_named(g, "grad:s"))->root, tensor_named(g, "grad:v"));
        MP_CHECK_EQ_U64(mp_graph_tensor(g, tensor_named(g, "grad:s"))->bytes, 0);
        const mp_graph_tensor_t *gs = mp_graph_tensor(g, tensor_named(g, "grad:s"));
        MP_CHECK(gs->rank == 4 && gs->shape[1] == 4 && gs->shape[3] == 6);
        OUTPUTS(g, "loss grad:W grad:Wl");
        MP_CHECK(st.aggregations == 1 && st.backward_nodes == 6);
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
    (void)r;
}

/* The note's in-place trap (chen2016 Fig. 2): A = conv(x, W), B = sigmoid(A),
 * C = sigmoid(B), E = avgpool(C), F = avgpool(B), G = mul(E, F); G is 4-D,
 * so add_loss appends loss = mean(G).  B feeds C and F, so B's gradient is
 * the sum of two contributions: avgpool_backward (reads only dF) and
 * sigmoid_backward of C (reads dC and C); the sum is read by B's own
 * sigmoid_backward together with B (sigmoid needs its output). */
static void test_trap(void) {
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("trap", &b));
    size_t x = T(b, "x", MP_TENSOR_INPUT, 1, 2, 4, 4), w = T(b, "W", MP_TENSOR_PARAMETER, 2, 2, 1, 1);
    mp_op_attrs_t pa;
    mp_op_attrs_init(&pa);
    pa.kernel[0] = pa.kernel[1] = pa.stride[0] = pa.stride[1] = 2;
    size_t A = OP(b, "A", "conv2d", NULL, x, w);
    size_t B = OP(b, "B", "sigmoid", NULL, A);
    size_t C = OP(b, "C", "sigmoid", NULL, B);
    size_t E = OP(b, "E", "avgpool2d", &pa, C);
    size_t F = OP(b, "F", "avgpool2d", &pa, B);
    size_t G = OP(b, "G", "mul", NULL, E, F);
    mp_graph_t *fwd = finish(b, G), *g = NULL;
    mp_backward_stats_t st;
    if (fwd && (g = backward(fwd, &st))) {
        MP_CHECK_EQ_U64(mp_graph_node_count(g), 7 + 1 + 7 + 1);
        STEP(g, 6, "loss", "mean", "G", "loss");
        STEP(g, 7, "seed:loss", "ones", "", "grad:loss");
        BSTEP(g, 8, "bwd:loss", "mean_backward", "grad:loss", "grad:G", "loss", 1);
        BSTEP(g, 9, "bwd:G", "mul_backward", "grad:G E F", "grad:E grad:F", "G", 3);
        BSTEP(g, 10, "bwd:F", "avgpool2d_backward", "grad:F", "grad:B@F", "F", 1);
        BSTEP(g, 11, "bwd:E", "avgpool2d_backward", "grad:E", "grad:C", "E", 1);
        BSTEP(g, 12, "bwd:C", "sigmoid_backward", "grad:C C", "grad:B@C", "C", 1);
        STEP(g, 13, "sum:B", "sum_n", "grad:B@F grad:B@C", "grad:B");
        BSTEP(g, 14, "bwd:B", "sigmoid_backward", "grad:B B", "grad:A", "B", 1);
        BSTEP(g, 15, "bwd:A", "conv2d_backward", "grad:A x W", "grad:W", "A", 2);
        OUTPUTS(g, "loss grad:W");
        /* no target for a mean loss */
        for (size_t i = 0; i < mp_graph_tensor_count(g); i++) MP_CHECK(strcmp(mp_graph_tensor(g, i)->name, "target"));
        MP_CHECK(st.aggregations == 1 && st.backward_nodes == 7 && st.forward_nodes == 7);
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
    (void)E;
    (void)F;
    (void)C;
}

/* A parameter whose only gradient comes out of a view op gets a copy (a
 * gradient owns its memory):  v = flatten(P[2,3,4]) [2,12]; y = fc(v, W). */
static void test_param_view(void) {
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("pview", &b));
    size_t p = T(b, "P", MP_TENSOR_PARAMETER, 2, 3, 4), w = T(b, "W", MP_TENSOR_PARAMETER, 5, 12);
    mp_op_attrs_t fa;
    mp_op_attrs_init(&fa);
    size_t v = OP(b, "v", "flatten", &fa, p);
    size_t y = OP(b, "y", "linear", NULL, v, w);
    mp_graph_t *fwd = finish(b, y), *g = NULL;
    if (fwd && (g = backward(fwd, NULL))) {
        BSTEP(g, 5, "bwd:y", "linear_backward", "grad:y v W", "grad:v grad:W", "y", 3);
        BSTEP(g, 6, "bwd:v", "flatten_backward", "grad:v", "grad:P@v", "v", 1);
        STEP(g, 7, "copy:P", "identity", "grad:P@v", "grad:P");
        MP_CHECK_EQ_U64(mp_graph_node_count(g), 8);
        MP_CHECK_EQ_U64(mp_graph_tensor(g, tensor_named(g, "grad:P@v"))->root, tensor_named(g, "grad:v"));
        OUTPUTS(g, "loss grad:P grad:W");
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
}

/* ---- refusals --------------------------------------------------------------------- */

static void test_refuse(void) {
    mp_graph_t *t, *g = (mp_graph_t *)1;
    if (MP_CHECK_OK(mp_graph_load("../bench/corpus/train/resnet18-b16.graph.json.gz", &t))) {
        mp_backward_opts_t o = {.add_loss = 1};
        MP_CHECK(mp_graph_backward(t, &o, &g, NULL) == MP_EINVAL);
        MP_CHECK(g == NULL && strstr(mp_last_error(), "already has gradients"));
        mp_graph_free(t);
    }
    /* an int output cannot take a loss; no outputs at all neither */
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("int", &b));
    size_t x = tensor(b, "idx", "int64", MP_TENSOR_INPUT, 1, (uint64_t[]){3});
    mp_graph_t *fwd = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &x, 1, MP_GRAPH_NONE, &fwd));
    MP_CHECK(mp_graph_backward(fwd, &(mp_backward_opts_t){.add_loss = 1}, &g, NULL) == MP_EINVAL);
    MP_CHECK(strstr(mp_last_error(), "int64"));
    mp_graph_free(fwd);
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, NULL, 0, MP_GRAPH_NONE, &fwd));
    MP_CHECK(mp_graph_backward(fwd, &(mp_backward_opts_t){.add_loss = 1}, &g, NULL) == MP_EINVAL);
    mp_graph_free(fwd);
    mp_graph_builder_free(b);
    /* a backward graph cannot be differentiated again */
    MP_CHECK_OK(mp_graph_builder_new("twice", &b));
    x = T(b, "x", MP_TENSOR_INPUT, 2, 3);
    size_t w = T(b, "W", MP_TENSOR_PARAMETER, 4, 3);
    size_t y = OP(b, "fc", "linear", NULL, x, w);
    fwd = finish(b, y);
    mp_graph_t *tr = fwd ? backward(fwd, NULL) : NULL;
    if (tr) {
        MP_CHECK(mp_graph_backward(tr, NULL, &g, NULL) == MP_EINVAL);
        mp_graph_free(tr);
    }
    mp_graph_free(fwd);
}

/* ---- the corpus -------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The node named name must be op reading ins and writing outs (tensor
 * names), the gradient of forward node fwd with grad_mask mask. */
static void expect_named(int line, const mp_graph_t *g, const char *name, const char *op, const char *ins,
                         const char *outs, const char *fwd, uint64_t mask) {
    size_t n_order;
    const size_t *order = mp_graph_order(g, &n_order);
    for (size_t s = 0; s < n_order; s++)
        if (!strcmp(mp_graph_node(g, order[s])->name, name)) {
            expect_step(line, g, s, name, op, ins, outs, fwd, mask);
            return;
        }
    mp_test_report(false, __FILE__, line, name);
}
#define NSTEP(g, name, op, ins, outs, fwd, mask) expect_named(__LINE__, g, name, op, ins, outs, fwd, mask)

/* tests/graph/views.json (an fx graph as the exporter writes it: views are
 * aliases; see test_exec.c): the gradients of the views read dY only (no
 * forward value); reshape/view and stochastic_depth give a view of dY
 * (0 bytes, rooted at dY's root), and so does an add of equal shapes for
 * both inputs; the others (permute, transpose, expand, chunk, getitem) a
 * new tensor.  chunk_backward reads the gradients of
 * both chunks (ch0's is a sum_n: ch0 feeds two interpolations); c feeds
 * the permute and the add, so its gradient is a sum as well. */
static void test_views(void) {
    mp_graph_t *fwd = NULL, *g = NULL;
    if (!MP_CHECK_OK(mp_graph_load("graph/views.json", &fwd))) return;
    mp_backward_stats_t st;
    if ((g = backward(fwd, &st))) {
        NSTEP(g, "bwd:gi", "getitem_backward", "grad:gi", "grad:ex", "gi", 1);
        NSTEP(g, "bwd:ex", "expand_backward", "grad:ex", "grad:cls", "ex", 1);
        NSTEP(g, "bwd:r2", "reshape_backward", "grad:r2", "grad:m2", "r2", 1);
        NSTEP(g, "bwd:m2", "reduce_mean_backward", "grad:m2", "grad:i2", "m2", 1);
        NSTEP(g, "bwd:i2", "interpolate_backward", "grad:i2", "grad:ch1", "i2", 1);
        NSTEP(g, "sum:ch0", "sum_n", "grad:ch0@i3 grad:ch0@i1", "grad:ch0", NULL, 0);
        NSTEP(g, "bwd:ch", "chunk_backward", "grad:ch0 grad:ch1", "grad:v2", "ch", 1);
        NSTEP(g, "bwd:v2", "reshape_backward", "grad:v2", "grad:ct", "v2", 1);
        NSTEP(g, "bwd:ct", "identity_backward", "grad:ct", "grad:tr", "ct", 1);
        NSTEP(g, "bwd:tr", "transpose_backward", "grad:tr", "grad:v", "tr", 1);
        NSTEP(g, "bwd:v", "reshape_backward", "grad:v", "grad:a", "v", 1);
        NSTEP(g, "bwd:a", "add_backward", "grad:a", "grad:sd grad:c@a", "a", 3);
        NSTEP(g, "bwd:sd", "stochastic_depth_backward", "grad:sd", "grad:q", "sd", 1);
        NSTEP(g, "bwd:q", "permute_backward", "grad:q", "grad:ln", "q", 1);
        NSTEP(g, "bwd:p", "permute_backward", "grad:p", "grad:c@p", "p", 1);
        NSTEP(g, "sum:c", "sum_n", "grad:c@a grad:c@p", "grad:c", NULL, 0);
        /* views of dY: no bytes, dY's root; the adds pass their dY on to
         * both inputs (a: grad:sd, grad:c@a; s1: grad:r2), so the views of
         * those are rooted at the add's dY's root too */
        static const char *const views[][2] = {{"grad:m2", "grad:s1"}, {"grad:r2", "grad:s1"},
                                               {"grad:ct", "grad:v2"}, {"grad:a", "grad:v"},
                                               {"grad:sd", "grad:v"}, {"grad:c@a", "grad:v"},
                                               {"grad:q", "grad:v"}};
        for (size_t i = 0; i < 7; i++) {
            const mp_graph_tensor_t *t = mp_graph_tensor(g, tensor_named(g, views[i][0]));
            MP_CHECK(t->bytes == 0 && t->root == tensor_named(g, views[i][1]));
        }
        static const char *const owned[] = {"grad:ex", "grad:cls", "grad:v2", "grad:v", "grad:ln", "grad:c@p"};
        for (size_t i = 0; i < 6; i++) {
            size_t id = tensor_named(g, owned[i]);
            MP_CHECK(mp_graph_tensor(g, id)->bytes > 0 && mp_graph_tensor(g, id)->root == id);
        }
        OUTPUTS(g, "loss grad:W grad:lnw grad:lnb grad:cls grad:Wl grad:bl");
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
}

/* An add hands dY on to its inputs as a view of dY's memory where nothing
 * changes it (torch's autograd passes the one tensor on); a broadcast
 * input, alpha != 1 and a subtraction's second input get their own bytes.
 *   h = fc(x, W) [2,5]; a = add(h, bb[5]) (broadcast); r = relu(a);
 *   d = sub(r, h); e = add(d, r, alpha 2); loss = xent(e) */
static bool is_view_of(const mp_graph_t *g, const char *name, const char *root) {
    const mp_graph_tensor_t *t = mp_graph_tensor(g, tensor_named(g, name));
    return t->bytes == 0 && t->root == tensor_named(g, root);
}
static bool owns(const mp_graph_t *g, const char *name) {
    size_t id = tensor_named(g, name);
    return mp_graph_tensor(g, id)->bytes > 0 && mp_graph_tensor(g, id)->root == id;
}
static void test_add_passes(void) {
    mp_graph_builder_t *b;
    MP_CHECK_OK(mp_graph_builder_new("passes", &b));
    size_t x = T(b, "x", MP_TENSOR_INPUT, 2, 4), w = T(b, "W", MP_TENSOR_PARAMETER, 5, 4);
    size_t bb = T(b, "bb", MP_TENSOR_PARAMETER, 5);
    size_t h = OP(b, "h", "linear", NULL, x, w);
    size_t a = OP(b, "a", "add", NULL, h, bb);
    size_t r = OP(b, "r", "relu", NULL, a);
    size_t d = OP(b, "d", "sub", NULL, r, h);
    mp_op_attrs_t two;
    mp_op_attrs_init(&two);
    two.alpha = 2.0;
    size_t e = OP(b, "e", "add", &two, d, r);
    mp_graph_t *fwd = finish(b, e), *g = NULL;
    if (fwd && (g = backward(fwd, NULL))) {
        NSTEP(g, "bwd:e", "add_backward", "grad:e", "grad:d grad:r@e", "e", 3);
        NSTEP(g, "bwd:d", "sub_backward", "grad:d", "grad:r@d grad:h@d", "d", 3);
        NSTEP(g, "bwd:a", "add_backward", "grad:a", "grad:h@a grad:bb", "a", 3);
        MP_CHECK(is_view_of(g, "grad:d", "grad:e") && is_view_of(g, "grad:r@d", "grad:e"));
        MP_CHECK(is_view_of(g, "grad:h@a", "grad:a"));
        MP_CHECK(owns(g, "grad:r@e") && owns(g, "grad:h@d") && owns(g, "grad:bb"));
        MP_CHECK(mp_graph_tensor(g, tensor_named(g, "grad:bb"))->kind == MP_TENSOR_GRADIENT);
        validate(g);
        mp_graph_free(g);
    }
    mp_graph_free(fwd);
}

static void test_corpus(void) {
    DIR *d = opendir("../bench/corpus/inference");
    if (!MP_CHECK(d)) return;
    char *names[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 14 && !strcmp(e->d_name + len - 14, ".graph.json.gz")) names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    MP_CHECK(n >= 24);
    printf("  %-34s %5s %5s %4s %4s %5s %12s %12s\n", "model", "fwd", "bwd", "sum", "prun", "grads", "infer B", "train B");
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "../bench/corpus/inference/%s", names[i]);
        mp_graph_t *fwd, *g;
        if (!MP_CHECK_OK(mp_graph_load(path, &fwd))) continue;
        mp_backward_stats_t st;
        mp_backward_opts_t o = {.add_loss = 1};
        if (MP_CHECK_OK(mp_graph_backward(fwd, &o, &g, &st))) {
            uint64_t train = validate(g);
            mp_buffer_t *b;
            size_t nb;
            uint64_t infer = 0;
            if (MP_CHECK_OK(mp_graph_records(fwd, 0, &b, &nb))) {
                for (size_t k = 0; k < nb; k++) infer += b[k].size;
                free(b);
            }
            MP_CHECK(train > infer);
            /* every trainable parameter of these models feeds the output */
            size_t trainable = 0;
            for (size_t t = 0; t < mp_graph_tensor_count(fwd); t++) {
                const mp_graph_tensor_t *x = mp_graph_tensor(fwd, t);
                trainable += x->kind == MP_TENSOR_PARAMETER && x->trainable && x->producer == MP_GRAPH_NONE;
            }
            MP_CHECK_EQ_U64(st.param_grads, trainable);
            MP_CHECK_EQ_U64(st.forward_nodes, mp_graph_node_count(fwd) + 1);
            MP_CHECK_EQ_U64(st.forward_nodes, st.backward_nodes + st.pruned);
            size_t n_out;
            mp_graph_outputs(g, &n_out);
            MP_CHECK_EQ_U64(n_out, 1 + st.param_grads);
            printf("  %-34s %5zu %5zu %4zu %4zu %5zu %12llu %12llu\n", names[i], st.forward_nodes, st.backward_nodes,
                   st.aggregations, st.pruned, st.param_grads, (unsigned long long)infer, (unsigned long long)train);
            mp_graph_free(g);
        } else {
            fprintf(stderr, "  %s\n", names[i]);
        }
        mp_graph_free(fwd);
        free(names[i]);
    }
}

int main(void) {
    test_mlp();
    test_sum();
    test_prune();
    test_needs();
    test_add_passes();
    test_trap();
    test_param_view();
    test_refuse();
    test_views();
    test_corpus();
    return mp_test_finish("test_backward");
}
