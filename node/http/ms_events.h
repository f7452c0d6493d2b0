/*  =========================================================================
    ms_events - the node's recent events (a bounded ring) and the
    server-sent event streams that read them (GET /api/v1/events)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    docs/EVENTS.md is the user's view. The node loop publishes events
    (progress, result, verdict, peer, sweep: a type, an optional sweep id
    and one line of JSON); each gets the next id. HTTP threads read them
    through readers, one per open stream, from an id on (Last-Event-ID),
    optionally filtered by sweep. Publishing is O(1) under one mutex plus
    a wake of the parked readers (at most max_readers), and never waits
    for a reader: a reader that falls more than the ring behind is cut
    off (MS_ERR_EXPIRED) and reconnects with a `reset`.

    Thread rule: every function may be called from any thread, except
    ms_events_destroy (no reader may be open, no other call may run).
*/
#ifndef MS_EVENTS_H
#define MS_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

typedef struct ms_events ms_events_t;
typedef struct ms_events_reader ms_events_reader_t;
struct MHD_Connection;

#define MS_EVENTS_DEFAULT_CAPACITY 2048 // events kept for resuming
#define MS_EVENTS_DEFAULT_READERS 64    // open streams at most
#define MS_EVENTS_KEEPALIVE_MS 10000    // a parked stream gets a comment
#define MS_EVENTS_LINGER_MS                                                    \
    60000                     // events are kept this long after
                              // the last stream closed
#define MS_EVENTS_ID_BYTES 32 // a sweep id
#define MS_EVENTS_TYPE_MAX 15 // bytes of an event type

//  A new ring of CAPACITY events (>= 2) for at most MAX_READERS open
//  readers; the first event gets id FIRST_ID (>= 1; the node passes its
//  wall time in ms x 1000, so ids keep increasing across restarts). NULL
//  only when memory runs out. Free with ms_events_destroy().
ms_events_t *ms_events_new(size_t capacity, size_t max_readers,
                           uint64_t first_id);

//  Free the ring; NULL-safe; nulls *self_p. Every reader must be closed.
void ms_events_destroy(ms_events_t **self_p);

//  Whether an event published now would reach anyone: a reader is open,
//  or one closed less than MS_EVENTS_LINGER_MS before NOW_MS (monotonic
//  ms, ms_events_now_ms) and may resume. When not, the caller skips
//  building the event, and this call notes the gap: a reader resuming
//  from an id before it gets `reset` first. Cheap (one mutex).
bool ms_events_wanted(ms_events_t *self, int64_t now_ms);

//  Publish one event: TYPE (1..MS_EVENTS_TYPE_MAX bytes, [a-z_]),
//  SWEEP_ID (MS_EVENTS_ID_BYTES bytes, or NULL: not a sweep's event) and
//  DATA (one line of JSON, copied; no CR or LF). *id (may be NULL) gets
//  the event's id. The oldest event is dropped when the ring is full.
//  Wakes the parked readers the event is for. Returns MS_OK;
//  MS_ERR_INVALID (bad type, a line break in data); MS_ERR_NOMEM.
int ms_events_publish(ms_events_t *self, const char *type,
                      const uint8_t *sweep_id, const char *data, uint64_t *id);

//  Called with the reader's ARG: park suspends the stream (called under
//  the ring's mutex from inside ms_events_reader_next, when nothing is
//  ready); wake resumes it (called under the mutex from a publishing,
//  ticking or shutting-down thread, once per park). Neither may call
//  back into ms_events.
typedef void (*ms_events_wake_fn)(void *arg);

//  Open a reader. SWEEP_ID (or NULL) keeps only that sweep's events
//  (and `reset`). With RESUME, events after LAST_ID are delivered: if
//  some of them are gone (older than the ring, skipped while nobody
//  listened) or LAST_ID is not an id this ring gave, the reader first
//  gets `reset` and goes on with new events. Without RESUME, new events
//  only. PARK and WAKE (may be NULL: a polling reader) get ARG. Caller
//  owns *out (ms_events_reader_close). Returns MS_OK; MS_ERR_RANGE
//  (max_readers open already); MS_ERR_INTERRUPTED (shut down);
//  MS_ERR_NOMEM.
int ms_events_reader_open(ms_events_t *self, const uint8_t *sweep_id,
                          bool resume, uint64_t last_id, ms_events_wake_fn park,
                          ms_events_wake_fn wake, void *arg,
                          ms_events_reader_t **out);

//  Close a reader; NULL-safe; nulls *reader_p. Never calls park or wake.
void ms_events_reader_close(ms_events_reader_t **reader_p);

//  The next text of the reader's stream, up to about MAX_BYTES (one
//  frame at least): frames "id: N\nevent: TYPE\ndata: JSON\n\n" and
//  ": keepalive\n\n" comments, in a malloc'd NUL-terminated *text of
//  *len bytes (caller frees). Returns MS_OK; MS_ERR_TIMEOUT nothing
//  ready (the reader was parked: wake will be called); MS_ERR_EXPIRED
//  the reader fell more than the ring behind (end the stream);
//  MS_ERR_INTERRUPTED shut down (end the stream); MS_ERR_NOMEM.
int ms_events_reader_next(ms_events_reader_t *reader, size_t max_bytes,
                          char **text, size_t *len);

//  Keepalives: wake every parked reader that sent nothing for
//  MS_EVENTS_KEEPALIVE_MS before NOW_MS (ms_events_now_ms); its next
//  text is ": keepalive\n\n". Call about once a second.
void ms_events_tick(ms_events_t *self, int64_t now_ms);

//  Stop: no reader opens any more, every parked reader is woken and
//  every reader's next call returns MS_ERR_INTERRUPTED. Idempotent.
void ms_events_shutdown(ms_events_t *self);

//  Readers open now.
size_t ms_events_readers(ms_events_t *self);

//  The id of the last event published (FIRST_ID - 1 before any).
uint64_t ms_events_last_id(ms_events_t *self);

//  The monotonic clock the ring uses, in ms.
int64_t ms_events_now_ms(void);

//  Serve GET /api/v1/events on CONN (libmicrohttpd, from the access
//  handler; the daemon must have MHD_ALLOW_SUSPEND_RESUME): a
//  text/event-stream response read by a new reader (arguments as
//  ms_events_reader_open); a stream waiting for events is suspended, not
//  holding a thread. Returns MS_OK (the response is queued);
//  MS_ERR_RANGE (too many streams: answer 503); MS_ERR_INTERRUPTED
//  (shutting down: 503); MS_ERR_NOMEM; MS_ERR_IO (libmicrohttpd refused
//  the response: close the connection).
int ms_events_serve(ms_events_t *self, struct MHD_Connection *conn,
                    const uint8_t *sweep_id, bool resume, uint64_t last_id);

//  Parse an event id (Last-Event-ID): decimal digits, no sign, at most
//  20. Returns MS_OK with *id; MS_ERR_INVALID.
int ms_events_parse_id(const char *text, uint64_t *id);

#endif
