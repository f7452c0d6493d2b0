/*  =========================================================================
    ms_discovery - UDP beacons (czmq zbeacon) that hint at pool members

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Discovery and links": every node publishes the ms_beacon
    payload (magic, pool id, protocol min/max, node id, mesh port) on UDP
    beacon_port every interval_ms and subscribes on magic + pool id, so
    zbeacon drops other pools' beacons itself. A beacon is only a hint
    (ms_mesh dials, the HELLO decides); our own beacon is dropped here.

    Debian's czmq 4.2.1 zbeacon never uses the loopback interface and, with
    no interface set, picks the first real one. The interface is process-
    wide (zsys_set_interface) and is set before the zbeacon actor starts.
    NETWORK SAFETY: a beacon leaves the machine on a real interface; tests
    create one only inside a private network namespace.

    Threads: one discovery belongs to one thread (the node loop).
*/
#ifndef MS_DISCOVERY_H
#define MS_DISCOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_err.h"

typedef struct ms_discovery ms_discovery_t;

#define MS_DISCOVERY_HOST_MAX 64 // an IPv4/IPv6 address as text

typedef struct {
    uint8_t pool_id[32];   // ours; the subscription filter
    uint8_t node_id[32];   // ours; beacons with it are dropped
    uint16_t mesh_port;    // advertised mesh (ROUTER) port
    int beacon_port;       // UDP port (5870)
    const char *interface; // NULL = czmq default, "*" = all, or a name
    int interval_ms;       // publish interval (1000)
} ms_discovery_options_t;

//  What one beacon said, and where it came from.
typedef struct {
    uint8_t node_id[32];                 // the sender's node id
    uint16_t mesh_port;                  // the sender's mesh port
    uint16_t protocol_min, protocol_max; // versions it speaks
    char host[MS_DISCOVERY_HOST_MAX];    // sender's address (zbeacon)
} ms_discovery_hint_t;

//  Start a zbeacon actor on opts->beacon_port (after setting the
//  interface), publish our beacon every interval_ms and subscribe on our
//  pool. Caller owns *out; free it with ms_discovery_destroy(). Returns
//  MS_OK; MS_ERR_INVALID (port or interval out of range: diag names the
//  option); MS_ERR_IO (zbeacon found no usable interface or could not
//  start: diag says which interface); MS_ERR_NOMEM. *out NULL on failure.
int ms_discovery_open(ms_discovery_t **out, const ms_discovery_options_t *opts,
                      ms_diag_t *diag);

//  Stop publishing, stop the actor, free. NULL-safe; nulls *self_p.
void ms_discovery_destroy(ms_discovery_t **self_p);

//  The libzmq socket handle to poll for ZMQ_POLLIN (borrowed).
void *ms_discovery_handle(ms_discovery_t *self);

//  The address zbeacon broadcasts from ("" when unknown). Borrowed.
const char *ms_discovery_hostname(ms_discovery_t *self);

//  Read one received beacon without waiting. Returns MS_OK (*hint
//  filled); MS_ERR_NOTFOUND (nothing waiting); MS_ERR_PROTOCOL (a
//  malformed beacon, or another pool's, or our own: dropped, counted by
//  the caller).
int ms_discovery_recv(ms_discovery_t *self, ms_discovery_hint_t *hint);

#endif
