/*  =========================================================================
    ms_onnx_fuzz - libFuzzer target: saved networks as `meshsweep predict`
    and the API read them (ms_onnx_decode, ms_weights_meta_decode,
    ms_onnx_encode_weights)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The first input byte picks the reader (even: the bytes as an ONNX
    model; odd: as a native weights file turned into ONNX, and as
    metadata JSON text). Every input must be read or refused with
    MS_ERR_INVALID or MS_ERR_CONFLICT, never crash; a model that is read
    must encode again, and that encoding must read back to the same
    parameters.
*/
#include "ms_onnx.h"
#include "ms_weights_meta.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  --------------------------------------------------------------------------
//  Refusals are the two input codes; anything else (but memory) is a bug.

static void
s_refused_ok(int rc)
{
    if (rc != MS_OK && rc != MS_ERR_INVALID && rc != MS_ERR_CONFLICT &&
        rc != MS_ERR_NOMEM)
        abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    const uint8_t *body = data + 1;
    size_t n = size - 1;
    if (data[0] % 2 == 0) {
        ms_weights_meta_t *meta = NULL;
        ms_weights_t *w = NULL;
        int rc = ms_onnx_decode(body, n, &meta, &w, NULL);
        s_refused_ok(rc);
        if (rc == MS_OK) {
            void *again = NULL;
            size_t n_again = 0;
            if (ms_weights_meta_match(meta, w, NULL) != MS_OK ||
                ms_onnx_encode(meta, w->params, w->n_params, &again, &n_again,
                               NULL) != MS_OK)
                abort();
            ms_weights_meta_t *meta2 = NULL;
            ms_weights_t *w2 = NULL;
            if (ms_onnx_decode(again, n_again, &meta2, &w2, NULL) != MS_OK ||
                w2->n_params != w->n_params ||
                memcmp(w2->params, w->params,
                       (size_t) w->n_params * sizeof(float)) != 0)
                abort();
            ms_weights_meta_destroy(&meta2);
            ms_weights_destroy(&w2);
            free(again);
        }
        ms_weights_meta_destroy(&meta);
        ms_weights_destroy(&w);
        return 0;
    }
    void *model = NULL;
    size_t n_model = 0;
    s_refused_ok(ms_onnx_encode_weights(body, n, &model, &n_model, NULL));
    free(model);
    char *text = malloc(n + 1);
    if (!text)
        return 0;
    memcpy(text, body, n);
    text[n] = '\0';
    ms_weights_meta_t *meta = NULL;
    s_refused_ok(ms_weights_meta_decode(text, &meta, NULL));
    ms_weights_meta_destroy(&meta);
    free(text);
    return 0;
}
