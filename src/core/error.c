/* error.c -- the thread-local last-error message and status names.
 *
 * The library never prints: a failing call stores one line here, naming
 * what went wrong and where, and returns its status code. */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char mp__msg[1024];

const char *mp_last_error(void) { return mp__msg; }

/* The version of the library actually loaded, for bindings that cannot see
 * the MP_VERSION macro their header was compiled against. */
const char *mp_version(void) { return MP_VERSION; }

mp_status mp__err(mp_status s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(mp__msg, sizeof mp__msg, fmt, ap);
    va_end(ap);
    return s;
}

const char *mp_status_name(mp_status s) {
    switch (s) {
    case MP_OK: return "MP_OK";
    case MP_EINVAL: return "MP_EINVAL";
    case MP_ENOMEM: return "MP_ENOMEM";
    case MP_EOVERFLOW: return "MP_EOVERFLOW";
    case MP_EPARSE: return "MP_EPARSE";
    case MP_EIO: return "MP_EIO";
    case MP_ECONFLICT: return "MP_ECONFLICT";
    case MP_ENOTFOUND: return "MP_ENOTFOUND";
    }
    return "MP_E?";
}

mp_status mp__grow(void **arr, size_t *cap, size_t need, size_t width) {
    if (need <= *cap) return MP_OK;
    size_t c = *cap ? *cap : 16;
    while (c < need) {
        if (c > SIZE_MAX / 2) return MP__NOMEM();
        c *= 2;
    }
    if (c > SIZE_MAX / width) return MP__NOMEM();
    void *p = realloc(*arr, c * width);
    if (!p) return MP__NOMEM();
    *arr = p;
    *cap = c;
    return MP_OK;
}
