/*  =========================================================================
    ms_keyfile - secret key files and atomic writes for crypto/

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A secret key file holds the 64-byte libsodium Ed25519 secret key (seed
    then public key) in binary, mode 0600. It is written under a temporary
    name, fsynced and renamed, so a crash never leaves half a key; a file
    that others can read is refused on load (the key may have leaked, and
    the user must know).
*/
#include "ms_crypto_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  Write n bytes to path atomically (tmp, fsync, rename) with the mode.

int
ms_crypto_write_atomic(const char *path, const void *data, size_t n,
                       mode_t mode, ms_diag_t *diag)
{
    char tmp[4096];
    if ((size_t) snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "path too long");
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, tmp, "cannot create: %s",
                                strerror(errno));
    const uint8_t *p = data;
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return ms_diag_set_code(diag, MS_ERR_IO, tmp, "write: %s",
                                    strerror(e));
        }
        p += w;
        left -= (size_t) w;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        unlink(tmp);
        return ms_diag_set_code(diag, MS_ERR_IO, tmp, "fsync: %s",
                                strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "rename: %s",
                                strerror(e));
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read and check a secret key file.

int
ms_crypto_read_secret(const char *path, uint8_t sk[64], ms_diag_t *diag)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return ms_diag_set_code(diag,
                                errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO,
                                path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "stat: %s",
                                strerror(errno));
    }
    if (st.st_mode & 077) {
        close(fd);
        return ms_diag_set(diag, path,
                           "secret key is readable by others (mode %03o); "
                           "chmod 600 it",
                           (unsigned) (st.st_mode & 0777));
    }
    if (st.st_size != crypto_sign_SECRETKEYBYTES) {
        close(fd);
        return ms_diag_set(diag, path, "key file has %lld bytes, expected %d",
                           (long long) st.st_size,
                           (int) crypto_sign_SECRETKEYBYTES);
    }
    size_t got = 0;
    while (got < crypto_sign_SECRETKEYBYTES) {
        ssize_t r = read(fd, sk + got, crypto_sign_SECRETKEYBYTES - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            close(fd);
            return ms_diag_set_code(diag, MS_ERR_IO, path, "short read");
        }
        got += (size_t) r;
    }
    close(fd);
    // The public half must be the one the seed gives (a corrupt file, or
    // two halves of different keys).
    unsigned char seed[crypto_sign_SEEDBYTES];
    unsigned char pk[crypto_sign_PUBLICKEYBYTES];
    unsigned char *sk2 = sodium_malloc(crypto_sign_SECRETKEYBYTES);
    if (!sk2)
        return MS_ERR_NOMEM;
    crypto_sign_ed25519_sk_to_seed(seed, sk);
    crypto_sign_seed_keypair(pk, sk2, seed);
    sodium_memzero(seed, sizeof seed);
    sodium_free(sk2);
    if (sodium_memcmp(pk, sk + crypto_sign_SEEDBYTES, sizeof pk) != 0)
        return ms_diag_set(diag, path,
                           "corrupt key file: public key does not match "
                           "its seed");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Write a one-line text file: PREFIX, BIN in base64, a newline.

int
ms_crypto_write_line(const char *path, const char *prefix, const uint8_t *bin,
                     size_t n, ms_diag_t *diag)
{
    size_t b64_max =
        sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
    size_t line_max = strlen(prefix) + b64_max + 2;
    char *line = malloc(line_max);
    if (!line)
        return MS_ERR_NOMEM;
    int len = snprintf(line, line_max, "%s", prefix);
    sodium_bin2base64(line + len, line_max - (size_t) len, bin, n,
                      sodium_base64_VARIANT_ORIGINAL);
    strcat(line, "\n");
    int rc = ms_crypto_write_atomic(path, line, strlen(line), 0644, diag);
    free(line);
    return rc;
}

//  --------------------------------------------------------------------------
//  Read a one-line text file.

int
ms_crypto_read_line(const char *path, char *line, size_t n, const char *what,
                    ms_diag_t *diag)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ms_diag_set_code(diag,
                                errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO,
                                path, "cannot open: %s", strerror(errno));
    bool got = fgets(line, (int) n, f) != NULL;
    int extra = fgetc(f);
    fclose(f);
    if (!got || extra != EOF)
        return ms_diag_set(diag, path, "not a meshsweep %s (expected one line)",
                           what);
    line[strcspn(line, "\r\n")] = 0;
    return MS_OK;
}
