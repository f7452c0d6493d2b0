/*  =========================================================================
    ms_node_admission_test - two nodes of a pool with an authority in one
    process: one starts with node.cert, the other alone and joins on
    ms_node_reload_certificate; then ms_node_revoke cuts it off

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Loopback only, no beacon; every wait is bounded.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_cert.h"
#include "ms_hash.h"
#include "ms_node.h"
#include "ms_node_testdata.h"
#include "ms_node_fixture.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  Open node NAME (no open pool) on port with static peers.

static ms_node_t *
s_open(const char *name, int port, const char *const *peers, int n_peers)
{
    char dir[512];
    ms_node_options_t opts;
    ms_nf_options(&opts, dir, sizeof dir, name, 1);
    ms_nf_mesh(&opts, port, peers, n_peers);
    return ms_nf_open(&opts);
}

//  --------------------------------------------------------------------------
//  Write a bundle for node_hex (operator op) into NAME/identity/node.cert.

static void
s_invite(const char *name, const char *node_hex, const char *op,
         const uint8_t *apk, const uint8_t *ask)
{
    ms_cert_chain_t chain;
    memset(&chain, 0, sizeof chain);
    ms_cert_pool_id(apk, chain.leaf.pool_id);
    ms_hash_t id;
    assert_int_equal(ms_hash_from_hex(node_hex, &id), MS_OK);
    memcpy(chain.leaf.subject, id.bytes, 32);
    chain.leaf.roles = MS_CERT_ROLE_WORKER | MS_CERT_ROLE_SUBMIT;
    snprintf(chain.leaf.operator_name, sizeof chain.leaf.operator_name, "%s",
             op);
    assert_int_equal(ms_cert_sign(&chain.leaf, ask, NULL), MS_OK);
    char path[600];
    snprintf(path, sizeof path, "%s/%s/identity/node.cert", ms_td_root, name);
    assert_int_equal(ms_cert_bundle_save(path, apk, &chain, NULL), MS_OK);
}

//  --------------------------------------------------------------------------
//  Whether node lists peer_hex linked and alive.

static bool
s_linked(ms_node_t *node, const char *peer_hex)
{
    json_t *peers = ms_node_peers_json(node);
    bool linked = false;
    size_t i;
    json_t *p;
    json_array_foreach(peers, i, p)
    {
        const char *id = json_string_value(json_object_get(p, "node_id"));
        const char *st = json_string_value(json_object_get(p, "state"));
        if (id && st && strcmp(id, peer_hex) == 0 &&
            json_is_true(json_object_get(p, "linked")) &&
            strcmp(st, "alive") == 0)
            linked = true;
    }
    json_decref(peers);
    return linked;
}

//  --------------------------------------------------------------------------
//  Poll both nodes for up to ms milliseconds, or until done() holds.

static bool
s_poll(ms_node_t *a, ms_node_t *b, int ms, bool (*done)(void *), void *arg)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        assert_int_equal(ms_node_poll(a, 5), MS_OK);
        assert_int_equal(ms_node_poll(b, 5), MS_OK);
        if (done && done(arg))
            return true;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >
            ms)
            return !done;
    }
}

typedef struct {
    ms_node_t *a, *b;
    char a_hex[65], b_hex[65];
} s_pair_t;

static bool
s_both_linked(void *arg)
{
    s_pair_t *p = arg;
    return s_linked(p->a, p->b_hex) && s_linked(p->b, p->a_hex);
}

//  --------------------------------------------------------------------------
//  A starts with its certificate, B alone; B joins on reload; A revokes
//  B: the link goes and stays gone.

static void
test_reload_joins_revoke_cuts(void **state)
{
    (void) state;
    uint8_t apk[32], ask[64];
    assert_int_equal(ms_cert_keypair(apk, ask), MS_OK);
    s_pair_t p;
    // identities first (a node makes its key at open)
    ms_node_t *a = s_open("a", 0, NULL, 0);
    ms_node_t *b = s_open("b", 0, NULL, 0);
    snprintf(p.a_hex, sizeof p.a_hex, "%s", ms_node_id_hex(a));
    snprintf(p.b_hex, sizeof p.b_hex, "%s", ms_node_id_hex(b));
    assert_false(ms_node_has_certificate(a));
    assert_null(ms_node_pool_id_hex(a));
    assert_int_equal(ms_node_mesh_port(a), 0);
    ms_node_destroy(&a);
    ms_node_destroy(&b);

    int port_a = ms_td_free_port(), port_b = ms_td_free_port();
    char spec_a[200], spec_b[200];
    snprintf(spec_a, sizeof spec_a, "%s@tcp://127.0.0.1:%d", p.a_hex, port_a);
    snprintf(spec_b, sizeof spec_b, "%s@tcp://127.0.0.1:%d", p.b_hex, port_b);
    const char *to_a[] = {spec_a}, *to_b[] = {spec_b};
    s_invite("a", p.a_hex, "alice", apk, ask);
    p.a = a = s_open("a", port_a, to_b, 1);
    p.b = b = s_open("b", port_b, to_a, 1);
    assert_true(ms_node_has_certificate(a));
    assert_string_equal(ms_node_operator(a), "alice");
    assert_false(ms_node_has_certificate(b));
    assert_false(s_poll(a, b, 1000, s_both_linked, &p)); // b links to no one

    // a certificate of another node is not taken
    ms_diag_t diag;
    ms_diag_clear(&diag);
    s_invite("b", p.a_hex, "bob", apk, ask);
    assert_int_equal(ms_node_reload_certificate(b, &diag), MS_ERR_UNTRUSTED);
    assert_false(ms_node_has_certificate(b));
    // its own: b joins without a restart
    s_invite("b", p.b_hex, "bob", apk, ask);
    assert_int_equal(ms_node_reload_certificate(b, &diag), MS_OK);
    assert_true(ms_node_has_certificate(b));
    assert_string_equal(ms_node_operator(b), "bob");
    assert_string_equal(ms_node_pool_id_hex(a), ms_node_pool_id_hex(b));
    assert_true(s_poll(a, b, 10000, s_both_linked, &p));
    // a renewal of the same pool is taken as well
    assert_int_equal(ms_node_reload_certificate(b, &diag), MS_OK);

    // a revokes b: a's link to b goes, and stays gone
    ms_hash_t bid;
    assert_int_equal(ms_hash_from_hex(p.b_hex, &bid), MS_OK);
    assert_int_equal(ms_node_revoke(a, bid.bytes), MS_OK);
    s_poll(a, b, 1500, NULL, NULL);
    assert_false(s_linked(a, p.b_hex));
    s_poll(a, b, 1500, NULL, NULL);
    assert_false(s_linked(a, p.b_hex));
    uint8_t bad[32];
    memset(bad, 0xff, sizeof bad);
    assert_int_equal(ms_node_revoke(a, bad), MS_ERR_INVALID);
    ms_node_destroy(&b);
    ms_node_destroy(&a);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reload_joins_revoke_cuts,
                                        ms_td_root_setup, ms_td_root_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
