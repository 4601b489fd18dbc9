/* mip.h -- sekiyama2018 sec. 3.1's MIP for offset planning, solved with
 * GLPK: an oracle for the tests (tests/exact/), never part of libmemplan
 * (so the library gains no dependency). */
#ifndef MP_TEST_MIP_H
#define MP_TEST_MIP_H

#include "memplan.h"

typedef enum mp_mip_result {
    MP_MIP_OPTIMAL = 0,   /* *opt and off[] hold a proven optimum */
    MP_MIP_LIMIT = 1,     /* the time limit stopped GLPK first */
    MP_MIP_ERROR = 2      /* invalid problem, no memory, or GLPK failed */
} mp_mip_result;

/* Minimises the footprint of the n buffers b (valid; sizes are rounded up
 * to their alignment) by the MIP with big-M = ub, where ub is the footprint
 * of any valid plan (e.g. a heuristic's); lb is a proven lower bound (the
 * max-load bound) given to the solver as a cut.  On MP_MIP_OPTIMAL fills
 * *opt and off[0..n) (a plan of that footprint).  At most seconds of time. */
mp_mip_result mp_mip_solve(const mp_buffer_t *b, size_t n, uint64_t lb, uint64_t ub,
                           double seconds, uint64_t *opt, uint64_t *off);

#endif
