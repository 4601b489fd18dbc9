/* apply.c -- the mirror transform: a plan's training graph.
 *
 * Start from a builder holding the training graph (same tensor and node
 * ids, so a plan without recomputation gives the graph node for node), keep
 * latest[t] = the newest copy of every tensor (t itself at first), and
 * replay the plan after the forward steps and the prelude:
 *   RECOMPUTE v: new tensors "re:NAME" shaped like v's outputs (a view's
 *                copy aliases the latest copy of the input it views), a
 *                copy of node v over latest[inputs], latest[outputs] = copies;
 *   BACKWARD v:  v's gradient group, its gradient node now reading
 *                latest[inputs] (the executor finds a copy by its position
 *                in the gradient's layout, exec_grad.c).
 * Reading only latest copies makes every schedule compute the same values;
 * a plan decides memory (by what it leaves live) and compute, nothing else.
 * O(nodes + actions x node size), plus the builder's validation. */
#include "remat_internal.h"

#include "../graph/graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct applier {
    const mp_remat_t *r;
    const mp_graph_t *g;
    mp_graph_builder_t *b;
    size_t *latest;            /* per tensor of the result (up to cap) */
    size_t cap;
    size_t *ins, *outs;        /* scratch, max node size */
    char *name;
    size_t name_cap;
} applier;

static const char *copy_name(applier *a, const char *orig) {
    size_t need = strlen(orig) + 4;
    if (need > a->name_cap) {
        char *p = realloc(a->name, need);
        if (!p) return NULL;
        a->name = p;
        a->name_cap = need;
    }
    snprintf(a->name, a->name_cap, "re:%s", orig);
    return a->name;
}

/* The input of node nd whose memory the alias output t views. */
static size_t viewed_input(const mp_graph_t *g, const mp_graph_node_t *nd, size_t t) {
    size_t root = mp_graph_tensor(g, t)->root;
    for (size_t i = 0; i < nd->n_inputs; i++)
        if (mp_graph_tensor(g, nd->inputs[i])->root == root) return nd->inputs[i];
    return root;
}

static mp_status recompute(applier *a, size_t v, size_t *node_id) {
    const mp_graph_node_t *nd = mp_graph_node(a->g, v);
    mp_status s;
    for (size_t i = 0; i < nd->n_inputs; i++) a->ins[i] = a->latest[nd->inputs[i]];
    for (size_t k = 0; k < nd->n_outputs; k++) {
        const mp_graph_tensor_t *t = mp_graph_tensor(a->g, nd->outputs[k]);
        size_t alias = t->alias_of == MP_GRAPH_NONE ? MP_GRAPH_NONE : a->latest[viewed_input(a->g, nd, nd->outputs[k])];
        const char *nm = copy_name(a, t->name);
        if (!nm) return MP__NOMEM();
        if ((s = mp_graph_builder_tensor(a->b, nm, t->dtype, t->shape, t->rank, MP_TENSOR_ACTIVATION, alias,
                                         &a->outs[k])))
            return s;
        if (a->outs[k] >= a->cap) return mp__err(MP_EINVAL, "remat: tensor count exceeds its bound");
        a->latest[a->outs[k]] = a->outs[k];
    }
    const char *nm = copy_name(a, nd->name);
    if (!nm) return MP__NOMEM();
    if ((s = mp__builder_copy_node(a->b, a->g, v, nm, a->ins, nd->n_inputs, a->outs, nd->n_outputs, node_id)))
        return s;
    /* a recomputation needs the node's workspace again, at its own step */
    if (nd->scratch != MP_GRAPH_NONE) {
        const mp_graph_tensor_t *w = mp_graph_tensor(a->g, nd->scratch);
        if (!(nm = copy_name(a, w->name))) return MP__NOMEM();
        if ((s = mp__builder_scratch(a->b, *node_id, nm, w->bytes))) return s;
    }
    for (size_t k = 0; k < nd->n_outputs; k++) a->latest[nd->outputs[k]] = a->outs[k];
    return MP_OK;
}

/* Points gradient node id at the latest copies of what it reads. */
static mp_status rewire(applier *a, size_t id) {
    const mp_graph_node_t *nd = mp_graph_node(a->g, id);
    bool changed = false;
    for (size_t i = 0; i < nd->n_inputs; i++) {
        a->ins[i] = a->latest[nd->inputs[i]];
        changed |= a->ins[i] != nd->inputs[i];
    }
    return changed ? mp__builder_set_inputs(a->b, id, a->ins, nd->n_inputs) : MP_OK;
}

static mp_status setup(applier *a, const mp_remat_t *r, const mp_remat_plan_t *p) {
    a->r = r;
    a->g = r->train;
    size_t nt = mp_graph_tensor_count(a->g), nn = mp_graph_node_count(a->g), max_io = 1, copies = 0;
    for (size_t v = 0; v < nn; v++) {
        const mp_graph_node_t *nd = mp_graph_node(a->g, v);
        if (nd->n_inputs > max_io) max_io = nd->n_inputs;
        if (nd->n_outputs > max_io) max_io = nd->n_outputs;
    }
    for (size_t i = 0; i < p->n_actions; i++)
        if (p->action[i].kind == MP_REMAT_RECOMPUTE) copies += mp_graph_node(a->g, p->action[i].node)->n_outputs + 1;
    a->cap = nt + copies;
    a->latest = malloc((a->cap + 1) * sizeof *a->latest);
    a->ins = malloc(max_io * sizeof *a->ins);
    a->outs = malloc(max_io * sizeof *a->outs);
    if (!a->latest || !a->ins || !a->outs) return MP__NOMEM();
    for (size_t t = 0; t < a->cap; t++) a->latest[t] = t;
    return mp_graph_builder_from(a->g, &a->b);
}

mp_status mp_remat_apply(const mp_remat_t *r, const mp_remat_plan_t *p, mp_graph_t **out) {
    if (!out) return mp__err(MP_EINVAL, "mp_remat_apply: NULL out");
    *out = NULL;
    mp_status s = mp_remat_plan_validate(r, p);
    if (s) return s;
    applier a;
    memset(&a, 0, sizeof a);
    size_t n_order, n_outputs, *order = NULL, len = 0;
    const size_t *given = mp_graph_order(r->train, &n_order);
    const size_t *outputs = mp_graph_outputs(r->train, &n_outputs);
    if ((s = setup(&a, r, p))) goto done;
    order = malloc((n_order + p->n_actions + 1) * sizeof *order);
    if (!order) {
        s = MP__NOMEM();
        goto done;
    }
    size_t prelude_end = r->n_groups ? r->grp_start[0] : n_order, k = 0;
    for (size_t i = 0; i < prelude_end; i++) order[len++] = given[i];
    for (size_t i = 0; i < p->n_actions && !s; i++) {
        if (p->action[i].kind == MP_REMAT_RECOMPUTE) {
            s = recompute(&a, p->action[i].node, &order[len]);
            len += !s;
            continue;
        }
        for (size_t j = r->grp_start[k]; j < r->grp_start[k + 1] && !s; j++) {
            s = rewire(&a, given[j]);
            order[len++] = given[j];
        }
        k++;
    }
    if (!s) s = mp_graph_builder_finish(a.b, order, outputs, n_outputs, mp_graph_loss(r->train), out);
done:
    mp_graph_builder_free(a.b);
    free(a.latest);
    free(a.ins);
    free(a.outs);
    free(a.name);
    free(order);
    return s;
}
