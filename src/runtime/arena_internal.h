/* arena_internal.h -- the replay arena's state, shared by arena.c (the
 * state machine, planning, the entry points) and arena_table.c (the
 * backing allocator, the table of forwarded blocks, live accounting). */
#ifndef MP_ARENA_INTERNAL_H
#define MP_ARENA_INTERNAL_H

#include "../core/internal.h"

#include <pthread.h>

#define CROSS UINT64_MAX          /* offset of a slot never placed in the region */
#define DEFAULT_MAX_LEARN ((size_t)1 << 22)

/* kinds of table entries; K_TRACED is a flag: the block is in the trace */
enum { K_FORWARD = 1, K_RETIRED = 2, K_TRACED = 4 };

typedef struct bent {   /* a forwarded block (or one left in a retired region) */
    uintptr_t p;        /* 0: empty slot */
    uint64_t size;
    int kind;
} bent;

typedef struct retired {
    unsigned char *base;
    uint64_t size;
    size_t live;
} retired;

struct mp_arena_t {
    pthread_mutex_t mu;
    mp_arena_options_t opt;
    char strategy[64];
    mp_arena_state state;
    size_t interrupted;
    mp_trace_t *trace;          /* while learning or relearning */
    size_t next_check;
    /* the plan: m slots */
    size_t m, pos;
    bool replan;
    mp_buffer_t *slot;          /* first/last of the learned iteration, largest size seen */
    uint64_t *psize;            /* size the current plan gave each slot */
    uint64_t *off;              /* offset or CROSS */
    uint64_t *live_end;         /* end offset of the slot's live region block, 0: none */
    uint64_t *live_req;         /* its requested size */
    unsigned char *live_tr;     /* 1: that block is in the (relearning) trace */
    unsigned char *base;
    uint64_t region;
    mp__tset live;              /* (offset, slot) of live region blocks */
    retired *ret;
    size_t n_ret, cap_ret;
    bent *tab;                  /* forwarded blocks, open addressing */
    size_t slots, used;
    size_t win_reqs, win_miss;  /* the current window of m replayed requests */
    size_t bad_windows;         /* consecutive windows mostly falling back */
    mp_arena_stats_t st;
};

/* Backing allocator (libc default) and accounting of the bytes it holds. */
void *mp__arena_libc_alloc(void *user, uint64_t size, uint64_t align);
void mp__arena_libc_free(void *user, void *p);
void *mp__arena_back_alloc(mp_arena_t *a, uint64_t size);
void mp__arena_back_free(mp_arena_t *a, void *p, uint64_t size);
/* The table of forwarded blocks: index of p's entry or of the empty slot
 * where it would go; room for extra more; insert; erase entry i. */
size_t mp__atab_find(const mp_arena_t *a, uintptr_t p);
mp_status mp__atab_reserve(mp_arena_t *a, size_t extra);
mp_status mp__atab_put(mp_arena_t *a, uintptr_t p, uint64_t size, int kind);
void mp__atab_erase(mp_arena_t *a, size_t i);
/* Live block accounting (requested bytes). */
void mp__arena_live_add(mp_arena_t *a, uint64_t size);
void mp__arena_live_sub(mp_arena_t *a, uint64_t size);
/* Forwards a request to the backing allocator; kind K_TRACED marks it as
 * recorded in the trace (the caller records it). */
mp_status mp__arena_forward(mp_arena_t *a, uint64_t size, int kind, void **out);

#endif
