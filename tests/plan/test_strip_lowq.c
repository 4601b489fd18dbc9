/* test_strip_lowq.c -- strip-bestfit's queue of lines (src/offsets/lowq.c)
 * against a plain model: a set of (height, position) keys whose least is
 * found by a scan.  Random pushes (some at the last popped height, below
 * and above the positions popped so far, some repeated) and pops over
 * position ranges from one bitset word to four bitset levels; every pop
 * and every mp__lowq_next answer compared with the model's. */
#include "harness.h"
#include "gen.h"

#include "offsets/lowq.h"

#include <stdlib.h>

typedef struct key {
    uint64_t h;
    uint32_t a;
} key;

/* The model: keys[0..len), duplicates removed. */
typedef struct model {
    key *k;
    size_t len;
} model;

static void model_push(model *m, uint64_t h, uint32_t a) {
    for (size_t i = 0; i < m->len; i++)
        if (m->k[i].h == h && m->k[i].a == a) return;
    m->k[m->len++] = (key){h, a};
}

/* Index of the least key, or len if none. */
static size_t model_least(const model *m) {
    size_t best = m->len;
    for (size_t i = 0; i < m->len; i++)
        if (best == m->len || m->k[i].h < m->k[best].h ||
            (m->k[i].h == m->k[best].h && m->k[i].a < m->k[best].a))
            best = i;
    return best;
}

/* The least position >= x at height h, UINT32_MAX if none. */
static uint32_t model_next(const model *m, uint64_t h, uint32_t x) {
    uint32_t best = UINT32_MAX;
    for (size_t i = 0; i < m->len; i++)
        if (m->k[i].h == h && m->k[i].a >= x && m->k[i].a < best) best = m->k[i].a;
    return best;
}

/* Pops the least key from both; whether they agree.  *a, *h: the queue's. */
static bool pop_both(mp__lowq *q, model *m, uint32_t *a, uint64_t *h) {
    size_t i = model_least(m);
    key want = m->k[i];
    m->k[i] = m->k[--m->len];
    *h = 0;
    return MP_CHECK_OK(mp__lowq_pop(q, a, h)) && *a == want.a && *h == want.h;
}

static void run(size_t npos, int ops, uint64_t seed) {
    mp__lowq q;
    model m = {malloc((size_t)ops * sizeof *m.k), 0};
    uint64_t st = seed, last = 0;
    long agree = 0, total = 0;
    if (!MP_CHECK_OK(mp__lowq_init(&q, npos))) return;
    for (int op = 0; op < ops; op++) {
        uint64_t r = mp_gen_next(&st);
        if (r % 5 < 3 || m.len == 0) { /* push: at the last height or above */
            uint64_t h = last + (r % 3 == 0 ? 0 : (r >> 8) % (r % 7 == 0 ? 1u << 20 : 64));
            uint32_t a = (uint32_t)((r >> 32) % npos);
            MP_CHECK_OK(mp__lowq_push(&q, a, h));
            model_push(&m, h, a);
            continue;
        }
        uint32_t a;
        uint64_t h;
        total++;
        agree += pop_both(&q, &m, &a, &h);
        last = h;
        uint32_t x = (uint32_t)(mp_gen_next(&st) % npos);
        total += 2;
        agree += mp__lowq_next(&q, a) == model_next(&m, last, a);
        agree += mp__lowq_next(&q, x) == model_next(&m, last, x);
    }
    uint32_t a = 0;
    uint64_t h;
    for (; m.len; total++) agree += pop_both(&q, &m, &a, &h); /* drain */
    MP_CHECK_OK(mp__lowq_pop(&q, &a, &h));
    MP_CHECK_EQ_U64(a, UINT32_MAX); /* empty */
    MP_CHECK_EQ_U64(agree, total);
    mp__lowq_free(&q);
    free(m.k);
}

int main(void) {
    static const size_t npos[] = {1, 2, 63, 64, 65, 4096, 4097, 300000};
    for (size_t i = 0; i < sizeof npos / sizeof npos[0]; i++)
        for (uint64_t seed = 1; seed <= 4; seed++) run(npos[i], 3000, 100 * i + seed);
    return mp_test_finish("strip_lowq");
}
