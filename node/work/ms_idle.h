/*  =========================================================================
    ms_idle - the machine's CPU use by others, and when an idle_only node
    pauses for it

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A volunteer node lives on someone else's machine (DESIGN.md "Workers"):
    with idle_only it trains only while the machine's owner leaves the CPU
    alone. Once a second the node calls ms_idle_sample with the pids of its
    workers; the class measures how much CPU the rest of the machine used
    since the last sample, as a percentage of all cores:

        others = busy time of all CPUs (/proc/stat)
               - CPU time of the node's own process tree

    and feeds it to a small state machine (ms_idle_feed): others above
    cpu_pct for busy_s seconds in a row -> pause; paused, others at or
    below cpu_pct for quiet_s seconds in a row -> resume.

    The node's own tree is measured one of two ways:
    - cgroup (when the node runs in its own systemd service cgroup, cgroup
      v2: /proc/self/cgroup names "0::/.../NAME.service", not a user@
      manager, and CGROUP_ROOT/<path>/cpu.stat has usage_usec): the
      cgroup's usage_usec, which covers every process of the service,
      exited ones included, exactly;
    - processes (otherwise): utime + stime + cutime + cstime of the node
      (/proc/self/stat: all its threads, and its children once reaped)
      plus utime + stime + cutime + cstime of each live worker pid given.
      A worker that exits moves from the second sum into the node's
      cutime/cstime when it is reaped, so the total stays continuous.
    The two clocks (/proc/stat ticks, process ticks or cgroup us) are
    both converted to microseconds. Busy = user + nice + system + irq +
    softirq + steal (guest time is inside user); idle and iowait are not
    busy.

    What was not done: counting only processes of other users (a machine
    owner who runs a build as a daemon user would not count), or load
    average (it counts runnable tasks, not CPU time, and lags by minutes).

    Thread rule: an ms_idle_t belongs to one thread (the node loop).
*/
#ifndef MS_IDLE_H
#define MS_IDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_err.h"

typedef struct ms_idle ms_idle_t;

#define MS_DEFAULT_IDLE_CPU_PCT 25 // DESIGN.md "Defaults": % of all cores
#define MS_DEFAULT_IDLE_BUSY_S 5   // others busy this long: pause
#define MS_DEFAULT_IDLE_QUIET_S 30 // others quiet this long: resume

typedef struct {
    int cpu_pct;             // others' CPU above this (% of all cores,
                             // 0..100) is busy (25)
    int busy_s;              // busy this many seconds in a row: pause (5)
    int quiet_s;             // paused, quiet this many seconds: resume (30)
    const char *proc_root;   // "/proc" (tests: a fake tree)
    const char *cgroup_root; // "/sys/fs/cgroup" (tests: a fake tree)
} ms_idle_options_t;

//  How the node's own CPU time is measured.
typedef enum {
    MS_IDLE_SOURCE_PROCESSES = 0, // /proc/PID/stat of the node and workers
    MS_IDLE_SOURCE_CGROUP = 1,    // the service cgroup's cpu.stat
} ms_idle_source_t;

//  What a sample decided.
typedef enum {
    MS_IDLE_CHANGE_NONE = 0,   // stay as we are
    MS_IDLE_CHANGE_PAUSE = 1,  // others were busy long enough: pause now
    MS_IDLE_CHANGE_RESUME = 2, // others were quiet long enough: resume now
} ms_idle_change_t;

//  Fill opts with the defaults (25 %, 5 s, 30 s, /proc, /sys/fs/cgroup).
void ms_idle_options_defaults(ms_idle_options_t *opts);

//  Check the options, find the own cgroup (see above) and take the first
//  readings (the baseline of the first sample). opts is copied (strings
//  too). Caller owns *out; free it with ms_idle_destroy().
//  Returns MS_OK; MS_ERR_INVALID (cpu_pct not in 0..100, busy_s or
//  quiet_s under 1: diag names the option); MS_ERR_IO (PROC_ROOT/stat
//  cannot be read or parsed: diag names the file); MS_ERR_NOMEM.
//  *out is NULL on failure.
int ms_idle_open(ms_idle_t **out, const ms_idle_options_t *opts,
                 ms_diag_t *diag);

//  Free it; NULL-safe; nulls *self_p.
void ms_idle_destroy(ms_idle_t **self_p);

//  Measure others' CPU use since the previous sample (or open), at now_ms
//  (monotonic ms, later than the previous sample's), with the live worker
//  pids PIDS (n_pids of them; ignored in cgroup mode; a pid that is gone
//  is skipped), and feed it to the state machine. *change (may be NULL)
//  gets what to do. Returns MS_OK; MS_ERR_IO (/proc/stat or the cgroup
//  could not be read: nothing fed, the state is unchanged);
//  MS_ERR_INVALID (now_ms not after the previous sample: nothing fed).
int ms_idle_sample(ms_idle_t *self, const int *pids, size_t n_pids,
                   int64_t now_ms, ms_idle_change_t *change);

//  The state machine alone: others used OTHERS_PCT (% of all cores) over
//  the last DT_MS ms (> 0). Returns what to do. ms_idle_sample calls it;
//  tests call it directly.
ms_idle_change_t ms_idle_feed(ms_idle_t *self, double others_pct,
                              int64_t dt_ms);

//  Whether the state machine says paused.
bool ms_idle_paused(const ms_idle_t *self);

//  Others' CPU use of the last sample (% of all cores), or -1 before any.
double ms_idle_others_pct(const ms_idle_t *self);

//  The node's own CPU use of the last sample (% of all cores), or -1.
double ms_idle_own_pct(const ms_idle_t *self);

//  How own CPU time is measured.
ms_idle_source_t ms_idle_source(const ms_idle_t *self);

//  The name of a source: "processes" or "cgroup".
const char *ms_idle_source_name(ms_idle_source_t source);

//  The cgroup's cpu.stat file in cgroup mode, else NULL. Borrowed, valid
//  for the object's life.
const char *ms_idle_cgroup(const ms_idle_t *self);

#endif
