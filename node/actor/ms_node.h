/*  =========================================================================
    ms_node - one meshsweep node: identity, store, worker pool, scheduler
    and (optionally) the HTTP API

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A node is what `meshsweepd` runs and what `meshsweep run` embeds. It
    works on the record log of its store with leases (ms_lease_table),
    alone or in a pool: mesh links to its peers (ms_mesh: static peers,
    zbeacon unless no_beacon) and gossip of every record (ms_gossip). A
    node is in a pool with an authority when DATA_DIR/identity/node.cert
    holds its certificate (a bundle, ms_cert; or it enrolls itself with
    opts.enroll_key), in an open pool with opts.open_pool, else alone.
    Admission (who may link) is the members table (ms_members) the mesh
    consults; signatures of records come later.

        ms_node_options_t opts;
        ms_node_options_defaults(&opts);
        opts.data_dir = "meshsweep-data";
        opts.api_bind = NULL;                  // embedded: no HTTP API
        ms_node_t *node;
        if (ms_node_open(&node, &opts, &diag) != MS_OK) ...
        ms_node_submit(node, text, len, true, &sweep_id, &existed,
                       &summary, &diag);
        while (ms_node_sweep_progress(node, &sweep_id, &p) == MS_OK
               && (p.pending || p.running))
            ms_node_poll(node, 200);
        ms_node_destroy(&node);

    Threads: every ms_node_* call except ms_node_stop() belongs to the one
    thread that opened the node (the node loop). The HTTP API threads live
    inside the node and talk to it through its own command queue.
*/
#ifndef MS_NODE_H
#define MS_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"
#include "ms_hash.h"
#include "ms_node_options.h"
#include "ms_node_status.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <jansson.h>

typedef struct ms_node ms_node_t;

//  Open a node: create data_dir (0700) with identity/ (Ed25519 key pair,
//  made on first start) and store/ (LMDB); reset tasks left `running` by
//  a previous process to `pending` (their checkpoints in
//  data_dir/checkpoints/ are kept, so they resume bit-exactly); start the
//  worker processes; load the claims of unfinished tasks into the lease
//  table; with opts->open_pool, open the mesh (bind the mesh port, dial
//  the static peers, beacon unless no_beacon) and gossip; bind the HTTP
//  API when opts->api_bind is set. Certificates: DATA_DIR/identity/
//  node.cert, when present, puts the node in that certificate's pool
//  (pool id, operator and roles from it; CURVE links); it must certify
//  this node's key. Without it and with opts->enroll_key, the node
//  issues its own chain with the enrollment kit (expiry: the enrollment
//  certificate's) and saves it there first. A certificate (or an
//  enrollment key) together with open_pool is refused. With neither a
//  certificate nor open_pool the node links to no one (until
//  ms_node_reload_certificate finds one). opts is copied (strings too). Caller
//  owns *out; free it with ms_node_destroy().
//  Returns MS_OK; MS_ERR_INVALID (bad option: diag says which, e.g.
//  heartbeat_ms not under lease_ttl_ms/2, a malformed peer);
//  MS_ERR_IO (data dir, identity, mesh or API bind failed: diag says
//  where); MS_ERR_EXPIRED / MS_ERR_BADSIG / MS_ERR_UNTRUSTED (node.cert
//  or the enrollment kit does not verify, or certifies another node:
//  diag); MS_ERR_UNSUPPORTED (open_pool with the legacy scheduler);
//  MS_ERR_STORE / MS_ERR_STORE_NFS (store could not open); MS_ERR_NOMEM.
//  *out is NULL on failure.
int ms_node_open(ms_node_t **out, const ms_node_options_t *opts,
                 ms_diag_t *diag);

//  Stop the HTTP API, stop the workers (tasks they were running go back to
//  `pending`, checkpoints kept), flush and close the store, free the node.
//  NULL-safe; sets *self_p to NULL.
void ms_node_destroy(ms_node_t **self_p);

//  Submit a sweep spec (YAML or JSON text of n bytes). The spec is parsed
//  and expanded (ms_spec_parse); its dataset is checked (a built-in name
//  must resolve, e.g. the Debian package dataset-fashion-mnist must be
//  installed); then the sweep and all its tasks are stored in one
//  transaction. local_files: the caller is a local runner allowed to read
//  dataset file paths named in the spec (`meshsweep run`); the HTTP API
//  passes false, and a file dataset is then refused (until the pool issue
//  brings dataset blobs). *sweep_id gets the sweep id; *existed is true
//  when the same spec was submitted before (same id, nothing new stored).
//  summary_json (may be NULL): on MS_OK a malloc'd JSON object
//  {"sweep_id","existed","n_tasks","warnings":[...]} (caller frees).
//  Returns MS_OK; MS_ERR_INVALID / MS_ERR_UNSUPPORTED (bad spec: diag has
//  the key path and reason; nothing stored); MS_ERR_NOTFOUND (dataset
//  missing: diag names it and the package to install); MS_ERR_STORE*;
//  MS_ERR_NOMEM.
int ms_node_submit(ms_node_t *self, const char *spec_text, size_t n,
                   bool local_files, ms_hash_t *sweep_id, bool *existed,
                   char **summary_json, ms_diag_t *diag);

//  One turn of the node loop: wait up to timeout_ms for worker messages
//  or API commands, reap dead workers (respawn, retry or fail their task),
//  store finished results, and start pending tasks on idle workers
//  (sweeps in submission order, tasks in index order). Returns MS_OK,
//  MS_ERR_INTERRUPTED once ms_node_stop() was called, or MS_ERR_STORE* on
//  a store failure the node cannot go on from.
int ms_node_poll(ms_node_t *self, int timeout_ms);

//  Run ms_node_poll until ms_node_stop() is called. Returns MS_OK after a
//  stop, or the error that ended the loop.
int ms_node_run(ms_node_t *self);

//  Ask the loop to stop (ms_node_run returns, ms_node_poll returns
//  MS_ERR_INTERRUPTED). Async-signal-safe: call it from a SIGTERM/SIGINT
//  handler. The caller then calls ms_node_destroy().
void ms_node_stop(ms_node_t *self);

//  Fill *out with the progress of a sweep (ms_sweep_progress_t, declared
//  by ms_node_status.h), read from the store. Returns MS_OK;
//  MS_ERR_NOTFOUND (unknown sweep); MS_ERR_STORE; MS_ERR_NOMEM.
int ms_node_sweep_progress(ms_node_t *self, const ms_hash_t *sweep_id,
                           ms_sweep_progress_t *out);

//  Progress events, one JSON object text each (borrowed for the call):
//    {"event":"started","task_id","sweep_id","attempt"}
//    {"event":"epoch","task_id","sweep_id","epoch","of","val_accuracy",
//     "train_loss","seconds"}
//    {"event":"result","task_id","sweep_id","status","test_accuracy",...}
//    {"event":"retry","task_id","sweep_id","attempt","reason"}
//    {"event":"failed","task_id","sweep_id","reason"}
//  Called from the node loop thread (inside ms_node_poll).
typedef void (*ms_node_event_fn)(void *arg, const char *event_json);

//  Set (or clear with fn NULL) the event handler.
void ms_node_set_event_handler(ms_node_t *self, ms_node_event_fn fn, void *arg);

//  The node's store (borrowed; valid until ms_node_destroy).
ms_store_t *ms_node_store(ms_node_t *self);

//  The node id: 64 lowercase hex characters (borrowed, static for the
//  node's life).
const char *ms_node_id_hex(ms_node_t *self);

//  The address the HTTP API is bound to, "ADDR:PORT" with the real port
//  (useful with port 0), or NULL when the API is off. Borrowed.
const char *ms_node_api_address(ms_node_t *self);

//  The file of the API's bearer token when the API listens beyond
//  loopback and asks for it (made 0600 at open when it was missing), or
//  NULL (loopback, or no API). Borrowed, valid for the node's life.
const char *ms_node_api_token_file(ms_node_t *self);

//  The line the node has to say about its backend once, at start (an
//  `--backend auto` that fell back to the CPU, and why), or NULL.
//  Borrowed, valid for the node's life. meshsweepd prints it to stderr.
const char *ms_node_backend_note(ms_node_t *self);

//  Number of workers that train on the GPU; *gpu_name (may be NULL) gets
//  the GPU's name, or NULL when none does. Borrowed.
int ms_node_gpu_workers(ms_node_t *self, const char **gpu_name);

//  Number of worker processes, and of those running a task now.
int ms_node_worker_count(ms_node_t *self, int *n_busy);

//  Trainings started by this node object (every attempt of a train task,
//  noop tasks excluded): lets tests check that a restart re-trains only
//  what is missing.
int64_t ms_node_trainings_started(ms_node_t *self);

//  Life-cycle actions on a sweep (DESIGN.md "Work, claims and leases":
//  sweep-control records): the record's own actions
//  (node/data/ms_lifecycle, which owns the rule).
typedef enum {
    // pending tasks cancelled, running stopped
    MS_NODE_CONTROL_CANCEL = MS_SWEEP_CONTROL_CANCEL,
    // no new task starts; running ones finish
    MS_NODE_CONTROL_PAUSE = MS_SWEEP_CONTROL_PAUSE,
    MS_NODE_CONTROL_RESUME = MS_SWEEP_CONTROL_RESUME, // active again
    // set the priority (higher served first)
    MS_NODE_CONTROL_PRIORITY = MS_SWEEP_CONTROL_PRIORITY,
} ms_node_control_t;

//  Parse an action name ("cancel", "pause", "resume", "priority") into
//  *out. Returns MS_OK or MS_ERR_INVALID (unknown name).
int ms_node_control_parse(const char *name, ms_node_control_t *out);

//  Apply a life-cycle action to a sweep for the whole pool: the node
//  stores it (a sweep-control record once the record log is in, which
//  gossip carries to every peer) and acts on it here at once (cancel
//  stops this node's workers on the sweep's tasks; their checkpoints are
//  dropped). PRIORITY is used by MS_NODE_CONTROL_PRIORITY only.
//  Returns MS_OK; MS_ERR_NOTFOUND (unknown sweep: diag); MS_ERR_CONFLICT
//  (the sweep is cancelled or done and cannot be paused or resumed:
//  diag); MS_ERR_INVALID (action out of range); MS_ERR_STORE*.
int ms_node_control(ms_node_t *self, const ms_hash_t *sweep_id,
                    ms_node_control_t action, int32_t priority,
                    ms_diag_t *diag);

//  The pool id (64 lowercase hex: H("open:" NAME) in an open pool), or
//  NULL when the node is in no pool. Borrowed (node/mesh/ms_authority),
//  valid until the next certificate reload. Loop thread, or before the
//  loop runs.
const char *ms_node_pool_id_hex(ms_node_t *self);

//  The peers as this node sees them: a new JSON array of objects
//  {node_id, state, address, ...} (empty when the node links to no one).
//  Thread-safe (a snapshot the loop refreshes every turn). Caller owns it
//  (json_decref).
json_t *ms_node_peers_json(ms_node_t *self);

//  The TCP port of the node's mesh (the real one when mesh_port was 0),
//  or 0 when the node links to no one.
int ms_node_mesh_port(ms_node_t *self);

//  Read DATA_DIR/identity/node.cert again (SIGHUP, `meshsweep pool
//  join`). A node that linked to no one joins the certificate's pool
//  (opens its mesh and gossip) without a restart; a node already in that
//  pool sends the new chain in later HELLOs (a renewal). The old state
//  stays on any error. Returns MS_OK (also when nothing changed: no file
//  and none before); MS_ERR_NOTFOUND (the file is gone: kept the old
//  one); MS_ERR_CONFLICT (another pool, or the node is in an open pool:
//  restart to change pools); MS_ERR_EXPIRED / MS_ERR_BADSIG /
//  MS_ERR_UNTRUSTED / MS_ERR_INVALID (the certificate: diag); mesh
//  errors as ms_node_open. Loop thread only.
int ms_node_reload_certificate(ms_node_t *self, ms_diag_t *diag);

//  Ask the loop to run ms_node_reload_certificate at its next turn
//  (printing the outcome), and to read DATA_DIR/identity/peers.conf
//  again: its peers not known yet are added and dialed; a bad line is a
//  warning and the peers stay as they were. Async-signal-safe: call it
//  from SIGHUP.
void ms_node_ask_reload(ms_node_t *self);

//  Revoke a node locally (DESIGN.md "Revocation"): its key is marked
//  revoked in the members table (cut: all), our link to it closed, its
//  key denied at ZAP, its frames dropped. How revocations travel through
//  the pool (authority items) comes later. node_id: 32 bytes. Returns
//  MS_OK; MS_ERR_INVALID (not a node id); MS_ERR_NOTFOUND (the node is
//  in no pool); MS_ERR_NOMEM. Loop thread only.
int ms_node_revoke(ms_node_t *self, const uint8_t node_id[32]);

//  Whether the node holds a pool certificate (a pool with an authority).
bool ms_node_has_certificate(ms_node_t *self);

//  The node's operator name (borrowed; the certificate's operator, else
//  the local user name).
const char *ms_node_operator(ms_node_t *self);

//  ==========================================================================
//  Test hooks: a dishonest member for the trust tests
//  (tests/integration/ms_dishonest_node.c). meshsweepd never sets them;
//  with none set, every path of the node is the production one. They let
//  a test program built on this library publish properly signed but
//  false results, the way a dishonest member would (docs/TRUST.md,
//  "Testing against a dishonest member").

//  Called with each result row this node built from its own work, before
//  the row is stored (and so before it is signed and published): fn may
//  rewrite ROW (a JSON object: metrics, weights_digest, node_id, ...;
//  borrowed for the call). The store still checks the row as it checks
//  every own row (an impossible one is refused and becomes a task-class
//  failure) unless the store was told otherwise
//  (ms_store_set_unchecked_appends). Loop thread.
typedef void (*ms_node_result_hook_fn)(void *arg, json_t *row);

//  Set (or clear with fn NULL) the result hook. Tests only.
void ms_node_set_result_hook(ms_node_t *self, ms_node_result_hook_fn fn,
                             void *arg);

//  Called when a leased task (held under this node's claim) is about to
//  go to a worker, with its task id and sweep id (64 hex each) and its
//  config (borrowed). Return NULL to let it train as usual, or a new
//  result body (as a worker sends it: status, epochs, val_accuracy,
//  test_accuracy, test_loss, ..., weights_digest, platform; the node
//  takes it) to finish the task at once under the claim with that body
//  and no training (it then goes the way of every result: the result
//  hook, this turn's block, the push). Loop thread.
typedef json_t *(*ms_node_work_hook_fn)(void *arg, const char *task_id_hex,
                                        const char *sweep_id_hex,
                                        const json_t *config);

//  Set (or clear with fn NULL) the work hook. Tests only.
void ms_node_set_work_hook(ms_node_t *self, ms_node_work_hook_fn fn, void *arg);

//  Let this node's API submit sweeps and sweep controls even when its
//  certificate lacks the `submit` role (a member that ignores the rule:
//  every other node must store its records but not apply them). Tests
//  only. Loop thread.
void ms_node_set_ignore_roles(ms_node_t *self, bool ignore);

//  Publish ROW_JSON (ROW_LEN bytes, a result row, stored as given) as
//  this node's result of TASK_ID (32 bytes), without training and without
//  the scheduler: a claim of slot 0 at one epoch above the highest this
//  node has seen on it, then the result under that claim, as one block of
//  this node (signed, durable, pushed at once). Tests only (a member that
//  copies another node's result). Loop thread (between ms_node_poll
//  calls).
//  Returns MS_OK; MS_ERR_INVALID (no row; a row the store refuses);
//  MS_ERR_NOMEM; MS_ERR_STORE*.
int ms_node_publish_result(ms_node_t *self, const uint8_t task_id[32],
                           const char *row_json, size_t row_len);

#endif
