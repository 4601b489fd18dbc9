/* cmd_list.c -- `memplan strategies` and `memplan models`: what is there,
 * as a table or (--json) as one object. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char *const kind_name[] = {"offsets", "objects", "meta"};

static int parse_flags(int argc, char **argv, const char *usage, bool *json) {
    *json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            puts(usage);
            return -1;
        }
        if (strcmp(argv[i], "--json")) {
            fprintf(stderr, "memplan: unexpected argument '%s'\n%s\n", argv[i], usage);
            return EXIT_INPUT;
        }
        *json = true;
    }
    return EXIT_OK;
}

int cmd_strategies(int argc, char **argv) {
    bool json;
    int rc = parse_flags(argc, argv,
                         "usage: memplan strategies [--json]\n\n"
                         "Lists every strategy, its kind and its source.",
                         &json);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    if (!json) printf("%-30s %-8s %-36s %s\n", "strategy", "kind", "source", "what it does");
    else printf("{\"strategies\":[");
    for (size_t i = 0; i < mp_strategy_count(); i++) {
        const mp_strategy_info_t *s = mp_strategy_info(i);
        if (json) {
            printf("%s{\"name\":", i ? "," : "");
            cli_json_string(s->name);
            printf(",\"kind\":\"%s\",\"source\":", kind_name[s->kind]);
            cli_json_string(s->source);
            printf(",\"summary\":");
            cli_json_string(s->summary);
            printf(",\"all_limit\":%zu}", s->all_limit);
            continue;
        }
        printf("%-30s %-8s %-36s %s", s->name, kind_name[s->kind], s->source, s->summary);
        if (s->all_limit) printf(" ('all' skips it above %zu buffers)", s->all_limit);
        putchar('\n');
    }
    if (json) printf("]}\n");
    return EXIT_OK;
}

/* Writes every built-in model's records to DIR/NAME.records.csv. */
static int write_models(const char *dir) {
    size_t k;
    const cli_model *m = cli_models(&k);
    for (size_t i = 0; i < k; i++) {
        mp_buffer_t *b;
        size_t n;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.records.csv", dir, m[i].name);
        if (m[i].build(&b, &n) != MP_OK) {
            fprintf(stderr, "memplan: %s: out of memory\n", m[i].name);
            return EXIT_INPUT;
        }
        mp_status s = mp_records_write(path, b, n);
        free(b);
        if (s != MP_OK) {
            fprintf(stderr, "memplan: %s\n", mp_last_error());
            return EXIT_INPUT;
        }
        printf("%s\n", path);
    }
    return EXIT_OK;
}

int cmd_models(int argc, char **argv) {
    static const char usage[] =
        "usage: memplan models [--json] [--write DIR]\n\n"
        "Lists the built-in models ('memplan plan --model NAME'); with --write, writes\n"
        "each one's records to DIR/NAME.records.csv.";
    if (argc == 3 && !strcmp(argv[1], "--write")) return write_models(argv[2]);
    bool json;
    int rc = parse_flags(argc, argv, usage, &json);
    if (rc) return rc < 0 ? EXIT_OK : rc;
    size_t k;
    const cli_model *m = cli_models(&k);
    if (json) printf("{\"models\":[");
    for (size_t i = 0; i < k; i++) {
        if (!json) {
            printf("%-16s %s\n", m[i].name, m[i].about);
            continue;
        }
        printf("%s{\"name\":", i ? "," : "");
        cli_json_string(m[i].name);
        printf(",\"about\":");
        cli_json_string(m[i].about);
        putchar('}');
    }
    if (json) printf("]}\n");
    return EXIT_OK;
}
