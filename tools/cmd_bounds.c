/* cmd_bounds.c -- `memplan bounds RECORDS.csv`: the naive total and the
 * lower bounds for offsets and for shared objects. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: memplan bounds [--json] [--align N] (RECORDS.csv | --model NAME)\n"
    "\n"
    "Prints the naive total (every buffer its own region), the offset lower\n"
    "bound (max over time of live bytes) and the shared-object lower bound (sum\n"
    "of positional maxima, pisarchyk2020 sec. 4.1).  --model takes a built-in\n"
    "model ('memplan models') or, when NAME is not one, a records file.\n";

int cmd_bounds(int argc, char **argv) {
    const char *path = NULL, *model = NULL;
    bool json = false;
    uint64_t align = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (i + 1 < argc && !strcmp(argv[i], "--model")) {
            model = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--align")) {
            if (!cli_parse_u64("--align", argv[++i], &align)) return EXIT_INPUT;
            if (align & (align - 1)) {
                fprintf(stderr, "memplan: --align must be a power of two\n");
                return EXIT_INPUT;
            }
        } else if ((argv[i][0] == '-' && argv[i][1]) || path) {
            fprintf(stderr, "memplan bounds: unexpected argument '%s'\n%s", argv[i], help);
            return EXIT_INPUT;
        } else {
            path = argv[i];
        }
    }
    if (!path == !model) {
        fprintf(stderr, "memplan bounds: give one records file or --model NAME\n%s", help);
        return EXIT_INPUT;
    }
    mp_buffer_t *b;
    size_t n;
    int rc = cli_load(path, model, &b, &n);
    if (rc) return rc;
    cli_default_align(b, n, align);
    mp_bounds_t bd;
    if (mp_bounds_compute(b, n, &bd) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        free(b);
        return EXIT_INPUT;
    }
    char h[32];
    if (json) {
        printf("{\"buffers\":%zu,\"naive\":%llu,\"lower_bound\":%llu,\"objects_lower_bound\":%llu,"
               "\"peak_live_buffers\":%llu}\n",
               n, (unsigned long long)bd.naive, (unsigned long long)bd.offsets,
               (unsigned long long)bd.objects, (unsigned long long)bd.peak_count);
    } else {
        printf("buffers                  %zu\n", n);
        printf("naive                    %llu (%s)\n", (unsigned long long)bd.naive, cli_human(bd.naive, h, sizeof h));
        printf("lower bound (offsets)    %llu (%s)\n", (unsigned long long)bd.offsets, cli_human(bd.offsets, h, sizeof h));
        printf("lower bound (objects)    %llu (%s)\n", (unsigned long long)bd.objects, cli_human(bd.objects, h, sizeof h));
        printf("peak live buffers        %llu\n", (unsigned long long)bd.peak_count);
    }
    free(b);
    return EXIT_OK;
}
