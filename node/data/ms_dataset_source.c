/*  =========================================================================
    ms_dataset_source - which datasets this node has ready for its sweeps,
    and how the missing ones come from the peers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Datasets by hash across the pool (DESIGN.md "Datasets").

    A sweep of a file dataset names its train and test files by hash; the
    submitting node published a DATASET record (files with roles, sizes,
    hashes; keyed by BLAKE2b(train hash || test hash), which every node
    derives from the sweep's canonical spec) and holds the files as blobs.
    A node without them (the scheduler's want, ms_dataset_source_fetch)
    reads that record from its store, pins the files and has the node
    start one ms_blob_fetch per file not held, from the linked alive
    peers: chunks with a window of requests in flight, a timeout re-asks
    another peer, and the blob store checks the whole hash before the
    blob gets its name (a mismatch is counted and the fetch retried from
    other peers). When every file is held, the class writes
    DATA_DIR/datasets/<sweep>.json (blob paths by role: kept across
    restarts), gives the sweep its dataset and tells the node (which
    rescans). A failed fetch is tried again MS_DATASET_SOURCE_RETRY_MS
    later. All of it runs in the loop, message by message: the poll loop
    (heartbeats) never waits on a fetch.

    Moved out of ms_node.c (the sweep info's dataset fields and their
    code) and ms_submit.c (the dataset file, the dataset hash, the file
    roles, the workers' object of blobs) with the text of the functions
    unchanged; what needed the node goes through ms_dataset_source_iface_t.
    Two gates are kept as they were: fetch_asked (the scheduler's want is
    passed on once until the try is over) and the one-second look for a
    dataset file in a pool.
*/
#include "ms_dataset_source.h"

#include "ms_dataset.h"
#include "ms_store_payload.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(MS_BLOB_PEER_ID_BYTES == MS_HASH_BYTES, "node ids");

#define S_LOOK_AGAIN_MS 1000 // in a pool: a missing dataset file, again

//  What the class knows about one sweep's dataset.
typedef struct {
    ms_hash_t sweep_id;            // the sweep
    json_t *dataset;               // dataset object for workers, or NULL
    char *dataset_error;           // why the dataset is unknown (malloc'd)
    int64_t dataset_bytes;         // bytes of its dataset files (0: unknown)
    bool fetch_asked;              // the want was passed on (fetch)
    int64_t retry_at;              // monotonic ms: look for the file again
    bool fetching;                 // blob fetches run for its files
    int64_t fetch_retry_at;        // monotonic ms: no new try before
    ms_wire_dataset_file_t *files; // the dataset record's files
    size_t n_files;                // entries in files
    json_t *csv;                   // CSV options of its dataset, or NULL
} s_sweep_t;

struct ms_dataset_source {
    ms_store_t *store;               // the node's store (borrowed, read)
    ms_dataset_source_iface_t iface; // the node's side
    const ms_clock_t *clock;         // monotonic ms (borrowed)
    int64_t max_dataset_bytes;       // pool limit of a dataset's bytes
    char datasets_dir[PATH_MAX];     // DATA_DIR/datasets
    s_sweep_t *sweeps;               // sweeps asked about
    size_t n_sweeps;                 // entries in sweeps
    ms_dataset_source_stats_t stats; // counters
};

//  Uploaded files of a file dataset (DESIGN.md "Datasets": the client
//  reads the files and uploads them; the node never opens a path from a
//  spec it was sent). The roles are the keys of the workers' dataset
//  object: "train" and "test" (IDX images or CSV), and for IDX
//  "train_labels" and "test_labels".

#define S_FILE_ROLES MS_DATASET_SOURCE_FILE_ROLES
static const char *const s_file_roles[S_FILE_ROLES] = {
    "train", "test", "train_labels", "test_labels"};

//  --------------------------------------------------------------------------
//  Log one line through the node.

static void s_log(const ms_dataset_source_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
s_log(const ms_dataset_source_t *self, const char *fmt, ...)
{
    if (!self->iface.log)
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    self->iface.log(self->iface.arg, line);
}

//  --------------------------------------------------------------------------
//  The node's blob store, or NULL (in no pool).

static ms_blob_store_t *
s_blobs(const ms_dataset_source_t *self)
{
    return self->iface.blobs ? self->iface.blobs(self->iface.arg) : NULL;
}

//  --------------------------------------------------------------------------
//  The monotonic clock in ms.

static int64_t
s_now(const ms_dataset_source_t *self)
{
    return self->clock->mono_ms(self->clock->ctx);
}

//  --------------------------------------------------------------------------
//  Create the dataset source.

ms_dataset_source_t *
ms_dataset_source_new(ms_store_t *store, const ms_dataset_source_config_t *cfg,
                      const ms_dataset_source_iface_t *iface)
{
    ms_dataset_source_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->store = store;
    self->iface = *iface;
    self->clock = cfg->clock ? cfg->clock : ms_clock_system();
    self->max_dataset_bytes = cfg->max_dataset_bytes;
    if (snprintf(self->datasets_dir, sizeof self->datasets_dir, "%s",
                 cfg->datasets_dir) >= (int) sizeof self->datasets_dir) {
        free(self);
        return NULL;
    }
    return self;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_dataset_source_destroy(ms_dataset_source_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_dataset_source_t *self = *self_p;
    for (size_t i = 0; i < self->n_sweeps; i++) {
        json_decref(self->sweeps[i].dataset);
        free(self->sweeps[i].dataset_error);
        free(self->sweeps[i].files);
        json_decref(self->sweeps[i].csv);
    }
    free(self->sweeps);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Path of the local dataset file of a sweep.

void
ms_dataset_source_path(const ms_dataset_source_t *self,
                       const ms_hash_t *sweep_id, char *out, size_t n)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(sweep_id, hex);
    snprintf(out, n, "%s/%s.json", self->datasets_dir, hex);
}

//  --------------------------------------------------------------------------
//  Write a small file atomically with mode 0600.

static int
s_write_small(const char *path, const char *text)
{
    char tmp[PATH_MAX + 200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return MS_ERR_IO;
    size_t n = strlen(text);
    bool ok = write(fd, text, n) == (ssize_t) n && fsync(fd) == 0;
    close(fd);
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        return MS_ERR_IO;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Write a sweep's dataset file (the file only).

static int
s_save_file(const ms_dataset_source_t *self, const ms_hash_t *sweep_id,
            const json_t *dataset, ms_diag_t *diag)
{
    char path[PATH_MAX + 80];
    ms_dataset_source_path(self, sweep_id, path, sizeof path);
    char *text = json_dumps(dataset, JSON_COMPACT | JSON_SORT_KEYS);
    int rc = text ? s_write_small(path, text) : MS_ERR_NOMEM;
    free(text);
    if (rc != MS_OK)
        ms_diag_set_code(diag, rc, path, "cannot write: %s", strerror(errno));
    return rc;
}

//  --------------------------------------------------------------------------
//  Write a sweep's dataset file; a sweep asked about has it from now on
//  (a cached "unknown dataset" of it is forgotten).

int
ms_dataset_source_save(ms_dataset_source_t *self, const ms_hash_t *sweep_id,
                       json_t *dataset, ms_diag_t *diag)
{
    int rc = s_save_file(self, sweep_id, dataset, diag);
    if (rc != MS_OK)
        return rc;
    for (size_t i = 0; i < self->n_sweeps; i++)
        if (ms_hash_equal(&self->sweeps[i].sweep_id, sweep_id)) {
            json_decref(self->sweeps[i].dataset);
            self->sweeps[i].dataset = json_incref(dataset);
            free(self->sweeps[i].dataset_error);
            self->sweeps[i].dataset_error = NULL;
        }
    return MS_OK;
}

//  Roles of a built-in dataset's four files, in the order hashed.
static const char *const s_builtin_roles[4] = {"train-images", "train-labels",
                                               "test-images", "test-labels"};

//  --------------------------------------------------------------------------
//  The content hash of a sweep's dataset: BLAKE2b over the hashes of its
//  files (a built-in dataset's files are hashed here, so nodes with the
//  same Debian package see the same hash). files (may be NULL): for a
//  built-in dataset, its four files (role, size, hash) for the record.

int
ms_dataset_source_hash(const ms_spec_dataset_t *d, ms_hash_t *out,
                       ms_wire_dataset_file_t files[4])
{
    ms_hasher_t h;
    ms_hasher_init(&h);
    if (d->builtin) {
        char *p[4] = {NULL, NULL, NULL, NULL};
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_dataset_builtin_paths(d->name, &p[0], &p[1], &p[2], &p[3],
                                          &diag);
        for (int i = 0; i < 4; i++) {
            ms_hash_t fh;
            if (rc == MS_OK && p[i])
                rc = ms_hash_file(p[i], &fh, &diag);
            if (rc == MS_OK && p[i])
                ms_hasher_update(&h, fh.bytes, MS_HASH_BYTES);
            struct stat st;
            if (rc == MS_OK && p[i] && files) {
                memset(&files[i], 0, sizeof files[i]);
                snprintf(files[i].role, sizeof files[i].role, "%s",
                         s_builtin_roles[i]);
                files[i].size =
                    stat(p[i], &st) == 0 ? (uint64_t) st.st_size : 0;
                memcpy(files[i].hash, fh.bytes, MS_HASH_BYTES);
            }
            free(p[i]);
        }
        if (rc != MS_OK)
            return rc;
    } else {
        ms_hasher_update(&h, d->train_hash.bytes, MS_HASH_BYTES);
        ms_hasher_update(&h, d->test_hash.bytes, MS_HASH_BYTES);
    }
    ms_hasher_final(&h, out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Role index of a name (n bytes), -1 when none.

int
ms_dataset_source_file_role(const char *name, size_t n)
{
    for (int r = 0; r < S_FILE_ROLES; r++)
        if (strlen(s_file_roles[r]) == n &&
            strncmp(name, s_file_roles[r], n) == 0)
            return r;
    return -1;
}

//  --------------------------------------------------------------------------
//  Name of a role index.

const char *
ms_dataset_source_role_name(int role)
{
    assert(role >= 0 && role < S_FILE_ROLES);
    return s_file_roles[role];
}

//  --------------------------------------------------------------------------
//  The workers' dataset object of a file dataset held as blobs: paths in
//  the blob store by role, the CSV options (csv: label, missing,
//  categorical, split, split_seed; ms_spec_dataset_options_json), and the
//  train/test hashes (the worker re-checks them). Pins the blobs when pin
//  is true. *bytes gets the files' total size.

int
ms_dataset_source_blob_object(ms_blob_store_t *blobs,
                              const ms_hash_t fh[S_FILE_ROLES],
                              const bool have[S_FILE_ROLES], const json_t *csv,
                              bool pin, json_t **out, int64_t *bytes)
{
    *out = NULL;
    *bytes = 0;
    json_t *obj = json_object();
    if (!obj)
        return MS_ERR_NOMEM;
    int rc = MS_OK;
    for (int r = 0; r < S_FILE_ROLES && rc == MS_OK; r++) {
        if (!have[r])
            continue;
        char *path = NULL;
        uint64_t size = 0;
        rc = ms_blob_store_path(blobs, &fh[r], &path);
        if (rc == MS_OK)
            rc = ms_blob_store_size(blobs, &fh[r], &size);
        if (rc == MS_OK)
            rc = json_object_set_new(obj, s_file_roles[r], json_string(path))
                     ? MS_ERR_NOMEM
                     : MS_OK;
        free(path);
        *bytes += (int64_t) size;
        if (rc == MS_OK && pin)
            rc = ms_blob_store_pin(blobs, &fh[r]);
    }
    char th[MS_HASH_HEX_LEN + 1], eh[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&fh[0], th);
    ms_hash_hex(&fh[1], eh);
    if (rc == MS_OK &&
        ((csv && json_object_update(obj, (json_t *) csv)) ||
         (!json_object_get(obj, "label") &&
          json_object_set_new(obj, "label", json_string("label"))) ||
         json_object_set_new(obj, "train_hash", json_string(th)) ||
         json_object_set_new(obj, "test_hash", json_string(eh))))
        rc = MS_ERR_NOMEM;
    if (rc != MS_OK) {
        json_decref(obj);
        return rc;
    }
    *out = obj;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  In a pool: true when this node's copy of a built-in dataset has the
//  hash of the sweep's dataset record (DESIGN.md "Datasets": a local copy
//  is used only when its hash matches; the store keys dataset records by
//  that hash, so a lookup is the comparison). Otherwise why says so.

static bool
s_builtin_matches(ms_dataset_source_t *self, const ms_spec_dataset_t *d,
                  char *why, size_t n_why)
{
    ms_hash_t h;
    if (ms_dataset_source_hash(d, &h, NULL) != MS_OK) {
        snprintf(why, n_why, "built-in dataset %s unreadable here", d->name);
        return false;
    }
    uint8_t *payload = NULL;
    size_t len = 0;
    int rc = ms_store_get_dataset(self->store, h.bytes, &payload, &len);
    free(payload);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    if (rc == MS_OK) {
        self->stats.n_local++;
        s_log(self,
              "dataset %s: local copy matches the record (%.12s), no "
              "fetch",
              d->name, hex);
        return true;
    }
    self->stats.n_local_mismatch++;
    snprintf(why, n_why,
             "this node's %s (dataset hash %.12s) differs from the "
             "submitter's: left to the nodes whose copy matches",
             d->name, hex);
    s_log(self, "%s", why);
    return false;
}

//  --------------------------------------------------------------------------
//  Where a new sweep's dataset comes from (info zeroed, sweep_id set):
//  a built-in one's files, or its dataset file; else why not, in
//  dataset_error.

static void
s_resolve(ms_dataset_source_t *self, s_sweep_t *info, bool in_pool)
{
    ms_store_sweep_t *sweep = NULL;
    json_t *named = NULL; // the spec's dataset object (not the task list)
    const char *builtin = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char why[1200] = "";
    if (ms_store_get_sweep(self->store, info->sweep_id.bytes, &sweep) != MS_OK)
        snprintf(why, sizeof why, "sweep not found in the store");
    else if (!(named = ms_spec_canonical_dataset(sweep->spec_json,
                                                 sweep->spec_len, &diag))) {
        char text[1100];
        snprintf(why, sizeof why, "stored spec unreadable: %s",
                 ms_diag_format(&diag, text, sizeof text));
    } else if ((builtin = json_string_value(json_object_get(named, "name")))) {
        info->dataset = json_pack("{s:s}", "name", builtin);
        char *p[4] = {NULL, NULL, NULL, NULL};
        ms_diag_t d2;
        ms_diag_clear(&d2);
        if (ms_dataset_builtin_paths(builtin, &p[0], &p[1], &p[2], &p[3],
                                     &d2) == MS_OK) {
            for (int i = 0; i < 4; i++) {
                struct stat st;
                if (p[i] && stat(p[i], &st) == 0)
                    info->dataset_bytes += (int64_t) st.st_size;
            }
            const ms_spec_dataset_t named_ds = {.builtin = true,
                                                .name = builtin};
            if (in_pool &&
                !s_builtin_matches(self, &named_ds, why, sizeof why)) {
                json_decref(info->dataset);
                info->dataset = NULL;
            }
        } else if (in_pool) {
            // In a pool, a node without the built-in files leaves the
            // sweep to the nodes that have them (no failure counted).
            char text[1100];
            snprintf(why, sizeof why, "built-in dataset not here: %s",
                     ms_diag_format(&d2, text, sizeof text));
            json_decref(info->dataset);
            info->dataset = NULL;
        }
        for (int i = 0; i < 4; i++)
            free(p[i]);
    } else {
        char path[PATH_MAX + 80];
        ms_dataset_source_path(self, &info->sweep_id, path, sizeof path);
        json_error_t err;
        info->dataset = json_load_file(path, 0, &err);
        const char *files[2] = {
            json_string_value(json_object_get(info->dataset, "train")),
            json_string_value(json_object_get(info->dataset, "test"))};
        for (int i = 0; i < 2; i++) {
            struct stat st;
            if (files[i] && stat(files[i], &st) == 0)
                info->dataset_bytes += (int64_t) st.st_size;
        }
        if (!info->dataset)
            snprintf(why, sizeof why,
                     "the files of this sweep's dataset are not known to "
                     "this node (run it with `meshsweep run` where the "
                     "files are)");
    }
    if (!info->dataset && !why[0])
        snprintf(why, sizeof why, "out of memory");
    if (!info->dataset)
        info->dataset_error = strdup(why);
    json_decref(named);
    ms_store_sweep_destroy(&sweep);
}

//  --------------------------------------------------------------------------
//  The entry of a sweep, created (and its dataset resolved) on first use;
//  NULL when memory runs out.

static s_sweep_t *
s_sweep(ms_dataset_source_t *self, const uint8_t *sweep_bytes)
{
    ms_hash_t sid;
    memcpy(sid.bytes, sweep_bytes, MS_HASH_BYTES);
    bool in_pool = s_blobs(self) != NULL;
    for (size_t i = 0; i < self->n_sweeps; i++)
        if (ms_hash_equal(&self->sweeps[i].sweep_id, &sid)) {
            s_sweep_t *info = &self->sweeps[i];
            int64_t now = s_now(self);
            if (!info->dataset && in_pool && now >= info->retry_at) {
                // In a pool the dataset may arrive later (the blob store
                // writes DATA_DIR/datasets/<sweep>.json): look again.
                info->retry_at = now + S_LOOK_AGAIN_MS;
                char path[PATH_MAX + 80];
                ms_dataset_source_path(self, &sid, path, sizeof path);
                json_error_t err;
                info->dataset = json_load_file(path, 0, &err);
                if (info->dataset) {
                    free(info->dataset_error);
                    info->dataset_error = NULL;
                }
            }
            return info;
        }
    s_sweep_t *grown =
        realloc(self->sweeps, (self->n_sweeps + 1) * sizeof *grown);
    if (!grown)
        return NULL;
    self->sweeps = grown;
    s_sweep_t *info = &self->sweeps[self->n_sweeps++];
    memset(info, 0, sizeof *info);
    info->sweep_id = sid;
    s_resolve(self, info, in_pool);
    return info;
}

//  --------------------------------------------------------------------------
//  What the class knows of a sweep's dataset.

bool
ms_dataset_source_sweep(ms_dataset_source_t *self,
                        const uint8_t sweep_id[MS_HASH_BYTES],
                        ms_dataset_source_sweep_t *out)
{
    memset(out, 0, sizeof *out);
    s_sweep_t *info = s_sweep(self, sweep_id);
    if (!info)
        return false;
    out->dataset = info->dataset;
    out->error = info->dataset_error;
    out->bytes = info->dataset_bytes;
    out->fetching = info->fetching;
    return true;
}

//  --------------------------------------------------------------------------
//  A sweep's dataset object for workers, or NULL.

const json_t *
ms_dataset_source_dataset(ms_dataset_source_t *self, const ms_hash_t *sweep_id)
{
    s_sweep_t *info = s_sweep(self, sweep_id->bytes);
    return info ? info->dataset : NULL;
}

//  --------------------------------------------------------------------------
//  Read the dataset record of a sweep of a file dataset into info->files
//  (roles checked) and info->csv. MS_OK; MS_ERR_NOTFOUND (no record);
//  MS_ERR_UNSUPPORTED (a built-in dataset); MS_ERR_PROTOCOL (a record out
//  of contract: roles, sizes).

static int
s_load_dataset_record(ms_dataset_source_t *self, ms_blob_store_t *blobs,
                      s_sweep_t *info, char *why, size_t n_why)
{
    ms_store_sweep_t *sweep = NULL;
    ms_spec_t *spec = NULL;
    ms_store_payload_t *rec = NULL;
    uint8_t *payload = NULL;
    size_t len = 0;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_store_get_sweep(self->store, info->sweep_id.bytes, &sweep);
    if (rc == MS_OK)
        rc = ms_spec_load_canonical(sweep->spec_json, sweep->spec_len, &spec,
                                    &diag);
    const ms_spec_dataset_t *d = spec ? ms_spec_dataset(spec) : NULL;
    ms_hash_t key;
    if (rc == MS_OK && d->builtin)
        rc = MS_ERR_UNSUPPORTED;
    if (rc == MS_OK)
        rc = ms_dataset_source_hash(d, &key, NULL);
    if (rc == MS_OK)
        rc = ms_store_get_dataset(self->store, key.bytes, &payload, &len);
    if (rc == MS_OK)
        rc = ms_store_payload_decode(MS_RECORD_DATASET, payload, len, &rec);
    if (rc != MS_OK) {
        snprintf(why, n_why, "no dataset record for this sweep (%s)",
                 ms_strerror(rc));
        goto done;
    }
    bool have[S_FILE_ROLES] = {false, false, false, false};
    uint64_t total = 0;
    for (size_t i = 0; i < rec->u.dataset.n_files; i++) {
        const ms_wire_dataset_file_t *f = &rec->u.dataset.files[i];
        int r = ms_dataset_source_file_role(f->role, strlen(f->role));
        if (r < 0 || have[r] || f->size > (uint64_t) self->max_dataset_bytes) {
            snprintf(why, n_why,
                     "dataset record: file '%.40s' unknown, "
                     "repeated or too big",
                     f->role);
            rc = MS_ERR_PROTOCOL;
            goto done;
        }
        have[r] = true;
        total += f->size;
    }
    if (!have[0] || !have[1] ||
        memcmp(rec->u.dataset.files[0].hash, d->train_hash.bytes,
               MS_HASH_BYTES) != 0 ||
        total > (uint64_t) self->max_dataset_bytes) {
        snprintf(why, n_why, "dataset record: files do not match the sweep");
        rc = MS_ERR_PROTOCOL;
        goto done;
    }
    info->files = calloc(rec->u.dataset.n_files, sizeof *info->files);
    json_decref(info->csv);
    info->csv = json_object();
    if (!info->files || !info->csv ||
        ms_spec_dataset_options_json(spec, true, info->csv) != MS_OK) {
        free(info->files);
        json_decref(info->csv);
        info->files = NULL;
        info->csv = NULL;
        rc = MS_ERR_NOMEM;
        goto done;
    }
    memcpy(info->files, rec->u.dataset.files,
           rec->u.dataset.n_files * sizeof *info->files);
    info->n_files = rec->u.dataset.n_files;
    for (size_t i = 0; i < info->n_files; i++) {
        ms_hash_t h;
        memcpy(h.bytes, info->files[i].hash, MS_HASH_BYTES);
        ms_blob_store_pin(blobs, &h); // kept once here
    }
done:
    ms_store_payload_destroy(&rec);
    free(payload);
    ms_spec_destroy(&spec);
    ms_store_sweep_destroy(&sweep);
    return rc;
}

//  --------------------------------------------------------------------------
//  When every file of a fetching sweep is held: its dataset object, the
//  datasets/<sweep>.json file, and the node told. True when ready.
//  fetched: the last file came from a peer just now (counted).

static bool
s_dataset_check_ready(ms_dataset_source_t *self, ms_blob_store_t *blobs,
                      s_sweep_t *info, bool fetched)
{
    ms_hash_t fh[S_FILE_ROLES];
    bool have[S_FILE_ROLES] = {false, false, false, false};
    for (size_t i = 0; i < info->n_files; i++) {
        int r = ms_dataset_source_file_role(info->files[i].role,
                                            strlen(info->files[i].role));
        memcpy(fh[r].bytes, info->files[i].hash, MS_HASH_BYTES);
        if (!ms_blob_store_has(blobs, &fh[r]))
            return false;
        have[r] = true;
    }
    json_t *obj = NULL;
    int64_t bytes = 0;
    if (ms_dataset_source_blob_object(blobs, fh, have, info->csv, false, &obj,
                                      &bytes) != MS_OK)
        return false;
    ms_diag_t wd;
    ms_diag_clear(&wd);
    if (s_save_file(self, &info->sweep_id, obj, &wd) != MS_OK) {
        char path[PATH_MAX + 80];
        ms_dataset_source_path(self, &info->sweep_id, path, sizeof path);
        s_log(self,
              "%s: cannot write (the dataset is fetched again after "
              "a restart)",
              path);
    }
    json_decref(info->dataset);
    info->dataset = obj;
    info->dataset_bytes = bytes;
    free(info->dataset_error);
    info->dataset_error = NULL;
    info->fetching = false;
    if (fetched)
        self->stats.n_fetched++;
    ms_hash_t sid = info->sweep_id; // the node may ask about sweeps now
    size_t n_files = info->n_files;
    if (self->iface.ready)
        self->iface.ready(self->iface.arg, &sid);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&sid, hex);
    s_log(self,
          "sweep %.12s: dataset %s, hashes verified (%zu files, %lld bytes)",
          hex, fetched ? "fetched" : "held", n_files, (long long) bytes);
    return true;
}

//  --------------------------------------------------------------------------
//  A sweep names a dataset this node does not have: fetch its files by
//  hash from the peers (see above); until they are in, the node does not
//  claim the sweep's tasks (others run them).

void
ms_dataset_source_fetch(ms_dataset_source_t *self, const ms_hash_t *sweep_id)
{
    s_sweep_t *info = s_sweep(self, sweep_id->bytes);
    ms_blob_store_t *blobs = s_blobs(self);
    if (!info || info->dataset || info->fetching || !blobs)
        return;
    int64_t now = s_now(self);
    info->fetch_asked = false; // asked again on later scans until it runs
    if (now < info->fetch_retry_at)
        return;
    info->fetch_retry_at = now + MS_DATASET_SOURCE_RETRY_MS;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(sweep_id, hex);
    char why[300] = "";
    if (!info->files &&
        s_load_dataset_record(self, blobs, info, why, sizeof why) != MS_OK) {
        s_log(self, "sweep %.12s: dataset not local, cannot fetch: %s", hex,
              why);
        return;
    }
    if (s_dataset_check_ready(self, blobs, info, false))
        return; // held already (another sweep's, or registered)
    uint8_t(*peers)[MS_BLOB_PEER_ID_BYTES] = NULL;
    size_t n_peers = self->iface.live_peers(self->iface.arg, &peers);
    if (n_peers == 0) {
        free(peers);
        return;
    }
    self->stats.n_fetches_asked++;
    info->fetching = true;
    info->fetch_asked = true;
    s_log(self,
          "sweep %.12s: dataset not local: fetching %zu file(s) by "
          "hash from %zu peer(s)",
          hex, info->n_files, n_peers);
    for (size_t k = 0; k < info->n_files && info->fetching; k++) {
        ms_hash_t h;
        memcpy(h.bytes, info->files[k].hash, MS_HASH_BYTES);
        if (ms_blob_store_has(blobs, &h))
            continue;
        int rc = self->iface.fetch(
            self->iface.arg, &h, info->files[k].size,
            (const uint8_t(*)[MS_BLOB_PEER_ID_BYTES]) peers, n_peers, now);
        if (rc != MS_OK) {
            s_log(self, "sweep %.12s: cannot fetch %s: %s", hex,
                  info->files[k].role, ms_strerror(rc));
            info->fetching = false;
            info->fetch_asked = false;
        }
    }
    free(peers);
}

//  --------------------------------------------------------------------------
//  The scheduler's want: a sweep's dataset is not here: fetch, once.

void
ms_dataset_source_want(ms_dataset_source_t *self,
                       const uint8_t sweep_id[MS_HASH_BYTES])
{
    s_sweep_t *info = s_sweep(self, sweep_id);
    if (!info || info->dataset || info->fetch_asked)
        return;
    info->fetch_asked = true;
    ms_hash_t sid;
    memcpy(sid.bytes, sweep_id, MS_HASH_BYTES);
    ms_dataset_source_fetch(self, &sid);
}

//  --------------------------------------------------------------------------
//  The end of one blob fetch: the sweeps waiting for it go on.

void
ms_dataset_source_blob_done(ms_dataset_source_t *self, const ms_hash_t *hash,
                            int status)
{
    ms_blob_store_t *blobs = s_blobs(self);
    int64_t now = s_now(self);
    for (size_t i = 0; i < self->n_sweeps; i++) {
        s_sweep_t *info = &self->sweeps[i];
        bool uses = false;
        for (size_t k = 0; k < info->n_files; k++)
            if (memcmp(info->files[k].hash, hash->bytes, MS_HASH_BYTES) == 0)
                uses = true;
        if (!info->fetching || !uses)
            continue;
        if (status != MS_OK) {
            info->fetching = false;
            info->fetch_asked = false;
            info->fetch_retry_at = now + MS_DATASET_SOURCE_RETRY_MS;
        } else if (blobs)
            s_dataset_check_ready(self, blobs, info, true);
    }
}

//  --------------------------------------------------------------------------
//  An uploaded file (consumed) becomes the blob of hash, once its bytes
//  hash to it.

int
ms_dataset_source_blob_put(ms_dataset_source_t *self, const ms_hash_t *hash,
                           const char *tmp_path, ms_diag_t *diag)
{
    ms_blob_store_t *blobs = s_blobs(self);
    if (!blobs) {
        unlink(tmp_path);
        return ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, "blobs",
                                "this node keeps no blobs (it is in no pool)");
    }
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(hash, hex);
    int rc = ms_blob_store_tmp_commit(blobs, hash, tmp_path);
    if (rc == MS_ERR_INVALID)
        return ms_diag_set_code(
            diag, rc, "body", "the bytes do not hash to %s (BLAKE2b-256)", hex);
    if (rc == MS_ERR_STORE_FULL)
        return ms_diag_set_code(diag, rc, "blobs",
                                "no room: the blob quota is full of blobs "
                                "that sweeps use");
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, "blobs", "cannot store blob %s: %s",
                                hex, ms_strerror(rc));
    self->stats.n_uploads++;
    s_log(self, "blob %.12s uploaded", hex);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Which of the blobs named in TEXT (a JSON array of hex hashes) this
//  node holds, as JSON text {hex: bool} in *summary.

int
ms_dataset_source_blobs_held(ms_dataset_source_t *self, const char *text,
                             char **summary)
{
    ms_blob_store_t *blobs = s_blobs(self);
    json_error_t err;
    json_t *hashes = json_loads(text ? text : "[]", 0, &err);
    json_t *held = json_object();
    size_t i;
    json_t *h;
    json_array_foreach(hashes, i, h)
    {
        ms_hash_t hash;
        const char *hex = json_string_value(h);
        if (!held || !hex || ms_hash_from_hex(hex, &hash) != MS_OK)
            continue;
        json_object_set_new(
            held, hex, json_boolean(blobs && ms_blob_store_has(blobs, &hash)));
    }
    json_decref(hashes);
    *summary = held ? json_dumps(held, JSON_COMPACT) : NULL;
    json_decref(held);
    return *summary ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  The file of a held blob, as JSON text {"path": PATH} in *summary.
//  MS_ERR_NOTFOUND when it is not held.

int
ms_dataset_source_blob_file(ms_dataset_source_t *self, const ms_hash_t *hash,
                            char **summary)
{
    ms_blob_store_t *blobs = s_blobs(self);
    char *path = NULL;
    int rc = blobs ? ms_blob_store_path(blobs, hash, &path) : MS_ERR_NOTFOUND;
    if (rc != MS_OK)
        return rc;
    json_t *obj = json_pack("{s:s}", "path", path);
    free(path);
    *summary = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    return *summary ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  Counters.

void
ms_dataset_source_stats(const ms_dataset_source_t *self,
                        ms_dataset_source_stats_t *out)
{
    *out = self->stats;
}
