/*  =========================================================================
    ms_node_options - a node's options: the defaults and the one place
    each option's valid range is written

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    s_ranges holds every whole-number option whose rule is a range, under
    the name the config file writes (the name a diag names, so that
    ms_daemon_config finds the option's source from it). The check walks
    the options in the order ms_node_open always checked them, so the
    first bad option reported is the same as before this class; a range
    is reported as "must be MIN..MAX, not V" (or "must be MIN or more"),
    the daemon's parse as "'V' is not a whole number in MIN..MAX".
*/
#include "ms_node_options.h"

#include "ms_api.h"
#include "ms_gpu.h"
#include "ms_idle.h"
#include "ms_peers_conf.h"

#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <string.h>

//  One whole-number option's range.
typedef struct {
    const char *name; // as the config file writes it
    size_t offset;    // of the field in ms_node_options_t
    bool wide;        // an int64_t field (else int)
    long long min;    // smallest valid value
    long long max;    // largest (INT_MAX, INT64_MAX: the type's)
} s_range_t;

#define S_INT_FIELD(name, f, min, max)                                         \
    {                                                                          \
        name, offsetof(ms_node_options_t, f), false, min, max                  \
    }
#define S_WIDE_FIELD(name, f, min, max)                                        \
    {                                                                          \
        name, offsetof(ms_node_options_t, f), true, min, max                   \
    }

static const s_range_t s_ranges[] = {
    S_INT_FIELD("retry_cap", retry_cap, 0, 4096),
    S_INT_FIELD("workers", n_workers, 0, 4096),
    S_INT_FIELD("blas_threads", blas_threads, 0, 4096),
    S_INT_FIELD("worker_nice", worker_nice, 0, 19), // nice ends at 19
    S_INT_FIELD("mesh_port", mesh_port, 0, 65535),
    S_INT_FIELD("beacon_port", beacon_port, 1, 65535),
    S_INT_FIELD("lease_ttl_ms", lease_ttl_ms, 10, INT_MAX),
    S_INT_FIELD("heartbeat_ms", heartbeat_ms, 1, INT_MAX),
    S_INT_FIELD("beacon_interval_ms", beacon_interval_ms, 1, INT_MAX),
    S_INT_FIELD("antientropy_ms", antientropy_ms, 1, INT_MAX),
    S_INT_FIELD("max_pause_s", max_pause_s, 0, INT_MAX),
    S_INT_FIELD("worker_memory_mb", worker_memory_mb, 0, INT_MAX),
    S_INT_FIELD("idle_cpu_pct", idle_cpu_pct, 0, 100),
    S_INT_FIELD("idle_busy_s", idle_busy_s, 1, INT_MAX),
    S_INT_FIELD("idle_quiet_s", idle_quiet_s, 1, INT_MAX),
    S_WIDE_FIELD("max_tasks_per_sweep", max_tasks_per_sweep, 1, INT64_MAX),
    S_WIDE_FIELD("max_dataset_bytes", max_dataset_bytes, 1, INT64_MAX),
    S_INT_FIELD("reeval_timeout_s", reeval_timeout_s, 1, INT_MAX),
    S_INT_FIELD("keep_retention_s", keep_retention_s, 0, INT_MAX),
};
#define S_N_RANGES (sizeof s_ranges / sizeof s_ranges[0])

//  --------------------------------------------------------------------------
//  The range row of NAME, or NULL.

static const s_range_t *
s_range_of(const char *name)
{
    for (size_t i = 0; i < S_N_RANGES; i++)
        if (strcmp(s_ranges[i].name, name) == 0)
            return &s_ranges[i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  The range of a whole-number option.

int
ms_node_options_range(const char *name, long long *min, long long *max)
{
    assert(name && min && max);
    const s_range_t *r = s_range_of(name);
    if (!r)
        return MS_ERR_NOTFOUND;
    *min = r->min;
    *max = r->max;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Check the option NAME (a row of s_ranges) against its range; MS_OK or
//  MS_ERR_INVALID with diag naming it.

static int
s_check_range(const ms_node_options_t *opts, const char *name, ms_diag_t *diag)
{
    const s_range_t *r = s_range_of(name);
    assert(r);
    const char *field = (const char *) opts + r->offset;
    long long v = r->wide ? (long long) *(const int64_t *) field
                          : (long long) *(const int *) field;
    if (v >= r->min && v <= r->max)
        return MS_OK;
    if (r->max == (r->wide ? INT64_MAX : INT_MAX))
        return ms_diag_set(diag, r->name, "must be %lld or more, not %lld",
                           r->min, v);
    return ms_diag_set(diag, r->name, "must be %lld..%lld, not %lld", r->min,
                       r->max, v);
}

//  --------------------------------------------------------------------------
//  Check worker_nice against its range row, saying why its top is the top.

static int
s_check_nice(const ms_node_options_t *opts, ms_diag_t *diag)
{
    const s_range_t *r = s_range_of("worker_nice");
    if (opts->worker_nice > r->max)
        return ms_diag_set(diag, "worker_nice",
                           "%d is above %lld, the lowest priority there is",
                           opts->worker_nice, r->max);
    return s_check_range(opts, "worker_nice", diag);
}

//  --------------------------------------------------------------------------
//  Fill the defaults.

void
ms_node_options_defaults(ms_node_options_t *opts)
{
    memset(opts, 0, sizeof *opts);
    opts->data_dir = "meshsweep-data";
    opts->n_workers = 0;
    opts->backend = "auto";
    opts->gpu_workers = MS_GPU_WORKERS_AUTO;
    opts->blas_threads = 1;
    opts->retry_cap = MS_DEFAULT_RETRY_CAP;
    opts->worker_nice = MS_DEFAULT_WORKER_NICE;
    opts->worker_memory_mb = 0;
    opts->idle_only = false;
    opts->idle_cpu_pct = MS_DEFAULT_IDLE_CPU_PCT;
    opts->idle_busy_s = MS_DEFAULT_IDLE_BUSY_S;
    opts->idle_quiet_s = MS_DEFAULT_IDLE_QUIET_S;
    opts->api_bind = NULL;
    opts->api_token_file = NULL;
    opts->dashboard_dir = NULL;
    opts->verbose = false;
    opts->open_pool = NULL;
    opts->mesh_port = MS_DEFAULT_MESH_PORT;
    opts->beacon_port = MS_DEFAULT_BEACON_PORT;
    opts->interface = NULL;
    opts->peers = NULL;
    opts->n_peers = 0;
    opts->no_beacon = false;
    opts->lease_ttl_ms = MS_DEFAULT_LEASE_TTL_MS;
    opts->heartbeat_ms = MS_DEFAULT_HEARTBEAT_MS;
    opts->settle_ms = MS_DEFAULT_SETTLE_MS;
    opts->beacon_interval_ms = MS_DEFAULT_BEACON_INTERVAL_MS;
    opts->antientropy_ms = MS_DEFAULT_ANTIENTROPY_MS;
    opts->max_pause_s = MS_DEFAULT_MAX_PAUSE_S;
    opts->max_tasks_per_sweep = MS_DEFAULT_MAX_TASKS_PER_SWEEP;
    opts->max_dataset_bytes = MS_DEFAULT_MAX_DATASET_BYTES;
    opts->reevaluate_fraction = MS_DEFAULT_REEVALUATE_FRACTION;
    opts->reeval_timeout_s = MS_DEFAULT_REEVAL_TIMEOUT_S;
    opts->keep_retention_s = MS_DEFAULT_KEEP_RETENTION_S;
}

//  --------------------------------------------------------------------------
//  Check the static peers' form "[NODE_ID@]tcp://HOST:PORT" by the one
//  rule, ms_peers_conf_check_spec's (a whole node id when there is one:
//  the mesh dials with the peer's key); MS_OK or MS_ERR_INVALID.

static int
s_check_peers(const ms_node_options_t *opts, ms_diag_t *diag)
{
    if (opts->n_peers < 0 || (opts->n_peers > 0 && !opts->peers))
        return ms_diag_set(diag, "peer", "peer list malformed");
    for (int i = 0; i < opts->n_peers; i++) {
        const char *p = opts->peers[i];
        char why[200];
        if (!p)
            return ms_diag_set(diag, "peer", "peer list malformed");
        if (ms_peers_conf_check_spec(p, false, why, sizeof why) != MS_OK)
            return ms_diag_set(diag, "peer", "'%.200s': %s", p, why);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Check the options NAMES (rows of s_ranges; NULL ends the list) in
//  their order; the first out of its range is reported.

static int
s_check_ranges(const ms_node_options_t *opts, const char *const *names,
               ms_diag_t *diag)
{
    for (; *names; names++) {
        int rc = s_check_range(opts, *names, diag);
        if (rc != MS_OK)
            return rc;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Check the pool options (DESIGN.md "Defaults"); MS_OK or MS_ERR_INVALID
//  with diag naming the option.

static int
s_check_pool_options(const ms_node_options_t *opts, ms_diag_t *diag)
{
    static const char *const times[] = {"mesh_port", "beacon_port",
                                        "lease_ttl_ms", "heartbeat_ms", NULL};
    static const char *const rounds[] = {"beacon_interval_ms", "antientropy_ms",
                                         "max_pause_s", NULL};
    static const char *const limits[] = {
        "idle_cpu_pct",        "idle_busy_s",       "idle_quiet_s",
        "max_tasks_per_sweep", "max_dataset_bytes", NULL};
    static const char *const keep[] = {"reeval_timeout_s", "keep_retention_s",
                                       NULL};
    int rc = s_check_ranges(opts, times, diag);
    if (rc != MS_OK)
        return rc;
    if ((int64_t) opts->heartbeat_ms * 2 >= opts->lease_ttl_ms)
        return ms_diag_set(diag, "heartbeat_ms",
                           "%d must be under lease_ttl_ms/2 (%d): a lease "
                           "would expire between two heartbeats",
                           opts->heartbeat_ms, opts->lease_ttl_ms / 2);
    if (opts->settle_ms < -1)
        return ms_diag_set(diag, "settle_ms",
                           "must be -1 (auto) or 0 or more, not %d",
                           opts->settle_ms);
    rc = s_check_ranges(opts, rounds, diag);
    if (rc != MS_OK)
        return rc;
    // Its range (0 or more) and a gap: one message for both.
    if (opts->worker_memory_mb < 0 ||
        (opts->worker_memory_mb > 0 && opts->worker_memory_mb < 256))
        return ms_diag_set(diag, "worker_memory_mb",
                           "must be 0 (no cap) or 256 MiB or more, not %d (a "
                           "worker needs about 150 MiB before its first task)",
                           opts->worker_memory_mb);
    rc = s_check_ranges(opts, limits, diag);
    if (rc != MS_OK)
        return rc;
    if (!(opts->reevaluate_fraction >= 0 && opts->reevaluate_fraction <= 1))
        return ms_diag_set(diag, "reevaluate_fraction",
                           "must be a number in 0..1, not %g",
                           opts->reevaluate_fraction);
    rc = s_check_ranges(opts, keep, diag);
    if (rc == MS_OK)
        rc = s_check_peers(opts, diag);
    if (rc != MS_OK)
        return rc;
    if (opts->open_pool && !*opts->open_pool)
        return ms_diag_set(diag, "open_pool", "empty pool name");
    if (opts->open_pool && opts->enroll_key)
        return ms_diag_set(diag, "enroll_key",
                           "an enrollment key puts the node in its "
                           "authority's pool: not with --open-pool (choose "
                           "one)");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Check the options before anything is opened.

int
ms_node_options_check(const ms_node_options_t *opts, ms_diag_t *diag)
{
    assert(opts);
    if (!opts->data_dir || !*opts->data_dir)
        return ms_diag_set(diag, "data_dir", "no data dir given");
    int rc = s_check_range(opts, "retry_cap", diag);
    if (rc != MS_OK)
        return rc;
    if (opts->api_bind) {
        int arc = ms_api_bind_check(opts->api_bind, diag);
        if (arc != MS_OK)
            return arc;
    }
    rc = s_check_range(opts, "workers", diag);
    if (rc == MS_OK)
        rc = s_check_range(opts, "blas_threads", diag);
    if (rc == MS_OK)
        rc = s_check_nice(opts, diag);
    if (rc != MS_OK)
        return rc;
    const char *backend = opts->backend ? opts->backend : "auto";
    if (strcmp(backend, "auto") != 0 && strcmp(backend, "cpu") != 0 &&
        strcmp(backend, "cuda") != 0)
        return ms_diag_set(diag, "backend",
                           "unknown backend '%s' (expected auto, cpu or cuda)",
                           backend);
    if (opts->gpu_workers < MS_GPU_WORKERS_AUTO ||
        opts->gpu_workers > MS_GPU_WORKERS_MAX)
        return ms_diag_set(diag, "gpu_workers", "must be 0..%d or auto, not %d",
                           MS_GPU_WORKERS_MAX, opts->gpu_workers);
    if (strcmp(backend, "cpu") == 0 && opts->gpu_workers > 0)
        return ms_diag_set(diag, "gpu_workers",
                           "%d GPU workers with backend cpu (use backend "
                           "auto or cuda, or gpu_workers 0)",
                           opts->gpu_workers);
    return s_check_pool_options(opts, diag);
}
