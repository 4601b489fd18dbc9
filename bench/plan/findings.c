/* findings.c -- the "Findings of this run" section: what the measured cells
 * say about the targets (auto at 10^6, greedy-size against its oracle,
 * growth at the largest sizes, slow DSA files, failures, machine load). */
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const strat *find_strat(const bench *B, const char *name) {
    for (size_t i = 0; i < B->n_st; i++)
        if (!strcmp(B->st[i].info->name, name)) return &B->st[i];
    return NULL;
}

void print_findings(const bench *B, const dsa *D) {
    char nb[32], ms[32];
    int last = B->n_ns - 1;
    printf("## Findings of this run (computed)\n\n");
    const strat *au = find_strat(B, "auto");
    if (au && last >= 0) {
        const cell *c = &au->cell[last];
        fmt_n(nb, sizeof nb, B->ns[last]);
        char cp[32];
        if (c->status == C_OK)
            printf("- `auto` plans n=%s DNN-shaped buffers in %s ms (CPU %s ms)%s (target: "
                   "about 1 s for 10^6 on this machine).\n", nb, fmt_ms(ms, sizeof ms, c->med),
                   fmt_ms(cp, sizeof cp, c->cpu),
                   B->ns[last] != 1000000 ? " (10^6 not run)"
                   : c->med <= 1.5 ? ": target met" : ": **target missed**");
        else
            printf("- `auto` at n=%s: %s (target: about 1 s for 10^6): **target missed**.\n", nb,
                   c->msg);
    }
    for (int k = 0; k < B->n_ns; k++) {
        if (B->ns[k] != 100000) continue;
        const cell *f = &B->core[k], *o = &B->oracle[k];
        if (f->status == C_OK && o->status == C_OK)
            printf("- greedy-size at 10^5 is %.0fx faster than its O(n^2) oracle (target: at "
                   "least 10x): %s; plans %s.\n", o->med / f->med,
                   o->med / f->med >= 10 ? "target met" : "**target missed**",
                   o->identical ? "identical" : "**differ**");
        else
            printf("- greedy-size vs oracle at 10^5: not measured (%s).\n",
                   f->status != C_OK ? f->msg : o->msg);
    }
    int any = 0;
    /* Below 10^5 the times are too short to tell n log n from worse. */
    for (size_t i = 0; last >= 1 && B->ns[last] >= 100000 && i < B->n_st; i++) {
        const cell *a = &B->st[i].cell[last - 1], *c = &B->st[i].cell[last];
        if (c->status != C_OK) {
            if (c->status != C_SKIPPED || !B->st[i].info->all_limit) {
                printf("- %s at n=%s: %s.\n", B->st[i].info->name,
                       fmt_n(nb, sizeof nb, B->ns[last]),
                       c->status == C_INVALID ? "**INVALID plan**" : c->msg);
                any = 1;
            }
            continue;
        }
        if (a->status != C_OK || a->med <= 0) continue;
        double e = log(c->med / a->med) / log((double)B->ns[last] / (double)B->ns[last - 1]);
        if (e > 1.3 || c->med > 2.0) {
            printf("- %s grows like n^%.2f between the two largest sizes (%s ms at n=%s).\n",
                   B->st[i].info->name, e, fmt_ms(ms, sizeof ms, c->med),
                   fmt_n(nb, sizeof nb, B->ns[last]));
            any = 1;
        }
    }
    if (!any && last >= 1 && B->ns[last] >= 100000)
        printf("- every strategy run at the largest size grows at most like n^1.3 between the "
               "two largest sizes and takes under 2 s.\n");
    for (size_t i = 0; i < B->n_st; i++) {
        int first = 1;
        for (size_t r = 0; r < D->count; r++) {
            const cell *c = &D->f[r].cell[i];
            if (!D->f[r].n || (c->status == C_OK && c->med <= 1.0) || c->status == C_SKIPPED)
                continue;
            if (first) printf("- %s takes over 1 s on DSA instances:", B->st[i].info->name);
            printf("%s %s (", first ? "" : ",", D->f[r].rel);
            if (c->status == C_OK) printf("%.1f s)", c->med);
            else printf("%s)", c->status == C_INVALID ? "INVALID" : c->msg);
            first = 0;
        }
        if (!first) printf(".\n");
    }
    printf("- invalid plans, failures or crashes in the whole run: %d%s.\n", B->bad,
           B->bad ? " (**see the tables**)" : "");
    char load[64];
    if (B->cpu > 0)
        printf("- wall-clock / CPU time over all timed cells: %.2f (1.00 on a quiet machine; "
               "higher means other processes took the CPU and wall times are inflated); "
               "load average at the end: %s.\n", B->wall / B->cpu, loadavg(load, sizeof load));
    printf("\n");
}
