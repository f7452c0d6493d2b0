/*  =========================================================================
    ms_zap - the process's ZAP handler for CURVE mesh links

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_zap.h. The request (ZAP 1.0, RFC 27) arrives on a REP socket as
    version "1.0", request id, domain, address, routing id, mechanism and,
    for CURVE, the client's 32-byte public key. The reply is version,
    request id, status code ("200" or "400"), status text, user id (the
    client key in hex; empty on 400) and empty metadata. A request that is
    not ZAP 1.0 CURVE gets 400: the mesh only ever runs CURVE servers.
*/
#include "ms_zap.h"

#include <assert.h>
#include <czmq.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char domain[MS_ZAP_DOMAIN_MAX + 1]; // ZMQ_ZAP_DOMAIN of the server
    uint8_t key[MS_ZAP_KEY_BYTES];      // client CURVE key
    ms_zap_state_t state;               // see ms_zap.h
    int64_t since_ms;                   // PENDING: let in at (monotonic)
    int64_t until_ms;                   // DENIED: until (monotonic)
} s_entry_t;

struct ms_zap_table {
    s_entry_t *entries; // the table
    size_t n, cap;      // used, most
};

//  --------------------------------------------------------------------------
//  New table

ms_zap_table_t *
ms_zap_table_new(size_t cap)
{
    ms_zap_table_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->cap = cap ? cap : MS_ZAP_TABLE_MAX;
    self->entries = calloc(self->cap, sizeof *self->entries);
    if (!self->entries) {
        free(self);
        return NULL;
    }
    return self;
}

//  --------------------------------------------------------------------------
//  Free a table

void
ms_zap_table_destroy(ms_zap_table_t **self_p)
{
    assert(self_p);
    if (!*self_p)
        return;
    free((*self_p)->entries);
    free(*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Find an entry

static s_entry_t *
s_find(const ms_zap_table_t *self, const char *domain, const uint8_t *key)
{
    for (size_t i = 0; i < self->n; i++)
        if (memcmp(self->entries[i].key, key, MS_ZAP_KEY_BYTES) == 0 &&
            strcmp(self->entries[i].domain, domain) == 0)
            return &self->entries[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Add an entry, evicting a denial that ran out (or, when allowed, the
//  oldest pending key) when full; NULL when nothing can go

static s_entry_t *
s_add(ms_zap_table_t *self, const char *domain, const uint8_t *key,
      int64_t now_ms, bool evict_pending)
{
    if (self->n == self->cap) {
        size_t victim = self->n;
        for (size_t i = 0; i < self->n && victim == self->n; i++)
            if (self->entries[i].state == MS_ZAP_DENIED &&
                self->entries[i].until_ms <= now_ms)
                victim = i;
        for (size_t i = 0; evict_pending && i < self->n; i++)
            if (self->entries[i].state == MS_ZAP_PENDING &&
                (victim == self->n ||
                 self->entries[i].since_ms < self->entries[victim].since_ms))
                victim = i;
        if (victim == self->n)
            return NULL;
        self->entries[victim] = self->entries[--self->n];
    }
    s_entry_t *e = &self->entries[self->n++];
    memset(e, 0, sizeof *e);
    snprintf(e->domain, sizeof e->domain, "%s", domain);
    memcpy(e->key, key, MS_ZAP_KEY_BYTES);
    e->state = MS_ZAP_PENDING;
    e->since_ms = now_ms;
    return e;
}

//  --------------------------------------------------------------------------
//  Decide a connection

int
ms_zap_table_decide(ms_zap_table_t *self, const char *domain,
                    const uint8_t key[MS_ZAP_KEY_BYTES], int64_t now_ms)
{
    assert(self && domain && key);
    s_entry_t *e = s_find(self, domain, key);
    if (!e)
        return s_add(self, domain, key, now_ms, false) ? 200 : 400;
    switch (e->state) {
    case MS_ZAP_REVOKED:
        return 400;
    case MS_ZAP_DENIED:
        if (now_ms < e->until_ms)
            return 400;
        e->state = MS_ZAP_PENDING;
        e->since_ms = now_ms;
        return 200;
    case MS_ZAP_PENDING:
        return 200; // its first connection's clock keeps running
    case MS_ZAP_ALLOWED:
    default:
        return 200;
    }
}

//  --------------------------------------------------------------------------
//  Set a key's state

int
ms_zap_table_set(ms_zap_table_t *self, const char *domain,
                 const uint8_t key[MS_ZAP_KEY_BYTES], ms_zap_state_t state,
                 int64_t until_ms, int64_t now_ms)
{
    assert(self && domain && key);
    s_entry_t *e = s_find(self, domain, key);
    if (!e)
        e = s_add(self, domain, key, now_ms, true);
    if (!e)
        return MS_ERR_NOMEM;
    if (e->state == MS_ZAP_REVOKED)
        return MS_OK;
    e->state = state;
    e->since_ms = now_ms;
    e->until_ms = state == MS_ZAP_DENIED ? until_ms : 0;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  State of a key

bool
ms_zap_table_get(const ms_zap_table_t *self, const char *domain,
                 const uint8_t key[MS_ZAP_KEY_BYTES], ms_zap_state_t *state,
                 int64_t *until_ms)
{
    assert(self && domain && key && state);
    const s_entry_t *e = s_find(self, domain, key);
    if (!e)
        return false;
    *state = e->state;
    if (until_ms)
        *until_ms = e->until_ms;
    return true;
}

//  --------------------------------------------------------------------------
//  Deny pending keys that did not pass HELLO in time

size_t
ms_zap_table_take_stale(ms_zap_table_t *self, const char *domain,
                        int64_t now_ms, int64_t timeout_ms, int64_t deny_ms,
                        uint8_t (*out)[MS_ZAP_KEY_BYTES], size_t max)
{
    assert(self && domain);
    size_t n = 0;
    for (size_t i = 0; i < self->n; i++) {
        s_entry_t *e = &self->entries[i];
        if (e->state != MS_ZAP_PENDING || strcmp(e->domain, domain) != 0 ||
            e->since_ms > now_ms - timeout_ms)
            continue;
        e->state = MS_ZAP_DENIED;
        e->until_ms = now_ms + deny_ms;
        if (out && n < max)
            memcpy(out[n], e->key, MS_ZAP_KEY_BYTES);
        n++;
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Entries

size_t
ms_zap_table_size(const ms_zap_table_t *self)
{
    assert(self);
    return self->n;
}

//  ==========================================================================
//  The process's handler

static pthread_mutex_t s_lock = PTHREAD_MUTEX_INITIALIZER;
static int s_refs = 0;                 // ms_zap_start calls not stopped
static zactor_t *s_actor = NULL;       // the handler thread
static ms_zap_table_t *s_table = NULL; // under s_lock
static uint64_t s_n_allowed = 0;       // under s_lock
static uint64_t s_n_denied = 0;        // under s_lock

//  --------------------------------------------------------------------------
//  Answer one request waiting on rep

static void
s_answer(zsock_t *rep)
{
    zmsg_t *req = zmsg_recv(rep);
    if (!req)
        return;
    char *version = zmsg_popstr(req);
    zframe_t *request_id = zmsg_pop(req);
    char *domain = zmsg_popstr(req);
    char *address = zmsg_popstr(req);
    zframe_t *routing_id = zmsg_pop(req);
    char *mechanism = zmsg_popstr(req);
    zframe_t *key = zmsg_pop(req);
    int status = 400;
    char user[2 * MS_ZAP_KEY_BYTES + 1] = "";
    if (version && strcmp(version, "1.0") == 0 && mechanism &&
        strcmp(mechanism, "CURVE") == 0 && domain &&
        strlen(domain) <= MS_ZAP_DOMAIN_MAX && key &&
        zframe_size(key) == MS_ZAP_KEY_BYTES) {
        pthread_mutex_lock(&s_lock);
        status = ms_zap_table_decide(s_table, domain, zframe_data(key),
                                     zclock_mono());
        if (status == 200)
            s_n_allowed++;
        else
            s_n_denied++;
        pthread_mutex_unlock(&s_lock);
        if (status == 200)
            for (size_t i = 0; i < MS_ZAP_KEY_BYTES; i++)
                snprintf(user + 2 * i, 3, "%02x", zframe_data(key)[i]);
    } else {
        pthread_mutex_lock(&s_lock);
        s_n_denied++;
        pthread_mutex_unlock(&s_lock);
    }
    zmsg_t *reply = zmsg_new();
    if (reply) {
        zmsg_addstr(reply, "1.0");
        if (request_id)
            zmsg_append(reply, &request_id);
        else
            zmsg_addstr(reply, "");
        zmsg_addstr(reply, status == 200 ? "200" : "400");
        zmsg_addstr(reply, status == 200 ? "OK" : "denied");
        zmsg_addstr(reply, user);
        zmsg_addmem(reply, "", 0);
        if (zmsg_send(&reply, rep) != 0)
            zmsg_destroy(&reply);
    }
    zstr_free(&version);
    zstr_free(&domain);
    zstr_free(&address);
    zstr_free(&mechanism);
    zframe_destroy(&request_id);
    zframe_destroy(&routing_id);
    zframe_destroy(&key);
    zmsg_destroy(&req);
}

//  --------------------------------------------------------------------------
//  The handler actor: answer on rep (bound by ms_zap_start, handed to
//  this thread, which owns it from then on) until $TERM

static void
s_actor_fn(zsock_t *pipe, void *args)
{
    zsock_t *rep = args;
    zsock_signal(pipe, 0);
    zpoller_t *poller = zpoller_new(pipe, rep, NULL);
    while (poller) {
        void *which = zpoller_wait(poller, -1);
        if (which == rep)
            s_answer(rep);
        else if (which == pipe) {
            char *cmd = zstr_recv(pipe);
            bool term = !cmd || strcmp(cmd, "$TERM") == 0;
            zstr_free(&cmd);
            if (term)
                break;
        } else if (zpoller_terminated(poller))
            break;
    }
    zpoller_destroy(&poller);
    zsock_destroy(&rep);
}

//  --------------------------------------------------------------------------
//  Start the handler (reference counted)

int
ms_zap_start(ms_diag_t *diag)
{
    if (!zsys_has_curve())
        return ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, "libzmq",
                                "built without CURVE: a pool with an "
                                "authority needs it (install a libzmq "
                                "with libsodium)");
    pthread_mutex_lock(&s_lock);
    int rc = MS_OK;
    if (s_refs == 0) {
        //  bound here so a failure is reported; the actor owns it after
        zsock_t *rep = zsock_new(ZMQ_REP);
        s_table = ms_zap_table_new(0);
        if (!rep || !s_table)
            rc = MS_ERR_NOMEM;
        else if (zsock_bind(rep, "inproc://zeromq.zap.01") != 0)
            rc = ms_diag_set_code(diag, MS_ERR_IO, "inproc://zeromq.zap.01",
                                  "cannot bind the ZAP handler: %s (another "
                                  "ZAP handler in this process?)",
                                  zmq_strerror(zmq_errno()));
        else {
            zsock_set_linger(rep, 0);
            s_actor = zactor_new(s_actor_fn, rep);
            rep = s_actor ? NULL : rep;
            rc = s_actor ? MS_OK : MS_ERR_NOMEM;
        }
        zsock_destroy(&rep);
        if (rc != MS_OK)
            ms_zap_table_destroy(&s_table);
    }
    if (rc == MS_OK)
        s_refs++;
    pthread_mutex_unlock(&s_lock);
    return rc;
}

//  --------------------------------------------------------------------------
//  Drop a reference

void
ms_zap_stop(void)
{
    pthread_mutex_lock(&s_lock);
    zactor_t *actor = NULL;
    if (s_refs > 0 && --s_refs == 0) {
        actor = s_actor;
        s_actor = NULL;
    }
    pthread_mutex_unlock(&s_lock);
    if (!actor)
        return;
    zactor_destroy(&actor); // the thread is gone after this
    pthread_mutex_lock(&s_lock);
    ms_zap_table_destroy(&s_table);
    pthread_mutex_unlock(&s_lock);
}

//  --------------------------------------------------------------------------
//  Set a key's state in the process table

static void
s_set(const char *domain, const uint8_t *key, ms_zap_state_t state,
      int64_t for_ms)
{
    pthread_mutex_lock(&s_lock);
    if (s_table) {
        int64_t now = zclock_mono();
        ms_zap_table_set(s_table, domain, key, state, now + for_ms, now);
    }
    pthread_mutex_unlock(&s_lock);
}

void
ms_zap_allow(const char *domain, const uint8_t key[MS_ZAP_KEY_BYTES])
{
    s_set(domain, key, MS_ZAP_ALLOWED, 0);
}

void
ms_zap_deny(const char *domain, const uint8_t key[MS_ZAP_KEY_BYTES],
            int64_t for_ms)
{
    s_set(domain, key, MS_ZAP_DENIED, for_ms);
}

void
ms_zap_revoke(const char *domain, const uint8_t key[MS_ZAP_KEY_BYTES])
{
    s_set(domain, key, MS_ZAP_REVOKED, 0);
}

//  --------------------------------------------------------------------------
//  Deny stale pending keys of the process table

size_t
ms_zap_take_stale(const char *domain, int64_t timeout_ms, int64_t deny_ms,
                  uint8_t (*out)[MS_ZAP_KEY_BYTES], size_t max)
{
    pthread_mutex_lock(&s_lock);
    size_t n = s_table ? ms_zap_table_take_stale(s_table, domain, zclock_mono(),
                                                 timeout_ms, deny_ms, out, max)
                       : 0;
    pthread_mutex_unlock(&s_lock);
    return n;
}

//  --------------------------------------------------------------------------
//  Counts

void
ms_zap_counts(uint64_t *n_allowed, uint64_t *n_denied)
{
    pthread_mutex_lock(&s_lock);
    if (n_allowed)
        *n_allowed = s_n_allowed;
    if (n_denied)
        *n_denied = s_n_denied;
    pthread_mutex_unlock(&s_lock);
}
