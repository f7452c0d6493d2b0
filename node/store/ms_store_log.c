/*  =========================================================================
    ms_store_log - the record log in the store: records, blocks, version
   vectors, cuts, equivocation, items, and the append and merge ops

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The log is the store's ground truth: every derived table is a function
    of it (ms_store_derive.c). Records are keyed by origin, incarnation and
    seq; a block of an origin is stored once, signed; the version vector
    and the cuts say how far each origin is held contiguously; two
    different blocks at one position make their origin an equivocator.
    The append and merge ops run on the writer thread, in its batch
    transaction.
*/
#include "ms_store.h"
#include "ms_store_internal.h"

#include "ms_hash.h"
#include "ms_store_payload.h"
#include <lmdb.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/vfs.h>
#include <zlib.h>

//  --------------------------------------------------------------------------
//  Build a record key origin || incarnation || seq.

void
ms_store_rec_key(uint8_t k[MS_STORE_KEY], const uint8_t *origin, uint64_t inc,
                 uint64_t seq)
{
    memcpy(k, origin, MS_STORE_ID);
    ms_be_put64(k + MS_STORE_ID, inc);
    ms_be_put64(k + MS_STORE_ID + 8, seq);
}

//  --------------------------------------------------------------------------
//  Turn a record key back into its parts.

void
ms_store_key_parse(const uint8_t *k, ms_record_key_t *key)
{
    memcpy(key->origin, k, MS_STORE_ID);
    key->incarnation = ms_be_get64(k + MS_STORE_ID);
    key->seq = ms_be_get64(k + MS_STORE_ID + 8);
}

//  --------------------------------------------------------------------------
//  Record hash: BLAKE2b of key || kind (BE) || payload.

void
ms_store_rec_hash(const uint8_t key[MS_STORE_KEY], uint32_t kind,
                  const void *payload, size_t len, uint8_t out[32])
{
    ms_hasher_t h;
    uint8_t kb[4];
    ms_hash_t digest;
    ms_be_put32(kb, kind);
    ms_hasher_init(&h);
    ms_hasher_update(&h, key, MS_STORE_KEY);
    ms_hasher_update(&h, kb, 4);
    ms_hasher_update(&h, payload, len);
    ms_hasher_final(&h, &digest);
    memcpy(out, digest.bytes, 32);
}

//  --------------------------------------------------------------------------
//  Highest contiguous seq held of (origin, inc); 0 when none.

static int
s_vector_get(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
             uint64_t inc, uint64_t *seq)
{
    uint8_t k[MS_STORE_ID + 8];
    memcpy(k, origin, MS_STORE_ID);
    ms_be_put64(k + MS_STORE_ID, inc);
    MDB_val key = {sizeof k, k}, val;
    *seq = 0;
    int rc = mdb_get(txn, self->db_vectors, &key, &val);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return ms_store_mdb(rc, "get vector");
    if (val.mv_size != 8)
        return ms_store_mdb(MDB_CORRUPTED, "vector value");
    *seq = ms_be_get64(val.mv_data);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Set the vector entry of (origin, inc) to SEQ.

static int
s_vector_put(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
             uint64_t inc, uint64_t seq)
{
    uint8_t k[MS_STORE_ID + 8], v[8];
    memcpy(k, origin, MS_STORE_ID);
    ms_be_put64(k + MS_STORE_ID, inc);
    ms_be_put64(v, seq);
    MDB_val key = {sizeof k, k}, val = {sizeof v, v};
    self->txn_vec_changed = true;
    return ms_store_mdb(mdb_put(txn, self->db_vectors, &key, &val, 0),
                        "put vector");
}

//  --------------------------------------------------------------------------
//  Store one record (kind || payload) under KEY; it must be new.

static int
s_record_put(ms_store_t *self, MDB_txn *txn, const uint8_t key[MS_STORE_KEY],
             uint32_t kind, const void *payload, size_t len)
{
    MDB_val k = {MS_STORE_KEY, (void *) key}, v = {4 + len, NULL};
    int rc =
        mdb_put(txn, self->db_records, &k, &v, MDB_NOOVERWRITE | MDB_RESERVE);
    if (rc == MDB_KEYEXIST) // the vector said it was not held
        return ms_store_mdb(MDB_CORRUPTED, "record above the vector");
    if (rc != 0)
        return ms_store_mdb(rc, "put record");
    ms_be_put32(v.mv_data, kind);
    if (len)
        memcpy((uint8_t *) v.mv_data + 4, payload, len);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Store a block header: n || sig_len || signature.

static int
s_block_put(ms_store_t *self, MDB_txn *txn, const uint8_t *origin, uint64_t inc,
            uint64_t first, uint32_t n, const uint8_t *sig, size_t sig_len)
{
    uint8_t k[MS_STORE_KEY];
    ms_store_rec_key(k, origin, inc, first);
    MDB_val key = {MS_STORE_KEY, k}, val = {8 + sig_len, NULL};
    int rc = mdb_put(txn, self->db_blocks, &key, &val, MDB_RESERVE);
    if (rc != 0)
        return ms_store_mdb(rc, "put block");
    ms_be_put32(val.mv_data, n);
    ms_be_put32((uint8_t *) val.mv_data + 4, (uint32_t) sig_len);
    if (sig_len)
        memcpy((uint8_t *) val.mv_data + 8, sig, sig_len);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Revocation cuts (DESIGN.md "Records and anti-entropy"). A revoked
//  origin's records are still stored (stores converge) but those above
//  its cut are ignored for claims, results and failures: the derived
//  tables read db_cuts while deriving, and a new revocation re-derives
//  what that origin's records touch (ms_store_op_put_item). Value: all (u8) ||
//  n (u8 pair count, BE u16) || n x (incarnation u64 BE | seq u64 BE).

//  --------------------------------------------------------------------------
//  Read ORIGIN's cut inside TXN: *revoked false when it has none.

//  (A quarantine clear's cut lives in the same db, under origin || 'Q':
//  ms_store_clear_cut_get. Only mdb_get reads db_cuts, so the two never mix.)

static int
s_cut_read(ms_store_t *self, MDB_txn *txn, const uint8_t *key, size_t key_len,
           ms_store_cut_t *cut, bool *revoked)
{
    *revoked = false;
    memset(cut, 0, sizeof *cut);
    if (!self->has_cuts)
        return MS_OK;
    MDB_val k = {key_len, (void *) key}, v;
    int rc = mdb_get(txn, self->db_cuts, &k, &v);
    if (rc == MDB_NOTFOUND)
        return MS_OK;
    if (rc != 0)
        return ms_store_mdb(rc, "get cut");
    const uint8_t *p = v.mv_data;
    if (v.mv_size < 3)
        return ms_store_mdb(MDB_CORRUPTED, "cut value");
    size_t n = (size_t) p[1] << 8 | p[2];
    if (n > MS_STORE_MAX_CUT || v.mv_size != 3 + 16 * n)
        return ms_store_mdb(MDB_CORRUPTED, "cut value");
    cut->all = p[0] != 0;
    cut->n = n;
    for (size_t i = 0; i < n; i++) {
        cut->upto[i].incarnation = ms_be_get64(p + 3 + 16 * i);
        cut->upto[i].seq = ms_be_get64(p + 3 + 16 * i + 8);
    }
    *revoked = true;
    return MS_OK;
}

int
ms_store_cut_get(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
                 ms_store_cut_t *cut, bool *revoked)
{
    return s_cut_read(self, txn, origin, MS_STORE_ID, cut, revoked);
}

int
ms_store_clear_cut_get(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                       ms_store_cut_t *cut, bool *has)
{
    uint8_t key[MS_STORE_CLEAR_KEY];
    memcpy(key, node, MS_STORE_ID);
    key[MS_STORE_ID] = 'Q';
    return s_cut_read(self, txn, key, sizeof key, cut, has);
}

//  --------------------------------------------------------------------------
//  Write a cut value (all flag | n u16 | n x (incarnation | seq)) under KEY.

int
ms_store_cut_put(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                 size_t key_len, const ms_store_cut_t *cut)
{
    uint8_t buf[3 + 16 * MS_STORE_MAX_CUT];
    size_t n = cut->all ? 0 : cut->n;
    buf[0] = cut->all;
    buf[1] = (uint8_t) (n >> 8);
    buf[2] = (uint8_t) n;
    for (size_t i = 0; i < n; i++) {
        ms_be_put64(buf + 3 + 16 * i, cut->upto[i].incarnation);
        ms_be_put64(buf + 3 + 16 * i + 8, cut->upto[i].seq);
    }
    MDB_val ck = {key_len, (void *) key}, cv = {3 + 16 * n, buf};
    self->gen_dirty_all = true; // a revoked origin's results leave
    return ms_store_mdb(mdb_put(txn, self->db_cuts, &ck, &cv, 0), "put cut");
}

//  --------------------------------------------------------------------------
//  Whether a record (incarnation, seq) of an origin with CUT counts.

bool
ms_store_cut_counts(const ms_store_cut_t *cut, uint64_t incarnation,
                    uint64_t seq)
{
    if (cut->all)
        return false;
    for (size_t i = 0; i < cut->n; i++)
        if (cut->upto[i].incarnation == incarnation)
            return seq <= cut->upto[i].seq;
    return false;
}

//  --------------------------------------------------------------------------
//  Whether the record under KEY (origin || inc || seq) counts (inside
//  TXN); *status gets an LMDB failure.

bool
ms_store_key_counts(ms_store_t *self, MDB_txn *txn, const uint8_t *key,
                    int *status)
{
    ms_store_cut_t cut;
    bool revoked;
    int rc = ms_store_cut_get(self, txn, key, &cut, &revoked);
    if (rc != MS_OK) {
        *status = rc;
        return true;
    }
    return !revoked || ms_store_cut_counts(&cut, ms_be_get64(key + MS_STORE_ID),
                                           ms_be_get64(key + MS_STORE_ID + 8));
}

//  --------------------------------------------------------------------------
//  True when NODE is marked equivocating (inside TXN); *status gets an
//  LMDB failure.

bool
ms_store_is_equivocator(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                        int *status)
{
    MDB_val k = {MS_STORE_ID, (void *) node}, v;
    int rc = mdb_get(txn, self->db_equivocators, &k, &v);
    if (rc != 0 && rc != MDB_NOTFOUND)
        *status = ms_store_mdb(rc, "get equivocator");
    return rc == 0;
}

//  --------------------------------------------------------------------------
//  Decode the payloads of a block for applying; a known kind that does
//  not decode gives NULL (STRICT: refuse with MS_ERR_INVALID instead).

static int
s_decode_all(const ms_store_op_t *op, bool strict, ms_store_payload_t **decoded)
{
    for (size_t i = 0; i < op->n_recs; i++) {
        decoded[i] = NULL;
        int rc = ms_store_payload_decode(op->kinds[i], op->payloads[i],
                                         op->lens[i], &decoded[i]);
        if (rc == MS_ERR_NOMEM)
            return rc;
        if (rc == MS_ERR_INVALID && strict)
            return rc;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free what s_decode_all made.

static void
s_decoded_free(ms_store_payload_t **decoded, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ms_store_payload_destroy(&decoded[i]);
}

//  --------------------------------------------------------------------------
//  Writer: store the header of an appended block of ours, signed by the
//  signer when one is set (ms_store_set_signer). The block's records are
//  read back from this txn: a block that grows across the appends of one
//  commit is signed again, whole, each time it grows (the last header
//  written wins).

static int
s_block_put_signed(ms_store_t *self, MDB_txn *txn, const uint8_t *origin,
                   uint64_t inc, uint64_t first, uint32_t n)
{
    if (!self->sign_fn)
        return s_block_put(self, txn, origin, inc, first, n, NULL, 0);
    uint32_t kinds[MS_RECORD_MAX_BLOCK];
    const uint8_t *payloads[MS_RECORD_MAX_BLOCK];
    size_t lens[MS_RECORD_MAX_BLOCK];
    if (n == 0 || n > MS_RECORD_MAX_BLOCK)
        return ms_store_mdb(MDB_CORRUPTED, "block size");
    for (uint32_t i = 0; i < n; i++) {
        uint8_t key[MS_STORE_KEY];
        ms_store_rec_key(key, origin, inc, first + i);
        MDB_val k = {MS_STORE_KEY, key}, v;
        int rc = mdb_get(txn, self->db_records, &k, &v);
        if (rc != 0 || v.mv_size < 4)
            return ms_store_mdb(rc ? rc : MDB_CORRUPTED,
                                "record of a new block");
        kinds[i] = ms_be_get32(v.mv_data);
        payloads[i] = (const uint8_t *) v.mv_data + 4;
        lens[i] = v.mv_size - 4;
    }
    uint8_t sig[MS_RECORD_MAX_SIG_BYTES];
    size_t sig_len = 0;
    int rc = self->sign_fn(self->sign_arg, origin, inc, first, n, kinds,
                           payloads, lens, sig, &sig_len);
    if (rc != MS_OK || sig_len > MS_RECORD_MAX_SIG_BYTES) {
        fprintf(stderr, "meshsweep: store: cannot sign a block of ours: %s\n",
                ms_strerror(rc != MS_OK ? rc : MS_ERR_INVALID));
        return rc != MS_OK ? rc : MS_ERR_INVALID;
    }
    return s_block_put(self, txn, origin, inc, first, n, sig, sig_len);
}

//  --------------------------------------------------------------------------
//  Writer: append this node's records (one op) and grow the current
//  block of its origin when the previous append of this commit allows.
//  An op holds more than MS_RECORD_MAX_BLOCK records only when it carries
//  fragments: they continue in fresh blocks.

int
ms_store_op_append(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    ms_store_payload_t **decoded = calloc(op->n_recs, sizeof *decoded);
    if (!decoded)
        return MS_ERR_NOMEM;
    const uint8_t *origin = op->node;
    uint64_t inc = self->incarnation, held;
    bool strict = !__atomic_load_n(&self->unchecked_appends, __ATOMIC_RELAXED);
    int rc = s_decode_all(op, strict, decoded);
    if (rc == MS_OK)
        rc = s_vector_get(self, txn, origin, inc, &held);
    if (rc != MS_OK) { // refused (invalid) or broken, nothing written
        s_decoded_free(decoded, op->n_recs);
        free(decoded);
        return rc;
    }
    ms_store_open_block_t *b = &self->block;
    for (size_t i = 0; rc == MS_OK && i < op->n_recs; i++) {
        uint64_t seq = held + 1 + i;
        uint8_t key[MS_STORE_KEY];
        ms_store_rec_key(key, origin, inc, seq);
        rc = s_record_put(self, txn, key, op->kinds[i], op->payloads[i],
                          op->lens[i]);
        const ms_store_payload_t *p =
            op->pre && op->pre[i] ? op->pre[i] : decoded[i];
        if (rc == MS_OK)
            rc = ms_store_written(ms_store_apply(
                self, txn, key, op->kinds[i], p, op->payloads[i], op->lens[i]));
        if (rc == MS_OK && op->keys_out) {
            memcpy(op->keys_out[i].origin, origin, MS_STORE_ID);
            op->keys_out[i].incarnation = inc;
            op->keys_out[i].seq = seq;
        }
        if (rc != MS_OK)
            break;
        bool extend = b->open && b->incarnation == inc &&
                      memcmp(b->origin, origin, MS_STORE_ID) == 0 &&
                      b->first_seq + b->n == seq &&
                      b->n < MS_RECORD_MAX_BLOCK &&
                      (!op->explicit_block || i > 0);
        if (extend) {
            b->n++;
        } else {
            b->open = true;
            memcpy(b->origin, origin, MS_STORE_ID);
            b->incarnation = inc;
            b->first_seq = seq;
            b->n = 1;
        }
        if (i + 1 == op->n_recs || b->n == MS_RECORD_MAX_BLOCK)
            rc = s_block_put_signed(self, txn, origin, inc, b->first_seq, b->n);
    }
    s_decoded_free(decoded, op->n_recs);
    free(decoded);
    if (rc != MS_OK)
        return rc;
    if (op->explicit_block)
        b->open = false; // its block(s) stay its own
    return s_vector_put(self, txn, origin, inc, held + op->n_recs);
}

//  --------------------------------------------------------------------------
//  Writer: an origin was just marked equivocating: recount every (task,
//  node) of its results and re-derive every task it has results or
//  failures for (one scan of each table: a rare event).

static int
s_origin_uncount(ms_store_t *self, MDB_txn *txn, const uint8_t *origin_in)
{
    uint8_t origin[MS_STORE_ID];
    memcpy(origin, origin_in, MS_STORE_ID);
    uint8_t *tasks = NULL;
    size_t n = 0, cap = 0;
    int status = MS_OK;
    MDB_dbi dbis[2] = {self->db_result_meta, self->db_failures};
    for (int t = 0; t < 2 && status == MS_OK; t++) {
        ms_store_scan_t it;
        status =
            ms_store_scan_open(&it, txn, dbis[t], NULL, 0, "cursor (uncount)");
        while (status == MS_OK && ms_store_scan_next(&it)) {
            if (it.k.mv_size != 2 * MS_STORE_ID + 16 ||
                memcmp((const uint8_t *) it.k.mv_data + MS_STORE_ID, origin,
                       MS_STORE_ID))
                continue;
            if (n > 0 && memcmp(tasks + (n - 1) * MS_STORE_ID, it.k.mv_data,
                                MS_STORE_ID) == 0)
                continue;
            status = ms_store_ids_push(&tasks, &n, &cap, it.k.mv_data);
        }
        status = ms_store_scan_close(&it, status);
    }
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        uint8_t prefix[2 * MS_STORE_ID];
        memcpy(prefix, tasks + i * MS_STORE_ID, MS_STORE_ID);
        memcpy(prefix + MS_STORE_ID, origin, MS_STORE_ID);
        status = ms_store_results_recount(self, txn, prefix);
        if (status == MS_OK)
            status = ms_store_task_derive(self, txn, prefix);
    }
    free(tasks);
    return status;
}

//  --------------------------------------------------------------------------
//  Writer: keep both records of an equivocation as evidence and mark the
//  origin.

static int
s_equivocate(ms_store_t *self, MDB_txn *txn, const uint8_t key[MS_STORE_KEY],
             uint32_t kind, const void *payload, size_t len,
             const MDB_val *held)
{
    size_t held_len = held->mv_size;
    uint8_t *held_copy = malloc(held_len ? held_len : 1);
    if (!held_copy)
        return MS_ERR_NOMEM;
    memcpy(held_copy, held->mv_data, held_len);
    int rc = MS_OK;
    for (int which = 0; rc == MS_OK && which < 2; which++) {
        uint32_t k_kind = which ? ms_be_get32(held_copy) : kind;
        const uint8_t *body = which ? held_copy + 4 : payload;
        size_t body_len = which ? held_len - 4 : len;
        uint8_t ek[MS_STORE_KEY + 32];
        memcpy(ek, key, MS_STORE_KEY);
        ms_store_rec_hash(key, k_kind, body, body_len, ek + MS_STORE_KEY);
        MDB_val k = {sizeof ek, ek}, v = {4 + body_len, NULL};
        int put = mdb_put(txn, self->db_evidence, &k, &v,
                          MDB_NOOVERWRITE | MDB_RESERVE);
        if (put == MDB_KEYEXIST)
            continue;
        rc = ms_store_mdb(put, "put evidence");
        if (rc == MS_OK) {
            ms_be_put32(v.mv_data, k_kind);
            if (body_len)
                memcpy((uint8_t *) v.mv_data + 4, body, body_len);
        }
    }
    free(held_copy);
    if (rc != MS_OK)
        return rc;
    uint8_t one = 1;
    MDB_val ok = {MS_STORE_ID, (void *) key}, ov = {1, &one};
    rc = mdb_put(txn, self->db_equivocators, &ok, &ov, MDB_NOOVERWRITE);
    if (rc == MDB_KEYEXIST)
        return MS_OK; // marked before
    if (rc != 0)
        return ms_store_mdb(rc, "put equivocator");
    return s_origin_uncount(self, txn, key);
}

//  --------------------------------------------------------------------------
//  Writer: merge a peer's block.

int
ms_store_op_merge(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    const uint8_t *origin = op->node;
    uint64_t inc = op->incarnation, held;
    int rc = s_vector_get(self, txn, origin, inc, &held);
    if (rc != MS_OK)
        return rc;
    if (op->first_seq > held + 1)
        return MS_ERR_RANGE; // a gap: refused before any write
    ms_store_payload_t *decoded[MS_RECORD_MAX_BLOCK] = {0};
    rc = s_decode_all(op, false, decoded);
    uint64_t last = op->first_seq + op->n_recs - 1;
    for (size_t i = 0; rc == MS_OK && i < op->n_recs; i++) {
        uint64_t seq = op->first_seq + i;
        uint8_t key[MS_STORE_KEY];
        ms_store_rec_key(key, origin, inc, seq);
        const uint8_t *payload = op->payloads[i];
        size_t len = op->lens[i];
        if (seq <= held) {
            MDB_val k = {MS_STORE_KEY, key}, v;
            int g = mdb_get(txn, self->db_records, &k, &v);
            if (g != 0) {
                rc = ms_store_mdb(g == MDB_NOTFOUND ? MDB_CORRUPTED : g,
                                  "record below the vector");
                break;
            }
            if (v.mv_size == 4 + len &&
                ms_be_get32(v.mv_data) == op->kinds[i] &&
                (len == 0 ||
                 memcmp((uint8_t *) v.mv_data + 4, payload, len) == 0)) {
                op->merge.n_duplicate++;
                continue;
            }
            op->merge.n_conflict++;
            op->merge.equivocation = true;
            rc = s_equivocate(self, txn, key, op->kinds[i], payload, len, &v);
            continue;
        }
        rc = s_record_put(self, txn, key, op->kinds[i], payload, len);
        if (rc == MS_OK)
            rc = ms_store_apply(self, txn, key, op->kinds[i], decoded[i],
                                payload, len);
        if (rc == MS_OK)
            op->merge.n_new++;
    }
    s_decoded_free(decoded, op->n_recs);
    if (rc == MS_OK && last > held) {
        bool whole = op->first_seq > held;
        uint64_t first = whole ? op->first_seq : held + 1;
        rc = s_block_put(self, txn, origin, inc, first,
                         (uint32_t) (last - first + 1), whole ? op->sig : NULL,
                         whole ? op->sig_len : 0);
        if (rc == MS_OK)
            rc = s_vector_put(self, txn, origin, inc, last);
        held = last;
    }
    op->merge.held = held;
    return ms_store_written(rc);
}

//  --------------------------------------------------------------------------
//  Writer: set the member count and re-derive every task with failures.

int
ms_store_op_members(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    self->n_members = (uint32_t) op->value;
    uint8_t *ids = NULL;
    size_t n = 0, cap = 0;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_failures, NULL, 0,
                                    "cursor failures");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size < MS_STORE_ID ||
            (n > 0 && memcmp(ids + (n - 1) * MS_STORE_ID, it.k.mv_data,
                             MS_STORE_ID) == 0))
            continue;
        status = ms_store_ids_push(&ids, &n, &cap, it.k.mv_data);
    }
    status = ms_store_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = ms_store_written(
            ms_store_task_derive(self, txn, ids + i * MS_STORE_ID));
    free(ids);
    return status;
}

//  --------------------------------------------------------------------------
//  Writer: keep an authority item; for a revocation, narrow its subject's
//  cut (the intersection with an earlier one) and re-derive what the
//  subject's records touch.

#define S_ITEM_CLEAR 1 // ms_store_op_t value of a quarantine clear

int
ms_store_op_put_item(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    MDB_val k = {MS_STORE_ID, (void *) op->id},
            v = {op->len, (void *) op->text};
    int rc = mdb_put(txn, self->db_items, &k, &v, MDB_NOOVERWRITE);
    op->existed = rc == MDB_KEYEXIST;
    if (op->existed)
        return MS_OK;
    if (rc != 0)
        return ms_store_written(ms_store_mdb(rc, "put item"));
    if (op->node && op->cut && op->value == S_ITEM_CLEAR)
        return ms_store_written(
            ms_store_apply_clear(self, txn, op->node, op->cut));
    if (!op->node || !op->cut)
        return MS_OK;
    ms_store_cut_t cut, next = *op->cut;
    bool revoked;
    rc = ms_store_cut_get(self, txn, op->node, &cut, &revoked);
    if (rc != MS_OK)
        return rc;
    if (next.all || next.n == 0 || next.n > MS_STORE_MAX_CUT) {
        memset(&next, 0, sizeof next);
        next.all = true;
    }
    if (revoked && !cut.all && !next.all) { // keep what both let count
        size_t kept = 0;
        for (size_t i = 0; i < next.n; i++)
            for (size_t j = 0; j < cut.n; j++)
                if (cut.upto[j].incarnation == next.upto[i].incarnation) {
                    next.upto[kept].incarnation = next.upto[i].incarnation;
                    next.upto[kept].seq = next.upto[i].seq < cut.upto[j].seq
                                              ? next.upto[i].seq
                                              : cut.upto[j].seq;
                    kept++;
                    break;
                }
        next.n = kept;
        next.all = kept == 0;
    } else if (revoked && cut.all)
        next.all = true;
    if (next.all)
        next.n = 0;
    rc = ms_store_cut_put(self, txn, op->node, MS_STORE_ID, &next);
    if (rc != MS_OK)
        return ms_store_written(rc);
    return ms_store_written(s_origin_uncount(self, txn, op->node));
}

//  --------------------------------------------------------------------------
//  Keep an authority item

int
ms_store_put_item(ms_store_t *self, const uint8_t digest[MS_STORE_ID_BYTES],
                  const uint8_t *bytes, size_t n,
                  const uint8_t revoked[MS_STORE_ID_BYTES],
                  const ms_store_cut_t *cut, bool *added)
{
    if (!self || !digest || !bytes || n == 0)
        return MS_ERR_INVALID;
    if (added)
        *added = false;
    if (n > MS_STORE_MAX_ITEM_BYTES)
        return MS_ERR_INVALID;
    ms_store_op_t op = {.kind = MS_STORE_OP_PUT_ITEM,
                        .id = digest,
                        .text = (const char *) bytes,
                        .len = n,
                        .node = revoked,
                        .cut = revoked ? cut : NULL};
    ms_store_cut_t all = {.all = true};
    if (revoked && !cut)
        op.cut = &all;
    int rc = ms_store_submit(self, &op);
    if (rc == MS_OK && added)
        *added = !op.existed;
    return rc;
}

//  --------------------------------------------------------------------------
//  Keep a quarantine clear and apply it

int
ms_store_put_clear(ms_store_t *self, const uint8_t digest[MS_STORE_ID_BYTES],
                   const uint8_t *bytes, size_t n,
                   const uint8_t subject[MS_STORE_ID_BYTES],
                   const ms_store_cut_t *cut, bool *added)
{
    if (!self || !digest || !bytes || n == 0 || !subject || !cut || cut->all ||
        cut->n == 0 || cut->n > MS_STORE_MAX_CUT)
        return MS_ERR_INVALID;
    for (size_t i = 1; i < cut->n; i++) // sorted, one entry per incarnation
        if (cut->upto[i].incarnation <= cut->upto[i - 1].incarnation)
            return MS_ERR_INVALID;
    if (added)
        *added = false;
    if (n > MS_STORE_MAX_ITEM_BYTES)
        return MS_ERR_INVALID;
    ms_store_op_t op = {.kind = MS_STORE_OP_PUT_ITEM,
                        .id = digest,
                        .text = (const char *) bytes,
                        .len = n,
                        .node = subject,
                        .cut = cut,
                        .value = S_ITEM_CLEAR};
    int rc = ms_store_submit(self, &op);
    if (rc == MS_OK && added)
        *added = !op.existed;
    return rc;
}

//  --------------------------------------------------------------------------
//  Every authority item

int
ms_store_items(ms_store_t *self, ms_store_item_fn fn, void *arg)
{
    if (!self || !fn)
        return MS_ERR_INVALID;
    if (!self->has_cuts)
        return MS_OK;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_scan_t it;
    int status =
        ms_store_scan_open(&it, txn, self->db_items, NULL, 0, "cursor items");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID)
            continue;
        status = fn(arg, it.k.mv_data, it.v.mv_data, it.v.mv_size);
    }
    status = ms_store_scan_close(&it, status);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Check a block's arrays against the limits.

static bool
s_block_valid(size_t n, const uint32_t *kinds, const void *const *payloads,
              const size_t *lens)
{
    if (n == 0 || n > MS_RECORD_MAX_BLOCK || !kinds || !payloads || !lens)
        return false;
    for (size_t i = 0; i < n; i++)
        if (lens[i] > MS_RECORD_MAX_PAYLOAD_BYTES || (lens[i] && !payloads[i]))
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  Append records of this node (fragmenting big payloads) as one op.

static int
s_append(ms_store_t *self, const uint8_t *origin, size_t n,
         const uint32_t *kinds, const void *const *payloads, const size_t *lens,
         bool explicit_block, ms_record_key_t *keys_out)
{
    if (self->read_only)
        return MS_ERR_UNSUPPORTED;
    ms_store_expand_t x;
    int rc = ms_store_expand(&x, n, kinds, payloads, lens);
    if (rc != MS_OK)
        return rc;
    ms_record_key_t one_key, *keys = &one_key;
    if (keys_out && x.n > 1) {
        keys = calloc(x.n, sizeof *keys);
        if (!keys) {
            ms_store_expand_free(&x);
            return MS_ERR_NOMEM;
        }
    }
    ms_store_op_t op = {.kind = MS_STORE_OP_APPEND,
                        .node = origin,
                        .n_recs = x.n,
                        .kinds = x.kinds,
                        .payloads = (const void *const *) x.payloads,
                        .lens = x.lens,
                        .explicit_block = explicit_block,
                        .keys_out = keys_out ? keys : NULL,
                        .pre = x.pre};
    rc = ms_store_submit(self, &op);
    if (rc == MS_OK && keys_out)
        for (size_t i = 0; i < n; i++)
            keys_out[i] = keys[x.first[i]];
    if (keys != &one_key)
        free(keys);
    ms_store_expand_free(&x);
    return rc;
}

//  --------------------------------------------------------------------------
//  Append one record of this node.

int
ms_store_append(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                uint32_t kind, const void *payload, size_t len,
                ms_record_key_t *key_out)
{
    const void *payloads[1] = {payload};
    return s_append(self, origin, 1, &kind, payloads, &len, false, key_out);
}

//  --------------------------------------------------------------------------
//  Append N records of this node as one block (or consecutive blocks of
//  their own when fragments make them more than MS_RECORD_MAX_BLOCK).

int
ms_store_append_many(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                     size_t n, const uint32_t kinds[],
                     const void *const payloads[], const size_t lens[],
                     ms_record_key_t *keys_out)
{
    return s_append(self, origin, n, kinds, payloads, lens, true, keys_out);
}

//  --------------------------------------------------------------------------
//  Say whether NODE_ID may submit.

int
ms_store_set_may_submit(ms_store_t *self,
                        const uint8_t node_id[MS_STORE_ID_BYTES], bool may)
{
    int rc = MS_OK;
    pthread_mutex_lock(&self->role_mu);
    size_t i = 0;
    while (i < self->n_no_submit &&
           memcmp(self->no_submit[i], node_id, MS_STORE_ID) != 0)
        i++;
    if (may && i < self->n_no_submit) {
        self->n_no_submit--;
        memmove(self->no_submit[i], self->no_submit[self->n_no_submit],
                MS_STORE_ID);
    } else if (!may && i == self->n_no_submit) {
        if (self->n_no_submit == self->cap_no_submit) {
            size_t cap = self->cap_no_submit ? 2 * self->cap_no_submit : 16;
            uint8_t(*grown)[MS_STORE_ID] =
                realloc(self->no_submit, cap * MS_STORE_ID);
            if (!grown)
                rc = MS_ERR_NOMEM;
            else {
                self->no_submit = grown;
                self->cap_no_submit = cap;
            }
        }
        if (rc == MS_OK)
            memcpy(self->no_submit[self->n_no_submit++], node_id, MS_STORE_ID);
    }
    pthread_mutex_unlock(&self->role_mu);
    return rc;
}

//  --------------------------------------------------------------------------
//  Sweep and sweep-control records stored but not applied (their origin
//  lacked the `submit` role).

uint64_t
ms_store_ignored_no_role(ms_store_t *self)
{
    pthread_mutex_lock(&self->role_mu);
    uint64_t n = self->n_ignored_no_role;
    pthread_mutex_unlock(&self->role_mu);
    return n;
}

//  --------------------------------------------------------------------------
//  Merge a peer's block.

int
ms_store_merge_block(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                     uint64_t incarnation, uint64_t first_seq, size_t n,
                     const uint32_t kinds[], const uint8_t *const payloads[],
                     const size_t lens[], const uint8_t *signature,
                     size_t sig_len, ms_store_merge_result_t *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    const void *const *pl = (const void *const *) payloads;
    if (!s_block_valid(n, kinds, pl, lens) || first_seq == 0 ||
        first_seq > UINT64_MAX - n || sig_len > MS_RECORD_MAX_SIG_BYTES ||
        (sig_len && !signature))
        return MS_ERR_INVALID;
    ms_store_op_t op = {.kind = MS_STORE_OP_MERGE,
                        .node = origin,
                        .incarnation = incarnation,
                        .first_seq = first_seq,
                        .n_recs = n,
                        .kinds = kinds,
                        .payloads = pl,
                        .lens = lens,
                        .sig = signature,
                        .sig_len = sig_len};
    int rc = ms_store_submit(self, &op);
    if (out && (rc == MS_OK || rc == MS_ERR_RANGE))
        *out = op.merge;
    return rc;
}

//  --------------------------------------------------------------------------
//  Queue N ops at once (so they share commits) and wait for all of them.

static void
s_submit_many(ms_store_t *self, ms_store_op_t *ops, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ops[i].next = i + 1 < n ? &ops[i + 1] : NULL;
        ops[i].chained = i + 1 < n;
        ops[i].done = false;
        ops[i].rc = MS_OK;
    }
    pthread_mutex_lock(&self->q_mu);
    if (self->stopping) {
        pthread_mutex_unlock(&self->q_mu);
        for (size_t i = 0; i < n; i++)
            ops[i].rc = MS_ERR_INTERRUPTED;
        return;
    }
    if (self->q_tail)
        self->q_tail->next = &ops[0];
    else
        self->q_head = &ops[0];
    self->q_tail = &ops[n - 1];
    pthread_cond_signal(&self->q_cv);
    for (size_t i = 0; i < n; i++)
        while (!ops[i].done)
            pthread_cond_wait(&self->done_cv, &self->q_mu);
    pthread_mutex_unlock(&self->q_mu);
}

//  --------------------------------------------------------------------------
//  Merge many blocks in shared commits.

int
ms_store_merge_blocks(ms_store_t *self, const ms_store_block_t *blocks,
                      size_t n_blocks, int *rcs, ms_store_merge_result_t *outs)
{
    if (outs)
        memset(outs, 0, n_blocks * sizeof *outs);
    if (n_blocks == 0)
        return MS_OK;
    if (self->read_only)
        return MS_ERR_UNSUPPORTED;
    if (ms_store_tls_slot(self, false)) {
        fprintf(stderr, "meshsweep: store: write called inside a read "
                        "callback; refused\n");
        return MS_ERR_INVALID;
    }
    ms_store_op_t *ops = calloc(n_blocks, sizeof *ops);
    if (!ops)
        return MS_ERR_NOMEM;
    size_t n_ops = 0;
    int first_err = MS_OK;
    int *valid = calloc(n_blocks, sizeof *valid);
    size_t *index = calloc(n_blocks, sizeof *index); // op -> block
    if (!valid || !index) {
        free(index);
        free(valid);
        free(ops);
        return MS_ERR_NOMEM;
    }
    for (size_t i = 0; i < n_blocks; i++) {
        const ms_store_block_t *b = &blocks[i];
        const void *const *pl = (const void *const *) b->payloads;
        if (!b->origin || !s_block_valid(b->n, b->kinds, pl, b->lens) ||
            b->first_seq == 0 || b->first_seq > UINT64_MAX - b->n ||
            b->sig_len > MS_RECORD_MAX_SIG_BYTES ||
            (b->sig_len && !b->signature)) {
            valid[i] = MS_ERR_INVALID;
            continue;
        }
        index[n_ops] = i;
        ops[n_ops++] = (ms_store_op_t){.kind = MS_STORE_OP_MERGE,
                                       .node = b->origin,
                                       .incarnation = b->incarnation,
                                       .first_seq = b->first_seq,
                                       .n_recs = b->n,
                                       .kinds = b->kinds,
                                       .payloads = pl,
                                       .lens = b->lens,
                                       .sig = b->signature,
                                       .sig_len = b->sig_len};
    }
    if (n_ops > 0)
        s_submit_many(self, ops, n_ops);
    for (size_t j = 0; j < n_ops; j++) {
        size_t i = index[j];
        valid[i] = ops[j].rc;
        if (outs && (ops[j].rc == MS_OK || ops[j].rc == MS_ERR_RANGE))
            outs[i] = ops[j].merge;
    }
    for (size_t i = 0; i < n_blocks; i++) {
        if (rcs)
            rcs[i] = valid[i];
        if (first_err == MS_OK && valid[i] != MS_OK)
            first_err = valid[i];
    }
    free(index);
    free(valid);
    free(ops);
    return first_err;
}

//  --------------------------------------------------------------------------
//  Call fn for each vector entry.

int
ms_store_vector(ms_store_t *self, ms_store_vector_fn fn, void *arg)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_vectors, NULL, 0,
                                    "cursor vectors");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID + 8 || it.v.mv_size != 8) {
            status = ms_store_mdb(MDB_CORRUPTED, "vector entry");
            break;
        }
        status = fn(arg, it.k.mv_data,
                    ms_be_get64((const uint8_t *) it.k.mv_data + MS_STORE_ID),
                    ms_be_get64(it.v.mv_data));
    }
    status = ms_store_scan_close(&it, status);
    ms_store_read_end(self, txn);
    return status;
}

// Digest state while walking the vector.
typedef struct {
    ms_hasher_t hasher; // running BLAKE2b
    uint64_t n;         // entries so far
} s_vec_digest_t;

//  --------------------------------------------------------------------------
//  Feed one vector entry into the digest.

static int
s_vec_digest_fn(void *arg, const uint8_t *origin, uint64_t inc, uint64_t seq)
{
    s_vec_digest_t *d = arg;
    uint8_t e[MS_STORE_KEY];
    ms_store_rec_key(e, origin, inc, seq);
    ms_hasher_update(&d->hasher, e, sizeof e);
    d->n++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Digest of the version vector (cached until the next vector commit).

int
ms_store_vector_digest(ms_store_t *self, uint8_t digest[32],
                       uint64_t *n_entries)
{
    pthread_mutex_lock(&self->gate_mu);
    uint64_t gen = self->vec_gen;
    bool cached = self->digest_valid && self->digest_gen == gen;
    if (cached) {
        memcpy(digest, self->digest, 32);
        if (n_entries)
            *n_entries = self->digest_n;
    }
    pthread_mutex_unlock(&self->gate_mu);
    if (cached)
        return MS_OK;
    s_vec_digest_t d = {.n = 0};
    ms_hasher_init(&d.hasher);
    int rc = ms_store_vector(self, s_vec_digest_fn, &d);
    if (rc != MS_OK)
        return rc;
    ms_hash_t h;
    ms_hasher_final(&d.hasher, &h);
    memcpy(digest, h.bytes, 32);
    if (n_entries)
        *n_entries = d.n;
    pthread_mutex_lock(&self->gate_mu);
    if (self->vec_gen == gen) {
        memcpy(self->digest, h.bytes, 32);
        self->digest_n = d.n;
        self->digest_gen = gen;
        self->digest_valid = true;
    }
    pthread_mutex_unlock(&self->gate_mu);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Highest contiguous seq held of one (origin, incarnation).

int
ms_store_held(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
              uint64_t incarnation, uint64_t *seq)
{
    *seq = 0;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    rc = s_vector_get(self, txn, origin, incarnation, seq);
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Give one stored block (header value HV) to fn, with its records.

static int
s_block_emit(ms_store_t *self, MDB_txn *txn, MDB_cursor *rcur,
             const uint8_t *origin, uint64_t inc, uint64_t first,
             const MDB_val *hv, ms_store_block_fn fn, void *arg, size_t *n_out)
{
    (void) self;
    (void) txn;
    if (hv->mv_size < 8)
        return ms_store_mdb(MDB_CORRUPTED, "block header");
    const uint8_t *h = hv->mv_data;
    uint32_t n = ms_be_get32(h), sig_len = ms_be_get32(h + 4);
    if (n == 0 || n > MS_RECORD_MAX_BLOCK ||
        hv->mv_size != 8 + (size_t) sig_len)
        return ms_store_mdb(MDB_CORRUPTED, "block header");
    uint32_t kinds[MS_RECORD_MAX_BLOCK];
    const uint8_t *payloads[MS_RECORD_MAX_BLOCK];
    size_t lens[MS_RECORD_MAX_BLOCK];
    uint8_t key[MS_STORE_KEY];
    ms_store_rec_key(key, origin, inc, first);
    MDB_val k = {MS_STORE_KEY, key}, v;
    int rc = mdb_cursor_get(rcur, &k, &v, MDB_SET_KEY);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            rc = mdb_cursor_get(rcur, &k, &v, MDB_NEXT);
        if (rc != 0 || k.mv_size != MS_STORE_KEY ||
            memcmp(k.mv_data, origin, MS_STORE_ID) != 0 ||
            ms_be_get64((const uint8_t *) k.mv_data + MS_STORE_ID) != inc ||
            ms_be_get64((const uint8_t *) k.mv_data + MS_STORE_ID + 8) !=
                first + i ||
            v.mv_size < 4)
            return ms_store_mdb(rc && rc != MDB_NOTFOUND ? rc : MDB_CORRUPTED,
                                "record of a block");
        kinds[i] = ms_be_get32(v.mv_data);
        payloads[i] = (const uint8_t *) v.mv_data + 4;
        lens[i] = v.mv_size - 4;
    }
    *n_out = n;
    return fn(arg, origin, inc, first, n, kinds, payloads, lens,
              sig_len ? h + 8 : NULL, sig_len);
}

//  --------------------------------------------------------------------------
//  Call fn for each whole stored block overlapping from..to.

int
ms_store_read_blocks(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                     uint64_t incarnation, uint64_t from_seq, uint64_t to_seq,
                     size_t max_records, ms_store_block_fn fn, void *arg)
{
    if (from_seq == 0)
        from_seq = 1;
    if (to_seq < from_seq)
        return MS_OK;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_cursor *bcur = NULL, *rcur = NULL;
    rc = mdb_cursor_open(txn, self->db_blocks, &bcur);
    if (rc == 0)
        rc = mdb_cursor_open(txn, self->db_records, &rcur);
    int status = rc ? ms_store_mdb(rc, "cursor blocks") : MS_OK;
    uint8_t prefix[MS_STORE_ID + 8], start[MS_STORE_KEY];
    memcpy(prefix, origin, MS_STORE_ID);
    ms_be_put64(prefix + MS_STORE_ID, incarnation);
    ms_store_rec_key(start, origin, incarnation, from_seq);
    MDB_val k = {MS_STORE_KEY, start}, v;
    // Find the block holding from_seq: the last block starting at or
    // before it, if it reaches it; else the first block after it.
    uint64_t first = 0;
    if (status == MS_OK) {
        rc = mdb_cursor_get(bcur, &k, &v, MDB_SET_RANGE);
        bool exact = rc == 0 && k.mv_size == MS_STORE_KEY &&
                     memcmp(k.mv_data, start, MS_STORE_KEY) == 0;
        if (!exact) {
            MDB_val pk, pv;
            int prc = mdb_cursor_get(bcur, &pk, &pv,
                                     rc == MDB_NOTFOUND ? MDB_LAST : MDB_PREV);
            if (prc == 0 && pk.mv_size == MS_STORE_KEY &&
                memcmp(pk.mv_data, prefix, sizeof prefix) == 0 &&
                pv.mv_size >= 8 &&
                ms_be_get64((const uint8_t *) pk.mv_data + MS_STORE_ID + 8) +
                        ms_be_get32(pv.mv_data) >
                    from_seq) {
                k = pk;
                v = pv;
                rc = 0;
            } else {
                k.mv_size = MS_STORE_KEY;
                k.mv_data = start;
                rc = mdb_cursor_get(bcur, &k, &v, MDB_SET_RANGE);
            }
        }
    }
    size_t n_total = 0;
    for (; status == MS_OK && rc == 0;
         rc = mdb_cursor_get(bcur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != MS_STORE_KEY ||
            memcmp(k.mv_data, prefix, sizeof prefix))
            break;
        first = ms_be_get64((const uint8_t *) k.mv_data + MS_STORE_ID + 8);
        if (first > to_seq)
            break;
        size_t n = 0;
        status = s_block_emit(self, txn, rcur, origin, incarnation, first, &v,
                              fn, arg, &n);
        n_total += n;
        if (max_records > 0 && n_total >= max_records)
            break;
    }
    if (status == MS_OK && rc != 0 && rc != MDB_NOTFOUND)
        status = ms_store_mdb(rc, "cursor blocks");
    if (rcur)
        mdb_cursor_close(rcur);
    if (bcur)
        mdb_cursor_close(bcur);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Whether an origin is marked equivocating.

int
ms_store_equivocating(ms_store_t *self, const uint8_t origin[MS_STORE_ID_BYTES],
                      bool *out)
{
    *out = false;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val k = {MS_STORE_ID, (void *) origin}, v;
    rc = mdb_get(txn, self->db_equivocators, &k, &v);
    *out = rc == 0;
    rc = rc == 0 || rc == MDB_NOTFOUND ? MS_OK
                                       : ms_store_mdb(rc, "get equivocator");
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Set the member count of the failure rule.

//  Submit a count-setting op (member count, operator count): 0 refused,
//  clamped to INT32_MAX.

int
ms_store_submit_count(ms_store_t *self, ms_store_op_kind_t kind, uint32_t n)
{
    if (n == 0)
        return MS_ERR_INVALID;
    ms_store_op_t op = {.kind = kind,
                        .value = n > INT32_MAX ? INT32_MAX : (int32_t) n};
    return ms_store_submit(self, &op);
}
