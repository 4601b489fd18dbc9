/* trace_svg.c -- the memory-load picture of a trace: live bytes over
 * logical time, with detected iteration boundaries dashed.
 *
 * With n events and W = 1200 columns, column c shows the maximum live bytes
 * of events [cn/W, (c+1)n/W) (every event its own column when n <= W), so
 * the file size is O(W) and the pass O(n).  Written through the public
 * trace API only. */
#include "io.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_W 1200.0
#define PLOT_H 500.0
#define M_LEFT 100.0
#define M_TOP 64.0

mp_status mp_trace_write_svg(const char *path, const mp_trace_t *t, const mp_period_t *period,
                             const char *title) {
    mp_trace_stats_t st;
    mp_trace_stats(t, &st);
    size_t n = 0;
    const mp_event_t *ev = mp_trace_events(t, &n);
    size_t cols = n < (size_t)PLOT_W ? n : (size_t)PLOT_W;
    uint64_t *colmax = calloc(cols ? cols : 1, sizeof *colmax);
    if (!colmax) return MP__NOMEM();
    uint64_t live = 0;
    for (size_t i = 0, c = 0; i < n; i++) {
        const mp_event_t *e = &ev[i];
        if (e->kind == MP_EV_ALLOC) live += e->size;
        if (e->kind == MP_EV_FREE) live -= e->size;
        while (c + 1 < cols && (c + 1) * n <= i * cols) c++;   /* column of event i */
        if (live > colmax[c]) colmax[c] = live;
    }
    mp__outfile o;
    mp_status s = mp__out_open(&o, path);
    if (s != MP_OK) {
        free(colmax);
        return s;
    }
    FILE *f = o.f;
    double W = M_LEFT + PLOT_W + 40, H = M_TOP + PLOT_H + 60, base = M_TOP + PLOT_H;
    double ymax = st.peak_bytes ? (double)st.peak_bytes * 1.05 : 1.0;
    char hp[32];
    mp__human_bytes(hp, sizeof hp, (double)(st.peak_bytes));
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    fputs("<text x=\"100\" y=\"26\" font-size=\"18\" font-weight=\"bold\">", f);
    mp__xml_text(f, title && *title ? title : "memory load");
    fprintf(f, "</text>\n<text x=\"100\" y=\"48\" font-size=\"13\" fill=\"#444\">%zu events "
               "\xC2\xB7 %zu allocations \xC2\xB7 peak %s at event %zu",
            st.events, st.allocs, hp, st.peak_time);
    if (period && period->found)
        fprintf(f, " \xC2\xB7 period %zu events, warm-up %zu, %zu iterations", period->period,
                period->prefix, period->iterations);
    fputs("</text>\n", f);
    /* axes */
    fprintf(f, "<g stroke=\"#999\" fill=\"none\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" "
               "y2=\"%.0f\"/><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/></g>\n",
            M_LEFT, base, M_LEFT + PLOT_W, base, M_LEFT, M_TOP, M_LEFT, base);
    fprintf(f, "<g font-size=\"12\" fill=\"#333\"><text x=\"%.0f\" y=\"%.0f\" "
               "text-anchor=\"middle\">logical time (event index), 0 .. %zu</text>"
               "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">%s</text>"
               "<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"end\">0</text></g>\n",
            M_LEFT + PLOT_W / 2, base + 40, n, M_LEFT - 6,
            M_TOP + PLOT_H - (double)st.peak_bytes * PLOT_H / ymax + 4, hp, M_LEFT - 6, base + 4);
    /* iteration boundaries */
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
    /* the curve: a step line over the columns */
    if (cols) {
        fprintf(f, "<path fill=\"#9bc\" fill-opacity=\"0.5\" stroke=\"#246\" stroke-width=\"1\" d=\"M%.1f %.1f",
                M_LEFT, base);
        for (size_t c = 0; c < cols; c++) {
            double x0 = M_LEFT + (double)c * PLOT_W / (double)cols;
            double x1 = M_LEFT + (double)(c + 1) * PLOT_W / (double)cols;
            double y = base - (double)colmax[c] * PLOT_H / ymax;
            fprintf(f, " L%.1f %.1f L%.1f %.1f", x0, y, x1, y);
        }
        fprintf(f, " L%.1f %.1f Z\"/>\n", M_LEFT + PLOT_W, base);
    }
    fputs("</svg>\n", f);
    free(colmax);
    return mp__out_close(&o, true);
}
