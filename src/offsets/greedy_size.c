/* greedy_size.c -- Greedy by Size for Offset Calculation (pisarchyk2020
 * sec. 5.2, Alg. 3).
 *
 * Buffers are placed largest first (ties: input order); each goes into the
 * smallest gap between the already-placed buffers it conflicts with, or on
 * top of the highest of them when no gap fits.  The gap search is the
 * shared placer in gapfit.c: O(n log n) for the order plus
 * O((k + 1) log n + k log k) per buffer with k conflicting placed buffers. */
#include "gapfit.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

/* Alg. 3 on a normalized problem. */
mp_status mp__offsets_greedy_size(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return MP__NOMEM();
    mp_status s = mp__order_by_size_desc(b, n, order);
    if (s == MP_OK) s = mp__gapfit_run(b, n, order, MP__GAP_PISARCHYK, offset);
    free(order);
    return s;
}
