/* score.c -- AutoSwap's priority scores (zhang2019 sec. IV-B) of each
 * candidate (variable, gap) on the iteration with no swapping.
 *
 * Times are those of the no-swap timeline: op o runs over [T(o), T(o) +
 * ns(o)), T the prefix sum of op times.  A candidate is out of the device,
 * if its transfers hide, over the ops strictly inside its gap: (after,
 * before), cyclically for a gap that wraps into the next iteration.
 *
 *   DOA   = gap time - swap-out time - swap-in time          (ns, signed)
 *   AOA   = DOA x size, or DOA / size when DOA < 0 (the paper's rule: a
 *           larger AOA is still better when both are negative)
 *   WDOA  = the area under the load curve over the gap, sum over the ops
 *           inside it of load x time (byte-ns)
 *   SWDOA = WDOA recomputed after each pick on the load with the picked
 *           candidates taken out over their gaps; a candidate's SWDOA is
 *           its WDOA when it was picked, so sorting by it gives the order.
 * O(ops + n) for the first three (prefix sums); SWDOA O(n^2 + ops): after
 * a pick every remaining candidate loses size x the time its gap shares
 * with the pick's, found in O(1) from the prefix times. */
#include "swap_internal.h"

#include <stdlib.h>
#include <string.h>

/* Prefix sums over ops: time T[o] and area A[o] = sum load x ns, n+1 each. */
typedef struct timeline {
    size_t n;
    double *t, *area;
} timeline;

static mp_status timeline_make(const mp_swap_iter_t *it, timeline *tl) {
    tl->n = it->n_ops;
    tl->t = calloc(it->n_ops + 1, sizeof *tl->t);
    tl->area = calloc(it->n_ops + 1, sizeof *tl->area);
    uint64_t *load = malloc((it->n_ops + 1) * sizeof *load);
    uint64_t peak;
    size_t peak_op;
    mp_status s = !tl->t || !tl->area || !load ? MP__NOMEM() : MP_OK;
    if (!s) s = mp_swap_load(it, load, &peak, &peak_op);
    for (size_t o = 0; !s && o < it->n_ops; o++) {
        tl->t[o + 1] = tl->t[o] + (double)it->op[o].ns;
        tl->area[o + 1] = tl->area[o] + (double)load[o] * (double)it->op[o].ns;
    }
    free(load);
    return s;
}

static void timeline_free(timeline *tl) { free(tl->t), free(tl->area); }

/* Sum of a prefix array over the ops strictly inside the gap. */
static double over_gap(const double *p, size_t n, const mp_swap_item_t *c) {
    if (c->after < c->before) return p[c->before] - p[c->after + 1];
    return (p[n] - p[c->after + 1]) + p[c->before];              /* wraps */
}

/* The ops strictly inside a gap as at most two [lo, hi) ranges. */
static size_t gap_ranges(const mp_swap_item_t *c, size_t n, size_t lo[2], size_t hi[2]) {
    if (c->after < c->before) return lo[0] = c->after + 1, hi[0] = c->before, 1;
    lo[0] = c->after + 1, hi[0] = n, lo[1] = 0, hi[1] = c->before;
    return 2;
}

/* Time (ns) the gaps of a and b share. */
static double shared_time(const timeline *tl, const mp_swap_item_t *a, const mp_swap_item_t *b) {
    size_t alo[2], ahi[2], blo[2], bhi[2], na = gap_ranges(a, tl->n, alo, ahi),
           nb = gap_ranges(b, tl->n, blo, bhi);
    double sum = 0;
    for (size_t i = 0; i < na; i++)
        for (size_t j = 0; j < nb; j++) {
            size_t lo = alo[i] > blo[j] ? alo[i] : blo[j], hi = ahi[i] < bhi[j] ? ahi[i] : bhi[j];
            if (lo < hi) sum += tl->t[hi] - tl->t[lo];
        }
    return sum;
}

static void submodular(const mp_swap_iter_t *it, const timeline *tl, const mp_swap_item_t *cand,
                       size_t n, const double *wdoa, double *swdoa, double *cur, bool *taken) {
    memcpy(cur, wdoa, n * sizeof *cur);
    for (size_t round = 0; round < n; round++) {
        size_t best = n;
        for (size_t i = 0; i < n; i++)
            if (!taken[i] && (best == n || cur[i] > cur[best])) best = i;
        taken[best] = true;
        swdoa[best] = cur[best];
        double size = (double)it->var[cand[best].var].size;
        for (size_t i = 0; i < n; i++)
            if (!taken[i]) cur[i] -= size * shared_time(tl, &cand[i], &cand[best]);
    }
}

mp_status mp_swap_scores(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                         const mp_swap_item_t *cand, size_t n, double *doa, double *aoa,
                         double *wdoa, double *swdoa) {
    if (!it || !link || (n && (!cand || !doa || !aoa || !wdoa || !swdoa)))
        return mp__err(MP_EINVAL, "swap scores: missing arguments");
    timeline tl = {0};
    mp_status s = timeline_make(it, &tl);
    double *cur = malloc((n + 1) * sizeof *cur);
    bool *taken = calloc(n + 1, sizeof *taken);
    if (!s && (!cur || !taken)) s = MP__NOMEM();
    for (size_t i = 0; !s && i < n; i++) {
        const mp_swap_item_t *c = &cand[i];
        if (c->var >= it->n_vars || c->after >= it->n_ops || c->before >= it->n_ops) {
            s = mp__err(MP_EINVAL, "swap scores: candidate %zu names no variable or op", i);
            break;
        }
        uint64_t size = it->var[c->var].size;
        double transfers = (double)mp_swap_out_ns(link, size) + (double)mp_swap_in_ns(link, size);
        doa[i] = over_gap(tl.t, tl.n, c) - transfers;
        aoa[i] = doa[i] >= 0 ? doa[i] * (double)size : doa[i] / (double)size;
        wdoa[i] = over_gap(tl.area, tl.n, c);
    }
    if (!s) submodular(it, &tl, cand, n, wdoa, swdoa, cur, taken);
    free(cur), free(taken);
    timeline_free(&tl);
    return s;
}
