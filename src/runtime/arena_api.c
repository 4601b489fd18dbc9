/* arena_api.c -- the replay arena's entry points other than allocation
 * and free (arena.c): options, creation, interrupts, iteration marks,
 * statistics, release and destruction; and the slow side of the lock
 * whose fast side is inline in arena_internal.h (arena.c's header
 * describes the protocol). */
#define _GNU_SOURCE
#include "arena_internal.h"

#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool membarrier_ready(void) {
    static _Atomic int ok = -1;   /* -1: not asked yet */
    int v = atomic_load(&ok);
    if (v < 0) {
        long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
        v = q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
            syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
        atomic_store(&ok, v);
    }
    return v == 1;
}

bool mp__arena_lock_slow(mp_arena_t *a) {
    pthread_mutex_lock(&a->mu);
    if (!atomic_load_explicit(&a->shared, memory_order_relaxed)) {
        atomic_store(&a->shared, 1);
        (void)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0);
        while (atomic_load_explicit(&a->in_fast, memory_order_acquire)) sched_yield();
    }
    return false;
}

/* The owner's identity for mp__arena_is_owner (0 without a thread pointer). */
static uintptr_t thread_id(void) {
#ifdef MP_HAVE_TP
    return (uintptr_t)__builtin_thread_pointer();
#else
    return 0;
#endif
}

/* ---- public entry points --------------------------------------------------- */

void mp_arena_options_default(mp_arena_options_t *opt) {
    memset(opt, 0, sizeof *opt);
    opt->align = 64;
    opt->strategy = "auto";
    opt->warmup_iterations = 2;
    opt->max_edits = 2;
    opt->max_learn_events = DEFAULT_MAX_LEARN;
    opt->relearn_after = 4;
    opt->max_patterns = MAX_PATTERNS;
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
    if (!o.backing_alloc || (!o.backing_free && !o.backing_free_sized)) {
        o.backing_alloc = mp__arena_libc_alloc;
        o.backing_free = mp__arena_libc_free;
        o.backing_free_sized = NULL;
    }
    if (!o.max_learn_events) o.max_learn_events = DEFAULT_MAX_LEARN;
    if (!o.max_patterns || o.max_patterns > MAX_PATTERNS) o.max_patterns = MAX_PATTERNS;
    mp_arena_t *a = calloc(1, sizeof *a);
    if (!a) return MP__NOMEM();
    a->opt = o;
    strcpy(a->strategy, o.strategy);
    a->opt.strategy = a->strategy;
    a->next_check = 64;
    a->owner = pthread_self();
    a->owner_tp = thread_id();
    atomic_init(&a->shared, membarrier_ready() ? 0 : 1);
    atomic_init(&a->in_fast, 0);
    atomic_init(&a->env_lo, UINTPTR_MAX);
    atomic_init(&a->env_hi, 0);
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

void mp_arena_interrupt(mp_arena_t *a) {
    bool fast = mp__arena_lock(a);
    a->interrupted++;
    mp__arena_unlock_slow(a, fast);
}

mp_status mp_arena_resume(mp_arena_t *a) {
    mp_status st = MP_OK;
    bool fast = mp__arena_lock(a);
    if (a->interrupted) a->interrupted--;
    else st = mp__err(MP_EINVAL, "mp_arena_resume without mp_arena_interrupt");
    mp__arena_unlock_slow(a, fast);
    return st;
}

void mp_arena_mark_iteration(mp_arena_t *a) {
    bool fast = mp__arena_lock(a);
    if (a->state == MP_ARENA_REPLAYING && a->cur && a->pos != 0) {
        a->pos = 0;
        a->st.iterations++;
    }
    if (a->multi) mp__arena_seg_abandon(a);
    mp__arena_unlock_slow(a, fast);
}

/* Releases every live block; counts them as released. */
static void release_all(mp_arena_t *a) {
    a->st.released_blocks += a->st.live_blocks;
    a->st.released_bytes += a->st.live_bytes;
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p && !(a->tab[i].kind & K_RETIRED))
            mp__arena_back_free(a, (void *)a->tab[i].p, a->tab[i].size);
    if (a->slots) memset(a->tab, 0, a->slots * sizeof *a->tab);   /* tab is NULL before the first */
    a->used = 0;
    for (size_t r = 0; r < a->n_ret; r++) mp__arena_back_free(a, a->ret[r].base, a->ret[r].size);
    a->n_ret = 0;
    a->st.retired_regions = 0;
    for (size_t i = 0; i < a->npl; i++) {
        aplan *p = a->pl[i];
        for (size_t s = mp__aplan_next_live(p, 0); s != SIZE_MAX; s = mp__aplan_next_live(p, s + 1))
            mp__aplan_unlive(p, s);
    }
    a->n_stale = 0;
    a->st.live_blocks = 0;
    a->st.live_bytes = 0;
    a->win_reqs = a->win_miss = a->bad_windows = 0;
    a->orphans = 0;
    mp__arena_seg_abandon(a);
    if (a->trace) {   /* the trace's live handles are gone: start learning afresh */
        mp_trace_free(a->trace);
        a->trace = NULL;
        a->next_check = 64;
        if (mp_trace_create(&a->trace) != MP_OK && a->state == MP_ARENA_LEARNING)
            a->state = MP_ARENA_PASSTHROUGH;   /* relearning just stops */
    }
    a->pos = 0;
    if (a->multi) a->cur = NULL;
    mp__arena_publish(a);
}

void mp_arena_free_all(mp_arena_t *a) {
    bool fast = mp__arena_lock(a);
    release_all(a);
    mp__arena_unlock_slow(a, fast);
}

static void snapshot(const mp_arena_t *a, mp_arena_stats_t *out) {
    *out = a->st;
    out->state = a->state;
    out->replan_pending = a->cur && a->cur->replan;
    out->position = a->pos;
    out->patterns = a->npl;
}

void mp_arena_stats(mp_arena_t *a, mp_arena_stats_t *out) {
    bool fast = mp__arena_lock(a);
    snapshot(a, out);
    mp__arena_unlock_slow(a, fast);
}

void mp_arena_destroy(mp_arena_t *a, mp_arena_stats_t *final) {
    if (!a) return;
    bool fast = mp__arena_lock(a);
    release_all(a);
    if (a->base) mp__arena_back_free(a, a->base, a->region);
    a->base = NULL;
    a->region = 0;
    mp__arena_unlock_slow(a, fast);
    if (final) snapshot(a, final);
    mp_trace_free(a->trace);
    mp__arena_drop_all(a);
    free(a->tab);
    free(a->ret);
    free(a->stale);
    pthread_mutex_destroy(&a->mu);
    free(a);
}
