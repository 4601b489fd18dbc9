/* arena_pattern.c -- several iteration patterns (issue 12 item 1): a
 * stream that alternates between a few distinct recurring iterations
 * (an inference service's batch sizes, sequence-length buckets) has no
 * period, but each kind of iteration repeats.
 *
 * Finding them.  When period detection finds no period at all, the
 * learning trace is cut into segments where the live traced bytes fall
 * back to their low level: the least live bytes that at least two frees
 * in the last three quarters of the trace fall to (between two requests
 * of a service only the weights stay).  Each segment's pattern is a hash
 * of its events (allocation sizes, and for each free which allocation of
 * the segment it frees).  When at least four segments are complete and
 * those whose pattern occurs twice or more are at least half of them,
 * each such pattern becomes a plan (the records of its latest occurrence,
 * blocks that outlive the segment marked cross), all plans share one
 * region sized for the largest, and the arena replays.  Patterns seen once
 * are kept as candidates.  O(n log n) per attempt for n traced events.
 *
 * Choosing.  At an iteration boundary (the serving plan's m requests are
 * done) the next requests select the plan: the candidates are the plans
 * whose first sizes equal the iteration's first sizes so far.  One left:
 * it serves from that position.  Several: the request is forwarded
 * (fb_unmatched) and the next one decides, up to SIG_MAX requests, after
 * which the first candidate serves.  None: the iteration is unmatched.
 * A served request whose size differs from the plan's hands the iteration
 * to another plan with the same first sizes that goes on with this one, if
 * there is one (the first plan's blocks move to the stale list).
 * The live blocks of the previous plan move to the stale list when
 * another plan takes over, so the overlap rule still sees them.
 *
 * Unmatched iterations are forwarded (fb_unmatched) and recorded in a
 * trace of their own; the iteration ends when its last block is freed.
 * Its pattern is then compared with the candidates: the second time a
 * pattern is seen it is planned and added (the region grows if it needs
 * to, the old one retired).  An unmatched iteration of more than twice
 * the longest plan's or candidate's requests (plus 64) is ended there,
 * not learned: one of its blocks outlives it and it has swallowed the
 * following ones.  Its blocks still live are orphans: until they are all
 * freed, the iterations that follow began in the middle of something, and
 * none of them is learned.  relearn_after such cuts in a row, with no
 * iteration learned or served between, mean that the plans are shorter
 * than the program's iterations (short patterns from its start-up): the
 * arena then drops them all and learns from scratch.  Blocks of such an
 * iteration carry K_SEG and its generation in their table kind. */
#include "arena_internal.h"

#include <stdlib.h>
#include <string.h>

#define GEN_SHIFT 8
#define GEN_MASK 0x7fffffu

static int u64_cmp(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* Pattern hash of events [from, to). */
static uint64_t pattern_hash(const mp_event_t *ev, size_t from, size_t to) {
    uint64_t h = 0x51ed;
    for (size_t i = from; i < to; i++) {
        uint64_t x = ev[i].kind == MP_EV_ALLOC ? ev[i].size * 4 + 1
                     : ev[i].kind == MP_EV_FREE ? (ev[i].block >= from ? (ev[i].block - from) * 4 + 2 : 3)
                                                : 0;
        if (x) h = mp__mix64(h ^ mp__mix64(x));
    }
    return h;
}

static void size_log(mp_arena_t *a);
static void boundary(mp_arena_t *a, bool learn);

/* A plan from the events [from, to) of the trace t (cross: allocations
 * not freed inside), not laid out yet. */
static mp_status plan_from(const mp_trace_t *t, size_t from, size_t to, aplan **out) {
    size_t n, m;
    const mp_event_t *ev = mp_trace_events(t, &n);
    mp_buffer_t *rec = NULL;
    *out = NULL;
    mp_status st = mp_trace_records(t, from, to, &rec, &m);
    if (st != MP_OK || m == 0) {
        free(rec);
        return st != MP_OK ? st : MP_EINVAL;
    }
    unsigned char *cross = calloc(m, 1);
    if (!cross) {
        free(rec);
        return MP__NOMEM();
    }
    for (size_t i = from, r = 0; i < to; i++)
        if (ev[i].kind == MP_EV_ALLOC) cross[r++] = ev[i].end == MP_TRACE_NEVER || ev[i].end >= to;
    st = mp__aplan_new(rec, cross, m, out);
    free(cross);
    return st;
}

/* Plans p and adds it to the arena's plans; p is freed on failure. */
static mp_status add_plan(mp_arena_t *a, aplan *p, uint64_t hash) {
    if (a->npl >= a->opt.max_patterns || mp__arena_plan(a, p) != MP_OK) {
        mp__aplan_free(p);
        return MP_ENOMEM;
    }
    p->hash = hash;
    a->pl[a->npl++] = p;
    return MP_OK;
}

/* The low level of live bytes (see the header); UINT64_MAX if none. */
static uint64_t low_level(const mp_event_t *ev, size_t n) {
    uint64_t *v = malloc((n / 2 + 1) * sizeof *v), live = 0, low = UINT64_MAX;
    if (!v) return UINT64_MAX;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind == MP_EV_ALLOC) live += ev[i].size;
        else if (ev[i].kind == MP_EV_FREE) {
            live -= ev[i].size;
            if (i >= n / 4 && k < n / 2 + 1) v[k++] = live;
        }
    }
    qsort(v, k, sizeof *v, u64_cmp);
    for (size_t i = 1; i < k && low == UINT64_MAX; i++)
        if (v[i] == v[i - 1]) low = v[i];
    free(v);
    return low;
}

bool mp__arena_try_patterns(mp_arena_t *a) {
    if (a->opt.max_patterns < 2) return false;
    size_t n;
    const mp_event_t *ev = mp_trace_events(a->trace, &n);
    uint64_t low = low_level(ev, n), live = 0;
    if (low == UINT64_MAX) return false;
    size_t *cut = malloc((n / 2 + 2) * sizeof *cut), nc = 0;
    uint64_t *h = malloc((n / 2 + 2) * sizeof *h), *hs = malloc((n / 2 + 2) * sizeof *hs);
    bool ok = false;
    if (!cut || !h || !hs) goto out;
    for (size_t i = 0; i < n; i++) {   /* cut[k]: first event after the k-th fall */
        if (ev[i].kind == MP_EV_ALLOC) live += ev[i].size;
        else if (ev[i].kind == MP_EV_FREE) live -= ev[i].size;
        if (ev[i].kind == MP_EV_FREE && live == low) cut[nc++] = i + 1;
    }
    if (nc < 5) goto out;   /* at least four complete segments */
    size_t seg = nc - 1, rep = 0;
    for (size_t k = 0; k < seg; k++) hs[k] = h[k] = pattern_hash(ev, cut[k], cut[k + 1]);
    qsort(hs, seg, sizeof *hs, u64_cmp);
    for (size_t k = 0; k < seg; k++)
        if ((k > 0 && hs[k] == hs[k - 1]) || (k + 1 < seg && hs[k] == hs[k + 1])) rep++;
    if (2 * rep < seg) goto out;
    /* a plan for each repeated pattern (its latest occurrence), a candidate
     * for each pattern seen once */
    mp_trace_stats_t ts;
    if (mp_trace_stats(a->trace, &ts) == MP_OK) a->st.learned_peak_bytes = ts.peak_bytes;
    if (a->npl && mp__arena_retire(a) != MP_OK) goto out;
    mp__arena_drop_all(a);
    for (size_t k = seg; k-- > 0;) {
        size_t cnt = 0, seen = 0;
        for (size_t j = 0; j < seg; j++) cnt += h[j] == h[k], seen += j > k && h[j] == h[k];
        if (seen) continue;   /* a later occurrence was taken */
        aplan *p;
        if (cnt >= 2 && a->npl < a->opt.max_patterns) {
            if (plan_from(a->trace, cut[k], cut[k + 1], &p) == MP_OK) (void)add_plan(a, p, h[k]);
        } else if (cnt == 1 && a->ncand < MAX_PATTERNS) {
            if (plan_from(a->trace, cut[k], cut[k + 1], &p) == MP_OK) {
                a->cand[a->ncand++] = p;
                p->hash = h[k];
            }
        }
    }
    if (!a->npl) goto out;
    ok = true;
    /* the partial segment after the last cut: which plan, which position */
    size_t j = 0, nlive = 0;
    uint64_t mask = 0;
    for (size_t i = 0; i < a->npl; i++) mask |= (uint64_t)1 << i;
    for (size_t i = cut[nc - 1]; i < n; i++)
        if (ev[i].kind == MP_EV_ALLOC) {
            for (size_t q = 0; q < a->npl; q++)
                if (a->pl[q]->m <= j || a->pl[q]->sig[j] != ev[i].size) mask &= ~((uint64_t)1 << q);
            j++;
            nlive += ev[i].end == MP_TRACE_NEVER;
        }
    /* traced blocks are ordinary forwarded blocks from now on */
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p) a->tab[i].kind = (a->tab[i].kind & K_RETIRED) ? K_RETIRED : K_FORWARD;
    a->multi = true;
    size_log(a);
    boundary(a, false);
    a->pos = 0;
    if (j && mask && !(mask & (mask - 1)) && j < a->pl[__builtin_ctzll(mask)]->m) {
        a->cur = a->last = a->pl[__builtin_ctzll(mask)];
        a->pos = j;
    } else if (j && nlive) {   /* an unmatched partial iteration: ends with its last block */
        a->unmatched = true;
        a->seg_live = nlive;
        a->log_full = true;    /* its start is not in the log: not learned */
        for (size_t i = cut[nc - 1]; i < n; i++)
            if (ev[i].kind == MP_EV_ALLOC && ev[i].end == MP_TRACE_NEVER) {
                size_t t = mp__atab_find(a, (uintptr_t)ev[i].handle);
                if (a->tab[t].p) a->tab[t].kind |= K_SEG | (int)((a->seg_gen & GEN_MASK) << GEN_SHIFT);
            }
    }
out:
    free(cut);
    free(h);
    free(hs);
    return ok;
}

/* Room in the log for an iteration of every plan, four times over. */
static void size_log(mp_arena_t *a) {
    size_t longest = 0;   /* the candidates too: a pattern seen once may be the longest */
    for (size_t i = 0; i < a->npl; i++) longest = mp__max64(longest, a->pl[i]->m);
    for (size_t i = 0; i < a->ncand; i++) longest = mp__max64(longest, a->cand[i]->m);
    a->longest = longest;
    size_t want = 8 * longest + 64;
    if (want > a->cap_log && mp__grow((void **)&a->log, &a->cap_log, want, sizeof *a->log) != MP_OK)
        a->log_full = true;
}

void mp__arena_log(mp_arena_t *a, void *p, uint64_t size) {
    a->seg_reqs++;
    if (a->nlog < a->cap_log) a->log[a->nlog++].p = (uintptr_t)p, a->log[a->nlog - 1].size = size;
    else a->log_full = true;
}

/* Learns the iteration in the log: the second time a pattern is seen it is
 * planned and added, the first time it becomes a candidate. */
static void learn_log(mp_arena_t *a) {
    mp_trace_t *t;
    if (a->log_full || !a->nlog || mp_trace_create(&t) != MP_OK) return;
    mp_status st = MP_OK;
    for (size_t i = 0; i < a->nlog && st == MP_OK; i++)
        if (a->log[i].size) st = mp_trace_record_alloc(t, a->log[i].p, a->log[i].size, MP_TRACE_NO_NS);
        else (void)mp_trace_record_free(t, a->log[i].p, MP_TRACE_NO_NS);   /* older blocks: ignored */
    size_t n;
    const mp_event_t *ev = mp_trace_events(t, &n);
    aplan *p;
    if (st == MP_OK && n && plan_from(t, 0, n, &p) == MP_OK) {
        uint64_t h = pattern_hash(ev, 0, n);
        p->hash = h;
        size_t c = 0;
        while (c < a->ncand && a->cand[c]->hash != h) c++;
        if (c < a->ncand) {   /* the second time: plan it */
            mp__aplan_free(a->cand[c]);
            a->cand[c] = a->cand[--a->ncand];
            if (add_plan(a, p, h) == MP_OK) size_log(a);
        } else {
            if (a->ncand == MAX_PATTERNS) mp__aplan_free(a->cand[--a->ncand]);
            memmove(a->cand + 1, a->cand, a->ncand * sizeof *a->cand);
            a->cand[0] = p;
            a->ncand++;
            size_log(a);
        }
    }
    mp_trace_free(t);
}

/* The next request starts an iteration; an unmatched one just ended is
 * learned when learn is set. */
static void boundary(mp_arena_t *a, bool learn) {
    if (a->unmatched && learn && !a->orphans) {
        learn_log(a);
        a->cuts = 0;
    }
    a->unmatched = false;
    a->cur = NULL;
    a->npend = 0;
    a->nlog = 0;
    a->log_full = false;
    a->seg_live = 0;
    a->seg_reqs = 0;
    a->seg_gen++;
}

void mp__arena_seg_abandon(mp_arena_t *a) {
    if (!a->multi) return;
    if (!a->unmatched) a->cuts = 0;   /* a plan's iteration completed */
    boundary(a, false);
}

void mp__arena_note_free(mp_arena_t *a, uintptr_t p, const aplan *pl, size_t s, int kind) {
    if (a->nlog < a->cap_log) a->log[a->nlog].p = p, a->log[a->nlog++].size = 0;
    else a->log_full = true;
    if (a->orphans && (pl ? pl->stamp[s] == (uint32_t)a->orphan_gen
                          : (kind & K_SEG) && ((unsigned)kind >> GEN_SHIFT) == (a->orphan_gen & GEN_MASK)))
        a->orphans--;
    if (!a->unmatched) return;
    bool mine = pl ? pl->stamp[s] == (uint32_t)a->seg_gen
                   : (kind & K_SEG) && ((unsigned)kind >> GEN_SHIFT) == (a->seg_gen & GEN_MASK);
    if (mine && a->seg_live && --a->seg_live == 0) boundary(a, true);
}

/* Forwards a request of an iteration not served by a plan (undecided or
 * unmatched), tagged with the iteration's generation. */
static mp_status forward_seg(mp_arena_t *a, uint64_t size, void **out) {
    int kind = K_FORWARD | K_SEG | (int)((a->seg_gen & GEN_MASK) << GEN_SHIFT);
    mp_status st = mp__arena_forward(a, size, kind, out);
    if (st != MP_OK) return st;
    a->st.fb_unmatched++;
    a->seg_live++;
    mp__arena_log(a, *out, size);
    /* an unmatched iteration that outgrows every plan twice over has
     * swallowed the next ones (a block of it stays live): end it there,
     * unlearned; its blocks still live are no iteration's any more */
    if (a->unmatched && a->seg_reqs > 2 * a->longest + 64) {
        /* the iterations that start before its blocks are freed start in
         * the middle of one: they are not learned (a fragment of a long
         * iteration would otherwise become a short pattern of its own) */
        a->orphans = a->seg_live;
        a->orphan_gen = a->seg_gen;
        boundary(a, false);
        /* cut again and again, nothing learned or served between: the
         * program's iterations are longer than every plan (short patterns
         * learned from something else, such as start-up), and cutting at
         * twice the longest never lets them be learned: start over */
        if (a->opt.relearn_after && ++a->cuts >= a->opt.relearn_after) mp__arena_start_over(a);
    }
    return MP_OK;
}

/* The iteration departs from every plan: from now on it is forwarded,
 * and learned when its blocks are all freed.  Its blocks so far (in the
 * region or forwarded, not freed yet) count as its live blocks. */
static void go_unmatched(mp_arena_t *a) {
    a->unmatched = true;
    a->cur = NULL;
    a->seg_live = 0;
    for (size_t i = 0; i < a->nlog; i++) {   /* O(log^2) once per unmatched iteration */
        if (!a->log[i].size) continue;
        bool freed = false;
        for (size_t j = i + 1; j < a->nlog && !freed; j++) freed = !a->log[j].size && a->log[j].p == a->log[i].p;
        if (freed) continue;
        a->seg_live++;
        uintptr_t q = a->log[i].p;   /* forwarded blocks get the iteration's tag */
        if (!(a->base && q >= (uintptr_t)a->base && q - (uintptr_t)a->base < a->region)) {
            size_t t = mp__atab_find(a, q);
            if (a->tab[t].p) a->tab[t].kind = (a->tab[t].kind & (K_RETIRED | K_TRACED)) | K_FORWARD |
                                              K_SEG | (int)((a->seg_gen & GEN_MASK) << GEN_SHIFT);
        }
    }
}

mp_status mp__arena_choose(mp_arena_t *a, uint64_t size, void **out, bool *served) {
    *served = false;
    if (a->unmatched) return forward_seg(a, size, out);
    aplan *p = a->cur;
    if (p) {   /* serving: does the iteration still follow p? */
        size_t j = a->pos;
        if (p->sig[j] == size) {
            *served = true;
            return MP_OK;
        }
        /* another plan with the same first j sizes that goes on with this
         * one takes over at j; p's blocks become stale */
        for (size_t q = 0; q < a->npl; q++) {
            aplan *o = a->pl[q];
            if (o == p || o->m <= j || o->sig[j] != size ||
                memcmp(o->sig, p->sig, j * sizeof *o->sig) != 0)
                continue;
            if (mp__aplan_to_stale(a, p) != MP_OK) break;
            a->cur = a->last = o;
            a->st.iteration_length = o->m;
            a->st.planned_footprint = o->L.footprint;
            a->st.lower_bound = o->L.lower_bound;
            a->st.planned_blocks = o->L.nplaced;
            a->st.cross_blocks = o->m - o->L.nplaced;
            *served = true;
            return MP_OK;
        }
        go_unmatched(a);
        return forward_seg(a, size, out);
    }
    size_t j = a->npend;
    if (j == 0) {
        a->cand_mask = 0;
        for (size_t i = 0; i < a->npl; i++) a->cand_mask |= (uint64_t)1 << i;
    }
    for (size_t q = 0; q < a->npl; q++)
        if (a->pl[q]->m <= j || a->pl[q]->sig[j] != size) a->cand_mask &= ~((uint64_t)1 << q);
    uint64_t c = a->cand_mask;
    if (c && ((c & (c - 1)) == 0 || j + 1 >= SIG_MAX)) {
        p = a->pl[__builtin_ctzll(c)];
        if (a->last && a->last != p && mp__aplan_to_stale(a, a->last) != MP_OK) {
            go_unmatched(a);
            return forward_seg(a, size, out);
        }
        a->cur = a->last = p;
        a->pos = j;
        a->npend = 0;
        a->st.iteration_length = p->m;
        a->st.planned_footprint = p->L.footprint;
        a->st.lower_bound = p->L.lower_bound;
        a->st.planned_blocks = p->L.nplaced;
        a->st.cross_blocks = p->m - p->L.nplaced;
        *served = true;   /* the caller serves slot j of p */
        return MP_OK;
    }
    if (!c) {
        go_unmatched(a);
        return forward_seg(a, size, out);
    }
    a->npend = j + 1;   /* undecided: forwarded, the next request decides */
    return forward_seg(a, size, out);
}
