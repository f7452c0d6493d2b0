/*  =========================================================================
    ms_peer_table - the peers as the mesh reported them (alive, suspect,
    dead; linked or not), and the lists each collaborator wants of them

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "The pool" and "Layout of node/". The mesh tells the node of
    every change of a peer's state or link (ms_mesh_handlers_t.on_peer);
    the node hands each report to ms_peer_table_update, which keeps the
    last state and link of every peer ever reported (a dead peer stays in
    the table, dead) and says what changed, so the node can dispatch it
    (an event when the state changed, the lease table when it died, the
    settle list when it is no longer waited for, the scheduler when the
    owners moved, the item sync when it came up). The table decides
    nothing else: it is the one place that turns the reports into the
    lists the collaborators read, each by one rule:

    - up: linked and alive. The rendezvous owners are this node and its
      up peers (ms_peer_table_members: this node first, for ms_assign
      and ms_scheduler); the up peers alone are the live peers
      (ms_peer_table_live: ms_reeval's and ms_dataset_source's fetch
      sources, ms_pool_census's members).
    - reachable: linked and not dead, suspect ones included. These are
      the push targets (ms_peer_table_active: ms_record_log, gossip and
      ms_item_sync) and the peers a claim waits for
      (ms_peer_table_reachable: ms_settle; why suspect peers are waited
      for is in ms_settle.h).

    Every list is in the order the peers were first reported, which
    makes a node's choices repeatable in tests. The table is small (the
    peers of one pool) and scanned linearly; a hash would cost more code
    than the scan costs time.

    The class never includes ms_node.h and calls nothing: the node reads
    it. Loop thread only.
*/
#ifndef MS_PEER_TABLE_H
#define MS_PEER_TABLE_H

#include "ms_mesh.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_peer_table ms_peer_table_t;

#define MS_PEER_TABLE_ID_BYTES 32 // node ids (Ed25519 public keys)

//  What one report changed (ms_peer_table_update).
typedef struct {
    int previous; // the peer's state before (an ms_peer_state_t), or -1:
                  // it appears (first report)
    bool was_up;  // it was linked and alive before
    bool up;      // it is linked and alive now
} ms_peer_table_change_t;

//  Create the table of the node SELF_ID (MS_PEER_TABLE_ID_BYTES, copied;
//  first of ms_peer_table_members), empty. Returns NULL when memory runs
//  out. Caller owns the result; free it with ms_peer_table_destroy().
ms_peer_table_t *
ms_peer_table_new(const uint8_t self_id[MS_PEER_TABLE_ID_BYTES]);

//  Free it; NULL-safe, nulls *self_p.
void ms_peer_table_destroy(ms_peer_table_t **self_p);

//  The mesh reported peer ID (copied) in STATE, LINKED or not: keep it
//  and fill *CHANGE (may be NULL) with what changed. Returns MS_OK, or
//  MS_ERR_NOMEM when a new peer cannot be added (the table is unchanged
//  and *CHANGE untouched: the report is dropped).
int ms_peer_table_update(ms_peer_table_t *self,
                         const uint8_t id[MS_PEER_TABLE_ID_BYTES],
                         ms_peer_state_t state, bool linked,
                         ms_peer_table_change_t *change);

//  The peers ever reported (dead ones included).
size_t ms_peer_table_size(const ms_peer_table_t *self);

//  The members for rendezvous owners: this node, then the up peers (see
//  the prose), as a malloc'd array in *OUT. Caller frees *OUT. Returns
//  the count (at least 1); 0 with *OUT NULL when memory runs out.
size_t ms_peer_table_members(const ms_peer_table_t *self,
                             uint8_t (**out)[MS_PEER_TABLE_ID_BYTES]);

//  The up peers, as a malloc'd array in *OUT (non-NULL also when there
//  are none). Caller frees *OUT. Returns the count; 0 with *OUT NULL
//  when memory runs out.
size_t ms_peer_table_live(const ms_peer_table_t *self,
                          uint8_t (**out)[MS_PEER_TABLE_ID_BYTES]);

//  The reachable peers (linked, not dead), as a malloc'd array in *OUT.
//  Caller frees *OUT. Returns the count; 0 with *OUT NULL when there
//  are none or memory runs out.
size_t ms_peer_table_reachable(const ms_peer_table_t *self,
                               uint8_t (**out)[MS_PEER_TABLE_ID_BYTES]);

//  The reachable peers, the first MAX of them, into OUT (room for MAX).
//  Returns how many were written.
int ms_peer_table_active(const ms_peer_table_t *self,
                         uint8_t (*out)[MS_PEER_TABLE_ID_BYTES], int max);

#endif
