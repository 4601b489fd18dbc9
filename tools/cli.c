/* cli.c -- helpers shared by the subcommands. */
#include "cli.h"

#include <ctype.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A --model value that is no built-in name is read as records when it
 * names a file, or looks like a path (so a missing one says so). */
static bool model_is_file(const char *model) {
    return access(model, F_OK) == 0 || strpbrk(model, "/.");
}

int cli_load(const char *path, const char *model, mp_buffer_t **b, size_t *n) {
    if (model) {
        size_t k, i = 0;
        const cli_model *m = cli_models(&k);
        while (i < k && strcmp(m[i].name, model)) i++;
        if (i < k) {
            if (m[i].build(b, n) == MP_OK) return EXIT_OK;
            fprintf(stderr, "memplan: %s\n", mp_last_error());
            return EXIT_INPUT;
        }
        if (!model_is_file(model))
            return cli_unknown("memplan", "model", model, cli_model_name,
                               "see 'memplan models', or give a records file");
        path = model;
    }
    if (mp_records_read(path, b, n) != MP_OK) return cli_read_failed("memplan", path, CLI_RECORDS);
    return EXIT_OK;
}

const char *cli_strategy_name(size_t i) {
    const mp_strategy_info_t *s = mp_strategy_info(i);
    return s ? s->name : NULL;
}

const char *cli_model_name(size_t i) {
    size_t k;
    const cli_model *m = cli_models(&k);
    return i < k ? m[i].name : NULL;
}

enum { NAME_LEN = 63 }; /* longer names are far from every known one */

/* Edits (insert, delete, replace, swap two neighbours) from a[0..la) to
 * b[0..lb), ignoring case: a transposed or mistyped letter is one edit. */
static size_t name_distance(const char *a, size_t la, const char *b, size_t lb) {
    size_t r[3][NAME_LEN + 1]; /* rows i-2, i-1 and i of the table, cyclic */
    if (la > NAME_LEN || lb > NAME_LEN) return SIZE_MAX;
    for (size_t j = 0; j <= lb; j++) r[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t *cur = r[i % 3], *up = r[(i - 1) % 3], *up2 = r[(i + 1) % 3];
        int ca = tolower((unsigned char)a[i - 1]);
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int cb = tolower((unsigned char)b[j - 1]);
            size_t v = up[j - 1] + (ca != cb);
            if (up[j] + 1 < v) v = up[j] + 1;
            if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                cb == tolower((unsigned char)a[i - 2]) && up2[j - 2] + 1 < v)
                v = up2[j - 2] + 1;
            cur[j] = v;
        }
    }
    return r[la % 3][lb];
}

static size_t distance_to(const char *name, const char *known) {
    return name_distance(name, strcspn(name, "="), known, strcspn(known, "=["));
}

/* Prints the known names at distance d from name ("'a', 'b' or 'c'"), or
 * all of them ("'a', 'b', 'c'") when d is SIZE_MAX. */
static void print_names(cli_names known, const char *name, size_t d) {
    size_t m = 0, k = 0;
    for (size_t i = 0; known(i); i++) m += d == SIZE_MAX || distance_to(name, known(i)) == d;
    for (size_t i = 0; known(i); i++) {
        if (d != SIZE_MAX && distance_to(name, known(i)) != d) continue;
        const char *sep = k == 0 ? "" : k + 1 == m && d != SIZE_MAX ? " or " : ", ";
        fprintf(stderr, "%s'%s'", sep, known(i));
        k++;
    }
}

int cli_unknown(const char *who, const char *what, const char *name, cli_names known,
                const char *see) {
    size_t best = SIZE_MAX, len = strcspn(name, "=");
    for (size_t i = 0; known(i); i++) {
        size_t d = distance_to(name, known(i));
        if (d < best) best = d;
    }
    fprintf(stderr, "%s: unknown %s '%s'", who, what, name);
    /* Close: about one edit in three letters, so "lenet" is not taken
     * for "posenet" but "greedy-sise" is for "greedy-size". */
    if (best <= (len / 3 ? len / 3 : 1)) {
        fputs("; did you mean ", stderr);
        print_names(known, name, best);
        fputs("?\n", stderr);
    } else if (see) {
        fprintf(stderr, " (%s)\n", see);
    } else {
        fputs(" (one of: ", stderr);
        print_names(known, name, SIZE_MAX);
        fputs(")\n", stderr);
    }
    return EXIT_INPUT;
}

bool cli_svg_name(const char *opt, const char *path) {
    size_t len = strlen(path);
    struct stat st;
    /* "-", a FIFO or a device: no file keeps the name, any name will do. */
    if (!strcmp(path, "-") || (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)))
        return true;
    if (len >= 4 && !strcasecmp(path + len - 4, ".svg")) return true;
    fprintf(stderr,
            "memplan: %s %s: only SVG is written; name the file .svg (convert with e.g. "
            "rsvg-convert)\n",
            opt, path);
    return false;
}

/* What names a file: its device and inode; for a file not there yet, its
 * directory's with its last name (so "a.svg" and "./a.svg" compare equal);
 * "-" for standard output. */
typedef struct file_id {
    dev_t dev;
    ino_t ino;
    const char *name;   /* "" for an existing file */
} file_id;

static bool file_id_of(const char *path, file_id *id) {
    struct stat st;
    *id = (file_id){0, 0, ""};
    if (!strcmp(path, "-")) return id->name = "-", true;
    if (stat(path, &st) == 0 || lstat(path, &st) == 0) {
        id->dev = st.st_dev, id->ino = st.st_ino;
        return true;
    }
    const char *slash = strrchr(path, '/');
    char dir[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
    if (stat(dir, &st) != 0) return false;   /* the writer will say why */
    id->dev = st.st_dev, id->ino = st.st_ino;
    id->name = slash ? slash + 1 : path;
    return true;
}

static bool same_id(const file_id *a, const file_id *b) {
    return a->dev == b->dev && a->ino == b->ino && !strcmp(a->name, b->name);
}

/* The first of out[0..k) naming the same file as id, or k. */
static size_t same_output(const file_id *id, const cli_output *out, size_t k) {
    for (size_t j = 0; j < k; j++) {
        file_id o;
        if (out[j].path && file_id_of(out[j].path, &o) && same_id(id, &o)) return j;
    }
    return k;
}

int cli_check_outputs(const char *const *in, size_t n_in, const cli_output *out, size_t n_out) {
    for (size_t i = 0; i < n_out; i++) {
        file_id o, x;
        if (!out[i].path || !file_id_of(out[i].path, &o)) continue;
        for (size_t k = 0; k < n_in; k++)
            if (in[k] && *o.name == 0 && file_id_of(in[k], &x) && same_id(&o, &x)) {
                fprintf(stderr, "memplan: %s %s: is the input file %s; refusing to overwrite an input\n",
                        out[i].opt, out[i].path, in[k]);
                return EXIT_INPUT;
            }
        size_t j = same_output(&o, out, i);
        if (j < i) {
            fprintf(stderr, "memplan: %s %s: is the same file as %s %s; refusing to write one file twice\n",
                    out[i].opt, out[i].path, out[j].opt, out[j].path);
            return EXIT_INPUT;
        }
    }
    return EXIT_OK;
}

bool cli_stdout_output(const cli_output *out, size_t n_out) {
    for (size_t i = 0; i < n_out; i++)
        if (out[i].path && !strcmp(out[i].path, "-")) return true;
    return false;
}

void cli_discard_output(const char *path) {
    struct stat st;
    if (path && strcmp(path, "-") && lstat(path, &st) == 0 && S_ISREG(st.st_mode)) remove(path);
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

void cli_title(char *buf, size_t len, const char *given, const char *path) {
    if (given) {
        snprintf(buf, len, "%s", given);
        return;
    }
    const char *base = strrchr(path, '/');
    base = base && base[1] ? base + 1 : path;
    size_t k = strlen(base);
    static const char *const ext[] = {".gz", ".csv", ".json", ".trace", ".txt", ".records"};
    for (size_t again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
            size_t e = strlen(ext[i]);
            if (k > e && !strncasecmp(base + k - e, ext[i], e)) k -= e, again = 1;
        }
    }
    snprintf(buf, len, "%.*s", (int)k, base);
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
