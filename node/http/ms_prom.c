/*  =========================================================================
    ms_prom - a Prometheus text exposition (format 0.0.4) being written

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Each family keeps its samples as rendered lines in one buffer and the
    label part of each sample (for the one-sample-per-label-set check) in
    another, NUL-separated; the text is the families' headers and buffers
    joined. A page has tens of families and at most a few hundred
    samples, so the linear searches cost nothing next to the HTTP
    round trip.
*/
#include "ms_prom.h"
#include "ms_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  One family.
typedef struct {
    char *name;          // metric name (malloc'd)
    char *help;          // help text (malloc'd, unescaped)
    ms_prom_type_t type; // counter or gauge
    ms_text_t lines;     // its sample lines
    ms_text_t keys;      // label part of each sample, NUL-separated
} s_family_t;

struct ms_prom {
    s_family_t *families; // in order of declaration
    size_t n_families;    // used
    size_t cap_families;  // allocated
};

//  --------------------------------------------------------------------------
//  Append a NUL-terminated string.

static void
s_append_str(ms_text_t *b, const char *s)
{
    ms_text_append(b, s, strlen(s));
}

//  --------------------------------------------------------------------------
//  Append TEXT escaped: backslash and newline always, '"' when QUOTE
//  (label values; help text leaves quotes as they are).

static void
s_append_escaped(ms_text_t *b, const char *text, bool quote)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\\')
            ms_text_append(b, "\\\\", 2);
        else if (*p == '\n')
            ms_text_append(b, "\\n", 2);
        else if (*p == '"' && quote)
            ms_text_append(b, "\\\"", 2);
        else
            ms_text_append(b, p, 1);
    }
}

//  --------------------------------------------------------------------------
//  True for a valid metric name (COLON allowed) or label name (not).

static bool
s_valid_name(const char *name, bool colon)
{
    if (!name || !*name)
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        bool alpha =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        bool ok =
            alpha || (colon && c == ':') || (p > name && c >= '0' && c <= '9');
        if (!ok)
            return false;
    }
    return colon || strncmp(name, "__", 2) != 0;
}

//  --------------------------------------------------------------------------
//  The family NAME, or NULL.

static s_family_t *
s_find(const ms_prom_t *self, const char *name)
{
    for (size_t i = 0; i < self->n_families; i++)
        if (strcmp(self->families[i].name, name) == 0)
            return &self->families[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Create a writer.

ms_prom_t *
ms_prom_new(void)
{
    return calloc(1, sizeof(ms_prom_t));
}

//  --------------------------------------------------------------------------
//  Free a writer.

void
ms_prom_destroy(ms_prom_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_prom_t *self = *self_p;
    for (size_t i = 0; i < self->n_families; i++) {
        free(self->families[i].name);
        free(self->families[i].help);
        free(self->families[i].lines.data);
        free(self->families[i].keys.data);
    }
    free(self->families);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Declare a family.

int
ms_prom_family(ms_prom_t *self, const char *name, ms_prom_type_t type,
               const char *help)
{
    if (!s_valid_name(name, true) || !help ||
        (type != MS_PROM_COUNTER && type != MS_PROM_GAUGE))
        return MS_ERR_INVALID;
    s_family_t *f = s_find(self, name);
    if (f)
        return f->type == type ? MS_OK : MS_ERR_CONFLICT;
    if (self->n_families == self->cap_families) {
        size_t cap = self->cap_families ? 2 * self->cap_families : 32;
        s_family_t *grown = realloc(self->families, cap * sizeof *grown);
        if (!grown)
            return MS_ERR_NOMEM;
        self->families = grown;
        self->cap_families = cap;
    }
    f = &self->families[self->n_families];
    memset(f, 0, sizeof *f);
    f->name = strdup(name);
    f->help = strdup(help);
    f->type = type;
    if (!f->name || !f->help) {
        free(f->name);
        free(f->help);
        return MS_ERR_NOMEM;
    }
    self->n_families++;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Write a value as the format spells it.

void
ms_prom_format_value(double value, char out[32])
{
    if (isnan(value)) {
        snprintf(out, 32, "NaN");
        return;
    }
    if (isinf(value)) {
        snprintf(out, 32, "%s", value > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (value == floor(value) && fabs(value) < 9007199254740992.0) {
        snprintf(out, 32, "%.0f", value == 0 ? 0.0 : value); // no "-0"
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(out, 32, "%.*g", digits, value);
        if (strtod(out, NULL) == value)
            return;
    }
}

//  --------------------------------------------------------------------------
//  Add a sample.

int
ms_prom_sample(ms_prom_t *self, const char *name, double value, ...)
{
    s_family_t *f = name ? s_find(self, name) : NULL;
    if (!f)
        return MS_ERR_NOTFOUND;
    if (f->type == MS_PROM_COUNTER && !(value >= 0))
        return MS_ERR_INVALID; // negative or NaN
    //  The label part, "{a=\"x\",b=\"y\"}" or "", checked as it is built.
    ms_text_t lab = {0};
    const char *seen[16];
    size_t n_seen = 0;
    int rc = MS_OK;
    va_list ap;
    va_start(ap, value);
    for (;;) {
        const char *key = va_arg(ap, const char *);
        if (!key)
            break;
        const char *val = va_arg(ap, const char *);
        bool dup = false;
        for (size_t i = 0; i < n_seen; i++)
            dup = dup || strcmp(seen[i], key) == 0;
        if (!s_valid_name(key, false) || !val || dup || n_seen == 16) {
            rc = MS_ERR_INVALID;
            break;
        }
        seen[n_seen++] = key;
        s_append_str(&lab, n_seen == 1 ? "{" : ",");
        s_append_str(&lab, key);
        s_append_str(&lab, "=\"");
        s_append_escaped(&lab, val, true);
        s_append_str(&lab, "\"");
    }
    va_end(ap);
    if (rc == MS_OK && n_seen > 0)
        s_append_str(&lab, "}");
    ms_text_append(&lab, "", 1); // NUL: lab.data is a string now
    if (rc == MS_OK && lab.failed)
        rc = MS_ERR_NOMEM;
    //  One sample per label set.
    for (size_t at = 0; rc == MS_OK && at < f->keys.len;) {
        const char *k = f->keys.data + at;
        if (strcmp(k, lab.data) == 0)
            rc = MS_ERR_CONFLICT;
        at += strlen(k) + 1;
    }
    if (rc == MS_OK) {
        char num[32];
        ms_prom_format_value(value, num);
        ms_text_t lines = f->lines, keys = f->keys; // commit both or neither
        s_append_str(&f->lines, f->name);
        s_append_str(&f->lines, lab.data);
        s_append_str(&f->lines, " ");
        s_append_str(&f->lines, num);
        s_append_str(&f->lines, "\n");
        ms_text_append(&f->keys, lab.data, strlen(lab.data) + 1);
        if (f->lines.failed || f->keys.failed) {
            f->lines.len = lines.len;
            f->keys.len = keys.len;
            f->lines.failed = f->keys.failed = false;
            rc = MS_ERR_NOMEM;
        }
    }
    free(lab.data);
    return rc;
}

//  --------------------------------------------------------------------------
//  The exposition text.

char *
ms_prom_text(const ms_prom_t *self, size_t *len)
{
    ms_text_t out = {0};
    for (size_t i = 0; i < self->n_families; i++) {
        const s_family_t *f = &self->families[i];
        s_append_str(&out, "# HELP ");
        s_append_str(&out, f->name);
        s_append_str(&out, " ");
        s_append_escaped(&out, f->help, false);
        s_append_str(&out, "\n# TYPE ");
        s_append_str(&out, f->name);
        s_append_str(&out,
                     f->type == MS_PROM_COUNTER ? " counter\n" : " gauge\n");
        if (f->lines.len)
            ms_text_append(&out, f->lines.data, f->lines.len);
    }
    ms_text_append(&out, "", 1);
    if (out.failed) {
        free(out.data);
        return NULL;
    }
    if (len)
        *len = out.len - 1;
    return out.data;
}
