/* cli_kind.c -- what kind of file a path holds, judged from its first
 * bytes, so that a file given to the wrong command is named along with the
 * command that reads it, instead of a header error about its first line. */
#include "cli.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <zlib.h>

enum { HEAD = 4096, TAG = 32 };

/* The first bytes of a regular file, through gzip when compressed (gzread
 * passes plain files through); "" when unreadable.  Pipes are not opened
 * again: their data went to the reader that failed. */
static void head(const char *path, char *buf) {
    struct stat st;
    buf[0] = 0;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) return;
    gzFile f = gzopen(path, "rb");
    if (!f) return;
    int k = gzread(f, buf, HEAD - 1);
    gzclose(f);
    buf[k > 0 ? k : 0] = 0;
}

/* Copies the format tag at p ("memplan-graph/1") into tag. */
static void copy_tag(const char *p, char *tag) {
    size_t k = 0;
    while (k < TAG - 1 && (isalnum((unsigned char)p[k]) || strchr("-/._", p[k]))) k++;
    memcpy(tag, p, k);
    tag[k] = 0;
}

/* A CSV header: time columns make records (which may carry MiniMalloc's
 * offset column), an offset without them a plan. */
static cli_kind csv_kind(const char *line) {
    static const char *const times[] = {"first", "last", "lower", "upper", "start", "begin", "end"};
    bool time = false, offset = false;
    for (const char *p = line; *p && *p != '\n';) {
        while (*p == ' ' || *p == '\t') p++;
        size_t len = strcspn(p, ",\n\r");
        while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
        for (size_t i = 0; i < sizeof times / sizeof times[0]; i++)
            time |= strlen(times[i]) == len && !strncasecmp(p, times[i], len);
        offset |= len == 6 && !strncasecmp(p, "offset", 6);
        p += strcspn(p, ",\n");
        if (*p == ',') p++;
    }
    return time ? CLI_RECORDS : offset ? CLI_PLAN : CLI_OTHER;
}

static cli_kind sniff(const char *path, char *tag) {
    char buf[HEAD];
    head(path, buf);
    const char *p = buf + (strncmp(buf, "\xEF\xBB\xBF", 3) ? 0 : 3), *t;   /* a UTF-8 BOM */
    p += strspn(p, " \t\r\n");
    if (*p == '{' && (t = strstr(p, "\"memplan-graph/"))) return copy_tag(t + 1, tag), CLI_GRAPH;
    if (*p == '#' && (t = strstr(p, "memplan-trace/")) && t < p + strcspn(p, "\n"))
        return copy_tag(t, tag), CLI_TRACE;
    while (*p == '#' || *p == '\n' || *p == '\r') p += strcspn(p, "\n"), p += *p == '\n';
    return csv_kind(p);
}

cli_kind cli_sniff(const char *path) {
    char tag[TAG];
    return sniff(path, tag);
}

int cli_read_failed(const char *who, const char *path, cli_kind want) {
    static const char *const names[] = {"", "records CSV", "plan CSV", "memplan-graph/1 graph",
                                        "memplan-trace/1 trace"};
    char tag[TAG];
    cli_kind k = sniff(path, tag);
    if (k == CLI_OTHER || k == want) {
        fprintf(stderr, "%s: %s\n", who, mp_last_error());
        return EXIT_INPUT;
    }
    fprintf(stderr, "memplan: %s: this is a ", path);
    if (k == CLI_RECORDS)
        fprintf(stderr, "records CSV, not a %s; plan it with \"memplan plan %s\"\n", names[want], path);
    else if (k == CLI_PLAN)
        fprintf(stderr, "plan CSV, not a %s; check it with \"memplan check RECORDS.csv %s\"\n",
                names[want], path);
    else if (k == CLI_GRAPH)
        fprintf(stderr, "%s graph, not a %s; read it with \"memplan graph %s\"\n", tag, names[want],
                path);
    else
        fprintf(stderr,
                "%s trace, not a %s; turn it into records with \"memplan trace records -o "
                "RECORDS.csv %s\"\n",
                tag, names[want], path);
    return EXIT_INPUT;
}
