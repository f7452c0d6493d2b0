/*  =========================================================================
    ms_peers_conf - a static peer's spec, and DATA_DIR/identity/peers.conf

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A static peer is written "[NODE_ID@]tcp://HOST:PORT": NODE_ID the
    peer's whole node id (its public key, 64 lowercase hex characters),
    which a node of a pool with an authority needs to dial it (CURVE);
    HOST a name or an address (IPv6 in brackets) as ms_wire_endpoint_valid
    takes it; PORT 1..65535. The rule is written here once and used by the
    daemon's --peer and `peer =` keys (ms_daemon_config), by
    ms_node_options_check (a library caller's opts.peers), by the node's
    reading of peers.conf at start and on SIGHUP, and by `meshsweep pool
    join --peer`, which writes that file. The id is the whole id, not the
    12-character prefix DESIGN.md takes "wherever an id is typed": a
    prefix names a node the typist's node knows, and a static peer is one
    it does not know yet; the mesh dials it with the key the id is.

    peers.conf is an INI file of `peer = SPEC` lines, in no section or in
    [meshsweepd]; nothing else may be in it.

    Thread rule: every function is thread-safe (no shared state).
    =========================================================================
*/
#ifndef MS_PEERS_CONF_H
#define MS_PEERS_CONF_H

#include "ms_err.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

//  The most peers one list holds (command line, config file, peers.conf).
#define MS_PEERS_CONF_MAX 256

//  Check a static peer spec "[NODE_ID@]tcp://HOST:PORT"; with need_id the
//  NODE_ID part is required. Returns MS_OK, or MS_ERR_INVALID with one
//  phrase in why (why_n bytes, NUL-terminated; the spec itself is not
//  repeated): what is wrong and what is expected.
int ms_peers_conf_check_spec(const char *spec, bool need_id, char *why,
                             size_t why_n);

//  Read the static peers of DATA_DIR/identity/peers.conf. Every value is
//  checked with ms_peers_conf_check_spec (the id optional); any other key,
//  another section, a malformed value or more than MS_PEERS_CONF_MAX
//  peers is a bad line. On MS_OK *peers is a malloc'd array of *n
//  malloc'd strings (free with ms_peers_conf_free; NULL when *n is 0).
//  Returns MS_OK; MS_ERR_NOTFOUND (no file); MS_ERR_IO (cannot read:
//  diag names the path); MS_ERR_INVALID (diag: "PATH:LINE", what and
//  why); MS_ERR_NOMEM.
int ms_peers_conf_load(const char *data_dir, char ***peers, size_t *n,
                       ms_diag_t *diag);

//  Free what ms_peers_conf_load gave; NULL-safe; nulls *peers.
void ms_peers_conf_free(char ***peers, size_t n);

#ifdef __cplusplus
}
#endif

#endif
