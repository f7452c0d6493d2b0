/*  =========================================================================
    ms_node_fixture - nodes opened in a test's root, for the node tests
    (cmocka)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Header-only (static functions) so each test executable stays one file;
    include <cmocka.h>, ms_node.h and ms_node_testdata.h (ms_td_root)
    before it.

        char dir[512];
        ms_node_options_t opts;
        ms_nf_options(&opts, dir, sizeof dir, "a", 1);
        ms_nf_mesh(&opts, port, peers, n_peers);  // a node of a mesh test
        ms_node_t *node = ms_nf_open(&opts);
*/
#ifndef MS_NODE_FIXTURE_H
#define MS_NODE_FIXTURE_H

#include <stdio.h>

//  --------------------------------------------------------------------------
//  Defaults for a node in ms_td_root/NAME (its path written into DIR, N
//  bytes, which OPTS borrows) with N_WORKERS workers on the cpu backend.

static inline void
ms_nf_options(ms_node_options_t *opts, char *dir, size_t n, const char *name,
              int n_workers)
{
    snprintf(dir, n, "%s/%s", ms_td_root, name);
    ms_node_options_defaults(opts);
    opts->data_dir = dir;
    opts->n_workers = n_workers;
    opts->backend = "cpu";
}

//  --------------------------------------------------------------------------
//  The mesh of a multi-node test: no beacon (never broadcast from a
//  test), MESH_PORT, the static PEERS (N_PEERS, borrowed), a lease TTL of
//  1500 ms, heartbeats every 200 ms, beacon rounds every 100 ms and
//  anti-entropy every 200 ms.

static inline void
ms_nf_mesh(ms_node_options_t *opts, int mesh_port, const char *const *peers,
           int n_peers)
{
    opts->no_beacon = true;
    opts->mesh_port = mesh_port;
    opts->peers = peers;
    opts->n_peers = n_peers;
    opts->lease_ttl_ms = 1500;
    opts->heartbeat_ms = 200;
    opts->beacon_interval_ms = 100;
    opts->antientropy_ms = 200;
}

//  --------------------------------------------------------------------------
//  Open a node with OPTS; fails the test, naming the data dir and why,
//  when it cannot be opened. The caller destroys the node.

static inline ms_node_t *
ms_nf_open(const ms_node_options_t *opts)
{
    ms_node_t *node = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_node_open(&node, opts, &diag);
    if (rc != MS_OK)
        fail_msg("ms_node_open %s: %s: %s", opts->data_dir, diag.where,
                 diag.reason);
    return node;
}

#endif
