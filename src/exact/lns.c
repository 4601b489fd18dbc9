/* lns.c -- local improvement of a plan too large for the exact search.
 *
 * Ruin and recreate (a large neighbourhood search): take a buffer on the
 * top of the plan (its end is the footprint), lift out the m buffers with
 * the highest tops among those live during its lifetime (widened at
 * random), and put them back one by one, each at the lowest aligned offset
 * clear of the buffers it conflicts with (first fit), in an order drawn
 * from: size, old offset, lifetime, or size with random swaps.  The result
 * is kept when the footprint fell, or stayed with fewer buffers on the top,
 * or stayed with the moved buffers no higher in sum; otherwise the old
 * offsets come back.  Every plan held is valid: buffers are placed clear of
 * every active conflicting buffer.
 *
 * Whole-plan rebuilds (every buffer placed anew in one order) start from
 * nothing, so they use the gap index of src/offsets/gapindex.c instead,
 * which finds the lowest free range over a lifetime without collecting
 * the buffers live then: on dense traces (thousands live at once) that is
 * ten times faster, with the same offsets.
 *
 * Fixed buffers (mp__xlns_fix) are obstacles: never lifted out, placed
 * first in a whole rebuild, so every plan held keeps them where they are.
 *
 * Cost of a step: O(n) to find the top and the footprint, plus per moved
 * buffer one interval query, O((k + 1) log n) for its k conflicting
 * buffers, and an O(k log k) sort of their offsets. */
#include "exact.h"
#include "../offsets/gapfit.h"

#include <stdlib.h>
#include <string.h>

struct mp__xlns {
    const mp_buffer_t *b;
    size_t n;
    uint64_t *off;
    uint64_t fp;               /* footprint of off */
    size_t n_top;              /* buffers whose end is fp */
    mp__itree tree;            /* every buffer active, except while moved */
    uint64_t rng;
    size_t *q, q_len, q_cap;   /* query results */
    mp__key *keys;             /* n scratch keys */
    mp__fit_scratch fit;
    uint64_t *saved;           /* old offsets of the moved buffers */
    size_t *moved;
    size_t *place;             /* the placing order of the moved buffers */
    double deadline;           /* mp__xnow() time that abandons a step; 0: none */
    atomic_int *stop;          /* NULL, or a flag that abandons a step */
    const uint64_t *fixed;     /* NULL, or fixed offsets: these never move */
};

static uint64_t rnd(mp__xlns *l) {
    l->rng ^= l->rng >> 12, l->rng ^= l->rng << 25, l->rng ^= l->rng >> 27;
    return l->rng * 2685821657736338717ull;
}

static uint64_t end_of(const mp__xlns *l, size_t i) { return l->off[i] + l->b[i].size; }

/* The footprint and how many buffers reach it. */
static void measure(const mp__xlns *l, uint64_t *fp, size_t *n_top) {
    uint64_t f = 0;
    size_t c = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint64_t e = end_of(l, i);
        if (e > f) f = e, c = 0;
        c += e == f;
    }
    *fp = f, *n_top = c;
}

void mp__xlns_free(mp__xlns *l) {
    if (!l) return;
    mp__itree_free(&l->tree);
    mp__fit_scratch_free(&l->fit);
    free(l->off), free(l->q), free(l->keys), free(l->saved), free(l->moved), free(l->place);
    free(l);
}

mp_status mp__xlns_new(const mp_buffer_t *b, size_t n, const uint64_t *off, uint64_t seed,
                       mp__xlns **out) {
    *out = NULL;
    mp__xlns *l = calloc(1, sizeof *l);
    if (!l) return MP__NOMEM();
    size_t n1 = n ? n : 1;
    l->b = b, l->n = n, l->rng = seed * 0x9E3779B97F4A7C15ull + 12345;
    l->off = malloc(n1 * sizeof *l->off);
    l->keys = malloc(n1 * sizeof *l->keys);
    l->saved = malloc(n1 * sizeof *l->saved);
    l->moved = malloc(n1 * sizeof *l->moved);
    l->place = malloc(n1 * sizeof *l->place);
    mp_status s = l->off && l->keys && l->saved && l->moved && l->place ? MP_OK : MP__NOMEM();
    if (s == MP_OK) s = mp__itree_init(&l->tree, b, n);
    if (s != MP_OK) {
        mp__xlns_free(l);
        return s;
    }
    memcpy(l->off, off, n * sizeof *off);
    for (size_t i = 0; i < n; i++) mp__itree_set(&l->tree, i, true);
    measure(l, &l->fp, &l->n_top);
    *out = l;
    return MP_OK;
}

void mp__xlns_limit(mp__xlns *l, double deadline, atomic_int *stop) {
    l->deadline = deadline, l->stop = stop;
}

/* True when a step must be abandoned (checked every 256 placements). */
static bool out_of_time(const mp__xlns *l) {
    return (l->deadline > 0 && mp__xnow() >= l->deadline) ||
           (l->stop && atomic_load_explicit(l->stop, memory_order_relaxed));
}

void mp__xlns_fix(mp__xlns *l, const uint64_t *fixed) { l->fixed = fixed; }

static bool is_fixed(const mp__xlns *l, size_t i) {
    return l->fixed && l->fixed[i] != MP_NOT_FIXED;
}

uint64_t mp__xlns_footprint(const mp__xlns *l) { return l->fp; }
const uint64_t *mp__xlns_plan(const mp__xlns *l) { return l->off; }

void mp__xlns_adopt(mp__xlns *l, const uint64_t *off) {
    memcpy(l->off, off, l->n * sizeof *off);
    measure(l, &l->fp, &l->n_top);
}

/* The order of the m moved buffers by rule (see mp__xlns_rebuild). */
static mp_status order_moved(mp__xlns *l, size_t m, unsigned rule) {
    for (size_t k = 0; k < m; k++) {
        size_t i = l->moved[k];
        const mp_buffer_t *bi = &l->b[i];
        uint64_t life = bi->last - bi->first, big = UINT64_MAX - bi->size;
        uint64_t area = bi->size > UINT64_MAX / (life + 1) ? 0 : UINT64_MAX - bi->size * (life + 1);
        switch (rule) {
        case 0: l->keys[k] = (mp__key){big, UINT64_MAX - life, i}; break;
        case 3: case 4: l->keys[k] = (mp__key){big, bi->first, i}; break;
        case 1: l->keys[k] = (mp__key){l->saved[k], 0, i}; break;
        case 2: l->keys[k] = (mp__key){UINT64_MAX - life, big, i}; break;
        case 5: l->keys[k] = (mp__key){big, UINT64_MAX - bi->last, i}; break;
        case 6: l->keys[k] = (mp__key){big, life, i}; break;
        default: l->keys[k] = (mp__key){area, big, i}; break;
        }
    }
    mp_status s = mp__sort_keys(l->keys, m);
    if (s != MP_OK) return s;
    size_t *p = l->place;
    for (size_t k = 0; k < m; k++) p[k] = l->keys[k].i;
    if (rule == 3)
        for (size_t k = 0; k + 1 < m; k++)
            if (rnd(l) % 3 == 0) {
                size_t t = p[k];
                p[k] = p[k + 1], p[k + 1] = t;
            }
    return MP_OK;
}

/* Lifts out moved[0..m) (saved[] their offsets), puts them back by rule
 * and keeps the result if it is no worse (see the top of the file); past
 * the deadline the old plan stays. */
static mp_status recreate(mp__xlns *l, size_t m, unsigned rule, bool *improved) {
    uint64_t old_sum = 0;
    for (size_t k = 0; k < m; k++) {
        size_t i = l->moved[k];
        l->saved[k] = l->off[i];
        mp__itree_set(&l->tree, i, false);
        old_sum += end_of(l, i) / 64; /* /64: no overflow in the sums */
    }
    mp_status s = order_moved(l, m, rule);
    uint64_t new_sum = 0;
    bool late = false;
    for (size_t k = 0; s == MP_OK && k < m; k++) {
        if (k % 256 == 255 && (late = out_of_time(l))) break;
        size_t i = l->place[k];
        uint64_t at;
        if ((s = mp__itree_first_fit(&l->tree, l->off, i, &l->fit, &at)) != MP_OK) break;
        l->off[i] = at;
        mp__itree_set(&l->tree, i, true);
        new_sum += end_of(l, i) / 64;
    }
    if (s == MP_OK && !late) {
        uint64_t fp;
        size_t n_top;
        measure(l, &fp, &n_top);
        if (fp < l->fp ||
            (fp == l->fp && (n_top < l->n_top || (n_top == l->n_top && new_sum <= old_sum)))) {
            *improved = fp < l->fp;
            l->fp = fp, l->n_top = n_top;
            return MP_OK;
        }
    }
    /* the old offsets back */
    for (size_t k = 0; k < m; k++) mp__itree_set(&l->tree, l->moved[k], false);
    for (size_t k = 0; k < m; k++) {
        l->off[l->moved[k]] = l->saved[k];
        mp__itree_set(&l->tree, l->moved[k], true);
    }
    return s;
}


/* First fit of every buffer in order[] over the gap index of
 * src/offsets/gapindex.c into l->saved (as scratch): the free address
 * ranges over a lifetime come out by address without collecting and
 * sorting the thousands of buffers live at once in a dense trace, which
 * the interval tree's first fit does (S_1: 1.4 s here).  Same offsets as
 * mp__itree_first_fit in the same order: the lowest aligned offset clear
 * of the buffers placed before.  *late when abandoned at the deadline. */
static mp_status fit_all(mp__xlns *l, const size_t *order, bool *late) {
    size_t n = l->n;
    uint64_t *first = malloc((n ? n : 1) * sizeof *first);
    if (!first) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) l->keys[i] = (mp__key){l->b[i].first, 0, i};
    mp_status s = mp__sort_keys(l->keys, n);
    for (size_t i = 0; i < n; i++) first[i] = l->keys[i].a;
    mp__gapindex x;
    if (s == MP_OK) s = mp__gapindex_init(&x, first, n);
    free(first);
    if (s != MP_OK) return s;
    *late = false;
    for (size_t i = 0; s == MP_OK && l->fixed && i < n; i++) /* the obstacles first */
        if (is_fixed(l, i))
            s = mp__gapindex_add(&x, l->b[i].first, l->b[i].last, l->saved[i] = l->fixed[i],
                                 l->fixed[i] + l->b[i].size);
    for (size_t k = 0; s == MP_OK && k < n; k++) {
        if (k % 256 == 255 && (*late = out_of_time(l))) break;
        if (is_fixed(l, order[k])) continue;
        const mp_buffer_t *bi = &l->b[order[k]];
        mp__gapbuf g = {bi->first, bi->last, bi->size, bi->align ? bi->align : 1};
        uint64_t top = 0, at;
        if ((s = mp__gapindex_gaps(&x, bi->first, bi->last, &g, &top)) != MP_OK) break;
        at = mp__align_up(top, g.align); /* above everything, unless a gap holds it */
        for (size_t j = 0; j < x.n_gap; j++) {
            uint64_t c = mp__align_up(x.gap[j].lo, g.align);
            if (c < x.gap[j].hi && x.gap[j].hi - c >= bi->size) {
                at = c;
                break;
            }
        }
        l->saved[order[k]] = at;
        s = mp__gapindex_add(&x, bi->first, bi->last, at, at + bi->size);
    }
    mp__gapindex_free(&x);
    return s;
}

mp_status mp__xlns_rebuild_order(mp__xlns *l, const size_t *order, bool *improved) {
    *improved = false;
    bool late;
    mp_status s = fit_all(l, order, &late);
    if (s != MP_OK || late) return s;
    uint64_t fp = 0;
    size_t n_top = 0;
    for (size_t i = 0; i < l->n; i++) {
        uint64_t e = l->saved[i] + l->b[i].size;
        if (e > fp) fp = e, n_top = 0;
        n_top += e == fp;
    }
    if (fp < l->fp || (fp == l->fp && n_top <= l->n_top)) { /* every buffer stays active */
        *improved = fp < l->fp;
        memcpy(l->off, l->saved, l->n * sizeof *l->off);
        l->fp = fp, l->n_top = n_top;
    }
    return MP_OK;
}

mp_status mp__xlns_rebuild(mp__xlns *l, unsigned rule, bool *improved) {
    *improved = false;
    for (size_t i = 0; i < l->n; i++) l->moved[i] = i, l->saved[i] = l->off[i];
    mp_status s = order_moved(l, l->n, rule);
    return s == MP_OK ? mp__xlns_rebuild_order(l, l->place, improved) : s;
}

mp_status mp__xlns_step(mp__xlns *l, bool *improved) {
    *improved = false;
    if (l->n == 0) return MP_OK;
    /* a buffer on the top, at random */
    size_t pick = (size_t)(rnd(l) % l->n_top), t = 0;
    for (size_t i = 0; i < l->n; i++)
        if (end_of(l, i) == l->fp && pick-- == 0) {
            t = i;
            break;
        }
    uint64_t f = l->b[t].first, la = l->b[t].last, len = la - f + 1;
    uint64_t extra = rnd(l) % 2 ? rnd(l) % len : 0;
    f = f > extra ? f - extra : 0;
    la = la < UINT64_MAX - 1 - extra ? la + extra : UINT64_MAX - 1;
    l->q_len = 0;
    mp_status s = mp__itree_query(&l->tree, f, la, &l->q, &l->q_len, &l->q_cap);
    if (s != MP_OK) return s;
    /* the m highest tops (of the free buffers) */
    size_t m = (size_t)4 << (rnd(l) % 6), got = 0;
    for (size_t k = 0; k < l->q_len; k++)
        if (!is_fixed(l, l->q[k]))
            l->keys[got++] = (mp__key){UINT64_MAX - end_of(l, l->q[k]), 0, l->q[k]};
    if ((s = mp__sort_keys(l->keys, got)) != MP_OK) return s;
    if (m > got) m = got;
    for (size_t k = 0; k < m; k++) l->moved[k] = l->keys[k].i;
    return recreate(l, m, (unsigned)(rnd(l) % 8), improved);
}
