/*  =========================================================================
    ms_blob_store - content-addressed blobs on disk, within a quota

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    How it works (DESIGN.md "Datasets"; docs/POOL.md "Datasets and blobs").

    Layout under DATA_DIR/blobs:
        <64 hex>          a blob held as a copy; its name is its hash
        tmp/              temp files of fetches and puts (emptied at open)
        registered.json   local files known by hash, never copied

    Writing. Bytes of a blob go to a temp file in tmp/ (a fetch writes its
    chunks there at their offsets, in any order). Commit fsyncs it, hashes
    the whole file and renames it to its hex name only when the hash is
    the one expected, then fsyncs the directory. rename(2) is atomic within
    one file system, so a reader (or a node restarting after a crash) sees
    either no blob or the whole blob; a crash leaves at most a temp file,
    and open removes those. Blobs are not re-hashed at open (that would
    read gigabytes at every start): a copy was checked when it got its
    name, and a peer that receives bytes checks them against the hash
    again, so a copy corrupted on disk later is caught by its readers.

    Registered files. A node that has Debian's dataset-fashion-mnist must
    fetch nothing and copy nothing: register_file hashes the file where it
    is and records (hash, path, size, mtime) in registered.json (written
    to a temp name, fsynced, renamed). Before each use the entry is
    re-checked with stat(2): same size and mtime, it is trusted; changed,
    the file is hashed again and the entry kept (new size and mtime) when
    the hash still matches, dropped otherwise. A size + mtime check is what
    make and rsync trust; the cost of a full re-hash per use (tens of ms
    for 30 MB, per 1 MiB chunk served) was not worth it.

    Quota and eviction. Only copies count against quota_bytes. When a new
    blob would pass it, copies are evicted least recently used first,
    skipping pinned ones (a pin is a counter per hash, held by a sweep
    that uses the blob, possibly before the blob is here). Recency is a
    logical clock bumped by path(), read() and commit; at open it is
    seeded from the files' mtimes, and path() touches the file's mtime,
    so the order survives a restart roughly (reads while serving do not
    touch the disk). When pinned copies leave no room the new blob is
    refused (MS_ERR_STORE_FULL), never a pinned one removed.

    Tables are small arrays searched linearly: a node holds tens of blobs
    (datasets, a sweep's best weights), not millions.
*/
#include "ms_blob_store.h"
#include "ms_dataset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define S_IO_BYTES (256u * 1024u) // buffer of put and copy loops

typedef struct {
    ms_hash_t hash;      // name of the file
    uint64_t size_bytes; // its size
    uint64_t last_used;  // logical LRU clock value of the last use
} s_copy_t;

typedef struct {
    ms_hash_t hash;      // hash of the file when last checked
    char *path;          // absolute or as given; malloc'd
    uint64_t size_bytes; // st_size when last hashed
    int64_t mtime_s;     // st_mtim when last hashed
    int64_t mtime_ns;    //
} s_reg_t;

typedef struct {
    ms_hash_t hash; // pinned blob (held or not yet)
    uint32_t count; // pins outstanding
} s_pin_t;

struct ms_blob_store {
    char *dir;                   // DATA_DIR/blobs
    char *tmp_dir;               // DATA_DIR/blobs/tmp
    char *index_path;            // DATA_DIR/blobs/registered.json
    uint64_t quota_bytes;        // 0: no limit
    s_copy_t *copies;            // held copies
    size_t n_copies;             //
    size_t cap_copies;           //
    s_reg_t *regs;               // registered files
    size_t n_regs;               //
    size_t cap_regs;             //
    s_pin_t *pins;               // pin counters
    size_t n_pins;               //
    size_t cap_pins;             //
    uint64_t clock;              // LRU logical clock
    ms_blob_store_stats_t stats; // counters (used_bytes kept live)
};

//  --------------------------------------------------------------------------
//  malloc'd "a/b".

static char *
s_join(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    char *out = malloc(na + nb + 2);
    if (!out)
        return NULL;
    memcpy(out, a, na);
    out[na] = '/';
    memcpy(out + na + 1, b, nb + 1);
    return out;
}

//  --------------------------------------------------------------------------
//  mkdir that accepts an existing directory.

static int
s_mkdir(const char *path, ms_diag_t *diag)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return MS_OK;
    return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot create: %s",
                            strerror(errno));
}

//  --------------------------------------------------------------------------
//  Grow *arr (elements of size elem) so that it holds at least n + 1.

static int
s_grow(void **arr, size_t *cap, size_t n, size_t elem)
{
    if (n < *cap)
        return MS_OK;
    size_t ncap = *cap ? *cap * 2 : 8;
    void *p = realloc(*arr, ncap * elem);
    if (!p)
        return MS_ERR_NOMEM;
    *arr = p;
    *cap = ncap;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Index of the copy with this hash, or -1.

static ssize_t
s_copy_find(ms_blob_store_t *self, const ms_hash_t *hash)
{
    for (size_t i = 0; i < self->n_copies; i++)
        if (memcmp(self->copies[i].hash.bytes, hash->bytes, MS_HASH_BYTES) == 0)
            return (ssize_t) i;
    return -1;
}

//  --------------------------------------------------------------------------
//  Index of the registered file with this hash, or -1.

static ssize_t
s_reg_find(ms_blob_store_t *self, const ms_hash_t *hash)
{
    for (size_t i = 0; i < self->n_regs; i++)
        if (memcmp(self->regs[i].hash.bytes, hash->bytes, MS_HASH_BYTES) == 0)
            return (ssize_t) i;
    return -1;
}

//  --------------------------------------------------------------------------
//  Pin count of a hash.

static uint32_t
s_pin_count(ms_blob_store_t *self, const ms_hash_t *hash)
{
    for (size_t i = 0; i < self->n_pins; i++)
        if (memcmp(self->pins[i].hash.bytes, hash->bytes, MS_HASH_BYTES) == 0)
            return self->pins[i].count;
    return 0;
}

//  --------------------------------------------------------------------------
//  malloc'd path of a copy.

static char *
s_copy_path(ms_blob_store_t *self, const ms_hash_t *hash)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(hash, hex);
    return s_join(self->dir, hex);
}

//  --------------------------------------------------------------------------
//  fsync a directory so a rename in it is durable.

static int
s_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return MS_ERR_IO;
    int rc = fsync(fd) == 0 ? MS_OK : MS_ERR_IO;
    close(fd);
    return rc;
}

//  --------------------------------------------------------------------------
//  Write registered.json atomically (temp, fsync, rename).

static int
s_index_save(ms_blob_store_t *self, ms_diag_t *diag)
{
    json_t *files = json_array();
    json_t *root = json_pack("{s:i, s:o}", "version", 1, "files", files);
    if (!root)
        return MS_ERR_NOMEM;
    for (size_t i = 0; i < self->n_regs; i++) {
        const s_reg_t *r = &self->regs[i];
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_hex(&r->hash, hex);
        json_t *e = json_pack("{s:s, s:s, s:I, s:I, s:I}", "hash", hex, "path",
                              r->path, "size", (json_int_t) r->size_bytes,
                              "mtime_s", (json_int_t) r->mtime_s, "mtime_ns",
                              (json_int_t) r->mtime_ns);
        if (!e || json_array_append_new(files, e) != 0) {
            json_decref(root);
            return MS_ERR_NOMEM;
        }
    }
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_SORT_KEYS);
    json_decref(root);
    if (!text)
        return MS_ERR_NOMEM;
    size_t n = strlen(text);
    char *tmp = s_join(self->tmp_dir, "registered.json");
    if (!tmp) {
        free(text);
        return MS_ERR_NOMEM;
    }
    int rc = MS_OK;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        rc = ms_diag_set_code(diag, MS_ERR_IO, tmp, "cannot create: %s",
                              strerror(errno));
        goto cleanup;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t) w;
    }
    if (done < n || fsync(fd) != 0) {
        rc = ms_diag_set_code(diag, MS_ERR_IO, tmp, "cannot write: %s",
                              strerror(errno));
        close(fd);
        unlink(tmp);
        goto cleanup;
    }
    close(fd);
    if (rename(tmp, self->index_path) != 0) {
        rc = ms_diag_set_code(diag, MS_ERR_IO, self->index_path,
                              "cannot rename: %s", strerror(errno));
        unlink(tmp);
        goto cleanup;
    }
    s_fsync_dir(self->dir);
cleanup:
    free(tmp);
    free(text);
    return rc;
}

//  --------------------------------------------------------------------------
//  Load registered.json (absent: nothing registered).

static int
s_index_load(ms_blob_store_t *self, ms_diag_t *diag)
{
    struct stat st;
    if (stat(self->index_path, &st) != 0 && errno == ENOENT)
        return MS_OK;
    json_error_t err;
    json_t *root = json_load_file(self->index_path, 0, &err);
    if (!root)
        return ms_diag_set(diag, self->index_path, "line %d: %s", err.line,
                           err.text);
    int rc = MS_OK;
    json_t *files = json_object_get(root, "files");
    if (!json_is_array(files)) {
        rc = ms_diag_set(diag, self->index_path, "\"files\" is not an array");
        goto cleanup;
    }
    size_t i;
    json_t *e;
    json_array_foreach(files, i, e)
    {
        const char *hex = NULL, *path = NULL;
        json_int_t size = -1, ms = -1, mns = -1;
        if (json_unpack(e, "{s:s, s:s, s:I, s:I, s:I}", "hash", &hex, "path",
                        &path, "size", &size, "mtime_s", &ms, "mtime_ns",
                        &mns) != 0 ||
            size < 0 || mns < 0 || mns >= 1000000000 || path[0] == '\0') {
            rc = ms_diag_set(diag, self->index_path,
                             "files[%zu]: needs hash, path, size, mtime_s, "
                             "mtime_ns",
                             i);
            goto cleanup;
        }
        ms_hash_t h;
        if (ms_hash_from_hex(hex, &h) != MS_OK) {
            rc = ms_diag_set(diag, self->index_path,
                             "files[%zu].hash: not 64 hex characters", i);
            goto cleanup;
        }
        if (s_grow((void **) &self->regs, &self->cap_regs, self->n_regs,
                   sizeof(s_reg_t)) != MS_OK) {
            rc = MS_ERR_NOMEM;
            goto cleanup;
        }
        s_reg_t *r = &self->regs[self->n_regs];
        r->path = strdup(path);
        if (!r->path) {
            rc = MS_ERR_NOMEM;
            goto cleanup;
        }
        r->hash = h;
        r->size_bytes = (uint64_t) size;
        r->mtime_s = (int64_t) ms;
        r->mtime_ns = (int64_t) mns;
        self->n_regs++;
    }
cleanup:
    json_decref(root);
    return rc;
}

//  --------------------------------------------------------------------------
//  Remove every file in tmp/ (left by a crash).

static int
s_clean_tmp(ms_blob_store_t *self, ms_diag_t *diag)
{
    DIR *d = opendir(self->tmp_dir);
    if (!d)
        return ms_diag_set_code(diag, MS_ERR_IO, self->tmp_dir,
                                "cannot read: %s", strerror(errno));
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *p = s_join(self->tmp_dir, de->d_name);
        if (p)
            unlink(p);
        free(p);
    }
    closedir(d);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  qsort order of copies by last_used (seeded with mtime at open).

static int
s_cmp_last_used(const void *a, const void *b)
{
    const s_copy_t *x = a, *y = b;
    return (x->last_used > y->last_used) - (x->last_used < y->last_used);
}

//  --------------------------------------------------------------------------
//  List the copies in blobs/; recency from their mtimes.

static int
s_scan_copies(ms_blob_store_t *self, ms_diag_t *diag)
{
    DIR *d = opendir(self->dir);
    if (!d)
        return ms_diag_set_code(diag, MS_ERR_IO, self->dir, "cannot read: %s",
                                strerror(errno));
    int rc = MS_OK;
    struct dirent *de;
    while ((de = readdir(d))) {
        ms_hash_t h;
        char hex[MS_HASH_HEX_LEN + 1];
        if (strlen(de->d_name) != MS_HASH_HEX_LEN ||
            ms_hash_from_hex(de->d_name, &h) != MS_OK)
            continue;
        ms_hash_hex(&h, hex);
        if (strcmp(hex, de->d_name) != 0)
            continue; // upper-case name: not ours
        char *p = s_join(self->dir, de->d_name);
        struct stat st;
        if (!p) {
            rc = MS_ERR_NOMEM;
            break;
        }
        bool ok = stat(p, &st) == 0 && S_ISREG(st.st_mode);
        free(p);
        if (!ok)
            continue;
        if (s_grow((void **) &self->copies, &self->cap_copies, self->n_copies,
                   sizeof(s_copy_t)) != MS_OK) {
            rc = MS_ERR_NOMEM;
            break;
        }
        s_copy_t *c = &self->copies[self->n_copies++];
        c->hash = h;
        c->size_bytes = (uint64_t) st.st_size;
        c->last_used = (uint64_t) st.st_mtim.tv_sec * 1000000000u +
                       (uint64_t) st.st_mtim.tv_nsec;
        self->stats.used_bytes += c->size_bytes;
    }
    closedir(d);
    if (rc != MS_OK)
        return rc;
    if (self->n_copies > 1)
        qsort(self->copies, self->n_copies, sizeof(s_copy_t), s_cmp_last_used);
    for (size_t i = 0; i < self->n_copies; i++)
        self->copies[i].last_used = ++self->clock;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open the store.

int
ms_blob_store_open(ms_blob_store_t **out, const char *data_dir,
                   uint64_t quota_bytes, ms_diag_t *diag)
{
    *out = NULL;
    int rc;
    ms_blob_store_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->quota_bytes = quota_bytes;
    self->dir = s_join(data_dir, "blobs");
    self->tmp_dir = self->dir ? s_join(self->dir, "tmp") : NULL;
    self->index_path = self->dir ? s_join(self->dir, "registered.json") : NULL;
    if (!self->dir || !self->tmp_dir || !self->index_path) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    if ((rc = s_mkdir(data_dir, diag)) != MS_OK ||
        (rc = s_mkdir(self->dir, diag)) != MS_OK ||
        (rc = s_mkdir(self->tmp_dir, diag)) != MS_OK ||
        (rc = s_clean_tmp(self, diag)) != MS_OK ||
        (rc = s_scan_copies(self, diag)) != MS_OK ||
        (rc = s_index_load(self, diag)) != MS_OK)
        goto fail;
    *out = self;
    return MS_OK;
fail:
    ms_blob_store_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free the store.

void
ms_blob_store_destroy(ms_blob_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_blob_store_t *self = *self_p;
    for (size_t i = 0; i < self->n_regs; i++)
        free(self->regs[i].path);
    free(self->regs);
    free(self->copies);
    free(self->pins);
    free(self->dir);
    free(self->tmp_dir);
    free(self->index_path);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Remove registered entry i (and save the index).

static void
s_reg_drop(ms_blob_store_t *self, size_t i)
{
    free(self->regs[i].path);
    self->regs[i] = self->regs[--self->n_regs];
    s_index_save(self, NULL);
}

//  --------------------------------------------------------------------------
//  Re-check registered entry i by size + mtime, re-hash when changed.
//  True when it still holds its hash; dropped (false) otherwise.

static bool
s_reg_valid(ms_blob_store_t *self, size_t i)
{
    s_reg_t *r = &self->regs[i];
    struct stat st;
    if (stat(r->path, &st) != 0 || !S_ISREG(st.st_mode)) {
        s_reg_drop(self, i);
        return false;
    }
    if ((uint64_t) st.st_size == r->size_bytes &&
        (int64_t) st.st_mtim.tv_sec == r->mtime_s &&
        (int64_t) st.st_mtim.tv_nsec == r->mtime_ns)
        return true;
    self->stats.rehashes++;
    ms_hash_t h;
    if (ms_hash_file(r->path, &h, NULL) != MS_OK ||
        !ms_hash_equal(&h, &r->hash)) {
        s_reg_drop(self, i);
        return false;
    }
    r->size_bytes = (uint64_t) st.st_size;
    r->mtime_s = (int64_t) st.st_mtim.tv_sec;
    r->mtime_ns = (int64_t) st.st_mtim.tv_nsec;
    s_index_save(self, NULL);
    return true;
}

//  --------------------------------------------------------------------------
//  Index of a valid registered file for hash, or -1.

static ssize_t
s_reg_lookup(ms_blob_store_t *self, const ms_hash_t *hash)
{
    ssize_t i = s_reg_find(self, hash);
    if (i >= 0 && !s_reg_valid(self, (size_t) i))
        return -1;
    return i;
}

//  --------------------------------------------------------------------------
//  Register an existing local file by hash.

int
ms_blob_store_register_file(ms_blob_store_t *self, const char *path,
                            ms_hash_t *hash, ms_diag_t *diag)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot stat: %s",
                                strerror(errno));
    if (!S_ISREG(st.st_mode))
        return ms_diag_set(diag, path, "not a regular file");
    ms_hash_t h;
    int rc = ms_hash_file(path, &h, diag);
    if (rc != MS_OK)
        return rc;
    //  Drop an older entry for the same path or the same hash.
    for (size_t i = 0; i < self->n_regs;) {
        if (strcmp(self->regs[i].path, path) == 0 ||
            ms_hash_equal(&self->regs[i].hash, &h)) {
            free(self->regs[i].path);
            self->regs[i] = self->regs[--self->n_regs];
        } else
            i++;
    }
    if (s_grow((void **) &self->regs, &self->cap_regs, self->n_regs,
               sizeof(s_reg_t)) != MS_OK)
        return MS_ERR_NOMEM;
    s_reg_t *r = &self->regs[self->n_regs];
    r->path = strdup(path);
    if (!r->path)
        return MS_ERR_NOMEM;
    r->hash = h;
    r->size_bytes = (uint64_t) st.st_size;
    r->mtime_s = (int64_t) st.st_mtim.tv_sec;
    r->mtime_ns = (int64_t) st.st_mtim.tv_nsec;
    self->n_regs++;
    rc = s_index_save(self, diag);
    if (rc != MS_OK)
        return rc;
    if (hash)
        *hash = h;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Register the four files of a built-in dataset.

int
ms_blob_store_register_builtin(ms_blob_store_t *self, const char *name,
                               ms_hash_t hashes[4], ms_diag_t *diag)
{
    char *paths[4] = {NULL, NULL, NULL, NULL};
    int rc = ms_dataset_builtin_paths(name, &paths[0], &paths[1], &paths[2],
                                      &paths[3], diag);
    for (int i = 0; rc == MS_OK && i < 4; i++)
        rc = ms_blob_store_register_file(self, paths[i],
                                         hashes ? &hashes[i] : NULL, diag);
    for (int i = 0; i < 4; i++)
        free(paths[i]);
    return rc;
}

//  --------------------------------------------------------------------------
//  True when the blob is held.

bool
ms_blob_store_has(ms_blob_store_t *self, const ms_hash_t *hash)
{
    return s_copy_find(self, hash) >= 0 || s_reg_lookup(self, hash) >= 0;
}

//  --------------------------------------------------------------------------
//  Size of a held blob.

int
ms_blob_store_size(ms_blob_store_t *self, const ms_hash_t *hash, uint64_t *size)
{
    ssize_t i = s_copy_find(self, hash);
    if (i >= 0) {
        *size = self->copies[i].size_bytes;
        return MS_OK;
    }
    i = s_reg_lookup(self, hash);
    if (i < 0)
        return MS_ERR_NOTFOUND;
    *size = self->regs[i].size_bytes;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Local path of a held blob; marks it used.

int
ms_blob_store_path(ms_blob_store_t *self, const ms_hash_t *hash, char **path)
{
    *path = NULL;
    ssize_t i = s_copy_find(self, hash);
    if (i >= 0) {
        self->copies[i].last_used = ++self->clock;
        *path = s_copy_path(self, hash);
        if (!*path)
            return MS_ERR_NOMEM;
        utimensat(AT_FDCWD, *path, NULL, 0); // recency survives a restart
        return MS_OK;
    }
    i = s_reg_lookup(self, hash);
    if (i < 0)
        return MS_ERR_NOTFOUND;
    *path = strdup(self->regs[i].path);
    return *path ? MS_OK : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  pread exactly len bytes at offset from path.

static int
s_pread_file(const char *path, uint64_t offset, size_t len, void *buf)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return MS_ERR_IO;
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(fd, (uint8_t *) buf + done, len - done,
                          (off_t) (offset + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t) r;
    }
    close(fd);
    return done == len ? MS_OK : MS_ERR_IO;
}

//  --------------------------------------------------------------------------
//  Read part of a held blob.

int
ms_blob_store_read(ms_blob_store_t *self, const ms_hash_t *hash,
                   uint64_t offset, size_t len, void *buf)
{
    ssize_t i = s_copy_find(self, hash);
    if (i >= 0) {
        s_copy_t *c = &self->copies[i];
        if (offset > c->size_bytes || len > c->size_bytes - offset)
            return MS_ERR_RANGE;
        c->last_used = ++self->clock;
        char *p = s_copy_path(self, hash);
        if (!p)
            return MS_ERR_NOMEM;
        int rc = s_pread_file(p, offset, len, buf);
        free(p);
        return rc;
    }
    i = s_reg_lookup(self, hash);
    if (i < 0)
        return MS_ERR_NOTFOUND;
    s_reg_t *r = &self->regs[i];
    if (offset > r->size_bytes || len > r->size_bytes - offset)
        return MS_ERR_RANGE;
    return s_pread_file(r->path, offset, len, buf);
}

//  --------------------------------------------------------------------------
//  Evict LRU unpinned copies until need more bytes fit in the quota.

static int
s_make_room(ms_blob_store_t *self, uint64_t need)
{
    if (self->quota_bytes == 0)
        return MS_OK;
    if (need > self->quota_bytes)
        return MS_ERR_STORE_FULL;
    while (self->stats.used_bytes + need > self->quota_bytes) {
        ssize_t victim = -1;
        for (size_t i = 0; i < self->n_copies; i++) {
            if (s_pin_count(self, &self->copies[i].hash) > 0)
                continue;
            if (victim < 0 ||
                self->copies[i].last_used < self->copies[victim].last_used)
                victim = (ssize_t) i;
        }
        if (victim < 0)
            return MS_ERR_STORE_FULL;
        char *p = s_copy_path(self, &self->copies[victim].hash);
        if (!p)
            return MS_ERR_NOMEM;
        if (unlink(p) != 0 && errno != ENOENT) {
            free(p);
            return MS_ERR_IO;
        }
        free(p);
        self->stats.used_bytes -= self->copies[victim].size_bytes;
        self->copies[victim] = self->copies[--self->n_copies];
        self->stats.evictions++;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Create a temp file for a blob being written.

int
ms_blob_store_tmp_create(ms_blob_store_t *self, uint64_t size, int *fd,
                         char **tmp_path)
{
    *fd = -1;
    *tmp_path = NULL;
    if (self->quota_bytes && size > self->quota_bytes)
        return MS_ERR_STORE_FULL;
    char *p = s_join(self->tmp_dir, "blob-XXXXXX");
    if (!p)
        return MS_ERR_NOMEM;
    int f = mkstemp(p);
    if (f < 0) {
        free(p);
        return MS_ERR_IO;
    }
    if (ftruncate(f, (off_t) size) != 0) {
        close(f);
        unlink(p);
        free(p);
        return MS_ERR_IO;
    }
    *fd = f;
    *tmp_path = p;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Verify a complete temp file and rename it to its hash.

int
ms_blob_store_tmp_commit(ms_blob_store_t *self, const ms_hash_t *hash,
                         const char *tmp_path)
{
    int rc = MS_OK;
    char *dst = NULL;
    int fd = open(tmp_path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fsync(fd) != 0 || fstat(fd, &st) != 0) {
        rc = MS_ERR_IO;
        goto fail;
    }
    close(fd);
    fd = -1;
    ms_hash_t h;
    if ((rc = ms_hash_file(tmp_path, &h, NULL)) != MS_OK)
        goto fail;
    if (!ms_hash_equal(&h, hash)) {
        self->stats.mismatches++;
        rc = MS_ERR_INVALID;
        goto fail;
    }
    if (s_copy_find(self, hash) >= 0) { // held already: keep the old copy
        unlink(tmp_path);
        return MS_OK;
    }
    if ((rc = s_make_room(self, (uint64_t) st.st_size)) != MS_OK)
        goto fail;
    if (s_grow((void **) &self->copies, &self->cap_copies, self->n_copies,
               sizeof(s_copy_t)) != MS_OK) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    dst = s_copy_path(self, hash);
    if (!dst) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    if (rename(tmp_path, dst) != 0) {
        rc = MS_ERR_IO;
        goto fail;
    }
    s_fsync_dir(self->dir);
    free(dst);
    s_copy_t *c = &self->copies[self->n_copies++];
    c->hash = *hash;
    c->size_bytes = (uint64_t) st.st_size;
    c->last_used = ++self->clock;
    self->stats.used_bytes += c->size_bytes;
    self->stats.commits++;
    return MS_OK;
fail:
    if (fd >= 0)
        close(fd);
    free(dst);
    unlink(tmp_path);
    return rc;
}

//  --------------------------------------------------------------------------
//  Remove a temp file.

void
ms_blob_store_tmp_discard(ms_blob_store_t *self, const char *tmp_path)
{
    (void) self;
    if (tmp_path)
        unlink(tmp_path);
}

//  --------------------------------------------------------------------------
//  Store bytes as a blob.

int
ms_blob_store_put(ms_blob_store_t *self, const void *data, size_t n,
                  ms_hash_t *hash)
{
    ms_hash_t h;
    ms_hash_bytes(data, n, &h);
    if (hash)
        *hash = h;
    if (ms_blob_store_has(self, &h))
        return MS_OK;
    int fd;
    char *tmp;
    int rc = ms_blob_store_tmp_create(self, n, &fd, &tmp);
    if (rc != MS_OK)
        return rc;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, (const uint8_t *) data + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t) w;
    }
    close(fd);
    if (done < n) {
        unlink(tmp);
        free(tmp);
        return MS_ERR_IO;
    }
    rc = ms_blob_store_tmp_commit(self, &h, tmp);
    free(tmp);
    return rc;
}

//  --------------------------------------------------------------------------
//  Pin a blob (counted).

int
ms_blob_store_pin(ms_blob_store_t *self, const ms_hash_t *hash)
{
    for (size_t i = 0; i < self->n_pins; i++)
        if (ms_hash_equal(&self->pins[i].hash, hash)) {
            self->pins[i].count++;
            return MS_OK;
        }
    if (s_grow((void **) &self->pins, &self->cap_pins, self->n_pins,
               sizeof(s_pin_t)) != MS_OK)
        return MS_ERR_NOMEM;
    self->pins[self->n_pins].hash = *hash;
    self->pins[self->n_pins].count = 1;
    self->n_pins++;
    ssize_t c = s_copy_find(self, hash);
    if (c >= 0)
        self->copies[c].last_used = ++self->clock;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Unpin a blob.

int
ms_blob_store_unpin(ms_blob_store_t *self, const ms_hash_t *hash)
{
    for (size_t i = 0; i < self->n_pins; i++)
        if (ms_hash_equal(&self->pins[i].hash, hash)) {
            if (--self->pins[i].count == 0)
                self->pins[i] = self->pins[--self->n_pins];
            return MS_OK;
        }
    return MS_ERR_NOTFOUND;
}

//  --------------------------------------------------------------------------
//  Copy the counters.

void
ms_blob_store_stats(ms_blob_store_t *self, ms_blob_store_stats_t *out)
{
    *out = self->stats;
    out->quota_bytes = self->quota_bytes;
    out->n_copies = self->n_copies;
    out->n_registered = self->n_regs;
}
