/* trace.c -- memory event traces: recording, the text format, usage
 * records and statistics (the memory-load picture is src/io/trace_svg.c).
 *
 * A trace is an array of events plus a hash table from the handles of the
 * live blocks to the index of their allocation event (open addressing,
 * linear probing, deletion by backward shift; it doubles at half load).
 * Recording an event is O(1) expected: the free of a block writes its own
 * index into the allocation's `end`, so every later question (records,
 * statistics, period detection) is a linear pass with no lookups.
 *
 * Logical time is the event index.  A block allocated at event i and freed
 * at event j is live at times i..j-1; in records of a window [from, to) it
 * becomes the buffer [i - from, j - 1 - from], or [i - from, to - 1 - from]
 * when it is not freed inside the window.  Since j > i, last >= first.
 *
 * Text format (docs/trace-format.md): the header "# memplan-trace/1", then
 * one event per line, fields separated by spaces or tabs:
 *     a HANDLE SIZE [NS]     f HANDLE [NS]     r HANDLE [NS]     w HANDLE [NS]
 *     o DURATION [NAME]      (an op boundary: the events after it, up to the
 *                             next one, are the op's; NAME is the rest of the line)
 * Handles are decimal or 0x-hexadecimal; '#' lines and blank lines are
 * skipped, so is a UTF-8 byte order mark; a NUL byte is an error.  The
 * reader reports FILE:LINE: field 'NAME': what is wrong.
 */
#include "../io/io.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct mp_trace_t {
    mp_event_t *ev;
    size_t n, cap;
    /* live handles: slot holds handle and 1 + allocation index (0 = empty) */
    uint64_t *key;
    size_t *val;
    size_t slots, used;   /* slots: power of two */
    uint64_t total;       /* sum of allocated sizes */
    /* op names: op k's is names + name_at[k] (NUL-terminated) */
    char *names;
    size_t names_len, names_cap;
    size_t *name_at;
    size_t n_ops, ops_cap;
};

/* ---- the live-handle table ------------------------------------------- */

static size_t slot_of(uint64_t h, size_t mask) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (size_t)h & mask;
}

/* Slot of handle h, or of the empty slot where it would go. */
static size_t find(const mp_trace_t *t, uint64_t h) {
    size_t mask = t->slots - 1, i = slot_of(h, mask);
    while (t->val[i] && t->key[i] != h) i = (i + 1) & mask;
    return i;
}

static mp_status table_grow(mp_trace_t *t) {
    size_t ns = t->slots ? t->slots * 2 : 64;
    uint64_t *k = calloc(ns, sizeof *k);
    size_t *v = calloc(ns, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return MP__NOMEM();
    }
    for (size_t i = 0; i < t->slots; i++)
        if (t->val[i]) {
            size_t j = slot_of(t->key[i], ns - 1);
            while (v[j]) j = (j + 1) & (ns - 1);
            k[j] = t->key[i];
            v[j] = t->val[i];
        }
    free(t->key);
    free(t->val);
    t->key = k;
    t->val = v;
    t->slots = ns;
    return MP_OK;
}

static void table_erase(mp_trace_t *t, size_t i) {
    size_t mask = t->slots - 1, j = i;
    t->val[i] = 0;
    for (;;) {   /* backward shift: close the gap for entries probing past it */
        j = (j + 1) & mask;
        if (!t->val[j]) break;
        size_t home = slot_of(t->key[j], mask);
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t->key[i] = t->key[j];
            t->val[i] = t->val[j];
            t->val[j] = 0;
            i = j;
        }
    }
    t->used--;
}

/* ---- recording --------------------------------------------------------- */

mp_status mp_trace_create(mp_trace_t **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return MP__NOMEM();
    if (table_grow(*out) != MP_OK) {
        free(*out);
        *out = NULL;
        return MP__NOMEM();
    }
    return MP_OK;
}

void mp_trace_free(mp_trace_t *t) {
    if (!t) return;
    free(t->ev);
    free(t->key);
    free(t->val);
    free(t->names);
    free(t->name_at);
    free(t);
}

const mp_event_t *mp_trace_events(const mp_trace_t *t, size_t *n) {
    *n = t->n;
    return t->ev;
}

/* Why an event cannot be recorded; the caller words the message. */
enum { R_OK, R_LIVE, R_NOTLIVE, R_ZERO, R_OVERFLOW, R_NOMEM };

static int add(mp_trace_t *t, mp_event_kind kind, uint64_t h, uint64_t size, uint64_t ns,
               size_t *other) {
    if (mp__grow((void **)&t->ev, &t->cap, t->n + 1, sizeof *t->ev) != MP_OK) return R_NOMEM;
    size_t i = find(t, h);
    mp_event_t e = {.handle = h, .ns = ns, .kind = kind, .end = 0};
    if (kind == MP_EV_ALLOC) {
        if (t->val[i]) {
            *other = t->val[i] - 1;
            return R_LIVE;
        }
        if (size == 0) return R_ZERO;
        if (size > UINT64_MAX - t->total) return R_OVERFLOW;
        if (2 * (t->used + 1) > t->slots) {
            if (table_grow(t) != MP_OK) return R_NOMEM;
            i = find(t, h);
        }
        t->total += size;
        t->key[i] = h;
        t->val[i] = t->n + 1;
        t->used++;
        e.size = size;
        e.block = t->n;
        e.end = MP_TRACE_NEVER;
    } else {
        if (!t->val[i]) return R_NOTLIVE;
        size_t a = t->val[i] - 1;
        e.block = a;
        e.size = t->ev[a].size;
        if (kind == MP_EV_FREE) {
            t->ev[a].end = t->n;
            table_erase(t, i);
        }
    }
    t->ev[t->n++] = e;
    return R_OK;
}

static mp_status api_status(int r, uint64_t h) {
    switch (r) {
    case R_OK: return MP_OK;
    case R_LIVE: return mp__err(MP_EINVAL, "handle 0x%" PRIx64 " is already live", h);
    case R_NOTLIVE: return mp__err(MP_EINVAL, "handle 0x%" PRIx64 " is not live", h);
    case R_ZERO: return mp__err(MP_EINVAL, "handle 0x%" PRIx64 ": size must be positive", h);
    case R_OVERFLOW:
        return mp__err(MP_EOVERFLOW, "handle 0x%" PRIx64 ": total of sizes overflows 64 bits", h);
    default: return MP__NOMEM();
    }
}

mp_status mp_trace_record_alloc(mp_trace_t *t, uint64_t handle, uint64_t size, uint64_t ns) {
    size_t other;
    return api_status(add(t, MP_EV_ALLOC, handle, size, ns, &other), handle);
}

mp_status mp_trace_record_free(mp_trace_t *t, uint64_t handle, uint64_t ns) {
    size_t other;
    return api_status(add(t, MP_EV_FREE, handle, 0, ns, &other), handle);
}

mp_status mp_trace_record_access(mp_trace_t *t, uint64_t handle, int write, uint64_t ns) {
    size_t other;
    return api_status(add(t, write ? MP_EV_WRITE : MP_EV_READ, handle, 0, ns, &other), handle);
}

mp_status mp_trace_record_op(mp_trace_t *t, uint64_t duration_ns, const char *name) {
    if (!name) name = "";
    size_t len = strlen(name);
    if (mp__grow((void **)&t->ev, &t->cap, t->n + 1, sizeof *t->ev) ||
        mp__grow((void **)&t->name_at, &t->ops_cap, t->n_ops + 1, sizeof *t->name_at) ||
        mp__grow((void **)&t->names, &t->names_cap, t->names_len + len + 1, 1))
        return MP__NOMEM();
    t->name_at[t->n_ops] = t->names_len;
    memcpy(t->names + t->names_len, name, len + 1);
    t->names_len += len + 1;
    t->ev[t->n++] = (mp_event_t){.handle = 0, .size = duration_ns, .ns = MP_TRACE_NO_NS,
                                 .block = t->n_ops++, .end = 0, .kind = MP_EV_OP};
    return MP_OK;
}

const char *mp_trace_op_name(const mp_trace_t *t, size_t op) {
    return op < t->n_ops ? t->names + t->name_at[op] : NULL;
}

size_t mp_trace_op_count(const mp_trace_t *t) { return t->n_ops; }

/* ---- the text format --------------------------------------------------- */

#define TRACE_MAGIC "memplan-trace/"
#define TRACE_HEADER "# memplan-trace/1"

/* Splits at spaces and tabs in place; returns the real count (may exceed max). */
static size_t ws_split(char *line, char **field, size_t max) {
    size_t k = 0;
    char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        if (!*p) break;
        if (k < max) field[k] = p;
        k++;
        while (*p && *p != ' ' && *p != '\t') p++;
        if (!*p) break;
        *p++ = 0;
    }
    return k;
}

static mp_status parse_handle(const mp__lines *r, const char *text, uint64_t *out) {
    if (text[0] != '0' || (text[1] != 'x' && text[1] != 'X'))
        return mp__parse_u64(r, "handle", text, out);
    uint64_t v = 0;
    const char *p = text + 2;
    if (!*p) goto bad;
    for (; *p; p++) {
        int d = *p >= '0' && *p <= '9'   ? *p - '0'
                : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10
                : *p >= 'A' && *p <= 'F' ? *p - 'A' + 10
                                         : -1;
        if (d < 0) goto bad;
        if (v >> 60)
            return mp__err(MP_EPARSE, "%s:%zu: field 'handle': '%s' does not fit in 64 bits",
                           r->path, r->lineno, text);
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return MP_OK;
bad:
    return mp__err(MP_EPARSE, "%s:%zu: field 'handle': '%s' is not a hexadecimal integer",
                   r->path, r->lineno, text);
}

static mp_status parse_header(const mp__lines *r, char *line) {
    char *f[4];
    size_t k = ws_split(line, f, 4);
    mp_status s = mp__lines_nul(r, f, k < 4 ? k : 4, NULL, 0);
    if (s) return s;
    if (k == 2 && !strcmp(f[0], "#") && !strncmp(f[1], TRACE_MAGIC, strlen(TRACE_MAGIC))) {
        if (!strcmp(f[1], TRACE_MAGIC "1")) return MP_OK;
        return mp__err(MP_EPARSE, "%s:%zu: header: unsupported version '%s' (this reader knows %s1)",
                       r->path, r->lineno, f[1], TRACE_MAGIC);
    }
    return mp__err(MP_EPARSE, "%s:%zu: header: expected '%s' as the first line", r->path,
                   r->lineno, TRACE_HEADER);
}

/* An op boundary "o DURATION [NAME]" (line: after the kind): the name is
 * the rest of the line, blanks around it removed, so it may hold spaces. */
static mp_status parse_op(mp_trace_t *t, const mp__lines *r, char *line) {
    line += strspn(line, " \t");
    char *name = line + strcspn(line, " \t");
    if (*name) *name++ = 0;
    for (char *c = name; *c; c++)   /* as the writer writes them: one name, one line */
        if (*c == '\r') *c = ' ';
    name += strspn(name, " \t");
    size_t len = strlen(name);
    while (len && (name[len - 1] == ' ' || name[len - 1] == '\t')) name[--len] = 0;
    char *f[2] = {line, name};
    static const char *const names[] = {"duration", "name"};
    mp_status s = mp__lines_nul(r, f, 2, names, 2);
    if (s) return s;
    if (!*line) return mp__err(MP_EPARSE, "%s:%zu: field 'duration': missing", r->path, r->lineno);
    uint64_t ns;
    if ((s = mp__parse_u64(r, "duration", line, &ns))) return s;
    return mp_trace_record_op(t, ns, name);
}

/* Parses and records one event line; line_of[] maps event index -> line. */
static mp_status parse_event(mp_trace_t *t, const mp__lines *r, char *line,
                             const size_t *line_of) {
    char *p = line + strspn(line, " \t");
    if (p[0] == 'o' && (p[1] == ' ' || p[1] == '\t' || !p[1])) return parse_op(t, r, p + 1);
    static const char *const alloc_names[] = {"kind", "handle", "size", "ns"};
    static const char *const other_names[] = {"kind", "handle", "ns"};
    char *f[5];
    size_t k = ws_split(line, f, 5);
    bool alloc = !strcmp(f[0], "a");
    mp_status s = mp__lines_nul(r, f, k < 5 ? k : 5, alloc ? alloc_names : other_names,
                                alloc ? 4 : 3);
    if (s) return s;
    const char *kinds = "afrw";
    if (strlen(f[0]) != 1 || !strchr(kinds, f[0][0]))
        return mp__err(MP_EPARSE, "%s:%zu: field 'kind': unknown event '%s' (expected a, f, r, w or o)",
                       r->path, r->lineno, f[0]);
    mp_event_kind kind = (mp_event_kind)(strchr(kinds, f[0][0]) - kinds);
    size_t need = kind == MP_EV_ALLOC ? 3 : 2;
    if (k < need)
        return mp__err(MP_EPARSE, "%s:%zu: field '%s': missing", r->path, r->lineno,
                       k < 2 ? "handle" : "size");
    if (k > need + 1)
        return mp__err(MP_EPARSE, "%s:%zu: expected at most %zu fields for '%s', found %zu",
                       r->path, r->lineno, need + 1, f[0], k);
    uint64_t h, size = 0, ns = MP_TRACE_NO_NS;
    if ((s = parse_handle(r, f[1], &h))) return s;
    if (kind == MP_EV_ALLOC && (s = mp__parse_u64(r, "size", f[2], &size))) return s;
    if (k == need + 1) {
        if ((s = mp__parse_u64(r, "ns", f[need], &ns))) return s;
        if (ns == MP_TRACE_NO_NS)
            return mp__err(MP_EPARSE, "%s:%zu: field 'ns': must be below 2^64-1", r->path,
                           r->lineno);
    }
    size_t other = 0;
    switch (add(t, kind, h, size, ns, &other)) {
    case R_OK: return MP_OK;
    case R_LIVE:
        return mp__err(MP_EPARSE, "%s:%zu: field 'handle': %s is already live (allocated on line %zu)",
                       r->path, r->lineno, f[1], line_of[other]);
    case R_NOTLIVE:
        return mp__err(MP_EPARSE, "%s:%zu: field 'handle': %s is not live", r->path, r->lineno,
                       f[1]);
    case R_ZERO:
        return mp__err(MP_EPARSE, "%s:%zu: field 'size': must be positive", r->path, r->lineno);
    case R_OVERFLOW:
        return mp__err(MP_EPARSE, "%s:%zu: field 'size': total of sizes overflows 64 bits",
                       r->path, r->lineno);
    default: return MP__NOMEM();
    }
}

mp_status mp_trace_read(const char *path, mp_trace_t **out) {
    *out = NULL;
    mp__lines r;
    mp_status s = mp__lines_open(&r, path);
    if (s != MP_OK) return s;
    mp_trace_t *t = NULL;
    size_t *line_of = NULL, lcap = 0;
    if ((s = mp_trace_create(&t)) != MP_OK) {
        mp__lines_close(&r);
        return s;
    }
    bool have_header = false;
    char *ln;
    while (s == MP_OK && (ln = mp__lines_next(&r, &s))) {
        if (!have_header) {
            s = parse_header(&r, ln);
            have_header = true;
            continue;
        }
        if (ln[strspn(ln, " \t")] == 0 || ln[strspn(ln, " \t")] == '#') continue;
        if ((s = mp__grow((void **)&line_of, &lcap, t->n + 1, sizeof *line_of))) break;
        line_of[t->n] = r.lineno;
        s = parse_event(t, &r, ln, line_of);
    }
    if (s == MP_OK && !have_header)
        s = mp__err(MP_EPARSE, "%s:1: empty file, expected the header '%s'", path, TRACE_HEADER);
    mp__lines_close(&r);
    free(line_of);
    if (s != MP_OK) {
        mp_trace_free(t);
        return s;
    }
    *out = t;
    return MP_OK;
}

mp_status mp_trace_write(const char *path, const mp_trace_t *t) {
    mp__outfile o;
    mp_status s = mp__out_open(&o, path);
    if (s != MP_OK) return s;
    static const char kc[] = "afrw";
    fprintf(o.f, "%s\n", TRACE_HEADER);
    for (size_t i = 0; i < t->n; i++) {
        const mp_event_t *e = &t->ev[i];
        if (e->kind == MP_EV_OP) {
            fprintf(o.f, "o %" PRIu64, e->size);
            const char *name = mp_trace_op_name(t, (size_t)e->block);
            if (*name) fputc(' ', o.f);
            for (; *name; name++) fputc(*name == '\n' || *name == '\r' ? ' ' : *name, o.f);
            fputc('\n', o.f);
            continue;
        }
        fprintf(o.f, "%c 0x%" PRIx64, kc[e->kind], e->handle);
        if (e->kind == MP_EV_ALLOC) fprintf(o.f, " %" PRIu64, e->size);
        if (e->ns != MP_TRACE_NO_NS) fprintf(o.f, " %" PRIu64, e->ns);
        fputc('\n', o.f);
    }
    return mp__out_close(&o, true);
}

/* ---- records and statistics ------------------------------------------- */

mp_status mp_trace_records(const mp_trace_t *t, size_t from, size_t to, mp_buffer_t **b,
                           size_t *n) {
    *b = NULL;
    *n = 0;
    if (from > to || to > t->n)
        return mp__err(MP_EINVAL, "window [%zu, %zu) is not inside the trace's %zu events", from,
                       to, t->n);
    size_t k = 0;
    for (size_t i = from; i < to; i++) k += t->ev[i].kind == MP_EV_ALLOC;
    if (k == 0) return MP_OK;
    mp_buffer_t *out = malloc(k * sizeof *out);
    if (!out) return MP__NOMEM();
    k = 0;
    for (size_t i = from; i < to; i++) {
        const mp_event_t *e = &t->ev[i];
        if (e->kind != MP_EV_ALLOC) continue;
        uint64_t end = e->end < to ? e->end : to;   /* MP_TRACE_NEVER > to */
        out[k] = (mp_buffer_t){.id = k, .first = i - from, .last = end - 1 - from,
                               .size = e->size, .align = 0};
        k++;
    }
    *b = out;
    *n = k;
    return MP_OK;
}

mp_status mp_trace_stats(const mp_trace_t *t, mp_trace_stats_t *st) {
    memset(st, 0, sizeof *st);
    st->events = t->n;
    st->ns_first = st->ns_last = MP_TRACE_NO_NS;
    uint64_t live = 0;
    size_t blocks = 0;
    for (size_t i = 0; i < t->n; i++) {
        const mp_event_t *e = &t->ev[i];
        if (e->ns != MP_TRACE_NO_NS) {
            if (st->ns_first == MP_TRACE_NO_NS) st->ns_first = e->ns;
            st->ns_last = e->ns;
        }
        switch (e->kind) {
        case MP_EV_ALLOC:
            st->allocs++;
            st->bytes += e->size;   /* bounded by t->total: no overflow */
            live += e->size;
            blocks++;
            if (live > st->peak_bytes) st->peak_bytes = live, st->peak_time = i;
            if (blocks > st->peak_blocks) st->peak_blocks = blocks;
            break;
        case MP_EV_FREE:
            st->frees++;
            live -= e->size;
            blocks--;
            break;
        case MP_EV_READ: st->reads++; break;
        case MP_EV_WRITE: st->writes++; break;
        case MP_EV_OP:
            st->ops++;
            st->op_ns = e->size > UINT64_MAX - st->op_ns ? UINT64_MAX : st->op_ns + e->size;
            break;
        }
    }
    st->live_blocks = blocks;
    st->live_bytes = live;
    return MP_OK;
}
