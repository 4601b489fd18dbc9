/* cmd_swap.c -- `memplan swap GRAPH|TRACE`: move what is not in use to host
 * memory and bring it back in time (zhang2019's AutoSwap; src/swap/,
 * include/memplan_swap.h).  Builds the training step of a graph (adding
 * the backward pass and a loss when it has none) and times it on a device
 * model, or takes a trace with op boundaries and their times as it is
 * (swap_trace.c), and for one or every priority score selects the variables to swap
 * in the chosen mode and simulates the plan on the link: peak load before
 * and after, what is swapped, stall and overhead.  Nothing is printed on
 * stdout before everything has been computed. */
#include "cli.h"
#include "swap_cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: memplan swap [options] GRAPH.json[.gz]|TRACE\n"
    "\n"
    "Reads a memplan-graph/1 graph (a forward graph gets its backward pass and a\n"
    "softmax cross-entropy loss) and times its ops on a device model, or a\n"
    "memplan-trace/1 trace with op boundaries ('o DURATION_NS [NAME]' lines, whose\n"
    "times it keeps; docs/trace-format.md), and swaps\n"
    "variables to host memory between two accesses, prefetching them back before\n"
    "the next one (zhang2019 sec. IV).  Per priority score it prints the variables\n"
    "swapped, the peak memory load before and after (the load: bytes of the\n"
    "variables on the device), and the stall the transfers cause in a simulation\n"
    "with one compute stream and two copy streams.\n"
    "\n"
    "options:\n"
    "  --mode no-overhead|limit  no-overhead (default): the largest load reduction\n"
    "                        with no stall; limit: meet --limit with the least stall\n"
    "  --limit SIZE          the memory load limit for --mode limit (bytes, or with\n"
    "                        K, M, G (powers of 1024; KB, MB, GB powers of 1000))\n"
    "  --score NAME          doa, aoa, wdoa, swdoa, bo (Bayesian optimisation of the\n"
    "                        four combined) or all (default): one row each\n"
    "  --device NAME         op times: gtx1080ti (default), v100, h100, cpu (measured\n"
    "                        rates), or run (each op timed on the reference CPU\n"
    "                        executor, median of 3 steps); GRAPH only\n"
    "  --link NAME           pcie3 (default), pcie4, pcie5, nvlink-c2c, measured, or\n"
    "                        BW,LAT (e.g. 12G,10us: bytes/s and latency both ways)\n"
    "  --min-size SIZE       candidates are at least this large (default 1MiB)\n"
    "  --evals N             BO's simulated evaluations (default 40)\n"
    "  --seed N              BO's seed (default 1)\n"
    "  --json                print one JSON object instead of the text\n"
    "  --svg FILE            the load curve with no swapping and with the plan (BO's,\n"
    "                        or --score's) as a picture\n"
    "  --run                 run each score's plan for real on the reference CPU\n"
    "                        executor (device and host pools, two copy threads),\n"
    "                        outputs compared bit for bit with the plain step's;\n"
    "                        measured stall beside the simulated one (exit 1 when\n"
    "                        any output differs)\n"
    "  --joint               keep, swap or recompute per tensor (GRAPH: a forward\n"
    "                        graph): swap-only, recompute-only and joint plans at\n"
    "                        --limit, or along 12 limits from the plain step's peak\n"
    "                        down (score: --score, default swdoa)\n"
    "  --write-trace FILE    write GRAPH's training step as a trace with op\n"
    "                        boundaries (times from --device; with --device run\n"
    "                        recorded on the reference executor: its mallocs,\n"
    "                        frees, reads, writes and kernel times) and stop\n"
    "\n"
    "On a TRACE: --joint, --run, --device and --write-trace need a graph.\n"
    "\n"
    "Numbers and presets: docs/swap.md.  Exit status: 0 done, 2 bad usage, a bad\n"
    "graph, an unknown device or link, or a limit below load_min (the least load\n"
    "swapping every candidate can reach; the message names it).\n";

static const char usage_line[] =
    "usage: memplan swap [--mode no-overhead|limit] [--limit SIZE] [--score NAME]\n"
    "                    [--device NAME] [--link NAME|BW,LAT] [--min-size SIZE] [--evals N]\n"
    "                    [--seed N] [--json] [--joint] [--run] [--svg FILE]\n"
    "                    [--write-trace FILE] GRAPH|TRACE\n"
    "'memplan swap --help' describes the options.\n";

static const char *const SCORES[] = {"doa", "aoa", "wdoa", "swdoa", "bo"};
enum { N_SCORES = 5 };

static const char *score_name(size_t i) { return i < N_SCORES ? SCORES[i] : i == N_SCORES ? "all" : NULL; }
static const char *mode_name(size_t i) { return i == 0 ? "no-overhead" : i == 1 ? "limit" : NULL; }

typedef struct opts {
    const char *path, *device, *link, *svg, *write_trace;
    mp_swap_select_opts_t sel;
    int score;                 /* -1: all */
    bool json, has_limit, joint, run, has_device, trace;
} opts;

typedef struct row {
    mp_swap_plan_t plan;
    mp_swap_sim_t sim;
    uint64_t bytes;            /* swapped bytes */
    uint64_t smartpool, best;  /* footprints of the residencies (sec. V) */
    double ms;
} row;

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "memplan swap: %s%s%s\n%s", msg, arg ? " " : "", arg ? arg : "", usage_line);
    return EXIT_INPUT;
}

static int fail(void) {
    fprintf(stderr, "memplan swap: %s\n", mp_last_error());
    return EXIT_INPUT;
}

static int lookup(const char *what, const char *v, cli_names names, int *out) {
    for (size_t i = 0; names(i); i++)
        if (!strcmp(names(i), v)) return *out = (int)i, EXIT_OK;
    return cli_unknown("memplan swap", what, v, names, NULL);
}

static int size_option(const char *opt, const char *v, uint64_t *out) {
    const char *why = cli_parse_size(v, out);
    if (!why) return EXIT_OK;
    fprintf(stderr, "memplan swap: %s '%s': %s\n", opt, v, why);
    return EXIT_INPUT;
}

/* One option with its value; EXIT_OK, EXIT_INPUT, or -2 when a is not one. */
static int option(opts *o, const char *a, const char *v) {
    int k = 0, rc;
    uint64_t n;
    if (!strcmp(a, "--mode")) {
        if ((rc = lookup("mode", v, mode_name, &k))) return rc;
        o->sel.mode = k ? MP_SWAP_LIMIT : MP_SWAP_NO_OVERHEAD;
    } else if (!strcmp(a, "--score")) {
        if ((rc = lookup("score", v, score_name, &k))) return rc;
        o->score = k == N_SCORES ? -1 : k;
    } else if (!strcmp(a, "--limit")) {
        if ((rc = size_option(a, v, &o->sel.limit))) return rc;
        o->has_limit = true;
    } else if (!strcmp(a, "--min-size")) {
        return size_option(a, v, &o->sel.min_size);
    } else if (!strcmp(a, "--evals") || !strcmp(a, "--seed")) {
        if (!cli_parse_u64(a, v, &n)) return EXIT_INPUT;
        if (a[2] == 'e') o->sel.bo_evals = (size_t)n;
        else o->sel.seed = n;
    } else if (!strcmp(a, "--svg")) o->svg = v;
    else if (!strcmp(a, "--write-trace")) o->write_trace = v;
    else if (!strcmp(a, "--device")) o->device = v, o->has_device = true;
    else if (!strcmp(a, "--link")) o->link = v;
    else return -2;
    return EXIT_OK;
}

static int parse(int argc, char **argv, opts *o) {
    mp_swap_select_opts_default(&o->sel);
    o->score = -1, o->device = "gtx1080ti", o->link = "pcie3";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return fputs(help, stdout), -1;
        bool *flag = !strcmp(a, "--json") ? &o->json : !strcmp(a, "--joint") ? &o->joint
                   : !strcmp(a, "--run") ? &o->run : NULL;
        if (flag) {
            *flag = true;
            continue;
        }
        if (a[0] == '-' && a[1] == '-') {
            char name[32];
            const char *eq = strchr(a, '='), *v;
            size_t len = eq ? (size_t)(eq - a) : strlen(a);
            if (len >= sizeof name) return usage("unknown option", a);
            memcpy(name, a, len), name[len] = 0;
            if (eq) v = eq + 1;
            else if (i + 1 < argc) v = argv[i + 1];
            else v = NULL;
            int rc = v ? option(o, name, v) : -2;
            if (rc == -2) return usage(v || eq ? "unknown option" : "unknown option or missing value", a);
            if (rc) return rc;
            if (!eq) i++;
        } else if (o->path) {
            return usage("unexpected argument", a);
        } else {
            o->path = a;
        }
    }
    if (!o->path) return usage("give one graph or trace file", NULL);
    o->trace = cli_sniff(o->path) == CLI_TRACE;
    if (o->trace) {
        const char *need = o->joint ? "--joint needs a graph (its recompute plans come from the graph's nodes)"
                         : o->run ? "--run needs a graph (the executor runs the graph's nodes)"
                         : o->has_device ? "--device needs a graph (a trace carries its own op times)"
                         : o->write_trace ? "--write-trace needs a graph (this is a trace already)" : NULL;
        if (need) return fprintf(stderr, "memplan swap: %s: %s\n", o->path, need), EXIT_INPUT;
    }
    if (o->write_trace && (o->joint || o->run || o->svg))
        return usage("--write-trace writes the trace and stops: not with --joint, --run or --svg", NULL);
    if (o->write_trace) {
        cli_output out = {"--write-trace", o->write_trace};
        if (cli_check_outputs(&o->path, 1, &out, 1)) return EXIT_INPUT;
    }
    if (o->sel.mode == MP_SWAP_LIMIT && !o->has_limit) return usage("--mode limit needs --limit SIZE", NULL);
    if (o->svg && o->joint) return usage("--svg does not go with --joint", NULL);
    if (o->svg) {
        cli_output out = {"--svg", o->svg};
        if (cli_check_outputs(&o->path, 1, &out, 1)) return EXIT_INPUT;
    }
    if (o->sel.mode != MP_SWAP_LIMIT && o->has_limit && !o->joint)
        return usage("--limit needs --mode limit", NULL);
    return EXIT_OK;
}

/* The training step of the graph at path: as it is when it has gradients,
 * else with mp_graph_backward's (loss added, running gradient sums). */
static int load_train(const char *path, mp_graph_t **train) {
    mp_graph_t *g;
    if (mp_graph_load(path, &g) != MP_OK) return cli_read_failed("memplan swap", path, CLI_GRAPH);
    bool has_grad = false;
    for (size_t t = 0, n = mp_graph_tensor_count(g); t < n && !has_grad; t++)
        has_grad = mp_graph_tensor(g, t)->kind == MP_TENSOR_GRADIENT;
    if (has_grad) return *train = g, EXIT_OK;
    mp_backward_opts_t bo = {.add_loss = 1, .accumulate = 1};
    mp_status s = mp_graph_backward(g, &bo, train, NULL);
    mp_graph_free(g);
    return s ? fail() : EXIT_OK;
}

/* SmartPool after AutoSwap: the plan's residencies placed by
 * smartpool-bestfit and by auto (each plan checked). */
static mp_status footprints(const mp_swap_iter_t *it, const mp_swap_plan_t *p,
                            const mp_swap_sim_t *sim, uint64_t *smartpool, uint64_t *best) {
    mp_buffer_t *b;
    size_t n;
    mp_status s = mp_swap_residency(it, p, sim, &b, &n);
    const char *names[2] = {"smartpool-bestfit", "auto"};
    uint64_t *out[2] = {smartpool, best};
    for (int k = 0; k < 2 && !s; k++) {
        mp_plan_t plan;
        s = mp_plan_compute(b, n, names[k], &plan);
        if (!s) s = mp_plan_check(b, n, &plan, NULL);
        *out[k] = plan.footprint;
        mp_plan_free(&plan);
    }
    if (!s) free(b);
    return s;
}

typedef struct summary {
    const char *model;
    uint64_t compute_ns, peak, load_min, smartpool, best;   /* footprints with no swapping */
    size_t ops, vars, candidates, peak_op;
} summary;

static int summarise(const mp_swap_iter_t *it, const opts *o, summary *s) {
    uint64_t *load = malloc((it->n_ops + 1) * sizeof *load);
    mp_swap_item_t *cand = NULL;
    if (!load) return fprintf(stderr, "memplan swap: out of memory\n"), EXIT_INPUT;
    mp_status st = mp_swap_load(it, load, &s->peak, &s->peak_op);
    if (!st) st = mp_swap_load_min(it, o->sel.min_size, &s->load_min);
    if (!st) st = mp_swap_candidates(it, o->sel.min_size, &cand, &s->candidates);
    free(load), free(cand);
    mp_swap_sim_t plain;
    if (!st) st = mp_swap_simulate(it, &(mp_swap_link_t){.out_bytes_per_s = 1, .in_bytes_per_s = 1},
                                   NULL, 0, &plain);
    if (!st) st = footprints(it, NULL, &plain, &s->smartpool, &s->best);
    mp_swap_sim_free(&plain);
    if (st) return fail();
    s->ops = it->n_ops, s->vars = it->n_vars;
    for (size_t j = 0; j < it->n_ops; j++) s->compute_ns += it->op[j].ns;
    return EXIT_OK;
}

static int run_scores(const mp_swap_iter_t *it, const mp_swap_link_t *link, const opts *o, row *r) {
    for (int k = 0; k < N_SCORES; k++) {
        if (o->score >= 0 && o->score != k) continue;
        mp_swap_select_opts_t sel = o->sel;
        sel.score = (mp_swap_score)k;
        double t0 = cli_now_ms();
        if (mp_swap_select(it, link, &sel, &r[k].plan, &r[k].sim) != MP_OK) return fail();
        r[k].ms = cli_now_ms() - t0;
        for (size_t i = 0; i < r[k].plan.n; i++) r[k].bytes += it->var[r[k].plan.item[i].var].size;
        if (footprints(it, &r[k].plan, &r[k].sim, &r[k].smartpool, &r[k].best) != MP_OK)
            return fail();
    }
    return EXIT_OK;
}

static double pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

static void print_text(const opts *o, const summary *s, const mp_swap_device_t *d,
                       const mp_swap_link_t *l, const row *r) {
    char h1[32], h2[32], h3[32];
    printf("%s: %zu ops, %zu variables, %zu candidates >= %s\n", s->model, s->ops, s->vars,
           s->candidates, cli_human(o->sel.min_size, h1, sizeof h1));
    if (!strcmp(d->name, "trace"))
        printf("op times from the trace: %.3f ms of compute per iteration\n", (double)s->compute_ns / 1e6);
    else if (!strcmp(d->name, "run"))
        printf("device run (op times measured on the reference executor): %.3f ms of compute per iteration\n",
               (double)s->compute_ns / 1e6);
    else
        printf("device %s (%.2f TFLOP/s, %.0f GB/s): %.3f ms of compute per iteration\n", d->name,
               d->flops / 1e12, d->bytes_per_s / 1e9, (double)s->compute_ns / 1e6);
    printf("link %s: out %.1f us + %.1f GB/s, in %.1f us + %.1f GB/s\n", l->name,
           (double)l->out_lat_ns / 1e3, l->out_bytes_per_s / 1e9, (double)l->in_lat_ns / 1e3,
           l->in_bytes_per_s / 1e9);
    printf("peak load %s at op %zu; load_min %s\n", cli_human(s->peak, h1, sizeof h1), s->peak_op,
           cli_human(s->load_min, h2, sizeof h2));
    printf("footprint with no swapping: %s (smartpool-bestfit), %s (auto)\n",
           cli_human(s->smartpool, h1, sizeof h1), cli_human(s->best, h2, sizeof h2));
    if (o->sel.mode == MP_SWAP_LIMIT) printf("mode limit %s\n\n", cli_human(o->sel.limit, h3, sizeof h3));
    else printf("mode no-overhead\n\n");
    printf("%-6s %8s %14s %14s %8s %9s %12s %9s %6s %14s %14s\n", "score", "swapped", "bytes",
           "peak load", "/ peak", "cut", "stall ms", "overhead", "met", "smartpool", "auto");
    for (int k = 0; k < N_SCORES; k++) {
        if (o->score >= 0 && o->score != k) continue;
        const row *w = &r[k];
        char h4[32], h5[32];
        printf("%-6s %8zu %14s %14s %8.3f %8.1f%% %12.3f %8.2f%% %6s %14s %14s  (%.0f ms)\n",
               SCORES[k], w->plan.n, cli_human(w->bytes, h1, sizeof h1),
               cli_human(w->sim.peak, h2, sizeof h2),
               s->peak ? (double)w->sim.peak / (double)s->peak : 1.0,
               pct(s->peak - (w->sim.peak < s->peak ? w->sim.peak : s->peak), s->peak),
               (double)w->sim.stall_ns / 1e6, 100.0 * w->sim.overhead,
               w->sim.limit_met ? "yes" : "NO", cli_human(w->smartpool, h4, sizeof h4),
               cli_human(w->best, h5, sizeof h5), w->ms);
    }
}

static void print_json(const opts *o, const summary *s, const mp_swap_device_t *d,
                       const mp_swap_link_t *l, const row *r) {
    printf("{\"input\":\"%s\",\"graph\":", o->trace ? "trace" : "graph");
    cli_json_string(o->path);
    printf(",\"model\":");
    cli_json_string(s->model);
    printf(",\"device\":\"%s\",\"link\":\"%s\",\"mode\":\"%s\",\"limit\":%llu,\"ops\":%zu,"
           "\"variables\":%zu,\"candidates\":%zu,\"compute_ns\":%llu,\"peak\":%llu,"
           "\"load_min\":%llu,\"footprint_smartpool\":%llu,\"footprint_auto\":%llu,\"scores\":[",
           d->name, l->name, mode_name(o->sel.mode == MP_SWAP_LIMIT), (unsigned long long)o->sel.limit,
           s->ops, s->vars, s->candidates, (unsigned long long)s->compute_ns,
           (unsigned long long)s->peak, (unsigned long long)s->load_min,
           (unsigned long long)s->smartpool, (unsigned long long)s->best);
    const char *sep = "";
    for (int k = 0; k < N_SCORES; k++) {
        if (o->score >= 0 && o->score != k) continue;
        const row *w = &r[k];
        printf("%s{\"score\":\"%s\",\"swapped\":%zu,\"bytes\":%llu,\"peak\":%llu,\"stall_ns\":%llu,"
               "\"overhead\":%.6f,\"limit_met\":%s,\"footprint_smartpool\":%llu,"
               "\"footprint_auto\":%llu,\"ms\":%.3f}",
               sep, SCORES[k], w->plan.n, (unsigned long long)w->bytes,
               (unsigned long long)w->sim.peak, (unsigned long long)w->sim.stall_ns,
               w->sim.overhead, w->sim.limit_met ? "true" : "false",
               (unsigned long long)w->smartpool, (unsigned long long)w->best, w->ms);
        sep = ",";
    }
    printf("]%s", o->run ? ",\"run\":" : "}\n");
}

int cmd_swap(int argc, char **argv) {
    opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    mp_swap_device_t dev;
    mp_swap_link_t link;
    bool measure = !strcmp(o.device, "run");   /* op times from the reference executor */
    if (measure && o.joint) return usage("--device run does not go with --joint", NULL);
    if (mp_swap_device_preset(measure ? "cpu" : o.device, &dev) != MP_OK) return fail();
    if (measure) snprintf(dev.name, sizeof dev.name, "run");
    if (mp_swap_link_preset(o.link, &link) != MP_OK &&
        (!strchr(o.link, ',') || mp_swap_link_parse(o.link, &link) != MP_OK))
        return fail();
    if (o.joint && o.run) return usage("--run and --joint do not go together (yet)", NULL);
    if (o.joint) {
        cli_swap_joint_args ja = {o.path, &dev, &link, o.score < 0 ? MP_SWAP_SWDOA : (mp_swap_score)o.score,
                                  o.sel.min_size, o.sel.limit, o.has_limit, o.json};
        return cli_swap_joint(&ja);
    }
    mp_graph_t *train = NULL;
    mp_swap_iter_t it;
    if (o.trace) {
        snprintf(dev.name, sizeof dev.name, "trace");
        if ((rc = cli_swap_trace_iter(o.path, &it))) return rc;
    } else if ((rc = load_train(o.path, &train))) {
        return rc;
    } else if (o.write_trace) {
        rc = cli_swap_write_trace(o.write_trace, train, &dev, measure, o.json);
        mp_graph_free(train);
        return rc;
    } else if (mp_swap_iter_from_graph(train, &dev, &it) != MP_OK) {
        return mp_graph_free(train), fail();
    }
    if (measure && !o.trace) {
        fprintf(stderr, "memplan swap: timing the step on the reference executor (3 runs)...\n");
        if (mp_swap_iter_measure(train, 3, &it) != MP_OK) return mp_swap_iter_free(&it), mp_graph_free(train), fail();
    }
    summary s = {.model = train && *mp_graph_model_name(train) ? mp_graph_model_name(train) : o.path};
    row r[N_SCORES] = {0};
    rc = summarise(&it, &o, &s);
    if (!rc) rc = run_scores(&it, &link, &o, r);
    if (!rc && o.json) print_json(&o, &s, &dev, &link, r);
    else if (!rc) print_text(&o, &s, &dev, &link, r);
    if (!rc && o.svg) {
        int k = o.score >= 0 ? o.score : MP_SWAP_BO;
        char title[160];
        snprintf(title, sizeof title, "%s: memory load, %s on %s", s.model, dev.name, link.name);
        if (mp_swap_write_svg(o.svg, title, &it, &r[k].plan, &r[k].sim,
                              o.sel.mode == MP_SWAP_LIMIT ? o.sel.limit : 0) != MP_OK)
            rc = fail();
    }
    if (!rc && o.run) {
        cli_swap_run_row rows[N_SCORES];
        size_t n = 0;
        for (int k = 0; k < N_SCORES; k++)
            if (o.score < 0 || o.score == k) rows[n++] = (cli_swap_run_row){SCORES[k], &r[k].plan, &r[k].sim};
        fflush(stdout);
        rc = cli_swap_run(train, &it, rows, n, o.json);
        if (o.json) printf("}\n");
    }
    for (int k = 0; k < N_SCORES; k++) mp_swap_plan_free(&r[k].plan), mp_swap_sim_free(&r[k].sim);
    mp_swap_iter_free(&it);
    mp_graph_free(train);
    return rc;
}
