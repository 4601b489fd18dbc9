/* fuzz_arena.c -- libFuzzer target: a trace (memplan-trace/1) replayed
 * through the replay arena.
 *
 * The trace's allocations and frees are played twice against one arena
 * (blocks still live after a pass are freed before the next), the second
 * time with the iteration boundaries of period detection marked, so the
 * arena learns, plans and replays.  Every block handed out must be aligned,
 * and is filled with a tag of its own that must still be there when it is
 * freed: two live blocks overlapping in the planned region would overwrite
 * each other's tags.  No block may be live at the end. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

/* Allocation sizes come from the input: traces whose blocks sum above this
 * (or with a block above BLOCK_MAX) are skipped, so that a run does not
 * allocate gigabytes; tags are checked over at most TAG_BYTES at each end. */
#define BYTES_MAX (64u << 20)
#define BLOCK_MAX (4u << 20)
enum { TAG_BYTES = 256 };

/* Fills (check = 0) or checks (check = 1) both ends of a block with tag. */
static void tag_block(unsigned char *p, uint64_t size, unsigned char tag, int check) {
    uint64_t k = size < 2 * TAG_BYTES ? size : TAG_BYTES;
    unsigned char *ends[2] = {p, p + size - k};
    for (int e = 0; e < (size <= k ? 1 : 2); e++)
        for (uint64_t i = 0; i < k; i++) {
            if (check) FZ_CHECK(ends[e][i] == tag, "a live block was overwritten (arena overlap)");
            else ends[e][i] = tag;
        }
}

static void replay(mp_arena_t *a, const mp_event_t *ev, size_t n, const mp_period_t *mark,
                   void **ptr) {
    size_t next_mark = 0;
    for (size_t i = 0; i < n; i++) {
        if (mark && mark->found && next_mark <= mark->iterations && i == mark->start[next_mark]) {
            mp_arena_mark_iteration(a);
            next_mark++;
        }
        if (ev[i].kind == MP_EV_ALLOC) {
            void *p = NULL;
            mp_status st = mp_arena_alloc(a, ev[i].size, &p);
            FZ_CHECK(st == MP_OK || st == MP_ENOMEM, "mp_arena_alloc failed");
            if (st != MP_OK) continue;
            FZ_CHECK(p && (uintptr_t)p % 64 == 0, "a block is not aligned");
            tag_block(p, ev[i].size, (unsigned char)(i * 131 + 7), 0);
            ptr[i] = p;
        } else if (ev[i].kind == MP_EV_FREE) {
            size_t b = (size_t)ev[i].block;
            if (!ptr[b]) continue;
            tag_block(ptr[b], ev[b].size, (unsigned char)(b * 131 + 7), 1);
            FZ_CHECK(mp_arena_free(a, ptr[b]) == MP_OK, "mp_arena_free refused a live block");
            ptr[b] = NULL;
        }
    }
    for (size_t i = 0; i < n; i++)
        if (ptr[i]) {
            tag_block(ptr[i], ev[i].size, (unsigned char)(i * 131 + 7), 1);
            FZ_CHECK(mp_arena_free(a, ptr[i]) == MP_OK, "mp_arena_free refused a live block");
            ptr[i] = NULL;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > FZ_MAX_INPUT) return 0;
    mp_trace_t *t = NULL;
    if (mp_trace_read(fz_file(data, size), &t) != MP_OK) return 0;
    size_t n;
    const mp_event_t *ev = mp_trace_events(t, &n);
    mp_trace_stats_t s;
    FZ_CHECK(mp_trace_stats(t, &s) == MP_OK, "mp_trace_stats failed");
    int small = s.bytes <= BYTES_MAX;
    for (size_t i = 0; small && i < n; i++) small = ev[i].kind != MP_EV_ALLOC || ev[i].size <= BLOCK_MAX;
    if (!small || n == 0) {
        mp_trace_free(t);
        return 0;
    }
    mp_period_t p;
    if (mp_period_detect(t, NULL, &p) != MP_OK) memset(&p, 0, sizeof p);
    void **ptr = calloc(n, sizeof *ptr);
    mp_arena_options_t o;
    mp_arena_options_default(&o);
    o.warmup_iterations = 2;
    o.relearn_after = 1;
    mp_arena_t *a = NULL;
    FZ_CHECK(ptr && mp_arena_create(&o, &a) == MP_OK, "mp_arena_create failed");
    replay(a, ev, n, NULL, ptr);
    replay(a, ev, n, &p, ptr);
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    FZ_CHECK(st.live_blocks == 0 && st.live_bytes == 0, "blocks live after every free");
    mp_arena_destroy(a, NULL);
    free(ptr);
    mp_period_free(&p);
    mp_trace_free(t);
    return 0;
}
