/* test_close.c -- the stored plans of bench/exact/certificates/ (found by
 * bench/exact/close, docs/exact-close.md) against their instances.
 *
 * certificates/certificates.txt lists, one a line, an instance (a path
 * under the dsa-bench directory, the first argument), a plan CSV (in the
 * certificates directory, the second argument), the footprint claimed and
 * the claim: "optimal" (the footprint equals the max-load bound, which
 * proves the plan optimal) or "best" (the smallest plan found; no proof).
 * Each plan must pass mp_plan_check against its instance, have the
 * footprint claimed, lie at or above the max-load bound computed by
 * mp_bounds_compute, and meet it exactly when the claim is "optimal".  A
 * plan with one buffer moved onto a buffer it conflicts with must be
 * refused (the check can fail).  Instances absent (no ../shared beside the
 * checkout): skipped (77) with a message. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Moves some buffer onto a buffer it conflicts with and checks that the
 * checker refuses the plan; the offsets are restored. */
static void check_refuses_collision(const mp_buffer_t *b, size_t n, mp_plan_t *pl) {
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (b[i].first <= b[j].last && b[j].first <= b[i].last &&
                pl->offset[j] != pl->offset[i]) {
                uint64_t keep = pl->offset[i];
                pl->offset[i] = pl->offset[j];
                pl->footprint = 0;
                for (size_t k = 0; k < n; k++)
                    if (pl->offset[k] + b[k].size > pl->footprint) pl->footprint = pl->offset[k] + b[k].size;
                MP_CHECK(mp_plan_check(b, n, pl, NULL) == MP_ECONFLICT);
                pl->offset[i] = keep;
                return;
            }
    MP_CHECK(!"no conflicting pair to collide");
}

/* One line of the list; returns false when its instance is absent. */
static bool check_one(const char *dsa, const char *dir, const char *inst, const char *plan,
                      uint64_t claimed, const char *claim) {
    char path[4096], ppath[4096];
    snprintf(path, sizeof path, "%s/%s", dsa, inst);
    snprintf(ppath, sizeof ppath, "%s/%s", dir, plan);
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("  %s absent: %s skipped\n", path, plan);
        return false;
    }
    fclose(f);
    mp_buffer_t *b;
    size_t n;
    if (!MP_CHECK_OK(mp_records_read(path, &b, &n))) return true;
    mp_plan_t pl;
    mp_bounds_t bd;
    if (MP_CHECK_OK(mp_plan_read_csv(ppath, b, n, &pl))) {
        MP_CHECK_OK(mp_plan_check(b, n, &pl, NULL));
        MP_CHECK_EQ_U64(pl.footprint, claimed);
        MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
        MP_CHECK(pl.footprint >= bd.offsets);
        MP_CHECK(!strcmp(claim, "optimal") || !strcmp(claim, "best"));
        if (!strcmp(claim, "optimal")) MP_CHECK_EQ_U64(pl.footprint, bd.offsets);
        else MP_CHECK(pl.footprint > bd.offsets); /* an equal one would be "optimal" */
        printf("  %s: %s footprint %llu, load bound %llu (%+.3f%%): %s\n", inst, plan,
               (unsigned long long)pl.footprint, (unsigned long long)bd.offsets,
               100.0 * ((double)pl.footprint - (double)bd.offsets) / (double)bd.offsets,
               pl.footprint == bd.offsets ? "optimal (proven by the bound)" : "no proof");
        check_refuses_collision(b, n, &pl);
        mp_plan_free(&pl);
    }
    free(b);
    return true;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_close DSA_BENCH_DIR CERTIFICATES_DIR\n");
        return 2;
    }
    char list[4096], line[4096];
    snprintf(list, sizeof list, "%s/certificates.txt", argv[2]);
    FILE *f = fopen(list, "r");
    if (!MP_CHECK(f != NULL)) return mp_test_finish("close");
    int lines = 0, present = 0;
    while (fgets(line, sizeof line, f)) {
        char inst[1024], plan[1024], claim[64];
        unsigned long long fp;
        if (line[0] == '#' || line[0] == '\n') continue;
        if (!MP_CHECK(sscanf(line, "%1023s %1023s %llu %63s", inst, plan, &fp, claim) == 4)) continue;
        lines++;
        present += check_one(argv[1], argv[2], inst, plan, fp, claim);
    }
    fclose(f);
    MP_CHECK(lines > 0);
    if (lines > 0 && present == 0) {
        printf("test_close: skipped: no instance of %s under %s\n", list, argv[1]);
        return 77;
    }
    return mp_test_finish("close");
}
