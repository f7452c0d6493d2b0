/*  =========================================================================
    ms_keys_fixture - three Ed25519 key pairs and a temporary directory,
    for the certificate and authority item tests (cmocka)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Header-only (static functions) so each test executable stays one file;
    include <cmocka.h> and ms_cert.h (or a header that includes it) before
    it. Fresh keys for every case, so no case leans on another's:

        static int s_setup(void **state)
        {
            return ms_kf_setup(state, "ms_cert_test");
        }
        ...
        cmocka_unit_test_setup_teardown(test_x, s_setup, ms_kf_teardown)
*/
#ifndef MS_KEYS_FIXTURE_H
#define MS_KEYS_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ms_test_fs.h"

//  The keys and the directory.
typedef struct {
    uint8_t auth_pk[MS_CERT_KEY_BYTES], auth_sk[MS_CERT_SECRET_BYTES];
    uint8_t node_pk[MS_CERT_KEY_BYTES], node_sk[MS_CERT_SECRET_BYTES];
    //  a third pair: another authority, an enrollment key
    uint8_t other_pk[MS_CERT_KEY_BYTES], other_sk[MS_CERT_SECRET_BYTES];
    char dir[64]; // /tmp/PREFIX.XXXXXX, made by the setup
} ms_kf_t;

//  --------------------------------------------------------------------------
//  Make the fixture in *state (a cmocka setup): three new key pairs and
//  a new directory /tmp/PREFIX.XXXXXX (PREFIX under 40 characters).
//  Fails the test when one cannot be made; returns 0.

static inline int
ms_kf_setup(void **state, const char *prefix)
{
    ms_kf_t *k = calloc(1, sizeof *k);
    assert_non_null(k);
    assert_int_equal(ms_cert_keypair(k->auth_pk, k->auth_sk), MS_OK);
    assert_int_equal(ms_cert_keypair(k->node_pk, k->node_sk), MS_OK);
    assert_int_equal(ms_cert_keypair(k->other_pk, k->other_sk), MS_OK);
    snprintf(k->dir, sizeof k->dir, "/tmp/%s.XXXXXX", prefix);
    assert_non_null(mkdtemp(k->dir));
    *state = k;
    return 0;
}

//  --------------------------------------------------------------------------
//  Remove the directory's tree and free the fixture (a cmocka teardown).

static inline int
ms_kf_teardown(void **state)
{
    ms_kf_t *k = *state;
    ms_tf_rm_rf(k->dir);
    free(k);
    return 0;
}

#endif
