/*  =========================================================================
    ms_ring - a bounded first-in first-out queue of fixed-size items that
    drops its oldest item when full

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The store hands the node loop what its commits produced (new results
    to sample, changed verdicts) through such queues. A queue that is not
    drained (a store opened by a tool, a node loop that is busy) must not
    make each append cost more: push and take are O(1) per item, a ring
    over one block allocated at ms_ring_new. Before this class the queues
    were arrays shifted with memmove on every append once full (4096
    entries: 128 to 393 KB moved per record).

    Thread rule: not synchronised; the owner guards it (the store holds a
    mutex around each call).
*/
#ifndef MS_RING_H
#define MS_RING_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ms_ring ms_ring_t;

//  Create a ring of CAPACITY items of ITEM_BYTES bytes each (both > 0).
//  Returns NULL only when memory runs out. Caller owns the result; free
//  it with ms_ring_destroy().
ms_ring_t *ms_ring_new(size_t item_bytes, size_t capacity);

//  Free the ring and null *self_p. NULL-safe.
void ms_ring_destroy(ms_ring_t **self_p);

//  Append a copy of ITEM (item_bytes bytes). When the ring is full the
//  oldest item is dropped first; returns true when one was.
bool ms_ring_push(ms_ring_t *self, const void *item);

//  Move up to MAX of the oldest items, oldest first, into OUT (room for
//  MAX items). Returns how many were moved.
size_t ms_ring_take(ms_ring_t *self, void *out, size_t max);

//  Items held now.
size_t ms_ring_size(const ms_ring_t *self);

#endif
