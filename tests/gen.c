/* gen.c -- random problems of the shapes DNN planners meet (see gen.h). */
#include "gen.h"

const char *const mp_gen_shape_name[MP_GEN_SHAPES] = {
    "chain", "residual", "longlived", "equal", "huge", "uniform", "dnn"};

uint64_t mp_gen_next(uint64_t *s) {
    if (*s == 0) *s = 0x9E3779B97F4A7C15ull;
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static uint64_t below(uint64_t *s, uint64_t m) { return m ? mp_gen_next(s) % m : 0; }

/* Sizes like tensors: mostly powers-of-two-ish multiples of 64 bytes. */
static uint64_t tensor_size(uint64_t *s) {
    uint64_t base = 64ull << below(s, 14);
    return base + 64 * below(s, base / 64 + 1);
}

void mp_gen_problem(mp_buffer_t *b, size_t n, mp_gen_shape shape, uint64_t seed) {
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + 1;
    uint64_t huge_unit = n ? (UINT64_C(1) << 62) / n : 1;
    for (size_t i = 0; i < n; i++) {
        mp_buffer_t *x = &b[i];
        x->id = i;
        x->align = 0;
        switch (shape) {
        case MP_GEN_CHAIN:
            x->first = i;
            x->last = i + 1;
            x->size = tensor_size(&st);
            break;
        case MP_GEN_RESIDUAL:
            x->first = i;
            x->last = i + 1 + (i % 3 == 0 ? 3 : 0);
            x->size = tensor_size(&st);
            break;
        case MP_GEN_LONGLIVED:
            x->first = i;
            x->last = i + 1 + below(&st, 4);
            if (below(&st, 50) == 0) x->last = i + n / 2 + below(&st, n / 2 + 1);
            x->size = tensor_size(&st);
            break;
        case MP_GEN_EQUAL:
            x->first = below(&st, n);
            x->last = x->first + below(&st, 8);
            x->size = 4096;
            break;
        case MP_GEN_HUGE:
            x->first = below(&st, n);
            x->last = x->first + below(&st, 6);
            x->size = huge_unit - below(&st, huge_unit / 2);
            break;
        case MP_GEN_UNIFORM:
            x->first = below(&st, n + 1);
            x->last = x->first + below(&st, n + 1);
            x->size = 1 + below(&st, 100000);
            x->align = (uint64_t[]){0, 0, 8, 64, 256}[below(&st, 5)];
            break;
        case MP_GEN_DNN:
        default:
            x->first = i / 2 + below(&st, 3);
            x->last = x->first + 1 + (below(&st, 8) == 0 ? below(&st, 64) : below(&st, 4));
            x->size = tensor_size(&st);
            break;
        }
    }
}
