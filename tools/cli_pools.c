/* cli_pools.c -- memory pools on the command line: --pools SPEC
 * ("fast:256KiB,dram") for `memplan plan` and `memplan check`, the table or
 * JSON of a pool plan, and whether a CSV carries a given column. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

size_t cli_parse_pools(const char *who, const char *spec, char *buf, size_t cap, mp_pool_t *pools,
                       size_t max) {
    size_t k = 0;
    if (strlen(spec) >= cap) {
        fprintf(stderr, "%s: --pools: too long\n", who);
        return 0;
    }
    strcpy(buf, spec);
    for (char *tok = buf, *next; tok; tok = next) {
        next = strchr(tok, ',');
        if (next) *next++ = 0;
        char *size = strchr(tok, ':');
        if (size) *size++ = 0;
        if (!*tok || k == max) {
            fprintf(stderr, "%s: --pools: %s\n", who, *tok ? "at most 16 pools" : "a pool without a name");
            return 0;
        }
        for (size_t j = 0; j < k; j++)
            if (!strcmp(pools[j].name, tok)) {
                fprintf(stderr, "%s: --pools: pool '%s' given twice\n", who, tok);
                return 0;
            }
        pools[k] = (mp_pool_t){tok, 0};
        const char *why = size ? cli_parse_size(size, &pools[k].capacity) : NULL;
        if (why || (size && !pools[k].capacity)) {
            fprintf(stderr, "%s: --pools: pool '%s': size '%s': %s\n", who, tok, size,
                    why ? why : "must be positive");
            return 0;
        }
        if (k && !pools[k - 1].capacity) {
            fprintf(stderr, "%s: --pools: pool '%s' comes after the unlimited pool '%s' and would stay empty\n",
                    who, tok, pools[k - 1].name);
            return 0;
        }
        k++;
    }
    return k;
}

/* Buffers in pool j. */
static size_t pool_count(const mp_pool_plan_t *p, size_t j) {
    size_t m = 0;
    for (size_t i = 0; i < p->n; i++) m += p->pool[i] == j;
    return m;
}

void cli_pools_print(const mp_pool_t *pools, size_t k, const mp_pool_plan_t *p, bool json) {
    char h1[32], h2[32];
    if (json) {
        printf("\"pools\":[");
        for (size_t j = 0; j < k; j++) {
            printf("%s{\"name\":", j ? "," : "");
            cli_json_string(pools[j].name);
            printf(",\"capacity\":%llu,\"buffers\":%zu,\"footprint\":%llu}",
                   (unsigned long long)pools[j].capacity, pool_count(p, j),
                   (unsigned long long)p->footprint[j]);
        }
        printf("]");
        return;
    }
    printf("%-16s %14s %10s %16s %12s\n", "pool", "capacity", "buffers", "footprint", "");
    for (size_t j = 0; j < k; j++)
        printf("%-16s %14s %10zu %16llu %12s\n", pools[j].name,
               pools[j].capacity ? cli_human(pools[j].capacity, h1, sizeof h1) : "unlimited",
               pool_count(p, j), (unsigned long long)p->footprint[j],
               cli_human(p->footprint[j], h2, sizeof h2));
}

bool cli_csv_has_column(const char *path, const char *name) {
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[4096];
    bool found = false;
    while (fgets(line, sizeof line, f)) {
        if (line[strspn(line, " \t\r\n")] == 0 || line[0] == '#') continue;
        for (char *p = line; *p && !found;) {
            p += strspn(p, " \t");
            size_t len = strcspn(p, ",\r\n");
            while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
            found = len == strlen(name) && !strncasecmp(p, name, len);
            p += strcspn(p, ",\n");
            if (*p == ',') p++;
            else break;
        }
        break;
    }
    fclose(f);
    return found;
}
