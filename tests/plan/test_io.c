/* test_io.c -- records and plan CSV round trips through the library, the
 * two time conventions agreeing, and the line reader's NUL bytes, BOMs and
 * directories. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/mp_test_io_XXXXXX";

static const char *path(const char *name) { return mp_test_path(dir, name); }

static void test_roundtrip(void) {
    mp_buffer_t b[] = {{10, 0, 1, 100, 0}, {11, 1, 5, 7, 8}, {12, 3, 3, 1, 0}};
    char p1[256];
    snprintf(p1, sizeof p1, "%s", path("r.csv"));
    MP_CHECK_OK(mp_records_write(p1, b, 3));
    mp_buffer_t *r;
    size_t n;
    MP_CHECK_OK(mp_records_read(p1, &r, &n));
    MP_CHECK_EQ_U64(n, 3);
    /* Written with an align column because one buffer has align 8; the
     * others are written as 1, which plans the same as 0. */
    for (size_t i = 0; i < 3 && n == 3; i++) {
        MP_CHECK(r[i].id == b[i].id && r[i].first == b[i].first && r[i].last == b[i].last);
        MP_CHECK(r[i].size == b[i].size);
        MP_CHECK_EQ_U64(mp_buffer_aligned_size(&r[i]), mp_buffer_aligned_size(&b[i]));
    }
    mp_plan_t p, q;
    MP_CHECK_OK(mp_plan_compute(r, n, "naive", &p));
    char p2[256];
    snprintf(p2, sizeof p2, "%s", path("p.csv"));
    MP_CHECK_OK(mp_plan_write_csv(p2, r, n, &p));
    MP_CHECK_OK(mp_plan_read_csv(p2, r, n, &q));
    MP_CHECK(q.footprint == p.footprint && !memcmp(p.offset, q.offset, n * sizeof *p.offset));
    MP_CHECK_OK(mp_plan_check(r, n, &q, NULL));
    mp_plan_free(&q);
    mp_plan_free(&p);
    /* An object plan keeps its objects. */
    MP_CHECK_OK(mp_plan_compute(r, n, "objects-naive", &p));
    MP_CHECK_OK(mp_plan_write_csv(p2, r, n, &p));
    MP_CHECK_OK(mp_plan_read_csv(p2, r, n, &q));
    MP_CHECK(q.object && !memcmp(p.object, q.object, n * sizeof *p.object));
    MP_CHECK_EQ_U64(q.n_objects, p.n_objects);
    MP_CHECK_OK(mp_plan_check(r, n, &q, NULL));
    mp_plan_free(&q);
    mp_plan_free(&p);
    free(r);
}

/* [lower, upper) = [0, 2) is inclusive [0, 1]; end is inclusive too. */
static void test_conventions(void) {
    char a[256], b2[256], c[256];
    snprintf(a, sizeof a, "%s", path("incl.csv"));
    snprintf(b2, sizeof b2, "%s", path("half.csv"));
    snprintf(c, sizeof c, "%s", path("end.csv"));
    mp_test_write_file(a, "id,first,last,size\n1,0,1,8\n2,1,3,16\n");
    mp_test_write_file(b2, "# MiniMalloc style\nid,lower,upper,size\n1,0,2,8\n\n2,1,4,16\n");
    mp_test_write_file(c, "buffer,start,end,size,alignment\r\n1,0,1,8,1\r\n2,1,3,16,1\r\n");
    mp_buffer_t *x, *y, *z;
    size_t nx, ny, nz;
    MP_CHECK_OK(mp_records_read(a, &x, &nx));
    MP_CHECK_OK(mp_records_read(b2, &y, &ny));
    MP_CHECK_OK(mp_records_read(c, &z, &nz));
    MP_CHECK(nx == 2 && ny == 2 && nz == 2);
    for (size_t i = 0; i < 2 && nx == 2 && ny == 2 && nz == 2; i++) {
        MP_CHECK(x[i].first == y[i].first && x[i].last == y[i].last && x[i].size == y[i].size);
        MP_CHECK(x[i].first == z[i].first && x[i].last == z[i].last && x[i].size == z[i].size);
    }
    free(x), free(y), free(z);
}

static void test_errors(void) {
    mp_buffer_t *b;
    size_t n;
    MP_CHECK(mp_records_read("/nonexistent/x.csv", &b, &n) == MP_EIO);
    MP_CHECK(b == NULL && n == 0);
    char p[256];
    snprintf(p, sizeof p, "%s", path("bad.csv"));
    mp_test_write_file(p, "id,first,last,size\n1,0,1,8\n2,1,x,16\n");
    MP_CHECK(mp_records_read(p, &b, &n) == MP_EPARSE);
    MP_CHECK(strstr(mp_last_error(), "bad.csv:3: field 'last': 'x'") != NULL);
    mp_buffer_t one = {1, 0, 1, 8, 0};
    mp_plan_t pl;
    MP_CHECK_OK(mp_plan_compute(&one, 1, "naive", &pl));
    MP_CHECK(mp_plan_write_csv("/nonexistent/dir/p.csv", &one, 1, &pl) == MP_EIO);
    mp_plan_free(&pl);
}

/* Writes len bytes (NUL bytes included) to path. */
static void write_bytes(const char *path, const char *bytes, size_t len) {
    FILE *f = fopen(path, "wb");
    MP_CHECK(f && fwrite(bytes, 1, len, f) == len);
    if (f) fclose(f);
}

/* A NUL byte is an error naming file, line and field, never the end of the
 * line ("1\0" + "00" was read as size 1); the header and a trace line too. */
static void test_nul(void) {
    static const char rec[] = "id,first,last,size\n0,0,1,1\0" "00\n";
    static const char head[] = "id,fi\0rst,last,size\n0,0,1,1\n";
    static const char plan[] = "id,offset,size\n0,0\0,1\n";
    static const char trace[] = "# memplan-trace/1\na 0x10 16\n\0f 0x10\n";
    char p[256];
    mp_buffer_t *b = NULL, one = {0, 0, 1, 1, 0};
    size_t n = 0;
    mp_plan_t pl;
    mp_trace_t *t = NULL;
    snprintf(p, sizeof p, "%s", path("nul.csv"));
    write_bytes(p, rec, sizeof rec - 1);
    MP_CHECK(mp_records_read(p, &b, &n) == MP_EPARSE && !b);
    MP_CHECK(strstr(mp_last_error(), "nul.csv:2: field 'size': contains a NUL byte") != NULL);
    write_bytes(p, head, sizeof head - 1);
    MP_CHECK(mp_records_read(p, &b, &n) == MP_EPARSE);
    MP_CHECK(strstr(mp_last_error(), "nul.csv:1: header: column 2 contains a NUL byte") != NULL);
    write_bytes(p, plan, sizeof plan - 1);
    MP_CHECK(mp_plan_read_csv(p, &one, 1, &pl) == MP_EPARSE);
    MP_CHECK(strstr(mp_last_error(), "nul.csv:2: field 'offset': contains a NUL byte") != NULL);
    write_bytes(p, trace, sizeof trace - 1);
    MP_CHECK(mp_trace_read(p, &t) == MP_EPARSE && !t);
    MP_CHECK(strstr(mp_last_error(), "nul.csv:3: field 'kind': contains a NUL byte") != NULL);
}

/* A UTF-8 byte order mark opening a file is skipped; a directory as input
 * says so. */
static void test_bom_dir(void) {
    char p[256];
    mp_buffer_t *b = NULL;
    size_t n = 0;
    mp_plan_t pl;
    snprintf(p, sizeof p, "%s", path("bom.csv"));
    mp_test_write_file(p, "\xEF\xBB\xBFid,first,last,size\n7,0,1,8\n");
    MP_CHECK_OK(mp_records_read(p, &b, &n));
    MP_CHECK(n == 1 && b && b[0].id == 7 && b[0].size == 8);
    mp_test_write_file(p, "\xEF\xBB\xBFid,offset\n7,16\n");
    if (b && mp_plan_read_csv(p, b, n, &pl) == MP_OK) {
        MP_CHECK_EQ_U64(pl.offset[0], 16);
        mp_plan_free(&pl);
    } else {
        MP_CHECK(!"a plan CSV with a BOM reads");
    }
    free(b);
    MP_CHECK(mp_records_read(dir, &b, &n) == MP_EIO);
    char want[300];
    snprintf(want, sizeof want, "%s: is a directory", dir);
    MP_CHECK(!strcmp(mp_last_error(), want));
}

/* Mutated files: any byte flipped, dropped or duplicated.  The reader
 * must answer MP_OK or MP_EPARSE with a FILE:LINE message -- never crash,
 * hang or leak (the sanitizer build checks that). */
static void test_mutations(void) {
    static const char base[] = "id,first,last,size,align\n1,0,1,8,1\n2,1,3,16,4\n3,2,9,1,8\n";
    static const char alphabet[] = "0123456789,\n\r -#ax";
    char p[256], text[128];
    snprintf(p, sizeof p, "%s", path("mut.csv"));
    uint64_t st = 77;
    long ok = 0, parse = 0, other = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t len = strlen(base);
        memcpy(text, base, len + 1);
        for (int m = 0; m < 1 + iter % 3; m++) {
            size_t at = (size_t)(st = st * 6364136223846793005ull + 1442695040888963407ull) % len;
            char c = alphabet[(st >> 33) % (sizeof alphabet - 1)];
            switch ((st >> 40) % 3) {
            case 0: text[at] = c; break;
            case 1: memmove(text + at, text + at + 1, len - at), len--; break;
            default:
                if (len + 2 < sizeof text) memmove(text + at + 1, text + at, len - at + 1), len++;
            }
        }
        mp_test_write_file(p, text);
        mp_buffer_t *b = NULL;
        size_t n = 0;
        mp_status s = mp_records_read(p, &b, &n);
        if (s == MP_OK) ok++, MP_CHECK_OK(mp_problem_validate(b, n));
        else if (s == MP_EPARSE && strstr(mp_last_error(), "mut.csv:")) parse++;
        else other++, fprintf(stderr, "  %s: %s\n", mp_status_name(s), mp_last_error());
        free(b);
    }
    MP_CHECK_EQ_U64(other, 0);
    MP_CHECK(ok > 0 && parse > 0);
}

int main(void) {
    if (!mkdtemp(dir)) return 1;
    test_roundtrip();
    test_conventions();
    test_errors();
    test_nul();
    test_bom_dir();
    test_mutations();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", dir);
    return mp_test_finish("test_io");
}
