/*  =========================================================================
    ms_api_sweeps - the sweep routes (list, submit, one sweep, control)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A sweep's JSON (its counts by state, progress, verdict counts) is written
    here once and used by the list and by the single sweep. Submissions go
    to the node through hooks.submit, controls through hooks.control; both
    answer with the node's diagnostic on refusal.
*/
#include "ms_api.h"
#include "ms_api_internal.h"

#include "ms_clock.h"
#include "ms_hash.h"
#include "ms_results.h"

#include <microhttpd.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  The counts object of a stored sweep. In a pool, tasks that peers run
//  now (live leases in this node's view) are pending in the store: the
//  running_elsewhere hook moves them to running, so every node shows the
//  pool-wide state.

static json_t *
s_counts_json(ms_api_t *self, const ms_store_sweep_t *sweep)
{
    uint64_t counts[MS_TASK_N_STATES];
    memcpy(counts, sweep->counts, sizeof counts);
    if (self->hooks.running_elsewhere) {
        int64_t n =
            self->hooks.running_elsewhere(self->hooks.arg, sweep->sweep_id);
        uint64_t moved = n > 0 ? (uint64_t) n : 0;
        if (moved > counts[MS_TASK_PENDING])
            moved = counts[MS_TASK_PENDING];
        counts[MS_TASK_PENDING] -= moved;
        counts[MS_TASK_RUNNING] += moved;
    }
    json_t *obj = json_object();
    for (int s = 0; obj && s < MS_TASK_N_STATES; s++)
        json_object_set_new(obj, ms_task_state_name((ms_task_state_t) s),
                            json_integer((json_int_t) counts[s]));
    return obj;
}

//  --------------------------------------------------------------------------
//  The summary object of a stored sweep (list and detail views).

static json_t *
s_sweep_json(ms_api_t *self, const ms_store_sweep_t *sweep)
{
    ms_hash_t h;
    memcpy(h.bytes, sweep->sweep_id, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    // The stored spec lists every task's config (megabytes for a big
    // sweep): only the few top-level members shown are parsed.
    json_t *spec = json_object();
    static const char *const shown[] = {"name", "method", "dataset", "metric"};
    for (size_t i = 0; spec && i < sizeof shown / sizeof *shown; i++) {
        const char *v;
        size_t n;
        json_error_t err;
        if (ms_results_row_member(sweep->spec_json, sweep->spec_len, shown[i],
                                  &v, &n) == MS_OK)
            json_object_set_new(spec, shown[i],
                                json_loadb(v, n, JSON_DECODE_ANY, &err));
    }
    json_t *obj = json_pack(
        "{s:s, s:O, s:O, s:O, s:s, s:i, s:I, s:o, s:I, s:I}", "sweep_id", hex,
        "name",
        json_object_get(spec, "name") ? json_object_get(spec, "name")
                                      : json_null(),
        "method",
        json_object_get(spec, "method") ? json_object_get(spec, "method")
                                        : json_null(),
        "dataset",
        json_object_get(spec, "dataset") ? json_object_get(spec, "dataset")
                                         : json_null(),
        "state", ms_sweep_state_name(sweep->state), "priority",
        (int) sweep->priority, "n_tasks", (json_int_t) sweep->n_tasks, "counts",
        s_counts_json(self, sweep), "created_at_ms",
        (json_int_t) sweep->created_at_ms, "updated_at_ms",
        (json_int_t) sweep->updated_at_ms);
    if (obj && spec) {
        json_t *metric = json_object_get(spec, "metric");
        if (metric)
            json_object_set(obj, "metric", metric);
    }
    json_decref(spec);
    return obj;
}

//  --------------------------------------------------------------------------
//  Append one sweep to a list.

//  A sweep list being built.
typedef struct {
    ms_api_t *api; // the API
    json_t *list;  // the array
} s_list_t;

static int
s_list_one(void *arg, const ms_store_sweep_t *sweep)
{
    s_list_t *l = arg;
    json_t *obj = s_sweep_json(l->api, sweep);
    if (!obj)
        return MS_ERR_NOMEM;
    json_array_append_new(l->list, obj);
    return 0;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps

enum MHD_Result
ms_api_get_sweeps(ms_api_t *self, struct MHD_Connection *conn)
{
    json_t *list = json_array();
    if (!list)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    s_list_t l = {.api = self, .list = list};
    int rc = ms_store_list_sweeps(self->hooks.store, s_list_one, &l);
    if (rc != MS_OK) {
        json_decref(list);
        return ms_api_reply_error(self, conn, 500, "store: %s",
                                  ms_strerror(rc));
    }
    return ms_api_reply_json(self, conn, MHD_HTTP_OK,
                             json_pack("{s:o}", "sweeps", list));
}

//  --------------------------------------------------------------------------
//  POST /api/v1/sweeps

enum MHD_Result
ms_api_post_sweeps(ms_api_t *self, struct MHD_Connection *conn,
                   ms_api_request_t *req)
{
    if (req->too_large)
        return ms_api_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                                  "body: larger than %u bytes",
                                  MS_API_MAX_BODY);
    if (req->len == 0)
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "body: empty (send the sweep spec as YAML or "
                                  "JSON)");
    // ?priority=N (meshsweep submit --priority): set after the
    // submission, as POST /sweeps/{id}/control would.
    const char *prio_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "priority");
    long priority = 0;
    if (prio_text) {
        char *end = NULL;
        errno = 0;
        priority = strtol(prio_text, &end, 10);
        if (!*prio_text || *end || errno || priority < -1000000 ||
            priority > 1000000)
            return ms_api_reply_error(
                self, conn, MHD_HTTP_BAD_REQUEST,
                "priority: '%.64s' is not a whole number in "
                "-1000000..1000000",
                prio_text);
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char *summary = NULL;
    const char *files =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "files");
    int rc = self->hooks.submit(self->hooks.arg, req->body, req->len, files,
                                &summary, &diag);
    if (rc != MS_OK) // a missing dataset is a bad request here, not a 404
        return ms_api_reply_diag(self, conn,
                                 rc == MS_ERR_NOTFOUND ? MHD_HTTP_BAD_REQUEST
                                                       : ms_api_status_of(rc),
                                 &diag, rc);
    json_error_t err;
    json_t *sum = json_loads(summary, 0, &err);
    free(summary);
    if (!sum)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    unsigned status = json_is_true(json_object_get(sum, "existed"))
                          ? MHD_HTTP_OK
                          : MHD_HTTP_CREATED;
    ms_hash_t id;
    const char *id_hex = json_string_value(json_object_get(sum, "sweep_id"));
    if (prio_text && self->hooks.control && id_hex &&
        ms_hash_from_hex(id_hex, &id) == MS_OK) {
        ms_diag_clear(&diag);
        rc = self->hooks.control(self->hooks.arg, &id, "priority",
                                 (int32_t) priority, &diag);
        if (rc != MS_OK) {
            json_decref(sum);
            return ms_api_reply_diag(self, conn,
                                     rc == MS_ERR_CONFLICT
                                         ? MHD_HTTP_CONFLICT
                                         : ms_api_status_of(rc),
                                     &diag, rc);
        }
        json_object_set_new(sum, "priority", json_integer(priority));
    }
    return ms_api_reply_json(self, conn, status, sum);
}

//  Sum of train_seconds and rows.
typedef struct {
    double seconds; // train_seconds summed
    int64_t n_rows; // rows seen
} s_sum_t;

//  --------------------------------------------------------------------------
//  Add one row to the sums.

static int
s_sum_row(void *arg, const char *json, size_t n)
{
    s_sum_t *sum = arg;
    // One member of each row: scanned for, not parsed (the rows of a
    // big sweep are megabytes).
    const char *v;
    size_t len;
    if (ms_results_row_member(json, n, "train_seconds", &v, &len) == MS_OK &&
        len > 0 && len < 64 && (isdigit((unsigned char) v[0]) || v[0] == '-')) {
        char text[64];
        memcpy(text, v, len);
        text[len] = 0;
        char *end = NULL;
        double x = strtod(text, &end);
        if (end && *end == 0 && isfinite(x))
            sum->seconds += x;
    }
    sum->n_rows++;
    return 0;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps/{id}

enum MHD_Result
ms_api_get_sweep(ms_api_t *self, struct MHD_Connection *conn,
                 const ms_hash_t *id)
{
    ms_store_sweep_t *sweep = NULL;
    int rc = ms_store_get_sweep(self->hooks.store, id->bytes, &sweep);
    if (rc != MS_OK)
        return ms_api_reply_error(self, conn, ms_api_status_of(rc), "sweep: %s",
                                  ms_strerror(rc));
    json_t *obj = s_sweep_json(self, sweep);
    s_sum_t sum = {0};
    ms_store_results_by_sweep(self->hooks.store, id->bytes, 0, 0, s_sum_row,
                              &sum, NULL);
    int64_t now_ms = ms_clock_wall_ms();
    int64_t end_ms =
        sweep->state == MS_SWEEP_ACTIVE ? now_ms : sweep->updated_at_ms;
    double elapsed = (double) (end_ms - sweep->created_at_ms) / 1000.0;
    double finished =
        (double) (sweep->counts[MS_TASK_DONE] + sweep->counts[MS_TASK_FAILED]);
    json_t *tp = json_pack(
        "{s:f, s:f, s:f, s:f}", "elapsed_seconds", elapsed > 0 ? elapsed : 0.0,
        "train_seconds", sum.seconds, "tasks_per_hour",
        elapsed > 0 ? finished * 3600.0 / elapsed : 0.0, "seconds_per_task",
        finished > 0 ? sum.seconds / finished : 0.0);
    if (obj)
        json_object_set_new(obj, "throughput", tp);
    else
        json_decref(tp);
    ms_store_sweep_destroy(&sweep);
    return ms_api_reply_json(self, conn, MHD_HTTP_OK, obj);
}

//  --------------------------------------------------------------------------
//  POST /api/v1/sweeps/{id}/control

enum MHD_Result
ms_api_post_control(ms_api_t *self, struct MHD_Connection *conn,
                    ms_api_request_t *req, const ms_hash_t *id)
{
    if (!self->hooks.control)
        return ms_api_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                                  "control: not served by this node");
    if (req->too_large)
        return ms_api_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                                  "body: larger than %u bytes",
                                  MS_API_MAX_BODY);
    json_error_t jerr;
    json_t *body = req->len ? json_loadb(req->body, req->len, 0, &jerr) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "body: expected a JSON object {\"action\": "
                                  "\"cancel|pause|resume|priority\"}");
    }
    const char *action = json_string_value(json_object_get(body, "action"));
    json_t *pv = json_object_get(body, "priority");
    int32_t priority = 0;
    enum MHD_Result r;
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value)
    {
        if (strcmp(key, "action") != 0 && strcmp(key, "priority") != 0) {
            r = ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                   "%.64s: unknown member of the control body "
                                   "(action, priority)",
                                   key);
            goto done;
        }
    }
    if (pv && action && strcmp(action, "priority") != 0) {
        r = ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                               "priority: only with \"action\": \"priority\"");
        goto done;
    }
    if (!action) {
        r = ms_api_reply_error(
            self, conn, MHD_HTTP_BAD_REQUEST,
            json_object_get(body, "action")
                ? "action: must be a string (cancel, pause, "
                  "resume or priority)"
                : "action: missing (cancel, pause, resume or "
                  "priority)");
        goto done;
    }
    if (strcmp(action, "priority") == 0) {
        if (!json_is_integer(pv) || json_integer_value(pv) < -1000000 ||
            json_integer_value(pv) > 1000000) {
            r = ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                   "priority: expected a whole number in "
                                   "-1000000..1000000");
            goto done;
        }
        priority = (int32_t) json_integer_value(pv);
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = self->hooks.control(self->hooks.arg, id, action, priority, &diag);
    if (rc != MS_OK) {
        r = ms_api_reply_diag(self, conn,
                              rc == MS_ERR_CONFLICT ? MHD_HTTP_CONFLICT
                                                    : ms_api_status_of(rc),
                              &diag, rc);
        goto done;
    }
    ms_store_sweep_t *sweep = NULL;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(id, hex);
    json_t *ans = json_pack("{s:s, s:s}", "sweep_id", hex, "action", action);
    if (ans &&
        ms_store_get_sweep(self->hooks.store, id->bytes, &sweep) == MS_OK) {
        json_object_set_new(ans, "state",
                            json_string(ms_sweep_state_name(sweep->state)));
        json_object_set_new(ans, "priority", json_integer(sweep->priority));
        ms_store_sweep_destroy(&sweep);
    }
    r = ans ? ms_api_reply_json(self, conn, MHD_HTTP_OK, ans)
            : ms_api_reply_error(self, conn, 500, "out of memory");
done:
    json_decref(body);
    return r;
}
