/*  =========================================================================
    meshsweep - the command-line client: train, run, submit, status, results,
    cancel, pause, resume, priority, peers, weights, predict, pool

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Dispatches to one entry point per command (tools/ms_cli.h). Exit codes
    follow DESIGN.md "Programs": 0 success, 1 failure, 2 bad usage or bad
    input with one line "meshsweep: WHERE: REASON" on stderr.
*/
#include "ms_cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  One command of the client.
typedef struct {
    const char *name;                      // as typed
    int (*main_fn)(int argc, char **argv); // entry point
    const char *summary;                   // one line for the overview
} s_command_t;

static const s_command_t s_commands[] = {
    {"train", ms_cli_train_main, "train one network here, print its metrics"},
    {"run", ms_cli_run_main,
     "run a whole sweep here (embedded node), print the table"},
    {"submit", ms_cli_submit_main, "hand a sweep to a node; print its id"},
    {"status", ms_cli_status_main,
     "progress of the sweeps of a node (--watch to follow)"},
    {"results", ms_cli_results_main,
     "results of a sweep, from a node or a store (--data-dir)"},
    {"cancel", ms_cli_control_main, "cancel a sweep, for the whole pool"},
    {"pause", ms_cli_control_main, "pause a sweep, for the whole pool"},
    {"resume", ms_cli_control_main, "resume a paused sweep"},
    {"priority", ms_cli_control_main,
     "set a sweep's priority (higher is served first)"},
    {"peers", ms_cli_peers_main, "the pool as a node sees it"},
    {"datasets", ms_cli_datasets_main,
     "the datasets a node knows (built-in and uploaded)"},
    {"events", ms_cli_events_main,
     "follow a node's events (progress, results, verdicts, peers)"},
    {"weights", ms_cli_weights_main,
     "a pool's kept network of a task, as ONNX or native weights"},
    {"predict", ms_cli_predict_main,
     "evaluate a saved network on data: accuracy or predictions"},
    {"pool", ms_cli_pool_main,
     "pool authority: init|invite|join|enroll|revoke|clear|publish|show"},
};

//  --------------------------------------------------------------------------
//  Print the overview of commands.

static void
s_usage(FILE *out)
{
    fprintf(out, "usage: meshsweep [--node URL] [--token T | --token-file F] "
                 "COMMAND [OPTIONS]\n"
                 "\n"
                 "Sweeps of neural networks on a pool of ordinary machines.\n"
                 "\n"
                 "commands:\n");
    for (size_t i = 0; i < sizeof s_commands / sizeof *s_commands; i++)
        fprintf(out, "  %-8s %s\n", s_commands[i].name, s_commands[i].summary);
    fprintf(out,
            "\n"
            "Every command takes --help and --version. Exit codes: 0 "
            "success,\n1 failure, 2 bad usage or bad input.\n"
            "Node API: --node URL, or $MESHSWEEP_NODE (default %s); the\n"
            "connection options may come before the command or after it.\n",
            MS_CLI_DEFAULT_NODE);
}

//  --------------------------------------------------------------------------
//  The connection options, which may come before the command as well
//  (`meshsweep --node URL status`, as `git -C`, `docker -H` and `kubectl
//  --context` take theirs): each takes a value, as the next argument or
//  after '='.

static const char *const s_global_options[] = {"--node", "--token",
                                               "--token-file"};

//  How many arguments of argv at i are one global option (1 or 2), 0 when
//  argv[i] is none.
static int
s_global_option(int argc, char **argv, int i)
{
    for (size_t k = 0; k < sizeof s_global_options / sizeof *s_global_options;
         k++) {
        size_t n = strlen(s_global_options[k]);
        if (strncmp(argv[i], s_global_options[k], n) != 0)
            continue;
        if (argv[i][n] == '=')
            return 1;
        if (argv[i][n] == '\0')
            return i + 1 < argc ? 2 : 1; // a missing value: the command says
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Entry point: pick the command.

int
main(int argc, char **argv)
{
    //  Global options first: move them after the command's name, where
    //  every command that talks to a node reads them (one parser of them,
    //  ms_cli_connection_arg).
    int first = 1;
    while (first < argc && s_global_option(argc, argv, first))
        first += s_global_option(argc, argv, first);
    if (first > 1) {
        if (first >= argc)
            return ms_cli_usage_error(argv[1], "a connection option needs a "
                                               "command after it (try "
                                               "meshsweep --help)");
        char **moved = calloc((size_t) argc + 1, sizeof *moved);
        if (!moved)
            return MS_CLI_EXIT_FAILURE;
        int n = 0;
        moved[n++] = argv[0];
        moved[n++] = argv[first];
        for (int a = 1; a < first; a++)
            moved[n++] = argv[a];
        for (int a = first + 1; a < argc; a++)
            moved[n++] = argv[a];
        argv = moved; // lives until exit
    }
    if (argc < 2)
        return s_usage(stderr), MS_CLI_EXIT_USAGE;
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 ||
        strcmp(cmd, "help") == 0) {
        s_usage(stdout);
        return MS_CLI_EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        ms_cli_print_version();
        return MS_CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof s_commands / sizeof *s_commands; i++)
        if (strcmp(cmd, s_commands[i].name) == 0) {
            for (int a = 2; a < argc; a++) {
                if (strcmp(argv[a], "--") == 0)
                    break;
                if (strcmp(argv[a], "--version") == 0) {
                    ms_cli_print_version();
                    return MS_CLI_EXIT_OK;
                }
            }
            return s_commands[i].main_fn(argc - 1, argv + 1);
        }
    return ms_cli_usage_error(cmd, "unknown command (try meshsweep --help)");
}
