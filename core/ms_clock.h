/*  =========================================================================
    ms_clock - the clocks: monotonic, boot (counts suspend) and wall

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One module reads the system clocks, so every part of meshsweep agrees
    on what "monotonic ms" means (the node, its workers and the CLI
    compare timestamps across processes: CLOCK_MONOTONIC everywhere):

    - monotonic (CLOCK_MONOTONIC): lease and liveness times, deadlines,
      durations. Stops while the machine is suspended.
    - boot (CLOCK_BOOTTIME, CLOCK_MONOTONIC where it does not exist): a
      holder judging its own lease, so a laptop waking from suspend sees
      that its lease time has run (DESIGN.md "Work, claims and leases").
    - wall (CLOCK_REALTIME): display, created/updated stamps and
      certificate expiry only; never for a lease.

    The free functions read the system. Code that tests must drive by hand
    takes an ms_clock_t (a table of three readers and a context) instead:
    ms_clock_system() is the system's, and a test fills its own table (see
    ms_clock_fake_t below).

    Thread rule: every function is thread-safe; an ms_clock_fake_t belongs
    to the thread that sets it.
*/
#ifndef MS_CLOCK_H
#define MS_CLOCK_H

#include <stdint.h>

//  CLOCK_MONOTONIC in microseconds.
int64_t ms_clock_mono_us(void);

//  CLOCK_MONOTONIC in milliseconds.
int64_t ms_clock_mono_ms(void);

//  CLOCK_MONOTONIC in seconds (for durations printed or timed).
double ms_clock_mono_s(void);

//  CLOCK_BOOTTIME in milliseconds (CLOCK_MONOTONIC where there is none).
int64_t ms_clock_boot_ms(void);

//  CLOCK_REALTIME in milliseconds since the Unix epoch.
int64_t ms_clock_wall_ms(void);

//  A replaceable clock: what a class that tests drive by hand reads.
typedef struct {
    int64_t (*mono_ms)(void *ctx); // monotonic ms
    int64_t (*boot_ms)(void *ctx); // boot ms (counts suspend)
    int64_t (*wall_ms)(void *ctx); // wall ms since the epoch
    void *ctx;                     // passed to each
} ms_clock_t;

//  The system's clocks (the functions above). A pointer to a static,
//  read-only table.
const ms_clock_t *ms_clock_system(void);

//  A clock a test sets: each reader returns its field. Fill the fields,
//  then hand ms_clock_fake(&fake, &clock)'s CLOCK to the class under test;
//  advance the fields between calls.
typedef struct {
    int64_t mono_ms; // what mono_ms returns
    int64_t boot_ms; // what boot_ms returns
    int64_t wall_ms; // what wall_ms returns
} ms_clock_fake_t;

//  Fill *clock with readers of FAKE (borrowed: it must outlive CLOCK).
void ms_clock_fake(ms_clock_fake_t *fake, ms_clock_t *clock);

#endif
