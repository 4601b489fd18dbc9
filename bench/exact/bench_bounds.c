/* bench_bounds.c -- the window lower bound (src/exact/bound.c) on DSA
 * instances, and why it does or does not rise (bench/exact/bounds).
 *
 * Per records file: the max-load bound; mp_exact_lower_bound within
 * --time seconds (no node limit) and its time; the windows of at most 17
 * sections alone (what anytime auto spends first) and their time; then a census at the
 * max-load bound: for each width of --widths, every window of that many
 * consecutive sections whose fullest section is within 4% of the bound is
 * decided at the bound with --budget nodes (restarts over static orders),
 * counting fits / refuted / unknown.  One refuted window would raise the
 * bound; windows that fit show where no window bound can help.
 *
 *     bench_bounds [--time S] [--budget N] [--widths W,W,...] FILE.csv... */
#include "exact/exact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mp__xanswer decide(const mp_buffer_t *c, size_t m, uint64_t cap, uint64_t budget) {
    size_t *idx = NULL, *at = NULL, np = 0;
    mp__xanswer res = MP__X_YES;
    if (mp__xsplit(c, m, &idx, &at, &np) != MP_OK) return MP__X_UNKNOWN;
    for (size_t k = 0; k < np && res != MP__X_NO; k++) {
        mp__xpart p;
        mp__xsearch *ws;
        if (mp__xpart_build(c, idx + at[k], at[k + 1] - at[k], &p) != MP_OK) exit(1);
        if (mp__xsearch_new(&p, &ws) != MP_OK) exit(1);
        uint32_t *order = malloc(p.n * sizeof *order);
        double *sc = malloc(3 * p.n * sizeof *sc);
        uint64_t *off = malloc(p.n * sizeof *off);
        if (!order || !sc || !off) exit(1);
        mp__xanswer a = MP__X_UNKNOWN;
        mp__xlimit lim = {0};
        for (uint64_t bud = 1000; a == MP__X_UNKNOWN && bud <= budget; bud *= 2) {
            mp__xorder(&p, (unsigned)(bud / 1000) % 7, mp__xsearch_weights(ws), order, sc);
            mp__xsearch_run(ws, order, cap, bud, true, &lim, &a, off);
        }
        if (a != MP__X_YES) res = a;
        mp__xsearch_free(ws);
        free(order), free(sc), free(off);
        mp__xpart_free(&p);
    }
    free(idx), free(at);
    return res;
}

static void census(const mp_buffer_t *b, size_t n, uint64_t lo, const char *widths,
                   uint64_t budget) {
    size_t *all = malloc(n * sizeof *all);
    mp_buffer_t *c = malloc(n * sizeof *c);
    mp__xpart w;
    if (!all || !c) exit(1);
    for (size_t i = 0; i < n; i++) all[i] = i;
    if (mp__xpart_build(b, all, n, &w) != MP_OK) exit(1);
    uint64_t *start = calloc(w.ns + 1, sizeof *start), *load = calloc(w.ns, sizeof *load);
    if (!start || !load) exit(1);
    for (size_t i = 0; i < n; i++) {
        start[w.sf[i]] = b[i].first, start[w.sl[i] + 1] = b[i].last + 1;
        for (uint32_t t = w.sf[i]; t <= w.sl[i]; t++) load[t] += b[i].size;
    }
    printf("| width (of %zu sections) | windows | fit | refuted | unknown | s |\n|---|---|---|---|---|---|\n",
           w.ns);
    for (const char *p = widths; *p;) {
        size_t wd = strtoul(p, (char **)&p, 10);
        if (*p == ',') p++;
        if (!wd || wd > w.ns) continue;
        int yes = 0, no = 0, unk = 0;
        double t0 = mp__xnow();
        for (size_t a = 0; a + wd <= w.ns; a++) {
            size_t z = a + wd - 1, m = 0;
            uint64_t mx = 0;
            for (size_t t = a; t <= z; t++) mx = mp__max64(mx, load[t]);
            if (mx < lo - lo / 25) continue;
            for (size_t i = 0; i < n; i++)
                if (w.sf[i] <= z && w.sl[i] >= a) {
                    c[m] = b[i];
                    c[m].first = mp__max64(b[i].first, start[a]);
                    c[m].last = mp__min64(b[i].last, start[z + 1] - 1);
                    m++;
                }
            mp__xanswer r = decide(c, m, lo, budget);
            yes += r == MP__X_YES, no += r == MP__X_NO, unk += r == MP__X_UNKNOWN;
        }
        printf("| %zu | %d | %d | %d | %d | %.1f |\n", wd, yes + no + unk, yes, no, unk,
               mp__xnow() - t0);
        fflush(stdout);
    }
    mp__xpart_free(&w);
    free(all), free(c), free(start), free(load);
}

int main(int argc, char **argv) {
    double tl = 10;
    uint64_t budget = 32000;
    const char *widths = "3,9,17,33,65,97";
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        if (!strcmp(argv[i], "--time")) tl = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--budget")) budget = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--widths")) widths = argv[i + 1];
        else break;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: bench_bounds [--time S] [--budget N] [--widths W,...] FILE.csv...\n");
        return 2;
    }
    for (; i < argc; i++) {
        mp_buffer_t *b0, *b;
        size_t n;
        mp_exact_opts_t o = {.time_limit = tl}, xo;
        if (mp_records_read(argv[i], &b0, &n) != MP_OK || mp__xprepare(b0, n, &o, &xo, &b) != MP_OK) {
            fprintf(stderr, "bench_bounds: %s\n", mp_last_error());
            return 1;
        }
        uint64_t load = 0, lb = 0;
        if (mp__offsets_bound(b, n, &load) != MP_OK) return 1;
        double t0 = mp__xnow();
        if (mp_exact_lower_bound(b0, n, &o, &lb) != MP_OK) return 1;
        printf("\n%s: %zu buffers, max-load bound %llu, window bound %llu (%+.2f%%) in %.1f s "
               "(limit %g s)\n\n", argv[i], n, (unsigned long long)load, (unsigned long long)lb,
               100.0 * ((double)lb - (double)load) / (double)load, mp__xnow() - t0, tl);
        mp__xlimit lim = {.deadline = mp__xnow() + tl};
        uint64_t lo17 = load;
        t0 = mp__xnow();
        if (mp__xbound_raise(b, n, 17, &lim, &lo17) != MP_OK) return 1;
        printf("windows of at most 17 sections (anytime auto's share): bound %llu in %.3f s\n\n",
               (unsigned long long)lo17, mp__xnow() - t0);
        census(b, n, load, widths, budget);
        free(b0), free(b);
    }
    return 0;
}
