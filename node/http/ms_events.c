/*  =========================================================================
    ms_events - the node's recent events (a bounded ring) and the
    server-sent event streams that read them (GET /api/v1/events)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The ring. Event id x lives in slot (x - first_id) mod capacity; the
    ring holds ids max(first_id, next_id - capacity) .. next_id - 1. A
    publish takes the mutex, gives the next id, swaps its (already
    copied) data into the slot and wakes the parked readers the event is
    for; the data it replaced is freed after the unlock. So the node loop
    never waits for a reader: a reader only holds the mutex while it
    copies out what it has not sent yet (about 64 KiB at most a call).

    Readers. Each open stream has a reader: the next id it delivers
    (pos), an optional sweep filter, and whether it is parked. A reader
    with nothing to send parks (its park callback suspends the HTTP
    connection, under the mutex) and a publish, tick or shutdown that has
    something for it unparks it (wake resumes the connection, under the
    mutex: a wake can never overtake its park). A parked filtered reader
    skips the events it does not want as they are published, so a busy
    pool cannot push it out of the ring while it waits. A reader that is
    not parked but slow (its socket full) keeps its pos; once the ring
    has moved past it, next returns MS_ERR_EXPIRED and the stream ends:
    the client reconnects and, its Last-Event-ID gone, gets `reset`.

    Gaps. When nobody listens (no stream open, and none closed within
    MS_EVENTS_LINGER_MS), ms_events_wanted says so and the node does not
    build its events (result rows cost a store read each). The ring notes
    the gap (gap_before = next_id), and a reader resuming from an id
    before the gap gets `reset` first: a client never silently misses an
    event. Why not always publish: a node with no dashboard open would
    read a row per result for nothing; the linger keeps resuming exact
    across a reconnect (EventSource retries after a few seconds).

    Serving (ms_events_serve). A libmicrohttpd response from a content
    reader callback (chunked, size unknown); the callback copies out of
    the reader's buffer, and when the reader has nothing it is parked:
    MHD_suspend_connection, return 0. The API's thread pool stays free:
    a waiting stream is a suspended socket. Keepalive comments every
    MS_EVENTS_KEEPALIVE_MS (ms_events_tick from the node loop) also
    make a vanished client show (a suspended connection notices nothing).
    At shutdown every parked stream is resumed and ended before the
    daemon stops (libmicrohttpd forbids stopping with suspended ones).
*/
#include "ms_events.h"
#include "ms_text.h"

#include "ms_clock.h"
#include <microhttpd.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

//  One event in the ring.
typedef struct {
    uint64_t id;                       // its id (0: empty slot)
    char type[MS_EVENTS_TYPE_MAX + 1]; // "progress", "result", ...
    bool has_sweep;                    // sweep is set
    uint8_t sweep[MS_EVENTS_ID_BYTES]; // the sweep it is about
    char *data;                        // one line of JSON (owned)
} s_entry_t;

struct ms_events {
    pthread_mutex_t mutex;       // guards everything below
    s_entry_t *ring;             // capacity slots
    size_t capacity;             // events kept
    uint64_t first_id;           // id of the first event ever
    uint64_t next_id;            // id the next event gets
    uint64_t gap_before;         // resuming from an id below: reset
    size_t max_readers;          // open readers at most
    size_t n_readers;            // open now
    ms_events_reader_t *readers; // doubly linked
    bool closed_once;            // a reader closed at least once
    int64_t last_close_ms;       // monotonic ms of the last close
    bool shut;                   // ms_events_shutdown was called
};

struct ms_events_reader {
    ms_events_t *events;             // the ring (borrowed)
    ms_events_reader_t *prev, *next; // in events->readers
    bool has_filter;                 // only events of sweep
    uint8_t sweep[MS_EVENTS_ID_BYTES];
    uint64_t pos;                 // next id to deliver
    bool reset_due;               // send `reset` first
    bool keepalive_due;           // send a keepalive comment
    bool parked;                  // park was called, wake not yet
    int64_t last_sent_ms;         // monotonic ms of the last text
    ms_events_wake_fn park, wake; // stream suspension (may be NULL)
    void *arg;                    // their argument
};

//  --------------------------------------------------------------------------
//  The monotonic clock in ms.

int64_t
ms_events_now_ms(void)
{
    return ms_clock_mono_ms();
}

//  --------------------------------------------------------------------------
//  A new ring.

ms_events_t *
ms_events_new(size_t capacity, size_t max_readers, uint64_t first_id)
{
    assert(capacity >= 2 && first_id >= 1);
    ms_events_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->ring = calloc(capacity, sizeof *self->ring);
    if (!self->ring) {
        free(self);
        return NULL;
    }
    pthread_mutex_init(&self->mutex, NULL);
    self->capacity = capacity;
    self->first_id = first_id;
    self->next_id = first_id;
    self->max_readers = max_readers;
    return self;
}

//  --------------------------------------------------------------------------
//  Free the ring.

void
ms_events_destroy(ms_events_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_events_t *self = *self_p;
    assert(self->n_readers == 0);
    for (size_t i = 0; i < self->capacity; i++)
        free(self->ring[i].data);
    free(self->ring);
    pthread_mutex_destroy(&self->mutex);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Oldest id held (caller holds the mutex).

static uint64_t
s_oldest(const ms_events_t *self)
{
    uint64_t held = self->next_id - self->first_id;
    return held > self->capacity ? self->next_id - self->capacity
                                 : self->first_id;
}

//  --------------------------------------------------------------------------
//  Whether a reader wants an event.

static bool
s_wants(const ms_events_reader_t *r, const s_entry_t *e)
{
    if (!r->has_filter || strcmp(e->type, "reset") == 0)
        return true;
    return e->has_sweep && memcmp(e->sweep, r->sweep, MS_EVENTS_ID_BYTES) == 0;
}

//  --------------------------------------------------------------------------
//  Unpark a reader (caller holds the mutex).

static void
s_unpark(ms_events_reader_t *r)
{
    if (!r->parked)
        return;
    r->parked = false;
    if (r->wake)
        r->wake(r->arg);
}

//  --------------------------------------------------------------------------
//  Whether anyone listens; notes a gap when not.

bool
ms_events_wanted(ms_events_t *self, int64_t now_ms)
{
    pthread_mutex_lock(&self->mutex);
    bool wanted = self->n_readers > 0 ||
                  (self->closed_once &&
                   now_ms - self->last_close_ms < MS_EVENTS_LINGER_MS);
    if (!wanted)
        self->gap_before = self->next_id;
    pthread_mutex_unlock(&self->mutex);
    return wanted;
}

//  --------------------------------------------------------------------------
//  Publish one event.

int
ms_events_publish(ms_events_t *self, const char *type, const uint8_t *sweep_id,
                  const char *data, uint64_t *id)
{
    size_t tlen = type ? strlen(type) : 0;
    if (tlen == 0 || tlen > MS_EVENTS_TYPE_MAX ||
        strspn(type, "abcdefghijklmnopqrstuvwxyz_") != tlen || !data ||
        strpbrk(data, "\r\n"))
        return MS_ERR_INVALID;
    char *copy = strdup(data);
    if (!copy)
        return MS_ERR_NOMEM;
    pthread_mutex_lock(&self->mutex);
    uint64_t eid = self->next_id++;
    s_entry_t *e = &self->ring[(eid - self->first_id) % self->capacity];
    char *old = e->data;
    e->id = eid;
    memcpy(e->type, type, tlen + 1);
    e->has_sweep = sweep_id != NULL;
    if (sweep_id)
        memcpy(e->sweep, sweep_id, MS_EVENTS_ID_BYTES);
    e->data = copy;
    for (ms_events_reader_t *r = self->readers; r; r = r->next) {
        if (!r->parked)
            continue;
        if (s_wants(r, e))
            s_unpark(r);
        else if (r->pos == eid)
            r->pos = eid + 1; // caught up: skip what it does not want
    }
    pthread_mutex_unlock(&self->mutex);
    free(old);
    if (id)
        *id = eid;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open a reader.

int
ms_events_reader_open(ms_events_t *self, const uint8_t *sweep_id, bool resume,
                      uint64_t last_id, ms_events_wake_fn park,
                      ms_events_wake_fn wake, void *arg,
                      ms_events_reader_t **out)
{
    *out = NULL;
    ms_events_reader_t *r = calloc(1, sizeof *r);
    if (!r)
        return MS_ERR_NOMEM;
    r->events = self;
    r->park = park;
    r->wake = wake;
    r->arg = arg;
    if (sweep_id) {
        r->has_filter = true;
        memcpy(r->sweep, sweep_id, MS_EVENTS_ID_BYTES);
    }
    r->last_sent_ms = ms_events_now_ms();
    pthread_mutex_lock(&self->mutex);
    int rc = MS_OK;
    if (self->shut)
        rc = MS_ERR_INTERRUPTED;
    else if (self->n_readers >= self->max_readers)
        rc = MS_ERR_RANGE;
    if (rc != MS_OK) {
        pthread_mutex_unlock(&self->mutex);
        free(r);
        return rc;
    }
    r->pos = self->next_id;
    if (resume) {
        // Events after last_id are all held (and none was skipped) when
        // oldest <= last_id + 1 <= next_id and last_id >= gap_before.
        if (last_id < self->first_id - 1 || last_id >= self->next_id ||
            last_id + 1 < s_oldest(self) || last_id < self->gap_before)
            r->reset_due = true;
        else
            r->pos = last_id + 1;
    }
    r->next = self->readers;
    if (self->readers)
        self->readers->prev = r;
    self->readers = r;
    self->n_readers++;
    pthread_mutex_unlock(&self->mutex);
    *out = r;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Close a reader.

void
ms_events_reader_close(ms_events_reader_t **reader_p)
{
    if (!reader_p || !*reader_p)
        return;
    ms_events_reader_t *r = *reader_p;
    ms_events_t *self = r->events;
    pthread_mutex_lock(&self->mutex);
    if (r->prev)
        r->prev->next = r->next;
    else
        self->readers = r->next;
    if (r->next)
        r->next->prev = r->prev;
    self->n_readers--;
    self->closed_once = true;
    self->last_close_ms = ms_events_now_ms();
    pthread_mutex_unlock(&self->mutex);
    free(r);
    *reader_p = NULL;
}

//  --------------------------------------------------------------------------
//  The next text of a reader.

int
ms_events_reader_next(ms_events_reader_t *r, size_t max_bytes, char **text,
                      size_t *len)
{
    *text = NULL;
    *len = 0;
    ms_events_t *self = r->events;
    ms_text_t t = {0};
    int rc = MS_OK;
    pthread_mutex_lock(&self->mutex);
    if (self->shut) {
        rc = MS_ERR_INTERRUPTED;
        goto done;
    }
    if (r->reset_due) {
        ms_text_printf(&t, "id: %" PRIu64 "\nevent: reset\ndata: {}\n\n",
                       self->next_id - 1);
        r->pos = self->next_id;
        r->reset_due = false;
    } else if (r->pos < s_oldest(self)) {
        rc = MS_ERR_EXPIRED; // fell behind by more than the ring
        goto done;
    }
    while (r->pos < self->next_id && t.len < max_bytes && !t.failed) {
        const s_entry_t *e =
            &self->ring[(r->pos - self->first_id) % self->capacity];
        r->pos++;
        if (s_wants(r, e))
            ms_text_printf(&t, "id: %" PRIu64 "\nevent: %s\ndata: %s\n\n",
                           e->id, e->type, e->data);
    }
    if (t.len == 0 && r->keepalive_due && !t.failed)
        ms_text_printf(&t, ": keepalive\n\n");
    r->keepalive_due = false;
    if (t.failed) {
        rc = MS_ERR_NOMEM;
        goto done;
    }
    if (t.len == 0) {
        r->parked = true;
        if (r->park)
            r->park(r->arg);
        rc = MS_ERR_TIMEOUT;
        goto done;
    }
    r->last_sent_ms = ms_events_now_ms();
done:
    pthread_mutex_unlock(&self->mutex);
    if (rc != MS_OK) {
        free(t.data);
        return rc;
    }
    *text = t.data;
    *len = t.len;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Keepalives due.

void
ms_events_tick(ms_events_t *self, int64_t now_ms)
{
    pthread_mutex_lock(&self->mutex);
    for (ms_events_reader_t *r = self->readers; r; r = r->next)
        if (r->parked && now_ms - r->last_sent_ms >= MS_EVENTS_KEEPALIVE_MS) {
            r->keepalive_due = true;
            s_unpark(r);
        }
    pthread_mutex_unlock(&self->mutex);
}

//  --------------------------------------------------------------------------
//  Stop every stream.

void
ms_events_shutdown(ms_events_t *self)
{
    pthread_mutex_lock(&self->mutex);
    self->shut = true;
    for (ms_events_reader_t *r = self->readers; r; r = r->next)
        s_unpark(r);
    pthread_mutex_unlock(&self->mutex);
}

//  --------------------------------------------------------------------------
//  Readers open now.

size_t
ms_events_readers(ms_events_t *self)
{
    pthread_mutex_lock(&self->mutex);
    size_t n = self->n_readers;
    pthread_mutex_unlock(&self->mutex);
    return n;
}

//  --------------------------------------------------------------------------
//  Last id published.

uint64_t
ms_events_last_id(ms_events_t *self)
{
    pthread_mutex_lock(&self->mutex);
    uint64_t id = self->next_id - 1;
    pthread_mutex_unlock(&self->mutex);
    return id;
}

//  --------------------------------------------------------------------------
//  Parse an event id.

int
ms_events_parse_id(const char *text, uint64_t *id)
{
    size_t n = text ? strlen(text) : 0;
    if (n == 0 || n > 20 || strspn(text, "0123456789") != n)
        return MS_ERR_INVALID;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end)
        return MS_ERR_INVALID;
    *id = (uint64_t) v;
    return MS_OK;
}

//  ==========================================================================
//  Serving a stream with libmicrohttpd

#define S_STREAM_CHUNK (64 * 1024) // text taken from the reader at once

//  One open stream.
typedef struct {
    ms_events_reader_t *reader;  // its reader
    struct MHD_Connection *conn; // its connection (borrowed)
    char *buf;                   // text not sent yet (malloc'd)
    size_t len, off;             // bytes in buf, sent of them
} s_stream_t;

//  --------------------------------------------------------------------------
//  Park: suspend the connection (from the content reader, under the
//  ring's mutex).

static void
s_stream_park(void *arg)
{
    s_stream_t *st = arg;
    MHD_suspend_connection(st->conn);
}

//  --------------------------------------------------------------------------
//  Wake: resume the connection (any thread, under the ring's mutex).

static void
s_stream_wake(void *arg)
{
    s_stream_t *st = arg;
    MHD_resume_connection(st->conn);
}

//  --------------------------------------------------------------------------
//  libmicrohttpd's content reader: the stream's next bytes.

static ssize_t
s_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void) pos;
    s_stream_t *st = cls;
    if (st->off >= st->len) {
        free(st->buf);
        st->buf = NULL;
        st->len = st->off = 0;
        int rc = ms_events_reader_next(st->reader, S_STREAM_CHUNK, &st->buf,
                                       &st->len);
        if (rc == MS_ERR_TIMEOUT)
            return 0; // parked: the connection is suspended
        if (rc == MS_ERR_INTERRUPTED)
            return MHD_CONTENT_READER_END_OF_STREAM;
        if (rc != MS_OK)
            return MHD_CONTENT_READER_END_WITH_ERROR; // behind: cut off
    }
    size_t n = st->len - st->off;
    if (n > max)
        n = max;
    memcpy(buf, st->buf + st->off, n);
    st->off += n;
    return (ssize_t) n;
}

//  --------------------------------------------------------------------------
//  libmicrohttpd frees the response: the stream is over.

static void
s_stream_free(void *cls)
{
    s_stream_t *st = cls;
    ms_events_reader_close(&st->reader);
    free(st->buf);
    free(st);
}

//  --------------------------------------------------------------------------
//  Serve GET /api/v1/events.

int
ms_events_serve(ms_events_t *self, struct MHD_Connection *conn,
                const uint8_t *sweep_id, bool resume, uint64_t last_id)
{
    s_stream_t *st = calloc(1, sizeof *st);
    if (!st)
        return MS_ERR_NOMEM;
    st->conn = conn;
    // The first bytes: the client's reconnection delay, and a comment so
    // that the headers and something readable leave at once.
    st->buf = strdup("retry: 3000\n: meshsweep events\n\n");
    if (!st->buf) {
        free(st);
        return MS_ERR_NOMEM;
    }
    st->len = strlen(st->buf);
    int rc =
        ms_events_reader_open(self, sweep_id, resume, last_id, s_stream_park,
                              s_stream_wake, st, &st->reader);
    if (rc != MS_OK) {
        free(st->buf);
        free(st);
        return rc;
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 16 * 1024, s_stream_read, st, s_stream_free);
    if (!resp) {
        s_stream_free(st);
        return MS_ERR_NOMEM;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    enum MHD_Result r = MHD_queue_response(conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp); // the connection holds it (or it is freed)
    return r == MHD_YES ? MS_OK : MS_ERR_IO;
}
