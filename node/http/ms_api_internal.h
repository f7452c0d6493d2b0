/*  =========================================================================
    ms_api_internal - what the files of the HTTP API share: the API's
    state, one request's state, and the reply helpers and route handlers
    that ms_api's router calls

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Private to node/http/ms_api*.c (STYLE.md: a module's helpers go in
    ms_<module>_internal.h and are never included from another module).
    ms_api.c: replies, tokens, query arguments, the router and the
    libmicrohttpd handler; ms_api_filter.c: result filters;
    ms_api_sweeps.c, ms_api_results.c, ms_api_metrics.c, ms_api_pool.c:
    the routes. Handlers run on libmicrohttpd's threads and read the node
    only through self->hooks.
*/
#ifndef MS_API_INTERNAL_H
#define MS_API_INTERNAL_H

#include "ms_api.h"
#include "ms_err.h"
#include "ms_hash.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define MS_API_ANALYSIS_CACHE 16  // analyses kept (sweep, verified, query)
#define MS_API_ANALYSIS_QUERY 136 // "x|metric" of a cached analysis

//  One cached analysis: the answer's text, labelled with the sweep's
//  store generation when its rows were read (ms_store_sweep_generation).
typedef struct {
    uint8_t sweep_id[MS_HASH_BYTES];   // the sweep
    bool verified;                     // ?verified=1
    char query[MS_API_ANALYSIS_QUERY]; // ?x= and ?metric= as "X|METRIC"
    uint64_t generation;               // 0: empty slot
    uint64_t used;                     // last use (a tick of the cache)
    char *text;                        // the JSON answer, malloc'd
    size_t len;                        // its bytes
} ms_api_cached_t;

struct ms_api {
    ms_api_hooks_t hooks;             // the node's hooks (copy)
    struct MHD_Daemon *daemon;        // libmicrohttpd
    char address[128];                // "ADDR:PORT" bound
    atomic_uint_fast64_t n_requests;  // answered
    atomic_uint_fast64_t n_rejected;  // answered with 4xx/5xx
    char token[MS_API_TOKEN_MAX + 1]; // bearer token; "" = none asked
    pthread_mutex_t cache_mu;         // guards the analysis cache
    ms_api_cached_t cache[MS_API_ANALYSIS_CACHE]; // analyses (GET .../analysis)
    uint64_t cache_tick;                          // use counter (LRU)
};

//  One request in progress.
typedef struct {
    char *body;       // POST body so far (NUL-terminated)
    size_t len;       // bytes in body
    bool too_large;   // body went past MS_API_MAX_BODY (or the upload
                      // limit)
    bool upload;      // PUT /api/v1/blobs/HEX: the body goes to a file
    int fd;           // the upload's file, or -1
    char *tmp_path;   // its path (malloc'd), or NULL once handed over
    uint64_t n_up;    // bytes written to it
    bool write_error; // a write failed
    bool answered;    // refused at the first call (401): body dropped
} ms_api_request_t;

//  ==========================================================================
//  Replies and status codes (ms_api.c)

//  Queue a response without an Allow header (see ms_api.c's s_reply_allow).
enum MHD_Result ms_api_reply(ms_api_t *self, struct MHD_Connection *conn,
                             unsigned status, const char *type,
                             const char *body, size_t len);

//  Answer with a JSON value (taken).
enum MHD_Result ms_api_reply_json(ms_api_t *self, struct MHD_Connection *conn,
                                  unsigned status, json_t *value);

//  Answer {"error": "..."} with a printf-style message.
enum MHD_Result ms_api_reply_error(ms_api_t *self, struct MHD_Connection *conn,
                                   unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

//  Answer 405 {"error": "WHAT: method M not allowed (ALLOW)"} with the
//  route's methods in the Allow header.
enum MHD_Result ms_api_not_allowed(ms_api_t *self, struct MHD_Connection *conn,
                                   const char *what, const char *method,
                                   const char *allow);

//  Answer with a diag as the error.
enum MHD_Result ms_api_reply_diag(ms_api_t *self, struct MHD_Connection *conn,
                                  unsigned status, const ms_diag_t *diag,
                                  int rc);

//  HTTP status for a status code of a lookup or a submission.
unsigned ms_api_status_of(int rc);

//  True when NAME is a result filter (status, verdict, node, config.KEY).
bool ms_api_filter_name(const char *name);

//  ==========================================================================
//  Sweeps (ms_api_sweeps.c)

//  GET /api/v1/sweeps
enum MHD_Result ms_api_get_sweeps(ms_api_t *self, struct MHD_Connection *conn);

//  POST /api/v1/sweeps
enum MHD_Result ms_api_post_sweeps(ms_api_t *self, struct MHD_Connection *conn,
                                   ms_api_request_t *req);

//  GET /api/v1/sweeps/{id}
enum MHD_Result ms_api_get_sweep(ms_api_t *self, struct MHD_Connection *conn,
                                 const ms_hash_t *id);

//  POST /api/v1/sweeps/{id}/control
enum MHD_Result ms_api_post_control(ms_api_t *self, struct MHD_Connection *conn,
                                    ms_api_request_t *req, const ms_hash_t *id);

//  ==========================================================================
//  Results, analyses and tasks (ms_api_results.c)

//  GET /api/v1/sweeps/{id}/results (JSON or CSV, filtered, paged).
enum MHD_Result ms_api_get_results(ms_api_t *self, struct MHD_Connection *conn,
                                   const ms_hash_t *id);

//  GET /api/v1/sweeps/{id}/analysis
enum MHD_Result ms_api_get_analysis(ms_api_t *self, struct MHD_Connection *conn,
                                    const ms_hash_t *id);

//  32 id bytes as a new JSON hex string, or null when all zero.
json_t *ms_api_id_json(const uint8_t *bytes);

//  GET /api/v1/tasks/{id}
enum MHD_Result ms_api_get_task(ms_api_t *self, struct MHD_Connection *conn,
                                const char *text);

//  GET /api/v1/tasks/{id}/weights?format=onnx|native: the kept weights
//  of the task's result (the first row naming a blob this node holds).
enum MHD_Result ms_api_get_task_weights(ms_api_t *self,
                                        struct MHD_Connection *conn,
                                        const char *text);

//  ==========================================================================
//  Status and metrics (ms_api_metrics.c)

//  GET /api/v1/status
enum MHD_Result ms_api_get_status(ms_api_t *self, struct MHD_Connection *conn);

//  GET /metrics
enum MHD_Result ms_api_get_metrics(ms_api_t *self, struct MHD_Connection *conn);

//  ==========================================================================
//  Peers, logs, events, authority, blobs, datasets (ms_api_pool.c)

//  POST /api/v1/authority
enum MHD_Result ms_api_post_authority(ms_api_t *self,
                                      struct MHD_Connection *conn,
                                      ms_api_request_t *req);

//  GET /api/v1/peers
enum MHD_Result ms_api_get_peers(ms_api_t *self, struct MHD_Connection *conn);

//  GET /api/v1/logs/{node}: this node's view of NODE's log (the cut of
//  its version vector per incarnation).
enum MHD_Result ms_api_get_log(ms_api_t *self, struct MHD_Connection *conn,
                               const char *hex);

//  GET /api/v1/events[?sweep=ID]: server-sent events (ms_events_serve),
//  resumed after Last-Event-ID (or ?last_event_id=N).
enum MHD_Result ms_api_get_events(ms_api_t *self, struct MHD_Connection *conn);

//  PUT /api/v1/blobs/{hex}: the body (streamed to req->tmp_path) becomes
//  the blob of that hash, checked by the node.
//  hex NULL: POST /api/v1/blobs, the node hashes the body (a browser has
//  no BLAKE2b) and the answer names the hash.
enum MHD_Result ms_api_put_blob(ms_api_t *self, struct MHD_Connection *conn,
                                const char *hex, const char *method,
                                ms_api_request_t *req);

//  Start streaming an upload (PUT /api/v1/blobs/...) into a new file.
void ms_api_upload_begin(ms_api_t *self, ms_api_request_t *req);

//  Append upload data to the upload's file.
void ms_api_upload_write(ms_api_t *self, ms_api_request_t *req,
                         const char *data, size_t n);

//  GET /api/v1/datasets
enum MHD_Result ms_api_get_datasets(ms_api_t *self,
                                    struct MHD_Connection *conn);

#endif
