/*  =========================================================================
    ms_outbox_test - a turn's results, commit then reveal, with a fake node

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification" (commit then reveal): each case makes a
    temporary DATA_DIR/held and drives ms_outbox through a fake
    ms_outbox_iface_t (tasks with their slots, replicas and commits, a
    pool operator count, recorded appends, stored results, failures,
    requeues, events and log lines):
    - replicas 1: a result is published at once as a RESULT record;
    - replicas 2: a COMMIT is published, the result held in memory and in
      held_dir, and revealed (RESULT with the nonce the commit hashed)
      only once commits of enough operators are in, or the task wants no
      slot any more; reveal passes are at least 100 ms apart; a reveal
      the store has no room for is tried again;
    - a held result survives a restart: a new outbox on the same dir
      reads it back and reveals it; an unreadable file is left as is;
    - one bad row loses only itself; store errors requeue the task; a
      result without a row is lost at once; a full queue is flushed.
*/
#include "ms_outbox.h"

#include "ms_err.h"
#include "ms_hash.h"
#include "ms_store_payload.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_test_fs.h"

#define MAX_TASKS 8
#define MAX_APPENDED 32

static const char S_ROW[] = "{\"status\":\"ok\",\"test_accuracy\":0.9,"
                            "\"test_loss\":0.3,\"val_accuracy\":0.91,"
                            "\"val_loss\":0.29,\"weights_digest\":null}";

//  A task as the fake store knows it.
typedef struct {
    uint8_t id[MS_HASH_BYTES]; // task id
    uint32_t n_slots;          // slots it still wants
    uint32_t replicas;         // its verify.replicas
    uint32_t n_ops;            // operators with a commit for it
    int append_rc;             // what an append of a record of it returns
} fake_task_t;

//  One appended record, copied.
typedef struct {
    uint32_t kind;                     // MS_RECORD_RESULT or _COMMIT
    uint8_t task_id[MS_HASH_BYTES];    // its task
    bool has_nonce;                    // RESULT: a reveal
    uint8_t nonce[MS_HASH_BYTES];      // RESULT: the nonce
    uint8_t commitment[MS_HASH_BYTES]; // COMMIT: the commitment
    char row[512];                     // RESULT: the row
} fake_record_t;

//  The fake node.
typedef struct {
    char root[256];                       // the temporary DATA_DIR
    char held_dir[300];                   // root/held
    fake_task_t tasks[MAX_TASKS];         // the store's tasks
    int n_tasks;                          // how many
    uint32_t pool_operators;              // what pool_operators answers
    int block_rc;                         // an append of n > 1 returns this
                                          // when not MS_OK
    int n_appends;                        // append calls
    size_t last_append_n;                 // records in the last call
    fake_record_t appended[MAX_APPENDED]; // records appended with MS_OK
    int n_appended;                       // how many
    int n_stored;                         // stored calls
    char stored_line[160];                // log_line of the last stored
    int n_events;                         // events emitted
    int n_fails;                          // fail calls
    char fail_reason[256];                // the last one's reason
    int n_requeues;                       // requeue calls
    int requeue_rc;                       // the last one's rc
    char log[16384];                      // logged lines, each ending in \n
    uint8_t node_id[MS_HASH_BYTES];       // our id
} fake_t;

static fake_task_t *
s_task(fake_t *f, const uint8_t *id)
{
    for (int i = 0; i < f->n_tasks; i++)
        if (memcmp(f->tasks[i].id, id, MS_HASH_BYTES) == 0)
            return &f->tasks[i];
    return NULL;
}

static void
s_fake_log(void *arg, const char *line)
{
    fake_t *f = arg;
    size_t used = strlen(f->log), room = sizeof f->log - used;
    if (room > 1)
        snprintf(f->log + used, room, "%s\n", line); // the tail is cut
}

static int
s_fake_append(void *arg, size_t n, const ms_store_payload_t *p)
{
    fake_t *f = arg;
    f->n_appends++;
    f->last_append_n = n;
    if (n > 1 && f->block_rc != MS_OK)
        return f->block_rc;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *tid = p[i].kind == MS_RECORD_COMMIT
                                 ? p[i].u.commit.task_id
                                 : p[i].u.result.task_id;
        fake_task_t *t = s_task(f, tid);
        if (t && t->append_rc != MS_OK)
            return t->append_rc;
    }
    for (size_t i = 0; i < n && f->n_appended < MAX_APPENDED; i++) {
        fake_record_t *r = &f->appended[f->n_appended++];
        memset(r, 0, sizeof *r);
        r->kind = p[i].kind;
        if (p[i].kind == MS_RECORD_COMMIT) {
            memcpy(r->task_id, p[i].u.commit.task_id, MS_HASH_BYTES);
            memcpy(r->commitment, p[i].u.commit.commitment, MS_HASH_BYTES);
        } else {
            memcpy(r->task_id, p[i].u.result.task_id, MS_HASH_BYTES);
            r->has_nonce = p[i].u.result.has_nonce;
            if (r->has_nonce)
                memcpy(r->nonce, p[i].u.result.nonce, MS_HASH_BYTES);
            snprintf(r->row, sizeof r->row, "%.*s", (int) p[i].u.result.row_len,
                     p[i].u.result.row_json);
        }
    }
    return MS_OK;
}

static int
s_fake_task_slots(void *arg, const uint8_t task_id[MS_HASH_BYTES],
                  uint32_t *n_slots, uint32_t *replicas)
{
    fake_task_t *t = s_task(arg, task_id);
    if (!t)
        return MS_ERR_NOTFOUND;
    *n_slots = t->n_slots;
    *replicas = t->replicas;
    return MS_OK;
}

static int
s_fake_commit_operators(void *arg, const uint8_t task_id[MS_HASH_BYTES],
                        uint32_t *n_ops)
{
    fake_task_t *t = s_task(arg, task_id);
    if (!t)
        return MS_ERR_NOTFOUND;
    *n_ops = t->n_ops;
    return MS_OK;
}

static uint32_t
s_fake_pool_operators(void *arg)
{
    fake_t *f = arg;
    return f->pool_operators;
}

static void
s_fake_stored(void *arg, ms_outbox_result_t *res)
{
    fake_t *f = arg;
    f->n_stored++;
    snprintf(f->stored_line, sizeof f->stored_line, "%s", res->log_line);
}

static void
s_fake_emit(void *arg, json_t *event)
{
    fake_t *f = arg;
    if (event)
        f->n_events++;
    json_decref(event);
}

static void
s_fake_fail(void *arg, const ms_outbox_result_t *res, const char *reason)
{
    fake_t *f = arg;
    (void) res;
    f->n_fails++;
    snprintf(f->fail_reason, sizeof f->fail_reason, "%s", reason);
}

static void
s_fake_requeue(void *arg, const ms_outbox_result_t *res, int rc)
{
    fake_t *f = arg;
    (void) res;
    f->n_requeues++;
    f->requeue_rc = rc;
}

static int
s_setup(void **state)
{
    fake_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->root, sizeof f->root, "/tmp/ms_outbox_test.XXXXXX");
    if (!mkdtemp(f->root)) {
        free(f);
        return -1;
    }
    snprintf(f->held_dir, sizeof f->held_dir, "%s/held", f->root);
    if (mkdir(f->held_dir, 0700) != 0) {
        ms_tf_rm_rf(f->root);
        free(f);
        return -1;
    }
    memset(f->node_id, 0xAB, sizeof f->node_id);
    f->pool_operators = 2;
    *state = f;
    return 0;
}

static int
s_teardown(void **state)
{
    fake_t *f = *state;
    ms_tf_rm_rf(f->root);
    free(f);
    return 0;
}

//  A new outbox on F's dir, with room for MAX_QUEUED results of a turn.
static ms_outbox_t *
s_outbox(fake_t *f, size_t max_queued)
{
    ms_outbox_config_t cfg = {.held_dir = f->held_dir,
                              .max_queued = max_queued};
    memcpy(cfg.node_id, f->node_id, MS_HASH_BYTES);
    ms_outbox_iface_t iface = {.arg = f,
                               .log = s_fake_log,
                               .append = s_fake_append,
                               .task_slots = s_fake_task_slots,
                               .commit_operators = s_fake_commit_operators,
                               .pool_operators = s_fake_pool_operators,
                               .stored = s_fake_stored,
                               .emit = s_fake_emit,
                               .fail = s_fake_fail,
                               .requeue = s_fake_requeue};
    ms_outbox_t *box = ms_outbox_new(&cfg, &iface);
    assert_non_null(box);
    return box;
}

//  Add a task (id from TAG) to the fake store; returns it.
static fake_task_t *
s_add_task(fake_t *f, uint8_t tag, uint32_t replicas)
{
    assert_true(f->n_tasks < MAX_TASKS);
    fake_task_t *t = &f->tasks[f->n_tasks++];
    memset(t, 0, sizeof *t);
    memset(t->id, tag, MS_HASH_BYTES);
    t->n_slots = replicas;
    t->replicas = replicas;
    t->n_ops = 0;
    t->append_rc = MS_OK;
    return t;
}

//  Push a result of task T (ROW: the canonical row) to BOX.
static void
s_push(ms_outbox_t *box, const fake_task_t *t, const char *row)
{
    ms_outbox_result_t res;
    memset(&res, 0, sizeof res);
    memcpy(res.task_id.bytes, t->id, MS_HASH_BYTES);
    memset(res.sweep_id.bytes, 0x5E, MS_HASH_BYTES);
    res.slot = 1;
    res.epoch = 3;
    res.train = true;
    res.train_seconds = 1.5;
    res.status = MS_RESULT_STATUS_OK;
    if (row) {
        res.row = strdup(row);
        assert_non_null(res.row);
        res.row_len = strlen(row);
    }
    res.event = json_pack("{s:s}", "event", "result");
    snprintf(res.log_line, sizeof res.log_line, "task %02x done", t->id[0]);
    ms_outbox_push(box, &res);
    assert_null(res.row); // taken
    assert_null(res.event);
}

//  The path of T's held file.
static void
s_held_file(const fake_t *f, const fake_task_t *t, char *path, size_t n)
{
    ms_hash_t h;
    memcpy(h.bytes, t->id, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    snprintf(path, n, "%s/%s", f->held_dir, hex);
}

static bool
s_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool
s_logged(const fake_t *f, const char *part)
{
    return strstr(f->log, part) != NULL;
}

//  R is the reveal of the commit C: the nonce it carries makes C's
//  commitment for our id and the row.
static void
s_assert_reveals(const fake_t *f, const fake_record_t *c,
                 const fake_record_t *r)
{
    assert_int_equal(c->kind, MS_RECORD_COMMIT);
    assert_int_equal(r->kind, MS_RECORD_RESULT);
    assert_memory_equal(c->task_id, r->task_id, MS_HASH_BYTES);
    assert_true(r->has_nonce);
    uint8_t expect[MS_HASH_BYTES];
    assert_int_equal(ms_store_payload_commitment(f->node_id, r->nonce, r->row,
                                                 strlen(r->row), expect),
                     MS_OK);
    assert_memory_equal(expect, c->commitment, MS_HASH_BYTES);
}

//  --------------------------------------------------------------------------
//  replicas 1: published at once, nothing held.

static void
test_replicas_one_published_at_once(void **state)
{
    fake_t *f = *state;
    fake_task_t *t = s_add_task(f, 0x11, 1);
    ms_outbox_t *box = s_outbox(f, 4);
    s_push(box, t, S_ROW);
    assert_true(ms_outbox_queued(box, t->id));
    assert_int_equal(ms_outbox_stats(box).n_queued, 1);
    assert_int_equal(f->n_appends, 0); // not before the flush
    ms_outbox_flush(box);
    assert_false(ms_outbox_queued(box, t->id));
    assert_int_equal(f->n_appends, 1);
    assert_int_equal(f->n_appended, 1);
    assert_int_equal(f->appended[0].kind, MS_RECORD_RESULT);
    assert_false(f->appended[0].has_nonce);
    assert_string_equal(f->appended[0].row, S_ROW);
    assert_int_equal(f->n_stored, 1);
    assert_string_equal(f->stored_line, "task 11 done");
    assert_true(s_logged(f, "task 11 done"));
    assert_int_equal(f->n_events, 1);
    assert_false(ms_outbox_held(box, t->id));
    assert_int_equal(ms_outbox_stats(box).n_held, 0);
    char path[512];
    s_held_file(f, t, path, sizeof path);
    assert_false(s_exists(path));
    ms_outbox_flush(box); // nothing queued: no append
    assert_int_equal(f->n_appends, 1);
    ms_outbox_destroy(&box);
    assert_null(box);
    ms_outbox_destroy(&box); // NULL-safe
}

//  --------------------------------------------------------------------------
//  replicas 2: committed and held until commits of 2 operators are in.

static void
test_held_until_commits(void **state)
{
    fake_t *f = *state;
    fake_task_t *t = s_add_task(f, 0x22, 2);
    t->n_ops = 1; // ours
    ms_outbox_t *box = s_outbox(f, 4);
    s_push(box, t, S_ROW);
    ms_outbox_flush(box);
    assert_int_equal(f->n_appended, 1);
    assert_int_equal(f->appended[0].kind, MS_RECORD_COMMIT);
    assert_int_equal(f->n_stored, 0);
    assert_int_equal(f->n_events, 0);
    assert_true(ms_outbox_held(box, t->id));
    assert_false(ms_outbox_queued(box, t->id));
    assert_int_equal(ms_outbox_stats(box).n_held, 1);
    char path[512];
    s_held_file(f, t, path, sizeof path);
    assert_true(s_exists(path));
    assert_true(s_logged(f, "committed, result held until 2 operator(s)"));

    ms_outbox_reveal(box, 1000); // one commit of two: nothing
    assert_int_equal(f->n_appended, 1);
    assert_true(ms_outbox_held(box, t->id));

    t->n_ops = 2;
    ms_outbox_reveal(box, 1050); // within 100 ms of the last pass
    assert_int_equal(f->n_appended, 1);
    assert_true(ms_outbox_held(box, t->id));

    ms_outbox_reveal(box, 1100);
    assert_int_equal(f->n_appended, 2);
    s_assert_reveals(f, &f->appended[0], &f->appended[1]);
    assert_string_equal(f->appended[1].row, S_ROW);
    assert_false(ms_outbox_held(box, t->id));
    assert_false(s_exists(path));
    assert_int_equal(f->n_stored, 1);
    assert_int_equal(f->n_events, 1);
    assert_int_equal(ms_outbox_stats(box).n_reveals, 1);
    assert_int_equal(ms_outbox_stats(box).n_held, 0);
    assert_true(s_logged(f, "revealed (commits of 2 operator(s), 2 needed)"));
    ms_outbox_destroy(&box);
}

//  --------------------------------------------------------------------------
//  The pool's operator count caps what a held result waits for; a task
//  that wants no slot any more is revealed whatever its commits.

static void
test_needed_is_capped_and_final_reveals(void **state)
{
    fake_t *f = *state;
    fake_task_t *a = s_add_task(f, 0x31, 3);
    fake_task_t *b = s_add_task(f, 0x32, 3);
    a->n_ops = 1;
    b->n_ops = 1;
    f->pool_operators = 2;
    ms_outbox_t *box = s_outbox(f, 4);
    s_push(box, a, S_ROW);
    s_push(box, b, S_ROW);
    ms_outbox_flush(box);
    assert_int_equal(f->last_append_n, 2); // one block
    assert_int_equal(ms_outbox_stats(box).n_held, 2);
    ms_outbox_reveal(box, 0);
    assert_int_equal(ms_outbox_stats(box).n_held, 2);

    b->n_slots = 0; // b's verdict is final
    ms_outbox_reveal(box, 200);
    assert_true(ms_outbox_held(box, a->id));
    assert_false(ms_outbox_held(box, b->id));

    a->n_ops = 2; // 2 of replicas 3, but the pool has 2 operators
    ms_outbox_reveal(box, 400);
    assert_false(ms_outbox_held(box, a->id));
    assert_int_equal(ms_outbox_stats(box).n_reveals, 2);
    assert_true(s_logged(f, "revealed (commits of 2 operator(s), 2 needed)"));
    ms_outbox_destroy(&box);
}

//  --------------------------------------------------------------------------
//  A held result survives a restart: a new outbox on the same dir reads
//  its file back, and reveals what the commit promised.

static void
test_held_survives_restart(void **state)
{
    fake_t *f = *state;
    fake_task_t *t = s_add_task(f, 0x44, 2);
    t->n_ops = 1;
    ms_outbox_t *box = s_outbox(f, 4);
    s_push(box, t, S_ROW);
    ms_outbox_flush(box);
    assert_true(ms_outbox_held(box, t->id));
    ms_outbox_destroy(&box); // the node stops: the file stays
    char path[512];
    s_held_file(f, t, path, sizeof path);
    assert_true(s_exists(path));

    box = s_outbox(f, 4);
    assert_false(ms_outbox_held(box, t->id)); // nothing read yet
    ms_outbox_load(box);
    assert_true(ms_outbox_held(box, t->id));
    assert_int_equal(ms_outbox_stats(box).n_held, 1);
    assert_true(s_logged(f, "1 committed result(s) held from the last run"));
    ms_outbox_load(box); // read once only
    assert_int_equal(ms_outbox_stats(box).n_held, 1);

    ms_outbox_reveal(box, 0); // still one commit
    assert_int_equal(f->n_appended, 1);
    t->n_ops = 2;
    ms_outbox_reveal(box, 100);
    assert_int_equal(f->n_appended, 2);
    s_assert_reveals(f, &f->appended[0], &f->appended[1]);
    assert_string_equal(f->appended[1].row, S_ROW);
    assert_int_equal(f->n_stored, 1);
    assert_string_equal(f->stored_line,
                        "task 444444444444: held result revealed (after a "
                        "restart)");
    assert_false(s_exists(path));
    ms_outbox_destroy(&box);

    box = s_outbox(f, 4); // and nothing comes back after the reveal
    ms_outbox_load(box);
    assert_int_equal(ms_outbox_stats(box).n_held, 0);
    ms_outbox_destroy(&box);
}

//  --------------------------------------------------------------------------
//  A held file that does not parse is logged and left for the operator.

static void
test_unreadable_held_file_left(void **state)
{
    fake_t *f = *state;
    fake_task_t *t = s_add_task(f, 0x55, 2);
    char path[512];
    s_held_file(f, t, path, sizeof path);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs("{\"nonce\": 12", fp);
    fclose(fp);
    ms_outbox_t *box = s_outbox(f, 4);
    ms_outbox_load(box);
    assert_int_equal(ms_outbox_stats(box).n_held, 0);
    assert_true(s_logged(f, "unreadable"));
    assert_true(s_exists(path));
    ms_outbox_destroy(&box);
}

//  --------------------------------------------------------------------------
//  A reveal the store has no room for is tried again on a later pass.

static void
test_reveal_retried_when_store_full(void **state)
{
    fake_t *f = *state;
    fake_task_t *t = s_add_task(f, 0x66, 2);
    t->n_ops = 1;
    ms_outbox_t *box = s_outbox(f, 4);
    s_push(box, t, S_ROW);
    ms_outbox_flush(box);
    t->n_ops = 2;
    t->append_rc = MS_ERR_STORE_FULL;
    ms_outbox_reveal(box, 0);
    assert_true(ms_outbox_held(box, t->id));
    assert_int_equal(f->n_stored, 0);
    assert_int_equal(f->n_requeues, 0);
    t->append_rc = MS_OK;
    ms_outbox_reveal(box, 100);
    assert_false(ms_outbox_held(box, t->id));
    assert_int_equal(f->n_stored, 1);
    ms_outbox_destroy(&box);
}

//  --------------------------------------------------------------------------
//  One bad row loses only itself: an invalid row is a task-class failure,
//  a store error requeues, the good one is stored.

static void
test_bad_rows_lose_only_themselves(void **state)
{
    fake_t *f = *state;
    fake_task_t *good = s_add_task(f, 0x71, 1);
    fake_task_t *bad = s_add_task(f, 0x72, 1);
    fake_task_t *io = s_add_task(f, 0x73, 1);
    bad->append_rc = MS_ERR_INVALID;
    io->append_rc = MS_ERR_IO;
    ms_outbox_t *box = s_outbox(f, 4);
    s_push(box, good, S_ROW);
    s_push(box, bad, S_ROW);
    s_push(box, io, S_ROW);
    ms_outbox_flush(box);
    assert_int_equal(f->n_appends, 4); // the block, then one by one
    assert_int_equal(f->n_appended, 1);
    assert_memory_equal(f->appended[0].task_id, good->id, MS_HASH_BYTES);
    assert_int_equal(f->n_stored, 1);
    assert_int_equal(f->n_fails, 1);
    assert_non_null(strstr(f->fail_reason, "refused as invalid"));
    assert_int_equal(f->n_requeues, 1);
    assert_int_equal(f->requeue_rc, MS_ERR_IO);
    assert_true(s_logged(f, "cannot store result"));
    assert_int_equal(ms_outbox_stats(box).n_queued, 0);
    ms_outbox_destroy(&box);
}

//  --------------------------------------------------------------------------
//  A commit that cannot be appended leaves no held file behind.

static void
test_failed_commit_leaves_no_file(void **state)
{
    fake_t *f = *state;
    fake_task_t *t = s_add_task(f, 0x81, 2);
    t->append_rc = MS_ERR_IO;
    ms_outbox_t *box = s_outbox(f, 4);
    s_push(box, t, S_ROW);
    ms_outbox_flush(box);
    char path[512];
    s_held_file(f, t, path, sizeof path);
    assert_false(s_exists(path));
    assert_false(ms_outbox_held(box, t->id));
    assert_int_equal(f->n_requeues, 1);
    ms_outbox_destroy(&box);
}

//  --------------------------------------------------------------------------
//  A result without a row is lost at once; a full queue is flushed
//  before the next result is queued.

static void
test_no_row_and_full_queue(void **state)
{
    fake_t *f = *state;
    fake_task_t *t = s_add_task(f, 0x91, 1);
    ms_outbox_t *box = s_outbox(f, 2);
    s_push(box, t, NULL);
    assert_int_equal(f->n_requeues, 1);
    assert_int_equal(f->requeue_rc, MS_ERR_NOMEM);
    assert_int_equal(ms_outbox_stats(box).n_queued, 0);
    s_push(box, t, S_ROW);
    s_push(box, t, S_ROW);
    assert_int_equal(f->n_appends, 0);
    s_push(box, t, S_ROW); // the queue is full: flushed first
    assert_int_equal(f->n_appends, 1);
    assert_int_equal(f->last_append_n, 2);
    assert_int_equal(ms_outbox_stats(box).n_queued, 1);
    ms_outbox_destroy(&box); // drops the queued one
}

//  --------------------------------------------------------------------------
//  ms_outbox_row_new and ms_outbox_result_fill: the row is the worker's
//  body without peak_rss_bytes plus who, where and what; the fingerprint
//  ignores calibration_gflops; the result carries the canonical row, its
//  status, train_seconds, the platform, the log line and the event.

static void
test_row_and_result(void **state)
{
    (void) state;
    ms_hash_t tid, sid;
    memset(tid.bytes, 0xab, MS_HASH_BYTES);
    memset(sid.bytes, 0xcd, MS_HASH_BYTES);
    json_t *config = json_pack("{s:i}", "width", 8);
    json_t *body =
        json_pack("{s:s, s:i, s:f, s:f, s:I, s:{s:s, s:f}}", "status", "ok",
                  "epochs", 2, "val_accuracy", 0.5, "train_seconds", 1.5,
                  "peak_rss_bytes", (json_int_t) 3 << 20, "platform", "cpu",
                  "x86", "calibration_gflops", 12.0);
    // the keys of the event a worker's report has (null when unknown)
    json_object_set_new(body, "test_accuracy", json_real(0.25));
    json_object_set_new(body, "seconds_per_epoch", json_null());
    json_object_set_new(body, "weights_digest", json_null());
    json_t *row = ms_outbox_row_new(body, &tid, &sid, config, "n0de", "op");
    assert_non_null(row);
    assert_null(json_object_get(row, "peak_rss_bytes"));
    assert_int_equal(json_integer_value(json_object_get(row, "epochs")), 2);
    char thex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&tid, thex);
    assert_string_equal(json_string_value(json_object_get(row, "task_id")),
                        thex);
    assert_ptr_equal(json_object_get(row, "config"), config);
    assert_string_equal(json_string_value(json_object_get(row, "node_id")),
                        "n0de");
    assert_string_equal(json_string_value(json_object_get(row, "operator")),
                        "op");
    assert_string_equal(json_string_value(json_object_get(row, "verdict")),
                        "pending");
    assert_true(json_is_true(json_object_get(row, "counted")));
    const char *fp = json_string_value(json_object_get(row, "fingerprint"));
    assert_non_null(fp);
    assert_int_equal(strlen(fp), MS_HASH_HEX_LEN);

    // Another calibration, same platform: the same fingerprint; another
    // platform: another; none: null.
    json_t *body2 = json_deep_copy(body);
    json_object_set_new(json_object_get(body2, "platform"),
                        "calibration_gflops", json_real(99.0));
    json_t *row2 = ms_outbox_row_new(body2, &tid, &sid, config, "n", "o");
    assert_string_equal(json_string_value(json_object_get(row2, "fingerprint")),
                        fp);
    json_object_set_new(json_object_get(body2, "platform"), "cpu",
                        json_string("arm"));
    json_decref(row2);
    row2 = ms_outbox_row_new(body2, &tid, &sid, config, "n", "o");
    assert_string_not_equal(
        json_string_value(json_object_get(row2, "fingerprint")), fp);
    json_decref(row2);
    json_object_del(body2, "platform");
    row2 = ms_outbox_row_new(body2, &tid, &sid, config, "n", "o");
    assert_true(json_is_null(json_object_get(row2, "fingerprint")));

    ms_outbox_result_t res = {.task_id = tid, .sweep_id = sid, .train = true};
    ms_outbox_result_fill(&res, row, body);
    assert_non_null(res.row);
    assert_int_equal(res.status, MS_RESULT_STATUS_OK);
    assert_true(res.train_seconds == 1.5);
    assert_ptr_equal(res.platform, json_object_get(body, "platform"));
    assert_non_null(strstr(res.log_line, "done: ok (worker peak RSS 3.0 MiB)"));
    assert_string_equal(json_string_value(json_object_get(res.event, "event")),
                        "result");
    assert_int_equal(
        json_integer_value(json_object_get(res.event, "peak_rss_bytes")),
        3 << 20);
    json_t *back = json_loadb(res.row, res.row_len, 0, NULL);
    assert_true(json_equal(back, row));
    json_decref(back);
    ms_outbox_result_clear(&res);

    // Without a platform: none in the result.
    ms_outbox_result_t res2 = {.task_id = tid, .sweep_id = sid};
    ms_outbox_result_fill(&res2, row2, body2);
    assert_null(res2.platform);
    ms_outbox_result_clear(&res2);

    // The status of a row.
    json_object_set_new(row, "status", json_string("diverged"));
    assert_int_equal(ms_outbox_row_status(row), MS_RESULT_STATUS_DIVERGED);
    json_object_set_new(row, "status", json_string("failed"));
    assert_int_equal(ms_outbox_row_status(row), MS_RESULT_STATUS_FAILED);
    json_object_del(row, "status");
    assert_int_equal(ms_outbox_row_status(row), MS_RESULT_STATUS_FAILED);
    assert_int_equal(ms_outbox_row_status(NULL), MS_RESULT_STATUS_FAILED);
    json_decref(row2);
    json_decref(body2);
    json_decref(row);
    json_decref(body);
    json_decref(config);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_replicas_one_published_at_once,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_held_until_commits, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_needed_is_capped_and_final_reveals,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_held_survives_restart, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_unreadable_held_file_left, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_reveal_retried_when_store_full,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_rows_lose_only_themselves,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_failed_commit_leaves_no_file,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_no_row_and_full_queue, s_setup,
                                        s_teardown),
        cmocka_unit_test(test_row_and_result),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
