/*  =========================================================================
    ms_api_filter - result filters of GET .../results

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A filter is a list of conditions that must all hold on a result row
    (status=, verdict=, node= by id prefix, config.KEY=): a config value
    equals the text asked when a number is equal numerically, a string
    exactly, true/false/null by name, and a list written as JSON
    ("[100,10]") or as CSV writes it ("100;10"). Public API in ms_api.h
    (ms_api_filter_*); the route that parses a request's filter and pages
    through rows is in ms_api_results.
*/
#include "ms_api.h"
#include "ms_api_internal.h"

#include "ms_hash.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

//  ==========================================================================
//  Result filters

#define S_FILTER_MAX 64 // conditions in one filter

//  What a condition compares.
typedef enum {
    S_COND_STATUS = 0,  // row "status"
    S_COND_VERDICT = 1, // row "verdict"
    S_COND_NODE = 2,    // row "node_id", by prefix
    S_COND_CONFIG = 3,  // row config[key]
} s_cond_kind_t;

//  One condition.
typedef struct {
    s_cond_kind_t kind; // what
    char *key;          // config key (CONFIG), malloc'd
    char *value;        // the text asked, malloc'd
} s_cond_t;

struct ms_api_filter {
    s_cond_t conds[S_FILTER_MAX]; // all must hold
    size_t n;                     // conditions held
};

//  --------------------------------------------------------------------------
//  A new filter that matches all.

ms_api_filter_t *
ms_api_filter_new(void)
{
    return calloc(1, sizeof(ms_api_filter_t));
}

//  --------------------------------------------------------------------------
//  Free a filter.

void
ms_api_filter_destroy(ms_api_filter_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_api_filter_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++) {
        free(self->conds[i].key);
        free(self->conds[i].value);
    }
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  True when TEXT is one of the NULL-ended WORDS.

static bool
s_one_of(const char *text, const char *const *words)
{
    for (size_t i = 0; words[i]; i++)
        if (strcmp(text, words[i]) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Add a condition.

int
ms_api_filter_add(ms_api_filter_t *self, const char *name, const char *value,
                  ms_diag_t *diag)
{
    static const char *const statuses[] = {"ok", "diverged", "failed", NULL};
    static const char *const verdicts[] = {"pending",  "accepted", "verified",
                                           "disputed", "failed",   NULL};
    if (!ms_api_filter_name(name))
        return MS_ERR_NOTFOUND;
    if (!value)
        value = "";
    s_cond_t c = {.kind = S_COND_CONFIG};
    if (strcmp(name, "status") == 0) {
        if (!s_one_of(value, statuses))
            return ms_diag_set(diag, "status",
                               "'%.64s' is not ok, diverged or failed", value);
        c.kind = S_COND_STATUS;
    } else if (strcmp(name, "verdict") == 0) {
        if (!s_one_of(value, verdicts))
            return ms_diag_set(diag, "verdict",
                               "'%.64s' is not pending, accepted, verified, "
                               "disputed or failed",
                               value);
        c.kind = S_COND_VERDICT;
    } else if (strcmp(name, "node") == 0) {
        size_t n = strlen(value);
        if (n < 1 || n > MS_HASH_HEX_LEN ||
            strspn(value, "0123456789abcdef"
                          "ABCDEF") != n)
            return ms_diag_set(diag, "node",
                               "'%.80s' is not a node id prefix (1..64 hex "
                               "characters)",
                               value);
        c.kind = S_COND_NODE;
    }
    if (self->n >= S_FILTER_MAX)
        return ms_diag_set_code(diag, MS_ERR_RANGE, name,
                                "more than %d filters", S_FILTER_MAX);
    c.value = strdup(value);
    c.key = c.kind == S_COND_CONFIG ? strdup(name + 7) : NULL;
    if (!c.value || (c.kind == S_COND_CONFIG && !c.key)) {
        free(c.value);
        free(c.key);
        return MS_ERR_NOMEM;
    }
    if (c.kind == S_COND_NODE)
        for (char *p = c.value; *p; p++)
            *p = (char) tolower((unsigned char) *p);
    self->conds[self->n++] = c;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Conditions held.

size_t
ms_api_filter_size(const ms_api_filter_t *self)
{
    return self->n;
}

//  --------------------------------------------------------------------------
//  A number written in TEXT[0 .. n) into *out; false when it is not one.

static bool
s_number(const char *text, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, text, n);
    buf[n] = 0;
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v) || isspace((unsigned char) buf[0]))
        return false;
    *out = v;
    return true;
}

//  --------------------------------------------------------------------------
//  Whether a scalar JSON value equals TEXT[0 .. n): a number numerically,
//  a string exactly, true/false/null by name.

static bool
s_scalar_equal(const json_t *v, const char *text, size_t n)
{
    double x;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
    case JSON_REAL:
        return s_number(text, n, &x) && x == json_number_value(v);
    case JSON_STRING:
        return json_string_length(v) == n &&
               memcmp(json_string_value(v), text, n) == 0;
    case JSON_TRUE:
        return n == 4 && memcmp(text, "true", 4) == 0;
    case JSON_FALSE:
        return n == 5 && memcmp(text, "false", 5) == 0;
    case JSON_NULL:
        return n == 4 && memcmp(text, "null", 4) == 0;
    default:
        return false;
    }
}

//  --------------------------------------------------------------------------
//  Whether a config value equals the text asked. A list is written as
//  JSON ("[100,10]") or as CSV writes it ("100;10").

static bool
s_config_equal(const json_t *v, const char *text)
{
    if (!v)
        return false;
    if (!json_is_array(v))
        return s_scalar_equal(v, text, strlen(text));
    size_t len = strlen(text);
    const char *p = text;
    char sep = ';';
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        p = text + 1;
        len -= 2;
        sep = ',';
    }
    const char *end = p + len;
    size_t i = 0;
    if (len == 0)
        return json_array_size(v) == 0;
    for (;;) {
        const char *q = memchr(p, sep, (size_t) (end - p));
        const char *stop = q ? q : end;
        const char *a = p, *b = stop;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        if (b - a >= 2 && *a == '"' && b[-1] == '"') { // JSON string
            a++;
            b--;
        }
        json_t *item = json_array_get(v, i++);
        if (!item || json_is_array(item) ||
            !s_scalar_equal(item, a, (size_t) (b - a)))
            return false;
        if (!q)
            break;
        p = q + 1;
    }
    return i == json_array_size(v);
}

//  --------------------------------------------------------------------------
//  Whether a row meets every condition.

bool
ms_api_filter_match(const ms_api_filter_t *self, const json_t *row)
{
    for (size_t i = 0; i < self->n; i++) {
        const s_cond_t *c = &self->conds[i];
        const char *text = NULL;
        switch (c->kind) {
        case S_COND_STATUS:
            text = json_string_value(json_object_get(row, "status"));
            if (!text || strcmp(text, c->value) != 0)
                return false;
            break;
        case S_COND_VERDICT:
            text = json_string_value(json_object_get(row, "verdict"));
            if (!text || strcmp(text, c->value) != 0)
                return false;
            break;
        case S_COND_NODE:
            text = json_string_value(json_object_get(row, "node_id"));
            if (!text || strncmp(text, c->value, strlen(c->value)) != 0)
                return false;
            break;
        case S_COND_CONFIG:
            if (!s_config_equal(
                    json_object_get(json_object_get(row, "config"), c->key),
                    c->value))
                return false;
            break;
        }
    }
    return true;
}
