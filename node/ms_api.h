/*  =========================================================================
    ms_api - the node's HTTP/JSON API (libmicrohttpd), minimal first cut

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "HTTP API and dashboard". Routes served now:

      GET  /api/v1/status                  node id, version, uptime, workers,
                                           tasks by state, store size,
                                           platform
      GET  /api/v1/sweeps                  every sweep with its counts
      POST /api/v1/sweeps                  submit a spec (YAML or JSON body,
                                           at most MS_API_MAX_BODY bytes:
                                           else 413); 201 {"sweep_id",
                                           "existed","n_tasks","warnings"},
                                           400 {"error":"where: reason"}
      GET  /api/v1/sweeps/{id}             spec summary, state, counts by
                                           state, throughput ({id}: 64 hex
                                           or a unique prefix of >= 12)
      GET  /api/v1/sweeps/{id}/results     ?format=json|csv&limit=N
                                           &after=CURSOR; JSON pages carry
                                           "next" (null on the last page);
                                           CSV gives every row
      GET  /api/v1/sweeps/{id}/analysis    ms_analysis_compute over the rows
                                           (?verified=1: the verified rows
                                           only, "verified_only": true)
      POST /api/v1/sweeps/{id}/control     {"action":"cancel|pause|resume|
                                           priority","priority":N}; 200
                                           {"sweep_id","action","state",
                                           "priority"}; 400 bad body, 404
                                           unknown sweep, 409 not allowed
                                           in the sweep's state
      POST /api/v1/authority               body: an authority item file
                                           (`meshsweep pool revoke --out`)
                                           or a certificate bundle;
                                           checked, kept, applied and
                                           pushed to the pool: 200
                                           {"digest","type","new"}; 400 a
                                           malformed or forged item (its
                                           reason; counted)
      GET  /api/v1/peers                   the pool as this node sees it:
                                           [{node_id, state, ...}]
      GET  /api/v1/logs/{node}             this node's view of that node's
                                           log: {"node", "cut": [{
                                           "incarnation" (16 hex),
                                           "max_seq"}]} (highest contiguous
                                           seq held per incarnation; the cut
                                           of `meshsweep pool clear --node`)
      GET  /api/v1/events                  server-sent events (progress,
                                           result, verdict, peer, sweep;
                                           ?sweep=ID, Last-Event-ID or
                                           ?last_event_id=N resumes):
                                           docs/EVENTS.md; 503 beyond
                                           the open streams allowed
      GET  /metrics                        Prometheus text format
      GET  /                               the dashboard (index.html of
                                           dashboard_dir; without one, a
                                           small page saying so)
      GET  /dashboard/{path}               its files (ms_dashboard: inside
                                           the directory, regular files
                                           only; ETag, 304, no-cache)

    Unknown paths answer 404 and known paths with another method 405, both
    with a JSON {"error"} body. A bad request is answered and counted
    (meshsweep_rejected_requests_total); it never stops the node.

    Threads: libmicrohttpd runs one thread per connection. Handlers read
    the store through its thread-safe read functions (their own read
    transactions) and never write to it: a submission goes to the node as
    a command through the submit hook, which the node loop executes.
*/
#ifndef MS_API_H
#define MS_API_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "ms_err.h"
#include "ms_events.h"
#include "ms_hash.h"
#include "ms_store.h"

typedef struct ms_api ms_api_t;

#define MS_API_MAX_BODY (1u << 20) // largest POST body accepted (1 MiB)

//  What the API needs from its node. Every hook is called from HTTP
//  threads and must be thread-safe.
typedef struct {
    ms_store_t *store; // read with read transactions (borrowed)
    void *arg;         // passed to the hooks
    //  Submit a spec; as ms_node_submit with local_files false. files is
    //  the "files" query argument of the POST (the uploaded files of a
    //  file dataset, "ROLE:HEX,...": ms_node_submit_uploaded) or NULL.
    //  On MS_OK *summary_json is the malloc'd summary object text.
    int (*submit)(void *arg, const char *text, size_t n, const char *files,
                  char **summary_json, ms_diag_t *diag);
    //  Blob uploads, PUT /api/v1/blobs/HEX (a client sending its dataset
    //  files before the spec). The HTTP thread streams the body into a
    //  new file in upload_dir (on the blob store's file system), refusing
    //  bodies over max_upload_bytes with 413, then calls blob_put, which
    //  adopts tmp_path (consumed either way) as the blob of hash: MS_OK;
    //  MS_ERR_INVALID when the bytes do not hash to hash (diag);
    //  MS_ERR_STORE_FULL; MS_ERR_IO. upload_dir or blob_put NULL: the
    //  route answers 501.
    const char *upload_dir;
    uint64_t max_upload_bytes;
    int (*blob_put)(void *arg, const ms_hash_t *hash, const char *tmp_path,
                    ms_diag_t *diag);
    //  A new JSON object describing the node for /status and /metrics:
    //  node_id, version, uptime_seconds, workers, workers_busy,
    //  tasks_trained_total, training_seconds_total, worker_crashes_total,
    //  store_bytes, platform. Caller (the API) releases it.
    //  status also carries "peers" ({state: count}), "pool_id" (hex or
    //  null), "pool_counters" ({name: number}, printed on /metrics under
    //  the names docs/METRICS.md lists), "verification" ({"nodes":
    //  [{node, counted, strikes, quarantined}], ...}) and "metrics" (the
    //  labelled figures: {"gossip": {"sent"|"received": {TYPE:
    //  {"messages", "bytes"}}}, "rejected": {REASON: n}, "peer_states":
    //  {STATE: n}, "reevaluations": {OUTCOME: n}, "tasks_completed_total",
    //  "tasks_per_second", "tasks_per_second_window_seconds"}).
    json_t *(*status)(void *arg);
    //  Apply a sweep life-cycle action ("cancel", "pause", "resume",
    //  "priority" with PRIORITY); as ms_node_control. May be NULL (then
    //  the route answers 501).
    int (*control)(void *arg, const ms_hash_t *sweep_id, const char *action,
                   int32_t priority, ms_diag_t *diag);
    //  A new JSON array of the peers (ms_node_peers_json). May be NULL
    //  (then /peers is an empty array).
    json_t *(*peers)(void *arg);
    //  Tasks of a sweep that peers run now (live leases in the node's
    //  view; pending in this node's store), shown as running. May be
    //  NULL (none).
    int64_t (*running_elsewhere)(void *arg, const uint8_t *sweep_id);
    //  Take an authority item or certificate bundle (its text, n bytes):
    //  MS_OK with *summary_json the malloc'd {"digest","type","new"}
    //  text; MS_ERR_INVALID / MS_ERR_PROTOCOL (malformed),
    //  MS_ERR_UNTRUSTED (another pool), MS_ERR_BADSIG (forged),
    //  MS_ERR_UNSUPPORTED (no authority) with diag. May be NULL (then the
    //  route answers 501).
    int (*authority)(void *arg, const char *text, size_t n, char **summary_json,
                     ms_diag_t *diag);
    //  The dashboard's assets directory (docs/DASHBOARD.md; borrowed,
    //  must outlive the API), served at / and /dashboard/ (GET and HEAD).
    //  NULL = no dashboard: / answers a small page saying so.
    const char *dashboard_dir;
    //  The node's events, streamed by GET /api/v1/events (borrowed; the
    //  API shuts it down before it stops). NULL: the route answers 501.
    ms_events_t *events;
} ms_api_hooks_t;

//  Start serving on bind ("ADDR:PORT"; ADDR an IPv4 address or a host
//  name; PORT 0 picks a free port). hooks is copied. Caller owns *out;
//  free it with ms_api_destroy(). Returns MS_OK; MS_ERR_INVALID (bind text
//  malformed: diag); MS_ERR_IO (address in use, cannot listen: diag);
//  MS_ERR_NOMEM.
int ms_api_open(ms_api_t **out, const char *bind, const ms_api_hooks_t *hooks,
                ms_diag_t *diag);

//  Stop serving (waits for the connection threads) and free; NULL-safe;
//  nulls *self_p.
void ms_api_destroy(ms_api_t **self_p);

//  "ADDR:PORT" actually bound (the real port when 0 was asked). Borrowed.
const char *ms_api_address(const ms_api_t *self);

//  Requests served, and requests refused with a 4xx status, so far.
uint64_t ms_api_requests(const ms_api_t *self);
uint64_t ms_api_rejected(const ms_api_t *self);

#endif
