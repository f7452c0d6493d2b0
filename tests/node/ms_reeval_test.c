/*  =========================================================================
    ms_reeval_test - re-evaluation sampling, skip rules, the job life
    cycle and kept weights, with a fake node

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification" (Re-evaluation): each case opens a real store,
    blob store and blob fetch in a temporary dir and drives ms_reeval
    through a fake ms_reeval_iface_t (a fake clock, recorded log lines,
    appended records and worker starts):
    - sampling: the same seed samples the same results; fraction 0 samples
      none, 1 all, 0.5 about half;
    - skip rules: our own results, results we re-evaluated already, a
      result sampled twice, and noop results (the store never queues
      them: they have no weights) make no job;
    - the life cycle: a sampled result's row is read, its weights are
      here, a worker starts it, the worker's result is published as an ok
      REEVALUATION (or failed when its digest is not the row's), and the
      job is over; weights never had within reeval_timeout_s make a
      failed record;
    - kept weights: pinned, unpinned by ms_reeval_unkeep, released by
      time (retention) or once their result was re-evaluated.
*/
#include "ms_reeval.h"

#include "ms_blob_fetch.h"
#include "ms_blob_store.h"
#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_wire.h"

#include <jansson.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_store_fixture.h"

#define ID MS_STORE_ID_BYTES
#define MAX_LINES 64
#define MAX_PAYLOADS 16

//  The fake node: what ms_reeval asked of it and what it answers.
typedef struct {
    ms_sf_t *fx;                // the temporary dir
    ms_store_t *store;          // the node's store
    ms_blob_store_t *blobs;     // its blob store
    ms_blob_fetch_t *fetch;     // its blob fetch (a fake network)
    int64_t now;                // the fake clock, ms
    char lines[MAX_LINES][512]; // logged lines
    int n_lines;                // how many
    ms_wire_reevaluation_t published[MAX_PAYLOADS]; // appended records
    int n_published;                                // how many
    int n_events;                                   // events emitted
    uint8_t peers[4][ID];                           // live peers
    size_t n_peers;                                 // how many
    int keep;                                       // what sweep_keep answers
    json_t *dataset;          // what dataset answers (NULL: none)
    bool worker_free;         // what worker_free answers
    int n_starts;             // workers started
    ms_reeval_run_t last_run; // the last start (config dropped)
    char last_path[512];      // its weights path
    int n_sends;              // blob messages sent
} fake_t;

static void
s_fake_log(void *arg, const char *line)
{
    fake_t *f = arg;
    if (f->n_lines < MAX_LINES)
        snprintf(f->lines[f->n_lines++], sizeof f->lines[0], "%s", line);
}

static int
s_fake_append(void *arg, const ms_store_payload_t *p)
{
    fake_t *f = arg;
    assert_int_equal(p->kind, MS_RECORD_REEVALUATION);
    if (f->n_published < MAX_PAYLOADS)
        f->published[f->n_published++] = p->u.reeval;
    return MS_OK;
}

static void
s_fake_emit(void *arg, json_t *event)
{
    fake_t *f = arg;
    assert_non_null(event);
    f->n_events++;
    json_decref(event);
}

static size_t
s_fake_live_peers(void *arg, uint8_t (**out)[MS_HASH_BYTES])
{
    fake_t *f = arg;
    *out = calloc(f->n_peers + 1, MS_HASH_BYTES);
    memcpy(*out, f->peers, f->n_peers * MS_HASH_BYTES);
    return f->n_peers;
}

static int
s_fake_sweep_keep(void *arg, const uint8_t sweep_id[MS_HASH_BYTES])
{
    (void) sweep_id;
    return ((fake_t *) arg)->keep;
}

static const json_t *
s_fake_dataset(void *arg, const ms_hash_t *sweep_id)
{
    (void) sweep_id;
    return ((fake_t *) arg)->dataset;
}

static bool
s_fake_worker_free(void *arg)
{
    return ((fake_t *) arg)->worker_free;
}

static int
s_fake_start(void *arg, const ms_reeval_run_t *run, int *worker)
{
    fake_t *f = arg;
    f->last_run = *run;
    snprintf(f->last_path, sizeof f->last_path, "%s", run->weights_path);
    json_decref(run->config); // the node owns it on MS_OK
    f->last_run.config = NULL;
    *worker = 3;
    f->n_starts++;
    return MS_OK;
}

static int64_t
s_fake_now(void *arg)
{
    return ((fake_t *) arg)->now;
}

static int
s_fake_send(void *arg, const uint8_t to[MS_BLOB_PEER_ID_BYTES],
            const ms_wire_envelope_t *env)
{
    (void) to;
    (void) env;
    ((fake_t *) arg)->n_sends++;
    return MS_OK;
}

static void
s_fetch_done(void *arg, const ms_hash_t *hash, int status, const char *reason)
{
    (void) arg;
    (void) hash;
    (void) status;
    (void) reason;
}

//  --------------------------------------------------------------------------
//  Fixture: the fake node with its store and blobs.

static int
s_setup(void **state)
{
    fake_t *f = calloc(1, sizeof *f);
    if (!f || ms_sf_setup((void **) &f->fx, "ms_reeval_test") != 0)
        return -1;
    *state = f;
    return 0;
}

static int
s_teardown(void **state)
{
    fake_t *f = *state;
    ms_blob_fetch_destroy(&f->fetch);
    ms_blob_store_destroy(&f->blobs);
    ms_store_destroy(&f->store);
    json_decref(f->dataset);
    void *fx = f->fx;
    ms_sf_teardown(&fx);
    free(f);
    return 0;
}

//  Open the store, blob store and fetch of F; its defaults.
static void
s_open(fake_t *f)
{
    f->store = ms_sf_open(f->fx, NULL, 4 << 20);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/data", f->fx->root);
    ms_diag_t diag;
    assert_int_equal(ms_blob_store_open(&f->blobs, dir, 64 << 20, &diag),
                     MS_OK);
    ms_blob_transport_t tr = {.arg = f, .send = s_fake_send};
    f->fetch = ms_blob_fetch_new(f->blobs, NULL, &tr, s_fetch_done, f);
    assert_non_null(f->fetch);
    f->now = 1000000;
    f->keep = MS_KEEP_WEIGHTS_SAMPLED;
    f->dataset = json_pack("{s:s}", "name", "fashion-mnist");
    f->worker_free = true;
}

//  A re-evaluator over F with FRACTION and SEED; this node is 0xAA x 32.
static ms_reeval_t *
s_reeval(fake_t *f, double fraction, uint64_t seed)
{
    ms_reeval_config_t cfg = {.reevaluate_fraction = fraction,
                              .reeval_timeout_s = 120,
                              .keep_retention_s = 60,
                              .seed = {seed, seed * 7 + 1}};
    memset(cfg.node_id, 0xAA, ID);
    ms_reeval_iface_t iface = {.arg = f,
                               .log = s_fake_log,
                               .append = s_fake_append,
                               .emit = s_fake_emit,
                               .live_peers = s_fake_live_peers,
                               .sweep_keep = s_fake_sweep_keep,
                               .dataset = s_fake_dataset,
                               .worker_free = s_fake_worker_free,
                               .start = s_fake_start,
                               .now_ms = s_fake_now};
    ms_reeval_t *r = ms_reeval_new(f->store, f->blobs, f->fetch, &cfg, &iface);
    assert_non_null(r);
    return r;
}

//  A sweep of one task (noop or training, replicas 1) merged from origin
//  0xEE (training) or 0xEF (noop); its task id into TASK_ID.
static void
s_sweep(fake_t *f, bool noop, uint8_t task_id[ID])
{
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "name: reeval\ndataset: fashion-mnist\nmethod: grid\n"
             "parameters:\n  hidden_layers: {value: 1}\n"
             "  width: {value: 8}\n  epochs: {value: 1}\n"
             "  seed: {value: 5}\n%s",
             noop ? "  kind: {value: noop}\n" : "");
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_spec_parse(yaml, strlen(yaml), NULL, &spec, &diag),
                     MS_OK);
    memcpy(task_id, ms_spec_task_id(spec, 0)->bytes, ID);
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, ms_spec_sweep_id(spec)->bytes, ID);
    p.u.sweep.spec_json = ms_spec_canonical(spec, &p.u.sweep.spec_len);
    uint8_t origin[ID];
    memset(origin, noop ? 0xEF : 0xEE, ID);
    ms_sf_merge_one(f->store, origin, 1, &p);
    ms_spec_destroy(&spec);
}

//  An ok result of TASK_ID by node NODE x 32 naming weights BLOB (NULL:
//  none) of digest DIGEST, merged at seq 1.
static void
s_result(fake_t *f, const uint8_t *task_id, uint8_t node, const ms_hash_t *blob,
         const char *digest)
{
    uint8_t origin[ID];
    memset(origin, node, ID);
    ms_hash_t nid;
    memcpy(nid.bytes, origin, ID);
    char nhex[MS_HASH_HEX_LEN + 1], bhex[MS_HASH_HEX_LEN + 1] = "";
    ms_hash_hex(&nid, nhex);
    char weights[300] = "";
    if (blob) {
        ms_hash_hex(blob, bhex);
        snprintf(weights, sizeof weights,
                 ",\"weights_blob\":\"%s\",\"weights_bytes\":100,"
                 "\"weights_digest\":\"%s\"",
                 bhex, digest);
    }
    char row[768];
    snprintf(row, sizeof row,
             "{\"status\":\"ok\",\"node_id\":\"%s\",\"counted\":true,"
             "\"test_accuracy\":0.9,\"test_loss\":0.3,"
             "\"val_accuracy\":0.9%s}",
             nhex, weights);
    ms_store_payload_t p = {.kind = MS_RECORD_RESULT};
    memcpy(p.u.result.task_id, task_id, ID);
    p.u.result.row_json = row;
    p.u.result.row_len = strlen(row);
    p.u.result.epoch = 1;
    ms_sf_merge_one(f->store, origin, 1, &p);
}

//  Whether F logged LINE.
static bool
s_logged(const fake_t *f, const char *line)
{
    for (int i = 0; i < f->n_lines; i++)
        if (strcmp(f->lines[i], line) == 0)
            return true;
    return false;
}

//  A fabricated new result I of another node (its own operator).
static ms_store_new_result_t
s_nr(uint32_t i)
{
    ms_store_new_result_t nr;
    ms_sf_id(nr.task_id, 0x50, i);
    ms_sf_id(nr.node_id, 0x60, i % 7);
    ms_sf_id(nr.record_hash, 0x70, i);
    return nr;
}

//  --------------------------------------------------------------------------
//  The same seed samples the same results; the fraction bounds them.

static void
test_sample_fraction_deterministic(void **state)
{
    fake_t *f = *state;
    s_open(f);
    // With two live peers of other operators this node is one of the two
    // copy holders of about two results in three: a job is a sample or a
    // copy; only samples are counted (and logged).
    ms_sf_id(f->peers[0], 0x61, 1);
    ms_sf_id(f->peers[1], 0x62, 2);
    f->n_peers = 2;
    enum { N = 200 };
    uint64_t sampled[4];
    double fractions[4] = {0.5, 0.5, 0.0, 1.0};
    char first[MAX_LINES][512];
    for (int k = 0; k < 4; k++) {
        f->n_lines = 0;
        ms_reeval_t *r = s_reeval(f, fractions[k], 42);
        for (uint32_t i = 0; i < N; i++) {
            ms_store_new_result_t nr = s_nr(i);
            ms_reeval_sample(r, &nr, f->now);
        }
        ms_reeval_stats_t st;
        ms_reeval_stats(r, &st);
        sampled[k] = st.n_sampled;
        assert_true(st.n_pending >= st.n_sampled);
        if (k == 0)
            memcpy(first, f->lines, sizeof first);
        else if (k == 1)
            assert_memory_equal(first, f->lines, sizeof first);
        ms_reeval_destroy(&r);
        assert_null(r);
    }
    assert_int_equal(sampled[0], sampled[1]);
    assert_true(sampled[0] > N / 2 - 30 && sampled[0] < N / 2 + 30);
    assert_int_equal(sampled[2], 0);
    assert_int_equal(sampled[3], N);
    // Another seed samples other results.
    f->n_lines = 0;
    ms_reeval_t *r = s_reeval(f, 0.5, 43);
    for (uint32_t i = 0; i < N; i++) {
        ms_store_new_result_t nr = s_nr(i);
        ms_reeval_sample(r, &nr, f->now);
    }
    assert_memory_not_equal(first, f->lines, sizeof first);
    ms_reeval_destroy(&r);
}

//  --------------------------------------------------------------------------
//  Own results, results re-evaluated by us, a second sample of one result
//  and noop results make no job.

static void
test_skip_rules(void **state)
{
    fake_t *f = *state;
    s_open(f);
    ms_reeval_t *r = s_reeval(f, 1.0, 7);
    ms_reeval_stats_t st;
    // Our own result: no job.
    ms_store_new_result_t own = s_nr(1);
    memset(own.node_id, 0xAA, ID);
    ms_reeval_sample(r, &own, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pending, 0);
    // One result sampled twice: one job.
    ms_store_new_result_t nr = s_nr(2);
    ms_reeval_sample(r, &nr, f->now);
    ms_reeval_sample(r, &nr, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pending, 1);
    assert_int_equal(st.n_sampled, 1);
    // A result we re-evaluated already (our REEVALUATION is stored).
    uint8_t task_id[ID];
    s_sweep(f, false, task_id);
    ms_store_new_result_t done = s_nr(3);
    memcpy(done.task_id, task_id, ID);
    ms_store_payload_t e = {.kind = MS_RECORD_REEVALUATION};
    memcpy(e.u.reeval.task_id, task_id, ID);
    memcpy(e.u.reeval.target, done.record_hash, ID);
    e.u.reeval.status = MS_WIRE_REEVAL_FAILED;
    snprintf(e.u.reeval.reason, sizeof e.u.reeval.reason, "x");
    uint8_t me[ID];
    memset(me, 0xAA, ID);
    ms_sf_merge_one(f->store, me, 1, &e);
    ms_reeval_sample(r, &done, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pending, 1);
    // A noop task's ok result is never queued, so never sampled: the
    // tick drains the store's queue and makes no job of it.
    uint8_t noop_task[ID];
    s_sweep(f, true, noop_task);
    s_result(f, noop_task, 0x11, NULL, NULL);
    ms_reeval_tick(r, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_sampled, 1);
    // ... while a training task's result is.
    s_result(f, task_id, 0x12, NULL, NULL);
    f->now += MS_REEVAL_TICK_MS;
    ms_reeval_tick(r, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_sampled, 2);
    ms_reeval_destroy(&r);
}

//  --------------------------------------------------------------------------
//  A sampled result whose weights are here: started on a worker, its
//  worker's result published as an ok record that agrees.

static void
test_job_life_cycle(void **state)
{
    fake_t *f = *state;
    s_open(f);
    uint8_t task_id[ID];
    s_sweep(f, false, task_id);
    uint8_t bytes[100];
    memset(bytes, 0x5A, sizeof bytes);
    ms_hash_t blob;
    assert_int_equal(ms_blob_store_put(f->blobs, bytes, sizeof bytes, &blob),
                     MS_OK);
    s_result(f, task_id, 0x11, &blob, "d1");
    ms_reeval_t *r = s_reeval(f, 1.0, 9);
    // No free worker: the job waits.
    f->worker_free = false;
    ms_reeval_tick(r, f->now);
    assert_int_equal(f->n_starts, 0);
    ms_reeval_stats_t st;
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_sampled, 1);
    assert_int_equal(st.n_pending, 1);
    f->worker_free = true;
    f->now += 2000;
    ms_reeval_tick(r, f->now);
    assert_int_equal(f->n_starts, 1);
    assert_memory_equal(f->last_run.task_id.bytes, task_id, ID);
    assert_int_equal(f->last_run.started_ms, f->now);
    char *path = NULL;
    assert_int_equal(ms_blob_store_path(f->blobs, &blob, &path), MS_OK);
    assert_string_equal(f->last_path, path);
    free(path);
    char thex[MS_HASH_HEX_LEN + 1], line[256];
    ms_hash_t tid;
    memcpy(tid.bytes, task_id, ID);
    ms_hash_hex(&tid, thex);
    snprintf(line, sizeof line,
             "re-evaluation of a result of task %.12s: worker 3 checks its "
             "weights",
             thex);
    assert_true(s_logged(f, line));
    // Running: a tick starts nothing more.
    f->now += 2000;
    ms_reeval_tick(r, f->now);
    assert_int_equal(f->n_starts, 1);
    // The worker's result: published ok, the job is over.
    uint8_t target[ID];
    memcpy(target, f->last_run.target, ID);
    ms_worker_event_t ev = {.kind = MS_WORKER_EVENT_RESULT};
    ev.body = json_pack("{s:s, s:f, s:f, s:f, s:f}", "weights_digest", "d1",
                        "test_accuracy", 0.9, "test_loss", 0.3, "val_accuracy",
                        0.9, "val_loss", 0.31);
    ms_reeval_worker_event(r, target, &ev);
    json_decref(ev.body);
    assert_int_equal(f->n_published, 1);
    assert_int_equal(f->published[0].status, MS_WIRE_REEVAL_OK);
    assert_memory_equal(f->published[0].task_id, task_id, ID);
    assert_memory_equal(f->published[0].target, target, ID);
    assert_true(fabs(f->published[0].val_loss - 0.31) < 1e-12);
    assert_int_equal(f->n_events, 1);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_published, 1);
    assert_int_equal(st.n_agreed, 1);
    assert_int_equal(st.n_pending, 0);
    // With no peers this node is one of the result's two copy holders: it
    // keeps the weights it checked for the retention.
    assert_int_equal(st.n_copied, 1);
    assert_int_equal(st.n_pinned, 1);
    ms_reeval_destroy(&r);
}

//  --------------------------------------------------------------------------
//  A worker's weights that do not hash to the row's digest are a failed
//  record; weights never had are one after reeval_timeout_s.

static void
test_job_failures(void **state)
{
    fake_t *f = *state;
    s_open(f);
    uint8_t task_id[ID];
    s_sweep(f, false, task_id);
    uint8_t bytes[100];
    memset(bytes, 0x5B, sizeof bytes);
    ms_hash_t blob, absent;
    assert_int_equal(ms_blob_store_put(f->blobs, bytes, sizeof bytes, &blob),
                     MS_OK);
    memset(absent.bytes, 0x33, ID);
    s_result(f, task_id, 0x11, &blob, "d1");
    s_result(f, task_id, 0x12, &absent, "d2");
    ms_reeval_t *r = s_reeval(f, 1.0, 11);
    ms_reeval_tick(r, f->now);
    assert_int_equal(f->n_starts, 1);
    ms_worker_event_t ev = {.kind = MS_WORKER_EVENT_RESULT};
    ev.body = json_pack("{s:s, s:f, s:f}", "weights_digest", "other",
                        "test_accuracy", 0.9, "test_loss", 0.3);
    ms_reeval_worker_event(r, f->last_run.target, &ev);
    json_decref(ev.body);
    assert_int_equal(f->n_published, 1);
    assert_int_equal(f->published[0].status, MS_WIRE_REEVAL_FAILED);
    assert_string_equal(f->published[0].reason,
                        "the weights blob is not the published "
                        "weights_digest");
    // The other result's weights are nowhere (no peer linked).
    f->now += 120 * 1000;
    ms_reeval_tick(r, f->now);
    assert_int_equal(f->n_published, 2);
    assert_int_equal(f->published[1].status, MS_WIRE_REEVAL_FAILED);
    assert_string_equal(f->published[1].reason,
                        "weights not had in 120 s: cannot fetch the "
                        "weights: no peer linked");
    ms_reeval_stats_t st;
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_failed, 2);
    assert_int_equal(st.n_pending, 0);
    ms_reeval_destroy(&r);
}

//  --------------------------------------------------------------------------
//  Kept weights: pinned, unkept, released by retention or once checked.

static void
test_kept_weights(void **state)
{
    fake_t *f = *state;
    s_open(f);
    ms_reeval_t *r = s_reeval(f, 0.0, 13);
    uint8_t bytes[64];
    memset(bytes, 0x01, sizeof bytes);
    ms_hash_t a, b, task;
    assert_int_equal(ms_blob_store_put(f->blobs, bytes, sizeof bytes, &a),
                     MS_OK);
    bytes[0] = 2;
    assert_int_equal(ms_blob_store_put(f->blobs, bytes, sizeof bytes, &b),
                     MS_OK);
    memset(task.bytes, 0x44, ID);
    ms_reeval_keep(r, &a, &task, true, false, NULL);
    ms_reeval_keep(r, &b, &task, false, true, NULL);
    ms_reeval_stats_t st;
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pinned, 2);
    ms_reeval_unkeep(r, &b);
    ms_reeval_unkeep(r, &b); // not kept: nothing
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pinned, 1);
    assert_int_equal(ms_blob_store_unpin(f->blobs, &b), MS_ERR_NOTFOUND);
    // Before its retention it stays; after it, it goes.
    f->now += 59 * 1000;
    ms_reeval_tick(r, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pinned, 1);
    f->now += 1000;
    ms_reeval_tick(r, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pinned, 0);
    // Our own result's weights learn their target from the new result,
    // and go once a re-evaluation of it is stored.
    uint8_t task_id[ID];
    s_sweep(f, false, task_id);
    memcpy(task.bytes, task_id, ID);
    ms_reeval_keep(r, &a, &task, true, false, NULL);
    uint8_t me[ID], other[ID];
    memset(me, 0xAA, ID);
    memset(other, 0xBB, ID);
    ms_store_new_result_t own;
    memcpy(own.task_id, task_id, ID);
    memcpy(own.node_id, me, ID);
    ms_sf_id(own.record_hash, 0x71, 1);
    ms_reeval_sample(r, &own, f->now);
    f->now += MS_REEVAL_TICK_MS;
    ms_reeval_tick(r, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pinned, 1);
    ms_store_payload_t e = {.kind = MS_RECORD_REEVALUATION};
    memcpy(e.u.reeval.task_id, task_id, ID);
    memcpy(e.u.reeval.target, own.record_hash, ID);
    e.u.reeval.status = MS_WIRE_REEVAL_OK;
    ms_sf_merge_one(f->store, other, 1, &e);
    f->now += MS_REEVAL_TICK_MS;
    ms_reeval_tick(r, f->now);
    ms_reeval_stats(r, &st);
    assert_int_equal(st.n_pinned, 0);
    ms_reeval_destroy(&r);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sample_fraction_deterministic,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_skip_rules, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_job_life_cycle, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_job_failures, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_kept_weights, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
