/* fuzz_trace.c -- libFuzzer target: a trace (memplan-trace/1) through
 * statistics, iteration detection and planning.
 *
 * A trace the reader accepts goes through: its statistics, a write/read
 * round trip (same events), iteration detection with the default and with
 * looser parameters (the period's fields must be consistent: iterations
 * back to back, prefix + iterations + tail = the trace), the usage records
 * of the cleanest iteration and of the whole trace planned and checked,
 * and the memory-load picture.  A trace with op boundaries also becomes a
 * timed iteration (mp_swap_iter_from_trace), which must validate, survive
 * its own trace round trip (mp_swap_iter_to_trace) unchanged, and, when
 * small, go through selection with a simulation that adds up. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

/* Planning is superlinear; records windows above this are not planned. */
enum { MAX_BUFFERS = 2000 };

static void plan_window(const mp_trace_t *t, size_t from, size_t to) {
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_status st = mp_trace_records(t, from, to, &b, &n);
    FZ_CHECK(st == MP_OK || st == MP_ENOMEM, "mp_trace_records failed");
    if (st == MP_OK) fz_plan_checked(b, n, MAX_BUFFERS, "auto");
    free(b);
}

static void check_period(const mp_period_t *p, size_t events) {
    if (!p->found) {
        FZ_CHECK(p->period == 0 && p->iterations == 0 && p->start == NULL, "no period, yet fields");
        return;
    }
    FZ_CHECK(p->period > 0 && p->iterations >= 2 && p->start != NULL, "period fields");
    FZ_CHECK(p->start[0] == p->prefix, "prefix is not start[0]");
    for (size_t j = 0; j < p->iterations; j++)
        FZ_CHECK(p->start[j] < p->start[j + 1], "iterations not increasing");
    FZ_CHECK(p->start[p->iterations] + p->tail == events, "prefix + iterations + tail != events");
    FZ_CHECK(p->clean < p->iterations, "clean iteration out of range");
    for (size_t k = 0; k < p->n_cross; k++) FZ_CHECK(p->cross[k] < events, "cross out of range");
}

static void round_trip(const mp_trace_t *t) {
    const char *path = fz_tmp("t.trace");
    FZ_CHECK(mp_trace_write(path, t) == MP_OK, "mp_trace_write failed");
    mp_trace_t *u = NULL;
    FZ_CHECK(mp_trace_read(path, &u) == MP_OK, "a trace written cannot be read back");
    size_t n, m;
    const mp_event_t *a = mp_trace_events(t, &n), *b = mp_trace_events(u, &m);
    FZ_CHECK(n == m, "trace read back: event count differs");
    for (size_t i = 0; i < n; i++)
        FZ_CHECK(a[i].kind == b[i].kind && a[i].handle == b[i].handle && a[i].size == b[i].size &&
                     a[i].ns == b[i].ns && a[i].block == b[i].block && a[i].end == b[i].end,
                 "trace read back: events differ");
    FZ_CHECK(mp_trace_op_count(t) == mp_trace_op_count(u), "trace read back: op count differs");
    for (size_t k = 0; k < mp_trace_op_count(t); k++)
        FZ_CHECK(!strcmp(mp_trace_op_name(t, k), mp_trace_op_name(u, k)), "trace read back: op names differ");
    mp_trace_free(u);
}

/* Selection simulates once per candidate prefix: larger iterations skip it. */
enum { MAX_OPS = 300 };

static int same_iter(const mp_swap_iter_t *a, const mp_swap_iter_t *b) {
    int ok = a->n_ops == b->n_ops && a->n_vars == b->n_vars && a->n_access == b->n_access;
    for (size_t v = 0; ok && v < a->n_vars; v++)
        ok = a->var[v].size == b->var[v].size && a->var[v].persistent == b->var[v].persistent;
    for (size_t j = 0; ok && j < a->n_ops; j++)
        ok = a->op[j].ns == b->op[j].ns && a->op[j].n == b->op[j].n && !strcmp(a->op[j].name, b->op[j].name);
    for (size_t k = 0; ok && k < a->n_access; k++)
        ok = a->access[k].var == b->access[k].var && a->access[k].write == b->access[k].write;
    return ok;
}

static void swap_iteration(const mp_trace_t *t) {
    mp_swap_iter_t it, back;
    mp_status st = mp_swap_iter_from_trace(t, &it);
    if (!mp_trace_op_count(t)) {
        FZ_CHECK(st == MP_EINVAL && it.n_ops == 0, "an iteration from a trace with no ops");
        return;
    }
    if (st == MP_ENOMEM) return;
    FZ_CHECK(st == MP_OK, "mp_swap_iter_from_trace refused a trace with ops");
    FZ_CHECK(mp_swap_iter_validate(&it) == MP_OK, "a trace's iteration does not validate");
    mp_trace_t *u = NULL;
    st = mp_swap_iter_to_trace(&it, &u);
    FZ_CHECK(st == MP_OK || st == MP_ENOMEM, "mp_swap_iter_to_trace failed");
    if (st == MP_OK && mp_swap_iter_from_trace(u, &back) == MP_OK) {
        FZ_CHECK(same_iter(&it, &back), "iteration -> trace -> iteration changed it");
        mp_swap_iter_free(&back);
    }
    mp_trace_free(u);
    mp_swap_link_t link;
    mp_swap_link_preset("pcie3", &link);
    mp_swap_select_opts_t o;
    mp_swap_select_opts_default(&o);
    o.min_size = 1, o.score = MP_SWAP_SWDOA;
    mp_swap_plan_t plan = {0};
    mp_swap_sim_t sim = {0};
    if (it.n_ops <= MAX_OPS && mp_swap_select(&it, &link, &o, &plan, &sim) == MP_OK) {
        FZ_CHECK(mp_swap_plan_validate(&it, &plan) == MP_OK, "a selected plan does not validate");
        FZ_CHECK(sim.stall_ns == 0 && sim.peak <= sim.original_peak && sim.total_ns == sim.compute_ns,
                 "no-overhead selection: the simulation does not add up");
    }
    mp_swap_plan_free(&plan), mp_swap_sim_free(&sim);
    mp_swap_iter_free(&it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FZ_MAX_INPUT) return 0;
    mp_trace_t *t = NULL;
    if (mp_trace_read(fz_file(data, size), &t) != MP_OK) {
        FZ_CHECK(t == NULL && mp_last_error()[0], "a failed read without a message");
        return 0;
    }
    size_t n;
    mp_trace_events(t, &n);
    FZ_CHECK(fz_nul_only_in_comments(data, size, 1), "a NUL byte outside a comment was accepted");
    mp_trace_stats_t s;
    FZ_CHECK(mp_trace_stats(t, &s) == MP_OK, "mp_trace_stats failed");
    FZ_CHECK(s.events == n && s.allocs + s.frees + s.reads + s.writes + s.ops == n, "stats: counts");
    FZ_CHECK(s.peak_bytes <= s.bytes && s.live_bytes <= s.peak_bytes, "stats: bytes");
    round_trip(t);
    mp_period_params_t pp[2];
    mp_period_params_default(&pp[0]);
    pp[1] = (mp_period_params_t){.max_edits = 8, .min_iterations = 3};
    for (int k = 0; k < 2; k++) {
        mp_period_t p;
        mp_status st = mp_period_detect(t, &pp[k], &p);
        FZ_CHECK(st == MP_OK || st == MP_ENOMEM, "mp_period_detect failed");
        if (st != MP_OK) continue;
        check_period(&p, n);
        if (p.found) plan_window(t, p.start[p.clean], p.start[p.clean + 1]);
        if (k == 0)
            FZ_CHECK(mp_trace_write_svg("/dev/null", t, &p, "fuzz") == MP_OK,
                     "mp_trace_write_svg failed");
        mp_period_free(&p);
    }
    plan_window(t, 0, n);
    swap_iteration(t);
    mp_trace_free(t);
    return 0;
}
