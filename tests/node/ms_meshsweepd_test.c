/*  =========================================================================
    ms_meshsweepd_test - the daemon program: --version, bad usage (exit 2,
    one line), config file (unknown key or bad boolean names FILE:LINE;
    the command line wins), start-up lines (none twice), SIGTERM gives
    exit 0, a malformed --peer refused at start, an unreachable one
    warned about once; the backend: an --backend auto without a usable
    GPU says so once and why, /api/v1/status reports the split, and
    gpu_workers values are checked

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Runs the built binary ($MESHSWEEP_BUILD_DIR/node/meshsweepd, set by
    ctest); skipped (77) when it is not there.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char s_bin[512];
static char s_root[256];

//  --------------------------------------------------------------------------
//  Run the daemon with args (NULL-terminated) to completion; stdout and
//  stderr go to files in the temp dir. Returns the exit code.

static int
s_run(char *const args[], char *out, size_t out_n, char *err, size_t err_n)
{
    char out_path[400], err_path[400];
    snprintf(out_path, sizeof out_path, "%s/out.txt", s_root);
    snprintf(err_path, sizeof err_path, "%s/err.txt", s_root);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
            _exit(99);
        execv(s_bin, args);
        _exit(98);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    FILE *f = fopen(out_path, "r");
    size_t n = f ? fread(out, 1, out_n - 1, f) : 0;
    out[n] = 0;
    if (f)
        fclose(f);
    f = fopen(err_path, "r");
    n = f ? fread(err, 1, err_n - 1, f) : 0;
    err[n] = 0;
    if (f)
        fclose(f);
    return WEXITSTATUS(status);
}

//  --------------------------------------------------------------------------
//  Count the lines of a text.

static int
s_lines(const char *text)
{
    int n = 0;
    for (; *text; text++)
        n += *text == '\n';
    return n;
}

//  --------------------------------------------------------------------------
//  --version and --help exit 0; bad usage exits 2 with one line.

static void
test_usage_and_exit_codes(void **state)
{
    (void) state;
    char out[4096], err[4096];
    char *version[] = {s_bin, "--version", NULL};
    assert_int_equal(s_run(version, out, sizeof out, err, sizeof err), 0);
    assert_true(strncmp(out, "meshsweepd ", 11) == 0);
    char *help[] = {s_bin, "--help", NULL};
    assert_int_equal(s_run(help, out, sizeof out, err, sizeof err), 0);
    assert_non_null(strstr(out, "--data-dir"));

    char *no_dir[] = {s_bin, "--workers", "1", NULL};
    assert_int_equal(s_run(no_dir, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    assert_non_null(strstr(err, "--data-dir"));

    char *unknown[] = {s_bin, "--data-dir", s_root, "--mesh-size", "5", NULL};
    assert_int_equal(s_run(unknown, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    assert_non_null(strstr(err, "--mesh-size"));

    // The pool's options: a heartbeat of TTL/2 or more is refused.
    char *hb[] = {s_bin,         "--data-dir",
                  s_root,        "--lease-ttl-ms",
                  "1000",        "--heartbeat-ms",
                  "500",         "--api",
                  "127.0.0.1:0", NULL};
    assert_int_equal(s_run(hb, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    assert_non_null(strstr(err, "heartbeat_ms"));
    char *peer[] = {s_bin,       "--data-dir", s_root,        "--peer",
                    "udp://x:1", "--api",      "127.0.0.1:0", NULL};
    assert_int_equal(s_run(peer, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "udp://x:1"));
    char *port[] = {s_bin, "--data-dir", s_root, "--mesh-port", "99999", NULL};
    assert_int_equal(s_run(port, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "mesh_port"));

    char *bad_n[] = {s_bin, "--data-dir", s_root, "--workers", "many", NULL};
    assert_int_equal(s_run(bad_n, out, sizeof out, err, sizeof err), 2);
    assert_non_null(strstr(err, "many"));

    char *bad_backend[] = {s_bin, "--data-dir", s_root,        "--backend",
                           "tpu", "--api",      "127.0.0.1:0", NULL};
    assert_int_equal(s_run(bad_backend, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    assert_non_null(strstr(err, "tpu"));
}

//  --------------------------------------------------------------------------
//  An unknown key in the config file is refused with FILE:LINE.

static void
test_config_unknown_key_names_line(void **state)
{
    (void) state;
    char ini[400];
    snprintf(ini, sizeof ini, "%s/bad.ini", s_root);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "# meshsweepd\nworkers = 1\nmesh_size = 5871\n");
    fclose(f);
    char out[4096], err[4096];
    char *args[] = {s_bin, "--data-dir", s_root, "--config", ini, NULL};
    assert_int_equal(s_run(args, out, sizeof out, err, sizeof err), 2);
    char want[600];
    snprintf(want, sizeof want, "%s:3: unknown key 'mesh_size'", ini);
    if (!strstr(err, want))
        fail_msg("stderr '%s' lacks '%s'", err, want);
    assert_int_equal(s_lines(err), 1);
}

//  A bad value in the config file names FILE:LINE and the key; an unknown
//  section names the line of its header (also with no key under it).

static void
test_config_value_and_section_lines(void **state)
{
    (void) state;
    char ini[400];
    snprintf(ini, sizeof ini, "%s/c.ini", s_root);
    const char *cases[][2] = {
        {"[meshsweepd]\nreevaluate_fraction = 2\n",
         ":2: reevaluate_fraction: '2' is not a number in 0..1"},
        {"# c\nworkers = 1\n\nmesh_port = 99999\n",
         ":4: mesh_port: '99999' is not a whole number in 0..65535"},
        {"[other]\nworkers = 1\n", ":1: unknown section [other]"},
        {"workers = 1\n  [empty]\n", ":2: unknown section [empty]"},
        {"workers = 1\nmesh_size = 5\n", ":2: unknown key 'mesh_size'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        FILE *f = fopen(ini, "w");
        assert_non_null(f);
        fputs(cases[i][0], f);
        fclose(f);
        char out[4096], err[4096];
        char *args[] = {s_bin,   "--data-dir",  s_root,        "--config", ini,
                        "--api", "127.0.0.1:0", "--no-beacon", NULL};
        assert_int_equal(s_run(args, out, sizeof out, err, sizeof err), 2);
        char want[600];
        snprintf(want, sizeof want, "%s%s", ini, cases[i][1]);
        if (!strstr(err, want))
            fail_msg("case %zu: stderr '%s' lacks '%s'", i, err, want);
        assert_int_equal(s_lines(err), 1);
    }
    // The same bad value on the command line names no file.
    char out[4096], err[4096];
    char *cli[] = {s_bin, "--data-dir", s_root, "--reevaluate-fraction",
                   "2",   NULL};
    assert_int_equal(s_run(cli, out, sizeof out, err, sizeof err), 2);
    assert_null(strstr(err, ini));
    assert_non_null(strstr(err, "reevaluate_fraction: '2'"));
}

//  --------------------------------------------------------------------------
//  The daemon starts from a config file (command line wins), prints its
//  node id and API address, and exits 0 on SIGTERM.

static void
test_config_start_and_sigterm(void **state)
{
    (void) state;
    char ini[400], dir[400], out_path[400];
    snprintf(ini, sizeof ini, "%s/good.ini", s_root);
    snprintf(dir, sizeof dir, "%s/data", s_root);
    snprintf(out_path, sizeof out_path, "%s/daemon.txt", s_root);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f,
            "[meshsweepd]\ndata_dir = %s\napi = 127.0.0.1:0\n"
            "workers = 3\nretry_cap = 1\n",
            dir);
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err_path[400];
        snprintf(err_path, sizeof err_path, "%s/daemon.err", s_root);
        if (!freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
            _exit(99);
        execl(s_bin, s_bin, "--config", ini, "--workers", "1", (char *) NULL);
        _exit(98);
    }
    char text[4096] = "";
    for (int i = 0; i < 300 && !strstr(text, "workers"); i++) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        FILE *o = fopen(out_path, "r");
        size_t n = o ? fread(text, 1, sizeof text - 1, o) : 0;
        text[n] = 0;
        if (o)
            fclose(o);
    }
    assert_int_equal(kill(pid, SIGTERM), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    FILE *o = fopen(out_path, "r");
    assert_non_null(o);
    size_t n = fread(text, 1, sizeof text - 1, o);
    text[n] = 0;
    fclose(o);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_non_null(strstr(text, "meshsweepd: node "));
    assert_non_null(strstr(text, "API http://127.0.0.1:"));
    assert_non_null(strstr(text, "1 worker,")); // the command line won
    assert_non_null(strstr(text, "stopped"));
    // No certificate and no --open-pool: it says it links to no one.
    char err_path[400], etext[4096] = "";
    snprintf(err_path, sizeof err_path, "%s/daemon.err", s_root);
    FILE *e = fopen(err_path, "r");
    assert_non_null(e);
    size_t en = fread(etext, 1, sizeof etext - 1, e);
    etext[en] = 0;
    fclose(e);
    assert_non_null(strstr(etext, "links to no one"));
    char key[500];
    snprintf(key, sizeof key, "%s/identity/node.key", dir);
    struct stat st;
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
}

//  --------------------------------------------------------------------------
//  A malformed --peer fails at start, exit 2, one line saying what is
//  wrong (from the command line and from the config file, with its line).

static void
test_bad_peer_one_line(void **state)
{
    (void) state;
    const char *bad[][2] = {
        {"tcp://127.0.0.1:99999", "1..65535"},
        {"tcp://127.0.0.1:abc", "port 'abc'"},
        {"tcp://127.0.0.1:", "port ''"},
        {"127.0.0.1:5871", "tcp://HOST:PORT"},
        {"tcp://:5871", "HOST"},
        {"tcp://ho st:5871", "HOST"},
        {"abcdef012345@tcp://127.0.0.1:5871", "NODE_ID"},
        {"XYZ@tcp://127.0.0.1:5871", "NODE_ID"},
    };
    char out[4096], err[4096];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args[] = {
            s_bin,    "--data-dir",       s_root,  "--open-pool", "--no-beacon",
            "--peer", (char *) bad[i][0], "--api", "127.0.0.1:0", NULL};
        assert_int_equal(s_run(args, out, sizeof out, err, sizeof err), 2);
        assert_int_equal(s_lines(err), 1);
        if (!strstr(err, bad[i][0]) || !strstr(err, bad[i][1]))
            fail_msg("--peer %s: '%s' lacks '%s'", bad[i][0], err, bad[i][1]);
    }
    char ini[400];
    snprintf(ini, sizeof ini, "%s/peer.ini", s_root);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "open_pool = x\npeer = tcp://127.0.0.1:70000\n");
    fclose(f);
    char *args[] = {s_bin, "--data-dir", s_root, "--config", ini, NULL};
    assert_int_equal(s_run(args, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    char want[600];
    snprintf(want, sizeof want, "%s:2: peer = tcp://127.0.0.1:70000", ini);
    if (!strstr(err, want))
        fail_msg("stderr '%s' lacks '%s'", err, want);
}

//  --------------------------------------------------------------------------
//  A config boolean takes true/false (or yes/no, on/off, 1/0); anything
//  else names the file, line and key, exit 2.

static void
test_config_bad_boolean(void **state)
{
    (void) state;
    const char *keys[] = {"no_beacon", "verbose"};
    for (size_t i = 0; i < 2; i++) {
        char ini[400];
        snprintf(ini, sizeof ini, "%s/bool.ini", s_root);
        FILE *f = fopen(ini, "w");
        assert_non_null(f);
        fprintf(f, "[meshsweepd]\nworkers = 1\n%s = maybe\n", keys[i]);
        fclose(f);
        char out[4096], err[4096];
        char *args[] = {s_bin, "--data-dir", s_root, "--config", ini, NULL};
        assert_int_equal(s_run(args, out, sizeof out, err, sizeof err), 2);
        assert_int_equal(s_lines(err), 1);
        char want[600];
        snprintf(want, sizeof want, "%s:3: %s = maybe: expected true or false",
                 ini, keys[i]);
        if (!strstr(err, want))
            fail_msg("stderr '%s' lacks '%s'", err, want);
    }
}

//  --------------------------------------------------------------------------
//  An unreachable static peer gets one warning line after its first
//  failed dials (not silence, not a flood); with --verbose, no start-up
//  line is printed twice.

static void
test_unreachable_peer_warns_once(void **state)
{
    (void) state;
    char ini[400], out_path[400];
    snprintf(ini, sizeof ini, "%s/ok.ini", s_root);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "no_beacon = Yes\nverbose = on\n"); // booleans as people type
    fclose(f);
    snprintf(out_path, sizeof out_path, "%s/both.txt", s_root);
    // A port nothing listens on: the discard port on loopback.
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(out_path, "w", stdout) || dup2(1, 2) < 0)
            _exit(99);
        char dir[400];
        snprintf(dir, sizeof dir, "%s/data", s_root);
        execl(s_bin, s_bin, "--data-dir", dir, "--config", ini,
              "--open-pool=unreach", "--mesh-port", "0", "--api", "127.0.0.1:0",
              "--workers", "1", "--peer", "tcp://127.0.0.1:9", (char *) NULL);
        _exit(98);
    }
    // Dials at 0, 0.25, 0.75, 1.75, 3.75 s...: the warning by about 4 s;
    // wait up to 12 s (a loaded machine), then 3 s more for a second one.
    char text[16384] = "";
    int seen_at = -1;
    for (int i = 0; i < 150; i++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        FILE *o = fopen(out_path, "r");
        size_t n = o ? fread(text, 1, sizeof text - 1, o) : 0;
        text[n] = 0;
        if (o)
            fclose(o);
        if (seen_at < 0 && strstr(text, "no answer"))
            seen_at = i;
        if (seen_at >= 0 && i >= seen_at + 30)
            break;
    }
    assert_int_equal(kill(pid, SIGTERM), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    FILE *o = fopen(out_path, "r");
    assert_non_null(o);
    size_t n = fread(text, 1, sizeof text - 1, o);
    text[n] = 0;
    fclose(o);
    if (seen_at < 0)
        fail_msg("no warning for an unreachable peer in:\n%s", text);
    int n_warn = 0, n_node = 0, n_pool = 0;
    for (const char *p = text; (p = strstr(p, "no answer")); p++)
        n_warn++;
    for (const char *p = text; (p = strstr(p, "meshsweepd: node ")); p++)
        n_node++;
    for (const char *p = text; (p = strstr(p, "open pool")); p++)
        n_pool++;
    if (n_warn != 1 || !strstr(text, "warning: peer tcp://127.0.0.1:9"))
        fail_msg("%d warnings in:\n%s", n_warn, text);
    if (n_node != 1)
        fail_msg("the node line %d times in:\n%s", n_node, text);
    // the start-up line and the no-authority warning, nothing more
    if (n_pool != 2)
        fail_msg("'open pool' %d times in:\n%s", n_pool, text);
}

//  --------------------------------------------------------------------------
//  GET path from the API at 127.0.0.1:port into body (size n); returns
//  the bytes read (headers included), -1 on failure.

static int
s_http_get(int port, const char *path, char *body, size_t n)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t) port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *) &sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    char req[300];
    int len = snprintf(req, sizeof req,
                       "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", path);
    if (write(fd, req, (size_t) len) != len) {
        close(fd);
        return -1;
    }
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fd, body + got, n - 1 - got)) > 0)
        got += (size_t) r;
    body[got] = 0;
    close(fd);
    return (int) got;
}

//  --------------------------------------------------------------------------
//  --backend auto (from the config file, with gpu_workers = auto) on a
//  machine or build with no usable GPU: one line on stderr saying why,
//  every worker on the CPU, and /api/v1/status says the same; with a
//  GPU, the workers line names it and no fallback line is printed.

static void
test_backend_auto_fallback_once(void **state)
{
    (void) state;
    char ini[400], dir[400], out_path[400], err_path[400];
    snprintf(ini, sizeof ini, "%s/gpu.ini", s_root);
    snprintf(dir, sizeof dir, "%s/data", s_root);
    snprintf(out_path, sizeof out_path, "%s/daemon.txt", s_root);
    snprintf(err_path, sizeof err_path, "%s/daemon.err", s_root);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "backend = auto\ngpu_workers = auto\nworkers = 2\n");
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
            _exit(99);
        execl(s_bin, s_bin, "--config", ini, "--data-dir", dir, "--api",
              "127.0.0.1:0", "--no-beacon", (char *) NULL);
        _exit(98);
    }
    char text[4096] = "";
    for (int i = 0; i < 500 && !strstr(text, "workers"); i++) {
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
        FILE *o = fopen(out_path, "r");
        size_t n = o ? fread(text, 1, sizeof text - 1, o) : 0;
        text[n] = 0;
        if (o)
            fclose(o);
    }
    const char *api = strstr(text, "http://127.0.0.1:");
    int port = api ? atoi(api + 17) : 0;
    char status[16384] = "";
    int got = port > 0
                  ? s_http_get(port, "/api/v1/status", status, sizeof status)
                  : -1;
    // Let the node run a little: the line must not come again (per task,
    // per worker or per turn).
    struct timespec ts = {0, 500 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(kill(pid, SIGTERM), 0);
    int wstatus = 0;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    assert_true(WIFEXITED(wstatus));
    assert_int_equal(WEXITSTATUS(wstatus), 0);
    char etext[8192] = "";
    FILE *e = fopen(err_path, "r");
    assert_non_null(e);
    size_t en = fread(etext, 1, sizeof etext - 1, e);
    etext[en] = 0;
    fclose(e);
    if (got <= 0)
        fail_msg("no /status answer (port %d); stdout:\n%s", port, text);
    int n_note = 0;
    for (const char *p = etext; (p = strstr(p, "backend auto:")); p++)
        n_note++;
    if (strstr(text, "on the GPU")) {
        // A CUDA build on a GPU machine: no fallback, the GPU on /status.
        assert_int_equal(n_note, 0);
        assert_non_null(strstr(status, "\"gpu_backend\":\"cuda\""));
        return;
    }
    if (n_note != 1)
        fail_msg("the fallback line %d times in:\n%s", n_note, etext);
    assert_non_null(strstr(etext, "meshsweepd: backend auto: no usable GPU ("));
    assert_non_null(strstr(etext, "); all 2 workers train on the CPU\n"));
#ifndef MESHSWEEP_HAVE_CUDA
    assert_non_null(strstr(etext, "this build has no CUDA backend)"));
#endif
    assert_non_null(strstr(text, "2 workers, data dir"));
    // /status: the split and the same line.
    const char *b = strstr(status, "\"backend\":{");
    if (!b)
        fail_msg("no backend object in /status:\n%s", status);
    assert_non_null(strstr(b, "\"requested\":\"auto\""));
    assert_non_null(strstr(b, "\"gpu_workers\":0"));
    assert_non_null(strstr(b, "\"cpu_workers\":2"));
    assert_non_null(strstr(b, "\"gpu\":null"));
    assert_non_null(strstr(b, "\"note\":\"backend auto: no usable GPU"));
}

//  --------------------------------------------------------------------------
//  gpu_workers: a bad value (command line or config file), more GPU
//  workers than workers, or GPU workers with backend cpu: exit 2, one
//  line naming gpu_workers and the value.

static void
test_gpu_workers_refused(void **state)
{
    (void) state;
    char out[4096], err[4096];
    const char *bad[][2] = {{"many", "'many' is not a whole number"},
                            {"-2", "'-2' is not a whole number"},
                            {"5000", "'5000' is not a whole number"},
                            {"3", "3 is more than the node's 2 workers"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *args[] = {s_bin,
                        "--data-dir",
                        s_root,
                        "--workers",
                        "2",
                        "--gpu-workers",
                        (char *) bad[i][0],
                        "--api",
                        "127.0.0.1:0",
                        "--no-beacon",
                        NULL};
        assert_int_equal(s_run(args, out, sizeof out, err, sizeof err), 2);
        assert_int_equal(s_lines(err), 1);
        if (!strstr(err, "gpu_workers: ") || !strstr(err, bad[i][1]))
            fail_msg("--gpu-workers %s: '%s' lacks '%s'", bad[i][0], err,
                     bad[i][1]);
    }
    char ini[400];
    snprintf(ini, sizeof ini, "%s/gpu.ini", s_root);
    FILE *f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "backend = cpu\ngpu_workers = 1\n");
    fclose(f);
    char *cpu[] = {s_bin,   "--data-dir",  s_root,        "--config", ini,
                   "--api", "127.0.0.1:0", "--no-beacon", NULL};
    assert_int_equal(s_run(cpu, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    assert_non_null(strstr(err, "gpu_workers: 1 GPU workers with backend cpu"));
    f = fopen(ini, "w");
    assert_non_null(f);
    fprintf(f, "gpu_workers = all\n");
    fclose(f);
    assert_int_equal(s_run(cpu, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    assert_non_null(strstr(err, "gpu_workers: 'all' is not a whole number"));
#ifndef MESHSWEEP_HAVE_CUDA
    // --backend cuda where it cannot run: refused at start, with why.
    char *cuda[] = {s_bin,   "--data-dir",  s_root,        "--backend", "cuda",
                    "--api", "127.0.0.1:0", "--no-beacon", NULL};
    assert_int_equal(s_run(cuda, out, sizeof out, err, sizeof err), 2);
    assert_int_equal(s_lines(err), 1);
    assert_non_null(strstr(err, "this build has no CUDA backend"));
    assert_non_null(strstr(err, "(use --backend auto or cpu)"));
#endif
}

//  --------------------------------------------------------------------------
//  Temp dir.

static int
s_setup(void **state)
{
    (void) state;
    snprintf(s_root, sizeof s_root, "/tmp/ms_meshsweepd_test.XXXXXX");
    return mkdtemp(s_root) ? 0 : -1;
}

//  --------------------------------------------------------------------------
//  Remove it.

static int
s_teardown(void **state)
{
    (void) state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s_root);
    return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
    const char *build = getenv("MESHSWEEP_BUILD_DIR");
    snprintf(s_bin, sizeof s_bin, "%s/node/meshsweepd", build ? build : ".");
    if (access(s_bin, X_OK) != 0) {
        printf("meshsweepd not built (%s): skipped\n", s_bin);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_usage_and_exit_codes, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_config_unknown_key_names_line,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_config_value_and_section_lines,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_config_start_and_sigterm, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_bad_peer_one_line, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_config_bad_boolean, s_setup,
                                        s_teardown),
        cmocka_unit_test_setup_teardown(test_unreachable_peer_warns_once,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_backend_auto_fallback_once,
                                        s_setup, s_teardown),
        cmocka_unit_test_setup_teardown(test_gpu_workers_refused, s_setup,
                                        s_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
