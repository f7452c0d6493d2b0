/*  =========================================================================
    ms_text - a growing text buffer

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Room for NEED bytes in all (doubling; 256 at first); false when
//  memory runs out (failed is set).

static bool
s_reserve(ms_text_t *t, size_t need)
{
    if (need <= t->cap)
        return true;
    size_t cap = t->cap ? t->cap * 2 : 256;
    while (cap < need)
        cap *= 2;
    char *p = realloc(t->data, cap);
    if (!p) {
        t->failed = true;
        return false;
    }
    t->data = p;
    t->cap = cap;
    return true;
}

//  --------------------------------------------------------------------------
//  Append printf-style text.

void
ms_text_printf(ms_text_t *t, const char *fmt, ...)
{
    while (!t->failed) {
        size_t room = t->cap - t->len;
        va_list ap;
        va_start(ap, fmt);
        int n = t->data ? vsnprintf(t->data + t->len, room, fmt, ap) : -1;
        va_end(ap);
        if (n >= 0 && (size_t) n < room) {
            t->len += (size_t) n;
            return;
        }
        if (n < 0 && t->data) { // vsnprintf's own error: no room helps
            t->failed = true;
            return;
        }
        if (!s_reserve(t, t->len + (n > 0 ? (size_t) n : 0) + 1))
            return;
    }
}

//  --------------------------------------------------------------------------
//  Append bytes.

void
ms_text_append(ms_text_t *t, const void *bytes, size_t n)
{
    if (t->failed || !s_reserve(t, t->len + n + 1))
        return;
    memcpy(t->data + t->len, bytes, n);
    t->len += n;
    t->data[t->len] = '\0';
}
