/*  =========================================================================
    ms_submit - a sweep spec becomes records: the submission path

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    What a submission goes through, in order (ms_submit_spec): the parse
    and expansion (done by the HTTP thread for the API, handed in parsed);
    the pool's task limit; the dataset: a built-in one's files are sized
    (and hashed for its record), uploaded files are looked up as blobs and
    loaded once, a local runner's files are bound to absolute paths and
    loaded once (both with the workers' loader, so a bad file is refused
    here, with its diag, and nothing is stored); the pool's byte limit;
    the dataset file (paths first: a stored sweep must always find its
    files); the records; the reopen of a cancelled sweep given again; the
    pins of the uploaded blobs; the summary.

    Local datasets. A canonical spec names file datasets by their hashes
    only, never by path, so that no node opens a path it was sent. A local
    runner (local_files) is the one place where paths are known: the node
    keeps them in DATA_DIR/datasets/<sweep_id>.json (0600), so the sweep
    can still resume after a restart of the same node.

    Moved out of ms_node.c ("One owner per concept") with the text of its
    functions unchanged; what needed the node goes through
    ms_submit_iface_t. The dataset file, the dataset hash, the file roles
    and the workers' object of blobs are ms_dataset_source's (node/data):
    they are the dataset source's as much as the submission's.
*/
#define _DEFAULT_SOURCE // realpath
#include "ms_submit.h"

#include "ms_dataset.h"
#include "ms_worker.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_FILE_ROLES MS_DATASET_SOURCE_FILE_ROLES

struct ms_submit {
    ms_store_t *store;             // the node's store (borrowed)
    ms_dataset_source_t *datasets; // its dataset files (borrowed)
    ms_submit_iface_t iface;       // the node's side
    const ms_clock_t *clock;       // wall clock of sweep records (borrowed)
    int64_t max_tasks_per_sweep;   // pool limit of tasks of a sweep
    int64_t max_dataset_bytes;     // pool limit of a dataset's bytes
};

//  --------------------------------------------------------------------------
//  Create the submission path.

ms_submit_t *
ms_submit_new(ms_store_t *store, ms_dataset_source_t *datasets,
              const ms_submit_config_t *cfg, const ms_submit_iface_t *iface)
{
    ms_submit_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->datasets = datasets;
    self->iface = *iface;
    self->clock = cfg->clock ? cfg->clock : ms_clock_system();
    self->max_tasks_per_sweep = cfg->max_tasks_per_sweep;
    self->max_dataset_bytes = cfg->max_dataset_bytes;
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_submit_destroy(ms_submit_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  For a local file dataset: absolute paths, check the files load, and the
//  dataset object for workers (caller owns *out).

static int
s_local_dataset(const ms_spec_t *spec, json_t **out, ms_diag_t *diag)
{
    *out = NULL;
    const ms_spec_dataset_t *d = ms_spec_dataset(spec);
    char train[PATH_MAX], test[PATH_MAX];
    if (!realpath(d->train_path, train))
        return ms_diag_set_code(diag, MS_ERR_IO, d->train_path, "%s",
                                strerror(errno));
    if (!realpath(d->test_path, test))
        return ms_diag_set_code(diag, MS_ERR_IO, d->test_path, "%s",
                                strerror(errno));
    char th[MS_HASH_HEX_LEN + 1], eh[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&d->train_hash, th);
    ms_hash_hex(&d->test_hash, eh);
    json_t *obj = json_pack("{s:s, s:s, s:s, s:s}", "train", train, "test",
                            test, "train_hash", th, "test_hash", eh);
    if (!obj || ms_spec_dataset_options_json(spec, true, obj) != MS_OK) {
        json_decref(obj);
        return MS_ERR_NOMEM;
    }
    // Load once here so a bad file is refused at submission, with the
    // loader's diag, and nothing is stored.
    ms_dataset_t *tr = NULL, *te = NULL;
    int rc = ms_worker_load_dataset(obj, &tr, &te, diag);
    ms_dataset_destroy(&tr);
    ms_dataset_destroy(&te);
    if (rc != MS_OK) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Store a submission as records: the sweep (spec and expanded task list)
//  and its dataset (name and content hash), one block. Already stored:
//  *existed, nothing written.

#define S_SWEEP_RECORD_SLACK 4096 // a sweep record's bytes beyond its spec

static int
s_submit_records(ms_submit_t *self, const ms_spec_t *spec, const ms_hash_t *sid,
                 const char *canon, size_t canon_len,
                 const ms_store_task_input_t *tasks, size_t n_tasks,
                 const ms_wire_dataset_file_t *files, size_t n_files,
                 bool *existed, ms_diag_t *diag)
{
    ms_store_sweep_t *old = NULL;
    int rc = ms_store_get_sweep(self->store, sid->bytes, &old);
    if (rc == MS_OK) {
        bool same = old->spec_len == canon_len &&
                    memcmp(old->spec_json, canon, canon_len) == 0;
        ms_store_sweep_destroy(&old);
        *existed = true;
        return same ? MS_OK : MS_ERR_CONFLICT;
    }
    if (rc != MS_ERR_NOTFOUND)
        return rc;
    const ms_spec_dataset_t *d = ms_spec_dataset(spec);
    ms_store_payload_t p[2];
    memset(p, 0, sizeof p);
    p[0].kind = MS_RECORD_SWEEP;
    memcpy(p[0].u.sweep.sweep_id, sid->bytes, MS_HASH_BYTES);
    p[0].u.sweep.spec_json = canon;
    p[0].u.sweep.spec_len = canon_len;
    p[0].u.sweep.priority = 0;
    p[0].u.sweep.created_at_ms = self->clock->wall_ms(self->clock->ctx);
    p[0].u.sweep.n_tasks = n_tasks;
    p[0].u.sweep.tasks = tasks;
    ms_hash_t dh;
    memset(&dh, 0, sizeof dh);
    size_t n = 1;
    ms_wire_dataset_file_t builtin[4];
    if (ms_dataset_source_hash(d, &dh, builtin) == MS_OK) {
        // DESIGN.md "Datasets": name, files, sizes and hashes, keyed by
        // the dataset hash every node derives from the sweep's spec.
        p[1].kind = MS_RECORD_DATASET;
        memcpy(p[1].u.dataset.hash, dh.bytes, MS_HASH_BYTES);
        p[1].u.dataset.name = d->builtin && d->name ? d->name : "files";
        p[1].u.dataset.files = d->builtin ? builtin : files;
        p[1].u.dataset.n_files = d->builtin ? 4 : n_files;
        n = 2;
    }
    // One sweep record carries the whole expanded spec (DESIGN.md "Store":
    // chunked sweeps are not built yet): refuse one that does not fit,
    // saying how many such tasks would (the record adds the sweep id and
    // a few bytes of framing to the spec).
    if (canon_len + S_SWEEP_RECORD_SLACK > MS_STORE_MAX_LOGICAL_BYTES) {
        size_t fit =
            (size_t) ((double) n_tasks *
                      (MS_STORE_MAX_LOGICAL_BYTES - S_SWEEP_RECORD_SLACK) /
                      (double) canon_len);
        return ms_diag_set_code(
            diag, MS_ERR_RANGE, "parameters",
            "the sweep's %zu tasks make a sweep record of %zu MiB; one "
            "sweep record carries at most %u MiB (about %zu tasks like "
            "these): lower run_cap or split the sweep",
            n_tasks, canon_len >> 20, MS_STORE_MAX_LOGICAL_BYTES >> 20, fit);
    }
    rc = self->iface.append(self->iface.arg, n, p);
    if (rc == MS_OK)
        *existed = false;
    return rc;
}

//  --------------------------------------------------------------------------
//  Parse the "files" argument of a submission ("ROLE:HEX,..."): hashes by
//  role; each must be a blob this node holds (uploaded before).

static int
s_parse_uploaded(ms_blob_store_t *blobs, const char *files,
                 ms_hash_t fh[S_FILE_ROLES], bool have[S_FILE_ROLES],
                 ms_diag_t *diag)
{
    memset(have, 0, S_FILE_ROLES * sizeof *have);
    if (!blobs)
        return ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, "files",
                                "this node keeps no blobs (it is in no pool)");
    const char *p = files;
    while (*p) {
        const char *comma = strchr(p, ',');
        if (!comma)
            comma = p + strlen(p);
        const char *colon = memchr(p, ':', (size_t) (comma - p));
        if (!colon)
            return ms_diag_set(diag, "files", "'%.80s': expected ROLE:HEX", p);
        int role = ms_dataset_source_file_role(p, (size_t) (colon - p));
        if (role < 0)
            return ms_diag_set(diag, "files",
                               "unknown role '%.*s' (train, test, "
                               "train_labels, test_labels)",
                               (int) (colon - p) > 40 ? 40 : (int) (colon - p),
                               p);
        char hex[MS_HASH_HEX_LEN + 1];
        size_t hl = (size_t) (comma - colon - 1);
        if (hl != MS_HASH_HEX_LEN)
            return ms_diag_set(diag, "files",
                               "%s: a BLAKE2b-256 hash is 64 hex characters",
                               ms_dataset_source_role_name(role));
        memcpy(hex, colon + 1, hl);
        hex[hl] = 0;
        if (ms_hash_from_hex(hex, &fh[role]) != MS_OK)
            return ms_diag_set(diag, "files", "%s: '%s' is not hex",
                               ms_dataset_source_role_name(role), hex);
        if (have[role])
            return ms_diag_set(diag, "files", "%s given twice",
                               ms_dataset_source_role_name(role));
        have[role] = true;
        if (!ms_blob_store_has(blobs, &fh[role]))
            return ms_diag_set_code(diag, MS_ERR_NOTFOUND, "files",
                                    "the %s file %.12s was not uploaded (PUT "
                                    "/api/v1/blobs/%s first)",
                                    ms_dataset_source_role_name(role), hex,
                                    hex);
        p = *comma ? comma + 1 : comma;
    }
    if (!have[0] || !have[1])
        return ms_diag_set(diag, "files",
                           "the train and test files are both required");
    if (have[2] != have[3])
        return ms_diag_set(diag, "files",
                           "train_labels and test_labels go together");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A loader's diag of an uploaded file names its blob path, which means
//  nothing to the user: name the file as the spec wrote it instead (the
//  path is only printed, never opened). "BLOB:LINE" becomes "PATH:LINE".

static void
s_diag_spec_path(ms_diag_t *diag, const json_t *local,
                 const ms_spec_dataset_t *d)
{
    const char *roles[2] = {"train", "test"};
    const char *paths[2] = {d->train_path, d->test_path};
    for (int r = 0; diag && r < 2; r++) {
        const char *blob = json_string_value(json_object_get(local, roles[r]));
        size_t n = blob ? strlen(blob) : 0;
        if (!n || !paths[r] || strncmp(diag->where, blob, n) != 0 ||
            (diag->where[n] && diag->where[n] != ':'))
            continue;
        char where[MS_DIAG_WHERE_MAX];
        snprintf(where, sizeof where, "%s%s", paths[r], diag->where + n);
        snprintf(diag->where, sizeof diag->where, "%s", where);
        return;
    }
}

//  --------------------------------------------------------------------------
//  Submit a spec.

int
ms_submit_spec(ms_submit_t *self, const char *spec_text, size_t n,
               ms_spec_t *parsed, bool local_files, const char *uploaded,
               ms_hash_t *sweep_id, bool *existed, char **summary_json,
               ms_diag_t *diag)
{
    if (summary_json)
        *summary_json = NULL;
    if (existed)
        *existed = false;
    ms_diag_clear(diag);
    ms_blob_store_t *blobs =
        self->iface.blobs ? self->iface.blobs(self->iface.arg) : NULL;
    ms_spec_t *spec = parsed;
    json_t *local = NULL;
    ms_store_task_input_t *tasks = NULL;
    ms_wire_dataset_file_t rec_files[S_FILE_ROLES];
    size_t n_rec_files = 0;
    ms_hash_t fh[S_FILE_ROLES];
    bool have[S_FILE_ROLES] = {false, false, false, false};
    int rc = spec ? MS_OK : ms_spec_parse(spec_text, n, NULL, &spec, diag);
    if (rc != MS_OK)
        return rc;
    const ms_spec_dataset_t *d = ms_spec_dataset(spec);
    if (ms_spec_program(spec)) {
        //  Parsed and checked (ms_spec_program.c), not yet run: the
        //  sandboxed runner is not wired to the workers.
        rc = ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, "program",
                              "program sweeps are not run by this version "
                              "of meshsweep yet (the spec itself is valid)");
        goto done;
    }
    if ((int64_t) ms_spec_task_count(spec) > self->max_tasks_per_sweep) {
        rc = ms_diag_set(diag, "parameters",
                         "the sweep has %zu tasks; this pool's limit is "
                         "%lld per sweep (max_tasks_per_sweep; run_cap "
                         "caps a sweep)",
                         ms_spec_task_count(spec),
                         (long long) self->max_tasks_per_sweep);
        goto done;
    }
    int64_t data_bytes = 0;
    if (d->builtin) {
        char *p[4] = {NULL, NULL, NULL, NULL};
        rc =
            ms_dataset_builtin_paths(d->name, &p[0], &p[1], &p[2], &p[3], diag);
        for (int i = 0; i < 4; i++) {
            struct stat st;
            if (p[i] && stat(p[i], &st) == 0)
                data_bytes += (int64_t) st.st_size;
            free(p[i]);
        }
        if (rc != MS_OK)
            goto done;
    } else if (uploaded && !local_files) {
        // Uploaded files: hashes from the client, bytes in the blob store
        // (checked against those hashes when they were put).
        rc = s_parse_uploaded(blobs, uploaded, fh, have, diag);
        if (rc != MS_OK)
            goto done;
        if (ms_spec_set_dataset_hashes(spec, &fh[0], &fh[1]) != MS_OK) {
            rc = ms_diag_set(diag, "dataset", "not a file dataset");
            goto done;
        }
        d = ms_spec_dataset(spec);
        json_t *csv = json_object();
        rc = csv ? ms_spec_dataset_options_json(spec, true, csv) : MS_ERR_NOMEM;
        if (rc == MS_OK)
            rc = ms_dataset_source_blob_object(blobs, fh, have, csv, false,
                                               &local, &data_bytes);
        json_decref(csv);
        if (rc == MS_OK) {
            // Load once here so a bad file is refused at submission.
            ms_dataset_t *tr = NULL, *te = NULL;
            rc = ms_worker_load_dataset(local, &tr, &te, diag);
            ms_dataset_destroy(&tr);
            ms_dataset_destroy(&te);
            if (rc != MS_OK)
                s_diag_spec_path(diag, local, d);
        }
        if (rc != MS_OK)
            goto done;
        for (int r = 0; r < S_FILE_ROLES; r++) {
            if (!have[r])
                continue;
            ms_wire_dataset_file_t *f = &rec_files[n_rec_files++];
            memset(f, 0, sizeof *f);
            snprintf(f->role, sizeof f->role, "%s",
                     ms_dataset_source_role_name(r));
            ms_blob_store_size(blobs, &fh[r], &f->size);
            memcpy(f->hash, fh[r].bytes, MS_HASH_BYTES);
        }
    } else {
        if (!local_files) {
            rc = ms_diag_set_code(
                diag, MS_ERR_UNSUPPORTED, "dataset",
                "a file dataset travels with its files: submit it with "
                "`meshsweep submit` (which uploads them to the node), or "
                "run the sweep here with `meshsweep run`");
            goto done;
        }
        rc = ms_spec_bind_dataset_files(spec, diag);
        if (rc == MS_OK)
            rc = s_local_dataset(spec, &local, diag);
        if (rc != MS_OK)
            goto done;
        const char *files[2] = {
            json_string_value(json_object_get(local, "train")),
            json_string_value(json_object_get(local, "test"))};
        for (int i = 0; i < 2; i++) {
            struct stat st;
            if (files[i] && stat(files[i], &st) == 0)
                data_bytes += (int64_t) st.st_size;
        }
    }
    if (data_bytes > self->max_dataset_bytes) {
        rc = ms_diag_set(diag, "dataset",
                         "the dataset's files hold %lld bytes; this pool's "
                         "limit is %lld (max_dataset_bytes)",
                         (long long) data_bytes,
                         (long long) self->max_dataset_bytes);
        goto done;
    }
    size_t n_tasks = ms_spec_task_count(spec);
    tasks = calloc(n_tasks ? n_tasks : 1, sizeof *tasks);
    if (!tasks) {
        rc = MS_ERR_NOMEM;
        goto done;
    }
    for (size_t i = 0; i < n_tasks; i++) {
        const char *cfg = ms_spec_task_json(spec, i);
        tasks[i].task_id = ms_spec_task_id(spec, i)->bytes;
        tasks[i].config_json = cfg;
        tasks[i].config_len = strlen(cfg);
    }
    const ms_hash_t *sid = ms_spec_sweep_id(spec);
    size_t canon_len = 0;
    const char *canon = ms_spec_canonical(spec, &canon_len);
    if (local) {
        // Paths first: a stored sweep must always find its files (and a
        // cached "unknown dataset" of this sweep is forgotten).
        rc = ms_dataset_source_save(self->datasets, sid, local, diag);
        if (rc != MS_OK)
            goto done;
    }
    bool was = false;
    rc = s_submit_records(self, spec, sid, canon, canon_len, tasks, n_tasks,
                          rec_files, n_rec_files, &was, diag);
    if (rc == MS_ERR_RANGE)
        goto done; // diag says why
    if (rc != MS_OK) {
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(sid, hex);
        ms_diag_set_code(diag, rc, "store",
                         rc == MS_ERR_CONFLICT
                             ? "sweep %s conflicts with stored data"
                             : "cannot store sweep %s",
                         hex);
        goto done;
    }
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(sid, hex);
    // The same spec again, of a cancelled sweep: the user wants it back
    // (ids are content hashes, so there is no other way to run it again
    // short of a new name). A reopen control makes it active on every
    // node; its cancelled tasks are pending again, its results stay.
    bool reopened = false;
    if (was) {
        ms_store_sweep_t *old = NULL;
        bool cancelled =
            ms_store_get_sweep(self->store, sid->bytes, &old) == MS_OK &&
            old->state == MS_SWEEP_CANCELLED;
        ms_store_sweep_destroy(&old);
        if (cancelled) {
            rc = self->iface.reopen(self->iface.arg, sid);
            if (rc != MS_OK) {
                ms_diag_set_code(diag, rc, hex, "cannot reopen: %s",
                                 ms_strerror(rc));
                goto done;
            }
            reopened = true;
        }
    }
    if (self->iface.stored)
        self->iface.stored(self->iface.arg, sid, !was);
    for (int r = 0; r < S_FILE_ROLES && blobs; r++)
        if (have[r]) // a sweep's data is never evicted under it
            ms_blob_store_pin(blobs, &fh[r]);
    if (sweep_id)
        *sweep_id = *sid;
    if (existed)
        *existed = was;
    if (self->iface.log) {
        char line[200];
        snprintf(line, sizeof line, "sweep %.12s %s: %zu tasks", hex,
                 reopened ? "reopened" : (was ? "existed" : "stored"), n_tasks);
        self->iface.log(self->iface.arg, line);
    }
    if (summary_json) {
        json_t *warnings = json_array();
        for (size_t i = 0; warnings && i < ms_spec_warning_count(spec); i++)
            json_array_append_new(warnings,
                                  json_string(ms_spec_warning(spec, i)));
        json_t *sum = json_pack("{s:s, s:b, s:b, s:I, s:o, s:s}", "sweep_id",
                                hex, "existed", was, "reopened", reopened,
                                "n_tasks", (json_int_t) n_tasks, "warnings",
                                warnings ? warnings : json_array(), "name",
                                ms_spec_name(spec) ? ms_spec_name(spec) : "");
        *summary_json = sum ? json_dumps(sum, JSON_COMPACT) : NULL;
        json_decref(sum);
        if (!*summary_json)
            rc = MS_ERR_NOMEM;
    }

done:
    free(tasks);
    json_decref(local);
    ms_spec_destroy(&spec);
    return rc;
}
