/* greedy_breadth.c -- Greedy by Breadth for shared objects (pisarchyk2020
 * sec. 4.2, Alg. 1).
 *
 * Operators are the distinct start times (a profile at any other time is a
 * subset of the one at the latest start before it).  They are visited by
 * breadth non-increasing (ties: earlier time); the not yet assigned buffers
 * of each profile go by size non-increasing (ties: index).  A buffer takes,
 * among the suitable objects (none of their buffers meets its interval),
 * the smallest one at least as large as it; if all are smaller, the largest
 * one, which grows to its size; if none is suitable, a new object.  Alg. 1
 * scans objects in creation order and keeps the first of equal sizes, so
 * ties go to the lower object number.
 *
 * Profiles: every buffer is stored in the O(log m) canonical nodes of its
 * span in a segment tree over operator indices; an operator's unassigned
 * buffers are the lists on its leaf-to-root path, and a list, once read,
 * is emptied (all its buffers were just assigned).  Suitability comes from
 * mp__conf; the best suitable object from an ordered set of (size, object)
 * walked past busy objects.
 * Cost: O(n log n) plus, per buffer, one mp__conf query and update and
 * O((s + 1) log k) for s busy objects passed in the size order; the
 * literal form is O(k n^2). */
#include "objset.h"
#include "../strategies/strategies.h"

#include <stdlib.h>

typedef struct bstate {
    const mp_buffer_t *b;
    size_t *object, nobj;
    uint64_t *osize;     /* current size of each object */
    mp__tset bysize;     /* (size, object) of every object */
    mp__conf conf;
} bstate;

/* Walks (size, object) keys from (k1,k2) up (dir > 0, inclusive) or down
 * (dir < 0, exclusive) to the first object not busy for the last query:
 * 1 found, 0 none, -1 gave up after WALK busy objects. */
enum { WALK = 32 };
static int unbusy(const bstate *st, uint64_t k1, uint64_t k2, int dir, uint64_t *o1,
                  uint64_t *o2) {
    bool ok = dir > 0 ? mp__tset_ceil(&st->bysize, k1, k2, o1, o2)
                      : mp__tset_prev(&st->bysize, k1, k2, o1, o2);
    for (int steps = 0; ok && mp__conf_busy(&st->conf, (size_t)*o2); steps++) {
        if (steps == WALK) return -1;
        ok = dir > 0 ? mp__tset_next(&st->bysize, *o1, *o2, o1, o2)
                     : mp__tset_prev(&st->bysize, *o1, *o2, o1, o2);
    }
    return ok;
}

/* The same answer from a scan of the free objects: cheap when most are
 * busy, which is when the walks above give up. */
static void scan(const bstate *st, uint64_t sz, size_t *ge, size_t *lt) {
    *ge = *lt = MP__NONE;
    for (size_t o = mp__conf_next_free(&st->conf, 0); o != MP__NONE;
         o = mp__conf_next_free(&st->conf, o + 1)) {
        uint64_t x = st->osize[o];
        if (x >= sz && (*ge == MP__NONE || x < st->osize[*ge])) *ge = o;
        if (x < sz && (*lt == MP__NONE || x > st->osize[*lt])) *lt = o;
    }
}

/* The smallest suitable object of size >= sz (ge), else the largest one
 * (lt), lowest number among equal sizes; MP__NONE if none. */
static void candidates(const bstate *st, uint64_t sz, size_t *ge, size_t *lt) {
    uint64_t k1, k2;
    *ge = *lt = MP__NONE;
    int r = unbusy(st, sz, 0, +1, &k1, &k2);
    if (r > 0) {
        *ge = (size_t)k2;
        return;
    }
    if (r == 0 && (r = unbusy(st, sz, 0, -1, &k1, &k2)) == 0) return;
    if (r > 0 && (r = unbusy(st, k1, 0, +1, &k1, &k2)) > 0) { /* lowest of that size */
        *lt = (size_t)k2;
        return;
    }
    scan(st, sz, ge, lt);
}

static mp_status assign(bstate *st, size_t t) {
    uint64_t sz = st->b[t].size, o;
    size_t ge, lt;
    mp_status s = mp__conf_query(&st->conf, t);
    if (s != MP_OK) return s;
    candidates(st, sz, &ge, &lt);
    if (ge != MP__NONE) {
        o = ge;
    } else if (lt != MP__NONE) {
        o = lt;
        mp__tset_erase(&st->bysize, st->osize[o], o);
        st->osize[o] = sz; /* grows */
        s = mp__tset_insert(&st->bysize, sz, o);
    } else {
        o = st->nobj++;
        st->osize[o] = sz;
        s = mp__tset_insert(&st->bysize, sz, o);
    }
    st->object[t] = (size_t)o;
    return s == MP_OK ? mp__conf_add(&st->conf, t, (size_t)o) : s;
}

/* The canonical-node lists of the operator segment tree (CSR). */
typedef struct stab {
    size_t cap, *start, *end, *item; /* node v's list: item[start[v] .. end[v]) */
    uint64_t *full;                  /* bit v: node v's list is not empty yet */
} stab;

static void canon(size_t cap, size_t lo, size_t hi, size_t *node, size_t *cnt) {
    *cnt = 0;
    for (size_t l = lo + cap, r = hi + cap + 1; l < r; l >>= 1, r >>= 1) {
        if (l & 1) node[(*cnt)++] = l++;
        if (r & 1) node[(*cnt)++] = --r;
    }
}

static mp_status stab_init(stab *sb, const mp__conf *c, size_t n, size_t m) {
    for (sb->cap = 1; sb->cap < m; sb->cap *= 2) {}
    sb->start = calloc(2 * sb->cap + 1, sizeof *sb->start);
    if (!sb->start) return MP__NOMEM();
    size_t node[2 * 64], cnt;
    for (size_t i = 0; i < n; i++) { /* count, then place */
        canon(sb->cap, c->lo[i], c->hi[i], node, &cnt);
        for (size_t j = 0; j < cnt; j++) sb->start[node[j] + 1]++;
    }
    for (size_t v = 1; v <= 2 * sb->cap; v++) sb->start[v] += sb->start[v - 1];
    sb->item = malloc((sb->start[2 * sb->cap] + 1) * sizeof *sb->item);
    sb->end = malloc(2 * sb->cap * sizeof *sb->end);
    if (!sb->item || !sb->end) return MP__NOMEM();
    sb->full = calloc(2 * sb->cap / 64 + 1, sizeof *sb->full);
    if (!sb->full) return MP__NOMEM();
    for (size_t v = 0; v < 2 * sb->cap; v++) sb->end[v] = sb->start[v];
    for (size_t i = 0; i < n; i++) {
        canon(sb->cap, c->lo[i], c->hi[i], node, &cnt);
        for (size_t j = 0; j < cnt; j++) {
            sb->item[sb->end[node[j]]++] = i;
            sb->full[node[j] >> 6] |= (uint64_t)1 << (node[j] & 63);
        }
    }
    return MP_OK;
}

/* Assigns the unassigned buffers live at operator index op, largest first. */
static mp_status do_operator(bstate *st, stab *sb, size_t op, mp__key **kb, size_t *kcap) {
    size_t len = 0;
    mp_status s = MP_OK;
    for (size_t v = op + sb->cap; s == MP_OK && v >= 1; v >>= 1) {
        uint64_t bit = (uint64_t)1 << (v & 63);
        if (!(sb->full[v >> 6] & bit)) continue; /* the bit set stays in cache */
        sb->full[v >> 6] &= ~bit; /* read once: all of it is assigned below */
        for (size_t j = sb->start[v]; s == MP_OK && j < sb->end[v]; j++) {
            size_t i = sb->item[j];
            if (st->conf.assigned[i]) continue;
            s = mp__grow((void **)kb, kcap, len + 1, sizeof **kb);
            if (s == MP_OK) (*kb)[len++] = (mp__key){UINT64_MAX - st->b[i].size, 0, i};
        }
    }
    if (s == MP_OK) s = mp__sort_keys(*kb, len);
    for (size_t j = 0; s == MP_OK && j < len; j++) s = assign(st, (*kb)[j].i);
    return s;
}

mp_status mp__objects_greedy_breadth(const mp_buffer_t *b, size_t n, size_t *object,
                                     size_t *k) {
    *k = 0;
    if (n == 0) return MP_OK;
    bstate st = {.b = b, .object = object};
    mp__tset_init(&st.bysize);
    stab sb = {0};
    uint64_t *br = NULL;
    size_t m = 0, kcap = 0;
    mp__key *ops = NULL, *kb = NULL;
    mp_status s = mp__conf_init(&st.conf, b, n, object);
    if (s == MP_OK) {
        m = st.conf.m;
        st.osize = malloc(n * sizeof *st.osize);
        br = calloc(m + 1, sizeof *br);
        ops = malloc(m * sizeof *ops);
        if (!st.osize || !br || !ops) s = MP__NOMEM();
    }
    if (s == MP_OK) s = stab_init(&sb, &st.conf, n, m);
    if (s == MP_OK) {
        /* Breadths by a difference array over operator indices; wrapping
         * partial sums are fine, the true prefix sums fit in 64 bits. */
        for (size_t i = 0; i < n; i++) {
            br[st.conf.lo[i]] += b[i].size;
            br[st.conf.hi[i] + 1] -= b[i].size;
        }
        for (size_t t = 0; t < m; t++) {
            if (t) br[t] += br[t - 1];
            ops[t] = (mp__key){UINT64_MAX - br[t], t, t};
        }
        s = mp__sort_keys(ops, m); /* breadth down, then time up */
    }
    for (size_t j = 0; s == MP_OK && j < m; j++) s = do_operator(&st, &sb, ops[j].i, &kb, &kcap);
    *k = st.nobj;
    mp__conf_free(&st.conf);
    mp__tset_free(&st.bysize);
    free(st.osize), free(br), free(ops), free(kb), free(sb.start), free(sb.end), free(sb.item), free(sb.full);
    return s;
}
