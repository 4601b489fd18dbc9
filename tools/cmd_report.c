/* cmd_report.c -- `memplan report INPUT -o PAGE.html`: one self-contained
 * HTML page about a records file, a graph or a trace (what the input is
 * comes from its first bytes, tools/cli_kind.c): the strategy or stage
 * table with ratios to the right bound, the smallest plan drawn, the
 * memory-load curve and what is live at its peak (tools/report_*.c). */
#include "report.h"

#include <string.h>
#include <strings.h>
#include <sys/stat.h>

static const char help[] =
    "usage: memplan report [--title TEXT] [--train] [--include-persistent] -o PAGE.html INPUT\n"
    "\n"
    "Writes one self-contained HTML page (inline CSS, SVG and script; no network)\n"
    "about INPUT, which is one of:\n"
    "  a records CSV     every strategy, each against the lower bound of its kind\n"
    "  a graph (.json,   the stages of 'memplan graph': none, in-place, sharing, every\n"
    "   .json.gz)        planner placing the in-place storages, and the same after an\n"
    "                    order search\n"
    "  a trace           statistics, the period, every strategy on one iteration\n"
    "and, for each, the smallest plan as an interactive picture (hover: name, op,\n"
    "shape, size, lifetime; wheel or buttons: zoom on time), the memory-load curve\n"
    "with its peak marked and the tensors live at the peak.  Every plan is proven\n"
    "by the checker.\n"
    "\n"
    "  -o PAGE.html          the page ('-': standard output)\n"
    "  --title TEXT          its title (default: the graph's model name, else the\n"
    "                        file's name without directory and extension)\n"
    "  --train               graphs: add the backward pass (and a loss when the graph\n"
    "                        has none) and report the training graph\n"
    "  --include-persistent  graphs: plan parameters and gradients too\n"
    "\n"
    "Exit status: 0 done, 1 a plan was rejected by the checker, 2 bad usage or\n"
    "malformed input (the message names the file, line and field).\n";

typedef struct opts {
    const char *path, *out, *title;
    rp_graph_opts graph;
} opts;

static int usage(const char *msg, const char *arg) {
    fprintf(stderr, "memplan report: %s%s%s\n%s", msg, arg ? " " : "", arg ? arg : "", help);
    return EXIT_INPUT;
}

static int parse(int argc, char **argv, opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(help, stdout);
            return -1;
        } else if (more && !strcmp(a, "-o")) {
            o->out = argv[++i];
        } else if (more && !strcmp(a, "--title")) {
            o->title = argv[++i];
        } else if (!strcmp(a, "--train")) {
            o->graph.train = true;
        } else if (!strcmp(a, "--include-persistent")) {
            o->graph.include_persistent = true;
        } else if (a[0] == '-' && a[1]) {
            return usage("unknown or incomplete option", a);
        } else if (o->path) {
            return usage("more than one input:", a);
        } else {
            o->path = a;
        }
    }
    if (!o->path) return usage("give one input file (records CSV, graph or trace)", NULL);
    if (!o->out) return usage("give -o PAGE.html", NULL);
    /* As with SVG: a page named x.png would mislead ("-", FIFOs and
     * devices take any name). */
    size_t len = strlen(o->out);
    struct stat st;
    bool named = (len >= 5 && !strcasecmp(o->out + len - 5, ".html")) ||
                 (len >= 4 && !strcasecmp(o->out + len - 4, ".htm"));
    if (!named && strcmp(o->out, "-") &&
        !(stat(o->out, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "memplan report: -o %s: the page is HTML; name the file .html\n", o->out);
        return EXIT_INPUT;
    }
    return EXIT_OK;
}

int cmd_report(int argc, char **argv) {
    opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    const cli_output outs[] = {{"-o", o.out}};
    if ((rc = cli_check_outputs(&o.path, 1, outs, 1))) return rc;
    cli_kind kind = cli_sniff(o.path);
    rp_report r = {.input = o.path};
    if ((o.graph.train || o.graph.include_persistent) && kind != CLI_GRAPH) {
        fprintf(stderr, "memplan report: --train and --include-persistent are for graphs; "
                        "%s is not a memplan-graph/1 file\n",
                o.path);
        return EXIT_INPUT;
    }
    if (kind == CLI_GRAPH) rc = rp_from_graph(&r, o.path, &o.graph);
    else if (kind == CLI_TRACE) rc = rp_from_trace(&r, o.path);
    else if (kind == CLI_PLAN) rc = cli_read_failed("memplan", o.path, CLI_RECORDS);
    else rc = rp_from_records(&r, o.path);   /* CLI_OTHER too: the reader says what is wrong */
    if (rc == EXIT_OK) {
        if (o.title || !r.title[0]) cli_title(r.title, sizeof r.title, o.title, o.path);
        rc = rp_write_html(&r, o.out);
        if (rc == EXIT_OK && strcmp(o.out, "-")) printf("wrote %s\n", o.out);
    }
    rp_free(&r);
    return rc;
}
