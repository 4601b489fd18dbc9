/* cmd_remat.c -- `memplan remat GRAPH`: train in less memory by recomputing
 * (src/remat/, include/memplan_remat.h).  Builds the training graph of a
 * forward graph, makes the plan of one or every recomputation policy,
 * evaluates each (transform, share, place, check) and prints its peak next
 * to the extra forward compute it costs; with --budget, the plan of least
 * extra compute that fits (mp_remat_fit).  --run executes the planned
 * training step and compares it bit for bit with the plain one.  Nothing
 * is printed on stdout before everything has been computed, so an error
 * leaves no partial output. */
#include "remat_cli.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char help[] =
    "usage: memplan remat [options] GRAPH.json[.gz]\n"
    "\n"
    "Reads a memplan-graph/1 forward graph, adds its backward pass (and a softmax\n"
    "cross-entropy loss when it has none) and trades memory for compute: each\n"
    "policy drops forward values and recomputes them before the gradients that\n"
    "need them (chen2016).  Per policy it prints the planned peak (the transformed\n"
    "graph shared, placed and proven by the checker), its lower bound, the ratio to\n"
    "no recomputation, the extra forward FLOPs, the recompute nodes, the values\n"
    "kept from the first forward pass and the planning time.\n"
    "\n"
    "policies (--policy):\n"
    "  none              keep everything: the plain training graph\n"
    "  segments=A,B,...  keep the outputs of forward steps A, B, ... (0-based), drop\n"
    "                    the rest and recompute each segment (chen2016 Alg. 1)\n"
    "  sqrt              about sqrt(n) equal segments over the cut points\n"
    "  cheap             keep conv/linear/matmul results, recompute the cheap ops\n"
    "                    (batch norm, activations, pooling, views; sec. 4.2)\n"
    "  budget            chen2016 Alg. 3 over a grid of budgets; the best peak\n"
    "  logn[=K]          sec. 4.4's recursion, K values kept per level (default 1):\n"
    "                    O(log n) memory for one extra forward pass per level\n"
    "  revolve[=S]       Griewank-Walther's binomial checkpointing over the chain of\n"
    "                    cut points with S slots (default: the fewest slots whose\n"
    "                    recomputation is at most one forward pass)\n"
    "  optimal[=BYTES]   the chain dynamic program (Rotor): least recompute whose\n"
    "                    modelled memory is <= BYTES (default: the least memory that\n"
    "                    costs at most one extra forward pass)\n"
    "  all               every policy above, one row each (default); a policy that\n"
    "                    cannot apply to the graph shows why\n"
    "\n"
    "options:\n"
    "  --policy NAME         one policy, or all (default)\n"
    "  --budget SIZE         the least extra compute whose peak fits SIZE (bytes, or\n"
    "                        with K, M, G, T (powers of 1024, also KiB, MiB, ...) or\n"
    "                        KB, MB, GB, TB (powers of 1000): 3000000, 1.5G, 2GiB),\n"
    "                        among the candidates of --policy (all: every policy's)\n"
    "  --strategy NAME       core planner placing the storages (default auto; see\n"
    "                        'memplan strategies')\n"
    "  --persistent          count parameters and gradients in the peaks\n"
    "  --run                 execute each plan (reference executor, memory poisoned\n"
    "                        before every write) and compare its loss and gradients\n"
    "                        bit for bit with the plain training step\n"
    "  --seed N              seed of the inputs and parameters for --run (default 1)\n"
    "  --svg FILE.svg        draw the placement of the chosen plan (with --budget) or\n"
    "                        of the plan with the smallest peak\n"
    "  --graph-out FILE      write that plan's training graph as memplan-graph/1\n"
    "                        (.gz: compressed)\n"
    "  --json                print one JSON object instead of the text\n"
    "  (FILE '-' is standard output; the report is then not printed)\n"
    "\n"
    "Exit status: 0 done, 1 a plan was rejected by the checker or --run outputs\n"
    "differ, 2 bad usage, a bad graph or policy, a budget nothing fits (the message\n"
    "names the smallest achievable peak) or an op the executor cannot run.\n";

static const char usage_line[] =
    "usage: memplan remat [--policy NAME] [--budget SIZE] [--strategy NAME] [--persistent]\n"
    "                     [--run] [--seed N] [--json] [--svg FILE] [--graph-out FILE] GRAPH\n"
    "'memplan remat --help' describes the options and the policies.\n";

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "memplan remat: %s%s%s\n%s", msg, arg ? " " : "", arg ? arg : "", usage_line);
    return EXIT_INPUT;
}

static int fail(void) {
    fprintf(stderr, "memplan remat: %s\n", mp_last_error());
    return EXIT_INPUT;
}

/* ---- options ------------------------------------------------------------------ */

/* Is name a policy: "all" or a name of mp_remat_policy_name up to its
 * parameter ("segments=LIST", "logn[=K]")? */
static bool known_policy(const char *name) {
    size_t len = strcspn(name, "=");
    if (len == 3 && !strncmp(name, "all", 3)) return name[3] == 0;
    for (size_t i = 0; mp_remat_policy_name(i); i++) {
        const char *p = mp_remat_policy_name(i);
        if (strcspn(p, "=[") == len && !strncmp(p, name, len)) return true;
    }
    return false;
}

/* The policies and "all", for cli_unknown. */
static const char *policy_name(size_t i) {
    size_t n = 0;
    while (mp_remat_policy_name(n)) n++;
    return i < n ? mp_remat_policy_name(i) : i == n ? "all" : NULL;
}

/* "--name VALUE" or "--name=VALUE": 1 and *val when a matches, -1 when the
 * value is missing, 0 when a is another option. */
static int valued(int argc, char **argv, int *i, const char *name, const char **val) {
    size_t len = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, len)) return 0;
    if (a[len] == '=') {
        *val = a + len + 1;
        return 1;
    }
    if (a[len]) return 0;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

static int parse(int argc, char **argv, opts *o) {
    o->seed = 1;
    o->policy = "all";
    o->strategy = "auto";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        static const char *const with_value[] = {"--policy", "--budget", "--strategy", "--seed",
                                                 "--svg", "--graph-out"};
        int which = -1, m = 0;
        for (int k = 0; k < 6 && !m; k++)
            if ((m = valued(argc, argv, &i, with_value[k], &v))) which = k;
        if (m < 0) {
            fprintf(stderr, "memplan remat: %s needs a value\n%s", a, usage_line);
            return EXIT_INPUT;
        }
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--json")) o->json = true;
        else if (!strcmp(a, "--run")) o->run = true;
        else if (!strcmp(a, "--persistent")) o->persistent = true;
        else if (which == 0) {
            if (!known_policy(v)) return cli_unknown("memplan remat", "policy", v, policy_name, NULL);
            o->policy = v;
        } else if (which == 1) {
            const char *why = cli_parse_size(v, &o->budget);
            if (why) {
                fprintf(stderr, "memplan remat: --budget '%s': %s\n", v, why);
                return EXIT_INPUT;
            }
            o->has_budget = true;
        } else if (which == 2) {
            if (!mp_strategy_find(v))
                return cli_unknown("memplan remat", "strategy", v, cli_strategy_name,
                                   "see 'memplan strategies'");
            o->strategy = v;
        } else if (which == 3) {
            if (!cli_parse_u64("--seed", v, &o->seed)) return EXIT_INPUT;
        } else if (which == 4) {
            if (!cli_svg_name("--svg", v)) return EXIT_INPUT;
            o->svg = v;
        }
        else if (which == 5) o->graph_out = v;
        else if ((a[0] == '-' && a[1]) || o->path) return usage("unexpected argument", a);
        else o->path = a;
    }
    if (!o->path) return usage("give one graph file", NULL);
    return EXIT_OK;
}

/* ---- progress on stderr ---------------------------------------------------------- */

/* Shown once the work has taken a second: a \r line on a terminal, else a
 * line every few seconds. */
typedef struct progress {
    double start, last;
    bool tty, shown;
    int width;
} progress;

static void progress_init(progress *p) {
    p->start = cli_now_ms();
    p->last = 0;
    p->tty = isatty(STDERR_FILENO);
    p->shown = false;
    p->width = 0;
}

static void progress_show(progress *p, const char *what, size_t done, size_t total,
                          const char *label) {
    double now = cli_now_ms();
    if (now - p->start < 1000.0) return;
    if (p->shown && now - p->last < (p->tty ? 100.0 : 5000.0) && done < total) return;
    p->last = now;
    p->shown = true;
    if (p->tty) {
        int w = fprintf(stderr, "\rremat: %s %zu/%zu%s%s", what, done, total, label ? " " : "",
                        label ? label : "");
        if (w < p->width) fprintf(stderr, "%*s", p->width - w, "");
        if (w > p->width) p->width = w;
    } else {
        fprintf(stderr, "remat: %s %zu/%zu%s%s\n", what, done, total, label ? " " : "",
                label ? label : "");
    }
    fflush(stderr);
}

static void progress_end(progress *p) {
    if (p->shown && p->tty) fprintf(stderr, "\r%*s\r", p->width, "");
    p->shown = false;
}

static void fit_progress(void *ctx, size_t done, size_t total) {
    progress_show(ctx, "candidate", done, total, NULL);
}

/* ---- evaluating, running ---------------------------------------------------------- */

static bool need_graph(const opts *o) { return o->run || o->svg || o->graph_out; }

/* Compares a planned run of g with the plain step: outputs in order. */
static int compare(state *s, const mp_graph_t *g, const mp_graph_plan_t *plan, row *w) {
    mp_exec_opts_t eo = {.seed = s->o.seed, .plan = plan, .poison = 1};
    mp_exec_result_t b = {0};
    if (mp_exec_run(g, &eo, &b) != MP_OK) return fail();
    size_t na, nb;
    const size_t *oa = mp_graph_outputs(mp_remat_graph(s->r), &na);
    const size_t *ob = mp_graph_outputs(g, &nb);
    w->ran = true;
    w->identical = na == nb;
    w->outputs = na;
    if (na != nb)
        snprintf(w->differ, sizeof w->differ, "the output count (%zu, the plain step has %zu)", nb,
                 na);
    for (size_t i = 0; i < na && w->identical; i++) {
        size_t ta = oa[i], tb = ob[i];
        const void *pa = s->plain.data[ta], *pb = b.data[tb];
        if (!pa || !pb || s->plain.bytes[ta] != b.bytes[tb] || memcmp(pa, pb, s->plain.bytes[ta])) {
            const char *name = mp_graph_tensor(g, tb)->name;
            w->identical = false;
            if (*name) snprintf(w->differ, sizeof w->differ, "output %zu '%s'", i, name);
            else snprintf(w->differ, sizeof w->differ, "output %zu (tensor %zu)", i, tb);
        }
    }
    mp_exec_result_free(&b);
    return EXIT_OK;
}

/* Evaluates plan p into row w (graph and plan kept in s->graph when
 * keep says so), and runs it with --run.  *st is the library's status (the
 * row records failures); the return value is non-zero only after a fatal
 * error was printed (the executor). */
static int evaluate(state *s, const mp_remat_plan_t *p, row *w, bool keep, mp_status *st) {
    mp_graph_t *g = NULL;
    mp_graph_plan_t gp = {0};
    *st = need_graph(&s->o) ? mp_remat_evaluate_full(s->r, p, &w->e, &g, &gp)
                            : mp_remat_evaluate(s->r, p, &w->e);
    if (*st != MP_OK) return EXIT_OK;
    if (!s->forward_flops) s->forward_flops = w->e.forward_flops;
    int rc = EXIT_OK;
    if (s->o.run) {
        double t0 = cli_now_ms();
        rc = compare(s, g, &gp, w);
        w->run_s = (cli_now_ms() - t0) / 1000.0;
    }
    if (rc == EXIT_OK && keep && g) {
        mp_graph_free(s->graph);
        mp_graph_plan_free(&s->gplan);
        s->graph = g;
        s->gplan = gp;
    } else {
        mp_graph_free(g);
        mp_graph_plan_free(&gp);
    }
    return rc;
}

static row *add_row(state *s, const char *name) {
    row *w = &s->rows[s->n_rows++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    return w;
}

/* One policy by name.  Failures become the row's error; fatal ones (the
 * executor) return non-zero. */
static int run_policy(state *s, const char *name) {
    row *w = add_row(s, name);
    double t0 = cli_now_ms();
    mp_remat_plan_t p = {0};
    int rc = EXIT_OK;
    mp_status st = mp_remat_policy(s->r, name, &p);
    if (st == MP_OK) {
        snprintf(w->plan, sizeof w->plan, "%s", p.policy);
        rc = evaluate(s, &p, w, true, &st);
    }
    mp_remat_plan_free(&p);
    w->seconds = (cli_now_ms() - t0) / 1000.0 - w->run_s;
    if (rc) return rc;
    w->status = st;
    if (st != MP_OK) {
        w->error = strdup(mp_last_error());
        if (!w->error) return fprintf(stderr, "memplan remat: out of memory\n"), EXIT_INPUT;
    }
    return EXIT_OK;
}

/* Every policy (or the one asked for), one row each. */
static int run_policies(state *s) {
    const char *one[1] = {s->o.policy};
    const char **names = one;
    size_t n = 1;
    bool all = !strcmp(s->o.policy, "all");
    static const char *list[64];
    if (all) {
        n = 0;
        for (size_t i = 0; mp_remat_policy_name(i) && n < 64; i++) list[n++] = mp_remat_policy_name(i);
        names = list;
    }
    s->rows = calloc(n + 1, sizeof *s->rows);
    if (!s->rows) return fprintf(stderr, "memplan remat: out of memory\n"), EXIT_INPUT;
    progress pr;
    progress_init(&pr);
    bool drawn = false;
    for (size_t i = 0; i < n; i++) {
        char req[128];
        /* The listed spelling may show a parameter ("logn[=K]", "segments=LIST"):
         * 'all' asks for the policy by its bare name, with its defaults. */
        snprintf(req, sizeof req, "%.*s", (int)strcspn(names[i], all ? "=[" : ""), names[i]);
        progress_show(&pr, "policy", i + 1, n, req);
        /* evaluate() keeps each new graph; keep the one of the smallest peak. */
        mp_graph_t *kept_g = s->graph;
        mp_graph_plan_t kept_p = s->gplan;
        s->graph = NULL;
        memset(&s->gplan, 0, sizeof s->gplan);
        int rc = run_policy(s, req);
        row *w = &s->rows[s->n_rows - 1];
        bool better = w->status == MP_OK && (!drawn || w->e.peak < s->rows[s->drawn].e.peak);
        if (better) {
            mp_graph_free(kept_g);
            mp_graph_plan_free(&kept_p);
            s->drawn = s->n_rows - 1;
            drawn = true;
        } else {
            mp_graph_free(s->graph);
            mp_graph_plan_free(&s->gplan);
            s->graph = kept_g;
            s->gplan = kept_p;
        }
        if (rc) {
            progress_end(&pr);
            return rc;
        }
        if (!all && w->status != MP_OK) {
            progress_end(&pr);
            fprintf(stderr, "memplan remat: %s\n", w->error);
            return w->status == MP_ECONFLICT ? EXIT_INVALID : EXIT_INPUT;
        }
        if (!strcmp(req, "none") && w->status == MP_OK) {
            s->none_peak = w->e.peak;
            s->have_none = true;
        }
    }
    progress_end(&pr);
    if (all) {
        size_t i = 0;
        while (i < s->n_rows && strcmp(s->rows[i].name, "none")) i++;
        if (i == s->n_rows || s->rows[i].status != MP_OK) {
            fprintf(stderr, "memplan remat: policy none: %s\n",
                    i < s->n_rows ? s->rows[i].error : "not among the policies");
            return EXIT_INPUT;
        }
    }
    return EXIT_OK;
}

/* The peak of no recomputation, for the ratios, when no row has it. */
static int none_peak(state *s) {
    if (s->have_none) return EXIT_OK;
    mp_remat_plan_t p = {0};
    mp_remat_eval_t e;
    mp_status st = mp_remat_policy(s->r, "none", &p);
    if (st == MP_OK) st = mp_remat_evaluate(s->r, &p, &e);
    mp_remat_plan_free(&p);
    if (st != MP_OK) return fail();
    s->none_peak = e.peak;
    s->have_none = true;
    if (!s->forward_flops) s->forward_flops = e.forward_flops;
    return EXIT_OK;
}

/* --budget: the plan of least extra compute that fits. */
static int run_fit(state *s) {
    s->rows = calloc(1, sizeof *s->rows);
    if (!s->rows) return fprintf(stderr, "memplan remat: out of memory\n"), EXIT_INPUT;
    const char *policy = strcmp(s->o.policy, "all") ? s->o.policy : NULL;
    progress pr;
    progress_init(&pr);
    double t0 = cli_now_ms();
    mp_remat_plan_t p = {0};
    mp_status st = mp_remat_fit(s->r, policy, s->o.budget, fit_progress, &pr, &p, &s->fit);
    progress_end(&pr);
    double secs = (cli_now_ms() - t0) / 1000.0;
    if (st != MP_OK) {
        fail();
        return st == MP_ECONFLICT ? EXIT_INVALID : EXIT_INPUT;
    }
    s->fitted = true;
    row *w = add_row(s, p.policy);
    snprintf(w->plan, sizeof w->plan, "%s", p.policy);
    w->e = s->fit.eval;
    if (need_graph(&s->o)) {
        int rc = evaluate(s, &p, w, true, &st);
        if (rc) {
            mp_remat_plan_free(&p);
            return rc;
        }
        if (st != MP_OK) {
            mp_remat_plan_free(&p);
            fail();
            return st == MP_ECONFLICT ? EXIT_INVALID : EXIT_INPUT;
        }
        /* The library is deterministic: the same plan evaluates the same. */
        if (w->e.peak != s->fit.eval.peak || w->e.extra_flops != s->fit.eval.extra_flops) {
            mp_remat_plan_free(&p);
            fprintf(stderr,
                    "memplan remat: %s: mp_remat_fit reported peak %llu and %llu extra FLOPs, "
                    "evaluating the plan again gives %llu and %llu\n",
                    w->plan, (unsigned long long)s->fit.eval.peak,
                    (unsigned long long)s->fit.eval.extra_flops, (unsigned long long)w->e.peak,
                    (unsigned long long)w->e.extra_flops);
            return EXIT_INVALID;
        }
    }
    mp_remat_plan_free(&p);
    w->seconds = secs;
    s->drawn = 0;
    return EXIT_OK;
}

/* --svg and --graph-out, before anything is printed.  Each file is written
 * whole or not at all (a temporary file renamed); when the second fails,
 * the first is removed too when it is a plain file, so a failure leaves
 * neither (a FIFO, a device or a link is never removed). */
static int write_files(state *s) {
    if (!s->graph) return EXIT_OK;
    const row *w = &s->rows[s->drawn];
    if (s->o.svg) {
        mp_buffer_t *b = NULL;
        size_t n = 0;
        mp_plan_t plan = {0};
        char title[320], h[32];
        const char *model = mp_graph_model_name(s->fwd);
        snprintf(title, sizeof title, "%s, recomputation %s: peak %s, +%.1f%% forward FLOPs",
                 *model ? model : s->o.path, w->plan[0] ? w->plan : w->name,
                 cli_human(w->e.peak, h, sizeof h), remat_pct(w->e.extra_flops, w->e.forward_flops));
        mp_status st = mp_graph_plan_records(s->graph, &s->gplan, &b, &n, &plan);
        /* Tensor names on the largest buffers (record id = tensor id);
         * without memory for them the picture shows ids. */
        const char **names = st == MP_OK ? calloc(n ? n : 1, sizeof *names) : NULL;
        for (size_t i = 0; names && i < n; i++) {
            const mp_graph_tensor_t *t = mp_graph_tensor(s->graph, (size_t)b[i].id);
            names[i] = t ? t->name : NULL;
        }
        mp_svg_opts_t so = {.title = title, .lower_bound = w->e.lower_bound,
                            .bound_name = "offsets, in-place", .names = names};
        if (st == MP_OK) st = mp_plan_write_svg_opts(s->o.svg, b, n, &plan, &so);
        free(names);
        free(b);
        mp_plan_free(&plan);
        if (st != MP_OK) return fail();
    }
    if (s->o.graph_out && mp_graph_save(s->graph, s->o.graph_out) != MP_OK) {
        int rc = fail();
        cli_discard_output(s->o.svg);
        return rc;
    }
    return EXIT_OK;
}

int cmd_remat(int argc, char **argv) {
    state s = {0};
    int rc = parse(argc, argv, &s.o);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const opts *o = &s.o;
    const cli_output outs[] = {{"--svg", o->svg}, {"--graph-out", o->graph_out}};
    if ((rc = cli_check_outputs(&o->path, 1, outs, 2))) return rc;

    if (mp_graph_load(o->path, &s.fwd) != MP_OK)
        return cli_read_failed("memplan remat", o->path, CLI_GRAPH);
    /* Shapes against the op registry, before anything is derived from them. */
    if (mp_graph_check_shapes(s.fwd, NULL) != MP_OK) {
        fprintf(stderr, "memplan remat: %s: %s\n", o->path, mp_last_error());
        rc = EXIT_INPUT;
        goto done;
    }
    mp_remat_opts_t ro;
    mp_remat_opts_default(&ro);
    ro.strategy = o->strategy;
    ro.include_persistent = o->persistent;
    if (mp_remat_new(s.fwd, &ro, &s.r) != MP_OK) {
        rc = fail();
        goto done;
    }
    if (o->run) {
        /* The executor must run every op before anything is planned. */
        const mp_graph_t *plain = mp_remat_graph(s.r);
        mp_exec_opts_t eo = {.seed = o->seed};
        if (mp_exec_supported(plain) != MP_OK || mp_exec_run(plain, &eo, &s.plain) != MP_OK) {
            rc = fail();
            goto done;
        }
        s.have_plain = true;
    }
    rc = o->has_budget ? run_fit(&s) : run_policies(&s);
    if (rc) goto done;
    if ((rc = none_peak(&s))) goto done;
    if ((rc = write_files(&s))) goto done;
    bool report = !cli_stdout_output(outs, 2);   /* else stdout carries a file */
    if (report && o->json) remat_print_json(&s);
    else if (report) remat_print_text(&s);

    rc = EXIT_OK;
    for (size_t i = 0; i < s.n_rows; i++) {
        const row *w = &s.rows[i];
        if (w->status == MP_ECONFLICT) {
            fprintf(stderr, "memplan remat: %s: %s\n", w->name, w->error ? w->error : "");
            rc = EXIT_INVALID;
        }
        if (w->ran && !w->identical) {
            fprintf(stderr, "memplan remat: %s: %s differs from the plain step\n",
                    s.fitted ? w->plan : w->name, w->differ);
            rc = EXIT_INVALID;
        }
    }
done:
    for (size_t i = 0; i < s.n_rows; i++) free(s.rows[i].error);
    free(s.rows);
    if (s.have_plain) mp_exec_result_free(&s.plain);
    mp_graph_free(s.graph);
    mp_graph_plan_free(&s.gplan);
    mp_remat_free(s.r);
    mp_graph_free(s.fwd);
    return rc;
}
