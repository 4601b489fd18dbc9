/* cmd_list.c -- `memplan strategies` and `memplan models`: what is there. */
#include "cli.h"

#include <string.h>

int cmd_strategies(int argc, char **argv) {
    (void)argv;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        puts("usage: memplan strategies\n\nLists every strategy, its kind and its source.");
        return EXIT_OK;
    }
    static const char *kind[] = {"offsets", "objects", "meta"};
    printf("%-30s %-8s %-36s %s\n", "strategy", "kind", "source", "what it does");
    for (size_t i = 0; i < mp_strategy_count(); i++) {
        const mp_strategy_info_t *s = mp_strategy_info(i);
        printf("%-30s %-8s %-36s %s", s->name, kind[s->kind], s->source, s->summary);
        if (s->all_limit) printf(" ('all' skips it above %zu buffers)", s->all_limit);
        putchar('\n');
    }
    return EXIT_OK;
}

int cmd_models(int argc, char **argv) {
    (void)argc, (void)argv;
    size_t k;
    const cli_model *m = cli_models(&k);
    for (size_t i = 0; i < k; i++) printf("%-16s %s\n", m[i].name, m[i].about);
    return EXIT_OK;
}
