/* residency.c -- SmartPool after AutoSwap (zhang2019 sec. V: "we create
 * AutoSwap at first and then create SmartPool"): the device residencies of
 * a simulated swap plan as usage records, for any planner to place.
 *
 * A variable is on the device from its first op's start to its last op's
 * end (persistent ones: the whole iteration), except between each of its
 * swap-outs' ends and the following swap-in's start, as simulated.  Each
 * stretch of residency is one buffer over simulated time: [start, end) in
 * ns becomes first = start, last = end - 1.  A wrapped item's swap-out
 * that spills past the iteration's end (the steady state) occupies the
 * start of the iteration instead.  O(vars + items). */
#include "swap_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct span {
    uint64_t lo, hi;             /* [lo, hi) ns */
} span;

typedef struct acc {
    mp_buffer_t *b;
    size_t n, cap;
    mp_status st;
} acc;

static void push(acc *a, uint64_t lo, uint64_t hi, uint64_t size) {
    if (a->st || hi <= lo) return;
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 64;
        mp_buffer_t *nb = realloc(a->b, cap * sizeof *nb);
        if (!nb) {
            a->st = MP__NOMEM();
            return;
        }
        a->b = nb, a->cap = cap;
    }
    a->b[a->n] = (mp_buffer_t){.id = a->n, .first = lo, .last = hi - 1, .size = size};
    a->n++;
}

static uint64_t op_end(const mp_swap_iter_t *it, const mp_swap_sim_t *sim, size_t j) {
    return sim->op_start_ns[j] + it->op[j].ns;
}

/* One variable's stretches: from `from` to `to`, minus its absences.
 * items: its plan items sorted by `after`; a wrapped one (at most one, the
 * gap after its last access) makes it start the iteration out, come back
 * at that item's swap-in and leave at its swap-out, spilling over the end
 * into the next iteration's start. */
static void variable(acc *a, const mp_swap_plan_t *p, const mp_swap_sim_t *sim,
                     const size_t *items, size_t k, uint64_t from, uint64_t to, uint64_t size) {
    size_t wrap = k;
    for (size_t q = 0; q < k; q++)
        if (p->item[items[q]].before <= p->item[items[q]].after) wrap = q;
    uint64_t at = wrap < k ? sim->in_start_ns[items[wrap]] : from, total = sim->total_ns;
    for (size_t q = 0; q < k; q++) {
        if (q == wrap) continue;
        push(a, at, sim->out_end_ns[items[q]], size);
        at = sim->in_start_ns[items[q]];
    }
    if (wrap == k) return push(a, at, to, size);
    uint64_t out = sim->out_end_ns[items[wrap]];
    if (out > total) push(a, 0, out - total, size), out = total;
    push(a, at, out, size);
}

/* Sorts a variable's items by the op they follow (few: insertion). */
static void sort_items(const mp_swap_plan_t *p, size_t *it, size_t k) {
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && p->item[it[j]].after < p->item[it[j - 1]].after; j--) {
            size_t t = it[j];
            it[j] = it[j - 1], it[j - 1] = t;
        }
}

mp_status mp_swap_residency(const mp_swap_iter_t *it, const mp_swap_plan_t *plan,
                            const mp_swap_sim_t *sim, mp_buffer_t **out, size_t *n) {
    if (!out || !n) return mp__err(MP_EINVAL, "swap residency: no output");
    *out = NULL, *n = 0;
    if (!it || !sim || sim->n_ops != it->n_ops)
        return mp__err(MP_EINVAL, "swap residency: the simulation is not of this iteration");
    mp__swap_index x;
    mp_status st = mp__swap_index_build(it, &x);
    if (st) return st;
    size_t np = plan ? plan->n : 0;
    size_t *items = malloc((np + 1) * sizeof *items), *cnt = calloc(it->n_vars + 1, sizeof *cnt);
    acc a = {0};
    if (!items || !cnt) a.st = MP__NOMEM();
    for (size_t i = 0; !a.st && i < np; i++) cnt[plan->item[i].var + 1]++;
    for (size_t v = 0; !a.st && v < it->n_vars; v++) cnt[v + 1] += cnt[v];
    for (size_t i = 0; !a.st && i < np; i++) items[cnt[plan->item[i].var]++] = i;
    for (size_t v = it->n_vars; !a.st && v > 0; v--) cnt[v] = cnt[v - 1];
    if (!a.st) cnt[0] = 0;
    for (size_t v = 0; !a.st && v < it->n_vars; v++) {
        size_t k = cnt[v + 1] - cnt[v];
        size_t *mine = items + cnt[v];
        sort_items(plan, mine, k);
        const mp_swap_var_t *var = &it->var[v];
        uint64_t from = var->persistent ? 0 : sim->op_start_ns[x.first[v]];
        uint64_t to = var->persistent ? sim->total_ns : op_end(it, sim, x.last[v]);
        variable(&a, plan, sim, mine, k, from, to, var->size);
    }
    free(items), free(cnt);
    mp__swap_index_free(&x);
    if (a.st) return free(a.b), a.st;
    *out = a.b, *n = a.n;
    return MP_OK;
}
