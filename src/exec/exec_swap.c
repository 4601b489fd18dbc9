/* exec_swap.c -- the executed swap step (issue 10 item 6): the reference
 * executor runs a training step with a swap plan for real.
 *
 * Memory: a device pool of the planned size and a host pool.  Each swapped
 * variable lives on the device in *residencies*, stretches of steps between
 * its swaps, each its own usage record, placed with the other variables'
 * by a core strategy and checked: the pool is that plan's footprint.
 * Persistent variables that are not swapped keep their own allocations, as
 * in the executor's plain run.  Each plan item has a host buffer.
 *
 * Time: the simulation (mp_swap_simulate) says when each transfer runs; its
 * times become steps.  A swap-out is issued when its access `after` ends,
 * and must be done before step done_by (the first step that starts after
 * the simulated swap-out ends): only then may another residency reuse its
 * memory.  A swap-in is issued at the start of step in_start (the step
 * running when the simulated swap-in starts) and waited for before step
 * `before` reads the variable.  Two copy threads, one per direction, take
 * their transfers in issue order (one at a time per direction, as the
 * simulator's streams); a swap-in waits for its item's swap-out.  Events are
 * flags under one mutex with a condition variable.
 *
 * Proof: every output must be bit-identical to the plain step's.  With
 * poison, a residency that is swapped out is NaN-filled once its copy is
 * on the host, and a swap-in's slot is NaN-filled before its copy starts,
 * so a read before a swap-in completes, or of a slot already given up,
 * shows in the outputs.  copy_delay_ns and skip_in_waits break the
 * schedule on purpose for the tests that show it. */
#include "exec_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct sw_item {
    size_t var, tensor;
    size_t after, before, done_by, in_start;
    int wrap;                   /* after > before: out across the iteration's end */
    uint64_t bytes;
    size_t seg_a, seg_b;        /* residencies: the one swapped out, the one swapped in */
    char *host;
    int out_done, in_done;      /* under mu */
} sw_item;

typedef struct sw_queue {
    size_t *v;
    size_t head, len;           /* v[head..len) pending */
} sw_queue;

typedef struct sw_run {
    const mp_graph_t *g;
    const mp_swap_iter_t *it;
    const mp_swap_run_opts_t *o;
    size_t n_steps, n_items, n_segs;
    sw_item *item;
    size_t *item_by_tensor;     /* per tensor: one of its items (SIZE_MAX: none) */
    size_t *first_seg;          /* per tensor: its residency at step 0 or SIZE_MAX */
    mp_buffer_t *seg;           /* residencies as usage records */
    char **seg_addr;
    char *pool, *hostpool;
    /* per step: items whose swap-out must be done / swap-in issued / waited / swap-out issued */
    size_t **at[4];
    size_t *n_at[4];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sw_queue q[2];              /* 0: out, 1: in */
    int stop;
    pthread_t th[2];
    int started[2];
    double stall;
} sw_run;

enum { AT_DONE_BY, AT_IN_START, AT_BEFORE, AT_AFTER };

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns) {
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- the copy threads -------------------------------------------------------- */

typedef struct sw_thread_arg {
    sw_run *r;
    int dir;
} sw_thread_arg;

/* A swap-in reads the host copy its swap-out makes, except one across the
 * iteration's end: its copy is from the previous iteration (here: the
 * initial values). */
static int blocked(const sw_run *r, int dir, const sw_queue *q) {
    if (q->head == q->len) return 1;
    const sw_item *x = &r->item[q->v[q->head]];
    return dir == 1 && !x->wrap && !x->out_done;
}

static void *copier(void *p) {
    sw_thread_arg *a = p;
    sw_run *r = a->r;
    int dir = a->dir;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        sw_queue *q = &r->q[dir];
        while (!r->stop && blocked(r, dir, q)) pthread_cond_wait(&r->cv, &r->mu);
        if (blocked(r, dir, q)) break;   /* stopped: what is left is dropped */
        sw_item *x = &r->item[q->v[q->head++]];
        char *dev = dir == 0 ? r->seg_addr[x->seg_a] : r->seg_addr[x->seg_b];
        pthread_mutex_unlock(&r->mu);
        if (r->o->copy_delay_ns) sleep_ns(r->o->copy_delay_ns);
        if (dir == 0) {
            memcpy(x->host, dev, x->bytes);
            if (r->o->poison) memset(dev, 0xFF, x->bytes);   /* the slot is given up */
        } else {
            memcpy(dev, x->host, x->bytes);
        }
        pthread_mutex_lock(&r->mu);
        if (dir == 0) x->out_done = 1;
        else x->in_done = 1;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static void enqueue(sw_run *r, int dir, size_t k) {
    pthread_mutex_lock(&r->mu);
    r->q[dir].v[r->q[dir].len++] = k;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

/* Waits for item k's copy in direction dir; the time counts as stall. */
static void wait_for(sw_run *r, int dir, size_t k) {
    sw_item *x = &r->item[k];
    double t0 = seconds_now();
    pthread_mutex_lock(&r->mu);
    while (!(dir == 0 ? x->out_done : x->in_done)) pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    r->stall += seconds_now() - t0;
}

static void stop_threads(sw_run *r) {
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    for (int d = 0; d < 2; d++)
        if (r->started[d]) pthread_join(r->th[d], NULL), r->started[d] = 0;
}

/* ---- hooks -------------------------------------------------------------------- */

static mp_status hook_place(void *ctx, size_t t, uint64_t bytes, char **addr) {
    sw_run *r = ctx;
    (void)bytes;
    size_t k = r->item_by_tensor[t];
    if (k != SIZE_MAX && r->item[k].wrap) *addr = r->item[k].host;   /* out at the start */
    else if (r->first_seg[t] != SIZE_MAX) *addr = r->seg_addr[r->first_seg[t]];
    return MP_OK;
}

static mp_status move_to(mp__exec *x, uint64_t *span, size_t t, char *addr) {
    x->addr[t] = addr;
    return mp__exec_views_layout(x, span);
}

static mp_status hook_before(void *ctx, mp__exec *x, uint64_t *span, size_t step) {
    sw_run *r = ctx;
    mp_status s = MP_OK;
    for (size_t i = 0; i < r->n_at[AT_DONE_BY][step]; i++) wait_for(r, 0, r->at[AT_DONE_BY][step][i]);
    for (size_t i = 0; i < r->n_at[AT_IN_START][step] && !s; i++) {
        size_t k = r->at[AT_IN_START][step][i];
        char *dev = r->seg_addr[r->item[k].seg_b];
        if (r->o->poison) memset(dev, 0xFF, r->item[k].bytes);
        s = move_to(x, span, r->item[k].tensor, dev);
        enqueue(r, 1, k);
    }
    if (!r->o->skip_in_waits)
        for (size_t i = 0; i < r->n_at[AT_BEFORE][step]; i++) wait_for(r, 1, r->at[AT_BEFORE][step][i]);
    return s;
}

static mp_status hook_after(void *ctx, mp__exec *x, uint64_t *span, size_t step) {
    sw_run *r = ctx;
    (void)x, (void)span;
    for (size_t i = 0; i < r->n_at[AT_AFTER][step]; i++) enqueue(r, 0, r->at[AT_AFTER][step][i]);
    return MP_OK;
}

/* After the last step: every copy done; a variable out across the end of
 * the iteration is read from its host copy. */
static mp_status hook_end(void *ctx, mp__exec *x, uint64_t *span) {
    sw_run *r = ctx;
    mp_status s = MP_OK;
    for (size_t k = 0; k < r->n_items; k++) wait_for(r, 0, k);
    for (size_t k = 0; k < r->n_items; k++)
        if (r->item[k].wrap) {
            wait_for(r, 1, k);
            if (!s) s = move_to(x, span, r->item[k].tensor, r->item[k].host);
        }
    return s;
}

/* ---- the schedule in steps ----------------------------------------------------- */

/* The first step that starts at or after ns (n_steps when none does). */
static size_t step_from(const mp_swap_sim_t *sim, size_t n, uint64_t ns) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sim->op_start_ns[mid] >= ns) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* Per variable: its tensor (the variables of mp_swap_iter_from_graph:
 * roots owning bytes that some step accesses, in tensor order). */
static mp_status var_tensors(const mp_graph_t *g, const mp_swap_iter_t *it, size_t *tensor_of) {
    size_t nt = mp_graph_tensor_count(g), n_steps, n = 0;
    const size_t *order = mp_graph_order(g, &n_steps);
    unsigned char *used = calloc(nt ? nt : 1, 1);
    if (!used) return MP__NOMEM();
    for (size_t s = 0; s < n_steps; s++) {
        const mp_graph_node_t *nd = mp_graph_node(g, order[s]);
        for (size_t i = 0; i < nd->n_inputs; i++) used[mp_graph_tensor(g, nd->inputs[i])->root] = 1;
        for (size_t i = 0; i < nd->n_outputs; i++) used[mp_graph_tensor(g, nd->outputs[i])->root] = 1;
    }
    mp_status s = MP_OK;
    for (size_t t = 0; t < nt && !s; t++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, t);
        if (x->root != t || !x->bytes || !used[t]) continue;
        if (n >= it->n_vars || it->var[n].size != x->bytes)
            s = mp__err(MP_EINVAL, "exec swap: the iteration was not made from this graph (variable %zu)", n);
        else tensor_of[n++] = t;
    }
    free(used);
    if (!s && n != it->n_vars)
        s = mp__err(MP_EINVAL, "exec swap: the iteration has %zu variables, the graph %zu", it->n_vars, n);
    return s;
}

static int by_after(const void *a, const void *b) {
    const sw_item *x = a, *y = b;
    if (x->var != y->var) return x->var < y->var ? -1 : 1;
    return x->after < y->after ? -1 : x->after > y->after;
}

/* Items in steps, sorted by variable and `after`. */
static mp_status make_items(sw_run *r, const mp_swap_plan_t *plan, const mp_swap_sim_t *sim, const size_t *tensor_of) {
    size_t n = r->n_steps;
    for (size_t k = 0; k < plan->n; k++) {
        const mp_swap_item_t *p = &plan->item[k];
        sw_item *x = &r->item[k];
        memset(x, 0, sizeof *x);
        x->var = p->var, x->tensor = tensor_of[p->var], x->after = p->after, x->before = p->before;
        x->wrap = p->after >= p->before;
        x->bytes = r->it->var[p->var].size;
        size_t d = step_from(sim, n, sim->out_end_ns[k]);
        x->done_by = d > p->after ? d : p->after + 1;
        if (x->wrap && x->done_by > n) x->done_by = n;
        size_t in = step_from(sim, n, sim->in_start_ns[k] + 1);   /* the step running then */
        in = in ? in - 1 : 0;
        size_t lo = x->wrap ? 0 : p->after + 1;
        x->in_start = in < lo ? lo : in > p->before ? p->before : in;
        if (!x->wrap && x->done_by > p->before) x->done_by = p->before;   /* never later than needed */
    }
    qsort(r->item, plan->n, sizeof *r->item, by_after);
    return MP_OK;
}

/* First and last step that access each variable. */
static void access_span(const mp_swap_iter_t *it, size_t *fa, size_t *la) {
    for (size_t v = 0; v < it->n_vars; v++) fa[v] = SIZE_MAX, la[v] = 0;
    for (size_t j = 0; j < it->n_ops; j++)
        for (size_t k = 0; k < it->op[j].n; k++) {
            size_t v = it->access[it->op[j].first + k].var;
            if (fa[v] == SIZE_MAX) fa[v] = j;
            la[v] = j;
        }
}

static size_t add_seg(sw_run *r, size_t first, size_t last, uint64_t bytes) {
    size_t k = r->n_segs++;
    r->seg[k] = (mp_buffer_t){.id = k, .first = first, .last = last < first ? first : last, .size = bytes, .align = 64};
    return k;
}

/* The residencies of variable v (items [i0, i1) of it, sorted by after):
 * see the top of the file.  Returns its residency at step 0 or SIZE_MAX. */
static size_t var_segments(sw_run *r, size_t v, size_t t, size_t i0, size_t i1, size_t fa, size_t la, int is_output) {
    const mp_graph_tensor_t *x = mp_graph_tensor(r->g, t);
    int pers = r->it->var[v].persistent;
    uint64_t bytes = r->it->var[v].size;
    size_t n = r->n_steps, start = pers || x->producer == MP_GRAPH_NONE ? 0 : fa;
    size_t end = pers || is_output ? n - 1 : la;
    if (i0 == i1) return pers ? SIZE_MAX : add_seg(r, start, end, bytes);
    sw_item *w = r->item[i1 - 1].wrap ? &r->item[i1 - 1] : NULL;
    size_t last = w ? i1 - 1 : i1;            /* non-wrapped items: [i0, last) */
    size_t cur, first_seg;
    if (w) {
        size_t stop = (i0 < last ? r->item[i0].done_by : w->done_by);
        cur = add_seg(r, w->in_start, stop - 1, bytes);
        w->seg_b = cur, first_seg = SIZE_MAX;
    } else {
        cur = add_seg(r, start, r->item[i0].done_by - 1, bytes);
        first_seg = cur;
    }
    for (size_t i = i0; i < last; i++) {
        sw_item *it = &r->item[i];
        it->seg_a = cur;
        size_t stop = i + 1 < last ? r->item[i + 1].done_by - 1 : w ? w->done_by - 1 : end;
        cur = add_seg(r, it->in_start, stop, bytes);
        it->seg_b = cur;
    }
    if (w) w->seg_a = cur;
    return first_seg;
}

static mp_status alloc_at(sw_run *r) {
    size_t n = r->n_steps;
    for (int a = 0; a < 4; a++)
        if (!(r->n_at[a] = calloc(n + 1, sizeof *r->n_at[a])) || !(r->at[a] = calloc(n + 1, sizeof *r->at[a])))
            return MP__NOMEM();
    size_t steps[4];
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < r->n_items; k++) {
            const sw_item *x = &r->item[k];
            steps[AT_DONE_BY] = x->done_by, steps[AT_IN_START] = x->in_start;
            steps[AT_BEFORE] = x->before, steps[AT_AFTER] = x->after;
            for (int a = 0; a < 4; a++) {
                if (steps[a] >= n) continue;   /* done after the last step: the end waits */
                if (pass == 0) r->n_at[a][steps[a]]++;
                else r->at[a][steps[a]][r->n_at[a][steps[a]]++] = k;
            }
        }
        if (pass == 0)
            for (int a = 0; a < 4; a++)
                for (size_t j = 0; j < n; j++) {
                    if (r->n_at[a][j] && !(r->at[a][j] = malloc(r->n_at[a][j] * sizeof **r->at))) return MP__NOMEM();
                    r->n_at[a][j] = 0;
                }
    }
    return MP_OK;
}

/* Residencies, their plan, the pools and the per-step lists. */
static mp_status prepare(sw_run *r, const mp_swap_plan_t *plan, const mp_swap_sim_t *sim, mp_swap_run_t *out) {
    const mp_graph_t *g = r->g;
    size_t nt = mp_graph_tensor_count(g), nv = r->it->n_vars;
    size_t *tensor_of = malloc((nv + 1) * sizeof *tensor_of), *fa = malloc((nv + 1) * sizeof *fa);
    size_t *la = malloc((nv + 1) * sizeof *la);
    unsigned char *is_out = calloc(nt + 1, 1);
    r->item = calloc(plan->n + 1, sizeof *r->item);
    r->item_by_tensor = malloc((nt + 1) * sizeof *r->item_by_tensor);
    r->first_seg = malloc((nt + 1) * sizeof *r->first_seg);
    r->seg = calloc(nv + 2 * plan->n + 1, sizeof *r->seg);
    r->q[0].v = calloc(plan->n + 1, sizeof(size_t)), r->q[1].v = calloc(plan->n + 1, sizeof(size_t));
    mp_status s = (!tensor_of || !fa || !la || !is_out || !r->item || !r->item_by_tensor || !r->first_seg ||
                   !r->seg || !r->q[0].v || !r->q[1].v) ? MP__NOMEM() : MP_OK;
    if (!s) s = var_tensors(g, r->it, tensor_of);
    if (!s) {
        r->n_items = plan->n;
        s = make_items(r, plan, sim, tensor_of);
    }
    if (!s) {
        access_span(r->it, fa, la);
        for (size_t k = 0; k < g->n_outputs; k++) is_out[g->tensor[g->outputs[k]].root] = 1;
        for (size_t t = 0; t < nt; t++) r->item_by_tensor[t] = SIZE_MAX, r->first_seg[t] = SIZE_MAX;
        for (size_t k = 0; k < r->n_items; k++) r->item_by_tensor[r->item[k].tensor] = k;
        for (size_t v = 0, i = 0; v < nv; v++) {
            size_t i0 = i;
            while (i < r->n_items && r->item[i].var == v) i++;
            size_t t = tensor_of[v];
            r->first_seg[t] = var_segments(r, v, t, i0, i, fa[v], la[v], is_out[t]);
            if (r->first_seg[t] == SIZE_MAX && i0 == i) out->persistent_bytes += r->it->var[v].size;
        }
    }
    mp_plan_t p = {0};
    const char *strategy = r->o->strategy ? r->o->strategy : "auto";
    if (!s) s = mp_plan_compute(r->seg, r->n_segs, strategy, &p);
    if (!s) s = mp_plan_check(r->seg, r->n_segs, &p, NULL);
    if (!s) {
        out->device_bytes = p.footprint;
        r->pool = aligned_alloc(64, (p.footprint + 63) / 64 * 64 + 64);
        r->seg_addr = calloc(r->n_segs + 1, sizeof *r->seg_addr);
        uint64_t host = 0;
        for (size_t k = 0; k < r->n_items; k++) host += (r->item[k].bytes + 63) / 64 * 64;
        r->hostpool = aligned_alloc(64, host + 64);
        if (!r->pool || !r->seg_addr || !r->hostpool) s = MP__NOMEM();
        else {
            memset(r->hostpool, 0, host + 64);
            if (r->o->poison) memset(r->pool, 0xFF, p.footprint);
            for (size_t k = 0; k < r->n_segs; k++) r->seg_addr[k] = r->pool + p.offset[k];
            for (size_t k = 0, off = 0; k < r->n_items; k++) {
                r->item[k].host = r->hostpool + off;
                off += (r->item[k].bytes + 63) / 64 * 64;
            }
            out->host_bytes = host;
        }
    }
    mp_plan_free(&p);
    if (!s) s = alloc_at(r);
    free(tensor_of), free(fa), free(la), free(is_out);
    return s;
}

static void sw_free(sw_run *r) {
    for (int a = 0; a < 4; a++) {
        for (size_t j = 0; r->at[a] && j < r->n_steps; j++) free(r->at[a][j]);
        free(r->at[a]), free(r->n_at[a]);
    }
    free(r->item), free(r->item_by_tensor), free(r->first_seg), free(r->seg), free(r->seg_addr);
    free(r->pool), free(r->hostpool), free(r->q[0].v), free(r->q[1].v);
}

void mp_swap_run_opts_default(mp_swap_run_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->poison = 1;
}

mp_status mp_swap_run(const mp_graph_t *train, const mp_swap_iter_t *it, const mp_swap_plan_t *plan,
                      const mp_swap_sim_t *sim, const mp_swap_run_opts_t *opts, mp_swap_run_t *out) {
    if (out) memset(out, 0, sizeof *out);
    if (!train || !it || !plan || !sim || !out) return mp__err(MP_EINVAL, "exec swap: NULL argument");
    mp_swap_run_opts_t defaults;
    mp_swap_run_opts_default(&defaults);
    size_t n_steps;
    mp_graph_order(train, &n_steps);
    if (it->n_ops != n_steps || sim->n_ops != n_steps)
        return mp__err(MP_EINVAL, "exec swap: the iteration or simulation has %zu/%zu ops, the graph %zu steps",
                       it->n_ops, sim->n_ops, n_steps);
    mp_status s = mp_swap_plan_validate(it, plan);
    if (s) return s;
    sw_run r;
    memset(&r, 0, sizeof r);
    r.g = train, r.it = it, r.o = opts ? opts : &defaults, r.n_steps = n_steps;
    if (pthread_mutex_init(&r.mu, NULL)) return mp__err(MP_ENOMEM, "exec swap: cannot make a mutex");
    if (pthread_cond_init(&r.cv, NULL)) {
        pthread_mutex_destroy(&r.mu);
        return mp__err(MP_ENOMEM, "exec swap: cannot make a condition variable");
    }
    s = prepare(&r, plan, sim, out);
    sw_thread_arg args[2] = {{&r, 0}, {&r, 1}};
    for (int d = 0; d < 2 && !s; d++) {
        if (pthread_create(&r.th[d], NULL, copier, &args[d])) s = mp__err(MP_ENOMEM, "exec swap: cannot start a copy thread");
        else r.started[d] = 1;
    }
    if (!s) {
        mp_exec_opts_t eo = {.seed = r.o->seed, .poison = r.o->poison};
        mp__exec_hooks h = {&r, hook_place, hook_before, hook_after, hook_end};
        s = mp__exec_run_hooked(train, &eo, &h, &out->result);
    }
    stop_threads(&r);   /* a failed run may leave copies queued: dropped */
    out->swaps = r.n_items;
    out->seconds = out->result.seconds;
    out->stall_seconds = r.stall;
    sw_free(&r);
    pthread_cond_destroy(&r.cv);
    pthread_mutex_destroy(&r.mu);
    if (s) mp_swap_run_free(out);
    return s;
}

void mp_swap_run_free(mp_swap_run_t *r) {
    if (!r) return;
    mp_exec_result_free(&r->result);
    memset(r, 0, sizeof *r);
}
