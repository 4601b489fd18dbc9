/* format.c -- how numbers and cells are written in the report: times in
 * milliseconds, sizes as 10^e, and one table cell per strategy cell. */
#include "bench.h"

#include <stdio.h>

/* Milliseconds with three significant digits or so. */
const char *fmt_ms(char *buf, size_t len, double sec) {
    double ms = sec * 1e3;
    snprintf(buf, len, ms < 10 ? "%.2f" : ms < 1000 ? "%.1f" : "%.0f", ms);
    return buf;
}

const char *fmt_n(char *buf, size_t len, size_t n) {
    size_t p = 1;
    int e = 0;
    while (p < n && e < 19) p *= 10, e++;
    if (p == n && e >= 3) snprintf(buf, len, "10^%d", e);
    else snprintf(buf, len, "%zu", n);
    return buf;
}

/* A table cell for a strategy cell: time, ratio to the bound, or why not. */
void put_cell(const cell *c, int show, uint64_t lb, int reps) {
    char buf[32];
    switch (c->status) {
    case C_OK:
        if (show == SHOW_CPU) {
            printf(" %s |", fmt_ms(buf, sizeof buf, c->cpu));
        } else if (show == SHOW_RATIO) {
            if (c->footprint == lb) printf(" 1 (=LB) |");
            else printf(" %.4f |", (double)c->footprint / (double)lb);
        } else if (c->reps < reps) {
            printf(" %s (%d run%s) |", fmt_ms(buf, sizeof buf, c->med), c->reps,
                   c->reps == 1 ? "" : "s");
        } else {
            printf(" %s |", fmt_ms(buf, sizeof buf, c->med));
        }
        break;
    case C_INVALID: printf(" **INVALID** |"); break;
    case C_SKIPPED: printf(" %s |", c->msg); break;
    default: printf(" %s |", c->msg); break;
    }
}
