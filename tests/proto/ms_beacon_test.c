/*  =========================================================================
    ms_beacon_test - the discovery beacon: layout, refusals, filter, open
    pool ids

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_beacon.h"

#include "ms_hash.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  A beacon with recognisable fields.

static ms_beacon_t
s_beacon(void)
{
    ms_beacon_t b;
    memset(&b, 0, sizeof b);
    for (int i = 0; i < MS_BEACON_ID_BYTES; i++) {
        b.pool_id[i] = (uint8_t) (0x10 + i);
        b.node_id[i] = (uint8_t) (0x80 + i);
    }
    b.protocol_min = 1;
    b.protocol_max = 0x0203;
    b.mesh_port = 5871;
    return b;
}

//  --------------------------------------------------------------------------
//  The bytes are exactly the documented layout, big-endian.

static void
test_beacon_layout(void **state)
{
    (void) state;
    ms_beacon_t b = s_beacon();
    uint8_t buf[MS_BEACON_BYTES];
    ms_beacon_encode(&b, buf);
    assert_int_equal(MS_BEACON_BYTES, 74);
    assert_memory_equal(buf, "MSW1", 4);
    assert_memory_equal(buf + 4, b.pool_id, 32);
    assert_int_equal(buf[36], 0x00);
    assert_int_equal(buf[37], 0x01);
    assert_int_equal(buf[38], 0x02);
    assert_int_equal(buf[39], 0x03);
    assert_memory_equal(buf + 40, b.node_id, 32);
    assert_int_equal(buf[72], 5871 >> 8);
    assert_int_equal(buf[73], 5871 & 0xFF);
}

//  --------------------------------------------------------------------------
//  Encode then decode gives the same fields.

static void
test_beacon_round_trip(void **state)
{
    (void) state;
    ms_beacon_t b = s_beacon();
    b.mesh_port = 65535;
    uint8_t buf[MS_BEACON_BYTES];
    ms_beacon_encode(&b, buf);
    ms_beacon_t back;
    memset(&back, 0, sizeof back);
    assert_int_equal(ms_beacon_decode(buf, sizeof buf, &back), MS_OK);
    assert_memory_equal(back.pool_id, b.pool_id, 32);
    assert_memory_equal(back.node_id, b.node_id, 32);
    assert_int_equal(back.protocol_min, 1);
    assert_int_equal(back.protocol_max, 0x0203);
    assert_int_equal(back.mesh_port, 65535);
}

//  --------------------------------------------------------------------------
//  Wrong size, wrong magic, bad versions, port 0: refused, out untouched.

static void
test_beacon_refuses_malformed(void **state)
{
    (void) state;
    ms_beacon_t b = s_beacon();
    uint8_t buf[MS_BEACON_BYTES + 1];
    ms_beacon_encode(&b, buf);
    buf[MS_BEACON_BYTES] = 0;
    ms_beacon_t out;
    memset(&out, 0xEE, sizeof out);
    ms_beacon_t untouched = out;
    for (size_t n = 0; n <= MS_BEACON_BYTES + 1; n++) {
        if (n == MS_BEACON_BYTES)
            continue;
        assert_int_equal(ms_beacon_decode(buf, n, &out), MS_ERR_PROTOCOL);
    }
    assert_int_equal(ms_beacon_decode(NULL, 0, &out), MS_ERR_PROTOCOL);
    buf[3] = '2'; // "MSW2"
    assert_int_equal(ms_beacon_decode(buf, MS_BEACON_BYTES, &out),
                     MS_ERR_PROTOCOL);
    buf[3] = '1';
    b.protocol_min = 0;
    ms_beacon_encode(&b, buf);
    assert_int_equal(ms_beacon_decode(buf, MS_BEACON_BYTES, &out),
                     MS_ERR_PROTOCOL);
    b.protocol_min = 3;
    b.protocol_max = 2;
    ms_beacon_encode(&b, buf);
    assert_int_equal(ms_beacon_decode(buf, MS_BEACON_BYTES, &out),
                     MS_ERR_PROTOCOL);
    b = s_beacon();
    b.mesh_port = 0;
    ms_beacon_encode(&b, buf);
    assert_int_equal(ms_beacon_decode(buf, MS_BEACON_BYTES, &out),
                     MS_ERR_PROTOCOL);
    assert_memory_equal(&out, &untouched, sizeof out);
}

//  --------------------------------------------------------------------------
//  The filter is the first 36 bytes of every beacon of that pool.

static void
test_beacon_filter(void **state)
{
    (void) state;
    ms_beacon_t b = s_beacon();
    uint8_t buf[MS_BEACON_BYTES];
    ms_beacon_encode(&b, buf);
    uint8_t filter[MS_BEACON_FILTER_BYTES];
    size_t n = 0;
    ms_beacon_filter(b.pool_id, filter, &n);
    assert_int_equal(n, 36);
    assert_memory_equal(filter, buf, n);
    b.pool_id[31] ^= 1; // another pool: the prefix differs
    ms_beacon_encode(&b, buf);
    assert_memory_not_equal(filter, buf, n);
}

//  --------------------------------------------------------------------------
//  Open pool ids: BLAKE2b-256("open:" NAME); NULL and "" mean "default";
//  distinct names give distinct ids.

static void
test_beacon_open_pool_id(void **state)
{
    (void) state;
    uint8_t id[32], id_null[32], id_empty[32], id_other[32];
    ms_beacon_open_pool_id("default", id);
    ms_beacon_open_pool_id(NULL, id_null);
    ms_beacon_open_pool_id("", id_empty);
    ms_beacon_open_pool_id("other", id_other);
    ms_hash_t h;
    ms_hash_bytes("open:default", 12, &h);
    assert_memory_equal(id, h.bytes, 32);
    assert_memory_equal(id_null, id, 32);
    assert_memory_equal(id_empty, id, 32);
    assert_memory_not_equal(id_other, id, 32);
    ms_hash_bytes("open:other", 10, &h);
    assert_memory_equal(id_other, h.bytes, 32);
    // Known answer (b2sum -l 256 of "open:default"), so the id stays the
    // same across versions and implementations.
    char hex[MS_HASH_HEX_LEN + 1];
    memcpy(h.bytes, id, 32);
    ms_hash_hex(&h, hex);
    assert_string_equal(
        hex,
        "8dcfb43ecb2be1d2c75848e28031c6a0d9bbbde594061bdeb8a6599d0051d8a7");
}

//  --------------------------------------------------------------------------
//  An advertised host: 75 + its length bytes, read back; the 74 bytes of
//  a beacon without one are unchanged; a bad length or byte is refused.

static void
test_beacon_host(void **state)
{
    (void) state;
    ms_beacon_t b = s_beacon();
    uint8_t plain[MS_BEACON_BYTES], buf[MS_BEACON_MAX_BYTES];
    ms_beacon_encode(&b, plain);
    assert_int_equal(ms_beacon_encode_host(&b, buf), MS_BEACON_BYTES);
    assert_memory_equal(buf, plain, MS_BEACON_BYTES);
    snprintf(b.host, sizeof b.host, "10.213.0.200");
    size_t n = ms_beacon_encode_host(&b, buf);
    assert_int_equal(n, MS_BEACON_BYTES + 1 + 12);
    assert_memory_equal(buf, plain, MS_BEACON_BYTES);
    assert_int_equal(buf[MS_BEACON_BYTES], 12);
    ms_beacon_t back;
    assert_int_equal(ms_beacon_decode(buf, n, &back), MS_OK);
    assert_string_equal(back.host, "10.213.0.200");
    assert_int_equal(back.mesh_port, 5871);
    assert_int_equal(ms_beacon_decode(plain, sizeof plain, &back), MS_OK);
    assert_string_equal(back.host, "");
    // length byte disagrees with the size, a byte no host has
    assert_int_equal(ms_beacon_decode(buf, n - 1, &back), MS_ERR_PROTOCOL);
    assert_int_equal(ms_beacon_decode(buf, n + 1, &back), MS_ERR_PROTOCOL);
    buf[MS_BEACON_BYTES + 3] = ' ';
    assert_int_equal(ms_beacon_decode(buf, n, &back), MS_ERR_PROTOCOL);
    // the longest host fits zbeacon's 255-byte frame
    memset(b.host, 'h', MS_BEACON_HOST_MAX);
    b.host[MS_BEACON_HOST_MAX] = '\0';
    assert_int_equal(ms_beacon_encode_host(&b, buf), 255);
    assert_int_equal(ms_beacon_decode(buf, 255, &back), MS_OK);
    assert_int_equal(strlen(back.host), MS_BEACON_HOST_MAX);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_beacon_layout),
        cmocka_unit_test(test_beacon_round_trip),
        cmocka_unit_test(test_beacon_refuses_malformed),
        cmocka_unit_test(test_beacon_filter),
        cmocka_unit_test(test_beacon_open_pool_id),
        cmocka_unit_test(test_beacon_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
