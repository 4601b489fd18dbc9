/* part.c -- a normalized problem cut into independent parts, and the model
 * of one part the search works on.
 *
 * Buffers whose lifetimes are connected by overlaps form a part; parts are
 * disjoint in time, so each can be planned alone at offset 0 and the
 * footprint of the whole is the largest part's.  Within a part, time is
 * cut at every first and last + 1 into elementary sections: the live set is
 * constant inside a section, and a buffer covers a contiguous range of
 * them.  Two buffers conflict iff their section ranges meet. */
#include "exact.h"

#include <stdlib.h>
#include <string.h>

void mp__xpart_free(mp__xpart *p) {
    if (!p) return;
    free(p->gid), free(p->size), free(p->align), free(p->sf), free(p->sl);
    free(p->adj_at), free(p->adj), free(p->fix);
    memset(p, 0, sizeof *p);
}

static uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

mp_status mp__xpart_fix(mp__xpart *p, const uint64_t *fixed) {
    size_t k = 0;
    for (size_t i = 0; fixed && i < p->n; i++) k += fixed[p->gid[i]] != MP_NOT_FIXED;
    if (k == 0) return MP_OK;
    if (!(p->fix = malloc(p->n * sizeof *p->fix))) return MP__NOMEM();
    for (size_t i = 0; i < p->n; i++) {
        uint64_t f = p->fix[i] = fixed[p->gid[i]];
        if (f == MP_NOT_FIXED) continue;
        p->fix_end = mp__max64(p->fix_end, f + p->size[i]);
        if (f) p->unit = gcd64(p->unit, f); /* offsets stay multiples of it */
    }
    return MP_OK;
}

/* Index of t in the sorted distinct points pt[0..np) (t is present). */
static uint32_t point_index(const uint64_t *pt, size_t np, uint64_t t) {
    size_t lo = 0, hi = np;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (pt[mid] <= t) lo = mid;
        else hi = mid;
    }
    return (uint32_t)lo;
}

/* Sections: the sorted distinct firsts and lasts + 1 (O(m log m)); then
 * the loads by a difference array and the overlap lists by scanning, for
 * each buffer, the buffers sorted by first section (O(m log m + sum of
 * degrees + m * sections in the worst case)). */
mp_status mp__xpart_build(const mp_buffer_t *b, const size_t *idx, size_t m, mp__xpart *p) {
    memset(p, 0, sizeof *p);
    p->n = m;
    size_t m1 = m ? m : 1;
    p->gid = malloc(m1 * sizeof *p->gid);
    p->size = malloc(m1 * sizeof *p->size);
    p->align = malloc(m1 * sizeof *p->align);
    p->sf = malloc(m1 * sizeof *p->sf);
    p->sl = malloc(m1 * sizeof *p->sl);
    p->adj_at = calloc(m + 1, sizeof *p->adj_at);
    mp__key *k = malloc(2 * m1 * sizeof *k);
    uint64_t *pt = malloc(2 * m1 * sizeof *pt), *diff = NULL;
    mp_status s = p->gid && p->size && p->align && p->sf && p->sl && p->adj_at && k && pt
                      ? MP_OK : MP__NOMEM();
    for (size_t i = 0; s == MP_OK && i < 2 * m; i++) {
        const mp_buffer_t *x = &b[idx[i / 2]];
        k[i] = (mp__key){i % 2 ? x->last + 1 : x->first, 0, i};
    }
    if (s == MP_OK) s = mp__sort_keys(k, 2 * m);
    size_t np = 0;
    for (size_t i = 0; s == MP_OK && i < 2 * m; i++)
        if (np == 0 || pt[np - 1] != k[i].a) pt[np++] = k[i].a;
    p->ns = np ? np - 1 : 0;
    p->unit = 0;
    for (size_t i = 0; s == MP_OK && i < m; i++) {
        const mp_buffer_t *x = &b[idx[i]];
        p->gid[i] = idx[i];
        p->size[i] = x->size;
        p->align[i] = x->align ? x->align : 1;
        p->sf[i] = point_index(pt, np, x->first);
        p->sl[i] = point_index(pt, np, x->last + 1) - 1;
        p->unit = gcd64(p->unit, x->size);
        if (p->align[i] > 1) p->unit = gcd64(p->unit, p->align[i]);
    }
    if (p->unit == 0) p->unit = 1;
    if (s == MP_OK && !(diff = calloc(p->ns + 1, sizeof *diff))) s = MP__NOMEM();
    /* Loads: sizes added at sf, removed after sl (sums fit: validated). */
    for (size_t i = 0; s == MP_OK && i < m; i++) {
        diff[p->sf[i]] += p->size[i];
        diff[p->sl[i] + 1] -= p->size[i];
    }
    uint64_t run = 0;
    for (size_t t = 0; s == MP_OK && t < p->ns; t++) {
        run += diff[t];
        p->load = mp__max64(p->load, run);
    }
    /* Overlap lists: buffers by first section; j meets i iff
     * sf[j] <= sl[i] and sl[j] >= sf[i]. */
    for (size_t i = 0; s == MP_OK && i < m; i++) k[i] = (mp__key){p->sf[i], 0, i};
    if (s == MP_OK) s = mp__sort_keys(k, m);
    for (int pass = 0; s == MP_OK && pass < 2; pass++) {
        size_t at = 0;
        for (size_t i = 0; i < m; i++) {
            if (pass) p->adj_at[i] = at;
            for (size_t q = 0; q < m && k[q].a <= p->sl[i]; q++) {
                size_t j = k[q].i;
                if (j == i || p->sl[j] < p->sf[i]) continue;
                if (pass) p->adj[at] = (uint32_t)j;
                at++;
            }
        }
        if (pass) p->adj_at[m] = at;
        else if (!(p->adj = malloc((at ? at : 1) * sizeof *p->adj))) s = MP__NOMEM();
    }
    free(k), free(pt), free(diff);
    if (s != MP_OK) mp__xpart_free(p);
    return s;
}

mp_status mp__xsplit(const mp_buffer_t *b, size_t n, size_t **idx, size_t **at, size_t *n_parts) {
    *idx = malloc((n ? n : 1) * sizeof **idx);
    *at = malloc((n + 1) * sizeof **at);
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    mp_status s = *idx && *at && k ? MP_OK : MP__NOMEM();
    for (size_t i = 0; s == MP_OK && i < n; i++) k[i] = (mp__key){b[i].first, 0, i};
    if (s == MP_OK) s = mp__sort_keys(k, n);
    size_t np = 0;
    uint64_t reach = 0;
    for (size_t q = 0; s == MP_OK && q < n; q++) {
        const mp_buffer_t *x = &b[k[q].i];
        if (q == 0 || x->first > reach) (*at)[np++] = q;
        reach = q == 0 ? x->last : mp__max64(reach, x->last);
        (*idx)[q] = k[q].i;
    }
    if (s == MP_OK) (*at)[np] = n;
    free(k);
    if (s != MP_OK) {
        free(*idx), free(*at);
        *idx = NULL, *at = NULL;
        return s;
    }
    *n_parts = np;
    return MP_OK;
}

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Heap sort of order[0..n) by key[] decreasing, ties by index:
 * deterministic, O(n log n), no allocation. */
static void sift(uint32_t *o, size_t c, size_t end, const double *key) {
#define BEFORE(x, y) (key[x] != key[y] ? key[x] < key[y] : (x) > (y))
    for (;;) {
        size_t l = 2 * c + 1, big = c;
        if (l < end && BEFORE(o[big], o[l])) big = l;
        if (l + 1 < end && BEFORE(o[big], o[l + 1])) big = l + 1;
        if (big == c) return;
        uint32_t t = o[c];
        o[c] = o[big], o[big] = t;
        c = big;
    }
#undef BEFORE
}

static void sort_desc(uint32_t *o, size_t n, const double *key) {
    for (size_t i = 0; i < n; i++) o[i] = (uint32_t)i;
    for (size_t r = n / 2; r-- > 0;) sift(o, r, n, key);
    for (size_t end = n; end > 1;) {
        end--;
        uint32_t t = o[0];
        o[0] = o[end], o[end] = t;
        sift(o, 0, end, key);
    }
    /* The heap puts the "largest" per BEFORE last: reverse for decreasing. */
    for (size_t i = 0; i < n / 2; i++) {
        uint32_t t = o[i];
        o[i] = o[n - 1 - i], o[n - 1 - i] = t;
    }
}

/* Section loads of a part into load[0..ns) (scratch of ns entries). */
static void section_loads(const mp__xpart *p, double *load) {
    for (size_t t = 0; t < p->ns; t++) load[t] = 0;
    for (size_t i = 0; i < p->n; i++)
        for (uint32_t t = p->sf[i]; t <= p->sl[i]; t++) load[t] += (double)p->size[i];
}

void mp__xorder(const mp__xpart *p, unsigned k, const double *weight, uint32_t *order,
                double *key) {
    size_t n = p->n;
    /* key[] doubles as room for the section loads (ns <= 2n). */
    double ns = (double)p->ns + 1, smax = 1, cmax = 1, *load = key + n;
    section_loads(p, load);
    for (size_t i = 0; i < n; i++) smax = smax > (double)p->size[i] ? smax : (double)p->size[i];
    for (size_t t = 0; t < p->ns; t++) cmax = cmax > load[t] ? cmax : load[t];
    double wmax = 0;
    for (size_t i = 0; weight && k >= 4 && k % 2 && i < n; i++) {
        double w = 0;
        for (uint32_t x = p->sf[i]; x <= p->sl[i]; x++) w += weight[x];
        wmax = wmax > w ? wmax : w;
    }
    for (size_t i = 0; i < n; i++) {
        /* W: lifetime, A: area, T: the largest load over the lifetime (the
         * most congested time the buffer lives through), each in [0, 1]. */
        double w = ((double)p->sl[i] - p->sf[i] + 1) / ns, sz = (double)p->size[i] / smax, t = 0;
        for (uint32_t x = p->sf[i]; x <= p->sl[i]; x++) t = t > load[x] ? t : load[x];
        t /= cmax;
        double a = w * sz;
        switch (k % 4) {
        case 0: key[i] = t + w * 1e-4 + a * 1e-8; break;  /* T, W, A */
        case 1: key[i] = w + a * 1e-4 + t * 1e-8; break;  /* W, A, T */
        case 2: key[i] = t + a * 1e-4 + w * 1e-8; break;  /* T, A, W */
        default: key[i] = sz + w * 1e-4 + t * 1e-8; break; /* size, W, T */
        }
        if (k >= 4 && wmax > 0) { /* restarts: where searches failed first */
            double w = 0;
            for (uint32_t x = p->sf[i]; x <= p->sl[i]; x++) w += weight[x];
            key[i] = w / wmax + key[i] * 0.05;
        }
        if (k >= 4) /* and noise of up to 30% shuffles near keys */
            key[i] *= 1.0 + 0.3 * (double)(mix64(i * 0x100000001B3ull ^ k) >> 11) / 9007199254740992.0;
    }
    sort_desc(order, n, key);
}
