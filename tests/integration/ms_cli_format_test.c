/*  =========================================================================
    ms_cli_format_test - the client's pieces that need no process: table
    layout and order, CSV, JSON printing, option scanning, API errors

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Built from tools/ms_cli_format.c and tools/ms_cli_common.c (the client
    has no library of its own); see tests/integration/CMakeLists.txt.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  A result row with the fields the table reads.

static json_t *
s_row(const char *task, const char *activation, int layers, int width, int seed,
      double test_accuracy)
{
    json_t *config =
        json_pack("{s:s, s:i, s:i, s:i}", "activation", activation,
                  "hidden_layers", layers, "width", width, "seed", seed);
    return json_pack("{s:s, s:o, s:s, s:i, s:f, s:f, s:f, s:i, s:n}", "task_id",
                     task, "config", config, "status", "ok", "epochs", 3,
                     "val_accuracy", 0.5, "test_accuracy", test_accuracy,
                     "seconds_per_epoch", 0.25, "params", 1000 + layers,
                     "curve");
}

//  --------------------------------------------------------------------------
//  A row with explicit hidden sizes.

static json_t *
s_row_sizes(const char *task, const char *activation, json_t *sizes)
{
    json_t *config = json_pack("{s:s, s:o, s:i}", "activation", activation,
                               "hidden_sizes", sizes, "seed", 1);
    return json_pack("{s:s, s:o, s:s, s:i, s:n, s:n, s:n, s:i}", "task_id",
                     task, "config", config, "status", "failed", "epochs", 0,
                     "val_accuracy", "test_accuracy", "seconds_per_epoch",
                     "params", 10);
}

//  --------------------------------------------------------------------------
//  Rows come out sorted by activation, width, depth, seed.

static void
test_table_order(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_array_append_new(rows, s_row("cccccccccccc00", "tanh", 2, 64, 1, .8));
    json_array_append_new(rows, s_row("aaaaaaaaaaaa00", "relu", 4, 64, 2, .9));
    json_array_append_new(rows, s_row("bbbbbbbbbbbb00", "relu", 4, 64, 1, .7));
    json_array_append_new(rows, s_row("dddddddddddd00", "relu", 1, 256, 1, .6));
    json_array_append_new(rows, s_row("eeeeeeeeeeee00", "relu", 8, 64, 1, .5));
    char *table = ms_cli_format_table(rows);
    assert_non_null(table);
    const char *order[] = {"bbbbbbbbbbbb", "aaaaaaaaaaaa", "eeeeeeeeeeee",
                           "dddddddddddd", "cccccccccccc"};
    const char *at = strchr(table, '\n');
    assert_non_null(at);
    for (size_t i = 0; i < 5; i++) {
        assert_true(strncmp(at + 1, order[i], 12) == 0);
        at = strchr(at + 1, '\n');
        assert_non_null(at);
    }
    // The input array is not reordered.
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(rows, 0), "task_id")),
        "cccccccccccc00");
    free(table);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Columns line up: every line has the same length; numbers are fixed.

static void
test_table_alignment(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_array_append_new(rows,
                          s_row("0123456789abcdef", "relu", 1, 8, 1, 0.86123));
    json_array_append_new(
        rows, s_row("fedcba9876543210", "leaky_relu", 64, 1024, 12, 0.1));
    char *table = ms_cli_format_table(rows);
    assert_non_null(table);
    char *save = NULL, *line = strtok_r(table, "\n", &save);
    size_t width = strlen(line);
    assert_non_null(strstr(line, "task"));
    assert_non_null(strstr(line, "s/epoch"));
    int n = 0;
    for (; line; line = strtok_r(NULL, "\n", &save), n++)
        assert_int_equal(strlen(line), width);
    assert_int_equal(n, 3);
    free(table);
    table = ms_cli_format_table(rows);
    assert_non_null(strstr(table, "0.8612"));
    assert_non_null(strstr(table, "0123456789ab "));
    assert_null(strstr(table, "0123456789abc"));
    free(table);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Explicit sizes show as "100,10"; null metrics as "-"; sorted by the
//  first size, then depth.

static void
test_table_sizes(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_array_append_new(
        rows, s_row_sizes("222222222222", "relu", json_pack("[i,i]", 100, 10)));
    json_array_append_new(
        rows, s_row_sizes("111111111111", "relu", json_pack("[i]", 100)));
    json_array_append_new(
        rows, s_row_sizes("333333333333", "relu", json_pack("[i,i]", 10, 10)));
    char *table = ms_cli_format_table(rows);
    assert_non_null(table);
    const char *a = strstr(table, "333333333333");
    const char *b = strstr(table, "111111111111");
    const char *c = strstr(table, "222222222222");
    assert_true(a && b && c && a < b && b < c);
    assert_non_null(strstr(table, "100,10"));
    assert_non_null(strstr(table, "failed"));
    assert_non_null(strstr(table, " - "));
    free(table);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  The verification columns: verdict with its revision, the operators
//  behind it (long lists cut to "+N"), a "*" on rows that do not count
//  and a footer explaining it; no footer when every row counts.

static void
test_table_verdict(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_t *honest = s_row("aaaaaaaaaaaa00", "relu", 1, 64, 1, .8);
    json_t *liar = s_row("bbbbbbbbbbbb00", "relu", 1, 64, 2, .85);
    json_t *many = s_row("cccccccccccc00", "relu", 1, 64, 3, .7);
    json_object_set_new(honest, "verdict", json_string("verified"));
    json_object_set_new(honest, "verdict_revision", json_integer(2));
    json_object_set_new(honest, "counted", json_true());
    json_object_set_new(honest, "verdict_operators",
                        json_pack("[s,s]", "alice", "bob"));
    json_object_set_new(liar, "verdict", json_string("disputed"));
    json_object_set_new(liar, "verdict_revision", json_integer(1));
    json_object_set_new(liar, "counted", json_false());
    json_object_set_new(
        liar, "verdict_operators",
        json_pack(
            "[s,s]", "carol",
            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcd"
            "ef"));
    json_object_set_new(many, "verdict", json_string("verified"));
    json_object_set_new(many, "verdict_revision", json_integer(3));
    json_object_set_new(many, "counted", json_true());
    json_object_set_new(many, "verdict_operators",
                        json_pack("[s,s,s,s,s]", "operator-one", "operator-two",
                                  "operator-three", "operator-four",
                                  "operator-five"));
    json_array_append_new(rows, honest);
    json_array_append_new(rows, liar);
    json_array_append_new(rows, many);
    char *table = ms_cli_format_table(rows);
    assert_non_null(table);
    const char *nl = strchr(table, '\n');
    assert_non_null(nl);
    assert_true(strncmp(table, "task ", 5) == 0);
    const char *v = strstr(table, "verdict");
    const char *o = strstr(table, "operators");
    assert_true(v && o && v < o && o < nl);
    const char *a = strstr(table, "aaaaaaaaaaaa");
    const char *b = strstr(table, "bbbbbbbbbbbb");
    const char *c = strstr(table, "cccccccccccc");
    assert_true(a && b && c);
    assert_non_null(strstr(a, "verified r2 "));
    assert_true(strstr(a, "alice,bob") < b);
    assert_non_null(strstr(b, "disputed r1* "));
    // An operator named by its node id: 12 hex digits.
    assert_true(strstr(b, "carol,0123456789ab ") < c);
    assert_null(strstr(table, "0123456789abc"));
    assert_non_null(strstr(c, "verified r3 "));
    assert_non_null(strstr(c, "operator-one,operator-two,+3"));
    assert_null(strstr(table, "operator-three"));
    assert_non_null(strstr(table, "\n* not counted: "));
    // Only the marked row carries the mark.
    assert_null(strstr(table, "r2*"));
    assert_null(strstr(table, "r3*"));
    free(table);

    json_array_remove(rows, 1);
    table = ms_cli_format_table(rows);
    assert_non_null(table);
    assert_null(strstr(table, "not counted"));
    free(table);

    // A row without verdict fields shows "-".
    json_t *plain = json_array();
    json_array_append_new(plain, s_row("dddddddddddd00", "relu", 1, 8, 1, .5));
    table = ms_cli_format_table(plain);
    assert_non_null(table);
    assert_non_null(strstr(table, "  -        -"));
    free(table);
    json_decref(plain);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  CSV: a header, one line per row in the rows' order (the API's, not
//  the table's), config flattened, no curve.

static void
test_csv(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_array_append_new(rows, s_row("bbbbbbbbbbbb00", "tanh", 2, 8, 1, .25));
    json_array_append_new(rows, s_row("aaaaaaaaaaaa00", "relu", 2, 8, 1, .75));
    char *csv = ms_cli_format_csv(rows);
    assert_non_null(csv);
    assert_true(strncmp(csv, "task_id,", 8) == 0);
    assert_non_null(strstr(csv, "config.activation"));
    assert_null(strstr(csv, "curve"));
    const char *a = strstr(csv, "aaaaaaaaaaaa00");
    const char *b = strstr(csv, "bbbbbbbbbbbb00");
    assert_true(a && b && b < a); // as given, though the table puts relu first
    assert_non_null(strstr(csv, ",0.75,"));
    int lines = 0;
    for (const char *p = csv; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 3);
    free(csv);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  JSON printing: shortest round-trip reals, nesting, empty containers.

static void
test_json_print(void **state)
{
    (void) state;
    json_t *v =
        json_pack("{s:f, s:f, s:[], s:{}, s:[i,s], s:n, s:b}", "a", 0.1, "b",
                  1.0 / 3.0, "c", "d", "e", 1, "x\"y", "f", "g", 1);
    char path[] = "/tmp/ms_cli_format_test.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w+");
    assert_int_equal(ms_cli_json_print(f, v), MS_CLI_EXIT_OK);
    rewind(f);
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    unlink(path);
    assert_non_null(strstr(buf, "\"a\": 0.1,"));
    assert_non_null(strstr(buf, "\"b\": 0.3333333333333333,"));
    assert_non_null(strstr(buf, "\"c\": [],"));
    assert_non_null(strstr(buf, "\"d\": {},"));
    assert_non_null(strstr(buf, "\"x\\\"y\""));
    assert_non_null(strstr(buf, "\"f\": null"));
    // It reads back as the same value.
    json_error_t err;
    json_t *back = json_loads(buf, 0, &err);
    assert_non_null(back);
    assert_true(json_equal(back, v));
    json_decref(back);
    json_decref(v);
}

//  --------------------------------------------------------------------------
//  Option scanning: "--name VALUE", "--name=VALUE", missing values and
//  prefixes that are other options.

static void
test_arg_value(void **state)
{
    (void) state;
    char *argv[] = {"x",       "--node", "http://a", "--node=http://b",
                    "--nodes", "y",      "--node"};
    int argc = 7, i = 1;
    const char *v = NULL;
    bool missing = false;
    assert_true(ms_cli_arg_value(argc, argv, &i, "--node", &v, &missing));
    assert_string_equal(v, "http://a");
    assert_int_equal(i, 2);
    i = 3;
    assert_true(ms_cli_arg_value(argc, argv, &i, "--node", &v, &missing));
    assert_string_equal(v, "http://b");
    assert_int_equal(i, 3);
    i = 4;
    assert_false(ms_cli_arg_value(argc, argv, &i, "--node", &v, &missing));
    i = 6;
    assert_true(ms_cli_arg_value(argc, argv, &i, "--node", &v, &missing));
    assert_true(missing);

    long out = 0;
    assert_int_equal(ms_cli_parse_int("--workers", "12", 0, 64, &out), MS_OK);
    assert_int_equal(out, 12);
    assert_int_equal(ms_cli_parse_int("--workers", "12x", 0, 64, &out),
                     MS_ERR_INVALID);
    assert_int_equal(ms_cli_parse_int("--workers", "65", 0, 64, &out),
                     MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  API error bodies become one diag; 4xx means bad input (exit 2).

static void
test_http_error(void **state)
{
    (void) state;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_cli_http_error(400,
                                       "{\"error\": \"parameters.width: empty "
                                       "list\"}",
                                       "spec.yaml", &diag),
                     MS_CLI_EXIT_USAGE);
    assert_string_equal(diag.where, "spec.yaml");
    assert_string_equal(diag.reason, "parameters.width: empty list");
    assert_int_equal(
        ms_cli_http_error(
            404, "{\"error\": {\"where\": \"abc\", \"reason\": \"no sweep\"}}",
            "x", &diag),
        MS_CLI_EXIT_USAGE);
    assert_string_equal(diag.where, "abc");
    assert_int_equal(ms_cli_http_error(500, "boom", "x", &diag),
                     MS_CLI_EXIT_FAILURE);
    assert_non_null(strstr(diag.reason, "500"));
    assert_int_equal(ms_cli_exit_code(MS_ERR_DATASET), MS_CLI_EXIT_USAGE);
    assert_int_equal(ms_cli_exit_code(MS_ERR_IO), MS_CLI_EXIT_FAILURE);
}

//  --------------------------------------------------------------------------
//  The node URL: option, then $MESHSWEEP_NODE, then the default.

static void
test_node_url(void **state)
{
    (void) state;
    unsetenv("MESHSWEEP_NODE");
    assert_string_equal(ms_cli_node_url(NULL), MS_CLI_DEFAULT_NODE);
    setenv("MESHSWEEP_NODE", "http://10.0.0.1:5872", 1);
    assert_string_equal(ms_cli_node_url(NULL), "http://10.0.0.1:5872");
    assert_string_equal(ms_cli_node_url("http://h:1"), "http://h:1");
    unsetenv("MESHSWEEP_NODE");
}

//  --------------------------------------------------------------------------
//  A row that also sweeps the optimizer (init follows the activation).

static json_t *
s_row_opt(const char *task, int layers, int seed, const char *optimizer)
{
    json_t *row = s_row(task, "relu", layers, 64, seed, 0.5);
    json_t *config = json_object_get(row, "config");
    json_object_set_new(config, "optimizer", json_string(optimizer));
    json_object_set_new(config, "init", json_string("he_normal"));
    return row;
}

//  --------------------------------------------------------------------------
//  A swept key other than the fixed columns gets a column of its own, and
//  its values keep rows apart: sgd rows after the adam rows.

static void
test_table_swept_keys(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_array_append_new(rows, s_row_opt("111111111111", 1, 1, "sgd"));
    json_array_append_new(rows, s_row_opt("222222222222", 1, 1, "adam"));
    json_array_append_new(rows, s_row_opt("333333333333", 2, 1, "sgd"));
    json_array_append_new(rows, s_row_opt("444444444444", 2, 1, "adam"));
    char *table = ms_cli_format_table(rows);
    assert_non_null(table);
    print_message("%s", table);
    assert_non_null(strstr(table, "width  optimizer  seed"));
    assert_null(strstr(table, "init"));
    const char *a = strstr(table, "222222222222");
    const char *b = strstr(table, "444444444444");
    const char *c = strstr(table, "111111111111");
    const char *d = strstr(table, "333333333333");
    assert_true(a && b && c && d && a < b && b < c && c < d);
    assert_non_null(strstr(table, "64     sgd "));
    free(table);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Run fn with stdout and stderr sent to files; return what each got.

static void
s_capture(int (*fn)(json_t *), json_t *arg, int *rc, char **out, char **err)
{
    char out_path[] = "/tmp/ms_cli_format_test.XXXXXX";
    char err_path[] = "/tmp/ms_cli_format_test.XXXXXX";
    int out_fd = mkstemp(out_path), err_fd = mkstemp(err_path);
    assert_true(out_fd >= 0 && err_fd >= 0);
    fflush(stdout);
    fflush(stderr);
    int saved_out = dup(1), saved_err = dup(2);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    *rc = fn(arg);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    FILE *f = fopen(out_path, "r");
    size_t n = 0;
    *out = calloc(1, 1 << 16);
    n = fread(*out, 1, (1 << 16) - 1, f);
    (*out)[n] = '\0';
    fclose(f);
    f = fopen(err_path, "r");
    *err = calloc(1, 1 << 16);
    n = fread(*err, 1, (1 << 16) - 1, f);
    (*err)[n] = '\0';
    fclose(f);
    close(out_fd);
    close(err_fd);
    unlink(out_path);
    unlink(err_path);
}

static int
s_print_csv_analyze(json_t *rows)
{
    return ms_cli_print_results(rows, "csv", true);
}

static int
s_print_table_analyze(json_t *rows)
{
    return ms_cli_print_results(rows, "table", true);
}

//  --------------------------------------------------------------------------
//  --format csv --analyze: stdout is CSV only; the analysis goes to
//  stderr. With the table, the analysis follows on stdout.

static void
test_csv_analyze(void **state)
{
    (void) state;
    json_t *rows = json_array();
    json_array_append_new(rows, s_row("aaaaaaaaaaaa00", "relu", 1, 64, 1, .8));
    json_array_append_new(rows, s_row("bbbbbbbbbbbb00", "relu", 2, 64, 1, .9));
    int rc;
    char *out, *err;
    s_capture(s_print_csv_analyze, rows, &rc, &out, &err);
    assert_int_equal(rc, 0);
    assert_null(strstr(out, "Analysis"));
    assert_null(strstr(out, "plateau"));
    assert_non_null(strstr(err, "Analysis of 2 result rows"));
    //  Every stdout line has as many fields as the header.
    int lines = 0;
    for (const char *p = out; *p; p = strchr(p, '\n') + 1, lines++)
        assert_non_null(strchr(p, '\n'));
    assert_int_equal(lines, 3);
    free(out);
    free(err);
    s_capture(s_print_table_analyze, rows, &rc, &out, &err);
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "Analysis of 2 result rows"));
    free(out);
    free(err);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  The peers table: an operator that is a node id shows as 12 hex, and
//  the columns stay aligned with a long operator name.

static void
test_peers_table(void **state)
{
    (void) state;
    const char *id1 =
        "4b82aa00000000000000000000000000000000000000000000000000000000aa";
    const char *id2 =
        "4c10bb00000000000000000000000000000000000000000000000000000000bb";
    json_t *peers = json_pack(
        "[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s, s:b}]",
        "node_id", id1, "state", "alive", "incarnation", "0123456789abcdef",
        "operator", id1, "endpoint", "tcp://10.0.0.1:5871", "node_id", id2,
        "state", "dead", "incarnation", "fedcba9876543210", "operator",
        "a-lab-with-a-long-operator-name", "endpoint", "tcp://10.0.0.2:5871",
        "revoked", 1);
    assert_non_null(peers);
    char *text = ms_cli_format_peers(peers);
    assert_non_null(text);
    print_message("%s", text);
    assert_null(strstr(text, id1)); // no 64-hex operator
    assert_non_null(strstr(text, "4b82aa000000  alive    ok           "
                                 "0123456789abcdef  4b82aa000000   "));
    assert_non_null(strstr(text, "revoked      fedcba9876543210  "
                                 "a-lab-with-a-long-operator-name  "
                                 "tcp://10.0.0.2"));
    // Every line has its address at the same column.
    const char *l1 = strstr(text, "tcp://10.0.0.1"),
               *l2 = strstr(text, "tcp://10.0.0.2"),
               *h = strstr(text, "address");
    const char *n1 = strchr(text, '\n'), *n2 = strchr(n1 + 1, '\n');
    assert_int_equal(h - text, l1 - (n1 + 1));
    assert_int_equal(h - text, l2 - (n2 + 1));
    free(text);
    json_decref(peers);
    json_t *none = json_array();
    text = ms_cli_format_peers(none);
    json_decref(none);
    assert_string_equal(text, "no peers\n");
    free(text);
}

//  The datasets table: sizes summed over the files in human units,
//  presence yes / no / unknown, sweeps counted, a listed built-in set
//  without a record shown with hash "-".
static void
test_datasets_table(void **state)
{
    (void) state;
    json_t *list =
        json_pack("[{s:s, s:s, s:s, s:[{s:I}, {s:I}], s:b, s:[s, s]},"
                  " {s:n, s:s, s:s, s:[{s:I}], s:b, s:[]},"
                  " {s:s, s:s, s:s, s:[], s:n, s:[]}]",
                  "hash", "cd0ed7c6447c00000000000000000000", "name", "files",
                  "kind", "files", "files", "size", (json_int_t) 1048576,
                  "size", (json_int_t) 524288, "present", 0, "sweeps", "a", "b",
                  "hash", "name", "fashion-mnist", "kind", "builtin", "files",
                  "size", (json_int_t) 31000000, "present", 1, "sweeps", "hash",
                  "0123456789abcdef", "name", "mnist", "kind", "builtin",
                  "files", "present", "sweeps");
    assert_non_null(list);
    char *text = ms_cli_format_datasets(list);
    assert_non_null(text);
    print_message("%s", text);
    assert_string_equal(
        text,
        "name           kind      hash               size  present  sweeps\n"
        "files          files     cd0ed7c6447c    1.5 MiB  no       2\n"
        "fashion-mnist  builtin   -              29.6 MiB  yes      0\n"
        "mnist          builtin   0123456789ab        0 B  -        0\n");
    free(text);
    json_decref(list);
    json_t *none = json_array();
    text = ms_cli_format_datasets(none);
    json_decref(none);
    assert_string_equal(text, "no datasets\n");
    free(text);
}

//  --------------------------------------------------------------------------
//  A 401 says how the CLI gives the token (not the browser login).

static void
test_http_401(void **state)
{
    (void) state;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    unsetenv("MESHSWEEP_TOKEN");
    unsetenv("MESHSWEEP_TOKEN_FILE");
    assert_int_equal(
        ms_cli_http_error(401,
                          "{\"error\": \"... or open /?token=TOKEN once in "
                          "a browser\"}",
                          "status", &diag),
        MS_CLI_EXIT_FAILURE);
    assert_null(strstr(diag.reason, "token="));
    assert_non_null(strstr(diag.reason, "needs its token: give the node's API "
                                        "token with --token TOKEN, "
                                        "--token-file FILE or "
                                        "$MESHSWEEP_TOKEN_FILE"));
    ms_cli_set_token("wrong");
    ms_cli_http_error(401, NULL, "status", &diag);
    assert_non_null(strstr(diag.reason, "refused the token given"));
    ms_cli_set_token(NULL);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_order),
        cmocka_unit_test(test_table_alignment),
        cmocka_unit_test(test_table_sizes),
        cmocka_unit_test(test_table_verdict),
        cmocka_unit_test(test_table_swept_keys),
        cmocka_unit_test(test_csv_analyze),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_json_print),
        cmocka_unit_test(test_arg_value),
        cmocka_unit_test(test_http_error),
        cmocka_unit_test(test_http_401),
        cmocka_unit_test(test_peers_table),
        cmocka_unit_test(test_datasets_table),
        cmocka_unit_test(test_node_url),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
