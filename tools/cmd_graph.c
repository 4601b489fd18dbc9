/* cmd_graph.c -- `memplan graph FILE`: load and validate a memplan-graph/1
 * file, derive its usage records (liveness), and print their size, the
 * offset lower bound and the plan "auto" finds. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: memplan graph [--json] [--include-persistent] [--records-out RECORDS.csv]\n"
    "                     GRAPH.json[.gz]\n"
    "\n"
    "Reads a memplan-graph/1 file (plain or gzip; docs/graph-format.md), checks\n"
    "it, derives one usage record per tensor that owns memory, and prints the\n"
    "tensors, nodes and steps, the bytes of parameters and gradients, the naive\n"
    "total of the records (every tensor its own memory), the offset lower bound\n"
    "(most bytes live at one step) and the footprint of the 'auto' plan with its\n"
    "ratio to the bound.  The plan is proven by the checker.\n"
    "\n"
    "  --json                print one JSON object instead of the text\n"
    "  --include-persistent  also record parameters and gradients (live at every step)\n"
    "  --records-out FILE    write the records as CSV: id,first,last,size\n"
    "\n"
    "Exit status: 0 done, 2 bad usage or a malformed graph (the message names the\n"
    "file and the JSON path of the bad value).\n";

static int fail(void) {
    fprintf(stderr, "memplan: %s\n", mp_last_error());
    return EXIT_INPUT;
}

int cmd_graph(int argc, char **argv) {
    const char *path = NULL, *records_out = NULL;
    bool json = false, persistent = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--include-persistent")) {
            persistent = true;
        } else if (i + 1 < argc && !strcmp(argv[i], "--records-out")) {
            records_out = argv[++i];
        } else if ((argv[i][0] == '-' && argv[i][1]) || path) {
            fprintf(stderr, "memplan graph: unexpected argument '%s'\n%s", argv[i], help);
            return EXIT_INPUT;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        fprintf(stderr, "memplan graph: give one graph file\n%s", help);
        return EXIT_INPUT;
    }

    mp_graph_t *g;
    if (mp_graph_load(path, &g) != MP_OK) return fail();
    mp_graph_stats_t st;
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_bounds_t bd = {0};
    mp_plan_t plan = {0};
    mp_auto_report_t rep = {0};
    int rc = EXIT_INPUT;
    if (mp_graph_stats(g, &st) != MP_OK || mp_graph_records(g, persistent, &b, &n) != MP_OK) {
        rc = fail();
        goto done;
    }
    if (records_out && mp_records_write(records_out, b, n) != MP_OK) {
        rc = fail();
        goto done;
    }
    if (n && (mp_bounds_compute(b, n, &bd) != MP_OK || mp_plan_auto(b, n, &plan, &rep) != MP_OK ||
              mp_plan_check(b, n, &plan, NULL) != MP_OK)) {
        rc = fail();
        goto done;
    }
    double ratio = bd.offsets ? (double)plan.footprint / (double)bd.offsets : 1.0;
    const char *winner = rep.winner ? rep.winner : "-";
    if (json) {
        printf("{\"graph\":");
        cli_json_string(path);
        printf(",\"model\":");
        cli_json_string(mp_graph_model_name(g));
        printf(",\"tensors\":%zu,\"nodes\":%zu,\"steps\":%zu,\"aliases\":%zu,"
               "\"persistent_bytes\":%llu,\"include_persistent\":%s,\"records\":%zu,"
               "\"naive\":%llu,\"lower_bound\":%llu,\"auto\":{\"winner\":",
               st.tensors, st.nodes, st.steps, st.aliases, (unsigned long long)st.persistent_bytes,
               persistent ? "true" : "false", n, (unsigned long long)bd.naive,
               (unsigned long long)bd.offsets);
        cli_json_string(winner);
        printf(",\"footprint\":%llu,\"ratio\":%.6f,\"optimal\":%s,\"valid\":true}}\n",
               (unsigned long long)plan.footprint, ratio, plan.footprint == bd.offsets ? "true" : "false");
    } else {
        char h[32];
        printf("graph                    %s (%s)\n", path, *mp_graph_model_name(g) ? mp_graph_model_name(g) : "unnamed");
        printf("tensors                  %zu (%zu aliases)\n", st.tensors, st.aliases);
        printf("nodes                    %zu\n", st.nodes);
        printf("steps                    %zu\n", st.steps);
        printf("persistent bytes         %llu (%s)%s\n", (unsigned long long)st.persistent_bytes,
               cli_human(st.persistent_bytes, h, sizeof h), persistent ? ", in the records" : "");
        printf("records                  %zu\n", n);
        printf("naive %-18s %llu (%s)\n", persistent ? "(all)" : "(activations)",
               (unsigned long long)bd.naive, cli_human(bd.naive, h, sizeof h));
        printf("lower bound (offsets)    %llu (%s)\n", (unsigned long long)bd.offsets,
               cli_human(bd.offsets, h, sizeof h));
        printf("auto footprint           %llu (%s), ratio %.4f, by %s%s\n",
               (unsigned long long)plan.footprint, cli_human(plan.footprint, h, sizeof h), ratio,
               winner, plan.footprint == bd.offsets ? ", optimal" : "");
    }
    rc = EXIT_OK;
done:
    mp_plan_free(&plan);
    free(b);
    mp_graph_free(g);
    return rc;
}
