/*  =========================================================================
    ms_pool_census_test - who counts in the pool: the member count, the
    operators stored with an authority and their number, in an open pool
    one operator per node; a figure written only when it changes

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A real store (tests/support) and a real members table.
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
#include "ms_pool_census.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"
#include "ms_store_fixture.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_pool_census_test");
}

//  --------------------------------------------------------------------------
//  A fresh node key whose chain (operator op) the members table learns.

static void
s_member(ms_members_t *m, const ms_if_pool_t *p, uint8_t pk[32], const char *op)
{
    ms_cert_chain_t chain;
    ms_if_chain(&chain, p, pk, true, op);
    ms_members_refusal_t why;
    assert_int_equal(ms_members_learn(m, &chain, &why), MS_OK);
}

//  The operator the store holds for node (its hex id when none).
static void
s_assert_operator(ms_store_t *store, const uint8_t *node, const char *want)
{
    char op[MS_STORE_OPERATOR_MAX + 1];
    assert_int_equal(ms_store_operator(store, node, op), MS_OK);
    assert_string_equal(op, want);
}

//  --------------------------------------------------------------------------
//  An open pool: every alive linked peer is a member and an operator;
//  an unchanged pool changes nothing; nothing is stored as an operator.

static void
test_open_pool(void **state)
{
    ms_store_t *store = ms_sf_open(*state, NULL, 4 << 20);
    uint8_t self_pk[32], peers[2][32];
    ms_sf_id(self_pk, 0xa0, 1);
    ms_sf_id(peers[0], 0xb0, 2);
    ms_sf_id(peers[1], 0xc0, 3);
    ms_pool_census_t *c = NULL;
    assert_int_equal(ms_pool_census_open(&c, store, self_pk), MS_OK);
    assert_int_equal(ms_pool_census_members(c), 1);
    assert_int_equal(ms_pool_census_operators(c), 1);

    ms_members_t *open = ms_members_new(NULL, peers[0]);
    assert_true(ms_pool_census_update(c, open, "ignored",
                                      (const uint8_t(*)[32]) peers, 2));
    assert_int_equal(ms_pool_census_members(c), 3);
    assert_int_equal(ms_pool_census_operators(c), 3);
    assert_false(ms_pool_census_update(c, open, "ignored",
                                       (const uint8_t(*)[32]) peers, 2));
    assert_false(
        ms_pool_census_update(c, NULL, NULL, (const uint8_t(*)[32]) peers, 2));
    char hex[65];
    sodium_bin2hex(hex, sizeof hex, peers[0], 32);
    s_assert_operator(store, peers[0], hex); // no name stored
    assert_true(ms_pool_census_update(c, open, NULL, NULL, 0));
    assert_int_equal(ms_pool_census_members(c), 1);
    assert_int_equal(ms_pool_census_operators(c), 1);
    ms_members_destroy(&open);
    ms_pool_census_destroy(&c);
    assert_null(c);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  With an authority: operators are the certificates' names, stored for
//  us and each alive linked peer; two nodes of one operator count once;
//  a peer whose operator is unknown is a member but no operator.

static void
test_operators_by_certificate(void **state)
{
    ms_store_t *store = ms_sf_open(*state, NULL, 4 << 20);
    ms_if_pool_t p;
    ms_if_pool(&p);
    ms_members_t *m = ms_members_new(p.pk, p.pool_id);
    uint8_t self_pk[32], peers[4][32];
    s_member(m, &p, self_pk, "alice");
    s_member(m, &p, peers[0], "bob");
    s_member(m, &p, peers[1], "bob");
    s_member(m, &p, peers[2], "dave");
    ms_sf_id(peers[3], 0xe0, 4); // never certified here
    ms_pool_census_t *c = NULL;
    assert_int_equal(ms_pool_census_open(&c, store, self_pk), MS_OK);

    assert_true(
        ms_pool_census_update(c, m, "alice", (const uint8_t(*)[32]) peers, 4));
    assert_int_equal(ms_pool_census_members(c), 5);
    assert_int_equal(ms_pool_census_operators(c), 3); // alice, bob, dave
    s_assert_operator(store, self_pk, "alice");
    s_assert_operator(store, peers[1], "bob");
    s_assert_operator(store, peers[2], "dave");

    //  dave's node gone: one operator less; bob's second node gone: not
    assert_true(
        ms_pool_census_update(c, m, "alice", (const uint8_t(*)[32]) peers, 2));
    assert_int_equal(ms_pool_census_operators(c), 2);
    assert_false(
        ms_pool_census_update(c, m, "alice", (const uint8_t(*)[32]) peers, 1));
    assert_int_equal(ms_pool_census_members(c), 2);
    assert_int_equal(ms_pool_census_operators(c), 2);
    //  alone: only our own operator
    assert_true(ms_pool_census_update(c, m, "alice", NULL, 0));
    assert_int_equal(ms_pool_census_operators(c), 1);
    ms_pool_census_destroy(&c);
    ms_members_destroy(&m);
    ms_store_destroy(&store);
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_pool, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_operators_by_certificate, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
