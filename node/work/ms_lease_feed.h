/*  =========================================================================
    ms_lease_feed - records to the lease table: merged records as they
    land, the stored claims at start and after a revocation

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "The pool" (leases) and "Layout of node/": records are the
    only writers of derived state, and the lease table (ms_lease_table,
    the claim rule) is derived state kept in memory. This class is the
    one path from records to it:

    - a record merged from a peer (ms_lease_feed_merge): a CLAIM or
      RELEASE adds that fact, a RESULT finishes its producer's claims on
      the task; SWEEP, SWEEP_CONTROL and FAILURE only change what the
      scheduler reads from the store. A result that cannot be true
      (cases/README.md case 7: ms_store_payload_decode refuses it) counts
      for nothing; it ends its producer's claim like a release, so the
      task is scheduled again (the producer does not get it back: the
      store holds its result record, the lease table its released
      claim), and is counted (n_refused_invalid:
      results_refused_invalid_total);
    - at start (ms_lease_feed_load): the claims and releases of every
      unfinished task, from the store;
    - after a revocation (ms_lease_feed_reload_node): a node's facts go,
      and its claims within the revocation's cut come back from the store
      (ms_store_claims_by_task leaves out claims above the cut; a task
      whose counted result stands is not pending).

    Heartbeats are the feed's other input: a heartbeat heard directly
    from a peer lists its live claims (ms_lease_feed_heartbeat: they stay
    alive from now, even before their records arrive), and ours lists
    ours, renewed as it is filled (ms_lease_feed_fill_heartbeat). Whether
    the sender is still a member is the caller's to decide first.

    Our own records do not come through here: the runner and the
    scheduler put our claims and releases into the table as they append
    them. Whether a merged record counts (its origin's revocation cut) is
    the caller's to decide before ms_lease_feed_merge.

    Why a class and not part of ms_lease_table: the table is a pure
    function of the facts it is given (claims, releases, results,
    heartbeats) and is unit-tested with no store or wire codec; decoding
    record payloads and walking the store are I/O the table should not
    know. The class owns no facts, only its counter; it borrows the
    table and the store, and reports to the node through
    ms_lease_feed_iface_t (it never includes ms_node.h).

    Threads: one instance belongs to the node's loop thread.
*/
#ifndef MS_LEASE_FEED_H
#define MS_LEASE_FEED_H

#include "ms_lease_table.h"
#include "ms_store.h"
#include "ms_wire.h"

#include <stddef.h>
#include <stdint.h>

typedef struct ms_lease_feed ms_lease_feed_t;

#define MS_LEASE_FEED_MAX_LIVE_CLAIMS 1024 // live claims in one heartbeat

//  What the class needs of its node. Every function gets ARG and is
//  called on the loop thread from inside ms_lease_feed_merge only. A NULL
//  function does nothing.
typedef struct {
    void *arg;
    //  A record that changes the work landed (the scheduler scans again).
    void (*changed)(void *arg);
    //  A result record of ORIGIN for TASK_ID landed (the node publishes
    //  it as an event). Not called for a refused result.
    void (*result)(void *arg, const uint8_t task_id[MS_LEASE_ID_BYTES],
                   const uint8_t origin[MS_LEASE_ID_BYTES]);
    //  A verbose log line (no newline).
    void (*log)(void *arg, const char *line);
} ms_lease_feed_iface_t;

//  Counters (ms_lease_feed_stats).
typedef struct {
    uint64_t n_refused_invalid; // impossible results refused
                                // (results_refused_invalid_total)
} ms_lease_feed_stats_t;

//  Make the feed into LEASES from STORE (both borrowed; both outlive the
//  feed) with IFACE (copied). Caller owns the result; free it with
//  ms_lease_feed_destroy(). NULL only when memory runs out.
ms_lease_feed_t *ms_lease_feed_new(ms_lease_table_t *leases, ms_store_t *store,
                                   const ms_lease_feed_iface_t *iface);

//  Free it (not the table or the store). NULL-safe; nulls *self_p.
void ms_lease_feed_destroy(ms_lease_feed_t **self_p);

//  A record of ORIGIN merged into the store and counted: KIND
//  (ms_record_kind_t) with PAYLOAD (LEN bytes, borrowed). CLAIM, RELEASE,
//  RESULT, SWEEP, SWEEP_CONTROL and FAILURE call iface.changed; a CLAIM
//  or RELEASE (epoch 1 .. UINT32_MAX) goes to the table; a RESULT
//  finishes ORIGIN's claims on its task (any slot) and calls
//  iface.result; an impossible result releases ORIGIN's claim it names
//  (epoch >= 1), is counted and logged. Other kinds and payloads that do
//  not decode are ignored (the store refused or stored them already).
void ms_lease_feed_merge(ms_lease_feed_t *self,
                         const uint8_t origin[MS_LEASE_ID_BYTES], uint32_t kind,
                         const uint8_t *payload, size_t len);

//  Load the claims and releases of every unfinished task of the store
//  into the table (at start). Returns MS_OK; MS_ERR_NOMEM; the store's
//  errors (ms_store_pending_tasks, ms_store_claims_by_task).
int ms_lease_feed_load(ms_lease_feed_t *self);

//  A revocation of WHO was applied: forget every fact of WHO in the table
//  (ms_lease_table_forget_node), then load back WHO's stored claims of
//  every unfinished task (those within its cut). A task whose claims
//  cannot be read is skipped; when the tasks cannot be listed nothing is
//  loaded back.
void ms_lease_feed_reload_node(ms_lease_feed_t *self,
                               const uint8_t who[MS_LEASE_ID_BYTES]);

//  Copy the counters into *OUT.
void ms_lease_feed_stats(const ms_lease_feed_t *self,
                         ms_lease_feed_stats_t *out);

//  A heartbeat HB (borrowed) heard directly from FROM: the live claims it
//  lists keep FROM's leases alive (ms_lease_table_heartbeat). Nothing
//  happens when memory runs out (the leases then expire by their TTL).
void ms_lease_feed_heartbeat(ms_lease_feed_t *self,
                             const uint8_t from[MS_LEASE_ID_BYTES],
                             const ms_wire_envelope_t *hb);

//  Our heartbeat HB: renew our leases (ms_lease_table_renew) and list
//  them, the first MS_LEASE_FEED_MAX_LIVE_CLAIMS, in hb->heartbeat
//  (live_claims points into the feed's buffer, valid until the next
//  call; NULL when none). The other heartbeat fields are the caller's.
void ms_lease_feed_fill_heartbeat(ms_lease_feed_t *self,
                                  ms_wire_envelope_t *hb);

#endif
