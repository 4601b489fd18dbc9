/* oracle_gapfit.c -- literal O(n^2) forms of greedy-size, greedy-breadth
 * (pisarchyk2020 sec. 5.2 Alg. 3, sec. 5.3) and SmartPool best/first fit
 * (zhang2019 sec. III-C), the oracles of src/offsets/gapfit.c and friends.
 *
 * As printed: every placed buffer sits in one array ordered by (offset,
 * index) ("ordered_allocated_ids"); placing t scans all of it and tests each
 * entry for a lifetime intersection (Alg. 3 L.10-13), so one placement is
 * O(n) and a plan O(n^2).  Greedy by breadth computes each operator's
 * breadth and profile by brute force over all buffers, O(n * operators).
 * Nothing here calls the library's planners or containers. */
#include "oracle.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT64_MAX

static uint64_t up(uint64_t x, uint64_t a) { return x % a ? x + (a - x % a) : x; }

/* ---- the placed list ---------------------------------------------------- */

/* A placed buffer's lifetime, kept beside ordered_allocated_ids so that
 * the O(n) scans read one array front to back. */
typedef struct span {
    uint64_t first, last;
} span;

typedef struct placed {
    const mp_buffer_t *b;
    span *life;      /* life[j] is the lifetime of ids[j] */
    uint64_t *off;
    size_t *ids;     /* Alg. 3's ordered_allocated_ids: by (offset, index) */
    size_t count;
    uint64_t top;    /* SmartPool's pool top: max end of all placed */
} placed;

/* Alg. 3 L.11-13. */
static bool intersect(const mp_buffer_t *t, const span *x) {
    uint64_t max_first = t->first > x->first ? t->first : x->first;
    uint64_t min_last = t->last < x->last ? t->last : x->last;
    return max_first <= min_last;
}

/* An empty placed list for b[0..n) (NULL arrays on failure). */
static placed placed_new(const mp_buffer_t *b, size_t n, uint64_t *off) {
    placed p = {b, malloc((n ? n : 1) * sizeof *p.life), off,
                malloc((n ? n : 1) * sizeof *p.ids), 0, 0};
    return p;
}

/* Alg. 3 L.21-23: record t's offset and insert t keeping (offset, index)
 * order (binary search, then shift the tail). */
static void insert(placed *p, size_t t, uint64_t off) {
    size_t lo = 0, hi = p->count;
    p->off[t] = off;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2, y = p->ids[mid];
        if (p->off[y] < off || (p->off[y] == off && y < t)) lo = mid + 1;
        else hi = mid;
    }
    memmove(p->ids + lo + 1, p->ids + lo, (p->count - lo) * sizeof *p->ids);
    memmove(p->life + lo + 1, p->life + lo, (p->count - lo) * sizeof *p->life);
    p->ids[lo] = t;
    p->life[lo] = (span){p->b[t].first, p->b[t].last};
    p->count++;
    if (off + p->b[t].size > p->top) p->top = off + p->b[t].size;
}

/* Alg. 3 L.7-22 for one tensor t; alignment as in gapfit.c: a gap
 * [prev, offset_x) fits when up(prev) + size_t <= offset_x. */
static void place_pisarchyk(placed *p, size_t t) {
    const mp_buffer_t *bt = &p->b[t];
    uint64_t prev_offset = 0, best_offset = NIL, smallest_gap = UINT64_MAX;
    for (size_t j = 0; j < p->count; j++) {
        size_t x = p->ids[j];
        if (!intersect(bt, &p->life[j])) continue;
        uint64_t at = up(prev_offset, bt->align), off_x = p->off[x];
        if (at <= off_x && off_x - at >= bt->size) {
            uint64_t gap = off_x - prev_offset;
            if (gap < smallest_gap) {
                smallest_gap = gap;
                best_offset = at;
            }
        }
        if (off_x + p->b[x].size > prev_offset) prev_offset = off_x + p->b[x].size;
    }
    if (best_offset == NIL) best_offset = up(prev_offset, bt->align);
    insert(p, t, best_offset);
}

/* SmartPool: list the holes of the pool [0, top) over t's lifetime, lowest
 * first, then pick one; if none fits, extend the pool above the highest
 * conflicting block. */
static void place_smartpool(placed *p, size_t t, bool best_fit, uint64_t *hole_lo,
                            uint64_t *hole_hi) {
    const mp_buffer_t *bt = &p->b[t];
    size_t holes = 0;
    uint64_t covered = 0; /* every address below is taken or already listed */
    for (size_t j = 0; j < p->count; j++) {
        size_t x = p->ids[j];
        if (!intersect(bt, &p->life[j])) continue;
        if (p->off[x] > covered) {
            hole_lo[holes] = covered;
            hole_hi[holes++] = p->off[x];
        }
        if (p->off[x] + p->b[x].size > covered) covered = p->off[x] + p->b[x].size;
    }
    if (p->top > covered) {
        hole_lo[holes] = covered;
        hole_hi[holes++] = p->top;
    }
    uint64_t chosen = NIL, chosen_size = UINT64_MAX;
    for (size_t h = 0; h < holes; h++) {
        uint64_t at = up(hole_lo[h], bt->align);
        if (at > hole_hi[h] || hole_hi[h] - at < bt->size) continue;
        if (!best_fit) {
            chosen = at;
            break;
        }
        if (hole_hi[h] - hole_lo[h] < chosen_size) {
            chosen_size = hole_hi[h] - hole_lo[h];
            chosen = at;
        }
    }
    insert(p, t, chosen != NIL ? chosen : up(covered, bt->align));
}

/* ---- orders --------------------------------------------------------------- */

typedef struct okey {
    uint64_t a, b;
    size_t i;
} okey;

static int okey_cmp(const void *x, const void *y) {
    const okey *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    return p->i < q->i ? -1 : p->i > q->i;
}

/* Fills idx with ids[0..k) (all of 0..k-1 if ids is NULL) by size
 * non-increasing, ties by index. */
static mp_status by_size_desc(const mp_buffer_t *b, const size_t *ids, size_t k, size_t *idx) {
    okey *o = malloc((k ? k : 1) * sizeof *o);
    if (!o) return MP_ENOMEM;
    for (size_t j = 0; j < k; j++) {
        size_t i = ids ? ids[j] : j;
        o[j] = (okey){UINT64_MAX - b[i].size, 0, i};
    }
    qsort(o, k, sizeof *o, okey_cmp);
    for (size_t j = 0; j < k; j++) idx[j] = o[j].i;
    free(o);
    return MP_OK;
}

/* ---- the four oracles ------------------------------------------------------ */

enum { GREEDY, BEST, FIRST };

static mp_status size_order_plan(const mp_buffer_t *b, size_t n, uint64_t *off, int how) {
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    uint64_t *lo = malloc((n + 1) * sizeof *lo), *hi = malloc((n + 1) * sizeof *hi);
    placed p = placed_new(b, n, off);
    mp_status s = (order && lo && hi && p.life && p.ids) ? MP_OK : MP_ENOMEM;
    if (s == MP_OK) s = by_size_desc(b, NULL, n, order);
    for (size_t j = 0; s == MP_OK && j < n; j++) {
        if (how == GREEDY) place_pisarchyk(&p, order[j]);
        else place_smartpool(&p, order[j], how == BEST, lo, hi);
    }
    free(order), free(lo), free(hi), free(p.life), free(p.ids);
    return s;
}

mp_status oracle_greedy_size(const mp_buffer_t *b, size_t n, uint64_t *off) {
    return size_order_plan(b, n, off, GREEDY);
}

mp_status oracle_smartpool_bestfit(const mp_buffer_t *b, size_t n, uint64_t *off) {
    return size_order_plan(b, n, off, BEST);
}

mp_status oracle_smartpool_firstfit(const mp_buffer_t *b, size_t n, uint64_t *off) {
    return size_order_plan(b, n, off, FIRST);
}

/* pisarchyk2020 sec. 5.3: operators (the distinct start times) by breadth,
 * ties earlier first; each operator's unassigned profile largest first,
 * each tensor placed by Alg. 3. */
mp_status oracle_greedy_breadth(const mp_buffer_t *b, size_t n, uint64_t *off) {
    okey *ops = malloc((n ? n : 1) * sizeof *ops);
    size_t *prof = malloc((n ? n : 1) * sizeof *prof);
    size_t *sorted = malloc((n ? n : 1) * sizeof *sorted);
    bool *assigned = calloc(n ? n : 1, sizeof *assigned);
    placed p = placed_new(b, n, off);
    mp_status s = (ops && prof && sorted && assigned && p.life && p.ids) ? MP_OK : MP_ENOMEM;
    size_t m = 0; /* operators: the distinct start times */
    for (size_t i = 0; s == MP_OK && i < n; i++) ops[i] = (okey){0, b[i].first, 0};
    if (s == MP_OK) qsort(ops, n, sizeof *ops, okey_cmp);
    for (size_t i = 0; s == MP_OK && i < n; i++)
        if (m == 0 || ops[m - 1].b != ops[i].b) ops[m++] = ops[i];
    for (size_t j = 0; j < m; j++) {
        uint64_t breadth = 0;
        for (size_t i = 0; i < n; i++)
            if (b[i].first <= ops[j].b && ops[j].b <= b[i].last) breadth += b[i].size;
        ops[j].a = UINT64_MAX - breadth;
        ops[j].i = j;
    }
    qsort(ops, m, sizeof *ops, okey_cmp);
    for (size_t j = 0; s == MP_OK && j < m; j++) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++)
            if (!assigned[i] && b[i].first <= ops[j].b && ops[j].b <= b[i].last) prof[k++] = i;
        if ((s = by_size_desc(b, prof, k, sorted)) != MP_OK) break;
        for (size_t q = 0; q < k; q++) {
            place_pisarchyk(&p, sorted[q]);
            assigned[sorted[q]] = true;
        }
    }
    free(ops), free(prof), free(sorted), free(assigned), free(p.life), free(p.ids);
    return s;
}
