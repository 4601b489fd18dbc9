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
#include "bench.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
