/*  =========================================================================
    ms_keep - the weights of our own training results: keep_weights and
    weights_out_dir

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Verification" (keep_weights), docs/VERIFICATION.md
    "keep_weights". Per sweep the class reads keep_weights and the metric
    (name, goal) from the stored spec once, and for keep_weights best it
    remembers the best value kept so far and its blob, whose pin a better
    result replaces. The pins themselves (and their release by retention
    or once re-evaluated) are ms_reeval's: sampled weights are kept until
    checked, best and all for ever. Sweeps are never forgotten here, as
    the node never forgot its per-sweep records: a node sees few sweeps.
*/
#include "ms_keep.h"

#include "ms_onnx.h"
#include "ms_spec.h"
#include "ms_weights.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define S_WEIGHTS_MAX_BYTES ((size_t) 1 << 31) // a weights file we keep

//  What the class knows of one sweep.
typedef struct {
    ms_hash_t sweep_id;  // the sweep
    int keep;            // ms_keep_weights_t of its spec
    char metric[32];     // the spec's metric name (keep_weights best)
    bool maximize;       // its goal
    bool has_best;       // best_* hold this node's best kept result
    double best_value;   // its metric
    ms_hash_t best_blob; // its weights (pinned)
} s_sweep_t;

struct ms_keep {
    ms_store_t *store;      // the sweeps' specs (borrowed)
    ms_blob_store_t *blobs; // where kept weights go (borrowed)
    ms_reeval_t *reeval;    // their pins (borrowed)
    ms_keep_iface_t iface;  // the node
    s_sweep_t *sweeps;      // sweeps asked about so far
    size_t n_sweeps;        // entries in sweeps
};

//  --------------------------------------------------------------------------
//  Log a line through the node.

static void s_log(ms_keep_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(ms_keep_t *self, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    self->iface.log(self->iface.arg, line);
}

//  --------------------------------------------------------------------------
//  Create it.

ms_keep_t *
ms_keep_new(ms_store_t *store, ms_blob_store_t *blobs, ms_reeval_t *reeval,
            const ms_keep_iface_t *iface)
{
    assert(store && blobs && reeval && iface);
    ms_keep_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->blobs = blobs;
    self->reeval = reeval;
    self->iface = *iface;
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_keep_destroy(ms_keep_t **self_p)
{
    assert(self_p);
    ms_keep_t *self = *self_p;
    if (!self)
        return;
    free(self->sweeps);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The sweep's entry, its keep_weights (and metric) read from its spec
//  when it is new; NULL when memory runs out.

static s_sweep_t *
s_sweep(ms_keep_t *self, const ms_hash_t *sweep_id)
{
    bool added;
    s_sweep_t *info =
        ms_hash_entry(&self->sweeps, &self->n_sweeps, sizeof(s_sweep_t),
                      offsetof(s_sweep_t, sweep_id), sweep_id, &added);
    if (!info || !added)
        return info;
    info->keep = MS_KEEP_WEIGHTS_SAMPLED;
    snprintf(info->metric, sizeof info->metric, "val_accuracy");
    info->maximize = true;
    ms_store_sweep_t *sw = NULL;
    if (ms_store_get_sweep(self->store, sweep_id->bytes, &sw) != MS_OK)
        return info;
    json_error_t err;
    json_t *spec = json_loadb(sw->spec_json, sw->spec_len, 0, &err);
    const char *keep = json_string_value(json_object_get(spec, "keep_weights"));
    for (int k = MS_KEEP_WEIGHTS_NONE; keep && k <= MS_KEEP_WEIGHTS_ALL; k++)
        if (strcmp(keep, ms_keep_weights_name((ms_keep_weights_t) k)) == 0)
            info->keep = k;
    json_t *metric = json_object_get(spec, "metric");
    const char *name = json_string_value(json_object_get(metric, "name"));
    const char *goal = json_string_value(json_object_get(metric, "goal"));
    if (name)
        snprintf(info->metric, sizeof info->metric, "%s", name);
    if (goal)
        info->maximize = strcmp(goal, "minimize") != 0;
    json_decref(spec);
    ms_store_sweep_destroy(&sw);
    return info;
}

//  --------------------------------------------------------------------------
//  The sweep's keep_weights.

int
ms_keep_policy(ms_keep_t *self, const ms_hash_t *sweep_id)
{
    assert(self && sweep_id);
    s_sweep_t *info = s_sweep(self, sweep_id);
    return info ? info->keep : MS_KEEP_WEIGHTS_SAMPLED;
}

//  --------------------------------------------------------------------------
//  Read a whole small file (the worker's weights). Caller frees *out.

static int
s_read_weights_file(const char *path, uint8_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "rbe");
    if (!f)
        return MS_ERR_NOTFOUND;
    struct stat st;
    int rc = MS_OK;
    if (fstat(fileno(f), &st) != 0 || st.st_size <= 0 ||
        (uint64_t) st.st_size > S_WEIGHTS_MAX_BYTES)
        rc = MS_ERR_RANGE;
    uint8_t *buf = rc == MS_OK ? malloc((size_t) st.st_size) : NULL;
    if (rc == MS_OK && !buf)
        rc = MS_ERR_NOMEM;
    if (rc == MS_OK &&
        fread(buf, 1, (size_t) st.st_size, f) != (size_t) st.st_size)
        rc = MS_ERR_IO;
    fclose(f);
    if (rc != MS_OK) {
        free(buf);
        return rc;
    }
    *out = buf;
    *n = (size_t) st.st_size;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Our training result: keep its weights as the sweep's keep_weights
//  says, and name them in the row.

bool
ms_keep_result(ms_keep_t *self, const ms_hash_t *task_id,
               const ms_hash_t *sweep_id, const char *weights_path, json_t *row)
{
    assert(self && task_id && sweep_id && weights_path && row);
    char thex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(task_id, thex);
    const char *st = json_string_value(json_object_get(row, "status"));
    s_sweep_t *info = s_sweep(self, sweep_id);
    int keep = info ? info->keep : MS_KEEP_WEIGHTS_SAMPLED;
    bool want = st && strcmp(st, "ok") == 0 && keep != MS_KEEP_WEIGHTS_NONE;
    double value = NAN;
    if (want && keep == MS_KEEP_WEIGHTS_BEST) {
        ms_spec_metric_t m = {info->metric, info->maximize};
        value = ms_spec_metric_value(&m, row);
        want = ms_spec_metric_improves(&m, value, info->has_best,
                                       info->best_value);
    }
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = want ? s_read_weights_file(weights_path, &bytes, &n) : MS_OK;
    unlink(weights_path);
    if (!want)
        return false;
    ms_hash_t blob;
    if (rc == MS_OK)
        rc = ms_blob_store_put(self->blobs, bytes, n, &blob);
    free(bytes);
    if (rc != MS_OK) {
        s_log(self, "task %.12s: weights not kept: %s", thex, ms_strerror(rc));
        return false;
    }
    if (keep == MS_KEEP_WEIGHTS_BEST) {
        if (info->has_best)
            ms_reeval_unkeep(self->reeval, &info->best_blob);
        info->has_best = true;
        info->best_value = value;
        info->best_blob = blob;
    }
    ms_reeval_keep(self->reeval, &blob, task_id,
                   keep == MS_KEEP_WEIGHTS_SAMPLED,
                   keep != MS_KEEP_WEIGHTS_SAMPLED, NULL);
    char bhex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&blob, bhex);
    json_object_set_new(row, "weights_blob", json_string(bhex));
    json_object_set_new(row, "weights_bytes", json_integer((json_int_t) n));
    return true;
}

//  --------------------------------------------------------------------------
//  Copy an ok result's weights to OUT_DIR as NAME.weights and NAME.onnx.

int
ms_keep_export(const char *weights_path, const json_t *row, bool remove,
               const char *out_dir, const char *name, ms_diag_t *diag)
{
    assert(weights_path && row && out_dir && name && diag);
    const char *st = json_string_value(json_object_get(row, "status"));
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = st && strcmp(st, "ok") == 0
                 ? s_read_weights_file(weights_path, &bytes, &n)
                 : MS_ERR_NOTFOUND;
    if (remove)
        unlink(weights_path);
    if (rc != MS_OK)
        return MS_OK; // nothing to export
    void *model = NULL;
    size_t n_model = 0;
    char out[PATH_MAX + 100];
    snprintf(out, sizeof out, "%s/%s.weights", out_dir, name);
    rc = ms_weights_write_bytes(out, bytes, n, diag);
    if (rc == MS_OK)
        rc = ms_onnx_encode_weights(bytes, n, &model, &n_model, diag);
    snprintf(out, sizeof out, "%s/%s.onnx", out_dir, name);
    if (rc == MS_OK)
        rc = ms_weights_write_bytes(out, model, n_model, diag);
    free(model);
    free(bytes);
    return rc;
}

//  --------------------------------------------------------------------------
//  The worker's weights file of a task.

void
ms_keep_weights_path(const char *weights_dir, const ms_hash_t *task_id,
                     char *path, size_t n)
{
    assert(weights_dir && task_id && path);
    char thex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(task_id, thex);
    snprintf(path, n, "%s/%s.weights", weights_dir, thex);
}

//  --------------------------------------------------------------------------
//  Our training result's weights: exported, then kept (or removed).

int
ms_keep_own(ms_keep_t *self, const char *weights_dir, const char *out_dir,
            const ms_hash_t *task_id, const ms_hash_t *sweep_id, json_t *row,
            bool *kept, ms_diag_t *diag)
{
    assert(weights_dir && task_id && sweep_id && row && diag);
    char thex[MS_HASH_HEX_LEN + 1], path[PATH_MAX + 100];
    ms_hash_hex(task_id, thex);
    ms_keep_weights_path(weights_dir, task_id, path, sizeof path);
    ms_diag_clear(diag);
    int rc =
        out_dir ? ms_keep_export(path, row, !self, out_dir, thex, diag) : MS_OK;
    bool k = self && ms_keep_result(self, task_id, sweep_id, path, row);
    if (kept)
        *kept = k;
    return rc;
}
