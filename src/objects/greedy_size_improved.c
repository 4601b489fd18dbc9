/* greedy_size_improved.c -- Greedy by Size Improved for shared objects
 * (pisarchyk2020 sec. 4.4).
 *
 * 1. Positional maxima: PM_k is the largest k-th biggest live size over the
 *    operators (distinct start times).  With c(s) = max over time of the
 *    number of live buffers of size >= s, PM_k >= s iff c(s) >= k, so adding
 *    buffers by size descending (+1 over their time span in a max-tree with
 *    range add) gives the distinct PM values: the sizes where c grows.
 * 2. Stages, for distinct PM values v1 > v2 > ... > vm: size == v1, then
 *    v2 < size < v1, then size == v2, ..., size == vm, then size < vm.
 * 3. Inside a stage, repeatedly take the (buffer, suitable object) pair with
 *    the smallest time gap between the buffer and the object's nearest
 *    member (ties: lower buffer index, then lower object number); when no
 *    remaining buffer fits any object, the largest remaining (ties: index)
 *    opens a new object.  Objects have no size condition: they grow.
 *
 * Step 3 keeps a lazy heap of candidate pairs.  Each entry's key is a lower
 * bound of what it stands for now, so popping, re-evaluating and accepting
 * an entry only when its key is unchanged yields the true best pair:
 *   - one entry per stage buffer: its best object over all objects, from
 *     mp__objset_nearest (holes of all objects in two augmented treaps);
 *     adding members can only shrink holes, so the value only gets worse --
 *     except through members added during the stage, which are covered by:
 *   - two entries per member added during the stage: the nearest remaining
 *     stage buffer inside the hole just before / after it, found in a
 *     segment tree over the stage's buffers.  Holes shrink and buffers
 *     leave, so these values also only get worse.
 * Cost: O(n log n) for steps 1-2; step 3 is O((n + R) log n) with R the
 * re-evaluations (an entry is re-evaluated when its buffer is taken or its
 * hole shrinks; R <= n * k in the worst case, near n on DNN-shaped inputs).
 * The paper's literal form is O(k n^2) per stage and is the test oracle. */
#include "objset.h"

#include <stdlib.h>

#define NONE ((size_t)-1)

/* ---- positional maxima -------------------------------------------------- */

typedef struct maxtree {
    size_t cap;
    uint64_t *mx, *add;
} maxtree;

static void mt_add(maxtree *t, size_t v, size_t nl, size_t nr, size_t l, size_t r) {
    if (r < nl || nr < l) return;
    if (l <= nl && nr <= r) {
        t->add[v]++;
        t->mx[v]++;
        return;
    }
    size_t mid = nl + (nr - nl) / 2;
    mt_add(t, 2 * v, nl, mid, l, r);
    mt_add(t, 2 * v + 1, mid + 1, nr, l, r);
    t->mx[v] = mp__max64(t->mx[2 * v], t->mx[2 * v + 1]) + t->add[v];
}

static size_t time_index(const uint64_t *times, size_t m, uint64_t x) {
    size_t lo = 0, hi = m; /* last index with times[i] <= x */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (times[mid] <= x) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

/* Fills pm[0..*npm) with the distinct positional maxima, descending.
 * bysize holds the buffers sorted by size descending. */
static mp_status pm_values(const mp_buffer_t *b, size_t n, const mp__key *bysize,
                           uint64_t *pm, size_t *npm) {
    uint64_t *times = NULL;
    size_t m = 0;
    mp_status s = mp__start_times(b, n, &times, &m);
    if (s != MP_OK) return s;
    maxtree t = {1, NULL, NULL};
    while (t.cap < m) t.cap *= 2;
    t.mx = calloc(2 * t.cap, sizeof *t.mx);
    t.add = calloc(2 * t.cap, sizeof *t.add);
    if (!t.mx || !t.add) s = MP__NOMEM();
    uint64_t count = 0;
    *npm = 0;
    for (size_t j = 0; s == MP_OK && j < n;) {
        uint64_t sz = b[bysize[j].i].size;
        for (; j < n && b[bysize[j].i].size == sz; j++) {
            const mp_buffer_t *x = &b[bysize[j].i];
            mt_add(&t, 1, 0, t.cap - 1, time_index(times, m, x->first),
                   time_index(times, m, x->last));
        }
        if (t.mx[1] > count) pm[(*npm)++] = sz;
        count = t.mx[1];
    }
    free(times), free(t.mx), free(t.add);
    return s;
}

/* Stage number of a size: 2j for size == pm[j], 2j-1 between pm[j] and
 * pm[j-1], 2*npm-1 below the last. */
static uint64_t stage_of(const uint64_t *pm, size_t npm, uint64_t sz) {
    size_t lo = 0, hi = npm; /* number of values > sz */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pm[mid] > sz) lo = mid + 1;
        else hi = mid;
    }
    return lo < npm && pm[lo] == sz ? 2 * (uint64_t)lo : 2 * (uint64_t)lo - 1;
}

/* ---- segment trees over one stage's buffers ----------------------------- */

/* First leaf >= p whose value is < th (min-tree), or NONE. */
static size_t seg_first_lt(const uint64_t *mn, size_t v, size_t lo, size_t hi, size_t p,
                           uint64_t th) {
    if (hi <= p || mn[v] >= th) return NONE;
    if (hi - lo == 1) return lo;
    size_t mid = lo + (hi - lo) / 2;
    size_t r = seg_first_lt(mn, 2 * v, lo, mid, p, th);
    return r != NONE ? r : seg_first_lt(mn, 2 * v + 1, mid, hi, p, th);
}

/* Last leaf < p whose value is > th (max-tree), or NONE. */
static size_t seg_last_gt(const uint64_t *mx, size_t v, size_t lo, size_t hi, size_t p,
                          uint64_t th) {
    if (lo >= p || mx[v] <= th) return NONE;
    if (hi - lo == 1) return lo;
    size_t mid = lo + (hi - lo) / 2;
    size_t r = seg_last_gt(mx, 2 * v + 1, mid, hi, p, th);
    return r != NONE ? r : seg_last_gt(mx, 2 * v, lo, mid, p, th);
}

static void seg_set(uint64_t *t, size_t cap, size_t pos, uint64_t val, bool is_min) {
    size_t v = cap + pos;
    t[v] = val;
    for (v /= 2; v >= 1; v /= 2)
        t[v] = is_min ? mp__min64(t[2 * v], t[2 * v + 1]) : mp__max64(t[2 * v], t[2 * v + 1]);
}

/* ---- state --------------------------------------------------------------- */

enum { E_BUF, E_AFTER, E_BEFORE };

typedef struct entry {
    uint64_t gap, o;
    size_t t, ref;   /* candidate buffer; the buffer or member it belongs to */
    int kind;
} entry;

typedef struct gsi {
    const mp_buffer_t *b;
    size_t n, *object, nobj;
    bool *done;
    mp__objset set;
    /* current stage: s buffers; byf sorted by (first, index) with the
     * min-tree of their lasts, byl by (last, index desc) with the max-tree
     * of first + 1; 0 / UINT64_MAX mark buffers already taken. */
    size_t s, cap, *byf, *byl, *posf, *posl;
    uint64_t *minlast, *maxfirst1;
    mp__key *keys;
    entry *heap;
    size_t nheap, capheap;
} gsi;

static bool entry_lt(const entry *x, const entry *y) {
    if (x->gap != y->gap) return x->gap < y->gap;
    if (x->t != y->t) return x->t < y->t;
    if (x->o != y->o) return x->o < y->o;
    if (x->kind != y->kind) return x->kind < y->kind;
    return x->ref < y->ref;
}

static mp_status heap_push(gsi *g, entry e) {
    mp_status s = mp__grow((void **)&g->heap, &g->capheap, g->nheap + 1, sizeof *g->heap);
    if (s != MP_OK) return s;
    size_t i = g->nheap++;
    while (i > 0 && entry_lt(&e, &g->heap[(i - 1) / 2])) {
        g->heap[i] = g->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    g->heap[i] = e;
    return MP_OK;
}

static entry heap_pop(gsi *g) {
    entry top = g->heap[0], last = g->heap[--g->nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= g->nheap) break;
        if (c + 1 < g->nheap && entry_lt(&g->heap[c + 1], &g->heap[c])) c++;
        if (!entry_lt(&g->heap[c], &last)) break;
        g->heap[i] = g->heap[c];
        i = c;
    }
    if (g->nheap) g->heap[i] = last;
    return top;
}

/* Current value of an entry of the given kind; false if it has none. */
static bool evaluate(const gsi *g, int kind, size_t ref, entry *e) {
    const mp_buffer_t *b = g->b;
    *e = (entry){0, 0, 0, ref, kind};
    if (kind == E_BUF) {
        e->t = ref;
        return !g->done[ref] && mp__objset_nearest(&g->set, b[ref].first, b[ref].last,
                                                   &e->gap, &e->o);
    }
    uint64_t o = g->object[ref], edge;
    e->o = o;
    if (kind == E_AFTER) { /* hole (last of ref, next member's first) */
        uint64_t end = UINT64_MAX;
        mp__objset_next_first(&g->set, o, b[ref].last, &end);
        size_t lo = 0, hi = g->s; /* first stage buffer starting after ref */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (b[g->byf[mid]].first <= b[ref].last) lo = mid + 1;
            else hi = mid;
        }
        size_t p = seg_first_lt(g->minlast, 1, 0, g->cap, lo, end);
        if (p == NONE) return false;
        e->t = g->byf[p];
        e->gap = b[e->t].first - b[ref].last - 1;
        return true;
    }
    /* E_BEFORE: hole (previous member's last, first of ref) */
    uint64_t th = mp__objset_prev_last(&g->set, o, b[ref].first, &edge) ? edge + 1 : 0;
    size_t lo = 0, hi = g->s; /* stage buffers ending before ref starts */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b[g->byl[mid]].last < b[ref].first) lo = mid + 1;
        else hi = mid;
    }
    size_t p = seg_last_gt(g->maxfirst1, 1, 0, g->cap, lo, th);
    if (p == NONE) return false;
    e->t = g->byl[p];
    e->gap = b[ref].first - b[e->t].last - 1;
    return true;
}

static mp_status push_eval(gsi *g, int kind, size_t ref) {
    entry e;
    return evaluate(g, kind, ref, &e) ? heap_push(g, e) : MP_OK;
}

static mp_status assign(gsi *g, size_t t, uint64_t o) {
    g->done[t] = true;
    g->object[t] = (size_t)o;
    seg_set(g->minlast, g->cap, g->posf[t], UINT64_MAX, true);
    seg_set(g->maxfirst1, g->cap, g->posl[t], 0, false);
    mp_status s = mp__objset_add(&g->set, o, g->b[t].first, g->b[t].last);
    if (s == MP_OK) s = push_eval(g, E_AFTER, t);
    if (s == MP_OK) s = push_eval(g, E_BEFORE, t);
    return s;
}

/* Builds the stage's two orders and trees from its buffers st[0..s). */
static mp_status stage_setup(gsi *g, const mp__key *st, size_t s) {
    const mp_buffer_t *b = g->b;
    g->s = s;
    for (g->cap = 1; g->cap < s; g->cap *= 2) {}
    for (size_t j = 0; j < s; j++) g->keys[j] = (mp__key){b[st[j].i].first, 0, st[j].i};
    mp_status r = mp__sort_keys(g->keys, s);
    for (size_t j = 0; r == MP_OK && j < s; j++) g->byf[j] = g->keys[j].i;
    for (size_t j = 0; r == MP_OK && j < s; j++)
        g->keys[j] = (mp__key){b[st[j].i].last, UINT64_MAX - st[j].i, st[j].i};
    if (r == MP_OK) r = mp__sort_keys(g->keys, s);
    if (r != MP_OK) return r;
    for (size_t j = 0; j < s; j++) g->byl[j] = g->keys[j].i;
    for (size_t v = 0; v < 2 * g->cap; v++) g->minlast[v] = UINT64_MAX, g->maxfirst1[v] = 0;
    for (size_t j = 0; j < s; j++) {
        g->posf[g->byf[j]] = j;
        g->posl[g->byl[j]] = j;
        g->minlast[g->cap + j] = b[g->byf[j]].last;
        g->maxfirst1[g->cap + j] = b[g->byl[j]].first + 1;
    }
    for (size_t v = g->cap - 1; v >= 1; v--) {
        g->minlast[v] = mp__min64(g->minlast[2 * v], g->minlast[2 * v + 1]);
        g->maxfirst1[v] = mp__max64(g->maxfirst1[2 * v], g->maxfirst1[2 * v + 1]);
    }
    return MP_OK;
}

/* Runs one stage: st[0..s) are its buffers by size descending. */
static mp_status run_stage(gsi *g, const mp__key *st, size_t s) {
    mp_status r = stage_setup(g, st, s);
    g->nheap = 0;
    for (size_t j = 0; r == MP_OK && j < s; j++) r = push_eval(g, E_BUF, st[j].i);
    size_t left = s, largest = 0;
    while (r == MP_OK && left > 0) {
        if (g->nheap == 0) { /* nothing fits anywhere: open an object */
            while (g->done[st[largest].i]) largest++;
            r = assign(g, st[largest].i, g->nobj++);
            left--;
            continue;
        }
        entry e = heap_pop(g), now;
        if (!evaluate(g, e.kind, e.ref, &now)) continue;
        if (now.gap == e.gap && now.t == e.t && now.o == e.o) {
            r = assign(g, e.t, e.o);
            left--;
        } else {
            r = heap_push(g, now);
        }
    }
    return r;
}

static mp_status run(gsi *g) {
    const mp_buffer_t *b = g->b;
    size_t n = g->n, npm = 0;
    mp__key *k = malloc(n * sizeof *k);
    uint64_t *pm = malloc(n * sizeof *pm);
    if (!k || !pm) {
        free(k), free(pm);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){UINT64_MAX - b[i].size, 0, i};
    mp_status r = mp__sort_keys(k, n);
    if (r == MP_OK) r = pm_values(b, n, k, pm, &npm);
    /* Stage order; inside a stage, size descending then index. */
    for (size_t i = 0; r == MP_OK && i < n; i++)
        k[i] = (mp__key){stage_of(pm, npm, b[i].size), UINT64_MAX - b[i].size, i};
    if (r == MP_OK) r = mp__sort_keys(k, n);
    for (size_t j = 0; r == MP_OK && j < n;) {
        size_t e = j;
        while (e < n && k[e].a == k[j].a) e++;
        r = run_stage(g, k + j, e - j);
        j = e;
    }
    free(k), free(pm);
    return r;
}

mp_status mp__objects_greedy_size_improved(const mp_buffer_t *b, size_t n, size_t *object,
                                           size_t *k) {
    *k = 0;
    if (n == 0) return MP_OK;
    gsi g = {.b = b, .n = n, .object = object};
    mp__objset_init(&g.set);
    size_t cap = 1;
    while (cap < n) cap *= 2;
    g.done = calloc(n, sizeof *g.done);
    g.byf = malloc(n * sizeof *g.byf);
    g.byl = malloc(n * sizeof *g.byl);
    g.posf = malloc(n * sizeof *g.posf);
    g.posl = malloc(n * sizeof *g.posl);
    g.keys = malloc(n * sizeof *g.keys);
    g.minlast = malloc(2 * cap * sizeof *g.minlast);
    g.maxfirst1 = malloc(2 * cap * sizeof *g.maxfirst1);
    mp_status r = MP_OK;
    if (!g.done || !g.byf || !g.byl || !g.posf || !g.posl || !g.keys || !g.minlast ||
        !g.maxfirst1)
        r = MP__NOMEM();
    if (r == MP_OK) r = run(&g);
    *k = g.nobj;
    mp__objset_free(&g.set);
    free(g.done), free(g.byf), free(g.byl), free(g.posf), free(g.posl), free(g.keys);
    free(g.minlast), free(g.maxfirst1), free(g.heap);
    return r;
}
