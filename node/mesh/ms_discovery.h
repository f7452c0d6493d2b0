/*  =========================================================================
    ms_discovery - UDP beacons (czmq zbeacon) that hint at pool members

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Discovery and links": every node publishes the ms_beacon
    payload (magic, pool id, protocol min/max, node id, mesh port, and the
    --advertise host when there is one) on UDP beacon_port every
    interval_ms and subscribes on magic + pool id, so zbeacon drops other
    pools' beacons itself. A beacon is only a hint (ms_mesh dials, the
    HELLO decides); our own beacon is dropped here.

    Which interfaces. A zbeacon actor beacons on one interface, chosen by
    the process-wide zsys_interface() when it is configured, and with
    none set Debian's czmq 4.2.1 takes the first interface it lists: on a
    lab host whose docker0 bridge was made before eth0 that is docker0,
    and no pair of nodes ever meets (issue 18). So this class chooses
    itself and runs one zbeacon actor per (interface, IPv4 broadcast
    address), configuring each with the interface's address (zbeacon
    matches an address as well as a name), and merges what they hear:

      - interface NULL (the default): every interface that is up, has an
        IPv4 broadcast address, is not loopback and is not a container or
        virtual bridge by its name (ms_discovery_virtual_name: docker*,
        br-*, veth*, virbr*, cni*, flannel*, cali*, tun*, tap*);
      - "eth0,eth1": those interfaces (each must exist at open: else
        MS_ERR_INVALID naming it), whatever their names, while they are
        up with an IPv4 broadcast address;
      - "*": one actor on INADDR_ANY sending to 255.255.255.255 (zbeacon's
        own wildcard; with a 255.255.255.255 route on lo it carries
        several daemons in one network namespace, tests and demos).

    The interfaces are enumerated again every rescan_ms (getifaddrs), so
    a laptop's Wi-Fi or a VPN that comes and goes gets an actor started
    or stopped without a restart. At open and on every change one line on
    stderr names what is in use ("meshsweepd: beacon: eth0 10.1.0.255,
    eth1 192.168.1.255 (UDP 5870)"), and when no beacon of another member
    was heard quiet_warn_ms after open, one warning names what was tried
    and what was skipped.

    Every actor's receiving socket is bound to INADDR_ANY:beacon_port
    (zbeacon does so on Linux), so each one hears the beacons of every
    interface: with N actors a beacon arrives N times. The mesh takes a
    hint it already acted on as a no-op, so this costs N small reads per
    beacon interval and per peer.

    One limit of zbeacon: when a send fails (an address that went away)
    the actor prepares its socket again from zsys_interface(), which is
    process-wide and holds the address of the last actor configured; the
    next rescan (within rescan_ms) stops an actor whose interface went.

    NETWORK SAFETY: a beacon leaves the machine on a real interface; tests
    create one only inside a private network namespace.

    Threads: one discovery belongs to one thread (the node loop).
*/
#ifndef MS_DISCOVERY_H
#define MS_DISCOVERY_H

#include <stdbool.h>
#include <stdint.h>
#include <zmq.h>

#include "ms_err.h"

typedef struct ms_discovery ms_discovery_t;

#define MS_DISCOVERY_HOST_MAX 64    // an IPv4/IPv6 address as text
#define MS_DISCOVERY_MAX_BEACONS 16 // actors (interface, broadcast) at most
#define MS_DISCOVERY_RESCAN_MS 3000 // interfaces enumerated this often
#define MS_DISCOVERY_QUIET_MS 30000 // warn when nobody was heard by then
#define MS_DISCOVERY_IFACE_MAX 1024 // --interface list, characters

typedef struct {
    uint8_t pool_id[32];   // ours; the subscription filter
    uint8_t node_id[32];   // ours; beacons with it are dropped
    uint16_t mesh_port;    // advertised mesh (ROUTER) port
    int beacon_port;       // UDP port (5870)
    const char *interface; // NULL = every usable interface, "*" = zbeacon's
                           // wildcard, or "NAME[,NAME...]"
    int interval_ms;       // publish interval (1000)
    const char *advertise_host; // put in the beacon (--advertise); NULL =
                                // none: peers dial the source address
    int rescan_ms;              // 0 = MS_DISCOVERY_RESCAN_MS
    int quiet_warn_ms;          // 0 = MS_DISCOVERY_QUIET_MS
} ms_discovery_options_t;

//  What one beacon said, and where it came from.
typedef struct {
    uint8_t node_id[32];                 // the sender's node id
    uint16_t mesh_port;                  // the sender's mesh port
    uint16_t protocol_min, protocol_max; // versions it speaks
    char host[MS_DISCOVERY_HOST_MAX];    // where to dial: the advertised
                                         // host, else the sender's address
} ms_discovery_hint_t;

//  True when an interface name is a container or virtual bridge that the
//  default choice skips (docker*, br-*, veth*, virbr*, cni*, flannel*,
//  cali*, tun*, tap*).
bool ms_discovery_virtual_name(const char *name);

//  Check an --interface value: NULL, "*" alone, or a comma-separated list
//  of names (no empty one, each shorter than IFNAMSIZ) of interfaces that
//  exist on this host now. Returns MS_OK, or MS_ERR_INVALID with diag
//  (where "interface") naming the first bad entry and the interfaces
//  that do exist.
int ms_discovery_interface_check(const char *interface, ms_diag_t *diag);

//  Start beaconing (see the prose) on opts->beacon_port: publish our
//  beacon every interval_ms on each chosen interface and subscribe on our
//  pool. With no usable interface yet (default choice) it opens anyway
//  and waits for one. Caller owns *out; free it with
//  ms_discovery_destroy(). Returns MS_OK; MS_ERR_INVALID (port, interval,
//  --interface list or advertise host out of range: diag names the
//  option); MS_ERR_IO (zbeacon could not start, or "*" found no usable
//  interface: diag says which); MS_ERR_NOMEM. *out NULL on failure.
int ms_discovery_open(ms_discovery_t **out, const ms_discovery_options_t *opts,
                      ms_diag_t *diag);

//  Stop publishing, stop the actors, free. NULL-safe; nulls *self_p.
void ms_discovery_destroy(ms_discovery_t **self_p);

//  The libzmq socket handles to poll for ZMQ_POLLIN, one per actor, into
//  items (at most max); returns how many. Borrowed until the next
//  ms_discovery_tick.
int ms_discovery_poll_items(ms_discovery_t *self, zmq_pollitem_t *items,
                            int max);

//  Timed work: enumerate the interfaces again when due (starting and
//  stopping actors, logging a change), and warn once when no member was
//  heard after quiet_warn_ms.
void ms_discovery_tick(ms_discovery_t *self, int64_t now_ms);

//  When ms_discovery_tick next has work (monotonic ms).
int64_t ms_discovery_next_deadline(ms_discovery_t *self);

//  The address the first beacon broadcasts from ("*" for the wildcard,
//  "" when none is running). Borrowed until the next ms_discovery_tick.
const char *ms_discovery_hostname(ms_discovery_t *self);

//  How many actors beacon now.
int ms_discovery_beacon_count(ms_discovery_t *self);

//  Read one received beacon without waiting (from any actor). Returns
//  MS_OK (*hint filled); MS_ERR_NOTFOUND (nothing waiting); MS_ERR_PROTOCOL
//  (a malformed beacon, or another pool's, or our own: dropped, counted
//  by the caller).
int ms_discovery_recv(ms_discovery_t *self, ms_discovery_hint_t *hint);

#endif
