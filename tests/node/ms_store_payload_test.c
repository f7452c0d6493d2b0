/*  =========================================================================
    ms_store_payload_test - result rows that cannot be true are refused
    (cases/README.md case 7), on the scanner's fast path and on jansson's;
    the fields a verdict reads are the same on both

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_store_payload.h"

#include <math.h>
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

//  ms_store_payload_row_verdict on ROW (the fast path when plain) and on
//  ROW with a \u escape added in an unrelated string (jansson): both give
//  WANT_ACC, WANT_LOSS (NAN: not a number) and the digests' first bytes.
static void
s_verdict_both(const char *fields, double want_acc, double want_loss, int fp0,
               int wd0)
{
    char plain[1024], slow[1024];
    snprintf(plain, sizeof plain, "{\"status\": \"ok\"%s%s}",
             fields[0] ? ", " : "", fields);
    snprintf(slow, sizeof slow, "{\"error\": \"\\u00e9\"%s%s}",
             fields[0] ? ", " : "", fields);
    const char *rows[] = {plain, slow};
    for (int k = 0; k < 2; k++) {
        ms_store_row_verdict_t v;
        assert_int_equal(
            ms_store_payload_row_verdict(rows[k], strlen(rows[k]), &v), MS_OK);
        if (isnan(want_acc))
            assert_true(isnan(v.test_accuracy));
        else
            assert_true(v.test_accuracy == want_acc);
        if (isnan(want_loss))
            assert_true(isnan(v.test_loss));
        else
            assert_true(v.test_loss == want_loss);
        assert_int_equal(v.fingerprint[0], fp0);
        assert_int_equal(v.fingerprint[31], fp0);
        assert_int_equal(v.weights_digest[0], wd0);
        assert_int_equal(v.weights_digest[31], wd0);
    }
}

static void
test_verdict_fields_match_jansson(void **state)
{
    (void) state;
    char ab[65], cd[65], fields[600];
    memset(ab, 'a', 64);
    ab[64] = 0;
    memset(cd, 'c', 64);
    cd[64] = 0;
    snprintf(fields, sizeof fields,
             "\"test_accuracy\": 0.8431, \"test_loss\": 0.44, "
             "\"fingerprint\": \"%s\", \"weights_digest\": \"%s\", "
             "\"platform\": {\"fingerprint\": \"%s\"}, \"curve\": [1, {}]",
             ab, cd, cd);
    s_verdict_both(fields, 0.8431, 0.44, 0xaa, 0xcc);
    // absent: 0 and zero digests; null or a string: NaN
    s_verdict_both("", 0.0, 0.0, 0, 0);
    s_verdict_both("\"test_accuracy\": null, \"test_loss\": \"1\"", NAN, NAN, 0,
                   0);
    // integers; a digest of the wrong length or not hex, or not a string
    snprintf(fields, sizeof fields,
             "\"test_accuracy\": 1, \"test_loss\": 2, \"fingerprint\": "
             "\"%.63s\", \"weights_digest\": 7",
             ab);
    s_verdict_both(fields, 1.0, 2.0, 0, 0);
    snprintf(fields, sizeof fields,
             "\"fingerprint\": \"%.63sz\", \"weights_digest\": \"%s\"", ab, cd);
    s_verdict_both(fields, 0.0, 0.0, 0, 0xcc);
    // an escaped digest: jansson decides (and unescapes it)
    snprintf(fields, sizeof fields, "\"fingerprint\": \"\\u0061%.63s\"", ab);
    s_verdict_both(fields, 0.0, 0.0, 0xaa, 0);
    // not an object: MS_ERR_INVALID, all zero
    ms_store_row_verdict_t v;
    memset(&v, 0xff, sizeof v);
    assert_int_equal(ms_store_payload_row_verdict("[1]", 3, &v),
                     MS_ERR_INVALID);
    assert_true(v.test_accuracy == 0.0 && v.fingerprint[0] == 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_possible_rows_are_kept),
        cmocka_unit_test(test_impossible_rows_are_refused),
        cmocka_unit_test(test_verdict_fields_match_jansson),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
