/*  =========================================================================
    ms_test_authority - a pool authority and an intruder, for tests

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Not the user's CLI (`meshsweep pool ...` is): a small tool the
    admission tests use to make pools with ms_cert, and to knock on a
    node's mesh port with bad credentials.

      ms_test_authority init DIR
          DIR/authority.key (0600) and DIR/authority.pub; prints the pool
          id.
      ms_test_authority invite DIR NODE_ID OPERATOR OUT [EXPIRES_S]
          a bundle for NODE_ID (roles worker+submit), expiring EXPIRES_S
          seconds from now (negative: already expired; default never).
      ms_test_authority enroll DIR OPERATOR OUT
          an enrollment kit (0600) for OPERATOR.
      ms_test_authority intrude MODE DIR tcp://127.0.0.1:PORT NODE_ID
          dial the node NODE_ID (CURVE, its key derived from NODE_ID) with
          a fresh key of our own and send a HELLO for DIR's pool whose
          certificate is: none (empty), expired (DIR's authority, expired),
          forged (our pool id, signed by another key), otherpool (valid,
          of another authority's pool), mismatch (DIR's authority, but
          for another key); then a BLOCK of one result record. Mode
          silent sends nothing and holds the connection 7 s (longer than
          the node's HELLO timeout), then tries once more. Prints
          "refused" when no HELLO came back within 2 s (exit 0), or
          "admitted" (exit 3). Loopback only.
*/
#include "ms_cert.h"
#include "ms_identity.h"
#include "ms_wire.h"

#include <czmq.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

//  --------------------------------------------------------------------------
//  Hex helpers

static void
s_hex(const uint8_t *b, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static int
s_unhex(const char *s, uint8_t *out, size_t n)
{
    if (strlen(s) != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        if (sscanf(s + 2 * i, "%2x", &v) != 1)
            return -1;
        out[i] = (uint8_t) v;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Load DIR's authority key pair

static int
s_load_authority(const char *dir, uint8_t pk[32], uint8_t sk[64])
{
    char path[1024];
    snprintf(path, sizeof path, "%s/authority.key", dir);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_cert_secret_load(path, sk, &diag) != MS_OK) {
        char text[1100];
        fprintf(stderr, "ms_test_authority: %s\n",
                ms_diag_format(&diag, text, sizeof text));
        return -1;
    }
    memcpy(pk, sk + 32, 32);
    return 0;
}

//  --------------------------------------------------------------------------
//  A signed certificate for subject in pool_id

static int
s_cert(ms_cert_t *c, const uint8_t *pool_id, const uint8_t *subject,
       const char *op, uint32_t roles, int64_t not_after, const uint8_t *sk)
{
    memset(c, 0, sizeof *c);
    memcpy(c->pool_id, pool_id, 32);
    memcpy(c->subject, subject, 32);
    c->roles = roles;
    c->not_after = not_after;
    randombytes_buf(&c->serial, sizeof c->serial);
    snprintf(c->operator_name, sizeof c->operator_name, "%s", op);
    return ms_cert_sign(c, sk, NULL) == MS_OK ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  init DIR

static int
s_init(const char *dir)
{
    mkdir(dir, 0700);
    uint8_t pk[32], sk[64], pool[32];
    ms_cert_keypair(pk, sk);
    char path[1024];
    snprintf(path, sizeof path, "%s/authority.key", dir);
    if (ms_cert_secret_save(path, sk, NULL) != MS_OK)
        return 1;
    snprintf(path, sizeof path, "%s/authority.pub", dir);
    FILE *f = fopen(path, "w");
    char hex[65];
    s_hex(pk, 32, hex);
    if (!f || fprintf(f, "%s\n", hex) < 0 || fclose(f) != 0)
        return 1;
    ms_cert_pool_id(pk, pool);
    s_hex(pool, 32, hex);
    printf("%s\n", hex);
    return 0;
}

//  --------------------------------------------------------------------------
//  invite DIR NODE_ID OPERATOR OUT [EXPIRES_S]

static int
s_invite(const char *dir, const char *node, const char *op, const char *out,
         const char *expires)
{
    uint8_t pk[32], sk[64], pool[32], subject[32];
    if (s_load_authority(dir, pk, sk) || s_unhex(node, subject, 32)) {
        fprintf(stderr, "ms_test_authority: bad DIR or NODE_ID\n");
        return 2;
    }
    ms_cert_pool_id(pk, pool);
    int64_t not_after = expires ? (int64_t) time(NULL) + atoll(expires) : 0;
    ms_cert_chain_t chain = {0};
    if (s_cert(&chain.leaf, pool, subject, op,
               MS_CERT_ROLE_WORKER | MS_CERT_ROLE_SUBMIT, not_after, sk))
        return 1;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_cert_bundle_save(out, pk, &chain, &diag) != MS_OK) {
        fprintf(stderr, "ms_test_authority: cannot save %s: %s\n", out,
                diag.reason);
        return 1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  enroll DIR OPERATOR OUT

static int
s_enroll(const char *dir, const char *op, const char *out)
{
    uint8_t pk[32], sk[64], pool[32], epk[32], esk[64];
    if (s_load_authority(dir, pk, sk))
        return 2;
    ms_cert_pool_id(pk, pool);
    ms_cert_keypair(epk, esk);
    ms_cert_t cert;
    if (s_cert(&cert, pool, epk, op, MS_CERT_ROLE_WORKER | MS_CERT_ROLE_ENROLL,
               (int64_t) time(NULL) + 86400, sk))
        return 1;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_cert_enroll_save(out, pk, esk, &cert, &diag) != MS_OK) {
        fprintf(stderr, "ms_test_authority: cannot save %s: %s\n", out,
                diag.reason);
        return 1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  intrude MODE DIR ENDPOINT NODE_ID

static int
s_intrude(const char *mode, const char *dir, const char *endpoint,
          const char *node)
{
    uint8_t apk[32], ask[64], pool[32], server[32], server_curve[32];
    if (strncmp(endpoint, "tcp://127.0.0.1:", 16) != 0 ||
        s_load_authority(dir, apk, ask) || s_unhex(node, server, 32) ||
        ms_identity_curve_public(server, server_curve) != MS_OK) {
        fprintf(stderr, "ms_test_authority: bad intrude arguments\n");
        return 2;
    }
    ms_cert_pool_id(apk, pool);
    //  our own fresh node key, its CURVE pair
    uint8_t pk[32], sk[64], cpk[32], csk[32];
    ms_cert_keypair(pk, sk);
    if (crypto_sign_ed25519_pk_to_curve25519(cpk, pk) != 0 ||
        crypto_sign_ed25519_sk_to_curve25519(csk, sk) != 0)
        return 1;
    int64_t now = (int64_t) time(NULL);
    uint32_t roles = MS_CERT_ROLE_WORKER | MS_CERT_ROLE_SUBMIT;
    ms_cert_chain_t chain = {0};
    bool with_cert = true;
    bool silent = strcmp(mode, "silent") == 0;
    if (strcmp(mode, "none") == 0 || silent)
        with_cert = false;
    else if (strcmp(mode, "expired") == 0)
        s_cert(&chain.leaf, pool, pk, "intruder", roles, now - 3600, ask);
    else if (strcmp(mode, "forged") == 0) {
        uint8_t fpk[32], fsk[64];
        ms_cert_keypair(fpk, fsk); // another key claiming our pool id
        s_cert(&chain.leaf, pool, pk, "intruder", roles, 0, fsk);
    } else if (strcmp(mode, "otherpool") == 0) {
        uint8_t opk[32], osk[64], opool[32];
        ms_cert_keypair(opk, osk);
        ms_cert_pool_id(opk, opool);
        s_cert(&chain.leaf, opool, pk, "intruder", roles, 0, osk);
    } else if (strcmp(mode, "mismatch") == 0) {
        uint8_t xpk[32], xsk[64];
        ms_cert_keypair(xpk, xsk); // a valid certificate of another key
        s_cert(&chain.leaf, pool, xpk, "intruder", roles, 0, ask);
    } else {
        fprintf(stderr, "ms_test_authority: unknown mode %s\n", mode);
        return 2;
    }
    uint8_t cert[MS_CERT_CHAIN_MAX_BYTES];
    size_t cert_bytes = with_cert ? ms_cert_chain_encode(&chain, cert) : 0;

    zsys_init();
    zsys_set_linger(100);
    zsock_t *dealer = zsock_new(ZMQ_DEALER);
    void *raw = zsock_resolve(dealer);
    zmq_setsockopt(raw, ZMQ_ROUTING_ID, pk, 32);
    zmq_setsockopt(raw, ZMQ_CURVE_SERVERKEY, server_curve, 32);
    zmq_setsockopt(raw, ZMQ_CURVE_PUBLICKEY, cpk, 32);
    zmq_setsockopt(raw, ZMQ_CURVE_SECRETKEY, csk, 32);
    if (zsock_connect(dealer, "%s", endpoint) != 0) {
        zsock_destroy(&dealer);
        return 1;
    }
    ms_wire_envelope_t env;
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_HELLO;
    memcpy(env.hello.node_id, pk, 32);
    memcpy(env.hello.pool_id, pool, 32);
    env.hello.protocol_min = MS_PROTOCOL_MIN;
    env.hello.protocol_max = MS_PROTOCOL_MAX;
    env.hello.incarnation = 7;
    env.hello.mesh_port = 9;
    env.hello.n_workers = 1;
    env.hello.operator_name = (char *) "intruder";
    env.hello.certificate = cert_bytes ? cert : NULL;
    env.hello.certificate_bytes = cert_bytes;
    uint8_t *buf = NULL;
    size_t n = 0;
    if (ms_wire_encode_envelope(&env, &buf, &n) != MS_OK)
        return 1;
    if (silent)
        zclock_sleep(7000); // let in by ZAP, no HELLO: denied after 5 s
    zmq_send(raw, buf, n, 0);
    free(buf);
    //  a result record, as if admitted
    uint8_t junk[64];
    randombytes_buf(junk, sizeof junk);
    memset(&env, 0, sizeof env);
    env.protocol = MS_PROTOCOL_VERSION;
    env.body = MS_WIRE_BODY_BLOCK;
    memcpy(env.block.origin, pk, 32);
    env.block.incarnation = 7;
    env.block.first_seq = 1;
    ms_wire_record_t rec = {.seq = 1,
                            .kind = MS_WIRE_KIND_RESULT,
                            .payload = junk,
                            .payload_bytes = sizeof junk};
    env.block.records = &rec;
    env.block.n_records = 1;
    if (ms_wire_encode_envelope(&env, &buf, &n) != MS_OK)
        return 1;
    zmq_send(raw, buf, n, 0);
    free(buf);
    //  a HELLO back means it let us in
    bool admitted = false;
    int64_t until = zclock_mono() + 2000;
    zpoller_t *poller = zpoller_new(dealer, NULL);
    while (!admitted && zclock_mono() < until) {
        if (!zpoller_wait(poller, 100))
            continue;
        zframe_t *f = zframe_recv(dealer);
        ms_wire_envelope_t *in = NULL;
        if (f && ms_wire_decode_envelope(zframe_data(f), zframe_size(f), &in) ==
                     MS_OK)
            admitted = in->body == MS_WIRE_BODY_HELLO;
        ms_wire_envelope_destroy(&in);
        zframe_destroy(&f);
    }
    zpoller_destroy(&poller);
    zsock_destroy(&dealer);
    printf("%s\n", admitted ? "admitted" : "refused");
    return admitted ? 3 : 0;
}

int
main(int argc, char **argv)
{
    if (sodium_init() < 0)
        return 1;
    if (argc == 3 && strcmp(argv[1], "init") == 0)
        return s_init(argv[2]);
    if ((argc == 6 || argc == 7) && strcmp(argv[1], "invite") == 0)
        return s_invite(argv[2], argv[3], argv[4], argv[5],
                        argc == 7 ? argv[6] : NULL);
    if (argc == 5 && strcmp(argv[1], "enroll") == 0)
        return s_enroll(argv[2], argv[3], argv[4]);
    if (argc == 6 && strcmp(argv[1], "intrude") == 0)
        return s_intrude(argv[2], argv[3], argv[4], argv[5]);
    fprintf(stderr, "usage: ms_test_authority init DIR | invite DIR NODE_ID "
                    "OPERATOR OUT [EXPIRES_S] | enroll DIR OPERATOR OUT | "
                    "intrude none|expired|forged|otherpool|mismatch|silent DIR "
                    "tcp://127.0.0.1:PORT NODE_ID\n");
    return 2;
}
