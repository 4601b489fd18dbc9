/* outfile.c -- where every writer of the library sends its output.
 *
 * What a path names decides how it is written (docs/formats.md, "Outputs"):
 *   "-"                      standard output, written directly;
 *   a directory              refused ("DIR: is a directory");
 *   a FIFO, a device, ...    opened O_WRONLY and written directly: renaming
 *                            a file over /dev/null or a FIFO would replace
 *                            the node and its reader would get nothing;
 *   a regular file           written to a temporary file beside it, synced
 *                            and renamed over it only when complete, with
 *                            the old file's permission bits, so a failure
 *                            (ENOSPC included) leaves the old file intact;
 *   a symbolic link          followed: the temporary file goes beside the
 *                            final target (each link read in turn, a
 *                            relative one against its link's directory,
 *                            up to 40), so the link stays a link and its
 *                            target gets the content; a dangling link
 *                            creates its target, as a shell's '>' does;
 *   a new file               a temporary file renamed into place.
 * A regular file that is the process's standard output or error (a path
 * like /dev/stdout) is written through that stream: renaming over it would
 * cut off what the program prints around it. */
#include "io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_LINKS = 40, MAX_TRIES = 100 };

/* The standard stream (stdout or stderr) whose file is st, or NULL. */
static FILE *std_stream(const struct stat *st) {
    static const int fds[] = {STDOUT_FILENO, STDERR_FILENO};
    for (int i = 0; i < 2; i++) {
        struct stat s;
        if (fstat(fds[i], &s) == 0 && s.st_dev == st->st_dev && s.st_ino == st->st_ino)
            return i ? stderr : stdout;
    }
    return NULL;
}

/* Writes to an already open stream (stdout, stderr): flushed first, so
 * what was printed before stays before; never closed. */
static mp_status use_stream(mp__outfile *o, FILE *f) {
    if (fflush(f) != 0)
        return mp__err(MP_EIO, "%s: write failed: %s", o->path, strerror(errno));
    o->f = f;
    o->fd = fileno(f);
    o->borrowed = true;
    return MP_OK;
}

/* Wraps descriptor fd in o->f; closes it on failure. */
static mp_status wrap(mp__outfile *o, int fd) {
    o->fd = fd;
    o->f = fdopen(fd, "w");
    if (o->f) return MP_OK;
    close(fd);
    return MP__NOMEM();
}

/* A FIFO, a character or block device, ...: written in place. */
static mp_status open_direct(mp__outfile *o) {
    int fd = open(o->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return mp__err(MP_EIO, "%s: %s", o->path, strerror(errno));
    return wrap(o, fd);
}

/* dir/name of dir/link, for a link's relative target name. */
static char *beside(const char *link, const char *name) {
    const char *slash = name[0] == '/' ? NULL : strrchr(link, '/');
    size_t d = slash ? (size_t)(slash - link) + 1 : 0, len = strlen(name);
    char *p = malloc(d + len + 1);
    if (!p) return NULL;
    memcpy(p, link, d);
    memcpy(p + d, name, len + 1);
    return p;
}

/* The target named by symbolic link path (malloc'ed), NULL on failure. */
static char *link_target(const char *path) {
    for (size_t cap = 256;; cap *= 2) {
        char *buf = malloc(cap);
        if (!buf) return NULL;
        ssize_t k = readlink(path, buf, cap);
        if (k >= 0 && (size_t)k < cap) {
            buf[k] = 0;
            char *p = beside(path, buf);
            free(buf);
            return p;
        }
        free(buf);
        if (k < 0 || cap > (1u << 20)) return NULL;
    }
}

/* Where a write to path lands: the path itself, or when it is a symbolic
 * link (chain), its final target, which may be missing (a dangling link). */
static mp_status final_target(const char *path, char **out) {
    char *cur = strdup(path);
    for (int hops = 0; cur; hops++) {
        struct stat st;
        if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) break;
        char *next = hops < MAX_LINKS ? link_target(cur) : NULL;
        int e = hops < MAX_LINKS ? errno : ELOOP;
        free(cur);
        if (!next && e != ENOMEM) return mp__err(MP_EIO, "%s: %s", path, strerror(e));
        cur = next;
    }
    if (!cur) return MP__NOMEM();
    *out = cur;
    return MP_OK;
}

/* Creates a new temporary file beside o->target: TARGET.tmp.PID, then
 * TARGET.tmp.PID.K when that is taken (another thread, a leftover). */
static mp_status open_temp(mp__outfile *o, const struct stat *old) {
    size_t len = strlen(o->target) + 48;
    if (!(o->tmp = malloc(len))) return MP__NOMEM();
    int fd = -1;
    for (int k = 0; fd < 0 && k < MAX_TRIES; k++) {
        if (k) snprintf(o->tmp, len, "%s.tmp.%ld.%d", o->target, (long)getpid(), k);
        else snprintf(o->tmp, len, "%s.tmp.%ld", o->target, (long)getpid());
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    if (fd < 0) {
        mp_status s = mp__err(MP_EIO, "%s: %s", o->path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return s;
    }
    /* The replacement keeps the permissions of the file it replaces. */
    mp_status s;
    if (old && fchmod(fd, old->st_mode & 07777) != 0) {
        s = mp__err(MP_EIO, "%s: %s", o->path, strerror(errno));
        close(fd);
    } else {
        s = wrap(o, fd);
    }
    if (s) unlink(o->tmp);
    return s;
}

/* A regular file (or a symlink to one): replaced through a temporary. */
static mp_status open_replace(mp__outfile *o, const struct stat *st) {
    FILE *std = std_stream(st);
    if (std) return use_stream(o, std);
    mp_status s = final_target(o->path, &o->target);
    return s ? s : open_temp(o, st);
}

static mp_status open_by_kind(mp__outfile *o) {
    struct stat st;
    if (!strcmp(o->path, "-")) return use_stream(o, stdout);
    if (stat(o->path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return mp__err(MP_EIO, "%s: is a directory", o->path);
        return S_ISREG(st.st_mode) ? open_replace(o, &st) : open_direct(o);
    }
    if (errno != ENOENT) return mp__err(MP_EIO, "%s: %s", o->path, strerror(errno));
    mp_status s = final_target(o->path, &o->target);
    return s ? s : open_temp(o, NULL);
}

mp_status mp__out_open(mp__outfile *o, const char *path) {
    memset(o, 0, sizeof *o);
    o->fd = -1;
    if (!path || !*path) return mp__err(MP_EINVAL, "no output path given");
    o->path = path;
    mp_status s = open_by_kind(o);
    if (s != MP_OK) {
        free(o->target);
        free(o->tmp);
        memset(o, 0, sizeof *o);
    }
    return s;
}

/* Flushes and (unless borrowed) closes the stream; 0 or the errno of the
 * first failure.  A temporary file is synced, so the rename that follows
 * never puts an empty file in place of the old one after a crash. */
static int finish(mp__outfile *o) {
    int e = fflush(o->f) != 0 || ferror(o->f) ? (errno ? errno : EIO) : 0;
    if (!e && o->tmp && fsync(o->fd) != 0) e = errno;
    if (!o->borrowed && fclose(o->f) != 0 && !e) e = errno;
    return e;
}

mp_status mp__out_close(mp__outfile *o, bool ok) {
    if (!o->f) return MP_EIO;
    mp_status s = MP_OK;
    int e = finish(o);
    const char *name = strcmp(o->path, "-") ? o->path : "standard output";
    if (ok && e) s = mp__err(MP_EIO, "%s: write failed: %s", name, strerror(e));
    if (ok && !e && o->tmp && rename(o->tmp, o->target) != 0)
        s = mp__err(MP_EIO, "%s: %s", o->path, strerror(errno));
    if (o->tmp && (!ok || s != MP_OK)) unlink(o->tmp);
    free(o->tmp);
    free(o->target);
    memset(o, 0, sizeof *o);
    return ok ? s : MP_EIO;
}
