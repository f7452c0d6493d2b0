/*  =========================================================================
    ms_cli_format - result rows as an aligned table, CSV or JSON

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Rows are the JSON objects of DESIGN.md "result row" (ms_results_rows
    and GET /api/v1/sweeps/{id}/results give the same objects), so the
    three formats of `meshsweep results` carry the same content: the table
    picks the columns a person compares (task, activation, layers, width,
    one column per other swept parameter such as optimizer, seed, status,
    epochs, val_acc, test_acc, s/epoch, params) and the verification
    columns (verdict with its revision, "verified r2", marked "*" with a
    footer when the row does not count; the operators behind the
    verdict), CSV has every top-level
    field and config.* flattened (no platform, no curve), JSON is the rows
    themselves. The table lists rows in the order in which a depth sweep
    reads as a plateau: activation, width (first hidden size for explicit
    sizes), the other config keys (compact JSON with sorted keys), depth,
    the sizes, seed, task id. CSV and JSON, read by programs, keep the
    rows in the order they came (the node's and the store's: task index),
    and the CSV writer is the node's (ms_results_format_csv), so
    `meshsweep results --format csv` and GET .../results?format=csv give
    the same text.
*/
#include "ms_cli.h"
#include "ms_analysis.h"
#include "ms_results.h"
#include "ms_wire_canon.h"

#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  A growing string.
typedef struct {
    char *data;  // NUL-terminated text
    size_t len;  // bytes used
    size_t cap;  // bytes allocated
    bool failed; // out of memory happened
} s_str_t;

//  --------------------------------------------------------------------------
//  Append formatted text to a growing string.

static void __attribute__((format(printf, 2, 3)))
s_str_printf(s_str_t *s, const char *fmt, ...)
{
    if (s->failed)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = s->cap - s->len;
        int n = s->data ? vsnprintf(s->data + s->len, room, fmt, ap) : -2;
        va_end(ap);
        if (n >= 0 && (size_t) n < room) {
            s->len += (size_t) n;
            return;
        }
        if (n == -1) {
            s->failed = true;
            return;
        }
        size_t want = s->cap ? s->cap * 2 : 1024;
        while (n > 0 && want < s->len + (size_t) n + 1)
            want *= 2;
        char *bigger = realloc(s->data, want);
        if (!bigger) {
            s->failed = true;
            return;
        }
        s->data = bigger;
        s->cap = want;
    }
}

//  --------------------------------------------------------------------------
//  Hand the string to the caller (NULL when anything failed).

static char *
s_str_take(s_str_t *s)
{
    if (s->failed) {
        free(s->data);
        return NULL;
    }
    if (!s->data)
        return strdup("");
    return s->data;
}

//  --------------------------------------------------------------------------
//  Integer value of a config key (0 when absent).

static long long
s_cfg_int(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(json_object_get(row, "config"), key);
    if (json_is_integer(v))
        return json_integer_value(v);
    if (json_is_real(v))
        return (long long) json_real_value(v);
    return 0;
}

//  --------------------------------------------------------------------------
//  The explicit hidden sizes of a row, or NULL for a uniform network.

static const json_t *
s_cfg_sizes(const json_t *row)
{
    const json_t *sizes =
        json_object_get(json_object_get(row, "config"), "hidden_sizes");
    if (!json_is_array(sizes))
        return NULL;
    if (s_cfg_int(row, "width") > 0)
        return NULL; // canonical form listed the uniform sizes too
    return sizes;
}

//  --------------------------------------------------------------------------
//  Number of hidden layers of a row.

static long long
s_row_depth(const json_t *row)
{
    const json_t *sizes = s_cfg_sizes(row);
    if (sizes)
        return (long long) json_array_size(sizes);
    return s_cfg_int(row, "hidden_layers");
}

//  --------------------------------------------------------------------------
//  Width used for sorting: the uniform width, or the first explicit size.

static long long
s_row_width(const json_t *row)
{
    const json_t *sizes = s_cfg_sizes(row);
    if (sizes)
        return json_integer_value(json_array_get(sizes, 0));
    return s_cfg_int(row, "width");
}

//  --------------------------------------------------------------------------
//  String field of the config ("" when absent).

static const char *
s_cfg_str(const json_t *row, const char *key)
{
    const char *s =
        json_string_value(json_object_get(json_object_get(row, "config"), key));
    return s ? s : "";
}

//  --------------------------------------------------------------------------
//  The config of a row without the keys the table orders by itself
//  (activation, width, hidden_layers, hidden_sizes, seed), as compact JSON
//  with sorted keys: rows that differ in another swept parameter
//  (optimizer, learning_rate) sort apart, so a group reads as one block.
//  NULL when memory runs out.

static char *
s_row_rest(const json_t *row)
{
    json_t *config = json_object_get(row, "config");
    json_t *rest = json_is_object(config) ? json_copy(config) : json_object();
    if (!rest)
        return NULL;
    static const char *fixed[] = {"activation", "width", "hidden_layers",
                                  "hidden_sizes", "seed"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        json_object_del(rest, fixed[i]);
    char *text = json_dumps(rest, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(rest);
    return text;
}

//  One row while sorting, with its precomputed rest of config.
typedef struct {
    json_t *row;
    char *rest;
} s_sort_item_t;

//  --------------------------------------------------------------------------
//  Compare two rows in table order (qsort callback over s_sort_item_t).

static int
s_row_compare(const void *a, const void *b)
{
    const s_sort_item_t *ia = a, *ib = b;
    const json_t *ra = ia->row, *rb = ib->row;
    int c = strcmp(s_cfg_str(ra, "activation"), s_cfg_str(rb, "activation"));
    if (c)
        return c;
    long long wa = s_row_width(ra), wb = s_row_width(rb);
    if (wa != wb)
        return wa < wb ? -1 : 1;
    c = strcmp(ia->rest ? ia->rest : "", ib->rest ? ib->rest : "");
    if (c)
        return c;
    long long da = s_row_depth(ra), db = s_row_depth(rb);
    if (da != db)
        return da < db ? -1 : 1;
    const json_t *sa = s_cfg_sizes(ra), *sb = s_cfg_sizes(rb);
    if (sa && sb) {
        for (size_t i = 0; i < json_array_size(sa); i++) {
            long long x = json_integer_value(json_array_get(sa, i));
            long long y = json_integer_value(json_array_get(sb, i));
            if (x != y)
                return x < y ? -1 : 1;
        }
    }
    long long ea = s_cfg_int(ra, "seed"), eb = s_cfg_int(rb, "seed");
    if (ea != eb)
        return ea < eb ? -1 : 1;
    const char *ta = json_string_value(json_object_get(ra, "task_id"));
    const char *tb = json_string_value(json_object_get(rb, "task_id"));
    return strcmp(ta ? ta : "", tb ? tb : "");
}

//  --------------------------------------------------------------------------
//  Sort rows in place in table order.

void
ms_cli_sort_rows(json_t *rows)
{
    size_t n = json_array_size(rows);
    if (n < 2)
        return;
    s_sort_item_t *items = calloc(n, sizeof *items);
    if (!items)
        return;
    for (size_t i = 0; i < n; i++) {
        items[i].row = json_incref(json_array_get(rows, i));
        items[i].rest = s_row_rest(items[i].row);
    }
    qsort(items, n, sizeof *items, s_row_compare);
    json_array_clear(rows);
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(rows, items[i].row);
        free(items[i].rest);
    }
    free(items);
}

//  --------------------------------------------------------------------------
//  Format a metric with a fixed number of decimals, "-" for null/absent.

static void
s_fmt_metric(char *out, size_t n, const json_t *v, int decimals)
{
    if (json_is_number(v))
        snprintf(out, n, "%.*f", decimals, json_number_value(v));
    else
        snprintf(out, n, "-");
}

#define S_TABLE_COLS 13     // fixed columns
#define S_OPERATORS_MAX 32  // operators cell: characters before "+N"
#define S_TABLE_EXTRA_MAX 8 // extra swept-key columns at most
#define S_CELL 160          // bytes per cell

//  --------------------------------------------------------------------------
//  A config value as a table cell ("-" when absent).

static void
s_fmt_value(char *out, size_t n, const json_t *v)
{
    if (json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "%lld", (long long) json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, n, "%g", json_real_value(v));
    else if (json_is_boolean(v))
        snprintf(out, n, "%s", json_is_true(v) ? "true" : "false");
    else if (!v || json_is_null(v))
        snprintf(out, n, "-");
    else {
        char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        snprintf(out, n, "%s", text ? text : "?");
        free(text);
    }
}

//  --------------------------------------------------------------------------
//  The verdict cells of a row (DESIGN.md "result row"): the task's verdict
//  and its revision ("verified r2"), with S_UNCOUNTED_MARK appended when
//  the row has "counted": false; the operators behind the verdict
//  (verdict_operators, or a by-task row's operators) comma-joined, an
//  operator named by a node id as its first 12 hex digits, each name cut
//  to S_OPERATORS_MAX characters, the names past S_OPERATORS_MAX
//  characters counted as "+N". "-" for a field the row lacks.

#define S_UNCOUNTED_MARK "*"

static void
s_verdict_cells(const json_t *row, char *verdict, char *operators)
{
    const char *state = json_string_value(json_object_get(row, "verdict"));
    const json_t *rev = json_object_get(row, "verdict_revision");
    const json_t *counted = json_object_get(row, "counted");
    int w = snprintf(verdict, S_CELL, "%s", state ? state : "-");
    if (state && json_is_integer(rev) && w > 0 && w < S_CELL)
        w += snprintf(verdict + w, S_CELL - (size_t) w, " r%lld",
                      (long long) json_integer_value(rev));
    if (json_is_false(counted) && w > 0 && w < S_CELL)
        snprintf(verdict + w, S_CELL - (size_t) w, "%s", S_UNCOUNTED_MARK);
    const json_t *ops = json_object_get(row, "verdict_operators");
    if (!json_is_array(ops))
        ops = json_object_get(row, "operators");
    size_t n = json_array_size(ops);
    size_t used = 0;
    size_t shown = 0;
    operators[0] = '\0';
    for (; shown < n; shown++) {
        const char *full = json_string_value(json_array_get(ops, shown));
        // An operator named by its node id (open pool) shows 12 hex
        // digits, like the task column; any name at most
        // S_OPERATORS_MAX characters.
        char name[S_OPERATORS_MAX + 1];
        if (full && strlen(full) == 64 &&
            strspn(full, "0123456789abcdef") == 64)
            ms_cli_short_id(full, name);
        else
            snprintf(name, sizeof name, "%s", full ? full : "?");
        size_t len = strlen(name) + (shown ? 1 : 0);
        // The first name always shows (cut to the cell); later ones
        // only while the cell stays under S_OPERATORS_MAX.
        if (shown && used + len > S_OPERATORS_MAX)
            break;
        int k = snprintf(operators + used, S_CELL - used, "%s%s",
                         shown ? "," : "", name);
        if (k < 0 || (size_t) k >= S_CELL - used) {
            used = S_CELL - 1;
            shown++;
            break;
        }
        used += (size_t) k;
    }
    if (shown < n && used + 16 < S_CELL)
        snprintf(operators + used, S_CELL - used, ",+%zu", n - shown);
    if (!json_is_array(ops) || n == 0)
        snprintf(operators, S_CELL, "-");
}

//  --------------------------------------------------------------------------
//  Fill the table cells of one row: the 13 fixed ones, then one per extra
//  swept key.

static void
s_table_cells(const json_t *row, const json_t *extra, char (*cells)[S_CELL])
{
    const char *task = json_string_value(json_object_get(row, "task_id"));
    char short_id[13];
    ms_cli_short_id(task ? task : "-", short_id);
    snprintf(cells[0], S_CELL, "%s", short_id);
    snprintf(cells[1], S_CELL, "%s", s_cfg_str(row, "activation"));
    snprintf(cells[2], S_CELL, "%lld", s_row_depth(row));
    const json_t *sizes = s_cfg_sizes(row);
    if (sizes) {
        size_t used = 0;
        cells[3][0] = '\0';
        for (size_t i = 0; i < json_array_size(sizes) && used < 150; i++) {
            int w = snprintf(
                cells[3] + used, S_CELL - used, "%s%lld", i ? "," : "",
                (long long) json_integer_value(json_array_get(sizes, i)));
            if (w < 0 || (size_t) w >= S_CELL - used)
                break;
            used += (size_t) w;
        }
    } else {
        snprintf(cells[3], S_CELL, "%lld", s_cfg_int(row, "width"));
    }
    snprintf(cells[4], S_CELL, "%lld", s_cfg_int(row, "seed"));
    const char *status = json_string_value(json_object_get(row, "status"));
    const char *replica = json_string_value(json_object_get(row, "replica"));
    snprintf(cells[5], S_CELL, "%s%s%s%s", status ? status : "-",
             replica ? " (" : "", replica ? replica : "", replica ? ")" : "");
    const json_t *epochs = json_object_get(row, "epochs");
    if (json_is_integer(epochs))
        snprintf(cells[6], S_CELL, "%lld",
                 (long long) json_integer_value(epochs));
    else
        snprintf(cells[6], S_CELL, "-");
    s_fmt_metric(cells[7], S_CELL, json_object_get(row, "val_accuracy"), 4);
    s_fmt_metric(cells[8], S_CELL, json_object_get(row, "test_accuracy"), 4);
    s_fmt_metric(cells[9], S_CELL, json_object_get(row, "seconds_per_epoch"),
                 3);
    const json_t *params = json_object_get(row, "params");
    if (json_is_integer(params))
        snprintf(cells[10], S_CELL, "%lld",
                 (long long) json_integer_value(params));
    else
        snprintf(cells[10], S_CELL, "-");
    s_verdict_cells(row, cells[11], cells[12]);
    const json_t *config = json_object_get(row, "config");
    for (size_t k = 0; k < json_array_size(extra); k++)
        s_fmt_value(cells[S_TABLE_COLS + k], S_CELL,
                    json_object_get(
                        config, json_string_value(json_array_get(extra, k))));
}

//  --------------------------------------------------------------------------
//  Rows as an aligned text table. Besides the fixed columns, one column
//  (after width) per other parameter the rows sweep (the analysis' group
//  keys: optimizer, learning_rate, ...), so rows that differ only there
//  do not read as duplicates; at most S_TABLE_EXTRA_MAX of them.

char *
ms_cli_format_table(const json_t *rows)
{
    static const char *fixed_headers[S_TABLE_COLS] = {
        "task",   "activation", "layers",   "width",    "seed",
        "status", "epochs",     "val_acc",  "test_acc", "s/epoch",
        "params", "verdict",    "operators"};
    // Text columns left-aligned, numbers right-aligned.
    static const bool fixed_right[S_TABLE_COLS] = {
        false, false, true, false, true,  false, true,
        true,  true,  true, true,  false, false};
    json_t *sorted = json_copy((json_t *) rows);
    if (!sorted)
        return NULL;
    ms_cli_sort_rows(sorted);
    json_t *extra = ms_analysis_group_keys(sorted);
    if (!extra) {
        json_decref(sorted);
        return NULL;
    }
    while (json_array_size(extra) > S_TABLE_EXTRA_MAX)
        json_array_remove(extra, json_array_size(extra) - 1);
    size_t n_extra = json_array_size(extra);
    size_t n_cols = S_TABLE_COLS + n_extra;
    //  Column order: the fixed ones up to width, the extra keys, the rest.
    size_t order[S_TABLE_COLS + S_TABLE_EXTRA_MAX];
    size_t at = 0;
    for (size_t c = 0; c <= 3; c++)
        order[at++] = c;
    for (size_t k = 0; k < n_extra; k++)
        order[at++] = S_TABLE_COLS + k;
    for (size_t c = 4; c < S_TABLE_COLS; c++)
        order[at++] = c;
    const char *headers[S_TABLE_COLS + S_TABLE_EXTRA_MAX];
    bool right[S_TABLE_COLS + S_TABLE_EXTRA_MAX];
    for (size_t c = 0; c < S_TABLE_COLS; c++) {
        headers[c] = fixed_headers[c];
        right[c] = fixed_right[c];
    }
    for (size_t k = 0; k < n_extra; k++) {
        headers[S_TABLE_COLS + k] = json_string_value(json_array_get(extra, k));
        right[S_TABLE_COLS + k] = false;
    }
    size_t n = json_array_size(sorted);
    char(*cells)[S_CELL] = calloc((n ? n : 1) * n_cols, sizeof *cells);
    if (!cells) {
        json_decref(extra);
        json_decref(sorted);
        return NULL;
    }
    size_t width[S_TABLE_COLS + S_TABLE_EXTRA_MAX];
    for (size_t c = 0; c < n_cols; c++)
        width[c] = strlen(headers[c]);
    for (size_t r = 0; r < n; r++) {
        char(*row)[S_CELL] = cells + r * n_cols;
        s_table_cells(json_array_get(sorted, r), extra, row);
        for (size_t c = 0; c < n_cols; c++)
            if (strlen(row[c]) > width[c])
                width[c] = strlen(row[c]);
    }
    s_str_t out = {0};
    for (size_t i = 0; i < n_cols; i++) {
        size_t c = order[i];
        s_str_printf(&out, "%s%*s", i ? "  " : "",
                     right[c] ? (int) width[c] : -(int) width[c], headers[c]);
    }
    s_str_printf(&out, "\n");
    bool uncounted = false;
    for (size_t r = 0; r < n; r++) {
        char(*row)[S_CELL] = cells + r * n_cols;
        if (json_is_false(
                json_object_get(json_array_get(sorted, r), "counted")))
            uncounted = true;
        for (size_t i = 0; i < n_cols; i++) {
            size_t c = order[i];
            s_str_printf(&out, "%s%*s", i ? "  " : "",
                         right[c] ? (int) width[c] : -(int) width[c], row[c]);
        }
        s_str_printf(&out, "\n");
    }
    if (uncounted)
        s_str_printf(&out,
                     S_UNCOUNTED_MARK " not counted: an extra replica, a "
                                      "duplicate, a quarantined node's or a "
                                      "failed task's row; its numbers take "
                                      "no part in the verdict\n");
    free(cells);
    json_decref(extra);
    json_decref(sorted);
    return s_str_take(&out);
}

#define MS_CLI_OPERATOR_COL 64 // longest operator name (MS_CERT_OPERATOR_MAX)

//  --------------------------------------------------------------------------
//  An operator as the peers table shows it: a node id's first 12 hex.

static void
s_peer_operator(const char *op, char out[MS_CLI_OPERATOR_COL + 1])
{
    size_t n = op ? strlen(op) : 0;
    bool hex = n == 64 && strspn(op, "0123456789abcdef") == 64;
    if (!n)
        snprintf(out, MS_CLI_OPERATOR_COL + 1, "-");
    else
        snprintf(out, MS_CLI_OPERATOR_COL + 1, "%.*s", hex ? 12 : (int) n, op);
}

//  --------------------------------------------------------------------------
//  The peers table.

char *
ms_cli_format_peers(const json_t *peers)
{
    if (!json_is_array(peers) || json_array_size(peers) == 0)
        return strdup("no peers\n");
    int width = (int) strlen("operator");
    size_t i;
    const json_t *peer;
    char op[MS_CLI_OPERATOR_COL + 1];
    json_array_foreach(peers, i, peer)
    {
        s_peer_operator(json_string_value(json_object_get(peer, "operator")),
                        op);
        if ((int) strlen(op) > width)
            width = (int) strlen(op);
    }
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    fprintf(f, "%-12s  %-7s  %-11s  %-16s  %-*s  %s\n", "node", "state",
            "standing", "incarnation", width, "operator", "address");
    json_array_foreach(peers, i, peer)
    {
        const char *id = json_string_value(json_object_get(peer, "node_id"));
        const char *st = json_string_value(json_object_get(peer, "state"));
        const char *inc =
            json_string_value(json_object_get(peer, "incarnation"));
        const char *ep = json_string_value(json_object_get(peer, "endpoint"));
        if (!ep)
            ep = json_string_value(json_object_get(peer, "address"));
        s_peer_operator(json_string_value(json_object_get(peer, "operator")),
                        op);
        // A revoked peer's link is dead too; its standing says why.
        const char *standing =
            json_is_true(json_object_get(peer, "revoked"))       ? "revoked"
            : json_is_true(json_object_get(peer, "quarantined")) ? "quarantined"
                                                                 : "ok";
        fprintf(f, "%-12.12s  %-7s  %-11s  %-16s  %-*s  %s\n", id ? id : "?",
                st ? st : "?", standing, inc ? inc : "-", width, op,
                ep && *ep ? ep : "-");
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

//  --------------------------------------------------------------------------
//  The datasets table.

char *
ms_cli_format_datasets(const json_t *datasets)
{
    if (!json_is_array(datasets) || json_array_size(datasets) == 0)
        return strdup("no datasets\n");
    int width = (int) strlen("name");
    size_t i;
    const json_t *d;
    json_array_foreach(datasets, i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        if (name && (int) strlen(name) > width)
            width = (int) strlen(name) > 40 ? 40 : (int) strlen(name);
    }
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    fprintf(f, "%-*s  %-8s  %-12s  %9s  %-7s  %s\n", width, "name", "kind",
            "hash", "size", "present", "sweeps");
    json_array_foreach(datasets, i, d)
    {
        const char *name = json_string_value(json_object_get(d, "name"));
        const char *kind = json_string_value(json_object_get(d, "kind"));
        const char *hash = json_string_value(json_object_get(d, "hash"));
        double bytes = 0;
        size_t k;
        const json_t *file;
        json_array_foreach(json_object_get(d, "files"), k, file) bytes +=
            json_number_value(json_object_get(file, "size"));
        const json_t *sweeps = json_object_get(d, "sweeps");
        const json_t *present = json_object_get(d, "present");
        static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        int u = 0;
        while (bytes >= 1024.0 && u < 4)
            bytes /= 1024.0, u++;
        char size_text[32];
        snprintf(size_text, sizeof size_text, u ? "%.1f %s" : "%.0f %s", bytes,
                 units[u]);
        fprintf(f, "%-*.*s  %-8s  %-12.12s  %9s  %-7s  %zu\n", width, width,
                name ? name : "?", kind ? kind : "?", hash ? hash : "-",
                size_text,
                json_is_true(present)    ? "yes"
                : json_is_false(present) ? "no"
                                         : "-",
                json_is_array(sweeps) ? json_array_size(sweeps) : 0);
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

//  --------------------------------------------------------------------------
//  Rows as CSV, in their order (the API's).

char *
ms_cli_format_csv(const json_t *rows)
{
    return ms_results_format_csv(rows);
}

//  --------------------------------------------------------------------------
//  Print rows in the named format.

int
ms_cli_print_rows(json_t *rows, const char *format)
{
    char *text = NULL;
    if (!format || strcmp(format, "table") == 0)
        text = ms_cli_format_table(rows);
    else if (strcmp(format, "csv") == 0)
        text = ms_cli_format_csv(rows);
    else if (strcmp(format, "json") == 0)
        return ms_cli_json_print(stdout, rows);
    else
        return ms_cli_usage_error(
            "--format", "unknown format '%s' (table, csv or json)", format);
    if (!text)
        return ms_cli_failure(NULL, "out of memory");
    fputs(text, stdout);
    free(text);
    return fflush(stdout) == 0 ? MS_CLI_EXIT_OK : MS_CLI_EXIT_FAILURE;
}

//  --------------------------------------------------------------------------
//  Compute the --analyze object of rows.

int
ms_cli_compute_analysis(const json_t *rows, const ms_analysis_options_t *opts,
                        json_t **analysis)
{
    *analysis = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_analysis_compute(rows, opts, analysis, &diag);
    if (rc != MS_OK) {
        //  A bad axis or metric is the option's fault: name it.
        if (strcmp(diag.where, "x") == 0 || strcmp(diag.where, "metric") == 0) {
            char reason[sizeof diag.reason];
            snprintf(reason, sizeof reason, "%s", diag.reason);
            ms_diag_set_code(&diag, rc,
                             strcmp(diag.where, "x") == 0 ? "--x" : "--metric",
                             "%s", reason);
        }
        return ms_cli_diag_exit(&diag, rc, "--analyze");
    }
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Print the --analyze summary of rows to out (text or JSON); analysis:
//  computed already (taken), or NULL to compute it here.

static int
s_print_analysis(FILE *out, const json_t *rows,
                 const ms_analysis_options_t *opts, json_t *analysis,
                 bool json_out)
{
    int rc = MS_CLI_EXIT_OK;
    if (!analysis)
        rc = ms_cli_compute_analysis(rows, opts, &analysis);
    if (rc != MS_CLI_EXIT_OK)
        return rc;
    if (json_out) {
        rc = ms_cli_json_print(out, analysis);
        json_decref(analysis);
        return rc;
    }
    char *text = ms_analysis_format_text(analysis);
    json_decref(analysis);
    if (!text)
        return ms_cli_failure(NULL, "out of memory");
    fputs(text, out);
    if (*text && text[strlen(text) - 1] != '\n')
        fputc('\n', out);
    free(text);
    return fflush(out) == 0 ? MS_CLI_EXIT_OK : MS_CLI_EXIT_FAILURE;
}

//  --------------------------------------------------------------------------
//  Print the --analyze summary of rows on stdout.

int
ms_cli_print_analysis(const json_t *rows, bool json_out)
{
    return s_print_analysis(stdout, rows, NULL, NULL, json_out);
}

//  --------------------------------------------------------------------------
//  Print rows in a format, then the analysis when asked. JSON: one
//  document {"rows", "analysis"}. Table: the analysis text follows on
//  stdout. CSV: stdout stays pure CSV (a program reads it), so the
//  analysis text goes to stderr.

int
ms_cli_print_results(json_t *rows, const char *format, bool analyze)
{
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    return ms_cli_print_results_opts(rows, format, analyze ? &opts : NULL);
}

//  --------------------------------------------------------------------------
//  As ms_cli_print_results, the analysis with options (NULL: none).

int
ms_cli_print_results_opts(json_t *rows, const char *format,
                          const ms_analysis_options_t *analyze)
{
    if (analyze && format && strcmp(format, "json") == 0) {
        json_t *analysis = NULL;
        int rc = ms_cli_compute_analysis(rows, analyze, &analysis);
        if (rc != MS_CLI_EXIT_OK)
            return rc;
        json_t *doc =
            json_pack("{s:O, s:o}", "rows", rows, "analysis", analysis);
        rc = doc ? ms_cli_json_print(stdout, doc)
                 : ms_cli_failure(NULL, "out of memory");
        json_decref(doc);
        return rc;
    }
    //  The analysis first: a bad --x or --metric is refused before any
    //  row is printed.
    json_t *analysis = NULL;
    int rc = analyze ? ms_cli_compute_analysis(rows, analyze, &analysis)
                     : MS_CLI_EXIT_OK;
    if (rc == MS_CLI_EXIT_OK)
        rc = ms_cli_print_rows(rows, format);
    if (rc == MS_CLI_EXIT_OK && analyze) {
        bool csv = format && strcmp(format, "csv") == 0;
        FILE *out = csv ? stderr : stdout;
        fprintf(out, "\n");
        rc = s_print_analysis(out, rows, analyze, analysis, false);
        analysis = NULL; // taken
    }
    json_decref(analysis);
    return rc;
}

//  --------------------------------------------------------------------------
//  Append v as indented JSON at nesting depth.

static void
s_json_write(s_str_t *out, const json_t *v, int depth)
{
    size_t i, n;
    const char *key;
    json_t *item;
    char buf[MS_WIRE_CANON_DOUBLE_MAX];
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        if (json_object_size(v) == 0) {
            s_str_printf(out, "{}");
            return;
        }
        s_str_printf(out, "{\n");
        n = 0;
        json_object_foreach((json_t *) v, key, item)
        {
            json_t *k = json_string(key);
            char *ktext = json_dumps(k, JSON_ENCODE_ANY);
            s_str_printf(out, "%*s%s: ", (depth + 1) * 2, "",
                         ktext ? ktext : "\"\"");
            free(ktext);
            json_decref(k);
            s_json_write(out, item, depth + 1);
            s_str_printf(out, "%s\n", ++n < json_object_size(v) ? "," : "");
        }
        s_str_printf(out, "%*s}", depth * 2, "");
        return;
    case JSON_ARRAY:
        if (json_array_size(v) == 0) {
            s_str_printf(out, "[]");
            return;
        }
        s_str_printf(out, "[\n");
        json_array_foreach(v, i, item)
        {
            s_str_printf(out, "%*s", (depth + 1) * 2, "");
            s_json_write(out, item, depth + 1);
            s_str_printf(out, "%s\n", i + 1 < json_array_size(v) ? "," : "");
        }
        s_str_printf(out, "%*s]", depth * 2, "");
        return;
    case JSON_REAL:
        if (ms_wire_canon_format_double(json_real_value(v), buf, sizeof buf) <
            0)
            s_str_printf(out, "null");
        else
            s_str_printf(out, "%s", buf);
        return;
    default: {
        char *text = json_dumps(v, JSON_ENCODE_ANY);
        s_str_printf(out, "%s", text ? text : "null");
        free(text);
        return;
    }
    }
}

//  --------------------------------------------------------------------------
//  Print a JSON value, indented, with shortest round-trip reals.

int
ms_cli_json_print(FILE *out, const json_t *value)
{
    s_str_t text = {0};
    s_json_write(&text, value, 0);
    s_str_printf(&text, "\n");
    char *s = s_str_take(&text);
    if (!s)
        return ms_cli_failure(NULL, "out of memory");
    fputs(s, out);
    free(s);
    return fflush(out) == 0 ? MS_CLI_EXIT_OK : MS_CLI_EXIT_FAILURE;
}
