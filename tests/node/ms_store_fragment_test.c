/*  =========================================================================
    ms_store_fragment_test - big records carried as FRAGMENT records

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    ms_store.h "Fragments", docs/POOL.md "Records": the FRAGMENT payload
    codec; a 100,000-task SWEEP (its canonical spec built with ms_spec)
    appended as one record on store A, its blocks read back and merged
    into store B in several calls and into store C shuffled (contiguity
    kept) with duplicates and re-cut blocks: all hold the sweep and its
    100,000 tasks with equal state digests (bytes, fragments and times
    printed); an opaque big payload of an unknown kind; fragment sets
    that are inconsistent (wrong hash, gap, inflate error, wrong raw_len)
    stored but not applied and counted; the same state under five
    arrival orders of two origins' records; a merge killed with SIGKILL in the
    middle of the fragments resumes after reopening and the sweep appears
    exactly once.
*/
#include "ms_store.h"
#include "ms_store_payload.h"

#include "ms_hash.h"
#include "ms_spec.h"
#include "ms_wire.h"
#include "ms_test_fs.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#define ID MS_STORE_ID_BYTES

//  --------------------------------------------------------------------------
//  Wall clock in seconds (monotonic).

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

// One sweep record built from a spec, shared by the tests.
typedef struct {
    uint8_t sweep_id[ID];
    size_t n_tasks;
    uint8_t *bytes; // the SWEEP payload
    size_t len;
} sweep_rec_t;

// One stored block, copied out of ms_store_read_blocks.
typedef struct {
    uint64_t first_seq;
    size_t n;
    uint32_t kinds[MS_RECORD_MAX_BLOCK];
    uint8_t *payloads[MS_RECORD_MAX_BLOCK];
    size_t lens[MS_RECORD_MAX_BLOCK];
} blk_t;

// A list of blocks.
typedef struct {
    blk_t *v;
    size_t n;
} blks_t;

// Shared by the tests (made once in the group setup).
typedef struct {
    char root[256];     // temporary dir
    sweep_rec_t big;    // 100,000 tasks
    sweep_rec_t small;  // 2,000 tasks
    uint8_t origin[ID]; // store A's node
    uint64_t inc_a;     // store A's incarnation
    blks_t blocks;      // store A's log
    uint64_t last_seq;  // store A's highest seq
    uint8_t digest[32]; // store A's state digest
} world_t;

//  --------------------------------------------------------------------------
//  Open (create) the store root/NAME.

static ms_store_t *
s_open_map(const world_t *w, const char *name, uint64_t map_size_bytes)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", w->root, name);
    ms_store_t *store = NULL;
    ms_diag_t diag;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.map_size_bytes = map_size_bytes; // grows as needed
    int rc = ms_store_open(&store, dir, &opts, &diag);
    if (rc != MS_OK)
        fprintf(stderr, "open %s: %s: %s\n", dir, diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    return store;
}

//  --------------------------------------------------------------------------
//  Open (create) the store root/NAME with a map that needs no growth
//  (each growth reruns the batch, here the 100,000-task apply).

static ms_store_t *
s_open(const world_t *w, const char *name)
{
    return s_open_map(w, name, (uint64_t) 1 << 30);
}

//  --------------------------------------------------------------------------
//  A test id: 32 bytes from a tag.

static void
s_id(uint8_t id[ID], uint8_t tag)
{
    memset(id, tag, ID);
}

//  --------------------------------------------------------------------------
//  Build a grid sweep of N_SEEDS x N_WIDTHS noop tasks and its SWEEP
//  payload.

static int
s_make_sweep(sweep_rec_t *r, const char *name, uint32_t n_seeds,
             uint32_t n_widths)
{
    size_t cap = 512 + (size_t) (n_seeds + n_widths) * 12;
    char *yaml = malloc(cap);
    if (!yaml)
        return -1;
    size_t off = (size_t) snprintf(yaml, cap,
                                   "name: %s\ndataset: fashion-mnist\n"
                                   "method: grid\nparameters:\n"
                                   "  kind: {value: noop}\n"
                                   "  seed: {values: [",
                                   name);
    for (uint32_t i = 0; i < n_seeds; i++)
        off += (size_t) snprintf(yaml + off, cap - off, "%s%u", i ? "," : "",
                                 i + 1);
    off += (size_t) snprintf(yaml + off, cap - off, "]}\n  width: {values: [");
    for (uint32_t i = 0; i < n_widths; i++)
        off += (size_t) snprintf(yaml + off, cap - off, "%s%u", i ? "," : "",
                                 i + 1);
    snprintf(yaml + off, cap - off, "]}\n");
    ms_spec_options_t opts;
    ms_spec_options_defaults(&opts);
    ms_spec_t *spec = NULL;
    ms_diag_t diag;
    int rc = ms_spec_parse(yaml, strlen(yaml), &opts, &spec, &diag);
    free(yaml);
    if (rc != MS_OK) {
        fprintf(stderr, "spec: %s: %s\n", diag.where, diag.reason);
        return -1;
    }
    r->n_tasks = ms_spec_task_count(spec);
    memcpy(r->sweep_id, ms_spec_sweep_id(spec)->bytes, ID);
    ms_store_payload_t p = {.kind = MS_RECORD_SWEEP};
    memcpy(p.u.sweep.sweep_id, r->sweep_id, ID);
    p.u.sweep.spec_json = ms_spec_canonical(spec, &p.u.sweep.spec_len);
    rc = ms_store_payload_encode(&p, &r->bytes, &r->len);
    ms_spec_destroy(&spec);
    if (rc != MS_OK)
        fprintf(stderr, "encode sweep: %s\n", ms_strerror(rc));
    return rc == MS_OK ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  Block callback: copy the block into a blks_t.

static int
s_copy_block(void *arg, const uint8_t *origin, uint64_t inc, uint64_t first,
             size_t n, const uint32_t *kinds, const uint8_t *const *payloads,
             const size_t *lens, const uint8_t *sig, size_t sig_len)
{
    (void) origin;
    (void) inc;
    (void) sig;
    (void) sig_len;
    blks_t *l = arg;
    blk_t *grown = realloc(l->v, (l->n + 1) * sizeof *grown);
    if (!grown)
        return MS_ERR_NOMEM;
    l->v = grown;
    blk_t *b = &l->v[l->n++];
    memset(b, 0, sizeof *b);
    b->first_seq = first;
    b->n = n;
    for (size_t i = 0; i < n; i++) {
        b->kinds[i] = kinds[i];
        b->lens[i] = lens[i];
        b->payloads[i] = malloc(lens[i] ? lens[i] : 1);
        if (!b->payloads[i])
            return MS_ERR_NOMEM;
        memcpy(b->payloads[i], payloads[i], lens[i]);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Free a block list.

static void
s_blks_free(blks_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = 0; j < l->v[i].n; j++)
            free(l->v[i].payloads[j]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

//  --------------------------------------------------------------------------
//  Merge records [from, from + n) of block B (seq-aligned) of world W's
//  origin into STORE.

static int
s_merge_part(ms_store_t *store, const world_t *w, const blk_t *b, size_t from,
             size_t n, ms_store_merge_result_t *out)
{
    return ms_store_merge_block(store, w->origin, w->inc_a, b->first_seq + from,
                                n, b->kinds + from,
                                (const uint8_t *const *) b->payloads + from,
                                b->lens + from, NULL, 0, out);
}

//  --------------------------------------------------------------------------
//  Group setup: the sweeps, store A with the big sweep appended between
//  two small records, its blocks and digest.

static int
s_group_setup(void **state)
{
    world_t *w = calloc(1, sizeof *w);
    if (!w)
        return -1;
    snprintf(w->root, sizeof w->root, "/tmp/ms_store_fragment_test.XXXXXX");
    if (!mkdtemp(w->root))
        return -1;
    double t0 = s_now();
    if (s_make_sweep(&w->big, "big", 1000, 100) != 0 ||
        s_make_sweep(&w->small, "small", 2000, 1) != 0)
        return -1;
    fprintf(stderr,
            "specs built in %.2f s: big %zu tasks, %zu payload bytes; small "
            "%zu tasks, %zu bytes\n",
            s_now() - t0, w->big.n_tasks, w->big.len, w->small.n_tasks,
            w->small.len);
    *state = w;
    return 0;
}

//  --------------------------------------------------------------------------
//  Group teardown.

static int
s_group_teardown(void **state)
{
    world_t *w = *state;
    s_blks_free(&w->blocks);
    free(w->big.bytes);
    free(w->small.bytes);
    ms_tf_rm_rf(w->root);
    free(w);
    return 0;
}

//  --------------------------------------------------------------------------
//  Count the sweeps of a store.

static int
s_count_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    (void) sweep;
    (*(size_t *) arg)++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Assert that STORE holds sweep R with all its tasks pending, and only
//  that sweep.

static void
s_assert_sweep(ms_store_t *store, const sweep_rec_t *r)
{
    ms_store_sweep_t *sw = NULL;
    assert_int_equal(ms_store_get_sweep(store, r->sweep_id, &sw), MS_OK);
    assert_int_equal(sw->n_tasks, r->n_tasks);
    assert_int_equal(sw->counts[MS_TASK_PENDING], r->n_tasks);
    ms_store_sweep_destroy(&sw);
    size_t n = 0;
    assert_int_equal(ms_store_list_sweeps(store, s_count_sweep, &n), MS_OK);
    assert_int_equal(n, 1);
}

//  --------------------------------------------------------------------------
//  The FRAGMENT payload codec: round trip; out-of-contract values refused.

static void
test_fragment_codec(void **state)
{
    (void) state;
    uint8_t data[100];
    memset(data, 7, sizeof data);
    ms_wire_fragment_t f = {.inner_kind = MS_WIRE_KIND_SWEEP,
                            .total_len = 300,
                            .raw_len = 5000,
                            .offset = 200,
                            .compression = MS_WIRE_COMPRESSION_DEFLATE,
                            .data = data,
                            .data_len = sizeof data};
    memset(f.hash, 0xab, sizeof f.hash);
    uint8_t *buf = NULL;
    size_t n = 0;
    assert_int_equal(ms_wire_encode_fragment(&f, &buf, &n), MS_OK);
    ms_wire_fragment_t *back = NULL;
    assert_int_equal(ms_wire_decode_fragment(buf, n, &back), MS_OK);
    assert_int_equal(back->inner_kind, MS_WIRE_KIND_SWEEP);
    assert_int_equal(back->total_len, 300);
    assert_int_equal(back->raw_len, 5000);
    assert_int_equal(back->offset, 200);
    assert_int_equal(back->compression, MS_WIRE_COMPRESSION_DEFLATE);
    assert_int_equal(back->data_len, sizeof data);
    assert_memory_equal(back->data, data, sizeof data);
    assert_memory_equal(back->hash, f.hash, 32);
    ms_wire_fragment_destroy(&back);
    assert_null(back);
    ms_wire_fragment_destroy(&back); // NULL-safe
    // Malformed bytes: refused, not a crash.
    assert_int_equal(ms_wire_decode_fragment(buf, n / 2, &back),
                     MS_ERR_PROTOCOL);
    assert_null(back);
    free(buf);
    // Out of contract: past the stream, nested, raw without raw == total,
    // unknown compression, over the logical bound.
    ms_wire_fragment_t bad = f;
    bad.offset = 250;
    assert_int_equal(ms_wire_encode_fragment(&bad, &buf, &n), MS_ERR_INVALID);
    bad = f;
    bad.inner_kind = MS_WIRE_KIND_FRAGMENT;
    assert_int_equal(ms_wire_encode_fragment(&bad, &buf, &n), MS_ERR_INVALID);
    bad = f;
    bad.compression = MS_WIRE_COMPRESSION_NONE;
    assert_int_equal(ms_wire_encode_fragment(&bad, &buf, &n), MS_ERR_INVALID);
    bad = f;
    bad.compression = 2;
    assert_int_equal(ms_wire_encode_fragment(&bad, &buf, &n), MS_ERR_INVALID);
    bad = f;
    bad.raw_len = (uint64_t) MS_WIRE_MAX_LOGICAL_PAYLOAD_BYTES + 1;
    assert_int_equal(ms_wire_encode_fragment(&bad, &buf, &n), MS_ERR_INVALID);
    assert_null(buf);
    // A big sweep payload: only the _big codec takes it.
    ms_wire_sweep_t sw = {.spec = malloc(100000)};
    assert_non_null(sw.spec);
    memset(sw.spec, 'x', 99999);
    sw.spec[99999] = 0;
    assert_int_equal(ms_wire_encode_sweep(&sw, &buf, &n), MS_ERR_INVALID);
    assert_int_equal(ms_wire_encode_sweep_big(&sw, &buf, &n), MS_OK);
    ms_wire_sweep_t *swb = NULL;
    assert_int_equal(ms_wire_decode_sweep(buf, n, &swb), MS_ERR_PROTOCOL);
    assert_int_equal(ms_wire_decode_sweep_big(buf, n, &swb), MS_OK);
    assert_string_equal(swb->spec, sw.spec);
    ms_wire_sweep_destroy(&swb);
    free(buf);
    free(sw.spec);
}

//  --------------------------------------------------------------------------
//  The 100,000-task sweep: appended on A as one record (between two small
//  ones), read back as blocks, merged into B block by block in several
//  calls; same sweep, same tasks, same digest. Sizes and times printed.

static void
test_sweep_100k(void **state)
{
    world_t *w = *state;
    s_id(w->origin, 0xa1);
    ms_store_t *a = s_open(w, "a");
    w->inc_a = ms_store_incarnation(a);
    uint8_t opaque[3] = {1, 2, 3};
    ms_record_key_t k0, k1, k2;
    assert_int_equal(ms_store_append(a, w->origin, 77, opaque, 3, &k0), MS_OK);
    double t0 = s_now();
    assert_int_equal(ms_store_append(a, w->origin, MS_RECORD_SWEEP,
                                     w->big.bytes, w->big.len, &k1),
                     MS_OK);
    double t_append = s_now() - t0;
    ms_store_payload_t pc = {.kind = MS_RECORD_SWEEP_CONTROL};
    memcpy(pc.u.control.sweep_id, w->big.sweep_id, ID);
    pc.u.control.action = MS_SWEEP_CONTROL_PRIORITY;
    pc.u.control.priority = 5;
    uint8_t *cbytes;
    size_t clen;
    assert_int_equal(ms_store_payload_encode(&pc, &cbytes, &clen), MS_OK);
    assert_int_equal(ms_store_append(a, w->origin, MS_RECORD_SWEEP_CONTROL,
                                     cbytes, clen, &k2),
                     MS_OK);
    free(cbytes);
    // The caller sees one record: its key is its first fragment's.
    assert_int_equal(k0.seq, 1);
    assert_int_equal(k1.seq, 2);
    size_t n_frags = (size_t) (k2.seq - k1.seq);
    assert_true(n_frags > 1);
    w->last_seq = k2.seq;
    s_assert_sweep(a, &w->big);
    ms_store_sweep_t *sw = NULL;
    assert_int_equal(ms_store_get_sweep(a, w->big.sweep_id, &sw), MS_OK);
    assert_int_equal(sw->priority, 5);
    ms_store_sweep_destroy(&sw);
    ms_store_stats_t st;
    ms_store_stats(a, &st);
    assert_int_equal(st.n_records, w->last_seq);
    assert_int_equal(st.n_bad_fragments, 0);

    // Read A's log back: fragments are records like any other, each
    // within the wire's record limit.
    assert_int_equal(ms_store_read_blocks(a, w->origin, w->inc_a, 1, UINT64_MAX,
                                          0, s_copy_block, &w->blocks),
                     MS_OK);
    size_t n_read = 0;
    uint64_t compressed = 0, raw = 0;
    for (size_t i = 0; i < w->blocks.n; i++) {
        const blk_t *b = &w->blocks.v[i];
        assert_int_equal(b->first_seq, n_read + 1);
        for (size_t j = 0; j < b->n; j++) {
            assert_true(b->lens[j] <= MS_WIRE_MAX_PAYLOAD_BYTES);
            if (b->kinds[j] != MS_RECORD_FRAGMENT)
                continue;
            ms_wire_fragment_t *f = NULL;
            assert_int_equal(
                ms_wire_decode_fragment(b->payloads[j], b->lens[j], &f), MS_OK);
            assert_int_equal(f->inner_kind, MS_RECORD_SWEEP);
            assert_int_equal(f->raw_len, w->big.len);
            assert_int_equal(f->compression, MS_WIRE_COMPRESSION_DEFLATE);
            compressed = f->total_len;
            raw = f->raw_len;
            ms_wire_fragment_destroy(&f);
        }
        n_read += b->n;
    }
    assert_int_equal(n_read, w->last_seq);
    assert_int_equal(ms_store_state_digest(a, w->digest), MS_OK);

    // Into B: block by block, each block in two calls (across merge
    // calls and block boundaries), then the whole log again (duplicates).
    // B starts small: its map grows (the batch reruns, fragments read
    // back again) while the sweep applies.
    ms_store_t *b = s_open_map(w, "b", (uint64_t) 64 << 20);
    t0 = s_now();
    for (size_t i = 0; i < w->blocks.n; i++) {
        const blk_t *bl = &w->blocks.v[i];
        size_t half = bl->n / 2;
        ms_store_merge_result_t out;
        if (half > 0) {
            assert_int_equal(s_merge_part(b, w, bl, 0, half, &out), MS_OK);
            assert_int_equal(out.n_new, half);
        }
        assert_int_equal(s_merge_part(b, w, bl, half, bl->n - half, &out),
                         MS_OK);
        assert_int_equal(out.n_new, bl->n - half);
    }
    double t_merge = s_now() - t0;
    for (size_t i = 0; i < w->blocks.n; i++) {
        ms_store_merge_result_t out;
        const blk_t *bl = &w->blocks.v[i];
        assert_int_equal(s_merge_part(b, w, bl, 0, bl->n, &out), MS_OK);
        assert_int_equal(out.n_duplicate, bl->n);
    }
    s_assert_sweep(b, &w->big);
    uint8_t db[32];
    assert_int_equal(ms_store_state_digest(b, db), MS_OK);
    assert_memory_equal(db, w->digest, 32);
    ms_store_stats(b, &st);
    assert_true(st.n_map_grows > 0);
    assert_int_equal(st.n_records, w->last_seq);
    assert_int_equal(st.n_bad_fragments, 0);
    fprintf(stderr,
            "fragments: %zu tasks, %llu payload bytes -> %llu compressed "
            "(%.1fx), %zu fragments in %zu blocks; append %.2f s, merge "
            "%.2f s\n",
            w->big.n_tasks, (unsigned long long) raw,
            (unsigned long long) compressed,
            compressed ? (double) raw / (double) compressed : 0.0, n_frags,
            w->blocks.n, t_append, t_merge);
    ms_store_destroy(&b);
    ms_store_destroy(&a);
}

//  --------------------------------------------------------------------------
//  Into C in a shuffled order that contiguity allows: blocks re-cut at
//  random points, tried in random order (a gap is refused and tried
//  again later), already merged pieces sent again. Same digest as A.

static void
test_shuffled_merge(void **state)
{
    world_t *w = *state;
    assert_true(w->blocks.n > 0);
    // Cut every block into pieces of 1..5 records.
    typedef struct {
        const blk_t *b;
        size_t from, n;
        bool done;
    } piece_t;
    size_t cap = (size_t) w->last_seq, n_pieces = 0;
    piece_t *pieces = calloc(cap, sizeof *pieces);
    assert_non_null(pieces);
    srand(12345);
    for (size_t i = 0; i < w->blocks.n; i++) {
        const blk_t *b = &w->blocks.v[i];
        for (size_t from = 0; from < b->n;) {
            size_t n = 1 + (size_t) rand() % 5;
            if (n > b->n - from)
                n = b->n - from;
            pieces[n_pieces++] = (piece_t){.b = b, .from = from, .n = n};
            from += n;
        }
    }
    ms_store_t *c = s_open(w, "c");
    size_t n_done = 0, n_tries = 0, n_gaps = 0, n_dups = 0;
    while (n_done < n_pieces) {
        assert_true(++n_tries < 100000);
        piece_t *p = &pieces[(size_t) rand() % n_pieces];
        ms_store_merge_result_t out;
        int rc = s_merge_part(c, w, p->b, p->from, p->n, &out);
        if (rc == MS_ERR_RANGE) {
            assert_false(p->done);
            n_gaps++;
            continue;
        }
        assert_int_equal(rc, MS_OK);
        if (p->done) {
            assert_int_equal(out.n_duplicate, p->n);
            n_dups++;
        } else {
            assert_int_equal(out.n_new, p->n);
            p->done = true;
            n_done++;
        }
    }
    free(pieces);
    assert_true(n_gaps > 0);
    assert_true(n_dups > 0);
    s_assert_sweep(c, &w->big);
    uint8_t dc[32];
    assert_int_equal(ms_store_state_digest(c, dc), MS_OK);
    assert_memory_equal(dc, w->digest, 32);
    ms_store_destroy(&c);
}

//  --------------------------------------------------------------------------
//  A big payload of a kind this build does not know (incompressible: kept
//  raw) and a fragmented sweep in one ms_store_append_many: more than 64
//  records, in consecutive blocks; stored and served, the sweep applied.

static void
test_append_many_opaque(void **state)
{
    world_t *w = *state;
    ms_store_t *s = s_open(w, "opaque");
    uint8_t me[ID];
    s_id(me, 0xb2);
    size_t big = 70u * MS_STORE_FRAGMENT_BYTES; // 70 fragments
    uint8_t *noise = malloc(big);
    assert_non_null(noise);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < big; i++) { // xorshift: does not compress
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        noise[i] = (uint8_t) x;
    }
    uint32_t kinds[3] = {99, MS_RECORD_SWEEP, 98};
    const void *pls[3] = {noise, w->small.bytes, "x"};
    size_t lens[3] = {big, w->small.len, 1};
    ms_record_key_t keys[3];
    assert_int_equal(ms_store_append_many(s, me, 3, kinds, pls, lens, keys),
                     MS_OK);
    assert_int_equal(keys[0].seq, 1);
    assert_int_equal(keys[1].seq, 71);
    assert_true(keys[2].seq > keys[1].seq);
    s_assert_sweep(s, &w->small);
    ms_store_stats_t st;
    ms_store_stats(s, &st);
    assert_int_equal(st.n_records, keys[2].seq);
    assert_true(st.n_blocks >= 2);
    // Served like any record; the opaque stream reassembles to the input.
    blks_t l = {0};
    assert_int_equal(ms_store_read_blocks(s, me, keys[0].incarnation, 1,
                                          UINT64_MAX, 0, s_copy_block, &l),
                     MS_OK);
    uint8_t *back = malloc(big);
    assert_non_null(back);
    size_t n_rec = 0, got = 0;
    for (size_t i = 0; i < l.n; i++) {
        assert_true(l.v[i].n <= MS_RECORD_MAX_BLOCK);
        for (size_t j = 0; j < l.v[i].n; j++, n_rec++) {
            if (n_rec >= 70)
                continue;
            assert_int_equal(l.v[i].kinds[j], MS_RECORD_FRAGMENT);
            ms_wire_fragment_t *f = NULL;
            assert_int_equal(
                ms_wire_decode_fragment(l.v[i].payloads[j], l.v[i].lens[j], &f),
                MS_OK);
            assert_int_equal(f->inner_kind, 99);
            assert_int_equal(f->compression, MS_WIRE_COMPRESSION_NONE);
            assert_int_equal(f->offset, got);
            memcpy(back + got, f->data, f->data_len);
            got += f->data_len;
            ms_wire_fragment_destroy(&f);
        }
    }
    assert_int_equal(n_rec, keys[2].seq);
    assert_int_equal(got, big);
    assert_memory_equal(back, noise, big);
    free(back);
    s_blks_free(&l);
    // Refused, nothing stored: a FRAGMENT from a caller, over the bound,
    // a known kind that does not decode.
    uint8_t frag[4] = {0};
    assert_int_equal(ms_store_append(s, me, MS_RECORD_FRAGMENT, frag, 4, NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_store_append(s, me, 99, noise,
                                     (size_t) MS_STORE_MAX_LOGICAL_BYTES + 1,
                                     NULL),
                     MS_ERR_INVALID);
    memset(noise, 0xff, 2 * MS_STORE_FRAGMENT_BYTES);
    assert_int_equal(ms_store_append(s, me, MS_RECORD_SWEEP, noise,
                                     2 * MS_STORE_FRAGMENT_BYTES, NULL),
                     MS_ERR_INVALID);
    ms_store_stats(s, &st);
    assert_int_equal(st.n_records, keys[2].seq);
    free(noise);
    ms_store_destroy(&s);
}

//  --------------------------------------------------------------------------
//  Cut PAYLOAD (kind KIND) into fragments of CHUNK stream bytes by hand,
//  with a defect: 0 none, 1 wrong hash, 2 a gap in offsets, 3 corrupt
//  deflate stream, 4 raw_len one short. *n gets the count.

static void
s_hand_fragments(const uint8_t *payload, size_t len, uint32_t kind,
                 size_t chunk, int defect, uint8_t ***bufs, size_t **lens,
                 uint32_t **kinds, size_t *n)
{
    uLongf zlen = compressBound((uLong) len);
    uint8_t *z = malloc(zlen);
    assert_non_null(z);
    assert_int_equal(compress2(z, &zlen, payload, (uLong) len, 6), Z_OK);
    if (defect == 3)
        memset(z + zlen / 2, 0x5a, 16);
    ms_wire_fragment_t f = {.inner_kind = kind,
                            .total_len = zlen,
                            .raw_len = defect == 4 ? len - 1 : len,
                            .compression = MS_WIRE_COMPRESSION_DEFLATE};
    ms_hash_t h;
    ms_hash_bytes(payload, len, &h);
    memcpy(f.hash, h.bytes, 32);
    if (defect == 1)
        f.hash[5] ^= 1;
    size_t count = (zlen + chunk - 1) / chunk;
    assert_true(count >= 3);
    *bufs = calloc(count, sizeof **bufs);
    *lens = calloc(count, sizeof **lens);
    *kinds = calloc(count, sizeof **kinds);
    size_t m = 0;
    for (size_t j = 0; j < count; j++) {
        if (defect == 2 && j == 1)
            continue; // the second piece never sent
        f.offset = j * chunk;
        f.data = z + f.offset;
        f.data_len = zlen - f.offset < chunk ? zlen - f.offset : chunk;
        assert_int_equal(ms_wire_encode_fragment(&f, &(*bufs)[m], &(*lens)[m]),
                         MS_OK);
        (*kinds)[m++] = MS_RECORD_FRAGMENT;
    }
    *n = m;
    free(z);
}

//  --------------------------------------------------------------------------
//  Inconsistent fragment sets from four origins: stored (the vector
//  advances, read_blocks serves them) but not applied, each counted once;
//  a good hand-cut set from a fifth origin applies.

static void
test_bad_fragments(void **state)
{
    world_t *w = *state;
    ms_store_t *s = s_open(w, "bad");
    const sweep_rec_t *r = &w->small;
    uint64_t total = 0;
    for (int defect = 1; defect <= 5; defect++) {
        uint8_t origin[ID];
        s_id(origin, (uint8_t) (0xc0 + defect));
        uint8_t **bufs;
        size_t *lens, n;
        uint32_t *kinds;
        s_hand_fragments(r->bytes, r->len, MS_RECORD_SWEEP, 1000,
                         defect == 5 ? 0 : defect, &bufs, &lens, &kinds, &n);
        // In blocks of up to 7 (several merge calls).
        for (size_t i = 0; i < n; i += 7) {
            size_t m = n - i < 7 ? n - i : 7;
            ms_store_merge_result_t out;
            assert_int_equal(
                ms_store_merge_block(s, origin, 9, 1 + i, m, kinds + i,
                                     (const uint8_t *const *) bufs + i,
                                     lens + i, NULL, 0, &out),
                MS_OK);
            assert_int_equal(out.n_new, m);
        }
        uint64_t held;
        assert_int_equal(ms_store_held(s, origin, 9, &held), MS_OK);
        assert_int_equal(held, n);
        total += n;
        ms_store_stats_t st;
        ms_store_stats(s, &st);
        assert_int_equal(st.n_records, total);
        ms_store_sweep_t *sw = NULL;
        if (defect < 5) {
            assert_int_equal(st.n_bad_fragments, (uint64_t) defect);
            assert_int_equal(ms_store_get_sweep(s, r->sweep_id, &sw),
                             MS_ERR_NOTFOUND);
        } else {
            assert_int_equal(st.n_bad_fragments, 4);
            s_assert_sweep(s, r);
        }
        for (size_t i = 0; i < n; i++)
            free(bufs[i]);
        free(bufs);
        free(lens);
        free(kinds);
    }
    // Reopened: the count is the store's, not the process's.
    ms_store_destroy(&s);
    s = s_open(w, "bad");
    ms_store_stats_t st;
    ms_store_stats(s, &st);
    assert_int_equal(st.n_bad_fragments, 4);
    s_assert_sweep(s, r);
    ms_store_destroy(&s);
}

//  --------------------------------------------------------------------------
//  Merge, into STORE, origin P's fragmented sweep (N_P records) and
//  origin Q's two controls of it, interleaved at random (SEED) in pieces
//  of 1..4 records, each origin in seq order, some pieces sent twice.

static void
s_merge_interleaved(ms_store_t *store, unsigned seed, const uint8_t *op,
                    uint8_t **bp, size_t *lp, uint32_t *kp, size_t n_p,
                    const uint8_t *oq, uint8_t **bq, size_t *lq, uint32_t *kq)
{
    srand(seed);
    size_t next_p = 0, next_q = 0;
    while (next_p < n_p || next_q < 2) {
        bool take_p = next_q == 2 || (next_p < n_p && rand() % 3 != 0);
        ms_store_merge_result_t out;
        if (take_p) {
            size_t n = 1 + (size_t) rand() % 4;
            if (n > n_p - next_p)
                n = n_p - next_p;
            size_t from = next_p;
            if (from > 0 && rand() % 4 == 0)
                from--; // overlaps what is held: a duplicate
            assert_int_equal(ms_store_merge_block(
                                 store, op, 3, 1 + from, next_p + n - from,
                                 kp + from, (const uint8_t *const *) bp + from,
                                 lp + from, NULL, 0, &out),
                             MS_OK);
            assert_int_equal(out.n_new, n);
            next_p += n;
        } else {
            assert_int_equal(
                ms_store_merge_block(store, oq, 4, 1 + next_q, 1, kq + next_q,
                                     (const uint8_t *const *) bq + next_q,
                                     lq + next_q, NULL, 0, &out),
                MS_OK);
            assert_int_equal(out.n_new, 1);
            next_q++;
        }
    }
}

//  --------------------------------------------------------------------------
//  Derived state under any arrival order contiguity allows: a sweep in
//  many fragments from one origin and controls of it (arriving before or
//  after the sweep is complete) from another, interleaved five ways: the
//  same state digest, the sweep paused with the control's priority.

static void
test_arrival_order(void **state)
{
    world_t *w = *state;
    const sweep_rec_t *r = &w->small;
    uint8_t op[ID], oq[ID];
    s_id(op, 0xd1);
    s_id(oq, 0xd2);
    uint8_t **bp;
    size_t *lp, n_p;
    uint32_t *kp;
    s_hand_fragments(r->bytes, r->len, MS_RECORD_SWEEP, 1000, 0, &bp, &lp, &kp,
                     &n_p);
    uint8_t *bq[2];
    size_t lq[2];
    uint32_t kq[2] = {MS_RECORD_SWEEP_CONTROL, MS_RECORD_SWEEP_CONTROL};
    ms_store_payload_t pc = {.kind = MS_RECORD_SWEEP_CONTROL};
    memcpy(pc.u.control.sweep_id, r->sweep_id, ID);
    pc.u.control.action = MS_SWEEP_CONTROL_PAUSE;
    assert_int_equal(ms_store_payload_encode(&pc, &bq[0], &lq[0]), MS_OK);
    pc.u.control.action = MS_SWEEP_CONTROL_PRIORITY;
    pc.u.control.priority = 7;
    assert_int_equal(ms_store_payload_encode(&pc, &bq[1], &lq[1]), MS_OK);
    uint8_t first[32];
    for (unsigned seed = 1; seed <= 5; seed++) {
        char name[32];
        snprintf(name, sizeof name, "order%u", seed);
        ms_store_t *s = s_open(w, name);
        s_merge_interleaved(s, seed, op, bp, lp, kp, n_p, oq, bq, lq, kq);
        ms_store_sweep_t *sw = NULL;
        assert_int_equal(ms_store_get_sweep(s, r->sweep_id, &sw), MS_OK);
        assert_int_equal(sw->n_tasks, r->n_tasks);
        assert_int_equal(sw->state, MS_SWEEP_PAUSED);
        assert_int_equal(sw->priority, 7);
        ms_store_sweep_destroy(&sw);
        uint8_t d[32];
        assert_int_equal(ms_store_state_digest(s, d), MS_OK);
        if (seed == 1)
            memcpy(first, d, 32);
        else
            assert_memory_equal(d, first, 32);
        ms_store_stats_t st;
        ms_store_stats(s, &st);
        assert_int_equal(st.n_records, n_p + 2);
        assert_int_equal(st.n_bad_fragments, 0);
        ms_store_destroy(&s);
    }
    for (size_t i = 0; i < n_p; i++)
        free(bp[i]);
    free(bp);
    free(lp);
    free(kp);
    free(bq[0]);
    free(bq[1]);
}

//  --------------------------------------------------------------------------
//  Child of test_kill_mid_merge: merge A's log into root/kill in pieces
//  of 2 records, writing 1 before each piece and 2 before the piece that
//  holds the last fragment; never returns.

static void
s_kill_child(const void *arg, int fd)
{
    const world_t *w = arg;
    ms_store_t *s = NULL;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/kill", w->root);
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.map_size_bytes = (uint64_t) 1 << 30;
    if (ms_store_open(&s, dir, &opts, NULL) != MS_OK)
        _exit(2);
    for (size_t i = 0; i < w->blocks.n; i++) {
        const blk_t *b = &w->blocks.v[i];
        for (size_t from = 0; from < b->n; from += 2) {
            size_t n = b->n - from < 2 ? b->n - from : 2;
            uint8_t tag = 1;
            // The piece with the last fragment: the control record
            // follows it, at seq last_seq.
            if (b->first_seq + from + n >= w->last_seq)
                tag = 2;
            if (write(fd, &tag, 1) != 1)
                _exit(3);
            if (s_merge_part(s, w, b, from, n, NULL) != MS_OK)
                _exit(4);
        }
    }
    _exit(0);
}

//  --------------------------------------------------------------------------
//  SIGKILL while merging the fragments (during the piece whose last
//  fragment applies the 100,000 tasks): after reopening, either that
//  piece is wholly in (the sweep is there) or wholly out (no sweep, no
//  task); merging resumes and the sweep appears exactly once.

static void
test_kill_mid_merge(void **state)
{
    world_t *w = *state;
    assert_true(w->blocks.n > 0);
    int fd = -1;
    pid_t pid = ms_tf_fork_piped(s_kill_child, w, &fd);
    assert_true(pid >= 0);
    uint8_t tag;
    size_t n_pieces = 0;
    while (read(fd, &tag, 1) == 1) {
        n_pieces++;
        if (tag == 2) {
            struct timespec ts = {0, 150 * 1000 * 1000};
            nanosleep(&ts, NULL); // inside the big apply (it takes longer)
            kill(pid, SIGKILL);
            break;
        }
    }
    int status;
    waitpid(pid, &status, 0);
    close(fd);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

    ms_store_t *s = s_open(w, "kill");
    uint64_t held;
    assert_int_equal(ms_store_held(s, w->origin, w->inc_a, &held), MS_OK);
    ms_store_sweep_t *sw = NULL;
    int rc = ms_store_get_sweep(s, w->big.sweep_id, &sw);
    bool complete = held + 1 >= w->last_seq;
    fprintf(stderr,
            "kill: %zu pieces started, %llu of %llu records held, "
            "sweep %s\n",
            n_pieces, (unsigned long long) held,
            (unsigned long long) w->last_seq, rc == MS_OK ? "there" : "absent");
    assert_int_equal(rc, complete ? MS_OK : MS_ERR_NOTFOUND);
    ms_store_sweep_destroy(&sw);
    assert_true(held >= 1);
    // Resume from held + 1 (whole blocks again: the held part is skipped).
    for (size_t i = 0; i < w->blocks.n; i++) {
        const blk_t *b = &w->blocks.v[i];
        if (b->first_seq + b->n - 1 <= held)
            continue;
        ms_store_merge_result_t out;
        assert_int_equal(s_merge_part(s, w, b, 0, b->n, &out), MS_OK);
    }
    assert_int_equal(ms_store_held(s, w->origin, w->inc_a, &held), MS_OK);
    assert_int_equal(held, w->last_seq);
    s_assert_sweep(s, &w->big);
    uint8_t dk[32];
    assert_int_equal(ms_store_state_digest(s, dk), MS_OK);
    assert_memory_equal(dk, w->digest, 32);
    ms_store_destroy(&s);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fragment_codec),
        cmocka_unit_test(test_sweep_100k),
        cmocka_unit_test(test_shuffled_merge),
        cmocka_unit_test(test_append_many_opaque),
        cmocka_unit_test(test_bad_fragments),
        cmocka_unit_test(test_arrival_order),
        cmocka_unit_test(test_kill_mid_merge),
    };
    return cmocka_run_group_tests(tests, s_group_setup, s_group_teardown);
}
