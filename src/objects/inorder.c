/* inorder.c -- MXNet's static allocation simulation for shared objects
 * (the "Memory Allocation Algorithm" of the MXNet memory note; chen2016).
 *
 * Walk the operator times in order.  Before the buffers starting at time
 * t are served, every buffer whose life ended before t hands its object
 * back to a box.  Each buffer starting at t (index order) then takes the
 * free object of closest size: the smallest one at least as large as it,
 * else the largest smaller one, which grows to its size; an empty box (or
 * nothing in the size window, below) means a new object.
 *
 * Like MXNet (nnvm src/pass/plan_memory.cc, GraphAllocator::Request, with
 * NNVM_EXEC_MATCH_RANGE defaulting to 16), the box is only searched for
 * sizes in [need / 16, need * 16]: a much larger object is not tied up by a
 * small buffer and a much smaller one is not grown by a large factor.
 * MXNet keys its free list by size only (equal sizes in release order);
 * here the box is an ordered set of (size, object): among equal sizes the
 * larger candidate is the lowest object, the smaller candidate the highest.
 *
 * Cost: O(n log n) (two sorts and O(1) box operations per buffer). */
#include "../core/internal.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

#define MATCH_RANGE 16

static uint64_t times_range(uint64_t x) {
    return x > UINT64_MAX / MATCH_RANGE ? UINT64_MAX : x * MATCH_RANGE;
}

/* Takes the object for a buffer of size need out of the box, or makes a
 * new one (number *nobj). */
static size_t take(mp__tset *box, uint64_t *osize, size_t *nobj, uint64_t need) {
    uint64_t k1, k2;
    if (mp__tset_ceil(box, need, 0, &k1, &k2) && k1 <= times_range(need)) {
        mp__tset_erase(box, k1, k2);
        return (size_t)k2;
    }
    if (mp__tset_prev(box, need, 0, &k1, &k2) && k1 >= need / MATCH_RANGE) {
        mp__tset_erase(box, k1, k2);
        osize[k2] = need; /* grows to fit */
        return (size_t)k2;
    }
    osize[*nobj] = need;
    return (*nobj)++;
}

mp_status mp__objects_inorder(const mp_buffer_t *b, size_t n, size_t *object, size_t *k) {
    *k = 0;
    if (n == 0) return MP_OK;
    size_t *byfirst = malloc(n * sizeof *byfirst);
    mp__key *bylast = malloc(n * sizeof *bylast);
    uint64_t *osize = malloc(n * sizeof *osize);
    mp__tset box;
    mp__tset_init(&box);
    mp_status s = byfirst && bylast && osize ? mp__order_by_first(b, n, byfirst) : MP__NOMEM();
    if (s == MP_OK) {
        for (size_t i = 0; i < n; i++) bylast[i] = (mp__key){b[i].last, 0, i};
        s = mp__sort_keys(bylast, n);
    }
    size_t nobj = 0, freed = 0;
    for (size_t r = 0; s == MP_OK && r < n; r++) {
        size_t t = byfirst[r];
        /* Lives that ended before this start give their objects back. */
        for (; s == MP_OK && freed < n && bylast[freed].a < b[t].first; freed++) {
            size_t o = object[bylast[freed].i];
            s = mp__tset_insert(&box, osize[o], o);
        }
        if (s == MP_OK) object[t] = take(&box, osize, &nobj, b[t].size);
    }
    *k = nobj;
    mp__tset_free(&box);
    free(byfirst), free(bylast), free(osize);
    return s;
}
