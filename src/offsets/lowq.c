/* lowq.c -- the queue of skyline lines behind strip-bestfit: a radix heap
 * of heights over a bitset of the positions at the lowest height (see
 * lowq.h). */
#include "lowq.h"

#include <stdlib.h>
#include <string.h>

static unsigned ctz64(uint64_t x) {
#if defined(__GNUC__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned i = 0;
    for (; !(x & 1); x >>= 1) i++;
    return i;
#endif
}

/* The bucket of height h: 0 if h == last, else 1 + the highest bit where
 * they differ. */
static unsigned bucket_of(uint64_t h, uint64_t last) {
    uint64_t d = h ^ last;
    if (d == 0) return 0;
#if defined(__GNUC__)
    return 64 - (unsigned)__builtin_clzll(d);
#else
    unsigned i = 0;
    for (; d; d >>= 1) i++;
    return i;
#endif
}

mp_status mp__lowq_init(mp__lowq *q, size_t m) {
    memset(q, 0, sizeof *q);
    size_t bits = m ? m : 1;
    do { /* 8 levels hold 2^48 positions */
        size_t words = (bits + 63) / 64;
        q->nbits[q->nlev] = bits;
        if (!(q->lev[q->nlev++] = calloc(words, sizeof *q->lev[0]))) return MP__NOMEM();
        bits = words;
    } while (bits > 1);
    return MP_OK;
}

void mp__lowq_free(mp__lowq *q) {
    for (size_t i = 0; i < 65; i++) free(q->bk[i].k);
    for (size_t l = 0; l < q->nlev; l++) free(q->lev[l]);
    memset(q, 0, sizeof *q);
}

static void bit_set(mp__lowq *q, size_t x) {
    for (size_t l = 0; l < q->nlev; l++, x /= 64) {
        uint64_t *w = &q->lev[l][x / 64], was = *w;
        *w |= (uint64_t)1 << (x % 64);
        if (was) break; /* the levels above already know this word */
    }
}

static void bit_clear(mp__lowq *q, size_t x) {
    for (size_t l = 0; l < q->nlev; l++, x /= 64) {
        uint64_t *w = &q->lev[l][x / 64];
        *w &= ~((uint64_t)1 << (x % 64));
        if (*w) break;
    }
}

/* The least position >= x in the bitset, SIZE_MAX if none: up while the
 * rest of the word is empty, then down along the first set bits. */
static size_t bit_next(const mp__lowq *q, size_t x) {
    size_t l = 0;
    for (;; l++, x = x / 64 + 1) {
        if (l == q->nlev) return SIZE_MAX;
        uint64_t w = x < q->nbits[l] ? q->lev[l][x / 64] & (~(uint64_t)0 << (x % 64)) : 0;
        if (w) {
            x = (x & ~(size_t)63) | ctz64(w);
            break;
        }
    }
    for (; l > 0; l--) x = x * 64 + ctz64(q->lev[l - 1][x]);
    return x;
}

static mp_status bucket_add(mp__lowq *q, unsigned i, mp__lowq_key k) {
    if (i == 0) {
        bit_set(q, k.a);
        if (k.a < q->cur) q->cur = k.a;
        return MP_OK;
    }
    if (q->bk[i].len == q->bk[i].cap) {
        mp_status st = mp__grow((void **)&q->bk[i].k, &q->bk[i].cap, q->bk[i].len + 1,
                                sizeof *q->bk[i].k);
        if (st != MP_OK) return st;
    }
    q->bk[i].k[q->bk[i].len++] = k;
    return MP_OK;
}

mp_status mp__lowq_push(mp__lowq *q, uint32_t a, uint64_t h) {
    MP__ASSERT(h >= q->last);
    return bucket_add(q, bucket_of(h, q->last), (mp__lowq_key){h, a});
}

/* Refills the bitset from the first non-empty bucket: its least height
 * becomes the last popped height and its keys move to lower buckets.
 * False if every bucket is empty. */
static mp_status refill(mp__lowq *q, bool *any) {
    unsigned i = 1;
    while (i < 65 && q->bk[i].len == 0) i++;
    if (!(*any = i < 65)) return MP_OK;
    mp__lowq_key *k = q->bk[i].k;
    size_t len = q->bk[i].len;
    uint64_t least = k[0].h;
    for (size_t j = 1; j < len; j++) least = mp__min64(least, k[j].h);
    q->last = least;
    q->cur = SIZE_MAX;
    q->bk[i].len = 0;
    for (size_t j = 0; j < len; j++) {
        mp_status st = bucket_add(q, bucket_of(k[j].h, least), k[j]);
        if (st != MP_OK) return st;
    }
    return MP_OK;
}

mp_status mp__lowq_pop(mp__lowq *q, uint32_t *a, uint64_t *h) {
    *a = UINT32_MAX;
    if (q->lev[q->nlev - 1][0] == 0) {
        bool any;
        mp_status st = refill(q, &any);
        if (st != MP_OK || !any) return st;
    }
    size_t x = bit_next(q, q->cur);
    MP__ASSERT(x != SIZE_MAX);
    bit_clear(q, x);
    q->cur = x;
    *a = (uint32_t)x;
    *h = q->last;
    return MP_OK;
}

uint32_t mp__lowq_next(const mp__lowq *q, uint32_t x) {
    size_t y = bit_next(q, x);
    return y == SIZE_MAX ? UINT32_MAX : (uint32_t)y;
}
