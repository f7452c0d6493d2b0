/*  =========================================================================
    ms_results - result rows of a sweep read from a store, and their text
    forms (table, CSV); sweep lookup by id prefix

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Rows are gathered by walking the sweep's tasks in index order: a done
    task contributes the rows of the results table (the results that fill
    its slots: one per node, verify.replicas at most; with ALL, its extra
    replicas after them, flagged "replica": "extra", "counted": false),
    a failed task one synthesized row with status "failed", its last
    error and null metrics (a failure is not a result, so it is not
    counted), and pending or running tasks nothing. Page cursors are task
    indexes written in decimal: a page ends at a task boundary, so the rows
    of one task never straddle two pages.
*/
#include "ms_results.h"
#include "ms_text.h"
#include "ms_verdict.h"
#include "ms_wire_canon.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Append a string verbatim.

static void
s_buf_puts(ms_text_t *b, const char *s)
{
    ms_text_printf(b, "%s", s);
}

//  --------------------------------------------------------------------------
//  Finish a buffer: the text (caller frees) or NULL when memory ran out.

static char *
s_buf_finish(ms_text_t *b)
{
    if (!b->data && !b->failed)
        s_buf_puts(b, "");
    if (b->failed) {
        free(b->data);
        return NULL;
    }
    return b->data;
}

#define S_MEMO 8 // nested members remembered per walk (with a keep list)

//  The last value text of one nested member and its parse: rows of one
//  node carry the same "platform" object, parsed once and shared.
typedef struct {
    char key[24]; // member name ("" = free)
    char *text;   // its value's text, malloc'd
    size_t len;   // bytes of text
    json_t *val;  // the parsed value (one reference held)
} s_memo_t;

//  State of one row walk.
typedef struct {
    ms_store_t *store;           // the store (borrowed)
    json_t *rows;                // array being filled
    int64_t after;               // skip tasks with index <= after (-1: none)
    int limit;                   // rows per page (<= 0: all)
    bool all;                    // extra replicas too (flagged)
    int64_t last_index;          // index of the last task that gave rows
    bool more;                   // the page was cut: more rows remain
    int error;                   // first error
    unsigned flags;              // MS_RESULTS_*
    bool has_verdict;            // verdict holds the current task's verdict row
    ms_store_verdict_t *verdict; // scratch (heap: it is large)
    json_t *task_rows;           // by task: the current task's rows
    const char *const *keep;     // top-level members to parse (NULL: all)
    s_memo_t memo[S_MEMO];       // keep: the last nested values parsed
} s_walk_t;

/*  Row text scanning. A stored row is a JSON object checked by the store;
    most listings need a few of its members (the dashboard's table none of
    "curve" and "platform", the analysis no "curve"), and parsing is what
    a big listing costs (jansson builds every member: about 30 us per
    1.7 KB row here). So the walk parses only the wanted top-level
    members, each on its own: skipping a value is a byte scan for its end
    (strings and nesting), no allocation. A nested value whose text is
    the same as the one before it under that name (the producer's
    "platform" on every row of a node) is parsed once and shared between
    the rows: rows from ms_results_page_fields are for reading. */

//  --------------------------------------------------------------------------
//  Skip JSON white space.

static const char *
s_skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

//  --------------------------------------------------------------------------
//  P at a '"': the byte after the closing quote, or NULL.

static const char *
s_skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\')
            p++;
        else if (*p == '"')
            return p + 1;
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  P at a value: the byte after it, or NULL when the text ends first.

static const char *
s_skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return s_skip_string(p, end);
    if (*p != '{' && *p != '[') { // number, true, false, null
        while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' &&
               *p != '\t' && *p != '\n' && *p != '\r')
            p++;
        return p;
    }
    int depth = 0;
    while (p < end) {
        if (*p == '"') {
            p = s_skip_string(p, end);
            if (!p)
                return NULL;
            continue;
        }
        if (*p == '{' || *p == '[')
            depth++;
        else if (*p == '}' || *p == ']') {
            if (--depth == 0)
                return p + 1;
        }
        p++;
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  True when the key text [k, k + n) (between its quotes) is kept.

static bool
s_kept(const char *k, size_t n, const char *const *keep)
{
    // task_id and node_id always: pages end at task boundaries and the
    // verdict overlay finds a row's mark by its node.
    if ((n == 7 && memcmp(k, "task_id", 7) == 0) ||
        (n == 7 && memcmp(k, "node_id", 7) == 0))
        return true;
    for (; *keep; keep++)
        if (strlen(*keep) == n && memcmp(*keep, k, n) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------

int
ms_results_row_member(const char *json, size_t n, const char *key,
                      const char **value, size_t *value_len)
{
    const char *end = json + n, *p = s_skip_ws(json, end);
    size_t key_len = strlen(key);
    if (p >= end || *p != '{')
        return MS_ERR_INVALID;
    p = s_skip_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *k = p + 1, *ke = s_skip_string(p, end);
        if (!ke)
            return MS_ERR_INVALID;
        p = s_skip_ws(ke, end);
        if (p >= end || *p != ':')
            return MS_ERR_INVALID;
        const char *v = s_skip_ws(p + 1, end), *ve = s_skip_value(v, end);
        if (!ve)
            return MS_ERR_INVALID;
        if ((size_t) (ke - 1 - k) == key_len && memcmp(k, key, key_len) == 0) {
            *value = v;
            *value_len = (size_t) (ve - v);
            return MS_OK;
        }
        p = s_skip_ws(ve, end);
        if (p < end && *p == ',')
            p = s_skip_ws(p + 1, end);
    }
    return MS_ERR_NOTFOUND;
}

//  --------------------------------------------------------------------------
//  The parsed value of member KEY (K_LEN bytes) whose text is [v, v + n):
//  the walk's remembered one when the text is the same, else parsed (and
//  remembered when nested). A new reference, or NULL.

static json_t *
s_walk_value(s_walk_t *walk, const char *key, size_t k_len, const char *v,
             size_t n)
{
    json_error_t err;
    if ((*v != '{' && *v != '[') || k_len >= sizeof walk->memo[0].key)
        return json_loadb(v, n, JSON_DECODE_ANY, &err);
    s_memo_t *m = NULL;
    for (size_t i = 0; i < S_MEMO && !m; i++)
        if (strlen(walk->memo[i].key) == k_len &&
            memcmp(walk->memo[i].key, key, k_len) == 0)
            m = &walk->memo[i];
    if (m && m->len == n && memcmp(m->text, v, n) == 0)
        return json_incref(m->val);
    json_t *val = json_loadb(v, n, JSON_DECODE_ANY, &err);
    if (!val)
        return NULL;
    for (size_t i = 0; i < S_MEMO && !m; i++)
        if (!walk->memo[i].key[0])
            m = &walk->memo[i];
    char *copy = m ? malloc(n) : NULL;
    if (copy) {
        memcpy(copy, v, n);
        free(m->text);
        json_decref(m->val);
        memcpy(m->key, key, k_len);
        m->key[k_len] = 0;
        m->text = copy;
        m->len = n;
        m->val = json_incref(val);
    }
    return val;
}

//  --------------------------------------------------------------------------
//  Parse a row's text: whole, or only the walk's kept members when it has
//  a list (text that does not scan as a plain object is parsed whole:
//  jansson judges it). NULL when it does not parse.

static json_t *
s_walk_parse(s_walk_t *walk, const char *json, size_t n)
{
    json_error_t err;
    if (!walk->keep)
        return json_loadb(json, n, 0, &err);
    const char *end = json + n, *p = s_skip_ws(json, end);
    json_t *row = json_object();
    if (!row)
        return NULL;
    if (p >= end || *p != '{')
        goto whole;
    p = s_skip_ws(p + 1, end);
    while (p < end && *p == '"') {
        const char *k = p + 1, *ke = s_skip_string(p, end);
        if (!ke || memchr(k, '\\', (size_t) (ke - 1 - k)))
            goto whole; // (a key with escapes: let jansson read it)
        size_t k_len = (size_t) (ke - 1 - k);
        p = s_skip_ws(ke, end);
        if (p >= end || *p != ':')
            goto whole;
        const char *v = s_skip_ws(p + 1, end), *ve = s_skip_value(v, end);
        if (!ve)
            goto whole;
        if (s_kept(k, k_len, walk->keep)) {
            json_t *val = s_walk_value(walk, k, k_len, v, (size_t) (ve - v));
            if (!val || json_object_setn_new(row, k, k_len, val) != 0)
                goto whole;
        }
        p = s_skip_ws(ve, end);
        if (p < end && *p == ',')
            p = s_skip_ws(p + 1, end);
    }
    return row;
whole:
    json_decref(row);
    return json_loadb(json, n, 0, &err);
}

//  --------------------------------------------------------------------------
//  Lay the store's verdict over a row as the producer published it
//  (DESIGN.md "result row": verdict and verdict_revision of the task,
//  counted, operator, and the operators behind the verdict). The row
//  text is signed by its producer and kept as is; these fields are
//  derived by every node alike (node/store/ms_store.c "Verdicts in the store").
//  Returns false when the row is filtered out (--verified).

static bool
s_overlay(s_walk_t *walk, json_t *row, bool extra)
{
    if (!walk->has_verdict || !json_is_object(row))
        return !(walk->flags & MS_RESULTS_VERIFIED);
    const ms_store_verdict_t *v = walk->verdict;
    const ms_store_verdict_mark_t *mark = NULL;
    const char *hex = json_string_value(json_object_get(row, "node_id"));
    ms_hash_t node;
    if (hex && strlen(hex) == MS_HASH_HEX_LEN &&
        ms_hash_from_hex(hex, &node) == MS_OK)
        for (size_t i = 0; i < v->n_marks && !mark; i++)
            if (memcmp(v->marks[i].node_id, node.bytes, MS_HASH_BYTES) == 0)
                mark = &v->marks[i];
    json_object_set_new(
        row, "verdict",
        json_string(ms_verdict_state_name((ms_verdict_state_t) v->verdict)));
    json_object_set_new(row, "verdict_revision",
                        json_integer((json_int_t) v->revision));
    if (mark) { // (a row with no node id keeps what it says)
        json_object_set_new(row, "counted",
                            json_boolean(mark->counted && !extra));
        json_object_set_new(row, "operator", json_string(mark->operator_name));
    }
    json_t *ops = json_array();
    char text[MS_STORE_OPERATORS_TEXT];
    snprintf(text, sizeof text, "%s", v->operators);
    for (char *save = NULL, *t = strtok_r(text, ",", &save); t;
         t = strtok_r(NULL, ",", &save))
        json_array_append_new(ops, json_string(t));
    json_object_set_new(row, "verdict_operators", ops);
    // An extra replica in S counts too: with one slot, the results that
    // verified a disputed task (re-evaluation) fill slots past replicas.
    if (walk->flags & MS_RESULTS_VERIFIED)
        return v->verdict == MS_VERDICT_VERIFIED && mark && mark->agrees;
    return true;
}

//  --------------------------------------------------------------------------
//  Add a row to the walk (or to the task's rows, by task).

static void
s_walk_add(s_walk_t *walk, json_t *row, bool extra)
{
    if (!s_overlay(walk, row, extra)) {
        json_decref(row);
        return;
    }
    if (walk->task_rows && !extra)
        json_array_append_new(walk->task_rows, row);
    else if (walk->task_rows)
        json_decref(row);
    else
        json_array_append_new(walk->rows, row);
}

//  --------------------------------------------------------------------------
//  Append one stored row (JSON text) to the walk's array.

static int
s_walk_row(void *arg, const char *json, size_t n)
{
    s_walk_t *walk = arg;
    json_t *row = s_walk_parse(walk, json, n);
    if (!row)
        return 0; // the store checked it; skip rather than stop a listing
    s_walk_add(walk, row, false);
    return 0;
}

//  --------------------------------------------------------------------------
//  Append one counted result to the walk's array; an extra replica gets
//  "counted": false and "replica": "extra" (DESIGN.md "result row").

static int
s_walk_replica(void *arg, const char *json, size_t n, bool extra)
{
    s_walk_t *walk = arg;
    json_t *row = s_walk_parse(walk, json, n);
    if (!row)
        return 0; // the store checked it; skip rather than stop a listing
    if (extra && json_is_object(row)) {
        json_object_set_new(row, "counted", json_false());
        json_object_set_new(row, "replica", json_string("extra"));
    }
    s_walk_add(walk, row, extra);
    return 0;
}

//  --------------------------------------------------------------------------
//  Append the synthesized row of a failed task.

static int
s_failed_row(s_walk_t *walk, const ms_store_task_t *task)
{
    ms_hash_t tid, sid;
    memcpy(tid.bytes, task->task_id, MS_HASH_BYTES);
    memcpy(sid.bytes, task->sweep_id, MS_HASH_BYTES);
    char thex[MS_HASH_HEX_LEN + 1], shex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&tid, thex);
    ms_hash_hex(&sid, shex);
    json_error_t err;
    json_t *config = json_loadb(task->config_json, task->config_len, 0, &err);
    json_t *row = json_pack(
        "{s:s, s:s, s:o, s:n, s:n, s:s, s:s, s:i, s:n, s:n, s:n, s:n, s:n, "
        "s:n, s:n, s:n, s:n, s:n, s:s, s:i, s:b, s:[]}",
        "task_id", thex, "sweep_id", shex, "config",
        config ? config : json_object(), "node_id", "operator", "status",
        "failed", "error", task->error && *task->error ? task->error : "failed",
        "epochs", 0, "train_seconds", "seconds_per_epoch", "val_accuracy",
        "val_loss", "test_accuracy", "test_loss", "params", "platform",
        "fingerprint", "weights_digest", "verdict", "pending",
        "verdict_revision", 0, "counted", 0, "curve");
    if (!row)
        return MS_ERR_NOMEM;
    json_array_append_new(walk->rows, row);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  One task of the walk.

static int
s_walk_task(void *arg, const ms_store_task_t *task)
{
    s_walk_t *walk = arg;
    if ((int64_t) task->index <= walk->after)
        return 0;
    if (task->state != MS_TASK_DONE && task->state != MS_TASK_FAILED)
        return 0;
    if (walk->limit > 0 &&
        json_array_size(walk->rows) >= (size_t) walk->limit) {
        walk->more = true;
        return 1; // stop: page full and this task has rows
    }
    int rc;
    walk->has_verdict = ms_store_get_verdict(walk->store, task->task_id,
                                             walk->verdict) == MS_OK;
    if (task->state != MS_TASK_DONE && (walk->flags & MS_RESULTS_VERIFIED)) {
        walk->last_index = task->index;
        return 0; // a failed task has no verified row
    }
    if (walk->flags & MS_RESULTS_BY_TASK) {
        walk->task_rows = json_array();
        if (!walk->task_rows) {
            walk->error = MS_ERR_NOMEM;
            return 1;
        }
    }
    if (task->state == MS_TASK_DONE && walk->task_rows)
        rc = ms_store_results_by_task_all(walk->store, task->task_id,
                                          s_walk_replica, walk);
    else if (task->state == MS_TASK_DONE &&
             (walk->all || (walk->flags & MS_RESULTS_VERIFIED)))
        rc = ms_store_results_by_task_all(walk->store, task->task_id,
                                          s_walk_replica, walk);
    else if (task->state == MS_TASK_DONE)
        rc = ms_store_results_by_task(walk->store, task->task_id, s_walk_row,
                                      walk);
    else
        rc = s_failed_row(walk, task);
    if (walk->task_rows) {
        // By task: the row of the lower-median counted result (the first
        // row when there is no verdict), with the operators behind it.
        json_t *pick = NULL;
        size_t i;
        json_t *r;
        char hex[MS_HASH_HEX_LEN + 1] = "";
        if (walk->has_verdict && walk->verdict->has_median) {
            ms_hash_t h;
            memcpy(h.bytes, walk->verdict->median_node, MS_HASH_BYTES);
            ms_hash_hex(&h, hex);
        }
        json_array_foreach(walk->task_rows, i, r)
        {
            const char *id = json_string_value(json_object_get(r, "node_id"));
            if (!pick || (hex[0] && id && strcmp(id, hex) == 0))
                pick = r;
        }
        if (pick) {
            json_t *ops = json_object_get(pick, "verdict_operators");
            json_object_set(pick, "operators", ops ? ops : json_array());
            json_object_set_new(
                pick, "n_results",
                json_integer((json_int_t) json_array_size(walk->task_rows)));
            json_array_append(walk->rows, pick);
        }
        json_decref(walk->task_rows);
        walk->task_rows = NULL;
    }
    if (rc != MS_OK) {
        walk->error = rc;
        return 1;
    }
    walk->last_index = task->index;
    return 0;
}

//  --------------------------------------------------------------------------
//  One page of rows.

int
ms_results_page(ms_store_t *store, const ms_hash_t *sweep_id, const char *after,
                int limit, json_t **rows, char **next, ms_diag_t *diag)
{
    return ms_results_page_all(store, sweep_id, false, after, limit, rows, next,
                               diag);
}

//  --------------------------------------------------------------------------
//  One page of rows, extra replicas too when ALL.

int
ms_results_page_all(ms_store_t *store, const ms_hash_t *sweep_id, bool all,
                    const char *after, int limit, json_t **rows, char **next,
                    ms_diag_t *diag)
{
    return ms_results_page_ex(store, sweep_id, all ? MS_RESULTS_ALL : 0, after,
                              limit, rows, next, diag);
}

//  --------------------------------------------------------------------------
//  One page of rows, as FLAGS say.

int
ms_results_page_ex(ms_store_t *store, const ms_hash_t *sweep_id, unsigned flags,
                   const char *after, int limit, json_t **rows, char **next,
                   ms_diag_t *diag)
{
    return ms_results_page_fields(store, sweep_id, flags, NULL, after, limit,
                                  rows, next, diag);
}

//  --------------------------------------------------------------------------
//  One page of rows, as FLAGS say, each parsed for the KEEP members only.

int
ms_results_page_fields(ms_store_t *store, const ms_hash_t *sweep_id,
                       unsigned flags, const char *const *keep,
                       const char *after, int limit, json_t **rows, char **next,
                       ms_diag_t *diag)
{
    bool all = flags & MS_RESULTS_ALL;
    *rows = NULL;
    if (next)
        *next = NULL;
    s_walk_t walk = {.store = store,
                     .after = -1,
                     .limit = limit,
                     .all = all,
                     .flags = flags,
                     .keep = keep,
                     .last_index = -1};
    if (after && *after) {
        char *end = NULL;
        errno = 0;
        long long v = strtoll(after, &end, 10);
        if (errno || *end || v < 0 || v > (long long) UINT32_MAX ||
            !isdigit((unsigned char) after[0]))
            return ms_diag_set(diag, "after",
                               "bad cursor '%s' (expected a number from "
                               "the previous page's next)",
                               after);
        walk.after = v;
    }
    walk.rows = json_array();
    if (!walk.rows)
        return MS_ERR_NOMEM;
    walk.verdict = malloc(sizeof *walk.verdict);
    if (!walk.verdict) {
        json_decref(walk.rows);
        return MS_ERR_NOMEM;
    }
    int rc =
        ms_store_tasks_by_sweep(store, sweep_id->bytes, s_walk_task, &walk);
    free(walk.verdict);
    for (size_t i = 0; i < S_MEMO; i++) {
        free(walk.memo[i].text);
        json_decref(walk.memo[i].val);
    }
    json_decref(walk.task_rows); // left by a walk stopped inside a task
    if (rc == 1)
        rc = walk.error;
    if (rc == MS_ERR_NOTFOUND) {
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(sweep_id, hex);
        ms_diag_set_code(diag, rc, hex, "no such sweep");
    } else if (rc != MS_OK)
        ms_diag_set_code(diag, rc, "store", "%s", ms_strerror(rc));
    if (rc != MS_OK) {
        json_decref(walk.rows);
        return rc;
    }
    if (walk.more && next) {
        char text[32];
        snprintf(text, sizeof text, "%" PRId64, walk.last_index);
        *next = strdup(text);
        if (!*next) {
            json_decref(walk.rows);
            return MS_ERR_NOMEM;
        }
    }
    *rows = walk.rows;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Every row of a sweep.

int
ms_results_rows(ms_store_t *store, const ms_hash_t *sweep_id, json_t **rows,
                ms_diag_t *diag)
{
    return ms_results_page(store, sweep_id, NULL, 0, rows, NULL, diag);
}

//  --------------------------------------------------------------------------
//  Every row of a sweep, extra replicas too when ALL.

int
ms_results_rows_all(ms_store_t *store, const ms_hash_t *sweep_id, bool all,
                    json_t **rows, ms_diag_t *diag)
{
    return ms_results_page_all(store, sweep_id, all, NULL, 0, rows, NULL, diag);
}

//  --------------------------------------------------------------------------
//  The row of one node's result of one task (events).

int
ms_results_task_row(ms_store_t *store, const uint8_t *task_id,
                    const uint8_t *node_id, json_t **row)
{
    *row = NULL;
    s_walk_t walk = {.store = store,
                     .after = -1,
                     .all = true,
                     .flags = MS_RESULTS_ALL,
                     .last_index = -1};
    walk.rows = json_array();
    walk.verdict = malloc(sizeof *walk.verdict);
    if (!walk.rows || !walk.verdict) {
        json_decref(walk.rows);
        free(walk.verdict);
        return MS_ERR_NOMEM;
    }
    walk.has_verdict =
        ms_store_get_verdict(store, task_id, walk.verdict) == MS_OK;
    int rc =
        ms_store_results_by_task_all(store, task_id, s_walk_replica, &walk);
    free(walk.verdict);
    ms_hash_t node;
    char hex[MS_HASH_HEX_LEN + 1];
    memcpy(node.bytes, node_id, MS_HASH_BYTES);
    ms_hash_hex(&node, hex);
    size_t i;
    json_t *r;
    json_array_foreach(walk.rows, i, r)
    {
        const char *id = json_string_value(json_object_get(r, "node_id"));
        if (rc == MS_OK && !*row && id && strcmp(id, hex) == 0)
            *row = json_incref(r);
    }
    json_decref(walk.rows);
    return rc;
}

//  --------------------------------------------------------------------------
//  A number field as text with precision digits (< 0: %g), "-" when null.

static void
s_fmt_num(const json_t *v, int precision, char *out, size_t n)
{
    if (json_is_number(v) && precision < 0)
        snprintf(out, n, "%g", json_number_value(v));
    else if (json_is_number(v))
        snprintf(out, n, "%.*f", precision, json_number_value(v));
    else
        snprintf(out, n, "-");
}

//  --------------------------------------------------------------------------
//  The architecture of a config: "100,10" or "4x64".

static void
s_fmt_arch(const json_t *config, char *out, size_t n)
{
    const json_t *sizes = json_object_get(config, "hidden_sizes");
    if (json_is_array(sizes)) {
        size_t used = 0;
        out[0] = 0;
        size_t i;
        const json_t *v;
        json_array_foreach(sizes, i, v)
        {
            int w = snprintf(out + used, n - used, "%s%" JSON_INTEGER_FORMAT,
                             i ? "," : "", json_integer_value(v));
            if (w < 0 || (size_t) w >= n - used) {
                if (n > 4)
                    strcpy(out + n - 4, "...");
                return;
            }
            used += (size_t) w;
        }
        if (json_array_size(sizes) == 0)
            snprintf(out, n, "0");
        return;
    }
    snprintf(out, n, "%" JSON_INTEGER_FORMAT "x%" JSON_INTEGER_FORMAT,
             json_integer_value(json_object_get(config, "hidden_layers")),
             json_integer_value(json_object_get(config, "width")));
}

//  --------------------------------------------------------------------------
//  Rows as a terminal table.

char *
ms_results_format_table(const json_t *rows)
{
    ms_text_t b = {0};
    ms_text_printf(&b,
                   "%-12s  %-14s  %-10s  %-8s  %9s  %4s  %-8s  %3s  %7s  "
                   "%7s  %8s\n",
                   "task", "hidden", "activation", "optim", "lr", "seed",
                   "status", "ep", "val_acc", "test_acc", "s/epoch");
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        const json_t *cfg = json_object_get(row, "config");
        const char *tid = json_string_value(json_object_get(row, "task_id"));
        char arch[64], lr[32], va[16], ta[16], spe[16];
        s_fmt_arch(cfg, arch, sizeof arch);
        s_fmt_num(json_object_get(cfg, "learning_rate"), -1, lr, sizeof lr);
        s_fmt_num(json_object_get(row, "val_accuracy"), 4, va, sizeof va);
        s_fmt_num(json_object_get(row, "test_accuracy"), 4, ta, sizeof ta);
        s_fmt_num(json_object_get(row, "seconds_per_epoch"), 3, spe,
                  sizeof spe);
        const char *act = json_string_value(json_object_get(cfg, "activation"));
        const char *opt = json_string_value(json_object_get(cfg, "optimizer"));
        const char *status = json_string_value(json_object_get(row, "status"));
        ms_text_printf(
            &b,
            "%-12.12s  %-14s  %-10s  %-8s  %9s  %4" JSON_INTEGER_FORMAT
            "  %-8s  %3" JSON_INTEGER_FORMAT "  %7s  %7s  %8s\n",
            tid ? tid : "-", arch, act ? act : "-", opt ? opt : "-", lr,
            json_integer_value(json_object_get(cfg, "seed")),
            status ? status : "-",
            json_integer_value(json_object_get(row, "epochs")), va, ta, spe);
        const char *error = json_string_value(json_object_get(row, "error"));
        if (error && status && strcmp(status, "ok") != 0)
            ms_text_printf(&b, "              %s\n", error);
    }
    return s_buf_finish(&b);
}

//  --------------------------------------------------------------------------
//  Append one CSV field (RFC 4180: quote when it holds , " or a newline).

static void
s_csv_field(ms_text_t *b, const char *text)
{
    if (!strpbrk(text, ",\"\r\n")) {
        s_buf_puts(b, text);
        return;
    }
    s_buf_puts(b, "\"");
    for (const char *p = text; *p; p++) {
        if (*p == '"')
            s_buf_puts(b, "\"\"");
        else
            ms_text_printf(b, "%c", *p);
    }
    s_buf_puts(b, "\"");
}

//  --------------------------------------------------------------------------
//  Append one JSON value as a CSV field: null empty, lists joined by ';'.

static void
s_csv_value(ms_text_t *b, const json_t *v)
{
    char num[MS_WIRE_CANON_DOUBLE_MAX];
    if (!v || json_is_null(v))
        return;
    if (json_is_string(v))
        s_csv_field(b, json_string_value(v));
    else if (json_is_integer(v))
        ms_text_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v)) {
        if (ms_wire_canon_format_double(json_real_value(v), num, sizeof num) >=
            0)
            s_buf_puts(b, num);
    } else if (json_is_boolean(v))
        s_buf_puts(b, json_is_true(v) ? "true" : "false");
    else if (json_is_array(v)) {
        size_t i;
        const json_t *e;
        json_array_foreach(v, i, e)
        {
            if (i)
                s_buf_puts(b, ";");
            s_csv_value(b, e);
        }
    } else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
        if (text)
            s_csv_field(b, text);
        free(text);
    }
}

//  The members a row can have (ms_results.h).
const char *const ms_results_row_members[] = {"task_id",
                                              "sweep_id",
                                              "config",
                                              "node_id",
                                              "operator",
                                              "status",
                                              "error",
                                              "epochs",
                                              "train_seconds",
                                              "seconds_per_epoch",
                                              "val_accuracy",
                                              "val_loss",
                                              "test_accuracy",
                                              "test_loss",
                                              "params",
                                              "platform",
                                              "fingerprint",
                                              "weights_digest",
                                              "verdict",
                                              "verdict_revision",
                                              "verdict_operators",
                                              "counted",
                                              "curve",
                                              "grad_norms",
                                              "replica",
                                              "operators",
                                              "n_results",
                                              NULL};

//  Top-level columns of the CSV form, in order.
static const char *s_csv_columns[] = {
    "task_id",
    "sweep_id",
    "node_id",
    "operator",
    "status",
    "error",
    "epochs",
    "train_seconds",
    "seconds_per_epoch",
    "val_accuracy",
    "val_loss",
    "test_accuracy",
    "test_loss",
    "params",
    "fingerprint",
    "weights_digest",
    "verdict",
    "verdict_revision",
    "verdict_operators", // names joined with ';' (s_csv_value)
    "counted"};

//  --------------------------------------------------------------------------
//  Compare two strings for qsort.

static int
s_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(const char *const *) a, *(const char *const *) b);
}

//  --------------------------------------------------------------------------
//  Rows as CSV.

char *
ms_results_format_csv(const json_t *rows)
{
    // The config keys: the union over every row, sorted.
    json_t *keys = json_object();
    if (!keys)
        return NULL;
    size_t i;
    const json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *) json_object_get(row, "config"), k, v)
            json_object_set_new(keys, k, json_true());
    }
    size_t n_keys = json_object_size(keys);
    const char **names = calloc(n_keys ? n_keys : 1, sizeof *names);
    if (!names) {
        json_decref(keys);
        return NULL;
    }
    size_t k_i = 0;
    const char *k;
    const json_t *v;
    json_object_foreach(keys, k, v) names[k_i++] = k;
    qsort(names, n_keys, sizeof *names, s_strcmp_p);

    ms_text_t b = {0};
    size_t n_cols = sizeof s_csv_columns / sizeof s_csv_columns[0];
    for (size_t c = 0; c < n_cols; c++)
        ms_text_printf(&b, "%s%s", c ? "," : "", s_csv_columns[c]);
    for (size_t c = 0; c < n_keys; c++)
        ms_text_printf(&b, ",config.%s", names[c]);
    s_buf_puts(&b, "\n");
    json_array_foreach(rows, i, row)
    {
        for (size_t c = 0; c < n_cols; c++) {
            if (c)
                s_buf_puts(&b, ",");
            s_csv_value(&b, json_object_get(row, s_csv_columns[c]));
        }
        const json_t *cfg = json_object_get(row, "config");
        for (size_t c = 0; c < n_keys; c++) {
            s_buf_puts(&b, ",");
            s_csv_value(&b, json_object_get(cfg, names[c]));
        }
        s_buf_puts(&b, "\n");
    }
    free(names);
    json_decref(keys);
    return s_buf_finish(&b);
}

//  State of a prefix search.
typedef struct {
    char prefix[MS_HASH_HEX_LEN + 1]; // lowercase
    size_t len;                       // characters in prefix
    int n_matches;                    // sweeps matched so far
    ms_hash_t match;                  // the first match
} s_find_t;

//  --------------------------------------------------------------------------
//  Match one sweep against the prefix.

static int
s_find_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    s_find_t *find = arg;
    ms_hash_t h;
    memcpy(h.bytes, sweep->sweep_id, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    if (strncmp(hex, find->prefix, find->len) == 0) {
        if (find->n_matches++ == 0)
            find->match = h;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Resolve an id or prefix.

int
ms_results_find_sweep(ms_store_t *store, const char *hex_or_prefix,
                      ms_hash_t *out, ms_diag_t *diag)
{
    const char *text = hex_or_prefix ? hex_or_prefix : "";
    size_t len = strlen(text);
    if (len < MS_RESULTS_PREFIX_MIN || len > MS_HASH_HEX_LEN)
        return ms_diag_set(diag, text,
                           "a sweep id is 64 hex characters (or a unique "
                           "prefix of at least %d)",
                           MS_RESULTS_PREFIX_MIN);
    s_find_t find = {.len = len};
    for (size_t i = 0; i < len; i++) {
        if (!isxdigit((unsigned char) text[i]))
            return ms_diag_set(diag, text, "not a hex sweep id (character %zu)",
                               i + 1);
        find.prefix[i] = (char) tolower((unsigned char) text[i]);
    }
    int rc = ms_store_list_sweeps(store, s_find_sweep, &find);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, "store", "%s", ms_strerror(rc));
    if (find.n_matches == 0)
        return ms_diag_set_code(diag, MS_ERR_NOTFOUND, text, "no such sweep");
    if (find.n_matches > 1)
        return ms_diag_set_code(diag, MS_ERR_CONFLICT, text,
                                "prefix matches %d sweeps; give more "
                                "characters",
                                find.n_matches);
    *out = find.match;
    return MS_OK;
}
