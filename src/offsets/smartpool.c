/* smartpool.c -- SmartPool's offline pool (zhang2019 sec. III-C), best fit
 * and first fit.
 *
 * Variables are taken in descending order of size (ties: input order); each
 * goes into a free hole of the pool over its lifetime: the smallest hole
 * that fits (best fit) or the lowest (first fit).  Holes lie inside the
 * current pool [0, pool_top), so the range between the highest conflicting
 * block and the pool top counts as a hole.  When none fits the pool is
 * extended by just what is missing: the variable goes right above the
 * highest conflicting block.  The hole search is the shared placer in
 * gapfit.c: O(n log n) plus O((k + 1) log n + k log k) per variable with k
 * conflicting placed variables. */
#include "gapfit.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

static mp_status smartpool(const mp_buffer_t *b, size_t n, uint64_t *offset,
                           mp__gap_policy policy) {
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) return MP__NOMEM();
    mp_status s = mp__order_by_size_desc(b, n, order);
    if (s == MP_OK) s = mp__gapfit_run(b, n, order, policy, offset);
    free(order);
    return s;
}

/* SmartPool best fit on a normalized problem. */
mp_status mp__offsets_smartpool_bestfit(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    return smartpool(b, n, offset, MP__GAP_SMARTPOOL_BEST);
}

/* SmartPool first fit on a normalized problem. */
mp_status mp__offsets_smartpool_firstfit(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    return smartpool(b, n, offset, MP__GAP_SMARTPOOL_FIRST);
}
