/*  =========================================================================
    ms_results_test - result rows read from a store (no node), failed
    tasks as rows, pages and cursors, table and CSV forms, sweep lookup by
    prefix

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_results.h"
#include "ms_store_payload.h"

#include "ms_spec.h"
#include "ms_wire_canon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ms_store_fixture.h"

static char s_root[256];
static ms_store_t *s_store;

//  Sweeps A and B are real specs (grid sweeps of 4 seeds, ms_sf_sweep_seeds)
//  whose names were searched for (BLAKE2b-256 of the canonical spec of the
//  names p-0 .. p-39999999, a birthday search) so that their sweep ids
//  share their first 12 hex characters (4a19cc449cdd), the shortest
//  prefix accepted (MS_RESULTS_PREFIX_MIN): that prefix is ambiguous and
//  16 characters are not. s_setup checks it: a change of the canonical
//  spec form changes every id, and then the names must be searched again.
#define S_NAME_A "p-3032928"
#define S_NAME_B "p-12116536"
static ms_sf_sweep_t s_spec_a, s_spec_b;
static uint8_t s_sweep_a[32], s_sweep_b[32], s_node[32];
static uint8_t s_tasks[4][32];

//  --------------------------------------------------------------------------
//  A result row for task i (canonical JSON text; caller frees).

static char *
s_row(int i, const char *status)
{
    ms_hash_t t, s, n;
    memcpy(t.bytes, s_tasks[i], 32);
    memcpy(s.bytes, s_sweep_a, 32);
    memcpy(n.bytes, s_node, 32);
    char th[65], sh[65], nh[65];
    ms_hash_hex(&t, th);
    ms_hash_hex(&s, sh);
    ms_hash_hex(&n, nh);
    json_t *row = json_pack(
        "{s:s, s:s, s:{s:[i,i], s:s, s:s, s:f, s:i}, s:s, s:s, s:s, s:n, "
        "s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:{s:s}, s:s, s:s, s:s, "
        "s:i, s:b, s:[{s:i}]}",
        "task_id", th, "sweep_id", sh, "config", "hidden_sizes", 100, 10 + i,
        "activation", "tanh", "optimizer", "adam", "learning_rate", 0.001,
        "seed", i + 1, "node_id", nh, "operator", "alice", "status", status,
        "error", "epochs", 10, "train_seconds", 2.5, "seconds_per_epoch", 0.25,
        "val_accuracy", 0.85 + 0.01 * i, "val_loss", 0.4, "test_accuracy", 0.84,
        "test_loss", 0.45, "params", 79510, "platform", "backend", "cpu",
        "fingerprint", "ab", "weights_digest", "cd", "verdict", "pending",
        "verdict_revision", 0, "counted", 1, "curve", "epoch", 1);
    assert_non_null(row);
    char *text = ms_wire_canon_dump(row);
    json_decref(row);
    assert_non_null(text);
    return text;
}

//  --------------------------------------------------------------------------
//  A store with sweep A (4 tasks: done, failed, done, pending) and an
//  empty sweep B.

static int
s_setup(void **state)
{
    (void) state;
    snprintf(s_root, sizeof s_root, "/tmp/ms_results_test.XXXXXX");
    if (!mkdtemp(s_root))
        return -1;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/store", s_root);
    ms_diag_t diag;
    if (ms_store_open(&s_store, dir, NULL, &diag) != MS_OK)
        return -1;
    ms_sf_sweep_seeds(&s_spec_a, S_NAME_A, 64, 4);
    ms_sf_sweep_seeds(&s_spec_b, S_NAME_B, 64, 4);
    memcpy(s_sweep_a, s_spec_a.sweep_id, 32);
    memcpy(s_sweep_b, s_spec_b.sweep_id, 32);
    assert_memory_equal(s_sweep_a, s_sweep_b, 6); // 12 hex characters
    assert_memory_not_equal(s_sweep_a, s_sweep_b, 8);
    memset(s_node, 0x11, 32);
    for (int i = 0; i < 4; i++)
        memcpy(s_tasks[i], ms_sf_task_id(&s_spec_a, (size_t) i), 32);
    uint8_t origin[32];
    memset(origin, 0xEE, 32);
    assert_int_equal(ms_sf_append_sweep(s_store, origin, &s_spec_a, 0), MS_OK);
    assert_int_equal(ms_sf_append_sweep(s_store, origin, &s_spec_b, 0), MS_OK);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ms_store_set_task_state(s_store, s_tasks[i],
                                                 MS_TASK_RUNNING, s_node, NULL),
                         MS_OK);
    char *row0 = s_row(0, "ok"), *row2 = s_row(2, "diverged");
    assert_int_equal(
        ms_sf_append_result(s_store, s_node, s_tasks[0], row0, strlen(row0)),
        MS_OK);
    assert_int_equal(ms_store_set_task_state(s_store, s_tasks[1],
                                             MS_TASK_FAILED, NULL,
                                             "worker killed by signal 11 "
                                             "(SIGSEGV) on 3 attempts"),
                     MS_OK);
    assert_int_equal(
        ms_sf_append_result(s_store, s_node, s_tasks[2], row2, strlen(row2)),
        MS_OK);
    free(row0);
    free(row2);
    return 0;
}

//  --------------------------------------------------------------------------
//  Close and remove.

static int
s_teardown(void **state)
{
    (void) state;
    ms_store_destroy(&s_store);
    ms_sf_sweep_free(&s_spec_a);
    ms_sf_sweep_free(&s_spec_b);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_root);
    return system(cmd) == 0 ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  Rows come in task order; a failed task is a row with its reason.

static void
test_rows_in_task_order_with_failed_row(void **state)
{
    (void) state;
    ms_hash_t a;
    memcpy(a.bytes, s_sweep_a, 32);
    json_t *rows = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_results_rows(s_store, &a, &rows, &diag), MS_OK);
    assert_int_equal(json_array_size(rows), 3);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(rows, 0), "status")),
        "ok");
    json_t *failed = json_array_get(rows, 1);
    assert_string_equal(json_string_value(json_object_get(failed, "status")),
                        "failed");
    assert_string_equal(json_string_value(json_object_get(failed, "error")),
                        "worker killed by signal 11 (SIGSEGV) on 3 attempts");
    assert_true(json_is_null(json_object_get(failed, "test_accuracy")));
    assert_false(json_is_true(json_object_get(failed, "counted")));
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(failed, "config"), "seed")),
                     2);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(rows, 2), "status")),
        "diverged");
    json_decref(rows);

    ms_hash_t b;
    memcpy(b.bytes, s_sweep_b, 32);
    assert_int_equal(ms_results_rows(s_store, &b, &rows, &diag), MS_OK);
    assert_int_equal(json_array_size(rows), 0);
    json_decref(rows);

    ms_hash_t none;
    memset(none.bytes, 0x99, 32);
    assert_int_equal(ms_results_rows(s_store, &none, &rows, &diag),
                     MS_ERR_NOTFOUND);
    assert_null(rows);
}

//  --------------------------------------------------------------------------
//  Pages of one row follow their cursors to the end.

static void
test_pages_follow_cursor(void **state)
{
    (void) state;
    ms_hash_t a;
    memcpy(a.bytes, s_sweep_a, 32);
    json_t *rows = NULL;
    char *next = NULL;
    ms_diag_t diag;
    int seen = 0;
    char *after = NULL;
    for (int page = 0; page < 10; page++) {
        assert_int_equal(
            ms_results_page(s_store, &a, after, 1, &rows, &next, &diag), MS_OK);
        seen += (int) json_array_size(rows);
        json_decref(rows);
        free(after);
        after = next;
        if (!next)
            break;
        assert_int_equal(seen, page + 1);
    }
    assert_int_equal(seen, 3);
    assert_int_equal(ms_results_page(s_store, &a, "1x", 1, &rows, &next, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "after");
    assert_int_equal(ms_results_page(s_store, &a, "-1", 1, &rows, &next, &diag),
                     MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  Table and CSV forms.

static void
test_table_and_csv(void **state)
{
    (void) state;
    ms_hash_t a;
    memcpy(a.bytes, s_sweep_a, 32);
    json_t *rows = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_results_rows(s_store, &a, &rows, &diag), MS_OK);
    char *table = ms_results_format_table(rows);
    assert_non_null(table);
    assert_non_null(strstr(table, "100,10"));
    assert_non_null(strstr(table, "0.8500"));
    assert_non_null(strstr(table, "SIGSEGV"));
    assert_non_null(strstr(table, "diverged"));
    free(table);

    char *csv = ms_results_format_csv(rows);
    assert_non_null(csv);
    const char *header =
        "task_id,sweep_id,node_id,operator,status,error,epochs,"
        "train_seconds,seconds_per_epoch,val_accuracy,val_loss,"
        "test_accuracy,test_loss,params,fingerprint,weights_digest,verdict,"
        "verdict_revision,verdict_operators,counted,config.activation,";
    assert_true(strncmp(csv, header, strlen(header)) == 0);
    // The config columns: the union of the rows' config keys, sorted (the
    // failed row's config is its task's, from the spec).
    const char *eol = strchr(csv, '\n');
    assert_non_null(eol);
    char *head = strndup(csv, (size_t) (eol - csv));
    assert_non_null(strstr(head, ",config.hidden_sizes,"));
    assert_non_null(strstr(head, ",config.learning_rate,"));
    assert_non_null(strstr(head, ",config.optimizer,"));
    assert_non_null(strstr(head, ",config.width"));
    assert_true(strstr(head, ",config.seed,") < strstr(head, ",config.width"));
    free(head);
    assert_non_null(strstr(csv, ",tanh,"));
    assert_non_null(strstr(csv, ",100;10,"));
    assert_non_null(strstr(csv, ",adam,"));
    assert_non_null(strstr(csv,
                           ",failed,worker killed by signal 11 (SIGSEGV) on 3 "
                           "attempts,0,"));
    assert_null(strstr(csv, "curve"));
    assert_null(strstr(csv, "platform"));
    int lines = 0;
    for (const char *p = csv; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 4);
    free(csv);

    // Quoting: a field with a comma and a quote.
    json_t *one = json_pack("[{s:s, s:{}}]", "error", "bad \"x\", y", "config");
    csv = ms_results_format_csv(one);
    assert_non_null(strstr(csv, "\"bad \"\"x\"\", y\""));
    free(csv);

    // The operators behind the verdict: names joined with ';'.
    json_t *ops =
        json_pack("[{s:s, s:i, s:[s,s], s:b, s:{}}]", "verdict", "verified",
                  "verdict_revision", 2, "verdict_operators", "alice", "bob",
                  "counted", 1, "config");
    csv = ms_results_format_csv(ops);
    assert_non_null(csv);
    assert_non_null(strstr(csv, ",verified,2,alice;bob,true\n"));
    free(csv);
    json_decref(ops);
    json_decref(one);
    json_decref(rows);
}

//  --------------------------------------------------------------------------
//  Sweep lookup: full id, unique prefix, ambiguous (the 12 characters A
//  and B share), short, not hex, unknown.

static void
test_find_sweep_by_prefix(void **state)
{
    (void) state;
    ms_hash_t a, b, out;
    memcpy(a.bytes, s_sweep_a, 32);
    memcpy(b.bytes, s_sweep_b, 32);
    char ha[65], hb[65];
    ms_hash_hex(&a, ha);
    ms_hash_hex(&b, hb);
    ms_diag_t diag;
    assert_int_equal(ms_results_find_sweep(s_store, ha, &out, &diag), MS_OK);
    assert_true(ms_hash_equal(&out, &a));
    char upper[65];
    for (int i = 0; i < 64; i++)
        upper[i] = (char) (hb[i] >= 'a' ? hb[i] - 32 : hb[i]);
    upper[64] = 0;
    assert_int_equal(ms_results_find_sweep(s_store, upper, &out, &diag), MS_OK);
    assert_true(ms_hash_equal(&out, &b));
    char prefix[20];
    snprintf(prefix, sizeof prefix, "%.12s", ha);
    assert_int_equal(ms_results_find_sweep(s_store, prefix, &out, &diag),
                     MS_ERR_CONFLICT);
    assert_non_null(strstr(diag.reason, "2 sweeps"));
    char unique[64];
    snprintf(unique, sizeof unique, "%.16s", ha);
    assert_int_equal(ms_results_find_sweep(s_store, unique, &out, &diag),
                     MS_OK);
    assert_true(ms_hash_equal(&out, &a));
    assert_int_equal(ms_results_find_sweep(s_store, "abab", &out, &diag),
                     MS_ERR_INVALID);
    assert_int_equal(
        ms_results_find_sweep(s_store, "abababababag", &out, &diag),
        MS_ERR_INVALID);
    assert_int_equal(
        ms_results_find_sweep(s_store, "000000000000", &out, &diag),
        MS_ERR_NOTFOUND);
    assert_int_equal(ms_results_find_sweep(s_store, NULL, &out, &diag),
                     MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  ms_results_row_member finds top-level members only, past strings with
//  braces and escapes and nested values; ms_results_page_fields parses
//  the members asked (and task_id, node_id) and gives the same values.

static void
test_row_member_and_fields(void **state)
{
    (void) state;
    const char *text = " {\"a\": {\"b\": 1, \"s\": \"x}\\\"]\"},"
                       " \"s\" : \"q\\\"\", \"b\":[1,[2,{\"b\":3}]] ,"
                       "\"n\":-1.5e3,\"t\":true}";
    const char *v = NULL;
    size_t n = 0;
    assert_int_equal(ms_results_row_member(text, strlen(text), "b", &v, &n),
                     MS_OK);
    assert_int_equal(n, strlen("[1,[2,{\"b\":3}]]"));
    assert_memory_equal(v, "[1,[2,{\"b\":3}]]", n);
    assert_int_equal(ms_results_row_member(text, strlen(text), "s", &v, &n),
                     MS_OK);
    assert_memory_equal(v, "\"q\\\"\"", n);
    assert_int_equal(ms_results_row_member(text, strlen(text), "n", &v, &n),
                     MS_OK);
    assert_memory_equal(v, "-1.5e3", n);
    assert_int_equal(ms_results_row_member(text, strlen(text), "t", &v, &n),
                     MS_OK);
    assert_memory_equal(v, "true", n);
    assert_int_equal(ms_results_row_member(text, strlen(text), "x", &v, &n),
                     MS_ERR_NOTFOUND);
    assert_int_equal(ms_results_row_member("[1]", 3, "x", &v, &n),
                     MS_ERR_INVALID);
    assert_int_equal(ms_results_row_member("{\"x\": [1", 8, "x", &v, &n),
                     MS_ERR_INVALID);

    ms_hash_t id;
    memcpy(id.bytes, s_sweep_a, 32);
    json_t *whole = NULL, *some = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_results_page_ex(s_store, &id, 0, NULL, 0, &whole, NULL, &diag),
        MS_OK);
    static const char *const keep[] = {"status", "val_accuracy", NULL};
    assert_int_equal(ms_results_page_fields(s_store, &id, 0, keep, NULL, 0,
                                            &some, NULL, &diag),
                     MS_OK);
    assert_int_equal(json_array_size(some), json_array_size(whole));
    json_t *w = json_array_get(whole, 0), *p = json_array_get(some, 0);
    assert_true(json_equal(json_object_get(w, "val_accuracy"),
                           json_object_get(p, "val_accuracy")));
    assert_true(json_equal(json_object_get(w, "task_id"),
                           json_object_get(p, "task_id")));
    assert_true(json_equal(json_object_get(w, "node_id"),
                           json_object_get(p, "node_id")));
    assert_string_equal(json_string_value(json_object_get(p, "status")), "ok");
    assert_null(json_object_get(p, "config"));
    assert_null(json_object_get(p, "curve"));
    json_decref(whole);
    json_decref(some);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_rows_in_task_order_with_failed_row,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_row_member_and_fields, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_pages_follow_cursor, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_table_and_csv, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_find_sweep_by_prefix, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
