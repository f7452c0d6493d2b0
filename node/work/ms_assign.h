/*  =========================================================================
    ms_assign - task owners by rendezvous hashing, and the order of work

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Work, claims and leases", Assignment: the owner of a task is
    the known live member with the highest H(task, node) (rendezvous, or
    highest random weight, hashing: Thaler & Ravishankar, "Using name-based
    mappings to increase hit rates", IEEE/ACM ToN 6(1), 1998). Each node
    computes owners alone, from its own member list: no coordination, an
    even spread, and when a member leaves only that member's tasks move.
    A node works its own tasks first, then steals others' in reverse owner
    rank (the tasks where it is second, then third, ...), so that two
    thieves rarely pick the same task, after a startup grace.

    H is BLAKE2b-256 (crypto/ms_hash.h) of task_id || node_id, compared as
    a big-endian number (memcmp order). Pure functions, thread-safe.
*/
#ifndef MS_ASSIGN_H
#define MS_ASSIGN_H

#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_ASSIGN_ID_BYTES 32 // task id and node id size

//  One candidate task for ms_assign_order. Borrowed for the call.
typedef struct {
    uint8_t task_id[MS_ASSIGN_ID_BYTES];  // the task
    uint8_t sweep_id[MS_ASSIGN_ID_BYTES]; // its sweep
    int32_t priority;    // the sweep's priority: higher is served first
    uint64_t sweep_seq;  // the sweep's submission order: lower first
    uint64_t task_index; // the task's position in its sweep
} ms_assign_task_t;

//  The rendezvous weight of node_id for task_id: BLAKE2b-256(task_id ||
//  node_id) into out (compare weights with memcmp: higher wins). Cannot
//  fail.
void ms_assign_weight(const uint8_t task_id[MS_ASSIGN_ID_BYTES],
                      const uint8_t node_id[MS_ASSIGN_ID_BYTES],
                      uint8_t out[MS_ASSIGN_ID_BYTES]);

//  The owner of task_id among the n members (the caller passes the live
//  members it knows, itself included; duplicates are harmless): the one
//  with the highest weight (ties, only for equal ids: the lower id). Writes it
//  to owner. Returns MS_OK; MS_ERR_NOTFOUND when n is 0 (owner untouched).
int ms_assign_owner(const uint8_t task_id[MS_ASSIGN_ID_BYTES],
                    const uint8_t (*members)[MS_ASSIGN_ID_BYTES], size_t n,
                    uint8_t owner[MS_ASSIGN_ID_BYTES]);

//  The owner rank of self_id for task_id: 0 when self is the owner, 1
//  when one member outweighs it, and so on. self_id counts as a member
//  whether or not it is listed (entries equal to self_id are skipped);
//  other members must be distinct. members may be NULL when n is 0 (then
//  the rank is 0).
//  Returns the rank (>= 0). Cannot fail.
int ms_assign_rank(const uint8_t task_id[MS_ASSIGN_ID_BYTES],
                   const uint8_t (*members)[MS_ASSIGN_ID_BYTES], size_t n,
                   const uint8_t self_id[MS_ASSIGN_ID_BYTES]);

//  The order in which self_id works the n candidate tasks: writes a
//  permutation of 0..n-1 to order (n entries, caller-allocated). Own
//  tasks (rank 0) first, then rank 1, rank 2, ...; inside one rank:
//  priority (higher first), then round-robin across sweeps (the first
//  task of each sweep, then the second of each, ... where k-th means by
//  task_index among this rank's candidates of the sweep; inside a round
//  sweeps go by sweep_seq, then sweep_id), then task_index, then task_id.
//  Deterministic. Costs n * n_members hashes. Returns MS_OK;
//  MS_ERR_NOMEM (order untouched).
int ms_assign_order(const ms_assign_task_t *tasks, size_t n,
                    const uint8_t (*members)[MS_ASSIGN_ID_BYTES],
                    size_t n_members, const uint8_t self_id[MS_ASSIGN_ID_BYTES],
                    size_t *order);

//  The startup grace before a node's first claim (DESIGN.md: two beacon
//  intervals and one anti-entropy round), in ms: 2 * beacon_interval_ms
//  + antientropy_ms (negative inputs count as 0).
int64_t ms_assign_grace_ms(int64_t beacon_interval_ms, int64_t antientropy_ms);

#endif
