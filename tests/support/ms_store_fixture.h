/*  =========================================================================
    ms_store_fixture - a temporary directory of LMDB stores, for the store
    tests (cmocka)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Header-only (static functions) so each test executable stays one file;
    include <cmocka.h>, ms_store.h and ms_store_payload.h before it. A test's
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

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    ms_store_t *store = NULL;
    ms_diag_t diag;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.map_size_bytes = map_size;
    int rc = ms_store_open(&store, dir, &opts, &diag);
    if (rc != MS_OK)
        fprintf(stderr, "open %s: %s: %s\n", dir, diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
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

#endif
