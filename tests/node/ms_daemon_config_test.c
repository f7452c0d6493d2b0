/*  =========================================================================
    ms_daemon_config_test - the daemon's option table (command line, INI
    file, peers.conf, errors naming their source) and the peer spec rule

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_daemon_config.h"
#include "ms_peers_conf.h"
#include "ms_test_fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define S_ID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef struct {
    char dir[64];     // a temporary data dir
    char conf[128];   // dir/meshsweepd.conf
    char error[1200]; // the last error
} s_fix_t;

static int
setup(void **state)
{
    s_fix_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ms-dcfg-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->conf, sizeof f->conf, "%s/meshsweepd.conf", f->dir);
    *state = f;
    return 0;
}

static int
teardown(void **state)
{
    s_fix_t *f = *state;
    ms_tf_rm_rf(f->dir);
    free(f);
    return 0;
}

//  Parse a NULL-terminated argument list after "meshsweepd".
static int
s_parse(s_fix_t *f, ms_daemon_config_t **cfg, ms_node_options_t *opts, ...)
{
    char *argv[32] = {"meshsweepd"};
    int argc = 1;
    va_list ap;
    va_start(ap, opts);
    const char *a;
    while ((a = va_arg(ap, const char *)) && argc < 31)
        argv[argc++] = (char *) a;
    va_end(ap);
    ms_node_options_defaults(opts);
    opts->api_bind = "127.0.0.1:5872";
    opts->data_dir = NULL;
    return ms_daemon_config_open(cfg, argc, argv, opts, f->error,
                                 sizeof f->error);
}

//  --------------------------------------------------------------------------
static void
test_peer_spec(void **state)
{
    (void) state;
    char why[300];
    assert_int_equal(
        ms_peers_conf_check_spec("tcp://10.0.0.2:5871", false, why, sizeof why),
        MS_OK);
    assert_int_equal(
        ms_peers_conf_check_spec(S_ID "@tcp://host-a:1", true, why, sizeof why),
        MS_OK);
    assert_int_equal(
        ms_peers_conf_check_spec("tcp://10.0.0.2:5871", true, why, sizeof why),
        MS_ERR_INVALID);
    assert_non_null(strstr(why, "needs the peer's node id"));
    assert_int_equal(
        ms_peers_conf_check_spec("abc@tcp://h:1", false, why, sizeof why),
        MS_ERR_INVALID);
    assert_non_null(strstr(why, "got 3 characters"));
    const char *ports[] = {"tcp://h:0", "tcp://h:65536", "tcp://h:99999",
                           "tcp://h:5x"};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(
            ms_peers_conf_check_spec(ports[i], false, why, sizeof why),
            MS_ERR_INVALID);
        assert_non_null(strstr(why, "is not a number in 1..65535"));
    }
    assert_int_equal(
        ms_peers_conf_check_spec("udp://h:1", false, why, sizeof why),
        MS_ERR_INVALID);
    assert_int_equal(
        ms_peers_conf_check_spec("tcp://:1", false, why, sizeof why),
        MS_ERR_INVALID);
    assert_non_null(strstr(why, "no HOST"));
    assert_int_equal(
        ms_peers_conf_check_spec("tcp://a b:1", false, why, sizeof why),
        MS_ERR_INVALID);
    assert_non_null(strstr(why, "HOST must be"));
}

//  --------------------------------------------------------------------------
static void
test_peers_conf_load(void **state)
{
    s_fix_t *f = *state;
    char path[256], **peers = NULL;
    size_t n = 9;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_peers_conf_load(f->dir, &peers, &n, &diag),
                     MS_ERR_NOTFOUND);
    snprintf(path, sizeof path, "%s/identity", f->dir);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/identity/peers.conf", f->dir);
    assert_int_equal(
        ms_tf_write(path, "# two\n[meshsweepd]\npeer = tcp://a:1\npeer = " S_ID
                          "@tcp://b:2\n"),
        0);
    assert_int_equal(ms_peers_conf_load(f->dir, &peers, &n, &diag), MS_OK);
    assert_int_equal(n, 2);
    assert_string_equal(peers[1], S_ID "@tcp://b:2");
    ms_peers_conf_free(&peers, n);
    assert_null(peers);
    assert_int_equal(ms_tf_write(path, "peer = tcp://a:1\nworkers = 2\n"), 0);
    assert_int_equal(ms_peers_conf_load(f->dir, &peers, &n, &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.where, "peers.conf:2"));
    assert_non_null(strstr(diag.reason, "unknown key 'workers'"));
    assert_null(peers);
}

//  --------------------------------------------------------------------------
//  The command line sets fields by kind; flags take =false; the config
//  file fills what the command line did not say.
static void
test_command_line_and_file(void **state)
{
    s_fix_t *f = *state;
    ms_daemon_config_t *cfg = NULL;
    ms_node_options_t o;
    assert_int_equal(
        ms_tf_write(f->conf,
                    "[meshsweepd]\nworkers = 3\nmesh_port = 6001\n"
                    "no_beacon = yes\nreevaluate_fraction = 0.25\n"
                    "max_tasks_per_sweep = 5000000\npeer = tcp://file:9\n"),
        0);
    assert_int_equal(s_parse(f, &cfg, &o, "--data-dir", f->dir, "--config",
                             f->conf, "--workers=2", "--no-beacon=false",
                             "--settle-ms", "auto", "--gpu-workers", "auto",
                             "--peer", "tcp://cli:10", NULL),
                     MS_OK);
    assert_int_equal(ms_daemon_config_action(cfg), MS_DAEMON_CONFIG_RUN);
    assert_string_equal(o.data_dir, f->dir);
    assert_int_equal(o.n_workers, 2);    // the command line wins
    assert_int_equal(o.mesh_port, 6001); // from the file
    assert_false(o.no_beacon);           // --no-beacon=false wins
    assert_true(o.reevaluate_fraction == 0.25);
    assert_int_equal(o.max_tasks_per_sweep, 5000000);
    assert_int_equal(o.n_peers, 1); // --peer replaces the file's
    assert_string_equal(o.peers[0], "tcp://cli:10");
    //  --check-config's listing names the sources.
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    ms_daemon_config_print(cfg, &o, out);
    fclose(out);
    assert_non_null(strstr(text, "command line"));
    char want[300];
    snprintf(want, sizeof want, "# %s:3", f->conf); // mesh_port's line
    assert_non_null(strstr(text, want));
    assert_non_null(strstr(text, "settle_ms            = auto"));
    assert_non_null(strstr(text, "gpu_workers          = auto"));
    free(text);
    ms_daemon_config_destroy(&cfg);
    assert_null(cfg);
}

//  --------------------------------------------------------------------------
//  Each error is one line that names its source.
static void
test_errors(void **state)
{
    s_fix_t *f = *state;
    ms_daemon_config_t *cfg = NULL;
    ms_node_options_t o;
    assert_int_equal(s_parse(f, &cfg, &o, "--workers", "2", NULL),
                     MS_ERR_INVALID);
    assert_null(cfg);
    assert_non_null(strstr(f->error, "--data-dir DIR is required"));
    assert_int_equal(
        s_parse(f, &cfg, &o, "--data-dir", f->dir, "--mesh_port", "1", NULL),
        MS_ERR_INVALID);
    assert_non_null(strstr(f->error, "options are written with '-': "
                                     "--mesh-port"));
    assert_int_equal(s_parse(f, &cfg, &o, "--data-dir", f->dir,
                             "--idle-cpu-pct", "101", NULL),
                     MS_ERR_INVALID);
    assert_non_null(strstr(f->error, "is not a whole number in 0..100"));
    assert_int_equal(
        s_parse(f, &cfg, &o, "--data-dir", f->dir, "--worker-nice", "25", NULL),
        MS_ERR_INVALID);
    assert_non_null(strstr(f->error, "worker_nice: 25 is above 19"));
    assert_int_equal(
        s_parse(f, &cfg, &o, "--data-dir", f->dir, "--workers", NULL),
        MS_ERR_INVALID);
    assert_non_null(strstr(f->error, "--workers needs a value"));
    //  From the file: FILE:LINE.
    assert_int_equal(
        ms_tf_write(f->conf, "workers = 1\n\nlease_ttl_ms = soon\n"), 0);
    assert_int_equal(
        s_parse(f, &cfg, &o, "--data-dir", f->dir, "--config", f->conf, NULL),
        MS_ERR_INVALID);
    char want[300];
    snprintf(want, sizeof want,
             "%s:3: lease_ttl_ms: 'soon' is not a whole number of 10 or more",
             f->conf);
    assert_string_equal(f->error, want);
    assert_int_equal(
        ms_tf_write(f->conf, "lease_ttl_ms = 1000\nheartbeat_ms = 600\n"), 0);
    assert_int_equal(
        s_parse(f, &cfg, &o, "--data-dir", f->dir, "--config", f->conf, NULL),
        MS_ERR_INVALID);
    snprintf(want, sizeof want, "%s:2: heartbeat_ms", f->conf);
    assert_non_null(strstr(f->error, want));
    assert_int_equal(ms_tf_write(f->conf, "workers = 1\nworkers = 2\n"), 0);
    assert_int_equal(
        s_parse(f, &cfg, &o, "--data-dir", f->dir, "--config", f->conf, NULL),
        MS_ERR_INVALID);
    assert_non_null(strstr(f->error, ":2: key 'workers' is set twice"));
    //  --help stops the parse before anything is checked.
    assert_int_equal(s_parse(f, &cfg, &o, "--help", "--bogus", NULL), MS_OK);
    assert_int_equal(ms_daemon_config_action(cfg), MS_DAEMON_CONFIG_HELP);
    ms_daemon_config_destroy(&cfg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peer_spec),
        cmocka_unit_test_setup_teardown(test_peers_conf_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_command_line_and_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
