/* plan_csv.c -- plans as CSV: "id,offset,size" rows in buffer order, plus
 * an "object" column for shared-object plans, or a "pool" column (the
 * pool's name) for pool plans (memplan plan --pools; mp_pool_plan_read_csv).
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
    int id, offset, size, object, pool;
    size_t n;
    const char *name[16];   /* each column's name, for messages */
} cols;

static mp_status plan_header(mp__lines *r, char *line, cols *c) {
    static const char *const known[] = {"id", "offset", "size", "object", "pool"};
    char *f[16];
    size_t k = mp__csv_split(line, f, 16);
    *c = (cols){.id = -1, .offset = -1, .size = -1, .object = -1, .pool = -1, .n = k};
    mp_status s = mp__lines_nul(r, f, k < 16 ? k : 16, NULL, 0);
    if (s) return s;
    for (size_t i = 0; i < k && i < 16; i++) {
        size_t j = 0;
        while (j < 5 && strcmp(f[i], known[j])) j++;
        int *slots[] = {&c->id, &c->offset, &c->size, &c->object, &c->pool};
        int *slot = j < 5 ? slots[j] : NULL;
        if (!slot)
            return mp__err(MP_EPARSE, "%s:%zu: header: unknown column '%s' (expected id,offset,size[,object|,pool])",
                           r->path, r->lineno, f[i]);
        if (*slot >= 0)
            return mp__err(MP_EPARSE, "%s:%zu: header: column '%s' given twice", r->path,
                           r->lineno, f[i]);
        *slot = (int)i;
        c->name[i] = known[j];
    }
    if (k > 16 || c->id < 0 || c->offset < 0)
        return mp__err(MP_EPARSE, "%s:%zu: header: need columns id and offset", r->path, r->lineno);
    if (c->object >= 0 && c->pool >= 0)
        return mp__err(MP_EPARSE, "%s:%zu: header: columns 'object' and 'pool' do not mix", r->path,
                       r->lineno);
    return MP_OK;
}

/* The pools a pool plan's rows may name: the caller's (known, k > 0), or
 * the names met in the file, in order (k == 0; at most MP__MAX_POOLS). */
#define MP__MAX_POOLS 16
typedef struct pool_names {
    const mp_pool_t *known;
    size_t k;
    char *met[MP__MAX_POOLS];
    size_t n_met;
} pool_names;

/* The index of pool name, adding it when the pools are the file's. */
static mp_status pool_index(const mp__lines *r, pool_names *pn, const char *name, size_t *out) {
    size_t m = pn->k ? pn->k : pn->n_met;
    for (size_t j = 0; j < m; j++)
        if (!strcmp(pn->k ? pn->known[j].name : pn->met[j], name)) return *out = j, MP_OK;
    if (pn->k)
        return mp__err(MP_EPARSE, "%s:%zu: field 'pool': '%s' is not one of the %zu pools given",
                       r->path, r->lineno, name, pn->k);
    if (!*name)
        return mp__err(MP_EPARSE, "%s:%zu: field 'pool': empty", r->path, r->lineno);
    if (m == MP__MAX_POOLS)
        return mp__err(MP_EPARSE, "%s:%zu: field 'pool': more than %d pools", r->path, r->lineno,
                       MP__MAX_POOLS);
    if (!(pn->met[m] = strdup(name))) return MP__NOMEM();
    pn->n_met++;
    return *out = m, MP_OK;
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

/* One row into p; a pool plan's pool index goes to p->object[i]. */
static mp_status plan_row(mp__lines *r, char *line, const cols *c, const mp_buffer_t *b,
                          size_t n, const mp__key *ids, size_t *seen, pool_names *pn,
                          mp_plan_t *p) {
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
    if (c->pool >= 0 && (s = pool_index(r, pn, f[c->pool], &p->object[i]))) return s;
    p->offset[i] = off;
    return MP_OK;
}

/* objects: the plan has an object column (a pool plan's object[] holds
 * pool indices instead, and gets no object sizes). */
static mp_status finish(const char *path, const mp_buffer_t *b, size_t n, const size_t *seen,
                        bool objects, mp_plan_t *p) {
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
    if (!objects) return MP_OK;
    p->object_size = calloc(p->n_objects ? p->n_objects : 1, sizeof *p->object_size);
    if (!p->object_size) return MP__NOMEM();
    for (size_t i = 0; i < n; i++)
        p->object_size[p->object[i]] =
            mp__max64(p->object_size[p->object[i]], mp_buffer_aligned_size(&b[i]));
    return MP_OK;
}

/* Reads a plan (pn == NULL) or a pool plan (pn: its pools) into p. */
static mp_status read_plan(const char *path, const mp_buffer_t *b, size_t n, pool_names *pn,
                           mp_plan_t *p) {
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
    cols c = {.id = -1, .offset = -1, .size = -1, .object = -1, .pool = -1};
    bool have_header = false;
    char *ln;
    while (s == MP_OK && (ln = mp__lines_next(&r, &s))) {
        if (ln[strspn(ln, " \t")] == 0 || ln[0] == '#') continue;
        if (!have_header) {
            have_header = true;
            if ((s = plan_header(&r, ln, &c)) != MP_OK) break;
            if (!pn && c.pool >= 0)
                s = mp__err(MP_EPARSE, "%s:%zu: header: column 'pool': this is a pool plan "
                            "(memplan plan --pools); \"memplan check\" reads it pool by pool",
                            path, r.lineno);
            else if (pn && c.pool < 0)
                s = mp__err(MP_EPARSE, "%s:%zu: header: need a column 'pool' for a pool plan",
                            path, r.lineno);
            else if ((c.object >= 0 || c.pool >= 0) && !(p->object = calloc(n ? n : 1, sizeof *p->object)))
                s = MP__NOMEM();
            continue;
        }
        s = plan_row(&r, ln, &c, b, n, ids, seen, pn, p);
    }
    if (s == MP_OK && !have_header)
        s = mp__err(MP_EPARSE, "%s:%zu: empty file, expected a header id,offset,size", path,
                    r.lineno + 1);
    if (s == MP_OK) s = finish(path, b, n, seen, c.object >= 0, p);
    mp__lines_close(&r);
    free(ids);
    free(seen);
    if (s != MP_OK) mp_plan_free(p);
    else p->strategy = "file";
    return s;
}

mp_status mp_plan_read_csv(const char *path, const mp_buffer_t *b, size_t n, mp_plan_t *p) {
    return read_plan(path, b, n, NULL, p);
}

/* The pool plan of a plan whose object[] holds pool indices; takes its arrays. */
static mp_status to_pool_plan(const mp_buffer_t *b, size_t n, size_t k, mp_plan_t *p,
                              mp_pool_plan_t *out) {
    out->footprint = calloc(k ? k : 1, sizeof *out->footprint);
    if (!out->footprint) return MP__NOMEM();
    out->n = n, out->n_pools = k, out->strategy = "file";
    for (size_t i = 0; i < n; i++) {
        uint64_t end = p->offset[i] + mp_buffer_aligned_size(&b[i]);
        if (end > out->footprint[p->object[i]]) out->footprint[p->object[i]] = end;
    }
    out->pool = p->object, out->offset = p->offset;
    p->object = NULL, p->offset = NULL;
    return MP_OK;
}

mp_status mp_pool_plan_read_csv(const char *path, const mp_buffer_t *b, size_t n,
                                const mp_pool_t *pools, size_t k, mp_pool_plan_t *out) {
    memset(out, 0, sizeof *out);
    pool_names pn = {.known = pools, .k = pools ? k : 0};
    mp_plan_t p;
    mp_status s = read_plan(path, b, n, &pn, &p);
    size_t m = pn.k ? pn.k : pn.n_met;
    if (s == MP_OK) s = to_pool_plan(b, n, m, &p, out);
    if (s == MP_OK && !pn.k) { /* the file's names move to out */
        if ((out->name = malloc((m ? m : 1) * sizeof *out->name))) {
            memcpy(out->name, pn.met, m * sizeof *pn.met);
            pn.n_met = 0;
        } else {
            s = MP__NOMEM();
        }
    }
    for (size_t j = 0; j < pn.n_met; j++) free(pn.met[j]);
    mp_plan_free(&p); /* what to_pool_plan did not take */
    if (s != MP_OK) mp_pool_plan_free(out);
    return s;
}
