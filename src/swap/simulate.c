/* simulate.c -- swap plans and the simulator of one steady-state training
 * iteration under a swap plan (zhang2019 sec. IV-E; docs/swap.md, "The
 * simulator").  A NULL plan is the empty plan.
 *
 * The model.  Times are integer ns from the iteration's start.  One compute
 * stream runs the ops in order; two copy streams run one transfer at a time
 * each: the out stream (device -> host, mp_swap_out_ns) and the in stream
 * (host -> device, mp_swap_in_ns).  An item is wrapped when before <= after
 * (a persistent variable whose next access is in the next iteration).
 *
 *   op j      starts at the latest of: the end of op j-1; the ends of the
 *             swap-ins of the items with before == j; with a limit, the
 *             moment its allocation fits (below).  It runs ns(j).
 *   swap-out  items in order of (after, item index); each starts at the
 *             later of the end of op `after` and the end of the previous
 *             swap-out.  The variable's memory is held until it ends.
 *   swap-in   items in order of (before, item index).  Deadlines on the
 *             no-stall timeline P (P(j) = the sum of ns of the ops before
 *             j): going backwards through that order, an item must end by
 *             D = min(P(before), V of the next item) and so start at
 *             V = D - transfer (0 when D is shorter than the transfer).
 *             Its release op r is the last op <= before with P(r) <= V, its
 *             lag V - P(r): it starts as late as lets it, and every swap-in
 *             after it, finish when op `before` would start if nothing
 *             stalled from op r on.  It starts at the latest of: end of op
 *             r-1 (0 for r = 0) + lag; the end of the previous swap-in; its
 *             own swap-out's end (a wrapped item: the end of the previous
 *             iteration's swap-out, below); with a limit, the moment it
 *             fits.  Its memory is taken from its start.  An isolated item
 *             gets the rule "the latest r such that P(before) - P(r) >=
 *             transfer, started at end(r-1) + P(before) - P(r) - transfer";
 *             the backward pass also makes room for the swap-ins queued
 *             behind it, so two variables needed by one op can both hide.
 *   memory    a non-persistent variable is taken when its first op starts
 *             and given back when its last op ends; a persistent one is
 *             always there except between its swap-out's end and its
 *             swap-in's start (a wrapped item: before its swap-in and after
 *             its swap-out).  At equal times memory is given back before it
 *             is taken; among frees, swap-outs end before an op does.
 *   limit     (limit > 0) an op whose new variables would lift the load
 *             above the limit waits for swap-outs in flight to end, one at
 *             a time, while they can still make it fit; when they cannot it
 *             starts at once.  A swap-in that does not fit waits for memory
 *             to come back (swap-outs and ops ending) while ops before the
 *             one that needs it can still run; once that op is next it
 *             waits only while what is pending can make it fit, and then
 *             starts at once.  Starting at once lifts the peak above the
 *             limit: limit_met 0.  While an op waits
 *             for memory no swap-in starts: memory goes to ops in order.
 *   steady    the iteration ends when its last op does (total_ns); wrapped
 *             swap-outs may still run then and spill into the next one,
 *             where they hold the out stream and their variable until they
 *             end.  The first round simulates with nothing spilled in (the
 *             wrapped variables out at the start); each next round feeds in
 *             the previous round's spill.  The result is round 16, or the
 *             first round whose spill equals the one fed in (every later
 *             round would repeat it).
 *   op_load   per op, the highest load from the end of the previous op to
 *             its own end (its run and any wait before it); with no swaps
 *             and no stalls exactly mp_swap_load's curve.  peak: their max
 *             (after the last op the load only falls).
 *
 * The algorithm: a discrete-event loop over three actors -- the compute
 * stream's next op, the in stream's next swap-in and the pending frees (a
 * FIFO of swap-out ends, whose ends increase in order, the spilled ones
 * and the running op's end).  Each step takes the earliest of them (frees
 * first, then the op, then the swap-in); a swap-out is scheduled as soon as
 * the op it follows starts.  An actor that must wait for memory sleeps
 * until the next free.  Every step frees, starts something or puts an
 * actor to sleep (at most two sleeps between frees), so a round is
 * O(ops + items) after O(items log items) sorting, O(items log ops) binary
 * searches and O(ops + accesses) set-up; at most 16 rounds. */
#include "swap_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NEVER UINT64_MAX
#define MAX_ROUNDS 16

void mp_swap_plan_free(mp_swap_plan_t *p) {
    if (!p) return;
    free(p->item);
    memset(p, 0, sizeof *p);
}

void mp_swap_sim_free(mp_swap_sim_t *s) {
    if (!s) return;
    free(s->op_start_ns), free(s->op_load);
    free(s->out_start_ns), free(s->out_end_ns), free(s->in_start_ns), free(s->in_end_ns);
    memset(s, 0, sizeof *s);
}

/* ---- validation ------------------------------------------------------------ */

static const char *var_name(const mp_swap_iter_t *it, size_t v) {
    return it->var[v].name ? it->var[v].name : "";
}

static mp_status check_item(const mp_swap_iter_t *it, const mp__swap_index *x, size_t i,
                            const mp_swap_item_t *c) {
    if (c->var >= it->n_vars)
        return mp__err(MP_EINVAL, "swap plan: item %zu names variable %zu, but the iteration has %zu",
                       i, c->var, it->n_vars);
    if (c->after >= it->n_ops || c->before >= it->n_ops)
        return mp__err(MP_EINVAL, "swap plan: item %zu names op %zu, but the iteration has %zu", i,
                       c->after >= it->n_ops ? c->after : c->before, it->n_ops);
    size_t v = c->var, lo = x->start[v], hi = x->start[v + 1];
    size_t k = mp__swap_index_lower(x, v, c->after);
    if (k == hi || x->ops[k] != c->after)
        return mp__err(MP_EINVAL, "swap plan: item %zu: op %zu does not access variable %zu ('%s')", i,
                       c->after, v, var_name(it, v));
    size_t next;
    if (k + 1 < hi) next = x->ops[k + 1];
    else if (it->var[v].persistent) next = x->ops[lo];
    else
        return mp__err(MP_EINVAL, "swap plan: item %zu: op %zu is the last access of variable %zu "
                       "('%s'), which is not persistent: there is no next access to swap it in for",
                       i, c->after, v, var_name(it, v));
    if (next != c->before)
        return mp__err(MP_EINVAL, "swap plan: item %zu: (after %zu, before %zu) is not a gap between "
                       "consecutive accesses of variable %zu ('%s'): its next access after op %zu "
                       "is at op %zu", i, c->after, c->before, v, var_name(it, v), c->after, next);
    return MP_OK;
}

/* Items, then overlaps: two gaps of a variable between consecutive
 * accesses overlap exactly when they start at the same access. */
static mp_status plan_check(const mp_swap_iter_t *it, const mp__swap_index *x, const mp_swap_plan_t *p) {
    if (!p || !p->n) return MP_OK;
    if (!p->item) return mp__err(MP_EINVAL, "swap plan: %zu items but no array", p->n);
    for (size_t i = 0; i < p->n; i++) {
        mp_status s = check_item(it, x, i, &p->item[i]);
        if (s) return s;
    }
    mp__key *k = malloc(p->n * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < p->n; i++) k[i] = (mp__key){p->item[i].var, p->item[i].after, i};
    mp_status s = mp__sort_keys(k, p->n);
    for (size_t t = 1; !s && t < p->n; t++)
        if (k[t].a == k[t - 1].a && k[t].b == k[t - 1].b)
            s = mp__err(MP_EINVAL, "swap plan: items %zu and %zu overlap: both take variable %zu ('%s') "
                        "out after op %zu", k[t - 1].i, k[t].i, (size_t)k[t].a,
                        var_name(it, (size_t)k[t].a), (size_t)k[t].b);
    free(k);
    return s;
}

mp_status mp_swap_plan_validate(const mp_swap_iter_t *it, const mp_swap_plan_t *p) {
    mp__swap_index x;
    mp_status s = mp__swap_index_build(it, &x);
    if (!s) s = plan_check(it, &x, p);
    mp__swap_index_free(&x);
    return s;
}

/* ---- the simulator --------------------------------------------------------- */

typedef struct sim {
    const mp_swap_iter_t *it;
    const mp_swap_item_t *item;
    const mp__swap_index *x;
    size_t n_ops, n;             /* ops, plan items */
    uint64_t limit, base;        /* base: persistent bytes less the wrapped items' */
    mp_swap_sim_t *out;
    uint64_t *prefix;            /* n_ops + 1: the no-stall start of each op */
    uint64_t *alloc, *freed;     /* per op: bytes its start takes, its end gives back */
    uint64_t *wait;              /* per op: the latest end of its swap-ins */
    uint64_t *t_out, *t_in;      /* per item: transfer times */
    uint64_t *lag, *carry, *spill; /* per item: lag; spilled swap-out end fed in, and out */
    size_t *rel, *need;          /* per item: release op; ops started before it is known */
    size_t *oq, *iq, *cq;        /* items by (after, i), by (before, i); spilled ones fed in */
    /* one round */
    size_t j, m, o_sched, o_done, n_cq, c_done;
    uint64_t load, pending, seg_max, end_prev, out_free, in_free, now;
    bool running, comp_wait, in_wait;
} sim;

static bool wrapped(const mp_swap_item_t *c) { return c->before <= c->after; }
static uint64_t size_of(const sim *s, size_t i) { return s->it->var[s->item[i].var].size; }

static void sim_free(sim *s) {
    free(s->prefix), free(s->alloc), free(s->freed), free(s->wait);
    free(s->t_out), free(s->t_in), free(s->lag), free(s->carry), free(s->spill);
    free(s->rel), free(s->need), free(s->oq), free(s->iq), free(s->cq);
}

static mp_status sim_alloc(sim *s) {
    size_t n = s->n + 1, o = s->n_ops + 1;
    s->prefix = calloc(o, sizeof *s->prefix), s->alloc = calloc(o, sizeof *s->alloc);
    s->freed = calloc(o, sizeof *s->freed), s->wait = calloc(o, sizeof *s->wait);
    s->t_out = calloc(n, sizeof *s->t_out), s->t_in = calloc(n, sizeof *s->t_in);
    s->lag = calloc(n, sizeof *s->lag), s->carry = calloc(n, sizeof *s->carry);
    s->spill = calloc(n, sizeof *s->spill), s->rel = calloc(n, sizeof *s->rel);
    s->need = calloc(n, sizeof *s->need), s->oq = calloc(n, sizeof *s->oq);
    s->iq = calloc(n, sizeof *s->iq), s->cq = calloc(n, sizeof *s->cq);
    mp_swap_sim_t *r = s->out;
    r->op_start_ns = calloc(o, sizeof *r->op_start_ns), r->op_load = calloc(o, sizeof *r->op_load);
    r->out_start_ns = calloc(n, sizeof *r->out_start_ns), r->out_end_ns = calloc(n, sizeof *r->out_end_ns);
    r->in_start_ns = calloc(n, sizeof *r->in_start_ns), r->in_end_ns = calloc(n, sizeof *r->in_end_ns);
    if (!s->prefix || !s->alloc || !s->freed || !s->wait || !s->t_out || !s->t_in || !s->lag ||
        !s->carry || !s->spill || !s->rel || !s->need || !s->oq || !s->iq || !s->cq ||
        !r->op_start_ns || !r->op_load || !r->out_start_ns || !r->out_end_ns || !r->in_start_ns ||
        !r->in_end_ns)
        return MP__NOMEM();
    return MP_OK;
}

/* Fills q[0..n) with the items ordered by (key, index). */
static mp_status order_items(const sim *s, bool by_before, size_t *q) {
    mp__key *k = malloc((s->n + 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < s->n; i++)
        k[i] = (mp__key){by_before ? s->item[i].before : s->item[i].after, 0, i};
    mp_status st = mp__sort_keys(k, s->n);
    for (size_t i = 0; !st && i < s->n; i++) q[i] = k[i].i;
    free(k);
    return st;
}

/* Per-op sizes, transfer times and the no-stall timeline; MP_EOVERFLOW
 * when all the ops' and transfers' times together, 16 times over (a bound
 * on every time of every round), do not fit in 64 bits. */
static mp_status setup_times(sim *s, const mp_swap_link_t *link) {
    const mp_swap_iter_t *it = s->it;
    const uint64_t cap = UINT64_MAX / (4 * MAX_ROUNDS);
    uint64_t sum = 0;
    for (size_t j = 0; j < s->n_ops; j++) {
        if (it->op[j].ns > cap - sum) goto overflow;
        sum += it->op[j].ns;
        s->prefix[j + 1] = sum;
    }
    for (size_t v = 0; v < it->n_vars; v++) {
        if (it->var[v].persistent) s->base += it->var[v].size;
        else {
            s->alloc[s->x->first[v]] += it->var[v].size;
            s->freed[s->x->last[v]] += it->var[v].size;
        }
    }
    for (size_t i = 0; i < s->n; i++) {
        s->t_out[i] = mp_swap_out_ns(link, size_of(s, i));
        s->t_in[i] = mp_swap_in_ns(link, size_of(s, i));
        if (s->t_out[i] > cap - sum) goto overflow;
        sum += s->t_out[i];
        if (s->t_in[i] > cap - sum) goto overflow;
        sum += s->t_in[i];
        if (wrapped(&s->item[i])) s->base -= size_of(s, i);
    }
    return MP_OK;
overflow:
    return mp__err(MP_EOVERFLOW, "swap simulate: the op and transfer times add up past 64 bits");
}

/* The swap-in deadlines (see the top): backwards through the in order,
 * each item's latest no-stall start V, its release op and lag, and the ops
 * that must have started before its start is known (op r-1 for the
 * release, op `after` for its own swap-out's end). */
static void setup_release(sim *s) {
    uint64_t lim = NEVER;
    for (size_t q = s->n; q-- > 0;) {
        size_t i = s->iq[q];
        const mp_swap_item_t *c = &s->item[i];
        uint64_t d = mp__min64(s->prefix[c->before], lim);
        uint64_t v = d >= s->t_in[i] ? d - s->t_in[i] : 0;
        lim = v;
        size_t lo = 0, hi = c->before;      /* the last r <= before with prefix[r] <= v */
        while (lo < hi) {
            size_t mid = hi - (hi - lo) / 2;
            if (s->prefix[mid] <= v) lo = mid;
            else hi = mid - 1;
        }
        s->rel[i] = lo;
        s->lag[i] = v - s->prefix[lo];
        s->need[i] = wrapped(c) ? lo : mp__max64(lo, c->after + 1);
    }
}

static void round_init(sim *s) {
    s->j = s->m = s->o_sched = s->o_done = s->n_cq = s->c_done = 0;
    s->pending = s->end_prev = s->out_free = s->in_free = s->now = 0;
    s->running = s->comp_wait = s->in_wait = false;
    s->load = s->base;
    memset(s->wait, 0, s->n_ops * sizeof *s->wait);
    for (size_t q = 0; q < s->n; q++) {      /* spilled ones, in out order: ends ascending */
        size_t i = s->oq[q];
        if (!s->carry[i]) continue;
        s->cq[s->n_cq++] = i;
        s->load += size_of(s, i);
        s->pending += size_of(s, i);
        s->out_free = mp__max64(s->out_free, s->carry[i]);
    }
    s->seg_max = s->load;
}

/* The next free: 0 a spilled swap-out, 1 a swap-out, 2 the running op's
 * end (last among equal times); NEVER when none is pending. */
static uint64_t next_free(const sim *s, int *kind) {
    uint64_t t = NEVER;
    *kind = -1;
    if (s->c_done < s->n_cq) t = s->carry[s->cq[s->c_done]], *kind = 0;
    if (s->o_done < s->o_sched && s->out->out_end_ns[s->oq[s->o_done]] < t)
        t = s->out->out_end_ns[s->oq[s->o_done]], *kind = 1;
    if (s->running && s->end_prev < t) t = s->end_prev, *kind = 2;
    return t;
}

static void apply_free(sim *s, int kind) {
    if (kind == 2) {
        s->out->op_load[s->j - 1] = s->seg_max;
        s->load -= s->freed[s->j - 1];
        s->running = false;
        s->seg_max = s->load;
    } else {
        size_t i = kind == 0 ? s->cq[s->c_done++] : s->oq[s->o_done++];
        s->load -= size_of(s, i);
        s->pending -= size_of(s, i);
    }
    s->comp_wait = s->in_wait = false;   /* sleepers look again */
}

/* When op j could start (never before now); NEVER while a swap-in for it
 * has not started or it sleeps until the next free. */
static uint64_t op_time(const sim *s) {
    if (s->j >= s->n_ops || s->comp_wait) return NEVER;
    if (s->m < s->n && s->item[s->iq[s->m]].before <= s->j) return NEVER;
    return mp__max64(mp__max64(s->end_prev, s->wait[s->j]), s->now);
}

/* When the next swap-in could start (never before now: it may have been
 * held back); NEVER while unknown, asleep or while an op waits for memory. */
static uint64_t in_time(const sim *s) {
    if (s->m >= s->n || s->in_wait || s->comp_wait) return NEVER;
    size_t i = s->iq[s->m], r = s->rel[i];
    if (s->j < s->need[i]) return NEVER;
    uint64_t rel = r ? s->out->op_start_ns[r - 1] + s->it->op[r - 1].ns : 0;
    uint64_t t = mp__max64(mp__max64(rel + s->lag[i], s->in_free), s->now);
    return mp__max64(t, wrapped(&s->item[i]) ? s->carry[i] : s->out->out_end_ns[i]);
}

static void try_op(sim *s, uint64_t t) {
    size_t j = s->j;
    uint64_t need = s->alloc[j];
    mp_swap_sim_t *r = s->out;
    /* pending <= load: what is pending is on the device. */
    if (s->limit && s->load + need > s->limit && s->load + need - s->pending <= s->limit) {
        s->comp_wait = true;
        return;
    }
    r->op_start_ns[j] = t;
    s->end_prev = t + s->it->op[j].ns;
    s->running = true;
    s->load += need;
    s->seg_max = mp__max64(s->seg_max, s->load);
    for (; s->o_sched < s->n && s->item[s->oq[s->o_sched]].after == j; s->o_sched++) {
        size_t i = s->oq[s->o_sched];
        r->out_start_ns[i] = mp__max64(s->end_prev, s->out_free);
        r->out_end_ns[i] = s->out_free = r->out_start_ns[i] + s->t_out[i];
        s->pending += size_of(s, i);
    }
    s->j++;
}

static void try_in(sim *s, uint64_t t) {
    size_t i = s->iq[s->m];
    uint64_t size = size_of(s, i);
    mp_swap_sim_t *r = s->out;
    if (s->limit && s->load + size > s->limit) {
        /* Ops before the one that needs it can still run and give memory
         * back: wait for that.  Once that op is next, wait only for what
         * pending frees can make fit. */
        uint64_t avail = s->pending + (s->running ? s->freed[s->j - 1] : 0);
        if (s->j < s->item[i].before || s->load + size - avail <= s->limit) {
            s->in_wait = true;
            return;
        }
    }
    r->in_start_ns[i] = t;
    r->in_end_ns[i] = s->in_free = t + s->t_in[i];
    s->load += size;
    s->seg_max = mp__max64(s->seg_max, s->load);
    s->wait[s->item[i].before] = mp__max64(s->wait[s->item[i].before], s->in_free);
    s->m++;
}

/* One round with s->carry fed in; fills s->spill.  *same: the spill is
 * the carry. */
static mp_status run_round(sim *s, bool *same) {
    round_init(s);
    for (;;) {
        int kind;
        uint64_t tf = next_free(s, &kind), tc = op_time(s), ti = in_time(s);
        if (tf == NEVER && tc == NEVER && ti == NEVER) break;
        s->now = mp__min64(tf, mp__min64(tc, ti));
        if (tf <= tc && tf <= ti) apply_free(s, kind);
        else if (tc <= ti) try_op(s, tc);
        else try_in(s, ti);
    }
    if (s->j < s->n_ops || s->m < s->n)   /* cannot happen: see the top */
        return mp__err(MP_EINVAL, "swap simulate: internal error: stuck before op %zu", s->j);
    uint64_t total = s->end_prev;
    *same = true;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t e = s->out->out_end_ns[i];
        s->spill[i] = wrapped(&s->item[i]) && e > total ? e - total : 0;
        if (s->spill[i] != s->carry[i]) *same = false;
    }
    return MP_OK;
}

static mp_status simulate(sim *s, const mp_swap_link_t *link) {
    mp_status st = sim_alloc(s);
    if (!st) st = setup_times(s, link);
    if (!st) st = order_items(s, false, s->oq);
    if (!st) st = order_items(s, true, s->iq);
    if (st) return st;
    setup_release(s);
    bool same = false;
    for (int round = 0; !st && !same && round < MAX_ROUNDS; round++) {
        st = run_round(s, &same);
        uint64_t *t = s->carry;
        s->carry = s->spill, s->spill = t;
    }
    if (st) return st;
    mp_swap_sim_t *r = s->out;
    r->compute_ns = s->prefix[s->n_ops];
    r->total_ns = s->end_prev;
    r->stall_ns = r->total_ns - r->compute_ns;
    r->overhead = r->compute_ns ? (double)r->stall_ns / (double)r->compute_ns
                                : (r->stall_ns ? HUGE_VAL : 0.0);
    r->peak = 0;
    for (size_t j = 0; j < s->n_ops; j++) r->peak = mp__max64(r->peak, r->op_load[j]);
    r->limit_met = !s->limit || r->peak <= s->limit;
    return mp__swap_load_curve(s->it, s->x, NULL, &r->original_peak, NULL);
}

/* The model, the rules and the algorithm are at the top of the file:
 * O(ops + accesses + items log items + items log ops) set-up, then at most
 * 16 rounds of an O(ops + items) event loop. */
mp_status mp_swap_simulate(const mp_swap_iter_t *it, const mp_swap_link_t *link,
                           const mp_swap_plan_t *plan, uint64_t limit, mp_swap_sim_t *out) {
    if (!out) return mp__err(MP_EINVAL, "swap simulate: no output");
    memset(out, 0, sizeof *out);
    if (!link) return mp__err(MP_EINVAL, "swap simulate: no link");
    if (!(link->out_bytes_per_s > 0) || !(link->in_bytes_per_s > 0))
        return mp__err(MP_EINVAL, "swap simulate: link '%.32s' needs positive bandwidths both ways",
                       link->name);
    mp__swap_index x;
    mp_status st = mp__swap_index_build(it, &x);
    if (st) return st;
    st = plan_check(it, &x, plan);
    sim s = {.it = it, .x = &x, .n_ops = it->n_ops, .n = plan ? plan->n : 0, .limit = limit,
             .out = out, .item = plan ? plan->item : NULL};
    out->n_ops = it->n_ops;
    if (!st) st = simulate(&s, link);
    sim_free(&s);
    mp__swap_index_free(&x);
    if (st) mp_swap_sim_free(out);
    return st;
}
