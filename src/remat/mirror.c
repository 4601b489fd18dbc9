/* mirror.c -- plans: chen2016 Alg. 2's schedule from mirror counts, plan
 * validation and release.
 *
 * Alg. 2 mirrors every node with m(v) > 0 and lets each gradient read the
 * mirrors; its execution order appends, before each gradient, the
 * ancestors of that gradient not yet scheduled.  Here the same, lazily:
 * before the gradient of each forward node (in the training graph's
 * backward order), every forward value it reads whose producer v has
 * m(v) = k > 0 is made current at level k by ensure(v, k):
 *
 *     ensure(v, L):  if cur[v] == L: done
 *                    for each input u of v made by a forward node:
 *                        ensure(u, min(L, m(u)))      (m(u) = 0: the original)
 *                    RECOMPUTE v;  cur[v] = L
 *
 * A value with m(v) = k is thus kept at its k-th recomputation and merely
 * passed through at lower levels: with m = 1 inside segments and 0 at
 * their ends this is Alg. 1 (a segment is recomputed from its stored input
 * right before its first gradient, and its values stay for the others);
 * with levels 1, 2, ... it is sec. 4.4's recursion.  The DFS is iterative
 * (chains of 10^4 nodes) and emits each ensure's ancestors in step order.
 * O(actions x inputs). */
#include "remat_internal.h"

#include <stdlib.h>
#include <string.h>

void mp_remat_plan_free(mp_remat_plan_t *p) {
    if (!p) return;
    free(p->mirror);
    free(p->action);
    memset(p, 0, sizeof *p);
}

typedef struct sched {
    mp_remat_action_t *a;
    size_t n, cap;
} sched;

static mp_status push_action(sched *s, mp_remat_action_kind kind, size_t node) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        mp_remat_action_t *a = realloc(s->a, cap * sizeof *a);
        if (!a) return MP__NOMEM();
        s->a = a;
        s->cap = cap;
    }
    s->a[s->n++] = (mp_remat_action_t){kind, node};
    return MP_OK;
}

typedef struct frame {
    size_t v, next;
    uint32_t level;
} frame;

/* ensure(v, L) of the comment above, with an explicit stack. */
static mp_status ensure(const mp_remat_t *r, const uint32_t *m, uint32_t *cur, frame *stack, size_t v,
                        uint32_t L, sched *out) {
    if (cur[v] == L) return MP_OK;
    size_t top = 0;
    stack[top++] = (frame){v, 0, L};
    while (top) {
        frame *f = &stack[top - 1];
        const mp_graph_node_t *nd = mp_graph_node(r->train, f->v);
        if (f->next < nd->n_inputs) {
            size_t u = mp__remat_producer(r, nd->inputs[f->next++]);
            if (u == MP_GRAPH_NONE || m[u] == 0) continue;
            uint32_t lu = m[u] < f->level ? m[u] : f->level;
            if (cur[u] != lu) stack[top++] = (frame){u, 0, lu};
            continue;
        }
        mp_status s = push_action(out, MP_REMAT_RECOMPUTE, f->v);
        if (s) return s;
        cur[f->v] = f->level;
        top--;
    }
    return MP_OK;
}

mp_status mp__remat_plan_from_mirror(const mp_remat_t *r, const uint32_t *m_in, const char *policy,
                                     mp_remat_plan_t *out) {
    memset(out, 0, sizeof *out);
    size_t n = r->n_fwd;
    uint32_t *m = malloc((n + 1) * sizeof *m), *cur = calloc(n + 1, sizeof *cur);
    frame *stack = malloc((n + 1) * sizeof *stack);
    sched s = {0};
    mp_status st = MP_OK;
    if (!m || !cur || !stack) {
        st = MP__NOMEM();
        goto fail;
    }
    for (size_t v = 0; v < n; v++) m[v] = r->forced[v] ? 0 : m_in[v];
    size_t n_order;
    const size_t *order = mp_graph_order(r->train, &n_order);
    for (size_t k = 0; k < r->n_groups && !st; k++) {
        const mp_graph_node_t *gn = mp_graph_node(r->train, order[r->grp_start[k]]);
        for (size_t i = 0; i < gn->n_inputs && !st; i++) {
            size_t u = mp__remat_producer(r, gn->inputs[i]);
            if (u != MP_GRAPH_NONE && m[u] > 0) st = ensure(r, m, cur, stack, u, m[u], &s);
        }
        if (!st) st = push_action(&s, MP_REMAT_BACKWARD, r->grp_node[k]);
    }
    if (st) goto fail;
    free(cur);
    free(stack);
    out->n_forward = n;
    out->mirror = m;
    out->n_actions = s.n;
    out->action = s.a;
    mp__remat_name(out, "%s", policy ? policy : "mirror");
    return MP_OK;
fail:
    free(m);
    free(cur);
    free(stack);
    free(s.a);
    return st;
}

mp_status mp_remat_plan_mirror(const mp_remat_t *r, const uint32_t *m, const char *policy,
                               mp_remat_plan_t *out) {
    if (!out) return mp__err(MP_EINVAL, "mp_remat_plan_mirror: NULL out");
    memset(out, 0, sizeof *out);
    if (!r || !m) return mp__err(MP_EINVAL, "mp_remat_plan_mirror: NULL context or mirror counts");
    return mp__remat_plan_from_mirror(r, m, policy, out);
}

mp_status mp_remat_plan_validate(const mp_remat_t *r, const mp_remat_plan_t *p) {
    if (!r || !p) return mp__err(MP_EINVAL, "remat plan: NULL context or plan");
    if (p->n_forward != r->n_fwd)
        return mp__err(MP_EINVAL, "remat plan '%s': made for %zu forward nodes, the graph has %zu", p->policy,
                       p->n_forward, r->n_fwd);
    if (p->n_actions && !p->action) return mp__err(MP_EINVAL, "remat plan '%s': NULL actions", p->policy);
    size_t k = 0;
    for (size_t i = 0; i < p->n_actions; i++) {
        const mp_remat_action_t *a = &p->action[i];
        if (a->node >= r->n_fwd)
            return mp__err(MP_EINVAL, "remat plan '%s': action %zu names node %zu, not a forward node (%zu)",
                           p->policy, i, a->node, r->n_fwd);
        if (a->kind == MP_REMAT_RECOMPUTE) continue;
        if (a->kind != MP_REMAT_BACKWARD)
            return mp__err(MP_EINVAL, "remat plan '%s': action %zu has unknown kind %d", p->policy, i, (int)a->kind);
        if (k >= r->n_groups || r->grp_node[k] != a->node)
            return mp__err(MP_EINVAL, "remat plan '%s': action %zu runs the gradient of node %zu, but the next gradient is node %s",
                           p->policy, i, a->node, k < r->n_groups ? "another" : "none (all done)");
        k++;
    }
    if (k != r->n_groups)
        return mp__err(MP_EINVAL, "remat plan '%s': %zu of the %zu gradients are missing", p->policy,
                       r->n_groups - k, r->n_groups);
    return MP_OK;
}
