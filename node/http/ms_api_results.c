/*  =========================================================================
    ms_api_results - results, analyses and tasks (with their weights)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Results are read from the store through ms_results (pages at task
    boundaries); a filter is applied page by page so a filtered page is as
    long as an unfiltered one. The analysis of a sweep is cached per
    (sweep, verified, x, metric), labelled with the sweep's store
    generation, so a repeated GET costs nothing until a row changes
    (struct ms_api's cache, guarded by cache_mu).
*/
#include "ms_api.h"
#include "ms_api_internal.h"

#include "ms_analysis.h"
#include "ms_hash.h"
#include "ms_onnx.h"
#include "ms_results.h"
#include "ms_verdict.h"
#include "ms_wire_canon.h"

#include <microhttpd.h>
#include <pthread.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

//  One walk over the query parameters into a filter.
typedef struct {
    ms_api_filter_t *filter; // being filled
    int rc;                  // first error
    ms_diag_t *diag;         // its detail
} s_filter_walk_t;

static enum MHD_Result
s_filter_one(void *cls, enum MHD_ValueKind kind, const char *key,
             const char *value)
{
    (void) kind;
    s_filter_walk_t *w = cls;
    int rc = ms_api_filter_add(w->filter, key, value, w->diag);
    if (rc == MS_ERR_NOTFOUND)
        return MHD_YES; // another parameter
    if (rc != MS_OK) {
        w->rc = rc;
        return MHD_NO;
    }
    return MHD_YES;
}

//  --------------------------------------------------------------------------
//  A page of rows that meet FILTER: pages of ms_results_page_ex are read
//  and filtered until LIMIT rows are kept (limit <= 0: every row) or the
//  sweep ends. A page ends at a task boundary as unfiltered ones do;
//  *next (when not NULL) is the index of the last task looked at, or NULL
//  at the end.

static int
s_results_filtered(ms_api_t *self, const ms_hash_t *id, unsigned flags,
                   const char *const *keep, const ms_api_filter_t *filter,
                   const char *after, int limit, json_t **rows, char **next,
                   ms_diag_t *diag)
{
    if (ms_api_filter_size(filter) == 0)
        return ms_results_page_fields(self->hooks.store, id, flags, keep, after,
                                      limit, rows, next, diag);
    *rows = NULL;
    if (next)
        *next = NULL;
    json_t *kept = json_array();
    char *cursor = after && *after ? strdup(after) : NULL;
    if (!kept || (after && *after && !cursor)) {
        json_decref(kept);
        return MS_ERR_NOMEM;
    }
    int rc = MS_OK;
    for (;;) {
        size_t have = json_array_size(kept);
        int want = limit > 0 ? limit - (int) have : 0;
        if (limit > 0 && want < 256)
            want = 256; // read in chunks; cut at a task boundary below
        json_t *page = NULL;
        char *page_next = NULL;
        rc = ms_results_page_fields(self->hooks.store, id, flags, keep, cursor,
                                    want, &page, limit > 0 ? &page_next : NULL,
                                    diag);
        if (rc != MS_OK)
            break;
        size_t i;
        json_t *row;
        const char *prev_task = NULL;
        bool cut = false;
        json_array_foreach(page, i, row)
        {
            const char *task =
                json_string_value(json_object_get(row, "task_id"));
            if (limit > 0 && json_array_size(kept) >= (size_t) limit &&
                prev_task && task && strcmp(task, prev_task) != 0) {
                // Full, and a new task starts: the cursor is the index of
                // the task before it.
                ms_hash_t tid;
                ms_store_task_t *t = NULL;
                if (ms_hash_from_hex(prev_task, &tid) == MS_OK &&
                    ms_store_get_task(self->hooks.store, tid.bytes, &t) ==
                        MS_OK) {
                    char text[24];
                    snprintf(text, sizeof text, "%" PRIu32, t->index);
                    ms_store_task_destroy(&t);
                    free(page_next);
                    page_next = strdup(text);
                    cut = true;
                    break;
                }
            }
            if (ms_api_filter_match(filter, row))
                json_array_append(kept, row);
            prev_task = task;
        }
        json_decref(page);
        free(cursor);
        cursor = page_next;
        if (!cursor || cut ||
            (limit > 0 && json_array_size(kept) >= (size_t) limit))
            break;
    }
    if (rc != MS_OK) {
        free(cursor);
        json_decref(kept);
        return rc;
    }
    if (next)
        *next = cursor;
    else
        free(cursor);
    *rows = kept;
    return MS_OK;
}

#define S_FIELDS_MAX 32 // names in one ?fields=

//  A parsed ?fields=: the names asked (pointers into text), and the
//  members to parse (those, plus what the filters read).
typedef struct {
    char text[1024];                     // the list, split in place
    const char *names[S_FIELDS_MAX + 1]; // asked, NULL-terminated
    const char *parse[S_FIELDS_MAX + 4]; // to parse, NULL-terminated
    size_t n;                            // names asked
} s_fields_t;

//  --------------------------------------------------------------------------
//  Parse ?fields=a,b,c into F: every name must be a row member (unknown,
//  empty or repeated names, or too many: MS_ERR_INVALID with diag).

static int
s_fields_parse(const char *list, s_fields_t *f, ms_diag_t *diag)
{
    memset(f, 0, sizeof *f);
    if (strlen(list) >= sizeof f->text)
        return ms_diag_set(diag, "fields", "longer than %zu characters",
                           sizeof f->text - 1);
    snprintf(f->text, sizeof f->text, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(f->text, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (size_t i = 0; ms_results_row_members[i] && !known; i++)
            known = strcmp(ms_results_row_members[i], t) == 0;
        if (!known) {
            char names[600] = "";
            size_t len = 0;
            for (size_t i = 0; ms_results_row_members[i]; i++)
                len +=
                    (size_t) snprintf(names + len, sizeof names - len, "%s%s",
                                      i ? ", " : "", ms_results_row_members[i]);
            return ms_diag_set(diag, "fields",
                               "unknown field '%.64s' (a row's fields: %s)", t,
                               names);
        }
        for (size_t i = 0; i < f->n; i++)
            if (strcmp(f->names[i], t) == 0)
                return ms_diag_set(diag, "fields", "'%.64s' named twice", t);
        if (f->n == S_FIELDS_MAX)
            return ms_diag_set(diag, "fields", "more than %d names",
                               S_FIELDS_MAX);
        f->names[f->n] = t;
        f->parse[f->n] = t;
        f->n++;
    }
    if (f->n == 0)
        return ms_diag_set(diag, "fields",
                           "empty (name a row's fields, "
                           "comma-separated)");
    // The filters read status and config (the verdict is laid over).
    size_t k = f->n;
    f->parse[k++] = "status";
    f->parse[k++] = "config";
    f->parse[k] = NULL;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Keep only F's names in every row of ROWS (in place).

static int
s_fields_apply(json_t *rows, const s_fields_t *f)
{
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        json_t *slim = json_object();
        if (!slim)
            return MS_ERR_NOMEM;
        for (size_t k = 0; k < f->n; k++) {
            json_t *v = json_object_get(row, f->names[k]);
            if (v)
                json_object_set(slim, f->names[k], v);
        }
        json_array_set_new(rows, i, slim);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps/{id}/results

//  --------------------------------------------------------------------------
//  The config keys of a sweep: those of its first task's config (every
//  task of a sweep has the same keys: a spec sweeps either hidden_sizes
//  or hidden_layers and width).

static int
s_first_config(void *arg, const ms_store_task_t *task)
{
    json_t **out = arg;
    *out = json_loadb(task->config_json, task->config_len, 0, NULL);
    return 1; // stop after the first task
}

//  One walk over the query parameters: the first config.KEY that the
//  sweep's configs lack.
typedef struct {
    const json_t *config; // the first task's config
    const char *missing;  // config.KEY (borrowed), or NULL
} s_config_walk_t;

static enum MHD_Result
s_config_one(void *cls, enum MHD_ValueKind kind, const char *key,
             const char *value)
{
    (void) kind;
    (void) value;
    s_config_walk_t *w = cls;
    if (strncmp(key, "config.", 7) == 0 &&
        !json_object_get(w->config, key + 7)) {
        w->missing = key;
        return MHD_NO;
    }
    return MHD_YES;
}

//  Answer 400 when a config.KEY filter names a key that no task of the
//  sweep has (a typo would otherwise match no row, silently); returns
//  true when it did.

static bool
s_bad_config_filter(ms_api_t *self, struct MHD_Connection *conn,
                    const ms_hash_t *id, enum MHD_Result *r)
{
    json_t *config = NULL;
    ms_store_tasks_by_sweep(self->hooks.store, id->bytes, s_first_config,
                            &config);
    if (!json_is_object(config)) { // no task (or unreadable): no check
        json_decref(config);
        return false;
    }
    s_config_walk_t w = {.config = config};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_config_one, &w);
    if (w.missing) {
        char keys[600] = "";
        size_t len = 0;
        const char *key;
        json_t *value;
        json_object_foreach(config, key, value)
        {
            if (len >= sizeof keys - 80)
                break;
            len += (size_t) snprintf(keys + len, sizeof keys - len, "%s%s",
                                     len ? ", " : "", key);
        }
        *r = ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                "%.64s: no task of this sweep has config key "
                                "'%.56s' (its keys: %s)",
                                w.missing, w.missing + 7, keys);
    }
    json_decref(config);
    return w.missing != NULL;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps/{id}/results

enum MHD_Result
ms_api_get_results(ms_api_t *self, struct MHD_Connection *conn,
                   const ms_hash_t *id)
{
    const char *format =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
    const char *limit_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "limit");
    const char *after =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after");
    const char *all_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "all");
    bool all = false;
    if (all_text && (!strcmp(all_text, "1") || !strcmp(all_text, "true")))
        all = true;
    else if (all_text && strcmp(all_text, "0") && strcmp(all_text, "false"))
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "all: '%.64s' is not 0 or 1", all_text);
    unsigned flags = all ? MS_RESULTS_ALL : 0;
    const char *names[2] = {"verified", "by_task"};
    unsigned bits[2] = {MS_RESULTS_VERIFIED, MS_RESULTS_BY_TASK};
    for (int f = 0; f < 2; f++) {
        const char *t =
            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, names[f]);
        if (t && (!strcmp(t, "1") || !strcmp(t, "true")))
            flags |= bits[f];
        else if (t && strcmp(t, "0") && strcmp(t, "false"))
            return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                      "%s: '%.64s' is not 0 or 1", names[f], t);
    }
    bool csv = false;
    if (format && strcmp(format, "csv") == 0)
        csv = true;
    else if (format && strcmp(format, "json") != 0)
        return ms_api_reply_error(
            self, conn, MHD_HTTP_BAD_REQUEST,
            "format: unknown '%.64s' (expected json or csv)", format);
    int limit = 1000;
    if (limit_text) {
        char *end = NULL;
        long v = strtol(limit_text, &end, 10);
        if (!*limit_text || *end || v < 1 || v > 100000)
            return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                      "limit: '%.64s' is not a number in "
                                      "1..100000",
                                      limit_text);
        limit = (int) v;
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    // ?fields=a,b,c: only those members of each row (JSON; CSV has its
    // fixed columns). The members not asked are not even parsed.
    const char *fields_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "fields");
    s_fields_t fields;
    if (fields_text && csv)
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "fields: for JSON only (CSV has fixed "
                                  "columns)");
    if (fields_text && s_fields_parse(fields_text, &fields, &diag) != MS_OK)
        return ms_api_reply_diag(self, conn, MHD_HTTP_BAD_REQUEST, &diag,
                                 MS_ERR_INVALID);
    ms_api_filter_t *filter = ms_api_filter_new();
    if (!filter)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    s_filter_walk_t fw = {.filter = filter, .rc = MS_OK, .diag = &diag};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_filter_one, &fw);
    if (fw.rc != MS_OK) {
        ms_api_filter_destroy(&filter);
        return ms_api_reply_diag(
            self, conn, fw.rc == MS_ERR_NOMEM ? 500 : MHD_HTTP_BAD_REQUEST,
            &diag, fw.rc);
    }
    enum MHD_Result bad = MHD_NO;
    if (s_bad_config_filter(self, conn, id, &bad)) {
        ms_api_filter_destroy(&filter);
        return bad;
    }
    json_t *rows = NULL;
    char *next = NULL;
    int rc = s_results_filtered(
        self, id, flags, fields_text ? fields.parse : NULL, filter,
        csv ? NULL : after, csv ? 0 : limit, &rows, csv ? NULL : &next, &diag);
    ms_api_filter_destroy(&filter);
    if (rc == MS_OK && fields_text)
        rc = s_fields_apply(rows, &fields);
    if (rc != MS_OK) {
        json_decref(rows);
        free(next);
        return ms_api_reply_diag(self, conn, ms_api_status_of(rc), &diag, rc);
    }
    if (csv) {
        char *text = ms_results_format_csv(rows);
        json_decref(rows);
        if (!text)
            return ms_api_reply_error(self, conn, 500, "out of memory");
        enum MHD_Result r =
            ms_api_reply(self, conn, MHD_HTTP_OK, "text/csv; charset=utf-8",
                         text, strlen(text));
        free(text);
        return r;
    }
    json_t *page = json_pack("{s:o, s:o}", "rows", rows, "next",
                             next ? json_string(next) : json_null());
    free(next);
    return ms_api_reply_json(self, conn, MHD_HTTP_OK, page);
}

/*  Analysis cache. A sweep's analysis is a function of its rows and
    verdicts, which change only when results, verdicts or task states do:
    the store's sweep generation (ms_store_sweep_generation) counts those
    changes. An answer is kept, as its JSON text, with the generation
    read before its rows were; a request whose generation is the same is
    answered from the text. Generation 0 (unknown) is never stored. At
    most MS_API_ANALYSIS_CACHE answers (least recently used out); the
    computation runs outside the lock, so two first requests may both
    compute (the later one stores). */

//  --------------------------------------------------------------------------
//  The cached answer of (sweep, verified, query) at GENERATION, copied
//  (caller frees), or NULL.

static char *
s_cache_get(ms_api_t *self, const ms_hash_t *id, bool verified,
            const char *query, uint64_t generation, size_t *len)
{
    char *text = NULL;
    pthread_mutex_lock(&self->cache_mu);
    for (size_t i = 0; i < MS_API_ANALYSIS_CACHE && !text; i++) {
        ms_api_cached_t *c = &self->cache[i];
        if (c->generation != generation || c->verified != verified ||
            strcmp(c->query, query) != 0 ||
            memcmp(c->sweep_id, id->bytes, MS_HASH_BYTES) != 0)
            continue;
        text = malloc(c->len + 1);
        if (text) {
            memcpy(text, c->text, c->len + 1);
            *len = c->len;
            c->used = ++self->cache_tick;
        }
    }
    pthread_mutex_unlock(&self->cache_mu);
    return text;
}

//  --------------------------------------------------------------------------
//  Keep a copy of TEXT as the answer of (sweep, verified, query) at
//  GENERATION, in that key's slot or the least recently used one.

static void
s_cache_put(ms_api_t *self, const ms_hash_t *id, bool verified,
            const char *query, uint64_t generation, const char *text,
            size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, text, len + 1);
    pthread_mutex_lock(&self->cache_mu);
    ms_api_cached_t *slot = NULL;
    for (size_t i = 0; i < MS_API_ANALYSIS_CACHE; i++) {
        ms_api_cached_t *c = &self->cache[i];
        if (c->generation && c->verified == verified &&
            strcmp(c->query, query) == 0 &&
            memcmp(c->sweep_id, id->bytes, MS_HASH_BYTES) == 0) {
            slot = c; // this key's older answer
            break;
        }
        if (!slot || c->used < slot->used)
            slot = c;
    }
    free(slot->text);
    memcpy(slot->sweep_id, id->bytes, MS_HASH_BYTES);
    slot->verified = verified;
    snprintf(slot->query, sizeof slot->query, "%s", query);
    slot->generation = generation;
    slot->text = copy;
    slot->len = len;
    slot->used = ++self->cache_tick;
    pthread_mutex_unlock(&self->cache_mu);
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps/{id}/analysis

enum MHD_Result
ms_api_get_analysis(ms_api_t *self, struct MHD_Connection *conn,
                    const ms_hash_t *id)
{
    // ?verified=1: the analysis of the verified rows only (as the results
    // route's verified=1 and `meshsweep results --analyze --verified`).
    const char *t =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "verified");
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    if (t && (!strcmp(t, "1") || !strcmp(t, "true")))
        opts.verified_only = true;
    else if (t && strcmp(t, "0") && strcmp(t, "false"))
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "verified: '%.64s' is not 0 or 1", t);
    // ?x=PARAM and ?metric=NAME (ms_analysis checks them against the rows
    // and its metric list; here only their length).
    const char *xq =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "x");
    const char *mq =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "metric");
    if ((xq && strlen(xq) > 64) || (mq && strlen(mq) > 64))
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "%s: longer than 64 characters",
                                  xq && strlen(xq) > 64 ? "x" : "metric");
    char query[MS_API_ANALYSIS_QUERY];
    snprintf(query, sizeof query, "%s|%s", xq ? xq : "", mq ? mq : "");
    // The generation first: rows read after it are at least that new.
    uint64_t gen = ms_store_sweep_generation(self->hooks.store, id->bytes);
    size_t len = 0;
    char *text =
        gen ? s_cache_get(self, id, opts.verified_only, query, gen, &len)
            : NULL;
    if (text) {
        enum MHD_Result r = ms_api_reply(self, conn, MHD_HTTP_OK,
                                         "application/json", text, len);
        free(text);
        return r;
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    json_t *rows = NULL;
    // The sweep's metric (its spec's "metric", read without parsing the
    // task list); a sweep not found is answered by the rows' read below.
    json_t *spec_metric = NULL;
    ms_store_sweep_t *sweep = NULL;
    if (ms_store_get_sweep(self->hooks.store, id->bytes, &sweep) == MS_OK) {
        const char *v;
        size_t n;
        json_error_t err;
        if (ms_results_row_member(sweep->spec_json, sweep->spec_len, "metric",
                                  &v, &n) == MS_OK)
            spec_metric = json_loadb(v, n, JSON_DECODE_ANY, &err);
        ms_store_sweep_destroy(&sweep);
    }
    ms_analysis_options_metric(&opts, spec_metric, mq);
    opts.x = xq;
    // The members the analysis reads (ms_analysis.h); the rest of each
    // row (its curve above all) is not parsed, except for train_loss,
    // which a row has only in its curve.
    static const char *const keep[] = {"status",
                                       "counted",
                                       "config",
                                       "val_accuracy",
                                       "test_accuracy",
                                       "val_loss",
                                       "test_loss",
                                       "train_loss",
                                       "train_seconds",
                                       "params",
                                       "seconds_per_epoch",
                                       "fingerprint",
                                       "platform",
                                       NULL,
                                       NULL};
    const char *fields[sizeof keep / sizeof *keep];
    memcpy(fields, keep, sizeof keep);
    if (opts.metric && strcmp(opts.metric, "train_loss") == 0)
        fields[sizeof keep / sizeof *keep - 2] = "curve";
    int rc = ms_results_page_fields(
        self->hooks.store, id, opts.verified_only ? MS_RESULTS_VERIFIED : 0,
        fields, NULL, 0, &rows, NULL, &diag);
    if (rc != MS_OK) {
        json_decref(spec_metric);
        return ms_api_reply_diag(self, conn, ms_api_status_of(rc), &diag, rc);
    }
    json_t *analysis = NULL;
    rc = ms_analysis_compute(rows, &opts, &analysis, &diag);
    json_decref(rows);
    json_decref(spec_metric); // after the compute: opts.metric borrows it
    // A bad ?x= or ?metric= is the request's fault (400); a stored row
    // the analysis cannot read is 422.
    bool bad_query =
        strcmp(diag.where, "x") == 0 || strcmp(diag.where, "metric") == 0;
    if (rc != MS_OK)
        return ms_api_reply_diag(self, conn,
                                 rc == MS_ERR_NOMEM ? 500
                                 : bad_query        ? 400
                                                    : 422,
                                 &diag, rc);
    text = ms_wire_canon_dump(analysis);
    if (!text)
        text = json_dumps(analysis, JSON_COMPACT);
    json_decref(analysis);
    if (!text)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    len = strlen(text);
    if (gen)
        s_cache_put(self, id, opts.verified_only, query, gen, text, len);
    enum MHD_Result r =
        ms_api_reply(self, conn, MHD_HTTP_OK, "application/json", text, len);
    free(text);
    return r;
}

//  ==========================================================================
//  Tasks and datasets

//  A task id prefix search.
typedef struct {
    ms_store_t *store;                // the store
    char prefix[MS_HASH_HEX_LEN + 1]; // lowercase hex prefix
    size_t n_prefix;                  // its length
    size_t n_found;                   // tasks matching
    ms_hash_t found;                  // the first one
} s_task_find_t;

static int
s_task_find_one(void *arg, const ms_store_task_t *task)
{
    s_task_find_t *f = arg;
    ms_hash_t id;
    memcpy(id.bytes, task->task_id, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, hex);
    if (strncmp(hex, f->prefix, f->n_prefix) == 0 && f->n_found++ == 0)
        f->found = id;
    return f->n_found > 1 ? 1 : 0; // two are enough to say "ambiguous"
}

static int
s_task_find_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    s_task_find_t *f = arg;
    int rc =
        ms_store_tasks_by_sweep(f->store, sweep->sweep_id, s_task_find_one, f);
    return rc == 1 || f->n_found > 1 ? 1 : rc;
}

//  --------------------------------------------------------------------------
//  Resolve a task id: 64 hex, or a unique prefix of >= 12 (every task is
//  looked at: a read of the task table, fine for an interactive lookup).

static int
s_find_task(ms_store_t *store, const char *text, ms_hash_t *out,
            ms_diag_t *diag)
{
    size_t n = strlen(text);
    char low[MS_HASH_HEX_LEN + 1];
    if (n < MS_RESULTS_PREFIX_MIN || n > MS_HASH_HEX_LEN ||
        strspn(text, "0123456789abcdefABCDEF") != n)
        return ms_diag_set(diag, "task",
                           "'%.80s' is not a task id (64 hex characters, "
                           "or a unique prefix of %d or more)",
                           text, MS_RESULTS_PREFIX_MIN);
    for (size_t i = 0; i <= n; i++)
        low[i] = (char) tolower((unsigned char) text[i]);
    if (n == MS_HASH_HEX_LEN)
        return ms_hash_from_hex(low, out) == MS_OK
                   ? MS_OK
                   : ms_diag_set(diag, "task", "'%s' is not hex", text);
    s_task_find_t f = {.store = store, .n_prefix = n};
    memcpy(f.prefix, low, n + 1);
    int rc = ms_store_list_sweeps(store, s_task_find_sweep, &f);
    if (rc != MS_OK && rc != 1)
        return ms_diag_set_code(diag, rc, "store", "%s", ms_strerror(rc));
    if (f.n_found == 0)
        return ms_diag_set_code(diag, MS_ERR_NOTFOUND, low, "no such task");
    if (f.n_found > 1)
        return ms_diag_set_code(diag, MS_ERR_CONFLICT, low,
                                "prefix matches several tasks (give more "
                                "characters)");
    *out = f.found;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  32 id bytes as a new JSON hex string, or null when all zero.

json_t *
ms_api_id_json(const uint8_t *bytes)
{
    static const uint8_t zero[MS_HASH_BYTES];
    if (memcmp(bytes, zero, MS_HASH_BYTES) == 0)
        return json_null();
    ms_hash_t h;
    memcpy(h.bytes, bytes, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    return json_string(hex);
}

static int
s_claim_one(void *arg, const ms_store_claim_t *claim)
{
    json_t *list = arg;
    json_t *c = json_pack("{s:i, s:I, s:o, s:b, s:b}", "slot",
                          (int) claim->slot, "epoch", (json_int_t) claim->epoch,
                          "node_id", ms_api_id_json(claim->node_id), "claimed",
                          claim->claimed, "released", claim->released);
    return c && json_array_append_new(list, c) == 0 ? 0 : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  The task named by text (an id or a unique prefix) into *id and *task
//  (caller destroys it). False when there is none: then the error reply
//  is queued and its result is in *refused.

static bool
s_open_task(ms_api_t *self, struct MHD_Connection *conn, const char *text,
            ms_hash_t *id, ms_store_task_t **task, enum MHD_Result *refused)
{
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = s_find_task(self->hooks.store, text, id, &diag);
    if (rc != MS_OK) {
        *refused =
            ms_api_reply_diag(self, conn, ms_api_status_of(rc), &diag, rc);
        return false;
    }
    rc = ms_store_get_task(self->hooks.store, id->bytes, task);
    if (rc != MS_OK) {
        *refused = ms_api_reply_error(
            self, conn, ms_api_status_of(rc), "task %.64s: %s", text,
            rc == MS_ERR_NOTFOUND ? "no such task" : ms_strerror(rc));
        return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  The result rows of task hex (index in its sweep), as the results route
//  gives them; a new array, or NULL when memory runs out.

static json_t *
s_task_rows(ms_api_t *self, const ms_hash_t *sweep_id, uint32_t index,
            const char *hex)
{
    char after[24];
    snprintf(after, sizeof after, "%" PRId64, (int64_t) index - 1);
    json_t *rows = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_results_page_ex(self->hooks.store, sweep_id, MS_RESULTS_ALL,
                       index ? after : NULL, 1, &rows, NULL, &diag);
    json_t *mine = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *t = json_string_value(json_object_get(row, "task_id"));
        if (mine && t && strcmp(t, hex) == 0)
            json_array_append(mine, row);
    }
    json_decref(rows);
    return mine;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/tasks/{id}

enum MHD_Result
ms_api_get_task(ms_api_t *self, struct MHD_Connection *conn, const char *text)
{
    ms_hash_t id;
    ms_store_task_t *task = NULL;
    enum MHD_Result refused;
    if (!s_open_task(self, conn, text, &id, &task, &refused))
        return refused;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, hex);
    json_error_t jerr;
    json_t *config = json_loadb(task->config_json, task->config_len, 0, &jerr);
    json_t *obj = json_pack(
        "{s:s, s:o, s:I, s:o, s:s, s:I, s:I, s:o, s:o}", "task_id", hex,
        "sweep_id", ms_api_id_json(task->sweep_id), "index",
        (json_int_t) task->index, "config", config ? config : json_null(),
        "state", ms_task_state_name(task->state), "attempts",
        (json_int_t) task->attempts, "updated_at_ms",
        (json_int_t) task->updated_at_ms, "holder",
        ms_api_id_json(task->holder), "error",
        task->error && *task->error ? json_string(task->error) : json_null());
    uint32_t index = task->index;
    ms_hash_t sweep_id;
    memcpy(sweep_id.bytes, task->sweep_id, MS_HASH_BYTES);
    ms_store_task_destroy(&task);
    if (!obj)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    // The claims the store holds, and the leases in the node's view.
    json_t *claims = json_array();
    if (claims && ms_store_claims_by_task(self->hooks.store, id.bytes,
                                          s_claim_one, claims) != MS_OK) {
        json_decref(claims);
        claims = NULL;
    }
    json_object_set_new(obj, "claims", claims ? claims : json_null());
    json_t *leases = self->hooks.task_leases
                         ? self->hooks.task_leases(self->hooks.arg, &id)
                         : NULL;
    json_object_set_new(obj, "leases", leases ? leases : json_null());
    // The verdict and the result rows (as the results route gives them).
    ms_store_verdict_t *v = malloc(sizeof *v);
    if (v && ms_store_get_verdict(self->hooks.store, id.bytes, v) == MS_OK) {
        json_object_set_new(obj, "verdict",
                            json_string(ms_verdict_state_name(
                                (ms_verdict_state_t) v->verdict)));
        json_object_set_new(obj, "verdict_revision",
                            json_integer((json_int_t) v->revision));
    } else {
        json_object_set_new(obj, "verdict", json_string("pending"));
        json_object_set_new(obj, "verdict_revision", json_integer(0));
    }
    free(v);
    json_t *mine = s_task_rows(self, &sweep_id, index, hex);
    json_object_set_new(obj, "results", mine ? mine : json_array());
    return ms_api_reply_json(self, conn, MHD_HTTP_OK, obj);
}

//  --------------------------------------------------------------------------
//  Read the kept weights file at path (at most 2 GiB) into *bytes.

static int
s_read_weights(const char *path, uint8_t **bytes, size_t *n)
{
    *bytes = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size > ((off_t) 2 << 30)) {
        if (fd >= 0)
            close(fd);
        return MS_ERR_IO;
    }
    uint8_t *buf = malloc((size_t) st.st_size + 1);
    size_t done = 0;
    while (buf && done < (size_t) st.st_size) {
        ssize_t got = read(fd, buf + done, (size_t) st.st_size - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (size_t) got;
    }
    close(fd);
    if (!buf)
        return MS_ERR_NOMEM;
    if (done != (size_t) st.st_size) {
        free(buf);
        return MS_ERR_IO;
    }
    *bytes = buf;
    *n = done;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/tasks/{id}/weights?format=onnx|native: the kept weights
//  of the task's result (the first row naming a blob this node holds).

enum MHD_Result
ms_api_get_task_weights(ms_api_t *self, struct MHD_Connection *conn,
                        const char *text)
{
    const char *format =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
    if (!format)
        format = "native";
    bool onnx = strcmp(format, "onnx") == 0;
    if (!onnx && strcmp(format, "native") != 0)
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "format: '%.32s' is not onnx or native",
                                  format);
    if (!self->hooks.blob_path)
        return ms_api_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                                  "this node serves no kept weights");
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_hash_t id;
    ms_store_task_t *task = NULL;
    enum MHD_Result refused;
    if (!s_open_task(self, conn, text, &id, &task, &refused))
        return refused;
    int rc = MS_OK;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, hex);
    ms_hash_t sweep_id;
    memcpy(sweep_id.bytes, task->sweep_id, MS_HASH_BYTES);
    uint32_t index = task->index;
    ms_store_task_destroy(&task);
    json_t *rows = s_task_rows(self, &sweep_id, index, hex);
    char *path = NULL;
    bool named = false;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        ms_hash_t blob;
        const char *b = json_string_value(json_object_get(row, "weights_blob"));
        if (path || !b || ms_hash_from_hex(b, &blob) != MS_OK)
            continue;
        named = true;
        path = self->hooks.blob_path(self->hooks.arg, &blob);
    }
    json_decref(rows);
    if (!path)
        return ms_api_reply_error(
            self, conn, MHD_HTTP_NOT_FOUND, "task %.12s: %s", hex,
            named ? "its kept weights are not held by this node (ask a node "
                    "that trained or copied them)"
                  : "no kept weights (no result names any: the sweep's "
                    "keep_weights is none, or best kept another task's, or "
                    "the task has no ok result yet)");
    uint8_t *bytes = NULL;
    size_t n = 0;
    rc = s_read_weights(path, &bytes, &n);
    free(path);
    if (rc != MS_OK)
        return ms_api_reply_error(self, conn, 500, "task %.12s: weights: %s",
                                  hex, ms_strerror(rc));
    void *model = NULL;
    size_t n_model = 0;
    if (onnx) {
        rc = ms_onnx_encode_weights(bytes, n, &model, &n_model, &diag);
        free(bytes);
        if (rc != MS_OK)
            return ms_api_reply_diag(
                self, conn, rc == MS_ERR_CONFLICT ? MHD_HTTP_CONFLICT : 500,
                &diag, rc);
        bytes = model;
        n = n_model;
    }
    enum MHD_Result r =
        ms_api_reply(self, conn, MHD_HTTP_OK, "application/octet-stream",
                     (const char *) bytes, n);
    free(bytes);
    return r;
}
