/* naive.c -- the baseline: every buffer its own region.  Its footprint is
 * the sum of aligned sizes (the "Naive" rows of pisarchyk2020 Tables 1-2).
 * Buffers go by decreasing alignment, then input order: each offset is
 * then a multiple of every later buffer's alignment and no padding is ever
 * inserted.  O(n log n). */
#include "../core/internal.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

mp_status mp__offsets_naive(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){UINT64_MAX - b[i].align, 0, i};
    mp_status s = mp__sort_keys(k, n);
    uint64_t end = 0;
    for (size_t j = 0; s == MP_OK && j < n; j++) {
        offset[k[j].i] = end;
        end += b[k[j].i].size;
    }
    free(k);
    return s;
}
