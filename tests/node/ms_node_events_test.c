/*  =========================================================================
    ms_node_events_test - what the node publishes on GET /api/v1/events

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Drives ms_node_events as the node does, over a real temporary store (a
    SWEEP record of four tasks, RESULT records as a node appends them) and
    its own real ring, read by a polling reader as a stream would; the fake
    node behind ms_node_events_iface_t logs lines and says how many
    pending tasks peers run. Cases:
    - nobody listening: nothing is built or published, queued results
      are dropped, the first scan is a silent baseline;
    - a stored result becomes a `result` event with its row, a result the
      store does not count publishes nothing; at most
      MS_NODE_EVENTS_ROWS_PER_TURN rows a turn, the rest on the next;
    - a queue overflow publishes `reset` instead of the rows;
    - a verdict change comes after the rows of its task still queued;
    - a peer's appearance and change of state;
    - a sweep's progress once a tick when its counts change (peers' tasks
      shown as running), a new sweep's `sweep` and `progress`.
*/
#include "ms_node_events.h"

#include "ms_events.h"
#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_verdict.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_store_fixture.h"

#define S_TASKS 4     // tasks of the sweep
#define S_MAX_SEEN 64 // events a case reads at once

//  One event as a reader saw it.
typedef struct {
    char type[16]; // event type
    json_t *data;  // its data (owned)
} seen_t;

//  The fake node and the class under test.
typedef struct {
    ms_sf_t *sf;                     // the temporary dir (fixture)
    ms_store_t *store;               // ROOT/s0
    ms_sf_sweep_t sweep;             // a sweep of S_TASKS tasks, stored
    uint8_t origin[MS_HASH_BYTES];   // who stored it
    uint8_t producer[MS_HASH_BYTES]; // who stores the results
    int64_t elsewhere;               // iface.running_elsewhere answers
    int n_logged;                    // iface.log calls
    ms_node_events_t *events;        // under test
    ms_events_reader_t *reader;      // a stream, or NULL
    int64_t now;                     // the turns' clock (ms)
    seen_t seen[S_MAX_SEEN];         // what s_read read
    size_t n_seen;                   // entries in seen
} fx_t;

//  --------------------------------------------------------------------------
//  iface.log: count the lines.

static void
s_log(void *arg, const char *line)
{
    fx_t *fx = arg;
    (void) line;
    fx->n_logged++;
}

//  --------------------------------------------------------------------------
//  iface.running_elsewhere: the case's figure for our sweep.

static int64_t
s_running_elsewhere(void *arg, const uint8_t sweep_id[MS_HASH_BYTES])
{
    fx_t *fx = arg;
    return memcmp(sweep_id, fx->sweep.sweep_id, MS_HASH_BYTES) == 0
               ? fx->elsewhere
               : 0;
}

//  --------------------------------------------------------------------------
//  A fresh store with the sweep, and the events over it.

static int
s_setup(void **state)
{
    void *sf = NULL;
    if (ms_sf_setup(&sf, "ms_node_events_test") != 0)
        return -1;
    fx_t *fx = calloc(1, sizeof *fx);
    fx->sf = sf;
    fx->store = ms_sf_open(fx->sf, NULL, 4 << 20);
    ms_sf_sweep_seeds(&fx->sweep, "events", 8, S_TASKS);
    memset(fx->origin, 0xEE, MS_HASH_BYTES);
    memset(fx->producer, 0x11, MS_HASH_BYTES);
    assert_int_equal(ms_sf_append_sweep(fx->store, fx->origin, &fx->sweep, 0),
                     MS_OK);
    ms_node_events_config_t cfg = {
        .capacity = 1024, .max_readers = 4, .first_id = 1};
    ms_node_events_iface_t iface = {
        .arg = fx, .log = s_log, .running_elsewhere = s_running_elsewhere};
    fx->events = ms_node_events_new(fx->store, &cfg, &iface);
    assert_non_null(fx->events);
    fx->now = 100000;
    *state = fx;
    return 0;
}

//  --------------------------------------------------------------------------
//  Forget what was read.

static void
s_clear_seen(fx_t *fx)
{
    for (size_t i = 0; i < fx->n_seen; i++)
        json_decref(fx->seen[i].data);
    fx->n_seen = 0;
}

//  --------------------------------------------------------------------------
//  Free everything and remove the dir.

static int
s_teardown(void **state)
{
    fx_t *fx = *state;
    s_clear_seen(fx);
    ms_events_reader_close(&fx->reader);
    ms_node_events_destroy(&fx->events);
    assert_null(fx->events);
    ms_node_events_destroy(&fx->events); // NULL-safe
    ms_store_destroy(&fx->store);
    ms_sf_sweep_free(&fx->sweep);
    void *sf = fx->sf;
    free(fx);
    return ms_sf_teardown(&sf);
}

//  --------------------------------------------------------------------------
//  Open a stream (new events only): from now on somebody listens.

static void
s_listen(fx_t *fx)
{
    assert_int_equal(ms_events_reader_open(ms_node_events_ring(fx->events),
                                           NULL, false, 0, NULL, NULL, NULL,
                                           &fx->reader),
                     MS_OK);
}

//  --------------------------------------------------------------------------
//  Read what the stream has now into fx->seen (after what is there).

static void
s_read(fx_t *fx)
{
    for (;;) {
        char *text = NULL;
        size_t len = 0;
        int rc = ms_events_reader_next(fx->reader, 1 << 20, &text, &len);
        if (rc == MS_ERR_TIMEOUT)
            return;
        assert_int_equal(rc, MS_OK);
        for (char *f = strstr(text, "event: "); f;
             f = strstr(f + 1, "event: ")) {
            assert_true(fx->n_seen < S_MAX_SEEN);
            seen_t *e = &fx->seen[fx->n_seen++];
            sscanf(f + 7, "%15[a-z_]", e->type);
            char *d = strstr(f, "data: ");
            assert_non_null(d);
            json_error_t err;
            e->data = json_loadb(d + 6, strcspn(d + 6, "\n"), 0, &err);
            assert_non_null(e->data);
        }
        free(text);
    }
}

//  --------------------------------------------------------------------------
//  How many events of TYPE were read.

static size_t
s_count(const fx_t *fx, const char *type)
{
    size_t n = 0;
    for (size_t i = 0; i < fx->n_seen; i++)
        n += strcmp(fx->seen[i].type, type) == 0;
    return n;
}

//  --------------------------------------------------------------------------
//  Store a result of task I (done once stored) and report it.

static void
s_result(fx_t *fx, size_t i)
{
    ms_hash_t tid, sid, nid;
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1],
        nhex[MS_HASH_HEX_LEN + 1];
    memcpy(tid.bytes, ms_sf_task_id(&fx->sweep, i), MS_HASH_BYTES);
    memcpy(sid.bytes, fx->sweep.sweep_id, MS_HASH_BYTES);
    memcpy(nid.bytes, fx->producer, MS_HASH_BYTES);
    ms_hash_hex(&tid, thex);
    ms_hash_hex(&sid, shex);
    ms_hash_hex(&nid, nhex);
    char row[600];
    snprintf(row, sizeof row,
             "{\"task_id\":\"%s\",\"sweep_id\":\"%s\",\"node_id\":\"%s\","
             "\"status\":\"ok\",\"test_accuracy\":0.9,\"test_loss\":0.3}",
             thex, shex, nhex);
    assert_int_equal(ms_sf_append_result(fx->store, fx->producer, tid.bytes,
                                         row, strlen(row)),
                     MS_OK);
    ms_node_events_result(fx->events, tid.bytes, fx->producer);
}

//  --------------------------------------------------------------------------
//  A turn at fx->now, then STEP ms later.

static void
s_turn(fx_t *fx, int64_t step)
{
    ms_node_events_turn(fx->events, fx->now);
    fx->now += step;
}

//  --------------------------------------------------------------------------
//  Forget what was read, take a turn (then STEP ms pass) and read what it
//  published.

static void
s_next(fx_t *fx, int64_t step)
{
    s_clear_seen(fx);
    s_turn(fx, step);
    s_read(fx);
}

//  --------------------------------------------------------------------------
//  Nobody listens: nothing is built; the queue is dropped; the first scan
//  is a silent baseline.

static void
test_nobody_listens(void **state)
{
    fx_t *fx = *state;
    ms_events_t *ring = ms_node_events_ring(fx->events);
    uint64_t last = ms_events_last_id(ring);
    s_result(fx, 0);
    s_turn(fx, 1000);
    assert_int_equal(ms_events_last_id(ring), last);
    // A stream opens: the dropped result does not come back, and the
    // sweep stored before does not "appear".
    s_listen(fx);
    s_next(fx, 1000);
    assert_int_equal(fx->n_seen, 0);
    assert_int_equal(ms_events_last_id(ring), last);
    assert_int_equal(fx->n_logged, 0);
}

//  --------------------------------------------------------------------------
//  Stored results become `result` events with their rows; a result the
//  store does not count publishes nothing.

static void
test_result_rows(void **state)
{
    fx_t *fx = *state;
    s_listen(fx);
    s_turn(fx, 10); // baseline; the next scan 1000 ms on
    s_result(fx, 1);
    uint8_t nobody[MS_HASH_BYTES];
    memset(nobody, 0x99, MS_HASH_BYTES);
    ms_node_events_result(fx->events, ms_sf_task_id(&fx->sweep, 2), nobody);
    s_next(fx, 10); // rows only: the next scan is not due
    assert_int_equal(fx->n_seen, 1);
    assert_string_equal(fx->seen[0].type, "result");
    ms_hash_t tid;
    char thex[MS_HASH_HEX_LEN + 1];
    memcpy(tid.bytes, ms_sf_task_id(&fx->sweep, 1), MS_HASH_BYTES);
    ms_hash_hex(&tid, thex);
    assert_string_equal(
        json_string_value(json_object_get(fx->seen[0].data, "task_id")), thex);
    assert_string_equal(
        json_string_value(json_object_get(fx->seen[0].data, "status")), "ok");
    assert_non_null(json_object_get(fx->seen[0].data, "verdict"));
    // published once
    s_next(fx, 10);
    assert_int_equal(fx->n_seen, 0);
}

//  --------------------------------------------------------------------------
//  At most MS_NODE_EVENTS_ROWS_PER_TURN rows a turn; an overflow of the
//  queue publishes `reset` instead.

static void
test_rows_bounded_and_reset(void **state)
{
    fx_t *fx = *state;
    s_listen(fx);
    s_turn(fx, 10); // baseline; the next scan 1000 ms on
    s_result(fx, 0);
    const uint8_t *t0 = ms_sf_task_id(&fx->sweep, 0);
    for (int i = 1; i < MS_NODE_EVENTS_ROWS_PER_TURN + 10; i++)
        ms_node_events_result(fx->events, t0, fx->producer);
    ms_events_t *ring = ms_node_events_ring(fx->events);
    uint64_t before = ms_events_last_id(ring);
    s_turn(fx, 10);
    assert_int_equal(ms_events_last_id(ring) - before,
                     MS_NODE_EVENTS_ROWS_PER_TURN);
    s_turn(fx, 10);
    assert_int_equal(ms_events_last_id(ring) - before,
                     MS_NODE_EVENTS_ROWS_PER_TURN + 10);
    // overflow: one reset, no rows
    for (int i = 0; i < MS_NODE_EVENTS_RESULTS_MAX + 1; i++)
        ms_node_events_result(fx->events, t0, fx->producer);
    ms_events_reader_close(&fx->reader);
    s_listen(fx); // read from here on
    s_next(fx, 10);
    assert_int_equal(fx->n_seen, 1);
    assert_string_equal(fx->seen[0].type, "reset");
    s_next(fx, 10);
    assert_int_equal(fx->n_seen, 0);
}

//  --------------------------------------------------------------------------
//  A verdict change comes after its task's queued rows.

static void
test_verdict_after_rows(void **state)
{
    fx_t *fx = *state;
    s_listen(fx);
    s_turn(fx, 10); // baseline; the next scan 1000 ms on
    s_result(fx, 0);
    s_result(fx, 3);
    ms_store_verdict_t v;
    memset(&v, 0, sizeof v);
    v.verdict = MS_VERDICT_VERIFIED;
    v.revision = 2;
    snprintf(v.operators, sizeof v.operators, "alice,bob");
    ms_node_events_verdict(fx->events, ms_sf_task_id(&fx->sweep, 3), &v);
    s_read(fx);
    assert_int_equal(fx->n_seen, 2); // task 0's row still queued
    assert_string_equal(fx->seen[0].type, "result");
    assert_string_equal(fx->seen[1].type, "verdict");
    json_t *d = fx->seen[1].data;
    assert_string_equal(json_string_value(json_object_get(d, "verdict")),
                        "verified");
    assert_int_equal(json_integer_value(json_object_get(d, "verdict_revision")),
                     2);
    json_t *ops = json_object_get(d, "verdict_operators");
    assert_int_equal(json_array_size(ops), 2);
    assert_string_equal(json_string_value(json_array_get(ops, 1)), "bob");
    ms_hash_t sid;
    char shex[MS_HASH_HEX_LEN + 1];
    memcpy(sid.bytes, fx->sweep.sweep_id, MS_HASH_BYTES);
    ms_hash_hex(&sid, shex);
    assert_string_equal(json_string_value(json_object_get(d, "sweep_id")),
                        shex);
    s_next(fx, 10); // task 0's row
    assert_int_equal(s_count(fx, "result"), 1);
    // a task the store does not have: no verdict
    s_clear_seen(fx);
    uint8_t unknown[MS_HASH_BYTES];
    memset(unknown, 0x42, MS_HASH_BYTES);
    ms_node_events_verdict(fx->events, unknown, &v);
    s_read(fx);
    assert_int_equal(fx->n_seen, 0);
}

//  --------------------------------------------------------------------------
//  Peers: appearing, changing state; nothing when nobody listens.

static void
test_peer(void **state)
{
    fx_t *fx = *state;
    uint8_t id[MS_HASH_BYTES];
    memset(id, 0xA1, MS_HASH_BYTES);
    ms_events_t *ring = ms_node_events_ring(fx->events);
    uint64_t before = ms_events_last_id(ring);
    ms_node_events_peer(fx->events, id, MS_PEER_ALIVE, -1);
    assert_int_equal(ms_events_last_id(ring), before);
    s_listen(fx);
    ms_node_events_peer(fx->events, id, MS_PEER_ALIVE, -1);
    ms_node_events_peer(fx->events, id, MS_PEER_SUSPECT, MS_PEER_ALIVE);
    s_read(fx);
    assert_int_equal(fx->n_seen, 2);
    assert_string_equal(fx->seen[0].type, "peer");
    assert_true(
        json_is_null(json_object_get(fx->seen[0].data, "previous_state")));
    assert_string_equal(
        json_string_value(json_object_get(fx->seen[0].data, "state")), "alive");
    assert_string_equal(
        json_string_value(json_object_get(fx->seen[1].data, "state")),
        "suspect");
    assert_string_equal(
        json_string_value(json_object_get(fx->seen[1].data, "previous_state")),
        "alive");
}

//  --------------------------------------------------------------------------
//  Progress once a tick when the counts change; peers' tasks shown as
//  running; a new sweep appears.

static void
test_progress(void **state)
{
    fx_t *fx = *state;
    s_listen(fx);
    s_next(fx, 1000); // baseline: silent
    assert_int_equal(fx->n_seen, 0);
    fx->elsewhere = 1;
    s_next(fx, 500); // a scan: counts changed (one task running elsewhere)
    assert_int_equal(fx->n_seen, 1);
    assert_string_equal(fx->seen[0].type, "progress");
    json_t *d = fx->seen[0].data;
    assert_int_equal(json_integer_value(json_object_get(d, "total")), S_TASKS);
    assert_int_equal(json_integer_value(json_object_get(d, "running")), 1);
    assert_int_equal(json_integer_value(json_object_get(d, "pending")),
                     S_TASKS - 1);
    s_clear_seen(fx);
    s_result(fx, 0);
    s_next(fx, 500); // the row; the scan is not due before 1000 ms
    assert_int_equal(s_count(fx, "result"), 1);
    assert_int_equal(s_count(fx, "progress"), 0);
    s_next(fx, 1000); // due now
    assert_int_equal(s_count(fx, "progress"), 1);
    assert_int_equal(
        json_integer_value(json_object_get(fx->seen[0].data, "done")), 1);
    s_next(fx, 1000); // nothing changed: nothing published
    assert_int_equal(fx->n_seen, 0);
    // a sweep stored now appears
    ms_sf_sweep_t other;
    ms_sf_sweep_seeds(&other, "events-2", 8, 2);
    assert_int_equal(ms_sf_append_sweep(fx->store, fx->origin, &other, 0),
                     MS_OK);
    s_next(fx, 1000);
    assert_int_equal(fx->n_seen, 2);
    assert_string_equal(fx->seen[0].type, "sweep");
    assert_string_equal(
        json_string_value(json_object_get(fx->seen[0].data, "state")),
        "active");
    assert_string_equal(fx->seen[1].type, "progress");
    assert_int_equal(
        json_integer_value(json_object_get(fx->seen[1].data, "total")), 2);
    ms_sf_sweep_free(&other);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_nobody_listens, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_result_rows, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_rows_bounded_and_reset, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_verdict_after_rows, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_peer, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_progress, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
