/*  =========================================================================
    ms_beacon_fuzz - libFuzzer target: UDP beacon payloads, through
    ms_beacon_decode

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every input must decode or be refused with MS_ERR_PROTOCOL; a decoded
    beacon must encode back to exactly the input bytes (the layout has no
    slack), and decoding must leave *out untouched on refusal.
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
    if (rc != MS_OK || size != MS_BEACON_BYTES)
        abort();
    uint8_t out[MS_BEACON_BYTES];
    ms_beacon_encode(&beacon, out);
    if (memcmp(out, data, MS_BEACON_BYTES) != 0)
        abort();
    return 0;
}
