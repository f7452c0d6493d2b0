/*  =========================================================================
    ms_wire_canon_test - canonical JSON: key order, escapes, numbers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_wire_canon.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

//  Doubles (as bits) and Python 3's repr() of each, generated with
//  struct.unpack('<d', ...) and repr(): edge cases, then random bit
//  patterns, then random values over several decades.
static const struct {
    uint64_t bits;
    const char *text;
} s_vectors[] = {
    {0x0000000000000000ULL, "0.0"},
    {0x8000000000000000ULL, "-0.0"},
    {0x3ff0000000000000ULL, "1.0"},
    {0xbff0000000000000ULL, "-1.0"},
    {0x3fb999999999999aULL, "0.1"},
    {0x3f50624dd2f1a9fcULL, "0.001"},
    {0x3e45798ee2308c3aULL, "1e-08"},
    {0x3ee4f8b588e368f1ULL, "1e-05"},
    {0x3f1a36e2eb1c432dULL, "0.0001"},
    {0x4059000000000000ULL, "100.0"},
    {0x419d6f3454000000ULL, "123456789.0"},
    {0x430c6bf526340000ULL, "1000000000000000.0"},
    {0x4341c37937e08000ULL, "1e+16"},
    {0x4376345785d8a000ULL, "1e+17"},
    {0x4356345785d8a000ULL, "2.5e+16"},
    {0x3fd3333333333333ULL, "0.3"},
    {0x3fd5555555555555ULL, "0.3333333333333333"},
    {0x3fe5555555555555ULL, "0.6666666666666666"},
    {0x3f33a92a30553262ULL, "0.00030000000000000003"},
    {0x0000000000000001ULL, "5e-324"},
    {0x0010000000000000ULL, "2.2250738585072014e-308"},
    {0x7fefffffffffffffULL, "1.7976931348623157e+308"},
    {0x4480f0cf064dd592ULL, "1e+22"},
    {0x444b1ae4d6e2ef50ULL, "1e+21"},
    {0x4340000000000000ULL, "9007199254740992.0"},
    {0x3feff7ced916872bULL, "0.999"},
    {0x40c81cd6c8b43958ULL, "12345.678"},
    {0x400921f9f01b866eULL, "3.14159"},
    {0x3e7ad7f29abcaf48ULL, "1e-07"},
    {0x3de49da7e361ce4cULL, "1.5e-10"},
    {0x4011666666666666ULL, "4.35"},
    {0x3fd3333333333334ULL, "0.30000000000000004"},
    {0x54b249ad2594c37dULL, "1e+100"},
    {0xab2bff2ee48e0530ULL, "-1e-100"},
    {0x406fe00000000000ULL, "255.0"},
    {0x3fe0000000000000ULL, "0.5"},
    {0x44dfe185ca57c517ULL, "6.02214076e+23"},
    {0xf2a74de452e6b438ULL, "-1.989032661366619e+244"},
    {0x6513270e269e0d37ULL, "7.761117632285041e+178"},
    {0x0c5c7fd0a6a3a450ULL, "3.980498358697587e-249"},
    {0xd23f0824128b2f33ULL, "-1.5432835417340557e+88"},
    {0x1818e811892f902bULL, "1.3647584518757569e-192"},
    {0x9531985d5d9dc9f8ULL, "-1.3701135617873088e-206"},
    {0xe8e25d940ed90475ULL, "-1.7160537630466207e+197"},
    {0x36f675cc81e74ef5ULL, "6.294675241195386e-44"},
    {0x1600a35a099950d8ULL, "1.0613447212142254e-202"},
    {0x6b0d549b6f03675aULL, "4.708325160387546e+207"},
    {0x3d9c172411e20b8fULL, "6.387016158513563e-12"},
    {0x8d116ece1738f7d9ULL, "-9.973130378568733e-246"},
    {0x0f21ddb66cad4a26ULL, "8.779753225680271e-236"},
    {0x90c192cfd3ac94afULL, "-5.795503248498993e-228"},
    {0xf28c105d1fb17c23ULL, "-5.988180159386011e+243"},
    {0xa170b33839263059ULL, "-1.306052388527796e-147"},
    {0x953f48f1a09f76b5ULL, "-2.436117699484841e-206"},
    {0x0fd630f1f29d0da9ULL, "2.233386999150174e-232"},
    {0x95e60af593bd04cfULL, "-3.51527970626667e-203"},
    {0x0cb1e29c658cda14ULL, "1.5987381841032883e-247"},
    {0x3898d190f9ebdaccULL, "4.6678633181812096e-36"},
    {0x8e81973e0becd7b0ULL, "-8.441872792105456e-239"},
    {0x2217beaddbc496cbULL, "1.9015657400796622e-144"},
    {0x6b4cb2424a23d596ULL, "7.370437700706684e+208"},
    {0x8a6a63ec24ede6a4ULL, "-1.7163996725272777e-258"},
    {0x922766581e27a1c0ULL, "-3.2367190832119987e-221"},
    {0x8f6d05584ef8aa38ULL, "-2.2818334634712625e-234"},
    {0xae97ba94d0eda82fULL, "-3.0536383926309363e-84"},
    {0x1a61dbe22e44158bULL, "1.3449551894627777e-181"},
    {0x923a736994e3bf91ULL, "-7.317495976062606e-221"},
    {0x3fb05b2eed66b436ULL, "0.06389134689261841"},
    {0x40c307875f6b6720ULL, "9743.057599473337"},
    {0x3e70dad3544af723ULL, "6.278897497332314e-08"},
    {0x4018c2a88207a08dULL, "6.190095931735539"},
    {0x3fe5c5d62a207b45ULL, "0.6803999731817859"},
    {0x401f16d299921bbeULL, "7.77228774980807"},
    {0x40176c274a9e0146ULL, "5.855618635076388"},
    {0x3f37b25864c27b1fULL, "0.00036158235594456635"},
    {0x40f364df2ba1b159ULL, "79437.94815224911"},
    {0x3ee05aadaee23bc2ULL, "7.798296305842437e-06"},
    {0x404cb89f9d20660aULL, "57.442371025867104"},
    {0x3fa95996d266a012ULL, "0.04951163595552556"},
    {0x3f7de0c9c9fa603eULL, "0.0072944528943921765"},
    {0x3ed98aa5ce40a667ULL, "6.0895901903640364e-06"},
    {0x3fbe398f1061c0f0ULL, "0.11806577825496212"},
};

//  --------------------------------------------------------------------------
//  Double from its bits.

static double
s_from_bits(uint64_t bits)
{
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

//  --------------------------------------------------------------------------
//  Dump value, compare with expected, free both.

static void
s_expect(json_t *value, const char *expected)
{
    char *text = ms_wire_canon_dump(value);
    assert_non_null(text);
    assert_string_equal(text, expected);
    free(text);
    json_decref(value);
}

static void
test_doubles_match_python_repr(void **state)
{
    (void) state;
    for (size_t i = 0; i < sizeof s_vectors / sizeof s_vectors[0]; i++) {
        char out[MS_WIRE_CANON_DOUBLE_MAX];
        double v = s_from_bits(s_vectors[i].bits);
        int len = ms_wire_canon_format_double(v, out, sizeof out);
        assert_int_equal(len, (int) strlen(s_vectors[i].text));
        assert_string_equal(out, s_vectors[i].text);
        //  And it reads back bit for bit.
        double back = strtod(out, NULL);
        assert_memory_equal(&back, &v, sizeof v);
    }
}

static void
test_doubles_documented_forms(void **state)
{
    (void) state;
    char out[MS_WIRE_CANON_DOUBLE_MAX];
    ms_wire_canon_format_double(0.001, out, sizeof out);
    assert_string_equal(out, "0.001");
    ms_wire_canon_format_double(1e-8, out, sizeof out);
    assert_string_equal(out, "1e-08");
    ms_wire_canon_format_double(1.0, out, sizeof out);
    assert_string_equal(out, "1.0");
    ms_wire_canon_format_double(0.1, out, sizeof out);
    assert_string_equal(out, "0.1");
    ms_wire_canon_format_double(200.0, out, sizeof out);
    assert_string_equal(out, "200.0");
    ms_wire_canon_format_double(0.9, out, sizeof out);
    assert_string_equal(out, "0.9");
    ms_wire_canon_format_double(0.999, out, sizeof out);
    assert_string_equal(out, "0.999");
}

static void
test_doubles_round_trip_random(void **state)
{
    (void) state;
    //  Many random bit patterns: always parses back exactly and is never
    //  longer than %.17g would be.
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v = s_from_bits(x);
        if (!isfinite(v))
            continue;
        char out[MS_WIRE_CANON_DOUBLE_MAX];
        int len = ms_wire_canon_format_double(v, out, sizeof out);
        assert_true(len > 0);
        assert_true(strchr(out, '.') || strchr(out, 'e'));
        double back = strtod(out, NULL);
        assert_memory_equal(&back, &v, sizeof v);
    }
}

static void
test_non_finite_refused(void **state)
{
    (void) state;
    char out[MS_WIRE_CANON_DOUBLE_MAX];
    assert_int_equal(ms_wire_canon_format_double(NAN, out, sizeof out), -1);
    assert_int_equal(ms_wire_canon_format_double(INFINITY, out, sizeof out),
                     -1);
    assert_int_equal(ms_wire_canon_format_double(-INFINITY, out, sizeof out),
                     -1);
    //  A buffer too small is refused, not overrun.
    char small[4];
    assert_int_equal(ms_wire_canon_format_double(0.001, small, sizeof small),
                     -1);
    //  jansson refuses to make a NaN real, so build one via set.
    json_t *obj = json_pack("{s:f}", "x", 1.0);
    json_t *real = json_object_get(obj, "x");
    assert_int_equal(json_real_set(real, NAN), -1); // jansson refuses too
    json_decref(obj);
    assert_null(ms_wire_canon_dump(NULL));
}

static void
test_keys_sorted_no_whitespace(void **state)
{
    (void) state;
    json_t *a = json_pack("{s:i, s:i, s:i, s:{s:i, s:i}, s:[i, i]}", "b", 1,
                          "a", 2, "ab", 3, "z", "y", 1, "x", 2, "arr", 3, 1);
    json_t *b = json_pack("{s:[i, i], s:{s:i, s:i}, s:i, s:i, s:i}", "arr", 3,
                          1, "z", "x", 2, "y", 1, "ab", 3, "a", 2, "b", 1);
    char *ta = ms_wire_canon_dump(a);
    char *tb = ms_wire_canon_dump(b);
    assert_string_equal(ta, "{\"a\":2,\"ab\":3,\"arr\":[3,1],\"b\":1,"
                            "\"z\":{\"x\":2,\"y\":1}}");
    assert_string_equal(ta, tb);
    free(ta);
    free(tb);
    json_decref(a);
    json_decref(b);
    //  Byte order: upper case before lower case, and UTF-8 after ASCII.
    s_expect(json_pack("{s:i, s:i, s:i}", "b", 1, "B", 2, "\xc3\xa9", 3),
             "{\"B\":2,\"b\":1,\"\xc3\xa9\":3}");
    //  Empty containers.
    s_expect(json_pack("{s:{}, s:[]}", "o", "a"), "{\"a\":[],\"o\":{}}");
}

static void
test_scalars_and_types(void **state)
{
    (void) state;
    s_expect(json_pack("[i, I, f, f, b, b, n]", 0, (json_int_t) -12345678901,
                       1.0, 0.1, 1, 0),
             "[0,-12345678901,1.0,0.1,true,false,null]");
    //  An integer and a real with the same value stay different.
    s_expect(json_integer(200), "200");
    s_expect(json_real(200), "200.0");
    s_expect(json_real(1e-8), "1e-08");
    s_expect(json_real(-0.0), "-0.0");
}

static void
test_string_escapes(void **state)
{
    (void) state;
    s_expect(json_string("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
    s_expect(json_string("\b\f\n\r\t\x01\x1f\x7f"),
             "\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\"");
    //  Non-ASCII kept as UTF-8.
    s_expect(json_string("\xce\xbb\xe2\x82\xac\xf0\x9f\x98\x80"),
             "\"\xce\xbb\xe2\x82\xac\xf0\x9f\x98\x80\"");
    //  An embedded NUL (json_stringn) is escaped.
    s_expect(json_stringn("a\0b", 3), "\"a\\u0000b\"");
    //  Invalid UTF-8 slipped in with _nocheck is refused.
    json_t *bad = json_string_nocheck("\xff\xfe");
    assert_null(ms_wire_canon_dump(bad));
    json_decref(bad);
}

static void
test_stable_across_parse(void **state)
{
    (void) state;
    //  Canonical text parses back to a value with the same canonical text.
    const char *text = "{\"lr\":0.003,\"eps\":1e-08,\"n\":[1,2.5,\"x\"],"
                       "\"nested\":{\"b\":false,\"a\":null}}";
    json_t *v = json_loads(text, 0, NULL);
    assert_non_null(v);
    size_t len = 0;
    char *once = ms_wire_canon_dump_len(v, &len);
    assert_non_null(once);
    assert_int_equal(len, strlen(once));
    json_t *w = json_loads(once, 0, NULL);
    char *twice = ms_wire_canon_dump(w);
    assert_string_equal(once, twice);
    assert_string_equal(once, "{\"eps\":1e-08,\"lr\":0.003,"
                              "\"n\":[1,2.5,\"x\"],"
                              "\"nested\":{\"a\":null,\"b\":false}}");
    free(once);
    free(twice);
    json_decref(v);
    json_decref(w);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_doubles_match_python_repr),
        cmocka_unit_test(test_doubles_documented_forms),
        cmocka_unit_test(test_doubles_round_trip_random),
        cmocka_unit_test(test_non_finite_refused),
        cmocka_unit_test(test_keys_sorted_no_whitespace),
        cmocka_unit_test(test_scalars_and_types),
        cmocka_unit_test(test_string_escapes),
        cmocka_unit_test(test_stable_across_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
