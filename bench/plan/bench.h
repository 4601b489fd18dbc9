/* bench.h -- bench_plan: planning-time benchmark of the core planners.
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
 * the oracle disagreed.
 *
 * The files of bench/plan/: main.c (options, main), cell.c (one timed cell
 * in a forked child), format.c (numbers and table cells), machine.c (the
 * machine and the report header), generated.c (parts 1 and 2), dsa.c
 * (part 3), findings.c (the computed findings).  This header holds the
 * types they share and the functions they call across files. */
#ifndef MP_BENCH_PLAN_H
#define MP_BENCH_PLAN_H

#include "core/internal.h"

#include <stddef.h>
#include <stdint.h>

#define MAX_REPS 64
/* Part 1's instances: mp_gen_problem(b, n, MP_GEN_DNN, GEN_SEED). */
#define GEN_SEED 20240601u
#define MAX_NS 8
#define MAX_STRATEGIES 64

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

/* ---- the whole run ------------------------------------------------------ */

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

/* ---- cell.c ------------------------------------------------------------- */

/* Runs job j in a forked child killed after timeout seconds; fills *c. */
void run_cell(const job *j, cell *c, double timeout);
/* Prints one progress line for cell c of `what` at `where` on stderr. */
void progress(const char *where, const char *what, const cell *c);
/* Counts c into B's failure count and wall/CPU sums. */
void note_bad(bench *B, const cell *c);

/* ---- format.c ----------------------------------------------------------- */

enum { SHOW_WALL, SHOW_RATIO, SHOW_CPU };

/* Writes sec as milliseconds, about three significant digits, into buf. */
const char *fmt_ms(char *buf, size_t len, double sec);
/* Writes n into buf, as 10^e when n is a power of ten >= 1000. */
const char *fmt_n(char *buf, size_t len, size_t n);
/* Prints " X |" for c: time (SHOW_WALL/SHOW_CPU), footprint/lb (SHOW_RATIO), or why not. */
void put_cell(const cell *c, int show, uint64_t lb, int reps);

/* ---- machine.c ---------------------------------------------------------- */

/* Writes the three load averages of /proc/loadavg (or "unknown") into buf. */
const char *loadavg(char *buf, size_t len);
/* Prints the report's title and the machine, build and options it ran with. */
void print_header(const opts *o, int argc, char **argv);

/* ---- generated.c -------------------------------------------------------- */

/* Runs parts 1 and 2 into B (sizes, bounds, cells); -1 on out of memory or error. */
int run_generated(bench *B);
/* Prints part 1 (generated instances) from B. */
void print_generated(const bench *B);
/* Prints part 2 (greedy-size against its oracle) from B. */
void print_oracle(const bench *B);

/* ---- dsa.c -------------------------------------------------------------- */

/* Finds the DSA files under B->o.dsa into D and runs every strategy on them. */
void run_dsa(bench *B, dsa *D);
/* Prints part 3 from B and D. */
void print_dsa(const bench *B, const dsa *D);
/* Frees what run_dsa allocated in D. */
void dsa_free(dsa *D);

/* ---- findings.c --------------------------------------------------------- */

/* Prints the findings section computed from B and D. */
void print_findings(const bench *B, const dsa *D);

#endif
