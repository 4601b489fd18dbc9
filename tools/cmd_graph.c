/* cmd_graph.c -- `memplan graph FILE`: load and validate a memplan-graph/1
 * file; optionally add its backward pass (--train) and search a better
 * execution order (--order search); then print the memory each stage of
 * optimisation needs (tools/graph_stages.c) and, with --run, execute the
 * graph on the smallest plan and compare it with a naive-allocation run. */
#include "graph_stages.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: memplan graph [options] GRAPH.json[.gz]\n"
    "\n"
    "Reads a memplan-graph/1 file (plain or gzip; docs/graph-format.md), checks it,\n"
    "and prints the activation memory of each stage: none (every tensor its own\n"
    "memory), in-place, sharing (the counter algorithm of chen2016 / the MXNet\n"
    "note), parallel-safe sharing, and core planners placing the in-place\n"
    "storages, next to the offsets lower bound.  Every plan is proven by the\n"
    "checker.  Without stage options all of --inplace --share --strategy auto run.\n"
    "\n"
    "  --train               add the backward pass (and a softmax cross-entropy loss\n"
    "                        when the graph has none) before planning\n"
    "  --accumulate          --train, adding each gradient contribution as it\n"
    "                        arrives (in-place adds) instead of one sum at the end\n"
    "  --inplace             the in-place stage\n"
    "  --share               the sharing stage (counter algorithm, with in-place)\n"
    "  --parallel-safe[=M]   sharing that never shares memory between ops that\n"
    "                        could run in parallel; M = ancestor, colour or both\n"
    "                        (default both)\n"
    "  --strategy NAME       place the in-place storages with a core planner\n"
    "                        (repeatable; 'all' = every strategy; see\n"
    "                        'memplan strategies')\n"
    "  --order given|search  execution order: the file's (default) or one searched\n"
    "                        for a lower peak\n"
    "  --run                 execute the graph (reference executor) on the smallest\n"
    "                        plan and on naive allocation; outputs must be identical\n"
    "  --seed N              seed of the inputs and parameters for --run (default 1)\n"
    "  --include-persistent  plan parameters and gradients too\n"
    "  --records-out FILE    write the usage records (id,first,last,size) as CSV\n"
    "  --graph-out FILE      write the graph that was planned (with its backward\n"
    "                        pass and order) as memplan-graph/1 (.gz: compressed)\n"
    "  --json                print one JSON object instead of the text\n"
    "  (FILE '-' is standard output; the report is then not printed)\n"
    "\n"
    "Exit status: 0 done, 1 a plan was rejected or --run outputs differ, 2 bad\n"
    "usage, a malformed graph (the message names the file and the JSON path of\n"
    "the bad value) or an op the executor cannot run.\n";

typedef struct opts {
    const char *path, *records_out, *graph_out;
    bool json, train, accumulate, run, search, any_stage;
    uint64_t seed;
    gs_request req;
} opts;

static int fail(void) {
    fprintf(stderr, "memplan: %s\n", mp_last_error());
    return EXIT_INPUT;
}

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "memplan graph: %s%s%s\n%s", msg, arg ? " " : "", arg ? arg : "", help);
    return EXIT_INPUT;
}

/* Adds one strategy name (or every one for "all") to the request. */
static int add_strategy(opts *o, const char *name) {
    static const char *list[64];
    if (!strcmp(name, "all")) {
        o->req.all = true;
        for (size_t i = 0; i < mp_strategy_count() && o->req.n_strategies < 64; i++)
            list[o->req.n_strategies++] = mp_strategy_info(i)->name;
    } else if (!mp_strategy_find(name)) {
        return cli_unknown("memplan graph", "strategy", name, cli_strategy_name,
                           "see 'memplan strategies'");
    } else if (o->req.n_strategies < 64) {
        list[o->req.n_strategies++] = name;
    }
    o->req.strategies = list;
    return EXIT_OK;
}

/* The values of --order and --parallel-safe, for cli_unknown. */
static const char *order_name(size_t i) {
    static const char *const v[] = {"given", "search"};
    return i < 2 ? v[i] : NULL;
}

static const char *safe_mode(size_t i) {
    static const char *const v[] = {"ancestor", "colour", "both"};
    return i < 3 ? v[i] : NULL;
}

static int parse(int argc, char **argv, opts *o) {
    o->seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_next = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--json")) o->json = true;
        else if (!strcmp(a, "--train")) o->train = true;
        else if (!strcmp(a, "--accumulate")) o->train = o->accumulate = true;
        else if (!strcmp(a, "--run")) o->run = true;
        else if (!strcmp(a, "--include-persistent")) o->req.include_persistent = true;
        else if (!strcmp(a, "--inplace")) o->req.inplace = o->any_stage = true;
        else if (!strcmp(a, "--share")) o->req.share = o->any_stage = true;
        else if (!strcmp(a, "--parallel-safe") || !strcmp(a, "--parallel-safe=both"))
            o->req.ancestor = o->req.colour = o->any_stage = true;
        else if (!strcmp(a, "--parallel-safe=ancestor")) o->req.ancestor = o->any_stage = true;
        else if (!strcmp(a, "--parallel-safe=colour") || !strcmp(a, "--parallel-safe=color"))
            o->req.colour = o->any_stage = true;
        else if (!strncmp(a, "--parallel-safe=", 16))
            return cli_unknown("memplan graph", "--parallel-safe value", a + 16, safe_mode, NULL);
        else if (!strcmp(a, "--strategy") && has_next) {
            o->any_stage = true;
            if (add_strategy(o, argv[++i])) return EXIT_INPUT;
        } else if (!strcmp(a, "--order") && has_next) {
            const char *v = argv[++i];
            if (!strcmp(v, "search")) o->search = true;
            else if (!strcmp(v, "given")) o->search = false;
            else return cli_unknown("memplan graph", "--order value", v, order_name, NULL);
        } else if (!strcmp(a, "--seed") && has_next) {
            if (!cli_parse_u64("--seed", argv[++i], &o->seed)) return EXIT_INPUT;
        } else if (!strcmp(a, "--records-out") && has_next) o->records_out = argv[++i];
        else if (!strcmp(a, "--graph-out") && has_next) o->graph_out = argv[++i];
        else if ((a[0] == '-' && a[1]) || o->path) return usage("unexpected argument", a);
        else o->path = a;
    }
    if (!o->path) return usage("give one graph file", NULL);
    if (!o->any_stage) {
        o->req.inplace = o->req.share = true;
        if (add_strategy(o, "auto")) return EXIT_INPUT;
    }
    return EXIT_OK;
}

/* What happened before planning, for the report. */
typedef struct prep {
    size_t checked, unchecked;  /* nodes whose shapes the registry checked */
    bool trained;
    mp_backward_stats_t bw;
    bool searched;
    mp_order_report_t order;
} prep;

/* Replaces *g by its training graph and/or a reordered copy. */
static int prepare(const opts *o, mp_graph_t **g, prep *p) {
    if (o->train) {
        mp_backward_opts_t bo = {.add_loss = 1, .accumulate = o->accumulate};
        mp_graph_t *t;
        if (mp_graph_backward(*g, &bo, &t, &p->bw) != MP_OK) return fail();
        mp_graph_free(*g);
        *g = t;
        p->trained = true;
    }
    if (o->search) {
        size_t n = mp_graph_node_count(*g);
        size_t *order = malloc((n ? n : 1) * sizeof *order);
        if (!order) {
            fprintf(stderr, "memplan: out of memory\n");
            return EXIT_INPUT;
        }
        mp_order_opts_t oo = {.include_persistent = o->req.include_persistent};
        mp_graph_t *r = NULL;
        mp_status st = mp_graph_order_search(*g, &oo, order, &p->order);
        if (st == MP_OK) st = mp_graph_with_order(*g, order, &r);
        free(order);
        if (st != MP_OK) return fail();
        mp_graph_free(*g);
        *g = r;
        p->searched = true;
    }
    return EXIT_OK;
}

/* Runs g naively and on the stage's plan; compares every output bit for bit. */
typedef struct run_report {
    bool identical;
    size_t outputs;
    uint64_t bytes, arena;
    double naive_s, planned_s;
    const char *stage;
} run_report;

static int run(const mp_graph_t *g, const opts *o, const gs_stage *best, run_report *rr) {
    if (mp_exec_supported(g) != MP_OK) return fail();
    mp_exec_result_t a = {0}, b = {0};
    mp_exec_opts_t eo = {.seed = o->seed};
    if (mp_exec_run(g, &eo, &a) != MP_OK) return fail();
    eo.plan = &best->plan;
    eo.poison = 1;
    if (mp_exec_run(g, &eo, &b) != MP_OK) {
        mp_exec_result_free(&a);
        return fail();
    }
    rr->identical = true;
    rr->stage = best->key;
    for (size_t i = 0; i < a.n_tensors; i++) {
        if (!a.data[i]) continue;
        rr->outputs++;
        rr->bytes += a.bytes[i];
        if (!b.data[i] || a.bytes[i] != b.bytes[i] || memcmp(a.data[i], b.data[i], a.bytes[i]))
            rr->identical = false;
    }
    rr->arena = b.arena_bytes;
    rr->naive_s = a.seconds;
    rr->planned_s = b.seconds;
    mp_exec_result_free(&a);
    mp_exec_result_free(&b);
    return EXIT_OK;
}

static void print_json(const opts *o, const mp_graph_t *g, const mp_graph_stats_t *st,
                       const prep *p, const gs_result *r, const run_report *rr) {
    printf("{\"graph\":");
    cli_json_string(o->path);
    printf(",\"model\":");
    cli_json_string(mp_graph_model_name(g));
    printf(",\"shapes_checked\":%zu,\"shapes_unchecked\":%zu", p->checked, p->unchecked);
    printf(",\"train\":%s", p->trained ? "true" : "false");
    if (p->trained)
        printf(",\"backward\":{\"forward_nodes\":%zu,\"backward_nodes\":%zu,\"aggregations\":%zu,"
               "\"pruned\":%zu,\"param_grads\":%zu}",
               p->bw.forward_nodes, p->bw.backward_nodes, p->bw.aggregations, p->bw.pruned,
               p->bw.param_grads);
    printf(",\"tensors\":%zu,\"nodes\":%zu,\"steps\":%zu,\"aliases\":%zu,\"persistent_bytes\":%llu,"
           "\"include_persistent\":%s",
           st->tensors, st->nodes, st->steps, st->aliases, (unsigned long long)st->persistent_bytes,
           o->req.include_persistent ? "true" : "false");
    printf(",\"order\":{\"mode\":\"%s\"", p->searched ? "search" : "given");
    if (p->searched)
        printf(",\"given_peak\":%llu,\"searched_peak\":%llu,\"passes\":%zu",
               (unsigned long long)p->order.given_peak, (unsigned long long)p->order.searched_peak,
               p->order.passes);
    printf("},\"lower_bound\":%llu,\"lower_bound_inplace\":%llu,\"stages\":[",
           (unsigned long long)r->lower_bound, (unsigned long long)r->lower_bound_inplace);
    for (size_t i = 0; i < r->n; i++) {
        const gs_stage *s = &r->stage[i];
        printf("%s{\"stage\":", i ? "," : "");
        cli_json_string(s->key);
        if (s->skipped) {
            printf(",\"skipped\":true}");
            continue;
        }
        printf(",\"footprint\":%llu,\"inplace_ops\":%zu,\"reused\":%zu,\"ms\":%.3f,\"valid\":true}",
               (unsigned long long)s->footprint, s->n_inplace, s->n_reused, s->ms);
    }
    printf("]");
    if (o->run)
        printf(",\"run\":{\"stage\":\"%s\",\"identical\":%s,\"outputs\":%zu,\"output_bytes\":%llu,"
               "\"arena_bytes\":%llu,\"naive_s\":%.6f,\"planned_s\":%.6f}",
               rr->stage, rr->identical ? "true" : "false", rr->outputs,
               (unsigned long long)rr->bytes, (unsigned long long)rr->arena, rr->naive_s,
               rr->planned_s);
    printf("}\n");
}

static void print_text(const opts *o, const mp_graph_t *g, const mp_graph_stats_t *st,
                       const prep *p, const gs_result *r, const run_report *rr) {
    char h[32];
    const char *name = mp_graph_model_name(g);
    printf("graph          %s (%s)\n", o->path, *name ? name : "unnamed");
    printf("shapes         %zu nodes checked against the op registry, %zu unknown ops\n",
           p->checked, p->unchecked);
    if (p->trained)
        printf("backward       %zu gradient nodes for %zu forward nodes (%zu aggregations, "
               "%zu pruned, %zu parameter gradients)\n",
               p->bw.backward_nodes, p->bw.forward_nodes, p->bw.aggregations, p->bw.pruned,
               p->bw.param_grads);
    printf("tensors        %zu (%zu aliases), %zu nodes\n", st->tensors, st->aliases, st->nodes);
    printf("persistent     %s%s\n", cli_human(st->persistent_bytes, h, sizeof h),
           o->req.include_persistent ? " (planned)" : " (not planned)");
    if (p->searched) {
        char h2[32];
        double gain = p->order.given_peak
                          ? 100.0 * (1.0 - (double)p->order.searched_peak / (double)p->order.given_peak)
                          : 0.0;
        printf("order          searched: peak %s -> %s (%.1f%% lower)\n",
               cli_human(p->order.given_peak, h, sizeof h),
               cli_human(p->order.searched_peak, h2, sizeof h2), gain);
    } else {
        printf("order          as given\n");
    }
    printf("lower bound    %s (after in-place: %s)\n", cli_human(r->lower_bound, h, sizeof h),
           cli_human(r->lower_bound_inplace, (char[32]){0}, 32));
    printf("\n%-44s %14s %8s %8s\n", "stage", "memory", "/ none", "/ bound");
    uint64_t none = r->n ? r->stage[0].footprint : 0;
    for (size_t i = 0; i < r->n; i++) {
        const gs_stage *s = &r->stage[i];
        if (s->skipped) {
            printf("%-44s %14s\n", s->label, "skipped (size)");
            continue;
        }
        printf("%-44s %14s %8.3f %8.3f\n", s->label, cli_human(s->footprint, h, sizeof h),
               none ? (double)s->footprint / (double)none : 1.0,
               r->lower_bound_inplace ? (double)s->footprint / (double)r->lower_bound_inplace : 1.0);
    }
    if (o->run)
        printf("\nrun            %s: %zu outputs (%s) %s; naive %.3f s, planned %.3f s in a %s arena\n",
               rr->stage, rr->outputs, cli_human(rr->bytes, h, sizeof h),
               rr->identical ? "bit-identical to the naive run" : "DIFFER from the naive run",
               rr->naive_s, rr->planned_s, cli_human(rr->arena, (char[32]){0}, 32));
}

int cmd_graph(int argc, char **argv) {
    opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const cli_output outs[] = {{"--records-out", o.records_out}, {"--graph-out", o.graph_out}};
    if ((rc = cli_check_outputs(&o.path, 1, outs, 2))) return rc;

    mp_graph_t *g;
    if (mp_graph_load(o.path, &g) != MP_OK) return cli_read_failed("memplan", o.path, CLI_GRAPH);
    prep p = {0};
    gs_result r = {0};
    run_report rr = {0};
    mp_graph_stats_t st;
    mp_buffer_t *b = NULL;
    size_t n = 0;
    /* Shapes against the op registry, before anything is derived from them. */
    if (mp_graph_check_shapes(g, &p.unchecked) != MP_OK) {
        fprintf(stderr, "memplan: %s: %s\n", o.path, mp_last_error());
        rc = EXIT_INPUT;
        goto done;
    }
    p.checked = mp_graph_node_count(g) - p.unchecked;
    if ((rc = prepare(&o, &g, &p))) goto done;
    rc = EXIT_INPUT;
    if (mp_graph_stats(g, &st) != MP_OK) goto failed;
    if (o.records_out && (mp_graph_records(g, o.req.include_persistent, &b, &n) != MP_OK ||
                          mp_records_write(o.records_out, b, n) != MP_OK))
        goto failed;
    if (o.graph_out && mp_graph_save(g, o.graph_out) != MP_OK) goto failed;
    if ((rc = gs_compute(g, &o.req, &r))) goto done;
    if (o.run && (rc = run(g, &o, gs_best(&r), &rr))) goto done;
    bool report = !cli_stdout_output(outs, 2);   /* else stdout carries a file */
    if (report && o.json) print_json(&o, g, &st, &p, &r, &rr);
    else if (report) print_text(&o, g, &st, &p, &r, &rr);
    rc = o.run && !rr.identical ? EXIT_INVALID : EXIT_OK;
    goto done;
failed:
    rc = fail();
done:
    gs_free(&r);
    free(b);
    mp_graph_free(g);
    return rc;
}
