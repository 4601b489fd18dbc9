/* test_swap_joint.c -- keep, swap or recompute in one plan (src/swap/joint.c)
 * on corpus forward graphs: at every limit of a ladder the joint plan is
 * feasible whenever swap-only or recompute-only is, never slower than
 * either, and within the limit; swap-only equals AutoSwap run directly on
 * the plain training step; the ends of the ladder behave. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const MODELS[] = {"resnet18", "squeezenet1_1"};

/* Swap-only by hand: AutoSwap's limit mode on the plain training step. */
static void check_swap_only(const mp_graph_t *fwd, const mp_swap_device_t *dev, const mp_swap_link_t *link,
                            uint64_t limit, const mp_swap_choice_t *so) {
    mp_graph_t *train = NULL;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    mp_swap_iter_t it;
    if (!MP_CHECK_OK(mp_graph_backward(fwd, &bo, &train, NULL))) return;
    if (MP_CHECK_OK(mp_swap_iter_from_graph(train, dev, &it))) {
        uint64_t compute = 0, peak;
        for (size_t k = 0; k < it.n_ops; k++) compute += it.op[k].ns;
        MP_CHECK_OK(mp_swap_load(&it, NULL, &peak, NULL));
        mp_swap_select_opts_t o;
        mp_swap_select_opts_default(&o);
        o.mode = MP_SWAP_LIMIT, o.limit = limit, o.score = MP_SWAP_SWDOA, o.min_size = 1u << 16;
        mp_swap_plan_t p;
        mp_swap_sim_t sim;
        if (peak <= limit) {
            MP_CHECK(so->feasible && so->n_swapped == 0 && so->total_ns == compute);
        } else if (mp_swap_select(&it, link, &o, &p, &sim) == MP_OK) {
            MP_CHECK_EQ_U64((uint64_t)so->feasible, (uint64_t)sim.limit_met);
            if (sim.limit_met) {
                MP_CHECK_EQ_U64(so->total_ns, sim.total_ns);
                MP_CHECK_EQ_U64(so->n_swapped, p.n);
            }
            mp_swap_plan_free(&p);
            mp_swap_sim_free(&sim);
        } else {
            MP_CHECK(!so->feasible);
        }
        mp_swap_iter_free(&it);
    }
    mp_graph_free(train);
}

static void check_model(const char *name, long *strictly, long *points) {
    char path[256];
    snprintf(path, sizeof path, "../bench/corpus/inference/%s.graph.json.gz", name);
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_load(path, &g))) return;
    mp_swap_device_t dev;
    mp_swap_link_t link;
    MP_CHECK_OK(mp_swap_device_preset("h100", &dev));
    MP_CHECK_OK(mp_swap_link_preset("pcie4", &link));
    mp_swap_joint_opts_t o;
    mp_swap_joint_opts_default(&o);
    o.min_size = 1u << 16;
    mp_swap_joint_t *j = NULL;
    if (!MP_CHECK_OK(mp_swap_joint_new(g, &dev, &link, &o, &j))) goto out;
    uint64_t top = mp_swap_joint_plain_peak(j), lo = mp_swap_joint_least_peak(j);
    MP_CHECK(mp_swap_joint_count(j) >= 4 && lo > 0 && lo < top);
    mp_swap_choice_t so, ro, jo;
    /* the plain step fits: nothing to do */
    if (MP_CHECK_OK(mp_swap_joint_at(j, top, &so, &ro, &jo)))
        MP_CHECK(jo.feasible && jo.overhead == 0 && jo.n_swapped == 0 && !strcmp(jo.remat, "none") &&
                 ro.feasible && so.feasible);
    /* below every candidate's least load: nothing */
    if (MP_CHECK_OK(mp_swap_joint_at(j, lo - 1, &so, &ro, &jo))) MP_CHECK(!jo.feasible && !ro.feasible && !so.feasible);
    long better = 0;
    for (int k = 1; k < 10; k += 2) {
        uint64_t limit = lo + (top - lo) * (uint64_t)(10 - k) / 10;
        if (!MP_CHECK_OK(mp_swap_joint_at(j, limit, &so, &ro, &jo))) continue;
        MP_CHECK(jo.feasible || (!so.feasible && !ro.feasible));
        if (so.feasible) MP_CHECK(so.peak <= limit && jo.total_ns <= so.total_ns && !strcmp(so.remat, "none"));
        if (ro.feasible) MP_CHECK(ro.peak <= limit && jo.total_ns <= ro.total_ns && ro.n_swapped == 0);
        if (jo.feasible) MP_CHECK(jo.peak <= limit && jo.overhead >= 0);
        if (jo.feasible && (!so.feasible || jo.total_ns < so.total_ns) && (!ro.feasible || jo.total_ns < ro.total_ns))
            better++;
        check_swap_only(g, &dev, &link, limit, &so);
        (*points)++;
    }
    *strictly += better;
    printf("  %s: plain %.1f MB, least %.1f MB, %zu candidates, joint strictly better at %ld of 5 limits\n", name,
           top / 1e6, lo / 1e6, mp_swap_joint_count(j), better);
out:
    mp_swap_joint_free(j);
    mp_graph_free(g);
}

static void test_errors(void) {
    mp_swap_joint_t *j = (mp_swap_joint_t *)1;
    mp_swap_device_t dev;
    mp_swap_link_t link;
    mp_swap_device_preset("h100", &dev);
    mp_swap_link_preset("pcie4", &link);
    MP_CHECK_EQ_U64(mp_swap_joint_new(NULL, &dev, &link, NULL, &j), MP_EINVAL);
    MP_CHECK(j == NULL);
    MP_CHECK_EQ_U64(mp_swap_joint_at(NULL, 1, NULL, NULL, NULL), MP_EINVAL);
    mp_swap_joint_free(NULL);
    MP_CHECK_EQ_U64(mp_swap_joint_count(NULL), 0);
}

int main(void) {
    long strictly = 0, points = 0;
    test_errors();
    for (size_t k = 0; k < sizeof MODELS / sizeof *MODELS; k++) check_model(MODELS[k], &strictly, &points);
    MP_CHECK(strictly * 2 > points);   /* the joint plan is strictly faster at most limits */
    return mp_test_finish("swap_joint");
}
