/*  =========================================================================
    ms_sandbox_test - a user's program in the sandbox, run as root as CI
    runs it: what it may do (metrics, output, its own files), and each
    thing it must not (network, host sockets and files, other processes,
    remounts, mknod, ptrace, nested namespaces, fork bombs, memory, disk,
    time, output), each stopped or contained and said so

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Skipped (77) where a sandbox cannot start (no bwrap, user namespaces
    forbidden), with the reason.
*/
#include "ms_sandbox.h"
#include "ms_argv.h"
#include "ms_test_fs.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct {
    char dir[64];      // the test's temporary dir (the "host"), 0700
    char program[96];  // dir/program: the program's directory
    char archive[128]; // dir/program.tar.gz: the program as it travels
    char secret[96];   // dir/secret: a host file the program must not read
} s_fix_t;

static int
setup(void **state)
{
    s_fix_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/ms-sandbox-test-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->program, sizeof f->program, "%s/program", f->dir);
    snprintf(f->secret, sizeof f->secret, "%s/secret", f->dir);
    assert_int_equal(mkdir(f->program, 0755), 0);
    char path[160];
    snprintf(path, sizeof path, "%s/data.txt", f->program);
    FILE *fp = fopen(path, "w");
    fputs("42\n", fp);
    fclose(fp);
    chmod(path, 0644);
    snprintf(f->archive, sizeof f->archive, "%s/program.tar.gz", f->dir);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "tar -czf %s -C %s .", f->archive, f->program);
    assert_int_equal(system(cmd), 0);
    fp = fopen(f->secret, "w");
    fputs("the node's key\n", fp);
    fclose(fp);
    chmod(f->secret, 0644); // readable by anyone who can reach it
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

//  Collected metrics lines.
typedef struct {
    int n;
    char first[256];
} s_metrics_t;

static int
s_on_metrics(void *arg, const char *line, size_t n)
{
    s_metrics_t *m = arg;
    if (m->n++ == 0)
        snprintf(m->first, sizeof m->first, "%.*s", (int) n, line);
    return 0;
}

//  Run `sh -c SCRIPT` in a sandbox of the default policy, changed by the
//  caller through *policy when it is not NULL.
static ms_sandbox_result_t
s_run(s_fix_t *f, const char *script, const ms_sandbox_policy_t *over,
      s_metrics_t *m)
{
    ms_sandbox_policy_t p;
    if (over)
        p = *over;
    else {
        ms_sandbox_policy_defaults(&p);
        p.timeout_s = 60;
    }
    p.program_archive = f->archive;
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    p.argv = argv;
    ms_sandbox_result_t r;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_sandbox_run(&p, m ? s_on_metrics : NULL, m, &r, &diag);
    if (rc != MS_OK)
        fail_msg("ms_sandbox_run: %s: %s", diag.where, diag.reason);
    return r;
}

static void
s_expect_ok(ms_sandbox_result_t *r, const char *what)
{
    if (!r->exited || r->exit_code != 0)
        fail_msg("%s: exit %d signal %d limit '%s'\nstdout: %s\nstderr: %s",
                 what, r->exit_code, r->signal, r->limit, r->stdout_tail,
                 r->stderr_tail);
}

//  --------------------------------------------------------------------------
static void
test_argv_allow_list(void **state)
{
    (void) state;
    ms_sandbox_policy_t p;
    ms_sandbox_policy_defaults(&p);
    p.program_archive = "/nonexistent.tar.gz";
    const char *argv[] = {"python3", "train.py", NULL};
    p.argv = argv;
    char **v = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_sandbox_argv(&p, 4, &v, &diag), MS_OK);
    bool cap_drop = false, no_userns = false, unshare = false;
    for (size_t i = 0; v[i]; i++) {
        cap_drop = cap_drop || (strcmp(v[i], "--cap-drop") == 0 &&
                                strcmp(v[i + 1], "ALL") == 0);
        no_userns = no_userns || strcmp(v[i], "--disable-userns") == 0;
        unshare = unshare || strcmp(v[i], "--unshare-all") == 0;
        if (strcmp(v[i], "--bind") == 0 || strcmp(v[i], "--ro-bind") == 0 ||
            strcmp(v[i], "--dev-bind") == 0) {
            const char *src = v[i + 1];
            const char *never[] = {"/",    "/home", "/root", "/run",
                                   "/var", "/sys",  "/tmp",  "/etc"};
            for (size_t k = 0; k < sizeof never / sizeof never[0]; k++)
                if (strcmp(src, never[k]) == 0)
                    fail_msg("binds %s", src);
            assert_true(strncmp(src, "/usr", 4) == 0 ||
                        strncmp(src, "/etc/", 5) == 0 ||
                        strncmp(src, "/lib", 4) == 0 ||
                        strcmp(src, "/bin") == 0 || strcmp(src, "/sbin") == 0);
        }
    }
    assert_true(cap_drop && no_userns && unshare);
    ms_argv_free(&v);
    assert_null(v);
    //  A policy out of range says which field.
    p.uid = 0;
    assert_int_equal(ms_sandbox_argv(&p, 4, &v, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "uid");
}

//  --------------------------------------------------------------------------
//  What a program may do: read its files, write in its task dir and /tmp,
//  write metrics lines, print; the allow-listed environment.
static void
test_runs_and_reports(void **state)
{
    s_fix_t *f = *state;
    setenv("MS_SANDBOX_TEST_SECRET", "leaked", 1);
    s_metrics_t m = {0};
    ms_sandbox_result_t r = s_run(
        f,
        "set -e; read v < data.txt; echo \"value $v\"; echo scratch > out.txt;"
        " echo t > /tmp/t; printf '{\"loss\": 0.5}\\n{\"loss\": 0.25}\\n' "
        ">> \"$MESHSWEEP_METRICS\"; env; id -u; echo oops >&2",
        NULL, &m);
    s_expect_ok(&r, "a plain program");
    assert_non_null(strstr(r.stdout_tail, "value 42"));
    assert_non_null(strstr(r.stdout_tail, "OPENBLAS_NUM_THREADS=1"));
    assert_non_null(strstr(r.stdout_tail, "\n65534\n"));
    assert_null(strstr(r.stdout_tail, "MS_SANDBOX_TEST_SECRET"));
    assert_non_null(strstr(r.stderr_tail, "oops"));
    assert_int_equal(m.n, 2);
    assert_string_equal(m.first, "{\"loss\": 0.5}");
    assert_int_equal(r.metrics_lines, 2);
    assert_string_equal(r.limit, "");
    unsetenv("MS_SANDBOX_TEST_SECRET");
    ms_sandbox_result_clear(&r);
}

//  --------------------------------------------------------------------------
//  No capability, uid 65534, descriptors 0-3 only, no nested namespace,
//  no other process, no host file, nothing written outside /task.
static void
test_confined(void **state)
{
    s_fix_t *f = *state;
    char script[2048];
    snprintf(script, sizeof script,
             "grep -q '^CapEff:[[:space:]]*0000000000000000$' /proc/self/status"
             " || { echo caps; exit 1; };"
             "[ \"$(id -u)\" = 65534 ] || { echo uid; exit 1; };"
             "for fd in 4 5 6 7 8 9 10 100 101 102 103 104; do "
             "[ -e /proc/$$/fd/$fd ] && { echo \"fd $fd open\"; exit 1; }; "
             "done;"
             "unshare -U true 2>/dev/null && { echo userns; exit 1; };"
             "[ -e %s ] && { echo secret; exit 1; };"
             "[ -e /root ] || [ -e /home ] || [ -e /var ] || [ -e /run ] && "
             "{ echo hostdirs; exit 1; };"
             "[ -e /proc/%d ] && { echo hostpid; exit 1; };"
             "a=ms_sandbox; b=_test;" // the host test's name, not in here
             "for d in /proc/[0-9]*; do grep -q \"$a$b\" $d/cmdline "
             "2>/dev/null && { echo \"hostproc $d\"; exit 1; }; done;"
             "grep -q bwrap /proc/1/cmdline || { echo pid1; exit 1; };"
             "touch /usr/x 2>/dev/null && { echo usr; exit 1; };"
             "[ -e %s ] && { echo hostdir; exit 1; };"
             "mount -o remount,rw /usr 2>/dev/null && { echo remount; exit 1; "
             "};"
             "python3 -c 'import os; os.mknod(\"/task/n\", 0o600 | 0o20000, "
             "os.makedev(1, 3))' 2>/dev/null && { echo mknod; exit 1; };"
             "python3 -c 'import ctypes, sys; "
             "sys.exit(0 if ctypes.CDLL(None).ptrace(0, 0, 0, 0) == 0 else 1)'"
             " && { echo ptrace; exit 1; };"
             "echo confined",
             f->secret, (int) getpid(), f->dir);
    ms_sandbox_result_t r = s_run(f, script, NULL, NULL);
    s_expect_ok(&r, "confinement");
    assert_non_null(strstr(r.stdout_tail, "confined"));
    ms_sandbox_result_clear(&r);
}

//  --------------------------------------------------------------------------
//  No network: a host TCP listener on loopback and a host Unix socket get
//  no connection; UDP goes nowhere.
static void
test_no_network(void **state)
{
    s_fix_t *f = *state;
    int tcp = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET,
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(tcp, (struct sockaddr *) &sin, sizeof sin), 0);
    assert_int_equal(listen(tcp, 4), 0);
    socklen_t len = sizeof sin;
    getsockname(tcp, (struct sockaddr *) &sin, &len);
    int port = ntohs(sin.sin_port);
    int unx = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    snprintf(sun.sun_path, sizeof sun.sun_path, "%s/node.sock", f->dir);
    assert_int_equal(bind(unx, (struct sockaddr *) &sun, sizeof sun), 0);
    chmod(sun.sun_path, 0777);
    assert_int_equal(listen(unx, 4), 0);
    char script[1024];
    snprintf(script, sizeof script,
             "python3 - <<'EOF'\n"
             "import socket, sys\n"
             "bad = []\n"
             "for what, fam, addr in ((\"tcp\", socket.AF_INET, ('127.0.0.1', "
             "%d)), (\"unix\", socket.AF_UNIX, '%s')):\n"
             "    s = socket.socket(fam, socket.SOCK_STREAM)\n"
             "    try:\n"
             "        s.connect(addr); bad.append(what)\n"
             "    except OSError as e:\n"
             "        print(what, 'refused:', e)\n"
             "u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
             "try:\n"
             "    u.sendto(b'x', ('10.0.0.1', 9)); bad.append('udp')\n"
             "except OSError as e:\n"
             "    print('udp refused:', e)\n"
             "sys.exit(1 if bad else 0)\n"
             "EOF",
             port, sun.sun_path);
    ms_sandbox_result_t r = s_run(f, script, NULL, NULL);
    s_expect_ok(&r, "network");
    assert_non_null(strstr(r.stdout_tail, "tcp refused"));
    assert_non_null(strstr(r.stdout_tail, "unix refused"));
    ms_sandbox_result_clear(&r);
    //  Nothing reached either listener.
    struct timeval tv = {0, 0};
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(tcp, &fds);
    FD_SET(unx, &fds);
    assert_int_equal(select((tcp > unx ? tcp : unx) + 1, &fds, NULL, NULL, &tv),
                     0);
    close(tcp);
    close(unx);
}

//  --------------------------------------------------------------------------
//  Limits: each one stops or contains the program and is named.
static void
test_limits(void **state)
{
    s_fix_t *f = *state;
    ms_sandbox_policy_t p;
    ms_sandbox_policy_defaults(&p);
    p.timeout_s = 60;

    //  Time.
    ms_sandbox_policy_t t = p;
    t.timeout_s = 2;
    ms_sandbox_result_t r = s_run(f, "sleep 100", &t, NULL);
    assert_string_equal(r.limit, "timeout");
    assert_true(r.wall_s < 10);
    assert_false(r.exited);
    ms_sandbox_result_clear(&r);

    //  Output: 1 GB printed, 4 MiB allowed.
    ms_sandbox_policy_t o = p;
    o.output_cap_bytes = 4 << 20;
    r = s_run(f, "head -c 1073741824 /dev/zero | tr '\\0' x", &o, NULL);
    assert_string_equal(r.limit, "output limit");
    assert_true(r.stdout_bytes < (64 << 20));
    assert_int_equal(strlen(r.stdout_tail), MS_SANDBOX_TAIL_BYTES);
    ms_sandbox_result_clear(&r);

    //  Memory: 600 MB asked, 256 MiB allowed.
    ms_sandbox_policy_t m = p;
    m.memory_mb = 256;
    r = s_run(f, "python3 -c 'b = bytearray(600 * 1000 * 1000)'", &m, NULL);
    assert_true(r.exited && r.exit_code != 0);
    assert_string_equal(r.limit, "memory limit");
    ms_sandbox_result_clear(&r);

    //  Disk: 100 MB written into a 16 MiB task dir.
    ms_sandbox_policy_t d = p;
    d.disk_mb = 16;
    r = s_run(f, "dd if=/dev/zero of=/task/big bs=1M count=100", &d, NULL);
    assert_false(r.exited && r.exit_code == 0);
    assert_true(strcmp(r.limit, "disk limit") == 0 ||
                strcmp(r.limit, "file size limit") == 0);
    ms_sandbox_result_clear(&r);

    //  Processes: 200 asked, 30 allowed; the forks beyond fail.
    ms_sandbox_policy_t n = p;
    n.nproc = 30;
    r = s_run(f,
              "python3 - <<'EOF'\n"
              "import os, signal, time\n"
              "pids = []\n"
              "for i in range(200):\n"
              "    try:\n"
              "        pid = os.fork()\n"
              "    except OSError as e:\n"
              "        print('fork refused:', e)\n"
              "        break\n"
              "    if pid == 0:\n"
              "        time.sleep(30)\n"
              "        os._exit(0)\n"
              "    pids.append(pid)\n"
              "print('forked', len(pids))\n"
              "for p in pids:\n"
              "    os.kill(p, signal.SIGKILL)\n"
              "EOF",
              &n, NULL);
    s_expect_ok(&r, "fork bomb");
    assert_non_null(strstr(r.stdout_tail, "fork refused"));
    int forked = -1;
    const char *at = strstr(r.stdout_tail, "forked ");
    assert_non_null(at);
    forked = atoi(at + 7);
    assert_true(forked > 0 && forked < 30);
    ms_sandbox_result_clear(&r);
}

//  --------------------------------------------------------------------------
//  Probe: here it says yes; a missing bwrap says why.
static void
test_probe(void **state)
{
    (void) state;
    char why[300];
    assert_int_equal(ms_sandbox_probe(NULL, why, sizeof why), MS_OK);
    assert_int_equal(ms_sandbox_probe("/nonexistent/bwrap", why, sizeof why),
                     MS_ERR_UNSUPPORTED);
    assert_non_null(strstr(why, "bubblewrap is not installed"));
}

int
main(void)
{
    char why[300];
    if (ms_sandbox_probe(NULL, why, sizeof why) != MS_OK) {
        printf("ms_sandbox_test: skipped: %s\n", why);
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_argv_allow_list),
        cmocka_unit_test_setup_teardown(test_runs_and_reports, setup, teardown),
        cmocka_unit_test_setup_teardown(test_confined, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_network, setup, teardown),
        cmocka_unit_test_setup_teardown(test_limits, setup, teardown),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
