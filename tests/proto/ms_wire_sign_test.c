/*  =========================================================================
    ms_wire_sign_test - the signed bytes of a block, sign and verify: one
    byte changed anywhere (payload, header field, signature), a block
    relabelled with another origin or pool, unsigned blocks: refused

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_wire_sign.h"

#include "ms_hash.h"
#include "ms_identity.h"
#include "ms_test_fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

//  BLAKE2b-256 of the signed bytes of test_signed_bytes_known_answer's
//  block, from an independent Python implementation of the layout:
//    b = b"meshsweep block v1" + pool + origin
//        + struct.pack(">QQI", 5, 9, 1) + struct.pack(">QI", 9, 7)
//        + blake2b(b"abc", digest_size=32).digest()
//    blake2b(b, digest_size=32).hexdigest()
#define S_KNOWN_ANSWER                                                         \
    "19bbd3c04e5b64724d432e81e6707f6747a096c5745a1d383a5fa615522957f4"

//  Two identities and a block of three records of the first.
typedef struct {
    char dir[64];           // temp dir holding both identities
    ms_identity_t *a, *b;   // signer and another node
    uint8_t pool[32];       // pool id
    uint8_t origin[32];     // a's public key (the block's origin)
    uint8_t p0[40], p2[7];  // payloads of records 0 and 2 (1 is empty)
    uint32_t kinds[3];      // record kinds
    const uint8_t *pl[3];   // payload pointers
    size_t lens[3];         // payload lengths
    ms_wire_block_view_t v; // the block
} s_fix_t;

//  --------------------------------------------------------------------------
//  Make the identities and the block.

static int
s_setup(void **state)
{
    s_fix_t *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    snprintf(f->dir, sizeof f->dir, "/tmp/ms-sign-test.XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/a", f->dir);
    if (ms_identity_open(&f->a, path, NULL) != MS_OK)
        return -1;
    snprintf(path, sizeof path, "%s/b", f->dir);
    if (ms_identity_open(&f->b, path, NULL) != MS_OK)
        return -1;
    ms_hash_t pool;
    ms_hash_bytes("open:test", 9, &pool);
    memcpy(f->pool, pool.bytes, 32);
    memcpy(f->origin, ms_identity_public_key(f->a), 32);
    for (size_t i = 0; i < sizeof f->p0; i++)
        f->p0[i] = (uint8_t) (i * 7 + 1);
    memcpy(f->p2, "result!", 7);
    f->kinds[0] = MS_WIRE_KIND_CLAIM;
    f->kinds[1] = 77; // a kind this build does not know
    f->kinds[2] = MS_WIRE_KIND_RESULT;
    f->pl[0] = f->p0;
    f->pl[1] = NULL;
    f->pl[2] = f->p2;
    f->lens[0] = sizeof f->p0;
    f->lens[1] = 0;
    f->lens[2] = sizeof f->p2;
    f->v = (ms_wire_block_view_t){.origin = f->origin,
                                  .incarnation = 0x1122334455667788ull,
                                  .first_seq = 41,
                                  .n_records = 3,
                                  .kinds = f->kinds,
                                  .payloads = f->pl,
                                  .lens = f->lens};
    *state = f;
    return 0;
}

//  --------------------------------------------------------------------------
//  Free them.

static int
s_teardown(void **state)
{
    s_fix_t *f = *state;
    ms_identity_destroy(&f->a);
    ms_identity_destroy(&f->b);
    ms_tf_rm_rf(f->dir);
    free(f);
    return 0;
}

//  --------------------------------------------------------------------------
//  The layout is the documented one, byte for byte.

static void
test_signed_bytes_layout(void **state)
{
    s_fix_t *f = *state;
    uint8_t out[MS_WIRE_SIGN_MAX_BYTES];
    size_t n = 0;
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &f->v, out, &n),
                     MS_OK);
    assert_int_equal(n, 102 + 3 * 44);
    assert_memory_equal(out, "meshsweep block v1", 18);
    assert_memory_equal(out + 18, f->pool, 32);
    assert_memory_equal(out + 50, f->origin, 32);
    static const uint8_t hdr[] = {0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                  0x88, 0,    0,    0,    0,    0,    0,
                                  0,    41,   0,    0,    0,    3};
    assert_memory_equal(out + 82, hdr, sizeof hdr);
    for (size_t i = 0; i < 3; i++) {
        const uint8_t *r = out + 102 + 44 * i;
        uint8_t seq_kind[12] = {0};
        seq_kind[7] = (uint8_t) (41 + i);
        seq_kind[8] = (uint8_t) (f->kinds[i] >> 24);
        seq_kind[9] = (uint8_t) (f->kinds[i] >> 16);
        seq_kind[10] = (uint8_t) (f->kinds[i] >> 8);
        seq_kind[11] = (uint8_t) f->kinds[i];
        assert_memory_equal(r, seq_kind, 12);
        ms_hash_t h;
        ms_hash_bytes(f->pl[i], f->lens[i], &h);
        assert_memory_equal(r + 12, h.bytes, 32);
    }
    assert_int_equal(MS_WIRE_SIGN_MAX_BYTES, 2918);
}

//  --------------------------------------------------------------------------
//  A known answer: BLAKE2b-256 of the signed bytes of a fixed block (all
//  ids 0x01.., payload "abc"), computed independently with Python's
//  hashlib (S_KNOWN_ANSWER above), so the layout cannot drift unnoticed.

static void
test_signed_bytes_known_answer(void **state)
{
    (void) state;
    uint8_t pool[32], origin[32];
    for (int i = 0; i < 32; i++) {
        pool[i] = (uint8_t) (i + 1);
        origin[i] = (uint8_t) (0xff - i);
    }
    uint32_t kind = 7;
    const uint8_t *pl = (const uint8_t *) "abc";
    size_t len = 3;
    ms_wire_block_view_t v = {.origin = origin,
                              .incarnation = 5,
                              .first_seq = 9,
                              .n_records = 1,
                              .kinds = &kind,
                              .payloads = &pl,
                              .lens = &len};
    uint8_t out[MS_WIRE_SIGN_MAX_BYTES];
    size_t n = 0;
    assert_int_equal(ms_wire_block_signed_bytes(pool, &v, out, &n), MS_OK);
    ms_hash_t h;
    ms_hash_bytes(out, n, &h);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    assert_string_equal(hex, S_KNOWN_ANSWER);
}

//  --------------------------------------------------------------------------
//  A block signed by its origin verifies; the origin must be the signer.

static void
test_sign_verify(void **state)
{
    s_fix_t *f = *state;
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES];
    assert_int_equal(ms_wire_block_sign(f->a, f->pool, &f->v, sig), MS_OK);
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                     MS_OK);
    //  b may not sign a's block.
    assert_int_equal(ms_wire_block_sign(f->b, f->pool, &f->v, sig),
                     MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  One byte of a payload changed, anywhere: refused.

static void
test_payload_byte_flip_refused(void **state)
{
    s_fix_t *f = *state;
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES];
    assert_int_equal(ms_wire_block_sign(f->a, f->pool, &f->v, sig), MS_OK);
    uint8_t *bufs[2] = {f->p0, f->p2};
    size_t sizes[2] = {sizeof f->p0, sizeof f->p2};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sizes[k]; i++) {
            bufs[k][i] ^= 0x01;
            assert_int_equal(
                ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                MS_ERR_BADSIG);
            bufs[k][i] ^= 0x01;
        }
    //  A payload one byte longer or shorter, and the empty one filled.
    f->lens[2]--;
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                     MS_ERR_BADSIG);
    f->lens[2]++;
    uint8_t one = 0;
    f->pl[1] = &one;
    f->lens[1] = 1;
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                     MS_ERR_BADSIG);
    f->pl[1] = NULL;
    f->lens[1] = 0;
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                     MS_OK);
}

//  --------------------------------------------------------------------------
//  Each header field changed: refused.

static void
test_header_change_refused(void **state)
{
    s_fix_t *f = *state;
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES];
    assert_int_equal(ms_wire_block_sign(f->a, f->pool, &f->v, sig), MS_OK);
    ms_wire_block_view_t v = f->v;
    v.incarnation ^= 1;
    assert_int_equal(ms_wire_block_verify(f->pool, &v, sig, sizeof sig),
                     MS_ERR_BADSIG);
    v = f->v;
    v.first_seq++;
    assert_int_equal(ms_wire_block_verify(f->pool, &v, sig, sizeof sig),
                     MS_ERR_BADSIG);
    v = f->v;
    v.n_records = 2; // the last record dropped
    assert_int_equal(ms_wire_block_verify(f->pool, &v, sig, sizeof sig),
                     MS_ERR_BADSIG);
    for (int i = 0; i < 3; i++) {
        f->kinds[i] ^= 0x100;
        assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                         MS_ERR_BADSIG);
        f->kinds[i] ^= 0x100;
    }
    //  Another pool's id, any byte of it: the block is not replayable.
    for (int i = 0; i < 32; i++) {
        f->pool[i] ^= 0x80;
        assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                         MS_ERR_BADSIG);
        f->pool[i] ^= 0x80;
    }
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                     MS_OK);
}

//  --------------------------------------------------------------------------
//  One bit of the signature changed, any byte: refused; a wrong length
//  or no signature: refused.

static void
test_signature_byte_flip_refused(void **state)
{
    s_fix_t *f = *state;
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES];
    assert_int_equal(ms_wire_block_sign(f->a, f->pool, &f->v, sig), MS_OK);
    for (int i = 0; i < MS_WIRE_SIGNATURE_BYTES; i++) {
        sig[i] ^= 0x04;
        assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                         MS_ERR_BADSIG);
        sig[i] ^= 0x04;
    }
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, NULL, 0),
                     MS_ERR_BADSIG);
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, 63),
                     MS_ERR_BADSIG);
    uint8_t longer[65] = {0};
    memcpy(longer, sig, 64);
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, longer, 65),
                     MS_ERR_BADSIG);
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig, sizeof sig),
                     MS_OK);
}

//  --------------------------------------------------------------------------
//  A block relabelled with another origin: refused, whether it keeps the
//  first origin's signature or carries the relabeller's own.

static void
test_relabelled_origin_refused(void **state)
{
    s_fix_t *f = *state;
    uint8_t sig_a[MS_WIRE_SIGNATURE_BYTES], sig_b[MS_WIRE_SIGNATURE_BYTES];
    assert_int_equal(ms_wire_block_sign(f->a, f->pool, &f->v, sig_a), MS_OK);
    //  b signs the same records as its own block, then claims a's origin.
    ms_wire_block_view_t vb = f->v;
    vb.origin = ms_identity_public_key(f->b);
    assert_int_equal(ms_wire_block_sign(f->b, f->pool, &vb, sig_b), MS_OK);
    assert_int_equal(ms_wire_block_verify(f->pool, &vb, sig_b, 64), MS_OK);
    assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig_b, 64),
                     MS_ERR_BADSIG);
    //  a's block relabelled as b's, with a's signature.
    assert_int_equal(ms_wire_block_verify(f->pool, &vb, sig_a, 64),
                     MS_ERR_BADSIG);
    //  One byte of the origin changed.
    for (int i = 0; i < 32; i++) {
        f->origin[i] ^= 0x10;
        assert_int_equal(ms_wire_block_verify(f->pool, &f->v, sig_a, 64),
                         MS_ERR_BADSIG);
        f->origin[i] ^= 0x10;
    }
}

//  --------------------------------------------------------------------------
//  Out-of-contract blocks: refused as invalid, never signed.

static void
test_invalid_blocks(void **state)
{
    s_fix_t *f = *state;
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES] = {0}, out[MS_WIRE_SIGN_MAX_BYTES];
    size_t n = 1;
    ms_wire_block_view_t v = f->v;
    v.n_records = 0;
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &v, out, &n),
                     MS_ERR_INVALID);
    assert_int_equal(n, 0);
    assert_int_equal(ms_wire_block_sign(f->a, f->pool, &v, sig),
                     MS_ERR_INVALID);
    assert_int_equal(ms_wire_block_verify(f->pool, &v, sig, 64),
                     MS_ERR_INVALID);
    v.n_records = MS_WIRE_BLOCK_MAX_RECORDS + 1;
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &v, out, &n),
                     MS_ERR_INVALID);
    v = f->v;
    v.first_seq = 0;
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &v, out, &n),
                     MS_ERR_INVALID);
    v.first_seq = UINT64_MAX - 1; // 3 records: the last seq overflows
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &v, out, &n),
                     MS_ERR_INVALID);
    v.first_seq = UINT64_MAX - 2; // the last seq is UINT64_MAX: fine
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &v, out, &n), MS_OK);
    v = f->v;
    f->lens[1] = 4; // a length with a NULL payload
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &v, out, &n),
                     MS_ERR_INVALID);
    f->lens[1] = 0;
}

//  --------------------------------------------------------------------------
//  A wire block's view signs and verifies like the arrays it came from,
//  including a full block of 64 records.

static void
test_view_of_wire_block(void **state)
{
    s_fix_t *f = *state;
    ms_wire_record_t recs[MS_WIRE_BLOCK_MAX_RECORDS];
    uint8_t payload[64];
    for (int i = 0; i < 64; i++) {
        payload[i] = (uint8_t) i;
        recs[i] = (ms_wire_record_t){.seq = 100 + (uint64_t) i,
                                     .kind = MS_WIRE_KIND_RESULT,
                                     .payload = payload,
                                     .payload_bytes = (size_t) i};
    }
    ms_wire_block_t block = {
        .incarnation = 3, .first_seq = 100, .records = recs, .n_records = 64};
    memcpy(block.origin, f->origin, 32);
    uint32_t kinds[MS_WIRE_BLOCK_MAX_RECORDS];
    const uint8_t *pls[MS_WIRE_BLOCK_MAX_RECORDS];
    size_t lens[MS_WIRE_BLOCK_MAX_RECORDS];
    ms_wire_block_view_t v;
    assert_int_equal(ms_wire_block_view_init(&v, &block, kinds, pls, lens),
                     MS_OK);
    assert_int_equal(v.n_records, 64);
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES];
    assert_int_equal(ms_wire_block_sign(f->a, f->pool, &v, sig), MS_OK);
    assert_int_equal(ms_wire_block_verify(f->pool, &v, sig, 64), MS_OK);
    uint8_t out[MS_WIRE_SIGN_MAX_BYTES];
    size_t n;
    assert_int_equal(ms_wire_block_signed_bytes(f->pool, &v, out, &n), MS_OK);
    assert_int_equal(n, MS_WIRE_SIGN_MAX_BYTES);
    payload[62] ^= 1; // in the last record only (record i holds i bytes)
    assert_int_equal(ms_wire_block_verify(f->pool, &v, sig, 64), MS_ERR_BADSIG);
    block.n_records = 0;
    assert_int_equal(ms_wire_block_view_init(&v, &block, kinds, pls, lens),
                     MS_ERR_INVALID);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_signed_bytes_layout, s_setup,
                                        s_teardown),
        cmocka_unit_test(test_signed_bytes_known_answer),
        cmocka_unit_test_setup_teardown(test_sign_verify, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_payload_byte_flip_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_header_change_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_signature_byte_flip_refused,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_relabelled_origin_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_invalid_blocks, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_view_of_wire_block, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
