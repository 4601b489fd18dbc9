/* device.c -- device models for estimated op times: a roofline, an op
 * takes max(FLOPs / flops, bytes / bandwidth) + a launch cost.  Peak rates
 * from the vendors' data sheets (docs/swap.md), so estimated times are
 * optimistic: real kernels reach a fraction of peak, which makes transfers
 * look relatively slower here than on the real device -- hence each
 * preset's efficiency, the fraction of peak its kernels reach. */
#include "swap_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct preset {
    const char *name;
    double tflops;           /* FP32 peak, 10^12 FLOP/s */
    double gbps;             /* device memory peak, 10^9 bytes/s */
    double efficiency;
    uint64_t launch_ns;
} preset;

/* GTX 1080 Ti: 11.34 TFLOP/s, 484 GB/s (zhang2019's GPU); V100 SXM2:
 * 15.7 TFLOP/s, 900 GB/s; H100 SXM5: 67 TFLOP/s FP32 (no tensor cores),
 * 3350 GB/s.  5 us per kernel launch on all three.  Efficiency: the 1080
 * Ti's 0.25 comes from zhang2019 sec. VI-B3, where VGG16 at batch 100 takes
 * 24 ms to ramp up to 95% of its peak load (about its forward pass: 62.6
 * GFLOP of 3x3 convolutions at 32x32, so 2.6 TFLOP/s reached, 23% of
 * peak); V100 and H100 get 0.4, an assumption (no measurement at hand). */
static const preset PRESETS[] = {
    {"gtx1080ti", 11.34, 484.0, 0.25, 5000},
    {"v100", 15.7, 900.0, 0.4, 5000},
    {"h100", 67.0, 3350.0, 0.4, 5000},
};
#define N_PRESETS (sizeof PRESETS / sizeof PRESETS[0])

const char *mp_swap_device_preset_name(size_t i) {
    if (i < N_PRESETS) return PRESETS[i].name;
    return i == N_PRESETS ? "cpu" : NULL;
}

static void set_device(mp_swap_device_t *o, const char *name, double flops, double bps,
                       double efficiency, uint64_t launch) {
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->flops = flops, o->bytes_per_s = bps, o->efficiency = efficiency, o->launch_ns = launch;
}

/* FLOP/s of a 192^3 single-precision matrix product in i-k-j order (the
 * compiler vectorises the inner loop; no BLAS), best of 3. */
static double measure_flops(float *a, float *b, float *c, size_t n) {
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        memset(c, 0, n * n * sizeof *c);
        double t0 = mp__seconds();
        for (size_t i = 0; i < n; i++)
            for (size_t k = 0; k < n; k++) {
                float x = a[i * n + k];
                for (size_t j = 0; j < n; j++) c[i * n + j] += x * b[k * n + j];
            }
        best = fmin(best, mp__seconds() - t0);
    }
    return 2.0 * (double)n * (double)n * (double)n / fmax(best, 1e-9);
}

/* Bytes/s of a 32 MiB memcpy (read + write counted), best of 3. */
static double measure_bandwidth(void) {
    size_t big = 32u << 20;
    char *x = malloc(big), *y = malloc(big);
    if (!x || !y) return free(x), free(y), 0;
    memset(x, 1, big), memset(y, 0, big);
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = mp__seconds();
        memcpy(y, x, big);
        best = fmin(best, mp__seconds() - t0);
    }
    volatile char sink = y[big / 2];
    (void)sink;
    free(x), free(y);
    return 2.0 * (double)big / fmax(best, 1e-9);
}

static mp_status measure(mp_swap_device_t *o) {
    size_t n = 192;
    float *a = malloc(n * n * sizeof *a), *b = malloc(n * n * sizeof *b),
          *c = malloc(n * n * sizeof *c);
    if (!a || !b || !c) return free(a), free(b), free(c), MP__NOMEM();
    for (size_t i = 0; i < n * n; i++) a[i] = (float)(i % 7), b[i] = (float)(i % 5);
    double flops = measure_flops(a, b, c, n);
    volatile float sink = c[n];
    (void)sink;
    free(a), free(b), free(c);
    double bps = measure_bandwidth();
    if (!(bps > 0)) return MP__NOMEM();
    set_device(o, "cpu", flops, bps, 1.0, 1000);
    return MP_OK;
}

mp_status mp_swap_device_preset(const char *name, mp_swap_device_t *out) {
    if (!name || !out) return mp__err(MP_EINVAL, "swap device: no name");
    for (size_t i = 0; i < N_PRESETS; i++)
        if (!strcmp(name, PRESETS[i].name)) {
            const preset *p = &PRESETS[i];
            set_device(out, p->name, p->tflops * 1e12, p->gbps * 1e9, p->efficiency, p->launch_ns);
            return MP_OK;
        }
    if (!strcmp(name, "cpu")) return measure(out);
    return mp__err(MP_ENOTFOUND, "unknown device '%s' (gtx1080ti, v100, h100, cpu)", name);
}

/* The roofline time of an op. */
uint64_t mp__swap_op_ns(const mp_swap_device_t *d, uint64_t flops, uint64_t bytes) {
    double eff = d->efficiency > 0 && d->efficiency <= 1 ? d->efficiency : 1.0;
    double t = fmax((double)flops / d->flops, (double)bytes / d->bytes_per_s) * 1e9 / eff;
    return d->launch_ns + (t >= 1.8e19 ? UINT64_MAX / 4 : (uint64_t)llround(t));
}
