/* canary.h -- live blocks with canary bytes, shared by the arena tests:
 * every block taken from an arena is checked against every live block for
 * overlap (and 64-byte alignment) and filled with a pattern of its id; when
 * it is given back the pattern must be intact.  One global set per test
 * program (the tests are single-threaded here). */
#ifndef MP_TEST_CANARY_H
#define MP_TEST_CANARY_H

#include "memplan.h"

#include <stddef.h>
#include <stdint.h>

extern long mp_canary_overlaps;   /* overlapping or misaligned blocks seen */
extern long mp_canary_bad;        /* blocks whose pattern was damaged */

/* Allocates size bytes from a, checks and fills them; returns the block's
 * id (0 when the allocation failed) and, if ptr is not NULL, its address. */
uint64_t mp_canary_take(mp_arena_t *a, uint64_t size, void **ptr);

/* Checks block id's pattern and frees it to a. */
void mp_canary_give(mp_arena_t *a, uint64_t id);

/* Live blocks: how many, and the id of the i-th. */
size_t mp_canary_live(void);
uint64_t mp_canary_live_id(size_t i);

/* Checks that every request of a was counted exactly once and that its
 * live blocks are the canary set's. */
void mp_canary_check_counts(mp_arena_t *a);

/* Forgets every live block (after mp_arena_free_all or destroy). */
void mp_canary_forget(void);

/* Entry points tried first when set (the preload's fast path): an
 * allocation hook returning NULL, or a free hook returning 0, falls back
 * to mp_arena_alloc / mp_arena_free. */
extern void *(*mp_canary_alloc_hook)(mp_arena_t *a, uint64_t size);
extern int (*mp_canary_free_hook)(mp_arena_t *a, void *p);

#endif
