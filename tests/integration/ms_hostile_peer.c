/*  =========================================================================
    ms_hostile_peer - a peer that breaks the mesh protocol, for tests

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Usage: ms_hostile_peer tcp://127.0.0.1:PORT POOL_NAME
           ms_hostile_peer tcp://127.0.0.1:PORT POOL_NAME --blocks KEY_DIR
               VICTIM_NODE_ID

    Connects one DEALER to a node's mesh port (loopback only: the test
    gives it) and sends what a broken or hostile peer would: random bytes,
    an empty frame, a three-part message, a well-formed BLOCK before any
    HELLO (records of an origin the node never admitted), a truncated
    HELLO, an envelope of an unknown field only, a HELLO of another pool,
    and last a frame over the mesh's frame limit (the node's socket drops
    that connection). Each must be refused and counted; the node must keep
    running and store nothing (ms_pool_hostile_test checks that). Exits 0
    once everything was sent, 1 when it cannot connect or encode.

    With --blocks it is a member that passed HELLO (open pool POOL_NAME,
    its own Ed25519 identity kept in KEY_DIR) and then sends four bad
    blocks of records (a result each, so a stored one would show in the
    results): (a) a block correctly signed by itself, then one payload
    byte flipped; (b) a correctly signed block with one signature byte
    flipped; (c) an unsigned block; (d) a block claiming VICTIM_NODE_ID
    (64 hex, another node of the pool) as its origin, signed with its own
    key. Each must be refused by signature checking (ms_pool_sign_test).
*/
#include "ms_beacon.h"
#include "ms_hash.h"
#include "ms_identity.h"
#include "ms_wire.h"
#include "ms_wire_sign.h"

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

//  --------------------------------------------------------------------------
//  A block of one RESULT record (seq 1) of origin and incarnation, with
//  the caller's payload; unsigned.

static ms_wire_envelope_t
s_block(const uint8_t origin[MS_WIRE_ID_BYTES], uint64_t incarnation,
        ms_wire_record_t *rec, uint8_t *payload, size_t n)
{
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_BLOCK;
    memcpy(env.block.origin, origin, MS_WIRE_ID_BYTES);
    env.block.incarnation = incarnation;
    env.block.first_seq = 1;
    *rec = (ms_wire_record_t){.seq = 1,
                              .kind = MS_WIRE_KIND_RESULT,
                              .payload = payload,
                              .payload_bytes = n};
    env.block.records = rec;
    env.block.n_records = 1;
    return env;
}

//  --------------------------------------------------------------------------
//  Sign env's block with id for pool into sig (MS_WIRE_SIGNATURE_BYTES),
//  as if its origin were id's key (whatever origin it names).

static int
s_sign(ms_wire_envelope_t *env, const ms_identity_t *id, const uint8_t *pool,
       uint8_t *sig)
{
    uint32_t kinds[MS_WIRE_BLOCK_MAX_RECORDS];
    const uint8_t *payloads[MS_WIRE_BLOCK_MAX_RECORDS];
    size_t lens[MS_WIRE_BLOCK_MAX_RECORDS];
    ms_wire_block_view_t v;
    if (ms_wire_block_view_init(&v, &env->block, kinds, payloads, lens) !=
        MS_OK)
        return -1;
    v.origin = ms_identity_public_key(id);
    if (ms_wire_block_sign(id, pool, &v, sig) != MS_OK)
        return -1;
    env->block.signature = sig;
    env->block.signature_bytes = MS_WIRE_SIGNATURE_BYTES;
    return 0;
}

//  --------------------------------------------------------------------------
//  --blocks: HELLO as a member of the open pool, then four bad blocks.

static int
s_bad_blocks(const char *endpoint, const char *pool_name, const char *key_dir,
             const char *victim_hex)
{
    ms_hash_t victim;
    if (ms_hash_from_hex(victim_hex, &victim) != MS_OK) {
        fprintf(stderr, "ms_hostile_peer: bad victim node id\n");
        return 2;
    }
    ms_identity_t *id = NULL;
    ms_diag_t diag;
    if (ms_identity_open(&id, key_dir, &diag) != MS_OK) {
        fprintf(stderr, "ms_hostile_peer: %s: %s\n", diag.where, diag.reason);
        return 1;
    }
    const uint8_t *me = ms_identity_public_key(id);
    uint8_t pool[MS_WIRE_ID_BYTES];
    ms_beacon_open_pool_id(pool_name, pool);
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    int rc = dealer ? 0 : -1;
    if (dealer) {
        zmq_setsockopt(zsock_resolve(dealer), ZMQ_ROUTING_ID, me,
                       MS_WIRE_ID_BYTES);
        zsock_set_rcvtimeo(dealer, 5000);
        rc = zsock_connect(dealer, "%s", endpoint);
    }
    ms_wire_envelope_t hello = s_hello(pool_name);
    memcpy(hello.hello.node_id, me, MS_WIRE_ID_BYTES);
    hello.hello.operator_name = (char *) "hostile member";
    if (rc == 0)
        rc = s_send_env(dealer, &hello, 0);
    //  Wait for the node's HELLO: our IN channel on it is up.
    zframe_t *reply = rc == 0 ? zframe_recv(dealer) : NULL;
    ms_wire_envelope_t *back = NULL;
    if (!reply ||
        ms_wire_decode_envelope(zframe_data(reply), zframe_size(reply),
                                &back) != MS_OK ||
        back->body != MS_WIRE_BODY_HELLO) {
        fprintf(stderr, "ms_hostile_peer: no HELLO back from %s\n", endpoint);
        rc = -1;
    }
    zframe_destroy(&reply);
    ms_wire_envelope_destroy(&back);

    uint64_t inc = 0x0badb10c;
    uint8_t payload[48];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t) (i * 13 + 5);
    ms_wire_record_t rec;
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES];
    //  (a) signed by us, then one payload byte flipped.
    ms_wire_envelope_t env = s_block(me, inc, &rec, payload, sizeof payload);
    if (rc == 0)
        rc = s_sign(&env, id, pool, sig);
    payload[17] ^= 0x01;
    if (rc == 0)
        rc = s_send_env(dealer, &env, 0);
    payload[17] ^= 0x01;
    //  (b) signed by us, one signature byte flipped.
    env = s_block(me, inc, &rec, payload, sizeof payload);
    if (rc == 0)
        rc = s_sign(&env, id, pool, sig);
    sig[40] ^= 0x20;
    if (rc == 0)
        rc = s_send_env(dealer, &env, 0);
    //  (c) unsigned.
    env = s_block(me, inc, &rec, payload, sizeof payload);
    if (rc == 0)
        rc = s_send_env(dealer, &env, 0);
    //  (d) another node's origin, signed with our key.
    env = s_block(victim.bytes, inc, &rec, payload, sizeof payload);
    if (rc == 0)
        rc = s_sign(&env, id, pool, sig);
    if (rc == 0)
        rc = s_send_env(dealer, &env, 0);
    zclock_sleep(300);
    zsock_destroy(&dealer);
    ms_identity_destroy(&id);
    if (rc != 0) {
        fprintf(stderr, "ms_hostile_peer: could not send the blocks\n");
        return 1;
    }
    printf("sent: payload byte flipped, signature byte flipped, unsigned, "
           "another node's origin\n");
    return 0;
}

int
main(int argc, char **argv)
{
    if ((argc != 3 && argc != 6) ||
        strncmp(argv[1], "tcp://127.0.0.1:", 16) != 0 ||
        (argc == 6 && strcmp(argv[3], "--blocks") != 0)) {
        fprintf(stderr, "usage: ms_hostile_peer tcp://127.0.0.1:PORT POOL "
                        "[--blocks KEY_DIR VICTIM_NODE_ID]\n");
        return 2;
    }
    zsys_init();
    zsys_set_linger(200);
    if (argc == 6)
        return s_bad_blocks(argv[1], argv[2], argv[4], argv[5]);
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
