/*  =========================================================================
    ms_api - the node's HTTP/JSON API (libmicrohttpd)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Request handling: libmicrohttpd calls s_handler several times per
    request. The first call only sets up a context (and refuses a POST
    whose Content-Length is over the limit at once, before reading it);
    calls with upload data append to the context's body (a chunked body
    that grows past the limit is drained and refused with 413); the last
    call routes and answers. Every answer is JSON (CSV and the Prometheus
    text aside), with Cache-Control: no-store.

    Authentication: beyond loopback the node gives a token (hooks.token)
    and the first call of every request checks it before anything else is
    read: "Authorization: Bearer TOKEN" or the cookie meshsweep_token,
    which GET /?token=TOKEN sets (HttpOnly, SameSite=Strict: a browser
    sends it with same-origin fetches and EventSource, never with another
    site's requests) before redirecting to /. Comparison in constant time.

    Query parameters: each route has its list; any other parameter is a
    400 naming it (a typo such as ?limt=5 would otherwise be silently
    ignored). Result filters (ms_api_filter_*) are applied to the rows of
    ms_results_page_ex page by page, so a filtered page is as long as an
    unfiltered one and its cursor is the index of the last task looked at.
*/
#include "ms_api.h"
#include "ms_api_internal.h"
#include "ms_dashboard.h"
#include "ms_events.h"
#include "ms_hash.h"
#include "ms_results.h"
#include "ms_wire_canon.h"

#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define S_API_THREADS 4            // handler threads (epoll, thread pool)
#define S_API_IDLE_S 10            // an idle connection is closed after this
#define S_API_MAX_CONNECTIONS 1024 // open connections at most

//  --------------------------------------------------------------------------
//  Queue a response with a body (copied) and a content type; count it.
//  allow: the Allow header of a 405 (the route's methods), or NULL.

static enum MHD_Result
s_reply_allow(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
              const char *type, const char *body, size_t len, const char *allow)
{
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        len, (void *) body, MHD_RESPMEM_MUST_COPY);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (allow)
        MHD_add_response_header(resp, "Allow", allow);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(resp, "WWW-Authenticate",
                                "Bearer realm=\"meshsweep\"");
    enum MHD_Result r = MHD_queue_response(conn, status, resp);
    MHD_destroy_response(resp);
    atomic_fetch_add(&self->n_requests, 1);
    if (status >= 400)
        atomic_fetch_add(&self->n_rejected, 1);
    return r;
}

//  Queue a response without an Allow header (see s_reply_allow).

enum MHD_Result
ms_api_reply(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
             const char *type, const char *body, size_t len)
{
    return s_reply_allow(self, conn, status, type, body, len, NULL);
}

//  --------------------------------------------------------------------------
//  Answer with a JSON value (taken).

enum MHD_Result
ms_api_reply_json(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
                  json_t *value)
{
    // Canonical JSON: numbers in their shortest round-trip form.
    char *text = value ? ms_wire_canon_dump(value) : NULL;
    if (value && !text)
        text = json_dumps(value, JSON_COMPACT);
    json_decref(value);
    if (!text)
        return ms_api_reply(self, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                            "application/json", "{\"error\":\"out of memory\"}",
                            25);
    enum MHD_Result r = ms_api_reply(self, conn, status, "application/json",
                                     text, strlen(text));
    free(text);
    return r;
}

//  --------------------------------------------------------------------------
//  Answer {"error": "..."} with a printf-style message.

enum MHD_Result
ms_api_reply_error(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
                   const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return ms_api_reply_json(self, conn, status,
                             json_pack("{s:s}", "error", msg));
}

//  --------------------------------------------------------------------------
//  Answer 405 {"error": "WHAT: method M not allowed (ALLOW)"} with the
//  route's methods in the Allow header.

enum MHD_Result
ms_api_not_allowed(ms_api_t *self, struct MHD_Connection *conn,
                   const char *what, const char *method, const char *allow)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%.200s: method %.32s not allowed (%s)", what,
             method, allow);
    json_t *err = json_pack("{s:s}", "error", msg);
    char *text = err ? ms_wire_canon_dump(err) : NULL;
    json_decref(err);
    if (!text)
        return ms_api_reply(self, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                            "application/json", "{\"error\":\"out of memory\"}",
                            25);
    enum MHD_Result r =
        s_reply_allow(self, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                      "application/json", text, strlen(text), allow);
    free(text);
    return r;
}

//  --------------------------------------------------------------------------
//  Answer with a diag as the error.

enum MHD_Result
ms_api_reply_diag(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
                  const ms_diag_t *diag, int rc)
{
    char text[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 8];
    ms_diag_format(diag, text, sizeof text);
    return ms_api_reply_error(self, conn, status, "%s",
                              text[0] ? text : ms_strerror(rc));
}

//  --------------------------------------------------------------------------
//  HTTP status for a status code of a lookup or a submission.

unsigned
ms_api_status_of(int rc)
{
    switch (rc) {
    case MS_ERR_NOTFOUND:
        return MHD_HTTP_NOT_FOUND;
    case MS_ERR_INVALID:
    case MS_ERR_UNSUPPORTED:
    case MS_ERR_RANGE:
    case MS_ERR_CONFLICT:
    case MS_ERR_DATASET:
        return MHD_HTTP_BAD_REQUEST;
    case MS_ERR_INTERRUPTED:
    case MS_ERR_TIMEOUT:
        return MHD_HTTP_SERVICE_UNAVAILABLE;
    case MS_ERR_UNTRUSTED: // e.g. a node without the `submit` role
        return MHD_HTTP_FORBIDDEN;
    default:
        return MHD_HTTP_INTERNAL_SERVER_ERROR;
    }
}

static int s_parse_bind(const char *bind, struct sockaddr_in *addr,
                        ms_diag_t *diag);

//  ==========================================================================
//  Tokens (beyond loopback)

//  --------------------------------------------------------------------------
//  True for a character a token may hold (cookie- and header-safe).

static bool
s_token_char(int c)
{
    return isalnum(c) || strchr("-._~+/=", c) != NULL;
}

//  --------------------------------------------------------------------------
//  Make a new token file: 32 random bytes as hex, mode 0600, never over
//  an existing file.

static int
s_token_create(const char *path, char token[MS_API_TOKEN_MAX + 1],
               ms_diag_t *diag)
{
    if (sodium_init() < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, path,
                                "cannot initialise libsodium");
    unsigned char raw[32];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2hex(token, MS_API_TOKEN_MAX + 1, raw, sizeof raw);
    sodium_memzero(raw, sizeof raw);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot create: %s",
                                strerror(errno));
    char line[MS_API_TOKEN_MAX + 2];
    int n = snprintf(line, sizeof line, "%s\n", token);
    bool ok = write(fd, line, (size_t) n) == n && fsync(fd) == 0;
    sodium_memzero(line, sizeof line);
    if (close(fd) != 0)
        ok = false;
    if (!ok) {
        unlink(path);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot write: %s",
                                strerror(errno));
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Read (or create) the token file.

int
ms_api_token_open(const char *path, char token[MS_API_TOKEN_MAX + 1],
                  bool *created, ms_diag_t *diag)
{
    token[0] = 0;
    if (created)
        *created = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        int rc = s_token_create(path, token, diag);
        if (rc == MS_OK && created)
            *created = true;
        return rc;
    }
    if (fd < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot read: %s",
                                strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return ms_diag_set_code(diag, MS_ERR_IO, path, "not a regular file");
    }
    if (st.st_mode & 077) {
        close(fd);
        return ms_diag_set(diag, path,
                           "others may read this token file (mode %03o): "
                           "chmod 600 it",
                           (unsigned) (st.st_mode & 0777));
    }
    char buf[MS_API_TOKEN_MAX + 64];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return ms_diag_set_code(diag, MS_ERR_IO, path, "cannot read: %s",
                                strerror(errno));
    buf[n] = 0;
    char *p = buf;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
        p++;
    size_t len = 0;
    while (p[len] && s_token_char((unsigned char) p[len]))
        len++;
    const char *rest = p + len;
    while (*rest == ' ' || *rest == '\t' || *rest == '\r' || *rest == '\n')
        rest++;
    int rc = MS_OK;
    if (*rest)
        rc = ms_diag_set(diag, path,
                         "the token must be one line of letters, digits "
                         "and -._~+/= (found other characters)");
    else if (len < 16 || len > MS_API_TOKEN_MAX)
        rc = ms_diag_set(diag, path,
                         "the token must have 16..%d characters (has %zu)",
                         MS_API_TOKEN_MAX, len);
    else {
        memcpy(token, p, len);
        token[len] = 0;
    }
    sodium_memzero(buf, sizeof buf);
    return rc;
}

//  --------------------------------------------------------------------------
//  Constant-time equality of a candidate with the token.

static bool
s_token_equal(const char *token, const char *candidate, size_t n)
{
    size_t len = strlen(token);
    if (len == 0 || n != len) // the length is no secret (64 hex)
        return false;
    return sodium_memcmp(token, candidate, len) == 0;
}

//  --------------------------------------------------------------------------
//  Whether a request carries the token.

bool
ms_api_token_matches(const char *token, const char *authorization,
                     const char *cookie)
{
    if (!token || !*token)
        return false;
    if (authorization) {
        const char *p = authorization;
        while (*p == ' ')
            p++;
        if (strncasecmp(p, "Bearer", 6) == 0 && (p[6] == ' ' || !p[6])) {
            p += 6;
            while (*p == ' ')
                p++;
            size_t n = strlen(p);
            while (n > 0 && p[n - 1] == ' ')
                n--;
            if (s_token_equal(token, p, n))
                return true;
        }
    }
    return cookie && s_token_equal(token, cookie, strlen(cookie));
}

//  --------------------------------------------------------------------------
//  Whether a bind address is on loopback.

bool
ms_api_bind_loopback(const char *bind)
{
    struct sockaddr_in addr;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (s_parse_bind(bind, &addr, &diag) != MS_OK)
        return false;
    return (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
}

//  --------------------------------------------------------------------------
//  GET /?token=TOKEN: set the cookie and go to the dashboard (302), or 401.
//  With no token asked (loopback) it just redirects.

static enum MHD_Result
s_login(ms_api_t *self, struct MHD_Connection *conn, const char *given)
{
    if (self->token[0] &&
        !ms_api_token_matches(self->token, NULL, given ? given : ""))
        return ms_api_reply_error(self, conn, MHD_HTTP_UNAUTHORIZED,
                                  "token: not this node's API token (see the "
                                  "token file named in meshsweepd's start "
                                  "lines)");
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(0, (void *) "", MHD_RESPMEM_PERSISTENT);
    if (!resp)
        return MHD_NO;
    MHD_add_response_header(resp, "Location", "/");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    if (self->token[0]) {
        char cookie[MS_API_TOKEN_MAX + 96];
        snprintf(cookie, sizeof cookie,
                 "meshsweep_token=%s; Path=/; HttpOnly; SameSite=Strict",
                 self->token);
        MHD_add_response_header(resp, "Set-Cookie", cookie);
        sodium_memzero(cookie, sizeof cookie);
    }
    enum MHD_Result r = MHD_queue_response(conn, MHD_HTTP_FOUND, resp);
    MHD_destroy_response(resp);
    atomic_fetch_add(&self->n_requests, 1);
    return r;
}

//  --------------------------------------------------------------------------
//  Whether a request may go on: no token asked, or it carries the token.

static bool
s_authorized(ms_api_t *self, struct MHD_Connection *conn)
{
    if (!self->token[0])
        return true;
    return ms_api_token_matches(
        self->token,
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"),
        MHD_lookup_connection_value(conn, MHD_COOKIE_KIND, "meshsweep_token"));
}

//  ==========================================================================
//  Query parameters

#define S_ARGS_MAX 64 // query parameters one request may give

//  One parameter walk: the first parameter not allowed, or given twice.
typedef struct {
    const char *const *allowed;   // NULL-ended names
    bool filters;                 // result filters allowed too
    const char *unknown;          // the first other one (borrowed), or NULL
    const char *twice;            // the first one given again, or NULL
    bool too_many;                // more than S_ARGS_MAX parameters
    const char *seen[S_ARGS_MAX]; // the names so far (borrowed)
    size_t n_seen;                // how many
} s_args_t;

//  --------------------------------------------------------------------------
//  True when NAME is a result filter (status, verdict, node, config.KEY).

bool
ms_api_filter_name(const char *name)
{
    return strcmp(name, "status") == 0 || strcmp(name, "verdict") == 0 ||
           strcmp(name, "node") == 0 ||
           (strncmp(name, "config.", 7) == 0 && name[7]);
}

static enum MHD_Result
s_arg_one(void *cls, enum MHD_ValueKind kind, const char *key,
          const char *value)
{
    (void) kind;
    (void) value;
    s_args_t *a = cls;
    bool known = a->filters && ms_api_filter_name(key);
    for (size_t i = 0; !known && a->allowed[i]; i++)
        known = strcmp(key, a->allowed[i]) == 0;
    if (!known) {
        a->unknown = key;
        return MHD_NO;
    }
    // A parameter given twice (?limit=1&limit=2) would silently mean its
    // first value: refused.
    for (size_t i = 0; i < a->n_seen; i++)
        if (strcmp(a->seen[i], key) == 0) {
            a->twice = key;
            return MHD_NO;
        }
    if (a->n_seen == S_ARGS_MAX) {
        a->too_many = true;
        return MHD_NO;
    }
    a->seen[a->n_seen++] = key;
    return MHD_YES;
}

//  --------------------------------------------------------------------------
//  Answer 400 when the request has a query parameter not in ALLOWED
//  (NULL-ended), one given twice, or more than S_ARGS_MAX of them;
//  returns true when it did.

static bool
s_bad_args(ms_api_t *self, struct MHD_Connection *conn, const char *path,
           const char *const *allowed, bool filters, enum MHD_Result *r)
{
    s_args_t a = {.allowed = allowed, .filters = filters};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_arg_one, &a);
    if (a.twice) {
        *r = ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                "%.64s: query parameter given twice (give it "
                                "once)",
                                a.twice);
        return true;
    }
    if (a.too_many) {
        *r = ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                "more than %d query parameters", S_ARGS_MAX);
        return true;
    }
    if (!a.unknown)
        return false;
    char list[400] = "";
    size_t len = 0;
    for (size_t i = 0; allowed[i] && len < sizeof list - 80; i++)
        len += (size_t) snprintf(list + len, sizeof list - len, "%s%s",
                                 i ? ", " : "", allowed[i]);
    if (filters)
        snprintf(list + len, sizeof list - len,
                 "%sstatus, verdict, node, "
                 "config.KEY",
                 len ? ", " : "");
    *r = ms_api_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                            "%.64s: unknown query parameter of %.100s (%s)",
                            a.unknown, path, list[0] ? list : "it takes none");
    return true;
}

//  --------------------------------------------------------------------------
//  GET|HEAD / and /dashboard/{rel}: a file of the dashboard directory
//  (ms_dashboard checks the name and that the file stays inside), with
//  an ETag and Last-Modified; 304 when the client's copy is current.

static enum MHD_Result
s_get_dashboard(ms_api_t *self, struct MHD_Connection *conn, const char *rel,
                const char *method)
{
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return ms_api_not_allowed(self, conn, "dashboard", method, "GET, HEAD");
    if (!self->hooks.dashboard_dir) {
        static const char page[] =
            "<!doctype html><meta charset=utf-8><title>meshsweep</title>"
            "<p>This meshsweep node serves no dashboard (no assets "
            "directory: see --dashboard-dir and docs/DASHBOARD.md). The "
            "API is at <a href=\"/api/v1/status\">/api/v1/status</a>.\n";
        return ms_api_reply(self, conn, *rel ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK,
                            "text/html; charset=utf-8", page, sizeof page - 1);
    }
    ms_dashboard_file_t file;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    const char *name = *rel ? rel : "index.html";
    int rc = ms_dashboard_open_file(self->hooks.dashboard_dir, name,
                                    strlen(name), &file, &diag);
    if (rc != MS_OK) {
        // Whatever the reason (bad name, outside, missing), a 404: the
        // answer tells nothing about what lies outside the directory.
        if (rc == MS_ERR_NOMEM)
            return ms_api_reply_error(self, conn, 500, "out of memory");
        return ms_api_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
                                  "/dashboard/%.200s: no such file", rel);
    }
    const char *match =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "If-None-Match");
    bool current = match && strstr(match, file.etag) != NULL;
    struct MHD_Response *resp =
        current
            ? MHD_create_response_from_buffer(0, (void *) "",
                                              MHD_RESPMEM_PERSISTENT)
            : MHD_create_response_from_fd((uint64_t) file.size_bytes, file.fd);
    if (current || !resp)
        close(file.fd); // from_fd owns the descriptor once it succeeded
    if (!resp)
        return MHD_NO;
    char modified[64] = "";
    time_t t = (time_t) file.mtime_s;
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(modified, sizeof modified, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    MHD_add_response_header(resp, "Content-Type", file.mime);
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "ETag", file.etag);
    if (modified[0])
        MHD_add_response_header(resp, "Last-Modified", modified);
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    if (strcmp(name, "index.html") == 0)
        MHD_add_response_header(
            resp, "Content-Security-Policy",
            "default-src 'self'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data: blob:; frame-ancestors 'none'");
    enum MHD_Result r = MHD_queue_response(
        conn, current ? MHD_HTTP_NOT_MODIFIED : MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    atomic_fetch_add(&self->n_requests, 1);
    return r;
}

//  --------------------------------------------------------------------------
//  Route a finished request.

static enum MHD_Result
s_route(ms_api_t *self, struct MHD_Connection *conn, const char *url,
        const char *method, ms_api_request_t *req)
{
    static const char *const none[] = {NULL};
    static const char *const submit_args[] = {"files", "priority", NULL};
    static const char *const results_args[] = {"format", "limit",    "after",
                                               "all",    "verified", "by_task",
                                               "fields", NULL};
    static const char *const analysis_args[] = {"verified", "x", "metric",
                                                NULL};
    bool get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
    bool post = strcmp(method, "POST") == 0;
    if (strcmp(url, "/") == 0)
        return s_get_dashboard(self, conn, "", method);
    const char *dash = "/dashboard/";
    if (strncmp(url, dash, strlen(dash)) == 0)
        return s_get_dashboard(self, conn, url + strlen(dash), method);
    if (strcmp(url, "/dashboard") == 0)
        return s_get_dashboard(self, conn, "", method);
    char path[512];
    snprintf(path, sizeof path, "%s", url);
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = 0;
    enum MHD_Result r;

    if (strcmp(path, "/metrics") == 0) {
        if (!get)
            return ms_api_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : ms_api_get_metrics(self, conn);
    }
    if (strcmp(path, "/api/v1/status") == 0) {
        if (!get)
            return ms_api_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : ms_api_get_status(self, conn);
    }
    if (strcmp(path, "/api/v1/peers") == 0) {
        if (!get)
            return ms_api_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : ms_api_get_peers(self, conn);
    }
    if (strcmp(path, "/api/v1/events") == 0) {
        static const char *const events_args[] = {"sweep", "last_event_id",
                                                  NULL};
        if (!get)
            return ms_api_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, events_args, false, &r)
                   ? r
                   : ms_api_get_events(self, conn);
    }
    if (strcmp(path, "/api/v1/datasets") == 0) {
        if (!get)
            return ms_api_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : ms_api_get_datasets(self, conn);
    }
    if (strcmp(path, "/api/v1/authority") == 0) {
        if (!post)
            return ms_api_not_allowed(self, conn, path, method, "POST");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : ms_api_post_authority(self, conn, req);
    }
    const char *logs = "/api/v1/logs/";
    if (strncmp(path, logs, strlen(logs)) == 0) {
        if (!get)
            return ms_api_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, "/api/v1/logs/{node}", none, false, &r)
                   ? r
                   : ms_api_get_log(self, conn, path + strlen(logs));
    }
    const char *tasks = "/api/v1/tasks/";
    if (strncmp(path, tasks, strlen(tasks)) == 0) {
        const char *rest = path + strlen(tasks);
        const char *slash = strchr(rest, '/');
        if (slash && strcmp(slash, "/weights") == 0 && slash > rest) {
            static const char *const weights_args[] = {"format", NULL};
            char id_text[MS_HASH_HEX_LEN + 2];
            snprintf(id_text, sizeof id_text, "%.*s",
                     (int) (slash - rest < MS_HASH_HEX_LEN + 1
                                ? slash - rest
                                : MS_HASH_HEX_LEN + 1),
                     rest);
            if (!get)
                return ms_api_not_allowed(self, conn, path, method,
                                          "GET, HEAD");
            return s_bad_args(self, conn, "/api/v1/tasks/{id}/weights",
                              weights_args, false, &r)
                       ? r
                       : ms_api_get_task_weights(self, conn, id_text);
        }
        if (!*rest || slash)
            return ms_api_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
                                      "%.200s: no such resource", path);
        if (!get)
            return ms_api_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, "/api/v1/tasks/{id}", none, false, &r)
                   ? r
                   : ms_api_get_task(self, conn, rest);
    }
    if (strcmp(path, "/api/v1/blobs") == 0)
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : ms_api_put_blob(self, conn, NULL, method, req);
    const char *blobs = "/api/v1/blobs/";
    if (strncmp(path, blobs, strlen(blobs)) == 0)
        return s_bad_args(self, conn, "/api/v1/blobs/{hash}", none, false, &r)
                   ? r
                   : ms_api_put_blob(self, conn, path + strlen(blobs), method,
                                     req);
    if (strcmp(path, "/api/v1/sweeps") == 0) {
        if (!get && !post)
            return ms_api_not_allowed(self, conn, path, method,
                                      "GET, HEAD, POST");
        if (s_bad_args(self, conn, path, get ? none : submit_args, false, &r))
            return r;
        return get ? ms_api_get_sweeps(self, conn)
                   : ms_api_post_sweeps(self, conn, req);
    }
    const char *prefix = "/api/v1/sweeps/";
    if (strncmp(path, prefix, strlen(prefix)) == 0) {
        char id_text[128];
        const char *rest = path + strlen(prefix);
        const char *slash = strchr(rest, '/');
        size_t id_len = slash ? (size_t) (slash - rest) : strlen(rest);
        const char *sub = slash ? slash + 1 : "";
        bool control = strcmp(sub, "control") == 0;
        bool results = strcmp(sub, "results") == 0;
        if (id_len == 0 || id_len >= sizeof id_text ||
            (*sub && !results && strcmp(sub, "analysis") != 0 && !control))
            return ms_api_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
                                      "%.200s: no such resource", path);
        if (control ? !post : !get)
            return ms_api_not_allowed(self, conn, path, method,
                                      control ? "POST" : "GET, HEAD");
        char route[64];
        snprintf(route, sizeof route, "/api/v1/sweeps/{id}%s%s",
                 *sub ? "/" : "", sub);
        bool analysis = strcmp(sub, "analysis") == 0;
        if (s_bad_args(self, conn, route,
                       results    ? results_args
                       : analysis ? analysis_args
                                  : none,
                       results, &r))
            return r;
        memcpy(id_text, rest, id_len);
        id_text[id_len] = 0;
        ms_hash_t id;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_results_find_sweep(self->hooks.store, id_text, &id, &diag);
        if (rc != MS_OK)
            return ms_api_reply_diag(self, conn, ms_api_status_of(rc), &diag,
                                     rc);
        if (!*sub)
            return ms_api_get_sweep(self, conn, &id);
        if (control)
            return ms_api_post_control(self, conn, req, &id);
        if (results)
            return ms_api_get_results(self, conn, &id);
        return ms_api_get_analysis(self, conn, &id);
    }
    return ms_api_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
                              "%.200s: no such resource", path);
}

//  --------------------------------------------------------------------------
//  libmicrohttpd's access handler.

static enum MHD_Result
s_handler(void *cls, struct MHD_Connection *conn, const char *url,
          const char *method, const char *version, const char *upload_data,
          size_t *upload_data_size, void **con_cls)
{
    (void) version;
    ms_api_t *self = cls;
    ms_api_request_t *req = *con_cls;
    if (!req) {
        req = calloc(1, sizeof *req);
        if (!req)
            return MHD_NO;
        *con_cls = req;
        req->fd = -1;
        // The token (beyond loopback) before anything else; GET
        // /?token= is the login that sets the cookie.
        const char *login = strcmp(method, "GET") == 0 && strcmp(url, "/") == 0
                                ? MHD_lookup_connection_value(
                                      conn, MHD_GET_ARGUMENT_KIND, "token")
                                : NULL;
        if (login) {
            req->answered = true;
            return s_login(self, conn, login);
        }
        if (!s_authorized(self, conn)) {
            req->answered = true;
            return ms_api_reply_error(
                self, conn, MHD_HTTP_UNAUTHORIZED,
                "this node's API listens beyond loopback "
                "and needs its token: send "
                "'Authorization: Bearer TOKEN' (the token "
                "file is named in meshsweepd's start "
                "lines), or open /?token=TOKEN once in a "
                "browser");
        }
        const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                     "Content-Length");
        if ((strcmp(method, "PUT") == 0 &&
             strncmp(url, "/api/v1/blobs/", 14) == 0) ||
            (strcmp(method, "POST") == 0 &&
             strcmp(url, "/api/v1/blobs") == 0)) {
            if (cl && strtoull(cl, NULL, 10) > self->hooks.max_upload_bytes) {
                req->too_large = true;
                return ms_api_reply_error(self, conn,
                                          MHD_HTTP_CONTENT_TOO_LARGE,
                                          "body: larger than %" PRIu64 " bytes "
                                          "(max_dataset_bytes)",
                                          self->hooks.max_upload_bytes);
            }
            ms_api_upload_begin(self, req);
            return MHD_YES;
        }
        if (cl && strtoull(cl, NULL, 10) > MS_API_MAX_BODY) {
            req->too_large = true;
            return ms_api_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                                      "body: larger than %u bytes",
                                      MS_API_MAX_BODY);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->answered)
            return MHD_YES; // refused already: drop the body
        if (req->upload) {
            ms_api_upload_write(self, req, upload_data, n);
            return MHD_YES;
        }
        if (req->too_large || req->len + n > MS_API_MAX_BODY) {
            req->too_large = true;
            free(req->body);
            req->body = NULL;
            req->len = 0;
            return MHD_YES;
        }
        char *p = realloc(req->body, req->len + n + 1);
        if (!p)
            return MHD_NO;
        memcpy(p + req->len, upload_data, n);
        req->body = p;
        req->len += n;
        req->body[req->len] = 0;
        return MHD_YES;
    }
    if (req->answered)
        return MHD_YES; // the answer is queued
    return s_route(self, conn, url, method, req);
}

//  --------------------------------------------------------------------------
//  Free a request's context.

static void
s_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
            enum MHD_RequestTerminationCode toe)
{
    (void) cls;
    (void) conn;
    (void) toe;
    ms_api_request_t *req = *con_cls;
    if (req) {
        if (req->fd >= 0)
            close(req->fd);
        if (req->tmp_path) // not handed over: an upload cut short
            unlink(req->tmp_path);
        free(req->tmp_path);
        free(req->body);
        free(req);
    }
    *con_cls = NULL;
}

//  --------------------------------------------------------------------------
//  Percent-decoding of the path and query arguments, in place (libmicrohttpd's
//  unescape callback): as libmicrohttpd's own, except that %00 is kept as
//  the three characters "%00". A decoded NUL would cut the C string short,
//  so "/dashboard/%00/../../etc/passwd" would reach the router as
//  "/dashboard/"; kept literal, it is a name no route or file has.

static size_t
s_unescape(void *cls, struct MHD_Connection *conn, char *text)
{
    (void) cls;
    (void) conn;
    char *out = text;
    for (const char *in = text; *in; in++) {
        unsigned char byte = 0;
        size_t n = 0;
        if (in[0] == '%' &&
            sodium_hex2bin(&byte, 1, in + 1, 2, NULL, &n, NULL) == 0 &&
            n == 1 && byte != 0) {
            *out++ = (char) byte;
            in += 2;
        } else
            *out++ = *in;
    }
    *out = 0;
    return (size_t) (out - text);
}

//  --------------------------------------------------------------------------
//  Parse "ADDR:PORT" into an IPv4 socket address.

static int
s_parse_bind(const char *bind, struct sockaddr_in *addr, ms_diag_t *diag)
{
    const char *colon = bind ? strrchr(bind, ':') : NULL;
    if (!colon || colon == bind || !colon[1])
        return ms_diag_set(diag, "api",
                           "'%s' is not ADDR:PORT (e.g. 127.0.0.1:5872)",
                           bind ? bind : "");
    char host[256];
    size_t hlen = (size_t) (colon - bind);
    if (hlen >= sizeof host)
        return ms_diag_set(diag, "api", "address too long");
    memcpy(host, bind, hlen);
    host[hlen] = 0;
    char *end = NULL;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535)
        return ms_diag_set(diag, "api", "'%s': port must be 0..65535",
                           colon + 1);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, NULL, &hints, &res);
    if (gai != 0 || !res)
        return ms_diag_set(diag, "api", "'%s': %s", host, gai_strerror(gai));
    memcpy(addr, res->ai_addr, sizeof *addr);
    freeaddrinfo(res);
    addr->sin_port = htons((uint16_t) port);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Check a bind address without listening.

int
ms_api_bind_check(const char *bind, ms_diag_t *diag)
{
    struct sockaddr_in addr;
    return s_parse_bind(bind, &addr, diag);
}

//  --------------------------------------------------------------------------
//  Start serving.

int
ms_api_open(ms_api_t **out, const char *bind, const ms_api_hooks_t *hooks,
            ms_diag_t *diag)
{
    *out = NULL;
    struct sockaddr_in addr;
    int rc = s_parse_bind(bind, &addr, diag);
    if (rc != MS_OK)
        return rc;
    ms_api_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->hooks = *hooks;
    self->hooks.token = NULL; // copied below, not borrowed
    if (hooks->token && *hooks->token) {
        if (strlen(hooks->token) > MS_API_TOKEN_MAX) {
            free(self);
            return ms_diag_set(diag, "api", "token longer than %d characters",
                               MS_API_TOKEN_MAX);
        }
        snprintf(self->token, sizeof self->token, "%s", hooks->token);
    }
    atomic_init(&self->n_requests, 0);
    atomic_init(&self->n_rejected, 0);
    pthread_mutex_init(&self->cache_mu, NULL);
    //  Event-driven (epoll) with a small pool of handler threads, not a
    //  thread per connection: an idle or slow client then costs a socket,
    //  not a thread, so a hundred half-open connections (slowloris) cannot
    //  fill the server while real requests wait. Idle connections are
    //  closed after S_API_IDLE_S seconds.
    self->daemon = MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME,
        ntohs(addr.sin_port), NULL, NULL, s_handler, self, MHD_OPTION_SOCK_ADDR,
        (struct sockaddr *) &addr, MHD_OPTION_NOTIFY_COMPLETED, s_completed,
        self, MHD_OPTION_THREAD_POOL_SIZE, (unsigned) S_API_THREADS,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) S_API_IDLE_S,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned) S_API_MAX_CONNECTIONS,
        MHD_OPTION_UNESCAPE_CALLBACK, s_unescape, NULL, MHD_OPTION_END);
    if (!self->daemon) {
        pthread_mutex_destroy(&self->cache_mu);
        free(self);
        return ms_diag_set_code(diag, MS_ERR_IO, "api",
                                "cannot listen on %s (address in use, or "
                                "not an address of this machine)",
                                bind);
    }
    const union MHD_DaemonInfo *info =
        MHD_get_daemon_info(self->daemon, MHD_DAEMON_INFO_BIND_PORT);
    unsigned port = info ? info->port : ntohs(addr.sin_port);
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
    snprintf(self->address, sizeof self->address, "%s:%u", ip, port);
    *out = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Stop serving and free.

void
ms_api_destroy(ms_api_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_api_t *self = *self_p;
    // End the event streams first: libmicrohttpd must not be stopped
    // with suspended (waiting) connections.
    if (self->hooks.events)
        ms_events_shutdown(self->hooks.events);
    if (self->daemon)
        MHD_stop_daemon(self->daemon);
    sodium_memzero(self->token, sizeof self->token);
    for (size_t i = 0; i < MS_API_ANALYSIS_CACHE; i++)
        free(self->cache[i].text);
    pthread_mutex_destroy(&self->cache_mu);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The bound address.

const char *
ms_api_address(const ms_api_t *self)
{
    return self->address;
}

//  --------------------------------------------------------------------------
//  Requests answered.

uint64_t
ms_api_requests(const ms_api_t *self)
{
    return (uint64_t) atomic_load(&((ms_api_t *) self)->n_requests);
}

//  --------------------------------------------------------------------------
//  Requests refused.

uint64_t
ms_api_rejected(const ms_api_t *self)
{
    return (uint64_t) atomic_load(&((ms_api_t *) self)->n_rejected);
}
