/* policy_budget.c -- chen2016 Alg. 3 (memory planning with budget) and the
 * grid search over B of its Appendix A.
 *
 * Alg. 3 walks the forward steps accumulating output bytes in temp; at a
 * candidate split point (a cut) with temp > B it keeps the cut (m = 0 for
 * its crossing values), adds their bytes to x, records y = max(y, temp)
 * and restarts temp; every other node is dropped (m = 1).  x estimates the
 * inter-stage feature maps, y the largest stage.  (We also count the last
 * stage, after the last cut, in y.)
 *
 * Appendix A: run Alg. 3 with B = 0, take B0 = sqrt(x * y) -- the budget
 * that balances stored stage outputs against the stage being recomputed
 * (the extracted text lost the root signs) -- and try a grid of 6 budgets
 * on [B0/sqrt2, sqrt2*B0] (geometric), plus B0 itself.  Each plan's peak is
 * measured (mp_remat_evaluate: the exact static allocation) and the
 * smallest kept; ties go to less recomputation, then the earlier grid point.
 * O(grid x evaluation). */
#include "remat_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

mp_status mp_remat_alg3(const mp_remat_t *r, uint64_t B, uint32_t *m, uint64_t *x, uint64_t *y) {
    if (!r || !m || !x || !y) return mp__err(MP_EINVAL, "mp_remat_alg3: NULL argument");
    uint64_t temp = 0;
    *x = *y = 0;
    for (size_t v = 0; v < r->n_fwd; v++) m[v] = 1;
    for (size_t s = 0, i = 0; s < r->n_fwd; s++) {
        uint64_t b = r->bytes[r->fwd_order[s]];
        temp = temp > UINT64_MAX - b ? UINT64_MAX : temp + b;
        if (i < r->n_cuts && r->cut[i] == s) {
            if (temp > B) {
                *x += r->cut_bytes[i];
                *y = mp__max64(*y, temp);
                mp__remat_keep_cut(r, i, m);
                temp = 0;
            }
            i++;
        }
    }
    *y = mp__max64(*y, temp);
    return MP_OK;
}

#define GRID 7

mp_status mp__remat_budget_grid(const mp_remat_t *r, uint64_t *grid, size_t *n_grid) {
    uint32_t *m = mp__remat_mirror_new(r, 1);
    if (!m) return MP__NOMEM();
    uint64_t x, y;
    mp_status s = mp_remat_alg3(r, 0, m, &x, &y);
    free(m);
    if (s) return s;
    double b0 = sqrt((double)x * (double)y);
    grid[0] = (uint64_t)llround(b0);
    for (int j = 0; j < GRID - 1; j++) {   /* 2^(-1/2) .. 2^(1/2) in 5 steps */
        double f = pow(2.0, -0.5 + (double)j / (GRID - 2));
        grid[j + 1] = (uint64_t)llround(b0 * f);
    }
    *n_grid = GRID;
    return MP_OK;
}

mp_status mp__remat_policy_budget(const mp_remat_t *r, mp_remat_plan_t *out) {
    uint64_t grid[GRID], x, y;
    size_t n_grid;
    mp_status s = mp__remat_budget_grid(r, grid, &n_grid);
    uint32_t *m = mp__remat_mirror_new(r, 1);
    if (!m) return MP__NOMEM();
    mp_remat_plan_t best;
    mp_remat_eval_t be;
    memset(&best, 0, sizeof best);
    memset(&be, 0, sizeof be);
    for (size_t j = 0; j < n_grid && !s; j++) {
        mp_remat_plan_t p;
        mp_remat_eval_t e;
        if ((s = mp_remat_alg3(r, grid[j], m, &x, &y))) break;
        if ((s = mp__remat_plan_from_mirror(r, m, "budget", &p))) break;
        if ((s = mp_remat_evaluate(r, &p, &e))) {
            mp_remat_plan_free(&p);
            break;
        }
        mp__remat_name(&p, "budget B=%llu", (unsigned long long)grid[j]);
        bool better = !best.n_forward || e.peak < be.peak ||
                      (e.peak == be.peak && e.extra_flops < be.extra_flops);
        if (better) {
            mp_remat_plan_free(&best);
            best = p;
            be = e;
        } else {
            mp_remat_plan_free(&p);
        }
    }
    free(m);
    if (s) {
        mp_remat_plan_free(&best);
        return s;
    }
    *out = best;
    return MP_OK;
}
