/*  =========================================================================
    ms_wire_payload_fuzz - libFuzzer target: record payloads, through the
    ms_wire_decode_<kind> codecs

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The first input byte picks the codec (modulo 12: 0 sweep, 1
    sweep-control, 2 dataset, 3 claim, 4 release, 5 result, 6 failure,
    7 sweep over 64 KiB, 8 result over 64 KiB, 9 fragment, 10 commit,
    11 re-evaluation); the rest
   is the payload. Every input must decode or be refused with MS_ERR_PROTOCOL,
   never crash; a decoded payload must encode again (the decoder only hands out
   structs the encoder accepts) and that encoding must decode again.
*/
#include "ms_wire.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  --------------------------------------------------------------------------
//  True when a decoder said MS_OK, false for MS_ERR_PROTOCOL; any other
//  code is a bug.

static int
s_decoded(int rc)
{
    if (rc != MS_OK && rc != MS_ERR_PROTOCOL)
        abort();
    return rc == MS_OK;
}

//  --------------------------------------------------------------------------
//  An encoder must have said MS_OK with a buffer.

static void
s_must_encode(int rc, const uint8_t *buf)
{
    if (rc != MS_OK || !buf)
        abort();
}

//  --------------------------------------------------------------------------
//  One input through the codec its first byte picks.

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    uint8_t *buf = NULL;
    size_t nb = 0;
    switch (data[0] % 12) {
    case 0: {
        ms_wire_sweep_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_sweep(p, n, &x))) {
            s_must_encode(ms_wire_encode_sweep(x, &buf, &nb), buf);
            if (ms_wire_decode_sweep(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_sweep_destroy(&x);
        ms_wire_sweep_destroy(&y);
        break;
    }
    case 1: {
        ms_wire_sweep_control_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_sweep_control(p, n, &x))) {
            s_must_encode(ms_wire_encode_sweep_control(x, &buf, &nb), buf);
            if (ms_wire_decode_sweep_control(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_sweep_control_destroy(&x);
        ms_wire_sweep_control_destroy(&y);
        break;
    }
    case 2: {
        ms_wire_dataset_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_dataset(p, n, &x))) {
            s_must_encode(ms_wire_encode_dataset(x, &buf, &nb), buf);
            if (ms_wire_decode_dataset(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_dataset_destroy(&x);
        ms_wire_dataset_destroy(&y);
        break;
    }
    case 3: {
        ms_wire_claim_t x, y;
        if (s_decoded(ms_wire_decode_claim(p, n, &x))) {
            s_must_encode(ms_wire_encode_claim(&x, &buf, &nb), buf);
            if (ms_wire_decode_claim(buf, nb, &y) != MS_OK ||
                y.slot != x.slot || y.epoch != x.epoch)
                abort();
        }
        break;
    }
    case 4: {
        ms_wire_release_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_release(p, n, &x))) {
            s_must_encode(ms_wire_encode_release(x, &buf, &nb), buf);
            if (ms_wire_decode_release(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_release_destroy(&x);
        ms_wire_release_destroy(&y);
        break;
    }
    case 5: {
        ms_wire_result_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_result(p, n, &x))) {
            s_must_encode(ms_wire_encode_result(x, &buf, &nb), buf);
            if (ms_wire_decode_result(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_result_destroy(&x);
        ms_wire_result_destroy(&y);
        break;
    }
    case 10: {
        ms_wire_commit_t x, y;
        if (s_decoded(ms_wire_decode_commit(p, n, &x))) {
            s_must_encode(ms_wire_encode_commit(&x, &buf, &nb), buf);
            if (ms_wire_decode_commit(buf, nb, &y) != MS_OK ||
                y.slot != x.slot || y.epoch != x.epoch ||
                memcmp(y.commitment, x.commitment, sizeof x.commitment) ||
                memcmp(y.task_id, x.task_id, sizeof x.task_id))
                abort();
        }
        break;
    }
    case 11: {
        ms_wire_reevaluation_t x, y;
        if (s_decoded(ms_wire_decode_reevaluation(p, n, &x))) {
            s_must_encode(ms_wire_encode_reevaluation(&x, &buf, &nb), buf);
            if (ms_wire_decode_reevaluation(buf, nb, &y) != MS_OK ||
                y.status != x.status || strcmp(y.reason, x.reason) ||
                memcmp(y.target, x.target, sizeof x.target) ||
                memcmp(&y.test_accuracy, &x.test_accuracy, 8))
                abort();
        }
        break;
    }
    case 7: {
        ms_wire_sweep_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_sweep_big(p, n, &x))) {
            s_must_encode(ms_wire_encode_sweep_big(x, &buf, &nb), buf);
            if (ms_wire_decode_sweep_big(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_sweep_destroy(&x);
        ms_wire_sweep_destroy(&y);
        break;
    }
    case 8: {
        ms_wire_result_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_result_big(p, n, &x))) {
            s_must_encode(ms_wire_encode_result_big(x, &buf, &nb), buf);
            if (ms_wire_decode_result_big(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_result_destroy(&x);
        ms_wire_result_destroy(&y);
        break;
    }
    case 9: {
        ms_wire_fragment_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_fragment(p, n, &x))) {
            s_must_encode(ms_wire_encode_fragment(x, &buf, &nb), buf);
            if (ms_wire_decode_fragment(buf, nb, &y) != MS_OK ||
                y->offset != x->offset || y->data_len != x->data_len)
                abort();
        }
        ms_wire_fragment_destroy(&x);
        ms_wire_fragment_destroy(&y);
        break;
    }
    default: {
        ms_wire_failure_t *x = NULL, *y = NULL;
        if (s_decoded(ms_wire_decode_failure(p, n, &x))) {
            s_must_encode(ms_wire_encode_failure(x, &buf, &nb), buf);
            if (ms_wire_decode_failure(buf, nb, &y) != MS_OK)
                abort();
        }
        ms_wire_failure_destroy(&x);
        ms_wire_failure_destroy(&y);
        break;
    }
    }
    free(buf);
    return 0;
}
