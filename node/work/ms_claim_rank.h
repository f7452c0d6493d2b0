/*  =========================================================================
    ms_claim_rank - how the claims on a slot rank: the rule, written once

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Work, claims and leases": the claims on a slot rank by
    epoch (higher first), then by H(task, slot, node) (lower first), where
    H is BLAKE2b-256 over task id (32 bytes) || slot (u32 big-endian) ||
    node id (32 bytes). The holder of a slot is its top claim that is
    neither released nor finished; which result of a task fills a slot
    follows the same order (the store's result ranking). Both are pure
    functions of the record set, so every node agrees whatever the
    arrival order. The lease table (who holds a slot) and the store (which
    result fills it) call this class; nothing else computes the order.

    Why a hash and not the node id: with node ids alone the same node
    would win every tie of every task; the hash spreads wins over nodes
    and still needs no coordination.
*/
#ifndef MS_CLAIM_RANK_H
#define MS_CLAIM_RANK_H

#include <stdbool.h>
#include <stdint.h>

#define MS_CLAIM_RANK_BYTES 32 // task ids, node ids and the rank hash

//  The rank hash H(task, slot, node) of a claim (or a result computed
//  for that slot) into OUT. Pure; any thread.
void ms_claim_rank_hash(const uint8_t task_id[MS_CLAIM_RANK_BYTES],
                        uint32_t slot,
                        const uint8_t node_id[MS_CLAIM_RANK_BYTES],
                        uint8_t out[MS_CLAIM_RANK_BYTES]);

//  True when the claim (EPOCH_A, RANK_A) ranks before (EPOCH_B, RANK_B)
//  on one slot: higher epoch first, then lower rank hash (from
//  ms_claim_rank_hash). Pure; any thread.
bool ms_claim_rank_before(uint64_t epoch_a,
                          const uint8_t rank_a[MS_CLAIM_RANK_BYTES],
                          uint64_t epoch_b,
                          const uint8_t rank_b[MS_CLAIM_RANK_BYTES]);

#endif
