/* report.h -- `memplan report`: what one HTML page says about a records
 * file, a graph or a trace (tools/report_*.c).  The builders fill an
 * rp_report from their input; report_html.c writes it as one
 * self-contained page (inline CSS, SVG drawn by inline JS, no network). */
#ifndef MEMPLAN_REPORT_H
#define MEMPLAN_REPORT_H

#include "cli.h"

/* One row of the strategy (or stage) table. */
typedef struct rp_row {
    char name[96];        /* strategy or stage, e.g. "greedy-size", "in-place + auto" */
    char kind[24];        /* "offsets", "objects" or "stage" */
    uint64_t footprint;
    uint64_t bound;       /* the bound of the row's kind (0: none) */
    char bound_name[48];  /* e.g. "offsets", "objects, after in-place" */
    double ms;
    bool skipped;         /* 'all' skips it at this size (all_limit) */
    char note[96];        /* e.g. "auto chose greedy-size" */
} rp_row;

/* One buffer of the plan drawn. */
typedef struct rp_buf {
    uint64_t id, first, last, size, offset;   /* size: aligned bytes */
    const char *name;     /* NULL: "id N" */
    const char *op;       /* producing op, NULL when unknown */
    char shape[80];       /* "1x64x56x56 float32", "" when unknown */
} rp_buf;

/* A key/value line of the summary. */
typedef struct rp_fact {
    char key[48];
    char value[160];
} rp_fact;

/* A block live at the peak of a trace (records and graphs list rp_bufs). */
typedef struct rp_live {
    uint64_t handle, size;
    size_t since;         /* its allocation event */
} rp_live;

/* A row of the training table (--train): recomputation and swapping. */
typedef struct rp_extra {
    char name[80];        /* "recompute: sqrt", "swap: AutoSwap, no overhead" */
    uint64_t memory;      /* its peak (0: not possible, see note) */
    uint64_t baseline;    /* the peak it is compared with */
    char cost[48];        /* "+33.0% forward FLOPs", "+0.0% time" */
    char note[200];
} rp_extra;

enum { RP_MAX_FACTS = 16 };

typedef struct rp_report {
    char title[256];
    const char *input;        /* the input file as given */
    const char *kind;         /* "records", "graph" or "trace" */
    rp_fact fact[RP_MAX_FACTS];
    size_t n_facts;
    rp_row *row;
    size_t n_rows;
    size_t best;              /* index of the drawn row (n_rows: none) */
    char plan_note[200];      /* what the picture shows, e.g. which iteration */
    rp_buf *buf;              /* the drawn plan */
    size_t n_buf;
    unsigned tdiv;            /* plan time units per step: 1, or 2 (half-steps) */
    const char *time_name;    /* "operator step" or "event in the iteration" */
    /* The memory-load curve: live bytes v[i] from time t[i] to t[i+1] (the
     * last to t_end); of the plan's buffers, or of a trace's events. */
    uint64_t *ct, *cv;
    size_t n_curve;
    uint64_t t_end;
    const char *curve_x;      /* x axis name */
    uint64_t peak, peak_t;
    uint64_t plan_peak_t;     /* the drawn plan's own first peak time */
    rp_live *live;            /* traces: the blocks live at the peak */
    size_t n_live;
    rp_extra *extra;          /* --train: recomputation and swapping */
    size_t n_extra;
    void *owned;              /* what the builder keeps alive (names) */
    void (*free_owned)(void *);
} rp_report;

/* Appends a summary line (printf format); silently drops past RP_MAX_FACTS. */
void rp_fact_add(rp_report *r, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Appends a zeroed row; NULL when out of memory. */
rp_row *rp_row_add(rp_report *r);

/* Plans b with every strategy (skipping those above their all_limit),
 * checks each plan, adds one row per strategy with the bound of its kind,
 * and draws the smallest valid plan: r->buf, the load curve and the peak.
 * Prints the error and returns EXIT_INPUT (EXIT_INVALID for a plan the
 * checker rejects). */
int rp_plan_all(rp_report *r, const mp_buffer_t *b, size_t n);

/* Fills r->buf from b and plan (names etc. left NULL), then the load curve
 * and the peak of those buffers.  EXIT_OK or EXIT_INPUT (out of memory). */
int rp_draw_plan(rp_report *r, const mp_buffer_t *b, size_t n, const mp_plan_t *plan);

/* The builders: each loads its input, fills r and returns EXIT_OK, or
 * prints the error and returns EXIT_INPUT / EXIT_INVALID. */
int rp_from_records(rp_report *r, const char *path);
int rp_from_trace(rp_report *r, const char *path);
typedef struct rp_graph_opts {
    bool train;               /* add the backward pass first */
    bool include_persistent;
} rp_graph_opts;
int rp_from_graph(rp_report *r, const char *path, const rp_graph_opts *o);

/* Adds the training table for the forward graph fwd (tools/report_train.c):
 * recomputation policies and AutoSwap; what the graph does not allow is a
 * note.  EXIT_OK, or EXIT_INPUT when out of memory. */
int rp_training(rp_report *r, const mp_graph_t *fwd);

/* Writes r as one HTML page to path through the library's safe output
 * (a temporary file renamed into place; "-" is standard output).
 * EXIT_OK, or prints the error and returns EXIT_INPUT. */
int rp_write_html(const rp_report *r, const char *path);

/* The page's CSS and script (tools/report_page.c). */
extern const char rp_page_css[];
extern const char rp_page_js[];

void rp_free(rp_report *r);

#endif
