/*  =========================================================================
    ms_dataset - labelled data in memory: IDX and CSV loaders, scaling,
    validation split, built-in dataset names

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    How the loaders work, and why this way (DESIGN.md "The training
    engine", Data):

    Memory. A worker's peak RSS must stay within twice the dataset as
    float32 (plus model and a margin), so a loader never holds the file,
    a byte copy and the float array at once. IDX pixels are read through
    zlib (gzread reads raw files too, transparently) in 1 MiB chunks that
    are converted straight into the float array. For a raw file the size
    on disk is compared with the header before anything big is allocated,
    so a truncated or padded file is refused at once. For a gzip file the
    uncompressed size is not known in advance, and a damaged or hostile
    header may claim terabytes, so the float array grows geometrically as
    data really arrives (glibc moves big blocks with mremap, no copy) up
    to what the header claims. CSV rows are parsed one line at a time
    by libcsv (ms_dataset_csv.c) into arrays that grow the same way; the
    text is never held whole.

    Errors. Every refusal names the file: IDX errors put the path in
    diag.where and say what (bad magic, type, dimensions, truncation with
    the byte counts, trailing bytes, corrupt gzip, counts that differ,
    labels out of range). CSV errors put "PATH:LINE" in diag.where (line
    numbers count every physical line, the header is line 1) and the
    reason, naming the column where one is at fault. A CRC or length
    error of a gzip member surfaces only when zlib reaches the member's
    end, so after the expected bytes the loader always asks for one more
    byte: that both finds trailing bytes and checks the CRC.

    Unit scaling. For 8-bit IDX data the loader keeps pixel values 0..255
    as floats and remembers (in the private owner_ record) that the range
    is the byte range; unit scaling then computes (x - 0) / 255.0f, which
    is bit-identical to x / 255.0f whatever the actual min and max of the
    training rows. Other data use the train minimum and maximum over the
    whole array. Standard scaling accumulates per-feature mean and
    variance (population, as scikit-learn's StandardScaler) in double, in
    blocks of features so no allocation is needed.

    Split. A permutation of 0..n-1 is drawn from ms_rng seeded with
    (seed, MS_DATASET_RNG_STREAM_SPLIT), so it depends on seed and n only;
    rows are copied into two new datasets and the source is untouched (a
    worker caches one pristine copy across tasks).

    Not done: IDX element types other than unsigned byte (the MNIST family uses
    only those), and memory-mapping raw files (the data must become
    float32 anyway).
*/
#include "ms_dataset.h"
#include "ms_dataset_internal.h"
#include "ms_rng.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define S_CHUNK_BYTES (1 << 20)         // IDX read chunk
#define S_GROW_START (16 * 1024 * 1024) // first capacity (elements)
#define S_SYSTEM_DIR "/usr/share/datasets"

typedef ms_dataset_owner_t s_owner_t;

//  --------------------------------------------------------------------------
//  Allocate a zero-filled dataset; NULL on out of memory.

ms_dataset_t *
ms_dataset_new(int64_t n_samples, int32_t n_features, int32_t n_classes)
{
    ms_dataset_t *self = calloc(1, sizeof *self);
    s_owner_t *owner = calloc(1, sizeof *owner);
    if (!self || !owner) {
        free(self);
        free(owner);
        return NULL;
    }
    self->owner_ = owner;
    self->n_samples = n_samples;
    self->n_features = n_features;
    self->n_classes = n_classes >= 2 ? n_classes : 0;
    if (n_samples > 0) {
        self->x =
            calloc((size_t) n_samples * (size_t) n_features, sizeof(float));
        if (self->n_classes)
            self->labels = calloc((size_t) n_samples, sizeof(int32_t));
        else
            self->targets = calloc((size_t) n_samples, sizeof(float));
        if (!self->x || (!self->labels && !self->targets))
            ms_dataset_destroy(&self);
    }
    return self;
}

//  --------------------------------------------------------------------------
//  Free a dataset.

void
ms_dataset_destroy(ms_dataset_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_dataset_t *self = *self_p;
    free(self->x);
    free(self->labels);
    free(self->targets);
    s_owner_t *owner = self->owner_;
    if (owner)
        ms_dataset_encoding_release(&owner->encoding);
    free(self->owner_);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Bytes held by the arrays.

int64_t
ms_dataset_bytes(const ms_dataset_t *self)
{
    if (!self)
        return 0;
    int64_t n = self->n_samples;
    int64_t bytes = n * self->n_features * (int64_t) sizeof(float);
    if (self->labels)
        bytes += n * (int64_t) sizeof(int32_t);
    if (self->targets)
        bytes += n * (int64_t) sizeof(float);
    return bytes;
}

//  --------------------------------------------------------------------------
//  Whether a dataset's values are raw bytes (0..255).

static bool
s_byte_range(const ms_dataset_t *self)
{
    const s_owner_t *owner = self->owner_;
    return owner && owner->byte_range;
}

//  --------------------------------------------------------------------------
//  Mark a dataset's values as raw bytes or not.

static void
s_set_byte_range(ms_dataset_t *self, bool on)
{
    s_owner_t *owner = self->owner_;
    if (owner)
        owner->byte_range = on;
}

//  ==========================================================================
//  IDX

//  One IDX file being read.
typedef struct {
    const char *path;  // for diagnostics (borrowed)
    gzFile gz;         // zlib handle (raw files read transparently)
    int64_t file_size; // bytes on disk
    int64_t offset;    // uncompressed bytes consumed so far
    bool direct;       // not compressed
    bool cut;          // gzip stream ended before its trailer
} s_idx_t;

//  --------------------------------------------------------------------------
//  Open an IDX file (raw or gzip).

static int
s_idx_open(s_idx_t *f, const char *path, ms_diag_t *diag)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot open: %s",
                                strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot read: %s",
                                strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot read: %s",
                                S_ISDIR(st.st_mode) ? "is a directory"
                                                    : "not a regular file");
    }
    f->file_size = (int64_t) st.st_size;
    f->gz = gzdopen(fd, "rb");
    if (!f->gz) {
        close(fd);
        return ms_diag_set_code(diag, MS_ERR_NOMEM, path,
                                "cannot allocate a zlib reader");
    }
    gzbuffer(f->gz, 256 * 1024);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Close an IDX file.

static void
s_idx_close(s_idx_t *f)
{
    if (f->gz)
        gzclose(f->gz);
    f->gz = NULL;
}

//  --------------------------------------------------------------------------
//  Read up to len bytes; *got is what came. Fails only on a read or
//  decompression error (a short read at the end is not an error here).

static int
s_idx_read(s_idx_t *f, void *buf, size_t len, size_t *got, ms_diag_t *diag)
{
    *got = 0;
    while (*got < len) {
        size_t want = len - *got;
        if (want > S_CHUNK_BYTES)
            want = S_CHUNK_BYTES;
        int n = gzread(f->gz, (char *) buf + *got, (unsigned) want);
        int errnum = Z_OK;
        const char *msg = gzerror(f->gz, &errnum);
        //  zlib prefixes "<fd:N>: " (its name for a gzdopen'ed file).
        const char *cut = msg && msg[0] == '<' ? strstr(msg, ">: ") : NULL;
        if (cut)
            msg = cut + 3;
        if (n < 0 || (errnum != Z_OK && errnum != Z_BUF_ERROR)) {
            if (errnum == Z_ERRNO)
                return ms_diag_set_code(diag, MS_ERR_IO, f->path,
                                        "read failed at byte %lld: %s",
                                        (long long) f->offset, strerror(errno));
            if (errnum == Z_MEM_ERROR)
                return ms_diag_set_code(diag, MS_ERR_NOMEM, f->path,
                                        "out of memory in zlib");
            return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                    "corrupt gzip stream after %lld "
                                    "uncompressed bytes: %s",
                                    (long long) f->offset,
                                    msg ? msg : "unknown zlib error");
        }
        if (errnum == Z_BUF_ERROR)
            f->cut = true; // "unexpected end of file" in a gzip member
        *got += (size_t) n;
        f->offset += n;
        if ((size_t) n < want)
            break;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read and check an IDX header: unsigned-byte data of want_dims
//  dimensions. what is "image" or "label" (for messages).

static int
s_idx_header(s_idx_t *f, int want_dims, const char *what, uint32_t *dims,
             ms_diag_t *diag)
{
    unsigned char magic[4];
    size_t got;
    int rc = s_idx_read(f, magic, 4, &got, diag);
    if (rc)
        return rc;
    if (got < 4)
        return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                "truncated header: expected 4 bytes of "
                                "magic number, got %zu%s",
                                got, f->cut ? " (gzip stream cut short)" : "");
    f->direct = gzdirect(f->gz) != 0;
    unsigned magic_word = (unsigned) magic[0] << 24 |
                          (unsigned) magic[1] << 16 | (unsigned) magic[2] << 8 |
                          magic[3];
    unsigned want_magic = 0x0800u | (unsigned) want_dims;
    if (magic[0] != 0 || magic[1] != 0 || magic[3] == 0 || magic[3] > 8)
        return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                "bad magic number 0x%08x: not an IDX file "
                                "(expected 0x%08x for an IDX %s file)",
                                magic_word, want_magic, what);
    if (magic[2] != 0x08) {
        const char *type = magic[2] == 0x09   ? "signed byte"
                           : magic[2] == 0x0B ? "int16"
                           : magic[2] == 0x0C ? "int32"
                           : magic[2] == 0x0D ? "float32"
                           : magic[2] == 0x0E ? "float64"
                                              : "unknown";
        return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                "IDX data type 0x%02x (%s) is not "
                                "supported: expected 0x08 (unsigned byte)",
                                magic[2], type);
    }
    if (magic[3] != want_dims)
        return ms_diag_set_code(
            diag, MS_ERR_DATASET, f->path,
            "IDX file has %d dimension%s, expected %d for %s %s file%s",
            magic[3], magic[3] == 1 ? "" : "s", want_dims,
            what[0] == 'i' ? "an" : "a", what,
            want_dims == 3 && magic[3] == 1   ? " (is this a label file?)"
            : want_dims == 1 && magic[3] == 3 ? " (is this an image file?)"
                                              : "");
    unsigned char sizes[4 * 3];
    size_t need = 4 * (size_t) want_dims;
    rc = s_idx_read(f, sizes, need, &got, diag);
    if (rc)
        return rc;
    if (got < need)
        return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                "truncated header: expected %zu bytes of "
                                "dimension sizes, got %zu",
                                need, got);
    for (int i = 0; i < want_dims; i++) {
        const unsigned char *b = sizes + 4 * i;
        dims[i] = (uint32_t) b[0] << 24 | (uint32_t) b[1] << 16 |
                  (uint32_t) b[2] << 8 | b[3];
        if (dims[i] == 0)
            return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                    "IDX dimension %d is 0: the file holds "
                                    "no %ss",
                                    i, what);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  For a raw file, compare the size on disk with what the header says,
//  before allocating anything.

static int
s_idx_check_size(const s_idx_t *f, int64_t payload, const char *what,
                 ms_diag_t *diag)
{
    if (!f->direct)
        return MS_OK;
    int64_t have = f->file_size - f->offset;
    if (have < payload)
        return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                "truncated: expected %lld bytes of %s, "
                                "got %lld",
                                (long long) payload, what, (long long) have);
    if (have > payload)
        return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                                "trailing garbage: %lld bytes after the "
                                "expected %lld bytes of %s",
                                (long long) (have - payload),
                                (long long) payload, what);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Check nothing follows the payload (also makes zlib verify the CRC).

static int
s_idx_expect_end(s_idx_t *f, const char *what, ms_diag_t *diag)
{
    unsigned char extra[4096];
    size_t got;
    int64_t end = f->offset;
    int rc = s_idx_read(f, extra, sizeof extra, &got, diag);
    if (rc)
        return rc;
    if (got == 0)
        return MS_OK;
    int64_t count = (int64_t) got;
    while (got == sizeof extra) {
        rc = s_idx_read(f, extra, sizeof extra, &got, diag);
        if (rc)
            return rc;
        count += (int64_t) got;
    }
    return ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                            "trailing garbage: %lld bytes after the last "
                            "%s (byte offset %lld)",
                            (long long) count, what, (long long) end);
}

//  --------------------------------------------------------------------------
//  Read count payload bytes into an array of 4-byte elements (floats when
//  as_float, else int32), growing it as data arrives. *out is malloc'd.

static int
s_idx_read_payload(s_idx_t *f, int64_t count, bool as_float, void **out,
                   const char *what, ms_diag_t *diag)
{
    *out = NULL;
    unsigned char *chunk = malloc(S_CHUNK_BYTES);
    int64_t cap = f->direct || count < S_GROW_START ? count : S_GROW_START;
    void *arr = malloc((size_t) cap * 4);
    if (!chunk || !arr) {
        free(chunk);
        free(arr);
        return ms_diag_set_code(diag, MS_ERR_NOMEM, f->path,
                                "cannot allocate %lld bytes for the %ss",
                                (long long) count * 4, what);
    }
    int64_t done = 0;
    int rc = MS_OK;
    while (done < count) {
        size_t want = (size_t) (count - done < S_CHUNK_BYTES ? count - done
                                                             : S_CHUNK_BYTES);
        size_t got;
        rc = s_idx_read(f, chunk, want, &got, diag);
        if (rc || got == 0)
            break;
        if (done + (int64_t) got > cap) {
            int64_t new_cap = cap * 2 < count ? cap * 2 : count;
            void *grown = realloc(arr, (size_t) new_cap * 4);
            if (!grown) {
                rc = ms_diag_set_code(diag, MS_ERR_NOMEM, f->path,
                                      "cannot allocate %lld bytes for the "
                                      "%ss",
                                      (long long) new_cap * 4, what);
                break;
            }
            arr = grown;
            cap = new_cap;
        }
        if (as_float) {
            float *dst = (float *) arr + done;
            for (size_t i = 0; i < got; i++)
                dst[i] = (float) chunk[i];
        } else {
            int32_t *dst = (int32_t *) arr + done;
            for (size_t i = 0; i < got; i++)
                dst[i] = chunk[i];
        }
        done += (int64_t) got;
        if (got < want)
            break;
    }
    free(chunk);
    if (rc == MS_OK && done < count)
        rc = ms_diag_set_code(diag, MS_ERR_DATASET, f->path,
                              "truncated%s: expected %lld bytes of %ss, "
                              "got %lld",
                              f->cut ? " gzip stream" : "", (long long) count,
                              what, (long long) done);
    if (rc) {
        free(arr);
        return rc;
    }
    *out = arr;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Load an IDX image file and its label file.

int
ms_dataset_load_idx(ms_dataset_t **out, const char *images_path,
                    const char *labels_path, ms_diag_t *diag)
{
    *out = NULL;
    s_idx_t img, lab;
    ms_dataset_t *self = NULL;
    memset(&lab, 0, sizeof lab);
    uint32_t idims[3], ldims[1];
    int rc = s_idx_open(&img, images_path, diag);
    if (rc)
        return rc;
    rc = s_idx_header(&img, 3, "image", idims, diag);
    if (rc)
        goto fail;
    rc = labels_path ? s_idx_open(&lab, labels_path, diag) : MS_OK;
    if (rc)
        goto fail;
    rc = labels_path ? s_idx_header(&lab, 1, "label", ldims, diag) : MS_OK;
    if (rc)
        goto fail;
    if (labels_path && ldims[0] != idims[0]) {
        rc = ms_diag_set_code(diag, MS_ERR_DATASET, labels_path,
                              "holds %u labels but the image file %s holds "
                              "%u images",
                              ldims[0], images_path, idims[0]);
        goto fail;
    }
    int64_t n = idims[0];
    int64_t n_features = (int64_t) idims[1] * idims[2];
    if (n_features > INT32_MAX) {
        rc = ms_diag_set_code(diag, MS_ERR_DATASET, images_path,
                              "images of %u x %u pixels are too large",
                              idims[1], idims[2]);
        goto fail;
    }
    rc = labels_path ? s_idx_check_size(&lab, n, "labels", diag) : MS_OK;
    if (rc == MS_OK)
        rc = s_idx_check_size(&img, n * n_features, "pixels", diag);
    if (rc)
        goto fail;

    self = ms_dataset_new(0, (int32_t) n_features, 0);
    if (!self) {
        rc = MS_ERR_NOMEM;
        goto fail;
    }
    self->n_samples = n;
    if (!labels_path) // the images alone: unlabelled rows
        goto pixels;
    //  Labels first: they are small, and a bad label file is then
    //  reported before the big pixel array is read.
    void *labels = NULL;
    rc = s_idx_read_payload(&lab, n, false, &labels, "label", diag);
    if (rc)
        goto fail;
    self->labels = labels;
    self->n_samples = n;
    rc = s_idx_expect_end(&lab, "label", diag);
    if (rc)
        goto fail;
    int32_t max_label = 0;
    for (int64_t i = 0; i < n; i++) {
        if (self->labels[i] > 254) {
            rc = ms_diag_set_code(diag, MS_ERR_DATASET, labels_path,
                                  "label %d of record %lld is out of range "
                                  "(at most 254)",
                                  self->labels[i], (long long) i);
            goto fail;
        }
        if (self->labels[i] > max_label)
            max_label = self->labels[i];
    }
    self->n_classes = max_label + 1 < 2 ? 2 : max_label + 1;
    s_idx_close(&lab);

pixels:;
    void *x = NULL;
    rc = s_idx_read_payload(&img, n * n_features, true, &x, "pixel", diag);
    if (rc)
        goto fail;
    self->x = x;
    rc = s_idx_expect_end(&img, "image", diag);
    if (rc)
        goto fail;
    s_idx_close(&img);
    s_set_byte_range(self, true);
    *out = self;
    return MS_OK;

fail:
    s_idx_close(&img);
    s_idx_close(&lab);
    ms_dataset_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Load IDX (when labels_path is given) or CSV.

char *
ms_dataset_idx_labels_path(const char *images_path)
{
    const char *hit = images_path ? strstr(images_path, "images-idx3") : NULL;
    if (!hit)
        return NULL;
    char *out = strdup(images_path);
    if (out)
        memcpy(out + (hit - images_path), "labels-idx1", 11);
    return out;
}

//  --------------------------------------------------------------------------
//  IDX or CSV, for a dataset of two files (the one format rule).

bool
ms_dataset_idx_pair(const char *train_path, const char *test_path,
                    char **train_labels, char **test_labels)
{
    *train_labels = ms_dataset_idx_labels_path(train_path);
    *test_labels = ms_dataset_idx_labels_path(test_path);
    if (*train_labels && *test_labels)
        return true;
    free(*train_labels);
    free(*test_labels);
    *train_labels = *test_labels = NULL;
    return false;
}

//  --------------------------------------------------------------------------
//  Load either format by looking at the file.

int
ms_dataset_load(ms_dataset_t **out, const char *path, const char *labels_path,
                const char *label_column, ms_diag_t *diag)
{
    if (labels_path)
        return ms_dataset_load_idx(out, path, labels_path, diag);
    *out = NULL;
    //  An IDX file given alone would fail as CSV with a confusing
    //  message; say what is missing instead.
    FILE *file = fopen(path, "rbe");
    if (file) {
        unsigned char head[4] = {0xff, 0xff, 0xff, 0xff};
        size_t got = fread(head, 1, 4, file);
        fclose(file);
        if (got == 4 && head[0] == 0 && head[1] == 0 && head[2] == 0x08)
            return ms_diag_set_code(diag, MS_ERR_DATASET, path,
                                    "is an IDX file: give its labels file "
                                    "too");
    }
    return ms_dataset_load_csv(out, path, label_column, diag);
}

//  ==========================================================================
//  Built-in datasets

//  A built-in dataset and where Debian ships it.
typedef struct {
    const char *name;    // as written in a spec
    const char *package; // Debian package, or NULL when none exists
    int32_t n_classes;   // classes of the labels
} s_builtin_t;

static const s_builtin_t s_builtins[] = {
    {"fashion-mnist", "dataset-fashion-mnist", 10},
    {"mnist", NULL, 10},
};

//  File names inside a built-in dataset's folder, in out-pointer order.
static const char *const s_builtin_files[4] = {
    "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

//  --------------------------------------------------------------------------
//  Find a readable regular file DIR/BASE.gz or DIR/BASE; malloc'd or NULL.

static char *
s_find_file(const char *dir, const char *base)
{
    const char *suffix[2] = {".gz", ""};
    for (int i = 0; i < 2; i++) {
        size_t len = strlen(dir) + strlen(base) + 8;
        char *path = malloc(len);
        if (!path)
            return NULL;
        snprintf(path, len, "%s/%s%s", dir, base, suffix[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return path;
        free(path);
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Find all four files of a dataset in dir; MS_OK or MS_ERR_NOTFOUND.

static int
s_find_all(const char *dir, char *paths[4])
{
    for (int i = 0; i < 4; i++) {
        paths[i] = s_find_file(dir, s_builtin_files[i]);
        if (!paths[i]) {
            for (int j = 0; j < i; j++) {
                free(paths[j]);
                paths[j] = NULL;
            }
            return MS_ERR_NOTFOUND;
        }
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Look up a built-in name; NULL when unknown.

static const s_builtin_t *
s_builtin(const char *name)
{
    for (size_t i = 0; i < sizeof s_builtins / sizeof s_builtins[0]; i++)
        if (strcmp(name, s_builtins[i].name) == 0)
            return &s_builtins[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Resolve a built-in dataset to its four files.

int
ms_dataset_builtin_paths(const char *name, char **train_images,
                         char **train_labels, char **test_images,
                         char **test_labels, ms_diag_t *diag)
{
    char **outs[4] = {train_images, train_labels, test_images, test_labels};
    for (int i = 0; i < 4; i++)
        *outs[i] = NULL;
    const s_builtin_t *b = s_builtin(name);
    if (!b) {
        char known[256] = "";
        for (size_t i = 0; i < sizeof s_builtins / sizeof s_builtins[0]; i++)
            snprintf(known + strlen(known), sizeof known - strlen(known),
                     "%s%s", i ? ", " : "", s_builtins[i].name);
        return ms_diag_set_code(diag, MS_ERR_INVALID, "dataset",
                                "unknown built-in dataset \"%s\": known "
                                "ones are %s (or give {train: PATH, test: "
                                "PATH})",
                                name, known);
    }
    char paths[2][MS_DIAG_WHERE_MAX];
    int n_dirs = 0;
    const char *env = getenv("MESHSWEEP_DATASETS_DIR");
    if (env && *env)
        snprintf(paths[n_dirs++], sizeof paths[0], "%s/%s", env, name);
    snprintf(paths[n_dirs++], sizeof paths[0], "%s/%s", S_SYSTEM_DIR, name);
    char *found[4];
    for (int d = 0; d < n_dirs; d++) {
        if (s_find_all(paths[d], found) == MS_OK) {
            for (int i = 0; i < 4; i++)
                *outs[i] = found[i];
            return MS_OK;
        }
    }
    char searched[2 * MS_DIAG_WHERE_MAX + 8];
    snprintf(searched, sizeof searched, "%s%s%s", n_dirs == 2 ? paths[0] : "",
             n_dirs == 2 ? " or " : "", paths[n_dirs - 1]);
    if (b->package)
        return ms_diag_set_code(diag, MS_ERR_NOTFOUND, "",
                                "dataset \"%s\" not found in %s: install the "
                                "Debian package %s (apt-get install %s)",
                                name, searched, b->package, b->package);
    return ms_diag_set_code(diag, MS_ERR_NOTFOUND, "",
                            "dataset \"%s\" not found in %s: Debian has no "
                            "package for it today; put %s.gz, %s.gz, %s.gz "
                            "and %s.gz there",
                            name, searched, s_builtin_files[0],
                            s_builtin_files[1], s_builtin_files[2],
                            s_builtin_files[3]);
}

//  --------------------------------------------------------------------------
//  Load a built-in dataset's train and test sets.

int
ms_dataset_load_builtin(const char *name, ms_dataset_t **train,
                        ms_dataset_t **test, ms_diag_t *diag)
{
    *train = NULL;
    *test = NULL;
    char *p[4] = {NULL, NULL, NULL, NULL};
    int rc = ms_dataset_builtin_paths(name, &p[0], &p[1], &p[2], &p[3], diag);
    if (rc)
        return rc;
    const s_builtin_t *b = s_builtin(name);
    rc = ms_dataset_load_idx(train, p[0], p[1], diag);
    if (rc == MS_OK)
        rc = ms_dataset_check(*train, p[1], b->n_classes, diag);
    if (rc == MS_OK)
        rc = ms_dataset_load_idx(test, p[2], p[3], diag);
    if (rc == MS_OK)
        rc = ms_dataset_check(*test, p[3], b->n_classes, diag);
    if (rc == MS_OK && (*test)->n_features != (*train)->n_features)
        rc = ms_diag_set_code(diag, MS_ERR_DATASET, p[2],
                              "test images have %d pixels, the training "
                              "images (%s) %d",
                              (*test)->n_features, p[0], (*train)->n_features);
    if (rc == MS_OK) {
        (*train)->n_classes = b->n_classes;
        (*test)->n_classes = b->n_classes;
    } else {
        ms_dataset_destroy(train);
        ms_dataset_destroy(test);
    }
    for (int i = 0; i < 4; i++)
        free(p[i]);
    return rc;
}

//  ==========================================================================
//  Checks, scaling, split

//  --------------------------------------------------------------------------
//  Check labels and features.

int
ms_dataset_check(const ms_dataset_t *self, const char *name,
                 int32_t n_classes_expected, ms_diag_t *diag)
{
    if (!name)
        name = "dataset";
    int32_t limit = self->n_classes;
    if (n_classes_expected > 0 && self->n_classes > 0 &&
        n_classes_expected < limit)
        limit = n_classes_expected;
    if (self->n_classes > 0 && !self->labels && self->n_samples > 0)
        return ms_diag_set_code(diag, MS_ERR_DATASET, name,
                                "classification data without labels");
    for (int64_t i = 0; self->labels && i < self->n_samples; i++) {
        int32_t label = self->labels[i];
        if (label < 0 || label >= limit)
            return ms_diag_set_code(diag, MS_ERR_DATASET, name,
                                    "sample %lld: label %d out of range "
                                    "[0, %d)",
                                    (long long) i, label, limit);
    }
    for (int64_t i = 0; self->targets && i < self->n_samples; i++)
        if (!isfinite(self->targets[i]))
            return ms_diag_set_code(diag, MS_ERR_DATASET, name,
                                    "sample %lld: target is not finite",
                                    (long long) i);
    int64_t count = self->n_samples * self->n_features;
    for (int64_t k = 0; self->x && k < count; k++)
        if (!isfinite(self->x[k]))
            return ms_diag_set_code(diag, MS_ERR_DATASET, name,
                                    "sample %lld: feature %lld is not "
                                    "finite",
                                    (long long) (k / self->n_features),
                                    (long long) (k % self->n_features));
    return MS_OK;
}

#define S_FEATURE_BLOCK 256

//  --------------------------------------------------------------------------
//  Mean and standard deviation (biased, in double) of features [j0, j0 +
//  nb) of train, into t->shift and t->divisor (1 where the spread is 0).

static void
s_standard_fit_block(const ms_dataset_t *train, ms_dataset_transform_t *t,
                     int32_t j0, int32_t nb)
{
    double mean[S_FEATURE_BLOCK] = {0};
    double sd[S_FEATURE_BLOCK] = {0};
    int64_t n = train->n_samples;
    int32_t f = train->n_features;
    for (int64_t i = 0; i < n; i++) {
        const float *row = train->x + i * f + j0;
        for (int32_t j = 0; j < nb; j++)
            mean[j] += row[j];
    }
    for (int32_t j = 0; j < nb; j++)
        mean[j] /= (double) n;
    for (int64_t i = 0; i < n; i++) {
        const float *row = train->x + i * f + j0;
        for (int32_t j = 0; j < nb; j++) {
            double dev = row[j] - mean[j];
            sd[j] += dev * dev;
        }
    }
    for (int32_t j = 0; j < nb; j++) {
        sd[j] = sqrt(sd[j] / (double) n);
        t->shift[j0 + j] = mean[j];
        t->divisor[j0 + j] = sd[j] > 0 ? sd[j] : 1.0;
    }
}

//  --------------------------------------------------------------------------
//  Fit the input transform of a scaling to train.

int
ms_dataset_transform_fit(const ms_dataset_t *train, ms_scale_t scale,
                         ms_dataset_transform_t *out)
{
    memset(out, 0, sizeof *out);
    out->n_features = train ? train->n_features : 0;
    if (!train || scale == MS_SCALE_NONE || train->n_samples == 0 ||
        train->n_features < 1) {
        out->scale = MS_SCALE_NONE;
        return MS_OK;
    }
    out->scale = scale;
    out->shift = malloc((size_t) train->n_features * sizeof(double));
    out->divisor = malloc((size_t) train->n_features * sizeof(double));
    if (!out->shift || !out->divisor) {
        ms_dataset_transform_clear(out);
        return MS_ERR_NOMEM;
    }
    if (scale == MS_SCALE_UNIT) {
        float lo = 0.0f, hi = 255.0f;
        if (!s_byte_range(train)) {
            int64_t count = train->n_samples * train->n_features;
            lo = hi = train->x[0];
            for (int64_t k = 1; k < count; k++) {
                float v = train->x[k];
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
        float range = hi - lo;
        for (int32_t j = 0; j < train->n_features; j++) {
            out->shift[j] = lo;
            out->divisor[j] = range > 0 ? range : 1.0f;
        }
        return MS_OK;
    }
    for (int32_t j0 = 0; j0 < train->n_features; j0 += S_FEATURE_BLOCK) {
        int32_t nb = train->n_features - j0;
        if (nb > S_FEATURE_BLOCK)
            nb = S_FEATURE_BLOCK;
        s_standard_fit_block(train, out, j0, nb);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Apply an input transform to a dataset in place.

int
ms_dataset_transform_apply(const ms_dataset_transform_t *self,
                           ms_dataset_t *data)
{
    if (!data || self->scale == MS_SCALE_NONE)
        return MS_OK;
    if (data->n_features != self->n_features)
        return MS_ERR_INVALID;
    int32_t f = data->n_features;
    for (int64_t i = 0; data->x && i < data->n_samples; i++) {
        float *row = data->x + i * f;
        if (self->scale == MS_SCALE_UNIT)
            for (int32_t j = 0; j < f; j++)
                row[j] = (row[j] - (float) self->shift[j]) /
                         (float) self->divisor[j];
        else
            for (int32_t j = 0; j < f; j++)
                row[j] = (float) (((double) row[j] - self->shift[j]) /
                                  self->divisor[j]);
    }
    s_set_byte_range(data, false);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a transform's arrays.

void
ms_dataset_transform_clear(ms_dataset_transform_t *self)
{
    if (!self)
        return;
    free(self->shift);
    free(self->divisor);
    memset(self, 0, sizeof *self);
    self->scale = MS_SCALE_NONE;
}

//  --------------------------------------------------------------------------
//  Scale train and any number of other sets with train statistics.

int
ms_dataset_scale_sets(ms_dataset_t *train, ms_dataset_t *const *others,
                      int n_others, ms_scale_t scale)
{
    ms_dataset_transform_t t;
    int rc = ms_dataset_transform_fit(train, scale, &t);
    if (rc != MS_OK)
        return rc;
    for (int s = 0; s < n_others; s++)
        if (others[s] && others[s]->n_features == train->n_features)
            ms_dataset_transform_apply(&t, others[s]);
    ms_dataset_transform_apply(&t, train);
    ms_dataset_transform_clear(&t);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Scale train and test in place with train statistics.

int
ms_dataset_scale(ms_dataset_t *train, ms_dataset_t *test, ms_scale_t scale)
{
    return ms_dataset_scale_sets(train, &test, 1, scale);
}

//  --------------------------------------------------------------------------
//  Copy the rows idx[0 .. n) of src into a new dataset.

static ms_dataset_t *
s_gather(const ms_dataset_t *src, const int64_t *idx, int64_t n)
{
    ms_dataset_t *d = ms_dataset_new(n, src->n_features, src->n_classes);
    if (!d)
        return NULL;
    s_set_byte_range(d, s_byte_range(src));
    const s_owner_t *so = src->owner_;
    s_owner_t *dst = d->owner_;
    if (so && dst) {
        dst->encoding = ms_dataset_encoding_ref(so->encoding);
        d->class_names = src->class_names;
    }
    size_t row_bytes = (size_t) src->n_features * sizeof(float);
    for (int64_t i = 0; i < n; i++) {
        memcpy(d->x + i * src->n_features, src->x + idx[i] * src->n_features,
               row_bytes);
        if (d->labels)
            d->labels[i] = src->labels[idx[i]];
        if (d->targets)
            d->targets[i] = src->targets ? src->targets[idx[i]] : 0.0f;
    }
    return d;
}

//  --------------------------------------------------------------------------
//  Deterministic validation split.

int
ms_dataset_split(const ms_dataset_t *self, double fraction, uint64_t seed,
                 ms_dataset_t **train, ms_dataset_t **val)
{
    return ms_dataset_split_checked(self, fraction, seed, train, val, NULL);
}

//  --------------------------------------------------------------------------
//  The shortest %g text that reads back as v (0.999999, not
//  0.99999900000000003).

static void
s_format_shortest(double v, char *out, size_t n)
{
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(out, n, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            return;
    }
}

//  --------------------------------------------------------------------------
//  Whether a validation split would be accepted, without making it.

int
ms_dataset_split_check(const ms_dataset_t *self, double fraction,
                       ms_diag_t *diag)
{
    char text[40];
    s_format_shortest(fraction, text, sizeof text);
    if (!(fraction >= 0.0 && fraction < 1.0))
        return ms_diag_set(diag, "validation_split", "%s is outside [0, 1)",
                           text);
    int64_t n = self->n_samples;
    int64_t n_val = (int64_t) llround((double) n * fraction);
    if (n > 0 && n - n_val < 1)
        return ms_diag_set(diag, "validation_split",
                           "%s leaves no training rows (%lld samples)", text,
                           (long long) n);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Deterministic validation split, saying why it is refused.

int
ms_dataset_split_checked(const ms_dataset_t *self, double fraction,
                         uint64_t seed, ms_dataset_t **train,
                         ms_dataset_t **val, ms_diag_t *diag)
{
    *train = NULL;
    *val = NULL;
    int rc = ms_dataset_split_check(self, fraction, diag);
    if (rc != MS_OK)
        return rc;
    int64_t n = self->n_samples;
    int64_t n_val = (int64_t) llround((double) n * fraction);
    int64_t n_train = n - n_val;
    int64_t *idx = malloc((size_t) (n > 0 ? n : 1) * sizeof(int64_t));
    if (!idx)
        return MS_ERR_NOMEM;
    for (int64_t i = 0; i < n; i++)
        idx[i] = i;
    ms_rng_t rng;
    ms_rng_seed(&rng, seed, MS_DATASET_RNG_STREAM_SPLIT);
    ms_rng_shuffle_i64(&rng, idx, n);
    *train = s_gather(self, idx, n_train);
    *val = s_gather(self, idx + n_train, n_val);
    free(idx);
    if (!*train || !*val) {
        ms_dataset_destroy(train);
        ms_dataset_destroy(val);
        return ms_diag_set_code(diag, MS_ERR_NOMEM, "validation_split",
                                "out of memory");
    }
    return MS_OK;
}
