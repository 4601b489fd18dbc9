/* records.c -- the records CSV: read and write problems.
 *
 * Header names the columns, in any order:
 *   id (aliases buffer, buffer_id); size;
 *   first,last (inclusive)  |  lower,upper (half-open, MiniMalloc)  |
 *   start/begin (= first) with end (inclusive, as MiniMalloc reads it);
 *   align/alignment (optional); offset (optional: a fixed offset, read by
 *   mp_records_read_fixed, empty when free; mp_records_read ignores it);
 *   pool (optional: the pool of a fixed buffer, by name, read by
 *   mp_records_read_pools; mp_records_read ignores it);
 *   hint, gaps (MiniMalloc's optional columns: accepted and ignored).
 * Lines starting with '#' and blank lines are skipped; a UTF-8 byte order
 * mark is skipped and a NUL byte is an error (mp__lines).  Every problem
 * found is reported as FILE:LINE: field 'NAME': what is wrong.  We parse by
 * hand rather than with a CSV library: the grammar is integers only, the
 * core library must build with libc alone (DESIGN.md), and the errors must
 * name the line and field. */
#include "io.h"
#include "../offsets/pools.h"

#include <stdlib.h>
#include <string.h>

enum { C_ID, C_FIRST, C_LAST, C_SIZE, C_ALIGN, C_OFFSET, C_POOL, C_IGNORE, C_N };
enum { T_INCL, T_HALFOPEN };

typedef struct layout {
    int col[C_N];        /* column index of each role, -1 if absent */
    int time_kind;
    const char *first_name, *last_name;
    const char *name[64];   /* each column's name, for messages */
    size_t n_fields;
} layout;

static int role_of(const char *h, size_t col, layout *L, int *tk) {
    static const struct { const char *name; int role, tk; } names[] = {
        {"id", C_ID, -1},       {"buffer", C_ID, -1},   {"buffer_id", C_ID, -1},
        {"first", C_FIRST, T_INCL}, {"start", C_FIRST, T_INCL}, {"begin", C_FIRST, T_INCL},
        {"lower", C_FIRST, T_HALFOPEN}, {"last", C_LAST, T_INCL}, {"end", C_LAST, T_INCL},
        {"upper", C_LAST, T_HALFOPEN}, {"size", C_SIZE, -1}, {"align", C_ALIGN, -1},
        {"alignment", C_ALIGN, -1}, {"hint", C_IGNORE, -1}, {"gaps", C_IGNORE, -1},
        {"offset", C_OFFSET, -1}, {"pool", C_POOL, -1},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(h, names[i].name) == 0) {
            if (names[i].role == C_FIRST) L->first_name = names[i].name;
            if (names[i].role == C_LAST) L->last_name = names[i].name;
            *tk = names[i].tk;
            L->name[col] = names[i].name;
            return names[i].role;
        }
    return -1;
}

static mp_status parse_header(mp__lines *r, char *line, layout *L) {
    char *f[64];
    size_t k = mp__csv_split(line, f, 64);
    mp_status s = mp__lines_nul(r, f, k < 64 ? k : 64, NULL, 0);
    if (s) return s;
    if (k > 64) return mp__err(MP_EPARSE, "%s:%zu: header: too many columns", r->path, r->lineno);
    for (int c = 0; c < C_N; c++) L->col[c] = -1;
    int kinds[2] = {-1, -1};
    for (size_t i = 0; i < k; i++) {
        int tk = -1, role = role_of(f[i], i, L, &tk);
        if (role < 0)
            return mp__err(MP_EPARSE, "%s:%zu: header: unknown column '%s' (expected id,first,last,size or id,lower,upper,size)",
                           r->path, r->lineno, f[i]);
        if (role == C_IGNORE) continue;
        if (L->col[role] >= 0)
            return mp__err(MP_EPARSE, "%s:%zu: header: column '%s' given twice", r->path,
                           r->lineno, f[i]);
        L->col[role] = (int)i;
        if (role == C_FIRST) kinds[0] = tk;
        if (role == C_LAST) kinds[1] = tk;
    }
    static const char *need[] = {"id", "first", "last", "size"};
    for (int c = C_ID; c <= C_SIZE; c++)
        if (L->col[c] < 0)
            return mp__err(MP_EPARSE, "%s:%zu: header: missing column '%s'", r->path, r->lineno,
                           need[c]);
    if ((kinds[0] == T_HALFOPEN) != (kinds[1] == T_HALFOPEN))
        return mp__err(MP_EPARSE, "%s:%zu: header: cannot mix '%s' with '%s' (use first,last or lower,upper)",
                       r->path, r->lineno, L->first_name, L->last_name);
    L->time_kind = kinds[1] == T_HALFOPEN ? T_HALFOPEN : T_INCL;
    L->n_fields = k;
    return MP_OK;
}

/* Parses one data row into *x (and its fixed offset into *fixed, when not
 * NULL: MP_NOT_FIXED for an empty field; its pool field into *pool, "" when
 * none); checks that need only this row. */
static mp_status parse_row(mp__lines *r, char *line, const layout *L, mp_buffer_t *x,
                           uint64_t *total, uint64_t *fixed, const char **pool) {
    char *f[64];
    size_t k = mp__csv_split(line, f, 64);
    mp_status s = mp__lines_nul(r, f, k < 64 ? k : 64, L->name, L->n_fields);
    if (s) return s;
    if (k != L->n_fields)
        return mp__err(MP_EPARSE, "%s:%zu: expected %zu fields, found %zu", r->path, r->lineno,
                       L->n_fields, k);
    uint64_t lastv;
    memset(x, 0, sizeof *x);
    if ((s = mp__parse_u64(r, "id", f[L->col[C_ID]], &x->id)) ||
        (s = mp__parse_u64(r, L->first_name, f[L->col[C_FIRST]], &x->first)) ||
        (s = mp__parse_u64(r, L->last_name, f[L->col[C_LAST]], &lastv)) ||
        (s = mp__parse_u64(r, "size", f[L->col[C_SIZE]], &x->size)))
        return s;
    if (L->col[C_ALIGN] >= 0 && (s = mp__parse_u64(r, "align", f[L->col[C_ALIGN]], &x->align)))
        return s;
    *pool = L->col[C_POOL] >= 0 ? f[L->col[C_POOL]] : "";
    if (fixed) {
        const char *v = L->col[C_OFFSET] >= 0 ? f[L->col[C_OFFSET]] : "";
        *fixed = MP_NOT_FIXED;
        if (v[strspn(v, " \t")]) {
            if ((s = mp__parse_u64(r, "offset", v, fixed))) return s;
            if (*fixed == MP_NOT_FIXED)
                return mp__err(MP_EPARSE, "%s:%zu: field 'offset': must be below 2^64-1",
                               r->path, r->lineno);
        }
    }
    if (L->time_kind == T_HALFOPEN) {
        if (lastv <= x->first)
            return mp__err(MP_EPARSE, "%s:%zu: field 'upper': %llu must be greater than lower %llu",
                           r->path, r->lineno, (unsigned long long)lastv,
                           (unsigned long long)x->first);
        lastv--;
    } else if (lastv < x->first) {
        return mp__err(MP_EPARSE, "%s:%zu: field '%s': %llu is before %s %llu", r->path,
                       r->lineno, L->last_name, (unsigned long long)lastv, L->first_name,
                       (unsigned long long)x->first);
    }
    x->last = lastv;
    if (x->last == UINT64_MAX)
        return mp__err(MP_EPARSE, "%s:%zu: field '%s': must be below 2^64-1", r->path, r->lineno,
                       L->last_name);
    if (x->size == 0)
        return mp__err(MP_EPARSE, "%s:%zu: field 'size': must be positive", r->path, r->lineno);
    if (x->align & (x->align - 1))
        return mp__err(MP_EPARSE, "%s:%zu: field 'align': %llu is not a power of two", r->path,
                       r->lineno, (unsigned long long)x->align);
    uint64_t a = mp_buffer_aligned_size(x), pad = (x->align ? x->align : 1) - 1;
    if (a == 0 || a > UINT64_MAX - pad || *total > UINT64_MAX - a - pad)
        return mp__err(MP_EPARSE, "%s:%zu: field 'size': total of sizes overflows 64 bits",
                       r->path, r->lineno);
    *total += a + pad;
    return MP_OK;
}

/* The pools a records file's pool column may name: those given
 * (mp_records_read_pools), or none (mp_records_read_fixed: a named pool is
 * an error there, fixed offsets in pools need their pools). */
typedef struct rpools {
    const mp_pool_t *pools;
    size_t k;
    bool given;
} rpools;

/* A row's pool field v (parse_row's) into *pool: the index of the pool it
 * names, 0 when empty. */
static mp_status row_pool(const mp__lines *r, const char *v, const rpools *rp, uint64_t fixed,
                          size_t *pool) {
    *pool = 0;
    if (!*v) return MP_OK;
    if (!rp->given)
        return mp__err(MP_EPARSE, "%s:%zu: field 'pool': '%s': fixed offsets in pools need the pools (memplan plan --pools SPEC)",
                       r->path, r->lineno, v);
    if (fixed == MP_NOT_FIXED)
        return mp__err(MP_EPARSE, "%s:%zu: field 'pool': '%s' for a buffer without a fixed offset (a pool is given only with an offset)",
                       r->path, r->lineno, v);
    for (size_t j = 0; j < rp->k; j++)
        if (rp->pools[j].name && !strcmp(rp->pools[j].name, v)) return *pool = j, MP_OK;
    return mp__err(MP_EPARSE, "%s:%zu: field 'pool': '%s' is not one of the %zu pools given",
                   r->path, r->lineno, v, rp->k);
}

static mp_status check_duplicates(const char *path, const mp_buffer_t *b, const size_t *line,
                                  size_t n) {
    /* Ids usually come in increasing or decreasing order: then they are
     * distinct, and the sort is skipped. */
    bool up = true, down = true;
    for (size_t i = 1; i < n && (up || down); i++) {
        up &= b[i].id > b[i - 1].id;
        down &= b[i].id < b[i - 1].id;
    }
    if (up || down) return MP_OK;
    mp__key *k = malloc((n ? n : 1) * sizeof *k);
    if (!k) return MP__NOMEM();
    for (size_t i = 0; i < n; i++) k[i] = (mp__key){b[i].id, 0, i};
    mp_status s = mp__sort_keys(k, n);
    for (size_t j = 1; s == MP_OK && j < n; j++)
        if (k[j].a == k[j - 1].a)
            s = mp__err(MP_EPARSE, "%s:%zu: field 'id': duplicate id %llu (first on line %zu)",
                        path, line[k[j].i], (unsigned long long)k[j].a, line[k[j - 1].i]);
    free(k);
    return s;
}

/* The reader of all three: with fixed_out, the offset column too; with
 * pool_out (rp->given), the pool column. */
static mp_status read_records(const char *path, mp_buffer_t **out, size_t *n_out,
                              uint64_t **fixed_out, const rpools *rp, size_t **pool_out) {
    *out = NULL;
    *n_out = 0;
    if (fixed_out) *fixed_out = NULL;
    if (pool_out) *pool_out = NULL;
    mp__lines r;
    mp_status s = mp__lines_open(&r, path);
    if (s != MP_OK) return s;
    layout L = {.first_name = "first", .last_name = "last"};
    mp_buffer_t *b = NULL;
    size_t *line = NULL, n = 0, cap = 0, lcap = 0, fcap = 0, *pool = NULL, pcap = 0;
    uint64_t *fixed = NULL;
    uint64_t total = 0;
    bool have_header = false;
    char *ln;
    while (s == MP_OK && (ln = mp__lines_next(&r, &s))) {
        if (ln[strspn(ln, " \t")] == 0 || ln[0] == '#') continue;
        if (!have_header) {
            s = parse_header(&r, ln, &L);
            have_header = true;
            continue;
        }
        if ((s = mp__grow((void **)&b, &cap, n + 1, sizeof *b)) ||
            (s = mp__grow((void **)&line, &lcap, n + 1, sizeof *line)) ||
            (fixed_out && (s = mp__grow((void **)&fixed, &fcap, n + 1, sizeof *fixed))) ||
            (pool_out && (s = mp__grow((void **)&pool, &pcap, n + 1, sizeof *pool))))
            break;
        line[n] = r.lineno;
        const char *pv = "";
        size_t pj = 0;
        s = parse_row(&r, ln, &L, &b[n], &total, fixed_out ? &fixed[n] : NULL, &pv);
        if (s == MP_OK && fixed_out) s = row_pool(&r, pv, rp, fixed[n], &pj);
        if (s == MP_OK && pool_out) pool[n] = pj;
        if (s == MP_OK) n++;
    }
    if (s == MP_OK && !have_header)
        s = mp__err(MP_EPARSE, "%s:%zu: empty file, expected a header such as id,first,last,size",
                    path, r.lineno + 1);
    if (s == MP_OK) s = check_duplicates(path, b, line, n);
    if (s == MP_OK && fixed_out && L.col[C_OFFSET] >= 0)
        s = pool_out ? mp__fixed_check_pools(b, n, fixed, pool, rp->pools, rp->k, path, line)
                     : mp__fixed_check(b, n, fixed, path, line);
    size_t n_fixed = mp__fixed_count(fixed, n);
    if (s == MP_OK && fixed_out && (L.col[C_OFFSET] < 0 || !n_fixed))
        free(fixed), fixed = NULL, free(pool), pool = NULL;
    mp__lines_close(&r);
    free(line);
    if (s != MP_OK) {
        free(b), free(fixed), free(pool);
        return s;
    }
    *out = b;
    *n_out = n;
    if (fixed_out) *fixed_out = fixed;
    if (pool_out) *pool_out = pool;
    return MP_OK;
}

mp_status mp_records_read(const char *path, mp_buffer_t **out, size_t *n_out) {
    return read_records(path, out, n_out, NULL, NULL, NULL);
}

mp_status mp_records_read_fixed(const char *path, mp_buffer_t **out, size_t *n_out,
                                uint64_t **fixed) {
    rpools none = {0};
    return read_records(path, out, n_out, fixed, &none, NULL);
}

mp_status mp_records_read_pools(const char *path, const mp_pool_t *pools, size_t k,
                                mp_buffer_t **out, size_t *n_out, uint64_t **fixed,
                                size_t **pool) {
    rpools rp = {pools, pools ? k : 0, true};
    return read_records(path, out, n_out, fixed, &rp, pool);
}

mp_status mp_records_write(const char *path, const mp_buffer_t *b, size_t n) {
    bool aligned = false;
    for (size_t i = 0; i < n; i++) aligned |= b[i].align > 1;
    mp__outfile o;
    mp_status s = mp__out_open(&o, path);
    if (s != MP_OK) return s;
    fprintf(o.f, aligned ? "id,first,last,size,align\n" : "id,first,last,size\n");
    for (size_t i = 0; i < n; i++) {
        char row[5 * 21 + 1], *e = row;
        e = mp__fmt_u64(e, b[i].id), *e++ = ',';
        e = mp__fmt_u64(e, b[i].first), *e++ = ',';
        e = mp__fmt_u64(e, b[i].last), *e++ = ',';
        e = mp__fmt_u64(e, b[i].size);
        if (aligned) *e++ = ',', e = mp__fmt_u64(e, b[i].align ? b[i].align : 1);
        *e++ = '\n';
        fwrite(row, 1, (size_t)(e - row), o.f);
    }
    return mp__out_close(&o, true);
}
