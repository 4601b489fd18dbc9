/* xml.c -- helpers shared by the SVG writers: XML character data that is
 * always well-formed, byte counts in binary units, round tick steps. */
#include "io.h"

#include <math.h>

/* Length of the valid UTF-8 sequence at p that XML allows, 0 if none. */
size_t mp__utf8_len(const unsigned char *p) {
    size_t len = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2;
    if (p[0] < 0xC2 || p[0] > 0xF4) return 0;
    for (size_t k = 1; k < len; k++)
        if ((p[k] & 0xC0) != 0x80) return 0;
    /* Overlong forms, surrogates, > U+10FFFF and U+FFFE/FFFF are not XML. */
    if ((p[0] == 0xE0 && p[1] < 0xA0) || (p[0] == 0xED && p[1] > 0x9F) ||
        (p[0] == 0xF0 && p[1] < 0x90) || (p[0] == 0xF4 && p[1] > 0x8F))
        return 0;
    if (p[0] == 0xEF && p[1] == 0xBF && p[2] >= 0xBE) return 0;
    return len;
}

/* Writes s as XML character data: markup characters escaped, control
 * characters as spaces and bytes that are not valid UTF-8 as '?', so any
 * caller string yields a well-formed file. */
void mp__xml_text(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    while (*p) {
        size_t len;
        switch (*p) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        default:
            if (*p < 0x20) {
                fputc(' ', f);
            } else if (*p < 0x80) {
                fputc(*p, f);
            } else if ((len = mp__utf8_len(p)) != 0) {
                fwrite(p, 1, len, f);
                p += len;
                continue;
            } else {
                fputc('?', f);
            }
        }
        p++;
    }
}

/* "1.5 MiB": bytes in the largest binary unit that keeps the number >= 1. */
void mp__human_bytes(char *out, size_t cap, double v) {
    static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int k = 0;
    while (v >= 1024.0 && k < 6) v /= 1024.0, k++;
    /* Three significant digits, but never an exponent: 1000..1023 of a
     * unit print as "1010 KiB", not "1.01e+03 KiB". */
    snprintf(out, cap, !k ? "%.0f %s" : v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v,
             unit[k]);
}


/* A step of 1, 2 or 5 times a power of ten giving about `want` ticks. */
double mp__nice_step(double range, double want) {
    double raw = range / want, mag = pow(10.0, floor(log10(raw))), r = raw / mag;
    return (r < 1.5 ? 1.0 : r < 3.5 ? 2.0 : r < 7.5 ? 5.0 : 10.0) * mag;
}
