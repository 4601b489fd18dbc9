/* gplan.c -- a graph plan as an ordinary usage-record problem, and its
 * placement by a core strategy: mp_graph_plan_records, mp_graph_plan_place.
 *
 * Time is counted in half-steps so that an in-place write, which happens at
 * the same step as the last read of its input, still comes after it: step s
 * is half-steps 2s (reads, and writes of fresh outputs) and 2s + 1 (the
 * write over an input read last at s).  A planned tensor with lifetime
 * [first, last] (mp_graph_lifetimes) lives over [2 first, 2 last], or
 * [2 first + 1, max(2 last, 2 first + 1)] when written in place (an
 * in-place output nobody reads still occupies its own half-step). */
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

/* The plan's shape matches g (arrays present, ids in range)? */
mp_status mp__graph_plan_shape(const mp_graph_t *g, const mp_graph_plan_t *p) {
    if (!g || !p) return mp__err(MP_EINVAL, "graph plan: NULL argument");
    if (p->n_tensors != g->n_tensors || (g->n_tensors && (!p->storage || !p->inplace_of)) ||
        (p->n_storages && (!p->storage_size || !p->offset)))
        return mp__err(MP_EINVAL, "graph plan: made for %zu tensors, the graph has %zu",
                       p->n_tensors, g->n_tensors);
    for (size_t t = 0; t < g->n_tensors; t++)
        if (p->storage[t] != MP_GRAPH_NONE && p->storage[t] >= p->n_storages)
            return mp__err(MP_EINVAL, "graph plan: tensor %zu has storage %zu of %zu", t,
                           p->storage[t], p->n_storages);
    return MP_OK;
}

/* One half-step record per planned owning tensor, and the offset plan the
 * storages give them. */
mp_status mp_graph_plan_records(const mp_graph_t *g, const mp_graph_plan_t *p, mp_buffer_t **b,
                                size_t *n, mp_plan_t *plan) {
    if (b) *b = NULL;
    if (n) *n = 0;
    if (plan) memset(plan, 0, sizeof *plan);
    if (!b || !n || !plan) return mp__err(MP_EINVAL, "mp_graph_plan_records: NULL argument");
    mp_status s = mp__graph_plan_shape(g, p);
    if (s != MP_OK) return s;
    size_t nt = g->n_tensors, count = 0;
    for (size_t t = 0; t < nt; t++)
        if (g->tensor[t].root == t && p->storage[t] != MP_GRAPH_NONE) count++;
    uint64_t *first = malloc((nt ? nt : 1) * sizeof *first);
    uint64_t *last = malloc((nt ? nt : 1) * sizeof *last);
    mp_buffer_t *rb = malloc((count ? count : 1) * sizeof *rb);
    uint64_t *off = malloc((count ? count : 1) * sizeof *off);
    if (!first || !last || !rb || !off) {
        free(first), free(last), free(rb), free(off);
        return MP__NOMEM();
    }
    mp_graph_lifetimes(g, first, last);
    size_t k = 0;
    uint64_t fp = 0;
    for (size_t t = 0; t < nt; t++) {
        if (g->tensor[t].root != t || p->storage[t] == MP_GRAPH_NONE) continue;
        uint64_t lo = 2 * first[t] + (p->inplace_of[t] != MP_GRAPH_NONE);
        uint64_t hi = mp__max64(2 * last[t], lo);
        rb[k] = (mp_buffer_t){.id = t, .first = lo, .last = hi, .size = g->tensor[t].bytes};
        off[k] = p->offset[p->storage[t]];
        /* Sizes of a loaded graph's tensors sum below 2^64, offsets of a
         * plan below its footprint; a corrupt plan is caught by the
         * checker, not here, so saturate. */
        uint64_t end = off[k] > UINT64_MAX - rb[k].size ? UINT64_MAX : off[k] + rb[k].size;
        fp = mp__max64(fp, end);
        k++;
    }
    free(first), free(last);
    *b = rb;
    *n = count;
    *plan = (mp_plan_t){.n = count, .offset = off, .footprint = fp, .strategy = p->placement};
    return MP_OK;
}

/* One record per storage over the hull of its tensors' half-steps. */
static mp_status storage_records(const mp_graph_t *g, const mp_graph_plan_t *p, mp_buffer_t **out) {
    mp_buffer_t *tb;
    size_t tn;
    mp_plan_t tp;
    mp_status s = mp_graph_plan_records(g, p, &tb, &tn, &tp);
    if (s != MP_OK) return s;
    mp_plan_free(&tp);
    size_t ns = p->n_storages;
    mp_buffer_t *sb = malloc((ns ? ns : 1) * sizeof *sb);
    if (!sb) {
        free(tb);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < ns; i++)
        sb[i] = (mp_buffer_t){.id = i, .first = UINT64_MAX, .last = 0, .size = p->storage_size[i]};
    for (size_t i = 0; i < tn; i++) {
        mp_buffer_t *x = &sb[p->storage[tb[i].id]];
        x->first = mp__min64(x->first, tb[i].first);
        x->last = mp__max64(x->last, tb[i].last);
    }
    for (size_t i = 0; i < ns; i++)
        if (sb[i].first == UINT64_MAX) sb[i].first = sb[i].last = 0; /* holds nothing */
    free(tb);
    *out = sb;
    return MP_OK;
}

/* Re-places p's storages with a core strategy; p is unchanged on failure. */
mp_status mp_graph_plan_place(const mp_graph_t *g, mp_graph_plan_t *p, const char *strategy) {
    if (!strategy) return mp__err(MP_EINVAL, "mp_graph_plan_place: NULL strategy");
    const mp_strategy_info_t *info = mp_strategy_find(strategy);
    if (!info) return mp__err(MP_ENOTFOUND, "unknown strategy '%s'", strategy);
    mp_buffer_t *sb = NULL;
    mp_status s = storage_records(g, p, &sb);
    if (s != MP_OK) return s;
    size_t ns = p->n_storages;
    mp_plan_t pl = {0};
    if (!ns) {
        pl.strategy = info->name;
    } else if (!strcmp(info->name, "auto")) {
        s = mp_plan_auto(sb, ns, &pl, NULL);
    } else {
        s = mp_plan_compute(sb, ns, info->name, &pl);
    }
    free(sb);
    if (s != MP_OK) return s;
    uint64_t *old = malloc((ns ? ns : 1) * sizeof *old);
    if (!old) {
        mp_plan_free(&pl);
        return MP__NOMEM();
    }
    if (ns) memcpy(old, p->offset, ns * sizeof *old);
    uint64_t old_fp = p->footprint;
    const char *old_pl = p->placement;
    if (ns) memcpy(p->offset, pl.offset, ns * sizeof *old);
    p->footprint = ns ? pl.footprint : 0;
    p->placement = pl.strategy;
    mp_plan_free(&pl);
    s = mp_graph_plan_check(g, p, MP_PARALLEL_ANY);
    if (s != MP_OK) { /* leave p as it was */
        if (ns) memcpy(p->offset, old, ns * sizeof *old);
        p->footprint = old_fp;
        p->placement = old_pl;
    }
    free(old);
    return s;
}
