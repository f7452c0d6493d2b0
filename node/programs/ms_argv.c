/*  =========================================================================
    ms_argv - a NULL-terminated argument vector built word by word

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#define _GNU_SOURCE // vasprintf
#include "ms_argv.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void
ms_argv_take(ms_argv_t *self, char *word)
{
    assert(self);
    if (!word)
        self->failed = true;
    if (self->failed) {
        free(word);
        return;
    }
    if (self->n + 2 > self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 16;
        char **v = realloc(self->v, cap * sizeof *v);
        if (!v) {
            self->failed = true;
            free(word);
            return;
        }
        self->v = v;
        self->cap = cap;
    }
    self->v[self->n++] = word;
    self->v[self->n] = NULL;
}

void
ms_argv_add(ms_argv_t *self, const char *fmt, ...)
{
    assert(self && fmt);
    if (self->failed)
        return;
    char *word = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&word, fmt, ap);
    va_end(ap);
    ms_argv_take(self, n < 0 ? NULL : word);
}

bool
ms_argv_finish(ms_argv_t *self, char ***out)
{
    assert(self && out);
    *out = NULL;
    if (!self->failed && !self->v) { // nothing added: an empty vector
        self->v = calloc(1, sizeof *self->v);
        self->failed = self->v == NULL;
    }
    if (self->failed) {
        ms_argv_free(&self->v);
        *self = (ms_argv_t){0};
        return false;
    }
    *out = self->v;
    *self = (ms_argv_t){0};
    return true;
}

void
ms_argv_free(char ***argv_p)
{
    assert(argv_p);
    char **v = *argv_p;
    if (!v)
        return;
    for (size_t i = 0; v[i]; i++)
        free(v[i]);
    free(v);
    *argv_p = NULL;
}
