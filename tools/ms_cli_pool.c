/*  =========================================================================
    ms_cli_pool - meshsweep cancel | pause | resume | priority | peers: a
    sweep's life cycle for the whole pool, and the pool as a node sees it

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Thin clients of POST /api/v1/sweeps/{id}/control and GET /api/v1/peers
    (DESIGN.md "Programs", "HTTP API"). The node stores a sweep-control
    record that gossip carries to every peer, so asking any node is enough.
*/
#include "ms_cli.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Help for cancel/pause/resume/priority.

static void
s_control_usage(FILE *out, const char *cmd)
{
    bool prio = strcmp(cmd, "priority") == 0;
    fprintf(out,
            "usage: meshsweep %s SWEEP%s [--node URL] [--json]\n"
            "\n"
            "%s, for the whole pool (a sweep-control record every node\n"
            "receives). SWEEP: 64 hex characters or a unique prefix of 12 "
            "or more.\n"
            "\n"
            "  --node URL     node API (default $MESHSWEEP_NODE or %s)\n"
            "  --token T      API bearer token (default $MESHSWEEP_TOKEN)\n"
            "  --token-file F the token from file F ($MESHSWEEP_TOKEN_FILE)\n"
            "  --json         print the node's answer as JSON\n",
            cmd, prio ? " N" : "",
            !strcmp(cmd, "cancel")  ? "Cancel a sweep: pending tasks are "
                                      "cancelled, running ones stopped"
            : !strcmp(cmd, "pause") ? "Pause a sweep: no new task starts"
            : !strcmp(cmd, "resume")
                ? "Resume a paused sweep"
                : "Set a sweep's priority (higher is served first; "
                  "default 0)",
            MS_CLI_DEFAULT_NODE);
}

//  --------------------------------------------------------------------------
//  meshsweep cancel|pause|resume SWEEP, meshsweep priority SWEEP N

int
ms_cli_control_main(int argc, char **argv)
{
    const char *cmd = argv[0];
    if (ms_cli_wants_help(argc, argv))
        return s_control_usage(stdout, cmd), MS_CLI_EXIT_OK;
    bool prio = strcmp(cmd, "priority") == 0;
    const char *sweep = NULL, *node_opt = NULL, *prio_text = NULL;
    bool json_out = false;
    for (int i = 1; i < argc; i++) {
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_opt, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else if (argv[i][0] == '-' && argv[i][1] &&
                 !(prio && sweep && !prio_text &&
                   isdigit((unsigned char) argv[i][1])))
            return ms_cli_usage_error(argv[i], "unknown option of %s", cmd);
        else if (!sweep)
            sweep = argv[i];
        else if (prio && !prio_text)
            prio_text = argv[i];
        else
            return ms_cli_usage_error(argv[i], "unexpected argument");
    }
    if (!sweep)
        return s_control_usage(stderr, cmd),
               ms_cli_usage_error(cmd, "missing SWEEP");
    int code = ms_cli_check_sweep_id(sweep);
    if (code != MS_CLI_EXIT_OK)
        return code;
    long priority = 0;
    if (prio) {
        if (!prio_text)
            return ms_cli_usage_error(cmd, "missing the priority N");
        if (ms_cli_parse_int("priority", prio_text, -1000000, 1000000,
                             &priority) != MS_OK)
            return MS_CLI_EXIT_USAGE;
    }
    json_t *req = json_pack("{s:s}", "action", cmd);
    if (req && prio)
        json_object_set_new(req, "priority", json_integer(priority));
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body)
        return ms_cli_failure(cmd, "out of memory");
    const char *node = ms_cli_node_url(node_opt);
    char path[200];
    snprintf(path, sizeof path, "/api/v1/sweeps/%s/control", sweep);
    json_t *doc = NULL;
    code = ms_cli_api_json("POST", node, path, body, sweep, &doc);
    free(body);
    if (code != MS_CLI_EXIT_OK)
        return code;
    if (json_out)
        ms_cli_json_print(stdout, doc);
    else {
        const char *id = json_string_value(json_object_get(doc, "sweep_id"));
        const char *state = json_string_value(json_object_get(doc, "state"));
        printf("sweep %.12s: %s%s%s", id ? id : sweep, prio ? "priority " : "",
               prio ? prio_text : (state ? state : "done"), "\n");
    }
    json_decref(doc);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  Help for peers.

static void
s_peers_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep peers [--node URL] [--json]\n"
            "\n"
            "The pool as a node sees it, as GET /api/v1/peers gives it: each\n"
            "peer's node id (12 hex), state of its link (alive, suspect,\n"
            "dead), standing (revoked by the pool authority, quarantined by\n"
            "this node's verdicts, or ok), incarnation (16 hex: a new one\n"
            "each time the peer restarts), operator and address.\n"
            "\n"
            "  --node URL     node API (default $MESHSWEEP_NODE or %s)\n"
            "  --token T      API bearer token (default $MESHSWEEP_TOKEN)\n"
            "  --token-file F the token from file F ($MESHSWEEP_TOKEN_FILE)\n"
            "  --json         print the node's answer as JSON\n",
            MS_CLI_DEFAULT_NODE);
}

//  --------------------------------------------------------------------------
//  A listing command (peers, datasets): connection options and --json,
//  GET PATH, then FORMAT of the answer's KEY member (the whole answer when
//  KEY is NULL), or the answer itself with --json.

static int
s_list_main(int argc, char **argv, const char *name, void (*usage)(FILE *),
            const char *path, const char *key, char *(*format)(const json_t *) )
{
    if (ms_cli_wants_help(argc, argv))
        return usage(stdout), MS_CLI_EXIT_OK;
    const char *node_opt = NULL;
    bool json_out = false;
    for (int i = 1; i < argc; i++) {
        int rc_arg = MS_CLI_EXIT_OK;
        if (ms_cli_connection_arg(argc, argv, &i, &node_opt, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (strcmp(argv[i], "--json") == 0)
            json_out = true;
        else
            return ms_cli_usage_error(argv[i], "unknown argument of %s", name);
    }
    const char *node = ms_cli_node_url(node_opt);
    json_t *doc = NULL;
    int code = ms_cli_api_json("GET", node, path, NULL, name, &doc);
    if (code != MS_CLI_EXIT_OK)
        return code;
    if (json_out) {
        ms_cli_json_print(stdout, doc);
        json_decref(doc);
        return MS_CLI_EXIT_OK;
    }
    char *table = format(key ? json_object_get(doc, key) : doc);
    json_decref(doc);
    if (!table) {
        fprintf(stderr, "meshsweep: %s: out of memory\n", name);
        return MS_CLI_EXIT_FAILURE;
    }
    fputs(table, stdout);
    free(table);
    return MS_CLI_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  meshsweep peers

int
ms_cli_peers_main(int argc, char **argv)
{
    return s_list_main(argc, argv, "peers", s_peers_usage, "/api/v1/peers",
                       NULL, ms_cli_format_peers);
}

//  --------------------------------------------------------------------------
//  Help for datasets.

static void
s_datasets_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep datasets [--node URL] [--json]\n"
            "\n"
            "The datasets a node knows, as GET /api/v1/datasets gives them:\n"
            "each dataset record it holds (a built-in set or a user's files,\n"
            "by content hash), with the size of its files, whether every file\n"
            "is held on that node, and how many sweeps use it; then each\n"
            "built-in set whose files are on that machine but that no sweep\n"
            "has used yet (hash \"-\": not hashed for a listing).\n"
            "\n"
            "  --node URL     node API (default $MESHSWEEP_NODE or %s)\n"
            "  --token T      API bearer token (default $MESHSWEEP_TOKEN)\n"
            "  --token-file F the token from file F ($MESHSWEEP_TOKEN_FILE)\n"
            "  --json         print the node's answer as JSON\n",
            MS_CLI_DEFAULT_NODE);
}

//  --------------------------------------------------------------------------
//  meshsweep datasets

int
ms_cli_datasets_main(int argc, char **argv)
{
    return s_list_main(argc, argv, "datasets", s_datasets_usage,
                       "/api/v1/datasets", "datasets", ms_cli_format_datasets);
}
