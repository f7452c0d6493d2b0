/*  =========================================================================
    ms_authority_item - items signed by a pool authority: revocations and
    quarantine clears

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A fixed layout like ms_cert's, for the same reason: the signed bytes
    must be canonical on every node and in every version of the code, and
    items arrive from peers, so decoding is strict and bounded (no length
    field is trusted beyond MS_AUTHORITY_ITEM_MAX_CUTS).
*/
#include "ms_authority_item.h"
#include "ms_be.h"
#include "ms_crypto_internal.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAGIC "MSA1"
#define S_MAGIC_BYTES 4
#define S_HEAD_BYTES                                                           \
    (S_MAGIC_BYTES + 1 + MS_CERT_POOL_ID_BYTES + 2 * MS_CERT_KEY_BYTES + 8 + 8)
#define S_CUT_HEAD_BYTES 3 // cut_all u8 | n_cuts u16
#define S_CUT_BYTES 16     // incarnation u64 | max_seq u64
#define S_FILE_TAG "meshsweep-authority-item-v1"

//  --------------------------------------------------------------------------
//  Name of a kind.

const char *
ms_authority_item_kind_name(int kind)
{
    switch (kind) {
    case MS_AUTHORITY_ITEM_REVOKE:
        return "revoke";
    case MS_AUTHORITY_ITEM_CLEAR_QUARANTINE:
        return "clear-quarantine";
    default:
        return "unknown";
    }
}

//  --------------------------------------------------------------------------
//  Field checks.

int
ms_authority_item_check_fields(const ms_authority_item_t *item, ms_diag_t *diag)
{
    if (item->kind != MS_AUTHORITY_ITEM_REVOKE &&
        item->kind != MS_AUTHORITY_ITEM_CLEAR_QUARANTINE)
        return ms_diag_set(diag, "authority item", "unknown kind %d",
                           (int) item->kind);
    if (item->issued_at < 0)
        return ms_diag_set(diag, "authority item", "issued before 1970");
    if (item->kind == MS_AUTHORITY_ITEM_CLEAR_QUARANTINE && item->cut_all)
        return ms_diag_set(diag, "authority item",
                           "a quarantine clear needs a cut of "
                           "INCARNATION:SEQ entries, not 'all'");
    if (item->cut_all)
        return item->n_cuts == 0 ? MS_OK
                                 : ms_diag_set(diag, "authority item",
                                               "cut 'all' with %u entries",
                                               (unsigned) item->n_cuts);
    if (item->n_cuts < 1 || item->n_cuts > MS_AUTHORITY_ITEM_MAX_CUTS)
        return ms_diag_set(diag, "authority item",
                           "cut has %u entries (1..%d, or 'all')",
                           (unsigned) item->n_cuts, MS_AUTHORITY_ITEM_MAX_CUTS);
    for (uint32_t i = 1; i < item->n_cuts; i++)
        if (item->cuts[i].incarnation <= item->cuts[i - 1].incarnation)
            return ms_diag_set(diag, "authority item",
                               "cut entries must have strictly increasing "
                               "incarnations (entry %u)",
                               (unsigned) i);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Encode.

size_t
ms_authority_item_encode(const ms_authority_item_t *item, uint8_t *out)
{
    if (ms_authority_item_check_fields(item, NULL) != MS_OK)
        return 0;
    uint8_t *p = out;
    memcpy(p, S_MAGIC, S_MAGIC_BYTES);
    p += S_MAGIC_BYTES;
    *p++ = (uint8_t) item->kind;
    memcpy(p, item->pool_id, MS_CERT_POOL_ID_BYTES);
    p += MS_CERT_POOL_ID_BYTES;
    memcpy(p, item->subject, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    memcpy(p, item->issuer, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    p = ms_be_put64(p, (uint64_t) item->issued_at);
    p = ms_be_put64(p, item->serial);
    *p++ = item->cut_all ? 1 : 0; // every kind carries a cut
    *p++ = (uint8_t) (item->n_cuts >> 8);
    *p++ = (uint8_t) item->n_cuts;
    for (uint32_t i = 0; i < item->n_cuts; i++) {
        p = ms_be_put64(p, item->cuts[i].incarnation);
        p = ms_be_put64(p, item->cuts[i].max_seq);
    }
    memcpy(p, item->signature, MS_CERT_SIG_BYTES);
    p += MS_CERT_SIG_BYTES;
    return (size_t) (p - out);
}

//  --------------------------------------------------------------------------
//  Decode (strict).

int
ms_authority_item_decode(const uint8_t *buf, size_t n, ms_authority_item_t *out,
                         ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    if (n < S_HEAD_BYTES + MS_CERT_SIG_BYTES ||
        memcmp(buf, S_MAGIC, S_MAGIC_BYTES) != 0)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                "not an authority item (%zu bytes)", n);
    const uint8_t *p = buf + S_MAGIC_BYTES;
    uint8_t kind = *p++;
    if (kind == MS_AUTHORITY_ITEM_CLEAR_QUARANTINE_V1)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                "a quarantine clear without a cut (kind 2, "
                                "an older format) is no longer accepted: "
                                "sign it again with meshsweep pool clear");
    if (kind != MS_AUTHORITY_ITEM_REVOKE &&
        kind != MS_AUTHORITY_ITEM_CLEAR_QUARANTINE)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                "unknown kind %u", (unsigned) kind);
    out->kind = (ms_authority_item_kind_t) kind;
    memcpy(out->pool_id, p, MS_CERT_POOL_ID_BYTES);
    p += MS_CERT_POOL_ID_BYTES;
    memcpy(out->subject, p, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    memcpy(out->issuer, p, MS_CERT_KEY_BYTES);
    p += MS_CERT_KEY_BYTES;
    out->issued_at = (int64_t) ms_be_get64(p);
    out->serial = ms_be_get64(p + 8);
    p += 16;
    size_t want = S_HEAD_BYTES + MS_CERT_SIG_BYTES;
    {
        if (n < S_HEAD_BYTES + S_CUT_HEAD_BYTES + MS_CERT_SIG_BYTES)
            return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                    "truncated cut");
        if (p[0] > 1)
            return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                    "cut flag %u (0 or 1)", (unsigned) p[0]);
        out->cut_all = p[0] == 1;
        uint32_t n_cuts = ((uint32_t) p[1] << 8) | p[2];
        p += S_CUT_HEAD_BYTES;
        if (n_cuts > MS_AUTHORITY_ITEM_MAX_CUTS)
            return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                    "cut of %u entries (at most %d)",
                                    (unsigned) n_cuts,
                                    MS_AUTHORITY_ITEM_MAX_CUTS);
        want += S_CUT_HEAD_BYTES + (size_t) n_cuts * S_CUT_BYTES;
        if (n < want)
            return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                    "truncated (%zu of %zu bytes)", n, want);
        out->n_cuts = n_cuts;
        for (uint32_t i = 0; i < n_cuts; i++) {
            out->cuts[i].incarnation = ms_be_get64(p);
            out->cuts[i].max_seq = ms_be_get64(p + 8);
            p += S_CUT_BYTES;
        }
    }
    if (n != want)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item",
                                "%zu bytes, expected %zu", n, want);
    memcpy(out->signature, p, MS_CERT_SIG_BYTES);
    ms_diag_t d;
    ms_diag_clear(&d);
    if (ms_authority_item_check_fields(out, &d) != MS_OK)
        return ms_diag_set_code(diag, MS_ERR_PROTOCOL, "authority item", "%s",
                                d.reason);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Sign.

int
ms_authority_item_sign(ms_authority_item_t *item,
                       const uint8_t sk[MS_CERT_SECRET_BYTES], ms_diag_t *diag)
{
    int rc = ms_authority_item_check_fields(item, diag);
    if (rc != MS_OK)
        return rc;
    crypto_sign_ed25519_sk_to_pk(item->issuer, sk);
    ms_cert_pool_id(item->issuer, item->pool_id);
    uint8_t buf[MS_AUTHORITY_ITEM_MAX_BYTES];
    size_t n = ms_authority_item_encode(item, buf);
    if (n == 0 || crypto_sign_detached(item->signature, NULL, buf,
                                       n - MS_CERT_SIG_BYTES, sk) != 0)
        return ms_diag_set(diag, "authority item", "signing failed");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Signature by the item's own issuer, and its pool id matching it.

static int
s_verify_self(const ms_authority_item_t *item, ms_diag_t *diag)
{
    uint8_t pool_id[MS_CERT_POOL_ID_BYTES];
    ms_cert_pool_id(item->issuer, pool_id);
    if (sodium_memcmp(pool_id, item->pool_id, MS_CERT_POOL_ID_BYTES) != 0)
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "authority item",
                                "its pool id is not its issuer's");
    uint8_t buf[MS_AUTHORITY_ITEM_MAX_BYTES];
    size_t n = ms_authority_item_encode(item, buf);
    if (n == 0 ||
        crypto_sign_verify_detached(item->signature, buf, n - MS_CERT_SIG_BYTES,
                                    item->issuer) != 0)
        return ms_diag_set_code(diag, MS_ERR_BADSIG, "authority item",
                                "signature does not verify");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Verify against the pool authority.

int
ms_authority_item_verify(const ms_authority_item_t *item,
                         const uint8_t authority_pk[MS_CERT_KEY_BYTES],
                         ms_diag_t *diag)
{
    int rc = ms_authority_item_check_fields(item, diag);
    if (rc != MS_OK)
        return rc;
    if (sodium_memcmp(item->issuer, authority_pk, MS_CERT_KEY_BYTES) != 0)
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, "authority item",
                                "not issued by this pool's authority");
    return s_verify_self(item, diag);
}

//  --------------------------------------------------------------------------
//  Digest of the whole encoding.

int
ms_authority_item_digest(const ms_authority_item_t *item, ms_hash_t *out)
{
    uint8_t buf[MS_AUTHORITY_ITEM_MAX_BYTES];
    size_t n = ms_authority_item_encode(item, buf);
    if (n == 0)
        return MS_ERR_INVALID;
    ms_hash_bytes(buf, n, out);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Text file form.

int
ms_authority_item_save(const char *path, const ms_authority_item_t *item,
                       ms_diag_t *diag)
{
    uint8_t bin[MS_AUTHORITY_ITEM_MAX_BYTES];
    size_t n = ms_authority_item_encode(item, bin);
    if (n == 0)
        return ms_diag_set(diag, path, "authority item fields out of range");
    return ms_crypto_write_line(path, S_FILE_TAG " ", bin, n, diag);
}

int
ms_authority_item_load(const char *path, ms_authority_item_t *out,
                       ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    char line[4096];
    int rc =
        ms_crypto_read_line(path, line, sizeof line, "authority item", diag);
    if (rc != MS_OK)
        return rc;
    char *save = NULL;
    char *tag = strtok_r(line, " ", &save);
    char *b64 = strtok_r(NULL, " ", &save);
    if (!tag || strcmp(tag, S_FILE_TAG) != 0 || !b64 ||
        strtok_r(NULL, " ", &save))
        return ms_diag_set(diag, path,
                           "not a meshsweep authority item (expected "
                           "'" S_FILE_TAG " ITEM')");
    uint8_t bin[MS_AUTHORITY_ITEM_MAX_BYTES];
    size_t n = 0;
    if (sodium_base642bin(bin, sizeof bin, b64, strlen(b64), NULL, &n, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0)
        return ms_diag_set(diag, path,
                           "item is not valid base64 (or too "
                           "long)");
    ms_diag_t d;
    ms_diag_clear(&d);
    if (ms_authority_item_decode(bin, n, out, &d) != MS_OK)
        return ms_diag_set(diag, path, "%s", d.reason);
    rc = s_verify_self(out, &d);
    if (rc != MS_OK)
        return ms_diag_set_code(diag, rc, path, "%s", d.reason);
    return MS_OK;
}
