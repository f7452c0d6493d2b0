/*  =========================================================================
    ms_claim_rank_test - the claims' ranking rule

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_claim_rank.h"

#include "ms_hash.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

//  --------------------------------------------------------------------------
//  The rank hash is BLAKE2b-256 of task || slot (big-endian) || node, and
//  depends on each of the three.

static void
test_rank_hash_layout(void **state)
{
    (void) state;
    uint8_t task[32], node[32], buf[68], rank[32];
    memset(task, 0xA1, 32);
    memset(node, 0x5C, 32);
    memcpy(buf, task, 32);
    buf[32] = 0x01;
    buf[33] = 0x02;
    buf[34] = 0x03;
    buf[35] = 0x04;
    memcpy(buf + 36, node, 32);
    ms_hash_t want;
    ms_hash_bytes(buf, sizeof buf, &want);
    ms_claim_rank_hash(task, 0x01020304u, node, rank);
    assert_memory_equal(rank, want.bytes, 32);
    uint8_t other[32];
    ms_claim_rank_hash(task, 0x01020305u, node, other);
    assert_memory_not_equal(rank, other, 32);
    node[31] ^= 1;
    ms_claim_rank_hash(task, 0x01020304u, node, other);
    assert_memory_not_equal(rank, other, 32);
}

//  --------------------------------------------------------------------------
//  Higher epoch first whatever the hashes; equal epochs: lower hash first;
//  a claim never ranks before itself.

static void
test_rank_order(void **state)
{
    (void) state;
    uint8_t low[32], high[32];
    memset(low, 0x00, 32);
    memset(high, 0xFF, 32);
    assert_true(ms_claim_rank_before(2, high, 1, low));
    assert_false(ms_claim_rank_before(1, low, 2, high));
    assert_true(ms_claim_rank_before(3, low, 3, high));
    assert_false(ms_claim_rank_before(3, high, 3, low));
    assert_false(ms_claim_rank_before(3, low, 3, low));
    // epochs above 2^32 compare as numbers, not truncated
    assert_true(ms_claim_rank_before((uint64_t) 1 << 32, high, 7, low));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rank_hash_layout),
        cmocka_unit_test(test_rank_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
