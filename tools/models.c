/* models.c -- built-in models: real networks as usage records, so the main
 * job has something real-sized to show without any input file.
 *
 * The MobileNets are built the way a TFLite graph runs them (pisarchyk2020 sec. 6,
 * Tables 1-2): 224x224x3 input, width 1.0, batch 1, float32; convolution,
 * batch norm and activation fused into one op with one output tensor; ops
 * in sequence.  As in that paper's tables the records are the intermediate
 * tensors: the graph input is not counted, the final softmax output is, and
 * the reshape before the softmax is a view (no tensor of its own).  A tensor
 * lives from the op that produces it to the last op that reads it.
 *
 * mobilenet_v1: Howard et al. 2017, Table 1.  Naive 19.248 MiB, offset
 *   bound 4.594 MiB, objects bound 4.594 MiB: the figures of pisarchyk2020.
 * mobilenet_v2: Sandler et al. 2018, Table 2 (inverted residual blocks:
 *   1x1 expand, 3x3 depthwise, 1x1 linear projection, and an add when the
 *   block keeps its shape).  Naive 26.313 MiB, offset bound 5.742 MiB,
 *   objects bound 6.604 MiB: the figures of pisarchyk2020 Tables 1-2.
 * The paper's other four models are in models_tflite.c. */
#include "models.h"

#include <stdlib.h>

size_t net_op(net *g, size_t a, size_t b, uint64_t h, uint64_t w, uint64_t ch) {
    if (g->n == g->cap) {
        size_t c = g->cap ? 2 * g->cap : 64;
        uint64_t *s = realloc(g->size, c * sizeof *s);
        if (s) g->size = s;
        size_t *l = realloc(g->last, c * sizeof *l);
        if (l) g->last = l;
        if (!s || !l) {
            g->failed = true;
            return g->n ? g->n - 1 : 0;
        }
        g->cap = c;
    }
    g->size[g->n] = h * w * ch * 4;
    g->last[g->n] = g->n;
    g->h = h;
    g->w = w;
    g->ch = ch;
    g->n++;
    net_read(g, a);
    net_read(g, b);
    return g->n - 1;
}

void net_read(net *g, size_t t) {
    if (t != NOINPUT && t < g->n && g->last[t] < g->n - 1) g->last[t] = g->n - 1;
}

mp_status net_finish(net *g, mp_buffer_t **out, size_t *n) {
    mp_buffer_t *b = g->failed || g->n < 2 ? NULL : calloc(g->n - 1, sizeof *b);
    if (b) {
        for (size_t k = 1; k < g->n; k++) b[k - 1] = (mp_buffer_t){k, k, g->last[k], g->size[k], 0};
        *out = b;
        *n = g->n - 1;
    }
    free(g->size);
    free(g->last);
    return b ? MP_OK : MP_ENOMEM;
}

/* Square shorthands for the MobileNets. */
static size_t op(net *g, size_t a, size_t b, uint64_t hw, uint64_t ch) {
    return net_op(g, a, b, hw, hw, ch);
}

static mp_status finish(net *g, mp_buffer_t **out, size_t *n) { return net_finish(g, out, n); }

/* Global average pool, 1x1 conv to 1001 classes, softmax. */
static void classifier(net *g, size_t x) {
    x = op(g, x, NOINPUT, 1, g->ch);
    x = op(g, x, NOINPUT, 1, 1001);
    op(g, x, NOINPUT, 1, 1001);
}

static mp_status mobilenet_v1(mp_buffer_t **b, size_t *n) {
    /* (stride, output channels) of each depthwise-separable block. */
    static const uint16_t blocks[13][2] = {{1, 64},  {2, 128}, {1, 128}, {2, 256}, {1, 256},
                                           {2, 512}, {1, 512}, {1, 512}, {1, 512}, {1, 512},
                                           {1, 512}, {2, 1024}, {1, 1024}};
    net g = {0};
    size_t x = op(&g, NOINPUT, NOINPUT, 224, 3);
    x = op(&g, x, NOINPUT, 112, 32);
    for (int i = 0; i < 13; i++) {
        uint64_t hw = (g.h + blocks[i][0] - 1) / blocks[i][0];
        x = op(&g, x, NOINPUT, hw, g.ch);         /* 3x3 depthwise */
        x = op(&g, x, NOINPUT, hw, blocks[i][1]); /* 1x1 pointwise */
    }
    classifier(&g, x);
    return finish(&g, b, n);
}

static mp_status mobilenet_v2(mp_buffer_t **b, size_t *n) {
    /* (expansion t, output channels c, repeats n, first stride s). */
    static const uint16_t cfg[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                       {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    net g = {0};
    size_t x = op(&g, NOINPUT, NOINPUT, 224, 3);
    x = op(&g, x, NOINPUT, 112, 32);
    for (int s = 0; s < 7; s++)
        for (int r = 0; r < cfg[s][2]; r++) {
            uint64_t stride = r ? 1 : cfg[s][3], cin = g.ch, hw = g.h;
            uint64_t out_hw = (hw + stride - 1) / stride;
            size_t y = x;
            if (cfg[s][0] != 1) y = op(&g, y, NOINPUT, hw, cin * cfg[s][0]); /* expand */
            y = op(&g, y, NOINPUT, out_hw, cin * cfg[s][0]);                 /* depthwise */
            y = op(&g, y, NOINPUT, out_hw, cfg[s][1]);                       /* project */
            if (stride == 1 && cin == cfg[s][1]) y = op(&g, x, y, out_hw, cfg[s][1]); /* add */
            x = y;
        }
    x = op(&g, x, NOINPUT, g.h, 1280);
    classifier(&g, x);
    return finish(&g, b, n);
}

static const cli_model models[] = {
    {"mobilenet_v1", "MobileNet v1 224x224, batch 1, float32, TFLite-style fused ops (30 tensors)",
     mobilenet_v1},
    {"mobilenet_v2", "MobileNet v2 224x224, batch 1, float32, TFLite-style fused ops, residual adds",
     mobilenet_v2},
    {"deeplab_v3",
     "DeepLab v3 257x257 (TFLite GPU sample: MobileNet v2 x0.5, output stride 8, ASPP-lite head)",
     model_deeplab_v3},
    {"inception_v3", "Inception v3 299x299 (Szegedy et al. 2016, TF-slim), TFLite-style fused ops",
     model_inception_v3},
    {"posenet",
     "PoseNet 353x257 (TFLite GPU sample: MobileNet v1 x0.75, output stride 16, 4 heads)",
     model_posenet},
    {"blazeface", "BlazeFace 128x128 (Bazarevsky et al. 2019 Table 4), BlazeBlocks, two heads",
     model_blazeface},
};

const cli_model *cli_models(size_t *count) {
    *count = sizeof models / sizeof models[0];
    return models;
}
