/*  =========================================================================
    ms_verdict - verdicts of tasks from their replicated results: the
    agreeing set, disputes and extra slots, strikes, stratified
    quarantine, re-evaluation and verdict revisions (pure logic, no I/O)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    What this implements: DESIGN.md "Verification", the rules that turn
    the results a task collected into a verdict. Every node runs the same
    function over the same records and must reach the same verdict, so
    the code is a pure function with one total order everywhere: no
    clock, no randomness, no dependence on the order of the inputs.

    One task (ms_verdict_evaluate)
    ------------------------------
    1. Refuse malformed results. A result with status ok must carry a
       finite test accuracy in [0, 1] and a finite test loss >= 0 (in a
       regression task, params.regression, only the loss: accuracy is
       NaN by design there). A NaN or infinite metric gives the role
       REFUSED_METRIC, an out-of-range one REFUSED_RANGE, an unknown
       status REFUSED_STATUS, an empty operator name REFUSED_OPERATOR.
       A refused result is not counted, earns no strike (it never made
       a claim we can compare) and does not stop the evaluation: a
       hostile peer must not be able to block a task's verdict by
       publishing garbage. The metrics of diverged and failed results
       are not read (they are NaN in honest ones).
    2. Leave out results of quarantined nodes (EXCLUDED).
    3. One counted result per operator ("operators count, not nodes"):
       among an operator's remaining results the first in the order
       (seq, record_hash, node_id, then the remaining fields) counts,
       the others are DUPLICATE. seq is the caller's ordering key and
       must be the same on every node for the same record. Refusal and
       exclusion come first, so an operator whose first result is
       refused or from a quarantined node is represented by its next.
       n is the number of counted results (= operators).
    4. The median. Among the counted results with status ok, sorted by
       (accuracy, loss, order), the median result is the one at index
       (k - 1) / 2 of k: the LOWER median, so with n even the lower of
       the two middle values is used (a single inflated value cannot
       lift m; half the operators raising their accuracy cannot either).
       m is its accuracy, the "loss at m" its loss. Ties at the median
       are harmless: tied results have the same accuracy, the sort puts
       the lower loss first, and the choice depends on values and the
       order key only. In a regression task the sort key is the loss and
       m is NaN.
    5. Candidates. An ok result is a candidate when |acc - m| <= the
       accuracy tolerance and |loss - loss_m| <= the loss tolerance times
       |loss_m| (each with 1e-9 of slack, so that 0.85 - 0.84 counts as
       0.01). Diverged and failed results are candidates of their
       status (they have no metrics to compare).
    6. Fingerprint classes. Results with the same fingerprint must agree
       bit for bit. Among the ok and diverged candidates, each class is
       split by (status, weights digest). When a class has more than one
       such signature: if one signature is held by two or more operators
       and by more than any other signature, the others are MISMATCH
       ("unless two other operators of that class agree bit for bit");
       otherwise every candidate of the class is CLASS_DISPUTE and the
       outcome says class_dispute. Either way they leave S. We take the
       class out of S rather than declaring the whole task disputed, so
       a liar claiming an honest node's fingerprint can cancel that one
       result but cannot block a task that other operators verify.
       Failed results have no weights and are not split.
    7. The agreeing set S is the largest of the three per-status sets of
       remaining candidates (ok before diverged before failed on a tie;
       a tie can only happen below the majority, so it never decides a
       verdict): "their statuses agree" by construction.
    8. The verdict, with needed = min(replicas, pool operators) and
       required = max(needed, floor(n / 2) + 1):
         n == 0 or n < needed              PENDING (slots wanted: needed)
         n == 1 (so needed == 1):
           failed                          FAILED
           ok, no counted re-evaluation    ACCEPTED
           ok, agreeing > disagreeing      VERIFIED
           ok, otherwise                   DISPUTED
           diverged                        ACCEPTED (no weights to check)
         |S| >= required, S failed         FAILED
         |S| >= required                   VERIFIED (status ok or diverged)
         otherwise                         DISPUTED
       A disputed task wants one more counted result than it has, up to
       the cap min(replicas + 2, pool operators); at the cap it stays
       disputed and says slots_exhausted. A single-operator pool thus
       needs one slot, is ACCEPTED with its result, and can never be
       VERIFIED (no other operator can re-evaluate) nor get a second
       slot: that is the honest answer for such a pool.
    9. Strikes, only when the verdict is VERIFIED with n >= 2 and S holds
       two or more operators (all of them others: S holds one result per
       operator and a struck result is outside S):
         - an ok result, S ok, more than 3 tolerances from m (accuracy
           or loss, as in 5);
         - a result whose fingerprint class holds two or more results of
           S that agree bit for bit, while it does not (other digest or
           other status: diverged-versus-ok inside one class strikes).
       Diverged-versus-ok across fingerprints never strikes (neither
       rule applies), failed results never strike (a node may run out
       of memory), CLASS_DISPUTE never strikes. Why only when VERIFIED:
       with n even, half the operators can put the lower median on their
       side (two liars at 0.85, two honest nodes at 0.90: m = 0.85), so a
       strike from a task without a majority could hit honest nodes. A
       majority S makes the honest value win before anyone is struck.
   10. Re-evaluations (DESIGN.md: "accepted until a re-evaluation by
       another operator agrees"). A re-evaluation names its target by
       record_hash. It counts when the target is a counted ok result,
       the verifier's operator differs from the target's, the verifier
       is not quarantined and its metrics are well formed (same checks
       as 1; a `failed` one, whose verifier could not recompute, has no
       metrics to check); one per (target, verifier operator), the first
       by order. It agrees when the recomputed metrics are within
       tolerance of the published ones (as in 5, with the published
       values in place of m); a failed one disagrees. They are weighed
       before the median, per result: a(r) agreeing, d(r) disagreeing.
       - n == 1: verified when a > d, disputed when d >= a > 0 or d > 0
         (one more slot opens), accepted with none.
       - n >= 2: a result with d > a is `refuted`: still counted (n and
         the majority include it, so it cannot shrink what "majority"
         means) but left out of the median and of S. A lone verifier can
         so cost an honest result its place in S (not a strike): the
         task opens one more slot and the replicas decide; it is why
         refuting needs d > a, so one honest re-evaluation cancels one
         dishonest one.
       - Strike (the rule of 9 with re-evaluations in place of S): a
         result is struck when two or more counted re-evaluations (hence
         two or more other operators) recomputed metrics more than 3
         tolerances from its published ones, and they outnumber those
         that agree. Failed re-evaluations never strike (a producer may
         just be offline), and one verifier alone never strikes. A
         result earns at most one strike, by either rule.
       Re-evaluation proves that the weights give the published metrics;
       it does not prove how they were trained.

    Across tasks (ms_verdict_evaluate_all)
    --------------------------------------
    Strata, so that quarantine never feeds back on itself: stratum 1
    evaluates every task with no one quarantined and sums per node its
    counted results and strikes; stratum 2 quarantines a node when its
    strikes less the strikes forgiven by the authority's clears reach K
    and K/1000 permille of its counted results; stratum 3 evaluates every
    task again without the quarantined nodes' results and
    re-evaluations. Strikes of stratum 3 are reported but never fed back
    (that would need a fixed point, and the order of a fixed-point
    iteration is a place where nodes could disagree). A clear forgives a
    number of strikes (the store counts those of the node's results
    inside the clear's cut) rather than lifting the quarantine for ever: a
    cleared node that keeps lying is quarantined again after K new
    strikes. Clears form a grow-only set; the largest count per node
    wins, so their order does not matter.

    Revisions: ms_verdict_revise bumps a task's revision when its
    verdict changes; the caller emits the change as an event.

    Not done here: commit-then-reveal, choosing what to re-evaluate, and
    keep_weights are the node's business.
*/
#include "ms_verdict.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_SLACK 1e-9 // absolute slack of every tolerance comparison
#define S_SMALL 64   // results (and re-evaluations) evaluated on the stack

//  One input result during an evaluation.
typedef struct {
    const ms_verdict_result_t *r; // the input
    size_t index;                 // its index in the input array
    ms_verdict_role_t role;       // role so far
    bool counted;                 // one per operator
    bool candidate;               // within tolerance (or non-ok status)
    bool in_s;                    // in the agreeing set
    uint32_t n_for;               // counted re-evaluations that agree
    uint32_t n_against;           // that disagree (failed included)
    uint32_t n_against3;          // that are > 3 tolerances off
} s_item_t;

//  One input re-evaluation during an evaluation.
typedef struct {
    const ms_verdict_reeval_t *e; // the input
    const s_item_t *target;       // counted ok result it re-evaluates
    ms_verdict_reeval_role_t role;
} s_reeval_item_t;

//  Decides whether a node is left out (quarantined); flag is the input's
//  own `quarantined` field.
typedef bool (*s_excluded_fn)(void *arg, const uint8_t *node_id, bool flag);

//  --------------------------------------------------------------------------
//  Byte-wise three-way comparison of two doubles (a total order for ties).

static int
s_cmp_bits(double a, double b)
{
    return memcmp(&a, &b, sizeof a);
}

//  --------------------------------------------------------------------------
//  Three-way comparison of two values.

static int
s_cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

//  --------------------------------------------------------------------------
//  The total order of results: (seq, record_hash, node_id, operator,
//  status, metrics, fingerprint, digest). Only identical inputs tie.

static int
s_cmp_order(const ms_verdict_result_t *a, const ms_verdict_result_t *b)
{
    int c = s_cmp_u64(a->seq, b->seq);
    if (!c)
        c = memcmp(a->record_hash, b->record_hash, MS_VERDICT_ID_BYTES);
    if (!c)
        c = memcmp(a->node_id, b->node_id, MS_VERDICT_ID_BYTES);
    if (!c)
        c = strcmp(a->operator_name, b->operator_name);
    if (!c)
        c = s_cmp_u64((uint64_t) a->status, (uint64_t) b->status);
    if (!c)
        c = s_cmp_bits(a->test_accuracy, b->test_accuracy);
    if (!c)
        c = s_cmp_bits(a->test_loss, b->test_loss);
    if (!c)
        c = memcmp(a->fingerprint, b->fingerprint, MS_VERDICT_ID_BYTES);
    if (!c)
        c = memcmp(a->weights_digest, b->weights_digest, MS_VERDICT_ID_BYTES);
    return c;
}

//  --------------------------------------------------------------------------
//  qsort: by operator, then order (to keep the first per operator).

static int
s_cmp_by_operator(const void *pa, const void *pb)
{
    const ms_verdict_result_t *a = *(const ms_verdict_result_t *const *) pa;
    const ms_verdict_result_t *b = *(const ms_verdict_result_t *const *) pb;
    int c = strcmp(a->operator_name, b->operator_name);
    return c ? c : s_cmp_order(a, b);
}

//  --------------------------------------------------------------------------
//  qsort: by accuracy, then loss, then order (the median of a
//  classification task). The metrics sorted here are finite (s_refusal).

static int
s_cmp_by_accuracy(const void *pa, const void *pb)
{
    const ms_verdict_result_t *a = *(const ms_verdict_result_t *const *) pa;
    const ms_verdict_result_t *b = *(const ms_verdict_result_t *const *) pb;
    if (a->test_accuracy != b->test_accuracy)
        return a->test_accuracy < b->test_accuracy ? -1 : 1;
    if (a->test_loss != b->test_loss)
        return a->test_loss < b->test_loss ? -1 : 1;
    return s_cmp_order(a, b);
}

//  --------------------------------------------------------------------------
//  qsort: by loss, then order (the median of a regression task, whose
//  accuracy is NaN by design).

static int
s_cmp_by_loss(const void *pa, const void *pb)
{
    const ms_verdict_result_t *a = *(const ms_verdict_result_t *const *) pa;
    const ms_verdict_result_t *b = *(const ms_verdict_result_t *const *) pb;
    if (a->test_loss != b->test_loss)
        return a->test_loss < b->test_loss ? -1 : 1;
    return s_cmp_order(a, b);
}

//  --------------------------------------------------------------------------
//  qsort: by fingerprint, then signature (status, digest), then order.

static int
s_cmp_by_class(const void *pa, const void *pb)
{
    const ms_verdict_result_t *a = *(const ms_verdict_result_t *const *) pa;
    const ms_verdict_result_t *b = *(const ms_verdict_result_t *const *) pb;
    int c = memcmp(a->fingerprint, b->fingerprint, MS_VERDICT_ID_BYTES);
    if (!c)
        c = s_cmp_u64((uint64_t) a->status, (uint64_t) b->status);
    if (!c)
        c = memcmp(a->weights_digest, b->weights_digest, MS_VERDICT_ID_BYTES);
    return c ? c : s_cmp_order(a, b);
}

//  --------------------------------------------------------------------------
//  True when a and b have the same (status, weights digest).

static bool
s_same_bits(const ms_verdict_result_t *a, const ms_verdict_result_t *b)
{
    return a->status == b->status &&
           memcmp(a->weights_digest, b->weights_digest, MS_VERDICT_ID_BYTES) ==
               0;
}

//  --------------------------------------------------------------------------
//  The total order of re-evaluations: (target, verifier operator, seq,
//  record_hash, verifier node, metrics).

static int
s_cmp_reeval(const void *pa, const void *pb)
{
    const ms_verdict_reeval_t *a = ((const s_reeval_item_t *) pa)->e;
    const ms_verdict_reeval_t *b = ((const s_reeval_item_t *) pb)->e;
    int c = memcmp(a->target, b->target, MS_VERDICT_ID_BYTES);
    if (!c)
        c = strcmp(a->verifier_operator, b->verifier_operator);
    if (!c)
        c = s_cmp_u64(a->seq, b->seq);
    if (!c)
        c = memcmp(a->record_hash, b->record_hash, MS_VERDICT_ID_BYTES);
    if (!c)
        c = memcmp(a->verifier_node, b->verifier_node, MS_VERDICT_ID_BYTES);
    if (!c)
        c = s_cmp_bits(a->test_accuracy, b->test_accuracy);
    if (!c)
        c = s_cmp_bits(a->test_loss, b->test_loss);
    return c;
}

//  --------------------------------------------------------------------------
//  Why metrics (accuracy, loss) are not acceptable, or -1 when they are:
//  0 = NaN or infinite, 1 = out of range.

static int
s_bad_metrics(double accuracy, double loss, bool regression)
{
    if (!isfinite(loss) || (!regression && !isfinite(accuracy)))
        return 0;
    if (loss < 0 || (!regression && (accuracy < 0 || accuracy > 1)))
        return 1;
    return -1;
}

//  --------------------------------------------------------------------------
//  The refusal role of a result, or AGREES when it is well formed.

static ms_verdict_role_t
s_refusal(const ms_verdict_result_t *r, bool regression)
{
    assert(r->operator_name);
    if (r->operator_name[0] == '\0')
        return MS_VERDICT_ROLE_REFUSED_OPERATOR;
    if (r->status != MS_RUN_OK && r->status != MS_RUN_DIVERGED &&
        r->status != MS_RUN_FAILED)
        return MS_VERDICT_ROLE_REFUSED_STATUS;
    if (r->status != MS_RUN_OK)
        return MS_VERDICT_ROLE_AGREES;
    int bad = s_bad_metrics(r->test_accuracy, r->test_loss, regression);
    return bad == 0   ? MS_VERDICT_ROLE_REFUSED_METRIC
           : bad == 1 ? MS_VERDICT_ROLE_REFUSED_RANGE
                      : MS_VERDICT_ROLE_AGREES;
}

//  --------------------------------------------------------------------------
//  True when (acc, loss) lies within `times` tolerances of (ref_acc,
//  ref_loss): accuracy absolute (skipped in regression), loss relative.

static bool
s_within(const ms_verdict_params_t *p, double acc, double loss, double ref_acc,
         double ref_loss, double times)
{
    if (!p->regression &&
        !(fabs(acc - ref_acc) <= times * p->accuracy_tolerance + S_SLACK))
        return false;
    return fabs(loss - ref_loss) <=
           times * p->loss_tolerance * fabs(ref_loss) + S_SLACK;
}

//  --------------------------------------------------------------------------
//  A re-evaluation against its target, at 1x the tolerances.

bool
ms_verdict_reeval_agrees(const ms_verdict_params_t *params, double acc,
                         double loss, double ref_acc, double ref_loss)
{
    return s_within(params, acc, loss, ref_acc, ref_loss, 1.0);
}

//  --------------------------------------------------------------------------
//  Check params; MS_OK or MS_ERR_INVALID with diag at PREFIX.FIELD.

static int
s_check_params(const ms_verdict_params_t *p, const char *prefix,
               ms_diag_t *diag)
{
    char where[96];
    const char *field = NULL;
    const char *why = NULL;
    if (p->replicas < 1 || p->replicas > MS_VERDICT_REPLICAS_MAX) {
        field = "replicas";
        why = "must be 1..64";
    } else if (p->n_pool_operators < 1) {
        field = "n_pool_operators";
        why = "must be >= 1";
    } else if (!(p->accuracy_tolerance >= 0 &&
                 p->accuracy_tolerance <= MS_VERDICT_TOLERANCE_MAX)) {
        field = "accuracy_tolerance";
        why = "must be a number in 0..1e6";
    } else if (!(p->loss_tolerance >= 0 &&
                 p->loss_tolerance <= MS_VERDICT_TOLERANCE_MAX)) {
        field = "loss_tolerance";
        why = "must be a number in 0..1e6";
    }
    if (!field)
        return MS_OK;
    snprintf(where, sizeof where, "%s%s%s", prefix, *prefix ? "." : "", field);
    return ms_diag_set(diag, where, "%s", why);
}

//  --------------------------------------------------------------------------
//  The three orders an evaluation sorts by (operator, metric, class),
//  computed once over an array of results and then filtered: the items of
//  any subset of that array, taken in these orders, are the subset sorted
//  (each comparator is a total order: only identical inputs tie). The
//  revision evaluates every canonical prefix of a task's results; sorting
//  each prefix anew made a derivation O(n^2 log n) in comparisons, which
//  held a catch-up of many replicas per task for tens of seconds. by_metric
//  holds only the ok results s_refusal accepts (their metrics are finite,
//  so the comparator is a total order on them): the median reads no other.

typedef struct {
    size_t n;                 // results the orders cover
    size_t n_metric;          // entries of by_metric
    size_t *by_operator;      // indices by s_cmp_by_operator
    size_t *by_metric;        // by s_cmp_by_accuracy (or s_cmp_by_loss)
    size_t *by_class;         // by s_cmp_by_class
    size_t small[3][S_SMALL]; // storage for n <= S_SMALL
} s_orders_t;

//  Sort the indices of RES (n results) into IDX by CMP (a comparator on
//  pointers to results); ptrs is scratch of n entries.

static void
s_order_by(const ms_verdict_result_t *res, const size_t *from, size_t n,
           int (*cmp)(const void *, const void *),
           const ms_verdict_result_t **ptrs, size_t *idx)
{
    for (size_t i = 0; i < n; i++)
        ptrs[i] = &res[from ? from[i] : i];
    qsort(ptrs, n, sizeof *ptrs, cmp);
    for (size_t i = 0; i < n; i++)
        idx[i] = (size_t) (ptrs[i] - res);
}

//  Room for the orders of n results (on the stack part when small). MS_OK
//  or MS_ERR_NOMEM; s_orders_free releases them either way.

static int
s_orders_alloc(s_orders_t *o, size_t n)
{
    memset(o, 0, offsetof(s_orders_t, small));
    o->n = n;
    if (n <= S_SMALL) {
        o->by_operator = o->small[0];
        o->by_metric = o->small[1];
        o->by_class = o->small[2];
        return MS_OK;
    }
    o->by_operator = calloc(n, sizeof *o->by_operator);
    o->by_metric = calloc(n, sizeof *o->by_metric);
    o->by_class = calloc(n, sizeof *o->by_class);
    return o->by_operator && o->by_metric && o->by_class ? MS_OK : MS_ERR_NOMEM;
}

//  Compute the orders of RES (n results) under params P. MS_OK or
//  MS_ERR_NOMEM; s_orders_free releases them either way.

static int
s_orders_make(s_orders_t *o, const ms_verdict_params_t *p,
              const ms_verdict_result_t *res, size_t n)
{
    const ms_verdict_result_t *ptrs_s[S_SMALL], **ptrs = ptrs_s;
    int rc = s_orders_alloc(o, n);
    if (rc == MS_OK && n > S_SMALL && !(ptrs = calloc(n, sizeof *ptrs)))
        rc = MS_ERR_NOMEM;
    if (rc != MS_OK)
        return rc;
    s_order_by(res, NULL, n, s_cmp_by_operator, ptrs, o->by_operator);
    s_order_by(res, NULL, n, s_cmp_by_class, ptrs, o->by_class);
    for (size_t i = 0; i < n; i++)
        if (res[i].status == MS_RUN_OK &&
            s_refusal(&res[i], p->regression) == MS_VERDICT_ROLE_AGREES)
            o->by_metric[o->n_metric++] = i;
    s_order_by(res, o->by_metric, o->n_metric,
               p->regression ? s_cmp_by_loss : s_cmp_by_accuracy, ptrs,
               o->by_metric);
    if (n > S_SMALL)
        free(ptrs);
    return MS_OK;
}

//  The orders SRC of an array, for the same results permuted: entry i of
//  the old array is entry to[i] of the new one. MS_OK or MS_ERR_NOMEM;
//  s_orders_free releases *dst either way.

static int
s_orders_permute(s_orders_t *dst, const s_orders_t *src, const size_t *to)
{
    int rc = s_orders_alloc(dst, src->n);
    if (rc != MS_OK)
        return rc;
    dst->n_metric = src->n_metric;
    for (size_t k = 0; k < src->n; k++) {
        dst->by_operator[k] = to[src->by_operator[k]];
        dst->by_class[k] = to[src->by_class[k]];
    }
    for (size_t k = 0; k < src->n_metric; k++)
        dst->by_metric[k] = to[src->by_metric[k]];
    return MS_OK;
}

//  Free what s_orders_make allocated.

static void
s_orders_free(s_orders_t *o)
{
    if (o->n > S_SMALL) {
        free(o->by_operator);
        free(o->by_metric);
        free(o->by_class);
    }
}

//  --------------------------------------------------------------------------
//  The evaluation of one task; excluded(arg, node) says whether a node is
//  quarantined. marks and rroles are non-NULL (n_results, n_reevals).
//  ord: the orders (s_orders_make) of an array whose first n_results
//  entries are results (a canonical prefix, for the revision).

static int
s_evaluate(const ms_verdict_params_t *p, const ms_verdict_result_t *results,
           size_t n_results, const ms_verdict_reeval_t *reevals,
           size_t n_reevals, s_excluded_fn excluded, void *arg,
           const s_orders_t *ord, ms_verdict_outcome_t *out,
           ms_verdict_mark_t *marks, ms_verdict_reeval_role_t *rroles)
{
    assert(ord->n >= n_results);
    memset(out, 0, sizeof *out);
    out->verdict = MS_VERDICT_PENDING;
    out->status = MS_RUN_OK;
    out->median_accuracy = NAN;
    out->median_loss = NAN;
    out->n_needed = ms_verdict_needed(p->replicas, p->n_pool_operators);
    out->slots_wanted = out->n_needed;

    //  Work arrays: on the stack for the common sizes (the store evaluates
    //  every canonical prefix of a task's results, so this runs n + 2
    //  times per derivation), else on the heap.
    int rc = MS_ERR_NOMEM;
    s_item_t items_s[S_SMALL], *order_s[S_SMALL], *view_s[S_SMALL];
    s_reeval_item_t ritems_s[S_SMALL], rsorted_s[S_SMALL];
    bool small_r = n_results <= S_SMALL, small_e = n_reevals <= S_SMALL;
    s_item_t *items = small_r ? items_s : calloc(n_results, sizeof *items);
    s_item_t **order = small_r ? order_s : calloc(n_results, sizeof *order);
    s_item_t **view = small_r ? view_s : calloc(n_results, sizeof *view);
    s_reeval_item_t *ritems =
        small_e ? ritems_s : calloc(n_reevals, sizeof *ritems);
    s_reeval_item_t *rsorted =
        small_e ? rsorted_s : calloc(n_reevals, sizeof *rsorted);
    if (!items || !order || !view || !ritems || !rsorted)
        goto cleanup;
    if (small_r)
        memset(items, 0, n_results * sizeof *items);
    if (small_e)
        memset(ritems, 0, n_reevals * sizeof *ritems);
    memset(marks, 0, n_results * sizeof *marks);

    //  1-2. Refuse malformed results, leave out quarantined nodes.
    for (size_t i = 0; i < n_results; i++) {
        s_item_t *it = &items[i];
        it->r = &results[i];
        it->index = i;
        it->role = s_refusal(it->r, p->regression);
        if (it->role != MS_VERDICT_ROLE_AGREES) {
            out->n_refused++;
            continue;
        }
        if (excluded(arg, it->r->node_id, it->r->quarantined)) {
            it->role = MS_VERDICT_ROLE_EXCLUDED;
            continue;
        }
        it->role = MS_VERDICT_ROLE_OUTSIDE;
    }

    //  3. One counted result per operator: the first in order (the live
    //  results by operator, then order).
    size_t n_live = 0;
    for (size_t k = 0; k < ord->n; k++) {
        size_t i = ord->by_operator[k];
        if (i < n_results && items[i].role == MS_VERDICT_ROLE_OUTSIDE)
            order[n_live++] = &items[i];
    }
    size_t n = 0;
    for (size_t j = 0; j < n_live; j++) {
        if (j > 0 && strcmp(order[j]->r->operator_name,
                            order[j - 1]->r->operator_name) == 0) {
            order[j]->role = MS_VERDICT_ROLE_DUPLICATE;
            continue;
        }
        order[j]->counted = true;
        order[n++] = order[j];
    }
    out->n_operators = (uint32_t) n;

    //  10. Re-evaluations: refusal, target lookup, one per operator.
    for (size_t k = 0; k < n_reevals; k++) {
        s_reeval_item_t *ri = &ritems[k];
        ri->e = &reevals[k];
        assert(ri->e->verifier_operator);
        ri->role = MS_VERDICT_REEVAL_NO_TARGET;
        int bad = ri->e->failed
                      ? -1
                      : s_bad_metrics(ri->e->test_accuracy, ri->e->test_loss,
                                      p->regression);
        if (ri->e->verifier_operator[0] == '\0')
            ri->role = MS_VERDICT_REEVAL_REFUSED_OPERATOR;
        else if (bad == 0)
            ri->role = MS_VERDICT_REEVAL_REFUSED_METRIC;
        else if (bad == 1)
            ri->role = MS_VERDICT_REEVAL_REFUSED_RANGE;
        else if (excluded(arg, ri->e->verifier_node, ri->e->quarantined))
            ri->role = MS_VERDICT_REEVAL_EXCLUDED;
        if (ri->role != MS_VERDICT_REEVAL_NO_TARGET)
            continue;
        //  The target: the first counted ok result (in order) with that
        //  record hash (record hashes are unique in practice; the order
        //  keeps a forged collision deterministic).
        const s_item_t *target = NULL;
        for (size_t j = 0; j < n; j++) {
            const s_item_t *it = order[j];
            if (it->r->status == MS_RUN_OK &&
                memcmp(it->r->record_hash, ri->e->target,
                       MS_VERDICT_ID_BYTES) == 0 &&
                (!target || s_cmp_order(it->r, target->r) < 0))
                target = it;
        }
        if (!target)
            continue;
        ri->target = target;
        ri->role = strcmp(target->r->operator_name,
                          ri->e->verifier_operator) == 0
                       ? MS_VERDICT_REEVAL_SELF
                       : MS_VERDICT_REEVAL_AGREES; // decided below
    }
    //  Sort a copy to find the first per (target, verifier operator).
    size_t n_rv = 0;
    for (size_t k = 0; k < n_reevals; k++)
        if (ritems[k].role == MS_VERDICT_REEVAL_AGREES)
            rsorted[n_rv++] = ritems[k];
    if (n_rv > 0)
        qsort(rsorted, n_rv, sizeof *rsorted, s_cmp_reeval);
    for (size_t k = 0; k < n_rv; k++) {
        s_reeval_item_t *ri = &ritems[rsorted[k].e - reevals];
        s_item_t *tgt = (s_item_t *) ri->target;
        bool dup = k > 0 &&
                   memcmp(rsorted[k].e->target, rsorted[k - 1].e->target,
                          MS_VERDICT_ID_BYTES) == 0 &&
                   strcmp(rsorted[k].e->verifier_operator,
                          rsorted[k - 1].e->verifier_operator) == 0;
        if (dup) {
            ri->role = MS_VERDICT_REEVAL_DUPLICATE;
            continue;
        }
        const ms_verdict_result_t *t = tgt->r;
        bool agrees = !ri->e->failed &&
                      s_within(p, ri->e->test_accuracy, ri->e->test_loss,
                               t->test_accuracy, t->test_loss, 1.0);
        ri->role = agrees          ? MS_VERDICT_REEVAL_AGREES
                   : ri->e->failed ? MS_VERDICT_REEVAL_FAILED
                                   : MS_VERDICT_REEVAL_DISAGREES;
        if (agrees) {
            out->n_reevals_agreeing++;
            tgt->n_for++;
        } else {
            out->n_reevals_disagreeing++;
            tgt->n_against++;
            if (!ri->e->failed &&
                !s_within(p, ri->e->test_accuracy, ri->e->test_loss,
                          t->test_accuracy, t->test_loss, 3.0))
                tgt->n_against3++;
        }
    }
    //  With two or more operators, a result more re-evaluations disagree
    //  with than agree leaves the median and S (see 10).
    for (size_t j = 0; n >= 2 && j < n; j++)
        if (order[j]->n_against > order[j]->n_for) {
            order[j]->role = MS_VERDICT_ROLE_REFUTED;
            out->n_refuted++;
        }

    //  4. The lower median of the counted ok results (not refuted), by
    //  the metric.
    size_t n_ok = 0;
    for (size_t k = 0; k < ord->n_metric; k++) {
        size_t i = ord->by_metric[k];
        if (i < n_results && items[i].counted &&
            items[i].r->status == MS_RUN_OK &&
            items[i].role != MS_VERDICT_ROLE_REFUTED)
            view[n_ok++] = &items[i];
    }
    double m = NAN, loss_m = NAN;
    if (n_ok > 0) {
        const ms_verdict_result_t *med = view[(n_ok - 1) / 2]->r;
        m = p->regression ? NAN : med->test_accuracy;
        loss_m = med->test_loss;
    }
    out->median_accuracy = m;
    out->median_loss = loss_m;

    //  5. Candidates.
    for (size_t j = 0; j < n; j++) {
        const ms_verdict_result_t *r = order[j]->r;
        order[j]->candidate =
            order[j]->role != MS_VERDICT_ROLE_REFUTED &&
            (r->status != MS_RUN_OK ||
             s_within(p, r->test_accuracy, r->test_loss, m, loss_m, 1.0));
    }

    //  6. Fingerprint classes among ok and diverged candidates (by
    //  class).
    size_t n_cls = 0;
    for (size_t k = 0; k < ord->n; k++) {
        size_t i = ord->by_class[k];
        if (i < n_results && items[i].candidate &&
            items[i].r->status != MS_RUN_FAILED)
            view[n_cls++] = &items[i];
    }
    for (size_t lo = 0; lo < n_cls;) {
        size_t hi = lo + 1;
        while (hi < n_cls &&
               memcmp(view[hi]->r->fingerprint, view[lo]->r->fingerprint,
                      MS_VERDICT_ID_BYTES) == 0)
            hi++;
        //  [lo, hi) is one class, sorted by signature: find the runs.
        size_t best = lo, best_n = 0, n_runs = 0;
        bool best_unique = false;
        for (size_t a = lo; a < hi;) {
            size_t b = a + 1;
            while (b < hi && s_same_bits(view[a]->r, view[b]->r))
                b++;
            n_runs++;
            if (b - a > best_n) {
                best = a;
                best_n = b - a;
                best_unique = true;
            } else if (b - a == best_n)
                best_unique = false;
            a = b;
        }
        if (n_runs > 1) {
            bool majority = best_unique && best_n >= 2;
            if (!majority)
                out->class_dispute = true;
            for (size_t k = lo; k < hi; k++) {
                if (majority && s_same_bits(view[k]->r, view[best]->r))
                    continue;
                view[k]->candidate = false;
                view[k]->role = majority ? MS_VERDICT_ROLE_MISMATCH
                                         : MS_VERDICT_ROLE_CLASS_DISPUTE;
            }
        }
        lo = hi;
    }

    //  7. S: the largest per-status set of remaining candidates.
    uint32_t size[3] = {0, 0, 0}; // ok, diverged, failed
    for (size_t j = 0; j < n; j++)
        if (order[j]->candidate)
            size[order[j]->r->status]++;
    ms_run_status_t s_status = MS_RUN_OK;
    if (size[MS_RUN_DIVERGED] > size[s_status])
        s_status = MS_RUN_DIVERGED;
    if (size[MS_RUN_FAILED] > size[s_status])
        s_status = MS_RUN_FAILED;
    for (size_t j = 0; j < n; j++)
        if (order[j]->candidate && order[j]->r->status == s_status) {
            order[j]->in_s = true;
            order[j]->role = MS_VERDICT_ROLE_AGREES;
        }
    out->status = s_status;
    out->n_agreeing = size[s_status];
    out->n_required = ms_verdict_required(out->n_needed, (uint32_t) n);

    //  8. The verdict and the slots wanted.
    uint32_t cap = p->replicas + 2;
    if (cap > p->n_pool_operators)
        cap = p->n_pool_operators;
    if (cap < out->n_needed)
        cap = out->n_needed;
    if (n == 0 || n < out->n_needed)
        out->verdict = MS_VERDICT_PENDING;
    else if (n == 1) {
        ms_run_status_t st = order[0]->r->status;
        if (st == MS_RUN_FAILED)
            out->verdict = MS_VERDICT_FAILED;
        else if (st == MS_RUN_DIVERGED ||
                 out->n_reevals_agreeing + out->n_reevals_disagreeing == 0)
            out->verdict = MS_VERDICT_ACCEPTED;
        else if (out->n_reevals_agreeing > out->n_reevals_disagreeing)
            out->verdict = MS_VERDICT_VERIFIED;
        else
            out->verdict = MS_VERDICT_DISPUTED;
    } else if (out->n_agreeing >= out->n_required)
        out->verdict =
            s_status == MS_RUN_FAILED ? MS_VERDICT_FAILED : MS_VERDICT_VERIFIED;
    else
        out->verdict = MS_VERDICT_DISPUTED;
    if (out->verdict == MS_VERDICT_DISPUTED) {
        uint32_t want = (uint32_t) n + 1;
        out->slots_exhausted = want > cap;
        out->slots_wanted = want > cap ? cap : want;
    } else if (out->verdict != MS_VERDICT_PENDING && n > out->n_needed)
        out->slots_wanted = (uint32_t) n < cap ? (uint32_t) n : cap;

    //  9. Strikes: verified by two or more operators only.
    if (out->verdict == MS_VERDICT_VERIFIED && n >= 2 && out->n_agreeing >= 2) {
        for (size_t j = 0; j < n; j++) {
            s_item_t *it = order[j];
            const ms_verdict_result_t *r = it->r;
            if (it->in_s || r->status == MS_RUN_FAILED ||
                it->role == MS_VERDICT_ROLE_CLASS_DISPUTE)
                continue;
            bool strike =
                s_status == MS_RUN_OK && r->status == MS_RUN_OK &&
                !s_within(p, r->test_accuracy, r->test_loss, m, loss_m, 3.0);
            //  Bit-for-bit pair of S in its class that it does not match.
            size_t n_class = 0;
            const ms_verdict_result_t *peer = NULL;
            for (size_t k = 0; k < n && !strike; k++) {
                const ms_verdict_result_t *q = order[k]->r;
                if (!order[k]->in_s || memcmp(q->fingerprint, r->fingerprint,
                                              MS_VERDICT_ID_BYTES) != 0)
                    continue;
                if (!peer || s_same_bits(peer, q)) {
                    peer = q;
                    n_class++;
                }
            }
            if (n_class >= 2 && !s_same_bits(peer, r))
                strike = true;
            if (strike) {
                marks[it->index].strike = true;
                out->n_strikes++;
            }
        }
    }
    //  Strikes by re-evaluation (see 10): any verdict, any n.
    for (size_t j = 0; j < n; j++) {
        const s_item_t *it = order[j];
        if (marks[it->index].strike || it->n_against3 < 2 ||
            it->n_against3 <= it->n_for)
            continue;
        marks[it->index].strike = true;
        out->n_strikes++;
    }

    //  Marks, in input order.
    for (size_t i = 0; i < n_results; i++) {
        marks[i].role = items[i].role;
        marks[i].counted = items[i].counted;
        marks[i].agrees = items[i].in_s;
    }
    for (size_t k = 0; k < n_reevals; k++)
        rroles[k] = ritems[k].role;
    rc = MS_OK;

cleanup:
    if (!small_r) {
        free(items);
        free(order);
        free(view);
    }
    if (!small_e) {
        free(ritems);
        free(rsorted);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  s_evaluate over all n_results results, with their orders made here.

static int
s_evaluate_all_of(const ms_verdict_params_t *p,
                  const ms_verdict_result_t *results, size_t n_results,
                  const ms_verdict_reeval_t *reevals, size_t n_reevals,
                  s_excluded_fn excluded, void *arg, ms_verdict_outcome_t *out,
                  ms_verdict_mark_t *marks, ms_verdict_reeval_role_t *rroles)
{
    s_orders_t ord;
    int rc = s_orders_make(&ord, p, results, n_results);
    if (rc == MS_OK)
        rc = s_evaluate(p, results, n_results, reevals, n_reevals, excluded,
                        arg, &ord, out, marks, rroles);
    s_orders_free(&ord);
    return rc;
}

//  --------------------------------------------------------------------------
//  Nothing is quarantined (ms_verdict_evaluate_all, stratum 1).

static bool
s_excluded_none(void *arg, const uint8_t *node_id, bool flag)
{
    (void) arg;
    (void) node_id;
    (void) flag;
    return false;
}

//  --------------------------------------------------------------------------
//  The input's own `quarantined` flag (ms_verdict_evaluate).

static bool
s_excluded_flag(void *arg, const uint8_t *node_id, bool flag)
{
    (void) arg;
    (void) node_id;
    return flag;
}

//  --------------------------------------------------------------------------
//  Fill params with the defaults.

void
ms_verdict_params_default(ms_verdict_params_t *params)
{
    assert(params);
    memset(params, 0, sizeof *params);
    params->replicas = 1;
    params->n_pool_operators = 1;
    params->accuracy_tolerance = MS_DEFAULT_ACCURACY_TOLERANCE;
    params->loss_tolerance = MS_DEFAULT_LOSS_TOLERANCE;
    params->regression = false;
}

//  --------------------------------------------------------------------------
//  Fill policy with the defaults.

void
ms_verdict_policy_default(ms_verdict_policy_t *policy)
{
    assert(policy);
    policy->strikes_min = MS_DEFAULT_QUARANTINE_STRIKES;
    policy->strikes_permille = MS_DEFAULT_QUARANTINE_PERMILLE;
}

//  --------------------------------------------------------------------------
//  min(replicas, operators in the pool).

uint32_t
ms_verdict_needed(uint32_t replicas, uint32_t n_pool_operators)
{
    return replicas < n_pool_operators ? replicas : n_pool_operators;
}

//  --------------------------------------------------------------------------
//  max(needed, floor(n / 2) + 1).

uint32_t
ms_verdict_required(uint32_t needed, uint32_t n_operators)
{
    uint32_t majority = n_operators / 2 + 1;
    return needed > majority ? needed : majority;
}

//  --------------------------------------------------------------------------
//  The quarantine rule.

bool
ms_verdict_quarantined(const ms_verdict_policy_t *policy, uint32_t n_counted,
                       uint32_t n_strikes, uint32_t n_forgiven)
{
    assert(policy);
    uint64_t left = n_strikes > n_forgiven ? n_strikes - n_forgiven : 0;
    if (left == 0 || left < policy->strikes_min)
        return false;
    return left * 1000 >= (uint64_t) policy->strikes_permille * n_counted;
}

//  --------------------------------------------------------------------------
//  Evaluate one task.

int
ms_verdict_evaluate(const ms_verdict_params_t *params,
                    const ms_verdict_result_t *results, size_t n_results,
                    const ms_verdict_reeval_t *reevals, size_t n_reevals,
                    ms_verdict_outcome_t *out, ms_verdict_mark_t *marks,
                    ms_verdict_reeval_role_t *reeval_roles, ms_diag_t *diag)
{
    assert(params && out);
    assert(results || n_results == 0);
    assert(reevals || n_reevals == 0);
    memset(out, 0, sizeof *out);
    out->verdict = MS_VERDICT_PENDING;
    out->median_accuracy = NAN;
    out->median_loss = NAN;
    int rc = s_check_params(params, "", diag);
    if (rc != MS_OK)
        return rc;
    ms_verdict_mark_t *own_marks = NULL, marks_s[S_SMALL];
    ms_verdict_reeval_role_t *own_roles = NULL, roles_s[S_SMALL];
    if (!marks)
        marks = n_results <= S_SMALL
                    ? marks_s
                    : (own_marks = calloc(n_results, sizeof *own_marks));
    if (!reeval_roles)
        reeval_roles = n_reevals <= S_SMALL
                           ? roles_s
                           : (own_roles = calloc(n_reevals, sizeof *own_roles));
    rc = MS_ERR_NOMEM;
    if (marks && reeval_roles) {
        rc = s_evaluate_all_of(params, results, n_results, reevals, n_reevals,
                               s_excluded_flag, NULL, out, marks, reeval_roles);
    }
    free(own_marks);
    free(own_roles);
    return rc;
}

/*  --------------------------------------------------------------------------
    The revision (ms_verdict_revision). A view is what a user sees of a
    verdict and what the revision counts the changes of. Its operators
    are a set of ranks: rank r stands for the operator whose name is the
    r-th smallest among the task's results (ranked once per call), and the
    view keeps the MS_VERDICT_VIEW_OPERATORS smallest ranks of S - the
    same equality as comparing the comma-joined first names, without
    building a text per prefix (which took a third of a store
    derivation's time when the store did it).
*/

typedef struct {
    ms_verdict_state_t verdict;              // the state
    uint32_t n_ops;                          // ranks in ops
    uint32_t ops[MS_VERDICT_VIEW_OPERATORS]; // smallest ranks of S, sorted
    uint64_t accuracy_bits;                  // m, bit for bit (one NaN)
    uint64_t loss_bits;                      // its loss
} s_view_t;

//  Rank the operators of the results ORD covers into RANKS (by index):
//  equal names get equal ranks, ranks follow strcmp order (by_operator).

static void
s_operator_ranks(const ms_verdict_result_t *res, const s_orders_t *ord,
                 uint32_t *ranks)
{
    uint32_t r = 0;
    for (size_t k = 0; k < ord->n; k++) {
        size_t i = ord->by_operator[k];
        if (k > 0 && strcmp(res[i].operator_name,
                            res[ord->by_operator[k - 1]].operator_name) != 0)
            r++;
        ranks[i] = r;
    }
}

//  The view of outcome O whose marks over n results are MARKS (RANKS
//  their operators' ranks).

static void
s_view_of(s_view_t *view, const ms_verdict_outcome_t *o,
          const ms_verdict_mark_t *marks, const uint32_t *ranks, size_t n)
{
    memset(view, 0, sizeof *view);
    view->verdict = o->verdict;
    if (o->verdict == MS_VERDICT_PENDING)
        return; // nothing decided yet: the state alone
    for (size_t i = 0; i < n; i++) {
        if (!marks[i].agrees)
            continue;
        //  insert ranks[i] into the sorted, unique, capped ops
        uint32_t r = ranks[i];
        size_t at = 0;
        while (at < view->n_ops && view->ops[at] < r)
            at++;
        if (at < view->n_ops && view->ops[at] == r)
            continue;
        if (at == MS_VERDICT_VIEW_OPERATORS)
            continue;
        size_t last = view->n_ops < MS_VERDICT_VIEW_OPERATORS
                          ? view->n_ops
                          : MS_VERDICT_VIEW_OPERATORS - 1;
        memmove(view->ops + at + 1, view->ops + at,
                (last - at) * sizeof view->ops[0]);
        view->ops[at] = r;
        if (view->n_ops < MS_VERDICT_VIEW_OPERATORS)
            view->n_ops++;
    }
    double m = o->median_accuracy, l = o->median_loss;
    if (isnan(m))
        m = NAN; // one NaN pattern
    if (isnan(l))
        l = NAN;
    memcpy(&view->accuracy_bits, &m, sizeof m);
    memcpy(&view->loss_bits, &l, sizeof l);
}

//  One step: *count grows by one when NEXT differs from *SEEN, which
//  becomes NEXT.

static void
s_view_step(s_view_t *seen, const s_view_t *next, uint32_t *count)
{
    if (seen->verdict == next->verdict &&
        seen->accuracy_bits == next->accuracy_bits &&
        seen->loss_bits == next->loss_bits && seen->n_ops == next->n_ops &&
        memcmp(seen->ops, next->ops, next->n_ops * sizeof next->ops[0]) == 0)
        return;
    *seen = *next;
    if (*count < UINT32_MAX)
        (*count)++;
}

//  qsort: pointers into one array of results, in their canonical order
//  (ties, only between identical inputs, by position: stable).

static int
s_cmp_order_ptr(const void *pa, const void *pb)
{
    const ms_verdict_result_t *a = *(const ms_verdict_result_t *const *) pa;
    const ms_verdict_result_t *b = *(const ms_verdict_result_t *const *) pb;
    int c = s_cmp_order(a, b);
    return c ? c : (a > b) - (a < b);
}

//  The revision (see ms_verdict_revision); res_orders: the orders of
//  results (s_orders_make), or NULL to make them here. The parameters are
//  checked.

static int
s_revision(const ms_verdict_params_t *params,
           const ms_verdict_result_t *results, size_t n_results,
           const ms_verdict_reeval_t *reevals, size_t n_reevals,
           const s_orders_t *res_orders, const ms_verdict_outcome_t *final,
           const ms_verdict_mark_t *final_marks, uint32_t *revision)
{
    *revision = 0;
    size_t n = n_results;
    int rc = MS_ERR_NOMEM;
    s_orders_t orders = {.n = 0};
    const ms_verdict_result_t **ord = calloc(n ? n : 1, sizeof *ord);
    size_t *to = calloc(n ? n : 1, sizeof *to);
    uint32_t *ranks = calloc(n ? n : 1, sizeof *ranks);
    uint32_t *pre_ranks = calloc(n ? n : 1, sizeof *pre_ranks);
    ms_verdict_result_t *pre = calloc(n ? n : 1, sizeof *pre);
    ms_verdict_mark_t *pm = calloc(n ? n : 1, sizeof *pm);
    ms_verdict_reeval_t *rv = calloc(n_reevals ? n_reevals : 1, sizeof *rv);
    ms_verdict_reeval_role_t *rroles =
        calloc(n_reevals ? n_reevals : 1, sizeof *rroles);
    if (!ord || !to || !ranks || !pre_ranks || !pre || !pm || !rv || !rroles)
        goto cleanup;
    //  The canonical order (seq, record hash, then the rest of the total
    //  order of results, which only identical inputs tie).
    for (size_t i = 0; i < n; i++)
        ord[i] = &results[i];
    qsort(ord, n, sizeof *ord, s_cmp_order_ptr);
    for (size_t j = 0; j < n; j++) {
        pre[j] = *ord[j];
        pre[j].quarantined = false;
        to[ord[j] - results] = j;
    }
    for (size_t k = 0; k < n_reevals; k++) {
        rv[k] = reevals[k];
        rv[k].quarantined = false;
    }
    //  One set of orders over all of pre serves every prefix (a prefix's
    //  results are the first j of pre): the results' own, permuted.
    rc = res_orders ? s_orders_permute(&orders, res_orders, to)
                    : s_orders_make(&orders, params, pre, n);
    if (rc != MS_OK)
        goto cleanup;
    s_operator_ranks(pre, &orders, pre_ranks);
    for (size_t j = 0; j < n; j++)
        ranks[ord[j] - results] = pre_ranks[j];
    s_view_t seen = {.verdict = MS_VERDICT_PENDING}, next;
    uint32_t count = 0;
    for (size_t j = 0; rc == MS_OK && j < n; j++) {
        ms_verdict_outcome_t o;
        rc = s_evaluate(params, pre, j + 1, rv, n_reevals, s_excluded_flag,
                        NULL, &orders, &o, pm, rroles);
        if (rc == MS_OK) {
            s_view_of(&next, &o, pm, pre_ranks, j + 1);
            s_view_step(&seen, &next, &count);
        }
    }
    if (rc == MS_OK) {
        s_view_of(&next, final, final_marks, ranks, n);
        s_view_step(&seen, &next, &count);
        *revision = count;
    }
cleanup:
    s_orders_free(&orders);
    free(ord);
    free(to);
    free(ranks);
    free(pre_ranks);
    free(pre);
    free(pm);
    free(rv);
    free(rroles);
    return rc;
}

int
ms_verdict_revision(const ms_verdict_params_t *params,
                    const ms_verdict_result_t *results, size_t n_results,
                    const ms_verdict_reeval_t *reevals, size_t n_reevals,
                    const ms_verdict_outcome_t *final,
                    const ms_verdict_mark_t *final_marks, uint32_t *revision)
{
    assert(params && final && revision);
    assert(results || n_results == 0);
    assert(reevals || n_reevals == 0);
    assert(final_marks || n_results == 0);
    *revision = 0;
    int rc = s_check_params(params, "", NULL);
    if (rc != MS_OK)
        return rc;
    return s_revision(params, results, n_results, reevals, n_reevals, NULL,
                      final, final_marks, revision);
}

//  --------------------------------------------------------------------------
//  One task as the store derives it: raw, final, revision.

int
ms_verdict_evaluate_task(const ms_verdict_params_t *params,
                         const ms_verdict_result_t *results, size_t n_results,
                         const ms_verdict_reeval_t *reevals, size_t n_reevals,
                         ms_verdict_outcome_t *raw,
                         ms_verdict_mark_t *raw_marks,
                         ms_verdict_outcome_t *final,
                         ms_verdict_mark_t *final_marks, uint32_t *revision,
                         ms_diag_t *diag)
{
    assert(params && raw && final && revision);
    assert(results || n_results == 0);
    assert(reevals || n_reevals == 0);
    assert((raw_marks && final_marks) || n_results == 0);
    memset(raw, 0, sizeof *raw);
    memset(final, 0, sizeof *final);
    raw->verdict = final->verdict = MS_VERDICT_PENDING;
    raw->median_accuracy = final->median_accuracy = NAN;
    raw->median_loss = final->median_loss = NAN;
    *revision = 0;
    int rc = s_check_params(params, "", diag);
    if (rc != MS_OK)
        return rc;
    ms_verdict_mark_t mark_s;
    ms_verdict_reeval_role_t roles_s[S_SMALL], *roles = roles_s;
    if (n_results == 0)
        raw_marks = final_marks = &mark_s;
    if (n_reevals > S_SMALL && !(roles = calloc(n_reevals, sizeof *roles)))
        return MS_ERR_NOMEM;
    s_orders_t ord;
    rc = s_orders_make(&ord, params, results, n_results);
    if (rc == MS_OK)
        rc = s_evaluate(params, results, n_results, reevals, n_reevals,
                        s_excluded_none, NULL, &ord, raw, raw_marks, roles);
    if (rc == MS_OK)
        rc = s_evaluate(params, results, n_results, reevals, n_reevals,
                        s_excluded_flag, NULL, &ord, final, final_marks, roles);
    if (rc == MS_OK)
        rc = s_revision(params, results, n_results, reevals, n_reevals, &ord,
                        final, final_marks, revision);
    s_orders_free(&ord);
    if (roles != roles_s)
        free(roles);
    return rc;
}

//  --------------------------------------------------------------------------
//  qsort: node ids.

static int
s_cmp_node(const void *pa, const void *pb)
{
    return memcmp(pa, pb, MS_VERDICT_ID_BYTES);
}

//  --------------------------------------------------------------------------
//  The node of id in the sorted table, or NULL.

static ms_verdict_node_t *
s_node_find(ms_verdict_node_t *nodes, size_t n_nodes, const uint8_t *id)
{
    return bsearch(id, nodes, n_nodes, sizeof *nodes, s_cmp_node);
}

//  Stratum 3: the quarantined nodes of the table.
typedef struct {
    ms_verdict_node_t *nodes;
    size_t n_nodes;
} s_table_t;

static bool
s_excluded_table(void *arg, const uint8_t *node_id, bool flag)
{
    (void) flag;
    const s_table_t *t = arg;
    const ms_verdict_node_t *node = s_node_find(t->nodes, t->n_nodes, node_id);
    return node && node->quarantined;
}

//  --------------------------------------------------------------------------
//  Evaluate tasks in strata.

int
ms_verdict_evaluate_all(const ms_verdict_task_t *tasks, size_t n_tasks,
                        const ms_verdict_clear_t *clears, size_t n_clears,
                        const ms_verdict_policy_t *policy,
                        ms_verdict_task_outcome_t *outcomes,
                        ms_verdict_node_t **nodes_p, size_t *n_nodes_p,
                        ms_diag_t *diag)
{
    assert(tasks || n_tasks == 0);
    assert(clears || n_clears == 0);
    assert(outcomes || n_tasks == 0);
    assert(nodes_p && n_nodes_p);
    *nodes_p = NULL;
    *n_nodes_p = 0;
    ms_verdict_policy_t defaults;
    ms_verdict_policy_default(&defaults);
    if (!policy)
        policy = &defaults;
    if (policy->strikes_min < 1)
        return ms_diag_set(diag, "policy.strikes_min", "must be >= 1");
    if (policy->strikes_permille > 1000)
        return ms_diag_set(diag, "policy.strikes_permille", "must be 0..1000");
    size_t max_results = 0, max_reevals = 0, n_ids = 0;
    for (size_t t = 0; t < n_tasks; t++) {
        char where[64];
        snprintf(where, sizeof where, "tasks[%zu].params", t);
        int rc = s_check_params(&tasks[t].params, where, diag);
        if (rc != MS_OK)
            return rc;
        assert(tasks[t].results || tasks[t].n_results == 0);
        assert(tasks[t].reevals || tasks[t].n_reevals == 0);
        if (tasks[t].n_results > max_results)
            max_results = tasks[t].n_results;
        if (tasks[t].n_reevals > max_reevals)
            max_reevals = tasks[t].n_reevals;
        n_ids += tasks[t].n_results + tasks[t].n_reevals;
    }

    int rc = MS_ERR_NOMEM;
    ms_verdict_node_t *nodes = calloc(n_ids ? n_ids : 1, sizeof *nodes);
    ms_verdict_mark_t *marks =
        calloc(max_results ? max_results : 1, sizeof *marks);
    ms_verdict_reeval_role_t *rroles =
        calloc(max_reevals ? max_reevals : 1, sizeof *rroles);
    if (!nodes || !marks || !rroles)
        goto fail;

    //  Every node seen, sorted, once.
    size_t n_nodes = 0;
    for (size_t t = 0; t < n_tasks; t++) {
        for (size_t i = 0; i < tasks[t].n_results; i++)
            memcpy(nodes[n_nodes++].node_id, tasks[t].results[i].node_id,
                   MS_VERDICT_ID_BYTES);
        for (size_t k = 0; k < tasks[t].n_reevals; k++)
            memcpy(nodes[n_nodes++].node_id, tasks[t].reevals[k].verifier_node,
                   MS_VERDICT_ID_BYTES);
    }
    qsort(nodes, n_nodes, sizeof *nodes, s_cmp_node);
    size_t n_unique = 0;
    for (size_t j = 0; j < n_nodes; j++)
        if (n_unique == 0 ||
            memcmp(nodes[j].node_id, nodes[n_unique - 1].node_id,
                   MS_VERDICT_ID_BYTES) != 0)
            nodes[n_unique++] = nodes[j];
    n_nodes = n_unique;

    //  Stratum 1: raw verdicts; counted results and strikes per node.
    for (size_t t = 0; t < n_tasks; t++) {
        const ms_verdict_task_t *task = &tasks[t];
        ms_verdict_mark_t *m = task->raw_marks ? task->raw_marks : marks;
        rc = s_evaluate_all_of(&task->params, task->results, task->n_results,
                               task->reevals, task->n_reevals, s_excluded_none,
                               NULL, &outcomes[t].raw, m, rroles);
        if (rc != MS_OK)
            goto fail;
        for (size_t i = 0; i < task->n_results; i++) {
            if (!m[i].counted)
                continue;
            ms_verdict_node_t *node =
                s_node_find(nodes, n_nodes, task->results[i].node_id);
            assert(node);
            node->n_counted++;
            if (m[i].strike)
                node->n_strikes++;
        }
    }

    //  Stratum 2: clears, then quarantine.
    for (size_t c = 0; c < n_clears; c++) {
        ms_verdict_node_t *node =
            s_node_find(nodes, n_nodes, clears[c].node_id);
        if (node && clears[c].n_forgiven > node->n_forgiven)
            node->n_forgiven = clears[c].n_forgiven;
    }
    for (size_t j = 0; j < n_nodes; j++)
        nodes[j].quarantined =
            ms_verdict_quarantined(policy, nodes[j].n_counted,
                                   nodes[j].n_strikes, nodes[j].n_forgiven);

    //  Stratum 3: final verdicts without quarantined nodes; revisions.
    s_table_t table = {nodes, n_nodes};
    for (size_t t = 0; t < n_tasks; t++) {
        const ms_verdict_task_t *task = &tasks[t];
        ms_verdict_task_outcome_t *o = &outcomes[t];
        rc = s_evaluate_all_of(&task->params, task->results, task->n_results,
                               task->reevals, task->n_reevals, s_excluded_table,
                               &table, &o->final,
                               task->marks ? task->marks : marks, rroles);
        if (rc != MS_OK)
            goto fail;
        o->revision = task->prev;
        o->changed = ms_verdict_revise(&o->revision, o->final.verdict);
    }
    free(marks);
    free(rroles);
    if (n_nodes == 0) {
        free(nodes);
        nodes = NULL;
    }
    *nodes_p = nodes;
    *n_nodes_p = n_nodes;
    return MS_OK;

fail:
    free(nodes);
    free(marks);
    free(rroles);
    return rc;
}

//  --------------------------------------------------------------------------
//  Revise a verdict: a new revision when it changed.

bool
ms_verdict_revise(ms_verdict_revision_t *self, ms_verdict_state_t next)
{
    assert(self);
    if (self->verdict == next)
        return false;
    self->verdict = next;
    if (self->revision < UINT32_MAX)
        self->revision++;
    return true;
}

//  --------------------------------------------------------------------------
//  Names.

const char *
ms_verdict_state_name(ms_verdict_state_t verdict)
{
    switch (verdict) {
    case MS_VERDICT_PENDING:
        return "pending";
    case MS_VERDICT_ACCEPTED:
        return "accepted";
    case MS_VERDICT_VERIFIED:
        return "verified";
    case MS_VERDICT_DISPUTED:
        return "disputed";
    case MS_VERDICT_FAILED:
        return "failed";
    }
    return "unknown";
}

const char *
ms_verdict_role_name(ms_verdict_role_t role)
{
    switch (role) {
    case MS_VERDICT_ROLE_AGREES:
        return "agrees";
    case MS_VERDICT_ROLE_OUTSIDE:
        return "outside";
    case MS_VERDICT_ROLE_MISMATCH:
        return "mismatch";
    case MS_VERDICT_ROLE_CLASS_DISPUTE:
        return "class_dispute";
    case MS_VERDICT_ROLE_DUPLICATE:
        return "duplicate";
    case MS_VERDICT_ROLE_EXCLUDED:
        return "excluded";
    case MS_VERDICT_ROLE_REFUSED_METRIC:
        return "refused_metric";
    case MS_VERDICT_ROLE_REFUSED_RANGE:
        return "refused_range";
    case MS_VERDICT_ROLE_REFUSED_STATUS:
        return "refused_status";
    case MS_VERDICT_ROLE_REFUSED_OPERATOR:
        return "refused_operator";
    case MS_VERDICT_ROLE_REFUTED:
        return "refuted";
    }
    return "unknown";
}

const char *
ms_verdict_reeval_role_name(ms_verdict_reeval_role_t role)
{
    switch (role) {
    case MS_VERDICT_REEVAL_AGREES:
        return "agrees";
    case MS_VERDICT_REEVAL_DISAGREES:
        return "disagrees";
    case MS_VERDICT_REEVAL_NO_TARGET:
        return "no_target";
    case MS_VERDICT_REEVAL_SELF:
        return "self";
    case MS_VERDICT_REEVAL_DUPLICATE:
        return "duplicate";
    case MS_VERDICT_REEVAL_EXCLUDED:
        return "excluded";
    case MS_VERDICT_REEVAL_REFUSED_METRIC:
        return "refused_metric";
    case MS_VERDICT_REEVAL_REFUSED_RANGE:
        return "refused_range";
    case MS_VERDICT_REEVAL_REFUSED_OPERATOR:
        return "refused_operator";
    case MS_VERDICT_REEVAL_FAILED:
        return "failed";
    }
    return "unknown";
}
