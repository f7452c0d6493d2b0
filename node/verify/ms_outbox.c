/*  =========================================================================
    ms_outbox - a turn's results, commit then reveal

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Group commit (DESIGN.md "Records and anti-entropy"): the results of
    one loop turn are stored as one block of ours, one durable commit for
    all of them, then one push. No release record follows a result: the
    result itself finishes the claim (the slot's holder is the top claim
    that is neither released nor finished), which halves the records a
    task costs the pool. One bad row must not lose the others: when the
    block cannot be appended, each result is appended alone.

    Commit then reveal (DESIGN.md "Verification", docs/VERIFICATION.md
    "Commit then reveal"). With verify.replicas >= 2 a leased result is
    not published at once: this turn's block gets a COMMIT record (task,
    slot, epoch, ms_store_payload_commitment(our id, a random nonce, the
    row)) and the result is held here. It is revealed (the RESULT record,
    carrying the nonce) once the store holds commits of min(replicas,
    operators in the pool as we see them) distinct operators for the
    task, or once the task wants no slot any more (its verdict is
    final): then no other result is coming that could copy it. A
    copier that commits blind cannot match a result it has not seen, and
    one that does not commit is not counted (ms_store.c "Record log").

    With replicas 1 a commit protects nothing (no other result of the
    task to copy, and a copy of a revealed result is not counted beside
    the first of another operator anyway): results are published at once
    as before, saving a record and a round trip per task.

    While held, our claim stays live (heartbeats renew it), so the slot
    is not taken over, and the node claims no other slot of the task
    (ms_outbox_held). Nothing is revealed during the node's start grace (a
    restarted node sees a pool of one operator until its peers link): the
    node does not call ms_outbox_reveal then. The operator count is the
    node's view: a peer that drops out of it lowers `needed`, so a pool
    that shrinks below replicas does not hold results for ever. A held
    result survives a restart: it is written to DATA_DIR/held/<task id>
    (JSON: the row, nonce, slot, epoch; fsync, then rename) BEFORE its
    commit is appended, and read back at start. Recomputing instead would
    need a new commit (the nonce is gone), cost a training run, and a
    crash between the commit and the reveal would leave a commit without
    its result. A file without a commit (the append failed, or a crash
    before it) is revealed as a plain late result: its reveal matches no
    commit and is not counted, which is the honest outcome.
*/
#include "ms_outbox.h"

#include "ms_err.h"
#include "ms_wire.h"
#include "ms_wire_canon.h"

#include <jansson.h>
#include <sodium.h>

#include <assert.h>
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_REVEAL_EVERY_MS 100 // least gap between two reveal passes

struct ms_outbox {
    ms_outbox_config_t cfg;     // settings (held_dir points at held_dir)
    ms_outbox_iface_t iface;    // the node
    char held_dir[PATH_MAX];    // DATA_DIR/held: one file per held result
    ms_outbox_result_t *queued; // results of this turn, not stored yet
    size_t n_queued;            // entries in queued (<= cfg.max_queued)
    ms_store_payload_t *block;  // cfg.max_queued payloads: flush's block
    ms_outbox_result_t *held;   // committed results not revealed yet
    size_t n_held, cap_held;    // entries in held, allocated
    int64_t held_check_at;      // monotonic ms: next reveal check
    uint64_t n_reveals;         // held results revealed
};

//  --------------------------------------------------------------------------
//  Log a line through the node.

static void s_log(ms_outbox_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(ms_outbox_t *self, const char *fmt, ...)
{
    char line[PATH_MAX + 512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    self->iface.log(self->iface.arg, line);
}

//  --------------------------------------------------------------------------
//  Create the outbox.

ms_outbox_t *
ms_outbox_new(const ms_outbox_config_t *cfg, const ms_outbox_iface_t *iface)
{
    assert(cfg && iface && cfg->held_dir && cfg->max_queued >= 1);
    ms_outbox_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cfg = *cfg;
    self->iface = *iface;
    snprintf(self->held_dir, sizeof self->held_dir, "%s", cfg->held_dir);
    self->cfg.held_dir = self->held_dir;
    self->queued = calloc(cfg->max_queued, sizeof *self->queued);
    self->block = calloc(cfg->max_queued, sizeof *self->block);
    if (!self->queued || !self->block)
        ms_outbox_destroy(&self);
    return self;
}

//  --------------------------------------------------------------------------
//  Free it; held results' files stay for the next run.

void
ms_outbox_destroy(ms_outbox_t **self_p)
{
    assert(self_p);
    ms_outbox_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < self->n_queued; i++)
        ms_outbox_result_clear(&self->queued[i]);
    for (size_t i = 0; i < self->n_held; i++)
        ms_outbox_result_clear(&self->held[i]);
    free(self->queued);
    free(self->block);
    free(self->held);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Free what a result owns.

void
ms_outbox_result_clear(ms_outbox_result_t *res)
{
    free(res->row);
    json_decref(res->event);
    json_decref(res->platform);
    memset(res, 0, sizeof *res);
}

//  --------------------------------------------------------------------------
//  Everything after a result is durable: the node's part (lease table,
//  checkpoint, crash count, counters), then the log line and the event.
//  Takes ownership of RES's fields (the caller clears what is left).

static void
s_result_stored(ms_outbox_t *self, ms_outbox_result_t *res)
{
    self->iface.stored(self->iface.arg, res);
    s_log(self, "%s", res->log_line);
    self->iface.emit(self->iface.arg, res->event);
    res->event = NULL;
}

//  --------------------------------------------------------------------------
//  A result that could not be stored (store error RC): the task goes back
//  to pending (its checkpoint at the last epoch makes the rerun cheap)
//  and our claim is released, or, for a row that can never be stored, a
//  task-class failure is published.

static void
s_result_lost(ms_outbox_t *self, const ms_outbox_result_t *res, int rc)
{
    if (rc == MS_ERR_RANGE) {
        // The row is over the limit of one result (its curve, say): the
        // task's own property, so a task-class failure, not a retry.
        char reason[160];
        snprintf(reason, sizeof reason,
                 "result row of %zu bytes is over the limit of %u bytes "
                 "for one result",
                 res->row_len, (unsigned) MS_WIRE_MAX_RESULT_PAYLOAD_BYTES);
        self->iface.fail(self->iface.arg, res, reason);
        return;
    }
    if (rc == MS_ERR_INVALID) {
        // A row that cannot be true (case 7: accuracy outside [0, 1], a
        // NaN loss with status ok): published as a task-class failure,
        // so another node runs the task and the pool keeps the reason.
        self->iface.fail(self->iface.arg, res,
                         "result refused as invalid: a metric out of range "
                         "(accuracy outside [0, 1], or a NaN or negative "
                         "loss with status ok)");
        return;
    }
    char thex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&res->task_id, thex);
    s_log(self, "task %.12s: cannot store result: %s", thex, ms_strerror(rc));
    self->iface.requeue(self->iface.arg, res, rc);
}

//  --------------------------------------------------------------------------
//  True when one of the N results in LIST is of the task.

static bool
s_has_task(const ms_outbox_result_t *list, size_t n,
           const uint8_t task_id[MS_HASH_BYTES])
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(list[i].task_id.bytes, task_id, MS_HASH_BYTES) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  True when we hold a committed result of the task.

bool
ms_outbox_held(const ms_outbox_t *self, const uint8_t task_id[MS_HASH_BYTES])
{
    assert(self);
    return s_has_task(self->held, self->n_held, task_id);
}

//  --------------------------------------------------------------------------
//  True when a result of the task is queued for this turn's block.

bool
ms_outbox_queued(const ms_outbox_t *self, const uint8_t task_id[MS_HASH_BYTES])
{
    assert(self);
    return s_has_task(self->queued, self->n_queued, task_id);
}

//  --------------------------------------------------------------------------
//  The counters.

ms_outbox_stats_t
ms_outbox_stats(const ms_outbox_t *self)
{
    assert(self);
    ms_outbox_stats_t st = {.n_queued = self->n_queued,
                            .n_held = self->n_held,
                            .n_reveals = self->n_reveals};
    return st;
}

//  --------------------------------------------------------------------------
//  Path of a held result's file.

static void
s_held_path(const ms_outbox_t *self, const ms_hash_t *task_id, char *path,
            size_t n)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(task_id, hex);
    snprintf(path, n, "%s/%s", self->held_dir, hex);
}

//  --------------------------------------------------------------------------
//  Remove a held result's file.

static void
s_held_unlink(const ms_outbox_t *self, const ms_hash_t *task_id)
{
    char path[PATH_MAX + 100];
    s_held_path(self, task_id, path, sizeof path);
    unlink(path);
}

//  --------------------------------------------------------------------------
//  Write a held result's file (tmp, fsync, rename). Returns MS_OK or
//  MS_ERR_IO / MS_ERR_NOMEM.

static int
s_held_save(const ms_outbox_t *self, const ms_outbox_result_t *res)
{
    char nonce[2 * MS_HASH_BYTES + 1], sweep[MS_HASH_HEX_LEN + 1];
    for (int i = 0; i < MS_HASH_BYTES; i++)
        snprintf(nonce + 2 * i, 3, "%02x", res->nonce[i]);
    ms_hash_hex(&res->sweep_id, sweep);
    json_t *j = json_pack(
        "{s:s, s:s#, s:s, s:i, s:i, s:b, s:f, s:i, s:i}", "nonce", nonce, "row",
        res->row, res->row_len, "sweep_id", sweep, "slot",
        (json_int_t) res->slot, "epoch", (json_int_t) res->epoch, "train",
        res->train, "train_seconds",
        isfinite(res->train_seconds) ? res->train_seconds : 0.0, "status",
        (json_int_t) res->status, "replicas", (json_int_t) res->replicas);
    if (!j)
        return MS_ERR_NOMEM;
    char path[PATH_MAX + 100], tmp[PATH_MAX + 110];
    s_held_path(self, &res->task_id, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = MS_ERR_IO;
    FILE *f = fopen(tmp, "w");
    if (f) {
        bool ok = json_dumpf(j, f, JSON_COMPACT) == 0 && fflush(f) == 0 &&
                  fsync(fileno(f)) == 0;
        ok = fclose(f) == 0 && ok;
        if (ok && rename(tmp, path) == 0)
            rc = MS_OK;
        else
            unlink(tmp);
    }
    json_decref(j);
    return rc;
}

//  --------------------------------------------------------------------------
//  Room for one more held result. Returns false when memory runs out.

static bool
s_held_grow(ms_outbox_t *self)
{
    if (self->n_held < self->cap_held)
        return true;
    size_t cap = self->cap_held ? 2 * self->cap_held : 8;
    ms_outbox_result_t *grown = realloc(self->held, cap * sizeof *grown);
    if (!grown)
        return false;
    self->held = grown;
    self->cap_held = cap;
    return true;
}

//  --------------------------------------------------------------------------
//  Read the held results a previous run left (DATA_DIR/held). A file that
//  does not parse is logged and left for the operator.

void
ms_outbox_load(ms_outbox_t *self)
{
    assert(self);
    DIR *dir = opendir(self->held_dir);
    if (!dir)
        return;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        ms_hash_t tid;
        if (strlen(de->d_name) != MS_HASH_HEX_LEN ||
            ms_hash_from_hex(de->d_name, &tid) != MS_OK ||
            ms_outbox_held(self, tid.bytes))
            continue;
        char path[PATH_MAX + 100];
        s_held_path(self, &tid, path, sizeof path);
        json_error_t err;
        json_t *j = json_load_file(path, 0, &err);
        const char *nonce = json_string_value(json_object_get(j, "nonce"));
        const char *sweep = json_string_value(json_object_get(j, "sweep_id"));
        json_t *row = json_object_get(j, "row");
        ms_hash_t n, sid;
        if (!nonce || !sweep || !json_is_string(row) ||
            ms_hash_from_hex(nonce, &n) != MS_OK ||
            ms_hash_from_hex(sweep, &sid) != MS_OK ||
            json_string_length(row) == 0) {
            s_log(self, "held result %s: unreadable (%s): left as is", path,
                  j ? "fields" : err.text);
            json_decref(j);
            continue;
        }
        if (!s_held_grow(self)) {
            json_decref(j);
            break;
        }
        ms_outbox_result_t *res = &self->held[self->n_held];
        memset(res, 0, sizeof *res);
        res->row_len = json_string_length(row);
        res->row = malloc(res->row_len + 1);
        if (!res->row) {
            json_decref(j);
            break;
        }
        memcpy(res->row, json_string_value(row), res->row_len + 1);
        res->task_id = tid;
        res->sweep_id = sid;
        res->slot = (uint32_t) json_integer_value(json_object_get(j, "slot"));
        res->epoch = (uint32_t) json_integer_value(json_object_get(j, "epoch"));
        res->train = json_is_true(json_object_get(j, "train"));
        res->train_seconds =
            json_number_value(json_object_get(j, "train_seconds"));
        res->status = (ms_result_status_t) json_integer_value(
            json_object_get(j, "status"));
        res->replicas =
            (uint32_t) json_integer_value(json_object_get(j, "replicas"));
        res->has_nonce = true;
        memcpy(res->nonce, n.bytes, MS_HASH_BYTES);
        snprintf(res->log_line, sizeof res->log_line,
                 "task %.12s: held result revealed (after a restart)",
                 de->d_name);
        self->n_held++;
        json_decref(j);
    }
    closedir(dir);
    if (self->n_held)
        s_log(self, "%zu committed result(s) held from the last run",
              self->n_held);
}

//  --------------------------------------------------------------------------
//  Does this leased result go through commit then reveal? Sets its
//  replicas and nonce when it does.

static bool
s_wants_commit(ms_outbox_t *self, ms_outbox_result_t *res)
{
    uint32_t n_slots = 1, replicas = 1;
    if (self->iface.task_slots(self->iface.arg, res->task_id.bytes, &n_slots,
                               &replicas) != MS_OK ||
        replicas < 2)
        return false;
    res->replicas = replicas;
    res->has_nonce = true;
    randombytes_buf(res->nonce, sizeof res->nonce);
    return true;
}

//  --------------------------------------------------------------------------
//  Keep a committed result (ownership moves to the held list).

static void
s_held_add(ms_outbox_t *self, ms_outbox_result_t *res)
{
    if (!s_held_grow(self)) {
        // Not kept in memory: the file is, and is read at next start.
        ms_outbox_result_clear(res);
        return;
    }
    self->held[self->n_held++] = *res;
    memset(res, 0, sizeof *res);
    self->held_check_at = 0; // others may have committed already
}

//  --------------------------------------------------------------------------
//  The RESULT record of RES in *P (borrowing its row); with its nonce when
//  it was committed.

static void
s_result_payload(const ms_outbox_result_t *res, bool with_nonce,
                 ms_store_payload_t *p)
{
    p->kind = MS_RECORD_RESULT;
    memcpy(p->u.result.task_id, res->task_id.bytes, MS_HASH_BYTES);
    p->u.result.status = res->status;
    p->u.result.row_json = res->row;
    p->u.result.row_len = res->row_len;
    p->u.result.slot = res->slot;
    p->u.result.epoch = res->epoch;
    if (with_nonce) {
        p->u.result.has_nonce = true;
        memcpy(p->u.result.nonce, res->nonce, MS_HASH_BYTES);
    }
}

//  --------------------------------------------------------------------------
//  Reveal the held results whose task has the commits it waits for (see
//  above). Runs at most every 100 ms while something is held.

void
ms_outbox_reveal(ms_outbox_t *self, int64_t now)
{
    assert(self);
    if (self->n_held == 0 || now < self->held_check_at)
        return;
    self->held_check_at = now + S_REVEAL_EVERY_MS;
    for (size_t i = 0; i < self->n_held;) {
        ms_outbox_result_t *res = &self->held[i];
        uint32_t n_slots = 1, replicas = res->replicas, n_ops = 0;
        int rc = self->iface.task_slots(self->iface.arg, res->task_id.bytes,
                                        &n_slots, &replicas);
        if (rc == MS_OK)
            rc = self->iface.commit_operators(self->iface.arg,
                                              res->task_id.bytes, &n_ops);
        uint32_t pool = self->iface.pool_operators(self->iface.arg);
        if (pool == 0)
            pool = 1;
        uint32_t needed = replicas < pool ? replicas : pool;
        if (rc != MS_OK || (n_ops < needed && n_slots > 0)) {
            i++;
            continue;
        }
        ms_store_payload_t p;
        memset(&p, 0, sizeof p);
        s_result_payload(res, true, &p);
        rc = self->iface.append(self->iface.arg, 1, &p);
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&res->task_id, hex);
        if (rc == MS_OK) {
            self->n_reveals++;
            s_log(self,
                  "task %.12s: revealed (commits of %u operator(s), %u "
                  "needed)",
                  hex, n_ops, needed);
            s_result_stored(self, res);
        } else if (rc == MS_ERR_NOMEM || rc == MS_ERR_STORE_FULL) {
            i++; // try again later
            continue;
        } else {
            s_result_lost(self, res, rc);
        }
        s_held_unlink(self, &res->task_id);
        ms_outbox_result_clear(res);
        self->held[i] = self->held[--self->n_held];
    }
}

//  --------------------------------------------------------------------------
//  Store the results of this turn as one block of ours (see above).

void
ms_outbox_flush(ms_outbox_t *self)
{
    assert(self);
    size_t n = self->n_queued;
    if (n == 0)
        return;
    ms_store_payload_t *p = self->block;
    memset(p, 0, n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        ms_outbox_result_t *res = &self->queued[i];
        // Commit then reveal: the commit now, the result held (see above);
        // a row the commitment cannot take, or a held file we cannot
        // write, is published at once (it will not count with replicas
        // >= 2, but it is not lost).
        if (s_wants_commit(self, res)) {
            p[i].kind = MS_RECORD_COMMIT;
            memcpy(p[i].u.commit.task_id, res->task_id.bytes, MS_HASH_BYTES);
            p[i].u.commit.slot = res->slot;
            p[i].u.commit.epoch = res->epoch;
            int c = ms_store_payload_commitment(self->cfg.node_id, res->nonce,
                                                res->row, res->row_len,
                                                p[i].u.commit.commitment);
            if (c == MS_OK)
                c = s_held_save(self, res);
            if (c == MS_OK)
                continue;
            char hex[MS_HASH_HEX_LEN + 1];
            ms_hash_hex(&res->task_id, hex);
            s_log(self,
                  "task %.12s: cannot hold the result for its commit "
                  "(%s): published at once",
                  hex, ms_strerror(c));
            res->has_nonce = false;
        }
        s_result_payload(res, false, &p[i]);
    }
    int rc = self->iface.append(self->iface.arg, n, p);
    for (size_t i = 0; i < n; i++) {
        // One bad row must not lose the others: store them one by one.
        int one = rc == MS_OK || n == 1
                      ? rc
                      : self->iface.append(self->iface.arg, 1, &p[i]);
        ms_outbox_result_t *res = &self->queued[i];
        if (one == MS_OK && p[i].kind == MS_RECORD_COMMIT) {
            char hex[MS_HASH_HEX_LEN + 1];
            ms_hash_hex(&res->task_id, hex);
            s_log(self,
                  "task %.12s: committed, result held until %u "
                  "operator(s) commit",
                  hex, res->replicas);
            s_held_add(self, res);
            continue;
        }
        if (p[i].kind == MS_RECORD_COMMIT)
            s_held_unlink(self, &res->task_id);
        if (one == MS_OK)
            s_result_stored(self, res);
        else
            s_result_lost(self, res, one);
        ms_outbox_result_clear(res);
    }
    self->n_queued = 0;
}

//  --------------------------------------------------------------------------
//  Queue a result for this turn's block.

void
ms_outbox_push(ms_outbox_t *self, ms_outbox_result_t *res)
{
    assert(self && res);
    if (!res->row) {
        res->row_len = 0;
        s_result_lost(self, res, MS_ERR_NOMEM);
        ms_outbox_result_clear(res);
        return;
    }
    if (self->n_queued == self->cfg.max_queued)
        ms_outbox_flush(self);
    self->queued[self->n_queued++] = *res;
    memset(res, 0, sizeof *res);
}

//  --------------------------------------------------------------------------
//  The fingerprint of a platform object: BLAKE2b of its canonical form
//  without calibration_gflops; null for a null or empty platform.

static json_t *
s_fingerprint(const json_t *platform)
{
    if (!json_is_object(platform) || json_object_size(platform) == 0)
        return json_null();
    json_t *copy = json_copy((json_t *) platform);
    if (!copy)
        return json_null();
    json_object_del(copy, "calibration_gflops");
    size_t len = 0;
    char *canon = ms_wire_canon_dump_len(copy, &len);
    json_decref(copy);
    if (!canon)
        return json_null();
    ms_hash_t h;
    ms_hash_bytes(canon, len, &h);
    free(canon);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    return json_string(hex);
}

//  --------------------------------------------------------------------------
//  Our result's row from the worker's report.

json_t *
ms_outbox_row_new(const json_t *body, const ms_hash_t *task_id,
                  const ms_hash_t *sweep_id, json_t *config,
                  const char *node_hex, const char *operator_name)
{
    assert(task_id && sweep_id && node_hex && operator_name);
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(task_id, thex);
    ms_hash_hex(sweep_id, shex);
    json_t *row = json_object();
    const char *key;
    json_t *value;
    json_object_foreach((json_t *) body, key, value)
    {
        if (strcmp(key, "peak_rss_bytes") != 0)
            json_object_set(row, key, value);
    }
    json_t *platform = json_object_get(body, "platform");
    json_object_set_new(row, "task_id", json_string(thex));
    json_object_set_new(row, "sweep_id", json_string(shex));
    json_object_set(row, "config", config);
    json_object_set_new(row, "node_id", json_string(node_hex));
    json_object_set_new(row, "operator", json_string(operator_name));
    json_object_set_new(row, "fingerprint", s_fingerprint(platform));
    json_object_set_new(row, "verdict", json_string("pending"));
    json_object_set_new(row, "verdict_revision", json_integer(0));
    json_object_set_new(row, "counted", json_true());
    return row;
}

//  --------------------------------------------------------------------------
//  A row's status.

ms_result_status_t
ms_outbox_row_status(const json_t *row)
{
    const char *st = json_string_value(json_object_get(row, "status"));
    return st && !strcmp(st, "ok")         ? MS_RESULT_STATUS_OK
           : st && !strcmp(st, "diverged") ? MS_RESULT_STATUS_DIVERGED
                                           : MS_RESULT_STATUS_FAILED;
}

//  --------------------------------------------------------------------------
//  A result from its finished row and the worker's report.

void
ms_outbox_result_fill(ms_outbox_result_t *res, const json_t *row,
                      const json_t *body)
{
    assert(res);
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&res->task_id, thex);
    ms_hash_hex(&res->sweep_id, shex);
    json_t *platform = json_object_get(body, "platform");
    const char *st = json_string_value(json_object_get(row, "status"));
    res->row = ms_wire_canon_dump_len(row, &res->row_len);
    res->train_seconds =
        json_number_value(json_object_get(body, "train_seconds"));
    res->status = ms_outbox_row_status(row);
    res->platform = json_is_object(platform) && json_object_size(platform)
                        ? json_incref(platform)
                        : NULL;
    snprintf(
        res->log_line, sizeof res->log_line,
        "task %.12s done: %s (worker peak RSS %.1f MiB)", thex, st ? st : "?",
        (double) json_integer_value(json_object_get(body, "peak_rss_bytes")) /
            (1024.0 * 1024.0));
    res->event =
        json_pack("{s:s, s:s, s:s, s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "event",
                  "result", "task_id", thex, "sweep_id", shex, "status",
                  json_object_get(row, "status"), "epochs",
                  json_object_get(row, "epochs"), "val_accuracy",
                  json_object_get(row, "val_accuracy"), "test_accuracy",
                  json_object_get(row, "test_accuracy"), "seconds_per_epoch",
                  json_object_get(row, "seconds_per_epoch"), "weights_digest",
                  json_object_get(row, "weights_digest"), "peak_rss_bytes",
                  json_object_get(body, "peak_rss_bytes")
                      ? json_object_get(body, "peak_rss_bytes")
                      : json_null());
}
