/*  =========================================================================
    ms_api - the node's HTTP/JSON API (libmicrohttpd)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "HTTP API and dashboard". Routes served now:

      GET  /api/v1/status                  node id, version, uptime, workers,
                                           tasks by state, store size,
                                           platform
      GET  /api/v1/sweeps                  every sweep with its counts
      POST /api/v1/sweeps                  submit a spec (YAML or JSON body,
                                           at most MS_API_MAX_BODY bytes:
                                           else 413); ?files=ROLE:HEX,...
                                           ?priority=N; 201 {"sweep_id",
                                           "existed","n_tasks","warnings"},
                                           400 {"error":"where: reason"}
      GET  /api/v1/sweeps/{id}             spec summary, state, counts by
                                           state, throughput ({id}: 64 hex
                                           or a unique prefix of >= 12)
      GET  /api/v1/sweeps/{id}/results     ?format=json|csv&limit=N
                                           &after=CURSOR; JSON pages carry
                                           "next" (null on the last page);
                                           CSV gives every row. Filters
                                           (ms_api_filter_*): status=,
                                           verdict=, node=HEX-PREFIX,
                                           config.KEY=VALUE; a filtered
                                           page still has up to limit rows
                                           and a "next" that goes on after
                                           the last task it looked at
                                           (JSON) &fields=a,b,c: only those
                                           top-level members of each row
                                           (config stays an object; an
                                           unknown name, or with CSV: 400)
      GET  /api/v1/sweeps/{id}/analysis    ms_analysis_compute over the rows
                                           (?verified=1: the verified rows
                                           only, "verified_only": true); cached
                                           per (sweep, verified) until the
                                           sweep's store generation moves
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
      GET  /api/v1/tasks/{id}              one task (64 hex or a unique
                                           prefix of >= 12): sweep, index,
                                           config, state, attempts,
                                           holder, claims (the store's),
                                           leases (the node's view, slot
                                           by slot), verdict,
                                           verdict_revision and its result
                                           rows
      GET  /api/v1/tasks/{id}/weights      its kept network (?format=native,
                                           the blob; or onnx, ms_onnx.h);
                                           404 naming why when none is
                                           kept or held here
      GET  /api/v1/datasets                the dataset records held: hash,
                                           name, kind (builtin|files),
                                           files (role, size, hash,
                                           present here), present, sweeps
      GET  /?token=TOKEN                   login: sets the HttpOnly,
                                           SameSite=Strict cookie
                                           meshsweep_token, 302 to /
      GET  /metrics                        Prometheus text format
      GET  /                               the dashboard (index.html of
                                           dashboard_dir; without one, a
                                           small page saying so)
      GET  /dashboard/{path}               its files (ms_dashboard: inside
                                           the directory, regular files
                                           only; ETag, 304, no-cache)

    /api/v1/logs/{node} also takes a unique prefix of >= 12 hex. Unknown
    query parameters answer 400 naming the parameter. Beyond loopback
    (hooks.token set) every request needs the token, as "Authorization:
    Bearer TOKEN" or the meshsweep_token cookie; else 401 with a JSON
    error and "WWW-Authenticate: Bearer" (counted as rejected). Tokens
    are compared in constant time. /api/v1/peers gives each peer's
    incarnation as 16 hex digits (a string: JSON numbers lose bits above
    2^53). docs/API.md documents every route.

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

#include <stdbool.h>
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
    //  [{node, counted, strikes, forgiven, strikes_left, quarantined}],
    //  ...}) and "metrics" (the
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
    //  The bearer token every request must carry (copied; at most
    //  MS_API_TOKEN_MAX characters). NULL or "": no token is asked. The
    //  node sets it only when the API listens beyond loopback
    //  (ms_api_bind_loopback false).
    const char *token;
    //  The leases of a task's slots in the node's view, a new JSON array
    //  of {"slot", "holder" (hex), "epoch", "live"} (empty when none is
    //  known). May be NULL (GET /tasks/{id} then says "leases": null).
    json_t *(*task_leases)(void *arg, const ms_hash_t *task_id);
    //  Which blobs this node holds: for a JSON array of hash hex strings
    //  (borrowed), a new JSON object {hex: true|false}. May be NULL
    //  (GET /datasets then says "present": null).
    json_t *(*blobs_held)(void *arg, const json_t *hashes);
    //  The file of a blob this node holds (GET /tasks/{id}/weights reads
    //  the kept weights from it): a malloc'd path the caller frees, or
    //  NULL when the blob is not held. The file is immutable (named by
    //  its hash) while held. May be NULL (then the route answers 501).
    char *(*blob_path)(void *arg, const ms_hash_t *hash);
} ms_api_hooks_t;

#define MS_API_TOKEN_MAX 256 // longest bearer token accepted (characters)

//  Start serving on bind ("ADDR:PORT"; ADDR an IPv4 address or a host
//  name; PORT 0 picks a free port). hooks is copied. Caller owns *out;
//  free it with ms_api_destroy(). Returns MS_OK; MS_ERR_INVALID (bind text
//  malformed: diag); MS_ERR_IO (address in use, cannot listen: diag);
//  MS_ERR_NOMEM.
int ms_api_open(ms_api_t **out, const char *bind, const ms_api_hooks_t *hooks,
                ms_diag_t *diag);

//  Check bind ("ADDR:PORT", as ms_api_open takes it) without listening:
//  the form, the port's range and that ADDR resolves to an IPv4 address.
//  Returns MS_OK; MS_ERR_INVALID with diag (where "api").
int ms_api_bind_check(const char *bind, ms_diag_t *diag);

//  Stop serving (waits for the connection threads) and free; NULL-safe;
//  nulls *self_p.
void ms_api_destroy(ms_api_t **self_p);

//  "ADDR:PORT" actually bound (the real port when 0 was asked). Borrowed.
const char *ms_api_address(const ms_api_t *self);

//  Requests served, and requests refused with a 4xx status, so far.
uint64_t ms_api_requests(const ms_api_t *self);
uint64_t ms_api_rejected(const ms_api_t *self);

//  True when BIND ("ADDR:PORT", as ms_api_open takes it) resolves to a
//  loopback address (127.0.0.0/8): the API then asks for no token. False
//  for any other address (0.0.0.0 included) and for malformed text.
bool ms_api_bind_loopback(const char *bind);

//  Read the bearer token from the file at PATH (its first line, blanks
//  around it trimmed; 16..MS_API_TOKEN_MAX characters out of letters,
//  digits and -._~+/=) into token. When PATH does not exist, create it
//  (mode 0600, O_EXCL) with 32 random bytes (libsodium) written as 64
//  hex characters and a newline, and set *created (may be NULL) true.
//  Returns MS_OK; MS_ERR_INVALID (a token too short or long, or with
//  other characters, or a file others may read: chmod 600; diag);
//  MS_ERR_IO (cannot read or create it: diag).
int ms_api_token_open(const char *path, char token[MS_API_TOKEN_MAX + 1],
                      bool *created, ms_diag_t *diag);

//  True when a request carries TOKEN: AUTHORIZATION (the header's value,
//  or NULL) is "Bearer TOKEN" (scheme in any case), or COOKIE (the
//  meshsweep_token cookie's value, or NULL) is TOKEN. Compares in
//  constant time (sodium_memcmp). An empty TOKEN matches nothing.
bool ms_api_token_matches(const char *token, const char *authorization,
                          const char *cookie);

//  Filters of GET /api/v1/sweeps/{id}/results: rows whose status, verdict,
//  node id (by prefix) and config values are all those asked.
typedef struct ms_api_filter ms_api_filter_t;

//  A new filter that matches every row. Caller owns it; free it with
//  ms_api_filter_destroy(). NULL only when memory runs out.
ms_api_filter_t *ms_api_filter_new(void);

//  Free a filter; NULL-safe; nulls *self_p.
void ms_api_filter_destroy(ms_api_filter_t **self_p);

//  Add one query parameter to the filter (every condition must hold):
//  status=ok|diverged|failed, verdict=pending|accepted|verified|disputed|
//  failed, node=HEX-PREFIX (1..64 hex, any case), config.KEY=VALUE (KEY a
//  config key; VALUE compared with the row's config value: numerically
//  for a number, exactly for a string, true/false for a boolean, null,
//  a list as JSON "[100,10]" or as in CSV "100;10"). Returns MS_OK;
//  MS_ERR_NOTFOUND when NAME is no filter (the caller decides: another
//  parameter, or unknown); MS_ERR_INVALID for a value out of its set
//  (diag: the parameter and the values allowed); MS_ERR_RANGE beyond 64
//  conditions; MS_ERR_NOMEM.
int ms_api_filter_add(ms_api_filter_t *self, const char *name,
                      const char *value, ms_diag_t *diag);

//  Conditions held.
size_t ms_api_filter_size(const ms_api_filter_t *self);

//  True when ROW (a result row object) meets every condition.
bool ms_api_filter_match(const ms_api_filter_t *self, const json_t *row);

#endif
