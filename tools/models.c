/* models.c -- built-in models: real networks as usage records, so the main
 * job has something real-sized to show without any input file.
 *
 * mobilenet_v1: MobileNet v1 (Howard et al. 2017, Table 1), 224x224x3,
 * width 1.0, batch 1, float32, as a TFLite graph runs it: convolution, batch
 * norm and activation fused into one op, one output tensor per op, ops in
 * sequence.  As in pisarchyk2020 Tables 1-2, the records are the
 * intermediate tensors: the graph input is not counted, the final softmax
 * output is.  Tensor k is produced by op k and read by op k+1, so it lives
 * over [k, k+1].  Its naive total is 19.248 MiB and its offset lower bound
 * 4.594 MiB, the figures that paper prints. */
#include "cli.h"

#include <stdlib.h>

typedef struct layer { char kind; uint8_t stride; uint16_t channels; } layer;

/* c = 3x3 conv, d = 3x3 depthwise, p = 1x1 pointwise, a = global average
 * pool, f = fully connected (1x1 conv to 1001 classes), s = softmax. */
static const layer mobilenet_v1_layers[] = {
    {'c', 2, 32},   {'d', 1, 0}, {'p', 1, 64},  {'d', 2, 0}, {'p', 1, 128}, {'d', 1, 0},
    {'p', 1, 128},  {'d', 2, 0}, {'p', 1, 256}, {'d', 1, 0}, {'p', 1, 256}, {'d', 2, 0},
    {'p', 1, 512},  {'d', 1, 0}, {'p', 1, 512}, {'d', 1, 0}, {'p', 1, 512}, {'d', 1, 0},
    {'p', 1, 512},  {'d', 1, 0}, {'p', 1, 512}, {'d', 1, 0}, {'p', 1, 512}, {'d', 2, 0},
    {'p', 1, 1024}, {'d', 1, 0}, {'p', 1, 1024}, {'a', 1, 0}, {'f', 1, 1001}, {'s', 1, 0},
};

static mp_status build_chain(const layer *L, size_t k, uint64_t hw, uint64_t ch,
                             mp_buffer_t **out, size_t *n) {
    mp_buffer_t *b = calloc(k, sizeof *b);
    if (!b) return MP_ENOMEM;
    for (size_t i = 0; i < k; i++) {
        hw = (hw + L[i].stride - 1) / L[i].stride;
        if (L[i].kind == 'a') hw = 1;
        if (L[i].channels) ch = L[i].channels;
        b[i] = (mp_buffer_t){.id = i, .first = i, .last = i + 1 < k ? i + 1 : i,
                             .size = hw * hw * ch * 4};
    }
    *out = b;
    *n = k;
    return MP_OK;
}

static mp_status mobilenet_v1(mp_buffer_t **b, size_t *n) {
    return build_chain(mobilenet_v1_layers, sizeof mobilenet_v1_layers / sizeof mobilenet_v1_layers[0],
                       224, 3, b, n);
}

static const cli_model models[] = {
    {"mobilenet_v1", "MobileNet v1 224x224, batch 1, float32, TFLite-style fused ops (30 tensors)",
     mobilenet_v1},
};

const cli_model *cli_models(size_t *count) {
    *count = sizeof models / sizeof models[0];
    return models;
}
