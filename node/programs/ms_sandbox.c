/*  =========================================================================
    ms_sandbox - run a user's program in a bubblewrap sandbox that holds
    when the node runs as root

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The child of ms_sandbox_run puts its descriptors in place (0 the
    program's archive, opened by the node, or /dev/null; 1 and 2 the output
    pipes, 3 the metrics pipe, S_FD_SECCOMP the BPF filter), closes every
    other one, drops to the sandbox uid, sets its rlimits and execs bwrap.
    Inside, a one-line /bin/sh closes the filter's descriptor, unpacks the
    archive from its stdin into the /task tmpfs with GNU tar (as uid
    65534, in the sandbox: tar refuses absolute names and "..", and no
    link, device or setuid bit it makes can reach the host), points stdin
    at /dev/null and execs the command.

    No host path of the program is bound: a bind needs a path the sandbox
    uid can walk, and the node's data dir is 0700 (bwrap's --ro-bind-fd
    resolves its descriptor to a path again, and failed with EACCES).

    The parent polls the three pipes until the program has closed them and
    exited, or until its deadline, keeping the tails of the output in two
    rings and assembling metrics lines. The program's process tree is
    bwrap's: bwrap is killed with SIGKILL on a limit, and --die-with-parent
    and the pid namespace take everything inside with it.
*/
#define _GNU_SOURCE // memfd_create, close_range, pipe2
#include "ms_sandbox.h"

#include "ms_argv.h"

#include <seccomp.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

//  Where the child puts the descriptors bwrap reads.
#define S_FD_METRICS 3
#define S_FD_SECCOMP 4

//  Read-only binds, when the host has them (a symlink becomes the same
//  symlink: Debian 12's /bin, /sbin, /lib* point into /usr).
static const char *const s_ro_paths[] = {
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/alternatives", // libblas.so.3 and friends (update-alternatives)
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/mime.types",
    "/etc/ssl/certs",
    "/etc/ca-certificates",
    "/etc/python3",
    "/etc/python3.11",
};

//  Host variables passed through when set (DESIGN.md "Program tasks").
static const char *const s_pass_env[] = {"OPENBLAS_CORETYPE",
                                         "OPENBLAS_L2_SIZE"};

//  System calls the filter refuses with EPERM.
static const char *const s_denied[] = {
    "mount",
    "umount",
    "umount2",
    "pivot_root",
    "ptrace",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "mknod",
    "mknodat",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "setns",
    "unshare",
    "fsopen",
    "fsmount",
    "fsconfig",
    "move_mount",
    "open_tree",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "lookup_dcookie",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
};

//  --------------------------------------------------------------------------
//  Fill the defaults

void
ms_sandbox_policy_defaults(ms_sandbox_policy_t *p)
{
    assert(p);
    memset(p, 0, sizeof *p);
    p->threads = 1;
    p->memory_mb = 2048;
    p->disk_mb = 512;
    p->nproc = 64;
    p->timeout_s = 3600;
    p->output_cap_bytes = 64LL << 20;
    p->uid = 65534;
    p->gid = 65534;
}

//  --------------------------------------------------------------------------
//  Check a policy's ranges; MS_OK or MS_ERR_INVALID (diag).

static int
s_check(const ms_sandbox_policy_t *p, ms_diag_t *diag)
{
    if (p->program_archive && !*p->program_archive)
        return ms_diag_set(diag, "program_archive", "is empty");
    if (!p->argv || !p->argv[0] || !*p->argv[0])
        return ms_diag_set(diag, "argv", "the command is empty");
    if (p->threads < 1 || p->threads > 1024)
        return ms_diag_set(diag, "threads", "%d is not in 1..1024", p->threads);
    if (p->memory_mb < 0 || p->memory_mb > (1LL << 30))
        return ms_diag_set(diag, "memory_mb", "%lld is out of range",
                           (long long) p->memory_mb);
    if (p->disk_mb < 1 || p->disk_mb > (1LL << 30))
        return ms_diag_set(diag, "disk_mb", "%lld is out of range",
                           (long long) p->disk_mb);
    if (p->nproc < 1)
        return ms_diag_set(diag, "nproc", "must be >= 1");
    if (p->timeout_s < 1)
        return ms_diag_set(diag, "timeout_s", "must be >= 1");
    if (p->output_cap_bytes < 1)
        return ms_diag_set(diag, "output_cap_bytes", "must be >= 1");
    if (p->uid == 0 || p->gid == 0)
        return ms_diag_set(diag, "uid",
                           "the sandbox never runs as uid or "
                           "gid 0");
    for (size_t i = 0; p->env && p->env[i]; i++)
        if (!strchr(p->env[i], '=') || p->env[i][0] == '=')
            return ms_diag_set(diag, "env", "'%.60s' is not KEY=VALUE",
                               p->env[i]);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The bwrap command line

int
ms_sandbox_argv(const ms_sandbox_policy_t *p, int seccomp_fd, char ***argv_out,
                ms_diag_t *diag)
{
    assert(p && argv_out);
    *argv_out = NULL;
    int rc = s_check(p, diag);
    if (rc != MS_OK)
        return rc;
    ms_argv_t a = {0};
    ms_argv_add(&a, "%s", p->bwrap ? p->bwrap : "/usr/bin/bwrap");
    ms_argv_add(&a, "--unshare-all");
    ms_argv_add(&a, "--unshare-user");
    ms_argv_add(&a, "--uid");
    ms_argv_add(&a, "65534");
    ms_argv_add(&a, "--gid");
    ms_argv_add(&a, "65534");
    ms_argv_add(&a, "--hostname");
    ms_argv_add(&a, "meshsweep-sandbox");
    ms_argv_add(&a, "--cap-drop");
    ms_argv_add(&a, "ALL");
    ms_argv_add(&a, "--disable-userns");
    ms_argv_add(&a, "--die-with-parent");
    ms_argv_add(&a, "--new-session");
    ms_argv_add(&a, "--clearenv");
    for (size_t i = 0; i < sizeof s_ro_paths / sizeof s_ro_paths[0]; i++) {
        struct stat st;
        const char *path = s_ro_paths[i];
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlink(path, target, sizeof target - 1);
            if (n <= 0)
                continue;
            target[n] = '\0';
            ms_argv_add(&a, "--symlink");
            ms_argv_add(&a, "%s", target);
            ms_argv_add(&a, "%s", path);
        } else {
            ms_argv_add(&a, "--ro-bind");
            ms_argv_add(&a, "%s", path);
            ms_argv_add(&a, "%s", path);
        }
    }
    ms_argv_add(&a, "--proc");
    ms_argv_add(&a, "/proc");
    ms_argv_add(&a, "--dev");
    ms_argv_add(&a, "/dev");
    for (size_t i = 0; p->devices && p->devices[i]; i++) {
        ms_argv_add(&a, "--dev-bind");
        ms_argv_add(&a, "%s", p->devices[i]);
        ms_argv_add(&a, "%s", p->devices[i]);
    }
    ms_argv_add(&a, "--size");
    ms_argv_add(&a, "%lld", (long long) p->disk_mb << 20);
    ms_argv_add(&a, "--tmpfs");
    ms_argv_add(&a, "/task");
    ms_argv_add(&a, "--dir");
    ms_argv_add(&a, "/task/tmp");
    ms_argv_add(&a, "--symlink");
    ms_argv_add(&a, "/task/tmp");
    ms_argv_add(&a, "/tmp");
    ms_argv_add(&a, "--chdir");
    ms_argv_add(&a, "/task");
    ms_argv_add(&a, "--seccomp");
    ms_argv_add(&a, "%d", seccomp_fd);
    //  The environment: an allow-list.
    const char *fixed[][2] = {
        {"PATH", "/usr/local/bin:/usr/bin:/bin"},
        {"HOME", "/task"},
        {"TMPDIR", "/task/tmp"},
        {"LANG", "C.UTF-8"},
        {"MESHSWEEP_METRICS", "/dev/fd/3"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        ms_argv_add(&a, "--setenv");
        ms_argv_add(&a, "%s", fixed[i][0]);
        ms_argv_add(&a, "%s", fixed[i][1]);
    }
    const char *threads_vars[] = {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                  "MKL_NUM_THREADS"};
    for (size_t i = 0; i < 3; i++) {
        ms_argv_add(&a, "--setenv");
        ms_argv_add(&a, "%s", threads_vars[i]);
        ms_argv_add(&a, "%d", p->threads);
    }
    for (size_t i = 0; i < sizeof s_pass_env / sizeof s_pass_env[0]; i++) {
        const char *v = getenv(s_pass_env[i]);
        if (!v)
            continue;
        ms_argv_add(&a, "--setenv");
        ms_argv_add(&a, "%s", s_pass_env[i]);
        ms_argv_add(&a, "%s", v);
    }
    for (size_t i = 0; p->env && p->env[i]; i++) {
        const char *eq = strchr(p->env[i], '=');
        ms_argv_add(&a, "--setenv");
        ms_argv_add(&a, "%.*s", (int) (eq - p->env[i]), p->env[i]);
        ms_argv_add(&a, "%s", eq + 1);
    }
    //  Inside: drop bwrap's descriptor, unpack the program into the task
    //  dir, exec the command with stdin at /dev/null.
    ms_argv_add(&a, "/bin/sh");
    ms_argv_add(&a, "-c");
    if (p->program_archive)
        ms_argv_add(&a,
                    "exec %d<&-; tar -x -z -f - -C /task --no-same-owner "
                    "--no-same-permissions || { echo 'meshsweep sandbox: the "
                    "program archive does not unpack' >&2; exit 125; }; exec "
                    "\"$@\" </dev/null",
                    S_FD_SECCOMP);
    else
        ms_argv_add(&a, "exec %d<&-; exec \"$@\" </dev/null", S_FD_SECCOMP);
    ms_argv_add(&a, "meshsweep-program");
    for (size_t i = 0; p->argv[i]; i++)
        ms_argv_add(&a, "%s", p->argv[i]);
    if (!ms_argv_finish(&a, argv_out))
        return ms_diag_set_code(diag, MS_ERR_NOMEM, "argv", "out of memory");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Compile the seccomp filter

int
ms_sandbox_seccomp_fd(int *fd, ms_diag_t *diag)
{
    assert(fd);
    *fd = -1;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return ms_diag_set_code(diag, MS_ERR_NOMEM, "seccomp",
                                "seccomp_init failed");
    //  Another architecture's system calls (int 0x80 on x86-64) kill.
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL);
    for (size_t i = 0; rc == 0 && i < sizeof s_denied / sizeof s_denied[0];
         i++) {
        int nr = seccomp_syscall_resolve_name(s_denied[i]);
        if (nr == __NR_SCMP_ERROR)
            continue; // not on this architecture
        rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
    }
    //  clone and clone3 with CLONE_NEWUSER are refused by the kernel after
    //  --disable-userns; TIOCSTI (typing into the terminal) by
    //  --new-session.
    int mfd = -1;
    if (rc == 0) {
        mfd =
            memfd_create("meshsweep-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (mfd < 0)
            rc = -errno;
    }
    if (rc == 0)
        rc = seccomp_export_bpf(ctx, mfd);
    seccomp_release(ctx);
    if (rc == 0 &&
        (lseek(mfd, 0, SEEK_SET) != 0 ||
         fcntl(mfd, F_ADD_SEALS,
               F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0))
        rc = -errno;
    if (rc != 0) {
        if (mfd >= 0)
            close(mfd);
        return ms_diag_set_code(diag, MS_ERR_IO, "seccomp", "%s",
                                strerror(-rc));
    }
    *fd = mfd;
    return MS_OK;
}

//  The last bytes of a stream.
typedef struct {
    char *buf;     // MS_SANDBOX_TAIL_BYTES
    size_t start;  // oldest byte
    size_t used;   // bytes held
    int64_t total; // bytes seen
} s_ring_t;

static void
s_ring_put(s_ring_t *r, const char *data, size_t n)
{
    r->total += (int64_t) n;
    for (size_t i = 0; i < n; i++) {
        size_t at = (r->start + r->used) % MS_SANDBOX_TAIL_BYTES;
        r->buf[at] = data[i];
        if (r->used < MS_SANDBOX_TAIL_BYTES)
            r->used++;
        else
            r->start = (r->start + 1) % MS_SANDBOX_TAIL_BYTES;
    }
}

//  The ring as a malloc'd string (NULs written as spaces).
static char *
s_ring_text(const s_ring_t *r)
{
    char *s = malloc(r->used + 1);
    if (!s)
        return NULL;
    for (size_t i = 0; i < r->used; i++) {
        char c = r->buf[(r->start + i) % MS_SANDBOX_TAIL_BYTES];
        s[i] = c ? c : ' ';
    }
    s[r->used] = '\0';
    return s;
}

//  Metrics line assembly.
typedef struct {
    char *buf;     // MS_SANDBOX_METRICS_LINE_MAX + 1
    size_t used;   // bytes of the current line
    bool too_long; // the current line is past the limit (dropped)
    ms_sandbox_metrics_fn fn;
    void *arg;
    int64_t lines, dropped;
    bool stop; // the callback asked to stop
} s_lines_t;

static void
s_lines_put(s_lines_t *l, const char *data, size_t n)
{
    for (size_t i = 0; i < n && !l->stop; i++) {
        if (data[i] != '\n') {
            if (l->used < MS_SANDBOX_METRICS_LINE_MAX)
                l->buf[l->used++] = data[i];
            else
                l->too_long = true;
            continue;
        }
        if (l->too_long)
            l->dropped++;
        else if (l->used > 0) {
            l->buf[l->used] = '\0';
            l->lines++;
            if (l->fn && l->fn(l->arg, l->buf, l->used) != 0)
                l->stop = true;
        }
        l->used = 0;
        l->too_long = false;
    }
}

//  Monotonic seconds.
static double
s_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double) t.tv_sec + (double) t.tv_nsec / 1e9;
}

//  --------------------------------------------------------------------------
//  The child: descriptors, uid, rlimits, exec bwrap. Never returns.

static void
s_child(const ms_sandbox_policy_t *p, char **argv, int archive_fd, int out_w,
        int err_w, int metrics_w, int seccomp_fd)
{
    //  Move the five descriptors to their places (through high numbers,
    //  so that none is overwritten before it is moved).
    int in = archive_fd >= 0 ? archive_fd : open("/dev/null", O_RDONLY);
    int src[5] = {in, out_w, err_w, metrics_w, seccomp_fd};
    int tmp[5];
    for (int i = 0; i < 5; i++)
        if ((tmp[i] = fcntl(src[i], F_DUPFD, 100)) < 0)
            _exit(126);
    for (int i = 0; i < 5; i++)
        if (dup2(tmp[i], i) != i)
            _exit(126);
    if (close_range(5, ~0U, 0) != 0)
        for (int fd = 5; fd < 65536; fd++)
            close(fd);
    setpgid(0, 0);
    signal(SIGPIPE, SIG_DFL);
    if (geteuid() == 0) {
        if (setgroups(0, NULL) != 0 || setgid(p->gid) != 0 ||
            setuid(p->uid) != 0) {
            dprintf(2, "meshsweep sandbox: cannot drop to uid %u: %s\n",
                    (unsigned) p->uid, strerror(errno));
            _exit(126);
        }
    }
    struct rlimit rl;
    rl.rlim_cur = rl.rlim_max = (rlim_t) p->nproc;
    setrlimit(RLIMIT_NPROC, &rl);
    rl.rlim_cur = rl.rlim_max = (rlim_t) p->disk_mb << 20;
    setrlimit(RLIMIT_FSIZE, &rl);
    rl.rlim_cur = rl.rlim_max = 1024;
    setrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max = 0;
    setrlimit(RLIMIT_CORE, &rl);
    rl.rlim_cur = (rlim_t) p->timeout_s + 5;
    rl.rlim_max = (rlim_t) p->timeout_s + 10;
    setrlimit(RLIMIT_CPU, &rl);
    if (p->memory_mb > 0) {
        rl.rlim_cur = rl.rlim_max = (rlim_t) p->memory_mb << 20;
        setrlimit(RLIMIT_AS, &rl);
    }
    execv(argv[0], argv);
    dprintf(2, "meshsweep sandbox: cannot run %s: %s\n", argv[0],
            strerror(errno));
    _exit(127);
}

//  --------------------------------------------------------------------------
//  The limit a failed run shows in its exit and its last error lines.

static void
s_read_limit(ms_sandbox_result_t *r, int64_t memory_mb)
{
    if (r->limit[0])
        return;
    if (!r->exited) {
        if (r->signal == SIGXCPU)
            snprintf(r->limit, sizeof r->limit, "cpu time limit");
        else if (r->signal == SIGXFSZ)
            snprintf(r->limit, sizeof r->limit, "file size limit");
        return;
    }
    if (r->exit_code == 0 || !r->stderr_tail)
        return;
    size_t n = strlen(r->stderr_tail);
    const char *tail = r->stderr_tail + (n > 4096 ? n - 4096 : 0);
    if (memory_mb > 0 &&
        (strstr(tail, "MemoryError") ||
         strstr(tail, "Cannot allocate memory") ||
         strstr(tail, "std::bad_alloc") || strstr(tail, "out of memory")))
        snprintf(r->limit, sizeof r->limit, "memory limit");
    else if (strstr(tail, "No space left on device") ||
             strstr(tail, "File too large"))
        snprintf(r->limit, sizeof r->limit, "disk limit");
    else if (strstr(tail, "fork") &&
             (strstr(tail, "Resource temporarily unavailable") ||
              strstr(tail, "BlockingIOError")))
        snprintf(r->limit, sizeof r->limit, "process limit");
}

//  --------------------------------------------------------------------------
//  Run a program in the sandbox

int
ms_sandbox_run(const ms_sandbox_policy_t *p, ms_sandbox_metrics_fn on_metrics,
               void *arg, ms_sandbox_result_t *r, ms_diag_t *diag)
{
    assert(p && r);
    memset(r, 0, sizeof *r);
    int rc = s_check(p, diag);
    if (rc != MS_OK)
        return rc;
    int archive_fd = -1;
    if (p->program_archive) {
        archive_fd = open(p->program_archive, O_RDONLY | O_CLOEXEC);
        if (archive_fd < 0)
            return ms_diag_set_code(diag, MS_ERR_IO, p->program_archive,
                                    "cannot open: %s", strerror(errno));
    }
    int seccomp_fd = -1;
    rc = ms_sandbox_seccomp_fd(&seccomp_fd, diag);
    char **argv = NULL;
    if (rc == MS_OK)
        rc = ms_sandbox_argv(p, S_FD_SECCOMP, &argv, diag);
    int out[2] = {-1, -1}, err[2] = {-1, -1}, met[2] = {-1, -1};
    if (rc == MS_OK && (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC) ||
                        pipe2(met, O_CLOEXEC)))
        rc = ms_diag_set_code(diag, MS_ERR_IO, "pipe", "%s", strerror(errno));
    s_ring_t rings[2] = {{0}, {0}};
    s_lines_t lines = {.fn = on_metrics, .arg = arg};
    rings[0].buf = malloc(MS_SANDBOX_TAIL_BYTES);
    rings[1].buf = malloc(MS_SANDBOX_TAIL_BYTES);
    lines.buf = malloc(MS_SANDBOX_METRICS_LINE_MAX + 1);
    //  The sandbox uid must be able to reopen its pipes (/dev/fd/3 for
    //  the metrics, /dev/stdout): a pipe belongs to its creator, mode 0600.
    if (rc == MS_OK && geteuid() == 0) {
        int ends[3] = {out[1], err[1], met[1]};
        for (int i = 0; i < 3 && rc == MS_OK; i++)
            if (fchown(ends[i], p->uid, p->gid) != 0)
                rc = ms_diag_set_code(diag, MS_ERR_IO, "pipe", "fchown: %s",
                                      strerror(errno));
    }
    if (rc == MS_OK && (!rings[0].buf || !rings[1].buf || !lines.buf))
        rc = ms_diag_set_code(diag, MS_ERR_NOMEM, "sandbox", "out of memory");
    double t0 = s_now();
    pid_t pid = -1;
    if (rc == MS_OK) {
        pid = fork();
        if (pid < 0)
            rc = ms_diag_set_code(diag, MS_ERR_IO, "fork", "%s",
                                  strerror(errno));
        else if (pid == 0)
            s_child(p, argv, archive_fd, out[1], err[1], met[1], seccomp_fd);
    }
    if (out[1] >= 0)
        close(out[1]);
    if (err[1] >= 0)
        close(err[1]);
    if (met[1] >= 0)
        close(met[1]);
    if (seccomp_fd >= 0)
        close(seccomp_fd);
    if (archive_fd >= 0)
        close(archive_fd);
    ms_argv_free(&argv);
    if (rc == MS_OK) {
        struct pollfd pf[3] = {
            {out[0], POLLIN, 0}, {err[0], POLLIN, 0}, {met[0], POLLIN, 0}};
        int open_fds = 3;
        double deadline = t0 + p->timeout_s;
        bool killed = false;
        char chunk[65536];
        while (open_fds > 0) {
            double left = deadline - s_now();
            if (left <= 0 && !killed) {
                snprintf(r->limit, sizeof r->limit, "timeout");
                kill(pid, SIGKILL);
                killed = true;
            }
            int wait_ms = killed ? 1000 : (int) (left * 1000) + 1;
            int n = poll(pf, 3, wait_ms > 1000 ? 1000 : wait_ms);
            if (n < 0 && errno != EINTR)
                break;
            if (n <= 0) {
                if (killed && s_now() > deadline + 5)
                    break; // a descriptor leaked to a process that lives on
                continue;
            }
            for (int i = 0; i < 3; i++) {
                if (pf[i].fd < 0 ||
                    !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                    continue;
                ssize_t got = read(pf[i].fd, chunk, sizeof chunk);
                if (got <= 0) {
                    if (got < 0 && errno == EINTR)
                        continue;
                    close(pf[i].fd);
                    pf[i].fd = -1;
                    open_fds--;
                    continue;
                }
                if (i < 2)
                    s_ring_put(&rings[i], chunk, (size_t) got);
                else
                    s_lines_put(&lines, chunk, (size_t) got);
            }
            if (!killed &&
                rings[0].total + rings[1].total > p->output_cap_bytes) {
                snprintf(r->limit, sizeof r->limit, "output limit");
                kill(pid, SIGKILL);
                killed = true;
            }
            if (!killed && lines.stop) {
                snprintf(r->limit, sizeof r->limit, "stopped");
                kill(pid, SIGKILL);
                killed = true;
            }
        }
        for (int i = 0; i < 3; i++)
            if (pf[i].fd >= 0)
                close(pf[i].fd);
        int status = 0;
        if (!killed) {
            //  Output closed: the program is ending; wait for it within
            //  what is left of its time.
            while (waitpid(pid, &status, WNOHANG) == 0) {
                if (s_now() > deadline) {
                    snprintf(r->limit, sizeof r->limit, "timeout");
                    kill(pid, SIGKILL);
                    break;
                }
                struct timespec ts = {0, 20 * 1000 * 1000};
                nanosleep(&ts, NULL);
            }
        }
        if (waitpid(pid, &status, 0) < 0 && errno != ECHILD)
            status = 0;
        r->wall_s = s_now() - t0;
        r->exited = WIFEXITED(status);
        r->exit_code = r->exited ? WEXITSTATUS(status) : -1;
        r->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        r->stdout_bytes = rings[0].total;
        r->stderr_bytes = rings[1].total;
        r->metrics_lines = lines.lines;
        r->metrics_dropped = lines.dropped;
        r->stdout_tail = s_ring_text(&rings[0]);
        r->stderr_tail = s_ring_text(&rings[1]);
        if (!r->stdout_tail || !r->stderr_tail) {
            ms_sandbox_result_clear(r);
            rc = ms_diag_set_code(diag, MS_ERR_NOMEM, "sandbox",
                                  "out of memory");
        } else
            s_read_limit(r, p->memory_mb);
    } else {
        int reads[3] = {out[0], err[0], met[0]};
        for (int i = 0; i < 3; i++)
            if (reads[i] >= 0)
                close(reads[i]);
    }
    free(rings[0].buf);
    free(rings[1].buf);
    free(lines.buf);
    return rc;
}

//  --------------------------------------------------------------------------
//  Free a result's strings

void
ms_sandbox_result_clear(ms_sandbox_result_t *r)
{
    if (!r)
        return;
    free(r->stdout_tail);
    free(r->stderr_tail);
    memset(r, 0, sizeof *r);
}

//  --------------------------------------------------------------------------
//  Whether programs can be sandboxed here

int
ms_sandbox_probe(const char *bwrap, char *why, size_t why_n)
{
    assert(why && why_n > 0);
    why[0] = '\0';
    const char *path = bwrap ? bwrap : "/usr/bin/bwrap";
    if (access(path, X_OK) != 0) {
        snprintf(why, why_n, "bubblewrap is not installed (%s: %s)", path,
                 strerror(errno));
        return MS_ERR_UNSUPPORTED;
    }
    ms_sandbox_policy_t p;
    ms_sandbox_policy_defaults(&p);
    p.bwrap = path;
    p.timeout_s = 20;
    p.disk_mb = 1;
    const char *argv[] = {"/bin/true", NULL};
    p.argv = argv;
    ms_sandbox_result_t r;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc = ms_sandbox_run(&p, NULL, NULL, &r, &diag);
    if (rc != MS_OK) {
        snprintf(why, why_n, "%s: %s", diag.where, diag.reason);
        return MS_ERR_UNSUPPORTED;
    }
    bool ok = r.exited && r.exit_code == 0;
    if (!ok) {
        //  bwrap's own error: its last line.
        char *last = r.stderr_tail;
        size_t n = strlen(last);
        while (n > 0 && last[n - 1] == '\n')
            last[--n] = '\0';
        char *nl = strrchr(last, '\n');
        snprintf(why, why_n, "a sandbox does not start here: %s",
                 *(nl ? nl + 1 : last) ? (nl ? nl + 1 : last)
                                       : "bwrap failed without a message");
    }
    ms_sandbox_result_clear(&r);
    return ok ? MS_OK : MS_ERR_UNSUPPORTED;
}
