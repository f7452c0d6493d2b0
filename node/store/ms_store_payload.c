/*  =========================================================================
    ms_store_payload - record payloads as plain C values (encode, decode)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A thin map between the store's payload values and the wire payloads of
    proto/ms_wire.h (see the header for what each kind maps). Every decoder
    of ms_wire checks its fields against the wire contract; this class adds
    what the store needs on top: a sweep's spec must be canonical and hash
    to its sweep id (the task list and ids come from it), a result row must
    be a JSON object. A decoded value keeps the wire struct (and for a
    sweep the rebuilt spec) alive, so its strings are borrowed from them.
*/
#include "ms_store_payload.h"

#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_wire_canon.h"
#include "ms_wire.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

// A decoded payload and what its pointers point into.
typedef struct {
    ms_store_payload_t p;         // first: the public value
    void *wire;                   // the decoded ms_wire_* struct
    ms_spec_t *spec;              // sweep: the spec rebuilt from its text
    ms_store_task_input_t *tasks; // sweep: task inputs (into spec)
} s_decoded_t;

// Release reason texts, by ms_release_reason_t.
static const char *s_reasons[] = {"done", "shutdown", "outranked", "failed",
                                  "paused"};
#define S_N_REASONS (sizeof s_reasons / sizeof s_reasons[0])

//  --------------------------------------------------------------------------
//  Map a wire status to ours (MS_ERR_PROTOCOL -> MS_ERR_INVALID).

static int
s_wire_rc(int rc)
{
    return rc == MS_ERR_PROTOCOL ? MS_ERR_INVALID : rc;
}

//  --------------------------------------------------------------------------
//  An epoch for the wire (which refuses 0).

static uint32_t
s_epoch(uint64_t epoch)
{
    return epoch == 0 ? 1 : (uint32_t) epoch;
}

//  --------------------------------------------------------------------------
//  Encode a sweep.

static int
s_encode_sweep(const ms_store_payload_t *p, uint8_t **out, size_t *len)
{
    if (!p->u.sweep.spec_json || p->u.sweep.spec_len == 0)
        return MS_ERR_INVALID;
    char *spec = malloc(p->u.sweep.spec_len + 1); // the wire wants a C string
    if (!spec)
        return MS_ERR_NOMEM;
    memcpy(spec, p->u.sweep.spec_json, p->u.sweep.spec_len);
    spec[p->u.sweep.spec_len] = 0;
    ms_wire_sweep_t w = {.spec = spec, .priority = p->u.sweep.priority};
    memcpy(w.sweep_id, p->u.sweep.sweep_id, MS_WIRE_ID_BYTES);
    int rc = ms_wire_encode_sweep_big(&w, out, len);
    free(spec);
    return rc;
}

//  --------------------------------------------------------------------------
//  Encode a payload.

int
ms_store_payload_encode(const ms_store_payload_t *p, uint8_t **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    int rc;
    switch (p->kind) {
    case MS_RECORD_SWEEP:
        rc = s_encode_sweep(p, out, len);
        break;
    case MS_RECORD_SWEEP_CONTROL: {
        ms_wire_sweep_control_t w = {
            .action = (ms_wire_sweep_action_t) p->u.control.action,
            .priority = p->u.control.priority,
            .lamport = p->u.control.lamport};
        memcpy(w.sweep_id, p->u.control.sweep_id, MS_WIRE_ID_BYTES);
        rc = ms_wire_encode_sweep_control(&w, out, len);
        break;
    }
    case MS_RECORD_DATASET: {
        ms_wire_dataset_file_t file = {.role = "data"};
        memcpy(file.hash, p->u.dataset.hash, MS_WIRE_ID_BYTES);
        ms_wire_dataset_t w = {.files = &file, .n_files = 1};
        if (p->u.dataset.n_files > 0) {
            if (!p->u.dataset.files)
                return MS_ERR_INVALID;
            // The wire struct is only read by the encoder.
            w.files = (ms_wire_dataset_file_t *) p->u.dataset.files;
            w.n_files = p->u.dataset.n_files;
            w.has_hash = true;
            memcpy(w.hash, p->u.dataset.hash, MS_WIRE_ID_BYTES);
        }
        const char *name = p->u.dataset.name ? p->u.dataset.name : "";
        if (strlen(name) > MS_WIRE_NAME_MAX)
            return MS_ERR_INVALID;
        strcpy(w.name, name);
        rc = ms_wire_encode_dataset(&w, out, len);
        break;
    }
    case MS_RECORD_CLAIM: {
        if (p->u.claim.epoch > UINT32_MAX)
            return MS_ERR_INVALID;
        ms_wire_claim_t w = {.slot = p->u.claim.slot,
                             .epoch = s_epoch(p->u.claim.epoch)};
        memcpy(w.task_id, p->u.claim.task_id, MS_WIRE_ID_BYTES);
        rc = ms_wire_encode_claim(&w, out, len);
        break;
    }
    case MS_RECORD_COMMIT: {
        ms_wire_commit_t w = {.slot = p->u.commit.slot,
                              .epoch = s_epoch(p->u.commit.epoch)};
        memcpy(w.task_id, p->u.commit.task_id, MS_WIRE_ID_BYTES);
        memcpy(w.commitment, p->u.commit.commitment, MS_WIRE_ID_BYTES);
        rc = ms_wire_encode_commit(&w, out, len);
        break;
    }
    case MS_RECORD_RELEASE: {
        if (p->u.claim.epoch > UINT32_MAX || p->u.claim.reason >= S_N_REASONS)
            return MS_ERR_INVALID;
        ms_wire_release_t w = {.slot = p->u.claim.slot,
                               .epoch = s_epoch(p->u.claim.epoch),
                               .reason = (char *) s_reasons[p->u.claim.reason]};
        memcpy(w.task_id, p->u.claim.task_id, MS_WIRE_ID_BYTES);
        rc = ms_wire_encode_release(&w, out, len);
        break;
    }
    case MS_RECORD_RESULT: {
        if (!p->u.result.row_json || p->u.result.row_len == 0)
            return MS_ERR_INVALID;
        char *row = malloc(p->u.result.row_len + 1);
        if (!row)
            return MS_ERR_NOMEM;
        memcpy(row, p->u.result.row_json, p->u.result.row_len);
        row[p->u.result.row_len] = 0;
        ms_wire_result_t w = {.slot = p->u.result.slot,
                              .epoch = s_epoch(p->u.result.epoch),
                              .row_json = row,
                              .has_nonce = p->u.result.has_nonce};
        memcpy(w.task_id, p->u.result.task_id, MS_WIRE_ID_BYTES);
        if (w.has_nonce)
            memcpy(w.nonce, p->u.result.nonce, MS_WIRE_ID_BYTES);
        rc = ms_wire_encode_result_big(&w, out, len);
        free(row);
        break;
    }
    case MS_RECORD_REEVALUATION:
        rc = ms_wire_encode_reevaluation(&p->u.reeval, out, len);
        break;
    case MS_RECORD_FAILURE: {
        if (p->u.failure.failure_class > MS_FAILURE_CLASS_TASK)
            return MS_ERR_INVALID;
        ms_wire_failure_t w = {
            .slot = p->u.failure.slot,
            .epoch = s_epoch(p->u.failure.epoch),
            .failure_class = p->u.failure.failure_class == MS_FAILURE_CLASS_TASK
                                 ? MS_WIRE_FAILURE_TASK
                                 : MS_WIRE_FAILURE_RESOURCE,
            .reason =
                (char *) (p->u.failure.reason ? p->u.failure.reason : "")};
        memcpy(w.task_id, p->u.failure.task_id, MS_WIRE_ID_BYTES);
        rc = ms_wire_encode_failure(&w, out, len);
        break;
    }
    default:
        return MS_ERR_INVALID;
    }
    return s_wire_rc(rc);
}

//  --------------------------------------------------------------------------
//  Decode a sweep: the wire struct, then its spec and tasks.

static int
s_decode_sweep(s_decoded_t *d, const uint8_t *data, size_t len)
{
    ms_wire_sweep_t *w = NULL;
    int rc = s_wire_rc(ms_wire_decode_sweep_big(data, len, &w));
    if (rc != MS_OK)
        return rc;
    d->wire = w;
    size_t spec_len = strlen(w->spec);
    rc = ms_spec_load_canonical(w->spec, spec_len, &d->spec, NULL);
    if (rc != MS_OK)
        return rc == MS_ERR_NOMEM ? rc : MS_ERR_INVALID;
    const ms_hash_t *sid = ms_spec_sweep_id(d->spec);
    if (!sid || memcmp(sid->bytes, w->sweep_id, MS_WIRE_ID_BYTES) != 0)
        return MS_ERR_INVALID; // the spec is not this sweep's
    struct ms_store_payload_sweep *s = &d->p.u.sweep;
    memcpy(s->sweep_id, w->sweep_id, MS_WIRE_ID_BYTES);
    s->spec_json = w->spec;
    s->spec_len = spec_len;
    s->priority = w->priority;
    const ms_spec_verify_t *verify = ms_spec_verify(d->spec);
    s->replicas =
        verify && verify->replicas > 0 ? (uint32_t) verify->replicas : 1;
    s->accuracy_tolerance = verify ? verify->accuracy_tolerance : 0.01;
    s->loss_tolerance = verify ? verify->loss_tolerance : 0.02;
    s->n_tasks = ms_spec_task_count(d->spec);
    if (s->n_tasks) {
        d->tasks = calloc(s->n_tasks, sizeof *d->tasks);
        if (!d->tasks)
            return MS_ERR_NOMEM;
    }
    for (size_t i = 0; i < s->n_tasks; i++) {
        const ms_hash_t *tid = ms_spec_task_id(d->spec, i);
        const char *cfg = ms_spec_task_json(d->spec, i);
        if (!tid || !cfg)
            return MS_ERR_INVALID;
        d->tasks[i].task_id = tid->bytes;
        d->tasks[i].config_json = cfg;
        d->tasks[i].config_len = strlen(cfg);
    }
    s->tasks = d->tasks;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Result rows that cannot be true (cases/README.md case 7). A row with
//  status ok must have its metrics in range: accuracies in [0, 1], losses
//  finite and >= 0. JSON has no NaN: our workers write a NaN metric as
//  null (s_real_or_null), so a trained row (epochs >= 1) with status ok
//  and a null test metric is a NaN in disguise; validation metrics may be
//  null (a run without a validation split). A noop row (epochs 0) has no
//  metrics. Such a row is refused like a malformed one: the record is
//  kept (stores converge) but never applied, so it counts for nothing,
//  and the node's lease table treats it as a release of the producer's
//  claim (the task is scheduled again elsewhere).

enum {
    S_M_EPOCHS,
    S_M_VAL_ACC,
    S_M_VAL_LOSS,
    S_M_TEST_ACC,
    S_M_TEST_LOSS,
    S_M_N
};
static const char *s_metric_keys[S_M_N] = {"epochs", "val_accuracy", "val_loss",
                                           "test_accuracy", "test_loss"};

typedef struct {
    bool present[S_M_N]; // key present at the top level
    bool number[S_M_N];  // its value is a number
    double value[S_M_N]; // the number (when number)
} s_metrics_t;

//  Top-level string members a verdict reads (s_row_status_fast).
enum { S_S_FINGERPRINT, S_S_WEIGHTS, S_S_N };
static const char *s_string_keys[S_S_N] = {"fingerprint", "weights_digest"};

typedef struct {
    bool present[S_S_N];   // key present at the top level
    const char *at[S_S_N]; // its string's text (no escapes), else NULL
    size_t len[S_S_N];     // bytes at at
} s_strings_t;

//  MS_OK when a row of STATUS with metrics M can be true, else
//  MS_ERR_INVALID.

static int
s_metrics_check(uint32_t status, const s_metrics_t *m)
{
    if (status != MS_RESULT_STATUS_OK)
        return MS_OK;
    for (int k = S_M_VAL_ACC; k < S_M_N; k++) {
        if (m->present[k] && !m->number[k] &&
            (k == S_M_TEST_ACC || k == S_M_TEST_LOSS) &&
            m->number[S_M_EPOCHS] && m->value[S_M_EPOCHS] >= 1)
            return MS_ERR_INVALID; // a trained row without its test metric
        if (!m->number[k])
            continue;
        double v = m->value[k];
        bool acc = k == S_M_VAL_ACC || k == S_M_TEST_ACC;
        if (!isfinite(v) || v < 0 || (acc && v > 1))
            return MS_ERR_INVALID;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Result rows without jansson. Every merged result is checked (is its
//  row a JSON object, what is its status), and parsing 1 KB of JSON into
//  a tree cost about half the store's CPU time in a catch-up. This scanner
//  walks the text once, allocates nothing, and answers only for the
//  plain subset that jansson certainly accepts with flags 0: ASCII text;
//  string escapes other than \u; numbers too short to overflow (an
//  integer of at most 18 digits; a real of at most 24 characters with an
//  exponent of at most 2 digits); nesting up to S_FAST_DEPTH; one
//  top-level "status" key. Anything else (including any error) returns
//  false and jansson decides, so the verdict is jansson's, byte for byte.

#define S_FAST_DEPTH 64

typedef struct {
    const char *at, *end; // cursor, end of the text
} s_scan_t;

//  Skip JSON whitespace.

static void
s_scan_ws(s_scan_t *sc)
{
    while (sc->at < sc->end && (*sc->at == ' ' || *sc->at == '\t' ||
                                *sc->at == '\n' || *sc->at == '\r'))
        sc->at++;
}

//  A string at the cursor (at the quote): true when plain; *body and
//  *body_len (may be NULL) get its text between the quotes, *escaped
//  whether it holds an escape.

static bool
s_scan_string(s_scan_t *sc, const char **body, size_t *body_len, bool *escaped)
{
    if (sc->at >= sc->end || *sc->at != '"')
        return false;
    const char *start = ++sc->at;
    bool esc = false;
    while (sc->at < sc->end) {
        unsigned char c = (unsigned char) *sc->at;
        if (c == '"') {
            if (body)
                *body = start;
            if (body_len)
                *body_len = (size_t) (sc->at - start);
            if (escaped)
                *escaped = esc;
            sc->at++;
            return true;
        }
        if (c < 0x20 || c >= 0x80)
            return false; // control byte (invalid) or UTF-8: jansson's
        if (c == '\\') {
            esc = true;
            if (++sc->at >= sc->end || !strchr("\"\\/bfnrt", *sc->at) ||
                *sc->at == 0)
                return false; // \u (or invalid): jansson's
        }
        sc->at++;
    }
    return false;
}

//  A number at the cursor: true when valid JSON and short enough.

static bool
s_scan_number(s_scan_t *sc)
{
    const char *start = sc->at, *p = sc->at, *end = sc->end;
    if (p < end && *p == '-')
        p++;
    if (p >= end || *p < '0' || *p > '9')
        return false;
    if (*p == '0')
        p++;
    else
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    bool real = false;
    if (p < end && *p == '.') {
        real = true;
        p++;
        const char *digits = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == digits)
            return false;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        real = true;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const char *digits = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == digits || p - digits > 2)
            return false;
    }
    size_t n = (size_t) (p - start);
    if (real ? n > 24 : n - (*start == '-') > 18)
        return false;
    sc->at = p;
    return true;
}

static bool s_scan_value(s_scan_t *sc, int depth);

//  An object or array at the cursor (at its bracket).

static bool
s_scan_container(s_scan_t *sc, int depth)
{
    if (depth >= S_FAST_DEPTH)
        return false;
    char close = *sc->at == '{' ? '}' : ']';
    sc->at++;
    s_scan_ws(sc);
    if (sc->at < sc->end && *sc->at == close) {
        sc->at++;
        return true;
    }
    for (;;) {
        if (close == '}') {
            if (!s_scan_string(sc, NULL, NULL, NULL))
                return false;
            s_scan_ws(sc);
            if (sc->at >= sc->end || *sc->at != ':')
                return false;
            sc->at++;
            s_scan_ws(sc);
        }
        if (!s_scan_value(sc, depth + 1))
            return false;
        s_scan_ws(sc);
        if (sc->at >= sc->end)
            return false;
        if (*sc->at == close) {
            sc->at++;
            return true;
        }
        if (*sc->at != ',')
            return false;
        sc->at++;
        s_scan_ws(sc);
    }
}

//  Any value at the cursor.

static bool
s_scan_value(s_scan_t *sc, int depth)
{
    if (sc->at >= sc->end)
        return false;
    switch (*sc->at) {
    case '{':
    case '[':
        return s_scan_container(sc, depth);
    case '"':
        return s_scan_string(sc, NULL, NULL, NULL);
    case 't':
    case 'f':
    case 'n': {
        const char *word = *sc->at == 't'   ? "true"
                           : *sc->at == 'f' ? "false"
                                            : "null";
        size_t n = strlen(word);
        if ((size_t) (sc->end - sc->at) < n || memcmp(sc->at, word, n) != 0)
            return false;
        sc->at += n;
        return true;
    }
    default:
        return s_scan_number(sc);
    }
}

//  The fast path of s_row_status: true when ROW is a plain JSON object
//  (then *status is set as jansson would set it), false when jansson
//  must decide.

static bool
s_row_status_fast(const char *row, size_t len, uint32_t *status, s_metrics_t *m,
                  s_strings_t *strs)
{
    s_scan_t sc = {row, row + len};
    s_scan_ws(&sc);
    if (sc.at >= sc.end || *sc.at != '{')
        return false;
    sc.at++;
    const char *st = NULL;
    size_t st_len = 0;
    int n_status = 0;
    bool st_string = false;
    s_scan_ws(&sc);
    if (sc.at < sc.end && *sc.at == '}') {
        sc.at++;
    } else {
        for (;;) {
            const char *key;
            size_t key_len;
            bool key_esc;
            if (!s_scan_string(&sc, &key, &key_len, &key_esc) || key_esc)
                return false;
            s_scan_ws(&sc);
            if (sc.at >= sc.end || *sc.at != ':')
                return false;
            sc.at++;
            s_scan_ws(&sc);
            bool is_status = key_len == 6 && memcmp(key, "status", 6) == 0;
            int metric = -1, string = -1;
            for (int k = 0; k < S_M_N && !is_status; k++)
                if (strlen(s_metric_keys[k]) == key_len &&
                    memcmp(key, s_metric_keys[k], key_len) == 0)
                    metric = k;
            for (int k = 0; strs && k < S_S_N && !is_status && metric < 0; k++)
                if (strlen(s_string_keys[k]) == key_len &&
                    memcmp(key, s_string_keys[k], key_len) == 0)
                    string = k;
            if (string >= 0) {
                if (strs->present[string])
                    return false; // a duplicate key: jansson's
                strs->present[string] = true;
                if (sc.at < sc.end && *sc.at == '"') {
                    bool esc = false;
                    if (!s_scan_string(&sc, &strs->at[string],
                                       &strs->len[string], &esc) ||
                        esc)
                        return false; // jansson unescapes it
                } else if (!s_scan_value(&sc, 1)) {
                    return false;
                }
            } else if (metric >= 0) {
                if (m->present[metric])
                    return false; // a duplicate key: jansson's
                const char *num = sc.at;
                if (!s_scan_value(&sc, 1))
                    return false;
                m->present[metric] = true;
                if (*num == '-' || (*num >= '0' && *num <= '9')) {
                    char buf[32];
                    size_t n = (size_t) (sc.at - num);
                    memcpy(buf, num, n); // at most 24 (s_scan_number)
                    buf[n] = 0;
                    m->number[metric] = true;
                    m->value[metric] = strtod(buf, NULL);
                }
            } else if (is_status) {
                n_status++;
                st_string = sc.at < sc.end && *sc.at == '"';
                bool esc = false;
                if (st_string && !s_scan_string(&sc, &st, &st_len, &esc))
                    return false;
                if (esc)
                    return false;
                if (!st_string && !s_scan_value(&sc, 1))
                    return false;
            } else if (!s_scan_value(&sc, 1)) {
                return false;
            }
            s_scan_ws(&sc);
            if (sc.at >= sc.end)
                return false;
            if (*sc.at == '}') {
                sc.at++;
                break;
            }
            if (*sc.at != ',')
                return false;
            sc.at++;
            s_scan_ws(&sc);
        }
    }
    s_scan_ws(&sc);
    if (sc.at != sc.end || n_status > 1)
        return false;
    bool ok = st_string && st_len == 2 && memcmp(st, "ok", 2) == 0;
    bool div = st_string && st_len == 8 && memcmp(st, "diverged", 8) == 0;
    *status = ok    ? MS_RESULT_STATUS_OK
              : div ? MS_RESULT_STATUS_DIVERGED
                    : MS_RESULT_STATUS_FAILED;
    return true;
}

//  --------------------------------------------------------------------------
//  Status of a result row; MS_ERR_INVALID when it is not a JSON object.

static int
s_row_status(const char *row, size_t len, uint32_t *status)
{
    s_metrics_t m;
    memset(&m, 0, sizeof m);
    if (s_row_status_fast(row, len, status, &m, NULL))
        return s_metrics_check(*status, &m);
    memset(&m, 0, sizeof m);
    json_error_t err;
    json_t *json = json_loadb(row, len, 0, &err);
    if (!json_is_object(json)) {
        json_decref(json);
        return MS_ERR_INVALID;
    }
    const char *st = json_string_value(json_object_get(json, "status"));
    *status = st && !strcmp(st, "ok")         ? MS_RESULT_STATUS_OK
              : st && !strcmp(st, "diverged") ? MS_RESULT_STATUS_DIVERGED
                                              : MS_RESULT_STATUS_FAILED;
    for (int k = 0; k < S_M_N; k++) {
        json_t *v = json_object_get(json, s_metric_keys[k]);
        m.present[k] = v != NULL;
        m.number[k] = json_is_number(v);
        m.value[k] = json_number_value(v);
    }
    json_decref(json);
    return s_metrics_check(*status, &m);
}

//  --------------------------------------------------------------------------
//  32 bytes from 64 hex digits at TEXT (LEN bytes), else zero.

static void
s_hex32_text(const char *text, size_t len, uint8_t out[MS_STORE_ID_BYTES])
{
    memset(out, 0, MS_STORE_ID_BYTES);
    char buf[MS_HASH_HEX_LEN + 1];
    ms_hash_t h;
    if (!text || len != MS_HASH_HEX_LEN || memchr(text, 0, len))
        return;
    memcpy(buf, text, len);
    buf[len] = 0;
    if (ms_hash_from_hex(buf, &h) == 0)
        memcpy(out, h.bytes, MS_STORE_ID_BYTES);
}

//  --------------------------------------------------------------------------
//  A metric as the verdict reads it from a parsed row (see the header).

static double
s_row_metric(const json_t *row, const char *name)
{
    const json_t *v = json_object_get(row, name);
    if (!v)
        return 0.0;
    return json_is_number(v) ? json_number_value(v) : NAN;
}

//  --------------------------------------------------------------------------
//  The fields of a result row that a verdict reads.

int
ms_store_payload_row_verdict(const char *row, size_t len,
                             ms_store_row_verdict_t *out)
{
    memset(out, 0, sizeof *out);
    uint32_t status;
    s_metrics_t m;
    s_strings_t strs;
    memset(&m, 0, sizeof m);
    memset(&strs, 0, sizeof strs);
    if (row && s_row_status_fast(row, len, &status, &m, &strs)) {
        out->test_accuracy = !m.present[S_M_TEST_ACC] ? 0.0
                             : m.number[S_M_TEST_ACC] ? m.value[S_M_TEST_ACC]
                                                      : NAN;
        out->test_loss = !m.present[S_M_TEST_LOSS] ? 0.0
                         : m.number[S_M_TEST_LOSS] ? m.value[S_M_TEST_LOSS]
                                                   : NAN;
        s_hex32_text(strs.at[S_S_FINGERPRINT], strs.len[S_S_FINGERPRINT],
                     out->fingerprint);
        s_hex32_text(strs.at[S_S_WEIGHTS], strs.len[S_S_WEIGHTS],
                     out->weights_digest);
        return MS_OK;
    }
    json_error_t err;
    json_t *json = row ? json_loadb(row, len, 0, &err) : NULL;
    if (!json_is_object(json)) {
        json_decref(json);
        return MS_ERR_INVALID;
    }
    out->test_accuracy = s_row_metric(json, "test_accuracy");
    out->test_loss = s_row_metric(json, "test_loss");
    const char *fp = json_string_value(json_object_get(json, "fingerprint"));
    const char *wd = json_string_value(json_object_get(json, "weights_digest"));
    s_hex32_text(fp, fp ? strlen(fp) : 0, out->fingerprint);
    s_hex32_text(wd, wd ? strlen(wd) : 0, out->weights_digest);
    json_decref(json);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Fill D from LEN bytes of a KIND payload.

static int
s_decode(s_decoded_t *d, uint32_t kind, const uint8_t *data, size_t len)
{
    ms_store_payload_t *p = &d->p;
    int rc;
    switch (kind) {
    case MS_RECORD_SWEEP:
        return s_decode_sweep(d, data, len);
    case MS_RECORD_SWEEP_CONTROL: {
        ms_wire_sweep_control_t *w = NULL;
        rc = s_wire_rc(ms_wire_decode_sweep_control(data, len, &w));
        if (rc != MS_OK)
            return rc;
        memcpy(p->u.control.sweep_id, w->sweep_id, MS_WIRE_ID_BYTES);
        p->u.control.action = (uint32_t) w->action;
        p->u.control.priority = w->priority;
        p->u.control.lamport = w->lamport;
        ms_wire_sweep_control_destroy(&w);
        return MS_OK;
    }
    case MS_RECORD_DATASET: {
        ms_wire_dataset_t *w = NULL;
        rc = s_wire_rc(ms_wire_decode_dataset(data, len, &w));
        if (rc != MS_OK)
            return rc;
        d->wire = w;
        if (w->n_files == 0)
            return MS_ERR_INVALID;
        memcpy(p->u.dataset.hash, w->has_hash ? w->hash : w->files[0].hash,
               MS_WIRE_ID_BYTES);
        p->u.dataset.name = w->name;
        p->u.dataset.files = w->files;
        p->u.dataset.n_files = w->n_files;
        return MS_OK;
    }
    case MS_RECORD_CLAIM: {
        ms_wire_claim_t w;
        rc = s_wire_rc(ms_wire_decode_claim(data, len, &w));
        if (rc != MS_OK)
            return rc;
        memcpy(p->u.claim.task_id, w.task_id, MS_WIRE_ID_BYTES);
        p->u.claim.slot = w.slot;
        p->u.claim.epoch = w.epoch;
        return MS_OK;
    }
    case MS_RECORD_COMMIT: {
        ms_wire_commit_t w;
        rc = s_wire_rc(ms_wire_decode_commit(data, len, &w));
        if (rc != MS_OK)
            return rc;
        memcpy(p->u.commit.task_id, w.task_id, MS_WIRE_ID_BYTES);
        p->u.commit.slot = w.slot;
        p->u.commit.epoch = w.epoch;
        memcpy(p->u.commit.commitment, w.commitment, MS_WIRE_ID_BYTES);
        return MS_OK;
    }
    case MS_RECORD_RELEASE: {
        ms_wire_release_t *w = NULL;
        rc = s_wire_rc(ms_wire_decode_release(data, len, &w));
        if (rc != MS_OK)
            return rc;
        memcpy(p->u.claim.task_id, w->task_id, MS_WIRE_ID_BYTES);
        p->u.claim.slot = w->slot;
        p->u.claim.epoch = w->epoch;
        p->u.claim.reason = MS_RELEASE_REASON_OTHER;
        for (uint32_t i = 0; i < S_N_REASONS; i++)
            if (w->reason && !strcmp(w->reason, s_reasons[i]))
                p->u.claim.reason = i;
        ms_wire_release_destroy(&w);
        return MS_OK;
    }
    case MS_RECORD_RESULT: {
        ms_wire_result_t *w = NULL;
        rc = s_wire_rc(ms_wire_decode_result_big(data, len, &w));
        if (rc != MS_OK)
            return rc;
        d->wire = w;
        memcpy(p->u.result.task_id, w->task_id, MS_WIRE_ID_BYTES);
        p->u.result.slot = w->slot;
        p->u.result.epoch = w->epoch;
        p->u.result.row_json = w->row_json;
        p->u.result.row_len = strlen(w->row_json);
        p->u.result.has_nonce = w->has_nonce;
        memcpy(p->u.result.nonce, w->nonce, MS_WIRE_ID_BYTES);
        return s_row_status(w->row_json, p->u.result.row_len,
                            &p->u.result.status);
    }
    case MS_RECORD_FAILURE: {
        ms_wire_failure_t *w = NULL;
        rc = s_wire_rc(ms_wire_decode_failure(data, len, &w));
        if (rc != MS_OK)
            return rc;
        d->wire = w;
        memcpy(p->u.failure.task_id, w->task_id, MS_WIRE_ID_BYTES);
        p->u.failure.slot = w->slot;
        p->u.failure.epoch = w->epoch;
        p->u.failure.failure_class = w->failure_class == MS_WIRE_FAILURE_TASK
                                         ? MS_FAILURE_CLASS_TASK
                                         : MS_FAILURE_CLASS_RESOURCE;
        p->u.failure.reason = w->reason ? w->reason : "";
        return MS_OK;
    }
    case MS_RECORD_REEVALUATION:
        return s_wire_rc(ms_wire_decode_reevaluation(data, len, &p->u.reeval));
    default:
        return MS_ERR_UNSUPPORTED;
    }
}

//  --------------------------------------------------------------------------
//  Decode a payload.

int
ms_store_payload_decode(uint32_t kind, const uint8_t *data, size_t len,
                        ms_store_payload_t **out)
{
    *out = NULL;
    if (kind < MS_RECORD_SWEEP || kind > MS_RECORD_REEVALUATION)
        return MS_ERR_UNSUPPORTED;
    if (!data && len)
        return MS_ERR_INVALID;
    s_decoded_t *d = calloc(1, sizeof *d);
    if (!d)
        return MS_ERR_NOMEM;
    d->p.kind = kind;
    int rc = s_decode(d, kind, data ? data : (const uint8_t *) "", len);
    if (rc != MS_OK) {
        ms_store_payload_t *p = &d->p;
        ms_store_payload_destroy(&p);
        return rc;
    }
    *out = &d->p;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The commitment of a result row (see the header).

int
ms_store_payload_commitment(const uint8_t node_id[MS_STORE_ID_BYTES],
                            const uint8_t nonce[MS_STORE_ID_BYTES],
                            const char *row_json, size_t row_len,
                            uint8_t out[MS_STORE_ID_BYTES])
{
    static const char *const keys[] = {"status",    "test_accuracy",
                                       "test_loss", "val_accuracy",
                                       "val_loss",  "weights_digest"};
    static const char domain[] = "meshsweep-commit-v1"; // + its NUL
    if (!node_id || !nonce || !row_json || !out)
        return MS_ERR_INVALID;
    json_error_t err;
    json_t *row = json_loadb(row_json, row_len, 0, &err);
    if (!json_is_object(row)) {
        json_decref(row);
        return MS_ERR_INVALID;
    }
    json_t *metrics = json_object();
    int rc = metrics ? MS_OK : MS_ERR_NOMEM;
    for (size_t i = 0; rc == MS_OK && i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(row, keys[i]);
        if (json_object_set_new(metrics, keys[i],
                                v ? json_incref(v) : json_null()) != 0)
            rc = MS_ERR_NOMEM;
    }
    size_t len = 0;
    char *text = rc == MS_OK ? ms_wire_canon_dump_len(metrics, &len) : NULL;
    json_decref(metrics);
    json_decref(row);
    if (rc == MS_OK && !text)
        rc = MS_ERR_INVALID; // a value canonical JSON cannot hold
    if (rc == MS_OK) {
        ms_hasher_t h;
        ms_hasher_init(&h);
        ms_hasher_update(&h, domain, sizeof domain);
        ms_hasher_update(&h, node_id, MS_STORE_ID_BYTES);
        ms_hasher_update(&h, nonce, MS_STORE_ID_BYTES);
        ms_hasher_update(&h, text, len);
        ms_hash_t digest;
        ms_hasher_final(&h, &digest);
        memcpy(out, digest.bytes, MS_STORE_ID_BYTES);
    }
    free(text);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free a decoded payload.

void
ms_store_payload_destroy(ms_store_payload_t **p_p)
{
    if (!p_p || !*p_p)
        return;
    s_decoded_t *d = (s_decoded_t *) *p_p;
    if (d->wire) {
        switch (d->p.kind) {
        case MS_RECORD_SWEEP: {
            ms_wire_sweep_t *w = d->wire;
            ms_wire_sweep_destroy(&w);
            break;
        }
        case MS_RECORD_DATASET: {
            ms_wire_dataset_t *w = d->wire;
            ms_wire_dataset_destroy(&w);
            break;
        }
        case MS_RECORD_RESULT: {
            ms_wire_result_t *w = d->wire;
            ms_wire_result_destroy(&w);
            break;
        }
        case MS_RECORD_FAILURE: {
            ms_wire_failure_t *w = d->wire;
            ms_wire_failure_destroy(&w);
            break;
        }
        default:
            break;
        }
    }
    ms_spec_destroy(&d->spec);
    free(d->tasks);
    free(d);
    *p_p = NULL;
}
