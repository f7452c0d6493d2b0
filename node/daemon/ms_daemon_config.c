/*  =========================================================================
    ms_daemon_config - the daemon's options: one table for the command
    line and the INI config file

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Each row of s_table names an option as the config file writes it
    (data_dir; the command line writes --data-dir), the field of
    ms_node_options_t it sets (offsetof) and its kind. Parsing is in two
    passes: the command line and the file only collect text (each option
    remembers where its value came from), then s_apply turns every value
    into its field with the row's rule, so that an error names the value's
    own source. Before this class the daemon wrote the rules as one
    if-chain for parsing and another for --check-config, and the trust
    tests' dishonest node had a third, smaller parser of its own.
*/
#define _DEFAULT_SOURCE
#include "ms_daemon_config.h"
#include "ms_discovery.h"
#include "ms_gpu.h"
#include "ms_peers_conf.h"
#include "ms_wire.h"

#include <ini.h>

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

//  How a row's text becomes its field.
typedef enum {
    S_TEXT,     // const char *, taken as is
    S_PATH,     // const char *, not empty
    S_BOOL,     // bool: true/false, yes/no, on/off, 1/0
    S_INT,      // int in min..max
    S_INT64,    // int64_t in min..max
    S_FRACTION, // double in 0..1
    S_OWN,      // the row's own parse function
    S_NONE,     // no field (config, peer: handled apart)
} s_kind_t;

typedef struct s_row s_row_t;

//  A row's own rule: set opts from value, or false with why.
typedef bool (*s_parse_fn)(const s_row_t *row, const char *value,
                           ms_node_options_t *opts, ms_daemon_config_t *self,
                           char *why, size_t why_n);
//  A row's own effective text; false to print it by its kind.
typedef bool (*s_show_fn)(const ms_node_options_t *opts, char *buf, size_t n);

struct s_row {
    const char *name;   // as the config file writes it ("mesh_port")
    s_kind_t kind;      // how its text becomes its field
    size_t offset;      // of the field in ms_node_options_t
    long long min, max; // S_INT, S_INT64: the range of an option
                        // ms_node_options has none for (S_NODE_RANGE:
                        // ms_node_options_range is the range)
    s_parse_fn parse;   // S_OWN; or an extra check after S_INT
    s_show_fn show;     // effective text, when the kind is not enough
    const char *unset;  // effective text of a NULL string or a negative int
};

#define S_FIELD(f) offsetof(ms_node_options_t, f)
//  min, max of a whole-number row whose range ms_node_options owns (the
//  range is written there once: ms_node_options_check applies it too).
#define S_NODE_RANGE 0, 0

static bool s_parse_gpu_workers(const s_row_t *, const char *,
                                ms_node_options_t *, ms_daemon_config_t *,
                                char *, size_t);
static bool s_parse_interface(const s_row_t *, const char *,
                              ms_node_options_t *, ms_daemon_config_t *, char *,
                              size_t);
static bool s_parse_bind(const s_row_t *, const char *, ms_node_options_t *,
                         ms_daemon_config_t *, char *, size_t);
static bool s_parse_advertise(const s_row_t *, const char *,
                              ms_node_options_t *, ms_daemon_config_t *, char *,
                              size_t);
static bool s_parse_settle(const s_row_t *, const char *, ms_node_options_t *,
                           ms_daemon_config_t *, char *, size_t);
static bool s_show_token_file(const ms_node_options_t *, char *, size_t);
static bool s_show_advertise(const ms_node_options_t *, char *, size_t);

//  Every option, in the order --check-config prints them.
static const s_row_t s_table[] = {
    {"data_dir", S_TEXT, S_FIELD(data_dir), 0, 0, NULL, NULL, NULL},
    {"api", S_TEXT, S_FIELD(api_bind), 0, 0, NULL, NULL, NULL},
    {"api_token_file", S_PATH, S_FIELD(api_token_file), 0, 0, NULL,
     s_show_token_file, NULL},
    {"workers", S_INT, S_FIELD(n_workers), S_NODE_RANGE, NULL, NULL, NULL},
    {"backend", S_TEXT, S_FIELD(backend), 0, 0, NULL, NULL, "auto"},
    {"gpu_workers", S_OWN, S_FIELD(gpu_workers), 0, 0, s_parse_gpu_workers,
     NULL, "auto"},
    {"blas_threads", S_INT, S_FIELD(blas_threads), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"retry_cap", S_INT, S_FIELD(retry_cap), S_NODE_RANGE, NULL, NULL, NULL},
    // worker_nice: parsed as any whole number of 0 or more; its range is
    // ms_node_options' (0..19), whose check says why 19 is the top
    {"worker_nice", S_INT, S_FIELD(worker_nice), 0, INT_MAX, NULL, NULL, NULL},
    {"worker_memory_mb", S_INT, S_FIELD(worker_memory_mb), S_NODE_RANGE, NULL,
     NULL, NULL},
    {"idle_only", S_BOOL, S_FIELD(idle_only), 0, 0, NULL, NULL, NULL},
    {"idle_cpu_pct", S_INT, S_FIELD(idle_cpu_pct), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"idle_busy_s", S_INT, S_FIELD(idle_busy_s), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"idle_quiet_s", S_INT, S_FIELD(idle_quiet_s), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"config", S_NONE, 0, 0, 0, NULL, NULL, NULL},
    {"verbose", S_BOOL, S_FIELD(verbose), 0, 0, NULL, NULL, NULL},
    {"open_pool", S_PATH, S_FIELD(open_pool), 0, 0, NULL, NULL, "(none)"},
    {"enroll_key", S_TEXT, S_FIELD(enroll_key), 0, 0, NULL, NULL, "(none)"},
    {"mesh_port", S_INT, S_FIELD(mesh_port), S_NODE_RANGE, NULL, NULL, NULL},
    {"beacon_port", S_INT, S_FIELD(beacon_port), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"interface", S_OWN, S_FIELD(interface), 0, 0, s_parse_interface, NULL,
     "(every usable interface)"},
    {"bind", S_OWN, S_FIELD(mesh_bind), 0, 0, s_parse_bind, NULL,
     "* (every address)"},
    {"advertise", S_OWN, S_FIELD(advertise_host), 0, 0, s_parse_advertise,
     s_show_advertise, "(none)"},
    {"peer", S_NONE, 0, 0, 0, NULL, NULL, NULL},
    {"no_beacon", S_BOOL, S_FIELD(no_beacon), 0, 0, NULL, NULL, NULL},
    {"lease_ttl_ms", S_INT, S_FIELD(lease_ttl_ms), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"heartbeat_ms", S_INT, S_FIELD(heartbeat_ms), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"settle_ms", S_OWN, S_FIELD(settle_ms), 0, INT_MAX, s_parse_settle, NULL,
     "auto"},
    {"beacon_interval_ms", S_INT, S_FIELD(beacon_interval_ms), S_NODE_RANGE,
     NULL, NULL, NULL},
    {"antientropy_ms", S_INT, S_FIELD(antientropy_ms), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"max_pause_s", S_INT, S_FIELD(max_pause_s), S_NODE_RANGE, NULL, NULL,
     NULL},
    {"max_tasks_per_sweep", S_INT64, S_FIELD(max_tasks_per_sweep), S_NODE_RANGE,
     NULL, NULL, NULL},
    {"max_dataset_bytes", S_INT64, S_FIELD(max_dataset_bytes), S_NODE_RANGE,
     NULL, NULL, NULL},
    {"reevaluate_fraction", S_FRACTION, S_FIELD(reevaluate_fraction), 0, 0,
     NULL, NULL, NULL},
    {"reeval_timeout_s", S_INT, S_FIELD(reeval_timeout_s), S_NODE_RANGE, NULL,
     NULL, NULL},
    {"keep_retention_s", S_INT, S_FIELD(keep_retention_s), S_NODE_RANGE, NULL,
     NULL, NULL},
    {"dashboard_dir", S_TEXT, S_FIELD(dashboard_dir), 0, 0, NULL, NULL,
     "(none)"},
};
#define S_N_ROWS (sizeof s_table / sizeof s_table[0])

//  One option's value as text, with where it came from.
typedef struct {
    char *value;   // owned; NULL when not set
    bool from_cli; // set on the command line
    int line;      // its line in the config file, 0 when not from it
} s_value_t;

struct ms_daemon_config {
    ms_daemon_config_action_t action;
    s_value_t values[S_N_ROWS];     // by row of s_table
    int file_lines[S_N_ROWS];       // a key's line in the file (set twice?)
    char *peers[MS_PEERS_CONF_MAX]; // static peers (owned)
    int n_peers;                    // entries in peers
    int n_primary;                  // of them from the command line or file
    bool peers_from_cli;            // the command line gave peers
    char advertise_host[MS_DISCOVERY_HOST_MAX]; // --advertise's HOST
    char *error;                                // where s_fail writes
    size_t error_n;                             // its size
};

//  What the INI reader and handler need.
typedef struct {
    ms_daemon_config_t *self; // the config being filled
    const char *path;         // config file path
    FILE *file;               // open config file
    int line;                 // physical line being parsed (1-based)
    bool at_line_start;       // the next read starts a new physical line
    int error_line;           // line of the first error, 0 when none
    char error[512];          // first error
} s_ini_t;

//  --------------------------------------------------------------------------
//  A row's field in opts.

static void *
s_field(const s_row_t *row, ms_node_options_t *opts)
{
    return (char *) opts + row->offset;
}

static const void *
s_cfield(const s_row_t *row, const ms_node_options_t *opts)
{
    return (const char *) opts + row->offset;
}

static size_t s_row(const char *name);

//  --------------------------------------------------------------------------
//  A bad-usage line (the command line): returns MS_ERR_INVALID.

static int s_usage(ms_daemon_config_t *self, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
s_usage(ms_daemon_config_t *self, const char *fmt, ...)
{
    char what[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(self->error, self->error_n, "%s (see meshsweepd --help)", what);
    return MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  A bad value of row i: "FILE:LINE: MSG" when it came from the config
//  file, else a usage line. Returns MS_ERR_INVALID.

static int
s_value_error(ms_daemon_config_t *self, size_t i, const char *msg)
{
    const s_value_t *v = &self->values[i];
    const char *config = self->values[s_row("config")].value;
    if (v->line > 0 && config) {
        snprintf(self->error, self->error_n, "%s:%d: %s", config, v->line, msg);
        return MS_ERR_INVALID;
    }
    return s_usage(self, "%s", msg);
}

//  --------------------------------------------------------------------------
//  Find a row by its name as the command line (from = '-') or the config
//  file (from = '_') writes it. The other separator is refused (-1;
//  *other_p set when the name would be known in the other spelling), so
//  each source has one spelling and a file cannot set one option twice
//  under two names. Returns the row's index or -1.

static int
s_find(const char *name, size_t len, char from, bool *other_p)
{
    char norm[64];
    bool other = false;
    if (other_p)
        *other_p = false;
    if (len >= sizeof norm)
        return -1;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (c == '-' || c == '_') {
            other = other || c != from;
            c = '_';
        }
        norm[i] = c;
    }
    norm[len] = 0;
    for (size_t i = 0; i < S_N_ROWS; i++)
        if (strcmp(s_table[i].name, norm) == 0) {
            if (other && other_p)
                *other_p = true;
            return other ? -1 : (int) i;
        }
    return -1;
}

//  The index of a row known to exist.
static size_t
s_row(const char *name)
{
    int i = s_find(name, strlen(name), '_', NULL);
    assert(i >= 0);
    return (size_t) i;
}

//  --------------------------------------------------------------------------
//  Set row i's text (replacing any earlier one); false when out of memory.

static bool
s_set(ms_daemon_config_t *self, size_t i, const char *value, bool from_cli,
      int line)
{
    char *copy = strdup(value);
    if (!copy)
        return false;
    free(self->values[i].value);
    self->values[i] = (s_value_t){copy, from_cli, line};
    return true;
}

//  --------------------------------------------------------------------------
//  Parse a boolean (true/false, yes/no, on/off, 1/0, any case); -1 when
//  malformed.

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
//  Parse a whole number in min..max into *v; false when malformed.

static bool
s_whole(const char *text, long long min, long long max, long long *v)
{
    char *end = NULL;
    errno = 0;
    long long x = strtoll(text, &end, 10);
    if (errno || !*text || *end || x < min || x > max)
        return false;
    *v = x;
    return true;
}

//  --------------------------------------------------------------------------
//  Add a static peer; false when there are too many or no memory. The
//  command line's peers replace the file's.

static bool
s_add_peer(ms_daemon_config_t *self, const char *value, bool from_cli)
{
    if (from_cli && !self->peers_from_cli) {
        for (int i = 0; i < self->n_peers; i++)
            free(self->peers[i]);
        self->n_peers = 0;
        self->peers_from_cli = true;
    } else if (!from_cli && self->peers_from_cli)
        return true; // the command line wins
    if (self->n_peers >= MS_PEERS_CONF_MAX)
        return false;
    self->peers[self->n_peers] = strdup(value);
    return self->peers[self->n_peers++] != NULL;
}

//  --------------------------------------------------------------------------
//  Rows' own rules.

static bool
s_parse_gpu_workers(const s_row_t *row, const char *value,
                    ms_node_options_t *opts, ms_daemon_config_t *self,
                    char *why, size_t why_n)
{
    (void) row, (void) self;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_gpu_workers_parse(value, &opts->gpu_workers, &diag) == MS_OK)
        return true;
    snprintf(why, why_n, "%s: %s", diag.where, diag.reason);
    return false;
}

static bool
s_parse_interface(const s_row_t *row, const char *value,
                  ms_node_options_t *opts, ms_daemon_config_t *self, char *why,
                  size_t why_n)
{
    (void) row;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_discovery_interface_check(value, &diag) == MS_OK) {
        opts->interface = value;
        return true;
    }
    bool file = self->values[s_row("interface")].line > 0;
    snprintf(why, why_n, "%s %s", file ? "interface:" : "--interface",
             diag.reason);
    return false;
}

//  --bind ADDR: "*", or an IPv4 address this host has (0.0.0.0 is every
//  address, as "*").
static bool
s_parse_bind(const s_row_t *row, const char *value, ms_node_options_t *opts,
             ms_daemon_config_t *self, char *why, size_t why_n)
{
    (void) row;
    bool file = self->values[s_row("bind")].line > 0;
    struct in_addr a;
    char reason[400] = "";
    if (strcmp(value, "*") == 0) {
        opts->mesh_bind = NULL;
        return true;
    }
    if (inet_pton(AF_INET, value, &a) != 1)
        snprintf(reason, sizeof reason,
                 "expected an IPv4 address of this host, or * (every "
                 "address); names and IPv6 are not taken");
    else if (a.s_addr != htonl(INADDR_ANY)) {
        struct ifaddrs *ifs = NULL;
        if (getifaddrs(&ifs) == 0) { // else cannot tell: the mesh's bind says
            char have[300] = "";
            bool found = false;
            for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
                    continue;
                struct in_addr b =
                    ((struct sockaddr_in *) i->ifa_addr)->sin_addr;
                found = b.s_addr == a.s_addr;
                char text[INET_ADDRSTRLEN];
                inet_ntop(AF_INET, &b, text, sizeof text);
                size_t len = strlen(have);
                snprintf(have + len, sizeof have - len, "%s%s", len ? ", " : "",
                         text);
            }
            freeifaddrs(ifs);
            if (!found)
                snprintf(reason, sizeof reason,
                         "no interface of this host has that address (it "
                         "has: %s)",
                         have[0] ? have : "none");
        }
    }
    if (reason[0]) {
        snprintf(why, why_n, "%s '%.64s': %s", file ? "bind:" : "--bind", value,
                 reason);
        return false;
    }
    opts->mesh_bind = value;
    return true;
}

//  --advertise HOST[:PORT]; HOST a name or an IPv4 address.
static bool
s_parse_advertise(const s_row_t *row, const char *value,
                  ms_node_options_t *opts, ms_daemon_config_t *self, char *why,
                  size_t why_n)
{
    (void) row;
    bool file = self->values[s_row("advertise")].line > 0;
    const char *colon = strchr(value, ':');
    size_t n_host = colon ? (size_t) (colon - value) : strlen(value);
    long long port = 0;
    char reason[300] = "";
    char host[MS_DISCOVERY_HOST_MAX], ep[MS_DISCOVERY_HOST_MAX + 32];
    struct in_addr a;
    if (value[0] == '[' || (colon && strchr(colon + 1, ':')))
        snprintf(reason, sizeof reason,
                 "expected HOST[:PORT] with one ':' at most (IPv6 is not "
                 "taken: the mesh and the beacons are IPv4)");
    else if (n_host == 0)
        snprintf(reason, sizeof reason, "expected HOST[:PORT] (no HOST)");
    else if (n_host >= sizeof host)
        snprintf(reason, sizeof reason, "HOST has more than %zu characters",
                 sizeof host - 1);
    else if (colon && !s_whole(colon + 1, 1, 65535, &port))
        snprintf(reason, sizeof reason,
                 "port '%.20s' is not a number in 1..65535", colon + 1);
    else {
        memcpy(host, value, n_host);
        host[n_host] = '\0';
        snprintf(ep, sizeof ep, "tcp://%s:%lld", host, port ? port : 1);
        if (!ms_wire_endpoint_valid(ep) || strcmp(host, "*") == 0)
            snprintf(reason, sizeof reason,
                     "HOST must be a name or an IPv4 address (letters, "
                     "digits, '.', '-', '_')");
        else if (inet_pton(AF_INET, host, &a) == 1 &&
                 (a.s_addr == htonl(INADDR_ANY) ||
                  a.s_addr == htonl(INADDR_BROADCAST)))
            snprintf(reason, sizeof reason,
                     "%s is not an address a peer can dial", host);
    }
    if (reason[0]) {
        snprintf(why, why_n, "%s '%.100s': %s",
                 file ? "advertise:" : "--advertise", value, reason);
        return false;
    }
    memcpy(self->advertise_host, host, n_host + 1);
    opts->advertise_host = self->advertise_host;
    opts->advertise_port = (int) port;
    return true;
}

//  settle_ms: a whole number, or auto (the default).
static bool
s_parse_settle(const s_row_t *row, const char *value, ms_node_options_t *opts,
               ms_daemon_config_t *self, char *why, size_t why_n)
{
    (void) self;
    long long v = 0;
    if (strcmp(value, "auto") == 0) {
        opts->settle_ms = MS_DEFAULT_SETTLE_MS;
        return true;
    }
    if (!s_whole(value, row->min, row->max, &v)) {
        snprintf(why, why_n, "%s: '%.100s' is not a whole number of 0 or more",
                 row->name, value);
        return false;
    }
    opts->settle_ms = (int) v;
    return true;
}

static bool
s_show_token_file(const ms_node_options_t *opts, char *buf, size_t n)
{
    if (opts->api_token_file)
        return false;
    snprintf(buf, n, "%s/api-token", opts->data_dir);
    return true;
}

static bool
s_show_advertise(const ms_node_options_t *opts, char *buf, size_t n)
{
    if (!opts->advertise_host)
        return false;
    snprintf(buf, n, "%s:%d", opts->advertise_host,
             opts->advertise_port > 0 ? opts->advertise_port : opts->mesh_port);
    return true;
}

//  --------------------------------------------------------------------------
//  Turn row i's text into its field; MS_OK or MS_ERR_INVALID (error set).

static int
s_apply(ms_daemon_config_t *self, size_t i, ms_node_options_t *opts)
{
    const s_row_t *row = &s_table[i];
    const char *value = self->values[i].value;
    char why[700] = "";
    long long v = 0;
    bool ok = true;
    switch (row->kind) {
    case S_TEXT:
        *(const char **) s_field(row, opts) = value;
        break;
    case S_PATH:
        if (!*value) {
            snprintf(why, sizeof why, "%s: empty %s", row->name,
                     strcmp(row->name, "open_pool") == 0 ? "name" : "path");
            ok = false;
        } else
            *(const char **) s_field(row, opts) = value;
        break;
    case S_BOOL: {
        int b = s_bool(value);
        if (b < 0) {
            snprintf(why, sizeof why, "%s: expected true or false", row->name);
            ok = false;
        } else
            *(bool *) s_field(row, opts) = b;
        break;
    }
    case S_INT:
    case S_INT64: {
        long long min = row->min, max = row->max;
        if (min == 0 && max == 0) // S_NODE_RANGE: ms_node_options' range
            ms_node_options_range(row->name, &min, &max);
        if (!s_whole(value, min, max, &v)) {
            if (max == INT_MAX || max == INT64_MAX)
                snprintf(why, sizeof why,
                         "%s: '%.100s' is not a whole number of %lld or more",
                         row->name, value, min);
            else
                snprintf(why, sizeof why,
                         "%s: '%.100s' is not a whole number in %lld..%lld",
                         row->name, value, min, max);
            ok = false;
        } else if (row->kind == S_INT)
            *(int *) s_field(row, opts) = (int) v;
        else
            *(int64_t *) s_field(row, opts) = (int64_t) v;
        if (ok && row->parse)
            ok = row->parse(row, value, opts, self, why, sizeof why);
        break;
    }
    case S_FRACTION: {
        char *end = NULL;
        errno = 0;
        double f = strtod(value, &end);
        if (!*value || errno || !end || *end || !(f >= 0 && f <= 1)) {
            snprintf(why, sizeof why, "%s: '%.100s' is not a number in 0..1",
                     row->name, value);
            ok = false;
        } else
            *(double *) s_field(row, opts) = f;
        break;
    }
    case S_OWN:
        ok = row->parse(row, value, opts, self, why, sizeof why);
        break;
    case S_NONE:
        break;
    }
    return ok ? MS_OK : s_value_error(self, i, why);
}

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
    ms_daemon_config_t *self = ini->self;
    ini->error_line = ini->line; // kept only when this returns 0
    if (section && *section && strcmp(section, "meshsweepd") != 0) {
        snprintf(ini->error, sizeof ini->error, "unknown section [%s]",
                 section);
        return 0;
    }
    bool dashed = false;
    int i = s_find(name, strlen(name), '_', &dashed);
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
    if (i < 0 || strcmp(s_table[i].name, "config") == 0) {
        snprintf(ini->error, sizeof ini->error, "unknown key '%s'", name);
        return 0;
    }
    bool peer = strcmp(s_table[i].name, "peer") == 0;
    int *file_line = &self->file_lines[i];
    if (*file_line > 0 && !peer) {
        snprintf(ini->error, sizeof ini->error,
                 "key '%s' is set twice (line %d and here)", name, *file_line);
        return 0;
    }
    *file_line = ini->line;
    if (peer) {
        char why[200];
        if (ms_peers_conf_check_spec(value, false, why, sizeof why) != MS_OK) {
            snprintf(ini->error, sizeof ini->error, "peer = %.200s: %s", value,
                     why);
            return 0;
        }
        if (!s_add_peer(self, value, false)) {
            snprintf(ini->error, sizeof ini->error, "too many peers");
            return 0;
        }
        ini->error_line = 0;
        return 1;
    }
    // A boolean key takes a boolean; anything else is refused here, where
    // the line is known.
    if (s_table[i].kind == S_BOOL) {
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
    if (!self->values[i].from_cli &&
        !s_set(self, (size_t) i, value, false, ini->line)) {
        snprintf(ini->error, sizeof ini->error, "out of memory");
        return 0;
    }
    ini->error_line = 0;
    return 1;
}

//  --------------------------------------------------------------------------
//  The command line into self->values (text only). MS_OK; MS_ERR_INVALID.

static int
s_parse_args(ms_daemon_config_t *self, int argc, char **argv)
{
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            self->action = MS_DAEMON_CONFIG_HELP;
            return MS_OK;
        }
        if (strcmp(arg, "--version") == 0) {
            self->action = MS_DAEMON_CONFIG_VERSION;
            return MS_OK;
        }
        if (strcmp(arg, "--check-config") == 0) {
            self->action = MS_DAEMON_CONFIG_CHECK;
            continue;
        }
        if (strncmp(arg, "--", 2) != 0)
            return s_usage(self, "unexpected argument '%.200s'", arg);
        const char *name = arg + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t) (eq - name) : strlen(name);
        bool underscored = false;
        int i = s_find(name, len, '-', &underscored);
        if (i < 0) {
            if (!underscored)
                return s_usage(self, "unknown option '%.200s'", arg);
            char fixed[64];
            snprintf(fixed, sizeof fixed, "%.*s", (int) len, name);
            for (char *c = fixed; *c; c++)
                *c = *c == '_' ? '-' : *c;
            return s_usage(self,
                           "unknown option '%.200s' (options are written with "
                           "'-': --%s)",
                           arg, fixed);
        }
        const s_row_t *row = &s_table[i];
        const char *value = NULL;
        if (strcmp(row->name, "open_pool") == 0) {
            // --open-pool or --open-pool=NAME (never a separate word)
            if (eq && !eq[1])
                return s_usage(self, "--open-pool=NAME: empty name");
            value = eq ? eq + 1 : "default";
        } else if (row->kind == S_BOOL) {
            // --flag, or --flag=true|false (so the command line can turn
            // off what the config file turns on)
            if (eq && s_bool(eq + 1) < 0) {
                char dashed[64];
                snprintf(dashed, sizeof dashed, "%s", row->name);
                for (char *c = dashed; *c; c++)
                    *c = *c == '_' ? '-' : *c;
                return s_usage(self,
                               "--%s=%.100s: the value is true or false (or "
                               "none)",
                               dashed, eq + 1);
            }
            value = eq ? eq + 1 : "true";
        } else {
            value = eq ? eq + 1 : (a + 1 < argc ? argv[++a] : NULL);
            if (!value)
                return s_usage(self, "%s needs a value", arg);
        }
        if (strcmp(row->name, "peer") == 0) {
            char why[200];
            if (ms_peers_conf_check_spec(value, false, why, sizeof why) !=
                MS_OK)
                return s_usage(self, "--peer '%.200s': %s", value, why);
            if (!s_add_peer(self, value, true))
                return s_usage(self, "--peer: too many peers");
            continue;
        }
        if (!s_set(self, (size_t) i, value, true, 0))
            return MS_ERR_NOMEM;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The config file (--config) into self->values. MS_OK; MS_ERR_INVALID.

static int
s_parse_file(ms_daemon_config_t *self, const char *path)
{
    s_ini_t ini = {.self = self, .path = path, .at_line_start = true};
    ini.file = fopen(path, "r");
    if (!ini.file) {
        snprintf(self->error, self->error_n, "%s: cannot read: %s", path,
                 strerror(errno));
        return MS_ERR_INVALID;
    }
    int line = ini_parse_stream(s_ini_read, &ini, s_ini_key, &ini);
    fclose(ini.file);
    if (line < 0) {
        snprintf(self->error, self->error_n, "%s: cannot read: out of memory",
                 path);
        return MS_ERR_INVALID;
    }
    if (ini.error_line || line > 0) {
        snprintf(self->error, self->error_n, "%s:%d: %s", path,
                 ini.error_line ? ini.error_line : line,
                 ini.error[0] ? ini.error : "syntax error");
        return MS_ERR_INVALID;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  DATA_DIR/identity/peers.conf: its peers after the primary ones (those
//  of the command line or the config file), duplicates dropped.

static int
s_add_peers_conf(ms_daemon_config_t *self, const char *data_dir)
{
    char **conf = NULL;
    size_t n = 0;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    self->n_primary = self->n_peers;
    int rc = ms_peers_conf_load(data_dir, &conf, &n, &diag);
    if (rc == MS_ERR_NOTFOUND)
        return MS_OK;
    if (rc != MS_OK) {
        ms_diag_format(&diag, self->error, self->error_n);
        return rc == MS_ERR_NOMEM ? rc : MS_ERR_INVALID;
    }
    rc = MS_OK;
    for (size_t i = 0; i < n && rc == MS_OK; i++) {
        bool dup = false;
        for (int j = 0; j < self->n_peers && !dup; j++)
            dup = strcmp(self->peers[j], conf[i]) == 0;
        if (dup)
            continue;
        if (self->n_peers >= MS_PEERS_CONF_MAX)
            rc = s_usage(self, "peers.conf: too many peers");
        else {
            self->peers[self->n_peers++] = conf[i];
            conf[i] = NULL; // self->peers owns it now
        }
    }
    ms_peers_conf_free(&conf, n);
    return rc;
}

//  --------------------------------------------------------------------------
//  Parse the options

int
ms_daemon_config_open(ms_daemon_config_t **self_p, int argc, char **argv,
                      ms_node_options_t *opts, char *error, size_t error_n)
{
    assert(self_p && opts && error && error_n > 0);
    *self_p = NULL;
    error[0] = '\0';
    ms_daemon_config_t *self = calloc(1, sizeof *self);
    if (!self) {
        snprintf(error, error_n, "out of memory");
        return MS_ERR_NOMEM;
    }
    self->error = error;
    self->error_n = error_n;
    int rc = s_parse_args(self, argc, argv);
    if (rc == MS_OK && (self->action == MS_DAEMON_CONFIG_HELP ||
                        self->action == MS_DAEMON_CONFIG_VERSION)) {
        *self_p = self;
        return MS_OK;
    }
    const char *config = self->values[s_row("config")].value;
    if (rc == MS_OK && config)
        rc = s_parse_file(self, config);
    for (size_t i = 0; rc == MS_OK && i < S_N_ROWS; i++)
        if (self->values[i].value)
            rc = s_apply(self, i, opts);
    if (rc == MS_OK && !opts->data_dir)
        rc = s_usage(self, "--data-dir DIR is required");
    if (rc == MS_OK)
        rc = s_add_peers_conf(self, opts->data_dir);
    if (rc == MS_OK) {
        opts->peers = (const char *const *) self->peers;
        opts->n_peers = self->n_peers;
        // The checks ms_node_open makes first, here so that a bad value
        // from the config file names its line.
        ms_diag_t diag;
        ms_diag_clear(&diag);
        if (ms_node_options_check(opts, &diag) != MS_OK) {
            char text[1100];
            ms_diag_format(&diag, text, sizeof text);
            int bad = s_find(diag.where, strlen(diag.where), '_', NULL);
            rc = bad >= 0 ? s_value_error(self, (size_t) bad, text)
                          : s_usage(self, "%s", text);
        }
    }
    if (rc != MS_OK) {
        if (rc == MS_ERR_NOMEM && !error[0])
            snprintf(error, error_n, "out of memory");
        ms_daemon_config_destroy(&self);
        return rc;
    }
    *self_p = self;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  What the command line asked for

ms_daemon_config_action_t
ms_daemon_config_action(const ms_daemon_config_t *self)
{
    assert(self);
    return self->action;
}

//  --------------------------------------------------------------------------
//  The effective value of row r in opts as text.

static void
s_effective(const s_row_t *r, const s_value_t *v, const ms_node_options_t *opts,
            char *buf, size_t n)
{
    if (r->show && r->show(opts, buf, n))
        return;
    switch (r->kind) {
    case S_TEXT:
    case S_PATH:
    case S_OWN:
        if (r->offset == S_FIELD(gpu_workers) ||
            r->offset == S_FIELD(settle_ms)) {
            int x = *(const int *) s_cfield(r, opts);
            if (x < 0)
                snprintf(buf, n, "%s", r->unset);
            else
                snprintf(buf, n, "%d", x);
        } else {
            const char *text = *(const char *const *) s_cfield(r, opts);
            snprintf(buf, n, "%s",
                     text ? text : (r->unset ? r->unset : "(none)"));
        }
        break;
    case S_BOOL:
        snprintf(buf, n, "%s",
                 *(const bool *) s_cfield(r, opts) ? "true" : "false");
        break;
    case S_INT:
        snprintf(buf, n, "%d", *(const int *) s_cfield(r, opts));
        break;
    case S_INT64:
        snprintf(buf, n, "%lld",
                 (long long) *(const int64_t *) s_cfield(r, opts));
        break;
    case S_FRACTION:
        snprintf(buf, n, "%g", *(const double *) s_cfield(r, opts));
        break;
    case S_NONE:
        snprintf(buf, n, "%s", v->value ? v->value : "(default)");
        break;
    }
}

//  --------------------------------------------------------------------------
//  Print the effective settings

void
ms_daemon_config_print(const ms_daemon_config_t *self,
                       const ms_node_options_t *opts, FILE *out)
{
    assert(self && opts && out);
    const char *config = self->values[s_row("config")].value;
    fprintf(out,
            "# meshsweepd %s: effective settings (the command line wins "
            "over %s, which wins over the defaults)\n",
            MESHSWEEP_VERSION, config ? config : "no config file");
    for (size_t i = 0; i < S_N_ROWS; i++) {
        const s_row_t *r = &s_table[i];
        const s_value_t *v = &self->values[i];
        if (r->kind == S_NONE)
            continue; // config, peer
        char value[PATH_MAX + 64], from[PATH_MAX + 32];
        s_effective(r, v, opts, value, sizeof value);
        if (v->from_cli)
            snprintf(from, sizeof from, "command line");
        else if (v->line > 0 && config)
            snprintf(from, sizeof from, "%s:%d", config, v->line);
        else
            snprintf(from, sizeof from, "default");
        fprintf(out, "%-20s = %-28s # %s\n", r->name, value, from);
    }
    for (int i = 0; i < opts->n_peers; i++) {
        char from[PATH_MAX + 32];
        if (i >= self->n_primary)
            snprintf(from, sizeof from, "%s/identity/peers.conf",
                     opts->data_dir);
        else
            snprintf(from, sizeof from, "%s",
                     self->peers_from_cli ? "command line"
                                          : (config ? config : "?"));
        fprintf(out, "%-20s = %s # %s\n", "peer", opts->peers[i], from);
    }
    if (opts->n_peers == 0)
        fprintf(out, "# no static peer\n");
}

//  --------------------------------------------------------------------------
//  Free

void
ms_daemon_config_destroy(ms_daemon_config_t **self_p)
{
    assert(self_p);
    ms_daemon_config_t *self = *self_p;
    if (!self)
        return;
    for (size_t i = 0; i < S_N_ROWS; i++)
        free(self->values[i].value);
    for (int i = 0; i < self->n_peers; i++)
        free(self->peers[i]);
    free(self);
    *self_p = NULL;
}
