/* pending.c -- TEMPORARY during the first build-out: strategies not yet
 * written fail cleanly.  Each line is deleted when its strategy lands;
 * this file must be gone before the work is called done. */
#include "core/internal.h"
#define PENDING_OFF(fn) mp_status fn(const mp_buffer_t *b, size_t n, uint64_t *o) { (void)b; (void)n; (void)o; return mp__err(MP_EINVAL, #fn " pending"); }
#define PENDING_OBJ(fn) mp_status fn(const mp_buffer_t *b, size_t n, size_t *o, size_t *k) { (void)b; (void)n; (void)o; (void)k; return mp__err(MP_EINVAL, #fn " pending"); }
