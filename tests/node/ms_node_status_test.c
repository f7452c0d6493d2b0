/*  =========================================================================
    ms_node_status_test - the status page, peers and metrics snapshot the
    HTTP threads read, and a sweep's progress

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Drives ms_node_status as the node does, over a real temporary store (a
    SWEEP record of four tasks and RESULT records, as a node would append
    them) and a fake node behind ms_node_status_iface_t: its sample is a
    struct the case fills, its peer table a JSON array the case writes,
    its revoked peers and the tasks peers hold are flags; the clock is a
    fake. Cases:
    - every collaborator figure lands in its pool_counters line, the
      groups follow the collaborators the node has, and refusals sum;
    - HTTP threads read only the published snapshot: a changed sample
      shows only after the next refresh, which tick makes every 200 ms;
    - the peers table is marked (revoked), and the labelled figures count
      peers by state with revoked first; /status counts them by liveness;
    - the figures set as they happen: busy workers, trained tasks and
      seconds, crashes, the platform (a result's, else the workers'),
      claim-to-start median and p99, the volunteer pause;
    - tasks_completed_total and tasks_per_second from the stored sweeps'
      finished counts, sampled once a second;
    - pending tasks that peers hold, counted by sweep (with a mesh only);
    - a sweep's progress: the store's counts, its rows' train_seconds read
      once and then kept up, its elapsed time; an unknown sweep.
*/
#include "ms_node_status.h"

#include "ms_clock.h"
#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_store_fixture.h"

#define S_TASKS 4 // tasks of the sweep
#define S_NODE_ID                                                              \
    "00aa00aa00aa00aa00aa00aa00aa00aa00aa00aa00aa00aa00aa00aa00aa00aa"

//  The fake node and the class under test.
typedef struct {
    ms_sf_t *sf;                     // the temporary dir (fixture)
    ms_store_t *store;               // ROOT/s0
    char store_path[600];            // its data file
    ms_sf_sweep_t sweep;             // a sweep of S_TASKS tasks, stored
    uint8_t origin[MS_HASH_BYTES];   // who stored it
    uint8_t producer[MS_HASH_BYTES]; // who stores the results
    ms_clock_fake_t fake;            // the class's clock
    ms_clock_t clock;                // readers of fake
    ms_node_status_sample_t sample;  // what iface.sample gives
    json_t *platform;                // sample.worker_platform (owned)
    json_t *peers;                   // what iface.peers copies, or NULL
    uint8_t revoked[MS_HASH_BYTES];  // the one peer iface.revoked names
    bool held[S_TASKS];              // tasks a peer holds
    int n_samples;                   // iface.sample calls
    ms_node_status_t *status;        // under test
} fx_t;

static char s_peer_hex[3][MS_HASH_HEX_LEN + 1]; // peers' ids (hex)

//  --------------------------------------------------------------------------
//  iface.sample: the case's sample.

static void
s_sample(void *arg, ms_node_status_sample_t *out)
{
    fx_t *fx = arg;
    fx->n_samples++;
    *out = fx->sample;
    out->worker_platform = fx->platform;
}

//  --------------------------------------------------------------------------
//  iface.peers: a copy of the case's table.

static json_t *
s_peers(void *arg)
{
    fx_t *fx = arg;
    return fx->peers ? json_deep_copy(fx->peers) : json_array();
}

//  --------------------------------------------------------------------------
//  iface.revoked: the one revoked peer.

static bool
s_revoked(void *arg, const uint8_t node_id[MS_HASH_BYTES])
{
    fx_t *fx = arg;
    return memcmp(node_id, fx->revoked, MS_HASH_BYTES) == 0;
}

//  --------------------------------------------------------------------------
//  iface.held_elsewhere: the case's flags.

static bool
s_held_elsewhere(void *arg, const uint8_t task_id[MS_HASH_BYTES])
{
    fx_t *fx = arg;
    for (size_t i = 0; i < S_TASKS; i++)
        if (memcmp(task_id, ms_sf_task_id(&fx->sweep, i), MS_HASH_BYTES) == 0)
            return fx->held[i];
    return false;
}

//  --------------------------------------------------------------------------
//  A fresh store with the sweep, a clock at 10 s and the status over them.

static int
s_setup(void **state)
{
    void *sf = NULL;
    if (ms_sf_setup(&sf, "ms_node_status_test") != 0)
        return -1;
    fx_t *fx = calloc(1, sizeof *fx);
    fx->sf = sf;
    fx->store = ms_sf_open(fx->sf, NULL, 4 << 20);
    snprintf(fx->store_path, sizeof fx->store_path, "%s/s0/data.mdb",
             fx->sf->root);
    ms_sf_sweep_seeds(&fx->sweep, "status", 8, S_TASKS);
    memset(fx->origin, 0xEE, MS_HASH_BYTES);
    memset(fx->producer, 0x11, MS_HASH_BYTES);
    assert_int_equal(ms_sf_append_sweep(fx->store, fx->origin, &fx->sweep, 0),
                     MS_OK);
    fx->fake.mono_ms = 10000;
    ms_clock_fake(&fx->fake, &fx->clock);
    snprintf(fx->sample.authority.operator_name,
             sizeof fx->sample.authority.operator_name, "alice");
    for (int i = 0; i < 3; i++) {
        ms_hash_t id;
        memset(id.bytes, 0xA0 + i, MS_HASH_BYTES);
        ms_hash_hex(&id, s_peer_hex[i]);
    }
    memset(fx->revoked, 0xA2, MS_HASH_BYTES); // the third peer
    json_t *backend = json_pack("{s:s}", "requested", "cpu");
    ms_node_status_config_t cfg = {.node_id = S_NODE_ID,
                                   .store_path = fx->store_path,
                                   .open_pool = "lab",
                                   .n_workers = 3,
                                   .backend = backend,
                                   .idle_only = true,
                                   .idle_cpu_pct = 25,
                                   .max_pause_s = 600,
                                   .idle_source = "processes",
                                   .clock = &fx->clock,
                                   .opened_at_ms = 4000};
    ms_node_status_iface_t iface = {.arg = fx,
                                    .sample = s_sample,
                                    .peers = s_peers,
                                    .revoked = s_revoked,
                                    .held_elsewhere = s_held_elsewhere};
    fx->status = ms_node_status_new(fx->store, &cfg, &iface);
    json_decref(backend); // copied
    assert_non_null(fx->status);
    *state = fx;
    return 0;
}

//  --------------------------------------------------------------------------
//  Free everything and remove the dir.

static int
s_teardown(void **state)
{
    fx_t *fx = *state;
    ms_node_status_destroy(&fx->status);
    assert_null(fx->status);
    ms_node_status_destroy(&fx->status); // NULL-safe
    ms_store_destroy(&fx->store);
    ms_sf_sweep_free(&fx->sweep);
    json_decref(fx->platform);
    json_decref(fx->peers);
    void *sf = fx->sf;
    free(fx);
    return ms_sf_teardown(&sf);
}

//  --------------------------------------------------------------------------
//  Store a result of task I with TRAIN_SECONDS (done once stored).

static void
s_store_result(fx_t *fx, size_t i, double train_seconds)
{
    char row[200];
    snprintf(row, sizeof row,
             "{\"status\":\"ok\",\"test_accuracy\":0.9,\"test_loss\":0.3,"
             "\"train_seconds\":%g}",
             train_seconds);
    assert_int_equal(ms_sf_append_result(fx->store, fx->producer,
                                         ms_sf_task_id(&fx->sweep, i), row,
                                         strlen(row)),
                     MS_OK);
}

//  --------------------------------------------------------------------------
//  The integer under KEY of OBJ (an object), failing when it is missing.

static json_int_t
s_int(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    if (!json_is_integer(v))
        fail_msg("no integer %s", key);
    return json_integer_value(v);
}

//  --------------------------------------------------------------------------
//  A peer object of the mesh's table.

static json_t *
s_peer(int i, const char *state)
{
    return json_pack("{s:s, s:s}", "node_id", s_peer_hex[i], "state", state);
}

//  --------------------------------------------------------------------------
//  Every collaborator's figure in its line; groups follow the collaborators.

static void
test_metrics_lines(void **state)
{
    fx_t *fx = *state;
    ms_node_status_sample_t s;
    memset(&s, 0, sizeof s);
    s.own.lease_claims_total = 999; // the runner's figure wins
    s.signer.n_rejected = 2;
    s.signer.n_resigned = 5;
    s.log.n_acks_sent = 6;
    s.own.loop_turn_max_us = 1234;
    s.n_rejected_messages = 3;
    s.store.n_records = 10;
    s.store.n_blocks = 4;
    s.store.n_commits = 5;
    s.store.n_writes = 6;
    s.store.n_equivocations = 1;
    s.n_ignored_no_role = 7;
    s.n_leases = 8;
    s.runner.n_claims = 11;
    s.runner.n_conflicts = 12;
    s.runner.n_settle_lost = 13;
    s.runner.n_settle_capped = 14;
    s.runner.n_expiries = 15;
    s.items.n_items = 2;
    s.items.n_revocations = 1;
    s.lease_feed.n_refused_invalid = 7;
    s.has_datasets = true;
    s.datasets.n_fetched = 21;
    s.datasets.n_uploads = 22;
    ms_metrics_t m;
    unsigned groups = ms_node_status_metrics(&s, &m);
    assert_int_equal(groups, MS_METRICS_GROUP_NODE);
    assert_int_equal(m.records, 10);
    assert_int_equal(m.blocks, 4);
    assert_int_equal(m.store_commits_total, 5);
    assert_int_equal(m.store_writes_total, 6);
    assert_int_equal(m.equivocations_total, 1);
    assert_int_equal(m.records_ignored_no_role_total, 7);
    assert_int_equal(m.leases, 8);
    assert_int_equal(m.lease_claims_total, 11);
    assert_int_equal(m.lease_conflicts_total, 12);
    assert_int_equal(m.lease_settle_lost_total, 13);
    assert_int_equal(m.lease_settle_capped_total, 14);
    assert_int_equal(m.lease_expiries_total, 15);
    assert_int_equal(m.loop_turn_max_us, 1234); // own counters kept
    assert_int_equal(m.authority_items, 2);
    assert_int_equal(m.revocations_applied_total, 1);
    assert_int_equal(m.results_refused_invalid_total, 7);
    assert_int_equal(m.datasets_fetched_total, 21);
    assert_int_equal(m.blob_uploads_total, 22);
    assert_int_equal(m.rejected_messages_total, 3 + 2);
    assert_int_equal(m.blocks_rejected_total, 2);
    assert_int_equal(m.blocks_resigned_total, 5);
    assert_int_equal(m.block_acks_sent_total, 6);

    s.has_gossip = true;
    s.gossip.sent[1] = 5;
    s.gossip.received[4] = 7;
    s.gossip.sent_bytes[1] = 100;
    s.gossip.received_bytes[4] = 50;
    s.gossip.blocks_merged = 9;
    s.gossip.rejected = 4;
    s.has_mesh = true;
    s.mesh.n_frames_in = 30;
    s.mesh.n_malformed = 1;
    s.mesh.n_rejected = 2;
    s.mesh.n_admission_refused = 3;
    s.mesh.n_refused[MS_MEMBERS_REFUSED_REVOKED] = 3;
    s.n_members = 5;
    s.has_fetch = true;
    s.fetch.completed = 40;
    s.n_fetches_running = 2;
    s.blobs.used_bytes = 4096;
    s.has_reeval = true;
    s.reeval.n_sampled = 6;
    s.reeval.n_pinned = 1;
    groups = ms_node_status_metrics(&s, &m);
    assert_int_equal(groups, MS_METRICS_GROUP_ALL);
    assert_int_equal(m.gossip_messages_total, 12);
    assert_int_equal(m.gossip_bytes_total, 150);
    assert_int_equal(m.gossip_blocks_merged_total, 9);
    assert_int_equal(m.mesh_frames_in_total, 30);
    assert_int_equal(m.admission_refused_total, 3);
    assert_int_equal(m.admission_refused_revoked_total, 3);
    assert_int_equal(m.admission_refused_expired_total, 0);
    assert_int_equal(m.members, 5);
    assert_int_equal(m.blob_fetches_completed_total, 40);
    assert_int_equal(m.blob_fetches_running, 2);
    assert_int_equal(m.blob_bytes, 4096);
    assert_int_equal(m.reevaluations_sampled_total, 6);
    assert_int_equal(m.weights_pinned, 1);
    // every refusal: the node's, the blocks', gossip's, the mesh's
    assert_int_equal(m.rejected_messages_total, 3 + 2 + 4 + 1 + 2);

    // The page holds the same figures under their keys (tick refreshes).
    fx->sample = s;
    snprintf(fx->sample.authority.operator_name,
             sizeof fx->sample.authority.operator_name, "alice");
    ms_node_status_tick(fx->status);
    json_t *st = ms_node_status_json(fx->status);
    assert_non_null(st);
    json_t *pc = json_object_get(st, "pool_counters");
    assert_int_equal(s_int(pc, "records"), 10);
    assert_int_equal(s_int(pc, "members"), 5);
    assert_int_equal(s_int(pc, "rejected_messages_total"), 12);
    assert_int_equal(s_int(pc, "blob_bytes"), 4096);
    json_t *rej = json_object_get(json_object_get(st, "metrics"), "rejected");
    assert_int_equal(s_int(rej, "frame_malformed"), 1);
    assert_int_equal(s_int(rej, "hello_refused"), 2);
    assert_int_equal(s_int(rej, "gossip_invalid"), 4);
    assert_int_equal(s_int(rej, "message_refused"), 3);
    json_t *g = json_object_get(json_object_get(st, "metrics"), "gossip");
    assert_int_equal(
        s_int(json_object_get(json_object_get(g, "sent"), "digest"),
              "messages"),
        5);
    assert_int_equal(
        s_int(json_object_get(json_object_get(g, "received"), "block"),
              "bytes"),
        50);
    json_decref(st);
}

//  --------------------------------------------------------------------------
//  HTTP threads see only what a refresh published; tick refreshes every
//  200 ms.

static void
test_snapshot_published(void **state)
{
    fx_t *fx = *state;
    // Nothing published yet: empty counters, no peers, the settings.
    json_t *st = ms_node_status_json(fx->status);
    assert_non_null(st);
    assert_int_equal(json_object_size(json_object_get(st, "pool_counters")), 0);
    assert_string_equal(json_string_value(json_object_get(st, "node_id")),
                        S_NODE_ID);
    assert_int_equal(s_int(st, "workers"), 3);
    assert_true(json_is_null(json_object_get(st, "pool_id")));
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(st, "backend"), "requested")),
                        "cpu");
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(st, "pool"), "open_pool")),
                        "lab");
    double up = json_number_value(json_object_get(st, "uptime_seconds"));
    assert_true(fabs(up - 6.0) < 1e-9); // 10 s now, opened at 4 s
    json_decref(st);

    fx->sample.store.n_records = 1;
    fx->sample.outbox.n_held = 2;
    fx->sample.outbox.n_reveals = 3;
    fx->sample.n_pool_operators = 4;
    fx->sample.has_mesh = true;
    fx->sample.mesh_secure = true;
    fx->sample.authority.has_certificate = true;
    snprintf(fx->sample.authority.pool_id_hex,
             sizeof fx->sample.authority.pool_id_hex, "ab12");
    ms_node_status_tick(fx->status);
    assert_int_equal(fx->n_samples, 1);
    // What the loop's collaborators say now is not what HTTP reads...
    fx->sample.store.n_records = 50;
    fx->sample.outbox.n_held = 9;
    fx->fake.mono_ms += MS_NODE_STATUS_REFRESH_MS - 1;
    ms_node_status_tick(fx->status); // not due: no sample
    assert_int_equal(fx->n_samples, 1);
    st = ms_node_status_json(fx->status);
    assert_int_equal(s_int(json_object_get(st, "pool_counters"), "records"), 1);
    json_t *ver = json_object_get(st, "verification");
    assert_int_equal(s_int(ver, "results_held"), 2);
    assert_int_equal(s_int(ver, "reveals_total"), 3);
    assert_int_equal(s_int(ver, "pool_operators"), 4);
    // this node's standing (a node the store has not seen: zeros)
    json_t *me = json_array_get(json_object_get(ver, "nodes"), 0);
    assert_string_equal(json_string_value(json_object_get(me, "node")),
                        S_NODE_ID);
    assert_int_equal(s_int(me, "counted"), 0);
    assert_true(json_is_false(json_object_get(me, "quarantined")));
    json_t *pool = json_object_get(st, "pool");
    assert_true(json_is_true(json_object_get(pool, "encrypted")));
    assert_true(json_is_true(json_object_get(pool, "authority")));
    assert_true(json_is_true(json_object_get(pool, "linked")));
    assert_string_equal(json_string_value(json_object_get(st, "pool_id")),
                        "ab12");
    assert_string_equal(json_string_value(json_object_get(st, "operator")),
                        "alice");
    json_decref(st);
    // ... until the next refresh is due.
    fx->fake.mono_ms += 1;
    ms_node_status_tick(fx->status);
    assert_int_equal(fx->n_samples, 2);
    st = ms_node_status_json(fx->status);
    assert_int_equal(s_int(json_object_get(st, "pool_counters"), "records"),
                     50);
    assert_int_equal(s_int(json_object_get(st, "verification"), "results_held"),
                     9);
    json_decref(st);
    // refresh publishes at once, whatever the clock
    fx->sample.store.n_records = 51;
    ms_node_status_refresh(fx->status);
    st = ms_node_status_json(fx->status);
    assert_int_equal(s_int(json_object_get(st, "pool_counters"), "records"),
                     51);
    json_decref(st);
}

//  --------------------------------------------------------------------------
//  The peers table is marked; peers are counted by liveness on /status and
//  by standing (revoked first) in the labelled figures.

static void
test_peers(void **state)
{
    fx_t *fx = *state;
    json_t *p = ms_node_status_peers(fx->status);
    assert_true(json_is_array(p));
    assert_int_equal(json_array_size(p), 0);
    json_decref(p);
    fx->peers = json_array();
    json_array_append_new(fx->peers, s_peer(0, "alive"));
    json_array_append_new(fx->peers, s_peer(1, "suspect"));
    json_array_append_new(fx->peers, s_peer(2, "dead")); // revoked
    fx->sample.has_mesh = true;
    ms_node_status_refresh(fx->status);
    p = ms_node_status_peers(fx->status);
    assert_int_equal(json_array_size(p), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *peer = json_array_get(p, i);
        assert_string_equal(json_string_value(json_object_get(peer, "node_id")),
                            s_peer_hex[i]);
        assert_true(json_is_boolean(json_object_get(peer, "revoked")));
        assert_int_equal(json_is_true(json_object_get(peer, "revoked")),
                         i == 2);
        assert_true(json_is_false(json_object_get(peer, "quarantined")));
    }
    // a copy: changing it changes nothing published
    json_object_set_new(json_array_get(p, 0), "state", json_string("dead"));
    json_decref(p);
    json_t *st = ms_node_status_json(fx->status);
    json_t *by_state = json_object_get(st, "peers");
    assert_int_equal(s_int(by_state, "alive"), 1);
    assert_int_equal(s_int(by_state, "suspect"), 1);
    assert_int_equal(s_int(by_state, "dead"), 1);
    json_t *ps = json_object_get(json_object_get(st, "metrics"), "peer_states");
    assert_int_equal(s_int(ps, "alive"), 1);
    assert_int_equal(s_int(ps, "suspect"), 1);
    assert_int_equal(s_int(ps, "dead"), 0);
    assert_int_equal(s_int(ps, "revoked"), 1);
    assert_int_equal(s_int(ps, "quarantined"), 0);
    // verification: this node and each peer
    json_t *nodes =
        json_object_get(json_object_get(st, "verification"), "nodes");
    assert_int_equal(json_array_size(nodes), 4);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(nodes, 3), "node")),
        s_peer_hex[2]);
    json_decref(st);
    // A table that cannot be made keeps the last one.
    json_decref(fx->peers);
    fx->peers = NULL;
    ms_node_status_refresh(fx->status);
    p = ms_node_status_peers(fx->status);
    assert_int_equal(json_array_size(p), 0); // in no pool now: empty
    json_decref(p);
}

//  --------------------------------------------------------------------------
//  The figures the loop sets as they happen.

static void
test_live_figures(void **state)
{
    fx_t *fx = *state;
    ms_hash_t sid;
    memcpy(sid.bytes, fx->sweep.sweep_id, MS_HASH_BYTES);
    fx->platform = json_pack("{s:s}", "backend", "workers'");
    ms_node_status_refresh(fx->status); // the workers' platform first
    ms_node_status_set_busy(fx->status, 2);
    json_t *plat = json_pack("{s:s}", "backend", "cpu");
    ms_node_status_result_stored(fx->status, &sid, true, 2.5, &plat);
    assert_null(plat);                                                // taken
    ms_node_status_result_stored(fx->status, &sid, false, 1.0, NULL); // noop
    ms_node_status_worker_crashed(fx->status);
    ms_node_status_worker_crashed(fx->status);
    json_t *st = ms_node_status_json(fx->status);
    assert_int_equal(s_int(st, "workers_busy"), 2);
    assert_int_equal(s_int(st, "tasks_trained_total"), 1);
    assert_true(
        fabs(json_number_value(json_object_get(st, "training_seconds_total")) -
             2.5) < 1e-12);
    assert_int_equal(s_int(st, "worker_crashes_total"), 2);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(st, "platform"), "backend")),
                        "cpu");
    json_t *c2s = json_object_get(st, "claim_to_start_ms");
    assert_int_equal(s_int(c2s, "n"), 0);
    assert_true(json_is_null(json_object_get(c2s, "median")));
    assert_true(json_is_false(json_object_get(st, "paused")));
    assert_true(json_is_null(json_object_get(st, "pause_reason")));
    json_t *vol = json_object_get(st, "volunteer");
    assert_true(json_is_true(json_object_get(vol, "idle_only")));
    assert_true(json_is_null(json_object_get(vol, "others_cpu_pct")));
    assert_string_equal(json_string_value(json_object_get(vol, "source")),
                        "processes");
    json_decref(st);

    // claim-to-start: 1..300 ms; the ring keeps the last 256 (45..300)
    for (int i = 1; i <= 300; i++)
        ms_node_status_claim_to_start(fx->status, (double) i);
    ms_runner_pause_t pause = {.paused = true,
                               .paused_since = 86400,
                               .reason = "others use 80% of the CPU",
                               .n_pauses = 3,
                               .n_pause_releases = 1,
                               .others_pct = 80.0,
                               .own_pct = 5.0};
    ms_node_status_paused(fx->status, &pause);
    st = ms_node_status_json(fx->status);
    c2s = json_object_get(st, "claim_to_start_ms");
    assert_int_equal(s_int(c2s, "n"), 300);
    assert_int_equal(s_int(c2s, "window"), 256);
    assert_true(
        fabs(json_number_value(json_object_get(c2s, "median")) - 172.5) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(c2s, "p99")) - 298) <
                1e-9);
    assert_true(json_is_true(json_object_get(st, "paused")));
    assert_string_equal(json_string_value(json_object_get(st, "pause_reason")),
                        "others use 80% of the CPU");
    assert_string_equal(json_string_value(json_object_get(st, "paused_since")),
                        "1970-01-02T00:00:00Z");
    assert_int_equal(s_int(st, "pauses_total"), 3);
    assert_int_equal(s_int(st, "pause_releases_total"), 1);
    vol = json_object_get(st, "volunteer");
    assert_true(fabs(json_number_value(json_object_get(vol, "others_cpu_pct")) -
                     80.0) < 1e-12);
    json_decref(st);
}

//  --------------------------------------------------------------------------
//  Before any result the platform is what a worker announced.

static void
test_worker_platform(void **state)
{
    fx_t *fx = *state;
    fx->platform = json_pack("{s:s}", "backend", "workers'");
    fx->sample.calibration_gflops = 12.5;
    ms_node_status_refresh(fx->status);
    json_t *st = ms_node_status_json(fx->status);
    assert_string_equal(json_string_value(json_object_get(
                            json_object_get(st, "platform"), "backend")),
                        "workers'");
    assert_true(
        fabs(json_number_value(json_object_get(st, "calibration_gflops")) -
             12.5) < 1e-12);
    json_decref(st);
}

//  --------------------------------------------------------------------------
//  Tasks completed and their rate, from the stored sweeps' counts.

static void
test_tasks_per_second(void **state)
{
    fx_t *fx = *state;
    ms_node_status_refresh(fx->status); // first look, first sample
    json_t *st = ms_node_status_json(fx->status);
    json_t *m = json_object_get(st, "metrics");
    assert_int_equal(s_int(m, "tasks_completed_total"), 0);
    assert_true(json_number_value(json_object_get(m, "tasks_per_second")) == 0);
    json_decref(st);
    s_store_result(fx, 0, 1.0);
    s_store_result(fx, 1, 1.0);
    fx->fake.mono_ms += 500; // counted now, sampled at the next second
    ms_node_status_refresh(fx->status);
    st = ms_node_status_json(fx->status);
    m = json_object_get(st, "metrics");
    assert_int_equal(s_int(m, "tasks_completed_total"), 2);
    assert_true(json_number_value(json_object_get(
                    m, "tasks_per_second_window_seconds")) == 0); // 1 sample
    json_decref(st);
    s_store_result(fx, 2, 1.0);
    fx->fake.mono_ms += 1500;
    ms_node_status_refresh(fx->status);
    st = ms_node_status_json(fx->status);
    m = json_object_get(st, "metrics");
    assert_int_equal(s_int(m, "tasks_completed_total"), 3);
    // 3 tasks between the samples at 10 s and 12 s
    assert_true(fabs(json_number_value(json_object_get(m, "tasks_per_second")) -
                     1.5) < 1e-9);
    assert_true(fabs(json_number_value(json_object_get(
                         m, "tasks_per_second_window_seconds")) -
                     2.0) < 1e-9);
    json_decref(st);
    // A minute later with nothing done: the window forgets the old ones.
    for (int i = 0; i < 70; i++) {
        fx->fake.mono_ms += 1000;
        ms_node_status_refresh(fx->status);
    }
    st = ms_node_status_json(fx->status);
    m = json_object_get(st, "metrics");
    assert_int_equal(s_int(m, "tasks_completed_total"), 3);
    assert_true(json_number_value(json_object_get(m, "tasks_per_second")) == 0);
    json_decref(st);
}

//  --------------------------------------------------------------------------
//  Pending tasks peers hold, by sweep; only with a mesh.

static void
test_running_elsewhere(void **state)
{
    fx_t *fx = *state;
    fx->held[1] = fx->held[3] = true;
    ms_node_status_refresh(fx->status); // alone: not counted
    assert_int_equal(
        ms_node_status_running_elsewhere(fx->status, fx->sweep.sweep_id), 0);
    fx->sample.has_mesh = true;
    ms_node_status_refresh(fx->status);
    assert_int_equal(
        ms_node_status_running_elsewhere(fx->status, fx->sweep.sweep_id), 2);
    uint8_t other[MS_HASH_BYTES];
    memset(other, 0x77, sizeof other);
    assert_int_equal(ms_node_status_running_elsewhere(fx->status, other), 0);
    // a task that is done no longer counts
    s_store_result(fx, 1, 1.0);
    ms_node_status_refresh(fx->status);
    assert_int_equal(
        ms_node_status_running_elsewhere(fx->status, fx->sweep.sweep_id), 1);
}

//  --------------------------------------------------------------------------
//  A sweep's progress.

static void
test_sweep_progress(void **state)
{
    fx_t *fx = *state;
    ms_hash_t sid;
    memcpy(sid.bytes, fx->sweep.sweep_id, MS_HASH_BYTES);
    // results stored before the first ask are summed from the rows
    ms_node_status_result_stored(fx->status, &sid, true, 100.0, NULL);
    s_store_result(fx, 0, 2.5);
    s_store_result(fx, 1, 1.5);
    ms_sweep_progress_t p;
    assert_int_equal(ms_node_status_sweep_progress(fx->status, &sid, &p),
                     MS_OK);
    assert_int_equal(p.total, S_TASKS);
    assert_int_equal(p.done, 2);
    assert_int_equal(p.pending, 2);
    assert_int_equal(p.running, 0);
    assert_true(fabs(p.train_seconds - 4.0) < 1e-12);
    assert_true(p.elapsed_seconds == 0); // not started here
    // later results are added as they are stored, not read again
    ms_node_status_sweep_started(fx->status, &sid);
    fx->fake.mono_ms += 2500;
    ms_node_status_sweep_started(fx->status, &sid); // the first one counts
    s_store_result(fx, 2, 3.0);
    ms_node_status_result_stored(fx->status, &sid, true, 3.0, NULL);
    ms_node_status_result_stored(fx->status, &sid, true, NAN, NULL);
    assert_int_equal(ms_node_status_sweep_progress(fx->status, &sid, &p),
                     MS_OK);
    assert_int_equal(p.done, 3);
    assert_true(fabs(p.train_seconds - 7.0) < 1e-12);
    assert_true(fabs(p.elapsed_seconds - 2.5) < 1e-9);
    // an unknown sweep
    ms_hash_t unknown;
    memset(unknown.bytes, 0x42, MS_HASH_BYTES);
    assert_int_equal(ms_node_status_sweep_progress(fx->status, &unknown, &p),
                     MS_ERR_NOTFOUND);
    assert_int_equal(p.total, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_metrics_lines, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_published, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_peers, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_live_figures, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_worker_platform, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_tasks_per_second, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_running_elsewhere, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_sweep_progress, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
