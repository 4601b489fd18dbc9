/* plan_csv.c -- plans as CSV: "id,offset,size" rows in buffer order, plus
 * an "object" column for shared-object plans.
 *
 * The reader matches rows to buffers by id (binary search over sorted ids),
 * accepts rows in any order, and insists every buffer appears exactly once,
 * so a plan for a different problem is caught before it is checked. */
#include "io.h"

#include <stdlib.h>
#include <string.h>

mp_status mp_plan_write_csv(const char *path, const mp_buffer_t *b, size_t n,
                            const mp_plan_t *p) {
    if (!p || p->n != n) return mp__err(MP_EINVAL, "plan does not match the problem");
    mp__outfile o;
    mp_status s = mp__out_open(&o, path);
    if (s != MP_OK) return s;
    fprintf(o.f, p->object ? "id,offset,size,object\n" : "id,offset,size\n");
    for (size_t i = 0; i < n; i++) { /* by hand: fprintf was most of writing 10^6 rows */
        char row[4 * 21 + 1], *e = row;
        e = mp__fmt_u64(e, b[i].id), *e++ = ',';
        e = mp__fmt_u64(e, p->offset[i]), *e++ = ',';
        e = mp__fmt_u64(e, mp_buffer_aligned_size(&b[i]));
        if (p->object) *e++ = ',', e = mp__fmt_u64(e, p->object[i]);
        *e++ = '\n';
        fwrite(row, 1, (size_t)(e - row), o.f);
    }
    return mp__out_close(&o, true);
}

typedef struct cols {
    int id, offset, size, object;
    size_t n;
    const char *name[16];   /* each column's name, for messages */
} cols;

static mp_status plan_header(mp__lines *r, char *line, cols *c) {
    static const char *const known[] = {"id", "offset", "size", "object"};
    char *f[16];
    size_t k = mp__csv_split(line, f, 16);
    *c = (cols){.id = -1, .offset = -1, .size = -1, .object = -1, .n = k};
    mp_status s = mp__lines_nul(r, f, k < 16 ? k : 16, NULL, 0);
    if (s) return s;
    for (size_t i = 0; i < k && i < 16; i++) {
        size_t j = 0;
        while (j < 4 && strcmp(f[i], known[j])) j++;
        int *slots[] = {&c->id, &c->offset, &c->size, &c->object}, *slot = j < 4 ? slots[j] : NULL;
        if (!slot)
            return mp__err(MP_EPARSE, "%s:%zu: header: unknown column '%s' (expected id,offset,size[,object])",
                           r->path, r->lineno, f[i]);
        if (*slot >= 0)
            return mp__err(MP_EPARSE, "%s:%zu: header: column '%s' given twice", r->path,
                           r->lineno, f[i]);
        *slot = (int)i;
        c->name[i] = known[j];
    }
    if (k > 16 || c->id < 0 || c->offset < 0)
        return mp__err(MP_EPARSE, "%s:%zu: header: need columns id and offset", r->path, r->lineno);
    return MP_OK;
}

/* Index of the buffer with this id, or n. */
static size_t lookup(const mp__key *ids, size_t n, uint64_t id) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid].a < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && ids[lo].a == id ? ids[lo].i : n;
}

static mp_status plan_row(mp__lines *r, char *line, const cols *c, const mp_buffer_t *b,
                          size_t n, const mp__key *ids, size_t *seen, mp_plan_t *p) {
    char *f[16];
    size_t k = mp__csv_split(line, f, 16);
    mp_status s = mp__lines_nul(r, f, k < 16 ? k : 16, c->name, c->n < 16 ? c->n : 16);
    if (s) return s;
    if (k != c->n)
        return mp__err(MP_EPARSE, "%s:%zu: expected %zu fields, found %zu", r->path, r->lineno,
                       c->n, k);
    uint64_t id, off, size, obj = 0;
    if ((s = mp__parse_u64(r, "id", f[c->id], &id)) ||
        (s = mp__parse_u64(r, "offset", f[c->offset], &off)))
        return s;
    size_t i = lookup(ids, n, id);
    if (i == n)
        return mp__err(MP_EPARSE, "%s:%zu: field 'id': %llu is not a buffer of the records",
                       r->path, r->lineno, (unsigned long long)id);
    if (seen[i])
        return mp__err(MP_EPARSE, "%s:%zu: field 'id': %llu appears twice (first on line %zu)",
                       r->path, r->lineno, (unsigned long long)id, seen[i]);
    seen[i] = r->lineno;
    if (c->size >= 0) {
        if ((s = mp__parse_u64(r, "size", f[c->size], &size))) return s;
        if (size != mp_buffer_aligned_size(&b[i]))
            return mp__err(MP_EPARSE, "%s:%zu: field 'size': %llu but buffer %llu has size %llu",
                           r->path, r->lineno, (unsigned long long)size,
                           (unsigned long long)id, (unsigned long long)mp_buffer_aligned_size(&b[i]));
    }
    if (c->object >= 0) {
        if ((s = mp__parse_u64(r, "object", f[c->object], &obj))) return s;
        if (obj >= n)
            return mp__err(MP_EPARSE, "%s:%zu: field 'object': %llu is not below the buffer count %zu",
                           r->path, r->lineno, (unsigned long long)obj, n);
        p->object[i] = (size_t)obj;
        if (obj + 1 > p->n_objects) p->n_objects = (size_t)obj + 1;
    }
    p->offset[i] = off;
    return MP_OK;
}

static mp_status finish(const char *path, const mp_buffer_t *b, size_t n, const size_t *seen,
                        mp_plan_t *p) {
    for (size_t i = 0; i < n; i++)
        if (!seen[i])
            return mp__err(MP_EPARSE, "%s: buffer %llu has no row in the plan", path,
                           (unsigned long long)b[i].id);
    uint64_t f = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t s = mp_buffer_aligned_size(&b[i]);
        if (p->offset[i] > UINT64_MAX - s)
            return mp__err(MP_EPARSE, "%s: buffer %llu: offset + size overflows 64 bits", path,
                           (unsigned long long)b[i].id);
        f = mp__max64(f, p->offset[i] + s);
    }
    p->footprint = f;
    if (!p->object) return MP_OK;
    p->object_size = calloc(p->n_objects ? p->n_objects : 1, sizeof *p->object_size);
    if (!p->object_size) return MP__NOMEM();
    for (size_t i = 0; i < n; i++)
        p->object_size[p->object[i]] =
            mp__max64(p->object_size[p->object[i]], mp_buffer_aligned_size(&b[i]));
    return MP_OK;
}

mp_status mp_plan_read_csv(const char *path, const mp_buffer_t *b, size_t n, mp_plan_t *p) {
    memset(p, 0, sizeof *p);
    mp__lines r;
    mp_status s = mp__lines_open(&r, path);
    if (s != MP_OK) return s;
    mp__key *ids = malloc((n ? n : 1) * sizeof *ids);
    size_t *seen = calloc(n ? n : 1, sizeof *seen);
    p->n = n;
    p->offset = calloc(n ? n : 1, sizeof *p->offset);
    if (!ids || !seen || !p->offset) s = MP__NOMEM();
    for (size_t i = 0; s == MP_OK && i < n; i++) ids[i] = (mp__key){b[i].id, 0, i};
    if (s == MP_OK) s = mp__sort_keys(ids, n);
    cols c = {.id = -1, .offset = -1, .size = -1, .object = -1};
    bool have_header = false;
    char *ln;
    while (s == MP_OK && (ln = mp__lines_next(&r, &s))) {
        if (ln[strspn(ln, " \t")] == 0 || ln[0] == '#') continue;
        if (!have_header) {
            if ((s = plan_header(&r, ln, &c)) == MP_OK && c.object >= 0 &&
                !(p->object = calloc(n ? n : 1, sizeof *p->object)))
                s = MP__NOMEM();
            have_header = true;
            continue;
        }
        s = plan_row(&r, ln, &c, b, n, ids, seen, p);
    }
    if (s == MP_OK && !have_header)
        s = mp__err(MP_EPARSE, "%s:%zu: empty file, expected a header id,offset,size", path,
                    r.lineno + 1);
    if (s == MP_OK) s = finish(path, b, n, seen, p);
    mp__lines_close(&r);
    free(ids);
    free(seen);
    if (s != MP_OK) mp_plan_free(p);
    else p->strategy = "file";
    return s;
}
