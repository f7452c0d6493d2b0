/*  =========================================================================
    ms_authority_item_test - revocations and quarantine clears: encoding,
    signatures, one-byte flips, the text file form

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_authority_item.h"
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
    return ms_kf_setup(state, "ms_authority_item_test");
}

//  A revocation of the node with a cut of n_cuts incarnations (0: all),
//  signed by sk.
static ms_authority_item_t
s_revoke(const ms_kf_t *k, uint32_t n_cuts, const uint8_t *sk)
{
    ms_authority_item_t it;
    memset(&it, 0, sizeof it);
    it.kind = MS_AUTHORITY_ITEM_REVOKE;
    memcpy(it.subject, k->node_pk, MS_CERT_KEY_BYTES);
    it.issued_at = NOW;
    it.serial = 42;
    it.cut_all = n_cuts == 0;
    it.n_cuts = n_cuts;
    for (uint32_t i = 0; i < n_cuts; i++) {
        it.cuts[i].incarnation = 0x1000 + i * 7;
        it.cuts[i].max_seq = 100 + i;
    }
    assert_int_equal(ms_authority_item_sign(&it, sk, NULL), MS_OK);
    return it;
}

//  Every byte of the encoding flipped: the decode or the verification
//  fails; truncations and trailing bytes are refused.
static void
s_check_flips(const ms_kf_t *k, const ms_authority_item_t *it)
{
    uint8_t buf[MS_AUTHORITY_ITEM_MAX_BYTES + 1];
    size_t n = ms_authority_item_encode(it, buf);
    assert_true(n > 100);
    ms_authority_item_t back;
    assert_int_equal(ms_authority_item_decode(buf, n, &back, NULL), MS_OK);
    assert_memory_equal(&back, it, sizeof back);
    assert_int_equal(ms_authority_item_verify(&back, k->auth_pk, NULL), MS_OK);
    for (size_t i = 0; i < n; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            uint8_t bad[MS_AUTHORITY_ITEM_MAX_BYTES];
            memcpy(bad, buf, n);
            bad[i] ^= (uint8_t) (1u << bit);
            ms_authority_item_t c;
            if (ms_authority_item_decode(bad, n, &c, NULL) != MS_OK)
                continue;
            assert_int_not_equal(ms_authority_item_verify(&c, k->auth_pk, NULL),
                                 MS_OK);
        }
    }
    for (size_t m = 0; m < n; m++)
        assert_int_equal(ms_authority_item_decode(buf, m, &back, NULL),
                         MS_ERR_PROTOCOL);
    buf[n] = 0;
    assert_int_equal(ms_authority_item_decode(buf, n + 1, &back, NULL),
                     MS_ERR_PROTOCOL);
}

//  Round trips of the three shapes, with every one-byte flip refused.
static void
test_roundtrip_and_every_flipped_byte_fails(void **state)
{
    ms_kf_t *k = *state;
    ms_authority_item_t all = s_revoke(k, 0, k->auth_sk);
    uint8_t pool_id[MS_CERT_POOL_ID_BYTES];
    ms_cert_pool_id(k->auth_pk, pool_id);
    assert_memory_equal(all.pool_id, pool_id, sizeof pool_id);
    assert_memory_equal(all.issuer, k->auth_pk, MS_CERT_KEY_BYTES);
    s_check_flips(k, &all);
    ms_authority_item_t list = s_revoke(k, 3, k->auth_sk);
    s_check_flips(k, &list);
    ms_authority_item_t clear;
    memset(&clear, 0, sizeof clear);
    clear.kind = MS_AUTHORITY_ITEM_CLEAR_QUARANTINE;
    memcpy(clear.subject, k->node_pk, MS_CERT_KEY_BYTES);
    clear.issued_at = NOW;
    clear.serial = 43;
    clear.n_cuts = 2; // the clear's cut of the node's log
    clear.cuts[0].incarnation = 0x1234;
    clear.cuts[0].max_seq = 17;
    clear.cuts[1].incarnation = 0xabcdef;
    clear.cuts[1].max_seq = 3;
    assert_int_equal(ms_authority_item_sign(&clear, k->auth_sk, NULL), MS_OK);
    s_check_flips(k, &clear);
    ms_authority_item_t clear1 = clear; // one incarnation
    clear1.n_cuts = 1;
    memset(&clear1.cuts[1], 0, sizeof clear1.cuts[1]);
    assert_int_equal(ms_authority_item_sign(&clear1, k->auth_sk, NULL), MS_OK);
    s_check_flips(k, &clear1);
    assert_string_equal(ms_authority_item_kind_name(clear.kind),
                        "clear-quarantine");
    assert_string_equal(ms_authority_item_kind_name(all.kind), "revoke");

    // The digest names the item: equal for equal items, different
    // otherwise.
    ms_hash_t h1, h2, h3;
    assert_int_equal(ms_authority_item_digest(&all, &h1), MS_OK);
    assert_int_equal(ms_authority_item_digest(&all, &h2), MS_OK);
    assert_int_equal(ms_authority_item_digest(&list, &h3), MS_OK);
    assert_true(ms_hash_equal(&h1, &h2));
    assert_false(ms_hash_equal(&h1, &h3));
}

//  Another authority, a changed field, a non-canonical cut, an unknown
//  kind: each refused with its own code.
static void
test_refusals(void **state)
{
    ms_kf_t *k = *state;
    ms_diag_t d;
    ms_authority_item_t it = s_revoke(k, 2, k->auth_sk);
    // another pool's authority
    assert_int_equal(ms_authority_item_verify(&it, k->other_pk, &d),
                     MS_ERR_UNTRUSTED);
    // signed by another key but claiming this authority as issuer
    ms_authority_item_t forged = s_revoke(k, 2, k->other_sk);
    memcpy(forged.issuer, k->auth_pk, MS_CERT_KEY_BYTES);
    ms_cert_pool_id(k->auth_pk, forged.pool_id);
    assert_int_equal(ms_authority_item_verify(&forged, k->auth_pk, &d),
                     MS_ERR_BADSIG);
    // a field changed after signing
    ms_authority_item_t changed = it;
    changed.cuts[1].max_seq += 1;
    assert_int_equal(ms_authority_item_verify(&changed, k->auth_pk, &d),
                     MS_ERR_BADSIG);
    // the right issuer in another pool's id
    changed = it;
    ms_cert_pool_id(k->other_pk, changed.pool_id);
    assert_int_equal(ms_authority_item_verify(&changed, k->auth_pk, &d),
                     MS_ERR_UNTRUSTED);
    // non-canonical cuts are refused at signing and at encoding
    ms_authority_item_t bad = it;
    bad.cuts[1].incarnation = bad.cuts[0].incarnation;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    assert_non_null(strstr(d.reason, "increasing"));
    uint8_t buf[MS_AUTHORITY_ITEM_MAX_BYTES];
    assert_int_equal(ms_authority_item_encode(&bad, buf), 0);
    bad = it;
    bad.cut_all = true;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    bad = it;
    bad.n_cuts = MS_AUTHORITY_ITEM_MAX_CUTS + 1;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    bad = it;
    bad.kind = (ms_authority_item_kind_t) 9;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    // a quarantine clear needs a list cut: not 'all', not empty, canonical
    bad = it;
    bad.kind = MS_AUTHORITY_ITEM_CLEAR_QUARANTINE;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d), MS_OK);
    bad.cut_all = true;
    bad.n_cuts = 0;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    assert_non_null(strstr(d.reason, "not 'all'"));
    bad.cut_all = false;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    bad = it;
    bad.kind = MS_AUTHORITY_ITEM_CLEAR_QUARANTINE;
    bad.cuts[1].incarnation = bad.cuts[0].incarnation;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    // the old clear without a cut (kind 2) is refused, in its own old
    // layout (head and signature only) and with a cut after it, and
    // cannot be signed any more
    bad = it;
    bad.kind = MS_AUTHORITY_ITEM_CLEAR_QUARANTINE_V1;
    assert_int_equal(ms_authority_item_sign(&bad, k->auth_sk, &d),
                     MS_ERR_INVALID);
    {
        ms_authority_item_t c = it;
        c.kind = MS_AUTHORITY_ITEM_CLEAR_QUARANTINE;
        assert_int_equal(ms_authority_item_sign(&c, k->auth_sk, &d), MS_OK);
        uint8_t enc[MS_AUTHORITY_ITEM_MAX_BYTES];
        size_t m = ms_authority_item_encode(&c, enc);
        assert_true(m > 0);
        assert_int_equal(enc[4], MS_AUTHORITY_ITEM_CLEAR_QUARANTINE);
        enc[4] = MS_AUTHORITY_ITEM_CLEAR_QUARANTINE_V1;
        ms_authority_item_t o;
        assert_int_equal(ms_authority_item_decode(enc, m, &o, &d),
                         MS_ERR_PROTOCOL);
        assert_non_null(strstr(d.reason, "without a cut"));
        size_t head = 4 + 1 + 3 * 32 + 16; // old layout: head | signature
        memmove(enc + head, enc + m - MS_CERT_SIG_BYTES, MS_CERT_SIG_BYTES);
        assert_int_equal(
            ms_authority_item_decode(enc, head + MS_CERT_SIG_BYTES, &o, &d),
            MS_ERR_PROTOCOL);
        assert_non_null(strstr(d.reason, "without a cut"));
    }
    // decoding refuses a cut flag of 2 and a count over the bound, even
    // with the rest of the bytes present
    size_t n = ms_authority_item_encode(&it, buf);
    size_t flag_at = 4 + 1 + 3 * 32 + 16;
    uint8_t copy[MS_AUTHORITY_ITEM_MAX_BYTES];
    memcpy(copy, buf, n);
    copy[flag_at] = 2;
    ms_authority_item_t out;
    assert_int_equal(ms_authority_item_decode(copy, n, &out, &d),
                     MS_ERR_PROTOCOL);
    memcpy(copy, buf, n);
    copy[flag_at + 1] = 0xff;
    assert_int_equal(ms_authority_item_decode(copy, n, &out, &d),
                     MS_ERR_PROTOCOL);
}

//  The text file: save, load, and refusals of a changed, foreign or
//  malformed file.
static void
test_file(void **state)
{
    ms_kf_t *k = *state;
    ms_diag_t d;
    char path[128];
    snprintf(path, sizeof path, "%s/node.revoke", k->dir);
    ms_authority_item_t it = s_revoke(k, 1, k->auth_sk);
    assert_int_equal(ms_authority_item_save(path, &it, &d), MS_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0022, 0); // not writable by others
    ms_authority_item_t back;
    assert_int_equal(ms_authority_item_load(path, &back, &d), MS_OK);
    assert_memory_equal(&back, &it, sizeof it);
    assert_int_equal(ms_authority_item_verify(&back, k->auth_pk, &d), MS_OK);

    // One base64 character changed: refused (decode or signature).
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[4096];
    assert_non_null(fgets(line, sizeof line, f));
    fclose(f);
    size_t at = strlen("meshsweep-authority-item-v1 ") + 60;
    line[at] = line[at] == 'A' ? 'B' : 'A';
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(line, f);
    fclose(f);
    int rc = ms_authority_item_load(path, &back, &d);
    assert_int_not_equal(rc, MS_OK);
    assert_non_null(strstr(d.where, "node.revoke"));

    // Not an item at all; missing.
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("meshsweep-cert-v1 00 AAAA\n", f);
    fclose(f);
    assert_int_equal(ms_authority_item_load(path, &back, &d), MS_ERR_INVALID);
    assert_non_null(strstr(d.reason, "not a meshsweep authority item"));
    unlink(path);
    assert_int_equal(ms_authority_item_load(path, &back, &d), MS_ERR_NOTFOUND);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_roundtrip_and_every_flipped_byte_fails, s_setup,
            ms_kf_teardown),
        cmocka_unit_test_setup_teardown(test_refusals, s_setup, ms_kf_teardown),
        cmocka_unit_test_setup_teardown(test_file, s_setup, ms_kf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
