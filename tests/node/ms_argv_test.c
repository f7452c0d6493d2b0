/*  =========================================================================
    ms_argv_test - building an argument vector, and its failure rule

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_argv.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

//  Words in order, NULL-terminated, past the first growth (16 slots).
static void
test_words(void **state)
{
    (void) state;
    ms_argv_t a = {0};
    ms_argv_take(&a, strdup("/bin/sh"));
    for (int i = 0; i < 40; i++)
        ms_argv_add(&a, "--flag=%d", i);
    char **v = NULL;
    assert_true(ms_argv_finish(&a, &v));
    assert_null(a.v); // handed over
    assert_string_equal(v[0], "/bin/sh");
    assert_string_equal(v[1], "--flag=0");
    assert_string_equal(v[40], "--flag=39");
    assert_null(v[41]);
    ms_argv_free(&v);
    assert_null(v);
    ms_argv_free(&v); // NULL-safe
}

//  Nothing added: an empty vector, not NULL.
static void
test_empty(void **state)
{
    (void) state;
    ms_argv_t a = {0};
    char **v = NULL;
    assert_true(ms_argv_finish(&a, &v));
    assert_non_null(v);
    assert_null(v[0]);
    ms_argv_free(&v);
}

//  A NULL word (a failed strdup) fails the whole vector; later words are
//  ignored and freed (checked by valgrind/ASan: no leak).
static void
test_failure_sticks(void **state)
{
    (void) state;
    ms_argv_t a = {0};
    ms_argv_take(&a, strdup("one"));
    ms_argv_take(&a, NULL);
    ms_argv_take(&a, strdup("two"));
    ms_argv_add(&a, "%s", "three");
    assert_true(a.failed);
    assert_int_equal(a.n, 1);
    char **v = (char **) &a; // not NULL before the call
    assert_false(ms_argv_finish(&a, &v));
    assert_null(v);
    assert_null(a.v);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_failure_sticks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
