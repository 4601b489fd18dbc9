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
 * report's `tried` count can be one higher than sequential.
 *
 * The watch.  Strategies that place buffers one at a time (the gap-fit
 * placer, strip-bestfit) report their footprint so far, which only grows.
 * A candidate stops as soon as it can no longer win: its footprint so far
 * is above a finished candidate's, or equal to it and that candidate comes
 * first.  And a candidate whose footprint so far is above the bound (so it
 * cannot be optimal) waits while the other candidate of its batch runs
 * unwaiting: that one may still meet the bound, which settles everything.
 * On DNN-shaped inputs greedy-size passes the bound after ~15% of its
 * placements, then sleeps while strip-bestfit meets the bound alone, and
 * is stopped: the two no longer split the cores (and caches) for the whole
 * run.  When the other does not meet the bound the waiter resumes, so the
 * worst case is the two run one after the other.  A stopped candidate
 * could not have won, so the winner, and the plan, are those of a run
 * without the watch; it still counts in `tried`.
 *
 * The offset bound is computed by the caller's thread while the first
 * batch's other candidate (strip-bestfit) already runs: until it is known
 * the watch takes it as unknown (no candidate waits), so it costs the
 * first batch nothing. */
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
    uint64_t lb_known;           /* lb once computed, UINT64_MAX before (under mu) */
    bool abort;                  /* the bound failed: candidates stop (under mu) */
    const mp__strategy **cand;   /* candidates in order */
    size_t n_cand;
    mp_plan_t *plan;             /* one per candidate */
    mp_status *status;
    bool *ran;
    /* The watch's state, under mu: per candidate running (started, not
     * finished), waiting (blocked in mp__watch_poll), done (a plan). */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool *running, *waiting, *done;
} job;

struct mp__watch { job *j; size_t c; };

_Thread_local mp__watch *mp__cur_watch;

/* Whether candidate c, at footprint `partial` so far, can no longer win
 * against a finished candidate.  Under mu. */
static bool beaten(const job *j, size_t c, uint64_t partial) {
    if (j->abort) return true;
    for (size_t d = 0; d < j->n_cand; d++)
        if (j->done[d] && (partial > j->plan[d].footprint || (partial == j->plan[d].footprint && d < c)))
            return true;
    return false;
}

bool mp__watch_poll(mp__watch *w, uint64_t partial) {
    job *j = w->j;
    bool stop;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        if ((stop = beaten(j, w->c, partial)) || partial <= j->lb_known) break;
        bool other = false; /* another candidate runs and is not waiting */
        for (size_t d = 0; d < j->n_cand; d++) other |= d != w->c && j->running[d] && !j->waiting[d];
        if (!other) break;
        j->waiting[w->c] = true;
        pthread_cond_wait(&j->cv, &j->mu);
        j->waiting[w->c] = false;
    }
    pthread_mutex_unlock(&j->mu);
    return stop;
}

typedef struct task { job *j; size_t c; } task;

static void *run_task(void *arg) {
    task *t = arg;
    job *j = t->j;
    mp__watch w = {j, t->c};
    mp__cur_watch = &w;
    mp_status s = mp__run_strategy(j->cand[t->c], j->b, j->n, &j->plan[t->c]);
    mp__cur_watch = NULL;
    pthread_mutex_lock(&j->mu);
    j->status[t->c] = s == (mp_status)MP__STOPPED ? MP_OK : s;
    j->done[t->c] = s == MP_OK;
    j->running[t->c] = false;
    j->ran[t->c] = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static size_t thread_count(size_t n) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* Threads cost more than they save on small problems. */
    return cpus > 1 && n >= 20000 ? MAX_THREADS : 1;
}

static void set_running(job *j, size_t c, bool on) {
    pthread_mutex_lock(&j->mu);
    j->running[c] = on;
    pthread_mutex_unlock(&j->mu);
}

/* Computes the offset bound and tells the watch; on failure, stops the
 * candidates already running. */
static mp_status bound(job *j) {
    mp_status s = mp__offsets_bound(j->b, j->n, &j->lb);
    pthread_mutex_lock(&j->mu);
    if (s == MP_OK) j->lb_known = j->lb;
    else j->abort = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return s;
}

/* Runs the candidates in batches of one per thread (the caller runs the
 * first of each batch, after the bound in the first batch), stopping after
 * the batch in which a plan meets the bound.  Every candidate before the
 * stop has run, as in a sequential run, so the winner does not depend on
 * timing. */
static mp_status run_all(job *j) {
    size_t nt = thread_count(j->n);
    bool at_bound = false;
    mp_status sb = j->n_cand ? MP_OK : bound(j);
    for (size_t c0 = 0; c0 < j->n_cand && !at_bound; c0 += nt) {
        task t[MAX_THREADS];
        pthread_t th[MAX_THREADS];
        bool started[MAX_THREADS] = {false};
        size_t m = j->n_cand - c0 < nt ? j->n_cand - c0 : nt;
        /* No thread runs yet: running[] needs no lock until the first. */
        for (size_t k = 0; k < m; k++) t[k] = (task){j, c0 + k}, j->running[c0 + k] = true;
        for (size_t k = 1; k < m; k++)
            if (!(started[k] = pthread_create(&th[k], NULL, run_task, &t[k]) == 0))
                set_running(j, c0 + k, false); /* it runs later, here */
        if (c0 == 0) sb = bound(j);
        if (sb == MP_OK) run_task(&t[0]);
        for (size_t k = 1; k < m; k++) {
            if (started[k]) pthread_join(th[k], NULL);
            else if (sb == MP_OK) set_running(j, c0 + k, true), run_task(&t[k]); /* no thread */
        }
        if (sb != MP_OK) return sb;
        for (size_t k = 0; k < m; k++) {
            size_t c = c0 + k;
            if (j->status[c] != MP_OK)
                return mp__err(j->status[c], "auto: %s failed", j->cand[c]->info.name);
            at_bound |= j->done[c] && j->plan[c].footprint == j->lb;
        }
    }
    return sb;
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
    j.running = calloc(nreg, sizeof *j.running);
    j.waiting = calloc(nreg, sizeof *j.waiting);
    j.done = calloc(nreg, sizeof *j.done);
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv, NULL);
    mp_status s = j.cand && j.plan && j.status && j.ran && j.running && j.waiting && j.done
                      ? MP_OK : MP__NOMEM();
    for (size_t o = 0; s == MP_OK && o < sizeof auto_order / sizeof auto_order[0]; o++)
        for (size_t i = 0; i < nreg; i++)
            if (reg[i].in_auto && !strcmp(reg[i].info.name, auto_order[o])) j.cand[j.n_cand++] = &reg[i];
    j.lb_known = UINT64_MAX;
    if (s == MP_OK) s = run_all(&j);
    mp_auto_report_t r = {NULL, j.lb, 0, 0};
    size_t best = nreg;
    for (size_t c = 0; s == MP_OK && c < j.n_cand; c++) {
        if (!j.ran[c]) continue;
        r.tried++;
        if (!j.done[c]) continue; /* stopped: it could not have won */
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
    free(j.running), free(j.waiting), free(j.done);
    pthread_mutex_destroy(&j.mu);
    pthread_cond_destroy(&j.cv);
    if (s == MP_OK && rep) *rep = r;
    return s;
}
