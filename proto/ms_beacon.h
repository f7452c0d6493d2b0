/*  =========================================================================
    ms_beacon - the UDP discovery beacon payload (fixed layout)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Discovery and links": every node broadcasts with czmq's
    zbeacon (UDP 5870) a payload that names its pool, the protocol
    versions it speaks, its node id and its mesh port. Receivers subscribe
    on magic + pool id (ms_beacon_filter), so beacons of other pools and
    other programs are dropped by zbeacon itself. A beacon is only a hint:
    the HELLO on the mesh link decides.

    Layout (not protobuf: fixed, so that the filter is a byte prefix),
    integers big-endian, MS_BEACON_BYTES = 74 bytes (zbeacon allows 255;
    the issue brief said 72, but its own fields add up to 74):

        offset  size  field
             0     4  magic "MSW1"
             4    32  pool_id
            36     2  protocol_min
            38     2  protocol_max
            40    32  node_id (Ed25519 public key)
            72     2  mesh_port
            74     1  host length L (1..MS_BEACON_HOST_MAX), optional
            75     L  advertised host (--advertise), optional

    The advertised host (DESIGN.md: --advertise HOST[:PORT], for NAT and
    clusters) is the only optional part: a node that advertises nothing
    sends the 74 bytes every version reads, so a pool upgrades one machine
    at a time; a beacon with a host is 75 + L bytes, and versions before
    it drop it (they read exactly 74), which only a node that advertises
    pays for. A receiver dials the advertised host when there is one,
    else the beacon's source address, always at mesh_port.

    Open pools (--open-pool[=NAME], the only mode until the trust issue):
    pool_id = BLAKE2b-256("open:" NAME), computed here with crypto/ms_hash
    (ms_proto links ms_crypto for it).
*/
#ifndef MS_BEACON_H
#define MS_BEACON_H

#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_BEACON_MAGIC "MSW1" // 4 bytes, no NUL on the wire
#define MS_BEACON_MAGIC_BYTES 4
#define MS_BEACON_ID_BYTES 32  // pool id, node id
#define MS_BEACON_BYTES 74     // payload without a host
#define MS_BEACON_HOST_MAX 180 // advertised host, bytes
#define MS_BEACON_MAX_BYTES (MS_BEACON_BYTES + 1 + MS_BEACON_HOST_MAX)
#define MS_BEACON_FILTER_BYTES 36             // magic + pool id
#define MS_BEACON_OPEN_POOL_DEFAULT "default" // --open-pool without NAME

//  A decoded beacon: a plain value.
typedef struct {
    uint8_t pool_id[MS_BEACON_ID_BYTES];
    uint16_t protocol_min; // versions the sender speaks
    uint16_t protocol_max;
    uint8_t node_id[MS_BEACON_ID_BYTES];
    uint16_t mesh_port;                // sender's mesh (ROUTER) TCP port
    char host[MS_BEACON_HOST_MAX + 1]; // advertised host; "" = none (dial
                                       // the beacon's source address)
} ms_beacon_t;

//  Write beacon into out (exactly MS_BEACON_BYTES bytes, host left out).
//  Cannot fail; beacon fields are taken as they are (callers build them
//  from their own config).
void ms_beacon_encode(const ms_beacon_t *beacon, uint8_t out[MS_BEACON_BYTES]);

//  The same with beacon->host when it is not empty: returns the bytes
//  written (MS_BEACON_BYTES without a host, 75 + its length with one). A
//  host longer than MS_BEACON_HOST_MAX is a programmer error (assert).
size_t ms_beacon_encode_host(const ms_beacon_t *beacon,
                             uint8_t out[MS_BEACON_MAX_BYTES]);

//  Read a received payload of n bytes (buf may be NULL when n is 0).
//  Returns MS_OK; MS_ERR_PROTOCOL when n is neither MS_BEACON_BYTES nor
//  75 + the host length byte (1..MS_BEACON_HOST_MAX), the host has a
//  byte that no host name or address has, the magic differs, protocol_min is 0
//  or above protocol_max, or mesh_port is 0
//  (*out unchanged then). The pool id is not checked here: compare it
//  with your own (zbeacon's filter already did).
int ms_beacon_decode(const uint8_t *buf, size_t n, ms_beacon_t *out);

//  The zbeacon SUBSCRIBE filter for a pool: magic + pool_id into out,
//  *n set to MS_BEACON_FILTER_BYTES.
void ms_beacon_filter(const uint8_t pool_id[MS_BEACON_ID_BYTES],
                      uint8_t out[MS_BEACON_FILTER_BYTES], size_t *n);

//  Pool id of an open pool: BLAKE2b-256 of "open:" followed by name
//  (NULL or "" mean MS_BEACON_OPEN_POOL_DEFAULT). Cannot fail.
void ms_beacon_open_pool_id(const char *name, uint8_t out[MS_BEACON_ID_BYTES]);

#endif
