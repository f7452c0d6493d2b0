/*  =========================================================================
    ms_peers_conf - a static peer's spec, and DATA_DIR/identity/peers.conf

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The spec rule was written three times (the daemon's --peer, the node's
    peers.conf reader and `meshsweep pool join --peer`), and the three
    took different specs: the node's reader took a port of 0 or 99999 that
    the daemon refused. It is written once here, as the strictest of them.
*/
#include "ms_peers_conf.h"
#include "ms_hash.h"
#include "ms_wire.h"

#include <ini.h>

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Check a static peer spec

int
ms_peers_conf_check_spec(const char *spec, bool need_id, char *why,
                         size_t why_n)
{
    assert(spec && why && why_n > 0);
    const char *at = strchr(spec, '@');
    const char *ep = at ? at + 1 : spec;
    if (!at && need_id) {
        snprintf(why, why_n,
                 "needs the peer's node id: NODE_ID@tcp://HOST:PORT (in a "
                 "pool with an authority the dialer needs its key)");
        return MS_ERR_INVALID;
    }
    if (at) {
        size_t n = (size_t) (at - spec);
        if (n != MS_HASH_HEX_LEN || strspn(spec, "0123456789abcdef") != n) {
            snprintf(why, why_n,
                     "NODE_ID must be the peer's whole node id, 64 lowercase "
                     "hex characters (got %zu characters)",
                     n);
            return MS_ERR_INVALID;
        }
    }
    if (strncmp(ep, "tcp://", 6) != 0) {
        snprintf(why, why_n, "expected [NODE_ID@]tcp://HOST:PORT");
        return MS_ERR_INVALID;
    }
    const char *colon = strrchr(ep + 6, ':');
    if (!colon || colon == ep + 6) {
        snprintf(why, why_n, "expected [NODE_ID@]tcp://HOST:PORT (no %s)",
                 colon ? "HOST" : "PORT");
        return MS_ERR_INVALID;
    }
    const char *port = colon + 1;
    size_t n_port = strlen(port);
    long v = 0;
    for (size_t i = 0; i < n_port && i < 6; i++)
        v = port[i] >= '0' && port[i] <= '9' ? v * 10 + (port[i] - '0') : -1;
    if (n_port == 0 || n_port > 5 || strspn(port, "0123456789") != n_port ||
        v < 1 || v > 65535) {
        snprintf(why, why_n,
                 "port '%.20s' is not a number in 1..65535 (expected "
                 "[NODE_ID@]tcp://HOST:PORT)",
                 port);
        return MS_ERR_INVALID;
    }
    if (!ms_wire_endpoint_valid(ep)) {
        snprintf(why, why_n,
                 "HOST must be a name or address (letters, digits, '.', "
                 "'-', '_'; IPv6 in [brackets])");
        return MS_ERR_INVALID;
    }
    return MS_OK;
}

//  peers.conf parse state.
typedef struct {
    char **peers;    // collected (malloc'd)
    size_t n, cap;   // used, allocated
    char error[400]; // first error
} s_parse_t;

//  --------------------------------------------------------------------------
//  One key of peers.conf; 0 stops the parse.

static int
s_key(void *user, const char *section, const char *name, const char *value)
{
    s_parse_t *c = user;
    if (section && *section && strcmp(section, "meshsweepd") != 0) {
        snprintf(c->error, sizeof c->error, "unknown section [%.100s]",
                 section);
        return 0;
    }
    if (strcmp(name, "peer") != 0) {
        snprintf(c->error, sizeof c->error,
                 "unknown key '%.100s' (this file holds peer = lines only)",
                 name);
        return 0;
    }
    char why[200];
    if (ms_peers_conf_check_spec(value, false, why, sizeof why) != MS_OK) {
        snprintf(c->error, sizeof c->error, "peer = %.150s: %s", value, why);
        return 0;
    }
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 8;
        if (c->n >= MS_PEERS_CONF_MAX) {
            snprintf(c->error, sizeof c->error, "too many peers (%d at most)",
                     MS_PEERS_CONF_MAX);
            return 0;
        }
        char **grown = realloc(c->peers, cap * sizeof *grown);
        if (!grown) {
            snprintf(c->error, sizeof c->error, "out of memory");
            return 0;
        }
        c->peers = grown;
        c->cap = cap;
    }
    if (!(c->peers[c->n] = strdup(value))) {
        snprintf(c->error, sizeof c->error, "out of memory");
        return 0;
    }
    c->n++;
    return 1;
}

//  --------------------------------------------------------------------------
//  Read DATA_DIR/identity/peers.conf

int
ms_peers_conf_load(const char *data_dir, char ***peers, size_t *n,
                   ms_diag_t *diag)
{
    assert(data_dir && peers && n);
    *peers = NULL;
    *n = 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/identity/peers.conf", data_dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        if (errno == ENOENT)
            return MS_ERR_NOTFOUND;
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot read: %s",
                                strerror(errno));
    }
    s_parse_t c = {0};
    int line = ini_parse_file(f, s_key, &c);
    fclose(f);
    if (line != 0) {
        ms_peers_conf_free(&c.peers, c.n);
        if (line < 0)
            return ms_diag_set_code(diag, MS_ERR_NOMEM, path, "out of memory");
        char where[4300];
        snprintf(where, sizeof where, "%s:%d", path, line);
        return ms_diag_set_code(diag, MS_ERR_INVALID, where, "%s",
                                c.error[0] ? c.error : "syntax error");
    }
    *peers = c.peers;
    *n = c.n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a peer list

void
ms_peers_conf_free(char ***peers, size_t n)
{
    assert(peers);
    if (!*peers)
        return;
    for (size_t i = 0; i < n; i++)
        free((*peers)[i]);
    free(*peers);
    *peers = NULL;
}
