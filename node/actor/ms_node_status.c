/*  =========================================================================
    ms_node_status - what the HTTP threads show of the node: the status
    page, the peers, the metrics snapshot; and a sweep's progress

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_node_status.h for what the class owns and its thread rule. The
    snapshot is a set of JSON objects and scalar figures behind one mutex;
    a refresh builds the new objects with no lock held and swaps the
    pointers under it, so an HTTP thread never waits for a store scan.
*/
#include "ms_node_status.h"

#include "ms_cert.h"
#include "ms_err.h"

#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

//  What the class keeps of one sweep (its progress).
typedef struct {
    ms_hash_t sweep_id;   // the sweep
    double started_at;    // monotonic seconds of its first task here; 0
    bool summed;          // train_seconds holds the stored rows' sum
    double train_seconds; // sum of train_seconds of its stored rows
} s_sweep_t;

struct ms_node_status {
    // settings (fixed)
    ms_store_t *store;                 // borrowed, read only
    ms_node_status_iface_t iface;      // the node
    const ms_clock_t *clock;           // monotonic ms
    char node_id[MS_HASH_HEX_LEN + 1]; // this node (hex)
    char store_path[PATH_MAX];         // the store's data file
    char *open_pool;                   // open pool name, or NULL
    int n_workers;                     // worker processes
    json_t *backend;                   // the backend object, or NULL
    bool idle_only;                    // volunteer settings
    int idle_cpu_pct, idle_busy_s, idle_quiet_s, max_pause_s;
    int worker_memory_mb;
    const char *idle_source; // "processes", "cgroup" (static), or NULL
    char *idle_cgroup;       // the cgroup's cpu.stat, or NULL
    double opened_at;        // monotonic seconds at new
    // loop side (loop thread only)
    int64_t refresh_at;   // monotonic ms: next tick's refresh
    s_sweep_t *sweeps;    // sweeps asked about or started here
    size_t n_sweeps;      // entries in sweeps
    uint64_t done_seen;   // done + failed tasks at the last look
    bool done_seen_set;   // done_seen holds a first look
    uint64_t n_completed; // increases of done_seen, summed
    int64_t tps_at[MS_NODE_STATUS_TPS_RING]; // monotonic ms of the samples
    uint64_t tps_n[MS_NODE_STATUS_TPS_RING]; // n_completed at each sample
    uint64_t n_tps;                          // samples taken in all
    int64_t tps_next_at;                     // monotonic ms: next sample
    // the snapshot (under lock)
    pthread_mutex_t lock;      // guards the fields below
    json_t *peers;             // the peers table, marked
    json_t *pool_counters;     // status pool_counters, or NULL
    json_t *metrics;           // labelled /metrics figures, or NULL
    json_t *remote_running;    // {sweep hex: tasks peers run}, or NULL
    int n_busy;                // workers running a task
    uint64_t n_trained;        // results stored (train tasks)
    double training_seconds;   // their train_seconds summed
    uint64_t n_worker_crashes; // worker deaths
    json_t *platform;          // last platform seen, or NULL
    double calibration_gflops; // the workers' median figure (0: none yet)
    double c2s_ms[MS_NODE_STATUS_C2S_RING]; // claim-to-start (ring)
    uint64_t n_c2s;                         // figures recorded in all
    bool paused;                            // paused for the machine's owner
    time_t paused_since;                    // wall time the pause began
    char pause_reason[200];                 // why, "" when not paused
    uint64_t n_pauses;                      // pauses begun
    uint64_t n_pause_releases;              // claims released after max_pause_s
    double idle_others_pct;                 // others' CPU, last sample, -1
    double idle_own_pct;                    // own CPU, last sample, -1
    char operator_name[MS_CERT_OPERATOR_MAX + 1]; // as last sampled
    char pool_id_hex[MS_HASH_HEX_LEN + 1];        // "" in no pool
    bool has_cert;                                // an authority's pool
    bool encrypted;                               // the mesh is secure
    uint64_t n_held;                              // outbox: held results
    uint64_t n_reveals;                           // outbox: reveals
    uint32_t n_pool_operators;                    // as the store counts
};

//  --------------------------------------------------------------------------
//  Monotonic ms and seconds of the class's clock.

static int64_t
s_now_ms(const ms_node_status_t *self)
{
    return self->clock->mono_ms(self->clock->ctx);
}

static double
s_now_s(const ms_node_status_t *self)
{
    return (double) s_now_ms(self) / 1000.0;
}

//  --------------------------------------------------------------------------
//  Create the status.

ms_node_status_t *
ms_node_status_new(ms_store_t *store, const ms_node_status_config_t *cfg,
                   const ms_node_status_iface_t *iface)
{
    if (!cfg->node_id || strlen(cfg->node_id) > MS_HASH_HEX_LEN ||
        !cfg->store_path || strlen(cfg->store_path) >= PATH_MAX)
        return NULL;
    ms_node_status_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    pthread_mutex_init(&self->lock, NULL);
    self->store = store;
    self->iface = *iface;
    self->clock = cfg->clock ? cfg->clock : ms_clock_system();
    snprintf(self->node_id, sizeof self->node_id, "%s", cfg->node_id);
    snprintf(self->store_path, sizeof self->store_path, "%s", cfg->store_path);
    self->open_pool = cfg->open_pool ? strdup(cfg->open_pool) : NULL;
    self->n_workers = cfg->n_workers;
    self->backend = cfg->backend ? json_deep_copy(cfg->backend) : NULL;
    self->idle_only = cfg->idle_only;
    self->idle_cpu_pct = cfg->idle_cpu_pct;
    self->idle_busy_s = cfg->idle_busy_s;
    self->idle_quiet_s = cfg->idle_quiet_s;
    self->max_pause_s = cfg->max_pause_s;
    self->worker_memory_mb = cfg->worker_memory_mb;
    self->idle_source = cfg->idle_source;
    self->idle_cgroup = cfg->idle_cgroup ? strdup(cfg->idle_cgroup) : NULL;
    self->opened_at =
        cfg->opened_at_ms ? (double) cfg->opened_at_ms / 1000.0 : s_now_s(self);
    self->idle_others_pct = -1;
    self->idle_own_pct = -1;
    self->peers = json_array();
    if ((cfg->open_pool && !self->open_pool) ||
        (cfg->backend && !self->backend) ||
        (cfg->idle_cgroup && !self->idle_cgroup) || !self->peers)
        ms_node_status_destroy(&self);
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_node_status_destroy(ms_node_status_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_node_status_t *self = *self_p;
    json_decref(self->peers);
    json_decref(self->pool_counters);
    json_decref(self->metrics);
    json_decref(self->remote_running);
    json_decref(self->platform);
    json_decref(self->backend);
    free(self->open_pool);
    free(self->idle_cgroup);
    free(self->sweeps);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  What the class keeps of a sweep, created on first use; NULL when memory
//  runs out.

static s_sweep_t *
s_sweep(ms_node_status_t *self, const ms_hash_t *sweep_id)
{
    return ms_hash_entry(&self->sweeps, &self->n_sweeps, sizeof(s_sweep_t),
                         offsetof(s_sweep_t, sweep_id), sweep_id, NULL);
}

//  ==========================================================================
//  The loop side: events as they happen

//  --------------------------------------------------------------------------
//  Workers running a task now.

void
ms_node_status_set_busy(ms_node_status_t *self, int n_busy)
{
    pthread_mutex_lock(&self->lock);
    self->n_busy = n_busy;
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  A result of ours is durable.

void
ms_node_status_result_stored(ms_node_status_t *self, const ms_hash_t *sweep_id,
                             bool train, double train_seconds,
                             json_t **platform)
{
    s_sweep_t *sw = s_sweep(self, sweep_id);
    if (sw && sw->summed && isfinite(train_seconds))
        sw->train_seconds += train_seconds;
    pthread_mutex_lock(&self->lock);
    if (train) {
        self->n_trained++;
        self->training_seconds += train_seconds;
    }
    if (platform && *platform) {
        json_decref(self->platform);
        self->platform = *platform;
        *platform = NULL;
    }
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  A worker died.

void
ms_node_status_worker_crashed(ms_node_status_t *self)
{
    pthread_mutex_lock(&self->lock);
    self->n_worker_crashes++;
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  One claim-to-start figure.

void
ms_node_status_claim_to_start(ms_node_status_t *self, double ms)
{
    pthread_mutex_lock(&self->lock);
    self->c2s_ms[self->n_c2s % MS_NODE_STATUS_C2S_RING] = ms;
    self->n_c2s++;
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  The volunteer pause figures.

void
ms_node_status_paused(ms_node_status_t *self, const ms_runner_pause_t *pause)
{
    pthread_mutex_lock(&self->lock);
    self->paused = pause->paused;
    self->paused_since = pause->paused_since;
    snprintf(self->pause_reason, sizeof self->pause_reason, "%s",
             pause->reason ? pause->reason : "");
    self->n_pauses = pause->n_pauses;
    self->n_pause_releases = pause->n_pause_releases;
    self->idle_others_pct = pause->others_pct;
    self->idle_own_pct = pause->own_pct;
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  A task of the sweep started here.

void
ms_node_status_sweep_started(ms_node_status_t *self, const ms_hash_t *sweep_id)
{
    s_sweep_t *sw = s_sweep(self, sweep_id);
    if (sw && sw->started_at == 0)
        sw->started_at = s_now_s(self);
}

//  Sum of train_seconds over a sweep's rows.
typedef struct {
    double seconds; // sum so far
} s_sum_t;

//  --------------------------------------------------------------------------
//  Add one row's train_seconds.

static int
s_sum_row(void *arg, const char *json, size_t n)
{
    s_sum_t *sum = arg;
    json_error_t err;
    json_t *row = json_loadb(json, n, 0, &err);
    if (row) {
        json_t *v = json_object_get(row, "train_seconds");
        if (json_is_number(v))
            sum->seconds += json_number_value(v);
    }
    json_decref(row);
    return 0;
}

//  --------------------------------------------------------------------------
//  Progress of a sweep.

int
ms_node_status_sweep_progress(ms_node_status_t *self, const ms_hash_t *sweep_id,
                              ms_sweep_progress_t *out)
{
    memset(out, 0, sizeof *out);
    ms_store_sweep_t *sweep = NULL;
    int rc = ms_store_get_sweep(self->store, sweep_id->bytes, &sweep);
    if (rc != MS_OK)
        return rc;
    out->total = (int64_t) sweep->n_tasks;
    out->pending = (int64_t) (sweep->counts[MS_TASK_PENDING] +
                              sweep->counts[MS_TASK_CLAIMED]);
    out->running = (int64_t) sweep->counts[MS_TASK_RUNNING];
    out->done = (int64_t) sweep->counts[MS_TASK_DONE];
    out->failed = (int64_t) sweep->counts[MS_TASK_FAILED];
    out->cancelled = (int64_t) sweep->counts[MS_TASK_CANCELLED];
    ms_store_sweep_destroy(&sweep);
    // The rows are summed once; results stored later are added as they
    // come (ms_node_status_result_stored), so a progress display polling
    // often stays cheap.
    s_sweep_t *sw = s_sweep(self, sweep_id);
    if (!sw)
        return MS_ERR_NOMEM;
    if (!sw->summed) {
        s_sum_t sum = {0};
        rc = ms_store_results_by_sweep(self->store, sweep_id->bytes, 0, 0,
                                       s_sum_row, &sum, NULL);
        if (rc != MS_OK)
            return rc;
        sw->train_seconds = sum.seconds;
        sw->summed = true;
    }
    out->train_seconds = sw->train_seconds;
    if (sw->started_at > 0)
        out->elapsed_seconds = s_now_s(self) - sw->started_at;
    return MS_OK;
}

//  ==========================================================================
//  The loop side: the refresh

//  --------------------------------------------------------------------------
//  Add one sweep's finished tasks (done, failed).

static int
s_sum_finished(void *arg, const ms_store_sweep_t *sweep)
{
    *(uint64_t *) arg +=
        sweep->counts[MS_TASK_DONE] + sweep->counts[MS_TASK_FAILED];
    return 0;
}

//  --------------------------------------------------------------------------
//  At every refresh: tasks this store saw reach done or failed since the
//  class was made (the increases of their count over the sweeps' headers:
//  O(sweeps), no task row read); once a second a sample of it in the ring
//  that tasks_per_second is computed over.

static void
s_tps_sample(ms_node_status_t *self, int64_t now)
{
    uint64_t finished = 0;
    if (ms_store_list_sweeps(self->store, s_sum_finished, &finished) != MS_OK)
        return;
    if (self->done_seen_set && finished > self->done_seen)
        self->n_completed += finished - self->done_seen;
    self->done_seen = finished;
    self->done_seen_set = true;
    if (now < self->tps_next_at)
        return;
    self->tps_next_at = now + MS_NODE_STATUS_TPS_SAMPLE_MS;
    size_t at = (size_t) (self->n_tps % MS_NODE_STATUS_TPS_RING);
    self->tps_at[at] = now;
    self->tps_n[at] = self->n_completed;
    self->n_tps++;
}

//  --------------------------------------------------------------------------
//  Tasks per second over the last MS_NODE_STATUS_TPS_WINDOW_MS (or since
//  the first sample when the node is younger): the increase of
//  n_completed between the oldest sample inside the window and the
//  newest; *window_s gets the seconds it spans.

static double
s_tps(const ms_node_status_t *self, double *window_s)
{
    enum { RING = MS_NODE_STATUS_TPS_RING };
    *window_s = 0;
    if (self->n_tps < 2)
        return 0;
    size_t newest = (size_t) ((self->n_tps - 1) % RING);
    size_t kept = self->n_tps < RING ? (size_t) self->n_tps : RING;
    size_t oldest = newest;
    for (size_t k = 1; k < kept; k++) {
        size_t i = (newest + RING - k) % RING;
        if (self->tps_at[newest] - self->tps_at[i] >
            MS_NODE_STATUS_TPS_WINDOW_MS)
            break;
        oldest = i;
    }
    int64_t span = self->tps_at[newest] - self->tps_at[oldest];
    if (span <= 0)
        return 0;
    *window_s = (double) span / 1000.0;
    return (double) (self->tps_n[newest] - self->tps_n[oldest]) / *window_s;
}

//  --------------------------------------------------------------------------
//  The labelled figures /metrics prints (ms_api_metrics.c "GET /metrics"):
//  gossip messages and bytes by direction and kind, rejected messages by
//  reason, peers by state, re-evaluations by outcome, tasks completed and
//  their rate. PEERS is the marked peer table (borrowed).

static json_t *
s_metrics_labelled(ms_node_status_t *self, const ms_node_status_sample_t *s,
                   const json_t *peers)
{
    json_t *m = json_object();
    if (!m)
        return NULL;
    if (s->has_gossip) {
        static const char *kinds[MS_GOSSIP_MSG_KINDS] = {
            NULL, "digest", "vector", "range_request", "block"};
        const ms_gossip_stats_t *gs = &s->gossip;
        json_t *g = json_object();
        for (int d = 0; g && d < 2; d++) {
            json_t *dir = json_object();
            for (int k = 1; dir && k < MS_GOSSIP_MSG_KINDS; k++)
                json_object_set_new(
                    dir, kinds[k],
                    json_pack("{s:I, s:I}", "messages",
                              (json_int_t) (d ? gs->received[k] : gs->sent[k]),
                              "bytes",
                              (json_int_t) (d ? gs->received_bytes[k]
                                              : gs->sent_bytes[k])));
            json_object_set_new(g, d ? "received" : "sent",
                                dir ? dir : json_object());
        }
        if (g)
            json_object_set_new(m, "gossip", g);
    }
    // Rejected messages by reason; they sum to rejected_messages_total.
    json_t *rej = json_object();
    if (rej) {
        const struct {
            const char *name;
            uint64_t value;
        } r[] = {
            {"frame_malformed", s->has_mesh ? s->mesh.n_malformed : 0},
            {"hello_refused", s->has_mesh ? s->mesh.n_rejected : 0},
            {"gossip_invalid", s->has_gossip ? s->gossip.rejected : 0},
            {"message_refused", s->n_rejected_messages},
            {"block_unsigned", s->signer.n_unsigned},
            {"block_bad_signature", s->signer.n_bad_signature},
            {"block_not_admitted", s->signer.n_not_admitted},
        };
        for (size_t k = 0; k < sizeof r / sizeof r[0]; k++)
            json_object_set_new(rej, r[k].name,
                                json_integer((json_int_t) r[k].value));
        json_object_set_new(m, "rejected", rej);
    }
    // Peers by state, each peer once: revoked (by the authority) before
    // quarantined (by this store's verdicts) before its liveness.
    json_int_t n_state[5] = {0};
    static const char *states[5] = {"alive", "suspect", "dead", "revoked",
                                    "quarantined"};
    size_t i;
    const json_t *peer;
    json_array_foreach(peers, i, peer)
    {
        const char *hex = json_string_value(json_object_get(peer, "node_id"));
        const char *st = json_string_value(json_object_get(peer, "state"));
        ms_hash_t id;
        if (!hex || !st || ms_hash_from_hex(hex, &id) != MS_OK)
            continue;
        // "revoked" and "quarantined" as s_peers_standing set them.
        int k = 0;
        if (json_is_true(json_object_get(peer, "revoked")))
            k = 3;
        else if (json_is_true(json_object_get(peer, "quarantined")))
            k = 4;
        else if (strcmp(st, "suspect") == 0)
            k = 1;
        else if (strcmp(st, "dead") == 0)
            k = 2;
        n_state[k]++;
    }
    json_t *ps = json_object();
    for (int k = 0; ps && k < 5; k++)
        json_object_set_new(ps, states[k], json_integer(n_state[k]));
    if (ps)
        json_object_set_new(m, "peer_states", ps);
    ms_reeval_stats_t rs = {0};
    if (s->has_reeval)
        rs = s->reeval;
    json_object_set_new(m, "reevaluations",
                        json_pack("{s:I, s:I, s:I}", "agree",
                                  (json_int_t) rs.n_agreed, "disagree",
                                  (json_int_t) rs.n_disagreed, "failed",
                                  (json_int_t) rs.n_failed));
    double window_s = 0;
    double tps = s_tps(self, &window_s);
    json_object_set_new(m, "tasks_completed_total",
                        json_integer((json_int_t) self->n_completed));
    json_object_set_new(m, "tasks_per_second", json_real(tps));
    json_object_set_new(m, "tasks_per_second_window_seconds",
                        json_real(window_s));
    return m;
}

//  --------------------------------------------------------------------------
//  Mark each peer of the mesh's table with its standing in this node's
//  view: "revoked" (the pool authority revoked its certificate) and
//  "quarantined" (this store's verdicts quarantine it). Its "state" stays
//  the link's liveness (alive, suspect, dead): a revoked peer is cut off
//  and so dead, but not only dead. /api/v1/peers, the peer_states metric
//  and `meshsweep peers` read these.

static void
s_peers_standing(ms_node_status_t *self, json_t *peers)
{
    size_t i;
    json_t *peer;
    json_array_foreach(peers, i, peer)
    {
        const char *hex = json_string_value(json_object_get(peer, "node_id"));
        ms_hash_t id;
        if (!hex || ms_hash_from_hex(hex, &id) != MS_OK)
            continue;
        bool revoked = self->iface.revoked(self->iface.arg, id.bytes);
        bool quarantined = false;
        if (ms_store_node_standing(self->store, id.bytes, NULL, NULL,
                                   &quarantined) != MS_OK)
            quarantined = false;
        json_object_set_new(peer, "revoked", json_boolean(revoked));
        json_object_set_new(peer, "quarantined", json_boolean(quarantined));
    }
}

//  --------------------------------------------------------------------------
//  Tasks pending here that a peer holds a live lease on, by sweep (the
//  API's "running elsewhere"), from the state index: a skip function that
//  counts and skips every task, so no task row is read.

typedef struct {
    ms_node_status_t *self;
    json_t *out; // sweep id hex -> count
    size_t left; // tasks still to look at (bounds the walk)
    uint8_t last_sweep[MS_HASH_BYTES];
    char last_hex[MS_HASH_HEX_LEN + 1];
} s_remote_count_t;

static ms_store_task_filter_t
s_count_remote(void *arg, const uint8_t *task_id, const uint8_t *sweep_id,
               ms_task_state_t state)
{
    s_remote_count_t *rc = arg;
    if (rc->left == 0)
        return MS_STORE_TASK_STOP;
    rc->left--;
    ms_node_status_t *self = rc->self;
    if (state != MS_TASK_PENDING ||
        !self->iface.held_elsewhere(self->iface.arg, task_id))
        return MS_STORE_TASK_SKIP;
    if (!rc->last_hex[0] ||
        memcmp(rc->last_sweep, sweep_id, MS_HASH_BYTES) != 0) {
        ms_hash_t sid;
        memcpy(sid.bytes, sweep_id, MS_HASH_BYTES);
        ms_hash_hex(&sid, rc->last_hex);
        memcpy(rc->last_sweep, sweep_id, MS_HASH_BYTES);
    }
    json_int_t n = json_integer_value(json_object_get(rc->out, rc->last_hex));
    json_object_set_new(rc->out, rc->last_hex, json_integer(n + 1));
    return MS_STORE_TASK_SKIP;
}

//  --------------------------------------------------------------------------
//  The task callback of the walk above (never called: every task is
//  skipped).

static int
s_no_task(void *arg, const ms_store_task_t *task)
{
    (void) arg;
    (void) task;
    return 0;
}

//  --------------------------------------------------------------------------
//  The mapping of the collaborators' figures onto MS_METRICS_LIST.

unsigned
ms_node_status_metrics(const ms_node_status_sample_t *s, ms_metrics_t *m)
{
    *m = s->own;
    unsigned groups = MS_METRICS_GROUP_NODE;
    m->records = s->store.n_records;
    m->blocks = s->store.n_blocks;
    m->store_commits_total = s->store.n_commits;
    m->store_writes_total = s->store.n_writes;
    m->equivocations_total = s->store.n_equivocations;
    m->leases = s->n_leases;
    m->lease_claims_total = s->runner.n_claims;
    m->lease_conflicts_total = s->runner.n_conflicts;
    m->lease_settle_lost_total = s->runner.n_settle_lost;
    m->lease_settle_capped_total = s->runner.n_settle_capped;
    m->lease_expiries_total = s->runner.n_expiries;
    m->block_acks_sent_total = s->log.n_acks_sent;
    m->block_acks_received_total = s->log.n_acks_received;
    m->blocks_rejected_total = s->signer.n_rejected;
    m->blocks_unsigned_total = s->signer.n_unsigned;
    m->blocks_bad_signature_total = s->signer.n_bad_signature;
    m->blocks_not_admitted_total = s->signer.n_not_admitted;
    m->blocks_resigned_total = s->signer.n_resigned;
    m->rejected_messages_total = s->n_rejected_messages + s->signer.n_rejected;
    if (s->has_gossip) {
        groups |= MS_METRICS_GROUP_GOSSIP;
        const ms_gossip_stats_t *gs = &s->gossip;
        m->gossip_messages_total = m->gossip_bytes_total = 0;
        for (int k = 0; k < MS_GOSSIP_MSG_KINDS; k++) {
            m->gossip_messages_total += gs->sent[k] + gs->received[k];
            m->gossip_bytes_total += gs->sent_bytes[k] + gs->received_bytes[k];
        }
        m->gossip_blocks_merged_total = gs->blocks_merged;
        m->gossip_records_merged_total = gs->records_new;
        m->gossip_range_requests_total = gs->range_requests;
        m->gossip_ranges_served_total = gs->ranges_served;
        m->gossip_pulls_timed_out_total = gs->pulls_timed_out;
        m->gossip_pulls_dropped_total = gs->pulls_dropped;
        m->gossip_gaps_buffered_total = gs->gaps_buffered;
        m->gossip_gaps_dropped_total = gs->gaps_dropped;
        m->gossip_batches_total = gs->batches;
        m->rejected_messages_total += gs->rejected;
    }
    if (s->has_mesh) {
        groups |= MS_METRICS_GROUP_MESH;
        const ms_mesh_stats_t *ms = &s->mesh;
        m->rejected_messages_total += ms->n_malformed + ms->n_rejected;
        m->mesh_frames_in_total = ms->n_frames_in;
        m->mesh_frames_out_total = ms->n_frames_out;
        // admission: refusals per reason (DESIGN.md "Identity, pools and
        // admission"), one line each in MS_METRICS_LIST
        _Static_assert(MS_MEMBERS_REFUSED_KINDS == 7,
                       "a refusal reason needs its line in MS_METRICS_LIST");
        m->admission_refused_total = ms->n_admission_refused;
        m->admission_refused_no_certificate_total =
            ms->n_refused[MS_MEMBERS_REFUSED_NO_CERT];
        m->admission_refused_other_pool_total =
            ms->n_refused[MS_MEMBERS_REFUSED_OTHER_POOL];
        m->admission_refused_expired_total =
            ms->n_refused[MS_MEMBERS_REFUSED_EXPIRED];
        m->admission_refused_revoked_total =
            ms->n_refused[MS_MEMBERS_REFUSED_REVOKED];
        m->admission_refused_bad_signature_total =
            ms->n_refused[MS_MEMBERS_REFUSED_BAD_SIG];
        m->admission_refused_key_mismatch_total =
            ms->n_refused[MS_MEMBERS_REFUSED_KEY_MISMATCH];
        m->admission_refused_denied_total =
            ms->n_refused[MS_MEMBERS_REFUSED_DENIED];
        m->admission_hello_timeouts_total = ms->n_hello_timeouts;
        m->admission_unauthorized_frames_total = ms->n_unauthorized;
        m->admission_links_closed_total = ms->n_revoked_links;
        m->members = s->n_members;
    }
    m->authority_items = s->items.n_items;
    m->authority_items_added_total = s->items.n_added;
    m->authority_items_refused_total = s->items.n_refused;
    m->revocations_applied_total = s->items.n_revocations;
    m->results_refused_invalid_total = s->lease_feed.n_refused_invalid;
    m->records_ignored_no_role_total = s->n_ignored_no_role;
    if (s->has_datasets) {
        m->datasets_fetched_total = s->datasets.n_fetched;
        m->datasets_local_total = s->datasets.n_local;
        m->datasets_local_mismatch_total = s->datasets.n_local_mismatch;
        m->dataset_fetches_asked_total = s->datasets.n_fetches_asked;
        m->blob_uploads_total = s->datasets.n_uploads;
    }
    if (s->has_fetch) {
        groups |= MS_METRICS_GROUP_FETCH;
        ms_reeval_stats_t rs = {0};
        if (s->has_reeval)
            rs = s->reeval;
        m->blob_fetches_completed_total = s->fetch.completed;
        m->blob_fetches_running = s->n_fetches_running;
        m->blob_requests_sent_total = s->fetch.requests_sent;
        m->blob_bytes_received_total = s->fetch.bytes_received;
        m->blob_request_timeouts_total = s->fetch.timeouts;
        m->blob_hash_mismatches_total = s->fetch.hash_mismatches;
        m->blob_bytes = s->blobs.used_bytes;
        m->blob_evictions_total = s->blobs.evictions;
        m->reevaluations_sampled_total = rs.n_sampled;
        m->reevaluations_published_total = rs.n_published;
        m->reevaluations_failed_total = rs.n_failed;
        m->reevaluations_pending = rs.n_pending;
        m->weights_copies_total = rs.n_copied;
        m->weights_pinned = rs.n_pinned;
    }
    return groups;
}

//  --------------------------------------------------------------------------
//  Refresh the snapshot when it is due.

void
ms_node_status_tick(ms_node_status_t *self)
{
    int64_t now = s_now_ms(self);
    if (now < self->refresh_at)
        return;
    self->refresh_at = now + MS_NODE_STATUS_REFRESH_MS;
    ms_node_status_refresh(self);
}

//  --------------------------------------------------------------------------
//  Swap a published object for a new one (when there is one). Called
//  with the lock held.

static void
s_swap(json_t **published, json_t *fresh)
{
    if (!fresh)
        return;
    json_decref(*published);
    *published = fresh;
}

//  --------------------------------------------------------------------------
//  Refresh the snapshot now.

void
ms_node_status_refresh(ms_node_status_t *self)
{
    s_tps_sample(self, s_now_ms(self));
    ms_node_status_sample_t s;
    memset(&s, 0, sizeof s);
    self->iface.sample(self->iface.arg, &s);
    json_t *peers = self->iface.peers(self->iface.arg);
    s_peers_standing(self, peers);
    ms_metrics_t counters;
    unsigned groups = ms_node_status_metrics(&s, &counters);
    json_t *c = ms_metrics_status_json(&counters, groups);
    json_t *m = s_metrics_labelled(self, &s, peers);
    json_t *rr = json_object();
    if (rr && s.has_mesh) {
        // Counted from the state index alone (no task row is read): the
        // skip function counts and skips every task.
        s_remote_count_t rc = {
            .self = self, .out = rr, .left = MS_NODE_STATUS_REMOTE_MAX};
        ms_store_pending_tasks_filtered(self->store, s_count_remote, s_no_task,
                                        &rc);
    }
    pthread_mutex_lock(&self->lock);
    self->calibration_gflops = s.calibration_gflops;
    // The platform on /status: the last result's; before any, what a
    // worker announced at start (the same object its rows will carry).
    if (!self->platform && s.worker_platform)
        self->platform = json_deep_copy(s.worker_platform);
    s_swap(&self->peers, peers);
    s_swap(&self->remote_running, rr);
    s_swap(&self->pool_counters, c);
    s_swap(&self->metrics, m);
    snprintf(self->operator_name, sizeof self->operator_name, "%s",
             s.authority.operator_name);
    snprintf(self->pool_id_hex, sizeof self->pool_id_hex, "%s",
             s.authority.pool_id_hex);
    self->has_cert = s.authority.has_certificate;
    self->encrypted = s.has_mesh && s.mesh_secure;
    self->n_held = s.outbox.n_held;
    self->n_reveals = s.outbox.n_reveals;
    self->n_pool_operators = s.n_pool_operators;
    pthread_mutex_unlock(&self->lock);
}

//  ==========================================================================
//  The HTTP side: the published snapshot

//  --------------------------------------------------------------------------
//  Order two doubles (qsort).

static int
s_cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

//  --------------------------------------------------------------------------
//  {"n","window","median","p99"} of the recent claim-to-start figures (ms;
//  n = all recorded, window = how many the median and p99 are over; null
//  figures when none). Called with the lock held.

static json_t *
s_claim_to_start_json(const ms_node_status_t *self)
{
    enum { RING = MS_NODE_STATUS_C2S_RING };
    size_t k = self->n_c2s < RING ? (size_t) self->n_c2s : RING;
    double v[RING];
    memcpy(v, self->c2s_ms, k * sizeof v[0]);
    qsort(v, k, sizeof v[0], s_cmp_double);
    json_t *median = json_null(), *p99 = json_null();
    if (k > 0) {
        median = json_real(k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2);
        size_t rank = (size_t) ceil(0.99 * (double) k); // nearest rank
        p99 = json_real(v[rank > 0 ? rank - 1 : 0]);
    }
    return json_pack("{s:I, s:I, s:o, s:o}", "n", (json_int_t) self->n_c2s,
                     "window", (json_int_t) k, "median", median, "p99", p99);
}

//  --------------------------------------------------------------------------
//  Size of the store's data file in bytes.

static int64_t
s_store_bytes(const ms_node_status_t *self)
{
    struct stat st;
    return stat(self->store_path, &st) == 0 ? (int64_t) st.st_size : 0;
}

//  --------------------------------------------------------------------------
//  Verification: the standing (stratum 1) of this node and of its peers
//  as this node's store derives it (keyed "node", not "node_id": scripts
//  grep this object for the node's own id). Called with the lock held.

static json_t *
s_standings_json(const ms_node_status_t *self)
{
    json_t *nodes = json_array();
    for (size_t k = 0; nodes && k <= json_array_size(self->peers); k++) {
        const char *hex =
            k == 0 ? self->node_id
                   : json_string_value(json_object_get(
                         json_array_get(self->peers, k - 1), "node_id"));
        ms_hash_t id;
        uint32_t counted = 0, strikes = 0, forgiven = 0;
        bool quarantined = false;
        if (!hex || ms_hash_from_hex(hex, &id) != MS_OK ||
            ms_store_node_standing_ex(self->store, id.bytes, &counted, &strikes,
                                      &forgiven, &quarantined) != MS_OK)
            continue;
        // strikes: every strike earned; forgiven: those a quarantine clear
        // forgave; strikes_left: what the quarantine rule weighs (so a
        // cleared node shows 3 strikes, 3 forgiven, 0 left, not
        // quarantined).
        json_array_append_new(
            nodes,
            json_pack(
                "{s:s, s:i, s:i, s:i, s:i, s:b}", "node", hex, "counted",
                (json_int_t) counted, "strikes", (json_int_t) strikes,
                "forgiven", (json_int_t) forgiven, "strikes_left",
                (json_int_t) (strikes > forgiven ? strikes - forgiven : 0),
                "quarantined", quarantined));
    }
    return nodes;
}

//  --------------------------------------------------------------------------
//  The status object for /status and /metrics.

json_t *
ms_node_status_json(ms_node_status_t *self)
{
    pthread_mutex_lock(&self->lock);
    json_t *obj =
        json_pack("{s:s, s:s, s:f, s:i, s:i, s:I, s:f, s:I, s:I, s:O, s:s}",
                  "node_id", self->node_id, "version", MESHSWEEP_VERSION,
                  "uptime_seconds", s_now_s(self) - self->opened_at, "workers",
                  self->n_workers, "workers_busy", self->n_busy,
                  "tasks_trained_total", (json_int_t) self->n_trained,
                  "training_seconds_total", self->training_seconds,
                  "worker_crashes_total", (json_int_t) self->n_worker_crashes,
                  "store_bytes", (json_int_t) s_store_bytes(self), "platform",
                  self->platform ? self->platform : json_null(), "operator",
                  self->operator_name);
    if (obj) {
        json_t *by_state = json_object();
        size_t i;
        json_t *peer;
        json_array_foreach(self->peers, i, peer)
        {
            const char *st = json_string_value(json_object_get(peer, "state"));
            if (!st || !by_state)
                continue;
            json_int_t n = json_integer_value(json_object_get(by_state, st));
            json_object_set_new(by_state, st, json_integer(n + 1));
        }
        json_object_set_new(obj, "peers", by_state ? by_state : json_object());
        json_object_set_new(obj, "pool_id",
                            self->pool_id_hex[0]
                                ? json_string(self->pool_id_hex)
                                : json_null());
        json_object_set_new(obj, "pool_counters",
                            self->pool_counters
                                ? json_incref(self->pool_counters)
                                : json_object());
        json_object_set_new(obj, "metrics",
                            self->metrics ? json_incref(self->metrics)
                                          : json_object());
        json_object_set_new(obj, "claim_to_start_ms",
                            s_claim_to_start_json(self));
        // idle_only (docs/VOLUNTEER.md): paused for the machine's owner
        char since[32] = "";
        struct tm tm;
        if (self->paused && gmtime_r(&self->paused_since, &tm))
            strftime(since, sizeof since, "%Y-%m-%dT%H:%M:%SZ", &tm);
        json_object_set_new(obj, "paused", json_boolean(self->paused));
        json_object_set_new(obj, "pause_reason",
                            self->paused ? json_string(self->pause_reason)
                                         : json_null());
        json_object_set_new(obj, "paused_since",
                            since[0] ? json_string(since) : json_null());
        json_object_set_new(obj, "pauses_total",
                            json_integer((json_int_t) self->n_pauses));
        json_object_set_new(obj, "pause_releases_total",
                            json_integer((json_int_t) self->n_pause_releases));
        json_object_set_new(
            obj, "volunteer",
            json_pack(
                "{s:b, s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:s?, s:s?}",
                "idle_only", self->idle_only, "idle_cpu_pct",
                self->idle_cpu_pct, "idle_busy_s", self->idle_busy_s,
                "idle_quiet_s", self->idle_quiet_s, "max_pause_s",
                self->max_pause_s, "worker_memory_mb", self->worker_memory_mb,
                "others_cpu_pct",
                self->idle_others_pct >= 0 ? json_real(self->idle_others_pct)
                                           : json_null(),
                "own_cpu_pct",
                self->idle_own_pct >= 0 ? json_real(self->idle_own_pct)
                                        : json_null(),
                "source", self->idle_source, "cgroup", self->idle_cgroup));
        // Single-thread SGEMM GFLOP/s, the median of what the workers
        // measured at start (null until one has): what the analysis
        // normalises timings with (ms_analysis.h "Time fits").
        json_object_set_new(obj, "calibration_gflops",
                            self->calibration_gflops > 0
                                ? json_real(self->calibration_gflops)
                                : json_null());
        json_t *backend = self->backend ? json_deep_copy(self->backend) : NULL;
        json_object_set_new(obj, "backend", backend ? backend : json_null());
        json_object_set_new(
            obj, "pool",
            json_pack("{s:s?, s:b, s:b, s:b}", "open_pool", self->open_pool,
                      "linked", self->pool_id_hex[0] != 0, "authority",
                      self->has_cert, "encrypted", self->encrypted));
        json_t *nodes = s_standings_json(self);
        json_object_set_new(obj, "verification",
                            json_pack("{s:i, s:i, s:i, s:o}", "pool_operators",
                                      (json_int_t) self->n_pool_operators,
                                      "results_held", (json_int_t) self->n_held,
                                      "reveals_total",
                                      (json_int_t) self->n_reveals, "nodes",
                                      nodes ? nodes : json_array()));
    }
    pthread_mutex_unlock(&self->lock);
    return obj;
}

//  --------------------------------------------------------------------------
//  A copy of the peers table.

json_t *
ms_node_status_peers(ms_node_status_t *self)
{
    pthread_mutex_lock(&self->lock);
    json_t *copy = json_deep_copy(self->peers);
    pthread_mutex_unlock(&self->lock);
    return copy ? copy : json_array();
}

//  --------------------------------------------------------------------------
//  Pending tasks of a sweep that peers run now.

int64_t
ms_node_status_running_elsewhere(ms_node_status_t *self,
                                 const uint8_t sweep_id[MS_HASH_BYTES])
{
    ms_hash_t sid;
    char hex[MS_HASH_HEX_LEN + 1];
    memcpy(sid.bytes, sweep_id, MS_HASH_BYTES);
    ms_hash_hex(&sid, hex);
    pthread_mutex_lock(&self->lock);
    int64_t n = (int64_t) json_integer_value(
        json_object_get(self->remote_running, hex));
    pthread_mutex_unlock(&self->lock);
    return n;
}
