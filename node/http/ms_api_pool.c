/*  =========================================================================
    ms_api_pool - peers, logs, events, authority, blobs, datasets

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Blob uploads stream the PUT body into a temporary file in the node's
    upload directory (hooks.upload_dir; ms_api_upload_begin and _write,
    called by the handler as data arrives) and hand it to the node
    (hooks.blob_put), which checks its hash before it is kept.
*/
#include "ms_api.h"
#include "ms_api_internal.h"

#include "ms_events.h"
#include "ms_dataset.h"
#include "ms_hash.h"
#include "ms_results.h"
#include "ms_spec.h"
#include "ms_store_payload.h"

#include <microhttpd.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  POST /api/v1/authority

enum MHD_Result
ms_api_post_authority(ms_api_t *self, struct MHD_Connection *conn,
                      ms_api_request_t *req)
{
    if (!self->hooks.authority)
        return ms_api_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                                  "authority: not served by this node");
    if (req->too_large)
        return ms_api_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                                  "body: larger than %u bytes",
                                  MS_API_MAX_BODY);
    if (req->len == 0)
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "body: empty (send an authority item file or "
                                  "a certificate bundle)");
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char *summary = NULL;
    int rc = self->hooks.authority(self->hooks.arg, req->body, req->len,
                                   &summary, &diag);
    if (rc != MS_OK) {
        unsigned status = rc == MS_ERR_PROTOCOL || rc == MS_ERR_UNTRUSTED ||
                                  rc == MS_ERR_BADSIG || rc == MS_ERR_EXPIRED
                              ? MHD_HTTP_BAD_REQUEST
                              : ms_api_status_of(rc);
        return ms_api_reply_diag(self, conn, status, &diag, rc);
    }
    json_error_t err;
    json_t *sum = summary ? json_loads(summary, 0, &err) : NULL;
    free(summary);
    if (!sum)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    return ms_api_reply_json(self, conn, MHD_HTTP_OK, sum);
}

//  --------------------------------------------------------------------------
//  GET /api/v1/peers

enum MHD_Result
ms_api_get_peers(ms_api_t *self, struct MHD_Connection *conn)
{
    json_t *peers =
        self->hooks.peers ? self->hooks.peers(self->hooks.arg) : json_array();
    if (!peers)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    // Incarnations are 64 random bits: as JSON numbers a client would
    // round those above 2^53, so they go out as 16 hex digits (as in
    // /api/v1/logs).
    size_t i;
    json_t *peer;
    json_array_foreach(peers, i, peer)
    {
        json_t *inc = json_object_get(peer, "incarnation");
        if (json_is_integer(inc)) {
            char hex[17];
            snprintf(hex, sizeof hex, "%016" PRIx64,
                     (uint64_t) json_integer_value(inc));
            json_object_set_new(peer, "incarnation", json_string(hex));
        }
    }
    return ms_api_reply_json(self, conn, MHD_HTTP_OK, peers);
}

//  --------------------------------------------------------------------------
//  GET /api/v1/logs/{node}: this node's view of NODE's log, per
//  incarnation the highest contiguous seq held (the version vector's
//  entries of that origin): {"node": HEX, "cut": [{"incarnation": HEX16,
//  "max_seq": N}, ...]} sorted by incarnation; an empty cut when none is
//  held. `meshsweep pool clear --node URL` takes a clear's cut from it.

typedef struct {
    uint8_t node[MS_HASH_BYTES];
    json_t *cut;
    size_t n;
} s_log_view_t;

static int
s_log_one(void *arg, const uint8_t *origin, uint64_t incarnation, uint64_t seq)
{
    s_log_view_t *v = arg;
    if (memcmp(origin, v->node, MS_HASH_BYTES) != 0)
        return 0;
    char inc[17];
    snprintf(inc, sizeof inc, "%016" PRIx64, incarnation);
    if (json_array_append_new(v->cut,
                              json_pack("{s:s, s:I}", "incarnation", inc,
                                        "max_seq", (json_int_t) seq)) != 0)
        return MS_ERR_NOMEM;
    v->n++;
    return 0;
}

//  A node id prefix search over the log's origins and the peers.
typedef struct {
    char prefix[MS_HASH_HEX_LEN + 1]; // lowercase
    size_t n_prefix;                  // its length
    size_t n_found;                   // distinct ids matching
    char found[MS_HASH_HEX_LEN + 1];  // the first
} s_node_find_t;

static void
s_node_find_hex(s_node_find_t *f, const char *hex)
{
    if (!hex || strncmp(hex, f->prefix, f->n_prefix) != 0)
        return;
    if (f->n_found && strcmp(f->found, hex) == 0)
        return;
    if (f->n_found++ == 0)
        snprintf(f->found, sizeof f->found, "%s", hex);
}

static int
s_node_find_origin(void *arg, const uint8_t *origin, uint64_t incarnation,
                   uint64_t seq)
{
    (void) incarnation;
    (void) seq;
    ms_hash_t h;
    memcpy(h.bytes, origin, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    s_node_find_hex(arg, hex);
    return 0;
}

enum MHD_Result
ms_api_get_log(ms_api_t *self, struct MHD_Connection *conn, const char *hex)
{
    ms_hash_t id;
    size_t n_hex = strlen(hex);
    if (n_hex < MS_RESULTS_PREFIX_MIN || n_hex > MS_HASH_HEX_LEN ||
        strspn(hex, "0123456789abcdef") != n_hex)
        return ms_api_reply_error(
            self, conn, MHD_HTTP_BAD_REQUEST,
            "/api/v1/logs/%.80s: not a node id (64 "
            "lowercase hex characters, or a unique prefix "
            "of %d or more)",
            hex, MS_RESULTS_PREFIX_MIN);
    if (!self->hooks.store)
        return ms_api_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                                  "logs: not served by this node");
    if (n_hex < MS_HASH_HEX_LEN) {
        s_node_find_t f = {.n_prefix = n_hex};
        memcpy(f.prefix, hex, n_hex + 1);
        ms_store_vector(self->hooks.store, s_node_find_origin, &f);
        json_t *peers =
            self->hooks.peers ? self->hooks.peers(self->hooks.arg) : NULL;
        size_t i;
        json_t *peer;
        json_array_foreach(peers, i, peer)
        {
            s_node_find_hex(
                &f, json_string_value(json_object_get(peer, "node_id")));
        }
        json_decref(peers);
        if (f.n_found == 0)
            return ms_api_reply_error(
                self, conn, MHD_HTTP_NOT_FOUND,
                "/api/v1/logs/%s: no node with this prefix "
                "in this node's log or peers",
                hex);
        if (f.n_found > 1)
            return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                      "/api/v1/logs/%s: prefix matches several "
                                      "nodes (give more characters)",
                                      hex);
        ms_hash_from_hex(f.found, &id);
    } else if (ms_hash_from_hex(hex, &id) != MS_OK)
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "/api/v1/logs/%.80s: not a node id", hex);
    s_log_view_t v = {.cut = json_array()};
    memcpy(v.node, id.bytes, MS_HASH_BYTES);
    if (!v.cut)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    int rc = ms_store_vector(self->hooks.store, s_log_one, &v);
    if (rc != MS_OK) {
        json_decref(v.cut);
        return ms_api_reply_error(self, conn, 500, "logs: %s", ms_strerror(rc));
    }
    char node_hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, node_hex);
    json_t *doc = json_pack("{s:s, s:o}", "node", node_hex, "cut", v.cut);
    if (!doc)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    return ms_api_reply_json(self, conn, MHD_HTTP_OK, doc);
}

//  --------------------------------------------------------------------------
//  GET /api/v1/events[?sweep=ID]: server-sent events (ms_events_serve),
//  resumed after Last-Event-ID (or ?last_event_id=N).

enum MHD_Result
ms_api_get_events(ms_api_t *self, struct MHD_Connection *conn)
{
    if (!self->hooks.events)
        return ms_api_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                                  "events: not served by this node");
    const char *sweep =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "sweep");
    ms_hash_t id;
    if (sweep) {
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_results_find_sweep(self->hooks.store, sweep, &id, &diag);
        if (rc != MS_OK)
            return ms_api_reply_diag(self, conn, ms_api_status_of(rc), &diag,
                                     rc);
    }
    const char *last =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Last-Event-ID");
    const char *what = "Last-Event-ID";
    if (!last || !*last) {
        last = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND,
                                           "last_event_id");
        what = "last_event_id";
    }
    uint64_t last_id = 0;
    bool resume = last && *last;
    if (resume && ms_events_parse_id(last, &last_id) != MS_OK)
        return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                  "%s: '%.64s' is not an event id (a decimal "
                                  "number)",
                                  what, last);
    int rc = ms_events_serve(self->hooks.events, conn, sweep ? id.bytes : NULL,
                             resume, last_id);
    if (rc == MS_ERR_RANGE)
        return ms_api_reply_error(self, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                                  "events: %d streams open already (the most); "
                                  "try again later",
                                  MS_EVENTS_DEFAULT_READERS);
    if (rc == MS_ERR_INTERRUPTED)
        return ms_api_reply_error(self, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                                  "events: the node is stopping");
    if (rc == MS_ERR_NOMEM)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    if (rc != MS_OK)
        return MHD_NO;
    atomic_fetch_add(&self->n_requests, 1);
    return MHD_YES;
}

//  --------------------------------------------------------------------------
//  PUT /api/v1/blobs/{hex}: the body (streamed to req->tmp_path) becomes
//  the blob of that hash, checked by the node.

//  hex NULL: POST /api/v1/blobs, the node hashes the body (a browser has
//  no BLAKE2b) and the answer names the hash.

enum MHD_Result
ms_api_put_blob(ms_api_t *self, struct MHD_Connection *conn, const char *hex,
                const char *method, ms_api_request_t *req)
{
    if (hex && strcmp(method, "PUT") != 0)
        return ms_api_not_allowed(self, conn, "/api/v1/blobs/{hash}", method,
                                  "PUT");
    if (!hex && strcmp(method, "POST") != 0)
        return ms_api_not_allowed(self, conn, "/api/v1/blobs", method, "POST");
    if (!self->hooks.blob_put || !self->hooks.upload_dir)
        return ms_api_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                                  "this node takes no uploads");
    ms_hash_t hash;
    if (hex && (strlen(hex) != MS_HASH_HEX_LEN ||
                ms_hash_from_hex(hex, &hash) != MS_OK))
        return ms_api_reply_error(
            self, conn, MHD_HTTP_BAD_REQUEST,
            "/api/v1/blobs/%.80s: not a BLAKE2b-256 hash (64 "
            "lowercase hex characters)",
            hex);
    if (req->too_large)
        return ms_api_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                                  "body: larger than %" PRIu64 " bytes "
                                  "(max_dataset_bytes)",
                                  self->hooks.max_upload_bytes);
    if (req->fd < 0 || req->write_error || !req->tmp_path)
        return ms_api_reply_error(self, conn, 500, "cannot write the upload");
    if (close(req->fd) != 0) {
        req->fd = -1;
        return ms_api_reply_error(self, conn, 500, "cannot write the upload");
    }
    req->fd = -1;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char computed[MS_HASH_HEX_LEN + 1];
    if (!hex) {
        if (req->n_up == 0)
            return ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                      "body: empty (send the file's bytes)");
        if (ms_hash_file(req->tmp_path, &hash, &diag) != MS_OK)
            return ms_api_reply_error(self, conn, 500,
                                      "cannot hash the upload");
        ms_hash_hex(&hash, computed);
        hex = computed;
    }
    char *tmp = req->tmp_path;
    req->tmp_path = NULL; // the hook consumes it
    int rc = self->hooks.blob_put(self->hooks.arg, &hash, tmp, &diag);
    free(tmp);
    if (rc != MS_OK)
        return ms_api_reply_diag(self, conn,
                                 rc == MS_ERR_STORE_FULL
                                     ? MHD_HTTP_INSUFFICIENT_STORAGE
                                     : ms_api_status_of(rc),
                                 &diag, rc);
    json_t *ok =
        json_pack("{s:s, s:I}", "hash", hex, "bytes", (json_int_t) req->n_up);
    if (!ok)
        return ms_api_reply_error(self, conn, 500, "out of memory");
    return ms_api_reply_json(self, conn, MHD_HTTP_CREATED, ok);
}

//  --------------------------------------------------------------------------
//  Start streaming an upload (PUT /api/v1/blobs/...) into a new file.

void
ms_api_upload_begin(ms_api_t *self, ms_api_request_t *req)
{
    req->upload = true;
    if (!self->hooks.upload_dir)
        return;
    size_t n = strlen(self->hooks.upload_dir) + 32;
    req->tmp_path = malloc(n);
    if (!req->tmp_path)
        return;
    snprintf(req->tmp_path, n, "%s/upload-XXXXXX", self->hooks.upload_dir);
    req->fd = mkstemp(req->tmp_path);
    if (req->fd < 0) {
        free(req->tmp_path);
        req->tmp_path = NULL;
    }
}

//  --------------------------------------------------------------------------
//  Append upload data to the upload's file.

void
ms_api_upload_write(ms_api_t *self, ms_api_request_t *req, const char *data,
                    size_t n)
{
    if (req->too_large || req->fd < 0 || req->write_error)
        return;
    if (req->n_up + n > self->hooks.max_upload_bytes) {
        req->too_large = true;
        return;
    }
    while (n > 0) {
        ssize_t w = write(req->fd, data, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            req->write_error = true;
            return;
        }
        data += w;
        n -= (size_t) w;
        req->n_up += (uint64_t) w;
    }
}

//  A dataset listing being built.
typedef struct {
    json_t *list;   // the datasets
    json_t *hashes; // every file hash (for the blobs_held hook)
} s_datasets_t;

static int
s_dataset_one(void *arg, const uint8_t *hash, const uint8_t *payload,
              size_t len)
{
    s_datasets_t *d = arg;
    ms_store_payload_t *p = NULL;
    if (ms_store_payload_decode(MS_RECORD_DATASET, payload, len, &p) != MS_OK)
        return 0; // the store applied it, so this cannot happen: skip
    json_t *files = json_array();
    for (size_t i = 0; files && i < p->u.dataset.n_files; i++) {
        const ms_wire_dataset_file_t *f = &p->u.dataset.files[i];
        json_t *fh = ms_api_id_json(f->hash);
        if (json_is_string(fh))
            json_array_append(d->hashes, fh);
        json_array_append_new(
            files, json_pack("{s:s, s:I, s:o, s:n}", "role", f->role, "size",
                             (json_int_t) f->size, "hash", fh, "present"));
    }
    const char *name = p->u.dataset.name ? p->u.dataset.name : "";
    json_t *obj = json_pack(
        "{s:o, s:s, s:s, s:o, s:n, s:[]}", "hash", ms_api_id_json(hash), "name",
        name, "kind", strcmp(name, "files") == 0 ? "files" : "builtin", "files",
        files ? files : json_array(), "present", "sweeps");
    ms_store_payload_destroy(&p);
    if (!obj || json_array_append_new(d->list, obj) != 0)
        return MS_ERR_NOMEM;
    return 0;
}

//  --------------------------------------------------------------------------
//  Attach a sweep to the datasets it uses: a built-in by name, files by
//  the hashes of its train and test files.

static int
s_dataset_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    s_datasets_t *d = arg;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    json_t *named =
        ms_spec_canonical_dataset(sweep->spec_json, sweep->spec_len, &diag);
    if (!named)
        return 0;
    const char *builtin = json_string_value(json_object_get(named, "name"));
    const char *train = json_string_value(json_object_get(named, "train"));
    size_t i;
    json_t *ds;
    json_array_foreach(d->list, i, ds)
    {
        bool uses = false;
        const char *kind = json_string_value(json_object_get(ds, "kind"));
        if (builtin)
            uses = strcmp(kind, "builtin") == 0 &&
                   strcmp(json_string_value(json_object_get(ds, "name")),
                          builtin) == 0;
        else if (train) {
            size_t k;
            json_t *f;
            json_array_foreach(json_object_get(ds, "files"), k, f)
            {
                const char *h = json_string_value(json_object_get(f, "hash"));
                uses = uses || (h && strcmp(h, train) == 0);
            }
        }
        if (uses)
            json_array_append_new(json_object_get(ds, "sweeps"),
                                  ms_api_id_json(sweep->sweep_id));
    }
    json_decref(named);
    return 0;
}

//  --------------------------------------------------------------------------
//  A built-in dataset whose files are on this machine but of which no
//  record is held yet: listed with its files' sizes (hashes unknown until
//  a sweep uses it: hashing 60 MB is not done for a listing).

static void
s_dataset_builtin_local(s_datasets_t *d, const char *name)
{
    size_t i;
    json_t *ds;
    json_array_foreach(d->list, i, ds)
    {
        if (strcmp(json_string_value(json_object_get(ds, "name")), name) == 0)
            return;
    }
    char *p[4] = {NULL, NULL, NULL, NULL};
    ms_diag_t diag;
    ms_diag_clear(&diag);
    static const char *const roles[4] = {"train-images", "train-labels",
                                         "test-images", "test-labels"};
    if (ms_dataset_builtin_paths(name, &p[0], &p[1], &p[2], &p[3], &diag) ==
        MS_OK) {
        json_t *files = json_array();
        for (int k = 0; files && k < 4; k++) {
            struct stat st;
            json_array_append_new(
                files,
                json_pack("{s:s, s:I, s:n, s:b}", "role", roles[k], "size",
                          (json_int_t) (p[k] && stat(p[k], &st) == 0
                                            ? st.st_size
                                            : 0),
                          "hash", "present", true));
        }
        json_t *obj =
            json_pack("{s:n, s:s, s:s, s:o, s:b, s:[]}", "hash", "name", name,
                      "kind", "builtin", "files", files ? files : json_array(),
                      "present", true, "sweeps");
        if (obj)
            json_array_append_new(d->list, obj);
    }
    for (int k = 0; k < 4; k++)
        free(p[k]);
}

//  --------------------------------------------------------------------------
//  GET /api/v1/datasets

enum MHD_Result
ms_api_get_datasets(ms_api_t *self, struct MHD_Connection *conn)
{
    s_datasets_t d = {.list = json_array(), .hashes = json_array()};
    if (!d.list || !d.hashes) {
        json_decref(d.list);
        json_decref(d.hashes);
        return ms_api_reply_error(self, conn, 500, "out of memory");
    }
    int rc = ms_store_list_datasets(self->hooks.store, s_dataset_one, &d);
    if (rc == MS_OK && self->hooks.blobs_held && json_array_size(d.hashes)) {
        json_t *held = self->hooks.blobs_held(self->hooks.arg, d.hashes);
        size_t i, k;
        json_t *ds, *f;
        json_array_foreach(d.list, i, ds)
        {
            bool all = held != NULL;
            json_array_foreach(json_object_get(ds, "files"), k, f)
            {
                const char *h = json_string_value(json_object_get(f, "hash"));
                json_t *v = h && held ? json_object_get(held, h) : NULL;
                bool yes = json_is_true(v);
                all = all && yes;
                if (held)
                    json_object_set_new(f, "present", json_boolean(yes));
            }
            if (held)
                json_object_set_new(ds, "present", json_boolean(all));
        }
        json_decref(held);
    }
    json_decref(d.hashes);
    if (rc == MS_OK)
        rc = ms_store_list_sweeps(self->hooks.store, s_dataset_sweep, &d);
    if (rc != MS_OK) {
        json_decref(d.list);
        return ms_api_reply_error(self, conn, 500, "store: %s",
                                  ms_strerror(rc));
    }
    s_dataset_builtin_local(&d, "fashion-mnist");
    s_dataset_builtin_local(&d, "mnist");
    return ms_api_reply_json(self, conn, MHD_HTTP_OK,
                             json_pack("{s:o}", "datasets", d.list));
}
