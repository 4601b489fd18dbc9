/* chain.c -- the context's chain of stages and plans from chain schedules:
 * mp_remat_chain (stages between consecutive cuts, with the costs and sizes
 * the chain algorithms model), mp_remat_plan_chain (a chain schedule as a
 * plan), and the two chain policies: "revolve" (Griewank-Walther's
 * binomial schedule, revolve.c) and "optimal" (the dynamic program,
 * chain_dp.c).  O(forward nodes + schedule length x stage size). */
#include "remat_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mp_chain_free(mp_chain_t *c) {
    if (!c) return;
    free(c->fwd_flops);
    free(c->bwd_flops);
    free(c->out_bytes);
    free(c->all_bytes);
    free(c->first_node);
    free(c->grad_flops);
    memset(c, 0, sizeof *c);
}

/* Marks the roots of forward values that gradients read. */
static void grad_reads(const mp_remat_t *r, bool *mark) {
    size_t n_order;
    const size_t *order = mp_graph_order(r->train, &n_order);
    for (size_t s = r->n_fwd; s < n_order; s++) {
        const mp_graph_node_t *nd = mp_graph_node(r->train, order[s]);
        for (size_t i = 0; i < nd->n_inputs; i++) {
            size_t root = mp_graph_tensor(r->train, nd->inputs[i])->root;
            if (mp__remat_producer(r, root) != MP_GRAPH_NONE) mark[root] = true;
        }
    }
}

/* grad_flops: per stage, the FLOPs of the nodes its own gradients need
 * (read by a gradient of the stage, or feeding such a node within the
 * stage) -- what a recomputation right before BACKWARD(i) runs once
 * prune_unread has dropped the rest (a transformer block's last linear,
 * say).  Walks each stage's steps backwards.  O(training graph). */
static mp_status stage_grad_flops(const mp_remat_t *r, mp_chain_t *c) {
    size_t n_order, ng = mp_graph_node_count(r->train);
    const size_t *order = mp_graph_order(r->train, &n_order);
    size_t *stage = malloc((r->n_fwd + 1) * sizeof *stage);
    bool *need = calloc(ng ? ng : 1, sizeof *need);
    if (!stage || !need) {
        free(stage), free(need);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < c->n; i++)
        for (size_t s = c->first_node[i]; s < c->first_node[i + 1]; s++) stage[s] = i;
    for (size_t k = 0; k < r->n_groups; k++) {
        size_t st = stage[r->step_of[r->grp_node[k]]];
        for (size_t s = r->grp_start[k]; s < r->grp_start[k + 1]; s++) {
            const mp_graph_node_t *nd = mp_graph_node(r->train, order[s]);
            for (size_t j = 0; j < nd->n_inputs; j++) {
                size_t p = mp__remat_producer(r, nd->inputs[j]);
                if (p != MP_GRAPH_NONE && stage[r->step_of[p]] == st) need[p] = true;
            }
        }
    }
    for (size_t i = 0; i < c->n; i++)
        for (size_t s = c->first_node[i + 1]; s-- > c->first_node[i];) {
            size_t v = r->fwd_order[s];
            if (!need[v]) continue;
            c->grad_flops[i] += r->flops[v];
            const mp_graph_node_t *nd = mp_graph_node(r->train, v);
            for (size_t j = 0; j < nd->n_inputs; j++) {
                size_t p = mp__remat_producer(r, nd->inputs[j]);
                if (p != MP_GRAPH_NONE && stage[r->step_of[p]] == i) need[p] = true;
            }
        }
    free(stage), free(need);
    return MP_OK;
}

mp_status mp_remat_chain(const mp_remat_t *r, mp_chain_t *c) {
    if (!c) return mp__err(MP_EINVAL, "mp_remat_chain: NULL out");
    memset(c, 0, sizeof *c);
    if (!r) return mp__err(MP_EINVAL, "mp_remat_chain: NULL context");
    size_t n = r->n_cuts + 1, nt = mp_graph_tensor_count(r->train);
    c->n = n;
    c->fwd_flops = calloc(n, sizeof *c->fwd_flops);
    c->bwd_flops = calloc(n, sizeof *c->bwd_flops);
    c->out_bytes = calloc(n, sizeof *c->out_bytes);
    c->all_bytes = calloc(n, sizeof *c->all_bytes);
    c->first_node = calloc(n + 1, sizeof *c->first_node);
    c->grad_flops = calloc(n, sizeof *c->grad_flops);
    bool *mark = calloc(nt ? nt : 1, sizeof *mark);
    if (!c->fwd_flops || !c->bwd_flops || !c->out_bytes || !c->all_bytes || !c->first_node || !c->grad_flops ||
        !mark) {
        free(mark);
        mp_chain_free(c);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < r->n_cuts; i++) {
        c->first_node[i + 1] = r->cut[i] + 1;
        c->out_bytes[i] = r->cut_bytes[i];
    }
    c->first_node[n] = r->n_fwd;
    grad_reads(r, mark);   /* + the crossing values: a stage's whole output */
    for (size_t q = 0; q < r->cross_start[r->n_cuts]; q++) {
        const mp_graph_node_t *nd = mp_graph_node(r->train, r->cross[q]);
        for (size_t k = 0; k < nd->n_outputs; k++) mark[mp_graph_tensor(r->train, nd->outputs[k])->root] = true;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t s = c->first_node[i]; s < c->first_node[i + 1]; s++) {
            const mp_graph_node_t *nd = mp_graph_node(r->train, r->fwd_order[s]);
            c->fwd_flops[i] += r->flops[r->fwd_order[s]];
            for (size_t k = 0; k < nd->n_outputs; k++)
                if (mark[nd->outputs[k]]) c->all_bytes[i] += mp_graph_tensor(r->train, nd->outputs[k])->bytes;
        }
        /* the gradients cost about twice the forward (one product for the
         * input's gradient, one for the weight's) */
        c->bwd_flops[i] = c->fwd_flops[i] > UINT64_MAX / 2 ? UINT64_MAX : 2 * c->fwd_flops[i];
        c->all_bytes[i] = mp__max64(c->all_bytes[i], c->out_bytes[i]);
    }
    free(mark);
    mp_status s = stage_grad_flops(r, c);
    if (s) mp_chain_free(c);
    return s;
}

/* A chain of r: stages start at step 0 and after cuts, and end at the last
 * forward step (merged chains skip cuts). */
static bool chain_fits(const mp_remat_t *r, const mp_chain_t *c) {
    if (!c->n || c->first_node[0] != 0 || c->first_node[c->n] != r->n_fwd) return false;
    for (size_t i = 1, k = 0; i < c->n; i++) {
        while (k < r->n_cuts && r->cut[k] + 1 < c->first_node[i]) k++;
        if (k == r->n_cuts || r->cut[k] + 1 != c->first_node[i]) return false;
    }
    return true;
}

/* c with consecutive stages merged into at most max stages of about equal
 * forward FLOPs (a merged stage: the FLOPs and kept values of its parts,
 * the output of its last).  The DP's table grows as n^3: this keeps it
 * within its stage limit on long chains (ResNet-1000, LSTM over 2048
 * steps) at the price of coarser checkpoint positions. */
static mp_status chain_merge(const mp_chain_t *c, size_t max, mp_chain_t *out) {
    memset(out, 0, sizeof *out);
    size_t n = c->n < max ? c->n : max;
    out->fwd_flops = calloc(n, sizeof *out->fwd_flops);
    out->bwd_flops = calloc(n, sizeof *out->bwd_flops);
    out->out_bytes = calloc(n, sizeof *out->out_bytes);
    out->all_bytes = calloc(n, sizeof *out->all_bytes);
    out->first_node = calloc(n + 1, sizeof *out->first_node);
    out->grad_flops = calloc(n, sizeof *out->grad_flops);
    if (!out->fwd_flops || !out->bwd_flops || !out->out_bytes || !out->all_bytes || !out->first_node ||
        !out->grad_flops) {
        mp_chain_free(out);
        return MP__NOMEM();
    }
    double total = 0, acc = 0;
    for (size_t i = 0; i < c->n; i++) total += (double)c->fwd_flops[i] + 1;
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        /* stage i joins group k; a group closes when its share is reached
         * and enough stages remain for the other groups */
        out->fwd_flops[k] += c->fwd_flops[i];
        out->bwd_flops[k] += c->bwd_flops[i];
        out->all_bytes[k] += c->all_bytes[i];
        out->out_bytes[k] = c->out_bytes[i];
        /* a merged stage run for its own gradients: its parts in full but
         * the last (the stages after each part read its output) */
        out->grad_flops[k] = out->fwd_flops[k] - c->fwd_flops[i] + (c->grad_flops ? c->grad_flops[i] : c->fwd_flops[i]);
        acc += (double)c->fwd_flops[i] + 1;
        bool share_done = acc >= total * (double)(k + 1) / (double)n;
        if (k + 1 < n && (share_done || c->n - 1 - i == n - 1 - k)) out->first_node[++k] = c->first_node[i + 1];
    }
    out->n = k + 1;
    out->first_node[out->n] = c->first_node[c->n];
    return MP_OK;
}

/* Drops the recomputations nobody reads.  A chain schedule recomputes whole
 * stages, but a stage's last linear, say, is needed again only for its
 * output, which the next stage's checkpoint already holds: its copy would
 * be computed and never read.  Walking the actions backwards with need[v]
 * = "the newest copy of v's outputs is read later": a gradient needs the
 * producers of what it reads; a recomputation that is not needed is
 * dropped, one that is satisfies the later readers (need[v] = false) and
 * needs the producers of its own inputs.  Values are unchanged (only
 * unread copies go); compute and memory can only drop.  O(actions x node
 * size).  Returns the new number of actions. */
static size_t prune_unread(const mp_remat_t *r, mp_remat_action_t *a, size_t n, bool *need) {
    size_t n_order, k = r->n_groups, out = n;
    const size_t *order = mp_graph_order(r->train, &n_order);
    for (size_t v = 0; v < r->n_fwd; v++) need[v] = false;
    for (size_t i = n; i-- > 0;) {
        if (a[i].kind == MP_REMAT_BACKWARD) {
            k--;
            for (size_t s = r->grp_start[k]; s < r->grp_start[k + 1]; s++) {
                const mp_graph_node_t *nd = mp_graph_node(r->train, order[s]);
                for (size_t j = 0; j < nd->n_inputs; j++) {
                    size_t p = mp__remat_producer(r, nd->inputs[j]);
                    if (p != MP_GRAPH_NONE) need[p] = true;
                }
            }
            a[--out] = a[i];
            continue;
        }
        size_t v = a[i].node;
        if (!need[v]) continue;
        need[v] = false;
        const mp_graph_node_t *nd = mp_graph_node(r->train, v);
        for (size_t j = 0; j < nd->n_inputs; j++) {
            size_t p = mp__remat_producer(r, nd->inputs[j]);
            if (p != MP_GRAPH_NONE) need[p] = true;
        }
        a[--out] = a[i];
    }
    memmove(a, a + out, (n - out) * sizeof *a);
    return n - out;
}

mp_status mp_remat_plan_chain(const mp_remat_t *r, const mp_chain_t *c, const mp_chain_op_t *ops, size_t n_ops,
                              const char *policy, mp_remat_plan_t *out) {
    if (!out) return mp__err(MP_EINVAL, "mp_remat_plan_chain: NULL out");
    memset(out, 0, sizeof *out);
    if (!r || !c || (n_ops && !ops)) return mp__err(MP_EINVAL, "mp_remat_plan_chain: NULL argument");
    if (!chain_fits(r, c)) return mp__err(MP_EINVAL, "mp_remat_plan_chain: the chain is not this context's");
    size_t cap = r->n_groups, ran = 0, k = 0;
    for (size_t i = 0; i < n_ops; i++)
        if (ops[i].kind == MP_CHAIN_FORWARD && ops[i].stage < c->n)
            cap += c->first_node[ops[i].stage + 1] - c->first_node[ops[i].stage];
    mp_remat_action_t *a = malloc((cap + 1) * sizeof *a);
    if (!a) return MP__NOMEM();
    size_t na = 0;
    for (size_t i = 0; i < n_ops; i++) {
        size_t st = ops[i].stage;
        if (st >= c->n) {
            free(a);
            return mp__err(MP_EINVAL, "chain schedule: op %zu names stage %zu of %zu", i, st, c->n);
        }
        if (ops[i].kind == MP_CHAIN_FORWARD) {
            if (ran < c->n) {   /* the first forward pass: stages in order, run already */
                if (st != ran) {
                    free(a);
                    return mp__err(MP_EINVAL, "chain schedule: op %zu runs stage %zu during the first forward pass, expected %zu",
                                   i, st, ran);
                }
                ran++;
                continue;
            }
            for (size_t s = c->first_node[st]; s < c->first_node[st + 1]; s++)
                a[na++] = (mp_remat_action_t){MP_REMAT_RECOMPUTE, r->fwd_order[s]};
        } else if (ops[i].kind == MP_CHAIN_BACKWARD) {
            while (k < r->n_groups && r->step_of[r->grp_node[k]] >= c->first_node[st])
                a[na++] = (mp_remat_action_t){MP_REMAT_BACKWARD, r->grp_node[k++]};
        } else {
            free(a);
            return mp__err(MP_EINVAL, "chain schedule: op %zu has unknown kind %d", i, (int)ops[i].kind);
        }
    }
    bool *need = malloc((r->n_fwd + 1) * sizeof *need);
    if (!need) {
        free(a);
        return MP__NOMEM();
    }
    if (k == r->n_groups) na = prune_unread(r, a, na, need);   /* a complete schedule */
    free(need);
    out->n_forward = r->n_fwd;
    out->n_actions = na;
    out->action = a;
    mp__remat_name(out, "%s", policy ? policy : "chain");
    mp_status s = mp_remat_plan_validate(r, out);
    if (s) mp_remat_plan_free(out);
    return s;
}

/* The smallest s >= 1 whose binomial schedule recomputes at most n stage
 * runs (one extra forward pass of a uniform chain), or the given one. */
mp_status mp__remat_policy_revolve(const mp_remat_t *r, size_t slots, mp_remat_plan_t *out) {
    mp_chain_t c;
    mp_status s = mp_remat_chain(r, &c);
    if (s) return s;
    size_t n = c.n;
    mp_chain_op_t *ops = NULL;
    size_t n_ops = 0;
    if (!slots) {
        /* the fewest slots whose schedule recomputes at most one forward
         * pass of this chain's FLOPs (stages differ in cost, so t(n, s)
         * <= n is not enough); n slots always qualify (nothing recomputed) */
        uint64_t fwd = 0, peak, extra;
        for (size_t i = 0; i < n; i++) fwd += c.fwd_flops[i];
        for (slots = 1; slots < n; slots++) {
            if (mp_revolve_cost(n, slots) > n) continue;
            if ((s = mp_revolve_schedule(n, slots, &ops, &n_ops))) break;
            s = mp_chain_simulate(&c, ops, n_ops, &peak, &extra);
            free(ops);
            ops = NULL;
            if (s || extra <= fwd) break;
        }
    }
    if (!s && !(s = mp_revolve_schedule(n, slots, &ops, &n_ops))) {
        char name[48];
        snprintf(name, sizeof name, "revolve s=%zu", slots);
        s = mp_remat_plan_chain(r, &c, ops, n_ops, name, out);
    }
    free(ops);
    mp_chain_free(&c);
    return s;
}

/* The modelled peak of keeping everything: the upper end of the DP's range. */
static mp_status keep_all_peak(const mp_chain_t *c, uint64_t *peak) {
    mp_chain_op_t *ops = malloc((2 * c->n + 1) * sizeof *ops);
    if (!ops) return MP__NOMEM();
    for (size_t i = 0; i < c->n; i++) {
        ops[i] = (mp_chain_op_t){MP_CHAIN_FORWARD, i};
        ops[c->n + i] = (mp_chain_op_t){MP_CHAIN_BACKWARD, c->n - 1 - i};
    }
    uint64_t extra;
    mp_status s = mp_chain_simulate(c, ops, 2 * c->n, peak, &extra);
    free(ops);
    return s;
}

/* The DP's schedule at mem_limit; without one, the least modelled memory
 * whose recomputation is at most one forward pass (bisection). */
#define DP_STAGES 48     /* below chain_dp.c's limit: the DP grows as n^3 */
#define DP_STAGES_ONE 96
#define DP_SEARCH_SLOTS 96
#define DP_FINAL_SLOTS 160   /* the limit found to 1/160: a DP in about 0.1 s */

mp_status mp__remat_policy_optimal(const mp_remat_t *r, uint64_t mem_limit, size_t slots, mp_remat_plan_t *out) {
    mp_chain_t full, c;
    mp_status s = mp_remat_chain(r, &full);
    if (s) return s;
    /* a limit of the user's gets a finer chain (one DP); searches, ladders: many */
    s = chain_merge(&full, mem_limit && !slots ? DP_STAGES_ONE : DP_STAGES, &c);
    mp_chain_free(&full);
    if (s) return s;
    mp_chain_op_t *ops = NULL;
    size_t n_ops = 0;
    uint64_t extra, limit = mem_limit;
    if (!limit) {
        uint64_t lo = 0, hi;
        if ((s = keep_all_peak(&c, &hi))) goto done;
        /* coarse units while searching: a finer DP at the limit found can
         * only do better (less rounding up) */
        while (lo + 1 < hi && hi - lo > hi / 64) {   /* lo infeasible, hi feasible */
            uint64_t mid = lo + (hi - lo) / 2;
            free(ops);
            ops = NULL;
            mp_status t = mp_chain_optimal(&c, mid, DP_SEARCH_SLOTS, &ops, &n_ops, &extra);
            if (t == MP_ENOMEM) {
                s = t;
                goto done;
            }
            if (!t && extra <= r->total_flops) hi = mid;
            else lo = mid;
        }
        limit = hi;
    }
    free(ops);
    ops = NULL;
    if ((s = mp_chain_optimal(&c, limit, mem_limit ? slots : DP_FINAL_SLOTS, &ops, &n_ops, &extra))) goto done;
    char name[64];
    snprintf(name, sizeof name, "optimal M=%llu", (unsigned long long)limit);
    s = mp_remat_plan_chain(r, &c, ops, n_ops, name, out);
done:
    free(ops);
    mp_chain_free(&c);
    return s;
}
