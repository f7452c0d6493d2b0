/*  =========================================================================
    ms_identity_test - node identity: creation, reopening, permissions

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_identity.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char s_root[256];

//  --------------------------------------------------------------------------
//  Make a fresh temp dir per test.

static int
s_setup(void **state)
{
    (void) state;
    snprintf(s_root, sizeof s_root, "/tmp/ms_identity_test.XXXXXX");
    assert_non_null(mkdtemp(s_root));
    return 0;
}

//  --------------------------------------------------------------------------
//  Remove the temp dir.

static int
s_teardown(void **state)
{
    (void) state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_root);
    return system(cmd) == 0 ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  First open creates a 0600 key in a 0700 dir; reopen gives the same id.

static void
test_create_then_reopen_same_id(void **state)
{
    (void) state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/identity", s_root);
    ms_identity_t *id = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_identity_open(&id, dir, &diag), MS_OK);
    const char *hex = ms_identity_node_id(id);
    assert_int_equal(strlen(hex), MS_IDENTITY_HEX_LEN);
    for (const char *p = hex; *p; p++)
        assert_true((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
    char first[MS_IDENTITY_HEX_LEN + 1];
    strcpy(first, hex);

    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    char key[600];
    snprintf(key, sizeof key, "%s/node.key", dir);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 64);
    ms_identity_destroy(&id);
    assert_null(id);

    assert_int_equal(ms_identity_open(&id, dir, &diag), MS_OK);
    assert_string_equal(ms_identity_node_id(id), first);
    ms_identity_destroy(&id);
}

//  --------------------------------------------------------------------------
//  Two fresh dirs give two different ids.

static void
test_two_dirs_differ(void **state)
{
    (void) state;
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/a", s_root);
    snprintf(b, sizeof b, "%s/b", s_root);
    ms_identity_t *ia = NULL, *ib = NULL;
    assert_int_equal(ms_identity_open(&ia, a, NULL), MS_OK);
    assert_int_equal(ms_identity_open(&ib, b, NULL), MS_OK);
    assert_string_not_equal(ms_identity_node_id(ia), ms_identity_node_id(ib));
    ms_identity_destroy(&ia);
    ms_identity_destroy(&ib);
}

//  --------------------------------------------------------------------------
//  A signature verifies with the node's key and fails when changed.

static void
test_sign_verify(void **state)
{
    (void) state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/identity", s_root);
    ms_identity_t *id = NULL;
    assert_int_equal(ms_identity_open(&id, dir, NULL), MS_OK);
    uint8_t sig[MS_IDENTITY_SIG_BYTES];
    const char msg[] = "sweep record";
    assert_int_equal(ms_identity_sign(id, msg, sizeof msg, sig), MS_OK);
    assert_int_equal(
        ms_identity_verify(ms_identity_public_key(id), msg, sizeof msg, sig),
        MS_OK);
    sig[3] ^= 1;
    assert_int_equal(
        ms_identity_verify(ms_identity_public_key(id), msg, sizeof msg, sig),
        MS_ERR_BADSIG);
    ms_identity_destroy(&id);
}

//  --------------------------------------------------------------------------
//  The CURVE pair is derived from the Ed25519 pair: its public half is
//  what anyone derives from the node id, and it matches its secret half.

static void
test_curve_keys(void **state)
{
    (void) state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/identity", s_root);
    ms_identity_t *id = NULL;
    assert_int_equal(ms_identity_open(&id, dir, NULL), MS_OK);
    uint8_t pk[MS_IDENTITY_CURVE_BYTES], sk[MS_IDENTITY_CURVE_BYTES];
    uint8_t from_id[MS_IDENTITY_CURVE_BYTES], base[MS_IDENTITY_CURVE_BYTES];
    assert_int_equal(ms_identity_curve_keys(id, pk, sk), MS_OK);
    assert_int_equal(
        ms_identity_curve_public(ms_identity_public_key(id), from_id), MS_OK);
    assert_memory_equal(pk, from_id, sizeof pk);
    assert_int_equal(crypto_scalarmult_base(base, sk), 0);
    assert_memory_equal(pk, base, sizeof pk);
    // another identity derives another key
    char dir2[512];
    snprintf(dir2, sizeof dir2, "%s/identity2", s_root);
    ms_identity_t *id2 = NULL;
    assert_int_equal(ms_identity_open(&id2, dir2, NULL), MS_OK);
    assert_int_equal(
        ms_identity_curve_public(ms_identity_public_key(id2), from_id), MS_OK);
    assert_memory_not_equal(pk, from_id, sizeof pk);
    sodium_memzero(sk, sizeof sk);
    ms_identity_destroy(&id2);
    ms_identity_destroy(&id);
}

//  --------------------------------------------------------------------------
//  A world-readable key, a truncated key and a corrupt key are refused.

static void
test_bad_key_files_refused(void **state)
{
    (void) state;
    char dir[512], key[600];
    snprintf(dir, sizeof dir, "%s/identity", s_root);
    snprintf(key, sizeof key, "%s/node.key", dir);
    ms_identity_t *id = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_identity_open(&id, dir, NULL), MS_OK);
    ms_identity_destroy(&id);

    assert_int_equal(chmod(key, 0644), 0);
    assert_int_equal(ms_identity_open(&id, dir, &diag), MS_ERR_INVALID);
    assert_null(id);
    assert_string_equal(diag.where, key);
    assert_non_null(strstr(diag.reason, "readable"));
    assert_int_equal(chmod(key, 0600), 0);

    // Flip a byte of the public half: seed and public key disagree.
    FILE *f = fopen(key, "r+b");
    assert_non_null(f);
    fseek(f, 40, SEEK_SET);
    int c = fgetc(f);
    fseek(f, 40, SEEK_SET);
    fputc(c ^ 0xff, f);
    fclose(f);
    assert_int_equal(ms_identity_open(&id, dir, &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "corrupt"));

    assert_int_equal(truncate(key, 10), 0);
    assert_int_equal(ms_identity_open(&id, dir, &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "10 bytes"));
    assert_null(id);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_then_reopen_same_id,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_two_dirs_differ, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_sign_verify, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_curve_keys, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_key_files_refused, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
