/* oracle.h -- the O(n^2) forms of every strategy, written as literally as
 * the papers print them.  Tests compare each fast strategy with its oracle
 * byte for byte; the bench times them side by side.  Inputs are normalized
 * problems (sizes already aligned, align >= 1), like the strategies get. */
#ifndef MP_TEST_ORACLE_H
#define MP_TEST_ORACLE_H

#include "memplan.h"

#include <stddef.h>
#include <stdint.h>

mp_status oracle_greedy_size(const mp_buffer_t *b, size_t n, uint64_t *off);
mp_status oracle_greedy_breadth(const mp_buffer_t *b, size_t n, uint64_t *off);
mp_status oracle_smartpool_bestfit(const mp_buffer_t *b, size_t n, uint64_t *off);
mp_status oracle_smartpool_firstfit(const mp_buffer_t *b, size_t n, uint64_t *off);
mp_status oracle_inorder(const mp_buffer_t *b, size_t n, uint64_t *off);
mp_status oracle_strip_bestfit(const mp_buffer_t *b, size_t n, uint64_t *off);

mp_status oracle_objects_greedy_size(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k);
mp_status oracle_objects_greedy_size_improved(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k);
mp_status oracle_objects_greedy_breadth(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k);
mp_status oracle_objects_inorder(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k);
mp_status oracle_objects_mincostflow(const mp_buffer_t *b, size_t n, size_t *obj, size_t *k);

/* Bounds by brute force over every start time. */
void oracle_bounds(const mp_buffer_t *b, size_t n, mp_bounds_t *out);

#endif
