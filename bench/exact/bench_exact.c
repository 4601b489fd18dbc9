/* bench_exact.c -- the exact planner on DSA instances (bench/exact/run).
 *
 * For each records file: the max-load bound, greedy-size and auto, the
 * window lower bound (mp_exact_lower_bound) and the exact search
 * (mp_exact_solve, one time limit, no node limit), every plan through the
 * checker.  Prints one Markdown table row per file on stdout.
 *
 *     bench_exact [--time S] [--lb-time S] [--root DIR] FILE.csv...
 *
 * --root DIR is cut from the front of the names printed. */
#include "memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Plans with a strategy, checks the plan; returns the footprint (0: failed). */
static uint64_t plan_with(const mp_buffer_t *b, size_t n, const char *name, double *sec) {
    mp_plan_t p;
    double t0 = now();
    mp_status s = mp_plan_compute(b, n, name, &p);
    *sec = now() - t0;
    uint64_t f = s == MP_OK && mp_plan_check(b, n, &p, NULL) == MP_OK ? p.footprint : 0;
    if (!f) fprintf(stderr, "bench_exact: %s: %s\n", name, mp_last_error());
    mp_plan_free(&p);
    return f;
}

static void pct(char *out, size_t cap, uint64_t x, uint64_t base) {
    if (x == base) snprintf(out, cap, "%llu", (unsigned long long)x);
    else snprintf(out, cap, "%llu (+%.2f%%)", (unsigned long long)x, 100.0 * ((double)x - (double)base) / (double)base);
}

static int run_file(const char *path, const char *name, double tl, double lbt) {
    mp_buffer_t *b;
    size_t n;
    if (mp_records_read(path, &b, &n) != MP_OK) {
        fprintf(stderr, "bench_exact: %s\n", mp_last_error());
        return 2;
    }
    fprintf(stderr, "bench_exact: %s (%zu buffers)...\n", name, n);
    mp_bounds_t bd;
    double t_greedy, t_auto, t_lb;
    uint64_t greedy = 0, autof = 0, wlb = 0;
    if (mp_bounds_compute(b, n, &bd) != MP_OK) return 1;
    greedy = plan_with(b, n, "greedy-size", &t_greedy);
    autof = plan_with(b, n, "auto", &t_auto);
    mp_exact_opts_t o = {.time_limit = lbt};
    double t0 = now();
    if (mp_exact_lower_bound(b, n, &o, &wlb) != MP_OK) return 1;
    t_lb = now() - t0;
    o = (mp_exact_opts_t){.time_limit = tl};
    mp_plan_t p;
    mp_exact_report_t r;
    if (mp_exact_solve(b, n, &o, &p, &r) != MP_OK || mp_plan_check(b, n, &p, NULL) != MP_OK) {
        fprintf(stderr, "bench_exact: %s: exact: %s\n", name, mp_last_error());
        return 1;
    }
    uint64_t lb = r.lower_bound > wlb ? r.lower_bound : wlb;
    char g[64], a[64], e[64], status[96];
    pct(g, sizeof g, greedy, bd.offsets);
    pct(a, sizeof a, autof, bd.offsets);
    pct(e, sizeof e, r.footprint, bd.offsets);
    if (r.footprint == lb) snprintf(status, sizeof status, "**optimal**");
    else snprintf(status, sizeof status, "gap %.2f%%", 100.0 * (double)(r.footprint - lb) / (double)lb);
    printf("| %s | %zu | %zu | %llu | %llu | %llu | %s | %s | %s | %s | %.2f | %llu | %.1f |\n", name, n,
           r.parts, (unsigned long long)bd.offsets, (unsigned long long)wlb,
           (unsigned long long)r.lower_bound, g, a, e, status, r.seconds,
           (unsigned long long)r.nodes, 1000 * t_auto);
    fflush(stdout);
    fprintf(stderr, "  greedy-size %.2fs, auto %.2fs, window bound %.2fs, exact %.2fs\n", t_greedy,
            t_auto, t_lb, r.seconds);
    mp_plan_free(&p);
    free(b);
    return 0;
}

int main(int argc, char **argv) {
    double tl = 5, lbt = 2;
    const char *root = NULL;
    int i = 1, rc = 0;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--time")) tl = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--lb-time")) lbt = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--root")) root = argv[i + 1];
        else break;
    }
    if (i >= argc || argv[i][0] == '-') {
        fprintf(stderr, "usage: bench_exact [--time S] [--lb-time S] [--root DIR] FILE.csv...\n");
        return 2;
    }
    printf("| instance | buffers | parts | max-load LB | window LB | exact LB | greedy-size | auto "
           "| exact | proven | exact s | nodes | auto ms |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (; i < argc; i++) {
        const char *name = argv[i];
        size_t rl = root ? strlen(root) : 0;
        if (root && !strncmp(name, root, rl)) name += rl + (name[rl] == '/');
        int r = run_file(argv[i], name, tl, lbt);
        if (r) rc = r;
    }
    return rc;
}
