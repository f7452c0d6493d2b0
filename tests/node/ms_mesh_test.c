/*  =========================================================================
    ms_mesh_test - links between meshes in one process on loopback (no
    beacons), and beacon discovery inside a private network namespace

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    NETWORK SAFETY: every mesh here binds 127.0.0.1 and has beacons off,
    except in test_beacon_discovery_in_netns, which re-executes this binary
    under `unshare -rn` (a new, empty network namespace) and beacons only
    there. When unshare is not permitted that case is skipped.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ms_beacon.h"
#include "ms_mesh.h"
#include "ms_wire.h"

#define HB_MS 50
#define N_HYPARVIEW 24

//  Pool names unique to this process: parallel test runs reuse each
//  other's freed ports, and must not link across processes.
static char s_pool_lab[64], s_pool_other[64];

//  What on_peer reported, per test.
typedef struct {
    int n_calls;
    int n_alive, n_suspect, n_dead;
    int n_linked;
    int n_messages;
    int n_heartbeats;
    int n_filled;
} s_events_t;

//  --------------------------------------------------------------------------
//  Handlers that count

static void
s_on_peer(void *arg, const uint8_t id[32], ms_peer_state_t state, bool linked)
{
    (void) id;
    s_events_t *ev = arg;
    ev->n_calls++;
    if (state == MS_PEER_ALIVE)
        ev->n_alive++;
    if (state == MS_PEER_SUSPECT)
        ev->n_suspect++;
    if (state == MS_PEER_DEAD)
        ev->n_dead++;
    if (linked)
        ev->n_linked++;
}

//  --------------------------------------------------------------------------
//  Count messages

static void
s_on_message(void *arg, const uint8_t from[32], const ms_wire_envelope_t *env)
{
    (void) from;
    (void) env;
    ((s_events_t *) arg)->n_messages++;
}

//  --------------------------------------------------------------------------
//  Count heartbeats

static void
s_on_heartbeat(void *arg, const uint8_t from[32], const ms_wire_envelope_t *hb,
               int64_t now_ms)
{
    (void) from;
    (void) now_ms;
    assert_int_equal(hb->body, MS_WIRE_BODY_HEARTBEAT);
    ((s_events_t *) arg)->n_heartbeats++;
}

//  --------------------------------------------------------------------------
//  Add the node's part of a heartbeat

static void
s_fill_heartbeat(void *arg, ms_wire_envelope_t *hb)
{
    ((s_events_t *) arg)->n_filled++;
    hb->heartbeat.n_busy = 0;
}

//  --------------------------------------------------------------------------
//  A node id whose order is given by its first byte

static void
s_id(uint8_t out[32], uint8_t first)
{
    for (int i = 0; i < 32; i++)
        out[i] = (uint8_t) (first ^ (i * 37));
    out[0] = first;
}

//  --------------------------------------------------------------------------
//  Hex of an id

static void
s_hex(const uint8_t *id, char *out)
{
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
}

//  --------------------------------------------------------------------------
//  Open a test mesh on 127.0.0.1 (port 0 = ephemeral)

static ms_mesh_t *
s_open(uint8_t first, const char *pool, int port, const char *const *peers,
       int n_peers, s_events_t *ev)
{
    ms_mesh_options_t opts;
    ms_mesh_options_defaults(&opts);
    s_id(opts.node_id, first);
    ms_beacon_open_pool_id(pool, opts.pool_id);
    opts.incarnation = 1000 + first;
    opts.n_workers = 2;
    opts.operator_name = "lab";
    char bind[64];
    if (port)
        snprintf(bind, sizeof bind, "tcp://127.0.0.1:%d", port);
    else
        snprintf(bind, sizeof bind, "tcp://127.0.0.1:0"); // kernel's pick
    opts.mesh_bind = bind;
    opts.beacon = false;
    opts.static_peers = peers;
    opts.n_static_peers = n_peers;
    opts.heartbeat_ms = HB_MS;
    opts.suspect_after_ms = 3 * HB_MS;
    opts.dead_after_ms = 8 * HB_MS;
    opts.redial_min_ms = 50;
    opts.redial_max_ms = 200;
    ms_mesh_handlers_t h = {.arg = ev,
                            .on_peer = s_on_peer,
                            .on_message = s_on_message,
                            .on_heartbeat = s_on_heartbeat,
                            .fill_heartbeat = s_fill_heartbeat};
    ms_mesh_t *mesh = NULL;
    ms_diag_t diag;
    int rc = ms_mesh_open(&mesh, &opts, &h, &diag);
    //  a port just closed is released by libzmq's I/O thread a moment
    //  later: retry a fixed port for up to a second
    for (int i = 0; i < 50 && rc == MS_ERR_IO && port; i++) {
        zclock_sleep(20);
        rc = ms_mesh_open(&mesh, &opts, &h, &diag);
    }
    if (rc != MS_OK)
        fprintf(stderr, "open: %s: %s\n", diag.where, diag.reason);
    assert_int_equal(rc, MS_OK);
    assert_non_null(mesh);
    assert_true(ms_mesh_port(mesh) > 0);
    return mesh;
}

//  --------------------------------------------------------------------------
//  Static peer spec of a mesh: "HEX@tcp://127.0.0.1:PORT" (with_id) or
//  "tcp://127.0.0.1:PORT"

static void
s_spec(char *out, size_t size, uint8_t first, int port, bool with_id)
{
    uint8_t id[32];
    s_id(id, first);
    char hex[65];
    s_hex(id, hex);
    if (with_id)
        snprintf(out, size, "%s@tcp://127.0.0.1:%d", hex, port);
    else
        snprintf(out, size, "tcp://127.0.0.1:%d", port);
}

typedef bool (*s_until_fn)(ms_mesh_t **meshes, int n, void *arg);

//  --------------------------------------------------------------------------
//  Run the meshes' loops (one zmq_poll over all their sockets) for up to
//  max_ms, or until `until` holds. Returns true when it held.

static bool
s_pump(ms_mesh_t **meshes, int n, int max_ms, s_until_fn until, void *arg)
{
    int64_t end = ms_mesh_now() + max_ms;
    zmq_pollitem_t *items = calloc((size_t) n * 64, sizeof *items);
    assert_non_null(items);
    while (ms_mesh_now() < end) {
        int n_items = 0;
        int64_t next = end;
        for (int i = 0; i < n; i++) {
            if (!meshes[i])
                continue;
            //  (a mesh with more sockets than 64 is still read: handle
            //  reads every socket without waiting)
            n_items += ms_mesh_poll_items(meshes[i], items + n_items, 64);
            int64_t d = ms_mesh_next_deadline(meshes[i]);
            if (d < next)
                next = d;
        }
        int64_t timeout = next - ms_mesh_now();
        if (timeout < 0)
            timeout = 0;
        if (timeout > 20)
            timeout = 20;
        zmq_poll(items, n_items, (long) timeout);
        for (int i = 0; i < n; i++) {
            if (!meshes[i])
                continue;
            ms_mesh_handle(meshes[i], ms_mesh_now());
            ms_mesh_tick(meshes[i], ms_mesh_now());
        }
        if (until && until(meshes, n, arg)) {
            free(items);
            return true;
        }
    }
    free(items);
    return until ? until(meshes, n, arg) : true;
}

//  --------------------------------------------------------------------------
//  Every open mesh sees every other open mesh linked and alive

static bool
s_all_linked(ms_mesh_t **meshes, int n, void *arg)
{
    (void) arg;
    int n_open = 0;
    for (int i = 0; i < n; i++)
        n_open += meshes[i] != NULL;
    for (int i = 0; i < n; i++)
        if (meshes[i] && ms_mesh_n_alive(meshes[i]) != n_open - 1)
            return false;
    return true;
}

//  --------------------------------------------------------------------------
//  The entry for a peer in a mesh's peers JSON (borrowed from list)

static json_t *
s_entry(json_t *list, uint8_t first)
{
    uint8_t id[32];
    char hex[65];
    s_id(id, first);
    s_hex(id, hex);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "node_id")), hex) == 0)
            return e;
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Two meshes: HELLO, link, heartbeats, peers JSON

static void
test_hello_and_heartbeats(void **state)
{
    (void) state;
    s_events_t ev_a = {0}, ev_b = {0};
    ms_mesh_t *b = s_open(0x20, s_pool_lab, 0, NULL, 0, &ev_b);
    char spec[200];
    s_spec(spec, sizeof spec, 0x20, ms_mesh_port(b), true);
    const char *peers[] = {spec};
    ms_mesh_t *a = s_open(0x10, s_pool_lab, 0, peers, 1, &ev_a);
    ms_mesh_t *meshes[] = {a, b};
    assert_true(s_pump(meshes, 2, 3000, s_all_linked, NULL));
    uint8_t id_b[32], id_a[32];
    s_id(id_b, 0x20);
    s_id(id_a, 0x10);
    bool linked = false;
    assert_int_equal(ms_mesh_peer_state(a, id_b, &linked), MS_PEER_ALIVE);
    assert_true(linked);
    assert_int_equal(ms_mesh_peer_state(b, id_a, &linked), MS_PEER_ALIVE);
    assert_true(linked);
    //  heartbeats flow both ways
    s_pump(meshes, 2, 10 * HB_MS, NULL, NULL);
    assert_true(ev_a.n_heartbeats >= 5);
    assert_true(ev_b.n_heartbeats >= 5);
    assert_true(ev_a.n_filled >= 5);
    assert_true(ev_a.n_linked >= 1);
    ms_mesh_stats_t st;
    ms_mesh_stats(a, &st);
    assert_true(st.n_heartbeats_in >= 5);
    assert_int_equal(st.n_malformed, 0);
    assert_int_equal(st.n_rejected, 0);
    //  a message that is not mesh business reaches on_message
    ms_wire_envelope_t env = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_VECTOR_DIGEST};
    memset(env.vector_digest.digest, 7, 32);
    assert_int_equal(ms_mesh_send(a, id_b, &env), MS_OK);
    assert_int_equal(ms_mesh_send_active(b, &env), 1);
    s_pump(meshes, 2, 100, NULL, NULL);
    assert_int_equal(ev_b.n_messages, 1);
    assert_int_equal(ev_a.n_messages, 1);
    uint8_t unknown[32];
    s_id(unknown, 0x77);
    assert_int_equal(ms_mesh_send(a, unknown, &env), MS_ERR_NOTFOUND);
    uint8_t pick[32];
    assert_int_equal(ms_mesh_random_peer(a, pick), MS_OK);
    assert_memory_equal(pick, id_b, 32);
    //  peers JSON
    json_t *list = ms_mesh_peers_json(a);
    assert_non_null(list);
    assert_int_equal(json_array_size(list), 1);
    json_t *e = s_entry(list, 0x20);
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "state")),
                        "alive");
    assert_true(json_is_true(json_object_get(e, "linked")));
    assert_true(json_is_true(json_object_get(e, "static")));
    assert_int_equal(json_integer_value(json_object_get(e, "incarnation")),
                     1000 + 0x20);
    assert_int_equal(json_integer_value(json_object_get(e, "n_workers")), 2);
    assert_int_equal(json_integer_value(json_object_get(e, "protocol")),
                     MS_PROTOCOL_VERSION);
    assert_string_equal(json_string_value(json_object_get(e, "operator")),
                        "lab");
    assert_string_equal(json_string_value(json_object_get(e, "direction")),
                        "out");
    assert_true(json_is_integer(json_object_get(e, "rtt_ms")));
    json_decref(list);
    list = ms_mesh_peers_json(b);
    e = s_entry(list, 0x10);
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "direction")),
                        "in");
    //  b learned where to dial a from its HELLO (address + mesh port)
    char expect[64];
    snprintf(expect, sizeof expect, "tcp://127.0.0.1:%d", ms_mesh_port(a));
    assert_string_equal(json_string_value(json_object_get(e, "endpoint")),
                        expect);
    json_decref(list);
    //  right after a tick, the next deadline is ahead (no busy loop) and
    //  no later than the next heartbeat
    int64_t now = ms_mesh_now();
    ms_mesh_tick(a, now);
    ms_mesh_tick(b, now);
    assert_true(ms_mesh_next_deadline(a) > now);
    assert_true(ms_mesh_next_deadline(b) > now);
    assert_true(ms_mesh_next_deadline(a) <= now + HB_MS);
    ms_mesh_destroy(&a);
    ms_mesh_destroy(&b);
    ms_mesh_destroy(&b);
    assert_null(b);
}

//  --------------------------------------------------------------------------
//  Three meshes that all list each other as static peers end with one
//  link per pair: the one the lower id dialed

static void
test_one_link_per_pair(void **state)
{
    (void) state;
    s_events_t ev[3] = {{0}};
    //  open all three, then give each the other two as static peers
    ms_mesh_t *meshes[3];
    for (int i = 0; i < 3; i++)
        meshes[i] =
            s_open((uint8_t) (0x10 * (i + 1)), s_pool_lab, 0, NULL, 0, &ev[i]);
    ms_diag_t diag;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            char spec[200];
            s_spec(spec, sizeof spec, (uint8_t) (0x10 * (j + 1)),
                   ms_mesh_port(meshes[j]), true);
            //  j == i: our own id is ignored
            assert_int_equal(ms_mesh_add_peer(meshes[i], spec, &diag), MS_OK);
        }
    assert_int_equal(ms_mesh_add_peer(meshes[0], "tcp://x", &diag),
                     MS_ERR_INVALID);
    assert_true(s_pump(meshes, 3, 3000, s_all_linked, NULL));
    s_pump(meshes, 3, 5 * HB_MS, NULL, NULL); // let duplicates close
    for (int i = 0; i < 3; i++) {
        json_t *list = ms_mesh_peers_json(meshes[i]);
        assert_int_equal(json_array_size(list), 2);
        for (int j = 0; j < 3; j++) {
            if (i == j)
                continue;
            json_t *e = s_entry(list, (uint8_t) (0x10 * (j + 1)));
            assert_non_null(e);
            //  the lower id (i < j) dialed: its side is "out"
            assert_string_equal(
                json_string_value(json_object_get(e, "direction")),
                i < j ? "out" : "in");
            assert_true(json_is_true(json_object_get(e, "active")));
        }
        json_decref(list);
    }
    //  and the links stay up
    s_pump(meshes, 3, 10 * HB_MS, NULL, NULL);
    assert_true(s_all_linked(meshes, 3, NULL));
    for (int i = 0; i < 3; i++)
        ms_mesh_destroy(&meshes[i]);
}

//  --------------------------------------------------------------------------
//  A and C only know B (static): B's member list (view JOIN answer) makes
//  A and C link too, and to each other once only

static void
test_full_mesh_through_one_peer(void **state)
{
    (void) state;
    s_events_t ev[3] = {{0}};
    ms_mesh_t *b = s_open(0x20, s_pool_lab, 0, NULL, 0, &ev[1]);
    char spec[200];
    s_spec(spec, sizeof spec, 0x20, ms_mesh_port(b), true);
    const char *peers[] = {spec};
    ms_mesh_t *a = s_open(0x10, s_pool_lab, 0, peers, 1, &ev[0]);
    ms_mesh_t *c = s_open(0x30, s_pool_lab, 0, peers, 1, &ev[2]);
    ms_mesh_t *meshes[] = {a, b, c};
    assert_true(s_pump(meshes, 3, 3000, s_all_linked, NULL));
    s_pump(meshes, 3, 5 * HB_MS, NULL, NULL);
    json_t *list = ms_mesh_peers_json(a);
    json_t *e = s_entry(list, 0x30);
    assert_non_null(e);
    assert_false(json_is_true(json_object_get(e, "static")));
    assert_string_equal(json_string_value(json_object_get(e, "direction")),
                        "out"); // a is lower: its dial is the one kept
    json_decref(list);
    list = ms_mesh_peers_json(c);
    e = s_entry(list, 0x10);
    assert_non_null(e);
    assert_string_equal(json_string_value(json_object_get(e, "direction")),
                        "in");
    json_decref(list);
    for (int i = 0; i < 3; i++)
        ms_mesh_destroy(&meshes[i]);
}

//  --------------------------------------------------------------------------
//  Whether the meshes' active, linked edges join them all (undirected)

static bool
s_active_connected(ms_mesh_t **meshes, int n, int *max_active)
{
    bool adj[N_HYPARVIEW][N_HYPARVIEW] = {{false}};
    *max_active = 0;
    for (int i = 0; i < n; i++) {
        json_t *list = ms_mesh_peers_json(meshes[i]);
        int n_active = 0;
        for (int j = 0; j < n; j++) {
            if (i == j)
                continue;
            json_t *e = s_entry(list, (uint8_t) (j + 1));
            if (e && json_is_true(json_object_get(e, "active")) &&
                json_is_true(json_object_get(e, "linked"))) {
                adj[i][j] = adj[j][i] = true;
                n_active++;
            }
        }
        if (n_active > *max_active)
            *max_active = n_active;
        json_decref(list);
    }
    bool seen[N_HYPARVIEW] = {true};
    int stack[N_HYPARVIEW], top = 0, count = 0;
    stack[top++] = 0;
    while (top > 0) {
        int u = stack[--top];
        count++;
        for (int v = 0; v < n; v++)
            if (adj[u][v] && !seen[v]) {
                seen[v] = true;
                stack[top++] = v;
            }
    }
    return count == n;
}

//  --------------------------------------------------------------------------
//  24 meshes that only know the first one (static): beyond 16 members the
//  view runs HyParView over the wire (JOIN, FORWARD_JOIN, NEIGHBOR,
//  DISCONNECT, SHUFFLE): active views stay at most 8 + log2(24) = 13 and
//  the overlay joins everyone

static void
test_hyparview_over_the_wire(void **state)
{
    (void) state;
    s_events_t ev[N_HYPARVIEW];
    memset(ev, 0, sizeof ev);
    ms_mesh_t *meshes[N_HYPARVIEW];
    meshes[0] = s_open(1, s_pool_lab, 0, NULL, 0, &ev[0]);
    char spec[200];
    s_spec(spec, sizeof spec, 1, ms_mesh_port(meshes[0]), true);
    const char *peers[] = {spec};
    for (int i = 1; i < N_HYPARVIEW; i++)
        meshes[i] = s_open((uint8_t) (i + 1), s_pool_lab, 0, peers, 1, &ev[i]);
    s_pump(meshes, N_HYPARVIEW, 4000, NULL, NULL);
    int max_active = 0;
    bool connected = s_active_connected(meshes, N_HYPARVIEW, &max_active);
    //  On a loaded machine a view may be caught over its size while a
    //  NEIGHBOR or JOIN is being answered: give it up to 3 s more to settle
    //  (the bound must hold once the overlay is quiet).
    for (int extra = 0; extra < 6 && (!connected || max_active > 13); extra++) {
        s_pump(meshes, N_HYPARVIEW, 500, NULL, NULL);
        connected = s_active_connected(meshes, N_HYPARVIEW, &max_active);
    }
    assert_true(connected);
    assert_true(max_active <= 13);
    assert_true(max_active >= 2);
    int64_t now = ms_mesh_now();
    for (int i = 0; i < N_HYPARVIEW; i++) {
        ms_mesh_tick(meshes[i], now);
        assert_true(ms_mesh_next_deadline(meshes[i]) > now);
    }
    for (int i = 0; i < N_HYPARVIEW; i++) {
        ms_mesh_stats_t st;
        ms_mesh_stats(meshes[i], &st);
        assert_int_equal(st.n_malformed, 0); // (refusals may come from
        ms_mesh_destroy(&meshes[i]);         // redials to freed ports)
    }
}

//  --------------------------------------------------------------------------
//  A peer destroyed goes suspect then dead; restarted, alive again

static bool
s_b_dead(ms_mesh_t **meshes, int n, void *arg)
{
    (void) n;
    uint8_t id[32];
    s_id(id, *(uint8_t *) arg);
    return ms_mesh_peer_state(meshes[0], id, NULL) == MS_PEER_DEAD;
}

//  --------------------------------------------------------------------------
//  Suspect / dead / alive again

static void
test_suspect_dead_alive_again(void **state)
{
    (void) state;
    s_events_t ev_a = {0}, ev_b = {0};
    ms_mesh_t *b = s_open(0x20, s_pool_lab, 0, NULL, 0, &ev_b);
    int port_b = ms_mesh_port(b);
    char spec[200];
    s_spec(spec, sizeof spec, 0x20, port_b, true);
    const char *peers[] = {spec};
    ms_mesh_t *a = s_open(0x30, s_pool_lab, 0, peers, 1, &ev_a); // a is higher
    ms_mesh_t *meshes[] = {a, b};
    assert_true(s_pump(meshes, 2, 3000, s_all_linked, NULL));
    ms_mesh_destroy(&meshes[1]);
    uint8_t id_b[32];
    s_id(id_b, 0x20);
    int64_t t0 = ms_mesh_now();
    //  suspect after about 3 beats, dead after about 8
    int n_suspect = ev_a.n_suspect;
    uint8_t first = 0x20;
    assert_true(s_pump(meshes, 2, 2000, s_b_dead, &first));
    int64_t took = ms_mesh_now() - t0;
    assert_true(took >= 8 * HB_MS - 10);
    assert_true(took < 8 * HB_MS + 500);
    assert_int_equal(ev_a.n_suspect, n_suspect + 1);
    bool linked = true;
    assert_int_equal(ms_mesh_peer_state(a, id_b, &linked), MS_PEER_DEAD);
    assert_false(linked);
    assert_int_equal(ms_mesh_n_alive(a), 0);
    uint8_t pick[32];
    assert_int_equal(ms_mesh_random_peer(a, pick), MS_ERR_NOTFOUND);
    //  restart b on the same port: a redials (static peer) and b is alive
    meshes[1] = s_open(0x20, s_pool_lab, port_b, NULL, 0, &ev_b);
    assert_true(s_pump(meshes, 2, 3000, s_all_linked, NULL));
    assert_int_equal(ms_mesh_peer_state(a, id_b, &linked), MS_PEER_ALIVE);
    assert_true(linked);
    s_pump(meshes, 2, 10 * HB_MS, NULL, NULL);
    assert_true(s_all_linked(meshes, 2, NULL));
    ms_mesh_destroy(&meshes[0]);
    ms_mesh_destroy(&meshes[1]);
}

//  --------------------------------------------------------------------------
//  Another pool's node is refused (counted), nothing links

static void
test_wrong_pool_refused(void **state)
{
    (void) state;
    s_events_t ev_a = {0}, ev_c = {0};
    ms_mesh_t *a = s_open(0x40, s_pool_lab, 0, NULL, 0, &ev_a);
    char spec[200];
    s_spec(spec, sizeof spec, 0x40, ms_mesh_port(a), true);
    const char *peers[] = {spec};
    ms_mesh_t *c = s_open(0x10, s_pool_other, 0, peers, 1, &ev_c);
    ms_mesh_t *meshes[] = {a, c};
    s_pump(meshes, 2, 600, NULL, NULL);
    ms_mesh_stats_t st;
    ms_mesh_stats(a, &st);
    assert_true(st.n_rejected >= 1);
    assert_int_equal(ms_mesh_n_alive(a), 0);
    assert_int_equal(ms_mesh_n_alive(c), 0);
    assert_int_equal(ev_a.n_linked, 0);
    assert_int_equal(ev_c.n_linked, 0);
    json_t *list = ms_mesh_peers_json(a);
    assert_int_equal(json_array_size(list), 0);
    json_decref(list);
    ms_mesh_destroy(&a);
    ms_mesh_destroy(&c);
}

//  --------------------------------------------------------------------------
//  Malformed frames from a raw DEALER are counted and ignored; a
//  well-formed frame before HELLO is dropped; the mesh keeps working

static void
test_malformed_frames_counted(void **state)
{
    (void) state;
    s_events_t ev_a = {0}, ev_b = {0};
    ms_mesh_t *a = s_open(0x10, s_pool_lab, 0, NULL, 0, &ev_a);
    char spec[200];
    s_spec(spec, sizeof spec, 0x10, ms_mesh_port(a), true);
    const char *peers[] = {spec};
    ms_mesh_t *b = s_open(0x20, s_pool_lab, 0, peers, 1, &ev_b);
    ms_mesh_t *meshes[] = {a, b};
    assert_true(s_pump(meshes, 2, 3000, s_all_linked, NULL));

    zsock_t *raw = zsock_new(ZMQ_DEALER);
    assert_non_null(raw);
    zsock_set_linger(raw, 0);
    assert_int_equal(zsock_connect(raw, "tcp://127.0.0.1:%d", ms_mesh_port(a)),
                     0);
    //  garbage, empty, a three-part message, a truncated HELLO
    zstr_send(raw, "this is not protobuf \xff\xfe");
    zsock_send(raw, "b", "", (size_t) 0);
    zstr_sendx(raw, "one", "two", "three", NULL);
    ms_wire_envelope_t hello = {.protocol = MS_PROTOCOL_VERSION,
                                .body = MS_WIRE_BODY_HELLO};
    s_id(hello.hello.node_id, 0x66);
    ms_beacon_open_pool_id(s_pool_lab, hello.hello.pool_id);
    hello.hello.protocol_min = hello.hello.protocol_max = 1;
    hello.hello.mesh_port = 1;
    hello.hello.operator_name = "x";
    uint8_t *buf = NULL;
    size_t n = 0;
    assert_int_equal(ms_wire_encode_envelope(&hello, &buf, &n), MS_OK);
    zsock_send(raw, "b", buf, n / 2);
    //  a well-formed HELLO whose node id is not the routing id: refused
    zsock_send(raw, "b", buf, n);
    free(buf);
    //  a well-formed heartbeat with no HELLO: dropped
    ms_wire_envelope_t hb = {.protocol = MS_PROTOCOL_VERSION,
                             .body = MS_WIRE_BODY_HEARTBEAT};
    hb.heartbeat.seq = 1;
    assert_int_equal(ms_wire_encode_envelope(&hb, &buf, &n), MS_OK);
    zsock_send(raw, "b", buf, n);
    free(buf);
    s_pump(meshes, 2, 300, NULL, NULL);
    ms_mesh_stats_t st;
    ms_mesh_stats(a, &st);
    assert_true(st.n_malformed >= 3);
    assert_true(st.n_rejected >= 1);
    assert_true(st.n_dropped >= 1);
    //  WHO_ARE_YOU is answered even before HELLO
    ms_wire_envelope_t who = {.protocol = MS_PROTOCOL_VERSION,
                              .body = MS_WIRE_BODY_WHO_ARE_YOU};
    assert_int_equal(ms_wire_encode_envelope(&who, &buf, &n), MS_OK);
    zsock_send(raw, "b", buf, n);
    free(buf);
    zsock_set_rcvtimeo(raw, 50);
    ms_wire_envelope_t *answer = NULL;
    for (int i = 0; i < 40 && !answer; i++) {
        s_pump(meshes, 2, 20, NULL, NULL);
        zframe_t *f = zframe_recv(raw);
        if (f) {
            assert_int_equal(ms_wire_decode_envelope(zframe_data(f),
                                                     zframe_size(f), &answer),
                             MS_OK);
            zframe_destroy(&f);
        }
    }
    assert_non_null(answer);
    assert_int_equal(answer->body, MS_WIRE_BODY_I_AM);
    uint8_t id_a[32];
    s_id(id_a, 0x10);
    assert_memory_equal(answer->i_am.node_id, id_a, 32);
    ms_wire_envelope_destroy(&answer);
    zsock_destroy(&raw);
    //  the real link is still up
    s_pump(meshes, 2, 5 * HB_MS, NULL, NULL);
    assert_true(s_all_linked(meshes, 2, NULL));
    ms_mesh_destroy(&a);
    ms_mesh_destroy(&b);
}

//  --------------------------------------------------------------------------
//  Open pool --peer without a node id: WHO_ARE_YOU, I_AM, then HELLO

static void
test_who_are_you(void **state)
{
    (void) state;
    s_events_t ev_a = {0}, ev_b = {0};
    ms_mesh_t *b = s_open(0x50, s_pool_lab, 0, NULL, 0, &ev_b);
    char spec[200];
    s_spec(spec, sizeof spec, 0x50, ms_mesh_port(b), false);
    const char *peers[] = {spec};
    ms_mesh_t *a = s_open(0x60, s_pool_lab, 0, peers, 1, &ev_a);
    ms_mesh_t *meshes[] = {a, b};
    assert_true(s_pump(meshes, 2, 3000, s_all_linked, NULL));
    json_t *list = ms_mesh_peers_json(a);
    assert_int_equal(json_array_size(list), 1);
    json_t *e = s_entry(list, 0x50);
    assert_non_null(e);
    assert_true(json_is_true(json_object_get(e, "static")));
    json_decref(list);
    ms_mesh_destroy(&a);
    ms_mesh_destroy(&b);
}

//  --------------------------------------------------------------------------
//  Bad options give one clear error

static void
test_bad_options(void **state)
{
    (void) state;
    ms_mesh_options_t opts;
    ms_mesh_options_defaults(&opts);
    opts.mesh_bind = "tcp://127.0.0.1:*";
    opts.beacon = false;
    const char *bad[] = {"abc@tcp://127.0.0.1:1"};
    opts.static_peers = bad;
    opts.n_static_peers = 1;
    ms_mesh_t *mesh = (ms_mesh_t *) 1;
    ms_diag_t diag;
    assert_int_equal(ms_mesh_open(&mesh, &opts, NULL, &diag), MS_ERR_INVALID);
    assert_null(mesh);
    assert_string_equal(diag.where, "--peer");
    const char *bad2[] = {"udp://x"};
    opts.static_peers = bad2;
    assert_int_equal(ms_mesh_open(&mesh, &opts, NULL, &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "tcp://HOST:PORT"));
    opts.n_static_peers = 0;
    opts.heartbeat_ms = 0;
    assert_int_equal(ms_mesh_open(&mesh, &opts, NULL, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "heartbeat_ms");
    opts.heartbeat_ms = 100;
    opts.suspect_after_ms = 500;
    opts.dead_after_ms = 400;
    assert_int_equal(ms_mesh_open(&mesh, &opts, NULL, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "dead_after_ms");
    opts.dead_after_ms = 0;
    opts.mesh_bind = "tcp://256.1.1.1:1";
    assert_int_equal(ms_mesh_open(&mesh, &opts, NULL, &diag), MS_ERR_IO);
    assert_string_equal(diag.where, "mesh_bind");
    assert_null(mesh);
}

//  --------------------------------------------------------------------------
//  Inside the private namespace: three beaconing meshes find each other

static int
s_netns_child(void)
{
    if (system("ip link set lo up") != 0 ||
        system("ip route add 255.255.255.255/32 dev lo src 127.0.0.1") != 0) {
        fprintf(stderr, "netns child: ip commands failed\n");
        return 77;
    }
    s_events_t ev[3] = {{0}};
    ms_mesh_t *meshes[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) {
        ms_mesh_options_t opts;
        ms_mesh_options_defaults(&opts);
        s_id(opts.node_id, (uint8_t) (0x10 * (i + 1)));
        ms_beacon_open_pool_id("lab", opts.pool_id);
        opts.mesh_bind = "tcp://127.0.0.1:*";
        opts.beacon = true;
        opts.interface = "*";
        opts.beacon_port = 5870;
        opts.beacon_interval_ms = 200;
        opts.heartbeat_ms = 100;
        ms_mesh_handlers_t h = {.arg = &ev[i], .on_peer = s_on_peer};
        ms_diag_t diag;
        if (ms_mesh_open(&meshes[i], &opts, &h, &diag) != MS_OK) {
            fprintf(stderr, "netns child: %s: %s\n", diag.where, diag.reason);
            return 1;
        }
    }
    int64_t t0 = ms_mesh_now();
    bool ok = s_pump(meshes, 3, 3000, s_all_linked, NULL);
    fprintf(stderr, "netns child: discovery %s in %lld ms\n",
            ok ? "complete" : "INCOMPLETE", (long long) (ms_mesh_now() - t0));
    ms_mesh_stats_t st;
    ms_mesh_stats(meshes[0], &st);
    if (st.n_beacons == 0)
        ok = false;
    for (int i = 0; i < 3; i++)
        ms_mesh_destroy(&meshes[i]);
    return ok ? 0 : 1;
}

//  --------------------------------------------------------------------------
//  One beaconing mesh for tests/integration/ms_netns_beacon_test.sh, run
//  by that script inside one of its network namespaces (never here):
//  MS_MESH_TEST_NODE=FIRST_BYTE MS_MESH_TEST_POOL=NAME
//  MS_MESH_TEST_EXPECT=N MS_MESH_TEST_IFACE=eth0|* [MS_MESH_TEST_HOLD_MS].
//  Prints "alive N after T ms, max M" (M: most peers alive at once) and
//  exits 0 once N peers were alive (within 5 s), after keeping the mesh
//  up HOLD_MS more so slower nodes finish too.

static int
s_netns_node(void)
{
    const char *iface = getenv("MS_MESH_TEST_IFACE");
    const char *pool = getenv("MS_MESH_TEST_POOL");
    const char *expect_s = getenv("MS_MESH_TEST_EXPECT");
    const char *hold_s = getenv("MS_MESH_TEST_HOLD_MS");
    if (!iface || !pool || !expect_s) {
        fprintf(stderr, "node: MS_MESH_TEST_IFACE, _POOL, _EXPECT needed\n");
        return 2;
    }
    int expect = atoi(expect_s);
    int hold_ms = hold_s ? atoi(hold_s) : 1500;
    s_events_t ev = {0};
    ms_mesh_options_t opts;
    ms_mesh_options_defaults(&opts);
    s_id(opts.node_id, (uint8_t) atoi(getenv("MS_MESH_TEST_NODE")));
    ms_beacon_open_pool_id(pool, opts.pool_id);
    opts.mesh_bind = "tcp://0.0.0.0:5871";
    opts.interface = iface;
    opts.beacon_interval_ms = 250;
    opts.heartbeat_ms = 100;
    ms_mesh_handlers_t h = {.arg = &ev, .on_peer = s_on_peer};
    ms_mesh_t *mesh = NULL;
    ms_diag_t diag;
    if (ms_mesh_open(&mesh, &opts, &h, &diag) != MS_OK) {
        fprintf(stderr, "node: %s: %s\n", diag.where, diag.reason);
        return 1;
    }
    int64_t t0 = ms_mesh_now();
    ms_mesh_t *meshes[] = {mesh};
    int64_t reached = -1;
    int max_alive = 0;
    while (ms_mesh_now() - t0 < 5000 + hold_ms) {
        s_pump(meshes, 1, 50, NULL, NULL);
        if (ms_mesh_n_alive(mesh) > max_alive)
            max_alive = ms_mesh_n_alive(mesh);
        if (reached < 0 && ms_mesh_n_alive(mesh) >= expect)
            reached = ms_mesh_now() - t0;
        if (reached < 0 && ms_mesh_now() - t0 > 5000)
            break;
        if (reached >= 0 && ms_mesh_now() - t0 > reached + hold_ms)
            break;
    }
    //  peers that finish first leave during the hold: report the count
    //  reached (or the last count when it never was)
    int n_alive = reached >= 0 ? expect : ms_mesh_n_alive(mesh);
    printf("alive %d after %lld ms, max %d\n", n_alive, (long long) reached,
           max_alive);
    ms_mesh_destroy(&mesh);
    return reached >= 0 ? 0 : 1;
}

//  --------------------------------------------------------------------------
//  Beacon discovery, run only inside `unshare -rn` (skipped otherwise)

static void
test_beacon_discovery_in_netns(void **state)
{
    (void) state;
    if (system("unshare -rn true >/dev/null 2>&1") != 0) {
        skip(); // no user namespaces here: never beacon in our namespace
        return;
    }
    char exe[4096];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    assert_true(len > 0);
    exe[len] = '\0';
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("MS_MESH_TEST_NETNS_CHILD", "1", 1);
        execlp("unshare", "unshare", "-rn", exe, (char *) NULL);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 77) {
        skip();
        return;
    }
    assert_int_equal(WEXITSTATUS(status), 0);
}

int
main(void)
{
    if (getenv("MS_MESH_TEST_NETNS_CHILD"))
        return s_netns_child();
    if (getenv("MS_MESH_TEST_NODE"))
        return s_netns_node();
    snprintf(s_pool_lab, sizeof s_pool_lab, "lab-%d", (int) getpid());
    snprintf(s_pool_other, sizeof s_pool_other, "other-%d", (int) getpid());
    zsys_init();
    zsys_set_logstream(NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_hello_and_heartbeats),
        cmocka_unit_test(test_one_link_per_pair),
        cmocka_unit_test(test_full_mesh_through_one_peer),
        cmocka_unit_test(test_hyparview_over_the_wire),
        cmocka_unit_test(test_suspect_dead_alive_again),
        cmocka_unit_test(test_wrong_pool_refused),
        cmocka_unit_test(test_malformed_frames_counted),
        cmocka_unit_test(test_who_are_you),
        cmocka_unit_test(test_beacon_discovery_in_netns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
