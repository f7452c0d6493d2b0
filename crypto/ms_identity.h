/*  =========================================================================
    ms_identity - a node's Ed25519 key pair, kept in its data dir

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission": a node's identity is an
    Ed25519 key pair created on first start in DATA_DIR/identity/ (the
    directory 0700, the key file 0600); the node id is the public key,
    written as 64 lowercase hex characters. The secret key lives in
    sodium_malloc memory (guarded, locked) and is wiped by
    ms_identity_destroy(). The node's CURVE key pair (ZeroMQ CURVE, mesh
    links with a pool authority) is derived from the Ed25519 pair with
    libsodium's ed25519-to-curve25519 maps, so a peer knows our CURVE
    public key from our node id alone (DESIGN.md "Identity, pools and
    admission").

    On disk: DIR/node.key holds the 64-byte libsodium secret key (seed then
    public key) in binary; DIR/node.pub holds the node id in hex and a
    newline, for people and scripts. The key file is written to a temporary
    name, fsynced and renamed, so a crash never leaves half a key.
*/
#ifndef MS_IDENTITY_H
#define MS_IDENTITY_H

#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_IDENTITY_PK_BYTES 32    // Ed25519 public key
#define MS_IDENTITY_SIG_BYTES 64   // Ed25519 signature
#define MS_IDENTITY_HEX_LEN 64     // node id in hex, without the NUL
#define MS_IDENTITY_CURVE_BYTES 32 // Curve25519 public or secret key

typedef struct ms_identity ms_identity_t;

//  Open the identity kept in dir, creating dir (0700) and a fresh key pair
//  (crypto_sign_keypair, key file 0600) when there is none. A key file
//  that is readable by group or others, has the wrong size, or whose
//  public half does not match its seed is refused. Caller owns *out; free
//  it with ms_identity_destroy(). Returns MS_OK; MS_ERR_IO (cannot create
//  or read: diag names the path and errno text); MS_ERR_INVALID (bad key
//  file or permissions: diag); MS_ERR_NOMEM. *out is NULL on failure.
int ms_identity_open(ms_identity_t **out, const char *dir, ms_diag_t *diag);

//  Wipe the secret key, free the identity; NULL-safe; nulls *self_p.
void ms_identity_destroy(ms_identity_t **self_p);

//  The public key (borrowed, MS_IDENTITY_PK_BYTES bytes, valid while the
//  identity lives).
const uint8_t *ms_identity_public_key(const ms_identity_t *self);

//  The node id: the public key as 64 lowercase hex characters (borrowed,
//  NUL-terminated, valid while the identity lives).
const char *ms_identity_node_id(const ms_identity_t *self);

//  Sign msg (n bytes) with the secret key: a detached Ed25519 signature
//  into sig. Returns MS_OK or MS_ERR_INVALID (libsodium refused).
int ms_identity_sign(const ms_identity_t *self, const void *msg, size_t n,
                     uint8_t sig[MS_IDENTITY_SIG_BYTES]);

//  Check a detached signature by public key pk over msg. Returns MS_OK or
//  MS_ERR_BADSIG. Thread-safe.
int ms_identity_verify(const uint8_t pk[MS_IDENTITY_PK_BYTES], const void *msg,
                       size_t n, const uint8_t sig[MS_IDENTITY_SIG_BYTES]);

//  The node's CURVE key pair, derived from its Ed25519 pair: public into
//  curve_pk, secret into curve_sk (caller's memory: keep it in
//  sodium_malloc memory or wipe it with sodium_memzero after use).
//  Returns MS_OK or MS_ERR_INVALID (libsodium refused the key).
int ms_identity_curve_keys(const ms_identity_t *self,
                           uint8_t curve_pk[MS_IDENTITY_CURVE_BYTES],
                           uint8_t curve_sk[MS_IDENTITY_CURVE_BYTES]);

//  The CURVE public key of any node id (Ed25519 public key pk): what a
//  dialer uses as the server key, and what the ZAP table is keyed by.
//  Returns MS_OK or MS_ERR_INVALID (pk is not a valid Ed25519 point).
//  Thread-safe.
int ms_identity_curve_public(const uint8_t pk[MS_IDENTITY_PK_BYTES],
                             uint8_t curve_pk[MS_IDENTITY_CURVE_BYTES]);

#endif
