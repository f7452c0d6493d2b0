/*  =========================================================================
    ms_prom_test - the Prometheus text exposition writer: families with
    HELP and TYPE, grouping, label escaping, number spelling, and the
    checks (names, duplicates, counters)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_prom.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Samples of one family come out together, after its HELP and TYPE,
//  whatever order they were added in.

static void
test_families_grouped(void **state)
{
    (void) state;
    ms_prom_t *p = ms_prom_new();
    assert_non_null(p);
    assert_int_equal(ms_prom_family(p, "a_total", MS_PROM_COUNTER, "A."),
                     MS_OK);
    assert_int_equal(ms_prom_family(p, "b", MS_PROM_GAUGE, "B."), MS_OK);
    assert_int_equal(ms_prom_sample(p, "a_total", 1, "k", "x", NULL), MS_OK);
    assert_int_equal(ms_prom_sample(p, "b", 2, NULL), MS_OK);
    assert_int_equal(ms_prom_sample(p, "a_total", 3, "k", "y", NULL), MS_OK);
    // Declared again with the same type: one family still.
    assert_int_equal(ms_prom_family(p, "a_total", MS_PROM_COUNTER, "A."),
                     MS_OK);
    size_t len = 0;
    char *text = ms_prom_text(p, &len);
    assert_non_null(text);
    assert_int_equal(len, strlen(text));
    assert_string_equal(text, "# HELP a_total A.\n"
                              "# TYPE a_total counter\n"
                              "a_total{k=\"x\"} 1\n"
                              "a_total{k=\"y\"} 3\n"
                              "# HELP b B.\n"
                              "# TYPE b gauge\n"
                              "b 2\n");
    free(text);
    ms_prom_destroy(&p);
    assert_null(p);
    ms_prom_destroy(&p); // NULL-safe
}

//  --------------------------------------------------------------------------
//  Label values escape \, " and newline; help text escapes \ and newline.

static void
test_escaping(void **state)
{
    (void) state;
    ms_prom_t *p = ms_prom_new();
    assert_int_equal(
        ms_prom_family(p, "m", MS_PROM_GAUGE, "back\\slash \"q\"\nline"),
        MS_OK);
    assert_int_equal(
        ms_prom_sample(p, "m", 1, "a", "x\\y\"z\nw", "b", "caf\xc3\xa9", NULL),
        MS_OK);
    char *text = ms_prom_text(p, NULL);
    assert_string_equal(text, "# HELP m back\\\\slash \"q\"\\nline\n"
                              "# TYPE m gauge\n"
                              "m{a=\"x\\\\y\\\"z\\nw\",b=\"caf\xc3\xa9\"} 1\n");
    free(text);
    ms_prom_destroy(&p);
}

//  --------------------------------------------------------------------------
//  Values: NaN, +Inf, -Inf, integers exactly, others round-trip.

static void
test_values(void **state)
{
    (void) state;
    char out[32];
    ms_prom_format_value(NAN, out);
    assert_string_equal(out, "NaN");
    ms_prom_format_value(INFINITY, out);
    assert_string_equal(out, "+Inf");
    ms_prom_format_value(-INFINITY, out);
    assert_string_equal(out, "-Inf");
    ms_prom_format_value(0.0, out);
    assert_string_equal(out, "0");
    ms_prom_format_value(-0.0, out);
    assert_string_equal(out, "0");
    ms_prom_format_value(12345678901234.0, out);
    assert_string_equal(out, "12345678901234");
    ms_prom_format_value(-7, out);
    assert_string_equal(out, "-7");
    ms_prom_format_value(0.1, out);
    assert_string_equal(out, "0.1");
    ms_prom_format_value(1e300, out);
    assert_true(strtod(out, NULL) == 1e300);
    ms_prom_format_value(1.0 / 3.0, out);
    assert_true(strtod(out, NULL) == 1.0 / 3.0);
    // In a page: a gauge may be NaN or infinite.
    ms_prom_t *p = ms_prom_new();
    ms_prom_family(p, "g", MS_PROM_GAUGE, "G.");
    assert_int_equal(ms_prom_sample(p, "g", NAN, "i", "1", NULL), MS_OK);
    assert_int_equal(ms_prom_sample(p, "g", INFINITY, "i", "2", NULL), MS_OK);
    assert_int_equal(ms_prom_sample(p, "g", 2.5, "i", "3", NULL), MS_OK);
    char *text = ms_prom_text(p, NULL);
    assert_non_null(strstr(text, "g{i=\"1\"} NaN\n"));
    assert_non_null(strstr(text, "g{i=\"2\"} +Inf\n"));
    assert_non_null(strstr(text, "g{i=\"3\"} 2.5\n"));
    free(text);
    ms_prom_destroy(&p);
}

//  --------------------------------------------------------------------------
//  What the format forbids is refused, and the page stays valid.

static void
test_refused(void **state)
{
    (void) state;
    ms_prom_t *p = ms_prom_new();
    assert_int_equal(ms_prom_family(p, "", MS_PROM_GAUGE, "x"), MS_ERR_INVALID);
    assert_int_equal(ms_prom_family(p, "9lives", MS_PROM_GAUGE, "x"),
                     MS_ERR_INVALID);
    assert_int_equal(ms_prom_family(p, "a-b", MS_PROM_GAUGE, "x"),
                     MS_ERR_INVALID);
    assert_int_equal(ms_prom_family(p, "ok:name_1", MS_PROM_GAUGE, NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_prom_family(p, "c_total", MS_PROM_COUNTER, "C."),
                     MS_OK);
    assert_int_equal(ms_prom_family(p, "c_total", MS_PROM_GAUGE, "C."),
                     MS_ERR_CONFLICT);
    assert_int_equal(ms_prom_sample(p, "nope", 1, NULL), MS_ERR_NOTFOUND);
    assert_int_equal(ms_prom_sample(p, "c_total", -1, NULL), MS_ERR_INVALID);
    assert_int_equal(ms_prom_sample(p, "c_total", NAN, NULL), MS_ERR_INVALID);
    assert_int_equal(ms_prom_sample(p, "c_total", 1, "__x", "v", NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_prom_sample(p, "c_total", 1, "a:b", "v", NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_prom_sample(p, "c_total", 1, "k", "v", "k", "w", NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_prom_sample(p, "c_total", 1, "k", "v", NULL), MS_OK);
    assert_int_equal(ms_prom_sample(p, "c_total", 2, "k", "v", NULL),
                     MS_ERR_CONFLICT);
    assert_int_equal(ms_prom_sample(p, "c_total", 2, NULL), MS_OK);
    assert_int_equal(ms_prom_sample(p, "c_total", 3, NULL), MS_ERR_CONFLICT);
    char *text = ms_prom_text(p, NULL);
    assert_string_equal(text, "# HELP c_total C.\n"
                              "# TYPE c_total counter\n"
                              "c_total{k=\"v\"} 1\n"
                              "c_total 2\n");
    free(text);
    // A family with no sample keeps its HELP and TYPE lines.
    assert_int_equal(ms_prom_family(p, "empty", MS_PROM_GAUGE, "E."), MS_OK);
    text = ms_prom_text(p, NULL);
    assert_non_null(strstr(text, "# HELP empty E.\n# TYPE empty gauge\n"));
    free(text);
    ms_prom_destroy(&p);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_families_grouped),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
