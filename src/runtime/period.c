/* period.c -- iteration detection: the repeating period of an event stream
 * (zhang2019 sec. V: "once two consecutive subsequences are detected to be
 * repeating, the subsequence ... represents one training iteration").
 *
 * The stream is a sequence of symbols s[0..n): equal events have equal
 * symbols.  For a trace, an allocation's symbol hashes its size; a free's
 * hashes its size and its distance back to the allocation it frees,
 * counted in allocations and frees only (so two iterations match only if
 * their lifetimes match, and a stray read or write is one inserted symbol
 * rather than a change to every free after it); a read or write hashes
 * its kind and the block's size (not the distance, which grows every
 * iteration for blocks such as weights allocated before the loop); an op
 * boundary hashes its name (not its duration, which is measured and
 * differs between iterations).
 *
 * 1. Candidates.  w = min(16, max(1, n/8)) symbols make a window; rolling
 *    hashes of all windows take O(n).  Eight anchors a are spread evenly
 *    over [n/4, n-w].  Every other position o where the anchor's window
 *    occurs again (hash, then symbols compared) gives a candidate period
 *    p = |o - a| with template s[min(o,a), min(o,a)+p); the 32 nearest
 *    occurrences on each side of each anchor are kept (at most 512
 *    candidates), tried in order of (p, template start).
 * 2. Verification of (p, template T).  k = min(max_edits, p/8) edits are
 *    allowed per iteration.  From the template's start, walk forward: the
 *    next iteration is the stretch s[x, x+L), |L - p| <= k, with the
 *    fewest edits (Levenshtein: insertions, deletions, substitutions)
 *    against T, ties to an L whose last event equals T's last one, then
 *    to L nearest p, then the shorter (end_score); it is accepted when
 *    it needs <= k edits.  Banded dynamic programming (band 2k+1) takes
 *    O(p(2k+1)) per iteration and stops as soon as a whole row exceeds k.
 *    Then walk backward from the template's start the same way (the
 *    reversed template against the reversed stream).  The accepted
 *    iterations are the steady state; before it the prefix, after it the
 *    tail.  A stray inserted or deleted event thus costs one edit in one
 *    iteration and does not shift the iterations after it.  A candidate
 *    is valid with at least min_iterations iterations and a steady state
 *    that reaches the end of the stream (tail <= p + k) or covers at
 *    least half of it.
 * 3. Choice.  covered(p) = events in the steady state.  With C the largest
 *    covered of any valid candidate, the answer is the smallest p with
 *    covered(p) + 2p > C: the smallest period whose steady state misses
 *    less than one of its own iterations at each end of the best coverage
 *    (a template taken at an unlucky phase loses up to p - 1 events at each
 *    end, which a multiple of p need not lose).  For nested loops
 *    the inner period covers only one run of the inner loop, so the outer
 *    period, whose iterations span the whole steady state, wins; multiples
 *    of the period cover no more and lose to it.
 * Cost: O(n) for the hashes and O(n) per anchor scan; a verification is
 * O(n(2k+1)) at worst, but a wrong candidate stops within its first
 * mismatching iteration.  A p that was verified is never verified again,
 * and a near multiple (|p - jq| <= jk, j >= 2) of a verified q whose
 * template lies inside q's steady state is skipped: it would repeat q's
 * walk with coarser iterations and a stricter edit budget, so it cannot
 * cover more.  On periodic streams about one full verification per
 * distinct steady state is done, O(n(2k+1)) total.  No O(n^2) step.
 *
 * Boundary placement (traces only).  Any rotation of the loop body is also
 * a period; mp_period_detect moves the boundary to the cut inside one
 * clean iteration where the fewest bytes are live (ties: the earliest),
 * which is where a training or inference loop starts, and verifies again
 * from there; the iteration is one followed by another clean one
 * (cut_iteration), so the template taken at the cut holds no stray event.
 * mp_period_find (bare symbols, no sizes) instead moves the boundary back
 * to the earliest phase at which the events before the steady state still
 * equal the end of a clean iteration.  Blocks allocated in an iteration
 * and freed in a later one (or never) are listed as crossing iterations. */
#include "../core/internal.h"

#include <stdlib.h>
#include <string.h>

#define N_ANCHORS 8
#define PER_SIDE 32
#define WIN_MAX 16
#define INF (SIZE_MAX / 4)

void mp_period_params_default(mp_period_params_t *p) {
    p->max_edits = 2;
    p->min_iterations = 2;
}

void mp_period_free(mp_period_t *p) {
    if (!p) return;
    free(p->start);
    free(p->cross);
    memset(p, 0, sizeof *p);
}

static uint64_t mix(uint64_t h) {
    h += 0x9E3779B97F4A7C15ull;
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    return h ^ (h >> 31);
}

/* ---- one iteration against the template -------------------------------- */

typedef struct walker {
    const uint64_t *s;
    size_t n;
    size_t a, p, k;       /* template s[a, a+p), edits allowed */
    size_t *prev, *cur;   /* 2k+1 each */
} walker;

/* Tie-break between iteration lengths L with equal edits (lower wins):
 * |L - p|, plus 2k + 1 (more than any |L - p| in the band) when the
 * iteration's last event (its first, walking backward) differs from the
 * template's.  A stray event at an iteration's edge can be read
 * as inserted (the iteration one event longer, ending on the template's
 * own last event) or as replacing that edge event, which then falls into
 * the neighbouring iteration; both cost one edit.  The second moves the
 * boundary off the loop's real one, and in a trace the block allocated
 * there would cross iterations, so the length that ends on a match wins
 * even if it is one event further from p. */
static size_t end_score(const walker *w, size_t x, int dir, size_t L) {
    size_t dist = L > w->p ? L - w->p : w->p - L;
    bool same = dir > 0 ? w->s[x + L - 1] == w->s[w->a + w->p - 1] : w->s[x - L] == w->s[w->a];
    return dist + (same ? 0 : 2 * w->k + 1);
}

/* Aligns the template against the stream from x going in direction dir
 * (+1: s[x], s[x+1], ...; -1: s[x-1], s[x-2], ..., template reversed).
 * On success sets *len (stream symbols used) and *edits. */
static bool match(walker *w, size_t x, int dir, size_t *len, size_t *edits) {
    size_t p = w->p, k = w->k, m = dir > 0 ? w->n - x : x, band = 2 * k + 1;
    if (m + k < p) return false;
    const uint64_t *s = w->s;
    size_t *prev = w->prev, *cur = w->cur;
    for (size_t d = 0; d < band; d++) {   /* row 0: D[0][j] = j, j = d - k */
        prev[d] = d >= k && d - k <= m ? d - k : INF;
    }
    for (size_t i = 1; i <= p; i++) {
        uint64_t ti = dir > 0 ? s[w->a + i - 1] : s[w->a + p - i];
        size_t rowmin = INF;
        for (size_t d = 0; d < band; d++) {
            /* j = i - k + d */
            if (i + d < k || i + d - k > m) {
                cur[d] = INF;
                continue;
            }
            size_t j = i + d - k, v = INF;
            if (j == 0) {
                v = i;
            } else {
                uint64_t sj = dir > 0 ? s[x + j - 1] : s[x - j];
                if (prev[d] < INF) v = prev[d] + (ti != sj);
                if (d > 0 && cur[d - 1] + 1 < v) v = cur[d - 1] + 1;
            }
            if (d + 1 < band && prev[d + 1] + 1 < v) v = prev[d + 1] + 1;
            cur[d] = v;
            if (v < rowmin) rowmin = v;
        }
        if (rowmin > k) return false;
        size_t *t = prev;
        prev = cur;
        cur = t;
    }
    /* prev holds row p: L = p - k + d.  Ties in edits go to the L whose
     * last stream event equals the template's last one, then to L nearest
     * p, then to the shorter (see end_score). */
    size_t best = INF, bl = 0, bscore = INF;
    for (size_t d = 0; d < band; d++) {
        if (p + d < k || p + d - k == 0 || p + d - k > m) continue;
        size_t L = p + d - k, score = end_score(w, x, dir, L);
        if (prev[d] < best || (prev[d] == best && score < bscore)) best = prev[d], bl = L, bscore = score;
    }
    if (best > k) return false;
    *len = bl;
    *edits = best;
    return true;
}

/* ---- verification of one candidate ------------------------------------- */

typedef struct result {
    size_t p, k;
    size_t *start, *edits;   /* iterations + 1 boundaries, iterations edit counts */
    size_t iters;
    size_t covered, tail;
} result;

static void result_free(result *r) {
    free(r->start);
    free(r->edits);
    memset(r, 0, sizeof *r);
}

/* Walks both ways from the template s[a, a+p).  MP_OK with r->iters = 0 if
 * fewer than two iterations match. */
static mp_status verify(const uint64_t *s, size_t n, size_t a, size_t p, size_t k, result *r) {
    memset(r, 0, sizeof *r);
    r->p = p;
    r->k = k;
    walker w = {s, n, a, p, k, malloc((2 * k + 1) * sizeof(size_t)),
                malloc((2 * k + 1) * sizeof(size_t))};
    size_t *fs = NULL, *fe = NULL, *bs = NULL, *be = NULL;
    size_t nf = 0, cf = 0, cfe = 0, nb = 0, cb = 0, cbe = 0;
    mp_status st = (!w.prev || !w.cur) ? MP__NOMEM() : MP_OK;
    size_t x = a, len, ed;
    if (st == MP_OK) st = mp__grow((void **)&fs, &cf, 1, sizeof *fs);
    if (st == MP_OK) fs[nf++] = a;
    while (st == MP_OK && match(&w, x, +1, &len, &ed)) {
        x += len;
        if ((st = mp__grow((void **)&fs, &cf, nf + 1, sizeof *fs)) ||
            (st = mp__grow((void **)&fe, &cfe, nf, sizeof *fe)))
            break;
        fe[nf - 1] = ed;
        fs[nf++] = x;
    }
    x = a;
    while (st == MP_OK && match(&w, x, -1, &len, &ed)) {
        x -= len;
        if ((st = mp__grow((void **)&bs, &cb, nb + 1, sizeof *bs)) ||
            (st = mp__grow((void **)&be, &cbe, nb + 1, sizeof *be)))
            break;
        be[nb] = ed;
        bs[nb++] = x;
    }
    size_t iters = nb + nf - 1;
    if (st == MP_OK && iters >= 1) {
        r->start = malloc((iters + 1) * sizeof *r->start);
        r->edits = malloc(iters * sizeof *r->edits);
        if (!r->start || !r->edits) st = MP__NOMEM();
    }
    if (st == MP_OK && iters >= 1) {
        size_t q = 0;
        for (size_t i = nb; i-- > 0;) r->edits[q] = be[i], r->start[q++] = bs[i];
        for (size_t i = 0; i < nf; i++) {
            if (i + 1 < nf) r->edits[q] = fe[i];
            r->start[q++] = fs[i];
        }
        r->iters = iters;
        r->covered = r->start[iters] - r->start[0];
        r->tail = n - r->start[iters];
    }
    free(w.prev);
    free(w.cur);
    free(fs);
    free(fe);
    free(bs);
    free(be);
    if (st != MP_OK) result_free(r);
    return st;
}

/* ---- candidates and the choice ----------------------------------------- */

typedef struct cand {
    size_t p, a;
} cand;

static int cand_cmp(const void *x, const void *y) {
    const cand *u = x, *v = y;
    if (u->p != v->p) return u->p < v->p ? -1 : 1;
    return u->a < v->a ? -1 : u->a > v->a;
}

static size_t k_for(const mp_period_params_t *pp, size_t p) {
    return mp__min64(pp->max_edits, p / 8);
}

/* Finds the best period into *best (iters 0 if none). */
static mp_status find(const uint64_t *s, size_t n, const mp_period_params_t *pp, result *best) {
    memset(best, 0, sizeof *best);
    size_t min_it = pp->min_iterations < 2 ? 2 : pp->min_iterations;
    if (n < 2) return MP_OK;
    size_t w = n / 8;
    if (w > WIN_MAX) w = WIN_MAX;
    if (w < 1) w = 1;
    size_t nw = n - w + 1;
    uint64_t *h = malloc(nw * sizeof *h), pw = 1;
    cand *cs = malloc(2 * PER_SIDE * sizeof *cs);
    result *ok = NULL;   /* valid results */
    size_t nok = 0, cok = 0;
    mp_status st = (!h || !cs) ? MP__NOMEM() : MP_OK;
    if (st == MP_OK) {   /* h[i] = sum mix(s[i+j]) B^(w-1-j) mod 2^64 */
        const uint64_t B = 0x100000001B3ull;
        uint64_t x = 0;
        for (size_t j = 0; j < w; j++) x = x * B + mix(s[j]), pw = j ? pw * B : 1;
        h[0] = x;
        for (size_t i = 1; i < nw; i++) {
            x = (x - mix(s[i - 1]) * pw) * B + mix(s[i + w - 1]);
            h[i] = x;
        }
    }
    size_t lo = n / 4, hi = nw - 1;
    if (lo > hi) lo = hi;
    for (int an = 0; st == MP_OK && an < N_ANCHORS; an++) {
        size_t a = lo + (hi - lo) * (size_t)an / (N_ANCHORS - 1);
        if (an > 0 && a == lo + (hi - lo) * (size_t)(an - 1) / (N_ANCHORS - 1)) continue;
        /* the PER_SIDE nearest occurrences before a (ring) and after a */
        size_t nc = 0, before = 0, ring_n = 0;
        cand ring[PER_SIDE];
        for (size_t o = 0; o < nw && nc < PER_SIDE; o++) {
            if (o == a || h[o] != h[a] || memcmp(s + o, s + a, w * sizeof *s)) continue;
            if (o < a) {
                ring[before % PER_SIDE] = (cand){a - o, o};
                before++;
                ring_n = before < PER_SIDE ? before : PER_SIDE;
            } else {
                cs[nc++] = (cand){o - a, a};
            }
        }
        for (size_t i = 0; i < ring_n; i++) cs[nc++] = ring[i];
        qsort(cs, nc, sizeof *cs, cand_cmp);
        for (size_t c = 0; st == MP_OK && c < nc; c++) {
            size_t p = cs[c].p;
            bool skip = false;
            for (size_t i = 0; i < nok && !skip; i++) {
                size_t q = ok[i].p, j = (p + q / 2) / q, d = p > j * q ? p - j * q : j * q - p;
                if (p == q || (j >= 2 && d <= j * ok[i].k && cs[c].a >= ok[i].start[0] &&
                               cs[c].a + p <= ok[i].start[ok[i].iters]))
                    skip = true;
            }
            if (skip) continue;
            result r;
            if ((st = verify(s, n, cs[c].a, p, k_for(pp, p), &r)) != MP_OK) break;
            /* the steady state must reach the end of the stream (a tail of
             * at most one iteration) or cover half of it */
            if (r.iters < min_it || (r.tail > p + r.k && r.covered < n / 2)) {
                result_free(&r);
                continue;
            }
            if ((st = mp__grow((void **)&ok, &cok, nok + 1, sizeof *ok)) != MP_OK) {
                result_free(&r);
                break;
            }
            ok[nok++] = r;
        }
    }
    if (st == MP_OK && nok) {
        size_t cmax = 0, pick = SIZE_MAX;
        for (size_t i = 0; i < nok; i++) cmax = mp__max64(cmax, ok[i].covered);
        for (size_t i = 0; i < nok; i++)
            if (ok[i].covered + 2 * ok[i].p > cmax && (pick == SIZE_MAX || ok[i].p < ok[pick].p))
                pick = i;
        *best = ok[pick];
        memset(&ok[pick], 0, sizeof ok[pick]);
    }
    for (size_t i = 0; i < nok; i++) result_free(&ok[i]);
    free(ok);
    free(h);
    free(cs);
    return st;
}

/* Moves *r into the public form. */
static void publish(result *r, mp_period_t *out) {
    memset(out, 0, sizeof *out);
    if (!r->iters) return;
    out->found = 1;
    out->period = r->p;
    out->prefix = r->start[0];
    out->iterations = r->iters;
    out->start = r->start;
    out->tail = r->tail;
    size_t clean = 0;
    for (size_t j = 0; j < r->iters; j++) {
        out->edits += r->edits[j];
        if (r->edits[j] <= r->edits[clean]) clean = j;
    }
    out->clean = clean;
    free(r->edits);
    memset(r, 0, sizeof *r);
}

mp_status mp_period_find(const uint64_t *sym, size_t n, const mp_period_params_t *params,
                         mp_period_t *out) {
    memset(out, 0, sizeof *out);
    mp_period_params_t pp;
    mp_period_params_default(&pp);
    if (params) pp = *params;
    result r;
    mp_status st = find(sym, n, &pp, &r);
    if (st == MP_OK && r.iters) {
        /* earliest phase: move the boundary back over the events before
         * start[0] that equal the end of the following iteration */
        size_t j = 0;   /* compare with a clean iteration, best followed by one */
        for (size_t i = 0; i < r.iters; i++)
            if (r.edits[i] == 0 && (i + 1 == r.iters || r.edits[i + 1] == 0)) {
                j = i;
                break;
            }
        size_t s0 = r.start[0], s1 = r.start[j + 1], e = 0;
        while (e < s0 && e + 1 < r.p && sym[s0 - 1 - e] == sym[s1 - 1 - e]) e++;
        if (e && s1 - e + r.p <= n) {
            result r2;
            st = verify(sym, n, s1 - e, r.p, r.k, &r2);
            if (st == MP_OK && r2.iters >= r.iters && r2.start[0] < r.start[0]) {
                result_free(&r);
                r = r2;
            } else if (st == MP_OK) {
                result_free(&r2);
            }
        }
    }
    if (st != MP_OK) {
        result_free(&r);
        return st;
    }
    publish(&r, out);
    return MP_OK;
}

/* ---- traces -------------------------------------------------------------- */

/* The symbols of a trace's events into s[0..n).  A free's symbol holds
 * its lifetime counted in allocations and frees only: counted in events, a
 * stray read or write would lengthen the lifetime of every block live
 * across it, turn each of their frees into a substitution and fail the
 * iteration (one stray read after the 40 allocations of a loop body made
 * 40 edits); counted this way the stray is one inserted event, one edit.
 * Two passes: s[i] first holds the number of allocations and frees before
 * event i, then, from the end (a free's allocation comes earlier, so its
 * count is still there), the symbol. */
static uint64_t name_hash(const char *p) {   /* FNV-1a */
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return h;
}

/* An op boundary's symbol is its name's, never its duration: measured
 * durations differ from iteration to iteration, names repeat. */
static void trace_symbols(const mp_trace_t *t, const mp_event_t *ev, size_t n, uint64_t *s) {
    uint64_t af = 0;
    for (size_t i = 0; i < n; i++) {
        s[i] = af;
        af += ev[i].kind == MP_EV_ALLOC || ev[i].kind == MP_EV_FREE;
    }
    for (size_t i = n; i-- > 0;) {
        const mp_event_t *e = &ev[i];
        uint64_t x = e->kind == MP_EV_OP ? mix(name_hash(mp_trace_op_name(t, (size_t)e->block))) ^ 4
                                         : mix(e->size) ^ (uint64_t)e->kind;
        if (e->kind == MP_EV_FREE) x = mix(x + mix(s[i] - s[e->block]));
        s[i] = mix(x);
    }
}

/* The iteration in which to look for the cut with the fewest live bytes:
 * the last clean one followed by another clean one, so that the template
 * from any cut inside it, [cut, cut + p), is a rotation of the loop body
 * made of clean events only.  A template overlapping an iteration with a
 * stray event would be that iteration's odd copy: it fails to match the
 * others, the boundary stays at whatever phase the candidate had (with a
 * stray where all of a loop's blocks were live, there) and those blocks
 * all count as crossing.  Without two clean neighbours, the last clean
 * iteration with room for a template after it; r->iters if none. */
static size_t cut_iteration(const result *r, size_t n) {
    for (size_t i = r->iters; i-- > 1;)
        if (r->edits[i] == 0 && r->edits[i - 1] == 0) return i - 1;
    for (size_t i = r->iters; i-- > 0;)
        if (r->edits[i] == 0 && r->start[i] + 2 * r->p <= n) return i;
    return r->iters;
}

/* Index of the iteration cut (in [t0, t0+p)) with the fewest live bytes. */
static size_t best_cut(const mp_event_t *ev, size_t t0, size_t p) {
    uint64_t live = 0;   /* live bytes before event t0 */
    for (size_t i = 0; i < t0; i++) {
        if (ev[i].kind == MP_EV_ALLOC) live += ev[i].size;
        if (ev[i].kind == MP_EV_FREE) live -= ev[i].size;
    }
    size_t cut = t0;
    uint64_t least = live;
    for (size_t c = t0; c + 1 < t0 + p; c++) {
        if (ev[c].kind == MP_EV_ALLOC) live += ev[c].size;
        if (ev[c].kind == MP_EV_FREE) live -= ev[c].size;
        if (live < least) least = live, cut = c + 1;
    }
    return cut;
}

mp_status mp_period_detect(const mp_trace_t *t, const mp_period_params_t *params,
                           mp_period_t *out) {
    memset(out, 0, sizeof *out);
    mp_period_params_t pp;
    mp_period_params_default(&pp);
    if (params) pp = *params;
    size_t min_it = pp.min_iterations < 2 ? 2 : pp.min_iterations;
    size_t n;
    const mp_event_t *ev = mp_trace_events(t, &n);
    uint64_t *s = malloc((n ? n : 1) * sizeof *s);
    if (!s) return MP__NOMEM();
    trace_symbols(t, ev, n, s);
    result r;
    mp_status st = find(s, n, &pp, &r);
    if (st == MP_OK && r.iters) {
        size_t j = cut_iteration(&r, n);
        if (j < r.iters) {
            size_t p = r.p, cut = best_cut(ev, r.start[j], p);
            if (cut != r.start[j]) {
                result r2;
                st = verify(s, n, cut, p, r.k, &r2);
                if (st == MP_OK && r2.iters >= min_it) {
                    result_free(&r);
                    r = r2;
                } else if (st == MP_OK) {
                    result_free(&r2);
                }
            }
        }
    }
    free(s);
    if (st != MP_OK) {
        result_free(&r);
        return st;
    }
    publish(&r, out);
    if (!out->found) return MP_OK;
    /* blocks crossing an iteration boundary */
    size_t cap = 0, j = 0;
    for (size_t i = out->start[0]; i < out->start[out->iterations]; i++) {
        while (i >= out->start[j + 1]) j++;
        if (ev[i].kind != MP_EV_ALLOC) continue;
        if (ev[i].end != MP_TRACE_NEVER && ev[i].end < out->start[j + 1]) continue;
        if ((st = mp__grow((void **)&out->cross, &cap, out->n_cross + 1, sizeof *out->cross))) {
            mp_period_free(out);
            return st;
        }
        out->cross[out->n_cross++] = i;
    }
    return MP_OK;
}
