/*  =========================================================================
    ms_spec_text - a spec's text before it is a YAML document: the checks
    that keep a hostile text from costing memory or time, and a stream
    split into its documents

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    libyaml's document loader builds the whole tree, and expands aliases by
    reference, so a small text can name a huge tree (the "billion laughs"
    pattern) or nest deep enough to exhaust a recursive walk. Before
    ms_spec_parse loads a document, ms_spec_text_check walks libyaml's
    event stream once (no tree): NUL bytes and UTF-16 are refused, nesting
    is capped at MS_SPEC_MAX_DEPTH, and each anchor's node weight is
    counted so aliases cannot multiply the tree past a fixed budget.
    ms_spec_split_documents walks the same events to find the documents of
    a stream, so "---" inside a scalar or a comment never splits.
*/
#include "ms_spec_text.h"

#include "ms_spec.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_ANCHORS 256 // distinct anchors in one spec

//  --------------------------------------------------------------------------
//  Report libyaml's error (a syntax error, or out of memory) in diag.

int
ms_spec_text_yaml_error(const yaml_parser_t *parser, ms_diag_t *diag)
{
    int rc =
        ms_diag_set(diag, "", "%s",
                    parser->problem ? parser->problem : "cannot parse YAML");
    if (diag)
        snprintf(diag->where, sizeof diag->where, "line %zu, column %zu",
                 parser->problem_mark.line + 1,
                 parser->problem_mark.column + 1);
    if (diag && parser->context)
        snprintf(diag->reason + strlen(diag->reason),
                 sizeof diag->reason - strlen(diag->reason), " (%s)",
                 parser->context);
    return parser->error == YAML_MEMORY_ERROR ? MS_ERR_NOMEM : rc;
}

//  --------------------------------------------------------------------------
//  Refuse at mark with where "line L, column C".

static int s_mark_fail(ms_diag_t *diag, const yaml_mark_t *mark,
                       const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
s_mark_fail(ms_diag_t *diag, const yaml_mark_t *mark, const char *fmt, ...)
{
    char where[64];
    char reason[MS_DIAG_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    snprintf(where, sizeof where, "line %zu, column %zu", mark->line + 1,
             mark->column + 1);
    return ms_diag_set(diag, where, "%s", reason);
}

//  --------------------------------------------------------------------------
//  Refuse a collection at mark that opens level MS_SPEC_MAX_DEPTH + 1.

static int
s_depth_fail(ms_diag_t *diag, const yaml_mark_t *mark)
{
    return s_mark_fail(diag, mark,
                       "nested deeper than %d levels (the most a spec may "
                       "nest)",
                       MS_SPEC_MAX_DEPTH);
}

//  --------------------------------------------------------------------------
//  Refuse a text with a NUL byte, naming its line: libyaml would stop
//  there, and the rest of the spec would be lost silently.

static int
s_nul_check(const char *text, size_t n, ms_diag_t *diag)
{
    const char *nul = memchr(text, '\0', n);
    if (!nul)
        return MS_OK;
    size_t line = 1;
    for (const char *c = text; c < nul; c++)
        line += *c == '\n';
    return ms_diag_set(diag, "spec",
                       "line %zu: a NUL byte (byte %zu): a spec is YAML text",
                       line, (size_t) (nul - text) + 1);
}

//  One anchor seen by s_prescan: its name and the weight of its node.
typedef struct {
    char *name;    // the anchor (malloc'd)
    size_t weight; // nodes + scalar bytes under it; 0 while still open
} s_anchor_t;

//  --------------------------------------------------------------------------
//  Walk the first document's events (libyaml's parser, no tree) and
//  refuse, before anything is built, what would cost far more than the
//  text's size: nesting deeper than MS_SPEC_MAX_DEPTH (libyaml's scanner
//  costs O(depth) per token, so 100,000 '[' took 45 s before this check;
//  events are produced lazily, so the walk stops after about 1 KiB past
//  the 65th level), and aliases whose expansion ("billion laughs": each
//  alias is copied wherever the tree is turned into values) would weigh
//  more than MS_SPEC_MAX_EXPANDED nodes plus scalar bytes, or that refer
//  to the node they sit in. A syntax error is reported as
//  yaml_parser_load would report it.

static int
s_prescan(const char *text, size_t n, ms_diag_t *diag)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return MS_ERR_NOMEM;
    yaml_parser_set_input_string(&parser, (const unsigned char *) text, n);
    s_anchor_t anchors[S_MAX_ANCHORS];
    size_t n_anchors = 0;
    //  Per open collection: its anchor (index, or -1) and the weight when
    //  it opened.
    int open_anchor[MS_SPEC_MAX_DEPTH + 1];
    size_t open_weight[MS_SPEC_MAX_DEPTH + 1];
    int depth = 0;
    size_t weight = 0;
    int rc = MS_OK;
    bool end = false;
    bool ended_one = false; // a document has ended: no second may start
    while (rc == MS_OK && !end) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = ms_spec_text_yaml_error(&parser, diag);
            break;
        }
        const yaml_char_t *anchor = NULL;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            if (ended_one)
                rc = s_mark_fail(diag, &ev.start_mark,
                                 "a second YAML document: a spec is one "
                                 "sweep (meshsweep submit and meshsweep "
                                 "run take a file of several documents, "
                                 "one sweep each)");
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            anchor = ev.type == YAML_SEQUENCE_START_EVENT
                         ? ev.data.sequence_start.anchor
                         : ev.data.mapping_start.anchor;
            if (depth == MS_SPEC_MAX_DEPTH) {
                rc = s_depth_fail(diag, &ev.start_mark);
                break;
            }
            open_anchor[depth] = -1;
            open_weight[depth] = weight;
            weight++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) {
                depth--;
                if (open_anchor[depth] >= 0)
                    anchors[open_anchor[depth]].weight =
                        weight - open_weight[depth];
            }
            break;
        case YAML_SCALAR_EVENT:
            anchor = ev.data.scalar.anchor;
            weight += 1 + ev.data.scalar.length;
            break;
        case YAML_ALIAS_EVENT: {
            const char *name = (const char *) ev.data.alias.anchor;
            size_t i = 0;
            while (i < n_anchors && strcmp(anchors[i].name, name) != 0)
                i++;
            if (i == n_anchors) // yaml_parser_load says "found undefined alias"
                break;
            if (anchors[i].weight == 0) {
                rc = s_mark_fail(diag, &ev.start_mark,
                                 "alias *%.64s refers to a node that "
                                 "contains it",
                                 name);
                break;
            }
            weight += anchors[i].weight;
            break;
        }
        case YAML_DOCUMENT_END_EVENT: // yaml_parser_load reads one document
            ended_one = true;
            break;
        case YAML_STREAM_END_EVENT:
            end = true;
            break;
        default:
            break;
        }
        if (rc == MS_OK && anchor) {
            size_t i = 0;
            while (i < n_anchors &&
                   strcmp(anchors[i].name, (const char *) anchor) != 0)
                i++;
            if (i == n_anchors && n_anchors == S_MAX_ANCHORS)
                rc = s_mark_fail(diag, &ev.start_mark,
                                 "more than %d anchors (&name)", S_MAX_ANCHORS);
            else if (i == n_anchors && !(anchors[n_anchors++].name =
                                             strdup((const char *) anchor))) {
                n_anchors--;
                rc = MS_ERR_NOMEM;
            }
            if (rc == MS_OK) {
                // A redefined anchor: later aliases mean the new node.
                anchors[i].weight = 0;
                if (ev.type == YAML_SCALAR_EVENT)
                    anchors[i].weight = 1 + ev.data.scalar.length;
                else
                    open_anchor[depth] = (int) i;
            }
        }
        if (rc == MS_OK && (ev.type == YAML_SEQUENCE_START_EVENT ||
                            ev.type == YAML_MAPPING_START_EVENT))
            depth++;
        if (rc == MS_OK && weight > MS_SPEC_MAX_EXPANDED + n)
            rc = s_mark_fail(diag, &ev.start_mark,
                             "aliases (*name) expand the spec to more than "
                             "%d nodes and bytes",
                             MS_SPEC_MAX_EXPANDED);
        yaml_event_delete(&ev);
    }
    for (size_t i = 0; i < n_anchors; i++)
        free(anchors[i].name);
    yaml_parser_delete(&parser);
    return rc;
}

//  --------------------------------------------------------------------------
//  Byte offsets of libyaml's marks. A mark's index counts characters, not
//  bytes, and starts after a UTF-8 byte order mark; marks only move
//  forward, so one walk over the text serves a whole stream. libyaml has
//  checked the UTF-8 by the time a mark reaches us, so counting the bytes
//  that do not continue a sequence counts its characters.

typedef struct {
    const char *text; // the stream (borrowed)
    size_t n;         // its length in bytes
    size_t chars;     // characters before byte offset `bytes`
    size_t bytes;     // byte offset of character number `chars`
} s_utf8_cursor_t;

static size_t
s_utf8_offset(s_utf8_cursor_t *cur, size_t chars)
{
    while (cur->chars < chars && cur->bytes < cur->n) {
        cur->bytes++;
        while (cur->bytes < cur->n &&
               ((unsigned char) cur->text[cur->bytes] & 0xC0) == 0x80)
            cur->bytes++;
        cur->chars++;
    }
    return cur->bytes;
}

//  --------------------------------------------------------------------------
//  Put "document N: " before diag's where, for an error found in the
//  N-th document of a stream (N >= 2: a lone document is not numbered).

static void
s_diag_document(ms_diag_t *diag, size_t number)
{
    if (!diag || number < 2)
        return;
    char where[MS_DIAG_WHERE_MAX + 32];
    snprintf(where, sizeof where, "document %zu%s%s", number,
             diag->where[0] ? ": " : "", diag->where);
    size_t len = strnlen(where, sizeof diag->where - 1);
    memcpy(diag->where, where, len);
    diag->where[len] = '\0';
}

//  --------------------------------------------------------------------------
//  Split a YAML stream into its documents (the events of libyaml's
//  parser, no tree).

int
ms_spec_split_documents(const char *text, size_t n, ms_spec_document_t **docs,
                        size_t *n_docs, ms_diag_t *diag)
{
    *docs = NULL;
    *n_docs = 0;
    ms_diag_clear(diag);
    int rc = s_nul_check(text, n, diag);
    if (rc != MS_OK)
        return rc;
    const unsigned char *u = (const unsigned char *) text;
    if (n >= 2 &&
        ((u[0] == 0xFE && u[1] == 0xFF) || (u[0] == 0xFF && u[1] == 0xFE)))
        return ms_diag_set(diag, "spec", "UTF-16 text: a spec is UTF-8");
    size_t bom = n >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF ? 3 : 0;
    ms_spec_document_t *list = calloc(MS_SPEC_MAX_DOCUMENTS, sizeof *list);
    yaml_parser_t parser;
    if (!list || !yaml_parser_initialize(&parser)) {
        free(list);
        return MS_ERR_NOMEM;
    }
    yaml_parser_set_input_string(&parser, u, n);
    s_utf8_cursor_t cur = {text, n, 0, bom};
    size_t count = 0;              // documents started
    size_t current = 1;            // the number of the document being read
    size_t end_chars = 0;          // character index where the last one ended
    yaml_mark_t start = {0, 0, 0}; // where the current document starts
    int depth = 0;
    bool at_root = false; // the next event is a document's root node
    bool end = false;
    while (rc == MS_OK && !end) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = ms_spec_text_yaml_error(&parser, diag);
            break;
        }
        bool root = at_root;
        at_root = false;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT: {
            current = count + 1;
            if (count == MS_SPEC_MAX_DOCUMENTS) {
                rc = s_mark_fail(diag, &ev.start_mark,
                                 "more than %d YAML documents in one file "
                                 "(one sweep each)",
                                 MS_SPEC_MAX_DOCUMENTS);
                break;
            }
            //  From the start of the mark's line, so that columns stay
            //  the stream's; what precedes the mark there is white space
            //  (a document after the first starts at column 1 anyway).
            size_t column = ev.start_mark.column <= ev.start_mark.index
                                ? ev.start_mark.column
                                : ev.start_mark.index;
            size_t from = ev.start_mark.index - column;
            if (from < end_chars)
                from = end_chars;
            list[count].offset = s_utf8_offset(&cur, from);
            list[count].length = 0;
            list[count].number = count + 1;
            list[count].line = ev.start_mark.line + 1;
            count++;
            start = ev.start_mark;
            at_root = true;
            break;
        }
        case YAML_DOCUMENT_END_EVENT:
            //  An implicit end is marked where the next token starts
            //  (the next "---", or the stream's end), an explicit one
            //  after its "...".
            end_chars = ev.end_mark.index;
            list[count - 1].length =
                s_utf8_offset(&cur, end_chars) - list[count - 1].offset;
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            //  libyaml's scanner costs O(depth) per token: the limit of
            //  s_prescan holds here too, or a hostile text would take
            //  minutes before any document is parsed.
            if (depth == MS_SPEC_MAX_DEPTH)
                rc = s_depth_fail(diag, &ev.start_mark);
            depth++;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_SCALAR_EVENT:
            if (root && ev.data.scalar.length == 0 && !ev.data.scalar.tag &&
                !ev.data.scalar.anchor &&
                ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
                rc = s_mark_fail(diag, &start,
                                 "an empty YAML document (each document is "
                                 "one sweep: a '---' with nothing after "
                                 "it?)");
            break;
        case YAML_STREAM_END_EVENT:
            end = true;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (rc == MS_OK && count == 0)
        rc = ms_diag_set(diag, "", "the spec is empty");
    if (rc != MS_OK) {
        s_diag_document(diag, current);
        free(list);
        return rc;
    }
    *docs = list;
    *n_docs = count;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  One document's text, with the lines before it as blank lines.

char *
ms_spec_document_text(const char *text, const ms_spec_document_t *doc,
                      size_t *len)
{
    size_t pad = doc->line > 0 ? doc->line - 1 : 0;
    char *out = malloc(pad + doc->length + 1);
    if (!out)
        return NULL;
    memset(out, '\n', pad);
    memcpy(out + pad, text + doc->offset, doc->length);
    out[pad + doc->length] = '\0';
    if (len)
        *len = pad + doc->length;
    return out;
}

//  --------------------------------------------------------------------------
//  The checks before a document is built.

int
ms_spec_text_check(const char *text, size_t n, ms_diag_t *diag)
{
    int rc = s_nul_check(text, n, diag);
    return rc == MS_OK ? s_prescan(text, n, diag) : rc;
}
