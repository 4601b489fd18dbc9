/* naive.c -- the baseline: every buffer its own region, in input order.
 * Its footprint is the sum of aligned sizes (the "Naive" rows of
 * pisarchyk2020 Tables 1-2).  O(n). */
#include "../core/internal.h"

mp_status mp__offsets_naive(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    uint64_t end = 0;
    for (size_t i = 0; i < n; i++) {
        offset[i] = mp__align_up(end, b[i].align);
        end = offset[i] + b[i].size;
    }
    return MP_OK;
}
