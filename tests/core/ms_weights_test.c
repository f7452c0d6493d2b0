//  ms_weights: the trained-weights file round-trips, and every damaged or
//  truncated file gives one clear MS_ERR_INVALID naming what is wrong.
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "ms_weights.h"

static const uint32_t s_sizes[3] = {4, 3, 2}; // 3*(4+1) + 2*(3+1) = 23

static void
s_params(float *p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = (float) i * 0.25f - 1.5f;
    p[0] = -0.0f;
    p[1] = NAN; // bits travel as they are
}

static void
test_round_trip(void **state)
{
    (void) state;
    assert_int_equal(ms_weights_n_params(s_sizes, 3), 23);
    float p[23];
    s_params(p, 23);
    void *buf = NULL;
    size_t n = 0;
    ms_diag_t diag;
    assert_int_equal(
        ms_weights_encode(s_sizes, 3, p, 23, NULL, &buf, &n, &diag), MS_OK);
    assert_int_equal(n, 16 + 12 + 8 + 4 * 23 + 4);
    assert_memory_equal(buf, "MSWEIGHT\x01\0\0\0\x03\0\0\0\x04\0\0\0", 20);
    ms_weights_t *w = NULL;
    assert_int_equal(ms_weights_decode(buf, n, &w, &diag), MS_OK);
    assert_int_equal(w->n_sizes, 3);
    assert_memory_equal(w->sizes, s_sizes, sizeof s_sizes);
    assert_int_equal(w->n_params, 23);
    assert_memory_equal(w->params, p, sizeof p);
    ms_weights_destroy(&w);
    assert_null(w);
    ms_weights_destroy(&w); // NULL-safe

    //  Through a file.
    char path[] = "/tmp/ms_weights_testXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(
        ms_weights_write_file(path, s_sizes, 3, p, 23, NULL, &diag), MS_OK);
    assert_int_equal(ms_weights_read_file(path, 0, &w, &diag), MS_OK);
    assert_memory_equal(w->params, p, sizeof p);
    ms_weights_destroy(&w);
    assert_int_equal(ms_weights_read_file(path, 64, &w, &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "over the limit"));
    unlink(path);
    assert_int_equal(ms_weights_read_file(path, 0, &w, &diag), MS_ERR_NOTFOUND);
    assert_string_equal(diag.where, path);
    free(buf);
}

//  Expect decode of (buf, n) to fail with reason containing `what`.
static void
s_refused(const void *buf, size_t n, const char *what)
{
    ms_weights_t *w = (ms_weights_t *) 1;
    ms_diag_t diag;
    memset(&diag, 0, sizeof diag);
    assert_int_equal(ms_weights_decode(buf, n, &w, &diag), MS_ERR_INVALID);
    assert_null(w);
    if (!strstr(diag.reason, what))
        fail_msg("expected '%s', got '%s: %s'", what, diag.where, diag.reason);
}

static void
test_damaged(void **state)
{
    (void) state;
    float p[23];
    s_params(p, 23);
    uint8_t *buf = NULL;
    size_t n = 0;
    assert_int_equal(
        ms_weights_encode(s_sizes, 3, p, 23, NULL, (void **) &buf, &n, NULL),
        MS_OK);
    uint8_t *copy = malloc(n + 8);
    //  Every truncation is refused, none crashes.
    for (size_t k = 0; k < n; k++)
        s_refused(buf, k, k < 16 ? "truncated" : "truncated");
    //  Every flipped bit is refused (magic, version, sizes, CRC).
    for (size_t k = 0; k < n; k++)
        for (int bit = 0; bit < 8; bit++) {
            memcpy(copy, buf, n);
            copy[k] ^= (uint8_t) (1u << bit);
            ms_weights_t *w = NULL;
            ms_diag_t diag;
            assert_int_equal(ms_weights_decode(copy, n, &w, &diag),
                             MS_ERR_INVALID);
        }
    memcpy(copy, buf, n);
    copy[0] = 'X';
    s_refused(copy, n, "bad magic");
    memcpy(copy, buf, n);
    copy[8] = 3;
    s_refused(copy, n, "unsupported version 3");
    memcpy(copy, buf, n);
    copy[40] ^= 1; // a parameter byte
    s_refused(copy, n, "checksum mismatch");
    memcpy(copy, buf, n);
    copy[n] = 0;
    s_refused(copy, n + 1, "after the checksum");
    memcpy(copy, buf, n);
    copy[12] = 1; // one size
    s_refused(copy, n, "layer sizes");
    //  Encode refuses shapes that do not match.
    void *out = NULL;
    size_t m = 0;
    ms_diag_t diag;
    assert_int_equal(
        ms_weights_encode(s_sizes, 3, p, 22, NULL, &out, &m, &diag),
        MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "the shapes need 23"));
    uint32_t zero[2] = {0, 3};
    assert_int_equal(ms_weights_encode(zero, 2, p, 0, NULL, &out, &m, &diag),
                     MS_ERR_INVALID);
    assert_null(out);
    free(copy);
    free(buf);
}

//  Version 2: extra parameters and the metadata round-trip; damage to
//  the metadata is named.
static void
test_meta(void **state)
{
    (void) state;
    float p[26];
    s_params(p, 26);
    const char *meta = "{\"config\":{\"norm\":\"layer\"}}";
    void *buf = NULL;
    size_t n = 0;
    ms_diag_t diag;
    assert_int_equal(
        ms_weights_encode(s_sizes, 3, p, 26, meta, &buf, &n, &diag), MS_OK);
    assert_int_equal(n, 16 + 12 + 8 + 4 * 26 + 4 + strlen(meta) + 4);
    assert_int_equal(((uint8_t *) buf)[8], 2);
    ms_weights_t *w = NULL;
    assert_int_equal(ms_weights_decode(buf, n, &w, &diag), MS_OK);
    assert_int_equal(w->n_params, 26);
    assert_memory_equal(w->params, p, sizeof p);
    assert_string_equal(w->meta_json, meta);
    ms_weights_destroy(&w);
    //  Fewer parameters than the shapes need: refused even with metadata.
    void *out = NULL;
    size_t m = 0;
    assert_int_equal(
        ms_weights_encode(s_sizes, 3, p, 22, meta, &out, &m, &diag),
        MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "at least 23"));
    //  A NUL in the metadata (checksum made good): named.
    uint8_t *b = buf;
    size_t meta_at = 16 + 12 + 8 + 4 * 26 + 4;
    b[meta_at + 3] = 0;
    uLong crc = crc32(0L, Z_NULL, 0);
    crc = crc32(crc, b, (uInt) (n - 4));
    for (int i = 0; i < 4; i++)
        b[n - 4 + i] = (uint8_t) (crc >> (8 * i));
    assert_int_equal(ms_weights_decode(buf, n, &w, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "weights.meta");
    //  A truncated file.
    assert_int_equal(ms_weights_decode(buf, n - 10, &w, &diag), MS_ERR_INVALID);
    assert_null(w);
    free(buf);
    //  Without metadata, the file is version 1 (same bytes as before).
    assert_int_equal(
        ms_weights_encode(s_sizes, 3, p, 23, NULL, &buf, &n, &diag), MS_OK);
    assert_int_equal(((uint8_t *) buf)[8], 1);
    free(buf);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_damaged),
        cmocka_unit_test(test_meta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
