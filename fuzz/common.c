/* common.c -- the helpers every fuzz target links (fuzz.h): inputs as
 * files, a private scratch directory, splitting an input in two, and the
 * checks every plan goes through. */
#define _GNU_SOURCE
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int memfd = -1;
static char memfd_path[64];
static char dir[256];
static char tmp_path[512];

void fz_fail(const char *file, int line, const char *what) {
    fprintf(stderr, "fuzz: %s:%d: %s (last error: %s)\n", file, line, what, mp_last_error());
    abort();
}

const char *fz_file(const uint8_t *data, size_t size) {
    if (memfd < 0) {
        memfd = memfd_create("memplan-fuzz", 0);
        FZ_CHECK(memfd >= 0, "memfd_create failed");
        snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
    }
    FZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate failed");
    size_t done = 0;
    while (done < size) {
        ssize_t k = pwrite(memfd, data + done, size - done, (off_t)done);
        FZ_CHECK(k > 0, "pwrite failed");
        done += (size_t)k;
    }
    return memfd_path;
}

/* Removes the scratch directory and what is in it (files only). */
static void remove_dir(void) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[600];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        unlink(p);
    }
    closedir(d);
    rmdir(dir);
}

const char *fz_tmp(const char *name) {
    if (!dir[0]) {
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/memplan-fuzz-XXXXXX", base ? base : "/tmp");
        FZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp failed");
        atexit(remove_dir);
    }
    snprintf(tmp_path, sizeof tmp_path, "%s/%s", dir, name);
    return tmp_path;
}

size_t fz_split(const uint8_t *data, size_t size, const char *sep, const uint8_t **rest,
                size_t *rest_n) {
    size_t k = strlen(sep);
    for (size_t i = 0; k && i + k <= size; i++)
        if (memcmp(data + i, sep, k) == 0) {
            *rest = data + i + k;
            *rest_n = size - i - k;
            return i;
        }
    *rest = NULL;
    *rest_n = 0;
    return size;
}

void fz_check_plan(const mp_buffer_t *b, size_t n, const mp_plan_t *p, const mp_bounds_t *bd,
                   const char *who) {
    mp_check_report_t rep;
    if (mp_plan_check(b, n, p, &rep) != MP_OK) {
        fprintf(stderr, "fuzz: the plan of %s fails the checker\n", who);
        fz_fail(__FILE__, __LINE__, "invalid plan");
    }
    FZ_CHECK(p->n == n && rep.footprint == p->footprint, "plan footprint mismatch");
    FZ_CHECK(p->footprint >= bd->offsets, "plan footprint below the offsets lower bound");
    FZ_CHECK(!p->object || p->footprint >= bd->objects, "object plan below the objects bound");
}

mp_graph_t *fz_graph(const uint8_t *data, size_t size) {
    mp_graph_t *g = NULL;
    mp_status st = size >= 2 && data[0] == 0x1f && data[1] == 0x8b
                       ? mp_graph_load(fz_file(data, size), &g)
                       : mp_graph_parse((const char *)data, size, "fuzz.json", &g);
    if (st != MP_OK) {
        FZ_CHECK(g == NULL, "a failed graph read left a graph");
        FZ_CHECK(mp_last_error()[0] != 0, "a failed graph read without a message");
        return NULL;
    }
    FZ_CHECK(g != NULL, "a graph read returned no graph");
    return g;
}

int fz_tail(const uint8_t *data, size_t *size, char *tail, size_t cap) {
    const uint8_t *rest;
    size_t rest_n;
    *size = fz_split(data, *size, "\n@@\n", &rest, &rest_n);
    tail[0] = 0;
    if (!rest) return 0;
    size_t k = rest_n < cap - 1 ? rest_n : cap - 1;
    memcpy(tail, rest, k);
    tail[k] = 0;
    return 1;
}

void fz_plan_checked(const mp_buffer_t *b, size_t n, size_t max, const char *strategy) {
    if (!n || n > max) return;
    FZ_CHECK(mp_problem_validate(b, n) == MP_OK, "the library made an invalid problem");
    mp_bounds_t bd;
    FZ_CHECK(mp_bounds_compute(b, n, &bd) == MP_OK, "mp_bounds_compute failed");
    mp_plan_t p;
    mp_status st = mp_plan_compute(b, n, strategy, &p);
    if (st == MP_ENOMEM) return;
    FZ_CHECK(st == MP_OK, strategy);
    fz_check_plan(b, n, &p, &bd, strategy);
    mp_plan_free(&p);
}

int fz_nul_only_in_comments(const uint8_t *data, size_t size, int indented) {
    size_t start = 0;
    if (size >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0) start = 3;   /* a BOM is skipped */
    for (size_t i = start, line = start; i < size; i++) {
        if (data[i] == '\n') {
            line = i + 1;
            continue;
        }
        if (data[i] != 0) continue;
        size_t h = line;
        while (indented && h < i && (data[h] == ' ' || data[h] == '\t')) h++;
        if (data[h] != '#') return 0;
    }
    return 1;
}
