/*  =========================================================================
    ms_cert_test - certificates: encoding, signatures, chains, bundles,
    secret key files

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_cert.h"
#include "ms_keys_fixture.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOW 1800000000 // a fixed "now", seconds since the epoch

static int
s_setup(void **state)
{
    return ms_kf_setup(state, "ms_cert_test");
}

//  A leaf for the node, issued by sk, in the pool of auth_pk.
static ms_cert_t
s_leaf(const ms_kf_t *k, const uint8_t *subject, const uint8_t *sk,
       uint32_t roles)
{
    ms_cert_t c;
    memset(&c, 0, sizeof c);
    ms_cert_pool_id(k->auth_pk, c.pool_id);
    memcpy(c.subject, subject, MS_CERT_KEY_BYTES);
    c.roles = roles;
    c.max_workers = 8;
    c.not_after = NOW + 3600;
    c.serial = 7;
    strcpy(c.operator_name, "alice");
    assert_int_equal(ms_cert_sign(&c, sk, NULL), MS_OK);
    return c;
}

//  Encode then decode gives the same certificate; every byte flipped in
//  the encoding breaks either the decode or the signature.
static void
test_roundtrip_and_every_flipped_byte_fails(void **state)
{
    ms_kf_t *k = *state;
    ms_cert_chain_t ch = {
        .leaf = s_leaf(k, k->node_pk, k->auth_sk, MS_CERT_ROLE_WORKER)};
    uint8_t buf[MS_CERT_CHAIN_MAX_BYTES];
    size_t n = ms_cert_chain_encode(&ch, buf);
    assert_true(n > 100);
    ms_cert_chain_t back;
    assert_int_equal(ms_cert_chain_decode(buf, n, &back, NULL), MS_OK);
    assert_memory_equal(&back.leaf, &ch.leaf, sizeof ch.leaf);
    assert_int_equal(ms_cert_chain_verify(&back, k->auth_pk, NOW, NULL), MS_OK);
    for (size_t i = 0; i < n; i++) {
        uint8_t bad[MS_CERT_CHAIN_MAX_BYTES];
        memcpy(bad, buf, n);
        bad[i] ^= 0x01;
        ms_cert_chain_t c;
        if (ms_cert_chain_decode(bad, n, &c, NULL) != MS_OK)
            continue;
        assert_int_not_equal(ms_cert_chain_verify(&c, k->auth_pk, NOW, NULL),
                             MS_OK);
    }
    // Truncations and trailing bytes are refused.
    for (size_t m = 0; m < n; m++)
        assert_int_equal(ms_cert_chain_decode(buf, m, &back, NULL),
                         MS_ERR_PROTOCOL);
    buf[n] = 0;
    assert_int_equal(ms_cert_chain_decode(buf, n + 1, &back, NULL),
                     MS_ERR_PROTOCOL);
}

//  Wrong authority, other pool, expired, self-signed: each refused with
//  its own code.
static void
test_refusals(void **state)
{
    ms_kf_t *k = *state;
    ms_diag_t d;
    ms_cert_chain_t ch = {
        .leaf = s_leaf(k, k->node_pk, k->auth_sk, MS_CERT_ROLE_WORKER)};
    // expired
    assert_int_equal(ms_cert_chain_verify(&ch, k->auth_pk, NOW + 7200, &d),
                     MS_ERR_EXPIRED);
    // another authority's pool
    assert_int_equal(ms_cert_chain_verify(&ch, k->other_pk, NOW, &d),
                     MS_ERR_UNTRUSTED);
    // forged: the node signs its own certificate for the right pool
    ms_cert_chain_t forged = {
        .leaf = s_leaf(k, k->node_pk, k->node_sk, MS_CERT_ROLE_WORKER)};
    assert_int_equal(ms_cert_chain_verify(&forged, k->auth_pk, NOW, &d),
                     MS_ERR_UNTRUSTED);
    assert_non_null(strstr(d.reason, "authority"));
    // a changed field after signing
    ch.leaf.roles |= MS_CERT_ROLE_SUBMIT;
    assert_int_equal(ms_cert_chain_verify(&ch, k->auth_pk, NOW, &d),
                     MS_ERR_BADSIG);
    // bad operator names are refused at signing
    ms_cert_t c = s_leaf(k, k->node_pk, k->auth_sk, MS_CERT_ROLE_WORKER);
    strcpy(c.operator_name, "bad\tname");
    assert_int_equal(ms_cert_sign(&c, k->auth_sk, &d), MS_ERR_INVALID);
    c.operator_name[0] = 0;
    assert_int_equal(ms_cert_sign(&c, k->auth_sk, &d), MS_ERR_INVALID);
}

//  An enrollment key certified with `enroll` issues leaves; without the
//  role, or widening roles, the chain is refused.
static void
test_enrollment_chain(void **state)
{
    ms_kf_t *k = *state;
    ms_cert_chain_t ch = {
        .leaf = s_leaf(k, k->node_pk, k->other_sk, MS_CERT_ROLE_WORKER),
        .has_enroller = true,
        .enroller = s_leaf(k, k->other_pk, k->auth_sk,
                           MS_CERT_ROLE_WORKER | MS_CERT_ROLE_ENROLL)};
    assert_int_equal(ms_cert_chain_verify(&ch, k->auth_pk, NOW, NULL), MS_OK);
    uint8_t buf[MS_CERT_CHAIN_MAX_BYTES];
    size_t n = ms_cert_chain_encode(&ch, buf);
    ms_cert_chain_t back;
    assert_int_equal(ms_cert_chain_decode(buf, n, &back, NULL), MS_OK);
    assert_true(back.has_enroller);
    assert_int_equal(ms_cert_chain_verify(&back, k->auth_pk, NOW, NULL), MS_OK);
    // leaf asks for submit, which the enrollment key does not have
    ms_cert_chain_t wide = ch;
    wide.leaf = s_leaf(k, k->node_pk, k->other_sk,
                       MS_CERT_ROLE_WORKER | MS_CERT_ROLE_SUBMIT);
    assert_int_equal(ms_cert_chain_verify(&wide, k->auth_pk, NOW, NULL),
                     MS_ERR_UNTRUSTED);
    // enrollment certificate without the enroll role
    ms_cert_chain_t norole = ch;
    norole.enroller = s_leaf(k, k->other_pk, k->auth_sk, MS_CERT_ROLE_WORKER);
    assert_int_equal(ms_cert_chain_verify(&norole, k->auth_pk, NOW, NULL),
                     MS_ERR_UNTRUSTED);
    // a chain of three is not a chain we read
    buf[0] = 3;
    assert_int_equal(ms_cert_chain_decode(buf, n, &back, NULL),
                     MS_ERR_PROTOCOL);
}

//  Bundles: save, load, and a bundle whose authority key does not match
//  its pool id is refused.
static void
test_bundle_file(void **state)
{
    ms_kf_t *k = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/node.cert", k->dir);
    ms_cert_chain_t ch = {
        .leaf = s_leaf(k, k->node_pk, k->auth_sk, MS_CERT_ROLE_WORKER)};
    assert_int_equal(ms_cert_bundle_save(path, k->auth_pk, &ch, NULL), MS_OK);
    uint8_t apk[MS_CERT_KEY_BYTES];
    ms_cert_chain_t back;
    ms_diag_t d;
    assert_int_equal(ms_cert_bundle_load(path, apk, &back, NOW, &d), MS_OK);
    assert_memory_equal(apk, k->auth_pk, sizeof apk);
    assert_memory_equal(&back.leaf, &ch.leaf, sizeof ch.leaf);
    // another authority key in the bundle: refused
    assert_int_equal(ms_cert_bundle_save(path, k->other_pk, &ch, NULL), MS_OK);
    assert_int_equal(ms_cert_bundle_load(path, apk, &back, NOW, &d),
                     MS_ERR_UNTRUSTED);
    // garbage
    FILE *f = fopen(path, "w");
    fputs("hello world\n", f);
    fclose(f);
    assert_int_equal(ms_cert_bundle_load(path, apk, &back, NOW, &d),
                     MS_ERR_INVALID);
    assert_non_null(strstr(d.where, "node.cert"));
    snprintf(path, sizeof path, "%s/missing.cert", k->dir);
    assert_int_equal(ms_cert_bundle_load(path, apk, &back, NOW, &d),
                     MS_ERR_NOTFOUND);
}

//  Secret files: 0600, not overwritten, refused when others can read.
static void
test_secret_file(void **state)
{
    ms_kf_t *k = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/authority.key", k->dir);
    assert_int_equal(ms_cert_secret_save(path, k->auth_sk, NULL), MS_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(ms_cert_secret_save(path, k->node_sk, NULL),
                     MS_ERR_CONFLICT);
    uint8_t sk[MS_CERT_SECRET_BYTES];
    assert_int_equal(ms_cert_secret_load(path, sk, NULL), MS_OK);
    assert_memory_equal(sk, k->auth_sk, sizeof sk);
    chmod(path, 0644);
    ms_diag_t d;
    assert_int_equal(ms_cert_secret_load(path, sk, &d), MS_ERR_INVALID);
    assert_non_null(strstr(d.reason, "readable by others"));
}

//  Enrollment kit: saved 0600, loaded back, issues a chain the authority
//  key verifies; a kit readable by others is refused.
static void
test_enrollment_kit(void **state)
{
    ms_kf_t *k = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/cluster.enroll", k->dir);
    ms_cert_t ec = s_leaf(k, k->other_pk, k->auth_sk,
                          MS_CERT_ROLE_WORKER | MS_CERT_ROLE_ENROLL);
    assert_int_equal(
        ms_cert_enroll_save(path, k->auth_pk, k->other_sk, &ec, NULL), MS_OK);
    assert_int_equal(
        ms_cert_enroll_save(path, k->auth_pk, k->other_sk, &ec, NULL),
        MS_ERR_CONFLICT);
    uint8_t apk[MS_CERT_KEY_BYTES], esk[MS_CERT_SECRET_BYTES];
    ms_cert_t back;
    ms_diag_t d;
    assert_int_equal(ms_cert_enroll_load(path, apk, esk, &back, NOW, &d),
                     MS_OK);
    assert_memory_equal(esk, k->other_sk, sizeof esk);
    ms_cert_chain_t ch;
    assert_int_equal(
        ms_cert_enroll_issue(esk, &back, k->node_pk, NOW + 60, 1, &ch, &d),
        MS_OK);
    assert_int_equal(ch.leaf.roles, MS_CERT_ROLE_WORKER);
    assert_string_equal(ch.leaf.operator_name, "alice");
    assert_int_equal(ms_cert_chain_verify(&ch, k->auth_pk, NOW, &d), MS_OK);
    assert_int_equal(ms_cert_enroll_load(path, apk, esk, &back, NOW + 7200, &d),
                     MS_ERR_EXPIRED);
    chmod(path, 0640);
    assert_int_equal(ms_cert_enroll_load(path, apk, esk, &back, NOW, &d),
                     MS_ERR_INVALID);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_roundtrip_and_every_flipped_byte_fails, s_setup,
            ms_kf_teardown),
        cmocka_unit_test_setup_teardown(test_refusals, s_setup, ms_kf_teardown),
        cmocka_unit_test_setup_teardown(test_enrollment_chain, s_setup,
                                        ms_kf_teardown),
        cmocka_unit_test_setup_teardown(test_bundle_file, s_setup,
                                        ms_kf_teardown),
        cmocka_unit_test_setup_teardown(test_secret_file, s_setup,
                                        ms_kf_teardown),
        cmocka_unit_test_setup_teardown(test_enrollment_kit, s_setup,
                                        ms_kf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
