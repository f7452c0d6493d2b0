/*  =========================================================================
    ms_program_command - a program task's command line, from W&B's
    `command` list and its macros

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Python's str() of a float is its repr: the shortest digits that read
    back to the same double, in fixed notation with at least one digit
    after the point when the decimal exponent is in -4..15, else in
    exponent notation with a sign and at least two exponent digits
    (1e-05, 1e+16). s_py_float finds the shortest digits by trying
    precisions 1..17 of %.*e until one reads back exactly.
*/
#define _GNU_SOURCE
#include "ms_program_command.h"

#include "ms_argv.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A growing string.
typedef struct {
    char *s;
    size_t n, cap;
    bool failed;
} s_buf_t;

static void
s_put(s_buf_t *b, const char *text, size_t n)
{
    if (b->failed)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, text, n);
    b->n += n;
    b->s[b->n] = '\0';
}

static void
s_puts(s_buf_t *b, const char *text)
{
    s_put(b, text, strlen(text));
}

//  --------------------------------------------------------------------------
//  A double as Python's repr writes it.

static void
s_py_float(s_buf_t *b, double v)
{
    if (isnan(v)) {
        s_puts(b, "nan");
        return;
    }
    if (isinf(v)) {
        s_puts(b, v < 0 ? "-inf" : "inf");
        return;
    }
    if (v == 0) {
        s_puts(b, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    char e[64];
    int prec = 1;
    for (; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    //  e is "[-]D.DDDe[+-]XX": its digits and exponent.
    bool neg = e[0] == '-';
    char digits[32];
    int nd = 0;
    const char *p = e + neg;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    digits[nd] = '\0';
    int exp10 = atoi(p + 1);
    char out[64];
    int k = 0;
    if (neg)
        out[k++] = '-';
    if (exp10 < -4 || exp10 >= 16) {
        out[k++] = digits[0];
        if (nd > 1) {
            out[k++] = '.';
            for (int i = 1; i < nd; i++)
                out[k++] = digits[i];
        }
        k += snprintf(out + k, sizeof out - (size_t) k, "e%c%02d",
                      exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (exp10 < 0) {
        out[k++] = '0';
        out[k++] = '.';
        for (int i = 0; i < -exp10 - 1; i++)
            out[k++] = '0';
        for (int i = 0; i < nd; i++)
            out[k++] = digits[i];
    } else {
        for (int i = 0; i <= exp10; i++)
            out[k++] = i < nd ? digits[i] : '0';
        out[k++] = '.';
        if (nd > exp10 + 1)
            for (int i = exp10 + 1; i < nd; i++)
                out[k++] = digits[i];
        else
            out[k++] = '0';
    }
    out[k] = '\0';
    s_puts(b, out);
}

//  A string as Python's repr writes it (inside a list or dict).
static void
s_py_repr_str(s_buf_t *b, const char *s)
{
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    s_put(b, &q, 1);
    for (const unsigned char *c = (const unsigned char *) s; *c; c++) {
        char esc[8];
        if (*c == (unsigned char) q || *c == '\\')
            snprintf(esc, sizeof esc, "\\%c", *c);
        else if (*c == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (*c == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else if (*c == '\r')
            snprintf(esc, sizeof esc, "\\r");
        else if (*c < 0x20 || *c == 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", *c);
        else {
            esc[0] = (char) *c;
            esc[1] = '\0';
        }
        s_puts(b, esc);
    }
    s_put(b, &q, 1);
}

//  value as Python writes it: str() at the top, repr() inside containers.
static void
s_py(s_buf_t *b, const json_t *v, bool top)
{
    char num[32];
    switch (json_typeof(v)) {
    case JSON_TRUE:
        s_puts(b, "True");
        break;
    case JSON_FALSE:
        s_puts(b, "False");
        break;
    case JSON_NULL:
        s_puts(b, "None");
        break;
    case JSON_INTEGER:
        snprintf(num, sizeof num, "%" JSON_INTEGER_FORMAT,
                 json_integer_value(v));
        s_puts(b, num);
        break;
    case JSON_REAL:
        s_py_float(b, json_real_value(v));
        break;
    case JSON_STRING:
        if (top)
            s_put(b, json_string_value(v), json_string_length(v));
        else
            s_py_repr_str(b, json_string_value(v));
        break;
    case JSON_ARRAY: {
        s_puts(b, "[");
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (i)
                s_puts(b, ", ");
            s_py(b, x, false);
        }
        s_puts(b, "]");
        break;
    }
    case JSON_OBJECT: {
        s_puts(b, "{");
        const char *key;
        json_t *x;
        bool first = true;
        json_object_foreach((json_t *) v, key, x)
        {
            if (!first)
                s_puts(b, ", ");
            first = false;
            s_py_repr_str(b, key);
            s_puts(b, ": ");
            s_py(b, x, false);
        }
        s_puts(b, "}");
        break;
    }
    }
}

//  --------------------------------------------------------------------------
//  Python's str() of a value

char *
ms_program_command_py_str(const json_t *value)
{
    assert(value);
    s_buf_t b = {0};
    s_py(&b, value, true);
    s_put(&b, "", 0);
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

//  "PREFIX NAME=VALUE" of one parameter, or NULL (out of memory).
static char *
s_flag(const char *prefix, const char *name, const json_t *value)
{
    char *text = ms_program_command_py_str(value);
    if (!text)
        return NULL;
    char *out = NULL;
    if (asprintf(&out, "%s%s=%s", prefix, name, text) < 0)
        out = NULL;
    free(text);
    return out;
}

//  The words of a macro; false when the macro is unknown.
static bool
s_macro(ms_argv_t *a, const char *name, const json_t *config,
        const char *program, const char *interpreter, const char *json_path)
{
    const char *key;
    json_t *v;
    if (strcmp(name, "env") == 0)
        ms_argv_take(a, strdup("/usr/bin/env"));
    else if (strcmp(name, "interpreter") == 0)
        ms_argv_take(a, strdup(interpreter));
    else if (strcmp(name, "program") == 0)
        ms_argv_take(a, strdup(program));
    else if (strcmp(name, "args") == 0) {
        json_object_foreach((json_t *) config, key, v)
            ms_argv_take(a, s_flag("--", key, v));
    } else if (strcmp(name, "args_no_hyphens") == 0) {
        json_object_foreach((json_t *) config, key, v)
            ms_argv_take(a, s_flag("", key, v));
    } else if (strcmp(name, "args_no_boolean_flags") == 0) {
        json_object_foreach((json_t *) config, key, v)
        {
            if (json_is_true(v)) {
                char *w = NULL;
                ms_argv_take(a, asprintf(&w, "--%s", key) < 0 ? NULL : w);
            } else if (!json_is_false(v))
                ms_argv_take(a, s_flag("--", key, v));
        }
    } else if (strcmp(name, "args_json") == 0)
        ms_argv_take(a, json_dumps(config, JSON_COMPACT | JSON_ENCODE_ANY |
                                               JSON_PRESERVE_ORDER));
    else if (strcmp(name, "args_json_file") == 0)
        ms_argv_take(a, strdup(json_path));
    else
        return false;
    return true;
}

//  --------------------------------------------------------------------------
//  Build the argv of one run

int
ms_program_command_build(const json_t *command, const json_t *config,
                         const char *program, const char *interpreter,
                         const char *args_json_path, char ***argv_out,
                         ms_diag_t *diag)
{
    assert(config && program && interpreter && argv_out);
    *argv_out = NULL;
    static const char *const s_default[] = {"${env}", "${interpreter}",
                                            "${program}", "${args}"};
    if (!json_is_object(config))
        return ms_diag_set(diag, "parameters", "are not an object");
    if (command && (!json_is_array(command) || json_array_size(command) == 0))
        return ms_diag_set(diag, "command", "must be a list of words");
    size_t n = command ? json_array_size(command) : 4;
    ms_argv_t a = {0};
    int rc = MS_OK;
    for (size_t i = 0; i < n && rc == MS_OK; i++) {
        const char *item = s_default[i % 4];
        char where[32];
        snprintf(where, sizeof where, "command[%zu]", i);
        if (command) {
            const json_t *x = json_array_get(command, i);
            if (!json_is_string(x)) {
                rc = ms_diag_set(diag, where, "is not a string");
                break;
            }
            item = json_string_value(x);
        }
        size_t len = strlen(item);
        if (len < 3 || strncmp(item, "${", 2) != 0 || item[len - 1] != '}') {
            ms_argv_take(&a, strdup(item));
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int) (len - 3), item + 2);
        if (strcmp(name, "args_json_file") == 0 && !args_json_path)
            rc = ms_diag_set(diag, where,
                             "${args_json_file} needs the file's path");
        else if (!s_macro(&a, name, config, program, interpreter,
                          args_json_path))
            rc = ms_diag_set(diag, where,
                             "unknown macro '%.60s' (known: ${env}, "
                             "${interpreter}, ${program}, ${args}, "
                             "${args_no_hyphens}, ${args_no_boolean_flags}, "
                             "${args_json}, ${args_json_file})",
                             item);
    }
    if (rc == MS_OK && !a.failed && a.n == 0)
        rc = ms_diag_set(diag, "command", "makes no word to run");
    if (rc != MS_OK) {
        ms_argv_free(&a.v);
        return rc;
    }
    if (!ms_argv_finish(&a, argv_out))
        return ms_diag_set_code(diag, MS_ERR_NOMEM, "command", "out of memory");
    return MS_OK;
}
