/* models.h -- the graph builder the built-in models share (tools/models.c,
 * tools/models_tflite.c).  Op k of a graph produces tensor k (float32,
 * h x w x ch) and reads earlier tensors; a tensor lives from its producer
 * to its last reader.  Tensor 0 is the graph input and is left out of the
 * records. */
#ifndef MEMPLAN_MODELS_H
#define MEMPLAN_MODELS_H

#include "cli.h"

typedef struct net {
    size_t n, cap;
    uint64_t *size;
    size_t *last;
    uint64_t h, w, ch; /* shape of the newest tensor */
    bool failed;
} net;

enum { NOINPUT = (size_t)-1 };

/* Appends an op reading a and b (NOINPUT for none) that outputs h x w x ch
 * floats; returns its tensor. */
size_t net_op(net *g, size_t a, size_t b, uint64_t h, uint64_t w, uint64_t ch);

/* Marks tensor t as read by the newest op (for ops with more than two
 * inputs, e.g. a concatenation). */
void net_read(net *g, size_t t);

/* Turns the ops into records, leaving out tensor 0, and frees the graph. */
mp_status net_finish(net *g, mp_buffer_t **out, size_t *n);

/* Models of tools/models_tflite.c. */
mp_status model_deeplab_v3(mp_buffer_t **b, size_t *n);
mp_status model_inception_v3(mp_buffer_t **b, size_t *n);
mp_status model_posenet(mp_buffer_t **b, size_t *n);
mp_status model_blazeface(mp_buffer_t **b, size_t *n);

#endif
