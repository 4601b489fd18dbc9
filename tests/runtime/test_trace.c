/* test_trace.c -- traces: recording, the text format round trip, records
 * derived by hand, statistics, and every malformed-input message.  Every
 * records set goes through mp_plan_compute("auto") and mp_plan_check. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/mp_test_trace_XXXXXX";

static const char *path(const char *name) { return mp_test_path(dir, name); }

/* Plans records with "auto", checks the plan, and checks that the offset
 * lower bound equals want_bound (the window's peak of live bytes). */
static void plan_records(const mp_buffer_t *b, size_t n, uint64_t want_bound) {
    if (n == 0) return;
    mp_plan_t p;
    MP_CHECK_OK(mp_plan_compute(b, n, "auto", &p));
    MP_CHECK_OK(mp_plan_check(b, n, &p, NULL));
    mp_bounds_t bd;
    MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
    MP_CHECK_EQ_U64(bd.offsets, want_bound);
    MP_CHECK(p.footprint >= bd.offsets);
    mp_plan_free(&p);
}

/* The hand-made trace (event index: event):
 *   0: a 1 100      block A
 *   1: a 2 200      block B
 *   2: r 1
 *   3: f 1          A live at 0..2
 *   4: a 3 50       block C
 *   5: w 3
 *   6: f 2          B live at 1..5
 *   7: a 4 300      block D, never freed
 *   8: f 3          C live at 4..7
 * Whole trace, records (id = allocation rank, inclusive times):
 *   A: 0,0,2,100   B: 1,1,5,200   C: 2,4,7,50   D: 3,7,8,300
 * Live bytes by time: 0:100 1:300 2:300 3:200 4:250 5:250 6:50 7:350 8:300,
 * so the peak is 350 at event 7, and at most 2 blocks are live at once
 * (times 1, 2, 4, 5, 7).  Window [3, 8): A's free at 3 is ignored (A was
 * allocated before the window); C at 4 -> first 1, freed at 8 = to, so it
 * lives to the window's end: last 4; D at 7 -> [4, 4].
 *   C: 0,1,4,50   D: 1,4,4,300   (live at 4: 350) */
static mp_trace_t *hand_trace(void) {
    mp_trace_t *t;
    MP_CHECK_OK(mp_trace_create(&t));
    MP_CHECK_OK(mp_trace_record_alloc(t, 1, 100, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_alloc(t, 2, 200, 1000));
    MP_CHECK_OK(mp_trace_record_access(t, 1, 0, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_free(t, 1, 1500));
    MP_CHECK_OK(mp_trace_record_alloc(t, 3, 50, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_access(t, 3, 1, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_free(t, 2, MP_TRACE_NO_NS));
    MP_CHECK_OK(mp_trace_record_alloc(t, 4, 300, 2000));
    MP_CHECK_OK(mp_trace_record_free(t, 3, MP_TRACE_NO_NS));
    return t;
}

static void check_buf(const mp_buffer_t *b, uint64_t id, uint64_t first, uint64_t last,
                      uint64_t size) {
    MP_CHECK_EQ_U64(b->id, id);
    MP_CHECK_EQ_U64(b->first, first);
    MP_CHECK_EQ_U64(b->last, last);
    MP_CHECK_EQ_U64(b->size, size);
}

static void test_records(void) {
    mp_trace_t *t = hand_trace();
    size_t n;
    const mp_event_t *ev = mp_trace_events(t, &n);
    MP_CHECK_EQ_U64(n, 9);
    MP_CHECK_EQ_U64(ev[0].end, 3);
    MP_CHECK_EQ_U64(ev[7].end, MP_TRACE_NEVER);
    MP_CHECK_EQ_U64(ev[6].block, 1);
    MP_CHECK_EQ_U64(ev[6].size, 200);
    mp_buffer_t *b;
    size_t k;
    MP_CHECK_OK(mp_trace_records(t, 0, 9, &b, &k));
    MP_CHECK_EQ_U64(k, 4);
    if (k == 4) {
        check_buf(&b[0], 0, 0, 2, 100);
        check_buf(&b[1], 1, 1, 5, 200);
        check_buf(&b[2], 2, 4, 7, 50);
        check_buf(&b[3], 3, 7, 8, 300);
    }
    plan_records(b, k, 350);
    free(b);
    MP_CHECK_OK(mp_trace_records(t, 3, 8, &b, &k));
    MP_CHECK_EQ_U64(k, 2);
    if (k == 2) {
        check_buf(&b[0], 0, 1, 4, 50);
        check_buf(&b[1], 1, 4, 4, 300);
    }
    plan_records(b, k, 350);
    free(b);
    /* An empty window, a window without allocations, a bad window. */
    MP_CHECK_OK(mp_trace_records(t, 5, 5, &b, &k));
    MP_CHECK(k == 0 && b == NULL);
    MP_CHECK_OK(mp_trace_records(t, 8, 9, &b, &k));
    MP_CHECK(k == 0 && b == NULL);
    MP_CHECK(mp_trace_records(t, 3, 10, &b, &k) == MP_EINVAL);
    MP_CHECK(!strcmp(mp_last_error(), "window [3, 10) is not inside the trace's 9 events"));

    mp_trace_stats_t st;
    MP_CHECK_OK(mp_trace_stats(t, &st));
    MP_CHECK_EQ_U64(st.events, 9);
    MP_CHECK_EQ_U64(st.allocs, 4);
    MP_CHECK_EQ_U64(st.frees, 3);
    MP_CHECK_EQ_U64(st.reads, 1);
    MP_CHECK_EQ_U64(st.writes, 1);
    MP_CHECK_EQ_U64(st.bytes, 650);
    MP_CHECK_EQ_U64(st.peak_bytes, 350);
    MP_CHECK_EQ_U64(st.peak_time, 7);
    MP_CHECK_EQ_U64(st.peak_blocks, 2);
    MP_CHECK_EQ_U64(st.live_blocks, 1);
    MP_CHECK_EQ_U64(st.live_bytes, 300);
    MP_CHECK_EQ_U64(st.ns_first, 1000);
    MP_CHECK_EQ_U64(st.ns_last, 2000);

    /* Recording errors leave the trace unchanged. */
    MP_CHECK(mp_trace_record_alloc(t, 4, 8, MP_TRACE_NO_NS) == MP_EINVAL);
    MP_CHECK(!strcmp(mp_last_error(), "handle 0x4 is already live"));
    MP_CHECK(mp_trace_record_free(t, 1, MP_TRACE_NO_NS) == MP_EINVAL);
    MP_CHECK(!strcmp(mp_last_error(), "handle 0x1 is not live"));
    MP_CHECK(mp_trace_record_access(t, 9, 0, MP_TRACE_NO_NS) == MP_EINVAL);
    MP_CHECK(mp_trace_record_alloc(t, 9, 0, MP_TRACE_NO_NS) == MP_EINVAL);
    MP_CHECK(mp_trace_record_alloc(t, 9, UINT64_MAX - 100, MP_TRACE_NO_NS) == MP_EOVERFLOW);
    mp_trace_events(t, &n);
    MP_CHECK_EQ_U64(n, 9);
    mp_trace_free(t);
}

static void test_roundtrip(void) {
    mp_trace_t *t = hand_trace(), *u;
    char p[256];
    snprintf(p, sizeof p, "%s", path("t.trace"));
    MP_CHECK_OK(mp_trace_write(p, t));
    MP_CHECK_OK(mp_trace_read(p, &u));
    size_t n, m;
    const mp_event_t *a = mp_trace_events(t, &n), *b = mp_trace_events(u, &m);
    MP_CHECK_EQ_U64(n, m);
    for (size_t i = 0; i < n && n == m; i++)
        MP_CHECK(a[i].kind == b[i].kind && a[i].handle == b[i].handle &&
                 a[i].size == b[i].size && a[i].ns == b[i].ns && a[i].block == b[i].block &&
                 a[i].end == b[i].end);
    mp_trace_free(u);
    /* Handles are reused after a free; a large random-ish trace survives too. */
    MP_CHECK_OK(mp_trace_create(&u));
    uint64_t x = 12345;
    size_t live = 0;
    uint64_t h[64];
    for (int i = 0; i < 5000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (live < 64 && (live == 0 || (x >> 33) % 3)) {
            h[live] = (x >> 20) & 0xffff0;   /* may repeat once freed */
            if (mp_trace_record_alloc(u, h[live], 1 + (x >> 40) % 4096, (uint64_t)i) == MP_OK)
                live++;
        } else {
            size_t j = (size_t)((x >> 35) % live);
            MP_CHECK_OK(mp_trace_record_free(u, h[j], MP_TRACE_NO_NS));
            h[j] = h[--live];
        }
    }
    MP_CHECK_OK(mp_trace_write(p, u));
    mp_trace_t *v;
    MP_CHECK_OK(mp_trace_read(p, &v));
    a = mp_trace_events(u, &n);
    b = mp_trace_events(v, &m);
    MP_CHECK(n == m && n > 4000);
    bool same = n == m;
    for (size_t i = 0; i < n && same; i++)
        same = a[i].kind == b[i].kind && a[i].handle == b[i].handle && a[i].end == b[i].end;
    MP_CHECK(same);
    mp_trace_stats_t st;
    mp_trace_stats(u, &st);
    mp_buffer_t *r;
    size_t k;
    MP_CHECK_OK(mp_trace_records(u, 0, n, &r, &k));
    MP_CHECK_EQ_U64(k, st.allocs);
    plan_records(r, k, st.peak_bytes);
    free(r);
    MP_CHECK_OK(mp_trace_records(u, n / 3, 2 * n / 3, &r, &k));
    if (k) {
        mp_plan_t pl;
        MP_CHECK_OK(mp_plan_compute(r, k, "auto", &pl));
        MP_CHECK_OK(mp_plan_check(r, k, &pl, NULL));
        mp_plan_free(&pl);
    }
    free(r);
    mp_trace_free(v);
    mp_trace_free(u);
    mp_trace_free(t);
}

static void expect_error(const char *name, const char *text, const char *msg) {
    char p[256];
    snprintf(p, sizeof p, "%s", path(name));
    mp_test_write_file(p, text);
    mp_trace_t *t = (mp_trace_t *)1;
    mp_status s = mp_trace_read(p, &t);
    MP_CHECK(s == MP_EPARSE && t == NULL);
    char want[512];
    snprintf(want, sizeof want, "%s:%s", p, msg);
    if (!MP_CHECK(!strcmp(mp_last_error(), want)))
        fprintf(stderr, "  got  '%s'\n  want '%s'\n", mp_last_error(), want);
}

static void test_errors(void) {
    expect_error("empty", "", "1: empty file, expected the header '# memplan-trace/1'");
    expect_error("noheader", "a 1 10\n", "1: header: expected '# memplan-trace/1' as the first line");
    expect_error("version", "# memplan-trace/2\n",
                 "1: header: unsupported version 'memplan-trace/2' (this reader knows memplan-trace/1)");
    expect_error("kind", "# memplan-trace/1\na 1 10\nx 1\n",
                 "3: field 'kind': unknown event 'x' (expected a, f, r, w or o)");
    expect_error("nosize", "# memplan-trace/1\na 1\n", "2: field 'size': missing");
    expect_error("nohandle", "# memplan-trace/1\nf\n", "2: field 'handle': missing");
    expect_error("toolong", "# memplan-trace/1\na 1 10 5 6\n",
                 "2: expected at most 4 fields for 'a', found 5");
    expect_error("toolongf", "# memplan-trace/1\na 1 10\nf 1 2 3\n",
                 "3: expected at most 3 fields for 'f', found 4");
    expect_error("sizetext", "# memplan-trace/1\na 1 ten\n",
                 "2: field 'size': 'ten' is not a non-negative integer");
    expect_error("sizezero", "# memplan-trace/1\na 1 0\n", "2: field 'size': must be positive");
    expect_error("hexbad", "# memplan-trace/1\na 0xfg 10\n",
                 "2: field 'handle': '0xfg' is not a hexadecimal integer");
    expect_error("hexbig", "# memplan-trace/1\na 0x10000000000000000 10\n",
                 "2: field 'handle': '0x10000000000000000' does not fit in 64 bits");
    expect_error("handletext", "# memplan-trace/1\na -1 10\n",
                 "2: field 'handle': '-1' is not a non-negative integer");
    expect_error("live", "# memplan-trace/1\na 0x10 8\n\n# c\na 0x10 8\n",
                 "5: field 'handle': 0x10 is already live (allocated on line 2)");
    expect_error("notlive", "# memplan-trace/1\na 1 8\nf 1\nf 1\n",
                 "4: field 'handle': 1 is not live");
    expect_error("readdead", "# memplan-trace/1\nr 7\n", "2: field 'handle': 7 is not live");
    expect_error("nsbad", "# memplan-trace/1\na 1 8 1.5\n",
                 "2: field 'ns': '1.5' is not a non-negative integer");
    expect_error("nsmax", "# memplan-trace/1\nf 1 18446744073709551615\n",
                 "2: field 'ns': must be below 2^64-1");
    expect_error("overflow", "# memplan-trace/1\na 1 18446744073709551615\na 2 1\n",
                 "3: field 'size': total of sizes overflows 64 bits");
    /* Accepted: comments, blank lines, tabs, CRLF, hex and decimal handles. */
    char p[256];
    snprintf(p, sizeof p, "%s", path("ok"));
    mp_test_write_file(p, "# memplan-trace/1\r\n\r\n# note\r\n a\t0xA\t16 \r\nw 10\r\n  f 0xa 7\r\n");
    mp_trace_t *t;
    MP_CHECK_OK(mp_trace_read(p, &t));
    size_t n;
    const mp_event_t *ev = t ? mp_trace_events(t, &n) : NULL;
    MP_CHECK(ev && n == 3 && ev[0].handle == 10 && ev[0].end == 2 && ev[2].ns == 7 &&
             ev[1].kind == MP_EV_WRITE);
    mp_trace_free(t);
    MP_CHECK(mp_trace_read(path("missing"), &t) == MP_EIO);
}

static void test_svg(void) {
    mp_trace_t *t = hand_trace();
    char p[256];
    snprintf(p, sizeof p, "%s", path("t.svg"));
    mp_period_t pr = {0};
    MP_CHECK_OK(mp_trace_write_svg(p, t, &pr, "a <title> & \"quotes\"\x01"));
    FILE *f = fopen(p, "r");
    char buf[8192] = {0};
    size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    MP_CHECK(got > 0 && strstr(buf, "a &lt;title&gt; &amp; &quot;quotes&quot; </text>"));
    MP_CHECK(strstr(buf, "</svg>") != NULL);
    snprintf(p, sizeof p, "%s", path("no/such/dir.svg"));
    MP_CHECK(mp_trace_write_svg(p, t, NULL, NULL) == MP_EIO);
    mp_trace_free(t);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_records();
    test_roundtrip();
    test_errors();
    test_svg();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", dir);
    return mp_test_finish("test_trace");
}
