/* auto.c -- "auto": run the offset strategies that can win, keep the best.
 *
 * The candidates are the offset strategies flagged in_auto, in the fixed
 * order below: first the two pisarchyk2020 sec. 6 recommends evaluating
 * before inference (greedy-size and strip-bestfit, the usual winners), then
 * the rest.  The smallest footprint wins, ties going to the earlier
 * strategy; once a plan meets the offset lower bound nothing can beat it, so
 * no further strategy is started.  pisarchyk2020 sec. 6-7 recommends this
 * kind of exploration before inference.
 *
 * Above 20000 buffers candidates run two at a time (this project's machines
 * have two cores), in order, in batches: after each batch we stop if a plan
 * met the bound.  The winner is the first candidate in order with the
 * smallest footprint, exactly what a sequential run picks; only the
 * report's `tried` count can be one higher than sequential. */
#include "../core/internal.h"
#include "../strategies/strategies.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 2 };

static const char *const auto_order[] = {
    "greedy-size", "strip-bestfit", "greedy-breadth", "smartpool-bestfit", "smartpool-firstfit",
    "inorder",
};

typedef struct job {
    const mp_buffer_t *b;
    size_t n;
    uint64_t lb;
    const mp__strategy **cand;   /* candidates in order */
    size_t n_cand;
    mp_plan_t *plan;             /* one per candidate */
    mp_status *status;
    bool *ran;
} job;

typedef struct task { job *j; size_t c; } task;

static void *run_task(void *arg) {
    task *t = arg;
    job *j = t->j;
    j->status[t->c] = mp__run_strategy(j->cand[t->c], j->b, j->n, &j->plan[t->c]);
    j->ran[t->c] = true;
    return NULL;
}

static size_t thread_count(size_t n) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* Threads cost more than they save on small problems. */
    return cpus > 1 && n >= 20000 ? MAX_THREADS : 1;
}

/* Runs the candidates in batches of one per thread (the caller runs the
 * first of each batch), stopping after the batch in which a plan meets
 * the bound.  Every candidate before the stop has run, as in a sequential
 * run, so the winner does not depend on timing. */
static mp_status run_all(job *j) {
    size_t nt = thread_count(j->n);
    bool at_bound = false;
    for (size_t c0 = 0; c0 < j->n_cand && !at_bound; c0 += nt) {
        task t[MAX_THREADS];
        pthread_t th[MAX_THREADS];
        bool started[MAX_THREADS] = {false};
        size_t m = j->n_cand - c0 < nt ? j->n_cand - c0 : nt;
        for (size_t k = 0; k < m; k++) t[k] = (task){j, c0 + k};
        for (size_t k = 1; k < m; k++) started[k] = pthread_create(&th[k], NULL, run_task, &t[k]) == 0;
        run_task(&t[0]);
        for (size_t k = 1; k < m; k++) {
            if (started[k]) pthread_join(th[k], NULL);
            else run_task(&t[k]); /* no thread to be had: run it here */
        }
        for (size_t k = 0; k < m; k++) {
            size_t c = c0 + k;
            if (j->status[c] != MP_OK)
                return mp__err(j->status[c], "auto: %s failed", j->cand[c]->info.name);
            at_bound |= j->plan[c].footprint == j->lb;
        }
    }
    return MP_OK;
}

static mp_status empty_plan(mp_plan_t *out, mp_auto_report_t *r) {
    out->offset = calloc(1, sizeof *out->offset);
    if (!out->offset) return MP__NOMEM();
    r->winner = out->strategy = "naive";
    r->optimal = 1;
    return MP_OK;
}

mp_status mp__auto(const mp_buffer_t *b, size_t n, mp_plan_t *out, mp_auto_report_t *rep) {
    memset(out, 0, sizeof *out);
    size_t nreg;
    const mp__strategy *reg = mp__registry(&nreg);
    job j = {.b = b, .n = n};
    j.cand = malloc(nreg * sizeof *j.cand);
    j.plan = calloc(nreg, sizeof *j.plan);
    j.status = calloc(nreg, sizeof *j.status);
    j.ran = calloc(nreg, sizeof *j.ran);
    mp_status s = j.cand && j.plan && j.status && j.ran ? MP_OK : MP__NOMEM();
    for (size_t o = 0; s == MP_OK && o < sizeof auto_order / sizeof auto_order[0]; o++)
        for (size_t i = 0; i < nreg; i++)
            if (reg[i].in_auto && !strcmp(reg[i].info.name, auto_order[o])) j.cand[j.n_cand++] = &reg[i];
    if (s == MP_OK) s = mp__offsets_bound(b, n, &j.lb);
    if (s == MP_OK) s = run_all(&j);
    mp_auto_report_t r = {NULL, j.lb, 0, 0};
    size_t best = nreg;
    for (size_t c = 0; s == MP_OK && c < j.n_cand; c++) {
        if (!j.ran[c]) continue;
        r.tried++;
        if (best == nreg || j.plan[c].footprint < j.plan[best].footprint) best = c;
    }
    if (s == MP_OK && best < nreg) {
        *out = j.plan[best];
        memset(&j.plan[best], 0, sizeof j.plan[best]);
        r.winner = out->strategy;
        r.optimal = out->footprint == j.lb;
    } else if (s == MP_OK) { /* no candidates at all */
        s = empty_plan(out, &r);
    }
    for (size_t c = 0; j.plan && c < j.n_cand; c++) mp_plan_free(&j.plan[c]);
    free(j.cand), free(j.plan), free(j.status), free(j.ran);
    if (s == MP_OK && rep) *rep = r;
    return s;
}
