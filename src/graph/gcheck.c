/* gcheck.c -- the graph plan checker: mp_graph_plan_check.
 *
 * It trusts nothing the sharing pass computed:
 *   1. shape and storages: views in their root's storage, every planned
 *      tensor in a storage at least its size, the footprint the storages'
 *      layout needs;
 *   2. in-place writes only over an unprotected input of the producing op
 *      that this op reads last (no later step reads it or a view of it);
 *   3. the half-step records (gplan.c) with the offsets of their storages
 *      through mp_plan_check: no two tensors alive together overlap;
 *   4. parallel modes: for every two tensors whose memory overlaps, the ops
 *      that touched the earlier one are ancestors of the producer of the
 *      later one.  Checking every pair would be quadratic; instead the
 *      tensors are painted onto the address line in time order, and each is
 *      checked against the tensors it paints over (the previous owner at
 *      each address): by transitivity of the ancestor relation that covers
 *      every pair, and it is exact.  Each tensor adds at most three
 *      segments, so O(t log t + touchers) for t tensors after the O(n^2/8)
 *      ancestor sets of parallel.c. */
#include "parallel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *tname(const mp_graph_t *g, size_t t) { return g->tensor[t].name; }
static const char *nname(const mp_graph_t *g, size_t v) { return g->node[v].name; }

static bool reads(const mp_graph_node_t *nd, size_t t) {
    for (size_t i = 0; i < nd->n_inputs; i++)
        if (nd->inputs[i] == t) return true;
    return false;
}

/* Rule 2 for tensor t written over x = p->inplace_of[t]. */
static mp_status check_inplace(const mp_graph_t *g, const mp_graph_plan_t *p, size_t t,
                               const bool *prot, const uint64_t *last) {
    size_t x = p->inplace_of[t], pr = g->tensor[t].producer;
    if (p->storage[t] == MP_GRAPH_NONE || pr == MP_GRAPH_NONE || x >= g->n_tensors ||
        !reads(&g->node[pr], x))
        return mp__err(MP_ECONFLICT,
                       "tensor %zu '%s' is marked as written over tensor %zu, which its "
                       "producer does not read",
                       t, tname(g, t), x);
    size_t rx = g->tensor[x].root;
    if (p->storage[rx] != p->storage[t])
        return mp__err(MP_ECONFLICT, "tensor %zu '%s' is written over %zu '%s' in another storage",
                       t, tname(g, t), x, tname(g, x));
    if (prot[rx])
        return mp__err(MP_ECONFLICT,
                       "tensor %zu '%s' overwrites %zu '%s', a graph input, output or "
                       "persistent tensor",
                       t, tname(g, t), rx, tname(g, rx));
    if (last[rx] != g->node[pr].step)
        return mp__err(MP_ECONFLICT,
                       "tensor %zu '%s' overwrites %zu '%s' at step %zu, but step %llu still "
                       "reads it",
                       t, tname(g, t), rx, tname(g, rx), g->node[pr].step,
                       (unsigned long long)last[rx]);
    return MP_OK;
}

/* Rules 1 and 2. */
static mp_status check_tensors(const mp_graph_t *g, const mp_graph_plan_t *p, const bool *prot,
                               const uint64_t *last) {
    size_t n_ip = 0;
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp_graph_tensor_t *x = &g->tensor[t];
        size_t r = x->root, st = p->storage[t];
        if (r != t) {
            if (st != p->storage[r] || p->inplace_of[t] != MP_GRAPH_NONE)
                return mp__err(MP_ECONFLICT,
                               "view %zu '%s' is not in its root %zu '%s''s storage, or is "
                               "marked in place",
                               t, tname(g, t), r, tname(g, r));
            continue;
        }
        if (!x->bytes && st != MP_GRAPH_NONE)
            return mp__err(MP_ECONFLICT, "tensor %zu '%s' owns no bytes but has storage %zu", t,
                           tname(g, t), st);
        if (x->bytes && st == MP_GRAPH_NONE && !mp__graph_persistent(x->kind))
            return mp__err(MP_ECONFLICT, "tensor %zu '%s' (%llu bytes) has no storage", t,
                           tname(g, t), (unsigned long long)x->bytes);
        if (st != MP_GRAPH_NONE && p->storage_size[st] < x->bytes)
            return mp__err(MP_ECONFLICT, "storage %zu (%llu bytes) is smaller than tensor %zu '%s' (%llu)",
                           st, (unsigned long long)p->storage_size[st], t, tname(g, t),
                           (unsigned long long)x->bytes);
        if (p->inplace_of[t] != MP_GRAPH_NONE) {
            mp_status s = check_inplace(g, p, t, prot, last);
            if (s != MP_OK) return s;
            n_ip++;
        }
    }
    if (n_ip != p->n_inplace)
        return mp__err(MP_ECONFLICT, "plan counts %zu in-place ops but marks %zu", p->n_inplace,
                       n_ip);
    uint64_t fp = 0;
    for (size_t s = 0; s < p->n_storages; s++) {
        if (p->offset[s] > UINT64_MAX - p->storage_size[s])
            return mp__err(MP_EOVERFLOW, "storage %zu ends past 2^64", s);
        fp = mp__max64(fp, p->offset[s] + p->storage_size[s]);
    }
    if (fp != p->footprint)
        return mp__err(MP_ECONFLICT, "plan claims footprint %llu but its storages need %llu",
                       (unsigned long long)p->footprint, (unsigned long long)fp);
    return MP_OK;
}

/* Rule 4 for one pair: earlier tensor a, later tensor b over it. */
static mp_status check_pair(const mp_graph_t *g, const mp__dag *d, const mp__anc *anc, size_t a,
                            size_t b) {
    size_t pb = g->tensor[b].producer, pa = g->tensor[a].producer;
    size_t bad = MP_GRAPH_NONE;
    if (pa != MP_GRAPH_NONE && (pb == MP_GRAPH_NONE || !mp__anc_has(anc, pa, pb))) bad = pa;
    for (size_t e = d->rd_at[a]; bad == MP_GRAPH_NONE && e < d->rd_at[a + 1]; e++)
        if (pb == MP_GRAPH_NONE || !mp__anc_has(anc, d->rd[e], pb)) bad = d->rd[e];
    if (bad == MP_GRAPH_NONE) return MP_OK;
    if (pb == MP_GRAPH_NONE)
        return mp__err(MP_ECONFLICT, "tensors %zu '%s' and %zu '%s' share memory, but nothing produces the second",
                       a, tname(g, a), b, tname(g, b));
    return mp__err(MP_ECONFLICT,
                   "tensors %zu '%s' and %zu '%s' share memory, but node %zu '%s' (touching the "
                   "first) is not an ancestor of node %zu '%s' (writing the second): they may "
                   "run in parallel",
                   a, tname(g, a), b, tname(g, b), bad, nname(g, bad), pb, nname(g, pb));
}

typedef struct paint {
    mp__tset seg;           /* segments keyed (start, slot) */
    uint64_t *hi;           /* per slot: end (exclusive) */
    size_t *ten;            /* per slot: the tensor painted there */
    size_t used, cap_hi, cap_ten;
} paint;

static mp_status add_seg(paint *pt, uint64_t lo, uint64_t hi, size_t t) {
    mp_status s = mp__grow((void **)&pt->hi, &pt->cap_hi, pt->used + 1, sizeof *pt->hi);
    if (s == MP_OK) s = mp__grow((void **)&pt->ten, &pt->cap_ten, pt->used + 1, sizeof *pt->ten);
    if (s != MP_OK) return s;
    pt->hi[pt->used] = hi;
    pt->ten[pt->used] = t;
    return mp__tset_insert(&pt->seg, lo, pt->used++);
}

/* Paints record i over the address line, checking what it covers. */
static mp_status paint_one(const mp_graph_t *g, const mp__dag *d, const mp__anc *anc, paint *pt,
                           uint64_t lo, uint64_t hi, size_t t) {
    for (;;) {
        uint64_t k1, k2;
        bool hit = mp__tset_floor(&pt->seg, lo, UINT64_MAX, &k1, &k2) && pt->hi[k2] > lo;
        if (!hit) hit = mp__tset_ceil(&pt->seg, lo, 0, &k1, &k2) && k1 < hi;
        if (!hit) break;
        size_t a = pt->ten[k2];
        uint64_t shi = pt->hi[k2];
        mp_status s = check_pair(g, d, anc, a, t);
        if (s != MP_OK) return s;
        mp__tset_erase(&pt->seg, k1, k2);
        if (k1 < lo && (s = add_seg(pt, k1, lo, a)) != MP_OK) return s;
        if (shi > hi && (s = add_seg(pt, hi, shi, a)) != MP_OK) return s;
    }
    return add_seg(pt, lo, hi, t);
}

/* Rule 4 over the records b (in time order). */
static mp_status check_parallel(const mp_graph_t *g, const mp_buffer_t *b, size_t n,
                                const uint64_t *off) {
    mp__dag d;
    mp__anc anc = {0};
    paint pt = {0};
    mp__tset_init(&pt.seg);
    mp__key *key = malloc((n ? n : 1) * sizeof *key);
    mp_status s = key ? mp__dag_build(g, &d) : MP__NOMEM();
    if (s != MP_OK) {
        free(key);
        return s;
    }
    s = mp__anc_build(g, &d, &anc);
    for (size_t i = 0; i < n; i++) key[i] = (mp__key){.a = b[i].first, .b = 0, .i = i};
    if (s == MP_OK) s = mp__sort_keys(key, n);
    for (size_t j = 0; j < n && s == MP_OK; j++) {
        size_t i = key[j].i;
        uint64_t hi = off[i] > UINT64_MAX - b[i].size ? UINT64_MAX : off[i] + b[i].size;
        s = paint_one(g, &d, &anc, &pt, off[i], hi, (size_t)b[i].id);
    }
    mp__tset_free(&pt.seg);
    free(pt.hi), free(pt.ten), free(key);
    mp__anc_free(&anc);
    mp__dag_free(&d);
    return s;
}

/* Rule 3 (and rule 4 on the same records). */
static mp_status check_records(const mp_graph_t *g, const mp_graph_plan_t *p,
                               mp_parallel_mode parallel) {
    mp_buffer_t *b;
    size_t n;
    mp_plan_t plan;
    mp_status s = mp_graph_plan_records(g, p, &b, &n, &plan);
    if (s != MP_OK) return s;
    mp_check_report_t rep;
    s = mp_plan_check(b, n, &plan, &rep);
    if (s == MP_ECONFLICT && rep.first_bad < n && rep.second_bad < n) {
        char why[256];
        snprintf(why, sizeof why, "%s", mp_last_error());
        const mp_buffer_t *x = &b[rep.first_bad], *y = &b[rep.second_bad];
        s = mp__err(MP_ECONFLICT,
                    "tensors %llu '%s' (half-steps %llu..%llu) and %llu '%s' (%llu..%llu) "
                    "overlap in memory while both live (%s)",
                    (unsigned long long)x->id, tname(g, x->id), (unsigned long long)x->first,
                    (unsigned long long)x->last, (unsigned long long)y->id, tname(g, y->id),
                    (unsigned long long)y->first, (unsigned long long)y->last, why);
    }
    if (s == MP_OK && parallel != MP_PARALLEL_ANY) s = check_parallel(g, b, n, plan.offset);
    free(b);
    mp_plan_free(&plan);
    return s;
}

/* MP_OK when p is valid for g (and parallel-safe in a parallel mode), else
 * MP_ECONFLICT naming the tensors. */
mp_status mp_graph_plan_check(const mp_graph_t *g, const mp_graph_plan_t *p,
                              mp_parallel_mode parallel) {
    mp_status s = mp__graph_plan_shape(g, p);
    if (s != MP_OK) return s;
    if (parallel != MP_PARALLEL_ANY && parallel != MP_PARALLEL_ANCESTOR &&
        parallel != MP_PARALLEL_COLOUR)
        return mp__err(MP_EINVAL, "mp_graph_plan_check: unknown parallel mode %d", (int)parallel);
    size_t nt = g->n_tensors;
    bool *prot = malloc((nt ? nt : 1) * sizeof *prot);
    uint64_t *first = malloc((nt ? nt : 1) * sizeof *first);
    uint64_t *last = malloc((nt ? nt : 1) * sizeof *last);
    if (!prot || !first || !last) s = MP__NOMEM();
    if (s == MP_OK) {
        mp__share_protected(g, prot);
        mp_graph_lifetimes(g, first, last);
        s = check_tensors(g, p, prot, last);
    }
    free(prot), free(first), free(last);
    return s == MP_OK ? check_records(g, p, parallel) : s;
}
