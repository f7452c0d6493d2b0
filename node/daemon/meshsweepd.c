/*  =========================================================================
    meshsweepd - the meshsweep node daemon

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    meshsweepd --data-dir DIR [--api ADDR:PORT] [--api-token-file FILE]
               [--workers N]
               [--backend auto|cpu|cuda] [--gpu-workers N|auto]
               [--config FILE] [--check-config] [--verbose]
               [--mesh-port N] [--beacon-port N]
               [--interface NAME[,NAME...]|*] [--bind ADDR]
               [--advertise HOST[:PORT]]
               [--peer [NODE_ID@]tcp://HOST:PORT]... [--no-beacon]
               [--open-pool[=NAME]] [--enroll-key FILE]
               [--idle-only [--idle-cpu-pct N] [--idle-busy-s N]
                [--idle-quiet-s N] [--max-pause-s N]]
               [--worker-nice N] [--worker-memory-mb N]
               [pool timing and limit options]

    Runs in the foreground (systemd runs it as is). Options can also come
    from an INI file (--config): each key is a long option with '-'
    written '_' (data_dir, api, workers, backend, gpu_workers, retry_cap,
    open_pool,
    lease_ttl_ms, ...), in no section or in [meshsweepd]; the command line
    wins; an unknown key, a key set twice, or a key written with '-'
    (mesh-port: the file writes mesh_port, the command line --mesh-port,
    one spelling each) is an error naming FILE:LINE (docs/CONFIG.md).
    `peer` may be given several times (a --peer on the command line
    replaces the file's). --check-config prints the effective settings
    and where each came from, and exits (0, or 2 with the error line).
    DATA_DIR/identity/node.cert (a bundle from `meshsweep pool invite`,
    installed by `meshsweep pool join`) puts the node in that pool, with
    CURVE links and certificates in HELLO; --enroll-key FILE issues it at
    first start from an enrollment kit. A node with neither a certificate
    nor --open-pool starts, prints its node id and links to no one; with
    --open-pool it warns that the pool has no authority; a certificate
    and --open-pool together are refused. SIGHUP reloads the certificate
    (a node that had none joins its pool without a restart). SIGTERM /
    SIGINT stop the node gracefully: workers stopped, their tasks back to
    pending, store flushed, exit 0.
    Backend: --backend auto trains on the GPU when the cuda backend can
    run here, else on the CPU, and then says why in one line on stderr at
    start; --backend cuda without a usable GPU is refused (exit 2).
    --gpu-workers N of the workers use the GPU, the others the CPU
    (node/work/ms_gpu.h; default auto: all, at most one per 2 GiB of GPU
    memory); /api/v1/status reports the split and the GPU under "backend".
    Exit codes: 0 success, 1 failure, 2 bad usage or bad input.
*/
#define _DEFAULT_SOURCE // realpath
#include "ms_daemon_config.h"
#include "ms_dashboard.h"
#include "ms_node.h"

#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <unistd.h>

#define S_USAGE                                                                \
    "usage: meshsweepd --data-dir DIR [--api ADDR:PORT] [--workers N]\n"       \
    "                  [--backend auto|cpu|cuda] [--config FILE] "             \
    "[--verbose]\n"                                                            \
    "\n"                                                                       \
    "Run a meshsweep node: train the tasks of submitted sweeps in worker\n"    \
    "processes, share them with the pool, and serve the HTTP API.\n"           \
    "\n"                                                                       \
    "  --data-dir DIR      identity/ and store/ live here (created 0700)\n"    \
    "  --api ADDR:PORT     HTTP API address (default 127.0.0.1:5872;\n"        \
    "                      port 0 picks a free one)\n"                         \
    "  --api-token-file FILE  bearer token the API asks for beyond\n"          \
    "                      loopback (default DATA_DIR/api-token, made\n"       \
    "                      0600 with a random token when missing)\n"           \
    "  --workers N         worker processes (0 or default: one per core)\n"    \
    "  --backend NAME      auto, cpu or cuda (default auto: the GPU when\n"    \
    "                      one is usable, else the CPU)\n"                     \
    "  --gpu-workers N|auto  workers that use the GPU, the rest the CPU\n"     \
    "                      (default auto: all, one per 2 GiB of GPU memory)\n" \
    "  --blas-threads N    BLAS threads per worker (default 1)\n"              \
    "  --retry-cap N       local retries of a crashing task (default 2)\n"     \
    "  --worker-nice N     nice increment of workers (default 10)\n"           \
    "  --worker-memory-mb N  cap each worker's memory at N MiB (a task\n"      \
    "                      beyond it fails as a resource failure; default\n"   \
    "                      0: no cap)\n"                                       \
    "  --dashboard-dir DIR the dashboard's assets, served at / (default:\n"    \
    "                      $MESHSWEEP_DASHBOARD_DIR, else the build tree's,\n" \
    "                      else the installed ones; docs/DASHBOARD.md)\n"      \
    "  --config FILE       INI file of the same options (key = value,\n"       \
    "                      '-' written '_'); the command line wins\n"          \
    "  --check-config      parse the options, the config file and\n"           \
    "                      DATA_DIR/identity/peers.conf, print the\n"          \
    "                      effective settings and exit (0, or 2 with\n"        \
    "                      the error); starts nothing\n"                       \
    "  --verbose           log to stderr\n"                                    \
    "\n"                                                                       \
    "Volunteer behaviour (docs/VOLUNTEER.md):\n"                               \
    "  --idle-only         pause training while others use the CPU\n"          \
    "  --idle-cpu-pct N    others' CPU above N % of all cores is busy (25)\n"  \
    "  --idle-busy-s N     busy this many seconds: pause (default 5)\n"        \
    "  --idle-quiet-s N    paused, quiet this many seconds: resume (30)\n"     \
    "  --max-pause-s N     paused this long: release the claims (600)\n"       \
    "\n"                                                                       \
    "The pool:\n"                                                              \
    "  --open-pool[=NAME]  join the open pool NAME (default 'default'); no\n"  \
    "                      authority: every node is its own operator\n"        \
    "  --enroll-key FILE   enrollment kit: with no identity/node.cert, "       \
    "issue\n"                                                                  \
    "                      this node's certificate with it at start\n"         \
    "  --mesh-port N       mesh TCP port (default 5871; 0 picks one)\n"        \
    "  --beacon-port N     zbeacon UDP port (default 5870)\n"                  \
    "  --interface NAME[,NAME...]|*  interfaces to beacon on (default:\n"      \
    "                      each one up with an IPv4 broadcast address,\n"      \
    "                      not loopback, docker*, br-*, veth*, virbr*,\n"      \
    "                      cni*, flannel*, cali*, tun*, tap*; '*': all,\n"     \
    "                      to 255.255.255.255)\n"                              \
    "  --bind ADDR         the mesh's listening address, an IPv4 address\n"    \
    "                      of this host (default *: every address)\n"          \
    "  --advertise HOST[:PORT]  the mesh endpoint put in beacons and\n"        \
    "                      HELLO, for peers behind NAT or in clusters\n"       \
    "                      (default: the address peers see, mesh port)\n"      \
    "  --peer [ID@]tcp://HOST:PORT  a static peer (repeatable)\n"              \
    "  --no-beacon         no broadcast discovery (static peers only)\n"       \
    "  --lease-ttl-ms N    lease TTL (default 10000)\n"                        \
    "  --heartbeat-ms N    heartbeat interval, under TTL/2 (default 1000)\n"   \
    "  --settle-ms N|auto  longest wait for the peers' claim acks (auto)\n"    \
    "  --beacon-interval-ms N, --antientropy-ms N   (default 1000 each)\n"     \
    "  --max-tasks-per-sweep N, --max-dataset-bytes N   pool limits at\n"      \
    "                      submit (1000000 tasks, 4 GiB)\n"                    \
    "  --reevaluate-fraction F  chance to re-evaluate a result of another\n"   \
    "                      operator, 0..1 (default 0.05)\n"                    \
    "  --reeval-timeout-s N  wait for a sampled result's weights (120)\n"      \
    "  --keep-retention-s N  keep_weights sampled: keep own weights until\n"   \
    "                      re-evaluated or this long (86400)\n"                \
    "  --help, --version\n"

static ms_node_t *volatile s_node = NULL; // for the signal handler

//  --------------------------------------------------------------------------
//  SIGTERM / SIGINT: ask the node loop to stop.

static void
s_on_signal(int sig)
{
    ms_node_t *node = s_node;
    if (node && sig == SIGHUP)
        ms_node_ask_reload(node); // the loop reloads the certificate
    else if (node)
        ms_node_stop(node);
}

//  --------------------------------------------------------------------------
//  True when this executable lies inside the build tree it was built in
//  (MESHSWEEP_BUILD_TREE), so the build tree's dashboard is the one to
//  serve; an installed copy (/usr/bin/meshsweepd) serves the installed
//  assets even on the machine that built it.

static bool
s_runs_from_build_tree(void)
{
    char exe[PATH_MAX], tree[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0 || !realpath(MESHSWEEP_BUILD_TREE, tree))
        return false;
    exe[n] = 0;
    size_t len = strlen(tree);
    return strncmp(exe, tree, len) == 0 && exe[len] == '/';
}

static int s_run(ms_node_options_t *opts, const ms_daemon_config_t *config,
                 bool check_only);

//  --------------------------------------------------------------------------
//  Parse options, run the node until a signal.

static int
s_main(int argc, char **argv)
{
    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.api_bind = MS_DEFAULT_API_BIND;
    opts.data_dir = NULL;
    ms_daemon_config_t *config = NULL;
    char error[1200];
    int rc =
        ms_daemon_config_open(&config, argc, argv, &opts, error, sizeof error);
    if (rc != MS_OK) {
        fprintf(stderr, "meshsweepd: %s\n", error);
        return 2;
    }
    ms_daemon_config_action_t action = ms_daemon_config_action(config);
    if (action == MS_DAEMON_CONFIG_HELP || action == MS_DAEMON_CONFIG_VERSION) {
        if (action == MS_DAEMON_CONFIG_HELP)
            fputs(S_USAGE, stdout);
        else
            printf("meshsweepd %s\n", MESHSWEEP_VERSION);
        ms_daemon_config_destroy(&config);
        return 0;
    }
    rc = s_run(&opts, config, action == MS_DAEMON_CONFIG_CHECK);
    ms_daemon_config_destroy(&config);
    return rc;
}

//  --------------------------------------------------------------------------
//  Run the node until a signal (or, with check_only, print the effective
//  settings). Exit code.

static int
s_run(ms_node_options_t *opts_p, const ms_daemon_config_t *config,
      bool check_only)
{
    ms_node_options_t opts = *opts_p;
    // The dashboard: --dashboard-dir, else $MESHSWEEP_DASHBOARD_DIR, else
    // the build tree's assets when this binary runs from it, else the
    // installed ones; none when that is not a directory.
    if (!opts.dashboard_dir)
        opts.dashboard_dir = ms_dashboard_default_dir(
            s_runs_from_build_tree() ? MESHSWEEP_BUILD_DASHBOARD_DIR : NULL,
            MESHSWEEP_INSTALLED_DASHBOARD_DIR);
    struct stat dash_st;
    if (opts.dashboard_dir && (stat(opts.dashboard_dir, &dash_st) != 0 ||
                               !S_ISDIR(dash_st.st_mode))) {
        fprintf(stderr,
                "meshsweepd: dashboard: '%s' is not a directory; / serves "
                "no dashboard\n",
                opts.dashboard_dir);
        opts.dashboard_dir = NULL;
    }

    if (check_only) {
        ms_daemon_config_print(config, &opts, stdout);
        return 0;
    }

    signal(SIGPIPE, SIG_IGN);
    // The API keeps up to 1024 connections open (ms_api.c): raise the
    // soft limit of open files to the hard one (at most 8192), so a burst
    // of clients meets the API's own limit, not EMFILE at accept.
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < 8192) {
        rlim_t want = nofile.rlim_max < 8192 ? nofile.rlim_max : 8192;
        if (want > nofile.rlim_cur) {
            nofile.rlim_cur = want;
            setrlimit(RLIMIT_NOFILE, &nofile);
        }
    }
    ms_node_t *node = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_node_open(&node, &opts, &diag);
    if (rc != MS_OK) {
        char text[1100];
        fprintf(stderr, "meshsweepd: %s\n",
                diag.reason[0] ? ms_diag_format(&diag, text, sizeof text)
                               : ms_strerror(rc));
        return rc == MS_ERR_INVALID ? 2 : 1;
    }
    s_node = node;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = s_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); // reload the certificate

    int n_busy = 0;
    printf("meshsweepd: node %s\n", ms_node_id_hex(node));
    printf("meshsweepd: API http://%s/api/v1\n", ms_node_api_address(node));
    if (opts.dashboard_dir && ms_node_api_address(node))
        printf("meshsweepd: dashboard http://%s/ (assets %s)\n",
               ms_node_api_address(node), opts.dashboard_dir);
    if (ms_node_api_token_file(node))
        printf("meshsweepd: the API listens beyond loopback: every request "
               "needs the token in %s (Authorization: Bearer TOKEN; a "
               "browser opens http://%s/?token=TOKEN once)\n",
               ms_node_api_token_file(node), ms_node_api_address(node));
    const char *gpu_name = NULL;
    int n_gpu = ms_node_gpu_workers(node, &gpu_name);
    if (n_gpu > 0)
        printf("meshsweepd: %d workers (%d on the GPU, %s), data dir %s\n",
               ms_node_worker_count(node, &n_busy), n_gpu, gpu_name,
               opts.data_dir);
    else {
        int n_w = ms_node_worker_count(node, &n_busy);
        printf("meshsweepd: %d worker%s, data dir %s\n", n_w,
               n_w == 1 ? "" : "s", opts.data_dir);
    }
    if (ms_node_has_certificate(node))
        printf("meshsweepd: pool %.12s (authority), operator '%s', mesh port "
               "%d (CURVE), %d static peer%s%s\n",
               ms_node_pool_id_hex(node), ms_node_operator(node),
               ms_node_mesh_port(node), opts.n_peers,
               opts.n_peers == 1 ? "" : "s",
               opts.no_beacon ? ", no beacon" : "");
    else if (ms_node_pool_id_hex(node))
        printf("meshsweepd: open pool '%s' (id %.12s), mesh port %d, %d "
               "static peer%s%s\n",
               opts.open_pool, ms_node_pool_id_hex(node),
               ms_node_mesh_port(node), opts.n_peers,
               opts.n_peers == 1 ? "" : "s",
               opts.no_beacon ? ", no beacon" : "");
    fflush(stdout);
    if (ms_node_backend_note(node))
        fprintf(stderr, "meshsweepd: %s\n", ms_node_backend_note(node));
    if (ms_node_has_certificate(node))
        ; // a pool with an authority: nothing to warn about
    else if (ms_node_pool_id_hex(node))
        fprintf(stderr,
                "meshsweepd: warning: open pool '%s': no authority, every "
                "node that finds this pool may join it and every node is "
                "its own operator, and links are not encrypted (use a "
                "pool with an authority: meshsweep pool init)\n",
                opts.open_pool);
    else
        fprintf(stderr,
                "meshsweepd: no pool certificate and no --open-pool: this "
                "node links to no one (node id %s; get an invite for it, "
                "then `meshsweep pool join`, or SIGHUP once "
                "identity/node.cert is in place)\n",
                ms_node_id_hex(node));

    rc = ms_node_run(node);
    s_node = NULL;
    ms_node_destroy(&node);
    if (rc != MS_OK) {
        fprintf(stderr, "meshsweepd: stopped on error: %s\n", ms_strerror(rc));
        return 1;
    }
    printf("meshsweepd: stopped\n");
    return 0;
}

int
main(int argc, char **argv)
{
    // No fastbins: a node frees large JSON trees (a sweep of 100,000
    // tasks is one), and with fastbins glibc consolidates them again on
    // every free that grows a free chunk past 64 KiB, which made freeing
    // such a tree quadratic (seconds for one spec).
    mallopt(M_MXFAST, 0);
    return s_main(argc, argv);
}
