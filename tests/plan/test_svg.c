/* test_svg.c -- the SVG writers: structure, titles, geometry, escaping,
 * sizes in binary units, the bound of each kind of plan, the peak step,
 * names on the largest buffers, error paths (no partial file ever), large
 * plans, and the trace picture's ticks, peak and legend.  Every file is
 * also checked with `xmllint --noout` when that binary exists. */
#include "harness.h"
#include "gen.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The writer draws two rectangles besides the buffers: the white page
 * and the plot background. */
#define FIXED_RECTS 2

static char dir[64];
static int have_xmllint;

static char *path_of(const char *name) {
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return p;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0, r;
    char *s = malloc(cap + 1);
    while (s && (r = fread(s + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) s = realloc(s, (cap *= 2) + 1);
    }
    fclose(f);
    if (s) s[n] = 0;
    if (len) *len = n;
    return s;
}

/* Occurrences of needle; a plain loop, since ASan's strstr re-measures the
 * haystack on every call and made this quadratic on large files. */
static size_t count(const char *s, const char *needle) {
    size_t k = 0, len = strlen(needle);
    for (const char *p = s; *p; p++)
        if (*p == needle[0] && strncmp(p, needle, len) == 0) k++, p += len - 1;
    return k;
}

static void xmllint(const char *path) {
    if (!have_xmllint) return;   /* neither passed nor failed */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "xmllint --noout '%s'", path);
    MP_CHECK(system(cmd) == 0);
}

/* Checks the structure every picture has and returns its text (free it). */
static char *check_file(const char *path, const mp_buffer_t *b, size_t n) {
    char *s = slurp(path, NULL);
    if (!MP_CHECK(s != NULL)) return NULL;
    MP_CHECK(strncmp(s, "<?xml", 5) == 0);
    MP_CHECK_EQ_U64(count(s, "<svg "), 1);
    MP_CHECK_EQ_U64(count(s, "</svg>"), 1);
    MP_CHECK(strlen(s) >= 7 && strcmp(s + strlen(s) - 7, "</svg>\n") == 0);
    MP_CHECK_EQ_U64(count(s, "<g"), count(s, "</g>"));
    MP_CHECK_EQ_U64(count(s, "<rect"), n + FIXED_RECTS);
    MP_CHECK_EQ_U64(count(s, "<title>"), n);
    MP_CHECK_EQ_U64(count(s, "</title>"), n);
    MP_CHECK(!strstr(s, "nan") && !strstr(s, "inf"));
    for (size_t i = 0; i < n && n <= 1000; i++) {
        char t[64], named[64];   /* the tooltip opens with the id, or a name */
        snprintf(t, sizeof t, "<title>id %llu: ", (unsigned long long)b[i].id);
        snprintf(named, sizeof named, ", id %llu: ", (unsigned long long)b[i].id);
        MP_CHECK_EQ_U64(count(s, t) + count(s, named), 1);
    }
    xmllint(path);
    return s;
}

/* A naive plan, derived by hand: naive lays buffers end to end by
 * decreasing alignment, then input order, so no padding is needed.
 *   id 11: size 50 align 64, t=[1,2]  -> aligned 64, offset 0,  ends 64
 *   id 10: size 100, t=[0,1]          -> offset 64,  ends 164
 *   id 12: size 30, t=[3,3]           -> offset 164, ends 194 = footprint
 * Lower bound = most bytes live at one time: at t=1 ids 10 and 11 live,
 * 100 + 64 = 164; at t=3 only 30. */
static void test_naive(void) {
    mp_buffer_t b[3] = {{10, 0, 1, 100, 0}, {11, 1, 2, 50, 64}, {12, 3, 3, 30, 0}};
    mp_plan_t p;
    mp_bounds_t bd;
    if (!MP_CHECK_EQ_U64(mp_test_plan(b, 3, "naive", &p), 194)) {
        mp_plan_free(&p);
        return;
    }
    MP_CHECK_OK(mp_bounds_compute(b, 3, &bd));
    MP_CHECK_EQ_U64(bd.offsets, 164);
    const char *path = path_of("naive.svg");
    MP_CHECK_OK(mp_plan_write_svg(path, b, 3, &p, bd.offsets, "three buffers"));
    char *s = check_file(path, b, 3);
    if (s) {
        MP_CHECK(strstr(s, "<title>id 10: 100 B at 64, t=[0,1]</title>") != NULL);
        MP_CHECK(strstr(s, "<title>id 11: 50 B (64 aligned) at 0, t=[1,2]</title>") != NULL);
        MP_CHECK(strstr(s, "<title>id 12: 30 B at 164, t=[3,3]</title>") != NULL);
        MP_CHECK(strstr(s, ">lower bound (offsets) 164 B</text>") != NULL);
        MP_CHECK(strstr(s, "stroke-dasharray") != NULL);
        MP_CHECK(strstr(s, ">footprint 194 B</text>") != NULL);
        MP_CHECK(strstr(s, "three buffers \xE2\x80\x94 naive</text>") != NULL);
        /* Peak: ids 10 and 11 live at t=1 (100 + 64 aligned bytes); t=0
         * has only 100.  The band covers step 1, x = 90 + 1 * 300. */
        MP_CHECK(strstr(s, "peak 164 B live at t=1</text>") != NULL);
        MP_CHECK(strstr(s, ">peak t=1: 164 B live</text>") != NULL);
        MP_CHECK(strstr(s, "<path d=\"M390 64H690V764H390Z\"") != NULL);
        /* Every buffer is hundreds of px wide and tall: all three labelled
         * with name and size, largest first. */
        const char *l10 = strstr(s, ">id 10 (100 B)</text>"), *l11 = strstr(s, ">id 11 (50 B)</text>");
        MP_CHECK(l10 && l11 && l10 < l11 && strstr(s, ">id 12 (30 B)</text>"));
    }
    free(s);
    /* Determinism: the same call writes the same bytes. */
    char *again = NULL;
    s = slurp(path, NULL);
    MP_CHECK_OK(mp_plan_write_svg(path, b, 3, &p, bd.offsets, "three buffers"));
    again = slurp(path, NULL);
    MP_CHECK(s && again && strcmp(s, again) == 0);
    free(s), free(again);
    mp_plan_free(&p);
    remove(path);
}

/* A hand-built offset plan: id 19 lives the whole run [0,9] at the bottom;
 * ids 17 ([3,5]) and 18 ([6,7]) never meet and share the region above it.
 * Footprint 1605632 + 802816 = 2408448.
 * Geometry (plot 1200x700 at left 90, top 64; time range [0,10) so one step
 * is 120 px; address scale tops out at 1.04 * footprint):
 *   id 17: x = 90 + 3*120 = 450, width 3*120 = 360;
 *          y(1605632) = 764 - 700 * (2/3) / 1.04 = 315.28 -> 315.3,
 *          y(2408448) = 764 - 700 / 1.04 = 90.92 -> 90.9, height 224.4. */
static void test_hand_plan(void) {
    mp_buffer_t b[3] = {{17, 3, 5, 802816, 0}, {18, 6, 7, 802816, 0}, {19, 0, 9, 1605632, 0}};
    uint64_t off[3] = {1605632, 1605632, 0};
    MP_CHECK(mp_test_check_offsets(b, 3, off));
    mp_plan_t p = {.n = 3, .offset = off, .footprint = 2408448, .strategy = "hand<&>made"};
    const char *path = path_of("hand.svg");
    MP_CHECK_OK(mp_plan_write_svg(path, b, 3, &p, 2408448, NULL));
    char *s = check_file(path, b, 3);
    if (s) {
        MP_CHECK(strstr(s, "<title>id 17: 802816 B = 784 KiB at 1605632, t=[3,5]</title>") != NULL);
        MP_CHECK(strstr(s, "<rect x=\"450\" y=\"90.9\" width=\"360\" height=\"224.4\"") != NULL);
        MP_CHECK(strstr(s, "hand&lt;&amp;&gt;made") != NULL);
        MP_CHECK(!strstr(s, "hand<"));
        MP_CHECK(strstr(s, ">lower bound (offsets) 2.30 MiB</text>") != NULL);
        MP_CHECK(strstr(s, ">footprint 2.30 MiB</text>") != NULL);
        MP_CHECK(!strstr(s, "2408448"));   /* no raw byte counts on lines */
        MP_CHECK(strstr(s, "peak 2.30 MiB live at t=3<") != NULL);
    }
    free(s);
    remove(path);
}

/* Object plans: objects-naive gives buffer i object i; titles name it. */
static void test_objects(void) {
    mp_buffer_t b[2] = {{5, 0, 2, 64, 0}, {6, 1, 3, 32, 0}};
    mp_plan_t p;
    if (!MP_CHECK(mp_test_plan(b, 2, "objects-naive", &p) == 96)) {
        mp_plan_free(&p);
        return;
    }
    const char *path = path_of("objects.svg");
    MP_CHECK_OK(mp_plan_write_svg(path, b, 2, &p, 96, "objects"));
    char *s = check_file(path, b, 2);
    if (s) {
        MP_CHECK(strstr(s, "<title>id 5: 64 B at 0, t=[0,2], object 0</title>") != NULL);
        MP_CHECK(strstr(s, "<title>id 6: 32 B at 64, t=[1,3], object 1</title>") != NULL);
        MP_CHECK(strstr(s, "2 buffers in 2 objects") != NULL);
        /* An object plan is measured against the objects bound. */
        MP_CHECK(strstr(s, ">lower bound (objects) 96 B</text>") != NULL);
        MP_CHECK(strstr(s, "lower bound (objects) 96 B \xC2\xB7 footprint / bound = 1.000") != NULL);
        MP_CHECK(!strstr(s, "(offsets)"));
    }
    free(s);
    mp_plan_free(&p);
    remove(path);
}

/* Arbitrary title bytes still give a well-formed file: markup escaped,
 * control characters as spaces, invalid UTF-8 as '?', valid UTF-8 kept. */
static void test_escaping(void) {
    mp_buffer_t b[1] = {{1, 0, 0, 8, 0}};
    uint64_t off[1] = {0};
    mp_plan_t p = {.n = 1, .offset = off, .footprint = 8, .strategy = "s"};
    const char *path = path_of("escape.svg");
    MP_CHECK_OK(mp_plan_write_svg(path, b, 1, &p, 8, "a<&>\"'b\x01\xff\xC2\xB5"));
    char *s = check_file(path, b, 1);
    if (s) {
        MP_CHECK(strstr(s, "a&lt;&amp;&gt;&quot;&apos;b ?\xC2\xB5 \xE2\x80\x94 s</text>") != NULL);
        MP_CHECK(!strstr(s, "<&>"));
    }
    free(s);
    remove(path);
}

/* Degenerate extents: no buffers, one time step, times at the top of the
 * uint64 range, a zero lower bound. */
static void test_edges(void) {
    const char *path = path_of("edge.svg");
    mp_plan_t p0 = {.strategy = "naive"};
    MP_CHECK_OK(mp_plan_write_svg(path, NULL, 0, &p0, 0, "empty"));
    free(check_file(path, NULL, 0));
    mp_buffer_t b[2] = {{1, 5, 5, 8, 0}, {2, 5, 5, 8, 0}};
    uint64_t off[2] = {0, 8};
    MP_CHECK(mp_test_check_offsets(b, 2, off));
    mp_plan_t p = {.n = 2, .offset = off, .footprint = 16, .strategy = "naive"};
    MP_CHECK_OK(mp_plan_write_svg(path, b, 2, &p, 16, "one step"));
    free(check_file(path, b, 2));
    b[0].first = b[1].first = UINT64_MAX - 3;
    b[0].last = UINT64_MAX - 2, b[1].last = UINT64_MAX - 1;
    MP_CHECK(mp_test_check_offsets(b, 2, off));
    MP_CHECK_OK(mp_plan_write_svg(path, b, 2, &p, 0, "late"));
    free(check_file(path, b, 2));
    remove(path);
}

/* Names from the caller: on the largest buffers where they fit (escaped),
 * in every tooltip; a custom bound name; the bound of an offset plan. */
static void test_names(void) {
    /* id 1: 4 steps, the whole height; id 2: 1 step, 1/64 of the height
     * (about 10 px: no room for a label); id 3 fills beside it. */
    mp_buffer_t b[3] = {{1, 0, 3, 6400, 0}, {2, 4, 4, 100, 0}, {3, 5, 9, 6300, 0}};
    uint64_t off[3] = {0, 0, 0};
    MP_CHECK(mp_test_check_offsets(b, 3, off));
    mp_plan_t p = {.n = 3, .offset = off, .footprint = 6400, .strategy = "hand"};
    const char *names[3] = {"conv<script>alert('x')</script>", "tiny \"small\"", NULL};
    mp_svg_opts_t o = {.title = "net", .lower_bound = 6400, .bound_name = "graph", .names = names};
    const char *path = path_of("names.svg");
    MP_CHECK_OK(mp_plan_write_svg_opts(path, b, 3, &p, &o));
    char *s = check_file(path, b, 3);
    if (s) {
        MP_CHECK(!strstr(s, "<script"));
        MP_CHECK(strstr(s, ">conv&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; (6.25 KiB)</text>"));
        MP_CHECK(strstr(s, "<title>conv&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;, id 1: "
                           "6400 B = 6.25 KiB at 0, t=[0,3]</title>"));
        MP_CHECK(strstr(s, "<title>tiny &quot;small&quot;, id 2: 100 B at 0, t=[4,4]</title>"));
        MP_CHECK(!strstr(s, "\">tiny"));                 /* too small to be written on */
        MP_CHECK(strstr(s, ">id 3 (6.15 KiB)</text>"));  /* no name: its id */
        MP_CHECK(strstr(s, ">lower bound (graph) 6.25 KiB</text>"));
    }
    free(s);
    /* opts NULL: no heading title, no bound. */
    MP_CHECK_OK(mp_plan_write_svg_opts(path, b, 3, &p, NULL));
    s = check_file(path, b, 3);
    MP_CHECK(s && !strstr(s, "lower bound") && strstr(s, "hand</text>"));
    free(s);
    /* An interval the sweep cannot take is refused, nothing written. */
    remove(path);
    b[1].last = 3;
    MP_CHECK(mp_plan_write_svg_opts(path, b, 3, &p, &o) == MP_EINVAL);
    MP_CHECK(strstr(mp_last_error(), "buffer 1 (id 2) has an invalid interval [4, 3]") != NULL);
    MP_CHECK(access(path, F_OK) != 0);
}

/* The trace picture: round ticks on both axes, the peak marked, the
 * iteration boundaries and a legend. */
static void test_trace_svg(void) {
    mp_trace_t *t = NULL;
    if (!MP_CHECK_OK(mp_trace_create(&t))) return;
    /* Four iterations of: alloc 3000, alloc 1000, free both. */
    for (uint64_t it = 0; it < 4; it++) {
        MP_CHECK_OK(mp_trace_record_alloc(t, 1, 3000, MP_TRACE_NO_NS));
        MP_CHECK_OK(mp_trace_record_alloc(t, 2, 1000, MP_TRACE_NO_NS));
        MP_CHECK_OK(mp_trace_record_free(t, 2, MP_TRACE_NO_NS));
        MP_CHECK_OK(mp_trace_record_free(t, 1, MP_TRACE_NO_NS));
    }
    const char *path = path_of("trace.svg");
    MP_CHECK_OK(mp_trace_write_svg(path, t, NULL, "loop<&>"));
    char *s = slurp(path, NULL);
    if (MP_CHECK(s != NULL)) {
        MP_CHECK(strncmp(s, "<?xml", 5) == 0 && strstr(s, "loop&lt;&amp;&gt;</text>"));
        /* Peak 4000 B first at event 1; ymax = 4000 * 1.05 = 4.10 KiB
         * gives y ticks every 0.5 KiB up to 4 KiB; 16 events give x
         * ticks every 2 events, 0 to 16. */
        MP_CHECK(strstr(s, ">peak 3.91 KiB at event 1</text>") != NULL);
        MP_CHECK(strstr(s, ">4 KiB</text>") && strstr(s, ">0.5 KiB</text>") && !strstr(s, ">4.5 KiB<"));
        MP_CHECK(strstr(s, ">16</text>") && strstr(s, ">8</text>") && !strstr(s, ">3</text>") &&
                 !strstr(s, ">18</text>"));
        MP_CHECK(strstr(s, "class=\"legend\"") && strstr(s, ">live bytes (max per column)</text>"));
        MP_CHECK(!strstr(s, ">iteration start</text>"));   /* no period given */
        MP_CHECK(!strstr(s, "nan") && !strstr(s, "inf"));
    }
    free(s);
    xmllint(path);
    mp_period_t pr = {0};
    MP_CHECK_OK(mp_period_detect(t, NULL, &pr));
    MP_CHECK(pr.found);
    MP_CHECK_OK(mp_trace_write_svg(path, t, &pr, NULL));
    s = slurp(path, NULL);
    MP_CHECK(s && strstr(s, ">iteration start</text>") && strstr(s, ">memory load</text>"));
    free(s);
    xmllint(path);
    mp_period_free(&pr);
    mp_trace_free(t);
    remove(path);
}

static bool temp_left_in(const char *d) {
    DIR *dp = opendir(d);
    bool found = false;
    struct dirent *e;
    while (dp && (e = readdir(dp)) != NULL) found |= strstr(e->d_name, ".tmp.") != NULL;
    if (dp) closedir(dp);
    return found;
}

static void test_errors(void) {
    mp_buffer_t b[1] = {{1, 0, 0, 8, 0}};
    uint64_t off[1] = {0};
    mp_plan_t p = {.n = 1, .offset = off, .footprint = 8, .strategy = "naive"};
    const char *path = path_of("never.svg");
    MP_CHECK(mp_plan_write_svg(NULL, b, 1, &p, 8, "x") == MP_EINVAL);
    MP_CHECK(mp_plan_write_svg(path, b, 1, NULL, 8, "x") == MP_EINVAL);
    MP_CHECK(mp_plan_write_svg(path, b, 2, &p, 8, "x") == MP_EINVAL);
    MP_CHECK(strstr(mp_last_error(), "1 buffers") != NULL);
    MP_CHECK(access(path, F_OK) != 0);
    /* Directory missing: the temporary file cannot even be opened. */
    MP_CHECK(mp_plan_write_svg("/nonexistent-dir/x.svg", b, 1, &p, 8, "x") == MP_EIO);
    MP_CHECK(strncmp(mp_last_error(), "/nonexistent-dir/x.svg: ", 24) == 0);
    MP_CHECK(access("/nonexistent-dir/x.svg", F_OK) != 0);
    /* Target is a directory: writing works, the rename fails, and the
     * temporary file must be gone afterwards. */
    char *sub = path_of("adir");
    MP_CHECK(mkdir(sub, 0700) == 0);
    MP_CHECK(mp_plan_write_svg(sub, b, 1, &p, 8, "x") == MP_EIO);
    MP_CHECK(strncmp(mp_last_error(), sub, strlen(sub)) == 0);
    MP_CHECK(!temp_left_in(dir));
    rmdir(sub);
}

/* Large plans: every buffer is still drawn, without outlines, in a file
 * of bounded size (a rect with its title is about 130 bytes). */
static void test_large(void) {
    size_t n = 30000;
    mp_buffer_t *b = malloc(n * sizeof *b);
    mp_plan_t p;
    if (!MP_CHECK(b != NULL)) return;
    mp_gen_problem(b, n, MP_GEN_DNN, 7);
    if (MP_CHECK(mp_test_plan(b, n, "naive", &p) != 0)) {
        const char *path = path_of("large.svg");
        MP_CHECK_OK(mp_plan_write_svg(path, b, n, &p, 0, "large"));
        size_t len = 0;
        char *s = slurp(path, &len);
        MP_CHECK(s && strstr(s, "<g stroke=\"none\">") != NULL);
        MP_CHECK(s && !strstr(s, "lower bound"));   /* a zero bound is not drawn */
        MP_CHECK(s && count(s, "</text>") < 120);   /* at most 24 labels */
        MP_CHECK(len < 160 * n + 20000);
        free(s);
        free(check_file(path, b, n));
        remove(path);
        mp_plan_free(&p);
    }
    free(b);
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/mp-test-svg-XXXXXX");
    if (!MP_CHECK(mkdtemp(dir) != NULL)) return mp_test_finish("svg");
    have_xmllint = system("command -v xmllint >/dev/null 2>&1") == 0;
    if (!have_xmllint) printf("svg: xmllint not found, XML validation skipped\n");
    test_naive();
    test_hand_plan();
    test_objects();
    test_escaping();
    test_edges();
    test_names();
    test_trace_svg();
    test_errors();
    test_large();
    MP_CHECK(rmdir(dir) == 0);   /* every test removed its files */
    return mp_test_finish("svg");
}
