/*  =========================================================================
    ms_canonical_fuzz - libFuzzer target: stored canonical sweeps and
    canonical task configs, as read back from a store or from a peer

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The input goes to ms_spec_load_canonical (a stored sweep) and, when it
    is a JSON object, to ms_config_decode_json (one task's config). Both
    must refuse anything malformed with a diagnostic and never crash.
*/
#include "ms_config_json.h"
#include "ms_spec.h"
#include "ms_wire_canon.h"

#include <assert.h>
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  --------------------------------------------------------------------------
//  One input through both decoders.

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms_diag_t diag;
    ms_spec_t *spec = NULL;
    if (ms_spec_load_canonical((const char *) data, size, &spec, &diag) ==
        MS_OK)
        ms_spec_destroy(&spec);

    json_t *obj = json_loadb((const char *) data, size, 0, NULL);
    if (json_is_object(obj)) {
        ms_train_config_t *cfg = malloc(sizeof *cfg);
        if (cfg && ms_config_decode_json(obj, cfg, &diag) == MS_OK) {
            // A decoded config encodes to canonical bytes that decode to
            // the same canonical bytes.
            json_t *enc = ms_config_encode_json(cfg);
            char *a = ms_wire_canon_dump(enc);
            assert(a);
            json_t *back = json_loads(a, 0, NULL);
            assert(back && ms_config_decode_json(back, cfg, &diag) == MS_OK);
            json_t *enc2 = ms_config_encode_json(cfg);
            char *b = ms_wire_canon_dump(enc2);
            assert(b && strcmp(a, b) == 0);
            free(a);
            free(b);
            json_decref(enc);
            json_decref(enc2);
            json_decref(back);
        }
        free(cfg);
    }
    json_decref(obj);
    return 0;
}
