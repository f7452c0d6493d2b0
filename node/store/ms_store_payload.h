/*  =========================================================================
    ms_store_payload - record payloads as plain C values (encode, decode)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The store applies records by kind (ms_store.h "Record log"); this is the
    one small interface it decodes payloads through, and what the node
    builds its records with. The bytes are the wire payloads of
    proto/ms_wire.h (protobuf, ms_wire_encode_* / ms_wire_decode_*); this
    class maps them to and from the plain values below:

    - sweep: on the wire, sweep id, canonical expanded spec and priority
      (up to MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES: the store fragments it).
      The task list is not sent beside the spec: decode rebuilds it from
      the spec with ms_spec_load_canonical (task ids are
      BLAKE2b(sweep id || config), DESIGN.md) and refuses a spec whose id
      is not the sweep id. tasks/n_tasks are ignored by encode.
      created_at_ms is not on the wire (decoded as 0).
    - result: status is read from the row's "status" ("ok", "diverged",
      anything else failed); encode ignores .status (the row carries it).
      Up to MS_WIRE_MAX_RESULT_PAYLOAD_BYTES (a row with a long curve:
      ms_store_append carries one over MS_STORE_FRAGMENT_BYTES in
      FRAGMENT records).
    - release: reason codes <-> the wire's reason text.
    - failure: classes <-> the wire's 1 (resource) / 2 (task).
    - dataset: name, hash (the dataset's content hash, the store's key)
      and the files (role, size, hash). Encoding with no files writes one
      file "data" of the dataset's hash and no hash field (the old form);
      decoding a record without the hash field takes the first file's.
    - commit (commit then reveal, DESIGN.md "Verification"): task, slot,
      epoch and the 32-byte commitment of ms_store_payload_commitment; the
      result that reveals it carries the nonce.
    - reevaluation (DESIGN.md "Verification"): the wire value as it is
      (ms_wire_reevaluation_t: task, target record hash, status, the
      recomputed metrics, a reason when it failed).
    - epoch 0 in a claim, release, commit, result or failure is encoded as 1
   (the wire refuses 0).

    A node is never named in a payload: the record's origin is the node
    (the claimant, the result's and the failure's node).
*/
#ifndef MS_STORE_PAYLOAD_H
#define MS_STORE_PAYLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"
#include "ms_store.h"
#include "ms_wire.h"

//  sweep-control actions.
typedef enum {
    MS_SWEEP_CONTROL_CANCEL = 1,
    MS_SWEEP_CONTROL_PAUSE = 2,
    MS_SWEEP_CONTROL_RESUME = 3,
    MS_SWEEP_CONTROL_PRIORITY = 4,
    MS_SWEEP_CONTROL_REOPEN = 5, // a cancelled sweep submitted again
} ms_sweep_control_t;

//  Result statuses (a diverged run is a result, DESIGN.md).
typedef enum {
    MS_RESULT_STATUS_OK = 0,
    MS_RESULT_STATUS_DIVERGED = 1,
    MS_RESULT_STATUS_FAILED = 2,
} ms_result_status_t;

//  Failure classes (DESIGN.md "Failures").
typedef enum {
    MS_FAILURE_CLASS_RESOURCE = 0, // not counted against the task
    MS_FAILURE_CLASS_TASK = 1,     // counts toward the task's failure
} ms_failure_class_t;

//  Release reasons.
typedef enum {
    MS_RELEASE_REASON_DONE = 0,     // result published
    MS_RELEASE_REASON_SHUTDOWN = 1, // graceful shutdown
    MS_RELEASE_REASON_OUTRANKED = 2,
    MS_RELEASE_REASON_FAILED = 3,
    MS_RELEASE_REASON_PAUSED = 4,
    MS_RELEASE_REASON_OTHER = 255, // a reason text this build does not know
} ms_release_reason_t;

//  A decoded payload. Pointers are owned by the value when it came from
//  ms_store_payload_decode (free with ms_store_payload_destroy), and
//  borrowed from the caller when it is built for ms_store_payload_encode.
typedef struct {
    uint32_t kind; // ms_record_kind_t: selects the member below
    union {
        struct ms_store_payload_sweep {
            uint8_t sweep_id[MS_STORE_ID_BYTES];
            const char *spec_json; // canonical expanded spec
            size_t spec_len;
            int32_t priority;          // initial priority
            int64_t created_at_ms;     // not on the wire: ignored, decoded 0
            uint32_t replicas;         // decode: the spec's verify.replicas
                                       // (result slots per task); encode
                                       // ignores it (the spec carries it)
            double accuracy_tolerance; // decode: verify.accuracy_tolerance
            double loss_tolerance;     // decode: verify.loss_tolerance
            size_t n_tasks;
            const ms_store_task_input_t *tasks; // decode: from the spec
        } sweep;
        struct {
            uint8_t sweep_id[MS_STORE_ID_BYTES];
            uint32_t action;  // ms_sweep_control_t
            int32_t priority; // for MS_SWEEP_CONTROL_PRIORITY
            uint64_t lamport; // logical time (ms_store_sweep_control_time
                              // + 1 at the issuer); 0: old record
        } control;
        struct {
            uint8_t hash[MS_STORE_ID_BYTES];     // dataset content hash
            const char *name;                    // NUL-terminated
            const ms_wire_dataset_file_t *files; // n_files entries, or
            size_t n_files; // none (encode: one file "data" of hash)
        } dataset;
        struct {
            uint8_t task_id[MS_STORE_ID_BYTES];
            uint32_t slot;
            uint64_t epoch;
            uint32_t reason; // release only: ms_release_reason_t
        } claim;             // MS_RECORD_CLAIM and MS_RECORD_RELEASE
        struct {
            uint8_t task_id[MS_STORE_ID_BYTES];
            uint32_t status;      // ms_result_status_t (from the row)
            const char *row_json; // the result row (JSON object)
            size_t row_len;
            uint32_t slot;  // the slot it was computed for
            uint32_t epoch; // the claim epoch (0 encodes as 1)
            bool has_nonce; // a reveal: nonce is what its commit hashed
            uint8_t nonce[MS_STORE_ID_BYTES];
        } result;
        struct {
            uint8_t task_id[MS_STORE_ID_BYTES];
            uint32_t slot;  // the slot the result is computed for
            uint32_t epoch; // the claim epoch (0 encodes as 1)
            uint8_t commitment[MS_STORE_ID_BYTES]; // see below
        } commit;
        struct {
            uint8_t task_id[MS_STORE_ID_BYTES];
            uint32_t failure_class; // ms_failure_class_t
            const char *reason;     // NUL-terminated
            uint32_t slot;          // the slot it was run for
            uint32_t epoch;         // the claim epoch (0 encodes as 1)
        } failure;
        ms_wire_reevaluation_t reeval; // MS_RECORD_REEVALUATION
    } u;
} ms_store_payload_t;

//  Encode P into a new buffer: *out (caller frees with free()), *len.
//  A sweep may be up to MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES (its spec lists
//  every task): ms_store_append carries a payload over
//  MS_STORE_FRAGMENT_BYTES in FRAGMENT records, so the caller need not
//  check its size; so may a result, up to MS_WIRE_MAX_RESULT_PAYLOAD_BYTES;
//  the other kinds stay within MS_WIRE_MAX_PAYLOAD_BYTES.
//  Errors: MS_ERR_INVALID unknown kind, missing field or a field out of
//  the wire contract; MS_ERR_RANGE over those limits (a result row too
//  big to store: a property of the task); MS_ERR_NOMEM.
int ms_store_payload_encode(const ms_store_payload_t *p, uint8_t **out,
                            size_t *len);

//  Decode LEN bytes of a KIND payload. Caller owns *out (free with
//  ms_store_payload_destroy); *out is NULL on failure.
//  Errors: MS_ERR_UNSUPPORTED a kind with no decoder (stored, not
//  applied); MS_ERR_INVALID malformed payload (the wire decoder's
//  MS_ERR_PROTOCOL, a sweep spec that is not canonical or not its id, a
//  result row that is not a JSON object, or a row with status ok whose
//  metrics cannot be true: an accuracy outside [0, 1], a negative or
//  infinite loss, a trained row without its test metrics (a NaN written
//  as null); cases/README.md case 7); MS_ERR_NOMEM.
int ms_store_payload_decode(uint32_t kind, const uint8_t *data, size_t len,
                            ms_store_payload_t **out);

//  What a verdict reads from a result row (ms_store_payload_row_verdict).
typedef struct {
    double test_accuracy; // 0 when absent, NaN when not a number
    double test_loss;     // likewise
    uint8_t fingerprint[MS_STORE_ID_BYTES];    // from 64 hex digits, else 0
    uint8_t weights_digest[MS_STORE_ID_BYTES]; // likewise
} ms_store_row_verdict_t;

//  Read the top-level "test_accuracy", "test_loss", "fingerprint" and
//  "weights_digest" of a result row (ROW, LEN bytes, need not be
//  NUL-terminated) into *out, with exactly the values a jansson parse of
//  the row gives (a metric: its number, NaN when present but not a
//  number, 0 when absent; a digest: the 32 bytes of a 64-hex-digit
//  string, else zero; a row that publishes no metrics cannot agree with
//  one that does, so the 0 gains a liar nothing). Plain rows (ASCII, no \u
//  escapes, short numbers: every row our nodes write) are scanned without
//  building a tree, about ten times faster; anything else is parsed by jansson.
//  Thread-safe. Errors: MS_ERR_INVALID the row is not a JSON object (*out
//  zero).
int ms_store_payload_row_verdict(const char *row, size_t len,
                                 ms_store_row_verdict_t *out);

//  The commitment of a result (commit then reveal): BLAKE2b-256 of the
//  domain "meshsweep-commit-v1" || NUL || NODE_ID (32 bytes, the
//  producer) || NONCE (32 random bytes) || the canonical JSON (proto/
//  ms_wire_canon.h) of the row's metrics {status, test_accuracy,
//  test_loss, val_accuracy, val_loss, weights_digest} (a missing key is
//  null). Only those fields are bound: the rest of the row (timings,
//  platform, verdict fields) does not decide a verdict. ROW_JSON is
//  ROW_LEN bytes (need not be NUL-terminated); OUT gets 32 bytes.
//  Errors: MS_ERR_INVALID the row is not a JSON object; MS_ERR_NOMEM.
int ms_store_payload_commitment(const uint8_t node_id[MS_STORE_ID_BYTES],
                                const uint8_t nonce[MS_STORE_ID_BYTES],
                                const char *row_json, size_t row_len,
                                uint8_t out[MS_STORE_ID_BYTES]);

//  Free a decoded payload; NULL-safe; nulls *p_p.
void ms_store_payload_destroy(ms_store_payload_t **p_p);

#endif
