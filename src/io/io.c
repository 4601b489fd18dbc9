/* io.c -- a line reader, CSV fields and strict decimal numbers with
 * file:line:field errors (the output files are outfile.c's). */
#include "io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

mp_status mp__lines_open(mp__lines *r, const char *path) {
    memset(r, 0, sizeof *r);
    if (!path) return mp__err(MP_EINVAL, "no input path given");
    r->path = path;
    r->f = fopen(path, "r");
    if (!r->f) return mp__err(MP_EIO, "%s: %s", path, strerror(errno));
    struct stat st;
    /* fopen opens a directory; reading it would only say "read error". */
    if (fstat(fileno(r->f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(r->f);
        r->f = NULL;
        return mp__err(MP_EIO, "%s: is a directory", path);
    }
    return MP_OK;
}

char *mp__lines_next(mp__lines *r, mp_status *st) {
    errno = 0;
    ssize_t got = getline(&r->buf, &r->cap, r->f);
    if (got < 0) {
        if (ferror(r->f))
            *st = mp__err(MP_EIO, "%s: read error: %s", r->path, strerror(errno ? errno : EIO));
        return NULL;
    }
    size_t len = (size_t)got;
    char *line = r->buf;
    r->lineno++;
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
    if (r->lineno == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3, len -= 3;
    r->len = len;
    r->nul = memchr(line, 0, len);
    for (char *p = (char *)r->nul; p; p = memchr(p + 1, 0, len - (size_t)(p + 1 - line)))
        *p = MP__NUL_MARK;
    return line;
}

mp_status mp__lines_nul(const mp__lines *r, char *const *f, size_t k, const char *const *names,
                        size_t n_names) {
    if (!r->nul) return MP_OK;
    size_t i = 0;
    while (i < k && !(r->nul >= f[i] && r->nul < f[i] + strlen(f[i]))) i++;
    if (!names)
        return mp__err(MP_EPARSE, "%s:%zu: header: column %zu contains a NUL byte", r->path,
                       r->lineno, i + 1);
    if (i < n_names && names[i])
        return mp__err(MP_EPARSE, "%s:%zu: field '%s': contains a NUL byte", r->path, r->lineno,
                       names[i]);
    return mp__err(MP_EPARSE, "%s:%zu: column %zu: contains a NUL byte", r->path, r->lineno,
                   i + 1);
}

void mp__lines_close(mp__lines *r) {
    if (r->f) fclose(r->f);
    free(r->buf);
    memset(r, 0, sizeof *r);
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    char *e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
    return s;
}

size_t mp__csv_split(char *line, char **field, size_t max) {
    size_t k = 0;
    char *p = line;
    for (;;) {
        char *c = strchr(p, ',');
        if (c) *c = 0;
        if (k < max) field[k] = trim(p);
        k++;
        if (!c) break;
        p = c + 1;
    }
    return k;
}

mp_status mp__parse_u64(const mp__lines *r, const char *name, const char *text, uint64_t *out) {
    if (!*text)
        return mp__err(MP_EPARSE, "%s:%zu: field '%s': empty", r->path, r->lineno, name);
    uint64_t v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return mp__err(MP_EPARSE, "%s:%zu: field '%s': '%s' is not a non-negative integer",
                           r->path, r->lineno, name, text);
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return mp__err(MP_EPARSE, "%s:%zu: field '%s': '%s' does not fit in 64 bits",
                           r->path, r->lineno, name, text);
        v = v * 10 + d;
    }
    *out = v;
    return MP_OK;
}

char *mp__fmt_u64(char *p, uint64_t v) {
    char tmp[20];
    size_t k = 0;
    do tmp[k++] = (char)('0' + v % 10); while ((v /= 10) != 0);
    while (k) *p++ = tmp[--k];
    return p;
}
