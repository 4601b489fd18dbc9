/* replay.c -- micro-benchmark of alloc/free cost on a replayed trace.
 *
 *   replay malloc RECORDS.csv ITERS REPS    through the process's malloc/free
 *   replay arena  RECORDS.csv ITERS REPS    through mp_arena_alloc/free
 *   replay arena-mark ...                   the same, calling mp_arena_mark_iteration
 *                                           at the top of every iteration
 *
 * RECORDS.csv holds usage records (id,first,last,size, inclusive logical
 * times; docs/formats.md), e.g. one training step exported from PyTorch.
 * They are turned into an alloc/free sequence: at each time t, the buffers
 * whose first time is t are allocated (in file order), then the buffers whose
 * last time is t are freed.  One repetition replays the sequence ITERS times
 * and writes one byte into every block (so that the allocator's memory is
 * really used).  Prints median/min/max ns per alloc+free pair over REPS
 * repetitions.  In arena mode the arena first learns from iterations that
 * are not timed, until it is replaying; the counters are printed on stderr.
 * Exit status 1 if an allocation fails or the arena never replays.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memplan.h"

typedef struct { long id, first, last; uint64_t size; } rec_t;
typedef struct { int is_free; long idx; } ev_t;

static rec_t *recs;
static long nrec;
static ev_t *evs;
static long nev;
static void **ptrs;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void load(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) { perror(path); exit(2); }
    char line[512];
    long cap = 0;
    while (fgets(line, sizeof line, f)) {
        rec_t r;
        unsigned long long sz;
        if (sscanf(line, "%ld,%ld,%ld,%llu", &r.id, &r.first, &r.last, &sz) != 4) continue;
        if (sz == 0) continue;
        r.size = sz;
        if (nrec == cap) {
            cap = cap ? 2 * cap : 256;
            recs = realloc(recs, cap * sizeof *recs);
            if (!recs) exit(2);
        }
        recs[nrec++] = r;
    }
    fclose(f);
    if (nrec == 0) { fprintf(stderr, "%s: no records\n", path); exit(2); }
    long tmax = 0;
    for (long i = 0; i < nrec; i++) if (recs[i].last > tmax) tmax = recs[i].last;
    evs = malloc(2 * nrec * sizeof *evs);
    ptrs = calloc(nrec, sizeof *ptrs);
    if (!evs || !ptrs) exit(2);
    /* O(T * n) is fine for a few hundred records. */
    for (long t = 0; t <= tmax; t++) {
        for (long i = 0; i < nrec; i++)
            if (recs[i].first == t) evs[nev++] = (ev_t){0, i};
        for (long i = 0; i < nrec; i++)
            if (recs[i].last == t) evs[nev++] = (ev_t){1, i};
    }
}

static mp_arena_t *arena;
static int mark;

static int one_iteration(int use_arena)
{
    if (use_arena && mark) mp_arena_mark_iteration(arena);
    for (long e = 0; e < nev; e++) {
        long i = evs[e].idx;
        if (!evs[e].is_free) {
            void *p = NULL;
            if (use_arena) {
                if (mp_arena_alloc(arena, recs[i].size, &p) != MP_OK) return -1;
            } else {
                p = malloc(recs[i].size);
                if (!p) return -1;
            }
            *(volatile char *)p = (char)e;
            ptrs[i] = p;
        } else {
            if (use_arena) mp_arena_free(arena, ptrs[i]);
            else free(ptrs[i]);
            ptrs[i] = NULL;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s malloc|arena|arena-mark RECORDS.csv ITERS REPS\n", argv[0]);
        return 2;
    }
    int use_arena = strncmp(argv[1], "arena", 5) == 0;
    mark = strcmp(argv[1], "arena-mark") == 0;
    load(argv[2]);
    long iters = atol(argv[3]), reps = atol(argv[4]);
    if (iters < 1 || reps < 1) return 2;
    if (use_arena) {
        if (mp_arena_create(NULL, &arena) != MP_OK) {
            fprintf(stderr, "mp_arena_create: %s\n", mp_last_error());
            return 1;
        }
        mp_arena_stats_t st;
        for (int k = 0; k < 100; k++) {
            if (one_iteration(1)) { fprintf(stderr, "allocation failed\n"); return 1; }
            mp_arena_stats(arena, &st);
            if (st.state == MP_ARENA_REPLAYING && !st.replan_pending && k >= 3) break;
        }
        if (st.state != MP_ARENA_REPLAYING) { fprintf(stderr, "arena never replayed\n"); return 1; }
    } else {
        for (int k = 0; k < 3; k++)
            if (one_iteration(0)) { fprintf(stderr, "allocation failed\n"); return 1; }
    }
    double *ns = malloc(reps * sizeof *ns);
    if (!ns) return 1;
    for (long r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (long it = 0; it < iters; it++)
            if (one_iteration(use_arena)) { fprintf(stderr, "allocation failed\n"); return 1; }
        ns[r] = (now_ns() - t0) / ((double)iters * nrec);
    }
    qsort(ns, reps, sizeof *ns, cmp_double);
    printf("median_ns=%.1f min_ns=%.1f max_ns=%.1f pairs=%ld iters=%ld reps=%ld\n",
           ns[reps / 2], ns[0], ns[reps - 1], nrec, iters, reps);
    if (use_arena) {
        mp_arena_stats_t st;
        mp_arena_stats(arena, &st);
        fprintf(stderr, "arena: %s, %zu requests per iteration, %llu from the region, "
                "%llu learning, fallbacks %llu too large %llu cross %llu unforeseen %llu overlap, "
                "footprint %llu (bound %llu)\n",
                mp_arena_state_name(st.state), st.iteration_length,
                (unsigned long long)st.served_arena, (unsigned long long)st.served_learning,
                (unsigned long long)st.fb_too_large, (unsigned long long)st.fb_cross,
                (unsigned long long)st.fb_unforeseen, (unsigned long long)st.fb_overlap,
                (unsigned long long)st.planned_footprint, (unsigned long long)st.lower_bound);
        mp_arena_destroy(arena, NULL);
    }
    free(ns);
    return 0;
}
