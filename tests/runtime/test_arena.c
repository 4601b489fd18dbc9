/* test_arena.c -- the replay arena on a synthetic training loop: detection,
 * exact planned offsets (against an independent plan of the same records),
 * canaries and an explicit overlap check on every block, deviation
 * injection (late free, extra request, reordering, larger size, interrupt),
 * statistics, options and misuse. */
#include "canary.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define CROSS UINT64_MAX

/* ---- the loop body --------------------------------------------------------- */

enum { OP_A, OP_F };
enum { T_CARRY = 0, T_ACT = 1, T_TMP = 10, T_GRAD = 20, T_OLD = 30, NTAG = 31 };
typedef struct op {
    int kind, tag;
    uint64_t size;
} op;

static op body[128];
static size_t nbody, nallocs;

static void add(int kind, int tag, uint64_t size) {
    body[nbody++] = (op){kind, tag, size};
    nallocs += kind == OP_A;
}

static void build_body(void) {
    static const uint64_t sz[6] = {1024, 4096, 2048, 8192, 640, 3200};
    add(OP_A, T_CARRY, 512);
    for (int l = 0; l < 6; l++) {
        add(OP_A, T_ACT + l, sz[l]);
        add(OP_A, T_TMP + l, 256 * (uint64_t)(l + 1));
        add(OP_F, T_TMP + l, 0);
    }
    for (int l = 5; l >= 0; l--) {
        add(OP_A, T_GRAD + l, sz[l]);
        if (l < 5) add(OP_F, T_GRAD + l + 1, 0);
        add(OP_F, T_ACT + l, 0);
    }
    add(OP_F, T_GRAD, 0);
    add(OP_F, T_OLD, 0);
}

/* ---- the independent plan ------------------------------------------------- */

typedef struct oracle {
    mp_trace_t *tr;       /* the same events as the arena, handles = test ids */
    int ready;
    size_t m;
    uint64_t *off;        /* planned offset or CROSS per slot */
    uint64_t footprint;
    uint64_t base;        /* 0 until the first region request is seen */
    long mismatches;
} oracle;

static void oracle_plan(oracle *o) {
    mp_period_params_t pp;
    mp_period_params_default(&pp);
    mp_period_t per;
    if (!MP_CHECK_OK(mp_period_detect(o->tr, &pp, &per)) || !MP_CHECK(per.found)) return;
    size_t from = per.start[per.clean], to = per.start[per.clean + 1], n, m;
    const mp_event_t *ev = mp_trace_events(o->tr, &n);
    mp_buffer_t *b;
    MP_CHECK_OK(mp_trace_records(o->tr, from, to, &b, &m));
    o->m = m;
    o->off = calloc(m, sizeof *o->off);
    mp_buffer_t *keep = malloc(m * sizeof *keep);
    size_t nb = 0, r = 0;
    for (size_t i = from; i < to; i++) {
        if (ev[i].kind != MP_EV_ALLOC) continue;
        if (ev[i].end == MP_TRACE_NEVER || ev[i].end >= to) o->off[r] = CROSS;
        else keep[nb] = b[r], keep[nb].id = r, keep[nb++].align = 64;
        r++;
    }
    mp_plan_t p;
    MP_CHECK(mp_test_plan(keep, nb, "auto", &p) > 0);
    for (size_t j = 0; j < nb; j++) o->off[keep[j].id] = p.offset[j];
    o->footprint = p.footprint;
    mp_plan_free(&p);
    mp_period_free(&per);
    free(b);
    free(keep);
    o->ready = 1;
}

/* ---- one iteration, with optional deviations -------------------------------- */

enum { D_NONE = 0, D_LATE = 1, D_EXTRA = 2, D_SWAP = 4, D_LARGE = 8, D_INTR = 16 };

static uint64_t carry_old, late_id;

static void run_iteration(mp_arena_t *a, oracle *o, int dev, int check_exact) {
    uint64_t tag[NTAG] = {0};
    tag[T_OLD] = carry_old;
    uint64_t extra = 0;
    for (size_t i = 0; i < nbody; i++) {
        op x = body[i];
        if ((dev & D_SWAP) && x.kind == OP_A && x.tag == T_ACT + 2) x.tag = T_ACT + 3, x.size = 8192;
        else if ((dev & D_SWAP) && x.kind == OP_A && x.tag == T_ACT + 3) x.tag = T_ACT + 2, x.size = 2048;
        if ((dev & D_LARGE) && x.kind == OP_A && x.tag == T_ACT + 4) x.size *= 3;
        if ((dev & D_EXTRA) && i == nbody / 2) extra = mp_canary_take(a, 1536, NULL);
        if ((dev & D_INTR) && i == nbody / 3) {
            mp_arena_stats_t s0, s1;
            mp_arena_stats(a, &s0);
            mp_arena_interrupt(a);
            uint64_t t1 = mp_canary_take(a, 4096, NULL), t2 = mp_canary_take(a, 64, NULL);
            mp_canary_give(a, t1);
            MP_CHECK_OK(mp_arena_resume(a));
            mp_arena_stats(a, &s1);
            MP_CHECK_EQ_U64(s1.position, s0.position);
            MP_CHECK_EQ_U64(s1.fb_interrupted, s0.fb_interrupted + 2);
            mp_canary_give(a, t2);
        }
        if (x.kind == OP_A) {
            mp_arena_stats_t s0, s1;
            mp_arena_stats(a, &s0);
            void *p;
            uint64_t id = mp_canary_take(a, x.size, &p);
            mp_arena_stats(a, &s1);
            if (x.tag == T_CARRY) carry_old = id;
            else tag[x.tag] = id;
            if (s0.state == MP_ARENA_LEARNING && o->tr)
                MP_CHECK_OK(mp_trace_record_alloc(o->tr, id, x.size, MP_TRACE_NO_NS));
            if (s0.state == MP_ARENA_LEARNING && s1.state == MP_ARENA_REPLAYING) oracle_plan(o);
            if (check_exact && s0.state == MP_ARENA_REPLAYING && o->ready) {
                size_t s = s0.position;
                if (s1.served_arena == s0.served_arena + 1) {
                    uint64_t b = (uint64_t)(uintptr_t)p - o->off[s];
                    if (o->off[s] == CROSS) o->mismatches++;
                    else if (!o->base) o->base = b;
                    else if (b != o->base) o->mismatches++;
                } else if (o->off[s] != CROSS) {
                    o->mismatches++;
                }
            }
        } else if (x.tag == T_OLD) {
            if (tag[T_OLD]) {
                mp_arena_stats_t s;
                mp_arena_stats(a, &s);
                if (s.state == MP_ARENA_LEARNING && o->tr)
                    MP_CHECK_OK(mp_trace_record_free(o->tr, tag[T_OLD], MP_TRACE_NO_NS));
                mp_canary_give(a, tag[T_OLD]);
            }
        } else {
            if ((dev & D_LATE) && x.tag == T_ACT + 1) {   /* freed next iteration */
                late_id = tag[x.tag];
                continue;
            }
            mp_arena_stats_t s;
            mp_arena_stats(a, &s);
            if (s.state == MP_ARENA_LEARNING && o->tr)
                MP_CHECK_OK(mp_trace_record_free(o->tr, tag[x.tag], MP_TRACE_NO_NS));
            mp_canary_give(a, tag[x.tag]);
        }
        if (!(dev & D_LATE) && late_id && i == nbody - 3) {
            mp_canary_give(a, late_id);
            late_id = 0;
        }
    }
    if (extra) mp_canary_give(a, extra);
}

/* ---- the tests -------------------------------------------------------------- */

static void test_training_loop(void) {
    build_body();
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(NULL, &a))) return;
    oracle o = {0};
    MP_CHECK_OK(mp_trace_create(&o.tr));
    /* warm-up: weights kept to the end, a setup phase unlike the loop */
    uint64_t w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = mp_canary_take(a, 4096 * (uint64_t)(i + 1), NULL);
        MP_CHECK_OK(mp_trace_record_alloc(o.tr, w[i], 4096 * (uint64_t)(i + 1), MP_TRACE_NO_NS));
    }
    for (int i = 0; i < 5; i++) {
        uint64_t t = mp_canary_take(a, 192 + 64 * (uint64_t)i, NULL);
        MP_CHECK_OK(mp_trace_record_alloc(o.tr, t, 192 + 64 * (uint64_t)i, MP_TRACE_NO_NS));
        MP_CHECK_OK(mp_trace_record_free(o.tr, t, MP_TRACE_NO_NS));
        mp_canary_give(a, t);
    }
    int it = 0;
    mp_arena_stats_t st;
    for (; it < 12; it++) {
        run_iteration(a, &o, D_NONE, 1);
        mp_arena_stats(a, &st);
        if (st.state == MP_ARENA_REPLAYING && o.ready && st.position == 0 && it > 5) break;
    }
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK(o.ready);
    MP_CHECK_EQ_U64(st.iteration_length, nallocs);
    MP_CHECK_EQ_U64(st.cross_blocks, 1);      /* the carried block */
    MP_CHECK_EQ_U64(st.planned_footprint, o.footprint);
    MP_CHECK(st.planned_footprint >= st.lower_bound);
    MP_CHECK(st.planned_footprint <= st.learned_peak_bytes);
    /* clean replay: every non-carried request exactly at base + offset */
    uint64_t served0 = st.served_arena;
    for (int k = 0; k < 5; k++) run_iteration(a, &o, D_NONE, 1);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(o.mismatches, 0);
    MP_CHECK(o.base != 0);
    MP_CHECK_EQ_U64(st.served_arena - served0, 5 * (nallocs - 1));
    MP_CHECK_EQ_U64(st.fb_unforeseen + st.fb_overlap + st.fb_too_large, 0);
    MP_CHECK_EQ_U64(st.reoptimizations, 0);

    /* interrupt / resume: no effect on the position, counted */
    run_iteration(a, &o, D_INTR, 1);
    MP_CHECK_EQ_U64(o.mismatches, 0);
    /* late free: the slot is busy next iteration, things fall back */
    run_iteration(a, &o, D_LATE, 0);
    run_iteration(a, &o, D_NONE, 0);
    mp_arena_stats(a, &st);
    MP_CHECK(st.fb_unforeseen + st.fb_overlap > 0);
    MP_CHECK_EQ_U64(st.position, 0);
    /* reordered requests: safe (and too-large falls back) */
    run_iteration(a, &o, D_SWAP, 0);
    run_iteration(a, &o, D_NONE, 0);
    mp_arena_stats(a, &st);
    uint64_t reopt = st.reoptimizations;
    MP_CHECK(st.fb_too_large > 0);
    MP_CHECK(reopt >= 1);   /* the swapped larger size was re-planned */
    /* a larger size: counted, re-planned at the next boundary, then served */
    uint64_t tl = st.fb_too_large;
    run_iteration(a, &o, D_LARGE, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.fb_too_large, tl + 1);
    MP_CHECK(st.replan_pending);
    MP_CHECK_EQ_U64(st.reoptimizations, reopt);
    uint64_t fb = st.fb_too_large + st.fb_overlap + st.fb_unforeseen;
    run_iteration(a, &o, D_LARGE, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.reoptimizations, reopt + 1);
    MP_CHECK(!st.replan_pending);
    MP_CHECK_EQ_U64(st.fb_too_large + st.fb_overlap + st.fb_unforeseen, fb);
    /* an extra request shifts the position; marking the iteration resyncs */
    run_iteration(a, &o, D_EXTRA, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.position, 1);
    run_iteration(a, &o, D_NONE, 0);
    mp_arena_mark_iteration(a);
    for (int k = 0; k < 3; k++) run_iteration(a, &o, D_LARGE, 0);
    mp_arena_stats(a, &st);
    fb = st.fb_too_large + st.fb_overlap + st.fb_unforeseen;
    uint64_t sa = st.served_arena;
    run_iteration(a, &o, D_LARGE, 0);
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.fb_too_large + st.fb_overlap + st.fb_unforeseen, fb);
    MP_CHECK_EQ_U64(st.served_arena - sa, nallocs - 1);
    /* everything mixed, many times: never an overlap */
    for (int k = 0; k < 40; k++) run_iteration(a, &o, (k * 7 + 3) % 32, 0);
    if (late_id) mp_canary_give(a, late_id), late_id = 0;
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
    mp_arena_stats(a, &st);
    MP_CHECK(st.peak_live_bytes >= st.live_bytes);
    MP_CHECK_EQ_U64(st.live_blocks, mp_canary_live());
    /* misuse */
    int x;
    MP_CHECK(mp_arena_free(a, &x) == MP_EINVAL);
    MP_CHECK(mp_arena_resume(a) == MP_EINVAL);
    void *p;
    MP_CHECK(mp_arena_alloc(a, 0, &p) == MP_EINVAL);
    /* destroy with live blocks (the weights and the carry): reported */
    size_t left = mp_canary_live();
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, left);
    MP_CHECK_EQ_U64(st.backing_bytes, 0);
    mp_canary_forget();
    carry_old = 0;
    (void)w;
    mp_trace_free(o.tr);
    free(o.off);
}

/* A counting backing allocator. */
typedef struct counter {
    long allocs, frees;
    uint64_t bytes;
} counter;
static void *c_alloc(void *u, uint64_t size, uint64_t align) {
    counter *c = u;
    void *p = NULL;
    if (posix_memalign(&p, align, size)) return NULL;
    c->allocs++;
    c->bytes += size;
    return p;
}
static void c_free(void *u, void *p) {
    ((counter *)u)->frees++;
    free(p);
}

static void test_options(void) {
    mp_arena_options_t opt;
    mp_arena_options_default(&opt);
    mp_arena_t *a;
    opt.align = 48;
    MP_CHECK(mp_arena_create(&opt, &a) == MP_EINVAL);
    opt.align = 64;
    opt.strategy = "no-such-planner";
    MP_CHECK(mp_arena_create(&opt, &a) == MP_ENOTFOUND);
    counter c = {0};
    opt.strategy = "greedy-size";
    opt.backing_alloc = c_alloc;
    opt.backing_free = c_free;
    opt.backing_user = &c;
    opt.min_block = 256;
    if (!MP_CHECK_OK(mp_arena_create(&opt, &a))) return;
    /* a simple loop: x(1024) y(2048) free x, z(128: below threshold) free y z */
    for (int it = 0; it < 60; it++) {
        uint64_t x = mp_canary_take(a, 1024, NULL), y = mp_canary_take(a, 2048, NULL);
        mp_canary_give(a, x);
        uint64_t z = mp_canary_take(a, 128, NULL);
        mp_canary_give(a, y);
        mp_canary_give(a, z);
    }
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st.iteration_length, 2);
    MP_CHECK_EQ_U64(st.fb_small, 60);
    MP_CHECK_EQ_U64(st.planned_footprint, 3072);
    MP_CHECK(st.served_arena > 0);
    /* free_all releases live blocks; the plan stays */
    uint64_t x = mp_canary_take(a, 1024, NULL);
    (void)x;
    mp_arena_free_all(a);
    mp_canary_forget();
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.released_blocks, 1);
    MP_CHECK_EQ_U64(st.live_blocks, 0);
    MP_CHECK_EQ_U64(st.position, 0);
    MP_CHECK_EQ_U64(st.state, MP_ARENA_REPLAYING);
    mp_arena_destroy(a, &st);
    MP_CHECK_EQ_U64(c.allocs, c.frees);
    MP_CHECK_EQ_U64(st.backing_bytes, 0);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
}

/* No period: the arena keeps forwarding and gives up after max_learn_events. */
static void test_aperiodic(void) {
    mp_arena_options_t opt;
    mp_arena_options_default(&opt);
    opt.max_learn_events = 2000;
    mp_arena_t *a;
    if (!MP_CHECK_OK(mp_arena_create(&opt, &a))) return;
    uint64_t r = 12345;
    for (int i = 0; i < 1500; i++) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        uint64_t id = mp_canary_take(a, 64 + (r >> 40) % 5000, NULL);
        if (mp_canary_live() > 8 || (r >> 20) % 3 == 0) mp_canary_give(a, mp_canary_live_id((r >> 30) % mp_canary_live()));
        (void)id;
    }
    while (mp_canary_live()) mp_canary_give(a, mp_canary_live_id(0));
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK(st.state != MP_ARENA_REPLAYING);
    MP_CHECK_EQ_U64(st.served_arena, 0);
    MP_CHECK_EQ_U64(st.live_blocks, 0);
    mp_arena_destroy(a, NULL);
    MP_CHECK_EQ_U64(mp_canary_overlaps, 0);
    MP_CHECK_EQ_U64(mp_canary_bad, 0);
}

int main(void) {
    test_training_loop();
    test_options();
    test_aperiodic();
    return mp_test_finish("arena");
}
