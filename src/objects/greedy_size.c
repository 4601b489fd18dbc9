/* greedy_size.c -- Greedy by Size for shared objects (pisarchyk2020 sec. 4.3,
 * Alg. 2).
 *
 * Buffers in non-increasing size (ties: index); each takes the smallest
 * suitable object (one holding no buffer whose interval meets its own),
 * else a new object.  Objects are created in non-increasing size, so Alg. 2
 * ("the last suitable object in creation order") is the newest object not
 * busy during the buffer's life: mp__conf gives the busy objects as a bit
 * set over compressed time (or, past its memory budget, by marking the
 * objects of the conflicting buffers an interval index reports).
 *
 * Cost: O(n log n) to sort, then per buffer O((span + log n) W) with
 * W = ceil(objects / 64) -- a few cache lines on DNN-shaped inputs -- or
 * O((c + 1) log n) in index mode, c = assigned buffers meeting it.  The
 * paper's literal form is O(k n^2) and is the oracle. */
#include "objset.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

mp_status mp__objects_greedy_size(const mp_buffer_t *b, size_t n, size_t *object, size_t *k) {
    *k = 0;
    if (n == 0) return MP_OK;
    mp__key *key = malloc(n * sizeof *key);
    mp__conf c;
    mp_status s = key ? mp__conf_init(&c, b, n, object) : MP__NOMEM();
    if (key && s == MP_OK) {
        for (size_t i = 0; i < n; i++) key[i] = (mp__key){UINT64_MAX - b[i].size, 0, i};
        s = mp__sort_keys(key, n);
    }
    size_t nobj = 0;
    for (size_t r = 0; s == MP_OK && r < n; r++) {
        size_t t = key[r].i;
        s = mp__conf_query(&c, t);
        size_t o = mp__conf_highest_free(&c, nobj);
        if (o == MP__NONE) o = nobj++;
        object[t] = o;
        if (s == MP_OK) s = mp__conf_add(&c, t, o);
    }
    *k = nobj;
    if (key) mp__conf_free(&c);
    free(key);
    return s;
}
