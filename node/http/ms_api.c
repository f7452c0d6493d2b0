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
#include "ms_clock.h"
#include "ms_analysis.h"
#include "ms_dashboard.h"
#include "ms_events.h"
#include "ms_dataset.h"
#include "ms_hash.h"
#include "ms_onnx.h"
#include "ms_metrics.h"
#include "ms_prom.h"
#include "ms_results.h"
#include "ms_spec.h"
#include "ms_store_payload.h"
#include "ms_verdict.h"
#include "ms_wire_canon.h"

#include <microhttpd.h>
#include <pthread.h>
#include <sodium.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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
#define S_ANALYSIS_CACHE 16        // analyses kept (sweep, verified, query)
#define S_ANALYSIS_QUERY 136       // "x|metric" of a cached analysis

//  One cached analysis: the answer's text, labelled with the sweep's
//  store generation when its rows were read (ms_store_sweep_generation).
typedef struct {
    uint8_t sweep_id[MS_HASH_BYTES]; // the sweep
    bool verified;                   // ?verified=1
    char query[S_ANALYSIS_QUERY];    // ?x= and ?metric= as "X|METRIC"
    uint64_t generation;             // 0: empty slot
    uint64_t used;                   // last use (a tick of the cache)
    char *text;                      // the JSON answer, malloc'd
    size_t len;                      // its bytes
} s_cached_t;

struct ms_api {
    ms_api_hooks_t hooks;               // the node's hooks (copy)
    struct MHD_Daemon *daemon;          // libmicrohttpd
    char address[128];                  // "ADDR:PORT" bound
    atomic_uint_fast64_t n_requests;    // answered
    atomic_uint_fast64_t n_rejected;    // answered with 4xx/5xx
    char token[MS_API_TOKEN_MAX + 1];   // bearer token; "" = none asked
    pthread_mutex_t cache_mu;           // guards the analysis cache
    s_cached_t cache[S_ANALYSIS_CACHE]; // analyses (GET .../analysis)
    uint64_t cache_tick;                // use counter (LRU)
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
} s_request_t;

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

static enum MHD_Result
s_reply(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
        const char *type, const char *body, size_t len)
{
    return s_reply_allow(self, conn, status, type, body, len, NULL);
}

//  --------------------------------------------------------------------------
//  Answer with a JSON value (taken).

static enum MHD_Result
s_reply_json(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
             json_t *value)
{
    // Canonical JSON: numbers in their shortest round-trip form.
    char *text = value ? ms_wire_canon_dump(value) : NULL;
    if (value && !text)
        text = json_dumps(value, JSON_COMPACT);
    json_decref(value);
    if (!text)
        return s_reply(self, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                       "application/json", "{\"error\":\"out of memory\"}", 25);
    enum MHD_Result r =
        s_reply(self, conn, status, "application/json", text, strlen(text));
    free(text);
    return r;
}

//  --------------------------------------------------------------------------
//  Answer {"error": "..."} with a printf-style message.

static enum MHD_Result s_reply_error(ms_api_t *self,
                                     struct MHD_Connection *conn,
                                     unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static enum MHD_Result
s_reply_error(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
              const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return s_reply_json(self, conn, status, json_pack("{s:s}", "error", msg));
}

//  --------------------------------------------------------------------------
//  Answer 405 {"error": "WHAT: method M not allowed (ALLOW)"} with the
//  route's methods in the Allow header.

static enum MHD_Result
s_not_allowed(ms_api_t *self, struct MHD_Connection *conn, const char *what,
              const char *method, const char *allow)
{
    char msg[400];
    snprintf(msg, sizeof msg, "%.200s: method %.32s not allowed (%s)", what,
             method, allow);
    json_t *err = json_pack("{s:s}", "error", msg);
    char *text = err ? ms_wire_canon_dump(err) : NULL;
    json_decref(err);
    if (!text)
        return s_reply(self, conn, MHD_HTTP_INTERNAL_SERVER_ERROR,
                       "application/json", "{\"error\":\"out of memory\"}", 25);
    enum MHD_Result r =
        s_reply_allow(self, conn, MHD_HTTP_METHOD_NOT_ALLOWED,
                      "application/json", text, strlen(text), allow);
    free(text);
    return r;
}

//  --------------------------------------------------------------------------
//  Answer with a diag as the error.

static enum MHD_Result
s_reply_diag(ms_api_t *self, struct MHD_Connection *conn, unsigned status,
             const ms_diag_t *diag, int rc)
{
    char text[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 8];
    ms_diag_format(diag, text, sizeof text);
    return s_reply_error(self, conn, status, "%s",
                         text[0] ? text : ms_strerror(rc));
}

//  --------------------------------------------------------------------------
//  HTTP status for a status code of a lookup or a submission.

static unsigned
s_status_of(int rc)
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
        return s_reply_error(self, conn, MHD_HTTP_UNAUTHORIZED,
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

static bool
s_filter_name(const char *name)
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
    bool known = a->filters && s_filter_name(key);
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
        *r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                           "%.64s: query parameter given twice (give it "
                           "once)",
                           a.twice);
        return true;
    }
    if (a.too_many) {
        *r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
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
    *r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                       "%.64s: unknown query parameter of %.100s (%s)",
                       a.unknown, path, list[0] ? list : "it takes none");
    return true;
}

//  ==========================================================================
//  Result filters

#define S_FILTER_MAX 64 // conditions in one filter

//  What a condition compares.
typedef enum {
    S_COND_STATUS = 0,  // row "status"
    S_COND_VERDICT = 1, // row "verdict"
    S_COND_NODE = 2,    // row "node_id", by prefix
    S_COND_CONFIG = 3,  // row config[key]
} s_cond_kind_t;

//  One condition.
typedef struct {
    s_cond_kind_t kind; // what
    char *key;          // config key (CONFIG), malloc'd
    char *value;        // the text asked, malloc'd
} s_cond_t;

struct ms_api_filter {
    s_cond_t conds[S_FILTER_MAX]; // all must hold
    size_t n;                     // conditions held
};

//  --------------------------------------------------------------------------
//  A new filter that matches all.

ms_api_filter_t *
ms_api_filter_new(void)
{
    return calloc(1, sizeof(ms_api_filter_t));
}

//  --------------------------------------------------------------------------
//  Free a filter.

void
ms_api_filter_destroy(ms_api_filter_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_api_filter_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++) {
        free(self->conds[i].key);
        free(self->conds[i].value);
    }
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  True when TEXT is one of the NULL-ended WORDS.

static bool
s_one_of(const char *text, const char *const *words)
{
    for (size_t i = 0; words[i]; i++)
        if (strcmp(text, words[i]) == 0)
            return true;
    return false;
}

//  --------------------------------------------------------------------------
//  Add a condition.

int
ms_api_filter_add(ms_api_filter_t *self, const char *name, const char *value,
                  ms_diag_t *diag)
{
    static const char *const statuses[] = {"ok", "diverged", "failed", NULL};
    static const char *const verdicts[] = {"pending",  "accepted", "verified",
                                           "disputed", "failed",   NULL};
    if (!s_filter_name(name))
        return MS_ERR_NOTFOUND;
    if (!value)
        value = "";
    s_cond_t c = {.kind = S_COND_CONFIG};
    if (strcmp(name, "status") == 0) {
        if (!s_one_of(value, statuses))
            return ms_diag_set(diag, "status",
                               "'%.64s' is not ok, diverged or failed", value);
        c.kind = S_COND_STATUS;
    } else if (strcmp(name, "verdict") == 0) {
        if (!s_one_of(value, verdicts))
            return ms_diag_set(diag, "verdict",
                               "'%.64s' is not pending, accepted, verified, "
                               "disputed or failed",
                               value);
        c.kind = S_COND_VERDICT;
    } else if (strcmp(name, "node") == 0) {
        size_t n = strlen(value);
        if (n < 1 || n > MS_HASH_HEX_LEN ||
            strspn(value, "0123456789abcdef"
                          "ABCDEF") != n)
            return ms_diag_set(diag, "node",
                               "'%.80s' is not a node id prefix (1..64 hex "
                               "characters)",
                               value);
        c.kind = S_COND_NODE;
    }
    if (self->n >= S_FILTER_MAX)
        return ms_diag_set_code(diag, MS_ERR_RANGE, name,
                                "more than %d filters", S_FILTER_MAX);
    c.value = strdup(value);
    c.key = c.kind == S_COND_CONFIG ? strdup(name + 7) : NULL;
    if (!c.value || (c.kind == S_COND_CONFIG && !c.key)) {
        free(c.value);
        free(c.key);
        return MS_ERR_NOMEM;
    }
    if (c.kind == S_COND_NODE)
        for (char *p = c.value; *p; p++)
            *p = (char) tolower((unsigned char) *p);
    self->conds[self->n++] = c;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Conditions held.

size_t
ms_api_filter_size(const ms_api_filter_t *self)
{
    return self->n;
}

//  --------------------------------------------------------------------------
//  A number written in TEXT[0 .. n) into *out; false when it is not one.

static bool
s_number(const char *text, size_t n, double *out)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return false;
    memcpy(buf, text, n);
    buf[n] = 0;
    char *end = NULL;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v) || isspace((unsigned char) buf[0]))
        return false;
    *out = v;
    return true;
}

//  --------------------------------------------------------------------------
//  Whether a scalar JSON value equals TEXT[0 .. n): a number numerically,
//  a string exactly, true/false/null by name.

static bool
s_scalar_equal(const json_t *v, const char *text, size_t n)
{
    double x;
    switch (json_typeof(v)) {
    case JSON_INTEGER:
    case JSON_REAL:
        return s_number(text, n, &x) && x == json_number_value(v);
    case JSON_STRING:
        return json_string_length(v) == n &&
               memcmp(json_string_value(v), text, n) == 0;
    case JSON_TRUE:
        return n == 4 && memcmp(text, "true", 4) == 0;
    case JSON_FALSE:
        return n == 5 && memcmp(text, "false", 5) == 0;
    case JSON_NULL:
        return n == 4 && memcmp(text, "null", 4) == 0;
    default:
        return false;
    }
}

//  --------------------------------------------------------------------------
//  Whether a config value equals the text asked. A list is written as
//  JSON ("[100,10]") or as CSV writes it ("100;10").

static bool
s_config_equal(const json_t *v, const char *text)
{
    if (!v)
        return false;
    if (!json_is_array(v))
        return s_scalar_equal(v, text, strlen(text));
    size_t len = strlen(text);
    const char *p = text;
    char sep = ';';
    if (len >= 2 && text[0] == '[' && text[len - 1] == ']') {
        p = text + 1;
        len -= 2;
        sep = ',';
    }
    const char *end = p + len;
    size_t i = 0;
    if (len == 0)
        return json_array_size(v) == 0;
    for (;;) {
        const char *q = memchr(p, sep, (size_t) (end - p));
        const char *stop = q ? q : end;
        const char *a = p, *b = stop;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        if (b - a >= 2 && *a == '"' && b[-1] == '"') { // JSON string
            a++;
            b--;
        }
        json_t *item = json_array_get(v, i++);
        if (!item || json_is_array(item) ||
            !s_scalar_equal(item, a, (size_t) (b - a)))
            return false;
        if (!q)
            break;
        p = q + 1;
    }
    return i == json_array_size(v);
}

//  --------------------------------------------------------------------------
//  Whether a row meets every condition.

bool
ms_api_filter_match(const ms_api_filter_t *self, const json_t *row)
{
    for (size_t i = 0; i < self->n; i++) {
        const s_cond_t *c = &self->conds[i];
        const char *text = NULL;
        switch (c->kind) {
        case S_COND_STATUS:
            text = json_string_value(json_object_get(row, "status"));
            if (!text || strcmp(text, c->value) != 0)
                return false;
            break;
        case S_COND_VERDICT:
            text = json_string_value(json_object_get(row, "verdict"));
            if (!text || strcmp(text, c->value) != 0)
                return false;
            break;
        case S_COND_NODE:
            text = json_string_value(json_object_get(row, "node_id"));
            if (!text || strncmp(text, c->value, strlen(c->value)) != 0)
                return false;
            break;
        case S_COND_CONFIG:
            if (!s_config_equal(
                    json_object_get(json_object_get(row, "config"), c->key),
                    c->value))
                return false;
            break;
        }
    }
    return true;
}

//  One walk over the query parameters into a filter.
typedef struct {
    ms_api_filter_t *filter; // being filled
    int rc;                  // first error
    ms_diag_t *diag;         // its detail
} s_filter_walk_t;

static enum MHD_Result
s_filter_one(void *cls, enum MHD_ValueKind kind, const char *key,
             const char *value)
{
    (void) kind;
    s_filter_walk_t *w = cls;
    int rc = ms_api_filter_add(w->filter, key, value, w->diag);
    if (rc == MS_ERR_NOTFOUND)
        return MHD_YES; // another parameter
    if (rc != MS_OK) {
        w->rc = rc;
        return MHD_NO;
    }
    return MHD_YES;
}

//  --------------------------------------------------------------------------
//  The counts object of a stored sweep. In a pool, tasks that peers run
//  now (live leases in this node's view) are pending in the store: the
//  running_elsewhere hook moves them to running, so every node shows the
//  pool-wide state.

static json_t *
s_counts_json(ms_api_t *self, const ms_store_sweep_t *sweep)
{
    uint64_t counts[MS_TASK_N_STATES];
    memcpy(counts, sweep->counts, sizeof counts);
    if (self->hooks.running_elsewhere) {
        int64_t n =
            self->hooks.running_elsewhere(self->hooks.arg, sweep->sweep_id);
        uint64_t moved = n > 0 ? (uint64_t) n : 0;
        if (moved > counts[MS_TASK_PENDING])
            moved = counts[MS_TASK_PENDING];
        counts[MS_TASK_PENDING] -= moved;
        counts[MS_TASK_RUNNING] += moved;
    }
    json_t *obj = json_object();
    for (int s = 0; obj && s < MS_TASK_N_STATES; s++)
        json_object_set_new(obj, ms_task_state_name((ms_task_state_t) s),
                            json_integer((json_int_t) counts[s]));
    return obj;
}

//  --------------------------------------------------------------------------
//  The summary object of a stored sweep (list and detail views).

static json_t *
s_sweep_json(ms_api_t *self, const ms_store_sweep_t *sweep)
{
    ms_hash_t h;
    memcpy(h.bytes, sweep->sweep_id, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    // The stored spec lists every task's config (megabytes for a big
    // sweep): only the few top-level members shown are parsed.
    json_t *spec = json_object();
    static const char *const shown[] = {"name", "method", "dataset", "metric"};
    for (size_t i = 0; spec && i < sizeof shown / sizeof *shown; i++) {
        const char *v;
        size_t n;
        json_error_t err;
        if (ms_results_row_member(sweep->spec_json, sweep->spec_len, shown[i],
                                  &v, &n) == MS_OK)
            json_object_set_new(spec, shown[i],
                                json_loadb(v, n, JSON_DECODE_ANY, &err));
    }
    json_t *obj = json_pack(
        "{s:s, s:O, s:O, s:O, s:s, s:i, s:I, s:o, s:I, s:I}", "sweep_id", hex,
        "name",
        json_object_get(spec, "name") ? json_object_get(spec, "name")
                                      : json_null(),
        "method",
        json_object_get(spec, "method") ? json_object_get(spec, "method")
                                        : json_null(),
        "dataset",
        json_object_get(spec, "dataset") ? json_object_get(spec, "dataset")
                                         : json_null(),
        "state", ms_sweep_state_name(sweep->state), "priority",
        (int) sweep->priority, "n_tasks", (json_int_t) sweep->n_tasks, "counts",
        s_counts_json(self, sweep), "created_at_ms",
        (json_int_t) sweep->created_at_ms, "updated_at_ms",
        (json_int_t) sweep->updated_at_ms);
    if (obj && spec) {
        json_t *metric = json_object_get(spec, "metric");
        if (metric)
            json_object_set(obj, "metric", metric);
    }
    json_decref(spec);
    return obj;
}

//  --------------------------------------------------------------------------
//  Append one sweep to a list.

//  A sweep list being built.
typedef struct {
    ms_api_t *api; // the API
    json_t *list;  // the array
} s_list_t;

static int
s_list_one(void *arg, const ms_store_sweep_t *sweep)
{
    s_list_t *l = arg;
    json_t *obj = s_sweep_json(l->api, sweep);
    if (!obj)
        return MS_ERR_NOMEM;
    json_array_append_new(l->list, obj);
    return 0;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps

static enum MHD_Result
s_get_sweeps(ms_api_t *self, struct MHD_Connection *conn)
{
    json_t *list = json_array();
    if (!list)
        return s_reply_error(self, conn, 500, "out of memory");
    s_list_t l = {.api = self, .list = list};
    int rc = ms_store_list_sweeps(self->hooks.store, s_list_one, &l);
    if (rc != MS_OK) {
        json_decref(list);
        return s_reply_error(self, conn, 500, "store: %s", ms_strerror(rc));
    }
    return s_reply_json(self, conn, MHD_HTTP_OK,
                        json_pack("{s:o}", "sweeps", list));
}

//  Tasks by state over every sweep.
typedef struct {
    uint64_t counts[MS_TASK_N_STATES]; // sums
    uint64_t n_sweeps;                 // sweeps seen
} s_totals_t;

//  --------------------------------------------------------------------------
//  Add one sweep's counts.

static int
s_total_one(void *arg, const ms_store_sweep_t *sweep)
{
    s_totals_t *t = arg;
    for (int s = 0; s < MS_TASK_N_STATES; s++)
        t->counts[s] += sweep->counts[s];
    t->n_sweeps++;
    return 0;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/status

static enum MHD_Result
s_get_status(ms_api_t *self, struct MHD_Connection *conn)
{
    json_t *status = self->hooks.status(self->hooks.arg);
    if (!status)
        return s_reply_error(self, conn, 500, "out of memory");
    s_totals_t t = {0};
    ms_store_list_sweeps(self->hooks.store, s_total_one, &t);
    json_t *tasks = json_object();
    for (int s = 0; tasks && s < MS_TASK_N_STATES; s++)
        json_object_set_new(tasks, ms_task_state_name((ms_task_state_t) s),
                            json_integer((json_int_t) t.counts[s]));
    json_object_set_new(status, "tasks", tasks);
    json_object_set_new(status, "sweeps",
                        json_integer((json_int_t) t.n_sweeps));
    json_object_set_new(status, "api", json_string(self->address));
    return s_reply_json(self, conn, MHD_HTTP_OK, status);
}

//  --------------------------------------------------------------------------
//  /metrics (docs/METRICS.md). Every figure comes from a counter or a
//  snapshot kept elsewhere, never from a walk of the store's rows: tasks
//  and sweeps by state from the sweeps' headers (one read per sweep),
//  verdicts from the store's verdict counts (one read), the rest from
//  the node's status object (its snapshots, refreshed by the node loop
//  every 200 ms) and the store's counters.

//  --------------------------------------------------------------------------
//  Declare a family and add one sample (labels: up to two pairs, NULL for
//  none). A refused sample (a second with the same labels) is dropped:
//  the page stays valid.

static void
s_prom(ms_prom_t *p, const char *name, ms_prom_type_t type, const char *help,
       double value, const char *k1, const char *v1, const char *k2,
       const char *v2)
{
    if (ms_prom_family(p, name, type, help) != MS_OK)
        return;
    if (!k1)
        ms_prom_sample(p, name, value, NULL);
    else if (!k2)
        ms_prom_sample(p, name, value, k1, v1, NULL);
    else
        ms_prom_sample(p, name, value, k1, v1, k2, v2, NULL);
}

//  --------------------------------------------------------------------------
//  A number of a JSON object (0 when missing or not a number).

static double
s_num(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

//  Tasks and sweeps by state over every sweep (sweep headers only).
typedef struct {
    uint64_t tasks[MS_TASK_N_STATES];   // tasks per ms_task_state_t
    uint64_t sweeps[MS_SWEEP_N_STATES]; // sweeps per ms_sweep_state_t
} s_by_state_t;

//  --------------------------------------------------------------------------
//  Add one sweep.

static int
s_by_state_one(void *arg, const ms_store_sweep_t *sweep)
{
    s_by_state_t *t = arg;
    for (int s = 0; s < MS_TASK_N_STATES; s++)
        t->tasks[s] += sweep->counts[s];
    if ((unsigned) sweep->state < MS_SWEEP_N_STATES)
        t->sweeps[sweep->state]++;
    return 0;
}

//  --------------------------------------------------------------------------
//  The pool's figures: the node's pool_counters (each printed as its line
//  of MS_METRICS_LIST says, ms_metrics.h) and its labelled "metrics".

static void
s_metrics_pool(ms_prom_t *p, const json_t *st)
{
    ms_metrics_prom(json_object_get(st, "pool_counters"), p);
    const char *key;
    json_t *value;
    const json_t *m = json_object_get(st, "metrics");
    // Gossip messages and bytes by direction and message type.
    const json_t *g = json_object_get(m, "gossip");
    static const char *dirs[] = {"sent", "received"};
    for (int d = 0; g && d < 2; d++) {
        const json_t *dir = json_object_get(g, dirs[d]);
        json_t *kind;
        json_object_foreach((json_t *) dir, key, kind)
        {
            s_prom(p, "meshsweep_gossip_messages_total", MS_PROM_COUNTER,
                   "Gossip messages, by direction and message type.",
                   s_num(kind, "messages"), "direction", dirs[d], "type", key);
            s_prom(p, "meshsweep_gossip_bytes_total", MS_PROM_COUNTER,
                   "Gossip bytes (fixed fields, payloads and signatures), by "
                   "direction and message type.",
                   s_num(kind, "bytes"), "direction", dirs[d], "type", key);
        }
    }
    json_object_foreach(json_object_get(m, "rejected"), key, value)
        s_prom(p, "meshsweep_rejected_messages_total", MS_PROM_COUNTER,
               "Messages from peers refused, by reason.",
               json_number_value(value), "reason", key, NULL, NULL);
    // Peers by state, each peer once (revoked, quarantined, then its
    // liveness), so that they sum to the peers this node knows.
    json_object_foreach(json_object_get(m, "peer_states"), key, value)
        s_prom(p, "meshsweep_peers", MS_PROM_GAUGE,
               "Peers this node knows, by state (each peer once: revoked, "
               "else quarantined, else alive, suspect or dead).",
               json_number_value(value), "state", key, NULL, NULL);
    json_object_foreach(json_object_get(m, "reevaluations"), key, value)
        s_prom(p, "meshsweep_reevaluations_total", MS_PROM_COUNTER,
               "Re-evaluations this node published, by outcome (agree: "
               "within the sweep's tolerances of the result's metrics).",
               json_number_value(value), "outcome", key, NULL, NULL);
    if (json_object_get(m, "tasks_completed_total")) {
        s_prom(p, "meshsweep_tasks_completed_total", MS_PROM_COUNTER,
               "Tasks of this store that reached done or failed since the "
               "node started (any node's results, as they arrive here).",
               s_num(m, "tasks_completed_total"), NULL, NULL, NULL, NULL);
        s_prom(p, "meshsweep_tasks_per_second", MS_PROM_GAUGE,
               "Tasks completed per second over the last "
               "meshsweep_tasks_per_second_window_seconds (60 s at most).",
               s_num(m, "tasks_per_second"), NULL, NULL, NULL, NULL);
        s_prom(p, "meshsweep_tasks_per_second_window_seconds", MS_PROM_GAUGE,
               "Seconds meshsweep_tasks_per_second is measured over.",
               s_num(m, "tasks_per_second_window_seconds"), NULL, NULL, NULL,
               NULL);
    }
    // Verification standing of this node and its peers (stratum 1).
    const json_t *ver = json_object_get(st, "verification");
    const json_t *node;
    size_t i;
    json_array_foreach(json_object_get(ver, "nodes"), i, node)
    {
        const char *id = json_string_value(json_object_get(node, "node"));
        if (!id)
            continue;
        s_prom(p, "meshsweep_node_counted_results", MS_PROM_GAUGE,
               "Counted results of a node in this store's verdicts.",
               s_num(node, "counted"), "node", id, NULL, NULL);
        s_prom(p, "meshsweep_node_strikes", MS_PROM_GAUGE,
               "Strikes of a node in this store's verdicts.",
               s_num(node, "strikes"), "node", id, NULL, NULL);
        s_prom(p, "meshsweep_node_quarantined", MS_PROM_GAUGE,
               "1 when this store's verdicts quarantine a node.",
               json_is_true(json_object_get(node, "quarantined")) ? 1 : 0,
               "node", id, NULL, NULL);
    }
    if (ver) {
        s_prom(p, "meshsweep_pool_operators", MS_PROM_GAUGE,
               "Operators in the pool as this node sees it (itself and its "
               "live peers).",
               s_num(ver, "pool_operators"), NULL, NULL, NULL, NULL);
        s_prom(p, "meshsweep_results_held", MS_PROM_GAUGE,
               "Own results held back until their reveal.",
               s_num(ver, "results_held"), NULL, NULL, NULL, NULL);
        s_prom(p, "meshsweep_reveals_total", MS_PROM_COUNTER,
               "Own results revealed after their commit.",
               s_num(ver, "reveals_total"), NULL, NULL, NULL, NULL);
    }
}

//  --------------------------------------------------------------------------
//  Write the whole page into P.

static void
s_metrics_write(ms_api_t *self, ms_prom_t *p, const json_t *st)
{
    const char *id = json_string_value(json_object_get(st, "node_id"));
    const char *version = json_string_value(json_object_get(st, "version"));
    const char *pool = json_string_value(json_object_get(st, "pool_id"));
    s_prom(p, "meshsweep_node_info", MS_PROM_GAUGE,
           "Always 1; the labels name this node and its version.", 1, "node_id",
           id ? id : "", "version", version ? version : "");
    if (pool)
        s_prom(p, "meshsweep_pool_info", MS_PROM_GAUGE,
               "Always 1; the label names the pool this node is linked to.", 1,
               "pool_id", pool, NULL, NULL);
    s_by_state_t t = {0};
    ms_store_list_sweeps(self->hooks.store, s_by_state_one, &t);
    for (int s = 0; s < MS_TASK_N_STATES; s++)
        s_prom(p, "meshsweep_tasks", MS_PROM_GAUGE,
               "Tasks in this node's store, by state.", (double) t.tasks[s],
               "state", ms_task_state_name((ms_task_state_t) s), NULL, NULL);
    for (int s = 0; s < MS_SWEEP_N_STATES; s++)
        s_prom(p, "meshsweep_sweeps", MS_PROM_GAUGE,
               "Sweeps in this node's store, by state.", (double) t.sweeps[s],
               "state", ms_sweep_state_name((ms_sweep_state_t) s), NULL, NULL);
    uint64_t vc[MS_STORE_VERDICT_STATES];
    if (ms_store_verdict_counts(self->hooks.store, vc) == MS_OK)
        for (int s = 0; s < MS_STORE_VERDICT_STATES; s++)
            s_prom(p, "meshsweep_verdicts", MS_PROM_GAUGE,
                   "Tasks with a counted result in this node's store, by "
                   "verdict.",
                   (double) vc[s], "state",
                   ms_verdict_state_name((ms_verdict_state_t) s), NULL, NULL);
    const struct {
        const char *name, *key, *help;
        ms_prom_type_t type;
    } fields[] = {
        {"meshsweep_tasks_trained_total", "tasks_trained_total",
         "Training results stored by this node since it started.",
         MS_PROM_COUNTER},
        {"meshsweep_training_seconds_total", "training_seconds_total",
         "Seconds of training behind those results.", MS_PROM_COUNTER},
        {"meshsweep_worker_crashes_total", "worker_crashes_total",
         "Worker processes that died.", MS_PROM_COUNTER},
        {"meshsweep_workers", "workers", "Worker processes.", MS_PROM_GAUGE},
        {"meshsweep_workers_busy", "workers_busy", "Workers running a task.",
         MS_PROM_GAUGE},
        {"meshsweep_store_bytes", "store_bytes",
         "Size of the store's data file.", MS_PROM_GAUGE},
        {"meshsweep_uptime_seconds", "uptime_seconds",
         "Seconds since the node started.", MS_PROM_GAUGE},
        {"meshsweep_pauses_total", "pauses_total",
         "Times an idle_only node paused for the machine's owner.",
         MS_PROM_COUNTER},
        {"meshsweep_pause_releases_total", "pause_releases_total",
         "Claims released because a pause outlasted max_pause_s.",
         MS_PROM_COUNTER},
    };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        s_prom(p, fields[i].name, fields[i].type, fields[i].help,
               s_num(st, fields[i].key), NULL, NULL, NULL, NULL);
    s_prom(p, "meshsweep_paused", MS_PROM_GAUGE,
           "1 while an idle_only node is paused for the machine's owner, "
           "else 0.",
           json_is_true(json_object_get(st, "paused")) ? 1 : 0, NULL, NULL,
           NULL, NULL);
    s_prom(p, "meshsweep_http_requests_total", MS_PROM_COUNTER,
           "HTTP requests answered (this one included).",
           (double) atomic_load(&self->n_requests) + 1, NULL, NULL, NULL, NULL);
    s_prom(p, "meshsweep_rejected_requests_total", MS_PROM_COUNTER,
           "HTTP requests answered with an error status.",
           (double) atomic_load(&self->n_rejected), NULL, NULL, NULL, NULL);
    ms_store_stats_t ss;
    ms_store_stats(self->hooks.store, &ss);
    s_prom(p, "meshsweep_store_commits_total", MS_PROM_COUNTER,
           "Store write transactions committed.", (double) ss.n_commits, NULL,
           NULL, NULL, NULL);
    s_prom(p, "meshsweep_store_map_bytes", MS_PROM_GAUGE,
           "Store map size (the most the data file may grow to now).",
           (double) ss.map_size_bytes, NULL, NULL, NULL, NULL);
    s_prom(p, "meshsweep_store_map_grows_total", MS_PROM_COUNTER,
           "Store map doublings.", (double) ss.n_map_grows, NULL, NULL, NULL,
           NULL);
    s_prom(p, "meshsweep_store_stale_readers_total", MS_PROM_COUNTER,
           "Stale store readers cleared.", (double) ss.n_stale_readers, NULL,
           NULL, NULL, NULL);
    s_metrics_pool(p, st);
}

//  --------------------------------------------------------------------------
//  GET /metrics

static enum MHD_Result
s_get_metrics(ms_api_t *self, struct MHD_Connection *conn)
{
    json_t *st = self->hooks.status(self->hooks.arg);
    ms_prom_t *p = ms_prom_new();
    char *text = NULL;
    size_t len = 0;
    if (p) {
        s_metrics_write(self, p, st);
        text = ms_prom_text(p, &len);
    }
    ms_prom_destroy(&p);
    json_decref(st);
    if (!text)
        return s_reply_error(self, conn, 500, "out of memory");
    enum MHD_Result r =
        s_reply(self, conn, MHD_HTTP_OK,
                "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
    return r;
}

//  --------------------------------------------------------------------------
//  POST /api/v1/sweeps

static enum MHD_Result
s_post_sweeps(ms_api_t *self, struct MHD_Connection *conn, s_request_t *req)
{
    if (req->too_large)
        return s_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                             "body: larger than %u bytes", MS_API_MAX_BODY);
    if (req->len == 0)
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "body: empty (send the sweep spec as YAML or "
                             "JSON)");
    // ?priority=N (meshsweep submit --priority): set after the
    // submission, as POST /sweeps/{id}/control would.
    const char *prio_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "priority");
    long priority = 0;
    if (prio_text) {
        char *end = NULL;
        errno = 0;
        priority = strtol(prio_text, &end, 10);
        if (!*prio_text || *end || errno || priority < -1000000 ||
            priority > 1000000)
            return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                 "priority: '%.64s' is not a whole number in "
                                 "-1000000..1000000",
                                 prio_text);
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char *summary = NULL;
    const char *files =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "files");
    int rc = self->hooks.submit(self->hooks.arg, req->body, req->len, files,
                                &summary, &diag);
    if (rc != MS_OK) // a missing dataset is a bad request here, not a 404
        return s_reply_diag(self, conn,
                            rc == MS_ERR_NOTFOUND ? MHD_HTTP_BAD_REQUEST
                                                  : s_status_of(rc),
                            &diag, rc);
    json_error_t err;
    json_t *sum = json_loads(summary, 0, &err);
    free(summary);
    if (!sum)
        return s_reply_error(self, conn, 500, "out of memory");
    unsigned status = json_is_true(json_object_get(sum, "existed"))
                          ? MHD_HTTP_OK
                          : MHD_HTTP_CREATED;
    ms_hash_t id;
    const char *id_hex = json_string_value(json_object_get(sum, "sweep_id"));
    if (prio_text && self->hooks.control && id_hex &&
        ms_hash_from_hex(id_hex, &id) == MS_OK) {
        ms_diag_clear(&diag);
        rc = self->hooks.control(self->hooks.arg, &id, "priority",
                                 (int32_t) priority, &diag);
        if (rc != MS_OK) {
            json_decref(sum);
            return s_reply_diag(self, conn,
                                rc == MS_ERR_CONFLICT ? MHD_HTTP_CONFLICT
                                                      : s_status_of(rc),
                                &diag, rc);
        }
        json_object_set_new(sum, "priority", json_integer(priority));
    }
    return s_reply_json(self, conn, status, sum);
}

//  --------------------------------------------------------------------------
//  POST /api/v1/authority

static enum MHD_Result
s_post_authority(ms_api_t *self, struct MHD_Connection *conn, s_request_t *req)
{
    if (!self->hooks.authority)
        return s_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                             "authority: not served by this node");
    if (req->too_large)
        return s_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                             "body: larger than %u bytes", MS_API_MAX_BODY);
    if (req->len == 0)
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
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
                              : s_status_of(rc);
        return s_reply_diag(self, conn, status, &diag, rc);
    }
    json_error_t err;
    json_t *sum = summary ? json_loads(summary, 0, &err) : NULL;
    free(summary);
    if (!sum)
        return s_reply_error(self, conn, 500, "out of memory");
    return s_reply_json(self, conn, MHD_HTTP_OK, sum);
}

//  Sum of train_seconds and rows.
typedef struct {
    double seconds; // train_seconds summed
    int64_t n_rows; // rows seen
} s_sum_t;

//  --------------------------------------------------------------------------
//  Add one row to the sums.

static int
s_sum_row(void *arg, const char *json, size_t n)
{
    s_sum_t *sum = arg;
    // One member of each row: scanned for, not parsed (the rows of a
    // big sweep are megabytes).
    const char *v;
    size_t len;
    if (ms_results_row_member(json, n, "train_seconds", &v, &len) == MS_OK &&
        len > 0 && len < 64 && (isdigit((unsigned char) v[0]) || v[0] == '-')) {
        char text[64];
        memcpy(text, v, len);
        text[len] = 0;
        char *end = NULL;
        double x = strtod(text, &end);
        if (end && *end == 0 && isfinite(x))
            sum->seconds += x;
    }
    sum->n_rows++;
    return 0;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps/{id}

static enum MHD_Result
s_get_sweep(ms_api_t *self, struct MHD_Connection *conn, const ms_hash_t *id)
{
    ms_store_sweep_t *sweep = NULL;
    int rc = ms_store_get_sweep(self->hooks.store, id->bytes, &sweep);
    if (rc != MS_OK)
        return s_reply_error(self, conn, s_status_of(rc), "sweep: %s",
                             ms_strerror(rc));
    json_t *obj = s_sweep_json(self, sweep);
    s_sum_t sum = {0};
    ms_store_results_by_sweep(self->hooks.store, id->bytes, 0, 0, s_sum_row,
                              &sum, NULL);
    int64_t now_ms = ms_clock_wall_ms();
    int64_t end_ms =
        sweep->state == MS_SWEEP_ACTIVE ? now_ms : sweep->updated_at_ms;
    double elapsed = (double) (end_ms - sweep->created_at_ms) / 1000.0;
    double finished =
        (double) (sweep->counts[MS_TASK_DONE] + sweep->counts[MS_TASK_FAILED]);
    json_t *tp = json_pack(
        "{s:f, s:f, s:f, s:f}", "elapsed_seconds", elapsed > 0 ? elapsed : 0.0,
        "train_seconds", sum.seconds, "tasks_per_hour",
        elapsed > 0 ? finished * 3600.0 / elapsed : 0.0, "seconds_per_task",
        finished > 0 ? sum.seconds / finished : 0.0);
    if (obj)
        json_object_set_new(obj, "throughput", tp);
    else
        json_decref(tp);
    ms_store_sweep_destroy(&sweep);
    return s_reply_json(self, conn, MHD_HTTP_OK, obj);
}

//  --------------------------------------------------------------------------
//  A page of rows that meet FILTER: pages of ms_results_page_ex are read
//  and filtered until LIMIT rows are kept (limit <= 0: every row) or the
//  sweep ends. A page ends at a task boundary as unfiltered ones do;
//  *next (when not NULL) is the index of the last task looked at, or NULL
//  at the end.

static int
s_results_filtered(ms_api_t *self, const ms_hash_t *id, unsigned flags,
                   const char *const *keep, const ms_api_filter_t *filter,
                   const char *after, int limit, json_t **rows, char **next,
                   ms_diag_t *diag)
{
    if (ms_api_filter_size(filter) == 0)
        return ms_results_page_fields(self->hooks.store, id, flags, keep, after,
                                      limit, rows, next, diag);
    *rows = NULL;
    if (next)
        *next = NULL;
    json_t *kept = json_array();
    char *cursor = after && *after ? strdup(after) : NULL;
    if (!kept || (after && *after && !cursor)) {
        json_decref(kept);
        return MS_ERR_NOMEM;
    }
    int rc = MS_OK;
    for (;;) {
        size_t have = json_array_size(kept);
        int want = limit > 0 ? limit - (int) have : 0;
        if (limit > 0 && want < 256)
            want = 256; // read in chunks; cut at a task boundary below
        json_t *page = NULL;
        char *page_next = NULL;
        rc = ms_results_page_fields(self->hooks.store, id, flags, keep, cursor,
                                    want, &page, limit > 0 ? &page_next : NULL,
                                    diag);
        if (rc != MS_OK)
            break;
        size_t i;
        json_t *row;
        const char *prev_task = NULL;
        bool cut = false;
        json_array_foreach(page, i, row)
        {
            const char *task =
                json_string_value(json_object_get(row, "task_id"));
            if (limit > 0 && json_array_size(kept) >= (size_t) limit &&
                prev_task && task && strcmp(task, prev_task) != 0) {
                // Full, and a new task starts: the cursor is the index of
                // the task before it.
                ms_hash_t tid;
                ms_store_task_t *t = NULL;
                if (ms_hash_from_hex(prev_task, &tid) == MS_OK &&
                    ms_store_get_task(self->hooks.store, tid.bytes, &t) ==
                        MS_OK) {
                    char text[24];
                    snprintf(text, sizeof text, "%" PRIu32, t->index);
                    ms_store_task_destroy(&t);
                    free(page_next);
                    page_next = strdup(text);
                    cut = true;
                    break;
                }
            }
            if (ms_api_filter_match(filter, row))
                json_array_append(kept, row);
            prev_task = task;
        }
        json_decref(page);
        free(cursor);
        cursor = page_next;
        if (!cursor || cut ||
            (limit > 0 && json_array_size(kept) >= (size_t) limit))
            break;
    }
    if (rc != MS_OK) {
        free(cursor);
        json_decref(kept);
        return rc;
    }
    if (next)
        *next = cursor;
    else
        free(cursor);
    *rows = kept;
    return MS_OK;
}

#define S_FIELDS_MAX 32 // names in one ?fields=

//  A parsed ?fields=: the names asked (pointers into text), and the
//  members to parse (those, plus what the filters read).
typedef struct {
    char text[1024];                     // the list, split in place
    const char *names[S_FIELDS_MAX + 1]; // asked, NULL-terminated
    const char *parse[S_FIELDS_MAX + 4]; // to parse, NULL-terminated
    size_t n;                            // names asked
} s_fields_t;

//  --------------------------------------------------------------------------
//  Parse ?fields=a,b,c into F: every name must be a row member (unknown,
//  empty or repeated names, or too many: MS_ERR_INVALID with diag).

static int
s_fields_parse(const char *list, s_fields_t *f, ms_diag_t *diag)
{
    memset(f, 0, sizeof *f);
    if (strlen(list) >= sizeof f->text)
        return ms_diag_set(diag, "fields", "longer than %zu characters",
                           sizeof f->text - 1);
    snprintf(f->text, sizeof f->text, "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(f->text, ",", &save); t;
         t = strtok_r(NULL, ",", &save)) {
        bool known = false;
        for (size_t i = 0; ms_results_row_members[i] && !known; i++)
            known = strcmp(ms_results_row_members[i], t) == 0;
        if (!known) {
            char names[600] = "";
            size_t len = 0;
            for (size_t i = 0; ms_results_row_members[i]; i++)
                len +=
                    (size_t) snprintf(names + len, sizeof names - len, "%s%s",
                                      i ? ", " : "", ms_results_row_members[i]);
            return ms_diag_set(diag, "fields",
                               "unknown field '%.64s' (a row's fields: %s)", t,
                               names);
        }
        for (size_t i = 0; i < f->n; i++)
            if (strcmp(f->names[i], t) == 0)
                return ms_diag_set(diag, "fields", "'%.64s' named twice", t);
        if (f->n == S_FIELDS_MAX)
            return ms_diag_set(diag, "fields", "more than %d names",
                               S_FIELDS_MAX);
        f->names[f->n] = t;
        f->parse[f->n] = t;
        f->n++;
    }
    if (f->n == 0)
        return ms_diag_set(diag, "fields",
                           "empty (name a row's fields, "
                           "comma-separated)");
    // The filters read status and config (the verdict is laid over).
    size_t k = f->n;
    f->parse[k++] = "status";
    f->parse[k++] = "config";
    f->parse[k] = NULL;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Keep only F's names in every row of ROWS (in place).

static int
s_fields_apply(json_t *rows, const s_fields_t *f)
{
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        json_t *slim = json_object();
        if (!slim)
            return MS_ERR_NOMEM;
        for (size_t k = 0; k < f->n; k++) {
            json_t *v = json_object_get(row, f->names[k]);
            if (v)
                json_object_set(slim, f->names[k], v);
        }
        json_array_set_new(rows, i, slim);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps/{id}/results

//  --------------------------------------------------------------------------
//  The config keys of a sweep: those of its first task's config (every
//  task of a sweep has the same keys: a spec sweeps either hidden_sizes
//  or hidden_layers and width).

static int
s_first_config(void *arg, const ms_store_task_t *task)
{
    json_t **out = arg;
    *out = json_loadb(task->config_json, task->config_len, 0, NULL);
    return 1; // stop after the first task
}

//  One walk over the query parameters: the first config.KEY that the
//  sweep's configs lack.
typedef struct {
    const json_t *config; // the first task's config
    const char *missing;  // config.KEY (borrowed), or NULL
} s_config_walk_t;

static enum MHD_Result
s_config_one(void *cls, enum MHD_ValueKind kind, const char *key,
             const char *value)
{
    (void) kind;
    (void) value;
    s_config_walk_t *w = cls;
    if (strncmp(key, "config.", 7) == 0 &&
        !json_object_get(w->config, key + 7)) {
        w->missing = key;
        return MHD_NO;
    }
    return MHD_YES;
}

//  Answer 400 when a config.KEY filter names a key that no task of the
//  sweep has (a typo would otherwise match no row, silently); returns
//  true when it did.

static bool
s_bad_config_filter(ms_api_t *self, struct MHD_Connection *conn,
                    const ms_hash_t *id, enum MHD_Result *r)
{
    json_t *config = NULL;
    ms_store_tasks_by_sweep(self->hooks.store, id->bytes, s_first_config,
                            &config);
    if (!json_is_object(config)) { // no task (or unreadable): no check
        json_decref(config);
        return false;
    }
    s_config_walk_t w = {.config = config};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_config_one, &w);
    if (w.missing) {
        char keys[600] = "";
        size_t len = 0;
        const char *key;
        json_t *value;
        json_object_foreach(config, key, value)
        {
            if (len >= sizeof keys - 80)
                break;
            len += (size_t) snprintf(keys + len, sizeof keys - len, "%s%s",
                                     len ? ", " : "", key);
        }
        *r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                           "%.64s: no task of this sweep has config key "
                           "'%.56s' (its keys: %s)",
                           w.missing, w.missing + 7, keys);
    }
    json_decref(config);
    return w.missing != NULL;
}

static enum MHD_Result
s_get_results(ms_api_t *self, struct MHD_Connection *conn, const ms_hash_t *id)
{
    const char *format =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
    const char *limit_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "limit");
    const char *after =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "after");
    const char *all_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "all");
    bool all = false;
    if (all_text && (!strcmp(all_text, "1") || !strcmp(all_text, "true")))
        all = true;
    else if (all_text && strcmp(all_text, "0") && strcmp(all_text, "false"))
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "all: '%.64s' is not 0 or 1", all_text);
    unsigned flags = all ? MS_RESULTS_ALL : 0;
    const char *names[2] = {"verified", "by_task"};
    unsigned bits[2] = {MS_RESULTS_VERIFIED, MS_RESULTS_BY_TASK};
    for (int f = 0; f < 2; f++) {
        const char *t =
            MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, names[f]);
        if (t && (!strcmp(t, "1") || !strcmp(t, "true")))
            flags |= bits[f];
        else if (t && strcmp(t, "0") && strcmp(t, "false"))
            return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                 "%s: '%.64s' is not 0 or 1", names[f], t);
    }
    bool csv = false;
    if (format && strcmp(format, "csv") == 0)
        csv = true;
    else if (format && strcmp(format, "json") != 0)
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "format: unknown '%.64s' (expected json or csv)",
                             format);
    int limit = 1000;
    if (limit_text) {
        char *end = NULL;
        long v = strtol(limit_text, &end, 10);
        if (!*limit_text || *end || v < 1 || v > 100000)
            return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                 "limit: '%.64s' is not a number in "
                                 "1..100000",
                                 limit_text);
        limit = (int) v;
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    // ?fields=a,b,c: only those members of each row (JSON; CSV has its
    // fixed columns). The members not asked are not even parsed.
    const char *fields_text =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "fields");
    s_fields_t fields;
    if (fields_text && csv)
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "fields: for JSON only (CSV has fixed "
                             "columns)");
    if (fields_text && s_fields_parse(fields_text, &fields, &diag) != MS_OK)
        return s_reply_diag(self, conn, MHD_HTTP_BAD_REQUEST, &diag,
                            MS_ERR_INVALID);
    ms_api_filter_t *filter = ms_api_filter_new();
    if (!filter)
        return s_reply_error(self, conn, 500, "out of memory");
    s_filter_walk_t fw = {.filter = filter, .rc = MS_OK, .diag = &diag};
    MHD_get_connection_values(conn, MHD_GET_ARGUMENT_KIND, s_filter_one, &fw);
    if (fw.rc != MS_OK) {
        ms_api_filter_destroy(&filter);
        return s_reply_diag(self, conn,
                            fw.rc == MS_ERR_NOMEM ? 500 : MHD_HTTP_BAD_REQUEST,
                            &diag, fw.rc);
    }
    enum MHD_Result bad = MHD_NO;
    if (s_bad_config_filter(self, conn, id, &bad)) {
        ms_api_filter_destroy(&filter);
        return bad;
    }
    json_t *rows = NULL;
    char *next = NULL;
    int rc = s_results_filtered(
        self, id, flags, fields_text ? fields.parse : NULL, filter,
        csv ? NULL : after, csv ? 0 : limit, &rows, csv ? NULL : &next, &diag);
    ms_api_filter_destroy(&filter);
    if (rc == MS_OK && fields_text)
        rc = s_fields_apply(rows, &fields);
    if (rc != MS_OK) {
        json_decref(rows);
        free(next);
        return s_reply_diag(self, conn, s_status_of(rc), &diag, rc);
    }
    if (csv) {
        char *text = ms_results_format_csv(rows);
        json_decref(rows);
        if (!text)
            return s_reply_error(self, conn, 500, "out of memory");
        enum MHD_Result r =
            s_reply(self, conn, MHD_HTTP_OK, "text/csv; charset=utf-8", text,
                    strlen(text));
        free(text);
        return r;
    }
    json_t *page = json_pack("{s:o, s:o}", "rows", rows, "next",
                             next ? json_string(next) : json_null());
    free(next);
    return s_reply_json(self, conn, MHD_HTTP_OK, page);
}

/*  Analysis cache. A sweep's analysis is a function of its rows and
    verdicts, which change only when results, verdicts or task states do:
    the store's sweep generation (ms_store_sweep_generation) counts those
    changes. An answer is kept, as its JSON text, with the generation
    read before its rows were; a request whose generation is the same is
    answered from the text. Generation 0 (unknown) is never stored. At
    most S_ANALYSIS_CACHE answers (least recently used out); the
    computation runs outside the lock, so two first requests may both
    compute (the later one stores). */

//  --------------------------------------------------------------------------
//  The cached answer of (sweep, verified, query) at GENERATION, copied
//  (caller frees), or NULL.

static char *
s_cache_get(ms_api_t *self, const ms_hash_t *id, bool verified,
            const char *query, uint64_t generation, size_t *len)
{
    char *text = NULL;
    pthread_mutex_lock(&self->cache_mu);
    for (size_t i = 0; i < S_ANALYSIS_CACHE && !text; i++) {
        s_cached_t *c = &self->cache[i];
        if (c->generation != generation || c->verified != verified ||
            strcmp(c->query, query) != 0 ||
            memcmp(c->sweep_id, id->bytes, MS_HASH_BYTES) != 0)
            continue;
        text = malloc(c->len + 1);
        if (text) {
            memcpy(text, c->text, c->len + 1);
            *len = c->len;
            c->used = ++self->cache_tick;
        }
    }
    pthread_mutex_unlock(&self->cache_mu);
    return text;
}

//  --------------------------------------------------------------------------
//  Keep a copy of TEXT as the answer of (sweep, verified, query) at
//  GENERATION, in that key's slot or the least recently used one.

static void
s_cache_put(ms_api_t *self, const ms_hash_t *id, bool verified,
            const char *query, uint64_t generation, const char *text,
            size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, text, len + 1);
    pthread_mutex_lock(&self->cache_mu);
    s_cached_t *slot = NULL;
    for (size_t i = 0; i < S_ANALYSIS_CACHE; i++) {
        s_cached_t *c = &self->cache[i];
        if (c->generation && c->verified == verified &&
            strcmp(c->query, query) == 0 &&
            memcmp(c->sweep_id, id->bytes, MS_HASH_BYTES) == 0) {
            slot = c; // this key's older answer
            break;
        }
        if (!slot || c->used < slot->used)
            slot = c;
    }
    free(slot->text);
    memcpy(slot->sweep_id, id->bytes, MS_HASH_BYTES);
    slot->verified = verified;
    snprintf(slot->query, sizeof slot->query, "%s", query);
    slot->generation = generation;
    slot->text = copy;
    slot->len = len;
    slot->used = ++self->cache_tick;
    pthread_mutex_unlock(&self->cache_mu);
}

//  --------------------------------------------------------------------------
//  GET /api/v1/sweeps/{id}/analysis

static enum MHD_Result
s_get_analysis(ms_api_t *self, struct MHD_Connection *conn, const ms_hash_t *id)
{
    // ?verified=1: the analysis of the verified rows only (as the results
    // route's verified=1 and `meshsweep results --analyze --verified`).
    const char *t =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "verified");
    ms_analysis_options_t opts;
    ms_analysis_options_default(&opts);
    if (t && (!strcmp(t, "1") || !strcmp(t, "true")))
        opts.verified_only = true;
    else if (t && strcmp(t, "0") && strcmp(t, "false"))
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "verified: '%.64s' is not 0 or 1", t);
    // ?x=PARAM and ?metric=NAME (ms_analysis checks them against the rows
    // and its metric list; here only their length).
    const char *xq =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "x");
    const char *mq =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "metric");
    if ((xq && strlen(xq) > 64) || (mq && strlen(mq) > 64))
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "%s: longer than 64 characters",
                             xq && strlen(xq) > 64 ? "x" : "metric");
    char query[S_ANALYSIS_QUERY];
    snprintf(query, sizeof query, "%s|%s", xq ? xq : "", mq ? mq : "");
    // The generation first: rows read after it are at least that new.
    uint64_t gen = ms_store_sweep_generation(self->hooks.store, id->bytes);
    size_t len = 0;
    char *text =
        gen ? s_cache_get(self, id, opts.verified_only, query, gen, &len)
            : NULL;
    if (text) {
        enum MHD_Result r =
            s_reply(self, conn, MHD_HTTP_OK, "application/json", text, len);
        free(text);
        return r;
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    json_t *rows = NULL;
    // The sweep's metric (its spec's "metric", read without parsing the
    // task list); a sweep not found is answered by the rows' read below.
    json_t *spec_metric = NULL;
    ms_store_sweep_t *sweep = NULL;
    if (ms_store_get_sweep(self->hooks.store, id->bytes, &sweep) == MS_OK) {
        const char *v;
        size_t n;
        json_error_t err;
        if (ms_results_row_member(sweep->spec_json, sweep->spec_len, "metric",
                                  &v, &n) == MS_OK)
            spec_metric = json_loadb(v, n, JSON_DECODE_ANY, &err);
        ms_store_sweep_destroy(&sweep);
    }
    ms_analysis_options_metric(&opts, spec_metric, mq);
    opts.x = xq;
    // The members the analysis reads (ms_analysis.h); the rest of each
    // row (its curve above all) is not parsed, except for train_loss,
    // which a row has only in its curve.
    static const char *const keep[] = {"status",
                                       "counted",
                                       "config",
                                       "val_accuracy",
                                       "test_accuracy",
                                       "val_loss",
                                       "test_loss",
                                       "train_loss",
                                       "train_seconds",
                                       "params",
                                       "seconds_per_epoch",
                                       "fingerprint",
                                       "platform",
                                       NULL,
                                       NULL};
    const char *fields[sizeof keep / sizeof *keep];
    memcpy(fields, keep, sizeof keep);
    if (opts.metric && strcmp(opts.metric, "train_loss") == 0)
        fields[sizeof keep / sizeof *keep - 2] = "curve";
    int rc = ms_results_page_fields(
        self->hooks.store, id, opts.verified_only ? MS_RESULTS_VERIFIED : 0,
        fields, NULL, 0, &rows, NULL, &diag);
    if (rc != MS_OK) {
        json_decref(spec_metric);
        return s_reply_diag(self, conn, s_status_of(rc), &diag, rc);
    }
    json_t *analysis = NULL;
    rc = ms_analysis_compute(rows, &opts, &analysis, &diag);
    json_decref(rows);
    json_decref(spec_metric); // after the compute: opts.metric borrows it
    // A bad ?x= or ?metric= is the request's fault (400); a stored row
    // the analysis cannot read is 422.
    bool bad_query =
        strcmp(diag.where, "x") == 0 || strcmp(diag.where, "metric") == 0;
    if (rc != MS_OK)
        return s_reply_diag(self, conn,
                            rc == MS_ERR_NOMEM ? 500
                            : bad_query        ? 400
                                               : 422,
                            &diag, rc);
    text = ms_wire_canon_dump(analysis);
    if (!text)
        text = json_dumps(analysis, JSON_COMPACT);
    json_decref(analysis);
    if (!text)
        return s_reply_error(self, conn, 500, "out of memory");
    len = strlen(text);
    if (gen)
        s_cache_put(self, id, opts.verified_only, query, gen, text, len);
    enum MHD_Result r =
        s_reply(self, conn, MHD_HTTP_OK, "application/json", text, len);
    free(text);
    return r;
}

//  --------------------------------------------------------------------------
//  POST /api/v1/sweeps/{id}/control

static enum MHD_Result
s_post_control(ms_api_t *self, struct MHD_Connection *conn, s_request_t *req,
               const ms_hash_t *id)
{
    if (!self->hooks.control)
        return s_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                             "control: not served by this node");
    if (req->too_large)
        return s_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                             "body: larger than %u bytes", MS_API_MAX_BODY);
    json_error_t jerr;
    json_t *body = req->len ? json_loadb(req->body, req->len, 0, &jerr) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "body: expected a JSON object {\"action\": "
                             "\"cancel|pause|resume|priority\"}");
    }
    const char *action = json_string_value(json_object_get(body, "action"));
    json_t *pv = json_object_get(body, "priority");
    int32_t priority = 0;
    enum MHD_Result r;
    const char *key;
    json_t *value;
    json_object_foreach(body, key, value)
    {
        if (strcmp(key, "action") != 0 && strcmp(key, "priority") != 0) {
            r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                              "%.64s: unknown member of the control body "
                              "(action, priority)",
                              key);
            goto done;
        }
    }
    if (pv && action && strcmp(action, "priority") != 0) {
        r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                          "priority: only with \"action\": \"priority\"");
        goto done;
    }
    if (!action) {
        r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                          json_object_get(body, "action")
                              ? "action: must be a string (cancel, pause, "
                                "resume or priority)"
                              : "action: missing (cancel, pause, resume or "
                                "priority)");
        goto done;
    }
    if (strcmp(action, "priority") == 0) {
        if (!json_is_integer(pv) || json_integer_value(pv) < -1000000 ||
            json_integer_value(pv) > 1000000) {
            r = s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                              "priority: expected a whole number in "
                              "-1000000..1000000");
            goto done;
        }
        priority = (int32_t) json_integer_value(pv);
    }
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = self->hooks.control(self->hooks.arg, id, action, priority, &diag);
    if (rc != MS_OK) {
        r = s_reply_diag(self, conn,
                         rc == MS_ERR_CONFLICT ? MHD_HTTP_CONFLICT
                                               : s_status_of(rc),
                         &diag, rc);
        goto done;
    }
    ms_store_sweep_t *sweep = NULL;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(id, hex);
    json_t *ans = json_pack("{s:s, s:s}", "sweep_id", hex, "action", action);
    if (ans &&
        ms_store_get_sweep(self->hooks.store, id->bytes, &sweep) == MS_OK) {
        json_object_set_new(ans, "state",
                            json_string(ms_sweep_state_name(sweep->state)));
        json_object_set_new(ans, "priority", json_integer(sweep->priority));
        ms_store_sweep_destroy(&sweep);
    }
    r = ans ? s_reply_json(self, conn, MHD_HTTP_OK, ans)
            : s_reply_error(self, conn, 500, "out of memory");
done:
    json_decref(body);
    return r;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/peers

static enum MHD_Result
s_get_peers(ms_api_t *self, struct MHD_Connection *conn)
{
    json_t *peers =
        self->hooks.peers ? self->hooks.peers(self->hooks.arg) : json_array();
    if (!peers)
        return s_reply_error(self, conn, 500, "out of memory");
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
    return s_reply_json(self, conn, MHD_HTTP_OK, peers);
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

static enum MHD_Result
s_get_log(ms_api_t *self, struct MHD_Connection *conn, const char *hex)
{
    ms_hash_t id;
    size_t n_hex = strlen(hex);
    if (n_hex < MS_RESULTS_PREFIX_MIN || n_hex > MS_HASH_HEX_LEN ||
        strspn(hex, "0123456789abcdef") != n_hex)
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "/api/v1/logs/%.80s: not a node id (64 "
                             "lowercase hex characters, or a unique prefix "
                             "of %d or more)",
                             hex, MS_RESULTS_PREFIX_MIN);
    if (!self->hooks.store)
        return s_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
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
            return s_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
                                 "/api/v1/logs/%s: no node with this prefix "
                                 "in this node's log or peers",
                                 hex);
        if (f.n_found > 1)
            return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                 "/api/v1/logs/%s: prefix matches several "
                                 "nodes (give more characters)",
                                 hex);
        ms_hash_from_hex(f.found, &id);
    } else if (ms_hash_from_hex(hex, &id) != MS_OK)
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "/api/v1/logs/%.80s: not a node id", hex);
    s_log_view_t v = {.cut = json_array()};
    memcpy(v.node, id.bytes, MS_HASH_BYTES);
    if (!v.cut)
        return s_reply_error(self, conn, 500, "out of memory");
    int rc = ms_store_vector(self->hooks.store, s_log_one, &v);
    if (rc != MS_OK) {
        json_decref(v.cut);
        return s_reply_error(self, conn, 500, "logs: %s", ms_strerror(rc));
    }
    char node_hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, node_hex);
    json_t *doc = json_pack("{s:s, s:o}", "node", node_hex, "cut", v.cut);
    if (!doc)
        return s_reply_error(self, conn, 500, "out of memory");
    return s_reply_json(self, conn, MHD_HTTP_OK, doc);
}

//  --------------------------------------------------------------------------
//  GET /api/v1/events[?sweep=ID]: server-sent events (ms_events_serve),
//  resumed after Last-Event-ID (or ?last_event_id=N).

static enum MHD_Result
s_get_events(ms_api_t *self, struct MHD_Connection *conn)
{
    if (!self->hooks.events)
        return s_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                             "events: not served by this node");
    const char *sweep =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "sweep");
    ms_hash_t id;
    if (sweep) {
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_results_find_sweep(self->hooks.store, sweep, &id, &diag);
        if (rc != MS_OK)
            return s_reply_diag(self, conn, s_status_of(rc), &diag, rc);
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
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "%s: '%.64s' is not an event id (a decimal "
                             "number)",
                             what, last);
    int rc = ms_events_serve(self->hooks.events, conn, sweep ? id.bytes : NULL,
                             resume, last_id);
    if (rc == MS_ERR_RANGE)
        return s_reply_error(self, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                             "events: %d streams open already (the most); "
                             "try again later",
                             MS_EVENTS_DEFAULT_READERS);
    if (rc == MS_ERR_INTERRUPTED)
        return s_reply_error(self, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                             "events: the node is stopping");
    if (rc == MS_ERR_NOMEM)
        return s_reply_error(self, conn, 500, "out of memory");
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

static enum MHD_Result
s_put_blob(ms_api_t *self, struct MHD_Connection *conn, const char *hex,
           const char *method, s_request_t *req)
{
    if (hex && strcmp(method, "PUT") != 0)
        return s_not_allowed(self, conn, "/api/v1/blobs/{hash}", method, "PUT");
    if (!hex && strcmp(method, "POST") != 0)
        return s_not_allowed(self, conn, "/api/v1/blobs", method, "POST");
    if (!self->hooks.blob_put || !self->hooks.upload_dir)
        return s_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                             "this node takes no uploads");
    ms_hash_t hash;
    if (hex && (strlen(hex) != MS_HASH_HEX_LEN ||
                ms_hash_from_hex(hex, &hash) != MS_OK))
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "/api/v1/blobs/%.80s: not a BLAKE2b-256 hash (64 "
                             "lowercase hex characters)",
                             hex);
    if (req->too_large)
        return s_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                             "body: larger than %" PRIu64 " bytes "
                             "(max_dataset_bytes)",
                             self->hooks.max_upload_bytes);
    if (req->fd < 0 || req->write_error || !req->tmp_path)
        return s_reply_error(self, conn, 500, "cannot write the upload");
    if (close(req->fd) != 0) {
        req->fd = -1;
        return s_reply_error(self, conn, 500, "cannot write the upload");
    }
    req->fd = -1;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    char computed[MS_HASH_HEX_LEN + 1];
    if (!hex) {
        if (req->n_up == 0)
            return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                                 "body: empty (send the file's bytes)");
        if (ms_hash_file(req->tmp_path, &hash, &diag) != MS_OK)
            return s_reply_error(self, conn, 500, "cannot hash the upload");
        ms_hash_hex(&hash, computed);
        hex = computed;
    }
    char *tmp = req->tmp_path;
    req->tmp_path = NULL; // the hook consumes it
    int rc = self->hooks.blob_put(self->hooks.arg, &hash, tmp, &diag);
    free(tmp);
    if (rc != MS_OK)
        return s_reply_diag(self, conn,
                            rc == MS_ERR_STORE_FULL
                                ? MHD_HTTP_INSUFFICIENT_STORAGE
                                : s_status_of(rc),
                            &diag, rc);
    json_t *ok =
        json_pack("{s:s, s:I}", "hash", hex, "bytes", (json_int_t) req->n_up);
    if (!ok)
        return s_reply_error(self, conn, 500, "out of memory");
    return s_reply_json(self, conn, MHD_HTTP_CREATED, ok);
}

//  --------------------------------------------------------------------------
//  Start streaming an upload (PUT /api/v1/blobs/...) into a new file.

static void
s_upload_begin(ms_api_t *self, s_request_t *req)
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

static void
s_upload_write(ms_api_t *self, s_request_t *req, const char *data, size_t n)
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

//  ==========================================================================
//  Tasks and datasets

//  A task id prefix search.
typedef struct {
    ms_store_t *store;                // the store
    char prefix[MS_HASH_HEX_LEN + 1]; // lowercase hex prefix
    size_t n_prefix;                  // its length
    size_t n_found;                   // tasks matching
    ms_hash_t found;                  // the first one
} s_task_find_t;

static int
s_task_find_one(void *arg, const ms_store_task_t *task)
{
    s_task_find_t *f = arg;
    ms_hash_t id;
    memcpy(id.bytes, task->task_id, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, hex);
    if (strncmp(hex, f->prefix, f->n_prefix) == 0 && f->n_found++ == 0)
        f->found = id;
    return f->n_found > 1 ? 1 : 0; // two are enough to say "ambiguous"
}

static int
s_task_find_sweep(void *arg, const ms_store_sweep_t *sweep)
{
    s_task_find_t *f = arg;
    int rc =
        ms_store_tasks_by_sweep(f->store, sweep->sweep_id, s_task_find_one, f);
    return rc == 1 || f->n_found > 1 ? 1 : rc;
}

//  --------------------------------------------------------------------------
//  Resolve a task id: 64 hex, or a unique prefix of >= 12 (every task is
//  looked at: a read of the task table, fine for an interactive lookup).

static int
s_find_task(ms_store_t *store, const char *text, ms_hash_t *out,
            ms_diag_t *diag)
{
    size_t n = strlen(text);
    char low[MS_HASH_HEX_LEN + 1];
    if (n < MS_RESULTS_PREFIX_MIN || n > MS_HASH_HEX_LEN ||
        strspn(text, "0123456789abcdefABCDEF") != n)
        return ms_diag_set(diag, "task",
                           "'%.80s' is not a task id (64 hex characters, "
                           "or a unique prefix of %d or more)",
                           text, MS_RESULTS_PREFIX_MIN);
    for (size_t i = 0; i <= n; i++)
        low[i] = (char) tolower((unsigned char) text[i]);
    if (n == MS_HASH_HEX_LEN)
        return ms_hash_from_hex(low, out) == MS_OK
                   ? MS_OK
                   : ms_diag_set(diag, "task", "'%s' is not hex", text);
    s_task_find_t f = {.store = store, .n_prefix = n};
    memcpy(f.prefix, low, n + 1);
    int rc = ms_store_list_sweeps(store, s_task_find_sweep, &f);
    if (rc != MS_OK && rc != 1)
        return ms_diag_set_code(diag, rc, "store", "%s", ms_strerror(rc));
    if (f.n_found == 0)
        return ms_diag_set_code(diag, MS_ERR_NOTFOUND, low, "no such task");
    if (f.n_found > 1)
        return ms_diag_set_code(diag, MS_ERR_CONFLICT, low,
                                "prefix matches several tasks (give more "
                                "characters)");
    *out = f.found;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  32 id bytes as a new JSON hex string, or null when all zero.

static json_t *
s_id_json(const uint8_t *bytes)
{
    static const uint8_t zero[MS_HASH_BYTES];
    if (memcmp(bytes, zero, MS_HASH_BYTES) == 0)
        return json_null();
    ms_hash_t h;
    memcpy(h.bytes, bytes, MS_HASH_BYTES);
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&h, hex);
    return json_string(hex);
}

static int
s_claim_one(void *arg, const ms_store_claim_t *claim)
{
    json_t *list = arg;
    json_t *c = json_pack("{s:i, s:I, s:o, s:b, s:b}", "slot",
                          (int) claim->slot, "epoch", (json_int_t) claim->epoch,
                          "node_id", s_id_json(claim->node_id), "claimed",
                          claim->claimed, "released", claim->released);
    return c && json_array_append_new(list, c) == 0 ? 0 : MS_ERR_NOMEM;
}

//  --------------------------------------------------------------------------
//  The task named by text (an id or a unique prefix) into *id and *task
//  (caller destroys it). False when there is none: then the error reply
//  is queued and its result is in *refused.

static bool
s_open_task(ms_api_t *self, struct MHD_Connection *conn, const char *text,
            ms_hash_t *id, ms_store_task_t **task, enum MHD_Result *refused)
{
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = s_find_task(self->hooks.store, text, id, &diag);
    if (rc != MS_OK) {
        *refused = s_reply_diag(self, conn, s_status_of(rc), &diag, rc);
        return false;
    }
    rc = ms_store_get_task(self->hooks.store, id->bytes, task);
    if (rc != MS_OK) {
        *refused = s_reply_error(
            self, conn, s_status_of(rc), "task %.64s: %s", text,
            rc == MS_ERR_NOTFOUND ? "no such task" : ms_strerror(rc));
        return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  The result rows of task hex (index in its sweep), as the results route
//  gives them; a new array, or NULL when memory runs out.

static json_t *
s_task_rows(ms_api_t *self, const ms_hash_t *sweep_id, uint32_t index,
            const char *hex)
{
    char after[24];
    snprintf(after, sizeof after, "%" PRId64, (int64_t) index - 1);
    json_t *rows = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_results_page_ex(self->hooks.store, sweep_id, MS_RESULTS_ALL,
                       index ? after : NULL, 1, &rows, NULL, &diag);
    json_t *mine = json_array();
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        const char *t = json_string_value(json_object_get(row, "task_id"));
        if (mine && t && strcmp(t, hex) == 0)
            json_array_append(mine, row);
    }
    json_decref(rows);
    return mine;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/tasks/{id}

static enum MHD_Result
s_get_task(ms_api_t *self, struct MHD_Connection *conn, const char *text)
{
    ms_hash_t id;
    ms_store_task_t *task = NULL;
    enum MHD_Result refused;
    if (!s_open_task(self, conn, text, &id, &task, &refused))
        return refused;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, hex);
    json_error_t jerr;
    json_t *config = json_loadb(task->config_json, task->config_len, 0, &jerr);
    json_t *obj = json_pack(
        "{s:s, s:o, s:I, s:o, s:s, s:I, s:I, s:o, s:o}", "task_id", hex,
        "sweep_id", s_id_json(task->sweep_id), "index",
        (json_int_t) task->index, "config", config ? config : json_null(),
        "state", ms_task_state_name(task->state), "attempts",
        (json_int_t) task->attempts, "updated_at_ms",
        (json_int_t) task->updated_at_ms, "holder", s_id_json(task->holder),
        "error",
        task->error && *task->error ? json_string(task->error) : json_null());
    uint32_t index = task->index;
    ms_hash_t sweep_id;
    memcpy(sweep_id.bytes, task->sweep_id, MS_HASH_BYTES);
    ms_store_task_destroy(&task);
    if (!obj)
        return s_reply_error(self, conn, 500, "out of memory");
    // The claims the store holds, and the leases in the node's view.
    json_t *claims = json_array();
    if (claims && ms_store_claims_by_task(self->hooks.store, id.bytes,
                                          s_claim_one, claims) != MS_OK) {
        json_decref(claims);
        claims = NULL;
    }
    json_object_set_new(obj, "claims", claims ? claims : json_null());
    json_t *leases = self->hooks.task_leases
                         ? self->hooks.task_leases(self->hooks.arg, &id)
                         : NULL;
    json_object_set_new(obj, "leases", leases ? leases : json_null());
    // The verdict and the result rows (as the results route gives them).
    ms_store_verdict_t *v = malloc(sizeof *v);
    if (v && ms_store_get_verdict(self->hooks.store, id.bytes, v) == MS_OK) {
        json_object_set_new(obj, "verdict",
                            json_string(ms_verdict_state_name(
                                (ms_verdict_state_t) v->verdict)));
        json_object_set_new(obj, "verdict_revision",
                            json_integer((json_int_t) v->revision));
    } else {
        json_object_set_new(obj, "verdict", json_string("pending"));
        json_object_set_new(obj, "verdict_revision", json_integer(0));
    }
    free(v);
    json_t *mine = s_task_rows(self, &sweep_id, index, hex);
    json_object_set_new(obj, "results", mine ? mine : json_array());
    return s_reply_json(self, conn, MHD_HTTP_OK, obj);
}

//  --------------------------------------------------------------------------
//  Read the kept weights file at path (at most 2 GiB) into *bytes.

static int
s_read_weights(const char *path, uint8_t **bytes, size_t *n)
{
    *bytes = NULL;
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size > ((off_t) 2 << 30)) {
        if (fd >= 0)
            close(fd);
        return MS_ERR_IO;
    }
    uint8_t *buf = malloc((size_t) st.st_size + 1);
    size_t done = 0;
    while (buf && done < (size_t) st.st_size) {
        ssize_t got = read(fd, buf + done, (size_t) st.st_size - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        done += (size_t) got;
    }
    close(fd);
    if (!buf)
        return MS_ERR_NOMEM;
    if (done != (size_t) st.st_size) {
        free(buf);
        return MS_ERR_IO;
    }
    *bytes = buf;
    *n = done;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  GET /api/v1/tasks/{id}/weights?format=onnx|native: the kept weights
//  of the task's result (the first row naming a blob this node holds).

static enum MHD_Result
s_get_task_weights(ms_api_t *self, struct MHD_Connection *conn,
                   const char *text)
{
    const char *format =
        MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format");
    if (!format)
        format = "native";
    bool onnx = strcmp(format, "onnx") == 0;
    if (!onnx && strcmp(format, "native") != 0)
        return s_reply_error(self, conn, MHD_HTTP_BAD_REQUEST,
                             "format: '%.32s' is not onnx or native", format);
    if (!self->hooks.blob_path)
        return s_reply_error(self, conn, MHD_HTTP_NOT_IMPLEMENTED,
                             "this node serves no kept weights");
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_hash_t id;
    ms_store_task_t *task = NULL;
    enum MHD_Result refused;
    if (!s_open_task(self, conn, text, &id, &task, &refused))
        return refused;
    int rc = MS_OK;
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&id, hex);
    ms_hash_t sweep_id;
    memcpy(sweep_id.bytes, task->sweep_id, MS_HASH_BYTES);
    uint32_t index = task->index;
    ms_store_task_destroy(&task);
    json_t *rows = s_task_rows(self, &sweep_id, index, hex);
    char *path = NULL;
    bool named = false;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        ms_hash_t blob;
        const char *b = json_string_value(json_object_get(row, "weights_blob"));
        if (path || !b || ms_hash_from_hex(b, &blob) != MS_OK)
            continue;
        named = true;
        path = self->hooks.blob_path(self->hooks.arg, &blob);
    }
    json_decref(rows);
    if (!path)
        return s_reply_error(
            self, conn, MHD_HTTP_NOT_FOUND, "task %.12s: %s", hex,
            named ? "its kept weights are not held by this node (ask a node "
                    "that trained or copied them)"
                  : "no kept weights (no result names any: the sweep's "
                    "keep_weights is none, or best kept another task's, or "
                    "the task has no ok result yet)");
    uint8_t *bytes = NULL;
    size_t n = 0;
    rc = s_read_weights(path, &bytes, &n);
    free(path);
    if (rc != MS_OK)
        return s_reply_error(self, conn, 500, "task %.12s: weights: %s", hex,
                             ms_strerror(rc));
    void *model = NULL;
    size_t n_model = 0;
    if (onnx) {
        rc = ms_onnx_encode_weights(bytes, n, &model, &n_model, &diag);
        free(bytes);
        if (rc != MS_OK)
            return s_reply_diag(self, conn,
                                rc == MS_ERR_CONFLICT ? MHD_HTTP_CONFLICT : 500,
                                &diag, rc);
        bytes = model;
        n = n_model;
    }
    enum MHD_Result r =
        s_reply(self, conn, MHD_HTTP_OK, "application/octet-stream",
                (const char *) bytes, n);
    free(bytes);
    return r;
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
        json_t *fh = s_id_json(f->hash);
        if (json_is_string(fh))
            json_array_append(d->hashes, fh);
        json_array_append_new(
            files, json_pack("{s:s, s:I, s:o, s:n}", "role", f->role, "size",
                             (json_int_t) f->size, "hash", fh, "present"));
    }
    const char *name = p->u.dataset.name ? p->u.dataset.name : "";
    json_t *obj = json_pack(
        "{s:o, s:s, s:s, s:o, s:n, s:[]}", "hash", s_id_json(hash), "name",
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
                                  s_id_json(sweep->sweep_id));
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

static enum MHD_Result
s_get_datasets(ms_api_t *self, struct MHD_Connection *conn)
{
    s_datasets_t d = {.list = json_array(), .hashes = json_array()};
    if (!d.list || !d.hashes) {
        json_decref(d.list);
        json_decref(d.hashes);
        return s_reply_error(self, conn, 500, "out of memory");
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
        return s_reply_error(self, conn, 500, "store: %s", ms_strerror(rc));
    }
    s_dataset_builtin_local(&d, "fashion-mnist");
    s_dataset_builtin_local(&d, "mnist");
    return s_reply_json(self, conn, MHD_HTTP_OK,
                        json_pack("{s:o}", "datasets", d.list));
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
        return s_not_allowed(self, conn, "dashboard", method, "GET, HEAD");
    if (!self->hooks.dashboard_dir) {
        static const char page[] =
            "<!doctype html><meta charset=utf-8><title>meshsweep</title>"
            "<p>This meshsweep node serves no dashboard (no assets "
            "directory: see --dashboard-dir and docs/DASHBOARD.md). The "
            "API is at <a href=\"/api/v1/status\">/api/v1/status</a>.\n";
        return s_reply(self, conn, *rel ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK,
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
            return s_reply_error(self, conn, 500, "out of memory");
        return s_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
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
        const char *method, s_request_t *req)
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
            return s_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : s_get_metrics(self, conn);
    }
    if (strcmp(path, "/api/v1/status") == 0) {
        if (!get)
            return s_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : s_get_status(self, conn);
    }
    if (strcmp(path, "/api/v1/peers") == 0) {
        if (!get)
            return s_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : s_get_peers(self, conn);
    }
    if (strcmp(path, "/api/v1/events") == 0) {
        static const char *const events_args[] = {"sweep", "last_event_id",
                                                  NULL};
        if (!get)
            return s_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, events_args, false, &r)
                   ? r
                   : s_get_events(self, conn);
    }
    if (strcmp(path, "/api/v1/datasets") == 0) {
        if (!get)
            return s_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : s_get_datasets(self, conn);
    }
    if (strcmp(path, "/api/v1/authority") == 0) {
        if (!post)
            return s_not_allowed(self, conn, path, method, "POST");
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : s_post_authority(self, conn, req);
    }
    const char *logs = "/api/v1/logs/";
    if (strncmp(path, logs, strlen(logs)) == 0) {
        if (!get)
            return s_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, "/api/v1/logs/{node}", none, false, &r)
                   ? r
                   : s_get_log(self, conn, path + strlen(logs));
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
                return s_not_allowed(self, conn, path, method, "GET, HEAD");
            return s_bad_args(self, conn, "/api/v1/tasks/{id}/weights",
                              weights_args, false, &r)
                       ? r
                       : s_get_task_weights(self, conn, id_text);
        }
        if (!*rest || slash)
            return s_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
                                 "%.200s: no such resource", path);
        if (!get)
            return s_not_allowed(self, conn, path, method, "GET, HEAD");
        return s_bad_args(self, conn, "/api/v1/tasks/{id}", none, false, &r)
                   ? r
                   : s_get_task(self, conn, rest);
    }
    if (strcmp(path, "/api/v1/blobs") == 0)
        return s_bad_args(self, conn, path, none, false, &r)
                   ? r
                   : s_put_blob(self, conn, NULL, method, req);
    const char *blobs = "/api/v1/blobs/";
    if (strncmp(path, blobs, strlen(blobs)) == 0)
        return s_bad_args(self, conn, "/api/v1/blobs/{hash}", none, false, &r)
                   ? r
                   : s_put_blob(self, conn, path + strlen(blobs), method, req);
    if (strcmp(path, "/api/v1/sweeps") == 0) {
        if (!get && !post)
            return s_not_allowed(self, conn, path, method, "GET, HEAD, POST");
        if (s_bad_args(self, conn, path, get ? none : submit_args, false, &r))
            return r;
        return get ? s_get_sweeps(self, conn) : s_post_sweeps(self, conn, req);
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
            return s_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
                                 "%.200s: no such resource", path);
        if (control ? !post : !get)
            return s_not_allowed(self, conn, path, method,
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
            return s_reply_diag(self, conn, s_status_of(rc), &diag, rc);
        if (!*sub)
            return s_get_sweep(self, conn, &id);
        if (control)
            return s_post_control(self, conn, req, &id);
        if (results)
            return s_get_results(self, conn, &id);
        return s_get_analysis(self, conn, &id);
    }
    return s_reply_error(self, conn, MHD_HTTP_NOT_FOUND,
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
    s_request_t *req = *con_cls;
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
            return s_reply_error(self, conn, MHD_HTTP_UNAUTHORIZED,
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
                return s_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                                     "body: larger than %" PRIu64 " bytes "
                                     "(max_dataset_bytes)",
                                     self->hooks.max_upload_bytes);
            }
            s_upload_begin(self, req);
            return MHD_YES;
        }
        if (cl && strtoull(cl, NULL, 10) > MS_API_MAX_BODY) {
            req->too_large = true;
            return s_reply_error(self, conn, MHD_HTTP_CONTENT_TOO_LARGE,
                                 "body: larger than %u bytes", MS_API_MAX_BODY);
        }
        return MHD_YES;
    }
    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        if (req->answered)
            return MHD_YES; // refused already: drop the body
        if (req->upload) {
            s_upload_write(self, req, upload_data, n);
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
    s_request_t *req = *con_cls;
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
    for (size_t i = 0; i < S_ANALYSIS_CACHE; i++)
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
