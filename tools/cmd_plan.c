/* cmd_plan.c -- `memplan plan`: plan a problem with one or every strategy,
 * prove each plan with the checker, print a table (or JSON), and write the
 * best plan as CSV and/or SVG. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: memplan plan [--strategy NAME|all] [-o PLAN.csv] [--svg FILE.svg] [--title TEXT]\n"
    "                    [--json] [--align N] [--time-limit S] [--pools SPEC]\n"
    "                    (RECORDS.csv | --model NAME|RECORDS.csv)\n"
    "\n"
    "Plans the buffers of RECORDS.csv (header id,first,last,size with inclusive\n"
    "times, or id,lower,upper,size half-open; an optional offset column fixes\n"
    "the buffers that give one, and the rest are planned around them) and\n"
    "prints, per strategy, the\n"
    "footprint, its ratio to the lower bound of the strategy's kind (offsets, or\n"
    "shared objects), whether the checker proved it valid, and the planning time.\n"
    "\n"
    "  --strategy NAME  a strategy from 'memplan strategies', 'all', or 'auto' (default)\n"
    "  -o FILE          write the best plan as CSV: id,offset,size[,object|,pool]\n"
    "  --svg FILE.svg   draw the best plan (time across, address up)\n"
    "                   (FILE '-': standard output, and no table is printed)\n"
    "  --title TEXT     the picture's heading (default: the file's name, without\n"
    "                   its directory and extension, or the model's name)\n"
    "  --json           print one JSON object instead of the table\n"
    "  --align N        alignment for buffers that give none (default 1)\n"
    "  --time-limit S   auto only: after the heuristics, improve the plan for up to\n"
    "                   S seconds (exact search or local improvement, both cores),\n"
    "                   printing progress to stderr, and report 'optimal' or the\n"
    "                   proven gap (default: the heuristics alone); fixed buffers\n"
    "                   stay at their offsets and only the others move; with\n"
    "                   --pools, per pool\n"
    "  --pools SPEC     memory pools filled in order, e.g. fast:256KiB,dram: each\n"
    "                   NAME[:SIZE] (no size: unlimited, last only); the plan\n"
    "                   CSV gains a pool column.  A fixed offset is in a pool:\n"
    "                   the records' optional pool column names it (empty: the\n"
    "                   first); fixed buffers are placed first, each within its\n"
    "                   pool's capacity.  With --time-limit each pool's plan is\n"
    "                   improved for its share of the time, and its proof printed;\n"
    "                   with --strategy exact each pool is searched (its fixed\n"
    "                   buffers as obstacles) and its proof printed\n"
    "  --model NAME     plan a built-in model ('memplan models') instead of a file;\n"
    "                   a name that is no built-in model but a file (records exported\n"
    "                   earlier, e.g. by 'memplan models --write') is read as RECORDS.csv\n"
    "\n"
    "Exit status: 0 done, 2 bad usage or malformed input (file:line:field named).\n";

typedef struct opts {
    const char *strategy, *out, *svg, *path, *model, *title;
    bool json;
    uint64_t align;
    double time_limit;          /* auto --time-limit S; 0: none */
    const char *pools;          /* --pools SPEC, or NULL */
} opts;

typedef struct result {
    const char *name;
    mp_plan_t plan;
    double ms;
    bool valid, skipped, ran;
    mp_exact_report_t exact;    /* the "exact" row's proof, or anytime auto's */
    bool anytime;               /* auto with --time-limit */
} result;

static int parse(int argc, char **argv, opts *o) {
    *o = (opts){.strategy = "auto", .align = 1};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (more && !strcmp(a, "--strategy")) {
            o->strategy = argv[++i];
        } else if (more && !strcmp(a, "-o")) {
            o->out = argv[++i];
        } else if (more && !strcmp(a, "--svg")) {
            o->svg = argv[++i];
        } else if (more && !strcmp(a, "--title")) {
            o->title = argv[++i];
        } else if (more && !strcmp(a, "--model")) {
            o->model = argv[++i];
        } else if (more && !strcmp(a, "--align")) {
            if (!cli_parse_u64("--align", argv[++i], &o->align)) return EXIT_INPUT;
            if (o->align & (o->align - 1)) {
                fprintf(stderr, "memplan: --align must be a power of two\n");
                return EXIT_INPUT;
            }
        } else if (more && !strcmp(a, "--pools")) {
            o->pools = argv[++i];
        } else if (more && !strcmp(a, "--time-limit")) {
            char *end;
            const char *v = argv[++i];
            o->time_limit = strtod(v, &end);
            if (!*v || *end || !(o->time_limit > 0) || o->time_limit > 1e6) {
                fprintf(stderr, "memplan plan: --time-limit wants seconds > 0, not '%s'\n", v);
                return EXIT_INPUT;
            }
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "memplan plan: unknown or incomplete option '%s'\n%s", a, help);
            return EXIT_INPUT;
        } else if (o->path) {
            fprintf(stderr, "memplan plan: more than one records file\n");
            return EXIT_INPUT;
        } else {
            o->path = a;
        }
    }
    if (!o->path == !o->model) {
        fprintf(stderr, "memplan plan: give one records file or --model NAME\n%s", help);
        return EXIT_INPUT;
    }
    if (strcmp(o->strategy, "all") && !mp_strategy_find(o->strategy))
        return cli_unknown("memplan plan", "strategy", o->strategy, cli_strategy_name,
                           "see 'memplan strategies'");
    if (o->pools && (!strcmp(o->strategy, "all") || o->svg)) {
        fprintf(stderr, "memplan plan: --pools works without --strategy all and --svg\n");
        return EXIT_INPUT;
    }
    if (o->time_limit > 0 && strcmp(o->strategy, "auto")) {
        fprintf(stderr, "memplan plan: --time-limit works with --strategy auto only\n");
        return EXIT_INPUT;
    }
    return o->svg && !cli_svg_name("--svg", o->svg) ? EXIT_INPUT : EXIT_OK;
}

/* Anytime auto's progress on stderr (prefix: "" or the pool). */
static void progress_line(const char *prefix, const mp_anytime_progress_t *p) {
    double lb = (double)p->lower_bound, gap = lb > 0 ? 100.0 * ((double)p->footprint - lb) / lb : 0;
    fprintf(stderr, "memplan: %s%7.2f s  footprint %llu  lower bound %llu  gap %.3f%%  (%s)\n",
            prefix, p->seconds, (unsigned long long)p->footprint,
            (unsigned long long)p->lower_bound, gap, p->source);
}

static void progress(void *ctx, const mp_anytime_progress_t *p) {
    (void)ctx;
    progress_line("", p);
}

static void pool_progress(void *ctx, size_t pool, const mp_anytime_progress_t *p) {
    const mp_pool_t *pools = ctx;
    char prefix[64];
    snprintf(prefix, sizeof prefix, "pool '%.40s': ", pools[pool].name);
    progress_line(prefix, p);
}

/* --pools --time-limit or --strategy exact: what each pool's search proved
 * (exact: no plan "without the limit" to name). */
static void print_pool_proofs(const mp_pool_t *pools, size_t k, const mp_exact_report_t *r,
                              bool json, bool exact) {
    for (size_t j = 0; j < k; j++) {
        double lb = (double)r[j].lower_bound;
        double gap = lb > 0 ? 100.0 * ((double)r[j].footprint - lb) / lb : 0;
        if (json) {
            printf("%s{\"pool\":", j ? "," : "");
            cli_json_string(pools[j].name);
            printf(",\"status\":\"%s\",\"footprint\":%llu,\"lower_bound\":%llu,\"start\":%llu,"
                   "\"seconds\":%.3f,\"hit_limit\":%s}",
                   mp_exact_status_name(r[j].status), (unsigned long long)r[j].footprint,
                   (unsigned long long)r[j].lower_bound, (unsigned long long)r[j].start,
                   r[j].seconds, r[j].hit_limit ? "true" : "false");
            continue;
        }
        const char *status = r[j].status == MP_EXACT_OPTIMAL ? "optimal (proven)" : "gap";
        if (exact)
            printf("pool %s exact: %s, lower bound %llu for its buffers; %.2f s\n", pools[j].name,
                   status, (unsigned long long)r[j].lower_bound, r[j].seconds);
        else
            printf("pool %s --time-limit: %s, lower bound %llu for its buffers; without the limit %llu; %.2f s\n",
                   pools[j].name, status, (unsigned long long)r[j].lower_bound,
                   (unsigned long long)r[j].start, r[j].seconds);
        if (r[j].status != MP_EXACT_OPTIMAL)
            printf("pool %s: proven gap %.3f%% above the lower bound%s\n", pools[j].name, gap,
                   !r[j].hit_limit ? "" : exact ? " (stopped by MEMPLAN_EXACT_TIME/_NODES)" : " (time ran out)");
    }
}

/* memplan plan --pools: the records read with the pools (their pool
 * column), one strategy over the pools, a table per pool. */
static int plan_pools(const opts *o) {
    char buf[1024], h1[32];
    mp_pool_t pools[16];
    size_t k = cli_parse_pools("memplan plan", o->pools, buf, sizeof buf, pools, 16);
    if (!k) return EXIT_INPUT;
    mp_buffer_t *b = NULL;
    uint64_t *fixed = NULL;
    size_t *fpool = NULL, n = 0;
    int rc;
    if (o->path && mp_records_read_pools(o->path, pools, k, &b, &n, &fixed, &fpool) != MP_OK)
        return cli_read_failed("memplan", o->path, CLI_RECORDS);
    if (!o->path && (rc = cli_load(NULL, o->model, &b, &n)) != EXIT_OK) return rc;
    cli_default_align(b, n, o->align);
    mp_bounds_t bd;
    mp_pool_plan_t p = {0};
    mp_exact_report_t rep[16];
    mp_pool_opts_t po = {.strategy = o->strategy, .fixed = fixed, .fixed_pool = fpool,
                         .time_limit = o->time_limit, .ctx = pools,
                         .progress = o->time_limit > 0 ? pool_progress : NULL};
    double t0 = cli_now_ms();
    rc = EXIT_INPUT;
    if (mp_bounds_compute(b, n, &bd) != MP_OK ||
             mp_plan_pools_opts(b, n, pools, k, &po, &p, rep) != MP_OK)
        fprintf(stderr, "memplan: %s\n", mp_last_error());
    else
        rc = EXIT_OK;
    if (rc != EXIT_OK) {
        free(b), free(fixed), free(fpool);
        return rc;
    }
    double ms = cli_now_ms() - t0;
    bool valid = mp_pool_plan_check_fixed(b, n, pools, k, fixed, fpool, &p) == MP_OK;
    bool exact = !strcmp(o->strategy, "exact"), proofs = o->time_limit > 0 || exact;
    if (!valid) fprintf(stderr, "memplan: %s made an invalid pool plan: %s\n", o->strategy, mp_last_error());
    if (o->json) {
        printf("{\"buffers\":%zu,\"lower_bound\":%llu,\"strategy\":", n, (unsigned long long)bd.offsets);
        cli_json_string(p.strategy);
        printf(",\"ms\":%.3f,\"valid\":%s,", ms, valid ? "true" : "false");
        cli_pools_print(pools, k, &p, true);
        if (proofs) printf(",\"proofs\":["), print_pool_proofs(pools, k, rep, true, exact), printf("]");
        printf("}\n");
    } else if (!cli_stdout_output((const cli_output[]){{"-o", o->out}}, 1)) {
        printf("%zu buffers; lower bound %s (offsets, one pool); strategy %s, %.3f ms, valid: %s\n\n",
               n, cli_human(bd.offsets, h1, sizeof h1), p.strategy, ms, valid ? "yes" : "NO");
        cli_pools_print(pools, k, &p, false);
        if (proofs) printf("\n"), print_pool_proofs(pools, k, rep, false, exact);
    }
    rc = valid ? EXIT_OK : EXIT_INVALID;
    if (o->out && mp_pool_plan_write_csv(o->out, b, n, pools, &p) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        rc = EXIT_INPUT;
    }
    mp_pool_plan_free(&p);
    free(b), free(fixed), free(fpool);
    return rc;
}

/* Runs and checks one strategy (around the fixed offsets, when not NULL);
 * returns false on a planner failure. */
static bool run(const mp_buffer_t *b, size_t n, const uint64_t *fixed, result *r,
                double time_limit) {
    const mp_strategy_info_t *info = mp_strategy_find(r->name);
    if (info->all_limit && n > info->all_limit && r->skipped) return true;
    r->skipped = false;
    if (n >= 100000) fprintf(stderr, "memplan: planning %zu buffers with %s...\n", n, r->name);
    double t0 = cli_now_ms();
    /* "exact" through its own call (same defaults) for the proof it reports */
    mp_status s;
    if (time_limit > 0) { /* auto with a time limit (parse allows no other) */
        mp_auto_opts_t ao = {.time_limit = time_limit, .progress = progress, .fixed = fixed};
        r->anytime = true;
        s = mp_plan_auto_opts(b, n, &ao, &r->plan, &r->exact);
    } else if (!strcmp(r->name, "exact")) {
        mp_exact_opts_t xo;
        mp_exact_opts_default(&xo);
        xo.fixed = fixed;
        s = mp_exact_solve(b, n, &xo, &r->plan, &r->exact);
    } else if (fixed) {
        s = mp_plan_compute_fixed(b, n, fixed, r->name, &r->plan);
    } else {
        s = mp_plan_compute(b, n, r->name, &r->plan);
    }
    r->ms = cli_now_ms() - t0;
    if (s != MP_OK) {
        fprintf(stderr, "memplan: %s: %s\n", r->name, mp_last_error());
        return false;
    }
    r->ran = true;
    r->valid = mp_plan_check_fixed(b, n, fixed, &r->plan, NULL) == MP_OK;
    if (!r->valid) fprintf(stderr, "memplan: %s made an invalid plan: %s\n", r->name, mp_last_error());
    return true;
}

/* Each ratio is to the bound of its strategy's kind: no shared-objects plan
 * can go below the objects bound, so measuring one against the (lower)
 * offsets bound would count a gap no such plan can close. */
static bool objects_kind(const result *r) {
    return mp_strategy_find(r->name)->kind == MP_KIND_OBJECTS;
}

static const char *bound_name(const result *r) { return objects_kind(r) ? "objects" : "offsets"; }

static double ratio(const result *r, const mp_bounds_t *bd) {
    uint64_t lb = objects_kind(r) ? bd->objects : bd->offsets;
    return lb ? (double)r->plan.footprint / (double)lb : 1.0;
}

static void print_table(const result *r, size_t k, const mp_bounds_t *bd, size_t n,
                        const result *best) {
    char h1[32], h2[32], h3[32];
    printf("%zu buffers; naive %s, lower bound %s (offsets), %s (shared objects)\n\n", n,
           cli_human(bd->naive, h1, sizeof h1), cli_human(bd->offsets, h2, sizeof h2),
           cli_human(bd->objects, h3, sizeof h3));
    printf("%-30s %16s %12s %7s %-8s %6s %10s\n", "strategy", "footprint", "", "ratio",
           "to bound", "valid", "ms");
    for (size_t i = 0; i < k; i++) {
        if (!r[i].ran) {
            printf("%-30s %16s %12s %7s %-8s %6s %10s\n", r[i].name, "skipped", "", "", "", "", "");
            continue;
        }
        char label[64];
        snprintf(label, sizeof label, "%s%s%s", r[i].name, strcmp(r[i].name, "auto") ? "" : " -> ",
                 strcmp(r[i].name, "auto") ? "" : r[i].plan.strategy);
        printf("%-30s %16llu %12s %7.4f %-8s %6s %10.3f%s\n", label,
               (unsigned long long)r[i].plan.footprint, cli_human(r[i].plan.footprint, h1, sizeof h1),
               ratio(&r[i], bd), bound_name(&r[i]), r[i].valid ? "yes" : "NO", r[i].ms,
               &r[i] == best ? "  *" : "");
    }
    if (best)
        printf("\nbest: %s%s\n", best->name,
               best->plan.footprint == bd->offsets ? " (meets the lower bound: optimal)" : "");
    for (size_t i = 0; i < k; i++)
        if (r[i].ran && !strcmp(r[i].name, "exact"))
            printf("exact: %s, lower bound %llu%s\n",
                   r[i].exact.status == MP_EXACT_OPTIMAL ? "optimal (proven)" : "gap",
                   (unsigned long long)r[i].exact.lower_bound,
                   r[i].exact.hit_limit ? " (stopped by MEMPLAN_EXACT_TIME/_NODES)" : "");
    for (size_t i = 0; i < k; i++) {
        const mp_exact_report_t *x = &r[i].exact;
        if (!r[i].ran || !r[i].anytime) continue;
        printf("auto --time-limit: %s, lower bound %llu; heuristics alone %llu (%s); %.2f s\n",
               x->status == MP_EXACT_OPTIMAL ? "optimal (proven)" : "gap",
               (unsigned long long)x->lower_bound, (unsigned long long)x->start, x->start_strategy,
               x->seconds);
        if (x->status != MP_EXACT_OPTIMAL)
            printf("proven gap: %.3f%% above the lower bound (time ran out)\n",
                   100.0 * ((double)x->footprint - (double)x->lower_bound) / (double)x->lower_bound);
    }
    for (size_t i = 0; i < k; i++)
        if (!r[i].ran)
            printf("skipped %s: above %zu buffers (see 'memplan strategies')\n", r[i].name,
                   mp_strategy_find(r[i].name)->all_limit);
}

static void print_json(const result *r, size_t k, const mp_bounds_t *bd, size_t n,
                       const result *best) {
    printf("{\"buffers\":%zu,\"naive\":%llu,\"lower_bound\":%llu,\"objects_lower_bound\":%llu,"
           "\"results\":[",
           n, (unsigned long long)bd->naive, (unsigned long long)bd->offsets,
           (unsigned long long)bd->objects);
    const char *sep = "";
    for (size_t i = 0; i < k; i++) {
        if (!r[i].ran) continue;
        printf("%s{\"strategy\":\"%s\",\"footprint\":%llu,\"ratio\":%.6f,\"valid\":%s,"
               "\"ms\":%.3f,\"bound\":\"%s\"",
               sep, r[i].name, (unsigned long long)r[i].plan.footprint, ratio(&r[i], bd),
               r[i].valid ? "true" : "false", r[i].ms, bound_name(&r[i]));
        if (!strcmp(r[i].name, "auto")) printf(",\"winner\":\"%s\"", r[i].plan.strategy);
        putchar('}');
        sep = ",";
    }
    printf("],\"skipped\":[");
    sep = "";
    for (size_t i = 0; i < k; i++)
        if (!r[i].ran) printf("%s\"%s\"", sep, r[i].name), sep = ",";
    printf("],\"best\":\"%s\"}\n", best ? best->name : "");
}

static int write_outputs(const opts *o, const mp_buffer_t *b, size_t n, const result *best,
                         const mp_bounds_t *bd) {
    if (!best) return EXIT_OK;
    char title[512];
    cli_title(title, sizeof title, o->title, o->model ? o->model : o->path);
    mp_svg_opts_t so = {.title = title, .lower_bound = objects_kind(best) ? bd->objects : bd->offsets,
                        .bound_name = bound_name(best)};
    if ((o->out && mp_plan_write_csv(o->out, b, n, &best->plan) != MP_OK) ||
        (o->svg && mp_plan_write_svg_opts(o->svg, b, n, &best->plan, &so) != MP_OK)) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        return EXIT_INPUT;
    }
    return EXIT_OK;
}

int cmd_plan(int argc, char **argv) {
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const cli_output outs[] = {{"-o", o.out}, {"--svg", o.svg}};
    const char *in = o.path ? o.path : o.model;
    if ((rc = cli_check_outputs(&in, 1, outs, 2))) return rc;
    if (o.pools) return plan_pools(&o);
    mp_buffer_t *b = NULL;
    uint64_t *fixed = NULL; /* the records' offset column, if any */
    size_t n = 0;
    if (o.path && mp_records_read_fixed(o.path, &b, &n, &fixed) != MP_OK)
        return cli_read_failed("memplan", o.path, CLI_RECORDS);
    if (!o.path && (rc = cli_load(o.path, o.model, &b, &n)) != EXIT_OK) return rc;
    cli_default_align(b, n, o.align);
    mp_bounds_t bd;
    size_t ns = mp_strategy_count(), k = 0;
    result *r = calloc(ns, sizeof *r);
    if (!r || mp_bounds_compute(b, n, &bd) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", r ? mp_last_error() : "out of memory");
        free(r), free(b), free(fixed);
        return EXIT_INPUT;
    }
    bool all = !strcmp(o.strategy, "all");
    if (all && fixed)
        fprintf(stderr, "memplan plan: fixed offsets: the shared-object strategies cannot take them, skipped\n");
    for (size_t i = 0; i < ns; i++) {
        const mp_strategy_info_t *info = mp_strategy_info(i);
        if (all ? info->kind == MP_KIND_META : strcmp(info->name, o.strategy)) continue;
        if (all && fixed && info->kind == MP_KIND_OBJECTS)
            continue; /* they cannot take fixed offsets: said below */
        r[k] = (result){.name = info->name, .skipped = all};
        if (!run(b, n, fixed, &r[k++], o.time_limit)) rc = EXIT_INPUT;
    }
    const result *best = NULL;
    for (size_t i = 0; i < k; i++)
        if (r[i].ran && r[i].valid && (!best || r[i].plan.footprint < best->plan.footprint))
            best = &r[i];
    if (rc == EXIT_OK) {
        bool report = !cli_stdout_output(outs, 2);   /* else stdout carries a file */
        if (report && o.json) print_json(r, k, &bd, n, best);
        else if (report) print_table(r, k, &bd, n, best);
        rc = write_outputs(&o, b, n, best, &bd);
        for (size_t i = 0; i < k; i++)
            if (r[i].ran && !r[i].valid) rc = EXIT_INVALID;
    }
    for (size_t i = 0; i < k; i++) mp_plan_free(&r[i].plan);
    free(r);
    free(b), free(fixed);
    return rc;
}
