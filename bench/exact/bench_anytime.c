/* bench_anytime.c -- anytime "auto" (mp_plan_auto_opts) on DSA instances
 * (bench/exact/anytime).
 *
 * For each records file: the max-load bound, greedy-size and auto as today
 * (no time limit), then anytime auto with each time limit given, repeated
 * --reps times; the repetitions are interleaved (every file once, then
 * every file again) so that a slow moment of a shared machine does not
 * fall on one file only.  Every plan goes through the checker.  Prints one
 * Markdown row per file and limit: the median footprint and its gap to the
 * proven bound, the range over repetitions, how many runs proved
 * optimality, the median seconds, and the median CPU seconds the process
 * got meanwhile (all threads; on a machine shared with other work this
 * says how much of the time limit was really spent searching).
 *
 * With --threads 1,2 each limit runs with one thread and with two (the
 * default, 0, lets the library choose: two on two cores).
 *
 *     bench_anytime [--reps R] [--root DIR] [--threads T1,T2] --limits S1,S2 FILE.csv... */
#include "memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { MAX_FILES = 64, MAX_LIMITS = 8, MAX_REPS = 9 };

/* A comma-separated list of numbers into v (at most MAX_LIMITS). */
static int parse_list(char *p, double *v) {
    int k = 0;
    while (*p && k < MAX_LIMITS) {
        v[k++] = strtod(p, &p);
        if (*p != ',') break;
        p++;
    }
    return k;
}

typedef struct runrec {
    uint64_t fp, lb;
    double sec, cpu;
    int optimal;
} runrec;

static int cmp_u64(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}
static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* User and system CPU seconds of the process so far. */
static double cpu_now(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_stime.tv_sec +
           1e-6 * ((double)u.ru_utime.tv_usec + (double)u.ru_stime.tv_usec);
}

static double gap(uint64_t x, uint64_t lb) { return lb ? 100.0 * ((double)x - (double)lb) / (double)lb : 0; }

int main(int argc, char **argv) {
    int reps = 3, i = 1;
    double limits[MAX_LIMITS], tl[MAX_LIMITS], th[MAX_LIMITS] = {0};
    int nl = 0, nt = 1;
    const char *root = "";
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--root")) root = argv[i + 1];
        else if (!strcmp(argv[i], "--limits")) nl = parse_list(argv[i + 1], tl);
        else if (!strcmp(argv[i], "--threads")) nt = parse_list(argv[i + 1], th);
        else break;
    }
    /* configurations: every limit with every thread count */
    double threads[MAX_LIMITS];
    int nc = 0;
    for (int a = 0; a < nl; a++)
        for (int t = 0; t < nt && nc < MAX_LIMITS; t++) limits[nc] = tl[a], threads[nc++] = th[t];
    nl = nc;
    int nf = argc - i;
    if (nf <= 0 || nf > MAX_FILES || nl == 0 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: bench_anytime [--reps R<=9] [--root DIR] [--threads T1,T2] "
                        "--limits S1,S2 FILE.csv...\n");
        return 2;
    }
    static runrec rec[MAX_FILES][MAX_LIMITS][MAX_REPS];
    static uint64_t lb0[MAX_FILES], greedy[MAX_FILES], autof[MAX_FILES];
    static size_t nbuf[MAX_FILES];
    int bad = 0;
    for (int rep = 0; rep < reps; rep++)
        for (int l = 0; l < nl; l++)
            for (int f = 0; f < nf; f++) {
                mp_buffer_t *b;
                size_t n;
                if (mp_records_read(argv[i + f], &b, &n) != MP_OK) {
                    fprintf(stderr, "bench_anytime: %s\n", mp_last_error());
                    return 1;
                }
                mp_plan_t p;
                if (rep == 0 && l == 0) { /* today's auto and greedy-size, once */
                    mp_bounds_t bd;
                    nbuf[f] = n;
                    if (mp_bounds_compute(b, n, &bd) != MP_OK) return 1;
                    lb0[f] = bd.offsets;
                    if (mp_plan_compute(b, n, "greedy-size", &p) != MP_OK) return 1;
                    greedy[f] = p.footprint;
                    mp_plan_free(&p);
                    if (mp_plan_compute(b, n, "auto", &p) != MP_OK) return 1;
                    autof[f] = p.footprint;
                    mp_plan_free(&p);
                }
                mp_auto_opts_t o = {.time_limit = limits[l], .threads = (unsigned)threads[l]};
                mp_exact_report_t r;
                double c0 = cpu_now();
                mp_status st = mp_plan_auto_opts(b, n, &o, &p, &r);
                double cpu = cpu_now() - c0;
                if (st != MP_OK ||
                    mp_plan_check(b, n, &p, NULL) != MP_OK || p.footprint > autof[f]) {
                    fprintf(stderr, "bench_anytime: %s: %s\n", argv[i + f], mp_last_error());
                    bad = 1;
                }
                rec[f][l][rep] = (runrec){p.footprint, r.lower_bound, r.seconds, cpu,
                                          r.status == MP_EXACT_OPTIMAL};
                fprintf(stderr, "bench_anytime: rep %d, %g s, %g threads, %s: %llu (%s) in %.2f s\n",
                        rep, limits[l], threads[l], argv[i + f], (unsigned long long)p.footprint,
                        mp_exact_status_name(r.status), r.seconds);
                mp_plan_free(&p);
                free(b);
            }
    printf("| instance | buffers | lower bound | greedy-size | auto (today) | limit s | threads | anytime median | range | optimal | median s | median CPU s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    size_t rl = strlen(root);
    for (int f = 0; f < nf; f++)
        for (int l = 0; l < nl; l++) {
            uint64_t fp[MAX_REPS], lb = lb0[f];
            double sec[MAX_REPS], cpu[MAX_REPS];
            int opt = 0;
            for (int r = 0; r < reps; r++) {
                fp[r] = rec[f][l][r].fp, sec[r] = rec[f][l][r].sec, cpu[r] = rec[f][l][r].cpu;
                opt += rec[f][l][r].optimal;
                if (rec[f][l][r].lb > lb) lb = rec[f][l][r].lb; /* every one is proven */
            }
            qsort(fp, (size_t)reps, sizeof *fp, cmp_u64);
            qsort(sec, (size_t)reps, sizeof *sec, cmp_d);
            qsort(cpu, (size_t)reps, sizeof *cpu, cmp_d);
            const char *name = argv[i + f];
            if (rl && !strncmp(name, root, rl)) name += rl;
            printf("| %s | %zu | %llu | %llu (+%.2f%%) | %llu (+%.2f%%) | %g | %s | %llu (+%.2f%%) | %llu-%llu | %d/%d | %.2f | %.2f |\n",
                   name, nbuf[f], (unsigned long long)lb, (unsigned long long)greedy[f],
                   gap(greedy[f], lb), (unsigned long long)autof[f], gap(autof[f], lb), limits[l],
                   threads[l] == 1 ? "1" : threads[l] == 2 ? "2" : "default",
                   (unsigned long long)fp[reps / 2], gap(fp[reps / 2], lb),
                   (unsigned long long)fp[0], (unsigned long long)fp[reps - 1], opt, reps,
                   sec[reps / 2], cpu[reps / 2]);
        }
    return bad;
}
