/*  =========================================================================
    ms_claim_rank - how the claims on a slot rank

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_claim_rank.h"

#include "ms_hash.h"

#include <string.h>

//  --------------------------------------------------------------------------
//  H(task || slot (BE) || node).

void
ms_claim_rank_hash(const uint8_t task_id[MS_CLAIM_RANK_BYTES], uint32_t slot,
                   const uint8_t node_id[MS_CLAIM_RANK_BYTES],
                   uint8_t out[MS_CLAIM_RANK_BYTES])
{
    uint8_t buf[MS_CLAIM_RANK_BYTES + 4 + MS_CLAIM_RANK_BYTES];
    memcpy(buf, task_id, MS_CLAIM_RANK_BYTES);
    buf[MS_CLAIM_RANK_BYTES + 0] = (uint8_t) (slot >> 24);
    buf[MS_CLAIM_RANK_BYTES + 1] = (uint8_t) (slot >> 16);
    buf[MS_CLAIM_RANK_BYTES + 2] = (uint8_t) (slot >> 8);
    buf[MS_CLAIM_RANK_BYTES + 3] = (uint8_t) slot;
    memcpy(buf + MS_CLAIM_RANK_BYTES + 4, node_id, MS_CLAIM_RANK_BYTES);
    ms_hash_t h;
    ms_hash_bytes(buf, sizeof buf, &h);
    memcpy(out, h.bytes, MS_CLAIM_RANK_BYTES);
}

//  --------------------------------------------------------------------------
//  Higher epoch, then lower rank hash.

bool
ms_claim_rank_before(uint64_t epoch_a,
                     const uint8_t rank_a[MS_CLAIM_RANK_BYTES],
                     uint64_t epoch_b,
                     const uint8_t rank_b[MS_CLAIM_RANK_BYTES])
{
    if (epoch_a != epoch_b)
        return epoch_a > epoch_b;
    return memcmp(rank_a, rank_b, MS_CLAIM_RANK_BYTES) < 0;
}
