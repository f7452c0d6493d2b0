/*  =========================================================================
    ms_text_test - the growing text buffer: printf, bytes, growth

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_text.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  printf text from empty, past several doublings, stays NUL-terminated.

static void
test_printf_grows(void **state)
{
    (void) state;
    ms_text_t t = {0};
    ms_text_printf(&t, "%s", "");
    assert_non_null(t.data);
    assert_int_equal(t.len, 0);
    assert_string_equal(t.data, "");
    for (int i = 0; i < 1000; i++)
        ms_text_printf(&t, "%d,", i % 10);
    assert_false(t.failed);
    assert_int_equal(t.len, 2000);
    assert_int_equal(strlen(t.data), 2000);
    assert_memory_equal(t.data, "0,1,2,", 6);
    assert_memory_equal(t.data + 1994, "7,8,9,", 6);
    free(t.data);
}

//  --------------------------------------------------------------------------
//  Bytes go in as they are, NULs included, after printf text.

static void
test_append_bytes(void **state)
{
    (void) state;
    ms_text_t t = {0};
    ms_text_printf(&t, "k=%s", "v");
    ms_text_append(&t, "a\0b", 3);
    assert_int_equal(t.len, 6);
    assert_memory_equal(t.data, "k=va\0b", 6);
    char big[600];
    memset(big, 'x', sizeof big);
    ms_text_append(&t, big, sizeof big);
    assert_int_equal(t.len, 606);
    assert_true(t.cap >= 606);
    assert_int_equal(t.data[605], 'x');
    free(t.data);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_printf_grows),
        cmocka_unit_test(test_append_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
