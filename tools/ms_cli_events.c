/*  =========================================================================
    ms_cli_events - `meshsweep events`: follow a node's event stream
    (GET /api/v1/events, docs/EVENTS.md), one event a line

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    libcurl hands the stream over in pieces; the write callback cuts it
    into lines and each frame (id, event, data, blank line) into one
    printed line "ID TYPE DATA", flushed at once so that a pipe sees it
    live. Comments (keepalives) are dropped. An answer other than 200 is
    kept whole and reported as every command reports API errors.
*/
#include "ms_cli.h"

#include <curl/curl.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

//  The stream being read.
typedef struct {
    CURL *curl;        // the transfer
    long status;       // HTTP status, once known
    char *line;        // the line being received (malloc'd)
    size_t len, cap;   // bytes in line, allocated
    char id[32];       // the frame's id so far
    char type[32];     // its event type
    char *data;        // its data (malloc'd), or NULL
    char *body;        // a non-200 answer (malloc'd)
    size_t n_body;     // its bytes
    bool failed;       // out of memory
    uint64_t n_events; // events printed
} s_stream_t;

//  --------------------------------------------------------------------------
//  One complete line of the stream (without its newline).

static void
s_line(s_stream_t *s, const char *line)
{
    if (!*line) { // end of a frame
        if (s->data && s->type[0]) {
            printf("%s %s %s\n", s->id[0] ? s->id : "-", s->type, s->data);
            fflush(stdout);
            s->n_events++;
        }
        free(s->data);
        s->data = NULL;
        s->type[0] = s->id[0] = 0;
        return;
    }
    if (line[0] == ':')
        return; // a comment (keepalive)
    if (strncmp(line, "id: ", 4) == 0)
        snprintf(s->id, sizeof s->id, "%s", line + 4);
    else if (strncmp(line, "event: ", 7) == 0)
        snprintf(s->type, sizeof s->type, "%s", line + 7);
    else if (strncmp(line, "data: ", 6) == 0) {
        free(s->data);
        s->data = strdup(line + 6);
        if (!s->data)
            s->failed = true;
    }
}

//  --------------------------------------------------------------------------
//  libcurl's write callback: stream bytes, or the body of an error.

static size_t
s_write(char *ptr, size_t size, size_t nmemb, void *arg)
{
    s_stream_t *s = arg;
    size_t n = size * nmemb;
    if (!s->status)
        curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status != 200) {
        char *p = realloc(s->body, s->n_body + n + 1);
        if (!p)
            return 0;
        memcpy(p + s->n_body, ptr, n);
        s->body = p;
        s->n_body += n;
        p[s->n_body] = 0;
        return n;
    }
    for (size_t i = 0; i < n; i++) {
        if (ptr[i] == '\n') {
            if (s->len && s->line[s->len - 1] == '\r')
                s->len--;
            s->line[s->len] = 0;
            s_line(s, s->line);
            s->len = 0;
            continue;
        }
        if (s->len + 2 > s->cap) {
            size_t cap = s->cap ? s->cap * 2 : 4096;
            char *p = realloc(s->line, cap);
            if (!p) {
                s->failed = true;
                return 0;
            }
            s->line = p;
            s->cap = cap;
        }
        s->line[s->len++] = ptr[i];
        s->line[s->len] = 0;
    }
    return s->failed ? 0 : n;
}

//  --------------------------------------------------------------------------
//  Usage.

static void
s_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep events [--node URL] [--sweep ID]\n"
            "                        [--last-event-id N] [--max-seconds S]\n"
            "                        [--token TOKEN | --token-file F]\n"
            "\n"
            "Follow a node's events (docs/EVENTS.md), one a line:\n"
            "  ID TYPE DATA\n"
            "TYPE is progress, result, verdict, peer, sweep or reset; DATA "
            "is one line\nof JSON. --sweep keeps one sweep's events (64 hex "
            "or a unique prefix of\n>= 12); --last-event-id resumes after "
            "that event; --max-seconds stops\nafter S seconds (exit 0). "
            "Ends when the node stops.\n");
}

//  --------------------------------------------------------------------------
//  meshsweep events

int
ms_cli_events_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_usage(stdout), MS_CLI_EXIT_OK;
    const char *node_opt = NULL, *sweep = NULL, *last = NULL;
    long max_seconds = 0;
    for (int i = 1; i < argc; i++) {
        bool missing = false;
        const char *v = NULL;
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_opt, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (ms_cli_arg_value(argc, argv, &i, "--sweep", &v, &missing)) {
            if (missing || strspn(v, "0123456789abcdef") != strlen(v) ||
                strlen(v) < 12 || strlen(v) > 64)
                return ms_cli_usage_error("--sweep",
                                          "needs a sweep id (64 hex, or a "
                                          "prefix of at least 12)");
            sweep = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--last-event-id", &v,
                                    &missing)) {
            if (missing || !*v || strlen(v) > 20 ||
                strspn(v, "0123456789") != strlen(v))
                return ms_cli_usage_error("--last-event-id",
                                          "needs an event id (a number)");
            last = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--max-seconds", &v,
                                    &missing)) {
            if (missing)
                return ms_cli_usage_error("--max-seconds", "needs seconds");
            if (ms_cli_parse_int("--max-seconds", v, 1, 86400 * 365,
                                 &max_seconds) != MS_OK)
                return MS_CLI_EXIT_USAGE;
        } else
            return ms_cli_usage_error(argv[i], "unknown argument of events");
    }
    const char *node = ms_cli_node_url(node_opt);
    size_t base_len = strlen(node);
    while (base_len > 0 && node[base_len - 1] == '/')
        base_len--;
    char url[1024];
    snprintf(url, sizeof url, "%.*s/api/v1/events%s%s", (int) base_len, node,
             sweep ? "?sweep=" : "", sweep ? sweep : "");
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return ms_cli_failure(node, "cannot initialise libcurl");
    s_stream_t s = {0};
    s.curl = curl_easy_init();
    struct curl_slist *headers = NULL;
    char header[1024];
    const char *token = NULL;
    ms_diag_t tdiag;
    ms_diag_clear(&tdiag);
    if (ms_cli_token(&token, &tdiag) != MS_OK) {
        curl_easy_cleanup(s.curl);
        return ms_cli_failure(tdiag.where, "%s", tdiag.reason);
    }
    if (token && *token) {
        snprintf(header, sizeof header, "Authorization: Bearer %s", token);
        headers = curl_slist_append(headers, header);
    }
    if (last) {
        snprintf(header, sizeof header, "Last-Event-ID: %s", last);
        headers = curl_slist_append(headers, header);
    }
    headers = curl_slist_append(headers, "Accept: text/event-stream");
    if (!s.curl)
        return ms_cli_failure(node, "out of memory");
    curl_easy_setopt(s.curl, CURLOPT_URL, url);
    curl_easy_setopt(s.curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(s.curl, CURLOPT_WRITEFUNCTION, s_write);
    curl_easy_setopt(s.curl, CURLOPT_WRITEDATA, &s);
    curl_easy_setopt(s.curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(s.curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    if (max_seconds > 0)
        curl_easy_setopt(s.curl, CURLOPT_TIMEOUT, max_seconds);
    curl_easy_setopt(s.curl, CURLOPT_USERAGENT, "meshsweep/" MESHSWEEP_VERSION);
    curl_easy_setopt(s.curl, CURLOPT_NOPROXY, "*");
    CURLcode cc = curl_easy_perform(s.curl);
    int code = MS_CLI_EXIT_OK;
    if (s.status && s.status != 200) {
        ms_diag_t diag;
        ms_diag_clear(&diag);
        code = ms_cli_http_error(s.status, s.body, sweep ? sweep : "events",
                                 &diag);
        ms_cli_diag_exit(&diag, MS_ERR_HTTP, "events");
    } else if (s.failed)
        code = ms_cli_failure("events", "out of memory");
    else if (cc != CURLE_OK && !(cc == CURLE_OPERATION_TIMEDOUT && s.status))
        code = ms_cli_failure(url, "%s%s", curl_easy_strerror(cc),
                              cc == CURLE_COULDNT_CONNECT
                                  ? " (is meshsweepd running? use --node "
                                    "URL or MESHSWEEP_NODE)"
                                  : "");
    curl_slist_free_all(headers);
    curl_easy_cleanup(s.curl);
    free(s.line);
    free(s.data);
    free(s.body);
    return code;
}
