/*  =========================================================================
    ms_node_options - a node's options: the defaults and the one place
    each option's valid range is written

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    DESIGN.md "Defaults (config keys)" and "Layout of node/". The class
    owns ms_node_options_t (what ms_node_open takes), its defaults
    (ms_node_options_defaults) and its rules (ms_node_options_check):
    the counts, the backend name, the pool's ports and times, the static
    peers' form. A whole-number option's range is written once, in this
    class's range table: ms_node_options_check checks it, and
    node/daemon/ms_daemon_config asks ms_node_options_range for it when it
    parses the option's text, so `meshsweepd --mesh-port 70000`, a config
    file's `mesh_port = 70000` and a library caller's opts.mesh_port =
    70000 are refused by the same rule. Rules that are not a range (a
    worker memory cap of 0 or 256 MiB and more, heartbeat_ms under
    lease_ttl_ms/2, a peer's form, open_pool with enroll_key) live in
    ms_node_options_check only; ms_daemon_config runs it after its parse
    and names the offending option's source (FILE:LINE).

    Options are plain values (the struct is copied, its strings are
    borrowed from the caller until ms_node_open copies them). No state,
    no I/O: every function reads only its arguments. Any thread.
*/
#ifndef MS_NODE_OPTIONS_H
#define MS_NODE_OPTIONS_H

#include "ms_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_DEFAULT_API_BIND "127.0.0.1:5872" // DESIGN.md default API port
#define MS_DEFAULT_RETRY_CAP 2               // DESIGN.md "Defaults"
#define MS_DEFAULT_WORKER_NICE 10            // workers run at nice +10

typedef struct {
    const char *data_dir; // holds identity/ and store/ (created 0700)
    int n_workers;        // worker processes; 0 = one per online core
    const char *backend;  // "auto" | "cpu" | "cuda"
    int gpu_workers;      // workers that use the GPU (ms_gpu.h);
                          // MS_GPU_WORKERS_AUTO (-1, default) or
                          // 0..n_workers
    int blas_threads;     // BLAS threads per worker (default 1)
    int retry_cap;        // local retries before a task is failed (2)
    int worker_nice;      // nice increment of workers (default 10)
    int worker_memory_mb; // cap of each worker's data memory, MiB
                          // (RLIMIT_DATA); 0 = none (default). The
                          // node also claims no task estimated
                          // beyond it
    // Volunteer behaviour (docs/VOLUNTEER.md, ms_idle.h)
    bool idle_only;              // pause training while others use the CPU
    int idle_cpu_pct;            // others' CPU above this, % of all cores (25)
    int idle_busy_s;             // ... for this many seconds: pause (5)
    int idle_quiet_s;            // paused, below it this long: resume (30)
    const char *api_bind;        // "ADDR:PORT"; NULL = no HTTP API (embedded
                                 // `meshsweep run`); port 0 = ephemeral
    const char *api_token_file;  // bearer token file of an API beyond
                                 // loopback (ms_api_token_open); NULL =
                                 // DATA_DIR/api-token. Unused on loopback
    const char *dashboard_dir;   // the dashboard's assets served at / by
                                 // the API (ms_dashboard.h); NULL = none
    const char *enroll_key;      // enrollment kit (ms_cert_enroll_load):
                                 // with no identity/node.cert, issue our
                                 // own certificate with it and save it
                                 // there; NULL = none
    bool verbose;                // log to stderr
    const char *weights_out_dir; // also write each ok training result's
                                 // weights here, as TASK.weights (native,
                                 // with metadata) and TASK.onnx
                                 // (`meshsweep run --keep-weights DIR`);
                                 // NULL = none. Must exist; borrowed
    // The pool (DESIGN.md "The pool", "Defaults"). A node links to peers
    // only with open_pool set (certificates come with the trust issue);
    // the embedded `meshsweep run` leaves it NULL and runs alone.
    const char *open_pool;       // open pool NAME ("default"); NULL = none
    int mesh_port;               // mesh TCP port (5871); 0 = ephemeral
    int beacon_port;             // zbeacon UDP port (5870)
    const char *interface;       // beacon interfaces "NAME[,NAME...]" or
                                 // "*"; NULL = every usable one
                                 // (ms_discovery.h)
    const char *mesh_bind;       // --bind: the mesh's listening address
                                 // (IPv4); NULL = every address ("*").
                                 // Borrowed: must outlive the node
    const char *advertise_host;  // --advertise HOST: in beacons, HELLO and
                                 // view messages (NAT, clusters); NULL =
                                 // none. Borrowed, as mesh_bind
    int advertise_port;          // --advertise's PORT; 0 = the mesh port
    const char *const *peers;    // static peers "[NODE_ID@]tcp://HOST:PORT"
    int n_peers;                 // entries in peers
    bool no_beacon;              // no zbeacon discovery (static peers only)
    int lease_ttl_ms;            // lease TTL (10000)
    int heartbeat_ms;            // heartbeat interval (1000; < TTL/2)
    int settle_ms;               // longest wait of a claim for the live
                                 // peers' acks before it starts; -1 = auto
                                 // (one heartbeat interval); 0 = no wait
    int beacon_interval_ms;      // beacon interval (1000)
    int antientropy_ms;          // anti-entropy round (1000)
    int max_pause_s;             // a paused node (idle_only) releases its
                                 // claims after this many seconds (600)
    int64_t max_tasks_per_sweep; // pool limit at submit (1000000)
    int64_t max_dataset_bytes;   // pool limit at submit (4 GiB)
    // Re-evaluation and kept weights (docs/VERIFICATION.md "Re-evaluation")
    double reevaluate_fraction; // chance that this node re-evaluates a
                                // result of another operator, 0..1 (0.05)
    int reeval_timeout_s;       // a sampled result's weights are waited
                                // for this long, then the re-evaluation
                                // is published failed (120)
    int keep_retention_s;       // keep_weights sampled: own weights are
                                // kept until re-evaluated or this long
                                // (86400)
} ms_node_options_t;

// The first four are also in ms_mesh.h (same values; whichever comes
// first defines them).
#ifndef MS_DEFAULT_MESH_PORT
#define MS_DEFAULT_MESH_PORT 5871 // DESIGN.md default ports
#endif
#ifndef MS_DEFAULT_BEACON_PORT
#define MS_DEFAULT_BEACON_PORT 5870 // UDP
#endif
#ifndef MS_DEFAULT_HEARTBEAT_MS
#define MS_DEFAULT_HEARTBEAT_MS 1000 // must stay under TTL/2
#endif
#ifndef MS_DEFAULT_BEACON_INTERVAL_MS
#define MS_DEFAULT_BEACON_INTERVAL_MS 1000 // tests may lower it
#endif
#define MS_DEFAULT_LEASE_TTL_MS 10000  // DESIGN.md "Defaults"
#define MS_DEFAULT_SETTLE_MS (-1)      // auto
#define MS_DEFAULT_ANTIENTROPY_MS 1000 // one random peer per round
#define MS_DEFAULT_MAX_PAUSE_S 600     // then release claims
#define MS_DEFAULT_MAX_TASKS_PER_SWEEP 1000000
#define MS_DEFAULT_MAX_DATASET_BYTES ((int64_t) 4 << 30) // 4 GiB
#define MS_DEFAULT_REEVALUATE_FRACTION 0.05              // DESIGN.md "Defaults"
#define MS_DEFAULT_REEVAL_TIMEOUT_S 120                  // weights waited for
#define MS_DEFAULT_KEEP_RETENTION_S 86400                // sampled weights kept

//  Fill opts with the defaults: data_dir "meshsweep-data", n_workers 0
//  (one per online core), backend "auto", gpu_workers auto, blas_threads
//  1, retry_cap 2,
//  worker_nice 10, worker_memory_mb 0 (none), idle_only false with
//  idle_cpu_pct 25, idle_busy_s 5, idle_quiet_s 30, api_bind NULL,
//  api_token_file NULL, dashboard_dir NULL, verbose false;
//  pool: open_pool NULL (no links), the MS_DEFAULT_* ports and times
//  above, no static peers, beacon on, interface NULL.
//  (meshsweepd sets api_bind to MS_DEFAULT_API_BIND itself.)
void ms_node_options_defaults(ms_node_options_t *opts);

//  Check opts as ms_node_open does before it touches anything: a data dir
//  given, the counts, the backend name, the pool's ports and times
//  (heartbeat_ms under lease_ttl_ms/2 ...), the static peers' form. Reads
//  no file and starts nothing (`meshsweepd --check-config` uses it).
//  Returns MS_OK, or MS_ERR_INVALID with diag naming the option and why.
//  Any thread.
int ms_node_options_check(const ms_node_options_t *opts, ms_diag_t *diag);

//  The valid range of the whole-number option NAME (as the config file
//  writes it: "mesh_port", "workers", "lease_ttl_ms", ...): *min and *max
//  (INT_MAX or INT64_MAX: no upper bound but the field's type), the ones
//  ms_node_options_check applies. Returns MS_OK, or MS_ERR_NOTFOUND when
//  NAME has no range of its own here (not a whole number, or a rule that
//  is not a range, as settle_ms's auto or gpu_workers'); *min and *max
//  are then untouched. Any thread.
int ms_node_options_range(const char *name, long long *min, long long *max);

#endif
