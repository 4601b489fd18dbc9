/* exec_trace.c -- the reference executor records a training step as a
 * memplan-trace/1 trace with op boundaries (issue 10 item 1: "the
 * reference executor records a real training step").
 *
 * The plain executor allocates every tensor before the first step.  Here
 * only the tensors that must exist then keep that: parameters and
 * gradients (persistent), the tensors no node produces (inputs, which the
 * executor fills), and any tensor a step reads before one writes it.
 * Every other root tensor owning memory gets its memory from malloc right
 * before the step that first writes it (the views into it are laid out
 * again) and gives it back after the step that last accesses it, unless it
 * is an output of the step (copied out at the end).  Those mallocs and
 * frees, with the addresses as handles, are the trace's allocations and
 * frees; each step is an op boundary named after its node, followed by its
 * allocations, the reads of its inputs and the writes of its outputs (a
 * view's access is its root's) and its frees.  The non-persistent blocks of
 * the prologue are freed after the last step, when the executor is done
 * with them.  A kernel's time is taken between the before and after hooks,
 * as mp_swap_iter_measure does, so malloc and the layout stay outside it;
 * the step runs reps times and each op's duration is the median. */
#include "exec_internal.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { ALIGN = 64 };

typedef struct ev {
    mp_event_kind kind;
    uint64_t handle, size, ns;
    size_t step;                /* SIZE_MAX: before the first step; n_steps: after the last */
} ev;

typedef struct rec {
    const mp_graph_t *g;
    size_t steps, rep, reps;
    size_t *first, *last;       /* per tensor (roots): first and last accessing step, SIZE_MAX: none */
    unsigned char *mode;        /* per tensor: 0 not traced, 1 prologue, 2 malloc'ed per step */
    unsigned char *output;      /* per tensor: an output of the graph */
    char **mem;                 /* per tensor: the malloc'ed memory while live */
    char *scratch;              /* where mode-2 tensors point while not live */
    uint64_t *ns;               /* reps x steps kernel times */
    struct timespec t0, start;
    ev *ev;
    size_t n_ev, cap_ev;
} rec;

static uint64_t since(const struct timespec *a) {
    struct timespec b;
    clock_gettime(CLOCK_MONOTONIC, &b);
    int64_t d = (int64_t)(b.tv_sec - a->tv_sec) * 1000000000 + (b.tv_nsec - a->tv_nsec);
    return d > 0 ? (uint64_t)d : 0;
}

static mp_status push(rec *r, mp_event_kind kind, size_t t, const mp__exec *x, size_t step, uint64_t ns) {
    if (r->rep + 1 != r->reps) return MP_OK;   /* only the last run's events are kept */
    if (mp__grow((void **)&r->ev, &r->cap_ev, r->n_ev + 1, sizeof *r->ev)) return MP__NOMEM();
    r->ev[r->n_ev++] = (ev){kind, (uint64_t)(uintptr_t)x->addr[t], x->g->tensor[t].bytes, ns, step};
    return MP_OK;
}

static mp_status h_place(void *ctx, size_t t, uint64_t bytes, char **addr) {
    rec *r = ctx;
    (void)bytes;
    if (r->mode[t] == 2) *addr = r->scratch;
    return MP_OK;
}

static mp_status h_before(void *ctx, mp__exec *x, uint64_t *span, size_t step) {
    rec *r = ctx;
    const mp_graph_node_t *nd = &x->g->node[x->g->order[step]];
    mp_status s = MP_OK;
    int moved = 0;
    if (step == 0)   /* the prologue: what the executor allocated before the step */
        for (size_t t = 0; t < x->g->n_tensors && !s; t++)
            if (r->mode[t] == 1) s = push(r, MP_EV_ALLOC, t, x, SIZE_MAX, since(&r->start));
    for (size_t k = 0; k < nd->n_outputs && !s; k++) {
        size_t t = x->g->tensor[nd->outputs[k]].root;
        if (r->mode[t] != 2 || r->first[t] != step || r->mem[t]) continue;
        uint64_t n = (span[t] + ALIGN - 1) / ALIGN * ALIGN;
        if (!(r->mem[t] = aligned_alloc(ALIGN, (size_t)(n ? n : ALIGN)))) return MP__NOMEM();
        x->addr[t] = r->mem[t];
        moved = 1;
        s = push(r, MP_EV_ALLOC, t, x, step, since(&r->start));
    }
    if (!s && moved) s = mp__exec_views_layout(x, span);
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
    return s;
}

static mp_status h_after(void *ctx, mp__exec *x, uint64_t *span, size_t step) {
    rec *r = ctx;
    (void)span;
    r->ns[r->rep * r->steps + step] = since(&r->t0);
    const mp_graph_node_t *nd = &x->g->node[x->g->order[step]];
    mp_status s = MP_OK;
    for (size_t i = 0; i < nd->n_inputs && !s; i++) {
        size_t t = x->g->tensor[nd->inputs[i]].root;
        if (r->mode[t]) s = push(r, MP_EV_READ, t, x, step, MP_TRACE_NO_NS);
    }
    for (size_t i = 0; i < nd->n_outputs && !s; i++) {
        size_t t = x->g->tensor[nd->outputs[i]].root;
        if (r->mode[t]) s = push(r, MP_EV_WRITE, t, x, step, MP_TRACE_NO_NS);
    }
    /* frees: a tensor read twice by the node appears twice; free it once */
    for (size_t i = 0; i < nd->n_inputs + nd->n_outputs && !s; i++) {
        size_t u = i < nd->n_inputs ? nd->inputs[i] : nd->outputs[i - nd->n_inputs];
        size_t t = x->g->tensor[u].root;
        if (r->mode[t] != 2 || r->last[t] != step || r->output[t] || !r->mem[t]) continue;
        s = push(r, MP_EV_FREE, t, x, step, since(&r->start));
        free(r->mem[t]);
        r->mem[t] = NULL;
        x->addr[t] = r->scratch;   /* no step reads it again; its views are never used */
    }
    return s;
}

static mp_status h_end(void *ctx, mp__exec *x, uint64_t *span) {
    rec *r = ctx;
    (void)span;
    mp_status s = MP_OK;
    for (size_t t = 0; t < x->g->n_tensors && !s; t++)
        if (r->mode[t] == 1 && !mp__graph_persistent(x->g->tensor[t].kind))
            s = push(r, MP_EV_FREE, t, x, r->steps, since(&r->start));
    return s;
}

/* first/last accessing step and the mode of every root tensor. */
static mp_status classify(rec *r) {
    const mp_graph_t *g = r->g;
    size_t nt = g->n_tensors;
    unsigned char *read_first = calloc(nt + 1, 1);
    if (!read_first) return MP__NOMEM();
    for (size_t t = 0; t < nt; t++) r->first[t] = r->last[t] = SIZE_MAX;
    for (size_t s = 0; s < r->steps; s++) {
        const mp_graph_node_t *nd = &g->node[g->order[s]];
        for (size_t i = 0; i < nd->n_inputs + nd->n_outputs; i++) {
            int out = i >= nd->n_inputs;
            size_t t = g->tensor[out ? nd->outputs[i - nd->n_inputs] : nd->inputs[i]].root;
            if (r->first[t] == SIZE_MAX) r->first[t] = s, read_first[t] = 1;
            if (r->first[t] == s && out) read_first[t] = 0;   /* written by its first step */
            r->last[t] = s;
        }
    }
    size_t n_out;
    const size_t *outs = mp_graph_outputs(g, &n_out);
    for (size_t k = 0; k < n_out; k++) r->output[g->tensor[outs[k]].root] = 1;
    uint64_t biggest = ALIGN;
    for (size_t t = 0; t < nt; t++) {
        const mp_graph_tensor_t *T = &g->tensor[t];
        if (T->root != t || !T->bytes) continue;
        int pro = mp__graph_persistent(T->kind) || T->producer == MP_GRAPH_NONE || read_first[t] ||
                  r->first[t] == SIZE_MAX;
        r->mode[t] = pro ? 1 : 2;
        if (!pro && T->numel * T->dtype_size > biggest) biggest = T->numel * T->dtype_size;
    }
    free(read_first);
    biggest = (biggest + ALIGN - 1) / ALIGN * ALIGN;
    if (!(r->scratch = aligned_alloc(ALIGN, (size_t)biggest))) return MP__NOMEM();
    return MP_OK;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The recorded events with the median kernel times into a trace. */
static mp_status build(const rec *r, mp_trace_t *t) {
    uint64_t *col = malloc((r->reps + 1) * sizeof *col);
    if (!col) return MP__NOMEM();
    mp_status s = MP_OK;
    size_t k = 0;
    for (size_t step = 0; step <= r->steps + 1 && !s; step++) {
        size_t at = step == 0 ? SIZE_MAX : step - 1;   /* the prologue first, then the steps */
        if (at < r->steps) {
            for (size_t j = 0; j < r->reps; j++) col[j] = r->ns[j * r->steps + at];
            qsort(col, r->reps, sizeof *col, cmp_u64);
            s = mp_trace_record_op(t, col[r->reps / 2], r->g->node[r->g->order[at]].name);
        }
        for (; k < r->n_ev && r->ev[k].step == at && !s; k++) {
            const ev *e = &r->ev[k];
            if (e->kind == MP_EV_ALLOC) s = mp_trace_record_alloc(t, e->handle, e->size, e->ns);
            else if (e->kind == MP_EV_FREE) s = mp_trace_record_free(t, e->handle, e->ns);
            else s = mp_trace_record_access(t, e->handle, e->kind == MP_EV_WRITE, e->ns);
        }
    }
    free(col);
    return s;
}

mp_status mp_swap_trace_record(const mp_graph_t *train, size_t reps, mp_trace_t **out) {
    if (!out) return mp__err(MP_EINVAL, "exec trace: no output");
    *out = NULL;
    if (!train) return mp__err(MP_EINVAL, "exec trace: no graph");
    rec r = {.g = train, .reps = reps ? (reps > 99 ? 99 : reps) : 3};
    mp_graph_order(train, &r.steps);
    size_t nt = train->n_tensors + 1;
    r.first = malloc(nt * sizeof *r.first), r.last = malloc(nt * sizeof *r.last);
    r.mode = calloc(nt, 1), r.output = calloc(nt, 1), r.mem = calloc(nt, sizeof *r.mem);
    r.ns = calloc(r.reps * r.steps + 1, sizeof *r.ns);
    mp_status s = !r.first || !r.last || !r.mode || !r.output || !r.mem || !r.ns ? MP__NOMEM() : classify(&r);
    mp__exec_hooks h = {&r, h_place, h_before, h_after, h_end};
    mp_exec_opts_t o = {.seed = 1};
    for (r.rep = 0; r.rep < r.reps && !s; r.rep++) {
        mp_exec_result_t res;
        clock_gettime(CLOCK_MONOTONIC, &r.start);
        s = mp__exec_run_hooked(train, &o, &h, &res);
        if (!s) mp_exec_result_free(&res);
        for (size_t t = 0; t + 1 < nt; t++) free(r.mem[t]), r.mem[t] = NULL;
    }
    mp_trace_t *t = NULL;
    if (!s) s = mp_trace_create(&t);
    if (!s) s = build(&r, t);
    if (r.mem)
        for (size_t k = 0; k + 1 < nt; k++) free(r.mem[k]);
    free(r.first), free(r.last), free(r.mode), free(r.output), free(r.mem), free(r.ns), free(r.ev), free(r.scratch);
    if (s) mp_trace_free(t);
    else *out = t;
    return s;
}
