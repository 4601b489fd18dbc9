/* exec.c -- the reference executor: runs a graph once on float32 CPU
 * kernels, with every planned tensor at arena + offset of its storage (a
 * graph plan) or every tensor in its own allocation (the naive run), and
 * copies the graph's outputs out.
 *
 * Its purpose is to prove plans: the kernels give the same bits wherever
 * their operands live, so a planned run and a naive run from the same seed
 * must agree bit for bit, and with poison (each tensor's bytes set to NaN
 * right before its producer runs) any read of memory the plan let another
 * tensor overwrite shows up in the outputs.  Before each node the executor
 * also checks that no output it writes overlaps an input it reads, except
 * an in-place output exactly over input 0 of an op whose kernel allows it.
 * Aliases lie in their roots where their view ops put them (exec_views.c);
 * a strided one is gathered into a contiguous copy right before a node
 * reads it.
 *
 * Initial values: inputs and parameters come from opts->init or from
 * splitmix64 of (seed, tensor id), uniform in [-1, 1), weights (rank >= 2)
 * scaled by 1/sqrt(fan_in); int64 targets of softmax_xent get classes in
 * [0, K); batch-norm running variances are in [0.5, 1.5); other integer
 * tensors are 0. */
#include "exec_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the op table -------------------------------------------------------- */

const mp__exec_op *mp__exec_find(const char *name) {
    const mp__exec_op *(*tables[5])(size_t *) = {mp__exec_ops_main, mp__exec_ops_shape,
                                                 mp__exec_ops_grad, mp__exec_ops_view,
                                                 mp__exec_ops_resize};
    for (size_t t = 0; t < 5; t++) {
        size_t n;
        const mp__exec_op *ops = tables[t](&n);
        for (size_t i = 0; i < n; i++)
            if (!strcmp(ops[i].name, name)) return &ops[i];
    }
    return NULL;
}

static const mp__exec_op *node_kernel(const mp_graph_t *g, size_t v) {
    return mp__exec_find(mp_op_info(g->node[v].op)->name);
}

/* ---- helpers for the bindings -------------------------------------------- */

mp_status mp__exec_err(const mp__exec *x, size_t id, const char *fmt, ...) {
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const mp_graph_node_t *nd = &x->g->node[id];
    return mp__err(MP_EINVAL, "exec: node %zu '%s' (%s): %s", id, nd->name, nd->op, msg);
}

mp__kshape mp__xshape(const mp__exec *x, size_t t) {
    const mp_graph_tensor_t *T = mp__xt(x, t);
    mp__kshape s;
    memset(&s, 0, sizeof s);
    s.rank = T->rank;
    for (size_t i = 0; i < T->rank; i++) s.d[i] = T->shape[i];
    return s;
}

int mp__xsame(const mp__exec *x, size_t t, size_t u) {
    const mp_graph_tensor_t *a = mp__xt(x, t), *b = mp__xt(x, u);
    if (a->rank != b->rank) return 0;
    for (size_t i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

mp_status mp__xfloat(const mp__exec *x, size_t id, size_t t) {
    if (!strcmp(mp__xt(x, t)->dtype, "float32")) return MP_OK;
    return mp__exec_err(x, id, "tensor %zu '%s' is %s; the kernel takes float32", t,
                        mp__xt(x, t)->name, mp__xt(x, t)->dtype);
}

mp_status mp__xaxis(const mp__exec *x, size_t id, int64_t dim, size_t rank, size_t *out) {
    int64_t d = dim < 0 ? dim + (int64_t)rank : dim;
    if (d < 0 || d >= (int64_t)rank)
        return mp__exec_err(x, id, "axis %lld is out of range for rank %zu", (long long)dim, rank);
    *out = (size_t)d;
    return MP_OK;
}

void mp__xcopy(float *dst, const float *src, uint64_t n) {
    if (dst != src && n) memmove(dst, src, n * sizeof *dst);
}

/* ---- supported ------------------------------------------------------------ */

static int other_float(const char *dt) {
    return !strcmp(dt, "float16") || !strcmp(dt, "bfloat16") || !strcmp(dt, "float64");
}

/* A float tensor the kernels cannot take: MP_ENOTFOUND naming it. */
static mp_status dtype_supported(const mp_graph_t *g, size_t v, size_t t) {
    const mp_graph_tensor_t *T = &g->tensor[t];
    if (!other_float(T->dtype)) return MP_OK;
    return mp__err(MP_ENOTFOUND, "exec: node %zu '%s' (%s): no %s kernel (tensor %zu '%s'; float32 only)",
                   v, g->node[v].name, g->node[v].op, T->dtype, t, T->name);
}

mp_status mp_exec_supported(const mp_graph_t *g) {
    if (!g) return mp__err(MP_EINVAL, "exec: NULL graph");
    for (size_t s = 0; s < g->n_nodes; s++) {
        size_t v = g->order[s];
        const mp_graph_node_t *nd = &g->node[v];
        if (!node_kernel(g, v))
            return mp__err(MP_ENOTFOUND, "exec: node %zu '%s': no kernel for op '%s'", v, nd->name,
                           nd->op);
        for (size_t i = 0; i < nd->n_inputs; i++) {
            mp_status st = dtype_supported(g, v, nd->inputs[i]);
            if (st != MP_OK) return st;
        }
        for (size_t i = 0; i < nd->n_outputs; i++) {
            mp_status st = dtype_supported(g, v, nd->outputs[i]);
            if (st != MP_OK) return st;
        }
    }
    return MP_OK;
}

/* ---- a run ---------------------------------------------------------------- */

enum { ALIGN = 64 };

typedef struct run {
    mp__exec x;
    const mp_exec_opts_t *o;
    const mp_graph_plan_t *plan;
    const mp__exec_hooks *h;
    char *arena;
    char **own;                 /* per tensor: its own allocation, or NULL */
    const mp__exec_op **kern;   /* per node */
    mp_op_attrs_t *attrs;       /* per node */
    uint64_t *span;             /* per tensor: bytes its address range covers */
} run;

static void run_free(run *r) {
    if (r->own)
        for (size_t t = 0; t < r->x.g->n_tensors; t++) free(r->own[t]);
    free(r->own);
    free(r->arena);
    free(r->x.addr);
    free(r->x.view);
    free(r->kern);
    free(r->attrs);
    free(r->span);
}

static void *alloc_aligned(uint64_t bytes) {
    uint64_t n = (bytes + ALIGN - 1) / ALIGN * ALIGN;
    if (n == 0) n = ALIGN;
    if (n > SIZE_MAX) return NULL;
    return aligned_alloc(ALIGN, (size_t)n);
}

/* The plan fits g: its tensor count, storages and offsets in bounds. */
static mp_status check_plan(const mp_graph_t *g, const mp_graph_plan_t *p) {
    if (p->n_tensors != g->n_tensors)
        return mp__err(MP_EINVAL, "exec: the plan is for %zu tensors, the graph has %zu", p->n_tensors,
                       g->n_tensors);
    if (!p->storage || (p->n_storages && (!p->storage_size || !p->offset)))
        return mp__err(MP_EINVAL, "exec: the plan has no storages");
    for (size_t s = 0; s < p->n_storages; s++)
        if (p->offset[s] > p->footprint || p->storage_size[s] > p->footprint - p->offset[s])
            return mp__err(MP_EINVAL, "exec: storage %zu lies outside the plan's arena", s);
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp_graph_tensor_t *T = &g->tensor[t];
        size_t s = p->storage[T->root];
        if (T->root != t || s == MP_GRAPH_NONE) continue;
        if (s >= p->n_storages)
            return mp__err(MP_EINVAL, "exec: tensor %zu '%s' has storage %zu of %zu", t, T->name, s,
                           p->n_storages);
        if (T->bytes > p->storage_size[s])
            return mp__err(MP_EINVAL, "exec: tensor %zu '%s' (%llu bytes) exceeds storage %zu", t,
                           T->name, (unsigned long long)T->bytes, s);
        /* floats are accessed directly; int64 targets through memcpy */
        if (!strcmp(T->dtype, "float32") && p->offset[s] % 4)
            return mp__err(MP_EINVAL, "exec: float32 tensor %zu '%s' sits at offset %llu, not a multiple of 4",
                           t, T->name, (unsigned long long)p->offset[s]);
    }
    return MP_OK;
}

/* Gives every tensor its address. */
static mp_status layout(run *r) {
    const mp_graph_t *g = r->x.g;
    size_t n = g->n_tensors;
    r->x.addr = calloc(n ? n : 1, sizeof *r->x.addr);
    r->own = calloc(n ? n : 1, sizeof *r->own);
    r->span = calloc(n ? n : 1, sizeof *r->span);
    r->kern = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->kern);
    r->attrs = calloc(g->n_nodes ? g->n_nodes : 1, sizeof *r->attrs);
    r->x.view = calloc(n ? n : 1, sizeof *r->x.view);
    if (!r->x.addr || !r->own || !r->span || !r->kern || !r->attrs || !r->x.view) return MP__NOMEM();
    r->x.attrs = r->attrs;
    if (r->plan && r->plan->footprint) {
        if (!(r->arena = alloc_aligned(r->plan->footprint))) return MP__NOMEM();
        if (r->o->poison) memset(r->arena, 0xFF, r->plan->footprint);
    }
    for (size_t t = 0; t < n; t++) {
        const mp_graph_tensor_t *T = &g->tensor[t];
        r->span[t] = T->numel * T->dtype_size;
        if (T->root != t) continue;
        size_t s = r->plan ? r->plan->storage[t] : MP_GRAPH_NONE;
        char *placed = NULL;
        if (r->h && r->h->place) {
            mp_status st = r->h->place(r->h->ctx, t, r->span[t], &placed);
            if (st) return st;
        }
        if (placed) {
            r->x.addr[t] = placed;
        } else if (s != MP_GRAPH_NONE) {
            r->x.addr[t] = r->arena + r->plan->offset[s];
        } else {
            if (!(r->own[t] = alloc_aligned(r->span[t]))) return MP__NOMEM();
            if (r->o->poison) memset(r->own[t], 0xFF, r->span[t]);
            r->x.addr[t] = r->own[t];
        }
    }
    /* aliases: where their views lie in their roots */
    return mp__exec_views_layout(&r->x, r->span);
}

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Roles of tensors no node produces, found from their readers. */
enum { ROLE_NONE, ROLE_TARGET, ROLE_RUNNING_VAR };

/* Fills the tensors no node produces (inputs, parameters).  Roles come
 * from one sweep over the nodes (the reader decides what a value means). */
static mp_status init_values(run *r) {
    const mp_graph_t *g = r->x.g;
    unsigned char *role = calloc(g->n_tensors ? g->n_tensors : 1, 1);
    uint64_t *classes = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *classes);
    if (!role || !classes) {
        free(role);
        free(classes);
        return MP__NOMEM();
    }
    for (size_t v = 0; v < g->n_nodes; v++) {
        const mp_graph_node_t *nd = &g->node[v];
        const char *op = mp_op_info(nd->op)->name;
        if (!strcmp(op, "softmax_xent") && nd->n_inputs == 2 && g->tensor[nd->inputs[0]].rank == 2) {
            role[nd->inputs[1]] = ROLE_TARGET;
            classes[nd->inputs[1]] = g->tensor[nd->inputs[0]].shape[1];
        } else if (!strcmp(op, "batchnorm2d") && nd->n_inputs > 4) {
            role[nd->inputs[4]] = ROLE_RUNNING_VAR;
        }
    }
    for (size_t t = 0; t < g->n_tensors; t++) {
        const mp_graph_tensor_t *T = &g->tensor[t];
        if (T->root != t || T->producer != MP_GRAPH_NONE) continue;
        uint64_t st = 0x5EEDULL ^ r->o->seed;
        splitmix64(&st);
        st ^= (uint64_t)t * 0xD1B54A32D192ED03ULL;
        char *p = r->x.addr[t];
        if (!strcmp(T->dtype, "float32")) {
            float *f = (float *)(void *)p;
            if (r->o->init && r->o->init[t]) {
                memcpy(f, r->o->init[t], T->numel * sizeof *f);
                continue;
            }
            double scale = 1.0, shift = 0.0;
            if (role[t] == ROLE_RUNNING_VAR) scale = 0.5, shift = 1.0;
            else if (T->kind == MP_TENSOR_PARAMETER && T->rank >= 2 && T->shape[0])
                scale = 1.0 / sqrt((double)(T->numel / T->shape[0]));
            for (uint64_t i = 0; i < T->numel; i++) {
                /* 24 random bits: u is exact in float */
                double u = (double)(splitmix64(&st) >> 40) * 0x1p-23 - 1.0;
                f[i] = (float)(shift + scale * u);
            }
        } else if (!strcmp(T->dtype, "int64") && role[t] == ROLE_TARGET && classes[t]) {
            for (uint64_t i = 0; i < T->numel; i++) {
                int64_t c = (int64_t)(splitmix64(&st) % classes[t]);
                memcpy(p + i * sizeof c, &c, sizeof c);
            }
        } else {
            memset(p, 0, r->span[t]);
        }
    }
    free(role);
    free(classes);
    return MP_OK;
}

static int overlap(const run *r, size_t a, size_t b) {
    const char *pa = r->x.addr[a], *pb = r->x.addr[b];
    return r->span[a] && r->span[b] && pa < pb + r->span[b] && pb < pa + r->span[a];
}

/* Before node v runs: its outputs get poison, and none may overlap an
 * input or another output, except output 0 exactly over input 0 of an op
 * that runs in place. */
static mp_status prepare_node(run *r, size_t v) {
    const mp_graph_t *g = r->x.g;
    const mp_graph_node_t *nd = &g->node[v];
    for (size_t k = 0; k < nd->n_outputs; k++) {
        size_t o = nd->outputs[k];
        if (g->tensor[o].root != o) continue;   /* a view: writes nothing */
        int inplace = r->plan && r->plan->inplace_of && r->plan->inplace_of[o] != MP_GRAPH_NONE;
        for (size_t i = 0; i < nd->n_inputs; i++) {
            size_t in = nd->inputs[i];
            if (!overlap(r, o, in)) continue;
            int ok = k == 0 && r->kern[v]->inplace && nd->n_inputs > 0 &&
                     g->tensor[in].root == g->tensor[nd->inputs[0]].root &&
                     r->x.addr[o] == r->x.addr[nd->inputs[0]];
            if (!ok)
                return mp__exec_err(&r->x, v, "output %zu '%s' overlaps input %zu '%s' in memory, which this kernel cannot run over",
                                    o, g->tensor[o].name, in, g->tensor[in].name);
            inplace = 1;
        }
        for (size_t j = 0; j < k; j++)
            if (overlap(r, o, nd->outputs[j]) && g->tensor[nd->outputs[j]].root == nd->outputs[j])
                return mp__exec_err(&r->x, v, "outputs %zu and %zu overlap in memory", nd->outputs[j], o);
        if (r->o->poison && !inplace) memset(r->x.addr[o], 0xFF, r->span[o]);
    }
    return MP_OK;
}

/* Runs node v; a strided input is read through a contiguous copy gathered
 * from its root right now (kernels take contiguous operands). */
static mp_status run_node(run *r, size_t v) {
    const mp_graph_node_t *nd = &r->x.g->node[v];
    size_t n_copy = 0;
    for (size_t i = 0; i < nd->n_inputs; i++) n_copy += r->x.view[nd->inputs[i]].strided != 0;
    if (!n_copy) return r->kern[v]->run(&r->x, v, nd, &r->attrs[v]);
    size_t *who = calloc(nd->n_inputs, sizeof *who);
    char **saved = calloc(nd->n_inputs, sizeof *saved);
    float **copy = calloc(nd->n_inputs, sizeof *copy);
    mp_status s = (!who || !saved || !copy) ? MP__NOMEM() : MP_OK;
    size_t k = 0;
    for (size_t i = 0; s == MP_OK && i < nd->n_inputs; i++) {
        size_t t = nd->inputs[i];
        int dup = 0;
        for (size_t j = 0; j < k; j++) dup |= who[j] == t;
        if (!r->x.view[t].strided || dup) continue;
        if ((s = mp__exec_unview(&r->x, t, &copy[k])) != MP_OK) break;
        who[k] = t;
        saved[k] = r->x.addr[t];
        r->x.addr[t] = (char *)copy[k++];
    }
    if (s == MP_OK) s = r->kern[v]->run(&r->x, v, nd, &r->attrs[v]);
    for (size_t j = 0; j < k; j++) {
        r->x.addr[who[j]] = saved[j];
        free(copy[j]);
    }
    free(who);
    free(saved);
    free(copy);
    return s;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Copies every graph output into out. */
static mp_status copy_outputs(const run *r, mp_exec_result_t *out) {
    const mp_graph_t *g = r->x.g;
    size_t n = g->n_tensors;
    out->n_tensors = n;
    out->data = calloc(n ? n : 1, sizeof *out->data);
    out->bytes = calloc(n ? n : 1, sizeof *out->bytes);
    if (!out->data || !out->bytes) return MP__NOMEM();
    for (size_t k = 0; k < g->n_outputs; k++) {
        size_t t = g->outputs[k];
        if (out->data[t]) continue;
        const mp_graph_tensor_t *T = &g->tensor[t];
        uint64_t bytes = T->numel * T->dtype_size;
        if (r->x.view[t].strided) {   /* a strided alias: its elements in order */
            float *f;
            mp_status s = mp__exec_unview(&r->x, t, &f);
            if (s != MP_OK) return s;
            out->data[t] = f;
        } else {
            if (!(out->data[t] = malloc(bytes ? bytes : 1))) return MP__NOMEM();
            memcpy(out->data[t], r->x.addr[t], bytes);
        }
        out->bytes[t] = bytes;
    }
    return MP_OK;
}

mp_status mp_exec_run(const mp_graph_t *g, const mp_exec_opts_t *opts, mp_exec_result_t *out) {
    return mp__exec_run_hooked(g, opts, NULL, out);
}

mp_status mp__exec_run_hooked(const mp_graph_t *g, const mp_exec_opts_t *opts, const mp__exec_hooks *h,
                              mp_exec_result_t *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!g || !out) return mp__err(MP_EINVAL, "exec: NULL graph or result");
    mp_exec_opts_t defaults = {0};
    run r;
    memset(&r, 0, sizeof r);
    r.x.g = g;
    r.o = opts ? opts : &defaults;
    r.plan = r.o->plan;
    r.h = h;
    mp_status s = mp_exec_supported(g);
    if (s == MP_OK && r.plan) s = check_plan(g, r.plan);
    if (s == MP_OK) s = layout(&r);
    if (s != MP_OK) goto fail;
    for (size_t v = 0; v < g->n_nodes; v++) {
        r.kern[v] = node_kernel(g, v);
        mp_graph_node_attrs(g, v, &r.attrs[v]);
    }
    if ((s = init_values(&r)) != MP_OK) goto fail;
    double t0 = now();
    for (size_t step = 0; step < g->n_nodes; step++) {
        size_t v = g->order[step];
        if (h && h->before && (s = h->before(h->ctx, &r.x, r.span, step)) != MP_OK) goto fail;
        if ((s = prepare_node(&r, v)) != MP_OK) goto fail;
        if ((s = run_node(&r, v)) != MP_OK) goto fail;
        if (h && h->after && (s = h->after(h->ctx, &r.x, r.span, step)) != MP_OK) goto fail;
    }
    if (h && h->end && (s = h->end(h->ctx, &r.x, r.span)) != MP_OK) goto fail;
    out->seconds = now() - t0;
    if ((s = copy_outputs(&r, out)) != MP_OK) goto fail;
    out->arena_bytes = r.plan ? r.plan->footprint : 0;
    run_free(&r);
    return MP_OK;
fail:
    run_free(&r);
    mp_exec_result_free(out);
    return s;
}

void mp_exec_result_free(mp_exec_result_t *r) {
    if (!r) return;
    if (r->data)
        for (size_t t = 0; t < r->n_tensors; t++) free(r->data[t]);
    free(r->data);
    free(r->bytes);
    memset(r, 0, sizeof *r);
}
