/* report_html.c -- writes an rp_report as one self-contained HTML page:
 * the summary, the strategy (or stage) table and the list of what is live
 * at the peak as static HTML, and the drawn plan and load curve as JSON
 * data that the inline script (report_page.c) turns into interactive SVG.
 *
 * Every string from the input (names, ops, titles, paths) is user data:
 * in HTML it is written as XML character data (markup escaped, control
 * characters as spaces, invalid UTF-8 as '?'); inside the JSON block '<',
 * '>' and '&' are \u escapes as well, so no name can close the script
 * element.  The file goes through the library's output helper (a
 * temporary file renamed into place; FIFOs, devices and "-" directly). */
#include "report.h"

#include "io/io.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define PEAK_ROWS 100   /* rows of the peak list; the rest are counted */

static void html(FILE *f, const char *s) { mp__xml_text(f, s); }

/* s as a JSON string safe inside <script>: quotes, backslashes, control
 * characters and < > & escaped, invalid UTF-8 as '?'. */
static void json_str(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        size_t len;
        if (*p == '"' || *p == '\\') fputc('\\', f), fputc(*p, f);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') fprintf(f, "\\u%04x", *p);
        else if (*p < 0x80) fputc(*p, f);
        else if ((len = mp__utf8_len(p)) != 0) {
            fwrite(p, 1, len, f);
            p += len;
            continue;
        } else fputc('?', f);
        p++;
    }
    fputc('"', f);
}

static void human(FILE *f, uint64_t v) {
    char h[32];
    fputs(cli_human(v, h, sizeof h), f);
}

/* A lifetime in the picture's units as steps: "3-7", "3.5-7". */
static void steps(FILE *f, uint64_t t, unsigned tdiv) {
    if (tdiv == 2) fprintf(f, "%" PRIu64 "%s", t / 2, t % 2 ? ".5" : "");
    else fprintf(f, "%" PRIu64, t);
}

static void put_head(FILE *f, const rp_report *r) {
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>",
          f);
    html(f, r->title);
    fputs(" \xE2\x80\x94 memplan report</title>\n<style>\n", f);
    fputs(rp_page_css, f);
    /* Errors are recorded before anything else runs, for the page itself
     * (a banner) and for tests (data-errors on <html>). */
    fputs("</style>\n<script>window.mpErrors=[];window.addEventListener('error',function(e){"
          "window.mpErrors.push(String(e.message));document.documentElement.setAttribute("
          "'data-errors',String(window.mpErrors.length));});</script>\n</head>\n", f);
}

static void put_summary(FILE *f, const rp_report *r) {
    fputs("<header>\n<h1 id=\"title\">", f);
    html(f, r->title);
    fputs("</h1>\n<p class=\"sub\">memplan report of the ", f);
    html(f, r->kind);
    fputs(" <code>", f);
    html(f, r->input);
    fputs("</code> \xC2\xB7 memplan " MP_VERSION "</p>\n</header>\n<section id=\"summary\">\n<dl>\n",
          f);
    for (size_t i = 0; i < r->n_facts; i++) {
        fputs("<dt>", f), html(f, r->fact[i].key), fputs("</dt><dd>", f);
        html(f, r->fact[i].value), fputs("</dd>\n", f);
    }
    fputs("</dl>\n</section>\n", f);
}

static void put_table(FILE *f, const rp_report *r) {
    bool graph = !strcmp(r->kind, "graph");
    uint64_t most = 1;
    for (size_t i = 0; i < r->n_rows; i++)
        if (!r->row[i].skipped && r->row[i].footprint > most) most = r->row[i].footprint;
    fprintf(f, "<section>\n<h2>%s</h2>\n<p class=\"note\">Each ratio is the footprint over the "
               "lower bound of the row's kind: no plan of that kind can go below its bound, so "
               "1.000 is optimal. Every plan was proven valid by the checker.</p>\n"
               "<table id=\"strategies\">\n<thead><tr><th>%s</th><th>kind</th><th>memory</th>"
               "<th>ratio to bound</th><th>bound</th><th>ms</th><th></th><th>note</th></tr>"
               "</thead>\n<tbody>\n",
            graph ? "Stages" : "Strategies", graph ? "stage" : "strategy");
    for (size_t i = 0; i < r->n_rows; i++) {
        const rp_row *w = &r->row[i];
        fprintf(f, "<tr class=\"row%s%s\"><td>", i == r->best ? " best" : "",
                w->skipped ? " skipped" : "");
        html(f, w->name);
        if (i == r->best) fputs(" <span class=\"star\" title=\"drawn below\">\xE2\x98\x85</span>", f);
        fputs("</td><td>", f), html(f, w->kind), fputs("</td>", f);
        if (w->skipped) {
            fputs("<td colspan=\"5\">skipped</td><td>", f);
        } else {
            fprintf(f, "<td class=\"num\" title=\"%" PRIu64 " bytes\">", w->footprint);
            human(f, w->footprint);
            fputs("</td><td class=\"num ratio\">", f);
            if (w->bound) fprintf(f, "%.3f", (double)w->footprint / (double)w->bound);
            fputs("</td><td>", f);
            if (w->bound) human(f, w->bound), fputs(" (", f), html(f, w->bound_name), fputs(")", f);
            fprintf(f, "</td><td class=\"num\">%.3f</td><td><div class=\"bar\" style=\"width:%.1f%%\">"
                       "</div></td><td>",
                    w->ms, 100.0 * (double)w->footprint / (double)most);
        }
        html(f, w->note);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody>\n</table>\n</section>\n", f);
}

/* --train: recomputation and swapping, each against its baseline. */
static void put_training(FILE *f, const rp_report *r) {
    fputs("<section>\n<h2>Training: recompute or swap</h2>\n<p class=\"note\">What the "
          "library's recomputation policies (<code>memplan remat</code>, its defaults) and "
          "AutoSwap's selection (<code>memplan swap</code>) would do to this training graph; "
          "each ratio is to the first row of its kind.</p>\n<table id=\"training\">\n<thead>"
          "<tr><th>what</th><th>peak</th><th>ratio</th><th>cost</th><th>note</th></tr></thead>\n"
          "<tbody>\n",
          f);
    for (size_t i = 0; i < r->n_extra; i++) {
        const rp_extra *x = &r->extra[i];
        fputs("<tr class=\"train-row\"><td>", f), html(f, x->name), fputs("</td><td class=\"num\">", f);
        if (x->memory) human(f, x->memory);
        fputs("</td><td class=\"num\">", f);
        if (x->memory && x->baseline) fprintf(f, "%.3f", (double)x->memory / (double)x->baseline);
        fputs("</td><td>", f), html(f, x->cost), fputs("</td><td>", f), html(f, x->note);
        fputs("</td></tr>\n", f);
    }
    fputs("</tbody>\n</table>\n</section>\n", f);
}

static void put_plan_section(FILE *f, const rp_report *r) {
    fputs("<section>\n<h2>The smallest plan</h2>\n<p class=\"note\" id=\"plan-note\">", f);
    html(f, r->plan_note);
    fputs(". Time runs across, addresses up; hover a buffer for its name, op, shape, size and "
          "lifetime. Zoom on time with the wheel or the buttons, drag to pan, double-click to "
          "reset.</p>\n<div class=\"controls\"><button id=\"zoom-in\">zoom in</button> "
          "<button id=\"zoom-out\">zoom out</button> <button id=\"zoom-peak\">peak</button> "
          "<button id=\"zoom-reset\">reset</button> <span id=\"zoom-range\"></span></div>\n"
          "<div class=\"figure\" id=\"plan-box\"></div>\n</section>\n",
          f);
}

static int by_size_desc(const void *a, const void *b) {
    const rp_buf *x = *(const rp_buf *const *)a, *y = *(const rp_buf *const *)b;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int live_desc(const void *a, const void *b) {
    const rp_live *x = a, *y = b;
    if (x->size != y->size) return x->size > y->size ? -1 : 1;
    return x->since < y->since ? -1 : x->since > y->since;
}

/* The load curve's box and the list of what is live at the peak. */
static int put_load_section(FILE *f, const rp_report *r) {
    fputs("<section>\n<h2>Memory load</h2>\n<div class=\"figure\" id=\"load-box\"></div>\n", f);
    fprintf(f, "<h3 id=\"peak-title\">Live at the peak: ");
    human(f, r->peak);
    bool trace = !strcmp(r->kind, "trace");
    fprintf(f, " at %s ", trace ? "event" : "step");
    steps(f, r->peak_t, trace ? 1 : r->tdiv);
    fputs("</h3>\n<table id=\"peak-list\">\n<thead><tr>", f);
    size_t shown = 0, total = 0;
    if (trace) {
        fputs("<th>block (handle)</th><th>size</th><th>share of the peak</th><th>allocated at event"
              "</th></tr></thead>\n<tbody>\n",
              f);
        qsort(r->live, r->n_live, sizeof *r->live, live_desc);
        for (; shown < r->n_live && shown < PEAK_ROWS; shown++) {
            const rp_live *l = &r->live[shown];
            fprintf(f, "<tr class=\"peak-row\"><td>0x%" PRIx64 "</td><td class=\"num\">", l->handle);
            human(f, l->size);
            fprintf(f, "</td><td class=\"num\">%.1f%%</td><td class=\"num\">%zu</td></tr>\n",
                    r->peak ? 100.0 * (double)l->size / (double)r->peak : 0.0, l->since);
        }
        total = r->n_live;
    } else {
        fputs("<th>tensor</th><th>size</th><th>share of the peak</th><th>op</th><th>shape</th>"
              "<th>live (steps)</th></tr></thead>\n<tbody>\n",
              f);
        const rp_buf **at = malloc((r->n_buf ? r->n_buf : 1) * sizeof *at);
        if (!at) return EXIT_INPUT;
        for (size_t i = 0; i < r->n_buf; i++)
            if (r->buf[i].first <= r->peak_t && r->peak_t <= r->buf[i].last) at[total++] = &r->buf[i];
        qsort(at, total, sizeof *at, by_size_desc);
        for (; shown < total && shown < PEAK_ROWS; shown++) {
            const rp_buf *x = at[shown];
            fputs("<tr class=\"peak-row\"><td>", f);
            if (x->name) html(f, x->name);
            else fprintf(f, "id %" PRIu64, x->id);
            fputs("</td><td class=\"num\">", f), human(f, x->size);
            fprintf(f, "</td><td class=\"num\">%.1f%%</td><td>",
                    r->peak ? 100.0 * (double)x->size / (double)r->peak : 0.0);
            html(f, x->op ? x->op : "");
            fputs("</td><td>", f), html(f, x->shape), fputs("</td><td>", f);
            steps(f, x->first, r->tdiv), fputs("\xE2\x80\x93", f), steps(f, x->last, r->tdiv);
            fputs("</td></tr>\n", f);
        }
        free(at);
    }
    fputs("</tbody>\n</table>\n", f);
    if (shown < total) fprintf(f, "<p class=\"note\">and %zu smaller ones</p>\n", total - shown);
    fputs("</section>\n", f);
    return EXIT_OK;
}

/* The data the script draws from, as JSON in a non-executed script. */
static void put_data(FILE *f, const rp_report *r) {
    const rp_row *best = r->best < r->n_rows ? &r->row[r->best] : NULL;
    fputs("<script id=\"mp-data\" type=\"application/json\">{\"kind\":", f);
    json_str(f, r->kind);
    fprintf(f, ",\"tdiv\":%u,\"tname\":", r->tdiv ? r->tdiv : 1);
    json_str(f, r->time_name);
    fputs(",\"best\":", f);
    json_str(f, best ? best->name : "");
    fprintf(f, ",\"footprint\":%" PRIu64 ",\"bound\":%" PRIu64 ",\"bname\":",
            best ? best->footprint : 0, best ? best->bound : 0);
    json_str(f, best ? best->bound_name : "");
    fputs(",\"b\":[", f);
    for (size_t i = 0; i < r->n_buf; i++) {
        const rp_buf *x = &r->buf[i];
        fprintf(f, "%s[%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", i ? ",\n" : "",
                x->id, x->first, x->last, x->size, x->offset);
        json_str(f, x->name), fputc(',', f), json_str(f, x->op), fputc(',', f);
        json_str(f, x->shape), fputc(']', f);
    }
    fputs("],\"c\":{\"t\":[", f);
    for (size_t i = 0; i < r->n_curve; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", r->ct[i]);
    fputs("],\"v\":[", f);
    for (size_t i = 0; i < r->n_curve; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", r->cv[i]);
    fprintf(f, "],\"end\":%" PRIu64 ",\"x\":", r->t_end);
    json_str(f, r->curve_x);
    fprintf(f, "},\"peak\":{\"t\":%" PRIu64 ",\"v\":%" PRIu64 "},\"ppeak\":%" PRIu64 "}</script>\n",
            r->peak_t, r->peak, r->plan_peak_t);
}

static int put_page(FILE *f, const rp_report *r) {
    put_head(f, r);
    fputs("<body>\n<div id=\"error-banner\" hidden></div>\n", f);
    put_summary(f, r);
    put_table(f, r);
    if (r->n_extra) put_training(f, r);
    if (r->n_buf) put_plan_section(f, r);
    if (put_load_section(f, r)) return EXIT_INPUT;
    fputs("<div id=\"tip\" hidden></div>\n<footer>Made by <code>memplan report</code>; "
          "no network access, everything is in this file.</footer>\n",
          f);
    put_data(f, r);
    fputs("<script>\n", f);
    fputs(rp_page_js, f);
    fputs("</script>\n</body>\n</html>\n", f);
    return EXIT_OK;
}

int rp_write_html(const rp_report *r, const char *path) {
    mp__outfile o;
    if (mp__out_open(&o, path) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        return EXIT_INPUT;
    }
    int rc = put_page(o.f, r);
    if (rc) fprintf(stderr, "memplan: out of memory\n");
    if (mp__out_close(&o, rc == EXIT_OK) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        return EXIT_INPUT;
    }
    return rc;
}
