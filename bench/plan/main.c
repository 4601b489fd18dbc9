/* main.c -- bench_plan's options and main: parses the command line, runs
 * parts 1-3 (generated.c, dsa.c) and prints the report in its order:
 * header, findings, part 1, part 2, part 3.  What the program does: bench.h. */
#include "bench.h"
#include "gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void usage(void) {
    fprintf(stderr,
            "usage: bench_plan [--max-n N] [--reps R] [--quick] [--dsa DIR | --no-dsa]\n"
            "                  [--cap SEC] [--timeout SEC] [--command TEXT] [--rev TEXT]\n"
            "  --max-n N    largest generated instance (default 1000000)\n"
            "  --reps R     runs per cell, median reported (default 5)\n"
            "  --quick      n up to 10^4, 1 run, two DSA files\n"
            "  --dsa DIR    DSA instances (default <repo>/../shared/dsa-bench)\n"
            "  --cap SEC    stop repeating a cell after SEC seconds of runs (default 10)\n"
            "  --timeout S  kill a cell after S seconds (default 300)\n"
            "       bench_plan --write-dnn N FILE\n"
            "  writes part 1's instance of N buffers as a records CSV (for bench/plan/ab)\n"
            "       bench_plan --write-shape SHAPE N SEED FILE\n"
            "  the same for any shape of tests/gen.h (chain, residual, longlived, ...)\n");
}

/* The repository root, from this file's path as the compiler saw it. */
static const char *default_dsa(void) {
    static char path[4096];
    const char *f = __FILE__, *slash = strrchr(f, '/');
    if (!slash || f[0] != '/') return "../shared/dsa-bench";
    int len = (int)(slash - f); /* .../bench/plan */
    snprintf(path, sizeof path, "%.*s/../../../shared/dsa-bench", len, f);
    return path;
}

static int parse_opts(int argc, char **argv, opts *o) {
    *o = (opts){1000000, 5, 0, 10.0, 300.0, default_dsa(), 0, NULL, NULL};
    int reps_given = 0, max_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--quick")) o->quick = 1;
        else if (!strcmp(a, "--no-dsa")) o->dsa = NULL, o->dsa_given = 1;
        else if (!v) return usage(), -1;
        else if (!strcmp(a, "--max-n")) o->max_n = strtoull(v, NULL, 10), max_given = 1, i++;
        else if (!strcmp(a, "--reps")) o->reps = atoi(v), reps_given = 1, i++;
        else if (!strcmp(a, "--dsa")) o->dsa = v, o->dsa_given = 1, i++;
        else if (!strcmp(a, "--cap")) o->cap = atof(v), i++;
        else if (!strcmp(a, "--timeout")) o->timeout = atof(v), i++;
        else if (!strcmp(a, "--command")) o->command = v, i++;
        else if (!strcmp(a, "--rev")) o->rev = v, i++;
        else return usage(), -1;
    }
    if (o->quick) {
        if (!max_given) o->max_n = 10000;
        if (!reps_given) o->reps = 1;
        if (o->timeout > 60) o->timeout = 60;
    }
    if (o->reps < 1 || o->reps > MAX_REPS || o->max_n < 1 || o->cap <= 0 || o->timeout <= 0)
        return usage(), -1;
    return 0;
}

/* bench_plan --write-dnn N FILE: part 1's instance of n buffers as records. */
static int write_dnn(const char *count, const char *path) {
    size_t n = strtoull(count, NULL, 10);
    mp_buffer_t *b = malloc((n ? n : 1) * sizeof *b);
    if (!b || n == 0) return usage(), free(b), 2;
    mp_gen_problem(b, n, MP_GEN_DNN, GEN_SEED);
    mp_status s = mp_records_write(path, b, n);
    free(b);
    if (s != MP_OK) fprintf(stderr, "bench_plan: %s\n", mp_last_error());
    return s == MP_OK ? 0 : 1;
}

/* bench_plan --write-shape SHAPE N SEED FILE: a generated instance of any
 * shape (tests/gen.h) as records, for bench/plan/ab --gen. */
static int write_shape(char **a) {
    for (int k = 0; k < MP_GEN_SHAPES; k++) {
        if (strcmp(a[0], mp_gen_shape_name[k])) continue;
        size_t n = strtoull(a[1], NULL, 10);
        mp_buffer_t *b = malloc((n ? n : 1) * sizeof *b);
        if (!b || n == 0) return usage(), free(b), 2;
        mp_gen_problem(b, n, (mp_gen_shape)k, strtoull(a[2], NULL, 10));
        mp_status s = mp_records_write(a[3], b, n);
        free(b);
        if (s != MP_OK) fprintf(stderr, "bench_plan: %s\n", mp_last_error());
        return s == MP_OK ? 0 : 1;
    }
    fprintf(stderr, "bench_plan: unknown shape '%s'\n", a[0]);
    return 2;
}

int main(int argc, char **argv) {
    static bench B;
    if (argc == 4 && !strcmp(argv[1], "--write-dnn")) return write_dnn(argv[2], argv[3]);
    if (argc == 6 && !strcmp(argv[1], "--write-shape")) return write_shape(argv + 2);
    static dsa D;
    if (parse_opts(argc, argv, &B.o) != 0) return 2;
    for (size_t i = 0; i < mp_strategy_count() && B.n_st < MAX_STRATEGIES; i++)
        B.st[B.n_st++].info = mp_strategy_info(i);
    print_header(&B.o, argc, argv);
    if (run_generated(&B) != 0) return 2;
    struct stat st;
    if (B.o.dsa && stat(B.o.dsa, &st) != 0) {
        fprintf(stderr, "bench_plan: no DSA instances at %s: skipping that part\n", B.o.dsa);
    } else if (B.o.dsa) {
        run_dsa(&B, &D);
    }
    print_findings(&B, &D);
    print_generated(&B);
    print_oracle(&B);
    print_dsa(&B, &D);
    dsa_free(&D);
    if (B.bad) fprintf(stderr, "bench_plan: %d invalid plans, failures or crashes\n", B.bad);
    return B.bad ? 1 : 0;
}
