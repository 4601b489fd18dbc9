/* test_share.c -- in-place, sharing and parallel-safe sharing of graphs
 * (mp_graph_share, mp_graph_plan_place/records/check).
 *
 * Hand-written graphs whose plans are derived by hand below (a relu chain,
 * the note's in-place trap = chen2016 Fig. 2, best-size matching, graph
 * outputs, views), a built training graph, and random graphs (graph_gen.c)
 * against an O(n^2) oracle of sequential validity and of parallel safety.
 * Every plan goes through mp_graph_plan_check.  The corpus is in
 * test_share_corpus.c. */
#include "gen.h"
#include "graph_gen.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define NONE MP_GRAPH_NONE

/* ---- hand-written graphs ---------------------------------------------- */

#define HEAD "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"%s\"},\"tensors\":["
#define T(id, name, shape, bytes, kind) \
    "{\"id\":" #id ",\"name\":\"" name "\",\"shape\":" shape ",\"dtype\":\"float32\",\"bytes\":" #bytes ",\"kind\":\"" kind "\"}"
#define N(id, op, in, out) \
    "{\"id\":" #id ",\"name\":\"n" #id "\",\"op\":\"" op "\",\"inputs\":" in ",\"outputs\":" out "}"

/* x [256] input (1024 B), w parameter; a = linear(x, w) [512] (2048 B);
 * b..e = relu chain; e is the output.  By hand:
 *   none:    1024 + 5 x 2048 = 11264
 *   inplace: x 1024 + one storage for a..e (2048) = 3072, 4 in place
 *            (x is a graph input, but the linear is not in place anyway)
 *   share:   b cannot take a's storage (a is read at b's step), c takes
 *            a's, d takes b's, e takes a's again: 1024 + 2 x 2048 = 5120,
 *            3 reused. */
static const char *chain_json =
    "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"chain\"},\"tensors\":["
    T(0, "x", "[256]", 1024, "input") ","
    "{\"id\":1,\"name\":\"w\",\"shape\":[512,256],\"dtype\":\"float32\",\"bytes\":524288,"
    "\"kind\":\"parameter\",\"trainable\":true},"
    T(2, "a", "[512]", 2048, "activation") "," T(3, "b", "[512]", 2048, "activation") ","
    T(4, "c", "[512]", 2048, "activation") "," T(5, "d", "[512]", 2048, "activation") ","
    T(6, "e", "[512]", 2048, "output") "],\"nodes\":["
    N(0, "nn.Linear", "[0,1]", "[2]") "," N(1, "relu", "[2]", "[3]") ","
    N(2, "nn.ReLU", "[3]", "[4]") "," N(3, "F.relu", "[4]", "[5]") ","
    N(4, "relu", "[5]", "[6]") "],\"order\":[0,1,2,3,4],\"outputs\":[6],\"loss\":null}";

static void test_chain(void) {
    mp_graph_t *g = mp_test_graph_parse(chain_json);
    if (!g) return;
    mp_graph_plan_t p;
    MP_CHECK_EQ_U64(mp_test_share(g, 0, 0, MP_PARALLEL_ANY, 0, &p), 11264);
    MP_CHECK_EQ_U64(p.n_storages, 6);
    MP_CHECK(p.storage[1] == NONE); /* the parameter is not planned */
    MP_CHECK(!strcmp(p.placement, "sequential"));
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 0, MP_PARALLEL_ANY, 0, &p), 3072);
    MP_CHECK_EQ_U64(p.n_inplace, 4);
    MP_CHECK_EQ_U64(p.n_reused, 0);
    for (size_t t = 3; t <= 6; t++) {
        MP_CHECK_EQ_U64(p.inplace_of[t], t - 1);
        MP_CHECK_EQ_U64(p.storage[t], p.storage[2]);
    }
    MP_CHECK(p.inplace_of[2] == NONE);
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 0, 1, MP_PARALLEL_ANY, 0, &p), 5120);
    MP_CHECK_EQ_U64(p.n_reused, 3);
    MP_CHECK_EQ_U64(p.storage[4], p.storage[2]);
    MP_CHECK_EQ_U64(p.storage[5], p.storage[3]);
    MP_CHECK_EQ_U64(p.storage[6], p.storage[2]);
    mp_graph_plan_free(&p);
    /* Both, and the parallel modes: a chain has no parallelism to lose. */
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &p), 3072);
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANCESTOR, 0, &p), 3072);
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_COLOUR, 0, &p), 3072);
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 0, 1, MP_PARALLEL_ANCESTOR, 0, &p), 5120);
    mp_graph_plan_free(&p);
    /* With the parameter: its own storage, never shared: 524288 more. */
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 1, &p), 3072 + 524288);
    MP_CHECK(p.storage[1] != NONE);
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 0, 0, MP_PARALLEL_ANY, 1, &p), mp_test_naive_bytes(g, 1));
    mp_graph_plan_free(&p);

    /* The checker catches corruptions of a valid plan. */
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 0, MP_PARALLEL_ANY, 0, &p), 3072);
    p.inplace_of[4] = 2; /* node 2 does not read a */
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) == MP_ECONFLICT);
    p.inplace_of[4] = 3;
    MP_CHECK_OK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY));
    p.storage_size[p.storage[2]] = 1024;
    p.footprint = 2048;
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) == MP_ECONFLICT);
    p.storage_size[p.storage[2]] = 2048;
    p.footprint = 3071;
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) == MP_ECONFLICT);
    p.footprint = 3072;
    p.n_inplace = 3;
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) == MP_ECONFLICT);
    p.n_inplace = 4;
    p.inplace_of[4] = NONE; /* c now made fresh at b's last read: overlaps b */
    p.n_inplace = 3;
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) == MP_ECONFLICT);
    mp_graph_plan_free(&p);
    mp_graph_free(g);
}

/* chen2016 Fig. 2 / the note's trap: B = sigmoid(A), C = sigmoid(B),
 * F = pool(B), E = pool(C), G = E * F, in that order; A..C 4096 bytes,
 * E, F, G 1024.  A is an input, G the output.  Sequential, by hand (as
 * the figure): B new; C cannot overwrite B (F still reads it): new; F new,
 * then B is free; E takes B's storage from the box; G overwrites E.
 * Footprint 3 x 4096 + 1024 = 13312.  In parallel modes F may run beside
 * C and E, so E may not take B's storage: 3 x 4096 + 2 x 1024 = 14336
 * (colours: {B,C,E,G} is the longest path, F its own colour). */
static const char *fig2_json =
    "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"fig2\"},\"tensors\":["
    T(0, "A", "[1,4,16,16]", 4096, "input") "," T(1, "B", "[1,4,16,16]", 4096, "activation") ","
    T(2, "C", "[1,4,16,16]", 4096, "activation") "," T(3, "F", "[1,4,8,8]", 1024, "activation") ","
    T(4, "E", "[1,4,8,8]", 1024, "activation") "," T(5, "G", "[1,4,8,8]", 1024, "output")
    "],\"nodes\":["
    N(0, "sigmoid", "[0]", "[1]") "," N(1, "nn.Sigmoid", "[1]", "[2]") ","
    N(2, "nn.MaxPool2d", "[1]", "[3]") "," N(3, "nn.MaxPool2d", "[2]", "[4]") ","
    N(4, "operator.mul", "[4,3]", "[5]") "],\"order\":[0,1,2,3,4],\"outputs\":[5],\"loss\":null}";

static void test_fig2(void) {
    mp_graph_t *g = mp_test_graph_parse(fig2_json);
    if (!g) return;
    mp_graph_plan_t p;
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &p), 13312);
    MP_CHECK(p.inplace_of[2] == NONE); /* the trap */
    MP_CHECK(p.storage[2] != p.storage[1]);
    MP_CHECK_EQ_U64(p.storage[4], p.storage[1]);
    MP_CHECK_EQ_U64(p.inplace_of[5], 4);
    MP_CHECK_EQ_U64(p.storage[5], p.storage[1]);
    MP_CHECK_EQ_U64(p.n_inplace, 1);
    MP_CHECK_EQ_U64(p.n_reused, 1);
    /* Sequentially fine, in parallel not: F (node 2) reads B and is no
     * ancestor of node 3, which writes E over B. */
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANCESTOR) == MP_ECONFLICT);
    MP_CHECK(strstr(mp_last_error(), "node 2") != NULL);
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_COLOUR) == MP_ECONFLICT);
    /* Writing C over B is the trap: the checker must refuse it. */
    mp_graph_plan_t q;
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &q), 13312);
    q.inplace_of[2] = 1;
    q.n_inplace++;
    q.storage[2] = q.storage[1];
    MP_CHECK(mp_graph_plan_check(g, &q, MP_PARALLEL_ANY) == MP_ECONFLICT);
    mp_graph_plan_free(&q);
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANCESTOR, 0, &p), 14336);
    MP_CHECK_EQ_U64(p.inplace_of[5], 4);
    MP_CHECK(p.storage[4] != p.storage[1]);
    mp_graph_plan_free(&p);
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_COLOUR, 0, &p), 14336);
    MP_CHECK_EQ_U64(p.inplace_of[5], 4);
    mp_graph_plan_free(&p);
    /* No in place: G cannot take E's storage (both live at G's step), but
     * C's is free after E: 13312 again, G in C's storage. */
    MP_CHECK_EQ_U64(mp_test_share(g, 0, 1, MP_PARALLEL_ANY, 0, &p), 13312);
    MP_CHECK_EQ_U64(p.storage[5], p.storage[2]);
    MP_CHECK_EQ_U64(p.n_reused, 2);
    mp_graph_plan_free(&p);
    mp_graph_free(g);
}

/* Best fit.  x input [1] (4 B); nodes "gen" x -> a 1000 B, b 2000, c 4000,
 * c2 2000; "sink" reads a, b, c, c2 -> s 4 B (box empty: new), then
 * a, b, c, c2 are free; d (1800 B) takes the smallest >= 1800: b's or
 * c2's storage (2000), the lower id: b's; e (5000) finds none >= 5000 and
 * takes the largest smaller, c's (4000), grown to 5000; f (2000) takes
 * c2's exactly; after f, s is free (its readers are d, e, f); o (4 B,
 * output) takes the smallest >= 4: s's (a's is 1000).
 * Footprint 4 + 1000 + 2000 + 5000 + 2000 + 4 = 10008. */
static const char *fit_json =
    "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"fit\"},\"tensors\":["
    T(0, "x", "[1]", 4, "input") "," T(1, "a", "[250]", 1000, "activation") ","
    T(2, "b", "[500]", 2000, "activation") "," T(3, "c", "[1000]", 4000, "activation") ","
    T(4, "c2", "[500]", 2000, "activation") "," T(5, "s", "[1]", 4, "activation") ","
    T(6, "d", "[450]", 1800, "activation") "," T(7, "e", "[1250]", 5000, "activation") ","
    T(8, "f", "[500]", 2000, "activation") "," T(9, "o", "[1]", 4, "output") "],\"nodes\":["
    N(0, "gen", "[0]", "[1]") "," N(1, "gen", "[0]", "[2]") "," N(2, "gen", "[0]", "[3]") ","
    N(3, "gen", "[0]", "[4]") "," N(4, "sink", "[1,2,3,4]", "[5]") ","
    N(5, "gen", "[5]", "[6]") "," N(6, "gen", "[5]", "[7]") "," N(7, "gen", "[5]", "[8]") ","
    N(8, "sink", "[6,7,8]", "[9]") "],\"order\":[0,1,2,3,4,5,6,7,8],\"outputs\":[9],"
    "\"loss\":null}";

static void test_best_fit(void) {
    mp_graph_t *g = mp_test_graph_parse(fit_json);
    if (!g) return;
    mp_graph_plan_t p;
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &p), 10008);
    MP_CHECK_EQ_U64(p.storage[6], p.storage[2]);
    MP_CHECK_EQ_U64(p.storage[7], p.storage[3]);
    MP_CHECK_EQ_U64(p.storage_size[p.storage[3]], 5000);
    MP_CHECK_EQ_U64(p.storage[8], p.storage[4]);
    MP_CHECK_EQ_U64(p.storage[9], p.storage[5]);
    MP_CHECK_EQ_U64(p.n_reused, 4);
    MP_CHECK_EQ_U64(p.n_inplace, 0);
    /* The same in ancestor mode: every reuse follows the sink nodes, which
     * depend on everything before them. */
    mp_graph_plan_t q;
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANCESTOR, 0, &q), 10008);
    mp_graph_plan_free(&q);
    /* Placement: each storage one record, then core strategies (the check
     * inside place proves validity); none is worse than end to end, the
     * naive layout of those records. */
    const char *strategies[] = {"greedy-size", "greedy-breadth", "objects-greedy-size", "auto"};
    for (size_t i = 0; i < 4; i++) {
        MP_CHECK(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &q) == 10008);
        MP_CHECK_OK(mp_graph_plan_place(g, &q, strategies[i]));
        MP_CHECK_OK(mp_graph_plan_check(g, &q, MP_PARALLEL_ANY));
        MP_CHECK(q.footprint <= 10008 && q.footprint >= mp_test_records_bound(g, &q));
        MP_CHECK(q.placement && strcmp(q.placement, "sequential"));
        mp_graph_plan_free(&q);
    }
    MP_CHECK(mp_graph_plan_place(g, &p, "no-such-strategy") == MP_ENOTFOUND);
    MP_CHECK_EQ_U64(p.footprint, 10008);
    mp_graph_plan_free(&p);
    mp_graph_free(g);
}

/* Graph outputs are never reused nor overwritten.  x input (64 B);
 * n0: gen x -> o1 (a graph output, 64 B); n1: gen x -> u (64 B, nobody
 * reads it: freed right after n1); n2: relu o1 -> r (64 B, output): not in
 * place over a graph output, takes u's storage; n3: gen x -> v (64 B,
 * output): the box is empty (o1 is never freed): new.  4 x 64 = 256. */
static const char *out_json =
    "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"outs\"},\"tensors\":["
    T(0, "x", "[16]", 64, "input") "," T(1, "o1", "[16]", 64, "output") ","
    T(2, "u", "[16]", 64, "activation") "," T(3, "r", "[16]", 64, "output") ","
    T(4, "v", "[16]", 64, "output") "],\"nodes\":["
    N(0, "gen", "[0]", "[1]") "," N(1, "gen", "[0]", "[2]") "," N(2, "relu", "[1]", "[3]") ","
    N(3, "gen", "[0]", "[4]") "],\"order\":[0,1,2,3],\"outputs\":[1,3,4],\"loss\":null}";

static void test_outputs(void) {
    mp_graph_t *g = mp_test_graph_parse(out_json);
    if (!g) return;
    mp_graph_plan_t p;
    MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &p), 256);
    MP_CHECK(p.inplace_of[3] == NONE);
    MP_CHECK_EQ_U64(p.storage[3], p.storage[2]);
    for (size_t t = 2; t <= 4; t++) MP_CHECK(p.storage[t] != p.storage[1]);
    MP_CHECK(p.storage[4] != p.storage[0]);
    mp_graph_plan_free(&p);
    mp_graph_free(g);
}

/* Views: y = flatten(a) is a's memory; relu(y) may be written over a (a
 * registry view keeps the layout); a view produced by an unknown op may
 * not be.  x input 64 B; a = gen(x) 64 B; y = flatten(a) (alias);
 * z = relu(y) 64 B (output).  Then the same with op "Tensor.permute". */
static void test_views(void) {
    const char *fmt =
        "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"views\"},\"tensors\":["
        T(0, "x", "[16]", 64, "input") "," T(1, "a", "[4,4]", 64, "activation") ","
        "{\"id\":2,\"name\":\"y\",\"shape\":[16],\"dtype\":\"float32\",\"bytes\":0,"
        "\"kind\":\"activation\",\"alias_of\":1},"
        T(3, "z", "[16]", 64, "output") "],\"nodes\":["
        N(0, "gen", "[0]", "[1]") ",{\"id\":1,\"name\":\"v\",\"op\":\"%s\",\"inputs\":[1],"
        "\"outputs\":[2]}," N(2, "relu", "[2]", "[3]") "],\"order\":[0,1,2],\"outputs\":[3],"
        "\"loss\":null}";
    for (int k = 0; k < 2; k++) {
        char json[2048];
        snprintf(json, sizeof json, fmt, k ? "Tensor.permute" : "torch.flatten");
        mp_graph_t *g = mp_test_graph_parse(json);
        if (!g) continue;
        mp_graph_plan_t p;
        MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &p), k ? 192 : 128);
        MP_CHECK_EQ_U64(p.storage[2], p.storage[1]);
        MP_CHECK_EQ_U64(p.inplace_of[3], k ? NONE : 2);
        mp_graph_plan_free(&p);
        mp_graph_free(g);
    }
}

/* A chain of views: relu over stochastic_depth(permute(a)) must not write in
 * place -- the layout-keeping view at the end does not undo the permute --
 * while relu over stochastic_depth(flatten(a)) may (4x4 float32 = 64 B). */
static void test_view_chain(void) {
    const char *fmt =
        HEAD T(0, "x", "[16]", 64, "input") "," T(1, "a", "[4,4]", 64, "activation") ","
        "{\"id\":2,\"name\":\"p\",\"shape\":[%s],\"dtype\":\"float32\",\"bytes\":0,"
        "\"kind\":\"activation\",\"alias_of\":1},"
        "{\"id\":3,\"name\":\"d\",\"shape\":[%s],\"dtype\":\"float32\",\"bytes\":0,"
        "\"kind\":\"activation\",\"alias_of\":1},"
        T(4, "z", "[%s]", 64, "output") "],\"nodes\":["
        N(0, "gen", "[0]", "[1]") ",{\"id\":1,\"name\":\"v\",\"op\":\"%s\",\"inputs\":[1],"
        "\"outputs\":[2]},{\"id\":2,\"name\":\"sd\",\"op\":"
        "\"torchvision.ops.stochastic_depth.stochastic_depth\",\"inputs\":[2],\"outputs\":[3]},"
        N(3, "relu", "[3]", "[4]") "],\"order\":[0,1,2,3],\"outputs\":[4],\"loss\":null}";
    for (int k = 0; k < 2; k++) {
        char json[2048];
        const char *shape = k ? "4,4" : "16";
        snprintf(json, sizeof json, fmt, "chain", shape, shape, shape,
                 k ? "Tensor.permute" : "torch.flatten");
        mp_graph_t *g = mp_test_graph_parse(json);
        if (!g) continue;
        mp_graph_plan_t p;
        MP_CHECK_EQ_U64(mp_test_share(g, 1, 1, MP_PARALLEL_ANY, 0, &p), k ? 192 : 128);
        MP_CHECK_EQ_U64(p.inplace_of[4], k ? NONE : 3);
        mp_graph_plan_free(&p);
        mp_graph_free(g);
    }
}

/* The library's verdicts equal the oracle's. */
static bool agree(const mp_graph_t *g, const mp_graph_oracle_t *o, const mp_graph_plan_t *p, bool *par_ok) {
    bool seq, par;
    mp_graph_oracle_judge(g, o, p, &seq, &par);
    bool lseq = mp_graph_plan_check(g, p, MP_PARALLEL_ANY) == MP_OK;
    bool lanc = mp_graph_plan_check(g, p, MP_PARALLEL_ANCESTOR) == MP_OK;
    bool lcol = mp_graph_plan_check(g, p, MP_PARALLEL_COLOUR) == MP_OK;
    if (par_ok) *par_ok = par;
    bool ok = lseq == seq && lanc == par && lcol == par;
    if (!ok)
        fprintf(stderr, "  oracle seq %d par %d, checker seq %d anc %d col %d (%s): %s\n", seq,
                par, lseq, lanc, lcol, mp_graph_model_name(g), mp_last_error());
    return ok;
}

/* ---- random graphs ----------------------------------------------------- */

static void test_random(void) {
    size_t unsafe = 0, corrupted_bad = 0, corrupted_ok = 0, inplace = 0, colour_reuse = 0;
    uint64_t rng = 77;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        size_t n = 5 + (size_t)(seed * 37 % 140);
        char *json = mp_graph_gen_json(seed, n);
        if (!MP_CHECK(json != NULL)) return;
        mp_graph_t *g = mp_test_graph_parse(json);
        free(json);
        if (!g) continue;
        mp_graph_oracle_t o;
        if (!MP_CHECK(mp_graph_oracle_init(g, &o))) {
            mp_graph_oracle_free(&o);
            mp_graph_free(g);
            return;
        }
        mp_graph_plan_t p[7];
        uint64_t fp[7];
        static const int mode[7][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {1, 1, 0},
                                       {1, 1, 1}, {1, 1, 2}, {1, 0, 1}};
        for (int m = 0; m < 7; m++)
            fp[m] = mp_test_share(g, mode[m][0], mode[m][1], (mp_parallel_mode)mode[m][2], 0, &p[m]);
        MP_CHECK_EQ_U64(fp[0], mp_test_naive_bytes(g, 0));
        MP_CHECK(fp[0] >= fp[1] && fp[1] >= fp[3] && fp[0] >= fp[2]);
        /* Sharing adds to the same in-place decisions (they do not depend
         * on the box), so it can only merge their storages. */
        MP_CHECK(fp[4] <= fp[6] && fp[6] <= fp[0] && fp[3] >= mp_test_records_bound(g, &p[3]));
        inplace += p[1].n_inplace;
        colour_reuse += p[5].n_reused;
        for (int m = 0; m < 7; m++) {
            bool par;
            MP_CHECK(agree(g, &o, &p[m], &par));
            if (mode[m][2]) MP_CHECK(par);
            else unsafe += !par;
        }
        /* Placed plans: valid sequentially, maybe not in parallel. */
        static const char *const strat[] = {"greedy-size", "greedy-breadth", "strip-bestfit",
                                            "objects-greedy-size", "auto"};
        for (int m = 3; m <= 5; m++) {
            if (!MP_CHECK_OK(mp_graph_plan_place(g, &p[m], strat[seed % 5]))) continue;
            MP_CHECK(agree(g, &o, &p[m], NULL));
            MP_CHECK(p[m].footprint >= mp_test_records_bound(g, &p[m]));
        }
        /* Corrupted plans (sharing without in place, then a tensor moved
         * to another storage at least as large): the checker must agree
         * with the oracle whichever way it goes. */
        for (int k = 0; k < 8; k++) {
            mp_graph_plan_t *q = &p[2];
            size_t t = (size_t)(mp_gen_next(&rng) % mp_graph_tensor_count(g));
            size_t s = (size_t)(mp_gen_next(&rng) % (q->n_storages ? q->n_storages : 1));
            const mp_graph_tensor_t *x = mp_graph_tensor(g, t);
            if (x->root != t || q->storage[t] == NONE || q->storage_size[s] < x->bytes) continue;
            size_t old = q->storage[t];
            for (size_t v = 0; v < mp_graph_tensor_count(g); v++)
                if (mp_graph_tensor(g, v)->root == t) q->storage[v] = s;
            bool seq, par;
            mp_graph_oracle_judge(g, &o, q, &seq, &par);
            corrupted_bad += !seq, corrupted_ok += seq;
            MP_CHECK(agree(g, &o, q, NULL));
            for (size_t v = 0; v < mp_graph_tensor_count(g); v++)
                if (mp_graph_tensor(g, v)->root == t) q->storage[v] = old;
        }
        for (int m = 0; m < 7; m++) mp_graph_plan_free(&p[m]);
        mp_graph_oracle_free(&o);
        mp_graph_free(g);
    }
    /* The comparisons above mean something only if both verdicts occur. */
    MP_CHECK(unsafe > 0);
    MP_CHECK(corrupted_bad > 0 && corrupted_ok > 0);
    MP_CHECK(inplace > 0 && colour_reuse > 0);
    printf("random graphs: %zu parallel-unsafe sequential plans, %zu/%zu corrupted plans "
           "invalid, %zu in place, %zu colour reuses\n",
           unsafe, corrupted_bad, corrupted_bad + corrupted_ok, inplace, colour_reuse);
}

/* The loader's small test graphs (views of inputs, an empty graph): every
 * mode gives a valid plan, "none" costs the naive sum. */
static void test_small_files(void) {
    static const char *const files[] = {"graph/small.json", "graph/alias_chain.json",
                                        "graph/empty.json"};
    for (size_t f = 0; f < 3; f++) {
        mp_graph_t *g;
        if (!MP_CHECK_OK(mp_graph_load(files[f], &g))) continue;
        for (int incl = 0; incl < 2; incl++)
            for (int m = 0; m < 6; m++) {
                mp_graph_plan_t p;
                uint64_t fp = mp_test_share(g, m & 1, m >= 2, (mp_parallel_mode)(m / 2), incl, &p);
                if (m == 0 && mp_graph_node_count(g)) MP_CHECK_EQ_U64(fp, mp_test_naive_bytes(g, incl));
                if (MP_CHECK_OK(mp_graph_plan_place(g, &p, "greedy-size")))
                    MP_CHECK(p.footprint <= fp);
                mp_graph_plan_free(&p);
            }
        mp_graph_free(g);
    }
}

/* chen2016 Fig. 1 built with the builder: x [4,8] -> fc1 = linear(x, w1)
 * [4,16] -> act1 = sigmoid(fc1) -> fc2 = linear(act1, w2) [4,5], then the
 * training graph (mp_graph_backward, softmax_xent loss added).  fc1 is read
 * only by the sigmoid (sigmoid's gradient reads its output, linear's its
 * inputs: act1, not fc1), so act1 overwrites fc1 in every mode, as in the
 * figure ("inplace on act1"). */
static void test_built(void) {
    mp_graph_builder_t *b;
    if (!MP_CHECK_OK(mp_graph_builder_new("mlp", &b))) return;
    size_t x, w1, w2, fc1, act1, fc2;
    MP_CHECK_OK(mp_graph_builder_tensor(b, "x", NULL, (uint64_t[]){4, 8}, 2, MP_TENSOR_INPUT,
                                        NONE, &x));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "w1", NULL, (uint64_t[]){16, 8}, 2,
                                        MP_TENSOR_PARAMETER, NONE, &w1));
    MP_CHECK_OK(mp_graph_builder_tensor(b, "w2", NULL, (uint64_t[]){5, 16}, 2,
                                        MP_TENSOR_PARAMETER, NONE, &w2));
    MP_CHECK_OK(mp_graph_builder_op(b, "fc1", "linear", (size_t[]){x, w1}, 2, NULL, 1, &fc1, NULL));
    MP_CHECK_OK(mp_graph_builder_op(b, "act1", "sigmoid", &fc1, 1, NULL, 1, &act1, NULL));
    MP_CHECK_OK(mp_graph_builder_op(b, "fc2", "linear", (size_t[]){act1, w2}, 2, NULL, 1, &fc2,
                                    NULL));
    mp_graph_t *fwd = NULL, *g = NULL;
    MP_CHECK_OK(mp_graph_builder_finish(b, NULL, &fc2, 1, NONE, &fwd));
    mp_graph_builder_free(b);
    mp_backward_opts_t bo = {.add_loss = 1};
    if (fwd && MP_CHECK_OK(mp_graph_backward(fwd, &bo, &g, NULL))) {
        for (int m = 0; m < 6; m++) {
            mp_graph_plan_t p;
            uint64_t fp = mp_test_share(g, 1, m > 0, (mp_parallel_mode)(m % 3), m % 2, &p);
            MP_CHECK(fp > 0 && fp <= mp_test_naive_bytes(g, m % 2));
            MP_CHECK_EQ_U64(p.inplace_of[act1], fc1);
            MP_CHECK_EQ_U64(p.storage[act1], p.storage[fc1]);
            mp_graph_plan_free(&p);
        }
    }
    mp_graph_free(g);
    mp_graph_free(fwd);
}

static void test_args(void) {
    mp_graph_t *g = mp_test_graph_parse(chain_json);
    if (!g) return;
    mp_graph_plan_t p;
    mp_share_opts_t o = {.parallel = (mp_parallel_mode)7};
    MP_CHECK(mp_graph_share(g, &o, &p) == MP_EINVAL);
    MP_CHECK(p.storage == NULL && p.n_storages == 0);
    MP_CHECK_OK(mp_graph_share(g, NULL, &p)); /* NULL: everything off */
    MP_CHECK_EQ_U64(p.footprint, 11264);
    MP_CHECK(mp_graph_plan_check(g, &p, (mp_parallel_mode)9) == MP_EINVAL);
    p.n_tensors--;
    MP_CHECK(mp_graph_plan_check(g, &p, MP_PARALLEL_ANY) == MP_EINVAL);
    p.n_tensors++;
    mp_graph_plan_free(&p);
    mp_graph_plan_free(&p); /* zeroed: fine */
    mp_graph_plan_free(NULL);
    mp_graph_free(g);
}

int main(void) {
    test_args();
    test_chain();
    test_fig2();
    test_best_fit();
    test_outputs();
    test_views();
    test_view_chain();
    test_small_files();
    test_built();
    test_random();
    return mp_test_finish("share");
}
