/*  =========================================================================
    ms_metrics - the node's counters, each declared once

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every figure of /api/v1/status "pool_counters" is one line of
    MS_METRICS_LIST below, which names it once: its field in ms_metrics_t,
    which is also its status key, the group it is present in, the
    /metrics family that prints it, the family's type, one label pair and
    the family's help text. A plain line, X, prints as the family
    "meshsweep_<field>" with no label; a line XF names its family (NULL:
    not printed on its own, another family carries it) and label pair (or
    NULLs): the labelled families, and the one whose unit is spelled out
    (loop_turn_max_us). The struct, the
    status JSON (ms_metrics_status_json) and the /metrics families
    (ms_metrics_prom) are all generated from that one list, so a counter
    added there appears in both outputs with nothing else to write.
    docs/METRICS.md and tests/integration/ms_api_metrics_test.sh are the
    contract for the names; the list's order is the order of the status
    keys and of the families on the page.

    Who writes the values: the node loop owns an ms_metrics_t and
    increments its own counters in it (self->metrics.lease_claims_total++).
    Figures kept by collaborators (the store, the block signer, the
    record log, the gossip, the mesh and its member table, the lease
    table, the blob fetcher and blob store, the re-evaluator) stay in
    those classes' stats structs; the node hands them, by value, to
    ms_node_status, which copies them into a snapshot of the node's
    ms_metrics_t in one function (ms_node_status_metrics) when it
    refreshes the snapshots HTTP threads read. Moving them here would
    make each of those classes depend on this one.

    A group says when a figure is on the status page at all: NODE always,
    GOSSIP while the node has a gossip, MESH a mesh, FETCH a blob fetcher
    (a node alone has none of these).

    Threads: an ms_metrics_t belongs to the thread that holds it; the
    functions below only read their arguments.
*/
#ifndef MS_METRICS_H
#define MS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ms_prom.h"

//  Groups (a bit mask): which figures a status page holds.
#define MS_METRICS_GROUP_NODE 0x1u
#define MS_METRICS_GROUP_GOSSIP 0x2u
#define MS_METRICS_GROUP_MESH 0x4u
#define MS_METRICS_GROUP_FETCH 0x8u
#define MS_METRICS_GROUP_ALL 0xfu

//  X(field, G, T, help): status key #field, family "meshsweep_" #field;
//  XF(field, G, family, T, label, label value, help): status key #field.
//  G is the group's last word (NODE, GOSSIP, MESH, FETCH); T is COUNTER
//  or GAUGE (MS_PROM_COUNTER, MS_PROM_GAUGE).
// clang-format off
#define MS_METRICS_LIST(X, XF)                                               \
    /* record log and store (ms_store_stats) */                              \
    X(records, NODE, GAUGE, "Records held in this node's log (all origins).")\
    X(blocks, NODE, GAUGE, "Blocks of records held in this node's log.")     \
    XF(store_commits_total, NODE, NULL, COUNTER, NULL, NULL, NULL)           \
    X(store_writes_total, NODE, COUNTER,                                     \
      "Store write calls applied (accepted or refused).")                    \
    X(equivocations_total, NODE, COUNTER,                                    \
      "Conflicting records kept as evidence of equivocation.")               \
    /* leases (the node; leases: the lease table's size) */                  \
    X(lease_claims_total, NODE, COUNTER, "Lease claims this node made.")     \
    X(lease_conflicts_total, NODE, COUNTER,                                  \
      "Claims this node lost to a higher-ranked claim of another node (in "  \
      "the settle window or while running).")                                \
    X(lease_settle_lost_total, NODE, COUNTER,                                \
      "Claims dropped in the settle window.")                                \
    X(lease_settle_capped_total, NODE, COUNTER,                              \
      "Claims not made because the settle list was full.")                   \
    XF(block_acks_sent_total, NODE, "meshsweep_block_acks_total", COUNTER,   \
      "direction", "sent", "Block acknowledgements, by direction.")          \
    XF(block_acks_received_total, NODE, "meshsweep_block_acks_total",        \
      COUNTER, "direction", "received",                                      \
      "Block acknowledgements, by direction.")                               \
    X(lease_expiries_total, NODE, COUNTER,                                   \
      "Leases that expired (their holder went quiet).")                      \
    X(results_refused_invalid_total, NODE, COUNTER,                          \
      "Results refused because they were not valid.")                        \
    X(leases, NODE, GAUGE, "Entries in this node's lease table.")            \
    /* gossip (ms_gossip_stats; messages and bytes by direction and type */  \
    /* come labelled from the status "metrics") */                           \
    XF(gossip_messages_total, GOSSIP, NULL, COUNTER, NULL, NULL, NULL)       \
    XF(gossip_bytes_total, GOSSIP, NULL, COUNTER, NULL, NULL, NULL)          \
    X(gossip_blocks_merged_total, GOSSIP, COUNTER,                           \
      "Gossiped blocks that brought new records.")                           \
    X(gossip_records_merged_total, GOSSIP, COUNTER,                          \
      "Records newly stored from gossip.")                                   \
    X(gossip_range_requests_total, GOSSIP, COUNTER,                          \
      "Range requests (pulls) sent.")                                        \
    X(gossip_ranges_served_total, GOSSIP, COUNTER,                           \
      "Range requests answered.")                                            \
    X(gossip_pulls_timed_out_total, GOSSIP, COUNTER,                         \
      "Pulls asked again after their timeout.")                              \
    X(gossip_pulls_dropped_total, GOSSIP, COUNTER,                           \
      "Pulls given up after their retries.")                                 \
    X(gossip_gaps_buffered_total, GOSSIP, COUNTER,                           \
      "Blocks put in the gap buffer (arrived early).")                       \
    X(gossip_gaps_dropped_total, GOSSIP, COUNTER,                            \
      "Buffered blocks evicted or made useless.")                            \
    X(gossip_batches_total, GOSSIP, COUNTER,                                 \
      "Batched merges of gossiped blocks.")                                  \
    /* the mesh and admission (ms_mesh_stats, ms_members_count) */           \
    XF(mesh_frames_in_total, MESH, "meshsweep_mesh_frames_total", COUNTER,   \
      "direction", "received", "Mesh frames, by direction.")                 \
    XF(mesh_frames_out_total, MESH, "meshsweep_mesh_frames_total", COUNTER,  \
      "direction", "sent", "Mesh frames, by direction.")                     \
    XF(admission_refused_total, MESH, NULL, COUNTER, NULL, NULL, NULL)       \
    XF(admission_refused_no_certificate_total, MESH,                         \
      "meshsweep_admission_refused_total", COUNTER, "reason",                \
      "no_certificate", "HELLOs and certificates refused, by reason.")       \
    XF(admission_refused_other_pool_total, MESH,                             \
      "meshsweep_admission_refused_total", COUNTER, "reason", "other_pool",  \
      "HELLOs and certificates refused, by reason.")                         \
    XF(admission_refused_expired_total, MESH,                                \
      "meshsweep_admission_refused_total", COUNTER, "reason", "expired",     \
      "HELLOs and certificates refused, by reason.")                         \
    XF(admission_refused_revoked_total, MESH,                                \
      "meshsweep_admission_refused_total", COUNTER, "reason", "revoked",     \
      "HELLOs and certificates refused, by reason.")                         \
    XF(admission_refused_bad_signature_total, MESH,                          \
      "meshsweep_admission_refused_total", COUNTER, "reason",                \
      "bad_signature", "HELLOs and certificates refused, by reason.")        \
    XF(admission_refused_key_mismatch_total, MESH,                           \
      "meshsweep_admission_refused_total", COUNTER, "reason", "key_mismatch",\
      "HELLOs and certificates refused, by reason.")                         \
    XF(admission_refused_denied_total, MESH,                                 \
      "meshsweep_admission_refused_total", COUNTER, "reason", "denied",      \
      "HELLOs and certificates refused, by reason.")                         \
    X(admission_hello_timeouts_total, MESH, COUNTER,                         \
      "Keys let in without a valid HELLO in time.")                          \
    X(admission_unauthorized_frames_total, MESH, COUNTER,                    \
      "Frames dropped: the sender is not the link's key.")                   \
    X(admission_links_closed_total, MESH, COUNTER,                           \
      "Links closed by a revocation or an expiry.")                          \
    X(members, MESH, GAUGE, "Members admitted (this node's member table).")  \
    /* messages refused, all reasons (by reason: the status "metrics") */    \
    XF(rejected_messages_total, NODE, NULL, COUNTER, NULL, NULL, NULL)       \
    /* signed blocks and authority items (the node) */                       \
    XF(blocks_rejected_total, NODE, NULL, COUNTER, NULL, NULL, NULL)         \
    XF(blocks_unsigned_total, NODE, "meshsweep_blocks_rejected_total",       \
      COUNTER, "reason", "unsigned", "Peers' blocks refused, by reason.")    \
    XF(blocks_bad_signature_total, NODE, "meshsweep_blocks_rejected_total",  \
      COUNTER, "reason", "bad_signature",                                    \
      "Peers' blocks refused, by reason.")                                   \
    XF(blocks_not_admitted_total, NODE, "meshsweep_blocks_rejected_total",   \
      COUNTER, "reason", "not_admitted", "Peers' blocks refused, by reason.")\
    X(authority_items, NODE, GAUGE, "Authority items held.")                 \
    X(authority_items_added_total, NODE, COUNTER,                            \
      "Authority items checked and kept.")                                   \
    X(authority_items_refused_total, NODE, COUNTER,                          \
      "Authority items refused (malformed or forged).")                      \
    X(revocations_applied_total, NODE, COUNTER, "Revocations applied.")      \
    X(records_ignored_no_role_total, NODE, COUNTER,                          \
      "Records stored but ignored: their origin lacks the role.")            \
    X(blocks_resigned_total, NODE, COUNTER, "Own blocks signed again.")      \
    /* the node loop */                                                      \
    XF(loop_turn_max_us, NODE, "meshsweep_loop_turn_max_microseconds", GAUGE,\
      NULL, NULL,                                                            \
      "Longest turn of the node loop since start (work between two waits).") \
    /* datasets and blobs (the node; ms_blob_fetch_stats, */                 \
    /* ms_blob_store_stats) */                                               \
    X(datasets_fetched_total, FETCH, COUNTER, "Datasets fetched from peers.")\
    X(datasets_local_total, FETCH, COUNTER, "Datasets found as local files.")\
    X(datasets_local_mismatch_total, FETCH, COUNTER,                         \
      "Local dataset files whose hash did not match.")                       \
    X(dataset_fetches_asked_total, FETCH, COUNTER,                           \
      "Dataset fetches asked for.")                                          \
    X(blob_fetch_failures_total, FETCH, COUNTER, "Blob fetches that failed.")\
    X(blob_fetches_completed_total, FETCH, COUNTER,                          \
      "Blob fetches completed.")                                             \
    X(blob_fetches_running, FETCH, GAUGE, "Blob fetches running now.")       \
    X(blob_requests_sent_total, FETCH, COUNTER, "Blob chunk requests sent.") \
    X(blob_bytes_received_total, FETCH, COUNTER,                             \
      "Blob bytes received from peers.")                                     \
    X(blob_request_timeouts_total, FETCH, COUNTER,                           \
      "Blob chunk requests that timed out.")                                 \
    X(blob_hash_mismatches_total, FETCH, COUNTER,                            \
      "Fetched blobs whose hash did not match.")                             \
    X(blob_requests_served_total, FETCH, COUNTER,                            \
      "Blob chunk requests served to peers.")                                \
    X(blob_uploads_total, FETCH, COUNTER, "Blobs uploaded through the API.") \
    X(blob_bytes, FETCH, GAUGE, "Bytes held in the blob store.")             \
    X(blob_evictions_total, FETCH, COUNTER,                                  \
      "Blobs evicted from the blob store.")                                  \
    /* re-evaluation and weights (ms_reeval_stats; outcomes come */          \
    /* labelled from the status "metrics") */                                \
    X(reevaluations_sampled_total, FETCH, COUNTER,                           \
      "Other operators' results sampled for re-evaluation.")                 \
    XF(reevaluations_published_total, FETCH, NULL, COUNTER, NULL, NULL, NULL)\
    XF(reevaluations_failed_total, FETCH, NULL, COUNTER, NULL, NULL, NULL)   \
    X(reevaluations_pending, FETCH, GAUGE,                                   \
      "Re-evaluations (and weight copies) in progress.")                     \
    X(weights_kept_total, FETCH, COUNTER,                                    \
      "Own trained weights kept as blobs.")                                  \
    X(weights_copies_total, FETCH, COUNTER,                                  \
      "Copies of other operators' weights held.")                            \
    X(weights_pinned, FETCH, GAUGE, "Weight blobs pinned here.")
// clang-format on

//  The values, one per line of MS_METRICS_LIST (a plain value type:
//  copying it is how a snapshot is taken).
typedef struct {
#define MS_METRICS_FIELD_(field, ...) uint64_t field;
    MS_METRICS_LIST(MS_METRICS_FIELD_, MS_METRICS_FIELD_)
#undef MS_METRICS_FIELD_
} ms_metrics_t;

//  One line of the list, as data (tests, documentation tools).
typedef struct {
    const char *key;    // status key in pool_counters
    unsigned group;     // MS_METRICS_GROUP_*
    const char *family; // /metrics family, or NULL (not printed alone)
    ms_prom_type_t type;
    const char *label, *label_value; // one label pair, or NULLs
    const char *help;                // the family's help, or NULL
    size_t offset;                   // of the value in ms_metrics_t
} ms_metrics_entry_t;

//  The list: *n gets its length. The array is static (borrowed for the
//  process's life). Any thread.
const ms_metrics_entry_t *ms_metrics_entries(size_t *n);

//  The value of ENTRY in SELF.
uint64_t ms_metrics_value(const ms_metrics_t *self,
                          const ms_metrics_entry_t *entry);

//  A new JSON object {status key: integer} with the figures of the groups
//  in GROUPS (a mask of MS_METRICS_GROUP_*), in the list's order: the
//  status page's "pool_counters". Caller owns the result (json_decref);
//  NULL when memory runs out. Any thread.
json_t *ms_metrics_status_json(const ms_metrics_t *self, unsigned groups);

//  Declare in P the /metrics family of every line with one, and add its
//  sample with the value POOL_COUNTERS (a status page's "pool_counters",
//  as ms_metrics_status_json wrote it) holds under the line's key; a key
//  missing there (its group was not on the page) or not a number adds
//  nothing. Returns MS_OK, or MS_ERR_NOMEM when P could not take a
//  family or a sample (the page stays valid, with what it took). Any
//  thread.
int ms_metrics_prom(const json_t *pool_counters, ms_prom_t *p);

#endif
