/*  =========================================================================
    ms_discovery - UDP beacons (czmq zbeacon) that hint at pool members

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One zbeacon actor per chosen (interface, broadcast address), see the
    header. Each actor is configured with CONFIGURE (which answers with
    the address it broadcasts from, empty when zbeacon could not use the
    interface), then PUBLISH our ms_beacon payload and SUBSCRIBE on magic
    + pool id. An actor sends each beacon it hears as two frames: sender
    address, payload.

    The choice is made from getifaddrs(3) each rescan: the wanted set is
    compared with the running one, actors whose entry went are stopped,
    new entries get an actor, and the "beacon:" line is printed when the
    set changed. zbeacon picks its interface from the process-wide
    zsys_interface() while it handles CONFIGURE, and we wait for its
    answer before the next one, so setting it just before is enough.
*/
#define _DEFAULT_SOURCE // IFF_* of <net/if.h>, getifaddrs
#include "ms_discovery.h"
#include "ms_beacon.h"
#include "ms_wire.h"

#include <arpa/inet.h>
#include <assert.h>
#include <czmq.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#define S_SKIPPED_MAX 512 // the "skipped" note, characters
#define S_IN_USE_MAX 1024 // the "beacon:" line, characters

//  One interface address that can beacon.
typedef struct {
    char name[IF_NAMESIZE];
    char address[INET_ADDRSTRLEN];
    char broadcast[INET_ADDRSTRLEN];
} s_iface_t;

//  One running actor and what it beacons on.
typedef struct {
    s_iface_t iface;
    zactor_t *actor;
} s_beacon_t;

struct ms_discovery {
    ms_discovery_options_t opts;            // copied (strings: no)
    char names[MS_DISCOVERY_IFACE_MAX + 1]; // --interface; "" default
    bool wildcard;                          // --interface '*'
    s_beacon_t beacons[MS_DISCOVERY_MAX_BEACONS];
    int n_beacons;                          // running actors
    uint8_t payload[MS_BEACON_MAX_BYTES];   // what we publish
    size_t payload_bytes;                   // its length
    uint8_t filter[MS_BEACON_FILTER_BYTES]; // what we subscribe to
    size_t n_filter;                        // its length
    int64_t opened_at;                      // monotonic ms
    int64_t next_scan_at;                   // next getifaddrs
    bool heard;                             // a member's beacon came
    bool warned;                            // the quiet warning went
    bool logged;                            // a "beacon:" line went
    int next_read;                          // round robin of recv
    char in_use[S_IN_USE_MAX];              // the last "beacon:" list
    char skipped[S_SKIPPED_MAX];            // what the last scan left
    char hostname[MS_DISCOVERY_HOST_MAX];   // first actor's address
};

//  --------------------------------------------------------------------------
//  Container and virtual bridges by name

bool
ms_discovery_virtual_name(const char *name)
{
    static const char *prefixes[] = {"docker",  "br-",  "veth", "virbr", "cni",
                                     "flannel", "cali", "tun",  "tap"};
    assert(name);
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  True when name is an entry of the comma-separated list.

static bool
s_listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

//  --------------------------------------------------------------------------
//  Append text to a bounded string (truncating quietly).

static void
s_append(char *out, size_t cap, const char *text)
{
    size_t n = strlen(out);
    if (n + 1 < cap)
        snprintf(out + n, cap - n, "%s", text);
}

//  --------------------------------------------------------------------------
//  The interfaces of this host, by name, comma-separated (for errors).

static void
s_host_names(char *out, size_t cap)
{
    out[0] = '\0';
    struct if_nameindex *ifs = if_nameindex();
    if (!ifs)
        return;
    for (struct if_nameindex *i = ifs; i->if_index != 0; i++) {
        if (out[0])
            s_append(out, cap, ", ");
        s_append(out, cap, i->if_name);
    }
    if_freenameindex(ifs);
}

//  --------------------------------------------------------------------------
//  Check an --interface value

int
ms_discovery_interface_check(const char *interface, ms_diag_t *diag)
{
    if (!interface || strcmp(interface, "*") == 0)
        return MS_OK;
    if (strlen(interface) > MS_DISCOVERY_IFACE_MAX)
        return ms_diag_set(diag, "interface", "longer than %d characters",
                           MS_DISCOVERY_IFACE_MAX);
    char have[512];
    for (const char *p = interface;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        char name[IF_NAMESIZE + 1];
        if (len == 0)
            return ms_diag_set(diag, "interface",
                               "'%.200s': an empty name in the list "
                               "(NAME[,NAME...], or '*' alone)",
                               interface);
        if (len == 1 && *p == '*')
            return ms_diag_set(diag, "interface",
                               "'%.200s': '*' (every interface, zbeacon's "
                               "wildcard) stands alone, not in a list",
                               interface);
        if (len >= IF_NAMESIZE)
            return ms_diag_set(diag, "interface",
                               "'%.*s': an interface name has at most %d "
                               "characters",
                               (int) (len > 64 ? 64 : len), p, IF_NAMESIZE - 1);
        memcpy(name, p, len);
        name[len] = '\0';
        if (if_nametoindex(name) == 0) {
            s_host_names(have, sizeof have);
            return ms_diag_set(diag, "interface",
                               "%s: no such interface (this host has: %s)",
                               name, have[0] ? have : "none");
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Note a skipped interface once per scan.

static void
s_skip(char *skipped, const char *name, const char *why)
{
    char item[IF_NAMESIZE + 64];
    snprintf(item, sizeof item, "%s (%s)", name, why);
    if (strstr(skipped, item))
        return;
    if (skipped[0])
        s_append(skipped, S_SKIPPED_MAX, ", ");
    s_append(skipped, S_SKIPPED_MAX, item);
}

//  --------------------------------------------------------------------------
//  True when the skipped note names interface name already.

static bool
s_skipped_has(const char *skipped, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = skipped; (p = strstr(p, name)) != NULL; p += n)
        if ((p == skipped || (p >= skipped + 2 && p[-2] == ',')) && p[n] == ' ')
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  The (interface, broadcast) entries to beacon on now, into out (at most
//  max); what was left out, and why, into skipped. Returns the count.

static int
s_scan(ms_discovery_t *self, s_iface_t *out, int max, char *skipped)
{
    skipped[0] = '\0';
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) {
        s_append(skipped, S_SKIPPED_MAX, "getifaddrs failed");
        return 0;
    }
    int n = 0;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !i->ifa_name)
            continue;
        const char *name = i->ifa_name;
        bool chosen = self->names[0] != '\0';
        if (chosen && !s_listed(self->names, name))
            continue;
        const char *why = NULL;
        uint32_t addr = ((struct sockaddr_in *) i->ifa_addr)->sin_addr.s_addr;
        uint32_t mask =
            i->ifa_netmask
                ? ((struct sockaddr_in *) i->ifa_netmask)->sin_addr.s_addr
                : 0xFFFFFFFFu;
        if (i->ifa_flags & IFF_LOOPBACK)
            why = "loopback";
        else if (!chosen && ms_discovery_virtual_name(name))
            why = "container or virtual bridge";
        else if (!(i->ifa_flags & IFF_UP))
            why = "down";
        else if (!(i->ifa_flags & IFF_BROADCAST) ||
                 (i->ifa_flags & IFF_POINTOPOINT) || ntohl(mask) >= 0xFFFFFFFEu)
            why = "no IPv4 broadcast address";
        if (why) {
            s_skip(skipped, name, why);
            continue;
        }
        //  zbeacon sends to address | ~netmask (ziflist), so do we
        s_iface_t e;
        memset(&e, 0, sizeof e);
        snprintf(e.name, sizeof e.name, "%s", name);
        struct in_addr a = {.s_addr = addr}, b = {.s_addr = addr | ~mask};
        inet_ntop(AF_INET, &a, e.address, sizeof e.address);
        inet_ntop(AF_INET, &b, e.broadcast, sizeof e.broadcast);
        bool dup = false;
        for (int k = 0; k < n && !dup; k++)
            dup = strcmp(out[k].name, e.name) == 0 &&
                  strcmp(out[k].broadcast, e.broadcast) == 0;
        if (dup)
            continue; // a second address in the same subnet: one beacon
        if (n < max)
            out[n++] = e;
        else
            s_skip(skipped, name, "too many beacons");
    }
    freeifaddrs(ifs);
    //  a chosen interface with no IPv4 address at all is named too
    for (const char *p = self->names; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen(p);
        char name[IF_NAMESIZE + 1];
        snprintf(name, sizeof name, "%.*s", (int) len, p);
        bool found = false;
        for (int k = 0; k < n && !found; k++)
            found = strcmp(out[k].name, name) == 0;
        if (!found && !s_skipped_has(skipped, name))
            s_skip(skipped, name,
                   if_nametoindex(name) ? "no IPv4 address" : "gone");
        if (!comma)
            break;
        p = comma + 1;
    }
    return n;
}

//  --------------------------------------------------------------------------
//  Start one zbeacon actor on `value` (an address, or "*"). Returns MS_OK,
//  MS_ERR_IO when zbeacon could not use it.

static int
s_beacon_start(ms_discovery_t *self, s_beacon_t *b, const char *value)
{
    zsys_set_interface(value);
    b->actor = zactor_new(zbeacon, NULL);
    if (!b->actor)
        return MS_ERR_IO;
    zsock_send(b->actor, "si", "CONFIGURE", self->opts.beacon_port);
    char *hostname = zstr_recv(b->actor);
    bool ok = hostname && *hostname;
    if (ok && !b->iface.address[0])
        snprintf(b->iface.address, sizeof b->iface.address, "%s", hostname);
    zstr_free(&hostname);
    if (!ok) {
        zactor_destroy(&b->actor);
        return MS_ERR_IO;
    }
    zsock_send(b->actor, "sbi", "PUBLISH", self->payload, self->payload_bytes,
               self->opts.interval_ms);
    zsock_send(b->actor, "sb", "SUBSCRIBE", self->filter, self->n_filter);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Stop one actor.

static void
s_beacon_stop(s_beacon_t *b)
{
    if (b->actor) {
        zstr_sendx(b->actor, "SILENCE", NULL);
        zactor_destroy(&b->actor);
    }
}

//  --------------------------------------------------------------------------
//  Print the "beacon:" line when the set in use changed.

static void
s_log_in_use(ms_discovery_t *self)
{
    char line[S_IN_USE_MAX];
    line[0] = '\0';
    for (int i = 0; i < self->n_beacons; i++) {
        char item[IF_NAMESIZE + INET_ADDRSTRLEN + 4];
        snprintf(item, sizeof item, "%s%s %s", i ? ", " : "",
                 self->beacons[i].iface.name, self->beacons[i].iface.broadcast);
        s_append(line, sizeof line, item);
    }
    if (self->logged && strcmp(line, self->in_use) == 0)
        return;
    snprintf(self->in_use, sizeof self->in_use, "%s", line);
    self->logged = true;
    if (line[0])
        fprintf(stderr, "meshsweepd: beacon: %s (UDP %d%s%s)\n", line,
                self->opts.beacon_port, self->skipped[0] ? "; skipped " : "",
                self->skipped);
    else
        fprintf(stderr,
                "meshsweepd: beacon: no interface to beacon on (UDP %d%s%s); "
                "waiting for one (checked every %d s)\n",
                self->opts.beacon_port, self->skipped[0] ? "; skipped " : "",
                self->skipped, (self->opts.rescan_ms + 999) / 1000);
}

//  --------------------------------------------------------------------------
//  Enumerate again; start and stop actors to match.

static void
s_rescan(ms_discovery_t *self)
{
    s_iface_t want[MS_DISCOVERY_MAX_BEACONS];
    char skipped[S_SKIPPED_MAX];
    int n_want = s_scan(self, want, MS_DISCOVERY_MAX_BEACONS, skipped);
    s_beacon_t next[MS_DISCOVERY_MAX_BEACONS];
    int n_next = 0;
    bool kept[MS_DISCOVERY_MAX_BEACONS] = {false};
    for (int w = 0; w < n_want; w++) {
        int found = -1;
        for (int i = 0; i < self->n_beacons && found < 0; i++)
            if (!kept[i] &&
                memcmp(&self->beacons[i].iface, &want[w], sizeof want[w]) == 0)
                found = i;
        if (found >= 0) {
            kept[found] = true;
            next[n_next++] = self->beacons[found];
            continue;
        }
        s_beacon_t b = {.iface = want[w], .actor = NULL};
        if (s_beacon_start(self, &b, want[w].address) == MS_OK)
            next[n_next++] = b;
        else
            s_skip(skipped, want[w].name, "zbeacon could not use it");
    }
    for (int i = 0; i < self->n_beacons; i++)
        if (!kept[i])
            s_beacon_stop(&self->beacons[i]);
    memcpy(self->beacons, next, sizeof next[0] * (size_t) n_next);
    self->n_beacons = n_next;
    snprintf(self->skipped, sizeof self->skipped, "%s", skipped);
    snprintf(self->hostname, sizeof self->hostname, "%s",
             n_next > 0 ? next[0].iface.address : "");
    s_log_in_use(self);
}

//  --------------------------------------------------------------------------
//  Start beaconing

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
    int rc = ms_discovery_interface_check(opts->interface, diag);
    if (rc != MS_OK)
        return rc;
    ms_beacon_t b = {.protocol_min = MS_PROTOCOL_MIN,
                     .protocol_max = MS_PROTOCOL_MAX,
                     .mesh_port = opts->mesh_port};
    if (opts->advertise_host) {
        size_t n = strlen(opts->advertise_host);
        if (n > MS_BEACON_HOST_MAX || n >= MS_DISCOVERY_HOST_MAX)
            return ms_diag_set(diag, "advertise",
                               "host longer than %d characters",
                               MS_DISCOVERY_HOST_MAX - 1);
        memcpy(b.host, opts->advertise_host, n + 1);
    }
    ms_discovery_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->opts = *opts;
    self->opts.interface = NULL;
    self->opts.advertise_host = NULL;
    if (self->opts.rescan_ms <= 0)
        self->opts.rescan_ms = MS_DISCOVERY_RESCAN_MS;
    if (self->opts.quiet_warn_ms <= 0)
        self->opts.quiet_warn_ms = MS_DISCOVERY_QUIET_MS;
    self->wildcard = opts->interface && strcmp(opts->interface, "*") == 0;
    if (opts->interface && !self->wildcard)
        snprintf(self->names, sizeof self->names, "%s", opts->interface);
    memcpy(b.pool_id, opts->pool_id, 32);
    memcpy(b.node_id, opts->node_id, 32);
    self->payload_bytes = ms_beacon_encode_host(&b, self->payload);
    ms_beacon_filter(opts->pool_id, self->filter, &self->n_filter);
    self->opened_at = zclock_mono();
    self->next_scan_at = self->opened_at + self->opts.rescan_ms;
    if (self->wildcard) {
        s_beacon_t *w = &self->beacons[0];
        snprintf(w->iface.name, sizeof w->iface.name, "*");
        snprintf(w->iface.broadcast, sizeof w->iface.broadcast,
                 "255.255.255.255");
        if (s_beacon_start(self, w, "*") != MS_OK) {
            free(self);
            return ms_diag_set_code(diag, MS_ERR_IO, "interface",
                                    "no usable broadcast interface (*) for "
                                    "UDP port %d",
                                    opts->beacon_port);
        }
        self->n_beacons = 1;
        snprintf(self->hostname, sizeof self->hostname, "*");
        s_log_in_use(self);
    } else
        s_rescan(self);
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
    for (int i = 0; i < self->n_beacons; i++)
        s_beacon_stop(&self->beacons[i]);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Sockets to poll

int
ms_discovery_poll_items(ms_discovery_t *self, zmq_pollitem_t *items, int max)
{
    assert(self && items);
    int n = 0;
    for (int i = 0; i < self->n_beacons && n < max; i++)
        items[n++] =
            (zmq_pollitem_t){zsock_resolve(zactor_sock(self->beacons[i].actor)),
                             0, ZMQ_POLLIN, 0};
    return n;
}

//  --------------------------------------------------------------------------
//  Timed work

void
ms_discovery_tick(ms_discovery_t *self, int64_t now_ms)
{
    assert(self);
    if (!self->wildcard && now_ms >= self->next_scan_at) {
        s_rescan(self);
        self->next_scan_at = now_ms + self->opts.rescan_ms;
    }
    if (!self->heard && !self->warned &&
        now_ms - self->opened_at >= self->opts.quiet_warn_ms) {
        self->warned = true;
        fprintf(stderr,
                "meshsweepd: warning: no beacon of this pool heard in %d s "
                "on %s (UDP %d%s%s): are the other nodes in the same pool, "
                "is UDP %d let through, is it the right network? Choose "
                "with --interface NAME[,NAME], or name peers with --peer\n",
                self->opts.quiet_warn_ms / 1000,
                self->in_use[0] ? self->in_use : "no interface",
                self->opts.beacon_port, self->skipped[0] ? "; skipped " : "",
                self->skipped, self->opts.beacon_port);
    }
}

//  --------------------------------------------------------------------------
//  When tick has work next

int64_t
ms_discovery_next_deadline(ms_discovery_t *self)
{
    assert(self);
    int64_t at = INT64_MAX;
    if (!self->wildcard)
        at = self->next_scan_at;
    if (!self->heard && !self->warned &&
        self->opened_at + self->opts.quiet_warn_ms < at)
        at = self->opened_at + self->opts.quiet_warn_ms;
    return at;
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
//  Actors running

int
ms_discovery_beacon_count(ms_discovery_t *self)
{
    assert(self);
    return self->n_beacons;
}

//  --------------------------------------------------------------------------
//  Read one beacon, no wait

int
ms_discovery_recv(ms_discovery_t *self, ms_discovery_hint_t *hint)
{
    assert(self && hint);
    zsock_t *sock = NULL;
    for (int k = 0; k < self->n_beacons && !sock; k++) {
        int i = (self->next_read + k) % self->n_beacons;
        zsock_t *s = zactor_sock(self->beacons[i].actor);
        if (zsock_events(s) & ZMQ_POLLIN) {
            sock = s;
            self->next_read = i + 1;
        }
    }
    if (!sock)
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
        memcmp(b.node_id, self->opts.node_id, 32) != 0 &&
        strlen(b.host[0] ? b.host : host) < sizeof hint->host) {
        const char *dial = b.host[0] ? b.host : host;
        memcpy(hint->node_id, b.node_id, 32);
        hint->mesh_port = b.mesh_port;
        hint->protocol_min = b.protocol_min;
        hint->protocol_max = b.protocol_max;
        memcpy(hint->host, dial, strlen(dial) + 1); // fits: checked above
        self->heard = true;
        rc = MS_OK;
    }
    zstr_free(&host);
    zframe_destroy(&frame);
    zmsg_destroy(&msg);
    return rc;
}
