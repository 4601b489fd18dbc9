/* test_graph_build.c -- graphs made in memory, attributes, saving, orders.
 *
 * The builder: small graphs whose tensors, nodes and records are derived by
 * hand; aliases, parameters and gradients; every error path (each leaves
 * the builder as it was); finish rejects what the loader rejects (cycles,
 * bad orders); every jansson allocation failing in turn gives MP_ENOMEM
 * and no leak.  Attributes: every field written by the builder reads back;
 * attributes of real corpus nodes equal what their JSON says (read by hand,
 * quoted next to each check).  Saving: load(save(g)) equals g on every
 * inference graph and three training graphs (all accessors, attrs, records);
 * a failed save leaves nothing.  mp_graph_with_order: two independent
 * nodes swapped, and orders that are not topological or not permutations.
 * Runs from tests/ (ctest's working directory). */
#include "harness.h"
#include "graph/graph_internal.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NONE MP_GRAPH_NONE

static char dir[] = "/tmp/mp_test_graph_build_XXXXXX";

/* ---- comparing graphs ------------------------------------------------------- */

static bool same_attrs(const mp_op_attrs_t *a, const mp_op_attrs_t *b) {
    return a->kernel[0] == b->kernel[0] && a->kernel[1] == b->kernel[1] && a->stride[0] == b->stride[0] &&
           a->stride[1] == b->stride[1] && a->padding[0] == b->padding[0] && a->padding[1] == b->padding[1] &&
           a->dilation[0] == b->dilation[0] && a->dilation[1] == b->dilation[1] && a->groups == b->groups &&
           a->output_size[0] == b->output_size[0] && a->output_size[1] == b->output_size[1] &&
           a->dim == b->dim && a->end_dim == b->end_dim && a->ceil_mode == b->ceil_mode &&
           a->count_include_pad == b->count_include_pad && a->eps == b->eps && a->momentum == b->momentum &&
           a->alpha == b->alpha && a->forward_node == b->forward_node && a->grad_mask == b->grad_mask;
}

static bool same_ids(const size_t *a, size_t na, const size_t *b, size_t nb) {
    return na == nb && (!na || !memcmp(a, b, na * sizeof *a));
}

static bool same_records(const mp_graph_t *a, const mp_graph_t *b, int persistent) {
    mp_buffer_t *ra = NULL, *rb = NULL;
    size_t na = 0, nb = 0;
    bool ok = mp_graph_records(a, persistent, &ra, &na) == MP_OK &&
              mp_graph_records(b, persistent, &rb, &nb) == MP_OK && na == nb &&
              (!na || !memcmp(ra, rb, na * sizeof *ra));
    free(ra);
    free(rb);
    return ok;
}

/* Everything a graph exposes, compared; order_too 0 skips order and steps.
 * Returns false at the first difference, which it prints. */
static bool same_graph(const mp_graph_t *a, const mp_graph_t *b, bool order_too) {
#define DIFF(...) (fprintf(stderr, "  differ: " __VA_ARGS__), fprintf(stderr, "\n"), false)
    if (mp_graph_tensor_count(a) != mp_graph_tensor_count(b) || mp_graph_node_count(a) != mp_graph_node_count(b))
        return DIFF("counts");
    if (strcmp(mp_graph_model_name(a), mp_graph_model_name(b))) return DIFF("model name");
    if (!json_equal((json_t *)mp__graph_model_json(a), (json_t *)mp__graph_model_json(b)) &&
        (mp__graph_model_json(a) || mp__graph_model_json(b)))
        return DIFF("model object");
    for (size_t i = 0; i < mp_graph_tensor_count(a); i++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(a, i), *y = mp_graph_tensor(b, i);
        if (strcmp(x->name, y->name) || strcmp(x->dtype, y->dtype) || x->dtype_size != y->dtype_size ||
            !same_ids((const size_t *)x->shape, x->rank, (const size_t *)y->shape, y->rank) ||
            x->numel != y->numel || x->bytes != y->bytes || x->kind != y->kind || x->alias_of != y->alias_of ||
            x->root != y->root || x->producer != y->producer || x->trainable != y->trainable ||
            x->grad_of != y->grad_of)
            return DIFF("tensor %zu", i);
    }
    for (size_t i = 0; i < mp_graph_node_count(a); i++) {
        const mp_graph_node_t *x = mp_graph_node(a, i), *y = mp_graph_node(b, i);
        if (strcmp(x->name, y->name) || strcmp(x->op, y->op) ||
            !same_ids(x->inputs, x->n_inputs, y->inputs, y->n_inputs) ||
            !same_ids(x->outputs, x->n_outputs, y->outputs, y->n_outputs) ||
            (order_too && x->step != y->step) || x->inplace_capable != y->inplace_capable ||
            x->inplace != y->inplace || x->flops != y->flops)
            return DIFF("node %zu", i);
        const json_t *ja = mp__graph_node_attrs_json(a, i), *jb = mp__graph_node_attrs_json(b, i);
        if ((ja || jb) && !json_equal((json_t *)ja, (json_t *)jb)) return DIFF("node %zu attrs", i);
        mp_op_attrs_t aa, ab;
        mp_graph_node_attrs(a, i, &aa);
        mp_graph_node_attrs(b, i, &ab);
        if (!same_attrs(&aa, &ab)) return DIFF("node %zu mp_graph_node_attrs", i);
    }
    size_t na, nb;
    const size_t *oa = mp_graph_order(a, &na), *ob = mp_graph_order(b, &nb);
    if (order_too && !same_ids(oa, na, ob, nb)) return DIFF("order");
    oa = mp_graph_outputs(a, &na);
    ob = mp_graph_outputs(b, &nb);
    if (!same_ids(oa, na, ob, nb)) return DIFF("outputs");
    if (mp_graph_loss(a) != mp_graph_loss(b)) return DIFF("loss");
    if (order_too && (!same_records(a, b, 0) || !same_records(a, b, 1))) return DIFF("records");
    return true;
#undef DIFF
}

/* The node of g named name (NONE if none). */
static size_t node_named(const mp_graph_t *g, const char *name) {
    for (size_t i = 0; i < mp_graph_node_count(g); i++)
        if (!strcmp(mp_graph_node(g, i)->name, name)) return i;
    return NONE;
}

static bool has(const char *text, const char *part) {
    if (strstr(text, part)) return true;
    fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", text, part);
    return false;
}

/* ---- the builder ------------------------------------------------------------- */

/* x[4,8] -> linear(w[3,8], b[3]) -> y[4,3] -> relu -> z, by explicit nodes.
 * Records by hand (inference, 2 steps): x 0..0 128 B, y 0..1 48 B, z 1..1
 * (output: to the last step) 48 B; with persistent: w 96 B, b 12 B over 0..1. */
static void test_tiny(void) {
    mp_graph_builder_t *b;
    size_t x, w, bias, y, z, n0, n1;
    MP_CHECK_OK(mp_graph_builder_new("tiny", &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "x", NULL, (uint64_t[]){4, 8}, 2, MP_TENSOR_INPUT, NONE, &x));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "w", "float32", (uint64_t[]){3, 8}, 2, MP_TENSOR_PARAMETER, NONE, &w));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "b", NULL, (uint64_t[]){3}, 1, MP_TENSOR_PARAMETER, NONE, &bias));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "y", NULL, (uint64_t[]){4, 3}, 2, MP_TENSOR_ACTIVATION, NONE, &y));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "z", NULL, (uint64_t[]){4, 3}, 2, MP_TENSOR_OUTPUT, NONE, &z));
    MP_CHECK_OK(mp_graph_builder_node(b, "fc", "linear", (size_t[]){x, w, bias}, 3, &y, 1, NULL, &n0));
    MP_CHECK_OK(mp_graph_builder_node(b, "act", "relu", &y, 1, &z, 1, NULL, &n1));
    MP_CHECK(x == 0 && w == 1 && bias == 2 && y == 3 && z == 4 && n0 == 0 && n1 == 1);
    MP_CHECK_EQ_U64(mp_graph_builder_tensor_count(b), 5);
    MP_CHECK_EQ_U64(mp_graph_builder_node_count(b), 2);
    uint64_t shape[MP_MAX_RANK];
    size_t rank = 0;
    MP_CHECK_OK(mp_graph_builder_shape(b, w, shape, &rank));
    MP_CHECK(rank == 2 && shape[0] == 3 && shape[1] == 8);
    mp_graph_t *g = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &z, 1, NONE, &g));
    mp_graph_builder_free(b);
    if (!g) return;
    MP_CHECK(!strcmp(mp_graph_model_name(g), "tiny"));
    MP_CHECK_EQ_U64(mp_graph_tensor_count(g), 5);
    const mp_graph_tensor_t *t = mp_graph_tensor(g, w);
    MP_CHECK(t->kind == MP_TENSOR_PARAMETER && t->trainable == 1 && t->bytes == 96 && !strcmp(t->name, "w") &&
             !strcmp(t->dtype, "float32") && t->root == w && t->producer == NONE && t->grad_of == NONE);
    t = mp_graph_tensor(g, y);
    MP_CHECK(t->kind == MP_TENSOR_ACTIVATION && t->bytes == 48 && t->producer == n0 && !t->trainable);
    const mp_graph_node_t *nd = mp_graph_node(g, n1);
    MP_CHECK(!strcmp(nd->op, "relu") && !strcmp(nd->name, "act") && nd->n_inputs == 1 && nd->inputs[0] == y &&
             nd->n_outputs == 1 && nd->outputs[0] == z && nd->step == 1 && !nd->inplace);
    /* relu may run in place and y has z's shape and dtype, owns memory. */
    MP_CHECK(nd->inplace_capable == 1);
    MP_CHECK(mp_graph_node(g, n0)->inplace_capable == 0);
    size_t n;
    const size_t *o = mp_graph_outputs(g, &n);
    MP_CHECK(n == 1 && o[0] == z && mp_graph_loss(g) == NONE);
    mp_buffer_t *r = NULL;
    MP_CHECK_OK(mp_graph_records(g, 0, &r, &n));
    mp_buffer_t want[3] = {{0, 0, 0, 128, 0}, {3, 0, 1, 48, 0}, {4, 1, 1, 48, 0}};
    MP_CHECK(n == 3 && r && !memcmp(r, want, sizeof want));
    free(r);
    MP_CHECK_OK(mp_graph_records(g, 1, &r, &n));
    mp_buffer_t want_p[5] = {{0, 0, 0, 128, 0}, {1, 0, 1, 96, 0}, {2, 0, 1, 12, 0}, {3, 0, 1, 48, 0}, {4, 1, 1, 48, 0}};
    MP_CHECK(n == 5 && r && !memcmp(r, want_p, sizeof want_p));
    free(r);
    mp_graph_free(g);
}

/* The example of memplan.h through mp_graph_builder_op (shapes inferred by
 * the registry): linear of x[4,8] and w[3,8] is [4,3]; flatten is a view. */
static void test_op(void) {
    mp_graph_builder_t *b;
    size_t x, w, y, node, f, r;
    MP_CHECK_OK(mp_graph_builder_new(NULL, &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "x", NULL, (uint64_t[]){4, 8}, 2, MP_TENSOR_INPUT, NONE, &x));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "w", NULL, (uint64_t[]){3, 8}, 2, MP_TENSOR_PARAMETER, NONE, &w));
    MP_CHECK_OK(mp_graph_builder_op(b, "fc", "linear", (size_t[]){x, w}, 2, NULL, 1, &y, &node));
    uint64_t shape[MP_MAX_RANK];
    size_t rank;
    MP_CHECK_OK(mp_graph_builder_shape(b, y, shape, &rank));
    MP_CHECK(rank == 2 && shape[0] == 4 && shape[1] == 3);
    MP_CHECK_OK(mp_graph_builder_op(b, "act", "nn.ReLU", &y, 1, NULL, 1, &r, NULL));
    mp_op_attrs_t a;
    mp_op_attrs_init(&a);
    a.dim = 0;
    MP_CHECK_OK(mp_graph_builder_op(b, "flat", "flatten", &r, 1, &a, 1, &f, NULL));
    MP_CHECK_OK(mp_graph_builder_shape(b, f, shape, &rank));
    MP_CHECK(rank == 1 && shape[0] == 12);
    /* Wrong shapes: x[4,8] against a weight y[4,3] (in features 3, not 8). */
    size_t before = mp_graph_builder_tensor_count(b), bad_out = 77;
    mp_status s = mp_graph_builder_op(b, "bad", "linear", (size_t[]){x, y}, 2, NULL, 1, &bad_out, NULL);
    MP_CHECK(s == MP_EINVAL && has(mp_last_error(), "bad"));
    MP_CHECK_EQ_U64(mp_graph_builder_tensor_count(b), before);
    MP_CHECK_EQ_U64(mp_graph_builder_node_count(b), 3);
    s = mp_graph_builder_op(b, "u", "no.such.op", &x, 1, NULL, 1, &bad_out, NULL);
    MP_CHECK(s == MP_ENOTFOUND || s == MP_EINVAL);
    MP_CHECK_EQ_U64(mp_graph_builder_tensor_count(b), before);
    s = mp_graph_builder_op(b, "two", "relu", &x, 1, NULL, 2, (size_t[2]){0}, NULL);
    MP_CHECK(s == MP_EINVAL && mp_graph_builder_tensor_count(b) == before);
    s = mp_graph_builder_op(b, "gone", "relu", (size_t[]){99}, 1, NULL, 1, &bad_out, NULL);
    MP_CHECK(s == MP_EINVAL && has(mp_last_error(), "99"));
    mp_graph_t *g = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &f, 1, NONE, &g));
    mp_graph_builder_free(b);
    if (!g) return;
    MP_CHECK(!strcmp(mp_graph_model_name(g), ""));
    const mp_graph_tensor_t *t = mp_graph_tensor(g, f);
    MP_CHECK(t->alias_of == r && t->root == r && t->bytes == 0 && t->kind == MP_TENSOR_ACTIVATION);
    MP_CHECK(!strcmp(mp_graph_tensor(g, y)->name, "fc") && mp_graph_tensor(g, y)->producer == node);
    /* f is an output, so r (its root) lives to the last step, 2. */
    uint64_t first[6], last[6];
    mp_graph_lifetimes(g, first, last);
    MP_CHECK(first[r] == 1 && last[r] == 2);
    mp_graph_free(g);
}

/* Aliases: an alias of an alias points at the root; kinds; gradients. */
static void test_alias_param_grad(void) {
    mp_graph_builder_t *b;
    size_t p, q, v1, v2, gp, gq, bn;
    MP_CHECK_OK(mp_graph_builder_new("m", &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "p", NULL, (uint64_t[]){2, 3}, 2, MP_TENSOR_PARAMETER, NONE, &p));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "q", "float64", (uint64_t[]){5}, 1, MP_TENSOR_PARAMETER, NONE, &q));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "v1", NULL, (uint64_t[]){6}, 1, MP_TENSOR_PARAMETER, p, &v1));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "v2", NULL, (uint64_t[]){3, 2}, 2, MP_TENSOR_PARAMETER, v1, &v2));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "gp", NULL, (uint64_t[]){2, 3}, 2, MP_TENSOR_GRADIENT, NONE, &gp));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "gq", "float64", (uint64_t[]){5}, 1, MP_TENSOR_ACTIVATION, NONE, &gq));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "bn", "int64", NULL, 0, MP_TENSOR_PARAMETER, NONE, &bn));
    MP_CHECK_OK(mp_graph_builder_set_trainable(b, bn, 0));
    MP_CHECK_OK(mp_graph_builder_set_grad_of(b, gp, p));
    /* gq is not a gradient yet; after set_kind it is. */
    MP_CHECK(mp_graph_builder_set_grad_of(b, gq, q) == MP_EINVAL && has(mp_last_error(), "not a gradient"));
    MP_CHECK_OK(mp_graph_builder_set_kind(b, gq, MP_TENSOR_GRADIENT));
    MP_CHECK_OK(mp_graph_builder_set_grad_of(b, gq, q));
    MP_CHECK(mp_graph_builder_set_grad_of(b, gq, gp) == MP_EINVAL && has(mp_last_error(), "not a parameter"));
    MP_CHECK(mp_graph_builder_set_trainable(b, gq, 1) == MP_EINVAL);
    /* A parameter turned into an input loses trainable; and back gets it again. */
    MP_CHECK_OK(mp_graph_builder_set_kind(b, q, MP_TENSOR_INPUT));
    MP_CHECK_OK(mp_graph_builder_set_kind(b, q, MP_TENSOR_PARAMETER));
    size_t out[2] = {gp, gq};
    mp_graph_t *g = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, out, 2, NONE, &g));
    mp_graph_builder_free(b);
    if (!g) return;
    const mp_graph_tensor_t *t = mp_graph_tensor(g, v2);
    MP_CHECK(t->alias_of == p && t->root == p && t->bytes == 0 && t->numel == 6);
    MP_CHECK(mp_graph_tensor(g, v1)->alias_of == p);
    MP_CHECK(mp_graph_tensor(g, q)->trainable == 1 && mp_graph_tensor(g, q)->bytes == 40);
    MP_CHECK(mp_graph_tensor(g, bn)->trainable == 0 && mp_graph_tensor(g, bn)->rank == 0 &&
             mp_graph_tensor(g, bn)->bytes == 8);
    MP_CHECK(mp_graph_tensor(g, gp)->grad_of == p && mp_graph_tensor(g, gq)->grad_of == q &&
             mp_graph_tensor(g, gq)->kind == MP_TENSOR_GRADIENT);
    mp_graph_stats_t st;
    MP_CHECK_OK(mp_graph_stats(g, &st));
    /* p 24 + q 40 + gp 24 + gq 40 + bn 8, all persistent; two aliases. */
    MP_CHECK(st.aliases == 2 && st.owned_bytes == 136 && st.persistent_bytes == 136);
    mp_graph_free(g);
}

/* Every error path of the builder; each leaves it unchanged. */
static void test_errors(void) {
    mp_graph_builder_t *b;
    size_t x, y, id = 12345;
    uint64_t s2[2] = {2, 2};
    MP_CHECK_OK(mp_graph_builder_new("e", &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "x", NULL, s2, 2, MP_TENSOR_INPUT, NONE, &x));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "y", NULL, s2, 2, MP_TENSOR_ACTIVATION, NONE, &y));
    struct {
        mp_status got;
        const char *part;
    } cases[] = {
        {mp_graph_builder_tensor(b, "t", "float31", s2, 2, MP_TENSOR_INPUT, NONE, &id), "float31"},
        {mp_graph_builder_tensor(b, "t", NULL, s2, MP_MAX_RANK + 1, MP_TENSOR_INPUT, NONE, &id), "rank 9"},
        {mp_graph_builder_tensor(b, "t", NULL, NULL, 2, MP_TENSOR_INPUT, NONE, &id), "NULL shape"},
        {mp_graph_builder_tensor(b, "t", NULL, s2, 2, (mp_tensor_kind)9, NONE, &id), "kind 9"},
        {mp_graph_builder_tensor(b, "t", NULL, s2, 2, MP_TENSOR_INPUT, 7, &id), "alias_of 7"},
        {mp_graph_builder_tensor(b, "t", NULL, (uint64_t[]){1ull << 40, 1ull << 40}, 2, MP_TENSOR_INPUT, NONE, &id),
         "overflows"},
        {mp_graph_builder_tensor(b, "bad\xff", NULL, s2, 2, MP_TENSOR_INPUT, NONE, &id), "UTF-8"},
        {mp_graph_builder_set_trainable(b, 5, 1), "tensor 5"},
        {mp_graph_builder_set_trainable(b, x, 1), "not a parameter"},
        {mp_graph_builder_set_grad_of(b, 9, x), "tensor 9"},
        {mp_graph_builder_set_kind(b, 6, MP_TENSOR_INPUT), "tensor 6"},
        {mp_graph_builder_set_kind(b, x, (mp_tensor_kind)-1), "kind -1"},
        {mp_graph_builder_shape(b, 3, s2, &id), "tensor 3"},
        {mp_graph_builder_node(b, "n", NULL, &x, 1, &y, 1, NULL, &id), "NULL op"},
        {mp_graph_builder_node(b, "n", "relu", (size_t[]){42}, 1, &y, 1, NULL, &id), "tensor 42"},
        {mp_graph_builder_node(b, "n", "relu", &x, 1, (size_t[]){43}, 1, NULL, &id), "tensor 43"},
        {mp_graph_builder_node(b, "n", "add", &x, 1, (size_t[]){y, y}, 2, NULL, &id), "listed twice"},
        {mp_graph_builder_node(b, "n", "relu", NULL, 1, &y, 1, NULL, &id), "NULL"},
        {mp_graph_builder_node(b, "n", "relu\xfe", &x, 1, &y, 1, NULL, &id), "UTF-8"},
        {mp_graph_builder_node(b, "n", "relu", &x, 1, &y, 1, &(mp_op_attrs_t){.forward_node = 3, .eps = 1}, &id),
         "forward_node 3"},
        {mp_graph_builder_node(b, "n", "relu", &x, 1, &y, 1, &(mp_op_attrs_t){.forward_node = NONE, .eps = 1.0 / 0.0},
                               &id),
         "finite"},
        {mp_graph_builder_tensor(NULL, "t", NULL, s2, 2, MP_TENSOR_INPUT, NONE, &id), "NULL"},
        {mp_graph_builder_node(NULL, "n", "relu", &x, 1, &y, 1, NULL, &id), "NULL"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        if (!MP_CHECK(cases[k].got == MP_EINVAL)) fprintf(stderr, "  case %zu\n", k);
    /* The messages, re-run one at a time (mp_last_error keeps the last). */
    MP_CHECK(mp_graph_builder_tensor(b, "t", "float31", s2, 2, MP_TENSOR_INPUT, NONE, &id) == MP_EINVAL &&
             has(mp_last_error(), "mp_graph_builder_tensor") && has(mp_last_error(), "float31"));
    MP_CHECK(mp_graph_builder_tensor(b, "t", NULL, s2, 2, MP_TENSOR_INPUT, 7, &id) == MP_EINVAL &&
             has(mp_last_error(), "alias_of 7"));
    MP_CHECK(mp_graph_builder_node(b, "n", "relu", (size_t[]){42}, 1, &y, 1, NULL, &id) == MP_EINVAL &&
             has(mp_last_error(), "mp_graph_builder_node") && has(mp_last_error(), "tensor 42"));
    MP_CHECK(mp_graph_builder_node(b, "n", "add", &x, 1, (size_t[]){y, y}, 2, NULL, &id) == MP_EINVAL &&
             has(mp_last_error(), "listed twice"));
    MP_CHECK(id == 12345);
    MP_CHECK_EQ_U64(mp_graph_builder_tensor_count(b), 2);
    MP_CHECK_EQ_U64(mp_graph_builder_node_count(b), 0);
    /* A failed node released its claims: y can still be produced, once. */
    MP_CHECK_OK(mp_graph_builder_node(b, "ok", "relu", &x, 1, &y, 1, NULL, &id));
    MP_CHECK(mp_graph_builder_node(b, "again", "relu", &x, 1, &y, 1, NULL, NULL) == MP_EINVAL &&
             has(mp_last_error(), "already produced by node 0"));
    /* finish: bad outputs, loss and orders are the loader's MP_EPARSE. */
    mp_graph_t *g = (mp_graph_t *)1;
    MP_CHECK(mp_graph_builder_finish(b, NULL, (size_t[]){5}, 1, NONE, &g) == MP_EPARSE && !g &&
             has(mp_last_error(), "outputs[0]"));
    MP_CHECK(mp_graph_builder_finish(b, NULL, &y, 1, 9, &g) == MP_EPARSE && has(mp_last_error(), "loss"));
    MP_CHECK(mp_graph_builder_finish(b, (size_t[]){3}, &y, 1, NONE, &g) == MP_EPARSE &&
             has(mp_last_error(), "order[0]"));
    MP_CHECK(mp_graph_builder_finish(b, NULL, NULL, 1, NONE, &g) == MP_EINVAL);
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &y, 1, y, &g));
    MP_CHECK(g && mp_graph_loss(g) == y);
    mp_graph_free(g);
    mp_graph_builder_free(b);
    mp_graph_builder_free(NULL);
    MP_CHECK(mp_graph_builder_new(NULL, NULL) == MP_EINVAL);
    MP_CHECK(mp_graph_builder_new("\xc3", &b) == MP_EINVAL && b == NULL);
}

/* finish runs the loader's checks: a cycle, an order against the data flow. */
static void test_finish_checks(void) {
    mp_graph_builder_t *b;
    size_t t1, t2, t3, a, c;
    uint64_t s1[1] = {4};
    MP_CHECK_OK(mp_graph_builder_new("cyc", &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "t1", NULL, s1, 1, MP_TENSOR_ACTIVATION, NONE, &t1));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "t2", NULL, s1, 1, MP_TENSOR_ACTIVATION, NONE, &t2));
    MP_CHECK_OK(mp_graph_builder_node(b, "a", "relu", &t2, 1, &t1, 1, NULL, &a));
    MP_CHECK_OK(mp_graph_builder_node(b, "c", "relu", &t1, 1, &t2, 1, NULL, &c));
    mp_graph_t *g = NULL;
    MP_CHECK(mp_graph_builder_finish(b, NULL, &t2, 1, NONE, &g) == MP_EPARSE && !g);
    MP_CHECK(has(mp_last_error(), "cycle") && has(mp_last_error(), "node 0 'a'"));
    mp_graph_builder_free(b);

    MP_CHECK_OK(mp_graph_builder_new("ord", &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "t1", NULL, s1, 1, MP_TENSOR_INPUT, NONE, &t1));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "t2", NULL, s1, 1, MP_TENSOR_ACTIVATION, NONE, &t2));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "t3", NULL, s1, 1, MP_TENSOR_ACTIVATION, NONE, &t3));
    MP_CHECK_OK(mp_graph_builder_node(b, "a", "relu", &t1, 1, &t2, 1, NULL, &a));
    MP_CHECK_OK(mp_graph_builder_node(b, "c", "relu", &t2, 1, &t3, 1, NULL, &c));
    MP_CHECK(mp_graph_builder_finish(b, (size_t[]){1, 0}, &t3, 1, NONE, &g) == MP_EPARSE);
    MP_CHECK(has(mp_last_error(), "node 1 'c' (step 0) reads tensor 1 't2' before node 0 'a' (step 1)"));
    MP_CHECK(mp_graph_builder_finish(b, (size_t[]){0, 0}, &t3, 1, NONE, &g) == MP_EPARSE);
    MP_CHECK(has(mp_last_error(), "appears twice"));
    MP_CHECK_OK(mp_graph_builder_finish(b, (size_t[]){0, 1}, &t3, 1, NONE, &g));
    /* The builder stays usable after finish: extend and finish again. */
    size_t t4, d;
    MP_CHECK_OK(mp_graph_builder_tensor(b, "t4", NULL, s1, 1, MP_TENSOR_ACTIVATION, NONE, &t4));
    MP_CHECK_OK(mp_graph_builder_node(b, "d", "relu", &t3, 1, &t4, 1, NULL, &d));
    mp_graph_t *g2 = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &t4, 1, NONE, &g2));
    MP_CHECK(g && g2 && mp_graph_node_count(g) == 2 && mp_graph_node_count(g2) == 3);
    mp_graph_free(g);
    mp_graph_free(g2);
    mp_graph_builder_free(b);
}

/* Every field written by the builder reads back; and a convolution's
 * kernel is its weight's. */
static void test_attrs_roundtrip(void) {
    mp_op_attrs_t d, a, got;
    mp_op_attrs_init(&d);
    MP_CHECK(d.kernel[0] == 1 && d.stride[1] == 1 && d.padding[0] == 0 && d.dilation[1] == 1 && d.groups == 1 &&
             d.output_size[0] == 1 && d.dim == 1 && d.end_dim == -1 && !d.ceil_mode && d.count_include_pad &&
             d.eps == 1e-5 && d.momentum == 0.1 && d.alpha == 1.0 && d.forward_node == NONE && !d.grad_mask);
    a = (mp_op_attrs_t){.kernel = {3, 5},
                        .stride = {2, 4},
                        .padding = {1, 2},
                        .dilation = {2, 3},
                        .groups = 4,
                        .output_size = {7, 6},
                        .dim = -2,
                        .end_dim = 3,
                        .ceil_mode = 1,
                        .count_include_pad = 0,
                        .eps = 1.0 / 3.0,
                        .momentum = 0.37,
                        .alpha = -2.5,
                        .forward_node = 0,
                        .grad_mask = 0x15};
    mp_graph_builder_t *b;
    size_t x, w, y, z, c, n0, n1, n2;
    MP_CHECK_OK(mp_graph_builder_new("attrs", &b));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "x", NULL, (uint64_t[]){1, 4, 9, 9}, 4, MP_TENSOR_INPUT, NONE, &x));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "w", NULL, (uint64_t[]){8, 1, 3, 2}, 4, MP_TENSOR_PARAMETER, NONE, &w));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "y", NULL, (uint64_t[]){1}, 1, MP_TENSOR_ACTIVATION, NONE, &y));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "z", NULL, (uint64_t[]){1}, 1, MP_TENSOR_ACTIVATION, NONE, &z));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "c", NULL, (uint64_t[]){1}, 1, MP_TENSOR_ACTIVATION, NONE, &c));
    MP_CHECK_OK(mp_graph_builder_node(b, "plain", "custom_op", &x, 1, &y, 1, NULL, &n0));
    MP_CHECK_OK(mp_graph_builder_node(b, "full", "custom_op", &x, 1, &z, 1, &a, &n1));
    MP_CHECK_OK(mp_graph_builder_node(b, "conv", "nn.Conv2d", (size_t[]){x, w}, 2, &c, 1, &a, &n2));
    mp_graph_t *g = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &c, 1, NONE, &g));
    mp_graph_builder_free(b);
    if (!g) return;
    mp_graph_node_attrs(g, n0, &got);
    MP_CHECK(same_attrs(&got, &d));
    mp_graph_node_attrs(g, n1, &got);
    MP_CHECK(same_attrs(&got, &a));
    mp_graph_node_attrs(g, n2, &got);
    mp_op_attrs_t want = a;
    want.kernel[0] = 3;   /* w is [8, 1, 3, 2] */
    want.kernel[1] = 2;
    MP_CHECK(same_attrs(&got, &want));
    /* Past the end: the defaults. */
    mp_graph_node_attrs(g, 99, &got);
    MP_CHECK(same_attrs(&got, &d));
    /* The raw object holds the builder's keys. */
    const json_t *j = mp__graph_node_attrs_json(g, n1);
    MP_CHECK(j && json_integer_value(json_object_get(j, "forward_node")) == 0 &&
             json_integer_value(json_object_get(j, "grad_mask")) == 0x15 &&
             json_is_false(json_object_get(j, "inplace")));
    MP_CHECK(!json_object_get(mp__graph_node_attrs_json(g, n0), "forward_node"));
    mp_graph_free(g);
}

/* ---- allocation failures -----------------------------------------------------
 * jansson's allocator is replaced so the k-th allocation fails; the
 * builder, finish, builder_from, with_order and save allocate through it
 * (their own arrays through malloc, which test_oom's wrappers cover for the
 * rest of the library).  Every failure must be MP_ENOMEM, leave the builder
 * as it was (it still finishes) and leak nothing (ASan). */

static long jfail = -1;

static void *jmalloc(size_t n) {
    if (jfail >= 0 && jfail-- == 0) return NULL;
    return malloc(n);
}

/* One scenario with failure point k armed; false when something other than
 * MP_OK / MP_ENOMEM happened or a failure changed the builder. */
static bool oom_scenario(long k, bool *done) {
    mp_graph_builder_t *b = NULL;
    mp_graph_t *g = NULL, *h = NULL, *c = NULL;
    bool ok = true;
    mp_status s;
    size_t x, w, y, r, f, gw;
    const char *path = mp_test_path(dir, "oom.graph.json.gz");
    *done = false;
    jfail = k;
#define STEP(call)                                                                                  \
    do {                                                                                            \
        size_t nt_ = b ? mp_graph_builder_tensor_count(b) : 0;                                      \
        size_t nn_ = b ? mp_graph_builder_node_count(b) : 0;                                        \
        s = (call);                                                                                 \
        if (s) {                                                                                    \
            jfail = -1;                                                                             \
            ok = s == MP_ENOMEM;                                                                    \
            if (!ok) fprintf(stderr, "  failure %ld: %s: %s\n", k, #call, mp_last_error());          \
            if (b) {                                                                                \
                ok &= mp_graph_builder_tensor_count(b) == nt_ && mp_graph_builder_node_count(b) == nn_; \
                mp_graph_t *t_ = NULL;                                                              \
                if (nt_) ok &= mp_graph_builder_finish(b, NULL, (size_t[]){0}, 1, NONE, &t_) == MP_OK; \
                mp_graph_free(t_);                                                                  \
            }                                                                                       \
            goto out;                                                                               \
        }                                                                                           \
    } while (0)
    STEP(mp_graph_builder_new("oom", &b));
    STEP(mp_graph_builder_tensor(b, "x", NULL, (uint64_t[]){2, 3, 4, 4}, 4, MP_TENSOR_INPUT, NONE, &x));
    STEP(mp_graph_builder_tensor(b, "w", NULL, (uint64_t[]){5, 3, 3, 3}, 4, MP_TENSOR_PARAMETER, NONE, &w));
    STEP(mp_graph_builder_set_trainable(b, w, 1));
    STEP(mp_graph_builder_op(b, "conv", "conv2d", (size_t[]){x, w}, 2, NULL, 1, &y, NULL));
    STEP(mp_graph_builder_op(b, "relu", "relu", &y, 1, NULL, 1, &r, NULL));
    STEP(mp_graph_builder_op(b, "flat", "flatten", &r, 1, NULL, 1, &f, NULL));
    STEP(mp_graph_builder_tensor(b, "gw", NULL, (uint64_t[]){5, 3, 3, 3}, 4, MP_TENSOR_GRADIENT, NONE, &gw));
    STEP(mp_graph_builder_set_grad_of(b, gw, w));
    STEP(mp_graph_builder_set_kind(b, gw, MP_TENSOR_GRADIENT));
    STEP(mp_graph_builder_node(b, "g", "custom", &f, 1, &gw, 1, &(mp_op_attrs_t){.forward_node = 0, .eps = 1}, NULL));
    STEP(mp_graph_builder_finish(b, NULL, &gw, 1, NONE, &g));
    {
        mp_graph_builder_t *b2 = NULL;
        STEP(mp_graph_builder_from(g, &b2));
        s = mp_graph_builder_finish(b2, NULL, &gw, 1, NONE, &c);
        mp_graph_builder_free(b2);
        STEP(s);
    }
    STEP(mp_graph_with_order(g, (size_t[]){0, 1, 2, 3}, &h));
    s = mp_graph_save(g, path);
    if (s) {
        ok &= s == MP_ENOMEM && access(path, F_OK) != 0;
        goto out;
    }
    jfail = -1;
    *done = true;
    ok &= same_graph(g, c, true) && same_graph(g, h, true);
    remove(path);
out:
#undef STEP
    jfail = -1;
    mp_graph_free(g);
    mp_graph_free(h);
    mp_graph_free(c);
    mp_graph_builder_free(b);
    return ok;
}

static void test_oom(void) {
    json_set_alloc_funcs(jmalloc, free);
    long k = 0;
    bool done = false;
    for (; !done && k < 100000; k++)
        if (!MP_CHECK(oom_scenario(k, &done))) break;
    MP_CHECK(done);
    MP_CHECK(k > 50);   /* the scenario allocates through jansson many times */
    fprintf(stderr, "  jansson allocation failures exercised: %ld\n", k - 1);
    json_set_alloc_funcs(malloc, free);
}

/* ---- attributes of real graphs ------------------------------------------------ */

static mp_graph_t *load(const char *path) {
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_load(path, &g))) fprintf(stderr, "  %s: %s\n", path, mp_last_error());
    return g;
}

/* attrs of node name of g; false (reported) when there is no such node. */
static bool attrs_of(const mp_graph_t *g, const char *name, mp_op_attrs_t *a) {
    size_t id = node_named(g, name);
    mp_op_attrs_init(a);
    if (!MP_CHECK(id != NONE)) {
        fprintf(stderr, "  no node '%s'\n", name);
        return false;
    }
    mp_graph_node_attrs(g, id, a);
    return true;
}

#define PAIR(p, x, y) ((p)[0] == (x) && (p)[1] == (y))

static void test_corpus_attrs(void) {
    mp_graph_t *g;
    mp_op_attrs_t a;
    if ((g = load("../bench/corpus/inference/resnet18.graph.json.gz"))) {
        /* conv1 config: kernel_size [7,7], stride [2,2], padding [3,3], dilation [1,1], groups 1 */
        if (attrs_of(g, "conv1", &a))
            MP_CHECK(PAIR(a.kernel, 7, 7) && PAIR(a.stride, 2, 2) && PAIR(a.padding, 3, 3) &&
                     PAIR(a.dilation, 1, 1) && a.groups == 1);
        /* maxpool config: kernel_size 3, stride 2, padding 1, dilation 1, ceil_mode false */
        if (attrs_of(g, "maxpool", &a))
            MP_CHECK(PAIR(a.kernel, 3, 3) && PAIR(a.stride, 2, 2) && PAIR(a.padding, 1, 1) &&
                     PAIR(a.dilation, 1, 1) && !a.ceil_mode);
        /* bn1 config: eps 1e-05, momentum 0.1 */
        if (attrs_of(g, "bn1", &a)) MP_CHECK(a.eps == 1e-5 && a.momentum == 0.1);
        /* avgpool config: output_size [1,1] */
        if (attrs_of(g, "avgpool", &a)) MP_CHECK(PAIR(a.output_size, 1, 1));
        /* operator.add: no alpha */
        if (attrs_of(g, "add", &a)) MP_CHECK(a.alpha == 1.0 && a.forward_node == NONE);
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/mobilenet_v2.graph.json.gz"))) {
        /* features_1_conv_0_0 config: kernel_size [3,3], groups 32 */
        if (attrs_of(g, "features_1_conv_0_0", &a)) MP_CHECK(PAIR(a.kernel, 3, 3) && a.groups == 32);
        /* F.adaptive_avg_pool2d args [t, [1,1]] */
        if (attrs_of(g, "adaptive_avg_pool2d", &a)) MP_CHECK(PAIR(a.output_size, 1, 1));
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/inception_v3.graph.json.gz"))) {
        /* F.max_pool2d args [t, 3], kwargs stride 2, padding 0, dilation 1, ceil_mode false */
        if (attrs_of(g, "max_pool2d", &a))
            MP_CHECK(PAIR(a.kernel, 3, 3) && PAIR(a.stride, 2, 2) && PAIR(a.padding, 0, 0) && !a.ceil_mode);
        /* torch.avg_pool2d kwargs kernel_size 3, stride 1, padding 1 */
        if (attrs_of(g, "avg_pool2d", &a))
            MP_CHECK(PAIR(a.kernel, 3, 3) && PAIR(a.stride, 1, 1) && PAIR(a.padding, 1, 1) && a.count_include_pad);
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/densenet121.graph.json.gz"))) {
        /* nn.AvgPool2d config: kernel_size 2, stride 2, padding 0, ceil_mode false, count_include_pad true */
        if (attrs_of(g, "features_transition1_pool", &a))
            MP_CHECK(PAIR(a.kernel, 2, 2) && PAIR(a.stride, 2, 2) && PAIR(a.padding, 0, 0) && a.count_include_pad);
        /* torch.cat args [[t], 1]; torch.flatten args [t, 1] */
        if (attrs_of(g, "cat", &a)) MP_CHECK(a.dim == 1);
        if (attrs_of(g, "flatten", &a)) MP_CHECK(a.dim == 1 && a.end_dim == -1);
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/googlenet.graph.json.gz"))) {
        /* maxpool1 config: kernel_size 3, stride 2, padding 0, ceil_mode true */
        if (attrs_of(g, "maxpool1", &a))
            MP_CHECK(PAIR(a.kernel, 3, 3) && PAIR(a.stride, 2, 2) && PAIR(a.padding, 0, 0) && a.ceil_mode);
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/shufflenet_v2_x1_0.graph.json.gz"))) {
        /* torch.cat args [[t, t]], kwargs dim 1 */
        if (attrs_of(g, "cat", &a)) MP_CHECK(a.dim == 1);
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/regnet_y_400mf.graph.json.gz"))) {
        /* Tensor.flatten kwargs start_dim 1 */
        if (attrs_of(g, "flatten", &a)) MP_CHECK(a.dim == 1 && a.end_dim == -1);
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/alexnet.graph.json.gz"))) {
        /* nn.AdaptiveAvgPool2d config output_size [6,6] */
        if (attrs_of(g, "avgpool", &a)) MP_CHECK(PAIR(a.output_size, 6, 6));
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/inference/convnext_tiny.graph.json.gz"))) {
        /* nn.LayerNorm config eps 1e-06; nn.Flatten config start_dim 1, end_dim -1 */
        if (attrs_of(g, "features_1_0_block_2", &a)) MP_CHECK(a.eps == 1e-6);
        if (attrs_of(g, "classifier_1", &a)) MP_CHECK(a.dim == 1 && a.end_dim == -1);
        mp_graph_free(g);
    }
    if ((g = load("../bench/corpus/train/resnet18-b16.graph.json.gz"))) {
        /* aten::convolution args [x, w, null, [2,2], [3,3], [1,1], false, [0,0], 1]; w is [64,3,7,7] */
        if (attrs_of(g, "convolution", &a))
            MP_CHECK(PAIR(a.kernel, 7, 7) && PAIR(a.stride, 2, 2) && PAIR(a.padding, 3, 3) && a.groups == 1);
        /* aten::max_pool2d_with_indices args [x, [3,3], [2,2], [1,1]] */
        if (attrs_of(g, "max_pool2d_with_indices", &a))
            MP_CHECK(PAIR(a.kernel, 3, 3) && PAIR(a.stride, 2, 2) && PAIR(a.padding, 1, 1));
        mp_graph_free(g);
    }
}

/* The rules without a corpus example: defaults that differ by function,
 * later places overriding earlier ones, wrong types ignored. */
static void test_attrs_rules(void) {
    static const char text[] =
        "{\"format\":\"memplan-graph/1\",\"tensors\":["
        "{\"id\":0,\"shape\":[1,2,8,8],\"dtype\":\"float32\",\"bytes\":512,\"kind\":\"input\"},"
        "{\"id\":1,\"shape\":[4,2,5,3],\"dtype\":\"float32\",\"bytes\":480,\"kind\":\"parameter\"}],"
        "\"nodes\":["
        "{\"id\":0,\"op\":\"F.max_pool2d\",\"inputs\":[0],\"outputs\":[],\"attrs\":{\"args\":[{\"tensor\":0},3]}},"
        "{\"id\":1,\"op\":\"F.max_pool2d\",\"inputs\":[0],\"outputs\":[],"
        "\"attrs\":{\"args\":[{\"tensor\":0},[4,2]],\"kwargs\":{\"stride\":null,\"padding\":[1]}}},"
        "{\"id\":2,\"op\":\"torch.flatten\",\"inputs\":[0],\"outputs\":[],\"attrs\":{\"args\":[{\"tensor\":0}]}},"
        "{\"id\":3,\"op\":\"torch.cat\",\"inputs\":[0],\"outputs\":[],\"attrs\":{\"args\":[[{\"tensor\":0}]]}},"
        "{\"id\":4,\"op\":\"F.softmax\",\"inputs\":[0],\"outputs\":[],\"attrs\":{\"args\":[{\"tensor\":0},-1]}},"
        "{\"id\":5,\"op\":\"torch.add\",\"inputs\":[0],\"outputs\":[],\"attrs\":{\"kwargs\":{\"alpha\":0.5}}},"
        "{\"id\":6,\"op\":\"nn.Conv2d\",\"inputs\":[0,1],\"outputs\":[],\"attrs\":{\"config\":{\"stride\":2}}},"
        "{\"id\":7,\"op\":\"nn.MaxPool2d\",\"inputs\":[0],\"outputs\":[],"
        "\"attrs\":{\"config\":{\"kernel_size\":2,\"stride\":\"x\",\"eps\":\"y\",\"dim\":true},\"kernel_size\":5}},"
        "{\"id\":8,\"op\":\"F.avg_pool2d\",\"inputs\":[0],\"outputs\":[],"
        "\"attrs\":{\"args\":[{\"tensor\":0},2,1,0,true,false],\"kwargs\":{\"stride\":3}}},"
        "{\"id\":9,\"op\":\"Tensor.flatten\",\"inputs\":[0],\"outputs\":[],\"attrs\":{\"args\":[{\"tensor\":0},2,3]}},"
        "{\"id\":10,\"op\":\"relu\",\"inputs\":[0],\"outputs\":[]}],"
        "\"order\":[0,1,2,3,4,5,6,7,8,9,10],\"outputs\":[]}";
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_parse(text, strlen(text), "rules.json", &g))) {
        fprintf(stderr, "  %s\n", mp_last_error());
        return;
    }
    mp_op_attrs_t a, d;
    mp_op_attrs_init(&d);
    mp_graph_node_attrs(g, 0, &a); /* F.max_pool2d(x, 3): stride defaults to the kernel */
    MP_CHECK(PAIR(a.kernel, 3, 3) && PAIR(a.stride, 3, 3) && PAIR(a.padding, 0, 0));
    mp_graph_node_attrs(g, 1, &a); /* kernel (4,2), stride=None, padding [1] */
    MP_CHECK(PAIR(a.kernel, 4, 2) && PAIR(a.stride, 4, 2) && PAIR(a.padding, 1, 1));
    mp_graph_node_attrs(g, 2, &a); /* torch.flatten(x): start_dim 0 */
    MP_CHECK(a.dim == 0 && a.end_dim == -1);
    mp_graph_node_attrs(g, 3, &a); /* torch.cat([x]): dim 0 */
    MP_CHECK(a.dim == 0);
    mp_graph_node_attrs(g, 4, &a);
    MP_CHECK(a.dim == -1);
    mp_graph_node_attrs(g, 5, &a);
    MP_CHECK(a.alpha == 0.5);
    mp_graph_node_attrs(g, 6, &a); /* conv without kernel_size: the weight's [.., 5, 3] */
    MP_CHECK(PAIR(a.kernel, 5, 3) && PAIR(a.stride, 2, 2));
    mp_graph_node_attrs(g, 7, &a); /* attrs key beats config; bad types ignored */
    MP_CHECK(PAIR(a.kernel, 5, 5) && PAIR(a.stride, 5, 5) && a.eps == 1e-5 && a.dim == 1);
    mp_graph_node_attrs(g, 8, &a); /* args (x, 2, 1, 0, True, False), then kwargs stride 3 */
    MP_CHECK(PAIR(a.kernel, 2, 2) && PAIR(a.stride, 3, 3) && a.ceil_mode && !a.count_include_pad);
    mp_graph_node_attrs(g, 9, &a);
    MP_CHECK(a.dim == 2 && a.end_dim == 3);
    mp_graph_node_attrs(g, 10, &a); /* no attrs at all */
    MP_CHECK(same_attrs(&a, &d) && !mp__graph_node_attrs_json(g, 10));
    mp_graph_free(g);
}

/* ---- saving --------------------------------------------------------------------- */

static size_t count_lines(const char *path) {
    FILE *f = fopen(path, "r");
    size_t n = 0;
    int c;
    if (!f) return 0;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

/* load(save(g)) == g, compressed and plain; a builder copy finishes to g. */
static void roundtrip(const char *path, bool plain_too) {
    mp_graph_t *g = load(path), *h = NULL;
    if (!g) return;
    const char *gz = mp_test_path(dir, "rt.graph.json.gz");
    MP_CHECK_OK(mp_graph_save(g, gz));
    FILE *f = fopen(gz, "rb");
    MP_CHECK(f && fgetc(f) == 0x1f && fgetc(f) == 0x8b);   /* gzip magic */
    if (f) fclose(f);
    if (MP_CHECK_OK(mp_graph_load(gz, &h)) && !MP_CHECK(same_graph(g, h, true))) fprintf(stderr, "  %s\n", path);
    mp_graph_free(h);
    h = NULL;
    remove(gz);
    if (plain_too) {
        const char *plain = mp_test_path(dir, "rt.graph.json");
        MP_CHECK_OK(mp_graph_save(g, plain));
        /* one line per tensor and per node, 11 more with the model */
        MP_CHECK_EQ_U64(count_lines(plain), mp_graph_tensor_count(g) + mp_graph_node_count(g) + 11);
        if (MP_CHECK_OK(mp_graph_load(plain, &h))) MP_CHECK(same_graph(g, h, true));
        mp_graph_free(h);
        h = NULL;
        remove(plain);
    }
    mp_graph_builder_t *b;
    if (MP_CHECK_OK(mp_graph_builder_from(g, &b))) {
        size_t n_order, n_out;
        const size_t *order = mp_graph_order(g, &n_order), *outs = mp_graph_outputs(g, &n_out);
        if (MP_CHECK_OK(mp_graph_builder_finish(b, order, outs, n_out, mp_graph_loss(g), &h)))
            MP_CHECK(same_graph(g, h, true));
        mp_graph_free(h);
        mp_graph_builder_free(b);
    }
    mp_graph_free(g);
}

static void test_save_corpus(void) {
    DIR *d = opendir("../bench/corpus/inference");
    size_t n = 0;
    if (!MP_CHECK(d != NULL)) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 14 || strcmp(e->d_name + len - 14, ".graph.json.gz")) continue;
        snprintf(path, sizeof path, "../bench/corpus/inference/%s", e->d_name);
        roundtrip(path, n++ < 3);
    }
    closedir(d);
    MP_CHECK(n >= 20);
    /* Training graphs: gradients, grad_of, trainable false, loss. */
    roundtrip("../bench/corpus/train/resnet18-b16.graph.json.gz", true);
    roundtrip("../bench/corpus/train/mobilenet_v2-b16.graph.json.gz", false);
    roundtrip("../bench/corpus/train/vit_b_16-b8.graph.json.gz", false);
}

static size_t dir_entries(const char *path) {
    DIR *d = opendir(path);
    size_t n = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

/* A save that cannot complete leaves nothing behind. */
static void test_save_fail(void) {
    mp_graph_t *g = load("graph/small.json");
    if (!g) return;
    MP_CHECK(mp_graph_save(g, mp_test_path(dir, "missing/g.json")) == MP_EIO && has(mp_last_error(), "missing/g.json"));
    MP_CHECK(access(mp_test_path(dir, "missing"), F_OK) != 0);
    /* The target is a directory: the temporary file is written, rename fails, it is removed. */
    char sub[512];
    snprintf(sub, sizeof sub, "%s", mp_test_path(dir, "sub"));
    MP_CHECK(mkdir(sub, 0700) == 0);
    MP_CHECK(mp_graph_save(g, sub) == MP_EIO);
    MP_CHECK_EQ_U64(dir_entries(dir), 1);
    MP_CHECK_EQ_U64(dir_entries(sub), 0);
    rmdir(sub);
    MP_CHECK(mp_graph_save(g, "") == MP_EINVAL && mp_graph_save(NULL, "x") == MP_EINVAL);
    mp_graph_free(g);
}

/* ---- other orders ------------------------------------------------------------------- */

static void test_with_order(void) {
    mp_graph_t *g = load("../bench/corpus/inference/resnet18.graph.json.gz"), *h = NULL;
    if (!g) return;
    size_t n;
    const size_t *order = mp_graph_order(g, &n);
    size_t *o = malloc(n * sizeof *o);
    memcpy(o, order, n * sizeof *o);
    /* Steps 22 and 23 run layer2_0_bn2 (reads layer2_0_conv2) and
     * layer2_0_downsample_0 (reads layer1's output): independent. */
    size_t s = 22, bn2 = node_named(g, "layer2_0_bn2"), ds = node_named(g, "layer2_0_downsample_0");
    MP_CHECK(o[s] == bn2 && o[s + 1] == ds);
    o[s] = ds;
    o[s + 1] = bn2;
    if (MP_CHECK_OK(mp_graph_with_order(g, o, &h))) {
        size_t m;
        const size_t *ho = mp_graph_order(h, &m);
        MP_CHECK(m == n && !memcmp(ho, o, n * sizeof *o));
        MP_CHECK(mp_graph_node(h, ds)->step == s && mp_graph_node(h, bn2)->step == s + 1);
        MP_CHECK(same_graph(g, h, false));
        /* ds's output now appears one step earlier, bn2's one step later. */
        uint64_t *f0 = malloc(2 * mp_graph_tensor_count(g) * sizeof *f0), *l0 = f0 + mp_graph_tensor_count(g);
        uint64_t *f1 = malloc(2 * mp_graph_tensor_count(g) * sizeof *f1), *l1 = f1 + mp_graph_tensor_count(g);
        mp_graph_lifetimes(g, f0, l0);
        mp_graph_lifetimes(h, f1, l1);
        size_t yd = mp_graph_node(g, ds)->outputs[0], yb = mp_graph_node(g, bn2)->outputs[0];
        MP_CHECK(f0[yd] == s + 1 && f1[yd] == s && f0[yb] == s && f1[yb] == s + 1);
        free(f0);
        free(f1);
        mp_graph_free(h);
        h = NULL;
    }
    /* Swapping conv1 (step 0) and bn1 (step 1): bn1 reads conv1's output. */
    memcpy(o, order, n * sizeof *o);
    o[0] = order[1];
    o[1] = order[0];
    MP_CHECK(mp_graph_with_order(g, o, &h) == MP_EINVAL && !h);
    MP_CHECK(has(mp_last_error(), "node 1 'bn1' (step 0) reads tensor 2 'conv1' before node 0 'conv1' (step 1)"));
    memcpy(o, order, n * sizeof *o);
    o[5] = o[4];
    MP_CHECK(mp_graph_with_order(g, o, &h) == MP_EINVAL && has(mp_last_error(), "appears twice"));
    o[5] = 1000;
    MP_CHECK(mp_graph_with_order(g, o, &h) == MP_EINVAL && has(mp_last_error(), "node 1000 does not exist"));
    MP_CHECK(mp_graph_with_order(g, NULL, &h) == MP_EINVAL);
    free(o);
    mp_graph_free(g);
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_tiny();
    test_op();
    test_alias_param_grad();
    test_errors();
    test_finish_checks();
    test_attrs_roundtrip();
    test_oom();
    test_corpus_attrs();
    test_attrs_rules();
    test_save_corpus();
    test_save_fail();
    test_with_order();
    rmdir(dir);
    return mp_test_finish("graph_build");
}
