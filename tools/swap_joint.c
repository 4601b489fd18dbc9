/* swap_joint.c -- `memplan swap --joint`: keep, swap or recompute, per
 * tensor (src/swap/joint.c).  At one --limit, or along a ladder of limits
 * from the plain step's peak down to the least any candidate reaches: the
 * swap-only, recompute-only and joint plans with their simulated
 * overheads, as text or JSON. */
#include "cli.h"
#include "swap_cli.h"

#include <stdio.h>
#include <stdlib.h>

#define CURVE_POINTS 12

static void print_choice_text(const char *what, const mp_swap_choice_t *c) {
    char h[32];
    if (!c->feasible) {
        printf("  %-15s infeasible\n", what);
        return;
    }
    printf("  %-15s %+8.1f%%  peak %-11s recompute %-24s swap %zu\n", what, 100.0 * c->overhead,
           cli_human(c->peak, h, sizeof h), c->remat, c->n_swapped);
}

static void print_choice_json(const char *what, const mp_swap_choice_t *c) {
    printf("\"%s\":{\"feasible\":%s", what, c->feasible ? "true" : "false");
    if (c->feasible) {
        printf(",\"overhead\":%.6f,\"peak\":%llu,\"total_ns\":%llu,\"swapped\":%zu,\"recompute\":", c->overhead,
               (unsigned long long)c->peak, (unsigned long long)c->total_ns, c->n_swapped);
        cli_json_string(c->remat);
    }
    printf("}");
}

int cli_swap_joint(const cli_swap_joint_args *a) {
    mp_graph_t *g;
    if (mp_graph_load(a->path, &g) != MP_OK) return cli_read_failed("memplan swap", a->path, CLI_GRAPH);
    for (size_t t = 0, n = mp_graph_tensor_count(g); t < n; t++)
        if (mp_graph_tensor(g, t)->kind == MP_TENSOR_GRADIENT) {
            mp_graph_free(g);
            fprintf(stderr, "memplan swap: %s: --joint needs a forward graph (this one has gradients: the "
                            "recompute plans build their own backward pass)\n", a->path);
            return EXIT_INPUT;
        }
    mp_swap_joint_opts_t o;
    mp_swap_joint_opts_default(&o);
    o.score = a->score, o.min_size = a->min_size;
    mp_swap_joint_t *j = NULL;
    fprintf(stderr, "memplan swap: building the recompute candidates...\n");
    mp_status s = mp_swap_joint_new(g, a->dev, a->link, &o, &j);
    mp_graph_free(g);
    if (s) return fprintf(stderr, "memplan swap: %s\n", mp_last_error()), EXIT_INPUT;
    uint64_t top = mp_swap_joint_plain_peak(j), lo = mp_swap_joint_least_peak(j);
    size_t n = a->has_limit ? 1 : CURVE_POINTS;
    char h1[32], h2[32];
    if (a->json) printf("{\"graph\":"), cli_json_string(a->path),
                 printf(",\"device\":\"%s\",\"link\":\"%s\",\"candidates\":%zu,\"plain_peak\":%llu,"
                        "\"least_peak\":%llu,\"points\":[", a->dev->name, a->link->name, mp_swap_joint_count(j),
                        (unsigned long long)top, (unsigned long long)lo);
    else printf("%s: device %s, link %s, %zu recompute candidates; plain step peak load %s, nothing fits "
                "below %s\n", a->path, a->dev->name, a->link->name, mp_swap_joint_count(j),
                cli_human(top, h1, sizeof h1), cli_human(lo, h2, sizeof h2));
    for (size_t k = 0; k < n && !s; k++) {
        uint64_t limit = a->has_limit ? a->limit : lo + (uint64_t)((double)(top - lo) * (double)(n - 1 - k) / (double)(n - 1));
        mp_swap_choice_t so, ro, jo;
        if ((s = mp_swap_joint_at(j, limit, &so, &ro, &jo))) break;
        if (a->json) {
            printf("%s{\"limit\":%llu,", k ? "," : "", (unsigned long long)limit);
            print_choice_json("swap", &so), printf(",");
            print_choice_json("recompute", &ro), printf(",");
            print_choice_json("joint", &jo), printf("}");
        } else {
            printf("limit %s:\n", cli_human(limit, h1, sizeof h1));
            print_choice_text("swap only", &so);
            print_choice_text("recompute only", &ro);
            print_choice_text("joint", &jo);
        }
        if (!a->json && n > 1) fprintf(stderr, "memplan swap: %zu/%zu limits\r", k + 1, n);
    }
    if (!a->json && n > 1) fprintf(stderr, "\n");
    if (a->json && !s) printf("]}\n");
    mp_swap_joint_free(j);
    if (s) return fprintf(stderr, "memplan swap: %s\n", mp_last_error()), EXIT_INPUT;
    return EXIT_OK;
}
