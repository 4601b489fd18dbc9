/* chain_sim.c -- the chain model's ground truth: mp_chain_simulate checks a
 * chain schedule and measures its modelled memory peak and recomputed FLOPs.
 *
 * The model (docs/remat-chains.md): FORWARD(i) makes a new copy of stage i
 * (its output, out_bytes[i], and its intermediates, all_bytes[i] -
 * out_bytes[i]) from the latest copy of out(i-1); BACKWARD(i) reads the
 * latest copy of all of stage i and the latest copy of out(i-1).  A copy's
 * output part is live from its producing op to its last read as the latest
 * copy; its intermediate part to the BACKWARD(i) that reads it, else only at
 * its producing op.  The input of stage 0 is free.  Memory at an op is the
 * sum of the parts live there; the peak is the maximum over ops.
 * Recomputed FLOPs: fwd_flops per FORWARD after the first pass, but
 * grad_flops (when given) for a FORWARD(i) right before BACKWARD(i): out(i)
 * has no reader left then (BACKWARD(i+1) is done), so only what the
 * stage's gradients read is run.
 */
#include "../core/internal.h"

#include <stdlib.h>

/* Checks the arrays and sizes of a chain: all_bytes >= out_bytes and the sum
 * of all_bytes fits in 64 bits (it bounds every modelled peak).  O(n). */
static mp_status chain_check(const mp_chain_t *c) {
    if (!c) return mp__err(MP_EINVAL, "chain: NULL chain");
    if (c->n == 0) return MP_OK;
    if (!c->fwd_flops || !c->out_bytes || !c->all_bytes)
        return mp__err(MP_EINVAL, "chain: missing fwd_flops, out_bytes or all_bytes");
    uint64_t sum = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->grad_flops && c->grad_flops[i] > c->fwd_flops[i])
            return mp__err(MP_EINVAL, "chain: stage %zu has grad_flops %llu > fwd_flops %llu", i,
                           (unsigned long long)c->grad_flops[i], (unsigned long long)c->fwd_flops[i]);
        if (c->all_bytes[i] < c->out_bytes[i])
            return mp__err(MP_EINVAL, "chain: stage %zu has all_bytes %llu < out_bytes %llu", i,
                           (unsigned long long)c->all_bytes[i], (unsigned long long)c->out_bytes[i]);
        if (sum > UINT64_MAX - c->all_bytes[i])
            return mp__err(MP_EOVERFLOW, "chain: the sum of all_bytes overflows 64 bits");
        sum += c->all_bytes[i];
    }
    return MP_OK;
}

/* Per stage: the latest copy (producing op, last read of its output, the
 * BACKWARD that read its intermediates or SIZE_MAX). */
typedef struct sim_copy {
    size_t made, out_last, int_read;
    int exists;
} sim_copy;

/* Adds bytes on ops [a, b] to the difference array (modular: the final
 * prefix sums are true values, every one <= the sum of all_bytes). */
static void add_span(uint64_t *diff, size_t a, size_t b, uint64_t bytes) {
    diff[a] += bytes;
    diff[b + 1] -= bytes;
}

static void finish_copy(const mp_chain_t *c, size_t i, const sim_copy *cp, uint64_t *diff) {
    if (!cp->exists) return;
    add_span(diff, cp->made, cp->out_last, c->out_bytes[i]);
    size_t end = cp->int_read != SIZE_MAX ? cp->int_read : cp->made;
    add_span(diff, cp->made, end, c->all_bytes[i] - c->out_bytes[i]);
}

/* Checks op k against the validity rules; *next_b is the stage the next
 * BACKWARD must name (SIZE_MAX once all are done). */
static mp_status check_op(const mp_chain_t *c, const mp_chain_op_t *op, size_t k, size_t next_b) {
    if (op->kind != MP_CHAIN_FORWARD && op->kind != MP_CHAIN_BACKWARD)
        return mp__err(MP_EINVAL, "chain schedule: op %zu has an unknown kind %d", k, (int)op->kind);
    if (op->stage >= c->n)
        return mp__err(MP_EINVAL, "chain schedule: op %zu names stage %zu of a %zu-stage chain", k,
                       op->stage, c->n);
    if (k < c->n && (op->kind != MP_CHAIN_FORWARD || op->stage != k))
        return mp__err(MP_EINVAL, "chain schedule: op %zu must be FORWARD(%zu): a schedule starts "
                       "with the forward pass FORWARD(0..%zu)", k, k, c->n - 1);
    if (op->kind == MP_CHAIN_BACKWARD && op->stage != next_b) {
        if (next_b == SIZE_MAX)
            return mp__err(MP_EINVAL, "chain schedule: op %zu is BACKWARD(%zu) after BACKWARD(0)", k,
                           op->stage);
        return mp__err(MP_EINVAL, "chain schedule: op %zu is BACKWARD(%zu) but BACKWARD(%zu) is next", k,
                       op->stage, next_b);
    }
    return MP_OK;
}

/* Applies op k: reads extend the latest copies' liveness, a FORWARD retires
 * the stage's previous copy. */
static void apply_op(const mp_chain_t *c, const mp_chain_op_t *op, size_t k, sim_copy *cp, uint64_t *diff) {
    size_t i = op->stage;
    if (i > 0) cp[i - 1].out_last = k;
    if (op->kind == MP_CHAIN_FORWARD) {
        finish_copy(c, i, &cp[i], diff);
        cp[i] = (sim_copy){.made = k, .out_last = k, .int_read = SIZE_MAX, .exists = 1};
    } else {
        cp[i].out_last = k;
        cp[i].int_read = k;
    }
}

/* Validates and measures a schedule in one pass over the ops: per stage the
 * latest copy, parts added to a difference array over op indices when a copy
 * is retired, then one prefix sum.  O(n + n_ops) time and memory. */
mp_status mp_chain_simulate(const mp_chain_t *c, const mp_chain_op_t *ops, size_t n_ops, uint64_t *peak,
                            uint64_t *extra_flops) {
    mp_status st = chain_check(c);
    if (st) return st;
    if (n_ops && !ops) return mp__err(MP_EINVAL, "chain schedule: NULL ops");
    if (n_ops < 2 * c->n)
        return mp__err(MP_EINVAL, "chain schedule: %zu ops cannot hold the forward pass and %zu BACKWARDs",
                       n_ops, c->n);
    if (n_ops == SIZE_MAX) return mp__err(MP_EINVAL, "chain schedule: too many ops");
    sim_copy *cp = calloc(c->n ? c->n : 1, sizeof *cp);
    uint64_t *diff = calloc(n_ops + 1, sizeof *diff);
    if (!cp || !diff) {
        free(cp), free(diff);
        return MP__NOMEM();
    }
    size_t next_b = c->n ? c->n - 1 : SIZE_MAX;
    uint64_t extra = 0;
    for (size_t k = 0; k < n_ops && st == MP_OK; k++) {
        st = check_op(c, &ops[k], k, next_b);
        if (st) break;
        if (ops[k].kind == MP_CHAIN_BACKWARD) next_b = ops[k].stage ? ops[k].stage - 1 : SIZE_MAX;
        else if (k >= c->n) {
            size_t i = ops[k].stage;
            bool own = c->grad_flops && k + 1 < n_ops && ops[k + 1].kind == MP_CHAIN_BACKWARD && ops[k + 1].stage == i;
            uint64_t f = own ? c->grad_flops[i] : c->fwd_flops[i];
            if (extra > UINT64_MAX - f) st = mp__err(MP_EOVERFLOW, "chain schedule: recomputed FLOPs overflow");
            extra += f;
        }
        apply_op(c, &ops[k], k, cp, diff);
    }
    if (st == MP_OK && next_b != SIZE_MAX)
        st = mp__err(MP_EINVAL, "chain schedule: op %zu: the schedule ends before BACKWARD(%zu)", n_ops, next_b);
    if (st == MP_OK) {
        for (size_t i = 0; i < c->n; i++) finish_copy(c, i, &cp[i], diff);
        uint64_t cur = 0, best = 0;
        for (size_t k = 0; k < n_ops; k++) {
            cur += diff[k];
            if (cur > best) best = cur;
        }
        if (peak) *peak = best;
        if (extra_flops) *extra_flops = extra;
    }
    free(cp);
    free(diff);
    return st;
}
