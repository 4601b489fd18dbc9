/* swap_run.c -- `memplan swap --run`: each printed score's plan executed
 * for real (mp_swap_run: a device pool, a host pool, two copy threads) and
 * its outputs compared bit for bit with the plain step's; measured stall
 * next to the simulated one.  Text after the table, or a JSON object. */
#include "cli.h"
#include "swap_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t count_same(const mp_exec_result_t *a, const mp_exec_result_t *b, size_t *n) {
    size_t same = 0;
    *n = 0;
    for (size_t t = 0; t < a->n_tensors && t < b->n_tensors; t++) {
        if (!a->data[t]) continue;
        (*n)++;
        same += b->data[t] && a->bytes[t] == b->bytes[t] && !memcmp(a->data[t], b->data[t], a->bytes[t]);
    }
    return same;
}

int cli_swap_run(const mp_graph_t *train, const mp_swap_iter_t *it, const cli_swap_run_row *rows, size_t n_rows,
                 bool json) {
    if (mp_exec_supported(train) != MP_OK)
        return fprintf(stderr, "memplan swap: --run: %s\n", mp_last_error()), EXIT_INPUT;
    mp_exec_opts_t eo = {.seed = 1, .poison = 1};
    mp_exec_result_t plain;
    fprintf(stderr, "memplan swap: running the plain step...\n");
    if (mp_exec_run(train, &eo, &plain) != MP_OK)
        return fprintf(stderr, "memplan swap: --run: %s\n", mp_last_error()), EXIT_INPUT;
    int rc = EXIT_OK;
    char h1[32], h2[32], h3[32];
    if (json) printf("{\"plain_seconds\":%.6f,\"runs\":[", plain.seconds);
    else printf("\nexecuted (reference CPU executor, copy threads; plain step %.1f ms):\n", plain.seconds * 1e3);
    for (size_t k = 0; k < n_rows && rc == EXIT_OK; k++) {
        const cli_swap_run_row *w = &rows[k];
        fprintf(stderr, "memplan swap: running %s's plan (%zu swaps)...\n", w->score, w->plan->n);
        mp_swap_run_opts_t ro;
        mp_swap_run_opts_default(&ro);
        mp_swap_run_t run;
        if (mp_swap_run(train, it, w->plan, w->sim, &ro, &run) != MP_OK) {
            fprintf(stderr, "memplan swap: --run: %s\n", mp_last_error());
            rc = EXIT_INPUT;
            break;
        }
        size_t n, same = count_same(&plain, &run.result, &n);
        if (same != n) rc = EXIT_INVALID;
        if (json) {
            printf("%s{\"score\":\"%s\",\"swapped\":%zu,\"outputs\":%zu,\"identical\":%zu,\"device_bytes\":%llu,"
                   "\"persistent_bytes\":%llu,\"host_bytes\":%llu,\"seconds\":%.6f,\"stall_seconds\":%.6f,"
                   "\"simulated_stall_ns\":%llu}", k ? "," : "", w->score, w->plan->n, n, same,
                   (unsigned long long)run.device_bytes, (unsigned long long)run.persistent_bytes,
                   (unsigned long long)run.host_bytes, run.seconds, run.stall_seconds,
                   (unsigned long long)w->sim->stall_ns);
        } else {
            printf("  %-6s %4zu swapped: outputs %zu/%zu bit-identical; device pool %s + persistent %s, host %s; "
                   "step %.1f ms, stall %.2f ms (simulated %.2f ms)\n", w->score, w->plan->n, same, n,
                   cli_human(run.device_bytes, h1, sizeof h1), cli_human(run.persistent_bytes, h2, sizeof h2),
                   cli_human(run.host_bytes, h3, sizeof h3), run.seconds * 1e3, run.stall_seconds * 1e3,
                   (double)w->sim->stall_ns / 1e6);
        }
        mp_swap_run_free(&run);
    }
    if (json) printf("]}");
    if (rc == EXIT_INVALID) fprintf(stderr, "memplan swap: --run: a swapped step's outputs differ from the plain step's\n");
    mp_exec_result_free(&plain);
    return rc;
}
