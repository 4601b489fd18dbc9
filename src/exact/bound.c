/* bound.c -- lower bounds from exact searches on sub-problems (stub). */
#include "exact.h"

mp_status mp__xbound_round(mp__xsolver *v, uint64_t budget, mp__xlimit *lim) {
    (void)v, (void)budget, (void)lim;
    return MP_OK;
}

mp_status mp_exact_lower_bound(const mp_buffer_t *b, size_t n, const mp_exact_opts_t *opts,
                               uint64_t *lower_bound) {
    (void)opts;
    mp_bounds_t bd;
    mp_status s = mp_bounds_compute(b, n, &bd);
    if (s == MP_OK) *lower_bound = bd.offsets;
    return s;
}
