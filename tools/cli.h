/* cli.h -- what the memplan subcommands share: exit codes, loading the
 * problem (from a records file or a built-in model), number formatting. */
#ifndef MEMPLAN_CLI_H
#define MEMPLAN_CLI_H

#include "memplan.h"

#include <stdbool.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_INPUT = 2 };

/* Loads buffers from path, or from the built-in model if model is set; a
 * model that is no built-in name but a file (or a path) is read as records.
 * Prints the error and returns EXIT_INPUT on failure. */
int cli_load(const char *path, const char *model, mp_buffer_t **b, size_t *n);

/* The i-th name of a fixed list, NULL past its end. */
typedef const char *(*cli_names)(size_t i);
const char *cli_strategy_name(size_t i);  /* every strategy */
const char *cli_model_name(size_t i);     /* every built-in model */

/* Reports that name is not in the list: "WHO: unknown WHAT 'NAME'", then
 * "; did you mean 'A' or 'B'?" when some names are a few edits away, else
 * " (SEE)", or " (one of: ...)" when see is NULL.  A parameter ("=K",
 * "[=K]") is not part of a name.  Returns EXIT_INPUT. */
int cli_unknown(const char *who, const char *what, const char *name, cli_names known,
                const char *see);

/* Refuses (message, false) an SVG output whose name does not end in .svg:
 * only SVG is written, and an SVG named x.png would mislead.  "-" (standard
 * output), FIFOs and devices are accepted whatever their name. */
bool cli_svg_name(const char *opt, const char *path);

/* An output file of a command: the option naming it and its path (NULL
 * when the option was not given; "-" is standard output). */
typedef struct cli_output {
    const char *opt, *path;
} cli_output;

/* Checked before any work: refuses an output that is the same file as one
 * of the n_in inputs (same device and inode, so through symbolic and hard
 * links) or as another output, saying so.  Returns EXIT_OK or EXIT_INPUT. */
int cli_check_outputs(const char *const *in, size_t n_in, const cli_output *out, size_t n_out);

/* Whether an output is "-": the command then prints no report of its own
 * on standard output, which carries that file alone. */
bool cli_stdout_output(const cli_output *out, size_t n_out);

/* Removes an output written earlier in a run that failed later, when it is
 * a plain file (never a link, FIFO or device, nor standard output). */
void cli_discard_output(const char *path);

/* The kinds of file memplan reads (tools/cli_kind.c). */
typedef enum cli_kind { CLI_OTHER, CLI_RECORDS, CLI_PLAN, CLI_GRAPH, CLI_TRACE } cli_kind;

/* What path looks like from its first bytes (gzip is looked through);
 * CLI_OTHER for anything else, unreadable files and non-regular files. */
cli_kind cli_sniff(const char *path);

/* After a reader of want failed on path: when path is a file of another
 * kind, says so and names the command that reads it; else prints the
 * reader's error (mp_last_error) after "WHO: ".  Returns EXIT_INPUT. */
int cli_read_failed(const char *who, const char *path, cli_kind want);

/* Applies a default alignment to buffers that have none. */
void cli_default_align(mp_buffer_t *b, size_t n, uint64_t align);

/* Parses a positive decimal option value; prints an error on failure. */
bool cli_parse_u64(const char *opt, const char *text, uint64_t *out);

/* Parses a byte count: digits, an optional fraction, an optional unit in
 * any case ("3000000", "1.5G", "2GiB", "64KB").  NULL and *out set, or
 * what is wrong with it. */
const char *cli_parse_size(const char *s, uint64_t *out);

/* A picture's title: given when set, else path's last name without its
 * extension(s) (".csv", ".json.gz", ...), e.g. "mobilenet_v2". */
void cli_title(char *buf, size_t len, const char *given, const char *path);

/* "4.594 MiB"-style rendering into buf. */
const char *cli_human(uint64_t bytes, char *buf, size_t len);

/* Prints s as a JSON string literal (quotes, backslashes and control
 * characters escaped). */
void cli_json_string(const char *s);

/* Parses --pools SPEC ("fast:256KiB,dram") into pools[] (names point into
 * buf, a copy of spec; a pool without a size is unlimited and must come
 * last); returns the count, or 0 after printing an error after "WHO: ". */
size_t cli_parse_pools(const char *who, const char *spec, char *buf, size_t cap, mp_pool_t *pools,
                       size_t max);

/* One row per pool (capacity, buffers, footprint), or with json the member
 * "pools":[...] of an object being printed. */
void cli_pools_print(const mp_pool_t *pools, size_t k, const mp_pool_plan_t *p, bool json);

/* Whether the first line of the CSV at path that is not blank or a
 * comment has a column called name (a plain file; false when unreadable). */
bool cli_csv_has_column(const char *path, const char *name);

/* Milliseconds of a monotonic clock. */
double cli_now_ms(void);

/* Built-in models (tools/models.c). */
typedef struct cli_model {
    const char *name;
    const char *about;
    mp_status (*build)(mp_buffer_t **b, size_t *n);
} cli_model;
const cli_model *cli_models(size_t *count);

int cmd_plan(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_bounds(int argc, char **argv);
int cmd_strategies(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_remat(int argc, char **argv);
int cmd_swap(int argc, char **argv);
int cmd_report(int argc, char **argv);

#endif
