/* arena.c -- the replay arena: profile-guided allocation at run time
 * (sekiyama2018 sec. 4.2-4.3, zhang2019 sec. V).
 *
 * Learning.  Every request (except those below min_block or between
 * interrupt and resume) goes to the backing allocator and is recorded in a
 * trace under its address; frees of traced blocks are recorded too.  When
 * the trace has grown by a quarter since the last attempt (at least 64
 * events) mp_period_detect runs on it (warmup_iterations repeats needed):
 * O(n) per attempt, O(1) amortized per event.  A period p found on a trace
 * of n events, with its steady state from event s, is accepted when
 *   (a) the steady state holds warmup_iterations + 1 whole iterations: it
 *       predicted one more iteration than it took to find it;
 *   (b) n - s >= max(2s, s + p): the steady state (with its partial last
 *       iteration) spans twice everything before it, and a period more;
 *   (c) it still repeats: the events after its last whole iteration are
 *       at most p + max_edits.
 * A run of identical blocks inside one step (a ResNet stage, the layers
 * of a transformer) repeats too and can pass (a); it fails (b) in every
 * step after the first, where the whole first step lies before it, and in
 * the first step unless it is twice as long as everything traced before
 * it (the weights' allocations included); once the run has ended it fails
 * (c).  A period found before (a)-(c) hold schedules the next attempt
 * where they can first hold (or n/8 events later, if that is sooner).
 * Once warmup_iterations iterations repeat, the records of the clean
 * iteration become the slots 0..m-1 (one per allocation, in order); a slot
 * whose block outlives the iteration is marked cross and is always
 * forwarded.  The other slots are planned (mp_plan_compute, then
 * mp_plan_check), one region of the footprint is allocated, and the phase
 * is set from the allocations already seen in the partial last iteration.
 *
 * Replaying.  The request is slot s = lambda; lambda advances per request
 * and wraps at m.  It is served at base + offset[s] when all hold:
 * s is not cross; size <= the planned size of s (otherwise the new size is
 * remembered and a re-plan waits for the next boundary, lambda = 0); the
 * block of s from an earlier iteration is not live (busy slot); and
 * [offset, offset + aligned size) overlaps no live block in the region.
 * The live region blocks are disjoint, kept in an ordered set by (offset,
 * slot), so the last check looks at the predecessor and the successor of
 * offset only: O(log n).  Anything else is forwarded and counted.
 *
 * Frees: an address inside the current region is found in the ordered set
 * (O(log n)); any other address in a hash table of forwarded blocks
 * (O(1) expected), which also holds blocks left in retired regions.
 *
 * Re-planning (at a boundary, after a too-large request): the slots are
 * planned again with their largest sizes.  If the new footprint fits the
 * region, the region is kept and its live blocks stay in the ordered set,
 * so the overlap rule protects them; otherwise a new region is allocated
 * and the old one is released once its last live block is freed.
 *
 * One mutex guards the whole state; the backing callbacks run under it. */
#include "../core/internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define CROSS UINT64_MAX          /* offset of a slot never placed in the region */
#define DEFAULT_MAX_LEARN ((size_t)1 << 22)

enum { K_FORWARD = 1, K_TRACED = 2, K_RETIRED = 3 };

typedef struct bent {   /* a forwarded block (or one left in a retired region) */
    uintptr_t p;        /* 0: empty slot */
    uint64_t size;
    int kind;
} bent;

typedef struct retired {
    unsigned char *base;
    uint64_t size;
    size_t live;
} retired;

struct mp_arena_t {
    pthread_mutex_t mu;
    mp_arena_options_t opt;
    char strategy[64];
    mp_arena_state state;
    size_t interrupted;
    mp_trace_t *trace;          /* while learning */
    size_t next_check;
    /* the plan: m slots */
    size_t m, pos;
    bool replan;
    mp_buffer_t *slot;          /* first/last of the learned iteration, largest size seen */
    uint64_t *psize;            /* size the current plan gave each slot */
    uint64_t *off;              /* offset or CROSS */
    uint64_t *live_end;         /* end offset of the slot's live region block, 0: none */
    uint64_t *live_req;         /* its requested size */
    unsigned char *base;
    uint64_t region;
    mp__tset live;              /* (offset, slot) of live region blocks */
    retired *ret;
    size_t n_ret, cap_ret;
    bent *tab;                  /* forwarded blocks, open addressing */
    size_t slots, used;
    mp_arena_stats_t st;
};

/* ---- backing allocator --------------------------------------------------- */

static void *libc_alloc(void *user, uint64_t size, uint64_t align) {
    (void)user;
    void *p = NULL;
    if (size > SIZE_MAX) return NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    return posix_memalign(&p, (size_t)align, (size_t)size) == 0 ? p : NULL;
}

static void libc_free(void *user, void *p) {
    (void)user;
    free(p);
}

static void *back_alloc(mp_arena_t *a, uint64_t size) {
    void *p = a->opt.backing_alloc(a->opt.backing_user, size, a->opt.align);
    if (p) {
        a->st.backing_bytes += size;
        a->st.peak_backing_bytes = mp__max64(a->st.peak_backing_bytes, a->st.backing_bytes);
    }
    return p;
}

static void back_free(mp_arena_t *a, void *p, uint64_t size) {
    a->opt.backing_free(a->opt.backing_user, p);
    a->st.backing_bytes -= size;
}

/* ---- the table of forwarded blocks (linear probing, backward shift) ------ */

static size_t hslot(uintptr_t p, size_t mask) {
    uint64_t h = (uint64_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return (size_t)h & mask;
}

static size_t tab_find(const mp_arena_t *a, uintptr_t p) {
    size_t mask = a->slots - 1, i = hslot(p, mask);
    while (a->tab[i].p && a->tab[i].p != p) i = (i + 1) & mask;
    return i;
}

/* Makes room for extra more entries (the table stays at most half full). */
static mp_status tab_reserve(mp_arena_t *a, size_t extra) {
    size_t ns = a->slots ? a->slots : 64;
    while (2 * (a->used + extra) > ns) ns *= 2;
    if (ns == a->slots) return MP_OK;
    bent *t = calloc(ns, sizeof *t);
    if (!t) return MP__NOMEM();
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p) {
            size_t j = hslot(a->tab[i].p, ns - 1);
            while (t[j].p) j = (j + 1) & (ns - 1);
            t[j] = a->tab[i];
        }
    free(a->tab);
    a->tab = t;
    a->slots = ns;
    return MP_OK;
}

static mp_status tab_put(mp_arena_t *a, uintptr_t p, uint64_t size, int kind) {
    if (tab_reserve(a, 1) != MP_OK) return MP__NOMEM();
    size_t i = tab_find(a, p);
    a->tab[i] = (bent){p, size, kind};
    a->used++;
    return MP_OK;
}

static void tab_erase(mp_arena_t *a, size_t i) {
    size_t mask = a->slots - 1, j = i;
    a->tab[i].p = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!a->tab[j].p) break;
        size_t home = hslot(a->tab[j].p, mask);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            a->tab[i] = a->tab[j];
            a->tab[j].p = 0;
            i = j;
        }
    }
    a->used--;
}

/* ---- live accounting ------------------------------------------------------ */

static void live_add(mp_arena_t *a, uint64_t size) {
    a->st.live_blocks++;
    a->st.live_bytes += size;
    a->st.peak_live_bytes = mp__max64(a->st.peak_live_bytes, a->st.live_bytes);
}

static void live_sub(mp_arena_t *a, uint64_t size) {
    a->st.live_blocks--;
    a->st.live_bytes -= size;
}

/* Forwards a request; kind K_TRACED records it in the trace. */
static mp_status forward(mp_arena_t *a, uint64_t size, int kind, void **out) {
    void *p = back_alloc(a, size);
    if (!p) return mp__err(MP_ENOMEM, "backing allocator failed for %llu bytes",
                           (unsigned long long)size);
    if (tab_put(a, (uintptr_t)p, size, kind) != MP_OK) {
        back_free(a, p, size);
        return MP__NOMEM();
    }
    live_add(a, size);
    *out = p;
    return MP_OK;
}

/* ---- planning ------------------------------------------------------------- */

/* Moves the live blocks of the current region to a retired region. */
static mp_status retire_region(mp_arena_t *a) {
    if (a->live.count == 0) {
        if (a->base) back_free(a, a->base, a->region);
    } else {
        if (mp__grow((void **)&a->ret, &a->cap_ret, a->n_ret + 1, sizeof *a->ret) != MP_OK)
            return MP__NOMEM();
        /* table room first, so that the move below cannot fail half-way */
        if (tab_reserve(a, a->live.count) != MP_OK) return MP__NOMEM();
        uint64_t o, s;
        bool more = mp__tset_ceil(&a->live, 0, 0, &o, &s);
        while (more) {
            (void)tab_put(a, (uintptr_t)(a->base + o), a->live_req[s], K_RETIRED);
            a->live_end[s] = 0;
            more = mp__tset_next(&a->live, o, s, &o, &s);
        }
        a->ret[a->n_ret++] = (retired){a->base, a->region, a->live.count};
        a->st.retired_regions = a->n_ret;
        mp__tset_free(&a->live);
    }
    a->base = NULL;
    a->region = 0;
    return MP_OK;
}

/* Plans the non-cross slots with their largest sizes and makes sure a
 * region of the footprint exists.  On failure the old plan stays. */
static mp_status plan(mp_arena_t *a) {
    size_t nb = 0;
    for (size_t i = 0; i < a->m; i++) nb += a->off[i] != CROSS;
    mp_buffer_t *b = malloc((nb ? nb : 1) * sizeof *b);
    if (!b) return MP__NOMEM();
    nb = 0;
    for (size_t i = 0; i < a->m; i++)
        if (a->off[i] != CROSS) {
            b[nb] = a->slot[i];
            b[nb].id = i;
            b[nb++].align = a->opt.align;
        }
    mp_plan_t p = {0};
    mp_bounds_t bd = {0};
    mp_status st = MP_OK;
    if (nb) {
        st = mp_plan_compute(b, nb, a->strategy, &p);
        if (st == MP_OK) st = mp_plan_check(b, nb, &p, NULL);
        if (st == MP_OK) st = mp_bounds_compute(b, nb, &bd);
    }
    if (st == MP_OK && p.footprint > a->region) {
        st = retire_region(a);
        if (st == MP_OK) {
            a->base = back_alloc(a, p.footprint);
            if (a->base) a->region = p.footprint;
            else st = mp__err(MP_ENOMEM, "backing allocator failed for the region");
        }
    }
    if (st == MP_OK) {
        for (size_t j = 0; j < nb; j++) {
            a->off[b[j].id] = p.offset[j];
            a->psize[b[j].id] = b[j].size;
        }
        a->st.planned_footprint = p.footprint;
        a->st.lower_bound = bd.offsets;
        a->st.region_bytes = a->region;
        a->st.planned_blocks = nb;
        a->st.cross_blocks = a->m - nb;
    }
    mp_plan_free(&p);
    free(b);
    return st;
}

/* Gives up learning: forward everything from now on. */
static void passthrough(mp_arena_t *a) {
    mp_trace_free(a->trace);
    a->trace = NULL;
    a->state = MP_ARENA_PASSTHROUGH;
}

/* Runs period detection; on success sets up the slots and the plan. */
static void try_detect(mp_arena_t *a) {
    size_t n;
    const mp_event_t *ev = mp_trace_events(a->trace, &n);
    a->next_check = n + (n / 4 > 64 ? n / 4 : 64);
    a->st.detections++;
    mp_period_params_t pp = {a->opt.max_edits, a->opt.warmup_iterations};
    mp_period_t per;
    if (mp_period_detect(a->trace, &pp, &per) != MP_OK) {
        passthrough(a);
        return;
    }
    if (!per.found) return;
    /* Rules (a)-(c) of the header.  (b) is what rejects an inner repeat:
     * its steady state is short next to what precedes it. */
    size_t p = per.period, s = per.start[0];
    size_t w = a->opt.warmup_iterations < 2 ? 2 : a->opt.warmup_iterations;
    size_t span = mp__max64(3 * s, 2 * s + p);   /* (b): n >= span */
    if (per.iterations < w + 1 || n < span || per.tail > p + a->opt.max_edits) {
        /* try again where (a) and (b) can first hold (iterations may be a
         * few events longer than p: then at the usual pace), at most n/8
         * events later */
        size_t ready = mp__max64(s + (w + 1) * p, span), pace = n + mp__max64(64, n / 8);
        a->next_check = ready > n ? mp__min64(ready, pace) : pace;
        mp_period_free(&per);
        return;
    }
    size_t from = per.start[per.clean], to = per.start[per.clean + 1], m;
    mp_buffer_t *rec = NULL;
    mp_status st = mp_trace_records(a->trace, from, to, &rec, &m);
    if (st != MP_OK || m == 0) {
        free(rec);
        mp_period_free(&per);
        if (st != MP_OK) passthrough(a);
        return;
    }
    a->slot = rec;
    a->psize = calloc(m, sizeof *a->psize);
    a->off = calloc(m, sizeof *a->off);
    a->live_end = calloc(m, sizeof *a->live_end);
    a->live_req = calloc(m, sizeof *a->live_req);
    a->m = m;
    if (!a->psize || !a->off || !a->live_end || !a->live_req) {
        mp_period_free(&per);
        passthrough(a);
        return;
    }
    size_t r = 0, tail = 0;
    for (size_t i = from; i < to; i++)
        if (ev[i].kind == MP_EV_ALLOC) {
            if (ev[i].end == MP_TRACE_NEVER || ev[i].end >= to) a->off[r] = CROSS;
            r++;
        }
    for (size_t i = per.start[per.iterations]; i < n; i++) tail += ev[i].kind == MP_EV_ALLOC;
    a->st.period_events = per.period;
    mp_period_free(&per);
    mp_trace_stats_t ts;
    if (mp_trace_stats(a->trace, &ts) == MP_OK) a->st.learned_peak_bytes = ts.peak_bytes;
    if (plan(a) != MP_OK) {
        passthrough(a);
        return;
    }
    /* traced blocks are ordinary forwarded blocks from now on */
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p && a->tab[i].kind == K_TRACED) a->tab[i].kind = K_FORWARD;
    mp_trace_free(a->trace);
    a->trace = NULL;
    a->pos = tail % m;
    a->st.iteration_length = m;
    a->state = MP_ARENA_REPLAYING;
}

/* ---- public entry points --------------------------------------------------- */

void mp_arena_options_default(mp_arena_options_t *opt) {
    memset(opt, 0, sizeof *opt);
    opt->align = 64;
    opt->strategy = "auto";
    opt->warmup_iterations = 2;
    opt->max_edits = 2;
    opt->max_learn_events = DEFAULT_MAX_LEARN;
}

const char *mp_arena_state_name(mp_arena_state s) {
    switch (s) {
    case MP_ARENA_LEARNING: return "learning";
    case MP_ARENA_REPLAYING: return "replaying";
    case MP_ARENA_PASSTHROUGH: return "passthrough";
    }
    return "unknown";
}

mp_status mp_arena_create(const mp_arena_options_t *opt, mp_arena_t **out) {
    *out = NULL;
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    if (opt) o = *opt;
    if (!o.strategy) o.strategy = "auto";
    if (o.align == 0) o.align = 64;
    if (o.align & (o.align - 1))
        return mp__err(MP_EINVAL, "arena alignment %llu is not a power of two",
                       (unsigned long long)o.align);
    if (strlen(o.strategy) >= 64 || !mp_strategy_find(o.strategy))
        return mp__err(MP_ENOTFOUND, "unknown strategy '%s'", o.strategy);
    if (!o.backing_alloc || !o.backing_free) {
        o.backing_alloc = libc_alloc;
        o.backing_free = libc_free;
    }
    if (!o.max_learn_events) o.max_learn_events = DEFAULT_MAX_LEARN;
    mp_arena_t *a = calloc(1, sizeof *a);
    if (!a) return MP__NOMEM();
    a->opt = o;
    strcpy(a->strategy, o.strategy);
    a->opt.strategy = a->strategy;
    a->next_check = 64;
    mp__tset_init(&a->live);
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return MP__NOMEM();
    }
    if (mp_trace_create(&a->trace) != MP_OK) {
        pthread_mutex_destroy(&a->mu);
        free(a);
        return MP__NOMEM();
    }
    *out = a;
    return MP_OK;
}

/* Serves a request while replaying: the region, or a counted fallback. */
static mp_status replay(mp_arena_t *a, uint64_t size, void **out) {
    if (a->pos == 0 && a->replan) {   /* an iteration boundary */
        if (plan(a) == MP_OK) {
            a->replan = false;
            a->st.reoptimizations++;
        }
    }
    size_t s = a->pos;
    a->pos = (a->pos + 1) % a->m;
    if (a->pos == 0) a->st.iterations++;
    uint64_t *why;
    uint64_t o = a->off[s], ext = mp__align_up(size, a->opt.align);
    if (o == CROSS) {
        why = &a->st.fb_cross;
    } else if (size > a->psize[s]) {
        a->slot[s].size = mp__max64(a->slot[s].size, size);
        a->replan = true;
        why = &a->st.fb_too_large;
    } else if (!a->base || a->live_end[s]) {
        why = &a->st.fb_unforeseen;
    } else {
        uint64_t po, ps, no, ns;
        bool hit = o + ext > a->region;
        if (!hit && mp__tset_floor(&a->live, o, UINT64_MAX, &po, &ps)) hit = a->live_end[ps] > o;
        if (!hit && mp__tset_ceil(&a->live, o, 0, &no, &ns)) hit = no < o + ext;
        if (!hit) {
            if (mp__tset_insert(&a->live, o, s) != MP_OK) return MP__NOMEM();
            a->live_end[s] = o + ext;
            a->live_req[s] = size;
            live_add(a, size);
            a->st.served_arena++;
            *out = a->base + o;
            return MP_OK;
        }
        why = &a->st.fb_overlap;
    }
    mp_status st = forward(a, size, K_FORWARD, out);
    if (st == MP_OK) (*why)++;
    return st;
}

mp_status mp_arena_alloc(mp_arena_t *a, uint64_t size, void **out) {
    *out = NULL;
    if (size == 0) return mp__err(MP_EINVAL, "arena request of 0 bytes");
    if (size > UINT64_MAX - a->opt.align)
        return mp__err(MP_EOVERFLOW, "arena request of %llu bytes", (unsigned long long)size);
    pthread_mutex_lock(&a->mu);
    a->st.requests++;
    mp_status st;
    if (size < a->opt.min_block) {
        if ((st = forward(a, size, K_FORWARD, out)) == MP_OK) a->st.fb_small++;
    } else if (a->interrupted) {
        if ((st = forward(a, size, K_FORWARD, out)) == MP_OK) a->st.fb_interrupted++;
    } else if (a->state == MP_ARENA_REPLAYING) {
        st = replay(a, size, out);
    } else if (a->state == MP_ARENA_PASSTHROUGH) {
        if ((st = forward(a, size, K_FORWARD, out)) == MP_OK) a->st.fb_passthrough++;
    } else {
        if ((st = forward(a, size, K_TRACED, out)) == MP_OK) {
            a->st.served_learning++;
            if (mp_trace_record_alloc(a->trace, (uintptr_t)*out, size, MP_TRACE_NO_NS) != MP_OK) {
                passthrough(a);
            } else {
                size_t n;
                (void)mp_trace_events(a->trace, &n);
                if (n >= a->opt.max_learn_events) passthrough(a);
                else if (n >= a->next_check) try_detect(a);
            }
        }
    }
    pthread_mutex_unlock(&a->mu);
    return st;
}

/* Frees a pointer in the current region; false if it is not a live block start. */
static bool free_region(mp_arena_t *a, uintptr_t p) {
    uint64_t o = (uint64_t)(p - (uintptr_t)a->base), fo, s;
    if (!mp__tset_floor(&a->live, o, UINT64_MAX, &fo, &s) || fo != o) return false;
    mp__tset_erase(&a->live, o, s);
    a->live_end[s] = 0;
    live_sub(a, a->live_req[s]);
    return true;
}

/* Frees the table entry i (a forwarded block or one in a retired region). */
static void free_entry(mp_arena_t *a, size_t i) {
    bent e = a->tab[i];
    tab_erase(a, i);
    live_sub(a, e.size);
    if (e.kind == K_TRACED && a->trace)
        (void)mp_trace_record_free(a->trace, e.p, MP_TRACE_NO_NS);
    if (e.kind != K_RETIRED) {
        back_free(a, (void *)e.p, e.size);
        return;
    }
    for (size_t r = 0; r < a->n_ret; r++) {
        uintptr_t b = (uintptr_t)a->ret[r].base;
        if (e.p >= b && e.p - b < a->ret[r].size) {
            if (--a->ret[r].live == 0) {
                back_free(a, a->ret[r].base, a->ret[r].size);
                a->ret[r] = a->ret[--a->n_ret];
                a->st.retired_regions = a->n_ret;
            }
            return;
        }
    }
}

mp_status mp_arena_free(mp_arena_t *a, void *ptr) {
    if (!ptr) return MP_OK;
    uintptr_t p = (uintptr_t)ptr;
    mp_status st = MP_OK;
    pthread_mutex_lock(&a->mu);
    if (a->base && p >= (uintptr_t)a->base && p - (uintptr_t)a->base < a->region) {
        if (!free_region(a, p)) st = mp__err(MP_EINVAL, "free of %p: no live arena block", ptr);
    } else {
        size_t i = a->slots ? tab_find(a, p) : 0;
        if (!a->slots || !a->tab[i].p) st = mp__err(MP_EINVAL, "free of %p: not from this arena", ptr);
        else free_entry(a, i);
    }
    if (st == MP_OK) a->st.frees++;
    pthread_mutex_unlock(&a->mu);
    return st;
}

void mp_arena_interrupt(mp_arena_t *a) {
    pthread_mutex_lock(&a->mu);
    a->interrupted++;
    pthread_mutex_unlock(&a->mu);
}

mp_status mp_arena_resume(mp_arena_t *a) {
    mp_status st = MP_OK;
    pthread_mutex_lock(&a->mu);
    if (a->interrupted) a->interrupted--;
    else st = mp__err(MP_EINVAL, "mp_arena_resume without mp_arena_interrupt");
    pthread_mutex_unlock(&a->mu);
    return st;
}

void mp_arena_mark_iteration(mp_arena_t *a) {
    pthread_mutex_lock(&a->mu);
    if (a->state == MP_ARENA_REPLAYING && a->pos != 0) {
        a->pos = 0;
        a->st.iterations++;
    }
    pthread_mutex_unlock(&a->mu);
}

/* Releases every live block; counts them as released. */
static void release_all(mp_arena_t *a) {
    a->st.released_blocks += a->st.live_blocks;
    a->st.released_bytes += a->st.live_bytes;
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p && a->tab[i].kind != K_RETIRED)
            back_free(a, (void *)a->tab[i].p, a->tab[i].size);
    memset(a->tab, 0, a->slots * sizeof *a->tab);
    a->used = 0;
    for (size_t r = 0; r < a->n_ret; r++) back_free(a, a->ret[r].base, a->ret[r].size);
    a->n_ret = 0;
    a->st.retired_regions = 0;
    mp__tset_free(&a->live);
    if (a->live_end) memset(a->live_end, 0, a->m * sizeof *a->live_end);
    a->st.live_blocks = 0;
    a->st.live_bytes = 0;
    if (a->trace) {   /* the trace's live handles are gone: start learning afresh */
        mp_trace_free(a->trace);
        a->trace = NULL;
        a->next_check = 64;
        if (mp_trace_create(&a->trace) != MP_OK) a->state = MP_ARENA_PASSTHROUGH;
    }
    a->pos = 0;
}

void mp_arena_free_all(mp_arena_t *a) {
    pthread_mutex_lock(&a->mu);
    release_all(a);
    pthread_mutex_unlock(&a->mu);
}

void mp_arena_stats(mp_arena_t *a, mp_arena_stats_t *out) {
    pthread_mutex_lock(&a->mu);
    *out = a->st;
    out->state = a->state;
    out->replan_pending = a->replan;
    out->position = a->pos;
    pthread_mutex_unlock(&a->mu);
}

void mp_arena_destroy(mp_arena_t *a, mp_arena_stats_t *final) {
    if (!a) return;
    pthread_mutex_lock(&a->mu);
    release_all(a);
    if (a->base) back_free(a, a->base, a->region);
    a->base = NULL;
    a->region = 0;
    pthread_mutex_unlock(&a->mu);
    if (final) {
        *final = a->st;
        final->state = a->state;
        final->replan_pending = a->replan;
        final->position = a->pos;
    }
    mp_trace_free(a->trace);
    free(a->tab);
    free(a->ret);
    free(a->slot);
    free(a->psize);
    free(a->off);
    free(a->live_end);
    free(a->live_req);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
