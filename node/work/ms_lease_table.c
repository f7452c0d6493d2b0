/*  =========================================================================
    ms_lease_table - the claim rule: slot holders, epochs, lease expiry

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The conflict rule (DESIGN.md "Work, claims and leases").

    Nodes claim slots of tasks with no coordinator and no consensus: a
    claim is a record (task, slot, epoch, node) that spreads by gossip and
    reaches each node in its own order, perhaps after a partition heals.
    So the question "who holds this slot" must have an answer that does
    not depend on arrival order. The table keeps, per slot, a set of facts
    keyed by (epoch, node): "a claim record arrived", "a release record
    arrived" (a release may come before its claim), plus per slot or task
    the nodes whose result landed and whether the task is done. From those
    sets alone:

      holder(slot) = max over claims c on the slot that are neither
                     released nor finished, by (c.epoch, then the LOWER
                     H(task || slot_be32 || c.node))
      done(slot)   = task done, or some result finished a claim on it

    Sets only grow and both are functions of the sets, so two nodes with
    the same records agree (the tests feed every permutation). The hash
    tie-break, rather than node-id order, keeps one node from winning
    every tie of a concurrent claim (case 2 of cases/README.md: nodes
    started together claim the same slot with the same epoch; one wins
    everywhere, the rest see themselves outranked and stop).

    Epochs: a node claims with epoch = highest seen on the slot + 1, so a
    claim made after seeing another always outranks it: the holder woken
    from SIGSTOP or suspend finds the newer claim on top and stops, and a
    result it finishes anyway is an extra replica (safety lives in result
    counting, not here). Two claims made blind (same epoch) are ordered by
    the hash. A node never claims a second slot of a task it holds or has
    a result for, so leases never make one node fill two replicas.

    Liveness is the one thing that is not a function of the records, and
    it is kept out of them (never stored): an observer keeps a peer's
    lease alive while heartbeats heard DIRECTLY from that peer list the
    claim within the TTL, by the observer's own CLOCK_MONOTONIC. Relayed
    word about a third node's liveness is never taken: a node cut off
    from the holder must be free to take the slot over even if a relay
    still believes in it. A claim record is, however, its holder's own
    signed statement that it just started, so the first sight of a peer's
    claim counts as one heartbeat; the worst this costs is one TTL of
    delay before a dead node's old claim can be taken over, and it stops
    a fresh claim from being trampled before its first heartbeat. The self
    node judges its own lease by CLOCK_BOOTTIME, which runs through
    suspend: a laptop that slept past its TTL must not go on as if it
    still held the slot (observers' monotonic clocks did run). An own
    claim read back from the store after a restart has no lease in this
    process until it is claimed again.

    Not done here, on purpose: waiting settle_ms after a claim (the node's
    loop does it, then asks ms_lease_table_holder), reading or writing
    the store, signing, networking. Keeping the table pure lets the unit
    tests drive every order and every clock.

    Storage: an open-addressing map task_id -> task (SipHash-2-4 with a
    random key, so crafted task ids cannot pile up in one bucket), each
    task a short array of slots, each slot a short array of facts. The
    periodic questions (renew, outranked, expire, next expiry) walk only
    a watch list: tasks touched since they last went quiet (no own claim
    running and no live, unreported holder), so a pool that has finished
    100,000 tasks does not scan them on every loop turn.
*/
#include "ms_lease_table.h"

#include "ms_claim_rank.h"
#include "ms_clock.h"

#include "ms_hash.h"

#include <assert.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define S_ID MS_LEASE_ID_BYTES

//  One fact about a claim (epoch, node) on a slot.
typedef struct {
    uint32_t epoch;          // claim epoch
    uint8_t node_id[S_ID];   // claiming node
    uint8_t rank_hash[S_ID]; // H(task || slot_be32 || node), lower wins
    bool has_claim;          // its claim record arrived
    bool released;           // its release record arrived
    bool heard;              // heard_at is set (first sight or heartbeat)
    int64_t heard_at;        // mono ms of the last sight or heartbeat
    bool own_active;         // an own claim started in this process
    int64_t renewed_at;      // boot ms of its last own renewal
    bool expired_reported;   // expiry reported since last revived
} s_entry_t;

//  One slot of a task.
typedef struct {
    uint32_t slot;             // slot number
    s_entry_t *entries;        // claim facts
    size_t n_entries;          // used
    size_t cap_entries;        // allocated
    uint8_t (*finished)[S_ID]; // nodes whose result names this slot
    size_t n_finished;         // used
    size_t cap_finished;       // allocated
} s_slot_t;

//  One task.
typedef struct {
    uint8_t task_id[S_ID];         // the task
    bool done;                     // no slot may be claimed
    bool watched;                  // on the watch list
    s_slot_t *slots;               // its slots
    size_t n_slots;                // used
    size_t cap_slots;              // allocated
    uint8_t (*finished_any)[S_ID]; // nodes whose result names no slot
    size_t n_any;                  // used
    size_t cap_any;                // allocated
} s_task_t;

struct ms_lease_table {
    uint8_t self_id[S_ID];                      // the self node
    int64_t ttl_ms;                             // lease time to live, ms
    const ms_lease_clock_t *clock;              // borrowed
    uint8_t map_key[crypto_shorthash_KEYBYTES]; // SipHash key
    s_task_t **map;                             // open addressing, NULL = empty
    size_t map_cap;                             // power of two
    size_t n_tasks;                             // tasks in the map
    s_task_t **watch;                           // tasks that may need attention
    size_t n_watch;                             // used
    size_t cap_watch;                           // allocated
    size_t n_claims;                            // facts with has_claim
};

//  --------------------------------------------------------------------------
//  The system's clocks (core/ms_clock), as this table's clock reads them.

static int64_t
s_sys_mono_ms(void *ctx)
{
    (void) ctx;
    return ms_clock_mono_ms();
}

static int64_t
s_sys_boot_ms(void *ctx)
{
    (void) ctx;
    return ms_clock_boot_ms();
}

static const ms_lease_clock_t s_system_clock = {s_sys_mono_ms, s_sys_boot_ms,
                                                NULL};

//  --------------------------------------------------------------------------
//  The system clocks.

const ms_lease_clock_t *
ms_lease_clock_system(void)
{
    return &s_system_clock;
}

//  --------------------------------------------------------------------------
//  Check heartbeat_ms and lease_ttl_ms.

int
ms_lease_check_config(int64_t heartbeat_ms, int64_t ttl_ms, ms_diag_t *diag)
{
    if (ttl_ms <= 0)
        return ms_diag_set(diag, "lease_ttl_ms",
                           "must be a positive number of ms, got %lld",
                           (long long) ttl_ms);
    if (heartbeat_ms <= 0)
        return ms_diag_set(diag, "heartbeat_ms",
                           "must be a positive number of ms, got %lld",
                           (long long) heartbeat_ms);
    if (heartbeat_ms >= ttl_ms / 2 + (ttl_ms % 2)) {
        //  2 * heartbeat_ms >= ttl_ms, written without overflow
        return ms_diag_set(diag, "heartbeat_ms",
                           "%lld must be under half of lease_ttl_ms (%lld): "
                           "one lost heartbeat would let a live lease expire",
                           (long long) heartbeat_ms, (long long) ttl_ms);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Monotonic now, ms.

static int64_t
s_mono(const ms_lease_table_t *self)
{
    return self->clock->mono_ms(self->clock->ctx);
}

//  --------------------------------------------------------------------------
//  Boot-clock now, ms.

static int64_t
s_boot(const ms_lease_table_t *self)
{
    return self->clock->boot_ms(self->clock->ctx);
}

//  --------------------------------------------------------------------------
//  Grow an array to hold at least need items; false when out of memory.

static bool
s_grow(void **items, size_t *cap, size_t need, size_t item_size)
{
    if (need <= *cap)
        return true;
    size_t cap_new = *cap ? *cap * 2 : 4;
    while (cap_new < need)
        cap_new *= 2;
    void *p = realloc(*items, cap_new * item_size);
    if (!p)
        return false;
    *items = p;
    *cap = cap_new;
    return true;
}

//  --------------------------------------------------------------------------
//  Bucket of a task id in the map.

static size_t
s_bucket(const ms_lease_table_t *self, const uint8_t task_id[S_ID])
{
    uint8_t h[crypto_shorthash_BYTES];
    crypto_shorthash(h, task_id, S_ID, self->map_key);
    uint64_t v;
    memcpy(&v, h, sizeof v);
    return (size_t) v & (self->map_cap - 1);
}

//  --------------------------------------------------------------------------
//  Find a task; NULL when unknown.

static s_task_t *
s_task_find(const ms_lease_table_t *self, const uint8_t task_id[S_ID])
{
    size_t i = s_bucket(self, task_id);
    while (self->map[i]) {
        if (memcmp(self->map[i]->task_id, task_id, S_ID) == 0)
            return self->map[i];
        i = (i + 1) & (self->map_cap - 1);
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Double the map; false when out of memory (the map is unchanged).

static bool
s_map_grow(ms_lease_table_t *self)
{
    size_t cap_old = self->map_cap;
    s_task_t **old = self->map;
    self->map = calloc(cap_old * 2, sizeof *self->map);
    if (!self->map) {
        self->map = old;
        return false;
    }
    self->map_cap = cap_old * 2;
    for (size_t i = 0; i < cap_old; i++) {
        if (!old[i])
            continue;
        size_t j = s_bucket(self, old[i]->task_id);
        while (self->map[j])
            j = (j + 1) & (self->map_cap - 1);
        self->map[j] = old[i];
    }
    free(old);
    return true;
}

//  --------------------------------------------------------------------------
//  Find or add a task; NULL when out of memory.

static s_task_t *
s_task_get(ms_lease_table_t *self, const uint8_t task_id[S_ID])
{
    s_task_t *task = s_task_find(self, task_id);
    if (task)
        return task;
    if ((self->n_tasks + 1) * 2 > self->map_cap && !s_map_grow(self))
        return NULL;
    task = calloc(1, sizeof *task);
    if (!task)
        return NULL;
    memcpy(task->task_id, task_id, S_ID);
    size_t i = s_bucket(self, task_id);
    while (self->map[i])
        i = (i + 1) & (self->map_cap - 1);
    self->map[i] = task;
    self->n_tasks++;
    return task;
}

//  --------------------------------------------------------------------------
//  Put a task on the watch list; false when out of memory.

static bool
s_watch(ms_lease_table_t *self, s_task_t *task)
{
    if (task->watched)
        return true;
    if (!s_grow((void **) &self->watch, &self->cap_watch, self->n_watch + 1,
                sizeof *self->watch))
        return false;
    self->watch[self->n_watch++] = task;
    task->watched = true;
    return true;
}

//  --------------------------------------------------------------------------
//  Find a slot of a task; NULL when unknown.

static s_slot_t *
s_slot_find(const s_task_t *task, uint32_t slot)
{
    for (size_t i = 0; task && i < task->n_slots; i++)
        if (task->slots[i].slot == slot)
            return &task->slots[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Find or add a slot; NULL when out of memory.

static s_slot_t *
s_slot_get(s_task_t *task, uint32_t slot)
{
    s_slot_t *s = s_slot_find(task, slot);
    if (s)
        return s;
    if (!s_grow((void **) &task->slots, &task->cap_slots, task->n_slots + 1,
                sizeof *task->slots))
        return NULL;
    s = &task->slots[task->n_slots++];
    memset(s, 0, sizeof *s);
    s->slot = slot;
    return s;
}

//  --------------------------------------------------------------------------
//  Find or add the fact (epoch, node) on a slot; NULL when out of memory.

static s_entry_t *
s_entry_get(s_task_t *task, s_slot_t *slot, uint32_t epoch,
            const uint8_t node_id[S_ID])
{
    for (size_t i = 0; i < slot->n_entries; i++) {
        s_entry_t *e = &slot->entries[i];
        if (e->epoch == epoch && memcmp(e->node_id, node_id, S_ID) == 0)
            return e;
    }
    if (!s_grow((void **) &slot->entries, &slot->cap_entries,
                slot->n_entries + 1, sizeof *slot->entries))
        return NULL;
    s_entry_t *e = &slot->entries[slot->n_entries++];
    memset(e, 0, sizeof *e);
    e->epoch = epoch;
    memcpy(e->node_id, node_id, S_ID);
    ms_claim_rank_hash(task->task_id, slot->slot, node_id, e->rank_hash);
    return e;
}

//  --------------------------------------------------------------------------
//  True when node_id is in the list.

static bool
s_list_has(const uint8_t (*list)[S_ID], size_t n, const uint8_t node_id[S_ID])
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(list[i], node_id, S_ID) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  True when a result finished this claim fact.

static bool
s_entry_finished(const s_task_t *task, const s_slot_t *slot, const s_entry_t *e)
{
    if (s_list_has(slot->finished, slot->n_finished, e->node_id))
        return true;
    return !e->released &&
           s_list_has(task->finished_any, task->n_any, e->node_id);
}

//  --------------------------------------------------------------------------
//  True when a outranks b: higher epoch, then lower rank hash.

static bool
s_claim_wins(const s_entry_t *a, const s_entry_t *b)
{
    return ms_claim_rank_before(a->epoch, a->rank_hash, b->epoch, b->rank_hash);
}

//  --------------------------------------------------------------------------
//  The holder of a slot (pure function of the facts); NULL when none.

static s_entry_t *
s_holder(const s_task_t *task, const s_slot_t *slot)
{
    s_entry_t *best = NULL;
    for (size_t i = 0; slot && i < slot->n_entries; i++) {
        s_entry_t *e = &slot->entries[i];
        if (!e->has_claim || e->released || s_entry_finished(task, slot, e))
            continue;
        if (!best || s_claim_wins(e, best))
            best = e;
    }
    return best;
}

//  --------------------------------------------------------------------------
//  True when the slot is done (pure function of the facts).

static bool
s_slot_done(const s_task_t *task, const s_slot_t *slot)
{
    if (task->done)
        return true;
    if (!slot)
        return false;
    if (slot->n_finished > 0)
        return true;
    for (size_t i = 0; i < slot->n_entries; i++) {
        const s_entry_t *e = &slot->entries[i];
        if (e->has_claim && !e->released &&
            s_list_has(task->finished_any, task->n_any, e->node_id))
            return true;
    }
    return false;
}

//  --------------------------------------------------------------------------
//  True when the fact names the self node.

static bool
s_is_self(const ms_lease_table_t *self, const s_entry_t *e)
{
    return memcmp(e->node_id, self->self_id, S_ID) == 0;
}

//  --------------------------------------------------------------------------
//  True when the fact's lease is live in this table's view.

static bool
s_live(const ms_lease_table_t *self, const s_entry_t *e, int64_t mono,
       int64_t boot)
{
    if (s_is_self(self, e))
        return e->own_active && boot - e->renewed_at < self->ttl_ms;
    return e->heard && mono - e->heard_at < self->ttl_ms;
}

//  --------------------------------------------------------------------------
//  Copy a fact out as a claim.

static void
s_claim_out(const s_task_t *task, const s_slot_t *slot, const s_entry_t *e,
            ms_claim_t *out)
{
    memcpy(out->task_id, task->task_id, S_ID);
    out->slot = slot->slot;
    out->epoch = e->epoch;
    memcpy(out->node_id, e->node_id, S_ID);
}

//  --------------------------------------------------------------------------
//  Highest epoch of the slot's claim and release records, 0 if none.

static uint32_t
s_max_epoch(const s_slot_t *slot)
{
    uint32_t max = 0;
    for (size_t i = 0; slot && i < slot->n_entries; i++) {
        const s_entry_t *e = &slot->entries[i];
        //  records only: a heartbeat alone does not move the epoch
        if ((e->has_claim || e->released) && e->epoch > max)
            max = e->epoch;
    }
    return max;
}

//  --------------------------------------------------------------------------
//  True when the task needs no more attention from the periodic scans.

static bool
s_task_quiet(const s_task_t *task)
{
    for (size_t i = 0; i < task->n_slots; i++) {
        const s_slot_t *slot = &task->slots[i];
        for (size_t j = 0; j < slot->n_entries; j++)
            if (slot->entries[j].own_active)
                return false;
        if (s_slot_done(task, slot))
            continue;
        const s_entry_t *h = s_holder(task, slot);
        if (h && !h->expired_reported)
            return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Drop quiet tasks from the watch list.

static void
s_watch_compact(ms_lease_table_t *self)
{
    size_t k = 0;
    for (size_t i = 0; i < self->n_watch; i++) {
        s_task_t *task = self->watch[i];
        if (s_task_quiet(task))
            task->watched = false;
        else
            self->watch[k++] = task;
    }
    self->n_watch = k;
}

//  --------------------------------------------------------------------------
//  Create an empty table.

ms_lease_table_t *
ms_lease_table_new(const uint8_t self_id[MS_LEASE_ID_BYTES], int64_t ttl_ms,
                   const ms_lease_clock_t *clock)
{
    assert(self_id);
    assert(ttl_ms > 0);
    ms_lease_table_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    memcpy(self->self_id, self_id, S_ID);
    self->ttl_ms = ttl_ms;
    self->clock = clock ? clock : &s_system_clock;
    self->map_cap = 64;
    self->map = calloc(self->map_cap, sizeof *self->map);
    if (!self->map) {
        free(self);
        return NULL;
    }
    if (sodium_init() >= 0)
        randombytes_buf(self->map_key, sizeof self->map_key);
    return self;
}

//  --------------------------------------------------------------------------
//  Free a task and everything it holds.

static void
s_task_free(s_task_t *task)
{
    for (size_t i = 0; i < task->n_slots; i++) {
        free(task->slots[i].entries);
        free(task->slots[i].finished);
    }
    free(task->slots);
    free(task->finished_any);
    free(task);
}

//  --------------------------------------------------------------------------
//  Destroy the table.

void
ms_lease_table_destroy(ms_lease_table_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_lease_table_t *self = *self_p;
    for (size_t i = 0; i < self->map_cap; i++)
        if (self->map[i])
            s_task_free(self->map[i]);
    free(self->map);
    free(self->watch);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Look up (or create) the fact for a claim record; NULL when out of
//  memory. Puts the task on the watch list.

static s_entry_t *
s_fact(ms_lease_table_t *self, const ms_claim_t *claim, s_task_t **task_p,
       s_slot_t **slot_p)
{
    s_task_t *task = s_task_get(self, claim->task_id);
    if (!task)
        return NULL;
    s_slot_t *slot = s_slot_get(task, claim->slot);
    if (!slot || !s_watch(self, task))
        return NULL;
    s_entry_t *e = s_entry_get(task, slot, claim->epoch, claim->node_id);
    if (task_p)
        *task_p = task;
    if (slot_p)
        *slot_p = slot;
    return e;
}

//  --------------------------------------------------------------------------
//  Add a claim record.

int
ms_lease_table_add_claim(ms_lease_table_t *self, const ms_claim_t *claim)
{
    assert(self && claim);
    if (claim->slot == MS_LEASE_SLOT_ANY || claim->epoch == 0)
        return MS_ERR_INVALID;
    s_entry_t *e = s_fact(self, claim, NULL, NULL);
    if (!e)
        return MS_ERR_NOMEM;
    if (e->has_claim)
        return MS_OK;
    e->has_claim = true;
    self->n_claims++;
    if (!s_is_self(self, e) && !e->heard) {
        e->heard = true;
        e->heard_at = s_mono(self);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Add a release record.

int
ms_lease_table_add_release(ms_lease_table_t *self, const ms_claim_t *claim)
{
    assert(self && claim);
    if (claim->slot == MS_LEASE_SLOT_ANY || claim->epoch == 0)
        return MS_ERR_INVALID;
    s_entry_t *e = s_fact(self, claim, NULL, NULL);
    if (!e)
        return MS_ERR_NOMEM;
    e->released = true;
    e->own_active = false;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A result of node_id landed for the task (and slot, or any slot).

int
ms_lease_table_finish(ms_lease_table_t *self,
                      const uint8_t task_id[MS_LEASE_ID_BYTES], uint32_t slot,
                      const uint8_t node_id[MS_LEASE_ID_BYTES])
{
    assert(self && task_id && node_id);
    s_task_t *task = s_task_get(self, task_id);
    if (!task || !s_watch(self, task))
        return MS_ERR_NOMEM;
    uint8_t(**list)[S_ID];
    size_t *n, *cap;
    if (slot == MS_LEASE_SLOT_ANY) {
        list = &task->finished_any;
        n = &task->n_any;
        cap = &task->cap_any;
    } else {
        s_slot_t *s = s_slot_get(task, slot);
        if (!s)
            return MS_ERR_NOMEM;
        list = &s->finished;
        n = &s->n_finished;
        cap = &s->cap_finished;
    }
    if (s_list_has(*list, *n, node_id))
        return MS_OK;
    if (!s_grow((void **) list, cap, *n + 1, S_ID))
        return MS_ERR_NOMEM;
    memcpy((*list)[(*n)++], node_id, S_ID);
    //  An own claim finished by an own result ends quietly (not outranked).
    if (memcmp(node_id, self->self_id, S_ID) == 0) {
        for (size_t i = 0; i < task->n_slots; i++) {
            s_slot_t *s = &task->slots[i];
            for (size_t j = 0; j < s->n_entries; j++)
                if (s->entries[j].own_active &&
                    s_entry_finished(task, s, &s->entries[j]))
                    s->entries[j].own_active = false;
        }
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Mark a task done.

int
ms_lease_table_set_task_done(ms_lease_table_t *self,
                             const uint8_t task_id[MS_LEASE_ID_BYTES])
{
    assert(self && task_id);
    s_task_t *task = s_task_get(self, task_id);
    if (!task || !s_watch(self, task))
        return MS_ERR_NOMEM;
    task->done = true;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A heartbeat heard directly from node_id.

int
ms_lease_table_heartbeat(ms_lease_table_t *self,
                         const uint8_t node_id[MS_LEASE_ID_BYTES],
                         const ms_claim_t *live, size_t n)
{
    assert(self && node_id);
    if (memcmp(node_id, self->self_id, S_ID) == 0)
        return MS_OK;
    int64_t mono = s_mono(self);
    for (size_t i = 0; i < n; i++) {
        const ms_claim_t *c = &live[i];
        if (memcmp(c->node_id, node_id, S_ID) != 0 ||
            c->slot == MS_LEASE_SLOT_ANY || c->epoch == 0)
            continue; // a node vouches only for its own claims
        s_entry_t *e = s_fact(self, c, NULL, NULL);
        if (!e)
            return MS_ERR_NOMEM;
        e->heard = true;
        e->heard_at = mono;
        e->expired_reported = false;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Expire every lease of a node now.

int
ms_lease_table_node_dead(ms_lease_table_t *self,
                         const uint8_t node_id[MS_LEASE_ID_BYTES])
{
    assert(self && node_id);
    if (memcmp(node_id, self->self_id, S_ID) == 0)
        return MS_OK;
    int64_t dead_at = s_mono(self) - self->ttl_ms;
    for (size_t i = 0; i < self->map_cap; i++) {
        s_task_t *task = self->map[i];
        if (!task)
            continue;
        for (size_t j = 0; j < task->n_slots; j++) {
            s_slot_t *slot = &task->slots[j];
            for (size_t k = 0; k < slot->n_entries; k++) {
                s_entry_t *e = &slot->entries[k];
                if (memcmp(e->node_id, node_id, S_ID) != 0)
                    continue;
                if (!e->heard || e->heard_at > dead_at) {
                    e->heard = true;
                    e->heard_at = dead_at;
                    if (!s_watch(self, task))
                        return MS_ERR_NOMEM;
                }
            }
        }
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Drop a node id from a list of node ids; the count of entries removed.

static size_t
s_list_drop(uint8_t (*list)[S_ID], size_t *n, const uint8_t node_id[S_ID])
{
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < *n; i++) {
        if (memcmp(list[i], node_id, S_ID) == 0) {
            dropped++;
            continue;
        }
        if (kept != i)
            memcpy(list[kept], list[i], S_ID);
        kept++;
    }
    *n = kept;
    return dropped;
}

//  --------------------------------------------------------------------------
//  Forget every fact about a node (revoked)

size_t
ms_lease_table_forget_node(ms_lease_table_t *self,
                           const uint8_t node_id[MS_LEASE_ID_BYTES])
{
    assert(self && node_id);
    if (memcmp(node_id, self->self_id, S_ID) == 0)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < self->map_cap; i++) {
        s_task_t *task = self->map[i];
        if (!task)
            continue;
        n += s_list_drop(task->finished_any, &task->n_any, node_id);
        for (size_t j = 0; j < task->n_slots; j++) {
            s_slot_t *slot = &task->slots[j];
            n += s_list_drop(slot->finished, &slot->n_finished, node_id);
            size_t kept = 0;
            for (size_t k = 0; k < slot->n_entries; k++) {
                if (memcmp(slot->entries[k].node_id, node_id, S_ID) == 0) {
                    n++;
                    continue;
                }
                if (kept != k)
                    slot->entries[kept] = slot->entries[k];
                kept++;
            }
            slot->n_entries = kept;
        }
    }
    return n;
}

//  --------------------------------------------------------------------------
//  The holder of a slot and whether its lease is live.

int
ms_lease_table_holder(ms_lease_table_t *self,
                      const uint8_t task_id[MS_LEASE_ID_BYTES], uint32_t slot,
                      ms_claim_t *holder, bool *live)
{
    assert(self && task_id);
    s_task_t *task = s_task_find(self, task_id);
    s_slot_t *s = s_slot_find(task, slot);
    s_entry_t *h = s ? s_holder(task, s) : NULL;
    if (!h)
        return MS_ERR_NOTFOUND;
    if (holder)
        s_claim_out(task, s, h, holder);
    if (live)
        *live = s_live(self, h, s_mono(self), s_boot(self));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  True when the slot is done.

bool
ms_lease_table_slot_done(ms_lease_table_t *self,
                         const uint8_t task_id[MS_LEASE_ID_BYTES],
                         uint32_t slot)
{
    assert(self && task_id);
    s_task_t *task = s_task_find(self, task_id);
    return task && s_slot_done(task, s_slot_find(task, slot));
}

//  --------------------------------------------------------------------------
//  Highest epoch seen on a slot.

uint32_t
ms_lease_table_max_epoch(ms_lease_table_t *self,
                         const uint8_t task_id[MS_LEASE_ID_BYTES],
                         uint32_t slot)
{
    assert(self && task_id);
    return s_max_epoch(s_slot_find(s_task_find(self, task_id), slot));
}

//  --------------------------------------------------------------------------
//  True when the self node has a result for the task in this table.

static bool
s_self_finished(const ms_lease_table_t *self, const s_task_t *task)
{
    if (s_list_has(task->finished_any, task->n_any, self->self_id))
        return true;
    for (size_t i = 0; i < task->n_slots; i++)
        if (s_list_has(task->slots[i].finished, task->slots[i].n_finished,
                       self->self_id))
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  The claim rule: may self claim (task, slot) now.

bool
ms_lease_table_can_claim(ms_lease_table_t *self,
                         const uint8_t task_id[MS_LEASE_ID_BYTES],
                         uint32_t slot, bool self_has_result, uint32_t *epoch)
{
    assert(self && task_id);
    if (slot == MS_LEASE_SLOT_ANY || self_has_result)
        return false;
    s_task_t *task = s_task_find(self, task_id);
    s_slot_t *s = s_slot_find(task, slot);
    if (task) {
        if (s_slot_done(task, s) || s_self_finished(self, task))
            return false;
        for (size_t i = 0; i < task->n_slots; i++) {
            s_slot_t *other = &task->slots[i];
            if (other == s)
                continue;
            const s_entry_t *h = s_holder(task, other);
            // (a claim left on a slot that another node's result finished
            // holds nothing: self lost that slot, and may fill another)
            if (h && s_is_self(self, h) && !s_slot_done(task, other))
                return false; // self holds another slot of the task
        }
    }
    const s_entry_t *h = s ? s_holder(task, s) : NULL;
    if (h && s_live(self, h, s_mono(self), s_boot(self)))
        return false;
    uint32_t max = s_max_epoch(s);
    if (max == UINT32_MAX)
        return false;
    if (epoch)
        *epoch = max + 1;
    return true;
}

//  --------------------------------------------------------------------------
//  The lowest slot self may claim.

int
ms_lease_table_pick_slot(ms_lease_table_t *self,
                         const uint8_t task_id[MS_LEASE_ID_BYTES],
                         uint32_t n_slots, bool self_has_result, uint32_t *slot,
                         uint32_t *epoch)
{
    assert(self && task_id);
    for (uint32_t i = 0; i < n_slots && i != MS_LEASE_SLOT_ANY; i++) {
        uint32_t e;
        if (ms_lease_table_can_claim(self, task_id, i, self_has_result, &e)) {
            if (slot)
                *slot = i;
            if (epoch)
                *epoch = e;
            return MS_OK;
        }
    }
    return MS_ERR_NOTFOUND;
}

//  --------------------------------------------------------------------------
//  Claim a slot for the self node.

int
ms_lease_table_claim(ms_lease_table_t *self,
                     const uint8_t task_id[MS_LEASE_ID_BYTES], uint32_t slot,
                     bool self_has_result, ms_claim_t *out)
{
    assert(self && task_id);
    uint32_t epoch;
    if (!ms_lease_table_can_claim(self, task_id, slot, self_has_result, &epoch))
        return MS_ERR_CONFLICT;
    ms_claim_t claim;
    memcpy(claim.task_id, task_id, S_ID);
    claim.slot = slot;
    claim.epoch = epoch;
    memcpy(claim.node_id, self->self_id, S_ID);
    s_slot_t *s;
    s_entry_t *e = s_fact(self, &claim, NULL, &s);
    if (!e)
        return MS_ERR_NOMEM;
    //  Older own claims on the slot end quietly: this one replaces them.
    for (size_t i = 0; i < s->n_entries; i++)
        s->entries[i].own_active = false;
    //  s_fact may have moved the array: look the new fact up again.
    e = NULL;
    for (size_t i = 0; i < s->n_entries && !e; i++)
        if (s->entries[i].epoch == epoch && s_is_self(self, &s->entries[i]))
            e = &s->entries[i];
    assert(e);
    if (!e->has_claim) {
        e->has_claim = true;
        self->n_claims++;
    }
    e->own_active = true;
    e->renewed_at = s_boot(self);
    e->expired_reported = false;
    if (out)
        *out = claim;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Renew the self node's live leases.

int
ms_lease_table_renew(ms_lease_table_t *self, ms_claim_t *out, size_t max,
                     size_t *n_out)
{
    assert(self);
    int64_t mono = s_mono(self), boot = s_boot(self);
    size_t n = 0;
    for (size_t i = 0; i < self->n_watch; i++) {
        s_task_t *task = self->watch[i];
        for (size_t j = 0; j < task->n_slots; j++) {
            s_slot_t *slot = &task->slots[j];
            if (s_slot_done(task, slot))
                continue;
            s_entry_t *h = s_holder(task, slot);
            if (!h || !h->own_active || !s_live(self, h, mono, boot))
                continue;
            h->renewed_at = boot;
            if (n < max && out)
                s_claim_out(task, slot, h, &out[n]);
            n++;
        }
    }
    if (n_out)
        *n_out = n;
    return n > max ? MS_ERR_RANGE : MS_OK;
}

//  --------------------------------------------------------------------------
//  Release an own claim.

int
ms_lease_table_release(ms_lease_table_t *self,
                       const uint8_t task_id[MS_LEASE_ID_BYTES], uint32_t slot,
                       ms_claim_t *out)
{
    assert(self && task_id);
    s_task_t *task = s_task_find(self, task_id);
    s_slot_t *s = s_slot_find(task, slot);
    s_entry_t *best = NULL;
    for (size_t i = 0; s && i < s->n_entries; i++) {
        s_entry_t *e = &s->entries[i];
        if (s_is_self(self, e) && e->has_claim && !e->released &&
            (!best || e->epoch > best->epoch))
            best = e;
    }
    if (!best)
        return MS_ERR_NOTFOUND;
    //  Release every older own claim too: self holds at most one.
    for (size_t i = 0; i < s->n_entries; i++) {
        s_entry_t *e = &s->entries[i];
        if (s_is_self(self, e) && e->has_claim) {
            e->released = true;
            e->own_active = false;
        }
    }
    if (!s_watch(self, task))
        return MS_ERR_NOMEM;
    if (out)
        s_claim_out(task, s, best, out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Own claims that lost their slot since the last call.

size_t
ms_lease_table_outranked(ms_lease_table_t *self, ms_claim_t *out, size_t max)
{
    assert(self);
    size_t n = 0;
    for (size_t i = 0; i < self->n_watch && n < max; i++) {
        s_task_t *task = self->watch[i];
        for (size_t j = 0; j < task->n_slots && n < max; j++) {
            s_slot_t *slot = &task->slots[j];
            bool done = s_slot_done(task, slot);
            const s_entry_t *h = s_holder(task, slot);
            for (size_t k = 0; k < slot->n_entries && n < max; k++) {
                s_entry_t *e = &slot->entries[k];
                if (!e->own_active || (e == h && !done))
                    continue;
                e->own_active = false;
                s_claim_out(task, slot, e, &out[n++]);
            }
        }
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Holders whose lease expired since the last call.

size_t
ms_lease_table_expire(ms_lease_table_t *self, ms_claim_t *out, size_t max)
{
    assert(self);
    int64_t mono = s_mono(self), boot = s_boot(self);
    size_t n = 0;
    for (size_t i = 0; i < self->n_watch && n < max; i++) {
        s_task_t *task = self->watch[i];
        for (size_t j = 0; j < task->n_slots && n < max; j++) {
            s_slot_t *slot = &task->slots[j];
            if (s_slot_done(task, slot))
                continue;
            s_entry_t *h = s_holder(task, slot);
            if (!h || h->expired_reported || s_live(self, h, mono, boot))
                continue;
            h->expired_reported = true;
            h->own_active = false;
            s_claim_out(task, slot, h, &out[n++]);
        }
    }
    s_watch_compact(self);
    return n;
}

//  --------------------------------------------------------------------------
//  Earliest mono time at which a live holder's lease expires.

int64_t
ms_lease_table_next_expiry(ms_lease_table_t *self)
{
    assert(self);
    int64_t mono = s_mono(self), boot = s_boot(self);
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < self->n_watch; i++) {
        s_task_t *task = self->watch[i];
        for (size_t j = 0; j < task->n_slots; j++) {
            s_slot_t *slot = &task->slots[j];
            if (s_slot_done(task, slot))
                continue;
            const s_entry_t *h = s_holder(task, slot);
            if (!h || h->expired_reported)
                continue;
            int64_t at;
            if (!s_live(self, h, mono, boot))
                at = mono; // expired, not yet reported: now
            else if (s_is_self(self, h))
                at = mono + (h->renewed_at + self->ttl_ms - boot);
            else
                at = h->heard_at + self->ttl_ms;
            if (at < next)
                next = at;
        }
    }
    s_watch_compact(self);
    return next;
}

//  --------------------------------------------------------------------------
//  Number of claims held.

size_t
ms_lease_table_size(ms_lease_table_t *self)
{
    assert(self);
    return self->n_claims;
}
