/* oracle_bounds.c -- lower bounds by brute force, straight from the
 * definitions of pisarchyk2020 sec. 3: build every operator profile (the
 * buffers live at each start time), sort it, take breadths and positional
 * maxima.  O(n^2 log n). */
#include "oracle.h"

#include <stdlib.h>
#include <string.h>

static int desc(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? 1 : a > b ? -1 : 0;
}

void oracle_bounds(const mp_buffer_t *b, size_t n, mp_bounds_t *out) {
    memset(out, 0, sizeof *out);
    uint64_t *pm = calloc(n + 1, sizeof *pm), *prof = malloc((n + 1) * sizeof *prof);
    for (size_t i = 0; i < n; i++) {
        uint64_t a = b[i].align ? b[i].align : 1;
        out->naive += (b[i].size + a - 1) / a * a;
    }
    for (size_t op = 0; op < n; op++) {
        uint64_t t = b[op].first, breadth = 0;
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (b[i].first <= t && t <= b[i].last) {
                uint64_t a = b[i].align ? b[i].align : 1;
                prof[k++] = (b[i].size + a - 1) / a * a;
            }
        qsort(prof, k, sizeof *prof, desc);
        for (size_t j = 0; j < k; j++) {
            breadth += prof[j];
            if (prof[j] > pm[j]) pm[j] = prof[j];
        }
        if (breadth > out->offsets) out->offsets = breadth;
        if (k > out->peak_count) out->peak_count = k;
    }
    for (size_t j = 0; j < n; j++) out->objects += pm[j];
    free(pm);
    free(prof);
}
