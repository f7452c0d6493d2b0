/*  =========================================================================
    ms_node_options_test - a node's options: the defaults, each range
    written once (the check and ms_node_options_range agree), the rules
    that are not ranges

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_node_options.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <string.h>

//  Options that pass: the defaults with a data dir.
static void
s_good(ms_node_options_t *o)
{
    ms_node_options_defaults(o);
    o->data_dir = "/tmp/ms-node-options-test";
}

//  Check O; on MS_ERR_INVALID the diag must name WHERE.
static void
s_refused(const ms_node_options_t *o, const char *where)
{
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_options_check(o, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, where);
    assert_true(diag.reason[0] != '\0');
}

static void
s_taken(const ms_node_options_t *o)
{
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_node_options_check(o, &diag);
    if (rc != MS_OK)
        fail_msg("refused: %s: %s", diag.where, diag.reason);
}

//  --------------------------------------------------------------------------
//  The defaults are the documented ones, and they pass.

static void
test_defaults(void **state)
{
    (void) state;
    ms_node_options_t o;
    memset(&o, 0x5a, sizeof o);
    ms_node_options_defaults(&o);
    assert_string_equal(o.data_dir, "meshsweep-data");
    assert_string_equal(o.backend, "auto");
    assert_int_equal(o.retry_cap, MS_DEFAULT_RETRY_CAP);
    assert_int_equal(o.retry_cap, 2);
    assert_int_equal(o.worker_nice, MS_DEFAULT_WORKER_NICE);
    assert_int_equal(o.blas_threads, 1);
    assert_int_equal(o.mesh_port, MS_DEFAULT_MESH_PORT);
    assert_int_equal(o.beacon_port, MS_DEFAULT_BEACON_PORT);
    assert_int_equal(o.lease_ttl_ms, MS_DEFAULT_LEASE_TTL_MS);
    assert_int_equal(o.heartbeat_ms, MS_DEFAULT_HEARTBEAT_MS);
    assert_int_equal(o.settle_ms, MS_DEFAULT_SETTLE_MS);
    assert_int_equal(o.max_tasks_per_sweep, MS_DEFAULT_MAX_TASKS_PER_SWEEP);
    assert_true(o.reevaluate_fraction == MS_DEFAULT_REEVALUATE_FRACTION);
    assert_null(o.api_bind);
    assert_null(o.open_pool);
    assert_null(o.peers);
    assert_int_equal(o.n_peers, 0);
    assert_false(o.verbose);
    assert_false(o.no_beacon);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_options_check(&o, &diag), MS_OK);
    o.data_dir = "";
    s_refused(&o, "data_dir");
}

//  --------------------------------------------------------------------------
//  Every range the table gives is the one the check applies: both ends
//  taken, one beyond either refused and named.

typedef struct {
    const char *name;
    int *field;    // an int option, or NULL
    int64_t *wide; // an int64_t option, or NULL
} s_field_t;

static void
test_ranges_are_the_checks(void **state)
{
    (void) state;
    ms_node_options_t o;
    s_good(&o);
    const s_field_t fields[] = {
        {"retry_cap", &o.retry_cap, NULL},
        {"workers", &o.n_workers, NULL},
        {"blas_threads", &o.blas_threads, NULL},
        {"worker_nice", &o.worker_nice, NULL},
        {"mesh_port", &o.mesh_port, NULL},
        {"beacon_port", &o.beacon_port, NULL},
        {"lease_ttl_ms", &o.lease_ttl_ms, NULL},
        {"beacon_interval_ms", &o.beacon_interval_ms, NULL},
        {"antientropy_ms", &o.antientropy_ms, NULL},
        {"max_pause_s", &o.max_pause_s, NULL},
        {"idle_cpu_pct", &o.idle_cpu_pct, NULL},
        {"idle_busy_s", &o.idle_busy_s, NULL},
        {"idle_quiet_s", &o.idle_quiet_s, NULL},
        {"max_tasks_per_sweep", NULL, &o.max_tasks_per_sweep},
        {"max_dataset_bytes", NULL, &o.max_dataset_bytes},
        {"reeval_timeout_s", &o.reeval_timeout_s, NULL},
        {"keep_retention_s", &o.keep_retention_s, NULL},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const s_field_t *f = &fields[i];
        long long min = 7, max = 7;
        assert_int_equal(ms_node_options_range(f->name, &min, &max), MS_OK);
        assert_true(min <= max);
        long long top = f->wide ? INT64_MAX : INT_MAX;
        // the lease must stay over two heartbeats at its smallest
        if (strcmp(f->name, "lease_ttl_ms") == 0)
            o.heartbeat_ms = 1;
        // one past each end, where the field's type has such a value
        long long values[] = {min, max, min > LLONG_MIN ? min - 1 : min,
                              max < top ? max + 1 : max};
        for (size_t k = 0; k < 4; k++) {
            if ((k == 2 && min == LLONG_MIN) || (k == 3 && max == top))
                continue; // not a value of the field
            if (f->wide)
                *f->wide = (int64_t) values[k];
            else
                *f->field = (int) values[k];
            if (k < 2)
                s_taken(&o);
            else
                s_refused(&o, f->name);
        }
        s_good(&o);
    }
    // worker_memory_mb: 0..INT_MAX with a gap below 256 MiB (the check's
    // own rule, beyond the range)
    long long min = 0, max = 0;
    assert_int_equal(ms_node_options_range("worker_memory_mb", &min, &max),
                     MS_OK);
    assert_int_equal(min, 0);
    assert_int_equal(max, INT_MAX);
    o.worker_memory_mb = 255;
    s_refused(&o, "worker_memory_mb");
    o.worker_memory_mb = -1;
    s_refused(&o, "worker_memory_mb");
    o.worker_memory_mb = 256;
    s_taken(&o);
    // heartbeat_ms: from 1, and under lease_ttl_ms / 2
    assert_int_equal(ms_node_options_range("heartbeat_ms", &min, &max), MS_OK);
    assert_int_equal(min, 1);
    s_good(&o);
    o.heartbeat_ms = 0;
    s_refused(&o, "heartbeat_ms");
    o.lease_ttl_ms = 1000;
    o.heartbeat_ms = 500;
    s_refused(&o, "heartbeat_ms");
    o.heartbeat_ms = 499;
    s_taken(&o);
}

//  --------------------------------------------------------------------------
//  Options that are not a plain whole-number range have no range row.

static void
test_no_range(void **state)
{
    (void) state;
    long long min = 7, max = 9;
    const char *none[] = {"settle_ms", "gpu_workers", "data_dir",
                          "no_such_option", "reevaluate_fraction"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        assert_int_equal(ms_node_options_range(none[i], &min, &max),
                         MS_ERR_NOTFOUND);
    assert_int_equal(min, 7);
    assert_int_equal(max, 9);
}

//  --------------------------------------------------------------------------
//  The rules that are not ranges: backend, gpu_workers, settle_ms, the
//  fraction, the peers' form, open_pool.

static void
test_other_rules(void **state)
{
    (void) state;
    ms_node_options_t o;
    s_good(&o);
    o.backend = "tpu";
    s_refused(&o, "backend");
    s_good(&o);
    o.backend = "cpu";
    o.gpu_workers = 1;
    s_refused(&o, "gpu_workers");
    s_good(&o);
    o.gpu_workers = -2;
    s_refused(&o, "gpu_workers");
    s_good(&o);
    o.settle_ms = -1; // auto
    s_taken(&o);
    o.settle_ms = -2;
    s_refused(&o, "settle_ms");
    s_good(&o);
    o.reevaluate_fraction = 1.5;
    s_refused(&o, "reevaluate_fraction");
    s_good(&o);
    const char *good[] = {
        "tcp://10.0.0.1:5871",
        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
        "@tcp://host:1"};
    o.peers = good;
    o.n_peers = 2;
    s_taken(&o);
    const char *bad[][1] = {{"udp://10.0.0.1:5871"},    {"0123@tcp://h:1"},
                            {"0123456789ab@tcp://h:1"}, // a prefix: no key
                            {"0123456789AB@tcp://h:1"}, {"tcp://h:0"},
                            {"tcp://nocolon"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        o.peers = bad[i];
        o.n_peers = 1;
        s_refused(&o, "peer");
    }
    s_good(&o);
    o.open_pool = "";
    s_refused(&o, "open_pool");
    o.open_pool = "lab";
    s_taken(&o);
    o.enroll_key = "/tmp/kit";
    s_refused(&o, "enroll_key");
}

//  --------------------------------------------------------------------------
//  Among several bad options, the first in the check's order is named
//  (retry_cap before the pool's).

static void
test_first_bad_named(void **state)
{
    (void) state;
    ms_node_options_t o;
    s_good(&o);
    o.retry_cap = -1;
    o.mesh_port = 70000;
    s_refused(&o, "retry_cap");
    o.retry_cap = 0;
    s_refused(&o, "mesh_port");
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_options_check(&o, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.reason, "must be 0..65535, not 70000");
    o.mesh_port = 0;
    o.lease_ttl_ms = 5;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_options_check(&o, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "lease_ttl_ms");
    assert_string_equal(diag.reason, "must be 10 or more, not 5");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_ranges_are_the_checks),
        cmocka_unit_test(test_no_range),
        cmocka_unit_test(test_other_rules),
        cmocka_unit_test(test_first_bad_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
