/*  =========================================================================
    ms_weights_meta - the metadata of a trained network: its config, the
    input transform, class names and task

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The format is in the header. jansson builds the object and
    ms_wire_canon writes it, so the bytes depend on the values only.
*/
#include "ms_weights_meta.h"
#include "ms_config_json.h"
#include "ms_onnx.h"
#include "ms_param_layout.h"
#include "ms_wire_canon.h"

#include <jansson.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  A new metadata.

ms_weights_meta_t *
ms_weights_meta_new(void)
{
    ms_weights_meta_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    ms_train_config_defaults(&self->cfg);
    self->input.scale = MS_SCALE_NONE;
    self->numerics = -1;
    return self;
}

//  --------------------------------------------------------------------------
//  Free the class names.

static void
s_free_classes(ms_weights_meta_t *self)
{
    for (int32_t i = 0; self->classes && i < self->n_classes; i++)
        free(self->classes[i]);
    free(self->classes);
    self->classes = NULL;
    self->n_classes = 0;
}

//  --------------------------------------------------------------------------
//  Free a metadata.

void
ms_weights_meta_destroy(ms_weights_meta_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_weights_meta_t *self = *self_p;
    s_free_classes(self);
    ms_dataset_transform_clear(&self->input);
    ms_dataset_destroy(&self->csv);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Copy class names in.

int
ms_weights_meta_set_classes(ms_weights_meta_t *self, const char *const *names,
                            int32_t n)
{
    s_free_classes(self);
    if (n <= 0)
        return MS_OK;
    self->classes = calloc((size_t) n, sizeof *self->classes);
    if (!self->classes)
        return MS_ERR_NOMEM;
    self->n_classes = n;
    for (int32_t i = 0; i < n; i++)
        if (!(self->classes[i] = strdup(names[i] ? names[i] : ""))) {
            s_free_classes(self);
            return MS_ERR_NOMEM;
        }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Keep a copy of a CSV dataset's schema.

int
ms_weights_meta_set_csv(ms_weights_meta_t *self, const ms_dataset_t *data)
{
    ms_dataset_destroy(&self->csv);
    ms_dataset_csv_schema_t sc;
    if (!data || ms_dataset_csv_schema(data, &sc) != MS_OK)
        return MS_OK; // not from CSV: nothing to keep
    int rc = ms_dataset_csv_reference_new(&self->csv, &sc, NULL);
    return rc == MS_ERR_NOMEM ? rc : MS_OK; // a loaded schema is valid
}

//  --------------------------------------------------------------------------
//  Names of the missing-value rules, by ms_dataset_missing_t.

static const char *const s_missing_names[] = {"error", "zero", "mean"};

//  --------------------------------------------------------------------------
//  The csv object of a schema; NULL when memory runs out or a name is
//  not UTF-8 (JSON holds only text).

static json_t *
s_csv_json(const ms_dataset_t *csv)
{
    ms_dataset_csv_schema_t sc;
    if (ms_dataset_csv_schema(csv, &sc) != MS_OK)
        return NULL;
    json_t *obj = json_object(), *cols = json_array(), *cats = json_array();
    bool ok = obj && cols && cats;
    for (int32_t j = 0; ok && j < sc.n_columns; j++) {
        ok = json_array_append_new(cols, json_string(sc.column_names[j])) == 0;
        if (!ok || !sc.categorical[j])
            continue;
        json_t *list = json_array();
        for (uint32_t k = 0; list && k < sc.n_categories[j]; k++)
            if (json_array_append_new(list, json_string(sc.categories[j][k])))
                json_decref(list), list = NULL;
        json_t *entry = list ? json_pack("{s:i, s:o}", "column", (int) j,
                                         "categories", list)
                             : NULL;
        ok = json_array_append_new(cats, entry) == 0;
    }
    if (ok && sc.missing == MS_DATASET_MISSING_MEAN) {
        json_t *fill = json_array();
        for (int32_t f = 0; fill && f < sc.n_features; f++)
            if (json_array_append_new(fill, json_real((double) sc.fill[f])))
                json_decref(fill), fill = NULL;
        ok = fill && json_object_set_new(obj, "fill", fill) == 0;
    }
    if (ok)
        ok = json_object_set_new(obj, "columns", cols) == 0 &&
             json_object_set_new(obj, "categorical", cats) == 0 &&
             json_object_set_new(obj, "label", json_integer(sc.label_column)) ==
                 0 &&
             json_object_set_new(obj, "missing",
                                 json_string(s_missing_names[sc.missing])) == 0;
    else {
        json_decref(cols);
        json_decref(cats);
    }
    if (!ok) {
        json_decref(obj);
        return NULL;
    }
    return obj;
}

//  --------------------------------------------------------------------------
//  The input object.

static json_t *
s_input_json(const ms_dataset_transform_t *t)
{
    json_t *in = json_pack("{s:I, s:s}", "features", (json_int_t) t->n_features,
                           "scale", ms_scale_name(t->scale));
    if (!in || t->scale == MS_SCALE_NONE)
        return in;
    if (t->scale == MS_SCALE_UNIT) {
        json_object_set_new(in, "shift", json_real(t->shift[0]));
        json_object_set_new(in, "divisor", json_real(t->divisor[0]));
        return in;
    }
    json_t *shift = json_array(), *divisor = json_array();
    for (int32_t j = 0; shift && divisor && j < t->n_features; j++) {
        json_array_append_new(shift, json_real(t->shift[j]));
        json_array_append_new(divisor, json_real(t->divisor[j]));
    }
    json_object_set_new(in, "shift", shift);
    json_object_set_new(in, "divisor", divisor);
    return in;
}

//  --------------------------------------------------------------------------
//  Canonical JSON of a metadata.

char *
ms_weights_meta_encode(const ms_weights_meta_t *self)
{
    json_t *obj = json_object();
    json_t *config = ms_config_encode_json(&self->cfg);
    if (!obj || !config) {
        json_decref(obj);
        json_decref(config);
        return NULL;
    }
    json_object_set_new(obj, "meshsweep_weights",
                        json_integer(MS_WEIGHTS_META_FORMAT));
    json_object_set_new(obj, "config", config);
    json_object_set_new(obj, "input", s_input_json(&self->input));
    json_object_set_new(obj, "outputs", json_integer(self->n_outputs));
    if (self->n_classes > 0) {
        json_t *names = json_array();
        for (int32_t i = 0; i < self->n_classes; i++)
            json_array_append_new(names, json_string(self->classes[i]));
        json_object_set_new(obj, "classes", names);
    }
    if (self->task_id[0])
        json_object_set_new(obj, "task", json_string(self->task_id));
    if (self->numerics >= 0)
        json_object_set_new(obj, "numerics",
                            json_integer((json_int_t) self->numerics));
    if (self->csv) {
        json_t *csv = s_csv_json(self->csv);
        if (!csv) {
            json_decref(obj);
            return NULL;
        }
        json_object_set_new(obj, "csv", csv);
    }
    char *text = ms_wire_canon_dump(obj);
    json_decref(obj);
    return text;
}

//  --------------------------------------------------------------------------
//  Read shift or divisor: a number (unit) or an array of n (standard).

static int
s_read_numbers(const json_t *v, const char *key, ms_scale_t scale, int32_t n,
               double *out, ms_diag_t *diag)
{
    if (scale == MS_SCALE_UNIT) {
        if (!json_is_number(v))
            return ms_diag_set(diag, "metadata", "input.%s: not a number", key);
        for (int32_t j = 0; j < n; j++)
            out[j] = json_number_value(v);
        return MS_OK;
    }
    if (!json_is_array(v) || json_array_size(v) != (size_t) n)
        return ms_diag_set(diag, "metadata",
                           "input.%s: not an array of %d numbers", key, n);
    for (int32_t j = 0; j < n; j++) {
        const json_t *e = json_array_get(v, (size_t) j);
        if (!json_is_number(e))
            return ms_diag_set(diag, "metadata", "input.%s[%d]: not a number",
                               key, j);
        out[j] = json_number_value(e);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Decode the input object into self->input.

static int
s_decode_input(ms_weights_meta_t *self, const json_t *in, ms_diag_t *diag)
{
    const json_t *features = json_object_get(in, "features");
    const char *scale = json_string_value(json_object_get(in, "scale"));
    ms_dataset_transform_t *t = &self->input;
    if (!json_is_object(in) || !json_is_integer(features) || !scale)
        return ms_diag_set(diag, "metadata", "input: needs features and scale");
    json_int_t f = json_integer_value(features);
    if (f < 1 || f > 1000000)
        return ms_diag_set(diag, "metadata", "input.features: %lld",
                           (long long) f);
    if (ms_scale_parse(scale, &t->scale) != MS_OK)
        return ms_diag_set(diag, "metadata", "input.scale: unknown '%s'",
                           scale);
    t->n_features = (int32_t) f;
    if (t->scale == MS_SCALE_NONE)
        return MS_OK;
    t->shift = malloc((size_t) f * sizeof(double));
    t->divisor = malloc((size_t) f * sizeof(double));
    if (!t->shift || !t->divisor)
        return MS_ERR_NOMEM;
    int rc = s_read_numbers(json_object_get(in, "shift"), "shift", t->scale,
                            t->n_features, t->shift, diag);
    if (rc == MS_OK)
        rc = s_read_numbers(json_object_get(in, "divisor"), "divisor", t->scale,
                            t->n_features, t->divisor, diag);
    for (int32_t j = 0; rc == MS_OK && j < t->n_features; j++)
        if (!isfinite(t->shift[j]) || !isfinite(t->divisor[j]) ||
            t->divisor[j] == 0)
            rc = ms_diag_set(diag, "metadata",
                             "input: feature %d: divisor 0 or not finite", j);
    return rc;
}

//  --------------------------------------------------------------------------
//  Temporary arrays of a schema being decoded (names borrowed from the
//  JSON).

typedef struct {
    const char **names;       // per column
    bool *categorical;        // per column
    uint32_t *n_categories;   // per column
    const char ***categories; // per column, or NULL
    float *fill;              // features, or NULL
} s_csv_arrays_t;

//  --------------------------------------------------------------------------
//  Free them.

static void
s_csv_arrays_free(s_csv_arrays_t *a, size_t n)
{
    for (size_t j = 0; a->categories && j < n; j++)
        free(a->categories[j]);
    free(a->categories);
    free(a->names);
    free(a->categorical);
    free(a->n_categories);
    free(a->fill);
}

//  --------------------------------------------------------------------------
//  Read the categorical list into a (columns n). Returns MS_OK or
//  MS_ERR_INVALID (diag) or MS_ERR_NOMEM.

static int
s_decode_categorical(const json_t *cats, size_t n, s_csv_arrays_t *a,
                     ms_diag_t *diag)
{
    if (!json_is_array(cats))
        return ms_diag_set(diag, "metadata", "csv.categorical: not a list");
    for (size_t i = 0; i < json_array_size(cats); i++) {
        const json_t *entry = json_array_get(cats, i);
        const json_t *col = json_object_get(entry, "column");
        const json_t *list = json_object_get(entry, "categories");
        json_int_t j = json_integer_value(col);
        if (!json_is_integer(col) || j < 0 || (size_t) j >= n ||
            a->categorical[j] || !json_is_array(list) ||
            json_array_size(list) > MS_DATASET_MAX_CATEGORIES)
            return ms_diag_set(diag, "metadata",
                               "csv.categorical[%zu]: needs a column index "
                               "(once) and its categories",
                               i);
        size_t k = json_array_size(list);
        a->categorical[j] = true;
        a->n_categories[j] = (uint32_t) k;
        a->categories[j] = calloc(k ? k : 1, sizeof(char *));
        if (!a->categories[j])
            return MS_ERR_NOMEM;
        for (size_t c = 0; c < k; c++)
            if (!(a->categories[j][c] =
                      json_string_value(json_array_get(list, c))))
                return ms_diag_set(diag, "metadata",
                                   "csv.categorical[%zu].categories[%zu]: "
                                   "not a string",
                                   i, c);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Decode the csv object into self->csv (after input, outputs and
//  classes).

static int
s_decode_csv(ms_weights_meta_t *self, const json_t *csv, ms_diag_t *diag)
{
    const json_t *cols = json_object_get(csv, "columns");
    const json_t *label = json_object_get(csv, "label");
    const char *missing = json_string_value(json_object_get(csv, "missing"));
    if (!json_is_object(csv) || !json_is_array(cols) ||
        !json_is_integer(label) || !missing)
        return ms_diag_set(diag, "metadata",
                           "csv: needs columns, label and missing");
    size_t n = json_array_size(cols);
    if (n < 2 || n > MS_DATASET_MAX_FEATURES)
        return ms_diag_set(diag, "metadata", "csv.columns: %zu columns", n);
    ms_dataset_csv_schema_t sc;
    memset(&sc, 0, sizeof sc);
    sc.missing = (ms_dataset_missing_t) -1;
    for (int m = 0; m < 3; m++)
        if (strcmp(missing, s_missing_names[m]) == 0)
            sc.missing = (ms_dataset_missing_t) m;
    if ((int) sc.missing < 0)
        return ms_diag_set(diag, "metadata", "csv.missing: unknown '%s'",
                           missing);
    s_csv_arrays_t a = {
        .names = calloc(n, sizeof(char *)),
        .categorical = calloc(n, sizeof(bool)),
        .n_categories = calloc(n, sizeof(uint32_t)),
        .categories = calloc(n, sizeof(char **)),
    };
    int rc = a.names && a.categorical && a.n_categories && a.categories
                 ? MS_OK
                 : MS_ERR_NOMEM;
    for (size_t j = 0; rc == MS_OK && j < n; j++)
        if (!(a.names[j] = json_string_value(json_array_get(cols, j))))
            rc = ms_diag_set(diag, "metadata", "csv.columns[%zu]: not a string",
                             j);
    if (rc == MS_OK)
        rc = s_decode_categorical(json_object_get(csv, "categorical"), n, &a,
                                  diag);
    const json_t *fill = json_object_get(csv, "fill");
    int32_t nf = self->input.n_features;
    if (rc == MS_OK && sc.missing == MS_DATASET_MISSING_MEAN) {
        if (!json_is_array(fill) || json_array_size(fill) != (size_t) nf)
            rc = ms_diag_set(diag, "metadata",
                             "csv.fill: not an array of %d numbers", nf);
        else if (!(a.fill = malloc((size_t) nf * sizeof *a.fill)))
            rc = MS_ERR_NOMEM;
        for (int32_t f = 0; rc == MS_OK && f < nf; f++) {
            const json_t *v = json_array_get(fill, (size_t) f);
            if (!json_is_number(v))
                rc = ms_diag_set(diag, "metadata", "csv.fill[%d]: not a number",
                                 f);
            else
                a.fill[f] = (float) json_number_value(v);
        }
    }
    if (rc == MS_OK) {
        sc.n_columns = (int32_t) n;
        sc.column_names = a.names;
        sc.label_column = (int32_t) json_integer_value(label);
        if (json_integer_value(label) < 0 ||
            (size_t) json_integer_value(label) >= n)
            sc.label_column = -1; // refused below
        sc.n_classes = self->n_classes > 0 ? self->n_classes
                       : self->cfg.loss == MS_LOSS_CROSS_ENTROPY
                           ? self->n_outputs
                           : 0;
        sc.class_names =
            self->n_classes > 0 ? (const char *const *) self->classes : NULL;
        sc.categorical = a.categorical;
        sc.n_categories = a.n_categories;
        sc.categories = (const char *const *const *) a.categories;
        sc.n_features = nf;
        sc.fill = a.fill;
        ms_diag_t sub;
        ms_diag_clear(&sub);
        rc = ms_dataset_csv_reference_new(&self->csv, &sc, &sub);
        if (rc == MS_ERR_INVALID)
            ms_diag_set(diag, "metadata", "csv: %s: %s", sub.where, sub.reason);
    }
    s_csv_arrays_free(&a, n);
    return rc;
}

//  --------------------------------------------------------------------------
//  Decode the rest of the object into self.

static int
s_decode(ms_weights_meta_t *self, const json_t *obj, ms_diag_t *diag)
{
    if (!json_is_object(obj) ||
        json_integer_value(json_object_get(obj, "meshsweep_weights")) !=
            MS_WEIGHTS_META_FORMAT)
        return ms_diag_set(diag, "metadata",
                           "not meshsweep's (no \"meshsweep_weights\": 1)");
    ms_diag_t sub;
    ms_diag_clear(&sub);
    if (ms_config_decode_json(json_object_get(obj, "config"), &self->cfg,
                              &sub) != MS_OK)
        return ms_diag_set(diag, "metadata", "config.%s: %s", sub.where,
                           sub.reason);
    int rc = s_decode_input(self, json_object_get(obj, "input"), diag);
    if (rc != MS_OK)
        return rc;
    const json_t *outputs = json_object_get(obj, "outputs");
    if (!json_is_integer(outputs) || json_integer_value(outputs) < 1 ||
        json_integer_value(outputs) > 1000000)
        return ms_diag_set(diag, "metadata", "outputs: not a count");
    self->n_outputs = (int32_t) json_integer_value(outputs);
    const json_t *classes = json_object_get(obj, "classes");
    if (classes) {
        if (!json_is_array(classes) ||
            json_array_size(classes) != (size_t) self->n_outputs)
            return ms_diag_set(diag, "metadata",
                               "classes: not an array of %d names",
                               self->n_outputs);
        self->classes = calloc(json_array_size(classes), sizeof(char *));
        if (!self->classes)
            return MS_ERR_NOMEM;
        for (size_t i = 0; i < json_array_size(classes); i++) {
            const char *name = json_string_value(json_array_get(classes, i));
            if (!name)
                return ms_diag_set(diag, "metadata",
                                   "classes[%zu]: not a string", i);
            if (!(self->classes[i] = strdup(name)))
                return MS_ERR_NOMEM;
            self->n_classes = (int32_t) i + 1;
        }
    }
    const char *task = json_string_value(json_object_get(obj, "task"));
    if (task && strlen(task) == 64)
        memcpy(self->task_id, task, 65);
    const json_t *numerics = json_object_get(obj, "numerics");
    if (json_is_integer(numerics))
        self->numerics = json_integer_value(numerics);
    const json_t *csv = json_object_get(obj, "csv");
    if (csv)
        return s_decode_csv(self, csv, diag);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Parse metadata JSON text.

int
ms_weights_meta_decode(const char *json, ms_weights_meta_t **out,
                       ms_diag_t *diag)
{
    *out = NULL;
    json_error_t err;
    json_t *obj = json_loads(json, 0, &err);
    if (!obj)
        return ms_diag_set(diag, "metadata", "not JSON: %s (line %d)", err.text,
                           err.line);
    ms_weights_meta_t *self = ms_weights_meta_new();
    int rc = self ? s_decode(self, obj, diag) : MS_ERR_NOMEM;
    json_decref(obj);
    if (rc != MS_OK) {
        ms_weights_meta_destroy(&self);
        return rc;
    }
    *out = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Layer sizes of the described network.

int32_t
ms_weights_meta_layer_sizes(const ms_weights_meta_t *self, uint32_t *sizes,
                            int32_t max)
{
    int32_t n = self->cfg.n_hidden + 2;
    if (n > max)
        return 0;
    sizes[0] = (uint32_t) self->input.n_features;
    for (int32_t i = 0; i < self->cfg.n_hidden; i++)
        sizes[i + 1] = (uint32_t) self->cfg.hidden_sizes[i];
    sizes[n - 1] = (uint32_t) self->n_outputs;
    return n;
}

//  --------------------------------------------------------------------------
//  Sizes as "784-64-10" (abridged past 8 entries).

static void
s_sizes_text(const uint32_t *sizes, int32_t n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (int32_t i = 0; i < n && used + 16 < cap; i++) {
        if (n > 8 && i == 4) {
            used += (size_t) snprintf(out + used, cap - used, "-...");
            i = n - 3;
        }
        used += (size_t) snprintf(out + used, cap - used, "%s%u", i ? "-" : "",
                                  sizes[i]);
    }
}

//  --------------------------------------------------------------------------
//  Check weights against the described network.

int
ms_weights_meta_match(const ms_weights_meta_t *self, const ms_weights_t *w,
                      ms_diag_t *diag)
{
    int32_t n = self->cfg.n_hidden + 2;
    uint32_t *sizes = malloc((size_t) n * sizeof *sizes);
    if (!sizes)
        return MS_ERR_NOMEM;
    ms_weights_meta_layer_sizes(self, sizes, n);
    int rc = MS_OK;
    if ((uint32_t) n != w->n_sizes ||
        memcmp(sizes, w->sizes, (size_t) n * sizeof *sizes) != 0) {
        char have[160], want[160];
        s_sizes_text(w->sizes, (int32_t) w->n_sizes, have, sizeof have);
        s_sizes_text(sizes, n, want, sizeof want);
        rc = ms_diag_set(diag, "weights",
                         "layer sizes %s, the metadata's config says %s", have,
                         want);
    } else {
        int64_t need = ms_param_layout_n_params(&self->cfg, sizes, n);
        if (need != w->n_params)
            rc = ms_diag_set(diag, "weights",
                             "%lld parameters, the network of the metadata "
                             "needs %lld",
                             (long long) w->n_params, (long long) need);
    }
    free(sizes);
    return rc;
}

//  --------------------------------------------------------------------------
//  Read a whole file (at most 4 GiB).

static int
s_slurp(const char *path, uint8_t **bytes, size_t *n, ms_diag_t *diag)
{
    *bytes = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ms_diag_set_code(diag,
                                errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO,
                                path, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, used = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        if (used == cap) {
            if (cap >= ((size_t) 4 << 30))
                break;
            uint8_t *more = realloc(buf, cap * 2);
            if (!more) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = more;
            cap *= 2;
        }
        size_t got = fread(buf + used, 1, cap - used, f);
        used += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f) != 0;
    fclose(f);
    if (!buf)
        return MS_ERR_NOMEM;
    if (bad) {
        free(buf);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "read failed");
    }
    *bytes = buf;
    *n = used;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read a network file of either format.

int
ms_weights_meta_read_file(const char *path, ms_weights_meta_t **meta,
                          ms_weights_t **weights, ms_diag_t *diag)
{
    *meta = NULL;
    *weights = NULL;
    uint8_t *bytes = NULL;
    size_t n = 0;
    int rc = s_slurp(path, &bytes, &n, diag);
    if (rc != MS_OK)
        return rc;
    ms_diag_t sub;
    ms_diag_clear(&sub);
    size_t magic = strlen(MS_WEIGHTS_MAGIC);
    if (n >= magic && memcmp(bytes, MS_WEIGHTS_MAGIC, magic) == 0) {
        rc = ms_weights_decode(bytes, n, weights, &sub);
        if (rc == MS_OK && !(*weights)->meta_json)
            rc = ms_diag_set(&sub, "weights",
                             "no metadata: a version 1 file (written before "
                             "version 2) does not say its config and input "
                             "scaling");
        if (rc == MS_OK)
            rc = ms_weights_meta_decode((*weights)->meta_json, meta, &sub);
    } else
        rc = ms_onnx_decode(bytes, n, meta, weights, &sub);
    if (rc == MS_OK)
        rc = ms_weights_meta_match(*meta, *weights, &sub);
    free(bytes);
    if (rc != MS_OK) {
        ms_weights_destroy(weights);
        ms_weights_meta_destroy(meta);
        if (rc == MS_ERR_NOMEM)
            return rc;
        return ms_diag_set_code(diag, rc, path, "%s%s%s", sub.where,
                                sub.where[0] ? ": " : "", sub.reason);
    }
    return MS_OK;
}
