/*  =========================================================================
    ms_text - a growing text buffer

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    What the CSV writer, the events stream, the Prometheus page and the
    canonical JSON encoder build their text in; each had its own. A plain value:
   a zeroed ms_text_t is empty, the caller frees data (free) when done. An
   append that runs out of memory sets failed and every later one does nothing,
   so a caller checks once, at the end. data is NUL-terminated after every
    append (the NUL not counted in len); the bytes appended may hold NULs
    of their own.

    No state beyond the buffer: any thread, on a buffer it does not
    share.
*/
#ifndef MS_TEXT_H
#define MS_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char *data;  // the text (malloc'd, the caller frees it), or NULL
    size_t len;  // bytes used, without a NUL
    size_t cap;  // bytes allocated
    bool failed; // an append ran out of memory (or the user gave up on
                 // the text, e.g. a value with no canonical form): later
                 // appends do nothing
} ms_text_t;

//  Append printf-style text (and a NUL after it, not counted in len).
void ms_text_printf(ms_text_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//  Append N bytes as they are (and a NUL after them, not counted in len).
void ms_text_append(ms_text_t *t, const void *bytes, size_t n);

#endif
