/* share.c -- in-place operations and memory sharing by the counter
 * algorithm of the MXNet note and chen2016 (Fig. 2): mp_graph_share.
 *
 * The execution order is simulated once.  Every tensor that owns planned
 * memory gets a storage; a storage holds one live tensor at a time (its
 * "current" tensor, a root; views share their root's storage).  A counter
 * per root counts the nodes still to read it or any of its views (a node
 * reading it twice counts once).  At each step:
 *
 *   1. In place: output 0 takes input 0's storage when the op allows it
 *      (registry or the file's inplace_capable), the sizes and dtypes agree,
 *      this node is the last pending reader (counter 1), the storage is not
 *      protected, input 0 has the root's layout (the root itself, or a
 *      chain of registry views such as flatten -- a transposed view would be read in
 *      another element order than it is written), and no other input is a
 *      different view of the same memory.
 *   2. The other outputs take the best fit from the free box (smallest
 *      storage >= the bytes, else the largest smaller one, grown; ties by
 *      storage id), else a new storage.
 *   3. Counters of the inputs' roots drop; a storage whose current tensor
 *      reaches 0 goes to the box, and so does one whose new tensor nobody
 *      reads.  Protected storages -- graph inputs and other tensors no node
 *      produces, graph outputs, parameters and gradients -- are never freed
 *      nor written in place; inputs and persistent tensors get their
 *      storages before step 0.
 *
 * In the parallel modes a storage (or an in-place input) may be taken by
 * node P only when the ops that touched its current tensor are P or P's
 * ancestors (parallel.h); the box is then scanned in best-fit order for the
 * first storage that passes.
 *
 * Cost: O(T + R + n log n) for T tensors, R node inputs and n nodes in the
 * sequential mode; the parallel modes add the structures of parallel.c and
 * O(B x touchers) per request for a box of B storages. */
#include "parallel.h"

#include <stdlib.h>
#include <string.h>

typedef struct ctx {
    const mp_graph_t *g;
    mp_share_opts_t o;
    mp_graph_plan_t *p;
    size_t *pending;        /* per root: reading nodes still to run */
    bool *prot;             /* per root: protected */
    size_t *stamp;          /* per tensor: scratch */
    size_t ns;              /* storages so far */
    size_t *st_cur;         /* per storage: the root it holds */
    size_t *st_rel;         /* per storage: the node that released it */
    bool *st_prot;
    mp__tset box;           /* free storages, keyed (size, id) */
    mp__dag dag;
    mp__anc anc;
    mp__colour col;
} ctx;

/* Releases what p owns and zeroes it; NULL and zeroed plans are fine. */
void mp_graph_plan_free(mp_graph_plan_t *p) {
    if (!p) return;
    free(p->storage);
    free(p->inplace_of);
    free(p->storage_size);
    free(p->offset);
    memset(p, 0, sizeof *p);
}

/* See parallel.h: tensors sharing must never free nor overwrite. */
void mp__share_protected(const mp_graph_t *g, bool *prot) {
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp_graph_tensor_t *x = &g->tensor[t];
        prot[t] = x->producer == MP_GRAPH_NONE || mp__graph_persistent(x->kind) ||
                  x->kind == MP_TENSOR_INPUT || x->kind == MP_TENSOR_OUTPUT;
    }
    for (size_t k = 0; k < g->n_outputs; k++) prot[g->tensor[g->outputs[k]].root] = true;
}

/* Does tensor t own memory this plan places? */
static bool planned(const ctx *c, size_t t) {
    const mp_graph_tensor_t *x = &c->g->tensor[t];
    return x->root == t && x->bytes > 0 &&
           (c->o.include_persistent || !mp__graph_persistent(x->kind));
}

static size_t new_storage(ctx *c) {
    size_t s = c->ns++;
    c->p->storage_size[s] = 0;
    c->st_prot[s] = false;
    c->st_rel[s] = MP_GRAPH_NONE;
    return s;
}

static void assign(ctx *c, size_t t, size_t s) {
    c->p->storage[t] = s;
    c->p->storage_size[s] = mp__max64(c->p->storage_size[s], c->g->tensor[t].bytes);
    c->st_cur[s] = t;
    c->st_prot[s] |= c->prot[t];
}

/* May node v write storage s (whose current tensor is finished with)?
 * rel is the node after which s was released (v itself for in place). */
static bool safe(const ctx *c, size_t s, size_t v, size_t rel) {
    if (c->o.parallel == MP_PARALLEL_ANY) return true;
    const mp_graph_t *g = c->g;
    size_t r = c->st_cur[s], pr = g->tensor[r].producer;
    const mp__dag *d = &c->dag;
    if (c->o.parallel == MP_PARALLEL_ANCESTOR) {
        if (pr != MP_GRAPH_NONE && !mp__anc_has(&c->anc, pr, v)) return false;
        for (size_t e = d->rd_at[r]; e < d->rd_at[r + 1]; e++)
            if (!mp__anc_has(&c->anc, d->rd[e], v)) return false;
        return true;
    }
    /* The note's rule: reuse only along one colour (the releasing node's
     * colour is v's), then prove every toucher is an ancestor of v. */
    size_t cv = c->col.colour[v];
    if (rel != v && (cv == MP_GRAPH_NONE || c->col.colour[rel] != cv)) return false;
    if (pr != MP_GRAPH_NONE && !mp__colour_anc(g, d, &c->col, pr, v)) return false;
    for (size_t e = d->rd_at[r]; e < d->rd_at[r + 1]; e++)
        if (!mp__colour_anc(g, d, &c->col, d->rd[e], v)) return false;
    return true;
}

/* Best fit from the box for node v, or MP_GRAPH_NONE. */
static size_t take(ctx *c, uint64_t bytes, size_t v) {
    uint64_t k1, k2;
    bool ok = mp__tset_ceil(&c->box, bytes, 0, &k1, &k2);
    for (; ok; ok = mp__tset_next(&c->box, k1, k2, &k1, &k2))
        if (safe(c, (size_t)k2, v, c->st_rel[k2])) goto found;
    /* Smaller ones: sizes descending, ids ascending within a size. */
    for (uint64_t sz = bytes; mp__tset_prev(&c->box, sz, 0, &k1, &k2);) {
        sz = k1;
        ok = mp__tset_ceil(&c->box, sz, 0, &k1, &k2);
        for (; ok && k1 == sz; ok = mp__tset_next(&c->box, k1, k2, &k1, &k2))
            if (safe(c, (size_t)k2, v, c->st_rel[k2])) goto found;
    }
    return MP_GRAPH_NONE;
found:
    mp__tset_erase(&c->box, k1, k2);
    return (size_t)k2;
}

/* Does alias x lay its elements out as its root does?  Every producer
 * along the chain back to the root must be a registry view op (reshape,
 * flatten, ...): one permute or transpose anywhere makes an elementwise
 * write over x scramble the root.  O(length of the chain). */
static bool keeps_layout(const mp_graph_t *g, size_t x) {
    size_t r = g->tensor[x].root;
    for (size_t hops = 0; x != r; hops++) {
        size_t px = g->tensor[x].producer;
        if (hops > g->n_nodes || px == MP_GRAPH_NONE || !mp_op_info(g->node[px].op)->view ||
            !g->node[px].n_inputs)
            return false;
        x = g->node[px].inputs[0];
        if (g->tensor[x].root != r) return false;
    }
    return true;
}

/* Storage node v may write output 0 over (step 1 above), or MP_GRAPH_NONE. */
static size_t inplace_target(const ctx *c, size_t v) {
    const mp_graph_t *g = c->g;
    const mp_graph_node_t *nd = &g->node[v];
    if (!c->o.inplace || !nd->n_inputs || !nd->n_outputs) return MP_GRAPH_NONE;
    if (!mp_op_info(nd->op)->inplace && !nd->inplace_capable) return MP_GRAPH_NONE;
    size_t y = nd->outputs[0], x = nd->inputs[0], r = g->tensor[x].root;
    if (!planned(c, y) || c->p->storage[y] != MP_GRAPH_NONE) return MP_GRAPH_NONE;
    size_t s = c->p->storage[r];
    if (s == MP_GRAPH_NONE || c->st_prot[s] || c->st_cur[s] != r || c->pending[r] != 1)
        return MP_GRAPH_NONE;
    const mp_graph_tensor_t *ty = &g->tensor[y], *tr = &g->tensor[r];
    if (ty->bytes != tr->bytes || strcmp(ty->dtype, tr->dtype)) return MP_GRAPH_NONE;
    if (!keeps_layout(g, x)) return MP_GRAPH_NONE;
    for (size_t i = 1; i < nd->n_inputs; i++)
        if (nd->inputs[i] != x && g->tensor[nd->inputs[i]].root == r) return MP_GRAPH_NONE;
    return safe(c, s, v, v) ? s : MP_GRAPH_NONE;
}

/* Storage s held root r, which node v was the last to need. */
static mp_status release(ctx *c, size_t s, size_t r, size_t v) {
    if (!c->o.share || c->st_prot[s] || c->st_cur[s] != r) return MP_OK;
    c->st_rel[s] = v;
    return mp__tset_insert(&c->box, c->p->storage_size[s], s);
}

/* A storage for tensor t that node v makes: from the box, else a new one. */
static void give(ctx *c, size_t t, size_t v) {
    if (!planned(c, t) || c->p->storage[t] != MP_GRAPH_NONE) return;
    size_t s = c->o.share ? take(c, c->g->tensor[t].bytes, v) : MP_GRAPH_NONE;
    if (s != MP_GRAPH_NONE) c->p->n_reused++;
    else s = new_storage(c);
    assign(c, t, s);
}

static mp_status step(ctx *c, size_t v) {
    const mp_graph_t *g = c->g;
    mp_graph_plan_t *p = c->p;
    const mp_graph_node_t *nd = &g->node[v];
    size_t ip = inplace_target(c, v);
    if (ip != MP_GRAPH_NONE) {
        assign(c, nd->outputs[0], ip);
        p->inplace_of[nd->outputs[0]] = nd->inputs[0];
        p->n_inplace++;
    }
    for (size_t k = 0; k < nd->n_outputs; k++) give(c, nd->outputs[k], v);
    /* The scratch (workspace) is taken beside the outputs, before this
     * step's inputs go back to the box, and given back after them: it
     * lives at this step only, together with both. */
    size_t ws = nd->scratch != MP_GRAPH_NONE && planned(c, nd->scratch) ? nd->scratch : MP_GRAPH_NONE;
    if (ws != MP_GRAPH_NONE) give(c, ws, v);
    mp_status st = MP_OK;
    for (size_t i = 0; i < nd->n_inputs && st == MP_OK; i++) {
        size_t r = g->tensor[nd->inputs[i]].root;
        if (c->stamp[r] == v) continue;
        c->stamp[r] = v;
        if (p->storage[r] == MP_GRAPH_NONE || !planned(c, r)) continue;
        if (--c->pending[r] == 0) st = release(c, p->storage[r], r, v);
    }
    for (size_t k = 0; k < nd->n_outputs && st == MP_OK; k++) {
        size_t t = nd->outputs[k];
        if (planned(c, t) && c->pending[t] == 0) st = release(c, p->storage[t], t, v);
    }
    if (st == MP_OK && ws != MP_GRAPH_NONE) st = release(c, p->storage[ws], ws, v);
    return st;
}

/* Counters, protection, and the storages that exist before step 0. */
static void prepare(ctx *c) {
    const mp_graph_t *g = c->g;
    size_t nt = g->n_tensors;
    mp__share_protected(g, c->prot);
    for (size_t t = 0; t < nt; t++) c->pending[t] = 0, c->stamp[t] = MP_GRAPH_NONE;
    for (size_t v = 0; v < g->n_nodes; v++) {
        const mp_graph_node_t *nd = &g->node[v];
        for (size_t i = 0; i < nd->n_inputs; i++) {
            size_t r = g->tensor[nd->inputs[i]].root;
            if (c->stamp[r] != v) c->stamp[r] = v, c->pending[r]++;
        }
    }
    for (size_t t = 0; t < nt; t++) c->stamp[t] = MP_GRAPH_NONE;
    for (size_t t = 0; t < nt; t++) {
        const mp_graph_tensor_t *x = &g->tensor[t];
        if (planned(c, t) && (x->producer == MP_GRAPH_NONE || mp__graph_persistent(x->kind)))
            assign(c, t, new_storage(c));
    }
}

/* Views get their root's storage; storages are laid out end to end. */
static mp_status finish(ctx *c) {
    const mp_graph_t *g = c->g;
    mp_graph_plan_t *p = c->p;
    for (size_t t = 0; t < g->n_tensors; t++) {
        size_t r = g->tensor[t].root;
        if (r != t && g->tensor[r].bytes > 0) p->storage[t] = p->storage[r];
    }
    p->n_storages = c->ns;
    p->offset = malloc((c->ns ? c->ns : 1) * sizeof *p->offset);
    if (!p->offset) return MP__NOMEM();
    uint64_t at = 0;
    for (size_t s = 0; s < c->ns; s++) {
        p->offset[s] = at;
        if (p->storage_size[s] > UINT64_MAX - at)
            return mp__err(MP_EOVERFLOW, "storages of '%s' total more than 2^64 bytes",
                           mp_graph_model_name(g));
        at += p->storage_size[s];
    }
    p->footprint = at;
    p->placement = "sequential";
    return MP_OK;
}

static mp_status run(ctx *c) {
    const mp_graph_t *g = c->g;
    size_t nt = g->n_tensors, m = nt ? nt : 1;
    mp_graph_plan_t *p = c->p;
    p->n_tensors = nt;
    p->storage = malloc(m * sizeof *p->storage);
    p->inplace_of = malloc(m * sizeof *p->inplace_of);
    p->storage_size = malloc(m * sizeof *p->storage_size);
    c->pending = malloc(m * sizeof *c->pending);
    c->prot = malloc(m * sizeof *c->prot);
    c->stamp = malloc(m * sizeof *c->stamp);
    c->st_cur = malloc(m * sizeof *c->st_cur);
    c->st_rel = malloc(m * sizeof *c->st_rel);
    c->st_prot = malloc(m * sizeof *c->st_prot);
    if (!p->storage || !p->inplace_of || !p->storage_size || !c->pending || !c->prot ||
        !c->stamp || !c->st_cur || !c->st_rel || !c->st_prot)
        return MP__NOMEM();
    for (size_t t = 0; t < nt; t++) p->storage[t] = p->inplace_of[t] = MP_GRAPH_NONE;
    mp_status s = MP_OK;
    if (c->o.parallel != MP_PARALLEL_ANY && (c->o.inplace || c->o.share)) {
        s = mp__dag_build(g, &c->dag);
        if (s == MP_OK)
            s = c->o.parallel == MP_PARALLEL_ANCESTOR ? mp__anc_build(g, &c->dag, &c->anc)
                                                       : mp__colour_build(g, &c->dag, &c->col);
    }
    if (s != MP_OK) return s;
    prepare(c);
    for (size_t i = 0; i < g->n_nodes && s == MP_OK; i++) s = step(c, g->order[i]);
    return s == MP_OK ? finish(c) : s;
}

/* Storages for g's tensors by opts (NULL: all off), laid end to end; on
 * failure *out is zeroed. */
mp_status mp_graph_share(const mp_graph_t *g, const mp_share_opts_t *opts, mp_graph_plan_t *out) {
    if (!out) return mp__err(MP_EINVAL, "mp_graph_share: NULL plan");
    memset(out, 0, sizeof *out);
    if (!g) return mp__err(MP_EINVAL, "mp_graph_share: NULL graph");
    ctx c = {.g = g, .p = out};
    if (opts) c.o = *opts;
    if (c.o.parallel != MP_PARALLEL_ANY && c.o.parallel != MP_PARALLEL_ANCESTOR &&
        c.o.parallel != MP_PARALLEL_COLOUR)
        return mp__err(MP_EINVAL, "mp_graph_share: unknown parallel mode %d", (int)c.o.parallel);
    mp__tset_init(&c.box);
    mp_status s = run(&c);
    free(c.pending), free(c.prot), free(c.stamp);
    free(c.st_cur), free(c.st_rel), free(c.st_prot);
    mp__tset_free(&c.box);
    mp__dag_free(&c.dag);
    mp__anc_free(&c.anc);
    mp__colour_free(&c.col);
    if (s != MP_OK) mp_graph_plan_free(out);
    return s;
}
