/*  =========================================================================
    ms_array - room in a realloc'd array of fixed-size items

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_array.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Resize a realloc'd array to CAP items.

int
ms_array_resize(void *items_p, size_t cap, size_t item_bytes)
{
    if (item_bytes && cap > SIZE_MAX / item_bytes)
        return MS_ERR_NOMEM; // more bytes than there are addresses
    void *items;
    memcpy(&items, items_p, sizeof items); // the caller's T *, as void *
    void *resized = realloc(items, cap * item_bytes);
    if (!resized)
        return MS_ERR_NOMEM;
    memcpy(items_p, &resized, sizeof resized);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Room for one more item (doubling; 16 at first).

int
ms_array_grow(void *items_p, size_t *cap, size_t n, size_t item_bytes)
{
    if (n < *cap)
        return MS_OK;
    size_t want = *cap ? *cap * 2 : 16;
    int rc = ms_array_resize(items_p, want, item_bytes);
    if (rc == MS_OK)
        *cap = want;
    return rc;
}
