/* solve.c -- minimising the footprint of one part with the decision search.
 *
 * The solver keeps a proven lower bound lo (every capacity below it was
 * refuted, or the max-load bound) and the best plan found, of footprint hi.
 * The caller (api.c) runs restarts with node budgets of the Luby sequence,
 * alternating two kinds of search: at the bound the whole problem needs
 * (where most instances of the hard set have their optimum), and improving
 * ones, a bisection between that bound (or the last capacity that ran out
 * of an equal budget) and hi - unit.  A plan found lowers hi to its own
 * footprint (often below the capacity asked), a refutation raises lo.
 * Every search uses the next static order (part.c), so restarts differ. */
#include "exact.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

double mp__xnow(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void mp__xsolver_free(mp__xsolver *v) {
    if (!v) return;
    mp__xsearch_free(v->ws);
    mp__xpart_free(&v->part);
    free(v->order), free(v->scratch), free(v->best), free(v->trial);
    memset(v, 0, sizeof *v);
}

static uint64_t round_up_unit(uint64_t x, uint64_t u) {
    uint64_t r = x % u;
    return r == 0 || x > UINT64_MAX - (u - r) ? x : x + (u - r);
}

mp_status mp__xsolver_init(mp__xsolver *v, mp__xpart *p, const uint64_t *start, uint64_t lo) {
    memset(v, 0, sizeof *v);
    v->part = *p;
    memset(p, 0, sizeof *p);
    size_t n1 = v->part.n ? v->part.n : 1;
    v->order = malloc(n1 * sizeof *v->order);
    v->scratch = malloc(3 * n1 * sizeof *v->scratch);
    v->best = malloc(n1 * sizeof *v->best);
    v->trial = malloc(n1 * sizeof *v->trial);
    mp_status s = v->order && v->scratch && v->best && v->trial ? MP_OK : MP__NOMEM();
    if (s == MP_OK) s = mp__xsearch_new(&v->part, &v->ws);
    if (s != MP_OK) {
        mp__xsolver_free(v);
        return s;
    }
    v->hi = 0;
    for (size_t i = 0; i < v->part.n; i++) {
        v->best[i] = start[i];
        v->hi = mp__max64(v->hi, start[i] + v->part.size[i]);
    }
    v->lo = round_up_unit(mp__max64(lo, v->part.load), v->part.unit);
    if (v->lo > v->hi) v->lo = v->hi; /* cannot happen with a valid start */
    return MP_OK;
}

static uint64_t footprint(const mp__xsolver *v, const uint64_t *off) {
    uint64_t f = 0;
    for (size_t i = 0; i < v->part.n; i++) f = mp__max64(f, off[i] + v->part.size[i]);
    return f;
}

mp_status mp__xsolver_decide(mp__xsolver *v, uint64_t cap, uint64_t budget, bool learn,
                             mp__xlimit *lim, mp__xanswer *ans) {
    /* the searches that learn (at the bound) and the others each have their
     * own sequence of orders */
    unsigned k = learn ? v->round++ : 1000001u + 2 * v->iround++;
    mp__xorder(&v->part, k, mp__xsearch_weights(v->ws), v->order, v->scratch);
    mp_status s = mp__xsearch_run(v->ws, v->order, cap, budget, learn, lim, ans, v->trial);
    if (s != MP_OK) return s;
    if (*ans == MP__X_YES) {
        uint64_t f = footprint(v, v->trial);
        if (f < v->hi) {
            v->hi = f;
            memcpy(v->best, v->trial, v->part.n * sizeof *v->best);
        }
    } else if (*ans == MP__X_NO && cap >= v->lo) {
        v->lo = round_up_unit(cap + 1, v->part.unit);
        if (v->lo > v->hi) v->lo = v->hi;
    }
    return MP_OK;
}

uint64_t mp__xsolver_target(const mp__xsolver *v, uint64_t floor_lo) {
    /* footprints of the part are multiples of its unit */
    uint64_t want = mp__max64(v->lo, floor_lo);
    want -= want % v->part.unit;
    return mp__max64(want, v->lo);
}

mp_status mp__xsolver_step(mp__xsolver *v, uint64_t floor_lo, bool improve, uint64_t budget,
                           mp__xlimit *lim) {
    uint64_t u = v->part.unit, target = mp__xsolver_target(v, floor_lo);
    if (target >= v->hi) return MP_OK;
    mp__xanswer a;
    if (!improve || v->hi - target <= u) /* nothing between: the bound itself */
        return mp__xsolver_decide(v, target, budget, true, lim, &a);
    /* bisection between the bound (or the last capacity that ran out of
     * budget, when no larger budget has been tried since) and hi - unit */
    uint64_t low = budget > v->probe_budget ? target : mp__max64(target, v->probe + 1);
    if (low > v->hi - u) low = target;
    uint64_t cap = low + (v->hi - u - low) / 2;
    cap -= cap % u;
    if (cap < low) cap = round_up_unit(low, u);
    if (cap >= v->hi) cap = v->hi - u;
    mp_status s = mp__xsolver_decide(v, cap, budget, false, lim, &a);
    if (a == MP__X_UNKNOWN) v->probe = cap, v->probe_budget = budget;
    else v->probe = 0, v->probe_budget = 0;
    return s;
}
