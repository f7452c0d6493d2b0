/*  =========================================================================
    ms_spec_text - a spec's text before it is a YAML document: the checks
    that keep a hostile text from costing memory or time, and a stream
    split into its documents

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_spec_text.c for the checks. Every function is pure: any thread,
    no state.
*/
#ifndef MS_SPEC_TEXT_H
#define MS_SPEC_TEXT_H

#include "ms_err.h"

#include <stddef.h>

#include <yaml.h>

//  Check text[0 .. n) before it is loaded as a document: no NUL byte or
//  UTF-16 (MS_ERR_INVALID, where "spec"), YAML syntax as libyaml's event
//  parser reads it (where "line L, column C"), nesting at most
//  MS_SPEC_MAX_DEPTH levels, at most 256 anchors, and the tree its
//  aliases would build within a fixed node budget (where the alias's
//  line and column). Returns MS_OK, MS_ERR_INVALID with diag, or
//  MS_ERR_NOMEM.
int ms_spec_text_check(const char *text, size_t n, ms_diag_t *diag);

//  Report libyaml's error of PARSER (a syntax error with its mark, or out
//  of memory) in diag: MS_ERR_INVALID (where "line L, column C", reason
//  libyaml's problem) or MS_ERR_NOMEM.
int ms_spec_text_yaml_error(const yaml_parser_t *parser, ms_diag_t *diag);

//  One YAML document of a stream (a spec file of several sweeps, "---"
//  between them, as `kubectl apply -f` takes them): bytes text[offset ..
//  offset + length), starting at the beginning of its first line, which
//  is line `line` of the stream. Each range holds exactly one document,
//  with its own "---" / "..." markers and directives, so it can be
//  handed to ms_spec_parse as it is (or as ms_spec_document_text gives
//  it, to keep the stream's line numbers in diagnostics).
typedef struct {
    size_t offset; // first byte, at the start of a line
    size_t length; // bytes, up to the next document's start (or "...")
    size_t number; // 1-based position in the stream
    size_t line;   // 1-based line of the stream at offset
} ms_spec_document_t;

//  Split the YAML stream text[0 .. n) into its documents, found with
//  libyaml's event parser (no tree is built), so a "---" inside a quoted
//  scalar, a block scalar or a comment does not split. JSON text is one
//  document. On success *docs is a new array of *n_docs (1 ..
//  MS_SPEC_MAX_DOCUMENTS) documents in stream order; caller owns it and
//  frees it with free(). On error *docs is NULL and *n_docs 0. Returns
//  MS_OK; MS_ERR_INVALID with diag: a NUL byte or UTF-16 text (where
//  "spec", as ms_spec_parse), a YAML syntax error (where "line L, column
//  C", reason from libyaml, as ms_spec_parse reports it), nesting deeper
//  than MS_SPEC_MAX_DEPTH, more than MS_SPEC_MAX_DOCUMENTS documents, an
//  empty document (only "---", or only comments after it; where the
//  line and column of its start), or no document at all (an empty text
//  or only comments: reason "the spec is empty"); where begins with
//  "document N: " when the error is in the N-th document, N >= 2;
//  MS_ERR_NOMEM. The documents themselves are not checked as specs: parse
//  each with ms_spec_parse. Any thread; no state.
int ms_spec_split_documents(const char *text, size_t n,
                            ms_spec_document_t **docs, size_t *n_docs,
                            ms_diag_t *diag);

//  A copy of document doc of the stream text, preceded by doc->line - 1
//  newlines, so that the lines and columns ms_spec_parse (or a node)
//  names in a diagnostic are the stream's; NUL-terminated, its length in
//  *len (may be NULL). Caller owns the result and frees it with free();
//  NULL when out of memory.
char *ms_spec_document_text(const char *text, const ms_spec_document_t *doc,
                            size_t *len);

#endif
