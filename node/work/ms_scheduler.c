/*  =========================================================================
    ms_scheduler - where a lease is decided: which unfinished tasks this
    node claims now, and how many

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The pool scheduler (DESIGN.md "Work, claims and leases"; the map at
    the top of ms_node.c says which class owns each part of a claim's
    life).

    A pass. The store lists the unfinished tasks of active sweeps in its
    order (priority first), from its state index alone: tasks another
    node holds a live lease on are skipped there without reading their
    rows, so that the window of S_MAX_CANDIDATES candidates stays full of
    claimable work when the first tasks of a big sweep are all claimed
    ahead. The candidates are ordered by rendezvous owner rank over the
    members (ms_assign_order: this node's own tasks first, then steal in
    reverse owner rank, round-robin across sweeps). Each is then checked
    in turn: its sweep's dataset must be here (in a pool the node fetches
    it; alone nobody else could run the task, so it fails), a slot must
    be free for this node (s_pick_slot: the lease rule and "two nodes of
    one operator never fill two slots of one task"), and the task must
    fit every kind of worker the node runs (s_task_fits: host memory for
    CPU workers, device memory and the dataset on the host for GPU
    workers; s_gpu_can_train: the GPU backend has every op the config
    uses). What passes is claimed in the lease table (epoch = highest
    seen + 1); the pass's claims are appended as one durable commit.

    How many. Claims for the idle workers less the claims already
    settling, and beyond them a prefetch (s_prefetch): enough to keep the
    workers busy while a claim settles and a little more (a window of
    twice the mean settle time, at least S_PREFETCH_WINDOW_MS) at the
    mean run time of the sweep's tasks here, so short tasks are claimed
    in blocks of many (one commit, one push, one round of
    acknowledgements for the lot) instead of one by one. None until a
    task of the sweep ran here, none for tasks that take the window or
    longer (a training task is claimed only when a worker is free for
    it), none alone, and only tasks this node owns: stealing is for idle
    workers, so a fast node never claims ahead what others would run.
    Queued claims are live leases like running ones (the heartbeats list
    them), so they cost other nodes nothing but the wait of one window.
    At most MS_SCHEDULER_MAX_PREFETCH, which a heartbeat can still list.

    When. A pass scans the store only when something changed (records,
    workers, peers: ms_scheduler_changed) or S_RESCAN_MS passed, and at
    most every S_RESCAN_BUSY_MS (records arrive in bursts: one scan per
    burst, not per record).

    What it does not do: start anything. The claims go back to the node,
    which settles them (ms_settle) and starts the settled ones on its
    workers. Memory estimates are not revised from what tasks really
    used (the worker's cap, worker_memory_mb, bounds a wrong guess).

    What the class needs of the node (the log, whether it holds, the
    sweep's dataset, the members, busy and held tasks, appending a
    record, giving a task up) comes in through ms_scheduler_iface_t; the
    store and the lease table are borrowed handles of lower classes.
    =========================================================================
*/
#include "ms_scheduler.h"
#include "ms_array.h"

#include "ms_backend.h"
#include "ms_config_json.h"
#include "ms_mlp.h"

#include <jansson.h>

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_MAX_CANDIDATES 2048     // tasks ordered per scheduling pass
#define S_RESCAN_MS 250           // scan at least this often (no change)
#define S_RESCAN_BUSY_MS 2        // least gap between two scans on changes
#define S_PREFETCH_WINDOW_MS 50.0 // claim ahead this much work (short tasks)
#define S_MAX_SKIPPED 8           // sweeps of skipped tasks remembered

//  One candidate of a pass, from the store's state index.
typedef struct {
    uint8_t task_id[MS_HASH_BYTES];  // the task
    uint8_t sweep_id[MS_HASH_BYTES]; // its sweep
    uint32_t index;                  // its position in the sweep
    ms_task_state_t state;           // its state
} s_candidate_t;

//  The candidates of one pass (the store's walk fills it).
typedef struct {
    ms_scheduler_t *self;              // the scheduler
    s_candidate_t *tasks;              // listed candidates
    size_t n, cap;                     // used, allocated
    ms_hash_t skipped[S_MAX_SKIPPED];  // sweeps of tasks left out (first 8)
    size_t n_skipped;                  // entries in skipped
    uint8_t sweep_seen[MS_HASH_BYTES]; // last sweep looked up
    bool sweep_known;                  // sweep_seen is set
    uint32_t sweep_replicas;           // its verify.replicas
} s_pass_t;

//  The mean run time of one sweep's tasks here.
typedef struct {
    uint8_t sweep_id[MS_HASH_BYTES]; // the sweep
    double task_ms_ewma;             // mean run time (ms)
} s_sweep_time_t;

struct ms_scheduler {
    ms_store_t *store;          // borrowed
    ms_lease_table_t *leases;   // borrowed
    ms_scheduler_config_t cfg;  // settings (gpu_backend: the copy below)
    ms_scheduler_iface_t iface; // the node's side
    char *gpu_backend;          // cfg.gpu_backend copied, or NULL
    int64_t memory_bytes;       // memory a task may use (estimate)
    bool changed;               // something changed: scan at the next pass
    int64_t next_scan_at;       // monotonic ms: scan the tasks again
    int64_t last_scan_at;       // monotonic ms of the last scan
    double settle_ms_ewma;      // mean time a claim settles (ms), or -1
    s_sweep_time_t *times;      // sweeps with a task run here
    size_t n_times;             // entries in times
    ms_hash_t *gave_up;         // tasks this node gave up (failure)
    size_t n_gave_up;           // entries in gave_up
};

//  --------------------------------------------------------------------------
//  Memory this node lets one task use: MemAvailable (Linux), else free
//  pages, divided among the workers, capped by worker_memory_mb.

static int64_t
s_available_memory(const ms_scheduler_config_t *cfg)
{
    int64_t avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            long long kb = 0;
            if (sscanf(line, "MemAvailable: %lld kB", &kb) == 1) {
                avail = (int64_t) kb * 1024;
                break;
            }
        }
        fclose(f);
    }
    if (avail <= 0) {
        long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        avail = pages > 0 && size > 0 ? (int64_t) pages * size : INT64_MAX;
    }
    int n = cfg->n_workers;
    int64_t per = n > 1 ? avail / n : avail;
    // A worker cannot use more than its cap (worker_memory_mb): a task
    // estimated beyond it is left to nodes with more room.
    int64_t cap = (int64_t) cfg->worker_memory_mb << 20;
    return cap > 0 && per > cap ? cap : per;
}

//  --------------------------------------------------------------------------
//  Create the scheduler.

ms_scheduler_t *
ms_scheduler_new(ms_store_t *store, ms_lease_table_t *leases,
                 const ms_scheduler_config_t *cfg,
                 const ms_scheduler_iface_t *iface)
{
    assert(store && leases && cfg && iface);
    assert(cfg->n_workers >= 1);
    ms_scheduler_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->leases = leases;
    self->cfg = *cfg;
    self->iface = *iface;
    if (cfg->gpu_backend && !(self->gpu_backend = strdup(cfg->gpu_backend))) {
        free(self);
        return NULL;
    }
    self->cfg.gpu_backend = self->gpu_backend;
    self->memory_bytes =
        cfg->memory_bytes > 0 ? cfg->memory_bytes : s_available_memory(cfg);
    self->changed = true;
    self->settle_ms_ewma = -1.0;
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_scheduler_destroy(ms_scheduler_t **self_p)
{
    assert(self_p);
    ms_scheduler_t *self = *self_p;
    if (!self)
        return;
    free(self->gpu_backend);
    free(self->times);
    free(self->gave_up);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Something changed: scan at the next pass.

void
ms_scheduler_changed(ms_scheduler_t *self)
{
    assert(self);
    self->changed = true;
}

//  --------------------------------------------------------------------------
//  The next scan without a change.

int64_t
ms_scheduler_next_scan_at(const ms_scheduler_t *self)
{
    assert(self);
    return self->next_scan_at;
}

//  --------------------------------------------------------------------------
//  Remember a task the node gave up.

void
ms_scheduler_gave_up(ms_scheduler_t *self, const ms_hash_t *task_id)
{
    assert(self && task_id);
    ms_hash_t *grown =
        realloc(self->gave_up, (self->n_gave_up + 1) * sizeof *grown);
    if (!grown)
        return;
    self->gave_up = grown;
    self->gave_up[self->n_gave_up++] = *task_id;
}

//  --------------------------------------------------------------------------
//  True when this node gave the task up (a failure it published).

static bool
s_gave_up(const ms_scheduler_t *self, const uint8_t *task_id)
{
    for (size_t i = 0; i < self->n_gave_up; i++)
        if (memcmp(self->gave_up[i].bytes, task_id, MS_HASH_BYTES) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  The run-time entry of a sweep, or NULL.

static s_sweep_time_t *
s_time_of(const ms_scheduler_t *self, const uint8_t *sweep_id)
{
    for (size_t i = 0; i < self->n_times; i++)
        if (memcmp(self->times[i].sweep_id, sweep_id, MS_HASH_BYTES) == 0)
            return &self->times[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  A task of a sweep ran: its mean run time here.

void
ms_scheduler_task_ran(ms_scheduler_t *self,
                      const uint8_t sweep_id[MS_HASH_BYTES], double ran_ms)
{
    assert(self && sweep_id);
    s_sweep_time_t *t = s_time_of(self, sweep_id);
    if (!t) {
        s_sweep_time_t *grown =
            realloc(self->times, (self->n_times + 1) * sizeof *grown);
        if (!grown)
            return;
        self->times = grown;
        t = &self->times[self->n_times++];
        memcpy(t->sweep_id, sweep_id, MS_HASH_BYTES);
        t->task_ms_ewma = -1.0;
    }
    t->task_ms_ewma =
        t->task_ms_ewma < 0 ? ran_ms : 0.8 * t->task_ms_ewma + 0.2 * ran_ms;
}

//  --------------------------------------------------------------------------
//  A claim settled: the mean settle time here.

void
ms_scheduler_settled(ms_scheduler_t *self, double waited_ms)
{
    assert(self);
    self->settle_ms_ewma = self->settle_ms_ewma < 0
                               ? waited_ms
                               : 0.9 * self->settle_ms_ewma + 0.1 * waited_ms;
}

//  --------------------------------------------------------------------------
//  How many claims to hold beyond the idle workers for tasks of the sweep
//  with run-time entry T (NULL: none ran here yet); see "How many".

static int
s_prefetch(const ms_scheduler_t *self, const s_sweep_time_t *t)
{
    if (!t || t->task_ms_ewma < 0 || !self->iface.in_pool(self->iface.arg))
        return 0;
    double window = fmax(S_PREFETCH_WINDOW_MS, 2.0 * self->settle_ms_ewma);
    double per_worker = floor(window / fmax(t->task_ms_ewma, 0.05));
    double extra = per_worker * self->cfg.n_workers;
    return extra > MS_SCHEDULER_MAX_PREFETCH ? MS_SCHEDULER_MAX_PREFETCH
                                             : (int) extra;
}

//  --------------------------------------------------------------------------
//  The largest prefetch of any sweep seen here (0: claim for idle workers
//  only).

static int
s_prefetch_any(const ms_scheduler_t *self)
{
    int most = 0;
    for (size_t i = 0; i < self->n_times; i++) {
        int k = s_prefetch(self, &self->times[i]);
        most = k > most ? k : most;
    }
    return most;
}

//  --------------------------------------------------------------------------
//  Whether a task of estimated memory need (s_task_memory) fits every
//  kind of worker this node runs, so that any idle worker can take it
//  (ms_gpu.h): a CPU worker holds it all in host memory; a GPU worker
//  holds the network and the dataset on the device and still the
//  dataset on the host.

static bool
s_task_fits(const ms_scheduler_t *self, int64_t need, int64_t dataset_bytes)
{
    int n = self->cfg.n_workers;
    int n_gpu = self->cfg.n_gpu_workers;
    if (n_gpu < n && need > self->memory_bytes)
        return false; // a CPU worker could not hold it
    if (n_gpu > 0 && (need > self->cfg.gpu_memory_bytes ||
                      dataset_bytes * 4 > self->memory_bytes))
        return false; // a GPU worker could not hold it
    return true;
}

//  --------------------------------------------------------------------------
//  Whether this node's GPU workers have every op the task's config cfg
//  needs (ms_backend_ops_supports, core's one rule: a backend whose op
//  table lacks an op the config uses cannot train it), so that any idle
//  worker can take the task, as s_task_fits wants: a node with GPU
//  workers whose backend lacks, say, layer norm leaves such tasks to
//  others. cfg NULL (a config that does not decode) is the worker's to
//  refuse.

static bool
s_gpu_can_train(const ms_scheduler_t *self, const ms_train_config_t *cfg)
{
    if (self->cfg.n_gpu_workers <= 0 || !cfg)
        return true;
    return ms_backend_ops_supports(ms_backend_ops_named(self->cfg.gpu_backend),
                                   cfg, NULL) == MS_OK;
}

//  --------------------------------------------------------------------------
//  Estimated memory of a task (DESIGN.md: nodes estimate from the config
//  and claim only what fits): what training its network takes, from
//  core's one count (ms_mlp_memory_bytes: parameters, gradients,
//  optimizer state and every activation and workspace buffer exactly as
//  ms_mlp_open sizes them, for batch_size rows, so a deep residual
//  layer-normed network counts its normalised inputs and block outputs
//  too), plus the dataset's bytes (decoded as float32: 4x the IDX bytes,
//  which gzip makes a lower bound). Here the node knows the dataset only
//  by its file bytes (ms_scheduler_sweep_t's dataset_bytes), not its
//  features and classes, so the network is sized for 784 inputs and 10
//  outputs: exact for the built-in datasets (28 x 28 images, 10 classes),
//  a guess for a CSV one. cfg NULL (a config that does not decode) counts
//  the dataset alone: it is claimed as before and the worker refuses it.

static int64_t
s_task_memory(const ms_train_config_t *cfg, int64_t dataset_bytes)
{
    int64_t network = 0;
    if (cfg && cfg->kind != MS_KIND_NOOP)
        network = ms_mlp_memory_bytes(cfg, 784, 10, cfg->batch_size);
    return network + dataset_bytes * 4;
}

//  --------------------------------------------------------------------------
//  Whether the task (its config read from the store) fits this node's
//  workers: memory and, with GPU workers, their ops. A task whose row
//  cannot be read, or no memory to decode it: not now.

static bool
s_task_suits(ms_scheduler_t *self, const uint8_t *task_id,
             int64_t dataset_bytes)
{
    ms_store_task_t *task = NULL;
    if (ms_store_get_task(self->store, task_id, &task) != MS_OK)
        return false;
    json_error_t err;
    json_t *config = json_loadb(task->config_json, task->config_len, 0, &err);
    ms_store_task_destroy(&task);
    // Decoded once for both checks (16 KB: not on the stack).
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    if (!cfg) {
        json_decref(config);
        return false; // out of memory: not now
    }
    bool decoded = config && ms_config_decode_json(config, cfg, NULL) == MS_OK;
    json_decref(config);
    int64_t need = s_task_memory(decoded ? cfg : NULL, dataset_bytes);
    bool trainable = s_gpu_can_train(self, decoded ? cfg : NULL);
    free(cfg);
    if (!s_task_fits(self, need, dataset_bytes))
        return false; // does not fit here: leave it to bigger nodes
    return trainable; // else our GPU workers lack its ops: leave it
}

//  --------------------------------------------------------------------------
//  Which slot of a task this node may claim now, if any (DESIGN.md "Work,
//  claims and leases" and "Verification"): the task needs the slots the
//  store says (min(replicas, operators in the pool), one more per
//  dispute up to replicas + 2, none once its verdict is final); a node
//  may claim one only when neither it nor another node of its operator
//  holds a slot or has a result of the task ("Two nodes of one operator
//  never fill two slots of one task"). A slot whose holder of our
//  operator lapsed may be taken back (it then holds nothing), but no
//  other slot beside it.

static bool
s_pick_slot(ms_scheduler_t *self, const uint8_t *task_id, uint32_t *slot)
{
    uint32_t n_slots = 1, replicas = 1;
    if (ms_store_task_slots(self->store, task_id, &n_slots, &replicas) !=
            MS_OK ||
        n_slots == 0)
        return false;
    *slot = 0;
    if (n_slots == 1 && replicas <= 1)
        return ms_lease_table_can_claim(self->leases, task_id, 0, false, NULL);
    const uint8_t *me = self->cfg.node_id;
    char mine[MS_STORE_OPERATOR_MAX + 1], other[MS_STORE_OPERATOR_MAX + 1];
    if (ms_store_operator(self->store, me, mine) != MS_OK)
        return false;
    ms_store_verdict_t *v = malloc(sizeof *v);
    if (!v)
        return false;
    bool ours = false;
    if (ms_store_get_verdict(self->store, task_id, v) == MS_OK)
        for (size_t i = 0; i < v->n_marks && !ours; i++)
            ours = strcmp(v->marks[i].operator_name, mine) == 0;
    free(v);
    if (ours || self->iface.held(self->iface.arg, task_id))
        return false; // our operator has a result of it (or we hold one)
    uint32_t only = UINT32_MAX;
    for (uint32_t s = 0; s < n_slots; s++) {
        ms_claim_t holder;
        bool live = false;
        if (ms_lease_table_holder(self->leases, task_id, s, &holder, &live) !=
                MS_OK ||
            memcmp(holder.node_id, me, MS_HASH_BYTES) == 0)
            continue;
        if (ms_store_operator(self->store, holder.node_id, other) != MS_OK ||
            strcmp(other, mine) != 0)
            continue;
        if (live)
            return false; // a node of our operator holds a slot of it
        only = s;
    }
    if (only != UINT32_MAX) {
        *slot = only;
        return ms_lease_table_can_claim(self->leases, task_id, only, false,
                                        NULL);
    }
    return ms_lease_table_pick_slot(self->leases, task_id, n_slots, false, slot,
                                    NULL) == MS_OK;
}

//  --------------------------------------------------------------------------
//  The store's walk: which tasks are candidates, from the state index.

static ms_store_task_filter_t
s_skip_task(void *arg, const uint8_t *task_id, const uint8_t *sweep_id,
            ms_task_state_t state)
{
    (void) state;
    s_pass_t *pass = arg;
    ms_scheduler_t *self = pass->self;
    // Tasks others hold live leases on are no candidates: skipping them
    // here keeps the window of candidates full of claimable work when
    // the first tasks of a big sweep are all claimed ahead (prefetch),
    // and costs no read of their rows. The candidates are listed from
    // the state index alone (MS_STORE_TASK_KEY): the pass needs their
    // ids, sweeps, indexes and states, never their rows.
    if (ms_lease_table_can_claim(self->leases, task_id, 0, false, NULL))
        return MS_STORE_TASK_KEY;
    // A task of several slots (verify.replicas > 1) may have another
    // slot open: the pass decides (s_pick_slot).
    if (!pass->sweep_known ||
        memcmp(pass->sweep_seen, sweep_id, MS_HASH_BYTES) != 0) {
        memcpy(pass->sweep_seen, sweep_id, MS_HASH_BYTES);
        pass->sweep_known = true;
        pass->sweep_replicas = 1;
        ms_store_sweep_replicas(self->store, sweep_id, &pass->sweep_replicas);
    }
    if (pass->sweep_replicas > 1)
        return MS_STORE_TASK_KEY;
    // With one slot, a dispute (a re-evaluation that disagreed) opens a
    // second one, which needs slot 0 finished: only then is the store
    // asked (a slot 0 that another node holds live, the common case in a
    // big sweep, costs no read here).
    uint32_t n_slots = 1;
    if (ms_lease_table_slot_done(self->leases, task_id, 0) &&
        ms_store_task_slots(self->store, task_id, &n_slots, NULL) == MS_OK &&
        n_slots > 1)
        return MS_STORE_TASK_KEY;
    // Remember its sweep: the node still gets the sweep's dataset ready
    // (a task of it may come back to us).
    if (pass->n_skipped < S_MAX_SKIPPED &&
        (pass->n_skipped == 0 ||
         memcmp(pass->skipped[pass->n_skipped - 1].bytes, sweep_id,
                MS_HASH_BYTES) != 0))
        memcpy(pass->skipped[pass->n_skipped++].bytes, sweep_id, MS_HASH_BYTES);
    return MS_STORE_TASK_SKIP;
}

//  The store's walk: keep one candidate; stop at S_MAX_CANDIDATES.

static int
s_keep_task(void *arg, const ms_store_task_t *task)
{
    s_pass_t *pass = arg;
    if (ms_array_grow(&pass->tasks, &pass->cap, pass->n, sizeof *pass->tasks) !=
        MS_OK)
        return MS_ERR_NOMEM;
    s_candidate_t *c = &pass->tasks[pass->n++];
    memcpy(c->task_id, task->task_id, MS_HASH_BYTES);
    memcpy(c->sweep_id, task->sweep_id, MS_HASH_BYTES);
    c->index = task->index;
    c->state = task->state;
    return pass->n >= S_MAX_CANDIDATES ? 1 : 0;
}

//  --------------------------------------------------------------------------
//  A claim record of ours for (task, slot, epoch).

static ms_store_payload_t
s_claim_record(const uint8_t *task_id, uint32_t slot, uint32_t epoch)
{
    ms_store_payload_t p = {.kind = MS_RECORD_CLAIM};
    memcpy(p.u.claim.task_id, task_id, MS_HASH_BYTES);
    p.u.claim.slot = slot;
    p.u.claim.epoch = epoch;
    return p;
}

//  --------------------------------------------------------------------------
//  Alone, a task whose dataset is not here cannot run anywhere: claim it
//  and give it up (class task) with the dataset's error.

static void
s_fail_no_dataset(ms_scheduler_t *self, const ms_assign_task_t *c,
                  const char *why)
{
    ms_hash_t tid, sid;
    memcpy(tid.bytes, c->task_id, MS_HASH_BYTES);
    memcpy(sid.bytes, c->sweep_id, MS_HASH_BYTES);
    ms_claim_t mine;
    if (ms_lease_table_claim(self->leases, c->task_id, 0, false, &mine) !=
        MS_OK)
        return;
    ms_store_payload_t p = s_claim_record(c->task_id, 0, mine.epoch);
    self->iface.append(self->iface.arg, 1, &p);
    self->iface.fail(self->iface.arg, &tid, &sid, 0, mine.epoch,
                     MS_FAILURE_CLASS_TASK, why);
}

//  --------------------------------------------------------------------------
//  Whether a scan runs now (see "When"); updates the scan times.

static bool
s_scan_due(ms_scheduler_t *self, int64_t now)
{
    if (!self->changed && now < self->next_scan_at)
        return false;
    if (now - self->last_scan_at < S_RESCAN_BUSY_MS) {
        // Records arrive in bursts: one scan per burst, not per record.
        self->next_scan_at = self->last_scan_at + S_RESCAN_BUSY_MS;
        return false;
    }
    self->changed = false;
    self->last_scan_at = now;
    self->next_scan_at = now + S_RESCAN_MS;
    return true;
}

//  --------------------------------------------------------------------------
//  One pass: order the unfinished tasks by owner rank and claim what the
//  lease rule allows, for the idle workers and the prefetch.

int
ms_scheduler_claim(ms_scheduler_t *self, int64_t now, int n_idle,
                   int n_settling, ms_store_payload_t *claims, size_t *n_claims)
{
    assert(self && claims && n_claims);
    *n_claims = 0;
    void *arg = self->iface.arg;
    // Claims for idle workers, and beyond them (prefetch) only from
    // sweeps whose tasks are short here.
    int free_workers = n_idle - n_settling;
    int free_prefetch = n_idle + s_prefetch_any(self) - n_settling;
    if (self->iface.holding(arg, now) || free_prefetch <= 0)
        return MS_OK;
    if (!s_scan_due(self, now))
        return MS_OK;
    s_pass_t pass = {.self = self};
    int rc = ms_store_pending_tasks_filtered(self->store, s_skip_task,
                                             s_keep_task, &pass);
    if (rc < 0) {
        free(pass.tasks);
        char line[96];
        snprintf(line, sizeof line, "cannot list tasks: %s", ms_strerror(rc));
        self->iface.log(arg, line);
        return rc;
    }
    bool in_pool = self->iface.in_pool(arg);
    ms_scheduler_sweep_t sw;
    for (size_t k = 0; k < pass.n_skipped; k++) {
        // Sweeps whose tasks others hold now: fetch their dataset anyway,
        // so this node is ready when a lease lapses or a task is left.
        if (self->iface.sweep(arg, pass.skipped[k].bytes, &sw) &&
            !sw.has_dataset && in_pool)
            self->iface.dataset_wanted(arg, pass.skipped[k].bytes);
    }
    ms_assign_task_t *cands = calloc(pass.n ? pass.n : 1, sizeof *cands);
    size_t *order = calloc(pass.n ? pass.n : 1, sizeof *order);
    uint8_t(*members)[MS_ASSIGN_ID_BYTES] = NULL;
    size_t n_members = self->iface.members(arg, &members);
    const uint8_t(*cmembers)[MS_ASSIGN_ID_BYTES] =
        (const uint8_t(*)[MS_ASSIGN_ID_BYTES]) members;
    const uint8_t *me = self->cfg.node_id;
    size_t n = 0;
    uint64_t sweep_seq = 0;
    size_t n_out = 0;
    int n_room = free_prefetch > MS_SCHEDULER_MAX_CLAIMS
                     ? MS_SCHEDULER_MAX_CLAIMS
                     : free_prefetch;
    for (size_t i = 0; cands && i < pass.n; i++) {
        const s_candidate_t *t = &pass.tasks[i];
        if (t->state == MS_TASK_DONE || t->state == MS_TASK_FAILED ||
            t->state == MS_TASK_CANCELLED ||
            self->iface.task_busy(arg, t->task_id) ||
            s_gave_up(self, t->task_id))
            continue;
        if (i == 0 ||
            memcmp(t->sweep_id, pass.tasks[i - 1].sweep_id, MS_HASH_BYTES) != 0)
            sweep_seq++;
        ms_assign_task_t *c = &cands[n++];
        memcpy(c->task_id, t->task_id, MS_HASH_BYTES);
        memcpy(c->sweep_id, t->sweep_id, MS_HASH_BYTES);
        c->priority = 0; // the store's order already puts priority first
        c->sweep_seq = sweep_seq;
        c->task_index = t->index;
    }
    if (n && order && members &&
        ms_assign_order(cands, n, cmembers, n_members, me, order) == MS_OK) {
        for (size_t k = 0;
             k < n && (int) n_out < n_room && !self->iface.holding(arg, now);
             k++) {
            const ms_assign_task_t *c = &cands[order[k]];
            if (!self->iface.sweep(arg, c->sweep_id, &sw))
                break;
            if ((int) n_out >= free_workers) {
                // Beyond the idle workers: only short tasks, and only
                // tasks this node owns (stealing is for idle workers, so
                // a fast node never claims ahead what others would run).
                if ((int) n_out + n_settling - n_idle >=
                    s_prefetch(self, s_time_of(self, c->sweep_id)))
                    continue;
                if (ms_assign_rank(c->task_id, cmembers, n_members, me) != 0)
                    continue;
            }
            if (!sw.has_dataset) {
                if (!in_pool) // alone, nobody else can run it: fail it
                    s_fail_no_dataset(self, c, sw.dataset_error);
                self->iface.dataset_wanted(arg, c->sweep_id);
                continue; // in a pool: the node fetches it
            }
            uint32_t slot = 0;
            if (!s_pick_slot(self, c->task_id, &slot))
                continue;
            // Memory: estimate from the config and the dataset.
            if (!s_task_suits(self, c->task_id, sw.dataset_bytes))
                continue;
            ms_claim_t mine;
            if (ms_lease_table_claim(self->leases, c->task_id, slot, false,
                                     &mine) != MS_OK)
                continue;
            claims[n_out++] = s_claim_record(c->task_id, slot, mine.epoch);
        }
    }
    // All the claims of this pass in one block: one durable commit.
    if (n_out > 0 && self->iface.append(arg, n_out, claims) != MS_OK) {
        char line[64];
        snprintf(line, sizeof line, "cannot write %zu claim(s)", n_out);
        self->iface.log(arg, line);
        for (size_t k = 0; k < n_out; k++)
            ms_lease_table_release(self->leases, claims[k].u.claim.task_id,
                                   claims[k].u.claim.slot, NULL);
        n_out = 0;
    }
    *n_claims = n_out;
    free(members);
    free(order);
    free(cands);
    free(pass.tasks);
    return MS_OK;
}
