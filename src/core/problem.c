/* problem.c -- validation and normalization of buffer lists.
 *
 * Validation gives the first offending buffer by index and id, so a user
 * can find it in the file it came from.  Normalization rounds sizes up to
 * their alignment once, so that no strategy has to. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

uint64_t mp_buffer_aligned_size(const mp_buffer_t *b) {
    uint64_t a = b->align ? b->align : 1;
    if (b->size > UINT64_MAX - (a - 1)) return 0;
    return mp__align_up(b->size, a);
}

static bool is_pow2(uint64_t a) { return a && !(a & (a - 1)); }

static mp_status check_ids_distinct(const mp_buffer_t *b, size_t n) {
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){b[i].id, 0, i};
    mp_status s = mp__sort_keys(k, n);
    for (size_t i = 1; s == MP_OK && i < n; i++)
        if (k[i].a == k[i - 1].a)
            s = mp__err(MP_EINVAL, "buffer %zu: duplicate id %llu (also buffer %zu)",
                        k[i].i, (unsigned long long)k[i].a, k[i - 1].i);
    free(k);
    return s;
}

mp_status mp_problem_validate(const mp_buffer_t *b, size_t n) {
    if (n && !b) return mp__err(MP_EINVAL, "buffers: NULL array with n=%zu", n);
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const mp_buffer_t *x = &b[i];
        unsigned long long id = (unsigned long long)x->id;
        if (x->last < x->first)
            return mp__err(MP_EINVAL, "buffer %zu (id %llu): last %llu < first %llu", i, id,
                           (unsigned long long)x->last, (unsigned long long)x->first);
        if (x->last == UINT64_MAX)
            return mp__err(MP_EINVAL, "buffer %zu (id %llu): last must be < 2^64-1", i, id);
        if (x->size == 0) return mp__err(MP_EINVAL, "buffer %zu (id %llu): size 0", i, id);
        if (x->align && !is_pow2(x->align))
            return mp__err(MP_EINVAL, "buffer %zu (id %llu): align %llu is not a power of two",
                           i, id, (unsigned long long)x->align);
        /* Room for the aligned size plus the worst padding before it, so
         * no strategy's footprint can overflow even with mixed alignments. */
        uint64_t s = mp_buffer_aligned_size(x), pad = (x->align ? x->align : 1) - 1;
        if (s == 0 || s > UINT64_MAX - pad || total > UINT64_MAX - s - pad)
            return mp__err(MP_EOVERFLOW,
                           "buffer %zu (id %llu): sum of aligned sizes overflows 64 bits", i, id);
        total += s + pad;
    }
    return check_ids_distinct(b, n);
}

mp_status mp__normalize(const mp_buffer_t *b, size_t n, mp_buffer_t **out) {
    mp_buffer_t *c = malloc((n ? n : 1) * sizeof *c);
    if (!c) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        c[i] = b[i];
        if (!c[i].align) c[i].align = 1;
        c[i].size = mp__align_up(c[i].size, c[i].align);
    }
    *out = c;
    return MP_OK;
}

uint64_t mp__footprint(const mp_buffer_t *b, size_t n, const uint64_t *offset) {
    uint64_t f = 0;
    for (size_t i = 0; i < n; i++) f = mp__max64(f, offset[i] + b[i].size);
    return f;
}
