/* prog.c -- a test program for libmemplan-preload.so (tests/test_preload.sh).
 *
 * It knows nothing about memplan.  A loop of iterations allocates and frees
 * blocks above and below the preload's threshold through malloc, calloc,
 * realloc, posix_memalign, aligned_alloc and memalign; every block is
 * filled with a pattern on allocation and checked before it is freed (and
 * the heads and tails of all live blocks after every allocation), so any
 * overlap between two live blocks shows up as an error.  It also checks
 * calloc zeroing, alignments, malloc_usable_size, realloc growth and
 * shrinking, four threads doing the same concurrently, and a forked child
 * that frees an inherited block and allocates again.
 *
 * Output: "checksum HEX" (depends only on the computed data, never on
 * addresses or thread timing) and "errors N".  Exit 0 when N is 0.
 * The same output is expected with and without LD_PRELOAD.
 *
 * Two smaller modes for the trace and summary tests:
 *   prog loop N     the weights, then N iterations of the loop below on
 *                   one thread (20 malloc-family events each, the first
 *                   19: it has no carried block to free), then frees;
 *   prog service    a toy inference service: the weights, then 40
 *                   requests at batch sizes 1, 2, 4 and 8 in the fixed
 *                   order of SERVICE_ORDER (no stretch of 6 requests twice,
 *                   never three alike in a row), each allocating and
 *                   freeing 4 blocks: 8 events, all at least 80 KiB;
 *   prog churn      the preload's cache of 256 B - 64 KiB blocks
 *                   (preload/smallcache.c): three threads each make 6000
 *                   random malloc, calloc, posix_memalign, realloc and
 *                   free calls on blocks of 100 B to 70 KiB, with the
 *                   checks above; the first thread allocates 32 blocks
 *                   that the second frees (a free on another thread); the
 *                   threads exit while their caches hold blocks. */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ITERS 40
#define MAXLIVE 64

typedef struct blk {
    unsigned char *p;
    size_t n;
    uint32_t seed;
} blk;

typedef struct ctx {
    blk live[MAXLIVE];
    int nlive;
    unsigned long errors;
    uint64_t sum;
} ctx;

static unsigned char pat(uint32_t seed, size_t i) {
    uint32_t x = seed ^ (uint32_t)(i * 2654435761u);
    return (unsigned char)(x ^ (x >> 13) ^ (x >> 24));
}

static void fill(unsigned char *p, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; i++) p[i] = pat(seed, i);
}

/* Checks bytes [from, to) of a block against its pattern. */
static int check(const blk *b, size_t from, size_t to) {
    for (size_t i = from; i < to && i < b->n; i++)
        if (b->p[i] != pat(b->seed, i)) return 0;
    return 1;
}

/* Heads, tails and every 4096th byte of every live block. */
static void check_live(ctx *c) {
    for (int k = 0; k < c->nlive; k++) {
        const blk *b = &c->live[k];
        int ok = check(b, 0, 256) && check(b, b->n > 256 ? b->n - 256 : 0, b->n);
        for (size_t i = 4096; ok && i < b->n; i += 4096) ok = check(b, i, i + 1);
        if (!ok) c->errors++;
    }
}

static void add(ctx *c, void *p, size_t n, uint32_t seed, size_t align) {
    if (!p) {
        c->errors++;
        return;
    }
    if (align && (uintptr_t)p % align) c->errors++;
    if (malloc_usable_size(p) < n) c->errors++;
    fill(p, n, seed);
    c->live[c->nlive++] = (blk){p, n, seed};
    check_live(c);
}

/* Verifies, folds into the checksum and frees the k-th live block. */
static void drop(ctx *c, int k) {
    blk b = c->live[k];
    if (!check(&b, 0, b.n)) c->errors++;
    uint64_t h = b.n;
    for (size_t i = 0; i < b.n; i += 61) h = h * 1099511628211ull + b.p[i];
    c->sum = c->sum * 31 + h;
    free(b.p);
    c->live[k] = c->live[--c->nlive];
}

static int find(const ctx *c, uint32_t seed) {
    for (int k = 0; k < c->nlive; k++)
        if (c->live[k].seed == seed) return k;
    return -1;
}

/* One iteration of a toy forward/backward pass; big = 1 KiB units. */
static void iteration(ctx *c, int it, uint32_t tag, size_t big) {
    uint32_t s = tag * 1000003u + (uint32_t)it * 101u;
    add(c, malloc(300 * big), 300 * big, s + 1, 16);
    add(c, malloc(100), 100, s + 2, 16);
    void *z = calloc(160 * big / 8, 8);
    if (z) {
        for (size_t i = 0; i < 160 * big; i++)
            if (((unsigned char *)z)[i]) {
                c->errors++;
                break;
            }
    }
    add(c, z, 160 * big, s + 3, 16);
    void *m = NULL;
    if (posix_memalign(&m, 64, 200 * big) != 0) m = NULL;
    add(c, m, 200 * big, s + 4, 64);
    add(c, aligned_alloc(4096, 96 * big), 96 * big, s + 5, 4096);
    add(c, memalign(32, 90 * big + 17), 90 * big + 17, s + 6, 32);
    add(c, malloc(5000), 5000, s + 7, 16);
    drop(c, find(c, s + 1));
    /* realloc: grow a big block, then shrink it; the prefix must survive */
    int k = find(c, s + 3);
    blk b = c->live[k];
    unsigned char *g = realloc(b.p, 500 * big);
    if (!g) {
        c->errors++;
    } else {
        if (!check(&(blk){g, b.n, b.seed}, 0, b.n)) c->errors++;
        g = realloc(g, 70 * big);
        if (!g || !check(&(blk){g, 70 * big, b.seed}, 0, 70 * big)) c->errors++;
        if (g) c->live[k] = (blk){g, 70 * big, b.seed};
    }
    add(c, malloc(120 * big), 120 * big, s + 8, 16);
    drop(c, find(c, s + 2));
    drop(c, find(c, s + 4));
    drop(c, find(c, s + 8));
    drop(c, find(c, s + 5));
    drop(c, find(c, s + 3));
    drop(c, find(c, s + 7));
    /* s + 6 lives into the next iteration (a carried state) */
    int old = find(c, s - 101 + 6);
    if (old >= 0) drop(c, old);
}

/* Batch size 2^digit of each request of the service mode. */
#define SERVICE_ORDER "0122320212210330013031011020323203212233"

/* One request at batch size b: an input and three layers, each layer's
 * output allocated before the previous one is freed, the last one freed. */
static void request(ctx *c, int r, size_t b) {
    uint32_t s = 7000u + (uint32_t)r * 16u;
    add(c, malloc(b * 80 * 1024), b * 80 * 1024, s, 16);
    for (uint32_t l = 1; l <= 3; l++) {
        size_t n = b * (64 + 32 * l) * 1024;
        add(c, malloc(n), n, s + l, 16);
        drop(c, find(c, s + l - 1));
    }
    drop(c, find(c, s + 3));
}

/* The loop or service mode of the header on ctx c. */
static void small_mode(ctx *c, const char *what, int iters) {
    add(c, malloc(1 << 20), 1 << 20, 7, 16);
    add(c, malloc(40), 40, 8, 16);
    if (!strcmp(what, "loop")) {
        for (int it = 0; it < iters; it++) iteration(c, it, 1, 1024);
    } else {
        for (int r = 0; SERVICE_ORDER[r]; r++) request(c, r, (size_t)1 << (SERVICE_ORDER[r] - '0'));
    }
    while (c->nlive) drop(c, 0);
}

/* xorshift32: the churn's choices, the same with and without the preload. */
static uint32_t rnd(uint32_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 17;
    *x ^= *x << 5;
    return *x;
}

/* 100 B to 70 KiB, about uniform in log size. */
static size_t churn_size(uint32_t *x) {
    size_t lo = 100u << (rnd(x) % 10);
    return lo + rnd(x) % lo;
}

/* One allocation of the churn, by a call chosen at random. */
static void churn_alloc(ctx *c, uint32_t *x, uint32_t seed) {
    size_t n = churn_size(x), al = (size_t)16 << (rnd(x) % 3);
    uint32_t how = rnd(x) % 4;
    if (how == 0) {
        add(c, malloc(n), n, seed, 16);
    } else if (how == 1) {
        unsigned char *z = calloc(n, 1);
        for (size_t i = 0; z && i < n; i++)
            if (z[i]) {
                c->errors++;
                break;
            }
        add(c, z, n, seed, 16);
    } else if (how == 2) {
        void *m = NULL;
        add(c, posix_memalign(&m, al, n) == 0 ? m : NULL, n, seed, al);
    } else if (c->nlive) {   /* realloc a live block; its prefix must survive */
        int k = (int)(rnd(x) % (uint32_t)c->nlive);
        blk b = c->live[k];
        unsigned char *g = realloc(b.p, n);
        if (!g || !check(&(blk){g, b.n < n ? b.n : n, b.seed}, 0, b.n < n ? b.n : n)) c->errors++;
        if (!g) return;
        if (malloc_usable_size(g) < n) c->errors++;
        for (size_t i = b.n; i < n; i++) g[i] = pat(b.seed, i);
        c->live[k] = (blk){g, n, b.seed};
    }
}

typedef struct churn_arg {
    ctx c;
    uint32_t seed;
    blk *handoff;   /* 32 blocks one thread allocates and another frees */
    int role;       /* 1: allocates handoff first, 2: frees it last, 0: neither */
} churn_arg;

static void *churner(void *arg) {
    churn_arg *a = arg;
    ctx *c = &a->c;
    uint32_t x = a->seed;
    if (a->role == 1) {
        for (int i = 0; i < 32; i++) {
            size_t n = 256u << (i % 8);
            a->handoff[i] = (blk){malloc(n), n, a->seed + 50000u + (uint32_t)i};
            if (a->handoff[i].p) fill(a->handoff[i].p, n, a->handoff[i].seed);
            else c->errors++;
        }
    }
    for (uint32_t op = 0; op < 6000; op++) {
        if (c->nlive == MAXLIVE - 1 || (c->nlive && rnd(&x) % 2)) drop(c, (int)(rnd(&x) % (uint32_t)c->nlive));
        else churn_alloc(c, &x, a->seed + op);
    }
    while (c->nlive) drop(c, 0);
    for (int i = 0; a->role == 2 && i < 32; i++) {
        if (!a->handoff[i].p) continue;
        c->live[c->nlive++] = a->handoff[i];
        drop(c, c->nlive - 1);
    }
    return NULL;
}

/* The churn mode of the header: its checksum and errors on ctx out. */
static void churn_mode(ctx *out) {
    static churn_arg a[3];
    static blk handoff[32];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) a[i] = (churn_arg){.seed = 2463534242u + 7919u * (uint32_t)i,
                                                   .handoff = handoff, .role = i < 2 ? i + 1 : 0};
    /* thread 0 ends before thread 1 starts: the handoff is complete */
    if (pthread_create(&t[0], NULL, churner, &a[0]) != 0 || pthread_join(t[0], NULL) != 0) out->errors++;
    for (int i = 1; i < 3; i++)
        if (pthread_create(&t[i], NULL, churner, &a[i]) != 0) out->errors++;
    for (int i = 1; i < 3; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 3; i++) {
        out->errors += a[i].c.errors;
        out->sum = out->sum * 131 + a[i].c.sum;
    }
}

static void *worker(void *arg) {
    ctx *c = arg;
    uint32_t tag = (uint32_t)c->sum;
    c->sum = 0;
    for (int it = 0; it < ITERS / 2; it++) iteration(c, it, tag, 1024);
    while (c->nlive) drop(c, 0);
    return NULL;
}

int main(int argc, char **argv) {
    static ctx main_ctx, th[4];
    ctx *c = &main_ctx;
    if (argc == 3 && !strcmp(argv[1], "loop")) small_mode(c, "loop", atoi(argv[2]));
    else if (argc == 2 && !strcmp(argv[1], "service")) small_mode(c, "service", 0);
    else if (argc == 2 && !strcmp(argv[1], "churn")) churn_mode(c);
    else if (argc != 1) c->errors++;
    if (argc != 1) {
        printf("checksum %016llx\nerrors %lu\n", (unsigned long long)c->sum, c->errors);
        return c->errors ? 1 : 0;
    }
    /* long-lived "weights" allocated before the loop */
    add(c, malloc(1 << 20), 1 << 20, 7, 16);
    add(c, malloc(40), 40, 8, 16);
    for (int it = 0; it < ITERS; it++) iteration(c, it, 1, 1024);
    /* threads: each its own blocks, the same kind of loop */
    pthread_t t[4];
    for (int i = 0; i < 4; i++) {
        th[i].sum = 100 + (uint64_t)i;
        if (pthread_create(&t[i], NULL, worker, &th[i]) != 0) c->errors++;
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        c->errors += th[i].errors;
        c->sum = c->sum * 131 + th[i].sum;
    }
    /* a forked child frees an inherited block and allocates again */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        ctx *d = c;
        int k = find(d, 7);
        if (k >= 0) drop(d, k);
        for (int it = 0; it < 4; it++) iteration(d, it, 9, 1024);
        _exit(d->errors ? 1 : 0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0)
        c->errors++;
    while (c->nlive) drop(c, 0);
    printf("checksum %016llx\nerrors %lu\n", (unsigned long long)c->sum, c->errors);
    return c->errors ? 1 : 0;
}
