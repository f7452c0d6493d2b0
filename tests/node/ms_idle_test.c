/*  =========================================================================
    ms_idle_test - others' CPU use from a fake /proc and cgroup tree, the
    pause/resume state machine, bad options, the real /proc

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_idle.h"
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
#include <time.h>
#include <unistd.h>

//  A fake tree: ROOT/proc and ROOT/cg.
typedef struct {
    char root[256];
    char proc[300];
    char cg[300];
} s_tree_t;

static void
s_mkdirs(const char *path)
{
    char buf[1100];
    snprintf(buf, sizeof buf, "mkdir -p '%s'", path);
    assert_int_equal(system(buf), 0);
}

static void
s_tree_new(s_tree_t *t)
{
    snprintf(t->root, sizeof t->root, "/tmp/ms-idle-test.XXXXXX");
    assert_non_null(mkdtemp(t->root));
    snprintf(t->proc, sizeof t->proc, "%s/proc", t->root);
    snprintf(t->cg, sizeof t->cg, "%s/cg", t->root);
    char p[512];
    snprintf(p, sizeof p, "%s/self", t->proc);
    s_mkdirs(p);
    snprintf(p, sizeof p, "%s/42", t->proc);
    s_mkdirs(p);
    s_mkdirs(t->cg);
    snprintf(p, sizeof p, "%s/self/cgroup", t->proc);
    assert_int_equal(ms_tf_write(p, "0::/user.slice/session-1.scope\n"), 0);
}

static void
s_tree_destroy(s_tree_t *t)
{
    char buf[1100];
    snprintf(buf, sizeof buf, "rm -rf '%s'", t->root);
    assert_int_equal(system(buf), 0);
}

//  /proc/stat with these tick counts (2 CPUs).
static void
s_cpu(const s_tree_t *t, unsigned long long user, unsigned long long system,
      unsigned long long idle)
{
    char p[512], text[512];
    snprintf(p, sizeof p, "%s/stat", t->proc);
    snprintf(text, sizeof text,
             "cpu  %llu 0 %llu %llu 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n"
             "intr 0\n",
             user, system, idle);
    assert_int_equal(ms_tf_write(p, text), 0);
}

//  PROC/NAME/stat with utime, stime, cutime, cstime (comm with a ')').
static void
s_proc(const s_tree_t *t, const char *name, unsigned long long ut,
       unsigned long long st, unsigned long long cut, unsigned long long cst)
{
    char p[512], text[512];
    snprintf(p, sizeof p, "%s/%s/stat", t->proc, name);
    snprintf(text, sizeof text,
             "%s (mesh sweep) d) S 1 1 1 0 -1 4194304 10 0 0 0 %llu %llu "
             "%llu %llu 30 10 3 0 100 0 0\n",
             name, ut, st, cut, cst);
    assert_int_equal(ms_tf_write(p, text), 0);
}

static ms_idle_t *
s_open(const s_tree_t *t, int pct, int busy_s, int quiet_s)
{
    ms_idle_options_t o;
    ms_idle_options_defaults(&o);
    o.cpu_pct = pct;
    o.busy_s = busy_s;
    o.quiet_s = quiet_s;
    o.proc_root = t->proc;
    o.cgroup_root = t->cg;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_idle_t *idle = NULL;
    assert_int_equal(ms_idle_open(&idle, &o, &diag), MS_OK);
    return idle;
}

//  Others = all busy time minus the node and its workers.
static void
test_processes_subtracts_own_tree(void **state)
{
    (void) state;
    s_tree_t t;
    s_tree_new(&t);
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long sec = (unsigned long long) (hz > 0 ? hz : 100);
    s_cpu(&t, 0, 0, 0);
    s_proc(&t, "self", 0, 0, 0, 0);
    s_proc(&t, "42", 0, 0, 0, 0);
    ms_idle_t *idle = s_open(&t, 25, 2, 3);
    assert_int_equal(ms_idle_source(idle), MS_IDLE_SOURCE_PROCESSES);
    assert_null(ms_idle_cgroup(idle));
    int pids[] = {42, 4242}; // 4242 is gone: skipped
    ms_idle_change_t c;
    assert_int_equal(ms_idle_sample(idle, pids, 2, 1000, &c), MS_OK);
    assert_true(ms_idle_others_pct(idle) < 0); // baseline only

    // 1 s on 2 CPUs: 2 s of CPU time, all busy; the worker used 1 s and
    // the node 0.2 s: others 0.8 s = 40 %.
    s_cpu(&t, 2 * sec, 0, 0);
    s_proc(&t, "self", sec / 10, sec / 10, 0, 0);
    s_proc(&t, "42", sec, 0, 0, 0);
    assert_int_equal(ms_idle_sample(idle, pids, 2, 2000, &c), MS_OK);
    assert_float_equal(ms_idle_others_pct(idle), 40.0, 0.5);
    assert_float_equal(ms_idle_own_pct(idle), 60.0, 0.5);
    assert_int_equal(c, MS_IDLE_CHANGE_NONE);

    // The worker exited and was reaped: its time moved into the node's
    // cutime. Next second: only the worker busy (1 s), 1 s idle.
    s_cpu(&t, 3 * sec, 0, sec);
    s_proc(&t, "self", sec / 10, sec / 10, 2 * sec, 0);
    char p[512];
    snprintf(p, sizeof p, "%s/42/stat", t.proc);
    unlink(p);
    assert_int_equal(ms_idle_sample(idle, pids, 2, 3000, &c), MS_OK);
    assert_float_equal(ms_idle_others_pct(idle), 0.0, 0.5);

    // Others take both CPUs for 2 s: pause after busy_s (2 s).
    s_cpu(&t, 5 * sec, 0, sec);
    assert_int_equal(ms_idle_sample(idle, NULL, 0, 4000, &c), MS_OK);
    assert_float_equal(ms_idle_others_pct(idle), 100.0, 0.5);
    assert_int_equal(c, MS_IDLE_CHANGE_NONE);
    s_cpu(&t, 7 * sec, 0, sec);
    assert_int_equal(ms_idle_sample(idle, NULL, 0, 5000, &c), MS_OK);
    assert_int_equal(c, MS_IDLE_CHANGE_PAUSE);
    assert_true(ms_idle_paused(idle));
    // The same clock twice: refused, nothing fed.
    assert_int_equal(ms_idle_sample(idle, NULL, 0, 5000, &c), MS_ERR_INVALID);
    ms_idle_destroy(&idle);
    assert_null(idle);
    ms_idle_destroy(&idle); // NULL-safe
    s_tree_destroy(&t);
}

//  Under a systemd service, the cgroup's usage_usec is the own time.
static void
test_cgroup_service(void **state)
{
    (void) state;
    s_tree_t t;
    s_tree_new(&t);
    long hz = sysconf(_SC_CLK_TCK);
    unsigned long long sec = (unsigned long long) (hz > 0 ? hz : 100);
    char p[512];
    snprintf(p, sizeof p, "%s/self/cgroup", t.proc);
    assert_int_equal(ms_tf_write(p, "0::/system.slice/meshsweepd.service\n"),
                     0);
    snprintf(p, sizeof p, "%s/system.slice/meshsweepd.service", t.cg);
    s_mkdirs(p);
    snprintf(p, sizeof p, "%s/system.slice/meshsweepd.service/cpu.stat", t.cg);
    assert_int_equal(
        ms_tf_write(
            p, "usage_usec 1000000\nuser_usec 900000\nsystem_usec 100000\n"),
        0);
    s_cpu(&t, 0, 0, 0);
    s_proc(&t, "self", 0, 0, 0, 0);
    ms_idle_t *idle = s_open(&t, 25, 1, 1);
    assert_int_equal(ms_idle_source(idle), MS_IDLE_SOURCE_CGROUP);
    assert_string_equal(ms_idle_source_name(ms_idle_source(idle)), "cgroup");
    assert_non_null(strstr(ms_idle_cgroup(idle), "meshsweepd.service"));
    assert_int_equal(ms_idle_sample(idle, NULL, 0, 1000, NULL), MS_OK);
    // 2 s of CPU time, 1.5 s busy, of which the service used 1.2 s:
    // others 0.3 s = 15 %; the process times (none) are not read.
    s_cpu(&t, sec, sec / 2, sec / 2);
    assert_int_equal(
        ms_tf_write(
            p, "usage_usec 2200000\nuser_usec 2000000\nsystem_usec 200000\n"),
        0);
    ms_idle_change_t c;
    assert_int_equal(ms_idle_sample(idle, NULL, 0, 2000, &c), MS_OK);
    assert_float_equal(ms_idle_others_pct(idle), 15.0, 0.5);
    assert_int_equal(c, MS_IDLE_CHANGE_NONE);
    ms_idle_destroy(&idle);

    // A user manager's cgroup is not the node's own: processes mode.
    snprintf(p, sizeof p, "%s/self/cgroup", t.proc);
    assert_int_equal(
        ms_tf_write(p, "0::/user.slice/user-1000.slice/user@1000.service\n"),
        0);
    idle = s_open(&t, 25, 1, 1);
    assert_int_equal(ms_idle_source(idle), MS_IDLE_SOURCE_PROCESSES);
    ms_idle_destroy(&idle);
    s_tree_destroy(&t);
}

//  Busy runs must be unbroken; resume after quiet_s; seconds, not samples.
static void
test_state_machine(void **state)
{
    (void) state;
    s_tree_t t;
    s_tree_new(&t);
    s_cpu(&t, 0, 0, 0);
    s_proc(&t, "self", 0, 0, 0, 0);
    ms_idle_t *idle = s_open(&t, 25, 5, 30);
    // 4 s busy, 1 s quiet, 4 s busy: no pause (the run broke).
    for (int i = 0; i < 4; i++)
        assert_int_equal(ms_idle_feed(idle, 90, 1000), MS_IDLE_CHANGE_NONE);
    assert_int_equal(ms_idle_feed(idle, 25, 1000), MS_IDLE_CHANGE_NONE);
    for (int i = 0; i < 4; i++)
        assert_int_equal(ms_idle_feed(idle, 26, 1000), MS_IDLE_CHANGE_NONE);
    assert_false(ms_idle_paused(idle));
    // One more busy second: 5 s in a row.
    assert_int_equal(ms_idle_feed(idle, 26, 1000), MS_IDLE_CHANGE_PAUSE);
    assert_true(ms_idle_paused(idle));
    // Paused: 29 s quiet, then busy again, then 30 s quiet in two samples.
    assert_int_equal(ms_idle_feed(idle, 0, 29000), MS_IDLE_CHANGE_NONE);
    assert_int_equal(ms_idle_feed(idle, 80, 1000), MS_IDLE_CHANGE_NONE);
    assert_int_equal(ms_idle_feed(idle, 10, 15000), MS_IDLE_CHANGE_NONE);
    assert_int_equal(ms_idle_feed(idle, 10, 0), MS_IDLE_CHANGE_NONE);
    assert_true(ms_idle_paused(idle));
    assert_int_equal(ms_idle_feed(idle, 10, 15000), MS_IDLE_CHANGE_RESUME);
    assert_false(ms_idle_paused(idle));
    ms_idle_destroy(&idle);
    s_tree_destroy(&t);
}

//  Bad options and an unreadable /proc are refused with the option named.
static void
test_bad_options(void **state)
{
    (void) state;
    ms_idle_options_t o;
    ms_diag_t diag;
    ms_idle_t *idle = (ms_idle_t *) &o;
    ms_idle_options_defaults(&o);
    o.cpu_pct = 101;
    ms_diag_clear(&diag);
    assert_int_equal(ms_idle_open(&idle, &o, &diag), MS_ERR_INVALID);
    assert_null(idle);
    assert_string_equal(diag.where, "idle_cpu_pct");
    ms_idle_options_defaults(&o);
    o.quiet_s = 0;
    assert_int_equal(ms_idle_open(&idle, &o, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "idle_quiet_s");
    ms_idle_options_defaults(&o);
    o.busy_s = -1;
    assert_int_equal(ms_idle_open(&idle, &o, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "idle_busy_s");
    ms_idle_options_defaults(&o);
    o.proc_root = "/nonexistent/proc";
    assert_int_equal(ms_idle_open(&idle, &o, &diag), MS_ERR_IO);
    assert_null(idle);
    assert_non_null(strstr(diag.reason, "/nonexistent/proc/stat"));
}

//  The real /proc: a busy loop of our own is not "others".
static void
test_real_proc_own_time_excluded(void **state)
{
    (void) state;
    ms_idle_options_t o;
    ms_idle_options_defaults(&o);
    ms_diag_t diag;
    ms_diag_clear(&diag);
    ms_idle_t *idle = NULL;
    assert_int_equal(ms_idle_open(&idle, &o, &diag), MS_OK);
    assert_int_equal(ms_idle_sample(idle, NULL, 0, 1, NULL), MS_OK);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    volatile double x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += i * 0.5;
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000 +
                 (t1.tv_nsec - t0.tv_nsec) / 1000000 <
             500);
    assert_int_equal(ms_idle_sample(idle, NULL, 0, 501, NULL), MS_OK);
    double own = ms_idle_own_pct(idle), others = ms_idle_others_pct(idle);
    long n_cpu = sysconf(_SC_NPROCESSORS_ONLN);
    // We spun one CPU for 0.5 s: our share of all CPUs is about 1/n (less
    // when the machine is shared); others are whatever else ran.
    assert_true(own > 0);
    assert_true(own <= 100.0 / (double) (n_cpu > 0 ? n_cpu : 1) + 15);
    assert_true(others >= 0 && others <= 100);
    ms_idle_destroy(&idle);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_processes_subtracts_own_tree),
        cmocka_unit_test(test_cgroup_service),
        cmocka_unit_test(test_state_machine),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_real_proc_own_time_excluded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
