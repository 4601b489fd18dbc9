/* cmd_trace.c -- `memplan trace`: statistics, usage records, the period
 * and the memory-load picture of a recorded malloc/free trace. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: memplan trace stats   [--json] TRACE\n"
    "       memplan trace records [--json] [--iteration] [-o RECORDS.csv] TRACE\n"
    "       memplan trace period  [--json] [--max-edits K] TRACE\n"
    "       memplan trace svg     [--json] [--title TEXT] -o OUT.svg TRACE\n"
    "\n"
    "Reads a trace (docs/trace-format.md: '# memplan-trace/1', then one event a\n"
    "line: 'a HANDLE SIZE [NS]', 'f HANDLE [NS]', 'r|w HANDLE [NS]', and op\n"
    "boundaries 'o DURATION_NS [NAME]' owning the events up to the next one).\n"
    "  stats    events, allocations, bytes, peak live bytes and when, live blocks,\n"
    "           ops and their total time\n"
    "  records  usage records (id,first,last,size; times are event indices) of the\n"
    "           whole trace, or with --iteration of one steady-state iteration\n"
    "           found by period detection (zhang2019 sec. V)\n"
    "  period   the repeating period: warm-up prefix, period, iterations, stray\n"
    "           edits and the blocks that live across iterations\n"
    "  svg      live bytes over logical time, iteration boundaries dashed\n"
    "-o -: write to standard output (and print nothing else there).\n"
    "--max-edits K: stray events tolerated per iteration (default 2; at most p/8).\n";

static void print_period(const mp_period_t *pr, bool json) {
    if (json) {
        printf("\"found\":%s", pr->found ? "true" : "false");
        if (!pr->found) return;
        printf(",\"period\":%zu,\"prefix\":%zu,\"iterations\":%zu,\"tail\":%zu,\"edits\":%zu,"
               "\"clean_iteration\":%zu,\"starts\":[",
               pr->period, pr->prefix, pr->iterations, pr->tail, pr->edits, pr->clean);
        for (size_t j = 0; j <= pr->iterations; j++) printf("%s%zu", j ? "," : "", pr->start[j]);
        printf("],\"cross_blocks\":[");
        for (size_t j = 0; j < pr->n_cross; j++) printf("%s%zu", j ? "," : "", pr->cross[j]);
        printf("]");
        return;
    }
    if (!pr->found) {
        printf("no period found\n");
        return;
    }
    printf("period                   %zu events\n", pr->period);
    printf("warm-up prefix           %zu events\n", pr->prefix);
    printf("full iterations          %zu\n", pr->iterations);
    printf("tail                     %zu events\n", pr->tail);
    printf("stray edits              %zu\n", pr->edits);
    printf("clean iteration          %zu (events %zu..%zu)\n", pr->clean, pr->start[pr->clean],
           pr->start[pr->clean + 1] - 1);
    printf("blocks across iterations %zu\n", pr->n_cross);
}

static const char *sub_name(size_t i) {
    static const char *const subs[] = {"stats", "records", "period", "svg"};
    return i < 4 ? subs[i] : NULL;
}

int cmd_trace(int argc, char **argv) {
    const char *sub = NULL, *path = NULL, *outp = NULL, *title = NULL;
    bool json = false, iteration = false;
    mp_period_params_t pp;
    mp_period_params_default(&pp);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--iteration")) {
            iteration = true;
        } else if (i + 1 < argc && !strcmp(argv[i], "-o")) {
            outp = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--title")) {
            title = argv[++i];
        } else if (i + 1 < argc && !strcmp(argv[i], "--max-edits")) {
            const char *v = argv[++i];
            char *end;
            unsigned long long k = strtoull(v, &end, 10);
            if (!*v || *end || *v == '-') {
                fprintf(stderr, "memplan: --max-edits needs a non-negative integer, got '%s'\n", v);
                return EXIT_INPUT;
            }
            pp.max_edits = (size_t)k;
        } else if ((argv[i][0] == '-' && argv[i][1]) || (sub && path)) {
            fprintf(stderr, "memplan trace: unexpected argument '%s'\n%s", argv[i], help);
            return EXIT_INPUT;
        } else if (!sub) {
            sub = argv[i];
        } else {
            path = argv[i];
        }
    }
    int which = -1;
    for (int i = 0; sub && sub_name(i); i++)
        if (!strcmp(sub, sub_name(i))) which = i;
    if (which < 0 && sub) return cli_unknown("memplan trace", "subcommand", sub, sub_name, NULL);
    if (which < 0) {
        fprintf(stderr, "memplan trace: give a subcommand and a trace file\n%s", help);
        return EXIT_INPUT;
    }
    if (!path) {
        fprintf(stderr, "memplan trace %s: give one trace file\n%s", sub, help);
        return EXIT_INPUT;
    }
    if (which == 3 && !outp) {
        fprintf(stderr, "memplan trace svg: give -o OUT.svg\n");
        return EXIT_INPUT;
    }
    if (which == 3 && !cli_svg_name("-o", outp)) return EXIT_INPUT;
    const cli_output out = {"-o", which == 1 || which == 3 ? outp : NULL};
    if (cli_check_outputs(&path, 1, &out, 1)) return EXIT_INPUT;
    /* With -o -, standard output carries the file alone. */
    bool report = !cli_stdout_output(&out, 1);
    mp_trace_t *t;
    if (mp_trace_read(path, &t) != MP_OK) return cli_read_failed("memplan", path, CLI_TRACE);
    int rc = EXIT_OK;
    mp_period_t pr = {0};
    mp_trace_stats_t st;
    mp_trace_stats(t, &st);
    if ((which >= 2 || iteration) && mp_period_detect(t, &pp, &pr) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        mp_trace_free(t);
        return EXIT_INPUT;
    }
    char h1[32], h2[32];
    if (which == 0) {
        if (json) {
            printf("{\"events\":%zu,\"allocs\":%zu,\"frees\":%zu,\"reads\":%zu,\"writes\":%zu,"
                   "\"bytes\":%llu,\"peak_bytes\":%llu,\"peak_time\":%zu,\"peak_blocks\":%zu,"
                   "\"live_blocks\":%zu,\"live_bytes\":%llu,\"ops\":%zu,\"op_ns\":%llu}\n",
                   st.events, st.allocs, st.frees, st.reads, st.writes,
                   (unsigned long long)st.bytes, (unsigned long long)st.peak_bytes, st.peak_time,
                   st.peak_blocks, st.live_blocks, (unsigned long long)st.live_bytes, st.ops,
                   (unsigned long long)st.op_ns);
        } else {
            printf("events                   %zu\n", st.events);
            printf("allocations              %zu\n", st.allocs);
            printf("frees                    %zu\n", st.frees);
            printf("reads / writes           %zu / %zu\n", st.reads, st.writes);
            printf("bytes allocated          %llu (%s)\n", (unsigned long long)st.bytes,
                   cli_human(st.bytes, h1, sizeof h1));
            printf("peak live bytes          %llu (%s) at event %zu\n",
                   (unsigned long long)st.peak_bytes, cli_human(st.peak_bytes, h2, sizeof h2),
                   st.peak_time);
            printf("peak live blocks         %zu\n", st.peak_blocks);
            printf("live at end              %zu blocks, %llu bytes\n", st.live_blocks,
                   (unsigned long long)st.live_bytes);
            if (st.ops)
                printf("ops                      %zu, %.3f ms in all\n", st.ops, (double)st.op_ns / 1e6);
            if (st.ns_first != MP_TRACE_NO_NS)
                printf("wall time                %.3f ms\n", (double)(st.ns_last - st.ns_first) / 1e6);
        }
    } else if (which == 1) {
        size_t from = 0, to = st.events;
        if (iteration) {
            if (!pr.found) {
                fprintf(stderr, "memplan: %s: no repeating iteration found\n", path);
                rc = EXIT_INPUT;
                goto done;
            }
            from = pr.start[pr.clean];
            to = pr.start[pr.clean + 1];
        }
        mp_buffer_t *b;
        size_t n;
        mp_bounds_t bd = {0};
        if (mp_trace_records(t, from, to, &b, &n) != MP_OK ||
            (n && mp_bounds_compute(b, n, &bd) != MP_OK) ||
            (outp && mp_records_write(outp, b, n) != MP_OK)) {
            fprintf(stderr, "memplan: %s\n", mp_last_error());
            free(b);
            rc = EXIT_INPUT;
            goto done;
        }
        if (report && json) {
            printf("{\"from\":%zu,\"to\":%zu,\"buffers\":%zu,\"lower_bound\":%llu", from, to, n,
                   (unsigned long long)bd.offsets);
            if (outp) printf(",\"output\":"), cli_json_string(outp);
            printf("}\n");
        } else if (report && outp) {
            printf("wrote %zu records of events [%zu, %zu) to %s (lower bound %llu)\n", n, from,
                   to, outp, (unsigned long long)bd.offsets);
        } else if (!outp) {
            printf("id,first,last,size\n");
            for (size_t i = 0; i < n; i++)
                printf("%llu,%llu,%llu,%llu\n", (unsigned long long)b[i].id,
                       (unsigned long long)b[i].first, (unsigned long long)b[i].last,
                       (unsigned long long)b[i].size);
        }
        free(b);
    } else if (which == 2) {
        if (json) printf("{\"events\":%zu,", st.events), print_period(&pr, true), printf("}\n");
        else print_period(&pr, false);
    } else {
        char heading[512];
        cli_title(heading, sizeof heading, title, path);
        if (mp_trace_write_svg(outp, t, &pr, heading) != MP_OK) {
            fprintf(stderr, "memplan: %s\n", mp_last_error());
            rc = EXIT_INPUT;
            goto done;
        }
        if (report && json) {
            printf("{\"output\":"), cli_json_string(outp);
            printf(",\"events\":%zu,\"peak_bytes\":%llu,", st.events,
                   (unsigned long long)st.peak_bytes);
            print_period(&pr, true);
            printf("}\n");
        } else if (report) {
            printf("wrote %s\n", outp);
        }
    }
done:
    mp_period_free(&pr);
    mp_trace_free(t);
    return rc;
}
