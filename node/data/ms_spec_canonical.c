/*  =========================================================================
    ms_spec_canonical - the canonical expanded spec, the ids, and a spec
    rebuilt from its canonical text (part of ms_spec; ms_spec_internal.h)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Canonical form and ids. Each task config is ms_config_encode_json,
    written with ms_wire_canon_dump. The expanded spec is the canonical
    object described in ms_spec.h; we write it in pieces (the part before
    "tasks", the task list, then "verify") so that a million-task sweep
    never builds a million-object JSON tree; the pieces are exactly the
    canonical dump of the whole object, because "tasks" sorts between
    "sweep_seed" and "verify". sweep_id hashes those bytes; task_id
    hashes sweep_id's 32 bytes followed by the task's config bytes.

*/
#include "ms_spec_internal.h"

#include "ms_wire_canon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  ==========================================================================
//  Canonical form and ids

//  --------------------------------------------------------------------------
//  The canonical JSON of the dataset.

static json_t *
s_dataset_json(const ms_spec_t *self)
{
    if (self->dataset_name)
        return json_pack("{s:s}", "name", self->dataset_name);
    char train[MS_HASH_HEX_LEN + 1], test[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&self->dataset.train_hash, train);
    ms_hash_hex(&self->dataset.test_hash, test);
    json_t *obj = json_pack("{s:s, s:s, s:s}", "label", self->label, "test",
                            test, "train", train);
    //  The CSV options, each only away from its default so sweeps made
    //  before them keep their ids.
    if (obj && ms_spec_dataset_options_json(self, false, obj) != MS_OK)
        json_decref(obj), obj = NULL;
    return obj;
}

//  --------------------------------------------------------------------------
//  Set the CSV options of a file dataset on obj.

int
ms_spec_dataset_options_json(const ms_spec_t *self, bool with_seed, json_t *obj)
{
    if (self->dataset_name)
        return MS_OK;
    int rc = 0;
    if (self->label_index >= 0)
        rc |=
            json_object_set_new(obj, "label", json_integer(self->label_index));
    else
        rc |= json_object_set_new(
            obj, "label", json_string(self->label ? self->label : "label"));
    static const char *s_missing[] = {"error", "zero", "mean"};
    if (self->missing != MS_DATASET_MISSING_ERROR)
        rc |= json_object_set_new(obj, "missing",
                                  json_string(s_missing[self->missing]));
    if (self->n_categorical) {
        json_t *list = json_array();
        for (size_t i = 0; list && i < self->n_categorical; i++)
            rc |=
                json_array_append_new(list, json_string(self->categorical[i]));
        rc |= json_object_set_new(obj, "categorical", list);
    }
    if (self->split > 0)
        rc |= json_object_set_new(obj, "split", json_real(self->split));
    if (self->split > 0 && with_seed)
        rc |= json_object_set_new(obj, "split_seed",
                                  json_integer(self->sweep_seed));
    return rc ? MS_ERR_NOMEM : MS_OK;
}

//  --------------------------------------------------------------------------
//  The CSV options of a file dataset.

void
ms_spec_dataset_csv_options(const ms_spec_t *self,
                            ms_dataset_csv_options_t *out)
{
    ms_dataset_csv_options_init(out);
    if (self->dataset_name)
        return;
    out->label = self->label_index >= 0 ? NULL : self->label;
    out->label_index = self->label_index;
    out->missing = self->missing;
    out->categorical = (const char *const *) self->categorical;
    out->n_categorical = (int32_t) self->n_categorical;
    out->split = self->split;
    out->split_seed = (uint64_t) self->sweep_seed;
}

//  --------------------------------------------------------------------------
//  Read the CSV options of a dataset object (canonical or a worker's).

int
ms_spec_dataset_options_from_json(const json_t *obj,
                                  ms_dataset_csv_options_t *out,
                                  ms_diag_t *diag)
{
    ms_dataset_csv_options_init(out);
    const json_t *label = json_object_get(obj, "label");
    if (json_is_integer(label)) {
        json_int_t i = json_integer_value(label);
        if (i < 0 || i >= MS_DATASET_MAX_FEATURES)
            return ms_diag_set(diag, "dataset.label", "bad column index");
        out->label_index = (int32_t) i;
    } else if (json_is_string(label))
        out->label = json_string_value(label);
    else if (label)
        return ms_diag_set(diag, "dataset.label", "must be a name or index");
    const char *missing = json_string_value(json_object_get(obj, "missing"));
    if (json_object_get(obj, "missing")) {
        if (missing && strcmp(missing, "error") == 0)
            out->missing = MS_DATASET_MISSING_ERROR;
        else if (missing && strcmp(missing, "zero") == 0)
            out->missing = MS_DATASET_MISSING_ZERO;
        else if (missing && strcmp(missing, "mean") == 0)
            out->missing = MS_DATASET_MISSING_MEAN;
        else
            return ms_diag_set(diag, "dataset.missing",
                               "must be error, zero or mean");
    }
    const json_t *split = json_object_get(obj, "split");
    if (split) {
        double f = json_number_value(split);
        if (!json_is_number(split) || !(f > 0 && f < 1))
            return ms_diag_set(diag, "dataset.split",
                               "must be a fraction between 0 and 1");
        out->split = f;
    }
    const json_t *seed = json_object_get(obj, "split_seed");
    if (seed) {
        if (!json_is_integer(seed))
            return ms_diag_set(diag, "dataset.split_seed",
                               "must be an integer");
        out->split_seed = (uint64_t) json_integer_value(seed);
    }
    const json_t *cats = json_object_get(obj, "categorical");
    if (cats) {
        size_t n = json_array_size(cats);
        if (!json_is_array(cats) || n > MS_DATASET_MAX_FEATURES)
            return ms_diag_set(diag, "dataset.categorical",
                               "must be a list of column names");
        const char **names = calloc(n ? n : 1, sizeof *names);
        if (!names)
            return MS_ERR_NOMEM;
        for (size_t i = 0; i < n; i++)
            if (!(names[i] = json_string_value(json_array_get(cats, i)))) {
                free(names);
                return ms_diag_set(diag, "dataset.categorical",
                                   "must be a list of column names");
            }
        out->categorical = names;
        out->n_categorical = (int32_t) n;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Build the canonical expanded spec and every id.

int
ms_spec_compute_ids(ms_spec_t *self)
{
    json_t *head =
        json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:I, s:I}", "keep_weights",
                  ms_keep_weights_name(self->keep_weights), "method",
                  ms_spec_method_name(self->method), "metric", "goal",
                  self->metric.maximize ? "maximize" : "minimize", "name",
                  self->metric.name, "name", self->name, "run_cap",
                  (json_int_t) self->run_cap, "sweep_seed",
                  (json_int_t) self->sweep_seed);
    //  A program sweep may have no dataset, and has its program.
    bool dataset = self->dataset_name || self->train_path ||
                   self->dataset.hashed || !self->is_program;
    if (head && dataset &&
        json_object_set_new(head, "dataset", s_dataset_json(self)) != 0)
        json_decref(head), head = NULL;
    if (head && self->is_program && ms_spec_program_canonical(self, head))
        json_decref(head), head = NULL;
    json_t *verify = json_pack("{s:f, s:f, s:i}", "accuracy_tolerance",
                               self->verify.accuracy_tolerance,
                               "loss_tolerance", self->verify.loss_tolerance,
                               "replicas", (int) self->verify.replicas);
    char *head_text = head ? ms_wire_canon_dump(head) : NULL;
    char *verify_text = verify ? ms_wire_canon_dump(verify) : NULL;
    json_decref(head);
    json_decref(verify);
    int rc = MS_OK;
    char *text = NULL;
    if (!head_text || !verify_text) {
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    //  head_text is {...}: drop its '}' and splice the tasks and verify
    //  in, which is the canonical dump of the whole object (see above).
    size_t head_len = strlen(head_text) - 1;
    size_t total = head_len + strlen(",\"tasks\":[") + 1 /* ] */
                   + strlen(",\"verify\":") + strlen(verify_text) + 1 /* } */;
    for (size_t i = 0; i < self->n_tasks; i++)
        total += self->task_json_len[i] + 1;
    text = malloc(total + 1);
    if (!text) {
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    size_t at = 0;
    memcpy(text, head_text, head_len);
    at = head_len;
    at += (size_t) sprintf(text + at, ",\"tasks\":[");
    for (size_t i = 0; i < self->n_tasks; i++) {
        if (i)
            text[at++] = ',';
        memcpy(text + at, self->task_json[i], self->task_json_len[i]);
        at += self->task_json_len[i];
    }
    at += (size_t) sprintf(text + at, "],\"verify\":%s}", verify_text);
    ms_hash_bytes(text, at, &self->sweep_id);
    free(self->task_ids);
    self->task_ids =
        calloc(self->n_tasks ? self->n_tasks : 1, sizeof *self->task_ids);
    if (!self->task_ids) {
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    for (size_t i = 0; i < self->n_tasks; i++) {
        ms_hasher_t hasher;
        ms_hasher_init(&hasher);
        ms_hasher_update(&hasher, self->sweep_id.bytes, MS_HASH_BYTES);
        ms_hasher_update(&hasher, self->task_json[i], self->task_json_len[i]);
        ms_hasher_final(&hasher, &self->task_ids[i]);
    }
    free(self->canonical);
    self->canonical = text;
    self->canonical_len = at;
    text = NULL;
    self->ids_ready = true;
cleanup:
    free(text);
    free(head_text);
    free(verify_text);
    return rc;
}

//  --------------------------------------------------------------------------
//  Get a required member of a canonical object, of a given JSON type.

static json_t *
s_member(const json_t *obj, const char *key, json_type type)
{
    json_t *v = json_object_get(obj, key);
    return v && json_typeof(v) == type ? v : NULL;
}

//  --------------------------------------------------------------------------
//  Rebuild a spec from canonical text (no re-expansion).

static int
s_load_canonical(ms_spec_t *self, const char *text, size_t n, ms_diag_t *diag)
{
    json_error_t error;
    json_t *root = json_loadb(text, n, JSON_REJECT_DUPLICATES, &error);
    int rc = MS_OK;
    self->label_index = -1;
    if (!root)
        return ms_diag_set(diag, "", "not JSON: %s (line %d, column %d)",
                           error.text, error.line, error.column);
    static const char *s_keys[] = {"command",    "dataset",   "keep_weights",
                                   "method",     "metric",    "name",
                                   "program",    "resources", "run_cap",
                                   "sweep_seed", "tasks",     "verify"};
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        if (ms_spec_index_of(s_keys, MS_SPEC_COUNT(s_keys), key) < 0) {
            rc = ms_diag_set(diag, key, "unknown key in a canonical spec");
            goto cleanup;
        }
    }
    json_t *name = s_member(root, "name", JSON_STRING);
    json_t *dataset = s_member(root, "dataset", JSON_OBJECT);
    json_t *keep = s_member(root, "keep_weights", JSON_STRING);
    json_t *method = s_member(root, "method", JSON_STRING);
    json_t *metric = s_member(root, "metric", JSON_OBJECT);
    json_t *run_cap = s_member(root, "run_cap", JSON_INTEGER);
    json_t *seed = s_member(root, "sweep_seed", JSON_INTEGER);
    json_t *tasks = s_member(root, "tasks", JSON_ARRAY);
    json_t *verify = s_member(root, "verify", JSON_OBJECT);
    self->is_program = json_object_get(root, "program") != NULL;
    const char *missing = !name                           ? "name"
                          : !dataset && !self->is_program ? "dataset"
                          : !keep                         ? "keep_weights"
                          : !method                       ? "method"
                          : !metric                       ? "metric"
                          : !run_cap                      ? "run_cap"
                          : !seed                         ? "sweep_seed"
                          : !tasks                        ? "tasks"
                          : !verify                       ? "verify"
                                                          : NULL;
    if (missing) {
        rc = ms_diag_set(diag, missing, "missing or of the wrong type");
        goto cleanup;
    }
    int m = ms_spec_index_of(ms_spec_method_names,
                             MS_SPEC_COUNT(ms_spec_method_names),
                             json_string_value(method));
    int k =
        ms_spec_index_of(ms_spec_keep_names, MS_SPEC_COUNT(ms_spec_keep_names),
                         json_string_value(keep));
    const char *metric_name =
        json_string_value(json_object_get(metric, "name"));
    const char *goal = json_string_value(json_object_get(metric, "goal"));
    if (m < 0 || k < 0) {
        rc = ms_diag_set(diag, m < 0 ? "method" : "keep_weights",
                         "unknown value");
        goto cleanup;
    }
    if (!metric_name || !goal || !metric_name[0] ||
        (!self->is_program &&
         ms_spec_index_of(ms_spec_metric_names,
                          MS_SPEC_COUNT(ms_spec_metric_names),
                          metric_name) < 0) ||
        (strcmp(goal, "maximize") && strcmp(goal, "minimize"))) {
        rc = ms_diag_set(diag, "metric", "bad name or goal");
        goto cleanup;
    }
    self->method = (ms_spec_method_t) m;
    self->keep_weights = (ms_keep_weights_t) k;
    self->metric.maximize = strcmp(goal, "maximize") == 0;
    self->run_cap = json_integer_value(run_cap);
    self->sweep_seed = json_integer_value(seed);
    if (!ms_spec_strdup_to(&self->name, json_string_value(name)) ||
        !ms_spec_strdup_to(&self->metric_name, metric_name)) {
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    self->metric.name = self->metric_name;
    json_t *replicas = s_member(verify, "replicas", JSON_INTEGER);
    json_t *acc = s_member(verify, "accuracy_tolerance", JSON_REAL);
    json_t *loss = s_member(verify, "loss_tolerance", JSON_REAL);
    if (!replicas || !acc || !loss) {
        rc = ms_diag_set(diag, "verify", "bad replicas or tolerances");
        goto cleanup;
    }
    self->verify.replicas = (int32_t) json_integer_value(replicas);
    self->verify.accuracy_tolerance = json_real_value(acc);
    self->verify.loss_tolerance = json_real_value(loss);
    //  Dataset: {"name"} or {"label", "test", "train"}.
    json_t *ds_name = dataset ? s_member(dataset, "name", JSON_STRING) : NULL;
    if (!dataset) {
        //  A program sweep without a dataset.
    } else if (ds_name) {
        if (ms_spec_index_of(ms_spec_builtin_datasets,
                             MS_SPEC_COUNT(ms_spec_builtin_datasets),
                             json_string_value(ds_name)) < 0) {
            rc = ms_diag_set(diag, "dataset.name", "unknown dataset '%s'",
                             json_string_value(ds_name));
            goto cleanup;
        }
        if (!ms_spec_strdup_to(&self->dataset_name,
                               json_string_value(ds_name))) {
            rc = MS_ERR_NOMEM;
            goto cleanup;
        }
    } else {
        json_t *label = json_object_get(dataset, "label");
        json_t *train = s_member(dataset, "train", JSON_STRING);
        json_t *test = s_member(dataset, "test", JSON_STRING);
        static const char *s_ds_keys[] = {"categorical", "label", "missing",
                                          "split",       "test",  "train"};
        const char *dkey;
        json_t *dval;
        json_object_foreach(dataset, dkey, dval)
        {
            if (ms_spec_index_of(s_ds_keys, MS_SPEC_COUNT(s_ds_keys), dkey) <
                0) {
                rc = ms_diag_set(diag, "dataset", "unknown key '%.40s'", dkey);
                goto cleanup;
            }
        }
        ms_dataset_csv_options_t o;
        ms_diag_t od;
        if (ms_spec_dataset_options_from_json(dataset, &o, &od) != MS_OK) {
            rc = ms_diag_set(diag, od.where, "%s", od.reason);
            goto cleanup;
        }
        self->label_index = o.label_index;
        self->missing = o.missing;
        self->split = o.split;
        self->n_categorical = (size_t) o.n_categorical;
        self->categorical =
            calloc(self->n_categorical ? self->n_categorical : 1,
                   sizeof *self->categorical);
        for (size_t i = 0; self->categorical && i < self->n_categorical; i++)
            self->categorical[i] = strdup(o.categorical[i]);
        free((void *) o.categorical);
        if (!self->categorical) {
            rc = MS_ERR_NOMEM;
            goto cleanup;
        }
        for (size_t i = 0; i < self->n_categorical; i++)
            if (!self->categorical[i]) {
                rc = MS_ERR_NOMEM;
                goto cleanup;
            }
        if (json_is_integer(label))
            label = json_string("");
        else
            label = json_is_string(label) ? json_incref(label) : NULL;
        if (!label || !train || !test ||
            ms_hash_from_hex(json_string_value(train),
                             &self->dataset.train_hash) ||
            ms_hash_from_hex(json_string_value(test),
                             &self->dataset.test_hash)) {
            json_decref(label);
            rc = ms_diag_set(diag, "dataset",
                             "needs name, or label and train/test hashes");
            goto cleanup;
        }
        bool copied = ms_spec_strdup_to(&self->label, json_string_value(label));
        json_decref(label);
        if (!copied) {
            rc = MS_ERR_NOMEM;
            goto cleanup;
        }
        self->dataset.hashed = true;
    }
    ms_spec_dataset_view(self);
    if (self->is_program && (rc = ms_spec_program_load(self, root, diag)))
        goto cleanup;
    //  Tasks, decoded and re-encoded (a program's: canonical objects).
    size_t n_tasks = json_array_size(tasks);
    if (n_tasks == 0) {
        rc = ms_diag_set(diag, "tasks", "empty task list");
        goto cleanup;
    }
    self->cap_tasks = n_tasks;
    self->task_json = calloc(n_tasks, sizeof *self->task_json);
    self->task_json_len = calloc(n_tasks, sizeof *self->task_json_len);
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    if (!self->task_json || !self->task_json_len || !cfg) {
        free(cfg);
        rc = MS_ERR_NOMEM;
        goto cleanup;
    }
    for (size_t i = 0; i < n_tasks; i++) {
        ms_diag_t local;
        json_t *task = json_array_get(tasks, i);
        if (self->is_program && !json_is_object(task)) {
            rc = ms_diag_set(diag, "tasks", "task %zu is not an object", i);
            break;
        }
        if (self->is_program) {
            self->task_json[i] =
                ms_wire_canon_dump_len(task, &self->task_json_len[i]);
            if (!self->task_json[i]) {
                rc = MS_ERR_NOMEM;
                break;
            }
            self->n_tasks = i + 1;
            continue;
        }
        if (ms_config_decode_json(task, cfg, &local)) {
            char where[MS_SPEC_PATH_MAX];
            ms_spec_pathf(where, "tasks[%zu]%s%s", i, local.where[0] ? "." : "",
                          local.where);
            rc = ms_diag_set(diag, where, "%s", local.reason);
            break;
        }
        json_t *obj = ms_config_encode_json(cfg);
        self->task_json[i] =
            obj ? ms_wire_canon_dump_len(obj, &self->task_json_len[i]) : NULL;
        json_decref(obj);
        if (!self->task_json[i]) {
            rc = MS_ERR_NOMEM;
            break;
        }
        self->n_tasks = i + 1;
    }
    free(cfg);
    if (rc)
        goto cleanup;
    rc = ms_spec_compute_ids(self);
    if (rc)
        goto cleanup;
    if (self->canonical_len != n || memcmp(self->canonical, text, n) != 0) {
        rc = ms_diag_set(diag, "",
                         "the text is not in canonical form (its sweep id "
                         "would not recompute)");
        goto cleanup;
    }
cleanup:
    json_decref(root);
    return rc;
}

//  --------------------------------------------------------------------------
//  The dataset object of a canonical spec, without the task list.

json_t *
ms_spec_canonical_dataset(const char *text, size_t n, ms_diag_t *diag)
{
    static const char head[] = "{\"dataset\":";
    size_t head_len = sizeof head - 1;
    if (!text || n <= head_len || memcmp(text, head, head_len) != 0) {
        ms_diag_set(diag, "", "not a canonical spec (it must start with %s)",
                    head);
        return NULL;
    }
    json_error_t err;
    json_t *dataset =
        json_loadb(text + head_len, n - head_len, JSON_DISABLE_EOF_CHECK, &err);
    if (!json_is_object(dataset)) {
        ms_diag_set(diag, "dataset", "%s",
                    dataset ? "not an object" : err.text);
        json_decref(dataset);
        return NULL;
    }
    return dataset;
}

//  --------------------------------------------------------------------------
//  Load a spec from canonical text.

int
ms_spec_load_canonical(const char *text, size_t n, ms_spec_t **out,
                       ms_diag_t *diag)
{
    *out = NULL;
    ms_diag_clear(diag);
    ms_spec_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    int rc = s_load_canonical(self, text, n, diag);
    if (rc) {
        ms_spec_destroy(&self);
        return rc;
    }
    *out = self;
    return MS_OK;
}
