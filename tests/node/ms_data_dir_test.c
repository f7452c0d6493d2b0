/*  =========================================================================
    ms_data_dir_test - a node's data dir: made when missing, its places
    named and made, one node per data dir (another process is refused
    with the holder's pid; the lock goes with the destroy)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_data_dir.h"
#include "ms_err.h"
#include "ms_test_fs.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int
s_setup(void **state)
{
    char *root = strdup("/tmp/ms_data_dir_test.XXXXXX");
    if (!root || !mkdtemp(root))
        return -1;
    *state = root;
    return 0;
}

static int
s_teardown(void **state)
{
    ms_tf_rm_rf(*state);
    free(*state);
    return 0;
}

static bool
s_is_dir(const char *path, mode_t *mode)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return false;
    if (mode)
        *mode = st.st_mode & 0777;
    return true;
}

//  The exit code of a child that opens DIR: 0 opened, 1 conflict (with
//  the holder's pid in the reason), 2 anything else.
static int
s_child_open(const char *dir, long holder)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ms_data_dir_t *dd = NULL;
        ms_diag_t diag;
        ms_diag_clear(&diag);
        int rc = ms_data_dir_open(&dd, dir, &diag);
        char want[64];
        snprintf(want, sizeof want, "pid %ld", holder);
        _exit(rc == MS_OK                                          ? 0
              : rc == MS_ERR_CONFLICT && strstr(diag.reason, want) ? 1
                                                                   : 2);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

//  --------------------------------------------------------------------------
//  A missing data dir (and its parents) is made; its places are named
//  under it and made on demand, the last part 0700.

static void
test_layout(void **state)
{
    char dir[PATH_MAX], path[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/a/b/data", (char *) *state);
    ms_data_dir_t *dd = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_data_dir_open(&dd, dir, &diag), MS_OK);
    mode_t mode = 0;
    assert_true(s_is_dir(dir, &mode));
    assert_int_equal(mode, 0700);
    assert_int_equal(ms_data_dir_path(dd, "store", path, sizeof path), MS_OK);
    char want[PATH_MAX + 16];
    snprintf(want, sizeof want, "%s/store", dir);
    assert_string_equal(path, want);
    assert_false(s_is_dir(path, NULL)); // named, not made
    assert_int_equal(
        ms_data_dir_make(dd, "blobs/tmp", path, sizeof path, &diag), MS_OK);
    assert_true(s_is_dir(path, &mode));
    assert_int_equal(mode, 0700);
    assert_int_equal(
        ms_data_dir_make(dd, "blobs/tmp", path, sizeof path, &diag), MS_OK);
    char small[8];
    assert_int_equal(ms_data_dir_path(dd, "store", small, sizeof small),
                     MS_ERR_INVALID);
    ms_data_dir_destroy(&dd);
    assert_null(dd);
    ms_data_dir_destroy(&dd); // NULL-safe
}

//  --------------------------------------------------------------------------
//  A file where a folder should be: MS_ERR_IO, with the path.

static void
test_not_a_directory(void **state)
{
    char dir[PATH_MAX], path[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/file", (char *) *state);
    FILE *fp = fopen(dir, "w");
    assert_non_null(fp);
    fclose(fp);
    ms_data_dir_t *dd = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_data_dir_open(&dd, dir, &diag), MS_ERR_IO);
    assert_null(dd);
    assert_string_equal(diag.where, dir);

    snprintf(dir, sizeof dir, "%s/data", (char *) *state);
    assert_int_equal(ms_data_dir_open(&dd, dir, &diag), MS_OK);
    snprintf(path, sizeof path, "%s/held", dir);
    fp = fopen(path, "w");
    assert_non_null(fp);
    fclose(fp);
    ms_diag_clear(&diag);
    assert_int_equal(ms_data_dir_make(dd, "held", path, sizeof path, &diag),
                     MS_ERR_IO);
    assert_non_null(strstr(diag.reason, "not a directory"));
    ms_data_dir_destroy(&dd);
}

//  --------------------------------------------------------------------------
//  One node per data dir: another process is refused while we hold it,
//  with our pid; once destroyed, it may open it.

static void
test_one_node_per_data_dir(void **state)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/data", (char *) *state);
    ms_data_dir_t *dd = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_data_dir_open(&dd, dir, &diag), MS_OK);
    assert_int_equal(s_child_open(dir, (long) getpid()), 1);
    char path[PATH_MAX + 16], text[32] = {0};
    snprintf(path, sizeof path, "%s/node.lock", dir);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    assert_non_null(fgets(text, sizeof text, fp));
    fclose(fp);
    assert_int_equal(strtol(text, NULL, 10), (long) getpid());
    ms_data_dir_destroy(&dd);
    assert_int_equal(s_child_open(dir, 0), 0);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_layout, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_not_a_directory, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_one_node_per_data_dir, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
