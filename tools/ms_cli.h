/*  =========================================================================
    ms_cli - shared pieces of the command-line client `meshsweep`

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The client is one program with one entry point per command group:

        ms_cli_train.c    meshsweep train     (one network, here)
        ms_cli_run.c      meshsweep run       (an embedded single node)
        ms_cli_remote.c   meshsweep submit | status | results (HTTP API,
                          or a store opened read-only with --data-dir)
        ms_cli_weights.c  meshsweep weights   (a kept network, HTTP API)
        ms_cli_predict.c  meshsweep predict   (a saved network on data)
        ms_cli_format.c   results as an aligned table or CSV
        ms_cli_trust.c    meshsweep pool init | invite | join | enroll |
                          revoke | show (authority, certificates; files only)
        ms_cli_common.c   argument scanning, error lines, files, HTTP

    Every command follows DESIGN.md "Programs": --help and --version,
    --json where it prints data, exit codes 0 (success), 1 (failure),
    2 (bad usage or bad input, with one line "meshsweep: WHERE: REASON" on
    stderr).
*/
#ifndef MS_CLI_H
#define MS_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "ms_analysis.h"
#include "ms_err.h"

//  Exit codes of every command.
#define MS_CLI_EXIT_OK 0
#define MS_CLI_EXIT_FAILURE 1
#define MS_CLI_EXIT_USAGE 2

//  Default node API address (DESIGN.md "Default ports").
#define MS_CLI_DEFAULT_NODE "http://127.0.0.1:5872"

//  Command entry points: argv[0] is the command name ("train"). Each
//  returns the process exit code.
int ms_cli_train_main(int argc, char **argv);
int ms_cli_run_main(int argc, char **argv);
int ms_cli_submit_main(int argc, char **argv);
int ms_cli_status_main(int argc, char **argv);
int ms_cli_results_main(int argc, char **argv);
int ms_cli_peers_main(int argc, char **argv);    // ms_cli_pool.c
int ms_cli_datasets_main(int argc, char **argv); // ms_cli_pool.c
int ms_cli_events_main(int argc, char **argv);   // ms_cli_events.c
int ms_cli_control_main(int argc, char **argv);  // cancel|pause|resume|
                                                 // priority (ms_cli_pool.c)
int ms_cli_predict_main(int argc, char **argv);  // ms_cli_predict.c
int ms_cli_weights_main(int argc, char **argv);  // ms_cli_weights.c
int ms_cli_pool_main(int argc, char **argv);     // pool init|invite|join|
                                                 // enroll|revoke|show
                                                 // (ms_cli_trust.c)

//  ---- errors ---------------------------------------------------------

//  Print one line "meshsweep: WHERE: REASON" to stderr (WHERE omitted
//  when NULL or empty) and return MS_CLI_EXIT_USAGE.
int ms_cli_usage_error(const char *where, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//  Print one line "meshsweep: WHERE: REASON" to stderr and return
//  MS_CLI_EXIT_FAILURE.
int ms_cli_failure(const char *where, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//  Print a diag as "meshsweep: WHERE: REASON" (falling back to
//  ms_strerror(code) when the diag is empty) and return the exit code for
//  the status code: 2 for input a user must fix (MS_ERR_INVALID,
//  MS_ERR_DATASET, MS_ERR_RANGE, MS_ERR_NOTFOUND, MS_ERR_UNSUPPORTED),
//  1 for anything else.
int ms_cli_diag_exit(const ms_diag_t *diag, int code, const char *fallback);

//  Exit code (as ms_cli_diag_exit) for a status code, without printing.
int ms_cli_exit_code(int code);

//  ---- argument scanning ----------------------------------------------

//  True when argv[*i] is the option NAME ("--node") in the form
//  "--node VALUE" or "--node=VALUE": stores the value (borrowed from argv)
//  and advances *i past a separate value. When NAME is given without a
//  value, sets *missing to true (the caller reports a usage error).
bool ms_cli_arg_value(int argc, char **argv, int *i, const char *name,
                      const char **value, bool *missing);

//  A string option of a command and where its value goes.
typedef struct {
    const char *name;  // "--data"
    const char **slot; // receives the value (borrowed from argv)
} ms_cli_value_opt_t;

//  True when argv[*i] is one of the n options of opts (as
//  ms_cli_arg_value): its value goes to the option's slot, or, given
//  without a value, *exit_code becomes the usage error (printed).
bool ms_cli_value_option(int argc, char **argv, int *i,
                         const ms_cli_value_opt_t *opts, size_t n,
                         int *exit_code);

//  The options every command that talks to a node takes, in one place:
//  when argv[*i] is --node URL, --token TOKEN or --token-file FILE (or
//  --opt=VALUE), take it and return true: *node_url gets --node's value
//  (borrowed from argv), the tokens go to ms_cli_set_token and
//  ms_cli_set_token_file, and *exit_code is MS_CLI_EXIT_OK, or
//  MS_CLI_EXIT_USAGE after one usage line when the value is missing.
//  False (nothing taken, *exit_code untouched) for any other argument.
bool ms_cli_connection_arg(int argc, char **argv, int *i, const char **node_url,
                           int *exit_code);

//  The analysis options of `results` and `run`, in one place: when
//  argv[*i] is --x PARAM or --metric NAME (or --opt=VALUE), take it
//  (borrowed from argv) into *x or *metric, set *analyze (each implies
//  --analyze) and return true; *rc gets MS_CLI_EXIT_OK, or the usage exit
//  code (one line printed) when the value is missing. The names are
//  checked by ms_analysis_compute.
bool ms_cli_analysis_arg(int argc, char **argv, int *i, const char **x,
                         const char **metric, bool *analyze, int *rc);

//  Parse a non-negative decimal int option value; returns MS_OK or
//  prints "meshsweep: NAME: ..." and returns MS_ERR_INVALID.
int ms_cli_parse_int(const char *name, const char *text, long min, long max,
                     long *out);

//  True when a --help / -h appears in argv[1..argc).
bool ms_cli_wants_help(int argc, char **argv);

//  Print "meshsweep VERSION" on stdout.
void ms_cli_print_version(void);

//  ---- files ----------------------------------------------------------

//  Read a whole file into a NUL-terminated malloc'd buffer (caller frees).
//  Returns MS_OK; MS_ERR_INVALID when the file the user named is missing,
//  unreadable or a directory (bad input: exit 2); MS_ERR_IO for another
//  failure (diag: the path and errno text); MS_ERR_NOMEM.
int ms_cli_read_file(const char *path, char **text, size_t *n, ms_diag_t *diag);

//  ---- spec files -----------------------------------------------------

//  One sweep of a spec file (a file may hold several, one per YAML
//  document: ms_spec_split_documents), as ms_spec_parse and a node take
//  it: the whole file when it holds one document (so one behaves exactly
//  as before), else the document with the lines before it blank, so that
//  lines named in a diagnostic are the file's.
typedef struct {
    char *text;    // NUL-terminated (owned)
    size_t n;      // its length in bytes
    size_t number; // 1-based document number in the file
} ms_cli_spec_doc_t;

//  Split the text[0 .. n) of the spec file path into its documents. On
//  success *docs is a new array of *n_docs (>= 1); free it with
//  ms_cli_spec_docs_destroy. Returns MS_CLI_EXIT_OK, or after one line
//  "meshsweep: PATH: WHERE: REASON" MS_CLI_EXIT_USAGE (a syntax error,
//  an empty document, too many) or MS_CLI_EXIT_FAILURE (out of memory),
//  with *docs NULL.
int ms_cli_spec_docs(const char *path, const char *text, size_t n,
                     ms_cli_spec_doc_t **docs, size_t *n_docs);

//  Free what ms_cli_spec_docs made; NULL-safe; sets *docs_p to NULL.
void ms_cli_spec_docs_destroy(ms_cli_spec_doc_t **docs_p, size_t n_docs);

//  The WHERE of an error in document number of a file of n_docs: "PATH",
//  then ": document K" when n_docs > 1, then ": KEY" when key is neither
//  empty nor the path itself. Written to out (size bytes); returns out.
const char *ms_cli_spec_where(char *out, size_t size, const char *path,
                              size_t number, size_t n_docs, const char *key);

struct ms_spec;

//  Load and check the dataset of spec (parsed, not necessarily bound) as
//  a worker would load it: a file dataset with the spec's CSV options
//  (classes, categories, a split), its test file against its training
//  file, and the largest validation_split of the spec's tasks against
//  the training rows; a built-in one only when builtin is true (submit
//  leaves built-in names to the node). So `run` and `submit` refuse bad
//  data before anything is stored or sent. Returns MS_OK; the loaders'
//  codes with diag (MS_ERR_IO: a file cannot be read; MS_ERR_DATASET;
//  MS_ERR_INVALID with where "validation_split"); MS_ERR_NOMEM.
int ms_cli_spec_check_dataset(const struct ms_spec *spec, bool builtin,
                              ms_diag_t *diag);

//  ---- HTTP (libcurl) --------------------------------------------------

//  The node API base URL: the --node value when given, else
//  $MESHSWEEP_NODE, else MS_CLI_DEFAULT_NODE. Borrowed.
const char *ms_cli_node_url(const char *option);

//  Send "Authorization: Bearer TOKEN" (--token) with every request;
//  without it, $MESHSWEEP_TOKEN is used when set. token is borrowed.
void ms_cli_set_token(const char *token);

//  The token ms_cli_http sends: --token, else $MESHSWEEP_TOKEN, else the
//  first line of --token-file (else $MESHSWEEP_TOKEN_FILE); *token NULL
//  when none is given (borrowed, valid until the next call). Returns MS_OK;
//  MS_ERR_IO (the token file cannot be read, or holds no token: diag).
int ms_cli_token(const char **token, ms_diag_t *diag);
//  Without a token (--token, $MESHSWEEP_TOKEN), read it from the file at
//  PATH (--token-file; without it, $MESHSWEEP_TOKEN_FILE when set): its
//  first line, blanks trimmed (as meshsweepd's api-token). path is
//  borrowed. A file that cannot be read fails the request (MS_ERR_IO).
void ms_cli_set_token_file(const char *path);

//  One HTTP exchange with the node API: METHOD base_url + path, with an
//  optional body (content_type given when body is not NULL) and the bearer
//  token (ms_cli_set_token, else $MESHSWEEP_TOKEN) when set. Loopback only by
//  default; any URL the user gives is used. On MS_OK *status holds the HTTP
//  status and *response a NUL-terminated malloc'd body (caller frees). Returns
//  MS_OK; MS_ERR_HTTP (cannot connect or transfer: diag names the URL);
//  MS_ERR_NOMEM.
int ms_cli_http(const char *method, const char *base_url, const char *path,
                const char *content_type, const char *body, size_t n_body,
                long *status, char **response, ms_diag_t *diag);

//  As ms_cli_http, also giving the body's length in *n_response (for a
//  binary body, which may hold NUL bytes; still NUL-terminated).
int ms_cli_http_bytes(const char *method, const char *base_url,
                      const char *path, const char *content_type,
                      const char *body, size_t n_body, long *status,
                      char **response, size_t *n_response, ms_diag_t *diag);

//  Turn a non-2xx API answer into a diag: the body's
//  {"error": {"where", "reason"}} or {"where", "reason"} or {"error":
//  "text"} when present, else the raw body. Returns the exit code: 2 for
//  400/404/409/413/422, 1 otherwise.
int ms_cli_http_error(long status, const char *body, const char *what,
                      ms_diag_t *diag);

//  ---- output -----------------------------------------------------------

//  Format an array of result rows as an aligned text table: task (12 hex),
//  activation, layers, width (or the list of sizes), seed, status, epochs,
//  val_acc, test_acc, s/epoch, params, verdict (state and revision,
//  "verified r2", "*" appended when the row's counted is false, explained
//  by a footer line), operators (the verdict's, comma-joined, a node id
//  as its first 12 hex digits, names past 32 characters counted as "+N"); rows
//  sorted by activation, width, depth, seed (then task id). Caller frees; NULL
//  only when out of memory.
char *ms_cli_format_table(const json_t *rows);

//  Format rows as CSV with ms_results_format_csv (RFC 4180; top-level
//  fields, then config.* flattened; no platform, no curve), one line per
//  row, in the order of ROWS (the API's: task index; the table sorts,
//  CSV does not). Caller frees; NULL when out of memory.
char *ms_cli_format_csv(const json_t *rows);

//  Format GET /api/v1/peers (an array) as `meshsweep peers` prints it:
//  node (12 hex), state, standing (revoked, quarantined or ok),
//  incarnation, operator, address, one line a peer, columns aligned. An
//  operator that is a node id (64 hex: an open pool's node is its own
//  operator) is shown as its first 12 hex, as node ids are; the operator
//  column is as wide as its longest entry. "no peers\n" for an empty
//  array. Caller frees; NULL only when out of memory.
char *ms_cli_format_peers(const json_t *peers);

//  Format the "datasets" array of GET /api/v1/datasets as `meshsweep
//  datasets` prints it, one line a dataset: name, kind (builtin or files),
//  hash (12 hex, or "-" for a built-in set found here of which no record
//  is held), the size of its files (B, KiB, MiB, ... one decimal), whether
//  every file is held here (yes, no, or "-" where the node does not say:
//  a node in no pool keeps no blobs), and how many sweeps use it. "no
//  datasets\n"
//  for an empty array. Caller frees; NULL only when out of memory.
char *ms_cli_format_datasets(const json_t *datasets);

//  Sort rows (a JSON array) in place in the table's order.
void ms_cli_sort_rows(json_t *rows);

//  Print rows in one of the formats "table", "csv", "json" to stdout.
//  Returns an exit code (2 for an unknown format).
int ms_cli_print_rows(json_t *rows, const char *format);

//  Print rows in format (as ms_cli_print_rows); with analyze, then a blank
//  line and the analysis text; with analyze and "json", one document
//  {"rows": [...], "analysis": {...}}. Returns an exit code.
int ms_cli_print_results(json_t *rows, const char *format, bool analyze);

//  As ms_cli_print_results, analysing with the options analyze (NULL: no
//  analysis; borrowed): `results --analyze --verified` sets verified_only.
int ms_cli_print_results_opts(json_t *rows, const char *format,
                              const ms_analysis_options_t *analyze);

//  Print the analysis (ms_analysis) of rows: text, or JSON when json_out.
//  Returns an exit code.
int ms_cli_print_analysis(const json_t *rows, bool json_out);

//  Compute the analysis (ms_analysis_compute, with opts: NULL = defaults)
//  of rows into a new JSON object *analysis (caller decrefs). Returns an
//  exit code; on failure the error line is printed.
int ms_cli_compute_analysis(const json_t *rows,
                            const ms_analysis_options_t *opts,
                            json_t **analysis);

//  Print a JSON value indented by 2, reals in their shortest round-trip
//  form (ms_wire_canon_format_double), keys in their stored order, then a
//  newline. Returns an exit code.
int ms_cli_json_print(FILE *out, const json_t *value);

//  A 12-hex short form of a 64-hex id (borrowed text, copied to out).
void ms_cli_short_id(const char *hex, char out[13]);

//  Check a sweep id typed by the user: 12..64 hex characters (a unique
//  prefix of 12 or more is accepted). Returns MS_CLI_EXIT_OK, or prints
//  one usage line and returns the bad-usage exit code.
int ms_cli_check_sweep_id(const char *text);

//  One exchange with a node's API whose answer is JSON: METHOD (GET,
//  POST) on PATH, with an optional JSON BODY. On success returns
//  MS_CLI_EXIT_OK and *doc (caller frees with json_decref); otherwise
//  prints one error line naming WHAT or the node and returns the exit code.
int ms_cli_api_json(const char *method, const char *node, const char *path,
                    const char *body, const char *what, json_t **doc);

#endif
