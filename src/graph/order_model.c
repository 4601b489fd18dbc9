/* order_model.c -- the memory model of the order search (order_internal.h):
 * building it from a graph, a topological order of its edges, and the
 * live-bytes profile of an order.
 *
 * Building is O(tensors + node inputs and outputs): every list is filled in
 * one sweep over the nodes, duplicates dropped with a stamp array. */
#include "order_internal.h"

#include <stdlib.h>
#include <string.h>

void mp__omodel_free(mp__omodel *m) {
    free(m->pred_off);
    free(m->pred);
    free(m->succ_off);
    free(m->succ);
    free(m->in_off);
    free(m->in);
    free(m->out_off);
    free(m->out);
    free(m->alloc);
    free(m->held);
    free(m->gpos);
    free(m->bytes);
    free(m->producer);
    free(m->is_out);
    free(m->rd_off);
    free(m->rd);
    memset(m, 0, sizeof *m);
}

#define ALLOC(p, count) ((p) = malloc(((count) > 0 ? (size_t)(count) : 1) * sizeof *(p)))

/* The transposed rows of (off, list) over n rows into m_off/m_list, whose
 * target indices are below m: a counting sort, so each transposed row comes
 * out in increasing source order. */
static bool transpose(const size_t *off, const size_t *list, size_t n, size_t m, size_t **t_off,
                      size_t **t_list) {
    size_t total = off[n];
    size_t *to = calloc(m + 1, sizeof *to), *tl;
    ALLOC(tl, total);
    if (!to || !tl) {
        free(to);
        free(tl);
        return false;
    }
    for (size_t k = 0; k < total; k++) to[list[k] + 1]++;
    for (size_t i = 0; i < m; i++) to[i + 1] += to[i];
    size_t *fill = malloc((m ? m : 1) * sizeof *fill);
    if (!fill) {
        free(to);
        free(tl);
        return false;
    }
    memcpy(fill, to, m * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        for (size_t k = off[i]; k < off[i + 1]; k++) tl[fill[list[k]]++] = i;
    free(fill);
    *t_off = to;
    *t_list = tl;
    return true;
}

mp_status mp__omodel_build(const mp_graph_t *g, mp__omodel *m) {
    memset(m, 0, sizeof *m);
    size_t n = g->n_nodes, nt = g->n_tensors;
    size_t n_in = 0, n_out = 0;
    for (size_t v = 0; v < n; v++) {
        n_in += g->node[v].n_inputs;
        n_out += g->node[v].n_outputs;
    }
    size_t *tix = NULL, *stamp = NULL;
    ALLOC(tix, nt);
    stamp = calloc(n ? n : 1, sizeof *stamp);
    if (!tix || !stamp) goto nomem;

    /* Tracked roots, their bytes, producers and graph-output marks. */
    uint64_t total = 0;
    size_t nr = 0;
    for (size_t t = 0; t < nt; t++) {
        const mp_graph_tensor_t *x = &g->tensor[t];
        tix[t] = MP_GRAPH_NONE;
        if (x->alias_of == MP_GRAPH_NONE && x->bytes && !mp__graph_persistent(x->kind)) {
            tix[t] = nr++;
            total += x->bytes;
            if (x->bytes > ((uint64_t)1 << 62) || total > ((uint64_t)1 << 62)) {
                free(tix);
                free(stamp);
                return mp__err(MP_EOVERFLOW, "graph: tracked tensors exceed 2^62 bytes");
            }
        }
    }
    m->n = n;
    m->nr = nr;
    ALLOC(m->bytes, nr);
    ALLOC(m->producer, nr);
    m->is_out = calloc(nr ? nr : 1, 1);
    ALLOC(m->in_off, n + 1);
    ALLOC(m->in, n_in);
    ALLOC(m->out_off, n + 1);
    ALLOC(m->out, n_out);
    ALLOC(m->pred_off, n + 1);
    ALLOC(m->pred, 2 * n_in);
    ALLOC(m->alloc, n);
    ALLOC(m->held, n);
    ALLOC(m->gpos, n);
    if (!m->bytes || !m->producer || !m->is_out || !m->in_off || !m->in || !m->out_off ||
        !m->out || !m->pred_off || !m->pred || !m->alloc || !m->held || !m->gpos)
        goto nomem;
    for (size_t t = 0; t < nt; t++)
        if (tix[t] != MP_GRAPH_NONE) {
            m->bytes[tix[t]] = (int64_t)g->tensor[t].bytes;
            m->producer[tix[t]] = g->tensor[t].producer;
        }
    for (size_t k = 0; k < g->n_outputs; k++) {
        size_t r = tix[g->tensor[g->outputs[k]].root];
        if (r != MP_GRAPH_NONE) m->is_out[r] = 1;
    }
    for (size_t s = 0; s < n; s++) m->gpos[g->order[s]] = s;

    /* Per node: its tracked outputs, the distinct tracked roots it reads
     * (seen_root[r] = node + 1 marks those already listed, its own outputs
     * included) and its distinct predecessors (stamp[p] = node + 1). */
    size_t ki = 0, ko = 0, kp = 0;
    size_t *seen_root = calloc(nr ? nr : 1, sizeof *seen_root);
    if (!seen_root) goto nomem;
    for (size_t v = 0; v < n; v++) {
        const mp_graph_node_t *nd = &g->node[v];
        m->in_off[v] = ki;
        m->out_off[v] = ko;
        m->pred_off[v] = kp;
        for (size_t k = 0; k < nd->n_outputs; k++) {
            size_t r = tix[nd->outputs[k]];
            if (r != MP_GRAPH_NONE) {
                m->out[ko++] = r;
                seen_root[r] = v + 1; /* its own outputs: not an input */
            }
        }
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t t = nd->inputs[k], root = g->tensor[t].root;
            size_t r = tix[root];
            if (r != MP_GRAPH_NONE && seen_root[r] != v + 1) {
                seen_root[r] = v + 1;
                m->in[ki++] = r;
            }
            size_t p[2] = {g->tensor[t].producer, g->tensor[root].producer};
            for (int j = 0; j < 2; j++)
                if (p[j] != MP_GRAPH_NONE && p[j] != v && stamp[p[j]] != v + 1) {
                    stamp[p[j]] = v + 1;
                    m->pred[kp++] = p[j];
                }
        }
    }
    m->in_off[n] = ki;
    m->out_off[n] = ko;
    m->pred_off[n] = kp;
    free(seen_root);
    free(tix);
    tix = NULL;
    if (!transpose(m->pred_off, m->pred, n, n, &m->succ_off, &m->succ)) goto nomem;
    if (!transpose(m->in_off, m->in, n, nr, &m->rd_off, &m->rd)) goto nomem;

    for (size_t r = 0; r < nr; r++) {
        bool read = m->rd_off[r + 1] > m->rd_off[r];
        if (m->producer[r] == MP_GRAPH_NONE) {
            if (read || m->is_out[r])
                m->init_held += m->bytes[r];
            else
                m->dead0 += m->bytes[r];
        }
    }
    for (size_t v = 0; v < n; v++) {
        int64_t a = 0, h = 0;
        for (size_t k = m->out_off[v]; k < m->out_off[v + 1]; k++) {
            size_t r = m->out[k];
            a += m->bytes[r];
            if (m->is_out[r] || m->rd_off[r + 1] > m->rd_off[r]) h += m->bytes[r];
        }
        m->alloc[v] = a;
        m->held[v] = h;
        size_t deg = (m->succ_off[v + 1] - m->succ_off[v]) + (m->in_off[v + 1] - m->in_off[v]) +
                     (m->out_off[v + 1] - m->out_off[v]);
        if (deg > m->max_deg) m->max_deg = deg;
    }
    free(stamp);
    return MP_OK;
nomem:
    free(tix);
    free(stamp);
    mp__omodel_free(m);
    return MP__NOMEM();
}

/* Kahn's algorithm with a binary heap of ready nodes keyed by their given
 * position: O((n + edges) log n). */
bool mp__omodel_topo(const mp__omodel *m, size_t *order, mp_status *st) {
    size_t n = m->n;
    size_t *indeg = malloc((n ? n : 1) * sizeof *indeg);
    size_t *heap = malloc((n ? n : 1) * sizeof *heap); /* of given positions */
    size_t *at = malloc((n ? n : 1) * sizeof *at);     /* given position -> node */
    *st = MP_OK;
    if (!indeg || !heap || !at) {
        free(indeg);
        free(heap);
        free(at);
        *st = MP__NOMEM();
        return false;
    }
    size_t hn = 0, k = 0;
    for (size_t v = 0; v < n; v++) at[m->gpos[v]] = v;
    for (size_t v = 0; v < n; v++) {
        indeg[v] = m->pred_off[v + 1] - m->pred_off[v];
        if (!indeg[v]) {
            /* push gpos[v] */
            size_t i = hn++;
            while (i && heap[(i - 1) / 2] > m->gpos[v]) {
                heap[i] = heap[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            heap[i] = m->gpos[v];
        }
    }
    while (hn) {
        size_t v = at[heap[0]];
        size_t last = heap[--hn], i = 0;
        for (;;) {
            size_t c = 2 * i + 1;
            if (c >= hn) break;
            if (c + 1 < hn && heap[c + 1] < heap[c]) c++;
            if (heap[c] >= last) break;
            heap[i] = heap[c];
            i = c;
        }
        if (hn) heap[i] = last;
        order[k++] = v;
        for (size_t e = m->succ_off[v]; e < m->succ_off[v + 1]; e++) {
            size_t w = m->succ[e];
            if (--indeg[w]) continue;
            size_t j = hn++;
            while (j && heap[(j - 1) / 2] > m->gpos[w]) {
                heap[j] = heap[(j - 1) / 2];
                j = (j - 1) / 2;
            }
            heap[j] = m->gpos[w];
        }
    }
    free(indeg);
    free(heap);
    free(at);
    return k == n;
}

int64_t mp__omodel_profile(const mp__omodel *m, const size_t *order, int64_t *prof,
                           size_t *pos) {
    size_t n = m->n;
    if (!n) return 0;
    for (size_t s = 0; s < n; s++) pos[order[s]] = s;
    /* Difference array in prof: +bytes at first, -bytes after last. */
    for (size_t s = 0; s < n; s++) prof[s] = 0;
    prof[0] += m->dead0 + m->init_held;
    for (size_t r = 0; r < m->nr; r++) {
        size_t p = m->producer[r];
        size_t first = p == MP_GRAPH_NONE ? 0 : pos[p], last = first;
        if (p != MP_GRAPH_NONE) prof[first] += m->bytes[r];
        if (m->is_out[r]) continue; /* to the end */
        if (p == MP_GRAPH_NONE && m->rd_off[r + 1] == m->rd_off[r]) {
            if (n > 1) prof[1] -= m->bytes[r]; /* dead at step 0 only */
            continue;
        }
        for (size_t k = m->rd_off[r]; k < m->rd_off[r + 1]; k++)
            if (pos[m->rd[k]] > last) last = pos[m->rd[k]];
        if (last + 1 < n) prof[last + 1] -= m->bytes[r];
    }
    int64_t run = 0, peak = 0;
    for (size_t s = 0; s < n; s++) {
        run += prof[s];
        prof[s] = run;
        if (run > peak) peak = run;
    }
    return peak;
}
