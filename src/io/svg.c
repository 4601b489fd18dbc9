/* svg.c -- draws a plan as an SVG picture: time across, address up.
 *
 * Every buffer is one <rect> spanning [first, last+1) in time and
 * [offset, offset + aligned size) in address, with a <title> tooltip.  Time
 * and address are scaled linearly onto a fixed 1200x700 plot, so the file
 * grows only with n.  Two sorts of O(n log n) each find the peak step (a
 * sweep over start and end events) and the largest buffers, which get their
 * name written on them when it fits; everything else is one pass.
 * Coordinates are rounded to 0.1 px and computed from rounded endpoints, so
 * neighbours touch exactly; fills are short hex colours hashed from the id
 * (or the object number of an object plan), so the same plan always gives
 * the same bytes.  Above SVG_BIG buffers the outlines are dropped: on
 * sub-pixel rectangles they would paint everything grey. */
#include "io.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PLOT_W 1200.0
#define PLOT_H 700.0
#define M_LEFT 90.0
#define M_RIGHT 230.0  /* room for "lower bound N" with a 20-digit N */
#define M_TOP 64.0
#define M_BOTTOM 56.0
#define SVG_BIG 20000
#define MAX_LABELS 24       /* names written on the largest buffers */
#define MAX_TRIED 4000      /* largest buffers tried for a label */
#define CHAR_W 6.4          /* width of a character at font-size 11, about */

/* What the picture needs to know besides the plan. */
typedef struct svg_info {
    const mp_svg_opts_t *o;
    const char *bound_name;  /* "offsets", "objects" or the caller's */
    uint64_t peak;           /* most aligned bytes live at one step */
    uint64_t peak_t;         /* the first step where they are */
} svg_info;

typedef struct scale {
    uint64_t t0, t1;  /* drawn time range [t0, t1), t1 > t0 */
    double amax;      /* address at the top of the plot, > 0 */
} scale;

/* ---- text ------------------------------------------------------------- */

/* Writes a coordinate given in tenths of a pixel: "12", "12.5", "-3.1". */
static void put_tenths(FILE *f, long long v) {
    if (v < 0) fputc('-', f), v = -v;
    fprintf(f, "%lld", v / 10);
    if (v % 10) fprintf(f, ".%d", (int)(v % 10));
}

static long long tenths(double px) { return llround(px * 10.0); }

/* ---- geometry --------------------------------------------------------- */

static double x_of(const scale *s, uint64_t t) {
    return M_LEFT + (double)(t - s->t0) * PLOT_W / (double)(s->t1 - s->t0);
}

static double y_of(const scale *s, double addr) {
    return M_TOP + PLOT_H - addr * PLOT_H / s->amax;
}

/* Colour of key.  The hue steps by the golden angle (Fibonacci hashing:
 * frac(key * 0.618...) in 64-bit fixed point), so consecutive ids or
 * object numbers, which often sit side by side, differ by ~137 degrees;
 * a hash varies saturation (50..69%) and lightness (62..75%) a little.
 * Light pastels keep dark outlines and text readable. */
static void colour(char out[8], uint64_t key) {
    double hue = (double)((key * 0x9E3779B97F4A7C15ull) >> 40) * 360.0 / 16777216.0;
    uint64_t h = key + 0x9E3779B97F4A7C15ull;   /* splitmix64 finalizer */
    h = (h ^ (h >> 30)) * 0xBF58476D1CE4E5B9ull;
    h = (h ^ (h >> 27)) * 0x94D049BB133111EBull;
    h ^= h >> 31;
    double sat = (50 + h % 20) / 100.0, lig = (62 + (h >> 32) % 14) / 100.0;
    double c = (1.0 - fabs(2.0 * lig - 1.0)) * sat;
    double x = c * (1.0 - fabs(fmod(hue / 60.0, 2.0) - 1.0)), m = lig - c / 2.0;
    double rgb[6][3] = {{c, x, 0}, {x, c, 0}, {0, c, x}, {0, x, c}, {x, 0, c}, {c, 0, x}};
    const double *v = rgb[(int)(hue / 60.0)];
    snprintf(out, 8, "#%02x%02x%02x", (unsigned)lround((v[0] + m) * 255),
             (unsigned)lround((v[1] + m) * 255), (unsigned)lround((v[2] + m) * 255));
}

/* ---- parts of the picture --------------------------------------------- */

static void put_heading(FILE *f, size_t n, const mp_plan_t *p, const svg_info *in) {
    char fp[32], lbh[32], pk[32];
    uint64_t lb = in->o->lower_bound;
    mp__human_bytes(fp, sizeof fp, (double)p->footprint);
    mp__human_bytes(lbh, sizeof lbh, (double)lb);
    mp__human_bytes(pk, sizeof pk, (double)in->peak);
    fputs("<text x=\"90\" y=\"26\" font-size=\"18\" font-weight=\"bold\">", f);
    if (in->o->title && *in->o->title) mp__xml_text(f, in->o->title), fputs(" \xE2\x80\x94 ", f);
    mp__xml_text(f, p->strategy ? p->strategy : "(unnamed strategy)");
    fprintf(f, "</text>\n<text x=\"90\" y=\"48\" font-size=\"13\" fill=\"#444\">%zu buffers", n);
    if (p->object) fprintf(f, " in %zu objects", p->n_objects);
    fprintf(f, " \xC2\xB7 footprint %s", fp);
    if (lb) {
        fputs(" \xC2\xB7 lower bound (", f), mp__xml_text(f, in->bound_name);
        fprintf(f, ") %s \xC2\xB7 footprint / bound = %.3f", lbh, (double)p->footprint / (double)lb);
    }
    if (n) fprintf(f, " \xC2\xB7 peak %s live at t=%" PRIu64, pk, in->peak_t);
    fputs("</text>\n", f);
}

/* Grid lines, tick labels and axis names; times on integer ticks, addresses
 * on ticks that are round in the unit of the top address. */
static void put_axes(FILE *f, const scale *s) {
    double bottom = M_TOP + PLOT_H, right = M_LEFT + PLOT_W;
    fputs("<g stroke=\"#ddd\" stroke-width=\"1\">\n", f);
    double ts = fmax(1.0, mp__nice_step((double)(s->t1 - s->t0), 10.0));
    uint64_t step = ts >= 1.8e19 ? UINT64_MAX : (uint64_t)ts, t = s->t0 / step * step;
    uint64_t tick_t[16];
    int nt = 0;
    bool any = true;
    if (t < s->t0) {   /* round up to a multiple of step, if there is one */
        if (t > UINT64_MAX - step) any = false;
        else t += step;
    }
    for (; any && t <= s->t1 && nt < 16; nt++) {
        tick_t[nt] = t;
        fputs("<line x1=\"", f), put_tenths(f, tenths(x_of(s, t)));
        fputs("\" x2=\"", f), put_tenths(f, tenths(x_of(s, t)));
        fprintf(f, "\" y1=\"%.0f\" y2=\"%.0f\"/>\n", M_TOP, bottom + 5);
        if (t > UINT64_MAX - step) { nt++; break; }
        t += step;
    }
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int k = 0;
    double u = 1.0;
    while (s->amax / u >= 1024.0 && k < 6) u *= 1024.0, k++;
    double as = mp__nice_step(s->amax / u, 8.0);
    int na = 0;
    for (double a = 0; a * u <= s->amax * (1 + 1e-9) && na < 40; a = ++na * as) {
        fputs("<line x1=\"85\" x2=\"", f), put_tenths(f, tenths(right));
        fputs("\" y1=\"", f), put_tenths(f, tenths(y_of(s, a * u)));
        fputs("\" y2=\"", f), put_tenths(f, tenths(y_of(s, a * u)));
        fputs("\"/>\n", f);
    }
    fputs("</g>\n<g font-size=\"12\" fill=\"#333\" text-anchor=\"middle\">\n", f);
    for (int i = 0; i < nt; i++) {
        fputs("<text x=\"", f), put_tenths(f, tenths(x_of(s, tick_t[i])));
        fprintf(f, "\" y=\"%.0f\">%" PRIu64 "</text>\n", bottom + 19, tick_t[i]);
    }
    fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">time (operator step; step t spans [t, t+1))</text>\n",
            M_LEFT + PLOT_W / 2, bottom + 44);
    fputs("</g>\n<g font-size=\"12\" fill=\"#333\" text-anchor=\"end\">\n", f);
    for (int i = 0; i < na; i++) {
        fputs("<text x=\"80\" y=\"", f), put_tenths(f, tenths(y_of(s, i * as * u) + 4));
        if (i == 0) fputs("\">0</text>\n", f);
        else fprintf(f, "\">%.6g %s</text>\n", i * as, unit[k]);
    }
    fprintf(f, "</g>\n<text font-size=\"12\" fill=\"#333\" text-anchor=\"middle\" "
               "transform=\"translate(18 %.0f) rotate(-90)\">offset (address)</text>\n",
            M_TOP + PLOT_H / 2);
}

static void put_buffers(FILE *f, const mp_buffer_t *b, size_t n, const mp_plan_t *p,
                        const scale *s, const char *const *names) {
    if (n > SVG_BIG) fputs("<g stroke=\"none\">\n", f);
    else fputs("<g stroke=\"#000\" stroke-opacity=\"0.55\" stroke-width=\"0.6\">\n", f);
    for (size_t i = 0; i < n; i++) {
        uint64_t asz = mp_buffer_aligned_size(&b[i]);
        if (!asz) asz = b[i].size;   /* overflowing align: draw the raw size */
        long long x0 = tenths(x_of(s, b[i].first)), x1 = tenths(x_of(s, b[i].last + 1));
        long long y0 = tenths(y_of(s, (double)p->offset[i]));
        long long y1 = tenths(y_of(s, (double)p->offset[i] + (double)asz));
        char fill[8];
        colour(fill, p->object ? (uint64_t)p->object[i] : b[i].id);
        /* At least 0.1 px each way, so no buffer vanishes on a large plot. */
        fputs("<rect x=\"", f), put_tenths(f, x0);
        fputs("\" y=\"", f), put_tenths(f, y1);
        fputs("\" width=\"", f), put_tenths(f, x1 - x0 > 0 ? x1 - x0 : 1);
        fputs("\" height=\"", f), put_tenths(f, y0 - y1 > 0 ? y0 - y1 : 1);
        fprintf(f, "\" fill=\"%s\"><title>", fill);
        if (names && names[i] && *names[i]) mp__xml_text(f, names[i]), fputs(", ", f);
        fprintf(f, "id %" PRIu64 ": %" PRIu64 " B", b[i].id, b[i].size);
        if (b[i].size >= 1024) {
            char h[32];
            mp__human_bytes(h, sizeof h, (double)b[i].size);
            fprintf(f, " = %s", h);
        }
        if (asz != b[i].size) fprintf(f, " (%" PRIu64 " aligned)", asz);
        fprintf(f, " at %" PRIu64 ", t=[%" PRIu64 ",%" PRIu64 "]", p->offset[i], b[i].first,
                b[i].last);
        if (p->object) fprintf(f, ", object %zu", p->object[i]);
        fputs("</title></rect>\n", f);
    }
    fputs("</g>\n", f);
}

/* A horizontal line across the plot at addr with its label in the right
 * margin, above the line (above = 1) or below it. */
static void put_level(FILE *f, const scale *s, uint64_t addr, const char *name,
                      const char *colour_, const char *dash, int above) {
    char h[32];
    mp__human_bytes(h, sizeof h, (double)addr);
    long long y = tenths(y_of(s, (double)addr));
    fprintf(f, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"", M_LEFT, M_LEFT + PLOT_W + 6);
    put_tenths(f, y), fputs("\" y2=\"", f), put_tenths(f, y);
    fprintf(f, "\" stroke=\"%s\" stroke-width=\"1.6\"%s/>\n<text x=\"%.0f\" y=\"", colour_,
            dash, M_LEFT + PLOT_W + 9);
    put_tenths(f, y + (above ? -40 : 130));
    fprintf(f, "\" font-size=\"12\" fill=\"%s\">", colour_);
    mp__xml_text(f, name);
    fprintf(f, " %s</text>\n", h);
}

/* ---- the writer ------------------------------------------------------- */

static scale make_scale(const mp_buffer_t *b, size_t n, const mp_plan_t *p, uint64_t lb) {
    scale s = {UINT64_MAX, 0, (double)mp__max64(p->footprint, lb)};
    for (size_t i = 0; i < n; i++) {
        uint64_t asz = mp_buffer_aligned_size(&b[i]);
        s.t0 = mp__min64(s.t0, b[i].first);
        s.t1 = mp__max64(s.t1, b[i].last + 1);
        s.amax = fmax(s.amax, (double)p->offset[i] + (double)(asz ? asz : b[i].size));
    }
    if (n == 0) s.t0 = 0, s.t1 = 1;
    if (s.t1 <= s.t0) s.t1 = s.t0 + 1;   /* only for last == UINT64_MAX */
    /* 4% headroom keeps the footprint line off the frame. */
    s.amax = s.amax > 0 ? s.amax * 1.04 : 1.0;
    return s;
}

/* The step where the most aligned bytes are live. */
static mp_status find_peak(const mp_buffer_t *b, size_t n, svg_info *in) {
    return mp__load_peak(b, n, true, &in->peak, &in->peak_t);
}

/* The peak step as a red band across the plot, labelled at the top. */
static void put_peak(FILE *f, const scale *s, const svg_info *in) {
    double x0 = x_of(s, in->peak_t), x1 = in->peak_t < s->t1 ? x_of(s, in->peak_t + 1) : x0;
    char h[32];
    mp__human_bytes(h, sizeof h, (double)in->peak);
    if (x1 - x0 < 1.0) x1 = x0 + 1.0;
    fputs("<path d=\"M", f), put_tenths(f, tenths(x0));
    fprintf(f, " %.0fH", M_TOP), put_tenths(f, tenths(x1));
    fprintf(f, "V%.0fH", M_TOP + PLOT_H), put_tenths(f, tenths(x0));
    fprintf(f, "Z\" fill=\"#d03030\" fill-opacity=\"0.10\" stroke=\"#d03030\" "
               "stroke-opacity=\"0.6\" stroke-dasharray=\"3 3\"/>\n<text x=\"");
    put_tenths(f, tenths((x0 + x1) / 2));
    fprintf(f, "\" y=\"%.0f\" font-size=\"11\" fill=\"#b03020\" text-anchor=\"%s\">peak t=%" PRIu64
               ": %s live</text>\n",
            M_TOP - 4, x0 < M_LEFT + 80 ? "start" : x1 > M_LEFT + PLOT_W - 80 ? "end" : "middle",
            in->peak_t, h);
}

/* Code points of s (bytes that do not start one count too). */
static size_t text_len(const char *s) {
    size_t k = 0;
    for (; *s; s++) k += ((unsigned char)*s & 0xC0) != 0x80;
    return k;
}

/* Writes the name of each of the largest buffers (up to MAX_LABELS of the
 * MAX_TRIED largest) on its rectangle, with its size when that fits too.
 * Text is centred and only written where its estimated width fits inside
 * the rectangle, so labels never overlap each other or leave their
 * buffer. */
static mp_status put_labels(FILE *f, const mp_buffer_t *b, size_t n, const mp_plan_t *p,
                            const scale *s, const char *const *names) {
    if (!n) return MP_OK;
    mp__key *k = malloc(n * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) {
        uint64_t asz = mp_buffer_aligned_size(&b[i]);
        k[i] = (mp__key){UINT64_MAX - (asz ? asz : b[i].size), 0, i};
    }
    mp_status st = mp__sort_keys(k, n);
    size_t written = 0;
    fputs("<g font-size=\"11\" fill=\"#111\" text-anchor=\"middle\" pointer-events=\"none\">\n", f);
    for (size_t j = 0; st == MP_OK && j < n && j < MAX_TRIED && written < MAX_LABELS; j++) {
        size_t i = k[j].i;
        double w = x_of(s, b[i].last + 1) - x_of(s, b[i].first);
        double y0 = y_of(s, (double)p->offset[i]);
        double h = y0 - y_of(s, (double)p->offset[i] + (double)(UINT64_MAX - k[j].a));
        if (h < 13.0 || w < 4 * CHAR_W) continue;
        char id[32], sz[32];
        const char *name = names && names[i] && *names[i] ? names[i] : NULL;
        if (!name) snprintf(id, sizeof id, "id %" PRIu64, b[i].id), name = id;
        mp__human_bytes(sz, sizeof sz, (double)b[i].size);
        double len = (double)text_len(name);
        bool with_size = (len + 3 + (double)strlen(sz)) * CHAR_W + 6 <= w;
        if (!with_size && len * CHAR_W + 6 > w) continue;
        fputs("<text x=\"", f), put_tenths(f, tenths(x_of(s, b[i].first) + w / 2));
        fputs("\" y=\"", f), put_tenths(f, tenths(y0 - h / 2 + 4));
        fputs("\">", f);
        mp__xml_text(f, name);
        if (with_size) fprintf(f, " (%s)", sz);
        fputs("</text>\n", f);
        written++;
    }
    fputs("</g>\n", f);
    free(k);
    return st;
}

static mp_status put_svg(FILE *f, const mp_buffer_t *b, size_t n, const mp_plan_t *p,
                         svg_info *in) {
    mp_status st = find_peak(b, n, in);
    if (st != MP_OK) return st;
    uint64_t lb = in->o->lower_bound;
    scale s = make_scale(b, n, p, lb);
    double w = M_LEFT + PLOT_W + M_RIGHT, h = M_TOP + PLOT_H + M_BOTTOM;
    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n"
               "<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n"
               "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\"/>\n",
            w, h, w, h, w, h, M_LEFT, M_TOP, PLOT_W, PLOT_H);
    put_heading(f, n, p, in);
    put_axes(f, &s);
    put_buffers(f, b, n, p, &s, in->o->names);
    if ((st = put_labels(f, b, n, p, &s, in->o->names)) != MP_OK) return st;
    if (n) put_peak(f, &s, in);
    put_level(f, &s, p->footprint, "footprint", "#b03020", "", 1);
    if (lb) {
        char name[80];
        snprintf(name, sizeof name, "lower bound (%s)", in->bound_name);
        put_level(f, &s, lb, name, "#1f4f9f", " stroke-dasharray=\"7 4\"", 0);
    }
    fprintf(f, "<path d=\"M%.0f %.0fV%.0fH%.0f\" fill=\"none\" stroke=\"#555\"/>\n</svg>\n",
            M_LEFT, M_TOP, M_TOP + PLOT_H, M_LEFT + PLOT_W);
    return MP_OK;
}

mp_status mp_plan_write_svg_opts(const char *path, const mp_buffer_t *b, size_t n,
                                 const mp_plan_t *plan, const mp_svg_opts_t *opts) {
    if (!path) return mp__err(MP_EINVAL, "mp_plan_write_svg: path is NULL");
    if (!plan || (n && (!b || !plan->offset)))
        return mp__err(MP_EINVAL, "mp_plan_write_svg: %s is NULL",
                       !plan ? "plan" : !b ? "buffer array" : "plan->offset");
    if (plan->n != n)
        return mp__err(MP_EINVAL, "mp_plan_write_svg: plan is for %zu buffers, problem has %zu",
                       plan->n, n);
    for (size_t i = 0; i < n; i++)
        if (b[i].last < b[i].first || b[i].last == UINT64_MAX)
            return mp__err(MP_EINVAL, "mp_plan_write_svg: buffer %zu (id %" PRIu64
                                      ") has an invalid interval [%" PRIu64 ", %" PRIu64 "]",
                           i, b[i].id, b[i].first, b[i].last);
    static const mp_svg_opts_t none = {0};
    svg_info in = {opts ? opts : &none, NULL, 0, 0};
    in.bound_name = in.o->bound_name && *in.o->bound_name ? in.o->bound_name
                    : plan->object                       ? "objects"
                                                         : "offsets";
    mp__outfile o;
    mp_status st = mp__out_open(&o, path);
    if (st != MP_OK) return st;
    st = put_svg(o.f, b, n, plan, &in);
    mp_status cs = mp__out_close(&o, st == MP_OK);
    return st != MP_OK ? st : cs;
}

mp_status mp_plan_write_svg(const char *path, const mp_buffer_t *b, size_t n,
                            const mp_plan_t *plan, uint64_t lower_bound, const char *title) {
    mp_svg_opts_t o = {.title = title, .lower_bound = lower_bound};
    return mp_plan_write_svg_opts(path, b, n, plan, &o);
}
