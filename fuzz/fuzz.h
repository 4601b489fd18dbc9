/* fuzz.h -- what the libFuzzer targets in fuzz/ share (fuzz/common.c).
 *
 * The library's CSV and trace readers take paths, so a target hands its
 * input to them as a file: a memfd (an anonymous in-memory file) rewritten
 * for every input and opened again through /proc/self/fd/N, so nothing is
 * written to disk and nothing is left behind by a crash.  Round trips
 * (write, read back) go through a private directory on /dev/shm (or
 * $TMPDIR), removed at exit.  A broken invariant aborts with a message, which
 * libFuzzer reports as a crash with the input that caused it. */
#ifndef MEMPLAN_FUZZ_H
#define MEMPLAN_FUZZ_H

#include <memplan.h>

#include <stddef.h>
#include <stdint.h>

/* Inputs above this many bytes are skipped by every target: the readers are
 * linear, but the planners behind them are not (some O(n^2) and worse),
 * and one slow input stalls a short run.  Small inputs find the same bugs. */
#define FZ_MAX_INPUT (64 * 1024)

/* A path naming a file that holds data[0..size) (the same memfd every call;
 * valid until the next call).  Aborts if the memfd cannot be made. */
const char *fz_file(const uint8_t *data, size_t size);

/* A path in the target's private directory: dir/name (a static buffer,
 * valid until the next call). */
const char *fz_tmp(const char *name);

/* The part of data before the first occurrence of sep (the whole input when
 * sep does not occur) and, in *rest and *rest_n, what follows it (NULL, 0). */
size_t fz_split(const uint8_t *data, size_t size, const char *sep, const uint8_t **rest,
                size_t *rest_n);

/* Inputs "HEAD\n@@\nTAIL": when the separator occurs, *size becomes HEAD's
 * length, tail gets TAIL as a string (cut to cap - 1 bytes) and 1 is
 * returned; else 0 and tail is "". */
int fz_tail(const uint8_t *data, size_t *size, char *tail, size_t cap);

/* 1 when every line of data holding a NUL byte is a comment: '#' first,
 * or (indented = 1, the trace format) after spaces and tabs.  What a CSV or
 * trace reader that accepted data must have seen (issue 13: a NUL byte once
 * cut a line short silently). */
int fz_nul_only_in_comments(const uint8_t *data, size_t size, int indented);

/* The graph in data: a gzip stream (it opens with 1f 8b) through
 * mp_graph_load on fz_file, plain JSON through mp_graph_parse in memory.
 * NULL when the reader refuses it (with a message, or this aborts). */
mp_graph_t *fz_graph(const uint8_t *data, size_t size);

/* Aborts with "fuzz: FILE:LINE: what (mp_last_error())" unless cond. */
#define FZ_CHECK(cond, what) \
    ((cond) ? (void)0 : fz_fail(__FILE__, __LINE__, (what)))
void fz_fail(const char *file, int line, const char *what);

/* Checks every plan a target makes: mp_plan_check must accept it, and its
 * footprint can be below neither the offsets bound nor (object plans) the
 * objects bound. */
void fz_check_plan(const mp_buffer_t *b, size_t n, const mp_plan_t *p, const mp_bounds_t *bd,
                   const char *who);

/* Plans a problem made by the library (graph records, trace windows,
 * residencies) with strategy: it must be valid, the plan must be made and
 * pass fz_check_plan.  Problems above max buffers are skipped. */
void fz_plan_checked(const mp_buffer_t *b, size_t n, size_t max, const char *strategy);

#endif
