/* bench_streams.c -- how heavy-tailed the exact search's proofs are: the
 * nodes each sequence of static orders needs to prove a file's optimum
 * (bench/exact/streams; numbers in docs/exact.md, "How lucky a proof is").
 *
 * Per records file and per stream s in [S0, S1]: mp__xminimise from auto's
 * plan with the orders of stream s (0: those of mp_exact_solve and of
 * anytime auto's first worker, 1: its second worker's, 2, 3, ...: others of
 * the same kind), one thread, no time limit in the way (60 s) and at most
 * --nodes nodes.  Prints the nodes used, with '*' where no proof came.
 * Node counts do not depend on the machine.
 *
 *     bench_streams [--nodes N] S0 S1 FILE.csv... */
#include "exact/exact.h"
#include "strategies/strategies.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int one(const char *path, unsigned s0, unsigned s1, uint64_t nodes) {
    mp_buffer_t *b = NULL, *nb = NULL;
    size_t n;
    mp_exact_opts_t o;
    mp_plan_t start = {0};
    mp_auto_report_t ar;
    if (mp_records_read(path, &b, &n) != MP_OK || mp__xprepare(b, n, NULL, &o, &nb) != MP_OK ||
        mp__auto(nb, n, &start, &ar) != MP_OK) {
        fprintf(stderr, "bench_streams: %s: %s\n", path, mp_last_error());
        free(b), free(nb);
        return 1;
    }
    o.time_limit = 60, o.node_limit = nodes, o.nodes_per_buffer = 0;
    const char *name = strrchr(path, '/');
    printf("%s", name ? name + 1 : path);
    int rc = 0;
    uint64_t *off = malloc((n ? n : 1) * sizeof *off);
    for (unsigned s = s0; off && s <= s1; s++) {
        memcpy(off, start.offset, n * sizeof *off);
        mp__xhooks h = {.stream = s};
        mp_exact_report_t r;
        if (mp__xminimise(nb, n, &o, off, ar.winner, &h, &r) != MP_OK) {
            rc = 1;
            break;
        }
        printf(" %llu%s", (unsigned long long)r.nodes, r.status == MP_EXACT_OPTIMAL ? "" : "*");
        fflush(stdout);
    }
    printf("\n");
    if (!off) rc = 1;
    free(off), mp_plan_free(&start), free(nb), free(b);
    return rc;
}

int main(int argc, char **argv) {
    uint64_t nodes = 4000000;
    int a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--nodes") == 0) nodes = strtoull(argv[a + 1], NULL, 10), a += 2;
    if (argc - a < 3) {
        fprintf(stderr, "usage: bench_streams [--nodes N] S0 S1 FILE.csv...\n");
        return 2;
    }
    unsigned s0 = (unsigned)atoi(argv[a]), s1 = (unsigned)atoi(argv[a + 1]);
    int rc = 0;
    for (a += 2; a < argc; a++) rc |= one(argv[a], s0, s1, nodes);
    return rc;
}
