/* bench_peak.c -- every peak-first order (src/exact/peak.c) as one whole-plan
 * first fit, per records file: footprint, gap to the max-load bound, and
 * seconds (bench/exact/peak builds and runs it).  Every plan goes through
 * the checker.  Uses the library's internal interface (src/exact/exact.h).
 *
 *     bench_peak FILE.csv...                                              */
#include "exact/exact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const key_name[] = {"size", "start", "lifetime", "end", "longer arm"};
/* the variants' keys, in peak.c's order (peak group, rest) */
static const unsigned char keys[][2] = {{1, 0}, {0, 1}, {2, 0}, {0, 2}, {4, 0}, {0, 0},
                                        {1, 1}, {2, 1}, {4, 1}, {0, 4}, {3, 0}, {0, 3}};

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_peak FILE.csv...\n");
        return 2;
    }
    if (mp__xpeak_variants() != sizeof keys / sizeof *keys) {
        fprintf(stderr, "bench_peak: peak.c has %u variants, this table %zu\n",
                mp__xpeak_variants(), sizeof keys / sizeof *keys);
        return 2;
    }
    int bad = 0;
    printf("| instance | variant | peak's buffers by | the rest by | footprint | gap | s |\n"
           "|---|---|---|---|---|---|---|\n");
    for (int f = 1; f < argc; f++) {
        mp_buffer_t *raw, *b;
        size_t n;
        if (mp_records_read(argv[f], &raw, &n) != MP_OK || mp__normalize(raw, n, &b) != MP_OK) {
            fprintf(stderr, "bench_peak: %s\n", mp_last_error());
            return 1;
        }
        uint64_t lb, acc = 0, amax = 1;
        for (size_t i = 0; i < n; i++) amax = mp__max64(amax, b[i].align);
        size_t *order = malloc((n ? n : 1) * sizeof *order);
        uint64_t *off = malloc((n ? n : 1) * sizeof *off);
        if (!order || !off || mp__offsets_bound(b, n, &lb) != MP_OK) return 1;
        const char *name = strrchr(argv[f], '/') ? strrchr(argv[f], '/') + 1 : argv[f];
        for (unsigned v = 0; v < mp__xpeak_variants(); v++) {
            acc = 0; /* stacked, a gap of the largest alignment between: worse than any fit */
            for (size_t i = 0; i < n; i++) off[i] = mp__align_up(acc + amax, amax), acc = off[i] + b[i].size;
            double t0 = mp__xnow();
            mp__xlns *l;
            bool better;
            if (mp__xpeak_order(b, n, v, order) != MP_OK || mp__xlns_new(b, n, off, 1, &l) != MP_OK ||
                mp__xlns_rebuild_order(l, order, &better) != MP_OK) {
                fprintf(stderr, "bench_peak: %s\n", mp_last_error());
                return 1;
            }
            double sec = mp__xnow() - t0;
            uint64_t fp = mp__xlns_footprint(l);
            mp_plan_t p = {.n = n, .offset = (uint64_t *)mp__xlns_plan(l), .footprint = fp};
            if (mp_plan_check(b, n, &p, NULL) != MP_OK) {
                fprintf(stderr, "bench_peak: %s variant %u: %s\n", name, v, mp_last_error());
                bad = 1;
            }
            printf("| %s | %u | %s | %s | %llu | +%.3f%% | %.2f |\n", name, v, key_name[keys[v][0]],
                   key_name[keys[v][1]], (unsigned long long)fp,
                   lb ? 100.0 * ((double)fp - (double)lb) / (double)lb : 0.0, sec);
            mp__xlns_free(l);
        }
        free(order), free(off), free(b), free(raw);
    }
    return bad;
}
