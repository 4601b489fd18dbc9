/* canary.c -- the canary block set of canary.h. */
#include "canary.h"

#include "harness.h"

#define MAXLIVE 256

typedef struct blk {
    unsigned char *p;
    uint64_t size, id;
} blk;

static blk live[MAXLIVE];
static size_t nlive;
static uint64_t next_id = 1;
long mp_canary_overlaps, mp_canary_bad;
void *(*mp_canary_alloc_hook)(mp_arena_t *a, uint64_t size);
int (*mp_canary_free_hook)(mp_arena_t *a, void *p);

static unsigned char pat(uint64_t id, uint64_t k) { return (unsigned char)(id * 131 + k * 7 + 1); }

uint64_t mp_canary_take(mp_arena_t *a, uint64_t size, void **ptr) {
    void *p = mp_canary_alloc_hook ? mp_canary_alloc_hook(a, size) : NULL;
    if (!p && (!MP_CHECK_OK(mp_arena_alloc(a, size, &p)) || !p)) return 0;
    unsigned char *c = p;
    for (size_t i = 0; i < nlive; i++)
        if (c < live[i].p + live[i].size && live[i].p < c + size) mp_canary_overlaps++;
    if (((uintptr_t)p & 63) != 0) mp_canary_overlaps++;   /* alignment */
    uint64_t id = next_id++;
    for (uint64_t k = 0; k < size; k++) c[k] = pat(id, k);
    if (MP_CHECK(nlive < MAXLIVE)) live[nlive++] = (blk){c, size, id};
    if (ptr) *ptr = p;
    return id;
}

void mp_canary_give(mp_arena_t *a, uint64_t id) {
    for (size_t i = 0; i < nlive; i++)
        if (live[i].id == id) {
            for (uint64_t k = 0; k < live[i].size; k++)
                if (live[i].p[k] != pat(id, k)) {
                    mp_canary_bad++;
                    break;
                }
            if (!mp_canary_free_hook || !mp_canary_free_hook(a, live[i].p))
                MP_CHECK_OK(mp_arena_free(a, live[i].p));
            live[i] = live[--nlive];
            return;
        }
    MP_CHECK(!"freeing an unknown test block");
}

size_t mp_canary_live(void) { return nlive; }

uint64_t mp_canary_live_id(size_t i) { return i < nlive ? live[i].id : 0; }

void mp_canary_forget(void) { nlive = 0; }

void mp_canary_check_counts(mp_arena_t *a) {
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    MP_CHECK_EQ_U64(st.requests, st.served_learning + st.served_arena + st.fb_interrupted +
                                     st.fb_unforeseen + st.fb_overlap + st.fb_too_large +
                                     st.fb_cross + st.fb_small + st.fb_passthrough +
                                     st.fb_unmatched);
    MP_CHECK_EQ_U64(st.live_blocks, nlive);
}
