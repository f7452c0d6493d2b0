/*  =========================================================================
    ms_wire_canon - canonical JSON: the one byte form that ids hash and
    signatures sign

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Why a canonical form. A sweep id is the hash of the expanded spec and
    a task id the hash of a config (DESIGN.md "Sweep specification"); the
    signatures of later issues sign records in the same spirit. Two nodes
    must therefore turn the same value into the same bytes, whatever the
    order in which the keys were inserted, whatever the JSON library's
    default formatting, and whatever printf does with a double on another
    libc. jansson's own json_dumps is close, but it prints reals with
    "%.17g" (so 0.1 becomes 0.10000000000000001) and its options vary
    between versions; so the walk over the value is ours, and jansson only
    holds the tree.

    The rules (they are the contract; changing one changes every id):

    1. No whitespace anywhere. Arrays keep their order. Objects are
       written with their keys sorted by bytes: memcmp of the UTF-8
       encodings, a key that is a prefix of another first (this is the
       strcmp order for keys without NUL; RFC 8785 sorts by UTF-16 code
       units instead, which differs only for characters above U+FFFF
       against U+E000..U+FFFF and is not worth the cost here).
    2. Strings (keys and values): '"' and '\' are escaped with a
       backslash; the control characters U+0000..U+001F are written as \b
       \f \n \r \t where JSON has a short form, else as \u00xx with
       lowercase hex; everything else, including '/', DEL and all
       non-ASCII characters, is written as its UTF-8 bytes. Invalid UTF-8
       is refused (jansson checks it when a string is made, and we check
       again because json_string_nocheck exists).
    3. true, false, null as such. Integers (json_integer) in plain
       decimal, "-" for negatives, no leading zeros, no "+".
    4. Reals (json_real): the shortest decimal digit string d1..dn whose
       correctly rounded reading is exactly the double: we try
       precisions 1..17 with "%.*e" (glibc prints correctly rounded) and
       keep the first that strtod reads back bit for bit. Let the value
       be 0.d1..dn x 10^k. The layout is that of Python's repr(float)
       (so a Python script can reproduce any id): when -4 < k <= 16,
       fixed notation with at least one digit on each side of the point
       ("0.001", "100.0", "123.25", "-0.0"); otherwise d1[.d2..dn]e±XX
       with a sign and at least two exponent digits ("1e-05", "1e-08",
       "2.5e+16", "5e-324"). A real always shows '.' or 'e', so it never
       reads back as an integer, and a real with an integral value stays a
       real ("1.0"): 1 and 1.0 are different configs in JSON terms and we
       keep the type the encoder chose. -0.0 keeps its sign.
       One known difference from Python: at a power of two the rounding
       interval is lopsided, and the correctly rounded p-digit string can
       miss it while a farther p-digit string hits it; we then print p+1
       digits where Python prints p. Either way the text reads back as
       the same double and is a pure function of it, which is all an id
       needs.
    5. NaN and infinities have no JSON form: the dump fails (NULL).

    What was not done: RFC 8785 (JCS) prints numbers as ECMAScript does
    (1e21 vs 1e+21, 100 for 100.0); it would merge integers and reals,
    and the configs here must say which fields are floats. Binary
    encodings (CBOR canonical) would need a second library and are not
    readable in the store or the API.
*/
#include "ms_wire_canon.h"
#include "ms_text.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Append one byte.

static void
s_buf_putc(ms_text_t *buf, char c)
{
    ms_text_append(buf, &c, 1);
}

//  --------------------------------------------------------------------------
//  Length of the valid UTF-8 sequence at s (n bytes left), or 0.

static size_t
s_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    uint32_t cp;
    if (c < 0x80)
        return 1;
    else if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        cp = c & 0x07;
    } else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    //  Overlong forms, surrogates, beyond U+10FFFF.
    if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return len;
}

//  --------------------------------------------------------------------------
//  Append a quoted, escaped string (rule 2).

static void
s_put_string(ms_text_t *buf, const char *str, size_t n)
{
    static const char s_hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *) str;
    s_buf_putc(buf, '"');
    size_t i = 0;
    while (i < n && !buf->failed) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char) c};
            ms_text_append(buf, esc, 2);
            i++;
        } else if (c < 0x20) {
            const char *shortform = NULL;
            switch (c) {
            case '\b':
                shortform = "\\b";
                break;
            case '\f':
                shortform = "\\f";
                break;
            case '\n':
                shortform = "\\n";
                break;
            case '\r':
                shortform = "\\r";
                break;
            case '\t':
                shortform = "\\t";
                break;
            default:
                break;
            }
            if (shortform)
                ms_text_append(buf, shortform, 2);
            else {
                char esc[6] = {'\\', 'u',           '0',
                               '0',  s_hex[c >> 4], s_hex[c & 0xf]};
                ms_text_append(buf, esc, 6);
            }
            i++;
        } else {
            size_t len = s_utf8_len(s + i, n - i);
            if (len == 0) {
                buf->failed = true;
                return;
            }
            ms_text_append(buf, str + i, len);
            i += len;
        }
    }
    s_buf_putc(buf, '"');
}

//  --------------------------------------------------------------------------
//  Canonical decimal of a double (rule 4).

int
ms_wire_canon_format_double(double v, char *out, size_t n)
{
    if (n > 0)
        out[0] = '\0';
    if (!isfinite(v))
        return -1;
    //  Shortest correctly rounded digits that read back exactly.
    char sci[40];
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(sci, sizeof sci, "%.*e", precision - 1, v);
        if (strtod(sci, NULL) == v && signbit(strtod(sci, NULL)) == signbit(v))
            break;
    }
    //  sci is [-]D[.DDD]e±XX: split into sign, digits and exponent.
    const char *p = sci;
    bool negative = false;
    if (*p == '-') {
        negative = true;
        p++;
    }
    char digits[20];
    int n_digits = 0;
    while (*p && *p != 'e') {
        if (*p != '.' && n_digits < (int) sizeof digits - 1)
            digits[n_digits++] = *p;
        p++;
    }
    int exp10 = *p == 'e' ? atoi(p + 1) : 0;
    while (n_digits > 1 && digits[n_digits - 1] == '0')
        n_digits--;
    digits[n_digits] = '\0';
    //  Value = 0.DIGITS x 10^decpt.
    int decpt = exp10 + 1;
    char text[MS_WIRE_CANON_DOUBLE_MAX + 8];
    int len = 0;
    if (negative)
        text[len++] = '-';
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            text[len++] = '0';
            text[len++] = '.';
            for (int i = 0; i < -decpt; i++)
                text[len++] = '0';
            memcpy(text + len, digits, (size_t) n_digits);
            len += n_digits;
        } else if (decpt < n_digits) {
            memcpy(text + len, digits, (size_t) decpt);
            len += decpt;
            text[len++] = '.';
            memcpy(text + len, digits + decpt, (size_t) (n_digits - decpt));
            len += n_digits - decpt;
        } else {
            memcpy(text + len, digits, (size_t) n_digits);
            len += n_digits;
            for (int i = n_digits; i < decpt; i++)
                text[len++] = '0';
            text[len++] = '.';
            text[len++] = '0';
        }
        text[len] = '\0';
    } else {
        text[len++] = digits[0];
        if (n_digits > 1) {
            text[len++] = '.';
            memcpy(text + len, digits + 1, (size_t) (n_digits - 1));
            len += n_digits - 1;
        }
        int e = decpt - 1;
        len += snprintf(text + len, sizeof text - (size_t) len, "e%c%02d",
                        e < 0 ? '-' : '+', e < 0 ? -e : e);
    }
    if ((size_t) len + 1 > n)
        return -1;
    memcpy(out, text, (size_t) len + 1);
    return len;
}

//  One object member, for sorting.
typedef struct {
    const char *key; // borrowed from the object
    size_t key_len;  // bytes (keys may hold NUL in jansson >= 2.14)
    json_t *value;   // borrowed
} s_member_t;

//  --------------------------------------------------------------------------
//  Byte order of keys (rule 1).

static int
s_member_compare(const void *a, const void *b)
{
    const s_member_t *ma = a, *mb = b;
    size_t n = ma->key_len < mb->key_len ? ma->key_len : mb->key_len;
    int c = memcmp(ma->key, mb->key, n);
    if (c)
        return c;
    return (ma->key_len > mb->key_len) - (ma->key_len < mb->key_len);
}

static void s_put_value(ms_text_t *buf, const json_t *value, int depth);

//  --------------------------------------------------------------------------
//  Append an object with sorted keys.

static void
s_put_object(ms_text_t *buf, const json_t *object, int depth)
{
    size_t n = json_object_size(object);
    s_member_t *members = n ? calloc(n, sizeof *members) : NULL;
    if (n && !members) {
        buf->failed = true;
        return;
    }
    size_t i = 0;
    const char *key;
    size_t key_len;
    json_t *value;
    //  json_object_keylen_foreach takes a non-const object; it only reads.
    json_t *mutable_object = (json_t *) object;
    json_object_keylen_foreach(mutable_object, key, key_len, value)
    {
        if (i < n)
            members[i++] = (s_member_t){key, key_len, value};
    }
    n = i;
    if (n > 1)
        qsort(members, n, sizeof *members, s_member_compare);
    s_buf_putc(buf, '{');
    for (i = 0; i < n && !buf->failed; i++) {
        if (i)
            s_buf_putc(buf, ',');
        s_put_string(buf, members[i].key, members[i].key_len);
        s_buf_putc(buf, ':');
        s_put_value(buf, members[i].value, depth + 1);
    }
    s_buf_putc(buf, '}');
    free(members);
}

//  --------------------------------------------------------------------------
//  Append any value.

static void
s_put_value(ms_text_t *buf, const json_t *value, int depth)
{
    //  jansson refuses cycles at insertion, but a hand-made deep tree
    //  could still exhaust the stack: cap the depth.
    if (buf->failed || !value || depth > 2048) {
        buf->failed = true;
        return;
    }
    switch (json_typeof(value)) {
    case JSON_OBJECT:
        s_put_object(buf, value, depth);
        break;
    case JSON_ARRAY:
        s_buf_putc(buf, '[');
        for (size_t i = 0; i < json_array_size(value) && !buf->failed; i++) {
            if (i)
                s_buf_putc(buf, ',');
            s_put_value(buf, json_array_get(value, i), depth + 1);
        }
        s_buf_putc(buf, ']');
        break;
    case JSON_STRING:
        s_put_string(buf, json_string_value(value), json_string_length(value));
        break;
    case JSON_INTEGER: {
        char text[32];
        int len = snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT,
                           json_integer_value(value));
        ms_text_append(buf, text, (size_t) len);
        break;
    }
    case JSON_REAL: {
        char text[MS_WIRE_CANON_DOUBLE_MAX];
        int len = ms_wire_canon_format_double(json_real_value(value), text,
                                              sizeof text);
        if (len < 0)
            buf->failed = true;
        else
            ms_text_append(buf, text, (size_t) len);
        break;
    }
    case JSON_TRUE:
        ms_text_append(buf, "true", 4);
        break;
    case JSON_FALSE:
        ms_text_append(buf, "false", 5);
        break;
    case JSON_NULL:
        ms_text_append(buf, "null", 4);
        break;
    }
}

//  --------------------------------------------------------------------------
//  Canonical bytes of a value, with length.

char *
ms_wire_canon_dump_len(const json_t *value, size_t *len)
{
    ms_text_t buf = {0};
    if (!value)
        return NULL;
    s_put_value(&buf, value, 0);
    if (buf.failed || !buf.data) {
        free(buf.data);
        return NULL;
    }
    if (len)
        *len = buf.len;
    return buf.data;
}

//  --------------------------------------------------------------------------
//  Canonical bytes of a value.

char *
ms_wire_canon_dump(const json_t *value)
{
    return ms_wire_canon_dump_len(value, NULL);
}
