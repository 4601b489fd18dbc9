/* auto.c -- "auto": run the offset strategies that can win, keep the best.
 *
 * The candidates are the offset strategies flagged in_auto, in the fixed
 * registry order.  The smallest footprint wins, ties going to the earlier
 * strategy; once a plan meets the offset lower bound nothing can beat it, so
 * no further strategy is started.  pisarchyk2020 sec. 6-7 recommends this
 * kind of exploration before inference.
 *
 * Candidates run on up to two threads (this project's machines have two
 * cores).  Threads take candidates in registry order, so when candidate j
 * meets the bound every earlier candidate has been started and is allowed
 * to finish: the winner is the first candidate in order with the smallest
 * footprint, exactly what a sequential run picks.  Only the report's
 * `tried` count may vary with timing. */
#include "../core/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_THREADS = 2 };

typedef struct job {
    const mp_buffer_t *b;
    size_t n;
    uint64_t lb;
    const mp__strategy **cand;   /* candidates in order */
    size_t n_cand;
    mp_plan_t *plan;             /* one per candidate */
    mp_status *status;
    bool *ran;
    atomic_size_t next;          /* next candidate to start */
    atomic_bool at_bound;        /* some finished plan meets the bound */
} job;

static void *worker(void *arg) {
    job *j = arg;
    for (;;) {
        if (atomic_load(&j->at_bound)) break;
        size_t c = atomic_fetch_add(&j->next, 1);
        if (c >= j->n_cand) break;
        j->status[c] = mp__run_strategy(j->cand[c], j->b, j->n, &j->plan[c]);
        j->ran[c] = true;
        if (j->status[c] == MP_OK && j->plan[c].footprint == j->lb)
            atomic_store(&j->at_bound, true);
    }
    return NULL;
}

static size_t thread_count(size_t n, size_t n_cand) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t t = cpus > 1 ? MAX_THREADS : 1;
    /* Threads cost more than they save on small problems. */
    if (n < 20000) t = 1;
    return t < n_cand ? t : n_cand;
}

/* Runs the candidates; the calling thread is one of the workers. */
static mp_status run_all(job *j) {
    size_t nt = thread_count(j->n, j->n_cand), started = 0;
    pthread_t th[MAX_THREADS];
    for (size_t t = 1; t < nt; t++)
        if (pthread_create(&th[started], NULL, worker, j) == 0) started++;
    worker(j);
    for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
    for (size_t c = 0; c < j->n_cand; c++)
        if (j->ran[c] && j->status[c] != MP_OK)
            return mp__err(j->status[c], "auto: %s failed", j->cand[c]->info.name);
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
    atomic_init(&j.next, 0);
    atomic_init(&j.at_bound, false);
    mp_status s = j.cand && j.plan && j.status && j.ran ? MP_OK : MP__NOMEM();
    for (size_t i = 0; s == MP_OK && i < nreg; i++)
        if (reg[i].in_auto) j.cand[j.n_cand++] = &reg[i];
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
