/* bench_plan.c -- planning-time benchmark of the core planners.
 *
 * Three parts, printed as Markdown on stdout (progress on stderr):
 *  1. for n = 10^3 .. --max-n it generates one MP_GEN_DNN instance
 *     (tests/gen.c: lifetimes short against the run) and times
 *     mp_plan_compute for every registered strategy: median of R runs,
 *     fewer when a cell's runs would pass ~10 s.  Every plan is proved by
 *     mp_plan_check and later runs must repeat the first plan exactly; a
 *     plan that fails either is reported INVALID and its time is not shown;
 *  2. greedy-size against its literal O(n^2) oracle (tests/oracle_gapfit.c)
 *     on the same normalized input at n = 10^4 and 10^5: both times, the
 *     speed-up, and whether the two plans are identical;
 *  3. every strategy on the public DSA instances (--dsa DIR).
 *
 * Each cell runs in a forked child under a wall-clock limit, so a strategy
 * that crashes or runs away costs its cell and not the run.  A strategy is
 * skipped above its all_limit and after a size that took more than 20 s.
 * Exit status 1 if any plan was invalid, any strategy failed or crashed, or
 * the oracle disagreed. */
#include "core/internal.h"
#include "gen.h"
#include "oracle.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_REPS 64
#define MAX_NS 8
#define MAX_STRATEGIES 64
#define SLOW_SKIP_S 20.0
#define SEED 20240601u

/* ---- options ------------------------------------------------------------ */

typedef struct opts {
    size_t max_n;
    int reps;
    int quick;
    double cap;        /* seconds of runs per cell before stopping at fewer reps */
    double timeout;    /* hard wall-clock limit of one cell */
    const char *dsa;   /* NULL: skip */
    int dsa_given;
    const char *command, *rev;
} opts;

static void usage(void) {
    fprintf(stderr,
            "usage: bench_plan [--max-n N] [--reps R] [--quick] [--dsa DIR | --no-dsa]\n"
            "                  [--cap SEC] [--timeout SEC] [--command TEXT] [--rev TEXT]\n"
            "  --max-n N    largest generated instance (default 1000000)\n"
            "  --reps R     runs per cell, median reported (default 5)\n"
            "  --quick      n up to 10^4, 1 run, two DSA files\n"
            "  --dsa DIR    DSA instances (default <repo>/../shared/dsa-bench)\n"
            "  --cap SEC    stop repeating a cell after SEC seconds of runs (default 10)\n"
            "  --timeout S  kill a cell after S seconds (default 300)\n");
}

/* The repository root, from this file's path as the compiler saw it. */
static const char *default_dsa(void) {
    static char path[4096];
    const char *f = __FILE__, *slash = strrchr(f, '/');
    if (!slash || f[0] != '/') return "../shared/dsa-bench";
    int len = (int)(slash - f); /* .../bench */
    snprintf(path, sizeof path, "%.*s/../../shared/dsa-bench", len, f);
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

/* ---- timing and formatting ------------------------------------------- */

static double clock_s(clockid_t id) {
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }
/* CPU time of this process: in a cell's child, the strategy's own. */
static double cpu_now(void) { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double median(double *t, int k) {
    qsort(t, (size_t)k, sizeof *t, cmp_double);
    return k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2]);
}

/* Milliseconds with three significant digits or so. */
static const char *fmt_ms(char *buf, size_t len, double sec) {
    double ms = sec * 1e3;
    snprintf(buf, len, ms < 10 ? "%.2f" : ms < 1000 ? "%.1f" : "%.0f", ms);
    return buf;
}

static const char *fmt_n(char *buf, size_t len, size_t n) {
    size_t p = 1;
    int e = 0;
    while (p < n && e < 19) p *= 10, e++;
    if (p == n && e >= 3) snprintf(buf, len, "10^%d", e);
    else snprintf(buf, len, "%zu", n);
    return buf;
}

/* ---- one cell: a strategy (or the oracle) timed on one instance ------ */

enum { C_NONE, C_OK, C_INVALID, C_FAILED, C_SKIPPED, C_TIMEOUT, C_CRASH };
enum { JOB_STRATEGY, JOB_CORE, JOB_ORACLE };

typedef struct cell {
    int status;
    int reps;
    int identical;       /* JOB_ORACLE: oracle plan == fast plan */
    double med;          /* seconds, wall clock */
    double cpu;          /* seconds of CPU, median */
    uint64_t footprint;
    char msg[200];       /* failure text, skip reason, or auto's winner */
} cell;

typedef struct job {
    int kind;
    const char *strategy;
    const mp_buffer_t *b; /* as given */
    size_t n;
    uint64_t lb;          /* offset lower bound */
    int reps;
    double cap;
} job;

static int same_plan(const mp_plan_t *p, const mp_plan_t *q) {
    if (p->n != q->n || p->footprint != q->footprint || !!p->object != !!q->object) return 0;
    size_t n = p->n ? p->n : 1;
    if (memcmp(p->offset, q->offset, n * sizeof *p->offset)) return 0;
    return !p->object || !memcmp(p->object, q->object, n * sizeof *p->object);
}

/* Runs the offsets function of a JOB_CORE/JOB_ORACLE job on normalized nb. */
static mp_status run_offsets(int kind, const mp_buffer_t *nb, size_t n, mp_plan_t *out) {
    memset(out, 0, sizeof *out);
    uint64_t *off = calloc(n ? n : 1, sizeof *off);
    if (!off) return MP__NOMEM();
    mp_status s = kind == JOB_ORACLE ? oracle_greedy_size(nb, n, off)
                                     : mp__offsets_greedy_size(nb, n, off);
    if (s != MP_OK) {
        free(off);
        return s;
    }
    *out = (mp_plan_t){.n = n, .offset = off, .footprint = mp__footprint(nb, n, off)};
    return MP_OK;
}

/* Proves the first plan of a cell; sets INVALID with the reason if not. */
static void verify(const job *j, const mp_plan_t *p, cell *c) {
    if (mp_plan_check(j->b, j->n, p, NULL) != MP_OK) {
        c->status = C_INVALID;
        snprintf(c->msg, sizeof c->msg, "checker: %s", mp_last_error());
    } else if (p->footprint < j->lb) {
        c->status = C_INVALID;
        snprintf(c->msg, sizeof c->msg, "footprint %" PRIu64 " below lower bound %" PRIu64,
                 p->footprint, j->lb);
    }
}

/* The timing loop, in the child: up to j->reps runs, stopping early when
 * another run would take the cell past j->cap seconds. */
static void do_job(const job *j, cell *c) {
    mp_buffer_t *nb = NULL;
    if (j->kind != JOB_STRATEGY && mp__normalize(j->b, j->n, &nb) != MP_OK) {
        c->status = C_FAILED;
        snprintf(c->msg, sizeof c->msg, "normalize: %s", mp_last_error());
        return;
    }
    double t[MAX_REPS], u[MAX_REPS], spent = 0;
    mp_plan_t first = {0};
    c->status = C_OK;
    for (int r = 0; r < j->reps && c->status == C_OK; r++) {
        mp_plan_t p;
        double t0 = now(), u0 = cpu_now();
        mp_status s = j->kind == JOB_STRATEGY ? mp_plan_compute(j->b, j->n, j->strategy, &p)
                                              : run_offsets(j->kind, nb, j->n, &p);
        u[r] = cpu_now() - u0;
        t[r] = now() - t0;
        if (s != MP_OK) {
            c->status = C_FAILED;
            snprintf(c->msg, sizeof c->msg, "%s: %s", mp_status_name(s), mp_last_error());
            break;
        }
        c->reps = r + 1;
        spent += t[r];
        if (r == 0) {
            verify(j, &p, c);
            first = p;
            if (p.strategy && j->strategy && strcmp(p.strategy, j->strategy))
                snprintf(c->msg, sizeof c->msg, "%s", p.strategy);
        } else {
            if (!same_plan(&first, &p)) {
                c->status = C_INVALID;
                snprintf(c->msg, sizeof c->msg, "run %d gave a different plan than run 1", r + 1);
            }
            mp_plan_free(&p);
        }
        if (spent + t[r] > j->cap) break;
    }
    if (c->status == C_OK) {
        c->med = median(t, c->reps);
        c->cpu = median(u, c->reps);
        c->footprint = first.footprint;
    }
    if (c->status == C_OK && j->kind == JOB_ORACLE) {
        mp_plan_t fast;
        c->identical = run_offsets(JOB_CORE, nb, j->n, &fast) == MP_OK && same_plan(&first, &fast);
        mp_plan_free(&fast);
    }
    mp_plan_free(&first);
    free(nb);
}

/* Reads the child's answer; on timeout kills it (it is our own child). */
static void collect(pid_t pid, int fd, double timeout, cell *c) {
    struct pollfd pf = {fd, POLLIN, 0};
    double end = now() + timeout;
    int pr;
    do {
        double left = end - now();
        pr = poll(&pf, 1, left > 0 ? (int)(left * 1000) + 1 : 0);
    } while (pr < 0 && errno == EINTR);
    if (pr == 0) {
        kill(pid, SIGKILL);
        c->status = C_TIMEOUT;
        snprintf(c->msg, sizeof c->msg, "timeout (> %.3g s)", timeout);
    } else {
        ssize_t got = 0, r;
        while (got < (ssize_t)sizeof *c &&
               ((r = read(fd, (char *)c + got, sizeof *c - (size_t)got)) > 0 ||
                (r < 0 && errno == EINTR)))
            if (r > 0) got += r;
        if (got != (ssize_t)sizeof *c) c->status = C_CRASH;
    }
    int ws = 0;
    while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (c->status == C_CRASH) {
        if (WIFSIGNALED(ws)) snprintf(c->msg, sizeof c->msg, "crashed (signal %d)", WTERMSIG(ws));
        else snprintf(c->msg, sizeof c->msg, "crashed (exit %d)", WEXITSTATUS(ws));
    }
}

/* Runs a job in a forked child under opts' timeout. */
static void run_cell(const job *j, cell *c, double timeout) {
    memset(c, 0, sizeof *c);
    int fd[2];
    fflush(stdout);
    fflush(stderr);
    pid_t pid = pipe(fd) == 0 ? fork() : -1;
    if (pid < 0) { /* no child: run here, unprotected */
        do_job(j, c);
        return;
    }
    if (pid == 0) {
        close(fd[0]);
        cell r;
        memset(&r, 0, sizeof r);
        do_job(j, &r);
        ssize_t w = write(fd[1], &r, sizeof r);
        _exit(w == (ssize_t)sizeof r ? 0 : 1);
    }
    close(fd[1]);
    collect(pid, fd[0], timeout, c);
    close(fd[0]);
}

static void progress(const char *where, const char *what, const cell *c) {
    char ms[32];
    if (c->status == C_OK)
        fprintf(stderr, "[%s] %-30s %10s ms  (%d run%s)\n", where, what,
                fmt_ms(ms, sizeof ms, c->med), c->reps, c->reps == 1 ? "" : "s");
    else
        fprintf(stderr, "[%s] %-30s %s\n", where, what, c->msg);
}

/* ---- the machine ------------------------------------------------------ */

static void read_proc(const char *file, const char *key, char *out, size_t len) {
    snprintf(out, len, "unknown");
    FILE *f = fopen(file, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, strlen(key))) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        snprintf(out, len, "%s", v);
        break;
    }
    fclose(f);
}

/* The three load averages, to tell a quiet machine from a busy one. */
static const char *loadavg(char *buf, size_t len) {
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    double a, b, c;
    if (f && fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
    if (f) fclose(f);
    return buf;
}

static const char *build_type(void) {
#if defined(MP_DEBUG)
    const char *t = "Debug (MP_DEBUG: every plan is also checked inside mp_plan_compute, "
                    "so times are inflated)";
#elif defined(NDEBUG) && defined(__OPTIMIZE__)
    const char *t = "Release (optimized, NDEBUG)";
#elif defined(__OPTIMIZE__)
    const char *t = "optimized, assertions on";
#else
    const char *t = "unoptimized";
#endif
#if defined(__SANITIZE_ADDRESS__)
    static char buf[256];
    snprintf(buf, sizeof buf, "%s, AddressSanitizer (times inflated)", t);
    return buf;
#else
    return t;
#endif
}

static void print_header(const opts *o, int argc, char **argv) {
    char cpu[256], mem[64], date[64], load[64];
    read_proc("/proc/cpuinfo", "model name", cpu, sizeof cpu);
    read_proc("/proc/meminfo", "MemTotal", mem, sizeof mem);
    time_t tt = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&tt));
    struct utsname u;
    int has_u = uname(&u) == 0;
    printf("# Planning-time benchmark\n\n");
    printf("Generated by `bench/run` (bench/bench_plan.c); do not edit by hand.\n\n");
    printf("- command: `");
    if (o->command) printf("%s", o->command);
    else for (int i = 0; i < argc; i++) printf("%s%s", i ? " " : "", argv[i]);
    printf("`\n- date: %s\n", date);
    if (o->rev) printf("- revision: %s\n", o->rev);
    printf("- CPU: %s, %ld logical cores online, memory %s\n", cpu,
           sysconf(_SC_NPROCESSORS_ONLN), mem);
    if (has_u) printf("- OS: %s %s %s\n", u.sysname, u.release, u.machine);
#if defined(__clang__)
    printf("- compiler: clang %s\n", __VERSION__);
#elif defined(__GNUC__)
    printf("- compiler: gcc %s\n", __VERSION__);
#else
    printf("- compiler: %s\n", __VERSION__);
#endif
    printf("- build: %s\n", build_type());
    printf("- load average at the start: %s\n", loadavg(load, sizeof load));
    printf("- runs per cell: median of up to %d, fewer when a cell passes %.0f s (noted as "
           "\"k runs\"); cells killed after %.0f s; every plan proved by mp_plan_check, and "
           "repeated runs must give the identical plan\n\n",
           o->reps, o->cap, o->timeout);
}

/* ---- part 1: generated DNN-shaped instances --------------------------- */

typedef struct strat {
    const mp_strategy_info_t *info;
    cell cell[MAX_NS];
} strat;

typedef struct bench {
    opts o;
    size_t ns[MAX_NS];
    int n_ns;
    mp_bounds_t bd[MAX_NS];
    uint64_t span[MAX_NS];
    strat st[MAX_STRATEGIES];
    size_t n_st;
    cell core[MAX_NS], oracle[MAX_NS];
    int bad;              /* invalid plans, failures, crashes */
    double wall, cpu;     /* sums over timed cells: is the machine busy? */
    char load0[64];       /* /proc/loadavg at the start */
} bench;

static void note_bad(bench *B, const cell *c) {
    if (c->status == C_INVALID || c->status == C_FAILED || c->status == C_CRASH) B->bad++;
    if (c->status == C_OK) B->wall += c->med, B->cpu += c->cpu;
}

/* Why strategy s is not run at size index k, or NULL. */
static const char *skip_reason(const bench *B, const strat *s, int k, char *buf, size_t len) {
    size_t lim = s->info->all_limit;
    if (lim && B->ns[k] > lim) {
        snprintf(buf, len, "skipped (n > all_limit %zu)", lim);
        return buf;
    }
    if (k == 0) return NULL;
    const cell *p = &s->cell[k - 1];
    char nb[32];
    if (p->status == C_SKIPPED) {
        snprintf(buf, len, "%s", p->msg);
        return buf;
    }
    if (p->status == C_TIMEOUT) {
        snprintf(buf, len, "skipped (n=%s timed out)", fmt_n(nb, sizeof nb, B->ns[k - 1]));
        return buf;
    }
    if (p->status == C_OK && p->med > SLOW_SKIP_S) {
        snprintf(buf, len, "skipped (n=%s took > %.0f s)", fmt_n(nb, sizeof nb, B->ns[k - 1]),
                 SLOW_SKIP_S);
        return buf;
    }
    return NULL;
}

static void run_size(bench *B, int k, const mp_buffer_t *b) {
    size_t n = B->ns[k];
    char where[48], nb[32];
    snprintf(where, sizeof where, "dnn n=%s", fmt_n(nb, sizeof nb, n));
    for (size_t i = 0; i < B->n_st; i++) {
        strat *s = &B->st[i];
        cell *c = &s->cell[k];
        char why[160];
        if (skip_reason(B, s, k, why, sizeof why)) {
            memset(c, 0, sizeof *c);
            c->status = C_SKIPPED;
            snprintf(c->msg, sizeof c->msg, "%s", why);
        } else {
            job j = {JOB_STRATEGY, s->info->name, b, n, B->bd[k].offsets, B->o.reps, B->o.cap};
            run_cell(&j, &c[0], B->o.timeout);
            note_bad(B, c);
        }
        progress(where, s->info->name, c);
    }
}

static void run_oracle(bench *B, int k, const mp_buffer_t *b) {
    size_t n = B->ns[k];
    char where[48], nb[32];
    snprintf(where, sizeof where, "oracle n=%s", fmt_n(nb, sizeof nb, n));
    job j = {JOB_CORE, "greedy-size", b, n, B->bd[k].offsets, B->o.reps, B->o.cap};
    run_cell(&j, &B->core[k], B->o.timeout);
    progress(where, "greedy-size (core)", &B->core[k]);
    j.kind = JOB_ORACLE;
    j.strategy = NULL;
    run_cell(&j, &B->oracle[k], B->o.timeout);
    progress(where, "oracle_greedy_size O(n^2)", &B->oracle[k]);
    note_bad(B, &B->core[k]);
    note_bad(B, &B->oracle[k]);
    if (B->oracle[k].status == C_OK && !B->oracle[k].identical) B->bad++;
}

static int is_oracle_size(size_t n) { return n == 10000 || n == 100000; }

static int run_generated(bench *B) {
    for (size_t n = 1000; n <= B->o.max_n && B->n_ns < MAX_NS; n *= 10) B->ns[B->n_ns++] = n;
    if (B->n_ns == 0) B->ns[B->n_ns++] = B->o.max_n;
    mp_buffer_t *b = malloc(B->ns[B->n_ns - 1] * sizeof *b);
    if (!b) return fprintf(stderr, "bench_plan: out of memory\n"), -1;
    for (int k = 0; k < B->n_ns; k++) {
        size_t n = B->ns[k];
        mp_gen_problem(b, n, MP_GEN_DNN, SEED);
        if (mp_bounds_compute(b, n, &B->bd[k]) != MP_OK) {
            fprintf(stderr, "bench_plan: bounds: %s\n", mp_last_error());
            free(b);
            return -1;
        }
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < n; i++) lo = mp__min64(lo, b[i].first), hi = mp__max64(hi, b[i].last);
        B->span[k] = hi - lo + 1;
        run_size(B, k, b);
        if (is_oracle_size(n)) run_oracle(B, k, b);
    }
    free(b);
    return 0;
}

enum { SHOW_WALL, SHOW_RATIO, SHOW_CPU };

/* A table cell for a strategy cell: time, ratio to the bound, or why not. */
static void put_cell(const cell *c, int show, uint64_t lb, int reps) {
    char buf[32];
    switch (c->status) {
    case C_OK:
        if (show == SHOW_CPU) {
            printf(" %s |", fmt_ms(buf, sizeof buf, c->cpu));
        } else if (show == SHOW_RATIO) {
            if (c->footprint == lb) printf(" 1 (=LB) |");
            else printf(" %.4f |", (double)c->footprint / (double)lb);
        } else if (c->reps < reps) {
            printf(" %s (%d run%s) |", fmt_ms(buf, sizeof buf, c->med), c->reps,
                   c->reps == 1 ? "" : "s");
        } else {
            printf(" %s |", fmt_ms(buf, sizeof buf, c->med));
        }
        break;
    case C_INVALID: printf(" **INVALID** |"); break;
    case C_SKIPPED: printf(" %s |", c->msg); break;
    default: printf(" %s |", c->msg); break;
    }
}

/* Growth between size indices k-1 and k as "t ratio (n^e)". */
static void put_growth(const bench *B, const strat *s, int k) {
    const cell *a = &s->cell[k - 1], *c = &s->cell[k];
    if (a->status != C_OK || c->status != C_OK || a->med <= 0) {
        printf(" - |");
        return;
    }
    double r = c->med / a->med;
    printf(" %.1fx (n^%.2f) |", r, log(r) / log((double)B->ns[k] / (double)B->ns[k - 1]));
}

static void print_generated(const bench *B) {
    char nb[32], m1[32];
    printf("## 1. Planning time on generated DNN-shaped instances\n\n");
    printf("`mp_gen_problem(b, n, MP_GEN_DNN, %u)` (tests/gen.c): buffer i starts near "
           "time i/2, most live 2-5 steps, one in eight up to 65; tensor-like sizes from 64 B "
           "to 1 MiB. Times are of `mp_plan_compute` end to end (validation, normalization, "
           "the strategy, building the plan).\n\n", SEED);
    printf("| n | time steps | offset LB | object LB | naive (sum) | max live buffers |\n"
           "|---|---|---|---|---|---|\n");
    for (int k = 0; k < B->n_ns; k++)
        printf("| %s | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |\n",
               fmt_n(nb, sizeof nb, B->ns[k]), B->span[k], B->bd[k].offsets, B->bd[k].objects,
               B->bd[k].naive, B->bd[k].peak_count);
    printf("\n### Planning time, milliseconds (median)\n\n| strategy |");
    for (int k = 0; k < B->n_ns; k++) printf(" n=%s |", fmt_n(nb, sizeof nb, B->ns[k]));
    int g0 = B->n_ns >= 3 ? B->n_ns - 2 : 1;
    for (int k = g0; k < B->n_ns; k++)
        printf(" growth %s→%s |", fmt_n(nb, sizeof nb, B->ns[k - 1]),
               fmt_n(m1, sizeof m1, B->ns[k]));
    printf("\n|---|");
    for (int k = 0; k < B->n_ns; k++) printf("---|");
    for (int k = g0; k < B->n_ns; k++) printf("---|");
    printf("\n");
    for (size_t i = 0; i < B->n_st; i++) {
        printf("| %s |", B->st[i].info->name);
        for (int k = 0; k < B->n_ns; k++) put_cell(&B->st[i].cell[k], SHOW_WALL, 0, B->o.reps);
        for (int k = g0; k < B->n_ns; k++) put_growth(B, &B->st[i], k);
        printf("\n");
    }
    printf("\nGrowth is the time ratio between consecutive sizes and the exponent e with "
           "ratio = 10^e: n log n gives about n^1.05-1.1 per decade, n^2 gives n^2. "
           "Cache misses also grow with n: at 10^6 the arrays no longer fit in cache, which "
           "shows even in `naive`.\n");
    printf("\n### CPU time of the same runs, milliseconds (median)\n\n"
           "Wall-clock time above minus the time other processes held the CPU; equal to it "
           "on a quiet machine.\n\n| strategy |");
    for (int k = 0; k < B->n_ns; k++) printf(" n=%s |", fmt_n(nb, sizeof nb, B->ns[k]));
    printf("\n|---|");
    for (int k = 0; k < B->n_ns; k++) printf("---|");
    printf("\n");
    for (size_t i = 0; i < B->n_st; i++) {
        printf("| %s |", B->st[i].info->name);
        for (int k = 0; k < B->n_ns; k++) put_cell(&B->st[i].cell[k], SHOW_CPU, 0, B->o.reps);
        printf("\n");
    }
    printf("\n### Footprint / offset lower bound\n\n| strategy |");
    for (int k = 0; k < B->n_ns; k++) printf(" n=%s |", fmt_n(nb, sizeof nb, B->ns[k]));
    printf("\n|---|");
    for (int k = 0; k < B->n_ns; k++) printf("---|");
    printf("\n");
    for (size_t i = 0; i < B->n_st; i++) {
        printf("| %s |", B->st[i].info->name);
        for (int k = 0; k < B->n_ns; k++)
            put_cell(&B->st[i].cell[k], SHOW_RATIO, B->bd[k].offsets, B->o.reps);
        printf("\n");
    }
    const strat *au = NULL;
    for (size_t i = 0; i < B->n_st; i++)
        if (B->st[i].info->kind == MP_KIND_META) au = &B->st[i];
    if (au) {
        printf("\n`auto` picked:");
        for (int k = 0; k < B->n_ns; k++)
            if (au->cell[k].status == C_OK)
                printf(" %s at n=%s;", au->cell[k].msg[0] ? au->cell[k].msg : "?",
                       fmt_n(nb, sizeof nb, B->ns[k]));
        printf("\n");
    }
    printf("\n");
}

static void print_oracle(const bench *B) {
    char nb[32];
    printf("## 2. greedy-size against its O(n^2) oracle\n\n");
    printf("Same DNN instance as above. Both sides run on the same normalized problem: "
           "`mp__offsets_greedy_size` (the shipped sweep over an interval index, "
           "src/offsets/gapfit.c) against `oracle_greedy_size` (Alg. 3 of pisarchyk2020 as "
           "printed: every placement scans all placed buffers, tests/oracle_gapfit.c).\n\n");
    printf("| n | greedy-size, ms | oracle O(n^2), ms | speed-up | identical plans |\n"
           "|---|---|---|---|---|\n");
    int any = 0;
    for (int k = 0; k < B->n_ns; k++) {
        if (!is_oracle_size(B->ns[k])) continue;
        const cell *f = &B->core[k], *o = &B->oracle[k];
        any = 1;
        printf("| %s |", fmt_n(nb, sizeof nb, B->ns[k]));
        put_cell(f, SHOW_WALL, 0, B->o.reps);
        put_cell(o, SHOW_WALL, 0, B->o.reps);
        if (f->status == C_OK && o->status == C_OK && f->med > 0)
            printf(" %.0fx |", o->med / f->med);
        else
            printf(" - |");
        printf(" %s |\n", o->status != C_OK ? "-" : o->identical ? "yes" : "**NO**");
    }
    if (!any) printf("| (no size of 10^4 or 10^5 within --max-n) | | | | |\n");
    printf("\n");
}

/* ---- part 3: DSA instances -------------------------------------------- */

typedef struct dsa_file {
    char *rel;            /* path below the DSA directory */
    size_t n;
    mp_bounds_t bd;
    char err[320];        /* why the file could not be read, "" if it was */
    cell cell[MAX_STRATEGIES];
} dsa_file;

typedef struct dsa {
    dsa_file *f;
    size_t count, cap;
} dsa;

static int cmp_str(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Collects the *.csv files below root/rel, recursively. */
static void walk(const char *root, const char *rel, char ***out, size_t *len, size_t *cap) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[4096], full[8192];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            walk(root, sub, out, len, cap);
        } else if (strlen(sub) > 4 && !strcmp(sub + strlen(sub) - 4, ".csv") &&
                   mp__grow((void **)out, cap, *len + 1, sizeof **out) == MP_OK) {
            (*out)[(*len)++] = strdup(sub);
        }
    }
    closedir(d);
}

/* --quick keeps two small files, one per source, when they are there. */
static int quick_keep(const char *rel) {
    return !strcmp(rel, "minimalloc/challenging/A.1048576.csv") ||
           !strcmp(rel, "idealloc/somas_tensors/resnet50.csv");
}

static void run_dsa_file(bench *B, const char *dir, dsa_file *f) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, f->rel);
    mp_buffer_t *b = NULL;
    if (mp_records_read(path, &b, &f->n) != MP_OK ||
        mp_bounds_compute(b, f->n, &f->bd) != MP_OK) {
        /* An unreadable input is reported beside the instances; it says
         * nothing about the planners, so it does not fail the run. */
        const char *e = mp_last_error();
        size_t pl = strlen(path);
        snprintf(f->err, sizeof f->err, "%s%s", strncmp(e, path, pl) ? "" : f->rel,
                 strncmp(e, path, pl) ? e : e + pl);
        fprintf(stderr, "bench_plan: %s: not read: %s\n", f->rel, f->err);
        f->n = 0;
        free(b);
        return;
    }
    for (size_t i = 0; i < B->n_st; i++) {
        const mp_strategy_info_t *in = B->st[i].info;
        cell *c = &f->cell[i];
        if (in->all_limit && f->n > in->all_limit) {
            memset(c, 0, sizeof *c);
            c->status = C_SKIPPED;
            snprintf(c->msg, sizeof c->msg, "skipped (n > %zu)", in->all_limit);
        } else {
            job j = {JOB_STRATEGY, in->name, b, f->n, f->bd.offsets, B->o.reps, B->o.cap};
            run_cell(&j, c, B->o.timeout);
            note_bad(B, c);
        }
        progress(f->rel, in->name, c);
    }
    free(b);
}

static void run_dsa(bench *B, dsa *D) {
    char **names = NULL;
    size_t len = 0, cap = 0;
    walk(B->o.dsa, "", &names, &len, &cap);
    qsort(names, len, sizeof *names, cmp_str);
    size_t keep = 0, preferred = 0;
    for (size_t i = 0; i < len; i++) preferred += quick_keep(names[i]);
    for (size_t i = 0; i < len; i++) {
        /* --quick: the two preferred files, else the first two found */
        int want = !B->o.quick || (preferred ? quick_keep(names[i]) : keep < 2);
        if (want && mp__grow((void **)&D->f, &D->cap, keep + 1, sizeof *D->f) == MP_OK) {
            memset(&D->f[keep], 0, sizeof D->f[keep]);
            D->f[keep++].rel = names[i];
        } else {
            free(names[i]);
        }
    }
    D->count = keep;
    free(names);
    for (size_t i = 0; i < D->count; i++) run_dsa_file(B, B->o.dsa, &D->f[i]);
}

/* One wide table: rows are files, columns the strategies of one group. */
static void print_dsa_table(const bench *B, const dsa *D, int objects, int times) {
    printf("| instance | buffers |");
    for (size_t i = 0; i < B->n_st; i++)
        if ((B->st[i].info->kind == MP_KIND_OBJECTS) == objects) printf(" %s |", B->st[i].info->name);
    printf("\n|---|---|");
    for (size_t i = 0; i < B->n_st; i++)
        if ((B->st[i].info->kind == MP_KIND_OBJECTS) == objects) printf("---|");
    printf("\n");
    for (size_t r = 0; r < D->count; r++) {
        const dsa_file *f = &D->f[r];
        if (!f->n) continue;
        uint64_t best = UINT64_MAX;
        for (size_t i = 0; i < B->n_st; i++)
            if (f->cell[i].status == C_OK) best = mp__min64(best, f->cell[i].footprint);
        printf("| %s | %zu |", f->rel, f->n);
        for (size_t i = 0; i < B->n_st; i++) {
            if ((B->st[i].info->kind == MP_KIND_OBJECTS) != objects) continue;
            const cell *c = &f->cell[i];
            if (!times && c->status == C_OK && c->footprint == best) {
                printf(" **");
                if (c->footprint == f->bd.offsets) printf("1 (=LB)** |");
                else printf("%.4f** |", (double)c->footprint / (double)f->bd.offsets);
            } else {
                put_cell(c, times ? SHOW_WALL : SHOW_RATIO, f->bd.offsets, B->o.reps);
            }
        }
        printf("\n");
    }
    if (times) return;
    printf("| geometric mean | |");
    for (size_t i = 0; i < B->n_st; i++) {
        if ((B->st[i].info->kind == MP_KIND_OBJECTS) != objects) continue;
        double lg = 0;
        size_t k = 0;
        for (size_t r = 0; r < D->count; r++)
            if (D->f[r].n && D->f[r].cell[i].status == C_OK)
                lg += log((double)D->f[r].cell[i].footprint / (double)D->f[r].bd.offsets), k++;
        if (k) printf(" %.4f (%zu files) |", exp(lg / (double)k), k);
        else printf(" - |");
    }
    printf("\n");
}

static void print_dsa(const bench *B, const dsa *D) {
    printf("## 3. Public DSA instances\n\n");
    if (!B->o.dsa) {
        printf("Skipped (--no-dsa).\n\n");
        return;
    }
    if (D->count == 0) {
        printf("Skipped: no instances found under `%s` (a clean clone has no copy; see "
               "--dsa).\n\n", B->o.dsa);
        return;
    }
    printf("MiniMalloc's challenging set A..K (google/minimalloc `benchmarks/`) and "
           "idealloc's traces (cappadokes/idealloc `benchmarks/`), read with "
           "`mp_records_read` (half-open `lower,upper` header). Provenance and licenses: "
           "README.md of the DSA directory.%s Best footprint per row in bold; LB is the "
           "offset lower bound (max live bytes), which need not be reachable.\n\n",
           B->o.quick ? " **--quick: only two files.**" : "");
    printf("| instance | buffers | max live buffers | offset LB | object LB | naive |\n"
           "|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < D->count; r++) {
        const dsa_file *f = &D->f[r];
        if (f->n)
            printf("| %s | %zu | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |\n",
                   f->rel, f->n, f->bd.peak_count, f->bd.offsets, f->bd.objects, f->bd.naive);
        else
            printf("| %s | not read: %s | | | | |\n", f->rel, f->err[0] ? f->err : "empty");
    }
    printf("\n### Footprint / offset LB: offset strategies and auto\n\n");
    print_dsa_table(B, D, 0, 0);
    printf("\n### Footprint / offset LB: shared-object strategies\n\n");
    print_dsa_table(B, D, 1, 0);
    printf("\n### Planning time, ms (median): offset strategies and auto\n\n");
    print_dsa_table(B, D, 0, 1);
    printf("\n### Planning time, ms (median): shared-object strategies\n\n");
    print_dsa_table(B, D, 1, 1);
    printf("\n<details><summary>Every run: exact footprints, validity</summary>\n\n"
           "| instance | strategy | footprint | / LB | time, ms | runs | valid |\n"
           "|---|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < D->count; r++) {
        const dsa_file *f = &D->f[r];
        for (size_t i = 0; f->n && i < B->n_st; i++) {
            const cell *c = &f->cell[i];
            char ms[32];
            printf("| %s | %s%s%s%s |", f->rel, B->st[i].info->name, c->msg[0] && c->status == C_OK ? " (picked " : "",
                   c->status == C_OK ? c->msg : "", c->msg[0] && c->status == C_OK ? ")" : "");
            if (c->status == C_OK)
                printf(" %" PRIu64 " | %.4f | %s | %d | yes |\n", c->footprint,
                       (double)c->footprint / (double)f->bd.offsets,
                       fmt_ms(ms, sizeof ms, c->med), c->reps);
            else
                printf(" - | - | - | - | %s |\n",
                       c->status == C_INVALID ? "**INVALID**" : c->msg);
        }
    }
    printf("\n</details>\n\n");
}

/* ---- findings: what the run says about the targets --------------------- */

static const strat *find_strat(const bench *B, const char *name) {
    for (size_t i = 0; i < B->n_st; i++)
        if (!strcmp(B->st[i].info->name, name)) return &B->st[i];
    return NULL;
}

static void print_findings(const bench *B, const dsa *D) {
    char nb[32], ms[32];
    int last = B->n_ns - 1;
    printf("## Findings of this run (computed)\n\n");
    const strat *au = find_strat(B, "auto");
    if (au && last >= 0) {
        const cell *c = &au->cell[last];
        fmt_n(nb, sizeof nb, B->ns[last]);
        char cp[32];
        if (c->status == C_OK)
            printf("- `auto` plans n=%s DNN-shaped buffers in %s ms (CPU %s ms)%s (target: "
                   "about 1 s for 10^6 on this machine).\n", nb, fmt_ms(ms, sizeof ms, c->med),
                   fmt_ms(cp, sizeof cp, c->cpu),
                   B->ns[last] != 1000000 ? " (10^6 not run)"
                   : c->med <= 1.5 ? ": target met" : ": **target missed**");
        else
            printf("- `auto` at n=%s: %s (target: about 1 s for 10^6): **target missed**.\n", nb,
                   c->msg);
    }
    for (int k = 0; k < B->n_ns; k++) {
        if (B->ns[k] != 100000) continue;
        const cell *f = &B->core[k], *o = &B->oracle[k];
        if (f->status == C_OK && o->status == C_OK)
            printf("- greedy-size at 10^5 is %.0fx faster than its O(n^2) oracle (target: at "
                   "least 10x): %s; plans %s.\n", o->med / f->med,
                   o->med / f->med >= 10 ? "target met" : "**target missed**",
                   o->identical ? "identical" : "**differ**");
        else
            printf("- greedy-size vs oracle at 10^5: not measured (%s).\n",
                   f->status != C_OK ? f->msg : o->msg);
    }
    int any = 0;
    /* Below 10^5 the times are too short to tell n log n from worse. */
    for (size_t i = 0; last >= 1 && B->ns[last] >= 100000 && i < B->n_st; i++) {
        const cell *a = &B->st[i].cell[last - 1], *c = &B->st[i].cell[last];
        if (c->status != C_OK) {
            if (c->status != C_SKIPPED || !B->st[i].info->all_limit) {
                printf("- %s at n=%s: %s.\n", B->st[i].info->name,
                       fmt_n(nb, sizeof nb, B->ns[last]),
                       c->status == C_INVALID ? "**INVALID plan**" : c->msg);
                any = 1;
            }
            continue;
        }
        if (a->status != C_OK || a->med <= 0) continue;
        double e = log(c->med / a->med) / log((double)B->ns[last] / (double)B->ns[last - 1]);
        if (e > 1.3 || c->med > 2.0) {
            printf("- %s grows like n^%.2f between the two largest sizes (%s ms at n=%s).\n",
                   B->st[i].info->name, e, fmt_ms(ms, sizeof ms, c->med),
                   fmt_n(nb, sizeof nb, B->ns[last]));
            any = 1;
        }
    }
    if (!any && last >= 1 && B->ns[last] >= 100000)
        printf("- every strategy run at the largest size grows at most like n^1.3 between the "
               "two largest sizes and takes under 2 s.\n");
    for (size_t i = 0; i < B->n_st; i++) {
        int first = 1;
        for (size_t r = 0; r < D->count; r++) {
            const cell *c = &D->f[r].cell[i];
            if (!D->f[r].n || (c->status == C_OK && c->med <= 1.0) || c->status == C_SKIPPED)
                continue;
            if (first) printf("- %s takes over 1 s on DSA instances:", B->st[i].info->name);
            printf("%s %s (", first ? "" : ",", D->f[r].rel);
            if (c->status == C_OK) printf("%.1f s)", c->med);
            else printf("%s)", c->status == C_INVALID ? "INVALID" : c->msg);
            first = 0;
        }
        if (!first) printf(".\n");
    }
    printf("- invalid plans, failures or crashes in the whole run: %d%s.\n", B->bad,
           B->bad ? " (**see the tables**)" : "");
    char load[64];
    if (B->cpu > 0)
        printf("- wall-clock / CPU time over all timed cells: %.2f (1.00 on a quiet machine; "
               "higher means other processes took the CPU and wall times are inflated); "
               "load average at the end: %s.\n", B->wall / B->cpu, loadavg(load, sizeof load));
    printf("\n");
}

int main(int argc, char **argv) {
    static bench B;
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
    for (size_t r = 0; r < D.count; r++) free(D.f[r].rel);
    free(D.f);
    if (B.bad) fprintf(stderr, "bench_plan: %d invalid plans, failures or crashes\n", B.bad);
    return B.bad ? 1 : 0;
}
