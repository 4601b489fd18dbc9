/* why.c -- why the arena is not replaying at exit, for the summary and the
 * stats file of libmemplan-preload.so (docs/preload.md, "The summary").
 *
 * While the arena learns it holds the trace of the big requests it has
 * forwarded (src/runtime/arena.c), so this file reads the arena's private
 * state (arena_internal.h), under the arena's lock, at exit only.  Two
 * questions are asked of that trace:
 *
 * 1. Does period detection find a period in it now?  Then the loop repeats
 *    but the arena has not confirmed it yet (docs/arena.md, Confirmation):
 *    too few iterations, or a warm-up too long next to them.
 * 2. If not, what does the stream look like?  It is cut into candidate
 *    iterations where the live traced bytes fall back to their low level:
 *    the least live bytes that frees in the last three quarters of the
 *    trace fall to at least twice (between two requests of a service, two
 *    steps of a training loop, only the weights stay; the teardown's frees
 *    fall lower, but each level once).  Each candidate's signature hashes the kinds and sizes
 *    of its events.  The number of distinct signatures says how many
 *    different iterations the program runs (a service with four batch
 *    sizes: 4), and the longest run of equal consecutive signatures how
 *    close it came to a repeat the arena could take.
 * O(n log n) for n traced events (the signatures are sorted), at exit. */
#include "preload.h"

#include "../src/runtime/arena_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t after(uint64_t live, const mp_event_t *e) {
    if (e->kind == MP_EV_ALLOC) return live + e->size;
    return e->kind == MP_EV_FREE ? live - e->size : live;
}

static int u64_cmp(const void *x, const void *y) {
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return a < b ? -1 : a > b;
}

/* The low level: the least live bytes that two frees from event n/4 on
 * fall to (one fall, such as the teardown's last free, is no level);
 * UINT64_MAX if none.  tmp has room for n/2 values. */
static uint64_t low_level(const mp_event_t *ev, size_t n, uint64_t *tmp) {
    uint64_t live = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        live = after(live, &ev[i]);
        if (i >= n / 4 && ev[i].kind == MP_EV_FREE) tmp[k++] = live;
    }
    qsort(tmp, k, sizeof *tmp, u64_cmp);
    for (size_t i = 1; i < k; i++)
        if (tmp[i] == tmp[i - 1]) return tmp[i];
    return UINT64_MAX;
}

typedef struct cands {
    uint64_t *sig;
    size_t *len;
    size_t n;
} cands;

/* The candidate iterations: the stretches between two consecutive falls of
 * the live bytes to the low level (before the first: the warm-up). */
static int cut(const mp_event_t *ev, size_t n, cands *c) {
    c->sig = malloc((n / 2 + 1) * sizeof *c->sig);
    c->len = malloc((n / 2 + 1) * sizeof *c->len);
    c->n = 0;
    if (!c->sig || !c->len) return 0;
    uint64_t low = low_level(ev, n, c->sig), live = 0, h = 0;
    size_t start = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        live = after(live, &ev[i]);
        h = mp__mix64(h ^ mp__mix64(ev[i].size * 4 + (uint64_t)ev[i].kind));
        if (ev[i].kind != MP_EV_FREE || live != low) continue;
        if (start != SIZE_MAX) {   /* one per free: at most n/2 of them */
            c->sig[c->n] = h;
            c->len[c->n++] = i + 1 - start;
        }
        start = i + 1;
        h = 0;
    }
    return 1;
}

/* Distinct signatures and the longest run of equal consecutive ones. */
static void tally(cands *c, mpp_why *w) {
    w->candidates = c->n;
    for (size_t i = 0, run = 0; i < c->n; i++) {
        run = i && c->sig[i] == c->sig[i - 1] ? run + 1 : 1;
        if (run > w->longest) w->longest = run, w->longest_events = c->len[i];
    }
    qsort(c->sig, c->n, sizeof *c->sig, u64_cmp);
    for (size_t i = 0; i < c->n; i++) w->distinct += !i || c->sig[i] != c->sig[i - 1];
}

/* Both questions of the header on the arena's trace (its lock held). */
static void ask(mp_arena_t *a, mpp_why *w) {
    size_t n;
    const mp_event_t *ev = mp_trace_events(a->trace, &n);
    w->events = n;
    mp_period_params_t pp = {a->opt.max_edits, a->opt.warmup_iterations};
    mp_period_t pr;
    if (mp_period_detect(a->trace, &pp, &pr) == MP_OK && pr.found) {
        w->period = pr.period;
        w->iterations = pr.iterations;
        w->prefix = pr.prefix;
    }
    mp_period_free(&pr);
    cands c = {0};
    if (!w->period && cut(ev, n, &c)) tally(&c, w);
    else if (!w->period) w->failed = 1;
    free(c.sig);
    free(c.len);
}

void mpp__why_compute(mp_arena_t *a, mpp_why *w) {
    memset(w, 0, sizeof *w);
    bool fast = mp__arena_lock(a);
    w->state = a->state;
    w->max_learn = a->opt.max_learn_events;
    w->warmup = a->opt.warmup_iterations < 2 ? 2 : a->opt.warmup_iterations;
    if (a->state == MP_ARENA_LEARNING && a->trace) ask(a, w);
    mp__arena_unlock(a, fast);
}

void mpp__why_text(const mpp_why *w, char *buf, size_t cap) {
    buf[0] = 0;
    if (w->state == MP_ARENA_PASSTHROUGH)
        snprintf(buf, cap, "not replaying: the arena gave up learning (no period within %zu "
                 "traced events, or out of memory) and forwards everything", w->max_learn);
    else if (w->state != MP_ARENA_LEARNING || w->failed)
        return;
    else if (w->period)
        snprintf(buf, cap, "not replaying yet: a period of %zu events repeats %zu times from "
                 "event %zu, not confirmed yet (docs/arena.md, Confirmation)",
                 w->period, w->iterations, w->prefix);
    else if (!w->candidates)
        snprintf(buf, cap, "not replaying: no period in %zu traced events, and the live bytes "
                 "never fall back to a low point twice (no candidate iterations)", w->events);
    else
        snprintf(buf, cap, "not replaying: no period in %zu traced events; %zu candidate "
                 "iterations (cut where the live bytes fall to their low) in %zu distinct "
                 "patterns, the longest repeat %zu alike in a row (%zu events each; replay "
                 "needs %zu in a row)", w->events, w->candidates, w->distinct, w->longest,
                 w->longest_events, w->warmup + 1);
}
