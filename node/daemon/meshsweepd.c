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
#include "ms_dashboard.h"
#include "ms_discovery.h"
#include "ms_gpu.h"
#include "ms_node.h"
#include "ms_wire.h"

#include <ini.h>

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

//  Options as text, with where each came from.
typedef struct {
    const char *name; // long option name with '_' ("data_dir")
    bool flag;        // takes no value (verbose)
    char *value;      // value (owned), or NULL when not set
    bool from_cli;    // set on the command line
    int line;         // its line in the config file, 0 when not from it
} s_opt_t;

static s_opt_t s_opts[] = {
    {"data_dir", false, NULL, false, 0},
    {"api", false, NULL, false, 0},
    {"api_token_file", false, NULL, false, 0},
    {"workers", false, NULL, false, 0},
    {"backend", false, NULL, false, 0},
    {"gpu_workers", false, NULL, false, 0},
    {"blas_threads", false, NULL, false, 0},
    {"retry_cap", false, NULL, false, 0},
    {"worker_nice", false, NULL, false, 0},
    {"worker_memory_mb", false, NULL, false, 0},
    {"idle_only", true, NULL, false, 0},
    {"idle_cpu_pct", false, NULL, false, 0},
    {"idle_busy_s", false, NULL, false, 0},
    {"idle_quiet_s", false, NULL, false, 0},
    {"config", false, NULL, false, 0},
    {"verbose", true, NULL, false, 0},
    {"open_pool", true, NULL, false, 0},
    {"enroll_key", false, NULL, false, 0},
    {"mesh_port", false, NULL, false, 0},
    {"beacon_port", false, NULL, false, 0},
    {"interface", false, NULL, false, 0},
    {"bind", false, NULL, false, 0},
    {"advertise", false, NULL, false, 0},
    {"peer", false, NULL, false, 0},
    {"no_beacon", true, NULL, false, 0},
    {"lease_ttl_ms", false, NULL, false, 0},
    {"heartbeat_ms", false, NULL, false, 0},
    {"settle_ms", false, NULL, false, 0},
    {"beacon_interval_ms", false, NULL, false, 0},
    {"antientropy_ms", false, NULL, false, 0},
    {"max_pause_s", false, NULL, false, 0},
    {"max_tasks_per_sweep", false, NULL, false, 0},
    {"max_dataset_bytes", false, NULL, false, 0},
    {"reevaluate_fraction", false, NULL, false, 0},
    {"reeval_timeout_s", false, NULL, false, 0},
    {"keep_retention_s", false, NULL, false, 0},
    {"dashboard_dir", false, NULL, false, 0},
};

//  Static peers (repeatable option): from the command line, else from the
//  config file.
static char *s_peers[256];            // owned strings
static int s_n_peers = 0;             // entries in s_peers
static bool s_peers_from_cli = false; // the command line gave peers

//  --------------------------------------------------------------------------
//  Add a static peer; false when too many.

static bool
s_add_peer(const char *value, bool from_cli)
{
    if (from_cli && !s_peers_from_cli) {
        for (int i = 0; i < s_n_peers; i++)
            free(s_peers[i]);
        s_n_peers = 0;
        s_peers_from_cli = true;
    } else if (!from_cli && s_peers_from_cli)
        return true; // the command line wins
    if (s_n_peers >= (int) (sizeof s_peers / sizeof s_peers[0]))
        return false;
    s_peers[s_n_peers] = strdup(value);
    return s_peers[s_n_peers++] != NULL;
}
#define S_N_OPTS (sizeof s_opts / sizeof s_opts[0])

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

//  Line of each option's key in the config file (0: not in it), by index
//  in s_opts; a key set twice is an error (a file has one value per key).
static int s_file_lines[S_N_OPTS];

//  --------------------------------------------------------------------------
//  Find an option by its name as the command line (from = '-') or the
//  config file (from = '_') writes it: the name of s_opts with '_' written
//  `from`. The other separator is refused (NULL; *other_p set when the
//  name would be known in the other spelling), so each source has one
//  spelling and a file cannot set one option twice under two names.

static s_opt_t *
s_find(const char *name, size_t len, char from, bool *other_p)
{
    char norm[64];
    bool other = false;
    if (other_p)
        *other_p = false;
    if (len >= sizeof norm)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (c == '-' || c == '_') {
            other = other || c != from;
            c = '_';
        }
        norm[i] = c;
    }
    norm[len] = 0;
    for (size_t i = 0; i < S_N_OPTS; i++)
        if (strcmp(s_opts[i].name, norm) == 0) {
            if (other && other_p)
                *other_p = true;
            return other ? NULL : &s_opts[i];
        }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Set an option's value (replacing any earlier one).

static void
s_set(s_opt_t *opt, const char *value, bool from_cli)
{
    free(opt->value);
    opt->value = strdup(value);
    opt->from_cli = from_cli;
    opt->line = 0;
}

//  --------------------------------------------------------------------------
//  Print one bad-usage line and return 2.

static int
s_usage_error(const char *what)
{
    fprintf(stderr, "meshsweepd: %s (see meshsweepd --help)\n", what);
    return 2;
}

//  --------------------------------------------------------------------------
//  A bad option value, one line: "FILE:LINE: MSG" when the value came from
//  the config file (MSG names the key), else as s_usage_error. Returns 2.

static int
s_value_error(const s_opt_t *opt, const char *config_path, const char *msg)
{
    if (opt->line > 0 && config_path) {
        fprintf(stderr, "meshsweepd: %s:%d: %s\n", config_path, opt->line, msg);
        return 2;
    }
    return s_usage_error(msg);
}

//  --------------------------------------------------------------------------
//  Parse a boolean option value (true/false, yes/no, on/off, 1/0, any
//  case); -1 when malformed.

static int
s_bool(const char *text)
{
    static const char *yes[] = {"true", "yes", "on", "1"};
    static const char *no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return 1;
        if (strcasecmp(text, no[i]) == 0)
            return 0;
    }
    return -1;
}

//  --------------------------------------------------------------------------
//  Check a static peer "[NODE_ID@]tcp://HOST:PORT"; false with the reason
//  in why (one phrase) when malformed. The node id, when given, is the
//  peer's whole id (the dialer needs its key): 64 hex characters.

static bool
s_peer_ok(const char *spec, char *why, size_t why_n)
{
    const char *at = strchr(spec, '@');
    const char *ep = at ? at + 1 : spec;
    if (at) {
        size_t n = (size_t) (at - spec);
        if (n != MS_HASH_HEX_LEN || strspn(spec, "0123456789abcdef") != n) {
            snprintf(why, why_n,
                     "NODE_ID must be the peer's node id, 64 lowercase hex "
                     "characters (got %zu characters)",
                     n);
            return false;
        }
    }
    if (strncmp(ep, "tcp://", 6) != 0) {
        snprintf(why, why_n, "expected [NODE_ID@]tcp://HOST:PORT");
        return false;
    }
    const char *colon = strrchr(ep + 6, ':');
    if (!colon || colon == ep + 6) {
        snprintf(why, why_n, "expected [NODE_ID@]tcp://HOST:PORT (no %s)",
                 colon ? "HOST" : "PORT");
        return false;
    }
    const char *port = colon + 1;
    size_t n_port = strlen(port);
    long v = 0;
    for (size_t i = 0; i < n_port && i < 6; i++)
        v = port[i] >= '0' && port[i] <= '9' ? v * 10 + (port[i] - '0') : -1;
    if (n_port == 0 || n_port > 5 || strspn(port, "0123456789") != n_port ||
        v < 1 || v > 65535) {
        snprintf(why, why_n, "port '%.20s' is not a number in 1..65535", port);
        return false;
    }
    if (!ms_wire_endpoint_valid(ep)) {
        snprintf(why, why_n,
                 "HOST must be a name or address (letters, digits, '.', "
                 "'-', '_'; IPv6 in [brackets])");
        return false;
    }
    return true;
}

static int s_int(const char *text, int max);

//  --------------------------------------------------------------------------
//  Check --bind ADDR: "*", or an IPv4 address this host has (0.0.0.0 is
//  every address, as "*"); false with the reason in why when not.

static bool
s_bind_ok(const char *addr, char *why, size_t why_n)
{
    struct in_addr a;
    if (strcmp(addr, "*") == 0)
        return true;
    if (inet_pton(AF_INET, addr, &a) != 1) {
        snprintf(why, why_n,
                 "expected an IPv4 address of this host, or * (every "
                 "address); names and IPv6 are not taken");
        return false;
    }
    if (a.s_addr == htonl(INADDR_ANY))
        return true;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return true; // cannot tell: the mesh's bind will say
    char have[300] = "";
    bool found = false;
    for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
            continue;
        struct in_addr b = ((struct sockaddr_in *) i->ifa_addr)->sin_addr;
        found = b.s_addr == a.s_addr;
        char text[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &b, text, sizeof text);
        size_t len = strlen(have);
        snprintf(have + len, sizeof have - len, "%s%s", len ? ", " : "", text);
    }
    freeifaddrs(ifs);
    if (!found)
        snprintf(why, why_n,
                 "no interface of this host has that address (it has: %s)",
                 have[0] ? have : "none");
    return found;
}

//  --------------------------------------------------------------------------
//  Parse --advertise HOST[:PORT] into opts (host borrowed from a static
//  copy: the option table's strings hold the whole value); false with
//  the reason in why when malformed. HOST: a name or an IPv4 address.

static char s_advertise_host[MS_DISCOVERY_HOST_MAX];

static bool
s_advertise_parse(const char *value, ms_node_options_t *opts, char *why,
                  size_t why_n)
{
    const char *colon = strchr(value, ':');
    size_t n_host = colon ? (size_t) (colon - value) : strlen(value);
    int port = 0;
    if (value[0] == '[' || (colon && strchr(colon + 1, ':'))) {
        snprintf(why, why_n,
                 "expected HOST[:PORT] with one ':' at most (IPv6 is not "
                 "taken: the mesh and the beacons are IPv4)");
        return false;
    }
    if (n_host == 0) {
        snprintf(why, why_n, "expected HOST[:PORT] (no HOST)");
        return false;
    }
    if (n_host >= sizeof s_advertise_host) {
        snprintf(why, why_n, "HOST has more than %zu characters",
                 sizeof s_advertise_host - 1);
        return false;
    }
    if (colon) {
        port = s_int(colon + 1, 65535);
        if (port < 1) {
            snprintf(why, why_n, "port '%.20s' is not a number in 1..65535",
                     colon + 1);
            return false;
        }
    }
    char host[MS_DISCOVERY_HOST_MAX], ep[MS_DISCOVERY_HOST_MAX + 32];
    memcpy(host, value, n_host);
    host[n_host] = '\0';
    snprintf(ep, sizeof ep, "tcp://%s:%d", host, port ? port : 1);
    struct in_addr a;
    if (!ms_wire_endpoint_valid(ep) || strcmp(host, "*") == 0) {
        snprintf(why, why_n,
                 "HOST must be a name or an IPv4 address (letters, digits, "
                 "'.', '-', '_')");
        return false;
    }
    if (inet_pton(AF_INET, host, &a) == 1 &&
        (a.s_addr == htonl(INADDR_ANY) ||
         a.s_addr == htonl(INADDR_BROADCAST))) {
        snprintf(why, why_n, "%s is not an address a peer can dial", host);
        return false;
    }
    memcpy(s_advertise_host, host, n_host + 1);
    opts->advertise_host = s_advertise_host;
    opts->advertise_port = port;
    return true;
}

//  What the INI reader and handler need.
typedef struct {
    const char *path;   // config file path
    FILE *file;         // open config file
    int line;           // physical line being parsed (1-based)
    bool at_line_start; // the next read starts a new physical line
    int error_line;     // line of the first error, 0 when none
    char error[512];    // first error
} s_ini_t;

//  --------------------------------------------------------------------------
//  libinih reader (fgets-like) that counts physical lines, so that errors
//  name the line they are on, and checks section headers where they stand
//  (libinih calls no handler for a section line: an unknown section would
//  otherwise be reported at its first key, or not at all when empty).

static char *
s_ini_read(char *str, int num, void *stream)
{
    s_ini_t *ini = stream;
    if (ini->error_line)
        return NULL; // stop the parse at the first error
    char *got = fgets(str, num, ini->file);
    if (!got)
        return NULL;
    bool start = ini->at_line_start;
    if (start)
        ini->line++;
    ini->at_line_start = strchr(got, '\n') != NULL;
    const char *p =
        got + (start && ini->line == 1 && strncmp(got, "\xEF\xBB\xBF", 3) == 0
                   ? 3
                   : 0);
    p += start ? strspn(p, " \t\r") : strlen(p);
    const char *close = *p == '[' ? strchr(p, ']') : NULL;
    if (close) {
        size_t n = (size_t) (close - p - 1);
        if (n != 10 || strncmp(p + 1, "meshsweepd", 10) != 0) {
            snprintf(ini->error, sizeof ini->error,
                     "unknown section [%.*s] (only [meshsweepd], or keys "
                     "before any section)",
                     (int) (n > 100 ? 100 : n), p + 1);
            ini->error_line = ini->line;
            return NULL;
        }
    }
    return got;
}

//  --------------------------------------------------------------------------
//  One key of the config file; 0 stops the parse with an error.

static int
s_ini_key(void *user, const char *section, const char *name, const char *value)
{
    s_ini_t *ini = user;
    ini->error_line = ini->line; // kept only when this returns 0
    if (section && *section && strcmp(section, "meshsweepd") != 0) {
        snprintf(ini->error, sizeof ini->error, "unknown section [%s]",
                 section);
        return 0;
    }
    bool dashed = false;
    s_opt_t *opt = s_find(name, strlen(name), '_', &dashed);
    if (dashed) {
        char fixed[64];
        snprintf(fixed, sizeof fixed, "%s", name);
        for (char *c = fixed; *c; c++)
            *c = *c == '-' ? '_' : *c;
        snprintf(ini->error, sizeof ini->error,
                 "key '%.60s': config keys are written with '_' where the "
                 "option has '-' (%s)",
                 name, fixed);
        return 0;
    }
    if (!opt || strcmp(opt->name, "config") == 0) {
        snprintf(ini->error, sizeof ini->error, "unknown key '%s'", name);
        return 0;
    }
    int *file_line = &s_file_lines[opt - s_opts];
    if (*file_line > 0 && strcmp(opt->name, "peer") != 0) {
        snprintf(ini->error, sizeof ini->error,
                 "key '%s' is set twice (line %d and here)", name, *file_line);
        return 0;
    }
    *file_line = ini->line;
    if (strcmp(opt->name, "peer") == 0) {
        char why[200];
        if (!s_peer_ok(value, why, sizeof why)) {
            snprintf(ini->error, sizeof ini->error, "peer = %.200s: %s", value,
                     why);
            return 0;
        }
        if (!s_add_peer(value, false)) {
            snprintf(ini->error, sizeof ini->error, "too many peers");
            return 0;
        }
        ini->error_line = 0;
        return 1;
    }
    // A boolean key takes a boolean (open_pool is a name); anything else
    // is refused here, where the line is known.
    if (opt->flag && strcmp(opt->name, "open_pool") != 0) {
        int b = s_bool(value);
        if (b < 0) {
            snprintf(ini->error, sizeof ini->error,
                     "%s = %.100s: expected true or false (or yes/no, "
                     "on/off, 1/0)",
                     name, value);
            return 0;
        }
        value = b ? "true" : "false";
    }
    if (!opt->from_cli) {
        s_set(opt, value, false);
        opt->line = ini->line;
    }
    ini->error_line = 0;
    return 1;
}

//  --------------------------------------------------------------------------
//  Parse a non-negative int option; -1 when malformed.

static int
s_int(const char *text, int max)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || !*text || *end || v < 0 || v > max)
        return -1;
    return (int) v;
}

//  --------------------------------------------------------------------------
//  Parse a non-negative 64-bit option; -1 when malformed.

static int64_t
s_int64(const char *text)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || !*text || *end || v < 0)
        return -1;
    return (int64_t) v;
}

//  --------------------------------------------------------------------------
//  Free the option values.

static void
s_free_opts(void)
{
    for (size_t i = 0; i < S_N_OPTS; i++) {
        free(s_opts[i].value);
        s_opts[i].value = NULL;
    }
    for (int i = 0; i < s_n_peers; i++)
        free(s_peers[i]);
    s_n_peers = 0;
}

//  --------------------------------------------------------------------------
//  The effective value of option o as text (what the node will use,
//  defaults included); false when this function does not know the option
//  (then its text, or "(default)", is printed).

static bool
s_effective(const s_opt_t *o, const ms_node_options_t *opts, char *buf,
            size_t n)
{
    const char *k = o->name;
    const char *text = NULL;
    long long v = 0;
    bool num = true;
    if (strcmp(k, "data_dir") == 0)
        text = opts->data_dir, num = false;
    else if (strcmp(k, "api") == 0)
        text = opts->api_bind, num = false;
    else if (strcmp(k, "api_token_file") == 0) {
        if (!opts->api_token_file) {
            snprintf(buf, n, "%s/api-token", opts->data_dir);
            return true;
        }
        text = opts->api_token_file, num = false;
    } else if (strcmp(k, "workers") == 0)
        v = opts->n_workers;
    else if (strcmp(k, "backend") == 0)
        text = opts->backend ? opts->backend : "auto", num = false;
    else if (strcmp(k, "gpu_workers") == 0) {
        if (opts->gpu_workers < 0)
            text = "auto", num = false;
        v = opts->gpu_workers;
    } else if (strcmp(k, "blas_threads") == 0)
        v = opts->blas_threads;
    else if (strcmp(k, "retry_cap") == 0)
        v = opts->retry_cap;
    else if (strcmp(k, "worker_nice") == 0)
        v = opts->worker_nice;
    else if (strcmp(k, "worker_memory_mb") == 0)
        v = opts->worker_memory_mb;
    else if (strcmp(k, "idle_only") == 0)
        text = opts->idle_only ? "true" : "false", num = false;
    else if (strcmp(k, "idle_cpu_pct") == 0)
        v = opts->idle_cpu_pct;
    else if (strcmp(k, "idle_busy_s") == 0)
        v = opts->idle_busy_s;
    else if (strcmp(k, "idle_quiet_s") == 0)
        v = opts->idle_quiet_s;
    else if (strcmp(k, "dashboard_dir") == 0)
        text = opts->dashboard_dir ? opts->dashboard_dir : "(none)",
        num = false;
    else if (strcmp(k, "verbose") == 0)
        text = opts->verbose ? "true" : "false", num = false;
    else if (strcmp(k, "no_beacon") == 0)
        text = opts->no_beacon ? "true" : "false", num = false;
    else if (strcmp(k, "open_pool") == 0)
        text = opts->open_pool ? opts->open_pool : "(none)", num = false;
    else if (strcmp(k, "enroll_key") == 0)
        text = opts->enroll_key ? opts->enroll_key : "(none)", num = false;
    else if (strcmp(k, "interface") == 0)
        text = opts->interface ? opts->interface : "(every usable interface)",
        num = false;
    else if (strcmp(k, "bind") == 0)
        text = opts->mesh_bind ? opts->mesh_bind : "* (every address)",
        num = false;
    else if (strcmp(k, "advertise") == 0) {
        if (!opts->advertise_host)
            text = "(none)", num = false;
        else {
            snprintf(buf, n, "%s:%d", opts->advertise_host,
                     opts->advertise_port > 0 ? opts->advertise_port
                                              : opts->mesh_port);
            return true;
        }
    } else if (strcmp(k, "mesh_port") == 0)
        v = opts->mesh_port;
    else if (strcmp(k, "beacon_port") == 0)
        v = opts->beacon_port;
    else if (strcmp(k, "lease_ttl_ms") == 0)
        v = opts->lease_ttl_ms;
    else if (strcmp(k, "heartbeat_ms") == 0)
        v = opts->heartbeat_ms;
    else if (strcmp(k, "settle_ms") == 0) {
        if (opts->settle_ms < 0)
            text = "auto", num = false;
        v = opts->settle_ms;
    } else if (strcmp(k, "beacon_interval_ms") == 0)
        v = opts->beacon_interval_ms;
    else if (strcmp(k, "antientropy_ms") == 0)
        v = opts->antientropy_ms;
    else if (strcmp(k, "max_pause_s") == 0)
        v = opts->max_pause_s;
    else if (strcmp(k, "max_tasks_per_sweep") == 0)
        v = opts->max_tasks_per_sweep;
    else if (strcmp(k, "max_dataset_bytes") == 0)
        v = opts->max_dataset_bytes;
    else if (strcmp(k, "reevaluate_fraction") == 0) {
        snprintf(buf, n, "%g", opts->reevaluate_fraction);
        return true;
    } else if (strcmp(k, "reeval_timeout_s") == 0)
        v = opts->reeval_timeout_s;
    else if (strcmp(k, "keep_retention_s") == 0)
        v = opts->keep_retention_s;
    else {
        snprintf(buf, n, "%s", o->value ? o->value : "(default)");
        return false;
    }
    if (num)
        snprintf(buf, n, "%lld", v);
    else
        snprintf(buf, n, "%s", text ? text : "(none)");
    return true;
}

//  --------------------------------------------------------------------------
//  --check-config: print every config key with its effective value and
//  where it came from (the command line, FILE:LINE, or the default), then
//  the static peers (the first n_primary from the command line or the
//  file, the others from DATA_DIR/identity/peers.conf). For people: the
//  comments after '#' are not INI comments.

static void
s_print_effective(const ms_node_options_t *opts, const char *config_path,
                  int n_primary)
{
    printf("# meshsweepd %s: effective settings (the command line wins over "
           "%s, which wins over the defaults)\n",
           MESHSWEEP_VERSION, config_path ? config_path : "no config file");
    for (size_t i = 0; i < S_N_OPTS; i++) {
        const s_opt_t *o = &s_opts[i];
        if (strcmp(o->name, "config") == 0 || strcmp(o->name, "peer") == 0)
            continue;
        char value[PATH_MAX + 64], from[PATH_MAX + 32];
        s_effective(o, opts, value, sizeof value);
        if (o->from_cli)
            snprintf(from, sizeof from, "command line");
        else if (o->line > 0 && config_path)
            snprintf(from, sizeof from, "%s:%d", config_path, o->line);
        else
            snprintf(from, sizeof from, "default");
        printf("%-20s = %-28s # %s\n", o->name, value, from);
    }
    for (int i = 0; i < opts->n_peers; i++) {
        char from[PATH_MAX + 32];
        if (i >= n_primary)
            snprintf(from, sizeof from, "%s/identity/peers.conf",
                     opts->data_dir);
        else
            snprintf(from, sizeof from, "%s",
                     s_peers_from_cli ? "command line"
                                      : (config_path ? config_path : "?"));
        printf("%-20s = %s # %s\n", "peer", opts->peers[i], from);
    }
    if (opts->n_peers == 0)
        printf("# no static peer\n");
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

//  --------------------------------------------------------------------------
//  Parse options, run the node until a signal.

static int
s_main(int argc, char **argv)
{
    bool check_config = false; // --check-config: print and start nothing
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(S_USAGE, stdout);
            return 0;
        }
        if (strcmp(arg, "--check-config") == 0) {
            check_config = true;
            continue;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("meshsweepd %s\n", MESHSWEEP_VERSION);
            return 0;
        }
        if (strncmp(arg, "--", 2) != 0) {
            char msg[300];
            snprintf(msg, sizeof msg, "unexpected argument '%.200s'", arg);
            return s_usage_error(msg);
        }
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t) (eq - name) : strlen(name);
        bool underscored = false;
        s_opt_t *opt = s_find(name, len, '-', &underscored);
        if (!opt) {
            char msg[400];
            if (underscored) {
                char fixed[64];
                snprintf(fixed, sizeof fixed, "%.*s", (int) len, name);
                for (char *c = fixed; *c; c++)
                    *c = *c == '_' ? '-' : *c;
                snprintf(msg, sizeof msg,
                         "unknown option '%.200s' (options are written with "
                         "'-': --%s)",
                         arg, fixed);
            } else
                snprintf(msg, sizeof msg, "unknown option '%.200s'", arg);
            return s_usage_error(msg);
        }
        if (strcmp(opt->name, "open_pool") == 0) {
            // --open-pool or --open-pool=NAME (never a separate word)
            if (eq && !eq[1])
                return s_usage_error("--open-pool=NAME: empty name");
            s_set(opt, eq ? eq + 1 : "default", true);
            continue;
        }
        if (opt->flag) {
            // --flag, or --flag=true|false (so the command line can turn
            // off what the config file turns on)
            if (eq && s_bool(eq + 1) < 0) {
                char msg[300], dashed[64];
                snprintf(dashed, sizeof dashed, "%s", opt->name);
                for (char *c = dashed; *c; c++)
                    *c = *c == '_' ? '-' : *c;
                snprintf(msg, sizeof msg,
                         "--%s=%.100s: the value is true or false (or none)",
                         dashed, eq + 1);
                return s_usage_error(msg);
            }
            s_set(opt, eq ? eq + 1 : "true", true);
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s needs a value", arg);
            return s_usage_error(msg);
        }
        if (strcmp(opt->name, "peer") == 0) {
            char why[200], msg[500];
            if (!s_peer_ok(value, why, sizeof why)) {
                snprintf(msg, sizeof msg, "--peer '%.200s': %s", value, why);
                return s_usage_error(msg);
            }
            if (!s_add_peer(value, true))
                return s_usage_error("--peer: too many peers");
            continue;
        }
        s_set(opt, value, true);
    }
    s_opt_t *config = s_find("config", 6, '_', NULL);
    if (config->value) {
        s_ini_t ini = {.path = config->value, .at_line_start = true};
        ini.file = fopen(config->value, "r");
        if (!ini.file) {
            fprintf(stderr, "meshsweepd: %s: cannot read: %s\n", config->value,
                    strerror(errno));
            return 2;
        }
        int line = ini_parse_stream(s_ini_read, &ini, s_ini_key, &ini);
        fclose(ini.file);
        if (line < 0) {
            fprintf(stderr, "meshsweepd: %s: cannot read: out of memory\n",
                    config->value);
            return 2;
        }
        if (ini.error_line || line > 0) {
            fprintf(stderr, "meshsweepd: %s:%d: %s\n", config->value,
                    ini.error_line ? ini.error_line : line,
                    ini.error[0] ? ini.error : "syntax error");
            return 2;
        }
    }

    ms_node_options_t opts;
    ms_node_options_defaults(&opts);
    opts.api_bind = MS_DEFAULT_API_BIND;
    opts.data_dir = NULL;
    for (size_t i = 0; i < S_N_OPTS; i++) {
        const s_opt_t *o = &s_opts[i];
        if (!o->value)
            continue;
        const char *n = o->name;
        int v = 0;
        if (strcmp(n, "data_dir") == 0)
            opts.data_dir = o->value;
        else if (strcmp(n, "api") == 0)
            opts.api_bind = o->value;
        else if (strcmp(n, "dashboard_dir") == 0)
            opts.dashboard_dir = o->value;
        else if (strcmp(n, "api_token_file") == 0) {
            if (!*o->value)
                return s_value_error(o, config->value,
                                     "api_token_file: empty path");
            opts.api_token_file = o->value;
        } else if (strcmp(n, "backend") == 0)
            opts.backend = o->value;
        else if (strcmp(n, "gpu_workers") == 0) {
            ms_diag_t gdiag;
            ms_diag_clear(&gdiag);
            if (ms_gpu_workers_parse(o->value, &opts.gpu_workers, &gdiag) !=
                MS_OK) {
                char msg[MS_DIAG_WHERE_MAX + MS_DIAG_REASON_MAX + 4];
                snprintf(msg, sizeof msg, "%s: %s", gdiag.where, gdiag.reason);
                return s_value_error(o, config->value, msg);
            }
        } else if (strcmp(n, "enroll_key") == 0)
            opts.enroll_key = o->value;
        else if (strcmp(n, "verbose") == 0 || strcmp(n, "no_beacon") == 0 ||
                 strcmp(n, "idle_only") == 0) {
            int b = s_bool(o->value);
            if (b < 0) {
                char msg[300];
                snprintf(msg, sizeof msg, "%s: expected true or false", n);
                return s_value_error(o, config->value, msg);
            }
            if (n[0] == 'v')
                opts.verbose = b;
            else if (n[0] == 'i')
                opts.idle_only = b;
            else
                opts.no_beacon = b;
        } else if (strcmp(n, "open_pool") == 0) {
            if (!*o->value)
                return s_value_error(o, config->value, "open_pool: empty name");
            opts.open_pool = o->value;
        } else if (strcmp(n, "interface") == 0) {
            ms_diag_t idiag;
            ms_diag_clear(&idiag);
            if (ms_discovery_interface_check(o->value, &idiag) != MS_OK) {
                char msg[MS_DIAG_REASON_MAX + 32];
                snprintf(msg, sizeof msg, "%s %s",
                         o->line > 0 ? "interface:" : "--interface",
                         idiag.reason);
                return s_value_error(o, config->value, msg);
            }
            opts.interface = o->value;
        } else if (strcmp(n, "bind") == 0) {
            char why[400], msg[600];
            if (!s_bind_ok(o->value, why, sizeof why)) {
                snprintf(msg, sizeof msg, "%s '%.64s': %s",
                         o->line > 0 ? "bind:" : "--bind", o->value, why);
                return s_value_error(o, config->value, msg);
            }
            opts.mesh_bind = strcmp(o->value, "*") == 0 ? NULL : o->value;
        } else if (strcmp(n, "advertise") == 0) {
            char why[300], msg[500];
            if (!s_advertise_parse(o->value, &opts, why, sizeof why)) {
                snprintf(msg, sizeof msg, "%s '%.100s': %s",
                         o->line > 0 ? "advertise:" : "--advertise", o->value,
                         why);
                return s_value_error(o, config->value, msg);
            }
        } else if (strcmp(n, "reevaluate_fraction") == 0) {
            char *end = NULL;
            errno = 0;
            double f = strtod(o->value, &end);
            if (!*o->value || errno || !end || *end || !(f >= 0 && f <= 1)) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a number in 0..1", n, o->value);
                return s_value_error(o, config->value, msg);
            }
            opts.reevaluate_fraction = f;
        } else if (strcmp(n, "idle_cpu_pct") == 0) {
            v = s_int(o->value, 100);
            if (v < 0) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a whole number in 0..100", n,
                         o->value);
                return s_value_error(o, config->value, msg);
            }
            opts.idle_cpu_pct = v;
        } else if (strcmp(n, "idle_busy_s") == 0 ||
                   strcmp(n, "idle_quiet_s") == 0 ||
                   strcmp(n, "worker_memory_mb") == 0) {
            bool mem = n[0] == 'w';
            v = s_int(o->value, INT_MAX);
            if (v < (mem ? 0 : 1)) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a whole number of %d or more", n,
                         o->value, mem ? 0 : 1);
                return s_value_error(o, config->value, msg);
            }
            if (mem)
                opts.worker_memory_mb = v;
            else if (n[5] == 'b')
                opts.idle_busy_s = v;
            else
                opts.idle_quiet_s = v;
        } else if (strcmp(n, "reeval_timeout_s") == 0 ||
                   strcmp(n, "keep_retention_s") == 0) {
            v = s_int(o->value, INT_MAX);
            bool timeout = strcmp(n, "reeval_timeout_s") == 0;
            if (v < (timeout ? 1 : 0)) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a whole number "
                         "of %d or more",
                         n, o->value, timeout ? 1 : 0);
                return s_value_error(o, config->value, msg);
            }
            if (timeout)
                opts.reeval_timeout_s = v;
            else
                opts.keep_retention_s = v;
        } else if (strcmp(n, "settle_ms") == 0 && strcmp(o->value, "auto") == 0)
            opts.settle_ms = MS_DEFAULT_SETTLE_MS;
        else if (strcmp(n, "max_tasks_per_sweep") == 0 ||
                 strcmp(n, "max_dataset_bytes") == 0) {
            int64_t v64 = s_int64(o->value);
            if (v64 < 1) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a whole number of 1 or more", n,
                         o->value);
                return s_value_error(o, config->value, msg);
            }
            if (n[4] == 't')
                opts.max_tasks_per_sweep = v64;
            else
                opts.max_dataset_bytes = v64;
        } else if (strstr(n, "_ms") || strstr(n, "_port") ||
                   strcmp(n, "max_pause_s") == 0) {
            v = s_int(o->value, INT_MAX);
            bool port = strstr(n, "_port") != NULL;
            if (v < 0 || (port && v > 65535)) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a whole number%s", n, o->value,
                         port ? " in 0..65535" : " of 0 or more");
                return s_value_error(o, config->value, msg);
            }
            if (strcmp(n, "mesh_port") == 0)
                opts.mesh_port = v;
            else if (strcmp(n, "beacon_port") == 0)
                opts.beacon_port = v;
            else if (strcmp(n, "lease_ttl_ms") == 0)
                opts.lease_ttl_ms = v;
            else if (strcmp(n, "heartbeat_ms") == 0)
                opts.heartbeat_ms = v;
            else if (strcmp(n, "settle_ms") == 0)
                opts.settle_ms = v;
            else if (strcmp(n, "beacon_interval_ms") == 0)
                opts.beacon_interval_ms = v;
            else if (strcmp(n, "antientropy_ms") == 0)
                opts.antientropy_ms = v;
            else
                opts.max_pause_s = v;
        } else if (strcmp(n, "config") != 0) {
            v = s_int(o->value, 4096);
            if (v < 0) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a whole number in 0..4096", n,
                         o->value);
                return s_value_error(o, config->value, msg);
            }
            if (strcmp(n, "workers") == 0)
                opts.n_workers = v;
            else if (strcmp(n, "blas_threads") == 0)
                opts.blas_threads = v;
            else if (strcmp(n, "retry_cap") == 0)
                opts.retry_cap = v;
            else if (strcmp(n, "worker_nice") == 0) {
                if (v > 19) {
                    char msg[300];
                    snprintf(msg, sizeof msg,
                             "worker_nice: %d is above 19, the lowest "
                             "priority there is",
                             v);
                    return s_value_error(o, config->value, msg);
                }
                opts.worker_nice = v;
            }
        }
    }
    if (!opts.data_dir)
        return s_usage_error("--data-dir DIR is required");
    //  DATA_DIR/identity/peers.conf (`meshsweep pool join --peer`): its
    //  peers come after those of the config file and the command line
    char **conf_peers = NULL;
    size_t n_conf_peers = 0;
    int n_primary_peers = s_n_peers; // from the command line or the file
    ms_diag_t pdiag;
    ms_diag_clear(&pdiag);
    int prc = ms_node_peers_conf_load(opts.data_dir, &conf_peers, &n_conf_peers,
                                      &pdiag);
    if (prc != MS_OK && prc != MS_ERR_NOTFOUND) {
        char text[1100];
        fprintf(stderr, "meshsweepd: %s\n",
                ms_diag_format(&pdiag, text, sizeof text));
        return 2;
    }
    for (size_t i = 0; i < n_conf_peers; i++) {
        bool dup = false;
        for (int j = 0; j < s_n_peers && !dup; j++)
            dup = strcmp(s_peers[j], conf_peers[i]) == 0;
        if (dup)
            continue;
        if (s_n_peers >= (int) (sizeof s_peers / sizeof s_peers[0])) {
            ms_node_peers_free(&conf_peers, n_conf_peers);
            return s_usage_error("peers.conf: too many peers");
        }
        s_peers[s_n_peers++] = conf_peers[i];
        conf_peers[i] = NULL; // s_peers owns it now
    }
    ms_node_peers_free(&conf_peers, n_conf_peers);
    opts.peers = (const char *const *) s_peers;
    opts.n_peers = s_n_peers;

    // The checks ms_node_open makes first, here so that a bad value from
    // the config file names its line (and --check-config makes them too).
    ms_diag_t cdiag;
    ms_diag_clear(&cdiag);
    if (ms_node_options_check(&opts, &cdiag) != MS_OK) {
        s_opt_t *bad = s_find(cdiag.where, strlen(cdiag.where), '_', NULL);
        char text[1100];
        ms_diag_format(&cdiag, text, sizeof text);
        return bad ? s_value_error(bad, config->value, text)
                   : s_usage_error(text);
    }

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

    if (check_config) {
        s_print_effective(&opts, config->value, n_primary_peers);
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
    int rc = s_main(argc, argv);
    s_free_opts();
    return rc;
}
