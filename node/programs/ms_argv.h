/*  =========================================================================
    ms_argv - a NULL-terminated argument vector built word by word

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    What execv takes: an array of malloc'd strings ending with NULL. The
    builder records the first failure (out of memory, or a NULL word
    handed over) and ignores every later word, so a caller appends all its
    words and checks once at the end. Used by the sandbox's bwrap command
    (ms_sandbox) and the W&B command line (ms_program_command).

    Thread rule: an ms_argv_t belongs to its caller.
*/
#ifndef MS_ARGV_H
#define MS_ARGV_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    char **v;    // the words, NULL-terminated once one is added (or NULL)
    size_t n;    // words in v
    size_t cap;  // slots allocated
    bool failed; // a word could not be added: v is incomplete
} ms_argv_t;

//  Append WORD (a malloc'd string, taken; NULL marks the argv failed, so
//  `ms_argv_take(a, strdup(s))` needs no check of its own).
void ms_argv_take(ms_argv_t *self, char *word);

//  Append a printf-formatted word.
void ms_argv_add(ms_argv_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

//  Hand the words over: on success *out is the NULL-terminated vector
//  (free with ms_argv_free; an empty vector when nothing was added) and
//  SELF is emptied; true. After a failure everything is freed, *out is
//  NULL and false is returned.
bool ms_argv_finish(ms_argv_t *self, char ***out);

//  Free a NULL-terminated vector of malloc'd strings and null *argv_p;
//  NULL-safe.
void ms_argv_free(char ***argv_p);

#endif
