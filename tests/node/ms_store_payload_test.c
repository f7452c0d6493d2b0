/*  =========================================================================
    ms_store_payload_test - result rows that cannot be true are refused
    (cases/README.md case 7), on the scanner's fast path and on jansson's

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_store_payload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  Encode ROW as a result payload and decode it back; the decode's code.
static int
s_decode_row(const char *row)
{
    ms_store_payload_t p;
    memset(&p, 0, sizeof p);
    p.kind = MS_RECORD_RESULT;
    memset(p.u.result.task_id, 7, sizeof p.u.result.task_id);
    p.u.result.row_json = (char *) row;
    p.u.result.row_len = strlen(row);
    p.u.result.slot = 0;
    p.u.result.epoch = 1;
    uint8_t *buf = NULL;
    size_t len = 0;
    assert_int_equal(ms_store_payload_encode(&p, &buf, &len), MS_OK);
    ms_store_payload_t *out = NULL;
    int rc = ms_store_payload_decode(MS_RECORD_RESULT, buf, len, &out);
    free(buf);
    ms_store_payload_destroy(&out);
    return rc;
}

//  The same row, once plain (the scanner decides) and once with a \u
//  escape in an unrelated string (jansson decides): same answer.
static void
s_both(const char *fields, int want)
{
    char plain[1024], slow[1024];
    snprintf(plain, sizeof plain, "{\"error\": null, %s}", fields);
    snprintf(slow, sizeof slow, "{\"error\": \"\\u00e9\", %s}", fields);
    assert_int_equal(s_decode_row(plain), want);
    assert_int_equal(s_decode_row(slow), want);
}

static void
test_possible_rows_are_kept(void **state)
{
    (void) state;
    s_both("\"status\": \"ok\", \"epochs\": 3, \"val_accuracy\": 0.85, "
           "\"val_loss\": 0.41, \"test_accuracy\": 0.8431, \"test_loss\": 0.44",
           MS_OK);
    // bounds are inclusive
    s_both("\"status\": \"ok\", \"epochs\": 1, \"test_accuracy\": 1.0, "
           "\"test_loss\": 0",
           MS_OK);
    // no validation split: null validation metrics
    s_both("\"status\": \"ok\", \"epochs\": 2, \"val_accuracy\": null, "
           "\"val_loss\": null, \"test_accuracy\": 0.5, \"test_loss\": 1.5",
           MS_OK);
    // a noop row: no metrics at all
    s_both("\"status\": \"ok\", \"epochs\": 0, \"val_accuracy\": null, "
           "\"val_loss\": null, \"test_accuracy\": null, \"test_loss\": null",
           MS_OK);
    // diverged and failed rows carry whatever their metrics were
    s_both("\"status\": \"diverged\", \"epochs\": 4, \"test_accuracy\": null, "
           "\"test_loss\": null",
           MS_OK);
    s_both("\"status\": \"failed\", \"epochs\": 1, \"test_accuracy\": 7",
           MS_OK);
}

static void
test_impossible_rows_are_refused(void **state)
{
    (void) state;
    // accuracy above 1.0 (case 7), below 0, a validation accuracy too
    s_both("\"status\": \"ok\", \"epochs\": 3, \"test_accuracy\": 1.05, "
           "\"test_loss\": 0.3",
           MS_ERR_INVALID);
    s_both("\"status\": \"ok\", \"epochs\": 3, \"test_accuracy\": -0.1, "
           "\"test_loss\": 0.3",
           MS_ERR_INVALID);
    s_both("\"status\": \"ok\", \"epochs\": 3, \"val_accuracy\": 2, "
           "\"test_accuracy\": 0.5, \"test_loss\": 0.3",
           MS_ERR_INVALID);
    // a NaN loss with status ok: written as null by a worker (case 7)
    s_both("\"status\": \"ok\", \"epochs\": 3, \"test_accuracy\": 0.5, "
           "\"test_loss\": null",
           MS_ERR_INVALID);
    // a negative loss; a metric that is not a number
    s_both("\"status\": \"ok\", \"epochs\": 3, \"test_accuracy\": 0.5, "
           "\"test_loss\": -1e-3",
           MS_ERR_INVALID);
    s_both("\"status\": \"ok\", \"epochs\": 3, \"test_accuracy\": \"0.5\", "
           "\"test_loss\": 0.2",
           MS_ERR_INVALID);
    // NaN is not JSON at all
    assert_int_equal(
        s_decode_row("{\"status\": \"ok\", \"epochs\": 3, "
                     "\"test_accuracy\": 0.5, \"test_loss\": NaN}"),
        MS_ERR_INVALID);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_possible_rows_are_kept),
        cmocka_unit_test(test_impossible_rows_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
