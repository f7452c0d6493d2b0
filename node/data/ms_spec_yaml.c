/*  =========================================================================
    ms_spec_yaml - typed values off a libyaml document, each error with
    its key path and line (part of ms_spec; ms_spec_internal.h)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    How scalars are typed: see "Values" in ms_spec.c's prose.
*/
#include "ms_spec_internal.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Write a key path (truncated at MS_SPEC_PATH_MAX - 1 characters).

void
ms_spec_pathf(char out[MS_SPEC_PATH_MAX], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, MS_SPEC_PATH_MAX, fmt, ap);
    va_end(ap);
}

//  --------------------------------------------------------------------------
//  Set diag to where + reason + " (line N)"; returns code.

int
ms_spec_fail(ms_spec_ctx_t *ctx, int code, const yaml_node_t *node,
             const char *where, const char *fmt, ...)
{
    char reason[MS_DIAG_REASON_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    if (node)
        return ms_diag_set_code(ctx->diag, code, where, "%.400s (line %zu)",
                                reason, node->start_mark.line + 1);
    return ms_diag_set_code(ctx->diag, code, where, "%s", reason);
}

//  --------------------------------------------------------------------------
//  strdup that reports failure as false.

bool
ms_spec_strdup_to(char **dst, const char *src)
{
    free(*dst);
    *dst = src ? strdup(src) : NULL;
    return !src || *dst;
}

//  --------------------------------------------------------------------------
//  Index of name in a table of strings, or -1.

int
ms_spec_index_of(const char *const *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i], name) == 0)
            return (int) i;
    return -1;
}

//  --------------------------------------------------------------------------
//  "a, b, c" of a table of names.

const char *
ms_spec_join(const char *const *table, size_t n, char *out, size_t size)
{
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int w =
            snprintf(out + len, size - len, "%s%s", i ? ", " : "", table[i]);
        if (w < 0 || (size_t) w >= size - len)
            break;
        len += (size_t) w;
    }
    return out;
}

//  --------------------------------------------------------------------------
//  Child node of the document.

yaml_node_t *
ms_spec_node(ms_spec_ctx_t *ctx, int id)
{
    return yaml_document_get_node(ctx->doc, id);
}

//  --------------------------------------------------------------------------
//  Text of a scalar node (NULL for other nodes).

const char *
ms_spec_scalar(const yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE
               ? (const char *) node->data.scalar.value
               : NULL;
}

//  --------------------------------------------------------------------------
//  Kind of YAML node, for messages.

const char *
ms_spec_node_kind(const yaml_node_t *node)
{
    if (!node)
        return "nothing";
    switch (node->type) {
    case YAML_MAPPING_NODE:
        return "a mapping";
    case YAML_SEQUENCE_NODE:
        return "a list";
    default:
        return "a scalar";
    }
}

//  --------------------------------------------------------------------------
//  Is text a decimal integer / a decimal float (YAML 1.2 core)?

bool
ms_spec_looks_int(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static bool
s_looks_float(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    bool digits = false, point = false;
    for (; *s && *s != 'e' && *s != 'E'; s++) {
        if (*s >= '0' && *s <= '9')
            digits = true;
        else if (*s == '.' && !point)
            point = true;
        else
            return false;
    }
    if (!digits)
        return false;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+')
            s++;
        if (!*s)
            return false;
        for (; *s; s++)
            if (*s < '0' || *s > '9')
                return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  A YAML scalar as a typed JSON value (see the prose block).

static int
s_scalar_json(ms_spec_ctx_t *ctx, const yaml_node_t *node, const char *path,
              json_t **out)
{
    const char *s = ms_spec_scalar(node);
    *out = NULL;
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        *out = json_stringn(s, node->data.scalar.length);
        if (!*out)
            return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                                "string is not valid UTF-8");
        return MS_OK;
    }
    static const char *s_nulls[] = {"", "~", "null", "Null", "NULL"};
    static const char *s_trues[] = {"true", "True", "TRUE", "yes", "Yes",
                                    "YES",  "on",   "On",   "ON"};
    static const char *s_falses[] = {"false", "False", "FALSE", "no", "No",
                                     "NO",    "off",   "Off",   "OFF"};
    if (ms_spec_index_of(s_nulls, MS_SPEC_COUNT(s_nulls), s) >= 0)
        *out = json_null();
    else if (ms_spec_index_of(s_trues, MS_SPEC_COUNT(s_trues), s) >= 0)
        *out = json_true();
    else if (ms_spec_index_of(s_falses, MS_SPEC_COUNT(s_falses), s) >= 0)
        *out = json_false();
    else if (ms_spec_looks_int(s)) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == ERANGE)
            return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                                "integer %s does not fit in 64 bits", s);
        *out = json_integer(v);
    } else if (s_looks_float(s)) {
        double v = strtod(s, NULL);
        if (!isfinite(v))
            return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                                "number %s is out of range", s);
        *out = json_real(v);
    } else if (strcmp(s, ".nan") == 0 || strcmp(s, ".inf") == 0 ||
               strcmp(s, "-.inf") == 0 || strcmp(s, ".NaN") == 0 ||
               strcmp(s, ".Inf") == 0 || strcmp(s, "-.Inf") == 0)
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                            "NaN and infinity are not allowed");
    else {
        *out = json_stringn(s, node->data.scalar.length);
        if (!*out)
            return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                                "string is not valid UTF-8");
    }
    return *out ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  Any YAML node as JSON (mappings need scalar keys).

int
ms_spec_node_json(ms_spec_ctx_t *ctx, const yaml_node_t *node, const char *path,
                  int depth, json_t **out)
{
    *out = NULL;
    if (depth > MS_SPEC_MAX_DEPTH) // ms_spec_text_check refused deeper text
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                            "nested deeper than %d levels", MS_SPEC_MAX_DEPTH);
    if (node->type == YAML_SCALAR_NODE)
        return s_scalar_json(ctx, node, path, out);
    if (node->type == YAML_SEQUENCE_NODE) {
        json_t *array = json_array();
        if (!array)
            return MS_ERR_NOMEM;
        size_t i = 0;
        for (yaml_node_item_t *item = node->data.sequence.items.start;
             item < node->data.sequence.items.top; item++, i++) {
            char sub[MS_SPEC_PATH_MAX];
            ms_spec_pathf(sub, "%s[%zu]", path, i);
            json_t *elem;
            int rc = ms_spec_node_json(ctx, ms_spec_node(ctx, *item), sub,
                                       depth + 1, &elem);
            if (rc) {
                json_decref(array);
                return rc;
            }
            json_array_append_new(array, elem);
        }
        *out = array;
        return MS_OK;
    }
    if (node->type == YAML_MAPPING_NODE) {
        json_t *obj = json_object();
        if (!obj)
            return MS_ERR_NOMEM;
        for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
             pair < node->data.mapping.pairs.top; pair++) {
            const char *key = ms_spec_scalar(ms_spec_node(ctx, pair->key));
            json_t *elem;
            int rc;
            if (!key)
                rc = ms_spec_fail(ctx, MS_ERR_INVALID,
                                  ms_spec_node(ctx, pair->key), path,
                                  "keys must be scalars");
            else {
                char sub[MS_SPEC_PATH_MAX];
                ms_spec_pathf(sub, "%s.%s", path, key);
                rc = ms_spec_node_json(ctx, ms_spec_node(ctx, pair->value), sub,
                                       depth + 1, &elem);
                if (rc == MS_OK)
                    json_object_set_new(obj, key, elem);
            }
            if (rc) {
                json_decref(obj);
                return rc;
            }
        }
        *out = obj;
        return MS_OK;
    }
    return ms_spec_fail(ctx, MS_ERR_INVALID, node, path, "empty value");
}

//  --------------------------------------------------------------------------
//  A mapping's key and its position, for ms_spec_check_mapping's sort.

typedef struct {
    const char *key; // the key's text (borrowed from the document)
    size_t index;    // its pair's position in the mapping
} s_key_t;

static int
s_key_compare(const void *a, const void *b)
{
    const s_key_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

//  --------------------------------------------------------------------------
//  Check a mapping has no duplicate keys and only scalar keys. The
//  duplicate named is the first pair, in the text's order, whose key an
//  earlier pair has; found by sorting the keys (a mapping of 100,000 keys
//  would cost 5e9 comparisons pair by pair).

int
ms_spec_check_mapping(ms_spec_ctx_t *ctx, const yaml_node_t *node,
                      const char *path)
{
    if (!node || node->type != YAML_MAPPING_NODE)
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                            "must be a mapping, not %s",
                            ms_spec_node_kind(node));
    size_t n = (size_t) (node->data.mapping.pairs.top -
                         node->data.mapping.pairs.start);
    s_key_t *keys = calloc(n ? n : 1, sizeof *keys);
    if (!keys)
        return MS_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *key_node =
            ms_spec_node(ctx, node->data.mapping.pairs.start[i].key);
        keys[i].key = ms_spec_scalar(key_node);
        keys[i].index = i;
        if (!keys[i].key) {
            free(keys);
            return ms_spec_fail(ctx, MS_ERR_INVALID, key_node, path,
                                "keys must be scalars");
        }
    }
    qsort(keys, n, sizeof *keys, s_key_compare);
    size_t dup = n; // the first duplicate's pair, in the text's order
    for (size_t i = 1; i < n; i++)
        if (strcmp(keys[i].key, keys[i - 1].key) == 0 && keys[i].index < dup)
            dup = keys[i].index;
    free(keys);
    if (dup == n)
        return MS_OK;
    yaml_node_t *key_node =
        ms_spec_node(ctx, node->data.mapping.pairs.start[dup].key);
    char sub[MS_SPEC_PATH_MAX];
    ms_spec_pathf(sub, "%s%s%s", path, *path ? "." : "",
                  ms_spec_scalar(key_node));
    return ms_spec_fail(ctx, MS_ERR_INVALID, key_node, sub, "duplicate key");
}

//  --------------------------------------------------------------------------
//  Read a scalar as a string (any plain or quoted scalar's text).

int
ms_spec_get_string(ms_spec_ctx_t *ctx, const yaml_node_t *node,
                   const char *path, const char **out)
{
    const char *s = ms_spec_scalar(node);
    if (!s || (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !*s))
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                            "must be a string, not %s",
                            s ? "an empty value" : ms_spec_node_kind(node));
    if (strlen(s) != node->data.scalar.length)
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                            "must not contain NUL characters");
    *out = s;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read a scalar as a typed number or integer.

int
ms_spec_get_number(ms_spec_ctx_t *ctx, const yaml_node_t *node,
                   const char *path, bool integer, double *out_real,
                   int64_t *out_int)
{
    json_t *value = NULL;
    if (!node || node->type != YAML_SCALAR_NODE)
        return ms_spec_fail(
            ctx, MS_ERR_INVALID, node, path, "must be %s, not %s",
            integer ? "an integer" : "a number", ms_spec_node_kind(node));
    int rc = s_scalar_json(ctx, node, path, &value);
    if (rc)
        return rc;
    if (integer) {
        if (!json_is_integer(value)) {
            json_decref(value);
            return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                                "must be an integer, not '%s'",
                                ms_spec_scalar(node));
        }
        *out_int = (int64_t) json_integer_value(value);
    } else {
        if (!json_is_number(value)) {
            json_decref(value);
            return ms_spec_fail(ctx, MS_ERR_INVALID, node, path,
                                "must be a number, not '%s'",
                                ms_spec_scalar(node));
        }
        *out_real = json_number_value(value);
    }
    json_decref(value);
    return MS_OK;
}
