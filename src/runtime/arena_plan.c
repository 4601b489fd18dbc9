/* arena_plan.c -- one plan of the replay arena: the slots of a learned
 * iteration, their offsets, and what makes the replay check O(1).
 *
 * Layout.  The placed (non-cross) slots are planned at their largest
 * sizes with the arena's strategy, and the plan goes through
 * mp_plan_check.  Then, for the replay path (arena.c):
 *
 * - Conflict lists.  Slot s's conflicts are the placed slots t != s whose
 *   planned ranges [off, off + aligned size) meet s's.  A live block of the
 *   current layout lies inside its slot's planned range, so a request for
 *   s overlaps a live block only if that block belongs to s or to one of
 *   its conflicts.  They are stored as (word, mask) pairs over the bitset
 *   of live slots: the check ANDs a few words and looks closer only at
 *   live conflicting slots (in a replay that follows the plan: none).
 *   Built by sorting the slots by offset and sweeping: O(m log m + K) for
 *   K conflicting pairs.  Above MAX_PAIRS pairs the lists are dropped and
 *   the check scans the live slots instead (O(live blocks)).
 * - Offset groups.  The distinct offsets get a small open-addressing table
 *   (each slot knows its entry); each entry remembers the slot of the live
 *   block starting there (two live blocks never start at one offset: they would
 *   overlap).  A free finds its slot in O(1) expected, with no search tree.
 *
 * A layout is built aside and installed only when complete, so a failed
 * re-plan leaves the old one serving. */
#include "arena_internal.h"

#include <stdlib.h>
#include <string.h>

size_t mp__arena_max_pairs = (size_t)1 << 22;
#define MAX_PAIRS mp__arena_max_pairs

void mp__alayout_free(alayout *L) {
    free(L->psize);
    free(L->off);
    free(L->cstart);
    free(L->cword);
    free(L->cmask);
    free(L->dmask);
    free(L->fnext);
    free(L->gtab);
    free(L->gix);
    memset(L, 0, sizeof *L);
}

void mp__aplan_free(aplan *p) {
    if (!p) return;
    mp__alayout_free(&p->L);
    free(p->slot);
    free(p->sig);
    free(p->live_end);
    free(p->live_req);
    free(p->live_tr);
    free(p->lbits);
    free(p->stamp);
    free(p);
}

mp_status mp__aplan_new(mp_buffer_t *rec, const unsigned char *cross, size_t m, aplan **out) {
    *out = NULL;
    aplan *p = calloc(1, sizeof *p);
    if (!p) {
        free(rec);
        return MP__NOMEM();
    }
    p->m = m;
    p->slot = rec;
    p->sig = malloc(m * sizeof *p->sig);
    p->L.off = malloc(m * sizeof *p->L.off);
    p->L.psize = calloc(m, sizeof *p->L.psize);
    p->live_end = calloc(m, sizeof *p->live_end);
    p->live_req = calloc(m, sizeof *p->live_req);
    p->live_tr = calloc(m, 1);
    p->lbits = calloc((m + 63) / 64, sizeof *p->lbits);
    p->stamp = calloc(m, sizeof *p->stamp);
    if (!p->stamp || !p->sig || !p->L.off || !p->L.psize || !p->live_end || !p->live_req || !p->live_tr ||
        !p->lbits || m > UINT32_MAX - 1) {
        mp__aplan_free(p);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < m; i++) {
        p->sig[i] = rec[i].size;
        p->L.off[i] = cross && cross[i] ? CROSS : 0;
    }
    *out = p;
    return MP_OK;
}

/* ---- conflict lists ------------------------------------------------------- */

typedef struct span {
    uint64_t lo, hi;
    uint32_t s;
} span;

static int span_cmp(const void *x, const void *y) {
    const span *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo ? 1 : (a->s > b->s) - (a->s < b->s);
}

static int u32_cmp(const void *x, const void *y) {
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

/* Fills L's conflict words (L->off, L->psize set).  Leaves cword NULL
 * when there are more than MAX_PAIRS pairs. */
static mp_status conflicts(const mp_arena_t *a, size_t m, alayout *L) {
    size_t n = 0;
    span *sp = malloc((m ? m : 1) * sizeof *sp);
    uint32_t *deg = calloc(m + 1, sizeof *deg);
    if (!sp || !deg) goto nomem;
    for (size_t i = 0; i < m; i++)
        if (L->off[i] != CROSS)
            sp[n++] = (span){L->off[i], L->off[i] + mp__align_up(L->psize[i], a->opt.align),
                             (uint32_t)i};
    qsort(sp, n, sizeof *sp, span_cmp);
    /* pass 1: count the pairs, both ways */
    size_t pairs = 0;
    for (size_t i = 0; i < n && pairs <= MAX_PAIRS; i++)
        for (size_t j = i + 1; j < n && sp[j].lo < sp[i].hi; j++)
            if (sp[j].hi > sp[i].lo) deg[sp[i].s]++, deg[sp[j].s]++, pairs += 2;
    L->cstart = calloc(m + 1, sizeof *L->cstart);
    if (!L->cstart) goto nomem;
    if (pairs > MAX_PAIRS) {   /* the check scans the live list */
        free(sp);
        free(deg);
        return MP_OK;
    }
    uint32_t *adj = malloc((pairs ? pairs : 1) * sizeof *adj);
    size_t *at = malloc((m + 1) * sizeof *at);
    if (!adj || !at) {
        free(adj);
        free(at);
        goto nomem;
    }
    at[0] = 0;
    for (size_t i = 0; i < m; i++) at[i + 1] = at[i] + deg[i];
    for (size_t i = 0; i < m; i++) deg[i] = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n && sp[j].lo < sp[i].hi; j++)
            if (sp[j].hi > sp[i].lo) {
                uint32_t x = sp[i].s, y = sp[j].s;
                adj[at[x] + deg[x]++] = y;
                adj[at[y] + deg[y]++] = x;
            }
    /* pass 2: each slot's sorted neighbours as (word, mask) pairs */
    size_t words = 0;
    for (size_t s = 0; s < m; s++) {
        qsort(adj + at[s], deg[s], sizeof *adj, u32_cmp);
        for (size_t k = at[s]; k < at[s] + deg[s]; k++)
            words += k == at[s] || adj[k] / 64 != adj[k - 1] / 64;
    }
    L->cword = malloc((words ? words : 1) * sizeof *L->cword);
    L->cmask = malloc((words ? words : 1) * sizeof *L->cmask);
    if (!L->cword || !L->cmask) {
        free(adj);
        free(at);
        goto nomem;
    }
    size_t w = 0;
    for (size_t s = 0; s < m; s++) {
        L->cstart[s] = (uint32_t)w;
        for (size_t k = at[s]; k < at[s] + deg[s]; k++) {
            if (k == at[s] || adj[k] / 64 != adj[k - 1] / 64) {
                L->cword[w] = adj[k] / 64;
                L->cmask[w++] = 0;
            }
            L->cmask[w - 1] |= (uint64_t)1 << (adj[k] % 64);
        }
    }
    L->cstart[m] = (uint32_t)w;
    L->words = (m + 63) / 64;
    if (m <= DENSE_SLOTS) {   /* the same lists as whole words: a check of fixed length */
        L->dmask = calloc(m * L->words + 1, sizeof *L->dmask);
        if (!L->dmask) {
            free(adj);
            free(at);
            goto nomem;
        }
        for (size_t s = 0; s < m; s++)
            for (uint32_t k = L->cstart[s]; k < L->cstart[s + 1]; k++)
                L->dmask[s * L->words + L->cword[k]] = L->cmask[k];
    }
    free(adj);
    free(at);
    free(sp);
    free(deg);
    return MP_OK;
nomem:
    free(sp);
    free(deg);
    return MP__NOMEM();
}

/* ---- offset groups -------------------------------------------------------- */

/* The same hash as mp__aplan_owner's. */
static size_t ghash(uint64_t o, size_t mask) {
    uint64_t h = o * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 31)) & mask;
}

static mp_status groups(size_t m, alayout *L) {
    size_t cap = 16;
    while (cap < 2 * (L->nplaced + 1)) cap *= 2;
    L->gtab = calloc(cap, sizeof *L->gtab);
    L->gix = malloc((m ? m : 1) * sizeof *L->gix);
    if (!L->gtab || !L->gix) return MP__NOMEM();
    L->gmask = cap - 1;
    for (size_t i = 0; i < m; i++) {
        if (L->off[i] == CROSS) continue;
        size_t h = ghash(L->off[i], L->gmask);
        while (L->gtab[h].used && L->gtab[h].key != L->off[i]) h = (h + 1) & L->gmask;
        if (!L->gtab[h].used) {
            L->gtab[h] = (agrp){L->off[i], 0, 1};
            L->ngrp++;
        }
        L->gix[i] = (uint32_t)h;
    }
    return MP_OK;
}

/* ---- the order of frees ------------------------------------------------------ */

typedef struct fend {
    uint64_t last;
    uint32_t s;
} fend;

static int fend_cmp(const void *x, const void *y) {
    const fend *a = x, *b = y;
    return a->last < b->last ? -1 : a->last > b->last ? 1 : (a->s > b->s) - (a->s < b->s);
}

/* fnext: the placed slots in the order the learned iteration freed them
 * (by their last time), as a cycle; a guess for the free path only. */
static mp_status free_order(const aplan *p, alayout *L) {
    size_t m = p->m, n = 0;
    L->fnext = malloc((m ? m : 1) * sizeof *L->fnext);
    fend *f = malloc((m ? m : 1) * sizeof *f);
    if (!L->fnext || !f) {
        free(f);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < m; i++) {
        L->fnext[i] = (uint32_t)i;
        if (L->off[i] != CROSS) f[n++] = (fend){p->slot[i].last, (uint32_t)i};
    }
    qsort(f, n, sizeof *f, fend_cmp);
    for (size_t k = 0; k < n; k++) L->fnext[f[k].s] = f[(k + 1) % n].s;
    L->ffirst = n ? f[0].s : 0;
    free(f);
    return MP_OK;
}

/* ---- planning --------------------------------------------------------------- */

mp_status mp__aplan_solve(const mp_arena_t *a, const aplan *p, alayout *L) {
    memset(L, 0, sizeof *L);
    size_t m = p->m, nb = 0;
    mp_buffer_t *b = malloc((m ? m : 1) * sizeof *b);
    L->psize = calloc(m ? m : 1, sizeof *L->psize);
    L->off = malloc((m ? m : 1) * sizeof *L->off);
    if (!b || !L->psize || !L->off) {
        free(b);
        mp__alayout_free(L);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < m; i++) {
        L->off[i] = p->L.off[i] == CROSS ? CROSS : 0;
        if (L->off[i] == CROSS) continue;
        b[nb] = p->slot[i];
        b[nb].id = i;
        b[nb++].align = a->opt.align;
    }
    mp_plan_t pl = {0};
    mp_bounds_t bd = {0};
    mp_status st = MP_OK;
    if (nb) {
        st = mp_plan_compute(b, nb, a->strategy, &pl);
        if (st == MP_OK) st = mp_plan_check(b, nb, &pl, NULL);
        if (st == MP_OK) st = mp_bounds_compute(b, nb, &bd);
    }
    if (st == MP_OK) {
        for (size_t j = 0; j < nb; j++) {
            L->off[b[j].id] = pl.offset[j];
            L->psize[b[j].id] = b[j].size;
        }
        L->nplaced = nb;
        L->footprint = nb ? pl.footprint : 0;
        L->lower_bound = bd.offsets;
        st = conflicts(a, m, L);
        if (st == MP_OK) st = groups(m, L);
        if (st == MP_OK) st = free_order(p, L);
    }
    mp_plan_free(&pl);
    free(b);
    if (st != MP_OK) mp__alayout_free(L);
    return st;
}

void mp__aplan_install(aplan *p, alayout *L) {
    mp__alayout_free(&p->L);
    p->L = *L;
    p->fexp = L->ffirst;
    memset(L, 0, sizeof *L);
}

mp_status mp__aplan_to_stale(mp_arena_t *a, aplan *p) {
    if (!p->nlive) return MP_OK;
    if (mp__grow((void **)&a->stale, &a->cap_stale, a->n_stale + p->nlive, sizeof *a->stale) != MP_OK)
        return MP__NOMEM();
    for (size_t s = mp__aplan_next_live(p, 0); s != SIZE_MAX; s = mp__aplan_next_live(p, s + 1)) {
        a->stale[a->n_stale++] = (ablk){p->L.off[s], p->live_end[s], p->live_req[s], p->live_tr[s]};
        mp__aplan_unlive(p, s);
    }
    return MP_OK;
}
