/* env.c -- numbers with units in the MEMPLAN_* environment variables of
 * libmemplan-preload.so (docs/preload.md, "Environment variables").
 *
 * The variables are read in the library's constructor, so the parser never
 * allocates: it works on the string in place, with integers only (no
 * strtod, whose locale and rounding would make "1.5G" depend on the
 * process).  Accepted: DIGITS[.DIGITS][UNIT] with UNIT one of (any case)
 *   B                      1
 *   K M G T, KiB ... TiB   powers of 1024
 *   KB MB GB TB            powers of 1000
 * A fraction needs a unit other than B; the result is rounded down to a
 * whole number.  Anything else, or a value above SIZE_MAX, is refused with
 * one message naming the variable, the value and the accepted forms, and
 * the default stays: a preload must never stop the program it runs in. */
#include "preload.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FRAC 19   /* fraction digits kept exactly */

/* Multiplier base^exp of a unit; 0 for an unknown unit. */
static int unit_of(const char *u, unsigned *base, unsigned *exp) {
    static const char letters[] = "kmgt";
    char c = (char)(*u | 0x20);
    const char *at = *u ? strchr(letters, c) : NULL;
    *base = 2;
    *exp = 0;
    if (!*u) return 1;
    if (c == 'b' && !u[1]) return 1;
    if (!at) return 0;
    unsigned k = (unsigned)(at - letters) + 1;
    const char *rest = u + 1;
    if (!*rest || ((rest[0] | 0x20) == 'i' && (rest[1] | 0x20) == 'b' && !rest[2])) {
        *exp = 10 * k;   /* K, KiB: 1024^k = 2^(10k) */
        return 1;
    }
    if ((rest[0] | 0x20) == 'b' && !rest[1]) {
        *base = 10;      /* KB: 1000^k = 10^(3k) */
        *exp = 3 * k;
        return 1;
    }
    return 0;
}

/* floor(0.d[0]d[1]... * base^exp), exactly: the fraction's decimal digits
 * are multiplied by base exp times, each product's integer part feeding the
 * result.  digits is changed. */
static uint64_t frac_part(unsigned char *digits, size_t nd, unsigned base, unsigned exp) {
    uint64_t v = 0;
    for (unsigned e = 0; e < exp; e++) {
        unsigned carry = 0;
        for (size_t i = nd; i-- > 0;) {
            unsigned x = digits[i] * base + carry;
            digits[i] = (unsigned char)(x % 10);
            carry = x / 10;
        }
        v = v * base + carry;
    }
    return v;
}

int mpp__parse_size(const char *s, size_t *out) {
    uint64_t ip = 0;
    unsigned char frac[MAX_FRAC];
    size_t nd = 0;
    int big = 0;
    if (!s || *s < '0' || *s > '9') return MPP_NUM_BAD;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (ip > (UINT64_MAX - 9) / 10) big = 1;
        else ip = ip * 10 + (uint64_t)(*s - '0');
    }
    if (*s == '.') {
        if (*++s < '0' || *s > '9') return MPP_NUM_BAD;
        for (; *s >= '0' && *s <= '9'; s++)
            if (nd < MAX_FRAC) frac[nd++] = (unsigned char)(*s - '0');
    }
    unsigned base, exp;
    if (!unit_of(s, &base, &exp) || (nd && !exp)) return MPP_NUM_BAD;
    uint64_t mult = 1;
    for (unsigned e = 0; e < exp; e++) mult *= base;   /* at most 2^40 or 10^12 */
    uint64_t f = frac_part(frac, nd, base, exp);
    if (big || ip > (UINT64_MAX - f) / mult || ip * mult + f > SIZE_MAX) return MPP_NUM_RANGE;
    *out = (size_t)(ip * mult + f);
    return MPP_NUM_OK;
}

void mpp__env_size(const char *name, size_t *dst, const char *dflt) {
    const char *s = getenv(name);
    if (!s || !*s) return;
    int r = mpp__parse_size(s, dst);
    if (r == MPP_NUM_OK) return;
    mpp__say("memplan-preload: %s=%s: %s; accepted forms: 123, 64K, 1.5M, 2GiB, 10MB "
             "(K M G T and KiB MiB GiB TiB are powers of 1024, KB MB GB TB powers of 1000); "
             "using the default, %s\n",
             name, s, r == MPP_NUM_RANGE ? "too large" : "not a whole number or a number with a unit", dflt);
}
