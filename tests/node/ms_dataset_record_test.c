/*  =========================================================================
    ms_dataset_record_test - DATASET records with files (DESIGN.md
    "Datasets"): payload round trip, the key a sweep names, the old
    single-file form, malformed hashes refused, lookup in the store

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_wire.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ID MS_WIRE_ID_BYTES

//  Four files (roles of an uploaded IDX dataset) with distinct hashes.
static void
s_files(ms_wire_dataset_file_t files[4])
{
    const char *roles[4] = {"train", "test", "train_labels", "test_labels"};
    memset(files, 0, 4 * sizeof *files);
    for (int i = 0; i < 4; i++) {
        snprintf(files[i].role, sizeof files[i].role, "%s", roles[i]);
        files[i].size = 1000u * (uint64_t) (i + 1);
        memset(files[i].hash, 0x10 + i, ID);
    }
}

//  --------------------------------------------------------------------------
//  Files, sizes and the dataset hash survive encode + decode; the key is
//  the dataset hash, not the first file's.

static void
test_files_round_trip(void **state)
{
    (void) state;
    ms_wire_dataset_file_t files[4];
    s_files(files);
    ms_store_payload_t p = {.kind = MS_RECORD_DATASET};
    memset(p.u.dataset.hash, 0xab, ID);
    p.u.dataset.name = "files";
    p.u.dataset.files = files;
    p.u.dataset.n_files = 4;
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(&p, &buf, &len), MS_OK);
    ms_store_payload_t *d = NULL;
    assert_int_equal(ms_store_payload_decode(MS_RECORD_DATASET, buf, len, &d),
                     MS_OK);
    uint8_t key[ID];
    memset(key, 0xab, ID);
    assert_memory_equal(d->u.dataset.hash, key, ID);
    assert_string_equal(d->u.dataset.name, "files");
    assert_int_equal(d->u.dataset.n_files, 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(d->u.dataset.files[i].role, files[i].role);
        assert_int_equal(d->u.dataset.files[i].size, files[i].size);
        assert_memory_equal(d->u.dataset.files[i].hash, files[i].hash, ID);
    }
    ms_store_payload_destroy(&d);
    free(buf);

    // The old form (no files given): one file "data", key = its hash.
    ms_store_payload_t old = {.kind = MS_RECORD_DATASET};
    memset(old.u.dataset.hash, 0xcd, ID);
    old.u.dataset.name = "fashion-mnist";
    assert_int_equal(ms_store_payload_encode(&old, &buf, &len), MS_OK);
    assert_int_equal(ms_store_payload_decode(MS_RECORD_DATASET, buf, len, &d),
                     MS_OK);
    memset(key, 0xcd, ID);
    assert_memory_equal(d->u.dataset.hash, key, ID);
    assert_int_equal(d->u.dataset.n_files, 1);
    assert_string_equal(d->u.dataset.files[0].role, "data");
    ms_store_payload_destroy(&d);
    free(buf);
}

//  --------------------------------------------------------------------------
//  A dataset hash field that is not 32 bytes is refused by the decoder.

static void
test_bad_hash_refused(void **state)
{
    (void) state;
    // DatasetPayload {name "x", files [{role "a", size 1, hash 32 x 0x11}],
    // hash = 5 bytes}, written by hand.
    uint8_t buf[128];
    size_t n = 0;
    buf[n++] = 0x0a; // name
    buf[n++] = 1;
    buf[n++] = 'x';
    buf[n++] = 0x12; // files
    buf[n++] = 3 + 2 + 2 + ID;
    buf[n++] = 0x0a; // role
    buf[n++] = 1;
    buf[n++] = 'a';
    buf[n++] = 0x10; // size
    buf[n++] = 1;
    buf[n++] = 0x1a; // hash
    buf[n++] = ID;
    memset(buf + n, 0x11, ID);
    n += ID;
    size_t good = n;
    buf[n++] = 0x1a; // dataset hash, 5 bytes: malformed
    buf[n++] = 5;
    memset(buf + n, 0x22, 5);
    n += 5;
    ms_wire_dataset_t *w = NULL;
    assert_int_equal(ms_wire_decode_dataset(buf, n, &w), MS_ERR_PROTOCOL);
    assert_null(w);
    // Without it: the old form, accepted, no hash.
    assert_int_equal(ms_wire_decode_dataset(buf, good, &w), MS_OK);
    assert_false(w->has_hash);
    ms_wire_dataset_destroy(&w);
    // With 32 bytes: accepted, hash kept.
    n = good;
    buf[n++] = 0x1a;
    buf[n++] = ID;
    memset(buf + n, 0x33, ID);
    n += ID;
    assert_int_equal(ms_wire_decode_dataset(buf, n, &w), MS_OK);
    assert_true(w->has_hash);
    assert_int_equal(w->hash[0], 0x33);
    ms_wire_dataset_destroy(&w);
}

//  --------------------------------------------------------------------------
//  ms_store_get_dataset finds a record by its dataset hash.

static void
test_store_lookup(void **state)
{
    (void) state;
    char dir[] = "/tmp/ms_dataset_record_XXXXXX";
    assert_non_null(mkdtemp(dir));
    ms_store_t *store = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_store_open(&store, dir, NULL, &diag), MS_OK);
    ms_wire_dataset_file_t files[4];
    s_files(files);
    ms_store_payload_t p = {.kind = MS_RECORD_DATASET};
    memset(p.u.dataset.hash, 0x5a, ID);
    p.u.dataset.name = "files";
    p.u.dataset.files = files;
    p.u.dataset.n_files = 4;
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(&p, &buf, &len), MS_OK);
    uint8_t origin[ID];
    memset(origin, 0x01, ID);
    assert_int_equal(
        ms_store_append(store, origin, MS_RECORD_DATASET, buf, len, NULL),
        MS_OK);
    uint8_t *got = NULL;
    size_t got_len = 0;
    assert_int_equal(
        ms_store_get_dataset(store, p.u.dataset.hash, &got, &got_len), MS_OK);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, buf, len);
    free(got);
    uint8_t other[ID];
    memset(other, 0x10, ID); // the first file's hash is not the key
    assert_int_equal(ms_store_get_dataset(store, other, &got, &got_len),
                     MS_ERR_NOTFOUND);
    assert_null(got);
    free(buf);
    ms_store_destroy(&store);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_files_round_trip),
        cmocka_unit_test(test_bad_hash_refused),
        cmocka_unit_test(test_store_lookup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
