/*  =========================================================================
    ms_members_test - the membership table: admission by certificate and
    in an open pool, refusal reasons, denial, revocation and its cut

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_cert.h"
#include "ms_identity.h"
#include "ms_members.h"

#include <sodium.h>
#include <string.h>
#include <time.h>

//  A pool: authority key pair and id.
typedef struct {
    uint8_t pk[32], sk[64], pool_id[32];
} s_pool_t;

static void
s_pool(s_pool_t *p)
{
    assert_int_equal(ms_cert_keypair(p->pk, p->sk), MS_OK);
    ms_cert_pool_id(p->pk, p->pool_id);
}

//  A chain for a fresh node key (into node_pk) issued by signer_sk, in
//  pool_id, expiring at not_after.
static void
s_chain(ms_cert_chain_t *chain, const uint8_t *pool_id,
        const uint8_t *signer_sk, int64_t not_after, const char *op,
        uint8_t node_pk[32])
{
    uint8_t nsk[64];
    assert_int_equal(ms_cert_keypair(node_pk, nsk), MS_OK);
    memset(chain, 0, sizeof *chain);
    memcpy(chain->leaf.pool_id, pool_id, 32);
    memcpy(chain->leaf.subject, node_pk, 32);
    chain->leaf.roles = MS_CERT_ROLE_WORKER;
    chain->leaf.max_workers = 4;
    chain->leaf.not_after = not_after;
    chain->leaf.serial = 1;
    strcpy(chain->leaf.operator_name, op);
    assert_int_equal(ms_cert_sign(&chain->leaf, signer_sk, NULL), MS_OK);
}

//  --------------------------------------------------------------------------
//  A valid certificate admits its key, with operator, roles and CURVE key.

static void
test_admit_by_certificate(void **state)
{
    (void) state;
    s_pool_t p;
    s_pool(&p);
    ms_members_t *m = ms_members_new(p.pk, p.pool_id);
    assert_non_null(m);
    assert_true(ms_members_has_authority(m));
    ms_cert_chain_t chain;
    uint8_t node[32], curve[32];
    int64_t now = (int64_t) time(NULL);
    s_chain(&chain, p.pool_id, p.sk, now + 3600, "alice", node);
    ms_members_refusal_t why;
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why), MS_OK);
    assert_true(ms_members_is_member(m, node, now));
    assert_false(ms_members_is_member(m, node, now + 7200)); // expired then
    assert_string_equal(ms_members_operator(m, node), "alice");
    const ms_member_t *e = ms_members_find(m, node);
    assert_non_null(e);
    assert_int_equal(e->roles, MS_CERT_ROLE_WORKER);
    assert_int_equal(e->max_workers, 4);
    assert_int_equal(ms_identity_curve_public(node, curve), MS_OK);
    assert_ptr_equal(ms_members_find_curve(m, curve), e);
    assert_int_equal(ms_members_count(m, MS_MEMBER_ADMITTED), 1);
    assert_true(ms_members_counts(m, node, 9, 1000));
    ms_members_destroy(&m);
    assert_null(m);
}

//  --------------------------------------------------------------------------
//  Each kind of bad certificate is refused with its own reason.

static void
test_refusal_reasons(void **state)
{
    (void) state;
    s_pool_t p, other;
    s_pool(&p);
    s_pool(&other);
    ms_members_t *m = ms_members_new(p.pk, p.pool_id);
    int64_t now = (int64_t) time(NULL);
    ms_cert_chain_t chain;
    uint8_t node[32];
    ms_members_refusal_t why;

    assert_int_equal(ms_members_admit(m, NULL, now, 0, &why), MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_NO_CERT);

    s_chain(&chain, other.pool_id, other.sk, 0, "bob", node);
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_OTHER_POOL);

    s_chain(&chain, p.pool_id, p.sk, now - 10, "carol", node);
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_EXPIRED);

    // our pool id, signed by another authority: forged
    s_chain(&chain, p.pool_id, other.sk, 0, "mallory", node);
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_BAD_SIG);

    // a valid certificate with one byte changed
    s_chain(&chain, p.pool_id, p.sk, 0, "dave", node);
    chain.leaf.max_workers ^= 1;
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_BAD_SIG);
    assert_false(ms_members_is_member(m, node, now));
    assert_int_equal(ms_members_count(m, MS_MEMBER_ADMITTED), 0);
    assert_string_equal(ms_members_refusal_name(MS_MEMBERS_REFUSED_BAD_SIG),
                        "bad_signature");
    ms_members_destroy(&m);
}

//  --------------------------------------------------------------------------
//  A denied key is refused until its time runs out; a revoked key for
//  good, and only records within its cut count.

//  --------------------------------------------------------------------------
//  Revoking an enrollment key shuts off every node it enrolled (a stolen
//  kit), without revoking their own keys: a chain from the authority
//  brings such a node back.

static void
test_revoked_enrollment_key(void **state)
{
    (void) state;
    s_pool_t p;
    s_pool(&p);
    ms_members_t *m = ms_members_new(p.pk, p.pool_id);
    int64_t now = (int64_t) time(NULL);
    uint8_t epk[32], esk[64], node[32], nsk[64];
    assert_int_equal(ms_cert_keypair(epk, esk), MS_OK);
    assert_int_equal(ms_cert_keypair(node, nsk), MS_OK);
    ms_cert_t ec;
    memset(&ec, 0, sizeof ec);
    memcpy(ec.pool_id, p.pool_id, 32);
    memcpy(ec.subject, epk, 32);
    ec.roles = MS_CERT_ROLE_WORKER | MS_CERT_ROLE_ENROLL;
    strcpy(ec.operator_name, "cluster");
    assert_int_equal(ms_cert_sign(&ec, p.sk, NULL), MS_OK);
    ms_cert_chain_t chain;
    assert_int_equal(ms_cert_enroll_issue(esk, &ec, node, 0, 1, &chain, NULL),
                     MS_OK);
    ms_members_refusal_t why;
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why), MS_OK);
    assert_true(ms_members_is_member(m, node, now));

    assert_int_equal(ms_members_revoke(m, epk, NULL), MS_OK);
    assert_false(ms_members_is_member(m, node, now)); // its link closes
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_REVOKED);
    // another node enrolled with the stolen kit later: refused too
    uint8_t rogue[32], rsk[64];
    assert_int_equal(ms_cert_keypair(rogue, rsk), MS_OK);
    ms_cert_chain_t rc;
    assert_int_equal(ms_cert_enroll_issue(esk, &ec, rogue, 0, 2, &rc, NULL),
                     MS_OK);
    assert_int_equal(ms_members_admit(m, &rc, now, 0, &why), MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_REVOKED);
    // the honest node, given a chain by the authority itself, is back
    ms_cert_chain_t direct;
    memset(&direct, 0, sizeof direct);
    direct.leaf = chain.leaf;
    direct.leaf.serial = 3;
    assert_int_equal(ms_cert_sign(&direct.leaf, p.sk, NULL), MS_OK);
    assert_int_equal(ms_members_admit(m, &direct, now, 0, &why), MS_OK);
    assert_true(ms_members_is_member(m, node, now));
    ms_members_destroy(&m);
}

static void
test_deny_and_revoke(void **state)
{
    (void) state;
    s_pool_t p;
    s_pool(&p);
    ms_members_t *m = ms_members_new(p.pk, p.pool_id);
    int64_t now = (int64_t) time(NULL);
    ms_cert_chain_t chain;
    uint8_t node[32];
    ms_members_refusal_t why;
    s_chain(&chain, p.pool_id, p.sk, 0, "erin", node);

    assert_int_equal(ms_members_deny(m, node, 1000), MS_OK);
    assert_int_equal(ms_members_admit(m, &chain, now, 500, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_DENIED);
    assert_false(ms_members_counts(m, node, 1, 1));
    assert_int_equal(ms_members_admit(m, &chain, now, 1000, &why), MS_OK);
    assert_true(ms_members_is_member(m, node, now));

    ms_members_cut_t cut = {.all = false, .n = 1};
    cut.upto[0].incarnation = 42;
    cut.upto[0].seq = 10;
    assert_int_equal(ms_members_revoke(m, node, &cut), MS_OK);
    assert_false(ms_members_is_member(m, node, now));
    // its operator stays known for its old records (verification)
    assert_string_equal(ms_members_operator(m, node), "erin");
    assert_true(ms_members_known(m, node));
    assert_true(ms_members_counts(m, node, 42, 10));
    assert_false(ms_members_counts(m, node, 42, 11));
    assert_false(ms_members_counts(m, node, 43, 1));
    // final: neither a new certificate nor a denial brings it back
    assert_int_equal(ms_members_admit(m, &chain, now, 5000, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_REVOKED);
    assert_int_equal(ms_members_deny(m, node, 1), MS_OK);
    assert_int_equal(ms_members_find(m, node)->state, MS_MEMBER_REVOKED);
    assert_int_equal(ms_members_count(m, MS_MEMBER_REVOKED), 1);

    // revoking an unknown key: it can never be admitted
    uint8_t stranger[32];
    s_chain(&chain, p.pool_id, p.sk, 0, "frank", stranger);
    assert_int_equal(ms_members_revoke(m, stranger, NULL), MS_OK);
    assert_false(ms_members_counts(m, stranger, 1, 1));
    assert_int_equal(ms_members_admit(m, &chain, now, 0, &why),
                     MS_ERR_UNTRUSTED);
    // a key that is no Ed25519 point is refused
    uint8_t bad[32];
    memset(bad, 0xff, sizeof bad);
    assert_int_equal(ms_members_revoke(m, bad, NULL), MS_ERR_INVALID);
    ms_members_destroy(&m);
}

//  --------------------------------------------------------------------------
//  Chains learned from authority items: expired ones too (old records
//  keep their operator), never another pool's or a forged one; a revoked
//  key learns its operator but stays revoked; two revocations keep the
//  intersection of their cuts, whatever their order.

static void
test_learn_and_cuts(void **state)
{
    (void) state;
    s_pool_t p, other;
    s_pool(&p);
    s_pool(&other);
    ms_members_t *m = ms_members_new(p.pk, p.pool_id);
    int64_t now = (int64_t) time(NULL);
    ms_cert_chain_t chain;
    uint8_t node[32], old[32], rev[32];
    ms_members_refusal_t why;

    s_chain(&chain, p.pool_id, p.sk, 0, "grace", node);
    assert_false(ms_members_known(m, node));
    assert_null(ms_members_operator(m, node));
    assert_int_equal(ms_members_learn(m, &chain, &why), MS_OK);
    assert_true(ms_members_known(m, node));
    assert_string_equal(ms_members_operator(m, node), "grace");
    assert_true(ms_members_counts(m, node, 1, 99));

    s_chain(&chain, p.pool_id, p.sk, now - 3600, "heidi", old);
    assert_int_equal(ms_members_learn(m, &chain, &why), MS_OK);
    assert_string_equal(ms_members_operator(m, old), "heidi");
    assert_false(ms_members_is_member(m, old, now)); // expired: no link
    assert_true(ms_members_counts(m, old, 1, 1));    // old records count

    s_chain(&chain, other.pool_id, other.sk, 0, "ivan", node);
    assert_int_equal(ms_members_learn(m, &chain, &why), MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_OTHER_POOL);
    s_chain(&chain, p.pool_id, other.sk, 0, "judy", node);
    assert_int_equal(ms_members_learn(m, &chain, &why), MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_BAD_SIG);
    assert_false(ms_members_known(m, node));

    // revoked first, chain learned later: operator known, still revoked
    s_chain(&chain, p.pool_id, p.sk, 0, "karl", rev);
    ms_members_cut_t c1 = {.all = false, .n = 2};
    c1.upto[0].incarnation = 5;
    c1.upto[0].seq = 20;
    c1.upto[1].incarnation = 6;
    c1.upto[1].seq = 3;
    ms_members_cut_t c2 = {.all = false, .n = 1};
    c2.upto[0].incarnation = 5;
    c2.upto[0].seq = 10;
    assert_int_equal(ms_members_revoke(m, rev, &c1), MS_OK);
    assert_false(ms_members_known(m, rev));
    assert_int_equal(ms_members_learn(m, &chain, &why), MS_OK);
    assert_true(ms_members_known(m, rev));
    assert_string_equal(ms_members_operator(m, rev), "karl");
    assert_int_equal(ms_members_find(m, rev)->state, MS_MEMBER_REVOKED);
    assert_true(ms_members_counts(m, rev, 6, 3));
    assert_true(ms_members_counts(m, rev, 5, 20));
    assert_int_equal(ms_members_revoke(m, rev, &c2), MS_OK);
    assert_true(ms_members_counts(m, rev, 5, 10));
    assert_false(ms_members_counts(m, rev, 5, 11));
    assert_false(ms_members_counts(m, rev, 6, 1));            // not in c2
    assert_int_equal(ms_members_revoke(m, rev, NULL), MS_OK); // all
    assert_false(ms_members_counts(m, rev, 5, 1));
    assert_int_equal(ms_members_revoke(m, rev, &c1), MS_OK); // stays all
    assert_false(ms_members_counts(m, rev, 5, 1));
    ms_members_destroy(&m);

    uint8_t pool_id[32] = {1};
    m = ms_members_new(NULL, pool_id);
    assert_int_equal(ms_members_learn(m, &chain, &why), MS_ERR_INVALID);
    ms_members_destroy(&m);
}

//  --------------------------------------------------------------------------
//  In an open pool every valid HELLO is its own operator.

static void
test_open_pool(void **state)
{
    (void) state;
    uint8_t pool_id[32] = {7}, a[32], b[32], sk[64];
    ms_cert_keypair(a, sk);
    ms_cert_keypair(b, sk);
    ms_members_t *m = ms_members_new(NULL, pool_id);
    assert_false(ms_members_has_authority(m));
    ms_members_refusal_t why;
    assert_int_equal(ms_members_admit_open(m, a, "lab-a", 0, &why), MS_OK);
    assert_int_equal(ms_members_admit_open(m, b, NULL, 0, &why), MS_OK);
    assert_string_equal(ms_members_operator(m, a), "lab-a");
    char shortb[13];
    for (int i = 0; i < 6; i++)
        snprintf(shortb + 2 * i, 3, "%02x", b[i]);
    assert_string_equal(ms_members_operator(m, b), shortb);
    assert_true(ms_members_is_member(m, b, (int64_t) time(NULL)));
    assert_int_equal(ms_members_check(m, NULL, 0, 0, &why, NULL), MS_OK);
    assert_int_equal(ms_members_revoke(m, a, NULL), MS_OK);
    assert_int_equal(ms_members_admit_open(m, a, "lab-a", 0, &why),
                     MS_ERR_UNTRUSTED);
    assert_int_equal(why, MS_MEMBERS_REFUSED_REVOKED);

    // a certificate arrives (SIGHUP): admissions of the open pool go,
    // the revocation stays
    s_pool_t p;
    s_pool(&p);
    ms_members_set_authority(m, p.pk, p.pool_id);
    assert_true(ms_members_has_authority(m));
    assert_null(ms_members_find(m, b));
    assert_non_null(ms_members_find(m, a));
    assert_int_equal(ms_members_admit_open(m, b, NULL, 0, &why),
                     MS_ERR_INVALID);
    ms_members_destroy(&m);
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_admit_by_certificate),
        cmocka_unit_test(test_refusal_reasons),
        cmocka_unit_test(test_deny_and_revoke),
        cmocka_unit_test(test_revoked_enrollment_key),
        cmocka_unit_test(test_learn_and_cuts),
        cmocka_unit_test(test_open_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
