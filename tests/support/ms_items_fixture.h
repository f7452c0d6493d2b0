/*  =========================================================================
    ms_items_fixture - a pool authority and signed authority items, for
    the tests of ms_items and ms_item_sync (cmocka)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Header-only (static functions) so each test executable stays one file;
    include <cmocka.h>, ms_authority_item.h, ms_cert.h and ms_items.h
    before it.

        ms_if_pool_t p;
        ms_if_pool(&p);
        uint8_t buf[MS_ITEMS_MAX_BYTES];
        size_t n = ms_if_revoke_item(buf, &p, subject);
*/
#ifndef MS_ITEMS_FIXTURE_H
#define MS_ITEMS_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

//  A pool: authority key pair and id.
typedef struct {
    uint8_t pk[32], sk[64], pool_id[32];
} ms_if_pool_t;

//  --------------------------------------------------------------------------
//  A fresh pool authority.

static inline void
ms_if_pool(ms_if_pool_t *p)
{
    assert_int_equal(ms_cert_keypair(p->pk, p->sk), MS_OK);
    ms_cert_pool_id(p->pk, p->pool_id);
}

//  --------------------------------------------------------------------------
//  A one-certificate chain for node_pk (a fresh key into it when
//  make_key), role worker, operator op, signed by the pool's authority.

static inline void
ms_if_chain(ms_cert_chain_t *chain, const ms_if_pool_t *p, uint8_t node_pk[32],
            bool make_key, const char *op)
{
    uint8_t nsk[64];
    if (make_key)
        assert_int_equal(ms_cert_keypair(node_pk, nsk), MS_OK);
    memset(chain, 0, sizeof *chain);
    memcpy(chain->leaf.pool_id, p->pool_id, 32);
    memcpy(chain->leaf.subject, node_pk, 32);
    chain->leaf.roles = MS_CERT_ROLE_WORKER;
    chain->leaf.serial = 1;
    strcpy(chain->leaf.operator_name, op);
    assert_int_equal(ms_cert_sign(&chain->leaf, p->sk, NULL), MS_OK);
}

//  --------------------------------------------------------------------------
//  Item bytes (into out, MS_ITEMS_MAX_BYTES) of the pool's revocation of
//  subject, cut: all. Returns the byte count.

static inline size_t
ms_if_revoke_item(uint8_t *out, const ms_if_pool_t *p,
                  const uint8_t subject[32])
{
    ms_authority_item_t item;
    memset(&item, 0, sizeof item);
    item.kind = MS_AUTHORITY_ITEM_REVOKE;
    memcpy(item.subject, subject, 32);
    item.issued_at = 1700000000;
    item.serial = 7;
    item.cut_all = true;
    assert_int_equal(ms_authority_item_sign(&item, p->sk, NULL), MS_OK);
    size_t n = ms_items_encode_authority(&item, out);
    assert_true(n > 1);
    return n;
}

#endif
