/*  =========================================================================
    ms_store - the node's LMDB store: record log, sweeps, tasks, results

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One LMDB environment in the node's store/ directory (DESIGN.md "Store
    (LMDB)"). Every write goes through one writer thread that applies all
    queued writes in one write transaction (group commit) with sync on, so
    a write call returns only once its transaction is durable, and a node
    killed with SIGKILL reopens with every committed write intact and never
    a half-written record. Reads use their own read transactions from any
    thread and never block the writer. The map grows (doubling) when full.

    Since the pool issue the store also holds the record log (records by
    (origin, incarnation, seq) in blocks, version vectors, evidence of
    equivocation; see "Record log" below) and every derived table (sweeps,
    tasks, results, claims, failures, datasets) is a pure function of the
    record set. The only writes outside the log are the node's display
    of its own runs (ms_store_set_task_state, ms_store_reset_claims).

    Ids (sweep, task, node) are 32 raw bytes (BLAKE2b-256 or an Ed25519
    public key). JSON values (spec, task config, result row) are stored as
    the text the caller gave; the store parses only to check a result row.

    Thread rule: one ms_store_t may be used from any number of threads at
    once (every function below is thread-safe), except ms_store_destroy.
    The store may also be opened by a second process at the same time (for
    example `meshsweep results --data-dir DIR`), read-only or read-write.

    Callbacks run inside a read transaction: the pointers they receive
    (JSON text, ids, structs) are borrowed and valid only until the callback
    returns. A callback may call the store's read functions (get, list,
    results); a write call from inside a callback is refused with
    MS_ERR_INVALID (it could wait on a map resize that waits for the
    callback's own read transaction): collect what to write, write after.
    Keep callbacks quick (copy the row out; do not wait on a network peer
    inside one): the rare map resize waits until this process has no read
    transaction open, and writes wait for the resize; an open read also
    keeps LMDB from reusing pages. Page with max_rows for slow consumers.
    Return 0 from a callback to go on; any other value stops the iteration
    and is returned by the iterating function as it is (so use a positive
    value or an MS_ERR_ code).
*/
#ifndef MS_STORE_H
#define MS_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

typedef struct ms_store ms_store_t;

#define MS_STORE_ID_BYTES 32 // sweep, task and node ids: raw bytes
#define MS_DEFAULT_STORE_MAP_SIZE ((uint64_t) 64 << 30) // 64 GiB
#define MS_DEFAULT_STORE_MAX_READERS 126                // LMDB's own default
#define MS_DEFAULT_STORE_MAX_BATCH 1024 // writes per group commit
#define MS_STORE_INDEX_END UINT32_MAX   // "no more tasks" in a page cursor

//  Task states (DESIGN.md "States"). The numeric values are stored on disk:
//  never reorder them.
typedef enum {
    MS_TASK_PENDING = 0,
    MS_TASK_CLAIMED = 1,
    MS_TASK_RUNNING = 2,
    MS_TASK_DONE = 3,
    MS_TASK_FAILED = 4,
    MS_TASK_CANCELLED = 5,
} ms_task_state_t;
#define MS_TASK_N_STATES 6

//  Sweep states (DESIGN.md "States"). Stored on disk: never reorder.
typedef enum {
    MS_SWEEP_ACTIVE = 0,
    MS_SWEEP_PAUSED = 1,
    MS_SWEEP_CANCELLED = 2,
    MS_SWEEP_DONE = 3,
} ms_sweep_state_t;
#define MS_SWEEP_N_STATES 4

//  Options for ms_store_open. Fill with ms_store_options_default() first.
typedef struct {
    uint64_t map_size_bytes; // initial map size; grows by doubling when full
    unsigned max_readers;    // LMDB reader table slots (used when the
                             // environment's lock file is created)
    unsigned max_batch;      // most queued writes applied in one commit
    bool read_only;          // open an existing store for reading only
    // Test hooks; leave at their defaults outside tests.
    uint32_t fs_type;       // 0: statfs the dir; else pretend f_type is
                            // this (also env MESHSWEEP_TEST_FSTYPE=0x6969)
    bool skip_reader_check; // do not clear stale readers at open
} ms_store_options_t;

//  One task. Returned by ms_store_get_task (caller owns it; free with
//  ms_store_task_destroy) and passed to task callbacks (borrowed, valid
//  during the callback only).
typedef struct {
    uint8_t task_id[MS_STORE_ID_BYTES];
    uint8_t sweep_id[MS_STORE_ID_BYTES];
    uint32_t index; // position in the sweep's task list, from 0
    ms_task_state_t state;
    uint32_t attempts;     // store claims of the removed issue-2 scheduler
                           // (0 since records)
    int64_t updated_at_ms; // wall clock, ms since the Unix epoch
    uint8_t holder[MS_STORE_ID_BYTES]; // node running it; zero when none
    const char *config_json;           // canonical config JSON, NUL-terminated
    size_t config_len;                 // bytes in config_json, without the NUL
    const char *error; // last error ("" when none), NUL-terminated
} ms_store_task_t;

//  One sweep with its state and task counts. Returned by ms_store_get_sweep
//  (caller owns it; free with ms_store_sweep_destroy) and passed to
//  ms_store_list_sweeps callbacks (borrowed).
typedef struct {
    uint8_t sweep_id[MS_STORE_ID_BYTES];
    ms_sweep_state_t state;
    int32_t priority;                  // higher is served first; default 0
    uint64_t n_tasks;                  // tasks in the sweep
    uint64_t counts[MS_TASK_N_STATES]; // tasks per ms_task_state_t
    int64_t created_at_ms;             // wall clock, ms since the Unix epoch
    int64_t updated_at_ms;             // last state or count change
    const char *spec_json; // canonical expanded spec, NUL-terminated
    size_t spec_len;       // bytes in spec_json, without the NUL
} ms_store_sweep_t;

//  One task of a sweep: its id and canonical config JSON (ms_store_payload's
//  sweep payload, as decoded from a sweep record).
typedef struct {
    const uint8_t *task_id;  // MS_STORE_ID_BYTES bytes
    const char *config_json; // canonical config JSON text
    size_t config_len;       // bytes in config_json
} ms_store_task_input_t;

//  Counters for /metrics and tests. Totals since ms_store_open.
typedef struct {
    uint64_t map_size_bytes;      // current map size
    uint64_t n_commits;           // write transactions committed
    uint64_t n_writes;            // write calls applied (ok or refused)
    uint64_t max_batch;           // most writes in one commit so far
    uint64_t n_map_grows;         // map doublings after MAP_FULL
    uint64_t n_stale_readers;     // dead readers cleared (mdb_reader_check)
    uint64_t n_commits_read_open; // commits done while this process had
                                  // at least one read transaction open
    uint64_t n_reads_open;        // read transactions open right now
    uint64_t n_verdict_evals;     // tasks evaluated by the verdict engine
                                  // (as of the last commit; a quarantine
                                  // flip evaluates the node's tasks again)
    // Record log (held in the store, not since open; 0 when unreadable).
    uint64_t n_records;       // records held (all origins)
    uint64_t n_blocks;        // blocks held
    uint64_t n_equivocations; // conflicting records kept as evidence
    uint64_t n_equivocating;  // origins marked equivocating
    uint64_t n_bad_fragments; // fragment sets stored but not applied
                              // (gap, wrong hash, inflate error, ...)
} ms_store_stats_t;

//  Row callback: one result row's JSON text (NUL-terminated, n bytes
//  without the NUL), borrowed during the call.
typedef int (*ms_store_row_fn)(void *arg, const char *json, size_t n);

//  Replica callback: one counted result row's JSON text (NUL-terminated,
//  n bytes without the NUL), borrowed during the call; extra is true for
//  an extra replica (a counted result that fills none of the task's
//  slots: not a row of the results table).
typedef int (*ms_store_replica_fn)(void *arg, const char *json, size_t n,
                                   bool extra);

//  Task callback: one task, borrowed during the call.
typedef int (*ms_store_task_fn)(void *arg, const ms_store_task_t *task);

//  Sweep callback: one sweep, borrowed during the call.
typedef int (*ms_store_sweep_fn)(void *arg, const ms_store_sweep_t *sweep);

//  Fill opts with the defaults: map 64 GiB, 126 readers, batches of 1024,
//  read-write, no test hooks.
void ms_store_options_default(ms_store_options_t *opts);

//  Open (create if missing, mode 0700, parents too) the store in DIR (the
//  data dir's store/ path). Creates the named databases and, for a new
//  store, its incarnation (64 random bits, kept for the store's life).
//  Clears stale readers, and starts the writer thread (not in read-only).
//  opts may be NULL for the defaults. On success *out owns the store
//  (free with ms_store_destroy); on failure *out is NULL and diag (if not
//  NULL) says where and why.
//  Errors: MS_ERR_STORE_NFS the dir is on NFS/SMB/CIFS; MS_ERR_NOTFOUND
//  read_only and no store in DIR; MS_ERR_IO the dir cannot be created;
//  MS_ERR_STORE any LMDB failure (mdb_strerror text in diag);
//  MS_ERR_NOMEM.
int ms_store_open(ms_store_t **out, const char *dir,
                  const ms_store_options_t *opts, ms_diag_t *diag);

//  Finish the queued writes, stop the writer thread, close the
//  environment, free the store and set *self_p to NULL. NULL-safe. No
//  other thread may use the store during or after the call.
void ms_store_destroy(ms_store_t **self_p);

//  The store's incarnation: 64 random bits made when the store was
//  created; records this node originates are keyed (origin, incarnation,
//  seq), so a wiped store never reuses a key.
uint64_t ms_store_incarnation(ms_store_t *self);

//  Copy the store's counters into *out.
void ms_store_stats(ms_store_t *self, ms_store_stats_t *out);

//  Get a sweep: spec text, state, counts of tasks by state. Caller owns
//  *out (free with ms_store_sweep_destroy).
//  Errors: MS_ERR_NOTFOUND, MS_ERR_NOMEM, MS_ERR_STORE.
int ms_store_get_sweep(ms_store_t *self,
                       const uint8_t sweep_id[MS_STORE_ID_BYTES],
                       ms_store_sweep_t **out);

//  A number that changes whenever what SWEEP_ID's result rows, their
//  verdicts and its analysis derive from may have changed (results,
//  counted flags, verdicts, tasks entering or leaving done and failed,
//  operator names, quarantines), counted by this process's writer after
//  each commit (ms_store.c "Sweep generations"). Equal numbers from the
//  same open store mean nothing of that changed between the two calls,
//  provided the first was taken before the rows it labels were read.
//  0 means unknown (another process wrote the store since this
//  process's writer last committed): do not cache on it. Other sweeps
//  may bump it too (a false change, never a missed one). Lock-free for
//  LMDB (one env info and a mutex); any thread.
uint64_t ms_store_sweep_generation(ms_store_t *self,
                                   const uint8_t sweep_id[MS_STORE_ID_BYTES]);

//  Free a sweep from ms_store_get_sweep; NULL-safe; nulls *sweep_p.
void ms_store_sweep_destroy(ms_store_sweep_t **sweep_p);

//  The payload of the dataset record stored under a dataset content hash
//  (DESIGN.md "Datasets"; decode it with ms_store_payload_decode, kind
//  MS_RECORD_DATASET): *payload malloc'd (caller frees), *len bytes.
//  Errors: MS_ERR_NOTFOUND (no such record yet), MS_ERR_NOMEM,
//  MS_ERR_STORE. *payload is NULL on failure.
int ms_store_get_dataset(ms_store_t *self,
                         const uint8_t hash[MS_STORE_ID_BYTES],
                         uint8_t **payload, size_t *len);

//  Call fn for every sweep, in sweep id order.
//  Errors: MS_ERR_STORE, or fn's nonzero return.
int ms_store_list_sweeps(ms_store_t *self, ms_store_sweep_fn fn, void *arg);

//  Dataset callback: a dataset record's hash and payload (as
//  ms_store_get_dataset gives it), borrowed during the call.
typedef int (*ms_store_dataset_fn)(void *arg, const uint8_t *hash,
                                   const uint8_t *payload, size_t len);

//  Call fn for every dataset record held, in hash order (one read txn).
//  Errors: MS_ERR_STORE, or fn's nonzero return.
int ms_store_list_datasets(ms_store_t *self, ms_store_dataset_fn fn, void *arg);

//  Get a task. Caller owns *out (free with ms_store_task_destroy).
//  Errors: MS_ERR_NOTFOUND, MS_ERR_NOMEM, MS_ERR_STORE.
int ms_store_get_task(ms_store_t *self,
                      const uint8_t task_id[MS_STORE_ID_BYTES],
                      ms_store_task_t **out);

//  Free a task from ms_store_get_task; NULL-safe; nulls *task_p.
void ms_store_task_destroy(ms_store_task_t **task_p);

//  Call fn for every task of a sweep, in index order.
//  Errors: MS_ERR_NOTFOUND no such sweep, MS_ERR_STORE, fn's return.
int ms_store_tasks_by_sweep(ms_store_t *self,
                            const uint8_t sweep_id[MS_STORE_ID_BYTES],
                            ms_store_task_fn fn, void *arg);

//  Move a task to STATE (any state but done: done comes from results), a
//  local display state outside the record log. REASON (may be NULL)
//  becomes the last error when not NULL. NODE_ID (may be NULL: keep the
//  current one) becomes the holder for claimed/running; other states
//  clear the holder. Uses: running here, back to pending when a run ends
//  without a result, the reason kept beside a derived failed state.
//  Errors: MS_ERR_NOTFOUND no such task; MS_ERR_CONFLICT the task is done;
//  MS_ERR_INVALID state is MS_TASK_DONE or out of range;
//  MS_ERR_UNSUPPORTED read-only; MS_ERR_STORE_FULL; MS_ERR_STORE.
int ms_store_set_task_state(ms_store_t *self,
                            const uint8_t task_id[MS_STORE_ID_BYTES],
                            ms_task_state_t state, const uint8_t *node_id,
                            const char *reason);

//  After a restart: move every task left claimed or running by NODE_ID
//  back to pending (attempts kept). *n_reset (if not NULL) gets the count.
//  Errors: MS_ERR_UNSUPPORTED read-only; MS_ERR_STORE_FULL; MS_ERR_STORE.
int ms_store_reset_claims(ms_store_t *self,
                          const uint8_t node_id[MS_STORE_ID_BYTES],
                          size_t *n_reset);

//  Call fn for the result rows of a sweep, in task index order (rows of
//  one task in node id order), from task index FIRST_INDEX on. When
//  MAX_ROWS > 0, stops at the end of the task whose rows reach MAX_ROWS
//  (a page); *next_index (if not NULL) gets the index to pass next time,
//  or MS_STORE_INDEX_END when every task was visited. One read txn: the
//  page is a consistent snapshot; rows are never all in memory at once.
//  Errors: MS_ERR_NOTFOUND no such sweep; MS_ERR_STORE; fn's return.
int ms_store_results_by_sweep(ms_store_t *self,
                              const uint8_t sweep_id[MS_STORE_ID_BYTES],
                              uint32_t first_index, size_t max_rows,
                              ms_store_row_fn fn, void *arg,
                              uint32_t *next_index);

//  Call fn for every result row of one task, in node id order.
//  Errors: MS_ERR_STORE; fn's return. A task with no rows is MS_OK.
int ms_store_results_by_task(ms_store_t *self,
                             const uint8_t task_id[MS_STORE_ID_BYTES],
                             ms_store_row_fn fn, void *arg);

//  ==========================================================================
//  Record log (docs/POOL.md "Records", DESIGN.md "Records and
//  anti-entropy"). Every record that lands, appended here or merged from a
//  peer, is stored under (origin, incarnation, seq) and applied to the
//  derived tables (sweeps, tasks, results, claims, failures, datasets) in
//  the same transaction by one pure function per kind, so two stores
//  holding the same record set have the same derived state whatever the
//  arrival order (ms_store_state_digest compares them). Payloads are the
//  wire payloads of proto/ms_wire.h, read through ms_store_payload.h.
//  ==========================================================================

#define MS_RECORD_MAX_BLOCK 64                 // records in one block
#define MS_STORE_MAX_APPEND_RECORDS 1024       // records in one append_many
#define MS_RECORD_MAX_PAYLOAD_BYTES (8u << 20) // one record's payload
#define MS_RECORD_MAX_SIG_BYTES 1024           // block signature bytes
//  A payload given to ms_store_append* over this many bytes is carried in
//  FRAGMENT records (see "Fragments" below); each fragment's payload then
//  fits the wire's 64 KiB record limit (MS_WIRE_MAX_PAYLOAD_BYTES).
#define MS_STORE_FRAGMENT_BYTES (60u << 10)
//  One logical payload at most (MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES): the
//  bound of ms_store_append*, of a fragment set's compressed stream and
//  of its inflated payload.
#define MS_STORE_MAX_LOGICAL_BYTES (256u << 20)

//  Record kinds: numbers are on the wire and on disk; never reuse one. A
//  kind this node does not know is stored and served, not applied.
typedef enum {
    MS_RECORD_SWEEP = 1,
    MS_RECORD_SWEEP_CONTROL = 2,
    MS_RECORD_DATASET = 3,
    MS_RECORD_CLAIM = 4,
    MS_RECORD_RELEASE = 5,
    MS_RECORD_COMMIT = 6,
    MS_RECORD_RESULT = 7,
    MS_RECORD_FAILURE = 8,
    MS_RECORD_REEVALUATION = 9,
    MS_RECORD_FRAGMENT = 10, // a piece of a big logical record (below)
} ms_record_kind_t;

//  Fragments. A logical record whose payload is over
//  MS_STORE_FRAGMENT_BYTES (a SWEEP lists every task config) is stored
//  by ms_store_append* as consecutive FRAGMENT records of this node, in
//  one transaction (several blocks of <= 64 records when needed): the
//  payload is compressed with zlib (deflate, level 6; kept raw when that
//  does not shrink it) and the stream cut into pieces of
//  MS_STORE_FRAGMENT_BYTES, each a FRAGMENT payload (proto/ms_wire.h:
//  inner kind, stream and raw lengths, offset, compression, bytes,
//  BLAKE2b-256 of the logical payload). One that compresses below the
//  threshold is ONE fragment (offset 0). The logical record's key is its
//  first fragment's key; it is applied (as a record of the inner kind)
//  when its last fragment is stored, appended or merged: the store reads
//  the earlier fragments back, checks offsets, lengths and the hash and
//  inflates within raw_len. An inconsistent set is stored (the fragments
//  are records like any other: read_blocks serves them, merge keeps
//  them) but not applied, counted in n_bad_fragments and logged once.

//  A record's key: origin node id, the origin store's incarnation, and
//  its seq (from 1 per (origin, incarnation)).
typedef struct {
    uint8_t origin[MS_STORE_ID_BYTES];
    uint64_t incarnation;
    uint64_t seq;
} ms_record_key_t;

//  One record; payload borrowed (from the caller or the map).
typedef struct {
    ms_record_key_t key;
    uint32_t kind;          // ms_record_kind_t, or a kind not known here
    const uint8_t *payload; // payload bytes, borrowed
    size_t payload_len;     // bytes in payload
} ms_record_t;

//  Outcome of ms_store_merge_block.
typedef struct {
    size_t n_new;       // records stored and applied now
    size_t n_duplicate; // records already held, byte for byte the same
    size_t n_conflict;  // records held with other bytes (evidence kept)
    bool equivocation;  // n_conflict > 0: the origin is now marked
    uint64_t held;      // highest contiguous seq held after the merge
} ms_store_merge_result_t;

//  One claim row of the derived claims table (task, slot, epoch, node),
//  passed borrowed to ms_store_claims_by_task callbacks.
typedef struct {
    uint8_t task_id[MS_STORE_ID_BYTES];
    uint32_t slot;                      // replica slot, from 0
    uint64_t epoch;                     // claim epoch, from 1
    uint8_t node_id[MS_STORE_ID_BYTES]; // claimant (the record's origin)
    bool claimed;                       // a claim record is held (a release may
                  // arrive first: then false until it does)
    bool released;               // a release record for it is held
    uint32_t reason;             // release reason (ms_store_payload.h codes)
    ms_record_key_t claim_key;   // the claim record (lowest key if several)
    ms_record_key_t release_key; // the release record (zero when none)
} ms_store_claim_t;

//  Version vector callback: one (origin, incarnation) with its highest
//  contiguous seq held. origin borrowed during the call.
typedef int (*ms_store_vector_fn)(void *arg, const uint8_t *origin,
                                  uint64_t incarnation, uint64_t seq);

//  Block callback: one stored block, records first_seq .. first_seq+n-1,
//  with each record's kind, payload and length (arrays of n) and the
//  block signature (NULL, 0 when none). Everything borrowed during the
//  call (pointers into the map).
typedef int (*ms_store_block_fn)(void *arg, const uint8_t *origin,
                                 uint64_t incarnation, uint64_t first_seq,
                                 size_t n, const uint32_t *kinds,
                                 const uint8_t *const *payloads,
                                 const size_t *lens, const uint8_t *signature,
                                 size_t sig_len);

//  Block signer: fill sig (room for MS_RECORD_MAX_SIG_BYTES) and
//  *sig_len with the signature of the block of records first_seq ..
//  first_seq+n-1 of (origin, incarnation), their kinds, payloads and
//  lengths (arrays of n, borrowed during the call), or set *sig_len to 0
//  to leave the block unsigned. Returns MS_OK, or an error code that
//  fails the append that made the block (nothing of it is written).
//  Called in the store's writer thread, inside the write txn.
typedef int (*ms_store_sign_fn)(void *arg, const uint8_t *origin,
                                uint64_t incarnation, uint64_t first_seq,
                                size_t n, const uint32_t *kinds,
                                const uint8_t *const *payloads,
                                const size_t *lens, uint8_t *sig,
                                size_t *sig_len);

//  Sign every block that ms_store_append* makes from now on with fn (NULL:
//  blocks are stored unsigned, as before). A block that grows across
//  the appends of one group commit is signed again, whole, each time;
//  the stored signature is the last. Call it right after open, before
//  the first append; fn and arg must stay valid until the store is
//  destroyed, and fn must be safe to call from the writer thread.
//  Merged blocks keep the signature they came with.
void ms_store_set_signer(ms_store_t *self, ms_store_sign_fn fn, void *arg);

//  Tests only (the dishonest member, tests/integration/
//  ms_dishonest_node.c; a node never calls it): with UNCHECKED true,
//  ms_store_append* keeps a record of a known kind whose payload does not
//  decode (a result row that cannot be true: accuracy over 1, a null loss
//  with status ok) the way ms_store_merge_block keeps a peer's: in the
//  record log and its signed block, served to peers, not applied here,
//  instead of refusing the append with MS_ERR_INVALID. Safe to call from
//  any thread at any time (it takes effect at the next append).
void ms_store_set_unchecked_appends(ms_store_t *self, bool unchecked);

//  Claim callback: one claim row, borrowed during the call.
typedef int (*ms_store_claim_fn)(void *arg, const ms_store_claim_t *claim);

//  Append one record of THIS node: key (ORIGIN, ms_store_incarnation,
//  next seq), KIND and PAYLOAD (LEN bytes, copied). It is applied to the
//  derived tables in the same transaction and the call returns once it is
//  durable. Records of one origin appended in one group commit form one
//  block (up to MS_RECORD_MAX_BLOCK). A payload over
//  MS_STORE_FRAGMENT_BYTES is compressed and stored as FRAGMENT records
//  ("Fragments" above; the caller sees one record). *key_out (may be
//  NULL) gets the key (of the first fragment when fragmented).
//  Errors: MS_ERR_INVALID payload over MS_STORE_MAX_LOGICAL_BYTES, kind
//  MS_RECORD_FRAGMENT (the store makes those), or a known kind whose
//  payload does not decode (nothing stored); MS_ERR_UNSUPPORTED
//  read-only; MS_ERR_NOMEM; MS_ERR_STORE_FULL; MS_ERR_STORE.
int ms_store_append(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                    uint32_t kind, const void *payload, size_t len,
                    ms_record_key_t *key_out);

//  Append N records (1..MS_STORE_MAX_APPEND_RECORDS) of this node in one
//  transaction (one durable commit): kinds[i], payloads[i], lens[i]. Up
//  to MS_RECORD_MAX_BLOCK records form exactly one block of their own;
//  more (given, or made by fragments: a payload over
//  MS_STORE_FRAGMENT_BYTES becomes fragments as in ms_store_append) form
//  consecutive blocks of their own of MS_RECORD_MAX_BLOCK records (the
//  last one shorter). Several blocks in one commit cost fewer page writes
//  per record than one commit each (the pages above the leaves are
//  shared). keys_out (may be NULL) gets N keys (a fragmented record's
//  first fragment). All or nothing.
//  Errors: as ms_store_append; MS_ERR_INVALID n out of range.
int ms_store_append_many(ms_store_t *self,
                         const uint8_t origin[MS_STORE_ID_BYTES], size_t n,
                         const uint32_t kinds[], const void *const payloads[],
                         const size_t lens[], ms_record_key_t *keys_out);

//  Merge a block received from a peer: records first_seq .. first_seq+n-1
//  of (ORIGIN, INCARNATION), kinds/payloads/lens arrays of N
//  (1..MS_RECORD_MAX_BLOCK), SIGNATURE (may be NULL, sig_len 0; stored
//  as given, not checked here: the caller verifies it first). Records
//  already held are compared byte for byte: the same are skipped,
//  different ones are equivocation (the received record is kept in the evidence
//  table, the origin is marked equivocating). New records are stored exactly as
//  received (bytes, kinds, block boundaries), applied to the derived
//  tables (unknown kinds and payloads that do not decode: stored, not
//  applied) and the vector advances. *out (may be NULL) says what
//  happened. Returns once durable.
//  Errors: MS_ERR_RANGE first_seq > held + 1 (a gap: nothing stored, ask
//  for the gap); MS_ERR_INVALID n, first_seq 0, a payload or signature
//  over its limit; MS_ERR_UNSUPPORTED read-only; MS_ERR_STORE_FULL;
//  MS_ERR_STORE.
int ms_store_merge_block(ms_store_t *self,
                         const uint8_t origin[MS_STORE_ID_BYTES],
                         uint64_t incarnation, uint64_t first_seq, size_t n,
                         const uint32_t kinds[],
                         const uint8_t *const payloads[], const size_t lens[],
                         const uint8_t *signature, size_t sig_len,
                         ms_store_merge_result_t *out);

//  One block to merge with ms_store_merge_blocks: the arguments of
//  ms_store_merge_block, borrowed for the call.
typedef struct {
    const uint8_t *origin; // MS_STORE_ID_BYTES bytes
    uint64_t incarnation;
    uint64_t first_seq;
    size_t n;                       // records, 1..MS_RECORD_MAX_BLOCK
    const uint32_t *kinds;          // n kinds
    const uint8_t *const *payloads; // n payloads
    const size_t *lens;             // n payload lengths
    const uint8_t *signature;       // or NULL
    size_t sig_len;                 // bytes in signature
} ms_store_block_t;

//  Merge N_BLOCKS blocks as ms_store_merge_block does, in ONE write
//  transaction and one durable commit (catch-up: one fsync per batch, not
//  per block; the blocks of one call are never split across commits,
//  whatever max_batch says). Applied in array order, so a block may fill
//  the gap below the next one. A refused block (malformed, above a gap,
//  conflicting) writes nothing and the others go on; a block that fails
//  the transaction (I/O) makes the writer redo the blocks one per
//  transaction, so the good ones still land. rcs (may be NULL) gets each
//  block's status, outs (may be NULL) each outcome. The call returns once
//  the commit is durable. Returns MS_OK when every block merged, else the
//  first block's error (the other blocks are still merged). When rcs is
//  left untouched (the call refused as a whole: NOMEM, read-only, a write
//  inside a read callback), nothing was merged.
//  Errors: as ms_store_merge_block; MS_ERR_NOMEM.
int ms_store_merge_blocks(ms_store_t *self, const ms_store_block_t *blocks,
                          size_t n_blocks, int *rcs,
                          ms_store_merge_result_t *outs);

//  Call fn for every vector entry (origin, incarnation, highest
//  contiguous seq held), in key order (origin, then incarnation).
//  Errors: MS_ERR_STORE; fn's return.
int ms_store_vector(ms_store_t *self, ms_store_vector_fn fn, void *arg);

//  Digest of the version vector: BLAKE2b-256 over the entries in key
//  order, each origin (32) || incarnation (8, big-endian) || seq (8,
//  big-endian); *n_entries (may be NULL) gets the entry count. Cached:
//  recomputed only after a commit that changed the vector (this process's
//  commits; another process's writes are seen at the next own commit).
//  Errors: MS_ERR_STORE.
int ms_store_vector_digest(ms_store_t *self, uint8_t digest[32],
                           uint64_t *n_entries);

//  Highest contiguous seq held of (ORIGIN, INCARNATION) into *seq (0 when
//  none). Errors: MS_ERR_STORE.
int ms_store_held(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                  uint64_t incarnation, uint64_t *seq);

//  Call fn for each stored block of (ORIGIN, INCARNATION) that overlaps
//  seqs FROM_SEQ..TO_SEQ (whole blocks, so the first may start before
//  FROM_SEQ and the last end after TO_SEQ), in seq order. When
//  MAX_RECORDS > 0, stops after the block that reaches MAX_RECORDS
//  records (at least one block is given). One read txn.
//  Errors: MS_ERR_STORE (also a block whose records are missing); fn's
//  return. No block in the range is MS_OK.
int ms_store_read_blocks(ms_store_t *self,
                         const uint8_t origin[MS_STORE_ID_BYTES],
                         uint64_t incarnation, uint64_t from_seq,
                         uint64_t to_seq, size_t max_records,
                         ms_store_block_fn fn, void *arg);

//  *out = true when ORIGIN has been seen equivocating (two records under
//  one key). Errors: MS_ERR_STORE.
int ms_store_equivocating(ms_store_t *self,
                          const uint8_t origin[MS_STORE_ID_BYTES], bool *out);

//  Roles (DESIGN.md "Work, claims and leases"): sweeps and sweep-control
//  records come only from members with the `submit` role. Say whether
//  NODE_ID may submit (default: yes, the open pool rule; a node with an
//  authority says no for every member whose certificate lacks `submit`
//  before it merges that member's blocks). A sweep or sweep-control
//  record of a node that may not is stored (and served: stores converge)
//  but not applied. Records applied before a change are not re-derived.
//  Thread: any. Errors: MS_ERR_NOMEM.
int ms_store_set_may_submit(ms_store_t *self,
                            const uint8_t node_id[MS_STORE_ID_BYTES], bool may);

//  How many sweep and sweep-control records this process stored without
//  applying them (their origin may not submit). Thread: any.
uint64_t ms_store_ignored_no_role(ms_store_t *self);

//  Set the member count the failure rule uses: a task ends failed after
//  task-class failures from min(3, n_members) distinct nodes (DESIGN.md
//  "Work, claims and leases"; nodes stand for operators in an open pool).
//  Re-derives the tasks that have failures. Default 3 (not stored: the
//  node sets it at start and when its view changes).
//  Errors: MS_ERR_INVALID n_members 0; MS_ERR_UNSUPPORTED read-only;
//  MS_ERR_STORE_FULL; MS_ERR_STORE.
int ms_store_set_member_count(ms_store_t *self, uint32_t n_members);

//  A revocation's cut, as the store applies it (DESIGN.md "Records and
//  anti-entropy"): `all`, or per incarnation of the origin the highest
//  seq that still counts. Records above it stay stored (and are served)
//  but are ignored for claims, results and failures.
#define MS_STORE_MAX_CUT 64          // incarnations in a cut
#define MS_STORE_MAX_ITEM_BYTES 4096 // one authority item
typedef struct {
    bool all; // nothing of the origin counts
    size_t n; // entries below (when !all), 1..MS_STORE_MAX_CUT
    struct {
        uint64_t incarnation; // store incarnation of the origin
        uint64_t seq;         // highest seq counted
    } upto[MS_STORE_MAX_CUT];
} ms_store_cut_t;

//  Keep an authority item (node/mesh/ms_items.h; checked by the caller) under
//  its digest, durably; grow-only (an item held already is MS_OK with
//  *added false). For a revocation, revoked is its subject and cut its
//  cut (NULL: all): in the same commit the subject's cut becomes the
//  intersection with any earlier one, its counted results and failures
//  are chosen again and the tasks they touch re-derived (results above
//  the cut leave the results table; claims above it are no longer listed
//  by ms_store_claims_by_task). revoked NULL: any other item. *added (may
//  be NULL) says whether it was new. Errors: MS_ERR_INVALID (n over
//  MS_STORE_MAX_ITEM_BYTES); MS_ERR_UNSUPPORTED read-only;
//  MS_ERR_STORE_FULL; MS_ERR_STORE.
int ms_store_put_item(ms_store_t *self, const uint8_t digest[MS_STORE_ID_BYTES],
                      const uint8_t *bytes, size_t n,
                      const uint8_t revoked[MS_STORE_ID_BYTES],
                      const ms_store_cut_t *cut, bool *added);

//  Keep a quarantine clear (an authority item, checked by the caller)
//  as ms_store_put_item does, and apply it in the same commit (DESIGN.md
//  "Verification"): the stratum-1 strikes of SUBJECT's results inside
//  CUT (per incarnation, seq <= upto.seq; a list, never `all`) are
//  forgiven, now and for results that arrive later, so its quarantine
//  lifts when too few strikes are left and the verdicts of the tasks it
//  has results in are derived again. Strikes of its results above the
//  cut count against it. Several clears of one subject forgive the union
//  of their cuts, whatever their order and that of the results. An item
//  held already changes nothing (*added false). Errors: MS_ERR_INVALID
//  (cut NULL, `all`, empty or over MS_STORE_MAX_CUT); as
//  ms_store_put_item.
int ms_store_put_clear(ms_store_t *self,
                       const uint8_t digest[MS_STORE_ID_BYTES],
                       const uint8_t *bytes, size_t n,
                       const uint8_t subject[MS_STORE_ID_BYTES],
                       const ms_store_cut_t *cut, bool *added);

//  Called with each authority item: its digest and bytes, borrowed for the
//  call. Non-zero stops the walk and is returned.
typedef int (*ms_store_item_fn)(void *arg, const uint8_t *digest,
                                const uint8_t *bytes, size_t n);

//  Call fn for every authority item, in digest order (what a node loads at
//  start). Errors: MS_ERR_STORE; fn's return.
int ms_store_items(ms_store_t *self, ms_store_item_fn fn, void *arg);

//  Call fn for every claim row of TASK_ID, in (slot, epoch, node) order.
//  A claim above its origin's revocation cut is left out.
//  Errors: MS_ERR_STORE; fn's return. No claims is MS_OK.
int ms_store_claims_by_task(ms_store_t *self,
                            const uint8_t task_id[MS_STORE_ID_BYTES],
                            ms_store_claim_fn fn, void *arg);

//  Call fn for every task that is not done, failed or cancelled, of the
//  active sweeps, by sweep priority (higher first), then submission time
//  (created_at: for sweeps from records it is not on the wire and is the
//  same for all, so in effect sweep id order), then task index.
//  Errors: MS_ERR_STORE; fn's return.
int ms_store_pending_tasks(ms_store_t *self, ms_store_task_fn fn, void *arg);

//  Asked before a task's row is read: MS_STORE_TASK_READ reads it and
//  calls fn, MS_STORE_TASK_SKIP goes on to the next task, MS_STORE_TASK_STOP
//  ends the walk (MS_OK), MS_STORE_TASK_KEY calls fn without reading the
//  row: the task as the state index has it (task_id, sweep_id, index and
//  state; attempts, updated_at_ms and holder zero, config_json NULL with
//  config_len 0, error ""), for a caller that needs no more (the
//  scheduler: a row read per candidate was most of a scheduling pass).
//  TASK_ID and SWEEP_ID are borrowed for the call; STATE is the task's
//  state by the index (pending, claimed or running).
typedef enum {
    MS_STORE_TASK_READ = 0,
    MS_STORE_TASK_SKIP = 1,
    MS_STORE_TASK_STOP = 2,
    MS_STORE_TASK_KEY = 3,
} ms_store_task_filter_t;
typedef ms_store_task_filter_t (*ms_store_task_skip_fn)(void *arg,
                                                        const uint8_t *task_id,
                                                        const uint8_t *sweep_id,
                                                        ms_task_state_t state);

//  As ms_store_pending_tasks, but skip (may be NULL) first sees each
//  task's id and sweep from the state index, so a task the caller does
//  not want (held by another node, say) costs no read of its row: the
//  scheduler walks past thousands of such tasks in a big sweep.
//  Errors: as ms_store_pending_tasks.
int ms_store_pending_tasks_filtered(ms_store_t *self,
                                    ms_store_task_skip_fn skip,
                                    ms_store_task_fn fn, void *arg);

//  The highest logical time (Lamport) among the sweep-control records of
//  a sweep held here into *time (0 when it has none, or only controls of
//  nodes that predate logical times). A node issues its next control of
//  the sweep at *time + 1, so that control sorts after every control it
//  has seen (see "sweep-control" in ms_store_internal.h). Thread: any.
//  Errors: MS_ERR_STORE.
int ms_store_sweep_control_time(ms_store_t *self,
                                const uint8_t sweep_id[MS_STORE_ID_BYTES],
                                uint64_t *time);

//  Call fn for every counted result of TASK_ID: first the rows of the
//  results table (those that fill the task's slots; extra false), then
//  the extra replicas (extra true: a node outranked on its slot that
//  finished anyway, or more results than the task's verify.replicas),
//  each group in node id order. The results table, its count and its
//  digest hold only the first group. One read txn.
//  Errors: MS_ERR_STORE; fn's return. A task with no results is MS_OK.
int ms_store_results_by_task_all(ms_store_t *self,
                                 const uint8_t task_id[MS_STORE_ID_BYTES],
                                 ms_store_replica_fn fn, void *arg);

//  Number of rows in the results table (results that fill a slot) into
//  *n.
//  Errors: MS_ERR_STORE.
int ms_store_results_count(ms_store_t *self, uint64_t *n);

//  BLAKE2b-256 over the derived tables' content that is a function of the
//  record set (sweeps, sweep states and counts, tasks' derived fields,
//  results with their counted flags, claims, failures, datasets, sweep
//  controls), table by table in key order; local fields (update times,
//  attempts, holders of the single-node API) are left out. Two stores
//  with the same records have the same digest.
//  Errors: MS_ERR_STORE, MS_ERR_NOMEM.
int ms_store_state_digest(ms_store_t *self, uint8_t digest[32]);

//  BLAKE2b-256 over the results table only (task || node -> row, in key
//  order; extra replicas are not rows): "the results table is identical
//  on every node".
//  Errors: MS_ERR_STORE.
int ms_store_results_digest(ms_store_t *self, uint8_t digest[32]);

//  Name of a task state ("pending", ...); "unknown" when out of range.
const char *ms_task_state_name(ms_task_state_t state);

//  Name of a sweep state ("active", ...); "unknown" when out of range.
const char *ms_sweep_state_name(ms_sweep_state_t state);

//  ==========================================================================
//  Verification (DESIGN.md "Verification", docs/VERIFICATION.md "In the
//  store"). After every change to a task's counted results (and after a
//  quarantine, operator or pool-size change) the store evaluates the
//  task with ms_verdict and keeps, per task, a derived verdict row: the
//  verdict, its revision, the slots the task wants now, and per result
//  what the evaluation made of it. Per node it keeps the stratum-1 tally
//  (counted results, strikes) and whether it is quarantined. A task is
//  done for the scheduler only when its verdict is final for its slots.
//
//  Operators. The operator of a result is the operator of its producer:
//  ms_store_set_operator(node, name) stores it (the node calls it for
//  every member admitted by certificate, itself included); a node with
//  no stored operator is its own operator, named by its node id (64 hex
//  characters: the open pool rule). The mapping is stored data, so the
//  verdicts are a pure function of (records, operators, pool operator
//  count): nodes that hold the same records and have admitted the same
//  members agree.
//  ==========================================================================

#define MS_STORE_VERDICT_MAX_MARKS 16 // results described per verdict
#define MS_STORE_OPERATOR_MAX 64      // bytes of an operator name
#define MS_STORE_OPERATORS_TEXT                                                \
    (MS_STORE_VERDICT_MAX_MARKS * (MS_STORE_OPERATOR_MAX + 1) + 1)

//  What the evaluation made of one counted result of a task.
typedef struct {
    uint8_t node_id[MS_STORE_ID_BYTES]; // the producer
    bool counted; // counted in the final stratum (DESIGN.md `counted`)
    bool agrees;  // in the agreeing set S
    bool strike;  // earned its node a strike (stratum 1)
    uint8_t role; // ms_verdict_role_t of the final stratum
    char operator_name[MS_STORE_OPERATOR_MAX + 1]; // its operator
} ms_store_verdict_mark_t;

//  The derived verdict of one task.
typedef struct {
    uint32_t verdict;      // ms_verdict_state_t
    uint32_t revision;     // changes of the verdict (see ms_store_verdict.c)
    uint32_t status;       // ms_run_status_t of S
    uint32_t n_needed;     // min(replicas, pool operators)
    uint32_t n_operators;  // operators with a counted result
    uint32_t n_agreeing;   // |S|
    uint32_t slots_wanted; // counted results the task wants now
    bool slots_exhausted;  // disputed, no further slot may open
    bool final;            // the scheduler is done with the task
    bool has_median;       // median_node is set
    uint8_t median_node[MS_STORE_ID_BYTES];  // producer of the lower median
    char operators[MS_STORE_OPERATORS_TEXT]; // operators of S, sorted,
                                             // comma-separated
    size_t n_marks;                          // entries in marks
    ms_store_verdict_mark_t marks[MS_STORE_VERDICT_MAX_MARKS]; // by node id
} ms_store_verdict_t;

//  The verdict row of TASK_ID into *out.
//  Errors: MS_ERR_NOTFOUND (no counted result, or the task or its sweep
//  is not known yet); MS_ERR_STORE.
int ms_store_get_verdict(ms_store_t *self,
                         const uint8_t task_id[MS_STORE_ID_BYTES],
                         ms_store_verdict_t *out);

//  The slots of TASK_ID the scheduler may fill now: the verdict's
//  slots_wanted plus the slots finished by results that do not count (a
//  quarantined or revoked producer, a reveal without its commit: such a
//  slot stays done in the lease table, so the task looks one slot
//  further), or min(verify.replicas, pool operators) before any result;
//  0 when the verdict is final. *replicas (may be NULL) gets the
//  sweep's verify.replicas (1 when unknown).
//  Errors: MS_ERR_STORE.
int ms_store_task_slots(ms_store_t *self,
                        const uint8_t task_id[MS_STORE_ID_BYTES],
                        uint32_t *n_slots, uint32_t *replicas);

//  The sweep's verify block into *replicas (1 when the sweep is unknown).
//  Errors: MS_ERR_STORE.
int ms_store_sweep_replicas(ms_store_t *self,
                            const uint8_t sweep_id[MS_STORE_ID_BYTES],
                            uint32_t *replicas);

//  Store the operator of NODE_ID (NAME: 1..MS_STORE_OPERATOR_MAX bytes,
//  copied) and re-derive the verdicts of the tasks it has results for.
//  The same name again changes nothing.
//  Errors: MS_ERR_INVALID empty or long name; MS_ERR_UNSUPPORTED
//  read-only; MS_ERR_STORE_FULL; MS_ERR_STORE.
int ms_store_set_operator(ms_store_t *self,
                          const uint8_t node_id[MS_STORE_ID_BYTES],
                          const char *name);

//  The operator of NODE_ID as verdicts use it: the stored name, else the
//  node id in hex. Errors: MS_ERR_STORE.
int ms_store_operator(ms_store_t *self,
                      const uint8_t node_id[MS_STORE_ID_BYTES],
                      char out[MS_STORE_OPERATOR_MAX + 1]);

//  Set the number of operators in the pool (the node's view: itself and
//  its live peers, by operator); not stored (like the member count).
//  When it changed, the verdicts of tasks with results are re-derived.
//  Default 1.
//  Errors: MS_ERR_INVALID 0; MS_ERR_UNSUPPORTED read-only;
//  MS_ERR_STORE_FULL; MS_ERR_STORE.
int ms_store_set_pool_operators(ms_store_t *self, uint32_t n_operators);

#define MS_STORE_VERDICT_STATES 5 // ms_verdict_state_t values (pending..)

//  Tasks with a verdict row, by verdict (counts[s] for ms_verdict_state_t
//  s; a task with no counted result has no row). Kept by the store as
//  rows change (one read, no walk: cheap enough for every /metrics
//  scrape); a read-only store from before the counts is walked once.
//  Thread: any (its own read txn). Errors: MS_ERR_STORE.
int ms_store_verdict_counts(ms_store_t *self,
                            uint64_t counts[MS_STORE_VERDICT_STATES]);

//  A node's standing across tasks (stratum 1): counted results, strikes,
//  quarantined. A node never seen gives zeros. Errors: MS_ERR_STORE.
int ms_store_node_standing(ms_store_t *self,
                           const uint8_t node_id[MS_STORE_ID_BYTES],
                           uint32_t *n_counted, uint32_t *n_strikes,
                           bool *quarantined);

//  ms_store_node_standing, plus *n_forgiven: how many of those strikes the
//  pool authority's quarantine clears forgave (ms_store_put_clear: the
//  strikes of the node's results inside the clears' cut; 0 when none).
//  n_strikes counts them too: the quarantine rule weighs n_strikes -
//  n_forgiven (ms_verdict_quarantined). Any out pointer may be NULL. A
//  node never seen gives zeros. Errors: MS_ERR_STORE.
int ms_store_node_standing_ex(ms_store_t *self,
                              const uint8_t node_id[MS_STORE_ID_BYTES],
                              uint32_t *n_counted, uint32_t *n_strikes,
                              uint32_t *n_forgiven, bool *quarantined);

//  Commit then reveal (DESIGN.md "Verification"): how many distinct
//  operators (as verdicts count them, ms_store_operator) have a commit
//  record for TASK_ID in this store, into *n_operators; *has_own (may be
//  NULL) tells whether NODE_ID (may be NULL) is among the committers.
//  Counts up to 64 operators (more are not needed: replicas <= 64).
//  A store without the commits table (old, read-only) gives 0.
//  Errors: MS_ERR_STORE, MS_ERR_NOMEM.
int ms_store_commit_operators(ms_store_t *self,
                              const uint8_t task_id[MS_STORE_ID_BYTES],
                              const uint8_t node_id[MS_STORE_ID_BYTES],
                              uint32_t *n_operators, bool *has_own);

//  A result applied with status ok (ms_store_new_results).
typedef struct {
    uint8_t task_id[MS_STORE_ID_BYTES];
    uint8_t node_id[MS_STORE_ID_BYTES];     // its producer (the origin)
    uint8_t record_hash[MS_STORE_ID_BYTES]; // what a re-evaluation targets
} ms_store_new_result_t;

//  Take up to MAX results with status ok applied by this store since the
//  last call, own ones included, oldest first (a bounded queue of 4096:
//  when more arrived the oldest were dropped). What the node samples for
//  re-evaluation (docs/VERIFICATION.md "Re-evaluation"). Returns how
//  many were written. Thread: any.
size_t ms_store_new_results(ms_store_t *self, ms_store_new_result_t *out,
                            size_t max);

//  Count the stored re-evaluations of the result whose record hash is
//  TARGET (task TASK_ID) into *n, and in *by_verifier (may be NULL)
//  whether node VERIFIER (may be NULL) published one. One read txn.
//  Errors: MS_ERR_STORE.
int ms_store_reevals_of(ms_store_t *self,
                        const uint8_t task_id[MS_STORE_ID_BYTES],
                        const uint8_t target[MS_STORE_ID_BYTES],
                        const uint8_t verifier[MS_STORE_ID_BYTES], uint32_t *n,
                        bool *by_verifier);

//  Take up to MAX task ids whose verdict or revision changed in commits
//  of this process since the last call (a bounded queue: when more
//  changed than it holds, the oldest are dropped and counted in
//  *n_dropped, may be NULL). Returns how many were written. Thread: any.
size_t ms_store_verdict_changes(ms_store_t *self,
                                uint8_t (*out)[MS_STORE_ID_BYTES], size_t max,
                                uint64_t *n_dropped);

#endif
