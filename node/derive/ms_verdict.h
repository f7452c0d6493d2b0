/*  =========================================================================
    ms_verdict - verdicts of tasks from their replicated results: the
    agreeing set, disputes and extra slots, strikes, stratified
    quarantine, re-evaluation and verdict revisions (pure logic, no I/O)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Implements DESIGN.md "Verification" (the verdict, strike, quarantine
    and revision rules; not commit-then-reveal, sampling or keep_weights,
    which belong to the node). The algorithm, its edge cases and why it
    is built this way are in the prose block at the top of ms_verdict.c;
    docs/VERIFICATION.md has worked examples.

    Everything here is a function of its arguments only: no clock, no
    store, no random numbers, no global state. The same inputs in any
    order give the same outputs (results, re-evaluations, tasks and
    clears may be passed in any order; outputs are indexed like the
    inputs, the node table is sorted by node id). Functions allocate
    scratch memory and free it before they return.

    Input that comes from peers (metrics, operator names, statuses) is
    never trusted: a malformed result is refused with a role that names
    why (MS_VERDICT_ROLE_REFUSED_*) and the evaluation goes on without
    it; only bad parameters (which come from a parsed spec or the
    caller) make a call fail, with MS_ERR_INVALID and a diag.

    Thread rule: every function is reentrant; inputs are only read.
*/
#ifndef MS_VERDICT_H
#define MS_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"
#include "ms_train.h"

#define MS_VERDICT_ID_BYTES 32             // node ids, hashes, digests
#define MS_VERDICT_REPLICAS_MAX 64         // as verify.replicas in a spec
#define MS_VERDICT_TOLERANCE_MAX 1e6       // as the spec's tolerances
#define MS_DEFAULT_ACCURACY_TOLERANCE 0.01 // absolute, DESIGN.md
#define MS_DEFAULT_LOSS_TOLERANCE 0.02     // relative, DESIGN.md
#define MS_DEFAULT_QUARANTINE_STRIKES 3    // K, DESIGN.md
#define MS_DEFAULT_QUARANTINE_PERMILLE 100 // 10% of a node's results

//  The verdict of a task.
typedef enum {
    MS_VERDICT_PENDING,  // fewer operators with counted results than needed
    MS_VERDICT_ACCEPTED, // one slot, one result, not yet re-evaluated
    MS_VERDICT_VERIFIED, // the agreeing set is large enough (status ok
                         // or diverged)
    MS_VERDICT_DISPUTED, // it is not: one more slot is wanted
    MS_VERDICT_FAILED,   // the agreeing set is large enough, status failed
} ms_verdict_state_t;

//  What became of one result in an evaluation.
typedef enum {
    MS_VERDICT_ROLE_AGREES,           // counted, in the agreeing set S
    MS_VERDICT_ROLE_OUTSIDE,          // counted, not in S: out of tolerance
                                      // of the median, or another status
    MS_VERDICT_ROLE_MISMATCH,         // counted, not in S: its fingerprint
                                      // class holds two or more other
                                      // operators agreeing bit for bit
                                      // (status, weights digest) without it
    MS_VERDICT_ROLE_CLASS_DISPUTE,    // counted, not in S: its fingerprint
                                      // class disagrees bit for bit with no
                                      // such majority (no strike)
    MS_VERDICT_ROLE_DUPLICATE,        // not counted: its operator has an
                                      // earlier counted result
    MS_VERDICT_ROLE_EXCLUDED,         // not counted: its node is quarantined
    MS_VERDICT_ROLE_REFUSED_METRIC,   // not counted: status ok with a NaN
                                      // or infinite metric
    MS_VERDICT_ROLE_REFUSED_RANGE,    // not counted: accuracy outside
                                      // [0, 1] or loss < 0
    MS_VERDICT_ROLE_REFUSED_STATUS,   // not counted: unknown status value
    MS_VERDICT_ROLE_REFUSED_OPERATOR, // not counted: empty operator name
    MS_VERDICT_ROLE_REFUTED,          // counted, not in S and not in the
                                      // median: more counted
                                      // re-evaluations disagree with it
                                      // than agree (two or more operators)
} ms_verdict_role_t;

//  What became of one re-evaluation.
typedef enum {
    MS_VERDICT_REEVAL_AGREES,    // within tolerance of its target's metrics
    MS_VERDICT_REEVAL_DISAGREES, // outside tolerance
    MS_VERDICT_REEVAL_NO_TARGET, // target is not a counted result with
                                 // status ok
    MS_VERDICT_REEVAL_SELF,      // verifier is the target's operator
    MS_VERDICT_REEVAL_DUPLICATE, // this operator re-evaluated the target
                                 // earlier
    MS_VERDICT_REEVAL_EXCLUDED,  // verifier node quarantined
    MS_VERDICT_REEVAL_REFUSED_METRIC,   // NaN or infinite metric
    MS_VERDICT_REEVAL_REFUSED_RANGE,    // accuracy outside [0, 1], loss < 0
    MS_VERDICT_REEVAL_REFUSED_OPERATOR, // empty verifier operator name
    MS_VERDICT_REEVAL_FAILED, // counted: the verifier could not recompute
                              // (weights missing or not the published
                              // ones); counts against, never strikes
} ms_verdict_reeval_role_t;

//  Parameters of one task (from its sweep's verify block and the pool).
typedef struct {
    uint32_t replicas;         // verify.replicas, 1..64
    uint32_t n_pool_operators; // operators in the pool, >= 1
    double accuracy_tolerance; // absolute, 0..1e6 (default 0.01)
    double loss_tolerance;     // relative to the loss at the median,
                               // 0..1e6 (default 0.02)
    bool regression;           // accuracy is NaN by design (mse loss):
                               // test loss is the metric of the median
} ms_verdict_params_t;

//  One result of a task, as published. All fields are read only.
typedef struct {
    uint8_t node_id[MS_VERDICT_ID_BYTES]; // producing node
    const char *operator_name;            // its certificate's operator (NUL-
                               // terminated, borrowed; compared bytewise)
    ms_run_status_t status; // ok, diverged or failed
    double test_accuracy;   // fraction; read only when status is ok
    double test_loss;       // read only when status is ok
    uint8_t fingerprint[MS_VERDICT_ID_BYTES];    // platform fingerprint
    uint8_t weights_digest[MS_VERDICT_ID_BYTES]; // H(final weights)
    uint64_t seq; // ordering key of "first": the same value on every node
                  // for the same record (e.g. the record's seq in its
                  // origin's log, or the slot it filled)
    uint8_t record_hash[MS_VERDICT_ID_BYTES]; // ties of seq; target id
                                              // of re-evaluations
    bool quarantined; // its node is quarantined (ms_verdict_evaluate;
                      // ignored by ms_verdict_evaluate_all)
} ms_verdict_result_t;

//  One re-evaluation: a verifier recomputed a result's test metrics from
//  its weights on its own copy of the data.
typedef struct {
    uint8_t target[MS_VERDICT_ID_BYTES];        // record_hash of the result
    uint8_t verifier_node[MS_VERDICT_ID_BYTES]; // node that recomputed
    const char *verifier_operator; // its operator (borrowed, NUL-term.)
    double test_accuracy;          // recomputed (ignored in regression)
    double test_loss;              // recomputed
    uint64_t seq;                  // ordering key, as in a result
    uint8_t record_hash[MS_VERDICT_ID_BYTES]; // ties of seq
    bool quarantined; // verifier node quarantined (as in a result)
    bool failed;      // the verifier could not recompute the metrics
                      // (no weights within its bound, or weights that
                      // are not the published digest): metrics not read
} ms_verdict_reeval_t;

//  What became of one result (one per input result, same index).
typedef struct {
    ms_verdict_role_t role; // see the enum
    bool counted;           // AGREES, OUTSIDE, MISMATCH or CLASS_DISPUTE
    bool agrees;            // in the agreeing set S
    bool strike;            // earns its node a strike
} ms_verdict_mark_t;

//  The verdict of one task and the figures behind it.
typedef struct {
    ms_verdict_state_t verdict;     // see the enum
    ms_run_status_t status;         // status of S (MS_RUN_OK when S is empty)
    uint32_t n_needed;              // min(replicas, n_pool_operators)
    uint32_t n_operators;           // n: operators with a counted result
    uint32_t n_agreeing;            // |S|
    uint32_t n_required;            // max(n_needed, floor(n / 2) + 1)
    uint32_t n_strikes;             // results that earn a strike
    uint32_t n_refused;             // results refused as malformed
    uint32_t n_reevals_agreeing;    // counted re-evaluations that agree
    uint32_t n_reevals_disagreeing; // and that disagree (failed included)
    uint32_t n_refuted;             // counted results refuted by them
    uint32_t slots_wanted;          // counted results from distinct
                                    // operators the task wants now
    bool slots_exhausted;           // disputed, and no further slot may open
                                    // (replicas + 2 or the pool's operators)
    bool class_dispute;             // a fingerprint class disagrees bit for bit
                                    // with no majority
    double median_accuracy;         // m (NaN: no counted ok result, regression)
    double median_loss;             // the loss at m (NaN: no counted ok result)
} ms_verdict_outcome_t;

//  A verdict with its revision: how many times it changed.
typedef struct {
    ms_verdict_state_t verdict; // last verdict (PENDING before any)
    uint32_t revision;          // 0 before any change
} ms_verdict_revision_t;

//  Quarantine rule (DESIGN.md: K = 3, 10%).
typedef struct {
    uint32_t strikes_min;      // K: strikes needed, >= 1 (default 3)
    uint32_t strikes_permille; // and at least this share of the node's
                               // counted results, 0..1000 (default 100)
} ms_verdict_policy_t;

//  An authority item clearing a node's quarantine: it forgives that many
//  of the node's strikes. The count must be a function of the records:
//  the store passes the node's strikes earned by results inside the
//  clear's cut of its log (ms_store_put_clear), never "the strikes held
//  when the clear arrived", which would differ between nodes.
typedef struct {
    uint8_t node_id[MS_VERDICT_ID_BYTES]; // the node cleared
    uint32_t n_forgiven;                  // strikes forgiven
} ms_verdict_clear_t;

//  One task of a batch (ms_verdict_evaluate_all).
typedef struct {
    ms_verdict_params_t params;         // its parameters
    const ms_verdict_result_t *results; // n_results results (borrowed)
    size_t n_results;
    const ms_verdict_reeval_t *reevals; // n_reevals (borrowed; may be
    size_t n_reevals;                   // NULL when 0)
    ms_verdict_revision_t prev;         // verdict and revision held so far
    ms_verdict_mark_t *raw_marks;       // NULL, or n_results marks to fill with
                                        // stratum 1 (every node counted)
    ms_verdict_mark_t *marks;           // NULL, or n_results marks to fill with
                                        // the final stratum
} ms_verdict_task_t;

//  The outcome of one task of a batch.
typedef struct {
    ms_verdict_outcome_t raw;       // stratum 1: no quarantine
    ms_verdict_outcome_t final;     // stratum 3: quarantined nodes out
    ms_verdict_revision_t revision; // prev revised by final.verdict
    bool changed; // final verdict differs from prev: an event to emit
} ms_verdict_task_outcome_t;

//  One node seen in a batch (as a producer or a verifier).
typedef struct {
    uint8_t node_id[MS_VERDICT_ID_BYTES]; // the node
    uint32_t n_counted;                   // its results counted in stratum 1
    uint32_t n_strikes;                   // its strikes in stratum 1
    uint32_t n_forgiven; // largest n_forgiven of its clears (0: none)
    bool quarantined;    // per ms_verdict_quarantined
} ms_verdict_node_t;

//  Fill params with the defaults: replicas 1, one pool operator,
//  tolerances 0.01 and 0.02 (DESIGN.md "Verification"), classification.
void ms_verdict_params_default(ms_verdict_params_t *params);

//  Fill policy with the defaults: K = 3 strikes and 10% (100 per mille)
//  of the node's counted results (DESIGN.md "Verification").
void ms_verdict_policy_default(ms_verdict_policy_t *policy);

//  The slots a task needs: min(replicas, n_pool_operators) (DESIGN.md:
//  "A task needs min(replicas, operators in the pool) slots filled").
//  0 when either is 0.
uint32_t ms_verdict_needed(uint32_t replicas, uint32_t n_pool_operators);

//  The size S must reach: max(needed, floor(n / 2) + 1) for n operators
//  with counted results (DESIGN.md: "`verified` when S holds at least
//  max(needed slots, floor(n/2) + 1) results").
uint32_t ms_verdict_required(uint32_t needed, uint32_t n_operators);

//  True when a node with n_counted counted results and n_strikes strikes,
//  of which n_forgiven were forgiven by the authority, is quarantined:
//  the strikes left reach policy->strikes_min AND are at least
//  policy->strikes_permille / 1000 of n_counted (DESIGN.md: "Quarantine
//  when strikes reach K and a fraction of the node's results (K = 3,
//  10%)"; "the authority can clear a quarantine with a signed item").
//  Integer arithmetic: no rounding at the 10% edge.
bool ms_verdict_quarantined(const ms_verdict_policy_t *policy,
                            uint32_t n_counted, uint32_t n_strikes,
                            uint32_t n_forgiven);

//  Evaluate one task (DESIGN.md "Verification", first and second
//  bullets; "Re-evaluation" for the one-slot case): counted results (one
//  per operator, the first by (seq, record_hash); refused and quarantined
//  ones left out), the lower median m, the agreeing set S with the
//  fingerprint-class rule, the verdict, the slots wanted, the strikes.
//  Results whose `quarantined` is true are excluded (role EXCLUDED), as
//  are re-evaluations by a quarantined verifier.
//
//  results: n_results entries (may be NULL when 0); reevals: n_reevals
//  (may be NULL when 0); both borrowed, in any order. *out is filled.
//  marks: NULL or n_results entries, filled like results.
//  reeval_roles: NULL or n_reevals entries, filled like reevals.
//  Returns MS_OK; MS_ERR_INVALID for bad params (diag names the field:
//  replicas 1..64, n_pool_operators >= 1, tolerances finite 0..1e6);
//  MS_ERR_NOMEM. On error *out says PENDING and marks are unspecified.
//  A NULL operator name is a programmer error (assert); an empty one is
//  refused input.
int ms_verdict_evaluate(const ms_verdict_params_t *params,
                        const ms_verdict_result_t *results, size_t n_results,
                        const ms_verdict_reeval_t *reevals, size_t n_reevals,
                        ms_verdict_outcome_t *out, ms_verdict_mark_t *marks,
                        ms_verdict_reeval_role_t *reeval_roles,
                        ms_diag_t *diag);

//  Evaluate tasks[0..n_tasks) in strata (DESIGN.md: "Verdicts are
//  computed in strata: raw verdicts and strikes without quarantine, then
//  quarantine, then final verdicts without quarantined nodes"):
//    1. every task without quarantine (the inputs' `quarantined` fields
//       are ignored): raw verdicts, counted results and strikes per node;
//    2. quarantine per node by ms_verdict_quarantined with policy
//       (NULL: defaults) and the clears (n_forgiven: the largest of the
//       clears naming that node; clears of unknown nodes are ignored);
//    3. every task again without the quarantined nodes' results and
//       re-evaluations: final verdicts; each task's prev is revised by its
//       final verdict (ms_verdict_revise).
//  outcomes: n_tasks entries, filled like tasks. *nodes gets every node
//  seen (producers and verifiers), sorted by node id, *n_nodes their
//  number; caller owns *nodes: free it with free() (NULL when none).
//  Returns MS_OK; MS_ERR_INVALID (a task's params or the policy: diag
//  names "tasks[I].params.FIELD" or "policy.FIELD"); MS_ERR_NOMEM. On
//  error *nodes is NULL and *n_nodes 0.
int ms_verdict_evaluate_all(const ms_verdict_task_t *tasks, size_t n_tasks,
                            const ms_verdict_clear_t *clears, size_t n_clears,
                            const ms_verdict_policy_t *policy,
                            ms_verdict_task_outcome_t *outcomes,
                            ms_verdict_node_t **nodes, size_t *n_nodes,
                            ms_diag_t *diag);

//  Operators of S a verdict's view names (the first, by name): as many
//  as a stored verdict row describes (MS_STORE_VERDICT_MAX_MARKS).
#define MS_VERDICT_VIEW_OPERATORS 16

//  The revision of a task's verdict (DESIGN.md "Verification": "a verdict
//  may change when late replicas arrive: it carries a revision";
//  docs/VERIFICATION.md "Revision"), as every node computes it: the
//  number of changes of the verdict's view - its state, and once it is no
//  longer pending the operators of S (the first MS_VERDICT_VIEW_OPERATORS
//  names) and the verified values (m and its loss, bit for bit) - when
//  the task's counted RESULTS (N_RESULTS, any order) are taken one by one
//  in their canonical order (seq, record hash) with no node quarantined
//  and the REEVALS of the task, then once more for FINAL, the outcome of
//  the evaluation with quarantine applied (ms_verdict_evaluate over the
//  same RESULTS in the given order, FINAL_MARKS its marks). A pure
//  function of the inputs: two nodes that got the records in different
//  orders get the same revision. The view starts pending, so a task whose
//  verdict never leaves pending has revision 0.
//  Cost: N_RESULTS + 1 evaluations (the store calls it once per derived
//  task). Returns MS_OK with *revision set; MS_ERR_INVALID (bad params,
//  diag as ms_verdict_evaluate's, here not reported), MS_ERR_NOMEM.
int ms_verdict_revision(const ms_verdict_params_t *params,
                        const ms_verdict_result_t *results, size_t n_results,
                        const ms_verdict_reeval_t *reevals, size_t n_reevals,
                        const ms_verdict_outcome_t *final,
                        const ms_verdict_mark_t *final_marks,
                        uint32_t *revision);

//  One task as the store derives it, with one sort of its results: *raw
//  and raw_marks as ms_verdict_evaluate with no node quarantined (the
//  inputs' `quarantined` fields, results' and re-evaluations', ignored:
//  stratum 1), *final and final_marks as ms_verdict_evaluate (those
//  fields applied), and *revision as ms_verdict_revision of that final
//  outcome. raw_marks and final_marks: n_results entries each (NULL only
//  when n_results is 0). Returns MS_OK; MS_ERR_INVALID (bad params, diag
//  as ms_verdict_evaluate's); MS_ERR_NOMEM.
int ms_verdict_evaluate_task(
    const ms_verdict_params_t *params, const ms_verdict_result_t *results,
    size_t n_results, const ms_verdict_reeval_t *reevals, size_t n_reevals,
    ms_verdict_outcome_t *raw, ms_verdict_mark_t *raw_marks,
    ms_verdict_outcome_t *final, ms_verdict_mark_t *final_marks,
    uint32_t *revision, ms_diag_t *diag);

//  Revise *self by the verdict just computed (DESIGN.md: "A verdict may
//  change when late replicas arrive: it carries a revision, and the
//  change is an event"). When next differs from self->verdict, sets it
//  and increments self->revision (saturating at UINT32_MAX) and returns
//  true: the caller emits a verdict event. Otherwise returns false and
//  leaves *self as it was.
bool ms_verdict_revise(ms_verdict_revision_t *self, ms_verdict_state_t next);

//  Static lower-case names, for rows, events and logs: "pending",
//  "accepted", "verified", "disputed", "failed"; roles "agrees",
//  "outside", "mismatch", "class_dispute", "duplicate", "excluded",
//  "refused_metric", "refused_range", "refused_status",
//  "refused_operator"; re-evaluation roles likewise ("agrees",
//  "disagrees", "no_target", "self", ...). "unknown" for other values.
//  Whether a re-evaluation's recomputed test metrics (ACC, LOSS) agree
//  with its target's (REF_ACC, REF_LOSS) under params' tolerances, by the
//  rule ms_verdict_evaluate applies (accuracy ignored for regression).
//  False when a figure is NaN.
bool ms_verdict_reeval_agrees(const ms_verdict_params_t *params, double acc,
                              double loss, double ref_acc, double ref_loss);

const char *ms_verdict_state_name(ms_verdict_state_t verdict);
const char *ms_verdict_role_name(ms_verdict_role_t role);
const char *ms_verdict_reeval_role_name(ms_verdict_reeval_role_t role);

#endif
