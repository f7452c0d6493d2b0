/*  =========================================================================
    ms_array - room in a realloc'd array of fixed-size items

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Most tables of the node are a `T *items` with a count and a capacity
    that doubles when full; each wrote the doubling realloc itself. These
    two write it once. The array stays the caller's plain `T *` (passed
    by address, as void *), so its users index it as before.

    No state: any thread, on arrays it does not share.
*/
#ifndef MS_ARRAY_H
#define MS_ARRAY_H

#include <stddef.h>

#include "ms_err.h"

//  Resize the realloc'd array *ITEMS_P (the address of the caller's
//  `T *`, NULL at first) to CAP items of ITEM_BYTES each. Returns MS_OK,
//  or MS_ERR_NOMEM (memory ran out, or CAP * ITEM_BYTES does not fit a
//  size_t) with *ITEMS_P as it was; the caller owns the array and frees
//  it either way.
int ms_array_resize(void *items_p, size_t cap, size_t item_bytes);

//  Make room for one more item: *ITEMS_P (as above) holds N items in
//  room for *CAP; when N == *CAP the room doubles (16 items at first) and
//  *CAP says so. Returns MS_OK, or MS_ERR_NOMEM with the array and *CAP
//  as they were.
int ms_array_grow(void *items_p, size_t *cap, size_t n, size_t item_bytes);

#endif
