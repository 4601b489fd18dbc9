/* cli.c -- helpers shared by the subcommands. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

int cli_load(const char *path, const char *model, mp_buffer_t **b, size_t *n) {
    mp_status s;
    if (model) {
        size_t k;
        const cli_model *m = cli_models(&k);
        size_t i = 0;
        while (i < k && strcmp(m[i].name, model)) i++;
        if (i == k) {
            fprintf(stderr, "memplan: unknown model '%s' (see 'memplan models')\n", model);
            return EXIT_INPUT;
        }
        s = m[i].build(b, n);
    } else {
        s = mp_records_read(path, b, n);
    }
    if (s != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        return EXIT_INPUT;
    }
    return EXIT_OK;
}

void cli_default_align(mp_buffer_t *b, size_t n, uint64_t align) {
    for (size_t i = 0; i < n; i++)
        if (!b[i].align) b[i].align = align;
}

bool cli_parse_u64(const char *opt, const char *text, uint64_t *out) {
    char *end;
    if (!text || !*text || *text == '-') goto bad;
    unsigned long long v = strtoull(text, &end, 10);
    if (*end || v == 0) goto bad;
    *out = v;
    return true;
bad:
    fprintf(stderr, "memplan: %s needs a positive integer, got '%s'\n", opt, text ? text : "");
    return false;
}

const char *cli_human(uint64_t x, char *buf, size_t len) {
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)x;
    int u = 0;
    while (v >= 1024.0 && u < 6) v /= 1024.0, u++;
    if (u == 0) snprintf(buf, len, "%llu B", (unsigned long long)x);
    else snprintf(buf, len, "%.3f %s", v, unit[u]);
    return buf;
}

double cli_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

void cli_json_string(const char *s) {
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') printf("\\%c", *p);
        else if (*p < 0x20) printf("\\u%04x", *p);
        else putchar(*p);
    }
    putchar('"');
}
