/* check.c -- the plan checker: proves a plan valid, or names a conflict.
 *
 * Offsets: sweep time in order; at each time first retire buffers whose
 * life ended, then admit the ones that start.  The live buffers are kept in
 * an ordered set by (offset, index); because the live set is disjoint in
 * address before an admission, it stays disjoint exactly when the new buffer
 * clears its two address neighbours.  O(n log n) for n buffers.
 * Objects: sort members by (object, first); members of one object must be
 * pairwise disjoint in time, i.e. each ends before the next begins. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static mp_status conflict(mp_check_report_t *r, const mp_buffer_t *b, size_t i, size_t j,
                          const char *what, const uint64_t *off) {
    if (r) {
        r->first_bad = i;
        r->second_bad = j;
    }
    return mp__err(MP_ECONFLICT,
                   "buffers %llu [%llu,%llu] at %llu+%llu and %llu [%llu,%llu] at %llu+%llu %s",
                   (unsigned long long)b[i].id, (unsigned long long)b[i].first,
                   (unsigned long long)b[i].last, (unsigned long long)off[i],
                   (unsigned long long)b[i].size, (unsigned long long)b[j].id,
                   (unsigned long long)b[j].first, (unsigned long long)b[j].last,
                   (unsigned long long)off[j], (unsigned long long)b[j].size, what);
}

/* Per-buffer checks that need no neighbours: alignment and overflow. */
static mp_status check_each(const mp_buffer_t *b, size_t n, const uint64_t *off,
                            mp_check_report_t *r) {
    for (size_t i = 0; i < n; i++) {
        if (r) r->first_bad = i;
        if (off[i] % b[i].align)
            return mp__err(MP_ECONFLICT, "buffer %llu: offset %llu is not a multiple of align %llu",
                           (unsigned long long)b[i].id, (unsigned long long)off[i],
                           (unsigned long long)b[i].align);
        if (off[i] > UINT64_MAX - b[i].size)
            return mp__err(MP_ECONFLICT, "buffer %llu: offset %llu + size overflows 64 bits",
                           (unsigned long long)b[i].id, (unsigned long long)off[i]);
    }
    return MP_OK;
}

static mp_status sweep(const mp_buffer_t *b, size_t n, const uint64_t *off,
                       mp_check_report_t *r) {
    mp__key *ev = malloc(2 * n * sizeof *ev);
    if (!ev) return MP__NOMEM();
    /* Event 2i retires buffer i, event 2i+1 admits it; retirements sort
     * first at equal times.  Numbering events in order lets the sort use
     * its radix path. */
    for (size_t i = 0; i < n; i++) {
        ev[2 * i] = (mp__key){b[i].last + 1, 0, 2 * i};
        ev[2 * i + 1] = (mp__key){b[i].first, 1, 2 * i + 1};
    }
    mp__tset live;
    mp__tset_init(&live);
    mp_status s = mp__sort_keys(ev, 2 * n);
    for (size_t e = 0; s == MP_OK && e < 2 * n; e++) {
        size_t i = ev[e].i / 2;
        if (ev[e].b == 0) {
            mp__tset_erase(&live, off[i], i);
            continue;
        }
        uint64_t po, pi, no, ni;
        if (mp__tset_prev(&live, off[i], i, &po, &pi) && po + b[pi].size > off[i])
            s = conflict(r, b, i, pi, "overlap in time and address", off);
        else if (mp__tset_next(&live, off[i], i, &no, &ni) && off[i] + b[i].size > no)
            s = conflict(r, b, i, ni, "overlap in time and address", off);
        else
            s = mp__tset_insert(&live, off[i], i);
    }
    mp__tset_free(&live);
    free(ev);
    return s;
}

static mp_status check_objects(const mp_buffer_t *b, size_t n, const mp_plan_t *p,
                               mp_check_report_t *r) {
    if (!p->object_size) return mp__err(MP_ECONFLICT, "object plan without object sizes");
    for (size_t i = 0; i < n; i++) {
        if (r) r->first_bad = i;
        if (p->object[i] >= p->n_objects)
            return mp__err(MP_ECONFLICT, "buffer %llu: object %zu out of range (%zu objects)",
                           (unsigned long long)b[i].id, p->object[i], p->n_objects);
        if (p->object_size[p->object[i]] < b[i].size)
            return mp__err(MP_ECONFLICT, "buffer %llu: size %llu exceeds its object %zu (%llu)",
                           (unsigned long long)b[i].id, (unsigned long long)b[i].size,
                           p->object[i], (unsigned long long)p->object_size[p->object[i]]);
    }
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){p->object[i], b[i].first, i};
    mp_status s = mp__sort_keys(k, n);
    for (size_t j = 1; s == MP_OK && j < n; j++)
        if (k[j].a == k[j - 1].a && b[k[j - 1].i].last >= b[k[j].i].first)
            s = conflict(r, b, k[j].i, k[j - 1].i, "share an object while both live", p->offset);
    free(k);
    return s;
}

mp_status mp_plan_check(const mp_buffer_t *b0, size_t n, const mp_plan_t *p,
                        mp_check_report_t *r) {
    if (r) *r = (mp_check_report_t){0, (size_t)-1, (size_t)-1};
    mp_status s = mp_problem_validate(b0, n);
    if (s != MP_OK) return s;
    if (!p || p->n != n || (n && !p->offset))
        return mp__err(MP_EINVAL, "plan does not match the problem (%zu buffers vs %zu)",
                       p ? p->n : 0, n);
    mp_buffer_t *b;
    if ((s = mp__normalize(b0, n, &b)) != MP_OK) return s;
    s = check_each(b, n, p->offset, r);
    if (s == MP_OK) s = sweep(b, n, p->offset, r);
    if (s == MP_OK && p->object) s = check_objects(b, n, p, r);
    uint64_t f = s == MP_OK ? mp__footprint(b, n, p->offset) : 0;
    if (r) r->footprint = f;
    if (s == MP_OK && f != p->footprint)
        s = mp__err(MP_ECONFLICT, "plan claims footprint %llu but its offsets need %llu",
                    (unsigned long long)p->footprint, (unsigned long long)f);
    free(b);
    return s;
}
