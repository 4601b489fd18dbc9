/* search.c -- "does this part fit in capacity C?" by depth-first search over
 * canonical plans.
 *
 * Canonical plans.  Push every buffer of a valid plan down as far as it
 * goes (by its alignment): it then rests at 0 or at the aligned top of a
 * buffer below it that it conflicts with, and the footprint did not grow.
 * List the buffers by (offset, rank), rank being the position in a static
 * order: each buffer's offset is then exactly its floor -- the highest
 * aligned top of the conflicting buffers listed before it -- and the list
 * is increasing in (offset, rank) (buffers at equal offsets never
 * conflict, so the rank only breaks ties).  The search builds these lists:
 * a node is a prefix, a child appends an unplaced buffer j whose
 * (floor[j], rank[j]) comes after the last placement's (olast, rlast).
 * Every plan has its canonical list, so exhausting the tree proves that
 * nothing fits.
 *
 * Inference at every node, each a necessary condition of every completion:
 *  - lb[j], a lower bound of j's offset: its floor if j can be placed next;
 *    else j is "stranded" below the last placement and can only rest on a
 *    buffer b still unplaced, so lb[j] >= the least lower bound of such a
 *    b plus its size (none: the node fails).  lb[j] + size[j] <= C.
 *  - per section s, the unplaced buffers live in s are stacked above their
 *    lower bounds: with the two least bounds l1 (of a buffer of size z1)
 *    and l2, and rem the unplaced bytes of s, l1 + rem <= C and
 *    max(l1 + z1, l2) + rem - z1 <= C (earliest release first, cut after
 *    two).  With no slack in a section, the usual case at the max-load
 *    bound, this forbids any hole in its two lowest places.
 *  - identical buffers (same sections, size, alignment) are placed in rank
 *    order (swapping two never changes a plan's validity).
 *  - parts: when no unplaced buffer lives in some section, the unplaced
 *    buffers on either side are independent problems, solved one after the
 *    other without backtracking between them.
 *  - the memo table (memo.c) cuts states already proven to fail.
 * Two cheap tests skip candidates whose child would fail its first bound
 * (on the hard set most children did, each costing a whole node).  Every
 * later placement lies at or above the last one, so after placing c at f
 * the rem[t] bytes of each section t lie in [f, C):
 *  (A) a candidate with f > C - max rem[t] fails (and so do all later ones,
 *      which are not lower);
 *  (B) a section t outside c's lifetime with C - rem[t] == f must be tiled
 *      exactly from f, so some unplaced buffer of t must be placed at f
 *      after c: its floor is f now (later placements only raise floors
 *      above f) and its rank is above c's.  If none is, c fails.
 * Candidates are tried in (floor, rank) order, selected lazily, with two
 * dominance rules.  Let k be a candidate whose subtree failed.  (1) If no
 * unplaced buffer conflicting with k can lie below k's top (their lower
 * bounds are at or above it), every completion of the node could move k
 * down to its floor, and its canonical list would then start with k or an
 * earlier candidate: all failed, so the node fails.  (2) A later
 * candidate c with floor[c] >= floor[k] + size[k] would leave k's slot
 * empty for the same reason: neither c nor any later one is tried.
 * (Moving k down may let buffers above it settle lower; they stay after
 * the last placement and in canonical order, which the proofs need.)
 * Every failure counts against the section where it was found: restarts
 * order buffers of often-failing sections first (part.c).
 *
 * Fixed buffers (p->fix, anytime "auto" with pre-placed buffers).  A plan
 * with obstacles has a canonical list too: push every free buffer down (it
 * rests at 0 or on the top of a free or fixed buffer below it), leave the
 * fixed ones, and list all by (offset, rank).  A free buffer's offset is
 * still its floor over the buffers listed before it; a fixed buffer F is
 * listed at fix[F], which is at or above its floor, and every buffer
 * conflicting with F listed before it ends at or below fix[F] (they do not
 * overlap and it lies lower).  So the search keeps floor[F] = fix[F] (it is
 * where F goes), fails a placement whose top passes fix[F] for a
 * conflicting unplaced F, and fails a node where F can no longer be listed
 * ((fix[F], rank) at or below the last placement: stranded).  The rules
 * above only use that every later placement lies at or above the last one,
 * that lower bounds are lower bounds and that floors never fall, all of
 * which still hold.  Two changes: fixed buffers have no twins (swapping a
 * fixed and a free buffer moves the fixed one), and when a fixed candidate
 * F has failed the node fails: every completion lists F at (fix[F], rank),
 * so its next entry is a candidate no later than F, and all of those
 * failed.  tests/fixed/test_anytime_fixed.c checks the optima against brute
 * force.
 *
 * Cost per node: O(n + sum of the lifetimes in sections of the unplaced
 * buffers + sections) for the bounds, plus O(section span + conflicts) per
 * child for placing and undoing it.  Memory: O(n^2) for the candidate
 * stack, O(sum of spans and conflicts) for the undo trail. */
#include "exact.h"

#include <stdlib.h>
#include <string.h>

typedef struct trail_entry {
    uint64_t *at;
    uint64_t old;
} trail_entry;

struct mp__xsearch {
    const mp__xpart *p;
    size_t n, ns;
    uint32_t *cls;          /* class of identical buffers */
    uint32_t *cls_last;     /* scratch: last member seen per class */
    uint64_t *load;         /* per section: live bytes */
    uint64_t *z1, *z2;      /* per buffer hash keys */
    uint64_t h1, h2;        /* sums over unplaced buffers j of term(j, floor[j]), on the trail */
    double *weight;         /* per section: failures seen there (learning runs) */
    double learn;           /* 1: this run adds to weight[], 0: it does not */
    /* state of a run */
    const uint32_t *order;
    uint32_t *rank, *twin;
    uint64_t cap;
    uint64_t *placed;       /* 0/1, on the trail */
    uint64_t *off, *floor, *lb;
    uint64_t *maxtop, *rem, *minlb, *min2, *sz1;
    trail_entry *trail;
    size_t trail_len;
    uint32_t *cand;
    size_t cand_len;
    mp__xmemo memo;
    uint64_t stop_at;       /* node count where this run's budget ends */
    mp__xlimit *lim;
    /* rule (B) for one floor f: the sections t with C - rem[t] == f, and
     * per section (stamped) the highest rank of an unplaced buffer of floor
     * f live there (-1: none).  Children overwrite it. */
    uint32_t *tight, *tstamp, stamp;
    int64_t *trank;
    size_t ntight;
};

static uint64_t mix(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The two hash terms of buffer j at floor f. */
static inline uint64_t term1(const mp__xsearch *s, uint32_t j, uint64_t f) {
    return mix(s->z1[j] ^ f);
}
static inline uint64_t term2(const mp__xsearch *s, uint32_t j, uint64_t f) {
    return mix(s->z2[j] + f * 0x9E3779B97F4A7C15ull);
}

static inline uint64_t up(uint64_t x, uint64_t a) {
    return x > UINT64_MAX - (a - 1) ? UINT64_MAX : mp__align_up(x, a);
}

void mp__xsearch_free(mp__xsearch *s) {
    if (!s) return;
    free(s->cls), free(s->cls_last), free(s->load), free(s->z1), free(s->z2), free(s->weight);
    free(s->rank), free(s->twin), free(s->placed), free(s->off), free(s->floor), free(s->lb);
    free(s->maxtop), free(s->rem), free(s->minlb), free(s->min2), free(s->sz1), free(s->trail), free(s->cand);
    free(s->tight), free(s->tstamp), free(s->trank);
    mp__xmemo_free(&s->memo);
    free(s);
}

/* Classes of identical buffers by sorting (sf, sl) then (size, align). */
static mp_status classes(const mp__xpart *p, uint32_t *cls) {
    size_t n = p->n;
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++)
        k[i] = (mp__key){(uint64_t)p->sf[i] << 32 | p->sl[i], p->size[i] ^ (p->align[i] << 48), i};
    mp_status s = mp__sort_keys(k, n);
    uint32_t c = 0;
    for (size_t q = 0; s == MP_OK && q < n; q++) {
        size_t i = k[q].i, h = q ? k[q - 1].i : 0;
        if (q && !(k[q].a == k[q - 1].a && p->size[i] == p->size[h] && p->align[i] == p->align[h]))
            c++;
        cls[i] = c;
    }
    free(k);
    return s;
}

mp_status mp__xsearch_new(const mp__xpart *p, mp__xsearch **out) {
    *out = NULL;
    mp__xsearch *s = calloc(1, sizeof *s);
    if (!s) return MP__NOMEM();
    size_t n = p->n, n1 = n ? n : 1, ns1 = p->ns ? p->ns : 1;
    size_t trail_cap = 1 + 3 * n, cand_cap = n * (n + 1) / 2 + 1;
    for (size_t i = 0; i < n; i++)
        trail_cap += 2 * ((size_t)p->sl[i] - p->sf[i] + 1) + (p->adj_at[i + 1] - p->adj_at[i]);
    s->p = p, s->n = n, s->ns = p->ns;
    s->cls = malloc(n1 * sizeof *s->cls);
    s->cls_last = malloc(n1 * sizeof *s->cls_last);
    s->load = calloc(ns1, sizeof *s->load);
    s->z1 = malloc(n1 * sizeof *s->z1);
    s->weight = calloc(ns1, sizeof *s->weight);
    s->z2 = malloc(n1 * sizeof *s->z2);
    s->rank = malloc(n1 * sizeof *s->rank);
    s->twin = malloc(n1 * sizeof *s->twin);
    s->placed = malloc(n1 * sizeof *s->placed);
    s->off = malloc(n1 * sizeof *s->off);
    s->floor = malloc(n1 * sizeof *s->floor);
    s->lb = malloc(n1 * sizeof *s->lb);
    s->maxtop = malloc(ns1 * sizeof *s->maxtop);
    s->rem = malloc(ns1 * sizeof *s->rem);
    s->minlb = malloc(ns1 * sizeof *s->minlb);
    s->min2 = malloc(ns1 * sizeof *s->min2);
    s->sz1 = malloc(ns1 * sizeof *s->sz1);
    s->trail = malloc(trail_cap * sizeof *s->trail);
    s->cand = malloc(cand_cap * sizeof *s->cand);
    s->tight = malloc(ns1 * sizeof *s->tight);
    s->tstamp = calloc(ns1, sizeof *s->tstamp);
    s->trank = malloc(ns1 * sizeof *s->trank);
    mp_status st = s->weight && s->cls && s->cls_last && s->load && s->z1 && s->z2 && s->rank && s->twin &&
                   s->placed && s->off && s->floor && s->lb && s->maxtop && s->rem && s->minlb && s->min2 && s->sz1 &&
                   s->trail && s->cand && s->tight && s->tstamp && s->trank ? MP_OK : MP__NOMEM();
    if (st == MP_OK) st = mp__xmemo_init(&s->memo, n);
    if (st == MP_OK) st = classes(p, s->cls);
    if (st != MP_OK) {
        mp__xsearch_free(s);
        return st;
    }
    for (size_t i = 0; i < n; i++) {
        s->z1[i] = mix(0x9E3779B97F4A7C15ull * (i + 1));
        s->z2[i] = mix(0xD1B54A32D192ED03ull * (i + 7) + 3);
        for (uint32_t t = p->sf[i]; t <= p->sl[i]; t++) s->load[t] += p->size[i];
    }
    *out = s;
    return MP_OK;
}

static inline void save(mp__xsearch *s, uint64_t *at) {
    s->trail[s->trail_len++] = (trail_entry){at, *at};
}

static void undo(mp__xsearch *s, size_t mark) {
    while (s->trail_len > mark) {
        trail_entry *e = &s->trail[--s->trail_len];
        *e->at = e->old;
    }
}

/* Places c at its floor: section tops and remaining sizes, the floors of
 * the unplaced buffers it conflicts with.  False as soon as a necessary
 * condition fails (the changes so far are on the trail either way). */
static bool place(mp__xsearch *s, uint32_t c) {
    const mp__xpart *p = s->p;
    uint64_t cap = s->cap, o = s->floor[c], top = o + p->size[c];
    save(s, &s->placed[c]);
    save(s, &s->h1);
    save(s, &s->h2);
    s->placed[c] = 1;
    s->off[c] = o;
    s->h1 -= term1(s, c, o), s->h2 -= term2(s, c, o);
    for (uint32_t t = p->sf[c]; t <= p->sl[c]; t++) {
        save(s, &s->maxtop[t]);
        save(s, &s->rem[t]);
        s->maxtop[t] = top;
        s->rem[t] -= p->size[c];
        if (s->rem[t] > cap - top) return s->weight[t] += s->learn, false;
    }
    for (size_t a = p->adj_at[c]; a < p->adj_at[c + 1]; a++) {
        uint32_t q = p->adj[a];
        if (s->placed[q]) continue;
        if (p->fix && p->fix[q] != MP_NOT_FIXED) { /* an obstacle: c must end below it */
            if (top > p->fix[q]) return s->weight[p->sf[q]] += s->learn, false;
            continue;
        }
        uint64_t nf = up(top, p->align[q]);
        if (nf > s->floor[q]) {
            save(s, &s->floor[q]);
            s->h1 += term1(s, q, nf) - term1(s, q, s->floor[q]);
            s->h2 += term2(s, q, nf) - term2(s, q, s->floor[q]);
            s->floor[q] = nf;
            if (!mp__xfits(nf, p->size[q], cap)) return s->weight[p->sf[q]] += s->learn, false;
        }
    }
    return true;
}

/* Lower bound of a stranded buffer j: it can only rest on the top of an
 * unplaced buffer b it conflicts with, and b lies at or above its floor if
 * b can be placed next, else above olast.  UINT64_MAX when there is none
 * (j can never be placed). */
static uint64_t stranded_lb(const mp__xsearch *s, uint32_t j, uint64_t olast, uint32_t rlast) {
    const mp__xpart *p = s->p;
    uint64_t m = UINT64_MAX;
    for (size_t a = p->adj_at[j]; a < p->adj_at[j + 1]; a++) {
        uint32_t b = p->adj[a];
        if (s->placed[b]) continue;
        uint64_t f = s->floor[b];
        uint64_t base = f > olast || (f == olast && s->rank[b] + 1 > rlast) ? f : olast;
        if (base <= UINT64_MAX - p->size[b]) m = mp__min64(m, base + p->size[b]);
    }
    return m == UINT64_MAX ? m : up(m, p->align[j]);
}

/* Counts a node; false when this run's budget or a limit is reached. */
static bool count_node(mp__xsearch *s) {
    mp__xlimit *l = s->lim;
    l->nodes++;
    /* the call's limit first: a budget ending on it must still stop the call */
    if (l->node_limit && l->nodes >= l->node_limit) return l->hit = true, false;
    if (l->nodes >= s->stop_at) return false;
    if ((l->nodes & 1023) == 0 &&
        ((l->deadline > 0 && mp__xnow() >= l->deadline) ||
         (l->stop && atomic_load_explicit(l->stop, memory_order_relaxed))))
        return l->hit = true, false;
    return true;
}

/* Lower bounds, hash and candidates of the node (olast, rlast): pushes
 * the candidates on the stack and returns false if the node fails. */
static bool bound_node(mp__xsearch *s, uint32_t lo, uint32_t hi, uint64_t olast, uint32_t rlast,
                       uint64_t *k1, uint64_t *k2) {
    const mp__xpart *p = s->p;
    uint64_t cap = s->cap;
    uint64_t mr = 0;
    for (size_t t = lo; t <= hi; t++) {
        s->minlb[t] = s->min2[t] = UINT64_MAX;
        mr = mp__max64(mr, s->rem[t]);
    }
    uint64_t fmax = cap >= mr ? cap - mr : UINT64_MAX; /* cap >= mr: load <= cap */
    for (size_t r = 0; r < s->n; r++) {
        uint32_t j = s->order[r];
        if (s->placed[j] || p->sf[j] < lo || p->sf[j] > hi) continue;
        uint64_t f = s->floor[j], l = f;
        bool elig = f > olast || (f == olast && r + 1 > rlast);
        if (!elig && p->fix && p->fix[j] != MP_NOT_FIXED) /* can never be listed */
            return s->weight[p->sf[j]] += s->learn, false;
        if (!elig) l = stranded_lb(s, j, olast, rlast);
        if (!mp__xfits(l, p->size[j], cap)) return s->weight[p->sf[j]] += s->learn, false;
        s->lb[j] = l;
        for (uint32_t t = p->sf[j]; t <= p->sl[j]; t++)
            if (l < s->minlb[t]) {
                s->min2[t] = s->minlb[t];
                s->minlb[t] = l, s->sz1[t] = p->size[j];
            } else if (l < s->min2[t]) {
                s->min2[t] = l;
            }
        /* rule (A): a candidate above cap - max rem fails, and so do all
         * later ones, so it is not pushed at all */
        if (elig && f <= fmax && (s->twin[j] == MP__XNONE || s->placed[s->twin[j]]))
            s->cand[s->cand_len++] = j;
    }
    for (size_t t = lo; t <= hi; t++)
        if (s->rem[t] && (!mp__xfits(s->minlb[t], s->rem[t], cap) ||
                          (s->min2[t] != UINT64_MAX && s->min2[t] > s->minlb[t] + s->sz1[t] &&
                           !mp__xfits(s->min2[t], s->rem[t] - s->sz1[t], cap))))
            return s->weight[t] += s->learn, false;
    *k1 = s->h1, *k2 = s->h2;
    return true;
}

/* Moves the least (floor, rank) of cand[from..end) to cand[from]. */
static void select_next(mp__xsearch *s, size_t from, size_t end) {
    size_t best = from;
    for (size_t q = from + 1; q < end; q++) {
        uint32_t a = s->cand[q], b = s->cand[best];
        if (s->floor[a] < s->floor[b] || (s->floor[a] == s->floor[b] && s->rank[a] < s->rank[b]))
            best = q;
    }
    uint32_t t = s->cand[from];
    s->cand[from] = s->cand[best], s->cand[best] = t;
}

/* Lower bound of unplaced buffer q's offset at the node (olast, rlast). */
static uint64_t lower_bound(const mp__xsearch *s, uint32_t q, uint64_t olast, uint32_t rlast) {
    uint64_t f = s->floor[q];
    return f > olast || (f == olast && s->rank[q] + 1 > rlast) ? f : stranded_lb(s, q, olast, rlast);
}

/* Dominance rule (1) (see the top): true when no unplaced buffer
 * conflicting with candidate k can ever lie below k's top.  Lower bounds
 * are recomputed here: lb[] of this node was overwritten by its children. */
static bool dominant(const mp__xsearch *s, uint32_t k, uint64_t olast, uint32_t rlast) {
    const mp__xpart *p = s->p;
    if (p->fix && p->fix[k] != MP_NOT_FIXED) return true; /* see the top: fixed candidates */
    uint64_t top = s->floor[k] + p->size[k];
    for (size_t a = p->adj_at[k]; a < p->adj_at[k + 1]; a++) {
        uint32_t q = p->adj[a];
        if (!s->placed[q] && s->floor[q] < top && lower_bound(s, q, olast, rlast) < top)
            return false;
    }
    return true;
}

/* Rule (B) for candidates of floor f in the run lo..hi: the sections that
 * must be tiled from exactly f, and the highest rank of a buffer that can
 * start there at f.  O(sections + n + lifetimes of the buffers of floor f). */
static void tight_build(mp__xsearch *s, uint32_t lo, uint32_t hi, uint64_t f) {
    const mp__xpart *p = s->p;
    if (++s->stamp == 0) {
        memset(s->tstamp, 0, (s->ns ? s->ns : 1) * sizeof *s->tstamp);
        s->stamp = 1;
    }
    s->ntight = 0;
    for (uint32_t t = lo; t <= hi; t++)
        if (s->rem[t] && s->cap - s->rem[t] == f)
            s->tight[s->ntight++] = t, s->tstamp[t] = s->stamp, s->trank[t] = -1;
    if (!s->ntight) return;
    for (size_t j = 0; j < s->n; j++) {
        if (s->placed[j] || s->floor[j] != f || p->sf[j] < lo || p->sf[j] > hi) continue;
        for (uint32_t t = p->sf[j]; t <= p->sl[j]; t++)
            if (s->tstamp[t] == s->stamp && s->trank[t] < (int64_t)s->rank[j])
                s->trank[t] = s->rank[j];
    }
}

/* Rule (B): true when placing candidate c (at floor f, the one of
 * tight_build) leaves a section that must be tiled from f without a
 * buffer to start it. */
static bool tight_fails(const mp__xsearch *s, uint32_t c) {
    const mp__xpart *p = s->p;
    for (size_t q = 0; q < s->ntight; q++) {
        uint32_t t = s->tight[q];
        if (s->trank[t] <= (int64_t)s->rank[c] && (t < p->sf[c] || t > p->sl[c])) return true;
    }
    return false;
}

/* Unplaced buffers starting in sections lo..hi. */
static size_t count_unplaced(const mp__xsearch *s, uint32_t lo, uint32_t hi) {
    size_t c = 0;
    for (size_t j = 0; j < s->n; j++) c += !s->placed[j] && s->p->sf[j] >= lo && s->p->sf[j] <= hi;
    return c;
}

/* The node whose unplaced buffers are the cnt starting in sections lo..hi
 * (no unplaced buffer crosses lo or hi).  YES leaves the plan placed;
 * NO and UNKNOWN leave the state as they found it. */
static mp__xanswer dfs(mp__xsearch *s, uint32_t lo, uint32_t hi, size_t cnt, uint64_t olast,
                       uint32_t rlast) {
    if (!count_node(s)) return MP__X_UNKNOWN;
    if (cnt == 0) return MP__X_YES;
    /* Runs of sections with unplaced buffers: two runs share no buffer, so
     * they are independent problems (from the same (olast, rlast)).  The
     * largest is solved first; the rest is a new node of the same scope. */
    uint32_t r0 = 0, best0 = 0, best1 = 0, runs = 0;
    uint64_t run_rem = 0, best_rem = 0;
    bool in_run = false;
    for (uint32_t t = lo;; t++) {
        bool live = s->rem[t] != 0;
        if (live && !in_run) in_run = true, r0 = t, run_rem = 0, runs++;
        if (live) run_rem = mp__max64(run_rem, s->rem[t]);
        if (in_run && (!live || t == hi)) {
            uint32_t r1 = live ? t : t - 1;
            if (run_rem > best_rem) best0 = r0, best1 = r1, best_rem = run_rem;
            in_run = false;
        }
        if (t == hi) break;
    }
    if (runs > 1) {
        size_t c = count_unplaced(s, best0, best1), mark = s->trail_len;
        mp__xanswer a = dfs(s, best0, best1, c, olast, rlast);
        if (a != MP__X_YES) return a;
        a = dfs(s, lo, hi, cnt - c, olast, rlast);
        if (a != MP__X_YES) undo(s, mark);
        return a;
    }
    lo = best0, hi = best1;
    size_t base = s->cand_len;
    uint64_t k1, k2;
    if (!bound_node(s, lo, hi, olast, rlast, &k1, &k2) ||
        mp__xmemo_fails(&s->memo, k1, k2, olast, rlast)) {
        s->cand_len = base;
        return MP__X_NO;
    }
    size_t end = s->cand_len;
    uint64_t cut = UINT64_MAX; /* least top of a failed candidate: rule (2) */
    uint64_t tight_f = UINT64_MAX; /* floor of the rule (B) data */
    for (size_t q = base; q < end; q++) {
        select_next(s, q, end);
        uint32_t c = s->cand[q];
        if (s->floor[c] >= cut) break; /* rule (A) left none above cap - max rem */
        bool last = dominant(s, c, olast, rlast); /* rule (1) */
        if (s->floor[c] != tight_f) tight_build(s, lo, hi, tight_f = s->floor[c]);
        if (s->ntight && tight_fails(s, c)) { /* rule (B): c fails, as if tried */
            if (last) break;
            cut = mp__min64(cut, s->floor[c] + s->p->size[c]);
            continue;
        }
        size_t mark = s->trail_len;
        mp__xanswer a = place(s, c) ? dfs(s, lo, hi, cnt - 1, s->off[c], s->rank[c] + 1)
                                    : MP__X_NO;
        if (a == MP__X_YES) {
            s->cand_len = base; /* the placements stay: the caller may go on */
            return a;
        }
        undo(s, mark);
        tight_f = UINT64_MAX; /* the child's nodes used the rule (B) data */
        if (a == MP__X_UNKNOWN) {
            s->cand_len = base;
            return a;
        }
        if (last) break;
        cut = mp__min64(cut, s->floor[c] + s->p->size[c]);
    }
    s->cand_len = base;
    mp__xmemo_store(&s->memo, k1, k2, olast, rlast);
    return MP__X_NO;
}

const double *mp__xsearch_weights(const mp__xsearch *s) { return s->weight; }

mp_status mp__xsearch_run(mp__xsearch *s, const uint32_t *order, uint64_t cap, uint64_t budget,
                          bool learn, mp__xlimit *lim, mp__xanswer *ans, uint64_t *off) {
    const mp__xpart *p = s->p;
    size_t n = s->n;
    s->order = order, s->cap = cap, s->lim = lim, s->learn = learn;
    s->stop_at = budget && lim->nodes < UINT64_MAX - budget ? lim->nodes + budget : UINT64_MAX;
    s->trail_len = 0, s->cand_len = 0;
    memset(s->placed, 0, (n ? n : 1) * sizeof *s->placed);
    for (size_t t = 0; t < s->ns; t++) s->maxtop[t] = 0, s->rem[t] = s->load[t];
    s->h1 = s->h2 = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t f = p->fix && p->fix[i] != MP_NOT_FIXED ? p->fix[i] : 0;
        s->floor[i] = f, s->cls_last[i] = MP__XNONE;
        s->h1 += term1(s, (uint32_t)i, f), s->h2 += term2(s, (uint32_t)i, f);
    }
    for (size_t r = 0; r < n; r++) {
        uint32_t j = order[r];
        s->rank[j] = (uint32_t)r;
        if (p->fix && p->fix[j] != MP_NOT_FIXED) { /* no twins: it cannot swap */
            s->twin[j] = MP__XNONE;
            continue;
        }
        s->twin[j] = s->cls_last[s->cls[j]];
        s->cls_last[s->cls[j]] = j;
    }
    mp__xmemo_clear(&s->memo);
    *ans = p->load > cap || p->fix_end > cap ? MP__X_NO
           : n == 0 ? MP__X_YES : dfs(s, 0, (uint32_t)(s->ns - 1), n, 0, 0);
    if (*ans == MP__X_YES)
        for (size_t i = 0; i < n; i++) off[i] = s->off[i];
    return MP_OK;
}
