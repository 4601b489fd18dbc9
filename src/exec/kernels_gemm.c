/* kernels_gemm.c -- matrix products: a blocked float GEMM with a fixed
 * summation order, and linear and (batched, broadcasting) matmul on it.
 *
 * Every element of C is C0 + a(i,0) b(0,j) + a(i,1) b(1,j) + ..., added in
 * that order whatever the blocking (blocks of k are visited in increasing
 * order and a block of C is loaded, updated and stored back), so the result
 * depends only on the values, never on where they live.  The inner loops
 * run along rows of B and C, which the compiler vectorises without
 * reassociating anything. */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

enum { MB = 4, NB = 32, KB = 256, JB = 512 };

/* C block of MB x NB at c += A block (MB x kb) B block (kb x NB). */
static void micro_full(uint64_t kb, const float *a, uint64_t a_rs, uint64_t a_cs, const float *b,
                       uint64_t ldb, float *c, uint64_t ldc) {
    float acc[MB][NB];
    for (int r = 0; r < MB; r++)
        for (int j = 0; j < NB; j++) acc[r][j] = c[r * ldc + j];
    for (uint64_t k = 0; k < kb; k++) {
        const float *bk = b + k * ldb;
        for (int r = 0; r < MB; r++) {
            float ar = a[r * a_rs + k * a_cs];
            for (int j = 0; j < NB; j++) acc[r][j] += ar * bk[j];
        }
    }
    for (int r = 0; r < MB; r++)
        for (int j = 0; j < NB; j++) c[r * ldc + j] = acc[r][j];
}

/* Any block of mb x nb (edges), the same order of additions. */
static void micro_edge(uint64_t mb, uint64_t nb, uint64_t kb, const float *a, uint64_t a_rs,
                       uint64_t a_cs, const float *b, uint64_t ldb, float *c, uint64_t ldc) {
    for (uint64_t r = 0; r < mb; r++) {
        float *cr = c + r * ldc;
        for (uint64_t k = 0; k < kb; k++) {
            float ar = a[r * a_rs + k * a_cs];
            const float *bk = b + k * ldb;
            for (uint64_t j = 0; j < nb; j++) cr[j] += ar * bk[j];
        }
    }
}

void mp__gemm(uint64_t m, uint64_t n, uint64_t k, const float *a, uint64_t a_rs, uint64_t a_cs,
              const float *b, uint64_t ldb, float *c, uint64_t ldc, int acc) {
    if (!acc)
        for (uint64_t i = 0; i < m; i++) memset(c + i * ldc, 0, n * sizeof(float));
    for (uint64_t j0 = 0; j0 < n; j0 += JB) {
        uint64_t jb = n - j0 < JB ? n - j0 : JB;
        for (uint64_t k0 = 0; k0 < k; k0 += KB) {
            uint64_t kb = k - k0 < KB ? k - k0 : KB;
            const float *bb = b + k0 * ldb + j0;
            for (uint64_t i0 = 0; i0 < m; i0 += MB) {
                uint64_t mb = m - i0 < MB ? m - i0 : MB;
                const float *ab = a + i0 * a_rs + k0 * a_cs;
                float *cb = c + i0 * ldc + j0;
                uint64_t j = 0;
                if (mb == MB)
                    for (; j + NB <= jb; j += NB)
                        micro_full(kb, ab, a_rs, a_cs, bb + j, ldb, cb + j, ldc);
                if (j < jb) micro_edge(mb, jb - j, kb, ab, a_rs, a_cs, bb + j, ldb, cb + j, ldc);
            }
        }
    }
}

mp_status mp__gemm_bt(uint64_t m, uint64_t n, uint64_t k, const float *a, uint64_t a_rs,
                      uint64_t a_cs, const float *bt, uint64_t ldbt, float *c, uint64_t ldc,
                      int acc) {
    uint64_t kn = k * n;
    float *b = malloc((kn != 0 ? kn : 1) * sizeof *b);
    if (!b) return MP__NOMEM();
    for (uint64_t j = 0; j < n; j++)
        for (uint64_t kk = 0; kk < k; kk++) b[kk * n + j] = bt[j * ldbt + kk];
    mp__gemm(m, n, k, a, a_rs, a_cs, b, n, c, ldc, acc);
    free(b);
    return MP_OK;
}

/* ---- linear ------------------------------------------------------------- */

mp_status mp__k_linear(const float *x, const float *w, const float *b, float *y, uint64_t m,
                       uint64_t in, uint64_t out) {
    mp_status st;
    if (m < out) {
        /* Few rows (inference): y^T[out, m] = W x^T packs only x (m x in)
         * instead of W; each element adds the same products in the same
         * order, so both ways give the same bits. */
        float *yt = malloc((out != 0 && m != 0 ? out * m : 1) * sizeof *yt);
        if (!yt) return MP__NOMEM();
        st = mp__gemm_bt(out, m, in, w, in, 1, x, in, yt, m, 0);
        for (uint64_t i = 0; st == MP_OK && i < m; i++)
            for (uint64_t j = 0; j < out; j++) y[i * out + j] = yt[j * m + i];
        free(yt);
    } else {
        /* y = x W^T: W^T's element (k, j) is w[j * in + k]. */
        st = mp__gemm_bt(m, out, in, x, in, 1, w, in, y, out, 0);
    }
    if (st != MP_OK || !b) return st;
    for (uint64_t i = 0; i < m; i++)
        for (uint64_t j = 0; j < out; j++) y[i * out + j] += b[j];
    return MP_OK;
}

mp_status mp__k_linear_backward(const float *dy, const float *x, const float *w, uint64_t m,
                                uint64_t in, uint64_t out, float *dx, float *dw, float *db) {
    /* dx[m, in] = dy[m, out] W[out, in]. */
    if (dx) mp__gemm(m, in, out, dy, out, 1, w, in, dx, in, 0);
    /* dw[out, in] = dy^T[out, m] x[m, in]: dy^T by strides. */
    if (dw) mp__gemm(out, in, m, dy, 1, out, x, in, dw, in, 0);
    if (db) {
        for (uint64_t j = 0; j < out; j++) {
            double s = 0.0;
            for (uint64_t i = 0; i < m; i++) s += dy[i * out + j];
            db[j] = (float)s;
        }
    }
    return MP_OK;
}

/* ---- matmul ------------------------------------------------------------- */

/* The batch part of a matmul: y's batch dimensions and, per batch index,
 * the matrix offsets of a and b (broadcast). */
typedef struct mm_batch {
    uint64_t count;                     /* batches of y */
    size_t rank;                        /* batch dims of y */
    uint64_t dim[MP_MAX_RANK], sa[MP_MAX_RANK], sb[MP_MAX_RANK];
} mm_batch;

static void mm_batch_init(mm_batch *mb, const mp__kshape *as, const mp__kshape *bs,
                          const mp__kshape *ys) {
    mb->rank = ys->rank - 2;
    mb->count = 1;
    uint64_t sa = 1, sb = 1;
    for (size_t d = mb->rank; d-- > 0;) {
        mb->dim[d] = ys->d[d];
        mb->count *= ys->d[d];
        size_t back = mb->rank - d;   /* 1 for the last batch dim */
        uint64_t ad = as->rank - 2 >= back ? as->d[as->rank - 2 - back] : 1;
        uint64_t bd = bs->rank - 2 >= back ? bs->d[bs->rank - 2 - back] : 1;
        mb->sa[d] = ad == 1 ? 0 : sa;
        mb->sb[d] = bd == 1 ? 0 : sb;
        sa *= ad;
        sb *= bd;
    }
}

/* Matrix indices of a and b for y's batch t. */
static void mm_batch_at(const mm_batch *mb, uint64_t t, uint64_t *ia, uint64_t *ib) {
    uint64_t a = 0, b = 0;
    for (size_t d = mb->rank; d-- > 0;) {
        uint64_t i = t % mb->dim[d];
        t /= mb->dim[d];
        a += i * mb->sa[d];
        b += i * mb->sb[d];
    }
    *ia = a;
    *ib = b;
}

mp_status mp__k_matmul(const float *a, const mp__kshape *as, const float *b, const mp__kshape *bs,
                       float *y, const mp__kshape *ys) {
    uint64_t m = as->d[as->rank - 2], k = as->d[as->rank - 1], n = bs->d[bs->rank - 1];
    mm_batch mb;
    mm_batch_init(&mb, as, bs, ys);
    for (uint64_t t = 0; t < mb.count; t++) {
        uint64_t ia, ib;
        mm_batch_at(&mb, t, &ia, &ib);
        mp__gemm(m, n, k, a + ia * m * k, k, 1, b + ib * k * n, n, y + t * m * n, n, 0);
    }
    return MP_OK;
}

mp_status mp__k_matmul_backward(const float *dy, const mp__kshape *ys, const float *a,
                                const mp__kshape *as, const float *b, const mp__kshape *bs,
                                float *da, float *db) {
    uint64_t m = as->d[as->rank - 2], k = as->d[as->rank - 1], n = bs->d[bs->rank - 1];
    mm_batch mb;
    mm_batch_init(&mb, as, bs, ys);
    uint64_t na = mp__kshape_numel(as), nbn = mp__kshape_numel(bs), mk = m * k, kn = k * n;
    uint64_t ba = mk != 0 ? na / mk : 0, bb = kn != 0 ? nbn / kn : 0;   /* batches of a, b */
    /* A batch of a or b read by several batches of y gets their gradients
     * summed in increasing batch order (accumulate = 1 after the first). */
    unsigned char *seen_a = calloc(ba + 1, 1), *seen_b = calloc(bb + 1, 1);
    mp_status st = MP_OK;
    if (!seen_a || !seen_b) {
        st = MP__NOMEM();
        goto done;
    }
    if (da && mk == 0) memset(da, 0, na * sizeof *da);
    if (db && kn == 0) memset(db, 0, nbn * sizeof *db);
    for (uint64_t t = 0; t < mb.count; t++) {
        uint64_t ia, ib;
        mm_batch_at(&mb, t, &ia, &ib);
        const float *dyt = dy + t * m * n;
        /* da[m, k] += dy[m, n] b^T[n, k] */
        if (da) {
            st = mp__gemm_bt(m, k, n, dyt, n, 1, b + ib * k * n, n, da + ia * m * k, k,
                             seen_a[ia]);
            if (st != MP_OK) goto done;
            seen_a[ia] = 1;
        }
        /* db[k, n] += a^T[k, m] dy[m, n] */
        if (db) {
            mp__gemm(k, n, m, a + ia * m * k, 1, k, dyt, n, db + ib * k * n, n, seen_b[ib]);
            seen_b[ib] = 1;
        }
    }
    /* Batches of a or b that no batch of y reads (only possible with empty
     * batch dims) stay zero. */
    for (uint64_t i = 0; da && i < ba; i++)
        if (!seen_a[i]) memset(da + i * mk, 0, mk * sizeof *da);
    for (uint64_t i = 0; db && i < bb; i++)
        if (!seen_b[i]) memset(db + i * kn, 0, kn * sizeof *db);
done:
    free(seen_a);
    free(seen_b);
    return st;
}
