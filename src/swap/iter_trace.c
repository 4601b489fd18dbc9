/* iter_trace.c -- timed iterations from memplan-trace/1 traces with op
 * boundaries, and back (issue 10 item 1; docs/trace-format.md, docs/swap.md).
 *
 * A trace's op boundary ("o DURATION [NAME]") begins an op; the events
 * after it, up to the next boundary, are that op's.  The rules that make an
 * iteration of it:
 *   - one variable per block (an allocation) that some op accesses; blocks
 *     no op touches are no part of the iteration's traffic and are dropped;
 *   - an access is a read or write inside an op, and an allocation inside
 *     an op is a write by it; a free is no access, it only ends the block
 *     (its handle may then name a new block); reads and writes before the
 *     first boundary are setup and belong to no op;
 *   - a block is persistent when it lives across the whole trace: allocated
 *     before the first boundary and never freed (parameters, gradients,
 *     optimizer state).  Every other variable is on the device from its
 *     first accessing op to its last, as in mp_swap_iter_from_graph;
 *   - variables are numbered by handle, blocks of one handle in allocation
 *     order, so that mp_swap_iter_to_trace's trace (handle = 1 + variable)
 *     reads back as the same iteration, selection tie-breaks included.
 * The writer puts persistent variables and those an op reads before any op
 * writes them in the prologue, every other variable in the op of its first
 * access, and frees each non-persistent variable in the op of its last. */
#include "swap_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct by_handle {
    uint64_t handle;
    size_t event;
} by_handle;

static int cmp_handle(const void *a, const void *b) {
    const by_handle *x = a, *y = b;
    if (x->handle != y->handle) return x->handle < y->handle ? -1 : 1;
    return (x->event > y->event) - (x->event < y->event);
}

/* The block an event belongs to when it is an access by an op (op >= 0):
 * its allocation event index, else SIZE_MAX. */
static size_t accessed_block(const mp_event_t *e, int in_op) {
    int access = e->kind == MP_EV_ALLOC || e->kind == MP_EV_READ || e->kind == MP_EV_WRITE;
    return in_op && access ? (size_t)e->block : SIZE_MAX;
}

/* var_of[alloc event] for the accessed blocks, numbered by handle. */
static mp_status number_blocks(const mp_event_t *ev, size_t n, size_t *var_of, size_t *n_vars) {
    size_t k = 0;
    int in_op = 0;
    for (size_t i = 0; i < n; i++) var_of[i] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        in_op |= ev[i].kind == MP_EV_OP;
        size_t b = accessed_block(&ev[i], in_op);
        if (b != SIZE_MAX && var_of[b] == SIZE_MAX) var_of[b] = k++;
    }
    by_handle *h = malloc((k + 1) * sizeof *h);
    if (!h) return MP__NOMEM();
    k = 0;
    for (size_t i = 0; i < n; i++)
        if (ev[i].kind == MP_EV_ALLOC && var_of[i] != SIZE_MAX) h[k++] = (by_handle){ev[i].handle, i};
    qsort(h, k, sizeof *h, cmp_handle);
    for (size_t v = 0; v < k; v++) var_of[h[v].event] = v;
    free(h);
    *n_vars = k;
    return MP_OK;
}

static mp_status fill_from_trace(const mp_trace_t *t, const mp_event_t *ev, size_t n, size_t first_op,
                                 const size_t *var_of, mp_swap_iter_t *it) {
    size_t *seen = calloc(it->n_vars + 1, sizeof *seen);   /* 1 + op that last accessed it */
    size_t *pos = malloc((it->n_vars + 1) * sizeof *pos);  /* that access's index */
    if (!seen || !pos) return free(seen), free(pos), MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        const mp_event_t *e = &ev[i];
        if (e->kind == MP_EV_ALLOC && var_of[i] != SIZE_MAX) {
            mp_swap_var_t *v = &it->var[var_of[i]];
            char name[24];
            snprintf(name, sizeof name, "0x%" PRIx64, e->handle);
            v->size = e->size;
            v->persistent = i < first_op && e->end == MP_TRACE_NEVER;
            if (!(v->name = strdup(name))) return free(seen), free(pos), MP__NOMEM();
        }
        if (e->kind == MP_EV_OP) {
            mp_swap_op_t *op = &it->op[it->n_ops++];
            op->ns = e->size;
            op->first = it->n_access;
            if (!(op->name = strdup(mp_trace_op_name(t, (size_t)e->block)))) return free(seen), free(pos), MP__NOMEM();
            continue;
        }
        size_t b = accessed_block(e, i > first_op);
        if (b == SIZE_MAX) continue;
        size_t v = var_of[b], j = it->n_ops - 1;
        int write = e->kind != MP_EV_READ;
        if (seen[v] == j + 1) {
            it->access[pos[v]].write |= write;
            continue;
        }
        seen[v] = j + 1, pos[v] = it->n_access;
        it->access[it->n_access++] = (mp_swap_access_t){v, write};
        it->op[j].n++;
    }
    free(seen), free(pos);
    return MP_OK;
}

mp_status mp_swap_iter_from_trace(const mp_trace_t *t, mp_swap_iter_t *out) {
    if (!out) return mp__err(MP_EINVAL, "swap iteration: no output");
    memset(out, 0, sizeof *out);
    if (!t) return mp__err(MP_EINVAL, "swap iteration: no trace");
    size_t n, first_op = SIZE_MAX, accesses = 0;
    const mp_event_t *ev = mp_trace_events(t, &n);
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind == MP_EV_OP && first_op == SIZE_MAX) first_op = i;
        accesses += ev[i].kind != MP_EV_OP && ev[i].kind != MP_EV_FREE;
    }
    if (first_op == SIZE_MAX)
        return mp__err(MP_EINVAL, "the trace has no op boundaries ('o DURATION [NAME]' lines): a swap "
                                  "plan needs the ops of the iteration and their times");
    size_t *var_of = malloc((n + 1) * sizeof *var_of);
    if (!var_of) return MP__NOMEM();
    mp_status s = number_blocks(ev, n, var_of, &out->n_vars);
    if (!s) {
        out->var = calloc(out->n_vars + 1, sizeof *out->var);
        out->op = calloc(mp_trace_op_count(t) + 1, sizeof *out->op);
        out->access = calloc(accesses + 1, sizeof *out->access);
        if (!out->var || !out->op || !out->access) s = MP__NOMEM();
    }
    if (!s) s = fill_from_trace(t, ev, n, first_op, var_of, out);
    if (!s) s = mp_swap_iter_validate(out);
    free(var_of);
    if (s) mp_swap_iter_free(out);
    return s;
}

/* ---- the writer ------------------------------------------------------------ */

/* Per variable: its first and last accessing op, and whether its first
 * access writes it. */
static void spans(const mp_swap_iter_t *it, size_t *first, size_t *last, unsigned char *writes_first) {
    for (size_t v = 0; v < it->n_vars; v++) first[v] = SIZE_MAX;
    for (size_t j = 0; j < it->n_ops; j++)
        for (size_t k = 0; k < it->op[j].n; k++) {
            const mp_swap_access_t *a = &it->access[it->op[j].first + k];
            if (first[a->var] == SIZE_MAX) first[a->var] = j, writes_first[a->var] = (unsigned char)a->write;
            last[a->var] = j;
        }
}

static mp_status write_ops(const mp_swap_iter_t *it, const size_t *first, const size_t *last,
                           const unsigned char *in_prologue, mp_trace_t *t) {
    mp_status s = MP_OK;
    for (size_t j = 0; j < it->n_ops && !s; j++) {
        const mp_swap_op_t *op = &it->op[j];
        s = mp_trace_record_op(t, op->ns, op->name);
        for (size_t k = 0; k < op->n && !s; k++) {
            const mp_swap_access_t *a = &it->access[op->first + k];
            uint64_t h = (uint64_t)a->var + 1;
            if (first[a->var] == j && !in_prologue[a->var])
                s = mp_trace_record_alloc(t, h, it->var[a->var].size, MP_TRACE_NO_NS);
            else
                s = mp_trace_record_access(t, h, a->write, MP_TRACE_NO_NS);
        }
        for (size_t k = 0; k < op->n && !s; k++) {
            size_t v = it->access[op->first + k].var;
            if (last[v] == j && !it->var[v].persistent) s = mp_trace_record_free(t, (uint64_t)v + 1, MP_TRACE_NO_NS);
        }
    }
    return s;
}

mp_status mp_swap_iter_to_trace(const mp_swap_iter_t *it, mp_trace_t **out) {
    if (!out) return mp__err(MP_EINVAL, "swap iteration: no output");
    *out = NULL;
    mp_status s = mp_swap_iter_validate(it);
    if (s) return s;
    size_t *first = malloc((it->n_vars + 1) * sizeof *first), *last = malloc((it->n_vars + 1) * sizeof *last);
    unsigned char *wf = calloc(it->n_vars + 1, 1), *pro = calloc(it->n_vars + 1, 1);
    mp_trace_t *t = NULL;
    s = !first || !last || !wf || !pro ? MP__NOMEM() : mp_trace_create(&t);
    if (!s) spans(it, first, last, wf);
    for (size_t v = 0; v < it->n_vars && !s; v++) {
        pro[v] = it->var[v].persistent || !wf[v];
        if (pro[v]) s = mp_trace_record_alloc(t, (uint64_t)v + 1, it->var[v].size, MP_TRACE_NO_NS);
    }
    if (!s) s = write_ops(it, first, last, pro, t);
    free(first), free(last), free(wf), free(pro);
    if (s) mp_trace_free(t);
    else *out = t;
    return s;
}
