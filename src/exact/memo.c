/* memo.c -- the table of search states proven to fail.
 *
 * What a canonical search can still do from a node depends only on the set
 * of unplaced buffers, their floors (the lowest offset each can take) and
 * the last placement (olast, rlast): every later placement must come after
 * it in (offset, rank) order.  So a state (U, floors) that failed after
 * (olast', rlast') fails after any (olast, rlast) >= it: fewer completions
 * are allowed.  (The search keys a state by all unplaced buffers and their
 * floors, a finer key when it works on an independent run of sections.)
 * Different orders of stacking the same buffers reach the
 * same state (A on B and B on A leave the same tops), and the table cuts
 * those transpositions.  Keys are 128-bit sums of per-buffer hashes; a
 * collision would need two states with equal 128-bit keys.
 *
 * Fixed size, two slots per bucket, always-replace into the slot of the
 * older generation or the second slot; clearing is O(1) by generations. */
#include "exact.h"

#include <stdlib.h>

mp_status mp__xmemo_init(mp__xmemo *m, size_t n_buffers) {
    /* About 256 entries per buffer, between 2^10 and 2^17 (4 MiB). */
    size_t want = n_buffers > 512 ? (size_t)1 << 17 : (n_buffers + 1) * 256, size = 1024;
    while (size < want && size < ((size_t)1 << 17)) size <<= 1;
    m->e = calloc(size, sizeof *m->e);
    if (!m->e) return MP__NOMEM();
    m->mask = size - 1;
    m->gen = 1;
    return MP_OK;
}

void mp__xmemo_free(mp__xmemo *m) {
    free(m->e);
    m->e = NULL;
}

void mp__xmemo_clear(mp__xmemo *m) {
    if (++m->gen == 0) { /* wrapped: really clear once in 2^32 runs */
        for (size_t i = 0; i <= m->mask; i++) m->e[i].gen = 0;
        m->gen = 1;
    }
}

static bool weaker_or_equal(uint64_t o1, uint32_t r1, uint64_t o2, uint32_t r2) {
    return o1 < o2 || (o1 == o2 && r1 <= r2);
}

bool mp__xmemo_fails(const mp__xmemo *m, uint64_t k1, uint64_t k2, uint64_t olast, uint32_t rlast) {
    size_t i = (size_t)k1 & m->mask & ~(size_t)1;
    for (size_t w = 0; w < 2; w++) {
        const mp__xmemo_entry *e = &m->e[i + w];
        if (e->gen == m->gen && e->k1 == k1 && e->k2 == k2 &&
            weaker_or_equal(e->olast, e->rlast, olast, rlast))
            return true;
    }
    return false;
}

void mp__xmemo_store(mp__xmemo *m, uint64_t k1, uint64_t k2, uint64_t olast, uint32_t rlast) {
    size_t i = (size_t)k1 & m->mask & ~(size_t)1;
    mp__xmemo_entry *slot = NULL;
    for (size_t w = 0; w < 2 && !slot; w++) {
        mp__xmemo_entry *e = &m->e[i + w];
        if (e->gen == m->gen && e->k1 == k1 && e->k2 == k2) {
            if (weaker_or_equal(olast, rlast, e->olast, e->rlast)) e->olast = olast, e->rlast = rlast;
            return;
        }
        if (e->gen != m->gen) slot = e;
    }
    if (!slot) slot = &m->e[i + 1];
    *slot = (mp__xmemo_entry){k1, k2, olast, rlast, m->gen};
}
