/*  =========================================================================
    ms_metrics - the node's counters, each declared once

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every figure of /api/v1/status "pool_counters" is one line of
    MS_METRICS_LIST below: its field in ms_metrics_t, the group it is
    present in, its status key, the /metrics family that prints it (NULL:
    not printed on its own, another family carries it), the family's type,
    one label pair (or NULLs) and the family's help text. The struct, the
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

//  X(field, group, status key, family, type, label, label value, help)
//  G is the group's last word (NODE, GOSSIP, MESH, FETCH); T is COUNTER
//  or GAUGE (MS_PROM_COUNTER, MS_PROM_GAUGE).
// clang-format off
#define MS_METRICS_LIST(X)                                                   \
    /* record log and store (ms_store_stats) */                              \
    X(records, NODE, "records", "meshsweep_records", GAUGE, NULL, NULL,      \
      "Records held in this node's log (all origins).")                      \
    X(blocks, NODE, "blocks", "meshsweep_blocks", GAUGE, NULL, NULL,         \
      "Blocks of records held in this node's log.")                          \
    X(store_commits_total, NODE, "store_commits_total", NULL, COUNTER,       \
      NULL, NULL, NULL)                                                      \
    X(store_writes_total, NODE, "store_writes_total",                        \
      "meshsweep_store_writes_total", COUNTER, NULL, NULL,                   \
      "Store write calls applied (accepted or refused).")                    \
    X(equivocations_total, NODE, "equivocations_total",                      \
      "meshsweep_equivocations_total", COUNTER, NULL, NULL,                  \
      "Conflicting records kept as evidence of equivocation.")               \
    /* leases (the node; leases: the lease table's size) */                  \
    X(lease_claims_total, NODE, "lease_claims_total",                        \
      "meshsweep_lease_claims_total", COUNTER, NULL, NULL,                   \
      "Lease claims this node made.")                                        \
    X(lease_conflicts_total, NODE, "lease_conflicts_total",                  \
      "meshsweep_lease_conflicts_total", COUNTER, NULL, NULL,                \
      "Claims this node lost to a higher-ranked claim of another node "      \
      "(in the settle window or while running).")                            \
    X(lease_settle_lost_total, NODE, "lease_settle_lost_total",              \
      "meshsweep_lease_settle_lost_total", COUNTER, NULL, NULL,              \
      "Claims dropped in the settle window.")                                \
    X(lease_settle_capped_total, NODE, "lease_settle_capped_total",          \
      "meshsweep_lease_settle_capped_total", COUNTER, NULL, NULL,            \
      "Claims not made because the settle list was full.")                   \
    X(block_acks_sent_total, NODE, "block_acks_sent_total",                  \
      "meshsweep_block_acks_total", COUNTER, "direction", "sent",            \
      "Block acknowledgements, by direction.")                               \
    X(block_acks_received_total, NODE, "block_acks_received_total",          \
      "meshsweep_block_acks_total", COUNTER, "direction", "received",        \
      "Block acknowledgements, by direction.")                               \
    X(lease_expiries_total, NODE, "lease_expiries_total",                    \
      "meshsweep_lease_expiries_total", COUNTER, NULL, NULL,                 \
      "Leases that expired (their holder went quiet).")                      \
    X(results_refused_invalid_total, NODE, "results_refused_invalid_total",  \
      "meshsweep_results_refused_invalid_total", COUNTER, NULL, NULL,        \
      "Results refused because they were not valid.")                        \
    X(leases, NODE, "leases", "meshsweep_leases", GAUGE, NULL, NULL,         \
      "Entries in this node's lease table.")                                 \
    /* gossip (ms_gossip_stats; messages and bytes by direction and type */  \
    /* come labelled from the status "metrics") */                           \
    X(gossip_messages_total, GOSSIP, "gossip_messages_total", NULL,          \
      COUNTER, NULL, NULL, NULL)                                             \
    X(gossip_bytes_total, GOSSIP, "gossip_bytes_total", NULL, COUNTER,       \
      NULL, NULL, NULL)                                                      \
    X(gossip_blocks_merged_total, GOSSIP, "gossip_blocks_merged_total",      \
      "meshsweep_gossip_blocks_merged_total", COUNTER, NULL, NULL,           \
      "Gossiped blocks that brought new records.")                           \
    X(gossip_records_merged_total, GOSSIP, "gossip_records_merged_total",    \
      "meshsweep_gossip_records_merged_total", COUNTER, NULL, NULL,          \
      "Records newly stored from gossip.")                                   \
    X(gossip_range_requests_total, GOSSIP, "gossip_range_requests_total",    \
      "meshsweep_gossip_range_requests_total", COUNTER, NULL, NULL,          \
      "Range requests (pulls) sent.")                                        \
    X(gossip_ranges_served_total, GOSSIP, "gossip_ranges_served_total",      \
      "meshsweep_gossip_ranges_served_total", COUNTER, NULL, NULL,           \
      "Range requests answered.")                                            \
    X(gossip_pulls_timed_out_total, GOSSIP, "gossip_pulls_timed_out_total",  \
      "meshsweep_gossip_pulls_timed_out_total", COUNTER, NULL, NULL,         \
      "Pulls asked again after their timeout.")                              \
    X(gossip_pulls_dropped_total, GOSSIP, "gossip_pulls_dropped_total",      \
      "meshsweep_gossip_pulls_dropped_total", COUNTER, NULL, NULL,           \
      "Pulls given up after their retries.")                                 \
    X(gossip_gaps_buffered_total, GOSSIP, "gossip_gaps_buffered_total",      \
      "meshsweep_gossip_gaps_buffered_total", COUNTER, NULL, NULL,           \
      "Blocks put in the gap buffer (arrived early).")                       \
    X(gossip_gaps_dropped_total, GOSSIP, "gossip_gaps_dropped_total",        \
      "meshsweep_gossip_gaps_dropped_total", COUNTER, NULL, NULL,            \
      "Buffered blocks evicted or made useless.")                            \
    X(gossip_batches_total, GOSSIP, "gossip_batches_total",                  \
      "meshsweep_gossip_batches_total", COUNTER, NULL, NULL,                 \
      "Batched merges of gossiped blocks.")                                  \
    /* the mesh and admission (ms_mesh_stats, ms_members_count) */           \
    X(mesh_frames_in_total, MESH, "mesh_frames_in_total",                    \
      "meshsweep_mesh_frames_total", COUNTER, "direction", "received",       \
      "Mesh frames, by direction.")                                          \
    X(mesh_frames_out_total, MESH, "mesh_frames_out_total",                  \
      "meshsweep_mesh_frames_total", COUNTER, "direction", "sent",           \
      "Mesh frames, by direction.")                                          \
    X(admission_refused_total, MESH, "admission_refused_total", NULL,        \
      COUNTER, NULL, NULL, NULL)                                             \
    X(admission_refused_no_certificate_total, MESH,                          \
      "admission_refused_no_certificate_total",                              \
      "meshsweep_admission_refused_total", COUNTER, "reason",                \
      "no_certificate", "HELLOs and certificates refused, by reason.")       \
    X(admission_refused_other_pool_total, MESH,                              \
      "admission_refused_other_pool_total",                                  \
      "meshsweep_admission_refused_total", COUNTER, "reason", "other_pool",  \
      "HELLOs and certificates refused, by reason.")                         \
    X(admission_refused_expired_total, MESH,                                 \
      "admission_refused_expired_total",                                     \
      "meshsweep_admission_refused_total", COUNTER, "reason", "expired",     \
      "HELLOs and certificates refused, by reason.")                         \
    X(admission_refused_revoked_total, MESH,                                 \
      "admission_refused_revoked_total",                                     \
      "meshsweep_admission_refused_total", COUNTER, "reason", "revoked",     \
      "HELLOs and certificates refused, by reason.")                         \
    X(admission_refused_bad_signature_total, MESH,                           \
      "admission_refused_bad_signature_total",                               \
      "meshsweep_admission_refused_total", COUNTER, "reason",                \
      "bad_signature", "HELLOs and certificates refused, by reason.")        \
    X(admission_refused_key_mismatch_total, MESH,                            \
      "admission_refused_key_mismatch_total",                                \
      "meshsweep_admission_refused_total", COUNTER, "reason",                \
      "key_mismatch", "HELLOs and certificates refused, by reason.")         \
    X(admission_refused_denied_total, MESH,                                  \
      "admission_refused_denied_total",                                      \
      "meshsweep_admission_refused_total", COUNTER, "reason", "denied",      \
      "HELLOs and certificates refused, by reason.")                         \
    X(admission_hello_timeouts_total, MESH,                                  \
      "admission_hello_timeouts_total",                                      \
      "meshsweep_admission_hello_timeouts_total", COUNTER, NULL, NULL,       \
      "Keys let in without a valid HELLO in time.")                          \
    X(admission_unauthorized_frames_total, MESH,                             \
      "admission_unauthorized_frames_total",                                 \
      "meshsweep_admission_unauthorized_frames_total", COUNTER, NULL, NULL,  \
      "Frames dropped: the sender is not the link's key.")                   \
    X(admission_links_closed_total, MESH, "admission_links_closed_total",    \
      "meshsweep_admission_links_closed_total", COUNTER, NULL, NULL,         \
      "Links closed by a revocation or an expiry.")                          \
    X(members, MESH, "members", "meshsweep_members", GAUGE, NULL, NULL,      \
      "Members admitted (this node's member table).")                        \
    /* messages refused, all reasons (by reason: the status "metrics") */    \
    X(rejected_messages_total, NODE, "rejected_messages_total", NULL,        \
      COUNTER, NULL, NULL, NULL)                                             \
    /* signed blocks and authority items (the node) */                       \
    X(blocks_rejected_total, NODE, "blocks_rejected_total", NULL, COUNTER,   \
      NULL, NULL, NULL)                                                      \
    X(blocks_unsigned_total, NODE, "blocks_unsigned_total",                  \
      "meshsweep_blocks_rejected_total", COUNTER, "reason", "unsigned",      \
      "Peers' blocks refused, by reason.")                                   \
    X(blocks_bad_signature_total, NODE, "blocks_bad_signature_total",        \
      "meshsweep_blocks_rejected_total", COUNTER, "reason", "bad_signature", \
      "Peers' blocks refused, by reason.")                                   \
    X(blocks_not_admitted_total, NODE, "blocks_not_admitted_total",          \
      "meshsweep_blocks_rejected_total", COUNTER, "reason", "not_admitted",  \
      "Peers' blocks refused, by reason.")                                   \
    X(authority_items, NODE, "authority_items",                              \
      "meshsweep_authority_items", GAUGE, NULL, NULL,                        \
      "Authority items held.")                                               \
    X(authority_items_added_total, NODE, "authority_items_added_total",      \
      "meshsweep_authority_items_added_total", COUNTER, NULL, NULL,          \
      "Authority items checked and kept.")                                   \
    X(authority_items_refused_total, NODE, "authority_items_refused_total",  \
      "meshsweep_authority_items_refused_total", COUNTER, NULL, NULL,        \
      "Authority items refused (malformed or forged).")                      \
    X(revocations_applied_total, NODE, "revocations_applied_total",          \
      "meshsweep_revocations_applied_total", COUNTER, NULL, NULL,            \
      "Revocations applied.")                                                \
    X(records_ignored_no_role_total, NODE, "records_ignored_no_role_total",  \
      "meshsweep_records_ignored_no_role_total", COUNTER, NULL, NULL,        \
      "Records stored but ignored: their origin lacks the role.")            \
    X(blocks_resigned_total, NODE, "blocks_resigned_total",                  \
      "meshsweep_blocks_resigned_total", COUNTER, NULL, NULL,                \
      "Own blocks signed again.")                                            \
    /* the node loop */                                                      \
    X(loop_turn_max_us, NODE, "loop_turn_max_us",                            \
      "meshsweep_loop_turn_max_microseconds", GAUGE, NULL, NULL,             \
      "Longest turn of the node loop since start (work between two waits).") \
    /* datasets and blobs (the node; ms_blob_fetch_stats, */                 \
    /* ms_blob_store_stats) */                                               \
    X(datasets_fetched_total, FETCH, "datasets_fetched_total",               \
      "meshsweep_datasets_fetched_total", COUNTER, NULL, NULL,               \
      "Datasets fetched from peers.")                                        \
    X(datasets_local_total, FETCH, "datasets_local_total",                   \
      "meshsweep_datasets_local_total", COUNTER, NULL, NULL,                 \
      "Datasets found as local files.")                                      \
    X(datasets_local_mismatch_total, FETCH, "datasets_local_mismatch_total", \
      "meshsweep_datasets_local_mismatch_total", COUNTER, NULL, NULL,        \
      "Local dataset files whose hash did not match.")                       \
    X(dataset_fetches_asked_total, FETCH, "dataset_fetches_asked_total",     \
      "meshsweep_dataset_fetches_asked_total", COUNTER, NULL, NULL,          \
      "Dataset fetches asked for.")                                          \
    X(blob_fetch_failures_total, FETCH, "blob_fetch_failures_total",         \
      "meshsweep_blob_fetch_failures_total", COUNTER, NULL, NULL,            \
      "Blob fetches that failed.")                                           \
    X(blob_fetches_completed_total, FETCH, "blob_fetches_completed_total",   \
      "meshsweep_blob_fetches_completed_total", COUNTER, NULL, NULL,         \
      "Blob fetches completed.")                                             \
    X(blob_fetches_running, FETCH, "blob_fetches_running",                   \
      "meshsweep_blob_fetches_running", GAUGE, NULL, NULL,                   \
      "Blob fetches running now.")                                           \
    X(blob_requests_sent_total, FETCH, "blob_requests_sent_total",           \
      "meshsweep_blob_requests_sent_total", COUNTER, NULL, NULL,             \
      "Blob chunk requests sent.")                                           \
    X(blob_bytes_received_total, FETCH, "blob_bytes_received_total",         \
      "meshsweep_blob_bytes_received_total", COUNTER, NULL, NULL,            \
      "Blob bytes received from peers.")                                     \
    X(blob_request_timeouts_total, FETCH, "blob_request_timeouts_total",     \
      "meshsweep_blob_request_timeouts_total", COUNTER, NULL, NULL,          \
      "Blob chunk requests that timed out.")                                 \
    X(blob_hash_mismatches_total, FETCH, "blob_hash_mismatches_total",       \
      "meshsweep_blob_hash_mismatches_total", COUNTER, NULL, NULL,           \
      "Fetched blobs whose hash did not match.")                             \
    X(blob_requests_served_total, FETCH, "blob_requests_served_total",       \
      "meshsweep_blob_requests_served_total", COUNTER, NULL, NULL,           \
      "Blob chunk requests served to peers.")                                \
    X(blob_uploads_total, FETCH, "blob_uploads_total",                       \
      "meshsweep_blob_uploads_total", COUNTER, NULL, NULL,                   \
      "Blobs uploaded through the API.")                                     \
    X(blob_bytes, FETCH, "blob_bytes", "meshsweep_blob_bytes", GAUGE, NULL,  \
      NULL, "Bytes held in the blob store.")                                 \
    X(blob_evictions_total, FETCH, "blob_evictions_total",                   \
      "meshsweep_blob_evictions_total", COUNTER, NULL, NULL,                 \
      "Blobs evicted from the blob store.")                                  \
    /* re-evaluation and weights (ms_reeval_stats; outcomes come */          \
    /* labelled from the status "metrics") */                                \
    X(reevaluations_sampled_total, FETCH, "reevaluations_sampled_total",     \
      "meshsweep_reevaluations_sampled_total", COUNTER, NULL, NULL,          \
      "Other operators' results sampled for re-evaluation.")                 \
    X(reevaluations_published_total, FETCH, "reevaluations_published_total", \
      NULL, COUNTER, NULL, NULL, NULL)                                       \
    X(reevaluations_failed_total, FETCH, "reevaluations_failed_total", NULL, \
      COUNTER, NULL, NULL, NULL)                                             \
    X(reevaluations_pending, FETCH, "reevaluations_pending",                 \
      "meshsweep_reevaluations_pending", GAUGE, NULL, NULL,                  \
      "Re-evaluations (and weight copies) in progress.")                     \
    X(weights_kept_total, FETCH, "weights_kept_total",                       \
      "meshsweep_weights_kept_total", COUNTER, NULL, NULL,                   \
      "Own trained weights kept as blobs.")                                  \
    X(weights_copies_total, FETCH, "weights_copies_total",                   \
      "meshsweep_weights_copies_total", COUNTER, NULL, NULL,                 \
      "Copies of other operators' weights held.")                            \
    X(weights_pinned, FETCH, "weights_pinned", "meshsweep_weights_pinned",   \
      GAUGE, NULL, NULL, "Weight blobs pinned here.")
// clang-format on

//  The values, one per line of MS_METRICS_LIST (a plain value type:
//  copying it is how a snapshot is taken).
typedef struct {
#define MS_METRICS_FIELD_(field, g, key, family, t, label, value, help)        \
    uint64_t field;
    MS_METRICS_LIST(MS_METRICS_FIELD_)
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
