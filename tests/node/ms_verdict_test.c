/*  =========================================================================
    ms_verdict_test - verdicts: agreement, strikes, disputes and slots,
    fingerprint classes, re-evaluation, quarantine in strata, clears,
    revisions, refused input, and independence from the input order

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_verdict.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { FP_HASWELL = 1, FP_SKYLAKEX = 2, FP_ZEN = 3 };

//  A 32-byte id: byte 0 = a, byte 1 = b, the rest a fixed pattern.
static void
s_id(uint8_t out[MS_VERDICT_ID_BYTES], int a, int b)
{
    memset(out, 0x5A, MS_VERDICT_ID_BYTES);
    out[0] = (uint8_t) a;
    out[1] = (uint8_t) b;
}

//  A result of node `node` (operator op) with status ok, the given
//  metrics, fingerprint class fp and weights digest digest; seq orders
//  it; its record hash is (node, seq).
static ms_verdict_result_t
s_ok(int node, const char *op, double acc, double loss, int fp, int digest,
     uint64_t seq)
{
    ms_verdict_result_t r;
    memset(&r, 0, sizeof r);
    s_id(r.node_id, node, 0);
    r.operator_name = op;
    r.status = MS_RUN_OK;
    r.test_accuracy = acc;
    r.test_loss = loss;
    s_id(r.fingerprint, fp, 0xF0);
    s_id(r.weights_digest, digest, 0xD0);
    r.seq = seq;
    s_id(r.record_hash, node, (int) seq);
    return r;
}

//  The same with another status (metrics NaN, as an honest node sends).
static ms_verdict_result_t
s_status(int node, const char *op, ms_run_status_t status, int fp, int digest,
         uint64_t seq)
{
    ms_verdict_result_t r = s_ok(node, op, NAN, NAN, fp, digest, seq);
    r.status = status;
    return r;
}

//  A re-evaluation of target by verifier node/operator.
static ms_verdict_reeval_t
s_reeval(const ms_verdict_result_t *target, int node, const char *op,
         double acc, double loss, uint64_t seq)
{
    ms_verdict_reeval_t e;
    memset(&e, 0, sizeof e);
    memcpy(e.target, target->record_hash, MS_VERDICT_ID_BYTES);
    s_id(e.verifier_node, node, 0);
    e.verifier_operator = op;
    e.test_accuracy = acc;
    e.test_loss = loss;
    e.seq = seq;
    s_id(e.record_hash, node, 0x80 + (int) seq);
    return e;
}

static ms_verdict_params_t
s_params(uint32_t replicas, uint32_t n_pool_operators)
{
    ms_verdict_params_t p;
    ms_verdict_params_default(&p);
    p.replicas = replicas;
    p.n_pool_operators = n_pool_operators;
    return p;
}

//  Evaluate results (no re-evaluations) into *out and marks.
static void
s_eval(const ms_verdict_params_t *p, const ms_verdict_result_t *results,
       size_t n, ms_verdict_outcome_t *out, ms_verdict_mark_t *marks)
{
    assert_int_equal(
        ms_verdict_evaluate(p, results, n, NULL, 0, out, marks, NULL, NULL),
        MS_OK);
}

//  --------------------------------------------------------------------------
//  Three honest operators on three kernels agree: verified by all three,
//  no strike, no further slot.

static void
test_three_honest_agree(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(3, 3);
    ms_verdict_result_t r[3] = {
        s_ok(1, "alice", 0.900, 0.300, FP_HASWELL, 1, 1),
        s_ok(2, "bob", 0.902, 0.298, FP_SKYLAKEX, 2, 2),
        s_ok(3, "carol", 0.898, 0.301, FP_ZEN, 3, 3),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(o.status, MS_RUN_OK);
    assert_int_equal(o.n_needed, 3);
    assert_int_equal(o.n_operators, 3);
    assert_int_equal(o.n_agreeing, 3);
    assert_int_equal(o.n_required, 3);
    assert_int_equal(o.n_strikes, 0);
    assert_int_equal(o.slots_wanted, 3);
    assert_false(o.slots_exhausted);
    assert_true(o.median_accuracy == 0.900); // lower median of 3
    assert_true(o.median_loss == 0.300);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(m[i].role, MS_VERDICT_ROLE_AGREES);
        assert_true(m[i].counted && m[i].agrees);
        assert_false(m[i].strike);
    }
}

//  --------------------------------------------------------------------------
//  A liar raising accuracy by 0.05 leaves S and earns a strike; the two
//  honest operators still verify the task (replicas 2, third slot filled
//  after a dispute).

static void
test_liar_struck_still_verified(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    ms_verdict_result_t r[3] = {
        s_ok(1, "alice", 0.900, 0.300, FP_HASWELL, 1, 1),
        s_ok(9, "mallory", 0.950, 0.300, FP_HASWELL, 9, 2),
        s_ok(2, "bob", 0.902, 0.299, FP_SKYLAKEX, 2, 3),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_true(o.median_accuracy == 0.902);
    assert_int_equal(o.n_agreeing, 2);
    assert_int_equal(o.n_required, 2);
    assert_int_equal(o.n_strikes, 1);
    assert_true(m[0].agrees && m[2].agrees);
    assert_int_equal(m[1].role, MS_VERDICT_ROLE_OUTSIDE);
    assert_true(m[1].counted);
    assert_false(m[1].agrees);
    assert_true(m[1].strike);
    assert_false(m[0].strike || m[2].strike);

    //  0.025 off (inside 3 tolerances): out of S but no strike.
    r[1].test_accuracy = 0.925;
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_false(m[1].agrees);
    assert_false(m[1].strike);
    assert_int_equal(o.n_strikes, 0);
}

//  --------------------------------------------------------------------------
//  Two operators that disagree: disputed, one more slot (3 of at most
//  replicas + 2 = 4), nobody struck (S holds one operator).

static void
test_two_disagree_disputed(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 5);
    ms_verdict_result_t r[2] = {
        s_ok(1, "alice", 0.900, 0.300, FP_HASWELL, 1, 1),
        s_ok(9, "mallory", 0.950, 0.300, FP_SKYLAKEX, 9, 2),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[2];
    s_eval(&p, r, 2, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_true(o.median_accuracy == 0.900); // lower median of 2
    assert_int_equal(o.n_agreeing, 1);
    assert_int_equal(o.n_required, 2);
    assert_int_equal(o.slots_wanted, 3);
    assert_false(o.slots_exhausted);
    assert_int_equal(o.n_strikes, 0);
    assert_false(m[0].strike || m[1].strike);

    //  One result alone with replicas 2: pending, two slots wanted.
    s_eval(&p, r, 1, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_PENDING);
    assert_int_equal(o.slots_wanted, 2);
}

//  --------------------------------------------------------------------------
//  Disputes open slots up to replicas + 2, and never more than the pool
//  has operators; at the cap the task says exhausted.

static void
test_dispute_slots_capped(void **state)
{
    (void) state;
    //  replicas 2: four results all different -> cap 4 reached.
    ms_verdict_params_t p = s_params(2, 10);
    ms_verdict_result_t r[4] = {
        s_ok(1, "a", 0.80, 0.3, FP_HASWELL, 1, 1),
        s_ok(2, "b", 0.85, 0.3, FP_HASWELL, 2, 2),
        s_ok(3, "c", 0.90, 0.3, FP_HASWELL, 3, 3),
        s_ok(4, "d", 0.95, 0.3, FP_HASWELL, 4, 4),
    };
    ms_verdict_outcome_t o;
    s_eval(&p, r, 3, &o, NULL);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.slots_wanted, 4);
    assert_false(o.slots_exhausted);
    s_eval(&p, r, 4, &o, NULL);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.slots_wanted, 4);
    assert_true(o.slots_exhausted);

    //  A pool of two operators cannot give a third slot.
    p = s_params(2, 2);
    s_eval(&p, r, 2, &o, NULL);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.slots_wanted, 2);
    assert_true(o.slots_exhausted);
}

//  --------------------------------------------------------------------------
//  replicas 1: accepted with one result; verified when a re-evaluation
//  by another operator agrees; disputed (a second slot) when one
//  disagrees; a re-evaluation by the producer's own operator is ignored.

static void
test_one_slot_accepted_then_reevaluated(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(1, 3);
    ms_verdict_result_t r[1] = {s_ok(1, "alice", 0.90, 0.30, FP_HASWELL, 1, 1)};
    ms_verdict_outcome_t o;
    ms_verdict_reeval_role_t roles[3];
    s_eval(&p, r, 1, &o, NULL);
    assert_int_equal(o.verdict, MS_VERDICT_ACCEPTED);
    assert_int_equal(o.slots_wanted, 1);

    //  Same operator, another node: does not count.
    ms_verdict_reeval_t e[3] = {
        s_reeval(&r[0], 5, "alice", 0.90, 0.30, 1),
        s_reeval(&r[0], 2, "bob", 0.901, 0.301, 2),
        s_reeval(&r[0], 3, "carol", 0.85, 0.30, 3),
    };
    assert_int_equal(ms_verdict_evaluate(&p, r, 1, e, 1, &o, NULL, roles, NULL),
                     MS_OK);
    assert_int_equal(roles[0], MS_VERDICT_REEVAL_SELF);
    assert_int_equal(o.verdict, MS_VERDICT_ACCEPTED);

    //  Bob recomputes 0.901: verified.
    assert_int_equal(ms_verdict_evaluate(&p, r, 1, e, 2, &o, NULL, roles, NULL),
                     MS_OK);
    assert_int_equal(roles[1], MS_VERDICT_REEVAL_AGREES);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(o.n_reevals_agreeing, 1);
    assert_int_equal(o.n_strikes, 0);

    //  Carol alone recomputes 0.85 (made-up metrics): disputed, a second
    //  slot is wanted.
    assert_int_equal(
        ms_verdict_evaluate(&p, r, 1, e + 2, 1, &o, NULL, roles, NULL), MS_OK);
    assert_int_equal(roles[0], MS_VERDICT_REEVAL_DISAGREES);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.n_reevals_disagreeing, 1);
    assert_int_equal(o.slots_wanted, 2);

    //  One agrees, one disagrees: not verified.
    assert_int_equal(
        ms_verdict_evaluate(&p, r, 1, e + 1, 2, &o, NULL, roles, NULL), MS_OK);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);

    //  A re-evaluation of an unknown record, or with a NaN metric, or by
    //  a quarantined verifier counts for nothing.
    ms_verdict_reeval_t bad[3] = {e[1], e[1], e[1]};
    bad[0].target[5] ^= 1;
    bad[1].test_loss = NAN;
    bad[2].quarantined = true;
    assert_int_equal(
        ms_verdict_evaluate(&p, r, 1, bad, 3, &o, NULL, roles, NULL), MS_OK);
    assert_int_equal(roles[0], MS_VERDICT_REEVAL_NO_TARGET);
    assert_int_equal(roles[1], MS_VERDICT_REEVAL_REFUSED_METRIC);
    assert_int_equal(roles[2], MS_VERDICT_REEVAL_EXCLUDED);
    assert_int_equal(o.verdict, MS_VERDICT_ACCEPTED);

    //  The same verifier operator twice: the first (by seq) counts.
    ms_verdict_reeval_t twice[2] = {s_reeval(&r[0], 3, "carol", 0.85, 0.3, 9),
                                    s_reeval(&r[0], 4, "carol", 0.9, 0.3, 4)};
    assert_int_equal(
        ms_verdict_evaluate(&p, r, 1, twice, 2, &o, NULL, roles, NULL), MS_OK);
    assert_int_equal(roles[0], MS_VERDICT_REEVAL_DUPLICATE);
    assert_int_equal(roles[1], MS_VERDICT_REEVAL_AGREES);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
}

//  --------------------------------------------------------------------------
//  Re-evaluation rules (docs/VERIFICATION.md "Re-evaluation"), as a table:
//  one slot (replicas 1, pool 3), alice published 0.90 / 0.30; each row
//  gives the re-evaluations and what must follow.

typedef struct {
    const char *what;
    int n;                      // re-evaluations used below
    const char *ops[3];         // verifier operators
    double acc[3];              // recomputed accuracies
    bool failed[3];             // could not recompute
    ms_verdict_state_t verdict; // expected
    bool strike;                // alice struck
    uint32_t slots_wanted;      // expected
} s_reeval_row_t;

static void
test_reeval_table(void **state)
{
    (void) state;
    static const s_reeval_row_t rows[] = {
        {"none", 0, {0}, {0}, {0}, MS_VERDICT_ACCEPTED, false, 1},
        {"bob agrees", 1, {"bob"}, {0.905}, {0}, MS_VERDICT_VERIFIED, false, 1},
        {"bob 0.05 off: disputed, one verifier never strikes",
         1,
         {"bob"},
         {0.85},
         {0},
         MS_VERDICT_DISPUTED,
         false,
         2},
        {"bob and carol 0.05 off: struck",
         2,
         {"bob", "carol"},
         {0.85, 0.851},
         {0},
         MS_VERDICT_DISPUTED,
         true,
         2},
        {"two 0.02 off (within 3 tolerances): disputed, no strike",
         2,
         {"bob", "carol"},
         {0.88, 0.88},
         {0},
         MS_VERDICT_DISPUTED,
         false,
         2},
        {"two off, one agrees: still struck (2 > 1)",
         3,
         {"bob", "carol", "dave"},
         {0.85, 0.85, 0.90},
         {0},
         MS_VERDICT_DISPUTED,
         true,
         2},
        {"weights missing at two verifiers: disputed, no strike",
         2,
         {"bob", "carol"},
         {0, 0},
         {true, true},
         MS_VERDICT_DISPUTED,
         false,
         2},
        {"one failed, one agrees: disputed (1 against 1)",
         2,
         {"bob", "carol"},
         {0, 0.90},
         {true, false},
         MS_VERDICT_DISPUTED,
         false,
         2},
        {"two agree, one failed: verified",
         3,
         {"bob", "carol", "dave"},
         {0.90, 0.899, 0},
         {false, false, true},
         MS_VERDICT_VERIFIED,
         false,
         1},
    };
    ms_verdict_params_t p = s_params(1, 4);
    ms_verdict_result_t r[1] = {s_ok(1, "alice", 0.90, 0.30, FP_HASWELL, 1, 1)};
    for (size_t t = 0; t < sizeof rows / sizeof rows[0]; t++) {
        const s_reeval_row_t *row = &rows[t];
        ms_verdict_reeval_t e[3];
        for (int k = 0; k < row->n; k++) {
            e[k] = s_reeval(&r[0], 2 + k, row->ops[k], row->acc[k], 0.30,
                            (uint64_t) k + 1);
            e[k].failed = row->failed[k];
            if (row->failed[k])
                e[k].test_accuracy = e[k].test_loss = NAN; // not read
        }
        ms_verdict_outcome_t o;
        ms_verdict_mark_t mk[1];
        ms_verdict_reeval_role_t roles[3];
        assert_int_equal(ms_verdict_evaluate(&p, r, 1, e, (size_t) row->n, &o,
                                             mk, roles, NULL),
                         MS_OK);
        if (o.verdict != row->verdict || mk[0].strike != row->strike ||
            o.slots_wanted != row->slots_wanted)
            fail_msg("row '%s': verdict %s strike %d slots %u", row->what,
                     ms_verdict_state_name(o.verdict), mk[0].strike,
                     o.slots_wanted);
        for (int k = 0; k < row->n; k++)
            if (row->failed[k])
                assert_int_equal(roles[k], MS_VERDICT_REEVAL_FAILED);
    }
}

//  --------------------------------------------------------------------------
//  With two or more operators a result that more re-evaluations disagree
//  with than agree is refuted: counted, out of the median and S.

static void
test_reeval_refutes_replica(void **state)
{
    (void) state;
    //  replicas 1, pool 3: mallory's made-up 0.95 was disputed by two
    //  re-evaluations; alice ran the second slot.
    ms_verdict_params_t p = s_params(1, 3);
    ms_verdict_result_t r[3] = {
        s_ok(1, "mallory", 0.95, 0.20, FP_HASWELL, 9, 1),
        s_ok(2, "alice", 0.90, 0.30, FP_HASWELL, 1, 2),
        s_ok(3, "bob", 0.90, 0.30, FP_HASWELL, 1, 3),
    };
    ms_verdict_reeval_t e[3] = {
        s_reeval(&r[0], 2, "alice", 0.90, 0.30, 4),
        s_reeval(&r[0], 3, "bob", 0.90, 0.30, 5),
        s_reeval(&r[1], 3, "bob", 0.90, 0.30, 6),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t mk[3];
    ms_verdict_reeval_role_t roles[3];
    //  Two results: mallory refuted, S = {alice} < 2: disputed, 3 slots.
    assert_int_equal(ms_verdict_evaluate(&p, r, 2, e, 3, &o, mk, roles, NULL),
                     MS_OK);
    assert_int_equal(mk[0].role, MS_VERDICT_ROLE_REFUTED);
    assert_true(mk[0].counted);
    assert_false(mk[0].agrees);
    assert_true(mk[0].strike); // two verifiers, 0.05 off
    assert_int_equal(o.n_refuted, 1);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.slots_wanted, 3);
    assert_true(o.median_accuracy == 0.90); // mallory's 0.95 left out
    //  bob's replica: verified by alice and bob; mallory struck once.
    assert_int_equal(ms_verdict_evaluate(&p, r, 3, e, 3, &o, mk, roles, NULL),
                     MS_OK);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(o.n_agreeing, 2);
    assert_true(mk[0].strike);
    assert_int_equal(o.n_strikes, 1);
    assert_false(mk[1].strike);

    //  One dishonest verifier against an honest replica pair (replicas
    //  2): it refutes alice's result alone (1 > 0), no strike; a second
    //  re-evaluation that agrees cancels it (1 against 1).
    p = s_params(2, 4);
    ms_verdict_reeval_t liar = s_reeval(&r[1], 7, "mallory", 0.5, 0.9, 7);
    assert_int_equal(
        ms_verdict_evaluate(&p, r + 1, 2, &liar, 1, &o, mk, roles, NULL),
        MS_OK);
    assert_int_equal(mk[0].role, MS_VERDICT_ROLE_REFUTED);
    assert_false(mk[0].strike);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    ms_verdict_reeval_t both[2] = {liar,
                                   s_reeval(&r[1], 8, "carol", 0.9, 0.3, 8)};
    assert_int_equal(
        ms_verdict_evaluate(&p, r + 1, 2, both, 2, &o, mk, roles, NULL), MS_OK);
    assert_int_equal(mk[0].role, MS_VERDICT_ROLE_AGREES);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(o.n_strikes, 0);
}

//  --------------------------------------------------------------------------
//  Haswell against SkylakeX kernels, 0.004 apart: verified, no strikes;
//  and no honest node collects a strike over 100 such tasks with two
//  bit-identical Haswell nodes and one SkylakeX node.

static void
test_haswell_skylakex_verify(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    ms_verdict_result_t r[3] = {
        s_ok(1, "alice", 0.9000, 0.3000, FP_HASWELL, 1, 1),
        s_ok(2, "bob", 0.9040, 0.2950, FP_SKYLAKEX, 2, 2),
    };
    ms_verdict_outcome_t o;
    s_eval(&p, r, 2, &o, NULL);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(o.n_agreeing, 2);
    assert_int_equal(o.n_strikes, 0);

    uint64_t x = 12345;
    uint32_t strikes = 0, verified = 0;
    for (int t = 0; t < 100; t++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double base = 0.80 + (double) (x >> 40) / (double) (1ull << 24) * 0.15;
        double delta = ((double) ((x >> 20) & 0xFFF) / 4095.0 - 0.5) * 0.008;
        double loss = 0.5 - base / 2;
        r[0] = s_ok(1, "alice", base, loss, FP_HASWELL, 10 + t, 1);
        r[1] = s_ok(3, "carol", base, loss, FP_HASWELL, 10 + t, 2);
        r[2] = s_ok(2, "bob", base + delta, loss * (1 + delta), FP_SKYLAKEX,
                    200 + t, 3);
        ms_verdict_params_t p3 = s_params(3, 3);
        s_eval(&p3, r, 3, &o, NULL);
        strikes += o.n_strikes;
        verified += o.verdict == MS_VERDICT_VERIFIED;
    }
    assert_int_equal(verified, 100);
    assert_int_equal(strikes, 0);
}

//  --------------------------------------------------------------------------
//  Same fingerprint, different weights digest: a dispute without a
//  strike; once two other operators of that class agree bit for bit,
//  the odd one is a mismatch and is struck.

static void
test_same_fingerprint_other_digest(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 4);
    ms_verdict_result_t r[3] = {
        s_ok(1, "alice", 0.900, 0.300, FP_HASWELL, 1, 1),
        s_ok(2, "bob", 0.900, 0.300, FP_HASWELL, 2, 2),
        s_ok(3, "carol", 0.900, 0.300, FP_HASWELL, 1, 3),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 2, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_true(o.class_dispute);
    assert_int_equal(o.n_agreeing, 0);
    assert_int_equal(o.n_strikes, 0);
    assert_int_equal(o.slots_wanted, 3);
    assert_int_equal(m[0].role, MS_VERDICT_ROLE_CLASS_DISPUTE);
    assert_int_equal(m[1].role, MS_VERDICT_ROLE_CLASS_DISPUTE);
    assert_false(m[0].strike || m[1].strike);

    //  Carol's Haswell run matches Alice's bit for bit.
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_false(o.class_dispute);
    assert_true(m[0].agrees && m[2].agrees);
    assert_int_equal(m[1].role, MS_VERDICT_ROLE_MISMATCH);
    assert_true(m[1].strike);
    assert_int_equal(o.n_strikes, 1);

    //  A liar claiming alice's class with other weights cancels alice's
    //  result (no strike, it cannot be told from her), but cannot block
    //  a task that three other operators verify.
    ms_verdict_result_t q[5] = {
        s_ok(1, "alice", 0.900, 0.300, FP_HASWELL, 1, 1),
        s_ok(9, "mallory", 0.900, 0.300, FP_HASWELL, 9, 2),
        s_ok(2, "bob", 0.903, 0.299, FP_SKYLAKEX, 2, 3),
        s_ok(3, "carol", 0.898, 0.301, FP_ZEN, 3, 4),
        s_ok(4, "dave", 0.901, 0.300, 4, 4, 5),
    };
    ms_verdict_mark_t qm[5];
    p = s_params(2, 5);
    s_eval(&p, q, 4, &o, qm);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED); // 2 < max(2, 3)
    s_eval(&p, q, 5, &o, qm);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED); // 3 >= max(2, 3)
    assert_true(o.class_dispute);
    assert_int_equal(qm[0].role, MS_VERDICT_ROLE_CLASS_DISPUTE);
    assert_int_equal(qm[1].role, MS_VERDICT_ROLE_CLASS_DISPUTE);
    assert_int_equal(o.n_strikes, 0);
}

//  --------------------------------------------------------------------------
//  Diverged against ok across fingerprints never strikes; inside one
//  class, against two bit-identical results of S, it does.

static void
test_diverged_versus_ok(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    ms_verdict_result_t r[3] = {
        s_ok(1, "alice", 0.900, 0.300, FP_HASWELL, 1, 1),
        s_ok(2, "bob", 0.902, 0.299, FP_SKYLAKEX, 2, 2),
        s_status(3, "carol", MS_RUN_DIVERGED, FP_ZEN, 3, 3),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(m[2].role, MS_VERDICT_ROLE_OUTSIDE);
    assert_true(m[2].counted);
    assert_false(m[2].strike);

    r[1].fingerprint[0] = FP_HASWELL; // bob now bit-identical to alice
    memcpy(r[1].weights_digest, r[0].weights_digest, MS_VERDICT_ID_BYTES);
    r[1].test_accuracy = r[0].test_accuracy;
    r[1].test_loss = r[0].test_loss;
    r[2].fingerprint[0] = FP_HASWELL;
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(m[2].role, MS_VERDICT_ROLE_MISMATCH);
    assert_true(m[2].strike);

    //  Two diverged kernels out of three: verified as diverged.
    ms_verdict_result_t d[3] = {
        s_status(1, "alice", MS_RUN_DIVERGED, FP_HASWELL, 1, 1),
        s_status(2, "bob", MS_RUN_DIVERGED, FP_SKYLAKEX, 2, 2),
        s_ok(3, "carol", 0.5, 0.9, FP_ZEN, 3, 3),
    };
    s_eval(&p, d, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(o.status, MS_RUN_DIVERGED);
    assert_false(m[2].strike);
}

//  --------------------------------------------------------------------------
//  Failed statuses that agree give `failed`; failures never strike.

static void
test_failed_statuses(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    ms_verdict_result_t r[3] = {
        s_status(1, "alice", MS_RUN_FAILED, FP_HASWELL, 0, 1),
        s_ok(2, "bob", 0.9, 0.3, FP_SKYLAKEX, 2, 2),
        s_status(3, "carol", MS_RUN_FAILED, FP_ZEN, 0, 3),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 2, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED); // ok vs failed
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_FAILED);
    assert_int_equal(o.status, MS_RUN_FAILED);
    assert_int_equal(o.n_agreeing, 2);
    assert_int_equal(o.n_strikes, 0);
    assert_false(m[1].strike);

    //  One slot, one failed result: failed.
    p = s_params(1, 3);
    s_eval(&p, r, 1, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_FAILED);
}

//  --------------------------------------------------------------------------
//  Ties at the median and n even: the lower median, the loss of the
//  lowest-loss result among tied accuracies; with n even no strike is
//  given while no majority agrees (two liars can hold the lower median).

static void
test_median_ties_and_even_n(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 4);
    ms_verdict_result_t t[3] = {
        s_ok(1, "alice", 0.90, 0.50, FP_HASWELL, 1, 1),
        s_ok(2, "bob", 0.90, 0.31, FP_SKYLAKEX, 2, 2),
        s_ok(3, "carol", 0.90, 0.309, FP_ZEN, 3, 3),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[4];
    s_eval(&p, t, 3, &o, m);
    assert_true(o.median_accuracy == 0.90);
    assert_true(o.median_loss == 0.31); // index 1 of .309 .31 .50
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_false(m[0].agrees); // loss 61% off
    assert_true(m[0].strike);  // more than 3 x 2%

    //  Two liars above, two honest below: m is the honest value, but the
    //  four are split 2-2: disputed, nobody struck.
    ms_verdict_result_t r[4] = {
        s_ok(1, "alice", 0.90, 0.3, FP_HASWELL, 1, 1),
        s_ok(2, "bob", 0.90, 0.3, FP_SKYLAKEX, 2, 2),
        s_ok(8, "mallory", 0.95, 0.3, FP_ZEN, 8, 3),
        s_ok(9, "trudy", 0.95, 0.3, 4, 9, 4),
    };
    s_eval(&p, r, 4, &o, m);
    assert_true(o.median_accuracy == 0.90);
    assert_int_equal(o.n_required, 3);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.n_strikes, 0);

    //  Liars below: m is theirs, still disputed, honest nodes unharmed.
    r[2].test_accuracy = r[3].test_accuracy = 0.85;
    s_eval(&p, r, 4, &o, m);
    assert_true(o.median_accuracy == 0.85);
    assert_int_equal(o.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.n_strikes, 0);
    assert_false(m[0].strike || m[1].strike);

    //  The tolerance edge is inclusive: 0.85 against 0.84 agrees.
    ms_verdict_result_t e[2] = {
        s_ok(1, "alice", 0.84, 0.3, FP_HASWELL, 1, 1),
        s_ok(2, "bob", 0.85, 0.3, FP_SKYLAKEX, 2, 2),
    };
    s_eval(&p, e, 2, &o, m);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
}

//  --------------------------------------------------------------------------
//  Operators count, not nodes: of two results of one operator the first
//  by seq counts, whatever the input order.

static void
test_one_result_per_operator(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    ms_verdict_result_t r[3] = {
        s_ok(4, "alice", 0.95, 0.3, FP_HASWELL, 4, 5), // alice's 2nd node
        s_ok(1, "alice", 0.90, 0.3, FP_HASWELL, 1, 3),
        s_ok(2, "bob", 0.90, 0.3, FP_SKYLAKEX, 2, 4),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.n_operators, 2);
    assert_int_equal(m[0].role, MS_VERDICT_ROLE_DUPLICATE);
    assert_false(m[0].counted || m[0].strike);
    assert_true(m[1].agrees && m[2].agrees);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);

    //  Two nodes of one operator alone: one operator, still pending.
    r[2].operator_name = "alice";
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.n_operators, 1);
    assert_int_equal(o.verdict, MS_VERDICT_PENDING);
}

//  --------------------------------------------------------------------------
//  A single-operator pool: one slot, accepted, never a second slot, and
//  the operator cannot verify itself.

static void
test_single_operator_pool(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(3, 1);
    ms_verdict_result_t r[2] = {
        s_ok(1, "lab", 0.90, 0.3, FP_HASWELL, 1, 1),
        s_ok(2, "lab", 0.70, 0.3, FP_HASWELL, 2, 2),
    };
    ms_verdict_reeval_t e = s_reeval(&r[0], 2, "lab", 0.9, 0.3, 1);
    ms_verdict_outcome_t o;
    ms_verdict_reeval_role_t role;
    assert_int_equal(
        ms_verdict_evaluate(&p, r, 2, &e, 1, &o, NULL, &role, NULL), MS_OK);
    assert_int_equal(o.n_needed, 1);
    assert_int_equal(o.n_operators, 1);
    assert_int_equal(o.verdict, MS_VERDICT_ACCEPTED);
    assert_int_equal(o.slots_wanted, 1);
    assert_int_equal(role, MS_VERDICT_REEVAL_SELF);
}

//  --------------------------------------------------------------------------
//  Regression tasks (accuracy NaN by design): the loss is the metric.

static void
test_regression_uses_loss(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    p.regression = true;
    ms_verdict_result_t r[3] = {
        s_ok(1, "alice", NAN, 0.500, FP_HASWELL, 1, 1),
        s_ok(2, "bob", NAN, 0.505, FP_SKYLAKEX, 2, 2),
        s_ok(9, "mallory", NAN, 0.400, FP_ZEN, 9, 3),
    };
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 3, &o, m);
    assert_true(isnan(o.median_accuracy));
    assert_true(o.median_loss == 0.500);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
    assert_true(m[0].agrees && m[1].agrees);
    assert_true(m[2].strike); // 20% off, more than 3 x 2%

    //  The same results in a classification task are refused.
    p.regression = false;
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(o.n_refused, 3);
    assert_int_equal(m[0].role, MS_VERDICT_ROLE_REFUSED_METRIC);
    assert_int_equal(o.verdict, MS_VERDICT_PENDING);
}

//  --------------------------------------------------------------------------
//  Malformed results are refused with a code and do not stop the task;
//  bad parameters fail the call with a diag.

static void
test_refused_input(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    ms_verdict_result_t r[6] = {
        s_ok(1, "alice", 0.90, 0.3, FP_HASWELL, 1, 1),
        s_ok(2, "bob", NAN, 0.3, FP_SKYLAKEX, 2, 2),
        s_ok(3, "carol", 1.5, 0.3, FP_ZEN, 3, 3),
        s_ok(4, "dave", 0.9, INFINITY, FP_ZEN, 4, 4),
        s_ok(5, "", 0.9, 0.3, FP_ZEN, 5, 5),
        s_ok(6, "erin", 0.901, 0.3, FP_ZEN, 6, 6),
    };
    ms_verdict_result_t odd = s_ok(7, "frank", 0.9, 0.3, FP_ZEN, 7, 7);
    odd.status = (ms_run_status_t) 7;
    ms_verdict_result_t all[7];
    memcpy(all, r, sizeof r);
    all[6] = odd;
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[7];
    s_eval(&p, all, 7, &o, m);
    assert_int_equal(m[1].role, MS_VERDICT_ROLE_REFUSED_METRIC);
    assert_int_equal(m[2].role, MS_VERDICT_ROLE_REFUSED_RANGE);
    assert_int_equal(m[3].role, MS_VERDICT_ROLE_REFUSED_METRIC);
    assert_int_equal(m[4].role, MS_VERDICT_ROLE_REFUSED_OPERATOR);
    assert_int_equal(m[6].role, MS_VERDICT_ROLE_REFUSED_STATUS);
    assert_int_equal(o.n_refused, 5);
    assert_int_equal(o.n_operators, 2);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED); // alice and erin
    for (int i = 1; i < 5; i++)
        assert_false(m[i].counted || m[i].strike);

    //  Diverged and failed results carry NaN metrics: not refused.
    ms_verdict_result_t d = s_status(8, "gina", MS_RUN_DIVERGED, 1, 1, 8);
    s_eval(&p, &d, 1, &o, m);
    assert_int_equal(m[0].role, MS_VERDICT_ROLE_AGREES);

    ms_diag_t diag;
    ms_verdict_params_t bad = s_params(0, 3);
    assert_int_equal(
        ms_verdict_evaluate(&bad, r, 1, NULL, 0, &o, NULL, NULL, &diag),
        MS_ERR_INVALID);
    assert_string_equal(diag.where, "replicas");
    bad = s_params(65, 3);
    assert_int_equal(
        ms_verdict_evaluate(&bad, r, 1, NULL, 0, &o, NULL, NULL, &diag),
        MS_ERR_INVALID);
    bad = s_params(1, 0);
    assert_int_equal(
        ms_verdict_evaluate(&bad, r, 1, NULL, 0, &o, NULL, NULL, &diag),
        MS_ERR_INVALID);
    assert_string_equal(diag.where, "n_pool_operators");
    bad = s_params(1, 1);
    bad.accuracy_tolerance = NAN;
    assert_int_equal(
        ms_verdict_evaluate(&bad, r, 1, NULL, 0, &o, NULL, NULL, &diag),
        MS_ERR_INVALID);
    assert_string_equal(diag.where, "accuracy_tolerance");
    bad.accuracy_tolerance = 0.01;
    bad.loss_tolerance = -1;
    assert_int_equal(
        ms_verdict_evaluate(&bad, r, 1, NULL, 0, &o, NULL, NULL, &diag),
        MS_ERR_INVALID);
    assert_string_equal(diag.where, "loss_tolerance");
    assert_int_equal(o.verdict, MS_VERDICT_PENDING);

    //  No results at all: pending.
    s_eval(&p, NULL, 0, &o, NULL);
    assert_int_equal(o.verdict, MS_VERDICT_PENDING);
    assert_int_equal(o.slots_wanted, 2);
}

//  --------------------------------------------------------------------------
//  The quarantine rule itself: K strikes and 10% of counted results,
//  less the strikes forgiven.

static void
test_quarantine_rule(void **state)
{
    (void) state;
    ms_verdict_policy_t q;
    ms_verdict_policy_default(&q);
    assert_true(ms_verdict_quarantined(&q, 3, 3, 0));
    assert_true(ms_verdict_quarantined(&q, 30, 3, 0));  // exactly 10%
    assert_false(ms_verdict_quarantined(&q, 31, 3, 0)); // under 10%
    assert_false(ms_verdict_quarantined(&q, 2, 2, 0));  // under K
    assert_false(ms_verdict_quarantined(&q, 3, 3, 1));  // forgiven
    assert_true(ms_verdict_quarantined(&q, 4, 4, 1));   // 3 left
    assert_false(ms_verdict_quarantined(&q, 0, 0, 0));
    assert_int_equal(ms_verdict_needed(2, 3), 2);
    assert_int_equal(ms_verdict_needed(3, 1), 1);
    assert_int_equal(ms_verdict_required(2, 3), 2);
    assert_int_equal(ms_verdict_required(2, 4), 3);
    assert_int_equal(ms_verdict_required(5, 4), 5);
}

//  Tasks of a small pool: mallory (node 9) lies by +0.05 in n_lies tasks
//  with alice (1) and bob (2) honest; in every task mallory's result is
//  first and it ends with one task where mallory and alice alone agree.
//  results must hold 3 * n_tasks entries.
static size_t
s_pool_tasks(ms_verdict_task_t *tasks, ms_verdict_result_t *results,
             size_t n_lies, size_t n_honest)
{
    size_t t = 0;
    for (; t < n_lies + n_honest; t++) {
        ms_verdict_result_t *r = &results[3 * t];
        double lie = t < n_lies ? 0.05 : 0;
        r[0] = s_ok(9, "mallory", 0.90 + lie, 0.3, FP_ZEN, 90 + (int) t, 1);
        r[1] = s_ok(1, "alice", 0.90, 0.3, FP_HASWELL, 10 + (int) t, 2);
        r[2] = s_ok(2, "bob", 0.902, 0.3, FP_SKYLAKEX, 20 + (int) t, 3);
        memset(&tasks[t], 0, sizeof tasks[t]);
        tasks[t].params = s_params(2, 3);
        tasks[t].results = r;
        tasks[t].n_results = 3;
    }
    //  The last task: mallory and alice only.
    ms_verdict_result_t *r = &results[3 * t];
    r[0] = s_ok(9, "mallory", 0.90, 0.3, FP_ZEN, 99, 1);
    r[1] = s_ok(1, "alice", 0.90, 0.3, FP_HASWELL, 19, 2);
    memset(&tasks[t], 0, sizeof tasks[t]);
    tasks[t].params = s_params(2, 3);
    tasks[t].results = r;
    tasks[t].n_results = 2;
    return t + 1;
}

//  --------------------------------------------------------------------------
//  Quarantine after K strikes making 10% of the node's results; its
//  results then leave the final verdicts.

static void
test_quarantine_in_strata(void **state)
{
    (void) state;
    ms_verdict_task_t tasks[8];
    ms_verdict_result_t results[3 * 8];
    ms_verdict_task_outcome_t out[8];
    ms_verdict_mark_t marks[3], raw_marks[3];
    size_t n = s_pool_tasks(tasks, results, 3, 0);
    assert_int_equal(n, 4);
    tasks[3].marks = marks;
    tasks[3].raw_marks = raw_marks;
    ms_verdict_node_t *nodes = NULL;
    size_t n_nodes = 0;
    assert_int_equal(ms_verdict_evaluate_all(tasks, n, NULL, 0, NULL, out,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    assert_int_equal(n_nodes, 3);
    //  Sorted by id: 1 alice, 2 bob, 9 mallory.
    assert_int_equal(nodes[0].node_id[0], 1);
    assert_int_equal(nodes[2].node_id[0], 9);
    assert_int_equal(nodes[2].n_counted, 4);
    assert_int_equal(nodes[2].n_strikes, 3);
    assert_true(nodes[2].quarantined);
    assert_false(nodes[0].quarantined || nodes[1].quarantined);
    assert_int_equal(nodes[0].n_strikes + nodes[1].n_strikes, 0);
    for (size_t t = 0; t < 3; t++) {
        assert_int_equal(out[t].raw.verdict, MS_VERDICT_VERIFIED);
        assert_int_equal(out[t].raw.n_strikes, 1);
        assert_int_equal(out[t].final.verdict, MS_VERDICT_VERIFIED);
        assert_int_equal(out[t].final.n_operators, 2);
    }
    //  The last task counted mallory in stratum 1, not in the final one.
    assert_int_equal(out[3].raw.verdict, MS_VERDICT_VERIFIED);
    assert_true(raw_marks[0].counted && raw_marks[0].agrees);
    assert_int_equal(marks[0].role, MS_VERDICT_ROLE_EXCLUDED);
    assert_false(marks[0].counted);
    assert_int_equal(out[3].final.verdict, MS_VERDICT_PENDING);
    assert_int_equal(out[3].final.slots_wanted, 2);
    assert_false(out[3].changed);
    assert_int_equal(out[3].revision.verdict, MS_VERDICT_PENDING);
    assert_int_equal(out[3].revision.revision, 0); // pending -> pending
    free(nodes);

    //  Two lies are under K; three lies among 31 results are under 10%.
    n = s_pool_tasks(tasks, results, 2, 0);
    assert_int_equal(ms_verdict_evaluate_all(tasks, n, NULL, 0, NULL, out,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    assert_int_equal(nodes[2].n_strikes, 2);
    assert_false(nodes[2].quarantined);
    assert_int_equal(out[n - 1].final.verdict, MS_VERDICT_VERIFIED);
    free(nodes);

    ms_verdict_task_t many[32];
    ms_verdict_result_t many_results[3 * 32];
    ms_verdict_task_outcome_t many_out[32];
    n = s_pool_tasks(many, many_results, 3, 27);
    assert_int_equal(n, 31);
    assert_int_equal(ms_verdict_evaluate_all(many, n, NULL, 0, NULL, many_out,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    assert_int_equal(nodes[2].n_counted, 31);
    assert_int_equal(nodes[2].n_strikes, 3);
    assert_false(nodes[2].quarantined);
    free(nodes);

    //  A stricter policy: K = 2.
    ms_verdict_policy_t policy = {.strikes_min = 2, .strikes_permille = 100};
    n = s_pool_tasks(tasks, results, 2, 0);
    assert_int_equal(ms_verdict_evaluate_all(tasks, n, NULL, 0, &policy, out,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    assert_true(nodes[2].quarantined);
    free(nodes);
    ms_diag_t diag;
    policy.strikes_min = 0;
    assert_int_equal(ms_verdict_evaluate_all(tasks, n, NULL, 0, &policy, out,
                                             &nodes, &n_nodes, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "policy.strikes_min");
    assert_null(nodes);
    tasks[1].params.replicas = 0;
    assert_int_equal(ms_verdict_evaluate_all(tasks, n, NULL, 0, NULL, out,
                                             &nodes, &n_nodes, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "tasks[1].params.replicas");
}

//  --------------------------------------------------------------------------
//  A quarantined node's results are excluded from ms_verdict_evaluate
//  too, and its operator's other node then counts.

static void
test_quarantined_flag_excludes(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(2, 3);
    ms_verdict_result_t r[3] = {
        s_ok(9, "alice", 0.95, 0.3, FP_ZEN, 9, 1),
        s_ok(1, "alice", 0.90, 0.3, FP_HASWELL, 1, 2),
        s_ok(2, "bob", 0.90, 0.3, FP_SKYLAKEX, 2, 3),
    };
    r[0].quarantined = true;
    ms_verdict_outcome_t o;
    ms_verdict_mark_t m[3];
    s_eval(&p, r, 3, &o, m);
    assert_int_equal(m[0].role, MS_VERDICT_ROLE_EXCLUDED);
    assert_true(m[1].counted && m[1].agrees);
    assert_int_equal(o.verdict, MS_VERDICT_VERIFIED);
}

//  --------------------------------------------------------------------------
//  ms_verdict_evaluate_task, what the store runs, is the three calls it
//  stands for: stratum 1 with the quarantined flags ignored (results' and
//  re-evaluations'), the final evaluation with them, and the revision of
//  that final outcome; 70 results take the heap path.

static void
test_evaluate_task_is_the_three(void **state)
{
    (void) state;
    enum { N = 70 };
    static const char *ops[] = {"alice", "bob", "carol", "dave", "erin"};
    ms_verdict_params_t p = s_params(3, 5);
    ms_verdict_result_t r[N], nq[N];
    for (int i = 0; i < N; i++) {
        r[i] = s_ok(i, ops[i % 5], 0.90 + 0.001 * (i % 7), 0.3,
                    FP_HASWELL + i % 2, i % 3, (uint64_t) (N - i));
        r[i].quarantined = i % 5 == 1; // bob's node is quarantined
        nq[i] = r[i];
        nq[i].quarantined = false;
    }
    ms_verdict_reeval_t e[2] = {s_reeval(&r[1], 40, "carol", 0.5, 0.3, 1),
                                s_reeval(&r[2], 41, "bob", 0.91, 0.3, 2)};
    e[1].quarantined = true;
    ms_verdict_reeval_t enq[2] = {e[0], e[1]};
    enq[1].quarantined = false;
    ms_verdict_outcome_t raw, fin, raw1, fin1;
    ms_verdict_mark_t rm[N], fm[N], rm1[N], fm1[N];
    uint32_t rev = 99, rev1 = 98;
    assert_int_equal(ms_verdict_evaluate_task(&p, r, N, e, 2, &raw, rm, &fin,
                                              fm, &rev, NULL),
                     MS_OK);
    assert_int_equal(
        ms_verdict_evaluate(&p, nq, N, enq, 2, &raw1, rm1, NULL, NULL), MS_OK);
    assert_int_equal(
        ms_verdict_evaluate(&p, r, N, e, 2, &fin1, fm1, NULL, NULL), MS_OK);
    assert_int_equal(ms_verdict_revision(&p, r, N, e, 2, &fin1, fm1, &rev1),
                     MS_OK);
    assert_int_equal(rev, rev1);
    assert_int_equal(raw.verdict, raw1.verdict);
    assert_int_equal(fin.verdict, fin1.verdict);
    assert_int_equal(raw.n_operators, 5);
    assert_int_equal(fin.n_operators, 4); // bob out
    assert_int_equal(fin.n_operators, fin1.n_operators);
    assert_int_equal(raw.n_strikes, raw1.n_strikes);
    assert_int_equal(fin.n_agreeing, fin1.n_agreeing);
    assert_true(memcmp(&raw.median_accuracy, &raw1.median_accuracy, 8) == 0);
    assert_true(memcmp(&fin.median_accuracy, &fin1.median_accuracy, 8) == 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(rm[i].role, rm1[i].role);
        assert_int_equal(rm[i].counted, rm1[i].counted);
        assert_int_equal(rm[i].agrees, rm1[i].agrees);
        assert_int_equal(rm[i].strike, rm1[i].strike);
        assert_int_equal(fm[i].role, fm1[i].role);
        assert_int_equal(fm[i].agrees, fm1[i].agrees);
        assert_int_equal(fm[i].strike, fm1[i].strike);
    }
    assert_int_equal(fm[1].role, MS_VERDICT_ROLE_EXCLUDED);
    assert_int_not_equal(rm[1].role, MS_VERDICT_ROLE_EXCLUDED);
    //  Bad params: MS_ERR_INVALID, nothing decided.
    p.replicas = 0;
    assert_int_equal(ms_verdict_evaluate_task(&p, r, N, e, 2, &raw, rm, &fin,
                                              fm, &rev, NULL),
                     MS_ERR_INVALID);
    assert_int_equal(fin.verdict, MS_VERDICT_PENDING);
    assert_int_equal(rev, 0);
}

//  --------------------------------------------------------------------------
//  The authority's clear lifts a quarantine by forgiving strikes; new
//  strikes beyond the forgiven ones bring it back.

static void
test_clear_lifts_quarantine(void **state)
{
    (void) state;
    ms_verdict_task_t tasks[8];
    ms_verdict_result_t results[3 * 8];
    ms_verdict_task_outcome_t out[8];
    ms_verdict_node_t *nodes = NULL;
    size_t n_nodes = 0;
    size_t n = s_pool_tasks(tasks, results, 3, 0);
    ms_verdict_clear_t clears[3];
    memset(clears, 0, sizeof clears);
    s_id(clears[0].node_id, 9, 0);
    clears[0].n_forgiven = 1;
    s_id(clears[1].node_id, 9, 0);
    clears[1].n_forgiven = 3; // the larger wins
    s_id(clears[2].node_id, 77, 0);
    clears[2].n_forgiven = 5; // unknown node: ignored
    assert_int_equal(ms_verdict_evaluate_all(tasks, n, clears, 3, NULL, out,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    assert_int_equal(n_nodes, 3);
    assert_int_equal(nodes[2].n_strikes, 3);
    assert_int_equal(nodes[2].n_forgiven, 3);
    assert_false(nodes[2].quarantined);
    assert_int_equal(out[3].final.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(out[3].revision.revision, 1);
    free(nodes);

    //  Three more lies after the clear: quarantined again.
    n = s_pool_tasks(tasks, results, 6, 0);
    assert_int_equal(ms_verdict_evaluate_all(tasks, n, clears, 2, NULL, out,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    assert_int_equal(nodes[2].n_strikes, 6);
    assert_true(nodes[2].quarantined);
    assert_int_equal(out[n - 1].final.verdict, MS_VERDICT_PENDING);
    free(nodes);
}

//  --------------------------------------------------------------------------
//  Revisions: each change of verdict is a new revision and an event;
//  the same verdict again is not.

static void
test_revisions(void **state)
{
    (void) state;
    ms_verdict_revision_t rev = {MS_VERDICT_PENDING, 0};
    assert_false(ms_verdict_revise(&rev, MS_VERDICT_PENDING));
    assert_int_equal(rev.revision, 0);
    assert_true(ms_verdict_revise(&rev, MS_VERDICT_DISPUTED));
    assert_int_equal(rev.revision, 1);
    assert_int_equal(rev.verdict, MS_VERDICT_DISPUTED);
    assert_false(ms_verdict_revise(&rev, MS_VERDICT_DISPUTED));
    assert_true(ms_verdict_revise(&rev, MS_VERDICT_VERIFIED));
    assert_int_equal(rev.revision, 2);
    rev.revision = UINT32_MAX;
    assert_true(ms_verdict_revise(&rev, MS_VERDICT_DISPUTED));
    assert_int_equal(rev.revision, UINT32_MAX);

    //  Through a batch: a late replica turns a dispute into a verdict.
    ms_verdict_result_t r[3] = {
        s_ok(1, "alice", 0.90, 0.3, FP_HASWELL, 1, 1),
        s_ok(9, "mallory", 0.95, 0.3, FP_ZEN, 9, 2),
        s_ok(2, "bob", 0.90, 0.3, FP_SKYLAKEX, 2, 3),
    };
    ms_verdict_task_t task;
    memset(&task, 0, sizeof task);
    task.params = s_params(2, 3);
    task.results = r;
    task.n_results = 2;
    ms_verdict_task_outcome_t o;
    ms_verdict_node_t *nodes = NULL;
    size_t n_nodes = 0;
    assert_int_equal(ms_verdict_evaluate_all(&task, 1, NULL, 0, NULL, &o,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    free(nodes);
    assert_true(o.changed);
    assert_int_equal(o.revision.verdict, MS_VERDICT_DISPUTED);
    assert_int_equal(o.revision.revision, 1);
    task.prev = o.revision; // the caller stores it
    assert_int_equal(ms_verdict_evaluate_all(&task, 1, NULL, 0, NULL, &o,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    free(nodes);
    assert_false(o.changed);
    assert_int_equal(o.revision.revision, 1);
    task.n_results = 3; // bob's replica arrives
    assert_int_equal(ms_verdict_evaluate_all(&task, 1, NULL, 0, NULL, &o,
                                             &nodes, &n_nodes, NULL),
                     MS_OK);
    free(nodes);
    assert_true(o.changed);
    assert_int_equal(o.revision.verdict, MS_VERDICT_VERIFIED);
    assert_int_equal(o.revision.revision, 2);
}

//  --------------------------------------------------------------------------
//  Order independence: a random pool (fixed seed), evaluated once, then
//  100 times with tasks, results, re-evaluations and clears permuted:
//  every outcome, mark and node figure is the same.

#define S_TASKS 40
#define S_PER_TASK 7
#define S_REEVALS 3

static uint64_t s_rng = 0x9E3779B97F4A7C15ull;

static uint32_t
s_rand(uint32_t n)
{
    s_rng ^= s_rng << 13;
    s_rng ^= s_rng >> 7;
    s_rng ^= s_rng << 17;
    return (uint32_t) (s_rng % n);
}

static void
s_shuffle(size_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = s_rand((uint32_t) i);
        size_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

static void
s_assert_outcome_equal(const ms_verdict_outcome_t *a,
                       const ms_verdict_outcome_t *b)
{
    assert_int_equal(a->verdict, b->verdict);
    assert_int_equal(a->status, b->status);
    assert_int_equal(a->n_needed, b->n_needed);
    assert_int_equal(a->n_operators, b->n_operators);
    assert_int_equal(a->n_agreeing, b->n_agreeing);
    assert_int_equal(a->n_required, b->n_required);
    assert_int_equal(a->n_strikes, b->n_strikes);
    assert_int_equal(a->n_refused, b->n_refused);
    assert_int_equal(a->n_reevals_agreeing, b->n_reevals_agreeing);
    assert_int_equal(a->n_reevals_disagreeing, b->n_reevals_disagreeing);
    assert_int_equal(a->slots_wanted, b->slots_wanted);
    assert_int_equal(a->slots_exhausted, b->slots_exhausted);
    assert_int_equal(a->class_dispute, b->class_dispute);
    assert_memory_equal(&a->median_accuracy, &b->median_accuracy,
                        sizeof(double));
    assert_memory_equal(&a->median_loss, &b->median_loss, sizeof(double));
}

static void
s_assert_mark_equal(const ms_verdict_mark_t *a, const ms_verdict_mark_t *b)
{
    assert_int_equal(a->role, b->role);
    assert_int_equal(a->counted, b->counted);
    assert_int_equal(a->agrees, b->agrees);
    assert_int_equal(a->strike, b->strike);
}

static void
test_order_independence(void **state)
{
    (void) state;
    static const char *ops[] = {"alice", "bob", "carol", "dave", "erin"};
    //  Node n < 7 belongs to operator n % 5 (nodes 5 and 6 are second
    //  nodes of alice and bob); node 7 is mallory, who always lies.
    static ms_verdict_result_t res[S_TASKS][S_PER_TASK];
    static ms_verdict_reeval_t ree[S_TASKS][S_REEVALS];
    static ms_verdict_mark_t ref_marks[S_TASKS][S_PER_TASK];
    static ms_verdict_mark_t ref_raw[S_TASKS][S_PER_TASK];
    ms_verdict_task_t tasks[S_TASKS];
    ms_verdict_task_outcome_t ref[S_TASKS];
    uint32_t n_strikes_total = 0, n_verified = 0, n_disputed = 0;
    s_rng = 0x9E3779B97F4A7C15ull;
    for (size_t t = 0; t < S_TASKS; t++) {
        size_t n = 1 + s_rand(S_PER_TASK);
        double base = 0.7 + 0.01 * s_rand(25);
        for (size_t i = 0; i < n; i++) {
            int node = (int) s_rand(8);
            int fp = 1 + (int) s_rand(3);
            double acc = base + 0.001 * ((int) s_rand(9) - 4);
            if (node == 7 || s_rand(20) == 0)
                acc += 0.05; // node 7 lies; others now and then
            int digest = s_rand(8) == 0 ? 50 + (int) s_rand(3) : (int) t;
            res[t][i] = s_ok(node, node == 7 ? "mallory" : ops[node % 5], acc,
                             2.0 - acc, fp, digest, (uint64_t) s_rand(4));
            //  Duplicate records (same seq and hash) from one node would
            //  be the same record: keep the hash distinct.
            res[t][i].record_hash[2] = (uint8_t) i;
            uint32_t pick = s_rand(20);
            if (pick == 0)
                res[t][i].status = MS_RUN_DIVERGED;
            else if (pick == 1)
                res[t][i].status = MS_RUN_FAILED;
            else if (pick == 2)
                res[t][i].test_accuracy = NAN;
        }
        size_t n_e = s_rand(S_REEVALS + 1);
        for (size_t k = 0; k < n_e; k++) {
            const ms_verdict_result_t *target = &res[t][s_rand((uint32_t) n)];
            int node = (int) s_rand(8);
            ree[t][k] = s_reeval(target, node, ops[node % 5],
                                 target->test_accuracy +
                                     (s_rand(3) == 0 ? 0.04 : 0.001),
                                 target->test_loss, (uint64_t) s_rand(3));
            ree[t][k].record_hash[2] = (uint8_t) k;
        }
        memset(&tasks[t], 0, sizeof tasks[t]);
        tasks[t].params = s_params(1 + s_rand(3), 5);
        tasks[t].results = res[t];
        tasks[t].n_results = n;
        tasks[t].reevals = ree[t];
        tasks[t].n_reevals = n_e;
        tasks[t].prev.verdict = (ms_verdict_state_t) s_rand(5);
        tasks[t].prev.revision = s_rand(4);
        tasks[t].marks = ref_marks[t];
        tasks[t].raw_marks = ref_raw[t];
    }
    ms_verdict_clear_t clears[2];
    memset(clears, 0, sizeof clears);
    s_id(clears[0].node_id, 3, 0);
    clears[0].n_forgiven = 1;
    s_id(clears[1].node_id, 3, 0);
    clears[1].n_forgiven = 2;
    ms_verdict_node_t *ref_nodes = NULL;
    size_t n_ref_nodes = 0;
    assert_int_equal(ms_verdict_evaluate_all(tasks, S_TASKS, clears, 2, NULL,
                                             ref, &ref_nodes, &n_ref_nodes,
                                             NULL),
                     MS_OK);
    bool any_quarantined = false;
    for (size_t j = 0; j < n_ref_nodes; j++) {
        any_quarantined |= ref_nodes[j].quarantined;
        if (getenv("MS_VERDICT_TEST_VERBOSE"))
            printf("node %d counted %u strikes %u forgiven %u %s\n",
                   ref_nodes[j].node_id[0], ref_nodes[j].n_counted,
                   ref_nodes[j].n_strikes, ref_nodes[j].n_forgiven,
                   ref_nodes[j].quarantined ? "quarantined" : "");
    }
    for (size_t t = 0; t < S_TASKS; t++) {
        n_strikes_total += ref[t].raw.n_strikes;
        n_verified += ref[t].final.verdict == MS_VERDICT_VERIFIED;
        n_disputed += ref[t].final.verdict == MS_VERDICT_DISPUTED;
    }
    for (size_t t = 0; t < S_TASKS && getenv("MS_VERDICT_TEST_VERBOSE"); t++) {
        printf("task %zu %s n=%u S=%u req=%u m=%.3f:", t,
               ms_verdict_state_name(ref[t].raw.verdict),
               ref[t].raw.n_operators, ref[t].raw.n_agreeing,
               ref[t].raw.n_required, ref[t].raw.median_accuracy);
        for (size_t i = 0; i < tasks[t].n_results; i++)
            printf(" [%d %s %d %.3f fp%d d%d %s%s]", res[t][i].node_id[0],
                   res[t][i].operator_name, res[t][i].status,
                   res[t][i].test_accuracy, res[t][i].fingerprint[0],
                   res[t][i].weights_digest[0],
                   ms_verdict_role_name(ref_raw[t][i].role),
                   ref_raw[t][i].strike ? " STRIKE" : "");
        printf("\n");
    }
    if (getenv("MS_VERDICT_TEST_VERBOSE"))
        printf("strikes %u verified %u disputed %u\n", n_strikes_total,
               n_verified, n_disputed);
    //  The sample exercises the interesting paths.
    assert_true(any_quarantined);
    assert_true(n_strikes_total > 0);
    assert_true(n_verified > 0 && n_disputed > 0);

    static ms_verdict_result_t pres[S_TASKS][S_PER_TASK];
    static ms_verdict_reeval_t pree[S_TASKS][S_REEVALS];
    static ms_verdict_mark_t pmarks[S_TASKS][S_PER_TASK];
    static ms_verdict_mark_t praw[S_TASKS][S_PER_TASK];
    size_t tperm[S_TASKS], rperm[S_TASKS][S_PER_TASK];
    size_t eperm[S_REEVALS], cperm[2];
    for (int round = 0; round < 100; round++) {
        ms_verdict_task_t ptasks[S_TASKS];
        ms_verdict_task_outcome_t pout[S_TASKS];
        s_shuffle(tperm, S_TASKS);
        for (size_t u = 0; u < S_TASKS; u++) {
            size_t t = tperm[u];
            ptasks[u] = tasks[t];
            s_shuffle(rperm[u], tasks[t].n_results);
            for (size_t i = 0; i < tasks[t].n_results; i++)
                pres[u][i] = res[t][rperm[u][i]];
            s_shuffle(eperm, tasks[t].n_reevals);
            for (size_t k = 0; k < tasks[t].n_reevals; k++) {
                pree[u][k] = ree[t][eperm[k]];
                //  Re-evaluations name their target by record hash,
                //  which the shuffle keeps.
            }
            ptasks[u].results = pres[u];
            ptasks[u].reevals = pree[u];
            ptasks[u].marks = pmarks[u];
            ptasks[u].raw_marks = praw[u];
        }
        s_shuffle(cperm, 2);
        ms_verdict_clear_t pclears[2] = {clears[cperm[0]], clears[cperm[1]]};
        ms_verdict_node_t *nodes = NULL;
        size_t n_nodes = 0;
        assert_int_equal(ms_verdict_evaluate_all(ptasks, S_TASKS, pclears, 2,
                                                 NULL, pout, &nodes, &n_nodes,
                                                 NULL),
                         MS_OK);
        assert_int_equal(n_nodes, n_ref_nodes);
        for (size_t j = 0; j < n_nodes; j++) {
            assert_memory_equal(nodes[j].node_id, ref_nodes[j].node_id,
                                MS_VERDICT_ID_BYTES);
            assert_int_equal(nodes[j].n_counted, ref_nodes[j].n_counted);
            assert_int_equal(nodes[j].n_strikes, ref_nodes[j].n_strikes);
            assert_int_equal(nodes[j].n_forgiven, ref_nodes[j].n_forgiven);
            assert_int_equal(nodes[j].quarantined, ref_nodes[j].quarantined);
        }
        free(nodes);
        for (size_t u = 0; u < S_TASKS; u++) {
            size_t t = tperm[u];
            s_assert_outcome_equal(&pout[u].raw, &ref[t].raw);
            s_assert_outcome_equal(&pout[u].final, &ref[t].final);
            assert_int_equal(pout[u].revision.verdict, ref[t].revision.verdict);
            assert_int_equal(pout[u].revision.revision,
                             ref[t].revision.revision);
            assert_int_equal(pout[u].changed, ref[t].changed);
            for (size_t i = 0; i < tasks[t].n_results; i++) {
                s_assert_mark_equal(&pmarks[u][i], &ref_marks[t][rperm[u][i]]);
                s_assert_mark_equal(&praw[u][i], &ref_raw[t][rperm[u][i]]);
            }
        }
    }
    free(ref_nodes);
}

//  --------------------------------------------------------------------------
//  Names for rows, events and logs.

static void
test_names(void **state)
{
    (void) state;
    assert_string_equal(ms_verdict_state_name(MS_VERDICT_PENDING), "pending");
    assert_string_equal(ms_verdict_state_name(MS_VERDICT_ACCEPTED), "accepted");
    assert_string_equal(ms_verdict_state_name(MS_VERDICT_VERIFIED), "verified");
    assert_string_equal(ms_verdict_state_name(MS_VERDICT_DISPUTED), "disputed");
    assert_string_equal(ms_verdict_state_name(MS_VERDICT_FAILED), "failed");
    assert_string_equal(ms_verdict_state_name((ms_verdict_state_t) 99),
                        "unknown");
    assert_string_equal(ms_verdict_role_name(MS_VERDICT_ROLE_CLASS_DISPUTE),
                        "class_dispute");
    assert_string_equal(ms_verdict_role_name(MS_VERDICT_ROLE_REFUSED_OPERATOR),
                        "refused_operator");
    assert_string_equal(ms_verdict_reeval_role_name(MS_VERDICT_REEVAL_SELF),
                        "self");
    assert_string_equal(ms_verdict_reeval_role_name(MS_VERDICT_REEVAL_FAILED),
                        "failed");
    assert_string_equal(ms_verdict_role_name(MS_VERDICT_ROLE_REFUTED),
                        "refuted");
}

//  --------------------------------------------------------------------------
//  The revision (what the store derives for every task): the changes of
//  the verdict's view over the canonical prefixes of the results, then
//  the final evaluation. replicas 1 in a pool of 3: the first result is
//  accepted (1 change); a second operator that agrees makes it verified
//  with S = {a, b} (2); a third that agrees changes S only (3); the same
//  results given in any order give the same revision; a quarantined
//  producer that leaves S in the final evaluation is one more change.

static void
test_revision_prefixes(void **state)
{
    (void) state;
    ms_verdict_params_t p = s_params(1, 3);
    ms_verdict_result_t r[3] = {s_ok(1, "a", 0.900, 0.30, 1, 1, 1),
                                s_ok(2, "b", 0.901, 0.30, 2, 2, 2),
                                s_ok(3, "c", 0.902, 0.30, 3, 3, 3)};
    uint32_t want[3] = {1, 2, 3};
    for (size_t n = 1; n <= 3; n++) {
        ms_verdict_outcome_t out;
        ms_verdict_mark_t marks[3];
        assert_int_equal(
            ms_verdict_evaluate(&p, r, n, NULL, 0, &out, marks, NULL, NULL),
            MS_OK);
        uint32_t rev = 99;
        assert_int_equal(
            ms_verdict_revision(&p, r, n, NULL, 0, &out, marks, &rev), MS_OK);
        assert_int_equal(rev, want[n - 1]);
    }
    //  Another arrival order: the same revision.
    ms_verdict_result_t back[3] = {r[2], r[0], r[1]};
    ms_verdict_outcome_t out;
    ms_verdict_mark_t marks[3];
    assert_int_equal(
        ms_verdict_evaluate(&p, back, 3, NULL, 0, &out, marks, NULL, NULL),
        MS_OK);
    uint32_t rev = 0;
    assert_int_equal(
        ms_verdict_revision(&p, back, 3, NULL, 0, &out, marks, &rev), MS_OK);
    assert_int_equal(rev, 3);
    //  c quarantined: the final evaluation leaves it out of S.
    back[0].quarantined = true;
    assert_int_equal(
        ms_verdict_evaluate(&p, back, 3, NULL, 0, &out, marks, NULL, NULL),
        MS_OK);
    assert_int_equal(
        ms_verdict_revision(&p, back, 3, NULL, 0, &out, marks, &rev), MS_OK);
    assert_int_equal(rev, 4);
    //  Nothing counted: never left pending.
    ms_verdict_outcome_t none;
    assert_int_equal(
        ms_verdict_evaluate(&p, NULL, 0, NULL, 0, &none, NULL, NULL, NULL),
        MS_OK);
    assert_int_equal(
        ms_verdict_revision(&p, NULL, 0, NULL, 0, &none, NULL, &rev), MS_OK);
    assert_int_equal(rev, 0);
}

//  --------------------------------------------------------------------------
//  The view names the first MS_VERDICT_VIEW_OPERATORS operators of S: a
//  late operator whose name sorts after them changes no view (the same
//  rows), one that sorts before them does.

static void
test_revision_view_operators(void **state)
{
    (void) state;
    enum { N = MS_VERDICT_VIEW_OPERATORS + 2 };
    ms_verdict_params_t p = s_params(1, N + 1);
    ms_verdict_result_t r[N + 1];
    char names[N + 1][8];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "op%02d", i + 10);
        r[i] = s_ok(i + 1, names[i], 0.9, 0.3, i + 1, i + 1, (uint64_t) i + 1);
    }
    ms_verdict_outcome_t out;
    ms_verdict_mark_t marks[N + 1];
    uint32_t before = 0, after = 0;
    assert_int_equal(
        ms_verdict_evaluate(&p, r, N, NULL, 0, &out, marks, NULL, NULL), MS_OK);
    assert_int_equal(
        ms_verdict_revision(&p, r, N, NULL, 0, &out, marks, &before), MS_OK);
    //  "zz" sorts after every name: its arrival is no change of the view.
    r[N] = s_ok(N + 1, "zz", 0.9, 0.3, N + 1, N + 1, (uint64_t) N + 1);
    assert_int_equal(
        ms_verdict_evaluate(&p, r, N + 1, NULL, 0, &out, marks, NULL, NULL),
        MS_OK);
    assert_int_equal(
        ms_verdict_revision(&p, r, N + 1, NULL, 0, &out, marks, &after), MS_OK);
    assert_int_equal(after, before);
    //  "aa" sorts first: the view's first names change.
    r[N].operator_name = "aa";
    assert_int_equal(
        ms_verdict_evaluate(&p, r, N + 1, NULL, 0, &out, marks, NULL, NULL),
        MS_OK);
    assert_int_equal(
        ms_verdict_revision(&p, r, N + 1, NULL, 0, &out, marks, &after), MS_OK);
    assert_int_equal(after, before + 1);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_honest_agree),
        cmocka_unit_test(test_liar_struck_still_verified),
        cmocka_unit_test(test_two_disagree_disputed),
        cmocka_unit_test(test_dispute_slots_capped),
        cmocka_unit_test(test_one_slot_accepted_then_reevaluated),
        cmocka_unit_test(test_reeval_table),
        cmocka_unit_test(test_reeval_refutes_replica),
        cmocka_unit_test(test_haswell_skylakex_verify),
        cmocka_unit_test(test_same_fingerprint_other_digest),
        cmocka_unit_test(test_diverged_versus_ok),
        cmocka_unit_test(test_failed_statuses),
        cmocka_unit_test(test_median_ties_and_even_n),
        cmocka_unit_test(test_one_result_per_operator),
        cmocka_unit_test(test_single_operator_pool),
        cmocka_unit_test(test_regression_uses_loss),
        cmocka_unit_test(test_refused_input),
        cmocka_unit_test(test_quarantine_rule),
        cmocka_unit_test(test_quarantine_in_strata),
        cmocka_unit_test(test_quarantined_flag_excludes),
        cmocka_unit_test(test_evaluate_task_is_the_three),
        cmocka_unit_test(test_clear_lifts_quarantine),
        cmocka_unit_test(test_revisions),
        cmocka_unit_test(test_order_independence),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_revision_prefixes),
        cmocka_unit_test(test_revision_view_operators),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
