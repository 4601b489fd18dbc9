/* objset.c -- conflict sets and hole index of the shared-object strategies.
 *
 * mp__maxtree: a max segment tree whose searches climb from a leaf to the
 * first subtree that can hold an answer, then descend into it.
 *
 * mp__conf (mask mode): per time index a bit set of the objects busy there,
 * in a tree of fan-out 64.  Marking object o over a range sets o's bit in
 * the range's canonical nodes (full: "busy over all of me") and in them and
 * their ancestors (any: "busy somewhere below me"); the canonical nodes are
 * the range's elements outside fully covered parents, level by level.  A
 * query ORs `any` over the canonical nodes and `full` over their ancestors,
 * which all lie on the paths above the range's two ends.  Bit sets grow in
 * 64-bit words as objects are created; past mp__conf_budget_words the
 * structure is dropped for the interval index (index mode).
 *
 * mp__holes: every member m of an object is a leaf in two max-trees, one
 * over the buffers by last time holding where the hole after m ends, one
 * over the buffers by first time holding (complemented) where the hole
 * before m starts.  An interval [f,l] fits the hole after m iff last_m < f
 * and that hole ends after l: the nearest such m to the left is a climb
 * from the position of f.  Ties in time (several members ending at the
 * same time) are walked to find the lowest object. */
#include "objset.h"

#include <stdlib.h>
#include <string.h>

size_t mp__conf_budget_words = (size_t)1 << 24; /* 128 MiB of bit sets */

/* ---- max-tree ----------------------------------------------------------- */

mp_status mp__maxtree_init(mp__maxtree *t, size_t n) {
    for (t->cap = 1; t->cap < n; t->cap *= 2) {}
    t->v = calloc(2 * t->cap, sizeof *t->v);
    return t->v ? MP_OK : MP__NOMEM();
}

void mp__maxtree_free(mp__maxtree *t) {
    free(t->v);
    t->v = NULL;
}

void mp__maxtree_set(mp__maxtree *t, size_t i, uint64_t x) {
    size_t v = t->cap + i;
    t->v[v] = x;
    for (v >>= 1; v >= 1; v >>= 1) {
        uint64_t m = mp__max64(t->v[2 * v], t->v[2 * v + 1]);
        if (t->v[v] == m) break; /* nothing above changes */
        t->v[v] = m;
    }
}

/* th >= 1 in both searches, so the zero padding never matches. */
size_t mp__maxtree_last_before(const mp__maxtree *t, size_t p, uint64_t th) {
    if (p == 0) return MP__NONE;
    size_t v = t->cap + p - 1;
    while (t->v[v] < th) { /* step to the subtree just left of v */
        while (!(v & 1)) v >>= 1;
        if (v == 1) return MP__NONE;
        v--;
    }
    while (v < t->cap) v = t->v[2 * v + 1] >= th ? 2 * v + 1 : 2 * v;
    return v - t->cap;
}

size_t mp__maxtree_first_from(const mp__maxtree *t, size_t p, uint64_t th) {
    if (p >= t->cap) return MP__NONE;
    size_t v = t->cap + p;
    while (t->v[v] < th) { /* step to the subtree just right of v */
        while (v & 1) v >>= 1;
        if (v == 0) return MP__NONE;
        v++;
    }
    while (v < t->cap) v = t->v[2 * v] >= th ? 2 * v : 2 * v + 1;
    return v - t->cap;
}

/* ---- conflicts: mask mode ------------------------------------------------ */

static uint64_t *word(const mp__conf *c, uint64_t *arr, size_t l, size_t j) {
    return arr + (c->off[l] + j) * c->W;
}

/* `full` has no level 0 (there full == any); its offsets skip it. */
static uint64_t *fword(const mp__conf *c, size_t l, size_t j) {
    return c->full + (c->off[l] - c->len[0] + j) * c->W;
}

static void set_range(mp__conf *c, size_t l, size_t x, size_t y, size_t w, uint64_t bit) {
    for (size_t j = x; j <= y; j++) {
        word(c, c->any, l, j)[w] |= bit;
        if (l > 0) fword(c, l, j)[w] |= bit;
    }
}

static void or_range(const mp__conf *c, size_t l, size_t x, size_t y) {
    for (size_t j = x; j <= y; j++) {
        const uint64_t *a = word(c, c->any, l, j);
        for (size_t w = 0; w < c->W; w++) c->q[w] |= a[w];
    }
}

/* Walks the canonical decomposition of [a,z]: on every level the elements
 * not inside a fully covered parent. */
static void walk(mp__conf *c, size_t a, size_t z, bool mark, size_t w, uint64_t bit) {
    size_t lo = a, hi = z;
    for (size_t l = 0;; l++) {
        size_t A = (lo + 63) >> 6, E = (hi + 1) >> 6; /* full parents [A, E) */
        if (l + 1 == c->levels || A >= E) {
            if (mark) set_range(c, l, lo, hi, w, bit);
            else or_range(c, l, lo, hi);
            break;
        }
        if (lo < (A << 6)) { /* head before the first full parent */
            if (mark) set_range(c, l, lo, (A << 6) - 1, w, bit);
            else or_range(c, l, lo, (A << 6) - 1);
        }
        if ((E << 6) <= hi) { /* tail after the last one */
            if (mark) set_range(c, l, E << 6, hi, w, bit);
            else or_range(c, l, E << 6, hi);
        }
        lo = A;
        hi = E - 1;
    }
    size_t pa = a, pz = z; /* ancestors of the two ends */
    for (size_t l = 1; l < c->levels; l++) {
        pa >>= 6, pz >>= 6;
        if (mark) {
            word(c, c->any, l, pa)[w] |= bit;
            word(c, c->any, l, pz)[w] |= bit;
        } else {
            const uint64_t *fa = fword(c, l, pa), *fz = fword(c, l, pz);
            for (size_t k = 0; k < c->W; k++) c->q[k] |= fa[k] | fz[k];
        }
    }
}

static size_t mask_entries(const mp__conf *c) { return c->off[c->levels - 1] + 1; }

/* Words of bit sets at W words per node (any on all levels, full above 0). */
static size_t mask_words(const mp__conf *c, size_t W) {
    return (2 * mask_entries(c) - c->len[0]) * W;
}

/* Re-lays the bit sets with W2 words per node. */
static mp_status mask_widen(mp__conf *c, size_t W2) {
    size_t e = mask_entries(c), ef = e - c->len[0];
    uint64_t *any = calloc(e * W2, sizeof *any), *full = calloc((ef ? ef : 1) * W2, sizeof *full);
    uint64_t *q = calloc(W2, sizeof *q);
    if (!any || !full || !q) {
        free(any), free(full), free(q);
        return MP__NOMEM();
    }
    for (size_t j = 0; c->any && j < e; j++)
        memcpy(any + j * W2, c->any + j * c->W, c->W * sizeof *any);
    for (size_t j = 0; c->full && j < ef; j++)
        memcpy(full + j * W2, c->full + j * c->W, c->W * sizeof *full);
    free(c->any), free(c->full), free(c->q);
    c->any = any, c->full = full, c->q = q, c->W = W2;
    return MP_OK;
}

/* Leaves mask mode for the interval index of the assigned buffers. */
static mp_status to_index_mode(mp__conf *c) {
    mp_status s = mp__itree_init(&c->tree, c->b, c->n);
    if (s != MP_OK) return s;
    for (size_t i = 0; i < c->n; i++)
        if (c->assigned[i]) mp__itree_set(&c->tree, i, true);
    free(c->any), free(c->full), free(c->q);
    c->any = c->full = c->q = NULL;
    c->use_mask = false;
    return MP_OK;
}

/* ---- conflicts: interface ------------------------------------------------ */

static size_t last_le(const uint64_t *times, size_t m, uint64_t x) {
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (times[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

static mp_status spans(mp__conf *c, size_t *m) {
    uint64_t *times;
    mp_status s = mp__start_times(c->b, c->n, &times, m);
    if (s != MP_OK) return s;
    for (size_t i = 0; i < c->n; i++) {
        c->lo[i] = last_le(times, *m, c->b[i].first);
        c->hi[i] = last_le(times, *m, c->b[i].last);
    }
    free(times);
    return MP_OK;
}

mp_status mp__conf_init(mp__conf *c, const mp_buffer_t *b, size_t n, size_t *object) {
    memset(c, 0, sizeof *c);
    c->b = b, c->n = n, c->object = object;
    size_t nn = n ? n : 1, m = 0;
    c->assigned = calloc(nn, sizeof *c->assigned);
    c->lo = malloc(nn * sizeof *c->lo);
    c->hi = malloc(nn * sizeof *c->hi);
    if (!c->assigned || !c->lo || !c->hi) return MP__NOMEM();
    mp_status s = spans(c, &m);
    if (s != MP_OK) return s;
    c->m = m;
    c->len[0] = m ? m : 1;
    for (c->levels = 1; c->len[c->levels - 1] > 1; c->levels++)
        c->len[c->levels] = (c->len[c->levels - 1] + 63) >> 6;
    for (size_t l = 1; l < c->levels; l++) c->off[l] = c->off[l - 1] + c->len[l - 1];
    c->use_mask = true;
    if (mask_words(c, 1) > mp__conf_budget_words) return to_index_mode(c);
    return mask_widen(c, 1);
}

void mp__conf_free(mp__conf *c) {
    free(c->assigned), free(c->lo), free(c->hi);
    free(c->any), free(c->full), free(c->q);
    mp__itree_free(&c->tree);
    free(c->mark), free(c->hits);
    memset(c, 0, sizeof *c);
}

mp_status mp__conf_query(mp__conf *c, size_t t) {
    if (c->use_mask) {
        memset(c->q, 0, c->W * sizeof *c->q);
        walk(c, c->lo[t], c->hi[t], false, 0, 0);
        return MP_OK;
    }
    c->nhits = 0;
    mp_status s = mp__itree_query(&c->tree, c->b[t].first, c->b[t].last, &c->hits, &c->nhits,
                                  &c->caphits);
    c->stamp++;
    for (size_t h = 0; s == MP_OK && h < c->nhits; h++) c->mark[c->object[c->hits[h]]] = c->stamp;
    return s;
}

bool mp__conf_busy(const mp__conf *c, size_t o) {
    if (c->use_mask) return (c->q[o >> 6] >> (o & 63)) & 1;
    return c->mark[o] == c->stamp;
}

size_t mp__conf_highest_free(const mp__conf *c, size_t below) {
    if (below == 0) return MP__NONE;
    if (!c->use_mask) {
        while (below > 0 && c->mark[below - 1] == c->stamp) below--;
        return below ? below - 1 : MP__NONE;
    }
    size_t wi = (below - 1) >> 6;
    uint64_t f = ~c->q[wi];
    if (below & 63) f &= ((uint64_t)1 << (below & 63)) - 1;
    for (;;) {
        if (f) return wi * 64 + 63 - (size_t)__builtin_clzll(f);
        if (wi == 0) return MP__NONE;
        f = ~c->q[--wi];
    }
}

size_t mp__conf_next_free(const mp__conf *c, size_t o) {
    if (!c->use_mask) {
        while (o < c->nobj && c->mark[o] == c->stamp) o++;
        return o < c->nobj ? o : MP__NONE;
    }
    while (o < c->nobj) {
        size_t w = o >> 6;
        uint64_t f = ~c->q[w] & (~(uint64_t)0 << (o & 63));
        if (f) {
            size_t r = w * 64 + (size_t)__builtin_ctzll(f);
            return r < c->nobj ? r : MP__NONE;
        }
        o = (w + 1) * 64;
    }
    return MP__NONE;
}

mp_status mp__conf_add(mp__conf *c, size_t t, size_t o) {
    mp_status s = MP_OK;
    if (o >= c->nobj) c->nobj = o + 1;
    if (c->use_mask && c->nobj > 64 * c->W) {
        size_t W2 = c->W + (c->W + 1) / 2; /* 1.5x: the copies stay O(final size) */
        if (mask_words(c, W2) > mp__conf_budget_words) s = to_index_mode(c);
        else s = mask_widen(c, W2);
    }
    if (s == MP_OK && !c->use_mask && c->nobj > c->markcap) {
        size_t old = c->markcap;
        s = mp__grow((void **)&c->mark, &c->markcap, c->nobj, sizeof *c->mark);
        if (s == MP_OK) memset(c->mark + old, 0, (c->markcap - old) * sizeof *c->mark);
    }
    if (s != MP_OK) return s;
    c->assigned[t] = true;
    if (c->use_mask) walk(c, c->lo[t], c->hi[t], true, o >> 6, (uint64_t)1 << (o & 63));
    else mp__itree_set(&c->tree, t, true);
    return MP_OK;
}

/* ---- holes ------------------------------------------------------------- */

static mp_status sorted_by(const mp_buffer_t *b, size_t n, bool by_last, size_t *ord,
                           size_t *pos, uint64_t *key) {
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){by_last ? b[i].last : b[i].first, 0, i};
    mp_status s = mp__sort_keys(k, n);
    for (size_t i = 0; s == MP_OK && i < n; i++) ord[i] = k[i].i, pos[k[i].i] = i, key[i] = k[i].a;
    free(k);
    return s;
}

mp_status mp__holes_init(mp__holes *h, const mp_buffer_t *b, size_t n, const size_t *object) {
    memset(h, 0, sizeof *h);
    h->b = b, h->n = n, h->object = object;
    size_t nn = n ? n : 1;
    h->byl = malloc(nn * sizeof *h->byl), h->posl = malloc(nn * sizeof *h->posl);
    h->byf = malloc(nn * sizeof *h->byf), h->posf = malloc(nn * sizeof *h->posf);
    h->prev = malloc(nn * sizeof *h->prev), h->next = malloc(nn * sizeof *h->next);
    h->lastk = malloc(nn * sizeof *h->lastk), h->firstk = malloc(nn * sizeof *h->firstk);
    if (!h->byl || !h->posl || !h->byf || !h->posf || !h->prev || !h->next || !h->lastk ||
        !h->firstk)
        return MP__NOMEM();
    for (size_t i = 0; i < n; i++) h->prev[i] = h->next[i] = MP__NONE;
    mp_status s = sorted_by(b, n, true, h->byl, h->posl, h->lastk);
    if (s == MP_OK) s = sorted_by(b, n, false, h->byf, h->posf, h->firstk);
    if (s == MP_OK) s = mp__maxtree_init(&h->after, n);
    if (s == MP_OK) s = mp__maxtree_init(&h->before, n);
    return s;
}

void mp__holes_free(mp__holes *h) {
    free(h->byl), free(h->posl), free(h->byf), free(h->posf), free(h->prev), free(h->next);
    free(h->lastk), free(h->firstk);
    mp__maxtree_free(&h->after);
    mp__maxtree_free(&h->before);
    memset(h, 0, sizeof *h);
}

void mp__holes_add(mp__holes *h, size_t t, size_t left, size_t right) {
    const mp_buffer_t *b = h->b;
    h->prev[t] = left, h->next[t] = right;
    mp__maxtree_set(&h->after, h->posl[t], right != MP__NONE ? b[right].first : UINT64_MAX);
    mp__maxtree_set(&h->before, h->posf[t], ~(left != MP__NONE ? b[left].last + 1 : 0));
    if (left != MP__NONE) {
        h->next[left] = t;
        mp__maxtree_set(&h->after, h->posl[left], b[t].first);
    }
    if (right != MP__NONE) {
        h->prev[right] = t;
        mp__maxtree_set(&h->before, h->posf[right], ~(b[t].last + 1));
    }
}

/* Number of keys < x in ascending k[], known to be <= hint: gallops down
 * from hint, so the cost is O(log distance). */
static size_t gallop_less(const uint64_t *k, size_t hint, uint64_t x) {
    size_t hi = hint, step = 1;
    while (hi >= step && k[hi - step] >= x) hi -= step, step <<= 1;
    size_t lo = hi >= step ? hi - step : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Number of keys <= x in ascending k[0..n), known to be > hint. */
static size_t gallop_le(const uint64_t *k, size_t n, size_t hint, uint64_t x) {
    size_t lo = hint + 1, step = 1;
    while (lo + step - 1 < n && k[lo + step - 1] <= x) lo += step, step <<= 1;
    size_t hi = lo + step - 1 < n ? lo + step - 1 : n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Nearest member ending before t's first whose hole reaches past t's last;
 * among members ending at the same time, the lowest object. */
static bool nearest_left(const mp__holes *h, size_t t, mp__hole *out) {
    const mp_buffer_t *b = h->b;
    uint64_t th = b[t].last + 1;
    size_t x = mp__maxtree_last_before(&h->after, gallop_less(h->lastk, h->posl[t], b[t].first), th);
    if (x == MP__NONE) return false;
    size_t m = h->byl[x];
    uint64_t end = h->lastk[x];
    while (x > 0 && h->lastk[x - 1] == end && /* other members ending then */
           (x = mp__maxtree_last_before(&h->after, x, th)) != MP__NONE && h->lastk[x] == end)
        if (h->object[h->byl[x]] < h->object[m]) m = h->byl[x];
    *out = (mp__hole){b[t].first - end - 1, h->object[m], m, h->next[m]};
    return true;
}

/* Nearest member starting after t's last whose hole starts at or before
 * t's first (before-value ~start >= ~first). */
static bool nearest_right(const mp__holes *h, size_t t, mp__hole *out) {
    const mp_buffer_t *b = h->b;
    uint64_t th = ~b[t].first;
    size_t p = gallop_le(h->firstk, h->n, h->posf[t], b[t].last);
    size_t x = mp__maxtree_first_from(&h->before, p, th);
    if (x == MP__NONE) return false;
    size_t m = h->byf[x];
    uint64_t start = h->firstk[x];
    while (x + 1 < h->n && h->firstk[x + 1] == start &&
           (x = mp__maxtree_first_from(&h->before, x + 1, th)) != MP__NONE &&
           h->firstk[x] == start)
        if (h->object[h->byf[x]] < h->object[m]) m = h->byf[x];
    *out = (mp__hole){start - b[t].last - 1, h->object[m], h->prev[m], m};
    return true;
}

bool mp__holes_nearest(const mp__holes *h, size_t t, mp__hole *out) {
    mp__hole l, r;
    bool hl = nearest_left(h, t, &l), hr = nearest_right(h, t, &r);
    if (hl && (!hr || l.gap < r.gap || (l.gap == r.gap && l.o <= r.o))) *out = l;
    else if (hr) *out = r;
    return hl || hr;
}
