/* backward.c -- mp_graph_backward: the explicit backward graph of a forward
 * graph (chen2016 sec. 3, the MXNet memory note).
 *
 * Three sweeps over the forward steps:
 *   1. forward: which tensors require a gradient (trainable leaf parameters,
 *      and float outputs of differentiable ops reading such a tensor);
 *   2. backward: which nodes the loss depends on through such tensors
 *      ("Backward Prune"), each node's grad_mask, and how many gradient
 *      contributions every tensor receives;
 *   3. backward again, emitting: a "ones" seed for dLoss, one X_backward node
 *      per surviving forward node (reverse step order), and right after the
 *      last contribution to a tensor with several, one "sum_n" over all of
 *      them (the note's "Backward Agg"); or, with opts->accumulate, an
 *      "add" into a running sum as each contribution arrives -- for a
 *      parameter, into its gradient through aliases -- so a weight shared
 *      by many steps keeps no contribution live (MXNet's in-place
 *      accumulation, which chen2016 sec. 5.3 credits for the LSTM's savings).
 * The gradient node layout is /tmp/brief/ops.md's (docs/graph.md): the
 * gradients of f's outputs, then f's inputs and/or outputs as the forward
 * op's grad_needs declares, each tensor once; outputs are the gradients of
 * the inputs selected by grad_mask, in input order.  O(tensors + node
 * inputs and outputs). */
#include "graph_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A forward node in step order (the graph's nodes, then an added loss). */
typedef struct fnode {
    size_t id;
    const char *name;
    const size_t *in, *out;
    size_t n_in, n_out;
    const mp_op_info_t *info;
} fnode;

/* What the sweeps need of a forward tensor. */
typedef struct tdesc {
    const char *name, *dtype;
    const uint64_t *shape;
    size_t rank;
    size_t root;
    bool leaf_param;       /* a trainable float parameter no node produces */
} tdesc;

typedef struct bw {
    const mp_graph_t *g;
    mp_graph_builder_t *b;
    size_t nF, nT;         /* forward nodes, forward tensors (incl. target, loss) */
    fnode *fn;
    tdesc *td;
    size_t loss;
    bool *req;             /* per forward tensor: requires a gradient */
    uint64_t *mask;        /* per step: grad_mask, 0 when pruned */
    size_t *total, *seen;  /* per forward tensor: gradient contributions */
    size_t *cstart, *cbuf; /* contributions of tensor t: cbuf[cstart[t] ..] */
    bool accumulate;       /* opts->accumulate: running sums, see accumulate() */
    size_t *acc;           /* per forward tensor: the running sum so far */
    size_t *grad;          /* per forward tensor: its gradient, or NONE */
    size_t *root;          /* per tensor of the result (up to cap): memory root */
    size_t *stamp;         /* per forward tensor: last step that listed it */
    size_t cap;
    size_t *ins, *outs;    /* scratch for one node */
    char *name;            /* scratch for names */
    size_t name_cap;
    mp_backward_stats_t st;
} bw;

static bool is_float(const char *dt) {
    return !strcmp(dt, "float32") || !strcmp(dt, "float16") || !strcmp(dt, "bfloat16") ||
           !strcmp(dt, "float64");
}

/* printf into c->name (grown as needed); NULL when out of memory. */
static const char *mkname(bw *c, const char *fmt, const char *a, const char *b) {
    int n = snprintf(c->name, c->name_cap, fmt, a, b);
    if (n < 0) return NULL;
    if ((size_t)n >= c->name_cap) {
        char *p = realloc(c->name, (size_t)n + 1);
        if (!p) return NULL;
        c->name = p;
        c->name_cap = (size_t)n + 1;
        snprintf(c->name, c->name_cap, fmt, a, b);
    }
    return c->name;
}

/* A tensor's or node's name for derived names ("#12" when it has none). */
static const char *label(const char *name, size_t id, char *buf, size_t cap) {
    if (name && name[0]) return name;
    snprintf(buf, cap, "#%zu", id);
    return buf;
}

/* Adds a gradient tensor shaped like forward tensor t. */
static mp_status new_grad(bw *c, size_t t, const char *fmt, const char *suffix, mp_tensor_kind kind,
                          size_t alias_root, size_t *id) {
    char buf[32];
    const char *nm = mkname(c, fmt, label(c->td[t].name, t, buf, sizeof buf), suffix);
    if (!nm) return MP__NOMEM();
    mp_status s = mp_graph_builder_tensor(c->b, nm, c->td[t].dtype, c->td[t].shape, c->td[t].rank, kind,
                                          alias_root, id);
    if (s) return s;
    if (*id >= c->cap) return mp__err(MP_EINVAL, "backward: tensor count exceeds its bound");
    c->root[*id] = alias_root == MP_GRAPH_NONE ? *id : alias_root;
    if (kind == MP_TENSOR_GRADIENT) {
        c->st.param_grads++;
        return mp_graph_builder_set_grad_of(c->b, *id, t);
    }
    return MP_OK;
}

/* Tensor t has all its contributions: make its gradient (sum_n over them,
 * or, for a parameter whose one contribution is a view, a copy). */
static mp_status finish_grad(bw *c, size_t t) {
    size_t n = c->total[t], *parts = c->cbuf + c->cstart[t], id;
    mp_tensor_kind kind = c->td[t].leaf_param ? MP_TENSOR_GRADIENT : MP_TENSOR_ACTIVATION;
    char buf[32];
    mp_status s = new_grad(c, t, "grad:%s%s", "", kind, MP_GRAPH_NONE, &id);
    if (s) return s;
    const char *nm = mkname(c, n > 1 ? "sum:%s%s" : "copy:%s%s", label(c->td[t].name, t, buf, sizeof buf), "");
    if (!nm) return MP__NOMEM();
    if ((s = mp_graph_builder_node(c->b, nm, n > 1 ? "sum_n" : "identity", parts, n, &id, 1, NULL, NULL)))
        return s;
    c->st.aggregations += n > 1;
    c->grad[t] = id;
    return MP_OK;
}

/* accumulate mode: contribution part to tensor t has just been made.  For
 * an activation the first is the running sum and each later one is added
 * to it at once by a new "add" node (in-place capable), the last producing
 * t's gradient.  For a parameter the sum is its gradient itself (see
 * below).  Summation order is sum_n's: left to right. */
static mp_status accumulate(bw *c, size_t t, size_t part) {
    bool last = c->seen[t] == c->total[t], param = c->td[t].leaf_param;
    char buf[32], num[24];
    size_t id, in[2] = {c->acc[t], part};
    mp_status s;
    if (c->seen[t] == 1 && !param) {
        c->acc[t] = part;
        return MP_OK;
    }
    if (c->seen[t] == 1) {
        /* a parameter's sum lives in its (persistent) gradient from the
         * first contribution on -- copied there at once, so that the first
         * contributions of all the weights are not live together -- and
         * later adds write into it through aliases, as MXNet adds into the
         * gradient buffer in place */
        if ((s = new_grad(c, t, "grad:%s%s", "", MP_TENSOR_GRADIENT, MP_GRAPH_NONE, &id))) return s;
        const char *nm = mkname(c, "acc:%s@%s", label(c->td[t].name, t, buf, sizeof buf), "1");
        if (!nm) return MP__NOMEM();
        if ((s = mp_graph_builder_node(c->b, nm, "identity", &part, 1, &id, 1, NULL, NULL))) return s;
        c->acc[t] = id;
        return MP_OK;
    }
    snprintf(num, sizeof num, "%zu", c->seen[t]);
    if (param) {
        s = new_grad(c, t, "acc:%s@%s", num, MP_TENSOR_ACTIVATION, c->root[c->acc[t]], &id);
    } else {
        s = new_grad(c, t, last ? "grad:%s%s" : "acc:%s@%s", last ? "" : num, MP_TENSOR_ACTIVATION, MP_GRAPH_NONE, &id);
    }
    if (s) return s;
    const char *nm = mkname(c, "acc:%s@%s", label(c->td[t].name, t, buf, sizeof buf), num);
    if (!nm) return MP__NOMEM();
    if ((s = mp_graph_builder_node(c->b, nm, "add", in, 2, &id, 1, NULL, NULL))) return s;
    c->st.aggregations++;
    c->acc[t] = id;
    if (last) c->grad[t] = id;
    return MP_OK;
}

/* Does the gradient of f's input i pass dY on unchanged, as a view of dY's
 * memory?  An add's gradients, and a subtraction's first, are dY itself
 * where the input has the output's shape (no broadcast sum) and alpha does
 * not scale it: torch's autograd hands the one tensor on to both inputs, so
 * a residual block's gradient is held once, not twice. */
static bool passes_dy(const bw *c, const fnode *f, size_t i, double alpha) {
    const char *op = f->info->name;
    bool add = !strcmp(op, "add"), sub = !strcmp(op, "sub");
    if (!(add && (i == 0 || alpha == 1.0)) && !(sub && i == 0)) return false;
    const tdesc *x = &c->td[f->in[i]], *y = &c->td[f->out[0]];
    return f->n_out == 1 && x->rank == y->rank && !strcmp(x->dtype, y->dtype) &&
           !memcmp(x->shape, y->shape, x->rank * sizeof *x->shape);
}

/* The gradient node of the forward node at step s. */
static mp_status emit_node(bw *c, size_t s) {
    const fnode *f = &c->fn[s];
    const mp_op_info_t *bi = mp_op_info(f->info->backward);
    size_t nin = 0, nout = 0, mark = s + 1;
    mp_status st;
    for (size_t k = 0; k < f->n_out; k++)
        if (c->grad[f->out[k]] != MP_GRAPH_NONE) c->ins[nin++] = c->grad[f->out[k]];
    size_t n_dy = nin;
    if (f->info->grad_needs & MP_GRAD_NEEDS_INPUTS)
        for (size_t i = 0; i < f->n_in; i++)
            if (c->stamp[f->in[i]] != mark) c->stamp[f->in[i]] = mark, c->ins[nin++] = f->in[i];
    if (f->info->grad_needs & MP_GRAD_NEEDS_OUTPUTS)
        for (size_t k = 0; k < f->n_out; k++)
            if (c->stamp[f->out[k]] != mark) c->stamp[f->out[k]] = mark, c->ins[nin++] = f->out[k];
    char buf[32];
    const char *fname = label(f->name, f->id, buf, sizeof buf);
    char *fname_copy = strdup(fname);   /* mkname reuses its buffer below */
    if (!fname_copy) return MP__NOMEM();
    mp_op_attrs_t a;
    if (f->id < c->g->n_nodes)
        mp_graph_node_attrs(c->g, f->id, &a);
    else
        mp_op_attrs_init(&a);
    for (size_t i = 0; i < f->n_in; i++) {
        if (!(c->mask[s] >> i & 1)) continue;
        size_t t = f->in[i];
        /* A view gradient op (flatten_backward) writes output 0 as a view of
         * dY's memory, and so do an add's (passes_dy).  A parameter's
         * gradient must own its memory. */
        bool alias = n_dy > 0 && ((bi->view && nout == 0) || passes_dy(c, f, i, a.alpha));
        bool final = c->total[t] == 1 && !(alias && c->td[t].leaf_param);
        mp_tensor_kind kind = final && c->td[t].leaf_param ? MP_TENSOR_GRADIENT : MP_TENSOR_ACTIVATION;
        st = new_grad(c, t, final ? "grad:%s%s" : "grad:%s@%s", final ? "" : fname_copy, kind,
                      alias ? c->root[c->ins[0]] : MP_GRAPH_NONE, &c->outs[nout]);
        if (st) goto out;
        if (final) c->grad[t] = c->outs[nout];
        nout++;
    }
    a.forward_node = f->id;
    a.grad_mask = c->mask[s];
    const char *nm = mkname(c, "bwd:%s%s", fname_copy, "");
    if (!nm) {
        st = MP__NOMEM();
        goto out;
    }
    size_t bnode;
    if ((st = mp_graph_builder_node(c->b, nm, bi->name, c->ins, nin, c->outs, nout, &a, &bnode))) goto out;
    c->st.backward_nodes++;
    if (f->id < c->g->n_nodes && c->g->node[f->id].backward_workspace) {
        if (!(nm = mkname(c, "ws:bwd:%s%s", fname_copy, ""))) {
            st = MP__NOMEM();
            goto out;
        }
        if ((st = mp__builder_scratch(c->b, bnode, nm, c->g->node[f->id].backward_workspace))) goto out;
    }
    /* Record the contributions; a tensor whose last one this was gets its
     * total now, so the partial gradients die as early as possible. */
    for (size_t i = 0, k = 0; i < f->n_in; i++) {
        if (!(c->mask[s] >> i & 1)) continue;
        size_t t = f->in[i];
        c->cbuf[c->cstart[t] + c->seen[t]++] = c->outs[k++];
        if (c->accumulate && c->total[t] > 1) {
            if ((st = accumulate(c, t, c->outs[k - 1]))) goto out;
            continue;
        }
        if (c->seen[t] == c->total[t] && c->grad[t] == MP_GRAPH_NONE && (st = finish_grad(c, t))) goto out;
    }
out:
    free(fname_copy);
    return st;
}

/* Refuses graphs that already hold gradients (e.g. the aten training graphs). */
static mp_status check_forward_only(const mp_graph_t *g) {
    for (size_t i = 0; i < g->n_tensors; i++)
        if (g->tensor[i].kind == MP_TENSOR_GRADIENT)
            return mp__err(MP_EINVAL, "backward: the graph already has gradients (tensor %zu '%s' is one): it is a training graph",
                           i, g->tensor[i].name);
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mp_op_info_t *info = mp_op_info(g->node[i].op);
        if (info->known && !info->differentiable)
            return mp__err(MP_EINVAL, "backward: the graph already has gradients (node %zu '%s' is a gradient op, %s)",
                           i, g->node[i].name, g->node[i].op);
    }
    return MP_OK;
}

/* Sweep 1: requires-grad, in step order. */
static void sweep_requires(bw *c) {
    for (size_t s = 0; s < c->nF; s++) {
        const fnode *f = &c->fn[s];
        bool any = false;
        for (size_t i = 0; i < f->n_in; i++) any |= c->req[f->in[i]];
        if (!any || !f->info->differentiable) continue;
        for (size_t k = 0; k < f->n_out; k++) c->req[f->out[k]] = is_float(c->td[f->out[k]].dtype);
    }
}

/* Sweep 2: reachability from the loss (prune), masks and contribution
 * counts, in reverse step order.  A node survives when one of its outputs
 * is the loss or receives a gradient and one of its inputs requires one. */
static mp_status sweep_prune(bw *c) {
    for (size_t s = c->nF; s-- > 0;) {
        const fnode *f = &c->fn[s];
        bool any_out = false;
        for (size_t k = 0; k < f->n_out; k++) any_out |= f->out[k] == c->loss || c->total[f->out[k]] > 0;
        if (!any_out || !f->info->differentiable) continue;
        uint64_t mask = 0;
        for (size_t i = 0; i < f->n_in; i++) {
            if (!c->req[f->in[i]]) continue;
            /* grad_mask is stored as a JSON integer (int64): bit 63 is out */
            if (i >= 63)
                return mp__err(MP_EINVAL, "backward: node %zu '%s' (%s): input %zu needs a gradient, but grad_mask holds only 63 inputs",
                               f->id, f->name, f->info->name, i);
            mask |= (uint64_t)1 << i;
        }
        c->mask[s] = mask;
        for (size_t i = 0; i < f->n_in; i++)
            if (mask >> i & 1) c->total[f->in[i]]++;
    }
    return MP_OK;
}

/* Sets up c from g: tensors, forward steps, and (add_loss) the loss node
 * and its tensors, already added to the builder. */
static mp_status setup(bw *c, const mp_graph_t *g, int add_loss, size_t *logits) {
    size_t nG = g->n_tensors, extra = 0, sum_in = 0, max_io = 4;
    *logits = MP_GRAPH_NONE;
    c->loss = g->loss;
    if (c->loss == MP_GRAPH_NONE) {
        if (!add_loss) return mp__err(MP_EINVAL, "backward: the graph has no loss (set add_loss to append one)");
        if (!g->n_outputs) return mp__err(MP_EINVAL, "backward: cannot add a loss: the graph has no outputs");
        *logits = g->outputs[0];
        const mp_graph_tensor_t *t = &g->tensor[*logits];
        if (!is_float(t->dtype))
            return mp__err(MP_EINVAL, "backward: cannot add a loss: output %zu '%s' is %s, not a float tensor",
                           *logits, t->name, t->dtype);
        extra = t->rank == 2 ? 2 : 1;   /* [N,K]: target + loss; else loss */
    }
    for (size_t i = 0; i < g->n_nodes; i++) {
        const mp_graph_node_t *nd = &g->node[i];
        sum_in += nd->n_inputs;
        if (nd->n_inputs + 2 * nd->n_outputs > max_io) max_io = nd->n_inputs + 2 * nd->n_outputs;
    }
    c->nT = nG + extra;
    c->nF = g->n_nodes + (extra ? 1 : 0);
    /* every tensor the result can have: forward, seed, one per contribution,
     * one total per tensor */
    c->cap = c->nT + 1 + sum_in + 2 + c->nT + sum_in    /* + running sums */
             + 2 * g->n_nodes;                          /* + scratch tensors */
    c->fn = calloc(c->nF ? c->nF : 1, sizeof *c->fn);
    c->td = calloc(c->nT, sizeof *c->td);
    c->req = calloc(c->nT, sizeof *c->req);
    c->mask = calloc(c->nF ? c->nF : 1, sizeof *c->mask);
    c->total = calloc(c->nT, sizeof *c->total);
    c->seen = calloc(c->nT, sizeof *c->seen);
    c->cstart = calloc(c->nT + 1, sizeof *c->cstart);
    c->cbuf = calloc(sum_in + 2, sizeof *c->cbuf);
    c->grad = malloc(c->nT * sizeof *c->grad);
    c->root = malloc(c->cap * sizeof *c->root);
    c->stamp = calloc(c->nT, sizeof *c->stamp);
    c->acc = calloc(c->nT, sizeof *c->acc);
    c->ins = malloc(max_io * sizeof *c->ins);
    c->outs = malloc(max_io * sizeof *c->outs);
    if (!c->fn || !c->td || !c->req || !c->mask || !c->total || !c->seen || !c->cstart || !c->cbuf ||
        !c->grad || !c->root || !c->stamp || !c->ins || !c->outs || !c->acc)
        return MP__NOMEM();
    for (size_t t = 0; t < nG; t++) {
        const mp_graph_tensor_t *x = &g->tensor[t];
        c->td[t] = (tdesc){x->name, x->dtype, x->shape, x->rank, x->root,
                           x->kind == MP_TENSOR_PARAMETER && x->producer == MP_GRAPH_NONE &&
                               x->alias_of == MP_GRAPH_NONE && x->trainable && is_float(x->dtype)};
        c->req[t] = c->td[t].leaf_param;
    }
    for (size_t t = 0; t < c->nT; t++) c->grad[t] = MP_GRAPH_NONE;
    for (size_t s = 0; s < g->n_nodes; s++) {
        const mp_graph_node_t *nd = &g->node[g->order[s]];
        c->fn[s] = (fnode){g->order[s], nd->name, nd->inputs, nd->outputs, nd->n_inputs, nd->n_outputs,
                           mp_op_info(nd->op)};
    }
    return MP_OK;
}

/* Adds the loss node of add_loss: softmax_xent(logits [N,K], target [N]),
 * or for any other float output the mean of its elements. */
static mp_status add_loss_node(bw *c, size_t logits, size_t *loss_in, size_t *loss_out) {
    const mp_graph_tensor_t *t = &c->g->tensor[logits];
    size_t nG = c->g->n_tensors, target = MP_GRAPH_NONE, loss, node;
    bool xent = t->rank == 2;
    mp_status s;
    if (xent) {
        if ((s = mp_graph_builder_tensor(c->b, "target", "int64", t->shape, 1, MP_TENSOR_INPUT, MP_GRAPH_NONE,
                                         &target)))
            return s;
        c->td[nG] = (tdesc){"target", "int64", t->shape, 1, target, false};
    }
    if ((s = mp_graph_builder_tensor(c->b, "loss", t->dtype, NULL, 0, MP_TENSOR_OUTPUT, MP_GRAPH_NONE, &loss)))
        return s;
    if (target != MP_GRAPH_NONE && target != nG) return mp__err(MP_EINVAL, "backward: unexpected tensor ids");
    if (loss != c->nT - 1) return mp__err(MP_EINVAL, "backward: unexpected tensor ids");
    c->td[loss] = (tdesc){"loss", t->dtype, NULL, 0, loss, false};
    loss_in[0] = logits;
    loss_in[1] = target;
    *loss_out = loss;
    if ((s = mp_graph_builder_node(c->b, "loss", xent ? "softmax_xent" : "mean", loss_in, xent ? 2 : 1, loss_out,
                                   1, NULL, &node)))
        return s;
    c->fn[c->nF - 1] = (fnode){node, "loss", loss_in, loss_out, xent ? 2 : 1, 1,
                               mp_op_info(xent ? "softmax_xent" : "mean")};
    c->loss = loss;
    /* the logits are no longer returned: the loss consumes them */
    if (t->kind == MP_TENSOR_OUTPUT) return mp_graph_builder_set_kind(c->b, logits, MP_TENSOR_ACTIVATION);
    return MP_OK;
}

static void bw_free(bw *c) {
    mp_graph_builder_free(c->b);
    free(c->fn);
    free(c->td);
    free(c->req);
    free(c->mask);
    free(c->total);
    free(c->seen);
    free(c->cstart);
    free(c->cbuf);
    free(c->grad);
    free(c->root);
    free(c->stamp);
    free(c->acc);
    free(c->ins);
    free(c->outs);
    free(c->name);
}

/* Forward nodes with a workspace and no scratch tensor yet get one (the
 * file's "scratch" is kept as it is). */
static mp_status forward_scratch(bw *c) {
    char buf[32];
    for (size_t v = 0; v < c->g->n_nodes; v++) {
        const mp_graph_node_t *nd = &c->g->node[v];
        if (!nd->workspace || nd->scratch != MP_GRAPH_NONE) continue;
        const char *nm = mkname(c, "ws:%s%s", label(nd->name, v, buf, sizeof buf), "");
        mp_status s = nm ? mp__builder_scratch(c->b, v, nm, nd->workspace) : MP__NOMEM();
        if (s) return s;
    }
    return MP_OK;
}

/* The training graph of fwd (see memplan.h). */
mp_status mp_graph_backward(const mp_graph_t *fwd, const mp_backward_opts_t *opts, mp_graph_t **out,
                            mp_backward_stats_t *stats) {
    if (out) *out = NULL;
    if (stats) memset(stats, 0, sizeof *stats);
    if (!fwd || !out) return mp__err(MP_EINVAL, "backward: NULL graph");
    bw c;
    memset(&c, 0, sizeof c);
    c.g = fwd;
    c.accumulate = opts && opts->accumulate;
    size_t logits, loss_in[2], loss_out, *order = NULL, *outputs = NULL;
    mp_status s = check_forward_only(fwd);
    if (!s) s = setup(&c, fwd, opts && opts->add_loss, &logits);
    if (!s) s = mp_graph_builder_from(fwd, &c.b);
    if (!s && mp_graph_builder_tensor_count(c.b) != fwd->n_tensors)
        s = mp__err(MP_EINVAL, "backward: the builder did not copy the graph's tensors");
    if (!s && logits != MP_GRAPH_NONE) s = add_loss_node(&c, logits, loss_in, &loss_out);
    if (!s) s = forward_scratch(&c);
    if (s) goto done;
    for (size_t t = 0; t < c.nT; t++) c.root[t] = c.td[t].root;
    sweep_requires(&c);
    if ((s = sweep_prune(&c))) goto done;
    for (size_t t = 0; t < c.nT; t++) c.cstart[t + 1] = c.cstart[t] + c.total[t];
    c.st.forward_nodes = c.nF;

    /* The seed: dLoss = 1. */
    size_t seed;
    if ((s = new_grad(&c, c.loss, "grad:%s%s", "", MP_TENSOR_ACTIVATION, MP_GRAPH_NONE, &seed))) goto done;
    char lbuf[32];
    const char *nm = mkname(&c, "seed:%s%s", label(c.td[c.loss].name, c.loss, lbuf, sizeof lbuf), "");
    if (!nm) {
        s = MP__NOMEM();
        goto done;
    }
    if ((s = mp_graph_builder_node(c.b, nm, "ones", NULL, 0, &seed, 1, NULL, NULL))) goto done;
    c.grad[c.loss] = seed;
    for (size_t st = c.nF; st-- > 0;)
        if (c.mask[st] && (s = emit_node(&c, st))) goto done;
    c.st.pruned = c.nF - c.st.backward_nodes;

    /* order: the forward steps, then every added node in creation order */
    size_t n_nodes = mp_graph_builder_node_count(c.b), n_out = 0;
    order = malloc(n_nodes * sizeof *order);
    outputs = malloc((fwd->n_outputs + 1 + c.st.param_grads) * sizeof *outputs);
    if (!order || !outputs) {
        s = MP__NOMEM();
        goto done;
    }
    memcpy(order, fwd->order, fwd->n_nodes * sizeof *order);
    for (size_t i = fwd->n_nodes; i < n_nodes; i++) order[i] = i;
    /* outputs: the loss, the graph's other outputs (not the one add_loss
     * consumed), then the parameter gradients in parameter order */
    outputs[n_out++] = c.loss;
    for (size_t i = 0; i < fwd->n_outputs; i++)
        if (fwd->outputs[i] != c.loss && fwd->outputs[i] != logits) outputs[n_out++] = fwd->outputs[i];
    for (size_t t = 0; t < fwd->n_tensors; t++)
        if (c.td[t].leaf_param && c.grad[t] != MP_GRAPH_NONE) outputs[n_out++] = c.grad[t];
    s = mp_graph_builder_finish(c.b, order, outputs, n_out, c.loss, out);
done:
    if (s == MP_OK && stats) *stats = c.st;
    free(order);
    free(outputs);
    bw_free(&c);
    return s;
}
