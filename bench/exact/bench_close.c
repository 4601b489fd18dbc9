/* bench_close.c -- an offline attempt to close a DSA instance from the plan
 * side: find a plan at a target capacity (default the max-load bound, where
 * a plan proves itself optimal), for minutes rather than seconds
 * (bench/exact/close; findings in docs/exact-close.md).
 *
 * Two phases, both on the exact decision search of src/exact/search.c
 * (called, not copied):
 *  1. decide: the whole problem at the load bound, restarts over static
 *     orders with doubling node budgets (--decide seconds);
 *  2. repair: a plan "in + out" where the in-buffers form a valid plan
 *     inside [0, target) and the out-buffers are left over; the penalty is
 *     the out-buffers' area (size times lifetime).  A move takes an
 *     out-buffer o and a window of sections around its lifetime (widened at
 *     random) and a random band of addresses; the in-buffers living
 *     entirely inside the window whose addresses meet the band are lifted
 *     out (at most a random 12..96 of them: the band shrinks until so),
 *     every other in-buffer meeting the window stays as a fixed obstacle
 *     (the search's fixed offsets), and the search decides whether o and
 *     the lifted buffers fit at the target.  Node budgets escalate while
 *     no move helps.  If not, one or two lifted buffers
 *     of smaller total area are ejected (they go out) and the search tries
 *     again; a success lowers the penalty.  Some moves only re-pack a window
 *     (plateau moves).  Penalty zero is a plan at the target.
 * Whenever the penalty falls, the out-buffers are first-fitted over the
 * in-plan (largest first) to a whole plan; the smallest whole plan is
 * checked with mp_plan_check and written with mp_plan_write_csv.
 * Progress goes to stderr.
 *
 *   bench_close [--target BYTES | --above PCT] [--time S] [--decide S]
 *               [--auto S] [--start PLAN.csv] [--seed N] [--out PLAN.csv]
 *               [--step PCT] FILE.csv
 *
 * --above PCT: the target is the load bound plus PCT percent (rounded down
 * to the unit); --step PCT: descend -- the first target is one step below
 * the start plan when that is higher, and after reaching a target go on
 * one step lower (PCT percent of the load bound, at least one unit; never
 * below the bound).  A target far below the start leaves many buffers out
 * at once, which the repair handles badly (docs/exact-close.md).
 * Exit status: 0 when the last target was reached, 3 when not, 1 on an
 * error (named on stderr), 2 on bad usage. */
#include "exact/exact.h"
#include "memplan_fixed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct closer {
    const mp_buffer_t *b;      /* normalized */
    const mp_buffer_t *b0;     /* as read (for the checker and the writer) */
    size_t n, ns;
    uint32_t *sf, *sl;         /* each buffer's sections */
    uint64_t cap, load, unit;
    uint64_t *off;             /* offsets of the in-buffers */
    bool *in;
    double pen;                /* area of the out-buffers */
    uint64_t rng;
    /* scratch for one decision */
    mp_buffer_t *c;
    uint64_t *cfix, *loc;
    size_t *sub;
    bool *lift;
    /* the best whole plan */
    uint64_t *best, best_fp;
    const char *out_path;
    double t0;
    uint64_t nodes, moves, inserts, ejects, repacks;
    uint64_t since;            /* moves since the penalty last fell */
    uint64_t answers[3], lifted;   /* decisions by answer; lifted buffers in all */
} closer;

static uint64_t rnd(closer *z) {
    z->rng ^= z->rng >> 12, z->rng ^= z->rng << 25, z->rng ^= z->rng >> 27;
    return z->rng * 2685821657736338717ull;
}

static double area(const closer *z, size_t i) {
    return (double)z->b[i].size * (double)(z->b[i].last - z->b[i].first + 1);
}

static bool conflict(const mp_buffer_t *x, const mp_buffer_t *y) {
    return x->first <= y->last && y->first <= x->last;
}

static void die(const char *what) {
    fprintf(stderr, "bench_close: %s: %s\n", what, mp_last_error());
    exit(1);
}

/* Decides whether the m buffers sub[] fit below z->cap, the lifted ones
 * (lift[k]) free and the others fixed at z->off; on YES their new offsets
 * go to z->loc[k].  Each independent part is searched with up to three
 * static orders drawn at random, budget nodes each. */
static mp__xanswer decide(closer *z, size_t m, uint64_t budget) {
    for (size_t k = 0; k < m; k++) {
        z->c[k] = z->b[z->sub[k]];
        z->cfix[k] = z->lift[k] ? MP_NOT_FIXED : z->off[z->sub[k]];
        z->loc[k] = z->cfix[k];
    }
    size_t *idx = NULL, *at = NULL, np = 0;
    if (mp__xsplit(z->c, m, &idx, &at, &np) != MP_OK) die("split");
    mp__xanswer res = MP__X_YES;
    for (size_t q = 0; q < np && res == MP__X_YES; q++) {
        size_t pn = at[q + 1] - at[q], nfree = 0;
        for (size_t k = 0; k < pn; k++) nfree += z->lift[idx[at[q] + k]];
        if (!nfree) continue;
        mp__xpart p;
        mp__xsearch *ws;
        if (mp__xpart_build(z->c, idx + at[q], pn, &p) != MP_OK || mp__xpart_fix(&p, z->cfix) != MP_OK ||
            mp__xsearch_new(&p, &ws) != MP_OK)
            die("search");
        uint32_t *order = malloc(pn * sizeof *order);
        double *sc = malloc(3 * pn * sizeof *sc);
        uint64_t *off = malloc(pn * sizeof *off);
        if (!order || !sc || !off) die("memory");
        mp__xanswer a = MP__X_UNKNOWN;
        mp__xlimit lim = {0};
        for (int r = 0; r < 3 && a == MP__X_UNKNOWN; r++) {
            mp__xorder(&p, (unsigned)(rnd(z) % 64), mp__xsearch_weights(ws), order, sc);
            mp__xsearch_run(ws, order, z->cap, budget, true, &lim, &a, off);
        }
        z->nodes += lim.nodes;
        if (a == MP__X_YES)
            for (size_t k = 0; k < pn; k++)
                if (z->lift[idx[at[q] + k]]) z->loc[idx[at[q] + k]] = off[k];
        res = a;
        mp__xsearch_free(ws);
        free(order), free(sc), free(off);
        mp__xpart_free(&p);
    }
    free(idx), free(at);
    z->answers[res]++;
    for (size_t k = 0; k < m; k++) z->lifted += z->lift[k];
    return res;
}

/* The whole plan: the in-plan, and the out-buffers first-fitted over it,
 * largest first.  Returns its footprint; off receives it. */
static uint64_t complete(closer *z, uint64_t *off) {
    size_t n = z->n, no = 0;
    size_t *outs = z->sub;     /* scratch */
    bool *placed = z->lift;
    for (size_t i = 0; i < n; i++) {
        placed[i] = z->in[i];
        off[i] = z->off[i];
        if (!z->in[i]) outs[no++] = i;
    }
    for (size_t a = 1; a < no; a++) /* insertion sort by size, decreasing */
        for (size_t k = a; k > 0 && z->b[outs[k]].size > z->b[outs[k - 1]].size; k--) {
            size_t t = outs[k];
            outs[k] = outs[k - 1], outs[k - 1] = t;
        }
    for (size_t k = 0; k < no; k++) {
        size_t i = outs[k];
        uint64_t al = z->b[i].align ? z->b[i].align : 1, at = 0;
        for (bool moved = true; moved;) { /* lowest offset clear of every placed conflict */
            moved = false;
            for (size_t j = 0; j < n; j++)
                if (placed[j] && conflict(&z->b[i], &z->b[j]) && off[j] < at + z->b[i].size &&
                    at < off[j] + z->b[j].size)
                    at = mp__align_up(off[j] + z->b[j].size, al), moved = true;
        }
        off[i] = at, placed[i] = true;
    }
    return mp__footprint(z->b, n, off);
}

/* Keeps the whole plan if it is the smallest yet: checked, then written. */
static void offer_whole(closer *z, const char *why) {
    uint64_t *off = malloc(z->n * sizeof *off);
    if (!off) die("memory");
    uint64_t fp = complete(z, off);
    if (fp < z->best_fp) {
        mp_plan_t pl = {.n = z->n, .offset = off, .footprint = fp, .strategy = "close"};
        if (mp_plan_check(z->b0, z->n, &pl, NULL) != MP_OK) die("checker refuses a plan");
        memcpy(z->best, off, z->n * sizeof *off);
        z->best_fp = fp;
        if (z->out_path && mp_plan_write_csv(z->out_path, z->b0, z->n, &pl) != MP_OK) die("write");
        fprintf(stderr, "%8.1f s  best whole plan %llu (%+.3f%% of the load bound) [%s]\n",
                mp__xnow() - z->t0, (unsigned long long)fp,
                100.0 * ((double)fp - (double)z->load) / (double)z->load, why);
    }
    free(off);
}

/* The in/out split of a whole valid plan at the target. */
static void split_at_target(closer *z, const uint64_t *plan) {
    z->pen = 0;
    for (size_t i = 0; i < z->n; i++) {
        z->in[i] = plan[i] + z->b[i].size <= z->cap;
        z->off[i] = plan[i];
        if (!z->in[i]) z->pen += area(z, i);
    }
}

static size_t count_out(const closer *z) {
    size_t k = 0;
    for (size_t i = 0; i < z->n; i++) k += !z->in[i];
    return k;
}

/* Collects a window: the in-buffers living inside sections [sa, sz] whose
 * addresses meet the band [lo, hi) are lifted, with the extra buffer o
 * (SIZE_MAX: none); every other in-buffer meeting the window stays, fixed.
 * Fills sub[0..m) and lift[]; returns m, and the lifted count in *nl. */
static size_t gather(closer *z, uint32_t sa, uint32_t sz, uint64_t lo, uint64_t hi, size_t o,
                     size_t *nl) {
    size_t m = 0;
    *nl = 0;
    for (size_t i = 0; i < z->n; i++)
        if ((z->in[i] && z->sf[i] <= sz && z->sl[i] >= sa) || i == o) {
            z->sub[m] = i;
            z->lift[m] = i == o || (z->sf[i] >= sa && z->sl[i] <= sz && z->off[i] < hi &&
                                    lo < z->off[i] + z->b[i].size);
            *nl += z->lift[m++];
        }
    return m;
}

/* A window around o's lifetime (widened at random) and a band of
 * addresses holding at most a random 12..96 lifted buffers: *sa, *sz, *lo,
 * *hi.  Then gathers it (as gather). */
static size_t window(closer *z, size_t o, uint32_t *sa, uint32_t *sz, uint64_t *lo, uint64_t *hi,
                     size_t *nl) {
    static const uint32_t widen[] = {0, 1, 2, 3, 5, 8, 13, 21, 34, 55};
    uint32_t el = widen[rnd(z) % 10], er = widen[rnd(z) % 10];
    *sa = z->sf[o] > el ? z->sf[o] - el : 0;
    *sz = z->sl[o] + er < z->ns ? z->sl[o] + er : (uint32_t)z->ns - 1;
    size_t most = (size_t)12 << (rnd(z) % 4);
    uint64_t h = z->cap >> (rnd(z) % 3);
    for (;;) {
        uint64_t room = z->cap > h ? z->cap - h : 0;
        *lo = room ? rnd(z) % (room + 1) : 0, *hi = *lo + h;
        size_t m = gather(z, *sa, *sz, *lo, *hi, o, nl);
        if (*nl <= most || h <= z->b[o].size) return m;
        h /= 2;
    }
}

static void apply(closer *z, size_t m) {
    for (size_t k = 0; k < m; k++)
        if (z->lift[k]) z->off[z->sub[k]] = z->loc[k], z->in[z->sub[k]] = true;
}

/* Removes sub[e] from sub[0..m) (it is ejected); returns m - 1. */
static size_t drop(closer *z, size_t m, size_t e) {
    for (size_t k = e; k + 1 < m; k++) z->sub[k] = z->sub[k + 1], z->lift[k] = z->lift[k + 1];
    return m - 1;
}

/* One repair move (see the top of the file).  *better when the penalty fell. */
static void move(closer *z, bool *better) {
    *better = false;
    size_t no = count_out(z), pick = (size_t)(rnd(z) % no), o = 0, nl;
    for (size_t i = 0; i < z->n; i++)
        if (!z->in[i] && pick-- == 0) {
            o = i;
            break;
        }
    uint32_t sa, sz;
    /* node budgets of 1000..16000, up to 256 000 the longer no move helped */
    unsigned stuck = z->since / 2000 < 4 ? (unsigned)(z->since / 2000) : 4;
    uint64_t lo, hi, budget = (uint64_t)1000 << (rnd(z) % (5 + stuck));
    z->moves++;
    size_t m = window(z, o, &sa, &sz, &lo, &hi, &nl);
    if (rnd(z) % 5 == 0) { /* a plateau move: re-pack the window without o */
        m = gather(z, sa, sz, lo, hi, SIZE_MAX, &nl);
        if (decide(z, m, budget) == MP__X_YES) apply(z, m), z->repacks++;
        return;
    }
    if (decide(z, m, budget) == MP__X_YES) {
        apply(z, m);
        z->pen -= area(z, o), z->inserts++, *better = true;
        return;
    }
    /* eject one or two lifted buffers of smaller total area, at random */
    double ao = area(z, o);
    for (int tries = 0; tries < 2; tries++) {
        size_t lifted = 0;
        for (size_t k = 0; k < m; k++) lifted += z->lift[k] && z->sub[k] != o;
        if (!lifted) return;
        size_t e1 = SIZE_MAX, e2 = SIZE_MAX, r1 = (size_t)(rnd(z) % lifted), r2 = (size_t)(rnd(z) % lifted);
        bool two = rnd(z) % 3 == 0 && lifted > 1;
        for (size_t k = 0, c = 0; k < m; k++)
            if (z->lift[k] && z->sub[k] != o) {
                if (c == r1) e1 = k;
                if (two && c == r2 && r2 != r1) e2 = k;
                c++;
            }
        double ae = area(z, z->sub[e1]) + (e2 != SIZE_MAX ? area(z, z->sub[e2]) : 0);
        if (ae >= ao) continue;
        size_t g1 = z->sub[e1], g2 = e2 != SIZE_MAX ? z->sub[e2] : SIZE_MAX;
        size_t m2 = m;
        if (e2 != SIZE_MAX && e2 > e1) m2 = drop(z, drop(z, m2, e2), e1);
        else if (e2 != SIZE_MAX) m2 = drop(z, drop(z, m2, e1), e2);
        else m2 = drop(z, m2, e1);
        z->in[g1] = false;
        if (g2 != SIZE_MAX) z->in[g2] = false;
        if (decide(z, m2, budget) == MP__X_YES) {
            apply(z, m2);
            z->pen += ae - ao, z->ejects++, *better = true;
            return;
        }
        z->in[g1] = true;
        if (g2 != SIZE_MAX) z->in[g2] = true;
        m = gather(z, sa, sz, lo, hi, o, &nl); /* the window again, for the next try */
    }
}

/* Phase 1: the whole problem at the load bound (where a plan closes the
 * instance), whatever the target of the repair.  True when a plan was
 * found (it becomes the in-plan, penalty zero). */
static bool decide_whole(closer *z, double seconds) {
    double end = mp__xnow() + seconds;
    uint64_t cap = z->cap;
    z->cap = z->load;
    uint64_t budget_last = 0;
    for (uint64_t budget = 20000; mp__xnow() < end; budget = budget < 5120000 ? budget * 2 : budget) {
        budget_last = budget;
        for (size_t i = 0; i < z->n; i++) z->sub[i] = i, z->lift[i] = true;
        mp__xanswer a = decide(z, z->n, budget);
        if (a == MP__X_NO)
            fprintf(stderr, "%8.1f s  the search refutes the load bound %llu\n", mp__xnow() - z->t0,
                    (unsigned long long)z->cap);
        if (a == MP__X_YES) apply(z, z->n), z->pen = 0;
        if (a != MP__X_UNKNOWN) {
            z->cap = a == MP__X_YES ? z->load : cap;
            return a == MP__X_YES;
        }
    }
    fprintf(stderr, "%8.1f s  decide: no answer at the load bound (last budget %llu nodes)\n",
            mp__xnow() - z->t0, (unsigned long long)budget_last);
    z->cap = cap;
    return false;
}

static uint64_t target_of(const closer *z, double pct) {
    uint64_t t = z->load + (uint64_t)((double)z->load * pct / 100.0);
    return t / z->unit * z->unit;
}

int main(int argc, char **argv) {
    double tl = 600, tdec = 60, tauto = 10, above = 0, step = 0;
    uint64_t target = 0, seed = 1;
    const char *start = NULL, *out = NULL;
    int i = 1;
    for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--time")) tl = atof(v);
        else if (!strcmp(a, "--decide")) tdec = atof(v);
        else if (!strcmp(a, "--auto")) tauto = atof(v);
        else if (!strcmp(a, "--target")) target = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--above")) above = atof(v);
        else if (!strcmp(a, "--step")) step = atof(v);
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--start")) start = v;
        else if (!strcmp(a, "--out")) out = v;
        else break;
    }
    if (i + 1 != argc) {
        fprintf(stderr, "usage: bench_close [--target BYTES | --above PCT] [--time S] [--decide S] "
                        "[--auto S] [--start PLAN.csv] [--seed N] [--out PLAN.csv] [--step PCT] FILE.csv\n");
        return 2;
    }
    closer z = {.rng = seed * 0x9E3779B97F4A7C15ull + 7, .out_path = out, .t0 = mp__xnow()};
    mp_buffer_t *b0, *b;
    mp_exact_opts_t xo;
    if (mp_records_read(argv[i], &b0, &z.n) != MP_OK || mp__xprepare(b0, z.n, NULL, &xo, &b) != MP_OK)
        die(argv[i]);
    size_t n = z.n;
    z.b = b, z.b0 = b0;
    if (mp__offsets_bound(b, n, &z.load) != MP_OK) die("bound");
    size_t *all = malloc(n * sizeof *all);
    if (!all) die("memory");
    for (size_t k = 0; k < n; k++) all[k] = k;
    mp__xpart w;
    if (mp__xpart_build(b, all, n, &w) != MP_OK) die("sections");
    z.sf = w.sf, z.sl = w.sl, z.ns = w.ns, z.unit = w.unit ? w.unit : 1;
    z.cap = target ? target : target_of(&z, above);
    if (z.cap < z.load) z.cap = z.load;
    z.off = calloc(n, sizeof *z.off), z.in = calloc(n, sizeof *z.in);
    z.c = malloc(n * sizeof *z.c), z.cfix = malloc(n * sizeof *z.cfix), z.loc = malloc(n * sizeof *z.loc);
    z.sub = malloc(n * sizeof *z.sub), z.lift = malloc(n * sizeof *z.lift);
    z.best = malloc(n * sizeof *z.best);
    if (!z.off || !z.in || !z.c || !z.cfix || !z.loc || !z.sub || !z.lift || !z.best) die("memory");
    /* the start: a plan file, or anytime auto */
    mp_plan_t pl;
    if (start) {
        if (mp_plan_read_csv(start, b0, n, &pl) != MP_OK) die(start);
    } else {
        mp_auto_opts_t ao = {.time_limit = tauto, .threads = 1};
        if (mp_plan_auto_opts(b0, n, &ao, &pl, NULL) != MP_OK) die("auto");
    }
    if (mp_plan_check(b0, n, &pl, NULL) != MP_OK) die("the start plan");
    memcpy(z.best, pl.offset, n * sizeof *z.best);
    z.best_fp = pl.footprint;
    if (out && mp_plan_write_csv(out, b0, n, &pl) != MP_OK) die("write");
    if (step > 0) { /* descend from the start: the first target just below it, if higher */
        uint64_t down = (uint64_t)((double)z.load * step / 100.0) / z.unit * z.unit;
        down = down ? down : z.unit;
        if (pl.footprint > z.cap + down) z.cap = pl.footprint - down;
    }
    fprintf(stderr, "%s: %zu buffers, %zu sections, load bound %llu, start %llu (%s), target %llu (%+.3f%%)\n",
            argv[i], n, z.ns, (unsigned long long)z.load, (unsigned long long)pl.footprint,
            start ? start : "anytime auto", (unsigned long long)z.cap,
            100.0 * ((double)z.cap - (double)z.load) / (double)z.load);
    double end = z.t0 + tl;
    bool reached = tdec > 0 && decide_whole(&z, tdec < tl ? tdec : tl);
    if (reached) {
        fprintf(stderr, "%8.1f s  decide: a plan at the target\n", mp__xnow() - z.t0);
        offer_whole(&z, "decide");
    }
    split_at_target(&z, z.best);
    fprintf(stderr, "%8.1f s  repair from the best plan: %zu buffers above the target\n",
            mp__xnow() - z.t0, count_out(&z));
    double last_report = mp__xnow(), report_every = tl > 300 ? 30 : 10;
    while (mp__xnow() < end) {
        if (count_out(&z) == 0) {
            offer_whole(&z, "repair");
            fprintf(stderr, "%8.1f s  a plan at the target %llu\n", mp__xnow() - z.t0,
                    (unsigned long long)z.cap);
            if (step <= 0 || z.cap <= z.load) break;
            uint64_t down = (uint64_t)((double)z.load * step / 100.0) / z.unit * z.unit;
            z.cap = z.cap - z.load > down ? z.cap - (down ? down : z.unit) : z.load;
            split_at_target(&z, z.best);
            z.since = 0;
            fprintf(stderr, "%8.1f s  next target %llu (%+.3f%%): %zu buffers above it\n",
                    mp__xnow() - z.t0, (unsigned long long)z.cap,
                    100.0 * ((double)z.cap - (double)z.load) / (double)z.load, count_out(&z));
            continue;
        }
        bool better;
        move(&z, &better);
        z.since = better ? 0 : z.since + 1;
        if (better) offer_whole(&z, "repair");
        if (mp__xnow() - last_report > report_every) {
            last_report = mp__xnow();
            fprintf(stderr, "%8.1f s  %zu out, penalty %.4g, moves %llu (inserts %llu, ejections %llu, "
                            "re-packs %llu), nodes %llu; decisions yes %llu no %llu unknown %llu, %.1f lifted each\n",
                    mp__xnow() - z.t0, count_out(&z), z.pen, (unsigned long long)z.moves,
                    (unsigned long long)z.inserts, (unsigned long long)z.ejects,
                    (unsigned long long)z.repacks, (unsigned long long)z.nodes,
                    (unsigned long long)z.answers[MP__X_YES], (unsigned long long)z.answers[MP__X_NO],
                    (unsigned long long)z.answers[MP__X_UNKNOWN],
                    (double)z.lifted / (double)(z.answers[0] + z.answers[1] + z.answers[2] + 1));
        }
    }
    printf("%s: load bound %llu, best plan %llu (%+.3f%%), target %llu %s, %.1f s, %llu nodes, "
           "%llu moves\n",
           argv[i], (unsigned long long)z.load, (unsigned long long)z.best_fp,
           100.0 * ((double)z.best_fp - (double)z.load) / (double)z.load, (unsigned long long)z.cap,
           z.best_fp <= z.cap ? "reached" : "not reached", mp__xnow() - z.t0,
           (unsigned long long)z.nodes, (unsigned long long)z.moves);
    mp_plan_free(&pl);
    mp__xpart_free(&w);
    free(all), free(z.off), free(z.in), free(z.c), free(z.cfix), free(z.loc), free(z.sub), free(z.lift);
    free(z.best), free(b0), free(b);
    return z.best_fp <= z.cap ? 0 : 3;
}
