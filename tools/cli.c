/* cli.c -- helpers shared by the subcommands. */
#include "cli.h"

#include <ctype.h>

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


/* Parses a byte count: digits, an optional fraction, an optional unit in
 * any case ("3000000", "1.5G", "2GiB", "64KB"; no spaces, no sign, no
 * exponent).  Returns NULL and sets *out, or says what is wrong. */
const char *cli_parse_size(const char *s, uint64_t *out) {
    static const struct { const char *unit; uint64_t mult; } units[] = {
        {"", 1},
        {"b", 1},
        {"k", 1ull << 10},
        {"kib", 1ull << 10},
        {"kb", 1000ull},
        {"m", 1ull << 20},
        {"mib", 1ull << 20},
        {"mb", 1000000ull},
        {"g", 1ull << 30},
        {"gib", 1ull << 30},
        {"gb", 1000000000ull},
        {"t", 1ull << 40},
        {"tib", 1ull << 40},
        {"tb", 1000000000000ull},
    };
    const char *p = s;
    if (!*p) return "empty";
    if (*p == '-') return "negative";
    if (!isdigit((unsigned char)*p))
        return "not a size (want bytes, or a number with K, M, G, KiB, MiB, GiB, KB, MB or GB)";
    uint64_t ip = 0, frac = 0, scale = 1;
    bool overflow = false, has_frac = false;
    for (; isdigit((unsigned char)*p); p++) {
        unsigned d = (unsigned)(*p - '0');
        if (ip > (UINT64_MAX - d) / 10) overflow = true;
        else ip = ip * 10 + d;
    }
    if (*p == '.') {
        p++;
        if (!isdigit((unsigned char)*p)) return "not a size (a digit must follow the '.')";
        has_frac = true;
        /* Six decimals count (frac * mult then fits in 64 bits); the result
         * is rounded down to a whole byte anyway. */
        for (; isdigit((unsigned char)*p); p++)
            if (scale < 1000000) frac = frac * 10 + (uint64_t)(*p - '0'), scale *= 10;
    }
    char unit[4];
    size_t k = 0;
    for (const char *u = p; *u; u++) {
        if (k == sizeof unit - 1) return "unknown unit (want K, M, G, T, KiB, ..., KB, ... or none)";
        unit[k++] = (char)tolower((unsigned char)*u);
    }
    unit[k] = 0;
    uint64_t mult = 0;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(unit, units[i].unit)) mult = units[i].mult;
    if (!mult) return "unknown unit (want K, M, G, T, KiB, ..., KB, ... or none)";
    if (has_frac && frac && mult == 1) return "a fraction of a byte";
    if (overflow || (ip && mult > UINT64_MAX / ip)) return "too large (over 2^64-1 bytes)";
    uint64_t v = ip * mult;
    uint64_t f = frac * mult / scale;    /* frac < 10^6, mult <= 2^40: no overflow */
    if (f > UINT64_MAX - v) return "too large (over 2^64-1 bytes)";
    v += f;
    if (!v) return "must be positive";
    *out = v;
    return NULL;
}
