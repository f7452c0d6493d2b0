/*  =========================================================================
    meshsweepd - the meshsweep node daemon (single-node version)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    meshsweepd --data-dir DIR [--api ADDR:PORT] [--workers N]
               [--backend auto|cpu|cuda] [--config FILE] [--verbose]

    Runs in the foreground (systemd runs it as is). Options can also come
    from an INI file (--config): each key is a long option with '-'
    written '_' (data_dir, api, workers, backend, retry_cap, ...), in no
    section or in [meshsweepd]; the command line wins; an unknown key is
    an error naming FILE:LINE. SIGTERM / SIGINT stop the node gracefully:
    workers stopped, their tasks back to pending, store flushed, exit 0.
    Exit codes: 0 success, 1 failure, 2 bad usage or bad input.
*/
#include "ms_node.h"

#include <ini.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_USAGE                                                                \
    "usage: meshsweepd --data-dir DIR [--api ADDR:PORT] [--workers N]\n"       \
    "                  [--backend auto|cpu|cuda] [--config FILE] "             \
    "[--verbose]\n"                                                            \
    "\n"                                                                       \
    "Run a meshsweep node: train the tasks of submitted sweeps in worker\n"    \
    "processes and serve the HTTP API.\n"                                      \
    "\n"                                                                       \
    "  --data-dir DIR      identity/ and store/ live here (created 0700)\n"    \
    "  --api ADDR:PORT     HTTP API address (default 127.0.0.1:5872;\n"        \
    "                      port 0 picks a free one)\n"                         \
    "  --workers N         worker processes (default: one per core)\n"         \
    "  --backend NAME      auto, cpu or cuda (default auto)\n"                 \
    "  --blas-threads N    BLAS threads per worker (default 1)\n"              \
    "  --retry-cap N       local retries of a crashing task (default 2)\n"     \
    "  --worker-nice N     nice increment of workers (default 10)\n"           \
    "  --config FILE       INI file of the same options (key = value,\n"       \
    "                      '-' written '_'); the command line wins\n"          \
    "  --verbose           log to stderr\n"                                    \
    "  --help, --version\n"

//  Options as text, with where each came from.
typedef struct {
    const char *name; // long option name with '_' ("data_dir")
    bool flag;        // takes no value (verbose)
    char *value;      // value (owned), or NULL when not set
    bool from_cli;    // set on the command line
} s_opt_t;

static s_opt_t s_opts[] = {
    {"data_dir", false, NULL, false},     {"api", false, NULL, false},
    {"workers", false, NULL, false},      {"backend", false, NULL, false},
    {"blas_threads", false, NULL, false}, {"retry_cap", false, NULL, false},
    {"worker_nice", false, NULL, false},  {"config", false, NULL, false},
    {"verbose", true, NULL, false},
};
#define S_N_OPTS (sizeof s_opts / sizeof s_opts[0])

static ms_node_t *volatile s_node = NULL; // for the signal handler

//  --------------------------------------------------------------------------
//  SIGTERM / SIGINT: ask the node loop to stop.

static void
s_on_signal(int sig)
{
    (void) sig;
    ms_node_t *node = s_node;
    if (node)
        ms_node_stop(node);
}

//  --------------------------------------------------------------------------
//  Find an option by name ('-' or '_' spelling); NULL when unknown.

static s_opt_t *
s_find(const char *name, size_t len)
{
    char norm[64];
    if (len >= sizeof norm)
        return NULL;
    for (size_t i = 0; i < len; i++)
        norm[i] = name[i] == '-' ? '_' : name[i];
    norm[len] = 0;
    for (size_t i = 0; i < S_N_OPTS; i++)
        if (strcmp(s_opts[i].name, norm) == 0)
            return &s_opts[i];
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
}

//  --------------------------------------------------------------------------
//  Print one bad-usage line and return 2.

static int
s_usage_error(const char *what)
{
    fprintf(stderr, "meshsweepd: %s (see meshsweepd --help)\n", what);
    return 2;
}

//  What the INI handler needs.
typedef struct {
    const char *path; // config file path
    char error[512];  // first error
} s_ini_t;

//  --------------------------------------------------------------------------
//  One key of the config file; 0 stops the parse with an error.

static int
s_ini_key(void *user, const char *section, const char *name, const char *value)
{
    s_ini_t *ini = user;
    if (section && *section && strcmp(section, "meshsweepd") != 0) {
        snprintf(ini->error, sizeof ini->error, "unknown section [%s]",
                 section);
        return 0;
    }
    s_opt_t *opt = s_find(name, strlen(name));
    if (!opt || strcmp(opt->name, "config") == 0) {
        snprintf(ini->error, sizeof ini->error, "unknown key '%s'", name);
        return 0;
    }
    if (!opt->from_cli)
        s_set(opt, value, false);
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
//  Free the option values.

static void
s_free_opts(void)
{
    for (size_t i = 0; i < S_N_OPTS; i++) {
        free(s_opts[i].value);
        s_opts[i].value = NULL;
    }
}

//  --------------------------------------------------------------------------
//  Parse options, run the node until a signal.

static int
s_main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(S_USAGE, stdout);
            return 0;
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
        s_opt_t *opt = s_find(name, len);
        if (!opt) {
            char msg[300];
            snprintf(msg, sizeof msg, "unknown option '%.200s'", arg);
            return s_usage_error(msg);
        }
        if (opt->flag) {
            if (eq) {
                char msg[300];
                snprintf(msg, sizeof msg, "--%s takes no value", opt->name);
                return s_usage_error(msg);
            }
            s_set(opt, "true", true);
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value) {
            char msg[300];
            snprintf(msg, sizeof msg, "%s needs a value", arg);
            return s_usage_error(msg);
        }
        s_set(opt, value, true);
    }
    s_opt_t *config = s_find("config", 6);
    if (config->value) {
        s_ini_t ini = {.path = config->value};
        int line = ini_parse(config->value, s_ini_key, &ini);
        if (line < 0) {
            fprintf(stderr, "meshsweepd: %s: cannot read: %s\n", config->value,
                    strerror(errno));
            return 2;
        }
        if (line > 0) {
            fprintf(stderr, "meshsweepd: %s:%d: %s\n", config->value, line,
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
        else if (strcmp(n, "backend") == 0)
            opts.backend = o->value;
        else if (strcmp(n, "verbose") == 0) {
            if (strcmp(o->value, "true") && strcmp(o->value, "1") &&
                strcmp(o->value, "yes") && strcmp(o->value, "false") &&
                strcmp(o->value, "0") && strcmp(o->value, "no"))
                return s_usage_error("verbose: expected true or false");
            opts.verbose = !strcmp(o->value, "true") ||
                           !strcmp(o->value, "1") || !strcmp(o->value, "yes");
        } else if (strcmp(n, "config") != 0) {
            v = s_int(o->value, 4096);
            if (v < 0) {
                char msg[300];
                snprintf(msg, sizeof msg,
                         "%s: '%.100s' is not a whole number in 0..4096", n,
                         o->value);
                return s_usage_error(msg);
            }
            if (strcmp(n, "workers") == 0)
                opts.n_workers = v;
            else if (strcmp(n, "blas_threads") == 0)
                opts.blas_threads = v;
            else if (strcmp(n, "retry_cap") == 0)
                opts.retry_cap = v;
            else if (strcmp(n, "worker_nice") == 0)
                opts.worker_nice = v > 19 ? 19 : v;
        }
    }
    if (!opts.data_dir)
        return s_usage_error("--data-dir DIR is required");

    signal(SIGPIPE, SIG_IGN);
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
    signal(SIGHUP, SIG_IGN); // reload arrives with certificates

    int n_busy = 0;
    printf("meshsweepd: node %s\n", ms_node_id_hex(node));
    printf("meshsweepd: API http://%s/api/v1\n", ms_node_api_address(node));
    printf("meshsweepd: %d workers, data dir %s\n",
           ms_node_worker_count(node, &n_busy), opts.data_dir);
    fflush(stdout);

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
    int rc = s_main(argc, argv);
    s_free_opts();
    return rc;
}
