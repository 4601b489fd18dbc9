/* fixed.c -- planning around pre-placed buffers (include/memplan_fixed.h).
 *
 * A buffer with a fixed offset is an obstacle: it holds its addresses
 * during its lifetime.  Any offset strategy can plan around obstacles by
 * repair: plan the free buffers alone, then settle them one by one in the
 * order of their offsets there, each keeping its offset when that clears
 * every obstacle and every buffer settled before it, and otherwise taking
 * the lowest aligned offset that does (first fit).  Every buffer settled is
 * clear of all settled buffers, so the plan is valid.  "auto" also tries a
 * plain first fit of the free buffers, largest first (ties: earliest), around
 * the obstacles, and keeps the smallest plan (ties: the earlier candidate).
 * "exact" needs no repair: its search takes the obstacles itself
 * (src/exact/search.c), starting from auto's plan around them.
 *
 * Cost: the strategy's, plus per free buffer two interval queries and a
 * sort of the k buffers live with it, O(n log n + sum of k log k). */
#include "../core/internal.h"
#include "../exact/exact.h"
#include "pools.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Problems of fixed offsets, reported with file lines when given. */
static mp_status bad(const char *path, const size_t *line, const mp_buffer_t *b, size_t i,
                     const char *what, const char *tail) {
    if (path && line)
        return mp__err(MP_EINVAL, "%s:%zu: field 'offset': %s%s", path, line[i], what, tail);
    return mp__err(MP_EINVAL, "buffer %zu (id %llu): fixed offset: %s%s", i,
                   (unsigned long long)b[i].id, what, tail);
}

/* Alignment and 64-bit room of every fixed offset. */
static mp_status fixed_room(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                            const char *path, const size_t *line) {
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a = b[i].align ? b[i].align : 1;
        total += mp_buffer_aligned_size(&b[i]) + a - 1; /* validated: no overflow */
    }
    char msg[160];
    for (size_t i = 0; i < n; i++) {
        if (fixed[i] == MP_NOT_FIXED) continue;
        uint64_t a = b[i].align ? b[i].align : 1;
        if (fixed[i] % a) {
            snprintf(msg, sizeof msg, "%llu is not a multiple of the alignment %llu",
                     (unsigned long long)fixed[i], (unsigned long long)a);
            return bad(path, line, b, i, msg, "");
        }
        if (fixed[i] > UINT64_MAX - total - mp_buffer_aligned_size(&b[i])) {
            snprintf(msg, sizeof msg, "%llu is too large (its end plus all sizes overflows 64 bits)",
                     (unsigned long long)fixed[i]);
            return bad(path, line, b, i, msg, "");
        }
    }
    return MP_OK;
}

/* Overlaps among the fixed buffers (those in pool j when pool is given):
 * the checker on them alone; tail ends the message (the pool). */
static mp_status collisions(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                            const size_t *pool, size_t j, const char *path, const size_t *line,
                            const char *tail) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += fixed[i] != MP_NOT_FIXED && (!pool || pool[i] == j);
    mp_buffer_t *sb = malloc((k ? k : 1) * sizeof *sb);
    uint64_t *so = malloc((k ? k : 1) * sizeof *so);
    size_t *map = malloc((k ? k : 1) * sizeof *map);
    mp_status s = sb && so && map ? MP_OK : MP__NOMEM();
    for (size_t i = 0, m = 0; s == MP_OK && i < n; i++)
        if (fixed[i] != MP_NOT_FIXED && (!pool || pool[i] == j))
            sb[m] = b[i], so[m] = fixed[i], map[m++] = i;
    char msg[160];
    if (s == MP_OK) {
        mp_plan_t p = {.n = k, .offset = so};
        for (size_t q = 0; q < k; q++)
            p.footprint = mp__max64(p.footprint, so[q] + mp_buffer_aligned_size(&sb[q]));
        mp_check_report_t r;
        if ((s = mp_plan_check(sb, k, &p, &r)) == MP_ECONFLICT && r.second_bad != (size_t)-1) {
            size_t x = map[r.first_bad], y = map[r.second_bad];
            if (path && line)
                snprintf(msg, sizeof msg, "buffer id %llu overlaps buffer id %llu (line %zu), both fixed and live at once",
                         (unsigned long long)b[x].id, (unsigned long long)b[y].id, line[y]);
            else
                snprintf(msg, sizeof msg, "overlaps buffer %zu (id %llu), both fixed and live at once",
                         y, (unsigned long long)b[y].id);
            s = bad(path, line, b, x, msg, tail);
        } else if (s == MP_ECONFLICT) {
            s = bad(path, line, b, map[r.first_bad], "not a valid placement", tail);
        }
    }
    free(sb), free(so), free(map);
    return s;
}

size_t mp__fixed_count(const uint64_t *fixed, size_t n) {
    size_t k = 0;
    for (size_t i = 0; fixed && i < n; i++) k += fixed[i] != MP_NOT_FIXED;
    return k;
}

uint64_t mp__fixed_end(const mp_buffer_t *b, size_t n, const uint64_t *fixed) {
    uint64_t end = 0;
    for (size_t i = 0; fixed && i < n; i++)
        if (fixed[i] != MP_NOT_FIXED) end = mp__max64(end, fixed[i] + b[i].size);
    return end;
}

mp_status mp__fixed_check(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                          const char *path, const size_t *line) {
    if (!fixed) return MP_OK;
    mp_status s = fixed_room(b, n, fixed, path, line);
    return s == MP_OK ? collisions(b, n, fixed, NULL, 0, path, line, "") : s;
}

mp_status mp__fixed_check_pools(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                                const size_t *pool, const mp_pool_t *pools, size_t k,
                                const char *path, const size_t *line) {
    if (!fixed) return MP_OK;
    mp_status s = fixed_room(b, n, fixed, path, line);
    char msg[200], tail[100];
    for (size_t i = 0; s == MP_OK && i < n; i++) {
        if (fixed[i] == MP_NOT_FIXED) continue;
        size_t j = pool ? pool[i] : 0;
        if (j >= k) {
            snprintf(msg, sizeof msg, "pool %zu of %zu", j, k);
            return bad(path, line, b, i, msg, "");
        }
        uint64_t end = fixed[i] + mp_buffer_aligned_size(&b[i]), cap = pools[j].capacity;
        if (cap && end > cap) {
            snprintf(msg, sizeof msg, "%s%llu ends at %llu, beyond the capacity %llu of pool '%s'",
                     path && line ? "buffer id " : "", (unsigned long long)(path && line ? b[i].id : fixed[i]),
                     (unsigned long long)end, (unsigned long long)cap,
                     pools[j].name ? pools[j].name : "?");
            return bad(path, line, b, i, msg, "");
        }
    }
    for (size_t j = 0; s == MP_OK && j < k; j++) {
        snprintf(tail, sizeof tail, " in pool '%s'", pools[j].name ? pools[j].name : "?");
        s = collisions(b, n, fixed, pool, j, path, line, tail);
    }
    return s;
}

mp_status mp_fixed_validate(const mp_buffer_t *b, size_t n, const uint64_t *fixed) {
    mp_status s = mp_problem_validate(b, n);
    return s == MP_OK ? mp__fixed_check(b, n, fixed, NULL, NULL) : s;
}

/* The work of one call: the normalized problem, its obstacles and index. */
typedef struct fx {
    const mp_buffer_t *b;  /* normalized */
    size_t n;
    const uint64_t *fixed;
    size_t *freeidx, m;    /* the free buffers */
    mp_buffer_t *sub;      /* the free buffers alone */
    mp__itree tree;
    mp__fit_scratch fit;
    mp__key *keys;
} fx;

/* Resets the index to the obstacles alone, at their offsets in off[]. */
static void obstacles(fx *x, uint64_t *off) {
    for (size_t i = 0; i < x->n; i++) {
        bool f = x->fixed[i] != MP_NOT_FIXED;
        if (f) off[i] = x->fixed[i];
        mp__itree_set(&x->tree, i, f);
    }
}

/* Settles the free buffers in the order of keys[0..m) (buffer indices in
 * .i), each at off[i] when that is clear, else by first fit. */
static mp_status settle(fx *x, uint64_t *off) {
    for (size_t k = 0; k < x->m; k++) {
        size_t i = x->keys[k].i;
        const mp_buffer_t *bi = &x->b[i];
        x->fit.len = 0;
        mp_status s = mp__itree_query(&x->tree, bi->first, bi->last, &x->fit.q, &x->fit.len,
                                      &x->fit.cap);
        if (s != MP_OK) return s;
        bool clear = off[i] != MP_NOT_FIXED;
        for (size_t q = 0; clear && q < x->fit.len; q++) {
            size_t j = x->fit.q[q];
            clear = off[j] >= off[i] + bi->size || off[i] >= off[j] + x->b[j].size;
        }
        if (!clear && (s = mp__itree_first_fit(&x->tree, off, i, &x->fit, &off[i])) != MP_OK)
            return s;
        mp__itree_set(&x->tree, i, true);
    }
    return MP_OK;
}

/* Strategy st on the free buffers, repaired around the obstacles. */
static mp_status repaired(fx *x, const mp__strategy *st, uint64_t *off) {
    mp_plan_t p;
    mp_status s = mp__run_strategy(st, x->sub, x->m, &p);
    if (s != MP_OK) return s;
    obstacles(x, off);
    for (size_t k = 0; k < x->m; k++) {
        off[x->freeidx[k]] = p.offset[k];
        x->keys[k] = (mp__key){p.offset[k], 0, x->freeidx[k]};
    }
    mp_plan_free(&p);
    if ((s = mp__sort_keys(x->keys, x->m)) != MP_OK) return s;
    return settle(x, off);
}

/* First fit of the free buffers, largest first (ties: earliest first). */
static mp_status first_fit_by_size(fx *x, uint64_t *off) {
    obstacles(x, off);
    for (size_t k = 0; k < x->m; k++) {
        size_t i = x->freeidx[k];
        off[i] = MP_NOT_FIXED; /* never clear: always first fit */
        x->keys[k] = (mp__key){UINT64_MAX - x->b[i].size, x->b[i].first, i};
    }
    mp_status s = mp__sort_keys(x->keys, x->m);
    return s == MP_OK ? settle(x, off) : s;
}

static void fx_free(fx *x) {
    mp__itree_free(&x->tree);
    mp__fit_scratch_free(&x->fit);
    free(x->freeidx), free(x->sub), free(x->keys);
}

/* "exact": the search itself takes the fixed buffers as obstacles. */
static mp_status exact_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed, mp_plan_t *out) {
    uint64_t *off = malloc((n ? n : 1) * sizeof *off);
    if (!off) return MP__NOMEM();
    mp_status s = mp__xsolve_fixed(b, n, fixed, off, NULL);
    if (s != MP_OK) {
        free(off);
        return s;
    }
    *out = (mp_plan_t){.n = n, .offset = off, .footprint = mp__footprint(b, n, off), .strategy = "exact"};
    return MP_OK;
}

mp_status mp__plan_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                         const mp__strategy *st, mp_plan_t *out) {
    if (st->offsets == mp__offsets_exact) return exact_fixed(b, n, fixed, out);
    fx x = {.b = b, .n = n, .fixed = fixed};
    size_t n1 = n ? n : 1;
    x.freeidx = malloc(n1 * sizeof *x.freeidx);
    x.sub = malloc(n1 * sizeof *x.sub);
    x.keys = malloc(n1 * sizeof *x.keys);
    uint64_t *off = malloc(n1 * sizeof *off), *best = malloc(n1 * sizeof *best);
    mp_status s = x.freeidx && x.sub && x.keys && off && best ? MP_OK : MP__NOMEM();
    if (s == MP_OK) s = mp__itree_init(&x.tree, b, n);
    for (size_t i = 0; s == MP_OK && i < n; i++)
        if (fixed[i] == MP_NOT_FIXED) x.sub[x.m] = b[i], x.freeidx[x.m++] = i;
    uint64_t best_fp = UINT64_MAX;
    const char *name = NULL;
    size_t nreg;
    const mp__strategy *reg = mp__registry(&nreg);
    /* the candidates: st alone, or (auto) every in_auto strategy, then first fit */
    bool is_auto = !st->offsets;
    for (size_t c = 0; s == MP_OK && c < (is_auto ? nreg + 1 : 1); c++) {
        const mp__strategy *cand = !is_auto ? st : c < nreg ? &reg[c] : NULL;
        if (is_auto && cand && !cand->in_auto) continue;
        s = cand ? repaired(&x, cand, off) : first_fit_by_size(&x, off);
        uint64_t fp = mp__footprint(b, n, off);
        if (s == MP_OK && fp < best_fp) {
            best_fp = fp, name = cand ? cand->info.name : "first-fit";
            memcpy(best, off, n * sizeof *off);
        }
    }
    fx_free(&x);
    free(off);
    if (s != MP_OK) {
        free(best);
        return s;
    }
    *out = (mp_plan_t){.n = n, .offset = best, .footprint = n ? best_fp : 0, .strategy = name};
    return MP_OK;
}

mp_status mp__offset_strategy(const char *name, const char *task, const mp__strategy **out) {
    size_t nreg;
    const mp__strategy *reg = mp__registry(&nreg);
    *out = NULL;
    for (size_t i = 0; name && i < nreg; i++)
        if (!strcmp(reg[i].info.name, name)) *out = &reg[i];
    if (!*out)
        return mp__err(MP_ENOTFOUND, "unknown strategy '%s' (see 'memplan strategies')",
                       name ? name : "(null)");
    if ((*out)->objects)
        return mp__err(MP_EINVAL, "strategy '%s' cannot %s (it plans shared objects); use auto or an offset strategy",
                       name, task);
    return MP_OK;
}

mp_status mp_plan_compute_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                                const char *strategy, mp_plan_t *out) {
    if (!out) return mp__err(MP_EINVAL, "mp_plan_compute_fixed: NULL plan");
    memset(out, 0, sizeof *out);
    if (mp__fixed_count(fixed, n) == 0) return mp_plan_compute(b, n, strategy, out);
    const mp__strategy *st;
    mp_status s = mp__offset_strategy(strategy, "place around fixed offsets", &st);
    if (s != MP_OK) return s;
    s = mp_fixed_validate(b, n, fixed);
    mp_buffer_t *nb = NULL;
    if (s == MP_OK) s = mp__normalize(b, n, &nb);
    if (s == MP_OK) s = mp__plan_fixed(nb, n, fixed, st, out);
    free(nb);
#ifdef MP_DEBUG
    if (s == MP_OK) {
        mp_status c = mp_plan_check_fixed(b, n, fixed, out, NULL);
        MP__ASSERT(c == MP_OK || c == MP_ENOMEM);
    }
#endif
    return s;
}

mp_status mp_plan_check_fixed(const mp_buffer_t *b, size_t n, const uint64_t *fixed,
                              const mp_plan_t *plan, mp_check_report_t *report) {
    mp_status s = mp_plan_check(b, n, plan, report);
    for (size_t i = 0; s == MP_OK && fixed && i < n; i++)
        if (fixed[i] != MP_NOT_FIXED && plan->offset[i] != fixed[i]) {
            if (report) report->first_bad = i, report->second_bad = (size_t)-1;
            s = mp__err(MP_ECONFLICT, "buffer %zu (id %llu) is at %llu, not at its fixed offset %llu",
                        i, (unsigned long long)b[i].id, (unsigned long long)plan->offset[i],
                        (unsigned long long)fixed[i]);
        }
    return s;
}
