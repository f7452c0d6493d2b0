/*  =========================================================================
    ms_assign - task owners by rendezvous hashing, and the order of work

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Rendezvous (highest random weight) hashing, Thaler & Ravishankar 1998,
    as DESIGN.md "Work, claims and leases" asks. Why this and not a hash
    ring: every node computes owners from its own member list with no
    shared state, the spread is even without virtual nodes, and a member
    leaving moves only its own tasks (each to the member that ranked
    second for it). The cost, one hash per (task, member), is small next
    to training a network; ms_assign_order costs n * members hashes.

    The order of work sorts candidates by one composite key: owner rank,
    priority (desc), round (the task's position among the candidates of
    its sweep in the same rank and priority), sweep_seq, sweep_id,
    task_index, task_id. The round makes sweeps of one priority share the
    node round-robin rather than the first sweep starving the rest.
*/
#include "ms_assign.h"

#include "ms_hash.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  One candidate with its sort key, for ms_assign_order.
typedef struct {
    const ms_assign_task_t *task; // the candidate (borrowed)
    size_t index;                 // its position in the caller's array
    int rank;                     // self's owner rank for the task
    uint64_t round;               // k-th candidate of its sweep (group)
} s_item_t;

//  --------------------------------------------------------------------------
//  Weight of node_id for task_id: BLAKE2b-256(task_id || node_id).

void
ms_assign_weight(const uint8_t task_id[MS_ASSIGN_ID_BYTES],
                 const uint8_t node_id[MS_ASSIGN_ID_BYTES],
                 uint8_t out[MS_ASSIGN_ID_BYTES])
{
    uint8_t buf[2 * MS_ASSIGN_ID_BYTES];
    memcpy(buf, task_id, MS_ASSIGN_ID_BYTES);
    memcpy(buf + MS_ASSIGN_ID_BYTES, node_id, MS_ASSIGN_ID_BYTES);
    ms_hash_t h;
    ms_hash_bytes(buf, sizeof buf, &h);
    memcpy(out, h.bytes, MS_ASSIGN_ID_BYTES);
}

//  --------------------------------------------------------------------------
//  True when (weight a, id a) outranks (weight b, id b): higher weight,
//  then lower id.

static bool
s_outweighs(const uint8_t wa[MS_ASSIGN_ID_BYTES],
            const uint8_t ida[MS_ASSIGN_ID_BYTES],
            const uint8_t wb[MS_ASSIGN_ID_BYTES],
            const uint8_t idb[MS_ASSIGN_ID_BYTES])
{
    int c = memcmp(wa, wb, MS_ASSIGN_ID_BYTES);
    if (c != 0)
        return c > 0;
    return memcmp(ida, idb, MS_ASSIGN_ID_BYTES) < 0;
}

//  --------------------------------------------------------------------------
//  The member with the highest weight for task_id.

int
ms_assign_owner(const uint8_t task_id[MS_ASSIGN_ID_BYTES],
                const uint8_t (*members)[MS_ASSIGN_ID_BYTES], size_t n,
                uint8_t owner[MS_ASSIGN_ID_BYTES])
{
    if (n == 0 || members == NULL)
        return MS_ERR_NOTFOUND;
    uint8_t best_w[MS_ASSIGN_ID_BYTES];
    size_t best = 0;
    ms_assign_weight(task_id, members[0], best_w);
    for (size_t i = 1; i < n; i++) {
        uint8_t w[MS_ASSIGN_ID_BYTES];
        ms_assign_weight(task_id, members[i], w);
        if (s_outweighs(w, members[i], best_w, members[best])) {
            memcpy(best_w, w, MS_ASSIGN_ID_BYTES);
            best = i;
        }
    }
    memcpy(owner, members[best], MS_ASSIGN_ID_BYTES);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Number of members (other than self) that outweigh self.

int
ms_assign_rank(const uint8_t task_id[MS_ASSIGN_ID_BYTES],
               const uint8_t (*members)[MS_ASSIGN_ID_BYTES], size_t n,
               const uint8_t self_id[MS_ASSIGN_ID_BYTES])
{
    uint8_t self_w[MS_ASSIGN_ID_BYTES];
    ms_assign_weight(task_id, self_id, self_w);
    int rank = 0;
    for (size_t i = 0; i < n && members; i++) {
        if (memcmp(members[i], self_id, MS_ASSIGN_ID_BYTES) == 0)
            continue;
        uint8_t w[MS_ASSIGN_ID_BYTES];
        ms_assign_weight(task_id, members[i], w);
        if (s_outweighs(w, members[i], self_w, self_id))
            rank++;
    }
    return rank;
}

//  --------------------------------------------------------------------------
//  Order by (rank, priority desc, sweep_seq, sweep_id, task_index, task_id):
//  the grouping used to number rounds.

static int
s_cmp_group(const void *pa, const void *pb)
{
    const s_item_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->task->priority != b->task->priority)
        return a->task->priority > b->task->priority ? -1 : 1;
    if (a->task->sweep_seq != b->task->sweep_seq)
        return a->task->sweep_seq < b->task->sweep_seq ? -1 : 1;
    int c = memcmp(a->task->sweep_id, b->task->sweep_id, MS_ASSIGN_ID_BYTES);
    if (c != 0)
        return c;
    if (a->task->task_index != b->task->task_index)
        return a->task->task_index < b->task->task_index ? -1 : 1;
    c = memcmp(a->task->task_id, b->task->task_id, MS_ASSIGN_ID_BYTES);
    if (c != 0)
        return c;
    return a->index < b->index ? -1 : (a->index > b->index);
}

//  --------------------------------------------------------------------------
//  Order by (rank, priority desc, round, sweep_seq, sweep_id, task_index,
//  task_id): the final order.

static int
s_cmp_final(const void *pa, const void *pb)
{
    const s_item_t *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->task->priority != b->task->priority)
        return a->task->priority > b->task->priority ? -1 : 1;
    if (a->round != b->round)
        return a->round < b->round ? -1 : 1;
    return s_cmp_group(pa, pb);
}

//  --------------------------------------------------------------------------
//  Order in which self works the candidate tasks.

int
ms_assign_order(const ms_assign_task_t *tasks, size_t n,
                const uint8_t (*members)[MS_ASSIGN_ID_BYTES], size_t n_members,
                const uint8_t self_id[MS_ASSIGN_ID_BYTES], size_t *order)
{
    if (n == 0)
        return MS_OK;
    s_item_t *items = calloc(n, sizeof *items);
    if (!items)
        return MS_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        items[i].task = &tasks[i];
        items[i].index = i;
        items[i].rank =
            ms_assign_rank(tasks[i].task_id, members, n_members, self_id);
    }
    //  Number rounds: sort by group, then count inside each run of the
    //  same (rank, priority, sweep).
    qsort(items, n, sizeof *items, s_cmp_group);
    uint64_t round = 0;
    for (size_t i = 0; i < n; i++) {
        const s_item_t *p = i ? &items[i - 1] : NULL;
        bool same = p && p->rank == items[i].rank &&
                    p->task->priority == items[i].task->priority &&
                    p->task->sweep_seq == items[i].task->sweep_seq &&
                    memcmp(p->task->sweep_id, items[i].task->sweep_id,
                           MS_ASSIGN_ID_BYTES) == 0;
        round = same ? round + 1 : 0;
        items[i].round = round;
    }
    qsort(items, n, sizeof *items, s_cmp_final);
    for (size_t i = 0; i < n; i++)
        order[i] = items[i].index;
    free(items);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Startup grace: two beacon intervals and one anti-entropy round.

int64_t
ms_assign_grace_ms(int64_t beacon_interval_ms, int64_t antientropy_ms)
{
    if (beacon_interval_ms < 0)
        beacon_interval_ms = 0;
    if (antientropy_ms < 0)
        antientropy_ms = 0;
    return 2 * beacon_interval_ms + antientropy_ms;
}
