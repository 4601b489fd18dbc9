/* exec.c -- the "exec" section: reduced-scale ResNets and LSTMs run by the
 * reference executor on every policy's placed plan (arena bytes, bit-identity
 * with the naive run of the plain training graph, time against the FLOP
 * estimate). */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- exec: running the plans ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Least wall time of reps runs of g (plan may be NULL: naive): the run
 * least disturbed by other processes on a shared machine.  Each run
 * allocates (and first touches) its arena, which is part of the time. */
static mp_status time_runs(const mp_graph_t *g, const mp_graph_plan_t *plan, int reps, double *best,
                           uint64_t *arena) {
    double t[16];
    if (reps > 16) reps = 16;
    for (int i = 0; i < reps; i++) {
        mp_exec_opts_t eo;
        memset(&eo, 0, sizeof eo);
        eo.seed = 7;
        eo.plan = plan;
        mp_exec_result_t res;
        mp_status s = mp_exec_run(g, &eo, &res);
        if (s) return s;
        t[i] = res.seconds;
        if (arena) *arena = res.arena_bytes;
        mp_exec_result_free(&res);
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *best = t[0];
    return MP_OK;
}

/* Do the outputs of a (run of graph ga) equal those of b (graph gb), in the
 * order of the graphs' output lists?  Returns the number of outputs that
 * differ (or are missing); *compared gets how many were compared. */
static size_t compare_outputs(const mp_graph_t *ga, const mp_exec_result_t *a, const mp_graph_t *gb,
                              const mp_exec_result_t *b, size_t *compared) {
    size_t na = 0, nb = 0, bad = 0;
    const size_t *oa = mp_graph_outputs(ga, &na), *ob = mp_graph_outputs(gb, &nb);
    *compared = 0;
    if (na != nb) return na > nb ? na - nb : nb - na;
    for (size_t i = 0; i < na; i++) {
        size_t x = oa[i], y = ob[i];
        (*compared)++;
        if (x >= a->n_tensors || y >= b->n_tensors || !a->data[x] || !b->data[y] || a->bytes[x] != b->bytes[y] ||
            memcmp(a->data[x], b->data[y], a->bytes[x]))
            bad++;
    }
    return bad;
}

static void exec_model(const model_id *m, const mp_graph_t *fwd) {
    mp_remat_t *r = NULL;
    row rw;
    mp_status s = mp_remat_new(fwd, NULL, &r);
    double t_fwd = 0, t_naive = 0, t_none = 0;
    mp_exec_result_t ref;
    memset(&ref, 0, sizeof ref);
    if (!s) s = time_runs(fwd, NULL, O.reps, &t_fwd, NULL);
    if (!s) s = time_runs(mp_remat_graph(r), NULL, O.reps, &t_naive, NULL);
    if (!s) {
        mp_exec_opts_t eo;
        memset(&eo, 0, sizeof eo);
        eo.seed = 7;
        s = mp_exec_run(mp_remat_graph(r), &eo, &ref);
    }
    r_model(&rw, m);
    r_str(&rw, "stage", "info");
    if (s) {
        r_error(&rw, s);
        r_end(&rw);
        progress("exec %s: failed: %s", m->model, mp_last_error());
        mp_remat_free(r);
        return;
    }
    r_str(&rw, "status", "ok");
    r_u64(&rw, "forward_nodes", mp_remat_forward_count(r));
    r_u64(&rw, "train_nodes", mp_graph_node_count(mp_remat_graph(r)));
    r_num(&rw, "forward_seconds", t_fwd);
    r_num(&rw, "naive_train_seconds", t_naive);
    r_end(&rw);
    for (size_t i = 0; i < N_POLICIES; i++) {
        mp_remat_plan_t p;
        mp_remat_eval_t e;
        mp_graph_t *g = NULL;
        mp_graph_plan_t gp;
        mp_exec_result_t res;
        memset(&p, 0, sizeof p);
        memset(&gp, 0, sizeof gp);
        memset(&res, 0, sizeof res);
        double t_run = 0;
        uint64_t arena = 0;
        size_t compared = 0, differ = 0;
        s = mp_remat_policy(r, POLICIES[i], &p);
        if (!s) s = mp_remat_evaluate_full(r, &p, &e, &g, &gp);
        if (!s) {   /* one poisoned run for correctness */
            mp_exec_opts_t eo;
            memset(&eo, 0, sizeof eo);
            eo.seed = 7;
            eo.plan = &gp;
            eo.poison = 1;
            s = mp_exec_run(g, &eo, &res);
        }
        if (!s) {
            differ = compare_outputs(g, &res, mp_remat_graph(r), &ref, &compared);
            arena = res.arena_bytes;
            s = time_runs(g, &gp, O.reps, &t_run, NULL);
        }
        if (!s && i == 0) t_none = t_run;
        r_model(&rw, m);
        r_str(&rw, "stage", POLICIES[i]);
        if (s) {
            r_error(&rw, s);
            progress("exec %s %s: failed: %s", m->model, POLICIES[i], mp_last_error());
        } else {
            r_str(&rw, "status", "ok");
            r_str(&rw, "plan", p.policy);
            r_eval(&rw, &e);
            r_u64(&rw, "arena_bytes", arena);
            r_u64(&rw, "arena_matches", arena == e.peak);
            r_u64(&rw, "outputs_compared", compared);
            r_u64(&rw, "outputs_differ", differ);
            r_num(&rw, "seconds_run", t_run);
            r_num(&rw, "seconds_none", t_none);
            r_num(&rw, "seconds_forward", t_fwd);
            /* measured extra time in units of one forward pass, beside the
             * FLOP estimate (extra_flops / forward_flops) */
            r_num(&rw, "measured_extra_pct", t_fwd > 0 && t_none > 0 ? 100.0 * (t_run - t_none) / t_fwd : NAN);
            if (differ || arena != e.peak) FAILURES++;
            progress("exec %s %-8s arena %9llu (planned %9llu) outputs %zu/%zu identical, %.3fs (none %.3fs, "
                     "fwd %.3fs): measured +%.1f%% vs estimated +%.1f%%",
                     m->model, POLICIES[i], (unsigned long long)arena, (unsigned long long)e.peak,
                     compared - differ, compared, t_run, t_none, t_fwd,
                     t_fwd > 0 ? 100.0 * (t_run - t_none) / t_fwd : 0.0,
                     e.forward_flops ? 100.0 * (double)e.extra_flops / (double)e.forward_flops : 0.0);
        }
        r_end(&rw);
        mp_exec_result_free(&res);
        mp_graph_free(g);
        mp_graph_plan_free(&gp);
        mp_remat_plan_free(&p);
    }
    mp_exec_result_free(&ref);
    mp_remat_free(r);
}

/* Reduced-scale models the reference executor runs in seconds. */
#define EXEC_RESNET_BATCH 8
#define EXEC_RESNET_HW 64
#define EXEC_RESNET_WIDTH 16
#define EXEC_LSTM_BATCH 16
#define EXEC_LSTM_HIDDEN 128

void section_exec(void) {
    static const size_t rd_full[] = {14, 26, 50, 98}, rd_quick[] = {14};
    static const size_t lt_full[] = {8, 16, 32}, lt_quick[] = {8};
    size_t nr = O.quick ? 1 : 4, nl = O.quick ? 1 : 3;
    for (size_t i = 0; i < nr; i++) {
        size_t d = (O.quick ? rd_quick : rd_full)[i];
        bm_resnet_cfg c = {EXEC_RESNET_BATCH, 3, EXEC_RESNET_HW, EXEC_RESNET_WIDTH, {0}, 10};
        bm_resnet_units(d, c.units);
        char name[64];
        snprintf(name, sizeof name, "resnet-small-%zu", bm_resnet_depth(&c));
        mp_graph_t *g = NULL;
        model_id m = {"exec", name, "resnet-small", (double)bm_resnet_depth(&c), "depth"};
        if (bm_resnet(&c, name, &g)) {
            row rw;
            r_model(&rw, &m);
            r_error(&rw, MP_EINVAL);
            r_end(&rw);
            continue;
        }
        progress("exec: %s (batch %llu, 3x%llux%llu, width %llu, units %zu/%zu/%zu/%zu)", name,
                 (unsigned long long)c.batch, (unsigned long long)c.hw, (unsigned long long)c.hw,
                 (unsigned long long)c.base, c.units[0], c.units[1], c.units[2], c.units[3]);
        exec_model(&m, g);
        mp_graph_free(g);
    }
    for (int frozen = 1; frozen >= 0; frozen--) {
        /* all weights trainable: the memory is the per-step weight-gradient
         * contributions (see models.h), so two sizes check the gradients */
        for (size_t i = 0; i < (frozen ? nl : nl < 2 ? nl : 2); i++) {
            size_t t = (O.quick ? lt_quick : lt_full)[i];
            bm_lstm_cfg c = {EXEC_LSTM_BATCH, 16, EXEC_LSTM_HIDDEN, EXEC_LSTM_HIDDEN, 64, 4, t, frozen};
            char name[64];
            const char *fam = frozen ? "lstm-small-fm" : "lstm-small";
            snprintf(name, sizeof name, "%s-%zu", fam, t);
            mp_graph_t *g = NULL;
            model_id m = {"exec", name, fam, (double)t, "T"};
            if (bm_lstm(&c, name, &g)) {
                row rw;
                r_model(&rw, &m);
                r_error(&rw, MP_EINVAL);
                r_end(&rw);
                continue;
            }
            progress("exec: %s (batch %llu, 4 layers, hidden %llu, 64 classes)", name,
                     (unsigned long long)c.batch, (unsigned long long)c.hidden);
            exec_model(&m, g);
            mp_graph_free(g);
        }
    }
}

