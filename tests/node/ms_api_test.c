/*  =========================================================================
    ms_api_test - the HTTP API of a node on an ephemeral loopback port:
    submission, listing, results pages, CSV, analysis, status, metrics,
    and bad requests answered with 4xx JSON while the node keeps serving

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The node loop must run while requests are made (a submission is
    executed by the loop), so the client runs in a second thread and the
    test thread turns the loop until the client is done; assertions are
    made afterwards in the test thread.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_api.h"
#include "ms_node.h"
#include "ms_node_testdata.h"
#include "ms_spec.h"
#include "ms_store.h"
#include "ms_store_payload.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ms_store_fixture.h"

//  One HTTP exchange's answer.
typedef struct {
    int status; // HTTP status, 0 when the exchange failed
    char *body; // response body (malloc'd, NUL-terminated)
    char *head; // status line and headers (malloc'd; s_http_h only)
} s_reply_t;

//  --------------------------------------------------------------------------
//  One HTTP/1.0 request over a raw socket to 127.0.0.1:port.

static s_reply_t
s_http(int port, const char *method, const char *path, const char *body,
       size_t body_len)
{
    s_reply_t out = {0, NULL, NULL};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return out;
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t) port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect(fd, (struct sockaddr *) &addr, sizeof addr) != 0) {
        close(fd);
        return out;
    }
    char head[1024];
    int n = snprintf(head, sizeof head,
                     "%s %s HTTP/1.0\r\nHost: localhost\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     method, path, body ? body_len : 0);
    if (send(fd, head, (size_t) n, MSG_NOSIGNAL) != n) {
        close(fd);
        return out;
    }
    size_t sent = 0;
    while (body && sent < body_len) {
        ssize_t w = send(fd, body + sent, body_len - sent, MSG_NOSIGNAL);
        if (w <= 0)
            break; // the server may answer 413 and close early
        sent += (size_t) w;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (len + 4096 > cap) {
            cap *= 2;
            buf = realloc(buf, cap);
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r <= 0)
            break;
        len += (size_t) r;
    }
    close(fd);
    buf[len] = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &out.status) != 1)
        out.status = 0;
    char *start = strstr(buf, "\r\n\r\n");
    out.body = strdup(start ? start + 4 : "");
    free(buf);
    return out;
}

//  --------------------------------------------------------------------------
//  One HTTP/1.0 request with no body and an optional extra header line;
//  the head of the answer is kept too.

static s_reply_t
s_http_h(int port, const char *method, const char *path, const char *header)
{
    s_reply_t out = {0, NULL, NULL};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t) port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *) &addr, sizeof addr) != 0) {
        if (fd >= 0)
            close(fd);
        return out;
    }
    char head[1024];
    int n = snprintf(
        head, sizeof head, "%s %s HTTP/1.0\r\nHost: localhost\r\n%s%s%s\r\n",
        method, path, header ? header : "", header ? "\r\n" : "",
        strcmp(method, "POST") == 0 ? "Content-Length: 5\r\n" : "");
    if (send(fd, head, (size_t) n, MSG_NOSIGNAL) != n) {
        close(fd);
        return out;
    }
    char buf[65536];
    size_t len = 0;
    for (;;) {
        ssize_t r = recv(fd, buf + len, sizeof buf - len - 1, 0);
        if (r <= 0)
            break;
        len += (size_t) r;
    }
    close(fd);
    buf[len] = 0;
    if (sscanf(buf, "HTTP/1.%*d %d", &out.status) != 1)
        out.status = 0;
    char *start = strstr(buf, "\r\n\r\n");
    out.body = strdup(start ? start + 4 : "");
    if (start)
        *start = 0;
    out.head = strdup(buf);
    return out;
}

//  --------------------------------------------------------------------------
//  The body parsed as JSON (caller owns), or NULL.

static json_t *
s_json(const s_reply_t *r)
{
    json_error_t err;
    return r->body ? json_loads(r->body, 0, &err) : NULL;
}

//  What the client thread did, checked afterwards.
typedef struct {
    int port;          // API port
    volatile int done; // the client finished
    s_reply_t post, post_again, list, detail, detail_prefix, status;
    s_reply_t page1, page2, csv, analysis, metrics;
    s_reply_t bad_json, too_big, unknown_sweep, short_prefix, not_hex;
    s_reply_t unknown_path, wrong_method, bad_limit, bad_cursor, bad_format;
    s_reply_t file_dataset, empty_body, status_after;
    s_reply_t f_depth, f_depth_real, f_bad_status, f_unknown_arg, f_csv;
    s_reply_t task, task_prefix, task_short, task_unknown, datasets;
    s_reply_t f_pages[4]; // status=ok&limit=1, page by page
    int n_f_pages;        // pages read
    char sweep_id[65];    // from the first POST
} s_client_t;

//  --------------------------------------------------------------------------
//  Poll GET /sweeps/{id} until its state is done (at most 60 s).

static void
s_wait_done(s_client_t *c)
{
    char path[200];
    snprintf(path, sizeof path, "/api/v1/sweeps/%s", c->sweep_id);
    for (int i = 0; i < 600; i++) {
        s_reply_t r = s_http(c->port, "GET", path, NULL, 0);
        json_t *obj = s_json(&r);
        const char *state = json_string_value(json_object_get(obj, "state"));
        bool done = state && strcmp(state, "done") == 0;
        json_decref(obj);
        free(r.body);
        if (done)
            return;
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

//  --------------------------------------------------------------------------
//  The client: every request of the test.

static void *
s_client(void *arg)
{
    s_client_t *c = arg;
    int port = c->port;
    const char *spec = ms_td_spec("api-sweep", 3, 1, 1);
    c->post = s_http(port, "POST", "/api/v1/sweeps", spec, strlen(spec));
    json_t *obj = s_json(&c->post);
    const char *id = json_string_value(json_object_get(obj, "sweep_id"));
    snprintf(c->sweep_id, sizeof c->sweep_id, "%s", id ? id : "");
    json_decref(obj);
    c->post_again = s_http(port, "POST", "/api/v1/sweeps", spec, strlen(spec));
    s_wait_done(c);

    char path[300];
    c->list = s_http(port, "GET", "/api/v1/sweeps", NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s", c->sweep_id);
    c->detail = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%.12s/", c->sweep_id);
    c->detail_prefix = s_http(port, "GET", path, NULL, 0);
    c->status = s_http(port, "GET", "/api/v1/status", NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?limit=2",
             c->sweep_id);
    c->page1 = s_http(port, "GET", path, NULL, 0);
    obj = s_json(&c->page1);
    const char *next = json_string_value(json_object_get(obj, "next"));
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?format=json&limit=2&after=%s",
             c->sweep_id, next ? next : "");
    json_decref(obj);
    c->page2 = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?format=csv",
             c->sweep_id);
    c->csv = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/analysis", c->sweep_id);
    c->analysis = s_http(port, "GET", path, NULL, 0);

    // Bad requests.
    c->bad_json = s_http(port, "POST", "/api/v1/sweeps", "{\"name\": ", 9);
    size_t big_n = (2u << 20);
    char *big = malloc(big_n);
    memset(big, 'a', big_n);
    c->too_big = s_http(port, "POST", "/api/v1/sweeps", big, big_n);
    free(big);
    c->unknown_sweep = s_http(
        port, "GET",
        "/api/v1/sweeps/"
        "0000000000000000000000000000000000000000000000000000000000000000",
        NULL, 0);
    c->short_prefix = s_http(port, "GET", "/api/v1/sweeps/abc", NULL, 0);
    c->not_hex =
        s_http(port, "GET", "/api/v1/sweeps/zzzzzzzzzzzzzz/results", NULL, 0);
    c->unknown_path = s_http(port, "GET", "/api/v2/nothing", NULL, 0);
    c->wrong_method = s_http(port, "DELETE", "/api/v1/sweeps", NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?limit=-3",
             c->sweep_id);
    c->bad_limit = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?after=x1",
             c->sweep_id);
    c->bad_cursor = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?format=xml",
             c->sweep_id);
    c->bad_format = s_http(port, "GET", path, NULL, 0);
    const char *files = "name: f\ndataset: {train: /etc/passwd, test: "
                        "/etc/passwd}\nparameters:\n  width: {value: 8}\n";
    c->file_dataset =
        s_http(port, "POST", "/api/v1/sweeps", files, strlen(files));
    c->empty_body = s_http(port, "POST", "/api/v1/sweeps", "", 0);
    // Filters, tasks, datasets (after the counted bad requests above).
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?config.hidden_layers=2", c->sweep_id);
    c->f_depth = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?config.hidden_layers=2.0&status=ok",
             c->sweep_id);
    c->f_depth_real = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?format=csv&config.hidden_layers=3",
             c->sweep_id);
    c->f_csv = s_http(port, "GET", path, NULL, 0);
    char after[64] = "";
    for (c->n_f_pages = 0; c->n_f_pages < 4; c->n_f_pages++) {
        snprintf(path, sizeof path,
                 "/api/v1/sweeps/%s/results?status=ok&limit=1%s%s", c->sweep_id,
                 after[0] ? "&after=" : "", after);
        s_reply_t *r = &c->f_pages[c->n_f_pages];
        *r = s_http(port, "GET", path, NULL, 0);
        obj = s_json(r);
        next = json_string_value(json_object_get(obj, "next"));
        snprintf(after, sizeof after, "%s", next ? next : "");
        json_decref(obj);
        if (!after[0]) {
            c->n_f_pages++;
            break;
        }
    }
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?status=fine",
             c->sweep_id);
    c->f_bad_status = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?limt=5",
             c->sweep_id);
    c->f_unknown_arg = s_http(port, "GET", path, NULL, 0);
    obj = s_json(&c->page1);
    const char *task_id = json_string_value(json_object_get(
        json_array_get(json_object_get(obj, "rows"), 0), "task_id"));
    char tid[65];
    snprintf(tid, sizeof tid, "%s", task_id ? task_id : "");
    json_decref(obj);
    snprintf(path, sizeof path, "/api/v1/tasks/%s", tid);
    c->task = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/tasks/%.12s", tid);
    c->task_prefix = s_http(port, "GET", path, NULL, 0);
    snprintf(path, sizeof path, "/api/v1/tasks/%.6s", tid);
    c->task_short = s_http(port, "GET", path, NULL, 0);
    c->task_unknown =
        s_http(port, "GET", "/api/v1/tasks/000000000000000000000000", NULL, 0);
    c->datasets = s_http(port, "GET", "/api/v1/datasets", NULL, 0);
    c->metrics = s_http(port, "GET", "/metrics", NULL, 0);
    c->status_after = s_http(port, "GET", "/api/v1/status", NULL, 0);
    c->done = 1;
    return NULL;
}

//  --------------------------------------------------------------------------
//  Check a 4xx reply carries a JSON {"error"} naming what.

static void
s_check_error(const s_reply_t *r, int status, const char *needle)
{
    if (r->status != status)
        fail_msg("expected %d, got %d: %s", status, r->status,
                 r->body ? r->body : "");
    json_t *obj = s_json(r);
    assert_non_null(obj);
    const char *error = json_string_value(json_object_get(obj, "error"));
    assert_non_null(error);
    if (needle && !strstr(error, needle))
        fail_msg("error '%s' lacks '%s'", error, needle);
    json_decref(obj);
}

//  --------------------------------------------------------------------------
//  Free every reply.

static void
s_free_client(s_client_t *c)
{
    s_reply_t *all[] = {&c->post,         &c->post_again,    &c->list,
                        &c->detail,       &c->detail_prefix, &c->status,
                        &c->page1,        &c->page2,         &c->csv,
                        &c->analysis,     &c->metrics,       &c->bad_json,
                        &c->too_big,      &c->unknown_sweep, &c->short_prefix,
                        &c->not_hex,      &c->unknown_path,  &c->wrong_method,
                        &c->bad_limit,    &c->bad_cursor,    &c->bad_format,
                        &c->file_dataset, &c->empty_body,    &c->status_after};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]->body);
    s_reply_t *more[] = {&c->f_depth,       &c->f_depth_real, &c->f_bad_status,
                         &c->f_unknown_arg, &c->f_csv,        &c->task,
                         &c->task_prefix,   &c->task_short,   &c->task_unknown,
                         &c->datasets};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        free(more[i]->body);
    for (int i = 0; i < c->n_f_pages; i++)
        free(c->f_pages[i].body);
}

//  --------------------------------------------------------------------------
//  The whole API against a live node.

static void
test_api_end_to_end(void **state)
{
    (void) state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/node", ms_td_root);
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.data_dir = dir;
    opts.n_workers = 2;
    opts.backend = "cpu";
    opts.api_bind = "127.0.0.1:0";
    ms_node_t *node = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_OK);
    const char *addr = ms_node_api_address(node);
    assert_non_null(addr);
    assert_true(strncmp(addr, "127.0.0.1:", 10) == 0);
    s_client_t c;
    memset(&c, 0, sizeof c);
    c.port = atoi(strchr(addr, ':') + 1);
    assert_true(c.port > 0);

    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, s_client, &c), 0);
    for (int i = 0; i < 1200 && !c.done; i++)
        assert_int_equal(ms_node_poll(node, 50), MS_OK);
    pthread_join(thread, NULL);
    assert_true(c.done);

    assert_int_equal(c.post.status, 201);
    json_t *obj = s_json(&c.post);
    assert_int_equal(json_integer_value(json_object_get(obj, "n_tasks")), 3);
    assert_false(json_is_true(json_object_get(obj, "existed")));
    assert_true(json_is_array(json_object_get(obj, "warnings")));
    json_decref(obj);
    assert_int_equal(strlen(c.sweep_id), 64);
    assert_int_equal(c.post_again.status, 200);
    obj = s_json(&c.post_again);
    assert_true(json_is_true(json_object_get(obj, "existed")));
    assert_string_equal(json_string_value(json_object_get(obj, "sweep_id")),
                        c.sweep_id);
    json_decref(obj);

    assert_int_equal(c.list.status, 200);
    obj = s_json(&c.list);
    json_t *sweeps = json_object_get(obj, "sweeps");
    assert_int_equal(json_array_size(sweeps), 1);
    assert_int_equal(
        json_integer_value(json_object_get(
            json_object_get(json_array_get(sweeps, 0), "counts"), "done")),
        3);
    json_decref(obj);

    assert_int_equal(c.detail.status, 200);
    assert_int_equal(c.detail_prefix.status, 200);
    obj = s_json(&c.detail_prefix);
    assert_string_equal(json_string_value(json_object_get(obj, "state")),
                        "done");
    assert_string_equal(json_string_value(json_object_get(obj, "name")),
                        "api-sweep");
    assert_true(json_is_object(json_object_get(obj, "throughput")));
    json_decref(obj);

    assert_int_equal(c.page1.status, 200);
    obj = s_json(&c.page1);
    assert_int_equal(json_array_size(json_object_get(obj, "rows")), 2);
    assert_true(json_is_string(json_object_get(obj, "next")));
    json_decref(obj);
    obj = s_json(&c.page2);
    assert_int_equal(c.page2.status, 200);
    assert_int_equal(json_array_size(json_object_get(obj, "rows")), 1);
    assert_true(json_is_null(json_object_get(obj, "next")));
    json_decref(obj);

    assert_int_equal(c.csv.status, 200);
    assert_true(strncmp(c.csv.body, "task_id,sweep_id,", 17) == 0);
    assert_non_null(strstr(c.csv.body, "config.hidden_layers"));
    int lines = 0;
    for (const char *p = c.csv.body; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 4);
    assert_int_equal(c.analysis.status, 200);
    obj = s_json(&c.analysis);
    assert_true(json_is_object(obj));
    json_decref(obj);

    assert_int_equal(c.status.status, 200);
    obj = s_json(&c.status);
    assert_string_equal(json_string_value(json_object_get(obj, "node_id")),
                        ms_node_id_hex(node));
    assert_int_equal(json_integer_value(json_object_get(obj, "workers")), 2);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(obj, "tasks"), "done")),
                     3);
    assert_int_equal(
        json_integer_value(json_object_get(obj, "tasks_trained_total")), 3);
    assert_true(json_is_object(json_object_get(obj, "platform")));
    json_decref(obj);

    s_check_error(&c.bad_json, 400, "line");
    s_check_error(&c.too_big, 413, "body");
    s_check_error(&c.unknown_sweep, 404, "no such sweep");
    s_check_error(&c.short_prefix, 400, "12");
    s_check_error(&c.not_hex, 400, "hex");
    s_check_error(&c.unknown_path, 404, NULL);
    s_check_error(&c.wrong_method, 405, "DELETE");
    s_check_error(&c.bad_limit, 400, "limit");
    s_check_error(&c.bad_cursor, 400, "cursor");
    s_check_error(&c.bad_format, 400, "format");
    s_check_error(&c.file_dataset, 400, "dataset");
    s_check_error(&c.empty_body, 400, "body");

    assert_int_equal(c.metrics.status, 200);
    assert_non_null(
        strstr(c.metrics.body, "meshsweep_tasks{state=\"done\"} 3"));
    assert_non_null(strstr(c.metrics.body, "meshsweep_tasks_trained_total 3"));
    assert_non_null(strstr(c.metrics.body, "meshsweep_worker_crashes_total 0"));
    assert_non_null(strstr(c.metrics.body, "meshsweep_http_requests_total"));
    assert_non_null(
        strstr(c.metrics.body, "meshsweep_rejected_requests_total 16"));
    assert_non_null(strstr(c.metrics.body, "meshsweep_store_bytes"));
    assert_int_equal(c.status_after.status, 200); // still serving

    // Filters: one row of depth 2 (numbers compare numerically), CSV too,
    // and pages of one row chain through all three ok rows.
    assert_int_equal(c.f_depth.status, 200);
    obj = s_json(&c.f_depth);
    json_t *rows = json_object_get(obj, "rows");
    assert_int_equal(json_array_size(rows), 1);
    assert_int_equal(json_integer_value(json_object_get(
                         json_object_get(json_array_get(rows, 0), "config"),
                         "hidden_layers")),
                     2);
    json_decref(obj);
    obj = s_json(&c.f_depth_real);
    assert_int_equal(json_array_size(json_object_get(obj, "rows")), 1);
    json_decref(obj);
    assert_int_equal(c.f_csv.status, 200);
    lines = 0;
    for (const char *p = c.f_csv.body; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 2); // header + one row
    assert_int_equal(c.n_f_pages, 3);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(c.f_pages[i].status, 200);
        obj = s_json(&c.f_pages[i]);
        assert_int_equal(json_array_size(json_object_get(obj, "rows")), 1);
        assert_true(i < 2 ? json_is_string(json_object_get(obj, "next"))
                          : json_is_null(json_object_get(obj, "next")));
        json_decref(obj);
    }
    s_check_error(&c.f_bad_status, 400, "status");
    s_check_error(&c.f_unknown_arg, 400, "limt");
    // Tasks: by id and by prefix; a short prefix 400, unknown 404.
    assert_int_equal(c.task.status, 200);
    obj = s_json(&c.task);
    assert_string_equal(json_string_value(json_object_get(obj, "state")),
                        "done");
    assert_string_equal(json_string_value(json_object_get(obj, "sweep_id")),
                        c.sweep_id);
    assert_int_equal(json_array_size(json_object_get(obj, "results")), 1);
    assert_true(json_is_object(json_object_get(obj, "config")));
    assert_true(json_is_string(json_object_get(obj, "verdict")));
    assert_true(json_is_integer(json_object_get(obj, "verdict_revision")));
    json_decref(obj);
    assert_int_equal(c.task_prefix.status, 200);
    s_check_error(&c.task_short, 400, "12");
    s_check_error(&c.task_unknown, 404, "no such task");
    assert_int_equal(c.datasets.status, 200);
    obj = s_json(&c.datasets);
    assert_true(json_is_array(json_object_get(obj, "datasets")));
    json_decref(obj);
    s_free_client(&c);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  A port already in use is a clear error.

static void
test_bind_in_use_refused(void **state)
{
    (void) state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/a", ms_td_root);
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.data_dir = dir;
    opts.n_workers = 1;
    opts.api_bind = "127.0.0.1:0";
    ms_node_t *a = NULL, *b = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_node_open(&a, &opts, &diag), MS_OK);
    char bind[64];
    snprintf(bind, sizeof bind, "%s", ms_node_api_address(a));
    snprintf(dir, sizeof dir, "%s/b", ms_td_root);
    opts.api_bind = bind;
    assert_int_equal(ms_node_open(&b, &opts, &diag), MS_ERR_IO);
    assert_null(b);
    assert_non_null(strstr(diag.reason, bind));
    ms_node_destroy(&a);
}

//  --------------------------------------------------------------------------
//  Slow clients: many connections that send half a request and wait must
//  not keep real requests out (each costs a socket, not a thread).

#define S_LORIS 200 // half-open connections

typedef struct {
    int port;          // API port
    int status;        // status of the real request
    double seconds;    // its duration
    volatile int done; // the client finished
    int n_open;        // half-open connections made
} s_loris_t;

static void *
s_loris_client(void *arg)
{
    s_loris_t *l = arg;
    int fds[S_LORIS];
    for (int i = 0; i < S_LORIS; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in addr = {.sin_family = AF_INET,
                                   .sin_port = htons((uint16_t) l->port)};
        inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
        if (fds[i] >= 0 &&
            connect(fds[i], (struct sockaddr *) &addr, sizeof addr) == 0 &&
            send(fds[i], "GET /api/v1/status HTTP/1.1\r\n", 30, MSG_NOSIGNAL) ==
                30)
            l->n_open++;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    s_reply_t r = s_http(l->port, "GET", "/api/v1/status", NULL, 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    l->status = r.status;
    l->seconds =
        (double) (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9;
    free(r.body);
    for (int i = 0; i < S_LORIS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    l->done = 1;
    return NULL;
}

static void
test_slow_clients_do_not_block(void **state)
{
    (void) state;
    char dir[512];
    snprintf(dir, sizeof dir, "%s/loris", ms_td_root);
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.data_dir = dir;
    opts.n_workers = 1;
    opts.api_bind = "127.0.0.1:0";
    ms_node_t *node = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_node_open(&node, &opts, &diag), MS_OK);
    const char *address = ms_node_api_address(node);
    s_loris_t l = {.port = atoi(strrchr(address, ':') + 1)};
    pthread_t thread;
    assert_int_equal(pthread_create(&thread, NULL, s_loris_client, &l), 0);
    for (int i = 0; i < 400 && !l.done; i++)
        ms_node_poll(node, 50); // at most 20 s
    pthread_join(thread, NULL);
    assert_int_equal(l.n_open, S_LORIS);
    assert_int_equal(l.status, 200);
    assert_true(l.seconds < 5.0);
    ms_node_destroy(&node);
}

//  --------------------------------------------------------------------------
//  Filters: each kind of condition, numbers numerically, lists both ways,
//  bad values refused, non-filters left to the caller.

static void
test_filter_match(void **state)
{
    (void) state;
    json_error_t err;
    json_t *row = json_loads(
        "{\"status\": \"ok\", \"verdict\": \"accepted\", \"node_id\": "
        "\"ab12cd\", \"config\": {\"activation\": \"relu\", "
        "\"hidden_layers\": 4, \"lr\": 0.01, \"hidden_sizes\": [100, 10], "
        "\"shuffle\": true}}",
        0, &err);
    assert_non_null(row);
    struct {
        const char *name, *value;
        bool match;
    } cases[] = {
        {"status", "ok", true},
        {"status", "failed", false},
        {"verdict", "accepted", true},
        {"verdict", "verified", false},
        {"node", "AB12", true},
        {"node", "ab13", false},
        {"config.activation", "relu", true},
        {"config.activation", "tanh", false},
        {"config.hidden_layers", "4", true},
        {"config.hidden_layers", "4.0", true},
        {"config.hidden_layers", "5", false},
        {"config.lr", "0.01", true},
        {"config.lr", "1e-2", true},
        {"config.lr", "0.010001", false},
        {"config.hidden_sizes", "[100,10]", true},
        {"config.hidden_sizes", "100;10", true},
        {"config.hidden_sizes", "100;10;1", false},
        {"config.shuffle", "true", true},
        {"config.missing", "1", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ms_api_filter_t *f = ms_api_filter_new();
        ms_diag_t diag;
        ms_diag_clear(&diag);
        assert_int_equal(
            ms_api_filter_add(f, cases[i].name, cases[i].value, &diag), MS_OK);
        if (ms_api_filter_match(f, row) != cases[i].match)
            fail_msg("%s=%s should %smatch", cases[i].name, cases[i].value,
                     cases[i].match ? "" : "not ");
        ms_api_filter_destroy(&f);
        assert_null(f);
    }
    // All conditions must hold.
    ms_api_filter_t *f = ms_api_filter_new();
    ms_diag_t diag;
    assert_int_equal(ms_api_filter_add(f, "status", "ok", &diag), MS_OK);
    assert_int_equal(ms_api_filter_add(f, "config.activation", "tanh", &diag),
                     MS_OK);
    assert_int_equal(ms_api_filter_size(f), 2);
    assert_false(ms_api_filter_match(f, row));
    assert_int_equal(ms_api_filter_add(f, "status", "fine", &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "status"));
    assert_int_equal(ms_api_filter_add(f, "verdict", "good", &diag),
                     MS_ERR_INVALID);
    assert_int_equal(ms_api_filter_add(f, "node", "xyz", &diag),
                     MS_ERR_INVALID);
    assert_int_equal(ms_api_filter_add(f, "limit", "5", &diag),
                     MS_ERR_NOTFOUND);
    assert_int_equal(ms_api_filter_add(f, "config.", "5", &diag),
                     MS_ERR_NOTFOUND);
    ms_api_filter_destroy(&f);
    json_decref(row);
}

//  --------------------------------------------------------------------------
//  Token files: made 0600 with 64 hex when missing, read back the same;
//  a file others may read, or a malformed token, is refused. Matching:
//  Bearer (any case) or cookie, nothing else.

static void
test_token_file(void **state)
{
    (void) state;
    char path[600];
    snprintf(path, sizeof path, "%s/api-token", ms_td_root);
    char a[MS_API_TOKEN_MAX + 1], b[MS_API_TOKEN_MAX + 1];
    bool created = false;
    ms_diag_t diag;
    assert_int_equal(ms_api_token_open(path, a, &created, &diag), MS_OK);
    assert_true(created);
    assert_int_equal(strlen(a), 64);
    assert_int_equal(strspn(a, "0123456789abcdef"), 64);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(ms_api_token_open(path, b, &created, &diag), MS_OK);
    assert_false(created);
    assert_string_equal(a, b);
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(ms_api_token_open(path, b, NULL, &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "chmod 600"));
    snprintf(path, sizeof path, "%s/short-token", ms_td_root);
    FILE *f = fopen(path, "w");
    fputs("abc\n", f);
    fclose(f);
    chmod(path, 0600);
    assert_int_equal(ms_api_token_open(path, b, NULL, &diag), MS_ERR_INVALID);
    snprintf(path, sizeof path, "%s/no-dir/api-token", ms_td_root);
    assert_int_equal(ms_api_token_open(path, b, NULL, &diag), MS_ERR_IO);

    char header[400];
    snprintf(header, sizeof header, "Bearer %s", a);
    assert_true(ms_api_token_matches(a, header, NULL));
    snprintf(header, sizeof header, "bearer  %s ", a);
    assert_true(ms_api_token_matches(a, header, NULL));
    assert_true(ms_api_token_matches(a, NULL, a));
    assert_true(ms_api_token_matches(a, "Basic xyz", a));
    assert_false(ms_api_token_matches(a, "Basic xyz", NULL));
    snprintf(header, sizeof header, "Bearer %.63s", a);
    assert_false(ms_api_token_matches(a, header, NULL));
    assert_false(ms_api_token_matches(a, NULL, "x"));
    assert_false(ms_api_token_matches(a, NULL, NULL));
    assert_false(ms_api_token_matches("", "Bearer ", ""));

    assert_true(ms_api_bind_loopback("127.0.0.1:5872"));
    assert_true(ms_api_bind_loopback("127.1.2.3:0"));
    assert_true(ms_api_bind_loopback("localhost:0"));
    assert_false(ms_api_bind_loopback("0.0.0.0:5872"));
    assert_false(ms_api_bind_loopback("10.1.2.3:5872"));
    assert_false(ms_api_bind_loopback("nonsense"));
}

//  A node that only answers /status (the auth test).
static json_t *
s_stub_status(void *arg)
{
    (void) arg;
    return json_pack("{s:s}", "node_id", "stub");
}

//  --------------------------------------------------------------------------
//  With a token: 401 + WWW-Authenticate without it or with a wrong one,
//  200 with Bearer, /?token= sets the cookie (302), the cookie works;
//  refusals are counted.

static void
test_token_required(void **state)
{
    (void) state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/store", ms_td_root);
    ms_store_t *store = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_store_open(&store, dir, NULL, &diag), MS_OK);
    const char *token = "0123456789abcdef0123456789abcdef";
    ms_api_hooks_t hooks = {
        .store = store, .status = s_stub_status, .token = token};
    ms_api_t *api = NULL;
    assert_int_equal(ms_api_open(&api, "127.0.0.1:0", &hooks, &diag), MS_OK);
    int port = atoi(strrchr(ms_api_address(api), ':') + 1);

    s_reply_t r = s_http_h(port, "GET", "/api/v1/status", NULL);
    s_check_error(&r, 401, "token");
    assert_non_null(strstr(r.head, "WWW-Authenticate: Bearer"));
    free(r.body);
    free(r.head);
    r = s_http_h(port, "GET", "/api/v1/status",
                 "Authorization: Bearer 0123456789abcdef0123456789abcdee");
    s_check_error(&r, 401, NULL);
    free(r.body);
    free(r.head);
    r = s_http_h(port, "POST", "/api/v1/sweeps", NULL); // before the body
    s_check_error(&r, 401, NULL);
    free(r.body);
    free(r.head);
    r = s_http_h(port, "GET", "/api/v1/status",
                 "Authorization: Bearer 0123456789abcdef0123456789abcdef");
    assert_int_equal(r.status, 200);
    free(r.body);
    free(r.head);
    r = s_http_h(port, "GET", "/?token=wrong", NULL);
    s_check_error(&r, 401, NULL);
    free(r.body);
    free(r.head);
    r = s_http_h(port, "GET", "/?token=0123456789abcdef0123456789abcdef", NULL);
    assert_int_equal(r.status, 302);
    assert_non_null(strstr(r.head, "Location: /"));
    assert_non_null(strstr(r.head, "Set-Cookie: meshsweep_token="
                                   "0123456789abcdef0123456789abcdef"));
    assert_non_null(strstr(r.head, "HttpOnly"));
    assert_non_null(strstr(r.head, "SameSite=Strict"));
    free(r.body);
    free(r.head);
    r = s_http_h(port, "GET", "/api/v1/status",
                 "Cookie: meshsweep_token=0123456789abcdef0123456789abcdef");
    assert_int_equal(r.status, 200);
    free(r.body);
    free(r.head);
    r = s_http_h(port, "GET", "/api/v1/status?verbose=1",
                 "Cookie: meshsweep_token=0123456789abcdef0123456789abcdef");
    s_check_error(&r, 400, "verbose");
    free(r.body);
    free(r.head);
    assert_int_equal(ms_api_rejected(api), 5);
    ms_api_destroy(&api);
    ms_store_destroy(&store);
}

//  --------------------------------------------------------------------------
//  A result row of task I as a worker writes it (config with activation,
//  hidden_layers and width: the analysis reads those; a curve and a
//  platform the table projection leaves out).

static char *
s_cache_row(const uint8_t *task, const uint8_t *sweep, const uint8_t *node,
            int i, double val)
{
    char t[65], s[65], n[65];
    for (int k = 0; k < 32; k++) {
        snprintf(t + 2 * k, 3, "%02x", task[k]);
        snprintf(s + 2 * k, 3, "%02x", sweep[k]);
        snprintf(n + 2 * k, 3, "%02x", node[k]);
    }
    char *row = malloc(2048);
    snprintf(row, 2048,
             "{\"task_id\":\"%s\",\"sweep_id\":\"%s\",\"node_id\":\"%s\","
             "\"config\":{\"activation\":\"relu\",\"hidden_layers\":%d,"
             "\"width\":4,\"seed\":%d,\"note\":\"a \\\"quoted\\\" {brace]\"},"
             "\"status\":\"ok\",\"error\":null,\"epochs\":1,"
             "\"train_seconds\":0.5,\"seconds_per_epoch\":0.5,"
             "\"val_accuracy\":%.3f,\"val_loss\":1.0,\"test_accuracy\":0.5,"
             "\"test_loss\":1.0,\"params\":10,"
             "\"platform\":{\"backend\":\"cpu\",\"calibration_gflops\":10},"
             "\"fingerprint\":null,\"weights_digest\":null,"
             "\"curve\":[{\"epoch\":1,\"train_loss\":1.0}]}",
             t, s, n, 1 + i % 2, i, val);
    return row;
}

//  --------------------------------------------------------------------------
//  GET .../results?fields= keeps only the fields asked (unknown ones, and
//  fields with CSV, are 400s); GET .../analysis is answered from its
//  cache until a new result changes the sweep's generation, and then
//  includes that result. The API runs over a store filled with records
//  (a sweep record of a real spec, result records of one node).

static void
test_fields_and_analysis_cache(void **state)
{
    (void) state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/store", ms_td_root);
    ms_store_t *store = NULL;
    ms_diag_t diag;
    assert_int_equal(ms_store_open(&store, dir, NULL, &diag), MS_OK);
    uint8_t sweep[32], other[32], node[32], tasks[3][32], otask[32];
    uint8_t origin[32];
    memset(origin, 0xEE, 32);
    memset(node, 0x11, 32);
    // A real spec: hidden_layers swept (1, 2), width fixed, three seeds;
    // the test's tasks i = 0, 1, 2 are those of hidden_layers 1 + i % 2
    // and seed i (the rows' configs, s_cache_row).
    ms_sf_sweep_t sw, osw;
    ms_sf_sweep_parse(&sw, "name: cache\ndataset: fashion-mnist\n"
                           "method: grid\nparameters:\n"
                           "  hidden_layers: {values: [1, 2]}\n"
                           "  width: {value: 4}\n  epochs: {value: 1}\n"
                           "  seed: {values: [0, 1, 2]}\n");
    assert_int_equal(sw.n_tasks, 6);
    for (int i = 0; i < 3; i++) {
        size_t k = 0;
        for (; k < sw.n_tasks; k++) {
            json_t *cfg = json_loads(ms_spec_task_json(sw.spec, k), 0, NULL);
            bool hit =
                json_integer_value(json_object_get(cfg, "hidden_layers")) ==
                    1 + i % 2 &&
                json_integer_value(json_object_get(cfg, "seed")) == i;
            json_decref(cfg);
            if (hit)
                break;
        }
        assert_true(k < sw.n_tasks);
        memcpy(tasks[i], ms_sf_task_id(&sw, k), 32);
    }
    memcpy(sweep, sw.sweep_id, 32);
    ms_sf_sweep_seeds(&osw, "o", 64, 1);
    memcpy(other, osw.sweep_id, 32);
    memcpy(otask, ms_sf_task_id(&osw, 0), 32);
    assert_int_equal(ms_sf_append_sweep(store, origin, &sw, 0), MS_OK);
    assert_int_equal(ms_sf_append_sweep(store, origin, &osw, 0), MS_OK);
    for (int i = 0; i < 2; i++) {
        char *row = s_cache_row(tasks[i], sweep, node, i, 0.5 + 0.1 * i);
        assert_int_equal(
            ms_sf_append_result(store, node, tasks[i], row, strlen(row)),
            MS_OK);
        free(row);
    }
    ms_api_hooks_t hooks = {.store = store, .status = s_stub_status};
    ms_api_t *api = NULL;
    assert_int_equal(ms_api_open(&api, "127.0.0.1:0", &hooks, &diag), MS_OK);
    int port = atoi(strrchr(ms_api_address(api), ':') + 1);
    char hex[65];
    for (int k = 0; k < 32; k++)
        snprintf(hex + 2 * k, 3, "%02x", sweep[k]);
    char path[400];

    // The list shows the spec's name and method, parsed from its text.
    s_reply_t r = s_http(port, "GET", "/api/v1/sweeps", NULL, 0);
    assert_int_equal(r.status, 200);
    assert_non_null(strstr(r.body, "\"name\":\"cache\""));
    assert_non_null(strstr(r.body, "\"method\":\"grid\""));
    assert_null(strstr(r.body, "\"batch_size\"")); // no task configs
    free(r.body);

    // fields: exactly the members asked, in every row.
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?fields=task_id,val_accuracy,config,"
             "status",
             hex);
    r = s_http(port, "GET", path, NULL, 0);
    assert_int_equal(r.status, 200);
    json_t *obj = s_json(&r);
    json_t *rows = json_object_get(obj, "rows");
    assert_int_equal(json_array_size(rows), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *row = json_array_get(rows, i);
        assert_int_equal(json_object_size(row), 4);
        assert_true(json_is_string(json_object_get(row, "task_id")));
        assert_true(json_is_real(json_object_get(row, "val_accuracy")));
        assert_string_equal(json_string_value(json_object_get(
                                json_object_get(row, "config"), "note")),
                            "a \"quoted\" {brace]");
        assert_string_equal(json_string_value(json_object_get(row, "status")),
                            "ok");
    }
    assert_true(fabs(json_real_value(json_object_get(json_array_get(rows, 1),
                                                     "val_accuracy")) -
                     0.6) < 1e-9);
    json_decref(obj);
    free(r.body);
    // ... with a filter on a field not asked, and with paging.
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?fields=params&config.hidden_layers=2"
             "&limit=1",
             hex);
    r = s_http(port, "GET", path, NULL, 0);
    assert_int_equal(r.status, 200);
    obj = s_json(&r);
    rows = json_object_get(obj, "rows");
    assert_int_equal(json_array_size(rows), 1);
    assert_int_equal(json_object_size(json_array_get(rows, 0)), 1);
    assert_int_equal(
        json_integer_value(json_object_get(json_array_get(rows, 0), "params")),
        10);
    json_decref(obj);
    free(r.body);
    // A config key that no task has: 400 naming it and the keys.
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?config.widht=4",
             hex);
    r = s_http(port, "GET", path, NULL, 0);
    s_check_error(&r, 400,
                  "config.widht: no task of this sweep has config key "
                  "'widht' (its keys: activation, batch_size, beta1, beta2, "
                  "dropout, early_stopping, epochs, eps, gamma, "
                  "hidden_layers, init, kind, l2, leaky_slope, "
                  "learning_rate, loss, momentum, optimizer, patience, "
                  "scale, schedule, seed, step_size, validation_split, "
                  "width)");
    free(r.body);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?limit=1&limit=2",
             hex);
    r = s_http(port, "GET", path, NULL, 0);
    s_check_error(&r, 400, "limit: query parameter given twice");
    free(r.body);
    // Unknown, repeated or empty names, and CSV: 400 naming the problem.
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?fields=task_id,val_acc", hex);
    r = s_http(port, "GET", path, NULL, 0);
    s_check_error(&r, 400, "unknown field 'val_acc'");
    free(r.body);
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?fields=status,status", hex);
    r = s_http(port, "GET", path, NULL, 0);
    s_check_error(&r, 400, "twice");
    free(r.body);
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/results?fields=", hex);
    r = s_http(port, "GET", path, NULL, 0);
    s_check_error(&r, 400, "fields");
    free(r.body);
    snprintf(path, sizeof path,
             "/api/v1/sweeps/%s/results?format=csv&fields=status", hex);
    r = s_http(port, "GET", path, NULL, 0);
    s_check_error(&r, 400, "JSON only");
    free(r.body);

    // The analysis: computed, then the same answer from the cache while
    // the sweep's generation stays (another sweep's result aside).
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/analysis", hex);
    uint64_t gen = ms_store_sweep_generation(store, sweep);
    assert_true(gen > 0);
    r = s_http(port, "GET", path, NULL, 0);
    assert_int_equal(r.status, 200);
    obj = s_json(&r);
    assert_int_equal(json_integer_value(json_object_get(obj, "n_rows")), 2);
    json_decref(obj);
    s_reply_t again = s_http(port, "GET", path, NULL, 0);
    assert_int_equal(again.status, 200);
    assert_string_equal(again.body, r.body);
    free(again.body);
    // ?x= and ?metric=: a bad axis or metric is a 400 naming it and the
    // valid ones; train_loss is read from the rows' curves (parsed for
    // that metric only); each query is its own answer, and the default
    // one is still the same afterwards.
    char qpath[450];
    snprintf(qpath, sizeof qpath, "%s?x=width", path);
    s_reply_t q = s_http(port, "GET", qpath, NULL, 0);
    s_check_error(&q, 400,
                  "x: 'width' is not swept: it takes one value (swept "
                  "numeric parameters: hidden_layers)");
    free(q.body);
    snprintf(qpath, sizeof qpath, "%s?metric=bogus", path);
    q = s_http(port, "GET", qpath, NULL, 0);
    s_check_error(&q, 400, "metric: unknown metric 'bogus' (one of");
    free(q.body);
    snprintf(qpath, sizeof qpath, "%s?metric=train_loss&x=depth", path);
    q = s_http(port, "GET", qpath, NULL, 0);
    assert_int_equal(q.status, 200);
    obj = s_json(&q);
    json_t *m = json_object_get(obj, "metric");
    assert_string_equal(json_string_value(json_object_get(m, "name")),
                        "train_loss");
    assert_string_equal(json_string_value(json_object_get(m, "goal")),
                        "minimize");
    json_t *pt = json_array_get(
        json_object_get(json_array_get(json_object_get(obj, "groups"), 0),
                        "points"),
        0);
    assert_true(fabs(json_number_value(json_object_get(pt, "mean")) - 1.0) <
                1e-12);
    json_decref(obj);
    free(q.body);
    again = s_http(port, "GET", path, NULL, 0);
    assert_string_equal(again.body, r.body);
    free(again.body);
    assert_int_equal(ms_store_sweep_generation(store, sweep), gen);
    assert_int_equal(
        ms_store_set_task_state(store, otask, MS_TASK_RUNNING, node, NULL),
        MS_OK);
    char *orow = s_cache_row(otask, other, node, 0, 0.9);
    assert_int_equal(
        ms_sf_append_result(store, node, otask, orow, strlen(orow)), MS_OK);
    free(orow);
    // Another sweep's result leaves this sweep's answer as it was. (A
    // counted result moves the node's standing, which every sweep's rows
    // show, so the store moves every sweep's generation: the answer may
    // be computed again, and must be the same.)
    again = s_http(port, "GET", path, NULL, 0);
    assert_int_equal(again.status, 200);
    assert_string_equal(again.body, r.body);
    free(again.body);
    free(r.body);
    gen = ms_store_sweep_generation(store, sweep);

    // A new result of this sweep: a new generation, and the next
    // analysis includes it (3 rows, depth 1's mean over two seeds).
    char *row = s_cache_row(tasks[2], sweep, node, 2, 0.7);
    assert_int_equal(
        ms_sf_append_result(store, node, tasks[2], row, strlen(row)), MS_OK);
    free(row);
    assert_true(ms_store_sweep_generation(store, sweep) != gen);
    r = s_http(port, "GET", path, NULL, 0);
    assert_int_equal(r.status, 200);
    obj = s_json(&r);
    assert_int_equal(json_integer_value(json_object_get(obj, "n_rows")), 3);
    json_t *group = json_array_get(json_object_get(obj, "groups"), 0);
    json_t *depth1 = json_array_get(json_object_get(group, "points"), 0);
    assert_int_equal(json_integer_value(json_object_get(depth1, "x")), 1);
    assert_int_equal(json_integer_value(json_object_get(depth1, "n")), 2);
    assert_true(
        fabs(json_number_value(json_object_get(depth1, "val_accuracy_mean")) -
             0.6) < 1e-9);
    json_decref(obj);
    free(r.body);
    // ?verified=1 is its own entry (no row is verified: none).
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/analysis?verified=1", hex);
    r = s_http(port, "GET", path, NULL, 0);
    assert_int_equal(r.status, 200);
    obj = s_json(&r);
    assert_int_equal(json_integer_value(json_object_get(obj, "n_rows")), 0);
    json_decref(obj);
    free(r.body);
    ms_api_destroy(&api);
    ms_store_destroy(&store);
    ms_sf_sweep_free(&sw);
    ms_sf_sweep_free(&osw);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_api_end_to_end, ms_td_root_setup,
                                        ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_bind_in_use_refused,
                                        ms_td_root_setup, ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_slow_clients_do_not_block,
                                        ms_td_root_setup, ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_filter_match, ms_td_root_setup,
                                        ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_token_file, ms_td_root_setup,
                                        ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_token_required, ms_td_root_setup,
                                        ms_td_root_teardown),
        cmocka_unit_test_setup_teardown(test_fields_and_analysis_cache,
                                        ms_td_root_setup, ms_td_root_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
