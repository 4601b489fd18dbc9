/* fuzz_swap.c -- libFuzzer target: a graph through swapping.
 *
 * The input is a graph file (as fuzz_graph), optionally followed by a line
 * "@@" and a link spelling "BW,LAT" for mp_swap_link_parse (else the pcie3
 * preset).  The training step (the graph itself when it has gradients,
 * else its backward graph) becomes a timed iteration, which must validate;
 * then its load curve, load_min, the candidates and their scores, and
 * selection with every score in both modes (a limit halfway between
 * load_min and the peak): each plan validated and simulated, the
 * simulation consistent (stall = total - compute, peak not above the
 * original), and its residencies planned and proven by the checker. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

/* Selection simulates the iteration once per candidate prefix (and BO per
 * evaluation): graphs above this many nodes are skipped. */
enum { MAX_NODES = 300, MAX_RESIDENCIES = 2000 };

static int ok_or_resource(mp_status st) {
    return st == MP_OK || st == MP_ENOMEM || st == MP_EOVERFLOW;
}

static void check_sim(const mp_swap_iter_t *it, const mp_swap_plan_t *p, const mp_swap_sim_t *s) {
    FZ_CHECK(s->total_ns >= s->compute_ns && s->stall_ns == s->total_ns - s->compute_ns,
             "simulation: stall is not total - compute");
    FZ_CHECK(s->n_ops == it->n_ops, "simulation: op count");
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_status st = mp_swap_residency(it, p, s, &b, &n);
    FZ_CHECK(ok_or_resource(st), "mp_swap_residency failed");
    if (st == MP_OK) fz_plan_checked(b, n, MAX_RESIDENCIES, "smartpool-bestfit");
    free(b);
}

static void select_all(const mp_swap_iter_t *it, const mp_swap_link_t *link, uint64_t peak,
                       uint64_t load_min) {
    for (int score = MP_SWAP_DOA; score <= MP_SWAP_BO; score++)
        for (int mode = 0; mode < 2; mode++) {
            mp_swap_select_opts_t o;
            mp_swap_select_opts_default(&o);
            o.score = (mp_swap_score)score;
            o.mode = (mp_swap_mode)mode;
            o.min_size = 1;
            o.bo_evals = 6;
            o.limit = load_min + (peak - load_min) / 2;
            if (mode == MP_SWAP_LIMIT && o.limit == 0) continue;
            mp_swap_plan_t p;
            mp_swap_sim_t s;
            mp_status st = mp_swap_select(it, link, &o, &p, &s);
            FZ_CHECK(ok_or_resource(st) || (st == MP_EINVAL && mode == MP_SWAP_LIMIT),
                     "mp_swap_select failed");
            if (st != MP_OK) continue;
            FZ_CHECK(mp_swap_plan_validate(it, &p) == MP_OK, "a selected plan does not validate");
            FZ_CHECK(s.original_peak == peak, "simulation: original peak differs from the load's");
            if (mode == MP_SWAP_NO_OVERHEAD) FZ_CHECK(s.stall_ns == 0, "no-overhead mode stalls");
            check_sim(it, &p, &s);
            mp_swap_sim_free(&s);
            mp_swap_plan_free(&p);
        }
}

static void swap(const mp_graph_t *train, const mp_swap_link_t *link) {
    mp_swap_device_t dev;
    FZ_CHECK(mp_swap_device_preset("gtx1080ti", &dev) == MP_OK, "no gtx1080ti preset");
    mp_swap_iter_t it;
    mp_status st = mp_swap_iter_from_graph(train, &dev, &it);
    FZ_CHECK(ok_or_resource(st) || st == MP_EINVAL, "mp_swap_iter_from_graph failed");
    if (st != MP_OK) return;
    FZ_CHECK(mp_swap_iter_validate(&it) == MP_OK, "an iteration from a graph does not validate");
    uint64_t *load = malloc((it.n_ops + 1) * sizeof *load), peak = 0, load_min = 0;
    size_t peak_op = 0;
    FZ_CHECK(load != NULL, "out of memory");
    if (mp_swap_load(&it, load, &peak, &peak_op) == MP_OK &&
        mp_swap_load_min(&it, 1, &load_min) == MP_OK) {
        FZ_CHECK(load_min <= peak, "load_min above the peak");
        mp_swap_item_t *cand = NULL;
        size_t n = 0;
        if (mp_swap_candidates(&it, 1, &cand, &n) == MP_OK && n) {
            double *sc = malloc(4 * n * sizeof *sc);
            FZ_CHECK(sc != NULL, "out of memory");
            FZ_CHECK(mp_swap_scores(&it, link, cand, n, sc, sc + n, sc + 2 * n, sc + 3 * n) == MP_OK,
                     "mp_swap_scores failed");
            mp_swap_plan_t all = {.n = n, .item = cand};
            FZ_CHECK(mp_swap_plan_validate(&it, &all) == MP_OK, "the candidates do not validate");
            free(sc);
        }
        free(cand);
        select_all(&it, link, peak, load_min);
    }
    free(load);
    mp_swap_iter_free(&it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FZ_MAX_INPUT) return 0;
    char text[128];
    size_t n = size;
    mp_swap_link_t link;
    FZ_CHECK(mp_swap_link_preset("pcie3", &link) == MP_OK, "no pcie3 preset");
    if (fz_tail(data, &n, text, sizeof text)) {
        mp_swap_link_t parsed;
        if (mp_swap_link_parse(text, &parsed) == MP_OK) link = parsed;
        else FZ_CHECK(mp_last_error()[0], "a refused link without a message");
    }
    mp_graph_t *g = fz_graph(data, n);
    if (!g) return 0;
    if (mp_graph_node_count(g) > MAX_NODES) {
        mp_graph_free(g);
        return 0;
    }
    int has_grad = 0;
    for (size_t t = 0; t < mp_graph_tensor_count(g) && !has_grad; t++)
        has_grad = mp_graph_tensor(g, t)->kind == MP_TENSOR_GRADIENT;
    if (has_grad) {
        swap(g, &link);
    } else {
        mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
        mp_graph_t *train = NULL;
        if (mp_graph_backward(g, &bo, &train, NULL) == MP_OK) swap(train, &link);
        mp_graph_free(train);
    }
    mp_graph_free(g);
    return 0;
}
