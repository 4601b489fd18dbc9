/* remat.c -- the recompute context: the training graph of a forward graph
 * and what every policy reads of it (mp_remat_new), computed once.
 *
 *   - per forward node: FLOPs (attrs.flops, else the estimate of src/graph/flops.c) and
 *     owned output bytes;
 *   - the backward groups of the training graph (see remat_internal.h);
 *   - the chain: forward steps s whose crossing values (non-persistent
 *     values produced at a step <= s and read by a forward step > s) were
 *     all produced after the previous cut.  Then the steps between two
 *     cuts form a stage that reads only the previous stage's crossing values
 *     (and inputs, parameters): a chain of blocks (ResNet blocks, unrolled
 *     LSTM time steps, transformer layers).  Taking cuts greedily as early
 *     as possible keeps the most: a later first cut only adds constraints.
 *     Each value crosses at most one cut, so the sweep is O(tensors + reads).
 */
#include "remat_internal.h"
#include "../graph/graph_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp_remat_opts_default(mp_remat_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->add_loss = 1;
    o->accumulate = 1;
    o->inplace = 1;
    o->share = 1;
    o->strategy = "auto";
}

void mp__remat_name(mp_remat_plan_t *p, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->policy, sizeof p->policy, fmt, ap);
    va_end(ap);
}

size_t mp__remat_producer(const mp_remat_t *r, size_t t) {
    const mp_graph_tensor_t *x = mp_graph_tensor(r->train, t);
    if (!x || x->producer == MP_GRAPH_NONE || x->producer >= r->n_fwd) return MP_GRAPH_NONE;
    return x->producer;
}

/* Per forward node: FLOPs, bytes, forced; the total. */
static mp_status scan_nodes(mp_remat_t *r) {
    const mp_graph_t *g = r->train;
    size_t n_out;
    const size_t *outs = mp_graph_outputs(g, &n_out);
    for (size_t s = 0; s < r->n_fwd; s++) {
        size_t v = r->fwd_order[s];
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        r->step_of[v] = s;
        r->flops[v] = nd->flops ? nd->flops : mp__graph_estimate_flops(g, v);
        for (size_t k = 0; k < nd->n_outputs; k++) r->bytes[v] += mp_graph_tensor(g, nd->outputs[k])->bytes;
        if (r->total_flops > UINT64_MAX - r->flops[v]) return mp__err(MP_EOVERFLOW, "remat: FLOPs overflow");
        r->total_flops += r->flops[v];
    }
    for (size_t i = 0; i < n_out; i++) {
        size_t p = mp__remat_producer(r, outs[i]);
        if (p != MP_GRAPH_NONE) r->forced[p] = true;
    }
    size_t loss = mp_graph_loss(g), p = loss == MP_GRAPH_NONE ? MP_GRAPH_NONE : mp__remat_producer(r, loss);
    if (p != MP_GRAPH_NONE) r->forced[p] = true;
    return MP_OK;
}

/* The backward groups: a gradient node (attrs.forward_node set) opens one. */
static mp_status scan_groups(mp_remat_t *r) {
    size_t n;
    const size_t *order = mp_graph_order(r->train, &n);
    r->grp_start = malloc((n - r->n_fwd + 1) * sizeof *r->grp_start);
    r->grp_node = malloc((n - r->n_fwd + 1) * sizeof *r->grp_node);
    if (!r->grp_start || !r->grp_node) return MP__NOMEM();
    for (size_t s = r->n_fwd; s < n; s++) {
        mp_op_attrs_t a;
        mp_graph_node_attrs(r->train, order[s], &a);
        if (a.forward_node == MP_GRAPH_NONE) continue;
        if (a.forward_node >= r->n_fwd)
            return mp__err(MP_EINVAL, "remat: gradient node %zu names node %zu, not a forward node", order[s],
                           a.forward_node);
        r->grp_start[r->n_groups] = s;
        r->grp_node[r->n_groups++] = a.forward_node;
    }
    r->grp_start[r->n_groups] = n;
    return MP_OK;
}

/* The last forward step reading each root tensor (0 when none). */
static void last_forward_reads(const mp_remat_t *r, size_t *lastf) {
    const mp_graph_t *g = r->train;
    for (size_t s = 0; s < r->n_fwd; s++) {
        const mp_graph_node_t *nd = mp_graph_node(g, r->fwd_order[s]);
        for (size_t i = 0; i < nd->n_inputs; i++) lastf[mp_graph_tensor(g, nd->inputs[i])->root] = s;
    }
}

/* The chain of cuts (see the top of the file). */
static mp_status scan_cuts(mp_remat_t *r) {
    const mp_graph_t *g = r->train;
    size_t nt = mp_graph_tensor_count(g), nf = r->n_fwd;
    size_t *lastf = calloc(nt ? nt : 1, sizeof *lastf), *queue = malloc((nt + 1) * sizeof *queue);
    r->cut = malloc((nf + 1) * sizeof *r->cut);
    r->cut_bytes = malloc((nf + 1) * sizeof *r->cut_bytes);
    r->cross = malloc((nt + 1) * sizeof *r->cross);
    r->cross_start = malloc((nf + 2) * sizeof *r->cross_start);
    mp_status st = MP_OK;
    if (!lastf || !queue || !r->cut || !r->cut_bytes || !r->cross || !r->cross_start) {
        st = MP__NOMEM();
        goto out;
    }
    last_forward_reads(r, lastf);
    /* block: values crossing the last cut stay live up to there, so no
     * boundary before it can be a cut (they were made before that cut) */
    size_t head = 0, tail = 0, n_cross = 0, block = 0;
    r->cross_start[0] = 0;
    for (size_t s = 0; s + 1 < nf; s++) {
        const mp_graph_node_t *nd = mp_graph_node(g, r->fwd_order[s]);
        for (size_t k = 0; k < nd->n_outputs; k++) {
            const mp_graph_tensor_t *t = mp_graph_tensor(g, nd->outputs[k]);
            if (t->root == nd->outputs[k] && t->bytes && lastf[t->root] > s) queue[tail++] = t->root;
        }
        while (head < tail && lastf[queue[head]] <= s) head++;
        /* the queue holds only values made after the last cut (it is
         * emptied at each cut), so no live value predates it */
        if (head == tail || s < block) continue;
        /* a cut: its crossing values are the live entries of the queue */
        uint64_t bytes = 0;
        for (size_t q = head; q < tail; q++) {
            size_t t = queue[q];
            if (lastf[t] <= s) continue;
            bytes += mp_graph_tensor(g, t)->bytes;
            if (lastf[t] > block) block = lastf[t];
            r->cross[n_cross++] = mp_graph_tensor(g, t)->producer;
        }
        r->cut[r->n_cuts] = s;
        r->cut_bytes[r->n_cuts++] = bytes;
        r->cross_start[r->n_cuts] = n_cross;
        head = tail;   /* those are accounted for by block */
    }
out:
    free(lastf);
    free(queue);
    return st;
}

mp_status mp_remat_new(const mp_graph_t *fwd, const mp_remat_opts_t *opts, mp_remat_t **out) {
    if (!out) return mp__err(MP_EINVAL, "mp_remat_new: NULL out");
    *out = NULL;
    if (!fwd) return mp__err(MP_EINVAL, "mp_remat_new: NULL graph");
    mp_remat_t *r = calloc(1, sizeof *r);
    if (!r) return MP__NOMEM();
    if (opts) r->opts = *opts;
    else mp_remat_opts_default(&r->opts);
    snprintf(r->strategy, sizeof r->strategy, "%s", r->opts.strategy ? r->opts.strategy : "auto");
    r->opts.strategy = r->strategy;
    mp_backward_opts_t bo = {.add_loss = r->opts.add_loss, .accumulate = r->opts.accumulate};
    mp_backward_stats_t bs;
    mp_status s = mp_graph_backward(fwd, &bo, &r->train, &bs);
    if (s) goto fail;
    size_t nn = mp_graph_node_count(r->train), n_order;
    r->n_fwd = bs.forward_nodes;
    r->fwd_order = mp_graph_order(r->train, &n_order);
    r->step_of = malloc((nn + 1) * sizeof *r->step_of);
    r->flops = calloc(r->n_fwd + 1, sizeof *r->flops);
    r->bytes = calloc(r->n_fwd + 1, sizeof *r->bytes);
    r->forced = calloc(r->n_fwd + 1, sizeof *r->forced);
    if (!r->step_of || !r->flops || !r->bytes || !r->forced) {
        s = MP__NOMEM();
        goto fail;
    }
    for (size_t i = 0; i < r->n_fwd; i++)
        if (r->fwd_order[i] >= r->n_fwd) {
            s = mp__err(MP_EINVAL, "remat: the training graph's first steps are not its forward nodes");
            goto fail;
        }
    if ((s = scan_nodes(r)) || (s = scan_groups(r)) || (s = scan_cuts(r))) goto fail;
    *out = r;
    return MP_OK;
fail:
    mp_remat_free(r);
    return s;
}

void mp_remat_free(mp_remat_t *r) {
    if (!r) return;
    mp_graph_free(r->train);
    free(r->step_of);
    free(r->flops);
    free(r->bytes);
    free(r->forced);
    free(r->grp_start);
    free(r->grp_node);
    free(r->cut);
    free(r->cut_bytes);
    free(r->cross);
    free(r->cross_start);
    free(r);
}

const mp_graph_t *mp_remat_graph(const mp_remat_t *r) { return r ? r->train : NULL; }
size_t mp_remat_forward_count(const mp_remat_t *r) { return r ? r->n_fwd : 0; }
uint64_t mp_remat_node_flops(const mp_remat_t *r, size_t v) { return r && v < r->n_fwd ? r->flops[v] : 0; }
uint64_t mp_remat_node_bytes(const mp_remat_t *r, size_t v) { return r && v < r->n_fwd ? r->bytes[v] : 0; }

const size_t *mp_remat_cuts(const mp_remat_t *r, size_t *n) {
    *n = r ? r->n_cuts : 0;
    return r ? r->cut : NULL;
}

void mp__remat_keep_cut(const mp_remat_t *r, size_t i, uint32_t *m) {
    for (size_t k = r->cross_start[i]; k < r->cross_start[i + 1]; k++) m[r->cross[k]] = 0;
}

uint32_t *mp__remat_mirror_new(const mp_remat_t *r, uint32_t fill) {
    uint32_t *m = malloc((r->n_fwd + 1) * sizeof *m);
    if (m)
        for (size_t i = 0; i < r->n_fwd; i++) m[i] = fill;
    return m;
}
