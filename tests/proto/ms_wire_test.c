/*  =========================================================================
    ms_wire_test - wire messages and record payloads: round trips, and
    refusal of everything malformed

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Hostile frames are written byte by byte with a tiny protobuf writer
    (below), so the test does not need the generated code and can say
    things the encoder refuses to say (a 31-byte id, a block of 65
    records, an envelope body from the future).

    With MESHSWEEP_FUZZ_SEEDS=DIR set, test_write_fuzz_seeds writes the
    encoded valid messages as seed corpora into DIR/wire_envelope/,
    DIR/wire_payload/ and DIR/beacon/ (how tests/fuzz/corpus/ was made).
*/
#include "ms_wire.h"

#include "ms_beacon.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// --- helpers ----------------------------------------------------------------

//  --------------------------------------------------------------------------
//  Fill a 32-byte id with a recognisable pattern.

static void
s_id(uint8_t id[MS_WIRE_ID_BYTES], uint8_t seed)
{
    for (int i = 0; i < MS_WIRE_ID_BYTES; i++)
        id[i] = (uint8_t) (seed * 31 + i);
}

//  --------------------------------------------------------------------------
//  Encode env, decode it, check the re-encoding is byte-identical; return
//  the decoded envelope (caller destroys it).

static ms_wire_envelope_t *
s_round_trip(const ms_wire_envelope_t *env)
{
    uint8_t *buf = NULL, *again = NULL;
    size_t n = 0, n_again = 0;
    assert_int_equal(ms_wire_encode_envelope(env, &buf, &n), MS_OK);
    assert_non_null(buf);
    assert_true(n > 0);
    ms_wire_envelope_t *back = NULL;
    assert_int_equal(ms_wire_decode_envelope(buf, n, &back), MS_OK);
    assert_non_null(back);
    assert_int_equal(back->protocol, env->protocol);
    assert_int_equal(back->body, env->body);
    assert_int_equal(ms_wire_encode_envelope(back, &again, &n_again), MS_OK);
    assert_int_equal(n_again, n);
    assert_memory_equal(again, buf, n);
    free(buf);
    free(again);
    return back;
}

//  --------------------------------------------------------------------------
//  Encode and expect MS_ERR_INVALID with *out NULL.

static void
s_expect_encode_invalid(const ms_wire_envelope_t *env)
{
    uint8_t *buf = (uint8_t *) 1;
    size_t n = 99;
    assert_int_equal(ms_wire_encode_envelope(env, &buf, &n), MS_ERR_INVALID);
    assert_null(buf);
    assert_int_equal(n, 0);
}

//  --------------------------------------------------------------------------
//  Decode and expect MS_ERR_PROTOCOL with *out NULL.

static void
s_expect_decode_refused(const uint8_t *buf, size_t n)
{
    ms_wire_envelope_t *env = (ms_wire_envelope_t *) 1;
    assert_int_equal(ms_wire_decode_envelope(buf, n, &env), MS_ERR_PROTOCOL);
    assert_null(env);
}

//  A tiny protobuf writer for hand-made frames.
typedef struct {
    uint8_t buf[8192];
    size_t n;
} s_pbw_t;

//  --------------------------------------------------------------------------
//  Append a varint.

static void
s_w_varint(s_pbw_t *w, uint64_t v)
{
    do {
        assert_true(w->n < sizeof w->buf);
        uint8_t b = v & 0x7F;
        v >>= 7;
        w->buf[w->n++] = (uint8_t) (b | (v ? 0x80 : 0));
    } while (v);
}

//  --------------------------------------------------------------------------
//  Append a varint field.

static void
s_w_uint(s_pbw_t *w, unsigned field, uint64_t v)
{
    s_w_varint(w, (uint64_t) field << 3);
    s_w_varint(w, v);
}

//  --------------------------------------------------------------------------
//  Append a length-delimited field.

static void
s_w_bytes(s_pbw_t *w, unsigned field, const void *data, size_t n)
{
    s_w_varint(w, ((uint64_t) field << 3) | 2);
    s_w_varint(w, n);
    assert_true(w->n + n <= sizeof w->buf);
    if (n)
        memcpy(w->buf + w->n, data, n);
    w->n += n;
}

//  --------------------------------------------------------------------------
//  Append a 32-byte id (or n bytes of one) as a bytes field.

static void
s_w_id(s_pbw_t *w, unsigned field, size_t n)
{
    uint8_t id[64];
    memset(id, 0xA5, sizeof id);
    s_w_bytes(w, field, id, n);
}

//  --------------------------------------------------------------------------
//  Wrap body (a message) as envelope field 'field' with protocol 1.

static void
s_w_envelope(s_pbw_t *out, unsigned field, const s_pbw_t *body)
{
    out->n = 0;
    s_w_uint(out, 1, 1);
    s_w_bytes(out, field, body->buf, body->n);
}

// --- round trips ------------------------------------------------------------

//  --------------------------------------------------------------------------
//  HELLO keeps every field.

static void
test_hello_round_trip(void **state)
{
    (void) state;
    uint8_t cert[5] = {1, 2, 3, 4, 5};
    ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_HELLO};
    s_id(env.hello.node_id, 1);
    s_id(env.hello.pool_id, 2);
    env.hello.protocol_min = MS_PROTOCOL_MIN;
    env.hello.protocol_max = MS_PROTOCOL_MAX;
    env.hello.incarnation = 0xDEADBEEFCAFEF00DULL;
    env.hello.mesh_port = 5871;
    env.hello.n_workers = 8;
    env.hello.operator_name = "lab \xC3\xA9quipe 3";
    env.hello.certificate = cert;
    env.hello.certificate_bytes = sizeof cert;
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_memory_equal(back->hello.node_id, env.hello.node_id, 32);
    assert_memory_equal(back->hello.pool_id, env.hello.pool_id, 32);
    assert_int_equal(back->hello.protocol_min, 1);
    assert_int_equal(back->hello.protocol_max, 1);
    assert_true(back->hello.incarnation == 0xDEADBEEFCAFEF00DULL);
    assert_int_equal(back->hello.mesh_port, 5871);
    assert_int_equal(back->hello.n_workers, 8);
    assert_string_equal(back->hello.operator_name, env.hello.operator_name);
    assert_int_equal(back->hello.certificate_bytes, 5);
    assert_memory_equal(back->hello.certificate, cert, 5);
    assert_string_equal(ms_wire_body_name(back->body), "HELLO");
    ms_wire_envelope_destroy(&back);
    assert_null(back);
    ms_wire_envelope_destroy(&back); // NULL-safe

    // Empty operator and no certificate: decoded as "" and NULL/0.
    env.hello.operator_name = NULL;
    env.hello.certificate = NULL;
    env.hello.certificate_bytes = 0;
    back = s_round_trip(&env);
    assert_string_equal(back->hello.operator_name, "");
    assert_int_equal(back->hello.certificate_bytes, 0);
    assert_string_equal(back->hello.endpoint, "");
    ms_wire_envelope_destroy(&back);

    // The advertised endpoint (--advertise) is kept; a malformed one is
    // refused at encode.
    snprintf(env.hello.endpoint, sizeof env.hello.endpoint,
             "tcp://10.213.0.200:15871");
    back = s_round_trip(&env);
    assert_string_equal(back->hello.endpoint, "tcp://10.213.0.200:15871");
    ms_wire_envelope_destroy(&back);
    snprintf(env.hello.endpoint, sizeof env.hello.endpoint, "tcp://a b:1");
    s_expect_encode_invalid(&env);
    env.hello.endpoint[0] = '\0';
}

//  --------------------------------------------------------------------------
//  HEARTBEAT keeps its live claims and counters.

static void
test_heartbeat_round_trip(void **state)
{
    (void) state;
    ms_wire_live_claim_t claims[3];
    for (int i = 0; i < 3; i++) {
        s_id(claims[i].task_id, (uint8_t) (10 + i));
        claims[i].slot = (uint32_t) i;
        claims[i].epoch = (uint32_t) (i + 1) * 7;
    }
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_HEARTBEAT};
    env.heartbeat.incarnation = 42;
    env.heartbeat.seq = 123456789012ULL;
    env.heartbeat.live_claims = claims;
    env.heartbeat.n_live_claims = 3;
    env.heartbeat.n_workers = 4;
    env.heartbeat.n_busy = 3;
    env.heartbeat.load = 2.75;
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_int_equal(back->heartbeat.incarnation, 42);
    assert_true(back->heartbeat.seq == 123456789012ULL);
    assert_int_equal(back->heartbeat.n_live_claims, 3);
    for (int i = 0; i < 3; i++) {
        assert_memory_equal(back->heartbeat.live_claims[i].task_id,
                            claims[i].task_id, 32);
        assert_int_equal(back->heartbeat.live_claims[i].slot, claims[i].slot);
        assert_int_equal(back->heartbeat.live_claims[i].epoch, claims[i].epoch);
    }
    assert_int_equal(back->heartbeat.n_workers, 4);
    assert_int_equal(back->heartbeat.n_busy, 3);
    assert_true(back->heartbeat.load == 2.75);
    ms_wire_envelope_destroy(&back);

    // No claims at all.
    env.heartbeat.live_claims = NULL;
    env.heartbeat.n_live_claims = 0;
    back = s_round_trip(&env);
    assert_int_equal(back->heartbeat.n_live_claims, 0);
    assert_null(back->heartbeat.live_claims);
    ms_wire_envelope_destroy(&back);

    // Refused: busy above workers, NaN load, epoch 0.
    env.heartbeat.n_busy = 5;
    s_expect_encode_invalid(&env);
    env.heartbeat.n_busy = 1;
    env.heartbeat.load = NAN;
    s_expect_encode_invalid(&env);
    env.heartbeat.load = 0;
    claims[0].epoch = 0;
    env.heartbeat.live_claims = claims;
    env.heartbeat.n_live_claims = 1;
    s_expect_encode_invalid(&env);
}

//  --------------------------------------------------------------------------
//  VECTOR_DIGEST, VECTOR and RANGE_REQUEST.

static void
test_anti_entropy_round_trip(void **state)
{
    (void) state;
    ms_wire_envelope_t env = {.protocol = 1,
                              .body = MS_WIRE_BODY_VECTOR_DIGEST};
    s_id(env.vector_digest.digest, 5);
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_memory_equal(back->vector_digest.digest, env.vector_digest.digest,
                        32);
    ms_wire_envelope_destroy(&back);

    ms_wire_vector_entry_t entries[2];
    s_id(entries[0].origin, 1);
    entries[0].incarnation = 7;
    entries[0].seq = 100;
    s_id(entries[1].origin, 2);
    entries[1].incarnation = UINT64_MAX;
    entries[1].seq = 1;
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_VECTOR;
    env.vector.entries = entries;
    env.vector.n_entries = 2;
    back = s_round_trip(&env);
    assert_int_equal(back->vector.n_entries, 2);
    assert_memory_equal(back->vector.entries, entries, sizeof entries);
    ms_wire_envelope_destroy(&back);
    entries[1].seq = 0;
    s_expect_encode_invalid(&env);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_RANGE_REQUEST;
    s_id(env.range_request.origin, 9);
    env.range_request.incarnation = 3;
    env.range_request.from_seq = 10;
    env.range_request.to_seq = 10; // one record: inclusive range
    env.range_request.max_records = 64;
    back = s_round_trip(&env);
    assert_memory_equal(&back->range_request, &env.range_request,
                        sizeof env.range_request);
    ms_wire_envelope_destroy(&back);
    env.range_request.to_seq = 9;
    s_expect_encode_invalid(&env);
    env.range_request.to_seq = 20;
    env.range_request.from_seq = 0;
    s_expect_encode_invalid(&env);
    env.range_request.from_seq = 1;
    env.range_request.max_records = 0;
    s_expect_encode_invalid(&env);
}

//  --------------------------------------------------------------------------
//  BLOCK keeps records (an unknown kind too) and the signature.

static void
test_block_round_trip(void **state)
{
    (void) state;
    uint8_t p0[3] = {1, 2, 3};
    uint8_t p2[1] = {0};
    uint8_t sig[64];
    memset(sig, 0x5A, sizeof sig);
    ms_wire_record_t recs[3] = {
        {.seq = 41,
         .kind = MS_WIRE_KIND_CLAIM,
         .payload = p0,
         .payload_bytes = 3},
        {.seq = 42, .kind = 999, .payload = NULL, .payload_bytes = 0},
        {.seq = 43,
         .kind = MS_WIRE_KIND_RESULT,
         .payload = p2,
         .payload_bytes = 1},
    };
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_BLOCK};
    s_id(env.block.origin, 3);
    env.block.incarnation = 77;
    env.block.first_seq = 41;
    env.block.records = recs;
    env.block.n_records = 3;
    env.block.signature = sig;
    env.block.signature_bytes = sizeof sig;
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_memory_equal(back->block.origin, env.block.origin, 32);
    assert_int_equal(back->block.incarnation, 77);
    assert_int_equal(back->block.first_seq, 41);
    assert_int_equal(back->block.n_records, 3);
    assert_int_equal(back->block.records[1].kind, 999);
    assert_int_equal(back->block.records[1].payload_bytes, 0);
    assert_int_equal(back->block.records[0].payload_bytes, 3);
    assert_memory_equal(back->block.records[0].payload, p0, 3);
    assert_int_equal(back->block.records[2].seq, 43);
    assert_int_equal(back->block.signature_bytes, 64);
    assert_memory_equal(back->block.signature, sig, 64);
    ms_wire_envelope_destroy(&back);

    // 64 records is the most a block holds.
    ms_wire_record_t many[MS_WIRE_BLOCK_MAX_RECORDS + 1];
    for (size_t i = 0; i < MS_WIRE_BLOCK_MAX_RECORDS + 1; i++)
        many[i] = (ms_wire_record_t){.seq = 1 + i, .kind = 4};
    env.block.first_seq = 1;
    env.block.records = many;
    env.block.n_records = MS_WIRE_BLOCK_MAX_RECORDS;
    back = s_round_trip(&env);
    assert_int_equal(back->block.n_records, 64);
    ms_wire_envelope_destroy(&back);

    // The encoder refuses what the decoder would.
    env.block.n_records = MS_WIRE_BLOCK_MAX_RECORDS + 1;
    s_expect_encode_invalid(&env);
    env.block.n_records = 0;
    s_expect_encode_invalid(&env);
    env.block.n_records = 3;
    many[1].seq = 5;
    s_expect_encode_invalid(&env);
    many[1].seq = 2;
    many[2].kind = 0;
    s_expect_encode_invalid(&env);
    many[2].kind = 1;
    env.block.first_seq = 0;
    many[0].seq = 0;
    s_expect_encode_invalid(&env);
}

//  --------------------------------------------------------------------------
//  BLOB_REQUEST, BLOB_CHUNK, BLOB_MISSING.

static void
test_blob_round_trip(void **state)
{
    (void) state;
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_BLOB_REQUEST};
    s_id(env.blob_request.hash, 4);
    env.blob_request.offset = 3ULL << 32;
    env.blob_request.length = MS_WIRE_BLOB_CHUNK_MAX_BYTES;
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_memory_equal(&back->blob_request, &env.blob_request,
                        sizeof env.blob_request);
    ms_wire_envelope_destroy(&back);
    env.blob_request.length = MS_WIRE_BLOB_CHUNK_MAX_BYTES + 1;
    s_expect_encode_invalid(&env);
    env.blob_request.length = 0;
    s_expect_encode_invalid(&env);

    size_t n_data = MS_WIRE_BLOB_CHUNK_MAX_BYTES;
    uint8_t *data = malloc(n_data);
    assert_non_null(data);
    for (size_t i = 0; i < n_data; i++)
        data[i] = (uint8_t) (i * 7);
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_BLOB_CHUNK;
    s_id(env.blob_chunk.hash, 4);
    env.blob_chunk.offset = 1000;
    env.blob_chunk.total = 1000 + n_data;
    env.blob_chunk.data = data;
    env.blob_chunk.data_bytes = n_data;
    back = s_round_trip(&env);
    assert_int_equal(back->blob_chunk.offset, 1000);
    assert_int_equal(back->blob_chunk.total, 1000 + n_data);
    assert_int_equal(back->blob_chunk.data_bytes, n_data);
    assert_memory_equal(back->blob_chunk.data, data, n_data);
    ms_wire_envelope_destroy(&back);
    env.blob_chunk.total = 999 + n_data; // chunk runs past the blob
    s_expect_encode_invalid(&env);
    free(data);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_BLOB_MISSING;
    s_id(env.blob_missing.hash, 8);
    back = s_round_trip(&env);
    assert_memory_equal(back->blob_missing.hash, env.blob_missing.hash, 32);
    ms_wire_envelope_destroy(&back);
}

//  --------------------------------------------------------------------------
//  JOIN, FORWARD_JOIN, NEIGHBOR, DISCONNECT, SHUFFLE, SHUFFLE_REPLY.

static void
test_view_round_trip(void **state)
{
    (void) state;
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_JOIN};
    s_id(env.join.node_id, 1);
    strcpy(env.join.endpoint, "tcp://10.213.0.2:5871");
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_memory_equal(back->join.node_id, env.join.node_id, 32);
    assert_string_equal(back->join.endpoint, "tcp://10.213.0.2:5871");
    ms_wire_envelope_destroy(&back);
    strcpy(env.join.endpoint, "udp://x:1");
    s_expect_encode_invalid(&env);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_FORWARD_JOIN;
    s_id(env.forward_join.node_id, 2);
    strcpy(env.forward_join.endpoint, "tcp://[::1]:6000");
    env.forward_join.ttl = 6;
    back = s_round_trip(&env);
    assert_string_equal(back->forward_join.endpoint, "tcp://[::1]:6000");
    assert_int_equal(back->forward_join.ttl, 6);
    ms_wire_envelope_destroy(&back);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_NEIGHBOR;
    s_id(env.neighbor.node_id, 3);
    strcpy(env.neighbor.endpoint, "tcp://node-3.lab:5871");
    env.neighbor.high_priority = true;
    back = s_round_trip(&env);
    assert_true(back->neighbor.high_priority);
    assert_string_equal(back->neighbor.endpoint, "tcp://node-3.lab:5871");
    ms_wire_envelope_destroy(&back);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_DISCONNECT;
    s_id(env.join.node_id, 4);
    back = s_round_trip(&env);
    assert_memory_equal(back->join.node_id, env.join.node_id, 32);
    assert_string_equal(back->join.endpoint, "");
    ms_wire_envelope_destroy(&back);

    ms_wire_peer_t peers[MS_WIRE_MAX_SHUFFLE_PEERS + 1];
    memset(peers, 0, sizeof peers);
    for (int i = 0; i <= MS_WIRE_MAX_SHUFFLE_PEERS; i++) {
        s_id(peers[i].node_id, (uint8_t) i);
        snprintf(peers[i].endpoint, sizeof peers[i].endpoint,
                 "tcp://127.0.0.%d:%d", i + 1, 6000 + i);
    }
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_SHUFFLE;
    s_id(env.shuffle.node_id, 5);
    strcpy(env.shuffle.endpoint, "tcp://127.0.0.1:5871");
    env.shuffle.ttl = 4;
    env.shuffle.peers = peers;
    env.shuffle.n_peers = 3;
    back = s_round_trip(&env);
    assert_int_equal(back->shuffle.ttl, 4);
    assert_int_equal(back->shuffle.n_peers, 3);
    assert_memory_equal(back->shuffle.peers, peers, 3 * sizeof peers[0]);
    ms_wire_envelope_destroy(&back);
    env.shuffle.n_peers = MS_WIRE_MAX_SHUFFLE_PEERS + 1;
    s_expect_encode_invalid(&env);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_SHUFFLE_REPLY;
    env.shuffle.peers = peers;
    env.shuffle.n_peers = MS_WIRE_MAX_SHUFFLE_PEERS;
    back = s_round_trip(&env);
    assert_int_equal(back->shuffle.n_peers, MS_WIRE_MAX_SHUFFLE_PEERS);
    assert_string_equal(back->shuffle.peers[63].endpoint,
                        "tcp://127.0.0.64:6063");
    ms_wire_envelope_destroy(&back);
}

//  --------------------------------------------------------------------------
//  WHO_ARE_YOU (no fields) and I_AM.

static void
test_who_are_you_round_trip(void **state)
{
    (void) state;
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_WHO_ARE_YOU};
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_int_equal(back->body, MS_WIRE_BODY_WHO_ARE_YOU);
    ms_wire_envelope_destroy(&back);

    env.body = MS_WIRE_BODY_I_AM;
    s_id(env.i_am.node_id, 77);
    back = s_round_trip(&env);
    assert_memory_equal(back->i_am.node_id, env.i_am.node_id, 32);
    assert_string_equal(ms_wire_body_name(back->body), "I_AM");
    ms_wire_envelope_destroy(&back);
}

//  --------------------------------------------------------------------------
//  BLOCK_ACK: round trip; seq 0 (an ack of nothing) refused both ways.

static void
test_block_ack_round_trip(void **state)
{
    (void) state;
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_BLOCK_ACK};
    env.block_ack.incarnation = 0x0123456789abcdefull;
    env.block_ack.seq = 42;
    env.block_ack.own_incarnation = 7;
    env.block_ack.own_seq = 0;
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_int_equal(back->body, MS_WIRE_BODY_BLOCK_ACK);
    assert_true(back->block_ack.incarnation == 0x0123456789abcdefull);
    assert_int_equal(back->block_ack.seq, 42);
    assert_int_equal(back->block_ack.own_incarnation, 7);
    assert_int_equal(back->block_ack.own_seq, 0);
    assert_string_equal(ms_wire_body_name(back->body), "BLOCK_ACK");
    ms_wire_envelope_destroy(&back);

    env.block_ack.seq = 0;
    s_expect_encode_invalid(&env);
    s_pbw_t body = {.n = 0}, frame;
    s_w_uint(&body, 1, 5); // incarnation, no seq
    s_w_envelope(&frame, MS_WIRE_BODY_BLOCK_ACK + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
}

//  --------------------------------------------------------------------------
//  ITEM_DIGEST, ITEM_LIST, ITEMS: round trips; an empty ITEMS, an empty
//  item, a digest of 31 bytes and an item over the limit are refused.

static void
test_items_round_trip(void **state)
{
    (void) state;
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_ITEM_DIGEST};
    s_id(env.item_digest.digest, 9);
    env.item_digest.n_items = 3;
    ms_wire_envelope_t *back = s_round_trip(&env);
    assert_memory_equal(back->item_digest.digest, env.item_digest.digest,
                        MS_WIRE_ID_BYTES);
    assert_int_equal(back->item_digest.n_items, 3);
    assert_string_equal(ms_wire_body_name(back->body), "ITEM_DIGEST");
    ms_wire_envelope_destroy(&back);

    uint8_t digests[3][MS_WIRE_ID_BYTES];
    for (int i = 0; i < 3; i++)
        s_id(digests[i], (uint8_t) (20 + i));
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_ITEM_LIST;
    env.item_list.digests = digests;
    env.item_list.n_digests = 3;
    back = s_round_trip(&env);
    assert_int_equal(back->item_list.n_digests, 3);
    assert_memory_equal(back->item_list.digests, digests, sizeof digests);
    ms_wire_envelope_destroy(&back);
    env.item_list.n_digests = 0; // an empty set is a valid list
    back = s_round_trip(&env);
    assert_int_equal(back->item_list.n_digests, 0);
    ms_wire_envelope_destroy(&back);

    uint8_t a[5] = {1, 2, 3, 4, 5}, b[1] = {2};
    ms_wire_item_t items[2] = {{a, sizeof a}, {b, sizeof b}};
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_ITEMS;
    env.items.items = items;
    env.items.n_items = 2;
    back = s_round_trip(&env);
    assert_int_equal(back->items.n_items, 2);
    assert_int_equal(back->items.items[0].n_bytes, 5);
    assert_memory_equal(back->items.items[0].bytes, a, 5);
    assert_int_equal(back->items.items[1].n_bytes, 1);
    ms_wire_envelope_destroy(&back);

    env.items.n_items = 0;
    s_expect_encode_invalid(&env);
    items[1].n_bytes = MS_WIRE_MAX_ITEM_BYTES + 1;
    env.items.n_items = 2;
    s_expect_encode_invalid(&env);

    s_pbw_t body = {.n = 0}, frame;
    s_w_envelope(&frame, MS_WIRE_BODY_ITEMS + 1, &body); // no item
    s_expect_decode_refused(frame.buf, frame.n);
    s_w_bytes(&body, 1, a, 0); // one empty item
    s_w_envelope(&frame, MS_WIRE_BODY_ITEMS + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
    body.n = 0;
    s_w_id(&body, 1, 31); // a digest one byte short
    s_w_envelope(&frame, MS_WIRE_BODY_ITEM_LIST + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
    body.n = 0;
    s_w_id(&body, 1, 33);
    s_w_envelope(&frame, MS_WIRE_BODY_ITEM_DIGEST + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
}

//  --------------------------------------------------------------------------
//  Endpoints: what dials, what does not.

static void
test_endpoint_valid(void **state)
{
    (void) state;
    assert_true(ms_wire_endpoint_valid("tcp://127.0.0.1:5871"));
    assert_true(ms_wire_endpoint_valid("tcp://host-1.example_x.org:1"));
    assert_true(ms_wire_endpoint_valid("tcp://[fe80::1%eth0]:65535"));
    assert_false(ms_wire_endpoint_valid(NULL));
    assert_false(ms_wire_endpoint_valid(""));
    assert_false(ms_wire_endpoint_valid("tcp://"));
    assert_false(ms_wire_endpoint_valid("tcp://:5871"));
    assert_false(ms_wire_endpoint_valid("tcp://host"));
    assert_false(ms_wire_endpoint_valid("tcp://host:"));
    assert_false(ms_wire_endpoint_valid("tcp://host:0"));
    assert_false(ms_wire_endpoint_valid("tcp://host:65536"));
    assert_false(ms_wire_endpoint_valid("tcp://host:123456"));
    assert_false(ms_wire_endpoint_valid("tcp://host:12a"));
    assert_false(ms_wire_endpoint_valid("tcp://*:5871"));
    assert_false(ms_wire_endpoint_valid("tcp://a b:5871"));
    assert_false(ms_wire_endpoint_valid("tcp://eth0;host:5871"));
    assert_false(ms_wire_endpoint_valid("tcp://::1:5871"));
    assert_false(ms_wire_endpoint_valid("tcp://[]:5871"));
    assert_false(ms_wire_endpoint_valid("ipc:///tmp/x:1"));
    char long_ep[MS_WIRE_ENDPOINT_MAX + 2];
    memset(long_ep, 'a', sizeof long_ep);
    memcpy(long_ep, "tcp://", 6);
    memcpy(long_ep + MS_WIRE_ENDPOINT_MAX - 5, ":5871", 6); // 256 chars
    assert_int_equal(strlen(long_ep), MS_WIRE_ENDPOINT_MAX);
    assert_true(ms_wire_endpoint_valid(long_ep));
    memset(long_ep, 'a', sizeof long_ep);
    memcpy(long_ep, "tcp://", 6);
    memcpy(long_ep + MS_WIRE_ENDPOINT_MAX - 4, ":5871", 6); // 257 chars
    assert_false(ms_wire_endpoint_valid(long_ep));
}

// --- refusals of hand-made and damaged frames -------------------------------

//  --------------------------------------------------------------------------
//  Every proper prefix of a valid frame is refused; so is empty input.

static void
test_decode_refuses_truncated(void **state)
{
    (void) state;
    uint8_t payload[100];
    memset(payload, 0x33, sizeof payload);
    ms_wire_record_t recs[2] = {
        {.seq = 5, .kind = 4, .payload = payload, .payload_bytes = 100},
        {.seq = 6, .kind = 7, .payload = payload, .payload_bytes = 50},
    };
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_BLOCK};
    s_id(env.block.origin, 1);
    env.block.first_seq = 5;
    env.block.records = recs;
    env.block.n_records = 2;
    uint8_t *buf;
    size_t n;
    assert_int_equal(ms_wire_encode_envelope(&env, &buf, &n), MS_OK);
    for (size_t k = 0; k < n; k++)
        s_expect_decode_refused(buf, k);
    s_expect_decode_refused(NULL, 0);
    free(buf);
}

//  --------------------------------------------------------------------------
//  A frame over MS_MAX_FRAME_BYTES is refused before unpacking, and the
//  encoder says MS_ERR_RANGE rather than write one.

static void
test_oversized_frame(void **state)
{
    (void) state;
    size_t n = (size_t) MS_MAX_FRAME_BYTES + 1;
    uint8_t *big = calloc(1, n);
    assert_non_null(big);
    // A valid prefix (protocol = 1, WHO_ARE_YOU) padded with a huge
    // unknown field would unpack; the size alone must refuse it.
    s_expect_decode_refused(big, n);
    free(big);

    size_t n_entries = MS_MAX_FRAME_BYTES / 40;
    ms_wire_vector_entry_t *entries = calloc(n_entries, sizeof *entries);
    assert_non_null(entries);
    for (size_t i = 0; i < n_entries; i++) {
        memset(entries[i].origin, 0xFF, 32);
        entries[i].incarnation = UINT64_MAX;
        entries[i].seq = UINT64_MAX;
    }
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_VECTOR};
    env.vector.entries = entries;
    env.vector.n_entries = n_entries;
    uint8_t *buf = (uint8_t *) 1;
    assert_int_equal(ms_wire_encode_envelope(&env, &buf, &n), MS_ERR_RANGE);
    assert_null(buf);
    free(entries);
}

//  --------------------------------------------------------------------------
//  Ids of 0, 31 or 33 bytes are refused in every place an id appears.

static void
test_decode_refuses_wrong_id_length(void **state)
{
    (void) state;
    s_pbw_t body, frame;
    const size_t bad[] = {0, 1, 31, 33, 64};
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        // I_AM {node_id}
        body.n = 0;
        s_w_id(&body, 1, bad[b]);
        s_w_envelope(&frame, MS_WIRE_BODY_I_AM + 1, &body);
        s_expect_decode_refused(frame.buf, frame.n);
        // HELLO {node_id ok, pool_id bad}
        body.n = 0;
        s_w_id(&body, 1, 32);
        s_w_id(&body, 2, bad[b]);
        s_w_uint(&body, 3, 1);
        s_w_uint(&body, 4, 1);
        s_w_uint(&body, 6, 5871);
        s_w_envelope(&frame, MS_WIRE_BODY_HELLO + 1, &body);
        s_expect_decode_refused(frame.buf, frame.n);
        // BLOB_MISSING {hash}
        body.n = 0;
        s_w_id(&body, 1, bad[b]);
        s_w_envelope(&frame, MS_WIRE_BODY_BLOB_MISSING + 1, &body);
        s_expect_decode_refused(frame.buf, frame.n);
        // HEARTBEAT with one live claim whose task id is bad
        s_pbw_t claim = {.n = 0};
        s_w_id(&claim, 1, bad[b]);
        s_w_uint(&claim, 3, 1);
        body.n = 0;
        s_w_bytes(&body, 3, claim.buf, claim.n);
        s_w_envelope(&frame, MS_WIRE_BODY_HEARTBEAT + 1, &body);
        s_expect_decode_refused(frame.buf, frame.n);
    }
    // The same hand-made HELLO with a 32-byte pool id decodes: the writer
    // itself is right, so the refusals above are for the lengths.
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_id(&body, 2, 32);
    s_w_uint(&body, 3, 1);
    s_w_uint(&body, 4, 1);
    s_w_uint(&body, 6, 5871);
    s_w_envelope(&frame, MS_WIRE_BODY_HELLO + 1, &body);
    ms_wire_envelope_t *env = NULL;
    assert_int_equal(ms_wire_decode_envelope(frame.buf, frame.n, &env), MS_OK);
    assert_int_equal(env->hello.mesh_port, 5871);
    ms_wire_envelope_destroy(&env);
}

//  --------------------------------------------------------------------------
//  Write a block frame with n records whose seqs are first + i + skew
//  (skew applied from record skew_at on).

static void
s_w_block(s_pbw_t *frame, uint64_t first, size_t n, size_t skew_at,
          uint64_t skew)
{
    s_pbw_t body = {.n = 0};
    s_w_id(&body, 1, 32);
    s_w_uint(&body, 2, 9);
    s_w_uint(&body, 3, first);
    for (size_t i = 0; i < n; i++) {
        s_pbw_t rec = {.n = 0};
        s_w_uint(&rec, 1, first + i + (i >= skew_at ? skew : 0));
        s_w_uint(&rec, 2, 4);
        s_w_bytes(&rec, 3, "x", 1);
        s_w_bytes(&body, 4, rec.buf, rec.n);
    }
    s_w_envelope(frame, MS_WIRE_BODY_BLOCK + 1, &body);
}

//  --------------------------------------------------------------------------
//  Blocks of 0 or 65 records, non-contiguous or shifted seqs, seq 0.

static void
test_decode_refuses_bad_blocks(void **state)
{
    (void) state;
    s_pbw_t frame;
    ms_wire_envelope_t *env = NULL;
    s_w_block(&frame, 10, 64, 64, 0);
    assert_int_equal(ms_wire_decode_envelope(frame.buf, frame.n, &env), MS_OK);
    assert_int_equal(env->block.n_records, 64);
    assert_int_equal(env->block.records[63].seq, 73);
    ms_wire_envelope_destroy(&env);

    s_w_block(&frame, 10, 0, 0, 0);
    s_expect_decode_refused(frame.buf, frame.n);
    s_w_block(&frame, 10, 65, 65, 0);
    s_expect_decode_refused(frame.buf, frame.n);
    s_w_block(&frame, 10, 5, 3, 1); // gap after the third record
    s_expect_decode_refused(frame.buf, frame.n);
    s_w_block(&frame, 10, 5, 0, 1); // records start above first_seq
    s_expect_decode_refused(frame.buf, frame.n);
    s_w_block(&frame, 0, 2, 2, 0); // seq 0 does not exist
    s_expect_decode_refused(frame.buf, frame.n);
    s_w_block(&frame, UINT64_MAX, 2, 2, 0); // seqs wrap around
    s_expect_decode_refused(frame.buf, frame.n);
}

//  --------------------------------------------------------------------------
//  No body, an unknown body, protocol 0, fields out of contract.

static void
test_decode_refuses_bad_fields(void **state)
{
    (void) state;
    s_pbw_t body = {.n = 0}, frame;
    // Envelope with a protocol and no body.
    frame.n = 0;
    s_w_uint(&frame, 1, 1);
    s_expect_decode_refused(frame.buf, frame.n);
    // A body from the future (field 40) is unknown to this build.
    s_w_envelope(&frame, 40, &body);
    s_expect_decode_refused(frame.buf, frame.n);
    // WHO_ARE_YOU with protocol 0.
    frame.n = 0;
    s_w_bytes(&frame, MS_WIRE_BODY_WHO_ARE_YOU + 1, "", 0);
    s_expect_decode_refused(frame.buf, frame.n);
    // ... and with protocol 1 it decodes.
    s_w_envelope(&frame, MS_WIRE_BODY_WHO_ARE_YOU + 1, &body);
    ms_wire_envelope_t *env = NULL;
    assert_int_equal(ms_wire_decode_envelope(frame.buf, frame.n, &env), MS_OK);
    ms_wire_envelope_destroy(&env);

    // HELLO: mesh port above 65535; min above max; operator not UTF-8.
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_id(&body, 2, 32);
    s_w_uint(&body, 3, 1);
    s_w_uint(&body, 4, 1);
    s_w_uint(&body, 6, 70000);
    s_w_envelope(&frame, MS_WIRE_BODY_HELLO + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_id(&body, 2, 32);
    s_w_uint(&body, 3, 2);
    s_w_uint(&body, 4, 1);
    s_w_uint(&body, 6, 5871);
    s_w_envelope(&frame, MS_WIRE_BODY_HELLO + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_id(&body, 2, 32);
    s_w_uint(&body, 3, 1);
    s_w_uint(&body, 4, 1);
    s_w_uint(&body, 6, 5871);
    s_w_bytes(&body, 8, "\xC0\xAF", 2); // overlong '/'
    s_w_envelope(&frame, MS_WIRE_BODY_HELLO + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);

    // JOIN: endpoint of 300 characters; endpoint that is not tcp://.
    char ep[300];
    memset(ep, 'a', sizeof ep);
    memcpy(ep, "tcp://", 6);
    memcpy(ep + sizeof ep - 5, ":5871", 5);
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_bytes(&body, 2, ep, sizeof ep);
    s_w_envelope(&frame, MS_WIRE_BODY_JOIN + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_bytes(&body, 2, "inproc://x", 10);
    s_w_envelope(&frame, MS_WIRE_BODY_JOIN + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);

    // SHUFFLE_REPLY with 65 peers.
    body.n = 0;
    for (int i = 0; i < MS_WIRE_MAX_SHUFFLE_PEERS + 1; i++) {
        s_pbw_t peer = {.n = 0};
        s_w_id(&peer, 1, 32);
        s_w_bytes(&peer, 2, "tcp://h:1", 9);
        s_w_bytes(&body, 1, peer.buf, peer.n);
    }
    s_w_envelope(&frame, MS_WIRE_BODY_SHUFFLE_REPLY + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);

    // BLOB_REQUEST of 0 bytes; BLOB_CHUNK past its total.
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_uint(&body, 2, 0);
    s_w_envelope(&frame, MS_WIRE_BODY_BLOB_REQUEST + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);
    body.n = 0;
    s_w_id(&body, 1, 32);
    s_w_uint(&body, 2, 10);
    s_w_uint(&body, 3, 12);
    s_w_bytes(&body, 4, "abc", 3);
    s_w_envelope(&frame, MS_WIRE_BODY_BLOB_CHUNK + 1, &body);
    s_expect_decode_refused(frame.buf, frame.n);

    // A wire-type mismatch (body field sent as a varint).
    frame.n = 0;
    s_w_uint(&frame, 1, 1);
    s_w_uint(&frame, MS_WIRE_BODY_I_AM + 1, 5);
    s_expect_decode_refused(frame.buf, frame.n);

    // The encoder refuses body NONE, an unknown body and protocol 0.
    ms_wire_envelope_t bad = {.protocol = 1, .body = MS_WIRE_BODY_NONE};
    s_expect_encode_invalid(&bad);
    bad.body = (ms_wire_body_t) 99;
    s_expect_encode_invalid(&bad);
    assert_string_equal(ms_wire_body_name(bad.body), "?");
    bad.body = MS_WIRE_BODY_WHO_ARE_YOU;
    bad.protocol = 0;
    s_expect_encode_invalid(&bad);
}

//  --------------------------------------------------------------------------
//  Random bytes and randomly damaged valid frames: refused or decoded
//  into a struct that encodes again; never a crash (ASan build).

static void
test_decode_garbage(void **state)
{
    (void) state;
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    uint8_t buf[512];
    ms_wire_peer_t peers[2] = {{.endpoint = "tcp://a:1"},
                               {.endpoint = "tcp://b:2"}};
    ms_wire_envelope_t model = {.protocol = 1, .body = MS_WIRE_BODY_SHUFFLE};
    strcpy(model.shuffle.endpoint, "tcp://c:3");
    model.shuffle.peers = peers;
    model.shuffle.n_peers = 2;
    uint8_t *valid;
    size_t n_valid;
    assert_int_equal(ms_wire_encode_envelope(&model, &valid, &n_valid), MS_OK);
    assert_true(n_valid <= sizeof buf);
    int n_ok = 0;
    for (int round = 0; round < 20000; round++) {
        size_t n;
        if (round % 2) {
            n = n_valid;
            memcpy(buf, valid, n);
            for (int k = 0; k < 3; k++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                buf[x % n] = (uint8_t) (x >> 32);
            }
        } else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            n = x % sizeof buf;
            for (size_t i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                buf[i] = (uint8_t) x;
            }
        }
        ms_wire_envelope_t *env = NULL;
        int rc = ms_wire_decode_envelope(buf, n, &env);
        assert_true(rc == MS_OK || rc == MS_ERR_PROTOCOL);
        if (rc == MS_OK) {
            n_ok++;
            uint8_t *again;
            size_t n_again;
            assert_int_equal(ms_wire_encode_envelope(env, &again, &n_again),
                             MS_OK);
            free(again);
            ms_wire_envelope_destroy(&env);
        } else
            assert_null(env);
    }
    assert_true(n_ok > 0); // some damaged frames stay valid (e.g. a ttl)
    free(valid);
}

// --- record payloads --------------------------------------------------------

//  --------------------------------------------------------------------------
//  SWEEP payload round trip and refusals.

static void
test_payload_sweep(void **state)
{
    (void) state;
    ms_wire_dataset_ref_t refs[2];
    memset(refs, 0, sizeof refs);
    strcpy(refs[0].role, "train-images");
    strcpy(refs[0].name, "fashion-mnist");
    refs[0].size = 47040016;
    s_id(refs[0].hash, 1);
    strcpy(refs[1].role, "train-labels");
    strcpy(refs[1].name, "fashion-mnist");
    refs[1].size = 60008;
    s_id(refs[1].hash, 2);
    ms_wire_sweep_t sweep = {.spec = "{\"method\":\"grid\"}",
                             .priority = -3,
                             .datasets = refs,
                             .n_datasets = 2};
    s_id(sweep.sweep_id, 9);
    uint8_t *buf;
    size_t n;
    assert_int_equal(ms_wire_encode_sweep(&sweep, &buf, &n), MS_OK);
    ms_wire_sweep_t *back = NULL;
    assert_int_equal(ms_wire_decode_sweep(buf, n, &back), MS_OK);
    assert_memory_equal(back->sweep_id, sweep.sweep_id, 32);
    assert_string_equal(back->spec, sweep.spec);
    assert_int_equal(back->priority, -3);
    assert_int_equal(back->n_datasets, 2);
    assert_memory_equal(back->datasets, refs, sizeof refs);
    ms_wire_sweep_destroy(&back);
    assert_null(back);
    // A sweep payload is not a claim payload (ids in the wrong field).
    ms_wire_claim_t claim;
    assert_int_equal(ms_wire_decode_claim(buf, n, &claim), MS_ERR_PROTOCOL);
    free(buf);

    // Refused: empty spec, empty role, over the payload limit.
    sweep.spec = "";
    assert_int_equal(ms_wire_encode_sweep(&sweep, &buf, &n), MS_ERR_INVALID);
    assert_null(buf);
    sweep.spec = "{}";
    refs[1].role[0] = '\0';
    assert_int_equal(ms_wire_encode_sweep(&sweep, &buf, &n), MS_ERR_INVALID);
    refs[1].role[0] = 't';
    char *huge = malloc(MS_WIRE_MAX_PAYLOAD_BYTES + 1);
    assert_non_null(huge);
    memset(huge, 'x', MS_WIRE_MAX_PAYLOAD_BYTES);
    huge[MS_WIRE_MAX_PAYLOAD_BYTES] = '\0';
    sweep.spec = huge;
    assert_int_equal(ms_wire_encode_sweep(&sweep, &buf, &n), MS_ERR_RANGE);
    free(huge);
    uint8_t *big = calloc(1, MS_WIRE_MAX_PAYLOAD_BYTES + 1);
    assert_int_equal(
        ms_wire_decode_sweep(big, MS_WIRE_MAX_PAYLOAD_BYTES + 1, &back),
        MS_ERR_PROTOCOL);
    assert_null(back);
    free(big);
}

//  --------------------------------------------------------------------------
//  SWEEP_CONTROL round trip (with its logical time, and reopen), a record
//  with no logical time (older nodes) decodes as time 0, unknown action
//  refused.

static void
test_payload_sweep_control(void **state)
{
    (void) state;
    ms_wire_sweep_control_t c = {
        .action = MS_WIRE_SWEEP_ACTION_PRIORITY, .priority = 12, .lamport = 7};
    s_id(c.sweep_id, 3);
    uint8_t *buf;
    size_t n;
    assert_int_equal(ms_wire_encode_sweep_control(&c, &buf, &n), MS_OK);
    ms_wire_sweep_control_t *back = NULL;
    assert_int_equal(ms_wire_decode_sweep_control(buf, n, &back), MS_OK);
    assert_memory_equal(back, &c, sizeof c);
    ms_wire_sweep_control_destroy(&back);
    free(buf);
    c.action = MS_WIRE_SWEEP_ACTION_REOPEN;
    c.lamport = UINT64_MAX;
    assert_int_equal(ms_wire_encode_sweep_control(&c, &buf, &n), MS_OK);
    assert_int_equal(ms_wire_decode_sweep_control(buf, n, &back), MS_OK);
    assert_memory_equal(back, &c, sizeof c);
    ms_wire_sweep_control_destroy(&back);
    free(buf);
    s_pbw_t old = {.n = 0}; // an older node's pause: fields 1 and 2 only
    s_w_id(&old, 1, 32);
    s_w_uint(&old, 2, MS_WIRE_SWEEP_ACTION_PAUSE);
    assert_int_equal(ms_wire_decode_sweep_control(old.buf, old.n, &back),
                     MS_OK);
    assert_int_equal(back->action, MS_WIRE_SWEEP_ACTION_PAUSE);
    assert_int_equal(back->lamport, 0);
    ms_wire_sweep_control_destroy(&back);
    c.action = (ms_wire_sweep_action_t) 0;
    assert_int_equal(ms_wire_encode_sweep_control(&c, &buf, &n),
                     MS_ERR_INVALID);
    s_pbw_t w = {.n = 0};
    s_w_id(&w, 1, 32);
    s_w_uint(&w, 2, 6); // action 6 does not exist
    assert_int_equal(ms_wire_decode_sweep_control(w.buf, w.n, &back),
                     MS_ERR_PROTOCOL);
    w.n = 0;
    s_w_id(&w, 1, 31);
    s_w_uint(&w, 2, 1);
    assert_int_equal(ms_wire_decode_sweep_control(w.buf, w.n, &back),
                     MS_ERR_PROTOCOL);
    assert_null(back);
}

//  --------------------------------------------------------------------------
//  DATASET round trip; no files refused.

static void
test_payload_dataset(void **state)
{
    (void) state;
    ms_wire_dataset_file_t files[4];
    memset(files, 0, sizeof files);
    const char *roles[4] = {"train-images", "train-labels", "test-images",
                            "test-labels"};
    for (int i = 0; i < 4; i++) {
        strcpy(files[i].role, roles[i]);
        files[i].size = 1000u * (unsigned) (i + 1);
        s_id(files[i].hash, (uint8_t) (40 + i));
    }
    ms_wire_dataset_t d = {.files = files, .n_files = 4};
    strcpy(d.name, "fashion-mnist");
    uint8_t *buf;
    size_t n;
    assert_int_equal(ms_wire_encode_dataset(&d, &buf, &n), MS_OK);
    ms_wire_dataset_t *back = NULL;
    assert_int_equal(ms_wire_decode_dataset(buf, n, &back), MS_OK);
    assert_string_equal(back->name, "fashion-mnist");
    assert_int_equal(back->n_files, 4);
    assert_memory_equal(back->files, files, sizeof files);
    ms_wire_dataset_destroy(&back);
    free(buf);
    d.n_files = 0;
    assert_int_equal(ms_wire_encode_dataset(&d, &buf, &n), MS_ERR_INVALID);
    s_pbw_t w = {.n = 0};
    s_w_bytes(&w, 1, "x", 1);
    assert_int_equal(ms_wire_decode_dataset(w.buf, w.n, &back),
                     MS_ERR_PROTOCOL);
    assert_null(back);
}

//  --------------------------------------------------------------------------
//  CLAIM round trip into a caller struct; epoch 0 refused.

static void
test_payload_claim(void **state)
{
    (void) state;
    ms_wire_claim_t c = {.slot = 2, .epoch = 5};
    s_id(c.task_id, 6);
    uint8_t *buf;
    size_t n;
    assert_int_equal(ms_wire_encode_claim(&c, &buf, &n), MS_OK);
    ms_wire_claim_t back;
    memset(&back, 0, sizeof back);
    assert_int_equal(ms_wire_decode_claim(buf, n, &back), MS_OK);
    assert_memory_equal(&back, &c, sizeof c);
    free(buf);
    c.epoch = 0;
    assert_int_equal(ms_wire_encode_claim(&c, &buf, &n), MS_ERR_INVALID);
    s_pbw_t w = {.n = 0};
    s_w_id(&w, 1, 32);
    s_w_uint(&w, 2, 1); // epoch missing = 0
    ms_wire_claim_t untouched = {.slot = 77};
    assert_int_equal(ms_wire_decode_claim(w.buf, w.n, &untouched),
                     MS_ERR_PROTOCOL);
    assert_int_equal(untouched.slot, 77);
    assert_int_equal(ms_wire_decode_claim(NULL, 0, &untouched),
                     MS_ERR_PROTOCOL);
}

//  --------------------------------------------------------------------------
//  REEVALUATION round trip and refusals.

static void
test_payload_reevaluation(void **state)
{
    (void) state;
    uint8_t *buf;
    size_t n;
    ms_wire_reevaluation_t r = {.status = MS_WIRE_REEVAL_OK,
                                .test_accuracy = 0.875,
                                .test_loss = 0.25,
                                .val_accuracy = 0.5,
                                .val_loss = 1.5};
    s_id(r.task_id, 4);
    s_id(r.target, 5);
    assert_int_equal(ms_wire_encode_reevaluation(&r, &buf, &n), MS_OK);
    ms_wire_reevaluation_t back;
    memset(&back, 0, sizeof back);
    assert_int_equal(ms_wire_decode_reevaluation(buf, n, &back), MS_OK);
    assert_memory_equal(&back, &r, sizeof r);
    free(buf);
    r.status = MS_WIRE_REEVAL_FAILED;
    r.test_accuracy = r.test_loss = r.val_accuracy = r.val_loss = 0;
    snprintf(r.reason, sizeof r.reason, "weights not found in 120 s");
    assert_int_equal(ms_wire_encode_reevaluation(&r, &buf, &n), MS_OK);
    assert_int_equal(ms_wire_decode_reevaluation(buf, n, &back), MS_OK);
    assert_string_equal(back.reason, r.reason);
    assert_int_equal(back.status, MS_WIRE_REEVAL_FAILED);
    free(buf);
    r.status = (ms_wire_reeval_status_t) 3;
    assert_int_equal(ms_wire_encode_reevaluation(&r, &buf, &n), MS_ERR_INVALID);
    //  A status out of range, or a target of 31 bytes: refused, back kept.
    s_pbw_t w = {.n = 0};
    s_w_id(&w, 1, 32);
    s_w_id(&w, 2, 32);
    s_w_uint(&w, 3, 7);
    ms_wire_reevaluation_t keep = back;
    assert_int_equal(ms_wire_decode_reevaluation(w.buf, w.n, &back),
                     MS_ERR_PROTOCOL);
    assert_memory_equal(&back, &keep, sizeof keep);
    w.n = 0;
    s_w_id(&w, 1, 32);
    s_w_id(&w, 2, 31);
    s_w_uint(&w, 3, 1);
    assert_int_equal(ms_wire_decode_reevaluation(w.buf, w.n, &back),
                     MS_ERR_PROTOCOL);
}

//  --------------------------------------------------------------------------
//  COMMIT round trip and refusals; a RESULT's nonce (reveal).

static void
test_payload_commit_and_nonce(void **state)
{
    (void) state;
    uint8_t *buf;
    size_t n;
    ms_wire_commit_t c = {.slot = 1, .epoch = 2};
    s_id(c.task_id, 4);
    s_id(c.commitment, 5);
    assert_int_equal(ms_wire_encode_commit(&c, &buf, &n), MS_OK);
    ms_wire_commit_t back;
    memset(&back, 0, sizeof back);
    assert_int_equal(ms_wire_decode_commit(buf, n, &back), MS_OK);
    assert_memory_equal(&back, &c, sizeof c);
    free(buf);
    c.epoch = 0;
    assert_int_equal(ms_wire_encode_commit(&c, &buf, &n), MS_ERR_INVALID);
    // A commitment of 31 bytes, or none, is refused; back is unchanged.
    s_pbw_t w = {.n = 0};
    s_w_id(&w, 1, 32);
    s_w_uint(&w, 3, 1);
    s_w_id(&w, 4, 31);
    ms_wire_commit_t keep = back;
    assert_int_equal(ms_wire_decode_commit(w.buf, w.n, &back), MS_ERR_PROTOCOL);
    assert_memory_equal(&back, &keep, sizeof keep);
    w.n = 0;
    s_w_id(&w, 1, 32);
    s_w_uint(&w, 3, 1);
    assert_int_equal(ms_wire_decode_commit(w.buf, w.n, &back), MS_ERR_PROTOCOL);

    ms_wire_result_t res = {
        .slot = 0, .epoch = 1, .row_json = "{}", .has_nonce = true};
    s_id(res.task_id, 2);
    s_id(res.nonce, 7);
    assert_int_equal(ms_wire_encode_result(&res, &buf, &n), MS_OK);
    ms_wire_result_t *rb = NULL;
    assert_int_equal(ms_wire_decode_result(buf, n, &rb), MS_OK);
    assert_true(rb->has_nonce);
    assert_memory_equal(rb->nonce, res.nonce, 32);
    ms_wire_result_destroy(&rb);
    free(buf);
    res.has_nonce = false;
    assert_int_equal(ms_wire_encode_result(&res, &buf, &n), MS_OK);
    assert_int_equal(ms_wire_decode_result(buf, n, &rb), MS_OK);
    assert_false(rb->has_nonce);
    ms_wire_result_destroy(&rb);
    free(buf);
    // A nonce of 16 bytes is refused.
    w.n = 0;
    s_w_id(&w, 1, 32);
    s_w_uint(&w, 3, 1);
    s_w_bytes(&w, 4, "{}", 2);
    s_w_id(&w, 5, 16);
    assert_int_equal(ms_wire_decode_result(w.buf, w.n, &rb), MS_ERR_PROTOCOL);
    assert_null(rb);
}

//  --------------------------------------------------------------------------
//  RELEASE, RESULT and FAILURE round trips and refusals.

static void
test_payload_release_result_failure(void **state)
{
    (void) state;
    uint8_t *buf;
    size_t n;
    ms_wire_release_t rel = {.slot = 1, .epoch = 3, .reason = "done"};
    s_id(rel.task_id, 1);
    assert_int_equal(ms_wire_encode_release(&rel, &buf, &n), MS_OK);
    ms_wire_release_t *rel_back = NULL;
    assert_int_equal(ms_wire_decode_release(buf, n, &rel_back), MS_OK);
    assert_memory_equal(rel_back->task_id, rel.task_id, 32);
    assert_int_equal(rel_back->slot, 1);
    assert_int_equal(rel_back->epoch, 3);
    assert_string_equal(rel_back->reason, "done");
    ms_wire_release_destroy(&rel_back);
    free(buf);
    rel.reason = "\xFF";
    assert_int_equal(ms_wire_encode_release(&rel, &buf, &n), MS_ERR_INVALID);

    ms_wire_result_t res = {
        .slot = 0, .epoch = 1, .row_json = "{\"accuracy\":0.875}"};
    s_id(res.task_id, 2);
    assert_int_equal(ms_wire_encode_result(&res, &buf, &n), MS_OK);
    ms_wire_result_t *res_back = NULL;
    assert_int_equal(ms_wire_decode_result(buf, n, &res_back), MS_OK);
    assert_string_equal(res_back->row_json, res.row_json);
    assert_int_equal(res_back->epoch, 1);
    ms_wire_result_destroy(&res_back);
    free(buf);
    res.row_json = NULL;
    assert_int_equal(ms_wire_encode_result(&res, &buf, &n), MS_ERR_INVALID);

    ms_wire_failure_t fail = {.slot = 4,
                              .epoch = 2,
                              .failure_class = MS_WIRE_FAILURE_RESOURCE,
                              .reason = "out of memory"};
    s_id(fail.task_id, 3);
    assert_int_equal(ms_wire_encode_failure(&fail, &buf, &n), MS_OK);
    ms_wire_failure_t *fail_back = NULL;
    assert_int_equal(ms_wire_decode_failure(buf, n, &fail_back), MS_OK);
    assert_int_equal(fail_back->failure_class, MS_WIRE_FAILURE_RESOURCE);
    assert_string_equal(fail_back->reason, "out of memory");
    assert_int_equal(fail_back->slot, 4);
    ms_wire_failure_destroy(&fail_back);
    free(buf);
    fail.failure_class = (ms_wire_failure_class_t) 3;
    assert_int_equal(ms_wire_encode_failure(&fail, &buf, &n), MS_ERR_INVALID);
    s_pbw_t w = {.n = 0};
    s_w_id(&w, 1, 32);
    s_w_uint(&w, 3, 1);
    s_w_uint(&w, 4, 9); // class 9
    assert_int_equal(ms_wire_decode_failure(w.buf, w.n, &fail_back),
                     MS_ERR_PROTOCOL);
    assert_null(fail_back);
    // A reason over MS_WIRE_REASON_MAX bytes.
    char reason[MS_WIRE_REASON_MAX + 1];
    memset(reason, 'r', sizeof reason);
    w.n = 0;
    s_w_id(&w, 1, 32);
    s_w_uint(&w, 3, 1);
    s_w_bytes(&w, 4, reason, sizeof reason);
    assert_int_equal(ms_wire_decode_release(w.buf, w.n, &rel_back),
                     MS_ERR_PROTOCOL);
    assert_null(rel_back);
}

//  --------------------------------------------------------------------------
//  Garbage into every payload decoder: refused or decoded, never a crash.

static void
test_payload_garbage(void **state)
{
    (void) state;
    uint64_t x = 88172645463325252ULL;
    uint8_t buf[256];
    for (int round = 0; round < 5000; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t n = x % sizeof buf;
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (uint8_t) x;
        }
        ms_wire_sweep_t *s = NULL;
        ms_wire_sweep_control_t *c = NULL;
        ms_wire_dataset_t *d = NULL;
        ms_wire_release_t *r = NULL;
        ms_wire_result_t *res = NULL;
        ms_wire_failure_t *f = NULL;
        ms_wire_claim_t claim;
        int rcs[7] = {
            ms_wire_decode_sweep(buf, n, &s),
            ms_wire_decode_sweep_control(buf, n, &c),
            ms_wire_decode_dataset(buf, n, &d),
            ms_wire_decode_claim(buf, n, &claim),
            ms_wire_decode_release(buf, n, &r),
            ms_wire_decode_result(buf, n, &res),
            ms_wire_decode_failure(buf, n, &f),
        };
        for (int k = 0; k < 7; k++)
            assert_true(rcs[k] == MS_OK || rcs[k] == MS_ERR_PROTOCOL);
        ms_wire_sweep_destroy(&s);
        ms_wire_sweep_control_destroy(&c);
        ms_wire_dataset_destroy(&d);
        ms_wire_release_destroy(&r);
        ms_wire_result_destroy(&res);
        ms_wire_failure_destroy(&f);
    }
}

// --- fuzz seeds -------------------------------------------------------------

//  --------------------------------------------------------------------------
//  Write n bytes (after an optional prefix byte) to DIR/SUB/NAME.

static void
s_write_seed(const char *dir, const char *sub, const char *name, int prefix,
             const uint8_t *buf, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (prefix >= 0)
        fputc(prefix, f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    fclose(f);
}

//  --------------------------------------------------------------------------
//  Encode env and write it as an envelope seed.

static void
s_seed_envelope(const char *dir, const char *name,
                const ms_wire_envelope_t *env)
{
    uint8_t *buf;
    size_t n;
    assert_int_equal(ms_wire_encode_envelope(env, &buf, &n), MS_OK);
    s_write_seed(dir, "wire_envelope", name, -1, buf, n);
    free(buf);
}

//  --------------------------------------------------------------------------
//  With MESHSWEEP_FUZZ_SEEDS=DIR, write seed corpora for the three fuzz
//  targets (the payload target's first byte picks the kind, as in
//  tests/fuzz/ms_wire_payload_fuzz.c). Skipped otherwise.

static void
test_write_fuzz_seeds(void **state)
{
    (void) state;
    const char *dir = getenv("MESHSWEEP_FUZZ_SEEDS");
    if (!dir || !*dir)
        skip();
    uint8_t *buf;
    size_t n;
    ms_wire_envelope_t env = {.protocol = 1, .body = MS_WIRE_BODY_HELLO};
    s_id(env.hello.node_id, 1);
    s_id(env.hello.pool_id, 2);
    env.hello.protocol_min = env.hello.protocol_max = 1;
    env.hello.mesh_port = 5871;
    env.hello.n_workers = 4;
    env.hello.operator_name = "lab";
    s_seed_envelope(dir, "hello", &env);

    ms_wire_live_claim_t lc = {.slot = 1, .epoch = 2};
    s_id(lc.task_id, 3);
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_HEARTBEAT;
    env.heartbeat.seq = 9;
    env.heartbeat.live_claims = &lc;
    env.heartbeat.n_live_claims = 1;
    env.heartbeat.n_workers = 2;
    env.heartbeat.n_busy = 1;
    env.heartbeat.load = 0.5;
    s_seed_envelope(dir, "heartbeat", &env);

    ms_wire_vector_entry_t ve = {.incarnation = 5, .seq = 7};
    s_id(ve.origin, 4);
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_VECTOR;
    env.vector.entries = &ve;
    env.vector.n_entries = 1;
    s_seed_envelope(dir, "vector", &env);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_RANGE_REQUEST;
    env.range_request.from_seq = 1;
    env.range_request.to_seq = 64;
    env.range_request.max_records = 64;
    s_seed_envelope(dir, "range_request", &env);

    ms_wire_claim_t claim = {.slot = 0, .epoch = 1};
    s_id(claim.task_id, 5);
    assert_int_equal(ms_wire_encode_claim(&claim, &buf, &n), MS_OK);
    ms_wire_record_t recs[2] = {
        {.seq = 1,
         .kind = MS_WIRE_KIND_CLAIM,
         .payload = buf,
         .payload_bytes = n},
        {.seq = 2, .kind = 99, .payload = buf, .payload_bytes = 1},
    };
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_BLOCK;
    env.block.first_seq = 1;
    env.block.records = recs;
    env.block.n_records = 2;
    s_seed_envelope(dir, "block", &env);
    s_write_seed(dir, "wire_payload", "claim", 3, buf, n);
    free(buf);

    uint8_t data[16] = {1, 2, 3};
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_BLOB_CHUNK;
    env.blob_chunk.total = 100;
    env.blob_chunk.data = data;
    env.blob_chunk.data_bytes = sizeof data;
    s_seed_envelope(dir, "blob_chunk", &env);

    ms_wire_peer_t peer = {.endpoint = "tcp://10.0.0.1:5871"};
    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_SHUFFLE;
    strcpy(env.shuffle.endpoint, "tcp://[::1]:5871");
    env.shuffle.ttl = 3;
    env.shuffle.peers = &peer;
    env.shuffle.n_peers = 1;
    s_seed_envelope(dir, "shuffle", &env);

    memset(&env, 0, sizeof env);
    env.protocol = 1;
    env.body = MS_WIRE_BODY_NEIGHBOR;
    strcpy(env.neighbor.endpoint, "tcp://h:1");
    env.neighbor.high_priority = true;
    s_seed_envelope(dir, "neighbor", &env);

    ms_wire_dataset_ref_t ref = {
        .role = "train-images", .name = "fashion-mnist", .size = 10};
    ms_wire_sweep_t sweep = {
        .spec = "{\"method\":\"grid\"}", .datasets = &ref, .n_datasets = 1};
    assert_int_equal(ms_wire_encode_sweep(&sweep, &buf, &n), MS_OK);
    s_write_seed(dir, "wire_payload", "sweep", 0, buf, n);
    free(buf);
    ms_wire_sweep_control_t ctl = {.action = MS_WIRE_SWEEP_ACTION_PAUSE};
    assert_int_equal(ms_wire_encode_sweep_control(&ctl, &buf, &n), MS_OK);
    s_write_seed(dir, "wire_payload", "sweep_control", 1, buf, n);
    free(buf);
    ms_wire_dataset_file_t file = {.role = "train-labels", .size = 60008};
    ms_wire_dataset_t ds = {
        .name = "fashion-mnist", .files = &file, .n_files = 1};
    assert_int_equal(ms_wire_encode_dataset(&ds, &buf, &n), MS_OK);
    s_write_seed(dir, "wire_payload", "dataset", 2, buf, n);
    free(buf);
    ms_wire_release_t rel = {.epoch = 1, .reason = "done"};
    assert_int_equal(ms_wire_encode_release(&rel, &buf, &n), MS_OK);
    s_write_seed(dir, "wire_payload", "release", 4, buf, n);
    free(buf);
    ms_wire_result_t res = {.epoch = 1, .row_json = "{\"loss\":0.5}"};
    assert_int_equal(ms_wire_encode_result(&res, &buf, &n), MS_OK);
    s_write_seed(dir, "wire_payload", "result", 5, buf, n);
    free(buf);
    ms_wire_failure_t fail = {.epoch = 1,
                              .failure_class = MS_WIRE_FAILURE_TASK,
                              .reason = "diverged"};
    assert_int_equal(ms_wire_encode_failure(&fail, &buf, &n), MS_OK);
    s_write_seed(dir, "wire_payload", "failure", 6, buf, n);
    free(buf);

    ms_beacon_t beacon = {
        .protocol_min = 1, .protocol_max = 1, .mesh_port = 5871};
    ms_beacon_open_pool_id(NULL, beacon.pool_id);
    s_id(beacon.node_id, 7);
    uint8_t bbuf[MS_BEACON_BYTES];
    ms_beacon_encode(&beacon, bbuf);
    s_write_seed(dir, "beacon", "default-pool", -1, bbuf, sizeof bbuf);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hello_round_trip),
        cmocka_unit_test(test_heartbeat_round_trip),
        cmocka_unit_test(test_anti_entropy_round_trip),
        cmocka_unit_test(test_block_round_trip),
        cmocka_unit_test(test_blob_round_trip),
        cmocka_unit_test(test_view_round_trip),
        cmocka_unit_test(test_who_are_you_round_trip),
        cmocka_unit_test(test_block_ack_round_trip),
        cmocka_unit_test(test_items_round_trip),
        cmocka_unit_test(test_endpoint_valid),
        cmocka_unit_test(test_decode_refuses_truncated),
        cmocka_unit_test(test_oversized_frame),
        cmocka_unit_test(test_decode_refuses_wrong_id_length),
        cmocka_unit_test(test_decode_refuses_bad_blocks),
        cmocka_unit_test(test_decode_refuses_bad_fields),
        cmocka_unit_test(test_decode_garbage),
        cmocka_unit_test(test_payload_sweep),
        cmocka_unit_test(test_payload_sweep_control),
        cmocka_unit_test(test_payload_dataset),
        cmocka_unit_test(test_payload_claim),
        cmocka_unit_test(test_payload_release_result_failure),
        cmocka_unit_test(test_payload_commit_and_nonce),
        cmocka_unit_test(test_payload_reevaluation),
        cmocka_unit_test(test_payload_garbage),
        cmocka_unit_test(test_write_fuzz_seeds),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
