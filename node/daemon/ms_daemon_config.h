/*  =========================================================================
    ms_daemon_config - the daemon's options: one table for the command
    line and the INI config file

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Every option of meshsweepd is one row of a table (ms_daemon_config.c):
    its name, the field of ms_node_options_t it sets, its kind (flag,
    whole number in a range, fraction, path, ...) and, where the kind is
    not enough, its own check. A whole number's range is the one
    ms_node_options_range gives (written once, in ms_node_options, which
    ms_node_options_check applies to every caller's options), else the
    row's own (settle_ms; worker_nice is parsed as a whole number and its
    range left to ms_node_options_check, which says why 19 is its top). The same
   row parses `--mesh-port 6000`,
    `--mesh-port=6000` and `mesh_port = 6000` in the config file, names the
    file's line in an error, and prints the effective value for
    --check-config, so an option cannot mean one thing on the command line
    and another in the file, or be checked in one and not the other.

    Sources, in the order they win: the command line, the INI file named by
    --config (keys are the long options with '-' written '_', in no section
    or in [meshsweepd]; an unknown key, a key set twice or a dash-form key
    is an error naming FILE:LINE), the defaults the caller put in the
    options. Static peers: --peer (repeatable) replaces the file's `peer`
    lines; the peers of DATA_DIR/identity/peers.conf come after them.

    meshsweepd and the trust tests' ms_dishonest_node both parse their
    options with this class, so the dishonest member takes every option an
    honest node takes, with the same meaning.

    Thread rule: one thread (main, before the node opens).
    =========================================================================
*/
#ifndef MS_DAEMON_CONFIG_H
#define MS_DAEMON_CONFIG_H

#include "ms_node.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ms_daemon_config ms_daemon_config_t;

//  What the command line asks for beyond running the node.
typedef enum {
    MS_DAEMON_CONFIG_RUN,     // start the node
    MS_DAEMON_CONFIG_CHECK,   // --check-config: print the settings, exit
    MS_DAEMON_CONFIG_HELP,    // --help or -h
    MS_DAEMON_CONFIG_VERSION, // --version
} ms_daemon_config_action_t;

//  Parse argv[1..argc) and the config file it names into *opts, which
//  holds the caller's defaults (ms_node_options_defaults, and an api_bind)
//  on entry; only the options given change. Then read
//  DATA_DIR/identity/peers.conf and run ms_node_options_check, so that a
//  bad value of the file names its line. --help and --version stop the
//  parse at once (*opts then untouched past them). The strings *opts
//  points to belong to *self_p: keep it until the node is destroyed.
//  Returns MS_OK; MS_ERR_INVALID with one line in error (error_n bytes:
//  "FILE:LINE: what" for the file, else "what (see meshsweepd --help)"
//  style text without the program name); MS_ERR_NOMEM. On failure
//  *self_p is NULL.
int ms_daemon_config_open(ms_daemon_config_t **self_p, int argc, char **argv,
                          ms_node_options_t *opts, char *error, size_t error_n);

//  What the command line asked for.
ms_daemon_config_action_t
ms_daemon_config_action(const ms_daemon_config_t *self);

//  Print every option with its effective value in opts and where it came
//  from (the command line, FILE:LINE, or the default), then the static
//  peers with theirs (--check-config).
void ms_daemon_config_print(const ms_daemon_config_t *self,
                            const ms_node_options_t *opts, FILE *out);

//  Free the config and the strings the options borrowed; NULL-safe;
//  nulls *self_p.
void ms_daemon_config_destroy(ms_daemon_config_t **self_p);

#ifdef __cplusplus
}
#endif

#endif
