/*  =========================================================================
    ms_beacon_fuzz - libFuzzer target: UDP beacon payloads, through
    ms_beacon_decode

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every input must decode or be refused with MS_ERR_PROTOCOL; a decoded
    beacon (74 bytes, or 75 + an advertised host) must encode back to
    exactly the input bytes (the layout has no slack), and decoding must
    leave *out untouched on refusal.
*/
#include "ms_beacon.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  --------------------------------------------------------------------------
//  One input: decode, and check the exact round trip.

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms_beacon_t beacon, before;
    memset(&beacon, 0x5C, sizeof beacon);
    before = beacon;
    int rc = ms_beacon_decode(data, size, &beacon);
    if (rc == MS_ERR_PROTOCOL) {
        if (memcmp(&beacon, &before, sizeof beacon) != 0)
            abort();
        return 0;
    }
    //  Decoded: 74 bytes, or 75 + the advertised host's length, and it
    //  encodes back to exactly the input.
    if (rc != MS_OK || size > MS_BEACON_MAX_BYTES ||
        (size != MS_BEACON_BYTES &&
         size != MS_BEACON_BYTES + 1 + strlen(beacon.host)))
        abort();
    uint8_t out[MS_BEACON_MAX_BYTES];
    size_t n = ms_beacon_encode_host(&beacon, out);
    if (n != size || memcmp(out, data, size) != 0)
        abort();
    return 0;
}
