/* test_share_corpus.c -- mp_graph_share on the corpus: every inference
 * graph and four training graphs through every mode (none, in place, in
 * place + sharing, each parallel mode, sharing only, auto placement; a few
 * graphs through several core strategies), each plan checked, the "none"
 * footprint against the naive sum of mp_graph_records and
 * none >= inplace >= share.  Prints the footprint table of docs/graph.md
 * ("What it costs"); the numbers are printed, not asserted. */
#include "graph_gen.h"
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define NONE MP_GRAPH_NONE
#define MIB(x) ((double)(x) / (1024.0 * 1024.0))

/* ---- the corpus -------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted *.graph.json.gz names of dir (free each and the array). */
static char **list_graphs(const char *dir, size_t *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!MP_CHECK(d != NULL)) return NULL;
    char **names = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 14 || strcmp(e->d_name + len - 14, ".graph.json.gz")) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 32;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) break;
            names = nn;
        }
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    if (names) qsort(names, *n, sizeof *names, cmp_str);
    return names;
}

static void corpus_graph(const char *dir, const char *name, bool place_all) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mp_graph_t *g;
    if (!MP_CHECK_OK(mp_graph_load(path, &g))) return;
    mp_graph_plan_t p[6];
    uint64_t fp[6];
    static const int mode[6][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0},
                                   {1, 1, 1}, {1, 1, 2}, {0, 1, 0}};
    for (int m = 0; m < 6; m++)
        fp[m] = mp_test_share(g, mode[m][0], mode[m][1], (mp_parallel_mode)mode[m][2], 0, &p[m]);
    MP_CHECK_EQ_U64(fp[0], mp_test_naive_bytes(g, 0));
    MP_CHECK(fp[0] >= fp[1] && fp[1] >= fp[2] && fp[0] >= fp[5]);
    MP_CHECK(fp[2] >= mp_test_records_bound(g, &p[2]) && fp[2] > 0);
    /* Ancestor-safe plans must pass the colour check too and vice versa
     * (both are the exact relation). */
    MP_CHECK_OK(mp_graph_plan_check(g, &p[3], MP_PARALLEL_COLOUR));
    MP_CHECK_OK(mp_graph_plan_check(g, &p[4], MP_PARALLEL_ANCESTOR));
    mp_graph_plan_t a;
    uint64_t fa = mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &a);
    if (MP_CHECK_OK(mp_graph_plan_place(g, &a, "auto"))) {
        MP_CHECK_OK(mp_graph_plan_check(g, &a, MP_PARALLEL_ANY));
        MP_CHECK(a.footprint <= fa && a.footprint >= mp_test_records_bound(g, &a));
    }
    if (place_all) {
        static const char *const strat[] = {"greedy-size", "greedy-breadth", "strip-bestfit",
                                            "objects-greedy-size", "objects-inorder"};
        for (size_t i = 0; i < 5; i++) {
            mp_graph_plan_t q;
            mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &q);
            if (MP_CHECK_OK(mp_graph_plan_place(g, &q, strat[i])))
                MP_CHECK_OK(mp_graph_plan_check(g, &q, MP_PARALLEL_ANY));
            mp_graph_plan_free(&q);
        }
    }
    char label[64];
    snprintf(label, sizeof label, "%.*s", (int)(strlen(name) - 14), name);
    /* For reference: the least any offset plan of the liveness records
     * (no in place) can reach. */
    mp_buffer_t *rb;
    size_t rn;
    mp_bounds_t bd = {0};
    if (MP_CHECK_OK(mp_graph_records(g, 0, &rb, &rn))) {
        if (rn) MP_CHECK_OK(mp_bounds_compute(rb, rn, &bd));
        free(rb);
    }
    printf("%-22s %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %5zu %5zu\n", label, MIB(fp[0]),
           MIB(fp[1]), MIB(fp[2]), MIB(fp[3]), MIB(fp[4]), MIB(a.footprint), MIB(bd.offsets),
           p[2].n_inplace, p[2].n_reused);
    mp_graph_plan_free(&a);
    for (int m = 0; m < 6; m++) mp_graph_plan_free(&p[m]);
    mp_graph_free(g);
}

static void test_corpus(void) {
    printf("%-22s %9s %9s %9s %9s %9s %9s %9s %5s %5s\n", "graph (MiB)", "none", "inplace",
           "share", "ancestor", "colour", "auto", "live-lb", "inpl", "reuse");
    size_t n;
    char **names = list_graphs("../bench/corpus/inference", &n);
    MP_CHECK(n >= 20);
    for (size_t i = 0; i < n; i++) {
        corpus_graph("../bench/corpus/inference", names[i], i % 6 == 0);
        free(names[i]);
    }
    free(names);
    static const char *const train[] = {"resnet18-b16.graph.json.gz",
                                        "mobilenet_v2-b16.graph.json.gz",
                                        "googlenet-b16.graph.json.gz",
                                        "densenet121-b16.graph.json.gz"};
    for (size_t i = 0; i < 4; i++) corpus_graph("../bench/corpus/train", train[i], i == 0);
}

/* resnet18 at fx level: every nn.ReLU reads a BatchNorm2d's or an add's
 * output that nothing else reads, and every operator.add (out += identity)
 * reads first the output of the block's last BatchNorm2d, read by nothing
 * else; none of them is a graph output.  So exactly the ReLUs and the adds
 * run in place. */
static void test_resnet_inplace(void) {
    mp_graph_t *g;
    if (!MP_CHECK_OK(mp_graph_load("../bench/corpus/inference/resnet18.graph.json.gz", &g)))
        return;
    size_t relus = 0, adds = 0;
    for (size_t v = 0; v < mp_graph_node_count(g); v++) {
        relus += !strcmp(mp_graph_node(g, v)->op, "nn.ReLU");
        adds += !strcmp(mp_graph_node(g, v)->op, "operator.add");
    }
    mp_graph_plan_t p;
    mp_test_share(g, 1, 0, MP_PARALLEL_ANY, 0, &p);
    MP_CHECK_EQ_U64(p.n_inplace, relus + adds);
    MP_CHECK(relus == 17 && adds == 8);
    for (size_t t = 0; t < mp_graph_tensor_count(g); t++) {
        size_t pr = mp_graph_tensor(g, t)->producer;
        if (p.inplace_of[t] == NONE) continue;
        const char *op = mp_graph_node(g, pr)->op;
        MP_CHECK(!strcmp(op, "nn.ReLU") || !strcmp(op, "operator.add"));
    }
    mp_graph_plan_free(&p);
    mp_graph_free(g);
}

int main(void) {
    test_resnet_inplace();
    test_corpus();
    return mp_test_finish("share_corpus");
}
