/* peak.c -- "peak first" orders for whole-plan first fits of large traces.
 *
 * At the time of the largest load every buffer live then must be stacked
 * without a hole for a plan to meet the max-load bound.  First fit in an
 * order that starts with exactly those buffers stacks them so (they all
 * overlap one another, so each lands on the previous one's top), and the
 * buffers placed after them only fill the space around.  Which order of
 * the peak's buffers and of the rest works depends on the trace: on
 * idealloc's S_1 the peak's buffers by start time then the rest by size
 * meets the bound, on pangu the peak's buffers by size then the rest by
 * start time does (docs/exact.md), where no single whole-plan order
 * tried before came within 0.7%.  So a variant names two keys, one for
 * each group, from a short list; ties always fall to the buffer's index,
 * so an order is the same on every machine.
 *
 * Plain "auto" (src/offsets/auto.c) runs these orders, after greedy by
 * size (mp__xsize_order, here too), when none of its strategies meets the
 * bound; anytime "auto" (anytime.c) runs them first.
 *
 * Cost: O(n log n) for the events and the sorts; O(n) memory. */
#include "exact.h"

#include <stdlib.h>

/* Sort keys (smaller first), with time t the peak's for PK_ARM. */
enum { PK_SIZE, PK_FIRST, PK_LIFE, PK_LAST, PK_ARM, PK_KEYS };

/* Variants in the order worth trying: (peak key, rest key). */
static const unsigned char variants[][2] = {
    {PK_FIRST, PK_SIZE}, {PK_SIZE, PK_FIRST}, {PK_LIFE, PK_SIZE}, {PK_SIZE, PK_LIFE},
    {PK_ARM, PK_SIZE},   {PK_SIZE, PK_SIZE},  {PK_FIRST, PK_FIRST}, {PK_LIFE, PK_FIRST},
    {PK_ARM, PK_FIRST},  {PK_SIZE, PK_ARM},   {PK_LAST, PK_SIZE},  {PK_SIZE, PK_LAST},
};

unsigned mp__xpeak_variants(void) { return (unsigned)(sizeof variants / sizeof *variants); }

/* The key of buffer i under k, peak time t. */
static mp__key key_of(const mp_buffer_t *b, size_t i, unsigned k, uint64_t t) {
    const mp_buffer_t *x = &b[i];
    uint64_t big = UINT64_MAX - x->size, life = x->last - x->first;
    switch (k) {
    case PK_SIZE: return (mp__key){big, x->first, i};
    case PK_FIRST: return (mp__key){x->first, UINT64_MAX - x->last, i};
    case PK_LIFE: return (mp__key){UINT64_MAX - life, big, i};
    case PK_LAST: return (mp__key){UINT64_MAX - x->last, x->first, i};
    default: { /* the longer of the two arms around t first (t within the lifetime) */
        uint64_t arm = mp__max64(t - x->first, x->last - t);
        return (mp__key){UINT64_MAX - arm, big, i};
    }
    }
}

mp_status mp__xpeak_order(const mp_buffer_t *b, size_t n, unsigned variant, size_t *order) {
    const unsigned char *v = variants[variant % mp__xpeak_variants()];
    uint64_t load, t;
    mp_status s = mp__load_peak(b, n, false, &load, &t);
    mp__key *keys = s == MP_OK ? malloc((n ? n : 1) * sizeof *keys) : NULL;
    if (s == MP_OK && !keys) s = MP__NOMEM();
    if (s != MP_OK) return s;
    size_t np = 0, k = 0;
    for (size_t i = 0; i < n; i++) /* the peak's buffers */
        if (b[i].first <= t && b[i].last >= t) keys[np++] = key_of(b, i, v[0], t);
    s = mp__sort_keys(keys, np);
    for (size_t j = 0; s == MP_OK && j < np; j++) order[k++] = keys[j].i;
    size_t nr = 0;
    for (size_t i = 0; s == MP_OK && i < n; i++)
        if (!(b[i].first <= t && b[i].last >= t)) keys[nr++] = key_of(b, i, v[1], t);
    if (s == MP_OK) s = mp__sort_keys(keys, nr);
    for (size_t j = 0; s == MP_OK && j < nr; j++) order[k++] = keys[j].i;
    free(keys);
    return s;
}

mp_status mp__xsize_order(const mp_buffer_t *b, size_t n, size_t *order) {
    mp__key *keys = malloc((n ? n : 1) * sizeof *keys);
    if (!keys) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) /* larger first, then longer-lived */
        keys[i] = (mp__key){UINT64_MAX - b[i].size, UINT64_MAX - (b[i].last - b[i].first), i};
    mp_status s = mp__sort_keys(keys, n);
    for (size_t k = 0; s == MP_OK && k < n; k++) order[k] = keys[k].i;
    free(keys);
    return s;
}
