/* models_tflite.c -- the other four networks of pisarchyk2020 Tables 1-2,
 * built with the conventions of models.c: batch 1, float32, convolution +
 * batch norm + activation fused into one op with one output tensor, ops in
 * sequence (branches of a block in the order the source lists them), graph
 * input not counted, a tensor lives from its producer to its last reader.
 * Spatial sizes follow TensorFlow 'SAME' (ceil(h / stride)) unless a layer
 * is 'VALID' in its source.  Reshapes are views; pooling, resize, pad,
 * add and concatenation ops each produce a tensor.  How close each comes to
 * the paper's printed figures is in docs/paper-tables.md.
 *
 * deeplab_v3: DeepLab v3 as shipped for the TFLite GPU delegate
 *   (deeplabv3_257_mv_gpu.tflite; the DeepLab model zoo's
 *   mobilenetv2_dm05 checkpoint: Chen et al. 2017, Sandler et al. 2018).
 *   Assumptions: 257x257 input; MobileNet v2 with depth multiplier 0.5
 *   (channels rounded to multiples of 8: stem 16, stages 8/16/16/32/48/80/
 *   160), no final 1x1 to 1280; output stride 8 (the stride-2 blocks after
 *   33x33 become stride 1, dilated, same sizes); ASPP-lite head: image
 *   pooling (average pool to 1x1, 1x1 conv 256, bilinear resize back to
 *   33x33) and a 1x1 conv 256, concatenated (512), 1x1 projection 256, 1x1
 *   logits 21.  The final bilinear resize of the logits to 257x257x21 is
 *   left out: with it both lower bounds would exceed the paper's (a 5.29 MiB
 *   tensor), without it both equal the paper's to the digit.
 * inception_v3: Szegedy et al. 2016, as in TF-slim inception_v3 (the graph
 *   the TFLite sample was converted from).  299x299; stem 149x149x32 (VALID
 *   s2), 147x147x32 (VALID), 147x147x64, max pool 73x73, 1x1 80, 3x3 192
 *   (VALID) 71x71, max pool 35x35; Mixed_5b-5d, 6a, 6b-6e (c7 = 128, 160,
 *   160, 192), 7a, 7b-7c; each block's branches in slim's order, each
 *   average/max pool its own tensor, each concatenation its own tensor,
 *   including the two inner concats (1x3 | 3x1) of Mixed_7b/7c; then an
 *   8x8 average pool, 1x1 conv to 1001, softmax (squeeze a view).  No
 *   auxiliary head.
 * posenet: the TFLite GPU delegate's PoseNet sample
 *   (multi_person_mobilenet_v1_075_float.tflite, the tfjs PoseNet model,
 *   PersonLab-style heads; not Kendall et al. 2015's GoogLeNet, which the
 *   paper cites).  Assumptions: 353x257 (height x width) input, MobileNet
 *   v1 with width 0.75 (24, 48, 96, 192, 384, 768 channels), output stride
 *   16 (the last stride-2 block becomes stride 1, 23x17), four 1x1 heads:
 *   heatmaps 17, offsets 34, forward and backward displacements 32 each,
 *   all graph outputs (no sigmoid in the graph).
 * blazeface: Bazarevsky et al. 2019, Table 4 (the paper's architecture,
 *   not MediaPipe's shipped front model, whose BlazeBlocks differ).
 *   128x128; 5x5 s2 conv 24 (64x64); single BlazeBlocks (5x5 depthwise,
 *   1x1 pointwise) 24, 24, 48 s2, 48, 48; double BlazeBlocks (5x5 dw, 1x1
 *   to 24, 5x5 dw, 1x1 to 96) s2 at 32x32, two more at 16x16, s2, two more
 *   at 8x8.  Every block ends with a residual add; on a stride-2 block the
 *   shortcut is a 2x2 max pool (its own tensor), and where channels grow it
 *   is zero-padded (a pad op, its own tensor).  Heads as in the paper's
 *   anchors (2 per 16x16 cell, 6 per 8x8 cell): 1x1 classifiers (2, 6
 *   channels) and regressors (32, 96 channels), the two levels of each
 *   concatenated into 896x1 and 896x16 (reshapes are views). */
#include "models.h"

/* ceil(h / s), TensorFlow 'SAME'. */
static uint64_t same(uint64_t h, uint64_t s) { return (h + s - 1) / s; }

/* A 1-input op keeping the newest tensor's spatial size. */
static size_t conv(net *g, size_t x, uint64_t ch) { return net_op(g, x, NOINPUT, g->h, g->w, ch); }

/* Concatenation of k tensors along channels, all h x w. */
static size_t concat(net *g, const size_t *t, size_t k, uint64_t h, uint64_t w, uint64_t ch) {
    size_t y = net_op(g, t[0], k > 1 ? t[1] : NOINPUT, h, w, ch);
    for (size_t i = 2; i < k; i++) net_read(g, t[i]);
    return y;
}

/* ---- deeplab_v3 ---- */

mp_status model_deeplab_v3(mp_buffer_t **b, size_t *n) {
    /* MobileNet v2 x0.5 (t, c, n, s), channels already multiplied and
     * rounded to multiples of 8 as TF-slim's depth_multiplier does. */
    static const uint16_t cfg[7][4] = {{1, 8, 1, 1},  {6, 16, 2, 2}, {6, 16, 3, 2}, {6, 32, 4, 2},
                                       {6, 48, 3, 1}, {6, 80, 3, 2}, {6, 160, 1, 1}};
    net g = {0};
    size_t x = net_op(&g, NOINPUT, NOINPUT, 257, 257, 3);
    x = net_op(&g, x, NOINPUT, 129, 129, 16);
    uint64_t os = 2;
    for (int s = 0; s < 7; s++)
        for (int r = 0; r < cfg[s][2]; r++) {
            uint64_t stride = r ? 1 : cfg[s][3], cin = g.ch, hw = g.h;
            if (stride > 1) {
                if (os >= 8)
                    stride = 1; /* output stride 8 reached: dilate instead */
                else
                    os *= stride;
            }
            uint64_t out = same(hw, stride), e = cin * cfg[s][0];
            size_t y = x;
            if (cfg[s][0] != 1) y = net_op(&g, y, NOINPUT, hw, hw, e); /* expand */
            y = net_op(&g, y, NOINPUT, out, out, e);                     /* depthwise */
            y = net_op(&g, y, NOINPUT, out, out, cfg[s][1]);             /* project */
            if (stride == 1 && cin == cfg[s][1]) y = net_op(&g, x, y, out, out, cfg[s][1]);
            x = y;
        }
    uint64_t f = g.h; /* 33 */
    size_t p = net_op(&g, x, NOINPUT, 1, 1, g.ch); /* image pooling */
    p = net_op(&g, p, NOINPUT, 1, 1, 256);
    p = net_op(&g, p, NOINPUT, f, f, 256); /* resize bilinear */
    size_t a = net_op(&g, x, NOINPUT, f, f, 256);
    size_t y = net_op(&g, p, a, f, f, 512); /* concat */
    y = net_op(&g, y, NOINPUT, f, f, 256);
    net_op(&g, y, NOINPUT, f, f, 21); /* logits */
    return net_finish(&g, b, n);
}

/* ---- inception_v3 ---- */

/* 1x1 or SAME convolutions from x at hw x hw. */
static size_t chain(net *g, size_t x, uint64_t hw, const uint16_t *ch, size_t k) {
    for (size_t i = 0; i < k; i++) x = net_op(g, x, NOINPUT, hw, hw, ch[i]);
    return x;
}

mp_status model_inception_v3(mp_buffer_t **b, size_t *n) {
    net g = {0};
    size_t x = net_op(&g, NOINPUT, NOINPUT, 299, 299, 3);
    x = net_op(&g, x, NOINPUT, 149, 149, 32); /* 3x3 s2 VALID */
    x = net_op(&g, x, NOINPUT, 147, 147, 32); /* 3x3 VALID */
    x = conv(&g, x, 64);
    x = net_op(&g, x, NOINPUT, 73, 73, 64); /* max pool s2 VALID */
    x = conv(&g, x, 80);
    x = net_op(&g, x, NOINPUT, 71, 71, 192); /* 3x3 VALID */
    x = net_op(&g, x, NOINPUT, 35, 35, 192); /* max pool s2 VALID */
    static const uint16_t pool5[3] = {32, 64, 64};
    for (int i = 0; i < 3; i++) { /* Mixed_5b-5d */
        uint64_t c = g.ch;
        size_t t[4];
        t[0] = chain(&g, x, 35, (const uint16_t[]){64}, 1);
        t[1] = chain(&g, x, 35, (const uint16_t[]){48, 64}, 2);
        t[2] = chain(&g, x, 35, (const uint16_t[]){64, 96, 96}, 3);
        t[3] = chain(&g, x, 35, (const uint16_t[]){c, pool5[i]}, 2); /* avg pool, 1x1 */
        x = concat(&g, t, 4, 35, 35, 64 + 64 + 96 + pool5[i]);
    }
    { /* Mixed_6a */
        size_t t[3];
        t[0] = net_op(&g, x, NOINPUT, 17, 17, 384);
        t[1] = net_op(&g, chain(&g, x, 35, (const uint16_t[]){64, 96}, 2), NOINPUT, 17, 17, 96);
        t[2] = net_op(&g, x, NOINPUT, 17, 17, 288); /* max pool */
        x = concat(&g, t, 3, 17, 17, 768);
    }
    static const uint16_t c7[4] = {128, 160, 160, 192};
    for (int i = 0; i < 4; i++) { /* Mixed_6b-6e */
        uint16_t c = c7[i];
        size_t t[4];
        t[0] = chain(&g, x, 17, (const uint16_t[]){192}, 1);
        t[1] = chain(&g, x, 17, (const uint16_t[]){c, c, 192}, 3);
        t[2] = chain(&g, x, 17, (const uint16_t[]){c, c, c, c, 192}, 5);
        t[3] = chain(&g, x, 17, (const uint16_t[]){768, 192}, 2); /* avg pool, 1x1 */
        x = concat(&g, t, 4, 17, 17, 768);
    }
    { /* Mixed_7a */
        size_t t[3];
        t[0] = net_op(&g, chain(&g, x, 17, (const uint16_t[]){192}, 1), NOINPUT, 8, 8, 320);
        t[1] = net_op(&g, chain(&g, x, 17, (const uint16_t[]){192, 192, 192, 192}, 4), NOINPUT, 8, 8,
                      192);
        t[2] = net_op(&g, x, NOINPUT, 8, 8, 768);
        x = concat(&g, t, 3, 8, 8, 1280);
    }
    for (int i = 0; i < 2; i++) { /* Mixed_7b, 7c */
        uint64_t c = g.ch;
        size_t t[4], u, v, w;
        t[0] = chain(&g, x, 8, (const uint16_t[]){320}, 1);
        u = chain(&g, x, 8, (const uint16_t[]){384}, 1);
        v = chain(&g, u, 8, (const uint16_t[]){384}, 1); /* 1x3 */
        w = chain(&g, u, 8, (const uint16_t[]){384}, 1); /* 3x1 */
        t[1] = net_op(&g, v, w, 8, 8, 768);             /* inner concat */
        u = chain(&g, x, 8, (const uint16_t[]){448, 384}, 2);
        v = chain(&g, u, 8, (const uint16_t[]){384}, 1);
        w = chain(&g, u, 8, (const uint16_t[]){384}, 1);
        t[2] = net_op(&g, v, w, 8, 8, 768);
        t[3] = chain(&g, x, 8, (const uint16_t[]){c, 192}, 2); /* avg pool, 1x1 */
        x = concat(&g, t, 4, 8, 8, 2048);
    }
    x = net_op(&g, x, NOINPUT, 1, 1, 2048); /* 8x8 average pool */
    x = conv(&g, x, 1001);
    conv(&g, x, 1001); /* softmax */
    return net_finish(&g, b, n);
}

/* ---- posenet ---- */

mp_status model_posenet(mp_buffer_t **b, size_t *n) {
    /* MobileNet v1 x0.75: (stride, output channels) of each block. */
    static const uint16_t blocks[13][2] = {{1, 48},  {2, 96},  {1, 96},  {2, 192}, {1, 192},
                                           {2, 384}, {1, 384}, {1, 384}, {1, 384}, {1, 384},
                                           {1, 384}, {2, 768}, {1, 768}};
    net g = {0};
    size_t x = net_op(&g, NOINPUT, NOINPUT, 353, 257, 3);
    x = net_op(&g, x, NOINPUT, 177, 129, 24);
    uint64_t os = 2;
    for (int i = 0; i < 13; i++) {
        uint64_t s = blocks[i][0];
        if (s > 1) {
            if (os >= 16)
                s = 1;
            else
                os *= s;
        }
        uint64_t h = same(g.h, s), w = same(g.w, s);
        x = net_op(&g, x, NOINPUT, h, w, g.ch);         /* 3x3 depthwise */
        x = net_op(&g, x, NOINPUT, h, w, blocks[i][1]); /* 1x1 pointwise */
    }
    static const uint16_t heads[4] = {17, 34, 32, 32};
    for (int i = 0; i < 4; i++) conv(&g, x, heads[i]);
    return net_finish(&g, b, n);
}

/* ---- blazeface ---- */

/* A BlazeBlock from x: the convolutions in ch[0..k), the first depthwise
 * with stride s, then the shortcut (max pool if s = 2, channel pad if the
 * channels grow) and the add. */
static size_t blaze(net *g, size_t x, const uint16_t *ch, size_t k, uint64_t s) {
    uint64_t cin = g->ch, h = same(g->h, s);
    size_t y = net_op(g, x, NOINPUT, h, h, cin); /* 5x5 depthwise */
    for (size_t i = 0; i < k; i++) y = net_op(g, y, NOINPUT, h, h, ch[i]);
    uint64_t cout = g->ch;
    size_t sc = x;
    if (s > 1) sc = net_op(g, sc, NOINPUT, h, h, cin);
    if (cout != cin) sc = net_op(g, sc, NOINPUT, h, h, cout);
    return net_op(g, sc, y, h, h, cout);
}

mp_status model_blazeface(mp_buffer_t **b, size_t *n) {
    net g = {0};
    size_t x = net_op(&g, NOINPUT, NOINPUT, 128, 128, 3);
    x = net_op(&g, x, NOINPUT, 64, 64, 24);
    static const uint16_t single[5][2] = {{24, 1}, {24, 1}, {48, 2}, {48, 1}, {48, 1}};
    for (int i = 0; i < 5; i++) x = blaze(&g, x, (const uint16_t[]){single[i][0]}, 1, single[i][1]);
    /* double: 1x1 to 24, 5x5 depthwise, 1x1 to 96 */
    static const uint8_t dstride[6] = {2, 1, 1, 2, 1, 1};
    size_t f16 = x;
    for (int i = 0; i < 6; i++) {
        x = blaze(&g, x, (const uint16_t[]){24, 24, 96}, 3, dstride[i]);
        if (i == 2) f16 = x;
    }
    size_t c16 = net_op(&g, f16, NOINPUT, 16, 16, 2);
    size_t c8 = net_op(&g, x, NOINPUT, 8, 8, 6);
    net_op(&g, c16, c8, 1, 896, 1);
    size_t r16 = net_op(&g, f16, NOINPUT, 16, 16, 32);
    size_t r8 = net_op(&g, x, NOINPUT, 8, 8, 96);
    net_op(&g, r16, r8, 1, 896, 16);
    return net_finish(&g, b, n);
}
