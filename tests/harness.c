/* harness.c -- counters, messages and plan verification for the tests. */
#include "harness.h"

#include "core/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

long mp_test_passed, mp_test_failed;

bool mp_test_report(bool ok, const char *file, int line, const char *expr) {
    if (ok) {
        mp_test_passed++;
    } else {
        mp_test_failed++;
        fprintf(stderr, "%s:%d: FAILED: %s\n", file, line, expr);
    }
    return ok;
}

bool mp_test_report_u64(uint64_t a, uint64_t b, const char *file, int line, const char *expr) {
    bool ok = a == b;
    if (!ok)
        fprintf(stderr, "%s:%d: %" PRIu64 " != %" PRIu64 "\n", file, line, a, b);
    return mp_test_report(ok, file, line, expr);
}

bool mp_test_report_status(mp_status st, const char *file, int line, const char *expr) {
    if (st != MP_OK)
        fprintf(stderr, "%s:%d: %s: %s\n", file, line, mp_status_name(st), mp_last_error());
    return mp_test_report(st == MP_OK, file, line, expr);
}

int mp_test_finish(const char *suite) {
    printf("%s: %ld passed, %ld failed\n", suite, mp_test_passed, mp_test_failed);
    return mp_test_failed ? 1 : 0;
}

uint64_t mp_test_plan(const mp_buffer_t *b, size_t n, const char *strategy, mp_plan_t *keep) {
    mp_plan_t p = {0};
    mp_bounds_t bd;
    if (keep) *keep = p;
    if (!MP_CHECK_OK(mp_bounds_compute(b, n, &bd))) return 0;
    if (!MP_CHECK_OK(mp_plan_compute(b, n, strategy, &p))) {
        fprintf(stderr, "  strategy %s\n", strategy);
        return 0;
    }
    bool ok = MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
    ok &= MP_CHECK(p.footprint >= bd.offsets);
    /* Never worse than naive -- when all buffers share one alignment.  The
     * papers' strategies ignore alignment, and with mixed alignments their
     * padding can exceed the naive sum, which needs none. */
    bool uniform = true;
    for (size_t i = 1; i < n; i++)
        uniform &= (b[i].align > 1 ? b[i].align : 1) == (b[0].align > 1 ? b[0].align : 1);
    if (uniform) ok &= MP_CHECK(p.footprint <= bd.naive);
    if (p.object) ok &= MP_CHECK(p.footprint >= bd.objects || n == 0);
    if (!ok) fprintf(stderr, "  strategy %s, n=%zu\n", strategy, n);
    uint64_t f = ok ? p.footprint : 0;
    if (keep) *keep = p;
    else mp_plan_free(&p);
    return f;
}

bool mp_test_check_offsets(const mp_buffer_t *b, size_t n, const uint64_t *off) {
    mp_buffer_t *nb;
    if (mp__normalize(b, n, &nb) != MP_OK) return false;
    mp_plan_t p = {.n = n, .offset = (uint64_t *)off, .footprint = mp__footprint(nb, n, off)};
    free(nb);
    mp_status s = mp_plan_check(b, n, &p, NULL);
    if (s != MP_OK) fprintf(stderr, "  checker: %s\n", mp_last_error());
    return s == MP_OK;
}

const char *mp_test_path(const char *dir, const char *name) {
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

void mp_test_write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!MP_CHECK(f != NULL)) return;
    fputs(text, f);
    fclose(f);
}
