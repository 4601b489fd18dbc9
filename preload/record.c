/* record.c -- MEMPLAN_TRACE=FILE: the program's malloc family as a
 * memplan-trace/1 trace (docs/preload.md, "Tracing a program").
 *
 * Every allocation the program makes (any size, through any interposed
 * function) is recorded as "a ADDRESS SIZE NS" after the real call
 * returned it, every free as "f ADDRESS NS" before the real call can hand
 * the address out again, so the order of the events is one the program
 * could observe: an address is never allocated twice in the trace without
 * a free between.  A realloc that goes to the real allocator is recorded
 * as a free and an allocation under the same lock as the real call.
 * Reads and writes happen in the program's own code and never reach malloc:
 * the trace has none.  NS counts from the library's start (CLOCK_MONOTONIC).
 *
 * The events go into one mp_trace_t under one mutex; everything memplan
 * allocates for it runs under mpp__guard, so it goes to the real allocator
 * and is not recorded.  At MEMPLAN_TRACE_MAX events recording stops for
 * good: the trace stays a prefix of the run.  At exit the trace is written
 * by mp_trace_write (a temporary file beside FILE, renamed over it; FIFOs
 * and devices written directly).  A forked child neither records nor
 * writes (its parent's trace is the file's).
 *
 * MEMPLAN_TRACE_MIN=SIZE leaves out blocks below SIZE (and their frees),
 * so that a program with a large start-up (an interpreter's imports) gives
 * a trace of its big blocks, whose loop period detection can see.
 *
 * Events the trace cannot take are dropped and counted: a free of an
 * address it never saw allocated (memory from before the library started,
 * from the dynamic loader's bootstrap, or below MEMPLAN_TRACE_MIN) is
 * skipped, and an allocation at an address it still holds as live (its
 * free went through a path not interposed, e.g. __libc_free) gets that
 * free recorded first. */
#define _GNU_SOURCE
#include "preload.h"

#include "memplan.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_MAX ((size_t)4 << 20)

_Atomic int mpp__rec_on;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static mp_trace_t *trace;
static char path[4096];
static size_t max_events = DEFAULT_MAX, min_size = 1;
static int full, child;
static uint64_t t0, n_skipped, n_repaired;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Appends text to path (len used); 0 if it does not fit. */
static int append(size_t *len, const char *text, size_t n) {
    if (*len + n >= sizeof path) return 0;
    memcpy(path + *len, text, n);
    path[*len += n] = 0;
    return 1;
}

/* FILE with %p replaced by the process id and %% by %, made absolute
 * against the starting directory (the program may change directory before
 * exit); 0 if it does not fit. */
static int set_path(const char *f) {
    size_t len = 0;
    char pid[24];
    int np = snprintf(pid, sizeof pid, "%ld", (long)getpid());
    if (f[0] != '/') {
        if (!getcwd(path, sizeof path)) return 0;
        len = strlen(path);
        if (!append(&len, "/", 1)) return 0;
    }
    for (; *f; f++) {
        int ok;
        if (f[0] == '%' && f[1] == 'p') ok = append(&len, pid, (size_t)np), f++;
        else if (f[0] == '%' && f[1] == '%') ok = append(&len, "%", 1), f++;
        else ok = append(&len, f, 1);
        if (!ok) return 0;
    }
    return 1;
}

int mpp__rec_init(void) {
    const char *f = getenv("MEMPLAN_TRACE");
    if (!f || !*f) return 0;
    mpp__env_size("MEMPLAN_TRACE_MAX", &max_events, "4M (4194304 events)");
    mpp__env_size("MEMPLAN_TRACE_MIN", &min_size, "1 (every block)");
    if (!set_path(f)) {
        mpp__say("memplan-preload: MEMPLAN_TRACE=%s: the path is too long; not tracing\n", f);
        return 0;
    }
    if (mp_trace_create(&trace) != MP_OK) {
        mpp__say("memplan-preload: MEMPLAN_TRACE=%s: out of memory; not tracing\n", f);
        return 0;
    }
    t0 = now_ns();
    full = max_events == 0;
    atomic_store(&mpp__rec_on, !full);
    return 1;
}

/* The number of events recorded so far. */
static size_t count(void) {
    size_t n;
    (void)mp_trace_events(trace, &n);
    return n;
}

/* True when one more event fits under the bound; stops recording if not. */
static int room(void) {
    if (!full && count() < max_events) return 1;
    full = 1;
    atomic_store(&mpp__rec_on, 0);
    return 0;
}

/* The two event kinds, called with mu held. */
static void put_free(void *p) {
    if (room() && mp_trace_record_free(trace, (uintptr_t)p, now_ns() - t0) != MP_OK) n_skipped++;
}

static void put_alloc(void *p, size_t size) {
    if (!size || size < min_size || !room()) return;   /* a trace block has a positive size */
    uint64_t h = (uintptr_t)p;
    if (mp_trace_record_alloc(trace, h, size, now_ns() - t0) == MP_OK) return;
    /* still live in the trace: its free was not seen */
    if (mp_trace_record_free(trace, h, now_ns() - t0) == MP_OK && room() &&
        mp_trace_record_alloc(trace, h, size, now_ns() - t0) == MP_OK)
        n_repaired++;
    else
        n_skipped++;
}

/* Takes the lock under the guard (the trace's own allocations go to the
 * real allocator, unrecorded); returns errno, which leave restores: the
 * program's malloc must not change it on success. */
static int enter(void) {
    int e = errno;
    mpp__guard = 1;
    pthread_mutex_lock(&mu);
    return e;
}

static void leave(int e) {
    pthread_mutex_unlock(&mu);
    mpp__guard = 0;
    errno = e;
}

void mpp__rec_alloc(void *p, size_t size) {
    if (!p) return;
    int e = enter();
    if (trace && !child) put_alloc(p, size);
    leave(e);
}

void mpp__rec_free(void *p) {
    if (!p) return;
    int e = enter();
    if (trace && !child) put_free(p);
    leave(e);
}

void *mpp__rec_realloc(void *p, size_t size) {
    (void)enter();
    void *q = mpp__real.realloc(p, size);
    int e = errno;
    if (trace && !child && (q || size == 0)) {   /* glibc: realloc(p, 0) frees p */
        put_free(p);
        if (q) put_alloc(q, size);
    }
    leave(e);
    return q;
}

void mpp__rec_fork_child(void) {
    child = 1;   /* the parent's lock may be held: never touched again */
    atomic_store(&mpp__rec_on, 0);
}

/* The line about the trace written, or why it was not. */
static void report(mp_status st, size_t n, int verbose) {
    if (st != MP_OK) {
        mpp__say("memplan-preload: MEMPLAN_TRACE: not written: %s\n", mp_last_error());
        return;
    }
    if (full)
        mpp__say("memplan-preload: trace %s: recording stopped at MEMPLAN_TRACE_MAX=%zu events; "
                 "the file holds the run's first %zu events\n", path, max_events, n);
    else if (verbose)
        mpp__say("memplan-preload: trace %s: %zu events\n", path, n);
    if (verbose && (n_skipped || n_repaired))
        mpp__say("memplan-preload: trace %s: %llu frees of blocks not in the trace skipped "
                 "(allocated before tracing or below MEMPLAN_TRACE_MIN), %llu frees not seen "
                 "and added\n", path, (unsigned long long)n_skipped,
                 (unsigned long long)n_repaired);
}

void mpp__rec_finish(int verbose) {
    if (child) return;
    int e = enter();
    atomic_store(&mpp__rec_on, 0);
    if (trace) {
        report(mp_trace_write(path, trace), count(), verbose);
        mp_trace_free(trace);   /* threads still running find it gone */
        trace = NULL;
    }
    leave(e);
}
