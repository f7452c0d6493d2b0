/*  =========================================================================
    ms_zap_test - the ZAP table's decisions, and the process's handler in
    front of a real CURVE server on loopback

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_zap.h"

#include <czmq.h>
#include <sodium.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Unknown keys are let in (pending); pending keys past the HELLO
//  timeout are denied for a while, then let in again; allowed keys stay.

static void
test_table_pending_stale_denied(void **state)
{
    (void) state;
    ms_zap_table_t *t = ms_zap_table_new(0);
    assert_non_null(t);
    uint8_t a[32], b[32], out[4][32];
    memset(a, 1, sizeof a);
    memset(b, 2, sizeof b);
    ms_zap_state_t st;
    assert_int_equal(ms_zap_table_decide(t, "d", a, 1000), 200);
    assert_int_equal(ms_zap_table_decide(t, "d", b, 1000), 200);
    assert_true(ms_zap_table_get(t, "d", a, &st, NULL));
    assert_int_equal(st, MS_ZAP_PENDING);
    // b passed its HELLO
    assert_int_equal(ms_zap_table_set(t, "d", b, MS_ZAP_ALLOWED, 0, 1200),
                     MS_OK);
    // not stale yet at 5999; at 6000 a is denied for 60 s, b is not
    assert_int_equal(ms_zap_table_take_stale(t, "d", 5999, 5000, 60000, out, 4),
                     0);
    assert_int_equal(ms_zap_table_take_stale(t, "d", 6000, 5000, 60000, out, 4),
                     1);
    assert_memory_equal(out[0], a, 32);
    int64_t until = 0;
    assert_true(ms_zap_table_get(t, "d", a, &st, &until));
    assert_int_equal(st, MS_ZAP_DENIED);
    assert_int_equal(until, 66000);
    assert_int_equal(ms_zap_table_decide(t, "d", a, 65999), 400);
    assert_int_equal(ms_zap_table_decide(t, "d", b, 65999), 200);
    // the denial ran out: pending again, with a fresh clock
    assert_int_equal(ms_zap_table_decide(t, "d", a, 66000), 200);
    assert_int_equal(
        ms_zap_table_take_stale(t, "d", 70000, 5000, 60000, out, 4), 0);
    // another domain does not see d's entries
    assert_false(ms_zap_table_get(t, "e", b, &st, NULL));
    assert_int_equal(ms_zap_table_decide(t, "e", b, 70000), 200);
    assert_int_equal(ms_zap_table_size(t), 3);
    ms_zap_table_destroy(&t);
    assert_null(t);
}

//  --------------------------------------------------------------------------
//  Revocation is final; a table full of pending strangers refuses more.

static void
test_table_revoked_and_full(void **state)
{
    (void) state;
    ms_zap_table_t *t = ms_zap_table_new(2);
    uint8_t a[32], b[32], c[32];
    memset(a, 1, sizeof a);
    memset(b, 2, sizeof b);
    memset(c, 3, sizeof c);
    ms_zap_state_t st;
    assert_int_equal(ms_zap_table_set(t, "d", a, MS_ZAP_REVOKED, 0, 0), MS_OK);
    assert_int_equal(ms_zap_table_decide(t, "d", a, 1), 400);
    assert_int_equal(ms_zap_table_set(t, "d", a, MS_ZAP_ALLOWED, 0, 2), MS_OK);
    assert_true(ms_zap_table_get(t, "d", a, &st, NULL));
    assert_int_equal(st, MS_ZAP_REVOKED);
    assert_int_equal(ms_zap_table_decide(t, "d", a, 1000000), 400);
    // one more pending fills it; a third stranger is refused
    assert_int_equal(ms_zap_table_decide(t, "d", b, 10), 200);
    assert_int_equal(ms_zap_table_decide(t, "d", c, 11), 400);
    // the mesh's own decisions may evict a pending stranger
    assert_int_equal(ms_zap_table_set(t, "d", c, MS_ZAP_ALLOWED, 0, 12), MS_OK);
    assert_false(ms_zap_table_get(t, "d", b, &st, NULL));
    assert_int_equal(ms_zap_table_decide(t, "d", c, 13), 200);
    ms_zap_table_destroy(&t);
}

//  --------------------------------------------------------------------------
//  A CURVE client with key kp connects to endpoint and sends "hi";
//  returns the User-Id the server saw, or NULL when nothing arrived
//  within wait_ms (the handshake was refused).

static char *
s_try(zsock_t *server, const char *endpoint, const uint8_t *server_pk,
      const uint8_t *pk, const uint8_t *sk, int wait_ms)
{
    zsock_t *client = zsock_new(ZMQ_DEALER);
    void *raw = zsock_resolve(client);
    zsock_set_linger(client, 0);
    zmq_setsockopt(raw, ZMQ_CURVE_SERVERKEY, server_pk, 32);
    zmq_setsockopt(raw, ZMQ_CURVE_PUBLICKEY, pk, 32);
    zmq_setsockopt(raw, ZMQ_CURVE_SECRETKEY, sk, 32);
    assert_int_equal(zsock_connect(client, "%s", endpoint), 0);
    zstr_send(client, "hi");
    char *user = NULL;
    zpoller_t *poller = zpoller_new(server, NULL);
    if (zpoller_wait(poller, wait_ms) == server) {
        zmq_msg_t rid, body;
        zmq_msg_init(&rid);
        zmq_msg_init(&body);
        zmq_msg_recv(&rid, zsock_resolve(server), 0);
        zmq_msg_recv(&body, zsock_resolve(server), 0);
        const char *u = zmq_msg_gets(&body, "User-Id");
        user = strdup(u ? u : "");
        zmq_msg_close(&body);
        zmq_msg_close(&rid);
    }
    zpoller_destroy(&poller);
    zsock_destroy(&client);
    return user;
}

//  --------------------------------------------------------------------------
//  The handler: a stranger gets in with its key as User-Id; a denied or
//  revoked key does not; counts move.

static void
test_handler_with_curve_server(void **state)
{
    (void) state;
    if (!zsys_has_curve())
        skip();
    assert_int_equal(ms_zap_start(NULL), MS_OK);
    assert_int_equal(ms_zap_start(NULL), MS_OK); // reference counted
    uint8_t spk[32], ssk[32], apk[32], ask[32], bpk[32], bsk[32];
    crypto_box_keypair(spk, ssk);
    crypto_box_keypair(apk, ask);
    crypto_box_keypair(bpk, bsk);
    zsock_t *server = zsock_new(ZMQ_ROUTER);
    int one = 1;
    zsock_set_zap_domain(server, "ms-test");
    zmq_setsockopt(zsock_resolve(server), ZMQ_CURVE_SERVER, &one, sizeof one);
    zmq_setsockopt(zsock_resolve(server), ZMQ_CURVE_SECRETKEY, ssk, 32);
    int port = zsock_bind(server, "tcp://127.0.0.1:*");
    assert_true(port > 0);
    char endpoint[64];
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    uint64_t allowed0, denied0, allowed1, denied1;
    ms_zap_counts(&allowed0, &denied0);

    char *user = s_try(server, endpoint, spk, apk, ask, 2000);
    assert_non_null(user);
    char hex[65];
    for (int i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", apk[i]);
    assert_string_equal(user, hex);
    free(user);

    ms_zap_deny("ms-test", apk, 60000);
    ms_zap_revoke("ms-test", bpk);
    assert_null(s_try(server, endpoint, spk, apk, ask, 500));
    assert_null(s_try(server, endpoint, spk, bpk, bsk, 500));
    ms_zap_counts(&allowed1, &denied1);
    assert_true(allowed1 >= allowed0 + 1);
    assert_true(denied1 >= denied0 + 2);
    // allowed again: in
    ms_zap_allow("ms-test", apk);
    user = s_try(server, endpoint, spk, apk, ask, 2000);
    assert_non_null(user);
    free(user);
    zsock_destroy(&server);
    ms_zap_stop();
    ms_zap_stop();
}

int
main(void)
{
    if (sodium_init() < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_pending_stale_denied),
        cmocka_unit_test(test_table_revoked_and_full),
        cmocka_unit_test(test_handler_with_curve_server),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
