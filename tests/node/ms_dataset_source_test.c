/*  =========================================================================
    ms_dataset_source_test - a sweep's dataset: resolved, fetched, ready

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Drives ms_dataset_source through its iface as the node does, over a
    real temporary store (SWEEP and DATASET records appended as a
    submitting node would) and a real blob store; the iface is a fake
    that holds the blob store (or none: a node alone), lists fake peers,
    records the fetches asked for (and can refuse them), and counts the
    ready reports. Cases: a dataset record whose blobs are held becomes
    ready at once (workers' object of blob paths, dataset file written);
    missing blobs are asked of the peers, once, and the dataset is ready
    when the last one arrives; a failed fetch is tried again only after
    the retry time; no peer, a record out of contract (a file too big)
    or no record ask nothing; an upload whose bytes do not hash to its
    name is refused with a clear error and the blobs held stay; the blob
    questions of the HTTP threads; built-in datasets alone and in a pool;
    file roles and the dataset file.
*/
#include "ms_dataset_source.h"

#include "ms_blob_store.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ms_node_testdata.h"
#include "ms_store_fixture.h"

#include <jansson.h>
#include <limits.h>

#define S_MAX_ASKED 8 // fetches remembered

//  The test's node: a real store and blob store, and what was asked.
typedef struct {
    char root[256];                // temp dir (ms_td_setup: data/fashion-mnist)
    char datasets_dir[512];        // ROOT/datasets
    ms_store_t *store;             // ROOT/store
    ms_blob_store_t *blobs;        // ROOT/node/blobs
    bool alone;                    // the iface says: no blob store
    ms_dataset_source_t *src;      // under test
    ms_clock_fake_t fake;          // its monotonic clock
    ms_clock_t clock;              // readers of fake
    uint8_t origin[MS_HASH_BYTES]; // the submitting node
    uint64_t n_records;            // records appended by it
    size_t n_peers;                // live peers the iface lists
    int fetch_rc;                  // what the iface's fetch returns
    int n_fetches;                 // fetch calls
    ms_hash_t asked[S_MAX_ASKED];  // their hashes
    uint64_t asked_size[S_MAX_ASKED]; // their sizes
    size_t asked_peers;               // peers given to the last one
    int n_ready;                      // ready reports
    ms_hash_t ready_sweep;            // the last one's sweep
    int n_log;                        // log lines
    char last_log[2048];              // the last one
} s_fx_t;

//  The two files of the test's file dataset (CSV, label y).
static const char s_train[] = "y,a,b\n0,1,2\n1,3,4\n0,1,3\n1,4,4\n";
static const char s_test[] = "y,a,b\n0,1,2\n1,3,5\n";

//  --------------------------------------------------------------------------
//  iface: the node's log.

static void
s_log(void *arg, const char *line)
{
    s_fx_t *fx = arg;
    fx->n_log++;
    snprintf(fx->last_log, sizeof fx->last_log, "%s", line);
}

//  --------------------------------------------------------------------------
//  iface: the node's blob store, or none (alone).

static ms_blob_store_t *
s_blobs(void *arg)
{
    s_fx_t *fx = arg;
    return fx->alone ? NULL : fx->blobs;
}

//  --------------------------------------------------------------------------
//  iface: n_peers fake peers (ids 1, 2, ...).

static size_t
s_live_peers(void *arg, uint8_t (**out)[MS_BLOB_PEER_ID_BYTES])
{
    s_fx_t *fx = arg;
    uint8_t(*peers)[MS_BLOB_PEER_ID_BYTES] =
        calloc(fx->n_peers + 1, sizeof *peers);
    assert_non_null(peers);
    for (size_t i = 0; i < fx->n_peers; i++)
        memset(peers[i], (int) i + 1, MS_BLOB_PEER_ID_BYTES);
    *out = peers;
    return fx->n_peers;
}

//  --------------------------------------------------------------------------
//  iface: a fetch asked for (remembered; fetch_rc returned).

static int
s_fetch(void *arg, const ms_hash_t *hash, uint64_t size,
        const uint8_t (*peers)[MS_BLOB_PEER_ID_BYTES], size_t n_peers,
        int64_t now)
{
    s_fx_t *fx = arg;
    assert_non_null(peers);
    assert_int_equal(now, fx->fake.mono_ms);
    if (fx->n_fetches < S_MAX_ASKED) {
        fx->asked[fx->n_fetches] = *hash;
        fx->asked_size[fx->n_fetches] = size;
    }
    fx->n_fetches++;
    fx->asked_peers = n_peers;
    return fx->fetch_rc;
}

//  --------------------------------------------------------------------------
//  iface: a sweep's dataset is ready.

static void
s_ready(void *arg, const ms_hash_t *sweep_id)
{
    s_fx_t *fx = arg;
    fx->n_ready++;
    fx->ready_sweep = *sweep_id;
}

//  --------------------------------------------------------------------------
//  Make the dataset source with a limit of MAX_BYTES per dataset.

static void
s_make(s_fx_t *fx, int64_t max_bytes)
{
    ms_dataset_source_destroy(&fx->src);
    ms_dataset_source_config_t cfg = {.datasets_dir = fx->datasets_dir,
                                      .max_dataset_bytes = max_bytes,
                                      .clock = &fx->clock};
    ms_dataset_source_iface_t iface = {.arg = fx,
                                       .log = s_log,
                                       .blobs = s_blobs,
                                       .live_peers = s_live_peers,
                                       .fetch = s_fetch,
                                       .ready = s_ready};
    fx->src = ms_dataset_source_new(fx->store, &cfg, &iface);
    assert_non_null(fx->src);
}

static int
s_setup(void **state)
{
    s_fx_t *fx = calloc(1, sizeof *fx);
    // a small first map (it grows): valgrind
    if (!fx ||
        ms_sf_node_dir(fx->root, fx->datasets_dir, &fx->store, 4 << 20) != 0)
        return -1;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/node", fx->root);
    ms_diag_t diag;
    if (ms_blob_store_open(&fx->blobs, dir, 0, &diag) != MS_OK)
        return -1;
    memset(fx->origin, 0x5a, sizeof fx->origin);
    fx->fake.mono_ms = 100000;
    ms_clock_fake(&fx->fake, &fx->clock);
    fx->n_peers = 2;
    fx->fetch_rc = MS_OK;
    *state = fx;
    s_make(fx, (int64_t) 1 << 30);
    return 0;
}

static int
s_teardown(void **state)
{
    s_fx_t *fx = *state;
    ms_dataset_source_destroy(&fx->src);
    ms_blob_store_destroy(&fx->blobs);
    ms_store_destroy(&fx->store);
    ms_td_teardown(fx->root);
    free(fx);
    return 0;
}

//  --------------------------------------------------------------------------
//  Append one record of the submitting node.

static void
s_append(s_fx_t *fx, const ms_store_payload_t *p)
{
    assert_int_equal(ms_sf_append(fx->store, fx->origin, p), MS_OK);
    fx->n_records++;
}

//  --------------------------------------------------------------------------
//  A file dataset sweep NAME over the files TRAIN and TEST (their texts),
//  as a submitting node stores it: the SWEEP record and (unless
//  !WITH_RECORD) the DATASET record naming the files (train's size given
//  as TRAIN_SIZE, 0: the real one). The sweep id into *SID, the files'
//  hashes into TH and EH. (Sweeps of the same files share one DATASET
//  record, keyed by the files' hashes.)

static void
s_files_sweep(s_fx_t *fx, const char *name, const char *train, const char *test,
              bool with_record, uint64_t train_size, ms_hash_t *sid,
              ms_hash_t *th, ms_hash_t *eh)
{
    char yaml[600];
    snprintf(yaml, sizeof yaml,
             "name: %s\ndataset: {train: a.csv, test: b.csv, label: y}\n"
             "parameters:\n  width: {values: [4, 8]}\n  epochs: {value: 1}\n",
             name);
    ms_hash_bytes(train, strlen(train), th);
    ms_hash_bytes(test, strlen(test), eh);
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_spec_parse(yaml, strlen(yaml), NULL, &spec, &diag),
                     MS_OK);
    assert_int_equal(ms_spec_set_dataset_hashes(spec, th, eh), MS_OK);
    *sid = *ms_spec_sweep_id(spec);
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, sid->bytes, MS_HASH_BYTES);
    p.u.sweep.spec_json = ms_spec_canonical(spec, &p.u.sweep.spec_len);
    s_append(fx, &p);
    if (with_record) {
        ms_wire_dataset_file_t files[2];
        memset(files, 0, sizeof files);
        snprintf(files[0].role, sizeof files[0].role, "train");
        files[0].size = train_size ? train_size : strlen(train);
        memcpy(files[0].hash, th->bytes, MS_HASH_BYTES);
        snprintf(files[1].role, sizeof files[1].role, "test");
        files[1].size = strlen(test);
        memcpy(files[1].hash, eh->bytes, MS_HASH_BYTES);
        ms_store_payload_t d = {.kind = MS_RECORD_DATASET};
        ms_hash_t dh;
        assert_int_equal(
            ms_dataset_source_hash(ms_spec_dataset(spec), &dh, NULL), MS_OK);
        memcpy(d.u.dataset.hash, dh.bytes, MS_HASH_BYTES);
        d.u.dataset.name = "files";
        d.u.dataset.files = files;
        d.u.dataset.n_files = 2;
        s_append(fx, &d);
    }
    ms_spec_destroy(&spec);
}

//  --------------------------------------------------------------------------
//  A file dataset sweep NAME over the test's two files (s_files_sweep).

static void
s_file_sweep(s_fx_t *fx, const char *name, bool with_record,
             uint64_t train_size, ms_hash_t *sid, ms_hash_t *th, ms_hash_t *eh)
{
    s_files_sweep(fx, name, s_train, s_test, with_record, train_size, sid, th,
                  eh);
}

//  --------------------------------------------------------------------------
//  Hold the blob of TEXT in the blob store.

static void
s_hold(s_fx_t *fx, const char *text)
{
    ms_hash_t h;
    assert_int_equal(ms_blob_store_put(fx->blobs, text, strlen(text), &h),
                     MS_OK);
}

//  --------------------------------------------------------------------------
//  Assert that DATASET is the workers' object of the test's blobs.

static void
s_assert_blob_object(s_fx_t *fx, const json_t *dataset, const ms_hash_t *th,
                     const ms_hash_t *eh)
{
    assert_non_null(dataset);
    char *path = NULL;
    assert_int_equal(ms_blob_store_path(fx->blobs, th, &path), MS_OK);
    assert_string_equal(json_string_value(json_object_get(dataset, "train")),
                        path);
    free(path);
    assert_int_equal(ms_blob_store_path(fx->blobs, eh, &path), MS_OK);
    assert_string_equal(json_string_value(json_object_get(dataset, "test")),
                        path);
    free(path);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(th, hex);
    assert_string_equal(
        json_string_value(json_object_get(dataset, "train_hash")), hex);
    assert_string_equal(json_string_value(json_object_get(dataset, "label")),
                        "y");
}

//  --------------------------------------------------------------------------
//  A dataset record whose blobs are held: ready on the first fetch, with
//  no fetch asked; the dataset file is written (a restart finds it) and
//  the node hears of it once.

static void
test_held_blobs_ready_at_once(void **state)
{
    s_fx_t *fx = *state;
    ms_hash_t sid, th, eh;
    s_file_sweep(fx, "held", true, 0, &sid, &th, &eh);
    s_hold(fx, s_train);
    s_hold(fx, s_test);

    ms_dataset_source_sweep_t ds;
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_null(ds.dataset);
    assert_non_null(ds.error);
    assert_non_null(strstr(ds.error, "not known to this node"));

    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_fetches, 0);
    assert_int_equal(fx->n_ready, 1);
    assert_memory_equal(fx->ready_sweep.bytes, sid.bytes, MS_HASH_BYTES);
    assert_non_null(strstr(fx->last_log, "dataset held, hashes verified"));
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    s_assert_blob_object(fx, ds.dataset, &th, &eh);
    assert_null(ds.error);
    assert_int_equal(ds.bytes, (int64_t) (strlen(s_train) + strlen(s_test)));
    assert_false(ds.fetching);

    ms_dataset_source_stats_t st;
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_fetched, 0); // held, not fetched
    assert_int_equal(st.n_fetches_asked, 0);

    // A new source over the same dir (a restart) finds the dataset file.
    s_make(fx, (int64_t) 1 << 30);
    s_assert_blob_object(fx, ms_dataset_source_dataset(fx->src, &sid), &th,
                         &eh);
    assert_int_equal(fx->n_ready, 1);
}

//  --------------------------------------------------------------------------
//  Missing blobs are asked of the live peers, each once, with their sizes;
//  the want and more fetches ask nothing while they run; the dataset is
//  ready (fetched, counted) when the last blob arrives.

static void
test_missing_blobs_asked_then_ready(void **state)
{
    s_fx_t *fx = *state;
    ms_hash_t sid, th, eh;
    s_file_sweep(fx, "missing", true, 0, &sid, &th, &eh);
    s_hold(fx, s_test); // only test is here

    ms_dataset_source_want(fx->src, sid.bytes);
    assert_int_equal(fx->n_fetches, 1);
    assert_memory_equal(fx->asked[0].bytes, th.bytes, MS_HASH_BYTES);
    assert_int_equal(fx->asked_size[0], strlen(s_train));
    assert_int_equal(fx->asked_peers, 2);
    assert_non_null(strstr(fx->last_log, "fetching 2 file(s) by hash from 2"));
    ms_dataset_source_sweep_t ds;
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_true(ds.fetching);
    assert_null(ds.dataset);

    ms_dataset_source_want(fx->src, sid.bytes);
    fx->fake.mono_ms += 10 * MS_DATASET_SOURCE_RETRY_MS;
    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_fetches, 1); // nothing asked twice

    // Another blob's end changes nothing; the train blob's makes it ready.
    ms_dataset_source_blob_done(fx->src, &eh, MS_OK);
    assert_int_equal(fx->n_ready, 0);
    s_hold(fx, s_train);
    ms_dataset_source_blob_done(fx->src, &th, MS_OK);
    assert_int_equal(fx->n_ready, 1);
    assert_non_null(strstr(fx->last_log, "dataset fetched, hashes verified"));
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_false(ds.fetching);
    s_assert_blob_object(fx, ds.dataset, &th, &eh);

    ms_dataset_source_stats_t st;
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_fetched, 1);
    assert_int_equal(st.n_fetches_asked, 1);

    // Ready: neither want nor fetch asks again.
    ms_dataset_source_want(fx->src, sid.bytes);
    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_fetches, 1);
}

//  --------------------------------------------------------------------------
//  A failed fetch is tried again only MS_DATASET_SOURCE_RETRY_MS later;
//  a fetch the node cannot start is logged and tried again too; with no
//  peer nothing is asked.

static void
test_failed_fetch_retried_later(void **state)
{
    s_fx_t *fx = *state;
    ms_hash_t sid, th, eh;
    s_file_sweep(fx, "retry", true, 0, &sid, &th, &eh);

    fx->n_peers = 0;
    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_fetches, 0);
    ms_dataset_source_stats_t st;
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_fetches_asked, 0);

    fx->n_peers = 3;
    fx->fake.mono_ms += MS_DATASET_SOURCE_RETRY_MS;
    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_fetches, 2); // train and test
    assert_int_equal(fx->asked_peers, 3);

    ms_dataset_source_blob_done(fx->src, &th, MS_ERR_IO);
    ms_dataset_source_sweep_t ds;
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_false(ds.fetching);
    fx->fake.mono_ms += MS_DATASET_SOURCE_RETRY_MS - 1;
    ms_dataset_source_want(fx->src, sid.bytes);
    assert_int_equal(fx->n_fetches, 2); // too early
    fx->fake.mono_ms += 1;
    ms_dataset_source_want(fx->src, sid.bytes);
    assert_int_equal(fx->n_fetches, 4);

    // The node cannot start one: logged, not fetching, tried again later.
    ms_dataset_source_blob_done(fx->src, &th, MS_ERR_IO);
    fx->fake.mono_ms += MS_DATASET_SOURCE_RETRY_MS;
    fx->fetch_rc = MS_ERR_NOMEM;
    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_fetches, 5); // stopped at the first refusal
    assert_non_null(strstr(fx->last_log, "cannot fetch train"));
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_false(ds.fetching);
    assert_null(ds.dataset);
    fx->fetch_rc = MS_OK;
    fx->fake.mono_ms += MS_DATASET_SOURCE_RETRY_MS;
    ms_dataset_source_want(fx->src, sid.bytes);
    assert_int_equal(fx->n_fetches, 7);
    assert_int_equal(fx->n_ready, 0);
}

//  --------------------------------------------------------------------------
//  A dataset record out of contract (a file over max_dataset_bytes), no
//  record at all, or a node alone: nothing is asked, the log says why,
//  and the blobs held stay.

static void
test_bad_record_refused(void **state)
{
    s_fx_t *fx = *state;
    ms_hash_t sid, th, eh;
    s_make(fx, 1000);
    s_file_sweep(fx, "big", true, 5000, &sid, &th, &eh);
    s_hold(fx, s_test);
    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_fetches, 0);
    assert_non_null(strstr(fx->last_log, "cannot fetch: dataset record: file "
                                         "'train' unknown, repeated or too "
                                         "big"));
    assert_true(ms_blob_store_has(fx->blobs, &eh));
    assert_null(ms_dataset_source_dataset(fx->src, &sid));

    ms_hash_t sid2;
    s_files_sweep(fx, "norecord", "y,a\n0,1\n", "y,a\n1,0\n", false, 0, &sid2,
                  &th, &eh);
    ms_dataset_source_fetch(fx->src, &sid2);
    assert_int_equal(fx->n_fetches, 0);
    assert_non_null(strstr(fx->last_log, "no dataset record for this sweep"));

    // Alone: no blob store, nothing tried, no record read.
    ms_hash_t sid3;
    s_files_sweep(fx, "alone", "y,b\n0,1\n", "y,b\n1,0\n", true, 0, &sid3, &th,
                  &eh);
    fx->alone = true;
    int n_log = fx->n_log;
    ms_dataset_source_want(fx->src, sid3.bytes);
    ms_dataset_source_fetch(fx->src, &sid3);
    assert_int_equal(fx->n_fetches, 0);
    assert_int_equal(fx->n_log, n_log);

    // A sweep not in the store.
    ms_hash_t none;
    memset(none.bytes, 0x77, sizeof none.bytes);
    ms_dataset_source_sweep_t ds;
    assert_true(ms_dataset_source_sweep(fx->src, none.bytes, &ds));
    assert_null(ds.dataset);
    assert_string_equal(ds.error, "sweep not found in the store");
}

//  --------------------------------------------------------------------------
//  Uploads: bytes that do not hash to the blob's name are refused with a
//  clear error, the temp file is consumed and what was held stays (a
//  ready dataset too); good bytes become the blob (counted). Alone, an
//  upload is refused and its file removed.

static void
test_upload_wrong_hash_refused(void **state)
{
    s_fx_t *fx = *state;
    ms_hash_t sid, th, eh;
    s_file_sweep(fx, "upload", true, 0, &sid, &th, &eh);
    s_hold(fx, s_train);
    s_hold(fx, s_test);
    ms_dataset_source_fetch(fx->src, &sid);
    assert_int_equal(fx->n_ready, 1);

    char tmp[600];
    assert_int_equal(ms_tf_write_in(fx->root, "node/blobs/tmp/up1",
                                    "not the train file", tmp, sizeof tmp),
                     0);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_dataset_source_blob_put(fx->src, &th, tmp, &diag);
    assert_int_equal(rc, MS_ERR_INVALID);
    assert_string_equal(diag.where, "body");
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&th, hex);
    assert_non_null(strstr(diag.reason, "do not hash to"));
    assert_non_null(strstr(diag.reason, hex));
    assert_int_not_equal(access(tmp, F_OK), 0); // consumed
    assert_true(ms_blob_store_has(fx->blobs, &th));
    assert_true(ms_blob_store_has(fx->blobs, &eh));
    s_assert_blob_object(fx, ms_dataset_source_dataset(fx->src, &sid), &th,
                         &eh);
    ms_dataset_source_stats_t st;
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_uploads, 0);

    const char *text = "a new file\n";
    ms_hash_t nh;
    ms_hash_bytes(text, strlen(text), &nh);
    assert_int_equal(
        ms_tf_write_in(fx->root, "node/blobs/tmp/up2", text, tmp, sizeof tmp),
        0);
    assert_int_equal(ms_dataset_source_blob_put(fx->src, &nh, tmp, &diag),
                     MS_OK);
    assert_true(ms_blob_store_has(fx->blobs, &nh));
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_uploads, 1);
    assert_non_null(strstr(fx->last_log, "uploaded"));

    fx->alone = true;
    assert_int_equal(ms_tf_write_in(fx->root, "up3", text, tmp, sizeof tmp), 0);
    rc = ms_dataset_source_blob_put(fx->src, &nh, tmp, &diag);
    assert_int_equal(rc, MS_ERR_UNSUPPORTED);
    assert_string_equal(diag.where, "blobs");
    assert_non_null(strstr(diag.reason, "in no pool"));
    assert_int_not_equal(access(tmp, F_OK), 0);
}

//  --------------------------------------------------------------------------
//  The HTTP threads' questions (answered on the loop): which blobs are
//  held (entries that are not hashes skipped), and a held blob's file;
//  alone, nothing is held.

static void
test_blob_questions(void **state)
{
    s_fx_t *fx = *state;
    s_hold(fx, s_train);
    ms_hash_t th, other;
    ms_hash_bytes(s_train, strlen(s_train), &th);
    memset(other.bytes, 0x33, sizeof other.bytes);
    char thex[MS_HASH_HEX_LEN + 1], ohex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&th, thex);
    ms_hash_hex(&other, ohex);
    char text[300];
    snprintf(text, sizeof text, "[\"%s\", \"%s\", \"zz\", 7]", thex, ohex);

    char *summary = NULL;
    assert_int_equal(ms_dataset_source_blobs_held(fx->src, text, &summary),
                     MS_OK);
    json_error_t err;
    json_t *held = json_loads(summary, 0, &err);
    free(summary);
    assert_non_null(held);
    assert_int_equal(json_object_size(held), 2);
    assert_true(json_is_true(json_object_get(held, thex)));
    assert_true(json_is_false(json_object_get(held, ohex)));
    json_decref(held);
    assert_int_equal(ms_dataset_source_blobs_held(fx->src, NULL, &summary),
                     MS_OK);
    assert_string_equal(summary, "{}");
    free(summary);

    assert_int_equal(ms_dataset_source_blob_file(fx->src, &th, &summary),
                     MS_OK);
    json_t *obj = json_loads(summary, 0, &err);
    free(summary);
    const char *path = json_string_value(json_object_get(obj, "path"));
    assert_non_null(path);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char buf[200] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    assert_int_equal(n, strlen(s_train));
    assert_string_equal(buf, s_train);
    json_decref(obj);
    summary = (char *) "untouched";
    assert_int_equal(ms_dataset_source_blob_file(fx->src, &other, &summary),
                     MS_ERR_NOTFOUND);

    fx->alone = true;
    assert_int_equal(ms_dataset_source_blobs_held(fx->src, text, &summary),
                     MS_OK);
    held = json_loads(summary, 0, &err);
    free(summary);
    assert_true(json_is_false(json_object_get(held, thex)));
    json_decref(held);
    assert_int_equal(ms_dataset_source_blob_file(fx->src, &th, &summary),
                     MS_ERR_NOTFOUND);
}

//  --------------------------------------------------------------------------
//  A built-in dataset: alone, its files are used as they are; in a pool
//  only when the DATASET record of its hash is in the store (counted
//  either way).

static void
test_builtin_alone_and_in_pool(void **state)
{
    s_fx_t *fx = *state;
    ms_sf_sweep_t sw;
    ms_sf_sweep_parse(&sw, ms_td_spec("builtin", 1, 2, 1));
    assert_int_equal(ms_sf_append_sweep(fx->store, fx->origin, &sw, 0), MS_OK);
    ms_hash_t sid;
    memcpy(sid.bytes, sw.sweep_id, MS_HASH_BYTES);

    fx->alone = true;
    ms_dataset_source_sweep_t ds;
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_non_null(ds.dataset);
    assert_string_equal(json_string_value(json_object_get(ds.dataset, "name")),
                        "fashion-mnist");
    assert_true(ds.bytes > 0);
    ms_dataset_source_stats_t st;
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_local + st.n_local_mismatch, 0); // not checked

    // In a pool, no record of this copy's hash: left to the others.
    fx->alone = false;
    s_make(fx, (int64_t) 1 << 30);
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_null(ds.dataset);
    assert_non_null(strstr(ds.error, "differs from the submitter's"));
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_local_mismatch, 1);

    // The record of its hash: the local copy is used.
    ms_wire_dataset_file_t files[4];
    ms_hash_t dh;
    assert_int_equal(
        ms_dataset_source_hash(ms_spec_dataset(sw.spec), &dh, files), MS_OK);
    assert_string_equal(files[0].role, "train-images");
    assert_true(files[0].size > 0);
    ms_store_payload_t d = {.kind = MS_RECORD_DATASET};
    memcpy(d.u.dataset.hash, dh.bytes, MS_HASH_BYTES);
    d.u.dataset.name = "fashion-mnist";
    d.u.dataset.files = files;
    d.u.dataset.n_files = 4;
    s_append(fx, &d);
    s_make(fx, (int64_t) 1 << 30);
    assert_true(ms_dataset_source_sweep(fx->src, sid.bytes, &ds));
    assert_non_null(ds.dataset);
    assert_null(ds.error);
    ms_dataset_source_stats(fx->src, &st);
    assert_int_equal(st.n_local, 1);
    assert_non_null(strstr(fx->last_log, "local copy matches the record"));
    ms_sf_sweep_free(&sw);
}

//  --------------------------------------------------------------------------
//  File roles by name; a dataset file saved and read back, and a sweep
//  asked about has it at once.

static void
test_roles_and_save(void **state)
{
    s_fx_t *fx = *state;
    assert_int_equal(ms_dataset_source_file_role("train", 5), 0);
    assert_int_equal(ms_dataset_source_file_role("test", 4), 1);
    assert_int_equal(ms_dataset_source_file_role("train_labels", 12), 2);
    assert_int_equal(ms_dataset_source_file_role("test_labels", 11), 3);
    assert_int_equal(ms_dataset_source_file_role("train_labelsX", 12), 2);
    assert_int_equal(ms_dataset_source_file_role("tes", 3), -1);
    assert_int_equal(ms_dataset_source_file_role("labels", 6), -1);
    for (int r = 0; r < MS_DATASET_SOURCE_FILE_ROLES; r++) {
        const char *name = ms_dataset_source_role_name(r);
        assert_int_equal(ms_dataset_source_file_role(name, strlen(name)), r);
    }

    ms_hash_t sid;
    memset(sid.bytes, 7, sizeof sid.bytes);
    assert_null(ms_dataset_source_dataset(fx->src, &sid)); // not stored
    json_t *obj = json_pack("{s:s, s:i}", "train", "/x", "n", 3);
    ms_diag_t diag;
    assert_int_equal(ms_dataset_source_save(fx->src, &sid, obj, &diag), MS_OK);
    assert_true(json_equal(ms_dataset_source_dataset(fx->src, &sid), obj));
    char path[PATH_MAX + 80];
    ms_dataset_source_path(fx->src, &sid, path, sizeof path);
    json_error_t err;
    json_t *back = json_load_file(path, 0, &err);
    assert_true(json_equal(obj, back));
    json_decref(back);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(path + strlen(path), sizeof path - strlen(path), ".tmp");
    assert_int_not_equal(access(path, F_OK), 0); // no .tmp left

    // A dir that cannot be written: MS_ERR_IO naming the path.
    char bad[600];
    snprintf(bad, sizeof bad, "%s/nowhere", fx->root);
    ms_dataset_source_destroy(&fx->src);
    ms_dataset_source_config_t cfg = {
        .datasets_dir = bad, .max_dataset_bytes = 1 << 20, .clock = &fx->clock};
    ms_dataset_source_iface_t iface = {.arg = fx, .log = s_log};
    fx->src = ms_dataset_source_new(fx->store, &cfg, &iface);
    assert_non_null(fx->src);
    assert_int_equal(ms_dataset_source_save(fx->src, &sid, obj, &diag),
                     MS_ERR_IO);
    assert_non_null(strstr(diag.where, "nowhere"));
    json_decref(obj);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_held_blobs_ready_at_once, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_missing_blobs_asked_then_ready,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_failed_fetch_retried_later,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_record_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_upload_wrong_hash_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_blob_questions, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_builtin_alone_and_in_pool, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_roles_and_save, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
