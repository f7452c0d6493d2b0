/*  =========================================================================
    ms_discovery - UDP beacons (czmq zbeacon) that hint at pool members

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A thin wrapper over czmq's zbeacon actor: CONFIGURE (which answers with
    the hostname it broadcasts from, empty when no interface works),
    PUBLISH our ms_beacon payload, SUBSCRIBE on magic + pool id. The actor
    sends each beacon it hears as two frames: sender address, payload.
*/
#include "ms_discovery.h"
#include "ms_beacon.h"
#include "ms_wire.h"

#include <assert.h>
#include <czmq.h>
#include <string.h>

struct ms_discovery {
    zactor_t *beacon;                     // the zbeacon actor
    ms_discovery_options_t opts;          // copied (interface: no)
    char hostname[MS_DISCOVERY_HOST_MAX]; // what CONFIGURE answered
};

//  --------------------------------------------------------------------------
//  Start the beacon

int
ms_discovery_open(ms_discovery_t **out, const ms_discovery_options_t *opts,
                  ms_diag_t *diag)
{
    assert(out && opts);
    *out = NULL;
    if (opts->beacon_port < 1 || opts->beacon_port > 65535)
        return ms_diag_set(diag, "beacon_port", "must be 1..65535, not %d",
                           opts->beacon_port);
    if (opts->interval_ms < 10 || opts->interval_ms > 3600000)
        return ms_diag_set(diag, "beacon_interval_ms",
                           "must be 10..3600000, not %d", opts->interval_ms);
    if (opts->mesh_port == 0)
        return ms_diag_set(diag, "mesh_port", "must be 1..65535");
    ms_discovery_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->opts = *opts;
    self->opts.interface = NULL;
    if (opts->interface)
        zsys_set_interface(opts->interface);
    self->beacon = zactor_new(zbeacon, NULL);
    if (!self->beacon) {
        free(self);
        return ms_diag_set_code(diag, MS_ERR_IO, "beacon",
                                "could not start the zbeacon actor");
    }
    zsock_send(self->beacon, "si", "CONFIGURE", opts->beacon_port);
    char *hostname = zstr_recv(self->beacon);
    if (!hostname || !*hostname) {
        zstr_free(&hostname);
        zactor_destroy(&self->beacon);
        free(self);
        return ms_diag_set_code(
            diag, MS_ERR_IO, "interface",
            "no usable broadcast interface (%s) for "
            "UDP port %d",
            opts->interface ? opts->interface : "czmq default",
            opts->beacon_port);
    }
    snprintf(self->hostname, sizeof self->hostname, "%s", hostname);
    zstr_free(&hostname);
    ms_beacon_t b = {.protocol_min = MS_PROTOCOL_MIN,
                     .protocol_max = MS_PROTOCOL_MAX,
                     .mesh_port = opts->mesh_port};
    memcpy(b.pool_id, opts->pool_id, 32);
    memcpy(b.node_id, opts->node_id, 32);
    uint8_t payload[MS_BEACON_BYTES];
    ms_beacon_encode(&b, payload);
    zsock_send(self->beacon, "sbi", "PUBLISH", payload, (size_t) sizeof payload,
               opts->interval_ms);
    uint8_t filter[MS_BEACON_FILTER_BYTES];
    size_t n_filter = 0;
    ms_beacon_filter(opts->pool_id, filter, &n_filter);
    zsock_send(self->beacon, "sb", "SUBSCRIBE", filter, n_filter);
    *out = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Stop and free

void
ms_discovery_destroy(ms_discovery_t **self_p)
{
    assert(self_p);
    ms_discovery_t *self = *self_p;
    if (!self)
        return;
    if (self->beacon) {
        zstr_sendx(self->beacon, "SILENCE", NULL);
        zactor_destroy(&self->beacon);
    }
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Socket to poll

void *
ms_discovery_handle(ms_discovery_t *self)
{
    assert(self);
    return zsock_resolve(zactor_sock(self->beacon));
}

//  --------------------------------------------------------------------------
//  Our broadcast address

const char *
ms_discovery_hostname(ms_discovery_t *self)
{
    assert(self);
    return self->hostname;
}

//  --------------------------------------------------------------------------
//  Read one beacon, no wait

int
ms_discovery_recv(ms_discovery_t *self, ms_discovery_hint_t *hint)
{
    assert(self && hint);
    zsock_t *sock = zactor_sock(self->beacon);
    if (!(zsock_events(sock) & ZMQ_POLLIN))
        return MS_ERR_NOTFOUND;
    zmsg_t *msg = zmsg_recv(sock);
    if (!msg)
        return MS_ERR_NOTFOUND;
    int rc = MS_ERR_PROTOCOL;
    char *host = zmsg_popstr(msg);
    zframe_t *frame = zmsg_pop(msg);
    ms_beacon_t b;
    if (host && frame &&
        ms_beacon_decode(zframe_data(frame), zframe_size(frame), &b) == MS_OK &&
        memcmp(b.pool_id, self->opts.pool_id, 32) == 0 &&
        memcmp(b.node_id, self->opts.node_id, 32) != 0) {
        memcpy(hint->node_id, b.node_id, 32);
        hint->mesh_port = b.mesh_port;
        hint->protocol_min = b.protocol_min;
        hint->protocol_max = b.protocol_max;
        snprintf(hint->host, sizeof hint->host, "%s", host);
        rc = MS_OK;
    }
    zstr_free(&host);
    zframe_destroy(&frame);
    zmsg_destroy(&msg);
    return rc;
}
