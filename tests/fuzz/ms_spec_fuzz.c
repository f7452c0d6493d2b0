/*  =========================================================================
    ms_spec_fuzz - libFuzzer target: sweep specs (YAML/JSON) as a user or a
    peer may send them

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Any byte string must either parse into a spec or be refused with a
    diagnostic; never crash, leak or read out of bounds. Run with:
        build-fuzz/tests/fuzz/ms_spec_fuzz -max_total_time=30
*/
#include "ms_spec.h"

#include <assert.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  --------------------------------------------------------------------------
//  One input: parse; when it parses, the canonical text must load back.

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ms_spec_options_t opts;
    ms_spec_options_defaults(&opts);
    opts.max_tasks = 4096; // keep each input cheap
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    int rc = ms_spec_parse((const char *) data, size, &opts, &spec, &diag);
    if (rc == MS_OK) {
        assert(spec);
        size_t canon_len = 0;
        const char *canon = ms_spec_canonical(spec, &canon_len);
        if (canon) {
            ms_spec_t *again = NULL;
            rc = ms_spec_load_canonical(canon, canon_len, &again, &diag);
            assert(rc == MS_OK);
            ms_spec_destroy(&again);
        }
        ms_spec_destroy(&spec);
    } else
        assert(spec == NULL && diag.reason[0]);
    return 0;
}
