/*  =========================================================================
    ms_weights - the trained-weights file (format in ms_weights.h)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_weights.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define S_HEAD 16 // magic, version, n_sizes

static void
s_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

static uint32_t
s_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t) p[i] << (8 * i);
    return v;
}

static void
s_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t) (v >> (8 * i));
}

static uint64_t
s_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t) p[i] << (8 * i);
    return v;
}

//  CRC-32 of n bytes (zlib takes uInt lengths: feed in pieces).
static uint32_t
s_crc(const uint8_t *p, size_t n)
{
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt) n;
        crc = crc32(crc, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t) crc;
}

//  --------------------------------------------------------------------------

int64_t
ms_weights_n_params(const uint32_t *sizes, uint32_t n_sizes)
{
    if (!sizes || n_sizes < 2 || n_sizes > MS_WEIGHTS_MAX_SIZES)
        return -1;
    int64_t total = 0;
    for (uint32_t l = 0; l < n_sizes; l++)
        if (sizes[l] < 1 || sizes[l] > MS_WEIGHTS_MAX_WIDTH)
            return -1;
    for (uint32_t l = 0; l + 1 < n_sizes; l++) {
        total += (int64_t) sizes[l + 1] * ((int64_t) sizes[l] + 1);
        if (total > MS_WEIGHTS_MAX_PARAMS)
            return -1;
    }
    return total;
}

//  --------------------------------------------------------------------------

int
ms_weights_encode(const uint32_t *sizes, uint32_t n_sizes, const float *params,
                  int64_t n_params, const char *meta_json, void **out,
                  size_t *n, ms_diag_t *diag)
{
    *out = NULL;
    *n = 0;
    int64_t want = ms_weights_n_params(sizes, n_sizes);
    if (want < 0)
        return ms_diag_set(diag, "weights",
                           "layer sizes out of range (%u sizes)", n_sizes);
    if ((meta_json ? n_params < want : n_params != want) ||
        n_params > MS_WEIGHTS_MAX_PARAMS || (!params && n_params > 0))
        return ms_diag_set(diag, "weights",
                           "%lld parameters given, the shapes need %s%lld",
                           (long long) n_params, meta_json ? "at least " : "",
                           (long long) want);
    size_t meta_len = meta_json ? strlen(meta_json) : 0;
    if (meta_json && (meta_len == 0 || meta_len > MS_WEIGHTS_MAX_META))
        return ms_diag_set(diag, "weights.meta",
                           "%zu bytes of metadata (must be 1..%u)", meta_len,
                           MS_WEIGHTS_MAX_META);
    size_t len = S_HEAD + 4 * (size_t) n_sizes + 8 + 4 * (size_t) n_params + 4;
    if (meta_json)
        len += 4 + meta_len;
    uint8_t *b = malloc(len);
    if (!b)
        return MS_ERR_NOMEM;
    memcpy(b, MS_WEIGHTS_MAGIC, 8);
    s_put32(b + 8, meta_json ? MS_WEIGHTS_VERSION_META : MS_WEIGHTS_VERSION);
    s_put32(b + 12, n_sizes);
    size_t off = S_HEAD;
    for (uint32_t l = 0; l < n_sizes; l++, off += 4)
        s_put32(b + off, sizes[l]);
    s_put64(b + off, (uint64_t) n_params);
    off += 8;
    for (int64_t i = 0; i < n_params; i++, off += 4) {
        uint32_t bits;
        memcpy(&bits, &params[i], 4);
        s_put32(b + off, bits);
    }
    if (meta_json) {
        s_put32(b + off, (uint32_t) meta_len);
        memcpy(b + off + 4, meta_json, meta_len);
        off += 4 + meta_len;
    }
    s_put32(b + off, s_crc(b, off));
    *out = b;
    *n = len;
    return MS_OK;
}

//  --------------------------------------------------------------------------

int
ms_weights_decode(const void *bytes, size_t n, ms_weights_t **out,
                  ms_diag_t *diag)
{
    *out = NULL;
    const uint8_t *b = bytes;
    if (!b || n < S_HEAD)
        return ms_diag_set(diag, "weights",
                           "truncated: %zu bytes, a header needs %d", n,
                           S_HEAD);
    if (memcmp(b, MS_WEIGHTS_MAGIC, 8) != 0)
        return ms_diag_set(diag, "weights",
                           "bad magic: not a meshsweep weights file");
    uint32_t version = s_get32(b + 8);
    if (version != MS_WEIGHTS_VERSION && version != MS_WEIGHTS_VERSION_META)
        return ms_diag_set(diag, "weights",
                           "unsupported version %u (this build reads %u and "
                           "%u)",
                           version, MS_WEIGHTS_VERSION,
                           MS_WEIGHTS_VERSION_META);
    bool with_meta = version == MS_WEIGHTS_VERSION_META;
    uint32_t n_sizes = s_get32(b + 12);
    if (n_sizes < 2 || n_sizes > MS_WEIGHTS_MAX_SIZES)
        return ms_diag_set(diag, "weights.n_sizes",
                           "%u layer sizes (must be 2..%u)", n_sizes,
                           MS_WEIGHTS_MAX_SIZES);
    size_t head = S_HEAD + 4 * (size_t) n_sizes + 8;
    if (n < head + 4)
        return ms_diag_set(diag, "weights",
                           "truncated: %zu bytes, the header needs %zu", n,
                           head + 4);
    uint64_t n_params = s_get64(b + S_HEAD + 4 * (size_t) n_sizes);
    if (n_params > (uint64_t) MS_WEIGHTS_MAX_PARAMS)
        return ms_diag_set(diag, "weights.n_params", "%llu parameters",
                           (unsigned long long) n_params);
    size_t len = head + 4 * (size_t) n_params + 4;
    size_t meta_len = 0;
    if (with_meta) {
        if (n < len + 4)
            return ms_diag_set(diag, "weights",
                               "truncated: %zu bytes, the metadata length "
                               "needs %zu",
                               n, len + 4);
        meta_len = s_get32(b + len - 4);
        if (meta_len == 0 || meta_len > MS_WEIGHTS_MAX_META)
            return ms_diag_set(diag, "weights.meta",
                               "%zu bytes of metadata (must be 1..%u)",
                               meta_len, MS_WEIGHTS_MAX_META);
        len += 4 + meta_len;
    }
    if (n < len)
        return ms_diag_set(diag, "weights",
                           "truncated: %zu bytes, the header needs %zu", n,
                           len);
    if (n > len)
        return ms_diag_set(diag, "weights",
                           "%zu bytes after the checksum at byte %zu", n - len,
                           len - 4);
    if (s_crc(b, len - 4) != s_get32(b + len - 4))
        return ms_diag_set(diag, "weights",
                           "checksum mismatch (the file is damaged)");
    ms_weights_t *w = calloc(1, sizeof *w);
    if (!w)
        return MS_ERR_NOMEM;
    w->n_sizes = n_sizes;
    w->sizes = malloc(4 * (size_t) n_sizes);
    w->params = malloc(n_params ? 4 * (size_t) n_params : 1);
    if (with_meta)
        w->meta_json = malloc(meta_len + 1);
    if (!w->sizes || !w->params || (with_meta && !w->meta_json)) {
        ms_weights_destroy(&w);
        return MS_ERR_NOMEM;
    }
    if (with_meta) {
        const uint8_t *meta = b + head + 4 * (size_t) n_params + 4;
        if (memchr(meta, 0, meta_len)) {
            ms_weights_destroy(&w);
            return ms_diag_set(diag, "weights.meta",
                               "the metadata holds a NUL byte");
        }
        memcpy(w->meta_json, meta, meta_len);
        w->meta_json[meta_len] = '\0';
    }
    for (uint32_t l = 0; l < n_sizes; l++)
        w->sizes[l] = s_get32(b + S_HEAD + 4 * (size_t) l);
    int64_t want = ms_weights_n_params(w->sizes, n_sizes);
    if (want < 0 || (with_meta ? (uint64_t) want > n_params
                               : (uint64_t) want != n_params)) {
        ms_weights_destroy(&w);
        return ms_diag_set(diag, "weights.sizes",
                           "the layer sizes do not give %llu parameters",
                           (unsigned long long) n_params);
    }
    w->n_params = (int64_t) n_params;
    for (uint64_t i = 0; i < n_params; i++) {
        uint32_t bits = s_get32(b + head + 4 * i);
        memcpy(&w->params[i], &bits, 4);
    }
    *out = w;
    return MS_OK;
}

//  --------------------------------------------------------------------------

void
ms_weights_destroy(ms_weights_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free((*self_p)->sizes);
    free((*self_p)->params);
    free((*self_p)->meta_json);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------

int
ms_weights_write_file(const char *path, const uint32_t *sizes, uint32_t n_sizes,
                      const float *params, int64_t n_params,
                      const char *meta_json, ms_diag_t *diag)
{
    void *buf = NULL;
    size_t n = 0;
    int rc = ms_weights_encode(sizes, n_sizes, params, n_params, meta_json,
                               &buf, &n, diag);
    if (rc != MS_OK)
        return rc;
    rc = ms_weights_write_bytes(path, buf, n, diag);
    free(buf);
    return rc;
}

//  --------------------------------------------------------------------------
//  Write bytes to path atomically: path.tmp, fsync, rename.

int
ms_weights_write_bytes(const char *path, const void *bytes, size_t n,
                       ms_diag_t *diag)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int rc = fd < 0 ? MS_ERR_IO : MS_OK;
    for (size_t done = 0; rc == MS_OK && done < n;) {
        ssize_t w = write(fd, (const uint8_t *) bytes + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = MS_ERR_IO;
        else
            done += (size_t) w;
    }
    if (rc == MS_OK && fsync(fd) != 0)
        rc = MS_ERR_IO;
    int err = errno;
    if (fd >= 0 && close(fd) != 0 && rc == MS_OK)
        rc = MS_ERR_IO, err = errno;
    if (rc == MS_OK && rename(tmp, path) != 0)
        rc = MS_ERR_IO, err = errno;
    if (rc != MS_OK) {
        unlink(tmp);
        return ms_diag_set_code(diag, rc, path, "cannot write weights: %s",
                                strerror(err));
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------

int
ms_weights_read_file(const char *path, size_t max_bytes, ms_weights_t **out,
                     ms_diag_t *diag)
{
    *out = NULL;
    FILE *f = fopen(path, "rbe");
    if (!f)
        return ms_diag_set_code(diag,
                                errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO,
                                path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "not a regular file");
    }
    size_t n = (size_t) st.st_size;
    if (max_bytes && n > max_bytes) {
        fclose(f);
        return ms_diag_set(diag, path, "%zu bytes, over the limit of %zu", n,
                           max_bytes);
    }
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        fclose(f);
        return MS_ERR_NOMEM;
    }
    size_t got = fread(buf, 1, n, f);
    fclose(f);
    int rc = MS_OK;
    if (got != n)
        rc = ms_diag_set_code(diag, MS_ERR_IO, path, "short read");
    else {
        rc = ms_weights_decode(buf, n, out, diag);
        if (rc == MS_ERR_INVALID && diag) {
            char text[sizeof diag->reason], where[sizeof diag->where];
            memcpy(text, diag->reason, sizeof text);
            memcpy(where, diag->where, sizeof where);
            ms_diag_set(diag, path, "%.100s: %.400s", where, text);
        }
    }
    free(buf);
    return rc;
}
