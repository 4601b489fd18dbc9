/* pools.c -- several memory pools of limited size (include/memplan_fixed.h).
 *
 * A compiler for small devices has, say, 256 KiB of fast on-chip memory and
 * plenty of slow memory; it wants as many buffers as possible in the fast
 * pool and the rest in the next, as TVM's USMP does.  Fixed buffers (an
 * offset in a given pool) go to their pool first.  Then the pools are
 * filled in order.  For each pool, the strategy plans every buffer still
 * unassigned, around the pool's fixed buffers; if that plan fits the pool's
 * capacity the pool takes them all.  Otherwise the pool keeps the buffers
 * that end within the capacity in that plan (a subset of a valid plan is
 * valid) and then, largest first, every other buffer whose lowest free
 * offset among those kept (first fit) still ends within the capacity; the
 * rest go on to the next pool.  A pool of capacity 0 is unlimited; buffers
 * left after the last pool are an error.
 *
 * With a time limit, anytime "auto" improves each pool's plan for the
 * pool's share of the time, its fixed buffers kept in place as obstacles
 * (src/exact/anytime.c), and the pool keeps whichever filling, plain or
 * improved, holds more bytes (then: has the smaller footprint).  A smaller
 * plan of all the buffers left is only a proxy for "more bytes in this
 * pool", hence the comparison.  The strategy "exact" is the exact search
 * (mp_exact_solve's defaults, per pool) with the pool's fixed buffers as
 * its obstacles; its proven bound is the pool's when the pool holds every
 * buffer it planned.
 *
 * Cost per pool: one run of the strategy, plus first fit (an interval query
 * and a sort of the k buffers live with it) per buffer not kept at once. */
#include "pools.h"
#include "../exact/exact.h"
#include "../io/io.h"

#include <stdlib.h>
#include <string.h>

void mp_pool_plan_free(mp_pool_plan_t *p) {
    if (!p) return;
    free(p->pool), free(p->offset), free(p->footprint);
    for (size_t j = 0; p->name && j < p->n_pools; j++) free(p->name[j]);
    free(p->name);
    memset(p, 0, sizeof *p);
}

/* What the filling of one pool found, for its report. */
typedef struct pool_note {
    bool filled;               /* a search planned buffers for it */
    uint64_t start, proven;    /* footprint without the limit; a bound proven
                                  for the buffers it holds (0: none) */
    const char *start_strategy;
    uint64_t nodes;
    double seconds;
    bool hit_limit;
} pool_note;

/* The work of one call on the normalized problem b. */
typedef struct pw {
    const mp_buffer_t *b;
    size_t n;
    const mp__strategy *st;        /* a registry entry, auto's included */
    const uint64_t *fixed;         /* NULL: nothing fixed */
    const size_t *fpool;           /* the pools of the fixed buffers */
    const mp_pool_opts_t *o;
    size_t k;
    double deadline;               /* mp__xnow() time; 0: no time limit */
    size_t *rest, m;               /* unassigned buffers, in index order */
    size_t *sidx, ms;              /* the buffers planned for a pool */
    size_t nf;                     /* how many of them are fixed */
    mp_buffer_t *sub;
    uint64_t *sfixed, *soff;       /* their fixed offsets; their plan */
    uint64_t *off, *off2;          /* two fillings, by buffer index */
    unsigned char *in, *in2;       /* which buffers each filling keeps */
    mp__itree tree;
    mp__fit_scratch fit;
    mp__key *keys;
    pool_note *note;
} pw;

static bool fixed_in(const pw *w, size_t i, size_t j) {
    return w->fixed && w->fixed[i] != MP_NOT_FIXED && (w->fpool ? w->fpool[i] : 0) == j;
}

/* Plans pool j's fixed buffers and the unassigned ones into off[] (by
 * buffer index); *by: the strategy that made the plan. */
static mp_status plan_pool(pw *w, size_t j, uint64_t *off, const char **by) {
    size_t nf = 0;
    w->ms = 0;
    for (size_t i = 0; w->fixed && i < w->n; i++)
        if (fixed_in(w, i, j)) w->sidx[w->ms++] = i, nf++;
    w->nf = nf;
    for (size_t q = 0; q < w->m; q++) w->sidx[w->ms++] = w->rest[q];
    for (size_t q = 0; q < w->ms; q++) {
        size_t i = w->sidx[q];
        w->sub[q] = w->b[i];
        if (nf) w->sfixed[q] = fixed_in(w, i, j) ? w->fixed[i] : MP_NOT_FIXED;
    }
    if (w->st->offsets == mp__offsets_exact) { /* with its report: the pool's proof */
        mp_exact_report_t xr;
        pool_note *nt = &w->note[j];
        mp_status s = mp__xsolve_fixed(w->sub, w->ms, nf ? w->sfixed : NULL, w->soff, &xr);
        if (s != MP_OK) return s;
        for (size_t q = 0; q < w->ms; q++) off[w->sidx[q]] = w->soff[q];
        nt->proven = xr.lower_bound, nt->nodes = xr.nodes, nt->hit_limit = xr.hit_limit;
        *by = "exact";
        return MP_OK;
    }
    mp_plan_t p;
    mp_auto_report_t ar;
    mp_status s = nf ? mp__plan_fixed(w->sub, w->ms, w->sfixed, w->st, &p)
                  : w->st->offsets ? mp__run_strategy(w->st, w->sub, w->ms, &p)
                                   : mp__auto(w->sub, w->ms, &p, &ar);
    if (s != MP_OK) return s;
    for (size_t q = 0; q < w->ms; q++) off[w->sidx[q]] = p.offset[q];
    *by = p.strategy ? p.strategy : w->st->info.name;
    mp_plan_free(&p);
    return MP_OK;
}

/* Pool j's filling from the plan off[] of the buffers planned for it: in[i]
 * for those it keeps (off[i] moved by first fit for some), *bytes and *fp
 * theirs. */
static mp_status take(pw *w, size_t j, uint64_t cap, uint64_t *off, unsigned char *in,
                      uint64_t *bytes, uint64_t *fp) {
    for (size_t i = 0; i < w->n; i++) mp__itree_set(&w->tree, i, false);
    size_t nk = 0;
    for (size_t q = 0; q < w->ms; q++) {
        size_t i = w->sidx[q];
        uint64_t end = off[i] + w->b[i].size;
        in[i] = fixed_in(w, i, j) || !cap || end <= cap; /* fixed: within cap, checked */
        if (in[i]) mp__itree_set(&w->tree, i, true);
        else w->keys[nk++] = (mp__key){UINT64_MAX - w->b[i].size, w->b[i].first, i};
    }
    mp_status s = mp__sort_keys(w->keys, nk);
    for (size_t q = 0; s == MP_OK && q < nk; q++) { /* largest first, into what room is left */
        size_t i = w->keys[q].i;
        uint64_t at;
        if ((s = mp__itree_first_fit(&w->tree, off, i, &w->fit, &at)) != MP_OK) break;
        if (at <= cap && w->b[i].size <= cap - at) {
            off[i] = at, in[i] = 1;
            mp__itree_set(&w->tree, i, true);
        }
    }
    *bytes = *fp = 0;
    for (size_t q = 0; q < w->ms; q++) {
        size_t i = w->sidx[q];
        if (in[i]) *bytes += w->b[i].size, *fp = mp__max64(*fp, off[i] + w->b[i].size);
    }
    return s;
}

typedef struct relay {
    const mp_pool_opts_t *o;
    size_t pool;
} relay;

static void relay_progress(void *ctx, const mp_anytime_progress_t *p) {
    const relay *r = ctx;
    r->o->progress(r->o->ctx, r->pool, p);
}

/* With a time limit: anytime "auto" from the strategy's plan in soff[]
 * (sub order) for pool j's share of the time; off2/in2 get its filling,
 * *better whether it beats the plain one (bytes, fp). */
static mp_status improve(pw *w, size_t j, uint64_t cap, bool all, uint64_t bytes, uint64_t fp,
                         bool *better) {
    *better = false;
    double now = mp__xnow(), left = w->deadline - now;
    if (left <= 0 || !w->ms) return MP_OK;
    relay r = {w->o, j};
    mp_auto_opts_t ao = {.time_limit = all || j + 1 == w->k ? left : left / (double)(w->k - j),
                         .threads = w->o->threads,
                         .progress = w->o->progress ? relay_progress : NULL, .ctx = &r,
                         .fixed = w->nf ? w->sfixed : NULL}; /* the pool's own */
    const char *by = w->note[j].start_strategy;
    mp_exact_report_t xr;
    mp_status s = mp__anytime_from(w->sub, w->ms, &ao, now, w->soff, &by, &xr);
    if (s != MP_OK) return s;
    pool_note *nt = &w->note[j];
    nt->nodes = xr.nodes, nt->hit_limit = xr.hit_limit;
    nt->proven = xr.lower_bound; /* for the buffers planned: kept only if it holds them all */
    for (size_t q = 0; q < w->ms; q++) w->off2[w->sidx[q]] = w->soff[q];
    uint64_t bytes2, fp2;
    if ((s = take(w, j, cap, w->off2, w->in2, &bytes2, &fp2)) != MP_OK) return s;
    *better = bytes2 > bytes || (bytes2 == bytes && fp2 < fp);
    return MP_OK;
}

/* Fills pool j of capacity cap (0: unlimited) from the unassigned buffers. */
static mp_status fill(pw *w, size_t j, uint64_t cap, mp_pool_plan_t *out) {
    pool_note *nt = &w->note[j];
    double t0 = mp__xnow();
    nt->filled = true;
    mp_status s = plan_pool(w, j, w->off, &nt->start_strategy);
    uint64_t bytes = 0, fp = 0, total = 0;
    /* the search starts from the strategy's plan: take() moves some of
     * the buffers it leaves out, and they may then overlap others left out */
    for (size_t q = 0; s == MP_OK && q < w->ms; q++) w->soff[q] = w->off[w->sidx[q]];
    if (s == MP_OK) s = take(w, j, cap, w->off, w->in, &bytes, &fp);
    for (size_t q = 0; q < w->ms; q++) total += w->b[w->sidx[q]].size;
    nt->start = fp;
    bool better = false;
    if (s == MP_OK && w->deadline > 0) s = improve(w, j, cap, bytes == total, bytes, fp, &better);
    if (s != MP_OK) return s;
    const uint64_t *off = better ? w->off2 : w->off;
    const unsigned char *in = better ? w->in2 : w->in;
    size_t left = 0, held = 0;
    for (size_t q = 0; q < w->ms; q++) {
        size_t i = w->sidx[q];
        held += in[i];
        if (in[i]) out->pool[i] = j, out->offset[i] = off[i];
    }
    if (held < w->ms) nt->proven = 0; /* a bound for others than it holds */
    for (size_t q = 0; q < w->m; q++)
        if (!in[w->rest[q]]) w->rest[left++] = w->rest[q];
    w->m = left;
    nt->seconds = mp__xnow() - t0;
    return MP_OK;
}

/* Footprints and, with report, each pool's report. */
static mp_status finish(pw *w, mp_pool_plan_t *out, mp_exact_report_t *report) {
    for (size_t i = 0; i < w->n; i++) {
        uint64_t end = out->offset[i] + w->b[i].size;
        out->footprint[out->pool[i]] = mp__max64(out->footprint[out->pool[i]], end);
    }
    for (size_t j = 0; report && j < w->k; j++) {
        size_t m = 0;
        uint64_t fixed_end = 0; /* no plan of the pool ends below a fixed buffer */
        for (size_t i = 0; i < w->n; i++)
            if (out->pool[i] == j) {
                w->sub[m++] = w->b[i];
                if (fixed_in(w, i, j)) fixed_end = mp__max64(fixed_end, w->fixed[i] + w->b[i].size);
            }
        uint64_t load;
        mp_status s = mp__offsets_bound(w->sub, m, &load);
        if (s != MP_OK) return s;
        const pool_note *nt = &w->note[j];
        uint64_t fp = out->footprint[j], lb = mp__max64(mp__max64(load, fixed_end), nt->proven);
        report[j] = (mp_exact_report_t){
            .status = fp == lb ? MP_EXACT_OPTIMAL : MP_EXACT_GAP, .footprint = fp,
            .lower_bound = lb, .load_bound = load, .start = nt->filled ? nt->start : fp,
            .start_strategy = nt->filled ? nt->start_strategy : "fixed",
            .nodes = nt->nodes, .seconds = nt->seconds, .hit_limit = nt->hit_limit && fp > lb};
    }
    return MP_OK;
}

static mp_status pools_run(pw *w, const mp_pool_t *pools, mp_pool_plan_t *out,
                           mp_exact_report_t *report) {
    w->m = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (w->fixed && w->fixed[i] != MP_NOT_FIXED)
            out->pool[i] = w->fpool ? w->fpool[i] : 0, out->offset[i] = w->fixed[i];
        else
            w->rest[w->m++] = i;
    }
    mp_status s = MP_OK;
    for (size_t j = 0; s == MP_OK && j < w->k && w->m; j++) s = fill(w, j, pools[j].capacity, out);
    if (s == MP_OK && w->m) {
        uint64_t bytes = 0;
        size_t k = w->k;
        for (size_t q = 0; q < w->m; q++) bytes += w->b[w->rest[q]].size;
        s = mp__err(MP_EINVAL, "%zu buffers (%llu bytes, e.g. id %llu) do not fit in the pools: the last, '%s', holds %llu bytes; make the last pool unlimited",
                    w->m, (unsigned long long)bytes, (unsigned long long)w->b[w->rest[0]].id,
                    pools[k - 1].name ? pools[k - 1].name : "?",
                    (unsigned long long)pools[k - 1].capacity);
    }
    return s == MP_OK ? finish(w, out, report) : s;
}

/* The options' own checks, before the problem's. */
static mp_status check_opts(const mp_pool_opts_t *o, const mp__strategy *st) {
    if (o->time_limit != o->time_limit)
        return mp__err(MP_EINVAL, "mp_plan_pools_opts: time_limit is not a number");
    if (o->time_limit > 0 && st->offsets)
        return mp__err(MP_EINVAL, "plan pools: a time limit works with strategy auto only, not '%s'",
                       st->info.name);
    return MP_OK;
}

static mp_status pw_alloc(pw *w, size_t n, size_t k, mp_pool_plan_t *out) {
    size_t n1 = n ? n : 1;
    w->rest = malloc(n1 * sizeof *w->rest);
    w->sidx = malloc(n1 * sizeof *w->sidx);
    w->sub = malloc(n1 * sizeof *w->sub);
    w->sfixed = malloc(n1 * sizeof *w->sfixed);
    w->soff = malloc(n1 * sizeof *w->soff);
    w->off = malloc(n1 * sizeof *w->off);
    w->off2 = malloc(n1 * sizeof *w->off2);
    w->in = malloc(n1), w->in2 = malloc(n1);
    w->keys = malloc(n1 * sizeof *w->keys);
    w->note = calloc(k, sizeof *w->note);
    out->pool = calloc(n1, sizeof *out->pool);
    out->offset = calloc(n1, sizeof *out->offset);
    out->footprint = calloc(k, sizeof *out->footprint);
    if (!w->rest || !w->sidx || !w->sub || !w->sfixed || !w->soff || !w->off || !w->off2 ||
        !w->in || !w->in2 || !w->keys || !w->note || !out->pool || !out->offset || !out->footprint)
        return MP__NOMEM();
    return MP_OK;
}

static void pw_free(pw *w) {
    mp__itree_free(&w->tree);
    mp__fit_scratch_free(&w->fit);
    free(w->rest), free(w->sidx), free(w->sub), free(w->sfixed), free(w->soff);
    free(w->off), free(w->off2), free(w->in), free(w->in2), free(w->keys), free(w->note);
}

mp_status mp_plan_pools_opts(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                             const mp_pool_opts_t *opts, mp_pool_plan_t *out,
                             mp_exact_report_t *report) {
    if (!out) return mp__err(MP_EINVAL, "mp_plan_pools: NULL plan");
    memset(out, 0, sizeof *out);
    if (!pools || k == 0) return mp__err(MP_EINVAL, "mp_plan_pools: no pools");
    mp_pool_opts_t none = {0};
    const mp_pool_opts_t *o = opts ? opts : &none;
    const mp__strategy *st;
    mp_status s = mp__offset_strategy(o->strategy ? o->strategy : "auto", "plan pools", &st);
    if (s == MP_OK) s = check_opts(o, st);
    if (s == MP_OK) s = mp_problem_validate(b, n);
    if (s == MP_OK) s = mp__fixed_check_pools(b, n, o->fixed, o->fixed_pool, pools, k, NULL, NULL);
    mp_buffer_t *nb = NULL;
    if (s == MP_OK) s = mp__normalize(b, n, &nb);
    if (s != MP_OK) return s;
    pw w = {.b = nb, .n = n, .st = st, .fixed = o->fixed, .fpool = o->fixed_pool, .o = o, .k = k};
    if (o->time_limit > 0) w.deadline = mp__xnow() + o->time_limit;
    s = pw_alloc(&w, n, k, out);
    if (s == MP_OK) s = mp__itree_init(&w.tree, nb, n);
    if (s == MP_OK) {
        out->n = n, out->n_pools = k, out->strategy = st->info.name;
        s = pools_run(&w, pools, out, report);
    }
    pw_free(&w);
    free(nb);
    if (s != MP_OK) mp_pool_plan_free(out);
#ifdef MP_DEBUG
    if (s == MP_OK) {
        mp_status c = mp_pool_plan_check_fixed(b, n, pools, k, o->fixed, o->fixed_pool, out);
        MP__ASSERT(c == MP_OK || c == MP_ENOMEM);
    }
#endif
    return s;
}

mp_status mp_plan_pools(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                        const char *strategy, mp_pool_plan_t *out) {
    if (!strategy) {
        if (out) memset(out, 0, sizeof *out);
        return mp__err(MP_ENOTFOUND, "unknown strategy '(null)' (see 'memplan strategies')");
    }
    mp_pool_opts_t o = {.strategy = strategy};
    return mp_plan_pools_opts(b, n, pools, k, &o, out, NULL);
}
mp_status mp_pool_plan_check(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                             const mp_pool_plan_t *p) {
    if (!p || p->n != n || p->n_pools != k || (n && (!p->pool || !p->offset)))
        return mp__err(MP_ECONFLICT, "pool plan does not match the problem");
    mp_buffer_t *sb = malloc((n ? n : 1) * sizeof *sb);
    uint64_t *so = malloc((n ? n : 1) * sizeof *so);
    size_t *map = malloc((n ? n : 1) * sizeof *map);
    mp_status s = sb && so && map ? MP_OK : MP__NOMEM();
    for (size_t i = 0; s == MP_OK && i < n; i++)
        if (p->pool[i] >= k)
            s = mp__err(MP_ECONFLICT, "buffer %zu (id %llu): pool %zu of %zu", i,
                        (unsigned long long)b[i].id, p->pool[i], k);
    for (size_t j = 0; s == MP_OK && j < k; j++) {
        size_t m = 0;
        uint64_t fp = 0;
        for (size_t i = 0; i < n; i++)
            if (p->pool[i] == j) {
                sb[m] = b[i], so[m] = p->offset[i], map[m++] = i;
                fp = mp__max64(fp, p->offset[i] + mp_buffer_aligned_size(&b[i]));
            }
        mp_plan_t sp = {.n = m, .offset = so, .footprint = fp};
        mp_check_report_t r;
        const char *name = pools[j].name ? pools[j].name : "?";
        if ((s = mp_plan_check(sb, m, &sp, &r)) == MP_ECONFLICT) {
            size_t x = map[r.first_bad];
            s = mp__err(MP_ECONFLICT, "pool '%s': buffer %zu (id %llu)%s", name, x,
                        (unsigned long long)b[x].id,
                        r.second_bad == (size_t)-1 ? " is misplaced" : " overlaps another buffer live at the same time");
        } else if (s == MP_OK && pools[j].capacity && fp > pools[j].capacity) {
            s = mp__err(MP_ECONFLICT, "pool '%s': footprint %llu exceeds its capacity %llu", name,
                        (unsigned long long)fp, (unsigned long long)pools[j].capacity);
        } else if (s == MP_OK && p->footprint && p->footprint[j] != fp) {
            s = mp__err(MP_ECONFLICT, "pool '%s': footprint %llu recorded, %llu recomputed", name,
                        (unsigned long long)p->footprint[j], (unsigned long long)fp);
        }
    }
    free(sb), free(so), free(map);
    return s;
}

mp_status mp_pool_plan_check_fixed(const mp_buffer_t *b, size_t n, const mp_pool_t *pools,
                                   size_t k, const uint64_t *fixed, const size_t *fixed_pool,
                                   const mp_pool_plan_t *p) {
    mp_status s = mp_pool_plan_check(b, n, pools, k, p);
    for (size_t i = 0; s == MP_OK && fixed && i < n; i++) {
        size_t j = fixed_pool ? fixed_pool[i] : 0;
        if (fixed[i] == MP_NOT_FIXED || (p->pool[i] == j && p->offset[i] == fixed[i])) continue;
        const char *at = pools[p->pool[i]].name, *want = j < k ? pools[j].name : NULL;
        s = mp__err(MP_ECONFLICT, "buffer %zu (id %llu) is at %llu in pool '%s', not at its fixed offset %llu in pool '%s'",
                    i, (unsigned long long)b[i].id, (unsigned long long)p->offset[i],
                    at ? at : "?", (unsigned long long)fixed[i], want ? want : "?");
    }
    return s;
}

mp_status mp_pool_plan_write_csv(const char *path, const mp_buffer_t *b, size_t n,
                                 const mp_pool_t *pools, const mp_pool_plan_t *p) {
    if (!p || p->n != n) return mp__err(MP_EINVAL, "pool plan does not match the problem");
    mp__outfile o;
    mp_status s = mp__out_open(&o, path);
    if (s != MP_OK) return s;
    fprintf(o.f, "id,offset,size,pool\n");
    for (size_t i = 0; i < n; i++) {
        const char *name = pools[p->pool[i]].name;
        fprintf(o.f, "%llu,%llu,%llu,", (unsigned long long)b[i].id,
                (unsigned long long)p->offset[i], (unsigned long long)mp_buffer_aligned_size(&b[i]));
        if (name) fputs(name, o.f);
        else fprintf(o.f, "%zu", p->pool[i]);
        fputc('\n', o.f);
    }
    return mp__out_close(&o, true);
}
