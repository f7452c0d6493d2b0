/*  =========================================================================
    ms_cert - pool authority keys, membership certificates, enrollment
    chains

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission". A pool has an authority
    Ed25519 key pair; its pool id is BLAKE2b-256("meshsweep pool v1" ||
    authority public key), so a pool id names exactly one authority and a
    certificate of another authority can never claim this pool's id.

    A certificate binds a subject key (a node id, or an enrollment key) to
    the pool, an operator name, roles, a worker cap, an expiry and a
    serial, signed by its issuer: the authority, or an enrollment key that
    the authority certified with the `enroll` role (chains of at most 2).
    A chain is what a node presents (HELLO) and keeps (identity/node.cert):
    the leaf, and the enrollment certificate when an enrollment key issued
    the leaf.

    Canonical encoding (the signed bytes are exactly the encoding up to the
    signature; integers big-endian; no optional fields, so one certificate
    has one encoding and decode(encode(c)) == c byte for byte):

        magic "MSC1" (4) | pool_id (32) | subject (32) | issuer (32) |
        roles u32 | max_workers u32 | not_after i64 | serial u64 |
        operator length u8 | operator bytes (1..64, UTF-8, no control
        characters) | signature (64)

    A chain: count u8 (1 or 2) | leaf | enrollment certificate.

    A bundle (what `meshsweep pool invite` writes and `pool join`
    installs) is a one-line text file: "meshsweep-cert-v1 " then the
    authority public key in hex, a space, the chain in base64 (libsodium,
    original variant), and a newline. The authority key in a bundle is
    only believed when it hashes to the certificate's pool id; a node
    checks peers' chains against its own bundle's authority key.
*/
#ifndef MS_CERT_H
#define MS_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_CERT_KEY_BYTES 32     // Ed25519 public key
#define MS_CERT_SECRET_BYTES 64  // Ed25519 secret key (seed || pk)
#define MS_CERT_SIG_BYTES 64     // Ed25519 signature
#define MS_CERT_POOL_ID_BYTES 32 // BLAKE2b-256
#define MS_CERT_OPERATOR_MAX 64  // bytes of an operator name
#define MS_CERT_MAX_CHAIN 2      // leaf + enrollment certificate
#define MS_CERT_MAX_BYTES 512    // an encoded certificate, upper bound
#define MS_CERT_CHAIN_MAX_BYTES (1 + MS_CERT_MAX_CHAIN * MS_CERT_MAX_BYTES)

//  Roles a certificate grants (bit set).
typedef enum {
    MS_CERT_ROLE_WORKER = 1u << 0, // claim tasks, publish results
    MS_CERT_ROLE_SUBMIT = 1u << 1, // submit sweeps, sweep-control records
    MS_CERT_ROLE_ENROLL = 1u << 2, // sign leaf certificates (enroll keys)
} ms_cert_role_t;

#define MS_CERT_ROLES_ALL                                                      \
    (MS_CERT_ROLE_WORKER | MS_CERT_ROLE_SUBMIT | MS_CERT_ROLE_ENROLL)

//  One certificate. Plain value type: copy it freely.
typedef struct {
    uint8_t pool_id[MS_CERT_POOL_ID_BYTES];       // the pool it admits to
    uint8_t subject[MS_CERT_KEY_BYTES];           // key certified (node id)
    uint8_t issuer[MS_CERT_KEY_BYTES];            // key that signed it
    uint32_t roles;                               // ms_cert_role_t bits
    uint32_t max_workers;                         // 0: no cap
    int64_t not_after;                            // s since the epoch, 0: never
    uint64_t serial;                              // issuer's serial number
    char operator_name[MS_CERT_OPERATOR_MAX + 1]; // NUL-terminated
    uint8_t signature[MS_CERT_SIG_BYTES];         // by issuer
} ms_cert_t;

//  What a node presents: the leaf, and the enrollment certificate that
//  makes its issuer trusted when the authority did not sign it directly.
typedef struct {
    ms_cert_t leaf;     // certifies the node's key
    bool has_enroller;  // leaf.issuer is an enrollment key
    ms_cert_t enroller; // certifies leaf.issuer, signed by the authority
} ms_cert_chain_t;

//  The pool id of an authority public key (see the prose above).
void ms_cert_pool_id(const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                     uint8_t out[MS_CERT_POOL_ID_BYTES]);

//  Make a fresh Ed25519 key pair: pk (32 bytes) and sk (64 bytes, which
//  the caller should keep in sodium_malloc memory and wipe). Returns MS_OK
//  or MS_ERR_INVALID (libsodium refused: not initialized).
int ms_cert_keypair(uint8_t pk[MS_CERT_KEY_BYTES],
                    uint8_t sk[MS_CERT_SECRET_BYTES]);

//  Check the fields of cert without its signature: operator name 1..64
//  bytes of printable UTF-8 (no control characters), roles within
//  MS_CERT_ROLES_ALL and not empty, not_after >= 0. MS_OK or
//  MS_ERR_INVALID with diag saying which field.
int ms_cert_check_fields(const ms_cert_t *cert, ms_diag_t *diag);

//  Sign cert with the issuer's secret key sk: sets cert->issuer to sk's
//  public half and cert->signature over the canonical encoding. Returns
//  MS_OK; MS_ERR_INVALID (fields out of contract: diag).
int ms_cert_sign(ms_cert_t *cert, const uint8_t sk[MS_CERT_SECRET_BYTES],
                 ms_diag_t *diag);

//  Check the signature of cert by its issuer key (nothing else). MS_OK or
//  MS_ERR_BADSIG.
int ms_cert_verify_signature(const ms_cert_t *cert);

//  Verify a chain against the pool authority key at time now_s (seconds
//  since the epoch): every signature; the leaf issued by the authority,
//  or by an enrollment key whose certificate the authority issued with
//  the `enroll` role; every pool id equal to the authority's; neither
//  certificate expired (not_after 0 or >= now_s); the leaf's roles within
//  the enroller's (an enrollment key cannot grant `enroll`). Revocation is
//  the caller's (ms_cert knows no revocation list).
//  Returns MS_OK; MS_ERR_BADSIG (a signature fails); MS_ERR_UNTRUSTED
//  (wrong issuer, other pool, missing enroll role, roles widened);
//  MS_ERR_EXPIRED; MS_ERR_INVALID (fields out of contract). diag says
//  which certificate and why.
int ms_cert_chain_verify(const ms_cert_chain_t *chain,
                         const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                         int64_t now_s, ms_diag_t *diag);

//  Canonical encoding of one certificate into out (at least
//  MS_CERT_MAX_BYTES). Returns the byte count, or 0 when the fields are
//  out of contract (operator name length).
size_t ms_cert_encode(const ms_cert_t *cert, uint8_t *out);

//  Decode one certificate from buf (n bytes): *used gets the bytes read.
//  Strict: exact lengths, operator 1..64 bytes without NUL or control
//  characters, known role bits. MS_OK or MS_ERR_PROTOCOL (diag). Does not
//  check the signature.
int ms_cert_decode(const uint8_t *buf, size_t n, ms_cert_t *out, size_t *used,
                   ms_diag_t *diag);

//  Encode a chain (count, leaf, enroller) into out (at least
//  MS_CERT_CHAIN_MAX_BYTES). Returns the byte count, or 0 (fields out of
//  contract).
size_t ms_cert_chain_encode(const ms_cert_chain_t *chain, uint8_t *out);

//  Decode a chain: the whole of buf (n bytes) must be one chain. MS_OK or
//  MS_ERR_PROTOCOL (diag). Signatures are not checked here.
int ms_cert_chain_decode(const uint8_t *buf, size_t n, ms_cert_chain_t *out,
                         ms_diag_t *diag);

//  Write a bundle file (authority key + chain, see the prose) to path,
//  mode 0644, atomically (temporary file, fsync, rename). MS_OK or
//  MS_ERR_IO / MS_ERR_INVALID (diag).
int ms_cert_bundle_save(const char *path,
                        const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                        const ms_cert_chain_t *chain, ms_diag_t *diag);

//  Read a bundle file. Checks the format, that the authority key hashes to
//  the leaf's pool id, and the chain's signatures and expiry against that
//  key at now_s (ms_cert_chain_verify). MS_OK; MS_ERR_NOTFOUND (no file);
//  MS_ERR_IO; MS_ERR_INVALID (format: diag names path and what);
//  MS_ERR_BADSIG / MS_ERR_UNTRUSTED / MS_ERR_EXPIRED as
//  ms_cert_chain_verify.
int ms_cert_bundle_load(const char *path,
                        uint8_t authority_pk[MS_CERT_KEY_BYTES],
                        ms_cert_chain_t *chain, int64_t now_s, ms_diag_t *diag);

//  Save an Ed25519 secret key (64 bytes) to path with mode 0600, atomically,
//  refusing to overwrite an existing file. MS_OK; MS_ERR_CONFLICT (exists);
//  MS_ERR_IO (diag).
int ms_cert_secret_save(const char *path,
                        const uint8_t sk[MS_CERT_SECRET_BYTES],
                        ms_diag_t *diag);

//  Load an Ed25519 secret key file written by ms_cert_secret_save into sk
//  (caller's memory; use sodium_malloc). Refuses a file readable or
//  writable by group or others, of the wrong size, or whose public half
//  does not match its seed. MS_OK; MS_ERR_NOTFOUND; MS_ERR_IO;
//  MS_ERR_INVALID (diag names the path and the reason).
int ms_cert_secret_load(const char *path, uint8_t sk[MS_CERT_SECRET_BYTES],
                        ms_diag_t *diag);

//  Enrollment kits (`meshsweep pool enroll --out FILE`, `meshsweepd
//  --enroll-key FILE`): an enrollment key's secret and its certificate
//  (issued by the authority with the `enroll` role), and the authority
//  key. One line, mode 0600: "meshsweep-enroll-v1 " AUTHORITY_HEX " "
//  SECRET_BASE64 " " CERTIFICATE_BASE64 "\n". Save refuses to overwrite.
//  Load checks the mode (0600 or stricter), the format, that the secret's
//  public half is the certificate's subject, and the certificate against
//  the authority key at now_s (role `enroll`, pool, expiry, signature).
//  MS_OK; MS_ERR_CONFLICT (save: exists); MS_ERR_NOTFOUND; MS_ERR_IO;
//  MS_ERR_INVALID (format, mode: diag); MS_ERR_BADSIG / MS_ERR_UNTRUSTED /
//  MS_ERR_EXPIRED.
int ms_cert_enroll_save(const char *path,
                        const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                        const uint8_t enroll_sk[MS_CERT_SECRET_BYTES],
                        const ms_cert_t *enroll_cert, ms_diag_t *diag);
int ms_cert_enroll_load(const char *path,
                        uint8_t authority_pk[MS_CERT_KEY_BYTES],
                        uint8_t enroll_sk[MS_CERT_SECRET_BYTES],
                        ms_cert_t *enroll_cert, int64_t now_s, ms_diag_t *diag);

//  Issue a node's chain with an enrollment key: leaf for node_pk with the
//  enrollment certificate's pool, operator and roles (less `enroll`),
//  max_workers 0, the given expiry and serial, signed by enroll_sk; the
//  enrollment certificate rides along. MS_OK or MS_ERR_INVALID (diag).
int ms_cert_enroll_issue(const uint8_t enroll_sk[MS_CERT_SECRET_BYTES],
                         const ms_cert_t *enroll_cert,
                         const uint8_t node_pk[MS_CERT_KEY_BYTES],
                         int64_t not_after, uint64_t serial,
                         ms_cert_chain_t *out, ms_diag_t *diag);

#endif
