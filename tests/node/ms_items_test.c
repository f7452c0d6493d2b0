/*  =========================================================================
    ms_items_test - the grow-only set of authority items: checking (chains
    with expiry ignored, revocations), digests of the set, and the
    reconciliation of two sets by digest lists

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_authority_item.h"
#include "ms_cert.h"
#include "ms_items.h"
#include "ms_items_fixture.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  --------------------------------------------------------------------------
//  Item bytes of a chain for a fresh node key, signed by signer_sk.

static size_t
s_chain_item(uint8_t *out, const ms_if_pool_t *p, const uint8_t *signer_sk,
             int64_t not_after, const char *op, uint8_t node_pk[32])
{
    uint8_t nsk[64];
    assert_int_equal(ms_cert_keypair(node_pk, nsk), MS_OK);
    ms_cert_chain_t chain;
    memset(&chain, 0, sizeof chain);
    memcpy(chain.leaf.pool_id, p->pool_id, 32);
    memcpy(chain.leaf.subject, node_pk, 32);
    chain.leaf.roles = MS_CERT_ROLE_WORKER;
    chain.leaf.not_after = not_after;
    chain.leaf.serial = 1;
    strcpy(chain.leaf.operator_name, op);
    assert_int_equal(ms_cert_sign(&chain.leaf, signer_sk, NULL), MS_OK);
    size_t n = ms_items_encode_chain(&chain, out);
    assert_true(n > 1);
    return n;
}

//  --------------------------------------------------------------------------
//  A valid chain checks, also once expired (old records keep their
//  operator); a chain of another pool, a forged one and one with a byte
//  changed are refused with the reason.

static void
test_check_chain(void **state)
{
    (void) state;
    ms_if_pool_t p, other;
    ms_if_pool(&p);
    ms_if_pool(&other);
    uint8_t buf[MS_ITEMS_MAX_BYTES], node[32];
    ms_items_parsed_t it;
    ms_diag_t diag;

    size_t n = s_chain_item(buf, &p, p.sk, 0, "alice", node);
    assert_int_equal(ms_items_check(buf, n, p.pk, &it, &diag), MS_OK);
    assert_int_equal(it.type, MS_ITEMS_CHAIN);
    assert_string_equal(it.chain.leaf.operator_name, "alice");
    assert_memory_equal(it.chain.leaf.subject, node, 32);
    ms_hash_t h;
    ms_hash_bytes(buf, n, &h);
    assert_memory_equal(it.digest.bytes, h.bytes, 32);

    n = s_chain_item(buf, &p, p.sk, 1000, "old", node); // expired in 1970
    assert_int_equal(ms_items_check(buf, n, p.pk, &it, &diag), MS_OK);

    n = s_chain_item(buf, &other, other.sk, 0, "bob", node);
    assert_int_equal(ms_items_check(buf, n, p.pk, &it, &diag),
                     MS_ERR_UNTRUSTED);

    //  our pool id, signed by another key: forged
    uint8_t nsk[64];
    ms_cert_chain_t forged;
    memset(&forged, 0, sizeof forged);
    assert_int_equal(ms_cert_keypair(node, nsk), MS_OK);
    memcpy(forged.leaf.pool_id, p.pool_id, 32);
    memcpy(forged.leaf.subject, node, 32);
    forged.leaf.roles = MS_CERT_ROLE_WORKER;
    strcpy(forged.leaf.operator_name, "mallory");
    assert_int_equal(ms_cert_sign(&forged.leaf, other.sk, NULL), MS_OK);
    n = ms_items_encode_chain(&forged, buf);
    assert_int_not_equal(ms_items_check(buf, n, p.pk, &it, &diag), MS_OK);

    n = s_chain_item(buf, &p, p.sk, 0, "carol", node);
    buf[n - 5] ^= 0x01; // in the signature
    assert_int_equal(ms_items_check(buf, n, p.pk, &it, &diag), MS_ERR_BADSIG);
    buf[n - 5] ^= 0x01;
    buf[0] = 9; // unknown type
    assert_int_equal(ms_items_check(buf, n, p.pk, &it, &diag), MS_ERR_PROTOCOL);
    assert_int_equal(ms_items_check(buf, 1, p.pk, &it, &diag), MS_ERR_PROTOCOL);
}

//  --------------------------------------------------------------------------
//  A revocation checks against its authority only; one byte changed
//  anywhere is refused.

static void
test_check_revocation(void **state)
{
    (void) state;
    ms_if_pool_t p, other;
    ms_if_pool(&p);
    ms_if_pool(&other);
    uint8_t buf[MS_ITEMS_MAX_BYTES], subject[32], sk[64];
    assert_int_equal(ms_cert_keypair(subject, sk), MS_OK);
    size_t n = ms_if_revoke_item(buf, &p, subject);
    ms_items_parsed_t it;
    assert_int_equal(ms_items_check(buf, n, p.pk, &it, NULL), MS_OK);
    assert_int_equal(it.type, MS_ITEMS_AUTHORITY);
    assert_int_equal(it.item.kind, MS_AUTHORITY_ITEM_REVOKE);
    assert_true(it.item.cut_all);
    assert_memory_equal(it.item.subject, subject, 32);
    assert_int_equal(ms_items_check(buf, n, other.pk, &it, NULL),
                     MS_ERR_UNTRUSTED);
    for (size_t i = 1; i < n; i++) {
        buf[i] ^= 0x40;
        assert_int_not_equal(ms_items_check(buf, n, p.pk, &it, NULL), MS_OK);
        buf[i] ^= 0x40;
    }
}

//  --------------------------------------------------------------------------
//  The set is grow-only and keyed by digest; its digest does not depend
//  on the order items were added in.

static void
test_set_digest_order(void **state)
{
    (void) state;
    ms_if_pool_t p;
    ms_if_pool(&p);
    uint8_t items[5][MS_ITEMS_MAX_BYTES], node[32];
    size_t lens[5];
    for (int i = 0; i < 5; i++)
        lens[i] = s_chain_item(items[i], &p, p.sk, 0, "op", node);
    ms_items_t *a = ms_items_new(), *b = ms_items_new();
    assert_non_null(a);
    assert_non_null(b);
    uint8_t empty_a[32], empty_b[32], da[32], db[32];
    ms_items_digest(a, empty_a);
    ms_items_digest(b, empty_b);
    assert_memory_equal(empty_a, empty_b, 32);
    bool added;
    for (int i = 0; i < 5; i++) {
        assert_int_equal(ms_items_add(a, items[i], lens[i], &added), MS_OK);
        assert_true(added);
        assert_int_equal(ms_items_add(b, items[4 - i], lens[4 - i], NULL),
                         MS_OK);
    }
    assert_int_equal(ms_items_add(a, items[2], lens[2], &added), MS_OK);
    assert_false(added); // known already
    assert_int_equal(ms_items_size(a), 5);
    ms_items_digest(a, da);
    ms_items_digest(b, db);
    assert_memory_equal(da, db, 32);
    assert_memory_not_equal(da, empty_a, 32);
    for (size_t i = 1; i < ms_items_size(a); i++)
        assert_true(memcmp(ms_items_at(a, i - 1), ms_items_at(a, i), 32) < 0);
    ms_hash_t h;
    ms_hash_bytes(items[3], lens[3], &h);
    assert_true(ms_items_has(a, h.bytes));
    size_t n = 0;
    const uint8_t *got = ms_items_get(a, h.bytes, &n);
    assert_non_null(got);
    assert_int_equal(n, lens[3]);
    assert_memory_equal(got, items[3], n);
    assert_int_equal(ms_items_add(a, items[0], 0, NULL), MS_ERR_INVALID);
    ms_items_destroy(&a);
    ms_items_destroy(&b);
    assert_null(a);
}

//  --------------------------------------------------------------------------
//  Two sets that overlap converge by exchanging lists and the missing
//  items (what the node does over ITEM_LIST and ITEMS), after which their
//  digests are equal.

static void
test_reconcile(void **state)
{
    (void) state;
    ms_if_pool_t p;
    ms_if_pool(&p);
    enum { N = 12 };
    uint8_t items[N][MS_ITEMS_MAX_BYTES], node[32];
    size_t lens[N];
    for (int i = 0; i < N; i++)
        lens[i] = i % 3 == 0 ? ms_if_revoke_item(items[i], &p, node)
                             : s_chain_item(items[i], &p, p.sk, 0, "op", node);
    ms_items_t *a = ms_items_new(), *b = ms_items_new();
    for (int i = 0; i < N; i++) {
        if (i < 8)
            assert_int_equal(ms_items_add(a, items[i], lens[i], NULL), MS_OK);
        if (i >= 5)
            assert_int_equal(ms_items_add(b, items[i], lens[i], NULL), MS_OK);
    }
    uint8_t da[32], db[32];
    ms_items_digest(a, da);
    ms_items_digest(b, db);
    assert_memory_not_equal(da, db, 32);

    //  a sends its list; b answers with what a lacks and sends its list
    uint8_t(*list_a)[32] = malloc(ms_items_size(a) * 32);
    for (size_t i = 0; i < ms_items_size(a); i++)
        memcpy(list_a[i], ms_items_at(a, i), 32);
    assert_int_equal(ms_items_count_unknown(b, list_a, ms_items_size(a)), 5);
    uint8_t out[N][32];
    size_t n = ms_items_missing(b, list_a, ms_items_size(a), out, N);
    assert_int_equal(n, 4); // items 8..11
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *bytes = ms_items_get(b, out[i], &len);
        assert_non_null(bytes);
        assert_int_equal(ms_items_add(a, bytes, len, NULL), MS_OK);
    }
    uint8_t(*list_b)[32] = malloc(ms_items_size(b) * 32);
    for (size_t i = 0; i < ms_items_size(b); i++)
        memcpy(list_b[i], ms_items_at(b, i), 32);
    n = ms_items_missing(a, list_b, ms_items_size(b), out, 2); // bounded
    assert_int_equal(n, 2);
    n = ms_items_missing(a, list_b, ms_items_size(b), out, N);
    assert_int_equal(n, 5); // items 0..4
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const uint8_t *bytes = ms_items_get(a, out[i], &len);
        assert_int_equal(ms_items_add(b, bytes, len, NULL), MS_OK);
    }
    ms_items_digest(a, da);
    ms_items_digest(b, db);
    assert_memory_equal(da, db, 32);
    assert_int_equal(ms_items_size(a), N);
    assert_int_equal(ms_items_missing(a, list_b, 0, out, N), N);
    free(list_a);
    free(list_b);
    ms_items_destroy(&a);
    ms_items_destroy(&b);
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_chain),
        cmocka_unit_test(test_check_revocation),
        cmocka_unit_test(test_set_digest_order),
        cmocka_unit_test(test_reconcile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
