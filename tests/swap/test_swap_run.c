/* test_swap_run.c -- the executed swap step (src/exec/exec_swap.c): corpus
 * models trained one step with swap plans of every kind (no-overhead BO,
 * limit mode at three limits, every candidate swapped at once, parameters
 * across the iteration's end included), each output bit-identical to the
 * plain step run by the executor alone; a deliberately wrong schedule
 * (steps not waiting for swap-ins, slow copies) is caught by poison; bad
 * arguments are refused. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int same_outputs(const mp_exec_result_t *a, const mp_exec_result_t *b) {
    if (a->n_tensors != b->n_tensors) return 0;
    size_t n = 0;
    for (size_t t = 0; t < a->n_tensors; t++) {
        if (!a->data[t]) continue;
        n++;
        if (!b->data[t] || a->bytes[t] != b->bytes[t] || memcmp(a->data[t], b->data[t], a->bytes[t])) return 0;
    }
    return n > 0;
}

/* Runs plan and checks it against the plain step. */
static void run_plan(const char *what, const mp_graph_t *train, const mp_swap_iter_t *it, const mp_swap_link_t *link,
                     const mp_swap_plan_t *plan, uint64_t limit, const mp_exec_result_t *plain) {
    mp_swap_sim_t sim;
    if (!MP_CHECK_OK(mp_swap_simulate(it, link, plan, limit, &sim))) return;
    mp_swap_run_opts_t o;
    mp_swap_run_opts_default(&o);
    o.seed = 7;
    mp_swap_run_t run;
    if (MP_CHECK_OK(mp_swap_run(train, it, plan, &sim, &o, &run))) {
        MP_CHECK(same_outputs(plain, &run.result));
        MP_CHECK_EQ_U64(run.swaps, plan->n);
        printf("    %-22s %3zu swapped: device pool %8.2f MB + persistent %7.2f MB, host %7.2f MB "
               "(simulated peak load %7.2f MB); stall %.2f ms of %.1f ms\n", what, plan->n, run.device_bytes / 1e6,
               run.persistent_bytes / 1e6, run.host_bytes / 1e6, sim.peak / 1e6, run.stall_seconds * 1e3,
               run.seconds * 1e3);
        mp_swap_run_free(&run);
    }
    mp_swap_sim_free(&sim);
}

/* Every candidate as one plan: the most swaps a plan can have. */
static int all_candidates(const mp_swap_iter_t *it, mp_swap_plan_t *p) {
    memset(p, 0, sizeof *p);
    size_t n;
    if (!MP_CHECK_OK(mp_swap_candidates(it, 1, &p->item, &n))) return 0;
    p->n = n;
    snprintf(p->score, sizeof p->score, "user");
    return n > 0;
}

static void wrong_schedule(const mp_graph_t *train, const mp_swap_iter_t *it, const mp_swap_link_t *link,
                           const mp_exec_result_t *plain) {
    mp_swap_plan_t p;
    mp_swap_sim_t sim;
    if (!all_candidates(it, &p)) return;
    if (MP_CHECK_OK(mp_swap_simulate(it, link, &p, 0, &sim))) {
        mp_swap_run_opts_t o;
        mp_swap_run_opts_default(&o);
        o.seed = 7;
        o.copy_delay_ns = 20000000;   /* 20 ms a copy: steps surely read too early */
        o.skip_in_waits = 1;
        mp_swap_run_t run;
        if (MP_CHECK_OK(mp_swap_run(train, it, &p, &sim, &o, &run))) {
            MP_CHECK(!same_outputs(plain, &run.result));
            mp_swap_run_free(&run);
        }
        o.skip_in_waits = 0;          /* the same slow copies, waited for: right again */
        o.copy_delay_ns = 1000000;
        if (MP_CHECK_OK(mp_swap_run(train, it, &p, &sim, &o, &run))) {
            MP_CHECK(same_outputs(plain, &run.result));
            MP_CHECK(run.stall_seconds > 0);
            mp_swap_run_free(&run);
        }
        mp_swap_sim_free(&sim);
    }
    mp_swap_plan_free(&p);
}

/* name: a corpus model, or a path of tests/ (with a '/'). */
static void check_model(const char *name, int wrong) {
    char path[256];
    if (strchr(name, '/')) snprintf(path, sizeof path, "%s", name);
    else snprintf(path, sizeof path, "../bench/corpus/inference/%s.graph.json.gz", name);
    mp_graph_t *fwd = NULL, *train = NULL;
    if (!MP_CHECK_OK(mp_graph_load(path, &fwd))) return;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    mp_exec_result_t plain;
    mp_swap_iter_t it;
    mp_swap_device_t dev;
    mp_swap_link_t link;
    MP_CHECK_OK(mp_swap_device_preset("gtx1080ti", &dev));
    MP_CHECK_OK(mp_swap_link_preset("pcie3", &link));
    if (!MP_CHECK_OK(mp_graph_backward(fwd, &bo, &train, NULL))) goto out;
    mp_exec_opts_t eo = {.seed = 7, .poison = 1};
    if (!MP_CHECK_OK(mp_exec_run(train, &eo, &plain))) goto out;
    if (MP_CHECK_OK(mp_swap_iter_from_graph(train, &dev, &it))) {
        printf("  %s:\n", name);
        uint64_t peak, load_min;
        MP_CHECK_OK(mp_swap_load(&it, NULL, &peak, NULL));
        MP_CHECK_OK(mp_swap_load_min(&it, 1u << 12, &load_min));
        mp_swap_select_opts_t so;
        mp_swap_select_opts_default(&so);
        so.min_size = 1u << 12;
        mp_swap_plan_t p;
        if (MP_CHECK_OK(mp_swap_select(&it, &link, &so, &p, NULL))) {
            run_plan("no-overhead bo", train, &it, &link, &p, 0, &plain);
            mp_swap_plan_free(&p);
        }
        so.mode = MP_SWAP_LIMIT, so.score = MP_SWAP_SWDOA;
        for (int k = 1; k <= 3; k++) {
            so.limit = peak - (peak - load_min) * (uint64_t)k / 4;
            char what[48];
            snprintf(what, sizeof what, "limit %d/4 swdoa", k);
            if (MP_CHECK_OK(mp_swap_select(&it, &link, &so, &p, NULL))) {
                run_plan(what, train, &it, &link, &p, so.limit, &plain);
                mp_swap_plan_free(&p);
            }
        }
        if (all_candidates(&it, &p)) {
            size_t wraps = 0;
            for (size_t i = 0; i < p.n; i++) wraps += p.item[i].after >= p.item[i].before;
            MP_CHECK(wraps > 0);   /* parameters out across the iteration's end */
            run_plan("every candidate", train, &it, &link, &p, 0, &plain);
        }
        mp_swap_plan_free(&p);
        if (wrong) wrong_schedule(train, &it, &link, &plain);
        mp_swap_iter_free(&it);
    }
    mp_exec_result_free(&plain);
out:
    mp_graph_free(train);
    mp_graph_free(fwd);
}

static void test_errors(void) {
    mp_graph_t *a = NULL, *ta = NULL;
    mp_swap_run_t run;
    MP_CHECK_EQ_U64(mp_swap_run(NULL, NULL, NULL, NULL, NULL, &run), MP_EINVAL);
    if (!MP_CHECK_OK(mp_graph_load("graph/cnn_small.json", &a))) return;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    mp_swap_device_t dev;
    mp_swap_link_t link;
    mp_swap_iter_t it;
    mp_swap_device_preset("h100", &dev);
    mp_swap_link_preset("pcie4", &link);
    if (MP_CHECK_OK(mp_graph_backward(a, &bo, &ta, NULL)) && MP_CHECK_OK(mp_swap_iter_from_graph(ta, &dev, &it))) {
        mp_swap_plan_t p = {0};
        mp_swap_sim_t sim;
        if (MP_CHECK_OK(mp_swap_simulate(&it, &link, &p, 0, &sim))) {
            /* the forward graph is not the iteration's graph */
            MP_CHECK_EQ_U64(mp_swap_run(a, &it, &p, &sim, NULL, &run), MP_EINVAL);
            MP_CHECK(strstr(mp_last_error(), "exec swap:") != NULL);
            /* no swaps at all: the step as the executor runs it */
            if (MP_CHECK_OK(mp_swap_run(ta, &it, &p, &sim, NULL, &run))) {
                MP_CHECK(run.swaps == 0 && run.host_bytes == 0 && run.device_bytes > 0);
                mp_swap_run_free(&run);
            }
            mp_swap_sim_free(&sim);
        }
        mp_swap_iter_free(&it);
    }
    mp_graph_free(ta);
    mp_graph_free(a);
}

/* Op times measured on the executor: the step takes time and its ops
 * differ (a convolution against a view); a foreign iteration refused. */
static void test_measure(void) {
    mp_graph_t *fwd = NULL, *train = NULL;
    if (!MP_CHECK_OK(mp_graph_load("graph/cnn_small.json", &fwd))) return;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    mp_swap_device_t dev;
    mp_swap_iter_t it, small;
    mp_swap_device_preset("h100", &dev);
    if (MP_CHECK_OK(mp_graph_backward(fwd, &bo, &train, NULL)) && MP_CHECK_OK(mp_swap_iter_from_graph(train, &dev, &it))) {
        MP_CHECK_OK(mp_swap_iter_measure(train, 3, &it));
        uint64_t lo = UINT64_MAX, hi = 0, total = 0;
        for (size_t j = 0; j < it.n_ops; j++) {
            total += it.op[j].ns;
            if (it.op[j].ns < lo) lo = it.op[j].ns;
            if (it.op[j].ns > hi) hi = it.op[j].ns;
        }
        MP_CHECK(total > 0 && hi > lo);
        if (MP_CHECK_OK(mp_swap_iter_from_graph(fwd, &dev, &small))) {
            MP_CHECK_EQ_U64(mp_swap_iter_measure(train, 1, &small), MP_EINVAL);
            mp_swap_iter_free(&small);
        }
        mp_swap_iter_free(&it);
    }
    mp_graph_free(train);
    mp_graph_free(fwd);
}

int main(void) {
    test_errors();
    test_measure();
    check_model("graph/cnn_small.json", 1);   /* a 4-conv CNN, batch 8, 32x32 */
#ifndef __SANITIZE_ADDRESS__   /* seconds here, minutes under ASan */
    check_model("squeezenet1_1", 0);
    if (getenv("MP_TEST_SLOW")) check_model("resnet18", 0);
#endif
    return mp_test_finish("swap_run");
}
