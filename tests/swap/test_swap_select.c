/* test_swap_select.c -- AutoSwap's scores and selection (src/swap/score.c,
 * select.c, bo.c): the four scores worked out by hand on a small iteration
 * where DOA and WDOA rank the candidates differently, selection in both
 * modes, BO never worse than the best single score, the load_min refusal,
 * every plan validated and simulated, and its residencies (SmartPool after
 * AutoSwap) placed and checked. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Six ops, times 10, 10, 100, 10, 10, 10 ns (starts 0, 10, 20, 120, 130,
 * 140; 150 in all):
 *   op0 writes a (100 B)    op3 reads c
 *   op1 writes b (10 B)     op4 reads b
 *   op2 writes c (50 B)     op5 reads a
 * Loads per op: 100, 110, 160, 160, 110, 100; the peak op is 2.
 * Candidates (on the device at op 2, not accessed by it): a with the gap
 * (0, 5), b with (1, 4).  Link: 1 byte/ns both ways, no latency.
 *   DOA(a)  = (10+100+10+10) - (100+100) = -70     DOA(b) = (100+10) - 20 = 90
 *   AOA(a)  = -70 / 100 = -0.7                      AOA(b) = 90 * 10 = 900
 *   WDOA(a) = 110*10 + 160*100 + 160*10 + 110*10 = 19800
 *   WDOA(b) = 160*100 + 160*10 = 17600
 *   SWDOA: a first (19800); then b loses 100 B x the 110 ns both gaps
 *   share: 17600 - 11000 = 6600.
 * DOA prefers b, WDOA prefers a. */
static mp_swap_var_t vars[3] = {{100, 0, "a"}, {10, 0, "b"}, {50, 0, "c"}};
static mp_swap_access_t acc[6] = {{0, 1}, {1, 1}, {2, 1}, {2, 0}, {1, 0}, {0, 0}};
static mp_swap_op_t ops[6] = {{10, 0, 1, "op0"}, {10, 1, 1, "op1"}, {100, 2, 1, "op2"},
                              {10, 3, 1, "op3"}, {10, 4, 1, "op4"}, {10, 5, 1, "op5"}};
static const mp_swap_iter_t small = {3, 6, 6, vars, ops, acc};

static mp_swap_link_t unit_link(void) {
    mp_swap_link_t l = {.out_bytes_per_s = 1e9, .in_bytes_per_s = 1e9};
    strcpy(l.name, "unit");
    return l;
}

/* SmartPool after AutoSwap: the residencies' max live bytes is the
 * simulated peak load, and a planner's footprint of them is checked and
 * never below it. */
static void check_residency(const mp_swap_iter_t *it, const mp_swap_plan_t *p,
                            const mp_swap_sim_t *sim) {
    mp_buffer_t *b;
    size_t n;
    if (!MP_CHECK_OK(mp_swap_residency(it, p, sim, &b, &n))) return;
    mp_bounds_t bd;
    if (MP_CHECK_OK(mp_bounds_compute(b, n, &bd))) MP_CHECK_EQ_U64(bd.offsets, sim->peak);
    mp_plan_t plan;
    if (MP_CHECK_OK(mp_plan_compute(b, n, "smartpool-bestfit", &plan))) {
        MP_CHECK_OK(mp_plan_check(b, n, &plan, NULL));
        MP_CHECK(plan.footprint >= sim->peak);
        mp_plan_free(&plan);
    }
    free(b);
}

static void test_scores(void) {
    mp_swap_item_t *c;
    size_t n;
    if (!MP_CHECK_OK(mp_swap_candidates(&small, 1, &c, &n))) return;
    MP_CHECK_EQ_U64(n, 2);
    MP_CHECK(c[0].var == 0 && c[0].after == 0 && c[0].before == 5);
    MP_CHECK(c[1].var == 1 && c[1].after == 1 && c[1].before == 4);
    mp_swap_link_t l = unit_link();
    double doa[2], aoa[2], wdoa[2], swdoa[2];
    if (MP_CHECK_OK(mp_swap_scores(&small, &l, c, n, doa, aoa, wdoa, swdoa))) {
        MP_CHECK(doa[0] == -70 && doa[1] == 90);
        MP_CHECK(fabs(aoa[0] + 0.7) < 1e-12 && aoa[1] == 900);
        MP_CHECK(wdoa[0] == 19800 && wdoa[1] == 17600);
        MP_CHECK(swdoa[0] == 19800 && swdoa[1] == 6600);
    }
    uint64_t load_min;
    MP_CHECK_OK(mp_swap_load_min(&small, 1, &load_min));
    MP_CHECK_EQ_U64(load_min, 100);
    free(c);
}

static void select_one(mp_swap_mode mode, mp_swap_score score, uint64_t limit,
                       mp_swap_plan_t *p, mp_swap_sim_t *sim) {
    mp_swap_link_t l = unit_link();
    mp_swap_select_opts_t o;
    mp_swap_select_opts_default(&o);
    o.mode = mode, o.score = score, o.limit = limit, o.min_size = 1;
    MP_CHECK_OK(mp_swap_select(&small, &l, &o, p, sim));
    MP_CHECK_OK(mp_swap_plan_validate(&small, p));
}

/* limit 150: one candidate out of ops 2-3 is enough; DOA takes b, WDOA a. */
static void test_limit_mode(void) {
    mp_swap_plan_t p;
    mp_swap_sim_t sim;
    select_one(MP_SWAP_LIMIT, MP_SWAP_DOA, 150, &p, &sim);
    MP_CHECK(p.n == 1 && p.item[0].var == 1 && !strcmp(p.score, "doa"));
    MP_CHECK(sim.limit_met && sim.peak <= 150 && sim.original_peak == 160);
    double doa_overhead = sim.overhead;
    mp_swap_plan_free(&p), mp_swap_sim_free(&sim);
    select_one(MP_SWAP_LIMIT, MP_SWAP_WDOA, 150, &p, &sim);
    MP_CHECK(p.n == 1 && p.item[0].var == 0);
    MP_CHECK(sim.limit_met && sim.peak <= 150);
    /* a's swap-out (100 ns) must end before op 2 can allocate c: it stalls
     * more than b's (10 ns) does */
    MP_CHECK(sim.overhead > doa_overhead);
    mp_swap_plan_free(&p), mp_swap_sim_free(&sim);
    select_one(MP_SWAP_LIMIT, MP_SWAP_BO, 150, &p, &sim);
    MP_CHECK(sim.limit_met && sim.overhead <= doa_overhead && !strcmp(p.score, "bo"));
    check_residency(&small, &p, &sim);
    mp_swap_plan_free(&p), mp_swap_sim_free(&sim);
}

/* No overhead: b hides (DOA 90 > 0), a cannot (DOA < 0): plan {b}, with
 * no stall -- and no gain: with no limit op 2 allocates c at 20 while b's
 * swap-out runs until 30, so the peak stays 160 (a zero-stall plan cannot
 * lower this peak; the limit mode pays 10 ns for it). */
static void test_no_overhead(void) {
    mp_swap_plan_t p;
    mp_swap_sim_t sim;
    select_one(MP_SWAP_NO_OVERHEAD, MP_SWAP_DOA, 0, &p, &sim);
    MP_CHECK(p.n == 1 && p.item[0].var == 1);
    MP_CHECK(sim.stall_ns == 0 && sim.peak == 160);
    mp_swap_plan_free(&p), mp_swap_sim_free(&sim);
    for (int s = MP_SWAP_DOA; s <= MP_SWAP_BO; s++) {
        select_one(MP_SWAP_NO_OVERHEAD, (mp_swap_score)s, 0, &p, &sim);
        MP_CHECK(sim.stall_ns == 0 && sim.peak <= 160);
        mp_swap_plan_free(&p), mp_swap_sim_free(&sim);
    }
}

static void test_errors(void) {
    mp_swap_link_t l = unit_link();
    mp_swap_select_opts_t o;
    mp_swap_select_opts_default(&o);
    o.mode = MP_SWAP_LIMIT, o.limit = 90, o.min_size = 1;
    mp_swap_plan_t p;
    MP_CHECK(mp_swap_select(&small, &l, &o, &p, NULL) == MP_EINVAL &&
             !strcmp(mp_last_error(), "limit 90 bytes is below load_min 100 bytes, the least load "
                                      "swapping every candidate can reach"));
    MP_CHECK(p.n == 0 && p.item == NULL);
    o.score = (mp_swap_score)9;
    MP_CHECK(mp_swap_select(&small, &l, &o, &p, NULL) == MP_EINVAL);
}

/* A training graph: BO's plan is never worse than any single score's, in
 * both modes, and every plan validates. */
static void test_graph_bo(void) {
    mp_graph_t *g, *t;
    if (!MP_CHECK_OK(mp_graph_load("graph/small.json", &g))) return;
    mp_backward_opts_t bo = {.add_loss = 1};
    if (!MP_CHECK_OK(mp_graph_backward(g, &bo, &t, NULL))) return mp_graph_free(g);
    mp_swap_device_t d;
    mp_swap_link_t l;
    mp_swap_iter_t it;
    MP_CHECK_OK(mp_swap_device_preset("gtx1080ti", &d));
    MP_CHECK_OK(mp_swap_link_preset("pcie3", &l));
    if (MP_CHECK_OK(mp_swap_iter_from_graph(t, &d, &it))) {
        for (int mode = 0; mode < 2; mode++) {
            mp_swap_select_opts_t o;
            mp_swap_select_opts_default(&o);
            o.mode = (mp_swap_mode)mode, o.min_size = 1;
            uint64_t peak, load_min;
            size_t po;
            uint64_t *load = malloc((it.n_ops + 1) * sizeof *load);
            mp_swap_load(&it, load, &peak, &po);
            mp_swap_load_min(&it, 1, &load_min);
            free(load);
            o.limit = load_min + (peak - load_min) / 2;
            double best = 1e300, bo_value = 0;
            for (int s = MP_SWAP_DOA; s <= MP_SWAP_BO; s++) {
                mp_swap_plan_t p;
                mp_swap_sim_t sim;
                o.score = (mp_swap_score)s;
                if (!MP_CHECK_OK(mp_swap_select(&it, &l, &o, &p, &sim))) continue;
                MP_CHECK_OK(mp_swap_plan_validate(&it, &p));
                double v = mode == MP_SWAP_LIMIT ? (sim.limit_met ? sim.overhead : 1e6 + sim.peak)
                                                 : (double)sim.peak;
                if (s == MP_SWAP_BO) bo_value = v;
                else if (v < best) best = v;
                if (mode == MP_SWAP_NO_OVERHEAD) MP_CHECK(sim.stall_ns == 0);
                check_residency(&it, &p, &sim);
                mp_swap_plan_free(&p), mp_swap_sim_free(&sim);
            }
            MP_CHECK(bo_value <= best);
        }
        mp_swap_iter_free(&it);
    }
    mp_graph_free(t), mp_graph_free(g);
}

int main(void) {
    test_scores();
    test_limit_mode();
    test_no_overhead();
    test_errors();
    test_graph_bo();
    return mp_test_finish("test_swap_select");
}
