/*  =========================================================================
    ms_store_log_test - the store's record log and derived tables

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    docs/POOL.md "Records": append and read blocks back, merge with gaps
    and duplicates, equivocation kept as evidence, version vectors and their
    digests, derived state equal under any arrival order (randomised, many
    seeds), the first-result-counts rule, a wiped node's new incarnation,
    the failure rule with the member count, 100,000 records merged and
    read back (records/s printed), a merge killed with SIGKILL, and sweep
    controls folded by logical time in any arrival order.
*/
#include "ms_store.h"
#include "ms_store_payload.h"

#include "ms_hash.h"
#include "ms_identity.h"
#include "ms_rng.h"
#include "ms_spec.h"
#include "ms_test_fs.h"
#include "ms_wire_sign.h"

#include <dirent.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_store_fixture.h"

#define ID MS_STORE_ID_BYTES

typedef ms_sf_t fixture_t;

static int
s_setup(void **state)
{
    return ms_sf_setup(state, "ms_store_log_test");
}

// One encoded record (owned bytes).
typedef struct {
    uint32_t kind;
    uint8_t *bytes;
    size_t len;
} rec_t;

//  --------------------------------------------------------------------------
//  Encode a payload into R (assert on failure).

static void
s_enc(rec_t *r, const ms_store_payload_t *p)
{
    r->kind = p->kind;
    assert_int_equal(ms_store_payload_encode(p, &r->bytes, &r->len), MS_OK);
}

// Sweeps made by s_rec_sweep, by tag: their ids and task ids (a sweep
// record carries a canonical spec; the ids are hashes of it).
typedef struct {
    bool made;
    uint8_t sweep_id[ID];
    uint8_t *task_ids; // n_tasks * ID
    size_t n_tasks;
} sweep_reg_t;
static sweep_reg_t s_sweeps[256];

//  --------------------------------------------------------------------------
//  Task I of sweep TAG: its real id once the sweep was made, else a
//  made-up id (records about tasks of sweeps not known are fine).

static void
s_task_id(uint8_t id[ID], uint8_t tag, uint32_t i)
{
    if (s_sweeps[tag].made && i < s_sweeps[tag].n_tasks)
        memcpy(id, s_sweeps[tag].task_ids + (size_t) i * ID, ID);
    else
        ms_sf_id(id, tag, i);
}

//  --------------------------------------------------------------------------
//  Payload builders. A sweep of N_TASKS tasks named after TAG (the same
//  tag always gives the same spec, so the same ids).

static void
s_rec_sweep(rec_t *r, uint8_t tag, uint32_t n_tasks, int32_t prio,
            int64_t created)
{
    char name[32];
    snprintf(name, sizeof name, "sweep-%u", tag);
    ms_sf_sweep_t sw;
    ms_sf_sweep_seeds(&sw, name, 8, n_tasks);
    const ms_spec_t *spec = sw.spec;
    sweep_reg_t *reg = &s_sweeps[tag];
    if (!reg->made) {
        reg->made = true;
        memcpy(reg->sweep_id, ms_spec_sweep_id(spec)->bytes, ID);
        reg->n_tasks = n_tasks;
        reg->task_ids = malloc((size_t) n_tasks * ID);
        for (uint32_t i = 0; i < n_tasks; i++)
            memcpy(reg->task_ids + (size_t) i * ID,
                   ms_spec_task_id(spec, i)->bytes, ID);
    }
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, reg->sweep_id, ID);
    p.u.sweep.spec_json = ms_spec_canonical(spec, &p.u.sweep.spec_len);
    p.u.sweep.priority = prio;
    p.u.sweep.created_at_ms = created;
    s_enc(r, &p);
    ms_sf_sweep_free(&sw);
}

static void
s_rec_result(rec_t *r, uint8_t tag, uint32_t task, uint32_t status, double acc)
{
    static const char *names[] = {"ok", "diverged", "failed"};
    char row[128];
    snprintf(row, sizeof row, "{\"task\":%u,\"acc\":%.4f,\"status\":\"%s\"}",
             task, acc, names[status]);
    ms_store_payload_t p = {.kind = MS_RECORD_RESULT};
    s_task_id(p.u.result.task_id, tag, task);
    p.u.result.epoch = 1;
    p.u.result.row_json = row;
    p.u.result.row_len = strlen(row);
    s_enc(r, &p);
}

static void
s_rec_claim(rec_t *r, uint32_t kind, uint8_t tag, uint32_t task, uint32_t slot,
            uint64_t epoch, uint32_t reason)
{
    ms_store_payload_t p = {.kind = kind};
    s_task_id(p.u.claim.task_id, tag, task);
    p.u.claim.slot = slot;
    p.u.claim.epoch = epoch;
    p.u.claim.reason = reason;
    s_enc(r, &p);
}

static void
s_rec_failure(rec_t *r, uint8_t tag, uint32_t task, uint32_t cls)
{
    ms_store_payload_t p = {.kind = MS_RECORD_FAILURE};
    s_task_id(p.u.failure.task_id, tag, task);
    p.u.failure.failure_class = cls;
    p.u.failure.reason = "diverged at epoch 1";
    s_enc(r, &p);
}

static void
s_rec_control(rec_t *r, uint8_t tag, uint32_t action, int32_t prio)
{
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP_CONTROL};
    memcpy(p.u.control.sweep_id, s_sweeps[tag].sweep_id, ID);
    p.u.control.action = action;
    p.u.control.priority = prio;
    s_enc(r, &p);
}

static void
s_rec_dataset(rec_t *r, uint8_t tag)
{
    ms_store_payload_t p = {.kind = MS_RECORD_DATASET};
    ms_sf_id(p.u.dataset.hash, tag, 7);
    p.u.dataset.name = "fashion-mnist";
    s_enc(r, &p);
}

//  A sweep-control with a logical time (0: a record of a node that
//  predates logical times).
static void
s_rec_control_at(rec_t *r, uint8_t tag, uint32_t action, int32_t prio,
                 uint64_t lamport)
{
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP_CONTROL};
    memcpy(p.u.control.sweep_id, s_sweeps[tag].sweep_id, ID);
    p.u.control.action = action;
    p.u.control.priority = prio;
    p.u.control.lamport = lamport;
    s_enc(r, &p);
}

//  --------------------------------------------------------------------------
//  A sweep's state, via ms_store_get_sweep.

static ms_store_sweep_t *
s_sweep(ms_store_t *store, uint8_t tag)
{
    uint8_t id[ID];
    memcpy(id, s_sweeps[tag].sweep_id, ID);
    ms_store_sweep_t *sweep = NULL;
    assert_int_equal(ms_store_get_sweep(store, id, &sweep), MS_OK);
    return sweep;
}

//  --------------------------------------------------------------------------
//  A task's state.

static ms_task_state_t
s_task_state(ms_store_t *store, uint8_t tag, uint32_t i)
{
    uint8_t id[ID];
    s_task_id(id, tag, i);
    ms_store_task_t *task = NULL;
    assert_int_equal(ms_store_get_task(store, id, &task), MS_OK);
    ms_task_state_t st = task->state;
    ms_store_task_destroy(&task);
    return st;
}

// Blocks read back by ms_store_read_blocks (copies).
typedef struct {
    uint8_t origin[ID];
    uint64_t incarnation;
    uint64_t first_seq;
    size_t n;
    uint32_t kinds[MS_RECORD_MAX_BLOCK];
    uint8_t *payloads[MS_RECORD_MAX_BLOCK];
    size_t lens[MS_RECORD_MAX_BLOCK];
    uint8_t *sig;
    size_t sig_len;
} blk_t;

typedef struct {
    blk_t *blocks;
    size_t n, cap;
} blks_t;

static int
s_collect_block(void *arg, const uint8_t *origin, uint64_t inc, uint64_t first,
                size_t n, const uint32_t *kinds, const uint8_t *const *payloads,
                const size_t *lens, const uint8_t *sig, size_t sig_len)
{
    blks_t *bs = arg;
    if (bs->n == bs->cap) {
        bs->cap = bs->cap ? bs->cap * 2 : 64;
        bs->blocks = realloc(bs->blocks, bs->cap * sizeof *bs->blocks);
    }
    blk_t *b = &bs->blocks[bs->n++];
    memset(b, 0, sizeof *b);
    memcpy(b->origin, origin, ID);
    b->incarnation = inc;
    b->first_seq = first;
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        b->kinds[i] = kinds[i];
        b->lens[i] = lens[i];
        b->payloads[i] = malloc(lens[i] + 1);
        memcpy(b->payloads[i], payloads[i], lens[i]);
    }
    if (sig_len) {
        b->sig = malloc(sig_len);
        memcpy(b->sig, sig, sig_len);
        b->sig_len = sig_len;
    }
    return 0;
}

static void
s_blks_free(blks_t *bs)
{
    for (size_t i = 0; i < bs->n; i++) {
        for (size_t j = 0; j < bs->blocks[i].n; j++)
            free(bs->blocks[i].payloads[j]);
        free(bs->blocks[i].sig);
    }
    free(bs->blocks);
    memset(bs, 0, sizeof *bs);
}

//  --------------------------------------------------------------------------
//  Merge one collected block into STORE.

static int
s_merge(ms_store_t *store, const blk_t *b, ms_store_merge_result_t *out)
{
    return ms_store_merge_block(
        store, b->origin, b->incarnation, b->first_seq, b->n, b->kinds,
        (const uint8_t *const *) b->payloads, b->lens, b->sig, b->sig_len, out);
}

// Vector entries collected.
typedef struct {
    uint8_t origin[8][ID];
    uint64_t inc[8];
    uint64_t seq[8];
    size_t n;
} vec_t;

static int
s_collect_vec(void *arg, const uint8_t *origin, uint64_t inc, uint64_t seq)
{
    vec_t *v = arg;
    if (v->n < 8) {
        memcpy(v->origin[v->n], origin, ID);
        v->inc[v->n] = inc;
        v->seq[v->n] = seq;
    }
    v->n++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Everything a store holds, as blocks (over its vector).

static void
s_all_blocks(ms_store_t *store, blks_t *out)
{
    vec_t v = {0};
    assert_int_equal(ms_store_vector(store, s_collect_vec, &v), MS_OK);
    assert_true(v.n <= 8);
    for (size_t i = 0; i < v.n; i++)
        assert_int_equal(ms_store_read_blocks(store, v.origin[i], v.inc[i], 1,
                                              v.seq[i], 0, s_collect_block,
                                              out),
                         MS_OK);
}

//  ==========================================================================
//  Tests

//  --------------------------------------------------------------------------
//  Append single records and an explicit block; read them back whole.

static void
test_append_read_blocks(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "a", 1 << 20);
    uint8_t me[ID];
    ms_sf_id(me, 0xA1, 0);
    rec_t r[8];
    s_rec_sweep(&r[0], 1, 4, 0, 1000);
    ms_record_key_t key;
    assert_int_equal(
        ms_store_append(store, me, r[0].kind, r[0].bytes, r[0].len, &key),
        MS_OK);
    assert_memory_equal(key.origin, me, ID);
    assert_int_equal(key.incarnation, ms_store_incarnation(store));
    assert_int_equal(key.seq, 1);
    s_rec_claim(&r[1], MS_RECORD_CLAIM, 1, 0, 0, 1, 0);
    assert_int_equal(
        ms_store_append(store, me, r[1].kind, r[1].bytes, r[1].len, &key),
        MS_OK);
    assert_int_equal(key.seq, 2);
    // An unknown kind is stored and served.
    const char *opaque = "\x01\x02\x03";
    assert_int_equal(ms_store_append(store, me, 42, opaque, 3, &key), MS_OK);
    assert_int_equal(key.seq, 3);
    // A known kind that does not decode is refused, nothing stored.
    assert_int_equal(
        ms_store_append(store, me, MS_RECORD_RESULT, "xx", 2, NULL),
        MS_ERR_INVALID);
    for (int i = 2; i < 7; i++)
        s_rec_result(&r[i], 1, (uint32_t) (i % 4), MS_RESULT_STATUS_OK,
                     0.5 + i / 100.0);
    uint32_t kinds[5];
    const void *pls[5];
    size_t lens[5];
    for (int i = 0; i < 5; i++) {
        kinds[i] = r[2 + i].kind;
        pls[i] = r[2 + i].bytes;
        lens[i] = r[2 + i].len;
    }
    ms_record_key_t keys[5];
    assert_int_equal(ms_store_append_many(store, me, 5, kinds, pls, lens, keys),
                     MS_OK);
    assert_int_equal(keys[0].seq, 4);
    assert_int_equal(keys[4].seq, 8);
    assert_int_equal(ms_store_append_many(store, me, 0, kinds, pls, lens, keys),
                     MS_ERR_INVALID);

    uint64_t inc = ms_store_incarnation(store), held;
    assert_int_equal(ms_store_held(store, me, inc, &held), MS_OK);
    assert_int_equal(held, 8);
    blks_t bs = {0};
    assert_int_equal(
        ms_store_read_blocks(store, me, inc, 1, 100, 0, s_collect_block, &bs),
        MS_OK);
    assert_int_equal(bs.n, 4); // three single appends, one block of 5
    assert_int_equal(bs.blocks[0].first_seq, 1);
    assert_int_equal(bs.blocks[0].n, 1);
    assert_int_equal(bs.blocks[0].kinds[0], MS_RECORD_SWEEP);
    assert_int_equal(bs.blocks[0].lens[0], r[0].len);
    assert_memory_equal(bs.blocks[0].payloads[0], r[0].bytes, r[0].len);
    assert_int_equal(bs.blocks[2].kinds[0], 42);
    assert_memory_equal(bs.blocks[2].payloads[0], opaque, 3);
    assert_int_equal(bs.blocks[3].first_seq, 4);
    assert_int_equal(bs.blocks[3].n, 5);
    for (int i = 0; i < 5; i++)
        assert_memory_equal(bs.blocks[3].payloads[i], r[2 + i].bytes,
                            r[2 + i].len);
    s_blks_free(&bs);
    // A range inside a block gives the whole block.
    assert_int_equal(
        ms_store_read_blocks(store, me, inc, 6, 7, 0, s_collect_block, &bs),
        MS_OK);
    assert_int_equal(bs.n, 1);
    assert_int_equal(bs.blocks[0].first_seq, 4);
    s_blks_free(&bs);
    // max_records stops after the block that reaches it.
    assert_int_equal(
        ms_store_read_blocks(store, me, inc, 1, 100, 2, s_collect_block, &bs),
        MS_OK);
    assert_int_equal(bs.n, 2);
    s_blks_free(&bs);
    // Past the end, or another incarnation: nothing.
    assert_int_equal(
        ms_store_read_blocks(store, me, inc, 9, 100, 0, s_collect_block, &bs),
        MS_OK);
    assert_int_equal(ms_store_read_blocks(store, me, inc + 1, 1, 100, 0,
                                          s_collect_block, &bs),
                     MS_OK);
    assert_int_equal(bs.n, 0);

    // Derived: the sweep exists with 4 tasks; results made tasks done.
    ms_store_sweep_t *sw = s_sweep(store, 1);
    assert_int_equal(sw->n_tasks, 4);
    assert_true(sw->created_at_ms > 1600000000000LL); // local arrival
    assert_int_equal(sw->counts[MS_TASK_DONE], 4);
    assert_int_equal(sw->state, MS_SWEEP_DONE);
    ms_store_sweep_destroy(&sw);
    uint64_t n_results;
    assert_int_equal(ms_store_results_count(store, &n_results), MS_OK);
    assert_int_equal(n_results, 4); // (task, node): 4 tasks, one node
    ms_store_stats_t st;
    ms_store_stats(store, &st);
    assert_int_equal(st.n_records, 8);
    assert_int_equal(st.n_blocks, 4);
    assert_int_equal(st.n_equivocations, 0);
    for (int i = 0; i < 7; i++)
        free(r[i].bytes);
    ms_store_destroy(&store);
}

// Concurrent appenders.
typedef struct {
    ms_store_t *store;
    const uint8_t *origin;
    int n;
} appender_t;

static void *
s_appender(void *arg)
{
    appender_t *a = arg;
    for (int i = 0; i < a->n; i++) {
        char text[32];
        int len = snprintf(text, sizeof text, "opaque %d", i);
        if (ms_store_append(a->store, a->origin, 77, text, (size_t) len,
                            NULL) != MS_OK)
            return (void *) 1;
    }
    return NULL;
}

// Checks a log's blocks tile 1..held.
typedef struct {
    uint64_t next;   // the seq the next block must start at
    size_t n_blocks; // blocks seen
    size_t max_n;    // largest block
} tile_t;

static int
s_tile_block(void *arg, const uint8_t *origin, uint64_t inc, uint64_t first,
             size_t n, const uint32_t *kinds, const uint8_t *const *payloads,
             const size_t *lens, const uint8_t *sig, size_t sig_len)
{
    (void) origin, (void) inc, (void) kinds, (void) payloads, (void) lens;
    (void) sig, (void) sig_len;
    tile_t *t = arg;
    if (first != t->next || n == 0 || n > MS_RECORD_MAX_BLOCK)
        return 1;
    t->next = first + n;
    t->n_blocks++;
    if (n > t->max_n)
        t->max_n = n;
    return 0;
}

//  --------------------------------------------------------------------------
//  Appends from many threads: one block per group commit, blocks tile
//  the log with no gap or overlap, at most 64 records each.

static void
test_group_commit_blocks(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "g", 1 << 20);
    uint8_t me[ID];
    ms_sf_id(me, 0xA2, 0);
    pthread_t th[8];
    appender_t a = {.store = store, .origin = me, .n = 40};
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, s_appender, &a);
    for (int i = 0; i < 8; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        assert_null(ret);
    }
    uint64_t inc = ms_store_incarnation(store), held;
    assert_int_equal(ms_store_held(store, me, inc, &held), MS_OK);
    assert_int_equal(held, 320);
    tile_t t = {.next = 1};
    assert_int_equal(
        ms_store_read_blocks(store, me, inc, 1, held, 0, s_tile_block, &t),
        MS_OK);
    assert_int_equal(t.next, 321);
    ms_store_stats_t st;
    ms_store_stats(store, &st);
    fprintf(stderr,
            "group commit: 320 appends in %zu blocks (largest %zu), "
            "%llu commits\n",
            t.n_blocks, t.max_n, (unsigned long long) st.n_commits);
    assert_int_equal(st.n_blocks, t.n_blocks);
    assert_true(t.n_blocks < 320); // several appends shared a commit
    assert_true(t.max_n <= MS_RECORD_MAX_BLOCK);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  The block signer: an Ed25519 signer of the test's identity.

typedef struct {
    ms_identity_t *id; // signs blocks of its own key
    uint8_t pool[32];  // pool id
    bool fail;         // refuse to sign (the append must fail)
    int calls;         // blocks signed
} signer_t;

static int
s_signer(void *arg, const uint8_t *origin, uint64_t inc, uint64_t first,
         size_t n, const uint32_t *kinds, const uint8_t *const *payloads,
         const size_t *lens, uint8_t *sig, size_t *sig_len)
{
    signer_t *sg = arg;
    *sig_len = 0;
    if (sg->fail)
        return MS_ERR_INVALID;
    ms_wire_block_view_t v = {.origin = origin,
                              .incarnation = inc,
                              .first_seq = first,
                              .n_records = n,
                              .kinds = kinds,
                              .payloads = payloads,
                              .lens = lens};
    int rc = ms_wire_block_sign(sg->id, sg->pool, &v, sig);
    if (rc == MS_OK)
        *sig_len = MS_WIRE_SIGNATURE_BYTES;
    sg->calls++;
    return rc;
}

//  Every block read back verifies under the pool id (s_tile_block's
//  cousin): counts blocks and records.
typedef struct {
    const uint8_t *pool; // pool id
    size_t n_blocks;     // blocks seen
    size_t n_records;    // records seen
    size_t n_bad;        // blocks that do not verify
} verify_ctx_t;

static int
s_verify_block(void *arg, const uint8_t *origin, uint64_t inc, uint64_t first,
               size_t n, const uint32_t *kinds, const uint8_t *const *payloads,
               const size_t *lens, const uint8_t *sig, size_t sig_len)
{
    verify_ctx_t *vc = arg;
    ms_wire_block_view_t v = {.origin = origin,
                              .incarnation = inc,
                              .first_seq = first,
                              .n_records = n,
                              .kinds = kinds,
                              .payloads = payloads,
                              .lens = lens};
    if (ms_wire_block_verify(vc->pool, &v, sig, sig_len) != MS_OK)
        vc->n_bad++;
    vc->n_blocks++;
    vc->n_records += n;
    return 0;
}

//  --------------------------------------------------------------------------
//  With a signer, every block the store appends is stored signed, blocks
//  that grew across the appends of a group commit included (signed
//  again, whole); a signer that fails fails the append, nothing stored.

static void
test_signed_blocks(void **state)
{
    fixture_t *fx = *state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/identity", fx->root);
    signer_t sg = {0};
    assert_int_equal(ms_identity_open(&sg.id, dir, NULL), MS_OK);
    memset(sg.pool, 0x42, sizeof sg.pool);
    ms_store_t *store = ms_sf_open(fx, "s", 1 << 20);
    ms_store_set_signer(store, s_signer, &sg);
    const uint8_t *me = ms_identity_public_key(sg.id);
    pthread_t th[8];
    appender_t a = {.store = store, .origin = me, .n = 20};
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, s_appender, &a);
    for (int i = 0; i < 8; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        assert_null(ret);
    }
    rec_t r[3];
    uint32_t kinds[3];
    const void *pls[3];
    size_t lens[3];
    for (int i = 0; i < 3; i++) {
        s_rec_result(&r[i], 9, (uint32_t) i, MS_RESULT_STATUS_OK, 0.25 * i);
        kinds[i] = r[i].kind;
        pls[i] = r[i].bytes;
        lens[i] = r[i].len;
    }
    assert_int_equal(ms_store_append_many(store, me, 3, kinds, pls, lens, NULL),
                     MS_OK);
    uint64_t inc = ms_store_incarnation(store), held;
    assert_int_equal(ms_store_held(store, me, inc, &held), MS_OK);
    assert_int_equal(held, 163);
    verify_ctx_t vc = {.pool = sg.pool};
    assert_int_equal(
        ms_store_read_blocks(store, me, inc, 1, held, 0, s_verify_block, &vc),
        MS_OK);
    fprintf(stderr, "signed: %zu blocks, %d signatures made\n", vc.n_blocks,
            sg.calls);
    assert_int_equal(vc.n_records, 163);
    assert_int_equal(vc.n_bad, 0);
    assert_true(sg.calls >= (int) vc.n_blocks);
    //  Another pool id does not verify them.
    uint8_t other[32];
    memset(other, 0x43, sizeof other);
    verify_ctx_t vo = {.pool = other};
    assert_int_equal(
        ms_store_read_blocks(store, me, inc, 1, held, 0, s_verify_block, &vo),
        MS_OK);
    assert_int_equal(vo.n_bad, vo.n_blocks);
    //  A signer that fails: the append fails, nothing is stored.
    sg.fail = true;
    assert_int_not_equal(
        ms_store_append_many(store, me, 3, kinds, pls, lens, NULL), MS_OK);
    assert_int_equal(ms_store_held(store, me, inc, &held), MS_OK);
    assert_int_equal(held, 163);
    for (int i = 0; i < 3; i++)
        free(r[i].bytes);
    ms_store_destroy(&store);
    ms_identity_destroy(&sg.id);
}

//  --------------------------------------------------------------------------
//  Merge in order, above a gap (refused, nothing stored), twice
//  (idempotent), and overlapping.

static void
test_merge_gap_duplicate(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "m", 1 << 20);
    uint8_t peer[ID];
    ms_sf_id(peer, 0xB1, 0);
    uint64_t inc = 0x1234;
    rec_t r[6];
    s_rec_sweep(&r[0], 2, 3, 5, 2000);
    for (int i = 1; i < 6; i++)
        s_rec_result(&r[i], 2, (uint32_t) (i % 3), MS_RESULT_STATUS_OK,
                     i / 10.0);
    uint32_t kinds[6];
    const uint8_t *pls[6];
    size_t lens[6];
    for (int i = 0; i < 6; i++) {
        kinds[i] = r[i].kind;
        pls[i] = r[i].bytes;
        lens[i] = r[i].len;
    }
    uint8_t sig[64];
    memset(sig, 0x5A, sizeof sig);
    ms_store_merge_result_t out;
    uint8_t d0[32], d1[32];
    assert_int_equal(ms_store_state_digest(store, d0), MS_OK);
    // A gap: seqs 3..4 when nothing is held.
    assert_int_equal(ms_store_merge_block(store, peer, inc, 3, 2, kinds + 2,
                                          pls + 2, lens + 2, sig, 64, &out),
                     MS_ERR_RANGE);
    assert_int_equal(out.n_new, 0);
    assert_int_equal(out.held, 0);
    ms_store_stats_t st;
    ms_store_stats(store, &st);
    assert_int_equal(st.n_records, 0);
    assert_int_equal(st.n_blocks, 0);
    assert_int_equal(ms_store_state_digest(store, d1), MS_OK);
    assert_memory_equal(d0, d1, 32);
    // In order.
    assert_int_equal(ms_store_merge_block(store, peer, inc, 1, 2, kinds, pls,
                                          lens, sig, 64, &out),
                     MS_OK);
    assert_int_equal(out.n_new, 2);
    assert_int_equal(out.held, 2);
    assert_false(out.equivocation);
    assert_int_equal(ms_store_merge_block(store, peer, inc, 3, 2, kinds + 2,
                                          pls + 2, lens + 2, sig, 64, &out),
                     MS_OK);
    assert_int_equal(out.held, 4);
    // The same block again: nothing new, nothing changes.
    assert_int_equal(ms_store_state_digest(store, d0), MS_OK);
    uint8_t v0[32], v1[32];
    uint64_t n_entries;
    assert_int_equal(ms_store_vector_digest(store, v0, &n_entries), MS_OK);
    assert_int_equal(n_entries, 1);
    assert_int_equal(ms_store_merge_block(store, peer, inc, 3, 2, kinds + 2,
                                          pls + 2, lens + 2, sig, 64, &out),
                     MS_OK);
    assert_int_equal(out.n_new, 0);
    assert_int_equal(out.n_duplicate, 2);
    assert_int_equal(ms_store_state_digest(store, d1), MS_OK);
    assert_memory_equal(d0, d1, 32);
    assert_int_equal(ms_store_vector_digest(store, v1, NULL), MS_OK);
    assert_memory_equal(v0, v1, 32);
    // Overlapping: seqs 4..6 when 4 is held: 5, 6 are new.
    assert_int_equal(ms_store_merge_block(store, peer, inc, 4, 2, kinds + 3,
                                          pls + 3, lens + 3, NULL, 0, &out),
                     MS_OK);
    assert_int_equal(out.n_new, 1);
    assert_int_equal(out.n_duplicate, 1);
    assert_int_equal(out.held, 5);
    // Blocks keep their boundaries and signature.
    blks_t bs = {0};
    assert_int_equal(
        ms_store_read_blocks(store, peer, inc, 1, 10, 0, s_collect_block, &bs),
        MS_OK);
    assert_int_equal(bs.n, 3);
    assert_int_equal(bs.blocks[0].n, 2);
    assert_int_equal(bs.blocks[0].sig_len, 64);
    assert_memory_equal(bs.blocks[0].sig, sig, 64);
    assert_int_equal(bs.blocks[1].first_seq, 3);
    assert_int_equal(bs.blocks[2].first_seq, 5);
    assert_int_equal(bs.blocks[2].n, 1);
    s_blks_free(&bs);
    // Bad arguments.
    assert_int_equal(ms_store_merge_block(store, peer, inc, 0, 1, kinds, pls,
                                          lens, NULL, 0, &out),
                     MS_ERR_INVALID);
    assert_int_equal(ms_store_merge_block(store, peer, inc, 1, 65, kinds, pls,
                                          lens, NULL, 0, &out),
                     MS_ERR_INVALID);
    // The vector digest changed with the vector (cache refreshed).
    assert_int_equal(ms_store_vector_digest(store, v1, NULL), MS_OK);
    assert_memory_not_equal(v0, v1, 32);
    ms_store_sweep_t *sw = s_sweep(store, 2);
    assert_int_equal(sw->priority, 5);
    assert_int_equal(sw->counts[MS_TASK_DONE], 3);
    ms_store_sweep_destroy(&sw);
    for (int i = 0; i < 6; i++)
        free(r[i].bytes);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  ms_store_merge_blocks: array order, so a block fills the gap below a
//  later one; a refused block does not stop the others.

static void
test_merge_blocks_batch(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "mb", 1 << 20);
    uint8_t peer[ID];
    ms_sf_id(peer, 0xB4, 0);
    rec_t r[4];
    uint32_t kinds[4];
    const uint8_t *pls[4];
    size_t lens[4];
    for (int i = 0; i < 4; i++) {
        s_rec_result(&r[i], 5, (uint32_t) i, MS_RESULT_STATUS_OK, 0.5);
        kinds[i] = r[i].kind;
        pls[i] = r[i].bytes;
        lens[i] = r[i].len;
    }
    ms_store_block_t b[4] = {
        {peer, 3, 3, 2, kinds + 2, pls + 2, lens + 2, NULL, 0}, // gap first
        {peer, 3, 1, 2, kinds, pls, lens, NULL, 0},
        {peer, 3, 0, 1, kinds, pls, lens, NULL, 0},             // invalid seq 0
        {peer, 3, 3, 2, kinds + 2, pls + 2, lens + 2, NULL, 0}, // now fits
    };
    int rcs[4];
    ms_store_merge_result_t outs[4];
    assert_int_equal(ms_store_merge_blocks(store, b, 4, rcs, outs),
                     MS_ERR_RANGE);
    assert_int_equal(rcs[0], MS_ERR_RANGE);
    assert_int_equal(rcs[1], MS_OK);
    assert_int_equal(rcs[2], MS_ERR_INVALID);
    assert_int_equal(rcs[3], MS_OK);
    assert_int_equal(outs[1].n_new, 2);
    assert_int_equal(outs[3].n_new, 2);
    assert_int_equal(outs[3].held, 4);
    uint64_t held;
    assert_int_equal(ms_store_held(store, peer, 3, &held), MS_OK);
    assert_int_equal(held, 4);
    assert_int_equal(ms_store_merge_blocks(store, b + 1, 1, NULL, NULL), MS_OK);
    for (int i = 0; i < 4; i++)
        free(r[i].bytes);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  ms_store_merge_blocks over several origins and more blocks than the
//  writer's max_batch: ONE commit for the call; a block above a gap is
//  refused (nothing stored) while the blocks around it land, and merges
//  in a later call once its gap is filled; a malformed block is refused
//  without losing the good ones.

static void
test_merge_blocks_one_commit(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "mb1", 1 << 20);
    enum { N_ORIGINS = 3, N_PER = 500 }; // 1,500 blocks > max_batch 1024
    uint8_t origins[N_ORIGINS][ID];
    rec_t *r = calloc(N_ORIGINS * N_PER, sizeof *r);
    uint32_t *kinds = calloc(N_ORIGINS * N_PER, sizeof *kinds);
    const uint8_t **pls = calloc(N_ORIGINS * N_PER, sizeof *pls);
    size_t *lens = calloc(N_ORIGINS * N_PER, sizeof *lens);
    ms_store_block_t *b = calloc(N_ORIGINS * N_PER + 1, sizeof *b);
    int *rcs = calloc(N_ORIGINS * N_PER + 1, sizeof *rcs);
    ms_store_merge_result_t *outs = calloc(N_ORIGINS * N_PER + 1, sizeof *outs);
    assert_non_null(r && kinds && pls && lens && b && rcs && outs);
    size_t n = 0;
    //  Interleaved origins, one record per block; origin 1's seq 250 is
    //  held back (the gap), so its seqs 251.. are refused.
    for (uint32_t seq = 1; seq <= N_PER; seq++)
        for (int o = 0; o < N_ORIGINS; o++) {
            ms_sf_id(origins[o], (uint8_t) (0xC0 + o), 0);
            size_t i = (size_t) o * N_PER + (seq - 1);
            s_rec_result(&r[i], (uint8_t) (0x40 + o), seq, MS_RESULT_STATUS_OK,
                         0.5);
            kinds[i] = r[i].kind;
            pls[i] = r[i].bytes;
            lens[i] = r[i].len;
            if (o == 1 && seq == 250)
                continue;
            b[n++] = (ms_store_block_t){
                origins[o], 9, seq, 1, kinds + i, pls + i, lens + i, NULL, 0};
        }
    //  A malformed block in the middle (seq 0).
    size_t bad = n / 2;
    memmove(&b[bad + 1], &b[bad], (n - bad) * sizeof *b);
    b[bad] = (ms_store_block_t){origins[2], 9, 0, 1, kinds, pls, lens, NULL, 0};
    n++;
    ms_store_stats_t st0, st1;
    ms_store_stats(store, &st0);
    assert_int_equal(ms_store_merge_blocks(store, b, n, rcs, outs),
                     MS_ERR_INVALID); // the first error in array order
    ms_store_stats(store, &st1);
    assert_int_equal(st1.n_commits - st0.n_commits, 1); // one commit
    size_t n_ok = 0, n_range = 0, n_invalid = 0;
    for (size_t i = 0; i < n; i++) {
        n_ok += rcs[i] == MS_OK;
        n_range += rcs[i] == MS_ERR_RANGE;
        n_invalid += rcs[i] == MS_ERR_INVALID;
        if (rcs[i] == MS_OK)
            assert_int_equal(outs[i].n_new, 1);
    }
    assert_int_equal(n_invalid, 1);
    assert_int_equal(n_range, N_PER - 250); // origin 1: 251 .. 500
    assert_int_equal(n_ok, 2 * N_PER + 249);
    uint64_t held;
    for (int o = 0; o < N_ORIGINS; o++) {
        assert_int_equal(ms_store_held(store, origins[o], 9, &held), MS_OK);
        assert_int_equal(held, o == 1 ? 249 : N_PER);
    }
    //  The gap and what waited above it, in one later call: all land.
    ms_store_block_t rest[N_PER];
    size_t n_rest = 0;
    for (uint32_t seq = 250; seq <= N_PER; seq++) {
        size_t i = (size_t) N_PER + (seq - 1);
        rest[n_rest++] = (ms_store_block_t){
            origins[1], 9, seq, 1, kinds + i, pls + i, lens + i, NULL, 0};
    }
    assert_int_equal(ms_store_merge_blocks(store, rest, n_rest, rcs, outs),
                     MS_OK);
    assert_int_equal(ms_store_held(store, origins[1], 9, &held), MS_OK);
    assert_int_equal(held, N_PER);
    uint64_t n_results;
    assert_int_equal(ms_store_results_count(store, &n_results), MS_OK);
    assert_int_equal(n_results, N_ORIGINS * N_PER); // one row each
    //  Merging everything again: duplicates, nothing new.
    assert_int_equal(ms_store_merge_blocks(store, rest, n_rest, rcs, outs),
                     MS_OK);
    for (size_t i = 0; i < n_rest; i++) {
        assert_int_equal(outs[i].n_new, 0);
        assert_int_equal(outs[i].n_duplicate, 1);
    }
    for (size_t i = 0; i < (size_t) N_ORIGINS * N_PER; i++)
        free(r[i].bytes);
    free(r);
    free(kinds);
    free(pls);
    free(lens);
    free(b);
    free(rcs);
    free(outs);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Result rows: the store's verdict (a JSON object? which status?) is
//  jansson's, whether its fast scanner or jansson itself answers:
//  hand-made edge cases and 20,000 random mutations of a real row.

static int
s_jansson_status(const char *row, uint32_t *status)
{
    json_error_t err;
    json_t *j = json_loadb(row, strlen(row), 0, &err);
    if (!json_is_object(j)) {
        json_decref(j);
        return MS_ERR_INVALID;
    }
    const char *st = json_string_value(json_object_get(j, "status"));
    *status = st && !strcmp(st, "ok")         ? MS_RESULT_STATUS_OK
              : st && !strcmp(st, "diverged") ? MS_RESULT_STATUS_DIVERGED
                                              : MS_RESULT_STATUS_FAILED;
    // Case 7: with status ok, metrics must be possible (accuracies in
    // [0, 1], losses finite and >= 0; a trained row has its test metrics).
    int rc = MS_OK;
    if (*status == MS_RESULT_STATUS_OK) {
        json_t *epochs = json_object_get(j, "epochs");
        bool trained = json_is_number(epochs) && json_number_value(epochs) >= 1;
        const char *keys[] = {"val_accuracy", "val_loss", "test_accuracy",
                              "test_loss"};
        for (int k = 0; k < 4; k++) {
            json_t *v = json_object_get(j, keys[k]);
            double x = json_number_value(v);
            if (v && !json_is_number(v) && k >= 2 && trained)
                rc = MS_ERR_INVALID;
            if (json_is_number(v) &&
                (!isfinite(x) || x < 0 || ((k == 0 || k == 2) && x > 1)))
                rc = MS_ERR_INVALID;
        }
    }
    json_decref(j);
    return rc;
}

static void
s_check_row(const char *row)
{
    ms_store_payload_t p = {.kind = MS_RECORD_RESULT};
    memset(p.u.result.task_id, 7, ID);
    p.u.result.epoch = 1;
    p.u.result.row_json = row;
    p.u.result.row_len = strlen(row);
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(&p, &buf, &len), MS_OK);
    ms_store_payload_t *d = NULL;
    int rc = ms_store_payload_decode(MS_RECORD_RESULT, buf, len, &d);
    free(buf);
    uint32_t want = 0;
    int want_rc = s_jansson_status(row, &want);
    if (rc == MS_OK) {
        assert_int_equal(want_rc, MS_OK);
        assert_int_equal(d->u.result.status, want);
    } else {
        assert_int_equal(rc, MS_ERR_INVALID);
        assert_int_equal(want_rc, MS_ERR_INVALID);
    }
    ms_store_payload_destroy(&d);
}

static void
test_result_row_status_like_jansson(void **state)
{
    (void) state;
    static const char *rows[] = {
        "{\"status\":\"ok\"}",
        " {\"status\" : \"diverged\" } ",
        "{\"status\":\"failed\",\"a\":[1,2.5,-3e+2,true,false,null,{}]}",
        "{}",
        "{\"a\":1}",
        "{\"status\":1}",
        "{\"status\":\"ok\",\"status\":\"diverged\"}",
        "{\"stat\\u0075s\":\"ok\"}",
        "{\"status\":\"o\\u006b\"}",
        "{\"status\":\"ok\\n\"}",
        "{\"status\":\"ok\"} x",
        "{\"status\":\"ok\",}",
        "[\"status\",\"ok\"]",
        "\"ok\"",
        "{\"a\":01}",
        "{\"a\":1.}",
        "{\"a\":.5}",
        "{\"a\":-}",
        "{\"a\":1e}",
        "{\"a\":123456789012345678}",
        "{\"a\":1234567890123456789}",
        "{\"a\":99999999999999999999999}",
        "{\"a\":1e308}",
        "{\"a\":1e309}",
        "{\"a\":1e-400}",
        "{\"a\":\"\\ud800\"}",
        "{\"a\":\"\\u0000\"}",
        "{\"a\":\"caf\xc3\xa9\"}",
        "{\"a\":\"tab\there\"}",
        "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
        "[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
        "]]]]]]]]]]]]}",
        "{\"a\":tru}",
        "{\"a\":nul}",
        "{\"a\" 1}",
        "{\"a\":1 \"b\":2}",
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        s_check_row(rows[i]);
    static const char base[] =
        "{\"config\":{\"activation\":\"relu\",\"batch_size\":200,\"beta1\":"
        "0.9,\"eps\":1e-08,\"layers\":[64,32],\"name\":\"x\\\"y\"},\"status\":"
        "\"ok\",\"test_accuracy\":0.8125,\"loss\":-1.5E+2,\"ok\":true,"
        "\"n\":null}";
    static const char alphabet[] = "{}[]:,\"\\ .-+eE0123456789tfnulsrau/";
    ms_rng_t rng;
    ms_rng_seed(&rng, 42, 1);
    char row[sizeof base + 8];
    for (int k = 0; k < 20000; k++) {
        size_t n = sizeof base - 1;
        memcpy(row, base, n + 1);
        int edits = 1 + (int) ms_rng_below(&rng, 3);
        for (int e = 0; e < edits; e++) {
            size_t at = (size_t) ms_rng_below(&rng, n);
            char c = alphabet[ms_rng_below(&rng, sizeof alphabet - 1)];
            switch (ms_rng_below(&rng, 3)) {
            case 0: // replace
                row[at] = c;
                break;
            case 1: // delete
                memmove(row + at, row + at + 1, n - at);
                n--;
                break;
            default: // insert
                if (n + 1 < sizeof row) {
                    memmove(row + at + 1, row + at, n - at + 1);
                    row[at] = c;
                    n++;
                }
            }
        }
        if (n > 0)
            s_check_row(row);
    }
}

//  --------------------------------------------------------------------------
//  Two records under one key: both kept as evidence, origin marked, the
//  held record unchanged.

static void
test_equivocation(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "e", 1 << 20);
    uint8_t peer[ID], other[ID];
    ms_sf_id(peer, 0xB2, 0);
    ms_sf_id(other, 0xB3, 0);
    rec_t a, b;
    s_rec_result(&a, 3, 0, MS_RESULT_STATUS_OK, 0.80);
    s_rec_result(&b, 3, 0, MS_RESULT_STATUS_OK, 0.99); // cloned disk
    const uint8_t *pa = a.bytes, *pb = b.bytes;
    ms_store_merge_result_t out;
    assert_int_equal(ms_store_merge_block(store, peer, 9, 1, 1, &a.kind, &pa,
                                          &a.len, NULL, 0, &out),
                     MS_OK);
    bool eq = true;
    assert_int_equal(ms_store_equivocating(store, peer, &eq), MS_OK);
    assert_false(eq);
    assert_int_equal(ms_store_merge_block(store, peer, 9, 1, 1, &b.kind, &pb,
                                          &b.len, NULL, 0, &out),
                     MS_OK);
    assert_true(out.equivocation);
    assert_int_equal(out.n_conflict, 1);
    assert_int_equal(out.n_new, 0);
    assert_int_equal(ms_store_equivocating(store, peer, &eq), MS_OK);
    assert_true(eq);
    assert_int_equal(ms_store_equivocating(store, other, &eq), MS_OK);
    assert_false(eq);
    ms_store_stats_t st;
    ms_store_stats(store, &st);
    assert_int_equal(st.n_equivocations, 1);
    assert_int_equal(st.n_equivocating, 1);
    assert_int_equal(st.n_records, 1);
    // Again: still one equivocation.
    assert_int_equal(ms_store_merge_block(store, peer, 9, 1, 1, &b.kind, &pb,
                                          &b.len, NULL, 0, &out),
                     MS_OK);
    ms_store_stats(store, &st);
    assert_int_equal(st.n_equivocations, 1);
    blks_t bs = {0};
    assert_int_equal(
        ms_store_read_blocks(store, peer, 9, 1, 1, 0, s_collect_block, &bs),
        MS_OK);
    assert_int_equal(bs.n, 1);
    assert_memory_equal(bs.blocks[0].payloads[0], a.bytes, a.len);
    s_blks_free(&bs);
    free(a.bytes);
    free(b.bytes);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  An equivocating origin's results and failures no longer count: its
//  counted result row goes, its task is pending again, and the failure
//  rule no longer sees it.

static void
s_merge1(ms_store_t *store, const uint8_t *node, uint64_t seq, rec_t *r)
{
    const uint8_t *p = r->bytes;
    assert_int_equal(ms_store_merge_block(store, node, 1, seq, 1, &r->kind, &p,
                                          &r->len, NULL, 0, NULL),
                     MS_OK);
    free(r->bytes);
}

static void
test_equivocator_uncounted(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "eu", 1 << 20);
    uint8_t sub[ID], p1[ID], p2[ID], p3[ID];
    ms_sf_id(sub, 0xB5, 0);
    ms_sf_id(p1, 0xB6, 0);
    ms_sf_id(p2, 0xB7, 0);
    ms_sf_id(p3, 0xB8, 0);
    rec_t r;
    s_rec_sweep(&r, 4, 2, 0, 0);
    s_merge1(store, sub, 1, &r);
    s_rec_result(&r, 4, 0, MS_RESULT_STATUS_OK, 0.9);
    s_merge1(store, p1, 1, &r);
    s_rec_failure(&r, 4, 1, MS_FAILURE_CLASS_TASK);
    s_merge1(store, p1, 2, &r);
    s_rec_failure(&r, 4, 1, MS_FAILURE_CLASS_TASK);
    s_merge1(store, p2, 1, &r);
    s_rec_failure(&r, 4, 1, MS_FAILURE_CLASS_TASK);
    s_merge1(store, p3, 1, &r);
    uint64_t n;
    assert_int_equal(ms_store_results_count(store, &n), MS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(s_task_state(store, 4, 0), MS_TASK_DONE);
    assert_int_equal(s_task_state(store, 4, 1), MS_TASK_FAILED);
    // p1's disk was cloned: another record under its key (1, 1).
    s_rec_result(&r, 4, 0, MS_RESULT_STATUS_OK, 0.1);
    s_merge1(store, p1, 1, &r);
    bool eq = false;
    assert_int_equal(ms_store_equivocating(store, p1, &eq), MS_OK);
    assert_true(eq);
    assert_int_equal(ms_store_results_count(store, &n), MS_OK);
    assert_int_equal(n, 0);
    assert_int_equal(s_task_state(store, 4, 0), MS_TASK_PENDING);
    assert_int_equal(s_task_state(store, 4, 1), MS_TASK_PENDING);
    // Later results of p1 do not count either; p2's do.
    s_rec_result(&r, 4, 1, MS_RESULT_STATUS_OK, 0.5);
    s_merge1(store, p1, 3, &r);
    assert_int_equal(ms_store_results_count(store, &n), MS_OK);
    assert_int_equal(n, 0);
    assert_int_equal(s_task_state(store, 4, 1), MS_TASK_PENDING);
    s_rec_result(&r, 4, 0, MS_RESULT_STATUS_OK, 0.5);
    s_merge1(store, p2, 2, &r);
    assert_int_equal(ms_store_results_count(store, &n), MS_OK);
    assert_int_equal(n, 1);
    assert_int_equal(s_task_state(store, 4, 0), MS_TASK_DONE);
    ms_store_destroy(&store);
}

// A generated pool history: per origin, a log cut into blocks.
#define W_ORIGINS 5
typedef struct {
    uint8_t origin[W_ORIGINS][ID];
    uint64_t inc[W_ORIGINS];
    rec_t *recs[W_ORIGINS];
    size_t n_recs[W_ORIGINS];
    size_t *cuts[W_ORIGINS]; // block sizes
    size_t n_cuts[W_ORIGINS];
} world_t;

static uint64_t
s_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

//  --------------------------------------------------------------------------
//  Add a record to origin O of W.

static rec_t *
s_world_add(world_t *w, int o)
{
    w->recs[o] = realloc(w->recs[o], (w->n_recs[o] + 1) * sizeof(rec_t));
    return &w->recs[o][w->n_recs[o]++];
}

//  --------------------------------------------------------------------------
//  Make a history: origin 0 submits two sweeps; origins 0..3 claim,
//  release, post results (some twice), failures, controls; origin 4 is
//  origin 3 after a wipe (same node id, new incarnation).

static void
s_world_make(world_t *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    uint64_t rs = seed * 2654435761u + 1;
    for (int o = 0; o < W_ORIGINS; o++) {
        ms_sf_id(w->origin[o], (uint8_t) (0xC0 + (o == 4 ? 3 : o)), 0);
        w->inc[o] = 1000 + (uint64_t) o;
    }
    s_rec_sweep(s_world_add(w, 0), 10, 16, 1, 5000);
    s_rec_sweep(s_world_add(w, 0), 11, 6, 3, 6000);
    s_rec_dataset(s_world_add(w, 0), 12);
    // The same sweep published again by another node, another priority.
    s_rec_sweep(s_world_add(w, 2), 10, 16, 7, 0);
    for (int step = 0; step < 120; step++) {
        int o = (int) (s_rand(&rs) % W_ORIGINS);
        uint32_t task = (uint32_t) (s_rand(&rs) % 16);
        uint8_t tag = s_rand(&rs) % 4 == 0 ? 11 : 10;
        if (tag == 11)
            task %= 6;
        switch (s_rand(&rs) % 9) {
        case 0:
        case 1:
            s_rec_claim(s_world_add(w, o), MS_RECORD_CLAIM, tag, task, 0,
                        1 + s_rand(&rs) % 3, 0);
            break;
        case 2:
            s_rec_claim(s_world_add(w, o), MS_RECORD_RELEASE, tag, task, 0,
                        1 + s_rand(&rs) % 3, (uint32_t) (s_rand(&rs) % 3));
            break;
        case 3:
        case 4:
            s_rec_result(s_world_add(w, o), tag, task,
                         s_rand(&rs) % 5 == 0 ? MS_RESULT_STATUS_FAILED
                                              : MS_RESULT_STATUS_OK,
                         (double) (s_rand(&rs) % 1000) / 1000.0);
            break;
        case 5:
        case 6:
            s_rec_failure(s_world_add(w, o), tag, task,
                          (uint32_t) (s_rand(&rs) % 2));
            break;
        case 7:
            s_rec_control(s_world_add(w, o), tag,
                          1 + (uint32_t) (s_rand(&rs) % 4),
                          (int32_t) (s_rand(&rs) % 10) - 5);
            break;
        default: {
            rec_t *r = s_world_add(w, o);
            r->kind = 40 + (uint32_t) (s_rand(&rs) % 3); // unknown kinds
            r->len = 1 + s_rand(&rs) % 16;
            r->bytes = malloc(r->len);
            for (size_t i = 0; i < r->len; i++)
                r->bytes[i] = (uint8_t) s_rand(&rs);
        }
        }
    }
    for (int o = 0; o < W_ORIGINS; o++) {
        size_t left = w->n_recs[o];
        while (left > 0) {
            size_t n = 1 + s_rand(&rs) % 6;
            if (n > left)
                n = left;
            w->cuts[o] =
                realloc(w->cuts[o], (w->n_cuts[o] + 1) * sizeof(size_t));
            w->cuts[o][w->n_cuts[o]++] = n;
            left -= n;
        }
    }
}

static void
s_world_free(world_t *w)
{
    for (int o = 0; o < W_ORIGINS; o++) {
        for (size_t i = 0; i < w->n_recs[o]; i++)
            free(w->recs[o][i].bytes);
        free(w->recs[o]);
        free(w->cuts[o]);
    }
}

//  --------------------------------------------------------------------------
//  Merge block B (index) of origin O of W into STORE.

static int
s_world_merge(ms_store_t *store, const world_t *w, int o, size_t b,
              ms_store_merge_result_t *out)
{
    size_t first = 0;
    for (size_t i = 0; i < b; i++)
        first += w->cuts[o][i];
    size_t n = w->cuts[o][b];
    uint32_t kinds[MS_RECORD_MAX_BLOCK];
    const uint8_t *pls[MS_RECORD_MAX_BLOCK];
    size_t lens[MS_RECORD_MAX_BLOCK];
    for (size_t i = 0; i < n; i++) {
        kinds[i] = w->recs[o][first + i].kind;
        pls[i] = w->recs[o][first + i].bytes;
        lens[i] = w->recs[o][first + i].len;
    }
    return ms_store_merge_block(store, w->origin[o], w->inc[o], first + 1, n,
                                kinds, pls, lens, NULL, 0, out);
}

//  --------------------------------------------------------------------------
//  Deliver every block of W to STORE in a random order that contiguity
//  allows, with duplicates and early (refused) blocks thrown in.

static void
s_world_deliver(ms_store_t *store, const world_t *w, uint64_t seed)
{
    uint64_t rs = seed * 0x9E3779B97F4A7C15ull + 7;
    size_t next[W_ORIGINS] = {0};
    for (;;) {
        int ready[W_ORIGINS], n_ready = 0;
        for (int o = 0; o < W_ORIGINS; o++)
            if (next[o] < w->n_cuts[o])
                ready[n_ready++] = o;
        if (n_ready == 0)
            break;
        int o = ready[s_rand(&rs) % (uint64_t) n_ready];
        ms_store_merge_result_t out;
        uint64_t roll = s_rand(&rs) % 8;
        if (roll == 0 && next[o] + 1 < w->n_cuts[o]) {
            assert_int_equal(s_world_merge(store, w, o, next[o] + 1, &out),
                             MS_ERR_RANGE);
            continue;
        }
        if (roll == 1 && next[o] > 0) {
            assert_int_equal(s_world_merge(store, w, o, next[o] - 1, &out),
                             MS_OK);
            assert_int_equal(out.n_new, 0);
            continue;
        }
        assert_int_equal(s_world_merge(store, w, o, next[o], &out), MS_OK);
        assert_int_equal(out.n_new, w->cuts[o][next[o]]);
        assert_false(out.equivocation);
        next[o]++;
    }
}

//  --------------------------------------------------------------------------
//  Derived state is a function of the record set: two stores given the
//  same blocks in different orders have equal state, results and vector
//  digests, for several seeds; a third store that received the records
//  through another store's read_blocks too.

static void
test_derived_order_independent(void **state)
{
    fixture_t *fx = *state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        world_t w;
        s_world_make(&w, seed);
        char na[32], nb[32], nc[32];
        snprintf(na, sizeof na, "o%llu-a", (unsigned long long) seed);
        snprintf(nb, sizeof nb, "o%llu-b", (unsigned long long) seed);
        snprintf(nc, sizeof nc, "o%llu-c", (unsigned long long) seed);
        ms_store_t *a = ms_sf_open(fx, na, 1 << 20),
                   *b = ms_sf_open(fx, nb, 1 << 20),
                   *c = ms_sf_open(fx, nc, 1 << 20);
        s_world_deliver(a, &w, seed);
        s_world_deliver(b, &w, seed + 1000);
        blks_t bs = {0};
        s_all_blocks(a, &bs);
        // c gets a's blocks in reverse order twice (most are refused as
        // gaps, each pass lands what became contiguous), then all.
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < bs.n; i++) {
                ms_store_merge_result_t out;
                int rc = s_merge(c, &bs.blocks[bs.n - 1 - i], &out);
                assert_true(rc == MS_OK || rc == MS_ERR_RANGE);
            }
        for (size_t i = 0; i < bs.n; i++) {
            ms_store_merge_result_t out;
            assert_int_equal(s_merge(c, &bs.blocks[i], &out), MS_OK);
        }
        s_blks_free(&bs);
        uint8_t da[32], db[32], dc[32];
        assert_int_equal(ms_store_state_digest(a, da), MS_OK);
        assert_int_equal(ms_store_state_digest(b, db), MS_OK);
        assert_int_equal(ms_store_state_digest(c, dc), MS_OK);
        assert_memory_equal(da, db, 32);
        assert_memory_equal(da, dc, 32);
        assert_int_equal(ms_store_results_digest(a, da), MS_OK);
        assert_int_equal(ms_store_results_digest(b, db), MS_OK);
        assert_memory_equal(da, db, 32);
        uint64_t na_e, nb_e;
        assert_int_equal(ms_store_vector_digest(a, da, &na_e), MS_OK);
        assert_int_equal(ms_store_vector_digest(b, db, &nb_e), MS_OK);
        assert_memory_equal(da, db, 32);
        assert_int_equal(na_e, W_ORIGINS);
        // The wiped node (origin 4 = node of origin 3, new incarnation)
        // confused nothing: no equivocation, two vector entries.
        bool eq = true;
        assert_int_equal(ms_store_equivocating(a, w.origin[3], &eq), MS_OK);
        assert_false(eq);
        ms_store_stats_t st;
        ms_store_stats(a, &st);
        assert_int_equal(st.n_equivocations, 0);
        size_t total = 0;
        for (int o = 0; o < W_ORIGINS; o++)
            total += w.n_recs[o];
        assert_int_equal(st.n_records, total);
        // Sweep counts add up.
        ms_store_sweep_t *sw = s_sweep(a, 10);
        uint64_t sum = 0;
        for (int i = 0; i < MS_TASK_N_STATES; i++)
            sum += sw->counts[i];
        assert_int_equal(sum, 16);
        ms_store_sweep_destroy(&sw);
        ms_store_destroy(&a);
        ms_store_destroy(&b);
        ms_store_destroy(&c);
        s_world_free(&w);
    }
}

// Rows collected.
typedef struct {
    char rows[8][128];
    size_t n;
} rows_t;

static int
s_collect_row(void *arg, const char *json, size_t n)
{
    rows_t *r = arg;
    if (r->n < 8 && n < 128) {
        memcpy(r->rows[r->n], json, n);
        r->rows[r->n][n] = 0;
    }
    r->n++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Record hash as the store defines it (BLAKE2b of key || kind || payload).

static void
s_hash_rec(const uint8_t *origin, uint64_t inc, uint64_t seq, const rec_t *r,
           ms_hash_t *out)
{
    uint8_t k[ID + 16 + 4];
    memcpy(k, origin, ID);
    for (int i = 0; i < 8; i++) {
        k[ID + i] = (uint8_t) (inc >> (56 - 8 * i));
        k[ID + 8 + i] = (uint8_t) (seq >> (56 - 8 * i));
    }
    for (int i = 0; i < 4; i++)
        k[ID + 16 + i] = (uint8_t) (r->kind >> (24 - 8 * i));
    ms_hasher_t h;
    ms_hasher_init(&h);
    ms_hasher_update(&h, k, sizeof k);
    ms_hasher_update(&h, r->bytes, r->len);
    ms_hasher_final(&h, out);
}

//  --------------------------------------------------------------------------
//  Of one node's results for one task the first counts: lowest seq in
//  an incarnation, lowest record hash across incarnations, whatever the
//  arrival order; the others are kept as duplicates.

static void
test_first_result_counts(void **state)
{
    fixture_t *fx = *state;
    uint8_t node[ID];
    ms_sf_id(node, 0xD1, 0);
    rec_t sweep, r1, r2, r3;
    s_rec_sweep(&sweep, 20, 2, 0, 1);
    s_rec_result(&r1, 20, 0, MS_RESULT_STATUS_FAILED, 0.11);
    s_rec_result(&r2, 20, 0, MS_RESULT_STATUS_OK, 0.22);
    s_rec_result(&r3, 20, 0, MS_RESULT_STATUS_OK, 0.33);
    uint8_t sub[ID];
    ms_sf_id(sub, 0xD2, 0);
    for (int order = 0; order < 2; order++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", order);
        ms_store_t *store = ms_sf_open(fx, name, 1 << 20);
        const uint8_t *p;
        ms_store_merge_result_t out;
        p = sweep.bytes;
        assert_int_equal(ms_store_merge_block(store, sub, 1, 1, 1, &sweep.kind,
                                              &p, &sweep.len, NULL, 0, &out),
                         MS_OK);
        uint32_t kinds[2] = {r1.kind, r2.kind};
        const uint8_t *pls[2] = {r1.bytes, r2.bytes};
        size_t lens[2] = {r1.len, r2.len};
        const uint8_t *p3 = r3.bytes;
        if (order == 0) {
            assert_int_equal(ms_store_merge_block(store, node, 50, 1, 2, kinds,
                                                  pls, lens, NULL, 0, &out),
                             MS_OK);
            uint8_t task[ID];
            s_task_id(task, 20, 0);
            rows_t rows = {0};
            assert_int_equal(
                ms_store_results_by_task(store, task, s_collect_row, &rows),
                MS_OK);
            assert_int_equal(rows.n, 1);
            assert_non_null(strstr(rows.rows[0], "0.1100")); // seq 1
            // Its status is failed: the task is not done.
            assert_int_not_equal(s_task_state(store, 20, 0), MS_TASK_DONE);
        }
        // The wiped node's new incarnation posts r3 as its seq 1.
        assert_int_equal(ms_store_merge_block(store, node, 60, 1, 1, &r3.kind,
                                              &p3, &r3.len, NULL, 0, &out),
                         MS_OK);
        if (order == 1)
            assert_int_equal(ms_store_merge_block(store, node, 50, 1, 2, kinds,
                                                  pls, lens, NULL, 0, &out),
                             MS_OK);
        ms_hash_t h1, h3;
        s_hash_rec(node, 50, 1, &r1, &h1);
        s_hash_rec(node, 60, 1, &r3, &h3);
        const char *want =
            memcmp(h1.bytes, h3.bytes, 32) < 0 ? "0.1100" : "0.3300";
        uint8_t task[ID];
        s_task_id(task, 20, 0);
        rows_t rows = {0};
        assert_int_equal(
            ms_store_results_by_task(store, task, s_collect_row, &rows), MS_OK);
        assert_int_equal(rows.n, 1); // one counted row per (task, node)
        assert_non_null(strstr(rows.rows[0], want));
        assert_null(strstr(rows.rows[0], "0.2200")); // never: seq 2
        assert_int_equal(s_task_state(store, 20, 0),
                         want[3] == '3' ? MS_TASK_DONE : MS_TASK_PENDING);
        uint8_t d[32];
        static uint8_t first[32];
        assert_int_equal(ms_store_state_digest(store, d), MS_OK);
        if (order == 0)
            memcpy(first, d, 32);
        else
            assert_memory_equal(first, d, 32);
        ms_store_destroy(&store);
    }
    free(sweep.bytes);
    free(r1.bytes);
    free(r2.bytes);
    free(r3.bytes);
}

// Claim rows collected.
typedef struct {
    ms_store_claim_t rows[8];
    size_t n;
} claims_t;

static int
s_collect_claim(void *arg, const ms_store_claim_t *c)
{
    claims_t *cs = arg;
    if (cs->n < 8)
        cs->rows[cs->n] = *c;
    cs->n++;
    return 0;
}

// Task ids collected.
typedef struct {
    uint32_t index[64];
    uint8_t sweep_id[64][ID];
    size_t n;
    uint8_t skip_sweep[ID]; // s_skip_sweep: the sweep to skip
} tasks_t;

static int
s_collect_task(void *arg, const ms_store_task_t *t)
{
    tasks_t *ts = arg;
    if (ts->n < 64) {
        ts->index[ts->n] = t->index;
        memcpy(ts->sweep_id[ts->n], t->sweep_id, ID);
    }
    ts->n++;
    return 0;
}

//  Skip every task of the sweep in ARG (a 32-byte id); count the asks.
static int s_skip_asks;
static ms_store_task_filter_t
s_skip_sweep(void *arg, const uint8_t *task_id, const uint8_t *sweep_id,
             ms_task_state_t state)
{
    assert_true(state == MS_TASK_PENDING || state == MS_TASK_CLAIMED ||
                state == MS_TASK_RUNNING);
    tasks_t *ts = arg;
    assert_non_null(task_id);
    s_skip_asks++;
    return memcmp(sweep_id, ts->skip_sweep, ID) == 0 ? MS_STORE_TASK_SKIP
                                                     : MS_STORE_TASK_READ;
}

//  --------------------------------------------------------------------------
//  Claims and releases (release first too), the failure rule with the
//  member count, controls by record order, pending tasks in serving
//  order.

static void
test_claims_failures_controls(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "c", 1 << 20);
    uint8_t n1[ID], n2[ID], n3[ID];
    ms_sf_id(n1, 0xE1, 0);
    ms_sf_id(n2, 0xE2, 0);
    ms_sf_id(n3, 0xE3, 0);
    rec_t r, sw30, sw31;
    const uint8_t *p;
    ms_store_merge_result_t out;
    s_rec_sweep(&sw30, 30, 4, 0, 100); // made now: task ids known
    s_rec_sweep(&sw31, 31, 2, 0, 50);
#define MERGE(node, inc, seq)                                                  \
    do {                                                                       \
        p = r.bytes;                                                           \
        assert_int_equal(ms_store_merge_block(store, node, inc, seq, 1,        \
                                              &r.kind, &p, &r.len, NULL, 0,    \
                                              &out),                           \
                         MS_OK);                                               \
        free(r.bytes);                                                         \
    } while (0)
    // Release before its claim.
    s_rec_claim(&r, MS_RECORD_RELEASE, 30, 1, 0, 2, MS_RELEASE_REASON_SHUTDOWN);
    MERGE(n2, 1, 1);
    uint8_t task[ID];
    s_task_id(task, 30, 1);
    claims_t cs = {0};
    assert_int_equal(ms_store_claims_by_task(store, task, s_collect_claim, &cs),
                     MS_OK);
    assert_int_equal(cs.n, 1);
    assert_false(cs.rows[0].claimed);
    assert_true(cs.rows[0].released);
    s_rec_claim(&r, MS_RECORD_CLAIM, 30, 1, 0, 2, 0);
    MERGE(n2, 1, 2);
    s_rec_claim(&r, MS_RECORD_CLAIM, 30, 1, 0, 1, 0);
    MERGE(n1, 1, 1);
    cs.n = 0;
    assert_int_equal(ms_store_claims_by_task(store, task, s_collect_claim, &cs),
                     MS_OK);
    assert_int_equal(cs.n, 2);
    assert_int_equal(cs.rows[0].epoch, 1); // (slot, epoch, node) order
    assert_memory_equal(cs.rows[0].node_id, n1, ID);
    assert_true(cs.rows[0].claimed);
    assert_false(cs.rows[0].released);
    assert_int_equal(cs.rows[1].epoch, 2);
    assert_true(cs.rows[1].claimed);
    assert_true(cs.rows[1].released);
    assert_int_equal(cs.rows[1].reason, MS_RELEASE_REASON_SHUTDOWN);
    assert_int_equal(cs.rows[1].claim_key.seq, 2);
    assert_int_equal(cs.rows[1].release_key.seq, 1);

    // Failures from two nodes before the sweep arrives.
    s_rec_failure(&r, 30, 2, MS_FAILURE_CLASS_TASK);
    MERGE(n1, 1, 2);
    s_rec_failure(&r, 30, 2, MS_FAILURE_CLASS_TASK);
    MERGE(n2, 1, 3);
    s_rec_failure(&r, 30, 2, MS_FAILURE_CLASS_RESOURCE); // not counted
    MERGE(n3, 1, 1);
    r = sw30;
    MERGE(n3, 1, 2);
    r = sw31;
    MERGE(n3, 1, 3);
    assert_int_equal(s_task_state(store, 30, 2), MS_TASK_PENDING);
    assert_int_equal(ms_store_set_member_count(store, 2), MS_OK);
    assert_int_equal(s_task_state(store, 30, 2), MS_TASK_FAILED);
    assert_int_equal(ms_store_set_member_count(store, 3), MS_OK);
    assert_int_equal(s_task_state(store, 30, 2), MS_TASK_PENDING);
    assert_int_equal(ms_store_set_member_count(store, 0), MS_ERR_INVALID);
    s_rec_failure(&r, 30, 2, MS_FAILURE_CLASS_TASK);
    MERGE(n3, 1, 4);
    assert_int_equal(s_task_state(store, 30, 2), MS_TASK_FAILED);

    // Pending: equal priority and submission time (not on the wire), so
    // by sweep id, then by index; 30/2 failed.
    tasks_t ts = {0};
    assert_int_equal(ms_store_pending_tasks(store, s_collect_task, &ts), MS_OK);
    assert_int_equal(ts.n, 5);
    bool first30 = memcmp(s_sweeps[30].sweep_id, s_sweeps[31].sweep_id, ID) < 0;
    const uint8_t *s30 = s_sweeps[30].sweep_id, *s31 = s_sweeps[31].sweep_id;
    assert_memory_equal(ts.sweep_id[0], first30 ? s30 : s31, ID);
    assert_memory_equal(ts.sweep_id[4], first30 ? s31 : s30, ID);
    size_t at30 = first30 ? 0 : 2;
    assert_int_equal(ts.index[at30], 0);
    assert_int_equal(ts.index[at30 + 1], 1);
    assert_int_equal(ts.index[at30 + 2], 3); // 2 failed
    // A filter sees every open task before its row is read; skipped ones
    // never reach fn.
    memcpy(ts.skip_sweep, s30, ID);
    ts.n = 0;
    s_skip_asks = 0;
    assert_int_equal(ms_store_pending_tasks_filtered(store, s_skip_sweep,
                                                     s_collect_task, &ts),
                     MS_OK);
    assert_int_equal(s_skip_asks, 5);
    assert_int_equal(ts.n, 2);
    assert_memory_equal(ts.sweep_id[0], s31, ID);
    assert_memory_equal(ts.sweep_id[1], s31, ID);
    // Priority control on sweep 30 puts it first.
    s_rec_control(&r, 30, MS_SWEEP_CONTROL_PRIORITY, 9);
    MERGE(n1, 1, 3);
    ts.n = 0;
    assert_int_equal(ms_store_pending_tasks(store, s_collect_task, &ts), MS_OK);
    assert_memory_equal(ts.sweep_id[0], s30, ID);
    // Pause by n2 (seq 4), resume by n1 (seq 4): in key order n1 < n2,
    // so the pause (later in order) wins.
    s_rec_control(&r, 30, MS_SWEEP_CONTROL_PAUSE, 0);
    MERGE(n2, 1, 4);
    s_rec_control(&r, 30, MS_SWEEP_CONTROL_RESUME, 0);
    MERGE(n1, 1, 4);
    ms_store_sweep_t *sw = s_sweep(store, 30);
    assert_int_equal(sw->state, MS_SWEEP_PAUSED);
    assert_int_equal(sw->priority, 9);
    ms_store_sweep_destroy(&sw);
    ts.n = 0;
    assert_int_equal(ms_store_pending_tasks(store, s_collect_task, &ts), MS_OK);
    assert_int_equal(ts.n, 2); // only sweep 31
    // Cancel is final; pending tasks are cancelled, failed stay failed.
    s_rec_control(&r, 30, MS_SWEEP_CONTROL_CANCEL, 0);
    MERGE(n1, 1, 5);
    s_rec_control(&r, 30, MS_SWEEP_CONTROL_RESUME, 0);
    MERGE(n3, 1, 5);
    sw = s_sweep(store, 30);
    assert_int_equal(sw->state, MS_SWEEP_CANCELLED);
    assert_int_equal(sw->counts[MS_TASK_CANCELLED], 3);
    assert_int_equal(sw->counts[MS_TASK_FAILED], 1);
    ms_store_sweep_destroy(&sw);
    // A result after the cancel still counts: the task is done.
    s_rec_result(&r, 30, 0, MS_RESULT_STATUS_OK, 0.9);
    MERGE(n2, 1, 5);
    assert_int_equal(s_task_state(store, 30, 0), MS_TASK_DONE);
    // Dataset by hash.
    s_rec_dataset(&r, 32);
    MERGE(n2, 1, 6);
#undef MERGE
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Two nodes exchange everything through read_blocks and merge: equal
//  vectors and digests; a node whose store was wiped (same node id, new
//  incarnation) appends records that confuse nothing.

static void
test_exchange_and_wiped_node(void **state)
{
    fixture_t *fx = *state;
    uint8_t ida[ID], idb[ID];
    ms_sf_id(ida, 0xF1, 0);
    ms_sf_id(idb, 0xF2, 0);
    ms_store_t *a = ms_sf_open(fx, "xa", 1 << 20),
               *b = ms_sf_open(fx, "xb", 1 << 20);
    rec_t r;
    s_rec_sweep(&r, 40, 8, 0, 10);
    assert_int_equal(ms_store_append(a, ida, r.kind, r.bytes, r.len, NULL),
                     MS_OK);
    free(r.bytes);
    for (uint32_t i = 0; i < 8; i++) {
        s_rec_result(&r, 40, i, MS_RESULT_STATUS_OK, 0.1 * i);
        assert_int_equal(ms_store_append(i % 2 ? a : b, i % 2 ? ida : idb,
                                         r.kind, r.bytes, r.len, NULL),
                         MS_OK);
        free(r.bytes);
    }
    blks_t ba = {0}, bb = {0};
    s_all_blocks(a, &ba);
    s_all_blocks(b, &bb);
    for (size_t i = 0; i < ba.n; i++)
        assert_int_equal(s_merge(b, &ba.blocks[i], NULL), MS_OK);
    for (size_t i = 0; i < bb.n; i++)
        assert_int_equal(s_merge(a, &bb.blocks[i], NULL), MS_OK);
    s_blks_free(&ba);
    s_blks_free(&bb);
    uint8_t va[32], vb[32], sa[32], sb[32];
    uint64_t n;
    assert_int_equal(ms_store_vector_digest(a, va, &n), MS_OK);
    assert_int_equal(n, 2);
    assert_int_equal(ms_store_vector_digest(b, vb, NULL), MS_OK);
    assert_memory_equal(va, vb, 32);
    assert_int_equal(ms_store_state_digest(a, sa), MS_OK);
    assert_int_equal(ms_store_state_digest(b, sb), MS_OK);
    assert_memory_equal(sa, sb, 32);
    // Digest = BLAKE2b over the sorted entries.
    vec_t v = {0};
    assert_int_equal(ms_store_vector(a, s_collect_vec, &v), MS_OK);
    assert_int_equal(v.n, 2);
    assert_true(memcmp(v.origin[0], v.origin[1], ID) < 0);
    ms_hasher_t h;
    ms_hasher_init(&h);
    for (size_t i = 0; i < 2; i++) {
        uint8_t e[ID + 16];
        memcpy(e, v.origin[i], ID);
        for (int j = 0; j < 8; j++) {
            e[ID + j] = (uint8_t) (v.inc[i] >> (56 - 8 * j));
            e[ID + 8 + j] = (uint8_t) (v.seq[i] >> (56 - 8 * j));
        }
        ms_hasher_update(&h, e, sizeof e);
    }
    ms_hash_t want;
    ms_hasher_final(&h, &want);
    assert_memory_equal(va, want.bytes, 32);
    uint64_t count;
    assert_int_equal(ms_store_results_count(a, &count), MS_OK);
    assert_int_equal(count, 8);

    // b's store is wiped: same node id, new store, new incarnation.
    uint64_t old_inc = ms_store_incarnation(b);
    ms_store_destroy(&b);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/xb", fx->root);
    ms_tf_rm_rf(dir);
    b = ms_sf_open(fx, "xb", 1 << 20);
    assert_int_not_equal(ms_store_incarnation(b), old_inc);
    s_rec_result(&r, 40, 0, MS_RESULT_STATUS_OK, 0.77); // a re-run
    ms_record_key_t key;
    assert_int_equal(ms_store_append(b, idb, r.kind, r.bytes, r.len, &key),
                     MS_OK);
    free(r.bytes);
    assert_int_equal(key.seq, 1); // seq 1 again, under a new incarnation
    s_all_blocks(b, &bb);
    for (size_t i = 0; i < bb.n; i++)
        assert_int_equal(s_merge(a, &bb.blocks[i], NULL), MS_OK);
    s_blks_free(&bb);
    bool eq = true;
    assert_int_equal(ms_store_equivocating(a, idb, &eq), MS_OK);
    assert_false(eq);
    assert_int_equal(ms_store_vector_digest(a, va, &n), MS_OK);
    assert_int_equal(n, 3);
    assert_int_equal(ms_store_results_count(a, &count), MS_OK);
    assert_int_equal(count, 8); // still one counted row per (task, node)
    // The wiped node catches up from a and ends equal.
    s_all_blocks(a, &ba);
    for (size_t i = 0; i < ba.n; i++)
        assert_int_equal(s_merge(b, &ba.blocks[i], NULL), MS_OK);
    s_blks_free(&ba);
    assert_int_equal(ms_store_state_digest(a, sa), MS_OK);
    assert_int_equal(ms_store_state_digest(b, sb), MS_OK);
    assert_memory_equal(sa, sb, 32);
    ms_store_destroy(&a);
    ms_store_destroy(&b);
}

//  --------------------------------------------------------------------------
//  Monotonic seconds.

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

//  CPU seconds of this process (all threads: the store's writer too), a
//  figure that a loaded machine moves less than the wall clock.
static double
s_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

#define BIG_TASKS 2000
#define BIG_NODES 50 // 100,000 results = 2,000 tasks x 50 nodes
#define BIG_SWEEPS 20

static int
s_count_replica(void *arg, const char *json, size_t n, bool extra)
{
    (void) json, (void) n;
    ((size_t *) arg)[extra ? 1 : 0]++;
    return 0;
}

static int
s_count_block(void *arg, const uint8_t *origin, uint64_t inc, uint64_t first,
              size_t n, const uint32_t *kinds, const uint8_t *const *payloads,
              const size_t *lens, const uint8_t *sig, size_t sig_len)
{
    (void) origin, (void) inc, (void) first, (void) kinds, (void) payloads;
    (void) sig, (void) sig_len;
    size_t *count = arg;
    for (size_t i = 0; i < n; i++)
        if (lens[i] > 0)
            (*count)++;
    return 0;
}

//  --------------------------------------------------------------------------
//  100,000 result records (50 nodes x 2,000 tasks, blocks of 64) merged
//  as a catch-up does it (ms_store_merge_blocks, 16 blocks per call, so
//  one fsync per ~1,000 records) and read back.

static void
test_catch_up_100k(void **state)
{
    fixture_t *fx = *state;
    ms_store_t *store = ms_sf_open(fx, "big", 1 << 20);
    // 20 sweeps of 100 tasks (a sweep record's spec must fit one wire
    // payload, 64 KiB), one block from the submitter.
    rec_t sw[BIG_SWEEPS];
    uint32_t sw_kinds[BIG_SWEEPS];
    const uint8_t *sw_pls[BIG_SWEEPS];
    size_t sw_lens[BIG_SWEEPS];
    for (int i = 0; i < BIG_SWEEPS; i++) {
        s_rec_sweep(&sw[i], (uint8_t) (100 + i), BIG_TASKS / BIG_SWEEPS, 0, 1);
        sw_kinds[i] = sw[i].kind;
        sw_pls[i] = sw[i].bytes;
        sw_lens[i] = sw[i].len;
    }
    uint8_t sub[ID];
    ms_sf_id(sub, 0x6F, 0);
    assert_int_equal(ms_store_merge_block(store, sub, 1, 1, BIG_SWEEPS,
                                          sw_kinds, sw_pls, sw_lens, NULL, 0,
                                          NULL),
                     MS_OK);
    for (int i = 0; i < BIG_SWEEPS; i++)
        free(sw[i].bytes);
    // Encode everything first: the clock measures the store only.
    size_t n_blocks = 0, n_all = (size_t) BIG_NODES * ((BIG_TASKS + 63) / 64);
    ms_store_block_t *blocks = calloc(n_all, sizeof *blocks);
    uint8_t(*origins)[ID] = calloc(BIG_NODES, ID);
    rec_t *recs = calloc((size_t) BIG_NODES * BIG_TASKS, sizeof *recs);
    uint32_t *kinds = calloc((size_t) BIG_NODES * BIG_TASKS, sizeof *kinds);
    const uint8_t **pls = calloc((size_t) BIG_NODES * BIG_TASKS, sizeof *pls);
    size_t *lens = calloc((size_t) BIG_NODES * BIG_TASKS, sizeof *lens);
    for (int node = 0; node < BIG_NODES; node++) {
        ms_sf_id(origins[node], 0x70, (uint32_t) node);
        for (uint32_t t = 0; t < BIG_TASKS; t++) {
            size_t i = (size_t) node * BIG_TASKS + t;
            s_rec_result(&recs[i],
                         (uint8_t) (100 + t / (BIG_TASKS / BIG_SWEEPS)),
                         t % (BIG_TASKS / BIG_SWEEPS), MS_RESULT_STATUS_OK,
                         (double) node / 100.0);
            kinds[i] = recs[i].kind;
            pls[i] = recs[i].bytes;
            lens[i] = recs[i].len;
        }
        for (uint32_t first = 0; first < BIG_TASKS; first += 64) {
            size_t i = (size_t) node * BIG_TASKS + first;
            blocks[n_blocks++] = (ms_store_block_t){
                .origin = origins[node],
                .incarnation = 1,
                .first_seq = first + 1,
                .n = BIG_TASKS - first < 64 ? BIG_TASKS - first : 64,
                .kinds = kinds + i,
                .payloads = pls + i,
                .lens = lens + i};
        }
    }
    assert_int_equal(n_blocks, n_all);
    double t0 = s_now(), c0 = s_cpu_now();
    for (size_t b = 0; b < n_blocks; b += 16) {
        size_t n = n_blocks - b < 16 ? n_blocks - b : 16;
        assert_int_equal(
            ms_store_merge_blocks(store, blocks + b, n, NULL, NULL), MS_OK);
    }
    double t1 = s_now(), c1 = s_cpu_now();
    size_t n_read = 0;
    for (int node = 0; node < BIG_NODES; node++) {
        uint8_t origin[ID];
        ms_sf_id(origin, 0x70, (uint32_t) node);
        assert_int_equal(ms_store_read_blocks(store, origin, 1, 1, UINT64_MAX,
                                              0, s_count_block, &n_read),
                         MS_OK);
    }
    double t2 = s_now();
    uint64_t n_results;
    assert_int_equal(ms_store_results_count(store, &n_results), MS_OK);
    assert_int_equal(n_read, BIG_TASKS * BIG_NODES);
    // replicas 1: one row per task; the other 49 results of each task
    // are extra replicas, kept and listed by ms_store_results_by_task_all.
    assert_int_equal(n_results, BIG_TASKS);
    uint8_t task0[ID];
    s_task_id(task0, 100, 0);
    size_t n_rep[2] = {0, 0};
    assert_int_equal(
        ms_store_results_by_task_all(store, task0, s_count_replica, n_rep),
        MS_OK);
    assert_int_equal(n_rep[0], 1);
    assert_int_equal(n_rep[1], BIG_NODES - 1);
    for (int i = 0; i < BIG_SWEEPS; i++) {
        ms_store_sweep_t *s = s_sweep(store, (uint8_t) (100 + i));
        assert_int_equal(s->counts[MS_TASK_DONE], BIG_TASKS / BIG_SWEEPS);
        assert_int_equal(s->state, MS_SWEEP_DONE);
        ms_store_sweep_destroy(&s);
    }
    ms_store_stats_t st;
    ms_store_stats(store, &st);
    fprintf(stderr,
            "catch-up: %d records merged in %.2f s, %.2f s of CPU (%.0f "
            "records/s, %llu commits, %llu verdict evaluations); read back "
            "in %.2f s (%.0f records/s)\n",
            BIG_TASKS * BIG_NODES, t1 - t0, c1 - c0,
            BIG_TASKS * BIG_NODES / (t1 - t0),
            (unsigned long long) st.n_commits,
            (unsigned long long) st.n_verdict_evals, t2 - t1,
            BIG_TASKS * BIG_NODES / (t2 - t1));
    for (size_t i = 0; i < (size_t) BIG_NODES * BIG_TASKS; i++)
        free(recs[i].bytes);
    free(recs);
    free(kinds);
    free(pls);
    free(lens);
    free(origins);
    free(blocks);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Child: merge blocks of 8 result records forever, reporting each
//  durable block on FD.

static void
s_crash_child(const void *arg, int fd)
{
    const fixture_t *fx = arg;
    ms_store_t *store = NULL;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/crash", fx->root);
    if (ms_store_open(&store, dir, NULL, NULL) != MS_OK)
        _exit(2);
    uint8_t origin[ID];
    ms_sf_id(origin, 0x71, 0);
    for (uint32_t b = 0; b < 100000; b++) {
        rec_t recs[8];
        uint32_t kinds[8];
        const uint8_t *pls[8];
        size_t lens[8];
        for (uint32_t i = 0; i < 8; i++) {
            s_rec_result(&recs[i], 60, b * 8 + i, MS_RESULT_STATUS_OK, 0.5);
            kinds[i] = recs[i].kind;
            pls[i] = recs[i].bytes;
            lens[i] = recs[i].len;
        }
        if (ms_store_merge_block(store, origin, 1, (uint64_t) b * 8 + 1, 8,
                                 kinds, pls, lens, NULL, 0, NULL) != MS_OK)
            _exit(3);
        for (uint32_t i = 0; i < 8; i++)
            free(recs[i].bytes);
        if (write(fd, &b, sizeof b) != sizeof b)
            _exit(4);
    }
    _exit(0);
}

//  --------------------------------------------------------------------------
//  SIGKILL mid-merge: after reopening, the vector equals the contiguous
//  records held, every held record is applied (one result row each) and
//  nothing else is; merging goes on from held + 1.

static void
test_merge_crash_safety(void **state)
{
    fixture_t *fx = *state;
    int fd = -1;
    pid_t pid = ms_tf_fork_piped(s_crash_child, fx, &fd);
    assert_true(pid >= 0);
    uint32_t b, n_reported = 0;
    while (read(fd, &b, sizeof b) == sizeof b)
        if (++n_reported == 150) {
            kill(pid, SIGKILL);
            break;
        }
    int status;
    waitpid(pid, &status, 0);
    close(fd);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    ms_store_t *store = ms_sf_open(fx, "crash", 1 << 20);
    uint8_t origin[ID];
    ms_sf_id(origin, 0x71, 0);
    uint64_t held;
    assert_int_equal(ms_store_held(store, origin, 1, &held), MS_OK);
    assert_true(held >= (uint64_t) n_reported * 8);
    assert_int_equal(held % 8, 0); // whole blocks only
    size_t n_read = 0;
    tile_t t = {.next = 1};
    assert_int_equal(ms_store_read_blocks(store, origin, 1, 1, UINT64_MAX, 0,
                                          s_count_block, &n_read),
                     MS_OK);
    assert_int_equal(ms_store_read_blocks(store, origin, 1, 1, UINT64_MAX, 0,
                                          s_tile_block, &t),
                     MS_OK);
    assert_int_equal(n_read, held);
    assert_int_equal(t.next, held + 1);
    ms_store_stats_t st;
    ms_store_stats(store, &st);
    assert_int_equal(st.n_records, held);
    uint64_t n_results;
    assert_int_equal(ms_store_results_count(store, &n_results), MS_OK);
    assert_int_equal(n_results, held); // each applied exactly once
    fprintf(stderr, "crash: %u blocks reported, %llu records held\n",
            n_reported, (unsigned long long) held);
    // Merging goes on where it stopped; a block above it is refused.
    rec_t r;
    s_rec_result(&r, 60, 999999, MS_RESULT_STATUS_OK, 0.5);
    const uint8_t *p = r.bytes;
    assert_int_equal(ms_store_merge_block(store, origin, 1, held + 2, 1,
                                          &r.kind, &p, &r.len, NULL, 0, NULL),
                     MS_ERR_RANGE);
    assert_int_equal(ms_store_merge_block(store, origin, 1, held + 1, 1,
                                          &r.kind, &p, &r.len, NULL, 0, NULL),
                     MS_OK);
    free(r.bytes);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  Payload codec: round trip, malformed bytes refused.

static void
test_payload_codec(void **state)
{
    (void) state;
    rec_t r;
    s_rec_result(&r, 1, 2, MS_RESULT_STATUS_DIVERGED, 0.5);
    ms_store_payload_t *p = NULL;
    assert_int_equal(ms_store_payload_decode(r.kind, r.bytes, r.len, &p),
                     MS_OK);
    assert_int_equal(p->u.result.status, MS_RESULT_STATUS_DIVERGED);
    assert_int_equal(p->u.result.epoch, 1);
    uint8_t id[ID];
    s_task_id(id, 1, 2);
    assert_memory_equal(p->u.result.task_id, id, ID);
    ms_store_payload_destroy(&p);
    assert_null(p);
    assert_int_equal(
        ms_store_payload_decode(MS_RECORD_RESULT, r.bytes, r.len / 2, &p),
        MS_ERR_INVALID);
    assert_null(p);
    assert_int_equal(
        ms_store_payload_decode(MS_RECORD_DATASET, r.bytes, r.len, &p),
        MS_ERR_INVALID);
    assert_int_equal(ms_store_payload_decode(99, r.bytes, r.len, &p),
                     MS_ERR_UNSUPPORTED);
    free(r.bytes);
    s_rec_sweep(&r, 3, 5, -2, 77);
    assert_int_equal(ms_store_payload_decode(r.kind, r.bytes, r.len, &p),
                     MS_OK);
    assert_int_equal(p->u.sweep.n_tasks, 5);
    assert_int_equal(p->u.sweep.priority, -2);
    assert_int_equal(p->u.sweep.created_at_ms, 0); // not on the wire
    assert_memory_equal(p->u.sweep.sweep_id, s_sweeps[3].sweep_id, ID);
    s_task_id(id, 3, 4);
    assert_memory_equal(p->u.sweep.tasks[4].task_id, id, ID);
    assert_non_null(strstr(p->u.sweep.tasks[4].config_json, "\"seed\":5"));
    ms_store_payload_destroy(&p);
    // A sweep whose id is not its spec's hash is refused.
    ms_store_payload_t bad = {.kind = MS_RECORD_SWEEP};
    ms_sf_id(bad.u.sweep.sweep_id, 9, 9);
    bad.u.sweep.spec_json = "{\"name\":\"x\"}";
    bad.u.sweep.spec_len = strlen(bad.u.sweep.spec_json);
    uint8_t *bytes;
    size_t len;
    assert_int_equal(ms_store_payload_encode(&bad, &bytes, &len), MS_OK);
    assert_int_equal(ms_store_payload_decode(MS_RECORD_SWEEP, bytes, len, &p),
                     MS_ERR_INVALID);
    free(bytes);
    free(r.bytes);
    // Release reasons and failure classes survive the round trip.
    s_rec_claim(&r, MS_RECORD_RELEASE, 1, 0, 2, 7, MS_RELEASE_REASON_OUTRANKED);
    assert_int_equal(ms_store_payload_decode(r.kind, r.bytes, r.len, &p),
                     MS_OK);
    assert_int_equal(p->u.claim.reason, MS_RELEASE_REASON_OUTRANKED);
    assert_int_equal(p->u.claim.slot, 2);
    assert_int_equal(p->u.claim.epoch, 7);
    ms_store_payload_destroy(&p);
    free(r.bytes);
    s_rec_failure(&r, 1, 0, MS_FAILURE_CLASS_TASK);
    assert_int_equal(ms_store_payload_decode(r.kind, r.bytes, r.len, &p),
                     MS_OK);
    assert_int_equal(p->u.failure.failure_class, MS_FAILURE_CLASS_TASK);
    ms_store_payload_destroy(&p);
    free(r.bytes);
}

//  --------------------------------------------------------------------------
//  Sweep controls fold by logical time, then (origin, incarnation, seq),
//  the same whatever the arrival order. Node A's id sorts before B's, so
//  the old rule (key order only) folded B's pause after A's later resume.
//  Each stage's records are merged into fresh stores in several random
//  interleavings (each origin's records in seq order, as the log needs).

typedef struct {
    const uint8_t *origin;
    uint64_t seq;
    rec_t rec;
} ctl_rec_t;

static void
test_controls_lamport_order(void **state)
{
    fixture_t *fx = *state;
    uint8_t a[ID], b[ID], c[ID];
    ms_sf_id(a, 0xA1, 0);
    ms_sf_id(b, 0xB2, 0);
    ms_sf_id(c, 0x05, 0); // sorts first: its old resume came first by key
    ctl_rec_t recs[12];
    size_t n = 0;
#define ADD(node, sq)                                                          \
    do {                                                                       \
        recs[n].origin = node;                                                 \
        recs[n].seq = sq;                                                      \
        recs[n].rec = r;                                                       \
        n++;                                                                   \
    } while (0)
    rec_t r;
    s_rec_sweep(&r, 41, 3, 0, 0);
    ADD(a, 1);
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_PAUSE, 0, 1); // B pauses
    ADD(b, 1);
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_RESUME, 0, 2); // A saw it
    ADD(a, 2);
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_RESUME, 0, 0); // old node
    ADD(c, 1);
    size_t stage_end[5];
    stage_end[0] = n; // -> active (key order alone said paused)
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_PAUSE, 0, 3); // B saw resume
    ADD(b, 2);
    stage_end[1] = n; // -> paused
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_CANCEL, 0, 4);
    ADD(a, 3);
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_RESUME, 0, 5);
    ADD(b, 3);
    stage_end[2] = n; // -> cancelled: a resume does not undo a cancel
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_REOPEN, 0, 6);
    ADD(a, 4);
    stage_end[3] = n; // -> active again, its tasks pending
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_PAUSE, 0, 7); // concurrent:
    ADD(b, 4);
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_RESUME, 0, 7); // tie at 7
    ADD(a, 5);
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_PRIORITY, 5, 8);
    ADD(b, 5);
    s_rec_control_at(&r, 41, MS_SWEEP_CONTROL_PRIORITY, 9, 9);
    ADD(a, 6);
    stage_end[4] = n; // -> paused (tie: A's resume, then B's pause), 9
#undef ADD
    const ms_sweep_state_t want[5] = {MS_SWEEP_ACTIVE, MS_SWEEP_PAUSED,
                                      MS_SWEEP_CANCELLED, MS_SWEEP_ACTIVE,
                                      MS_SWEEP_PAUSED};
    const int32_t want_prio[5] = {0, 0, 0, 0, 9};
    const uint64_t want_time[5] = {2, 3, 5, 6, 9};
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int stage = 0; stage < 5; stage++) {
        for (int order = 0; order < 6; order++) {
            char name[32];
            snprintf(name, sizeof name, "ctl%d-%d", stage, order);
            ms_store_t *store = ms_sf_open(fx, name, 1 << 20);
            // A random interleaving; order 0 is the issue order.
            size_t next[3] = {0, 0, 0}; // per origin: records merged
            const uint8_t *origins[3] = {a, b, c};
            for (size_t done = 0; done < stage_end[stage]; done++) {
                size_t pick = done; // order 0: in issue order
                if (order > 0) {
                    size_t cand[3], n_cand = 0;
                    for (int o = 0; o < 3; o++) {
                        // the next record of origin o in this stage
                        uint64_t k = 0;
                        for (size_t i = 0; i < stage_end[stage]; i++)
                            if (recs[i].origin == origins[o] && k++ == next[o])
                                cand[n_cand++] = i;
                    }
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    pick = cand[rng % n_cand];
                }
                for (int o = 0; o < 3; o++)
                    if (recs[pick].origin == origins[o])
                        next[o]++;
                const uint8_t *p = recs[pick].rec.bytes;
                ms_store_merge_result_t out;
                assert_int_equal(ms_store_merge_block(
                                     store, recs[pick].origin, 1,
                                     recs[pick].seq, 1, &recs[pick].rec.kind,
                                     &p, &recs[pick].rec.len, NULL, 0, &out),
                                 MS_OK);
            }
            ms_store_sweep_t *sw = s_sweep(store, 41);
            if (sw->state != want[stage])
                fail_msg("stage %d order %d: state %s, want %s", stage, order,
                         ms_sweep_state_name(sw->state),
                         ms_sweep_state_name(want[stage]));
            assert_int_equal(sw->priority, want_prio[stage]);
            uint32_t cancelled = sw->counts[MS_TASK_CANCELLED];
            uint32_t pending = sw->counts[MS_TASK_PENDING];
            ms_store_sweep_destroy(&sw);
            assert_int_equal(cancelled, stage == 2 ? 3 : 0);
            assert_int_equal(pending, stage == 2 ? 0 : 3);
            uint64_t t = 0;
            assert_int_equal(
                ms_store_sweep_control_time(store, s_sweeps[41].sweep_id, &t),
                MS_OK);
            assert_int_equal(t, want_time[stage]);
            ms_store_destroy(&store);
        }
    }
    for (size_t i = 0; i < n; i++)
        free(recs[i].rec.bytes);
}

int
main(void)
{
    // MS_TEST_FILTER=test_catch_up* runs only the matching cases.
    if (getenv("MS_TEST_FILTER"))
        cmocka_set_test_filter(getenv("MS_TEST_FILTER"));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_payload_codec),
        cmocka_unit_test_setup_teardown(test_append_read_blocks, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_blocks, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_signed_blocks, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_merge_gap_duplicate, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_merge_blocks_batch, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_merge_blocks_one_commit, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test(test_result_row_status_like_jansson),
        cmocka_unit_test_setup_teardown(test_equivocation, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_equivocator_uncounted, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_derived_order_independent, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_first_result_counts, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_claims_failures_controls, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_controls_lamport_order, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_exchange_and_wiped_node, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_catch_up_100k, s_setup,
                                        ms_sf_teardown),
        cmocka_unit_test_setup_teardown(test_merge_crash_safety, s_setup,
                                        ms_sf_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
