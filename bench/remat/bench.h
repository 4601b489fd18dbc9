/* bench.h -- what the files of bench_remat share: the options, JSON-line
 * rows on the output (out.c), one model measured under every policy
 * (model.c), and the sections (bench_remat.c, exec.c). */
#ifndef BENCH_REMAT_BENCH_H
#define BENCH_REMAT_BENCH_H

#include "memplan.h"
#include "models.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct opts {
    int quick;
    const char *out;
    const char *only;
    const char *corpus;
    const char *big_strategy;   /* placement for graphs with more forward nodes than big_nodes */
    size_t big_nodes;
    size_t resnet_max, lstm_max, lstm_min, lstm_trained_max;
    size_t optimal_max_cuts;    /* skip the chain DP on longer chains (its time) */
    int reps;
} opts;


extern opts O;           /* the command line */
extern FILE *OUT;        /* JSON lines */
extern int FAILURES;     /* rows with "status": "error" */
extern double T_START;

/* One JSON object per line, built field by field. */
typedef struct row {
    char buf[8192];
    size_t len;
} row;

double now(void);
void progress(const char *fmt, ...);
void r_raw(row *r, const char *fmt, ...);
void r_key(row *r, const char *k);
void r_str(row *r, const char *k, const char *v);
void r_u64(row *r, const char *k, uint64_t v);
void r_num(row *r, const char *k, double v);
void r_begin(row *r, const char *section, const char *model);
void r_end(row *r);
void r_error(row *r, mp_status s);
int wanted(const char *section);

extern const char *const POLICIES[];
#define N_POLICIES 8

/* What a model row names besides the measurement. */
typedef struct model_id {
    const char *section, *model, *family;
    double param;            /* depth or T, the x of the plots */
    const char *param_name;  /* "depth", "T", "n", "" */
} model_id;

void r_model(row *r, const model_id *m);
void r_eval(row *r, const mp_remat_eval_t *e);
void run_model(const model_id *m, const mp_graph_t *fwd, int grid);

void section_exec(void);

#endif
