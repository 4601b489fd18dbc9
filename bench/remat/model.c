/* model.c -- one model measured: the stages of chen2016 Fig. 5a (no
 * optimisation, in-place, sharing) and every policy through
 * mp_remat_evaluate, plus the points of the budget policy's grid. */
#include "bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const POLICIES[] = {"none", "cheap", "budget", "sqrt", "logn", "logn=2", "revolve", "optimal"};
_Static_assert(sizeof POLICIES / sizeof *POLICIES == N_POLICIES, "N_POLICIES in bench.h");

/* ---- one model: the stages and every policy ------------------------------------------ */



void r_model(row *r, const model_id *m) {
    r_begin(r, m->section, m->model);
    if (m->family) r_str(r, "family", m->family);
    if (m->param_name && *m->param_name) {
        r_str(r, "param_name", m->param_name);
        r_num(r, "param", m->param);
    }
}

void r_eval(row *r, const mp_remat_eval_t *e) {
    r_u64(r, "peak", e->peak);
    r_u64(r, "lower_bound", e->lower_bound);
    r_u64(r, "forward_flops", e->forward_flops);
    r_u64(r, "extra_flops", e->extra_flops);
    r_num(r, "extra_pct", e->forward_flops ? 100.0 * (double)e->extra_flops / (double)e->forward_flops : 0.0);
    r_u64(r, "recomputed", e->recomputed);
    r_u64(r, "kept", e->kept);
    r_u64(r, "nodes", e->nodes);
}

/* The three stages of chen2016 Fig. 5a without recomputation: each owning
 * tensor its own storage, in-place only, in-place + sharing (the counter
 * algorithm); storages laid end to end (mp_graph_share's footprint). */
static void share_stages(const model_id *m, const mp_graph_t *train) {
    static const struct { const char *name; int inplace, share; } st[] = {
        {"no-optimisation", 0, 0}, {"inplace", 1, 0}, {"sharing", 1, 1}};
    for (size_t i = 0; i < 3; i++) {
        row r;
        mp_share_opts_t so = {st[i].inplace, st[i].share, MP_PARALLEL_ANY, 0};
        mp_graph_plan_t p;
        double t0 = now();
        mp_status s = mp_graph_share(train, &so, &p);
        double dt = now() - t0;
        r_model(&r, m);
        r_str(&r, "stage", st[i].name);
        if (s) {
            r_error(&r, s);
        } else {
            r_str(&r, "status", "ok");
            r_u64(&r, "peak", p.footprint);
            r_u64(&r, "storages", p.n_storages);
            r_u64(&r, "inplace_ops", p.n_inplace);
            r_num(&r, "seconds", dt);
            mp_graph_plan_free(&p);
        }
        r_end(&r);
    }
}

/* The budget policy's grid (Alg. 3 with Appendix A): B0 = sqrt(x*y) of a
 * B = 0 run, six B on [B0/sqrt2, sqrt2*B0]; each point evaluated. */
static void budget_grid(const model_id *m, const mp_remat_t *r) {
    size_t n = mp_remat_forward_count(r);
    uint32_t *mm = calloc(n ? n : 1, sizeof *mm);
    uint64_t x = 0, y = 0;
    row rw;
    if (!mm) return;
    mp_status s = mp_remat_alg3(r, 0, mm, &x, &y);
    if (s) {
        r_model(&rw, m);
        r_str(&rw, "stage", "budget-grid");
        r_num(&rw, "B", 0);
        r_error(&rw, s);
        r_end(&rw);
        free(mm);
        return;
    }
    double B0 = sqrt((double)x * (double)y);
    for (int i = 0; i < 6; i++) {
        double B = B0 * pow(2.0, -0.5 + i / 5.0);
        mp_remat_plan_t p;
        mp_remat_eval_t e;
        double t0 = now();
        memset(&p, 0, sizeof p);
        s = mp_remat_alg3(r, (uint64_t)B, mm, &x, &y);
        if (!s) s = mp_remat_plan_mirror(r, mm, "budget-grid", &p);
        if (!s) s = mp_remat_evaluate(r, &p, &e);
        double dt = now() - t0;
        r_model(&rw, m);
        r_str(&rw, "stage", "budget-grid");
        r_num(&rw, "B", B);
        r_num(&rw, "B0", B0);
        r_u64(&rw, "x", x);
        r_u64(&rw, "y", y);
        if (s) {
            r_error(&rw, s);
        } else {
            r_str(&rw, "status", "ok");
            r_eval(&rw, &e);
            r_num(&rw, "seconds", dt);
        }
        r_end(&rw);
        mp_remat_plan_free(&p);
    }
    free(mm);
}

/* Every stage and policy of one forward graph.  grid: also the budget grid. */
void run_model(const model_id *m, const mp_graph_t *fwd, int grid) {
    mp_remat_opts_t ro;
    mp_remat_opts_default(&ro);
    if (O.big_strategy && mp_graph_node_count(fwd) > O.big_nodes) ro.strategy = O.big_strategy;
    mp_remat_t *r = NULL;
    row rw;
    double t0 = now();
    mp_status s = mp_remat_new(fwd, &ro, &r);
    double t_new = now() - t0;
    r_model(&rw, m);
    r_str(&rw, "stage", "info");
    r_u64(&rw, "forward_nodes_in", mp_graph_node_count(fwd));
    r_str(&rw, "strategy", ro.strategy);
    if (s) {
        r_error(&rw, s);
        r_end(&rw);
        progress("%s %s: mp_remat_new failed: %s", m->section, m->model, mp_last_error());
        return;
    }
    const mp_graph_t *train = mp_remat_graph(r);
    size_t n_cuts = 0, nf = mp_remat_forward_count(r);
    mp_remat_cuts(r, &n_cuts);
    uint64_t flops = 0, bytes = 0;
    for (size_t i = 0; i < nf; i++) flops += mp_remat_node_flops(r, i), bytes += mp_remat_node_bytes(r, i);
    mp_graph_stats_t gs;
    memset(&gs, 0, sizeof gs);
    mp_graph_stats(train, &gs);
    r_str(&rw, "status", "ok");
    r_u64(&rw, "forward_nodes", nf);
    r_u64(&rw, "train_nodes", mp_graph_node_count(train));
    r_u64(&rw, "train_tensors", mp_graph_tensor_count(train));
    r_u64(&rw, "cuts", n_cuts);
    r_u64(&rw, "forward_flops", flops);
    r_u64(&rw, "forward_bytes", bytes);
    r_u64(&rw, "persistent_bytes", gs.persistent_bytes);
    r_num(&rw, "seconds", t_new);
    r_end(&rw);
    progress("%s %s: %zu forward nodes, %zu training nodes, %zu cuts (mp_remat_new %.2fs, strategy %s)",
             m->section, m->model, nf, mp_graph_node_count(train), n_cuts, t_new, ro.strategy);
    share_stages(m, train);
    for (size_t i = 0; i < N_POLICIES; i++) {
        mp_remat_plan_t p;
        mp_remat_eval_t e;
        memset(&p, 0, sizeof p);
        memset(&e, 0, sizeof e);
        if (!strcmp(POLICIES[i], "optimal") && n_cuts > O.optimal_max_cuts) {
            r_model(&rw, m);
            r_str(&rw, "stage", POLICIES[i]);
            r_str(&rw, "status", "skipped");
            r_str(&rw, "reason", "more cut points than --optimal-max-cuts");
            r_u64(&rw, "optimal_max_cuts", O.optimal_max_cuts);
            r_end(&rw);
            progress("%s %s optimal: skipped (%zu cuts > %zu)", m->section, m->model, n_cuts, O.optimal_max_cuts);
            continue;
        }
        t0 = now();
        s = mp_remat_policy(r, POLICIES[i], &p);
        double t_pol = now() - t0;
        if (!s) s = mp_remat_evaluate(r, &p, &e);
        double t_all = now() - t0;
        r_model(&rw, m);
        r_str(&rw, "stage", POLICIES[i]);
        r_str(&rw, "strategy", ro.strategy);
        if (s) {
            r_error(&rw, s);
            progress("%s %s %s: failed: %s", m->section, m->model, POLICIES[i], mp_last_error());
        } else {
            r_str(&rw, "status", "ok");
            r_str(&rw, "plan", p.policy);
            r_eval(&rw, &e);
            r_num(&rw, "policy_seconds", t_pol);
            r_num(&rw, "seconds", t_all);
            progress("%s %s %-8s peak %10.1f MB (bound %10.1f) +%5.1f%% FLOPs, %zu recomputed, %.2fs",
                     m->section, m->model, POLICIES[i], e.peak / 1e6, e.lower_bound / 1e6,
                     e.forward_flops ? 100.0 * (double)e.extra_flops / (double)e.forward_flops : 0.0,
                     e.recomputed, t_all);
        }
        r_end(&rw);
        mp_remat_plan_free(&p);
    }
    if (grid) budget_grid(m, r);
    mp_remat_free(r);
}

