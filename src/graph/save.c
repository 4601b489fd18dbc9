/* save.c -- graph files on disk: mp_graph_load reads one (gzip or plain;
 * a directory, a truncated gzip stream and a BOM get their own handling),
 * mp_graph_save writes one, and the two helpers that turn a loaded tensor
 * or node back into its memplan-graph/1 object (shared with the builder's
 * mp_graph_builder_from, so a copied graph and a saved one say the same).
 *
 * A saved file looks like the exporter's: one tensor or node per line, the
 * model object and every node's attrs exactly as loaded (jansson prints
 * reals with 17 significant digits, so numbers read back bit for bit).  It
 * is written through zlib (compressed when PATH ends in ".gz", transparent
 * otherwise) to the output of src/io/outfile.c, as every writer is: a
 * regular file is replaced only when complete, so a failure leaves nothing
 * behind; FIFOs, devices and "-" are written directly. */
#include "graph_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "../io/io.h"
#include "graph_json.h"
#include <zlib.h>

/* Opens path for gzread (zlib reads gzip and plain files alike); a
 * directory is refused here, as gzread would only say "Is a directory". */
static mp_status gz_open_read(const char *path, gzFile *out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mp__err(MP_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return mp__err(MP_EIO, "%s: is a directory", path);
    }
    errno = 0;
    if (!(*out = gzdopen(fd, "rb"))) {
        close(fd);
        return errno ? mp__err(MP_EIO, "%s: cannot open: %s", path, strerror(errno)) : MP__NOMEM();
    }
    return MP_OK;
}

/* After gzread: MP_OK, or why the stream is bad.  A gzip stream cut short
 * reads as Z_BUF_ERROR at its end: said so, rather than let the JSON
 * parser report the missing end of the text as a syntax error. */
static mp_status gz_status(gzFile f, const char *path) {
    int code;
    const char *msg = gzerror(f, &code), *colon = strstr(msg, ">: ");
    if (code == Z_OK) return MP_OK;
    if (code == Z_ERRNO) return mp__err(MP_EIO, "%s: cannot read: %s", path, strerror(errno));
    if (code == Z_BUF_ERROR)
        return mp__err(MP_EPARSE, "%s: the gzip stream is truncated (the file ends inside "
                       "the compressed data)", path);
    /* zlib's message starts "<fd:N>: " after gzdopen */
    return mp__err(MP_EPARSE, "%s: not a valid gzip file: %s", path, colon ? colon + 3 : msg);
}

/* The whole decompressed text of f into *buf, *len. */
static mp_status gz_slurp(gzFile f, const char *path, char **buf, size_t *len) {
    size_t cap = 0;
    for (;;) {
        mp_status s = mp__grow((void **)buf, &cap, *len + (1u << 16), 1);
        if (s) return s;
        size_t room = cap - *len;
        if (room > INT_MAX) room = INT_MAX;
        int got = gzread(f, *buf + *len, (unsigned)room);
        if (got <= 0) return gz_status(f, path);
        *len += (size_t)got;
    }
}

/* Reads a graph file, plain or gzip; a UTF-8 byte order mark opening the
 * text is skipped (jansson would take it for a syntax error). */
mp_status mp_graph_load(const char *path, mp_graph_t **out) {
    *out = NULL;
    if (!path) return mp__err(MP_EINVAL, "mp_graph_load: NULL path");
    gzFile f;
    mp_status s = gz_open_read(path, &f);
    if (s) return s;
    char *buf = NULL;
    size_t len = 0;
    s = gz_slurp(f, path, &buf, &len);
    gzclose(f);
    size_t bom = len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3) ? 3 : 0;
    if (!s) s = mp_graph_parse(buf + bom, len - bom, path, out);
    free(buf);
    return s;
}

/* ---- graph -> JSON objects ------------------------------------------------ */

/* A tensor or node id, or null for MP_GRAPH_NONE. */
static json_t *id_or_null(size_t id) {
    return id == MP_GRAPH_NONE ? json_null() : json_integer((json_int_t)id);
}

json_t *mp__json_id_array(const size_t *ids, size_t n) {
    json_t *a = json_array();
    for (size_t k = 0; a && k < n; k++)
        if (json_array_append_new(a, json_integer((json_int_t)ids[k]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

mp_status mp__graph_tensor_json(const mp_graph_t *g, size_t id, json_t **out) {
    const mp_graph_tensor_t *t = &g->tensor[id];
    json_t *o = json_object(), *shape = json_array();
    int bad = !o || !shape;
    for (size_t k = 0; !bad && k < t->rank; k++)
        bad = json_array_append_new(shape, json_integer((json_int_t)t->shape[k]));
    if (bad) {
        json_decref(shape);
        json_decref(o);
        return MP__NOMEM();
    }
    /* json_object_set_new takes the value even on failure, so one flag
     * collects every failure and nothing leaks. */
    bad |= json_object_set_new(o, "id", json_integer((json_int_t)id));
    bad |= json_object_set_new(o, "name", json_string(t->name));
    bad |= json_object_set_new(o, "shape", shape);
    bad |= json_object_set_new(o, "dtype", json_string(t->dtype));
    bad |= json_object_set_new(o, "bytes", json_integer((json_int_t)t->bytes));
    bad |= json_object_set_new(o, "kind", json_string(mp__tensor_kind_name(t->kind)));
    bad |= json_object_set_new(o, "alias_of", id_or_null(t->alias_of));
    if (t->kind == MP_TENSOR_PARAMETER || t->trainable)
        bad |= json_object_set_new(o, "trainable", json_boolean(t->trainable));
    if (t->grad_of != MP_GRAPH_NONE)
        bad |= json_object_set_new(o, "grad_of", json_integer((json_int_t)t->grad_of));
    if (bad) {
        json_decref(o);
        return MP__NOMEM();
    }
    *out = o;
    return MP_OK;
}

mp_status mp__graph_node_json(const mp_graph_t *g, size_t id, json_t **out) {
    const mp_graph_node_t *nd = &g->node[id];
    json_t *o = json_object();
    if (!o) return MP__NOMEM();
    int bad = 0;
    bad |= json_object_set_new(o, "id", json_integer((json_int_t)id));
    bad |= json_object_set_new(o, "name", json_string(nd->name));
    bad |= json_object_set_new(o, "op", json_string(nd->op));
    bad |= json_object_set_new(o, "inputs", mp__json_id_array(nd->inputs, nd->n_inputs));
    bad |= json_object_set_new(o, "outputs", mp__json_id_array(nd->outputs, nd->n_outputs));
    if (nd->scratch != MP_GRAPH_NONE)
        bad |= json_object_set_new(o, "scratch", json_integer((json_int_t)nd->scratch));
    if (g->attrs[id]) bad |= json_object_set(o, "attrs", g->attrs[id]);
    if (bad) {
        json_decref(o);
        return MP__NOMEM();
    }
    *out = o;
    return MP_OK;
}

/* ---- writing --------------------------------------------------------------- */

typedef struct writer {
    gzFile f;
    int failed;
} writer;

static int put(const char *buf, size_t size, void *data) {
    writer *w = data;
    if (w->failed) return -1;
    while (size) {
        unsigned chunk = size > (1u << 30) ? 1u << 30 : (unsigned)size;
        if (gzwrite(w->f, buf, chunk) != (int)chunk) {
            w->failed = 1;
            return -1;
        }
        buf += chunk;
        size -= chunk;
    }
    return 0;
}

static void puts_w(writer *w, const char *s) { put(s, strlen(s), w); }

/* Dumps v compactly; takes the reference. */
static void dump(writer *w, json_t *v) {
    if (!v) {
        w->failed = 2;   /* out of memory building it */
        return;
    }
    if (json_dump_callback(v, put, w, JSON_COMPACT | JSON_ENCODE_ANY) && !w->failed) w->failed = 2;
    json_decref(v);
}

static void write_graph(writer *w, const mp_graph_t *g) {
    puts_w(w, "{\n\"format\":\"memplan-graph/1\",\n");
    if (g->model) {
        puts_w(w, "\"model\":");
        dump(w, json_incref(g->model));
        puts_w(w, ",\n");
    }
    puts_w(w, "\"tensors\":[\n");
    for (size_t i = 0; i < g->n_tensors && !w->failed; i++) {
        json_t *o = NULL;
        if (mp__graph_tensor_json(g, i, &o)) w->failed = 2;
        else dump(w, o);
        puts_w(w, i + 1 < g->n_tensors ? ",\n" : "\n");
    }
    puts_w(w, "],\n\"nodes\":[\n");
    for (size_t i = 0; i < g->n_nodes && !w->failed; i++) {
        json_t *o = NULL;
        if (mp__graph_node_json(g, i, &o)) w->failed = 2;
        else dump(w, o);
        puts_w(w, i + 1 < g->n_nodes ? ",\n" : "\n");
    }
    puts_w(w, "],\n\"order\":");
    dump(w, mp__json_id_array(g->order, g->n_nodes));
    puts_w(w, ",\n\"outputs\":");
    dump(w, mp__json_id_array(g->outputs, g->n_outputs));
    puts_w(w, ",\n\"loss\":");
    dump(w, id_or_null(g->loss));
    puts_w(w, "\n}\n");
}

/* The zlib error of a failed write, as text. */
static const char *gz_reason(gzFile f) {
    int e = 0;
    const char *msg = gzerror(f, &e);   /* valid until gzclose */
    return e == Z_ERRNO ? strerror(errno) : msg;
}

/* Writes g through zlib on a duplicate of o's descriptor (closed by
 * gzclose); o itself is closed by the caller. */
static mp_status write_gz(const mp_graph_t *g, const mp__outfile *o, int gz) {
    int fd = dup(o->fd);
    errno = 0;
    /* "T": zlib writes the bytes as they are (no gzip framing). */
    writer w = {.f = fd < 0 ? NULL : gzdopen(fd, gz ? "wb6" : "wbT")};
    if (!w.f) {
        if (fd >= 0) close(fd);
        return errno ? mp__err(MP_EIO, "%s: %s", o->path, strerror(errno)) : MP__NOMEM();
    }
    write_graph(&w, g);
    mp_status s = MP_OK;
    if (w.failed == 2) s = MP__NOMEM();
    else if (w.failed) s = mp__err(MP_EIO, "%s: write failed: %s", o->path, gz_reason(w.f));
    int zc = gzclose(w.f);
    if (!s && zc != Z_OK)
        s = mp__err(MP_EIO, "%s: write failed: %s", o->path,
                    zc == Z_ERRNO ? strerror(errno) : "zlib error");
    return s;
}

/* Writes g to path through the output helper of src/io/ (outfile.c). */
mp_status mp_graph_save(const mp_graph_t *g, const char *path) {
    if (!g || !path || !*path) return mp__err(MP_EINVAL, "mp_graph_save: NULL graph or path");
    size_t len = strlen(path);
    mp__outfile o;
    mp_status s = mp__out_open(&o, path);
    if (s) return s;
    s = write_gz(g, &o, len >= 3 && !strcmp(path + len - 3, ".gz"));
    mp_status c = mp__out_close(&o, s == MP_OK);
    return s ? s : c;
}
