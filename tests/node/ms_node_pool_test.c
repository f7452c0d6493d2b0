/*  =========================================================================
    ms_node_pool_test - the node's pool surface on one node: pool options
    (heartbeat under TTL/2, static peers), pool limits at submit, the
    sweep life cycle (pause, resume, priority, cancel), pool id and peers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_mlp.h"
#include "ms_node.h"
#include "ms_node_testdata.h"
#include "ms_node_fixture.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  Bad pool options are refused with the option's name.

static void
test_pool_options_refused(void **state)
{
    (void) state;
    char dir[512];
    ms_node_options_t opts;
    ms_node_t *node = NULL;
    ms_diag_t diag;

    ms_nf_options(&opts, dir, sizeof dir, "a", 1);
    opts.lease_ttl_ms = 1000;
    opts.heartbeat_ms = 500; // == TTL/2: refused
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_ERR_INVALID);
    assert_null(node);
    assert_string_equal(diag.where, "heartbeat_ms");
    assert_non_null(strstr(diag.reason, "lease_ttl_ms/2"));

    ms_nf_options(&opts, dir, sizeof dir, "a", 1);
    const char *bad[] = {"http://127.0.0.1:5871"};
    opts.peers = bad;
    opts.n_peers = 1;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "peer");

    ms_nf_options(&opts, dir, sizeof dir, "a", 1);
    const char *short_id[] = {"abc@tcp://127.0.0.1:5871"};
    opts.peers = short_id;
    opts.n_peers = 1;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "peer");

    ms_nf_options(&opts, dir, sizeof dir, "a", 1);
    opts.mesh_port = 70000;
    ms_diag_clear(&diag);
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "mesh_port");

    // Good ones open; a node in no pool has no pool id and no peers.
    ms_nf_options(&opts, dir, sizeof dir, "a", 1);
    opts.lease_ttl_ms = 1000;
    opts.heartbeat_ms = 499;
    node = ms_nf_open(&opts);
    assert_null(ms_node_pool_id_hex(node));
    json_t *peers = ms_node_peers_json(node);
    assert_true(json_is_array(peers));
    assert_int_equal(json_array_size(peers), 0);
    json_decref(peers);
    ms_node_destroy(&node);
    assert_null(node);
}

//  --------------------------------------------------------------------------
//  An open pool's id is H("open:" NAME): two names, two pools.

static void
test_open_pool_id(void **state)
{
    (void) state;
    char dir[512];
    ms_node_options_t opts;
    ms_nf_options(&opts, dir, sizeof dir, "p", 1);
    opts.open_pool = "lab";
    opts.no_beacon = true;
    opts.mesh_port = 0;
    ms_node_t *node = ms_nf_open(&opts);
    const char *id = ms_node_pool_id_hex(node);
    assert_non_null(id);
    ms_hash_t want;
    ms_hash_bytes("open:lab", 8, &want);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&want, hex);
    assert_string_equal(id, hex);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Pool limits refuse oversized sweeps at submit, and nothing is stored.

static void
test_pool_limits_at_submit(void **state)
{
    (void) state;
    char dir[512];
    ms_node_options_t opts;
    ms_nf_options(&opts, dir, sizeof dir, "l", 1);
    opts.max_tasks_per_sweep = 3;
    ms_node_t *node = ms_nf_open(&opts);
    const char *spec = ms_td_spec("limits", 2, 2, 1); // 4 tasks
    ms_hash_t id;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc =
        ms_node_submit(node, spec, strlen(spec), false, &id, NULL, NULL, &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "max_tasks_per_sweep"));
    ms_node_destroy(&node);

    ms_nf_options(&opts, dir, sizeof dir, "l", 1);
    opts.max_dataset_bytes = 1000; // the tiny data is larger than this
    node = ms_nf_open(&opts);
    ms_diag_clear(&diag);
    rc =
        ms_node_submit(node, spec, strlen(spec), false, &id, NULL, NULL, &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_string_equal(diag.where, "dataset");
    assert_non_null(strstr(diag.reason, "max_dataset_bytes"));
    // Nothing was stored.
    ms_sweep_progress_t p;
    ms_hash_t sid;
    memset(&sid, 0, sizeof sid);
    assert_int_equal(ms_node_sweep_progress(node, &sid, &p), MS_ERR_NOTFOUND);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Pause stops new tasks, resume goes on, priority is stored, cancel ends
//  the sweep with its tasks cancelled; actions on an unknown sweep or
//  a cancelled one are refused.

static void
test_sweep_life_cycle(void **state)
{
    (void) state;
    char dir[512];
    ms_node_options_t opts;
    ms_nf_options(&opts, dir, sizeof dir, "c", 1);
    ms_node_t *node = ms_nf_open(&opts);
    const char *spec = ms_td_spec("life", 3, 1, 1); // 3 tasks
    ms_hash_t id;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_node_submit(node, spec, strlen(spec), false, &id, NULL, NULL, &diag),
        MS_OK);
    ms_node_control_t act;
    assert_int_equal(ms_node_control_parse("pause", &act), MS_OK);
    assert_int_equal(act, MS_NODE_CONTROL_PAUSE);
    assert_int_equal(ms_node_control_parse("stop", &act), MS_ERR_INVALID);

    // Paused before any poll: nothing starts.
    assert_int_equal(
        ms_node_control(node, &id, MS_NODE_CONTROL_PAUSE, 0, &diag), MS_OK);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ms_node_poll(node, 20), MS_OK);
    ms_sweep_progress_t p;
    assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
    assert_int_equal(p.pending, 3);
    assert_int_equal(p.running + p.done, 0);
    ms_store_sweep_t *sw = NULL;
    assert_int_equal(ms_store_get_sweep(ms_node_store(node), id.bytes, &sw),
                     MS_OK);
    assert_int_equal(sw->state, MS_SWEEP_PAUSED);
    ms_store_sweep_destroy(&sw);

    assert_int_equal(
        ms_node_control(node, &id, MS_NODE_CONTROL_PRIORITY, 7, &diag), MS_OK);
    assert_int_equal(ms_store_get_sweep(ms_node_store(node), id.bytes, &sw),
                     MS_OK);
    assert_int_equal(sw->priority, 7);
    ms_store_sweep_destroy(&sw);

    // Resume: one task finishes, then cancel the rest.
    assert_int_equal(
        ms_node_control(node, &id, MS_NODE_CONTROL_RESUME, 0, &diag), MS_OK);
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(ms_node_poll(node, 20), MS_OK);
        assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
        if (p.done >= 1)
            break;
    }
    assert_true(p.done >= 1);
    assert_int_equal(
        ms_node_control(node, &id, MS_NODE_CONTROL_CANCEL, 0, &diag), MS_OK);
    for (int i = 0; i < 500; i++) {
        assert_int_equal(ms_node_poll(node, 20), MS_OK);
        assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
        if (p.running == 0 && p.pending == 0)
            break;
    }
    assert_int_equal(p.pending + p.running, 0);
    assert_int_equal(p.done + p.cancelled, 3);
    assert_true(p.cancelled >= 1);
    // Cancelled twice is fine; pausing a cancelled sweep is not.
    assert_int_equal(
        ms_node_control(node, &id, MS_NODE_CONTROL_CANCEL, 0, &diag), MS_OK);
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_node_control(node, &id, MS_NODE_CONTROL_PAUSE, 0, &diag),
        MS_ERR_CONFLICT);
    assert_non_null(strstr(diag.reason, "cancelled"));
    ms_hash_t unknown;
    memset(&unknown, 7, sizeof unknown);
    assert_int_equal(
        ms_node_control(node, &unknown, MS_NODE_CONTROL_PAUSE, 0, &diag),
        MS_ERR_NOTFOUND);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Alone, a node works on records: the submission is a sweep and a
//  dataset record, each task a claim, a result and a release (one block);
//  leases are renewed without heartbeats, so a task longer than the TTL
//  is never claimed twice.

static void
test_single_node_writes_records(void **state)
{
    (void) state;
    char dir[512];
    ms_node_options_t opts;
    ms_nf_options(&opts, dir, sizeof dir, "r", 1);
    opts.lease_ttl_ms = 400; // shorter than a task (checkpoints fsync)
    opts.heartbeat_ms = 100;
    ms_node_t *node = ms_nf_open(&opts);
    const char *spec = ms_td_spec("records", 2, 1, 100); // 2 tasks
    ms_hash_t id;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_node_submit(node, spec, strlen(spec), false, &id, NULL, NULL, &diag),
        MS_OK);
    ms_store_stats_t st;
    ms_store_stats(ms_node_store(node), &st);
    assert_int_equal(st.n_records, 2); // sweep + dataset
    assert_int_equal(st.n_blocks, 1);
    ms_sweep_progress_t p;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 3000; i++) {
        assert_int_equal(ms_node_poll(node, 20), MS_OK);
        assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
        if (p.done == 2)
            break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(p.done, 2);
    double wall = (double) (t1.tv_sec - t0.tv_sec) +
                  (double) (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (wall < 0.8) // the tasks must outlive the TTL for this to mean much
        print_message("note: tasks took %.2f s, under 2 x TTL\n", wall);
    ms_store_stats(ms_node_store(node), &st);
    // Per task a claim and a result (the result finishes the claim: no
    // release record), each in a block of its own here.
    assert_int_equal(st.n_records, 2 + 2 * 2);
    assert_int_equal(st.n_blocks, 1 + 2 * 2);
    uint64_t n_rows = 0;
    assert_int_equal(ms_store_results_count(ms_node_store(node), &n_rows),
                     MS_OK);
    assert_int_equal(n_rows, 2);
    // The same spec again: the same sweep, nothing new stored.
    bool existed = false;
    assert_int_equal(ms_node_submit(node, spec, strlen(spec), false, &id,
                                    &existed, NULL, &diag),
                     MS_OK);
    assert_true(existed);
    ms_store_stats(ms_node_store(node), &st);
    assert_int_equal(st.n_records, 2 + 2 * 2);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  A node claims by the network's whole training memory (core's
//  ms_mlp_memory_bytes, activations included): a deep residual
//  layer-normed network whose parameters alone would fit a 256 MiB
//  worker, but whose activations at batch 2000 do not, is left unclaimed.

static void
test_deep_residual_beyond_worker_memory_not_claimed(void **state)
{
    (void) state;
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    assert_non_null(cfg);
    ms_train_config_defaults(cfg);
    assert_int_equal(ms_train_config_set_uniform(cfg, 64, 256), MS_OK);
    cfg->architecture = MS_ARCH_RESIDUAL;
    cfg->norm = MS_NORM_LAYER;
    cfg->batch_size = 2000;
    int64_t params = ms_train_config_params(cfg, 784, 10);
    assert_true(params * 16 < ((int64_t) 200 << 20)); // the old count fits
    assert_true(ms_mlp_memory_bytes(cfg, 784, 10, 2000) >
                ((int64_t) 300 << 20));
    free(cfg);
    char dir[512];
    ms_node_options_t opts;
    ms_nf_options(&opts, dir, sizeof dir, "mem", 1);
    opts.worker_memory_mb = 256;
    ms_node_t *node = ms_nf_open(&opts);
    const char *spec = "name: deep\n"
                       "dataset: fashion-mnist\n"
                       "method: grid\n"
                       "parameters:\n"
                       "  hidden_layers: {value: 64}\n"
                       "  width: {value: 256}\n"
                       "  architecture: {value: residual}\n"
                       "  norm: {value: layer}\n"
                       "  epochs: {value: 1}\n"
                       "  batch_size: {value: 2000}\n"
                       "  seed: {value: 1}\n";
    ms_hash_t id;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc =
        ms_node_submit(node, spec, strlen(spec), false, &id, NULL, NULL, &diag);
    if (rc != MS_OK)
        fail_msg("submit: %s: %s", diag.where, diag.reason);
    for (int i = 0; i < 25; i++)
        assert_int_equal(ms_node_poll(node, 20), MS_OK);
    ms_store_stats_t st;
    ms_store_stats(ms_node_store(node), &st);
    assert_int_equal(st.n_records, 2); // sweep + dataset: no claim
    ms_sweep_progress_t p;
    assert_int_equal(ms_node_sweep_progress(node, &id, &p), MS_OK);
    assert_int_equal(p.done, 0);
    ms_node_destroy(&node);
}

int
main(void)
{
    setenv("OPENBLAS_CORETYPE", "Haswell", 0);
    setenv("OPENBLAS_L2_SIZE", "512", 0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pool_options_refused,
                                        ms_td_root_setup, ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_open_pool_id, ms_td_root_setup,
                                        ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_pool_limits_at_submit,
                                        ms_td_root_setup, ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_sweep_life_cycle, ms_td_root_setup,
                                        ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(
            test_deep_residual_beyond_worker_memory_not_claimed,
            ms_td_root_setup, ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_single_node_writes_records,
                                        ms_td_root_setup, ms_td_root_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
