/*  =========================================================================
    ms_events_test - the event ring and its readers (wrap, resume, reset,
    gaps, sweep filter, keepalive, many readers on threads, shutdown),
    and event streams served by a real ms_api on a loopback port: the
    stream limit (503), delivery to open streams, a reader that does not
    read cut off, and the API stopped with streams open (no hang; the
    ASan build checks that nothing leaks)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_api.h"
#include "ms_events.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

//  --------------------------------------------------------------------------
//  Sleep ms milliseconds.

static void
s_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long) (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const uint8_t s_sweep_a[MS_EVENTS_ID_BYTES] = {0xa};
static const uint8_t s_sweep_b[MS_EVENTS_ID_BYTES] = {0xb};

//  Park and wake calls of a reader.
typedef struct {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int parks, wakes; // calls so far
    bool woken;       // wake came after the last park
} s_park_t;

static void
s_park_init(s_park_t *p)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->cond, NULL);
}

static void
s_park_fini(s_park_t *p)
{
    pthread_mutex_destroy(&p->mutex);
    pthread_cond_destroy(&p->cond);
}

static void
s_on_park(void *arg)
{
    s_park_t *p = arg;
    pthread_mutex_lock(&p->mutex);
    p->parks++;
    p->woken = false;
    pthread_mutex_unlock(&p->mutex);
}

static void
s_on_wake(void *arg)
{
    s_park_t *p = arg;
    pthread_mutex_lock(&p->mutex);
    p->wakes++;
    p->woken = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mutex);
}

//  --------------------------------------------------------------------------
//  Publish "{"n":N}" as TYPE.

static uint64_t
s_pub(ms_events_t *ev, const char *type, const uint8_t *sweep, int n)
{
    char data[64];
    snprintf(data, sizeof data, "{\"n\":%d}", n);
    uint64_t id = 0;
    assert_int_equal(ms_events_publish(ev, type, sweep, data, &id), MS_OK);
    return id;
}

//  --------------------------------------------------------------------------
//  The ids of the "id: N" lines of a text, into ids (at most max); the
//  count.

static size_t
s_ids(const char *text, uint64_t *ids, size_t max)
{
    size_t n = 0;
    for (const char *p = text; p && (p = strstr(p, "id: ")) && n < max; p++)
        if (p == text || p[-1] == '\n')
            ids[n++] = strtoull(p + 4, NULL, 10);
    return n;
}

//  --------------------------------------------------------------------------
//  The next text of a reader (must be MS_OK); caller frees.

static char *
s_next(ms_events_reader_t *r)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ms_events_reader_next(r, 1 << 20, &text, &len), MS_OK);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

//  --------------------------------------------------------------------------
//  Events published reach an open reader in order, with their frames;
//  with nothing left the reader parks once and the next publish wakes it.

static void
test_publish_read_park_wake(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(8, 4, 1);
    assert_non_null(ev);
    s_park_t p;
    s_park_init(&p);
    s_pub(ev, "progress", s_sweep_a, 0); // before the reader: not seen
    ms_events_reader_t *r = NULL;
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, s_on_park, s_on_wake, &p, &r),
        MS_OK);
    assert_int_equal(ms_events_readers(ev), 1);
    s_pub(ev, "progress", s_sweep_a, 1);
    s_pub(ev, "peer", NULL, 2);
    char *text = s_next(r);
    assert_string_equal(text, "id: 2\nevent: progress\ndata: {\"n\":1}\n\n"
                              "id: 3\nevent: peer\ndata: {\"n\":2}\n\n");
    free(text);
    char *none = NULL;
    size_t len = 0;
    assert_int_equal(ms_events_reader_next(r, 1 << 20, &none, &len),
                     MS_ERR_TIMEOUT);
    assert_null(none);
    assert_int_equal(p.parks, 1);
    assert_int_equal(p.wakes, 0);
    s_pub(ev, "result", s_sweep_b, 3);
    assert_int_equal(p.wakes, 1);
    s_pub(ev, "result", s_sweep_b, 4); // not parked: no second wake
    assert_int_equal(p.wakes, 1);
    text = s_next(r);
    uint64_t ids[8];
    assert_int_equal(s_ids(text, ids, 8), 2);
    assert_int_equal(ids[0], 4);
    assert_int_equal(ids[1], 5);
    free(text);
    assert_int_equal(ms_events_last_id(ev), 5);
    ms_events_reader_close(&r);
    assert_null(r);
    assert_int_equal(ms_events_readers(ev), 0);
    ms_events_destroy(&ev);
    assert_null(ev);
    s_park_fini(&p);
}

//  --------------------------------------------------------------------------
//  A reader that falls more than the ring behind is cut off; one that
//  keeps up across many wraps sees every event.

static void
test_ring_wrap(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(4, 4, 100);
    ms_events_reader_t *slow = NULL, *fast = NULL;
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, NULL, NULL, NULL, &slow),
        MS_OK);
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, NULL, NULL, NULL, &fast),
        MS_OK);
    uint64_t want = 100;
    for (int i = 0; i < 50; i++) {
        s_pub(ev, "progress", NULL, i);
        if (i % 3 == 2) {
            char *text = s_next(fast);
            uint64_t ids[8];
            size_t n = s_ids(text, ids, 8);
            for (size_t k = 0; k < n; k++)
                assert_int_equal(ids[k], want++);
            free(text);
        }
    }
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ms_events_reader_next(slow, 1 << 20, &text, &len),
                     MS_ERR_EXPIRED);
    assert_null(text);
    ms_events_reader_close(&slow);
    ms_events_reader_close(&fast);
    ms_events_destroy(&ev);
}

//  --------------------------------------------------------------------------
//  Resume: after a held id, exactly the events after it; after the last
//  one, nothing; from before the ring, a future id or across a gap
//  (nobody listened), `reset` first and then new events only.

static void
test_resume_and_reset(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(4, 8, 1);
    for (int i = 1; i <= 3; i++)
        s_pub(ev, "result", s_sweep_a, i); // ids 1..3
    ms_events_reader_t *r = NULL;
    uint64_t ids[8];
    // from 1: 2 and 3
    assert_int_equal(
        ms_events_reader_open(ev, NULL, true, 1, NULL, NULL, NULL, &r), MS_OK);
    char *text = s_next(r);
    assert_int_equal(s_ids(text, ids, 8), 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    free(text);
    ms_events_reader_close(&r);
    // from 0 (before the first event, all held): 1..3
    assert_int_equal(
        ms_events_reader_open(ev, NULL, true, 0, NULL, NULL, NULL, &r), MS_OK);
    text = s_next(r);
    assert_int_equal(s_ids(text, ids, 8), 3);
    assert_int_equal(ids[0], 1);
    free(text);
    ms_events_reader_close(&r);
    // from the last: nothing yet
    assert_int_equal(
        ms_events_reader_open(ev, NULL, true, 3, NULL, NULL, NULL, &r), MS_OK);
    char *none = NULL;
    size_t len = 0;
    assert_int_equal(ms_events_reader_next(r, 1 << 20, &none, &len),
                     MS_ERR_TIMEOUT);
    ms_events_reader_close(&r);
    // wrap: ids 1..7 published, ring holds 4..7
    for (int i = 4; i <= 7; i++)
        s_pub(ev, "result", s_sweep_a, i);
    assert_int_equal(
        ms_events_reader_open(ev, NULL, true, 3, NULL, NULL, NULL, &r), MS_OK);
    text = s_next(r); // 3 is the one before the oldest: still exact
    assert_int_equal(s_ids(text, ids, 8), 4);
    assert_int_equal(ids[0], 4);
    free(text);
    ms_events_reader_close(&r);
    const uint64_t stale[] = {2, 1000, 3};
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(ms_events_reader_open(ev, NULL, true, stale[k], NULL,
                                               NULL, NULL, &r),
                         MS_OK);
        char want[80];
        snprintf(want, sizeof want, "id: %llu\nevent: reset\ndata: {}\n\n",
                 (unsigned long long) ms_events_last_id(ev));
        text = s_next(r);
        assert_string_equal(text, want);
        free(text);
        s_pub(ev, "peer", NULL, 8);
        text = s_next(r);
        assert_int_equal(s_ids(text, ids, 8), 1);
        assert_int_equal(ids[0], ms_events_last_id(ev));
        free(text);
        ms_events_reader_close(&r);
        // the reset's id resumes exactly
        assert_int_equal(ms_events_reader_open(ev, NULL, true,
                                               ms_events_last_id(ev) - 1, NULL,
                                               NULL, NULL, &r),
                         MS_OK);
        text = s_next(r);
        assert_int_equal(s_ids(text, ids, 8), 1);
        assert_null(strstr(text, "reset"));
        free(text);
        ms_events_reader_close(&r);
    }
    ms_events_destroy(&ev);
}

//  --------------------------------------------------------------------------
//  Nobody listening: wanted is false and notes a gap, and a reader
//  resuming from before it gets `reset`; a closed stream keeps the ring
//  wanted for the linger time (a reconnect resumes exactly).

static void
test_gap_and_linger(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(16, 8, 1);
    int64_t now = ms_events_now_ms();
    s_pub(ev, "sweep", s_sweep_a, 1);        // id 1
    assert_false(ms_events_wanted(ev, now)); // never a reader: a gap
    s_pub(ev, "sweep", s_sweep_a, 2);        // id 2 (after the gap)
    ms_events_reader_t *r = NULL;
    assert_int_equal(
        ms_events_reader_open(ev, NULL, true, 1, NULL, NULL, NULL, &r), MS_OK);
    assert_true(ms_events_wanted(ev, now)); // a reader is open
    char *text = s_next(r);
    assert_non_null(strstr(text, "event: reset"));
    free(text);
    ms_events_reader_close(&r);
    now = ms_events_now_ms();
    assert_true(ms_events_wanted(ev, now)); // closed just now: lingers
    s_pub(ev, "sweep", s_sweep_a, 3);       // id 3
    assert_int_equal(
        ms_events_reader_open(ev, NULL, true, 2, NULL, NULL, NULL, &r), MS_OK);
    text = s_next(r);
    uint64_t ids[4];
    assert_int_equal(s_ids(text, ids, 4), 1);
    assert_int_equal(ids[0], 3);
    assert_null(strstr(text, "reset"));
    free(text);
    ms_events_reader_close(&r);
    assert_false(
        ms_events_wanted(ev, ms_events_now_ms() + MS_EVENTS_LINGER_MS));
    ms_events_destroy(&ev);
}

//  --------------------------------------------------------------------------
//  A sweep filter: only that sweep's events and `reset`; a parked
//  filtered reader is not woken by other events, nor pushed out of the
//  ring by them.

static void
test_filter_by_sweep(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(4, 8, 1);
    s_park_t p;
    s_park_init(&p);
    ms_events_reader_t *r = NULL;
    assert_int_equal(ms_events_reader_open(ev, s_sweep_a, false, 0, s_on_park,
                                           s_on_wake, &p, &r),
                     MS_OK);
    s_pub(ev, "progress", s_sweep_a, 1); // 1
    s_pub(ev, "progress", s_sweep_b, 2); // 2
    s_pub(ev, "peer", NULL, 3);          // 3
    s_pub(ev, "result", s_sweep_a, 4);   // 4
    char *text = s_next(r);
    uint64_t ids[8];
    assert_int_equal(s_ids(text, ids, 8), 2);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 4);
    free(text);
    char *none = NULL;
    size_t len = 0;
    assert_int_equal(ms_events_reader_next(r, 1 << 20, &none, &len),
                     MS_ERR_TIMEOUT);
    for (int i = 0; i < 100; i++) // 25 times the ring, none for it
        s_pub(ev, "progress", s_sweep_b, i);
    assert_int_equal(p.wakes, 0);
    s_pub(ev, "reset", NULL, 0);
    assert_int_equal(p.wakes, 1);
    s_pub(ev, "verdict", s_sweep_a, 5);
    text = s_next(r);
    assert_int_equal(s_ids(text, ids, 8), 2);
    assert_non_null(strstr(text, "event: reset"));
    assert_non_null(strstr(text, "event: verdict"));
    assert_null(strstr(text, "progress"));
    free(text);
    ms_events_reader_close(&r);
    ms_events_destroy(&ev);
    s_park_fini(&p);
}

//  --------------------------------------------------------------------------
//  Keepalive: a parked reader silent for MS_EVENTS_KEEPALIVE_MS is woken
//  by a tick and gets a comment; shutdown wakes it and ends it.

static void
test_keepalive_and_shutdown(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(4, 8, 1);
    s_park_t p;
    s_park_init(&p);
    ms_events_reader_t *r = NULL;
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, s_on_park, s_on_wake, &p, &r),
        MS_OK);
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(ms_events_reader_next(r, 1 << 20, &text, &len),
                     MS_ERR_TIMEOUT);
    int64_t now = ms_events_now_ms();
    ms_events_tick(ev, now + MS_EVENTS_KEEPALIVE_MS / 2);
    assert_int_equal(p.wakes, 0);
    ms_events_tick(ev, now + MS_EVENTS_KEEPALIVE_MS + 1);
    assert_int_equal(p.wakes, 1);
    text = s_next(r);
    assert_string_equal(text, ": keepalive\n\n");
    free(text);
    assert_int_equal(ms_events_reader_next(r, 1 << 20, &text, &len),
                     MS_ERR_TIMEOUT);
    ms_events_shutdown(ev);
    assert_int_equal(p.wakes, 2);
    assert_int_equal(ms_events_reader_next(r, 1 << 20, &text, &len),
                     MS_ERR_INTERRUPTED);
    ms_events_reader_t *late = NULL;
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, NULL, NULL, NULL, &late),
        MS_ERR_INTERRUPTED);
    assert_null(late);
    ms_events_reader_close(&r);
    ms_events_destroy(&ev);
    s_park_fini(&p);
}

//  --------------------------------------------------------------------------
//  Bad input: types, data with a line break, ids.

static void
test_bad_input(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(4, 1, 1);
    assert_int_equal(ms_events_publish(ev, "x", NULL, "{\n}", NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_events_publish(ev, "x", NULL, "{\r}", NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_events_publish(ev, "", NULL, "{}", NULL),
                     MS_ERR_INVALID);
    assert_int_equal(ms_events_publish(ev, "Bad:type", NULL, "{}", NULL),
                     MS_ERR_INVALID);
    assert_int_equal(
        ms_events_publish(ev, "a_type_much_too_long", NULL, "{}", NULL),
        MS_ERR_INVALID);
    assert_int_equal(ms_events_last_id(ev), 0);
    uint64_t id = 0;
    assert_int_equal(ms_events_parse_id("1796003686351020", &id), MS_OK);
    assert_int_equal(id, 1796003686351020ull);
    const char *bad[] = {"",
                         "-1",
                         "1x",
                         " 1",
                         "+1",
                         "123456789012345678901",
                         "99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ms_events_parse_id(bad[i], &id), MS_ERR_INVALID);
    // the reader limit
    ms_events_reader_t *a = NULL, *b = NULL;
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, NULL, NULL, NULL, &a), MS_OK);
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, NULL, NULL, NULL, &b),
        MS_ERR_RANGE);
    assert_null(b);
    ms_events_reader_close(&a);
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, NULL, NULL, NULL, &b), MS_OK);
    ms_events_reader_close(&b);
    ms_events_destroy(&ev);
}

//  One reader thread of test_many_readers.
typedef struct {
    ms_events_t *ev;
    s_park_t park;
    ms_events_reader_t *reader;
    uint64_t first, n_seen; // ids expected from first on; seen in order
    bool in_order;          // every id was the next one
    int end_rc;             // how the reader ended
} s_thread_reader_t;

static void *
s_reader_thread(void *arg)
{
    s_thread_reader_t *t = arg;
    t->in_order = true;
    for (;;) {
        char *text = NULL;
        size_t len = 0;
        int rc = ms_events_reader_next(t->reader, 4096, &text, &len);
        if (rc == MS_ERR_TIMEOUT) {
            pthread_mutex_lock(&t->park.mutex);
            while (!t->park.woken)
                pthread_cond_wait(&t->park.cond, &t->park.mutex);
            pthread_mutex_unlock(&t->park.mutex);
            continue;
        }
        if (rc != MS_OK) {
            t->end_rc = rc;
            return NULL;
        }
        uint64_t ids[512];
        size_t n = s_ids(text, ids, 512);
        for (size_t k = 0; k < n; k++)
            if (ids[k] != t->first + t->n_seen++)
                t->in_order = false;
        free(text);
    }
}

//  --------------------------------------------------------------------------
//  Many readers on their own threads while one thread publishes: each
//  sees every event once, in order; shutdown ends them all.

static void
test_many_readers(void **state)
{
    (void) state;
    enum { N_READERS = 8, N_EVENTS = 20000 };
    ms_events_t *ev = ms_events_new(N_EVENTS, N_READERS, 1);
    s_thread_reader_t t[N_READERS];
    pthread_t th[N_READERS];
    for (int i = 0; i < N_READERS; i++) {
        memset(&t[i], 0, sizeof t[i]);
        t[i].ev = ev;
        t[i].first = 1;
        s_park_init(&t[i].park);
        assert_int_equal(ms_events_reader_open(ev, NULL, false, 0, s_on_park,
                                               s_on_wake, &t[i].park,
                                               &t[i].reader),
                         MS_OK);
        assert_int_equal(pthread_create(&th[i], NULL, s_reader_thread, &t[i]),
                         0);
    }
    ms_events_reader_t *extra = NULL;
    assert_int_equal(
        ms_events_reader_open(ev, NULL, false, 0, NULL, NULL, NULL, &extra),
        MS_ERR_RANGE);
    for (int i = 0; i < N_EVENTS; i++)
        s_pub(ev, "progress", s_sweep_a, i);
    // wait (bounded) until every reader has seen every event
    for (int w = 0; w < 1000; w++) {
        int caught_up = 0;
        for (int i = 0; i < N_READERS; i++)
            caught_up +=
                __atomic_load_n(&t[i].n_seen, __ATOMIC_SEQ_CST) == N_EVENTS;
        if (caught_up == N_READERS)
            break;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    ms_events_shutdown(ev);
    for (int i = 0; i < N_READERS; i++) {
        pthread_join(th[i], NULL);
        assert_true(t[i].in_order);
        assert_int_equal(t[i].n_seen, N_EVENTS);
        assert_int_equal(t[i].end_rc, MS_ERR_INTERRUPTED);
        ms_events_reader_close(&t[i].reader);
        s_park_fini(&t[i].park);
    }
    ms_events_destroy(&ev);
}

//  ==========================================================================
//  Streams over HTTP (a real ms_api)

//  --------------------------------------------------------------------------
//  Connect to 127.0.0.1:port and send a GET of path; the socket.

static int
s_connect_get(int port, const char *path, const char *extra_header)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET,
                               .sin_port = htons((uint16_t) port)};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *) &addr, sizeof addr), 0);
    char head[512];
    int n = snprintf(head, sizeof head,
                     "GET %s HTTP/1.1\r\nHost: localhost\r\n%s\r\n", path,
                     extra_header ? extra_header : "");
    assert_int_equal(send(fd, head, (size_t) n, MSG_NOSIGNAL), n);
    return fd;
}

//  --------------------------------------------------------------------------
//  Read from fd into buf (appending, NUL-terminated) until it holds
//  needle, EOF, or timeout_ms passes. Whether needle was found.

static bool
s_read_until(int fd, char *buf, size_t cap, const char *needle, int timeout_ms,
             bool *eof)
{
    int64_t end = ms_events_now_ms() + timeout_ms;
    size_t len = strlen(buf);
    while (!strstr(buf, needle)) {
        int64_t left = end - ms_events_now_ms();
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&pfd, 1, (int) left) <= 0)
            return false;
        if (len + 1 >= cap) { // keep the tail only
            memmove(buf, buf + cap / 2, len - cap / 2 + 1);
            len -= cap / 2;
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r <= 0) {
            if (eof)
                *eof = true;
            return false;
        }
        len += (size_t) r;
        buf[len] = 0;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Two streams open (the limit), the third answered 503 JSON; an event
//  reaches both; a client that stops reading while far more than the
//  ring is published is cut off; the API stops at once with a parked
//  stream open, and every reader is closed.

static void
test_http_streams(void **state)
{
    (void) state;
    ms_events_t *ev = ms_events_new(8, 2, 1);
    ms_api_hooks_t hooks = {.events = ev};
    ms_api_t *api = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_api_open(&api, "127.0.0.1:0", &hooks, &diag), MS_OK);
    int port = atoi(strrchr(ms_api_address(api), ':') + 1);
    static char a_buf[1 << 16], b_buf[1 << 16], c_buf[4096];
    int a = s_connect_get(port, "/api/v1/events", NULL);
    int b = s_connect_get(port, "/api/v1/events", NULL);
    a_buf[0] = b_buf[0] = c_buf[0] = 0;
    assert_true(
        s_read_until(a, a_buf, sizeof a_buf, "meshsweep events", 5000, NULL));
    assert_true(
        s_read_until(b, b_buf, sizeof b_buf, "meshsweep events", 5000, NULL));
    assert_non_null(strstr(a_buf, "text/event-stream"));
    assert_non_null(strstr(a_buf, "Cache-Control: no-store"));
    // both wait (parked) before the readers count is checked
    for (int w = 0; w < 100 && ms_events_readers(ev) < 2; w++)
        s_sleep_ms(10);
    assert_int_equal(ms_events_readers(ev), 2);
    int c = s_connect_get(port, "/api/v1/events", NULL);
    bool eof = false;
    s_read_until(c, c_buf, sizeof c_buf, "\"}", 5000, &eof);
    assert_non_null(strstr(c_buf, " 503 "));
    assert_non_null(strstr(c_buf, "{\"error\""));
    close(c);
    s_pub(ev, "progress", s_sweep_a, 42);
    assert_true(
        s_read_until(a, a_buf, sizeof a_buf, "data: {\"n\":42}", 5000, NULL));
    assert_true(
        s_read_until(b, b_buf, sizeof b_buf, "data: {\"n\":42}", 5000, NULL));
    // b stops reading: 400 events of 32 KiB (12.5 MiB, 1600 rings of 8)
    // fill its socket; once it reads again the stream is cut off (EOF)
    // long before it could have got them all.
    size_t big_n = 32 * 1024;
    char *big = malloc(big_n + 1);
    memset(big, 'x', big_n);
    memcpy(big, "{\"s\":\"", 6);
    memcpy(big + big_n - 2, "\"}", 3);
    for (int i = 0; i < 400; i++)
        assert_int_equal(ms_events_publish(ev, "result", NULL, big, NULL),
                         MS_OK);
    free(big);
    eof = false;
    b_buf[0] = 0;
    s_read_until(b, b_buf, sizeof b_buf, "never-in-the-stream", 20000, &eof);
    assert_true(eof);
    close(b);
    // a keeps reading to the end of what was published, then parks
    char want[64];
    snprintf(want, sizeof want, "id: %llu\n",
             (unsigned long long) ms_events_last_id(ev));
    assert_true(s_read_until(a, a_buf, sizeof a_buf, want, 20000, NULL) ||
                strstr(a_buf, "id: ") != NULL);
    // stop the API with a open, parked stream: no hang, readers closed
    s_sleep_ms(100);
    int64_t t0 = ms_events_now_ms();
    ms_api_destroy(&api);
    assert_true(ms_events_now_ms() - t0 < 5000);
    assert_int_equal(ms_events_readers(ev), 0);
    eof = false;
    s_read_until(a, a_buf, sizeof a_buf, "never-in-the-stream", 5000, &eof);
    assert_true(eof);
    close(a);
    ms_events_destroy(&ev);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_publish_read_park_wake),
        cmocka_unit_test(test_ring_wrap),
        cmocka_unit_test(test_resume_and_reset),
        cmocka_unit_test(test_gap_and_linger),
        cmocka_unit_test(test_filter_by_sweep),
        cmocka_unit_test(test_keepalive_and_shutdown),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_many_readers),
        cmocka_unit_test(test_http_streams),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
