/* dsa.c -- part 3: every strategy on the public DSA instances (the *.csv
 * files below --dsa DIR, two of them with --quick), and their tables. */
#include "bench.h"

#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int cmp_str(const void *x, const void *y) {
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Collects the *.csv files below root/rel, recursively. */
static void walk(const char *root, const char *rel, char ***out, size_t *len, size_t *cap) {
    char path[4096];
    snprintf(path, sizeof path, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[4096], full[8192];
        snprintf(sub, sizeof sub, "%s%s%s", rel, rel[0] ? "/" : "", e->d_name);
        snprintf(full, sizeof full, "%s/%s", root, sub);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            walk(root, sub, out, len, cap);
        } else if (strlen(sub) > 4 && !strcmp(sub + strlen(sub) - 4, ".csv") &&
                   mp__grow((void **)out, cap, *len + 1, sizeof **out) == MP_OK) {
            (*out)[(*len)++] = strdup(sub);
        }
    }
    closedir(d);
}

/* --quick keeps two small files, one per source, when they are there. */
static int quick_keep(const char *rel) {
    return !strcmp(rel, "minimalloc/challenging/A.1048576.csv") ||
           !strcmp(rel, "idealloc/somas_tensors/resnet50.csv");
}

static void run_dsa_file(bench *B, const char *dir, dsa_file *f) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, f->rel);
    mp_buffer_t *b = NULL;
    if (mp_records_read(path, &b, &f->n) != MP_OK ||
        mp_bounds_compute(b, f->n, &f->bd) != MP_OK) {
        /* An unreadable input is reported beside the instances; it says
         * nothing about the planners, so it does not fail the run. */
        const char *e = mp_last_error();
        size_t pl = strlen(path);
        snprintf(f->err, sizeof f->err, "%s%s", strncmp(e, path, pl) ? "" : f->rel,
                 strncmp(e, path, pl) ? e : e + pl);
        fprintf(stderr, "bench_plan: %s: not read: %s\n", f->rel, f->err);
        f->n = 0;
        free(b);
        return;
    }
    for (size_t i = 0; i < B->n_st; i++) {
        const mp_strategy_info_t *in = B->st[i].info;
        cell *c = &f->cell[i];
        if (in->all_limit && f->n > in->all_limit) {
            memset(c, 0, sizeof *c);
            c->status = C_SKIPPED;
            snprintf(c->msg, sizeof c->msg, "skipped (n > %zu)", in->all_limit);
        } else {
            job j = {JOB_STRATEGY, in->name, b, f->n, f->bd.offsets, B->o.reps, B->o.cap};
            run_cell(&j, c, B->o.timeout);
            note_bad(B, c);
        }
        progress(f->rel, in->name, c);
    }
    free(b);
}

void run_dsa(bench *B, dsa *D) {
    char **names = NULL;
    size_t len = 0, cap = 0;
    walk(B->o.dsa, "", &names, &len, &cap);
    qsort(names, len, sizeof *names, cmp_str);
    size_t keep = 0, preferred = 0;
    for (size_t i = 0; i < len; i++) preferred += quick_keep(names[i]);
    for (size_t i = 0; i < len; i++) {
        /* --quick: the two preferred files, else the first two found */
        int want = !B->o.quick || (preferred ? quick_keep(names[i]) : keep < 2);
        if (want && mp__grow((void **)&D->f, &D->cap, keep + 1, sizeof *D->f) == MP_OK) {
            memset(&D->f[keep], 0, sizeof D->f[keep]);
            D->f[keep++].rel = names[i];
        } else {
            free(names[i]);
        }
    }
    D->count = keep;
    free(names);
    for (size_t i = 0; i < D->count; i++) run_dsa_file(B, B->o.dsa, &D->f[i]);
}

/* One wide table: rows are files, columns the strategies of one group. */
static void print_dsa_table(const bench *B, const dsa *D, int objects, int times) {
    printf("| instance | buffers |");
    for (size_t i = 0; i < B->n_st; i++)
        if ((B->st[i].info->kind == MP_KIND_OBJECTS) == objects) printf(" %s |", B->st[i].info->name);
    printf("\n|---|---|");
    for (size_t i = 0; i < B->n_st; i++)
        if ((B->st[i].info->kind == MP_KIND_OBJECTS) == objects) printf("---|");
    printf("\n");
    for (size_t r = 0; r < D->count; r++) {
        const dsa_file *f = &D->f[r];
        if (!f->n) continue;
        uint64_t best = UINT64_MAX;
        for (size_t i = 0; i < B->n_st; i++)
            if (f->cell[i].status == C_OK) best = mp__min64(best, f->cell[i].footprint);
        printf("| %s | %zu |", f->rel, f->n);
        for (size_t i = 0; i < B->n_st; i++) {
            if ((B->st[i].info->kind == MP_KIND_OBJECTS) != objects) continue;
            const cell *c = &f->cell[i];
            if (!times && c->status == C_OK && c->footprint == best) {
                printf(" **");
                if (c->footprint == f->bd.offsets) printf("1 (=LB)** |");
                else printf("%.4f** |", (double)c->footprint / (double)f->bd.offsets);
            } else {
                put_cell(c, times ? SHOW_WALL : SHOW_RATIO, f->bd.offsets, B->o.reps);
            }
        }
        printf("\n");
    }
    if (times) return;
    printf("| geometric mean | |");
    for (size_t i = 0; i < B->n_st; i++) {
        if ((B->st[i].info->kind == MP_KIND_OBJECTS) != objects) continue;
        double lg = 0;
        size_t k = 0;
        for (size_t r = 0; r < D->count; r++)
            if (D->f[r].n && D->f[r].cell[i].status == C_OK)
                lg += log((double)D->f[r].cell[i].footprint / (double)D->f[r].bd.offsets), k++;
        if (k) printf(" %.4f (%zu files) |", exp(lg / (double)k), k);
        else printf(" - |");
    }
    printf("\n");
}

void print_dsa(const bench *B, const dsa *D) {
    printf("## 3. Public DSA instances\n\n");
    if (!B->o.dsa) {
        printf("Skipped (--no-dsa).\n\n");
        return;
    }
    if (D->count == 0) {
        printf("Skipped: no instances found under `%s` (a clean clone has no copy; see "
               "--dsa).\n\n", B->o.dsa);
        return;
    }
    printf("MiniMalloc's challenging set A..K (google/minimalloc `benchmarks/`) and "
           "idealloc's traces (cappadokes/idealloc `benchmarks/`), read with "
           "`mp_records_read` (half-open `lower,upper` header). Provenance and licenses: "
           "README.md of the DSA directory.%s Best footprint per row in bold; LB is the "
           "offset lower bound (max live bytes), which need not be reachable.\n\n",
           B->o.quick ? " **--quick: only two files.**" : "");
    printf("| instance | buffers | max live buffers | offset LB | object LB | naive |\n"
           "|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < D->count; r++) {
        const dsa_file *f = &D->f[r];
        if (f->n)
            printf("| %s | %zu | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |\n",
                   f->rel, f->n, f->bd.peak_count, f->bd.offsets, f->bd.objects, f->bd.naive);
        else
            printf("| %s | not read: %s | | | | |\n", f->rel, f->err[0] ? f->err : "empty");
    }
    printf("\n### Footprint / offset LB: offset strategies and auto\n\n");
    print_dsa_table(B, D, 0, 0);
    printf("\n### Footprint / offset LB: shared-object strategies\n\n");
    print_dsa_table(B, D, 1, 0);
    printf("\n### Planning time, ms (median): offset strategies and auto\n\n");
    print_dsa_table(B, D, 0, 1);
    printf("\n### Planning time, ms (median): shared-object strategies\n\n");
    print_dsa_table(B, D, 1, 1);
    printf("\n<details><summary>Every run: exact footprints, validity</summary>\n\n"
           "| instance | strategy | footprint | / LB | time, ms | runs | valid |\n"
           "|---|---|---|---|---|---|---|\n");
    for (size_t r = 0; r < D->count; r++) {
        const dsa_file *f = &D->f[r];
        for (size_t i = 0; f->n && i < B->n_st; i++) {
            const cell *c = &f->cell[i];
            char ms[32];
            printf("| %s | %s%s%s%s |", f->rel, B->st[i].info->name, c->msg[0] && c->status == C_OK ? " (picked " : "",
                   c->status == C_OK ? c->msg : "", c->msg[0] && c->status == C_OK ? ")" : "");
            if (c->status == C_OK)
                printf(" %" PRIu64 " | %.4f | %s | %d | yes |\n", c->footprint,
                       (double)c->footprint / (double)f->bd.offsets,
                       fmt_ms(ms, sizeof ms, c->med), c->reps);
            else
                printf(" - | - | - | - | %s |\n",
                       c->status == C_INVALID ? "**INVALID**" : c->msg);
        }
    }
    printf("\n</details>\n\n");
}

void dsa_free(dsa *D) {
    for (size_t r = 0; r < D->count; r++) free(D->f[r].rel);
    free(D->f);
}
