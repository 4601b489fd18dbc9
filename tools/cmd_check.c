/* cmd_check.c -- `memplan check RECORDS.csv PLAN.csv`: prove a plan valid
 * (exit 0 and a one-line summary) or name the first conflict (exit 1).  A
 * pool plan (a `pool` column, from `memplan plan --pools`) is checked pool
 * by pool, against the pools' capacities when --pools gives them, and with
 * each fixed buffer in its pool (the records' pool column) at its offset. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: memplan check [--json] [--pools SPEC] RECORDS.csv PLAN.csv\n"
    "\n"
    "Proves that PLAN.csv (id,offset[,size][,object|,pool]) is valid for RECORDS.csv:\n"
    "no two buffers whose lifetimes intersect overlap in memory (or share an\n"
    "object), offsets respect alignment.  Runs in O(n log n).\n"
    "\n"
    "A plan with a pool column (memplan plan --pools) is checked in each pool,\n"
    "which is its own address space; --pools SPEC (e.g. fast:256KiB,dram, as\n"
    "given to memplan plan) also checks that each pool's footprint is within\n"
    "its capacity and that the plan names only those pools.  Fixed buffers (the\n"
    "records' offset column, in the pool their pool column names, else the\n"
    "first) must be at their offsets.\n"
    "\n"
    "Exit status: 0 valid, 1 invalid (first conflict named), 2 malformed input.\n";

/* The records did not read: the arguments may be the wrong way round. */
static int records_failed(const char *const files[2]) {
    if (cli_sniff(files[0]) != CLI_PLAN || cli_sniff(files[1]) != CLI_RECORDS)
        return cli_read_failed("memplan", files[0], CLI_RECORDS);
    fprintf(stderr,
            "memplan: %s: this is a plan CSV, not a records CSV; the records come first: "
            "\"memplan check %s %s\"\n",
            files[0], files[1], files[0]);
    return EXIT_INPUT;
}

/* A pool plan: read with the pools given (or those the file names), the
 * records' fixed buffers with those pools, check.  Without --pools the
 * records are read twice: first to read the plan, whose pools the second
 * reading needs for the records' pool column. */
static int check_pools(const char *const files[2], const char *spec, bool json) {
    char buf[1024];
    mp_pool_t pools[16];
    size_t k = 0, n, *fpool = NULL;
    mp_buffer_t *b = NULL;
    uint64_t *fixed = NULL;
    if (spec && !(k = cli_parse_pools("memplan check", spec, buf, sizeof buf, pools, 16)))
        return EXIT_INPUT;
    mp_status s = spec ? mp_records_read_pools(files[0], pools, k, &b, &n, &fixed, &fpool)
                       : mp_records_read(files[0], &b, &n);
    if (s != MP_OK) return records_failed(files);
    mp_pool_plan_t p;
    if (mp_pool_plan_read_csv(files[1], b, n, k ? pools : NULL, k, &p) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        free(b), free(fixed), free(fpool);
        return EXIT_INPUT;
    }
    if (!k) {
        for (k = 0; k < p.n_pools; k++) pools[k] = (mp_pool_t){p.name[k], 0};
        free(b);
        if (mp_records_read_pools(files[0], pools, k, &b, &n, &fixed, &fpool) != MP_OK) {
            fprintf(stderr, "memplan: %s\n", mp_last_error());
            mp_pool_plan_free(&p);
            return EXIT_INPUT;
        }
    }
    s = mp_pool_plan_check_fixed(b, n, pools, k, fixed, fpool, &p);
    if (json) {
        printf("{\"valid\":%s,\"buffers\":%zu,", s == MP_OK ? "true" : "false", n);
        cli_pools_print(pools, k, &p, true);
        printf(",\"error\":");
        cli_json_string(s == MP_OK ? "" : mp_last_error());
        printf("}\n");
    } else if (s == MP_OK) {
        printf("valid: %zu buffers in %zu pools%s\n\n", n, k,
               spec ? ", each within its capacity" : " (no capacities given: --pools SPEC)");
        cli_pools_print(pools, k, &p, false);
    } else
        printf("invalid: %s\n", mp_last_error());
    mp_pool_plan_free(&p);
    free(b), free(fixed), free(fpool);
    return s == MP_OK ? EXIT_OK : EXIT_INVALID;
}

int cmd_check(int argc, char **argv) {
    const char *files[2] = {NULL, NULL}, *pools = NULL;
    size_t nf = 0;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(help, stdout);
            return EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else if (!strcmp(argv[i], "--pools") && i + 1 < argc) {
            pools = argv[++i];
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "memplan check: unknown option '%s'\n%s", argv[i], help);
            return EXIT_INPUT;
        } else if (nf < 2) {
            files[nf++] = argv[i];
        } else {
            nf++;
        }
    }
    if (nf != 2) {
        fprintf(stderr, "memplan check: need RECORDS.csv and PLAN.csv\n%s", help);
        return EXIT_INPUT;
    }
    bool pooled = cli_csv_has_column(files[1], "pool");
    if (pools && !pooled) {
        fprintf(stderr, "memplan check: --pools: %s has no pool column (write one with "
                "\"memplan plan --pools SPEC -o PLAN.csv\")\n", files[1]);
        return EXIT_INPUT;
    }
    if (pooled) return check_pools(files, pools, json);
    mp_buffer_t *b;
    uint64_t *fixed; /* the records' offset column: the plan must keep it */
    size_t n;
    if (mp_records_read_fixed(files[0], &b, &n, &fixed) != MP_OK) return records_failed(files);
    mp_plan_t p;
    mp_bounds_t bd;
    if (mp_plan_read_csv(files[1], b, n, &p) != MP_OK) {
        free(b), free(fixed);
        return cli_read_failed("memplan", files[1], CLI_PLAN);
    }
    if (mp_bounds_compute(b, n, &bd) != MP_OK) {
        fprintf(stderr, "memplan: %s\n", mp_last_error());
        mp_plan_free(&p);
        free(b), free(fixed);
        return EXIT_INPUT;
    }
    mp_status s = mp_plan_check_fixed(b, n, fixed, &p, NULL);
    double ratio = bd.offsets ? (double)p.footprint / (double)bd.offsets : 1.0;
    if (json) {
        printf("{\"valid\":%s,\"buffers\":%zu,\"footprint\":%llu,\"lower_bound\":%llu,"
               "\"ratio\":%.6f,\"error\":",
               s == MP_OK ? "true" : "false", n, (unsigned long long)p.footprint,
               (unsigned long long)bd.offsets, ratio);
        cli_json_string(s == MP_OK ? "" : mp_last_error());
        printf("}\n");
    } else if (s == MP_OK)
        printf("valid: %zu buffers, footprint %llu, lower bound %llu, ratio %.4f\n", n,
               (unsigned long long)p.footprint, (unsigned long long)bd.offsets, ratio);
    else
        printf("invalid: %s\n", mp_last_error());
    mp_plan_free(&p);
    free(b), free(fixed);
    return s == MP_OK ? EXIT_OK : EXIT_INVALID;
}
