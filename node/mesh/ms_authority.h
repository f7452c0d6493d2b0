/*  =========================================================================
    ms_authority - this node's place in its pool: certificate, pool id,
    operator

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission". The class owns what the
    node knows of its own membership: its certificate chain
    (DATA_DIR/identity/node.cert) and the pool authority's key, the pool
    id (the certificate's, or H("open:" NAME) in an open pool, none when
    the node is alone), its operator name (the certificate's, else the
    node id), the enrollment at first start (--enroll-key), and the
    reload of the certificate on SIGHUP (`meshsweep pool join`), by which
    a node alone joins its pool without a restart and a member renews its
    certificate. The rules it keeps:
    - a certificate is taken only when it verifies against the authority
      key it carries and certifies this node's key;
    - a certificate and --open-pool exclude each other;
    - a reload never changes pools (another pool: restart the node), and
      the old state stays on any error.
    What the node does with a certificate (the members table, the mesh's
    HELLO, opening the mesh when the node joins) is the node's: it hands
    the class an ms_authority_iface_t, and the class never calls into
    ms_node. Revocation of other nodes is the members table's
    (node/mesh/ms_members) and the mesh's.

    Threads. The node's loop thread owns the instance: it alone calls
    every function below except ms_authority_ask_reload (any thread and
    signal handlers) and ms_authority_status (any thread). The fields an
    HTTP thread shows (pool id, operator, whether there is a certificate)
    are written under the class's own mutex, which ms_authority_status
    takes to copy them.
*/
#ifndef MS_AUTHORITY_H
#define MS_AUTHORITY_H

#include "ms_cert.h"
#include "ms_err.h"
#include "ms_hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_authority ms_authority_t;

//  What the class needs of its node. Every function gets ARG; all are
//  called on the loop thread, from inside ms_authority_reload (and
//  ms_authority_reload_if_asked) only. A NULL function does nothing and
//  returns MS_OK (mesh_port: 0).
typedef struct {
    void *arg;
    //  A renewal: CHAIN (of our pool, verified, certifying us; CERT is its
    //  encoding, CERT_LEN bytes) replaces ours. The node hands it to its
    //  mesh (later HELLOs) and members table. MS_OK, or the mesh's error:
    //  the renewal is then not taken.
    int (*renew)(void *arg, const ms_cert_chain_t *chain, const uint8_t *cert,
                 size_t cert_len);
    //  Our first certificate was taken (ms_authority_pool_id and
    //  ms_authority_chain say the new pool): the node joins it (block
    //  signer, members table, mesh, gossip). MS_OK, or an error (in DIAG)
    //  after which the node has undone its part and is alone again: the
    //  class then forgets the certificate (the next SIGHUP tries again).
    int (*join)(void *arg, ms_diag_t *diag);
    //  The node's mesh port for the "joined" line, 0 when none.
    int (*mesh_port)(void *arg);
} ms_authority_iface_t;

//  Settings.
typedef struct {
    const char *data_dir;               // the node's data dir (copied): the
                                        // certificate is in identity/node.cert
    uint8_t node_pk[MS_CERT_KEY_BYTES]; // this node's public key (its id)
    const char *open_pool;              // open pool name (copied), or NULL
    const char *enroll_key;             // enrollment kit path (copied), or NULL
} ms_authority_config_t;

//  What an HTTP thread may show (ms_authority_status): a copy.
typedef struct {
    bool has_certificate;                         // a pool with an authority
    char pool_id_hex[MS_HASH_HEX_LEN + 1];        // "" when in no pool
    char operator_name[MS_CERT_OPERATOR_MAX + 1]; // ours
} ms_authority_status_t;

//  Create the node's authority state with CFG and IFACE (copied) and read
//  what the data dir holds: identity/node.cert when there is one (checked
//  as ms_authority_read); else, with enroll_key, enroll: issue our chain
//  with the kit and save it as identity/node.cert (expiry: the enrollment
//  certificate's); else the node is in its open pool (open_pool) or
//  alone until a certificate comes. Returns MS_OK with *OUT set; else
//  *OUT stays NULL and: MS_ERR_NOMEM; the certificate's or the kit's
//  errors as ms_authority_read and ms_cert_enroll_load (diag);
//  MS_ERR_INVALID (diag "enroll_key": no such kit file; "open_pool":
//  a certificate and --open-pool both). Caller owns the result; free it
//  with ms_authority_destroy().
int ms_authority_open(ms_authority_t **out, const ms_authority_config_t *cfg,
                      const ms_authority_iface_t *iface, ms_diag_t *diag);

//  Free it; NULL-safe, nulls *self_p.
void ms_authority_destroy(ms_authority_t **self_p);

//  Read DATA_DIR/identity/node.cert without taking it: the authority key
//  it carries into AUTHORITY (MS_CERT_KEY_BYTES) and the chain, verified
//  against that key now (ms_cert_bundle_load), into *CHAIN. Returns
//  MS_OK; MS_ERR_NOTFOUND (no file); MS_ERR_UNTRUSTED (it certifies
//  another node's key: diag names both ids and says to ask for an invite
//  of this one; or as ms_cert_chain_verify); MS_ERR_EXPIRED,
//  MS_ERR_BADSIG, MS_ERR_INVALID, MS_ERR_IO (diag names the file and
//  what).
int ms_authority_read(const ms_authority_t *self,
                      uint8_t authority[MS_CERT_KEY_BYTES],
                      ms_cert_chain_t *chain, ms_diag_t *diag);

//  Read the certificate again (SIGHUP, `meshsweep pool join`). A node
//  alone takes its first certificate and joins its pool (iface.join)
//  without a restart; a node already in that pool takes the new chain
//  (iface.renew: later HELLOs send it). The old state stays on any error.
//  Returns MS_OK (also when nothing changed: no file and none before);
//  MS_ERR_NOTFOUND (the file is gone: the old one is kept);
//  MS_ERR_CONFLICT (another pool, or the node is in an open pool:
//  restart to change pools); MS_ERR_EXPIRED / MS_ERR_BADSIG /
//  MS_ERR_UNTRUSTED / MS_ERR_INVALID (the certificate: diag); the errors
//  of iface.renew and iface.join.
int ms_authority_reload(ms_authority_t *self, ms_diag_t *diag);

//  Ask for a reload at the loop's next ms_authority_reload_if_asked.
//  Async-signal-safe: call it from SIGHUP (the caller wakes the loop).
void ms_authority_ask_reload(ms_authority_t *self);

//  When a reload was asked: run ms_authority_reload and print what came
//  of it (a line on stderr: not taken and why, joined, renewed, or still
//  alone). Returns whether a reload was asked (the node reloads its other
//  files then).
bool ms_authority_reload_if_asked(ms_authority_t *self);

//  Whether the node holds a pool certificate (a pool with an authority).
bool ms_authority_has_certificate(const ms_authority_t *self);

//  Our chain (borrowed, valid until the next reload), or NULL without a
//  certificate.
const ms_cert_chain_t *ms_authority_chain(const ms_authority_t *self);

//  The pool authority's public key (MS_CERT_KEY_BYTES, borrowed): all
//  zero without a certificate.
const uint8_t *ms_authority_key(const ms_authority_t *self);

//  The pool id as 64 lowercase hex (borrowed, valid until the next
//  reload), or NULL when the node is in no pool.
const char *ms_authority_pool_id_hex(const ms_authority_t *self);

//  The pool id into OUT (MS_HASH_BYTES); all zero, and false, when the
//  node is in no pool.
bool ms_authority_pool_id(const ms_authority_t *self,
                          uint8_t out[MS_HASH_BYTES]);

//  Our operator name (borrowed, valid until the next reload): the
//  certificate's, else the node id in hex.
const char *ms_authority_operator(const ms_authority_t *self);

//  Copy what an HTTP thread may show into *OUT, under the class's mutex.
//  Any thread.
void ms_authority_status(ms_authority_t *self, ms_authority_status_t *out);

#endif
