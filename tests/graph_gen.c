/* graph_gen.c -- random memplan-graph/1 graphs as JSON, the O(n^2) oracle
 * that judges graph plans by definition, and checked helpers for graph
 * plans (see graph_gen.h). */
#include "graph_gen.h"

#include "gen.h"
#include "harness.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE ((size_t)-1)

typedef struct gt {
    uint64_t numel;
    bool f16;
    int kind;          /* 0 input, 1 activation, 2 parameter, 3 output */
    size_t alias;      /* root, or NONE */
    size_t producer;
} gt;

typedef struct gn {
    const char *op;
    size_t in[3], nin, out[2], nout;
    bool cap;
} gn;

typedef struct sbuf {
    char *s;
    size_t len, cap;
    bool bad;
} sbuf;

static void put(sbuf *b, const char *fmt, ...) {
    if (b->bad) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->bad = true;
            return;
        }
        if (b->len + (size_t)k < b->cap) {
            b->len += (size_t)k;
            return;
        }
        size_t nc = 2 * b->cap + (size_t)k + 64;
        char *ns = realloc(b->s, nc);
        if (!ns) {
            b->bad = true;
            return;
        }
        b->s = ns;
        b->cap = nc;
    }
}

static uint64_t below(uint64_t *s, uint64_t m) { return m ? mp_gen_next(s) % m : 0; }

static size_t root(const gt *t, size_t i) { return t[i].alias == NONE ? i : t[i].alias; }

/* An input for a new op: mostly one of the latest tensors, sometimes any
 * (parameters included). */
static size_t pick(uint64_t *s, const gt *t, size_t nt) {
    if (below(s, 4)) {
        size_t back = 1 + below(s, 6 < nt ? 6 : nt);
        size_t i = nt - back;
        if (t[i].kind != 2) return i;
    }
    return below(s, nt);
}

static uint64_t some_numel(uint64_t *s) {
    static const uint64_t sizes[] = {16, 32, 64, 128, 256, 512};
    return sizes[below(s, 6)];
}

char *mp_graph_gen_json(uint64_t seed, size_t n_nodes) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t cap_t = 8 + 2 * n_nodes;
    gt *t = calloc(cap_t, sizeof *t);
    gn *nd = calloc(n_nodes ? n_nodes : 1, sizeof *nd);
    size_t *order = malloc((n_nodes ? n_nodes : 1) * sizeof *order);
    bool *done = calloc(n_nodes ? n_nodes : 1, sizeof *done);
    sbuf b = {malloc(4096), 0, 4096, false};
    if (!t || !nd || !order || !done || !b.s) goto fail;
    size_t nt = 0;
    size_t n_in = 1 + below(&s, 3), n_par = below(&s, 3);
    for (size_t i = 0; i < n_in; i++) t[nt++] = (gt){some_numel(&s), false, 0, NONE, NONE};
    for (size_t i = 0; i < n_par; i++) t[nt++] = (gt){some_numel(&s), false, 2, NONE, NONE};
    for (size_t v = 0; v < n_nodes; v++) {
        gn *x = &nd[v];
        uint64_t r = below(&s, 100);
        size_t a = pick(&s, t, nt);
        x->in[x->nin++] = a;
        gt out = {t[root(t, a)].numel, t[root(t, a)].f16, 1, NONE, v};
        if (r < 30) {
            x->op = "relu";
        } else if (r < 42) {
            x->op = r < 37 ? "add" : "mul";
            size_t c = pick(&s, t, nt);
            if (c != a) x->in[x->nin++] = c;
        } else if (r < 52 && t[root(t, a)].kind != 2) {
            x->op = "flatten";
            out.alias = root(t, a);
        } else if (r < 62) {
            x->op = "scale";
            x->cap = true;
        } else {
            x->op = "mix";
            for (size_t k = below(&s, 3); k > 0; k--) {
                size_t c = pick(&s, t, nt);
                bool dup = false;
                for (size_t j = 0; j < x->nin; j++) dup |= x->in[j] == c;
                if (!dup) x->in[x->nin++] = c;
            }
            if (below(&s, 5)) out.numel = some_numel(&s);
            out.f16 = below(&s, 20) == 0;
            if (below(&s, 4) == 0) {
                x->out[x->nout++] = nt;
                t[nt++] = (gt){some_numel(&s), false, 1, NONE, v};
            }
        }
        x->out[x->nout++] = nt;
        t[nt++] = out;
    }
    /* Graph outputs: the last tensor made, sometimes one more (maybe a view). */
    size_t outs[2], n_out = 0;
    outs[n_out++] = nt - 1;
    if (below(&s, 2) && nt - 1 > n_in + n_par) {
        size_t o = n_in + n_par + below(&s, nt - 1 - n_in - n_par);
        outs[n_out++] = o;
    }
    for (size_t k = 0; k < n_out; k++) t[root(t, outs[k])].kind = 3;
    for (size_t i = 0; i < nt; i++)
        if (t[i].alias != NONE) t[i].kind = t[t[i].alias].kind;
    /* A random topological order: any ready node next. */
    for (size_t step = 0; step < n_nodes; step++) {
        size_t ready = 0, chosen = NONE;
        for (size_t v = 0; v < n_nodes; v++) {
            if (done[v]) continue;
            bool ok = true;
            for (size_t i = 0; i < nd[v].nin && ok; i++) {
                size_t p1 = t[nd[v].in[i]].producer, p2 = t[root(t, nd[v].in[i])].producer;
                ok = (p1 == NONE || done[p1]) && (p2 == NONE || done[p2]);
            }
            if (ok && below(&s, ++ready) == 0) chosen = v; /* reservoir choice */
        }
        done[chosen] = true;
        order[step] = chosen;
    }
    static const char *const kinds[] = {"input", "activation", "parameter", "output"};
    put(&b, "{\"format\":\"memplan-graph/1\",\"model\":{\"name\":\"gen%llu\"},\"tensors\":[\n",
        (unsigned long long)seed);
    for (size_t i = 0; i < nt; i++) {
        const gt *x = &t[i];
        uint64_t bytes = x->alias != NONE ? 0 : x->numel * (x->f16 ? 2 : 4);
        const char *dt = t[root(t, i)].f16 ? "float16" : "float32";
        put(&b, "%s{\"id\":%zu,\"name\":\"t%zu\",", i ? ",\n" : "", i, i);
        if (x->alias != NONE)
            put(&b, "\"shape\":[1,%llu],", (unsigned long long)x->numel);
        else
            put(&b, "\"shape\":[%llu],", (unsigned long long)x->numel);
        put(&b, "\"dtype\":\"%s\",\"bytes\":%llu,\"kind\":\"%s\"", dt, (unsigned long long)bytes,
            kinds[x->kind]);
        if (x->alias != NONE) put(&b, ",\"alias_of\":%zu}", x->alias);
        else put(&b, ",\"alias_of\":null%s}", x->kind == 2 ? ",\"trainable\":true" : "");
    }
    put(&b, "],\n\"nodes\":[\n");
    for (size_t v = 0; v < n_nodes; v++) {
        const gn *x = &nd[v];
        put(&b, "%s{\"id\":%zu,\"name\":\"n%zu\",\"op\":\"%s\",\"inputs\":[", v ? ",\n" : "", v, v,
            x->op);
        for (size_t i = 0; i < x->nin; i++) put(&b, "%s%zu", i ? "," : "", x->in[i]);
        put(&b, "],\"outputs\":[");
        for (size_t i = 0; i < x->nout; i++) put(&b, "%s%zu", i ? "," : "", x->out[i]);
        put(&b, "],\"attrs\":{\"inplace_capable\":%s}}", x->cap ? "true" : "false");
    }
    put(&b, "],\n\"order\":[");
    for (size_t i = 0; i < n_nodes; i++) put(&b, "%s%zu", i ? "," : "", order[i]);
    put(&b, "],\n\"outputs\":[");
    for (size_t k = 0; k < n_out; k++) put(&b, "%s%zu", k ? "," : "", outs[k]);
    put(&b, "],\"loss\":null}\n");
    if (b.bad) goto fail;
    free(t), free(nd), free(order), free(done);
    return b.s;
fail:
    free(t), free(nd), free(order), free(done), free(b.s);
    return NULL;
}

/* ---- the oracle --------------------------------------------------------- */

/* Marks u and its ancestors as ancestors of v. */
static void dfs(const mp_graph_t *g, mp_graph_oracle_t *o, size_t v, size_t u) {
    if (o->anc[v * o->n + u]) return;
    o->anc[v * o->n + u] = true;
    const mp_graph_node_t *nd = mp_graph_node(g, u);
    for (size_t i = 0; i < nd->n_inputs; i++) {
        const mp_graph_tensor_t *t = mp_graph_tensor(g, nd->inputs[i]);
        if (t->producer != MP_GRAPH_NONE) dfs(g, o, v, t->producer);
        size_t rp = mp_graph_tensor(g, t->root)->producer;
        if (rp != MP_GRAPH_NONE) dfs(g, o, v, rp);
    }
}

bool mp_graph_oracle_init(const mp_graph_t *g, mp_graph_oracle_t *o) {
    o->n = mp_graph_node_count(g);
    o->nt = mp_graph_tensor_count(g);
    o->anc = calloc(o->n * o->n + 1, 1);
    o->touch = calloc(o->nt * o->n + 1, 1);
    o->first = malloc((o->nt + 1) * sizeof *o->first);
    o->last = malloc((o->nt + 1) * sizeof *o->last);
    if (!o->anc || !o->touch || !o->first || !o->last) return false;
    for (size_t v = 0; v < o->n; v++) dfs(g, o, v, v);
    for (size_t t = 0; t < o->nt; t++) {
        const mp_graph_tensor_t *x = mp_graph_tensor(g, t);
        if (x->producer != MP_GRAPH_NONE && x->root == t) o->touch[t * o->n + x->producer] = true;
    }
    for (size_t v = 0; v < o->n; v++) {
        const mp_graph_node_t *nd = mp_graph_node(g, v);
        for (size_t i = 0; i < nd->n_inputs; i++)
            o->touch[mp_graph_tensor(g, nd->inputs[i])->root * o->n + v] = true;
    }
    mp_graph_lifetimes(g, o->first, o->last);
    return true;
}

void mp_graph_oracle_free(mp_graph_oracle_t *o) { free(o->anc), free(o->touch), free(o->first), free(o->last); }

void mp_graph_oracle_judge(const mp_graph_t *g, const mp_graph_oracle_t *o, const mp_graph_plan_t *p, bool *seq,
                      bool *par) {
    *seq = *par = true;
    for (size_t a = 0; a < o->nt; a++) {
        const mp_graph_tensor_t *ta = mp_graph_tensor(g, a);
        if (ta->root != a || p->storage[a] == MP_GRAPH_NONE) continue;
        uint64_t alo = 2 * o->first[a] + (p->inplace_of[a] != MP_GRAPH_NONE);
        uint64_t ahi = 2 * o->last[a] > alo ? 2 * o->last[a] : alo;
        uint64_t aoff = p->offset[p->storage[a]];
        for (size_t b = 0; b < o->nt; b++) {
            const mp_graph_tensor_t *tb = mp_graph_tensor(g, b);
            if (b == a || tb->root != b || p->storage[b] == MP_GRAPH_NONE) continue;
            uint64_t blo = 2 * o->first[b] + (p->inplace_of[b] != MP_GRAPH_NONE);
            uint64_t bhi = 2 * o->last[b] > blo ? 2 * o->last[b] : blo;
            uint64_t boff = p->offset[p->storage[b]];
            if (!(aoff < boff + tb->bytes && boff < aoff + ta->bytes)) continue;
            if (alo <= bhi && blo <= ahi) {
                *seq = *par = false;
                continue;
            }
            if (alo > blo) continue; /* judge each pair once: a earlier */
            for (size_t u = 0; u < o->n; u++)
                if (o->touch[a * o->n + u] &&
                    (tb->producer == MP_GRAPH_NONE || !o->anc[tb->producer * o->n + u]))
                    *par = false;
        }
    }
}

/* ---- checked helpers ---------------------------------------------------- */

mp_graph_t *mp_test_graph_parse(const char *json) {
    mp_graph_t *g = NULL;
    if (!MP_CHECK_OK(mp_graph_parse(json, strlen(json), "test.json", &g))) {
        fprintf(stderr, "  %s\n", mp_last_error());
        return NULL;
    }
    return g;
}

uint64_t mp_test_share(const mp_graph_t *g, int inplace, int shr, mp_parallel_mode par, int incl,
                       mp_graph_plan_t *p) {
    mp_share_opts_t o = {.inplace = inplace, .share = shr, .parallel = par,
                         .include_persistent = incl};
    if (!MP_CHECK_OK(mp_graph_share(g, &o, p))) {
        fprintf(stderr, "  %s\n", mp_last_error());
        return 0;
    }
    bool ok = MP_CHECK_OK(mp_graph_plan_check(g, p, MP_PARALLEL_ANY));
    if (par != MP_PARALLEL_ANY) ok &= MP_CHECK_OK(mp_graph_plan_check(g, p, par));
    if (!ok) fprintf(stderr, "  %s (%s)\n", mp_last_error(), mp_graph_model_name(g));
    return p->footprint;
}

uint64_t mp_test_naive_bytes(const mp_graph_t *g, int incl) {
    mp_buffer_t *b;
    size_t n;
    uint64_t sum = 0;
    if (!MP_CHECK_OK(mp_graph_records(g, incl, &b, &n))) return 0;
    for (size_t i = 0; i < n; i++) sum += b[i].size;
    free(b);
    return sum;
}

uint64_t mp_test_records_bound(const mp_graph_t *g, const mp_graph_plan_t *p) {
    mp_buffer_t *b;
    size_t n;
    mp_plan_t pl;
    mp_bounds_t bd = {0};
    if (!MP_CHECK_OK(mp_graph_plan_records(g, p, &b, &n, &pl))) return 0;
    if (n) MP_CHECK_OK(mp_bounds_compute(b, n, &bd));
    free(b);
    mp_plan_free(&pl);
    return bd.offsets;
}
