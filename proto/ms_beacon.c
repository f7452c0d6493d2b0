/*  =========================================================================
    ms_beacon - the UDP discovery beacon payload (fixed layout)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The layout table is in ms_beacon.h; the offsets below are the
    reference. Integers are written byte by byte (big-endian), so the
    code does not depend on the host's byte order or on alignment.
*/
#include "ms_beacon.h"

#include "ms_hash.h"

#include <assert.h>
#include <stdbool.h>
#include <string.h>

#define S_OFF_MAGIC 0
#define S_OFF_POOL 4
#define S_OFF_PROTO_MIN 36
#define S_OFF_PROTO_MAX 38
#define S_OFF_NODE 40
#define S_OFF_PORT 72
#define S_OFF_HOST_LEN 74
#define S_OFF_HOST 75

_Static_assert(S_OFF_PORT + 2 == MS_BEACON_BYTES, "beacon layout");
_Static_assert(S_OFF_NODE == S_OFF_PROTO_MAX + 2, "beacon layout");
_Static_assert(MS_BEACON_FILTER_BYTES == S_OFF_PROTO_MIN, "beacon filter");

//  --------------------------------------------------------------------------
//  Write a 16-bit value big-endian at p.

static void
s_put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t) (v >> 8);
    p[1] = (uint8_t) v;
}

//  --------------------------------------------------------------------------
//  Read a big-endian 16-bit value at p.

static uint16_t
s_get_u16(const uint8_t *p)
{
    return (uint16_t) ((p[0] << 8) | p[1]);
}

//  --------------------------------------------------------------------------
//  Write a beacon payload.

void
ms_beacon_encode(const ms_beacon_t *beacon, uint8_t out[MS_BEACON_BYTES])
{
    assert(beacon);
    assert(out);
    memcpy(out + S_OFF_MAGIC, MS_BEACON_MAGIC, MS_BEACON_MAGIC_BYTES);
    memcpy(out + S_OFF_POOL, beacon->pool_id, MS_BEACON_ID_BYTES);
    s_put_u16(out + S_OFF_PROTO_MIN, beacon->protocol_min);
    s_put_u16(out + S_OFF_PROTO_MAX, beacon->protocol_max);
    memcpy(out + S_OFF_NODE, beacon->node_id, MS_BEACON_ID_BYTES);
    s_put_u16(out + S_OFF_PORT, beacon->mesh_port);
}

//  --------------------------------------------------------------------------
//  Write a beacon payload with its advertised host.

size_t
ms_beacon_encode_host(const ms_beacon_t *beacon,
                      uint8_t out[MS_BEACON_MAX_BYTES])
{
    assert(beacon && out);
    ms_beacon_encode(beacon, out);
    size_t n = strnlen(beacon->host, sizeof beacon->host);
    assert(n <= MS_BEACON_HOST_MAX);
    if (n == 0)
        return MS_BEACON_BYTES;
    out[S_OFF_HOST_LEN] = (uint8_t) n;
    memcpy(out + S_OFF_HOST, beacon->host, n);
    return S_OFF_HOST + n;
}

//  --------------------------------------------------------------------------
//  True when c may be in a host: a name, an IPv4 address or a bracketed
//  IPv6 address (ms_wire_endpoint_valid checks the whole endpoint later).

static bool
s_host_char(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_' ||
           c == ':' || c == '[' || c == ']' || c == '%';
}

//  --------------------------------------------------------------------------
//  Read a received beacon payload.

int
ms_beacon_decode(const uint8_t *buf, size_t n, ms_beacon_t *out)
{
    assert(out);
    if (n < MS_BEACON_BYTES || !buf ||
        memcmp(buf + S_OFF_MAGIC, MS_BEACON_MAGIC, MS_BEACON_MAGIC_BYTES) != 0)
        return MS_ERR_PROTOCOL;
    ms_beacon_t beacon;
    beacon.host[0] = '\0';
    if (n > MS_BEACON_BYTES) {
        size_t len = buf[S_OFF_HOST_LEN];
        if (len < 1 || len > MS_BEACON_HOST_MAX || n != S_OFF_HOST + len)
            return MS_ERR_PROTOCOL;
        for (size_t i = 0; i < len; i++)
            if (!s_host_char(buf[S_OFF_HOST + i]))
                return MS_ERR_PROTOCOL;
        memcpy(beacon.host, buf + S_OFF_HOST, len);
        beacon.host[len] = '\0';
    }
    memcpy(beacon.pool_id, buf + S_OFF_POOL, MS_BEACON_ID_BYTES);
    beacon.protocol_min = s_get_u16(buf + S_OFF_PROTO_MIN);
    beacon.protocol_max = s_get_u16(buf + S_OFF_PROTO_MAX);
    memcpy(beacon.node_id, buf + S_OFF_NODE, MS_BEACON_ID_BYTES);
    beacon.mesh_port = s_get_u16(buf + S_OFF_PORT);
    if (beacon.protocol_min == 0 || beacon.protocol_min > beacon.protocol_max ||
        beacon.mesh_port == 0)
        return MS_ERR_PROTOCOL;
    *out = beacon;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The zbeacon subscription prefix of a pool.

void
ms_beacon_filter(const uint8_t pool_id[MS_BEACON_ID_BYTES],
                 uint8_t out[MS_BEACON_FILTER_BYTES], size_t *n)
{
    assert(pool_id);
    assert(out);
    assert(n);
    memcpy(out + S_OFF_MAGIC, MS_BEACON_MAGIC, MS_BEACON_MAGIC_BYTES);
    memcpy(out + S_OFF_POOL, pool_id, MS_BEACON_ID_BYTES);
    *n = MS_BEACON_FILTER_BYTES;
}

//  --------------------------------------------------------------------------
//  Pool id of an open pool: BLAKE2b-256("open:" NAME).

void
ms_beacon_open_pool_id(const char *name, uint8_t out[MS_BEACON_ID_BYTES])
{
    assert(out);
    if (!name || !*name)
        name = MS_BEACON_OPEN_POOL_DEFAULT;
    ms_hasher_t hasher;
    ms_hash_t h;
    ms_hasher_init(&hasher);
    ms_hasher_update(&hasher, "open:", 5);
    ms_hasher_update(&hasher, name, strlen(name));
    ms_hasher_final(&hasher, &h);
    _Static_assert(MS_HASH_BYTES == MS_BEACON_ID_BYTES, "pool id size");
    memcpy(out, h.bytes, MS_BEACON_ID_BYTES);
}
