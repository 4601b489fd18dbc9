/* mip.c -- sekiyama2018 sec. 3.1's mixed integer program, solved by GLPK.
 *
 * Variables: the footprint u, per buffer i an integer k_i with offset
 * x_i = a_i k_i (a_i its alignment, so every x_i is aligned), and per pair
 * (i, j) of buffers with overlapping lifetimes (the paper's set E) a binary
 * z_ij: 0 puts i below j, 1 puts j below i.  With W = ub (no plan above it
 * can be optimal, and below it every difference of offsets is under W):
 *
 *     min u   s.t.  x_i + w_i <= u                        for every i     (2)
 *                   x_i + w_i <= x_j + W z_ij             for (i,j) in E  (3)
 *                   x_j + w_j <= x_i + W (1 - z_ij)       for (i,j) in E  (4)
 *                   lb <= u <= W,  k_i >= 0 integer
 *
 * Everything is divided by the gcd of sizes and alignments first, so the
 * numbers GLPK sees stay small.  The constraint lb <= u is valid (no plan
 * goes below the max-load bound) and only helps the branch and bound. */
#include "mip.h"

#include <glpk.h>
#include <stdlib.h>

static uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b, b = t;
    }
    return a;
}

static int quiet(void *info, const char *s) {
    (void)info, (void)s;
    return 1; /* GLPK prints nothing */
}

mp_mip_result mp_mip_solve(const mp_buffer_t *b, size_t n, uint64_t lb, uint64_t ub,
                           double seconds, uint64_t *opt, uint64_t *off) {
    if (n == 0) {
        *opt = 0;
        return MP_MIP_OPTIMAL;
    }
    uint64_t *w = malloc(n * sizeof *w), *a = malloc(n * sizeof *a), g = 0;
    if (!w || !a) {
        free(w), free(a);
        return MP_MIP_ERROR;
    }
    for (size_t i = 0; i < n; i++) {
        a[i] = b[i].align ? b[i].align : 1;
        w[i] = (b[i].size + a[i] - 1) / a[i] * a[i];
        g = gcd64(gcd64(g, w[i]), a[i]);
    }
    for (size_t i = 0; i < n; i++) w[i] /= g, a[i] /= g;
    double W = (double)(ub / g), L = (double)((lb + g - 1) / g);

    glp_term_hook(quiet, NULL);
    glp_prob *P = glp_create_prob();
    glp_set_obj_dir(P, GLP_MIN);
    /* columns: 1 = u, 2..n+1 = k_i, then the z_ij */
    glp_add_cols(P, (int)n + 1);
    glp_set_col_bnds(P, 1, L < W ? GLP_DB : GLP_FX, L, W);
    glp_set_col_kind(P, 1, GLP_IV);
    glp_set_obj_coef(P, 1, 1.0);
    for (size_t i = 0; i < n; i++) {
        double top = (double)((ub / g - w[i]) / a[i]); /* integer columns need integer bounds */
        glp_set_col_bnds(P, (int)i + 2, top > 0 ? GLP_DB : GLP_FX, 0.0, top);
        glp_set_col_kind(P, (int)i + 2, GLP_IV);
    }
    int ind[4];
    double val[4];
    for (size_t i = 0; i < n; i++) { /* (2): a_i k_i - u <= -w_i */
        int r = glp_add_rows(P, 1);
        ind[1] = (int)i + 2, val[1] = (double)a[i];
        ind[2] = 1, val[2] = -1.0;
        glp_set_mat_row(P, r, 2, ind, val);
        glp_set_row_bnds(P, r, GLP_UP, 0.0, -(double)w[i]);
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            if (b[i].first > b[j].last || b[j].first > b[i].last) continue; /* not in E */
            int z = glp_add_cols(P, 1);
            glp_set_col_kind(P, z, GLP_BV);
            /* (3): a_i k_i - a_j k_j - W z <= -w_i */
            int r = glp_add_rows(P, 2);
            ind[1] = (int)i + 2, val[1] = (double)a[i];
            ind[2] = (int)j + 2, val[2] = -(double)a[j];
            ind[3] = z, val[3] = -W;
            glp_set_mat_row(P, r, 3, ind, val);
            glp_set_row_bnds(P, r, GLP_UP, 0.0, -(double)w[i]);
            /* (4): a_j k_j - a_i k_i + W z <= W - w_j */
            ind[1] = (int)j + 2, val[1] = (double)a[j];
            ind[2] = (int)i + 2, val[2] = -(double)a[i];
            ind[3] = z, val[3] = W;
            glp_set_mat_row(P, r + 1, 3, ind, val);
            glp_set_row_bnds(P, r + 1, GLP_UP, 0.0, W - (double)w[j]);
        }
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = seconds > 0 ? (int)(seconds * 1000) : 0;
    mp_mip_result res = MP_MIP_ERROR;
    int rc = glp_intopt(P, &parm), st = glp_mip_status(P);
    if (rc == 0 && st == GLP_OPT) {
        *opt = (uint64_t)(glp_mip_obj_val(P) + 0.5) * g;
        for (size_t i = 0; i < n; i++)
            off[i] = (uint64_t)(glp_mip_col_val(P, (int)i + 2) + 0.5) * a[i] * g;
        res = MP_MIP_OPTIMAL;
    } else if (rc == GLP_ETMLIM) {
        res = MP_MIP_LIMIT;
    }
    glp_delete_prob(P);
    glp_free_env();
    free(w), free(a);
    return res;
}
