/*  =========================================================================
    ms_zap - the process's ZeroMQ authentication handler (ZAP, RFC 27) for
    CURVE mesh links, answering from a table keyed by CURVE key

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Identity, pools and admission": one ZAP handler per
    process, started before any bind, answers from a table keyed by CURVE
    key; revoked or denied keys get 400. Unknown keys get 200: a key
    proves itself by the certificate in its HELLO, which the mesh checks
    (ms_members), and the mesh then tells this table what it decided
    (allow, deny for a while, revoke). A key let in that sends no valid
    HELLO within a few seconds is found by ms_zap_take_stale and denied.
    Every 200 carries User-Id = the client's CURVE key in lowercase hex,
    which libzmq attaches to each frame of that connection ("User-Id"
    metadata): the ROUTER side of the mesh checks every frame by it.

    Domains: each mesh sets ZMQ_ZAP_DOMAIN on its ROUTER (its own name),
    and the table is keyed by (domain, key), so several meshes in one
    process (tests) keep separate tables.

    Threads: the handler is a czmq actor thread (a REP socket on
    inproc://zeromq.zap.01 of czmq's context). The table is shared by
    that thread and the node loops, under one mutex held for a lookup or
    an update (microseconds); a pipe protocol for each allow and deny
    would add a round trip to every HELLO for nothing. Every function
    here is thread-safe.

    The table (ms_zap_table_t) is also usable alone, without sockets, and
    is what the unit tests drive.
*/
#ifndef MS_ZAP_H
#define MS_ZAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

#define MS_ZAP_KEY_BYTES 32          // CURVE public key
#define MS_ZAP_DOMAIN_MAX 31         // bytes of a domain name
#define MS_ZAP_TABLE_MAX 4096        // entries before old ones are evicted
#define MS_ZAP_HELLO_TIMEOUT_MS 5000 // a let-in key must pass HELLO by then
#define MS_ZAP_DENY_MS 60000         // how long such a key is denied

typedef enum {
    MS_ZAP_PENDING, // let in, its HELLO not passed yet (since first_seen)
    MS_ZAP_ALLOWED, // its HELLO passed: a member
    MS_ZAP_DENIED,  // 400 until `until`, then pending again
    MS_ZAP_REVOKED  // 400 for ever
} ms_zap_state_t;

typedef struct ms_zap_table ms_zap_table_t;

//  A new empty table of at most cap entries (0: MS_ZAP_TABLE_MAX). Caller
//  owns it; free it with ms_zap_table_destroy(). NULL when out of memory.
ms_zap_table_t *ms_zap_table_new(size_t cap);

//  Free a table. NULL-safe; nulls *self_p.
void ms_zap_table_destroy(ms_zap_table_t **self_p);

//  Decide a connection of key in domain at now_ms (monotonic): 200 (let
//  in; an unknown key becomes PENDING, a denial that ran out PENDING
//  again) or 400 (denied until later, revoked, or the table is full of
//  pending keys: a flood of strangers is not let in).
int ms_zap_table_decide(ms_zap_table_t *self, const char *domain,
                        const uint8_t key[MS_ZAP_KEY_BYTES], int64_t now_ms);

//  Set key's state in domain: ALLOWED, DENIED until until_ms, REVOKED
//  (final: later sets are ignored), or PENDING (since now_ms). Returns
//  MS_OK or MS_ERR_NOMEM (table full of entries that cannot be evicted).
int ms_zap_table_set(ms_zap_table_t *self, const char *domain,
                     const uint8_t key[MS_ZAP_KEY_BYTES], ms_zap_state_t state,
                     int64_t until_ms, int64_t now_ms);

//  State of key in domain (*until_ms, may be NULL, gets its DENIED end);
//  false when unknown.
bool ms_zap_table_get(const ms_zap_table_t *self, const char *domain,
                      const uint8_t key[MS_ZAP_KEY_BYTES],
                      ms_zap_state_t *state, int64_t *until_ms);

//  Deny every PENDING key of domain let in at or before now_ms -
//  timeout_ms, until now_ms + deny_ms; copy up to max of them into out.
//  Returns how many were denied (may exceed max).
size_t ms_zap_table_take_stale(ms_zap_table_t *self, const char *domain,
                               int64_t now_ms, int64_t timeout_ms,
                               int64_t deny_ms,
                               uint8_t (*out)[MS_ZAP_KEY_BYTES], size_t max);

//  Entries in the table.
size_t ms_zap_table_size(const ms_zap_table_t *self);

//  Start the process's handler (reference counted: every mesh that uses
//  CURVE calls it before it binds, and ms_zap_stop when it closes).
//  Checks that libzmq has CURVE. Returns MS_OK; MS_ERR_UNSUPPORTED (no
//  CURVE in this libzmq: diag); MS_ERR_IO (cannot bind the ZAP endpoint:
//  diag); MS_ERR_NOMEM.
int ms_zap_start(ms_diag_t *diag);

//  Drop one reference; the last stops the handler and frees the table.
void ms_zap_stop(void);

//  The process table's operations (see ms_zap_table_*), on the clock
//  zclock_mono(). No-ops when the handler is not started.
void ms_zap_allow(const char *domain, const uint8_t key[MS_ZAP_KEY_BYTES]);
void ms_zap_deny(const char *domain, const uint8_t key[MS_ZAP_KEY_BYTES],
                 int64_t for_ms);
void ms_zap_revoke(const char *domain, const uint8_t key[MS_ZAP_KEY_BYTES]);
size_t ms_zap_take_stale(const char *domain, int64_t timeout_ms,
                         int64_t deny_ms, uint8_t (*out)[MS_ZAP_KEY_BYTES],
                         size_t max);

//  ZAP requests answered by the handler since it started: with 200 and
//  with 400 (either may be NULL).
void ms_zap_counts(uint64_t *n_allowed, uint64_t *n_denied);

#endif
