/*  =========================================================================
    ms_store_verdict - verdicts in the store: the rows ms_verdict judges, the
   verdict table, slots, operators and standing

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The store does not judge: ms_store_verdict_derive gathers a task's rows
    and the nodes' standing and hands them to ms_verdict (node/derive),
    the only code for verdicts, strata, strikes and revisions, then
    writes what it returns. Writer thread for the derivation; the reads
    (ms_store_get_verdict, _task_slots, _node_standing) take a read
    transaction.
*/
#include "ms_store.h"
#include "ms_store_internal.h"

#include "ms_hash.h"
#include "ms_ring.h"
#include "ms_store_payload.h"
#include "ms_verdict.h"
#include <lmdb.h>
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/vfs.h>
#include <zlib.h>

/*  =========================================================================
    Verdicts in the store (DESIGN.md "Verification"; docs/VERIFICATION.md
    "In the store")

    Layout:

      verdicts       task -> s_vrow_t || marks (s_vmark_t, by node id) ||
                     operators of S (sorted, comma-separated) + NUL
      verdict_nodes  node -> counted (u32) || strikes (u32) ||
                     quarantined (u8) || 3 pad || forgiven (u32): the
                     stratum-1 tally over tasks (rows of older stores
                     end before forgiven: 0)
      operators      node -> operator name + NUL (ms_store_set_operator)
      sweep_verify   sweep -> replicas (u32) || accuracy tolerance (f64)
                     || loss tolerance (f64), from the sweep record

    ms_store_verdict_derive evaluates one task with ms_verdict_evaluate over its
    counted results (result_meta counted, slot fillers and extra replicas
    alike: an extra replica is still a valid result of its operator),
    twice: stratum 1 with nobody quarantined (its counted flags and
    strikes feed the per-node tally, kept by difference against the
    task's previous row, so the tally is the sum over tasks whatever the
    order), stratum 3 without the quarantined nodes (the verdict). When a
    node's quarantine flips, every task it has a result in is evaluated
    again, the task being derived included (its caller reads the task's
    state and verdict again afterwards). A flip is the net change over
    the tally's two passes: a node at exactly K strikes whose struck task
    is evaluated again dips to K - 1 between them, which is no flip.
    Everything read is stored data or the pool operator count, so the rows
    are a pure function of (records, operators, count).

    The revision is a pure function too, not a local history: it is the
    number of changes of the verdict's view (ms_verdict_revision: the state, and
    once decided the operators of S and the lower median m and its loss)
    when the task's counted results are taken one by one in their
    canonical order (seq, record hash) with no node quarantined, then once
    more for the final evaluation (quarantine applied) - "a late replica
    changes the verdict" where late means later in that order, and a
    quarantine that takes a producer out of S is one more change. Two
    nodes that got the results in different orders show the same
    revision, so result rows (which carry it) stay byte-identical across
    nodes. A result left out by a revocation cut is no input (a node that
    got the revocation first never stored it), so a revocation changes
    the revision only through that sequence (docs/VERIFICATION.md
    "Revision"). A node still emits an event for every change it sees:
    state, revision, or the operators of S.

    The verdict tables are left out of ms_store_state_digest: they also
    depend on the node's view of the pool's size, which differs for a
    moment between nodes; the result rows that carry them are compared
    by the pool tests instead.

    The authority's quarantine clears (ms_store_put_clear) each carry a
    cut of the node's log; their union is kept in cuts under node || 'Q'
    (per incarnation the highest seq of any clear: a grow-only set, so
    any order of clears gives the same union). A stratum-1 strike of a
    result inside that union is forgiven (S_VM_RAW_FORGIVEN, summed into
    the node's forgiven count like strikes, by difference); the
    quarantine rule subtracts it (ms_verdict_quarantined). Forgiveness
    is thus a function of the clears and the records: a node that got
    the clear before the results forgives exactly what one that got it
    after does. A new clear derives every task of the node again.

    Commit then reveal decides which results are counted at all (see
    "Record log", commit): with replicas >= 2 a result without a matching
    earlier commit of its node never reaches the verdict.

    Re-evaluations (REEVALUATION records, docs/VERIFICATION.md
    "Re-evaluation") are kept in reevals (task || verifier record key ->
    ms_store_reeval_val_t) and passed to every evaluation of the task, the
    revision's prefixes included (a re-evaluation whose target is not in
    a prefix yet has no target there). Their verifiers' operators and
    quarantine are read like the producers'. A new ok result is also
    queued (ms_store_new_results) for the node's own sampling.
    =========================================================================
*/

#define S_VMAX 64 // counted results of one task evaluated (first by order)
// The view a revision counts names as many operators as a row describes.
_Static_assert(MS_VERDICT_VIEW_OPERATORS == MS_STORE_VERDICT_MAX_MARKS,
               "a verdict's view and its row describe the same operators");

//  Verdict row header (verdicts db). Native endianness: local.
typedef struct {
    uint8_t version;             // 1
    uint8_t verdict;             // ms_verdict_state_t
    uint8_t status;              // ms_run_status_t of S
    uint8_t flags;               // S_VF_*
    uint32_t revision;           // see above
    uint32_t n_needed;           // min(replicas, pool operators)
    uint32_t n_operators;        // operators with a counted result
    uint32_t n_agreeing;         // |S|
    uint32_t slots_wanted;       // what the task wants now
    uint32_t n_marks;            // s_vmark_t that follow
    uint32_t void_slots;         // slots finished by results that do not count
                                 // (zero in rows of older stores)
    uint8_t median[MS_STORE_ID]; // producer of the lower median (S_VF_MEDIAN)
} s_vrow_t;

#define S_VF_EXHAUSTED 1
#define S_VF_FINAL 2
#define S_VF_MEDIAN 4

//  One result in a verdict row.
typedef struct {
    uint8_t node[MS_STORE_ID]; // producer
    uint8_t flags;             // S_VM_*
    uint8_t role;              // ms_verdict_role_t (final stratum)
} s_vmark_t;

#define S_VM_RAW_COUNTED 1
#define S_VM_RAW_STRIKE 2
#define S_VM_COUNTED 4
#define S_VM_AGREES 8
#define S_VM_RAW_FORGIVEN 16 // a raw strike inside the node's clear cut

//  Per-node tally (verdict_nodes).
typedef struct {
    uint32_t n_counted; // counted in stratum 1, over tasks
    uint32_t n_strikes; // strikes in stratum 1, over tasks
    uint8_t quarantined;
    uint8_t pad[3];
    uint32_t n_forgiven; // its stratum-1 strikes inside its clears' cut
                         // (rows of older stores end before it: 0)
} s_vnode_t;

//  One counted result while evaluating.
typedef struct {
    uint8_t node[MS_STORE_ID];
    char op[MS_STORE_OPERATOR_MAX + 1];
} s_vin_t;

//  --------------------------------------------------------------------------
//  The operator of a node: the stored name, else its id in hex.

static int
s_operator_of(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
              char out[MS_STORE_OPERATOR_MAX + 1])
{
    MDB_val k = {MS_STORE_ID, (void *) node}, v;
    int rc = self->has_verdicts ? mdb_get(txn, self->db_operators, &k, &v)
                                : MDB_NOTFOUND;
    if (rc == 0 && v.mv_size >= 2 && v.mv_size <= MS_STORE_OPERATOR_MAX + 1) {
        memcpy(out, v.mv_data, v.mv_size);
        out[v.mv_size - 1] = 0;
        return MS_OK;
    }
    if (rc != 0 && rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get operator");
    ms_hash_t id; // a node id prints as a hash does (not snprintf per
    memcpy(id.bytes, node, MS_STORE_ID); // byte: a fifth of the verdict's time)
    ms_hash_hex(&id, out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A node's tally (zeros when none).

static int
s_vnode_get(ms_store_t *self, MDB_txn *txn, const uint8_t *node, s_vnode_t *out)
{
    memset(out, 0, sizeof *out);
    if (!self->has_verdicts)
        return MS_OK;
    MDB_val k = {MS_STORE_ID, (void *) node}, v;
    int rc = mdb_get(txn, self->db_verdict_nodes, &k, &v);
    if (rc == 0 && (v.mv_size == sizeof *out ||
                    v.mv_size == offsetof(s_vnode_t, n_forgiven)))
        memcpy(out, v.mv_data, v.mv_size);
    else if (rc != 0 && rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get verdict_nodes");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Writer: apply a quarantine clear of NODE with CUT (DESIGN.md
//  "Verification": "the authority can clear a quarantine with a signed
//  item"): the node's forgiven cut grows to the union with CUT (per
//  incarnation the higher seq; at most MS_STORE_MAX_CUT incarnations, the
//  lowest kept, so the union does not depend on the order of the
//  clears), and every task it has a result in is derived again, which
//  forgives the strikes of its results inside the cut (S_VM_RAW_FORGIVEN)
//  and lifts its quarantine when too few strikes are left. Strikes of
//  results above the cut still count.

int
ms_store_apply_clear(ms_store_t *self, MDB_txn *txn, const uint8_t *node,
                     const ms_store_cut_t *cut)
{
    if (!self->has_cuts)
        return MS_OK;
    ms_store_cut_t have, next;
    bool has;
    int rc = ms_store_clear_cut_get(self, txn, node, &have, &has);
    if (rc != MS_OK)
        return rc;
    memset(&next, 0, sizeof next);
    size_t i = 0, j = 0;
    while ((i < have.n || j < cut->n) && next.n < MS_STORE_MAX_CUT) {
        bool take_have = j == cut->n ||
                         (i < have.n &&
                          have.upto[i].incarnation <= cut->upto[j].incarnation);
        bool take_cut = i == have.n ||
                        (j < cut->n &&
                         cut->upto[j].incarnation <= have.upto[i].incarnation);
        uint64_t inc =
            take_have ? have.upto[i].incarnation : cut->upto[j].incarnation;
        uint64_t seq = 0;
        if (take_have)
            seq = have.upto[i++].seq;
        if (take_cut && cut->upto[j].seq > seq)
            seq = cut->upto[j].seq;
        if (take_cut)
            j++;
        next.upto[next.n].incarnation = inc;
        next.upto[next.n].seq = seq;
        next.n++;
    }
    bool same = has && next.n == have.n;
    for (size_t e = 0; same && e < next.n; e++)
        same = next.upto[e].incarnation == have.upto[e].incarnation &&
               next.upto[e].seq == have.upto[e].seq;
    if (same)
        return MS_OK;
    uint8_t key[MS_STORE_CLEAR_KEY];
    memcpy(key, node, MS_STORE_ID);
    key[MS_STORE_ID] = 'Q';
    rc = ms_store_cut_put(self, txn, key, sizeof key, &next);
    if (rc == MS_OK && self->has_verdicts)
        rc = ms_store_verdict_requeue_node(self, txn, node);
    return rc;
}

//  --------------------------------------------------------------------------
//  A sweep's verify parameters (defaults when not stored).

static int
s_sweep_verify_get(ms_store_t *self, MDB_txn *txn, const uint8_t *sweep_id,
                   ms_verdict_params_t *p)
{
    ms_verdict_params_default(p);
    if (!self->has_verdicts)
        return MS_OK;
    MDB_val k = {MS_STORE_ID, (void *) sweep_id}, v;
    int rc = mdb_get(txn, self->db_sweep_verify, &k, &v);
    if (rc == MDB_NOTFOUND) {
        ms_store_sweep_hdr_t sh;
        if (ms_store_sweep_hdr_get(self, txn, sweep_id, &sh) == MS_OK &&
            sh.replicas > 0)
            p->replicas = sh.replicas;
        return MS_OK;
    }
    if (rc != 0)
        return ms_store_mdb(rc, "get sweep_verify");
    if (v.mv_size == 20) {
        const uint8_t *b = v.mv_data;
        uint32_t r = ms_be_get32(b);
        double acc, loss;
        memcpy(&acc, b + 4, 8);
        memcpy(&loss, b + 12, 8);
        if (r >= 1 && r <= MS_VERDICT_REPLICAS_MAX)
            p->replicas = r;
        if (isfinite(acc) && acc >= 0 && acc <= MS_VERDICT_TOLERANCE_MAX)
            p->accuracy_tolerance = acc;
        if (isfinite(loss) && loss >= 0 && loss <= MS_VERDICT_TOLERANCE_MAX)
            p->loss_tolerance = loss;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Store a sweep's verify parameters (sweep record apply).

int
ms_store_sweep_verify_put(ms_store_t *self, MDB_txn *txn,
                          const uint8_t *sweep_id, uint32_t replicas,
                          double acc, double loss)
{
    uint8_t b[20];
    ms_be_put32(b, replicas);
    memcpy(b + 4, &acc, 8);
    memcpy(b + 12, &loss, 8);
    MDB_val k = {MS_STORE_ID, (void *) sweep_id}, v = {sizeof b, b};
    return ms_store_mdb(mdb_put(txn, self->db_sweep_verify, &k, &v, 0),
                        "put sweep_verify");
}

//  --------------------------------------------------------------------------
//  Note a changed verdict for the node's events (bounded queue).

static void
s_verdict_note(ms_store_t *self, const uint8_t *task_id)
{
    pthread_mutex_lock(&self->vc_mu);
    if (ms_ring_push(self->vc_ids, task_id))
        self->vc_dropped++;
    pthread_mutex_unlock(&self->vc_mu);
}

//  --------------------------------------------------------------------------
//  The operators of a verdict's agreeing set S: the names of the results
//  whose mark agrees, sorted, unique, comma-joined into out (cap bytes, at
//  most MS_STORE_VERDICT_MAX_MARKS names). Returns the length written.

static size_t
s_agreeing_operators(const ms_verdict_result_t *res,
                     const ms_verdict_mark_t *marks, size_t n, char *out,
                     size_t cap)
{
    const char *sorted[S_VMAX];
    size_t n_ops = 0;
    for (size_t i = 0; i < n && n_ops < S_VMAX; i++)
        if (marks[i].agrees)
            sorted[n_ops++] = res[i].operator_name;
    for (size_t i = 1; i < n_ops; i++)
        for (size_t j = i; j > 0 && strcmp(sorted[j - 1], sorted[j]) > 0; j--) {
            const char *t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n_ops && i < MS_STORE_VERDICT_MAX_MARKS; i++) {
        if (i > 0 && strcmp(sorted[i], sorted[i - 1]) == 0)
            continue;
        int w = snprintf(out + used, cap - used, "%s%s", used ? "," : "",
                         sorted[i]);
        if (w < 0 || (size_t) w >= cap - used) {
            out[used] = '\0';
            break;
        }
        used += (size_t) w;
    }
    return used;
}

//  --------------------------------------------------------------------------
//  Slots of a task finished by results that do not count (DESIGN.md
//  "Verification": a task needs its slots *filled* by counted results): a
//  slot is done in the lease table once any result finished it, so a slot
//  whose results are all left out (a quarantined or revoked producer, a
//  reveal without its commit, a duplicate operator) is never claimed
//  again. The scheduler looks that many slots further (ms_store_task_slots).
//  slot_of/fin: the n verdict inputs; other: the slots of the n_other
//  results that are no verdict input. A pure function of the records.

static uint32_t
s_void_slots(const uint32_t *slot_of, const ms_verdict_mark_t *fin, size_t n,
             const uint32_t *other, size_t n_other)
{
    uint32_t seen[2 * S_VMAX];
    uint32_t n_void = 0, n_seen = 0;
    for (size_t i = 0; i < n + n_other; i++) {
        bool counted = i < n && fin[i].counted;
        uint32_t slot = i < n ? slot_of[i] : other[i - n];
        if (counted)
            continue;
        bool dup = false;
        for (uint32_t j = 0; j < n_seen && !dup; j++)
            dup = seen[j] == slot;
        for (size_t j = 0; j < n && !dup; j++)
            dup = fin[j].counted && slot_of[j] == slot;
        if (dup)
            continue;
        seen[n_seen++] = slot;
        n_void++;
    }
    return n_void;
}

//  --------------------------------------------------------------------------
//  The re-evaluations of a task (up to S_RVMAX, first by key) into a new
//  array *out with their verifiers' operators in *ops (caller frees
//  both). A verifier's record above its revocation cut is left out, like
//  its results (its quarantine is read with the operator).

#define S_RVMAX 256

static int
s_reevals_load(ms_store_t *self, MDB_txn *txn, const uint8_t *task_id,
               ms_verdict_reeval_t **out, s_vin_t **ops, size_t *n_out)
{
    *out = NULL;
    *ops = NULL;
    *n_out = 0;
    if (!self->has_reevals)
        return MS_OK;
    ms_verdict_reeval_t *e = calloc(S_RVMAX, sizeof *e);
    s_vin_t *in = calloc(S_RVMAX, sizeof *in);
    int status = e && in ? MS_OK : MS_ERR_NOMEM;
    ms_store_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = ms_store_scan_open(&it, txn, self->db_reevals, task_id,
                                    MS_STORE_ID, "cursor reevals");
    size_t n = 0;
    while (status == MS_OK && n < S_RVMAX && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID + MS_STORE_KEY)
            break;
        if (it.v.mv_size != sizeof(ms_store_reeval_val_t))
            continue;
        const uint8_t *rkey = (const uint8_t *) it.k.mv_data + MS_STORE_ID;
        int kst = MS_OK;
        bool counts = ms_store_key_counts(self, txn, rkey, &kst);
        if (kst != MS_OK) {
            status = kst;
            break;
        }
        if (!counts)
            continue;
        ms_store_reeval_val_t rv;
        memcpy(&rv, it.v.mv_data, sizeof rv);
        ms_verdict_reeval_t *x = &e[n];
        memcpy(x->target, rv.target, MS_STORE_ID);
        memcpy(x->verifier_node, rkey, MS_STORE_ID);
        memcpy(in[n].node, rkey, MS_STORE_ID);
        x->seq = ms_be_get64(rkey + MS_STORE_ID + 8);
        memcpy(x->record_hash, rv.record_hash, MS_STORE_ID);
        x->failed = rv.failed != 0;
        x->test_accuracy = rv.test_accuracy;
        x->test_loss = rv.test_loss;
        n++;
    }
    status = ms_store_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        status = s_operator_of(self, txn, in[i].node, in[i].op);
        e[i].verifier_operator = in[i].op;
        s_vnode_t vn = {0};
        if (status == MS_OK)
            status = s_vnode_get(self, txn, in[i].node, &vn);
        e[i].quarantined = vn.quarantined != 0;
    }
    if (status != MS_OK) {
        free(e);
        free(in);
        return status;
    }
    *out = e;
    *ops = in;
    *n_out = n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Move one verdict row from state FROM to state TO in meta
//  "verdict_counts" (-1: no row before / after), in the row's txn.

_Static_assert(MS_STORE_VERDICT_STATES == MS_VERDICT_FAILED + 1,
               "MS_STORE_VERDICT_STATES counts every ms_verdict_state_t");

static int
s_verdict_counts_add(ms_store_t *self, MDB_txn *txn, int from, int to)
{
    uint64_t c[MS_STORE_VERDICT_STATES] = {0};
    MDB_val mk = {strlen("verdict_counts"), "verdict_counts"}, mv;
    int rc = mdb_get(txn, self->db_meta, &mk, &mv);
    if (rc == 0 && mv.mv_size == sizeof c)
        memcpy(c, mv.mv_data, sizeof c);
    else if (rc != 0 && rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get verdict_counts");
    if (from >= 0 && from < MS_STORE_VERDICT_STATES && c[from] > 0)
        c[from]--;
    if (to >= 0 && to < MS_STORE_VERDICT_STATES)
        c[to]++;
    mv.mv_size = sizeof c;
    mv.mv_data = c;
    return ms_store_mdb(mdb_put(txn, self->db_meta, &mk, &mv, 0),
                        "put verdict_counts");
}

//  --------------------------------------------------------------------------
//  Count the verdict rows of TXN by state (one walk of the verdicts db).

static int
s_verdict_counts_walk(ms_store_t *self, MDB_txn *txn,
                      uint64_t c[MS_STORE_VERDICT_STATES])
{
    memset(c, 0, MS_STORE_VERDICT_STATES * sizeof c[0]);
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_verdicts, NULL, 0,
                                    "cursor verdicts");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        s_vrow_t hdr;
        if (it.v.mv_size < sizeof hdr)
            continue;
        memcpy(&hdr, it.v.mv_data, sizeof hdr);
        if (hdr.verdict < MS_STORE_VERDICT_STATES)
            c[hdr.verdict]++;
    }
    return ms_store_scan_close(&it, status);
}

//  --------------------------------------------------------------------------
//  Make meta "verdict_counts" from the rows when the store has none yet.

int
ms_store_verdict_counts_init(ms_store_t *self, MDB_txn *txn)
{
    MDB_val mk = {strlen("verdict_counts"), "verdict_counts"}, mv;
    int rc = mdb_get(txn, self->db_meta, &mk, &mv);
    if (rc == 0)
        return MS_OK;
    if (rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get verdict_counts");
    uint64_t c[MS_STORE_VERDICT_STATES];
    int status = s_verdict_counts_walk(self, txn, c);
    if (status != MS_OK)
        return status;
    mv.mv_size = sizeof c;
    mv.mv_data = c;
    return ms_store_mdb(mdb_put(txn, self->db_meta, &mk, &mv, 0),
                        "put verdict_counts");
}

//  --------------------------------------------------------------------------
//  Verdict rows by state.

int
ms_store_verdict_counts(ms_store_t *self,
                        uint64_t counts[MS_STORE_VERDICT_STATES])
{
    memset(counts, 0, MS_STORE_VERDICT_STATES * sizeof counts[0]);
    if (!self->has_verdicts)
        return MS_OK;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val mk = {strlen("verdict_counts"), "verdict_counts"}, mv;
    int mrc = mdb_get(txn, self->db_meta, &mk, &mv);
    if (mrc == 0 && mv.mv_size == MS_STORE_VERDICT_STATES * sizeof counts[0])
        memcpy(counts, mv.mv_data, mv.mv_size);
    else if (mrc == MDB_NOTFOUND)
        rc = s_verdict_counts_walk(self, txn, counts); // old, read-only
    else
        rc = ms_store_mdb(mrc ? mrc : MDB_CORRUPTED, "get verdict_counts");
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Evaluate one task and write its verdict row (see the prose above).
//  *verdict_out gets the verdict (-1: no counted result, no row kept),
//  *final_out whether the scheduler is done with the task.

int
ms_store_verdict_derive(ms_store_t *self, MDB_txn *txn,
                        const uint8_t *task_id_in, int *verdict_out,
                        bool *final_out)
{
    *verdict_out = -1; // no verdict row
    *final_out = false;
    if (!self->has_verdicts)
        return MS_OK;
    self->v_evals++;
    uint8_t task_id[MS_STORE_ID];
    memcpy(task_id, task_id_in, MS_STORE_ID);
    ms_store_gen_touch_task(self, txn, task_id); // its verdict may change
    MDB_val k = {MS_STORE_ID, task_id}, v;
    ms_store_task_hdr_t th;
    ms_store_task_t view;
    int rc = ms_store_task_read(self, txn, task_id, &th, &view);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK; // the sweep's apply derives it
    if (rc != MS_OK)
        return rc;
    ms_verdict_params_t params;
    rc = s_sweep_verify_get(self, txn, th.sweep_id, &params);
    if (rc != MS_OK)
        return rc;
    params.n_pool_operators =
        self->n_pool_operators ? self->n_pool_operators : 1;
    uint8_t traits = ms_store_task_traits(&th, &view);
    bool noop = traits & MS_STORE_TT_NOOP;
    params.regression = traits & MS_STORE_TT_REGRESSION;

    ms_verdict_result_t *res = calloc(S_VMAX, sizeof *res);
    s_vin_t *in = calloc(S_VMAX, sizeof *in);
    ms_verdict_mark_t raw[S_VMAX], fin[S_VMAX];
    uint32_t slot_of[S_VMAX];  // the slot each counted result filled
    uint64_t inc_of[S_VMAX];   // the incarnation of each counted result
    bool forgiven[S_VMAX];     // its raw strike is inside a clear's cut
    uint32_t other[S_VMAX];    // slots of results left out (no commit, a
    size_t n = 0, n_other = 0; // revocation cut, ...)
    int status = res && in ? MS_OK : MS_ERR_NOMEM;
    ms_store_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = ms_store_scan_open(&it, txn, self->db_result_meta, task_id,
                                    MS_STORE_ID, "cursor result_meta");
    while (status == MS_OK && n < S_VMAX && ms_store_scan_next(&it)) {
        if (it.k.mv_size != 2 * MS_STORE_ID + 16)
            break;
        const uint8_t *m = it.v.mv_data;
        if (it.v.mv_size < MS_STORE_RM_ROW + 1)
            continue;
        if (!m[0]) {
            if (n_other < S_VMAX)
                other[n_other++] = ms_be_get32(m + MS_STORE_RM_SLOT);
            continue;
        }
        ms_verdict_result_t *r = &res[n];
        slot_of[n] = ms_be_get32(m + MS_STORE_RM_SLOT);
        const uint8_t *node = (const uint8_t *) it.k.mv_data + MS_STORE_ID;
        memcpy(r->node_id, node, MS_STORE_ID);
        memcpy(in[n].node, node, MS_STORE_ID);
        inc_of[n] = ms_be_get64(node + MS_STORE_ID);
        r->seq = ms_be_get64(node + MS_STORE_ID + 8);
        memcpy(r->record_hash, m + MS_STORE_RM_HASH, 32);
        r->status = m[1] == MS_RESULT_STATUS_OK         ? MS_RUN_OK
                    : m[1] == MS_RESULT_STATUS_DIVERGED ? MS_RUN_DIVERGED
                                                        : MS_RUN_FAILED;
        // (a row that is not an object reads as all zero, as before)
        ms_store_row_verdict_t rv;
        (void) ms_store_payload_row_verdict((const char *) m + MS_STORE_RM_ROW,
                                            it.v.mv_size - MS_STORE_RM_ROW - 1,
                                            &rv);
        r->test_accuracy = noop ? 0.0 : rv.test_accuracy;
        r->test_loss = noop ? 0.0 : rv.test_loss;
        memcpy(r->fingerprint, rv.fingerprint, 32);
        memcpy(r->weights_digest, rv.weights_digest, 32);
        n++;
    }
    status = ms_store_scan_close(&it, status);
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        status = s_operator_of(self, txn, in[i].node, in[i].op);
        res[i].operator_name = in[i].op;
        s_vnode_t vn = {0};
        if (status == MS_OK)
            status = s_vnode_get(self, txn, in[i].node, &vn);
        res[i].quarantined = vn.quarantined != 0;
    }

    // The old row (tally by difference, change detection).
    s_vrow_t old = {0};
    s_vmark_t *old_marks = NULL;
    uint8_t *old_copy = NULL;
    size_t old_len = 0;
    if (status == MS_OK) {
        rc = mdb_get(txn, self->db_verdicts, &k, &v);
        if (rc == 0 && v.mv_size >= sizeof old) {
            old_copy = malloc(v.mv_size);
            if (!old_copy)
                status = MS_ERR_NOMEM;
            else {
                memcpy(old_copy, v.mv_data, v.mv_size);
                old_len = v.mv_size;
                memcpy(&old, old_copy, sizeof old);
                if (sizeof old + (size_t) old.n_marks * sizeof(s_vmark_t) <=
                    old_len)
                    old_marks = (s_vmark_t *) (old_copy + sizeof old);
                else
                    old.n_marks = 0;
            }
        } else if (rc != 0 && rc != MDB_NOTFOUND)
            status = ms_store_mdb(rc, "get verdict");
    }

    ms_verdict_outcome_t out_raw, out;
    ms_verdict_revision_t rev = {MS_VERDICT_PENDING, 0};
    ms_verdict_reeval_t *rv = NULL;
    s_vin_t *rv_ops = NULL;
    size_t n_rv = 0;
    // A noop task has no weights: a re-evaluation of its result (from a
    // node of an older version, which sampled them) proves nothing, and
    // is no input.
    if (status == MS_OK && n > 0 && !noop)
        status = s_reevals_load(self, txn, task_id, &rv, &rv_ops, &n_rv);
    // Stratum 1 (nobody quarantined), the final evaluation (quarantine
    // applied) and the revision: the changes of the verdict's view over
    // the canonical prefixes of the counted results, then the final
    // evaluation (the rules, in ms_verdict).
    if (status == MS_OK && n > 0) {
        status = ms_verdict_evaluate_task(&params, res, n, rv, n_rv, &out_raw,
                                          raw, &out, fin, &rev.revision, NULL);
        rev.verdict = out.verdict;
        if (status == MS_ERR_INVALID) // bad stored params: defaults
            status = MS_OK, n = 0;
    }
    free(rv);
    free(rv_ops);

    // Strikes forgiven by the node's quarantine clears: those of results
    // inside the union of their cuts (a function of the records).
    for (size_t i = 0; status == MS_OK && i < n; i++) {
        forgiven[i] = false;
        if (!raw[i].strike)
            continue;
        ms_store_cut_t cc;
        bool has;
        status = ms_store_clear_cut_get(self, txn, in[i].node, &cc, &has);
        forgiven[i] = status == MS_OK && has &&
                      ms_store_cut_counts(&cc, inc_of[i], res[i].seq);
    }

    // Tally by difference: old raw flags out, new ones in. A node's
    // quarantine flips when it differs after both passes from what it was
    // before them: a node at exactly K strikes whose struck result is
    // evaluated again drops to K - 1 between the passes, and taking that
    // for two flips would derive all its tasks again, twice, each of which
    // would do the same (a cascade that held the writer for seconds).
    // The two passes are summed per node first, so only the tallies that
    // change are read and written (a task's re-derivation leaves all but
    // the new result's producer as they were: writing each back cost two
    // LMDB operations per result per derivation).
    uint8_t touched[2 * S_VMAX][MS_STORE_ID]; // nodes whose tally changed
    bool was_q[2 * S_VMAX];                   // ... quarantined before
    size_t n_touched = 0;
    struct {
        const uint8_t *node;                 // the producer
        int32_t d_counted, d_strikes, d_for; // net change of its tally
    } delta[2 * S_VMAX];
    size_t n_delta = 0;
    for (int pass = 0; status == MS_OK && pass < 2; pass++) {
        size_t count = pass == 0 ? old.n_marks : n;
        for (size_t i = 0; i < count; i++) {
            const uint8_t *node = pass == 0 ? old_marks[i].node : in[i].node;
            bool counted = pass == 0 ? old_marks[i].flags & S_VM_RAW_COUNTED
                                     : raw[i].counted;
            bool strike = pass == 0 ? old_marks[i].flags & S_VM_RAW_STRIKE
                                    : raw[i].strike;
            bool forgive =
                strike && (pass == 0 ? old_marks[i].flags & S_VM_RAW_FORGIVEN
                                     : forgiven[i]);
            if (!counted && !strike)
                continue;
            size_t d = 0;
            while (d < n_delta && memcmp(delta[d].node, node, MS_STORE_ID) != 0)
                d++;
            if (d == n_delta) {
                if (n_delta == 2 * S_VMAX)
                    continue; // (marks are at most S_VMAX a pass)
                delta[n_delta].node = node;
                delta[n_delta].d_counted = delta[n_delta].d_strikes =
                    delta[n_delta].d_for = 0;
                n_delta++;
            }
            int32_t sign = pass == 0 ? -1 : 1;
            delta[d].d_counted += counted ? sign : 0;
            delta[d].d_strikes += strike ? sign : 0;
            delta[d].d_for += forgive ? sign : 0;
        }
    }
    for (size_t d = 0; status == MS_OK && d < n_delta; d++) {
        if (!delta[d].d_counted && !delta[d].d_strikes && !delta[d].d_for)
            continue;
        const uint8_t *node = delta[d].node;
        s_vnode_t vn;
        status = s_vnode_get(self, txn, node, &vn);
        if (status != MS_OK)
            break;
        int64_t c = (int64_t) vn.n_counted + delta[d].d_counted;
        int64_t st = (int64_t) vn.n_strikes + delta[d].d_strikes;
        int64_t f = (int64_t) vn.n_forgiven + delta[d].d_for;
        vn.n_counted = c < 0 ? 0 : (uint32_t) c;
        vn.n_strikes = st < 0 ? 0 : (uint32_t) st;
        vn.n_forgiven = f < 0 ? 0 : (uint32_t) f;
        ms_verdict_policy_t pol;
        ms_verdict_policy_default(&pol);
        bool q = ms_verdict_quarantined(&pol, vn.n_counted, vn.n_strikes,
                                        vn.n_forgiven);
        memcpy(touched[n_touched], node, MS_STORE_ID);
        was_q[n_touched++] = vn.quarantined != 0;
        vn.quarantined = q;
        self->gen_dirty_all = true; // counted and marks of many tasks
        MDB_val nk = {MS_STORE_ID, (void *) node}, nv = {sizeof vn, &vn};
        status = ms_store_mdb(mdb_put(txn, self->db_verdict_nodes, &nk, &nv, 0),
                              "put verdict_nodes");
    }

    // The new row.
    s_vrow_t row = {0};
    uint8_t *buf = NULL;
    size_t len = 0;
    if (status == MS_OK && n > 0) {
        row.version = 1;
        row.verdict = (uint8_t) out.verdict;
        row.status = (uint8_t) out.status;
        row.revision = rev.revision;
        row.n_needed = out.n_needed;
        row.n_operators = out.n_operators;
        row.n_agreeing = out.n_agreeing;
        row.slots_wanted = out.slots_wanted;
        row.n_marks = (uint32_t) n;
        row.void_slots = s_void_slots(slot_of, fin, n, other, n_other);
        bool final =
            out.verdict == MS_VERDICT_VERIFIED ||
            out.verdict == MS_VERDICT_FAILED ||
            (out.verdict == MS_VERDICT_ACCEPTED && out.n_needed <= 1) ||
            (out.verdict == MS_VERDICT_DISPUTED && out.slots_exhausted);
        row.flags = (out.slots_exhausted ? S_VF_EXHAUSTED : 0) |
                    (final ? S_VF_FINAL : 0);
        // The lower median: the agreeing ok result nearest m.
        double best = INFINITY;
        for (size_t i = 0; i < n; i++) {
            if (!fin[i].agrees || res[i].status != MS_RUN_OK)
                continue;
            double d = fabs(res[i].test_accuracy - out.median_accuracy);
            if (params.regression || isnan(d))
                d = fabs(res[i].test_loss - out.median_loss);
            if (d < best || (d == best &&
                             memcmp(in[i].node, row.median, MS_STORE_ID) < 0)) {
                best = d;
                memcpy(row.median, in[i].node, MS_STORE_ID);
                row.flags |= S_VF_MEDIAN;
            }
        }
        // Operators of S, sorted and unique.
        char ops[MS_STORE_OPERATORS_TEXT];
        size_t used = s_agreeing_operators(res, fin, n, ops, sizeof ops);
        len = sizeof row + n * sizeof(s_vmark_t) + used + 1;
        buf = calloc(1, len);
        if (!buf)
            status = MS_ERR_NOMEM;
        else {
            memcpy(buf, &row, sizeof row);
            s_vmark_t *mk = (s_vmark_t *) (buf + sizeof row);
            for (size_t i = 0; i < n; i++) {
                memcpy(mk[i].node, in[i].node, MS_STORE_ID);
                mk[i].flags = (raw[i].counted ? S_VM_RAW_COUNTED : 0) |
                              (raw[i].strike ? S_VM_RAW_STRIKE : 0) |
                              (forgiven[i] ? S_VM_RAW_FORGIVEN : 0) |
                              (fin[i].counted ? S_VM_COUNTED : 0) |
                              (fin[i].agrees ? S_VM_AGREES : 0);
                mk[i].role = (uint8_t) fin[i].role;
            }
            memcpy(buf + sizeof row + n * sizeof(s_vmark_t), ops, used + 1);
        }
    }
    if (status == MS_OK) {
        bool same = old_copy && buf && old_len == len &&
                    memcmp(old_copy, buf, len) == 0;
        if (!buf && old_copy) {
            rc = mdb_del(txn, self->db_verdicts, &k, NULL);
            status = rc == 0 || rc == MDB_NOTFOUND
                         ? MS_OK
                         : ms_store_mdb(rc, "del verdict");
            if (status == MS_OK)
                status = s_verdict_counts_add(self, txn, old.verdict, -1);
        } else if (buf && !same) {
            MDB_val nv = {len, buf};
            status = ms_store_mdb(mdb_put(txn, self->db_verdicts, &k, &nv, 0),
                                  "put verdict");
            if (status == MS_OK && (!old_copy || old.verdict != row.verdict))
                status = s_verdict_counts_add(
                    self, txn, old_copy ? (int) old.verdict : -1, row.verdict);
        }
        // An event for every change this node sees: the revision's, and
        // a change of S that no revision counts (a revoked producer's
        // result left the task: docs/VERIFICATION.md "Revision").
        const char *old_ops = "";
        size_t ops_at = sizeof old + (size_t) old.n_marks * sizeof(s_vmark_t);
        if (old_copy && ops_at < old_len && old_copy[old_len - 1] == '\0')
            old_ops = (const char *) old_copy + ops_at;
        const char *new_ops =
            buf ? (const char *) buf + sizeof row + n * sizeof(s_vmark_t) : "";
        if (status == MS_OK && (buf || old_copy) &&
            (row.verdict != old.verdict || row.revision != old.revision ||
             strcmp(old_ops, new_ops) != 0))
            s_verdict_note(self, task_id);
        if (buf) {
            *verdict_out = row.verdict;
            *final_out = row.flags & S_VF_FINAL;
        }
    }
    free(buf);
    free(old_copy);
    free(res);
    free(in);
    bool requeued = false;
    for (size_t i = 0; status == MS_OK && i < n_touched; i++) {
        s_vnode_t vn;
        status = s_vnode_get(self, txn, touched[i], &vn);
        if (status != MS_OK || (vn.quarantined != 0) == was_q[i])
            continue;
        status = ms_store_verdict_requeue_node(self, txn, touched[i]);
        requeued = true;
    }
    // A requeue evaluated this task again (the flipped node has a result
    // in it) under the new quarantine: report the row it left.
    if (status == MS_OK && requeued && *verdict_out >= 0) {
        rc = mdb_get(txn, self->db_verdicts, &k, &v);
        if (rc == 0 && v.mv_size >= sizeof(s_vrow_t)) {
            s_vrow_t now;
            memcpy(&now, v.mv_data, sizeof now);
            *verdict_out = now.verdict;
            *final_out = now.flags & S_VF_FINAL;
        } else if (rc == 0 || rc == MDB_NOTFOUND) {
            *verdict_out = -1;
            *final_out = false;
        } else
            status = ms_store_mdb(rc, "get verdict");
    }
    return status;
}

//  --------------------------------------------------------------------------
//  Every task with a verdict row that names NODE (or every task with a
//  verdict row when NODE is NULL; only tasks of sweeps with replicas > 1
//  when MULTI): ids collected first, then derived (a derive rewrites
//  the db under the cursor).

static int
s_verdict_tasks(ms_store_t *self, MDB_txn *txn, const uint8_t *node, bool multi,
                uint8_t **ids_out, size_t *n_out)
{
    *ids_out = NULL;
    *n_out = 0;
    uint8_t *ids = NULL;
    size_t n = 0, cap = 0;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_verdicts, NULL, 0,
                                    "cursor verdicts");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        MDB_val k = it.k, v = it.v;
        if (k.mv_size != MS_STORE_ID || v.mv_size < sizeof(s_vrow_t))
            continue;
        s_vrow_t hdr;
        memcpy(&hdr, v.mv_data, sizeof hdr);
        bool take = !node && !multi;
        const s_vmark_t *mk =
            (const s_vmark_t *) ((const uint8_t *) v.mv_data + sizeof hdr);
        for (uint32_t i = 0; node && i < hdr.n_marks &&
                             sizeof hdr + (i + 1) * sizeof *mk <= v.mv_size;
             i++)
            if (memcmp(mk[i].node, node, MS_STORE_ID) == 0)
                take = true;
        if (multi && !node) {
            MDB_val tv;
            ms_store_task_hdr_t th;
            ms_verdict_params_t p;
            if (mdb_get(txn, self->db_tasks, &k, &tv) == 0 &&
                ms_store_task_decode(k.mv_data, &tv, &th, NULL) == MS_OK &&
                s_sweep_verify_get(self, txn, th.sweep_id, &p) == MS_OK)
                take = p.replicas > 1;
        }
        if (!take)
            continue;
        status = ms_store_ids_push(&ids, &n, &cap, k.mv_data);
    }
    status = ms_store_scan_close(&it, status);
    if (status != MS_OK)
        free(ids);
    else {
        *ids_out = ids;
        *n_out = n;
    }
    return status;
}

//  --------------------------------------------------------------------------
//  A node's quarantine flipped: evaluate every task it has a result in
//  (its verdict and task state). Bounded depth: a flip found while
//  re-evaluating is followed a few levels, then left to the next change.

int
ms_store_verdict_requeue_node(ms_store_t *self, MDB_txn *txn,
                              const uint8_t *node_in)
{
    if (self->v_depth > 3)
        return MS_OK;
    uint8_t node[MS_STORE_ID];
    memcpy(node, node_in, MS_STORE_ID);
    uint8_t *ids = NULL;
    size_t n = 0;
    int status = s_verdict_tasks(self, txn, node, false, &ids, &n);
    self->v_depth++;
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = ms_store_task_derive(self, txn, ids + i * MS_STORE_ID);
    self->v_depth--;
    free(ids);
    return status;
}

//  --------------------------------------------------------------------------
//  Writer: the operator of a node (MS_STORE_OP_OPERATOR).

int
ms_store_op_operator(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    if (!self->has_verdicts)
        return MS_ERR_UNSUPPORTED;
    MDB_val k = {MS_STORE_ID, (void *) op->node}, v;
    int rc = mdb_get(txn, self->db_operators, &k, &v);
    if (rc == 0 && v.mv_size == op->len + 1 &&
        memcmp(v.mv_data, op->text, op->len) == 0)
        return MS_OK;
    if (rc != 0 && rc != MDB_NOTFOUND)
        return ms_store_mdb(rc, "get operator");
    char name[MS_STORE_OPERATOR_MAX + 1];
    memcpy(name, op->text, op->len);
    name[op->len] = 0;
    v.mv_size = op->len + 1;
    v.mv_data = name;
    rc = mdb_put(txn, self->db_operators, &k, &v, 0);
    if (rc != 0)
        return ms_store_mdb(rc, "put operator");
    self->gen_dirty_all = true; // rows show operators' names
    return ms_store_verdict_requeue_node(self, txn, op->node);
}

//  --------------------------------------------------------------------------
//  Writer: the pool's operator count (MS_STORE_OP_POOL_OPS).

int
ms_store_op_pool_ops(ms_store_t *self, MDB_txn *txn, ms_store_op_t *op)
{
    uint32_t n_ops = (uint32_t) op->value;
    if (n_ops == self->n_pool_operators || !self->has_verdicts) {
        self->n_pool_operators = n_ops;
        return MS_OK;
    }
    self->n_pool_operators = n_ops;
    uint8_t *ids = NULL;
    size_t n = 0;
    int status = s_verdict_tasks(self, txn, NULL, true, &ids, &n);
    for (size_t i = 0; status == MS_OK && i < n; i++)
        status = ms_store_task_derive(self, txn, ids + i * MS_STORE_ID);
    free(ids);
    return status;
}

//  --------------------------------------------------------------------------
//  Decode a verdict row into *out.

static void
s_verdict_view(ms_store_t *self, MDB_txn *txn, const MDB_val *v,
               ms_store_verdict_t *out)
{
    memset(out, 0, sizeof *out);
    s_vrow_t hdr;
    memcpy(&hdr, v->mv_data, sizeof hdr);
    out->verdict = hdr.verdict;
    out->revision = hdr.revision;
    out->status = hdr.status;
    out->n_needed = hdr.n_needed;
    out->n_operators = hdr.n_operators;
    out->n_agreeing = hdr.n_agreeing;
    out->slots_wanted = hdr.slots_wanted;
    out->slots_exhausted = hdr.flags & S_VF_EXHAUSTED;
    out->final = hdr.flags & S_VF_FINAL;
    out->has_median = hdr.flags & S_VF_MEDIAN;
    memcpy(out->median_node, hdr.median, MS_STORE_ID);
    const uint8_t *b = v->mv_data;
    size_t marks_end = sizeof hdr + (size_t) hdr.n_marks * sizeof(s_vmark_t);
    if (marks_end > v->mv_size)
        return;
    const s_vmark_t *mk = (const s_vmark_t *) (b + sizeof hdr);
    for (uint32_t i = 0; i < hdr.n_marks && i < MS_STORE_VERDICT_MAX_MARKS;
         i++) {
        ms_store_verdict_mark_t *m = &out->marks[out->n_marks++];
        memcpy(m->node_id, mk[i].node, MS_STORE_ID);
        m->counted = mk[i].flags & S_VM_COUNTED;
        m->agrees = mk[i].flags & S_VM_AGREES;
        m->strike = mk[i].flags & S_VM_RAW_STRIKE;
        m->role = mk[i].role;
        s_operator_of(self, txn, m->node_id, m->operator_name);
    }
    size_t text = v->mv_size - marks_end;
    if (text > 0) {
        size_t c = text < sizeof out->operators ? text : sizeof out->operators;
        memcpy(out->operators, b + marks_end, c);
        out->operators[c - 1] = 0;
    }
}

//  --------------------------------------------------------------------------
//  The verdict row of a task.

int
ms_store_get_verdict(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                     ms_store_verdict_t *out)
{
    memset(out, 0, sizeof *out);
    if (!self->has_verdicts)
        return MS_ERR_NOTFOUND;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    MDB_val k = {MS_STORE_ID, (void *) task_id}, v;
    rc = mdb_get(txn, self->db_verdicts, &k, &v);
    int status = MS_OK;
    if (rc == 0 && v.mv_size >= sizeof(s_vrow_t))
        s_verdict_view(self, txn, &v, out);
    else if (rc == 0 || rc == MDB_NOTFOUND)
        status = MS_ERR_NOTFOUND;
    else
        status = ms_store_mdb(rc, "get verdict");
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  The slots the scheduler may fill now.

int
ms_store_task_slots(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                    uint32_t *n_slots, uint32_t *replicas)
{
    *n_slots = 1;
    if (replicas)
        *replicas = 1;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    int status = MS_OK;
    MDB_val k = {MS_STORE_ID, (void *) task_id}, v;
    rc = mdb_get(txn, self->db_tasks, &k, &v);
    ms_store_task_hdr_t th;
    if (rc == 0 && ms_store_task_decode(task_id, &v, &th, NULL) == MS_OK) {
        ms_verdict_params_t p;
        status = s_sweep_verify_get(self, txn, th.sweep_id, &p);
        if (replicas)
            *replicas = p.replicas;
        uint32_t ops = self->n_pool_operators ? self->n_pool_operators : 1;
        *n_slots = ms_verdict_needed(p.replicas, ops);
        if (*n_slots == 0)
            *n_slots = 1;
        rc = self->has_verdicts ? mdb_get(txn, self->db_verdicts, &k, &v)
                                : MDB_NOTFOUND;
        if (rc == 0 && v.mv_size >= sizeof(s_vrow_t)) {
            s_vrow_t hdr;
            memcpy(&hdr, v.mv_data, sizeof hdr);
            *n_slots = (hdr.flags & S_VF_FINAL)
                           ? 0
                           : hdr.slots_wanted + hdr.void_slots;
        } else if (rc != 0 && rc != MDB_NOTFOUND)
            status = ms_store_mdb(rc, "get verdict");
    } else if (rc != 0 && rc != MDB_NOTFOUND)
        status = ms_store_mdb(rc, "get task");
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  A sweep's verify.replicas.

int
ms_store_sweep_replicas(ms_store_t *self,
                        const uint8_t sweep_id[MS_STORE_ID_BYTES],
                        uint32_t *replicas)
{
    *replicas = 1;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_verdict_params_t p;
    rc = s_sweep_verify_get(self, txn, sweep_id, &p);
    if (rc == MS_OK)
        *replicas = p.replicas;
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Store a node's operator.

int
ms_store_set_operator(ms_store_t *self,
                      const uint8_t node_id[MS_STORE_ID_BYTES],
                      const char *name)
{
    size_t len = name ? strlen(name) : 0;
    if (len == 0 || len > MS_STORE_OPERATOR_MAX)
        return MS_ERR_INVALID;
    ms_store_op_t op = {.kind = MS_STORE_OP_OPERATOR,
                        .node = node_id,
                        .text = name,
                        .len = len};
    return ms_store_submit(self, &op);
}

//  --------------------------------------------------------------------------
//  A node's operator as verdicts use it.

int
ms_store_operator(ms_store_t *self, const uint8_t node_id[MS_STORE_ID_BYTES],
                  char out[MS_STORE_OPERATOR_MAX + 1])
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    rc = s_operator_of(self, txn, node_id, out);
    ms_store_read_end(self, txn);
    return rc;
}

//  --------------------------------------------------------------------------
//  Distinct operators with a commit of a task.

int
ms_store_commit_operators(ms_store_t *self,
                          const uint8_t task_id[MS_STORE_ID_BYTES],
                          const uint8_t node_id[MS_STORE_ID_BYTES],
                          uint32_t *n_operators, bool *has_own)
{
    *n_operators = 0;
    if (has_own)
        *has_own = false;
    if (!self->has_commits)
        return MS_OK;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    enum { MAX_OPS = 64 };
    char(*ops)[MS_STORE_OPERATOR_MAX + 1] = calloc(MAX_OPS, sizeof *ops);
    int status = ops ? MS_OK : MS_ERR_NOMEM;
    ms_store_scan_t it = {0}; // closes as nothing when never opened
    if (status == MS_OK)
        status = ms_store_scan_open(&it, txn, self->db_commits, task_id,
                                    MS_STORE_ID, "cursor commits");
    uint8_t last[MS_STORE_ID];
    bool have_last = false;
    while (status == MS_OK && *n_operators < MAX_OPS &&
           ms_store_scan_next(&it)) {
        const uint8_t *key = it.k.mv_data;
        if (it.k.mv_size != 2 * MS_STORE_ID + 16)
            break;
        if (have_last && memcmp(last, key + MS_STORE_ID, MS_STORE_ID) == 0)
            continue; // the same node again
        memcpy(last, key + MS_STORE_ID, MS_STORE_ID);
        have_last = true;
        if (has_own && node_id &&
            memcmp(node_id, key + MS_STORE_ID, MS_STORE_ID) == 0)
            *has_own = true;
        char op[MS_STORE_OPERATOR_MAX + 1];
        status = s_operator_of(self, txn, key + MS_STORE_ID, op);
        if (status != MS_OK)
            break;
        bool seen = false;
        for (uint32_t i = 0; i < *n_operators && !seen; i++)
            seen = strcmp(ops[i], op) == 0;
        if (!seen)
            strcpy(ops[(*n_operators)++], op);
    }
    status = ms_store_scan_close(&it, status);
    free(ops);
    ms_store_read_end(self, txn);
    return status;
}

//  --------------------------------------------------------------------------
//  Set the pool's operator count.

int
ms_store_set_pool_operators(ms_store_t *self, uint32_t n_operators)
{
    return ms_store_submit_count(self, MS_STORE_OP_POOL_OPS, n_operators);
}

//  --------------------------------------------------------------------------
//  A node's standing.

int
ms_store_node_standing(ms_store_t *self,
                       const uint8_t node_id[MS_STORE_ID_BYTES],
                       uint32_t *n_counted, uint32_t *n_strikes,
                       bool *quarantined)
{
    return ms_store_node_standing_ex(self, node_id, n_counted, n_strikes, NULL,
                                     quarantined);
}

//  --------------------------------------------------------------------------
//  A node's standing with its forgiven strikes.

int
ms_store_node_standing_ex(ms_store_t *self,
                          const uint8_t node_id[MS_STORE_ID_BYTES],
                          uint32_t *n_counted, uint32_t *n_strikes,
                          uint32_t *n_forgiven, bool *quarantined)
{
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    s_vnode_t vn;
    rc = s_vnode_get(self, txn, node_id, &vn);
    ms_store_read_end(self, txn);
    if (n_counted)
        *n_counted = vn.n_counted;
    if (n_strikes)
        *n_strikes = vn.n_strikes;
    if (n_forgiven)
        *n_forgiven = vn.n_forgiven;
    if (quarantined)
        *quarantined = vn.quarantined;
    return rc;
}

//  --------------------------------------------------------------------------
//  Take the changed verdicts.

size_t
ms_store_verdict_changes(ms_store_t *self, uint8_t (*out)[MS_STORE_ID_BYTES],
                         size_t max, uint64_t *n_dropped)
{
    pthread_mutex_lock(&self->vc_mu);
    size_t n = ms_ring_take(self->vc_ids, out, max);
    if (n_dropped) {
        *n_dropped = self->vc_dropped;
        self->vc_dropped = 0;
    }
    pthread_mutex_unlock(&self->vc_mu);
    return n;
}

//  --------------------------------------------------------------------------
//  Take the queued new results.

size_t
ms_store_new_results(ms_store_t *self, ms_store_new_result_t *out, size_t max)
{
    pthread_mutex_lock(&self->nr_mu);
    size_t n = ms_ring_take(self->nr, out, max);
    pthread_mutex_unlock(&self->nr_mu);
    return n;
}

//  --------------------------------------------------------------------------
//  Re-evaluations of one target.

int
ms_store_reevals_of(ms_store_t *self, const uint8_t task_id[MS_STORE_ID_BYTES],
                    const uint8_t target[MS_STORE_ID_BYTES],
                    const uint8_t verifier[MS_STORE_ID_BYTES], uint32_t *n,
                    bool *by_verifier)
{
    *n = 0;
    if (by_verifier)
        *by_verifier = false;
    if (!self->has_reevals)
        return MS_OK;
    MDB_txn *txn;
    int rc = ms_store_read_begin(self, &txn);
    if (rc != MS_OK)
        return rc;
    ms_store_scan_t it;
    int status = ms_store_scan_open(&it, txn, self->db_reevals, task_id,
                                    MS_STORE_ID, "cursor reevals");
    while (status == MS_OK && ms_store_scan_next(&it)) {
        if (it.k.mv_size != MS_STORE_ID + MS_STORE_KEY)
            break;
        if (it.v.mv_size != sizeof(ms_store_reeval_val_t) ||
            memcmp(it.v.mv_data, target, MS_STORE_ID) != 0)
            continue;
        (*n)++;
        if (by_verifier && verifier &&
            memcmp((const uint8_t *) it.k.mv_data + MS_STORE_ID, verifier,
                   MS_STORE_ID) == 0)
            *by_verifier = true;
    }
    status = ms_store_scan_close(&it, status);
    ms_store_read_end(self, txn);
    return status;
}
