/* models.h -- the forward graphs of chen2016's experiments (sec. 5, Figs.
 * 5-7), built with the public builder API, for bench/remat/bench_remat.c.
 *
 * ResNet (Fig. 5) follows the network of the paper's released example
 * (dmlc/mxnet-memonger, example_resnet.py): a 7x7/2 conv-bn-relu stem and a
 * 3x3/2 max pooling, four stages of bottleneck units (1x1, 3x3, 1x1
 * conv-bn-relu modules of width w, w, 4w with w = 64, 128, 256, 512; the
 * first unit of each stage has a 1x1 conv-bn-relu projection shortcut and
 * strides 2 from the second stage on; a unit ends in the addition of the
 * shortcut), global average pooling, flatten and a 1000-way linear layer.
 * The loss (softmax cross-entropy) is added by mp_remat_new.  Depth counts
 * conv-bn-relu modules on the main path plus the stem and the classifier,
 * the paper's footnote and He et al.'s convention: D = 3 * units + 2
 * (ResNet-200 = [3, 24, 36, 3], the example's configuration).
 *
 * LSTM (Fig. 6) follows example_lstm.py of the same repository: per step a
 * linear embedding of the 50-dim input (no bias), four LSTM layers of
 * hidden 1024 (per gate an input-to-hidden and a hidden-to-hidden linear
 * and their sum, sigmoid/tanh, c = f*c + i*g, h = o*tanh(c)) and a
 * classifier over 5000 classes with softmax cross-entropy at every step
 * (the example's concat_decode=False, use_loss=True); the per-step losses
 * are summed by a chain of additions into the one loss memplan trains. */
#ifndef BENCH_REMAT_MODELS_H
#define BENCH_REMAT_MODELS_H

#include "memplan.h"

typedef struct bm_resnet_cfg {
    uint64_t batch, channels, hw;   /* input [batch, channels, hw, hw] */
    uint64_t base;                  /* width of the first stage's 3x3 convs (64) */
    size_t units[4];                /* bottleneck units per stage */
    uint64_t classes;               /* 1000 */
} bm_resnet_cfg;

/* Units per stage for a nominal depth D: U = round((D - 2) / 3) units,
 * split in the proportions of ResNet-200's [3, 24, 36, 3] (largest
 * remainders), at least one per stage.  Returns the depth 3U + 2. */
size_t bm_resnet_units(size_t depth, size_t units[4]);

/* Layers counted as in the paper: 3 * units + 2. */
size_t bm_resnet_depth(const bm_resnet_cfg *c);

/* The forward graph; its single output is the logits [batch, classes]. */
mp_status bm_resnet(const bm_resnet_cfg *c, const char *name, mp_graph_t **out);

typedef struct bm_lstm_cfg {
    uint64_t batch, input, embed, hidden, classes;   /* 64, 50, 1024, 1024, 5000 */
    size_t layers, steps;                            /* 4, T */
    int frozen;        /* 1: only the embedding is trainable.  The gradients
                          still flow through every step (the embedding needs
                          them) and every gradient op reads the same forward
                          values, but no per-step weight-gradient
                          contributions exist: the accounting of chen2016's
                          MXNet, which adds each step's weight gradient in
                          place into one buffer ("addto").  0: memplan's own
                          training graph, where a shared weight gets one
                          contribution per step, each added into its
                          gradient as it arrives (accumulate). */
} bm_lstm_cfg;

/* The forward graph with its loss (the sum of the per-step losses). */
mp_status bm_lstm(const bm_lstm_cfg *c, const char *name, mp_graph_t **out);

/* A uniform chain: input [batch, width], n linear layers of width x width
 * (no activation in between: every step's output is the one value crossing
 * it), logits [batch, width]; the loss is added by mp_remat_new. */
mp_status bm_chain(size_t n, uint64_t batch, uint64_t width, mp_graph_t **out);

#endif /* BENCH_REMAT_MODELS_H */
