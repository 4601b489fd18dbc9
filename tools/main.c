/* main.c -- the memplan command: dispatch to one subcommand per file.
 * Exit codes: 0 success, 1 an invalid plan (check), 2 bad usage or input. */
#include "cli.h"

#include <string.h>

static const char usage[] =
    "usage: memplan COMMAND [OPTIONS] [FILES]\n"
    "\n"
    "Plans where every buffer of a neural network lives so that buffers whose\n"
    "lifetimes do not overlap share memory.\n"
    "\n"
    "commands:\n"
    "  plan        plan a records CSV (or a built-in model) with one or all strategies\n"
    "  check       prove a plan CSV valid for a records CSV\n"
    "  bounds      print the naive total and the two lower bounds\n"
    "  strategies  list the strategies and the papers they come from\n"
    "  models      list the built-in models\n"
    "  trace       statistics, records, period and SVG of a malloc/free trace\n"
    "  graph       check a computation graph, derive its records and plan them\n"
    "  remat       train in less memory: recomputation policies, budgets, --run\n"
    "  report      one HTML page: strategies, the best plan, memory load and peak\n"
    "\n"
    "'memplan help COMMAND' (or 'memplan COMMAND --help') describes one command.\n"
    "Formats: docs/formats.md.\n";

typedef struct command {
    const char *name;
    int (*fn)(int, char **);
} command;

static const command cmds[] = {
    {"plan", cmd_plan},           {"check", cmd_check},   {"bounds", cmd_bounds},
    {"strategies", cmd_strategies}, {"models", cmd_models}, {"trace", cmd_trace},
    {"graph", cmd_graph},         {"remat", cmd_remat},   {"swap", cmd_swap},
    {"report", cmd_report},
};
enum { N_CMDS = sizeof cmds / sizeof cmds[0] };

static const char *cmd_name(size_t i) { return i < N_CMDS ? cmds[i].name : NULL; }

static const command *find(const char *name) {
    for (size_t i = 0; i < N_CMDS; i++)
        if (!strcmp(name, cmds[i].name)) return &cmds[i];
    return NULL;
}

/* `memplan help [COMMAND]`: the command's own --help, so the two never
 * drift apart. */
static int help(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "help")) {
        fputs(usage, stdout);
        return EXIT_OK;
    }
    const command *c = find(argv[1]);
    if (!c) return cli_unknown("memplan help", "command", argv[1], cmd_name, "see 'memplan help'");
    static char opt[] = "--help";
    char *args[] = {argv[1], opt, NULL};
    return c->fn(2, args);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs(usage, stderr);
        return EXIT_INPUT;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help"))
        return help(argc - 1, argv + 1);
    if (!strcmp(argv[1], "--version")) {
        printf("memplan %s\n", MP_VERSION);
        return EXIT_OK;
    }
    const command *c = find(argv[1]);
    if (c) return c->fn(argc - 1, argv + 1);
    return cli_unknown("memplan", "command", argv[1], cmd_name, "see 'memplan help'");
}
