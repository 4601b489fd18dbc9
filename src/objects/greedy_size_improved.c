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
 *     the hole index (mp__holes); members only shrink holes, so the value
 *     only gets worse -- except through members added during the stage,
 *     which are covered by:
 *   - two entries per member added during the stage: the nearest remaining
 *     stage buffer inside the hole just before / after it, from max-trees
 *     over the stage's buffers.  Holes shrink and buffers leave, so these
 *     values also only get worse.
 * Cost: O(n log n) for steps 1-2 (one sort by size; the per-stage orders
 * are cut out of the hole index's orders); step 3 is O((n + R) log n) with
 * R the re-evaluations (an entry is re-evaluated when its buffer is taken
 * or its hole shrinks; R <= n * k in the worst case, about n on DNN-shaped
 * inputs).  Searches climb from the buffer's own position, so nearby
 * answers stay in cache.  The paper's literal form is O(k n^2) per stage
 * and is the test oracle. */
#include "objset.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

/* ---- positional maxima -------------------------------------------------- */

typedef struct pmtree {
    size_t cap;
    uint64_t *mx, *add; /* mx[v] = max over v's leaves of the count, incl. add[v] */
} pmtree;

/* +1 on leaves l..r: the canonical nodes take the add, then the two
 * boundary paths are recomputed. */
static void pm_inc(pmtree *t, size_t l, size_t r) {
    for (size_t a = l + t->cap, z = r + t->cap + 1; a < z; a >>= 1, z >>= 1) {
        if (a & 1) t->add[a]++, t->mx[a]++, a++;
        if (z & 1) --z, t->add[z]++, t->mx[z]++;
    }
    for (size_t e = 0; e < 2; e++)
        for (size_t v = ((e ? r : l) + t->cap) >> 1; v >= 1; v >>= 1)
            t->mx[v] = mp__max64(t->mx[2 * v], t->mx[2 * v + 1]) + t->add[v];
}

/* Fills pm[0..*npm) with the distinct positional maxima, descending.
 * bysize: the buffers by size descending; h: the hole index (for its
 * orders by first and by last). */
static mp_status pm_values(const mp__holes *h, size_t n, const mp__key *bysize, uint64_t *pm,
                           size_t *npm) {
    size_t *lo = malloc(n * sizeof *lo), *hi = malloc(n * sizeof *hi), m = 0;
    uint64_t *times = malloc(n * sizeof *times);
    pmtree t = {1, NULL, NULL};
    mp_status s = MP_OK;
    if (!lo || !hi || !times) s = MP__NOMEM();
    for (size_t j = 0; s == MP_OK && j < n; j++) { /* operator indices */
        if (m == 0 || times[m - 1] != h->firstk[j]) times[m++] = h->firstk[j];
        lo[h->byf[j]] = m - 1;
    }
    for (size_t j = 0, q = 0; s == MP_OK && j < n; j++) {
        while (q < m && times[q] <= h->lastk[j]) q++;
        hi[h->byl[j]] = q - 1;
    }
    while (t.cap < m) t.cap *= 2;
    if (s == MP_OK) {
        t.mx = calloc(2 * t.cap, sizeof *t.mx);
        t.add = calloc(2 * t.cap, sizeof *t.add);
        if (!t.mx || !t.add) s = MP__NOMEM();
    }
    uint64_t count = 0;
    *npm = 0;
    for (size_t j = 0; s == MP_OK && j < n;) {
        uint64_t a = bysize[j].a; /* ~size */
        for (; j < n && bysize[j].a == a; j++) pm_inc(&t, lo[bysize[j].i], hi[bysize[j].i]);
        if (t.mx[1] > count) pm[(*npm)++] = ~a;
        count = t.mx[1];
    }
    free(lo), free(hi), free(times), free(t.mx), free(t.add);
    return s;
}

/* Stage number of a size: 2j for size == pm[j], 2j-1 between pm[j] and
 * pm[j-1], 2*npm-1 below the last. */
static size_t stage_of(const uint64_t *pm, size_t npm, uint64_t sz) {
    size_t lo = 0, hi = npm; /* number of values > sz */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pm[mid] > sz) lo = mid + 1;
        else hi = mid;
    }
    return lo < npm && pm[lo] == sz ? 2 * lo : 2 * lo - 1;
}

/* ---- state --------------------------------------------------------------- */

enum { E_BUF, E_AFTER, E_BEFORE };

/* A heap entry: key (gap, t, o, kind), then ref; ok packs o << 2 | kind. */
typedef struct entry {
    uint64_t gap;
    size_t t;
    uint64_t ok;
    size_t ref;     /* the stage buffer (E_BUF) or the member it belongs to */
} entry;

/* An evaluated candidate: the entry and the hole it fills. */
typedef struct cand {
    entry e;
    size_t left, right; /* members around the hole (MP__NONE: open end) */
} cand;

typedef struct gsi {
    const mp_buffer_t *b;
    size_t n, *object, nobj;
    bool *done;
    mp__holes holes;
    /* All stages' buffers, stage after stage: by size (desc, index), by
     * (first, index) and by (last, index desc); start[s] opens stage s. */
    size_t nst, *start, *bysize, *byf, *byl;
    uint64_t *firsts, *lasts; /* sort keys of byf and byl */
    /* current stage: its slices, positions in them, and max-trees over
     * them: tf holds ~last (by first), tl first + 1 (by last), 0 = taken */
    size_t s, *sbyf, *sbyl, *posf, *posl;
    const uint64_t *sfirsts, *slasts;
    mp__maxtree tf, tl;
    /* The stage's first entries (one per buffer) are sorted once and read
     * in order; the heap holds only entries made or re-made later. */
    entry *init;
    mp__key *ikey;
    size_t ninit, iat;
    entry *heap;
    size_t nheap, capheap;
} gsi;

static inline bool entry_lt(const entry *x, const entry *y) {
    if (x->gap != y->gap) return x->gap < y->gap;
    if (x->t != y->t) return x->t < y->t;
    if (x->ok != y->ok) return x->ok < y->ok;
    return x->ref < y->ref;
}

/* A 4-ary heap: a node's children share two cache lines. */
static mp_status heap_push(gsi *g, entry e) {
    mp_status s = mp__grow((void **)&g->heap, &g->capheap, g->nheap + 1, sizeof *g->heap);
    if (s != MP_OK) return s;
    size_t i = g->nheap++;
    while (i > 0 && entry_lt(&e, &g->heap[(i - 1) / 4])) {
        g->heap[i] = g->heap[(i - 1) / 4];
        i = (i - 1) / 4;
    }
    g->heap[i] = e;
    return MP_OK;
}

static entry heap_pop(gsi *g) {
    entry top = g->heap[0], last = g->heap[--g->nheap];
    size_t i = 0, n = g->nheap;
    for (;;) {
        size_t c = 4 * i + 1, best = c;
        if (c >= n) break;
        for (size_t d = c + 1; d < c + 4 && d < n; d++)
            if (entry_lt(&g->heap[d], &g->heap[best])) best = d;
        if (!entry_lt(&g->heap[best], &last)) break;
        g->heap[i] = g->heap[best];
        i = best;
    }
    if (n) g->heap[i] = last;
    return top;
}

/* Number of ascending keys < x (or <= x with incl). */
static size_t count_below(const uint64_t *k, size_t n, uint64_t x, bool incl) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid] < x || (incl && k[mid] == x)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Current value of an entry of the given kind; false if it has none. */
static bool evaluate(const gsi *g, int kind, size_t ref, cand *c) {
    const mp_buffer_t *b = g->b;
    size_t o, x;
    *c = (cand){{0, ref, 0, ref}, MP__NONE, MP__NONE};
    if (kind == E_BUF) {
        mp__hole h;
        if (g->done[ref] || !mp__holes_nearest(&g->holes, ref, &h)) return false;
        c->e.gap = h.gap, o = h.o, c->left = h.left, c->right = h.right;
    } else if (kind == E_AFTER) { /* hole (last of ref, first of the next member) */
        c->left = ref, c->right = g->holes.next[ref], o = g->object[ref];
        uint64_t end = c->right != MP__NONE ? b[c->right].first : UINT64_MAX;
        size_t p = count_below(g->sfirsts, g->s, b[ref].last, true);
        if ((x = mp__maxtree_first_from(&g->tf, p, ~(end - 1))) == MP__NONE) return false;
        c->e.t = g->sbyf[x]; /* first after ref, last < end */
        c->e.gap = b[c->e.t].first - b[ref].last - 1;
    } else { /* E_BEFORE: hole (last of the previous member, first of ref) */
        c->left = g->holes.prev[ref], c->right = ref, o = g->object[ref];
        uint64_t start = c->left != MP__NONE ? b[c->left].last + 1 : 0;
        if (start == UINT64_MAX) return false; /* nothing can start after it */
        size_t p = count_below(g->slasts, g->s, b[ref].first, false);
        if ((x = mp__maxtree_last_before(&g->tl, p, start + 1)) == MP__NONE) return false;
        c->e.t = g->sbyl[x]; /* last before ref, first >= start */
        c->e.gap = b[ref].first - b[c->e.t].last - 1;
    }
    c->e.ok = (uint64_t)o << 2 | (uint64_t)kind;
    return true;
}

static mp_status push_eval(gsi *g, int kind, size_t ref) {
    cand c;
    return evaluate(g, kind, ref, &c) ? heap_push(g, c.e) : MP_OK;
}

static mp_status assign(gsi *g, size_t t, size_t o, size_t left, size_t right) {
    g->done[t] = true;
    g->object[t] = o;
    mp__maxtree_set(&g->tf, g->posf[t], 0);
    mp__maxtree_set(&g->tl, g->posl[t], 0);
    mp__holes_add(&g->holes, t, left, right);
    mp_status s = push_eval(g, E_AFTER, t);
    if (s == MP_OK) s = push_eval(g, E_BEFORE, t);
    return s;
}

/* Points the stage state at stage st and fills its two max-trees. */
static void stage_setup(gsi *g, size_t st) {
    const mp_buffer_t *b = g->b;
    size_t a = g->start[st], s = g->start[st + 1] - a;
    g->s = s;
    g->sbyf = g->byf + a, g->sbyl = g->byl + a;
    g->sfirsts = g->firsts + a, g->slasts = g->lasts + a;
    for (g->tf.cap = 1; g->tf.cap < s; g->tf.cap *= 2) {}
    g->tl.cap = g->tf.cap;
    size_t cap = g->tf.cap;
    for (size_t j = 0; j < cap; j++) {
        uint64_t vf = 0, vl = 0;
        if (j < s) {
            g->posf[g->sbyf[j]] = j, g->posl[g->sbyl[j]] = j;
            vf = ~b[g->sbyf[j]].last;     /* >= 1: last < 2^64-1 */
            vl = b[g->sbyl[j]].first + 1; /* >= 1 */
        }
        g->tf.v[cap + j] = vf, g->tl.v[cap + j] = vl;
    }
    for (size_t v = cap - 1; v >= 1; v--) {
        g->tf.v[v] = mp__max64(g->tf.v[2 * v], g->tf.v[2 * v + 1]);
        g->tl.v[v] = mp__max64(g->tl.v[2 * v], g->tl.v[2 * v + 1]);
    }
}

/* The stage's first entries, evaluated in time order (neighbours share
 * cache lines of the hole index) and sorted by key. */
static mp_status first_entries(gsi *g) {
    g->ninit = g->iat = 0;
    for (size_t j = 0; j < g->s; j++) {
        cand c;
        if (!evaluate(g, E_BUF, g->sbyf[j], &c)) continue;
        g->ikey[g->ninit] = (mp__key){c.e.gap, c.e.t, g->ninit}; /* (gap, t) is unique */
        g->init[g->ninit++] = c.e;
    }
    return mp__sort_keys(g->ikey, g->ninit);
}

/* Takes the smallest pending entry; false if there is none. */
static bool next_entry(gsi *g, entry *e) {
    bool fi = g->iat < g->ninit;
    if (!fi && g->nheap == 0) return false;
    if (fi && (g->nheap == 0 || entry_lt(&g->init[g->ikey[g->iat].i], &g->heap[0])))
        *e = g->init[g->ikey[g->iat++].i];
    else
        *e = heap_pop(g);
    return true;
}

/* Runs stage st. */
static mp_status run_stage(gsi *g, size_t st) {
    stage_setup(g, st);
    const size_t *bysize = g->bysize + g->start[st];
    size_t left = g->s, largest = 0;
    g->nheap = 0;
    mp_status r = first_entries(g);
    while (r == MP_OK && left > 0) {
        entry e;
        if (!next_entry(g, &e)) { /* nothing fits anywhere: open an object */
            while (g->done[bysize[largest]]) largest++;
            r = assign(g, bysize[largest], g->nobj++, MP__NONE, MP__NONE);
            left--;
            continue;
        }
        cand now;
        if (!evaluate(g, (int)(e.ok & 3), e.ref, &now)) continue;
        if (now.e.gap == e.gap && now.e.t == e.t && now.e.ok == e.ok) {
            r = assign(g, e.t, (size_t)(e.ok >> 2), now.left, now.right);
            left--;
        } else {
            r = heap_push(g, now.e);
        }
    }
    return r;
}

/* Distributes the buffers into stages: each stage's slice of bysize, byf
 * and byl keeps the global order (byl: equal lasts by index descending). */
static mp_status make_stages(gsi *g, const mp__key *k, const uint64_t *pm, size_t npm) {
    const mp_buffer_t *b = g->b;
    size_t n = g->n, *st = malloc(n * sizeof *st), *fill = NULL;
    g->nst = 2 * npm;
    g->start = calloc(g->nst + 1, sizeof *g->start);
    fill = malloc((g->nst + 1) * sizeof *fill);
    if (!st || !g->start || !fill) {
        free(st), free(fill);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < n; i++) g->start[(st[i] = stage_of(pm, npm, b[i].size)) + 1]++;
    for (size_t x = 0; x < g->nst; x++) g->start[x + 1] += g->start[x];
    for (size_t x = 0; x <= g->nst; x++) fill[x] = g->start[x];
    for (size_t j = 0; j < n; j++) g->bysize[fill[st[k[j].i]]++] = k[j].i;
    for (size_t x = 0; x <= g->nst; x++) fill[x] = g->start[x];
    for (size_t j = 0; j < n; j++) g->byf[fill[st[g->holes.byf[j]]]++] = g->holes.byf[j];
    /* byl: walk groups of equal last backwards to get index descending */
    for (size_t x = 0; x <= g->nst; x++) fill[x] = g->start[x];
    for (size_t j = 0; j < n;) {
        size_t e = j;
        while (e < n && g->holes.lastk[e] == g->holes.lastk[j]) e++;
        for (size_t q = e; q > j; q--) {
            size_t i = g->holes.byl[q - 1];
            g->byl[fill[st[i]]++] = i;
        }
        j = e;
    }
    for (size_t j = 0; j < n; j++) {
        g->firsts[j] = b[g->byf[j]].first;
        g->lasts[j] = b[g->byl[j]].last;
    }
    free(st), free(fill);
    return MP_OK;
}

static mp_status run(gsi *g) {
    const mp_buffer_t *b = g->b;
    size_t n = g->n, npm = 0, cap = 1;
    mp__key *k = malloc(n * sizeof *k);
    uint64_t *pm = malloc(n * sizeof *pm);
    mp_status r = k && pm ? MP_OK : MP__NOMEM();
    for (size_t i = 0; r == MP_OK && i < n; i++) k[i] = (mp__key){~b[i].size, 0, i};
    if (r == MP_OK) r = mp__sort_keys(k, n);
    if (r == MP_OK) r = pm_values(&g->holes, n, k, pm, &npm);
    if (r == MP_OK) r = make_stages(g, k, pm, npm);
    size_t most = 0; /* the largest stage sizes the stage trees */
    for (size_t x = 0; r == MP_OK && x < g->nst; x++)
        most = mp__max64(most, g->start[x + 1] - g->start[x]);
    while (cap < most) cap *= 2;
    if (r == MP_OK && ((r = mp__maxtree_init(&g->tf, cap)) == MP_OK))
        r = mp__maxtree_init(&g->tl, cap);
    if (r == MP_OK) {
        g->init = malloc(cap * sizeof *g->init);
        g->ikey = malloc(cap * sizeof *g->ikey);
        if (!g->init || !g->ikey) r = MP__NOMEM();
    }
    for (size_t x = 0; r == MP_OK && x < g->nst; x++)
        if (g->start[x + 1] > g->start[x]) r = run_stage(g, x);
    free(k), free(pm);
    return r;
}

mp_status mp__objects_greedy_size_improved(const mp_buffer_t *b, size_t n, size_t *object,
                                           size_t *k) {
    *k = 0;
    if (n == 0) return MP_OK;
    gsi g = {.b = b, .n = n, .object = object};
    g.done = calloc(n, sizeof *g.done);
    g.bysize = malloc(n * sizeof *g.bysize);
    g.byf = malloc(n * sizeof *g.byf);
    g.byl = malloc(n * sizeof *g.byl);
    g.posf = malloc(n * sizeof *g.posf);
    g.posl = malloc(n * sizeof *g.posl);
    g.firsts = malloc(n * sizeof *g.firsts);
    g.lasts = malloc(n * sizeof *g.lasts);
    mp_status r = mp__holes_init(&g.holes, b, n, object);
    if (r == MP_OK && (!g.done || !g.bysize || !g.byf || !g.byl || !g.posf || !g.posl ||
                       !g.firsts || !g.lasts))
        r = MP__NOMEM();
    if (r == MP_OK) r = run(&g);
    *k = g.nobj;
    mp__holes_free(&g.holes);
    mp__maxtree_free(&g.tf);
    mp__maxtree_free(&g.tl);
    free(g.done), free(g.bysize), free(g.byf), free(g.byl), free(g.posf), free(g.posl);
    free(g.firsts), free(g.lasts), free(g.start), free(g.heap), free(g.init), free(g.ikey);
    return r;
}
