/*  =========================================================================
    ms_dashboard_test - the dashboard's files are served from inside their
    directory only: "..", encoded names, symbolic links out, NUL bytes,
    directories and absolute names are refused

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#define _DEFAULT_SOURCE // mkdtemp, symlink, setenv
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_dashboard.h"
#include "ms_test_fs.h"

//  The fixture: TMP/dash/{index.html, app.js, vendor/plotly.min.js,
//  inside -> index.html, out -> ../secret.txt, outdir -> ..,
//  abs -> /etc/hostname} and TMP/secret.txt beside it.
typedef struct {
    char tmp[64];
    char dash[128];
} s_fx_t;

static int
s_setup(void **state)
{
    s_fx_t *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    snprintf(fx->tmp, sizeof fx->tmp, "/tmp/ms-dash-test.XXXXXX");
    assert_non_null(mkdtemp(fx->tmp));
    snprintf(fx->dash, sizeof fx->dash, "%s/dash", fx->tmp);
    char p[256];
    assert_int_equal(mkdir(fx->dash, 0700), 0);
    snprintf(p, sizeof p, "%s/vendor", fx->dash);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof p, "%s/index.html", fx->dash);
    assert_int_equal(ms_tf_write(p, "<!doctype html><title>t</title>\n"), 0);
    snprintf(p, sizeof p, "%s/app.js", fx->dash);
    assert_int_equal(ms_tf_write(p, "'use strict';\n"), 0);
    snprintf(p, sizeof p, "%s/vendor/plotly.min.js", fx->dash);
    assert_int_equal(ms_tf_write(p, "var Plotly={};\n"), 0);
    snprintf(p, sizeof p, "%s/secret.txt", fx->tmp);
    assert_int_equal(ms_tf_write(p, "secret\n"), 0);
    snprintf(p, sizeof p, "%s/inside", fx->dash);
    assert_int_equal(symlink("index.html", p), 0);
    snprintf(p, sizeof p, "%s/out", fx->dash);
    assert_int_equal(symlink("../secret.txt", p), 0);
    snprintf(p, sizeof p, "%s/outdir", fx->dash);
    assert_int_equal(symlink("..", p), 0);
    snprintf(p, sizeof p, "%s/abs", fx->dash);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    *state = fx;
    return 0;
}

static int
s_teardown(void **state)
{
    s_fx_t *fx = *state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->tmp);
    assert_int_equal(system(cmd), 0);
    free(fx);
    return 0;
}

//  Open NAME (strlen) in the fixture; the status code. Closes the file.
static int
s_open(s_fx_t *fx, const char *name, ms_dashboard_file_t *file)
{
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_dashboard_open_file(fx->dash, name, strlen(name), file, &diag);
    if (rc == MS_OK) {
        assert_true(file->fd >= 0);
        close(file->fd);
    } else {
        assert_int_equal(file->fd, -1);
        assert_true(diag.reason[0] != 0);
    }
    return rc;
}

//  --------------------------------------------------------------------------
static void
test_serves_files_inside(void **state)
{
    s_fx_t *fx = *state;
    ms_dashboard_file_t f;
    assert_int_equal(s_open(fx, "index.html", &f), MS_OK);
    assert_int_equal(f.size_bytes, 32);
    assert_string_equal(f.mime, "text/html; charset=utf-8");
    assert_true(f.etag[0] == '"' && f.etag[strlen(f.etag) - 1] == '"');
    assert_true(f.mtime_s > 0);
    assert_int_equal(s_open(fx, "vendor/plotly.min.js", &f), MS_OK);
    assert_string_equal(f.mime, "text/javascript; charset=utf-8");
    // A symbolic link that stays inside is followed.
    assert_int_equal(s_open(fx, "inside", &f), MS_OK);
    assert_int_equal(f.size_bytes, 32);
}

//  --------------------------------------------------------------------------
static void
test_dot_segments_refused(void **state)
{
    s_fx_t *fx = *state;
    ms_dashboard_file_t f;
    const char *bad[] = {"../secret.txt",
                         "..",
                         "vendor/../../secret.txt",
                         "vendor/../index.html",
                         "./index.html",
                         "vendor/./plotly.min.js",
                         "vendor//plotly.min.js",
                         "index.html/",
                         "/etc/passwd",
                         "",
                         "..\\secret.txt",
                         "vendor\\..\\..\\secret.txt"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(s_open(fx, bad[i], &f), MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
//  Names arrive decoded (libmicrohttpd unescapes the URL); a name that
//  still holds %-escapes is a literal file name, never decoded twice.
static void
test_encoded_not_decoded_again(void **state)
{
    s_fx_t *fx = *state;
    ms_dashboard_file_t f;
    assert_int_equal(s_open(fx, "%2e%2e/secret.txt", &f), MS_ERR_NOTFOUND);
    assert_int_equal(s_open(fx, "..%2fsecret.txt", &f), MS_ERR_NOTFOUND);
    assert_int_equal(s_open(fx, "%2e%2e%2fsecret.txt", &f), MS_ERR_NOTFOUND);
    // the decoded forms of the same
    assert_int_equal(s_open(fx, "../secret.txt", &f), MS_ERR_INVALID);
}

//  --------------------------------------------------------------------------
static void
test_symlink_out_refused(void **state)
{
    s_fx_t *fx = *state;
    ms_dashboard_file_t f;
    assert_int_equal(s_open(fx, "out", &f), MS_ERR_NOTFOUND);
    assert_int_equal(s_open(fx, "outdir/secret.txt", &f), MS_ERR_NOTFOUND);
    assert_int_equal(s_open(fx, "abs", &f), MS_ERR_NOTFOUND);
    // and through a link to the directory itself, or its parent
    assert_int_equal(s_open(fx, "outdir/dash/index.html", &f), MS_OK);
}

//  --------------------------------------------------------------------------
static void
test_nul_refused(void **state)
{
    s_fx_t *fx = *state;
    ms_dashboard_file_t f;
    ms_diag_t diag;
    static const char name[] = "index.html\0../secret.txt";
    assert_int_equal(
        ms_dashboard_open_file(fx->dash, name, sizeof name - 1, &f, &diag),
        MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "NUL"));
    assert_int_equal(f.fd, -1);
}

//  --------------------------------------------------------------------------
static void
test_not_regular_or_missing(void **state)
{
    s_fx_t *fx = *state;
    ms_dashboard_file_t f;
    assert_int_equal(s_open(fx, "vendor", &f), MS_ERR_NOTFOUND);
    assert_int_equal(s_open(fx, "missing.js", &f), MS_ERR_NOTFOUND);
    char longname[MS_DASHBOARD_PATH_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    assert_int_equal(s_open(fx, longname, &f), MS_ERR_INVALID);
    ms_diag_t diag;
    assert_int_equal(ms_dashboard_open_file("/nonexistent/ms-dash",
                                            "index.html", 10, &f, &diag),
                     MS_ERR_IO);
    assert_int_equal(ms_dashboard_open_file(NULL, "index.html", 10, &f, &diag),
                     MS_ERR_IO);
}

//  --------------------------------------------------------------------------
static void
test_mime_table(void **state)
{
    (void) state;
    assert_string_equal(ms_dashboard_mime("a/style.css"),
                        "text/css; charset=utf-8");
    assert_string_equal(ms_dashboard_mime("x.json"), "application/json");
    assert_string_equal(ms_dashboard_mime("x.svg"), "image/svg+xml");
    assert_string_equal(ms_dashboard_mime("x.png"), "image/png");
    assert_string_equal(ms_dashboard_mime("x.exe"), "application/octet-stream");
    assert_string_equal(ms_dashboard_mime("v.1/noext"),
                        "application/octet-stream");
    assert_string_equal(ms_dashboard_mime("Makefile"),
                        "application/octet-stream");
}

//  --------------------------------------------------------------------------
static void
test_default_dir(void **state)
{
    s_fx_t *fx = *state;
    unsetenv("MESHSWEEP_DASHBOARD_DIR");
    assert_string_equal(ms_dashboard_default_dir(fx->dash, "/usr/share/x"),
                        fx->dash);
    assert_string_equal(
        ms_dashboard_default_dir("/nonexistent/ms-dash", "/usr/share/x"),
        "/usr/share/x");
    assert_string_equal(ms_dashboard_default_dir("", "/usr/share/x"),
                        "/usr/share/x");
    setenv("MESHSWEEP_DASHBOARD_DIR", "/from/env", 1);
    assert_string_equal(ms_dashboard_default_dir(fx->dash, "/usr/share/x"),
                        "/from/env");
    setenv("MESHSWEEP_DASHBOARD_DIR", "", 1);
    assert_string_equal(ms_dashboard_default_dir(fx->dash, "/usr/share/x"),
                        fx->dash);
    unsetenv("MESHSWEEP_DASHBOARD_DIR");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_serves_files_inside, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_dot_segments_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_encoded_not_decoded_again, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_symlink_out_refused, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_nul_refused, s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_not_regular_or_missing, s_setup,
                                        s_teardown),
        cmocka_unit_test(test_mime_table),
        cmocka_unit_test_setup_teardown(test_default_dir, s_setup, s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
