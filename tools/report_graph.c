/* report_graph.c -- the report of a memplan-graph/1 file (with --train,
 * of its training graph): the stages of `memplan graph` (none, in-place,
 * sharing, in-place placed by each core planner), then the same in-place
 * placement after an order search, each proven by the graph checker and
 * measured against the bound of its kind; the smallest plan is drawn with
 * tensor names, producing ops and shapes. */
#include "graph_stages.h"
#include "report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef struct graph_keep {
    mp_graph_t *g, *searched;   /* the graph, and its reordered copy */
    gs_result given, order;     /* the stages of each */
} graph_keep;

static void free_keep(void *p) {
    graph_keep *k = p;
    if (!k) return;
    gs_free(&k->given), gs_free(&k->order);
    mp_graph_free(k->g), mp_graph_free(k->searched);
    free(k);
}

static int fail(void) {
    fprintf(stderr, "memplan: %s\n", mp_last_error());
    return EXIT_INPUT;
}

/* Both bounds of g's records with in-place writes (the records every
 * placement stage places). */
static int inplace_bounds(const mp_graph_t *g, bool persistent, mp_bounds_t *bd) {
    mp_share_opts_t o = {.inplace = 1, .include_persistent = persistent};
    mp_graph_plan_t ip = {0};
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_plan_t pl = {0};
    memset(bd, 0, sizeof *bd);
    mp_status st = mp_graph_share(g, &o, &ip);
    if (st == MP_OK) st = mp_graph_plan_records(g, &ip, &b, &n, &pl);
    if (st == MP_OK && n) st = mp_bounds_compute(b, n, bd);
    free(b);
    mp_plan_free(&pl);
    mp_graph_plan_free(&ip);
    return st == MP_OK ? EXIT_OK : fail();
}

/* One table row per stage of res; bounds by kind.  *best_stage and
 * *best_graph follow the smallest footprint so far. */
static int add_rows(rp_report *r, const gs_result *res, const mp_bounds_t *ib, const char *prefix,
                    const char *bound_note, const gs_stage **best, bool *best_searched,
                    bool searched) {
    for (size_t i = 0; i < res->n; i++) {
        const gs_stage *s = &res->stage[i];
        rp_row *w = rp_row_add(r);
        if (!w) {
            fprintf(stderr, "memplan: out of memory\n");
            return EXIT_INPUT;
        }
        snprintf(w->name, sizeof w->name, "%s%s", prefix, s->label);
        const mp_strategy_info_t *info =
            strncmp(s->key, "inplace+", 8) ? NULL : mp_strategy_find(s->key + 8);
        bool objects = info && info->kind == MP_KIND_OBJECTS;
        snprintf(w->kind, sizeof w->kind, "%s", !info ? "stage" : objects ? "objects" : "offsets");
        if (!strcmp(s->key, "none")) {
            w->bound = res->lower_bound;
            snprintf(w->bound_name, sizeof w->bound_name, "offsets, no in-place%s", bound_note);
        } else {
            w->bound = objects ? ib->objects : ib->offsets;
            snprintf(w->bound_name, sizeof w->bound_name, "%s, in-place%s",
                     objects ? "objects" : "offsets", bound_note);
        }
        w->footprint = s->footprint;
        w->ms = s->ms;
        w->skipped = s->skipped;
        if (s->skipped) {
            snprintf(w->note, sizeof w->note, "skipped above %zu storages ('all' limit)",
                     info ? info->all_limit : 0);
            continue;
        }
        snprintf(w->note, sizeof w->note, "%zu in place, %zu reused", s->n_inplace, s->n_reused);
        if (!*best || s->footprint < (*best)->footprint) {
            *best = s, *best_searched = searched;
            r->best = r->n_rows - 1;
        }
    }
    return EXIT_OK;
}

/* Names, ops and shapes of the drawn tensors (record id = tensor id). */
static void describe(rp_report *r, const mp_graph_t *g) {
    for (size_t i = 0; i < r->n_buf; i++) {
        const mp_graph_tensor_t *t = mp_graph_tensor(g, (size_t)r->buf[i].id);
        if (!t) continue;
        r->buf[i].name = *t->name ? t->name : NULL;
        const mp_graph_node_t *p = t->producer != MP_GRAPH_NONE ? mp_graph_node(g, t->producer) : NULL;
        r->buf[i].op = p ? p->op : NULL;
        char *s = r->buf[i].shape;
        size_t cap = sizeof r->buf[i].shape, k = 0;
        for (size_t d = 0; d < t->rank && k < cap; d++)
            k += (size_t)snprintf(s + k, cap - k, "%s%" PRIu64, d ? "x" : "", t->shape[d]);
        if (k < cap) snprintf(s + k, cap - k, "%s%s", t->rank ? " " : "scalar ", t->dtype);
    }
}

static int prepare(rp_report *r, graph_keep *k, const rp_graph_opts *o) {
    size_t unchecked = 0;
    if (mp_graph_check_shapes(k->g, &unchecked) != MP_OK) {
        fprintf(stderr, "memplan: %s: %s\n", r->input, mp_last_error());
        return EXIT_INPUT;
    }
    const char *model = mp_graph_model_name(k->g);
    rp_fact_add(r, "model", "%s", *model ? model : "(unnamed)");
    snprintf(r->title, sizeof r->title, "%s%s", model, *model && o->train ? ", training" : "");
    rp_fact_add(r, "shapes", "%zu nodes checked against the op registry, %zu unknown ops",
                mp_graph_node_count(k->g) - unchecked, unchecked);
    if (o->train) {
        mp_backward_opts_t bo = {.add_loss = 1};
        mp_backward_stats_t bs;
        mp_graph_t *t;
        if (mp_graph_backward(k->g, &bo, &t, &bs) != MP_OK) return fail();
        int rc = rp_training(r, k->g);
        mp_graph_free(k->g);
        if (rc) {
            mp_graph_free(t);
            k->g = NULL;
            return rc;
        }
        k->g = t;
        rp_fact_add(r, "backward", "%zu gradient nodes for %zu forward nodes (%zu parameter gradients)",
                    bs.backward_nodes, bs.forward_nodes, bs.param_grads);
    }
    mp_graph_stats_t st;
    char h[32];
    if (mp_graph_stats(k->g, &st) != MP_OK) return fail();
    rp_fact_add(r, "tensors", "%zu (%zu views), %zu nodes", st.tensors, st.aliases, st.nodes);
    rp_fact_add(r, "persistent", "%s of parameters and gradients (%s)",
                cli_human(st.persistent_bytes, h, sizeof h),
                o->include_persistent ? "planned" : "not planned");
    return EXIT_OK;
}

int rp_from_graph(rp_report *r, const char *path, const rp_graph_opts *o) {
    graph_keep *k = calloc(1, sizeof *k);
    if (!k) {
        fprintf(stderr, "memplan: out of memory\n");
        return EXIT_INPUT;
    }
    r->owned = k, r->free_owned = free_keep;
    if (mp_graph_load(path, &k->g) != MP_OK) return cli_read_failed("memplan", path, CLI_GRAPH);
    r->kind = "graph";
    r->time_name = "operator step";
    r->curve_x = "time (operator step)";
    r->tdiv = 2;
    int rc = prepare(r, k, o);
    if (rc) return rc;
    /* The stages: none, in-place, sharing, every planner (honouring 'all'). */
    static const char *names[64];
    size_t ns = 0;
    for (size_t i = 0; i < mp_strategy_count() && ns < 64; i++) names[ns++] = mp_strategy_info(i)->name;
    gs_request req = {.inplace = true, .share = true, .strategies = names, .n_strategies = ns,
                      .include_persistent = o->include_persistent, .all = true};
    if ((rc = gs_compute(k->g, &req, &k->given))) return rc;
    mp_bounds_t ib, ob;
    if ((rc = inplace_bounds(k->g, o->include_persistent, &ib))) return rc;
    char h1[32], h2[32], h3[32];
    rp_fact_add(r, "lower bounds", "%s without in-place; with in-place %s (offsets), %s (objects)",
                cli_human(k->given.lower_bound, h1, sizeof h1), cli_human(ib.offsets, h2, sizeof h2),
                cli_human(ib.objects, h3, sizeof h3));
    /* The order search, then in-place placed by auto in the order found. */
    size_t nn = mp_graph_node_count(k->g);
    size_t *order = malloc((nn ? nn : 1) * sizeof *order);
    mp_order_opts_t oo = {.include_persistent = o->include_persistent};
    mp_order_report_t orep;
    if (!order) {
        fprintf(stderr, "memplan: out of memory\n");
        return EXIT_INPUT;
    }
    mp_status st = mp_graph_order_search(k->g, &oo, order, &orep);
    if (st == MP_OK) st = mp_graph_with_order(k->g, order, &k->searched);
    free(order);
    if (st != MP_OK) return fail();
    rp_fact_add(r, "order search", "peak of live bytes %s in the given order, %s in the order found",
                cli_human(orep.given_peak, h1, sizeof h1), cli_human(orep.searched_peak, h2, sizeof h2));
    static const char *autos[] = {"auto"};
    gs_request oreq = {.strategies = autos, .n_strategies = 1,
                       .include_persistent = o->include_persistent};
    if ((rc = gs_compute(k->searched, &oreq, &k->order))) return rc;
    if ((rc = inplace_bounds(k->searched, o->include_persistent, &ob))) return rc;
    const gs_stage *best = NULL;
    bool searched = false;
    r->best = SIZE_MAX;
    if ((rc = add_rows(r, &k->given, &ib, "", "", &best, &searched, false))) return rc;
    /* Skip the searched order's "none" row: it needs what the given one does. */
    gs_result tail = {k->order.stage + 1, k->order.n - 1, k->order.lower_bound,
                      k->order.lower_bound_inplace};
    if ((rc = add_rows(r, &tail, &ob, "order search + ", ", searched order", &best, &searched, true)))
        return rc;
    if (!best) {
        r->best = r->n_rows;
        return EXIT_OK;
    }
    const mp_graph_t *g = searched ? k->searched : k->g;
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_plan_t pl = {0};
    if (mp_graph_plan_records(g, &best->plan, &b, &n, &pl) != MP_OK) return fail();
    rc = rp_draw_plan(r, b, n, &pl);
    free(b);
    mp_plan_free(&pl);
    if (rc) return rc;
    describe(r, g);
    snprintf(r->plan_note, sizeof r->plan_note,
             "%s: %zu tensors over half-steps (a tensor written in place starts half a step "
             "late)",
             r->row[r->best].name, n);
    return EXIT_OK;
}
