/* link.c -- the transfer model: a host <-> device copy of b bytes takes
 * latency + b / bandwidth in each direction (zhang2019 sec. IV-E runs them
 * on two copy streams).  Presets and their sources: docs/swap.md. */
#include "swap_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct preset {
    const char *name;
    uint64_t out_lat_ns;
    double out_gbps;         /* 10^9 bytes per second */
    uint64_t in_lat_ns;
    double in_gbps;
} preset;

/* pcie3: SINGA's measurements with pinned memory, quoted by the issue from
 * zhang2019's implementation.  pcie4/pcie5: the same efficiency (13.2 of
 * 15.75 GB/s) on links of 2x and 4x the bandwidth, same latencies (an
 * assumption).  nvlink-c2c: 450 GB/s per direction (NVIDIA's 900 GB/s
 * total for Grace Hopper), 5 us latency (an assumption). */
static const preset PRESETS[] = {
    {"pcie3", 47200, 13.2, 9700, 12.2},
    {"pcie4", 47200, 26.4, 9700, 24.4},
    {"pcie5", 47200, 52.8, 9700, 48.8},
    {"nvlink-c2c", 5000, 450.0, 5000, 450.0},
};
#define N_PRESETS (sizeof PRESETS / sizeof PRESETS[0])

const char *mp_swap_link_preset_name(size_t i) {
    if (i < N_PRESETS) return PRESETS[i].name;
    return i == N_PRESETS ? "measured" : NULL;
}

static void set_link(mp_swap_link_t *o, const char *name, uint64_t out_lat, double out_bps,
                     uint64_t in_lat, double in_bps) {
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", name);
    o->out_lat_ns = out_lat, o->out_bytes_per_s = out_bps;
    o->in_lat_ns = in_lat, o->in_bytes_per_s = in_bps;
}

/* Host memcpy of 64 MiB (best of 3) for the bandwidth, of 4 KiB (best of
 * 200) for the latency: what a copy between two host pools costs here. */
static mp_status measure(mp_swap_link_t *o) {
    size_t big = 64u << 20;
    char *a = malloc(big), *b = malloc(big);
    if (!a || !b) return free(a), free(b), MP__NOMEM();
    memset(a, 1, big), memset(b, 2, big);
    double best = 1e30, small = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = mp__seconds();
        memcpy(b, a, big);
        best = fmin(best, mp__seconds() - t0);
    }
    for (int r = 0; r < 200; r++) {
        double t0 = mp__seconds();
        memcpy(b + (size_t)r * 4096, a, 4096);
        small = fmin(small, mp__seconds() - t0);
    }
    volatile char sink = b[big - 1];
    (void)sink;
    free(a), free(b);
    double bps = (double)big / fmax(best, 1e-9);
    uint64_t lat = (uint64_t)fmax(small * 1e9 - 4096.0 / bps * 1e9, 0.0);
    set_link(o, "measured", lat, bps, lat, bps);
    return MP_OK;
}

mp_status mp_swap_link_preset(const char *name, mp_swap_link_t *out) {
    if (!name || !out) return mp__err(MP_EINVAL, "swap link: no name");
    for (size_t i = 0; i < N_PRESETS; i++) {
        const preset *p = &PRESETS[i];
        if (!strcmp(name, p->name)) {
            set_link(out, p->name, p->out_lat_ns, p->out_gbps * 1e9, p->in_lat_ns, p->in_gbps * 1e9);
            return MP_OK;
        }
    }
    if (!strcmp(name, "measured")) return measure(out);
    return mp__err(MP_ENOTFOUND, "unknown link '%s' (pcie3, pcie4, pcie5, nvlink-c2c, measured, "
                   "or BW,LAT)", name);
}

/* "12G" -> 12e9: a positive decimal with an optional K, M, G or T (powers
 * of 1000) and an optional "B/s". */
static bool parse_bandwidth(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v > 0) || !isfinite(v)) return false;
    const char *units = "KMGT";
    const char *u = *end ? strchr(units, *end) : NULL;
    if (u && *end) v *= pow(1000.0, (double)(u - units + 1)), end++;
    if (!strcmp(end, "B/s") || !strcmp(end, "")) return *out = v, true;
    return false;
}

/* "9.7us" -> 9700: a non-negative decimal with ns (default), us or ms. */
static bool parse_latency(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0 || !isfinite(v)) return false;
    double scale = !strcmp(end, "") || !strcmp(end, "ns") ? 1 : !strcmp(end, "us") ? 1e3
                 : !strcmp(end, "ms") ? 1e6 : -1;
    if (scale < 0 || v * scale > 1e15) return false;
    *out = (uint64_t)llround(v * scale);
    return true;
}

mp_status mp_swap_link_parse(const char *text, mp_swap_link_t *out) {
    if (!text || !out) return mp__err(MP_EINVAL, "swap link: no text");
    const char *comma = strchr(text, ',');
    char bw[64];
    size_t len = comma ? (size_t)(comma - text) : 0;
    if (!comma || len == 0 || len >= sizeof bw)
        return mp__err(MP_EINVAL, "link '%s': expected BANDWIDTH,LATENCY (e.g. 12G,10us)", text);
    memcpy(bw, text, len), bw[len] = 0;
    double bps;
    uint64_t lat;
    if (!parse_bandwidth(bw, &bps))
        return mp__err(MP_EINVAL, "link '%s': field 'bandwidth': '%s' is not a positive number of "
                       "bytes/s (e.g. 12G)", text, bw);
    if (!parse_latency(comma + 1, &lat))
        return mp__err(MP_EINVAL, "link '%s': field 'latency': '%s' is not a time (e.g. 10us, "
                       "500ns)", text, comma + 1);
    set_link(out, "custom", lat, bps, lat, bps);
    return MP_OK;
}

static uint64_t transfer_ns(uint64_t lat, double bps, uint64_t size) {
    double t = ceil((double)size * 1e9 / bps);
    return lat + (t >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)t);
}

uint64_t mp_swap_out_ns(const mp_swap_link_t *l, uint64_t size) {
    return transfer_ns(l->out_lat_ns, l->out_bytes_per_s, size);
}

uint64_t mp_swap_in_ns(const mp_swap_link_t *l, uint64_t size) {
    return transfer_ns(l->in_lat_ns, l->in_bytes_per_s, size);
}
