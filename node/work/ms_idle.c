/*  =========================================================================
    ms_idle - the machine's CPU use by others, and when an idle_only node
    pauses for it

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The measurement and the rule are described in ms_idle.h; docs/
    VOLUNTEER.md says what the node does with the decision. Why counters
    and not a window of samples: each sample adds the time it covers to
    the busy or the quiet run, so an irregular loop (a slow commit, a
    stalled turn) still counts seconds, not samples.
*/
#include "ms_idle.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define S_PATH_MAX 4096

struct ms_idle {
    ms_idle_options_t opts;       // copy; strings below
    char *proc_root;              // owned copy
    char *cgroup_root;            // owned copy
    ms_idle_source_t source;      // how own CPU time is measured
    char cgroup_stat[S_PATH_MAX]; // the cgroup's cpu.stat (cgroup mode)
    double us_per_tick;           // 1e6 / CLK_TCK
    bool have_prev;               // prev_* hold a reading
    int64_t prev_ms;              // monotonic ms of the previous reading
    uint64_t prev_busy_us;        // busy time of all CPUs then
    uint64_t prev_total_us;       // busy + idle time of all CPUs then
    uint64_t prev_own_us;         // own CPU time then
    double others_pct;            // last sample's figure, -1 before any
    double own_pct;               // last sample's own figure, -1
    bool paused;                  // the state machine's state
    int64_t busy_run_ms;          // running: time others were busy in a row
    int64_t quiet_run_ms;         // paused: time others were quiet in a row
};

//  --------------------------------------------------------------------------
//  Fill the defaults.

void
ms_idle_options_defaults(ms_idle_options_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->cpu_pct = MS_DEFAULT_IDLE_CPU_PCT;
    opts->busy_s = MS_DEFAULT_IDLE_BUSY_S;
    opts->quiet_s = MS_DEFAULT_IDLE_QUIET_S;
    opts->proc_root = "/proc";
    opts->cgroup_root = "/sys/fs/cgroup";
}

//  --------------------------------------------------------------------------
//  Read a small file into buf (NUL-terminated); MS_OK or MS_ERR_IO.

static int
s_read_small(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return MS_ERR_IO;
    size_t got = fread(buf, 1, n - 1, f);
    fclose(f);
    buf[got] = 0;
    return got > 0 ? MS_OK : MS_ERR_IO;
}

//  --------------------------------------------------------------------------
//  The first line of PROC/stat ("cpu  user nice system idle iowait irq
//  softirq steal ..."): busy and total time in ticks. MS_OK or MS_ERR_IO.

static int
s_read_cpu(const ms_idle_t *self, uint64_t *busy, uint64_t *total)
{
    char path[S_PATH_MAX];
    snprintf(path, sizeof path, "%s/stat", self->proc_root);
    char buf[1024];
    if (s_read_small(path, buf, sizeof buf) != MS_OK)
        return MS_ERR_IO;
    unsigned long long v[8] = {0};
    int n = sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0],
                   &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    if (n < 4)
        return MS_ERR_IO;
    // user nice system idle iowait irq softirq steal
    *busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    *total = *busy + v[3] + v[4];
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  utime + stime + cutime + cstime (ticks) of PROC/NAME/stat; MS_OK or
//  MS_ERR_IO (gone, or not parsable).

static int
s_read_proc_times(const ms_idle_t *self, const char *name, uint64_t *ticks)
{
    char path[S_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/stat", self->proc_root, name);
    char buf[2048];
    if (s_read_small(path, buf, sizeof buf) != MS_OK)
        return MS_ERR_IO;
    // comm (field 2) is in parentheses and may hold spaces or ')': the
    // fields go on after the last ')'.
    char *p = strrchr(buf, ')');
    if (!p)
        return MS_ERR_IO;
    p++;
    // fields 3.. : state ppid pgrp session tty_nr tpgid flags minflt
    // cminflt majflt cmajflt utime stime cutime cstime
    unsigned long long f[15];
    char state = 0;
    int n = sscanf(p,
                   " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
                   "%llu %llu %llu %llu",
                   &state, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6],
                   &f[7], &f[8], &f[9], &f[10], &f[11], &f[12], &f[13]);
    // tpgid may be -1: sscanf of %llu takes "-1" as a huge value, which is
    // fine for a field we skip.
    if (n < 15)
        return MS_ERR_IO;
    *ticks = f[10] + f[11] + f[12] + f[13];
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  usage_usec of the cgroup's cpu.stat; MS_OK or MS_ERR_IO.

static int
s_read_cgroup_usage(const char *path, uint64_t *usec)
{
    char buf[2048];
    if (s_read_small(path, buf, sizeof buf) != MS_OK)
        return MS_ERR_IO;
    const char *p = strstr(buf, "usage_usec ");
    if (!p || (p != buf && p[-1] != '\n'))
        return MS_ERR_IO;
    unsigned long long v = 0;
    if (sscanf(p + 11, "%llu", &v) != 1)
        return MS_ERR_IO;
    *usec = v;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Find the own service cgroup (cgroup v2): PROC/self/cgroup's "0::PATH"
//  whose last component ends in ".service" and is not a user manager
//  ("user@1000.service"), with a readable cpu.stat under CGROUP_ROOT
//  (or CGROUP_ROOT/unified on a hybrid layout). True when found.

static bool
s_find_cgroup(ms_idle_t *self)
{
    char path[S_PATH_MAX];
    snprintf(path, sizeof path, "%s/self/cgroup", self->proc_root);
    char buf[4096];
    if (s_read_small(path, buf, sizeof buf) != MS_OK)
        return false;
    char *line = buf;
    while (line && *line) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        if (strncmp(line, "0::/", 4) == 0) {
            const char *cg = line + 3;
            const char *last = strrchr(cg, '/') + 1;
            size_t n = strlen(last);
            if (n > 8 && strcmp(last + n - 8, ".service") == 0 &&
                strncmp(last, "user@", 5) != 0) {
                const char *roots[] = {"", "/unified"};
                for (size_t i = 0; i < 2; i++) {
                    snprintf(self->cgroup_stat, sizeof self->cgroup_stat,
                             "%s%s%s/cpu.stat", self->cgroup_root, roots[i],
                             cg);
                    uint64_t us;
                    if (s_read_cgroup_usage(self->cgroup_stat, &us) == MS_OK)
                        return true;
                }
            }
        }
        line = next;
    }
    self->cgroup_stat[0] = 0;
    return false;
}

//  --------------------------------------------------------------------------
//  The node's own CPU time in us (see the header). MS_OK or MS_ERR_IO.

static int
s_read_own(const ms_idle_t *self, const int *pids, size_t n_pids,
           uint64_t *own_us)
{
    if (self->source == MS_IDLE_SOURCE_CGROUP)
        return s_read_cgroup_usage(self->cgroup_stat, own_us);
    uint64_t ticks = 0, t = 0;
    if (s_read_proc_times(self, "self", &t) != MS_OK)
        return MS_ERR_IO;
    ticks += t;
    for (size_t i = 0; i < n_pids; i++) {
        char name[32];
        if (pids[i] <= 0)
            continue;
        snprintf(name, sizeof name, "%d", pids[i]);
        if (s_read_proc_times(self, name, &t) == MS_OK)
            ticks += t; // a gone worker is in our cutime once reaped
    }
    *own_us = (uint64_t) ((double) ticks * self->us_per_tick);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Open.

int
ms_idle_open(ms_idle_t **out, const ms_idle_options_t *opts, ms_diag_t *diag)
{
    *out = NULL;
    if (opts->cpu_pct < 0 || opts->cpu_pct > 100)
        return ms_diag_set(diag, "idle_cpu_pct", "must be 0..100, not %d",
                           opts->cpu_pct);
    if (opts->busy_s < 1)
        return ms_diag_set(diag, "idle_busy_s", "must be 1 or more, not %d",
                           opts->busy_s);
    if (opts->quiet_s < 1)
        return ms_diag_set(diag, "idle_quiet_s", "must be 1 or more, not %d",
                           opts->quiet_s);
    ms_idle_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->opts = *opts;
    self->proc_root = strdup(opts->proc_root ? opts->proc_root : "/proc");
    self->cgroup_root =
        strdup(opts->cgroup_root ? opts->cgroup_root : "/sys/fs/cgroup");
    if (!self->proc_root || !self->cgroup_root) {
        ms_idle_destroy(&self);
        return MS_ERR_NOMEM;
    }
    self->opts.proc_root = self->proc_root;
    self->opts.cgroup_root = self->cgroup_root;
    long hz = sysconf(_SC_CLK_TCK);
    self->us_per_tick = 1e6 / (double) (hz > 0 ? hz : 100);
    self->others_pct = -1;
    self->own_pct = -1;
    self->source =
        s_find_cgroup(self) ? MS_IDLE_SOURCE_CGROUP : MS_IDLE_SOURCE_PROCESSES;
    uint64_t busy, total;
    if (s_read_cpu(self, &busy, &total) != MS_OK) {
        int rc = ms_diag_set_code(diag, MS_ERR_IO, "idle_only",
                                  "cannot read the CPU times in %s/stat",
                                  self->proc_root);
        ms_idle_destroy(&self);
        return rc;
    }
    *out = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Destroy.

void
ms_idle_destroy(ms_idle_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ms_idle_t *self = *self_p;
    free(self->proc_root);
    free(self->cgroup_root);
    free(self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The state machine.

ms_idle_change_t
ms_idle_feed(ms_idle_t *self, double others_pct, int64_t dt_ms)
{
    if (dt_ms <= 0)
        return MS_IDLE_CHANGE_NONE;
    bool busy = others_pct > (double) self->opts.cpu_pct;
    if (!self->paused) {
        self->busy_run_ms = busy ? self->busy_run_ms + dt_ms : 0;
        if (self->busy_run_ms >= (int64_t) self->opts.busy_s * 1000) {
            self->paused = true;
            self->busy_run_ms = 0;
            self->quiet_run_ms = 0;
            return MS_IDLE_CHANGE_PAUSE;
        }
        return MS_IDLE_CHANGE_NONE;
    }
    self->quiet_run_ms = busy ? 0 : self->quiet_run_ms + dt_ms;
    if (self->quiet_run_ms >= (int64_t) self->opts.quiet_s * 1000) {
        self->paused = false;
        self->busy_run_ms = 0;
        self->quiet_run_ms = 0;
        return MS_IDLE_CHANGE_RESUME;
    }
    return MS_IDLE_CHANGE_NONE;
}

//  --------------------------------------------------------------------------
//  One sample.

int
ms_idle_sample(ms_idle_t *self, const int *pids, size_t n_pids, int64_t now_ms,
               ms_idle_change_t *change)
{
    if (change)
        *change = MS_IDLE_CHANGE_NONE;
    uint64_t busy, total, own;
    if (s_read_cpu(self, &busy, &total) != MS_OK ||
        s_read_own(self, pids, n_pids, &own) != MS_OK)
        return MS_ERR_IO;
    busy = (uint64_t) ((double) busy * self->us_per_tick);
    total = (uint64_t) ((double) total * self->us_per_tick);
    if (!self->have_prev) {
        // The first reading is the baseline (open read the CPU times
        // only to check they can be read).
        self->have_prev = true;
        self->prev_ms = now_ms;
        self->prev_busy_us = busy;
        self->prev_total_us = total;
        self->prev_own_us = own;
        return MS_OK;
    }
    if (now_ms <= self->prev_ms)
        return MS_ERR_INVALID;
    double d_total = total > self->prev_total_us
                         ? (double) (total - self->prev_total_us)
                         : 0;
    double d_busy =
        busy > self->prev_busy_us ? (double) (busy - self->prev_busy_us) : 0;
    double d_own =
        own > self->prev_own_us ? (double) (own - self->prev_own_us) : 0;
    int64_t dt = now_ms - self->prev_ms;
    self->prev_ms = now_ms;
    self->prev_busy_us = busy;
    self->prev_total_us = total;
    self->prev_own_us = own;
    if (d_total <= 0)
        return MS_OK; // no tick went by: nothing to say
    double others = 100.0 * (d_busy - d_own) / d_total;
    double mine = 100.0 * d_own / d_total;
    self->others_pct = others < 0 ? 0 : others > 100 ? 100 : others;
    self->own_pct = mine > 100 ? 100 : mine;
    ms_idle_change_t c = ms_idle_feed(self, self->others_pct, dt);
    if (change)
        *change = c;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Accessors.

bool
ms_idle_paused(const ms_idle_t *self)
{
    return self->paused;
}

double
ms_idle_others_pct(const ms_idle_t *self)
{
    return self->others_pct;
}

double
ms_idle_own_pct(const ms_idle_t *self)
{
    return self->own_pct;
}

ms_idle_source_t
ms_idle_source(const ms_idle_t *self)
{
    return self->source;
}

const char *
ms_idle_source_name(ms_idle_source_t source)
{
    return source == MS_IDLE_SOURCE_CGROUP ? "cgroup" : "processes";
}

const char *
ms_idle_cgroup(const ms_idle_t *self)
{
    return self->source == MS_IDLE_SOURCE_CGROUP ? self->cgroup_stat : NULL;
}
