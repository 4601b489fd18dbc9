/* revolve.c -- binomial checkpointing on the uniform chain (Griewank &
 * Walther, "Algorithm 799: Revolve", ACM TOMS 26(1), 2000): the least number
 * of recomputed stage runs t(n, s), and a schedule that reaches it.
 *
 * Convention (docs/remat-chains.md).  s is Griewank-Walther's number of
 * checkpoint slots, and one of them holds the chain's input for the whole
 * reversal (their x_0).  At every op of a schedule, the stage outputs that
 * are live (the chain model of mp_chain_simulate) and are neither the op's
 * own operands (what it reads or produces) nor the output of the stage whose
 * BACKWARD comes next (its values, still to be differentiated) must number
 * at most s - 1.  With unit sizes that peak is at most s + 2.
 *
 * Closed form: beta(c, r) = C(c + r, c); r = the least integer with
 * beta(s, r) >= n; Griewank-Walther count r*n - beta(s + 1, r - 1) forward
 * steps, n - 1 of which are the first forward pass here, so
 *
 *     t(n, s) = (r - 1) * n - C(s + r, s + 1) + 1     (n >= 1, s >= 1),
 *
 * t(0, s) = t(1, s) = 0 and t(n, 0) = UINT64_MAX for n > 1.
 */
#include "../core/internal.h"

#include <stdlib.h>

/* gcd for the exact binomial step below. */
static uint64_t gcd64(uint64_t a, uint64_t b) {
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* C(c + r, min(c, r)) saturated at cap: the sequence C(a, 0..k) with
 * k <= a/2 never decreases, so a partial value past cap proves the result
 * is.  Each step C(a, i) = C(a, i-1) * (a-i+1) / i is done exactly as
 * (C / g) * ((a-i+1) / (i / g)), g = gcd(C, i).  O(min(c, r)). */
static uint64_t beta(uint64_t c, uint64_t r, uint64_t cap) {
    uint64_t k = c < r ? c : r, a = c + r, v = 1;
    for (uint64_t i = 1; i <= k; i++) {
        uint64_t g = gcd64(v, i), x = v / g, y = (a - i + 1) / (i / g);
        if (y && x > cap / y) return cap;
        v = x * y;
        if (v >= cap) return cap;
    }
    return v;
}

/* The repetition number: the least r with beta(s, r) >= n (s >= 1, n >= 1),
 * by doubling then bisection on r (beta grows with r).  O(log(r) min(s, r)). */
static uint64_t repetitions(uint64_t n, uint64_t s) {
    if (s == 1) return n - 1;          /* beta(1, r) = r + 1 */
    uint64_t lo = 0, hi = 1;           /* beta(s, lo) < n <= beta(s, hi) once found */
    if (beta(s, 0, n) >= n) return 0;
    while (beta(s, hi, n) < n) lo = hi, hi *= 2;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (beta(s, mid, n) >= n) hi = mid;
        else lo = mid;
    }
    return hi;
}

/* t(n, s) by the closed form above, with (r - 1) * n formed in two 64-bit
 * halves so that only a result past 64 bits saturates.  O(r min(s, r)). */
uint64_t mp_revolve_cost(uint64_t n, uint64_t s) {
    if (n <= 1) return 0;
    if (s == 0) return UINT64_MAX;
    uint64_t r = repetitions(n, s);
    uint64_t b = beta(s + 1, r - 1, UINT64_MAX); /* C(s + r, s + 1) <= (r - 1) * n */
    uint64_t a = r - 1;
    if (a && n > UINT64_MAX / a) {
        /* (r-1)*n past 64 bits: subtract b first when that lands below 2^64. */
        uint64_t q = n - b / a;      /* a * q - (b % a) = a*n - b */
        if (q > UINT64_MAX / a) return UINT64_MAX;
        uint64_t v = a * q - b % a;
        return v == UINT64_MAX ? UINT64_MAX : v + 1;
    }
    return a * n - b + 1;
}

/* ---- the schedule --------------------------------------------------------- */

typedef struct rv_out {
    mp_chain_op_t *ops;
    size_t len, cap, n;
    int last_made;              /* FORWARD(n-1) emitted */
} rv_out;

static void emit(rv_out *o, mp_chain_op_kind kind, size_t stage) {
    if (o->len < o->cap) o->ops[o->len] = (mp_chain_op_t){kind, stage};
    o->len++;
}

/* Where to place the next checkpoint when reversing l >= 2 steps with c >= 1
 * slots (the start's included): any l' with beta(c, r-2) <= l' <= beta(c, r-1)
 * and beta(c-1, r-1) <= l - l' <= beta(c-1, r) gives l' + t(l-l', c-1) +
 * t(l', c) = t(l, c) (the repetition numbers are r-1 and r, and Pascal's
 * rule adds the two binomials up); the smallest such l' is taken.  O(r c). */
static uint64_t split(uint64_t l, uint64_t c) {
    if (c == 1) return l - 1;   /* r = l - 1: the formula's answer, in O(1) */
    uint64_t r = repetitions(l, c);
    uint64_t lo1 = r >= 2 ? beta(c, r - 2, l) : 0;
    uint64_t b = beta(c - 1, r, l);
    uint64_t lo2 = l > b ? l - b : 0;
    uint64_t lp = lo1 > lo2 ? lo1 : lo2;
    return lp ? lp : 1;
}

/* Reverses stages a .. a+l-1 from the copy of out(a-1) held in one of c
 * slots (Griewank-Walther's recursion: advance l' stages, keep the output in
 * a fresh slot, reverse the right part with c-1 slots, then the left part
 * with c).  The left part is a loop, the right part recursion, so the depth
 * is at most c.  A stage's values are already there when its BACKWARD comes
 * (the previous BACKWARD read them as its input), except for stage n-1,
 * which the first pass ends with. */
static void reverse(rv_out *o, size_t a, size_t l, size_t c) {
    while (l > 1) {
        size_t lp = (size_t)split(l, c);
        for (size_t k = a; k < a + lp; k++) emit(o, MP_CHAIN_FORWARD, k);
        reverse(o, a + lp, l - lp, c - 1);
        l = lp;
    }
    if (a == o->n - 1 && !o->last_made) {
        emit(o, MP_CHAIN_FORWARD, a);
        o->last_made = 1;
    }
    emit(o, MP_CHAIN_BACKWARD, a);
}

/* The first pass, t(n, s) recomputations and n BACKWARDs, by reverse()
 * above.  O(n + t(n, s)) ops, each split O(r s). */
mp_status mp_revolve_schedule(size_t n, size_t s, mp_chain_op_t **ops, size_t *n_ops) {
    if (!ops || !n_ops) return mp__err(MP_EINVAL, "revolve: NULL output");
    *ops = NULL;
    *n_ops = 0;
    if (n == 0) return MP_OK;
    if (s == 0 && n > 1)
        return mp__err(MP_EINVAL, "revolve: %zu stages need at least one slot (it holds the input)", n);
    uint64_t t = mp_revolve_cost(n, s);
    if (t > (uint64_t)(SIZE_MAX / sizeof(mp_chain_op_t)) - 2 * (uint64_t)n)
        return mp__err(MP_EINVAL, "revolve: %zu stages with %zu slots need %llu recomputations: too many ops",
                       n, s, (unsigned long long)t);
    rv_out o = {.cap = (size_t)t + 2 * n, .n = n};
    o.ops = malloc(o.cap * sizeof *o.ops);
    if (!o.ops) return MP__NOMEM();
    reverse(&o, 0, n, s ? s : 1);
    if (o.len != o.cap) {
        free(o.ops);
        return mp__err(MP_EINVAL, "revolve: internal error: %zu ops made, %zu expected", o.len, o.cap);
    }
    *ops = o.ops;
    *n_ops = o.len;
    return MP_OK;
}
