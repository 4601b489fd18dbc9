/* swap_svg.c -- the memory load of a swapped iteration as a picture
 * (mp_swap_write_svg): per op, the load with no swapping and with a plan,
 * the limit when there is one, each curve's peak marked; x is the op
 * index, y the load in binary units.  Deterministic output, valid XML. */
#include "io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { W = 1000, H = 420, L = 85, R = 270, T = 40, B = 50 };

static double x_at(size_t j, size_t n) { return L + (double)(W - L - R) * (double)j / (double)(n > 1 ? n - 1 : 1); }
static double y_at(double v, double top) { return H - B - (double)(H - T - B) * v / top; }

static void curve(FILE *f, const uint64_t *load, size_t n, double top, const char *color, double width) {
    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" points=\"", color, width);
    for (size_t j = 0; j < n; j++) fprintf(f, "%s%.1f,%.1f", j ? " " : "", x_at(j, n), y_at((double)load[j], top));
    fputs("\"/>\n", f);
}

static void peak_mark(FILE *f, const uint64_t *load, size_t n, double top, const char *color) {
    size_t at = 0;
    for (size_t j = 1; j < n; j++)
        if (load[j] > load[at]) at = j;
    char h[32];
    mp__human_bytes(h, sizeof h, (double)load[at]);
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>peak %s at op %zu</title></circle>\n",
            x_at(at, n), y_at((double)load[at], top), color, h, at);
}

static void axes(FILE *f, size_t n, double top) {
    fprintf(f, "<g stroke=\"black\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
               "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/></g>\n", L, H - B, W - R, H - B, L, T, L, H - B);
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int k = 0;
    double u = 1.0;
    while (top / u >= 1024.0 && k < 4) u *= 1024.0, k++;
    double step = mp__nice_step(top / u, 6.0);
    for (int i = 0; i < 40 && i * step * u <= top * (1 + 1e-9); i++) {
        double y = y_at(i * step * u, top);
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                   "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n",
                L, W - R, y, y, L - 6, y + 4, i * step, unit[k]);
    }
    double xs = mp__nice_step((double)(n ? n - 1 : 0), 8.0);
    for (int i = 0; i < 40 && i * xs <= (double)(n ? n - 1 : 0); i++)
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", x_at((size_t)(i * xs), n),
                H - B + 16, i * xs);
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">op</text>\n", (L + W - R) / 2, H - 12);
}

static void legend(FILE *f, int row, const char *color, const char *text) {
    fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"3\"/>"
               "<text x=\"%d\" y=\"%d\">", W - R + 12, W - R + 32, T + 10 + 18 * row, T + 10 + 18 * row, color,
            W - R + 38, T + 14 + 18 * row);
    mp__xml_text(f, text);
    fputs("</text>\n", f);
}

mp_status mp_swap_write_svg(const char *path, const char *title, const mp_swap_iter_t *it,
                            const mp_swap_plan_t *plan, const mp_swap_sim_t *sim, uint64_t limit) {
    if (!path || !it || !sim) return mp__err(MP_EINVAL, "swap svg: NULL argument");
    size_t n = it->n_ops;
    if (sim->n_ops != n || !sim->op_load) return mp__err(MP_EINVAL, "swap svg: the simulation is not of this iteration");
    uint64_t *plain = malloc((n + 1) * sizeof *plain), peak = 0;
    if (!plain) return MP__NOMEM();
    mp_status s = mp_swap_load(it, plain, &peak, NULL);
    mp__outfile o;
    if (!s) s = mp__out_open(&o, path);
    if (s) {
        free(plain);
        return s;
    }
    double top = (double)(peak > limit ? peak : limit);
    for (size_t j = 0; j < n; j++)
        if ((double)sim->op_load[j] > top) top = (double)sim->op_load[j];
    if (top <= 0) top = 1;
    top *= 1.05;
    FILE *f = o.f;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
               "font-size=\"12\">\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n<text x=\"%d\" y=\"22\" "
               "text-anchor=\"middle\" font-size=\"14\">", W, H, W, H, (L + W - R) / 2);
    mp__xml_text(f, title && *title ? title : "memory load");
    fputs("</text>\n", f);
    axes(f, n, top);
    if (limit) {
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-dasharray=\"6 4\"/>\n",
                L, W - R, y_at((double)limit, top), y_at((double)limit, top));
        char hl[32], lt[48];
        mp__human_bytes(hl, sizeof hl, (double)limit);
        snprintf(lt, sizeof lt, "limit %s", hl);
        legend(f, 2, "#d62728", lt);
    }
    curve(f, plain, n, top, "#999", 2);
    curve(f, sim->op_load, n, top, "#1f77b4", 2.5);
    peak_mark(f, plain, n, top, "#666");
    peak_mark(f, sim->op_load, n, top, "#1f77b4");
    char h1[32], h2[32], a[96], b[96];
    mp__human_bytes(h1, sizeof h1, (double)sim->original_peak);
    mp__human_bytes(h2, sizeof h2, (double)sim->peak);
    snprintf(a, sizeof a, "no swapping: %s", h1);
    snprintf(b, sizeof b, "%zu swapped (%s): %s", plan ? plan->n : 0, plan && *plan->score ? plan->score : "plan", h2);
    legend(f, 0, "#999", a);
    legend(f, 1, "#1f77b4", b);
    fputs("</svg>\n", f);
    free(plain);
    return mp__out_close(&o, true);
}
