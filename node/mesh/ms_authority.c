/*  =========================================================================
    ms_authority - this node's place in its pool: certificate, pool id,
    operator

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Certificates (DESIGN.md "Identity, pools and admission").

    At open: DATA_DIR/identity/node.cert is read and checked (the
    authority key it carries hashes to its pool id, the chain verifies
    against that key and is not expired, and the leaf certifies this
    node's key); with none and an enrollment kit, the node issues its own
    chain with the kit and saves it there first; with neither, the node
    is in its open pool or alone. A kit path that names no file stops
    the start (a typo must not leave a cluster node quietly out of the
    pool), and so does a certificate beside --open-pool.

    On reload (SIGHUP): nothing before and nothing now is fine; a
    certificate of another pool, or any certificate in an open pool, is
    refused with MS_ERR_CONFLICT (changing pools needs a restart: the
    store, the block signatures and the peers all belong to the old one);
    a renewal of our pool goes to the node first (iface.renew: the mesh
    sends it in later HELLOs) and is taken only when that worked; a first
    certificate is taken, then the node joins (iface.join), and is
    forgotten again when joining failed. When a join fails the chain and
    the operator name stay as the certificate's (only the pool id and
    has_cert are reset), as they did in the node before this class: the
    next reload replaces them.

    The pool id and operator name are what the status page shows: they
    are written under the class's mutex, and an HTTP thread copies them
    with ms_authority_status; the loop reads them without it (it is the
    only writer).
*/
#include "ms_authority.h"

#include <sodium.h>

#include <assert.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ms_authority {
    ms_authority_iface_t iface;              // the node's side
    char cert_path[PATH_MAX + 32];           // DATA_DIR/identity/node.cert
    char *data_dir;                          // the data dir (messages)
    char *open_pool;                         // open pool name, or NULL
    char *enroll_key;                        // enrollment kit path, or NULL
    uint8_t node_pk[MS_CERT_KEY_BYTES];      // this node's key
    char node_id[MS_HASH_HEX_LEN + 1];       // ... in hex
    bool has_cert;                           // a certificate taken (lock)
    uint8_t authority_pk[MS_CERT_KEY_BYTES]; // its authority (has_cert)
    ms_cert_chain_t chain;                   // our chain (has_cert)
    pthread_mutex_t lock;                    // guards the fields marked lock
    char pool_id_hex[MS_HASH_HEX_LEN + 1];   // "" in no pool (lock)
    char operator_name[MS_CERT_OPERATOR_MAX + 1]; // ours (lock)
    volatile sig_atomic_t reload_asked; // SIGHUP: reload the certificate
};

//  --------------------------------------------------------------------------
//  Read node.cert: verified against the authority key it carries, and
//  certifying this node's key.

int
ms_authority_read(const ms_authority_t *self,
                  uint8_t authority[MS_CERT_KEY_BYTES], ms_cert_chain_t *chain,
                  ms_diag_t *diag)
{
    assert(self && authority && chain);
    int rc = ms_cert_bundle_load(self->cert_path, authority, chain,
                                 (int64_t) time(NULL), diag);
    if (rc != MS_OK)
        return rc;
    if (memcmp(chain->leaf.subject, self->node_pk, MS_CERT_KEY_BYTES) != 0) {
        char hex[MS_HASH_HEX_LEN + 1];
        ms_hash_t subject;
        memcpy(subject.bytes, chain->leaf.subject, MS_CERT_KEY_BYTES);
        ms_hash_hex(&subject, hex);
        return ms_diag_set_code(diag, MS_ERR_UNTRUSTED, self->cert_path,
                                "certifies node %.12s, not this node (%.12s): "
                                "ask for an invite of this node's id",
                                hex, self->node_id);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Enroll: issue our chain with the enrollment kit and save it as
//  node.cert (expiry: the enrollment certificate's).

static int
s_enroll(ms_authority_t *self, ms_diag_t *diag)
{
    uint8_t *sk = sodium_malloc(MS_CERT_SECRET_BYTES);
    if (!sk)
        return MS_ERR_NOMEM;
    uint8_t authority[MS_CERT_KEY_BYTES];
    ms_cert_t enroll_cert;
    ms_cert_chain_t chain;
    int rc = ms_cert_enroll_load(self->enroll_key, authority, sk, &enroll_cert,
                                 (int64_t) time(NULL), diag);
    if (rc == MS_OK) {
        uint64_t serial;
        randombytes_buf(&serial, sizeof serial);
        rc = ms_cert_enroll_issue(sk, &enroll_cert, self->node_pk,
                                  enroll_cert.not_after, serial, &chain, diag);
    }
    sodium_free(sk);
    if (rc != MS_OK)
        return rc;
    rc = ms_cert_bundle_save(self->cert_path, authority, &chain, diag);
    if (rc == MS_OK)
        fprintf(stderr,
                "meshsweepd: enrolled with %s: certificate of operator '%s' "
                "saved to %s\n",
                self->enroll_key, chain.leaf.operator_name, self->cert_path);
    return rc;
}

//  --------------------------------------------------------------------------
//  Take a verified chain as ours: pool id, operator.

static void
s_take(ms_authority_t *self, const uint8_t *authority,
       const ms_cert_chain_t *chain)
{
    memcpy(self->authority_pk, authority, MS_CERT_KEY_BYTES);
    self->chain = *chain;
    ms_hash_t pid;
    memcpy(pid.bytes, chain->leaf.pool_id, MS_CERT_POOL_ID_BYTES);
    pthread_mutex_lock(&self->lock);
    self->has_cert = true;
    ms_hash_hex(&pid, self->pool_id_hex);
    snprintf(self->operator_name, sizeof self->operator_name, "%s",
             chain->leaf.operator_name);
    pthread_mutex_unlock(&self->lock);
}

//  --------------------------------------------------------------------------
//  At open: node.cert, or enrollment, or neither.

static int
s_open_certificate(ms_authority_t *self, ms_diag_t *diag)
{
    uint8_t authority[MS_CERT_KEY_BYTES];
    ms_cert_chain_t chain;
    int rc = ms_authority_read(self, authority, &chain, diag);
    if (rc == MS_ERR_NOTFOUND && self->enroll_key) {
        ms_diag_clear(diag);
        rc = s_enroll(self, diag);
        if (rc == MS_ERR_NOTFOUND)
            // A kit path with a typo must not leave a cluster node quietly
            // out of the pool: say so and stop.
            return ms_diag_set(diag, "enroll_key",
                               "%s: no such enrollment key file",
                               self->enroll_key);
        if (rc == MS_OK)
            rc = ms_authority_read(self, authority, &chain, diag);
    }
    if (rc == MS_ERR_NOTFOUND) {
        ms_diag_clear(diag);
        return MS_OK; // open pool, or alone until a certificate comes
    }
    if (rc != MS_OK)
        return rc;
    if (self->open_pool)
        return ms_diag_set(diag, "open_pool",
                           "%s puts this node in the pool of operator '%s' "
                           "with an authority: --open-pool cannot be used "
                           "with a certificate (remove one of them)",
                           self->cert_path, chain.leaf.operator_name);
    s_take(self, authority, &chain);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Create the authority state and read the data dir's certificate.

int
ms_authority_open(ms_authority_t **out, const ms_authority_config_t *cfg,
                  const ms_authority_iface_t *iface, ms_diag_t *diag)
{
    assert(out && cfg && cfg->data_dir && iface);
    *out = NULL;
    ms_authority_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    if (pthread_mutex_init(&self->lock, NULL) != 0) {
        free(self);
        return MS_ERR_NOMEM;
    }
    self->iface = *iface;
    int rc = MS_ERR_NOMEM;
    self->data_dir = strdup(cfg->data_dir);
    self->open_pool = cfg->open_pool ? strdup(cfg->open_pool) : NULL;
    self->enroll_key = cfg->enroll_key ? strdup(cfg->enroll_key) : NULL;
    if (!self->data_dir || (cfg->open_pool && !self->open_pool) ||
        (cfg->enroll_key && !self->enroll_key))
        goto fail;
    snprintf(self->cert_path, sizeof self->cert_path, "%s/identity/node.cert",
             cfg->data_dir);
    memcpy(self->node_pk, cfg->node_pk, MS_CERT_KEY_BYTES);
    ms_hash_t id;
    memcpy(id.bytes, cfg->node_pk, MS_HASH_BYTES);
    ms_hash_hex(&id, self->node_id);
    if (self->open_pool) {
        // DESIGN.md: the open pool's id is H("open:" NAME).
        char text[600];
        int n = snprintf(text, sizeof text, "open:%s", self->open_pool);
        ms_hash_t pid;
        ms_hash_bytes(text, (size_t) n, &pid);
        ms_hash_hex(&pid, self->pool_id_hex);
    }
    // Without a certificate (alone, or in an open pool) a node is its own
    // operator, named by its node id: what it announces to peers and what
    // the store gives for its rows (s_take names the certificate's
    // operator instead).
    snprintf(self->operator_name, sizeof self->operator_name, "%s",
             self->node_id);
    rc = s_open_certificate(self, diag);
    if (rc != MS_OK)
        goto fail;
    *out = self;
    return MS_OK;
fail:
    ms_authority_destroy(&self);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free it.

void
ms_authority_destroy(ms_authority_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_authority_t *self = *self_p;
    pthread_mutex_destroy(&self->lock);
    free(self->data_dir);
    free(self->open_pool);
    free(self->enroll_key);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Reload the certificate (SIGHUP).

int
ms_authority_reload(ms_authority_t *self, ms_diag_t *diag)
{
    assert(self);
    uint8_t authority[MS_CERT_KEY_BYTES];
    ms_cert_chain_t chain;
    int rc = ms_authority_read(self, authority, &chain, diag);
    if (rc == MS_ERR_NOTFOUND && !self->has_cert) {
        ms_diag_clear(diag);
        return MS_OK; // nothing before, nothing now
    }
    if (rc != MS_OK)
        return rc;
    if (self->open_pool)
        return ms_diag_set_code(diag, MS_ERR_CONFLICT, "open_pool",
                                "this node runs in open pool '%s': restart "
                                "it without --open-pool to use its "
                                "certificate",
                                self->open_pool);
    if (self->has_cert) {
        if (memcmp(chain.leaf.pool_id, self->chain.leaf.pool_id,
                   MS_CERT_POOL_ID_BYTES) != 0)
            return ms_diag_set_code(diag, MS_ERR_CONFLICT, "node.cert",
                                    "of another pool: restart the node to "
                                    "change pools");
        uint8_t cert[MS_CERT_CHAIN_MAX_BYTES];
        size_t n = ms_cert_chain_encode(&chain, cert);
        if (n == 0)
            return ms_diag_set(diag, "node.cert", "does not encode");
        rc = self->iface.renew
                 ? self->iface.renew(self->iface.arg, &chain, cert, n)
                 : MS_OK;
        if (rc != MS_OK)
            return rc;
        s_take(self, authority, &chain);
        return MS_OK;
    }
    // first certificate: join its pool now
    s_take(self, authority, &chain);
    rc = self->iface.join ? self->iface.join(self->iface.arg, diag) : MS_OK;
    if (rc != MS_OK) {
        // back to alone (a port in use, ...): the next SIGHUP tries again
        pthread_mutex_lock(&self->lock);
        self->has_cert = false;
        self->pool_id_hex[0] = '\0';
        pthread_mutex_unlock(&self->lock);
    }
    return rc;
}

//  --------------------------------------------------------------------------
//  Ask for a reload (async-signal-safe).

void
ms_authority_ask_reload(ms_authority_t *self)
{
    if (self)
        self->reload_asked = 1;
}

//  --------------------------------------------------------------------------
//  Run an asked-for reload and say what came of it.

bool
ms_authority_reload_if_asked(ms_authority_t *self)
{
    assert(self);
    if (!self->reload_asked)
        return false;
    self->reload_asked = 0;
    bool had = self->has_cert;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_authority_reload(self, &diag);
    char text[1100];
    if (rc != MS_OK)
        fprintf(stderr, "meshsweepd: reload: certificate not taken: %s\n",
                diag.reason[0] ? ms_diag_format(&diag, text, sizeof text)
                               : ms_strerror(rc));
    else if (self->has_cert && !had)
        fprintf(stderr,
                "meshsweepd: reload: joined pool %.12s as operator '%s', "
                "mesh port %d\n",
                self->pool_id_hex, self->chain.leaf.operator_name,
                self->iface.mesh_port ? self->iface.mesh_port(self->iface.arg)
                                      : 0);
    else if (self->has_cert)
        fprintf(stderr, "meshsweepd: reload: certificate renewed\n");
    else
        fprintf(stderr,
                "meshsweepd: reload: no certificate in %s/identity; "
                "this node still links to no one\n",
                self->data_dir);
    return true;
}

//  --------------------------------------------------------------------------
//  Certificate?

bool
ms_authority_has_certificate(const ms_authority_t *self)
{
    assert(self);
    return self->has_cert;
}

//  --------------------------------------------------------------------------
//  Our chain, or NULL.

const ms_cert_chain_t *
ms_authority_chain(const ms_authority_t *self)
{
    assert(self);
    return self->has_cert ? &self->chain : NULL;
}

//  --------------------------------------------------------------------------
//  The authority's key (zero without a certificate).

const uint8_t *
ms_authority_key(const ms_authority_t *self)
{
    assert(self);
    return self->authority_pk;
}

//  --------------------------------------------------------------------------
//  The pool id in hex, or NULL.

const char *
ms_authority_pool_id_hex(const ms_authority_t *self)
{
    assert(self);
    return self->pool_id_hex[0] ? self->pool_id_hex : NULL;
}

//  --------------------------------------------------------------------------
//  The pool id as bytes.

bool
ms_authority_pool_id(const ms_authority_t *self, uint8_t out[MS_HASH_BYTES])
{
    assert(self && out);
    memset(out, 0, MS_HASH_BYTES);
    ms_hash_t pool;
    if (!self->pool_id_hex[0] ||
        ms_hash_from_hex(self->pool_id_hex, &pool) != MS_OK)
        return false;
    memcpy(out, pool.bytes, MS_HASH_BYTES);
    return true;
}

//  --------------------------------------------------------------------------
//  Operator name.

const char *
ms_authority_operator(const ms_authority_t *self)
{
    assert(self);
    return self->operator_name;
}

//  --------------------------------------------------------------------------
//  What an HTTP thread may show.

void
ms_authority_status(ms_authority_t *self, ms_authority_status_t *out)
{
    assert(self && out);
    pthread_mutex_lock(&self->lock);
    out->has_certificate = self->has_cert;
    memcpy(out->pool_id_hex, self->pool_id_hex, sizeof out->pool_id_hex);
    memcpy(out->operator_name, self->operator_name, sizeof out->operator_name);
    pthread_mutex_unlock(&self->lock);
}
