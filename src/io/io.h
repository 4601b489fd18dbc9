/* io.h -- private helpers of the readers and writers in src/io/.
 *
 * Every writer goes through mp__out_open/mp__out_close (outfile.c): a
 * regular file is replaced through a temporary file beside it, so no
 * failure leaves a partial file; FIFOs, devices and "-" (stdout) are
 * written directly; symbolic links are written through.  CSV lines are
 * split into fields in place. */
#ifndef MEMPLAN_IO_H
#define MEMPLAN_IO_H

#include "../core/internal.h"

#include <stdio.h>

typedef struct mp__outfile {
    FILE *f;           /* where to write */
    int fd;            /* f's descriptor (for writers that bypass stdio) */
    char *target;      /* final path of a replaced file (links resolved) */
    char *tmp;         /* temporary beside target, renamed over it on close;
                          NULL when written directly */
    const char *path;  /* as given, for messages */
    bool borrowed;     /* f is stdout or stderr: flushed, never closed */
} mp__outfile;

/* Opens path for writing as outfile.c's header describes.  MP_EIO naming
 * path on failure (a directory: "PATH: is a directory"). */
mp_status mp__out_open(mp__outfile *o, const char *path);
/* Flushes and closes; a temporary file is synced and renamed into place.
 * On any failure (or if ok is false) a temporary file is removed.  Returns
 * MP_EIO "PATH: write failed: REASON" on a write error (ENOSPC too). */
mp_status mp__out_close(mp__outfile *o, bool ok);

/* A line reader over a file: one line at a time, no length limit.  A
 * UTF-8 byte order mark opening the file is skipped.  A NUL byte cannot
 * end a line early: the line's length comes from getline, each NUL is
 * replaced by MP__NUL_MARK (so splitting sees the whole line) and the
 * first one is remembered for mp__lines_nul to report. */
typedef struct mp__lines {
    FILE *f;
    const char *path;
    char *buf;
    size_t cap;
    size_t len;       /* length of the current line */
    size_t lineno;
    const char *nul;  /* the current line's first NUL byte, or NULL */
} mp__lines;

#define MP__NUL_MARK '\x01'

/* Opens path for reading; MP_EIO "PATH: REASON", "PATH: is a directory". */
mp_status mp__lines_open(mp__lines *r, const char *path);
/* Next line without its newline (and without a trailing \r); NULL at end.
 * Sets *st to MP_EIO on a read error. */
char *mp__lines_next(mp__lines *r, mp_status *st);
void mp__lines_close(mp__lines *r);

/* MP_OK when the current line holds no NUL byte; else MP_EPARSE naming
 * the field among f[0..k) that holds it: "FILE:LINE: field 'NAME':
 * contains a NUL byte" with names[i] naming f[i] (i < n_names), else the
 * column's number; names NULL: the line is a header. */
mp_status mp__lines_nul(const mp__lines *r, char *const *f, size_t k, const char *const *names,
                        size_t n_names);

/* Splits a line at commas in place; at most max fields (returns the real
 * count, which may exceed max: the caller reports it).  Fields are trimmed
 * of spaces and tabs. */
size_t mp__csv_split(char *line, char **field, size_t max);

/* Parses a decimal uint64 field; on failure returns MP_EPARSE naming
 * path:line and the field. */
mp_status mp__parse_u64(const mp__lines *r, const char *name, const char *text, uint64_t *out);

/* Writes v in decimal at p (at most 20 characters, no NUL) and returns the
 * end: the writers' fast path, ~5x cheaper per number than fprintf. */
char *mp__fmt_u64(char *p, uint64_t v);

/* Writes s as XML character data: markup escaped, control characters as
 * spaces, bytes that are not valid UTF-8 as '?' (src/io/xml.c). */
void mp__xml_text(FILE *f, const char *s);

/* Length of the valid UTF-8 sequence at p that XML allows (no overlong
 * forms, surrogates, U+FFFE/FFFF or code points past U+10FFFF), 0 if p
 * starts none (an ASCII byte included). */
size_t mp__utf8_len(const unsigned char *p);

/* "1.5 MiB": v bytes in the largest binary unit keeping the number >= 1. */
void mp__human_bytes(char *out, size_t cap, double v);

/* A tick step of 1, 2 or 5 times a power of ten giving about want ticks
 * over range (> 0). */
double mp__nice_step(double range, double want);

#endif
