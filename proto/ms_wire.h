/*  =========================================================================
    ms_wire - every message meshsweep nodes exchange, as plain C structs,
    and the record payloads they carry

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "The pool" and docs/POOL.md. The bytes on the wire are the
    protobuf messages of proto/mswire.proto (package mswire, protobuf-c);
    this class wraps the generated code so that no Mswire__* name leaves
    proto/. One frame = one encoded envelope: a protocol version and
    exactly one body (HELLO, HEARTBEAT, ... see ms_wire_body_t).

    Decoders are the border with hostile peers. They refuse (MS_ERR_PROTOCOL,
    never a crash, never an assert) a frame over MS_MAX_FRAME_BYTES before
    unpacking, anything protobuf-c cannot unpack, an envelope with no body
    or a body this version does not know, and every field out of its
    contract (ids and hashes not exactly 32 bytes, strings too long or not
    UTF-8, endpoints that are not "tcp://HOST:PORT", blocks that are not
    1..64 records with contiguous seqs, ...). A struct that a decoder
    returns can be trusted field by field. Encoders apply the same checks
    to what they are given, so encode succeeds exactly when decode of its
    output would.

    Memory: a decoded envelope or payload is one heap object whose pointer
    members (arrays, strings, byte buffers) are separately malloc'd and
    freed by its _destroy. A struct a caller fills in for encoding may
    point at anything (stack, borrowed buffers): encoders only read it;
    do not pass such a struct to _destroy unless every pointer member is
    NULL or malloc'd.

    All functions are reentrant and thread-safe (no shared state).
*/
#ifndef MS_WIRE_H
#define MS_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

// --- versions and limits ---------------------------------------------------

#define MS_PROTOCOL_VERSION 1 // version this build writes in envelopes
#define MS_PROTOCOL_MIN 1     // oldest version this build speaks
#define MS_PROTOCOL_MAX 1     // newest version this build speaks

#define MS_MAX_FRAME_BYTES (8u * 1024u * 1024u) // one encoded envelope
#define MS_WIRE_ID_BYTES 32          // node ids, pool ids, hashes, task ids
#define MS_WIRE_ENDPOINT_MAX 256     // "tcp://HOST:PORT", without the NUL
#define MS_WIRE_NAME_MAX 255         // operator, dataset name, file role
#define MS_WIRE_REASON_MAX 1024      // release / failure reason text
#define MS_WIRE_BLOCK_MAX_RECORDS 64 // a block holds 1..64 records
//  One record's payload at most: 64 records of this size fit in a frame.
#define MS_WIRE_MAX_PAYLOAD_BYTES (64u * 1024u)
//  One LOGICAL record's payload at most: a bigger payload (a SWEEP lists
//  every task config) travels as FRAGMENT records (kind 10), each within
//  MS_WIRE_MAX_PAYLOAD_BYTES; the store splits and reassembles them.
#define MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES (256u * 1024u * 1024u)
//  One RESULT payload at most (its row, "curve" included: about 120 bytes
//  per epoch, so 100,000 epochs fit with room to spare). A bigger row is
//  the task's own property: the node records a task-class failure.
#define MS_WIRE_MAX_RESULT_PAYLOAD_BYTES (32u * 1024u * 1024u)
#define MS_WIRE_MAX_SIGNATURE_BYTES 256 // block signature (empty for now)
#define MS_WIRE_MAX_CERTIFICATE_BYTES (16u * 1024u) // HELLO certificate
//  BLOB_REQUEST length and BLOB_CHUNK data, at most.
#define MS_WIRE_BLOB_CHUNK_MAX_BYTES (1024u * 1024u)
#define MS_WIRE_MAX_SHUFFLE_PEERS 64 // peers in a SHUFFLE / SHUFFLE_REPLY
//  Files in a DATASET record, and dataset files named by a SWEEP.
#define MS_WIRE_MAX_DATASET_FILES 64
//  Authority items: digests in one ITEM_LIST, items in one ITEMS, bytes of
//  one item (a certificate chain or an authority item with its type byte).
#define MS_WIRE_MAX_ITEM_DIGESTS 8192
#define MS_WIRE_MAX_ITEMS 64
#define MS_WIRE_MAX_ITEM_BYTES 2048

// --- envelope bodies -------------------------------------------------------

//  Which body an envelope carries. On the wire, body B is field B + 1 of
//  the oneof in mswire.Envelope (field 1 is protocol): never reuse one.
typedef enum {
    MS_WIRE_BODY_NONE = 0, // never valid on the wire
    MS_WIRE_BODY_HELLO = 1,
    MS_WIRE_BODY_HEARTBEAT = 2,
    MS_WIRE_BODY_VECTOR_DIGEST = 3,
    MS_WIRE_BODY_VECTOR = 4,
    MS_WIRE_BODY_RANGE_REQUEST = 5,
    MS_WIRE_BODY_BLOCK = 6,
    MS_WIRE_BODY_BLOB_REQUEST = 7,
    MS_WIRE_BODY_BLOB_CHUNK = 8,
    MS_WIRE_BODY_BLOB_MISSING = 9,
    MS_WIRE_BODY_JOIN = 10,
    MS_WIRE_BODY_FORWARD_JOIN = 11,
    MS_WIRE_BODY_NEIGHBOR = 12,
    MS_WIRE_BODY_DISCONNECT = 13,
    MS_WIRE_BODY_SHUFFLE = 14,
    MS_WIRE_BODY_SHUFFLE_REPLY = 15,
    MS_WIRE_BODY_WHO_ARE_YOU = 16,
    MS_WIRE_BODY_I_AM = 17,
    MS_WIRE_BODY_BLOCK_ACK = 18,
    MS_WIRE_BODY_ITEM_DIGEST = 19,
    MS_WIRE_BODY_ITEM_LIST = 20,
    MS_WIRE_BODY_ITEMS = 21,
} ms_wire_body_t;

//  HELLO: the first frame on a link, both ways (DESIGN.md "Discovery and
//  links"). Decoder: protocol_min >= 1, protocol_min <= protocol_max,
//  mesh_port 1..65535, operator_name <= MS_WIRE_NAME_MAX bytes (may be
//  empty), certificate <= MS_WIRE_MAX_CERTIFICATE_BYTES (empty until the
//  trust issue), endpoint empty or valid (ms_wire_endpoint_valid): the
//  sender's --advertise endpoint, which the receiver dials instead of the
//  link's source address and mesh_port (older senders leave it empty).
typedef struct {
    uint8_t node_id[MS_WIRE_ID_BYTES]; // sender's Ed25519 public key
    uint8_t pool_id[MS_WIRE_ID_BYTES]; // see ms_beacon_open_pool_id
    uint32_t protocol_min;             // versions the sender speaks
    uint32_t protocol_max;
    uint64_t incarnation;     // sender's store incarnation
    uint16_t mesh_port;       // sender's ROUTER port
    uint32_t n_workers;       // worker processes of the sender
    char *operator_name;      // UTF-8, NUL-terminated ("operator")
    uint8_t *certificate;     // membership certificate bytes
    size_t certificate_bytes; // 0 until the trust issue
    char endpoint[MS_WIRE_ENDPOINT_MAX + 1]; // advertised; "" = none
} ms_wire_hello_t;

//  A claim the heartbeat's sender holds and is working on (never stored).
typedef struct {
    uint8_t task_id[MS_WIRE_ID_BYTES];
    uint32_t slot;  // replica slot, 0-based
    uint32_t epoch; // claim epoch, >= 1
} ms_wire_live_claim_t;

//  HEARTBEAT: liveness and live claims. seq grows by at least 1 per
//  heartbeat of one sender incarnation (receivers drop stale ones).
//  Decoder: epoch >= 1 in every live claim, n_busy <= n_workers, load
//  finite and >= 0.
typedef struct {
    uint64_t incarnation;              // sender's store incarnation
    uint64_t seq;                      // monotonic per sender
    ms_wire_live_claim_t *live_claims; // n_live_claims entries
    size_t n_live_claims;
    uint32_t n_workers; // worker processes
    uint32_t n_busy;    // of which running a task
    double load;        // 1-minute load average
} ms_wire_heartbeat_t;

//  VECTOR_DIGEST: BLAKE2b of the sender's canonical vector listing.
typedef struct {
    uint8_t digest[MS_WIRE_ID_BYTES];
} ms_wire_vector_digest_t;

//  One version-vector entry: highest contiguous seq held for a stream.
typedef struct {
    uint8_t origin[MS_WIRE_ID_BYTES]; // node id of the stream's origin
    uint64_t incarnation;
    uint64_t seq; // highest contiguous seq held, >= 1
} ms_wire_vector_entry_t;

//  VECTOR: the sender's whole version vector (any order; decoder refuses
//  seq 0).
typedef struct {
    ms_wire_vector_entry_t *entries; // n_entries entries
    size_t n_entries;
} ms_wire_vector_t;

//  RANGE_REQUEST: "send me records from_seq..to_seq (inclusive) of this
//  stream, at most max_records". Decoder: 1 <= from_seq <= to_seq,
//  max_records >= 1.
typedef struct {
    uint8_t origin[MS_WIRE_ID_BYTES];
    uint64_t incarnation;
    uint64_t from_seq;
    uint64_t to_seq; // inclusive
    uint32_t max_records;
} ms_wire_range_request_t;

//  One record inside a block. kind is opaque to the wire layer (see
//  ms_wire_kind_t); an unknown kind is valid and kept untouched.
typedef struct {
    uint64_t seq;         // first_seq + index in the block
    uint32_t kind;        // ms_wire_kind_t or a newer one
    uint8_t *payload;     // NULL when payload_bytes is 0
    size_t payload_bytes; // <= MS_WIRE_MAX_PAYLOAD_BYTES
} ms_wire_record_t;

//  BLOCK: one group commit of one origin's records. Decoder: first_seq
//  >= 1, 1..MS_WIRE_BLOCK_MAX_RECORDS records, records[i].seq ==
//  first_seq + i, no seq overflow, kind >= 1, signature <=
//  MS_WIRE_MAX_SIGNATURE_BYTES (empty until the trust issue).
typedef struct {
    uint8_t origin[MS_WIRE_ID_BYTES];
    uint64_t incarnation;
    uint64_t first_seq;
    ms_wire_record_t *records; // n_records entries
    size_t n_records;
    uint8_t *signature; // signature_bytes bytes
    size_t signature_bytes;
} ms_wire_block_t;

//  BLOB_REQUEST: bytes offset..offset+length-1 of the blob with this
//  hash. Decoder: 1 <= length <= MS_WIRE_BLOB_CHUNK_MAX_BYTES, no
//  overflow of offset + length.
typedef struct {
    uint8_t hash[MS_WIRE_ID_BYTES]; // BLAKE2b-256 of the whole blob
    uint64_t offset;                // bytes
    uint32_t length;                // bytes
} ms_wire_blob_request_t;

//  BLOB_CHUNK: part of a blob. Decoder: data_bytes <=
//  MS_WIRE_BLOB_CHUNK_MAX_BYTES, offset + data_bytes <= total.
typedef struct {
    uint8_t hash[MS_WIRE_ID_BYTES];
    uint64_t offset; // bytes, where data starts
    uint64_t total;  // size of the whole blob, bytes
    uint8_t *data;   // data_bytes bytes
    size_t data_bytes;
} ms_wire_blob_chunk_t;

//  BLOB_MISSING: the sender does not hold the blob.
typedef struct {
    uint8_t hash[MS_WIRE_ID_BYTES];
} ms_wire_blob_missing_t;

//  A peer in the view messages. Endpoint: "tcp://HOST:PORT", 1..256
//  characters (see ms_wire_endpoint_valid).
typedef struct {
    uint8_t node_id[MS_WIRE_ID_BYTES];
    char endpoint[MS_WIRE_ENDPOINT_MAX + 1]; // NUL-terminated
} ms_wire_peer_t;

//  HyParView (Leitao, Pereira, Rodrigues 2007) view messages.
//  JOIN {node_id, endpoint}; DISCONNECT {node_id} (endpoint "").
typedef struct {
    uint8_t node_id[MS_WIRE_ID_BYTES];
    char endpoint[MS_WIRE_ENDPOINT_MAX + 1]; // empty only in DISCONNECT
} ms_wire_join_t;

//  FORWARD_JOIN {node_id, endpoint, ttl}: the joining node, forwarded
//  along a random walk of ttl hops.
typedef struct {
    uint8_t node_id[MS_WIRE_ID_BYTES];
    char endpoint[MS_WIRE_ENDPOINT_MAX + 1];
    uint32_t ttl; // hops left
} ms_wire_forward_join_t;

//  NEIGHBOR {node_id, endpoint, high_priority}: ask to enter the
//  receiver's active view (high priority: the sender's view is empty).
typedef struct {
    uint8_t node_id[MS_WIRE_ID_BYTES];
    char endpoint[MS_WIRE_ENDPOINT_MAX + 1];
    bool high_priority;
} ms_wire_neighbor_t;

//  SHUFFLE {origin node_id, endpoint, ttl, peers}; SHUFFLE_REPLY {peers}
//  (node_id, endpoint, ttl unused: zero / ""). Decoder: n_peers <=
//  MS_WIRE_MAX_SHUFFLE_PEERS, every peer endpoint valid.
typedef struct {
    uint8_t node_id[MS_WIRE_ID_BYTES]; // origin of the shuffle
    char endpoint[MS_WIRE_ENDPOINT_MAX + 1];
    uint32_t ttl;          // hops left
    ms_wire_peer_t *peers; // n_peers entries
    size_t n_peers;
} ms_wire_shuffle_t;

//  I_AM {node_id}: answer to WHO_ARE_YOU (an open-pool --peer given
//  without a node id). WHO_ARE_YOU has no fields.
typedef struct {
    uint8_t node_id[MS_WIRE_ID_BYTES];
} ms_wire_i_am_t;

//  BLOCK_ACK: the sender holds the receiver's records of incarnation up to
//  seq (contiguous), and its own log was at own_seq of own_incarnation
//  when it said so (0: no record yet). Sent to the origin of a block
//  holding a claim once that block is merged (the claim settle rule of
//  node/actor/ms_node.c). Decoder: seq >= 1.
typedef struct {
    uint64_t incarnation;     // receiver's store incarnation
    uint64_t seq;             // highest contiguous seq of it held, >= 1
    uint64_t own_incarnation; // sender's store incarnation
    uint64_t own_seq;         // sender's highest own seq then (0: none)
} ms_wire_block_ack_t;

//  ITEM_DIGEST: the digest of the sender's set of authority items (hash
//  of its sorted item digests, node/mesh/ms_items.h) and how many it holds.
typedef struct {
    uint8_t digest[MS_WIRE_ID_BYTES];
    uint32_t n_items;
} ms_wire_item_digest_t;

//  ITEM_LIST: every item digest the sender holds. Decoder: at most
//  MS_WIRE_MAX_ITEM_DIGESTS, each exactly 32 bytes.
typedef struct {
    uint8_t (*digests)[MS_WIRE_ID_BYTES]; // n_digests entries
    size_t n_digests;
} ms_wire_item_list_t;

//  One authority item: its type byte and canonical encoding (opaque here).
typedef struct {
    uint8_t *bytes; // n_bytes bytes
    size_t n_bytes; // 1..MS_WIRE_MAX_ITEM_BYTES
} ms_wire_item_t;

//  ITEMS: authority items. Decoder: 1..MS_WIRE_MAX_ITEMS items, each
//  1..MS_WIRE_MAX_ITEM_BYTES bytes.
typedef struct {
    ms_wire_item_t *items; // n_items entries
    size_t n_items;
} ms_wire_items_t;

//  One frame. Exactly one member of the union is meaningful: the one
//  named by body. protocol is the version the frame is written in (this
//  build writes MS_PROTOCOL_VERSION); the decoder refuses 0 and leaves
//  other values to the mesh's negotiation (a HELLO from a newer peer
//  must still be readable).
typedef struct {
    uint32_t protocol;   // >= 1
    ms_wire_body_t body; // which member below
    union {
        ms_wire_hello_t hello;
        ms_wire_heartbeat_t heartbeat;
        ms_wire_vector_digest_t vector_digest;
        ms_wire_vector_t vector;
        ms_wire_range_request_t range_request;
        ms_wire_block_t block;
        ms_wire_blob_request_t blob_request;
        ms_wire_blob_chunk_t blob_chunk;
        ms_wire_blob_missing_t blob_missing;
        ms_wire_join_t join; // JOIN and DISCONNECT
        ms_wire_forward_join_t forward_join;
        ms_wire_neighbor_t neighbor;
        ms_wire_shuffle_t shuffle; // SHUFFLE and SHUFFLE_REPLY
        ms_wire_i_am_t i_am;       // I_AM (WHO_ARE_YOU: none)
        ms_wire_block_ack_t block_ack;
        ms_wire_item_digest_t item_digest;
        ms_wire_item_list_t item_list;
        ms_wire_items_t items;
    };
} ms_wire_envelope_t;

//  Encode env into a newly malloc'd buffer: *out (caller frees it with
//  free()) of *n bytes. env is only read. Returns MS_OK; MS_ERR_INVALID
//  when env breaks a field contract listed above (the decoder would
//  refuse it; body NONE or unknown included); MS_ERR_RANGE when the
//  encoding would exceed MS_MAX_FRAME_BYTES; MS_ERR_NOMEM. On failure
//  *out is NULL and *n 0.
int ms_wire_encode_envelope(const ms_wire_envelope_t *env, uint8_t **out,
                            size_t *n);

//  Decode one frame of n bytes (buf may be NULL when n is 0; it is only
//  read). Caller owns *out; free it with ms_wire_envelope_destroy().
//  Returns MS_OK; MS_ERR_PROTOCOL for anything malformed (over
//  MS_MAX_FRAME_BYTES, not protobuf, no or unknown body, a field out of
//  contract); MS_ERR_NOMEM. *out is NULL on failure.
int ms_wire_decode_envelope(const uint8_t *buf, size_t n,
                            ms_wire_envelope_t **out);

//  Free an envelope from ms_wire_decode_envelope (or one whose pointer
//  members are all NULL or malloc'd) and every member; NULL-safe; nulls
//  *self_p.
void ms_wire_envelope_destroy(ms_wire_envelope_t **self_p);

//  Short upper-case name of a body ("HELLO", "BLOCK", "?" when unknown),
//  for logs and /metrics labels. Static string.
const char *ms_wire_body_name(ms_wire_body_t body);

//  True when s is a valid endpoint to dial: "tcp://HOST:PORT", at most
//  MS_WIRE_ENDPOINT_MAX characters, HOST a name or IPv4 address (letters,
//  digits, '.', '-', '_') or a bracketed IPv6 address ("[::1]": hex
//  digits, ':', '.', and '%' plus letters/digits for a zone), PORT
//  1..65535 in decimal (1 to 5 digits). NULL gives false.
bool ms_wire_endpoint_valid(const char *s);

// --- record payloads -------------------------------------------------------

//  Record kinds (docs/POOL.md "Records"): the numbers are on the wire and
//  are never reused. A kind this build does not know is stored and
//  forwarded untouched; only its kind and bytes matter then.
typedef enum {
    MS_WIRE_KIND_SWEEP = 1,
    MS_WIRE_KIND_SWEEP_CONTROL = 2,
    MS_WIRE_KIND_DATASET = 3,
    MS_WIRE_KIND_CLAIM = 4,
    MS_WIRE_KIND_RELEASE = 5,
    MS_WIRE_KIND_COMMIT = 6, // commit then reveal
    MS_WIRE_KIND_RESULT = 7,
    MS_WIRE_KIND_FAILURE = 8,
    MS_WIRE_KIND_REEVALUATION = 9, // a verifier's recomputed metrics
    MS_WIRE_KIND_FRAGMENT = 10,    // a piece of a big logical record
} ms_wire_kind_t;

//  A dataset file a sweep uses, by content hash.
typedef struct {
    char role[MS_WIRE_NAME_MAX + 1]; // "train-images", "train-labels", ...
    char name[MS_WIRE_NAME_MAX + 1]; // dataset name ("fashion-mnist")
    uint64_t size;                   // bytes of the file
    uint8_t hash[MS_WIRE_ID_BYTES];  // BLAKE2b-256 of the file
} ms_wire_dataset_ref_t;

//  Kind 1, SWEEP: a submitted sweep. Decoder: spec non-empty UTF-8,
//  n_datasets <= MS_WIRE_MAX_DATASET_FILES, role and name non-empty.
//  The wire layer does not check that sweep_id is the hash of spec.
typedef struct {
    uint8_t sweep_id[MS_WIRE_ID_BYTES];
    char *spec; // canonical spec text (JSON)
    int32_t priority;
    ms_wire_dataset_ref_t *datasets; // n_datasets entries
    size_t n_datasets;
} ms_wire_sweep_t;

//  What a SWEEP_CONTROL does.
typedef enum {
    MS_WIRE_SWEEP_ACTION_CANCEL = 1,
    MS_WIRE_SWEEP_ACTION_PAUSE = 2,
    MS_WIRE_SWEEP_ACTION_RESUME = 3,
    MS_WIRE_SWEEP_ACTION_PRIORITY = 4, // set priority to .priority
    MS_WIRE_SWEEP_ACTION_REOPEN = 5,   // undo an earlier cancel
} ms_wire_sweep_action_t;

//  Kind 2, SWEEP_CONTROL. Decoder: action one of the above.
typedef struct {
    uint8_t sweep_id[MS_WIRE_ID_BYTES];
    ms_wire_sweep_action_t action;
    int32_t priority; // used by PRIORITY only
    uint64_t lamport; // logical time of the control; 0: none (old record)
} ms_wire_sweep_control_t;

//  A file of a dataset record.
typedef struct {
    char role[MS_WIRE_NAME_MAX + 1]; // "train-images", ...; non-empty
    uint64_t size;                   // bytes
    uint8_t hash[MS_WIRE_ID_BYTES];  // BLAKE2b-256 of the file
} ms_wire_dataset_file_t;

//  Kind 3, DATASET. Decoder: name non-empty, 1..MS_WIRE_MAX_DATASET_FILES
//  files, hash absent (empty) or 32 bytes.
typedef struct {
    char name[MS_WIRE_NAME_MAX + 1];
    ms_wire_dataset_file_t *files; // n_files entries
    size_t n_files;
    bool has_hash;                  // hash below is set (newer records)
    uint8_t hash[MS_WIRE_ID_BYTES]; // the dataset's content hash: what
                                    // a sweep names (DESIGN.md "Datasets")
} ms_wire_dataset_t;

//  Kind 4, CLAIM: a plain value (no heap members). Decoder: epoch >= 1.
typedef struct {
    uint8_t task_id[MS_WIRE_ID_BYTES];
    uint32_t slot;  // replica slot, 0-based
    uint32_t epoch; // >= 1
} ms_wire_claim_t;

//  Kind 5, RELEASE. Decoder: epoch >= 1, reason UTF-8 <=
//  MS_WIRE_REASON_MAX bytes (may be empty).
typedef struct {
    uint8_t task_id[MS_WIRE_ID_BYTES];
    uint32_t slot;
    uint32_t epoch;
    char *reason; // "done", "shutdown", "outranked", ...
} ms_wire_release_t;

//  Kind 6, COMMIT: a plain value (no heap members). Decoder: epoch >= 1,
//  commitment exactly 32 bytes (what it hashes: ms_store_payload.h
//  ms_store_payload_commitment).
typedef struct {
    uint8_t task_id[MS_WIRE_ID_BYTES];
    uint32_t slot;                        // replica slot, 0-based
    uint32_t epoch;                       // the claim epoch, >= 1
    uint8_t commitment[MS_WIRE_ID_BYTES]; // BLAKE2b-256
} ms_wire_commit_t;

//  Kind 7, RESULT. Decoder: epoch >= 1, row_json non-empty UTF-8 (not
//  parsed here), nonce absent (empty) or exactly 32 bytes.
typedef struct {
    uint8_t task_id[MS_WIRE_ID_BYTES];
    uint32_t slot;
    uint32_t epoch;
    char *row_json;                  // the result row, JSON text
    bool has_nonce;                  // a reveal: nonce below is set
    uint8_t nonce[MS_WIRE_ID_BYTES]; // what its COMMIT hashed
} ms_wire_result_t;

//  Failure classes (DESIGN.md "Work, claims and leases").
typedef enum {
    MS_WIRE_FAILURE_RESOURCE = 1, // the node could not run it
    MS_WIRE_FAILURE_TASK = 2,     // the task itself fails
} ms_wire_failure_class_t;

//  Kind 8, FAILURE. Decoder: epoch >= 1, failure_class one of the above,
//  reason UTF-8 <= MS_WIRE_REASON_MAX bytes.
typedef struct {
    uint8_t task_id[MS_WIRE_ID_BYTES];
    uint32_t slot;
    uint32_t epoch;
    ms_wire_failure_class_t failure_class; // "class" on the wire
    char *reason;
} ms_wire_failure_t;

//  What a re-evaluation found.
typedef enum {
    MS_WIRE_REEVAL_OK = 1,     // metrics recomputed
    MS_WIRE_REEVAL_FAILED = 2, // could not recompute (reason)
} ms_wire_reeval_status_t;

#define MS_WIRE_REEVAL_REASON_MAX 255 // bytes of a re-evaluation's reason

//  Kind 9, REEVALUATION: a plain value (no heap members). target is the
//  record hash of the result re-evaluated (its origin is the producer,
//  the record's own origin the verifier). Decoder: task_id and target 32
//  bytes, status one of the above, reason UTF-8 <=
//  MS_WIRE_REEVAL_REASON_MAX bytes. Metrics are any doubles (the
//  verdict refuses malformed ones); they are 0 in a FAILED one.
typedef struct {
    uint8_t task_id[MS_WIRE_ID_BYTES];
    uint8_t target[MS_WIRE_ID_BYTES];
    ms_wire_reeval_status_t status;
    double test_accuracy, test_loss; // recomputed on the test set
    double val_accuracy, val_loss;   // on the task's validation split
    char reason[MS_WIRE_REEVAL_REASON_MAX + 1]; // FAILED: why
} ms_wire_reevaluation_t;

//  How a fragmented record's stream is compressed.
typedef enum {
    MS_WIRE_COMPRESSION_NONE = 0,
    MS_WIRE_COMPRESSION_DEFLATE = 1, // zlib stream (RFC 1950/1951)
} ms_wire_compression_t;

//  Kind 10, FRAGMENT: bytes [offset, offset + data_len) of the stream of
//  one logical record of kind inner_kind (docs/POOL.md "Records"). The
//  stream is the logical payload (compression NONE, total_len ==
//  raw_len) or its zlib deflate stream; hash is BLAKE2b-256 of the
//  logical (uncompressed) payload. Decoder: inner_kind >= 1 and not
//  FRAGMENT, compression one of the above, 1 <= total_len, raw_len <=
//  MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES, 1 <= data_len, offset + data_len
//  <= total_len, hash 32 bytes. Consistency across the fragments of one
//  record is the store's to check.
typedef struct {
    uint32_t inner_kind;  // kind of the logical record
    uint64_t total_len;   // bytes of the whole (compressed) stream
    uint64_t raw_len;     // bytes of the logical payload
    uint64_t offset;      // where data starts in the stream
    uint32_t compression; // ms_wire_compression_t
    uint8_t *data;        // data_len bytes (owned when decoded)
    size_t data_len;
    uint8_t hash[MS_WIRE_ID_BYTES]; // BLAKE2b-256 of the logical payload
} ms_wire_fragment_t;

//  Payload codecs, one pair per kind. ms_wire_encode_X(x, &buf, &n):
//  buf malloc'd (caller frees with free()); MS_OK, MS_ERR_INVALID (x
//  breaks its contract), MS_ERR_RANGE (over MS_WIRE_MAX_PAYLOAD_BYTES),
//  MS_ERR_NOMEM; *out NULL and *n 0 on failure.
//  ms_wire_decode_X(buf, n, &x): MS_OK, MS_ERR_PROTOCOL (malformed, over
//  MS_WIRE_MAX_PAYLOAD_BYTES, field out of contract), MS_ERR_NOMEM;
//  caller owns *out (free it with ms_wire_X_destroy), NULL on failure.
//  CLAIM decodes into a caller struct (a plain value), left unchanged on
//  failure.
int ms_wire_encode_sweep(const ms_wire_sweep_t *sweep, uint8_t **out,
                         size_t *n);
int ms_wire_decode_sweep(const uint8_t *buf, size_t n, ms_wire_sweep_t **out);
//  Free a decoded sweep and its members; NULL-safe; nulls *self_p.
void ms_wire_sweep_destroy(ms_wire_sweep_t **self_p);
//  SWEEP codec for a payload the store carries in FRAGMENT records: as
//  above, but up to MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES (MS_ERR_RANGE /
//  MS_ERR_PROTOCOL over it). A record in a BLOCK still holds at most
//  MS_WIRE_MAX_PAYLOAD_BYTES.
int ms_wire_encode_sweep_big(const ms_wire_sweep_t *sweep, uint8_t **out,
                             size_t *n);
int ms_wire_decode_sweep_big(const uint8_t *buf, size_t n,
                             ms_wire_sweep_t **out);

//  SWEEP_CONTROL codec (see above).
int ms_wire_encode_sweep_control(const ms_wire_sweep_control_t *control,
                                 uint8_t **out, size_t *n);
int ms_wire_decode_sweep_control(const uint8_t *buf, size_t n,
                                 ms_wire_sweep_control_t **out);
//  Free a decoded sweep control; NULL-safe; nulls *self_p.
void ms_wire_sweep_control_destroy(ms_wire_sweep_control_t **self_p);

//  DATASET codec (see above).
int ms_wire_encode_dataset(const ms_wire_dataset_t *dataset, uint8_t **out,
                           size_t *n);
int ms_wire_decode_dataset(const uint8_t *buf, size_t n,
                           ms_wire_dataset_t **out);
//  Free a decoded dataset and its files; NULL-safe; nulls *self_p.
void ms_wire_dataset_destroy(ms_wire_dataset_t **self_p);

//  CLAIM codec (see above; decodes into *out, no destroy needed).
int ms_wire_encode_claim(const ms_wire_claim_t *claim, uint8_t **out,
                         size_t *n);
int ms_wire_decode_claim(const uint8_t *buf, size_t n, ms_wire_claim_t *out);

//  RELEASE codec (see above).
int ms_wire_encode_release(const ms_wire_release_t *release, uint8_t **out,
                           size_t *n);
int ms_wire_decode_release(const uint8_t *buf, size_t n,
                           ms_wire_release_t **out);
//  Free a decoded release; NULL-safe; nulls *self_p.
void ms_wire_release_destroy(ms_wire_release_t **self_p);

//  COMMIT codec (see above; decodes into *out, left unchanged on
//  failure, no destroy needed).
int ms_wire_encode_commit(const ms_wire_commit_t *commit, uint8_t **out,
                          size_t *n);
int ms_wire_decode_commit(const uint8_t *buf, size_t n, ms_wire_commit_t *out);

//  RESULT codec (see above).
int ms_wire_encode_result(const ms_wire_result_t *result, uint8_t **out,
                          size_t *n);
int ms_wire_decode_result(const uint8_t *buf, size_t n, ms_wire_result_t **out);
//  RESULT codec for a payload the store may carry in FRAGMENT records (a
//  row with a long curve): as above, but up to
//  MS_WIRE_MAX_RESULT_PAYLOAD_BYTES; encode gives MS_ERR_RANGE for a row
//  (or payload) over it, decode MS_ERR_PROTOCOL. A record in a BLOCK
//  still holds at most MS_WIRE_MAX_PAYLOAD_BYTES.
int ms_wire_encode_result_big(const ms_wire_result_t *result, uint8_t **out,
                              size_t *n);
int ms_wire_decode_result_big(const uint8_t *buf, size_t n,
                              ms_wire_result_t **out);
//  Free a decoded result; NULL-safe; nulls *self_p.
void ms_wire_result_destroy(ms_wire_result_t **self_p);

//  FAILURE codec (see above).
int ms_wire_encode_failure(const ms_wire_failure_t *failure, uint8_t **out,
                           size_t *n);
int ms_wire_decode_failure(const uint8_t *buf, size_t n,
                           ms_wire_failure_t **out);
//  Free a decoded failure; NULL-safe; nulls *self_p.
void ms_wire_failure_destroy(ms_wire_failure_t **self_p);

//  REEVALUATION codec (see above; decodes into *out, left unchanged on
//  failure, no destroy needed).
int ms_wire_encode_reevaluation(const ms_wire_reevaluation_t *reeval,
                                uint8_t **out, size_t *n);
int ms_wire_decode_reevaluation(const uint8_t *buf, size_t n,
                                ms_wire_reevaluation_t *out);

//  FRAGMENT codec (see above). encode: MS_ERR_INVALID for a fragment out
//  of contract; data is copied. decode: caller owns *out (free with
//  ms_wire_fragment_destroy).
int ms_wire_encode_fragment(const ms_wire_fragment_t *fragment, uint8_t **out,
                            size_t *n);
int ms_wire_decode_fragment(const uint8_t *buf, size_t n,
                            ms_wire_fragment_t **out);
//  Free a decoded fragment and its data; NULL-safe; nulls *self_p.
void ms_wire_fragment_destroy(ms_wire_fragment_t **self_p);

#endif
