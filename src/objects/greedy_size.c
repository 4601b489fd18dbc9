/* greedy_size.c -- Greedy by Size for shared objects (pisarchyk2020 sec. 4.3,
 * Alg. 2).
 *
 * Buffers in non-increasing size (ties: index); each takes the smallest
 * suitable object (one holding no buffer whose interval meets its own),
 * else a new object.  Objects are created in non-increasing size, so Alg. 2
 * ("the last suitable object in creation order") is the newest object not
 * used by a conflicting buffer.  The buffers already assigned that conflict
 * come from an interval index, their objects are marked, and we step down
 * from the newest object past marked ones.
 *
 * Cost: O(n log n + sum over buffers of (c + 1) log n), c = assigned
 * buffers meeting the buffer's interval (small on DNN-shaped inputs; the
 * paper's literal form is O(k n^2) and is the oracle). */
#include "../core/internal.h"

#include <stdlib.h>

mp_status mp__objects_greedy_size(const mp_buffer_t *b, size_t n, size_t *object, size_t *k) {
    *k = 0;
    if (n == 0) return MP_OK;
    mp__key *key = malloc(n * sizeof *key);
    size_t *mark = malloc(n * sizeof *mark); /* mark[o] = 1 + buffer that marked o */
    size_t *hits = NULL, nhits = 0, caphits = 0;
    mp__itree it;
    mp_status s = key && mark ? mp__itree_init(&it, b, n) : MP__NOMEM();
    if (s != MP_OK) {
        free(key), free(mark);
        return s;
    }
    for (size_t i = 0; i < n; i++) key[i] = (mp__key){UINT64_MAX - b[i].size, 0, i};
    s = mp__sort_keys(key, n);
    size_t nobj = 0;
    for (size_t r = 0; s == MP_OK && r < n; r++) {
        size_t t = key[r].i;
        nhits = 0;
        s = mp__itree_query(&it, b[t].first, b[t].last, &hits, &nhits, &caphits);
        for (size_t h = 0; h < nhits; h++) mark[object[hits[h]]] = t + 1;
        size_t o = nobj;
        while (o > 0 && mark[o - 1] == t + 1) o--;
        if (o == 0) { /* every object is taken during t's life */
            mark[nobj] = 0;
            o = ++nobj;
        }
        object[t] = o - 1;
        mp__itree_set(&it, t, true);
    }
    *k = nobj;
    mp__itree_free(&it);
    free(hits);
    free(key);
    free(mark);
    return s;
}
