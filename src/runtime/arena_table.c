/* arena_table.c -- the replay arena's backing allocator, its hash table of
 * forwarded blocks (and of blocks left in retired regions: linear probing,
 * backward-shift deletion, at most half full). The live accounting is inline in arena_internal.h.
 * The state machine is in arena.c; the shared state in arena_internal.h. */
#include "arena_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- backing allocator --------------------------------------------------- */

void *mp__arena_libc_alloc(void *user, uint64_t size, uint64_t align) {
    (void)user;
    void *p = NULL;
    if (size > SIZE_MAX) return NULL;
    if (align < sizeof(void *)) align = sizeof(void *);
    return posix_memalign(&p, (size_t)align, (size_t)size) == 0 ? p : NULL;
}

void mp__arena_libc_free(void *user, void *p) {
    (void)user;
    free(p);
}

void *mp__arena_back_alloc(mp_arena_t *a, uint64_t size) {
    void *p = a->opt.backing_alloc(a->opt.backing_user, size, a->opt.align);
    if (p) {
        a->st.backing_bytes += size;
        a->st.peak_backing_bytes = mp__max64(a->st.peak_backing_bytes, a->st.backing_bytes);
    }
    return p;
}

void mp__arena_back_free(mp_arena_t *a, void *p, uint64_t size) {
    if (a->opt.backing_free_sized) a->opt.backing_free_sized(a->opt.backing_user, p, size);
    else a->opt.backing_free(a->opt.backing_user, p);
    a->st.backing_bytes -= size;
}

/* ---- the table of forwarded blocks (linear probing, backward shift) ------ */

static size_t hslot(uintptr_t p, size_t mask) {
    uint64_t h = (uint64_t)p;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 29;
    return (size_t)h & mask;
}

size_t mp__atab_find(const mp_arena_t *a, uintptr_t p) {
    size_t mask = a->slots - 1, i = hslot(p, mask);
    while (a->tab[i].p && a->tab[i].p != p) i = (i + 1) & mask;
    return i;
}

/* Makes room for extra more entries (the table stays at most half full). */
mp_status mp__atab_reserve(mp_arena_t *a, size_t extra) {
    size_t ns = a->slots ? a->slots : 64;
    while (2 * (a->used + extra) > ns) ns *= 2;
    if (ns == a->slots) return MP_OK;
    bent *t = calloc(ns, sizeof *t);
    if (!t) return MP__NOMEM();
    for (size_t i = 0; i < a->slots; i++)
        if (a->tab[i].p) {
            size_t j = hslot(a->tab[i].p, ns - 1);
            while (t[j].p) j = (j + 1) & (ns - 1);
            t[j] = a->tab[i];
        }
    free(a->tab);
    a->tab = t;
    a->slots = ns;
    return MP_OK;
}

mp_status mp__atab_put(mp_arena_t *a, uintptr_t p, uint64_t size, int kind) {
    if (mp__atab_reserve(a, 1) != MP_OK) return MP__NOMEM();
    size_t i = mp__atab_find(a, p);
    a->tab[i] = (bent){p, size, kind};
    a->used++;
    return MP_OK;
}

void mp__atab_erase(mp_arena_t *a, size_t i) {
    size_t mask = a->slots - 1, j = i;
    a->tab[i].p = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!a->tab[j].p) break;
        size_t home = hslot(a->tab[j].p, mask);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            a->tab[i] = a->tab[j];
            a->tab[j].p = 0;
            i = j;
        }
    }
    a->used--;
}

/* Forwards a request; kind K_TRACED records it in the trace. */
mp_status mp__arena_forward(mp_arena_t *a, uint64_t size, int kind, void **out) {
    void *p = mp__arena_back_alloc(a, size);
    if (!p) return mp__err(MP_ENOMEM, "backing allocator failed for %llu bytes",
                           (unsigned long long)size);
    if (mp__atab_put(a, (uintptr_t)p, size, kind) != MP_OK) {
        mp__arena_back_free(a, p, size);
        return MP__NOMEM();
    }
    mp__arena_live_add(a, size);
    *out = p;
    return MP_OK;
}
