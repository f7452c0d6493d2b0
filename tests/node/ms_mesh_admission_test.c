/*  =========================================================================
    ms_mesh_admission_test - meshes of a pool with an authority in one
    process on loopback: CURVE links, HELLO with certificates, a forged
    member refused, a revoked member cut off

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    NETWORK SAFETY: every mesh binds 127.0.0.1 with beacons off.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_cert.h"
#include "ms_identity.h"
#include "ms_members.h"
#include "ms_mesh.h"
#include "ms_wire.h"

#include <czmq.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define HB_MS 50

//  One test node: keys, table, mesh, counters.
typedef struct {
    uint8_t pk[32], sk[64]; // Ed25519 identity
    uint8_t curve_pk[32], curve_sk[32];
    ms_members_t *members; // its table
    ms_mesh_t *mesh;       // its mesh
    int n_messages;        // on_message calls
    char spec[200];        // "HEX@tcp://127.0.0.1:PORT"
} s_node_t;

//  --------------------------------------------------------------------------
//  Count messages

static void
s_on_message(void *arg, const uint8_t from[32], const ms_wire_envelope_t *env)
{
    (void) from;
    (void) env;
    ((s_node_t *) arg)->n_messages++;
}

//  --------------------------------------------------------------------------
//  Open node n of the pool (authority ask/apk, pool pool_id) with a
//  chain signed by signer_sk, dialing peers

static void
s_open(s_node_t *n, const uint8_t *apk, const uint8_t *pool_id,
       const uint8_t *signer_sk, const char *const *peers, int n_peers)
{
    assert_int_equal(ms_cert_keypair(n->pk, n->sk), MS_OK);
    assert_int_equal(crypto_sign_ed25519_pk_to_curve25519(n->curve_pk, n->pk),
                     0);
    assert_int_equal(crypto_sign_ed25519_sk_to_curve25519(n->curve_sk, n->sk),
                     0);
    ms_cert_chain_t chain;
    memset(&chain, 0, sizeof chain);
    memcpy(chain.leaf.pool_id, pool_id, 32);
    memcpy(chain.leaf.subject, n->pk, 32);
    chain.leaf.roles = MS_CERT_ROLE_WORKER;
    strcpy(chain.leaf.operator_name, "op");
    assert_int_equal(ms_cert_sign(&chain.leaf, signer_sk, NULL), MS_OK);
    uint8_t cert[MS_CERT_CHAIN_MAX_BYTES];
    size_t cert_bytes = ms_cert_chain_encode(&chain, cert);
    assert_true(cert_bytes > 0);
    n->members = ms_members_new(apk, pool_id);
    assert_non_null(n->members);

    ms_mesh_options_t o;
    ms_mesh_options_defaults(&o);
    memcpy(o.node_id, n->pk, 32);
    memcpy(o.pool_id, pool_id, 32);
    o.incarnation = 1;
    o.mesh_bind = "tcp://127.0.0.1:0";
    o.beacon = false;
    o.static_peers = peers;
    o.n_static_peers = n_peers;
    o.heartbeat_ms = HB_MS;
    o.suspect_after_ms = 3 * HB_MS;
    o.dead_after_ms = 8 * HB_MS;
    o.redial_min_ms = 50;
    o.redial_max_ms = 200;
    o.members = n->members;
    o.certificate = cert;
    o.certificate_bytes = cert_bytes;
    o.curve_public = n->curve_pk;
    o.curve_secret = n->curve_sk;
    ms_mesh_handlers_t h = {.arg = n, .on_message = s_on_message};
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_mesh_open(&n->mesh, &o, &h, &diag);
    if (rc != MS_OK)
        fprintf(stderr, "open: %s: %s\n", diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    assert_true(ms_mesh_secure(n->mesh));
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", n->pk[i]);
    snprintf(n->spec, sizeof n->spec, "%s@tcp://127.0.0.1:%d", hex,
             ms_mesh_port(n->mesh));
}

//  --------------------------------------------------------------------------
//  Close a node

static void
s_close(s_node_t *n)
{
    ms_mesh_destroy(&n->mesh);
    ms_members_destroy(&n->members);
}

//  --------------------------------------------------------------------------
//  Run the nodes' meshes for up to max_ms or until each listed node has
//  want alive peers (want < 0: run the whole time).

static bool
s_pump(s_node_t **nodes, int n, int max_ms, int want)
{
    int64_t end = ms_mesh_now() + max_ms;
    zmq_pollitem_t items[256];
    while (ms_mesh_now() < end) {
        int n_items = 0;
        for (int i = 0; i < n; i++)
            n_items += ms_mesh_poll_items(nodes[i]->mesh, items + n_items, 64);
        zmq_poll(items, n_items, 10);
        bool all = want >= 0;
        for (int i = 0; i < n; i++) {
            ms_mesh_handle(nodes[i]->mesh, ms_mesh_now());
            ms_mesh_tick(nodes[i]->mesh, ms_mesh_now());
            all = all && ms_mesh_n_alive(nodes[i]->mesh) == want;
        }
        if (all)
            return true;
    }
    return want < 0;
}

//  --------------------------------------------------------------------------
//  A small BLOCK to send around

static void
s_block(ms_wire_envelope_t *env, ms_wire_record_t *rec, const uint8_t *origin)
{
    static uint8_t payload[16] = "payload";
    memset(env, 0, sizeof *env);
    env->protocol = MS_PROTOCOL_VERSION;
    env->body = MS_WIRE_BODY_BLOCK;
    memcpy(env->block.origin, origin, 32);
    env->block.incarnation = 1;
    env->block.first_seq = 1;
    *rec = (ms_wire_record_t){.seq = 1,
                              .kind = MS_WIRE_KIND_RESULT,
                              .payload = payload,
                              .payload_bytes = sizeof payload};
    env->block.records = rec;
    env->block.n_records = 1;
}

//  --------------------------------------------------------------------------
//  Three members link over CURVE; a forged member is refused; a revoked
//  member is cut off and what it sends afterwards goes nowhere.

static void
test_members_link_forged_refused_revoked_cut(void **state)
{
    (void) state;
    if (!zsys_has_curve())
        skip();
    uint8_t apk[32], ask[64], pool_id[32], fpk[32], fsk[64];
    ms_cert_keypair(apk, ask);
    ms_cert_pool_id(apk, pool_id);
    ms_cert_keypair(fpk, fsk); // a forger's key
    s_node_t a = {0}, b = {0}, c = {0}, f = {0};
    s_open(&a, apk, pool_id, ask, NULL, 0);
    const char *to_a[] = {a.spec};
    s_open(&b, apk, pool_id, ask, to_a, 1);
    const char *to_ab[] = {a.spec, b.spec};
    s_open(&c, apk, pool_id, ask, to_ab, 2);
    s_node_t *three[] = {&a, &b, &c};
    assert_true(s_pump(three, 3, 5000, 2));
    assert_int_equal(ms_members_count(a.members, MS_MEMBER_ADMITTED), 2);
    assert_non_null(ms_members_operator(a.members, c.pk));

    // a forger: our pool id, certificate signed by another key
    s_open(&f, apk, pool_id, fsk, to_a, 1);
    s_node_t *four[] = {&a, &b, &c, &f};
    s_pump(four, 4, 600, -1);
    assert_int_equal(ms_mesh_n_alive(f.mesh), 0);
    assert_int_equal(ms_mesh_n_alive(a.mesh), 2);
    ms_mesh_stats_t st;
    ms_mesh_stats(a.mesh, &st);
    assert_true(st.n_refused[MS_MEMBERS_REFUSED_BAD_SIG] >= 1);
    assert_true(st.n_admission_refused >= 1);
    assert_false(ms_members_is_member(a.members, f.pk, (int64_t) time(NULL)));
    s_close(&f);

    // before the revocation c's blocks arrive (the check can fail)
    ms_wire_envelope_t env;
    ms_wire_record_t rec;
    s_block(&env, &rec, c.pk);
    assert_int_equal(ms_mesh_send_active(c.mesh, &env), 2);
    s_pump(three, 3, 300, -1);
    assert_true(a.n_messages >= 1 && b.n_messages >= 1);

    // revoke c at a and b: links closed, never again, frames dropped
    assert_int_equal(ms_mesh_revoke(a.mesh, c.pk, NULL), MS_OK);
    assert_int_equal(ms_mesh_revoke(b.mesh, c.pk, NULL), MS_OK);
    bool linked = true;
    ms_mesh_peer_state(a.mesh, c.pk, &linked);
    assert_false(linked);
    int msgs_a = a.n_messages, msgs_b = b.n_messages;
    for (int i = 0; i < 10; i++) {
        ms_mesh_send_active(c.mesh, &env);
        s_pump(three, 3, 150, -1);
    }
    assert_int_equal(a.n_messages, msgs_a);
    assert_int_equal(b.n_messages, msgs_b);
    assert_int_equal(ms_mesh_n_alive(a.mesh), 1); // b only
    assert_int_equal(ms_mesh_n_alive(b.mesh), 1); // a only
    ms_mesh_peer_state(a.mesh, c.pk, &linked);
    assert_false(linked);
    ms_mesh_stats(a.mesh, &st);
    assert_true(st.n_revoked_links >= 1);
    assert_false(ms_members_is_member(a.members, c.pk, (int64_t) time(NULL)));
    assert_int_equal(ms_members_find(a.members, c.pk)->state,
                     MS_MEMBER_REVOKED);
    s_close(&c);
    s_close(&b);
    s_close(&a);
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    zsys_init();
    zsys_set_linger(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_members_link_forged_refused_revoked_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
