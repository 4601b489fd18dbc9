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
    "\n"
    "'memplan COMMAND --help' describes one command.  Formats: docs/formats.md.\n";

int main(int argc, char **argv) {
    static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"plan", cmd_plan},           {"check", cmd_check},   {"bounds", cmd_bounds},
        {"strategies", cmd_strategies}, {"models", cmd_models}, {"trace", cmd_trace},
        {"graph", cmd_graph},         {"remat", cmd_remat},
    };
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_INPUT : EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("memplan %s\n", MP_VERSION);
        return EXIT_OK;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "memplan: unknown command '%s'\n\n%s", argv[1], usage);
    return EXIT_INPUT;
}
