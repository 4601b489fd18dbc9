/* load.c -- the memory load of a timed iteration with no swapping, the
 * candidates of AutoSwap (zhang2019 sec. IV-A) and load_min (sec. VI-B1).
 *
 * Load (Def. 2): while op j runs, every persistent variable and every
 * non-persistent one with first(v) <= j <= last(v) is on the device (first
 * and last: its first and last accessing op).  A difference array over ops
 * gives the curve in O(ops + vars + accesses).
 *
 * Candidates: the peak op p is the first op where the load reaches its
 * maximum.  A variable of at least min_size bytes is a candidate when it is
 * on the device during p but p does not access it; its gap is (after,
 * before) = its last access before p and its first access after p.  For a
 * persistent variable either may lie across the iteration boundary: with
 * no access before p, `after` is its last access of the iteration; with
 * none after p, `before` is its first (before <= after: a wrapped gap; a
 * persistent variable accessed once has after == before, the gap is the
 * whole cycle).  A non-persistent variable live at p but not accessed
 * there has first < p < last, so its gap never wraps.  Candidates come in
 * increasing variable order.  O(ops + vars + accesses + vars log accesses).
 *
 * load_min: every candidate variable on the device only while an op
 * accesses it, every other variable as with no swapping; the peak of that
 * curve.  Same complexity. */
#include "swap_internal.h"

#include <stdlib.h>
#include <string.h>

void mp__swap_index_free(mp__swap_index *x) {
    if (!x) return;
    free(x->first), free(x->last), free(x->start), free(x->ops);
    memset(x, 0, sizeof *x);
}

/* Fills first/last and the per-variable access lists (a counting sort of
 * the accesses ops own by variable, ops ascending within one). */
static void fill_index(const mp_swap_iter_t *it, mp__swap_index *x) {
    for (size_t j = 0; j < it->n_ops; j++)
        for (size_t k = 0; k < it->op[j].n; k++) x->start[it->access[it->op[j].first + k].var + 1]++;
    for (size_t v = 0; v < it->n_vars; v++) x->start[v + 1] += x->start[v];
    size_t *pos = x->last;   /* scratch: next free slot per variable */
    memcpy(pos, x->start, it->n_vars * sizeof *pos);
    for (size_t j = 0; j < it->n_ops; j++) {
        const mp_swap_op_t *op = &it->op[j];
        for (size_t k = 0; k < op->n; k++) x->ops[pos[it->access[op->first + k].var]++] = j;
    }
    for (size_t v = 0; v < it->n_vars; v++) {
        x->first[v] = x->ops[x->start[v]];
        x->last[v] = x->ops[x->start[v + 1] - 1];
    }
}

mp_status mp__swap_index_build(const mp_swap_iter_t *it, mp__swap_index *x) {
    memset(x, 0, sizeof *x);
    mp_status s = mp_swap_iter_validate(it);
    if (s) return s;
    for (size_t v = 0; v < it->n_vars; v++) {
        if (x->total > UINT64_MAX - it->var[v].size)
            return mp__err(MP_EOVERFLOW, "swap iteration: the variables' sizes add up past 64 bits");
        x->total += it->var[v].size;
    }
    size_t n_acc = 0;
    for (size_t j = 0; j < it->n_ops; j++) n_acc += it->op[j].n;
    x->first = malloc((it->n_vars + 1) * sizeof *x->first);
    x->last = malloc((it->n_vars + 1) * sizeof *x->last);
    x->start = calloc(it->n_vars + 1, sizeof *x->start);
    x->ops = malloc((n_acc + 1) * sizeof *x->ops);
    if (!x->first || !x->last || !x->start || !x->ops) {
        mp__swap_index_free(x);
        return MP__NOMEM();
    }
    fill_index(it, x);
    return MP_OK;
}

size_t mp__swap_index_lower(const mp__swap_index *x, size_t v, size_t op) {
    size_t lo = x->start[v], hi = x->start[v + 1];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->ops[mid] < op) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* The curve of an iteration where variable v is kept on the device only
 * at its accesses when only_at[v] (NULL: none), as with no swapping
 * otherwise; its peak and the first op reaching it. */
static void curve(const mp_swap_iter_t *it, const mp__swap_index *x, const bool *only_at,
                  uint64_t *diff, uint64_t *op_load, uint64_t *peak, size_t *peak_op) {
    uint64_t base = 0;
    memset(diff, 0, (it->n_ops + 1) * sizeof *diff);
    /* Modular sums: every prefix is a true load, <= x->total. */
    for (size_t v = 0; v < it->n_vars; v++) {
        uint64_t size = it->var[v].size;
        if (only_at && only_at[v]) {
            for (size_t k = x->start[v]; k < x->start[v + 1]; k++) {
                diff[x->ops[k]] += size;
                diff[x->ops[k] + 1] -= size;
            }
        } else if (it->var[v].persistent) {
            base += size;
        } else {
            diff[x->first[v]] += size;
            diff[x->last[v] + 1] -= size;
        }
    }
    uint64_t cur = base, best = 0;
    size_t best_op = 0;
    for (size_t j = 0; j < it->n_ops; j++) {
        cur += diff[j];
        if (op_load) op_load[j] = cur;
        if (cur > best) best = cur, best_op = j;
    }
    if (peak) *peak = best;
    if (peak_op) *peak_op = best_op;
}

mp_status mp__swap_load_curve(const mp_swap_iter_t *it, const mp__swap_index *x, uint64_t *op_load,
                              uint64_t *peak, size_t *peak_op) {
    uint64_t *diff = malloc((it->n_ops + 1) * sizeof *diff);
    if (!diff) return MP__NOMEM();
    curve(it, x, NULL, diff, op_load, peak, peak_op);
    free(diff);
    return MP_OK;
}

mp_status mp_swap_load(const mp_swap_iter_t *it, uint64_t *op_load, uint64_t *peak, size_t *peak_op) {
    mp__swap_index x;
    mp_status s = mp__swap_index_build(it, &x);
    if (!s) s = mp__swap_load_curve(it, &x, op_load, peak, peak_op);
    mp__swap_index_free(&x);
    return s;
}

/* The candidates on a built index into cand[] (room for n_vars). */
static mp_status find_candidates(const mp_swap_iter_t *it, const mp__swap_index *x, uint64_t min_size,
                                 mp_swap_item_t *cand, size_t *n) {
    size_t p = 0;
    *n = 0;
    mp_status s = mp__swap_load_curve(it, x, NULL, NULL, &p);
    if (s || it->n_ops == 0) return s;
    for (size_t v = 0; v < it->n_vars; v++) {
        const mp_swap_var_t *var = &it->var[v];
        if (var->size < min_size) continue;
        if (!var->persistent && (x->first[v] >= p || x->last[v] <= p)) continue;
        size_t k = mp__swap_index_lower(x, v, p), lo = x->start[v], hi = x->start[v + 1];
        if (k < hi && x->ops[k] == p) continue;      /* accessed by the peak op */
        size_t after = k > lo ? x->ops[k - 1] : x->ops[hi - 1];
        size_t before = k < hi ? x->ops[k] : x->ops[lo];
        cand[(*n)++] = (mp_swap_item_t){.var = v, .after = after, .before = before};
    }
    return MP_OK;
}

mp_status mp_swap_candidates(const mp_swap_iter_t *it, uint64_t min_size, mp_swap_item_t **out,
                             size_t *n) {
    if (!out || !n) return mp__err(MP_EINVAL, "swap candidates: no output");
    *out = NULL, *n = 0;
    mp__swap_index x;
    mp_status s = mp__swap_index_build(it, &x);
    if (s) return s;
    mp_swap_item_t *cand = malloc((it->n_vars + 1) * sizeof *cand);
    if (!cand) s = MP__NOMEM();
    if (!s) s = find_candidates(it, &x, min_size, cand, n);
    mp__swap_index_free(&x);
    if (s) {
        free(cand);
        *n = 0;
        return s;
    }
    *out = cand;
    return MP_OK;
}

mp_status mp_swap_load_min(const mp_swap_iter_t *it, uint64_t min_size, uint64_t *load_min) {
    if (!load_min) return mp__err(MP_EINVAL, "swap load_min: no output");
    *load_min = 0;
    mp__swap_index x;
    mp_status s = mp__swap_index_build(it, &x);
    if (s) return s;
    mp_swap_item_t *cand = malloc((it->n_vars + 1) * sizeof *cand);
    bool *only_at = calloc(it->n_vars + 1, sizeof *only_at);
    uint64_t *diff = malloc((it->n_ops + 1) * sizeof *diff);
    size_t n = 0;
    if (!cand || !only_at || !diff) s = MP__NOMEM();
    if (!s) s = find_candidates(it, &x, min_size, cand, &n);
    if (!s) {
        for (size_t i = 0; i < n; i++) only_at[cand[i].var] = true;
        curve(it, &x, only_at, diff, NULL, load_min, NULL);
    }
    free(cand), free(only_at), free(diff);
    mp__swap_index_free(&x);
    return s;
}
