/*  =========================================================================
    ms_lease_table - the claim rule: slot holders, epochs, lease expiry

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Pure logic (no I/O, no store, no sockets) for DESIGN.md "Work, claims
    and leases". The node feeds it with what it learns, in any order:

      - claim records (task, slot, epoch, node) and release records, as
        they land in the store, whoever wrote them;
      - finishes: a node's result for a task landed (the slot is done);
      - a task verified / ended (no slot of it may be claimed any more);
      - heartbeats heard DIRECTLY from a peer, listing its live claims.

    and asks it: who holds this slot, is that lease live, may I claim it
    (and with which epoch), which of my claims must I renew in my next
    heartbeat, which of my claims were outranked (stop those workers),
    which leases expired, and when the next one will.

    The holder of a slot and whether the slot is done are pure functions
    of the record set (claims, releases, finishes, done tasks): every node
    that holds the same records agrees, whatever the arrival order.
    Liveness is not a function of records: an observer keeps a peer's
    lease alive while it hears that peer's heartbeats list the claim within
    the TTL, by the observer's own monotonic clock; the self node judges
    its own leases by CLOCK_BOOTTIME (suspend counts). Both clocks are read
    through ms_lease_clock_t, which tests replace.

    Ids are 32 raw bytes (task ids and node ids are BLAKE2b-256 digests /
    public keys); the table copies what it is given.

    Thread rule: a table belongs to one thread (the node actor).
*/
#ifndef MS_LEASE_TABLE_H
#define MS_LEASE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_LEASE_ID_BYTES 32         // task id and node id size
#define MS_LEASE_SLOT_ANY UINT32_MAX // ms_lease_table_finish: any slot

typedef struct ms_lease_table ms_lease_table_t;

//  One claim: the content of a claim (or release) record. A plain value,
//  copy it freely. Slots count from 0; epochs from 1 (0 is never used).
typedef struct {
    uint8_t task_id[MS_LEASE_ID_BYTES]; // the task claimed
    uint32_t slot;                      // replica slot of the task, 0..
    uint32_t epoch;                     // highest seen on the slot + 1
    uint8_t node_id[MS_LEASE_ID_BYTES]; // the claiming node
} ms_claim_t;

//  The clocks the table reads, in milliseconds. mono_ms: CLOCK_MONOTONIC
//  (the observer's clock for peers' leases); boot_ms: CLOCK_BOOTTIME (the
//  self node's own leases; it keeps counting while the machine is
//  suspended). Tests pass their own functions and ctx.
typedef struct {
    int64_t (*mono_ms)(void *ctx); // CLOCK_MONOTONIC, ms
    int64_t (*boot_ms)(void *ctx); // CLOCK_BOOTTIME, ms
    void *ctx;                     // passed to both
} ms_lease_clock_t;

//  The system clocks (clock_gettime CLOCK_MONOTONIC and CLOCK_BOOTTIME).
//  Returns a pointer to a static, read-only clock. Thread-safe.
const ms_lease_clock_t *ms_lease_clock_system(void);

//  Check a lease configuration (DESIGN.md "Defaults": lease_ttl_ms,
//  heartbeat_ms). Both must be > 0 and the renew interval must be under
//  half the TTL (2 * heartbeat_ms < ttl_ms), so that one lost heartbeat
//  never lets a lease expire. Returns MS_OK, or MS_ERR_INVALID with diag
//  (may be NULL) where = "heartbeat_ms" or "lease_ttl_ms" and the reason.
int ms_lease_check_config(int64_t heartbeat_ms, int64_t ttl_ms,
                          ms_diag_t *diag);

//  Create an empty table for the node self_id, with lease TTL ttl_ms
//  (> 0) and the given clock (NULL: ms_lease_clock_system(); a non-NULL
//  clock is borrowed and must outlive the table). Caller owns the result;
//  free it with ms_lease_table_destroy(). Returns NULL only when memory
//  runs out.
ms_lease_table_t *ms_lease_table_new(const uint8_t self_id[MS_LEASE_ID_BYTES],
                                     int64_t ttl_ms,
                                     const ms_lease_clock_t *clock);

//  Destroy the table and set *self_p to NULL. NULL-safe.
void ms_lease_table_destroy(ms_lease_table_t **self_p);

//  Add a claim record (any node's, own included, in any order; a
//  duplicate is ignored). A peer's claim is taken as live for one TTL
//  from the first time this table sees it (its holder's own signed
//  statement that it just started), then only while its heartbeats list
//  it. An own claim added here (e.g. read back from the store after a
//  restart) is NOT live: only ms_lease_table_claim() starts an own lease
//  in this process. Returns MS_OK; MS_ERR_INVALID when slot is
//  MS_LEASE_SLOT_ANY or epoch is 0 (a malformed record: refuse it);
//  MS_ERR_NOMEM.
int ms_lease_table_add_claim(ms_lease_table_t *self, const ms_claim_t *claim);

//  Add a release record: the claim (task, slot, epoch, node) is released
//  (it may arrive before the claim it releases). Releases exactly that
//  claim, not a later claim of the same node with another epoch. Returns
//  MS_OK; MS_ERR_INVALID as ms_lease_table_add_claim; MS_ERR_NOMEM.
int ms_lease_table_add_release(ms_lease_table_t *self, const ms_claim_t *claim);

//  A result of node_id for task_id landed (valid, from a member in good
//  standing: the caller decides). slot names the slot the result was
//  produced for, or MS_LEASE_SLOT_ANY when the result does not say: it
//  then finishes every unreleased claim of node_id on the task. A
//  finished claim never holds its slot; the slot is done (never claimed
//  again) once any claim on it is finished, or a finish names it. Returns
//  MS_OK; MS_ERR_NOMEM.
int ms_lease_table_finish(ms_lease_table_t *self,
                          const uint8_t task_id[MS_LEASE_ID_BYTES],
                          uint32_t slot,
                          const uint8_t node_id[MS_LEASE_ID_BYTES]);

//  The task needs no more work (verified, failed, cancelled): no slot of
//  it may be claimed, and own claims on it are reported by
//  ms_lease_table_outranked(). Returns MS_OK; MS_ERR_NOMEM.
int ms_lease_table_set_task_done(ms_lease_table_t *self,
                                 const uint8_t task_id[MS_LEASE_ID_BYTES]);

//  A heartbeat heard DIRECTLY from node_id (never relay a third party's
//  heartbeat here) listing its n live claims (live may be NULL when n is
//  0). Each listed claim whose node_id equals the sender is kept alive
//  from now (mono clock), even if its record has not arrived yet; listed
//  claims of other nodes are ignored (a node vouches only for itself).
//  Claims not listed are not renewed (they expire after the TTL). A
//  heartbeat naming the self node is ignored (use ms_lease_table_renew).
//  Returns MS_OK; MS_ERR_NOMEM.
int ms_lease_table_heartbeat(ms_lease_table_t *self,
                             const uint8_t node_id[MS_LEASE_ID_BYTES],
                             const ms_claim_t *live, size_t n);

//  The mesh declared node_id dead (its link's failure detector): its
//  leases expire now; a later heartbeat from it revives what it lists.
//  Returns MS_OK (also when the node is unknown).
int ms_lease_table_node_dead(ms_lease_table_t *self,
                             const uint8_t node_id[MS_LEASE_ID_BYTES]);

//  Forget every fact about node_id: its claims, releases and the results
//  that finished its claims (a revoked node, DESIGN.md "Records and
//  anti-entropy": its records stop counting for claims and results, so
//  the slots it held or finished are open again; the caller adds back
//  what still counts within the revocation's cut). The self node is
//  never forgotten. Returns the number of facts dropped.
size_t ms_lease_table_forget_node(ms_lease_table_t *self,
                                  const uint8_t node_id[MS_LEASE_ID_BYTES]);

//  The holder of (task_id, slot): among the slot's claims that are
//  neither released nor finished, the top one by epoch (higher first),
//  then by H(task_id || slot (4 bytes, big-endian) || node_id) (lower
//  first, BLAKE2b-256 compared as a big-endian number). A pure function
//  of the record set. Writes it to *holder (may be NULL) and whether its
//  lease is live in this table's view to *live (may be NULL): a peer's
//  by the mono clock and direct heartbeats, the self node's by the boot
//  clock and ms_lease_table_claim/renew. Returns MS_OK; MS_ERR_NOTFOUND
//  when the slot has no holder (outputs untouched).
int ms_lease_table_holder(ms_lease_table_t *self,
                          const uint8_t task_id[MS_LEASE_ID_BYTES],
                          uint32_t slot, ms_claim_t *holder, bool *live);

//  True when the slot is done: its task is done, or a result finished a
//  claim on it (see ms_lease_table_finish). A pure function of the
//  record set.
bool ms_lease_table_slot_done(ms_lease_table_t *self,
                              const uint8_t task_id[MS_LEASE_ID_BYTES],
                              uint32_t slot);

//  The highest epoch seen on the slot in claim and release records, 0 if
//  none (heartbeats alone do not count: the epoch follows the records).
uint32_t ms_lease_table_max_epoch(ms_lease_table_t *self,
                                  const uint8_t task_id[MS_LEASE_ID_BYTES],
                                  uint32_t slot);

//  May the self node claim (task_id, slot) now? True when all of
//  DESIGN.md's conditions hold: the slot is not done; self holds no
//  other slot of the task (it is not the holder of one) and has no
//  result for it (none finished in this table, and self_has_result is
//  false: the caller passes what its store knows, its operator's results
//  included); and the slot's holder is absent or expired in self's view
//  (an own holder counts as expired when its boot-clock lease lapsed, so
//  a restarted or woken node may take its own slot back). Then *epoch
//  (may be NULL) = highest epoch seen on the slot + 1.
bool ms_lease_table_can_claim(ms_lease_table_t *self,
                              const uint8_t task_id[MS_LEASE_ID_BYTES],
                              uint32_t slot, bool self_has_result,
                              uint32_t *epoch);

//  Choose which slot of task_id (slots 0..n_slots-1, the slots the task
//  needs now) the self node may claim: the lowest slot that
//  ms_lease_table_can_claim allows. Because self may not claim a second
//  slot of a task, a node that still holds a slot by the records (a
//  restart, a wake from suspend: its lease lapsed) gets that slot back.
//  Writes *slot and *epoch (either may be NULL). Returns MS_OK;
//  MS_ERR_NOTFOUND when no slot may be claimed now.
int ms_lease_table_pick_slot(ms_lease_table_t *self,
                             const uint8_t task_id[MS_LEASE_ID_BYTES],
                             uint32_t n_slots, bool self_has_result,
                             uint32_t *slot, uint32_t *epoch);

//  Claim (task_id, slot) for the self node when ms_lease_table_can_claim
//  allows it: adds the claim with epoch = highest seen + 1, starts its
//  lease by the boot clock, and writes it to *out for the caller to sign
//  and publish as a claim record (its return through add_claim is a
//  duplicate). Older own claims on the slot are dropped silently. The
//  caller then settles (node/actor/ms_node.c) and starts only if
//  ms_lease_table_holder still names this claim. Returns MS_OK;
//  MS_ERR_CONFLICT when the rule refuses (out untouched); MS_ERR_NOMEM.
int ms_lease_table_claim(ms_lease_table_t *self,
                         const uint8_t task_id[MS_LEASE_ID_BYTES],
                         uint32_t slot, bool self_has_result, ms_claim_t *out);

//  Renew the self node's leases before sending a heartbeat: every own
//  claim started in this process that still holds its slot and whose
//  lease has not lapsed by the boot clock is renewed from now (boot
//  clock) and written to out (up to max; out may be NULL when max is 0).
//  A lease that lapsed (suspend, SIGSTOP, a stalled loop) is NOT renewed:
//  it is reported by ms_lease_table_expire() and the node must re-check
//  (ms_lease_table_can_claim / _claim) before it goes on. *n_out (may be NULL)
//  = number of live own claims. Returns MS_OK; MS_ERR_RANGE when more than max
//  are live (all are renewed, the first max written, *n_out = the full count).
int ms_lease_table_renew(ms_lease_table_t *self, ms_claim_t *out, size_t max,
                         size_t *n_out);

//  Release the self node's claim on (task_id, slot) (graceful shutdown,
//  pause, failure): marks it released and writes it to *out (may be
//  NULL) for the caller to publish as a release record. Returns MS_OK;
//  MS_ERR_NOTFOUND when self has no unreleased claim on the slot.
int ms_lease_table_release(ms_lease_table_t *self,
                           const uint8_t task_id[MS_LEASE_ID_BYTES],
                           uint32_t slot, ms_claim_t *out);

//  Own claims started in this process that lost their slot since the
//  last call: another claim outranks them, or the slot or task became
//  done by another node's result. Each is reported once; the node stops
//  those workers (a result finished anyway is an extra replica). Writes
//  up to max to out; returns how many were written (call again while it
//  returns max).
size_t ms_lease_table_outranked(ms_lease_table_t *self, ms_claim_t *out,
                                size_t max);

//  Holders whose lease went from live to expired since the last call (a
//  peer's: no direct heartbeat within the TTL by the mono clock; the
//  self node's: lapsed by the boot clock, or never started in this
//  process, e.g. read back after a restart). Their slots are claimable
//  again (unless done). An own claim reported here is no longer renewed:
//  the node stops its worker unless it takes the slot back with
//  ms_lease_table_claim (epoch + 1; it resumes from its checkpoint). Each
//  expiry is reported once (again if the lease is revived and expires anew).
//  Writes up to max to out; returns how many were written (call again while it
//  returns max).
size_t ms_lease_table_expire(ms_lease_table_t *self, ms_claim_t *out,
                             size_t max);

//  The earliest mono-clock time (ms) at which a live holder's lease will
//  expire (an own lease's boot deadline is converted to the mono clock),
//  for the node loop's poll timeout; INT64_MAX when no lease is live. A
//  lease that expired but was not yet reported by ms_lease_table_expire()
//  gives the current mono time: call expire when the deadline is reached.
int64_t ms_lease_table_next_expiry(ms_lease_table_t *self);

//  Number of claims held in the table (all nodes, all states).
size_t ms_lease_table_size(ms_lease_table_t *self);

#endif
