/*  =========================================================================
    ms_block_signer_test - sign ours, check peers', serve old blocks, with
    a fake node

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Records and anti-entropy" (signed blocks). Each case makes
    two identities in a temporary dir (us and a peer) and drives
    ms_block_signer through a fake ms_block_signer_iface_t (a members
    table it hands out, the warning lines it is given):
    - a block of ours is signed for the pool id, another origin's is left
      unsigned; the store's writer signs what it appends (attach);
    - a peer's block passes when signed by its origin for our pool, and
      is refused, counted and logged once per peer and reason when
      unsigned, altered, of another pool, or of an origin not admitted;
    - at serve, an own block this process did not sign (below
      signed_from, or of an older incarnation) is signed again when its
      signature is missing or for another pool, and left when it
      verifies; blocks of this process and of other origins are served
      as stored;
    - a pool id change between two signs: the second is for the new id.
*/
#include "ms_block_signer.h"

#include "ms_cert.h"
#include "ms_err.h"
#include "ms_hash.h"
#include "ms_identity.h"
#include "ms_members.h"
#include "ms_store.h"
#include "ms_wire.h"
#include "ms_wire_sign.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_test_fs.h"

#define ID MS_WIRE_ID_BYTES
#define MAX_LINES 16

//  The fake node: identities, a members table, the warnings it printed.
typedef struct {
    char root[256];             // the temporary dir
    ms_identity_t *me;          // our key pair
    ms_identity_t *peer;        // a peer's
    ms_members_t *members;      // what iface.members hands out
    uint8_t pool[ID];           // the pool id the signer starts with
    char lines[MAX_LINES][300]; // warnings printed, in order
    int n_lines;                // how many
} fake_t;

//  A block's records, as arrays (the store's shape).
typedef struct {
    uint32_t kinds[2];
    const uint8_t *payloads[2];
    size_t lens[2];
} recs_t;

static const uint8_t S_P0[] = "first payload";
static const uint8_t S_P1[] = "second payload";

//  --------------------------------------------------------------------------
//  iface.members and iface.warn.

static const ms_members_t *
s_members(void *arg)
{
    fake_t *fk = arg;
    return fk->members;
}

static void
s_warn(void *arg, const char *line)
{
    fake_t *fk = arg;
    if (fk->n_lines < MAX_LINES)
        snprintf(fk->lines[fk->n_lines], sizeof fk->lines[0], "%s", line);
    fk->n_lines++;
}

//  --------------------------------------------------------------------------
//  Setup: two identities under a temporary dir, pool id 0x11...

static int
s_setup(void **state)
{
    fake_t *fk = calloc(1, sizeof *fk);
    if (!fk)
        return -1;
    snprintf(fk->root, sizeof fk->root, "/tmp/ms_block_signer_test.XXXXXX");
    if (!mkdtemp(fk->root))
        return -1;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/me", fk->root);
    if (ms_identity_open(&fk->me, dir, NULL) != MS_OK)
        return -1;
    snprintf(dir, sizeof dir, "%s/peer", fk->root);
    if (ms_identity_open(&fk->peer, dir, NULL) != MS_OK)
        return -1;
    memset(fk->pool, 0x11, ID);
    *state = fk;
    return 0;
}

static int
s_teardown(void **state)
{
    fake_t *fk = *state;
    ms_members_destroy(&fk->members);
    ms_identity_destroy(&fk->me);
    ms_identity_destroy(&fk->peer);
    ms_tf_rm_rf(fk->root);
    free(fk);
    return 0;
}

//  --------------------------------------------------------------------------
//  A signer of ours (incarnation 3, signed_from 10) over the fake.

static ms_block_signer_t *
s_signer(fake_t *fk)
{
    ms_block_signer_config_t cfg = {
        .identity = fk->me, .incarnation = 3, .signed_from = 10};
    memcpy(cfg.pool_id, fk->pool, ID);
    ms_block_signer_iface_t iface = {
        .arg = fk, .members = s_members, .warn = s_warn};
    ms_block_signer_t *signer = ms_block_signer_new(&cfg, &iface);
    assert_non_null(signer);
    return signer;
}

static void
s_recs(recs_t *r)
{
    r->kinds[0] = 42;
    r->kinds[1] = 43;
    r->payloads[0] = S_P0;
    r->payloads[1] = S_P1;
    r->lens[0] = sizeof S_P0;
    r->lens[1] = sizeof S_P1;
}

//  --------------------------------------------------------------------------
//  Whether SIG verifies for (ORIGIN, INCARNATION, FIRST_SEQ, R) under POOL.

static bool
s_verifies(const uint8_t *pool, const uint8_t *origin, uint64_t incarnation,
           uint64_t first_seq, const recs_t *r, const uint8_t *sig,
           size_t sig_len)
{
    ms_wire_block_view_t view = ms_wire_block_view(
        origin, incarnation, first_seq, 2, r->kinds, r->payloads, r->lens);
    return ms_wire_block_verify(pool, &view, sig, sig_len) == MS_OK;
}

//  --------------------------------------------------------------------------
//  A wire block of the peer (incarnation 1, seqs 5..6) with R's records,
//  signed by the peer for POOL (NULL: unsigned). RECS: room for its
//  records; SIG: room for the signature.

static ms_wire_block_t
s_peer_block(fake_t *fk, const uint8_t *pool, const recs_t *r,
             ms_wire_record_t recs[2], uint8_t sig[MS_WIRE_SIGNATURE_BYTES])
{
    ms_wire_block_t b;
    memset(&b, 0, sizeof b);
    memcpy(b.origin, ms_identity_public_key(fk->peer), ID);
    b.incarnation = 1;
    b.first_seq = 5;
    b.n_records = 2;
    b.records = recs;
    for (size_t i = 0; i < 2; i++) {
        recs[i].seq = 5 + i;
        recs[i].kind = r->kinds[i];
        recs[i].payload = (uint8_t *) r->payloads[i];
        recs[i].payload_bytes = r->lens[i];
    }
    if (pool) {
        ms_wire_block_view_t view = ms_wire_block_view(
            b.origin, 1, 5, 2, r->kinds, r->payloads, r->lens);
        assert_int_equal(ms_wire_block_sign(fk->peer, pool, &view, sig), MS_OK);
        b.signature = sig;
        b.signature_bytes = MS_WIRE_SIGNATURE_BYTES;
    }
    return b;
}

//  --------------------------------------------------------------------------
//  What a check case works with: a signer, records, a link, room for a
//  peer's block.

typedef struct {
    ms_block_signer_t *signer;            // s_signer's
    recs_t r;                             // the block's records
    uint8_t from[ID];                     // the link (0xA0...)
    ms_wire_record_t recs[2];             // the wire block's records
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES]; // its signature
} check_t;

static void
s_check_init(fake_t *fk, check_t *c)
{
    memset(c, 0, sizeof *c);
    c->signer = s_signer(fk);
    s_recs(&c->r);
    memset(c->from, 0xA0, ID);
}

//  ==========================================================================
//  Tests

//  --------------------------------------------------------------------------
//  Ours is signed for the pool id; another origin's block stays unsigned.

static void
test_sign_own_block_only(void **state)
{
    fake_t *fk = *state;
    ms_block_signer_t *signer = s_signer(fk);
    recs_t r;
    s_recs(&r);
    const uint8_t *me = ms_identity_public_key(fk->me);
    uint8_t sig[MS_WIRE_SIGNATURE_BYTES];
    size_t sig_len = 99;
    assert_int_equal(ms_block_signer_sign(signer, me, 3, 10, 2, r.kinds,
                                          r.payloads, r.lens, sig, &sig_len),
                     MS_OK);
    assert_int_equal(sig_len, MS_WIRE_SIGNATURE_BYTES);
    assert_true(s_verifies(fk->pool, me, 3, 10, &r, sig, sig_len));
    uint8_t other_pool[ID];
    memset(other_pool, 0x22, ID);
    assert_false(s_verifies(other_pool, me, 3, 10, &r, sig, sig_len));
    assert_false(s_verifies(fk->pool, me, 3, 11, &r, sig, sig_len));

    const uint8_t *peer = ms_identity_public_key(fk->peer);
    sig_len = 99;
    assert_int_equal(ms_block_signer_sign(signer, peer, 1, 1, 2, r.kinds,
                                          r.payloads, r.lens, sig, &sig_len),
                     MS_OK);
    assert_int_equal(sig_len, 0);
    // a block ms_wire_block_sign refuses fails the append
    sig_len = 99;
    assert_int_equal(ms_block_signer_sign(signer, me, 3, 12, 0, r.kinds,
                                          r.payloads, r.lens, sig, &sig_len),
                     MS_ERR_INVALID);
    assert_int_equal(sig_len, 0);
    ms_block_signer_destroy(&signer);
    assert_null(signer);
    ms_block_signer_destroy(&signer); // NULL-safe
}

//  --------------------------------------------------------------------------
//  One stored block of ours, as ms_store_read_blocks hands it.

typedef struct {
    int n_blocks;
    uint64_t first_seq;
    size_t n;
    bool verified;
    const uint8_t *pool;
} read_ctx_t;

static int
s_read_fn(void *arg, const uint8_t *origin, uint64_t incarnation,
          uint64_t first_seq, size_t n, const uint32_t *kinds,
          const uint8_t *const *payloads, const size_t *lens,
          const uint8_t *signature, size_t sig_len)
{
    read_ctx_t *ctx = arg;
    ctx->n_blocks++;
    ctx->first_seq = first_seq;
    ctx->n = n;
    ms_wire_block_view_t view = ms_wire_block_view(
        origin, incarnation, first_seq, n, kinds, payloads, lens);
    ctx->verified =
        ms_wire_block_verify(ctx->pool, &view, signature, sig_len) == MS_OK;
    return 0;
}

//  --------------------------------------------------------------------------
//  Attached to a store, the writer thread signs what we append.

static void
test_attach_store_signs_appends(void **state)
{
    fake_t *fk = *state;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/store", fk->root);
    ms_store_t *store = NULL;
    ms_store_options_t opts;
    ms_store_options_default(&opts);
    opts.map_size_bytes = 1 << 20; // a small first map (it grows)
    assert_int_equal(ms_store_open(&store, dir, &opts, NULL), MS_OK);
    ms_block_signer_config_t cfg = {.identity = fk->me,
                                    .incarnation = ms_store_incarnation(store),
                                    .signed_from = 1};
    memcpy(cfg.pool_id, fk->pool, ID);
    ms_block_signer_iface_t iface = {.arg = fk};
    ms_block_signer_t *signer = ms_block_signer_new(&cfg, &iface);
    assert_non_null(signer);
    ms_block_signer_attach(signer, store);
    const uint8_t *me = ms_identity_public_key(fk->me);
    assert_int_equal(ms_store_append(store, me, 42, "\x01\x02", 2, NULL),
                     MS_OK);
    read_ctx_t ctx = {.pool = fk->pool};
    assert_int_equal(ms_store_read_blocks(store, me,
                                          ms_store_incarnation(store), 1, 1, 16,
                                          s_read_fn, &ctx),
                     MS_OK);
    assert_int_equal(ctx.n_blocks, 1);
    assert_int_equal(ctx.first_seq, 1);
    assert_true(ctx.verified);
    // after a pool change the next block is signed for the new pool
    uint8_t pool2[ID];
    memset(pool2, 0x33, ID);
    ms_block_signer_set_pool(signer, pool2, 2);
    assert_int_equal(ms_store_append(store, me, 42, "\x03", 1, NULL), MS_OK);
    ctx = (read_ctx_t){.pool = pool2};
    assert_int_equal(ms_store_read_blocks(store, me,
                                          ms_store_incarnation(store), 2, 2, 16,
                                          s_read_fn, &ctx),
                     MS_OK);
    assert_int_equal(ctx.n_blocks, 1);
    assert_int_equal(ctx.first_seq, 2);
    assert_true(ctx.verified);
    ms_store_destroy(&store); // before the signer it signs with
    ms_block_signer_destroy(&signer);
}

//  --------------------------------------------------------------------------
//  A peer's block signed for our pool passes; unsigned, altered, another
//  pool's, another origin claimed: refused with the reason counted.

static void
test_check_refusal_reasons(void **state)
{
    fake_t *fk = *state;
    check_t c;
    s_check_init(fk, &c);

    ms_wire_block_t b = s_peer_block(fk, fk->pool, &c.r, c.recs, c.sig);
    assert_true(ms_block_signer_check(c.signer, c.from, &b));
    ms_block_signer_stats_t st;
    ms_block_signer_stats(c.signer, &st);
    assert_int_equal(st.n_rejected, 0);

    b = s_peer_block(fk, NULL, &c.r, c.recs, c.sig);
    assert_false(ms_block_signer_check(c.signer, c.from, &b));
    ms_block_signer_stats(c.signer, &st);
    assert_int_equal(st.n_rejected, 1);
    assert_int_equal(st.n_unsigned, 1);

    // a payload byte changed after signing
    uint8_t altered[sizeof S_P0];
    memcpy(altered, S_P0, sizeof altered);
    b = s_peer_block(fk, fk->pool, &c.r, c.recs, c.sig);
    altered[0] ^= 1;
    c.recs[0].payload = altered;
    assert_false(ms_block_signer_check(c.signer, c.from, &b));
    // another pool's block
    uint8_t other_pool[ID];
    memset(other_pool, 0x22, ID);
    b = s_peer_block(fk, other_pool, &c.r, c.recs, c.sig);
    assert_false(ms_block_signer_check(c.signer, c.from, &b));
    // signed by the peer, our origin claimed
    b = s_peer_block(fk, fk->pool, &c.r, c.recs, c.sig);
    memcpy(b.origin, ms_identity_public_key(fk->me), ID);
    assert_false(ms_block_signer_check(c.signer, c.from, &b));
    // a signature of the wrong length
    b = s_peer_block(fk, fk->pool, &c.r, c.recs, c.sig);
    b.signature_bytes = 10;
    assert_false(ms_block_signer_check(c.signer, c.from, &b));
    ms_block_signer_stats(c.signer, &st);
    assert_int_equal(st.n_bad_signature, 4);
    assert_int_equal(st.n_rejected, 5);
    assert_int_equal(st.n_not_admitted, 0);
    assert_int_equal(st.n_resigned, 0);
    ms_block_signer_destroy(&c.signer);
}

//  --------------------------------------------------------------------------
//  With an authority, a well-signed block of an origin the members table
//  never knew is refused; in an open pool (a table without authority, or
//  none) it passes.

static void
test_check_not_admitted(void **state)
{
    fake_t *fk = *state;
    check_t c;
    s_check_init(fk, &c);
    ms_wire_block_t b = s_peer_block(fk, fk->pool, &c.r, c.recs, c.sig);

    fk->members = ms_members_new(NULL, fk->pool); // open pool
    assert_non_null(fk->members);
    assert_true(ms_block_signer_check(c.signer, c.from, &b));
    ms_members_destroy(&fk->members);

    uint8_t apk[MS_CERT_KEY_BYTES], ask[MS_CERT_SECRET_BYTES];
    assert_int_equal(ms_cert_keypair(apk, ask), MS_OK);
    fk->members = ms_members_new(apk, fk->pool);
    assert_non_null(fk->members);
    assert_false(ms_block_signer_check(c.signer, c.from, &b));
    ms_block_signer_stats_t st;
    ms_block_signer_stats(c.signer, &st);
    assert_int_equal(st.n_not_admitted, 1);
    assert_int_equal(st.n_rejected, 1);

    // the peer admitted with a certificate of the authority: it passes
    ms_cert_chain_t chain;
    memset(&chain, 0, sizeof chain);
    ms_cert_pool_id(apk, chain.leaf.pool_id);
    memcpy(chain.leaf.subject, ms_identity_public_key(fk->peer), ID);
    chain.leaf.roles = MS_CERT_ROLE_WORKER;
    snprintf(chain.leaf.operator_name, sizeof chain.leaf.operator_name, "bob");
    assert_int_equal(ms_cert_sign(&chain.leaf, ask, NULL), MS_OK);
    ms_members_destroy(&fk->members);
    fk->members = ms_members_new(apk, chain.leaf.pool_id);
    ms_members_refusal_t why;
    assert_int_equal(ms_members_admit(fk->members, &chain, 0, 0, &why), MS_OK);
    assert_true(ms_block_signer_check(c.signer, c.from, &b));
    ms_block_signer_stats(c.signer, &st);
    assert_int_equal(st.n_rejected, 1);
    ms_block_signer_destroy(&c.signer);
}

//  --------------------------------------------------------------------------
//  A refusal is logged once per peer and reason.

static void
test_check_logs_once_per_peer_and_reason(void **state)
{
    fake_t *fk = *state;
    check_t c;
    s_check_init(fk, &c);
    const uint8_t *from_a = c.from;
    uint8_t from_b[ID];
    memset(from_b, 0xB0, ID);
    ms_wire_block_t unsigned_b = s_peer_block(fk, NULL, &c.r, c.recs, c.sig);
    for (int i = 0; i < 3; i++)
        assert_false(ms_block_signer_check(c.signer, from_a, &unsigned_b));
    assert_int_equal(fk->n_lines, 1);
    assert_non_null(strstr(fk->lines[0], "refused a block from peer a0a0"));
    assert_non_null(strstr(fk->lines[0], "seqs 5..6: unsigned"));
    // another reason c.from the same peer: one more line
    uint8_t other_pool[ID];
    memset(other_pool, 0x22, ID);
    ms_wire_block_t bad = s_peer_block(fk, other_pool, &c.r, c.recs, c.sig);
    assert_false(ms_block_signer_check(c.signer, from_a, &bad));
    assert_false(ms_block_signer_check(c.signer, from_a, &bad));
    assert_int_equal(fk->n_lines, 2);
    assert_non_null(strstr(fk->lines[1], ": bad signature"));
    // the same reason c.from another peer: one more line
    unsigned_b = s_peer_block(fk, NULL, &c.r, c.recs, c.sig);
    assert_false(ms_block_signer_check(c.signer, from_b, &unsigned_b));
    assert_int_equal(fk->n_lines, 3);
    assert_non_null(strstr(fk->lines[2], "peer b0b0"));
    ms_block_signer_stats_t st;
    ms_block_signer_stats(c.signer, &st);
    assert_int_equal(st.n_rejected, 6); // every refusal counted
    ms_block_signer_destroy(&c.signer);
}

//  --------------------------------------------------------------------------
//  Serve: an own block this process did not sign gets a fresh signature
//  when it has none or one of another pool; one that verifies, one signed
//  by this process and other origins' blocks are served as stored.

static void
test_serve_resigns_old_own_blocks(void **state)
{
    fake_t *fk = *state;
    ms_block_signer_t *signer = s_signer(fk); // incarnation 3, from seq 10
    recs_t r;
    s_recs(&r);
    const uint8_t *me = ms_identity_public_key(fk->me);
    uint8_t fresh[MS_WIRE_SIGNATURE_BYTES];
    ms_block_signer_stats_t st;

    // unsigned, below signed_from: signed again for the pool
    const uint8_t *sig = NULL;
    size_t sig_len = 0;
    ms_block_signer_serve(signer, me, 3, 4, 2, r.kinds, r.payloads, r.lens,
                          &sig, &sig_len, fresh);
    assert_ptr_equal(sig, fresh);
    assert_int_equal(sig_len, MS_WIRE_SIGNATURE_BYTES);
    assert_true(s_verifies(fk->pool, me, 3, 4, &r, sig, sig_len));
    ms_block_signer_stats(signer, &st);
    assert_int_equal(st.n_resigned, 1);

    // an older incarnation's block signed for another pool: signed again
    uint8_t other_pool[ID], old_sig[MS_WIRE_SIGNATURE_BYTES];
    memset(other_pool, 0x22, ID);
    ms_wire_block_view_t view =
        ms_wire_block_view(me, 2, 50, 2, r.kinds, r.payloads, r.lens);
    assert_int_equal(ms_wire_block_sign(fk->me, other_pool, &view, old_sig),
                     MS_OK);
    sig = old_sig;
    sig_len = sizeof old_sig;
    ms_block_signer_serve(signer, me, 2, 50, 2, r.kinds, r.payloads, r.lens,
                          &sig, &sig_len, fresh);
    assert_ptr_equal(sig, fresh);
    assert_true(s_verifies(fk->pool, me, 2, 50, &r, sig, sig_len));
    ms_block_signer_stats(signer, &st);
    assert_int_equal(st.n_resigned, 2);

    // an old block whose signature verifies for this pool: as stored
    uint8_t good[MS_WIRE_SIGNATURE_BYTES];
    view.incarnation = 3;
    view.first_seq = 4;
    assert_int_equal(ms_wire_block_sign(fk->me, fk->pool, &view, good), MS_OK);
    sig = good;
    sig_len = sizeof good;
    ms_block_signer_serve(signer, me, 3, 4, 2, r.kinds, r.payloads, r.lens,
                          &sig, &sig_len, fresh);
    assert_ptr_equal(sig, good);

    // signed by this process (this incarnation, from signed_from): as
    // stored, even unsigned (it is never checked again)
    sig = NULL;
    sig_len = 0;
    ms_block_signer_serve(signer, me, 3, 10, 2, r.kinds, r.payloads, r.lens,
                          &sig, &sig_len, fresh);
    assert_null(sig);
    assert_int_equal(sig_len, 0);

    // another origin's unsigned block: as stored
    ms_block_signer_serve(signer, ms_identity_public_key(fk->peer), 1, 1, 2,
                          r.kinds, r.payloads, r.lens, &sig, &sig_len, fresh);
    assert_null(sig);
    ms_block_signer_stats(signer, &st);
    assert_int_equal(st.n_resigned, 2);
    ms_block_signer_destroy(&signer);
}

//  --------------------------------------------------------------------------
//  A pool id change between two signs (the node's first certificate):
//  the second block is signed for the new id, peers' blocks are checked
//  under it, and our blocks signed before are signed again at serve.

static void
test_pool_change_between_signs(void **state)
{
    fake_t *fk = *state;
    memset(fk->pool, 0, ID); // alone: no pool
    ms_block_signer_t *signer = s_signer(fk);
    recs_t r;
    s_recs(&r);
    const uint8_t *me = ms_identity_public_key(fk->me);
    uint8_t sig1[MS_WIRE_SIGNATURE_BYTES], sig2[MS_WIRE_SIGNATURE_BYTES];
    size_t len1 = 0, len2 = 0;
    assert_int_equal(ms_block_signer_sign(signer, me, 3, 10, 2, r.kinds,
                                          r.payloads, r.lens, sig1, &len1),
                     MS_OK);
    uint8_t pool[ID], got[ID];
    memset(pool, 0x44, ID);
    ms_block_signer_pool_id(signer, got);
    assert_memory_equal(got, fk->pool, ID);
    ms_block_signer_set_pool(signer, pool, 12);
    ms_block_signer_pool_id(signer, got);
    assert_memory_equal(got, pool, ID);
    assert_int_equal(ms_block_signer_sign(signer, me, 3, 12, 2, r.kinds,
                                          r.payloads, r.lens, sig2, &len2),
                     MS_OK);
    uint8_t zero[ID];
    memset(zero, 0, ID);
    assert_true(s_verifies(zero, me, 3, 10, &r, sig1, len1));
    assert_false(s_verifies(pool, me, 3, 10, &r, sig1, len1));
    assert_true(s_verifies(pool, me, 3, 12, &r, sig2, len2));

    // the block signed before the change (seq 10 < 12) is served anew
    uint8_t fresh[MS_WIRE_SIGNATURE_BYTES];
    const uint8_t *sig = sig1;
    size_t sig_len = len1;
    ms_block_signer_serve(signer, me, 3, 10, 2, r.kinds, r.payloads, r.lens,
                          &sig, &sig_len, fresh);
    assert_ptr_equal(sig, fresh);
    assert_true(s_verifies(pool, me, 3, 10, &r, sig, sig_len));
    // the one after it is trusted as it is
    sig = sig2;
    sig_len = len2;
    ms_block_signer_serve(signer, me, 3, 12, 2, r.kinds, r.payloads, r.lens,
                          &sig, &sig_len, fresh);
    assert_ptr_equal(sig, sig2);

    // a peer's block for the old (zero) pool no longer passes
    uint8_t from[ID];
    memset(from, 0xA0, ID);
    ms_wire_record_t recs[2];
    uint8_t psig[MS_WIRE_SIGNATURE_BYTES];
    ms_wire_block_t b = s_peer_block(fk, zero, &r, recs, psig);
    assert_false(ms_block_signer_check(signer, from, &b));
    b = s_peer_block(fk, pool, &r, recs, psig);
    assert_true(ms_block_signer_check(signer, from, &b));
    ms_block_signer_destroy(&signer);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sign_own_block_only, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_attach_store_signs_appends,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_check_refusal_reasons, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_check_not_admitted, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(
            test_check_logs_once_per_peer_and_reason, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_serve_resigns_old_own_blocks,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_pool_change_between_signs, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
