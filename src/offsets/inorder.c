/* inorder.c -- allocate in execution order and recycle (chen2016 Fig. 2;
 * the MXNet "Squeeze the Memory Consumption" note, "Memory Allocation
 * Algorithm"): a static simulation of a run.
 *
 * Time is walked through the distinct start times.  At time t every buffer
 * whose life ended (last < t) goes back to a "box" of free address ranges,
 * kept coalesced so the box is always the maximal free intervals below the
 * arena top.  Then the buffers starting at t are allocated in index order:
 * each takes the smallest free range that holds it at the range's aligned
 * start (ties: lowest address); the pieces before and after it go back to
 * the box.  If no range holds it the arena grows: from the start of the
 * highest free range when that range reaches the top, else from the top.
 * Alignment padding left below a buffer is an ordinary free range.
 *
 * The box is two ordered sets, by (length, start) for the best match and
 * by (start, end) for coalescing.  O(n log n), except that a buffer whose
 * alignment exceeds that of the free ranges' starts may step over ranges
 * that are long enough but misaligned (at most those shorter than
 * size + align - 1). */
#include "../core/internal.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

typedef struct box {
    mp__tset by_len;   /* (end - start, start) */
    mp__tset by_addr;  /* (start, end) */
    uint64_t top;      /* arena end so far */
} box;

static mp_status box_add(box *x, uint64_t s, uint64_t e) {
    if (s == e) return MP_OK;
    mp_status st = mp__tset_insert(&x->by_len, e - s, s);
    return st != MP_OK ? st : mp__tset_insert(&x->by_addr, s, e);
}

static void box_del(box *x, uint64_t s, uint64_t e) {
    mp__tset_erase(&x->by_len, e - s, s);
    mp__tset_erase(&x->by_addr, s, e);
}

/* Returns [s, e) to the box, merged with the free ranges touching it. */
static mp_status box_release(box *x, uint64_t s, uint64_t e) {
    uint64_t s1, e1;
    if (mp__tset_prev(&x->by_addr, s, 0, &s1, &e1) && e1 == s) {
        box_del(x, s1, e1);
        s = s1;
    }
    if (mp__tset_ceil(&x->by_addr, e, 0, &s1, &e1) && s1 == e) {
        box_del(x, s1, e1);
        e = e1;
    }
    return box_add(x, s, e);
}

/* Finds an offset for size bytes at alignment a (see the file comment). */
static mp_status box_alloc(box *x, uint64_t size, uint64_t a, uint64_t *off) {
    uint64_t len, s, s1, e1;
    bool ok = mp__tset_ceil(&x->by_len, size, 0, &len, &s);
    while (ok && mp__align_up(s, a) + size > s + len)
        ok = mp__tset_next(&x->by_len, len, s, &len, &s);
    mp_status st;
    if (ok) {
        box_del(x, s, s + len);
        *off = mp__align_up(s, a);
        if ((st = box_add(x, s, *off)) != MP_OK) return st;
        return box_add(x, *off + size, s + len);
    }
    uint64_t from = x->top;
    if (mp__tset_floor(&x->by_addr, UINT64_MAX, UINT64_MAX, &s1, &e1) && e1 == x->top) {
        box_del(x, s1, e1);
        from = s1;
    }
    *off = mp__align_up(from, a);
    x->top = *off + size;
    return box_add(x, from, *off);
}

static mp_status simulate(const mp_buffer_t *b, size_t n, const size_t *by_first,
                          const mp__key *by_last, uint64_t *offset) {
    box x = {.top = 0};
    mp__tset_init(&x.by_len);
    mp__tset_init(&x.by_addr);
    mp_status st = MP_OK;
    for (size_t r = 0, fr = 0; r < n && st == MP_OK; r++) {
        size_t i = by_first[r];
        /* Frees happen once per new start time, before its allocations. */
        if (r == 0 || b[by_first[r - 1]].first != b[i].first)
            for (; fr < n && by_last[fr].a < b[i].first && st == MP_OK; fr++) {
                size_t j = by_last[fr].i;
                st = box_release(&x, offset[j], offset[j] + b[j].size);
            }
        if (st == MP_OK) st = box_alloc(&x, b[i].size, b[i].align, &offset[i]);
    }
    mp__tset_free(&x.by_len);
    mp__tset_free(&x.by_addr);
    return st;
}

mp_status mp__offsets_inorder(const mp_buffer_t *b, size_t n, uint64_t *offset) {
    if (n == 0) return MP_OK;
    size_t *by_first = malloc(n * sizeof *by_first);
    mp__key *by_last = malloc(n * sizeof *by_last);
    mp_status st;
    if (!by_first || !by_last) {
        st = MP__NOMEM();
    } else {
        for (size_t i = 0; i < n; i++) by_last[i] = (mp__key){b[i].last, 0, i};
        if ((st = mp__order_by_first(b, n, by_first)) == MP_OK &&
            (st = mp__sort_keys(by_last, n)) == MP_OK)
            st = simulate(b, n, by_first, by_last, offset);
    }
    free(by_first);
    free(by_last);
    return st;
}
