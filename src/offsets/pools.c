/* pools.c -- several memory pools of limited size (include/memplan_fixed.h).
 *
 * A compiler for small devices has, say, 256 KiB of fast on-chip memory and
 * plenty of slow memory; it wants as many buffers as possible in the fast
 * pool and the rest in the next, as TVM's USMP does.  Pools are filled in
 * order.  For each pool, the strategy plans every buffer still unassigned;
 * if that plan fits the pool's capacity the pool takes them all.  Otherwise
 * the pool keeps the buffers that end within the capacity in that plan (a
 * subset of a valid plan is valid) and then, largest first, every other
 * buffer whose lowest free offset among those kept (first fit) still ends
 * within the capacity; the rest go on to the next pool.  A pool of capacity
 * 0 is unlimited; buffers left after the last pool are an error.
 *
 * Cost per pool: one run of the strategy, plus first fit (an interval query
 * and a sort of the k buffers live with it) per buffer not kept at once. */
#include "../core/internal.h"
#include "../strategies/strategies.h"
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

/* The work of one call on the normalized problem b. */
typedef struct pw {
    const mp_buffer_t *b;
    size_t n;
    const mp__strategy *st;        /* NULL: auto */
    size_t *rest, m;               /* unassigned buffers */
    mp_buffer_t *sub;
    mp__itree tree;
    mp__fit_scratch fit;
    mp__key *keys;
} pw;

/* Plans the m unassigned buffers alone into off[] (by buffer index). */
static mp_status plan_rest(pw *w, uint64_t *off) {
    for (size_t k = 0; k < w->m; k++) w->sub[k] = w->b[w->rest[k]];
    mp_plan_t p;
    mp_auto_report_t ar;
    mp_status s = w->st ? mp__run_strategy(w->st, w->sub, w->m, &p) : mp__auto(w->sub, w->m, &p, &ar);
    if (s != MP_OK) return s;
    for (size_t k = 0; k < w->m; k++) off[w->rest[k]] = p.offset[k];
    mp_plan_free(&p);
    return MP_OK;
}

/* Fills pool j of capacity cap (0: unlimited) from the unassigned buffers. */
static mp_status fill(pw *w, size_t j, uint64_t cap, mp_pool_plan_t *out) {
    mp_status s = plan_rest(w, out->offset);
    if (s != MP_OK) return s;
    for (size_t i = 0; i < w->n; i++) mp__itree_set(&w->tree, i, false);
    size_t nk = 0, left = 0;
    for (size_t k = 0; k < w->m; k++) {
        size_t i = w->rest[k];
        uint64_t end = out->offset[i] + w->b[i].size;
        if (!cap || end <= cap) {
            out->pool[i] = j, mp__itree_set(&w->tree, i, true);
        } else {
            w->keys[nk++] = (mp__key){UINT64_MAX - w->b[i].size, w->b[i].first, i};
        }
    }
    if ((s = mp__sort_keys(w->keys, nk)) != MP_OK) return s;
    for (size_t k = 0; k < nk; k++) { /* largest first, into what room is left */
        size_t i = w->keys[k].i;
        uint64_t at;
        if ((s = mp__itree_first_fit(&w->tree, out->offset, i, &w->fit, &at)) != MP_OK) return s;
        if (at <= cap && w->b[i].size <= cap - at) {
            out->offset[i] = at, out->pool[i] = j;
            mp__itree_set(&w->tree, i, true);
        } else {
            w->rest[left++] = i;
        }
    }
    /* the kept ones are no longer in rest[]: rebuild it from the others */
    w->m = left;
    for (size_t k = 0; k < left; k++) w->keys[k] = (mp__key){w->rest[k], 0, w->rest[k]};
    if ((s = mp__sort_keys(w->keys, left)) != MP_OK) return s;
    for (size_t k = 0; k < left; k++) w->rest[k] = w->keys[k].i; /* in index order */
    return MP_OK;
}

static mp_status pools_run(pw *w, const mp_pool_t *pools, size_t k, mp_pool_plan_t *out) {
    for (size_t i = 0; i < w->n; i++) w->rest[i] = i;
    w->m = w->n;
    mp_status s = MP_OK;
    for (size_t j = 0; s == MP_OK && j < k && w->m; j++) s = fill(w, j, pools[j].capacity, out);
    if (s == MP_OK && w->m) {
        uint64_t bytes = 0;
        for (size_t q = 0; q < w->m; q++) bytes += w->b[w->rest[q]].size;
        s = mp__err(MP_EINVAL, "%zu buffers (%llu bytes, e.g. id %llu) do not fit in the pools: the last, '%s', holds %llu bytes; make the last pool unlimited",
                    w->m, (unsigned long long)bytes, (unsigned long long)w->b[w->rest[0]].id,
                    pools[k - 1].name ? pools[k - 1].name : "?",
                    (unsigned long long)pools[k - 1].capacity);
    }
    for (size_t i = 0; s == MP_OK && i < w->n; i++) {
        uint64_t end = out->offset[i] + w->b[i].size;
        out->footprint[out->pool[i]] = mp__max64(out->footprint[out->pool[i]], end);
    }
    return s;
}

mp_status mp_plan_pools(const mp_buffer_t *b, size_t n, const mp_pool_t *pools, size_t k,
                        const char *strategy, mp_pool_plan_t *out) {
    if (!out) return mp__err(MP_EINVAL, "mp_plan_pools: NULL plan");
    memset(out, 0, sizeof *out);
    if (!pools || k == 0) return mp__err(MP_EINVAL, "mp_plan_pools: no pools");
    const mp__strategy *st;
    mp_status s = mp__offset_strategy(strategy, "plan pools", &st);
    if (s != MP_OK) return s;
    mp_buffer_t *nb = NULL;
    s = mp_problem_validate(b, n);
    if (s == MP_OK) s = mp__normalize(b, n, &nb);
    size_t n1 = n ? n : 1;
    pw w = {.b = nb, .n = n, .st = st->offsets ? st : NULL};
    if (s == MP_OK) {
        w.rest = malloc(n1 * sizeof *w.rest);
        w.sub = malloc(n1 * sizeof *w.sub);
        w.keys = malloc(n1 * sizeof *w.keys);
        out->pool = calloc(n1, sizeof *out->pool);
        out->offset = calloc(n1, sizeof *out->offset);
        out->footprint = calloc(k, sizeof *out->footprint);
        if (!w.rest || !w.sub || !w.keys || !out->pool || !out->offset || !out->footprint)
            s = MP__NOMEM();
    }
    if (s == MP_OK) s = mp__itree_init(&w.tree, nb, n);
    if (s == MP_OK) {
        out->n = n, out->n_pools = k, out->strategy = st->info.name;
        s = pools_run(&w, pools, k, out);
    }
    mp__itree_free(&w.tree);
    mp__fit_scratch_free(&w.fit);
    free(w.rest), free(w.sub), free(w.keys), free(nb);
    if (s != MP_OK) mp_pool_plan_free(out);
#ifdef MP_DEBUG
    if (s == MP_OK) {
        mp_status c = mp_pool_plan_check(b, n, pools, k, out);
        MP__ASSERT(c == MP_OK || c == MP_ENOMEM);
    }
#endif
    return s;
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
