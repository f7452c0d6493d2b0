/*  =========================================================================
    ms_store_fixture - a temporary directory of LMDB stores, for the store
    tests (cmocka)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Header-only (static functions) so each test executable stays one file;
    include <cmocka.h>, ms_store.h, ms_store_payload.h and ms_spec.h
    before it. ms_sf_node_dir is the node directory of the tests of the
    node's data classes (ms_submit, ms_dataset_source). A test's
   setup makes a fresh /tmp/PREFIX.XXXXXX, stores open under it by name, and the
    teardown removes the whole tree:

        static int s_setup(void **state)
        {
            return ms_sf_setup(state, "ms_store_cut_test");
        }
        ...
        ms_store_t *store = ms_sf_open(*state, NULL, 4 << 20);
        cmocka_unit_test_setup_teardown(test_x, s_setup, ms_sf_teardown)
*/
#ifndef MS_STORE_FIXTURE_H
#define MS_STORE_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "ms_node_testdata.h"
#include "ms_test_fs.h"

//  The fixture: the temporary root and how many unnamed stores were made.
typedef struct {
    char root[256]; // the temporary dir
    int n_stores;   // unnamed stores opened so far (their dir names s0, s1..)
} ms_sf_t;

//  --------------------------------------------------------------------------
//  Make the fixture in *state: a new temporary dir /tmp/PREFIX.XXXXXX.
//  Returns 0, or -1 when it cannot be made.

static inline int
ms_sf_setup(void **state, const char *prefix)
{
    ms_sf_t *fx = calloc(1, sizeof *fx);
    if (!fx)
        return -1;
    snprintf(fx->root, sizeof fx->root, "/tmp/%s.XXXXXX", prefix);
    if (!mkdtemp(fx->root)) {
        free(fx);
        return -1;
    }
    *state = fx;
    return 0;
}

//  --------------------------------------------------------------------------
//  Remove the fixture's tree and free it (a cmocka teardown).

static inline int
ms_sf_teardown(void **state)
{
    ms_sf_t *fx = *state;
    ms_tf_rm_rf(fx->root);
    free(fx);
    return 0;
}

//  --------------------------------------------------------------------------
//  Open (create) the store in DIR with a first map of MAP_SIZE bytes (it
//  grows as needed; 0: the store's default). Returns it (the caller
//  destroys it), or NULL, said on stderr, when it cannot be opened.

static inline ms_store_t *
ms_sf_open_dir(const char *dir, uint64_t map_size)
{
    ms_store_t *store = NULL;
    ms_diag_t diag;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    if (map_size)
        opts.map_size_bytes = map_size;
    int rc = ms_store_open(&store, dir, &opts, &diag);
    if (rc != MS_OK)
        fprintf(stderr, "open %s: %s: %s\n", dir, diag.where, diag.reason);
    return store;
}

//  --------------------------------------------------------------------------
//  A node's directory for the tests of its data classes: ROOT (256
//  bytes) made by ms_td_setup (the synthetic fashion-mnist in
//  ROOT/data), the store ROOT/store opened as ms_sf_open_dir does it
//  (*STORE, the caller destroys it) and an empty ROOT/datasets, whose
//  path goes into DATASETS_DIR (512 bytes). Returns 0, or -1 when one of
//  them cannot be made (what was made is left for the teardown:
//  ms_td_teardown(ROOT)).

static inline int
ms_sf_node_dir(char root[256], char datasets_dir[512], ms_store_t **store,
               uint64_t map_size)
{
    if (ms_td_setup(root, 256) != 0)
        return -1;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/store", root);
    if (!(*store = ms_sf_open_dir(dir, map_size)))
        return -1;
    snprintf(datasets_dir, 512, "%s/datasets", root);
    return mkdir(datasets_dir, 0700) == 0 ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  Open (create) the store ROOT/NAME, or ROOT/sN (the next unnamed one)
//  when name is NULL, with a first map of map_size bytes (it grows as
//  needed). Fails the test when the store cannot be opened.

static inline ms_store_t *
ms_sf_open(ms_sf_t *fx, const char *name, uint64_t map_size)
{
    char dir[512];
    if (name)
        snprintf(dir, sizeof dir, "%s/%s", fx->root, name);
    else
        snprintf(dir, sizeof dir, "%s/s%d", fx->root, fx->n_stores++);
    ms_store_t *store = ms_sf_open_dir(dir, map_size);
    assert_non_null(store);
    return store;
}

//  --------------------------------------------------------------------------
//  A deterministic test id: every byte tag, the last four n (big-endian).

static inline void
ms_sf_id(uint8_t id[MS_STORE_ID_BYTES], uint8_t tag, uint32_t n)
{
    memset(id, tag, MS_STORE_ID_BYTES);
    id[28] = (uint8_t) (n >> 24);
    id[29] = (uint8_t) (n >> 16);
    id[30] = (uint8_t) (n >> 8);
    id[31] = (uint8_t) n;
}

//  --------------------------------------------------------------------------
//  Merge record P as a block of one record of ORIGIN (incarnation 1, seq
//  SEQ) into STORE; fails the test unless it is new.

static inline void
ms_sf_merge_one(ms_store_t *store, const uint8_t *origin, uint64_t seq,
                const ms_store_payload_t *p)
{
    uint8_t *bytes = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(p, &bytes, &len), MS_OK);
    const uint8_t *pl[1] = {bytes};
    uint32_t kinds[1] = {p->kind};
    size_t lens[1] = {len};
    ms_store_merge_result_t out;
    assert_int_equal(ms_store_merge_block(store, origin, 1, seq, 1, kinds, pl,
                                          lens, NULL, 0, &out),
                     MS_OK);
    assert_int_equal(out.n_new, 1);
    free(bytes);
}

//  --------------------------------------------------------------------------
//  A sweep made from a real spec (ms_spec_parse), so its sweep and task ids
//  are the spec's, as a node's would be. Derived state is written only by
//  applying records: a fixture stores the sweep as a SWEEP record
//  (ms_sf_append_sweep) and its results as RESULT records
//  (ms_sf_append_result).

typedef struct {
    ms_spec_t *spec;                     // the parsed spec (owned)
    uint8_t sweep_id[MS_STORE_ID_BYTES]; // the spec's sweep id
    size_t n_tasks;                      // tasks after expansion
} ms_sf_sweep_t;

//  Parse YAML into *SW; fails the test when the spec does not parse.

static inline void
ms_sf_sweep_parse(ms_sf_sweep_t *sw, const char *yaml)
{
    ms_diag_t diag;
    memset(sw, 0, sizeof *sw);
    int rc = ms_spec_parse(yaml, strlen(yaml), NULL, &sw->spec, &diag);
    if (rc != MS_OK)
        fprintf(stderr, "spec: %s: %s\n", diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    memcpy(sw->sweep_id, ms_spec_sweep_id(sw->spec)->bytes, MS_STORE_ID_BYTES);
    sw->n_tasks = ms_spec_task_count(sw->spec);
}

//  A grid sweep named NAME of N_TASKS tasks (seeds 1 .. N_TASKS, one
//  hidden layer of WIDTH, one epoch); the same name, width and count give
//  the same ids.

static inline void
ms_sf_sweep_seeds(ms_sf_sweep_t *sw, const char *name, uint32_t width,
                  uint32_t n_tasks)
{
    size_t cap = 256 + strlen(name) + (size_t) n_tasks * 12;
    char *yaml = malloc(cap);
    assert_non_null(yaml);
    size_t off = (size_t) snprintf(
        yaml, cap,
        "name: %s\ndataset: fashion-mnist\nmethod: grid\n"
        "parameters:\n  hidden_layers: {value: 1}\n  width: {value: %u}\n"
        "  epochs: {value: 1}\n  seed: {values: [",
        name, width);
    for (uint32_t i = 0; i < n_tasks; i++)
        off += (size_t) snprintf(yaml + off, cap - off, "%s%u", i ? "," : "",
                                 i + 1);
    snprintf(yaml + off, cap - off, "]}\n");
    ms_sf_sweep_parse(sw, yaml);
    free(yaml);
    assert_int_equal(sw->n_tasks, n_tasks);
}

//  Task I's id (borrowed from the spec).

static inline const uint8_t *
ms_sf_task_id(const ms_sf_sweep_t *sw, size_t i)
{
    assert_true(i < sw->n_tasks);
    return ms_spec_task_id(sw->spec, i)->bytes;
}

//  Free the spec of *SW; NULL-safe.

static inline void
ms_sf_sweep_free(ms_sf_sweep_t *sw)
{
    if (sw)
        ms_spec_destroy(&sw->spec);
}

//  A one-task sweep "replica-TAG" (seed TAG, verify.replicas REPLICAS;
//  a noop task with NOOP) as a SWEEP record: its sweep and task ids into
//  SWEEP_ID and TASK_ID, its encoded payload into *BYTES (the caller
//  frees it) and *LEN. Fails the test when it cannot be made.

static inline void
ms_sf_replica_sweep(int replicas, int tag, bool noop,
                    uint8_t sweep_id[MS_STORE_ID_BYTES],
                    uint8_t task_id[MS_STORE_ID_BYTES], uint8_t **bytes,
                    size_t *len)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml,
             "name: replica-%d\ndataset: fashion-mnist\nmethod: grid\n"
             "verify: {replicas: %d}\n"
             "parameters:\n  hidden_layers: {value: 1}\n"
             "  width: {value: 8}\n  epochs: {value: 1}\n"
             "  seed: {value: %d}\n%s",
             tag, replicas, tag, noop ? "  kind: {value: noop}\n" : "");
    ms_sf_sweep_t sw;
    ms_sf_sweep_parse(&sw, yaml);
    assert_int_equal(sw.n_tasks, 1);
    memcpy(sweep_id, sw.sweep_id, MS_STORE_ID_BYTES);
    memcpy(task_id, ms_spec_task_id(sw.spec, 0)->bytes, MS_STORE_ID_BYTES);
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, sw.sweep_id, MS_STORE_ID_BYTES);
    p.u.sweep.spec_json = ms_spec_canonical(sw.spec, &p.u.sweep.spec_len);
    assert_int_equal(ms_store_payload_encode(&p, bytes, len), MS_OK);
    ms_sf_sweep_free(&sw);
}

//  Append payload P as a record of ORIGIN. Returns the rc of the encode
//  or of ms_store_append (MS_ERR_INVALID: P does not decode, e.g. a
//  sweep id that is not its spec's, a result row that is not a JSON
//  object).

static inline int
ms_sf_append(ms_store_t *store, const uint8_t *origin,
             const ms_store_payload_t *p)
{
    uint8_t *bytes = NULL;
    size_t len = 0;
    int rc = ms_store_payload_encode(p, &bytes, &len);
    if (rc == MS_OK)
        rc = ms_store_append(store, origin, p->kind, bytes, len, NULL);
    free(bytes);
    return rc;
}

//  Append SW as a SWEEP record of ORIGIN with PRIORITY (created at the
//  local arrival time). Returns the rc of ms_sf_append.

static inline int
ms_sf_append_sweep(ms_store_t *store, const uint8_t *origin,
                   const ms_sf_sweep_t *sw, int32_t priority)
{
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, sw->sweep_id, MS_STORE_ID_BYTES);
    p.u.sweep.spec_json = ms_spec_canonical(sw->spec, &p.u.sweep.spec_len);
    p.u.sweep.priority = priority;
    return ms_sf_append(store, origin, &p);
}

//  Append a RESULT record of NODE (its origin) for TASK_ID, slot 0 at
//  epoch 1, with row ROW (a JSON object; its "status" is the result's).
//  Returns the rc of ms_sf_append.

static inline int
ms_sf_append_result(ms_store_t *store, const uint8_t *node,
                    const uint8_t *task_id, const char *row, size_t len)
{
    ms_store_payload_t p = {.kind = MS_RECORD_RESULT};
    memcpy(p.u.result.task_id, task_id, MS_STORE_ID_BYTES);
    p.u.result.epoch = 1;
    p.u.result.row_json = row;
    p.u.result.row_len = len;
    return ms_sf_append(store, node, &p);
}

#endif
