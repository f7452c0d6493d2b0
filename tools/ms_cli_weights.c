/*  =========================================================================
    ms_cli_weights - meshsweep weights: a pool's kept network of one task,
    written to a file as ONNX or as the native weights file

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    GET /api/v1/tasks/{id}/weights?format=onnx|native from the node
    (--node, $MESHSWEEP_NODE; the token rules of every API read). The
    format is --format, else the --out file's extension (.onnx: ONNX),
    else native. The node converts to ONNX from the kept file's metadata
    (proto/ms_onnx.h); the native bytes are the kept blob itself (their
    BLAKE2b-256 is the row's weights_blob). The file is written
    atomically (FILE.tmp, then renamed).
*/
#include "ms_cli.h"
#include "ms_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Help for weights.

static void
s_usage(FILE *out)
{
    fprintf(out,
            "usage: meshsweep weights TASK --out FILE [--format onnx|native] "
            "[--node URL]\n"
            "\n"
            "Write the kept network of TASK (its id, or a unique prefix of "
            "12 or more\nhex digits) from a node of the pool: ONNX "
            "(--format onnx, or FILE ending\nin .onnx) or the native "
            "weights file. The sweep must keep weights\n"
            "(keep_weights: all, best or sampled).\n");
}

//  --------------------------------------------------------------------------
//  meshsweep weights

int
ms_cli_weights_main(int argc, char **argv)
{
    if (ms_cli_wants_help(argc, argv))
        return s_usage(stdout), MS_CLI_EXIT_OK;
    const char *task = NULL, *out = NULL, *format = NULL, *node_opt = NULL;
    for (int i = 1; i < argc; i++) {
        int rc_arg = MS_CLI_EXIT_OK;
        bool missing = false;
        const char *v = NULL;
        if (ms_cli_connection_arg(argc, argv, &i, &node_opt, &rc_arg)) {
            if (rc_arg != MS_CLI_EXIT_OK)
                return rc_arg;
        } else if (ms_cli_arg_value(argc, argv, &i, "--out", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--out", "needs a file");
            out = v;
        } else if (ms_cli_arg_value(argc, argv, &i, "--format", &v, &missing)) {
            if (missing)
                return ms_cli_usage_error("--format", "needs onnx or native");
            format = v;
        } else if (argv[i][0] == '-' && argv[i][1])
            return ms_cli_usage_error(argv[i], "unknown option of weights");
        else if (!task)
            task = argv[i];
        else
            return ms_cli_usage_error(argv[i], "one task at a time");
    }
    if (!task)
        return ms_cli_usage_error("weights", "which task? (meshsweep weights "
                                             "TASK --out FILE)");
    if (!out)
        return ms_cli_usage_error("weights", "--out FILE is required");
    size_t n_task = strlen(task);
    if (n_task < 12 || n_task > 64 ||
        strspn(task, "0123456789abcdefABCDEF") != n_task)
        return ms_cli_usage_error(task, "not a task id (12 to 64 hex "
                                        "digits)");
    const char *ext = strrchr(out, '.');
    if (!format)
        format = ext && strcmp(ext, ".onnx") == 0 ? "onnx" : "native";
    if (strcmp(format, "onnx") != 0 && strcmp(format, "native") != 0)
        return ms_cli_usage_error("--format", "'%s': onnx or native", format);
    const char *node = ms_cli_node_url(node_opt);
    char path[200];
    snprintf(path, sizeof path, "/api/v1/tasks/%s/weights?format=%s", task,
             format);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    long status = 0;
    char *body = NULL;
    size_t n = 0;
    int rc = ms_cli_http_bytes("GET", node, path, NULL, NULL, 0, &status, &body,
                               &n, &diag);
    if (rc != MS_OK)
        return ms_cli_diag_exit(&diag, rc, node);
    int exit_code = MS_CLI_EXIT_OK;
    if (status < 200 || status > 299) {
        exit_code = ms_cli_http_error(status, body, task, &diag);
        ms_cli_diag_exit(&diag, MS_ERR_INVALID, task);
    } else if ((rc = ms_weights_write_bytes(out, body, n, &diag)) != MS_OK)
        exit_code = ms_cli_diag_exit(&diag, rc, out);
    else
        printf("wrote %s (%s, %zu bytes)\n", out, format, n);
    free(body);
    return exit_code;
}
