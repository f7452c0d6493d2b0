/*  =========================================================================
    ms_ring - a bounded first-in first-out queue that drops its oldest item

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_ring.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct ms_ring {
    unsigned char *items; // capacity * item_bytes
    size_t item_bytes;    // bytes per item
    size_t capacity;      // items the ring holds
    size_t head;          // index of the oldest item
    size_t n;             // items held
};

//  --------------------------------------------------------------------------
//  Create a ring.

ms_ring_t *
ms_ring_new(size_t item_bytes, size_t capacity)
{
    assert(item_bytes > 0 && capacity > 0);
    if (capacity > SIZE_MAX / item_bytes)
        return NULL;
    ms_ring_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->items = malloc(item_bytes * capacity);
    if (!self->items) {
        free(self);
        return NULL;
    }
    self->item_bytes = item_bytes;
    self->capacity = capacity;
    return self;
}

//  --------------------------------------------------------------------------
//  Free a ring.

void
ms_ring_destroy(ms_ring_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->items);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Append, dropping the oldest item when full.

bool
ms_ring_push(ms_ring_t *self, const void *item)
{
    assert(self && item);
    bool dropped = false;
    if (self->n == self->capacity) {
        self->head = (self->head + 1) % self->capacity;
        self->n--;
        dropped = true;
    }
    size_t at = (self->head + self->n++) % self->capacity;
    memcpy(self->items + at * self->item_bytes, item, self->item_bytes);
    return dropped;
}

//  --------------------------------------------------------------------------
//  Take the oldest items.

size_t
ms_ring_take(ms_ring_t *self, void *out, size_t max)
{
    assert(self && (out || max == 0));
    size_t n = self->n < max ? self->n : max;
    unsigned char *dst = out;
    // At most two contiguous runs: head to the end, then from 0.
    size_t first = self->capacity - self->head;
    if (first > n)
        first = n;
    memcpy(dst, self->items + self->head * self->item_bytes,
           first * self->item_bytes);
    memcpy(dst + first * self->item_bytes, self->items,
           (n - first) * self->item_bytes);
    self->head = (self->head + n) % self->capacity;
    self->n -= n;
    return n;
}

//  --------------------------------------------------------------------------
//  Items held.

size_t
ms_ring_size(const ms_ring_t *self)
{
    assert(self);
    return self->n;
}
