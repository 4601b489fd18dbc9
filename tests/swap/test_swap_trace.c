/* test_swap_trace.c -- traces with op boundaries (docs/trace-format.md)
 * and the timed iterations made of them (src/swap/iter_trace.c,
 * src/exec/exec_trace.c): the 'o' event's text format and round trip, its
 * errors, the rules that turn a trace into an iteration (worked by hand),
 * graph -> trace -> iteration giving the same iteration, selection and
 * simulation as graph -> iteration, and the executor's recorded step
 * holding every block and op of the step. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char dir[] = "/tmp/mp_test_swap_trace_XXXXXX";

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return buf;
}

/* Recorded through the API, written, read back: the writer's text is as
 * docs/trace-format.md says (an op's name after its duration, none when
 * unnamed, line breaks in a name written as spaces), and every event and
 * name survives. */
static void test_round_trip(void) {
    mp_trace_t *t, *u = NULL;
    if (!MP_CHECK_OK(mp_trace_create(&t))) return;
    MP_CHECK_OK(mp_trace_record_alloc(t, 0x10, 100, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_op(t, 1500, "conv 1"));
    MP_CHECK_OK(mp_trace_record_alloc(t, 0x20, 64, 7));
    MP_CHECK_OK(mp_trace_record_access(t, 0x10, 0, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_op(t, 0, NULL));
    MP_CHECK_OK(mp_trace_record_access(t, 0x20, 1, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_free(t, 0x20, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_op(t, 25, "a\nb"));
    MP_CHECK_EQ_U64(mp_trace_op_count(t), 3);
    MP_CHECK(!strcmp(mp_trace_op_name(t, 0), "conv 1") && !strcmp(mp_trace_op_name(t, 1), "") &&
             mp_trace_op_name(t, 3) == NULL);
    mp_trace_stats_t st;
    MP_CHECK_OK(mp_trace_stats(t, &st));
    MP_CHECK(st.events == 8 && st.ops == 3 && st.op_ns == 1525 && st.allocs == 2 && st.reads == 1);
    const char *p = mp_test_path(dir, "rt.trace");
    MP_CHECK_OK(mp_trace_write(p, t));
    const char *text = slurp(p);
    MP_CHECK(text && !strcmp(text, "# memplan-trace/1\na 0x10 100\no 1500 conv 1\na 0x20 64 7\nr 0x10\no 0\n"
                                   "w 0x20\nf 0x20\no 25 a b\n"));
    if (MP_CHECK_OK(mp_trace_read(p, &u))) {
        size_t n, m;
        const mp_event_t *a = mp_trace_events(t, &n), *b = mp_trace_events(u, &m);
        MP_CHECK_EQ_U64(m, n);
        for (size_t i = 0; i < n && i < m; i++)
            MP_CHECK(a[i].kind == b[i].kind && a[i].handle == b[i].handle && a[i].size == b[i].size &&
                     a[i].ns == b[i].ns && a[i].block == b[i].block && a[i].end == b[i].end);
        MP_CHECK(!strcmp(mp_trace_op_name(u, 0), "conv 1") && !strcmp(mp_trace_op_name(u, 2), "a b"));
        MP_CHECK(b[1].kind == MP_EV_OP && b[1].size == 1500 && b[1].block == 0 && b[4].block == 1);
    }
    mp_trace_free(u);
    mp_trace_free(t);
}

/* The reader: blanks around an op's name go, blanks inside stay (tabs
 * too); a comment or blank line between ops changes nothing. */
static void test_read_names(void) {
    const char *p = mp_test_path(dir, "names.trace");
    mp_test_write_file(p, "# memplan-trace/1\r\n  o\t12   fc 1\t(x)  \r\n\n# c\no 3\r\no 4 #5\n");
    mp_trace_t *t = NULL;
    if (!MP_CHECK_OK(mp_trace_read(p, &t))) return;
    MP_CHECK_EQ_U64(mp_trace_op_count(t), 3);
    MP_CHECK(!strcmp(mp_trace_op_name(t, 0), "fc 1\t(x)") && !strcmp(mp_trace_op_name(t, 1), "") &&
             !strcmp(mp_trace_op_name(t, 2), "#5"));
    size_t n;
    const mp_event_t *e = mp_trace_events(t, &n);
    MP_CHECK(n == 3 && e[0].size == 12 && e[1].size == 3 && e[2].size == 4);
    mp_trace_free(t);
}

static void expect_error(const char *body, const char *msg) {
    const char *p = mp_test_path(dir, "bad.trace");
    char text[512];
    snprintf(text, sizeof text, "# memplan-trace/1\na 0x1 8\n%s\n", body);
    mp_test_write_file(p, text);
    mp_trace_t *t = (mp_trace_t *)1;
    mp_status s = mp_trace_read(p, &t);
    const char *e = mp_last_error(), *tail = strstr(e, "bad.trace:");
    MP_CHECK(s == MP_EPARSE && t == NULL);
    if (!MP_CHECK(tail && !strcmp(tail, msg))) fprintf(stderr, "  got: %s\n  want: %s\n", e, msg);
}

/* Errors name the file, line and field, as for the other events. */
static void test_errors(void) {
    expect_error("o", "bad.trace:3: field 'duration': missing");
    expect_error("o  \t ", "bad.trace:3: field 'duration': missing");
    expect_error("o -5 conv", "bad.trace:3: field 'duration': '-5' is not a non-negative integer");
    expect_error("o 12ms conv", "bad.trace:3: field 'duration': '12ms' is not a non-negative integer");
    expect_error("o 18446744073709551616", "bad.trace:3: field 'duration': '18446744073709551616' does not fit in 64 bits");
    expect_error("op 5", "bad.trace:3: field 'kind': unknown event 'op' (expected a, f, r, w or o)");
    expect_error("o 5 x\nr 0x2", "bad.trace:4: field 'handle': 0x2 is not live");
}

/* A hand trace through mp_swap_iter_from_trace:
 *   prologue: W (0x300, never freed: persistent), x (0x100, freed later:
 *             not persistent), junk (0x50, never accessed: dropped), and a
 *             write of W (setup: no op's access);
 *   op0 "fc" 40 ns: reads x and W, allocates h (0x200) -- a write;
 *   op1 "relu" 10 ns: reads h twice and writes it (one access, a write),
 *             frees h, allocates a new block under the freed handle 0x200
 *             (h2), frees x;
 *   op2 "loss" 5 ns: reads h2 and W.
 * Variables by handle: x 0x100 (0), h 0x200 (1), h2 0x200 (2, allocated
 * after h), W 0x300 (3). */
static void test_from_trace_rules(void) {
    const char *p = mp_test_path(dir, "rules.trace");
    mp_test_write_file(p, "# memplan-trace/1\n"
                          "a 0x300 48\na 0x100 16\na 0x50 1000\nw 0x300\n"
                          "o 40 fc\nr 0x100\nr 0x300\na 0x200 32\n"
                          "o 10 relu\nr 0x200\nr 0x200\nw 0x200\nf 0x200\na 0x200 24\nf 0x100\n"
                          "o 5 loss\nr 0x200\nr 0x300\n");
    mp_trace_t *t;
    if (!MP_CHECK_OK(mp_trace_read(p, &t))) return;
    mp_swap_iter_t it;
    if (!MP_CHECK_OK(mp_swap_iter_from_trace(t, &it))) return mp_trace_free(t);
    MP_CHECK(it.n_ops == 3 && it.n_vars == 4 && it.n_access == 7);
    MP_CHECK(it.op[0].ns == 40 && it.op[1].ns == 10 && it.op[2].ns == 5 && !strcmp(it.op[1].name, "relu"));
    static const uint64_t size[4] = {16, 32, 24, 48};
    static const int pers[4] = {0, 0, 0, 1};
    static const char *const name[4] = {"0x100", "0x200", "0x200", "0x300"};
    for (size_t v = 0; v < 4 && v < it.n_vars; v++)
        MP_CHECK(it.var[v].size == size[v] && it.var[v].persistent == pers[v] && !strcmp(it.var[v].name, name[v]));
    /* op0: x read, W read, h written (its allocation); op1: h (two reads and
     * a write: one access, a write), h2 written (allocated); op2: h2 and W
     * read.  W's write before op0 is setup: no access. */
    static const size_t var[7] = {0, 3, 1, 1, 2, 2, 3}, n[3] = {3, 2, 2};
    static const int write[7] = {0, 0, 1, 1, 1, 0, 0};
    for (size_t j = 0; j < 3 && j < it.n_ops; j++) MP_CHECK_EQ_U64(it.op[j].n, n[j]);
    for (size_t a = 0; a < 7 && a < it.n_access; a++) MP_CHECK(it.access[a].var == var[a] && it.access[a].write == write[a]);
    mp_swap_iter_free(&it);
    mp_trace_free(t);
}

/* A malloc/free trace (no op boundaries) is refused, saying what is missing. */
static void test_no_boundaries(void) {
    mp_trace_t *t;
    if (!MP_CHECK_OK(mp_trace_create(&t))) return;
    MP_CHECK_OK(mp_trace_record_alloc(t, 1, 64, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_access(t, 1, 1, MP_TRACE_NO_NS));
    mp_swap_iter_t it;
    MP_CHECK(mp_swap_iter_from_trace(t, &it) == MP_EINVAL && it.n_ops == 0 && it.var == NULL);
    MP_CHECK(!strcmp(mp_last_error(), "the trace has no op boundaries ('o DURATION [NAME]' lines): a swap "
                                      "plan needs the ops of the iteration and their times"));
    mp_trace_free(t);
}

static int same_iter(const mp_swap_iter_t *a, const mp_swap_iter_t *b) {
    int ok = a->n_ops == b->n_ops && a->n_vars == b->n_vars && a->n_access == b->n_access;
    for (size_t v = 0; ok && v < a->n_vars; v++)
        ok = a->var[v].size == b->var[v].size && a->var[v].persistent == b->var[v].persistent;
    for (size_t j = 0; ok && j < a->n_ops; j++)
        ok = a->op[j].ns == b->op[j].ns && a->op[j].first == b->op[j].first && a->op[j].n == b->op[j].n &&
             !strcmp(a->op[j].name, b->op[j].name);
    for (size_t k = 0; ok && k < a->n_access; k++)
        ok = a->access[k].var == b->access[k].var && a->access[k].write == b->access[k].write;
    return ok;
}

static int same_selection(const mp_swap_plan_t *p, const mp_swap_sim_t *s, const mp_swap_plan_t *q,
                          const mp_swap_sim_t *r) {
    int ok = p->n == q->n && s->peak == r->peak && s->original_peak == r->original_peak &&
             s->total_ns == r->total_ns && s->stall_ns == r->stall_ns && s->limit_met == r->limit_met;
    for (size_t i = 0; ok && i < p->n; i++)
        ok = p->item[i].var == q->item[i].var && p->item[i].after == q->item[i].after &&
             p->item[i].before == q->item[i].before;
    return ok;
}

/* Graph -> iteration vs graph -> iteration -> trace file -> iteration on
 * one device: the same iteration (names of variables aside), so the same
 * load_min, the same selection for each score in both modes and the same
 * simulation (loads, stall, overhead). */
static void check_graph(const char *path, int backward, uint64_t min_size, int with_bo) {
    mp_graph_t *g, *train = NULL;
    if (!MP_CHECK_OK(mp_graph_load(path, &g))) return;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    if (backward && !MP_CHECK_OK(mp_graph_backward(g, &bo, &train, NULL))) return mp_graph_free(g);
    mp_swap_device_t dev;
    mp_swap_link_t link;
    MP_CHECK_OK(mp_swap_device_preset("v100", &dev));
    MP_CHECK_OK(mp_swap_link_preset("pcie3", &link));
    mp_swap_iter_t a, b;
    mp_trace_t *t = NULL, *u = NULL;
    if (!MP_CHECK_OK(mp_swap_iter_from_graph(train ? train : g, &dev, &a))) goto out_graph;
    const char *p = mp_test_path(dir, "graph.trace");
    if (!MP_CHECK_OK(mp_swap_iter_to_trace(&a, &t)) || !MP_CHECK_OK(mp_trace_write(p, t)) ||
        !MP_CHECK_OK(mp_trace_read(p, &u)) || !MP_CHECK_OK(mp_swap_iter_from_trace(u, &b)))
        goto out_iter;
    if (!MP_CHECK(same_iter(&a, &b))) fprintf(stderr, "  %s: iterations differ\n", path);
    uint64_t la, lb;
    MP_CHECK(!mp_swap_load_min(&a, min_size, &la) && !mp_swap_load_min(&b, min_size, &lb) && la == lb);
    for (int mode = 0; mode < 2; mode++)
        for (int score = 0; score <= (with_bo ? MP_SWAP_BO : MP_SWAP_SWDOA); score++) {
            mp_swap_select_opts_t o;
            mp_swap_select_opts_default(&o);
            o.score = (mp_swap_score)score, o.min_size = min_size, o.bo_evals = 12;
            mp_swap_sim_t plain;
            if (!MP_CHECK_OK(mp_swap_simulate(&a, &link, NULL, 0, &plain))) continue;
            uint64_t peak = plain.original_peak;
            if (mode) o.mode = MP_SWAP_LIMIT, o.limit = (peak + la) / 2;
            mp_swap_sim_free(&plain);
            mp_swap_plan_t pa = {0}, pb = {0};
            mp_swap_sim_t sa = {0}, sb = {0};
            if (MP_CHECK_OK(mp_swap_select(&a, &link, &o, &pa, &sa)) && MP_CHECK_OK(mp_swap_select(&b, &link, &o, &pb, &sb))) {
                MP_CHECK_OK(mp_swap_plan_validate(&b, &pb));
                if (!MP_CHECK(same_selection(&pa, &sa, &pb, &sb)))
                    fprintf(stderr, "  %s: score %d mode %d: selections differ\n", path, score, mode);
                MP_CHECK(mode == 0 || o.limit >= peak || pa.n > 0);   /* below the peak: swaps */
            }
            mp_swap_plan_free(&pa), mp_swap_plan_free(&pb), mp_swap_sim_free(&sa), mp_swap_sim_free(&sb);
        }
    mp_swap_iter_free(&b);
out_iter:
    mp_swap_iter_free(&a);
out_graph:
    mp_trace_free(t), mp_trace_free(u);
    mp_graph_free(train), mp_graph_free(g);
}

static void test_graph_round_trip(void) {
    check_graph("graph/mlp.json", 1, 64, 1);
    check_graph("graph/cnn_small.json", 1, 4096, 1);
    check_graph("../bench/corpus/train/resnet18-b16.graph.json.gz", 0, 1 << 20, 0);
}

/* Limit mode on a trace's iteration: a limit below load_min is refused,
 * naming load_min. */
static void test_limit_below_load_min(void) {
    mp_graph_t *g, *train;
    if (!MP_CHECK_OK(mp_graph_load("graph/cnn_small.json", &g))) return;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    if (!MP_CHECK_OK(mp_graph_backward(g, &bo, &train, NULL))) return mp_graph_free(g);
    mp_swap_device_t dev;
    mp_swap_link_t link;
    mp_swap_iter_t a, b;
    mp_trace_t *t = NULL;
    MP_CHECK_OK(mp_swap_device_preset("h100", &dev));
    MP_CHECK_OK(mp_swap_link_preset("pcie4", &link));
    if (MP_CHECK_OK(mp_swap_iter_from_graph(train, &dev, &a))) {
        if (MP_CHECK_OK(mp_swap_iter_to_trace(&a, &t)) && MP_CHECK_OK(mp_swap_iter_from_trace(t, &b))) {
            uint64_t lm;
            MP_CHECK_OK(mp_swap_load_min(&b, 4096, &lm));
            mp_swap_select_opts_t o;
            mp_swap_select_opts_default(&o);
            o.mode = MP_SWAP_LIMIT, o.limit = lm - 1, o.min_size = 4096;
            mp_swap_plan_t pl = {0};
            char want[200];
            snprintf(want, sizeof want, "limit %llu bytes is below load_min %llu bytes, the least load swapping every candidate can reach",
                     (unsigned long long)(lm - 1), (unsigned long long)lm);
            MP_CHECK(mp_swap_select(&b, &link, &o, &pl, NULL) == MP_EINVAL && !strcmp(mp_last_error(), want));
            mp_swap_plan_free(&pl);
            mp_swap_iter_free(&b);
        }
        mp_swap_iter_free(&a);
    }
    mp_trace_free(t);
    mp_graph_free(train), mp_graph_free(g);
}

/* (size, write) of op j's accesses, sorted: the same multiset whatever the
 * variables' numbering. */
static int cmp_acc(const void *x, const void *y) {
    const uint64_t *a = x, *b = y;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] > b[1]) - (a[1] < b[1]);
}

static int same_op_accesses(const mp_swap_iter_t *a, const mp_swap_iter_t *b, size_t j) {
    size_t n = a->op[j].n;
    if (n != b->op[j].n) return 0;
    uint64_t *x = calloc(2 * n + 2, sizeof *x), *y = calloc(2 * n + 2, sizeof *y);
    int ok = x && y;
    for (size_t k = 0; ok && k < n; k++) {
        const mp_swap_access_t *p = &a->access[a->op[j].first + k], *q = &b->access[b->op[j].first + k];
        x[2 * k] = a->var[p->var].size * 2 + (uint64_t)a->var[p->var].persistent, x[2 * k + 1] = (uint64_t)p->write;
        y[2 * k] = b->var[q->var].size * 2 + (uint64_t)b->var[q->var].persistent, y[2 * k + 1] = (uint64_t)q->write;
    }
    if (ok) qsort(x, n, 2 * sizeof *x, cmp_acc), qsort(y, n, 2 * sizeof *y, cmp_acc);
    ok = ok && !memcmp(x, y, 2 * n * sizeof *x);
    free(x), free(y);
    return ok;
}

/* The executor's recorded step: one op per step named after its node, in
 * order; every variable of the step a block (same count, and per op the
 * same accesses by size, persistence and kind as the graph's iteration);
 * the trace is valid text (written and read back); blocks live at the end
 * are exactly the persistent ones and the step's outputs. */
static void test_exec_trace(void) {
    mp_graph_t *g, *train;
    if (!MP_CHECK_OK(mp_graph_load("graph/cnn_small.json", &g))) return;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    if (!MP_CHECK_OK(mp_graph_backward(g, &bo, &train, NULL))) return mp_graph_free(g);
    mp_trace_t *t = NULL, *u = NULL;
    mp_swap_device_t dev;
    MP_CHECK_OK(mp_swap_device_preset("v100", &dev));
    mp_swap_iter_t a = {0}, b = {0};
    const char *p = mp_test_path(dir, "exec.trace");
    if (MP_CHECK_OK(mp_swap_trace_record(train, 1, &t)) && MP_CHECK_OK(mp_trace_write(p, t)) &&
        MP_CHECK_OK(mp_trace_read(p, &u)) && MP_CHECK_OK(mp_swap_iter_from_trace(u, &b)) &&
        MP_CHECK_OK(mp_swap_iter_from_graph(train, &dev, &a))) {
        size_t steps;
        const size_t *order = mp_graph_order(train, &steps);
        MP_CHECK_EQ_U64(b.n_ops, steps);
        MP_CHECK_EQ_U64(mp_trace_op_count(u), steps);
        for (size_t j = 0; j < steps && j < b.n_ops; j++)
            MP_CHECK(!strcmp(b.op[j].name, mp_graph_node(train, order[j])->name));
        MP_CHECK_EQ_U64(b.n_vars, a.n_vars);
        MP_CHECK_EQ_U64(b.n_access, a.n_access);
        size_t bad = 0;
        for (size_t j = 0; j < steps && j < b.n_ops && b.n_ops == a.n_ops; j++) bad += !same_op_accesses(&a, &b, j);
        MP_CHECK_EQ_U64(bad, 0);
        uint64_t pa = 0, pb = 0;
        for (size_t v = 0; v < a.n_vars; v++) pa += a.var[v].persistent ? a.var[v].size : 0;
        for (size_t v = 0; v < b.n_vars; v++) pb += b.var[v].persistent ? b.var[v].size : 0;
        MP_CHECK(pa == pb && pa > 0);
        /* live at the end: persistent tensors and the outputs not persistent */
        size_t n_out;
        const size_t *outs = mp_graph_outputs(train, &n_out);
        uint64_t want = 0;
        for (size_t k = 0; k < n_out; k++) {
            const mp_graph_tensor_t *x = mp_graph_tensor(train, outs[k]);
            if (x->root == outs[k] && x->kind != MP_TENSOR_GRADIENT && x->kind != MP_TENSOR_PARAMETER) want += x->bytes;
        }
        for (size_t x = 0, nt = mp_graph_tensor_count(train); x < nt; x++) {
            const mp_graph_tensor_t *T = mp_graph_tensor(train, x);
            if (T->root == x && (T->kind == MP_TENSOR_GRADIENT || T->kind == MP_TENSOR_PARAMETER)) want += T->bytes;
        }
        mp_trace_stats_t st;
        MP_CHECK_OK(mp_trace_stats(u, &st));
        MP_CHECK_EQ_U64(st.live_bytes, want);
        MP_CHECK(st.ops == steps && st.op_ns > 0);
    }
    mp_swap_iter_free(&a), mp_swap_iter_free(&b);
    mp_trace_free(t), mp_trace_free(u);
    mp_graph_free(train), mp_graph_free(g);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_round_trip();
    test_read_names();
    test_errors();
    test_from_trace_rules();
    test_no_boundaries();
    test_graph_round_trip();
    test_limit_below_load_min();
    test_exec_trace();
    return mp_test_finish("test_swap_trace");
}
