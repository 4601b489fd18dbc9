/* generated.c -- parts 1 and 2: generated DNN-shaped instances at
 * n = 10^3 .. --max-n with every strategy timed on each, greedy-size's core
 * against its O(n^2) oracle at 10^4 and 10^5, and the printing of both. */
#include "bench.h"
#include "gen.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOW_SKIP_S 20.0

/* ---- running ------------------------------------------------------------- */

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

int run_generated(bench *B) {
    for (size_t n = 1000; n <= B->o.max_n && B->n_ns < MAX_NS; n *= 10) B->ns[B->n_ns++] = n;
    if (B->n_ns == 0) B->ns[B->n_ns++] = B->o.max_n;
    mp_buffer_t *b = malloc(B->ns[B->n_ns - 1] * sizeof *b);
    if (!b) return fprintf(stderr, "bench_plan: out of memory\n"), -1;
    for (int k = 0; k < B->n_ns; k++) {
        size_t n = B->ns[k];
        mp_gen_problem(b, n, MP_GEN_DNN, GEN_SEED);
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
/* ---- printing ------------------------------------------------------------ */

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

void print_generated(const bench *B) {
    char nb[32], m1[32];
    printf("## 1. Planning time on generated DNN-shaped instances\n\n");
    printf("`mp_gen_problem(b, n, MP_GEN_DNN, %u)` (tests/gen.c): buffer i starts near "
           "time i/2, most live 2-5 steps, one in eight up to 65; tensor-like sizes from 64 B "
           "to 1 MiB. Times are of `mp_plan_compute` end to end (validation, normalization, "
           "the strategy, building the plan).\n\n", GEN_SEED);
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

void print_oracle(const bench *B) {
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
