/* report_trace.c -- the report of a memplan-trace/1 file: statistics and
 * the detected period, the live bytes over every event with its peak and
 * the blocks live there, and every strategy planning one iteration (the
 * cleanest one when a period is found, else the whole trace).
 *
 * One pass over the events for the curve (at most RP_TRACE_COLUMNS
 * columns, each the maximum of its events) and one for the blocks live at
 * the peak: O(events). */
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RP_TRACE_COLUMNS 2000

typedef struct trace_names {
    char *text;      /* one "0x..." per record, RP_NAME_LEN bytes each */
    const char **name;
} trace_names;

enum { RP_NAME_LEN = 24 };

static void free_names(void *p) {
    trace_names *t = p;
    if (!t) return;
    free(t->text), free(t->name), free(t);
}

static int no_memory(void) {
    fprintf(stderr, "memplan: out of memory\n");
    return EXIT_INPUT;
}

/* Live bytes over the events, column maxima; the blocks live at the peak. */
static int trace_curve(rp_report *r, const mp_trace_t *t, const mp_trace_stats_t *st) {
    size_t n = 0;
    const mp_event_t *ev = mp_trace_events(t, &n);
    size_t cols = n < RP_TRACE_COLUMNS ? n : RP_TRACE_COLUMNS;
    r->ct = calloc(cols ? cols : 1, sizeof *r->ct);
    r->cv = calloc(cols ? cols : 1, sizeof *r->cv);
    r->live = calloc(st->peak_blocks ? st->peak_blocks : 1, sizeof *r->live);
    if (!r->ct || !r->cv || !r->live) return no_memory();
    uint64_t live = 0;
    for (size_t c = 0; c < cols; c++) r->ct[c] = (uint64_t)((double)c * (double)n / (double)cols);
    for (size_t i = 0, c = 0; i < n; i++) {
        if (ev[i].kind == MP_EV_ALLOC) live += ev[i].size;
        if (ev[i].kind == MP_EV_FREE) live -= ev[i].size;
        while (c + 1 < cols && r->ct[c + 1] <= i) c++;
        if (live > r->cv[c]) r->cv[c] = live;
        /* A block allocated by the peak event and freed after it. */
        if (i <= st->peak_time && ev[i].kind == MP_EV_ALLOC &&
            (ev[i].end == MP_TRACE_NEVER || ev[i].end > st->peak_time) && r->n_live < st->peak_blocks)
            r->live[r->n_live++] = (rp_live){ev[i].handle, ev[i].size, i};
    }
    r->n_curve = cols;
    r->t_end = n;
    r->peak = st->peak_bytes;
    r->peak_t = st->peak_time;
    r->curve_x = "logical time (event index)";
    return EXIT_OK;
}

/* Names the records of events [from, to) by their handles, in order. */
static int name_records(rp_report *r, const mp_trace_t *t, size_t from, size_t to) {
    size_t n = 0, k = 0;
    const mp_event_t *ev = mp_trace_events(t, &n);
    trace_names *tn = calloc(1, sizeof *tn);
    if (!tn) return no_memory();
    r->owned = tn, r->free_owned = free_names;
    tn->text = malloc((r->n_buf ? r->n_buf : 1) * RP_NAME_LEN);
    tn->name = calloc(r->n_buf ? r->n_buf : 1, sizeof *tn->name);
    if (!tn->text || !tn->name) return no_memory();
    for (size_t i = from; i < to && k < r->n_buf; i++) {
        if (ev[i].kind != MP_EV_ALLOC) continue;
        char *s = tn->text + k * RP_NAME_LEN;
        snprintf(s, RP_NAME_LEN, "0x%" PRIx64, ev[i].handle);
        tn->name[k++] = s;
    }
    /* Records are in allocation order: record id k is the k-th allocation. */
    for (size_t i = 0; i < r->n_buf; i++)
        if (r->buf[i].id < k) r->buf[i].name = tn->name[r->buf[i].id];
    return EXIT_OK;
}

int rp_from_trace(rp_report *r, const char *path) {
    mp_trace_t *t = NULL;
    if (mp_trace_read(path, &t) != MP_OK) return cli_read_failed("memplan", path, CLI_TRACE);
    mp_trace_stats_t st;
    mp_period_t pr = {0};
    mp_buffer_t *b = NULL;
    size_t n = 0;
    int rc = EXIT_INPUT;
    if (mp_trace_stats(t, &st) != MP_OK || mp_period_detect(t, NULL, &pr) != MP_OK) goto fail;
    r->kind = "trace";
    r->time_name = "event of the iteration";
    char h[32], h2[32];
    rp_fact_add(r, "events", "%zu: %zu allocations, %zu frees, %zu reads, %zu writes", st.events,
                st.allocs, st.frees, st.reads, st.writes);
    if (st.ops) rp_fact_add(r, "ops", "%zu, %.3f ms in all", st.ops, (double)st.op_ns / 1e6);
    rp_fact_add(r, "peak", "%s live at event %zu (%zu blocks at most)",
                cli_human(st.peak_bytes, h, sizeof h), st.peak_time, st.peak_blocks);
    rp_fact_add(r, "allocated in all", "%s", cli_human(st.bytes, h2, sizeof h2));
    size_t from = 0, to = st.events;
    if (pr.found) {
        rp_fact_add(r, "period", "%zu events, warm-up %zu, %zu iterations, %zu edits", pr.period,
                    pr.prefix, pr.iterations, pr.edits);
        from = pr.start[pr.clean], to = pr.start[pr.clean + 1];
    } else {
        rp_fact_add(r, "period", "none found: the plan covers the whole trace");
    }
    if ((rc = trace_curve(r, t, &st))) goto done;
    rc = EXIT_INPUT;
    if (mp_trace_records(t, from, to, &b, &n) != MP_OK) goto fail;
    /* rp_plan_all draws the plan and its own curve: keep the trace's. */
    uint64_t *ct = r->ct, *cv = r->cv, peak = r->peak, peak_t = r->peak_t, t_end = r->t_end;
    size_t nc = r->n_curve;
    r->ct = r->cv = NULL;
    rc = rp_plan_all(r, b, n);
    free(r->ct), free(r->cv);
    r->ct = ct, r->cv = cv, r->n_curve = nc, r->peak = peak, r->peak_t = peak_t, r->t_end = t_end;
    if (rc) goto done;
    if ((rc = name_records(r, t, from, to))) goto done;
    if (r->best < r->n_rows)
        snprintf(r->plan_note, sizeof r->plan_note,
                 "%s of the %zu allocations of events [%zu, %zu)%s; names are handles",
                 r->row[r->best].name, n, from, to,
                 pr.found ? " (the iteration with the fewest edits)" : " (the whole trace)");
    goto done;
fail:
    fprintf(stderr, "memplan: %s: %s\n", path, mp_last_error());
done:
    free(b);
    mp_period_free(&pr);
    mp_trace_free(t);
    return rc;
}
