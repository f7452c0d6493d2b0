/*  =========================================================================
    ms_hostile_peer - a peer that breaks the mesh protocol, for tests

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Usage: ms_hostile_peer tcp://127.0.0.1:PORT POOL_NAME

    Connects one DEALER to a node's mesh port (loopback only: the test
    gives it) and sends what a broken or hostile peer would: random bytes,
    an empty frame, a three-part message, a well-formed BLOCK before any
    HELLO (records of an origin the node never admitted), a truncated
    HELLO, an envelope of an unknown field only, a HELLO of another pool,
    and last a frame over the mesh's frame limit (the node's socket drops
    that connection). Each must be refused and counted; the node must keep
    running and store nothing (ms_pool_hostile_test checks that). Exits 0
    once everything was sent, 1 when it cannot connect or encode.
*/
#include "ms_beacon.h"
#include "ms_wire.h"

#include <czmq.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Send one frame of n bytes; a short pause so the node reads each alone.

static void
s_send(zsock_t *dealer, const void *data, size_t n)
{
    zframe_t *frame = zframe_new(data, n);
    if (frame && zframe_send(&frame, dealer, 0) != 0)
        zframe_destroy(&frame);
    zclock_sleep(30);
}

//  --------------------------------------------------------------------------
//  Encode env and send it whole (or its first `keep` bytes when keep > 0).

static int
s_send_env(zsock_t *dealer, const ms_wire_envelope_t *env, size_t keep)
{
    uint8_t *buf = NULL;
    size_t n = 0;
    if (ms_wire_encode_envelope(env, &buf, &n) != MS_OK)
        return -1;
    s_send(dealer, buf, keep > 0 && keep < n ? keep : n);
    free(buf);
    return 0;
}

//  --------------------------------------------------------------------------
//  A HELLO from a made-up node of pool `pool`.

static ms_wire_envelope_t
s_hello(const char *pool)
{
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_HELLO;
    memset(env.hello.node_id, 0x5a, sizeof env.hello.node_id);
    ms_beacon_open_pool_id(pool, env.hello.pool_id);
    env.hello.protocol_min = MS_PROTOCOL_MIN;
    env.hello.protocol_max = MS_PROTOCOL_MAX;
    env.hello.incarnation = 7;
    env.hello.mesh_port = 9;
    env.hello.n_workers = 1;
    env.hello.operator_name = (char *) "hostile";
    return env;
}

int
main(int argc, char **argv)
{
    if (argc != 3 || strncmp(argv[1], "tcp://127.0.0.1:", 16) != 0) {
        fprintf(stderr, "usage: ms_hostile_peer tcp://127.0.0.1:PORT POOL\n");
        return 2;
    }
    zsys_init();
    zsys_set_linger(200);
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    if (!dealer || zsock_connect(dealer, "%s", argv[1]) != 0) {
        fprintf(stderr, "ms_hostile_peer: cannot connect %s\n", argv[1]);
        zsock_destroy(&dealer);
        return 1;
    }
    zclock_sleep(200); // the TCP connection and ZMTP greeting

    //  Random bytes, an empty frame, a three-part message.
    uint8_t junk[200];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (uint8_t) (i * 131 + 17);
    s_send(dealer, junk, sizeof junk);
    s_send(dealer, "", 0);
    zstr_sendm(dealer, "one");
    zstr_sendm(dealer, "two");
    zstr_send(dealer, "three");
    zclock_sleep(30);

    //  A well-formed BLOCK before any HELLO: records of an origin never
    //  admitted (a result record, so it would show in the table).
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_BLOCK;
    memset(env.block.origin, 0x5a, sizeof env.block.origin);
    env.block.incarnation = 7;
    env.block.first_seq = 1;
    ms_wire_record_t rec = {.seq = 1,
                            .kind = MS_WIRE_KIND_RESULT,
                            .payload = junk,
                            .payload_bytes = 64};
    env.block.records = &rec;
    env.block.n_records = 1;
    int rc = s_send_env(dealer, &env, 0);

    //  A truncated HELLO, an envelope of an unknown field only (field 127,
    //  varint 1), a HELLO of another pool.
    ms_wire_envelope_t hello = s_hello(argv[2]);
    if (rc == 0)
        rc = s_send_env(dealer, &hello, 20);
    static const uint8_t unknown[] = {0xf8, 0x07, 0x01};
    s_send(dealer, unknown, sizeof unknown);
    ms_wire_envelope_t other = s_hello("not-this-pool");
    if (rc == 0)
        rc = s_send_env(dealer, &other, 0);

    //  Over the frame limit: the node's socket drops this connection.
    size_t big_n = MS_MAX_FRAME_BYTES + 64 * 1024;
    uint8_t *big = calloc(1, big_n);
    if (big)
        s_send(dealer, big, big_n);
    free(big);
    zclock_sleep(300);
    zsock_destroy(&dealer);
    if (rc != 0) {
        fprintf(stderr, "ms_hostile_peer: cannot encode an envelope\n");
        return 1;
    }
    printf("sent: junk, empty, 3-part, block before hello, truncated hello, "
           "unknown field, other pool's hello, oversized frame\n");
    return 0;
}
