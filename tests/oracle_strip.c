/* oracle_strip.c -- literal O(n^2) forms of strip-bestfit (sekiyama2018
 * sec. 3.2) and inorder (chen2016 Fig. 2, MXNet note), on plain arrays and
 * raw times, sharing no code with src/offsets/.  Inputs are normalized. */
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

mp_status oracle_strip_bestfit(const mp_buffer_t *b, size_t n, uint64_t *off) {
    if (n == 0) return MP_OK;
    line *ln = malloc((2 * n + 3) * sizeof *ln);
    size_t *todo = malloc(n * sizeof *todo); /* unplaced, by index */
    if (!ln || !todo) {
        free(ln), free(todo);
        return MP__NOMEM();
    }
    uint64_t t0 = b[0].first, t1 = b[0].last;
    for (size_t i = 0; i < n; i++) t0 = mp__min64(t0, b[i].first), t1 = mp__max64(t1, b[i].last);
    for (size_t i = 0; i < n; i++) todo[i] = i;
    size_t cnt = 1, left = n;
    ln[0] = (line){t0, t1, 0};
    while (left > 0) {
        size_t k = 0; /* the lowest line; the first one found is the leftmost */
        for (size_t j = 1; j < cnt; j++)
            if (ln[j].h < ln[k].h) k = j;
        size_t xk = left; /* the longest fitting buffer; strict > keeps the lowest index */
        uint64_t l = ln[k].l, r = ln[k].r, best = 0;
        for (size_t j = 0; j < left; j++) {
            const mp_buffer_t *y = &b[todo[j]];
            if (y->first < l || y->last > r) continue;
            if (xk == left || y->last - y->first > best) xk = j, best = y->last - y->first;
        }
        if (xk == left) { /* lift up to the lower neighbour; equal lines then merge */
            uint64_t hl = k > 0 ? ln[k - 1].h : UINT64_MAX;
            uint64_t hr = k + 1 < cnt ? ln[k + 1].h : UINT64_MAX;
            ln[k].h = mp__min64(hl, hr);
            merge_equal(ln, &cnt);
            continue;
        }
        size_t x = todo[xk];
        memmove(&todo[xk], &todo[xk + 1], (--left - xk) * sizeof *todo);
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
    free(ln), free(todo);
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
    bool *freed = calloc(n ? n : 1, sizeof *freed);
    if (!bx || !freed) {
        free(bx), free(freed);
        return MP__NOMEM();
    }
    size_t cnt = 0;
    uint64_t top = 0, t = 0;
    for (bool more = true; more;) {
        /* Next time: the least first >= t. */
        more = false;
        uint64_t nt = UINT64_MAX;
        for (size_t i = 0; i < n; i++)
            if (b[i].first >= t && b[i].first <= nt) nt = b[i].first, more = true;
        if (!more) break;
        t = nt;
        for (size_t i = 0; i < n; i++)
            if (!freed[i] && b[i].last < t && b[i].first < t) {
                freed[i] = true;
                box_put(bx, &cnt, off[i], off[i] + b[i].size);
            }
        for (size_t i = 0; i < n; i++)
            if (b[i].first == t) off[i] = alloc_one(bx, &cnt, &top, b[i].size, b[i].align);
        if (t == UINT64_MAX) break;
        t++;
    }
    free(bx), free(freed);
    return MP_OK;
}
