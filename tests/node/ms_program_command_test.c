/*  =========================================================================
    ms_program_command_test - W&B's command macros, and values written as
    Python's str() writes them (against python3 itself)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_program_command.h"
#include "ms_argv.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *
s_join(char **v)
{
    static char out[4096];
    out[0] = '\0';
    for (size_t i = 0; v && v[i]; i++) {
        strcat(out, i ? "|" : "");
        strcat(out, v[i]);
    }
    return out;
}

static char **
s_build(const char *command_json, const char *config_json, int want_rc,
        ms_diag_t *diag)
{
    json_t *command = command_json ? json_loads(command_json, 0, NULL) : NULL;
    json_t *config = json_loads(config_json, JSON_DECODE_ANY, NULL);
    assert_non_null(config);
    char **argv = NULL;
    ms_diag_clear(diag);
    assert_int_equal(ms_program_command_build(command, config, "train.py",
                                              "/usr/bin/python3",
                                              "/task/args.json", &argv, diag),
                     want_rc);
    json_decref(command);
    json_decref(config);
    return argv;
}

//  --------------------------------------------------------------------------
static void
test_default_and_macros(void **state)
{
    (void) state;
    ms_diag_t diag;
    const char *config = "{\"learning_rate\": 0.001, \"optimizer\": \"adam\","
                         " \"epochs\": 3, \"augment\": true, \"dropout\": "
                         "false, \"l2\": 1e-05}";
    char **v = s_build(NULL, config, MS_OK, &diag);
    assert_string_equal(s_join(v),
                        "/usr/bin/env|/usr/bin/python3|train.py|"
                        "--learning_rate=0.001|--optimizer=adam|--epochs=3|"
                        "--augment=True|--dropout=False|--l2=1e-05");
    ms_argv_free(&v);
    assert_null(v);
    v = s_build("[\"${env}\", \"python3\", \"${program}\", \"-b\", \"cfg\", "
                "\"${args_no_boolean_flags}\"]",
                config, MS_OK, &diag);
    assert_string_equal(s_join(v),
                        "/usr/bin/env|python3|train.py|-b|cfg|"
                        "--learning_rate=0.001|--optimizer=adam|--epochs=3|"
                        "--augment|--l2=1e-05");
    ms_argv_free(&v);
    v = s_build("[\"${interpreter}\", \"${program}\", \"${args_no_hyphens}\"]",
                "{\"a\": 1, \"b\": [1, 2.5, \"x\"], \"c\": {\"d\": null}}",
                MS_OK, &diag);
    assert_string_equal(s_join(v), "/usr/bin/python3|train.py|a=1|"
                                   "b=[1, 2.5, 'x']|c={'d': None}");
    ms_argv_free(&v);
    v = s_build("[\"${program}\", \"${args_json}\", \"${args_json_file}\"]",
                "{\"a\": 1, \"b\": \"x\"}", MS_OK, &diag);
    assert_string_equal(s_join(v),
                        "train.py|{\"a\":1,\"b\":\"x\"}|/task/args.json");
    ms_argv_free(&v);
    //  A word that only contains a macro is kept as it is (as W&B does).
    v = s_build("[\"echo\", \"x${args}\"]", "{}", MS_OK, &diag);
    assert_string_equal(s_join(v), "echo|x${args}");
    ms_argv_free(&v);
}

//  --------------------------------------------------------------------------
static void
test_errors(void **state)
{
    (void) state;
    ms_diag_t diag;
    assert_null(
        s_build("[\"${program}\", \"${argz}\"]", "{}", MS_ERR_INVALID, &diag));
    assert_string_equal(diag.where, "command[1]");
    assert_non_null(strstr(diag.reason, "unknown macro '${argz}'"));
    assert_null(s_build("[\"python3\", 7]", "{}", MS_ERR_INVALID, &diag));
    assert_string_equal(diag.where, "command[1]");
    assert_null(s_build("[]", "{}", MS_ERR_INVALID, &diag));
    assert_null(s_build("[\"${args}\"]", "{}", MS_ERR_INVALID, &diag));
    assert_non_null(strstr(diag.reason, "no word"));
    assert_null(s_build(NULL, "[1]", MS_ERR_INVALID, &diag));
}

//  --------------------------------------------------------------------------
//  2,000 doubles over 40 decades, and the edge cases, written by us and by
//  Python's str(): the same text.
static void
test_floats_as_python_writes_them(void **state)
{
    (void) state;
    if (system("/usr/bin/python3 -c 'pass' 2>/dev/null") != 0)
        skip();
    char in_path[] = "/tmp/ms-pycmd-XXXXXX";
    int fd = mkstemp(in_path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    double edge[] = {0.0,
                     -0.0,
                     1.0,
                     100.0,
                     0.1,
                     1e-4,
                     1e-5,
                     1e15,
                     1e16,
                     123456789012345678.0,
                     0.30000000000000004,
                     5e-324,
                     1.7976931348623157e308,
                     -2.5,
                     1.0 / 3};
    size_t n_edge = sizeof edge / sizeof edge[0];
    double *all = malloc((n_edge + 2000) * sizeof *all);
    size_t n = 0;
    for (size_t i = 0; i < n_edge; i++)
        all[n++] = edge[i];
    srand(7);
    for (int i = 0; i < 2000; i++) {
        double m = (double) rand() / RAND_MAX;
        int e = rand() % 40 - 20;
        double v = m * pow(10, e) * (rand() % 2 ? 1 : -1);
        if (rand() % 4 == 0)
            v = round(v * 1000) / 1000; // short decimals, as specs write
        all[n++] = v;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%a\n", all[i]);
    fclose(f);
    char cmd[300];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c 'import sys\n"
             "for l in open(sys.argv[1]): print(str(float.fromhex(l)))' %s",
             in_path);
    FILE *py = popen(cmd, "r");
    assert_non_null(py);
    char line[128];
    size_t i = 0;
    int differ = 0;
    while (fgets(line, sizeof line, py) && i < n) {
        line[strcspn(line, "\n")] = '\0';
        json_t *v = json_real(all[i]);
        char *ours = ms_program_command_py_str(v);
        if (strcmp(ours, line) != 0 && differ++ < 5)
            print_message("%a: ours %s, python %s\n", all[i], ours, line);
        free(ours);
        json_decref(v);
        i++;
    }
    pclose(py);
    unlink(in_path);
    free(all);
    assert_int_equal(i, n);
    assert_int_equal(differ, 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_and_macros),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_floats_as_python_writes_them),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
