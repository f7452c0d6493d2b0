/*  =========================================================================
    ms_pool_census - who counts in the pool as this node sees it, told to
    the store: the member count (failure rule) and the operators
    (verification)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_pool_census.h. Operator names are compared as strings, in a
    small array (at most MS_POOL_CENSUS_MAX_OPERATORS, a pool's operators
    are few): a hash set would cost more code than the scan costs time.
*/
#include "ms_pool_census.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct ms_pool_census {
    ms_store_t *store;                        // the store told (borrowed)
    uint8_t node_pk[MS_POOL_CENSUS_ID_BYTES]; // this node
    uint32_t n_members;                       // member count last given
    _Atomic uint32_t n_pool_operators;        // operator count last given
};

int
ms_pool_census_open(ms_pool_census_t **out, ms_store_t *store,
                    const uint8_t node_pk[MS_POOL_CENSUS_ID_BYTES])
{
    assert(out && store && node_pk);
    *out = NULL;
    ms_pool_census_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->store = store;
    memcpy(self->node_pk, node_pk, MS_POOL_CENSUS_ID_BYTES);
    int rc = ms_store_set_member_count(store, 1);
    if (rc != MS_OK) {
        free(self);
        return rc;
    }
    self->n_members = 1;
    atomic_store_explicit(&self->n_pool_operators, 1, memory_order_relaxed);
    *out = self;
    return MS_OK;
}

void
ms_pool_census_destroy(ms_pool_census_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The operators (stored with an authority) and their count. Returns
//  whether the count given to the store changed.

static bool
s_update_operators(ms_pool_census_t *self, const ms_members_t *members,
                   const char *our_operator,
                   const uint8_t (*peers)[MS_POOL_CENSUS_ID_BYTES],
                   size_t n_peers)
{
    bool by_cert = members && ms_members_has_authority(members);
    const char *names[MS_POOL_CENSUS_MAX_OPERATORS];
    size_t n_names = 0;
    uint32_t n_ops = 1;
    if (by_cert) {
        ms_store_set_operator(self->store, self->node_pk, our_operator);
        names[n_names++] = our_operator;
    }
    for (size_t i = 0; i < n_peers; i++) {
        if (!by_cert) {
            n_ops++;
            continue;
        }
        const char *op = ms_members_operator(members, peers[i]);
        if (!op || !*op)
            continue;
        ms_store_set_operator(self->store, peers[i], op);
        bool seen = false;
        for (size_t k = 0; k < n_names && !seen; k++)
            seen = strcmp(names[k], op) == 0;
        if (!seen && n_names < MS_POOL_CENSUS_MAX_OPERATORS)
            names[n_names++] = op;
    }
    if (by_cert)
        n_ops = (uint32_t) n_names;
    if (n_ops == ms_pool_census_operators(self) ||
        ms_store_set_pool_operators(self->store, n_ops) != MS_OK)
        return false;
    atomic_store_explicit(&self->n_pool_operators, n_ops, memory_order_relaxed);
    return true;
}

bool
ms_pool_census_update(ms_pool_census_t *self, const ms_members_t *members,
                      const char *our_operator,
                      const uint8_t (*peers)[MS_POOL_CENSUS_ID_BYTES],
                      size_t n_peers)
{
    assert(self && (peers || n_peers == 0));
    uint32_t n = (uint32_t) n_peers + 1;
    if (n != self->n_members &&
        ms_store_set_member_count(self->store, n) == MS_OK)
        self->n_members = n;
    return s_update_operators(self, members, our_operator, peers, n_peers);
}

uint32_t
ms_pool_census_members(const ms_pool_census_t *self)
{
    assert(self);
    return self->n_members;
}

uint32_t
ms_pool_census_operators(const ms_pool_census_t *self)
{
    assert(self);
    return atomic_load_explicit(&self->n_pool_operators, memory_order_relaxed);
}
