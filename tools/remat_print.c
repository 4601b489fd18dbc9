/* remat_print.c -- the output of `memplan remat`: the table of policies
 * (peak, bound, ratio to no recomputation, extra forward FLOPs, recomputed
 * and kept values, nodes, time) and the same as JSON. */
#include "remat_cli.h"

#include <string.h>

const char *remat_flops_human(uint64_t f, char *buf, size_t len) {
    static const char *unit[] = {"", "K", "M", "G", "T", "P", "E"};
    double v = (double)f;
    int u = 0;
    while (v >= 1000.0 && u < 6) v /= 1000.0, u++;
    if (u == 0) snprintf(buf, len, "%llu FLOP", (unsigned long long)f);
    else snprintf(buf, len, "%.2f %sFLOP", v, unit[u]);
    return buf;
}

double remat_pct(uint64_t a, uint64_t b) { return b ? 100.0 * (double)a / (double)b : 0.0; }

/* ---- printing ---------------------------------------------------------------------- */

void remat_print_json(const state *s) {
    const opts *o = &s->o;
    printf("{\"graph\":");
    cli_json_string(o->path);
    printf(",\"model\":");
    cli_json_string(mp_graph_model_name(s->fwd));
    printf(",\"forward_nodes\":%zu,\"training_nodes\":%zu,\"forward_flops\":%llu",
           mp_remat_forward_count(s->r), mp_graph_node_count(mp_remat_graph(s->r)),
           (unsigned long long)s->forward_flops);
    printf(",\"strategy\":");
    cli_json_string(o->strategy);
    printf(",\"include_persistent\":%s,\"none_peak\":%llu", o->persistent ? "true" : "false",
           (unsigned long long)s->none_peak);
    if (s->fitted) {
        const row *w = &s->rows[0];
        printf(",\"fit\":{\"budget\":%llu,\"feasible\":%s,\"min_peak\":%llu,\"candidates\":%zu,"
               "\"policy\":",
               (unsigned long long)o->budget, s->fit.feasible ? "true" : "false",
               (unsigned long long)s->fit.min_peak, s->fit.candidates);
        cli_json_string(w->plan);
        printf(",\"peak\":%llu,\"extra_flops\":%llu}", (unsigned long long)w->e.peak,
               (unsigned long long)w->e.extra_flops);
    }
    printf(",\"policies\":[");
    for (size_t i = 0; i < s->n_rows; i++) {
        const row *w = &s->rows[i];
        printf("%s{\"policy\":", i ? "," : "");
        cli_json_string(w->name);
        if (w->status != MP_OK) {
            printf(",\"error\":");
            cli_json_string(w->error ? w->error : "");
            printf(",\"seconds\":%.6f}", w->seconds);
            continue;
        }
        printf(",\"plan\":");
        cli_json_string(w->plan);
        printf(",\"peak\":%llu,\"lower_bound\":%llu,\"ratio\":%.6f,\"extra_flops\":%llu,"
               "\"extra_pct\":%.3f,\"recomputed\":%zu,\"kept\":%zu,\"nodes\":%zu,\"seconds\":%.6f",
               (unsigned long long)w->e.peak, (unsigned long long)w->e.lower_bound,
               s->none_peak ? (double)w->e.peak / (double)s->none_peak : 1.0,
               (unsigned long long)w->e.extra_flops, remat_pct(w->e.extra_flops, w->e.forward_flops),
               w->e.recomputed, w->e.kept, w->e.nodes, w->seconds);
        if (w->ran) {
            printf(",\"identical\":%s", w->identical ? "true" : "false");
            if (!w->identical) {
                printf(",\"differs\":");
                cli_json_string(w->differ);
            }
        }
        if (s->graph && i == s->drawn) printf(",\"drawn\":true");
        putchar('}');
    }
    printf("]}\n");
}

void remat_print_text(const state *s) {
    const opts *o = &s->o;
    char h[32], h2[32], f[32];
    const char *model = mp_graph_model_name(s->fwd);
    const mp_graph_t *train = mp_remat_graph(s->r);
    printf("graph          %s (%s)\n", o->path, *model ? model : "unnamed");
    printf("training       %zu forward nodes (%s per forward pass), %zu nodes with the "
           "backward pass\n",
           mp_remat_forward_count(s->r), remat_flops_human(s->forward_flops, f, sizeof f),
           mp_graph_node_count(train));
    printf("placement      %s, %s\n", o->strategy,
           o->persistent ? "parameters and gradients counted"
                         : "activations only (parameters and gradients not counted)");
    printf("no recompute   %s\n", cli_human(s->none_peak, h, sizeof h));
    if (s->fitted) {
        const row *w = &s->rows[0];
        printf("budget         %s (%llu B): %s fits, %zu candidate plans evaluated, smallest "
               "peak %s\n",
               cli_human(o->budget, h, sizeof h), (unsigned long long)o->budget, w->plan,
               s->fit.candidates, cli_human(s->fit.min_peak, h2, sizeof h2));
    }
    printf("\n%-22s %14s %14s %7s %24s %10s %6s %7s %9s\n", "policy", "peak", "lower bound",
           "/ none", "extra forward FLOPs", "recomputed", "kept", "nodes", "plan ms");
    for (size_t i = 0; i < s->n_rows; i++) {
        const row *w = &s->rows[i];
        const char *name = s->fitted ? w->plan : w->name;
        if (w->status != MP_OK) {
            printf("%-22s no plan: %s\n", name, w->error ? w->error : "");
            continue;
        }
        char extra[48];
        snprintf(extra, sizeof extra, "%s (%.1f%%)", remat_flops_human(w->e.extra_flops, f, sizeof f),
                 remat_pct(w->e.extra_flops, w->e.forward_flops));
        printf("%-22s %14s %14s %7.3f %24s %10zu %6zu %7zu %9.1f\n", name,
               cli_human(w->e.peak, h, sizeof h), cli_human(w->e.lower_bound, h2, sizeof h2),
               s->none_peak ? (double)w->e.peak / (double)s->none_peak : 1.0, extra,
               w->e.recomputed, w->e.kept, w->e.nodes, w->seconds * 1000.0);
        if (!s->fitted && w->plan[0] && strcmp(w->plan, w->name)) printf("%-22s   plan: %s\n", "", w->plan);
    }
    bool any_run = false;
    for (size_t i = 0; i < s->n_rows; i++) {
        const row *w = &s->rows[i];
        if (!w->ran) continue;
        if (!any_run) putchar('\n');
        any_run = true;
        const char *name = s->fitted ? w->plan : w->name;
        if (w->identical)
            printf("run %-18s %zu outputs bit-identical to the plain step (%.3f s)\n", name,
                   w->outputs, w->run_s);
        else printf("run %-18s %s DIFFERS from the plain step\n", name, w->differ);
    }
    if (s->graph && (o->svg || o->graph_out)) {
        const row *w = &s->rows[s->drawn];
        if (!any_run) putchar('\n');
        const char *name = w->plan[0] ? w->plan : w->name;
        if (o->svg) printf("svg            %s: the placement of %s\n", o->svg, name);
        if (o->graph_out) printf("graph out      %s: the training graph of %s\n", o->graph_out, name);
    }
}

