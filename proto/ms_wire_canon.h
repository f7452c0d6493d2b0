/*  =========================================================================
    ms_wire_canon - canonical JSON: the one byte form that ids hash and
    signatures sign

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The same JSON value always gives the same bytes, on every machine:

    - no whitespace at all; objects with their keys sorted by bytes
      (strcmp order of the UTF-8 encoding); arrays in their order;
    - strings as jansson writes them by default: UTF-8 kept as is (no
      \uXXXX for non-ASCII), '"' and '\\' escaped, the other control
      characters as \b \f \n \r \t or \u00XX (jansson's default encoder,
      fixed behaviour since 2.0), '/' not escaped;
    - true, false, null as such;
    - integers (json_integer) in plain decimal: -12, 0, 200;
    - reals (json_real) as the shortest decimal that reads back as the
      same double, in the layout of Python's repr(float): fixed notation
      with at least one digit after the point when the decimal exponent
      is in [-4, 16) ("0.001", "0.0001", "100.0", "-0.0"), otherwise
      d[.ddd]e±XX with at least two exponent digits ("1e-05", "1e-08",
      "2.5e+16"). A real therefore always shows a '.' or an 'e', so it
      never reads back as an integer. NaN and infinities are refused.

    The full rules and their reasons are in the prose block of
    ms_wire_canon.c.
*/
#ifndef MS_WIRE_CANON_H
#define MS_WIRE_CANON_H

#include <stddef.h>

#include <jansson.h>

//  Longest text ms_wire_canon_format_double writes, NUL included
//  ("-2.2250738585072014e-308" is 24 characters).
#define MS_WIRE_CANON_DOUBLE_MAX 32

//  Canonical bytes of value (any JSON value, not only objects), as a
//  NUL-terminated string. Caller owns the result; free it with free().
//  Returns NULL when value is NULL, holds a NaN or infinite real, a
//  string that is not valid UTF-8, or when memory runs out. Thread-safe
//  (value is only read).
char *ms_wire_canon_dump(const json_t *value);

//  Same as ms_wire_canon_dump, also giving the length in *len (strings
//  may not contain NUL bytes in canonical JSON, so strlen works too).
char *ms_wire_canon_dump_len(const json_t *value, size_t *len);

//  Write the canonical decimal of v into out (n bytes, at least
//  MS_WIRE_CANON_DOUBLE_MAX is always enough), NUL-terminated: the
//  shortest digits that strtod reads back as exactly v, laid out as
//  Python's repr(float) does (see above). Returns the number of
//  characters written (without the NUL), or -1 for NaN or infinity or
//  when n is too small (out then holds an empty string if n > 0).
int ms_wire_canon_format_double(double v, char *out, size_t n);

#endif
