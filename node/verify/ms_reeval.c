/*  =========================================================================
    ms_reeval - re-evaluation of other operators' results and the weights
    this node keeps pinned

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Re-evaluation and kept weights (DESIGN.md "Verification";
    docs/VERIFICATION.md "Re-evaluation", "keep_weights")

    Kept weights. A training task runs with a weights path: its worker
    writes the final weights there (core/ms_weights.h). When its result
    is ok, the node applies the sweep's keep_weights (ms_node.c
    s_keep_weights): `none` drops the file; `all`, `sampled` and `best`
    store it as a blob (named by the BLAKE2b-256 of the file) and name it
    in the row (weights_blob, weights_bytes), which the node signs with
    the rest of the row; the file's parameter block hashes to the row's
    weights_digest, which a verifier checks. The pins are kept here
    (ms_reeval_keep): `all` keeps the blob pinned; `best` keeps this
    node's best result of the sweep by the spec's metric pinned (a better
    one unpins the previous one, ms_reeval_unkeep); `sampled` pins it
    until one re-evaluation of the result is stored or keep_retention_s
    passes. The producer cannot know which results a verifier samples, so
    under `sampled` it keeps every result's weights for that bounded
    time; an unpinned blob stays until the blob quota's LRU needs its
    room.

    Copies: for each new result of another operator that names weights,
    a node computes the two nodes that should hold a copy: of itself and
    its live linked peers, those whose operator is not the producer's,
    ranked by BLAKE2b(record hash || node id), the lowest two. When it is
    one of them it fetches the blob from its peers and pins it like the
    producer does (so a producer that went away does not take the
    evidence with it). Pull, not push: it reuses the blob fetch.

    Sampling. Each new ok result of another operator is chosen with
    probability reevaluate_fraction, drawn from the node's own generator
    (xorshift128+ seeded from the OS's random source at start: nothing a
    producer knows). The store queues only results that have weights to
    re-evaluate (tasks that train: a noop result is never queued, so never
    sampled). A chosen result becomes a job: read the row (once it is
    counted here), fetch its weights blob from the peers, then run the
    worker op "reeval" (the same split and scaling as training: the
    task's seed; test and validation metrics). The worker process does
    the work; the node's loop only drives the job. The outcome is a
    REEVALUATION record through the same signed block path as every
    record: status ok with the recomputed metrics, or failed with the
    reason when the weights could not be had within reeval_timeout_s,
    are damaged, have other shapes, or do not hash to the published
    weights_digest. A result whose row names no weights is re-evaluated
    only when its sweep keeps them (`sampled`, `all`): then the missing
    weights are a failed re-evaluation; under `none` or `best` it is not
    sampled (re-evaluation is off for what is not kept).

    Jobs and kept entries live in memory: after a restart, results that
    arrived before it are not sampled again, and kept blobs stay pinned
    only until the node restarts (then the LRU keeps them while room
    allows).

    What the class needs of the node (the log, appending a record,
    events, the live peers, a sweep's keep_weights and dataset, a free
    worker, the clock) comes in through ms_reeval_iface_t; the store, the
    blob store and the blob fetch are borrowed handles of lower classes.
    Whether a re-evaluation agrees is ms_verdict's rule, only counted here.
    =========================================================================
*/
#include "ms_reeval.h"

#include "ms_spec.h"
#include "ms_verdict.h"
#include "ms_wire.h"

#include <jansson.h>

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_REEVAL_RETRY_MS 1000 // a job that cannot go on waits this long
#define S_REEVAL_HOLDERS 2     // copies of kept weights, other operators

//  A result this node re-evaluates, or whose kept weights it holds a copy
//  of (copy_only).
typedef struct {
    ms_hash_t task_id;                // the task
    uint8_t producer[MS_HASH_BYTES];  // the result's node
    uint8_t target[MS_HASH_BYTES];    // its record hash
    bool copy_only;                   // hold a copy, re-evaluate nothing
    bool hold;                        // one of the result's copy holders
    bool have_row;                    // the fields below are read
    bool running;                     // on a worker now
    bool fetching;                    // its weights blob is being fetched
    ms_hash_t blob;                   // the row's weights_blob
    uint64_t blob_size;               // its weights_bytes
    char digest[MS_HASH_HEX_LEN + 1]; // the row's weights_digest
    double target_accuracy;           // the row's test_accuracy (NaN: none)
    double target_loss;               // the row's test_loss (NaN: none)
    int64_t deadline_ms;              // monotonic ms: then it fails
    int64_t retry_at_ms;              // monotonic ms: next try
    char why[200];                    // last reason it could not go on
} s_job_t;

//  Weights pinned here (own results, copies for others).
typedef struct {
    ms_hash_t blob;                // the weights blob
    ms_hash_t task_id;             // the task of the result
    bool until_checked;            // unpin once the result was re-evaluated
    bool forever;                  // keep_weights all or best: no time limit
    uint8_t target[MS_HASH_BYTES]; // the result's record hash, once known
    bool has_target;               // target is set
    int64_t kept_ms;               // monotonic ms when pinned
} s_kept_t;

struct ms_reeval {
    ms_store_t *store;       // borrowed
    ms_blob_store_t *blobs;  // borrowed
    ms_blob_fetch_t *fetch;  // borrowed
    ms_reeval_config_t cfg;  // settings (seed: the generator's start)
    ms_reeval_iface_t iface; // the node's side
    uint64_t rng[2];         // own sampling generator (xorshift128+)
    s_job_t *jobs;           // results to re-evaluate or copy
    size_t n_jobs, cap_jobs; // used, allocated
    s_kept_t *kept;          // weights pinned here
    size_t n_kept, cap_kept; // used, allocated
    int64_t tick_at;         // monotonic ms: next tick
    ms_reeval_stats_t stats; // counters (n_pending, n_pinned: on read)
};

//  --------------------------------------------------------------------------
//  Log one formatted line through the node.

static void s_log(ms_reeval_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(ms_reeval_t *self, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    self->iface.log(self->iface.arg, line);
}

//  --------------------------------------------------------------------------
//  The monotonic clock (the node's).

static int64_t
s_now(ms_reeval_t *self)
{
    return self->iface.now_ms(self->iface.arg);
}

//  --------------------------------------------------------------------------
//  Create the re-evaluator.

ms_reeval_t *
ms_reeval_new(ms_store_t *store, ms_blob_store_t *blobs, ms_blob_fetch_t *fetch,
              const ms_reeval_config_t *cfg, const ms_reeval_iface_t *iface)
{
    assert(store && blobs && fetch && cfg && iface);
    assert(cfg->seed[0] || cfg->seed[1]);
    ms_reeval_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->blobs = blobs;
    self->fetch = fetch;
    self->cfg = *cfg;
    self->iface = *iface;
    self->rng[0] = cfg->seed[0];
    self->rng[1] = cfg->seed[1];
    return self;
}

//  --------------------------------------------------------------------------
//  Free it (its pins end with the blob store).

void
ms_reeval_destroy(ms_reeval_t **self_p)
{
    assert(self_p);
    ms_reeval_t *self = *self_p;
    if (!self)
        return;
    free(self->jobs);
    free(self->kept);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  A uniform double in [0, 1) from the class's own generator.

static double
s_rand01(ms_reeval_t *self)
{
    uint64_t s1 = self->rng[0];
    const uint64_t s0 = self->rng[1];
    self->rng[0] = s0;
    s1 ^= s1 << 23;
    self->rng[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
    return (double) ((self->rng[1] + s0) >> 11) / 9007199254740992.0;
}

//  --------------------------------------------------------------------------
//  Pin BLOB and remember it (see above).

void
ms_reeval_keep(ms_reeval_t *self, const ms_hash_t *blob,
               const ms_hash_t *task_id, bool until_checked, bool forever,
               const uint8_t *target)
{
    assert(self && blob && task_id);
    if (ms_blob_store_pin(self->blobs, blob) != MS_OK)
        return;
    if (self->n_kept == self->cap_kept) {
        size_t cap = self->cap_kept ? 2 * self->cap_kept : 16;
        s_kept_t *grown = realloc(self->kept, cap * sizeof *grown);
        if (!grown) {
            ms_blob_store_unpin(self->blobs, blob);
            return;
        }
        self->kept = grown;
        self->cap_kept = cap;
    }
    s_kept_t *k = &self->kept[self->n_kept++];
    memset(k, 0, sizeof *k);
    k->blob = *blob;
    k->task_id = *task_id;
    k->until_checked = until_checked;
    k->forever = forever;
    k->kept_ms = s_now(self);
    if (target) {
        memcpy(k->target, target, MS_HASH_BYTES);
        k->has_target = true;
    }
}

//  --------------------------------------------------------------------------
//  Unpin kept entry i and forget it.

static void
s_kept_drop(ms_reeval_t *self, size_t i)
{
    ms_blob_store_unpin(self->blobs, &self->kept[i].blob);
    self->kept[i] = self->kept[--self->n_kept];
}

//  --------------------------------------------------------------------------
//  Unpin the first kept entry of BLOB.

void
ms_reeval_unkeep(ms_reeval_t *self, const ms_hash_t *blob)
{
    assert(self && blob);
    for (size_t i = 0; i < self->n_kept; i++)
        if (ms_hash_equal(&self->kept[i].blob, blob)) {
            s_kept_drop(self, i);
            break;
        }
}

//  --------------------------------------------------------------------------
//  Hold a copy of JOB's weights for another operator (they are here).

static void
s_hold_copy(ms_reeval_t *self, const s_job_t *job)
{
    ms_reeval_keep(self, &job->blob, &job->task_id, false, false, job->target);
    self->stats.n_copied++;
}

//  --------------------------------------------------------------------------
//  The job of TARGET, or NULL.

static s_job_t *
s_job(ms_reeval_t *self, const uint8_t *target)
{
    for (size_t i = 0; i < self->n_jobs; i++)
        if (memcmp(self->jobs[i].target, target, MS_HASH_BYTES) == 0)
            return &self->jobs[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  True when this node is one of the S_REEVAL_HOLDERS nodes that keep a
//  copy of the weights of result NR (producer operator POP): lowest
//  BLAKE2b(record hash || node id) among itself and its live linked
//  peers of other operators.

static bool
s_is_holder(ms_reeval_t *self, const ms_store_new_result_t *nr, const char *pop)
{
    uint8_t buf[2 * MS_HASH_BYTES];
    memcpy(buf, nr->record_hash, MS_HASH_BYTES);
    memcpy(buf + MS_HASH_BYTES, self->cfg.node_id, MS_HASH_BYTES);
    ms_hash_t mine;
    ms_hash_bytes(buf, sizeof buf, &mine);
    uint8_t(*peers)[MS_HASH_BYTES] = NULL;
    size_t n_peers = self->iface.live_peers(self->iface.arg, &peers);
    int below = 0; // candidates ranked before us
    for (size_t i = 0; peers && i < n_peers; i++) {
        if (memcmp(peers[i], nr->node_id, MS_HASH_BYTES) == 0)
            continue;
        char op[MS_STORE_OPERATOR_MAX + 1];
        if (ms_store_operator(self->store, peers[i], op) != MS_OK ||
            strcmp(op, pop) == 0)
            continue;
        memcpy(buf + MS_HASH_BYTES, peers[i], MS_HASH_BYTES);
        ms_hash_t h;
        ms_hash_bytes(buf, sizeof buf, &h);
        if (memcmp(h.bytes, mine.bytes, MS_HASH_BYTES) < 0)
            below++;
    }
    free(peers);
    return below < S_REEVAL_HOLDERS;
}

//  --------------------------------------------------------------------------
//  A new ok result: our own (note its record hash for the kept entry),
//  or another operator's: sample it, or hold a copy of its weights.

void
ms_reeval_sample(ms_reeval_t *self, const ms_store_new_result_t *nr,
                 int64_t now)
{
    assert(self && nr);
    if (memcmp(nr->node_id, self->cfg.node_id, MS_HASH_BYTES) == 0) {
        for (size_t i = 0; i < self->n_kept; i++)
            if (!self->kept[i].has_target &&
                memcmp(self->kept[i].task_id.bytes, nr->task_id,
                       MS_HASH_BYTES) == 0) {
                memcpy(self->kept[i].target, nr->record_hash, MS_HASH_BYTES);
                self->kept[i].has_target = true;
            }
        return;
    }
    char pop[MS_STORE_OPERATOR_MAX + 1], own[MS_STORE_OPERATOR_MAX + 1];
    if (ms_store_operator(self->store, nr->node_id, pop) != MS_OK ||
        ms_store_operator(self->store, self->cfg.node_id, own) != MS_OK ||
        strcmp(pop, own) == 0 || s_job(self, nr->record_hash))
        return;
    uint32_t n_done = 0;
    bool mine = false;
    if (ms_store_reevals_of(self->store, nr->task_id, nr->record_hash,
                            self->cfg.node_id, &n_done, &mine) != MS_OK ||
        mine)
        return; // re-evaluated by us already
    bool sample = self->cfg.reevaluate_fraction > 0 &&
                  s_rand01(self) < self->cfg.reevaluate_fraction;
    bool hold = s_is_holder(self, nr, pop);
    if (!sample && !hold)
        return;
    if (self->n_jobs == self->cap_jobs) {
        size_t cap = self->cap_jobs ? 2 * self->cap_jobs : 16;
        s_job_t *grown = realloc(self->jobs, cap * sizeof *grown);
        if (!grown)
            return;
        self->jobs = grown;
        self->cap_jobs = cap;
    }
    s_job_t *job = &self->jobs[self->n_jobs++];
    memset(job, 0, sizeof *job);
    memcpy(job->task_id.bytes, nr->task_id, MS_HASH_BYTES);
    memcpy(job->producer, nr->node_id, MS_HASH_BYTES);
    memcpy(job->target, nr->record_hash, MS_HASH_BYTES);
    job->copy_only = !sample;
    job->hold = hold;
    job->deadline_ms = now + (int64_t) self->cfg.reeval_timeout_s * 1000;
    job->retry_at_ms = now;
    if (sample) {
        self->stats.n_sampled++;
        char thex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&job->task_id, thex);
        s_log(self,
              "task %.12s: result of operator %s sampled for "
              "re-evaluation",
              thex, pop);
    }
}

//  --------------------------------------------------------------------------
//  Whether the recomputed metrics of E agree with JOB's target by the
//  verdict engine's rule (the sweep's verify tolerances, regression for
//  an mse task), for /metrics' reevaluations_total{outcome}. The store's
//  verdict decides what counts; this is the verifier's own view of it.

static bool
s_agrees(ms_reeval_t *self, const s_job_t *job, const ms_wire_reevaluation_t *e)
{
    ms_verdict_params_t p;
    ms_verdict_params_default(&p);
    ms_store_task_t *task = NULL;
    if (ms_store_get_task(self->store, job->task_id.bytes, &task) == MS_OK) {
        p.regression = task->config_json &&
                       strstr(task->config_json, "\"loss\":\"mse\"") != NULL;
        ms_store_sweep_t *sweep = NULL;
        if (ms_store_get_sweep(self->store, task->sweep_id, &sweep) == MS_OK) {
            json_t *spec =
                json_loadb(sweep->spec_json, sweep->spec_len, 0, NULL);
            json_t *verify = json_object_get(spec, "verify");
            json_t *acc = json_object_get(verify, "accuracy_tolerance");
            json_t *loss = json_object_get(verify, "loss_tolerance");
            if (json_is_number(acc))
                p.accuracy_tolerance = json_number_value(acc);
            if (json_is_number(loss))
                p.loss_tolerance = json_number_value(loss);
            json_decref(spec);
            ms_store_sweep_destroy(&sweep);
        }
        ms_store_task_destroy(&task);
    }
    return ms_verdict_reeval_agrees(&p, e->test_accuracy, e->test_loss,
                                    job->target_accuracy, job->target_loss);
}

//  --------------------------------------------------------------------------
//  Publish the outcome of JOB: ok with the worker's BODY, or failed with
//  REASON.

static void
s_publish(ms_reeval_t *self, const s_job_t *job, const json_t *body,
          const char *reason)
{
    ms_store_payload_t p;
    memset(&p, 0, sizeof p);
    p.kind = MS_RECORD_REEVALUATION;
    ms_wire_reevaluation_t *e = &p.u.reeval;
    memcpy(e->task_id, job->task_id.bytes, MS_HASH_BYTES);
    memcpy(e->target, job->target, MS_HASH_BYTES);
    e->status = body ? MS_WIRE_REEVAL_OK : MS_WIRE_REEVAL_FAILED;
    if (body) {
        const char *k[4] = {"test_accuracy", "test_loss", "val_accuracy",
                            "val_loss"};
        double *v[4] = {&e->test_accuracy, &e->test_loss, &e->val_accuracy,
                        &e->val_loss};
        for (int i = 0; i < 4; i++) {
            const json_t *x = json_object_get(body, k[i]);
            *v[i] = json_is_number(x) ? json_number_value(x) : NAN;
        }
    } else {
        // Truncate at a character boundary (the wire wants UTF-8).
        size_t n = strlen(reason);
        if (n > MS_WIRE_REEVAL_REASON_MAX)
            n = MS_WIRE_REEVAL_REASON_MAX;
        while (n > 0 && ((unsigned char) reason[n] & 0xC0) == 0x80)
            n--;
        memcpy(e->reason, reason, n);
        e->reason[n] = 0;
    }
    int rc = self->iface.append(self->iface.arg, &p);
    char thex[MS_HASH_HEX_LEN + 1], phex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&job->task_id, thex);
    ms_hash_t ph;
    memcpy(ph.bytes, job->producer, MS_HASH_BYTES);
    ms_hash_hex(&ph, phex);
    if (rc != MS_OK) {
        s_log(self, "task %.12s: re-evaluation not stored: %s", thex,
              ms_strerror(rc));
        return;
    }
    self->stats.n_published++;
    if (!body)
        self->stats.n_failed++;
    else if (s_agrees(self, job, e))
        self->stats.n_agreed++;
    else
        self->stats.n_disagreed++;
    if (body)
        s_log(self,
              "task %.12s: re-evaluated node %.12s's result: test_accuracy "
              "%.6g test_loss %.6g",
              thex, phex, e->test_accuracy, e->test_loss);
    else
        s_log(self, "task %.12s: re-evaluation of node %.12s failed: %s", thex,
              phex, e->reason);
    self->iface.emit(
        self->iface.arg,
        json_pack("{s:s, s:s, s:s, s:s, s:o, s:o, s:s}", "event",
                  "reevaluation", "task_id", thex, "producer", phex, "status",
                  body ? "ok" : "failed", "test_accuracy",
                  body && isfinite(e->test_accuracy)
                      ? json_real(e->test_accuracy)
                      : json_null(),
                  "test_loss",
                  body && isfinite(e->test_loss) ? json_real(e->test_loss)
                                                 : json_null(),
                  "reason", e->reason));
}

//  --------------------------------------------------------------------------
//  Row lookup: the counted row of the job's producer.

typedef struct {
    s_job_t *job;
    char producer[MS_HASH_HEX_LEN + 1];
    bool found;
    bool ok;       // status ok
    bool has_blob; // names weights_blob
} s_row_find_t;

static int
s_row_fn(void *arg, const char *text, size_t n, bool extra)
{
    (void) extra;
    s_row_find_t *f = arg;
    json_error_t err;
    json_t *row = json_loadb(text, n, 0, &err);
    const char *node = json_string_value(json_object_get(row, "node_id"));
    if (!f->found && node && strcmp(node, f->producer) == 0) {
        f->found = true;
        const char *st = json_string_value(json_object_get(row, "status"));
        f->ok = st && strcmp(st, "ok") == 0;
        const char *blob =
            json_string_value(json_object_get(row, "weights_blob"));
        const char *dig =
            json_string_value(json_object_get(row, "weights_digest"));
        const json_t *size = json_object_get(row, "weights_bytes");
        f->has_blob = blob && strlen(blob) == MS_HASH_HEX_LEN &&
                      ms_hash_from_hex(blob, &f->job->blob) == 0 &&
                      json_is_integer(size) && json_integer_value(size) > 0;
        if (f->has_blob)
            f->job->blob_size = (uint64_t) json_integer_value(size);
        snprintf(f->job->digest, sizeof f->job->digest, "%s", dig ? dig : "");
        const json_t *acc = json_object_get(row, "test_accuracy");
        const json_t *loss = json_object_get(row, "test_loss");
        f->job->target_accuracy =
            json_is_number(acc) ? json_number_value(acc) : NAN;
        f->job->target_loss =
            json_is_number(loss) ? json_number_value(loss) : NAN;
    }
    json_decref(row);
    return 0;
}

//  --------------------------------------------------------------------------
//  Start the worker op "reeval" for JOB (its blob is held). Returns true
//  when it runs.

static bool
s_start(ms_reeval_t *self, s_job_t *job, int64_t now)
{
    if (!self->iface.worker_free(self->iface.arg)) {
        job->retry_at_ms = now + MS_REEVAL_TICK_MS;
        return false;
    }
    ms_store_task_t *task = NULL;
    if (ms_store_get_task(self->store, job->task_id.bytes, &task) != MS_OK) {
        snprintf(job->why, sizeof job->why, "the task is not known here");
        return false;
    }
    ms_reeval_run_t run = {
        .task_id = job->task_id, .target = job->target, .started_ms = now};
    memcpy(run.sweep_id.bytes, task->sweep_id, MS_HASH_BYTES);
    json_error_t err;
    run.config = json_loadb(task->config_json, task->config_len, 0, &err);
    ms_store_task_destroy(&task);
    run.dataset = self->iface.dataset(self->iface.arg, &run.sweep_id);
    char *path = NULL;
    if (!run.config || !run.dataset ||
        ms_blob_store_path(self->blobs, &job->blob, &path) != MS_OK) {
        snprintf(job->why, sizeof job->why, "%s",
                 !run.config ? "the task's config does not parse"
                             : "the dataset is not here yet");
        json_decref(run.config);
        free(path);
        return false;
    }
    run.weights_path = path;
    int worker = -1;
    int rc = self->iface.start(self->iface.arg, &run, &worker);
    free(path);
    if (rc != MS_OK) {
        json_decref(run.config);
        snprintf(job->why, sizeof job->why, "no worker: %s", ms_strerror(rc));
        return false;
    }
    job->running = true;
    char thex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&job->task_id, thex);
    s_log(
        self,
        "re-evaluation of a result of task %.12s: worker %d checks its weights",
        thex, worker);
    return true;
}

//  --------------------------------------------------------------------------
//  Ask the live peers for JOB's weights blob.

static void
s_fetch(ms_reeval_t *self, s_job_t *job, int64_t now)
{
    uint8_t(*peers)[MS_HASH_BYTES] = NULL;
    size_t n = self->iface.live_peers(self->iface.arg, &peers);
    if (!peers)
        n = 0;
    int rc = n == 0
                 ? MS_ERR_NOTFOUND
                 : ms_blob_fetch_start(
                       self->fetch, &job->blob, job->blob_size,
                       (const uint8_t(*)[MS_BLOB_PEER_ID_BYTES]) peers, n, now);
    free(peers);
    if (rc == MS_OK)
        job->fetching = !ms_blob_store_has(self->blobs, &job->blob);
    else
        snprintf(job->why, sizeof job->why, "cannot fetch the weights: %s",
                 n == 0 ? "no peer linked" : ms_strerror(rc));
}

//  --------------------------------------------------------------------------
//  Read JOB's row; false when the job is over (drop it), with *wait set
//  when the row does not count here yet.

static bool
s_read_row(ms_reeval_t *self, s_job_t *job, bool *wait)
{
    *wait = false;
    s_row_find_t f = {.job = job};
    ms_hash_t ph;
    memcpy(ph.bytes, job->producer, MS_HASH_BYTES);
    ms_hash_hex(&ph, f.producer);
    ms_store_results_by_task_all(self->store, job->task_id.bytes, s_row_fn, &f);
    if (!f.found) {
        snprintf(job->why, sizeof job->why,
                 "the result does not count here (yet)");
        *wait = true;
        return true;
    }
    if (!f.ok)
        return false; // diverged or failed: no weights to check
    if (!f.has_blob) {
        ms_store_task_t *task = NULL;
        int keep = MS_KEEP_WEIGHTS_SAMPLED;
        if (ms_store_get_task(self->store, job->task_id.bytes, &task) ==
            MS_OK) {
            keep = self->iface.sweep_keep(self->iface.arg, task->sweep_id);
            ms_store_task_destroy(&task);
        }
        if (!job->copy_only &&
            (keep == MS_KEEP_WEIGHTS_SAMPLED || keep == MS_KEEP_WEIGHTS_ALL)) {
            char why[160];
            snprintf(why, sizeof why,
                     "the result names no kept weights (keep_weights "
                     "%s)",
                     ms_keep_weights_name((ms_keep_weights_t) keep));
            s_publish(self, job, NULL, why);
        }
        return false;
    }
    job->have_row = true;
    return true;
}

//  --------------------------------------------------------------------------
//  Drive one job; false when it is over (drop it).

static bool
s_step(ms_reeval_t *self, s_job_t *job, int64_t now)
{
    if (job->running)
        return true;
    //  The bound is on getting the weights: once they are here the job
    //  waits for a free worker as long as it takes.
    bool held = job->have_row && ms_blob_store_has(self->blobs, &job->blob);
    if (!held && now >= job->deadline_ms) {
        if (job->fetching)
            ms_blob_fetch_cancel(self->fetch, &job->blob);
        if (!job->copy_only) {
            char why[260];
            snprintf(why, sizeof why, "weights not had in %d s%s%s",
                     self->cfg.reeval_timeout_s, job->why[0] ? ": " : "",
                     job->why);
            s_publish(self, job, NULL, why);
        }
        return false;
    }
    if (now < job->retry_at_ms)
        return true;
    job->retry_at_ms = now + S_REEVAL_RETRY_MS;
    if (!job->have_row) {
        bool wait = false;
        if (!s_read_row(self, job, &wait))
            return false;
        if (wait)
            return true;
    }
    if (ms_blob_store_has(self->blobs, &job->blob)) {
        if (job->copy_only) {
            s_hold_copy(self, job);
            char bhex[MS_HASH_HEX_LEN + 1];
            ms_hash_hex(&job->blob, bhex);
            s_log(self, "weights %.12s: holding a copy for another operator",
                  bhex);
            return false;
        }
        s_start(self, job, now);
        return true;
    }
    if (!job->fetching)
        s_fetch(self, job, now);
    return true;
}

//  --------------------------------------------------------------------------
//  A blob fetch ended: the jobs waiting for it go on (or retry later).

void
ms_reeval_blob_done(ms_reeval_t *self, const ms_hash_t *hash, int status,
                    const char *reason)
{
    assert(self && hash);
    for (size_t i = 0; i < self->n_jobs; i++) {
        s_job_t *job = &self->jobs[i];
        if (!job->fetching || !ms_hash_equal(&job->blob, hash))
            continue;
        job->fetching = false;
        job->retry_at_ms = status == MS_OK ? 0 : s_now(self) + 2000;
        if (status != MS_OK)
            snprintf(job->why, sizeof job->why, "weights fetch failed: %s",
                     reason ? reason : ms_strerror(status));
    }
}

//  --------------------------------------------------------------------------
//  A worker event of the re-evaluation of TARGET.

void
ms_reeval_worker_event(ms_reeval_t *self, const uint8_t target[MS_HASH_BYTES],
                       const ms_worker_event_t *ev)
{
    assert(self && target && ev);
    s_job_t *job = s_job(self, target);
    if (!job)
        return;
    job->running = false;
    if (ev->kind == MS_WORKER_EVENT_DIED) {
        snprintf(job->why, sizeof job->why, "%.190s", ev->reason);
        job->retry_at_ms = s_now(self) + 5 * S_REEVAL_RETRY_MS;
        return; // tried again until the deadline
    }
    if (ev->kind == MS_WORKER_EVENT_RESULT) {
        const char *dig =
            json_string_value(json_object_get(ev->body, "weights_digest"));
        if (!dig || strcmp(dig, job->digest) != 0)
            s_publish(self, job, NULL,
                      "the weights blob is not the published "
                      "weights_digest");
        else {
            s_publish(self, job, ev->body, NULL);
            if (job->hold) // and keep the copy for the retention
                s_hold_copy(self, job);
        }
    } else
        s_publish(self, job, NULL, ev->reason);
    *job = self->jobs[--self->n_jobs];
}

//  --------------------------------------------------------------------------
//  Unpin kept weights whose result was re-evaluated, or whose retention
//  passed (keep_weights sampled).

static void
s_kept_tick(ms_reeval_t *self, int64_t now)
{
    int64_t keep_ms = (int64_t) self->cfg.keep_retention_s * 1000;
    for (size_t i = 0; i < self->n_kept;) {
        s_kept_t *k = &self->kept[i];
        bool drop = false;
        if (!k->forever && now - k->kept_ms >= keep_ms)
            drop = true;
        else if (k->until_checked && k->has_target) {
            uint32_t n = 0;
            drop = ms_store_reevals_of(self->store, k->task_id.bytes, k->target,
                                       NULL, &n, NULL) == MS_OK &&
                   n > 0;
        }
        if (drop)
            s_kept_drop(self, i);
        else
            i++;
    }
}

//  --------------------------------------------------------------------------
//  Drive re-evaluation (see above): sample new results, move jobs on,
//  release kept weights. At most every MS_REEVAL_TICK_MS.

void
ms_reeval_tick(ms_reeval_t *self, int64_t now)
{
    assert(self);
    if (now < self->tick_at)
        return;
    self->tick_at = now + MS_REEVAL_TICK_MS;
    ms_store_new_result_t nr[256];
    size_t n;
    while ((n = ms_store_new_results(self->store, nr, 256)) > 0)
        for (size_t i = 0; i < n; i++)
            ms_reeval_sample(self, &nr[i], now);
    s_kept_tick(self, now);
    for (size_t i = 0; i < self->n_jobs;) {
        if (s_step(self, &self->jobs[i], now))
            i++;
        else
            self->jobs[i] = self->jobs[--self->n_jobs];
    }
}

//  --------------------------------------------------------------------------
//  Copy the counters.

void
ms_reeval_stats(const ms_reeval_t *self, ms_reeval_stats_t *out)
{
    assert(self && out);
    *out = self->stats;
    out->n_pending = self->n_jobs;
    out->n_pinned = self->n_kept;
}
