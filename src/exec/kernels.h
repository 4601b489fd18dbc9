/* kernels.h -- the float32 kernels of the reference executor (private).
 *
 * Plain C loops, one thread, a fixed summation order: the same inputs give
 * the same bits whatever the addresses of the buffers, which is what lets
 * the executor compare a planned run with a naive one by memcmp.  Every
 * reduction that is not a matrix product (norm statistics, softmax sums,
 * the loss, average pooling, gradient reductions) accumulates in double;
 * matrix products accumulate in float, element by element in increasing k.
 *
 * Aliasing: an output may be the very buffer of input 0 only where the op
 * table allows in-place execution (elementwise ops, sum_n); such kernels
 * read element i before writing element i.  Otherwise outputs never overlap
 * inputs.  Kernels that need scratch memory allocate it themselves and
 * return MP_ENOMEM if they cannot; the others cannot fail.
 */
#ifndef MP_EXEC_KERNELS_H
#define MP_EXEC_KERNELS_H

#include "../core/internal.h"

/* A shape: rank dimensions (rank 0 is a scalar). */
typedef struct mp__kshape {
    size_t rank;
    uint64_t d[MP_MAX_RANK];
} mp__kshape;

/* Elements of a shape (1 for a scalar). */
uint64_t mp__kshape_numel(const mp__kshape *s);

/* ---- elementwise (kernels_eltwise.c) ------------------------------------ */

typedef enum mp__unop {
    MP__U_RELU, MP__U_SIGMOID, MP__U_TANH, MP__U_RELU6, MP__U_SILU,
    MP__U_HARDSWISH, MP__U_HARDSIGMOID, MP__U_GELU, MP__U_IDENTITY
} mp__unop;

/* y = f(x) elementwise; y may be x. */
void mp__k_unary(mp__unop op, const float *x, float *y, uint64_t n);

/* Whether f's derivative is computed from its output (relu, sigmoid, tanh)
 * rather than its input. */
int mp__k_unary_grad_from_output(mp__unop op);

/* dx = dy * f'(.) where v is f's output y for the ops above, else its input
 * x; dx may be dy. */
void mp__k_unary_backward(mp__unop op, const float *dy, const float *v, float *dx, uint64_t n);

typedef enum mp__binop { MP__B_ADD, MP__B_SUB, MP__B_MUL } mp__binop;

/* y = a + alpha b, a - alpha b or a * b with numpy broadcasting of a and b
 * to y's shape (the caller checked the shapes fit); y may be a when y and a
 * have the same shape. */
void mp__k_binary(mp__binop op, float alpha, const float *a, const mp__kshape *as,
                  const float *b, const mp__kshape *bs, float *y, const mp__kshape *ys);

/* Gradients of mp__k_binary: da and db (either may be NULL) get dy times
 * the partial derivative, summed over the broadcast dimensions down to a's
 * and b's shapes in increasing output index.  a and b are read only by mul
 * (NULL otherwise). */
mp_status mp__k_binary_backward(mp__binop op, float alpha, const float *dy, const mp__kshape *ys,
                                const float *a, const mp__kshape *as, const float *b,
                                const mp__kshape *bs, float *da, float *db);

/* y = x0 + x1 + ... + x(k-1), left to right; y may be x0. */
void mp__k_sum_n(const float *const *x, size_t k, float *y, uint64_t n);

/* y[i] = v. */
void mp__k_fill(float *y, float v, uint64_t n);

/* ---- matrix products (kernels_gemm.c) ----------------------------------- */

/* C[m x n] = (acc ? C : 0) + A B, where A's element (i, k) is
 * a[i * a_rs + k * a_cs] (so a transposed A is just other strides), B is
 * row-major k x n with row stride ldb, C row-major with row stride ldc.
 * Each C element adds its products in increasing k. */
void mp__gemm(uint64_t m, uint64_t n, uint64_t k, const float *a, uint64_t a_rs, uint64_t a_cs,
              const float *b, uint64_t ldb, float *c, uint64_t ldc, int acc);

/* The same with B given transposed: B's element (k, j) is bt[j * ldbt + k].
 * Packs B into scratch (MP_ENOMEM). */
mp_status mp__gemm_bt(uint64_t m, uint64_t n, uint64_t k, const float *a, uint64_t a_rs,
                      uint64_t a_cs, const float *bt, uint64_t ldbt, float *c, uint64_t ldc,
                      int acc);

/* linear: y[m, out] = x[m, in] W[out, in]^T + b (b may be NULL). */
mp_status mp__k_linear(const float *x, const float *w, const float *b, float *y, uint64_t m,
                       uint64_t in, uint64_t out);

/* Its gradients; each of dx, dw, db may be NULL (not wanted). */
mp_status mp__k_linear_backward(const float *dy, const float *x, const float *w, uint64_t m,
                                uint64_t in, uint64_t out, float *dx, float *dw, float *db);

/* matmul: a[..., m, k] b[..., k, n] -> y[..., m, n], batch dimensions
 * broadcast (ranks >= 2; y's shape given). */
mp_status mp__k_matmul(const float *a, const mp__kshape *as, const float *b, const mp__kshape *bs,
                       float *y, const mp__kshape *ys);

/* Its gradients (da, db may be NULL), summed over broadcast batches. */
mp_status mp__k_matmul_backward(const float *dy, const mp__kshape *ys, const float *a,
                                const mp__kshape *as, const float *b, const mp__kshape *bs,
                                float *da, float *db);

/* ---- convolution (kernels_conv.c) --------------------------------------- */

typedef struct mp__conv {
    uint64_t n, c, h, w;        /* input */
    uint64_t o, kh, kw;         /* weight [o, c / groups, kh, kw] */
    uint64_t oh, ow;            /* output */
    int64_t sh, sw, ph, pw, dh, dw;
    uint64_t groups;
} mp__conv;

/* y = conv2d(x, W) + b (b may be NULL), by im2col and mp__gemm per image
 * and group. */
mp_status mp__k_conv2d(const mp__conv *p, const float *x, const float *w, const float *b,
                       float *y);

/* Its gradients; each of dx, dw, db may be NULL. */
mp_status mp__k_conv2d_backward(const mp__conv *p, const float *dy, const float *x,
                                const float *w, float *dx, float *dw, float *db);

/* ---- pooling (kernels_pool.c) ------------------------------------------- */

typedef struct mp__pool {
    uint64_t n, c, h, w;        /* input */
    uint64_t oh, ow;            /* output (from the graph: ceil_mode is in it) */
    int64_t kh, kw, sh, sw, ph, pw, dh, dw;
    int count_include_pad;      /* avg pooling */
} mp__pool;

/* Output length of a pooling window sweep, PyTorch's formula (ceil_mode
 * windows must start inside the input or its left padding). */
int64_t mp__pool_out_len(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int ceil_mode);

void mp__k_maxpool2d(const mp__pool *p, const float *x, float *y);
/* dx: each output's gradient to the first maximum of its window (row-major
 * scan, as PyTorch), sums in output order. */
void mp__k_maxpool2d_backward(const mp__pool *p, const float *dy, const float *x, float *dx);

void mp__k_avgpool2d(const mp__pool *p, const float *x, float *y);
mp_status mp__k_avgpool2d_backward(const mp__pool *p, const float *dy, float *dx);

/* Adaptive average pooling: window i covers [floor(i H / oh), ceil((i+1) H / oh)). */
void mp__k_adaptive_avgpool2d(const mp__pool *p, const float *x, float *y);
mp_status mp__k_adaptive_avgpool2d_backward(const mp__pool *p, const float *dy, float *dx);

/* ---- normalisation (kernels_norm.c) ------------------------------------- */

/* Batch norm over x[n, c, hw] with the batch's own mean and biased
 * variance (training mode); w and b may be NULL (1 and 0). */
mp_status mp__k_batchnorm(const float *x, const float *w, const float *b, float *y, uint64_t n,
                          uint64_t c, uint64_t hw, double eps);
/* Its gradients (the statistics recomputed from x); dx, dw, db may be NULL. */
mp_status mp__k_batchnorm_backward(const float *dy, const float *x, const float *w, uint64_t n,
                                   uint64_t c, uint64_t hw, double eps, float *dx, float *dw,
                                   float *db);

/* Layer norm of rows x[rows, d] over the last dimension; w, b may be NULL. */
void mp__k_layernorm(const float *x, const float *w, const float *b, float *y, uint64_t rows,
                     uint64_t d, double eps);
mp_status mp__k_layernorm_backward(const float *dy, const float *x, const float *w,
                                   uint64_t rows, uint64_t d, double eps, float *dx, float *dw,
                                   float *db);

/* ---- softmax, loss, concatenation (kernels_softmax.c) ------------------- */

/* Softmax over the middle axis of x viewed as [outer, len, inner]. */
void mp__k_softmax(const float *x, float *y, uint64_t outer, uint64_t len, uint64_t inner);
/* dx = y (dy - sum(dy y)) over the axis; dx may not be dy. */
void mp__k_softmax_backward(const float *dy, const float *y, float *dx, uint64_t outer,
                            uint64_t len, uint64_t inner);

/* Mean over n rows of -log softmax(logits)[target]; MP_EINVAL for a target
 * outside [0, k).  target is read with memcpy (it may be unaligned). */
mp_status mp__k_softmax_xent(const float *logits, const void *target, uint64_t n, uint64_t k,
                             float *loss);
/* dlogits = dl (softmax - onehot) / n. */
mp_status mp__k_softmax_xent_backward(float dl, const float *logits, const void *target,
                                      uint64_t n, uint64_t k, float *dlogits);

/* Concatenation of x[i] viewed as [outer, len[i] * inner] along the middle
 * axis into y, and its inverse (the gradient: y split back into x[i]). */
void mp__k_concat(const float *const *x, const uint64_t *len, size_t k, float *y, uint64_t outer,
                  uint64_t inner);
void mp__k_split(const float *y, float *const *x, const uint64_t *len, size_t k, uint64_t outer,
                 uint64_t inner);

/* ---- strided views, resizing, reductions (kernels_view.c) --------------- */

/* y (contiguous, shape s) = the strided view of base: element (i0, i1, ...)
 * is base[offset + i0 st[0] + i1 st[1] + ...] (strides in elements, >= 0). */
void mp__k_gather(const float *base, int64_t offset, const int64_t *st, const mp__kshape *s,
                  float *y);

/* The adjoint: acc[offset + i0 st[0] + ...] += dy(i0, i1, ...), in
 * increasing index of dy (acc in double, so sums do not depend on order
 * of the views scattered). */
void mp__k_scatter_add(const float *dy, const mp__kshape *s, int64_t offset, const int64_t *st,
                       double *acc);

/* F.interpolate of x[n, c, h, w] to y[n, c, oh, ow]: mode 0 nearest
 * (src = min(floor(dst scale), in - 1)), 1 bilinear (align_corners, or
 * PyTorch's half-pixel centres clamped at 0).  scale_h/scale_w are the
 * source steps per output pixel for nearest and bilinear without
 * align_corners (in / out, or 1 / scale_factor); <= 0 means in / out. */
typedef struct mp__interp {
    uint64_t n, c, h, w, oh, ow;
    int mode;                    /* 0 nearest, 1 bilinear */
    int align_corners;
    double scale_h, scale_w;
} mp__interp;

void mp__k_interp(const mp__interp *p, const float *x, float *y);
/* dx (zeroed here) gets each dy times its weights, summed in double in
 * output order.  MP_ENOMEM. */
mp_status mp__k_interp_backward(const mp__interp *p, const float *dy, float *dx);

/* Mean of x (shape s) over the dimensions whose bit is set in dims, into y
 * (the kept dimensions in order), summed in double in index order.
 * MP_ENOMEM.  Its gradient: dx = dy (broadcast back) / count. */
mp_status mp__k_reduce_mean(const float *x, const mp__kshape *s, uint64_t dims, float *y);
void mp__k_reduce_mean_backward(const float *dy, const mp__kshape *s, uint64_t dims, float *dx);

#endif /* MP_EXEC_KERNELS_H */
