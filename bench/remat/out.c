/* out.c -- bench_remat's output: one JSON object per line, built by the
 * r_* calls, and progress on stderr. */
#include "bench.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>

opts O;
FILE *OUT;
int FAILURES;
double T_START;

double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void progress(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench_remat [%6.1fs] ", now() - T_START);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}


void r_raw(row *r, const char *fmt, ...) {
    if (r->len >= sizeof r->buf) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->buf + r->len, sizeof r->buf - r->len, fmt, ap);
    va_end(ap);
    if (n > 0) r->len += (size_t)n;
    if (r->len > sizeof r->buf) r->len = sizeof r->buf;
}

void r_key(row *r, const char *k) { r_raw(r, "%s\"%s\":", r->len > 1 ? "," : "", k); }

void r_str(row *r, const char *k, const char *v) {
    r_key(r, k);
    r_raw(r, "\"");
    for (const unsigned char *p = (const unsigned char *)(v ? v : ""); *p; p++) {
        if (*p == '"' || *p == '\\') r_raw(r, "\\%c", *p);
        else if (*p < 0x20) r_raw(r, "\\u%04x", *p);
        else r_raw(r, "%c", *p);
    }
    r_raw(r, "\"");
}

void r_u64(row *r, const char *k, uint64_t v) {
    r_key(r, k);
    r_raw(r, "%llu", (unsigned long long)v);
}

void r_num(row *r, const char *k, double v) {
    r_key(r, k);
    if (isfinite(v)) r_raw(r, "%.6g", v);
    else r_raw(r, "null");
}

void r_begin(row *r, const char *section, const char *model) {
    r->len = 0;
    r_raw(r, "{");
    r_str(r, "section", section);
    if (model) r_str(r, "model", model);
}

void r_end(row *r) {
    r_raw(r, "}\n");
    fwrite(r->buf, 1, r->len, OUT);
    fflush(OUT);
}

void r_error(row *r, mp_status s) {
    r_str(r, "status", "error");
    r_u64(r, "code", (uint64_t)s);
    r_str(r, "error", mp_last_error());
    FAILURES++;
}

int wanted(const char *section) {
    if (!O.only) return 1;
    size_t n = strlen(section);
    for (const char *p = O.only; *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, section, n)) return 1;
        if (!e) break;
        p = e + 1;
    }
    return 0;
}

