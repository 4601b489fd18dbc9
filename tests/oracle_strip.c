/* oracle_strip.c -- literal O(n^2) forms of strip-bestfit (sekiyama2018
 * sec. 3.2) and inorder (chen2016 Fig. 2, MXNet note), on plain arrays and
 * raw times, sharing no code with src/offsets/.  Inputs are normalized.
 * Both sort the buffers once with qsort: strip-bestfit then looks at the
 * unplaced buffers starting in the chosen line (only they can fit), and
 * inorder walks starts and ends in time order; the skyline and the box
 * are plain arrays scanned in full. */
#include "oracle.h"

#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- strip-bestfit ---------------------------------------------------- */

typedef struct line {
    uint64_t l, r, h; /* inclusive times l..r at height h */
} line;

/* Merges every pair of adjacent lines of equal height. */
static void merge_equal(line *ln, size_t *cnt) {
    size_t k = 0;
    for (size_t j = 1; j < *cnt; j++) {
        if (ln[j].h == ln[k].h) ln[k].r = ln[j].r;
        else ln[++k] = ln[j];
    }
    *cnt = k + 1;
}

/* qsort orders: buffer indices by (first, index) and by (last, index). */
static const mp_buffer_t *sort_base;
static int by_first(const void *x, const void *y) {
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    if (sort_base[i].first != sort_base[j].first) return sort_base[i].first < sort_base[j].first ? -1 : 1;
    return i < j ? -1 : i > j;
}
static int by_last(const void *x, const void *y) {
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    if (sort_base[i].last != sort_base[j].last) return sort_base[i].last < sort_base[j].last ? -1 : 1;
    return i < j ? -1 : i > j;
}
static void sort_idx(const mp_buffer_t *b, size_t *idx, size_t n,
                     int (*cmp)(const void *, const void *)) {
    for (size_t i = 0; i < n; i++) idx[i] = i;
    sort_base = b;
    qsort(idx, n, sizeof *idx, cmp);
}

mp_status oracle_strip_bestfit(const mp_buffer_t *b, size_t n, uint64_t *off) {
    if (n == 0) return MP_OK;
    line *ln = malloc((2 * n + 3) * sizeof *ln);
    size_t *unplaced = malloc(n * sizeof *unplaced); /* unplaced, by (first, index) */
    if (!ln || !unplaced) {
        free(ln), free(unplaced);
        return MP__NOMEM();
    }
    sort_idx(b, unplaced, n, by_first);
    uint64_t t0 = b[0].first, t1 = b[0].last;
    for (size_t i = 0; i < n; i++) t0 = mp__min64(t0, b[i].first), t1 = mp__max64(t1, b[i].last);
    size_t cnt = 1, left = n;
    ln[0] = (line){t0, t1, 0};
    while (left > 0) {
        size_t k = 0; /* the lowest line; the first one found is the leftmost */
        for (size_t j = 1; j < cnt; j++)
            if (ln[j].h < ln[k].h) k = j;
        /* The longest buffer inside [l, r], ties to the lowest index, among
         * the unplaced ones starting in it (the others cannot fit). */
        uint64_t l = ln[k].l, r = ln[k].r;
        size_t lo = 0, hi = left;
        while (lo < hi) { /* first of unplaced starting at or after l */
            size_t mid = lo + (hi - lo) / 2;
            if (b[unplaced[mid]].first < l) lo = mid + 1;
            else hi = mid;
        }
        size_t xk = left;
        for (size_t j = lo; j < left && b[unplaced[j]].first <= r; j++) {
            const mp_buffer_t *y = &b[unplaced[j]], *z = xk < left ? &b[unplaced[xk]] : NULL;
            if (y->last > r) continue;
            if (!z || y->last - y->first > z->last - z->first ||
                (y->last - y->first == z->last - z->first && unplaced[j] < unplaced[xk]))
                xk = j;
        }
        if (xk == left) { /* lift up to the lower neighbour; equal lines then merge */
            uint64_t hl = k > 0 ? ln[k - 1].h : UINT64_MAX;
            uint64_t hr = k + 1 < cnt ? ln[k + 1].h : UINT64_MAX;
            ln[k].h = mp__min64(hl, hr);
            merge_equal(ln, &cnt);
            continue;
        }
        size_t x = unplaced[xk];
        memmove(&unplaced[xk], &unplaced[xk + 1], (--left - xk) * sizeof *unplaced);
        line old = ln[k];
        line piece[3];
        size_t np = 0;
        off[x] = mp__align_up(old.h, b[x].align);
        if (b[x].first > old.l) piece[np++] = (line){old.l, b[x].first - 1, old.h};
        piece[np++] = (line){b[x].first, b[x].last, off[x] + b[x].size};
        if (b[x].last < old.r) piece[np++] = (line){b[x].last + 1, old.r, old.h};
        memmove(&ln[k + np], &ln[k + 1], (cnt - k - 1) * sizeof *ln);
        memcpy(&ln[k], piece, np * sizeof *ln);
        cnt += np - 1;
        merge_equal(ln, &cnt);
    }
    free(ln), free(unplaced);
    return MP_OK;
}

/* ---- inorder ---------------------------------------------------------- */

typedef struct range {
    uint64_t s, e; /* free addresses [s, e) */
} range;

/* Adds [s, e) to the box and merges it with touching ranges. */
static void box_put(range *bx, size_t *cnt, uint64_t s, uint64_t e) {
    if (s == e) return;
    for (size_t j = 0; j < *cnt;) {
        if (bx[j].e == s || bx[j].s == e) {
            s = mp__min64(s, bx[j].s), e = mp__max64(e, bx[j].e);
            bx[j] = bx[--*cnt];
            j = 0;
        } else {
            j++;
        }
    }
    bx[(*cnt)++] = (range){s, e};
}

static uint64_t alloc_one(range *bx, size_t *cnt, uint64_t *top, uint64_t size, uint64_t a) {
    size_t best = *cnt; /* smallest range that holds it; ties: lowest address */
    for (size_t j = 0; j < *cnt; j++) {
        uint64_t len = bx[j].e - bx[j].s;
        if (mp__align_up(bx[j].s, a) + size > bx[j].e) continue;
        if (best == *cnt || len < bx[best].e - bx[best].s ||
            (len == bx[best].e - bx[best].s && bx[j].s < bx[best].s))
            best = j;
    }
    if (best < *cnt) {
        range r = bx[best];
        bx[best] = bx[--*cnt];
        uint64_t o = mp__align_up(r.s, a);
        box_put(bx, cnt, r.s, o);
        box_put(bx, cnt, o + size, r.e);
        return o;
    }
    size_t hi = *cnt; /* the highest free range, if it reaches the top */
    for (size_t j = 0; j < *cnt; j++)
        if (bx[j].e == *top) hi = j;
    uint64_t from = *top;
    if (hi < *cnt) {
        from = bx[hi].s;
        bx[hi] = bx[--*cnt];
    }
    uint64_t o = mp__align_up(from, a);
    box_put(bx, cnt, from, o);
    *top = o + size;
    return o;
}

mp_status oracle_inorder(const mp_buffer_t *b, size_t n, uint64_t *off) {
    range *bx = malloc((2 * n + 2) * sizeof *bx);
    size_t *start = malloc((n ? n : 1) * sizeof *start), *end = malloc((n ? n : 1) * sizeof *end);
    if (!bx || !start || !end) {
        free(bx), free(start), free(end);
        return MP__NOMEM();
    }
    sort_idx(b, start, n, by_first);
    sort_idx(b, end, n, by_last);
    size_t cnt = 0, fr = 0;
    uint64_t top = 0;
    for (size_t j = 0; j < n; j++) {
        uint64_t t = b[start[j]].first;
        /* A new time: first free everything whose life ended before it. */
        for (; (j == 0 || b[start[j - 1]].first != t) && fr < n && b[end[fr]].last < t; fr++)
            box_put(bx, &cnt, off[end[fr]], off[end[fr]] + b[end[fr]].size);
        off[start[j]] = alloc_one(bx, &cnt, &top, b[start[j]].size, b[start[j]].align);
    }
    free(bx), free(start), free(end);
    return MP_OK;
}
