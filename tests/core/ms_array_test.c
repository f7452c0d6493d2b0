/*  =========================================================================
    ms_array_test - room in a realloc'd array: doubling, resizing

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_array.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>

typedef struct {
    uint64_t a, b; // 16 bytes an item
} s_item_t;

//  --------------------------------------------------------------------------
//  Appending 100 items: the room doubles from 16 and the items stay.

static void
test_grow_doubles_and_keeps(void **state)
{
    (void) state;
    s_item_t *items = NULL;
    size_t n = 0, cap = 0;
    for (uint64_t i = 0; i < 100; i++) {
        assert_int_equal(ms_array_grow(&items, &cap, n, sizeof *items), MS_OK);
        assert_true(n < cap);
        items[n++] = (s_item_t){i, 2 * i};
    }
    assert_int_equal(cap, 128); // 16, 32, 64, 128
    for (uint64_t i = 0; i < 100; i++) {
        assert_int_equal(items[i].a, i);
        assert_int_equal(items[i].b, 2 * i);
    }
    //  room left: nothing moves
    s_item_t *before = items;
    assert_int_equal(ms_array_grow(&items, &cap, n, sizeof *items), MS_OK);
    assert_ptr_equal(items, before);
    assert_int_equal(cap, 128);
    free(items);
}

//  --------------------------------------------------------------------------
//  Resize to a size, down as well as up; a refused size leaves the array.

static void
test_resize(void **state)
{
    (void) state;
    uint32_t *v = NULL;
    assert_int_equal(ms_array_resize(&v, 8, sizeof *v), MS_OK);
    assert_non_null(v);
    for (uint32_t i = 0; i < 8; i++)
        v[i] = i;
    assert_int_equal(ms_array_resize(&v, 3, sizeof *v), MS_OK);
    assert_int_equal(v[2], 2);
    uint32_t *kept = v;
    //  a size past size_t is refused before realloc is asked
    assert_int_equal(ms_array_resize(&v, SIZE_MAX / 2, sizeof *v),
                     MS_ERR_NOMEM);
    assert_ptr_equal(v, kept);
    free(v);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grow_doubles_and_keeps),
        cmocka_unit_test(test_resize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
