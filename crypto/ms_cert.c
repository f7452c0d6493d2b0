/*  =========================================================================
    ms_cert - pool authority keys, membership certificates, enrollment
    chains

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The encoding is a fixed layout rather than a protobuf message because
    the signed bytes must be canonical: one certificate, one byte string,
    on every node and in every version of the code (protobuf gives no such
    promise across encoders). Decoding is strict and bounded: a certificate
    arrives from strangers (HELLO) before anything about them is known.
*/
#include "ms_cert.h"
#include "ms_be.h"
#include "ms_crypto_internal.h"
#include "ms_hash.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_MAGIC "MSC1"
#define S_MAGIC_BYTES 4
#define S_FIXED_BYTES                                                          \
    (S_MAGIC_BYTES + MS_CERT_POOL_ID_BYTES + 2 * MS_CERT_KEY_BYTES + 4 + 4 +   \
     8 + 8 + 1)
#define S_BUNDLE_TAG "meshsweep-cert-v1"
#define S_POOL_TAG "meshsweep pool v1"

//  --------------------------------------------------------------------------
//  Pool id of an authority key.

void
ms_cert_pool_id(const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                uint8_t out[MS_CERT_POOL_ID_BYTES])
{
    ms_hasher_t h;
    ms_hash_t id;
    ms_hasher_init(&h);
    ms_hasher_update(&h, S_POOL_TAG, strlen(S_POOL_TAG));
    ms_hasher_update(&h, authority_pk, MS_CERT_KEY_BYTES);
    ms_hasher_final(&h, &id);
    memcpy(out, id.bytes, MS_CERT_POOL_ID_BYTES);
}

//  --------------------------------------------------------------------------
//  Fresh key pair.

int
ms_cert_keypair(uint8_t pk[MS_CERT_KEY_BYTES], uint8_t sk[MS_CERT_SECRET_BYTES])
{
    if (sodium_init() < 0)
        return MS_ERR_INVALID;
    return crypto_sign_keypair(pk, sk) == 0 ? MS_OK : MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  An operator name: 1..64 bytes, valid UTF-8, no control characters.

static bool
s_operator_ok(const char *s, size_t n)
{
    if (n == 0 || n > MS_CERT_OPERATOR_MAX)
        return false;
    const unsigned char *p = (const unsigned char *) s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80         ? 1
                     : (c >> 5) == 6  ? 2
                     : (c >> 4) == 14 ? 3
                     : (c >> 3) == 30 ? 4
                                      : 0;
        if (len == 0 || i + len > n || (len == 1 && (c < 0x20 || c == 0x7f)))
            return false;
        for (size_t k = 1; k < len; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
        i += len;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Field checks.

int
ms_cert_check_fields(const ms_cert_t *cert, ms_diag_t *diag)
{
    size_t n = strnlen(cert->operator_name, MS_CERT_OPERATOR_MAX + 1);
    if (!s_operator_ok(cert->operator_name, n))
        return ms_diag_set(diag, "certificate",
                           "operator name must be 1..%d bytes of UTF-8 "
                           "without control characters",
                           MS_CERT_OPERATOR_MAX);
    if (cert->roles == 0 || (cert->roles & ~(uint32_t) MS_CERT_ROLES_ALL))
        return ms_diag_set(diag, "certificate", "roles 0x%x: unknown or none",
                           (unsigned) cert->roles);
    if (cert->not_after < 0)
        return ms_diag_set(diag, "certificate", "expiry before 1970");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Encode one certificate.

size_t
ms_cert_encode(const ms_cert_t *cert, uint8_t *out)
{
    size_t op = strnlen(cert->operator_name, MS_CERT_OPERATOR_MAX + 1);
    if (op == 0 || op > MS_CERT_OPERATOR_MAX)
        return 0;
    uint8_t *p = out;
    memcpy(p, S_MAGIC, S_MAGIC_BYTES);
    p += S_MAGIC_BYTES;
    memcpy(p, cert->pool_id, MS_CERT_POOL_ID_BYTES);
    p += MS_CERT_POOL_ID_BYTES;
    memcpy(p, cert->subject, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    memcpy(p, cert->issuer, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    p = ms_be_put32(p, cert->roles);
    p = ms_be_put32(p, cert->max_workers);
    p = ms_be_put64(p, (uint64_t) cert->not_after);
    p = ms_be_put64(p, cert->serial);
    *p++ = (uint8_t) op;
    memcpy(p, cert->operator_name, op);
    p += op;
    memcpy(p, cert->signature, MS_CERT_SIG_BYTES);
    p += MS_CERT_SIG_BYTES;
    return (size_t) (p - out);
}

//  --------------------------------------------------------------------------
//  Decode one certificate.

int
ms_cert_decode(const uint8_t *buf, size_t n, ms_cert_t *out, size_t *used,
               ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    if (n < S_FIXED_BYTES || memcmp(buf, S_MAGIC, S_MAGIC_BYTES) != 0)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "certificate",
                                "not a certificate (%zu bytes)", n);
    const uint8_t *p = buf + S_MAGIC_BYTES;
    memcpy(out->pool_id, p, MS_CERT_POOL_ID_BYTES);
    p += MS_CERT_POOL_ID_BYTES;
    memcpy(out->subject, p, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    memcpy(out->issuer, p, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    out->roles = ms_be_get32(p);
    out->max_workers = ms_be_get32(p + 4);
    out->not_after = (int64_t) ms_be_get64(p + 8);
    out->serial = ms_be_get64(p + 16);
    size_t op = p[24];
    p += 25;
    size_t total = S_FIXED_BYTES + op + MS_CERT_SIG_BYTES;
    if (op == 0 || op > MS_CERT_OPERATOR_MAX || n < total)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "certificate",
                                "truncated or bad operator length %zu", op);
    memcpy(out->operator_name, p, op);
    out->operator_name[op] = 0;
    p += op;
    memcpy(out->signature, p, MS_CERT_SIG_BYTES);
    if (memchr(out->operator_name, 0, op) ||
        ms_cert_check_fields(out, diag) != MS_OK) {
        if (diag && !diag->reason[0])
            ms_diag_set(diag, "certificate", "operator name has a NUL");
        return MS_ERR_PROTOCOL;
    }
    if (used)
        *used = total;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Sign.

int
ms_cert_sign(ms_cert_t *cert, const uint8_t sk[MS_CERT_SECRET_BYTES],
             ms_diag_t *diag)
{
    int rc = ms_cert_check_fields(cert, diag);
    if (rc != MS_OK)
        return rc;
    crypto_sign_ed25519_sk_to_pk(cert->issuer, sk);
    uint8_t buf[MS_CERT_MAX_BYTES];
    size_t n = ms_cert_encode(cert, buf);
    if (crypto_sign_detached(cert->signature, NULL, buf, n - MS_CERT_SIG_BYTES,
                             sk) != 0)
        return ms_diag_set(diag, "certificate", "signing failed");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Check the signature by the issuer key.

int
ms_cert_verify_signature(const ms_cert_t *cert)
{
    uint8_t buf[MS_CERT_MAX_BYTES];
    size_t n = ms_cert_encode(cert, buf);
    if (n == 0)
        return MS_ERR_BADSIG;
    return crypto_sign_verify_detached(cert->signature, buf,
                                       n - MS_CERT_SIG_BYTES, cert->issuer) == 0
               ? MS_OK
               : MS_ERR_BADSIG;
}

//  --------------------------------------------------------------------------
//  One certificate of a chain: fields, signature, pool, expiry.

static int
s_check_one(const ms_cert_t *c, const char *what,
            const uint8_t pool_id[MS_CERT_POOL_ID_BYTES], int64_t now_s,
            ms_diag_t *diag)
{
    if (ms_cert_check_fields(c, diag) != MS_OK)
        return MS_ERR_INVALID;
    if (ms_cert_verify_signature(c) != MS_OK)
        return ms_diag_set_code(diag, MS_ERR_BADSIG, what,
                                "signature does not verify");
    if (sodium_memcmp(c->pool_id, pool_id, MS_CERT_POOL_ID_BYTES) != 0)
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, what,
                                "certificate of another pool");
    if (c->not_after != 0 && c->not_after < now_s)
        return ms_diag_set_code(diag, MS_ERR_EXPIRED, what,
                                "expired %lld s ago",
                                (long long) (now_s - c->not_after));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Verify a chain against the authority.

int
ms_cert_chain_verify(const ms_cert_chain_t *chain,
                     const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                     int64_t now_s, ms_diag_t *diag)
{
    uint8_t pool_id[MS_CERT_POOL_ID_BYTES];
    ms_cert_pool_id(authority_pk, pool_id);
    int rc = s_check_one(&chain->leaf, "certificate", pool_id, now_s, diag);
    if (rc != MS_OK)
        return rc;
    if (!chain->has_enroller) {
        if (sodium_memcmp(chain->leaf.issuer, authority_pk,
                          MS_CERT_KEY_BYTES) != 0)
            return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "certificate",
                                    "not issued by the pool authority");
        return MS_OK;
    }
    const ms_cert_t *e = &chain->enroller;
    rc = s_check_one(e, "enrollment certificate", pool_id, now_s, diag);
    if (rc != MS_OK)
        return rc;
    if (sodium_memcmp(e->issuer, authority_pk, MS_CERT_KEY_BYTES) != 0)
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED,
                                "enrollment certificate",
                                "not issued by the pool authority");
    if (!(e->roles & MS_CERT_ROLE_ENROLL))
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED,
                                "enrollment certificate",
                                "its key has no enroll role");
    if (sodium_memcmp(chain->leaf.issuer, e->subject, MS_CERT_KEY_BYTES) != 0)
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "certificate",
                                "not issued by the enclosed enrollment key");
    if ((chain->leaf.roles & MS_CERT_ROLE_ENROLL) ||
        (chain->leaf.roles & ~e->roles))
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "certificate",
                                "grants roles its enrollment key does not "
                                "have");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Chains.

size_t
ms_cert_chain_encode(const ms_cert_chain_t *chain, uint8_t *out)
{
    out[0] = chain->has_enroller ? 2 : 1;
    size_t n = ms_cert_encode(&chain->leaf, out + 1);
    if (n == 0)
        return 0;
    if (!chain->has_enroller)
        return 1 + n;
    size_t m = ms_cert_encode(&chain->enroller, out + 1 + n);
    return m ? 1 + n + m : 0;
}

int
ms_cert_chain_decode(const uint8_t *buf, size_t n, ms_cert_chain_t *out,
                     ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    if (n < 1 || buf[0] < 1 || buf[0] > MS_CERT_MAX_CHAIN)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "certificate",
                                "bad chain length");
    size_t used = 0, used2 = 0;
    int rc = ms_cert_decode(buf + 1, n - 1, &out->leaf, &used, diag);
    if (rc != MS_OK)
        return rc;
    if (buf[0] == 2) {
        out->has_enroller = true;
        rc = ms_cert_decode(buf + 1 + used, n - 1 - used, &out->enroller,
                            &used2, diag);
        if (rc != MS_OK)
            return rc;
    }
    if (1 + used + used2 != n)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "certificate",
                                "%zu trailing bytes", n - 1 - used - used2);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  File helpers shared by bundles, secret keys and enrollment kits.

//  64 hex digits into a 32-byte key; false when they are not.
static bool
s_hex_key(const char *hex, uint8_t out[MS_CERT_KEY_BYTES])
{
    size_t got = 0;
    return strlen(hex) == 2 * MS_CERT_KEY_BYTES &&
           sodium_hex2bin(out, MS_CERT_KEY_BYTES, hex, strlen(hex), NULL, &got,
                          NULL) == 0 &&
           got == MS_CERT_KEY_BYTES;
}

//  MS_ERR_CONFLICT (diag) when path exists: key files are never replaced.
static int
s_refuse_existing(const char *path, ms_diag_t *diag)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return MS_OK;
    fclose(f);
    return ms_diag_set_code(diag, MS_ERR_CONFLICT, path,
                            "exists already; not overwritten");
}

//  --------------------------------------------------------------------------
//  Bundles.

int
ms_cert_bundle_save(const char *path,
                    const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                    const ms_cert_chain_t *chain, ms_diag_t *diag)
{
    uint8_t bin[MS_CERT_CHAIN_MAX_BYTES];
    size_t n = ms_cert_chain_encode(chain, bin);
    if (n == 0)
        return ms_diag_set(diag, path, "certificate fields out of range");
    char hex[2 * MS_CERT_KEY_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, authority_pk, MS_CERT_KEY_BYTES);
    char prefix[sizeof S_BUNDLE_TAG + sizeof hex + 1];
    snprintf(prefix, sizeof prefix, "%s %s ", S_BUNDLE_TAG, hex);
    return ms_crypto_write_line(path, prefix, bin, n, diag);
}

int
ms_cert_bundle_load(const char *path, uint8_t authority_pk[MS_CERT_KEY_BYTES],
                    ms_cert_chain_t *chain, int64_t now_s, ms_diag_t *diag)
{
    char line[4096];
    int rc =
        ms_crypto_read_line(path, line, sizeof line, "certificate file", diag);
    if (rc != MS_OK)
        return rc;
    char *tag = strtok(line, " ");
    char *hex = strtok(NULL, " ");
    char *b64 = strtok(NULL, " ");
    if (!tag || strcmp(tag, S_BUNDLE_TAG) != 0 || !hex || !b64 ||
        strtok(NULL, " "))
        return ms_diag_set(diag, path,
                           "not a meshsweep certificate file (expected "
                           "'" S_BUNDLE_TAG " AUTHORITY_KEY CERTIFICATE')");
    size_t bin_len = 0;
    if (!s_hex_key(hex, authority_pk))
        return ms_diag_set(diag, path, "authority key is not 64 hex digits");
    uint8_t bin[MS_CERT_CHAIN_MAX_BYTES];
    if (sodium_base642bin(bin, sizeof bin, b64, strlen(b64), NULL, &bin_len,
                          NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
        return ms_diag_set(diag, path, "certificate is not valid base64");
    ms_diag_t d;
    ms_diag_clear(&d);
    rc = ms_cert_chain_decode(bin, bin_len, chain, &d);
    if (rc != MS_OK)
        return ms_diag_set(diag, path, "%s", d.reason);
    uint8_t pool_id[MS_CERT_POOL_ID_BYTES];
    ms_cert_pool_id(authority_pk, pool_id);
    if (sodium_memcmp(pool_id, chain->leaf.pool_id, MS_CERT_POOL_ID_BYTES))
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, path,
                                "the authority key does not match the "
                                "certificate's pool");
    rc = ms_cert_chain_verify(chain, authority_pk, now_s, &d);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, path, "%s: %s", d.where, d.reason);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Secret key files.

int
ms_cert_secret_save(const char *path, const uint8_t sk[MS_CERT_SECRET_BYTES],
                    ms_diag_t *diag)
{
    int rc = s_refuse_existing(path, diag);
    return rc != MS_OK ? rc
                       : ms_crypto_write_atomic(path, sk, MS_CERT_SECRET_BYTES,
                                                0600, diag);
}

int
ms_cert_secret_load(const char *path, uint8_t sk[MS_CERT_SECRET_BYTES],
                    ms_diag_t *diag)
{
    return ms_crypto_read_secret(path, sk, diag);
}

//  --------------------------------------------------------------------------
//  Enrollment kits.

#define S_ENROLL_TAG "meshsweep-enroll-v1"

int
ms_cert_enroll_save(const char *path,
                    const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                    const uint8_t enroll_sk[MS_CERT_SECRET_BYTES],
                    const ms_cert_t *enroll_cert, ms_diag_t *diag)
{
    int rc = s_refuse_existing(path, diag);
    if (rc != MS_OK)
        return rc;
    uint8_t cert[MS_CERT_MAX_BYTES];
    size_t n = ms_cert_encode(enroll_cert, cert);
    if (n == 0)
        return ms_diag_set(diag, path, "certificate fields out of range");
    char hex[2 * MS_CERT_KEY_BYTES + 1];
    sodium_bin2hex(hex, sizeof hex, authority_pk, MS_CERT_KEY_BYTES);
    size_t sk_b64 = sodium_base64_encoded_len(MS_CERT_SECRET_BYTES,
                                              sodium_base64_VARIANT_ORIGINAL);
    size_t c_b64 = sodium_base64_encoded_len(n, sodium_base64_VARIANT_ORIGINAL);
    size_t cap = strlen(S_ENROLL_TAG) + sizeof hex + sk_b64 + c_b64 + 4;
    char *line = sodium_malloc(cap);
    if (!line)
        return MS_ERR_NOMEM;
    int len = snprintf(line, cap, "%s %s ", S_ENROLL_TAG, hex);
    sodium_bin2base64(line + len, cap - (size_t) len, enroll_sk,
                      MS_CERT_SECRET_BYTES, sodium_base64_VARIANT_ORIGINAL);
    len += (int) strlen(line + len);
    line[len++] = ' ';
    sodium_bin2base64(line + len, cap - (size_t) len, cert, n,
                      sodium_base64_VARIANT_ORIGINAL);
    len += (int) strlen(line + len);
    line[len++] = '\n';
    rc = ms_crypto_write_atomic(path, line, (size_t) len, 0600, diag);
    sodium_free(line);
    return rc;
}

int
ms_cert_enroll_load(const char *path, uint8_t authority_pk[MS_CERT_KEY_BYTES],
                    uint8_t enroll_sk[MS_CERT_SECRET_BYTES],
                    ms_cert_t *enroll_cert, int64_t now_s, ms_diag_t *diag)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ms_diag_set_code(diag,
                                errno == ENOENT ? MS_ERR_NOTFOUND : MS_ERR_IO,
                                path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || (st.st_mode & 077)) {
        fclose(f);
        return ms_diag_set(diag, path,
                           "enrollment key is readable by others (mode "
                           "%03o); chmod 600 it",
                           (unsigned) (st.st_mode & 0777));
    }
    char *line = sodium_malloc(2048);
    if (!line) {
        fclose(f);
        return MS_ERR_NOMEM;
    }
    bool got = fgets(line, 2048, f) != NULL;
    int extra = fgetc(f);
    fclose(f);
    int rc = MS_OK;
    char *save = NULL;
    line[got ? strcspn(line, "\r\n") : 0] = 0;
    char *tag = strtok_r(line, " ", &save);
    char *hex = strtok_r(NULL, " ", &save);
    char *sk64 = strtok_r(NULL, " ", &save);
    char *c64 = strtok_r(NULL, " ", &save);
    size_t bin_len = 0;
    uint8_t cert[MS_CERT_MAX_BYTES];
    size_t cert_len = 0;
    if (!got || extra != EOF || !tag || strcmp(tag, S_ENROLL_TAG) != 0 ||
        !hex || !sk64 || !c64 || strtok_r(NULL, " ", &save))
        rc = ms_diag_set(
            diag, path,
            "not a meshsweep enrollment key (expected '" S_ENROLL_TAG
            " AUTHORITY_KEY SECRET CERTIFICATE')");
    else if (!s_hex_key(hex, authority_pk))
        rc = ms_diag_set(diag, path, "authority key is not 64 hex digits");
    else if (sodium_base642bin(enroll_sk, MS_CERT_SECRET_BYTES, sk64,
                               strlen(sk64), NULL, &bin_len, NULL,
                               sodium_base64_VARIANT_ORIGINAL) != 0 ||
             bin_len != MS_CERT_SECRET_BYTES)
        rc = ms_diag_set(diag, path, "secret key is not 64 bytes of base64");
    else if (sodium_base642bin(cert, sizeof cert, c64, strlen(c64), NULL,
                               &cert_len, NULL,
                               sodium_base64_VARIANT_ORIGINAL) != 0)
        rc = ms_diag_set(diag, path, "certificate is not valid base64");
    sodium_free(line);
    if (rc != MS_OK)
        return rc;
    ms_diag_t d;
    ms_diag_clear(&d);
    size_t used = 0;
    if (ms_cert_decode(cert, cert_len, enroll_cert, &used, &d) != MS_OK ||
        used != cert_len)
        return ms_diag_set(diag, path, "certificate: %s",
                           d.reason[0] ? d.reason : "trailing bytes");
    uint8_t pk[MS_CERT_KEY_BYTES];
    crypto_sign_ed25519_sk_to_pk(pk, enroll_sk);
    if (sodium_memcmp(pk, enroll_cert->subject, MS_CERT_KEY_BYTES) != 0)
        return ms_diag_set(diag, path,
                           "the secret key is not the certificate's key");
    ms_cert_chain_t chain = {.leaf = *enroll_cert};
    rc = ms_cert_chain_verify(&chain, authority_pk, now_s, &d);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, path, "%s", d.reason);
    if (!(enroll_cert->roles & MS_CERT_ROLE_ENROLL))
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, path,
                                "the certificate has no enroll role");
    return MS_OK;
}

int
ms_cert_enroll_issue(const uint8_t enroll_sk[MS_CERT_SECRET_BYTES],
                     const ms_cert_t *enroll_cert,
                     const uint8_t node_pk[MS_CERT_KEY_BYTES],
                     int64_t not_after, uint64_t serial, ms_cert_chain_t *out,
                     ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    ms_cert_t *leaf = &out->leaf;
    memcpy(leaf->pool_id, enroll_cert->pool_id, MS_CERT_POOL_ID_BYTES);
    memcpy(leaf->subject, node_pk, MS_CERT_KEY_BYTES);
    leaf->roles = enroll_cert->roles & ~(uint32_t) MS_CERT_ROLE_ENROLL;
    leaf->max_workers = 0;
    leaf->not_after = not_after;
    leaf->serial = serial;
    memcpy(leaf->operator_name, enroll_cert->operator_name,
           sizeof leaf->operator_name);
    int rc = ms_cert_sign(leaf, enroll_sk, diag);
    if (rc != MS_OK)
        return rc;
    out->has_enroller = true;
    out->enroller = *enroll_cert;
    return MS_OK;
}
