/* arena_example.c -- the replay arena end to end: a toy training loop
 * allocates through mp_arena_alloc; after a few iterations the arena has
 * learned the loop and serves it from one planned region.
 *
 *     cc arena_example.c -Iinclude -Lbuild -lmemplan -lm -lpthread
 */
#include "memplan.h"

#include <stdio.h>
#include <string.h>

static int step(mp_arena_t *a) {
    static const uint64_t size[4] = {4096, 16384, 8192, 2048};
    void *act[4], *grad = NULL;
    for (int l = 0; l < 4; l++) {   /* forward: keep every activation */
        if (mp_arena_alloc(a, size[l], &act[l]) != MP_OK) return 1;
        memset(act[l], l, size[l]);
    }
    for (int l = 3; l >= 0; l--) {  /* backward: free as we go */
        void *g;
        if (mp_arena_alloc(a, size[l], &g) != MP_OK) return 1;
        memset(g, 0, size[l]);
        mp_arena_free(a, grad);
        mp_arena_free(a, act[l]);
        grad = g;
    }
    mp_arena_free(a, grad);
    return 0;
}

int main(void) {
    mp_arena_options_t opt;
    mp_arena_options_default(&opt);
    opt.strategy = "auto";
    mp_arena_t *a;
    if (mp_arena_create(&opt, &a) != MP_OK) {
        fprintf(stderr, "arena_example: %s\n", mp_last_error());
        return 1;
    }
    for (int it = 0; it < 20; it++) {
        if (it == 10) {             /* a non-hot part, e.g. evaluation */
            mp_arena_interrupt(a);
            void *p;
            if (mp_arena_alloc(a, 100000, &p) == MP_OK) mp_arena_free(a, p);
            mp_arena_resume(a);
        }
        if (step(a)) {
            fprintf(stderr, "arena_example: %s\n", mp_last_error());
            return 1;
        }
    }
    mp_arena_stats_t st;
    mp_arena_stats(a, &st);
    printf("state %s, %zu requests per iteration, footprint %llu bytes (lower bound %llu, "
           "learned peak %llu)\n",
           mp_arena_state_name(st.state), st.iteration_length,
           (unsigned long long)st.planned_footprint, (unsigned long long)st.lower_bound,
           (unsigned long long)st.learned_peak_bytes);
    printf("served from the region %llu, while learning %llu, interrupted %llu, "
           "other fallbacks %llu\n",
           (unsigned long long)st.served_arena, (unsigned long long)st.served_learning,
           (unsigned long long)st.fb_interrupted,
           (unsigned long long)(st.fb_unforeseen + st.fb_overlap + st.fb_too_large +
                                st.fb_cross + st.fb_small + st.fb_passthrough));
    mp_arena_destroy(a, NULL);
    return 0;
}
