/* test_graph.c -- memplan-graph/1 loading, validation and liveness.
 *
 * Hand-written graphs in graph/ with records derived by hand below,
 * malformed graphs in graph/bad/ with the exact message each must give,
 * and the acceptance test of liveness: for every corpus graph the records
 * written by mp_records_write equal the exporter's committed .records.csv
 * byte for byte.  Every records set is planned with "auto" and checked.
 * Runs from tests/ (ctest's working directory). */
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char dir[] = "/tmp/mp_test_graph_XXXXXX";

static const char *tmp_path(const char *name) {
    static char buf[256];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* Whole file into a malloc'ed string (NULL if unreadable). */
static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (!nb) free(buf);
            buf = nb;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = 0;
    if (len) *len = n;
    return buf;
}

/* Plans the records with "auto" (the harness runs the checker). */
static void plan_auto(const mp_buffer_t *b, size_t n) {
    if (!n) return;
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
    uint64_t fp = mp_test_plan(b, n, "auto", NULL);
    MP_CHECK(fp >= bd.offsets && fp <= bd.naive);
}

static bool same_records(const mp_buffer_t *b, size_t n, const mp_buffer_t *want, size_t m) {
    if (n != m) return false;
    for (size_t i = 0; i < n; i++)
        if (b[i].id != want[i].id || b[i].first != want[i].first || b[i].last != want[i].last ||
            b[i].size != want[i].size || b[i].align != 0)
            return false;
    return true;
}

/* graph/small.json, order [0,1,2,4,3,5] (node 4 'stats' runs at step 3,
 * node 3 'add' at step 4), N = 6 steps, end = 5:
 *   t0 x       input, never produced: from 0; read by mm (step 0) and
 *              stats (step 3)                                    -> [0,3] 32
 *   t1 w       parameter: persistent                             -> [0,5] 128
 *   t2 a       mm at step 0; read through its alias t3 by relu
 *              (step 2) and directly by add (step 4)             -> [0,4] 16
 *   t3 a_view  alias of t2: no record
 *   t4 b       relu at step 2 (float16, 8 bytes); add reads it   -> [2,4] 8
 *   t5 c       add at step 4; its alias t7 is a graph output     -> [4,5] 16
 *   t6 stats   stats at step 3, read by nobody                   -> [3,3] 16
 *   t7 out     alias of t5: no record
 *   t8 empty   shape [0,3], 0 bytes: owns nothing, no record */
static void test_small(void) {
    mp_graph_t *g;
    if (!MP_CHECK_OK(mp_graph_load("graph/small.json", &g))) return;
    MP_CHECK_EQ_U64(mp_graph_tensor_count(g), 9);
    MP_CHECK_EQ_U64(mp_graph_node_count(g), 6);
    MP_CHECK(!strcmp(mp_graph_model_name(g), "small"));
    MP_CHECK(mp_graph_loss(g) == MP_GRAPH_NONE);
    size_t n;
    const size_t *order = mp_graph_order(g, &n);
    MP_CHECK(n == 6 && order[3] == 4 && order[4] == 3);
    const size_t *outs = mp_graph_outputs(g, &n);
    MP_CHECK(n == 1 && outs[0] == 7);

    const mp_graph_tensor_t *t = mp_graph_tensor(g, 3);
    MP_CHECK(t && t->alias_of == 2 && t->root == 2 && t->bytes == 0 && t->producer == 1);
    MP_CHECK(t && t->rank == 1 && t->shape[0] == 4 && !strcmp(t->dtype, "float32"));
    t = mp_graph_tensor(g, 1);
    MP_CHECK(t && t->kind == MP_TENSOR_PARAMETER && t->trainable && t->producer == MP_GRAPH_NONE);
    MP_CHECK(t && t->numel == 32 && t->dtype_size == 4 && !strcmp(t->name, "w"));
    t = mp_graph_tensor(g, 4);
    MP_CHECK(t && t->dtype_size == 2 && t->bytes == 8 && t->root == 4);
    MP_CHECK(mp_graph_tensor(g, 9) == NULL && mp_graph_node(g, 6) == NULL);
    const mp_graph_node_t *nd = mp_graph_node(g, 2);
    MP_CHECK(nd && !strcmp(nd->name, "relu") && !strcmp(nd->op, "aten::relu"));
    MP_CHECK(nd && nd->inplace_capable && nd->inplace && nd->flops == 4 && nd->step == 2);
    MP_CHECK(nd && nd->n_inputs == 1 && nd->inputs[0] == 3 && nd->n_outputs == 1 && nd->outputs[0] == 4);
    nd = mp_graph_node(g, 4);
    MP_CHECK(nd && nd->step == 3 && nd->n_outputs == 2 && !nd->inplace && nd->flops == 0);

    mp_graph_stats_t st;
    MP_CHECK_OK(mp_graph_stats(g, &st));
    MP_CHECK(st.tensors == 9 && st.nodes == 6 && st.steps == 6 && st.aliases == 2);
    MP_CHECK_EQ_U64(st.persistent_bytes, 128);
    MP_CHECK_EQ_U64(st.owned_bytes, 32 + 128 + 16 + 8 + 16 + 16);

    uint64_t first[9], last[9];
    mp_graph_lifetimes(g, first, last);
    MP_CHECK(first[3] == 0 && last[3] == 4);   /* an alias gets its root's */
    MP_CHECK(first[7] == 4 && last[7] == 5);

    static const mp_buffer_t want[] = {
        {0, 0, 3, 32, 0}, {2, 0, 4, 16, 0}, {4, 2, 4, 8, 0}, {5, 4, 5, 16, 0}, {6, 3, 3, 16, 0},
    };
    static const mp_buffer_t want_all[] = {
        {0, 0, 3, 32, 0},  {1, 0, 5, 128, 0}, {2, 0, 4, 16, 0},
        {4, 2, 4, 8, 0},   {5, 4, 5, 16, 0},  {6, 3, 3, 16, 0},
    };
    mp_buffer_t *b;
    MP_CHECK_OK(mp_graph_records(g, 0, &b, &n));
    MP_CHECK(same_records(b, n, want, 5));
    plan_auto(b, n);
    /* Peak: steps 3 and 4 hold x or c, a, b and stats: 32+16+8+16 = 72. */
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
    MP_CHECK_EQ_U64(bd.offsets, 72);
    free(b);
    MP_CHECK_OK(mp_graph_records(g, 1, &b, &n));
    MP_CHECK(same_records(b, n, want_all, 6));
    plan_auto(b, n);
    free(b);

    /* The same graph gzip-compressed, and from memory. */
    size_t len;
    char *text = slurp("graph/small.json", &len);
    MP_CHECK(text != NULL);
    if (text) {
        gzFile z = gzopen(tmp_path("small.json.gz"), "wb");
        MP_CHECK(z && gzwrite(z, text, (unsigned)len) == (int)len);
        if (z) gzclose(z);
        mp_graph_t *h;
        if (MP_CHECK_OK(mp_graph_load(tmp_path("small.json.gz"), &h))) {
            MP_CHECK_OK(mp_graph_records(h, 0, &b, &n));
            MP_CHECK(same_records(b, n, want, 5));
            free(b);
            mp_graph_free(h);
        }
        if (MP_CHECK_OK(mp_graph_parse(text, len, "mem", &h))) {
            MP_CHECK_EQ_U64(mp_graph_tensor_count(h), 9);
            mp_graph_free(h);
        }
        /* A gzip stream cut short is malformed, not a read error. */
        FILE *f = fopen(tmp_path("small.json.gz"), "rb+");
        long full = 0;
        if (f) fseek(f, 0, SEEK_END), full = ftell(f), fclose(f);
        MP_CHECK(full > 20 && truncate(tmp_path("small.json.gz"), full - 12) == 0);
        MP_CHECK(mp_graph_load(tmp_path("small.json.gz"), &h) == MP_EPARSE);
        MP_CHECK(strstr(mp_last_error(), "small.json.gz") != NULL);
        free(text);
    }
    mp_graph_free(g);
}

/* graph/alias_chain.json: m2 -> m1 -> mask is a chain of aliases (followed
 * to the root), order [0,1,2], end = 2:
 *   t0 mask    input; read through m2 by pack (0), through m1 by count (2) -> [0,2] 4
 *   t3 packed  pack at 0, read by score at 1                               -> [0,1] 2
 *   t4 score   score at 1, a graph output (scalar float64)                -> [1,2] 8
 *   t5 count   count at 2, unread                                          -> [2,2] 4 */
static void test_alias_chain(void) {
    mp_graph_t *g;
    if (!MP_CHECK_OK(mp_graph_load("graph/alias_chain.json", &g))) return;
    MP_CHECK(mp_graph_tensor(g, 2)->alias_of == 1 && mp_graph_tensor(g, 2)->root == 0);
    MP_CHECK(mp_graph_tensor(g, 4)->rank == 0 && mp_graph_tensor(g, 4)->numel == 1);
    MP_CHECK(!strcmp(mp_graph_model_name(g), ""));
    static const mp_buffer_t want[] = {{0, 0, 2, 4, 0}, {3, 0, 1, 2, 0}, {4, 1, 2, 8, 0}, {5, 2, 2, 4, 0}};
    mp_buffer_t *b;
    size_t n;
    MP_CHECK_OK(mp_graph_records(g, 0, &b, &n));
    MP_CHECK(same_records(b, n, want, 4));
    plan_auto(b, n);
    free(b);
    mp_graph_free(g);
}

/* graph/empty.json: no nodes, no steps, no records. */
static void test_empty(void) {
    mp_graph_t *g;
    if (!MP_CHECK_OK(mp_graph_load("graph/empty.json", &g))) return;
    mp_buffer_t *b = (mp_buffer_t *)1;
    size_t n = 7;
    MP_CHECK_OK(mp_graph_records(g, 1, &b, &n));
    MP_CHECK(b == NULL && n == 0);
    mp_graph_free(g);
}

static void test_malformed(void) {
    static const struct {
        const char *file, *msg;   /* msg follows "graph/bad/FILE: " */
    } cases[] = {
        {"format_version.json", "format: \"memplan-graph/2\" is not supported (expected \"memplan-graph/1\")"},
        {"dangling_input.json", "nodes[0].inputs[1]: tensor 9 does not exist (the graph has 3 tensors)"},
        {"dangling_order.json", "order[1]: node 5 does not exist (the graph has 2 nodes)"},
        {"duplicate_tensor_id.json", "tensors[2].id: duplicate id 1 (tensors[1] has it)"},
        {"duplicate_node_id.json", "nodes[1].id: duplicate id 0 (nodes[0] has it)"},
        {"cycle.json", "nodes: the graph has a cycle: node 0 'mm' -> node 1 'relu' -> node 0 'mm'"},
        {"self_cycle.json", "nodes: the graph has a cycle: node 1 'relu' -> node 1 'relu'"},
        {"bad_dtype.json", "tensors[1].dtype: unknown dtype \"float8\""},
        {"bytes_mismatch.json", "tensors[2].bytes: 12, but 4 elements of float32 take 16"},
        {"order_violation.json",
         "order[0]: node 1 'relu' (step 0) reads tensor 1 'a' before node 0 'mm' (step 1) produces it"},
        {"order_repeat.json", "order[1]: node 0 appears twice (also order[0])"},
        {"order_short.json", "order: 1 entry for 2 nodes (every node exactly once)"},
        {"alias_cycle.json", "tensors[1].alias_of: alias cycle 1 -> 2 -> 1"},
        {"alias_bytes.json", "tensors[1].bytes: an alias owns no memory, expected 0, got 16"},
        {"wrong_type_bytes.json", "tensors[0].bytes: expected an integer, got a string"},
        {"wrong_type_shape.json", "tensors[0].shape: expected an array, got an integer"},
        {"wrong_type_inputs.json", "nodes[1].inputs: expected an array, got an object"},
        {"negative_dim.json", "tensors[0].shape[0]: expected a non-negative integer, got -2"},
        {"produced_twice.json", "nodes[1].outputs[0]: tensor 1 is already produced by node 0 'mm'"},
        {"unknown_kind.json",
         "tensors[0].kind: unknown kind \"weight\" (input, activation, parameter, gradient, output)"},
        {"missing_tensors.json", "tensors: missing"},
        {"wrong_type_workspace.json", "nodes[1].attrs.backward_workspace: expected an integer, got a string"},
        {"negative_flops.json", "nodes[0].attrs.flops: expected a non-negative integer, got -8"},
        {"dangling_output.json", "outputs[1]: tensor 7 does not exist (the graph has 3 tensors)"},
        {"wrong_type_loss.json", "loss: expected a tensor id or null, got a string"},
        {"wrong_type_trainable.json", "tensors[1].trainable: expected true or false, got an integer"},
        {"top_level_array.json", "expected a JSON object at the top level, got an array"},
        /* jansson's own words, after FILE:LINE:COLUMN. */
        {"truncated.json", NULL},
        {"duplicate_key.json", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[128], want[512];
        snprintf(path, sizeof path, "graph/bad/%s", cases[i].file);
        mp_graph_t *g = (mp_graph_t *)1;
        mp_status s = mp_graph_load(path, &g);
        MP_CHECK(s == MP_EPARSE && g == NULL);
        const char *got = mp_last_error();
        if (cases[i].msg) {
            snprintf(want, sizeof want, "%s: %s", path, cases[i].msg);
            if (!MP_CHECK(!strcmp(got, want))) fprintf(stderr, "  got:  %s\n  want: %s\n", got, want);
        } else {
            snprintf(want, sizeof want, "%s:", path);
            MP_CHECK(!strncmp(got, want, strlen(want)) && got[strlen(want)] >= '1' &&
                     got[strlen(want)] <= '9');
        }
    }
    mp_graph_t *g;
    MP_CHECK(mp_graph_load("graph/does-not-exist.json", &g) == MP_EIO);
    MP_CHECK(strstr(mp_last_error(), "does-not-exist.json") != NULL);
    MP_CHECK(mp_graph_parse("{}", 2, "mem", &g) == MP_EPARSE);
    MP_CHECK(!strcmp(mp_last_error(), "mem: format: missing"));
}

/* Acceptance test of issue 4 item 3: the C liveness writes exactly the
 * records the exporter committed, for every corpus graph. */
static void test_corpus(void) {
    static const char *const sets[] = {"../bench/corpus/inference", "../bench/corpus/train"};
    size_t graphs = 0, csvs = 0;
    for (size_t k = 0; k < 2; k++) {
        DIR *d = opendir(sets[k]);
        if (!MP_CHECK(d != NULL)) continue;
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            const char *suffix = ".graph.json.gz";
            size_t sl = strlen(suffix);
            if (len > 12 && !strcmp(e->d_name + len - 12, ".records.csv")) csvs++;
            if (len <= sl || strcmp(e->d_name + len - sl, suffix)) continue;
            char gpath[512], rpath[512];
            snprintf(gpath, sizeof gpath, "%s/%s", sets[k], e->d_name);
            snprintf(rpath, sizeof rpath, "%s/%.*s.records.csv", sets[k], (int)(len - sl), e->d_name);
            graphs++;
            mp_graph_t *g;
            if (!MP_CHECK_OK(mp_graph_load(gpath, &g))) continue;
            mp_buffer_t *b;
            size_t n;
            if (MP_CHECK_OK(mp_graph_records(g, 0, &b, &n))) {
                MP_CHECK_OK(mp_records_write(tmp_path("records.csv"), b, n));
                size_t la, lb;
                char *mine = slurp(tmp_path("records.csv"), &la);
                char *theirs = slurp(rpath, &lb);
                bool same = mine && theirs && la == lb && !memcmp(mine, theirs, la);
                if (!MP_CHECK(same)) fprintf(stderr, "  records differ: %s\n", gpath);
                free(mine);
                free(theirs);
                plan_auto(b, n);
                free(b);
            }
            if (MP_CHECK_OK(mp_graph_records(g, 1, &b, &n))) {
                plan_auto(b, n);
                free(b);
            }
            mp_graph_free(g);
        }
        closedir(d);
    }
    MP_CHECK(graphs > 0);   /* 39 when this was written */
    MP_CHECK_EQ_U64(graphs, csvs);
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_small();
    test_alias_chain();
    test_empty();
    test_malformed();
    test_corpus();
    unlink(tmp_path("small.json.gz"));
    unlink(tmp_path("records.csv"));
    rmdir(dir);
    return mp_test_finish("graph");
}
