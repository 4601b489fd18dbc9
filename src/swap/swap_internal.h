/* swap_internal.h -- private helpers shared by the files of src/swap/.
 * Nothing here is public. */
#ifndef MEMPLAN_SWAP_INTERNAL_H
#define MEMPLAN_SWAP_INTERNAL_H

#include "../core/internal.h"

#include <time.h>

/* Monotonic seconds, for the measured presets. */
static inline double mp__seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The roofline time of an op on device d (device.c). */
uint64_t mp__swap_op_ns(const mp_swap_device_t *d, uint64_t flops, uint64_t bytes);

#endif
