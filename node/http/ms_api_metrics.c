/*  =========================================================================
    ms_api_metrics - GET /api/v1/status and GET /metrics

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Both are written from the node's status JSON (hooks.status; /metrics
    adds hooks.metrics and prints pool_counters with ms_metrics_prom), so
    the two pages give the same figures.
*/
#include "ms_api.h"
#include "ms_api_internal.h"

#include "ms_metrics.h"
#include "ms_prom.h"
#include "ms_verdict.h"

#include <microhttpd.h>
#include <stdatomic.h>
#include <stdlib.h>

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

enum MHD_Result
ms_api_get_status(ms_api_t *self, struct MHD_Connection *conn)
{
    json_t *status = self->hooks.status(self->hooks.arg);
    if (!status)
        return ms_api_reply_error(self, conn, 500, "out of memory");
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
    return ms_api_reply_json(self, conn, MHD_HTTP_OK, status);
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

enum MHD_Result
ms_api_get_metrics(ms_api_t *self, struct MHD_Connection *conn)
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
        return ms_api_reply_error(self, conn, 500, "out of memory");
    enum MHD_Result r =
        ms_api_reply(self, conn, MHD_HTTP_OK,
                     "text/plain; version=0.0.4; charset=utf-8", text, len);
    free(text);
    return r;
}
