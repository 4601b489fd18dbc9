/* test_swap_sim.c -- the swap simulator, load curve, candidates and
 * load_min (src/swap/simulate.c, load.c): hand-worked iterations with
 * their times derived in the comments, plan validation messages, and
 * invariants on thousands of random iterations and plans checked against
 * an independent O(n^2) load oracle. */
#include "gen.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#ifdef MP_DEBUG
#define N_RANDOM 4000
#else
#define N_RANDOM 10000
#endif

/* ---- hand-built iterations ------------------------------------------------ */

#define MAXV 16
#define MAXO 16

typedef struct tb {
    mp_swap_var_t var[MAXV];
    mp_swap_op_t op[MAXO];
    mp_swap_access_t acc[MAXV * MAXO];
    mp_swap_iter_t it;
} tb;

static void tb_init(tb *b) {
    memset(b, 0, sizeof *b);
    b->it.var = b->var, b->it.op = b->op, b->it.access = b->acc;
}

static size_t tb_var(tb *b, uint64_t size, int persistent, char *name) {
    b->var[b->it.n_vars] = (mp_swap_var_t){size, persistent, name};
    return b->it.n_vars++;
}

/* An op of ns reading the variables listed (ended by -1). */
static void tb_op(tb *b, uint64_t ns, const int *vars) {
    mp_swap_op_t *op = &b->op[b->it.n_ops++];
    *op = (mp_swap_op_t){.ns = ns, .first = b->it.n_access, .n = 0, .name = ""};
    for (; *vars >= 0; vars++, op->n++) b->acc[b->it.n_access++] = (mp_swap_access_t){(size_t)*vars, 0};
}
#define OP(b, ns, ...) tb_op((b), (ns), (const int[]){__VA_ARGS__, -1})

/* 1 byte/ns both ways, no latency: a transfer of B bytes takes B ns. */
static const mp_swap_link_t UNIT = {.name = "unit", .out_lat_ns = 0, .out_bytes_per_s = 1e9,
                                    .in_lat_ns = 0, .in_bytes_per_s = 1e9};

static mp_swap_plan_t plan_of(mp_swap_item_t *items, size_t n) {
    mp_swap_plan_t p = {.n = n, .item = items};
    strcpy(p.score, "user");
    return p;
}

static void check_u64s(const uint64_t *got, const uint64_t *want, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (!MP_CHECK_EQ_U64(got[i], want[i])) printf("  %s[%zu]\n", what, i);
}

/* Item i's swap-out [os, oe) and swap-in [is, ie). */
static void check_item(const mp_swap_sim_t *s, size_t i, uint64_t os, uint64_t oe, uint64_t is, uint64_t ie) {
    const uint64_t got[] = {s->out_start_ns[i], s->out_end_ns[i], s->in_start_ns[i], s->in_end_ns[i]};
    check_u64s(got, (const uint64_t[]){os, oe, is, ie}, 4, "out start, end, in start, end");
}

/* compute, total and stall ns; peak, original peak, limit_met. */
static void check_sums(const mp_swap_sim_t *s, uint64_t compute, uint64_t total, uint64_t stall,
                       uint64_t peak, uint64_t original, int met) {
    const uint64_t got[] = {s->compute_ns, s->total_ns, s->stall_ns, s->peak, s->original_peak,
                            (uint64_t)s->limit_met};
    check_u64s(got, (const uint64_t[]){compute, total, stall, peak, original, (uint64_t)met}, 6,
               "compute, total, stall, peak, original, limit_met");
}

/* The "hide" iteration: a (100) written by op 0, read again by op 4.
 *   op0 10 ns: a | op1 200: b | op2 100: b c | op3 200: c d | op4 10: a d
 * sizes a 100, b 10, c 60, d 5.  No swapping: op0 100, op1 a+b 110,
 * op2 a+b+c 170 (the peak), op3 a+c+d 165, op4 a+d 105. */
static void build_hide(tb *b) {
    tb_init(b);
    int a = (int)tb_var(b, 100, 0, "a"), bb = (int)tb_var(b, 10, 0, "b");
    int c = (int)tb_var(b, 60, 0, "c"), d = (int)tb_var(b, 5, 0, "d");
    OP(b, 10, a);
    OP(b, 200, bb);
    OP(b, 100, bb, c);
    OP(b, 200, c, d);
    OP(b, 10, a, d);
}

/* One swap that hides completely: (a, after 0, before 4).
 * No-stall starts P = 0, 10, 210, 310, 510.  Out: op0 ends at 10 -> [10,
 * 110).  In: must end by P(4) = 510, so start by V = 410; the last op r
 * with P(r) <= 410 is op 3 (310), lag 100: released when op 2 ends (310),
 * starts 310 + 100 = 410, ends 510 = op 4's start.  No stall.
 * Loads: op0 100; op1 [10,210): a+b 110 until a is out at 110; op2 b+c 70;
 * op3 c+d 65, then a comes back at 410: 165; op4 a+d 105.  Peak 170 -> 165. */
static void test_hide(void) {
    tb b;
    build_hide(&b);
    uint64_t load[5], peak = 0;
    size_t peak_op = 9;
    MP_CHECK_OK(mp_swap_load(&b.it, load, &peak, &peak_op));
    check_u64s(load, (const uint64_t[]){100, 110, 170, 165, 105}, 5, "load");
    MP_CHECK(peak == 170 && peak_op == 2);
    mp_swap_item_t items[] = {{0, 0, 4}};
    mp_swap_plan_t p = plan_of(items, 1);
    mp_swap_sim_t s;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 10, 210, 310, 510}, 5, "start");
    check_u64s(s.op_load, (const uint64_t[]){100, 110, 70, 165, 105}, 5, "op_load");
    check_item(&s, 0, 10, 110, 410, 510);
    check_sums(&s, 520, 520, 0, 165, 170, 1);
    MP_CHECK(s.overhead == 0.0 && s.n_ops == 5);
    mp_swap_sim_free(&s);
    /* The empty plan: the load curve of mp_swap_load, no stall. */
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, NULL, 0, &s));
    check_u64s(s.op_load, (const uint64_t[]){100, 110, 170, 165, 105}, 5, "op_load");
    MP_CHECK_EQ_U64(s.stall_ns, 0);
    MP_CHECK_EQ_U64(s.peak, 170);
    mp_swap_sim_free(&s);
}

/* A swap that stalls: op0 10: a | op1 50: b | op2 10: a b (a 100, b 10).
 * Out [10, 110).  In: P(2) = 60 < 100 ns of transfer, so it has no room:
 * released at the start (r 0) but it must wait for its own swap-out:
 * [110, 210).  Op 2 waits from 60 to 210: stall 150 of 70 ns computed. */
static void test_stall(void) {
    tb b;
    tb_init(&b);
    int a = (int)tb_var(&b, 100, 0, "a"), bb = (int)tb_var(&b, 10, 0, "b");
    OP(&b, 10, a);
    OP(&b, 50, bb);
    OP(&b, 10, a, bb);
    mp_swap_item_t items[] = {{0, 0, 2}};
    mp_swap_plan_t p = plan_of(items, 1);
    mp_swap_sim_t s;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 10, 210}, 3, "start");
    check_item(&s, 0, 10, 110, 110, 210);
    check_sums(&s, 70, 220, 150, 110, 110, 1);
    MP_CHECK(s.overhead > 150.0 / 70 - 1e-12 && s.overhead < 150.0 / 70 + 1e-12);
    /* op2 [60, 220): a+b 110, a out at 110 and back at once: 110. */
    check_u64s(s.op_load, (const uint64_t[]){100, 110, 110}, 3, "op_load");
    mp_swap_sim_free(&s);
}

/* Two swap-outs queued on the out stream, and their swap-ins queued too:
 *   op0 10: a b | op1 200: c | op2 10: a b c      (a 100, b 50, c 10)
 * Items 0 (a, 0, 2), 1 (b, 0, 2).  Out: a [10, 110), b waits for it:
 * [110, 160).  In deadlines, backwards: b ends by P(2) = 210, starts by
 * 160; a ends by 160, starts by 60 (r 1, lag 50: 10 + 50).  But a is out
 * only at 110: a [110, 210); b after it: [210, 260).  Op 2 at 260 instead
 * of 210: stall 50. */
static void test_queues(void) {
    tb b;
    tb_init(&b);
    int a = (int)tb_var(&b, 100, 0, "a"), bb = (int)tb_var(&b, 50, 0, "b"), c = (int)tb_var(&b, 10, 0, "c");
    OP(&b, 10, a, bb);
    OP(&b, 200, c);
    OP(&b, 10, a, bb, c);
    mp_swap_item_t items[] = {{0, 0, 2}, {1, 0, 2}};
    mp_swap_plan_t p = plan_of(items, 2);
    mp_swap_sim_t s;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    check_item(&s, 0, 10, 110, 110, 210);
    check_item(&s, 1, 110, 160, 210, 260);
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 10, 260}, 3, "start");
    MP_CHECK_EQ_U64(s.stall_ns, 50);
    mp_swap_sim_free(&s);

    /* With op1 1000 ns both hide: b by 1010 - 50 = 960, a by 960 - 100 =
     * 860 (r 1, lag 850): a [860, 960), b [960, 1010), op 2 at 1010.  The
     * deadline of a makes room for b queued behind it. */
    b.op[1].ns = 1000;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    check_u64s(s.in_start_ns, (const uint64_t[]){860, 960}, 2, "in_start");
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 10, 1010}, 3, "start");
    MP_CHECK_EQ_U64(s.stall_ns, 0);
    mp_swap_sim_free(&s);
}

/* Swap-ins for different ops queued on the in stream:
 *   op0 10: a | op1 10: b | op2 150: c | op3 10: a c | op4 10: b c
 * (a 100, b 100, c 10); items (a, 0, 3), (b, 1, 4).  Out: a [10, 110), b
 * (op1 ends at 20) waits: [110, 210).  P = 0 10 20 170 180.  Deadlines: b
 * by 180, start by 80 (r 2, lag 60); a by min(170, 80): start by -20, no
 * room: r 0, lag 0.  a waits for its swap-out: [110, 210); b for a and for
 * its own swap-out: [210, 310).  Op3 at 210 (due 170), op4 at 310 (due
 * 220): stall 320 - 190 = 130. */
static void test_in_queue(void) {
    tb b;
    tb_init(&b);
    int a = (int)tb_var(&b, 100, 0, "a"), bb = (int)tb_var(&b, 100, 0, "b"), c = (int)tb_var(&b, 10, 0, "c");
    OP(&b, 10, a);
    OP(&b, 10, bb);
    OP(&b, 150, c);
    OP(&b, 10, a, c);
    OP(&b, 10, bb, c);
    mp_swap_item_t items[] = {{1, 1, 4}, {0, 0, 3}};   /* plan order is no stream order */
    mp_swap_plan_t p = plan_of(items, 2);
    mp_swap_sim_t s;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    check_item(&s, 0, 110, 210, 210, 310);
    check_item(&s, 1, 10, 110, 110, 210);
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 10, 20, 210, 310}, 5, "start");
    check_sums(&s, 190, 320, 130, 210, 210, 1);
    mp_swap_sim_free(&s);
}

/* A wrapped persistent item.  w (persistent, 100) is read by op3 and
 * updated by op4; its gap wraps: (w, after 4, before 3).
 *   op0 200: x | op1 300: x t | op2 200: x u | op3 10: u w y | op4 10: y w
 * (x 10, t 200, u 10, y 10).  No swapping: 110 310 120 120 110.
 * P = 0 200 500 700 710 720.  In: by P(3) = 700, start by 600: r 2 (500),
 * lag 100; released when op1 ends (500): [600, 700).  Out after op4:
 * [720, 820), 100 ns past the iteration's end (720).  Steady state: the
 * next iteration starts with w still going out until 100, holding it
 * (op0 110); the swap-in at 600 is after that anyway.  No stall.
 * Loads: op0 w+x 110 (w gone at 100); op1 x+t 210; op2 x+u 20, w back at
 * 600: 120; op3 w+u+y 120; op4 w+y 110.  Peak 310 -> 210. */
static void build_wrap(tb *b) {
    tb_init(b);
    int w = (int)tb_var(b, 100, 1, "w"), x = (int)tb_var(b, 10, 0, "x"), t = (int)tb_var(b, 200, 0, "t");
    int u = (int)tb_var(b, 10, 0, "u"), y = (int)tb_var(b, 10, 0, "y");
    OP(b, 200, x);
    OP(b, 300, x, t);
    OP(b, 200, x, u);
    OP(b, 10, u, w, y);
    OP(b, 10, y, w);
}

static void test_wrap(void) {
    tb b;
    build_wrap(&b);
    mp_swap_item_t items[] = {{0, 4, 3}};
    mp_swap_plan_t p = plan_of(items, 1);
    MP_CHECK_OK(mp_swap_plan_validate(&b.it, &p));
    mp_swap_sim_t s;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 200, 500, 700, 710}, 5, "start");
    check_u64s(s.op_load, (const uint64_t[]){110, 210, 120, 120, 110}, 5, "op_load");
    check_item(&s, 0, 720, 820, 600, 700);
    check_sums(&s, 720, 720, 0, 210, 310, 1);
    mp_swap_sim_free(&s);

    /* w accessed once (only op4): its gap is the whole cycle, after ==
     * before == 4.  In by P(4) = 710: start 610 (r 2, lag 110, released
     * at 500): [610, 710), op4 at 710. */
    b.op[3].n = 2;                       /* op3 reads u and w: drop w */
    b.acc[b.op[3].first + 1] = b.acc[b.op[3].first + 2];
    mp_swap_item_t once[] = {{0, 4, 4}};
    p = plan_of(once, 1);
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    MP_CHECK_EQ_U64(s.in_start_ns[0], 610);
    MP_CHECK_EQ_U64(s.stall_ns, 0);
    mp_swap_sim_free(&s);
}

/* The limit, met by waiting:  op0 10: a | op1 10: b | op2 1000: b |
 * op3 10: a  (a 100, b 100); item (a, 0, 3); limit 150.
 * Op1 at 10 would make a+b 200 > 150: it waits for a's swap-out [10, 110)
 * and starts at 110 (100 ns stall).  a's swap-in is due at 120 + 900 =
 * 1020 (r 2, lag 900) but a+b would be 200: it waits for op2's end (b
 * freed) at 1120: [1120, 1220); op3 at 1220 (due 1120).  Total 1230,
 * compute 1030, stall 200; the load never exceeds 100. */
static void build_limit(tb *b) {
    tb_init(b);
    int a = (int)tb_var(b, 100, 0, "a"), bb = (int)tb_var(b, 100, 0, "b");
    OP(b, 10, a);
    OP(b, 10, bb);
    OP(b, 1000, bb);
    OP(b, 10, a);
}

static void test_limit(void) {
    tb b;
    build_limit(&b);
    mp_swap_item_t items[] = {{0, 0, 3}};
    mp_swap_plan_t p = plan_of(items, 1);
    mp_swap_sim_t s;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 150, &s));
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 110, 120, 1220}, 4, "start");
    check_u64s(s.op_load, (const uint64_t[]){100, 100, 100, 100}, 4, "op_load");
    check_item(&s, 0, 10, 110, 1120, 1220);
    check_sums(&s, 1030, 1230, 200, 100, 200, 1);
    mp_swap_sim_free(&s);
    /* Without a limit the same plan: op1 at 10, a back by 1020, no stall. */
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 0, &s));
    MP_CHECK_EQ_U64(s.stall_ns, 0);
    MP_CHECK_EQ_U64(s.peak, 200);
    mp_swap_sim_free(&s);
}

/* A limit that cannot be met: 50 < a alone.  Op0 allocates a (nothing
 * pending could make room) and goes on; op1 would need 200 - 100 > 50 even
 * after a's swap-out: goes on at 10; the swap-in (due 920) likewise.  No
 * waiting at all: stall 0, peak 200 (op1: a+b), limit_met 0. */
static void test_limit_unmet(void) {
    tb b;
    build_limit(&b);
    mp_swap_item_t items[] = {{0, 0, 3}};
    mp_swap_plan_t p = plan_of(items, 1);
    mp_swap_sim_t s;
    MP_CHECK_OK(mp_swap_simulate(&b.it, &UNIT, &p, 50, &s));
    check_u64s(s.op_start_ns, (const uint64_t[]){0, 10, 20, 1020}, 4, "start");
    check_u64s(s.op_load, (const uint64_t[]){100, 200, 200, 100}, 4, "op_load");
    check_item(&s, 0, 10, 110, 920, 1020);
    check_sums(&s, 1030, 1030, 0, 200, 200, 0);
    mp_swap_sim_free(&s);
}

/* Candidates and load_min.  hide: the peak op is 2; a (live 0..4, not
 * read by op 2) is the one candidate, gap (0, 4); b and c are read at the
 * peak, d is born after it.  load_min: a only at ops 0 and 4:
 * 100, 10, 70, 65, 105 -> 105.  wrap: the peak op is 1; w (persistent, read
 * at 3 and 4) has no access before it: its gap wraps, (4, 3).  load_min:
 * w only at 3 and 4: 10, 210, 20, 120, 110 -> 210. */
static void test_candidates(void) {
    tb b;
    build_hide(&b);
    mp_swap_item_t *c = NULL;
    size_t n = 9;
    MP_CHECK_OK(mp_swap_candidates(&b.it, 0, &c, &n));
    MP_CHECK_EQ_U64(n, 1);
    if (n == 1) MP_CHECK(c[0].var == 0 && c[0].after == 0 && c[0].before == 4);
    free(c);
    MP_CHECK_OK(mp_swap_candidates(&b.it, 101, &c, &n));
    MP_CHECK_EQ_U64(n, 0);
    free(c);
    uint64_t lm = 0;
    MP_CHECK_OK(mp_swap_load_min(&b.it, 0, &lm));
    MP_CHECK_EQ_U64(lm, 105);
    MP_CHECK_OK(mp_swap_load_min(&b.it, 101, &lm));
    MP_CHECK_EQ_U64(lm, 170);

    build_wrap(&b);
    MP_CHECK_OK(mp_swap_candidates(&b.it, 1, &c, &n));
    MP_CHECK_EQ_U64(n, 1);
    if (n == 1) MP_CHECK(c[0].var == 0 && c[0].after == 4 && c[0].before == 3);
    free(c);
    MP_CHECK_OK(mp_swap_load_min(&b.it, 0, &lm));
    MP_CHECK_EQ_U64(lm, 210);
}

/* ---- validation ------------------------------------------------------------ */

static void expect_invalid(const mp_swap_iter_t *it, mp_swap_item_t *items, size_t n, const char *needle) {
    mp_swap_plan_t p = plan_of(items, n);
    mp_status st = mp_swap_plan_validate(it, &p);
    MP_CHECK_EQ_U64(st, MP_EINVAL);
    if (!MP_CHECK(strstr(mp_last_error(), needle) != NULL)) printf("  message: %s\n", mp_last_error());
    mp_swap_sim_t s;
    MP_CHECK_EQ_U64(mp_swap_simulate(it, &UNIT, &p, 0, &s), MP_EINVAL);
    if (!MP_CHECK(strstr(mp_last_error(), needle) != NULL)) printf("  message: %s\n", mp_last_error());
    MP_CHECK(s.op_load == NULL && s.in_end_ns == NULL);
}

static void test_validate(void) {
    tb b;
    build_hide(&b);
    expect_invalid(&b.it, (mp_swap_item_t[]){{9, 0, 4}}, 1,
                   "swap plan: item 0 names variable 9, but the iteration has 4");
    expect_invalid(&b.it, (mp_swap_item_t[]){{0, 0, 4}, {0, 0, 7}}, 2,
                   "swap plan: item 1 names op 7, but the iteration has 5");
    expect_invalid(&b.it, (mp_swap_item_t[]){{0, 1, 4}}, 1,
                   "swap plan: item 0: op 1 does not access variable 0 ('a')");
    expect_invalid(&b.it, (mp_swap_item_t[]){{0, 0, 3}}, 1,
                   "swap plan: item 0: (after 0, before 3) is not a gap between consecutive accesses "
                   "of variable 0 ('a'): its next access after op 0 is at op 4");
    expect_invalid(&b.it, (mp_swap_item_t[]){{0, 4, 0}}, 1,
                   "swap plan: item 0: op 4 is the last access of variable 0 ('a'), which is not "
                   "persistent");
    expect_invalid(&b.it, (mp_swap_item_t[]){{0, 0, 4}, {2, 2, 3}, {0, 0, 4}}, 3,
                   "swap plan: items 0 and 2 overlap: both take variable 0 ('a') out after op 0");
    build_wrap(&b);
    expect_invalid(&b.it, (mp_swap_item_t[]){{0, 4, 4}}, 1,
                   "(after 4, before 4) is not a gap between consecutive accesses of variable 0 "
                   "('w'): its next access after op 4 is at op 3");
    mp_swap_plan_t ok = plan_of((mp_swap_item_t[]){{0, 3, 4}, {0, 4, 3}}, 2);
    MP_CHECK_OK(mp_swap_plan_validate(&b.it, &ok));
    MP_CHECK_OK(mp_swap_plan_validate(&b.it, NULL));
    /* Times past 64 bits. */
    b.op[2].ns = UINT64_MAX / 2;
    mp_swap_sim_t s;
    MP_CHECK_EQ_U64(mp_swap_simulate(&b.it, &UNIT, &ok, 0, &s), MP_EOVERFLOW);
    mp_swap_link_t bad = UNIT;
    bad.in_bytes_per_s = 0;
    b.op[2].ns = 1;
    MP_CHECK_EQ_U64(mp_swap_simulate(&b.it, &bad, &ok, 0, &s), MP_EINVAL);
}

/* ---- random iterations and plans -------------------------------------------- */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t pick(uint64_t lo, uint64_t hi) { return lo + mp_gen_next(&rng) % (hi - lo + 1); }

typedef struct rnd {
    mp_swap_iter_t it;
    size_t *vops, *nv;        /* per variable: its ops (ascending), how many (<= 4) */
} rnd;

static void rnd_free(rnd *r) {
    free(r->it.var), free(r->it.op), free(r->it.access), free(r->vops), free(r->nv);
}

/* n_vars variables of 1..4 accesses each at distinct random ops, a fifth
 * persistent; ops of 1..400 ns, or with zeros 0..3 ns half the time. */
static void rnd_iter(rnd *r, size_t n_ops, size_t n_vars, bool zeros) {
    mp_swap_iter_t *it = &r->it;
    memset(r, 0, sizeof *r);
    it->n_vars = n_vars, it->n_ops = n_ops;
    it->var = calloc(n_vars, sizeof *it->var);
    it->op = calloc(n_ops, sizeof *it->op);
    it->access = calloc(n_vars * 4, sizeof *it->access);
    r->vops = calloc(n_vars * 4, sizeof *r->vops);
    r->nv = calloc(n_vars, sizeof *r->nv);
    size_t *count = calloc(n_ops + 1, sizeof *count);
    for (size_t v = 0; v < n_vars; v++) {
        it->var[v] = (mp_swap_var_t){pick(0, 3) ? pick(1, 1000) : pick(1, 5000), pick(0, 4) == 0, ""};
        size_t k = (size_t)pick(1, n_ops < 4 ? n_ops : 4), *o = &r->vops[4 * v];
        while (r->nv[v] < k) {
            size_t op = (size_t)pick(0, n_ops - 1), at = r->nv[v];
            bool dup = false;
            for (size_t q = 0; q < at; q++) dup |= o[q] == op;
            if (dup) continue;
            while (at > 0 && o[at - 1] > op) o[at] = o[at - 1], at--;
            o[at] = op;
            r->nv[v]++;
        }
        for (size_t q = 0; q < k; q++) count[o[q] + 1]++;
    }
    for (size_t j = 0; j < n_ops; j++) count[j + 1] += count[j];
    for (size_t j = 0; j < n_ops; j++)
        it->op[j] = (mp_swap_op_t){zeros && pick(0, 1) ? pick(0, 3) : pick(1, 400), count[j], 0, ""};
    for (size_t v = 0; v < n_vars; v++)
        for (size_t q = 0; q < r->nv[v]; q++) {
            mp_swap_op_t *op = &it->op[r->vops[4 * v + q]];
            it->access[op->first + op->n++] = (mp_swap_access_t){v, (int)pick(0, 1)};
        }
    it->n_access = count[n_ops];
    free(count);
}

/* Each gap between consecutive accesses (the wrapping one of a persistent
 * variable too) with probability pct %, of the variables v with only[v]
 * (NULL: all), in a shuffled order. */
static size_t rnd_plan(const rnd *r, unsigned pct, const bool *only, mp_swap_item_t *items) {
    size_t n = 0;
    for (size_t v = 0; v < r->it.n_vars; v++) {
        const size_t *o = &r->vops[4 * v];
        if (only && !only[v]) continue;
        size_t k = r->nv[v];
        for (size_t q = 0; q < k; q++) {
            if (q + 1 == k && !r->it.var[v].persistent) break;
            if (pick(1, 100) > pct) continue;
            items[n++] = (mp_swap_item_t){v, o[q], o[(q + 1) % k]};
        }
    }
    for (size_t i = n; i > 1; i--) {
        size_t k = (size_t)pick(0, i - 1);
        mp_swap_item_t t = items[i - 1];
        items[i - 1] = items[k], items[k] = t;
    }
    return n;
}

static int failures_shown = 0;

/* Checks one simulation against the rules and an independent load oracle:
 * the load at every event time, recomputed from the simulated times.  The
 * oracle's intervals are half-open, so it skips iterations with 0 ns ops
 * (whose variables the simulator counts for an instant). */
static bool check_sim(const rnd *r, const mp_swap_link_t *link, const mp_swap_plan_t *p, uint64_t limit,
                      const mp_swap_sim_t *s) {
    const mp_swap_iter_t *it = &r->it;
    size_t no = it->n_ops, n = p->n;
    const mp_swap_item_t *c = p->item;
    bool ok = true;
#define EXPECT(x) \
    do if (!(x)) { \
        if (ok && failures_shown++ < 5) printf("  %s:%d: %s\n", __FILE__, __LINE__, #x); \
        ok = false; \
    } while (0)
    uint64_t compute = 0, *end = malloc(no * sizeof *end);
    for (size_t j = 0; j < no; j++) {
        compute += it->op[j].ns;
        end[j] = s->op_start_ns[j] + it->op[j].ns;
        if (j) EXPECT(s->op_start_ns[j] >= end[j - 1]);
    }
    uint64_t total = end[no - 1];
    bool zero = false;
    for (size_t j = 0; j < no; j++) zero |= it->op[j].ns == 0;
    EXPECT(s->compute_ns == compute && s->total_ns == total && s->stall_ns == total - compute);
    EXPECT(s->total_ns >= s->compute_ns);
    uint64_t *carry = calloc(n + 1, sizeof *carry);
    for (size_t i = 0; i < n; i++) {
        uint64_t size = it->var[c[i].var].size;
        bool wrap = c[i].before <= c[i].after;
        EXPECT(s->out_end_ns[i] - s->out_start_ns[i] == mp_swap_out_ns(link, size));
        EXPECT(s->in_end_ns[i] - s->in_start_ns[i] == mp_swap_in_ns(link, size));
        EXPECT(s->out_start_ns[i] >= end[c[i].after]);          /* out after its access */
        EXPECT(s->in_end_ns[i] <= s->op_start_ns[c[i].before]); /* back before the next */
        carry[i] = wrap && s->out_end_ns[i] > total ? s->out_end_ns[i] - total : 0;
        EXPECT(s->in_start_ns[i] >= (wrap ? carry[i] : s->out_end_ns[i]));
        for (size_t k = 0; k < n; k++) {                        /* FIFO, one at a time */
            if ((c[k].after < c[i].after || (c[k].after == c[i].after && k < i)))
                EXPECT(s->out_start_ns[i] >= s->out_end_ns[k]);
            if ((c[k].before < c[i].before || (c[k].before == c[i].before && k < i)))
                EXPECT(s->in_start_ns[i] >= s->in_end_ns[k]);
        }
    }
    /* The oracle: load(t) just after the events at t, for every event t. */
    size_t ne = 0, cap = 1 + 2 * no + 3 * n;
    uint64_t *ev = malloc(cap * sizeof *ev);
    ev[ne++] = 0;
    for (size_t j = 0; j < no; j++) ev[ne++] = s->op_start_ns[j], ev[ne++] = end[j];
    for (size_t i = 0; i < n; i++) ev[ne++] = s->out_end_ns[i], ev[ne++] = s->in_start_ns[i], ev[ne++] = carry[i];
    uint64_t *seg = calloc(no, sizeof *seg), peak = 0;
    for (size_t e = 0; e < ne; e++) {
        uint64_t t = ev[e], load = 0;
        if (t >= total || zero) continue;
        for (size_t v = 0; v < it->n_vars; v++) {
            const size_t *o = &r->vops[4 * v];
            if (it->var[v].persistent || (s->op_start_ns[o[0]] <= t && t < end[o[r->nv[v] - 1]]))
                load += it->var[v].size;
        }
        for (size_t i = 0; i < n; i++) {
            bool absent = c[i].before <= c[i].after
                              ? (t >= carry[i] && t < s->in_start_ns[i]) || t >= s->out_end_ns[i]
                              : s->out_end_ns[i] <= t && t < s->in_start_ns[i];
            if (absent) load -= it->var[c[i].var].size;
        }
        size_t j = 0;                       /* the op whose segment [end[j-1], end[j]) holds t */
        while (end[j] <= t) j++;
        if (load > seg[j]) seg[j] = load;
        if (limit && s->limit_met) EXPECT(load <= limit);
    }
    for (size_t j = 0; j < no; j++) {
        EXPECT(zero || s->op_load[j] == seg[j]);
        if (s->op_load[j] > peak) peak = s->op_load[j];
    }
    EXPECT(s->peak == peak);
    EXPECT(s->peak <= s->original_peak);
    EXPECT(s->limit_met == (!limit || s->peak <= limit));
    free(end), free(carry), free(ev), free(seg);
#undef EXPECT
    return ok;
}

static void rnd_link(mp_swap_link_t *l) {
    memset(l, 0, sizeof *l);
    strcpy(l->name, "random");
    l->out_lat_ns = pick(0, 200), l->in_lat_ns = pick(0, 200);
    l->out_bytes_per_s = 1e8 * (double)pick(1, 40), l->in_bytes_per_s = 1e8 * (double)pick(1, 40);
}

static bool same_times(const mp_swap_sim_t *a, const mp_swap_sim_t *b, size_t n) {
    if (a->total_ns != b->total_ns || a->peak != b->peak) return false;
    for (size_t j = 0; j < a->n_ops; j++)
        if (a->op_start_ns[j] != b->op_start_ns[j] || a->op_load[j] != b->op_load[j]) return false;
    for (size_t i = 0; i < n; i++)
        if (a->out_start_ns[i] != b->out_start_ns[i] || a->in_start_ns[i] != b->in_start_ns[i]) return false;
    return true;
}

static void test_random(void) {
    long sims = 0, bad = 0, met = 0, limited = 0, stalled = 0;
    for (int rep = 0; rep < N_RANDOM; rep++) {
        rnd r;
        rnd_iter(&r, (size_t)pick(1, 30), (size_t)pick(1, 40), rep % 8 == 7);
        mp_swap_link_t link;
        rnd_link(&link);
        mp_swap_item_t *items = malloc((4 * r.it.n_vars + 1) * sizeof *items);
        uint64_t *load = malloc(r.it.n_ops * sizeof *load), opeak;
        size_t peak_op;
        MP_CHECK_OK(mp_swap_load(&r.it, load, &opeak, &peak_op));
        /* The empty plan: mp_swap_load's curve, no stall. */
        mp_swap_plan_t p = plan_of(items, 0);
        mp_swap_sim_t s;
        if (MP_CHECK_OK(mp_swap_simulate(&r.it, &link, &p, 0, &s))) {
            bool ok = s.stall_ns == 0 && s.peak == opeak && s.original_peak == opeak;
            for (size_t j = 0; j < r.it.n_ops; j++) ok &= s.op_load[j] == load[j];
            if (!MP_CHECK(ok)) printf("  empty plan differs, rep %d\n", rep);
            mp_swap_sim_free(&s);
        }
        /* The smallest load any plan can have: what each op accesses. */
        uint64_t floor_load = 0;
        for (size_t j = 0; j < r.it.n_ops; j++) {
            uint64_t a = 0;
            for (size_t k = 0; k < r.it.op[j].n; k++) a += r.it.var[r.it.access[r.it.op[j].first + k].var].size;
            if (a > floor_load) floor_load = a;
        }
        for (int pass = 0; pass < 2; pass++) {
            p = plan_of(items, rnd_plan(&r, pass ? 80 : 30, NULL, items));
            MP_CHECK_OK(mp_swap_plan_validate(&r.it, &p));
            mp_swap_sim_t free_run, lim_run;
            if (!MP_CHECK_OK(mp_swap_simulate(&r.it, &link, &p, 0, &free_run))) continue;
            sims++;
            if (!check_sim(&r, &link, &p, 0, &free_run)) bad++;
            stalled += free_run.stall_ns > 0;
            uint64_t limit = pick(floor_load, opeak);
            if (MP_CHECK_OK(mp_swap_simulate(&r.it, &link, &p, limit, &lim_run))) {
                sims++, limited++;
                met += lim_run.limit_met;
                if (!check_sim(&r, &link, &p, limit, &lim_run)) bad++;
                mp_swap_sim_free(&lim_run);
            }
            /* A limit at the original peak never binds. */
            if (MP_CHECK_OK(mp_swap_simulate(&r.it, &link, &p, opeak, &lim_run))) {
                if (!MP_CHECK(same_times(&free_run, &lim_run, p.n) && lim_run.limit_met))
                    printf("  limit = original peak changed the run, rep %d\n", rep);
                mp_swap_sim_free(&lim_run);
            }
            mp_swap_sim_free(&free_run);
        }
        /* Candidates form a valid plan; load_min lies between the floor and
         * the peak, and no plan of candidate variables goes below it. */
        mp_swap_item_t *cand;
        size_t nc;
        uint64_t min_size = pick(0, 1) ? 0 : pick(1, 1000), lm = 0;
        bool *is_cand = calloc(r.it.n_vars, sizeof *is_cand);
        MP_CHECK_OK(mp_swap_load_min(&r.it, min_size, &lm));
        MP_CHECK(floor_load <= lm && lm <= opeak);
        if (MP_CHECK_OK(mp_swap_candidates(&r.it, min_size, &cand, &nc))) {
            p = plan_of(cand, nc);
            MP_CHECK_OK(mp_swap_plan_validate(&r.it, &p));
            for (size_t i = 0; i < nc; i++) MP_CHECK(r.it.var[cand[i].var].size >= min_size);
            for (size_t i = 0; i < nc; i++) is_cand[cand[i].var] = true;
            free(cand);
            p = plan_of(items, rnd_plan(&r, 100, is_cand, items));
            if (MP_CHECK_OK(mp_swap_simulate(&r.it, &link, &p, 0, &s))) {
                MP_CHECK(s.peak >= lm);
                mp_swap_sim_free(&s);
            }
        }
        free(items), free(load), free(is_cand);
        rnd_free(&r);
    }
    MP_CHECK_EQ_U64(bad, 0);
    printf("random: %ld simulations (%ld with a limit, %ld met; %ld stalled without), %ld failed\n",
           sims, limited, met, stalled, bad);
}

int main(void) {
    test_hide();
    test_stall();
    test_queues();
    test_in_queue();
    test_wrap();
    test_limit();
    test_limit_unmet();
    test_candidates();
    test_validate();
    test_random();
    return mp_test_finish("swap_sim");
}
