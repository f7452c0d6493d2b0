/*  =========================================================================
    ms_item_sync - the node's side of the authority items: check, keep,
    apply, and reconcile them with the linked peers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Records and anti-entropy" (issue 4). The grow-only set of
    items that the pool authority signs or that prove membership:
    members' certificate chains (every node adds the chain of each peer
    it admits at a HELLO, so every node learns every member's operator
    and roles, also of members it never linked to), revocations and
    quarantine clears (node/mesh/ms_items.h). An item is checked before
    anything else (authority signature, pool id; a chain with expiry
    ignored), refused and counted when bad, else kept in the store
    (durable, by digest), applied, and pushed at once to every linked
    peer. When the node joins its pool (ms_item_sync_join) the class
    loads the store's items into the set and the members table.

    Reconciliation. Every MS_ITEM_SYNC_ROUND_MS (ms_item_sync_tick), and
    when a link comes up (ms_item_sync_link_up), the node sends
    ITEM_DIGEST (the digest of its set) to each linked peer. A peer whose
    digest differs answers with ITEM_LIST (every digest it holds, at
    most once per MS_ITEM_SYNC_LIST_GAP_MS per peer); the receiver of a
    list sends ITEMS with what the list lacks (batches of
    MS_WIRE_MAX_ITEMS) and, when the list named items it lacks, its own
    ITEM_LIST. Two nodes converge in one exchange; equal sets cost 40
    bytes per peer per round. The digest rides on a message of its own
    rather than on HEARTBEAT so the heartbeat stays a fixed, small
    liveness frame and older builds that ignore unknown bodies are not
    disturbed.

    Effects of a revocation: the subject is marked revoked with its cut
    (ms_members: cuts of several revocations intersect), our link to it
    is closed and its key denied at ZAP (iface.revoke: ms_mesh_revoke),
    its heartbeats are ignored (the node checks ms_members_is_member:
    its claims expire after the TTL), its records above the cut stay
    stored but the store stops counting them (ms_store_put_item
    re-derives the tasks they touch) and the lease table no longer takes
    its claims (iface.revoked: the node's lease feed forgets and reloads
    them). Expiry needs no item: ms_mesh_tick closes a link whose
    certificate expired; the records stay acceptable.

    Why a class of its own rather than more of ms_items: ms_items is the
    set (bytes by digest, the digest of the set, the difference of two
    digest lists), with no I/O and tested as such; this class is what a
    node does with it: the three wire messages, the store (durable items,
    quarantine clears, operators), the members table and the mesh
    (revocations), the list rate limit per peer, the API's two text
    forms, and the counters. Kept apart, the set stays a value container
    a tool or a test can use without a store, a mesh or a members table.

    What it owns: the set (between ms_item_sync_join and
    ms_item_sync_leave), a copy of the pool authority's key (the same
    span), the time of the next digest round, when each peer was last
    sent a list, and the counters (ms_item_sync_stats: the node's
    authority_items* and revocations_applied_total). It borrows the store
    (for its whole life) and the members table (between join and leave).
    What it needs of the node goes through ms_item_sync_iface_t; it never
    includes ms_node.h or calls into it.

    Threads: one instance belongs to the node's loop thread.
*/
#ifndef MS_ITEM_SYNC_H
#define MS_ITEM_SYNC_H

#include "ms_cert.h"
#include "ms_err.h"
#include "ms_items.h"
#include "ms_members.h"
#include "ms_store.h"
#include "ms_wire.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_item_sync ms_item_sync_t;

#define MS_ITEM_SYNC_ID_BYTES 32      // node ids, keys, digests
#define MS_ITEM_SYNC_ROUND_MS 2000    // ITEM_DIGEST to every linked peer
#define MS_ITEM_SYNC_LIST_GAP_MS 1000 // at most one ITEM_LIST per peer per gap
#define MS_ITEM_SYNC_MAX_PUSH 64      // peers an item is pushed to at most

//  What the class needs of its node. Every function gets ARG and is
//  called on the loop thread from inside the class's functions. A NULL
//  function does nothing (active_peers: none; revoke: see below).
typedef struct {
    void *arg;
    //  Send ENV (borrowed for the call) to the linked peer TO. Errors are
    //  the node's to ignore: the next round tries again.
    void (*send)(void *arg, const uint8_t to[MS_ITEM_SYNC_ID_BYTES],
                 const ms_wire_envelope_t *env);
    //  The push targets: up to MAX linked, not dead peers into OUT.
    //  Returns how many.
    int (*active_peers)(void *arg, uint8_t (*out)[MS_ITEM_SYNC_ID_BYTES],
                        int max);
    //  Close our link to SUBJECT (another node) and deny its key for good:
    //  the mesh (ms_mesh_revoke), which marks it revoked with CUT in the
    //  members table the node joined with. NULL function: the class marks
    //  it revoked in the members table itself (ms_members_revoke), as it
    //  always does for a revocation of this node.
    void (*revoke)(void *arg, const uint8_t subject[MS_ITEM_SYNC_ID_BYTES],
                   const ms_members_cut_t *cut);
    //  A revocation of SUBJECT was applied (SELF_REVOKED: of this node).
    //  For another node, the node forgets what its lease table knows of
    //  SUBJECT and loads back the claims that still count; either way the
    //  work changed (the scheduler looks again).
    void (*revoked)(void *arg, const uint8_t subject[MS_ITEM_SYNC_ID_BYTES],
                    bool self_revoked);
} ms_item_sync_iface_t;

//  Settings.
typedef struct {
    ms_store_t *store; // the node's store (borrowed; it outlives the class):
                       // items, quarantine clears, operators
    uint8_t node_pk[MS_ITEM_SYNC_ID_BYTES]; // this node's id
} ms_item_sync_config_t;

//  Counters and the gauge (ms_item_sync_stats).
typedef struct {
    uint64_t n_added;       // items new here (authority_items_added_total)
    uint64_t n_refused;     // items refused: check, API text
                            // (authority_items_refused_total)
    uint64_t n_revocations; // revocations applied (revocations_applied_total)
    size_t n_items;         // items held now (authority_items; 0 when not
                            // joined)
} ms_item_sync_stats_t;

//  Make the class with CFG and IFACE (copied), not joined: it holds no
//  set and answers no message until ms_item_sync_join. Caller owns the
//  result; free it with ms_item_sync_destroy(). NULL only when memory
//  runs out.
ms_item_sync_t *ms_item_sync_new(const ms_item_sync_config_t *cfg,
                                 const ms_item_sync_iface_t *iface);

//  Free it (the set too; the store and members table are not the
//  class's). NULL-safe; nulls *self_p.
void ms_item_sync_destroy(ms_item_sync_t **self_p);

//  The node joined its pool. With CHAIN (ours, of a pool with an
//  authority whose key is AUTHORITY_PK, MS_CERT_KEY_BYTES, copied): make
//  the set, load the store's items into it (each checked again, since a
//  store is not a signature: a bad one is logged on stderr and skipped;
//  each good one held and applied to MEMBERS), and add our own chain as
//  an item (kept, not pushed). MEMBERS (borrowed until
//  ms_item_sync_leave or destroy) is the table the items apply to.
//  CHAIN NULL (an open pool): nothing, MS_OK, not joined. Returns MS_OK;
//  MS_ERR_NOMEM; the store's errors reading its items. On an error the
//  class is not joined.
int ms_item_sync_join(ms_item_sync_t *self, ms_members_t *members,
                      const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                      const ms_cert_chain_t *chain);

//  Undo the join (the node's join failed and it is alone again): the set
//  is freed, the members table and the key forgotten. The counters and
//  the per-peer list times stay. NULL-safe in effect: does nothing when
//  not joined.
void ms_item_sync_leave(ms_item_sync_t *self);

//  ITEM_DIGEST, ITEM_LIST or ITEMS (ENV, borrowed) from the linked peer
//  FROM at NOW_MS (monotonic ms): a digest that differs from ours is
//  answered with our list (rate-limited per peer); a list with the items
//  it lacks (ITEMS) and, when it names items we lack, our list; each of
//  ITEMS is checked, kept, applied and pushed to the other linked peers
//  (a bad one is counted in n_refused, the first 16 logged on stderr).
//  Does nothing when not joined (an open pool has no items) or for
//  another body.
void ms_item_sync_on_message(ms_item_sync_t *self,
                             const uint8_t from[MS_ITEM_SYNC_ID_BYTES],
                             const ms_wire_envelope_t *env, int64_t now_ms);

//  The link to ID came up (alive and linked, not before): keep its chain
//  from MEMBERS as an item (pushed when new), and send it our digest at
//  once. Does nothing when not joined.
void ms_item_sync_link_up(ms_item_sync_t *self,
                          const uint8_t id[MS_ITEM_SYNC_ID_BYTES]);

//  Timed: at NOW_MS (monotonic ms) at or past the round's time, send
//  ITEM_DIGEST to every push target (iface.active_peers) and set the
//  next round MS_ITEM_SYNC_ROUND_MS later. Does nothing when not joined.
void ms_item_sync_tick(ms_item_sync_t *self, int64_t now_ms);

//  An item posted to the API (TEXT, N bytes, not NUL-ended; trailing
//  blanks ignored): the text of an authority item file
//  ("meshsweep-authority-item-v1 BASE64") or a certificate bundle
//  ("meshsweep-cert-v1 AUTHORITY_HEX BASE64", which must name our
//  authority). Checked, kept, applied, pushed. *SUMMARY: JSON
//  {"digest", "type" ("certificate" or "authority-item"), "new"}; caller
//  frees it (free()); NULL when memory ran out. Returns MS_OK (new or
//  known); MS_ERR_INVALID (not one of the two forms, bad base64 or key:
//  diag); MS_ERR_UNTRUSTED (a bundle of another authority, or the
//  item's check); MS_ERR_UNSUPPORTED (not joined: no pool with an
//  authority); the errors of ms_items_check, of the store keeping it
//  and of ms_items_add (diag says which). Bad base64 and a foreign
//  bundle count in n_refused, as every failed check does.
int ms_item_sync_post(ms_item_sync_t *self, const char *text, size_t n,
                      char **summary, ms_diag_t *diag);

//  Copy the counters and the gauge into *OUT.
void ms_item_sync_stats(const ms_item_sync_t *self, ms_item_sync_stats_t *out);

#endif
