/* bench_remat.c -- recomputation (src/remat/) measured on chen2016's
 * experiments (sec. 5, Figs. 5-7) and on the corpus; bench/remat/run turns
 * its output into docs/benchmarks-remat.md (bench/remat/report.py).
 *
 *   bench_remat [--quick] [--out FILE] [--only SECTIONS] [--corpus DIR]
 *               [--big-strategy S] [--big-nodes N] [--resnet-max D]
 *               [--lstm-max T] [--reps R]
 *
 * Writes JSON lines (one object per measurement, "section" says which
 * table it belongs to) to FILE (default stdout) and progress to stderr.
 * Sections (--only takes a comma-separated subset):
 *
 *   resnet   chen2016 Fig. 5: ResNet, batch 32, 3x224x224, depth 128..1024
 *   lstm     chen2016 Fig. 6: 4-layer LSTM, hidden 1024, batch 64, T 64..2048
 *            ("lstm": memplan's training graph; "lstm-fm": only the embedding
 *            trainable, the paper's feature-map accounting, see models.h)
 *   exec     reduced-scale ResNet and LSTM run by the reference executor on
 *            every policy's placed plan: arena bytes, bit-identity with the
 *            naive run of the training graph, time against the FLOP estimate
 *   corpus   every forward graph of bench/corpus/inference: every policy and
 *            the points of the budget policy's grid
 *   chain    uniform chains: policies' recompute counts and Revolve's t(n, s)
 *
 * For every model: the stages of chen2016 Fig. 5a -- no optimisation (each
 * tensor its own memory), in-place, sharing (the counter algorithm, laid end
 * to end: mp_graph_share) -- then every policy through mp_remat_evaluate
 * (transformed graph, in-place + sharing, placed by the strategy, checked).
 * Peaks count feature maps only (parameters and their gradients excluded).
 * Exit status: 0 when every measurement succeeded, 1 when some failed (each
 * failure is a row with "status": "error"), 2 for bad usage. */
#include "memplan.h"
#include "models.h"

#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- options, output --------------------------------------------------------------- */

typedef struct opts {
    int quick;
    const char *out;
    const char *only;
    const char *corpus;
    const char *big_strategy;   /* placement for graphs with more forward nodes than big_nodes */
    size_t big_nodes;
    size_t resnet_max, lstm_max, lstm_min, lstm_trained_max;
    size_t optimal_max_cuts;    /* skip the chain DP on longer chains (its time) */
    int reps;
} opts;

static opts O;
static FILE *OUT;
static int FAILURES;
static double T_START;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_remat [%6.1fs] ", now() - T_START);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* One JSON object per line, built field by field. */
typedef struct row {
    char buf[8192];
    size_t len;
} row;

static void r_raw(row *r, const char *fmt, ...) {
    if (r->len >= sizeof r->buf) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->buf + r->len, sizeof r->buf - r->len, fmt, ap);
    va_end(ap);
    if (n > 0) r->len += (size_t)n;
    if (r->len > sizeof r->buf) r->len = sizeof r->buf;
}

static void r_key(row *r, const char *k) { r_raw(r, "%s\"%s\":", r->len > 1 ? "," : "", k); }

static void r_str(row *r, const char *k, const char *v) {
    r_key(r, k);
    r_raw(r, "\"");
    for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++) {
        if (*p == '"' || *p == '\\') r_raw(r, "\\%c", *p);
        else if (*p < 0x20) r_raw(r, "\\u%04x", *p);
        else r_raw(r, "%c", *p);
    }
    r_raw(r, "\"");
}

static void r_u64(row *r, const char *k, uint64_t v) {
    r_key(r, k);
    r_raw(r, "%llu", (unsigned long long)v);
}

static void r_num(row *r, const char *k, double v) {
    r_key(r, k);
    if (isfinite(v)) r_raw(r, "%.6g", v);
    else r_raw(r, "null");
}

static void r_begin(row *r, const char *section, const char *model) {
    r->len = 0;
    r_raw(r, "{");
    r_str(r, "section", section);
    if (model) r_str(r, "model", model);
}

static void r_end(row *r) {
    r_raw(r, "}\n");
    fwrite(r->buf, 1, r->len, OUT);
    fflush(OUT);
}

static void r_error(row *r, mp_status s) {
    r_str(r, "status", "error");
    r_u64(r, "code", (uint64_t)s);
    r_str(r, "error", mp_last_error());
    FAILURES++;
}

static int wanted(const char *section) {
    if (!O.only) return 1;
    size_t n = strlen(section);
    for (const char *p = O.only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, section, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

/* ---- one model: the stages and every policy ------------------------------------------ */

static const char *const POLICIES[] = {"none", "cheap", "budget", "sqrt", "logn", "logn=2", "revolve", "optimal"};
#define N_POLICIES (sizeof POLICIES / sizeof *POLICIES)

/* What a model row names besides the measurement. */
typedef struct model_id {
    const char *section, *model, *family;
    double param;            /* depth or T, the x of the plots */
    const char *param_name;  /* "depth", "T", "n", "" */
} model_id;

static void r_model(row *r, const model_id *m) {
    r_begin(r, m->section, m->model);
    if (m->family) r_str(r, "family", m->family);
    if (m->param_name && *m->param_name) {
        r_str(r, "param_name", m->param_name);
        r_num(r, "param", m->param);
    }
}

static void r_eval(row *r, const mp_remat_eval_t *e) {
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
static void run_model(const model_id *m, const mp_graph_t *fwd, int grid) {
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

/* ---- sections -------------------------------------------------------------------------- */

static void section_resnet(void) {
    static const size_t full[] = {128, 200, 256, 512, 1024}, quick[] = {128};
    const size_t *d = O.quick ? quick : full;
    size_t n = O.quick ? 1 : sizeof full / sizeof *full;
    for (size_t i = 0; i < n; i++) {
        if (d[i] > O.resnet_max) continue;
        bm_resnet_cfg c = {32, 3, 224, 64, {0}, 1000};
        bm_resnet_units(d[i], c.units);
        char name[64];
        snprintf(name, sizeof name, "resnet-%zu", bm_resnet_depth(&c));
        mp_graph_t *g = NULL;
        mp_status s = bm_resnet(&c, name, &g);
        model_id m = {"resnet", name, "resnet", (double)bm_resnet_depth(&c), "depth"};
        row rw;
        r_model(&rw, &m);
        r_str(&rw, "stage", "config");
        r_num(&rw, "nominal", (double)d[i]);
        r_raw(&rw, ",\"units\":[%zu,%zu,%zu,%zu]", c.units[0], c.units[1], c.units[2], c.units[3]);
        r_u64(&rw, "batch", c.batch);
        r_u64(&rw, "hw", c.hw);
        if (s) r_error(&rw, s);
        r_end(&rw);
        if (s) continue;
        run_model(&m, g, !O.quick);
        mp_graph_free(g);
    }
}

static void section_lstm(void) {
    static const size_t full[] = {64, 128, 256, 512, 1024, 2048}, quick[] = {64};
    const size_t *t = O.quick ? quick : full;
    size_t n = O.quick ? 1 : sizeof full / sizeof *full;
    for (int frozen = 1; frozen >= 0; frozen--) {
        if (O.quick && !frozen) continue;
        for (size_t i = 0; i < n; i++) {
            if (t[i] > O.lstm_max || t[i] < O.lstm_min || (!frozen && t[i] > O.lstm_trained_max)) continue;
            bm_lstm_cfg c = {64, 50, 1024, 1024, 5000, 4, t[i], frozen};
            char name[64];
            const char *fam = frozen ? "lstm-fm" : "lstm";
            snprintf(name, sizeof name, "%s-%zu", fam, t[i]);
            progress("lstm: building %s", name);
            mp_graph_t *g = NULL;
            mp_status s = bm_lstm(&c, name, &g);
            model_id m = {"lstm", name, fam, (double)t[i], "T"};
            row rw;
            r_model(&rw, &m);
            r_str(&rw, "stage", "config");
            r_u64(&rw, "batch", c.batch);
            r_u64(&rw, "layers", c.layers);
            r_u64(&rw, "hidden", c.hidden);
            r_u64(&rw, "frozen", (uint64_t)frozen);
            if (s) r_error(&rw, s);
            r_end(&rw);
            if (s) continue;
            run_model(&m, g, 0);
            mp_graph_free(g);
        }
    }
}

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

static void section_exec(void) {
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

/* ---- corpus ------------------------------------------------------------------------------ */

/* The target for the chain DP: at the peak Alg. 3 + grid (the
 * "budget" policy) measures, the DP's plan under the same budget
 * (mp_remat_fit restricted to "optimal") recomputes no more. */
static void dp_vs_alg3(const model_id *m, const mp_graph_t *fwd) {
    mp_remat_opts_t ro;
    mp_remat_opts_default(&ro);
    mp_remat_t *r = NULL;
    mp_remat_plan_t p;
    mp_remat_eval_t e;
    mp_remat_fit_t f;
    row rw;
    r_model(&rw, m);
    r_str(&rw, "stage", "dp_vs_alg3");
    double t0 = now();
    mp_status s = mp_remat_new(fwd, &ro, &r);
    if (!s) s = mp_remat_policy(r, "budget", &p);
    if (!s) {
        s = mp_remat_evaluate(r, &p, &e);
        mp_remat_plan_free(&p);
    }
    if (s) {
        r_error(&rw, s);
        r_end(&rw);
        mp_remat_free(r);
        return;
    }
    r_u64(&rw, "alg3_peak", e.peak);
    r_u64(&rw, "alg3_extra", e.extra_flops);
    r_u64(&rw, "forward_flops", e.forward_flops);
    s = mp_remat_fit(r, "optimal", e.peak, NULL, NULL, &p, &f);
    r_str(&rw, "status", "ok");
    r_u64(&rw, "dp_feasible", (uint64_t)(s == MP_OK));
    if (s == MP_OK) {
        r_u64(&rw, "dp_peak", f.eval.peak);
        r_u64(&rw, "dp_extra", f.eval.extra_flops);
        r_str(&rw, "dp_plan", p.policy);
        mp_remat_plan_free(&p);
    } else {
        r_u64(&rw, "dp_min_peak", f.min_peak);
    }
    r_num(&rw, "seconds", now() - t0);
    r_end(&rw);
    progress("%s %s: Alg. 3 + grid %.1f MB +%.1f%%, DP at that budget %s", m->section, m->model, e.peak / 1e6,
             100.0 * (double)e.extra_flops / (double)e.forward_flops, s == MP_OK ? "fits" : "does not fit");
    mp_remat_free(r);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void section_corpus(void) {
    static const char *const quick[] = {"resnet18", "mobilenet_v2"};
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/inference", O.corpus);
    DIR *d = opendir(dir);
    if (!d) {
        row rw;
        r_begin(&rw, "corpus", NULL);
        r_str(&rw, "status", "error");
        r_str(&rw, "error", "cannot open the corpus directory");
        r_str(&rw, "path", dir);
        r_end(&rw);
        FAILURES++;
        return;
    }
    char *names[256];
    size_t n = 0;
    const char *suffix = ".graph.json.gz";
    for (struct dirent *e; (e = readdir(d)) && n < 256;) {
        size_t len = strlen(e->d_name), sl = strlen(suffix);
        if (len <= sl || strcmp(e->d_name + len - sl, suffix)) continue;
        names[n] = strndup(e->d_name, len - sl);
        if (names[n]) n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        int take = !O.quick;
        for (size_t k = 0; k < 2 && !take; k++) take = !strcmp(names[i], quick[k]);
        if (take) {
            char path[8192];
            snprintf(path, sizeof path, "%s/%s%s", dir, names[i], suffix);
            mp_graph_t *g = NULL;
            model_id m = {"corpus", names[i], "corpus", 0, ""};
            mp_status s = mp_graph_load(path, &g);
            if (s) {
                row rw;
                r_model(&rw, &m);
                r_str(&rw, "stage", "info");
                r_error(&rw, s);
                r_end(&rw);
            } else {
                run_model(&m, g, 1);
                dp_vs_alg3(&m, g);
            }
            mp_graph_free(g);
        }
        free(names[i]);
    }
}

/* ---- chains -------------------------------------------------------------------------------- */

static void section_chain(void) {
    size_t max = O.quick ? 64 : 1024;
    for (size_t n = 4; n <= max; n *= 2) {
        char name[32];
        snprintf(name, sizeof name, "chain-%zu", n);
        model_id m = {"chain", name, "chain", (double)n, "n"};
        mp_graph_t *g = NULL;
        mp_remat_t *r = NULL;
        row rw;
        mp_status s = bm_chain(n, 16, 64, &g);
        if (!s) s = mp_remat_new(g, NULL, &r);
        if (s) {
            r_model(&rw, &m);
            r_str(&rw, "stage", "info");
            r_error(&rw, s);
            r_end(&rw);
            mp_graph_free(g);
            continue;
        }
        size_t n_cuts = 0;
        mp_remat_cuts(r, &n_cuts);
        mp_chain_t ch;
        memset(&ch, 0, sizeof ch);
        s = mp_remat_chain(r, &ch);
        r_model(&rw, &m);
        r_str(&rw, "stage", "info");
        r_u64(&rw, "forward_nodes", mp_remat_forward_count(r));
        r_u64(&rw, "cuts", n_cuts);
        if (s) r_error(&rw, s);
        else r_str(&rw, "status", "ok"), r_u64(&rw, "stages", ch.n);
        r_end(&rw);
        size_t stages = s ? n : ch.n;
        if (!s) mp_chain_free(&ch);
        /* Revolve's optimum for slot counts 1, 2, 3, log2 n, sqrt n */
        size_t lg = 0;
        while (((size_t)1 << (lg + 1)) <= stages) lg++;
        size_t sq = (size_t)ceil(sqrt((double)stages));
        size_t slots[] = {1, 2, 3, lg, sq};
        for (size_t k = 0; k < 5; k++) {
            if (k && slots[k] == slots[k - 1]) continue;
            uint64_t t = mp_revolve_cost(stages, slots[k]);
            r_model(&rw, &m);
            r_str(&rw, "stage", "revolve-cost");
            r_str(&rw, "status", "ok");
            r_u64(&rw, "stages", stages);
            r_u64(&rw, "slots", slots[k]);
            if (t == UINT64_MAX) r_raw(&rw, ",\"cost\":null");
            else r_u64(&rw, "cost", t);
            r_end(&rw);
        }
        for (size_t i = 0; i < N_POLICIES; i++) {
            if (!strcmp(POLICIES[i], "cheap") || !strcmp(POLICIES[i], "budget")) continue;
            mp_remat_plan_t p;
            mp_remat_eval_t e;
            memset(&p, 0, sizeof p);
            double t0 = now();
            s = mp_remat_policy(r, POLICIES[i], &p);
            if (!s) s = mp_remat_evaluate(r, &p, &e);
            double dt = now() - t0;
            r_model(&rw, &m);
            r_str(&rw, "stage", POLICIES[i]);
            if (s) {
                r_error(&rw, s);
            } else {
                r_str(&rw, "status", "ok");
                r_str(&rw, "plan", p.policy);
                r_eval(&rw, &e);
                r_u64(&rw, "stages", stages);
                /* Revolve's optimum with as many slots as this plan keeps values */
                uint64_t t = mp_revolve_cost(stages, e.kept);
                if (t == UINT64_MAX) r_raw(&rw, ",\"revolve_at_kept\":null");
                else r_u64(&rw, "revolve_at_kept", t);
                r_num(&rw, "seconds", dt);
            }
            r_end(&rw);
            mp_remat_plan_free(&p);
        }
        progress("chain n=%zu: %zu stages", n, stages);
        mp_remat_free(r);
        mp_graph_free(g);
    }
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(void) {
    fprintf(stderr,
            "usage: bench_remat [--quick] [--out FILE] [--only resnet,lstm,exec,corpus,chain]\n"
            "                   [--corpus DIR] [--big-strategy S] [--big-nodes N]\n"
            "                   [--resnet-max D] [--lstm-min T] [--lstm-max T]\n"
            "                   [--lstm-trained-max T] [--optimal-max-cuts N] [--reps R]\n"
            "  --quick          a subset (ResNet-128, LSTM T=64, the smallest executed\n"
            "                   models, two corpus graphs, chains up to 64)\n"
            "  --out FILE       JSON lines (default stdout)\n"
            "  --corpus DIR     bench/corpus (default: from this file's path)\n"
            "  --big-strategy S placement strategy for forward graphs of more than\n"
            "                   --big-nodes nodes (default: auto everywhere)\n"
            "  --lstm-trained-max T  largest T of the 'lstm' family (every weight\n"
            "                   trainable; default 256)\n"
"  --optimal-max-cuts N  skip the 'optimal' policy (the chain DP) on graphs\n"
            "                   with more cut points (default 400)\n"
            "  --reps R         timed runs per executed plan, the least (default 3)\n");
}

static const char *default_corpus(void) {
    static char path[4096];
    const char *f = __FILE__, *slash = strrchr(f, '/');
    if (!slash || f[0] != '/') return "bench/corpus";
    snprintf(path, sizeof path, "%.*s/../corpus", (int)(slash - f), f);
    return path;
}

int main(int argc, char **argv) {
    O = (opts){0, NULL, NULL, default_corpus(), NULL, (size_t)-1, (size_t)-1, (size_t)-1, 0, 256, 400, 3};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) O.quick = 1;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(), 0;
        else if (!v) return usage(), 2;
        else if (!strcmp(a, "--out")) O.out = v, i++;
        else if (!strcmp(a, "--only")) O.only = v, i++;
        else if (!strcmp(a, "--corpus")) O.corpus = v, i++;
        else if (!strcmp(a, "--big-strategy")) O.big_strategy = v, i++;
        else if (!strcmp(a, "--big-nodes")) O.big_nodes = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--resnet-max")) O.resnet_max = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--lstm-max")) O.lstm_max = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--lstm-min")) O.lstm_min = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--optimal-max-cuts")) O.optimal_max_cuts = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--lstm-trained-max")) O.lstm_trained_max = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--reps")) O.reps = atoi(v), i++;
        else return usage(), 2;
    }
    if (O.reps < 1 || O.reps > 16) return usage(), 2;
    OUT = stdout;
    if (O.out && !(OUT = fopen(O.out, "w"))) {
        fprintf(stderr, "bench_remat: cannot write %s\n", O.out);
        return 2;
    }
    T_START = now();
    row rw;
    r_begin(&rw, "run", NULL);
    r_u64(&rw, "quick", (uint64_t)O.quick);
    r_str(&rw, "big_strategy", O.big_strategy ? O.big_strategy : "");
    r_u64(&rw, "big_nodes", O.big_nodes == (size_t)-1 ? 0 : O.big_nodes);
    r_end(&rw);
    static const struct { const char *name; void (*fn)(void); } sections[] = {
        {"chain", section_chain}, {"exec", section_exec}, {"corpus", section_corpus},
        {"resnet", section_resnet}, {"lstm", section_lstm}};
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
        if (!wanted(sections[i].name)) continue;
        double t0 = now();
        progress("section %s", sections[i].name);
        sections[i].fn();
        r_begin(&rw, "timing", NULL);
        r_str(&rw, "part", sections[i].name);
        r_num(&rw, "seconds", now() - t0);
        r_end(&rw);
    }
    r_begin(&rw, "timing", NULL);
    r_str(&rw, "part", "total");
    r_num(&rw, "seconds", now() - T_START);
    r_u64(&rw, "failures", (uint64_t)FAILURES);
    r_end(&rw);
    progress("done: %d failures", FAILURES);
    if (OUT != stdout) fclose(OUT);
    return FAILURES ? 1 : 0;
}
