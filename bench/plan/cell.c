/* cell.c -- one timed cell: a strategy (or greedy-size's core, or its
 * oracle) run up to R times on one instance in a forked child, the first
 * plan proved by the checker and later ones compared with it, the result
 * sent back through a pipe and the child killed when it passes the timeout. */
#include "bench.h"
#include "oracle.h"
#include "strategies/strategies.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- timing ------------------------------------------------------------- */

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

/* ---- the job, in the child -------------------------------------------- */

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

/* ---- the cell, in the parent ------------------------------------------ */

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
void run_cell(const job *j, cell *c, double timeout) {
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

/* One line on stderr per cell, so a long run shows where it is. */
void progress(const char *where, const char *what, const cell *c) {
    char ms[32];
    if (c->status == C_OK)
        fprintf(stderr, "[%s] %-30s %10s ms  (%d run%s)\n", where, what,
                fmt_ms(ms, sizeof ms, c->med), c->reps, c->reps == 1 ? "" : "s");
    else
        fprintf(stderr, "[%s] %-30s %s\n", where, what, c->msg);
}

/* Failures fail the run; wall/CPU over the timed cells tells how busy the
 * machine was. */
void note_bad(bench *B, const cell *c) {
    if (c->status == C_INVALID || c->status == C_FAILED || c->status == C_CRASH) B->bad++;
    if (c->status == C_OK) B->wall += c->med, B->cpu += c->cpu;
}
