/* harness.h -- the test harness: checks, counters, and plan verification.
 *
 * A test program calls MP_CHECK* as often as it likes and returns
 * mp_test_finish(), which prints "N passed, N failed" and the exit code. */
#ifndef MP_TEST_HARNESS_H
#define MP_TEST_HARNESS_H

#include "memplan.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

extern long mp_test_passed, mp_test_failed;

bool mp_test_report(bool ok, const char *file, int line, const char *expr);
#define MP_CHECK(x) mp_test_report((x), __FILE__, __LINE__, #x)
#define MP_CHECK_EQ_U64(a, b)                                                              \
    mp_test_report_u64((uint64_t)(a), (uint64_t)(b), __FILE__, __LINE__, #a " == " #b)
bool mp_test_report_u64(uint64_t a, uint64_t b, const char *file, int line, const char *expr);
#define MP_CHECK_OK(st) mp_test_report_status((st), __FILE__, __LINE__, #st)
bool mp_test_report_status(mp_status st, const char *file, int line, const char *expr);

/* Prints the closing line and returns the process exit code. */
int mp_test_finish(const char *suite);

/* Plans b with strategy, runs the checker on the result and checks
 * lower bound <= footprint <= naive; returns the footprint (0 on failure)
 * and, if keep is not NULL, hands the plan over instead of freeing it
 * (always: a zeroed plan if planning failed; the caller frees it). */
uint64_t mp_test_plan(const mp_buffer_t *b, size_t n, const char *strategy, mp_plan_t *keep);

/* Builds an offsets-only plan around a caller's offsets and runs the
 * checker on it (for oracles).  Returns true if valid. */
bool mp_test_check_offsets(const mp_buffer_t *b, size_t n, const uint64_t *off);

/* Scratch files: dir is a mkdtemp() directory of the test.  mp_test_path
 * returns "dir/name" in a static buffer (valid until the next call);
 * mp_test_write_file writes text to a path. */
const char *mp_test_path(const char *dir, const char *name);
void mp_test_write_file(const char *path, const char *text);

#endif
