/* test_order.c -- peak live bytes of a graph in a given order, and the
 * memory-aware order search (src/graph/order*.c).
 *
 *   - hand-made graphs whose peaks and optimal orders are derived below by
 *     hand (two branches with big transients, Sethi-Ullman's case, a chain,
 *     every lifetime rule: aliases, graph outputs, persistent tensors,
 *     inputs nobody reads), and the errors of mp_graph_peak;
 *   - random DAGs of up to 9 nodes (JSON written here) against an
 *     exhaustive oracle over all topological orders: mp_graph_peak equals
 *     the oracle on every order, the search returns a topological order
 *     whose peak is the one reported, between the optimum and the given;
 *   - every corpus graph: mp_graph_peak equals the offsets bound of the
 *     records (the graph's records, and records this file derives for a
 *     random topological order); the search returns a valid order no worse
 *     than the given, whose records are planned and checked.  Prints a
 *     table (not asserted).
 * The oracles here follow docs/graph-format.md directly and share no code
 * with the library.  Runs from tests/ (ctest's working directory). */
#include "graph_gen.h"
#include "harness.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- random numbers ---------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545f4914f6cdd1dull;
}
static size_t rnd_below(size_t n) { return (size_t)(rnd() % n); }

/* ---- graphs as JSON ---------------------------------------------------- */

enum { MAXT = 64, MAXN = 16, MAXIN = 6, MAXOUT = 4 };

static const char *const kind_name[] = {"input", "activation", "parameter", "gradient", "output"};

typedef struct gspec {
    size_t nt, nn, ngo;
    uint64_t bytes[MAXT];  /* int8 elements: bytes = the one dimension */
    int kind[MAXT];        /* mp_tensor_kind */
    int alias[MAXT];       /* -1 or the tensor viewed */
    size_t nin[MAXN], in[MAXN][MAXIN], nout[MAXN], out[MAXN][MAXOUT];
    size_t order[MAXN];
    size_t go[8];          /* graph outputs */
} gspec;

static void put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#include <stdarg.h>
static void put(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(*buf + *len, *cap - *len, fmt, ap);
        va_end(ap);
        if (k >= 0 && (size_t)k < *cap - *len) {
            *len += (size_t)k;
            return;
        }
        *cap *= 2;
        *buf = realloc(*buf, *cap);
        if (!*buf) abort();
    }
}

static mp_graph_t *make_graph(const gspec *s) {
    size_t cap = 4096, len = 0;
    char *b = malloc(cap);
    if (!b) abort();
    put(&b, &len, &cap, "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"t\"},\"tensors\":[");
    for (size_t t = 0; t < s->nt; t++) {
        uint64_t dim = s->alias[t] >= 0 ? 1 : s->bytes[t];
        put(&b, &len, &cap,
            "%s{\"id\":%zu,\"name\":\"t%zu\",\"shape\":[%llu],\"dtype\":\"int8\",\"bytes\":%llu,"
            "\"kind\":\"%s\",\"alias_of\":",
            t ? "," : "", t, t, (unsigned long long)dim,
            (unsigned long long)(s->alias[t] >= 0 ? 0 : s->bytes[t]), kind_name[s->kind[t]]);
        if (s->alias[t] >= 0)
            put(&b, &len, &cap, "%d}", s->alias[t]);
        else
            put(&b, &len, &cap, "null}");
    }
    put(&b, &len, &cap, "],\"nodes\":[");
    for (size_t v = 0; v < s->nn; v++) {
        put(&b, &len, &cap, "%s{\"id\":%zu,\"name\":\"n%zu\",\"op\":\"f\",\"inputs\":[", v ? "," : "",
            v, v);
        for (size_t k = 0; k < s->nin[v]; k++) put(&b, &len, &cap, "%s%zu", k ? "," : "", s->in[v][k]);
        put(&b, &len, &cap, "],\"outputs\":[");
        for (size_t k = 0; k < s->nout[v]; k++)
            put(&b, &len, &cap, "%s%zu", k ? "," : "", s->out[v][k]);
        put(&b, &len, &cap, "]}");
    }
    put(&b, &len, &cap, "],\"order\":[");
    for (size_t k = 0; k < s->nn; k++) put(&b, &len, &cap, "%s%zu", k ? "," : "", s->order[k]);
    put(&b, &len, &cap, "],\"outputs\":[");
    for (size_t k = 0; k < s->ngo; k++) put(&b, &len, &cap, "%s%zu", k ? "," : "", s->go[k]);
    put(&b, &len, &cap, "],\"loss\":null}");
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_parse(b, len, "generated.json", &g))) fprintf(stderr, "%s\n", b);
    free(b);
    return g;
}

/* Builders of hand-made specs. */
static size_t add_tensor(gspec *s, uint64_t bytes, int kind, int alias) {
    s->bytes[s->nt] = bytes;
    s->kind[s->nt] = kind;
    s->alias[s->nt] = alias;
    return s->nt++;
}
static void add_node(gspec *s, const size_t *in, size_t nin, const size_t *out, size_t nout) {
    size_t v = s->nn++;
    s->nin[v] = nin;
    s->nout[v] = nout;
    memcpy(s->in[v], in, nin * sizeof *in);
    memcpy(s->out[v], out, nout * sizeof *out);
    s->order[v] = v;
}

/* ---- oracles (docs/graph-format.md, "How ... lifetimes are counted") ------ */

/* The records of g run in order, derived from the rules one by one
 * through the public accessors.  *b malloc'ed. */
static size_t oracle_records(const mp_graph_t *g, const size_t *order, int incl, mp_buffer_t **out) {
    size_t n = mp_graph_node_count(g), nt = mp_graph_tensor_count(g), no;
    const size_t *go = mp_graph_outputs(g, &no);
    size_t *step = malloc((n ? n : 1) * sizeof *step);
    uint64_t *first = calloc(nt ? nt : 1, sizeof *first), *last = calloc(nt ? nt : 1, sizeof *last);
    mp_buffer_t *b = malloc((nt ? nt : 1) * sizeof *b);
    if (!step || !first || !last || !b) abort();
    for (size_t s = 0; s < n; s++) step[order[s]] = s;
    /* Rule 3: from the producer's step (0 for no producer). */
    for (size_t t = 0; t < nt; t++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, t);
        first[t] = last[t] = x->producer == MP_GRAPH_NONE ? 0 : step[x->producer];
    }
    /* Rule 4: to the last step reading it or an alias of it. */
    for (size_t v = 0; v < n; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t r = nd->inputs[k];
            while (mp_graph_tensor(g, r)->alias_of != MP_GRAPH_NONE) r = mp_graph_tensor(g, r)->alias_of;
            if (step[v] > last[r]) last[r] = step[v];
        }
    }
    for (size_t k = 0; k < no; k++) {
        size_t r = go[k];
        while (mp_graph_tensor(g, r)->alias_of != MP_GRAPH_NONE) r = mp_graph_tensor(g, r)->alias_of;
        last[r] = n ? n - 1 : 0;
    }
    size_t m = 0;
    for (size_t t = 0; t < nt && n; t++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, t);
        bool pers = x->kind == MP_TENSOR_PARAMETER || x->kind == MP_TENSOR_GRADIENT;
        if (x->alias_of != MP_GRAPH_NONE || !x->bytes || (pers && !incl)) continue;
        /* Rule 5: persistent tensors over the whole run. */
        b[m++] = (mp_buffer_t){.id = t, .first = pers ? 0 : first[t], .last = pers ? n - 1 : last[t],
                               .size = x->bytes};
    }
    free(step);
    free(first);
    free(last);
    *out = b;
    return m;
}

/* Peak by summing the records live at each step: O(records x steps). */
static uint64_t oracle_peak(const mp_graph_t *g, const size_t *order, int incl) {
    mp_buffer_t *b;
    size_t m = oracle_records(g, order, incl, &b), n = mp_graph_node_count(g);
    uint64_t best = 0;
    for (size_t s = 0; s < n; s++) {
        uint64_t live = 0;
        for (size_t k = 0; k < m; k++)
            if (b[k].first <= s && s <= b[k].last) live += b[k].size;
        if (live > best) best = live;
    }
    free(b);
    return best;
}

/* The offsets bound of the oracle's records for order. */
static uint64_t records_bound(const mp_graph_t *g, const size_t *order, int incl) {
    mp_buffer_t *b;
    size_t m = oracle_records(g, order, incl, &b);
    mp_bounds_t bd = {0};
    if (m) MP_CHECK_OK(mp_bounds_compute(b, m, &bd));
    free(b);
    return bd.offsets;
}

/* A bound no order beats.  At node v's step, a tensor is live in every
 * topological order when its producer is v or an ancestor of v (or it has
 * none) and it is read by v or a descendant of v, or is a graph output, or
 * v makes or reads it.  The bound is the max over v of the bytes of those
 * tensors (recorded roots, no persistent ones).  Ancestor and descendant
 * sets are bit matrices: O(n^2 / 64 + n (tensors + reads)). */
static uint64_t cut_bound(const mp_graph_t *g) {
    size_t n = mp_graph_node_count(g), nt = mp_graph_tensor_count(g), no, norder;
    const size_t *go = mp_graph_outputs(g, &no), *order = mp_graph_order(g, &norder);
    size_t words = (n + 63) / 64;
    uint64_t *anc = calloc(n * words + 1, 8), *desc = calloc(n * words + 1, 8);
    size_t *roff = calloc(nt + 1, sizeof *roff), *rd = NULL, *fill = calloc(nt + 1, sizeof *fill);
    bool *out = calloc(nt ? nt : 1, 1);
    if (!anc || !desc || !roff || !fill || !out) abort();
#define BIT(m, v, u) ((m)[(v) * words + (u) / 64] >> ((u) % 64) & 1)
    for (size_t s = 0; s < n; s++) { /* ancestors, in the graph's order */
        size_t v = order[s];
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t p = mp_graph_tensor(g, nd->inputs[k])->producer;
            if (p == MP_GRAPH_NONE) continue;
            for (size_t w = 0; w < words; w++) anc[v * words + w] |= anc[p * words + w];
            anc[v * words + p / 64] |= 1ull << (p % 64);
        }
    }
    for (size_t v = 0; v < n; v++) /* descendants: the transpose */
        for (size_t u = 0; u < n; u++)
            if (BIT(anc, v, u)) desc[u * words + v / 64] |= 1ull << (v % 64);
    /* Readers of each root (through any alias). */
    for (size_t v = 0; v < n; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++) roff[mp_graph_tensor(g, nd->inputs[k])->root + 1]++;
    }
    for (size_t t = 0; t < nt; t++) roff[t + 1] += roff[t];
    rd = malloc((roff[nt] ? roff[nt] : 1) * sizeof *rd);
    if (!rd) abort();
    for (size_t v = 0; v < n; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t r = mp_graph_tensor(g, nd->inputs[k])->root;
            rd[roff[r] + fill[r]++] = v;
        }
    }
    for (size_t k = 0; k < no; k++) out[mp_graph_tensor(g, go[k])->root] = true;
    /* The recorded roots, gathered once. */
    size_t *tr = malloc((nt ? nt : 1) * sizeof *tr), ntr = 0;
    if (!tr) abort();
    for (size_t r = 0; r < nt; r++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, r);
        if (x->alias_of == MP_GRAPH_NONE && x->bytes && x->kind != MP_TENSOR_PARAMETER &&
            x->kind != MP_TENSOR_GRADIENT)
            tr[ntr++] = r;
    }
    uint64_t best = 0;
    for (size_t v = 0; v < n; v++) {
        uint64_t sum = 0;
        for (size_t i = 0; i < ntr; i++) {
            size_t r = tr[i];
            const mp_graph_tensor_t *x = mp_graph_tensor(g, r);
            size_t p = x->producer;
            if (p != MP_GRAPH_NONE && p != v && !BIT(anc, v, p)) continue;
            bool live = out[r] || p == v;
            for (size_t k = roff[r]; k < roff[r + 1] && !live; k++)
                live = rd[k] == v || BIT(desc, v, rd[k]);
            if (live) sum += x->bytes;
        }
        if (sum > best) best = sum;
    }
    free(tr);
#undef BIT
    free(anc);
    free(desc);
    free(roff);
    free(rd);
    free(fill);
    free(out);
    return best;
}

/* Is order a permutation of the nodes running every producer of a tensor
 * read before its reader (the loader's rule)? */
static bool is_topological(const mp_graph_t *g, const size_t *order) {
    size_t n = mp_graph_node_count(g);
    size_t *step = malloc((n ? n : 1) * sizeof *step);
    bool ok = true;
    for (size_t v = 0; v < n; v++) step[v] = MP_GRAPH_NONE;
    for (size_t s = 0; s < n && ok; s++) {
        ok = order[s] < n && step[order[s]] == MP_GRAPH_NONE;
        if (ok) step[order[s]] = s;
    }
    for (size_t v = 0; v < n && ok; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++) {
            size_t p = mp_graph_tensor(g, nd->inputs[k])->producer;
            if (p != MP_GRAPH_NONE && step[p] >= step[v]) ok = false;
        }
    }
    free(step);
    return ok;
}

/* A random topological order (Kahn's algorithm, random ready node), with
 * readers indexed by tensor: O(n + reads). */
static void random_topo(const mp_graph_t *g, size_t *order) {
    size_t n = mp_graph_node_count(g), nt = mp_graph_tensor_count(g);
    size_t *indeg = calloc(n ? n : 1, sizeof *indeg), *ready = malloc((n ? n : 1) * sizeof *ready);
    size_t *off = calloc(nt + 1, sizeof *off), *fill = calloc(nt + 1, sizeof *fill), *rd;
    if (!indeg || !ready || !off || !fill) abort();
    for (size_t v = 0; v < n; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++) {
            off[nd->inputs[k] + 1]++;
            if (mp_graph_tensor(g, nd->inputs[k])->producer != MP_GRAPH_NONE) indeg[v]++;
        }
    }
    for (size_t t = 0; t < nt; t++) off[t + 1] += off[t];
    rd = malloc((off[nt] ? off[nt] : 1) * sizeof *rd);
    if (!rd) abort();
    for (size_t v = 0; v < n; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++) rd[off[nd->inputs[k]] + fill[nd->inputs[k]]++] = v;
    }
    size_t nr = 0;
    for (size_t v = 0; v < n; v++)
        if (!indeg[v]) ready[nr++] = v;
    for (size_t s = 0; s < n; s++) {
        size_t k = rnd_below(nr), v = ready[k];
        ready[k] = ready[--nr];
        order[s] = v;
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t o = 0; o < nd->n_outputs; o++) {
            size_t t = nd->outputs[o];
            for (size_t q = off[t]; q < off[t + 1]; q++)
                if (!--indeg[rd[q]]) ready[nr++] = rd[q];
        }
    }
    free(indeg);
    free(ready);
    free(off);
    free(fill);
    free(rd);
}

/* ---- exhaustive oracle over topological orders ------------------------- */

typedef struct enum_state {
    const mp_graph_t *g;
    int incl;
    size_t n, *order, *missing; /* missing[v]: producers of v's inputs not yet placed */
    bool *placed;
    uint64_t best, orders;
    size_t checked;             /* orders also checked through mp_graph_peak */
} enum_state;

static void enumerate(enum_state *e, size_t k) {
    if (k == e->n) {
        uint64_t p = oracle_peak(e->g, e->order, e->incl);
        if (p < e->best) e->best = p;
        e->orders++;
        if (e->checked < 1000) {
            uint64_t lib = 0;
            e->checked++;
            MP_CHECK_OK(mp_graph_peak(e->g, e->order, e->incl, &lib));
            MP_CHECK_EQ_U64(lib, p);
        }
        return;
    }
    for (size_t v = 0; v < e->n; v++) {
        if (e->placed[v] || e->missing[v]) continue;
        e->placed[v] = true;
        e->order[k] = v;
        for (size_t w = 0; w < e->n; w++) {
            const mp_graph_node_t *rd = mp_graph_node(e->g, w);
            for (size_t q = 0; q < rd->n_inputs; q++)
                if (mp_graph_tensor(e->g, rd->inputs[q])->producer == v) e->missing[w]--;
        }
        enumerate(e, k + 1);
        for (size_t w = 0; w < e->n; w++) {
            const mp_graph_node_t *rd = mp_graph_node(e->g, w);
            for (size_t q = 0; q < rd->n_inputs; q++)
                if (mp_graph_tensor(e->g, rd->inputs[q])->producer == v) e->missing[w]++;
        }
        e->placed[v] = false;
    }
}

/* The least peak over all topological orders of g. */
static uint64_t optimum(const mp_graph_t *g, int incl, uint64_t *orders) {
    enum_state e = {.g = g, .incl = incl, .n = mp_graph_node_count(g), .best = UINT64_MAX};
    e.order = malloc((e.n ? e.n : 1) * sizeof *e.order);
    e.missing = calloc(e.n ? e.n : 1, sizeof *e.missing);
    e.placed = calloc(e.n ? e.n : 1, sizeof *e.placed);
    if (!e.order || !e.missing || !e.placed) abort();
    for (size_t v = 0; v < e.n; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t k = 0; k < nd->n_inputs; k++)
            if (mp_graph_tensor(g, nd->inputs[k])->producer != MP_GRAPH_NONE) e.missing[v]++;
    }
    enumerate(&e, 0);
    free(e.order);
    free(e.missing);
    free(e.placed);
    if (orders) *orders = e.orders;
    return e.best;
}

/* Runs the search and checks what holds for every graph: the given peak is
 * mp_graph_peak's, the order returned is topological, its peak (by the
 * oracle, or mp_graph_peak when slow) is the one reported, and it is no
 * worse than the given.  Returns the searched peak; order (n entries) may
 * be NULL. */
static uint64_t search_checked(const mp_graph_t *g, const mp_order_opts_t *o, bool small,
                               size_t *order_out, double *ms) {
    size_t n = mp_graph_node_count(g);
    size_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) abort();
    int incl = o ? o->include_persistent : 0;
    mp_order_report_t rep;
    uint64_t given = 0, got = 0;
    MP_CHECK_OK(mp_graph_peak(g, NULL, incl, &given));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mp_status st = mp_graph_order_search(g, o, order, &rep);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (ms) *ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    MP_CHECK_OK(st);
    MP_CHECK_EQ_U64(rep.given_peak, given);
    MP_CHECK(is_topological(g, order));
    if (small)
        got = oracle_peak(g, order, incl);
    else
        MP_CHECK_OK(mp_graph_peak(g, order, incl, &got));
    MP_CHECK_EQ_U64(got, rep.searched_peak);
    MP_CHECK(rep.searched_peak <= rep.given_peak);
    if (order_out) memcpy(order_out, order, n * sizeof *order);
    free(order);
    return rep.searched_peak;
}

/* ---- hand-made graphs --------------------------------------------------- */

/* x (10 B) feeds two branches, each a big transient (1000 B) reduced to
 * 10 B; a join reads both results and returns 5 B.  Nodes: 0 A1 (x -> tA),
 * 1 A2 (tA -> sA), 2 B1 (x -> tB), 3 B2 (tB -> sB), 4 J (sA, sB -> out).
 * Given [A1, B1, A2, B2, J]: x [0,1], tA [0,2], tB [1,3], sA [2,4],
 * sB [3,4], out [4,4]; live 1010, 2010, 2010, 1020, 25: peak 2010.
 * [A1, A2, B1, B2, J]: x [0,2], tA [0,1], sA [1,4], tB [2,3], sB [3,4]:
 * live 1010, 1020, 1020, 1020, 25: peak 1020, optimal (A2's step holds tA
 * and sA and either x or, if B1 ran, tB: at least 1020). */
static void two_branches(gspec *s, bool interleaved) {
    memset(s, 0, sizeof *s);
    size_t x = add_tensor(s, 10, MP_TENSOR_INPUT, -1);
    size_t tA = add_tensor(s, 1000, MP_TENSOR_ACTIVATION, -1), sA = add_tensor(s, 10, 1, -1);
    size_t tB = add_tensor(s, 1000, MP_TENSOR_ACTIVATION, -1), sB = add_tensor(s, 10, 1, -1);
    size_t out = add_tensor(s, 5, MP_TENSOR_OUTPUT, -1);
    add_node(s, &x, 1, &tA, 1);
    add_node(s, &tA, 1, &sA, 1);
    add_node(s, &x, 1, &tB, 1);
    add_node(s, &tB, 1, &sB, 1);
    add_node(s, (size_t[]){sA, sB}, 2, &out, 1);
    s->go[s->ngo++] = out;
    if (interleaved) memcpy(s->order, (size_t[]){0, 2, 1, 3, 4}, 5 * sizeof(size_t));
}

static void test_two_branches(void) {
    gspec s;
    two_branches(&s, true);
    mp_graph_t *g = make_graph(&s);
    if (!g) return;
    uint64_t p = 0;
    MP_CHECK_OK(mp_graph_peak(g, NULL, 0, &p));
    MP_CHECK_EQ_U64(p, 2010);
    MP_CHECK_OK(mp_graph_peak(g, (size_t[]){0, 1, 2, 3, 4}, 0, &p));
    MP_CHECK_EQ_U64(p, 1020);
    MP_CHECK_EQ_U64(optimum(g, 0, NULL), 1020);
    MP_CHECK_EQ_U64(search_checked(g, NULL, true, NULL, NULL), 1020);
    mp_graph_free(g);

    /* Already optimal: nothing to gain, the given order comes back. */
    two_branches(&s, false);
    g = make_graph(&s);
    if (!g) return;
    size_t order[5];
    MP_CHECK_EQ_U64(search_checked(g, NULL, true, order, NULL), 1020);
    MP_CHECK(!memcmp(order, (size_t[]){0, 1, 2, 3, 4}, sizeof order));
    mp_graph_free(g);
}

/* Sethi-Ullman's case: a join J reads rA (500 B) and rB (10 B).  A: a1
 * (x -> tmpA 100 B), a2 (tmpA -> rA); B: b1 (x -> tmpB 1000 B), b2
 * (tmpB -> rB).  x is 1 B, J's output 1 B.  Given A first [a1, a2, b1,
 * b2, J]: 101, 601, 1501, 1510, 511: peak 1510.  B first [b1, b2, a1, a2,
 * J]: 1001, 1011, 111, 610, 511: peak 1011.  Interleaving holds both
 * transients (>= 1100), so 1011 is optimal: the branch whose transient is
 * bigger than what it leaves must run first. */
static void test_sethi_ullman(void) {
    gspec s;
    memset(&s, 0, sizeof s);
    size_t x = add_tensor(&s, 1, MP_TENSOR_INPUT, -1);
    size_t tA = add_tensor(&s, 100, 1, -1), rA = add_tensor(&s, 500, 1, -1);
    size_t tB = add_tensor(&s, 1000, 1, -1), rB = add_tensor(&s, 10, 1, -1);
    size_t out = add_tensor(&s, 1, MP_TENSOR_OUTPUT, -1);
    add_node(&s, &x, 1, &tA, 1);
    add_node(&s, &tA, 1, &rA, 1);
    add_node(&s, &x, 1, &tB, 1);
    add_node(&s, &tB, 1, &rB, 1);
    add_node(&s, (size_t[]){rA, rB}, 2, &out, 1);
    s.go[s.ngo++] = out;
    mp_graph_t *g = make_graph(&s);
    if (!g) return;
    uint64_t p = 0;
    MP_CHECK_OK(mp_graph_peak(g, NULL, 0, &p));
    MP_CHECK_EQ_U64(p, 1510);
    MP_CHECK_EQ_U64(optimum(g, 0, NULL), 1011);
    MP_CHECK_EQ_U64(search_checked(g, NULL, true, NULL, NULL), 1011);
    mp_graph_free(g);
}

/* A chain x -> n0 -> n1 -> n2 -> n3: one topological order. */
static void test_chain(void) {
    gspec s;
    memset(&s, 0, sizeof s);
    size_t prev = add_tensor(&s, 64, MP_TENSOR_INPUT, -1);
    for (int k = 0; k < 4; k++) {
        size_t t = add_tensor(&s, 100 + 50 * (uint64_t)k, 1, -1);
        add_node(&s, &prev, 1, &t, 1);
        prev = t;
    }
    s.go[s.ngo++] = prev;
    mp_graph_t *g = make_graph(&s);
    if (!g) return;
    size_t order[4];
    /* steps: x+t1 164, t1+t2 250, t2+t3 350, t3+t4 450 */
    MP_CHECK_EQ_U64(search_checked(g, NULL, true, order, NULL), 450);
    MP_CHECK(!memcmp(order, (size_t[]){0, 1, 2, 3}, sizeof order));
    mp_graph_free(g);
}

/* Every lifetime rule at once; order [0..4], N = 5, end = 4:
 *   t0 x      input 8, read by n0 only                  -> [0,0]
 *   t1 w      parameter 100, read by n0: persistent     -> [0,4]
 *   t2 dead   input 7, read by nobody                   -> [0,0]
 *   t3 a      n0's output 16; n1 reads it, n2 reads its
 *             alias t4 (n1's output)                     -> [0,2]
 *   t4 av     alias of t3: no record
 *   t5 b      n2's output 32, read by n3                 -> [2,3]
 *   t6 g      gradient 50 produced by n2: persistent     -> [0,4]
 *   t7 c      n3's output 4; its alias t8 (n4's output)
 *             is a graph output                          -> [3,4]
 *   t8 cv     alias of t7: no record
 *   t9 z      n3's output of 0 bytes: no record
 * Live without persistent tensors: 8+7+16 = 31, 16, 16+32 = 48, 32+4 = 36,
 * 4: peak 48; with them, +150 at every step: 198. */
static void test_rules(void) {
    gspec s;
    memset(&s, 0, sizeof s);
    size_t x = add_tensor(&s, 8, MP_TENSOR_INPUT, -1), w = add_tensor(&s, 100, MP_TENSOR_PARAMETER, -1);
    add_tensor(&s, 7, MP_TENSOR_INPUT, -1);
    size_t a = add_tensor(&s, 16, 1, -1), av = add_tensor(&s, 0, 1, (int)a);
    size_t b = add_tensor(&s, 32, 1, -1), gr = add_tensor(&s, 50, MP_TENSOR_GRADIENT, -1);
    size_t c = add_tensor(&s, 4, MP_TENSOR_OUTPUT, -1), cv = add_tensor(&s, 0, MP_TENSOR_OUTPUT, (int)c);
    size_t z = add_tensor(&s, 0, 1, -1);
    add_node(&s, (size_t[]){x, w}, 2, &a, 1);
    add_node(&s, &a, 1, &av, 1);
    add_node(&s, &av, 1, (size_t[]){b, gr}, 2);
    add_node(&s, &b, 1, (size_t[]){c, z}, 2);
    add_node(&s, &c, 1, &cv, 1);
    s.go[s.ngo++] = cv;
    mp_graph_t *g = make_graph(&s);
    if (!g) return;
    uint64_t p = 0;
    MP_CHECK_OK(mp_graph_peak(g, NULL, 0, &p));
    MP_CHECK_EQ_U64(p, 48);
    MP_CHECK_OK(mp_graph_peak(g, NULL, 1, &p));
    MP_CHECK_EQ_U64(p, 198);
    for (int incl = 0; incl < 2; incl++) {
        mp_buffer_t *rec;
        size_t nrec;
        mp_bounds_t bd;
        MP_CHECK_OK(mp_graph_records(g, incl, &rec, &nrec));
        MP_CHECK_OK(mp_bounds_compute(rec, nrec, &bd));
        MP_CHECK_EQ_U64(bd.offsets, incl ? 198 : 48);
        free(rec);
        mp_order_opts_t o = {.include_persistent = incl};
        MP_CHECK_EQ_U64(search_checked(g, &o, true, NULL, NULL), incl ? 198 : 48);
    }

    /* Errors: not a permutation, unknown node, producer after reader. */
    MP_CHECK(mp_graph_peak(g, (size_t[]){0, 1, 2, 3, 3}, 0, &p) == MP_EINVAL);
    MP_CHECK(strstr(mp_last_error(), "appears twice") != NULL);
    MP_CHECK(mp_graph_peak(g, (size_t[]){0, 1, 2, 3, 9}, 0, &p) == MP_EINVAL);
    MP_CHECK(mp_graph_peak(g, (size_t[]){1, 0, 2, 3, 4}, 0, &p) == MP_EINVAL);
    MP_CHECK(strstr(mp_last_error(), "before node 0") != NULL);
    mp_graph_free(g);

    /* No nodes: peak 0, nothing to search. */
    if (!MP_CHECK_OK(mp_graph_load("graph/empty.json", &g))) return;
    MP_CHECK_OK(mp_graph_peak(g, NULL, 1, &p));
    MP_CHECK_EQ_U64(p, 0);
    mp_order_report_t rep;
    size_t dummy[1];
    MP_CHECK_OK(mp_graph_order_search(g, NULL, dummy, &rep));
    MP_CHECK_EQ_U64(rep.given_peak, 0);
    MP_CHECK_EQ_U64(rep.searched_peak, 0);
    mp_graph_free(g);
}

/* Aliases made before their roots (the loader allows it: it orders
 * producers of the tensors read, not of their roots).  Tensors: t0 x
 * input 8, t1 r 16 (Y's output), t2 a alias of r (p0's output), t3 u 4
 * (X's output), t4 v 2 (Z's output, returned).  Nodes: 0 p0 (x -> a),
 * 1 X (a -> u), 2 Y (u -> r), 3 Z (x -> v).
 * With Y reading u, X must precede Y while X reads r's memory through a:
 * the search's model (readers after the root's producer) has a cycle and
 * the given order must come back.  Order [p0, X, Y, Z]: x [0,3]; r first
 * at Y (2), read at step 1 only, so [2,2]; u [1,2]; v [3,3]: live 8,
 * 12, 28, 10: peak 28. */
static void test_alias_before_root(void) {
    gspec s;
    memset(&s, 0, sizeof s);
    size_t x = add_tensor(&s, 8, MP_TENSOR_INPUT, -1), r = add_tensor(&s, 16, 1, -1);
    size_t a = add_tensor(&s, 0, 1, (int)r), u = add_tensor(&s, 4, 1, -1);
    size_t v = add_tensor(&s, 2, MP_TENSOR_OUTPUT, -1);
    add_node(&s, &x, 1, &a, 1);
    add_node(&s, &a, 1, &u, 1);
    add_node(&s, &u, 1, &r, 1);
    add_node(&s, &x, 1, &v, 1);
    s.go[s.ngo++] = v;
    mp_graph_t *g = make_graph(&s);
    if (!g) return;
    uint64_t p = 0;
    MP_CHECK_OK(mp_graph_peak(g, NULL, 0, &p));
    MP_CHECK_EQ_U64(p, 28);
    size_t order[4];
    MP_CHECK_EQ_U64(search_checked(g, NULL, true, order, NULL), 28);
    MP_CHECK(!memcmp(order, s.order, sizeof order));
    mp_graph_free(g);

    /* Without Y reading u there is no cycle, but the given order [p0, X,
     * Y, Z] still has X read r before Y makes it: the search starts from
     * the nearest order with readers after the root's producer.  Its
     * answer must still be topological, between the optimum and the
     * given peak (search_checked and the oracle). */
    s.in[2][0] = x;
    g = make_graph(&s);
    if (!g) return;
    uint64_t opt = optimum(g, 0, NULL);
    MP_CHECK(search_checked(g, NULL, true, NULL, NULL) >= opt);
    mp_graph_free(g);
}

/* ---- random small DAGs against the exhaustive oracle --------------------- */

static uint64_t rnd_size(void) {
    return rnd_below(4) ? 1 + rnd_below(64) : 100 + rnd_below(500);
}

static void random_spec(gspec *s) {
    memset(s, 0, sizeof *s);
    size_t ninputs = 1 + rnd_below(2);
    for (size_t k = 0; k < ninputs; k++) add_tensor(s, rnd_size(), MP_TENSOR_INPUT, -1);
    if (!rnd_below(4)) add_tensor(s, rnd_size(), MP_TENSOR_INPUT, -1); /* maybe never read */
    if (rnd_below(2)) add_tensor(s, rnd_size(), MP_TENSOR_PARAMETER, -1);
    size_t nn = 1 + rnd_below(9);
    for (size_t v = 0; v < nn; v++) {
        size_t in[MAXIN], nin = 1 + rnd_below(3), out[MAXOUT], nout = 1 + rnd_below(2);
        /* Mostly recent tensors, so graphs are DNN-like and not too wide. */
        for (size_t k = 0; k < nin; k++) {
            size_t lo = s->nt > 6 && rnd_below(3) ? s->nt - 6 : 0;
            in[k] = lo + rnd_below(s->nt - lo);
            for (size_t q = 0; q < k; q++)
                if (in[q] == in[k]) in[k--] = MAXT, nin--; /* drop duplicates */
        }
        for (size_t k = 0; k < nout; k++) {
            size_t r = rnd_below(10), root = in[0];
            while (s->alias[root] >= 0) root = (size_t)s->alias[root];
            if (r == 0)
                out[k] = add_tensor(s, 0, s->kind[root], (int)root);
            else if (r == 1)
                out[k] = add_tensor(s, 0, MP_TENSOR_ACTIVATION, -1);
            else if (r == 2)
                out[k] = add_tensor(s, rnd_size(), MP_TENSOR_GRADIENT, -1);
            else
                out[k] = add_tensor(s, rnd_size(), MP_TENSOR_ACTIVATION, -1);
        }
        add_node(s, in, nin, out, nout);
    }
    size_t ngo = rnd_below(3);
    for (size_t k = 0; k < ngo; k++) {
        size_t v = rnd_below(nn);
        s->go[s->ngo++] = s->out[v][rnd_below(s->nout[v])];
    }
}

static void test_random(void) {
    size_t graphs = 0, optimal = 0;
    uint64_t total_orders = 0;
    for (int iter = 0; iter < 400; iter++) {
        gspec s;
        random_spec(&s);
        mp_graph_t *g = make_graph(&s);
        if (!g) return;
        /* A random topological order as the given one. */
        size_t order[MAXN];
        random_topo(g, order);
        memcpy(s.order, order, s.nn * sizeof *order);
        mp_graph_free(g);
        g = make_graph(&s);
        if (!g) return;
        int incl = iter % 3 == 2;
        uint64_t orders = 0, opt = optimum(g, incl, &orders);
        mp_order_opts_t o = {.include_persistent = incl, .lookahead = 1 + (size_t)iter % 4,
                             .max_passes = iter % 5 == 4 ? 1 : 0};
        uint64_t got = search_checked(g, &o, true, NULL, NULL);
        MP_CHECK(got >= opt);
        uint64_t given = 0;
        MP_CHECK_OK(mp_graph_peak(g, NULL, incl, &given));
        MP_CHECK_EQ_U64(given, oracle_peak(g, s.order, incl));
        graphs++;
        optimal += got == opt;
        total_orders += orders;
        mp_graph_free(g);
    }
    /* The shared generator's graphs (tests/graph_gen.h): views, ops with
     * several outputs, float16, random topological orders. */
    for (uint64_t seed = 1; seed <= 200; seed++) {
        char *text = mp_graph_gen_json(seed, 1 + (size_t)seed % 9);
        mp_graph_t *g = NULL;
        if (!MP_CHECK(text != NULL) ||
            !MP_CHECK_OK(mp_graph_parse(text, strlen(text), "graph_gen.json", &g))) {
            free(text);
            continue;
        }
        free(text);
        uint64_t orders = 0, opt = optimum(g, 0, &orders);
        mp_order_opts_t o = {.lookahead = 1 + (size_t)seed % 3};
        uint64_t got = search_checked(g, &o, true, NULL, NULL);
        MP_CHECK(got >= opt);
        graphs++;
        optimal += got == opt;
        total_orders += orders;
        mp_graph_free(g);
    }
    printf("random DAGs: %zu graphs, %llu topological orders enumerated, search optimal on %zu\n",
           graphs, (unsigned long long)total_orders, optimal);
}

/* ---- a large graph: scaling ------------------------------------------------ */

/* JSON of a staged multi-branch network of n nodes: B branches built
 * round-robin (so the creation order, which is the given one, keeps every
 * branch's transient alive at once); each op reads its branch's latest
 * tensor and now and then another branch's; every 64 nodes a join reads
 * all branches and every branch continues from it. */
static char *big_graph_json(size_t n, uint64_t seed) {
    enum { B = 8 };
    size_t cap = 1 << 16, len = 0, nt = 0;
    char *b = malloc(cap), *nodes = malloc(cap);
    size_t ncap = cap, nlen = 0;
    size_t last[B];
    if (!b || !nodes) abort();
    rng = seed;
    put(&b, &len, &cap, "{\"format\":\"memplan-graph/1\",\"tensors\":[");
    put(&b, &len, &cap, "{\"id\":0,\"shape\":[1024],\"dtype\":\"int8\",\"bytes\":1024,"
                        "\"kind\":\"input\",\"alias_of\":null}");
    nt = 1;
    for (size_t k = 0; k < B; k++) last[k] = 0;
    for (size_t v = 0; v < n; v++) {
        size_t out = nt++;
        uint64_t bytes = rnd_below(8) ? 1024 * (1 + rnd_below(64)) : 1048576;
        put(&b, &len, &cap, ",{\"id\":%zu,\"shape\":[%llu],\"dtype\":\"int8\",\"bytes\":%llu,"
                            "\"kind\":\"activation\",\"alias_of\":null}",
            out, (unsigned long long)bytes, (unsigned long long)bytes);
        put(&nodes, &nlen, &ncap, "%s{\"id\":%zu,\"op\":\"f\",\"inputs\":[", v ? "," : "", v);
        if (v % 64 == 63) {
            for (size_t k = 0; k < B; k++) put(&nodes, &nlen, &ncap, "%s%zu", k ? "," : "", last[k]);
            for (size_t k = 0; k < B; k++) last[k] = out;
        } else {
            size_t br = v % B, other = rnd_below(B);
            put(&nodes, &nlen, &ncap, "%zu", last[br]);
            if (!rnd_below(10) && last[other] != last[br]) put(&nodes, &nlen, &ncap, ",%zu", last[other]);
            last[br] = out;
        }
        put(&nodes, &nlen, &ncap, "],\"outputs\":[%zu]}", out);
    }
    put(&b, &len, &cap, "],\"nodes\":[%s],\"order\":[", nodes);
    for (size_t v = 0; v < n; v++) put(&b, &len, &cap, "%s%zu", v ? "," : "", v);
    put(&b, &len, &cap, "],\"outputs\":[%zu],\"loss\":null}", nt - 1);
    free(nodes);
    return b;
}

static void test_large(void) {
    char *text = big_graph_json(12288, 7);
    mp_graph_t *g = NULL;
    bool ok = MP_CHECK_OK(mp_graph_parse(text, strlen(text), "large.json", &g));
    free(text);
    if (!ok) return;
    uint64_t given = 0;
    double ms = 0;
    MP_CHECK_OK(mp_graph_peak(g, NULL, 0, &given));
    uint64_t got = search_checked(g, NULL, false, NULL, &ms);
    printf("large staged graph: %zu nodes, given %.2f MiB, searched %.2f MiB (%.1f%% less), %.1f ms\n",
           mp_graph_node_count(g), given / 1048576.0, got / 1048576.0,
           100.0 * (double)(given - got) / (double)given, ms);
    mp_graph_free(g);
}

/* ---- the corpus ------------------------------------------------------------ */

static int name_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every graph of dir; each must load (count only grows for loaded ones). */
static void corpus_dir(const char *dir, double *total_ms, size_t *count, size_t at_bound[2]) {
    DIR *d = opendir(dir);
    if (!MP_CHECK(d != NULL)) return;
    char *names[256];
    size_t nn = 0;
    struct dirent *e;
    while ((e = readdir(d)) && nn < 256) {
        size_t len = strlen(e->d_name);
        if (len > 14 && !strcmp(e->d_name + len - 14, ".graph.json.gz")) names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, nn, sizeof *names, name_cmp);
    MP_CHECK(nn > 0);
    for (size_t i = 0; i < nn; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        mp_graph_t *g;
        if (!MP_CHECK_OK(mp_graph_load(path, &g))) continue;
        size_t n = mp_graph_node_count(g), norder;
        const size_t *given = mp_graph_order(g, &norder);
        size_t *order = malloc((n ? n : 1) * sizeof *order);
        if (!order) abort();
        /* The peak is the offsets bound of the records, for the graph's
         * order (its records and the oracle's must be the same) and for a
         * random topological order (the oracle's records). */
        mp_graph_stats_t st;
        MP_CHECK_OK(mp_graph_stats(g, &st));
        uint64_t p0 = 0, p1 = 0;
        MP_CHECK_OK(mp_graph_peak(g, NULL, 0, &p0));
        MP_CHECK_OK(mp_graph_peak(g, NULL, 1, &p1));
        MP_CHECK_EQ_U64(p0, records_bound(g, given, 0));
        MP_CHECK_EQ_U64(p1, records_bound(g, given, 1));
        MP_CHECK_EQ_U64(p1, p0 + st.persistent_bytes);
        mp_buffer_t *lib, *ora;
        size_t nlib = 0, nora;
        MP_CHECK_OK(mp_graph_records(g, 0, &lib, &nlib));
        nora = oracle_records(g, given, 0, &ora);
        MP_CHECK(nlib == nora && (!nlib || !memcmp(lib, ora, nlib * sizeof *lib)));
        free(lib);
        free(ora);
        random_topo(g, order);
        MP_CHECK(is_topological(g, order));
        MP_CHECK_OK(mp_graph_peak(g, order, 0, &p0));
        MP_CHECK_EQ_U64(p0, records_bound(g, order, 0));
        /* The same order through the builder's copy of the graph: its
         * records are the library's own liveness for that order. */
        mp_graph_t *gr = NULL;
        uint64_t rand_given = 0, rand_got = 0;
        if (MP_CHECK_OK(mp_graph_with_order(g, order, &gr))) {
            MP_CHECK_OK(mp_graph_records(gr, 0, &lib, &nlib));
            mp_bounds_t bd = {0};
            if (nlib) MP_CHECK_OK(mp_bounds_compute(lib, nlib, &bd));
            MP_CHECK_EQ_U64(p0, bd.offsets);
            free(lib);
            MP_CHECK_OK(mp_graph_peak(gr, NULL, 0, &rand_given));
            MP_CHECK_EQ_U64(rand_given, p0);
            rand_got = search_checked(gr, NULL, false, NULL, NULL);
            mp_graph_free(gr);
        }

        /* The search. */
        double ms = 0;
        uint64_t base = 0;
        MP_CHECK_OK(mp_graph_peak(g, NULL, 0, &base));
        uint64_t got = search_checked(g, NULL, false, order, &ms);
        mp_buffer_t *rec;
        size_t nrec = oracle_records(g, order, 0, &rec);
        mp_bounds_t bd = {0};
        if (nrec) MP_CHECK_OK(mp_bounds_compute(rec, nrec, &bd));
        MP_CHECK_EQ_U64(bd.offsets, got);
        if (nrec) MP_CHECK(mp_test_plan(rec, nrec, "greedy-size", NULL) >= got);
        free(rec);
        uint64_t lb = cut_bound(g);
        MP_CHECK(got >= lb);
        at_bound[0] += base == lb;
        at_bound[1] += got == lb;
        printf("  %-36s %6zu %10.2f %10.2f %7.2f%% %7.1f %10.2f %10.2f %10.2f\n", names[i], n,
               base / 1048576.0, got / 1048576.0,
               base ? 100.0 * (double)(base - got) / (double)base : 0.0, ms, lb / 1048576.0,
               rand_given / 1048576.0, rand_got / 1048576.0);
        *total_ms += ms;
        ++*count;
        free(order);
        mp_graph_free(g);
    }
    for (size_t i = 0; i < nn; i++) free(names[i]);
}

static void test_corpus(void) {
    double ms = 0;
    size_t count = 0, at_bound[2] = {0, 0};
    printf("  %-36s %6s %10s %10s %8s %7s %10s %10s %10s\n", "graph", "nodes", "given MiB",
           "search MiB", "reduced", "ms", "bound MiB", "random MiB", "search MiB");
    corpus_dir("../bench/corpus/inference", &ms, &count, at_bound);
    corpus_dir("../bench/corpus/train", &ms, &count, at_bound);
    printf("corpus: %zu graphs searched in %.1f ms; at the bound (optimal): %zu given orders,\n"
           "%zu searched orders "
           "(\"bound\": what every order holds at some step; \"random\": a random topological\n"
           "order as the given one, and the search from it)\n", count, ms, at_bound[0], at_bound[1]);
}

int main(void) {
    test_two_branches();
    test_sethi_ullman();
    test_chain();
    test_rules();
    test_alias_before_root();
    test_random();
    test_large();
    test_corpus();
    return mp_test_finish("test_order");
}
