/*  =========================================================================
    ms_store_internal - what the files of the store share: the store's
    state, its op queue, the scan helper, key and row layouts, and the
    functions one file of the store calls in another

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Private to node/store/ms_store*.c (STYLE.md: a module's helpers go in
    ms_<module>_internal.h and are never included from another module).
    The store is one class; its files are its concerns: ms_store.c the
    environment, the gate, the writer thread and its batches;
    ms_store_log.c the record log; ms_store_derive.c records applied to the
    derived tables; ms_store_verdict.c verdicts; ms_store_query.c reads.
    Only these files use LMDB.
*/
#ifndef MS_STORE_INTERNAL_H
#define MS_STORE_INTERNAL_H

#include "ms_store.h"

#include "ms_array.h"
#include "ms_be.h"
#include "ms_ring.h"
#include "ms_store_payload.h"
#include "ms_verdict.h"
#include "ms_wire.h"
#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>

#define MS_STORE_ID MS_STORE_ID_BYTES

#define MS_STORE_GEN_SLOTS                                                     \
    64 // sweep generation counters (a power of two <= 64)

#define MS_STORE_GEN_SLOT(id) ((id)[0] & (MS_STORE_GEN_SLOTS - 1))

#define MS_STORE_VC_MAX 4096 // changed verdicts queued for the node's events

#define MS_STORE_NR_MAX 4096 // new ok results queued for re-evaluation sampling

// On-disk sweep state record (sweep_meta). Fixed size, native endianness
// (the store is local to one machine).
typedef struct {
    uint8_t version;                   // record layout, 1
    uint8_t state;                     // ms_sweep_state_t
    uint16_t replicas;                 // result slots per task (0: 1)
    int32_t priority;                  // higher first
    uint64_t n_tasks;                  // tasks in the sweep
    int64_t created_at_ms;             // wall clock, ms since the epoch
    int64_t updated_at_ms;             // wall clock, ms since the epoch
    uint64_t counts[MS_TASK_N_STATES]; // tasks per state
} ms_store_sweep_hdr_t;

// On-disk task record header (tasks); config and error text follow.
typedef struct {
    uint8_t version;       // record layout, 1
    uint8_t state;         // ms_task_state_t
    uint8_t traits;        // MS_STORE_TT_*, computed once when the sweep is
                           // applied (0 in rows of older stores)
    uint8_t reserved;      // zero
    uint32_t index;        // position in the sweep
    uint32_t attempts;     // claims of the issue-2 scheduler (now 0)
    uint32_t config_len;   // bytes of config JSON, without NUL
    uint32_t error_len;    // bytes of last error, without NUL
    uint32_t reserved2;    // zero
    int64_t updated_at_ms; // wall clock, ms since the epoch
    uint8_t sweep_id[MS_STORE_ID]; // owning sweep
    uint8_t holder[MS_STORE_ID];   // node running it, zero when none
} ms_store_task_hdr_t;

#define MS_STORE_TT_KNOWN 1 // the bits below are set (else: read the config)
#define MS_STORE_TT_NOOP 2  // kind noop: trains nothing, has no weights
#define MS_STORE_TT_REGRESSION 4 // loss mse: the verdict compares losses only

typedef enum {
    MS_STORE_OP_PUT_SWEEP, // a sweep record's apply (ms_store_apply_sweep, not
                           // queued)
    MS_STORE_OP_TASK_STATE,
    MS_STORE_OP_RESET_CLAIMS,
    MS_STORE_OP_APPEND,
    MS_STORE_OP_MERGE,
    MS_STORE_OP_MEMBERS,
    MS_STORE_OP_PUT_ITEM,
    MS_STORE_OP_OPERATOR,
    MS_STORE_OP_POOL_OPS,
} ms_store_op_kind_t;

// One queued write: arguments borrowed from the blocked caller, results.
typedef struct ms_store_op {
    struct ms_store_op *next;           // queue link
    ms_store_op_kind_t kind;            // what to do
    const uint8_t *id;                  // sweep or task id
    const uint8_t *node;                // node id, or NULL
    const char *text;                   // spec, reason or row
    size_t len;                         // bytes in text
    int32_t value;                      // priority or state
    const ms_store_task_input_t *tasks; // put sweep
    size_t n_tasks;                     // put sweep
    int rc;                             // result status
    bool existed;                       // put sweep: was there
    size_t count;                       // reset claims: tasks reset
    bool done;                          // set by the writer when rc is final
    bool chained;          // the next op is of the same call: same commit
    int64_t created_at_ms; // put sweep: 0 = now
    // Record log (append, merge).
    uint64_t incarnation;          // merge: the block's incarnation
    uint64_t first_seq;            // merge: the block's first seq
    size_t n_recs;                 // records in the block
    const uint32_t *kinds;         // n_recs kinds
    const void *const *payloads;   // n_recs payloads
    const size_t *lens;            // n_recs payload lengths
    const uint8_t *sig;            // merge: block signature or NULL
    size_t sig_len;                // bytes in sig
    bool explicit_block;           // append: a block of its own
    ms_record_key_t *keys_out;     // append: n_recs keys, or NULL
    ms_store_merge_result_t merge; // merge: the outcome
    // append: per record, the decoded inner payload of a fragmented
    // record at its last fragment (borrowed), else NULL; or NULL.
    ms_store_payload_t *const *pre;
    // put item: the item (id = digest, text/len = bytes), a revocation's
    // subject (node) and cut, whether it was new (existed false)
    const ms_store_cut_t *cut;
} ms_store_op_t;

// The block being built by the current write txn from appends of one
// origin (group commit: one block per origin per commit, up to 64).
typedef struct {
    bool open;                   // a block can still be extended
    uint8_t origin[MS_STORE_ID]; // its origin
    uint64_t incarnation;        // its incarnation
    uint64_t first_seq;          // its first seq
    uint32_t n;                  // records in it so far
} ms_store_open_block_t;

struct ms_store {
    MDB_env *env;    // the environment
    MDB_dbi db_meta; // see the layout above
    MDB_dbi db_sweeps;
    MDB_dbi db_sweep_meta;
    MDB_dbi db_sweep_tasks;
    MDB_dbi db_tasks;
    MDB_dbi db_task_state;
    MDB_dbi db_results;
    MDB_dbi db_records; // record log: see "Record log" below
    MDB_dbi db_blocks;
    MDB_dbi db_vectors;
    MDB_dbi db_evidence;
    MDB_dbi db_equivocators;
    MDB_dbi db_controls;
    MDB_dbi db_claims;
    MDB_dbi db_result_meta;
    MDB_dbi db_failures;
    MDB_dbi db_datasets;
    MDB_dbi db_items;    // authority items: digest -> item bytes
    MDB_dbi db_cuts;     // revoked origins: origin -> cut (see ms_store_log.c)
    MDB_dbi db_commits;  // commit then reveal: see "Record log"
    bool has_commits;    // db_commits exists (an old store opened
                         // read-only may lack it)
    bool has_cuts;       // db_items and db_cuts exist (an old store
                         // opened read-only may lack them)
    MDB_dbi db_verdicts; // verification (see "Verdicts in the store")
    MDB_dbi db_verdict_nodes;  //
    MDB_dbi db_operators;      //
    MDB_dbi db_sweep_verify;   //
    bool has_verdicts;         // those exist (an old store read-only: no)
    MDB_dbi db_reevals;        // re-evaluations: see "Verdicts in the store"
    bool has_reevals;          // db_reevals exists (old read-only: no)
    pthread_mutex_t nr_mu;     // guards the new-result queue
    ms_ring_t *nr;             // MS_STORE_NR_MAX ms_store_new_result_t applied,
                               // for sampling
    uint32_t n_pool_operators; // verdicts; writer thread only
    int v_depth;               // writer thread only: quarantine re-derive
    uint64_t v_evals;      // writer thread only: ms_store_verdict_derive runs
    pthread_mutex_t vc_mu; // guards the changed-verdict queue
    ms_ring_t *vc_ids;     // MS_STORE_VC_MAX task ids whose verdict changed
    uint64_t vc_dropped;   // dropped since the last take
    uint32_t n_members;    // failure rule; writer thread only
    ms_store_open_block_t block; // writer thread only: current txn's block
    bool txn_vec_changed;        // writer thread only: txn moved a vector
    uint64_t gen_dirty;          // writer thread only: sweep slots this txn
                                 // touched (bit = MS_STORE_GEN_SLOT(sweep id))
    bool gen_dirty_all;          // writer thread only: every sweep touched
    uint64_t gen_slots[MS_STORE_GEN_SLOTS]; // gate_mu: see "Sweep generations"
    uint64_t gen_all;     // gate_mu: bumped when every sweep changes
    size_t gen_txnid;     // gate_mu: last txn id this process wrote
    uint64_t vec_gen;     // gate_mu: bumped after vector commits
    uint64_t digest_gen;  // gate_mu: vec_gen of the cached digest
    bool digest_valid;    // gate_mu: cache filled
    uint8_t digest[32];   // gate_mu: cached vector digest
    uint64_t digest_n;    // gate_mu: entries in it
    bool read_only;       // opened with opts.read_only
    unsigned max_batch;   // writes per commit
    int data_fd;          // writer: LMDB's data file (-1: unknown)
    uint64_t warm_end;    // writer: bytes of data.mdb warmed
    bool warm_failed;     // writer: warming gave up (logged once)
    uint64_t incarnation; // 64 random bits, made at creation

    pthread_mutex_t role_mu;           // guards the no-submit list below
    uint8_t (*no_submit)[MS_STORE_ID]; // origins lacking the `submit` role
    size_t n_no_submit;                // entries in no_submit
    size_t cap_no_submit;              // allocated
    uint64_t n_ignored_no_role;        // their sweep records, not applied

    ms_store_sign_fn sign_fn; // signs appended blocks (writer), or NULL
    void *sign_arg;           // its argument
    bool unchecked_appends;   // tests: keep own undecodable records

    pthread_mutex_t gate_mu; // guards the fields below down to stats
    pthread_cond_t gate_cv;  // gate changes
    unsigned n_active;       // open txns in this process (reads + write)
    unsigned n_reads;        // open read txns
    bool resizing;           // a resize waits for n_active == 0
    ms_store_stats_t stats;  // counters

    pthread_mutex_t q_mu;   // guards the queue
    pthread_cond_t q_cv;    // work queued or stopping
    pthread_cond_t done_cv; // some ops finished
    ms_store_op_t *q_head;  // first queued op
    ms_store_op_t *q_tail;  // last queued op
    bool stopping;          // destroy called
    bool writer_started;    // writer thread exists
    pthread_t writer;       // the writer thread
};

//  --------------------------------------------------------------------------
//  Scans. Every read of a range of a table is the same loop: a cursor at
//  the first key with a prefix (MDB_SET_RANGE; MDB_FIRST for the whole
//  table), MDB_NEXT while the key still has the prefix, and the cursor's
//  own error told apart from the end. Written once here:
//
//      ms_store_scan_t it;
//      int status = ms_store_scan_open(&it, txn, dbi, prefix, prefix_len,
//      "what"); while (status == MS_OK && ms_store_scan_next(&it)) {
//          ... it.k, it.v (valid until the next call) ...
//      }
//      status = ms_store_scan_close(&it, status);
//
//  A body may break out of the loop, or set status to stop it with that
//  error; ms_store_scan_close keeps the first error and closes the cursor (a
//  zeroed ms_store_scan_t, never opened, closes as nothing). The prefix is
//  borrowed for the scan's life.

typedef struct {
    MDB_cursor *cur;    // NULL once closed (or never opened)
    MDB_val k, v;       // the current entry
    const void *prefix; // keys must start with it
    size_t prefix_len;  // 0: the whole table
    const void *from;   // the first key looked at (default: the prefix)
    size_t from_len;    // its length
    bool started;       // the first get was made
    bool borrowed;      // the cursor is the caller's: left open
    int mrc;            // the last mdb_cursor_get's return
    const char *what;   // the table, for messages ("cursor results")
} ms_store_scan_t;

/*  =========================================================================
    Record log and derived tables (docs/POOL.md "Records")

    Layout added to the store (keys big-endian so LMDB's byte order is
    numeric order; K = origin (32) || incarnation (8) || seq (8)):

      records        K -> kind (u32) || payload
      blocks         origin || incarnation || first seq -> n (u32) ||
                     sig_len (u32) || signature
      vectors        origin || incarnation -> highest contiguous seq (u64)
      evidence       K || record hash -> kind || payload (both records of
                     an equivocation)
      equivocators   origin -> 1
      sweep_controls sweep || K -> action (u32) || priority (i32)
                     [|| lamport (u64), when not 0]; a sweep record
                     itself is there as action 0 (its priority)
      claims         task || slot (u32) || epoch (u64) || node -> claim row
      result_meta    task || node || incarnation || seq -> counted (u8) ||
                     status (u8) || extra (u8) || committed (u8) ||
                     record hash || slot (u32) || epoch (u32) || row + NUL
      commits        task || node || incarnation || seq -> commitment (32)
                     || slot (u32) || epoch (u32)
      failures       task || node || incarnation || seq -> class (u8) ||
                     reason + NUL
      datasets       hash -> the dataset record's payload
      meta           "bad_fragments" -> u64 (fragment sets not applied)
                     "verdict_counts" -> u64 x MS_STORE_VERDICT_STATES
                     (verdict rows per ms_verdict_state_t, kept by
                     ms_store_verdict_derive; /metrics reads it, not the rows)

    Contiguity. A block is merged only when its first seq is at most
    held + 1, so the records of (origin, incarnation) are always exactly
    1..held and the vector entry is the highest seq held. A block above a
    gap is refused (MS_ERR_RANGE) before anything is written; gossip keeps
    it and asks for the gap. Each merge is one write txn: a crash leaves
    the block wholly in or wholly out, derived rows included.

    Blocks. The writer groups the appends of one origin made in one
    commit into one block (up to 64 records); ms_store_append_many makes
    a block of its own. A merged block is stored with its boundaries and
    signature. A block that overlaps what we hold (first seq <= held <
    last) is stored from held + 1 on, without its signature: peers serve
    whole stored blocks, so this happens only when two peers cut one
    origin's log differently, which the trust issue will refuse anyway.

    Derived state as a pure function of the record set. Every apply
    function reads what it needs from the derived tables and recomputes
    the affected rows from ALL the records that touch them, never from
    arrival order:
    - sweep: its spec, tasks and counts (ms_store_op_put_sweep; created_at is
   the local time the sweep first landed here: the wire has no submission time;
      it orders this node's own work and its progress figures, and it is
      left out of the state digest, which covers only what every node
      derives alike); then its controls are
      folded and each task re-derived (results and failures may come
      first: they are kept by task id whether or not the task is known).
    - sweep-control: stored by (sweep, record key), with its logical time
      (a Lamport clock: the issuing node gives a control 1 + the highest
      time among the controls of that sweep it holds). The sweep's state
      and priority are a fold over its controls ordered by (time, origin,
      incarnation, seq), starting from (active, the sweep record's
      priority): pause and resume set paused/active, priority sets the
      priority, cancel is final for pause and resume (a later resume
      does not undo it), and reopen (a cancelled sweep submitted again)
      makes it active. Ordering by record key alone was wrong across
      nodes: a pause on node B and a later resume on node A (A had seen
      the pause) folded as "resume, pause" everywhere when A's id sorts
      first. With the clock, a control issued after another was seen
      always sorts after it; controls issued concurrently (neither node
      had seen the other's) are ordered by origin id, the same on every
      node, so the state stays a pure function of the record set. A
      record from a node that predates the clock has time 0 (it sorts
      first, by key, as before). The time saturates at UINT64_MAX (a
      hostile peer can then at worst tie, ordered by key). The base
      priority is that of the sweep record with the lowest key (two
      nodes may publish the same sweep).
    - claim / release: one row per (task, slot, epoch, node); the lowest
      record key of each kind is kept, so duplicates from a second
      incarnation change nothing.
    - result: every result is kept in result_meta; of one (task, node),
      the counted one is the lowest seq of each incarnation, and across
      incarnations the one with the lowest record hash (BLAKE2b of K ||
      kind || payload) - DESIGN.md's rule as a total order; the others
      are duplicates (counted 0). Of the counted results of a task (one
      per node), those that fill its slots (verify.replicas of its sweep,
      1 while the sweep is unknown) are chosen by ms_store_results_rank: per
      slot the one of the top claim (epoch, then H(task, slot, node), as
      claims rank), then the best of the rest. The results table holds
      the chosen rows; the other counted results are extra replicas
      (flag in result_meta): kept, replicated, listed only on request
      (ms_store_results_by_task_all), never a row of the table.
    - commit (commit then reveal, DESIGN.md "Verification"): kept per
      (task, node, record). A result with a nonce is "committed" when a
      commit of the same task by the same node and incarnation at a LOWER
      seq holds ms_store_payload_commitment(node, nonce, row): decided
      once, when the result is applied, since contiguity means every
      lower seq of its log is already held then (a commit can never
      arrive after its reveal). With verify.replicas >= 2 only committed
      results can be counted (ms_store_results_recount); with replicas 1 (or
      the sweep unknown) every result can, as before. The rule reads only
      the records, so every node counts alike. When a sweep lands, its
      tasks' results are recounted (their replicas were taken as 1).
    - failure: kept per (task, node, record). A task ends failed when
      task-class failures come from min(3, n_members) distinct nodes.
    - dataset: by hash; of two payloads under one hash the smaller bytes
      are kept.
    A task's state is derived from all of that: done when some counted
    result has status ok or diverged (replicas 1), else failed by the rule
    above, else cancelled when its sweep is, else pending (the single-node
    API's claimed/running and its failed are local and kept over pending).

    Equivocation. A record held under a key that arrives with other bytes
    is kept with the held one in evidence, and its origin (node id, all
    incarnations) is marked: from then on its results and failures no
    longer count (no results row, not in the failure rule), on every node
    that has seen both records. Its claims stay (leases are liveness, not
    safety).

    Fragments. The wire holds one record's payload to 64 KiB, but a sweep
    record lists every task config (40 MB for 100,000 tasks). The append
    calls take payloads up to MS_STORE_MAX_LOGICAL_BYTES and, in the
    caller's thread (the writer never compresses), turn one over
    MS_STORE_FRAGMENT_BYTES into FRAGMENT records: the payload is decoded
    first (a known kind that does not decode is refused, as before), then
    deflated (level 6; kept raw when that does not shrink it), the stream
    cut into pieces of MS_STORE_FRAGMENT_BYTES, each encoded with the
    shared header (inner kind, stream and raw lengths, compression,
    BLAKE2b-256 of the payload) and its offset. They are appended as one
    op, so one txn; an op with more than 64 records continues in new
    blocks. Applying a FRAGMENT does nothing until the one whose bytes end
    the stream: then ms_store_fragment_assemble reads seq - 1, seq - 2, ... back
    from the records db (same txn, so also fragments written by this very
    op) until offset 0, each a FRAGMENT with the same header whose bytes
    end where the next begins; inflates into exactly raw_len bytes (the
    output buffer is raw_len + 1, so a longer stream fails, never grows);
    checks the hash; and applies the payload as a record of inner_kind
    under its FIRST fragment's key (the one keys_out reports). An append
    hands the payload it decoded to the writer (op->pre), so a 100,000
    task sweep is decoded once. Contiguity is what makes this exact: a
    merge needs no special case, because 1..held are always held, so the
    earlier fragments are there when the last lands, in this merge call,
    an earlier one, or before a crash. A set that fails a check is
    stored (the vector advances, peers get it) but not applied, counted
    in meta "bad_fragments" (in the txn, so a rerun counts it once) and
    logged; a fragment that does not decode is stored only, like any such
    record. Why not a compressed flag on the record: the record format
    (kind || payload, hashed and later signed) stays one shape, and a
    node that does not know kind 10 still stores and forwards it.

    Signatures. The store neither makes nor checks them itself: blocks
    of this node get the signature of the signer set with
    ms_store_set_signer (node/log/ms_block_signer signs with the node's key over
    proto/ms_wire_sign.h's bytes), computed in the writer inside the txn
    that writes the block, so an own block is never durable unsigned
    while a signer is set; merged blocks are stored with the signature
    they came with (the node verified it before the merge). A merged
    block that overlaps what is held is stored as a suffix without a
    signature (above): such a block cannot be served to peers that check
    signatures, which is right, since only an origin that cut its log
    two ways (or a relay) can cause it, and the whole block is still
    held by its origin.

    Not done yet: claim and release payloads of finished tasks are not
    dropped.
    =========================================================================
*/

#define MS_STORE_KEY 48 // origin || incarnation || seq

_Static_assert(MS_STORE_MAX_LOGICAL_BYTES == MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES,
               "one logical payload bound");
_Static_assert(MS_STORE_FRAGMENT_BYTES + 256 <= MS_WIRE_MAX_PAYLOAD_BYTES,
               "a fragment's payload fits one wire record");
_Static_assert((int) MS_RECORD_FRAGMENT == (int) MS_WIRE_KIND_FRAGMENT,
               "fragment kind");

// Claim row (claims db). Fixed size, native endianness.
typedef struct {
    uint8_t claimed;                   // a claim record is held
    uint8_t released;                  // a release record is held
    uint16_t reserved;                 // zero
    uint32_t reason;                   // release reason of release_key
    uint8_t claim_key[MS_STORE_KEY];   // lowest claim record key (zero: none)
    uint8_t release_key[MS_STORE_KEY]; // lowest release record key (zero: none)
} ms_store_claim_row_t;

//  --------------------------------------------------------------------------
//  Read NODE's forgiven cut inside TXN, the union of its quarantine clears'
//  cuts (*has false and an empty cut when none).

#define MS_STORE_CLEAR_KEY (MS_STORE_ID + 1) // node || 'Q' in db_cuts

//  One sweep_controls row, for the fold.
typedef struct {
    uint64_t lamport; // logical time (0: none)
    uint8_t
        key[MS_STORE_KEY]; // the record's key (origin || incarnation || seq)
    uint32_t action;       // ms_sweep_control_t, 0 for the sweep record
    int32_t value;         // priority
} ms_store_control_row_t;

// result_meta value: counted (u8) || status (u8) || place (u8) ||
// committed (u8: 1 when a matching earlier commit of the same node and
// incarnation exists) || record hash (32) || slot (u32 BE) || epoch (u32
// BE) || row + NUL.
// place: MS_STORE_PLACE_* (what ms_store_results_rank last decided for a
// counted one).
//  A re-evaluation (reevals db: task || verifier record key -> this).
//  Native endianness: local.
typedef struct {
    uint8_t target[MS_STORE_ID]; // record hash of the result re-evaluated
    uint8_t
        record_hash[MS_STORE_ID]; // of the re-evaluation record (order ties)
    uint8_t failed;               // could not recompute (no metrics)
    uint8_t pad[7];
    double test_accuracy, test_loss, val_accuracy, val_loss;
} ms_store_reeval_val_t;

//  Offsets in a result_meta value (see "Layout" in ms_store.c).
#define MS_STORE_RM_HASH 4
#define MS_STORE_RM_SLOT 36
#define MS_STORE_RM_EPOCH 40
#define MS_STORE_RM_ROW 44

#define MS_STORE_PLACE_NONE                                                    \
    0 // not counted, or not ranked since it turned counted
#define MS_STORE_PLACE_FILLS 1 // fills a slot: its row is the results row
#define MS_STORE_PLACE_EXTRA 2 // an extra replica: no results row

//  --------------------------------------------------------------------------
//  The records an append stores: the caller's, with each payload over
//  MS_STORE_FRAGMENT_BYTES replaced by its fragments.

typedef struct {
    size_t n;                 // records
    uint32_t *kinds;          // n
    const void **payloads;    // n (fragments: bufs[i]; else borrowed)
    size_t *lens;             // n
    uint8_t **bufs;           // n: owned fragment payloads, or NULL
    ms_store_payload_t **pre; // n: decoded inner payload at a last fragment
    size_t *first;            // per caller record: its first record index
    size_t cap;               // allocated entries
} ms_store_expand_t;

//  ==========================================================================
//  The environment, the gate, the writer (ms_store.c)

int ms_store_mdb(int rc, const char *what);

int ms_store_scan_open(ms_store_scan_t *it, MDB_txn *txn, MDB_dbi dbi,
                       const void *prefix, size_t prefix_len, const char *what);

//  A scan on the caller's open cursor (one cursor for many scans of a
//  table in one txn): as ms_store_scan_open, but ms_store_scan_close leaves it
//  open.
void ms_store_scan_use(ms_store_scan_t *it, MDB_cursor *cur, const void *prefix,
                       size_t prefix_len, const char *what);

//  Start an open scan at the first key >= from (from_len bytes, which
//  should start with the prefix), not at the prefix itself: a page that
//  goes on from where the last one stopped. Borrowed, as the prefix.
void ms_store_scan_from(ms_store_scan_t *it, const void *from, size_t from_len);

//  Move to the next entry with the prefix: true when there is one.
bool ms_store_scan_next(ms_store_scan_t *it);

//  Close the scan: status, or the cursor's error when status is MS_OK.
int ms_store_scan_close(ms_store_scan_t *it, int status);

void ms_store_state_key(uint8_t key[1 + MS_STORE_ID + 4], int state,
                        const uint8_t *sweep_id, uint32_t index);

//  Append one MS_STORE_ID-byte ID to the id list *IDS (N ids in room for
//  *CAP, grown by ms_array_grow) and count it in *N. MS_ERR_NOMEM leaves
//  the list as it was.
int ms_store_ids_push(uint8_t **ids, size_t *n, size_t *cap, const void *id);

unsigned *ms_store_tls_slot(const ms_store_t *self, bool take);

int ms_store_read_begin(ms_store_t *self, MDB_txn **txn);

void ms_store_read_end(ms_store_t *self, MDB_txn *txn);

int ms_store_task_decode(const uint8_t *task_id, const MDB_val *val,
                         ms_store_task_hdr_t *hdr, ms_store_task_t *task);

int ms_store_task_read(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
                       ms_store_task_hdr_t *hdr, ms_store_task_t *view);

uint8_t ms_store_task_traits(const ms_store_task_hdr_t *hdr,
                             const ms_store_task_t *view);

ms_store_task_t *ms_store_task_dup(const ms_store_task_t *task);

int ms_store_sweep_hdr_get(ms_store_t *self, MDB_txn *txn,
                           const uint8_t *sweep_id, ms_store_sweep_hdr_t *hdr);

int ms_store_sweep_hdr_put(ms_store_t *self, MDB_txn *txn,
                           const uint8_t *sweep_id, ms_store_sweep_hdr_t *hdr);

void ms_store_gen_touch_task(ms_store_t *self, MDB_txn *txn,
                             const uint8_t *task_id);

int ms_store_task_move(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
                       const MDB_val *val, const ms_store_task_hdr_t *hdr,
                       int new_state, const uint8_t *holder,
                       const char *reason);

int ms_store_op_put_sweep(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op);

int ms_store_written(int rc);

int ms_store_submit(ms_store_t *self, ms_store_op_t *op);

//  ==========================================================================
//  The record log (ms_store_log.c)

void ms_store_rec_key(uint8_t k[MS_STORE_KEY], const uint8_t *origin,
                      uint64_t inc, uint64_t seq);

void ms_store_key_parse(const uint8_t *k, ms_record_key_t *key);

void ms_store_rec_hash(const uint8_t key[MS_STORE_KEY], uint32_t kind,
                       const void *payload, size_t len, uint8_t out[32]);

int ms_store_cut_get(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
                     ms_store_cut_t *cut, bool *revoked);

int ms_store_clear_cut_get(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                           ms_store_cut_t *cut, bool *has);

int ms_store_cut_put(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                     size_t key_len, const ms_store_cut_t *cut);

bool ms_store_cut_counts(const ms_store_cut_t *cut, uint64_t incarnation,
                         uint64_t seq);

bool ms_store_key_counts(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                         int *status);

bool ms_store_is_equivocator(ms_store_t *self, MDB_txn *txn,
                             const uint8_t *node, int *status);

int ms_store_op_append(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op);

int ms_store_op_merge(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op);

int ms_store_op_members(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op);

int ms_store_op_put_item(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op);

int ms_store_submit_count(ms_store_t *self, ms_store_op_kind_t kind,
                          uint32_t n);

//  ==========================================================================
//  Derivation (ms_store_derive.c)

int ms_store_task_derive(ms_store_t *self, MDB_txn *txn,
                         const uint8_t *task_id_in);

int ms_store_control_rows(ms_store_t *self, MDB_txn *txn,
                          const uint8_t *sweep_id,
                          ms_store_control_row_t **rows, size_t *n);

int ms_store_apply_sweep(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                         const ms_store_payload_t *p);

int ms_store_results_recount(ms_store_t *self, MDB_txn *txn,
                             const uint8_t *prefix_in);

int ms_store_results_rank(ms_store_t *self, MDB_txn *txn,
                          const uint8_t *task_id_in);

int ms_store_fragment_assemble(ms_store_t *self, MDB_txn *txn,
                               const uint8_t key[MS_STORE_KEY],
                               const ms_wire_fragment_t *last, uint8_t **raw,
                               uint64_t *first_seq, const char **why);

int ms_store_apply(ms_store_t *self, MDB_txn *txn,
                   const uint8_t key[MS_STORE_KEY], uint32_t kind,
                   const ms_store_payload_t *p, const void *payload,
                   size_t len);

void ms_store_expand_free(ms_store_expand_t *x);

int ms_store_expand(ms_store_expand_t *x, size_t n, const uint32_t *kinds,
                    const void *const *payloads, const size_t *lens);

//  ==========================================================================
//  Verdicts (ms_store_verdict.c)

int ms_store_apply_clear(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                         const ms_store_cut_t *cut);

int ms_store_sweep_verify_put(ms_store_t *self, MDB_txn *txn,
                              const uint8_t *sweep_id, uint32_t replicas,
                              double acc, double loss);

int ms_store_verdict_counts_init(ms_store_t *self, MDB_txn *txn);

int ms_store_verdict_derive(ms_store_t *self, MDB_txn *txn,
                            const uint8_t *task_id_in, int *verdict_out,
                            bool *final_out);

int ms_store_verdict_requeue_node(ms_store_t *self, MDB_txn *txn,
                                  const uint8_t *node_in);

int ms_store_op_operator(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op);

int ms_store_op_pool_ops(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op);

//  ==========================================================================
//  Reads (ms_store_query.c)

bool ms_store_has_duplicate_ids(const ms_store_task_input_t *tasks, size_t n);

#endif
