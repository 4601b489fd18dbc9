/* naive.c -- shared-object baseline: buffer i gets object i.  O(n). */
#include "../core/internal.h"
#include "../strategies/strategies.h"

mp_status mp__objects_naive(const mp_buffer_t *b, size_t n, size_t *object, size_t *k) {
    (void)b;
    for (size_t i = 0; i < n; i++) object[i] = i;
    *k = n;
    return MP_OK;
}
