/*  =========================================================================
    ms_hash_test - BLAKE2b-256 vectors, incremental hashing, files, hex

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_hash.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

//  Reference digests from Python's hashlib.blake2b(digest_size=32).
#define S_EMPTY_HEX                                                            \
    "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"
#define S_ABC_HEX                                                              \
    "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319"
//  200000 bytes, byte i = i % 251 (spans several 64 KiB file reads).
#define S_BIG_HEX                                                              \
    "04bb8ecaae05b9024a76314d4e774b4bda8ad4c662e5dc008764fc6c37284653"
#define S_BIG_N 200000

//  --------------------------------------------------------------------------
//  The big test message.

static uint8_t *
s_big_message(void)
{
    uint8_t *data = malloc(S_BIG_N);
    assert_non_null(data);
    for (size_t i = 0; i < S_BIG_N; i++)
        data[i] = (uint8_t) (i % 251);
    return data;
}

//  --------------------------------------------------------------------------
//  Hex of a hash, for comparisons.

static void
s_check_hex(const ms_hash_t *h, const char *expected)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(h, hex);
    assert_string_equal(hex, expected);
}

static void
test_known_vectors(void **state)
{
    (void) state;
    ms_hash_t h;
    ms_hash_bytes("", 0, &h);
    s_check_hex(&h, S_EMPTY_HEX);
    ms_hash_bytes(NULL, 0, &h);
    s_check_hex(&h, S_EMPTY_HEX);
    ms_hash_bytes("abc", 3, &h);
    s_check_hex(&h, S_ABC_HEX);
    uint8_t *big = s_big_message();
    ms_hash_bytes(big, S_BIG_N, &h);
    s_check_hex(&h, S_BIG_HEX);
    free(big);
}

static void
test_incremental_equals_one_shot(void **state)
{
    (void) state;
    uint8_t *big = s_big_message();
    //  Uneven pieces, including empty ones.
    const size_t pieces[] = {0, 1, 127, 128, 129, 0, 4096, 65536, 7};
    ms_hasher_t hasher;
    ms_hasher_init(&hasher);
    size_t at = 0;
    for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++) {
        ms_hasher_update(&hasher, big + at, pieces[i]);
        at += pieces[i];
    }
    ms_hasher_update(&hasher, big + at, S_BIG_N - at);
    ms_hash_t inc, one;
    ms_hasher_final(&hasher, &inc);
    ms_hash_bytes(big, S_BIG_N, &one);
    assert_true(ms_hash_equal(&inc, &one));
    s_check_hex(&inc, S_BIG_HEX);
    //  The hasher can be reused after a new init.
    ms_hasher_init(&hasher);
    ms_hasher_update(&hasher, "ab", 2);
    ms_hasher_update(&hasher, "c", 1);
    ms_hasher_final(&hasher, &inc);
    s_check_hex(&inc, S_ABC_HEX);
    free(big);
}

static void
test_hash_file(void **state)
{
    (void) state;
    char path[] = "/tmp/ms_hash_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    uint8_t *big = s_big_message();
    assert_int_equal(write(fd, big, S_BIG_N), S_BIG_N);
    close(fd);
    ms_hash_t h;
    ms_diag_t diag;
    assert_int_equal(ms_hash_file(path, &h, &diag), MS_OK);
    s_check_hex(&h, S_BIG_HEX);
    //  An empty file hashes as the empty string.
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(ms_hash_file(path, &h, &diag), MS_OK);
    s_check_hex(&h, S_EMPTY_HEX);
    unlink(path);
    //  A missing file names itself.
    memset(&h, 0x5a, sizeof h);
    ms_hash_t before = h;
    assert_int_equal(ms_hash_file(path, &h, &diag), MS_ERR_IO);
    assert_string_equal(diag.where, path);
    assert_non_null(strstr(diag.reason, "cannot open"));
    assert_true(ms_hash_equal(&h, &before));
    //  A directory cannot be read as a file.
    assert_int_equal(ms_hash_file("/", &h, &diag), MS_ERR_IO);
    free(big);
}

static void
test_hex_round_trip(void **state)
{
    (void) state;
    ms_hash_t h, back;
    ms_hash_bytes("abc", 3, &h);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    assert_int_equal(strlen(hex), MS_HASH_HEX_LEN);
    assert_int_equal(ms_hash_from_hex(hex, &back), MS_OK);
    assert_true(ms_hash_equal(&h, &back));
    assert_memory_equal(h.bytes, back.bytes, MS_HASH_BYTES);
    //  Upper case is accepted.
    char upper[] =
        "BDDD813C634239723171EF3FEE98579B94964E3BB1CB3E427262C8C068D52319";
    assert_int_equal(ms_hash_from_hex(upper, &back), MS_OK);
    assert_true(ms_hash_equal(&h, &back));
}

static void
test_bad_hex_refused(void **state)
{
    (void) state;
    ms_hash_t h, before;
    memset(&h, 0x11, sizeof h);
    before = h;
    assert_int_equal(ms_hash_from_hex(NULL, &h), MS_ERR_INVALID);
    assert_int_equal(ms_hash_from_hex("", &h), MS_ERR_INVALID);
    assert_int_equal(ms_hash_from_hex("abc", &h), MS_ERR_INVALID);
    //  63 characters, 65 characters, a non-hex character, a space.
    char s63[] = S_ABC_HEX;
    s63[63] = '\0';
    assert_int_equal(ms_hash_from_hex(s63, &h), MS_ERR_INVALID);
    assert_int_equal(ms_hash_from_hex(S_ABC_HEX "0", &h), MS_ERR_INVALID);
    char bad[] = S_ABC_HEX;
    bad[17] = 'g';
    assert_int_equal(ms_hash_from_hex(bad, &h), MS_ERR_INVALID);
    bad[17] = ' ';
    assert_int_equal(ms_hash_from_hex(bad, &h), MS_ERR_INVALID);
    assert_true(ms_hash_equal(&h, &before));
}

static void
test_equal_and_zero(void **state)
{
    (void) state;
    ms_hash_t a, b, zero;
    memset(&zero, 0, sizeof zero);
    ms_hash_bytes("a", 1, &a);
    ms_hash_bytes("b", 1, &b);
    assert_false(ms_hash_equal(&a, &b));
    assert_true(ms_hash_equal(&a, &a));
    assert_true(ms_hash_is_zero(&zero));
    assert_false(ms_hash_is_zero(&a));
    //  One bit of difference is seen.
    b = a;
    b.bytes[31] ^= 1;
    assert_false(ms_hash_equal(&a, &b));
}

//  A per-id table as the node keeps them: a key not at offset 0, fields
//  that must start at zero.
typedef struct {
    int hits;     // filled in by the caller
    ms_hash_t id; // the key
    char tag[12]; // a default set when the entry is new
} s_entry_t;

static void
test_entry_find_or_add(void **state)
{
    (void) state;
    s_entry_t *table = NULL;
    size_t n = 0;
    ms_hash_t a, b;
    ms_hash_bytes("a", 1, &a);
    ms_hash_bytes("b", 1, &b);
    bool added = false;
    s_entry_t *e = ms_hash_entry(&table, &n, sizeof *table,
                                 offsetof(s_entry_t, id), &a, &added);
    assert_non_null(e);
    assert_true(added);
    assert_int_equal(n, 1);
    assert_ptr_equal(e, &table[0]);
    assert_true(ms_hash_equal(&e->id, &a));
    assert_int_equal(e->hits, 0);
    assert_string_equal(e->tag, "");
    e->hits = 3;
    snprintf(e->tag, sizeof e->tag, "first");
    //  A second key appends; the first entry keeps its fields.
    e = ms_hash_entry(&table, &n, sizeof *table, offsetof(s_entry_t, id), &b,
                      NULL);
    assert_non_null(e);
    assert_int_equal(n, 2);
    assert_ptr_equal(e, &table[1]);
    assert_int_equal(e->hits, 0);
    //  The first key again finds its entry and adds none.
    e = ms_hash_entry(&table, &n, sizeof *table, offsetof(s_entry_t, id), &a,
                      &added);
    assert_false(added);
    assert_int_equal(n, 2);
    assert_ptr_equal(e, &table[0]);
    assert_int_equal(e->hits, 3);
    assert_string_equal(e->tag, "first");
    free(table);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_incremental_equals_one_shot),
        cmocka_unit_test(test_hash_file),
        cmocka_unit_test(test_hex_round_trip),
        cmocka_unit_test(test_bad_hex_refused),
        cmocka_unit_test(test_equal_and_zero),
        cmocka_unit_test(test_entry_find_or_add),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
