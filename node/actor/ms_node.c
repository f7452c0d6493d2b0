/*  =========================================================================
    ms_node - one meshsweep node: identity, store, worker pool, scheduler
    and (optionally) the HTTP API

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The node loop, alone or in a pool (DESIGN.md "The pool"): the loop,
    its deadlines and the dispatch between the classes that own the rules.
    A map, with where each rule is written:

    - Records. Everything the node decides is a record appended to its
      own log in one durable commit and pushed once durable
      (ms_record_log; s_append wraps it for the result events); peers'
      blocks are checked (ms_block_signer), merged through the same store
      and fed to the lease table (ms_lease_feed). Derived tables are the
      store's (node/store). A node alone (`meshsweep run`, or no pool)
      runs exactly this path with members = 1.
    - Claims. Where a lease is decided: ms_scheduler_claim (over
      ms_lease_table, the claim rule; owners by ms_assign over
      ms_peer_table's members). No claim in the startup grace (ms_grace).
      A claim starts once it settled (the settle rule: ms_settle.h; the
      acks: ms_record_log) and is still ours; workers' runs, crashes,
      retries, give-ups, outranked and lapsed leases, the volunteer pause
      and the crash points: ms_runner. Claim-to-start: ms_claim_timer.
      Not done here: leases renewed while the loop is stalled (a stalled
      loop lets its leases lapse, which is the point).
    - Results. A worker's result becomes a row here (s_on_result), its
      weights are ms_keep's (ms_keep_own), and it is stored, committed or
      revealed by ms_outbox; re-evaluation of others' results: ms_reeval.
    - Peers. The mesh (ms_mesh) reports peers to s_on_peer, which keeps
      them in ms_peer_table and dispatches what changed (events, lease
      table, settle list, scheduler, item sync, ms_pool_census).
    - HTTP threads never touch the loop's state: commands (ms_node_command),
      the published status (ms_node_status) and events (ms_node_events).
      Submissions: ms_submit; datasets and blobs: ms_dataset_source;
      sweep life cycle: ms_lifecycle; certificates: ms_authority and
      ms_item_sync.

    The loop with a mesh (s_poll_mesh): one zmq_poll over the mesh's
    sockets, the wake pipe (API commands, stop) and the workers' sockets,
    with the timeout at the nearest deadline (s_next_deadline: mesh,
    gossip, blob fetches, lease expiry, settle windows, the runner, the
    grace, the next scan); then mesh handle, acks and sweeps noted, the
    grace, commands, worker events, this turn's results, mesh / gossip /
    item / fetch / lease ticks, and the scheduler (ms_node_poll). Alone,
    the worker pool's own poll is used.
*/
#define _DEFAULT_SOURCE // getloadavg
#include "ms_node.h"

#include "ms_clock.h"
#include "ms_api.h"
#include "ms_events.h"
#include "ms_config_json.h"
#include "ms_data_dir.h"
#include "ms_dataset.h"
#include "ms_dataset_source.h"
#include "ms_identity.h"
#include "ms_spec.h"
#include "ms_assign.h"
#include "ms_authority.h"
#include "ms_backend.h"
#include "ms_gpu.h"
#include "ms_grace.h"
#include "ms_blob_fetch.h"
#include "ms_block_signer.h"
#include "ms_blob_store.h"
#include "ms_cert.h"
#include "ms_claim_timer.h"
#include "ms_gossip.h"
#include "ms_idle.h"
#include "ms_platform.h"
#include "ms_lease_feed.h"
#include "ms_lease_table.h"
#include "ms_item_sync.h"
#include "ms_keep.h"
#include "ms_lifecycle.h"
#include "ms_members.h"
#include "ms_metrics.h"
#include "ms_mesh.h"
#include "ms_mlp.h"
#include "ms_node_command.h"
#include "ms_node_events.h"
#include "ms_node_status.h"
#include "ms_onnx.h"
#include "ms_outbox.h"
#include "ms_peer_table.h"
#include "ms_peers_conf.h"
#include "ms_pool_census.h"
#include "ms_record_log.h"
#include "ms_reeval.h"
#include "ms_runner.h"
#include "ms_scheduler.h"
#include "ms_settle.h"
#include "ms_store_payload.h"
#include "ms_submit.h"
#include "ms_verdict.h"
#include "ms_wire.h"
#include "ms_wire_canon.h"
#include "ms_wire_sign.h"
#include "ms_worker.h"

#include <czmq.h>
#include <sodium.h>
#include <zmq.h>

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_MAX_APPEND 64         // records in one block of ours (DESIGN.md)
#define S_MAX_OPERATORS_SEEN 64 // distinct operators counted in the pool

//  Records of ours appended by one store call (one durable commit): the
//  claims of one scheduling pass, the results of one turn. The store cuts
//  them into blocks of S_MAX_APPEND. A commit's cost is mostly the B-tree
//  pages it rewrites, and the pages above the leaves (and the log's, the
//  vector's, the sweep's counts) are shared by the records of one commit:
//  four blocks per commit cost about a quarter less CPU per task than one
//  (docs/BENCHMARKS.md "Pool throughput").
#define S_MAX_COMMIT (4 * S_MAX_APPEND)
_Static_assert(S_MAX_APPEND == MS_RECORD_MAX_BLOCK, "one block bound");
_Static_assert(S_MAX_COMMIT <= MS_RECORD_LOG_MAX_APPEND, "append bound");
_Static_assert(S_MAX_COMMIT == MS_SCHEDULER_MAX_CLAIMS, "a pass's claims");
_Static_assert(MS_SCHEDULER_MAX_PREFETCH < MS_LEASE_FEED_MAX_LIVE_CLAIMS,
               "heartbeat");

struct ms_node {
    // options (owned copies)
    ms_node_options_t opts;        // strings point to the copies below
    char *data_dir;                // data dir
    char *backend;                 // backend name
    ms_gpu_plan_t gpu;             // which workers use the GPU
    char *api_bind;                // API bind address, or NULL
    char *dashboard_dir;           // dashboard assets, or NULL
    char *api_token_file;          // token file when the API asks
                                   // for a token (beyond
                                   // loopback), else NULL
    char *open_pool;               // open pool name, or NULL
    char *interface;               // zbeacon interface, or NULL
    char **peers;                  // static peers (n_peers strings)
    char checkpoint_dir[PATH_MAX]; // DATA_DIR/checkpoints
    char store_dir[PATH_MAX];      // DATA_DIR/store
    // parts
    ms_identity_t *identity;        // node key pair
    ms_store_t *store;              // the store
    ms_submit_t *submit;            // the submission path (over store)
    ms_lifecycle_t *lifecycle;      // sweep-control records (over store)
    ms_dataset_source_t *datasets;  // sweeps' datasets, blob answers
    ms_worker_pool_t *pool;         // worker processes
    ms_api_t *api;                  // HTTP API, or NULL
    ms_node_command_t *commands;    // HTTP -> loop requests, wake pipe
    ms_data_dir_t *dir;             // the data dir's layout and lock
    volatile sig_atomic_t stopping; // ms_node_stop was called
    ms_node_event_fn event_fn;      // progress events, or NULL
    void *event_arg;                // its argument
    // admission: certificate, members table (loop thread only)
    ms_authority_t *authority; // certificate, pool id, operator
    ms_members_t *members;     // admission table (a pool), or NULL
    ms_item_sync_t *item_sync; // authority items: check, keep, reconcile
    // what HTTP threads show of the node (the only node state they read)
    ms_node_status_t *status; // status page, peers, metrics snapshot
    // the pool: record log, leases, mesh and gossip (loop thread only)
    ms_lease_table_t *leases;      // the claim rule
    ms_lease_feed_t *lease_feed;   // merged and stored records to it
    ms_scheduler_t *scheduler;     // where a lease is decided
    ms_runner_t *runner;           // workers' runs
    ms_mesh_t *mesh;               // links to peers, or NULL (no pool)
    ms_record_log_t *log;          // our log over the store (gossip's
                                   // source and transport)
    ms_gossip_t *gossip;           // push + anti-entropy, or NULL
    ms_peer_table_t *peer_table;   // peers as the mesh reported them
    ms_settle_t *settle;           // own claims waiting for acks
    ms_grace_t *grace;             // the startup grace (no claims blind)
    int64_t next_renew_at;         // monotonic ms: renew own leases (alone)
    ms_pool_census_t *census;      // member and operator counts (store)
    ms_metrics_t metrics;          // own counters (ms_metrics.h; the rest:
                                   // s_metrics_gather)
    ms_claim_timer_t *claim_timer; // sweep commit times (claim-to-start)
    uint64_t n_rejected_messages;  // peer messages refused (gossip)
    ms_blob_store_t *blobs;        // dataset blobs (pool), or NULL
    ms_blob_fetch_t *fetch;        // blob fetches from peers, or NULL
    char blob_tmp_dir[PATH_MAX];   // DATA_DIR/blobs/tmp (uploads)
    ms_outbox_t *outbox;           // our results: this turn's, held
    int64_t trim_at;               // monotonic ms: next malloc_trim allowed
    ms_block_signer_t *signer;     // signs ours, checks peers' blocks
    int64_t turn_started_us;       // monotonic us: the loop woke (0: not
                                   // yet)
    // test hooks (ms_node.h "Test hooks"): NULL in meshsweepd
    ms_node_result_hook_fn result_hook; // rewrites own result rows
    void *result_hook_arg;              // its argument
    ms_node_work_hook_fn work_hook;     // results without training
    bool ignore_roles;   // tests: submit without the `submit` role
    void *work_hook_arg; // its argument
    // re-evaluation and kept weights (loop thread; see "Re-evaluation")
    ms_reeval_t *reeval;        // sampling, jobs, pins; NULL alone
    ms_keep_t *keep;            // our kept weights; with reeval
    char weights_dir[PATH_MAX]; // DATA_DIR/weights: worker output
    // events (GET /api/v1/events, ms_node_events)
    ms_node_events_t *events; // the ring and its producer, or NULL (no API)
    // idle_only (see "Volunteer behaviour" in ms_runner.c); the pause
    // figures go to the status (s_run_paused)
    ms_idle_t *idle; // others' CPU and the pause rule, or NULL
};

//  --------------------------------------------------------------------------
//  Records, workers or peers changed: the scheduler scans again.

static void
s_work_changed(ms_node_t *self)
{
    if (self->scheduler)
        ms_scheduler_changed(self->scheduler);
}

//  --------------------------------------------------------------------------
//  Log a line to stderr when verbose.

static void s_log(const ms_node_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(const ms_node_t *self, const char *fmt, ...)
{
    if (!self->opts.verbose)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "meshsweepd: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

//  --------------------------------------------------------------------------
//  Log one line (the ifaces' log: ms_submit_iface_t, ms_reeval_iface_t,
//  ms_outbox_iface_t).

static void
s_log_line(void *arg, const char *line)
{
    s_log(arg, "%s", line);
}

static int s_outbox_open(ms_node_t *self, ms_diag_t *diag);
static void s_turn_begin(ms_node_t *self);
static void s_turn_end(ms_node_t *self);
static void s_ev_result(ms_node_t *self, const uint8_t *task_id,
                        const uint8_t *node_id);
static void s_ev_verdict(ms_node_t *self, const uint8_t *task_id,
                         const ms_store_verdict_t *v);
static void s_ev_peer(ms_node_t *self, const uint8_t *id, ms_peer_state_t state,
                      int previous);
static void s_ev_turn(ms_node_t *self);

//  --------------------------------------------------------------------------
//  Send an event (a JSON object, taken) to the handler.

static void
s_emit(ms_node_t *self, json_t *event)
{
    if (event && self->event_fn) {
        char *text = json_dumps(event, JSON_COMPACT);
        if (text)
            self->event_fn(self->event_arg, text);
        free(text);
    }
    json_decref(event);
}

//  --------------------------------------------------------------------------
//  The node's id as raw bytes (the public key).

static const uint8_t *
s_node_pk(const ms_node_t *self)
{
    return ms_identity_public_key(self->identity);
}

static int s_pool_open(ms_node_t *self, ms_diag_t *diag);
static int s_submit_open(ms_node_t *self, ms_diag_t *diag);
static int s_commands_open(ms_node_t *self, ms_diag_t *diag);
static int s_mesh_open(ms_node_t *self, ms_diag_t *diag);
static int s_authority_open(ms_node_t *self, const char *enroll_key,
                            ms_diag_t *diag);
static int s_signer_open(ms_node_t *self, ms_diag_t *diag);

//  --------------------------------------------------------------------------
//  The number of workers to start: --workers (0: one per core), capped by
//  our certificate's max_workers (DESIGN.md "Identity, pools and
//  admission"), with a warning when the cap lowers it. The cap is read at
//  start: a certificate installed later (SIGHUP) applies at the next
//  start.

static int
s_capped_workers(const ms_node_t *self)
{
    int n = self->opts.n_workers;
    const ms_cert_chain_t *chain = ms_authority_chain(self->authority);
    if (!chain || chain->leaf.max_workers == 0)
        return n;
    long want = n;
    if (want < 1) {
        want = ms_platform_usable_cpus();
    }
    if ((uint64_t) want <= chain->leaf.max_workers)
        return n;
    fprintf(stderr,
            "meshsweepd: warning: the certificate caps this node at %u "
            "worker(s); running %u, not %ld\n",
            chain->leaf.max_workers, chain->leaf.max_workers, want);
    return (int) chain->leaf.max_workers;
}

//  --------------------------------------------------------------------------
//  Whether this node may submit sweeps and sweep-control records: always
//  in an open pool (or before a certificate), else when its certificate
//  grants the `submit` role (DESIGN.md "Work, claims and leases").

static bool
s_may_submit(const ms_node_t *self)
{
    const ms_cert_chain_t *chain = ms_authority_chain(self->authority);
    return !chain || self->ignore_roles ||
           (chain->leaf.roles & MS_CERT_ROLE_SUBMIT);
}

//  Set diag for a refused submission or control (MS_ERR_UNTRUSTED: the
//  API answers 403).

static int
s_no_submit_role(const ms_node_t *self, ms_diag_t *diag)
{
    return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "role",
                            "this node's certificate (operator %s) lacks the "
                            "`submit` role: submit from a member with it, or "
                            "ask the pool authority for `pool invite "
                            "--roles worker,submit`",
                            ms_authority_operator(self->authority));
}
static void s_reload_if_asked(ms_node_t *self);
static int s_append(ms_node_t *self, size_t n,
                    const ms_store_payload_t *payloads);
static int s_record_log_open(ms_node_t *self);
static int s_item_sync_open(ms_node_t *self);
static void s_pool_close(ms_node_t *self);
static int s_api_submit(void *arg, const char *text, size_t n,
                        const char *files, char **summary, ms_diag_t *diag);
static int s_api_blob_put(void *arg, const ms_hash_t *hash,
                          const char *tmp_path, ms_diag_t *diag);
static int s_api_authority(void *arg, const char *text, size_t n,
                           char **summary, ms_diag_t *diag);
static int s_api_control(void *arg, const ms_hash_t *sweep_id,
                         const char *action, int32_t priority, ms_diag_t *diag);
static json_t *s_api_peers(void *arg);
static int64_t s_api_running_elsewhere(void *arg, const uint8_t *sweep_id);
static json_t *s_api_task_leases(void *arg, const ms_hash_t *task_id);
static json_t *s_api_blobs_held(void *arg, const json_t *hashes);
static char *s_api_blob_path(void *arg, const ms_hash_t *hash);
static json_t *s_api_status(void *arg);
static int64_t s_ne_running_elsewhere(void *arg,
                                      const uint8_t sweep_id[MS_HASH_BYTES]);
static int s_status_open(ms_node_t *self, int64_t opened_at_ms);
static int s_api_open(ms_node_t *self, const char *token_file, ms_diag_t *diag);

//  --------------------------------------------------------------------------
//  Fork the workers (and the idle monitor with idle_only). Workers are
//  forked before the API starts its threads. Which of them use the GPU is
//  decided once, here (ms_gpu.h: the probe runs in a child, as CUDA does
//  not survive the fork of the workers). Returns MS_OK or the error of
//  the GPU plan, the worker pool or the idle monitor (in DIAG).

static int
s_workers_open(ms_node_t *self, ms_diag_t *diag)
{
    ms_worker_options_t wopts;
    ms_worker_options_defaults(&wopts);
    wopts.n_workers = s_capped_workers(self);
    int n_workers = wopts.n_workers;
    if (n_workers < 1) {
        n_workers = ms_platform_usable_cpus();
    }
    int rc = ms_gpu_plan(&self->gpu, self->backend, self->opts.gpu_workers,
                         n_workers, ms_gpu_probe, diag);
    if (rc != MS_OK)
        return rc;
    if (self->gpu.note[0] && self->opts.verbose)
        s_log(self, "%s", self->gpu.note);
    wopts.n_workers = n_workers;
    wopts.nice = self->opts.worker_nice;
    wopts.blas_threads = self->opts.blas_threads;
    wopts.backend = self->gpu.gpu_backend;
    wopts.n_gpu_workers = self->gpu.n_gpu_workers;
    wopts.checkpoint_dir = self->checkpoint_dir;
    wopts.verbose = self->opts.verbose;
    wopts.memory_mb = self->opts.worker_memory_mb;
    rc = ms_worker_pool_open(&self->pool, &wopts, diag);
    if (rc != MS_OK)
        return rc;
    if (self->opts.idle_only) {
        ms_idle_options_t io;
        ms_idle_options_defaults(&io);
        io.cpu_pct = self->opts.idle_cpu_pct;
        io.busy_s = self->opts.idle_busy_s;
        io.quiet_s = self->opts.idle_quiet_s;
        rc = ms_idle_open(&self->idle, &io, diag);
        if (rc != MS_OK)
            return rc;
        if (ms_idle_source(self->idle) == MS_IDLE_SOURCE_CGROUP)
            s_log(self, "idle_only: own CPU time from %s",
                  ms_idle_cgroup(self->idle));
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open a node.

int
ms_node_open(ms_node_t **out, const ms_node_options_t *opts, ms_diag_t *diag)
{
    *out = NULL;
    // czmq installs its own SIGINT/SIGTERM handlers (they only set
    // zsys_interrupted, which nothing here reads) the first time a czmq
    // object is made. A node that opens its mesh later - its first
    // certificate on SIGHUP - would then ignore SIGTERM: the embedding
    // program's handlers must stay in force (meshsweepd.c s_on_signal).
    zsys_handler_set(NULL);
    int prc = ms_node_options_check(opts, diag);
    if (prc != MS_OK)
        return prc;
    const char *backend = opts->backend ? opts->backend : "auto";
    // A backend cuda that cannot run is refused at the GPU probe, before
    // the workers start (below): rather than fail every task.

    ms_node_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->opts = *opts;
    self->data_dir = strdup(opts->data_dir);
    self->backend = strdup(backend);
    self->api_bind = opts->api_bind ? strdup(opts->api_bind) : NULL;
    self->opts.data_dir = self->data_dir;
    self->opts.backend = self->backend;
    self->opts.api_bind = self->api_bind;
    self->opts.api_token_file = NULL; // set below when a token is asked
    self->dashboard_dir =
        opts->dashboard_dir ? strdup(opts->dashboard_dir) : NULL;
    self->opts.dashboard_dir = self->dashboard_dir;
    if (self->opts.blas_threads < 1)
        self->opts.blas_threads = 1;
    int64_t opened_at_ms = ms_clock_mono_ms(); // uptime counts from here
    int rc = MS_ERR_NOMEM;
    if (!self->data_dir || !self->backend ||
        (opts->api_bind && !self->api_bind) ||
        (opts->dashboard_dir && !self->dashboard_dir))
        goto fail;
    self->open_pool = opts->open_pool ? strdup(opts->open_pool) : NULL;
    self->interface = opts->interface ? strdup(opts->interface) : NULL;
    self->opts.open_pool = self->open_pool;
    self->opts.interface = self->interface;
    self->opts.enroll_key = NULL; // the authority keeps its copy
    if ((opts->open_pool && !self->open_pool) ||
        (opts->interface && !self->interface))
        goto fail;
    if (opts->n_peers > 0) {
        self->peers = calloc((size_t) opts->n_peers, sizeof(char *));
        if (!self->peers)
            goto fail;
        for (int i = 0; i < opts->n_peers; i++)
            if (!(self->peers[i] = strdup(opts->peers[i])))
                goto fail;
    }
    self->opts.peers = (const char *const *) self->peers;

    char path[PATH_MAX + 32];
    rc = ms_data_dir_open(&self->dir, self->data_dir, diag); // one node
    if (rc != MS_OK)
        goto fail;
    ms_data_dir_path(self->dir, "identity", path, sizeof path);
    rc = ms_identity_open(&self->identity, path, diag);
    if (rc != MS_OK)
        goto fail;
    rc = MS_ERR_NOMEM;
    if (!(self->peer_table = ms_peer_table_new(s_node_pk(self))))
        goto fail;
    rc = s_authority_open(self, opts->enroll_key, diag);
    if (rc != MS_OK)
        goto fail;
    ms_data_dir_path(self->dir, "store", self->store_dir,
                     sizeof self->store_dir);
    rc = ms_store_open(&self->store, self->store_dir, NULL, diag);
    if (rc != MS_OK)
        goto fail;
    rc = s_signer_open(self, diag);
    if (rc != MS_OK)
        goto fail;
    rc = s_record_log_open(self);
    if (rc == MS_OK)
        rc = s_item_sync_open(self);
    if (rc != MS_OK)
        goto fail;
    size_t n_reset = 0;
    rc = ms_store_reset_claims(self->store, s_node_pk(self), &n_reset);
    if (rc != MS_OK) {
        ms_diag_set_code(diag, rc, self->store_dir,
                         "cannot reset running tasks: %s", ms_strerror(rc));
        goto fail;
    }
    if (n_reset)
        s_log(self,
              "%zu task(s) left running by the last run are pending "
              "again (they resume from their checkpoints)",
              n_reset);
    ms_data_dir_path(self->dir, "checkpoints", self->checkpoint_dir,
                     sizeof self->checkpoint_dir);
    rc = s_outbox_open(self, diag);
    if (rc != MS_OK)
        goto fail;
    rc = s_submit_open(self, diag);
    if (rc != MS_OK)
        goto fail;
    rc = ms_data_dir_make(self->dir, "weights", self->weights_dir,
                          sizeof self->weights_dir, diag);
    if (rc != MS_OK)
        goto fail;

    rc = s_commands_open(self, diag);
    if (rc != MS_OK)
        goto fail;

    rc = s_workers_open(self, diag);
    if (rc != MS_OK)
        goto fail;
    rc = s_status_open(self, opened_at_ms);
    if (rc != MS_OK)
        goto fail;
    rc = s_pool_open(self, diag);
    if (rc != MS_OK)
        goto fail;
    ms_node_status_refresh(self->status); // published before the API runs
    rc = s_api_open(self, opts->api_token_file, diag);
    if (rc != MS_OK)
        goto fail;
    // (no log line here: meshsweepd prints the node id, workers and data
    // dir at start, and a verbose line said it all a second time)
    *out = self;
    return MS_OK;

fail:
    ms_node_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Stop everything and free.

void
ms_node_destroy(ms_node_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_node_t *self = *self_p;
    self->stopping = 1;
    ms_node_command_stop(self->commands);
    ms_node_command_fail(self->commands, MS_ERR_INTERRUPTED);
    ms_api_destroy(&self->api);            // no HTTP thread runs after this
    ms_node_events_destroy(&self->events); // (the API closed every stream)
    ms_node_command_fail(self->commands, MS_ERR_INTERRUPTED);
    s_pool_close(self); // release our claims first (records), then stop
    // Tasks on workers go back to pending; checkpoints stay.
    ms_runner_destroy(&self->runner);
    ms_outbox_destroy(&self->outbox); // held files stay for the next run
    ms_worker_pool_destroy(&self->pool);
    ms_idle_destroy(&self->idle);
    ms_submit_destroy(&self->submit);
    ms_lifecycle_destroy(&self->lifecycle);
    ms_dataset_source_destroy(&self->datasets);
    ms_record_log_destroy(&self->log);
    ms_node_status_destroy(&self->status); // (it borrows the store)
    ms_store_destroy(&self->store);
    ms_block_signer_destroy(&self->signer); // it signed for the store
    ms_identity_destroy(&self->identity);
    ms_item_sync_destroy(&self->item_sync); // borrows store, members
    ms_members_destroy(&self->members);
    ms_authority_destroy(&self->authority);
    ms_data_dir_destroy(&self->dir); // releases the data dir lock
    ms_keep_destroy(&self->keep);
    ms_reeval_destroy(&self->reeval);
    ms_blob_fetch_destroy(&self->fetch); // removes its temp files
    ms_blob_store_destroy(&self->blobs);
    ms_peer_table_destroy(&self->peer_table);
    ms_settle_destroy(&self->settle);
    ms_pool_census_destroy(&self->census);
    ms_claim_timer_destroy(&self->claim_timer);
    ms_grace_destroy(&self->grace);
    for (int i = 0; self->peers && i < self->opts.n_peers; i++)
        free(self->peers[i]);
    free(self->peers);
    free(self->open_pool);
    free(self->interface);
    ms_node_command_destroy(&self->commands); // closes the wake pipe
    free(self->data_dir);
    free(self->backend);
    free(self->api_bind);
    free(self->dashboard_dir);
    free(self->api_token_file);
    *self_p = NULL;
    free(self);
}

//  ==========================================================================
//  Submissions (node/data/ms_submit): the node's side of ms_submit_iface_t

//  --------------------------------------------------------------------------
//  ms_submit_iface_t: append a sweep's records to our log.

static int
s_si_append(void *arg, size_t n, const ms_store_payload_t *payloads)
{
    return s_append(arg, n, payloads);
}

//  --------------------------------------------------------------------------
//  ms_submit_iface_t: reopen a cancelled sweep submitted again.

static int
s_si_reopen(void *arg, const ms_hash_t *sweep_id)
{
    ms_node_t *self = arg;
    return ms_lifecycle_reopen(self->lifecycle, sweep_id);
}

//  --------------------------------------------------------------------------
//  ms_submit_iface_t: a sweep is stored; a fresh one's commit time is noted
//  (claim-to-start).

static void
s_si_stored(void *arg, const ms_hash_t *sweep_id, bool fresh)
{
    ms_node_t *self = arg;
    if (fresh)
        ms_claim_timer_note(self->claim_timer, sweep_id, ms_clock_mono_us());
    s_work_changed(self);
}

//  --------------------------------------------------------------------------
//  ms_submit_iface_t and ms_dataset_source_iface_t: our blob store, or
//  NULL (in no pool).

static ms_blob_store_t *
s_si_blobs(void *arg)
{
    ms_node_t *self = arg;
    return self->blobs;
}

//  --------------------------------------------------------------------------
//  ms_dataset_source_iface_t: start a blob fetch from PEERS (a failure to
//  start is a blob fetch failure).

static int
s_ds_fetch(void *arg, const ms_hash_t *hash, uint64_t size,
           const uint8_t (*peers)[MS_BLOB_PEER_ID_BYTES], size_t n_peers,
           int64_t now)
{
    ms_node_t *self = arg;
    int rc = self->fetch ? ms_blob_fetch_start(self->fetch, hash, size, peers,
                                               n_peers, now)
                         : MS_ERR_UNSUPPORTED;
    if (rc != MS_OK)
        self->metrics.blob_fetch_failures_total++;
    return rc;
}

//  --------------------------------------------------------------------------
//  ms_dataset_source_iface_t: a sweep's dataset became ready: rescan.

static void
s_ds_ready(void *arg, const ms_hash_t *sweep_id)
{
    (void) sweep_id;
    s_work_changed(arg);
}

static size_t s_ri_live_peers(void *arg, uint8_t (**out)[MS_HASH_BYTES]);

static void s_run_emit(void *arg, json_t *event);
static void s_run_changed(void *arg);

//  --------------------------------------------------------------------------
//  ms_lifecycle_iface_t: stop our workers on a cancelled sweep's tasks.

static void
s_lc_stop_sweep(void *arg, const ms_hash_t *sweep_id)
{
    ms_node_t *self = arg;
    ms_runner_stop_sweep(self->runner, sweep_id);
}

//  --------------------------------------------------------------------------
//  Make DATA_DIR/datasets, the dataset source and the submission path over
//  our store.

static int
s_submit_open(ms_node_t *self, ms_diag_t *diag)
{
    char dir[PATH_MAX];
    int rc = ms_data_dir_make(self->dir, "datasets", dir, sizeof dir, diag);
    if (rc != MS_OK)
        return rc;
    ms_dataset_source_config_t dcfg = {.datasets_dir = dir,
                                       .max_dataset_bytes =
                                           self->opts.max_dataset_bytes,
                                       .clock = NULL};
    ms_dataset_source_iface_t diface = {.arg = self,
                                        .log = s_log_line,
                                        .blobs = s_si_blobs,
                                        .live_peers = s_ri_live_peers,
                                        .fetch = s_ds_fetch,
                                        .ready = s_ds_ready};
    self->datasets = ms_dataset_source_new(self->store, &dcfg, &diface);
    if (!self->datasets)
        return MS_ERR_NOMEM;
    ms_lifecycle_iface_t liface = {.arg = self,
                                   .log = s_log_line,
                                   .emit = s_run_emit,
                                   .append = s_si_append,
                                   .changed = s_run_changed,
                                   .stop_sweep = s_lc_stop_sweep};
    self->lifecycle = ms_lifecycle_new(self->store, &liface);
    if (!self->lifecycle)
        return MS_ERR_NOMEM;
    ms_submit_config_t cfg = {.max_tasks_per_sweep =
                                  self->opts.max_tasks_per_sweep,
                              .max_dataset_bytes = self->opts.max_dataset_bytes,
                              .clock = NULL};
    ms_submit_iface_t iface = {.arg = self,
                               .log = s_log_line,
                               .append = s_si_append,
                               .reopen = s_si_reopen,
                               .stored = s_si_stored,
                               .blobs = s_si_blobs};
    self->submit = ms_submit_new(self->store, self->datasets, &cfg, &iface);
    return self->submit ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  Submit a spec (ms_submit_spec: local files allowed when asked).

int
ms_node_submit(ms_node_t *self, const char *spec_text, size_t n,
               bool local_files, ms_hash_t *sweep_id, bool *existed,
               char **summary_json, ms_diag_t *diag)
{
    return ms_submit_spec(self->submit, spec_text, n, NULL, local_files, NULL,
                          sweep_id, existed, summary_json, diag);
}

//  --------------------------------------------------------------------------
//  Update the busy count HTTP threads show.

static void
s_update_busy(ms_node_t *self)
{
    ms_node_status_set_busy(self->status, ms_runner_busy(self->runner));
}

//  --------------------------------------------------------------------------
//  Start pending tasks on idle workers.

static int s_schedule_pool(ms_node_t *self);

static int
s_schedule(ms_node_t *self)
{
    if (ms_runner_idle_tick(self->runner, ms_clock_mono_ms())) {
        s_update_busy(self);
        return MS_OK; // paused for the machine's owner: start nothing
    }
    return s_schedule_pool(self);
}

static int s_tr_active(void *arg, uint8_t (*out)[MS_GOSSIP_ID_BYTES], int max);
static int s_blob_send(void *arg, const uint8_t to[MS_BLOB_PEER_ID_BYTES],
                       const ms_wire_envelope_t *env);
static void s_on_result(ms_node_t *self, ms_runner_run_t *r, json_t *body);

//  ==========================================================================
//  The pool: records, leases, mesh and gossip (the map at the top)
//
//  Signed blocks (node/log/ms_block_signer): the store's writer signs
//  ours with the signer, which holds the key, our id and the pool id by
//  value (it never reads this struct); a peer's block is checked by it in
//  s_on_message before gossip sees it; a stored block of ours that this
//  process did not sign is checked, and signed again, when it is served.

//  --------------------------------------------------------------------------
//  ms_block_signer_iface_t: the members table blocks are admitted by.

static const ms_members_t *
s_bs_members(void *arg)
{
    const ms_node_t *self = arg;
    return self->members;
}

//  --------------------------------------------------------------------------
//  Create the block signer over the open store (the pool id as it is
//  now; own blocks from the next seq on are signed by this process) and
//  have the store sign with it. MS_OK, MS_ERR_NOMEM, or the store's error
//  reading the log (in DIAG).

static int
s_signer_open(ms_node_t *self, ms_diag_t *diag)
{
    ms_block_signer_config_t cfg = {.identity = self->identity,
                                    .incarnation =
                                        ms_store_incarnation(self->store)};
    ms_authority_pool_id(self->authority, cfg.pool_id);
    int rc = ms_store_held(self->store, s_node_pk(self), cfg.incarnation,
                           &cfg.signed_from);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, self->store_dir,
                                "cannot read the log: %s", ms_strerror(rc));
    cfg.signed_from++; // what this process appends from now on
    ms_block_signer_iface_t iface = {.arg = self, .members = s_bs_members};
    self->signer = ms_block_signer_new(&cfg, &iface);
    if (!self->signer)
        return MS_ERR_NOMEM;
    ms_block_signer_attach(self->signer, self->store);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Whether a record of origin (incarnation, seq) counts here: always in
//  an open pool; with an authority, within its revocation's cut.

static bool
s_counts(ms_node_t *self, const uint8_t *origin, uint64_t incarnation,
         uint64_t seq)
{
    if (!self->members || !ms_members_has_authority(self->members))
        return true;
    return ms_members_counts(self->members, origin, incarnation, seq);
}

//  ==========================================================================
//  Authority items (node/mesh/ms_item_sync): the node's side of
//  ms_item_sync_iface_t. The class checks, keeps, applies and reconciles
//  the items; the node sends its envelopes, names the push targets, and
//  acts on a revocation (mesh, lease table, scheduler).

//  --------------------------------------------------------------------------
//  ms_item_sync_iface_t: one envelope to a linked peer (errors: the next
//  round tries again).

static void
s_is_send(void *arg, const uint8_t to[MS_ITEM_SYNC_ID_BYTES],
          const ms_wire_envelope_t *env)
{
    ms_node_t *self = arg;
    if (self->mesh)
        ms_mesh_send(self->mesh, to, env);
}

//  --------------------------------------------------------------------------
//  ms_item_sync_iface_t: close the link to a revoked node and deny its
//  key (the mesh marks it revoked in the members table too).

static void
s_is_revoke(void *arg, const uint8_t subject[MS_ITEM_SYNC_ID_BYTES],
            const ms_members_cut_t *cut)
{
    ms_node_t *self = arg;
    if (self->mesh)
        ms_mesh_revoke(self->mesh, subject, cut);
    else
        ms_members_revoke(self->members, subject, cut);
}

//  --------------------------------------------------------------------------
//  ms_item_sync_iface_t: a revocation was applied. Another node's lease
//  facts go; what still counts within the cut comes back from the store
//  (ms_store_claims_by_task leaves out claims above it; a task whose
//  counted result stands is not pending).

static void
s_is_revoked(void *arg, const uint8_t subject[MS_ITEM_SYNC_ID_BYTES],
             bool self_revoked)
{
    ms_node_t *self = arg;
    if (!self_revoked)
        ms_lease_feed_reload_node(self->lease_feed, subject);
    s_work_changed(self);
}

//  --------------------------------------------------------------------------
//  Make the item sync (at open, once the store is; it joins with the
//  mesh, s_mesh_open).

static int
s_item_sync_open(ms_node_t *self)
{
    ms_item_sync_config_t cfg = {.store = self->store};
    memcpy(cfg.node_pk, s_node_pk(self), MS_ITEM_SYNC_ID_BYTES);
    ms_item_sync_iface_t iface = {.arg = self,
                                  .send = s_is_send,
                                  .active_peers = s_tr_active,
                                  .revoke = s_is_revoke,
                                  .revoked = s_is_revoked};
    self->item_sync = ms_item_sync_new(&cfg, &iface);
    return self->item_sync ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  ms_node_command_iface_t: an item posted to the API
//  (ms_item_sync_post).

static int
s_item_text(void *arg, const char *text, size_t n, char **summary,
            ms_diag_t *diag)
{
    ms_node_t *self = arg;
    return ms_item_sync_post(self->item_sync, text, n, summary, diag);
}
//  --------------------------------------------------------------------------
//  Append n (1 to S_MAX_COMMIT) payloads of ours in one durable commit
//  and push them (ms_record_log_append); results are then events.
//  Returns the store's code.

static int
s_append(ms_node_t *self, size_t n, const ms_store_payload_t *payloads)
{
    assert(n >= 1 && n <= S_MAX_COMMIT);
    int rc = ms_record_log_append(self->log, self->gossip, n, payloads, NULL);
    if (rc == MS_OK) {
        for (size_t i = 0; i < n; i++)
            if (payloads[i].kind == MS_RECORD_RESULT)
                s_ev_result(self, payloads[i].u.result.task_id,
                            s_node_pk(self));
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Release our claim on (task, slot): lease table and a release record.

static void
s_release(ms_node_t *self, const ms_hash_t *task_id, uint32_t slot,
          uint32_t epoch, uint32_t reason)
{
    ms_runner_release(self->runner, task_id, slot, epoch, reason);
}

//  --------------------------------------------------------------------------
//  ms_lease_feed_iface_t: a merged record changed the work.

static void
s_lf_changed(void *arg)
{
    s_work_changed(arg);
}

//  --------------------------------------------------------------------------
//  ms_lease_feed_iface_t: a merged result landed: an event.

static void
s_lf_result(void *arg, const uint8_t task_id[MS_LEASE_ID_BYTES],
            const uint8_t origin[MS_LEASE_ID_BYTES])
{
    s_ev_result(arg, task_id, origin);
}

//  --------------------------------------------------------------------------
//  Emit the verdict changes the store saw (DESIGN.md: "A verdict may
//  change when late replicas arrive: it carries a revision, and the
//  change is an event"), a bounded number per turn. A change may open a
//  slot (disputed): the scheduler looks again.

static void
s_emit_verdicts(ms_node_t *self)
{
    uint8_t ids[64][MS_STORE_ID_BYTES];
    uint64_t dropped = 0;
    size_t n = ms_store_verdict_changes(self->store, ids, 64, &dropped);
    if (dropped)
        s_log(self, "%llu verdict event(s) dropped (queue full)",
              (unsigned long long) dropped);
    if (n)
        s_work_changed(self);
    ms_store_verdict_t *v = n ? malloc(sizeof *v) : NULL;
    for (size_t i = 0; v && i < n; i++) {
        if (ms_store_get_verdict(self->store, ids[i], v) != MS_OK)
            continue;
        s_ev_verdict(self, ids[i], v);
        ms_hash_t tid;
        char thex[MS_HASH_HEX_LEN + 1];
        memcpy(tid.bytes, ids[i], MS_HASH_BYTES);
        ms_hash_hex(&tid, thex);
        s_emit(self,
               json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:i, s:b}",
                         "event", "verdict", "task_id", thex, "verdict",
                         ms_verdict_state_name((ms_verdict_state_t) v->verdict),
                         "verdict_revision", (json_int_t) v->revision,
                         "operators", v->operators, "n_operators",
                         (json_int_t) v->n_operators, "n_agreeing",
                         (json_int_t) v->n_agreeing, "slots_wanted",
                         (json_int_t) v->slots_wanted, "final", v->final));
    }
    free(v);
}

//  --------------------------------------------------------------------------
//  Tell the store who counts in the pool (ms_pool_census: the member
//  count, operators and their number) after a peer changed; the
//  scheduler looks again when the slots per task changed.

static void
s_update_members(ms_node_t *self)
{
    uint8_t(*owners)[MS_PEER_TABLE_ID_BYTES] = NULL;
    size_t n = ms_peer_table_members(self->peer_table, &owners); // self first
    if (n > 0 &&
        ms_pool_census_update(
            self->census, self->members, ms_authority_operator(self->authority),
            (const uint8_t(*)[MS_POOL_CENSUS_ID_BYTES])(owners + 1), n - 1))
        s_work_changed(self);
    free(owners);
}

//  --------------------------------------------------------------------------
//  True when the task is on a worker of ours or settling.

static bool
s_task_busy(const ms_node_t *self, const uint8_t *task_id)
{
    if (ms_runner_has_task(self->runner, task_id))
        return true;
    if (ms_outbox_queued(self->outbox, task_id))
        return true;
    return self->settle && ms_settle_contains(self->settle, task_id);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: log a line.

static void
s_sched_log(void *arg, const char *line)
{
    s_log(arg, "%s", line);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: no claims while stopping or in the startup grace.

static bool
s_sched_holding(void *arg, int64_t now)
{
    ms_node_t *self = arg;
    return self->stopping || ms_grace_holding(self->grace, now);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: in a pool (a mesh).

static bool
s_sched_in_pool(void *arg)
{
    ms_node_t *self = arg;
    return self->mesh != NULL;
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: what the node knows of a sweep.

static bool
s_sched_sweep(void *arg, const uint8_t sweep_id[MS_HASH_BYTES],
              ms_scheduler_sweep_t *out)
{
    ms_node_t *self = arg;
    ms_dataset_source_sweep_t ds;
    if (!ms_dataset_source_sweep(self->datasets, sweep_id, &ds))
        return false;
    out->has_dataset = ds.dataset != NULL;
    out->dataset_error = ds.error;
    out->dataset_bytes = ds.bytes;
    return true;
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: a sweep's dataset is not here: ask the dataset
//  hook once.

static void
s_sched_dataset_wanted(void *arg, const uint8_t sweep_id[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    ms_dataset_source_want(self->datasets, sweep_id);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: the members for rendezvous owners.

static size_t
s_sched_members(void *arg, uint8_t (**out)[MS_ASSIGN_ID_BYTES])
{
    ms_node_t *self = arg;
    return ms_peer_table_members(self->peer_table, out);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: a task on a worker, in this turn's results or
//  settling.

static bool
s_sched_task_busy(void *arg, const uint8_t task_id[MS_HASH_BYTES])
{
    return s_task_busy(arg, task_id);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: a held (committed, unrevealed) result of a task.

static bool
s_sched_held(void *arg, const uint8_t task_id[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    return ms_outbox_held(self->outbox, task_id);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: append records of ours in one commit.

static int
s_sched_append(void *arg, size_t n, const ms_store_payload_t *payloads)
{
    return s_append(arg, n, payloads);
}

//  --------------------------------------------------------------------------
//  ms_scheduler_iface_t: give a held task up.

static void
s_sched_fail(void *arg, const ms_hash_t *task_id, const ms_hash_t *sweep_id,
             uint32_t slot, uint32_t epoch, ms_failure_class_t cls,
             const char *reason)
{
    ms_node_t *self = arg;
    ms_runner_fail(self->runner, task_id, sweep_id, slot, epoch, cls, reason);
}

//  --------------------------------------------------------------------------
//  Create the scheduler over our store and lease table.

static int
s_scheduler_open(ms_node_t *self)
{
    ms_scheduler_config_t cfg = {
        .n_workers = ms_worker_pool_size(self->pool),
        .n_gpu_workers = self->gpu.n_gpu_workers,
        .gpu_backend = self->gpu.gpu_backend,
        .worker_memory_mb = self->opts.worker_memory_mb,
        .gpu_memory_bytes = ms_gpu_worker_budget(&self->gpu)};
    memcpy(cfg.node_id, s_node_pk(self), MS_HASH_BYTES);
    ms_scheduler_iface_t iface = {.arg = self,
                                  .log = s_sched_log,
                                  .holding = s_sched_holding,
                                  .in_pool = s_sched_in_pool,
                                  .sweep = s_sched_sweep,
                                  .dataset_wanted = s_sched_dataset_wanted,
                                  .members = s_sched_members,
                                  .task_busy = s_sched_task_busy,
                                  .held = s_sched_held,
                                  .append = s_sched_append,
                                  .fail = s_sched_fail};
    self->scheduler = ms_scheduler_new(self->store, self->leases, &cfg, &iface);
    return self->scheduler ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: publish an event.

static void
s_run_emit(void *arg, json_t *event)
{
    s_emit(arg, event);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: the scheduler scans again.

static void
s_run_changed(void *arg)
{
    s_work_changed(arg);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: the peers a claim waits for (the reachable ones).

static size_t
s_run_settle_peers(void *arg, uint8_t (**out)[MS_SETTLE_ID_BYTES])
{
    ms_node_t *self = arg;
    return ms_peer_table_reachable(self->peer_table, out);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a claim settled (the scheduler's prefetch window).

static void
s_run_settled(void *arg, double waited_ms)
{
    ms_node_t *self = arg;
    ms_scheduler_settled(self->scheduler, waited_ms);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a sweep's dataset object for workers, or NULL.

static const json_t *
s_run_dataset(void *arg, const ms_hash_t *sweep_id)
{
    ms_node_t *self = arg;
    return ms_dataset_source_dataset(self->datasets, sweep_id);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a task of the sweep started here.

static void
s_run_sweep_started(void *arg, const ms_hash_t *sweep_id)
{
    ms_node_t *self = arg;
    ms_node_status_sweep_started(self->status, sweep_id);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: whether trained tasks write their weights.

static bool
s_run_keeps_weights(void *arg)
{
    ms_node_t *self = arg;
    return self->blobs || self->opts.weights_out_dir;
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: the test's work hook, or NULL.

static json_t *
s_run_work_hook(void *arg, const char *task_hex, const char *sweep_hex,
                const json_t *config)
{
    ms_node_t *self = arg;
    if (!self->work_hook)
        return NULL;
    return self->work_hook(self->work_hook_arg, task_hex, sweep_hex, config);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a task's work started (ms_claim_timer: the figure,
//  logged and summarised in the status).

static void
s_run_claim_to_start(void *arg, const ms_hash_t *sweep_id, int64_t free_us,
                     const char *thex, int64_t started_us)
{
    ms_node_t *self = arg;
    double ms = 0;
    if (!ms_claim_timer_measure(self->claim_timer, sweep_id, free_us,
                                started_us, &ms))
        return;
    s_log(self, "task %.12s claim-to-start %.2f ms", thex, ms);
    ms_node_status_claim_to_start(self->status, ms);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a result done in the node.

static void
s_run_result(void *arg, ms_runner_run_t *run, json_t *body)
{
    s_on_result(arg, run, body);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a task given up here.

static void
s_run_gave_up(void *arg, const ms_hash_t *task_id)
{
    ms_node_t *self = arg;
    ms_scheduler_gave_up(self->scheduler, task_id);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a worker died (worker_crashes_total, on the status
//  page).

static void
s_run_worker_died(void *arg)
{
    ms_node_t *self = arg;
    ms_node_status_worker_crashed(self->status);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: a re-evaluation's worker ended: ms_reeval's outcome.

static void
s_run_reeval_event(void *arg, const uint8_t target[MS_HASH_BYTES],
                   const ms_worker_event_t *ev)
{
    ms_node_t *self = arg;
    if (self->reeval)
        ms_reeval_worker_event(self->reeval, target, ev);
}

//  --------------------------------------------------------------------------
//  ms_runner_iface_t: the pause figures, copied for HTTP threads.

static void
s_run_paused(void *arg, const ms_runner_pause_t *pause)
{
    ms_node_t *self = arg;
    ms_node_status_paused(self->status, pause);
}

//  --------------------------------------------------------------------------
//  Create the runner over our store, lease table, settle list and workers.

static int
s_runner_open(ms_node_t *self)
{
    ms_runner_config_t cfg = {.checkpoint_dir = self->checkpoint_dir,
                              .weights_dir = self->weights_dir,
                              .settle_ms = self->opts.settle_ms,
                              .heartbeat_ms = self->opts.heartbeat_ms,
                              .idle_cpu_pct = self->opts.idle_cpu_pct,
                              .idle_busy_s = self->opts.idle_busy_s,
                              .idle_quiet_s = self->opts.idle_quiet_s,
                              .max_pause_s = self->opts.max_pause_s,
                              .retry_cap = self->opts.retry_cap};
    memcpy(cfg.node_id, s_node_pk(self), MS_HASH_BYTES);
    ms_runner_iface_t iface = {.arg = self,
                               .log = s_sched_log,
                               .emit = s_run_emit,
                               .append = s_sched_append,
                               .changed = s_run_changed,
                               .in_pool = s_sched_in_pool,
                               .settle_peers = s_run_settle_peers,
                               .settled = s_run_settled,
                               .dataset = s_run_dataset,
                               .sweep_started = s_run_sweep_started,
                               .keeps_weights = s_run_keeps_weights,
                               .work_hook = s_run_work_hook,
                               .claim_to_start = s_run_claim_to_start,
                               .result = s_run_result,
                               .gave_up = s_run_gave_up,
                               .paused = s_run_paused,
                               .worker_died = s_run_worker_died,
                               .reeval_event = s_run_reeval_event};
    self->runner = ms_runner_new(self->store, self->leases, self->settle,
                                 self->pool, self->idle, &cfg, &iface);
    return self->runner ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  The pool scheduler: start the settled claims, then claim what
//  ms_scheduler_claim decides and put the claims on the settle list.

static int
s_schedule_pool(ms_node_t *self)
{
    int64_t now = ms_clock_mono_ms();
    ms_runner_start_settled(self->runner, now);
    ms_store_payload_t claims[S_MAX_COMMIT];
    size_t n_claims = 0;
    int rc = ms_scheduler_claim(
        self->scheduler, now, ms_worker_pool_idle(self->pool),
        (int) ms_settle_count(self->settle), claims, &n_claims);
    if (rc != MS_OK)
        return rc == MS_ERR_NOMEM ? MS_OK : rc;
    ms_runner_settle(self->runner, claims, n_claims,
                     ms_record_log_last_seq(self->log), now);
    s_update_busy(self);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Lease housekeeping: reveal held results, renew our leases alone, and
//  the runner's (outranked, expired and cancelled tasks' workers).

static void
s_lease_tick(ms_node_t *self, int64_t now)
{
    // Not in the start grace (ms_grace.h says why).
    if (!ms_grace_holding(self->grace, now))
        ms_outbox_reveal(self->outbox, now);
    if (!self->mesh && now >= self->next_renew_at) {
        // Alone there is no heartbeat to renew our leases: renew here.
        ms_lease_table_renew(self->leases, NULL, 0, NULL);
        self->next_renew_at = now + self->opts.heartbeat_ms;
    }
    ms_runner_lease_tick(self->runner, now);
}

//  --------------------------------------------------------------------------
//  Release every claim of ours (graceful shutdown): running and settling.

static void
s_release_all(ms_node_t *self)
{
    ms_outbox_flush(self->outbox); // finished work is stored, not released
    if (self->runner)
        ms_runner_release_all(self->runner);
}

//  ==========================================================================
//  The record log (node/log/ms_record_log): the node's side of
//  ms_record_log_iface_t. The log is the gossip's source and transport;
//  what it needs of the node is here: the mesh, the peer table, the
//  signed-block code, the members' roles and the change set of a merge.

//  --------------------------------------------------------------------------
//  ms_record_log_iface_t and ms_item_sync_iface_t: the push targets.

static int
s_tr_active(void *arg, uint8_t (*out)[MS_GOSSIP_ID_BYTES], int max)
{
    ms_node_t *self = arg;
    return ms_peer_table_active(self->peer_table, out, max);
}

//  --------------------------------------------------------------------------
//  ms_record_log_iface_t: one random live peer.

static int
s_tr_random(void *arg, uint8_t out[MS_GOSSIP_ID_BYTES])
{
    ms_node_t *self = arg;
    return self->mesh ? ms_mesh_random_peer(self->mesh, out) : MS_ERR_NOTFOUND;
}

//  --------------------------------------------------------------------------
//  ms_record_log_iface_t: check a peer's block ("Signed blocks").

static bool
s_rl_check_block(void *arg, const uint8_t from[MS_HASH_BYTES],
                 const ms_wire_block_t *block)
{
    ms_node_t *self = arg;
    return ms_block_signer_check(self->signer, from, block);
}

//  --------------------------------------------------------------------------
//  ms_record_log_iface_t: a stored block leaves ("Signed blocks").

static void
s_rl_serve_signature(void *arg, const uint8_t *origin, uint64_t incarnation,
                     uint64_t first_seq, size_t n, const uint32_t *kinds,
                     const uint8_t *const *payloads, const size_t *lens,
                     const uint8_t **sig, size_t *sig_len, uint8_t *fresh)
{
    ms_node_t *self = arg;
    ms_block_signer_serve(self->signer, origin, incarnation, first_seq, n,
                          kinds, payloads, lens, sig, sig_len, fresh);
}

//  --------------------------------------------------------------------------
//  ms_record_log_iface_t: whether ORIGIN may submit. A block's origin is
//  always in the members table (blocks of unknown origins are refused),
//  so its roles are known here; in an open pool there is no rule (-1).

static int
s_rl_may_submit(void *arg, const uint8_t origin[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    if (!self->members || !ms_members_has_authority(self->members))
        return -1;
    const ms_member_t *m = ms_members_find(self->members, origin);
    return m && (m->roles & MS_CERT_ROLE_SUBMIT);
}

//  --------------------------------------------------------------------------
//  ms_record_log_iface_t: a merged record: to the leases when it counts.

static void
s_rl_merged(void *arg, const uint8_t origin[MS_HASH_BYTES],
            uint64_t incarnation, uint64_t seq, uint32_t kind,
            const uint8_t *payload, size_t len)
{
    ms_node_t *self = arg;
    if (s_counts(self, origin, incarnation, seq))
        ms_lease_feed_merge(self->lease_feed, origin, kind, payload, len);
}

//  --------------------------------------------------------------------------
//  ms_record_log_iface_t: a peer acknowledged our claims (the settle
//  rule, ms_settle.h).

static void
s_rl_acked(void *arg, const uint8_t from[MS_HASH_BYTES], uint64_t seq,
           uint64_t own_incarnation, uint64_t own_seq)
{
    ms_node_t *self = arg;
    ms_settle_on_ack(self->settle, from, seq, own_incarnation, own_seq);
}

//  --------------------------------------------------------------------------
//  Make the record log over the store (at open, once the store is).

static int
s_record_log_open(ms_node_t *self)
{
    ms_record_log_iface_t iface = {.arg = self,
                                   .log = s_log_line,
                                   .send = s_blob_send,
                                   .active_peers = s_tr_active,
                                   .random_peer = s_tr_random,
                                   .check_block = s_rl_check_block,
                                   .serve_signature = s_rl_serve_signature,
                                   .may_submit = s_rl_may_submit,
                                   .merged = s_rl_merged,
                                   .acked = s_rl_acked};
    self->log = ms_record_log_new(self->store, s_node_pk(self), &iface);
    return self->log ? MS_OK : MS_ERR_NOMEM;
}

//  ==========================================================================
//  Mesh handlers

//  --------------------------------------------------------------------------
//  A peer changed state or link.

static void
s_on_peer(void *arg, const uint8_t id[MS_MESH_ID_BYTES], ms_peer_state_t state,
          bool linked)
{
    ms_node_t *self = arg;
    ms_peer_table_change_t ch;
    if (ms_peer_table_update(self->peer_table, id, state, linked, &ch) != MS_OK)
        return;
    if (ch.previous != (int) state)
        s_ev_peer(self, id, state, ch.previous);
    if (state == MS_PEER_DEAD)
        ms_lease_table_node_dead(self->leases, id);
    if (!linked || state == MS_PEER_DEAD)
        ms_settle_peer_gone(self->settle, id); // not waited for any more
    if (ch.was_up != ch.up)
        s_work_changed(self); // owners moved
    if (!ch.was_up && ch.up)
        ms_item_sync_link_up(self->item_sync, id);
    s_update_members(self);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_t h;
    memcpy(h.bytes, id, MS_HASH_BYTES);
    ms_hash_hex(&h, hex);
    s_log(self, "peer %.12s %s%s", hex,
          state == MS_PEER_ALIVE     ? "alive"
          : state == MS_PEER_SUSPECT ? "suspect"
                                     : "dead",
          linked ? ", linked" : "");
}

//  --------------------------------------------------------------------------
//  A gossip (or blob, or authority item) envelope from a linked peer;
//  the record log takes the gossip ones and BLOCK_ACK.

static void
s_on_message(void *arg, const uint8_t from[MS_MESH_ID_BYTES],
             const ms_wire_envelope_t *env)
{
    ms_node_t *self = arg;
    if (!self->gossip)
        return;
    switch (env->body) {
    case MS_WIRE_BODY_ITEM_DIGEST:
    case MS_WIRE_BODY_ITEM_LIST:
    case MS_WIRE_BODY_ITEMS:
        ms_item_sync_on_message(self->item_sync, from, env, ms_clock_mono_ms());
        return;
    case MS_WIRE_BODY_BLOB_REQUEST: {
        if (!self->blobs)
            return;
        ms_blob_transport_t tr = {.arg = self, .send = s_blob_send};
        int rc = ms_blob_serve(self->blobs, from, &env->blob_request, &tr);
        if (rc == MS_OK)
            self->metrics.blob_requests_served_total++;
        else if (rc == MS_ERR_PROTOCOL || rc == MS_ERR_RANGE)
            self->n_rejected_messages++;
        return;
    }
    case MS_WIRE_BODY_BLOB_CHUNK:
    case MS_WIRE_BODY_BLOB_MISSING:
        if (self->fetch &&
            ms_blob_fetch_on_message(self->fetch, from, env,
                                     ms_clock_mono_ms()) != MS_OK)
            self->n_rejected_messages++;
        return;
    default:
        // refused blocks were counted by the block signer; NOMEM drops and
        // bodies that are nobody's are not counted
        if (ms_record_log_on_message(self->log, self->gossip, from, env,
                                     ms_mesh_now()) == MS_ERR_PROTOCOL)
            self->n_rejected_messages++;
        return;
    }
}

//  --------------------------------------------------------------------------
//  A heartbeat heard directly from a peer: its live claims.

static void
s_on_heartbeat(void *arg, const uint8_t from[MS_MESH_ID_BYTES],
               const ms_wire_envelope_t *hb, int64_t now_ms)
{
    ms_node_t *self = arg;
    (void) now_ms;
    if (self->members && ms_members_has_authority(self->members) &&
        !ms_members_is_member(self->members, from, (int64_t) time(NULL)))
        return; // revoked or expired: its claims expire (DESIGN.md)
    ms_lease_feed_heartbeat(self->lease_feed, from, hb);
}

//  --------------------------------------------------------------------------
//  Our heartbeat: renew our leases and list them.

static void
s_fill_heartbeat(void *arg, ms_wire_envelope_t *hb)
{
    ms_node_t *self = arg;
    ms_lease_feed_fill_heartbeat(self->lease_feed, hb);
    int busy = 0;
    ms_node_worker_count(self, &busy);
    hb->heartbeat.n_workers = (uint32_t) ms_worker_pool_size(self->pool);
    hb->heartbeat.n_busy = (uint32_t) busy;
    double load[1] = {0.0};
    if (getloadavg(load, 1) == 1 && isfinite(load[0]) && load[0] >= 0)
        hb->heartbeat.load = load[0];
}

//  ==========================================================================
//  The status HTTP threads show (node/actor/ms_node_status): the node's
//  side of ms_node_status_iface_t. The status asks for these every
//  refresh; everything it publishes comes from here or from the events
//  the loop reports to it (s_update_busy, s_run_paused, s_oi_stored, ...).

//  --------------------------------------------------------------------------
//  ms_node_status_iface_t: the collaborators' figures, by value (each
//  copied into its line of MS_METRICS_LIST by ms_node_status_metrics).

static void
s_st_sample(void *arg, ms_node_status_sample_t *s)
{
    ms_node_t *self = arg;
    s->own = self->metrics;
    s->n_rejected_messages = self->n_rejected_messages;
    ms_store_stats(self->store, &s->store);
    s->n_ignored_no_role = ms_store_ignored_no_role(self->store);
    s->n_leases = ms_lease_table_size(self->leases);
    ms_runner_stats(self->runner, &s->runner);
    s->outbox = ms_outbox_stats(self->outbox);
    s->n_pool_operators = ms_pool_census_operators(self->census);
    if ((s->has_gossip = self->gossip != NULL))
        ms_gossip_stats(self->gossip, &s->gossip);
    if ((s->has_mesh = self->mesh != NULL)) {
        ms_mesh_stats(self->mesh, &s->mesh);
        s->mesh_secure = ms_mesh_secure(self->mesh);
        s->n_members = ms_members_count(self->members, MS_MEMBER_ADMITTED);
    }
    ms_item_sync_stats(self->item_sync, &s->items);
    if (self->lease_feed)
        ms_lease_feed_stats(self->lease_feed, &s->lease_feed);
    if ((s->has_datasets = self->datasets != NULL))
        ms_dataset_source_stats(self->datasets, &s->datasets);
    if ((s->has_fetch = self->fetch != NULL)) {
        ms_blob_fetch_stats(self->fetch, &s->fetch);
        s->n_fetches_running = ms_blob_fetch_count(self->fetch);
        ms_blob_store_stats(self->blobs, &s->blobs);
    }
    if ((s->has_reeval = self->reeval != NULL))
        ms_reeval_stats(self->reeval, &s->reeval);
    ms_authority_status(self->authority, &s->authority);
    ms_block_signer_stats(self->signer, &s->signer);
    ms_record_log_stats(self->log, &s->log);
    s->calibration_gflops =
        self->pool ? ms_worker_pool_calibration(self->pool) : 0;
    s->worker_platform =
        self->pool ? ms_worker_pool_platform(self->pool) : NULL;
}

//  --------------------------------------------------------------------------
//  ms_node_status_iface_t: the mesh's peer table.

static json_t *
s_st_peers(void *arg)
{
    ms_node_t *self = arg;
    return self->mesh ? ms_mesh_peers_json(self->mesh) : json_array();
}

//  --------------------------------------------------------------------------
//  ms_node_status_iface_t: whether the authority revoked a peer.

static bool
s_st_revoked(void *arg, const uint8_t node_id[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    const ms_member_t *mem =
        self->members ? ms_members_find(self->members, node_id) : NULL;
    return mem && mem->state == MS_MEMBER_REVOKED;
}

//  --------------------------------------------------------------------------
//  ms_node_status_iface_t: whether a peer holds a live lease on a task.

static bool
s_st_held_elsewhere(void *arg, const uint8_t task_id[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    ms_claim_t h;
    bool live = false;
    return ms_lease_table_holder(self->leases, task_id, 0, &h, &live) ==
               MS_OK &&
           live && memcmp(h.node_id, s_node_pk(self), MS_HASH_BYTES) != 0;
}

//  --------------------------------------------------------------------------
//  Create the status once the worker pool (and the idle monitor) exist;
//  OPENED_AT_MS is when the node began to open (uptime).

static int
s_status_open(ms_node_t *self, int64_t opened_at_ms)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/data.mdb", self->store_dir);
    json_t *backend = ms_gpu_plan_json(&self->gpu);
    ms_node_status_config_t cfg = {
        .node_id = ms_identity_node_id(self->identity),
        .store_path = path,
        .open_pool = self->open_pool,
        .n_workers = ms_worker_pool_size(self->pool),
        .backend = backend,
        .idle_only = self->opts.idle_only,
        .idle_cpu_pct = self->opts.idle_cpu_pct,
        .idle_busy_s = self->opts.idle_busy_s,
        .idle_quiet_s = self->opts.idle_quiet_s,
        .max_pause_s = self->opts.max_pause_s,
        .worker_memory_mb = self->opts.worker_memory_mb,
        .idle_source =
            self->idle ? ms_idle_source_name(ms_idle_source(self->idle)) : NULL,
        .idle_cgroup = self->idle ? ms_idle_cgroup(self->idle) : NULL,
        .opened_at_ms = opened_at_ms};
    ms_node_status_iface_t iface = {.arg = self,
                                    .sample = s_st_sample,
                                    .peers = s_st_peers,
                                    .revoked = s_st_revoked,
                                    .held_elsewhere = s_st_held_elsewhere};
    self->status = ms_node_status_new(self->store, &cfg, &iface);
    json_decref(backend);
    return self->status ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  Datasets by hash across the pool (DESIGN.md "Datasets"): which datasets
//  this node has ready, and fetching the missing ones' files from the
//  peers, are ms_dataset_source's (node/data; its prose says how). The
//  node owns the blob store and the blob fetch (shared with ms_reeval),
//  starts the fetches the dataset source asks for (s_ds_fetch) and hands
//  it their ends (s_blob_done) and the HTTP threads' blob requests
//  (s_blob_put, s_blobs_held, s_blob_file, through ms_node_command).

#define S_BLOB_QUOTA ((uint64_t) 10 << 30) // DESIGN.md blob_quota

/*  =========================================================================
    Re-evaluation and kept weights (DESIGN.md "Verification";
    docs/VERIFICATION.md "Re-evaluation", "keep_weights")

    The class ms_reeval (node/verify) samples other operators' results,
    drives their re-evaluations, holds copies for other operators and keeps
    the pins of kept weights; its prose says how. The node creates it with
    its blob store and fetch (s_mesh_open), drives it from the loop
    (s_reeval_tick), hands it blob fetch ends and its workers' events, and
    answers what it asks through ms_reeval_iface_t (the s_ri_* functions
    below). The node's own kept weights (keep_weights, weights_out_dir)
    are ms_keep's (node/verify): a training task runs with a weights
    path; its worker writes the final weights there (core/ms_weights.h);
    s_on_result hands the result to ms_keep_own.
    =========================================================================
*/

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t: append one record to our log.

static int
s_ri_append(void *arg, const ms_store_payload_t *payload)
{
    return s_append(arg, 1, payload);
}

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t and ms_outbox_iface_t: publish an event.

static void
s_if_emit(void *arg, json_t *event)
{
    s_emit(arg, event);
}

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t: the live linked peers, in peer-table order.

static size_t
s_ri_live_peers(void *arg, uint8_t (**out)[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    return ms_peer_table_live(self->peer_table, out);
}

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t: a sweep's keep_weights.

static int
s_ri_sweep_keep(void *arg, const uint8_t sweep_id[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    ms_hash_t sid;
    memcpy(sid.bytes, sweep_id, MS_HASH_BYTES);
    return ms_keep_policy(self->keep, &sid);
}

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t: a sweep's dataset object, or NULL (then asked for).

static const json_t *
s_ri_dataset(void *arg, const ms_hash_t *sweep_id)
{
    ms_node_t *self = arg;
    if (!ms_dataset_source_dataset(self->datasets, sweep_id))
        ms_dataset_source_fetch(self->datasets, sweep_id);
    return ms_dataset_source_dataset(self->datasets, sweep_id);
}

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t: a worker is free for a re-evaluation.

static bool
s_ri_worker_free(void *arg)
{
    ms_node_t *self = arg;
    return ms_runner_reeval_free(self->runner);
}

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t: start a re-evaluation on a worker (the runner's).

static int
s_ri_start(void *arg, const ms_reeval_run_t *run, int *worker)
{
    ms_node_t *self = arg;
    return ms_runner_start_reeval(self->runner, run, worker);
}

//  --------------------------------------------------------------------------
//  ms_reeval_iface_t: the monotonic clock.

static int64_t
s_ri_now_ms(void *arg)
{
    (void) arg;
    return ms_clock_mono_ms();
}

//  --------------------------------------------------------------------------
//  Create the re-evaluator over our store, blob store and fetch, with its
//  own generator seeded from the OS. MS_OK or MS_ERR_NOMEM.

static int
s_reeval_open(ms_node_t *self)
{
    ms_reeval_config_t cfg = {.reevaluate_fraction =
                                  self->opts.reevaluate_fraction,
                              .reeval_timeout_s = self->opts.reeval_timeout_s,
                              .keep_retention_s = self->opts.keep_retention_s};
    memcpy(cfg.node_id, s_node_pk(self), MS_HASH_BYTES);
    randombytes_buf(cfg.seed, sizeof cfg.seed); // own sampling generator
    cfg.seed[1] |= 1;
    ms_reeval_iface_t iface = {.arg = self,
                               .log = s_log_line,
                               .append = s_ri_append,
                               .emit = s_if_emit,
                               .live_peers = s_ri_live_peers,
                               .sweep_keep = s_ri_sweep_keep,
                               .dataset = s_ri_dataset,
                               .worker_free = s_ri_worker_free,
                               .start = s_ri_start,
                               .now_ms = s_ri_now_ms};
    self->reeval =
        ms_reeval_new(self->store, self->blobs, self->fetch, &cfg, &iface);
    if (!self->reeval)
        return MS_ERR_NOMEM;
    ms_keep_iface_t kiface = {.arg = self, .log = s_log_line};
    self->keep = ms_keep_new(self->store, self->blobs, self->reeval, &kiface);
    if (!self->keep) {
        ms_reeval_destroy(&self->reeval);
        return MS_ERR_NOMEM;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Drive re-evaluation: in a pool only (ms_reeval keeps its own pace).

static void
s_reeval_tick(ms_node_t *self, int64_t now)
{
    if (!self->reeval || !self->mesh || !self->pool)
        return;
    ms_reeval_tick(self->reeval, now);
}
//  --------------------------------------------------------------------------
//  The end of one blob fetch (ms_blob_fetch's done callback).

static void
s_blob_done(void *arg, const ms_hash_t *hash, int status, const char *reason)
{
    ms_node_t *self = arg;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(hash, hex);
    if (status == MS_OK)
        s_log(self, "blob %.12s: fetched, hash verified", hex);
    else {
        self->metrics.blob_fetch_failures_total++;
        s_log(self, "blob %.12s: fetch failed (%s): tried again later", hex,
              reason ? reason : ms_strerror(status));
    }
    if (self->reeval)
        ms_reeval_blob_done(self->reeval, hash, status, reason);
    if (self->datasets)
        ms_dataset_source_blob_done(self->datasets, hash, status);
}

//  --------------------------------------------------------------------------
//  Send a message to a peer (the blob fetcher's and server's transport,
//  the record log's send).

static int
s_blob_send(void *arg, const uint8_t to[MS_BLOB_PEER_ID_BYTES],
            const ms_wire_envelope_t *env)
{
    ms_node_t *self = arg;
    return self->mesh ? ms_mesh_send(self->mesh, to, env) : MS_ERR_NOTFOUND;
}

//  --------------------------------------------------------------------------
//  ms_outbox_iface_t: append our records in one durable commit.

static int
s_oi_append(void *arg, size_t n, const ms_store_payload_t *payloads)
{
    return s_append(arg, n, payloads);
}

//  --------------------------------------------------------------------------
//  ms_outbox_iface_t: a task's slots and verify.replicas.

static int
s_oi_task_slots(void *arg, const uint8_t task_id[MS_HASH_BYTES],
                uint32_t *n_slots, uint32_t *replicas)
{
    ms_node_t *self = arg;
    return ms_store_task_slots(self->store, task_id, n_slots, replicas);
}

//  --------------------------------------------------------------------------
//  ms_outbox_iface_t: distinct operators with a commit for the task.

static int
s_oi_commit_operators(void *arg, const uint8_t task_id[MS_HASH_BYTES],
                      uint32_t *n_ops)
{
    ms_node_t *self = arg;
    return ms_store_commit_operators(self->store, task_id, s_node_pk(self),
                                     n_ops, NULL);
}

//  --------------------------------------------------------------------------
//  ms_outbox_iface_t: the operators in the pool as we see them.

static uint32_t
s_oi_pool_operators(void *arg)
{
    ms_node_t *self = arg;
    return ms_pool_census_operators(self->census);
}

//  --------------------------------------------------------------------------
//  ms_outbox_iface_t: everything of ours after a result is durable: lease
//  table, checkpoint, crash count, counters (the outbox then logs and
//  emits). Takes res->platform.

static void
s_oi_stored(void *arg, ms_outbox_result_t *res)
{
    ms_node_t *self = arg;
    ms_lease_table_finish(self->leases, res->task_id.bytes, res->slot,
                          s_node_pk(self));
    ms_lease_table_release(self->leases, res->task_id.bytes, res->slot, NULL);
    ms_runner_drop_checkpoint(self->runner, &res->task_id);
    ms_runner_forget(self->runner, &res->task_id);
    ms_node_status_result_stored(self->status, &res->sweep_id, res->train,
                                 res->train_seconds, &res->platform);
}

//  --------------------------------------------------------------------------
//  ms_outbox_iface_t: a row that can never be stored is a task-class
//  failure of our claim.

static void
s_oi_fail(void *arg, const ms_outbox_result_t *res, const char *reason)
{
    ms_node_t *self = arg;
    ms_runner_fail(self->runner, &res->task_id, &res->sweep_id, res->slot,
                   res->epoch, MS_FAILURE_CLASS_TASK, reason);
}

//  --------------------------------------------------------------------------
//  ms_outbox_iface_t: a result that could not be stored: the task goes
//  back to pending (its checkpoint at the last epoch makes the rerun
//  cheap) and our claim is released.

static void
s_oi_requeue(void *arg, const ms_outbox_result_t *res, int rc)
{
    ms_node_t *self = arg;
    s_release(self, &res->task_id, res->slot, res->epoch,
              MS_RELEASE_REASON_FAILED);
    ms_store_set_task_state(self->store, res->task_id.bytes, MS_TASK_PENDING,
                            NULL, ms_strerror(rc));
}

//  --------------------------------------------------------------------------
//  Make DATA_DIR/held, create our outbox over it and read the results a
//  previous run held there. Returns MS_OK, MS_ERR_NOMEM, or ms_data_dir_make's
//  error (in DIAG).

static int
s_outbox_open(ms_node_t *self, ms_diag_t *diag)
{
    char held_dir[PATH_MAX];
    int rc =
        ms_data_dir_make(self->dir, "held", held_dir, sizeof held_dir, diag);
    if (rc != MS_OK)
        return rc;
    ms_outbox_config_t cfg = {.held_dir = held_dir, .max_queued = S_MAX_COMMIT};
    memcpy(cfg.node_id, s_node_pk(self), MS_HASH_BYTES);
    ms_outbox_iface_t iface = {.arg = self,
                               .log = s_log_line,
                               .append = s_oi_append,
                               .task_slots = s_oi_task_slots,
                               .commit_operators = s_oi_commit_operators,
                               .pool_operators = s_oi_pool_operators,
                               .stored = s_oi_stored,
                               .emit = s_if_emit,
                               .fail = s_oi_fail,
                               .requeue = s_oi_requeue};
    self->outbox = ms_outbox_new(&cfg, &iface);
    if (!self->outbox)
        return MS_ERR_NOMEM;
    ms_outbox_load(self->outbox);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A worker's result: build the row (ms_outbox_row_new: the worker's body
//  plus who, where and what; our weights, ms_keep_own; the test hook),
//  then queue it for this turn's block (ms_outbox).

static void
s_on_result(ms_node_t *self, ms_runner_run_t *r, json_t *body)
{
    char thex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&r->task_id, thex);
    json_t *row = ms_outbox_row_new(body, &r->task_id, &r->sweep_id, r->config,
                                    ms_identity_node_id(self->identity),
                                    ms_authority_operator(self->authority));
    bool kept = false;
    ms_diag_t diag;
    if (r->train &&
        ms_keep_own(self->keep, self->weights_dir, self->opts.weights_out_dir,
                    &r->task_id, &r->sweep_id, row, &kept, &diag) != MS_OK)
        s_log(self, "task %.12s: weights not written to %s: %s: %s", thex,
              self->opts.weights_out_dir, diag.where, diag.reason);
    if (kept)
        self->metrics.weights_kept_total++;
    if (self->result_hook)
        self->result_hook(self->result_hook_arg, row); // tests only
    ms_outbox_result_t res = {.task_id = r->task_id,
                              .sweep_id = r->sweep_id,
                              .slot = r->slot,
                              .epoch = r->epoch,
                              .train = r->train};
    ms_outbox_result_fill(&res, row, body);
    json_decref(row);
    // Mean run time of the sweep's tasks here: how far ahead the
    // scheduler claims from it.
    ms_scheduler_task_ran(self->scheduler, r->sweep_id.bytes,
                          (double) (ms_clock_mono_ms() - r->started_ms));
    ms_outbox_push(self->outbox, &res); // loses it at once without a row
}

//  --------------------------------------------------------------------------
//  ms_node_command_iface_t: an uploaded file (consumed) becomes a blob.

static int
s_blob_put(void *arg, const ms_hash_t *hash, const char *tmp_path,
           ms_diag_t *diag)
{
    ms_node_t *self = arg;
    return ms_dataset_source_blob_put(self->datasets, hash, tmp_path, diag);
}

//  --------------------------------------------------------------------------
//  After a big sweep's spec, configs and ids were built and freed (a
//  submit, or sweep records merged): give the pages back rather than keep
//  the high-water mark (hundreds of MiB for 100,000 tasks) for the node's
//  life. At most once a second: a catch-up merges sweeps drain after drain.

static void
s_trim(ms_node_t *self)
{
    int64_t now = ms_clock_mono_ms();
    if (now < self->trim_at)
        return;
    self->trim_at = now + 1000;
    malloc_trim(0);
}

//  --------------------------------------------------------------------------
//  The leases of a task's slots in this node's view, as JSON text in
//  *summary: [{"slot","holder","epoch","live"}].

static int
s_task_leases(void *arg, const ms_hash_t *task_id, char **summary)
{
    ms_node_t *self = arg;
    json_t *list = json_array();
    uint32_t n_slots = 0, replicas = 1;
    if (list)
        ms_store_task_slots(self->store, task_id->bytes, &n_slots, &replicas);
    for (uint32_t slot = 0; list && slot < replicas; slot++) {
        ms_claim_t holder;
        bool live = false;
        if (ms_lease_table_holder(self->leases, task_id->bytes, slot, &holder,
                                  &live) != MS_OK)
            continue;
        ms_hash_t h;
        memcpy(h.bytes, holder.node_id, MS_HASH_BYTES);
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&h, hex);
        json_array_append_new(
            list,
            json_pack("{s:i, s:s, s:I, s:b}", "slot", (int) slot, "holder", hex,
                      "epoch", (json_int_t) holder.epoch, "live", live));
    }
    *summary = list ? json_dumps(list, JSON_COMPACT) : NULL;
    json_decref(list);
    return *summary ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  ms_node_command_iface_t: which of the blobs named in TEXT we hold.

static int
s_blobs_held(void *arg, const char *text, char **summary)
{
    ms_node_t *self = arg;
    return ms_dataset_source_blobs_held(self->datasets, text, summary);
}

//  --------------------------------------------------------------------------
//  ms_node_command_iface_t: the file of a held blob.

static int
s_blob_file(void *arg, const ms_hash_t *hash, char **summary)
{
    ms_node_t *self = arg;
    return ms_dataset_source_blob_file(self->datasets, hash, summary);
}

//  --------------------------------------------------------------------------
//  ms_node_command_iface_t: store a submission (the `submit` role).

static int
s_nc_submit(void *arg, const char *text, size_t n, ms_spec_t *spec,
            const char *files, char **summary, ms_diag_t *diag)
{
    ms_node_t *self = arg;
    if (!s_may_submit(self)) {
        ms_spec_destroy(&spec);
        return s_no_submit_role(self, diag);
    }
    int rc = ms_submit_spec(self->submit, text, n, spec, false, files, NULL,
                            NULL, summary, diag);
    s_trim(self);
    return rc;
}

//  --------------------------------------------------------------------------
//  ms_node_command_iface_t: a life-cycle action (the `submit` role).

static int
s_nc_control(void *arg, const ms_hash_t *sweep_id, int action, int32_t priority,
             ms_diag_t *diag)
{
    ms_node_t *self = arg;
    if (!s_may_submit(self))
        return s_no_submit_role(self, diag);
    return ms_node_control(self, sweep_id, (ms_node_control_t) action, priority,
                           diag);
}

//  --------------------------------------------------------------------------
//  Make the command queue (and its wake pipe) the loop answers.

static int
s_commands_open(ms_node_t *self, ms_diag_t *diag)
{
    ms_node_command_iface_t iface = {.arg = self,
                                     .submit = s_nc_submit,
                                     .control = s_nc_control,
                                     .blob_put = s_blob_put,
                                     .authority = s_item_text,
                                     .task_leases = s_task_leases,
                                     .blobs_held = s_blobs_held,
                                     .blob_path = s_blob_file};
    return ms_node_command_open(&self->commands, &iface, diag);
}

//  --------------------------------------------------------------------------
//  Run the queued API commands; any command may change the work.

static void
s_run_commands(ms_node_t *self)
{
    if (ms_node_command_run(self->commands) > 0)
        s_work_changed(self);
}

//  ==========================================================================
//  Opening and closing the pool parts; the loop with the mesh

//  --------------------------------------------------------------------------
//  Open the lease table and, in a pool, the mesh and gossip.

static int
s_pool_open(ms_node_t *self, ms_diag_t *diag)
{
    self->leases =
        ms_lease_table_new(s_node_pk(self), self->opts.lease_ttl_ms, NULL);
    ms_lease_feed_iface_t lf = {.arg = self,
                                .changed = s_lf_changed,
                                .result = s_lf_result,
                                .log = s_log_line};
    self->lease_feed =
        self->leases ? ms_lease_feed_new(self->leases, self->store, &lf) : NULL;
    self->settle = ms_settle_new();
    self->claim_timer = ms_claim_timer_new();
    self->grace = ms_grace_new();
    if (!self->leases || !self->lease_feed || !self->settle ||
        !self->claim_timer || !self->grace || s_scheduler_open(self) != MS_OK ||
        s_runner_open(self) != MS_OK)
        return MS_ERR_NOMEM;
    // sweeps stored before: claim-to-start unknown
    ms_claim_timer_note_stored(self->claim_timer, self->store, 0);
    int rc = ms_pool_census_open(&self->census, self->store, s_node_pk(self));
    if (rc == MS_OK)
        rc = ms_lease_feed_load(self->lease_feed);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, self->store_dir,
                                "cannot load claims: %s", ms_strerror(rc));
    s_work_changed(self);
    if (!ms_authority_pool_id_hex(self->authority))
        return MS_OK; // alone until a certificate comes (SIGHUP)
    return s_mesh_open(self, diag);
}

//  --------------------------------------------------------------------------
//  Open the members table, the mesh, gossip and blobs: the node joins its
//  pool (open, or the certificate's).

static int
s_mesh_open(ms_node_t *self, ms_diag_t *diag)
{
    int rc;
    ms_hash_t pool;
    ms_authority_pool_id(self->authority, pool.bytes);
    const ms_cert_chain_t *chain = ms_authority_chain(self->authority);
    self->members = ms_members_new(
        chain ? ms_authority_key(self->authority) : NULL, pool.bytes);
    if (!self->members)
        return MS_ERR_NOMEM;
    ms_members_refusal_t why;
    if (chain)
        ms_members_admit(self->members, chain, (int64_t) time(NULL),
                         ms_clock_mono_ms(), &why);
    else
        ms_members_admit_open(self->members, s_node_pk(self),
                              ms_identity_node_id(self->identity), 0, &why);
    uint8_t cert[MS_CERT_CHAIN_MAX_BYTES];
    size_t cert_bytes = chain ? ms_cert_chain_encode(chain, cert) : 0;
    uint8_t curve_pk[MS_IDENTITY_CURVE_BYTES],
        curve_sk[MS_IDENTITY_CURVE_BYTES];
    if (ms_identity_curve_keys(self->identity, curve_pk, curve_sk) != MS_OK)
        return ms_diag_set_code(diag, MS_ERR_INVALID, "identity",
                                "cannot derive the CURVE key pair");

    ms_mesh_options_t mo;
    ms_mesh_options_defaults(&mo);
    memcpy(mo.node_id, s_node_pk(self), MS_MESH_ID_BYTES);
    memcpy(mo.pool_id, pool.bytes, MS_MESH_ID_BYTES);
    mo.incarnation = ms_store_incarnation(self->store);
    mo.n_workers = ms_worker_pool_size(self->pool);
    // open pool: own operator; with a certificate: the certificate's
    mo.operator_name =
        chain ? chain->leaf.operator_name : ms_identity_node_id(self->identity);
    mo.members = self->members;
    mo.certificate = cert_bytes ? cert : NULL;
    mo.certificate_bytes = cert_bytes;
    mo.curve_public = curve_pk;
    mo.curve_secret = curve_sk;
    char bind[64];
    snprintf(bind, sizeof bind, "tcp://%s:%d",
             self->opts.mesh_bind ? self->opts.mesh_bind : "*",
             self->opts.mesh_port);
    mo.mesh_bind = bind;
    mo.mesh_port = self->opts.advertise_port > 0 ? self->opts.advertise_port
                                                 : self->opts.mesh_port;
    mo.advertise_host = self->opts.advertise_host;
    mo.beacon = !self->opts.no_beacon;
    mo.beacon_port = self->opts.beacon_port;
    mo.interface = self->interface;
    mo.beacon_interval_ms = self->opts.beacon_interval_ms;
    mo.static_peers = (const char *const *) self->peers;
    mo.n_static_peers = self->opts.n_peers;
    mo.heartbeat_ms = self->opts.heartbeat_ms;
    mo.suspect_after_ms = 3 * self->opts.heartbeat_ms;
    mo.dead_after_ms = self->opts.lease_ttl_ms > 4 * self->opts.heartbeat_ms
                           ? self->opts.lease_ttl_ms
                           : 4 * self->opts.heartbeat_ms;
    mo.verbose = self->opts.verbose;
    ms_mesh_handlers_t mh = {.arg = self,
                             .on_peer = s_on_peer,
                             .on_message = s_on_message,
                             .on_heartbeat = s_on_heartbeat,
                             .fill_heartbeat = s_fill_heartbeat};
    rc = ms_mesh_open(&self->mesh, &mo, &mh, diag);
    sodium_memzero(curve_sk, sizeof curve_sk);
    if (rc != MS_OK)
        return rc;
    ms_gossip_config_t gc;
    ms_gossip_config_default(&gc);
    gc.antientropy_ms = self->opts.antientropy_ms;
    ms_gossip_source_t src;
    ms_gossip_transport_t tr;
    ms_record_log_source(self->log, &src);
    ms_record_log_transport(self->log, &tr);
    self->gossip =
        ms_gossip_new(s_node_pk(self), &gc, &src, &tr, ms_mesh_now());
    if (!self->gossip)
        return MS_ERR_NOMEM;
    rc = ms_item_sync_join(self->item_sync, self->members,
                           ms_authority_key(self->authority), chain);
    if (rc != MS_OK)
        return rc;
    // Dataset blobs: uploads, serving peers, fetching from them.
    ms_data_dir_path(self->dir, "blobs/tmp", self->blob_tmp_dir,
                     sizeof self->blob_tmp_dir);
    rc = ms_blob_store_open(&self->blobs, self->data_dir, S_BLOB_QUOTA, diag);
    if (rc != MS_OK)
        return rc;
    ms_diag_t bd;
    ms_diag_clear(&bd);
    rc =
        ms_blob_store_register_builtin(self->blobs, "fashion-mnist", NULL, &bd);
    if (rc != MS_OK && rc != MS_ERR_NOTFOUND) {
        char text[600];
        s_log(self, "fashion-mnist not served to peers: %s",
              ms_diag_format(&bd, text, sizeof text));
    }
    ms_blob_transport_t btr = {.arg = self, .send = s_blob_send};
    self->fetch = ms_blob_fetch_new(self->blobs, NULL, &btr, s_blob_done, self);
    if (!self->fetch)
        return MS_ERR_NOMEM;
    rc = s_reeval_open(self);
    if (rc != MS_OK)
        return rc;
    ms_grace_start(self->grace, ms_clock_mono_ms(),
                   ms_assign_grace_ms(self->opts.beacon_interval_ms,
                                      self->opts.antientropy_ms));
    return MS_OK; // meshsweepd prints the pool, port and peers at start
}

//  --------------------------------------------------------------------------
//  Release our claims (graceful shutdown: records pushed to the peers),
//  then close gossip, mesh and the lease table.

static void
s_pool_close(ms_node_t *self)
{
    if (self->leases && self->store && self->pool)
        s_release_all(self);
    if (self->mesh) {
        // Give the releases a moment on the wire (bounded).
        int64_t until = ms_clock_mono_ms() + 100;
        while (ms_clock_mono_ms() < until) {
            zmq_pollitem_t items[MS_MESH_MAX_POLL_ITEMS];
            int n =
                ms_mesh_poll_items(self->mesh, items, MS_MESH_MAX_POLL_ITEMS);
            if (zmq_poll(items, n, 20) > 0)
                ms_mesh_handle(self->mesh, ms_mesh_now());
        }
    }
    ms_gossip_destroy(&self->gossip);
    ms_mesh_destroy(&self->mesh);
    ms_scheduler_destroy(&self->scheduler);
    ms_lease_feed_destroy(&self->lease_feed);
    ms_lease_table_destroy(&self->leases);
}

//  --------------------------------------------------------------------------
//  The nearest deadline (monotonic ms) of mesh, gossip, leases, settle
//  windows and the running-task check.

static int64_t
s_next_deadline(ms_node_t *self, int64_t now)
{
    int64_t d = INT64_MAX;
    if (self->mesh) {
        // The mesh and gossip read ms_mesh_now(); convert to our clock.
        int64_t skew = now - ms_mesh_now();
        int64_t m = ms_mesh_next_deadline(self->mesh) + skew;
        int64_t g = ms_gossip_next_deadline(self->gossip) + skew;
        d = m < d ? m : d;
        d = g < d ? g : d;
        int64_t b = self->fetch ? ms_blob_fetch_next_deadline(self->fetch)
                                : INT64_MAX; // our clock
        d = b < d ? b : d;
    }
    int64_t e = ms_lease_table_next_expiry(self->leases);
    d = e < d ? e : d;
    if (ms_worker_pool_idle(self->pool) > 0) {
        int64_t w = ms_settle_next_deadline(self->settle);
        d = w < d ? w : d;
    }
    bool busy =
        ms_worker_pool_idle(self->pool) < ms_worker_pool_size(self->pool);
    int64_t r = ms_runner_next_deadline(self->runner, busy);
    d = r < d ? r : d; // idle_only samples, running tasks' check
    if (!self->mesh && busy && self->next_renew_at < d)
        d = self->next_renew_at;
    int64_t g = ms_grace_next_deadline(self->grace, now);
    d = g < d ? g : d;
    if (ms_worker_pool_idle(self->pool) > (int) ms_settle_count(self->settle) &&
        !ms_grace_holding(self->grace, now)) {
        int64_t scan = ms_scheduler_next_scan_at(self->scheduler);
        if (scan < d)
            d = scan > now ? scan : now + 1;
    }
    return d;
}

//  --------------------------------------------------------------------------
//  One wait of the loop with the mesh: zmq_poll over the mesh's sockets,
//  the wake pipe and the workers' sockets, then everything that is due.

static int
s_poll_mesh(ms_node_t *self, int timeout_ms)
{
    int n_workers = ms_worker_pool_size(self->pool);
    zmq_pollitem_t *items = calloc(
        (size_t) (MS_MESH_MAX_POLL_ITEMS + 1 + n_workers), sizeof *items);
    int *fds = calloc((size_t) n_workers + 1, sizeof *fds);
    if (!items || !fds) {
        free(items);
        free(fds);
        return MS_ERR_NOMEM;
    }
    int n = ms_mesh_poll_items(self->mesh, items, MS_MESH_MAX_POLL_ITEMS);
    items[n].socket = NULL;
    items[n].fd = ms_node_command_wake_fd(self->commands);
    items[n].events = ZMQ_POLLIN;
    n++;
    int nf = ms_worker_pool_fds(self->pool, fds, n_workers);
    for (int i = 0; i < nf; i++)
        if (fds[i] >= 0) {
            items[n].socket = NULL;
            items[n].fd = fds[i];
            items[n].events = ZMQ_POLLIN;
            n++;
        }
    int64_t now = ms_clock_mono_ms();
    int64_t deadline = s_next_deadline(self, now);
    int64_t wait = timeout_ms;
    if (deadline != INT64_MAX && deadline - now < wait)
        wait = deadline - now;
    if (wait < 0)
        wait = 0;
    s_turn_end(self);
    zmq_poll(items, n, (long) wait);
    s_turn_begin(self);
    free(items);
    free(fds);
    //  Blocks read in one drain merge in one store commit (catch-up).
    ms_gossip_batch_begin(self->gossip);
    ms_mesh_handle(self->mesh, ms_mesh_now());
    ms_gossip_batch_end(self->gossip, ms_mesh_now());
    ms_record_log_send_acks_due(self->log); // the drain's claim blocks
    if (ms_record_log_sweeps_due(self->log)) {
        // Commit times of the sweeps the drain merged (claim-to-start); a
        // batch of pull answers may hold blocks a little longer.
        ms_claim_timer_note_stored(self->claim_timer, self->store,
                                   ms_clock_mono_us());
        if (ms_gossip_pull_count(self->gossip) == 0)
            ms_record_log_sweeps_noted(self->log);
        s_trim(self); // the store parsed the sweeps' specs
    }
    if (self->gossip) // the first catch-up holds the grace (ms_grace.h)
        ms_grace_hold(self->grace, ms_clock_mono_ms(),
                      ms_gossip_pull_count(self->gossip));
    ms_node_command_drain(self->commands);
    s_run_commands(self);
    ms_worker_event_t ev;
    while (!self->stopping &&
           ms_worker_pool_poll(self->pool, 0, -1, &ev) == MS_OK) {
        ms_runner_worker_event(self->runner, &ev);
        ms_worker_event_clear(&ev);
    }
    if (ms_outbox_stats(self->outbox).n_queued) {
        // Hand the freed workers their next settled claims first, so they
        // run while this turn's results are made durable.
        ms_runner_start_settled(self->runner, ms_clock_mono_ms());
        ms_outbox_flush(self->outbox);
    }
    ms_mesh_tick(self->mesh, ms_mesh_now());
    ms_gossip_tick(self->gossip, ms_mesh_now());
    ms_item_sync_tick(self->item_sync, ms_clock_mono_ms());
    if (self->fetch)
        ms_blob_fetch_tick(self->fetch, ms_clock_mono_ms());
    s_lease_tick(self, ms_clock_mono_ms());
    ms_node_status_tick(self->status);
    return MS_OK;
}

//  ==========================================================================
//  Events (GET /api/v1/events: node/actor/ms_node_events, docs/EVENTS.md)
//
//  What lands here is reported to the events as it happens: every result
//  record (s_append for our own, ms_lease_feed for the merged ones), the
//  store's verdict changes (s_emit_verdicts), peers' changes of state
//  (s_on_peer); once a turn the events publish. Without an API there are
//  no events and nothing is reported.
//  ==========================================================================

//  --------------------------------------------------------------------------
//  A stored result (its event is published at the turn's end).

static void
s_ev_result(ms_node_t *self, const uint8_t *task_id, const uint8_t *node_id)
{
    if (self->events)
        ms_node_events_result(self->events, task_id, node_id);
}

//  --------------------------------------------------------------------------
//  A verdict change.

static void
s_ev_verdict(ms_node_t *self, const uint8_t *task_id,
             const ms_store_verdict_t *v)
{
    if (self->events)
        ms_node_events_verdict(self->events, task_id, v);
}

//  --------------------------------------------------------------------------
//  A peer's change of state (PREVIOUS -1: it appears).

static void
s_ev_peer(ms_node_t *self, const uint8_t *id, ms_peer_state_t state,
          int previous)
{
    if (self->events)
        ms_node_events_peer(self->events, id, state, previous);
}

//  --------------------------------------------------------------------------
//  Once a loop turn: publish.

static void
s_ev_turn(ms_node_t *self)
{
    if (self->events)
        ms_node_events_turn(self->events, ms_events_now_ms());
}

//  --------------------------------------------------------------------------
//  ms_node_events_iface_t: pending tasks of a sweep that peers run now.

static int64_t
s_ne_running_elsewhere(void *arg, const uint8_t sweep_id[MS_HASH_BYTES])
{
    ms_node_t *self = arg;
    return ms_node_status_running_elsewhere(self->status, sweep_id);
}

//  --------------------------------------------------------------------------
//  The loop turn gauge: a turn is the work between two waits (the loop
//  woke at s_turn_begin and is about to wait again at s_turn_end); the
//  longest is exported as loop_turn_max_us (/status pool_counters,
//  /metrics meshsweep_loop_turn_max_microseconds), so a store or scheduler
//  step that holds the loop shows.

static void
s_turn_begin(ms_node_t *self)
{
    self->turn_started_us = ms_clock_mono_us();
}

static void
s_turn_end(ms_node_t *self)
{
    if (!self->turn_started_us)
        return;
    int64_t d = ms_clock_mono_us() - self->turn_started_us;
    if (d > 0 && (uint64_t) d > self->metrics.loop_turn_max_us)
        self->metrics.loop_turn_max_us = (uint64_t) d;
}

//  --------------------------------------------------------------------------
//  One turn of the loop.

int
ms_node_poll(ms_node_t *self, int timeout_ms)
{
    if (self->stopping)
        return MS_ERR_INTERRUPTED;
    s_reload_if_asked(self);
    s_run_commands(self);
    s_emit_verdicts(self);
    s_ev_turn(self);
    s_reeval_tick(self, ms_clock_mono_ms());
    int rc = s_schedule(self);
    if (rc != MS_OK)
        return rc;
    if (self->mesh) {
        rc = s_poll_mesh(self, timeout_ms);
        if (rc != MS_OK)
            return rc;
        if (self->stopping)
            return MS_ERR_INTERRUPTED;
        s_run_commands(self);
        s_emit_verdicts(self);
        s_ev_turn(self);
        return s_schedule(self);
    }
    ms_worker_event_t ev;
    // Alone: nothing but worker events and commands to wait for, and the
    // settle list (retries under a held claim).
    int wait = timeout_ms;
    int64_t now = ms_clock_mono_ms();
    int64_t deadline = s_next_deadline(self, now);
    if (deadline != INT64_MAX && deadline - now < wait)
        wait = deadline - now < 0 ? 0 : (int) (deadline - now);
    for (;;) {
        if (wait > 0)
            s_turn_end(self);
        rc = ms_worker_pool_poll(self->pool, wait,
                                 ms_node_command_wake_fd(self->commands), &ev);
        if (wait > 0)
            s_turn_begin(self);
        if (rc == MS_OK) {
            ms_runner_worker_event(self->runner, &ev);
            ms_worker_event_clear(&ev);
            wait = 0; // take what else has arrived, then go on
            if (self->stopping)
                break;
            continue;
        }
        if (rc == MS_ERR_INTERRUPTED) {
            ms_node_command_drain(self->commands);
            s_reload_if_asked(self);
            s_run_commands(self);
        }
        break;
    }
    if (ms_outbox_stats(self->outbox).n_queued) {
        ms_runner_start_settled(self->runner, ms_clock_mono_ms());
        ms_outbox_flush(self->outbox);
    }
    if (self->stopping)
        return MS_ERR_INTERRUPTED;
    s_lease_tick(self, ms_clock_mono_ms());
    ms_node_status_tick(self->status);
    s_run_commands(self);
    return s_schedule(self);
}

//  --------------------------------------------------------------------------
//  Loop until stopped.

int
ms_node_run(ms_node_t *self)
{
    for (;;) {
        int rc = ms_node_poll(self, 1000);
        if (rc == MS_ERR_INTERRUPTED)
            return MS_OK;
        if (rc != MS_OK)
            return rc;
    }
}

//  --------------------------------------------------------------------------
//  Ask the loop to stop (async-signal-safe).

void
ms_node_stop(ms_node_t *self)
{
    if (!self)
        return;
    self->stopping = 1;
    ms_node_command_stop(self->commands);
    ms_node_command_wake(self->commands, 's');
}

//  --------------------------------------------------------------------------
//  Progress of a sweep.

int
ms_node_sweep_progress(ms_node_t *self, const ms_hash_t *sweep_id,
                       ms_sweep_progress_t *out)
{
    return ms_node_status_sweep_progress(self->status, sweep_id, out);
}

//  --------------------------------------------------------------------------
//  Set the event handler.

void
ms_node_set_event_handler(ms_node_t *self, ms_node_event_fn fn, void *arg)
{
    self->event_fn = fn;
    self->event_arg = arg;
}

//  --------------------------------------------------------------------------
//  The store.

ms_store_t *
ms_node_store(ms_node_t *self)
{
    return self->store;
}

//  --------------------------------------------------------------------------
//  The node id.

const char *
ms_node_id_hex(ms_node_t *self)
{
    return ms_identity_node_id(self->identity);
}

//  --------------------------------------------------------------------------
//  The API address.

const char *
ms_node_api_address(ms_node_t *self)
{
    return self->api ? ms_api_address(self->api) : NULL;
}

//  --------------------------------------------------------------------------
//  The API token file, when the API asks for a token.

const char *
ms_node_api_token_file(ms_node_t *self)
{
    return self->api ? self->api_token_file : NULL;
}

//  --------------------------------------------------------------------------
//  The start line about the backend.

const char *
ms_node_backend_note(ms_node_t *self)
{
    return self->gpu.note[0] ? self->gpu.note : NULL;
}

//  --------------------------------------------------------------------------
//  Workers on the GPU.

int
ms_node_gpu_workers(ms_node_t *self, const char **gpu_name)
{
    if (gpu_name)
        *gpu_name = self->gpu.have_gpu ? self->gpu.gpu.device : NULL;
    return self->gpu.n_gpu_workers;
}

//  --------------------------------------------------------------------------
//  Workers and busy workers.

int
ms_node_worker_count(ms_node_t *self, int *n_busy)
{
    if (n_busy)
        *n_busy = self->runner ? ms_runner_busy(self->runner) : 0;
    return ms_worker_pool_size(self->pool);
}

//  --------------------------------------------------------------------------
//  Trainings started.

int64_t
ms_node_trainings_started(ms_node_t *self)
{
    if (!self->runner)
        return 0;
    ms_runner_stats_t rs;
    ms_runner_stats(self->runner, &rs);
    return rs.n_trainings;
}

//  ==========================================================================
//  Hooks for the HTTP threads

//  --------------------------------------------------------------------------
//  Queue a submission and wait for the loop's answer (ms_node_command).

static int
s_api_submit(void *arg, const char *text, size_t n, const char *files,
             char **summary, ms_diag_t *diag)
{
    ms_node_t *self = arg;
    return ms_node_command_submit(self->commands, text, n, files, summary,
                                  diag);
}

//  --------------------------------------------------------------------------
//  Queue an uploaded file to become a blob and wait for the hash check.

static int
s_api_blob_put(void *arg, const ms_hash_t *hash, const char *tmp_path,
               ms_diag_t *diag)
{
    ms_node_t *self = arg;
    return ms_node_command_blob_put(self->commands, hash, tmp_path, diag);
}

//  --------------------------------------------------------------------------
//  Queue an authority item and wait for the loop's answer.

static int
s_api_authority(void *arg, const char *text, size_t n, char **summary,
                ms_diag_t *diag)
{
    ms_node_t *self = arg;
    return ms_node_command_authority(self->commands, text, n, summary, diag);
}

//  --------------------------------------------------------------------------
//  Queue a sweep life-cycle action and wait for the loop's answer.

static int
s_api_control(void *arg, const ms_hash_t *sweep_id, const char *action,
              int32_t priority, ms_diag_t *diag)
{
    ms_node_t *self = arg;
    ms_node_control_t act;
    if (ms_node_control_parse(action, &act) != MS_OK)
        return ms_diag_set(diag, "action",
                           "'%.100s': expected cancel, pause, resume or "
                           "priority",
                           action);
    return ms_node_command_control(self->commands, sweep_id, (int) act,
                                   priority, diag);
}

//  --------------------------------------------------------------------------
//  Ask the loop for the leases of a task's slots; NULL when it cannot.

static json_t *
s_api_task_leases(void *arg, const ms_hash_t *task_id)
{
    ms_node_t *self = arg;
    return ms_node_command_task_leases(self->commands, task_id);
}

//  --------------------------------------------------------------------------
//  Ask the loop which blobs it holds; NULL when it cannot answer.

static json_t *
s_api_blobs_held(void *arg, const json_t *hashes)
{
    ms_node_t *self = arg;
    return ms_node_command_blobs_held(self->commands, hashes);
}

//  --------------------------------------------------------------------------
//  Ask the loop for the file of a held blob; NULL when not held.

static char *
s_api_blob_path(void *arg, const ms_hash_t *hash)
{
    ms_node_t *self = arg;
    return ms_node_command_blob_path(self->commands, hash);
}

//  --------------------------------------------------------------------------
//  Tasks of a sweep that peers run now (snapshot).

static int64_t
s_api_running_elsewhere(void *arg, const uint8_t *sweep_id)
{
    ms_node_t *self = arg;
    return ms_node_status_running_elsewhere(self->status, sweep_id);
}

//  --------------------------------------------------------------------------
//  The peers snapshot for /peers.

static json_t *
s_api_peers(void *arg)
{
    return ms_node_peers_json(arg);
}

//  --------------------------------------------------------------------------
//  The node's status object for /status and /metrics (the published
//  snapshot: ms_node_status).

static json_t *
s_api_status(void *arg)
{
    ms_node_t *self = arg;
    return ms_node_status_json(self->status);
}

//  --------------------------------------------------------------------------
//  Open the events and the HTTP API (when api_bind says), last: its
//  threads start at once. TOKEN_FILE is the caller's api_token_file
//  option, or NULL. Returns MS_OK, MS_ERR_NOMEM, or the error of the
//  token file or the API (in DIAG).

static int
s_api_open(ms_node_t *self, const char *token_file, ms_diag_t *diag)
{
    // Beyond loopback the API asks for the token of api_token_file
    // (default DATA_DIR/api-token, made 0600 when missing).
    char token[MS_API_TOKEN_MAX + 1] = "";
    if (self->api_bind && !ms_api_bind_loopback(self->api_bind)) {
        char path[PATH_MAX];
        ms_data_dir_path(self->dir, "api-token", path, sizeof path);
        self->api_token_file =
            strdup(token_file && *token_file ? token_file : path);
        if (!self->api_token_file)
            return MS_ERR_NOMEM;
        self->opts.api_token_file = self->api_token_file;
        int rc = ms_api_token_open(self->api_token_file, token, NULL, diag);
        if (rc != MS_OK)
            return rc;
    }
    if (self->api_bind) {
        // Event ids start at the wall time in ms x 1000, so that they
        // keep increasing across restarts (a client's Last-Event-ID from
        // before a restart then gets `reset`, not wrong events).
        ms_node_events_config_t ecfg = {
            .capacity = MS_EVENTS_DEFAULT_CAPACITY,
            .max_readers = MS_EVENTS_DEFAULT_READERS,
            .first_id = (uint64_t) ms_clock_wall_ms() * 1000 + 1};
        ms_node_events_iface_t eiface = {.arg = self,
                                         .log = s_log_line,
                                         .running_elsewhere =
                                             s_ne_running_elsewhere};
        self->events = ms_node_events_new(self->store, &ecfg, &eiface);
        if (!self->events) {
            return MS_ERR_NOMEM;
        }
        ms_api_hooks_t hooks = {
            .store = self->store,
            .arg = self,
            .submit = s_api_submit,
            .upload_dir = self->blobs ? self->blob_tmp_dir : NULL,
            .max_upload_bytes = (uint64_t) self->opts.max_dataset_bytes,
            .blob_put = s_api_blob_put,
            .status = s_api_status,
            .control = s_api_control,
            .authority = s_api_authority,
            .peers = s_api_peers,
            .running_elsewhere = s_api_running_elsewhere,
            .dashboard_dir = self->dashboard_dir,
            .events = ms_node_events_ring(self->events),
            .token = token,
            .task_leases = s_api_task_leases,
            .blobs_held = s_api_blobs_held,
            .blob_path = s_api_blob_path};
        int rc = ms_api_open(&self->api, self->api_bind, &hooks, diag);
        sodium_memzero(token, sizeof token);
        if (rc != MS_OK)
            return rc;
    }
    return MS_OK;
}

//  ==========================================================================
//  Sweep life cycle, pool id, peers

//  --------------------------------------------------------------------------
//  Parse an action name (ms_lifecycle's names).

int
ms_node_control_parse(const char *name, ms_node_control_t *out)
{
    ms_sweep_control_t action;
    if (ms_lifecycle_parse(name, &action) != MS_OK)
        return MS_ERR_INVALID;
    *out = (ms_node_control_t) action;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Apply a life-cycle action to a sweep (ms_lifecycle's rule).

int
ms_node_control(ms_node_t *self, const ms_hash_t *sweep_id,
                ms_node_control_t action, int32_t priority, ms_diag_t *diag)
{
    return ms_lifecycle_apply(self->lifecycle, sweep_id,
                              (ms_sweep_control_t) action, priority, diag);
}

//  --------------------------------------------------------------------------
//  The pool id, or NULL.

const char *
ms_node_pool_id_hex(ms_node_t *self)
{
    return ms_authority_pool_id_hex(self->authority);
}

//  --------------------------------------------------------------------------
//  A copy of the peers snapshot.

json_t *
ms_node_peers_json(ms_node_t *self)
{
    return ms_node_status_peers(self->status);
}

//  --------------------------------------------------------------------------
//  The mesh port, or 0.

int
ms_node_mesh_port(ms_node_t *self)
{
    return self->mesh ? ms_mesh_port(self->mesh) : 0;
}

//  ==========================================================================
//  Certificates (node/mesh/ms_authority; DESIGN.md "Identity, pools and
//  admission"): the node's side of ms_authority_iface_t, and SIGHUP

//  --------------------------------------------------------------------------
//  ms_authority_iface_t: a renewal of our certificate goes to the mesh
//  (later HELLOs) and to the members table.

static int
s_au_renew(void *arg, const ms_cert_chain_t *chain, const uint8_t *cert,
           size_t cert_len)
{
    ms_node_t *self = arg;
    int rc = self->mesh ? ms_mesh_set_certificate(self->mesh, cert, cert_len)
                        : MS_OK;
    if (rc != MS_OK)
        return rc;
    ms_members_refusal_t why;
    ms_members_admit(self->members, chain, (int64_t) time(NULL),
                     ms_clock_mono_ms(), &why);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  ms_authority_iface_t: our first certificate: join its pool now. Our
//  blocks so far were signed for no pool: from here on the served ones
//  are re-signed for this one (ms_block_signer_serve), and what we append
//  now is signed for it. When the mesh cannot open (a port in use, ...)
//  the node is alone again.

static int
s_au_join(void *arg, ms_diag_t *diag)
{
    ms_node_t *self = arg;
    uint8_t pool[MS_HASH_BYTES];
    ms_authority_pool_id(self->authority, pool);
    uint64_t held = 0, signed_from = UINT64_MAX; // unknown: check them all
    if (ms_store_held(self->store, s_node_pk(self),
                      ms_store_incarnation(self->store), &held) == MS_OK)
        signed_from = held + 1;
    ms_block_signer_set_pool(self->signer, pool, signed_from);
    int rc = s_mesh_open(self, diag);
    if (rc != MS_OK) {
        ms_keep_destroy(&self->keep);
        ms_reeval_destroy(&self->reeval);
        ms_blob_fetch_destroy(&self->fetch);
        ms_blob_store_destroy(&self->blobs);
        ms_gossip_destroy(&self->gossip);
        ms_mesh_destroy(&self->mesh);
        ms_members_destroy(&self->members);
        ms_item_sync_leave(self->item_sync);
        static const uint8_t no_pool[MS_WIRE_ID_BYTES];
        ms_block_signer_set_pool(self->signer, no_pool, signed_from);
        return rc;
    }
    s_work_changed(self);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  ms_authority_iface_t: the mesh port, or 0.

static int
s_au_mesh_port(void *arg)
{
    return ms_node_mesh_port(arg);
}

//  --------------------------------------------------------------------------
//  At open, once the identity is: the authority state over the data dir
//  (node.cert, or enrollment with ENROLL_KEY, or neither).

static int
s_authority_open(ms_node_t *self, const char *enroll_key, ms_diag_t *diag)
{
    ms_authority_config_t cfg = {.data_dir = self->data_dir,
                                 .open_pool = self->open_pool,
                                 .enroll_key = enroll_key};
    memcpy(cfg.node_pk, s_node_pk(self), MS_CERT_KEY_BYTES);
    ms_authority_iface_t iface = {.arg = self,
                                  .renew = s_au_renew,
                                  .join = s_au_join,
                                  .mesh_port = s_au_mesh_port};
    return ms_authority_open(&self->authority, &cfg, &iface, diag);
}

//  --------------------------------------------------------------------------
//  Reload the certificate (SIGHUP)

int
ms_node_reload_certificate(ms_node_t *self, ms_diag_t *diag)
{
    assert(self);
    return ms_authority_reload(self->authority, diag);
}

//  --------------------------------------------------------------------------
//  Ask for a reload (async-signal-safe)

void
ms_node_ask_reload(ms_node_t *self)
{
    if (!self)
        return;
    ms_authority_ask_reload(self->authority);
    ms_node_command_wake(self->commands, 'r');
}

//  --------------------------------------------------------------------------
//  SIGHUP: peers.conf again; new peers are dialed, a bad file changes
//  nothing.

static void
s_reload_peers(ms_node_t *self)
{
    char **peers = NULL;
    size_t n = 0;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_peers_conf_load(self->data_dir, &peers, &n, &diag);
    char text[1100];
    if (rc == MS_ERR_NOTFOUND)
        return;
    if (rc != MS_OK) {
        fprintf(stderr,
                "meshsweepd: warning: reload: peers.conf not taken, the "
                "peers stay as they were: %s\n",
                ms_diag_format(&diag, text, sizeof text));
        return;
    }
    size_t added = 0;
    for (size_t i = 0; self->mesh && i < n; i++) {
        bool known = false;
        for (int j = 0; j < self->opts.n_peers && !known; j++)
            known = self->peers[j] && strcmp(self->peers[j], peers[i]) == 0;
        if (known)
            continue;
        ms_diag_clear(&diag);
        if (ms_mesh_add_peer(self->mesh, peers[i], &diag) == MS_OK)
            added++;
        else
            fprintf(stderr, "meshsweepd: warning: reload: peer %s: %s\n",
                    peers[i], ms_diag_format(&diag, text, sizeof text));
    }
    if (self->mesh)
        fprintf(stderr, "meshsweepd: reload: peers.conf: %zu peer(s)\n", n);
    (void) added;
    ms_peers_conf_free(&peers, n);
}

//  --------------------------------------------------------------------------
//  SIGHUP, at the loop's turn: the certificate (ms_authority prints what
//  came of it), then peers.conf.

static void
s_reload_if_asked(ms_node_t *self)
{
    if (ms_authority_reload_if_asked(self->authority))
        s_reload_peers(self);
}

//  --------------------------------------------------------------------------
//  Revoke a node locally

int
ms_node_revoke(ms_node_t *self, const uint8_t node_id[32])
{
    assert(self && node_id);
    if (!self->members)
        return MS_ERR_NOTFOUND;
    if (self->mesh)
        return ms_mesh_revoke(self->mesh, node_id, NULL);
    return ms_members_revoke(self->members, node_id, NULL);
}

//  --------------------------------------------------------------------------
//  Certificate?

bool
ms_node_has_certificate(ms_node_t *self)
{
    assert(self);
    return ms_authority_has_certificate(self->authority);
}

//  --------------------------------------------------------------------------
//  Operator name

const char *
ms_node_operator(ms_node_t *self)
{
    assert(self);
    return ms_authority_operator(self->authority);
}

//  --------------------------------------------------------------------------
//  Test hooks (ms_node.h): the dishonest member of the trust tests.

void
ms_node_set_result_hook(ms_node_t *self, ms_node_result_hook_fn fn, void *arg)
{
    assert(self);
    self->result_hook = fn;
    self->result_hook_arg = fn ? arg : NULL;
}

void
ms_node_set_work_hook(ms_node_t *self, ms_node_work_hook_fn fn, void *arg)
{
    assert(self);
    self->work_hook = fn;
    self->work_hook_arg = fn ? arg : NULL;
}

void
ms_node_set_ignore_roles(ms_node_t *self, bool ignore)
{
    assert(self);
    self->ignore_roles = ignore;
}

//  --------------------------------------------------------------------------
//  Publish a row as our result of a task under a fresh claim of slot 0
//  (claim and result in one block), and tell the lease table: our claim,
//  finished by our result.

int
ms_node_publish_result(ms_node_t *self, const uint8_t task_id[32],
                       const char *row_json, size_t row_len)
{
    assert(self);
    assert(task_id);
    if (!row_json || row_len == 0)
        return MS_ERR_INVALID;
    ms_hash_t tid;
    memcpy(tid.bytes, task_id, MS_HASH_BYTES);
    uint32_t epoch = ms_lease_table_max_epoch(self->leases, task_id, 0) + 1;
    json_error_t err;
    json_t *row = json_loadb(row_json, row_len, 0, &err);
    uint32_t status = ms_outbox_row_status(row);
    json_decref(row);
    ms_store_payload_t p[2];
    memset(p, 0, sizeof p);
    p[0].kind = MS_RECORD_CLAIM;
    memcpy(p[0].u.claim.task_id, task_id, MS_HASH_BYTES);
    p[0].u.claim.epoch = epoch;
    p[1].kind = MS_RECORD_RESULT;
    memcpy(p[1].u.result.task_id, task_id, MS_HASH_BYTES);
    p[1].u.result.status = status;
    p[1].u.result.row_json = row_json;
    p[1].u.result.row_len = row_len;
    p[1].u.result.slot = 0;
    p[1].u.result.epoch = epoch;
    int rc = s_append(self, 2, p);
    if (rc != MS_OK)
        return rc;
    ms_claim_t c = {.slot = 0, .epoch = epoch};
    memcpy(c.task_id, task_id, MS_LEASE_ID_BYTES);
    memcpy(c.node_id, s_node_pk(self), MS_LEASE_ID_BYTES);
    ms_lease_table_add_claim(self->leases, &c);
    ms_lease_table_finish(self->leases, task_id, 0, s_node_pk(self));
    s_work_changed(self);
    return MS_OK;
}
