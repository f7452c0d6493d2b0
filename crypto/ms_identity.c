/*  =========================================================================
    ms_identity - a node's Ed25519 key pair, kept in its data dir

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_identity.h"
#include "ms_crypto_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct ms_identity {
    uint8_t pk[crypto_sign_PUBLICKEYBYTES]; // Ed25519 public key
    unsigned char *sk;                      // secret key, sodium_malloc'd
    char node_id[MS_IDENTITY_HEX_LEN + 1];  // pk in lowercase hex
};

//  --------------------------------------------------------------------------
//  Create dir with mode 0700 if it does not exist.

static int
s_mkdir(const char *dir, ms_diag_t *diag)
{
    if (mkdir(dir, 0700) == 0 || errno == EEXIST) {
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
            return ms_diag_set_code(diag, MS_ERR_IO, dir, "not a directory");
        return MS_OK;
    }
    return ms_diag_set_code(diag, MS_ERR_IO, dir, "cannot create: %s",
                            strerror(errno));
}

//  --------------------------------------------------------------------------
//  Open (or create) the identity in dir.

int
ms_identity_open(ms_identity_t **out, const char *dir, ms_diag_t *diag)
{
    *out = NULL;
    if (sodium_init() < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, "libsodium",
                                "sodium_init failed");
    int rc = s_mkdir(dir, diag);
    if (rc != MS_OK)
        return rc;

    ms_identity_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
    if (!self->sk) {
        free(self);
        return MS_ERR_NOMEM;
    }
    char key_path[4096], pub_path[4096];
    snprintf(key_path, sizeof key_path, "%s/node.key", dir);
    snprintf(pub_path, sizeof pub_path, "%s/node.pub", dir);

    struct stat st;
    if (stat(key_path, &st) == 0) {
        rc = ms_crypto_read_secret(key_path, self->sk, diag);
        if (rc != MS_OK)
            goto fail;
        crypto_sign_ed25519_sk_to_pk(self->pk, self->sk);
    } else if (errno == ENOENT) {
        crypto_sign_keypair(self->pk, self->sk);
        rc = ms_crypto_write_atomic(key_path, self->sk,
                                    crypto_sign_SECRETKEYBYTES, 0600, diag);
        if (rc != MS_OK)
            goto fail;
    } else {
        rc = ms_diag_set_code(diag, MS_ERR_IO, key_path, "stat: %s",
                              strerror(errno));
        goto fail;
    }
    sodium_bin2hex(self->node_id, sizeof self->node_id, self->pk,
                   sizeof self->pk);
    // The public file is a convenience: rewrite it when missing or stale.
    char line[MS_IDENTITY_HEX_LEN + 2];
    snprintf(line, sizeof line, "%s\n", self->node_id);
    FILE *f = fopen(pub_path, "r");
    char have[MS_IDENTITY_HEX_LEN + 2] = "";
    if (f) {
        if (!fgets(have, sizeof have, f))
            have[0] = 0;
        fclose(f);
    }
    if (strcmp(have, line) != 0) {
        rc = ms_crypto_write_atomic(pub_path, line, strlen(line), 0644, diag);
        if (rc != MS_OK)
            goto fail;
    }
    *out = self;
    return MS_OK;

fail:
    ms_identity_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Wipe and free.

void
ms_identity_destroy(ms_identity_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_identity_t *self = *self_p;
    if (self->sk)
        sodium_free(self->sk); // sodium_free wipes before freeing
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The public key.

const uint8_t *
ms_identity_public_key(const ms_identity_t *self)
{
    return self->pk;
}

//  --------------------------------------------------------------------------
//  The node id in hex.

const char *
ms_identity_node_id(const ms_identity_t *self)
{
    return self->node_id;
}

//  --------------------------------------------------------------------------
//  Detached signature.

int
ms_identity_sign(const ms_identity_t *self, const void *msg, size_t n,
                 uint8_t sig[MS_IDENTITY_SIG_BYTES])
{
    if (crypto_sign_detached(sig, NULL, msg, n, self->sk) != 0)
        return MS_ERR_INVALID;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Verify a detached signature.

int
ms_identity_verify(const uint8_t pk[MS_IDENTITY_PK_BYTES], const void *msg,
                   size_t n, const uint8_t sig[MS_IDENTITY_SIG_BYTES])
{
    if (crypto_sign_verify_detached(sig, msg, n, pk) != 0)
        return MS_ERR_BADSIG;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The CURVE key pair derived from the Ed25519 pair.

int
ms_identity_curve_keys(const ms_identity_t *self,
                       uint8_t curve_pk[MS_IDENTITY_CURVE_BYTES],
                       uint8_t curve_sk[MS_IDENTITY_CURVE_BYTES])
{
    if (crypto_sign_ed25519_pk_to_curve25519(curve_pk, self->pk) != 0 ||
        crypto_sign_ed25519_sk_to_curve25519(curve_sk, self->sk) != 0)
        return MS_ERR_INVALID;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The CURVE public key of a node id.

int
ms_identity_curve_public(const uint8_t pk[MS_IDENTITY_PK_BYTES],
                         uint8_t curve_pk[MS_IDENTITY_CURVE_BYTES])
{
    if (crypto_sign_ed25519_pk_to_curve25519(curve_pk, pk) != 0)
        return MS_ERR_INVALID;
    return MS_OK;
}
