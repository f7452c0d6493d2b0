/*  =========================================================================
    ms_spec_fuzz - libFuzzer target: sweep specs (YAML/JSON) as a user or a
    peer may send them

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Any byte string must either parse into a spec or be refused with a
    diagnostic, and either split into YAML documents (each parsed in
    turn) or be refused; never crash, leak or read out of bounds. Run with:
        build-fuzz/tests/fuzz/ms_spec_fuzz -max_total_time=30
*/
#include "ms_spec.h"

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

//  Documents of one input parsed on their own (each parse costs about
//  what the whole text does).
#define S_FUZZ_DOCUMENTS 4

//  --------------------------------------------------------------------------
//  Split the input into documents: the ranges lie in order inside it, a
//  text that parses whole is one document, one of several does not
//  parse whole; the first few documents must parse or be refused.

static void
s_split(const uint8_t *data, size_t size, bool parsed_whole,
        const ms_spec_options_t *opts)
{
    const char *text = (const char *) data;
    ms_spec_document_t *docs = NULL;
    size_t n_docs = 0;
    ms_diag_t diag;
    int rc = ms_spec_split_documents(text, size, &docs, &n_docs, &diag);
    if (rc != MS_OK) {
        assert(!docs && n_docs == 0 && diag.reason[0] && !parsed_whole);
        return;
    }
    assert(n_docs >= 1 && n_docs <= MS_SPEC_MAX_DOCUMENTS);
    assert(!parsed_whole || n_docs == 1);
    size_t end = 0;
    for (size_t i = 0; i < n_docs; i++) {
        assert(docs[i].number == i + 1 && docs[i].offset >= end);
        end = docs[i].offset + docs[i].length;
        assert(end <= size);
        if (i >= S_FUZZ_DOCUMENTS)
            continue;
        size_t len = 0;
        char *one = ms_spec_document_text(text, &docs[i], &len);
        ms_spec_t *spec = NULL;
        if (one && ms_spec_parse(one, len, opts, &spec, &diag) == MS_OK)
            ms_spec_destroy(&spec);
        free(one);
    }
    free(docs);
}

//  --------------------------------------------------------------------------
//  One input: parse; when it parses, the canonical text must load back;
//  then split it into documents.

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
        if (ms_spec_program(spec)) {
            //  A program sweep's ids wait for its blob: give it one.
            ms_hash_t blob;
            memset(&blob, 0x5a, sizeof blob);
            assert(ms_spec_set_program_blob(spec, &blob) == MS_OK);
        }
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
    s_split(data, size, rc == MS_OK, &opts);
    return 0;
}
