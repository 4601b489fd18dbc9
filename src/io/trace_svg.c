/* trace_svg.c -- the memory-load picture of a trace: live bytes over
 * logical time, with round ticks on both axes, the peak event marked,
 * detected iteration boundaries dashed, and a legend.
 *
 * With n events and W = 1200 columns, column c shows the maximum live bytes
 * of events [cn/W, (c+1)n/W) (every event its own column when n <= W), so
 * the file size is O(W) and the pass O(n).  Written through the public
 * trace API only. */
#include "io.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_W 1200.0
#define PLOT_H 500.0
#define M_LEFT 100.0
#define M_TOP 64.0
#define MAX_TICKS 40

/* Column maxima of live bytes: colmax[c] for c < cols. */
static uint64_t *load_columns(const mp_event_t *ev, size_t n, size_t cols) {
    uint64_t *colmax = calloc(cols ? cols : 1, sizeof *colmax);
    if (!colmax) return NULL;
    uint64_t live = 0;
    for (size_t i = 0, c = 0; i < n; i++) {
        const mp_event_t *e = &ev[i];
        if (e->kind == MP_EV_ALLOC) live += e->size;
        if (e->kind == MP_EV_FREE) live -= e->size;
        while (c + 1 < cols && (c + 1) * n <= i * cols) c++;   /* column of event i */
        if (live > colmax[c]) colmax[c] = live;
    }
    return colmax;
}

/* Horizontal grid lines and byte labels on round values of the unit of
 * ymax; vertical grid lines and event labels on round event indices. */
static void put_ticks(FILE *f, size_t n, double ymax) {
    double base = M_TOP + PLOT_H;
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int k = 0;
    double u = 1.0;
    while (ymax / u >= 1024.0 && k < 6) u *= 1024.0, k++;
    double as = mp__nice_step(ymax / u, 6.0);
    fputs("<g class=\"ticks\" font-size=\"12\" fill=\"#333\">\n", f);
    for (int i = 0; i * as * u <= ymax && i < MAX_TICKS; i++) {
        double y = base - i * as * u * PLOT_H / ymax;
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>",
                M_LEFT - 4, M_LEFT + PLOT_W, y, y);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">", M_LEFT - 7, y + 4);
        if (i == 0) fputs("0</text>\n", f);
        else fprintf(f, "%.6g %s</text>\n", i * as, unit[k]);
    }
    double ts = n ? fmax(1.0, mp__nice_step((double)n, 10.0)) : 1.0;
    for (int i = 0; n && i * ts <= (double)n && i < MAX_TICKS; i++) {
        double x = M_LEFT + i * ts * PLOT_W / (double)n;
        fprintf(f, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#e4e4e4\"/>", x,
                x, M_TOP, base + 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%.0f</text>\n", x, base + 18,
                i * ts);
    }
    fputs("</g>\n", f);
}

/* The legend: one swatch and label per kind of mark, in the plot's top
 * right corner on a white box. */
static void put_legend(FILE *f, bool period) {
    double x = M_LEFT + PLOT_W - 250, y = M_TOP + 10;
    fprintf(f, "<g class=\"legend\" font-size=\"12\" fill=\"#333\">\n"
               "<rect x=\"%.0f\" y=\"%.0f\" width=\"240\" height=\"%d\" fill=\"#fff\" "
               "fill-opacity=\"0.9\" stroke=\"#bbb\"/>\n",
            x, y, period ? 68 : 50);
    fprintf(f, "<path d=\"M%.0f %.0fh22v-10h-22z\" fill=\"#9bc\" fill-opacity=\"0.5\" "
               "stroke=\"#246\"/><text x=\"%.0f\" y=\"%.0f\">live bytes (max per column)</text>\n",
            x + 10, y + 20, x + 40, y + 19);
    fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#d03030\" "
               "stroke-width=\"2\"/><text x=\"%.0f\" y=\"%.0f\">peak</text>\n",
            x + 21, x + 21, y + 26, y + 40, x + 40, y + 37);
    if (period)
        fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#c33\" "
                   "stroke-dasharray=\"4 3\"/><text x=\"%.0f\" y=\"%.0f\">iteration start</text>\n",
                x + 10, x + 32, y + 54, y + 54, x + 40, y + 58);
    fputs("</g>\n", f);
}

static void put_trace(FILE *f, const mp_trace_stats_t *st, size_t n, const uint64_t *colmax,
                      size_t cols, const mp_period_t *period, const char *title) {
    double W = M_LEFT + PLOT_W + 40, H = M_TOP + PLOT_H + 60, base = M_TOP + PLOT_H;
    double ymax = st->peak_bytes ? (double)st->peak_bytes * 1.05 : 1.0;
    char hp[32];
    mp__human_bytes(hp, sizeof hp, (double)(st->peak_bytes));
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    fputs("<text x=\"100\" y=\"26\" font-size=\"18\" font-weight=\"bold\">", f);
    mp__xml_text(f, title && *title ? title : "memory load");
    fprintf(f, "</text>\n<text x=\"100\" y=\"48\" font-size=\"13\" fill=\"#444\">%zu events "
               "\xC2\xB7 %zu allocations \xC2\xB7 peak %s at event %zu",
            st->events, st->allocs, hp, st->peak_time);
    if (period && period->found)
        fprintf(f, " \xC2\xB7 period %zu events, warm-up %zu, %zu iterations", period->period,
                period->prefix, period->iterations);
    fputs("</text>\n", f);
    put_ticks(f, n, ymax);
    fprintf(f, "<g stroke=\"#999\" fill=\"none\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
               "y2=\"%.0f\"/><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/></g>\n",
            M_LEFT, base, M_LEFT + PLOT_W, base, M_LEFT, M_TOP, M_LEFT, base);
    fprintf(f, "<g font-size=\"12\" fill=\"#333\" text-anchor=\"middle\"><text x=\"%.0f\" "
               "y=\"%.0f\">logical time (event index)</text><text transform=\"translate(18 %.0f) "
               "rotate(-90)\">live bytes</text></g>\n",
            M_LEFT + PLOT_W / 2, base + 44, M_TOP + PLOT_H / 2);
    if (period && period->found && n) {
        fputs("<g stroke=\"#c33\" stroke-dasharray=\"4 3\">\n", f);
        for (size_t j = 0; j <= period->iterations; j++) {
            double x = M_LEFT + (double)period->start[j] * PLOT_W / (double)n;
            fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"><title>iteration "
                       "%zu starts at event %zu</title></line>\n",
                    x, M_TOP, x, base, j, period->start[j]);
        }
        fputs("</g>\n", f);
    }
    if (cols) {   /* the curve: a step line over the columns */
        fprintf(f, "<path fill=\"#9bc\" fill-opacity=\"0.5\" stroke=\"#246\" stroke-width=\"1\" "
                   "d=\"M%.1f %.1f",
                M_LEFT, base);
        for (size_t c = 0; c < cols; c++) {
            double x0 = M_LEFT + (double)c * PLOT_W / (double)cols;
            double x1 = M_LEFT + (double)(c + 1) * PLOT_W / (double)cols;
            double y = base - (double)colmax[c] * PLOT_H / ymax;
            fprintf(f, " L%.1f %.1f L%.1f %.1f", x0, y, x1, y);
        }
        fprintf(f, " L%.1f %.1f Z\"/>\n", M_LEFT + PLOT_W, base);
    }
    if (n && st->peak_bytes) {   /* the peak: a red line from the axis to the curve's top */
        double x = M_LEFT + ((double)st->peak_time + 0.5) * PLOT_W / (double)n;
        double y = base - (double)st->peak_bytes * PLOT_H / ymax;
        fprintf(f, "<g class=\"peak\"><line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.1f\" "
                   "stroke=\"#d03030\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" "
                   "font-size=\"12\" fill=\"#b03020\" text-anchor=\"%s\">peak %s at event %zu"
                   "</text></g>\n",
                x, x, base, y, x, y - 6, x < M_LEFT + 150 ? "start" : x > M_LEFT + PLOT_W - 150 ? "end" : "middle",
                hp, st->peak_time);
    }
    put_legend(f, period && period->found);
    fputs("</svg>\n", f);
}

mp_status mp_trace_write_svg(const char *path, const mp_trace_t *t, const mp_period_t *period,
                             const char *title) {
    mp_trace_stats_t st;
    mp_trace_stats(t, &st);
    size_t n = 0;
    const mp_event_t *ev = mp_trace_events(t, &n);
    size_t cols = n < (size_t)PLOT_W ? n : (size_t)PLOT_W;
    uint64_t *colmax = load_columns(ev, n, cols);
    if (!colmax) return MP__NOMEM();
    mp__outfile o;
    mp_status s = mp__out_open(&o, path);
    if (s == MP_OK) {
        put_trace(o.f, &st, n, colmax, cols, period, title);
        s = mp__out_close(&o, true);
    }
    free(colmax);
    return s;
}
