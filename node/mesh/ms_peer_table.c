/*  =========================================================================
    ms_peer_table - the peers as the mesh reported them (alive, suspect,
    dead; linked or not), and the lists each collaborator wants of them

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_peer_table.h. One array, grown by one entry per new peer.
*/
#include "ms_peer_table.h"

#include "ms_err.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

//  A peer as the mesh reported it.
typedef struct {
    uint8_t id[MS_PEER_TABLE_ID_BYTES]; // node id
    ms_peer_state_t state;              // alive, suspect, dead
    bool linked;                        // both HELLOs passed, link up
} s_peer_t;

struct ms_peer_table {
    uint8_t self_id[MS_PEER_TABLE_ID_BYTES]; // this node
    s_peer_t *peers;                         // in order of first report
    size_t n_peers;                          // entries in peers
};

//  --------------------------------------------------------------------------
//  Linked and alive.

static bool
s_up(const s_peer_t *p)
{
    return p->linked && p->state == MS_PEER_ALIVE;
}

//  --------------------------------------------------------------------------
//  Linked and not dead (suspect ones too).

static bool
s_reachable(const s_peer_t *p)
{
    return p->linked && p->state != MS_PEER_DEAD;
}

ms_peer_table_t *
ms_peer_table_new(const uint8_t self_id[MS_PEER_TABLE_ID_BYTES])
{
    assert(self_id);
    ms_peer_table_t *self = calloc(1, sizeof *self);
    if (self)
        memcpy(self->self_id, self_id, MS_PEER_TABLE_ID_BYTES);
    return self;
}

void
ms_peer_table_destroy(ms_peer_table_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->peers);
    free(*self_p);
    *self_p = NULL;
}

int
ms_peer_table_update(ms_peer_table_t *self,
                     const uint8_t id[MS_PEER_TABLE_ID_BYTES],
                     ms_peer_state_t state, bool linked,
                     ms_peer_table_change_t *change)
{
    assert(self && id);
    s_peer_t *p = NULL;
    for (size_t i = 0; i < self->n_peers && !p; i++)
        if (memcmp(self->peers[i].id, id, MS_PEER_TABLE_ID_BYTES) == 0)
            p = &self->peers[i];
    int previous = p ? (int) p->state : -1; // -1: it appears
    if (!p) {
        s_peer_t *grown =
            realloc(self->peers, (self->n_peers + 1) * sizeof *grown);
        if (!grown)
            return MS_ERR_NOMEM;
        self->peers = grown;
        p = &self->peers[self->n_peers++];
        memset(p, 0, sizeof *p);
        memcpy(p->id, id, MS_PEER_TABLE_ID_BYTES);
        p->state = MS_PEER_DEAD;
    }
    bool was_up = s_up(p);
    p->state = state;
    p->linked = linked;
    if (change)
        *change = (ms_peer_table_change_t){
            .previous = previous, .was_up = was_up, .up = s_up(p)};
    return MS_OK;
}

size_t
ms_peer_table_size(const ms_peer_table_t *self)
{
    assert(self);
    return self->n_peers;
}

//  --------------------------------------------------------------------------
//  The up peers into OUT (room for every peer); returns how many.

static size_t
s_copy_up(const ms_peer_table_t *self, uint8_t (*out)[MS_PEER_TABLE_ID_BYTES])
{
    size_t n = 0;
    for (size_t i = 0; i < self->n_peers; i++)
        if (s_up(&self->peers[i]))
            memcpy(out[n++], self->peers[i].id, MS_PEER_TABLE_ID_BYTES);
    return n;
}

size_t
ms_peer_table_members(const ms_peer_table_t *self,
                      uint8_t (**out)[MS_PEER_TABLE_ID_BYTES])
{
    assert(self && out);
    *out = calloc(self->n_peers + 1, MS_PEER_TABLE_ID_BYTES);
    if (!*out)
        return 0;
    memcpy((*out)[0], self->self_id, MS_PEER_TABLE_ID_BYTES);
    return 1 + s_copy_up(self, *out + 1);
}

size_t
ms_peer_table_live(const ms_peer_table_t *self,
                   uint8_t (**out)[MS_PEER_TABLE_ID_BYTES])
{
    assert(self && out);
    *out = calloc(self->n_peers + 1, MS_PEER_TABLE_ID_BYTES);
    return *out ? s_copy_up(self, *out) : 0;
}

size_t
ms_peer_table_reachable(const ms_peer_table_t *self,
                        uint8_t (**out)[MS_PEER_TABLE_ID_BYTES])
{
    assert(self && out);
    *out = NULL;
    size_t n = 0;
    for (size_t i = 0; i < self->n_peers; i++)
        n += s_reachable(&self->peers[i]);
    if (n == 0 || !(*out = calloc(n, MS_PEER_TABLE_ID_BYTES)))
        return 0;
    return (size_t) ms_peer_table_active(self, *out, (int) n);
}

int
ms_peer_table_active(const ms_peer_table_t *self,
                     uint8_t (*out)[MS_PEER_TABLE_ID_BYTES], int max)
{
    assert(self && (out || max <= 0));
    int n = 0;
    for (size_t i = 0; i < self->n_peers && n < max; i++)
        if (s_reachable(&self->peers[i]))
            memcpy(out[n++], self->peers[i].id, MS_PEER_TABLE_ID_BYTES);
    return n;
}
