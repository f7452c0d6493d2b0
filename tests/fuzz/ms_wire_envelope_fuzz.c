/*  =========================================================================
    ms_wire_envelope_fuzz - libFuzzer target: frames from peers, through
    ms_wire_decode_envelope

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every input must decode or be refused with MS_ERR_PROTOCOL, never
    crash. A decoded envelope must encode again (the decoder only hands
    out structs the encoder accepts), and that encoding must decode to an
    envelope that encodes to the same bytes (a fixed point).
*/
#include "ms_wire.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  --------------------------------------------------------------------------
//  One input: decode, and check the round-trip properties.

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms_wire_envelope_t *env = NULL;
    int rc = ms_wire_decode_envelope(data, size, &env);
    if (rc != MS_OK) {
        if (rc != MS_ERR_PROTOCOL || env)
            abort();
        return 0;
    }
    uint8_t *once = NULL, *twice = NULL;
    size_t n_once = 0, n_twice = 0;
    if (ms_wire_encode_envelope(env, &once, &n_once) != MS_OK)
        abort();
    ms_wire_envelope_t *again = NULL;
    if (ms_wire_decode_envelope(once, n_once, &again) != MS_OK)
        abort();
    if (ms_wire_encode_envelope(again, &twice, &n_twice) != MS_OK)
        abort();
    if (n_once != n_twice || memcmp(once, twice, n_once) != 0)
        abort();
    if (again->body != env->body || again->protocol != env->protocol)
        abort();
    free(once);
    free(twice);
    ms_wire_envelope_destroy(&again);
    ms_wire_envelope_destroy(&env);
    return 0;
}
