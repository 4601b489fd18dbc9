/* gen.h -- random problem generators of several shapes, deterministic in
 * their seed.  Every buffer gets id = index. */
#ifndef MP_TEST_GEN_H
#define MP_TEST_GEN_H

#include "memplan.h"

#include <stddef.h>
#include <stdint.h>

typedef enum mp_gen_shape {
    MP_GEN_CHAIN,      /* each op reads the previous output: lifetimes of 2 */
    MP_GEN_RESIDUAL,   /* chain with skip connections every few ops */
    MP_GEN_LONGLIVED,  /* DNN-shaped plus a few buffers alive for most of the run */
    MP_GEN_EQUAL,      /* every size equal */
    MP_GEN_HUGE,       /* sizes near 2^63 / n so sums still fit */
    MP_GEN_UNIFORM,    /* arbitrary intervals and sizes (not DNN-shaped) */
    MP_GEN_DNN,        /* lifetimes short against the run, mixed sizes: the bench shape */
    MP_GEN_SHAPES
} mp_gen_shape;

extern const char *const mp_gen_shape_name[MP_GEN_SHAPES];

/* xorshift64* state; seed 0 is replaced by a fixed constant. */
uint64_t mp_gen_next(uint64_t *state);

/* Fills b[0..n) with a problem of the given shape; aligns are 0 except in
 * MP_GEN_UNIFORM, where some are 8, 64 or 256. */
void mp_gen_problem(mp_buffer_t *b, size_t n, mp_gen_shape shape, uint64_t seed);

#endif
