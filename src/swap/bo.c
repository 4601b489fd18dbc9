/* bo.c -- zhang2019 sec. IV-C: the BO score.  The four scores, each
 * standardised over the candidates, are combined as a*AOA + b*DOA +
 * c*WDOA + d*SWDOA with weights in [-1, 1]; the weights are tuned by
 * Bayesian optimisation whose objective is the simulated result of the
 * selection they rank: the overhead in limit mode (a limit that is not met
 * counts above any overhead), the peak load in no-overhead mode.
 *
 * The optimiser: a Gaussian process with a squared-exponential kernel
 * (length 0.5 on [-1,1]^4, observations standardised, a small jitter),
 * expected improvement maximised over seeded random points and
 * perturbations of the best.  The first four evaluations are the four
 * scores alone (unit weights), so BO is never worse than the best of them
 * on the same objective; then four random points; then EI picks, up to
 * opts->bo_evals in all.  Deterministic for a seed.  O(evals^3 + evals x
 * (selection + EI points x evals)). */
#include "swap_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIM 4
#define MAX_EVALS 200
#define EI_POINTS 512
#define LENGTH 0.5
#define JITTER 1e-6

typedef struct bo_state {
    const mp_swap_iter_t *it;
    const mp_swap_link_t *link;
    const mp_swap_select_opts_t *o;
    const mp_swap_item_t *cand;
    size_t n;
    double *z;            /* standardised scores, paper order: AOA, DOA, WDOA, SWDOA */
    double *key;
    size_t evals;
    double x[MAX_EVALS][DIM], y[MAX_EVALS];
    size_t best;
    mp_swap_plan_t best_plan;
    mp_swap_sim_t best_sim;
    uint64_t rng;
} bo_state;

static double uniform(bo_state *b) {           /* xorshift64*, in [0, 1) */
    b->rng ^= b->rng >> 12, b->rng ^= b->rng << 25, b->rng ^= b->rng >> 27;
    return (double)((b->rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
}

/* z-scores of the scores in the paper's order (mine are DOA, AOA, ...). */
static void standardise(bo_state *b, const double *scores) {
    static const int from[DIM] = {1, 0, 2, 3};
    for (int k = 0; k < DIM; k++) {
        const double *s = scores + (size_t)from[k] * b->n;
        double mean = 0, var = 0;
        for (size_t i = 0; i < b->n; i++) mean += s[i];
        mean /= b->n ? (double)b->n : 1;
        for (size_t i = 0; i < b->n; i++) var += (s[i] - mean) * (s[i] - mean);
        double sd = b->n ? sqrt(var / (double)b->n) : 0;
        for (size_t i = 0; i < b->n; i++) b->z[(size_t)k * b->n + i] = sd > 0 ? (s[i] - mean) / sd : 0;
    }
}

static double objective(const bo_state *b, const mp_swap_sim_t *sim) {
    if (b->o->mode == MP_SWAP_NO_OVERHEAD) return (double)sim->peak;
    return sim->limit_met ? sim->overhead : 1e6 + (double)sim->peak;
}

/* Runs the selection the weights w rank, keeps it when it is the best. */
static mp_status evaluate(bo_state *b, const double *w) {
    for (size_t i = 0; i < b->n; i++) {
        double k = 0;
        for (int d = 0; d < DIM; d++) k += w[d] * b->z[(size_t)d * b->n + i];
        b->key[i] = k;
    }
    mp_swap_plan_t p;
    mp_swap_sim_t sim;
    mp_status s = mp__swap_select_ranked(b->it, b->link, b->o, b->cand, b->n, b->key, "bo", &p, &sim);
    if (s) return s;
    size_t e = b->evals++;
    memcpy(b->x[e], w, sizeof b->x[e]);
    b->y[e] = objective(b, &sim);
    if (e == 0 || b->y[e] < b->y[b->best]) {
        mp_swap_plan_free(&b->best_plan), mp_swap_sim_free(&b->best_sim);
        b->best_plan = p, b->best_sim = sim, b->best = e;
    } else {
        mp_swap_plan_free(&p), mp_swap_sim_free(&sim);
    }
    return MP_OK;
}

static double kernel(const double *a, const double *c) {
    double d2 = 0;
    for (int d = 0; d < DIM; d++) d2 += (a[d] - c[d]) * (a[d] - c[d]);
    return exp(-d2 / (2 * LENGTH * LENGTH));
}

/* Cholesky factor L of K + jitter (row-major n x n), alpha = K^-1 y. */
static void gp_fit(const bo_state *b, const double *yn, double *L, double *alpha) {
    size_t n = b->evals;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j <= i; j++) {
            double s = kernel(b->x[i], b->x[j]) + (i == j ? JITTER : 0);
            for (size_t k = 0; k < j; k++) s -= L[i * n + k] * L[j * n + k];
            L[i * n + j] = i == j ? sqrt(fmax(s, 1e-12)) : s / L[j * n + j];
        }
    for (size_t i = 0; i < n; i++) {                  /* L v = y */
        double s = yn[i];
        for (size_t k = 0; k < i; k++) s -= L[i * n + k] * alpha[k];
        alpha[i] = s / L[i * n + i];
    }
    for (size_t i = n; i-- > 0;) {                    /* L^T alpha = v */
        double s = alpha[i];
        for (size_t k = i + 1; k < n; k++) s -= L[k * n + i] * alpha[k];
        alpha[i] = s / L[i * n + i];
    }
}

/* Expected improvement (minimisation) at w under the fitted GP. */
static double expected_improvement(const bo_state *b, const double *L, const double *alpha,
                                   const double *w, double best, double *v) {
    size_t n = b->evals;
    double mu = 0;
    for (size_t i = 0; i < n; i++) v[i] = kernel(w, b->x[i]), mu += v[i] * alpha[i];
    for (size_t i = 0; i < n; i++) {                  /* L u = k */
        double s = v[i];
        for (size_t k = 0; k < i; k++) s -= L[i * n + k] * v[k];
        v[i] = s / L[i * n + i];
    }
    double var = 1.0;
    for (size_t i = 0; i < n; i++) var -= v[i] * v[i];
    double sd = sqrt(fmax(var, 1e-12)), g = (best - mu) / sd;
    return sd * (g * 0.5 * erfc(-g / sqrt(2)) + exp(-0.5 * g * g) / 2.5066282746310002);
}

static void random_point(bo_state *b, double *w) {
    for (int d = 0; d < DIM; d++) w[d] = 2 * uniform(b) - 1;
}

/* The next point: the best EI among random points and perturbations of
 * the best evaluated one. */
static mp_status next_point(bo_state *b, double *out) {
    size_t n = b->evals;
    double *L = calloc(n * n + 1, sizeof *L), *alpha = calloc(n + 1, sizeof *alpha),
           *yn = calloc(n + 1, sizeof *yn), *v = calloc(n + 1, sizeof *v);
    if (!L || !alpha || !yn || !v) return free(L), free(alpha), free(yn), free(v), MP__NOMEM();
    double mean = 0, sd = 0;
    for (size_t i = 0; i < n; i++) mean += b->y[i] / (double)n;
    for (size_t i = 0; i < n; i++) sd += (b->y[i] - mean) * (b->y[i] - mean) / (double)n;
    sd = sqrt(sd) > 0 ? sqrt(sd) : 1;
    for (size_t i = 0; i < n; i++) yn[i] = (b->y[i] - mean) / sd;
    gp_fit(b, yn, L, alpha);
    double best_ei = -1, w[DIM], bestn = (b->y[b->best] - mean) / sd;
    for (int p = 0; p < EI_POINTS; p++) {
        if (p % 2) {
            random_point(b, w);
        } else {
            for (int d = 0; d < DIM; d++)
                w[d] = fmin(1, fmax(-1, b->x[b->best][d] + 0.3 * (2 * uniform(b) - 1)));
        }
        double ei = expected_improvement(b, L, alpha, w, bestn, v);
        if (ei > best_ei) best_ei = ei, memcpy(out, w, sizeof w);
    }
    free(L), free(alpha), free(yn), free(v);
    return MP_OK;
}

static mp_status search(bo_state *b) {
    size_t evals = b->o->bo_evals ? b->o->bo_evals : 40;
    if (evals > MAX_EVALS) evals = MAX_EVALS;
    if (evals < DIM) evals = DIM;
    mp_status s = MP_OK;
    for (int d = 0; d < DIM && !s; d++) {             /* the four scores alone */
        double w[DIM] = {0};
        w[d] = 1;
        s = evaluate(b, w);
    }
    while (!s && b->evals < evals) {
        double w[DIM];
        if (b->evals < 2 * DIM) random_point(b, w);
        else s = next_point(b, w);
        if (!s) s = evaluate(b, w);
    }
    return s;
}

mp_status mp__swap_bo(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                      const mp_swap_select_opts_t *o, const mp_swap_item_t *cand, size_t n,
                      const double *scores, mp_swap_plan_t *plan, mp_swap_sim_t *sim) {
    bo_state *b = calloc(1, sizeof *b);
    if (!b) return MP__NOMEM();
    *b = (bo_state){.it = it, .link = link, .o = o, .cand = cand, .n = n,
                    .rng = o->seed ? o->seed * 0x9E3779B97F4A7C15ull : 0x9E3779B97F4A7C15ull};
    b->z = malloc((DIM * n + 1) * sizeof *b->z);
    b->key = malloc((n + 1) * sizeof *b->key);
    mp_status s = !b->z || !b->key ? MP__NOMEM() : MP_OK;
    if (!s) standardise(b, scores);
    if (!s) s = search(b);
    if (!s) {
        *plan = b->best_plan;
        snprintf(plan->score, sizeof plan->score, "bo");
        if (sim) *sim = b->best_sim;
        else mp_swap_sim_free(&b->best_sim);
    } else {
        mp_swap_plan_free(&b->best_plan), mp_swap_sim_free(&b->best_sim);
    }
    free(b->z), free(b->key), free(b);
    return s;
}
