/*  =========================================================================
    ms_authority_test - the node's certificate, pool id and operator, with
    a fake node

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission". Each case makes a
    temporary data dir, a pool authority key pair and a node key, writes
    what identity/node.cert (or an enrollment kit) should hold, and
    drives ms_authority through a fake ms_authority_iface_t (it records
    renewals and joins, and can make either fail):
    - alone, in an open pool, with a certificate: pool id, operator,
      chain, authority key, the status copy;
    - a bad certificate is refused with a clear error: another node's,
      signed by a key that is not the authority, expired, not a bundle;
      a certificate beside --open-pool; a missing enrollment kit;
    - enrollment: a kit issues and saves our chain at open;
    - reload: nothing before and nothing now; a first certificate joins;
      a renewal goes to the node first; another pool, an open pool, a
      file gone, a failed renewal or join leave the old state;
    - a reload happens only when asked.
*/
#include "ms_authority.h"

#include "ms_cert.h"
#include "ms_err.h"
#include "ms_hash.h"

#include <sodium.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ms_test_fs.h"

//  The fake node and its pool.
typedef struct {
    char root[256];                         // the temporary data dir
    char cert_path[400];                    // root/identity/node.cert
    uint8_t node_pk[MS_CERT_KEY_BYTES];     // this node's key
    uint8_t apk[MS_CERT_KEY_BYTES];         // the pool authority's key
    uint8_t ask[MS_CERT_SECRET_BYTES];      // ... and its secret
    int n_renew;                            // iface.renew calls
    int n_join;                             // iface.join calls
    int renew_rc;                           // what renew returns
    int join_rc;                            // what join returns
    char renewed_operator[80];              // the last renewed chain's
    size_t renewed_len;                     // its encoding's length
    char pool_at_join[MS_HASH_HEX_LEN + 1]; // pool id seen inside join
} fake_t;

//  --------------------------------------------------------------------------
//  iface: record, answer as set.

static int
s_renew(void *arg, const ms_cert_chain_t *chain, const uint8_t *cert,
        size_t cert_len)
{
    fake_t *fk = arg;
    fk->n_renew++;
    snprintf(fk->renewed_operator, sizeof fk->renewed_operator, "%s",
             chain->leaf.operator_name);
    fk->renewed_len = cert && cert_len ? cert_len : 0;
    return fk->renew_rc;
}

static ms_authority_t *s_current; // the instance join looks into

static int
s_join(void *arg, ms_diag_t *diag)
{
    fake_t *fk = arg;
    fk->n_join++;
    const char *hex = s_current ? ms_authority_pool_id_hex(s_current) : NULL;
    snprintf(fk->pool_at_join, sizeof fk->pool_at_join, "%s", hex ? hex : "");
    if (fk->join_rc != MS_OK)
        return ms_diag_set_code(diag, fk->join_rc, "mesh", "port in use");
    return MS_OK;
}

static int
s_mesh_port(void *arg)
{
    (void) arg;
    return 5871;
}

//  --------------------------------------------------------------------------
//  Setup: data dir with identity/, keys.

static int
s_setup(void **state)
{
    fake_t *fk = calloc(1, sizeof *fk);
    if (!fk)
        return -1;
    snprintf(fk->root, sizeof fk->root, "/tmp/ms_authority_test.XXXXXX");
    if (!mkdtemp(fk->root))
        return -1;
    char dir[300];
    snprintf(dir, sizeof dir, "%s/identity", fk->root);
    if (mkdir(dir, 0700) != 0)
        return -1;
    snprintf(fk->cert_path, sizeof fk->cert_path, "%s/node.cert", dir);
    randombytes_buf(fk->node_pk, sizeof fk->node_pk);
    if (ms_cert_keypair(fk->apk, fk->ask) != MS_OK)
        return -1;
    *state = fk;
    return 0;
}

static int
s_teardown(void **state)
{
    fake_t *fk = *state;
    ms_tf_rm_rf(fk->root);
    free(fk);
    s_current = NULL;
    return 0;
}

//  --------------------------------------------------------------------------
//  Open over the fake (OPEN_POOL, ENROLL_KEY may be NULL); returns the
//  code, the instance in *out.

static int
s_open(fake_t *fk, const char *open_pool, const char *enroll_key,
       ms_authority_t **out, ms_diag_t *diag)
{
    ms_authority_config_t cfg = {
        .data_dir = fk->root, .open_pool = open_pool, .enroll_key = enroll_key};
    memcpy(cfg.node_pk, fk->node_pk, MS_CERT_KEY_BYTES);
    ms_authority_iface_t iface = {
        .arg = fk, .renew = s_renew, .join = s_join, .mesh_port = s_mesh_port};
    ms_diag_clear(diag);
    int rc = ms_authority_open(out, &cfg, &iface, diag);
    s_current = *out;
    return rc;
}

//  --------------------------------------------------------------------------
//  A leaf for SUBJECT of operator OP in the pool of AUTH_PK, signed by
//  SIGNER_SK, expiring at NOT_AFTER (0: never).

static ms_cert_chain_t
s_chain(const uint8_t *auth_pk, const uint8_t *signer_sk,
        const uint8_t *subject, const char *op, int64_t not_after)
{
    ms_cert_chain_t chain;
    memset(&chain, 0, sizeof chain);
    ms_cert_pool_id(auth_pk, chain.leaf.pool_id);
    memcpy(chain.leaf.subject, subject, MS_CERT_KEY_BYTES);
    chain.leaf.roles = MS_CERT_ROLE_WORKER | MS_CERT_ROLE_SUBMIT;
    chain.leaf.max_workers = 3;
    chain.leaf.not_after = not_after;
    snprintf(chain.leaf.operator_name, sizeof chain.leaf.operator_name, "%s",
             op);
    assert_int_equal(ms_cert_sign(&chain.leaf, signer_sk, NULL), MS_OK);
    return chain;
}

//  Write node.cert: our key's chain of operator OP, by the authority.

static void
s_write_cert(fake_t *fk, const char *op)
{
    ms_cert_chain_t chain = s_chain(fk->apk, fk->ask, fk->node_pk, op, 0);
    assert_int_equal(ms_cert_bundle_save(fk->cert_path, fk->apk, &chain, NULL),
                     MS_OK);
}

//  The pool id of the fake's authority, in hex.

static void
s_pool_hex(const uint8_t *apk, char out[MS_HASH_HEX_LEN + 1])
{
    ms_hash_t pool;
    ms_cert_pool_id(apk, pool.bytes);
    ms_hash_hex(&pool, out);
}

//  ==========================================================================
//  Tests

//  --------------------------------------------------------------------------
//  No certificate, no open pool: alone, its own operator.

static void
test_open_alone(void **state)
{
    fake_t *fk = *state;
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_OK);
    assert_false(ms_authority_has_certificate(au));
    assert_null(ms_authority_chain(au));
    assert_null(ms_authority_pool_id_hex(au));
    uint8_t pool[MS_HASH_BYTES], zero[MS_HASH_BYTES] = {0};
    memset(pool, 0xff, sizeof pool);
    assert_false(ms_authority_pool_id(au, pool));
    assert_memory_equal(pool, zero, MS_HASH_BYTES);
    assert_memory_equal(ms_authority_key(au), zero, MS_CERT_KEY_BYTES);
    ms_hash_t id;
    memcpy(id.bytes, fk->node_pk, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, hex);
    assert_string_equal(ms_authority_operator(au), hex);
    ms_authority_status_t st;
    ms_authority_status(au, &st);
    assert_false(st.has_certificate);
    assert_string_equal(st.pool_id_hex, "");
    assert_string_equal(st.operator_name, hex);
    ms_authority_destroy(&au);
    assert_null(au);
    ms_authority_destroy(&au); // NULL-safe
}

//  --------------------------------------------------------------------------
//  An open pool's id is H("open:" NAME): two names, two pools.

static void
test_open_pool_id(void **state)
{
    fake_t *fk = *state;
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    assert_int_equal(s_open(fk, "lab", NULL, &au, &diag), MS_OK);
    ms_hash_t want;
    ms_hash_bytes("open:lab", 8, &want);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&want, hex);
    assert_string_equal(ms_authority_pool_id_hex(au), hex);
    uint8_t pool[MS_HASH_BYTES];
    assert_true(ms_authority_pool_id(au, pool));
    assert_memory_equal(pool, want.bytes, MS_HASH_BYTES);
    assert_false(ms_authority_has_certificate(au));
    ms_authority_destroy(&au);
    assert_int_equal(s_open(fk, "other", NULL, &au, &diag), MS_OK);
    assert_string_not_equal(ms_authority_pool_id_hex(au), hex);
    ms_authority_destroy(&au);
}

//  --------------------------------------------------------------------------
//  node.cert read at open: its pool, operator, chain, authority key.

static void
test_open_certificate(void **state)
{
    fake_t *fk = *state;
    s_write_cert(fk, "alice");
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_OK);
    assert_true(ms_authority_has_certificate(au));
    assert_string_equal(ms_authority_operator(au), "alice");
    char pool_hex[MS_HASH_HEX_LEN + 1];
    s_pool_hex(fk->apk, pool_hex);
    assert_string_equal(ms_authority_pool_id_hex(au), pool_hex);
    assert_memory_equal(ms_authority_key(au), fk->apk, MS_CERT_KEY_BYTES);
    const ms_cert_chain_t *chain = ms_authority_chain(au);
    assert_non_null(chain);
    assert_int_equal(chain->leaf.max_workers, 3);
    assert_memory_equal(chain->leaf.subject, fk->node_pk, MS_CERT_KEY_BYTES);
    ms_authority_status_t st;
    ms_authority_status(au, &st);
    assert_true(st.has_certificate);
    assert_string_equal(st.pool_id_hex, pool_hex);
    assert_string_equal(st.operator_name, "alice");
    assert_int_equal(fk->n_join, 0); // at open the node joins by itself
    ms_authority_destroy(&au);
}

//  --------------------------------------------------------------------------
//  Bad certificates are refused at open, with a clear error.

static void
test_open_refuses_bad_certificates(void **state)
{
    fake_t *fk = *state;
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    // another node's certificate
    uint8_t other[MS_CERT_KEY_BYTES];
    memset(other, 0xab, sizeof other);
    ms_cert_chain_t chain = s_chain(fk->apk, fk->ask, other, "bob", 0);
    assert_int_equal(ms_cert_bundle_save(fk->cert_path, fk->apk, &chain, NULL),
                     MS_OK);
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_ERR_UNTRUSTED);
    assert_null(au);
    assert_non_null(strstr(diag.reason, "certifies node abababababab"));
    assert_non_null(strstr(diag.reason, "ask for an invite"));
    assert_non_null(strstr(diag.where, "node.cert"));
    // signed by a key that is not the bundle's authority
    uint8_t xpk[MS_CERT_KEY_BYTES], xsk[MS_CERT_SECRET_BYTES];
    assert_int_equal(ms_cert_keypair(xpk, xsk), MS_OK);
    chain = s_chain(fk->apk, xsk, fk->node_pk, "mallory", 0);
    assert_int_equal(ms_cert_bundle_save(fk->cert_path, fk->apk, &chain, NULL),
                     MS_OK);
    int rc = s_open(fk, NULL, NULL, &au, &diag);
    assert_true(rc == MS_ERR_UNTRUSTED || rc == MS_ERR_BADSIG);
    assert_null(au);
    assert_true(diag.reason[0] != '\0');
    // expired
    chain = s_chain(fk->apk, fk->ask, fk->node_pk, "alice", 1000);
    assert_int_equal(ms_cert_bundle_save(fk->cert_path, fk->apk, &chain, NULL),
                     MS_OK);
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_ERR_EXPIRED);
    assert_null(au);
    // not a bundle at all
    FILE *f = fopen(fk->cert_path, "w");
    assert_non_null(f);
    fputs("hello\n", f);
    fclose(f);
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_ERR_INVALID);
    assert_null(au);
    assert_true(diag.reason[0] != '\0');
    // read without taking: the same verdict, nothing held
    uint8_t authority[MS_CERT_KEY_BYTES];
    unlink(fk->cert_path);
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_OK);
    assert_int_equal(ms_authority_read(au, authority, &chain, &diag),
                     MS_ERR_NOTFOUND);
    s_write_cert(fk, "alice");
    assert_int_equal(ms_authority_read(au, authority, &chain, &diag), MS_OK);
    assert_memory_equal(authority, fk->apk, MS_CERT_KEY_BYTES);
    assert_string_equal(chain.leaf.operator_name, "alice");
    assert_false(ms_authority_has_certificate(au));
    ms_authority_destroy(&au);
}

//  --------------------------------------------------------------------------
//  A certificate beside --open-pool, and a missing enrollment kit, stop
//  the start.

static void
test_open_refuses_conflicts(void **state)
{
    fake_t *fk = *state;
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    char kit[400];
    snprintf(kit, sizeof kit, "%s/no-such.kit", fk->root);
    assert_int_equal(s_open(fk, NULL, kit, &au, &diag), MS_ERR_INVALID);
    assert_null(au);
    assert_string_equal(diag.where, "enroll_key");
    assert_non_null(strstr(diag.reason, "no such enrollment key file"));
    s_write_cert(fk, "alice");
    assert_int_equal(s_open(fk, "lab", NULL, &au, &diag), MS_ERR_INVALID);
    assert_null(au);
    assert_string_equal(diag.where, "open_pool");
    assert_non_null(strstr(diag.reason, "operator 'alice'"));
}

//  --------------------------------------------------------------------------
//  An enrollment kit issues our chain and saves it as node.cert.

static void
test_open_enrolls(void **state)
{
    fake_t *fk = *state;
    uint8_t epk[MS_CERT_KEY_BYTES], esk[MS_CERT_SECRET_BYTES];
    assert_int_equal(ms_cert_keypair(epk, esk), MS_OK);
    ms_cert_t ecert;
    memset(&ecert, 0, sizeof ecert);
    ms_cert_pool_id(fk->apk, ecert.pool_id);
    memcpy(ecert.subject, epk, MS_CERT_KEY_BYTES);
    ecert.roles = MS_CERT_ROLE_WORKER | MS_CERT_ROLE_ENROLL;
    snprintf(ecert.operator_name, sizeof ecert.operator_name, "cluster");
    assert_int_equal(ms_cert_sign(&ecert, fk->ask, NULL), MS_OK);
    char kit[400];
    snprintf(kit, sizeof kit, "%s/enroll.kit", fk->root);
    assert_int_equal(ms_cert_enroll_save(kit, fk->apk, esk, &ecert, NULL),
                     MS_OK);
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    assert_int_equal(s_open(fk, NULL, kit, &au, &diag), MS_OK);
    assert_true(ms_authority_has_certificate(au));
    assert_string_equal(ms_authority_operator(au), "cluster");
    const ms_cert_chain_t *chain = ms_authority_chain(au);
    assert_true(chain->has_enroller);
    assert_memory_equal(chain->leaf.subject, fk->node_pk, MS_CERT_KEY_BYTES);
    struct stat st;
    assert_int_equal(stat(fk->cert_path, &st), 0); // saved
    ms_authority_destroy(&au);
    // the next start reads it (the kit is not needed again)
    unlink(kit);
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_OK);
    assert_string_equal(ms_authority_operator(au), "cluster");
    ms_authority_destroy(&au);
}

//  --------------------------------------------------------------------------
//  Reload: nothing -> nothing; a first certificate joins (its pool id
//  set before join); a renewal goes to renew; another pool is refused.

static void
test_reload_join_renew_conflict(void **state)
{
    fake_t *fk = *state;
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_OK);
    assert_int_equal(ms_authority_reload(au, &diag), MS_OK);
    assert_int_equal(fk->n_join + fk->n_renew, 0);

    s_write_cert(fk, "bob");
    assert_int_equal(ms_authority_reload(au, &diag), MS_OK);
    assert_int_equal(fk->n_join, 1);
    char pool_hex[MS_HASH_HEX_LEN + 1];
    s_pool_hex(fk->apk, pool_hex);
    assert_string_equal(fk->pool_at_join, pool_hex);
    assert_true(ms_authority_has_certificate(au));
    assert_string_equal(ms_authority_operator(au), "bob");

    s_write_cert(fk, "bob-renewed");
    assert_int_equal(ms_authority_reload(au, &diag), MS_OK);
    assert_int_equal(fk->n_join, 1);
    assert_int_equal(fk->n_renew, 1);
    assert_string_equal(fk->renewed_operator, "bob-renewed");
    assert_true(fk->renewed_len > 0);
    assert_string_equal(ms_authority_operator(au), "bob-renewed");

    // a renewal the node cannot take is not taken
    fk->renew_rc = MS_ERR_NOMEM;
    s_write_cert(fk, "bob-3");
    assert_int_equal(ms_authority_reload(au, &diag), MS_ERR_NOMEM);
    assert_string_equal(ms_authority_operator(au), "bob-renewed");
    fk->renew_rc = MS_OK;

    // another pool's certificate: restart to change pools
    uint8_t apk2[MS_CERT_KEY_BYTES], ask2[MS_CERT_SECRET_BYTES];
    assert_int_equal(ms_cert_keypair(apk2, ask2), MS_OK);
    ms_cert_chain_t chain = s_chain(apk2, ask2, fk->node_pk, "eve", 0);
    assert_int_equal(ms_cert_bundle_save(fk->cert_path, apk2, &chain, NULL),
                     MS_OK);
    ms_diag_clear(&diag);
    assert_int_equal(ms_authority_reload(au, &diag), MS_ERR_CONFLICT);
    assert_non_null(strstr(diag.reason, "restart the node"));
    assert_string_equal(ms_authority_pool_id_hex(au), pool_hex);
    assert_string_equal(ms_authority_operator(au), "bob-renewed");

    // the file gone: the old certificate is kept
    unlink(fk->cert_path);
    assert_int_equal(ms_authority_reload(au, &diag), MS_ERR_NOTFOUND);
    assert_true(ms_authority_has_certificate(au));
    assert_int_equal(fk->n_renew, 2);
    ms_authority_destroy(&au);
}

//  --------------------------------------------------------------------------
//  Reload: a failed join forgets the certificate (alone again, the next
//  reload tries again); an open pool never takes one.

static void
test_reload_failed_join_and_open_pool(void **state)
{
    fake_t *fk = *state;
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_OK);
    s_write_cert(fk, "bob");
    fk->join_rc = MS_ERR_IO;
    assert_int_equal(ms_authority_reload(au, &diag), MS_ERR_IO);
    assert_string_equal(diag.reason, "port in use");
    assert_false(ms_authority_has_certificate(au));
    assert_null(ms_authority_pool_id_hex(au));
    ms_authority_status_t st;
    ms_authority_status(au, &st);
    assert_false(st.has_certificate);
    assert_string_equal(st.pool_id_hex, "");
    fk->join_rc = MS_OK;
    assert_int_equal(ms_authority_reload(au, &diag), MS_OK);
    assert_int_equal(fk->n_join, 2);
    assert_true(ms_authority_has_certificate(au));
    ms_authority_destroy(&au);

    unlink(fk->cert_path);
    assert_int_equal(s_open(fk, "lab", NULL, &au, &diag), MS_OK);
    const char *open_id = ms_authority_pool_id_hex(au);
    char keep[MS_HASH_HEX_LEN + 1];
    snprintf(keep, sizeof keep, "%s", open_id);
    s_write_cert(fk, "bob");
    assert_int_equal(ms_authority_reload(au, &diag), MS_ERR_CONFLICT);
    assert_string_equal(diag.where, "open_pool");
    assert_false(ms_authority_has_certificate(au));
    assert_string_equal(ms_authority_pool_id_hex(au), keep);
    ms_authority_destroy(&au);
}

//  --------------------------------------------------------------------------
//  A reload runs only when asked, once per ask.

static void
test_reload_only_when_asked(void **state)
{
    fake_t *fk = *state;
    ms_authority_t *au = NULL;
    ms_diag_t diag;
    assert_int_equal(s_open(fk, NULL, NULL, &au, &diag), MS_OK);
    s_write_cert(fk, "bob");
    assert_false(ms_authority_reload_if_asked(au));
    assert_int_equal(fk->n_join, 0);
    ms_authority_ask_reload(au);
    ms_authority_ask_reload(NULL); // NULL-safe (a signal before open)
    assert_true(ms_authority_reload_if_asked(au));
    assert_int_equal(fk->n_join, 1);
    assert_true(ms_authority_has_certificate(au));
    assert_false(ms_authority_reload_if_asked(au));
    assert_int_equal(fk->n_join + fk->n_renew, 1);
    ms_authority_destroy(&au);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_alone, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_open_pool_id, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_open_certificate, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_bad_certificates,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_open_refuses_conflicts, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_open_enrolls, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_reload_join_renew_conflict,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_reload_failed_join_and_open_pool,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_reload_only_when_asked, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
