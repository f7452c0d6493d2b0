/*  =========================================================================
    ms_lifecycle_test - a sweep's life cycle: the actions' names, the
    states that allow them, the records (and their logical times) the
    store applies, the cancel that stops our workers, reopen

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Drives ms_lifecycle over a real store (ms_store_fixture) with a fake
    node behind ms_lifecycle_iface_t whose append writes the records to
    that store as the node's would (so the sweep's state follows them).
*/
#include "ms_lifecycle.h"

#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_store_fixture.h"

//  The fake node.
typedef struct {
    ms_store_t *store;    // where append writes
    uint8_t node_id[32];  // the records' origin
    size_t n_appends;     // iface.append calls
    uint32_t action;      // the last control record's action
    int32_t priority;     // ... its priority
    uint64_t lamport;     // ... its logical time
    size_t n_changed;     // iface.changed calls
    size_t n_stops;       // iface.stop_sweep calls
    uint8_t stopped[32];  // the last one's sweep
    size_t n_events;      // events emitted
    char last_action[16]; // the last event's "action"
    char last_line[200];  // the last log line
} s_fake_t;

static void
s_log(void *arg, const char *line)
{
    s_fake_t *f = arg;
    snprintf(f->last_line, sizeof f->last_line, "%s", line);
}

static void
s_emit(void *arg, json_t *event)
{
    s_fake_t *f = arg;
    assert_string_equal(json_string_value(json_object_get(event, "event")),
                        "control");
    snprintf(f->last_action, sizeof f->last_action, "%s",
             json_string_value(json_object_get(event, "action")));
    f->n_events++;
    json_decref(event);
}

static int
s_append(void *arg, size_t n, const ms_store_payload_t *payloads)
{
    s_fake_t *f = arg;
    assert_int_equal(n, 1);
    assert_int_equal(payloads[0].kind, MS_RECORD_SWEEP_CONTROL);
    f->n_appends++;
    f->action = payloads[0].u.control.action;
    f->priority = payloads[0].u.control.priority;
    f->lamport = payloads[0].u.control.lamport;
    return ms_sf_append(f->store, f->node_id, &payloads[0]);
}

static void
s_changed(void *arg)
{
    ((s_fake_t *) arg)->n_changed++;
}

static void
s_stop_sweep(void *arg, const ms_hash_t *sweep_id)
{
    s_fake_t *f = arg;
    f->n_stops++;
    memcpy(f->stopped, sweep_id->bytes, 32);
}

//  One test's world: a store with a sweep of 3 tasks.
typedef struct {
    s_fake_t fake;
    ms_sf_sweep_t sweep;
    ms_hash_t sweep_id;
    ms_lifecycle_t *life;
} s_world_t;

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_lifecycle_test");
}

static void
s_open(s_world_t *w, ms_sf_t *fx)
{
    memset(w, 0, sizeof *w);
    memset(w->fake.node_id, 0x11, 32);
    w->fake.store = ms_sf_open(fx, NULL, 16 << 20);
    ms_sf_sweep_seeds(&w->sweep, "life", 8, 3);
    assert_int_equal(
        ms_sf_append_sweep(w->fake.store, w->fake.node_id, &w->sweep, 0),
        MS_OK);
    memcpy(w->sweep_id.bytes, w->sweep.sweep_id, 32);
    ms_lifecycle_iface_t iface = {.arg = &w->fake,
                                  .log = s_log,
                                  .emit = s_emit,
                                  .append = s_append,
                                  .changed = s_changed,
                                  .stop_sweep = s_stop_sweep};
    w->life = ms_lifecycle_new(w->fake.store, &iface);
    assert_non_null(w->life);
}

static void
s_close(s_world_t *w)
{
    ms_lifecycle_destroy(&w->life);
    assert_null(w->life);
    ms_lifecycle_destroy(&w->life); // NULL-safe
    ms_sf_sweep_free(&w->sweep);
    ms_store_destroy(&w->fake.store);
}

//  The sweep's state and priority in the store.
static ms_sweep_state_t
s_state(s_world_t *w, int32_t *priority)
{
    ms_store_sweep_t *sw = NULL;
    assert_int_equal(ms_store_get_sweep(w->fake.store, w->sweep.sweep_id, &sw),
                     MS_OK);
    ms_sweep_state_t st = sw->state;
    if (priority)
        *priority = sw->priority;
    ms_store_sweep_destroy(&sw);
    return st;
}

//  --------------------------------------------------------------------------
//  Names: the four a user types, and back.

static void
test_parse_and_names(void **state)
{
    (void) state;
    const char *names[] = {"cancel", "pause", "resume", "priority"};
    const ms_sweep_control_t want[] = {
        MS_SWEEP_CONTROL_CANCEL, MS_SWEEP_CONTROL_PAUSE,
        MS_SWEEP_CONTROL_RESUME, MS_SWEEP_CONTROL_PRIORITY};
    for (size_t i = 0; i < 4; i++) {
        ms_sweep_control_t a = 0;
        assert_int_equal(ms_lifecycle_parse(names[i], &a), MS_OK);
        assert_int_equal(a, want[i]);
        assert_string_equal(ms_lifecycle_name(a), names[i]);
    }
    ms_sweep_control_t a = MS_SWEEP_CONTROL_PAUSE;
    assert_int_equal(ms_lifecycle_parse("stop", &a), MS_ERR_INVALID);
    assert_int_equal(ms_lifecycle_parse("reopen", &a), MS_ERR_INVALID);
    assert_int_equal(ms_lifecycle_parse("Cancel", &a), MS_ERR_INVALID);
    assert_int_equal(ms_lifecycle_parse(NULL, &a), MS_ERR_INVALID);
    assert_int_equal(a, MS_SWEEP_CONTROL_PAUSE); // untouched
    assert_string_equal(ms_lifecycle_name(MS_SWEEP_CONTROL_REOPEN), "reopen");
    assert_string_equal(ms_lifecycle_name((ms_sweep_control_t) 0), "?");
    assert_string_equal(ms_lifecycle_name((ms_sweep_control_t) 99), "?");
}

//  --------------------------------------------------------------------------
//  Pause, priority, resume: one record each, each one logical tick above
//  the last, applied by the store; an event and a log line each.

static void
test_pause_priority_resume(void **state)
{
    s_world_t w;
    s_open(&w, *state);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_PAUSE, 0, &diag),
                     MS_OK);
    assert_int_equal(s_state(&w, NULL), MS_SWEEP_PAUSED);
    assert_int_equal(w.fake.action, MS_SWEEP_CONTROL_PAUSE);
    uint64_t first = w.fake.lamport;
    assert_true(first >= 1);
    assert_string_equal(w.fake.last_action, "pause");
    char want[64];
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&w.sweep_id, hex);
    snprintf(want, sizeof want, "sweep %.12s: pause", hex);
    assert_string_equal(w.fake.last_line, want);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_PRIORITY, 7, &diag),
                     MS_OK);
    int32_t prio = 0;
    assert_int_equal(s_state(&w, &prio), MS_SWEEP_PAUSED);
    assert_int_equal(prio, 7);
    assert_int_equal(w.fake.lamport, first + 1);
    snprintf(want, sizeof want, "sweep %.12s: priority set", hex);
    assert_string_equal(w.fake.last_line, want);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_RESUME, 0, &diag),
                     MS_OK);
    assert_int_equal(s_state(&w, NULL), MS_SWEEP_ACTIVE);
    assert_int_equal(w.fake.lamport, first + 2);
    assert_int_equal(w.fake.n_appends, 3);
    assert_int_equal(w.fake.n_events, 3);
    assert_int_equal(w.fake.n_changed, 3);
    assert_int_equal(w.fake.n_stops, 0); // only a cancel stops workers
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  Cancel stops our workers on the sweep; a second cancel is no error and
//  stores nothing; a cancelled sweep is neither paused nor resumed (but
//  its priority may be set); reopen makes it active again.

static void
test_cancel_then_conflicts_and_reopen(void **state)
{
    s_world_t w;
    s_open(&w, *state);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_CANCEL, 0, &diag),
                     MS_OK);
    assert_int_equal(s_state(&w, NULL), MS_SWEEP_CANCELLED);
    assert_int_equal(w.fake.n_stops, 1);
    assert_memory_equal(w.fake.stopped, w.sweep.sweep_id, 32);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_CANCEL, 0, &diag),
                     MS_OK);
    assert_int_equal(w.fake.n_appends, 1);
    assert_int_equal(w.fake.n_stops, 1);
    ms_diag_clear(&diag);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_PAUSE, 0, &diag),
                     MS_ERR_CONFLICT);
    assert_non_null(strstr(diag.reason, "the sweep is cancelled: it cannot "
                                        "be paused (submit its spec again"));
    ms_diag_clear(&diag);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_RESUME, 0, &diag),
                     MS_ERR_CONFLICT);
    assert_non_null(strstr(diag.reason, "cannot be resumed"));
    assert_int_equal(w.fake.n_appends, 1);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_PRIORITY, 3, &diag),
                     MS_OK);
    assert_int_equal(w.fake.n_appends, 2);
    size_t events = w.fake.n_events;
    assert_int_equal(ms_lifecycle_reopen(w.life, &w.sweep_id), MS_OK);
    assert_int_equal(w.fake.action, MS_SWEEP_CONTROL_REOPEN);
    assert_int_equal(w.fake.n_events, events); // no event for a reopen
    assert_int_equal(s_state(&w, NULL), MS_SWEEP_ACTIVE);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_PAUSE, 0, &diag),
                     MS_OK);
    assert_int_equal(s_state(&w, NULL), MS_SWEEP_PAUSED);
    s_close(&w);
}

//  --------------------------------------------------------------------------
//  An unknown sweep, an action out of range (reopen is none a user may
//  apply): refused, nothing stored.

static void
test_refused(void **state)
{
    s_world_t w;
    s_open(&w, *state);
    ms_hash_t unknown;
    memset(unknown.bytes, 0xee, 32);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(
        ms_lifecycle_apply(w.life, &unknown, MS_SWEEP_CONTROL_PAUSE, 0, &diag),
        MS_ERR_NOTFOUND);
    assert_string_equal(diag.reason, "no such sweep");
    ms_diag_clear(&diag);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        MS_SWEEP_CONTROL_REOPEN, 0, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "action");
    ms_diag_clear(&diag);
    assert_int_equal(ms_lifecycle_apply(w.life, &w.sweep_id,
                                        (ms_sweep_control_t) 0, 0, &diag),
                     MS_ERR_INVALID);
    assert_int_equal(w.fake.n_appends, 0);
    assert_int_equal(w.fake.n_events, 0);
    assert_int_equal(s_state(&w, NULL), MS_SWEEP_ACTIVE);
    s_close(&w);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_names),
        cmocka_unit_test_setup_teardown(test_pause_priority_resume, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_cancel_then_conflicts_and_reopen,
                                        s_setup, ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_refused, s_setup, ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
