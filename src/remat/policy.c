/* policy.c -- the policies' names and the mirror-count policies of chen2016
 * that need no search: none, explicit segments (Alg. 1), sqrt(n) equal
 * segments (sec. 4.3), drop cheap ops (sec. 4.2) and the recursion of
 * sec. 4.4.  Each is a pure function of the context and its parameter; the
 * segment boundaries are the context's cuts (remat.c), whose crossing
 * values are what a boundary keeps.  O(forward nodes) each, plus the
 * schedule of mirror.c. */
#include "remat_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"none", "segments=LIST", "sqrt", "cheap", "budget",
                                    "logn[=K]", "revolve[=S]", "optimal[=BYTES]"};

const char *mp_remat_policy_name(size_t i) { return i < sizeof names / sizeof *names ? names[i] : NULL; }

static mp_status finish(const mp_remat_t *r, uint32_t *m, const char *name, mp_remat_plan_t *out) {
    if (!m) return MP__NOMEM();
    mp_status s = mp__remat_plan_from_mirror(r, m, name, out);
    free(m);
    return s;
}

/* Parses a non-negative decimal integer filling all of [s, end). */
static bool parse_u64(const char *s, const char *end, uint64_t *v) {
    if (s == end) return false;
    uint64_t x = 0;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9') return false;
        if (x > (UINT64_MAX - (uint64_t)(*p - '0')) / 10) return false;
        x = x * 10 + (uint64_t)(*p - '0');
    }
    *v = x;
    return true;
}

/* Alg. 1: keep the outputs of the listed forward steps, drop the rest. */
static mp_status policy_segments(const mp_remat_t *r, const char *list, mp_remat_plan_t *out) {
    uint32_t *m = mp__remat_mirror_new(r, 1);
    if (!m) return MP__NOMEM();
    const char *p = list;
    size_t count = 0;
    while (*p) {
        const char *e = strchr(p, ',');
        if (!e) e = p + strlen(p);
        uint64_t step;
        if (!parse_u64(p, e, &step)) {
            free(m);
            return mp__err(MP_EINVAL, "policy 'segments=%s': '%.*s' is not a step number", list, (int)(e - p), p);
        }
        if (step >= r->n_fwd) {
            free(m);
            return mp__err(MP_EINVAL, "policy 'segments=%s': step %llu is out of range (the forward pass has steps 0..%zu)",
                           list, (unsigned long long)step, r->n_fwd ? r->n_fwd - 1 : 0);
        }
        m[r->fwd_order[step]] = 0;
        count++;
        p = *e ? e + 1 : e;
        if (*e && !*p) {
            free(m);
            return mp__err(MP_EINVAL, "policy 'segments=%s': the list ends with a comma", list);
        }
    }
    if (!count) {
        free(m);
        return mp__err(MP_EINVAL, "policy 'segments=': give the forward steps to keep, e.g. segments=3,7,11");
    }
    return finish(r, m, "segments", out);
}

/* sec. 4.3: about sqrt(n) segments of equal length over the chain's n
 * stages (n = cuts + 1): keep every boundary at a multiple of n/S. */
static mp_status policy_sqrt(const mp_remat_t *r, mp_remat_plan_t *out) {
    uint32_t *m = mp__remat_mirror_new(r, r->n_cuts ? 1 : 0);
    if (!m) return MP__NOMEM();
    size_t n = r->n_cuts + 1, segs = (size_t)llround(sqrt((double)n));
    if (segs < 1) segs = 1;
    for (size_t j = 1; j < segs; j++) {
        size_t stage_end = (size_t)llround((double)n * (double)j / (double)segs);   /* 1..n-1 */
        if (stage_end >= 1 && stage_end <= r->n_cuts) mp__remat_keep_cut(r, stage_end - 1, m);
    }
    return finish(r, m, "sqrt", out);
}

/* sec. 4.2: keep what is costly to compute (conv, linear, matmul), the
 * elementwise joins (add, sub, mul, concat: dropping them would chain
 * recomputation through every residual block) and unknown ops; drop
 * normalisation, activations, pooling, dropout, softmax and views. */
static bool is_cheap(const char *op) {
    static const char *const cheap[] = {"batchnorm2d", "layernorm", "relu", "relu6", "sigmoid", "tanh",
                                        "silu", "hardswish", "hardsigmoid", "gelu", "dropout", "identity",
                                        "maxpool2d", "avgpool2d", "adaptive_avgpool2d", "softmax",
                                        "interpolate"};
    const mp_op_info_t *info = mp_op_info(op);
    if (!info->known) return false;
    if (info->view) return true;
    for (size_t i = 0; i < sizeof cheap / sizeof *cheap; i++)
        if (!strcmp(info->name, cheap[i])) return true;
    return !strcmp(info->name, "reshape") || !strcmp(info->name, "flatten") || !strcmp(info->name, "permute") ||
           !strcmp(info->name, "transpose") || !strcmp(info->name, "expand") || !strcmp(info->name, "chunk") ||
           !strcmp(info->name, "getitem") || !strcmp(info->name, "stochastic_depth");
}

static mp_status policy_cheap(const mp_remat_t *r, mp_remat_plan_t *out) {
    uint32_t *m = mp__remat_mirror_new(r, 0);
    if (!m) return MP__NOMEM();
    for (size_t v = 0; v < r->n_fwd; v++) m[v] = is_cheap(mp_graph_node(r->train, v)->op);
    return finish(r, m, "cheap", out);
}

/* sec. 4.4: k boundaries per level.  Range (lo, hi) of cut indices at
 * depth d keeps k evenly spaced interior cuts at level d (m = d: kept at
 * the d-th recomputation) and recurses into the k+1 parts at depth d+1; a
 * part with no interior cut is recomputed at its depth.  For n uniform
 * stages and k = 1 the depth is about log2 n: log n kept values, log n
 * extra forward passes, g(n) = k log_{k+1} n of eq. (3). */
typedef struct lctx {
    const mp_remat_t *r;
    uint32_t *m, *cut_level;
    size_t k;
} lctx;

static size_t stage_end_step(const mp_remat_t *r, size_t cut_index_plus1) {
    return cut_index_plus1 > r->n_cuts ? r->n_fwd : r->cut[cut_index_plus1 - 1] + 1;
}

/* lo, hi: cut indices + 1 (0 = the start, n_cuts + 1 = the end). */
static void logn_range(lctx *c, size_t lo, size_t hi, uint32_t depth) {
    size_t interior = hi - lo - 1;
    if (interior == 0) {
        size_t from = lo == 0 ? 0 : c->r->cut[lo - 1] + 1, to = stage_end_step(c->r, hi);
        for (size_t s = from; s < to; s++) c->m[c->r->fwd_order[s]] = depth;
        return;
    }
    size_t kk = c->k < interior ? c->k : interior, prev = lo;
    for (size_t j = 1; j <= kk; j++) {
        size_t at = lo + (size_t)llround((double)(hi - lo) * (double)j / (double)(kk + 1));
        if (at <= prev) at = prev + 1;
        if (at >= hi) break;
        c->cut_level[at - 1] = depth;
        logn_range(c, prev, at, depth + 1);
        prev = at;
    }
    logn_range(c, prev, hi, depth + 1);
}

static mp_status policy_logn(const mp_remat_t *r, size_t k, mp_remat_plan_t *out) {
    lctx c = {r, mp__remat_mirror_new(r, 0), malloc((r->n_cuts + 1) * sizeof(uint32_t)), k};
    if (!c.m || !c.cut_level) {
        free(c.m);
        free(c.cut_level);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < r->n_cuts; i++) c.cut_level[i] = UINT32_MAX;
    logn_range(&c, 0, r->n_cuts + 1, 0);
    for (size_t i = 0; i < r->n_cuts; i++) {
        if (c.cut_level[i] == UINT32_MAX) continue;
        for (size_t q = r->cross_start[i]; q < r->cross_start[i + 1]; q++) c.m[r->cross[q]] = c.cut_level[i];
    }
    free(c.cut_level);
    char name[32];
    snprintf(name, sizeof name, "logn=%zu", k);
    return finish(r, c.m, name, out);
}

/* "NAME" or "NAME=VALUE": the value after '=' when policy starts with
 * name followed by '=' (NULL when no value), *match whether it names it. */
static const char *param(const char *policy, const char *name, bool *match) {
    size_t n = strlen(name);
    *match = !strncmp(policy, name, n) && (policy[n] == 0 || policy[n] == '=');
    return *match && policy[n] == '=' ? policy + n + 1 : NULL;
}

static mp_status number_param(const char *policy, const char *v, uint64_t lo, uint64_t *out) {
    if (!parse_u64(v, v + strlen(v), out) || *out < lo)
        return mp__err(MP_EINVAL, "policy '%s': '%s' is not a whole number >= %llu", policy, v, (unsigned long long)lo);
    return MP_OK;
}

mp_status mp_remat_policy(const mp_remat_t *r, const char *policy, mp_remat_plan_t *out) {
    if (!out) return mp__err(MP_EINVAL, "mp_remat_policy: NULL out");
    memset(out, 0, sizeof *out);
    if (!r || !policy) return mp__err(MP_EINVAL, "mp_remat_policy: NULL context or policy");
    bool is;
    const char *v;
    uint64_t x = 0;
    mp_status s;
    if (!strcmp(policy, "none")) return finish(r, mp__remat_mirror_new(r, 0), "none", out);
    if (!strcmp(policy, "sqrt")) return policy_sqrt(r, out);
    if (!strcmp(policy, "cheap")) return policy_cheap(r, out);
    if (!strcmp(policy, "budget")) return mp__remat_policy_budget(r, out);
    if ((v = param(policy, "segments", &is)), is) {
        if (!v) return mp__err(MP_EINVAL, "policy 'segments': give the forward steps to keep, e.g. segments=3,7,11");
        return policy_segments(r, v, out);
    }
    if ((v = param(policy, "logn", &is)), is) {
        if (v && (s = number_param(policy, v, 1, &x))) return s;
        return policy_logn(r, v ? (size_t)x : 1, out);
    }
    if ((v = param(policy, "revolve", &is)), is) {
        if (v && (s = number_param(policy, v, 1, &x))) return s;
        return mp__remat_policy_revolve(r, v ? (size_t)x : 0, out);
    }
    if ((v = param(policy, "optimal", &is)), is) {
        if (v && (s = number_param(policy, v, 1, &x))) return s;
        return mp__remat_policy_optimal(r, v ? x : 0, 0, out);
    }
    return mp__err(MP_EINVAL, "unknown policy '%s' (none, segments=LIST, sqrt, cheap, budget, logn[=K], revolve[=S], optimal[=BYTES])",
                   policy);
}
