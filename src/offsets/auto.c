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
 * first batch nothing.
 *
 * Whole-plan first fits.  When no strategy meets the bound, auto goes on
 * with first fits (gapfit.c's placer, lowest hole) in fixed orders
 * (src/exact/peak.c): greedy by size first (so auto is never worse than greedy-by-size first
 * fit, which beats every strategy above on idealloc's S_1), then the
 * peak-first orders, which start with the buffers live at the time of the
 * largest load and meet the bound on S_1 and pangu where no strategy comes
 * within 0.7% (docs/exact.md).  The same rules: a plan must be strictly
 * smaller to win, two run at a time above 20000 buffers, and a fit gives
 * up once its footprint so far reaches the best of the batches before (it
 * cannot win).  We stop at the bound, or after six fits in a row that
 * found nothing smaller, where a sequential run would, so the plan is that
 * of a sequential run.  A fit costs about what one strategy does (0.1 s on
 * S_1's 28 526 buffers); none runs where a strategy meets the bound, as on
 * DNN-shaped inputs. */
#include "gapfit.h"
#include "../exact/exact.h"
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

/* The first fits, in order: -1 greedy by size, v >= 0 peak-first variant v
 * of peak.c.  The variants by how often they beat the strategies, on the
 * idealloc traces, the hard set, the corpus and generated problems
 * (docs/strategies.md): 0 (S_1, E, two generated), 1 (pangu), 10
 * (resnet50, two mobilenets, two generated), 9, 6, 3, 8, then the rest. */
static const signed char fit_order[] = {-1, 0, 1, 10, 9, 6, 3, 8, 2, 4, 5, 7, 11};
/* We stop after PATIENCE fits in a row that found nothing smaller.  Each
 * costs about one strategy, and where none helps (random lifetimes) all 13
 * would triple auto's time.  The first six always run, and every win on
 * the real traces and the corpus comes within them or right after an
 * earlier win (one generated problem's, by variant 3, comes later). */
enum { N_FITS = sizeof fit_order / sizeof *fit_order, PATIENCE = 6 };

typedef struct fit {
    const mp_buffer_t *b;
    size_t n;
    int which;                   /* an entry of fit_order */
    uint64_t cap;                /* give up at this footprint */
    size_t *order;
    uint64_t *off;
    uint64_t fp;                 /* UINT64_MAX: gave up */
    mp_status s;
} fit;

/* First fit in f's order: gapfit.c's placer with SmartPool's first-fit
 * policy (the lowest hole, else on top) is first fit, on the gap index
 * where the trace is dense and the interval tree where it is not.  It
 * gives up as soon as its footprint so far reaches the cap: it cannot win. */
static void *run_fit(void *arg) {
    fit *f = arg;
    mp__gapfit g;
    f->fp = UINT64_MAX;
    f->s = f->which < 0 ? mp__xsize_order(f->b, f->n, f->order)
                        : mp__xpeak_order(f->b, f->n, (unsigned)f->which, f->order);
    if (f->s != MP_OK) return NULL;
    if ((f->s = mp__gapfit_init(&g, f->b, f->n, f->off, MP__GAP_SMARTPOOL_FIRST)) == MP_OK) {
        size_t i = 0;
        for (; f->s == MP_OK && i < f->n && g.top < f->cap; i++)
            f->s = mp__gapfit_place_leaf(&g, g.placed.pos[f->order[i]]);
        if (f->s == MP_OK && g.top < f->cap) {
            mp__gapfit_finish(&g);
            f->fp = g.top;
        }
    }
    mp__gapfit_free(&g);
    return NULL;
}

/* Runs the first fits after the strategies, in batches of one per thread,
 * on best (a plan above the bound lb), replacing its offsets with each
 * smaller plan, and stops where a sequential run would: at the bound or
 * after PATIENCE fits in a row without a smaller plan (a batch's fits past
 * that point are ignored).  *tried counts the fits run. */
static mp_status run_fits(const mp_buffer_t *b, size_t n, uint64_t lb, mp_plan_t *best,
                          size_t *tried) {
    size_t nt = thread_count(n), m0 = n ? n : 1;
    fit f[MAX_THREADS];
    mp_status s = MP_OK;
    size_t idle = 0; /* fits in a row without a smaller plan */
    for (size_t k = 0; k < nt; k++) {
        f[k] = (fit){b, n, 0, 0, malloc(m0 * sizeof *f[k].order), malloc(m0 * sizeof *f[k].off),
                     0, MP_OK};
        if (!f[k].order || !f[k].off) s = MP__NOMEM();
    }
    for (size_t c0 = 0; s == MP_OK && c0 < N_FITS && best->footprint > lb && idle < PATIENCE;
         c0 += nt) {
        pthread_t th[MAX_THREADS];
        bool started[MAX_THREADS] = {false};
        size_t m = N_FITS - c0 < nt ? N_FITS - c0 : nt;
        for (size_t k = 0; k < m; k++) f[k].which = fit_order[c0 + k], f[k].cap = best->footprint;
        for (size_t k = 1; k < m; k++) started[k] = pthread_create(&th[k], NULL, run_fit, &f[k]) == 0;
        run_fit(&f[0]);
        for (size_t k = 1; k < m; k++) {
            if (started[k]) pthread_join(th[k], NULL);
            else run_fit(&f[k]);
        }
        for (size_t k = 0; k < m && s == MP_OK && best->footprint > lb && idle < PATIENCE; k++) {
            if ((s = f[k].s) != MP_OK) break;
            idle = f[k].fp < best->footprint ? 0 : idle + 1;
            if (idle) continue; /* ties: the earlier plan */
            uint64_t *t = best->offset;
            best->offset = f[k].off, f[k].off = t;
            best->footprint = f[k].fp;
            best->strategy = f[k].which < 0 ? "size-firstfit" : "peak-firstfit";
        }
        *tried += m;
    }
    for (size_t k = 0; k < nt; k++) free(f[k].order), free(f[k].off);
    return s;
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
        if (out->footprint > j.lb && !out->object && (s = run_fits(b, n, j.lb, out, &r.tried)) != MP_OK)
            mp_plan_free(out);
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
