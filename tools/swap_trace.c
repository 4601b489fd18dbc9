/* swap_trace.c -- `memplan swap` and traces: TRACE as the input (a
 * memplan-trace/1 trace with op boundaries becomes the timed iteration),
 * and `--write-trace FILE` on a graph (the step's trace, op times from the
 * device model, or recorded on the reference executor with --device run). */
#include "cli.h"
#include "swap_cli.h"

#include <stdio.h>
#include <string.h>

int cli_swap_trace_iter(const char *path, mp_swap_iter_t *it) {
    mp_trace_t *t;
    if (mp_trace_read(path, &t) != MP_OK) return cli_read_failed("memplan swap", path, CLI_TRACE);
    mp_status s = mp_swap_iter_from_trace(t, it);
    size_t ops = mp_trace_op_count(t);
    mp_trace_free(t);
    if (!s) return EXIT_OK;
    if (!ops) {
        fprintf(stderr,
                "memplan swap: %s: %s.\n"
                "A malloc/free trace (such as the preload library's MEMPLAN_TRACE) has none; record\n"
                "one from a graph with 'memplan swap --write-trace OUT.trace [--device NAME|run] GRAPH'\n"
                "(--device run: recorded on the reference executor, kernel times measured).\n",
                path, mp_last_error());
        return EXIT_INPUT;
    }
    fprintf(stderr, "memplan swap: %s: %s\n", path, mp_last_error());
    return EXIT_INPUT;
}

int cli_swap_write_trace(const char *out, const mp_graph_t *train, const mp_swap_device_t *dev, bool measure,
                         bool json) {
    mp_trace_t *t = NULL;
    mp_status s;
    if (measure) {
        fprintf(stderr, "memplan swap: recording the step on the reference executor (3 runs)...\n");
        s = mp_swap_trace_record(train, 3, &t);
    } else {
        mp_swap_iter_t it;
        s = mp_swap_iter_from_graph(train, dev, &it);
        if (!s) s = mp_swap_iter_to_trace(&it, &t);
        mp_swap_iter_free(&it);
    }
    if (!s) s = mp_trace_write(out, t);
    mp_trace_stats_t st = {0};
    if (!s) s = mp_trace_stats(t, &st);
    mp_trace_free(t);
    if (s) return fprintf(stderr, "memplan swap: %s\n", mp_last_error()), EXIT_INPUT;
    if (!strcmp(out, "-")) return EXIT_OK;
    if (json) {
        printf("{\"output\":");
        cli_json_string(out);
        printf(",\"device\":\"%s\",\"events\":%zu,\"ops\":%zu,\"op_ns\":%llu,\"allocs\":%zu,\"peak_bytes\":%llu}\n",
               measure ? "run" : dev->name, st.events, st.ops, (unsigned long long)st.op_ns, st.allocs,
               (unsigned long long)st.peak_bytes);
    } else {
        char h[32];
        printf("wrote %s: %zu ops (%.3f ms, %s), %zu blocks, peak %s live\n", out, st.ops, (double)st.op_ns / 1e6,
               measure ? "measured on the reference executor" : dev->name, st.allocs,
               cli_human(st.peak_bytes, h, sizeof h));
    }
    return EXIT_OK;
}
