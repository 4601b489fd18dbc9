/* graph_stages.c -- the memory stages of `memplan graph`: what one graph
 * needs with every tensor in its own memory, with in-place ops, with the
 * counter algorithm's sharing (optionally parallel-safe), and with each core
 * planner placing the in-place storages.  Every stage is proven by
 * mp_graph_plan_check before it is reported. */
#include "graph_stages.h"

#include <stdlib.h>
#include <string.h>

static int fail(void) {
    fprintf(stderr, "memplan: %s\n", mp_last_error());
    return EXIT_INPUT;
}

/* Appends a zeroed stage named key/label; NULL when out of memory. */
static gs_stage *add_stage(gs_result *r, const char *key, const char *label) {
    gs_stage *s = realloc(r->stage, (r->n + 1) * sizeof *s);
    if (!s) return NULL;
    r->stage = s;
    s = &r->stage[r->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->key, sizeof s->key, "%s", key);
    snprintf(s->label, sizeof s->label, "%s", label);
    return s;
}

/* Storages by opts, placed by strategy (NULL: end to end), then proven. */
static int run_stage(const mp_graph_t *g, gs_result *r, const char *key, const char *label,
                     const mp_share_opts_t *opts, const char *strategy, bool all) {
    gs_stage *s = add_stage(r, key, label);
    if (!s) {
        fprintf(stderr, "memplan: out of memory\n");
        return EXIT_INPUT;
    }
    double t0 = cli_now_ms();
    if (mp_graph_share(g, opts, &s->plan) != MP_OK) return fail();
    const mp_strategy_info_t *info = strategy ? mp_strategy_find(strategy) : NULL;
    if (all && info && info->all_limit && s->plan.n_storages > info->all_limit) {
        s->skipped = true;
        mp_graph_plan_free(&s->plan);
        return EXIT_OK;
    }
    if (strategy && mp_graph_plan_place(g, &s->plan, strategy) != MP_OK) return fail();
    s->ms = cli_now_ms() - t0;
    if (mp_graph_plan_check(g, &s->plan, opts->parallel) != MP_OK) {
        fprintf(stderr, "memplan: stage %s: plan rejected by the checker: %s\n", key,
                mp_last_error());
        return EXIT_INVALID;
    }
    s->footprint = s->plan.footprint;
    s->n_inplace = s->plan.n_inplace;
    s->n_reused = s->plan.n_reused;
    return EXIT_OK;
}

/* Offsets lower bound of the half-step records of plan p. */
static int bound_of(const mp_graph_t *g, const mp_graph_plan_t *p, uint64_t *lb) {
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_plan_t pl = {0};
    mp_bounds_t bd = {0};
    mp_status st = mp_graph_plan_records(g, p, &b, &n, &pl);
    if (st == MP_OK && n) st = mp_bounds_compute(b, n, &bd);
    free(b);
    mp_plan_free(&pl);
    if (st != MP_OK) return fail();
    *lb = bd.offsets;
    return EXIT_OK;
}

int gs_compute(const mp_graph_t *g, const gs_request *req, gs_result *out) {
    memset(out, 0, sizeof *out);
    mp_share_opts_t o = {.include_persistent = req->include_persistent};
    int rc = run_stage(g, out, "none", "none (every tensor its own memory)", &o, NULL, false);
    if (rc) return rc;
    if ((rc = bound_of(g, &out->stage[0].plan, &out->lower_bound))) return rc;

    o.inplace = 1;
    if (req->inplace && (rc = run_stage(g, out, "inplace", "in-place", &o, NULL, false))) return rc;
    o.share = 1;
    if (req->share && (rc = run_stage(g, out, "share", "sharing (counter, with in-place)", &o, NULL, false)))
        return rc;
    o.parallel = MP_PARALLEL_ANCESTOR;
    if (req->ancestor && (rc = run_stage(g, out, "share-parallel-ancestor",
                                         "sharing, parallel-safe (ancestor)", &o, NULL, false)))
        return rc;
    o.parallel = MP_PARALLEL_COLOUR;
    if (req->colour && (rc = run_stage(g, out, "share-parallel-colour",
                                       "sharing, parallel-safe (path colouring)", &o, NULL, false)))
        return rc;

    o.share = 0;
    o.parallel = MP_PARALLEL_ANY;
    for (size_t i = 0; i < req->n_strategies; i++) {
        char key[64], label[96];
        snprintf(key, sizeof key, "inplace+%s", req->strategies[i]);
        snprintf(label, sizeof label, "in-place + %s", req->strategies[i]);
        if ((rc = run_stage(g, out, key, label, &o, req->strategies[i], req->all))) return rc;
    }
    /* The bound every in-place placement is measured against. */
    mp_graph_plan_t ip = {0};
    if (mp_graph_share(g, &o, &ip) != MP_OK) return fail();
    rc = bound_of(g, &ip, &out->lower_bound_inplace);
    mp_graph_plan_free(&ip);
    return rc;
}

const gs_stage *gs_best(const gs_result *r) {
    const gs_stage *best = NULL;
    for (size_t i = 0; i < r->n; i++)
        if (!r->stage[i].skipped && (!best || r->stage[i].footprint < best->footprint))
            best = &r->stage[i];
    return best;
}

void gs_free(gs_result *r) {
    for (size_t i = 0; i < r->n; i++) mp_graph_plan_free(&r->stage[i].plan);
    free(r->stage);
    memset(r, 0, sizeof *r);
}
