/*  =========================================================================
    ms_crypto_internal - key files shared by ms_identity and ms_cert
    (private to crypto/; never included from another module)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#ifndef MS_CRYPTO_INTERNAL_H
#define MS_CRYPTO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ms_err.h"

//  Write n bytes to path atomically: PATH.tmp created with mode (O_EXCL),
//  written, fsynced, renamed over path. MS_OK or MS_ERR_IO (diag names the
//  path and the errno text).
int ms_crypto_write_atomic(const char *path, const void *data, size_t n,
                           mode_t mode, ms_diag_t *diag);

//  Read a 64-byte Ed25519 secret key file into sk (caller's memory,
//  sodium_malloc'd). Refuses a file readable or writable by group or
//  others, of another size, or whose public half does not match its seed.
//  MS_OK; MS_ERR_NOTFOUND (no file); MS_ERR_IO; MS_ERR_INVALID (diag).
int ms_crypto_read_secret(const char *path, uint8_t sk[64], ms_diag_t *diag);

//  Write the one-line text file PATH (0644, atomically as above): PREFIX
//  (the file's tag and any fields before the data, ending in a space),
//  then BIN (N bytes) in base64 (the original variant), then a newline.
//  MS_OK; MS_ERR_NOMEM; MS_ERR_IO (diag).
int ms_crypto_write_line(const char *path, const char *prefix,
                         const uint8_t *bin, size_t n, ms_diag_t *diag);

//  Read the one-line text file PATH into LINE (N bytes), its line end
//  cut. MS_OK; MS_ERR_NOTFOUND (no file) or MS_ERR_IO (cannot open: diag
//  names the path and the errno text); MS_ERR_INVALID when the file is
//  not one line that fits, diag saying "not a meshsweep WHAT (expected
//  one line)".
int ms_crypto_read_line(const char *path, char *line, size_t n,
                        const char *what, ms_diag_t *diag);

#endif
