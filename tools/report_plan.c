/* report_plan.c -- the parts of a report every input shares: summary
 * lines and table rows, every strategy run and checked on one problem, the
 * drawn plan with its memory-load curve and peak, and the records builder.
 *
 * The load curve of n buffers is a sweep over their 2n start and end
 * events sorted by time (ends, at last + 1, before starts): O(n log n).
 * Above RP_MAX_POINTS distinct times the curve is cut into RP_COLUMNS
 * equal time columns, each keeping the maximum of the segments it meets
 * (the peak is never lost), so the page stays small. */
#include "report.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define RP_MAX_POINTS 4000
#define RP_COLUMNS 2000

void rp_fact_add(rp_report *r, const char *key, const char *fmt, ...) {
    if (r->n_facts == RP_MAX_FACTS) return;
    rp_fact *f = &r->fact[r->n_facts++];
    snprintf(f->key, sizeof f->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->value, sizeof f->value, fmt, ap);
    va_end(ap);
}

rp_row *rp_row_add(rp_report *r) {
    rp_row *w = realloc(r->row, (r->n_rows + 1) * sizeof *w);
    if (!w) return NULL;
    r->row = w;
    memset(&w[r->n_rows], 0, sizeof *w);
    return &w[r->n_rows++];
}

static int no_memory(void) {
    fprintf(stderr, "memplan: out of memory\n");
    return EXIT_INPUT;
}

/* ---- the load curve ---------------------------------------------------- */

typedef struct sweep_ev {
    uint64_t t;
    int start;      /* 0: an end (sorted first at equal times), 1: a start */
    uint64_t size;
} sweep_ev;

static int by_time(const void *a, const void *b) {
    const sweep_ev *x = a, *y = b;
    if (x->t != y->t) return x->t < y->t ? -1 : 1;
    return x->start - y->start;
}

/* Keeps at most RP_COLUMNS points: column c covers [a, b) of [t0, t_end)
 * and takes the largest value of the segments meeting it. */
static int downsample(rp_report *r) {
    if (r->n_curve <= RP_MAX_POINTS) return EXIT_OK;
    uint64_t *nt = malloc(RP_COLUMNS * sizeof *nt), *nv = malloc(RP_COLUMNS * sizeof *nv);
    if (!nt || !nv) {
        free(nt), free(nv);
        return no_memory();
    }
    uint64_t t0 = r->ct[0];
    double span = (double)(r->t_end - t0);
    size_t k = 0, i = 0;
    for (size_t c = 0; c < RP_COLUMNS; c++) {
        uint64_t a = t0 + (uint64_t)(span * (double)c / RP_COLUMNS);
        uint64_t b = c + 1 == RP_COLUMNS ? r->t_end : t0 + (uint64_t)(span * (double)(c + 1) / RP_COLUMNS);
        if (b <= a) continue;
        while (i + 1 < r->n_curve && r->ct[i + 1] <= a) i++;   /* segment holding a */
        uint64_t v = 0;
        for (size_t j = i; j < r->n_curve && r->ct[j] < b; j++)
            if (r->cv[j] > v) v = r->cv[j];
        if (k && nv[k - 1] == v) continue;
        nt[k] = a, nv[k] = v, k++;
    }
    free(r->ct), free(r->cv);
    r->ct = nt, r->cv = nv, r->n_curve = k;
    return EXIT_OK;
}

/* Live bytes of r->buf over time, its peak and first peak time. */
static int load_curve(rp_report *r) {
    size_t n = r->n_buf;
    sweep_ev *ev = malloc((2 * n + 1) * sizeof *ev);
    r->ct = malloc((2 * n + 1) * sizeof *r->ct);
    r->cv = malloc((2 * n + 1) * sizeof *r->cv);
    if (!ev || !r->ct || !r->cv) {
        free(ev);
        return no_memory();
    }
    for (size_t i = 0; i < n; i++) {
        ev[2 * i] = (sweep_ev){r->buf[i].first, 1, r->buf[i].size};
        ev[2 * i + 1] = (sweep_ev){r->buf[i].last + 1, 0, r->buf[i].size};
    }
    qsort(ev, 2 * n, sizeof *ev, by_time);
    uint64_t live = 0;
    r->n_curve = 0, r->peak = 0, r->peak_t = n ? ev[0].t : 0, r->t_end = n ? ev[2 * n - 1].t : 1;
    for (size_t j = 0; j < 2 * n; j++) {
        live = ev[j].start ? live + ev[j].size : live - ev[j].size;
        if (j + 1 < 2 * n && ev[j + 1].t == ev[j].t) continue;
        if (live > r->peak) r->peak = live, r->peak_t = ev[j].t;
        if (j + 1 < 2 * n && (!r->n_curve || r->cv[r->n_curve - 1] != live))
            r->ct[r->n_curve] = ev[j].t, r->cv[r->n_curve++] = live;
    }
    free(ev);
    r->plan_peak_t = r->peak_t;
    return downsample(r);
}

int rp_draw_plan(rp_report *r, const mp_buffer_t *b, size_t n, const mp_plan_t *plan) {
    free(r->buf);
    r->buf = calloc(n ? n : 1, sizeof *r->buf);
    if (!r->buf) return no_memory();
    r->n_buf = n;
    for (size_t i = 0; i < n; i++) {
        uint64_t asz = mp_buffer_aligned_size(&b[i]);
        r->buf[i] = (rp_buf){.id = b[i].id, .first = b[i].first, .last = b[i].last,
                             .size = asz ? asz : b[i].size, .offset = plan->offset[i]};
    }
    if (!r->tdiv) r->tdiv = 1;
    return load_curve(r);
}

/* ---- every strategy on one problem ------------------------------------ */

int rp_plan_all(rp_report *r, const mp_buffer_t *b, size_t n) {
    mp_bounds_t bd;
    if (mp_bounds_compute(b, n, &bd) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        return EXIT_INPUT;
    }
    char h1[32], h2[32], h3[32];
    rp_fact_add(r, "buffers", "%zu; every one its own memory: %s", n,
                cli_human(bd.naive, h1, sizeof h1));
    rp_fact_add(r, "lower bounds", "%s (offsets: most bytes live at once), %s (shared objects)",
                cli_human(bd.offsets, h2, sizeof h2), cli_human(bd.objects, h3, sizeof h3));
    mp_plan_t best = {0};
    int rc = EXIT_OK;
    r->best = SIZE_MAX;
    for (size_t i = 0; i < mp_strategy_count() && rc == EXIT_OK; i++) {
        const mp_strategy_info_t *s = mp_strategy_info(i);
        rp_row *w = rp_row_add(r);
        if (!w) {
            rc = no_memory();
            break;
        }
        bool objects = s->kind == MP_KIND_OBJECTS;
        snprintf(w->name, sizeof w->name, "%s", s->name);
        snprintf(w->kind, sizeof w->kind, "%s", objects ? "objects" : "offsets");
        snprintf(w->bound_name, sizeof w->bound_name, "%s", w->kind);
        w->bound = objects ? bd.objects : bd.offsets;
        if (s->all_limit && n > s->all_limit) {
            w->skipped = true;
            snprintf(w->note, sizeof w->note, "skipped above %zu buffers", s->all_limit);
            continue;
        }
        mp_plan_t p = {0};
        double t0 = cli_now_ms();
        mp_status st = mp_plan_compute(b, n, s->name, &p);
        w->ms = cli_now_ms() - t0;
        if (st != MP_OK) {
            fprintf(stderr, "memplan: %s: %s\n", s->name, mp_last_error());
            rc = EXIT_INPUT;
        } else if (mp_plan_check(b, n, &p, NULL) != MP_OK) {
            fprintf(stderr, "memplan: %s made an invalid plan: %s\n", s->name, mp_last_error());
            rc = EXIT_INVALID;
        } else {
            w->footprint = p.footprint;
            if (s->kind == MP_KIND_META)
                snprintf(w->note, sizeof w->note, "chose %s", p.strategy);
            if (r->best == SIZE_MAX || p.footprint < best.footprint) {
                mp_plan_free(&best);
                best = p;
                r->best = r->n_rows - 1;
                continue;
            }
        }
        mp_plan_free(&p);
    }
    if (rc == EXIT_OK && r->best != SIZE_MAX) rc = rp_draw_plan(r, b, n, &best);
    if (r->best == SIZE_MAX) r->best = r->n_rows;
    mp_plan_free(&best);
    return rc;
}

/* ---- records ------------------------------------------------------------ */

int rp_from_records(rp_report *r, const char *path) {
    mp_buffer_t *b = NULL;
    size_t n = 0;
    if (mp_records_read(path, &b, &n) != MP_OK) return cli_read_failed("memplan", path, CLI_RECORDS);
    r->kind = "records";
    r->time_name = "operator step";
    r->curve_x = "time (operator step)";
    int rc = rp_plan_all(r, b, n);
    if (rc == EXIT_OK && r->best < r->n_rows)
        snprintf(r->plan_note, sizeof r->plan_note, "the smallest plan, %s, of the %zu buffers",
                 r->row[r->best].name, n);
    free(b);
    return rc;
}

void rp_free(rp_report *r) {
    if (r->free_owned) r->free_owned(r->owned);
    free(r->row), free(r->buf), free(r->ct), free(r->cv), free(r->live), free(r->extra);
    memset(r, 0, sizeof *r);
}
