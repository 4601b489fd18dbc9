/* models.c -- chen2016's ResNet and LSTM (and a uniform chain) as forward
 * graphs made with mp_graph_builder_*; see models.h for the networks. */
#include "models.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A builder and the first error it met (every helper is a no-op after one). */
typedef struct gb {
    mp_graph_builder_t *b;
    mp_status err;
    size_t n;          /* counter for unique names */
} gb;

static void fail(gb *g, mp_status s) {
    if (!g->err) g->err = s;
}

static size_t tensor(gb *g, const char *prefix, mp_tensor_kind kind, const char *dtype,
                     const uint64_t *shape, size_t rank) {
    char name[48];
    size_t id = 0;
    if (g->err) return 0;
    snprintf(name, sizeof name, "%s%zu", prefix, g->n++);
    fail(g, mp_graph_builder_tensor(g->b, name, dtype, shape, rank, kind, MP_GRAPH_NONE, &id));
    return id;
}

static size_t param(gb *g, const uint64_t *shape, size_t rank, int trainable) {
    size_t id = tensor(g, "p", MP_TENSOR_PARAMETER, NULL, shape, rank);
    if (!g->err && !trainable) fail(g, mp_graph_builder_set_trainable(g->b, id, 0));
    return id;
}

/* op on in[0..n) with attrs a (NULL: defaults); its one output. */
static size_t op(gb *g, const char *opname, const size_t *in, size_t n, const mp_op_attrs_t *a) {
    char name[48];
    size_t out = 0;
    if (g->err) return 0;
    snprintf(name, sizeof name, "%s%zu", opname, g->n++);
    fail(g, mp_graph_builder_op(g->b, name, opname, in, n, a, 1, &out, NULL));
    return out;
}

static uint64_t dim(gb *g, size_t t, size_t i) {
    uint64_t s[MP_MAX_RANK];
    size_t r = 0;
    if (g->err) return 1;
    mp_status st = mp_graph_builder_shape(g->b, t, s, &r);
    if (st || i >= r) {
        fail(g, st ? st : MP_EINVAL);
        return 1;
    }
    return s[i];
}

static size_t conv(gb *g, size_t x, uint64_t out_ch, int64_t k, int64_t stride, int64_t pad) {
    mp_op_attrs_t a;
    mp_op_attrs_init(&a);
    a.stride[0] = a.stride[1] = stride;
    a.padding[0] = a.padding[1] = pad;
    uint64_t ws[4] = {out_ch, dim(g, x, 1), (uint64_t)k, (uint64_t)k};
    size_t w = param(g, ws, 4, 1);
    return op(g, "conv2d", (size_t[]){x, w}, 2, &a);
}

static size_t batchnorm(gb *g, size_t x) {
    uint64_t c = dim(g, x, 1);
    size_t w = param(g, &c, 1, 1), b = param(g, &c, 1, 1);
    size_t rm = param(g, &c, 1, 0), rv = param(g, &c, 1, 0);
    return op(g, "batchnorm2d", (size_t[]){x, w, b, rm, rv}, 5, NULL);
}

/* chen2016's "layer": conv-bn-relu (the example's ConvModule). */
static size_t cbr(gb *g, size_t x, uint64_t out_ch, int64_t k, int64_t stride, int64_t pad) {
    size_t y = batchnorm(g, conv(g, x, out_ch, k, stride, pad));
    return op(g, "relu", &y, 1, NULL);
}

static size_t linear(gb *g, size_t x, uint64_t out, int bias) {
    uint64_t ws[2] = {out, dim(g, x, 1)};
    size_t w = param(g, ws, 2, 1);
    if (!bias) return op(g, "linear", (size_t[]){x, w}, 2, NULL);
    size_t b = param(g, &out, 1, 1);
    return op(g, "linear", (size_t[]){x, w, b}, 3, NULL);
}

static mp_status begin(gb *g, const char *name) {
    memset(g, 0, sizeof *g);
    return g->err = mp_graph_builder_new(name, &g->b);
}

/* Finishes with outputs out[0..n) and loss (MP_GRAPH_NONE: none). */
static mp_status finish(gb *g, const size_t *outs, size_t n, size_t loss, mp_graph_t **out) {
    *out = NULL;
    for (size_t i = 0; i < n && !g->err; i++) fail(g, mp_graph_builder_set_kind(g->b, outs[i], MP_TENSOR_OUTPUT));
    if (!g->err) fail(g, mp_graph_builder_finish(g->b, NULL, outs, n, loss, out));
    mp_graph_builder_free(g->b);
    return g->err;
}

/* ---- ResNet ------------------------------------------------------------------------ */

size_t bm_resnet_units(size_t depth, size_t units[4]) {
    static const double share[4] = {3.0 / 66, 24.0 / 66, 36.0 / 66, 3.0 / 66};
    size_t U = depth > 2 ? (size_t)floor((double)(depth - 2) / 3.0 + 0.5) : 0, given = 0;
    if (U < 4) U = 4;
    double rem[4];
    for (int s = 0; s < 4; s++) {
        double q = share[s] * (double)U;
        units[s] = (size_t)floor(q);
        rem[s] = q - floor(q);
        given += units[s];
    }
    while (given < U) {   /* largest remainder first, ties to the earlier stage */
        int best = 0;
        for (int s = 1; s < 4; s++)
            if (rem[s] > rem[best]) best = s;
        units[best]++;
        rem[best] = -1.0;
        given++;
    }
    for (int s = 0; s < 4; s++)   /* at least one unit per stage, taken from the largest */
        if (units[s] == 0) {
            int big = 0;
            for (int t = 1; t < 4; t++)
                if (units[t] > units[big]) big = t;
            units[big]--;
            units[s] = 1;
        }
    return 3 * U + 2;
}

size_t bm_resnet_depth(const bm_resnet_cfg *c) {
    return 3 * (c->units[0] + c->units[1] + c->units[2] + c->units[3]) + 2;
}

mp_status bm_resnet(const bm_resnet_cfg *c, const char *name, mp_graph_t **out) {
    gb g;
    *out = NULL;
    if (begin(&g, name)) return g.err;
    uint64_t xs[4] = {c->batch, c->channels, c->hw, c->hw};
    size_t x = tensor(&g, "data", MP_TENSOR_INPUT, NULL, xs, 4);
    size_t h = cbr(&g, x, c->base, 7, 2, 3);
    mp_op_attrs_t mp;
    mp_op_attrs_init(&mp);
    mp.kernel[0] = mp.kernel[1] = 3;
    mp.stride[0] = mp.stride[1] = 2;
    mp.padding[0] = mp.padding[1] = 1;
    h = op(&g, "maxpool2d", &h, 1, &mp);
    for (int s = 0; s < 4; s++) {
        uint64_t w = c->base << s;
        for (size_t u = 0; u < c->units[s]; u++) {
            int64_t stride = (s > 0 && u == 0) ? 2 : 1;
            size_t y = cbr(&g, h, w, 1, 1, 0);
            y = cbr(&g, y, w, 3, stride, 1);
            y = cbr(&g, y, 4 * w, 1, 1, 0);
            size_t sc = u == 0 ? cbr(&g, h, 4 * w, 1, stride, 0) : h;
            h = op(&g, "add", (size_t[]){sc, y}, 2, NULL);
        }
    }
    h = op(&g, "adaptive_avgpool2d", &h, 1, NULL);
    h = op(&g, "flatten", &h, 1, NULL);
    size_t logits = linear(&g, h, c->classes, 1);
    return finish(&g, &logits, 1, MP_GRAPH_NONE, out);
}

/* ---- LSTM ---------------------------------------------------------------------------- */

mp_status bm_lstm(const bm_lstm_cfg *c, const char *name, mp_graph_t **out) {
    gb g;
    *out = NULL;
    if (c->layers == 0 || c->layers > 64 || c->steps == 0) return MP_EINVAL;
    if (begin(&g, name)) return g.err;
    const uint64_t N = c->batch, H = c->hidden;
    const int tr = !c->frozen;
    size_t hs[64], cs[64], Wi[64][4], Bi[64][4], Wh[64][4], Bh[64][4];
    uint64_t sh[2] = {N, H};
    for (size_t l = 0; l < c->layers; l++) {
        hs[l] = tensor(&g, "init_h", MP_TENSOR_INPUT, NULL, sh, 2);
        cs[l] = tensor(&g, "init_c", MP_TENSOR_INPUT, NULL, sh, 2);
        uint64_t in = l == 0 ? c->embed : H;
        for (int k = 0; k < 4; k++) {
            Wi[l][k] = param(&g, (uint64_t[]){H, in}, 2, tr);
            Bi[l][k] = param(&g, &H, 1, tr);
            Wh[l][k] = param(&g, (uint64_t[]){H, H}, 2, tr);
            Bh[l][k] = param(&g, &H, 1, tr);
        }
    }
    size_t We = param(&g, (uint64_t[]){c->embed, c->input}, 2, 1);
    size_t Wc = param(&g, (uint64_t[]){c->classes, H}, 2, tr), Bc = param(&g, &c->classes, 1, tr);
    size_t loss = MP_GRAPH_NONE;
    for (size_t t = 0; t < c->steps && !g.err; t++) {
        size_t xt = tensor(&g, "data", MP_TENSOR_INPUT, NULL, (uint64_t[]){N, c->input}, 2);
        size_t x = op(&g, "linear", (size_t[]){xt, We}, 2, NULL);   /* embedding, no bias */
        for (size_t l = 0; l < c->layers; l++) {
            size_t gate[4];
            for (int k = 0; k < 4; k++) {
                size_t i2h = op(&g, "linear", (size_t[]){x, Wi[l][k], Bi[l][k]}, 3, NULL);
                size_t h2h = op(&g, "linear", (size_t[]){hs[l], Wh[l][k], Bh[l][k]}, 3, NULL);
                gate[k] = op(&g, "add", (size_t[]){i2h, h2h}, 2, NULL);
            }
            size_t ig = op(&g, "sigmoid", &gate[0], 1, NULL);
            size_t gg = op(&g, "tanh", &gate[1], 1, NULL);
            size_t fg = op(&g, "sigmoid", &gate[2], 1, NULL);
            size_t og = op(&g, "sigmoid", &gate[3], 1, NULL);
            size_t fc = op(&g, "mul", (size_t[]){fg, cs[l]}, 2, NULL);
            size_t ic = op(&g, "mul", (size_t[]){ig, gg}, 2, NULL);
            cs[l] = op(&g, "add", (size_t[]){fc, ic}, 2, NULL);
            size_t tc = op(&g, "tanh", &cs[l], 1, NULL);
            hs[l] = op(&g, "mul", (size_t[]){og, tc}, 2, NULL);
            x = hs[l];
        }
        size_t logits = op(&g, "linear", (size_t[]){x, Wc, Bc}, 3, NULL);
        size_t target = tensor(&g, "label", MP_TENSOR_INPUT, "int64", &N, 1);
        size_t lt = op(&g, "softmax_xent", (size_t[]){logits, target}, 2, NULL);
        loss = t == 0 ? lt : op(&g, "add", (size_t[]){loss, lt}, 2, NULL);
    }
    return finish(&g, &loss, 1, loss, out);
}

/* ---- a uniform chain ------------------------------------------------------------------ */

mp_status bm_chain(size_t n, uint64_t batch, uint64_t width, mp_graph_t **out) {
    gb g;
    char name[32];
    *out = NULL;
    snprintf(name, sizeof name, "chain-%zu", n);
    if (begin(&g, name)) return g.err;
    size_t x = tensor(&g, "data", MP_TENSOR_INPUT, NULL, (uint64_t[]){batch, width}, 2);
    for (size_t i = 0; i < n; i++) x = linear(&g, x, width, 0);
    return finish(&g, &x, 1, MP_GRAPH_NONE, out);
}
