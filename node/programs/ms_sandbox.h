/*  =========================================================================
    ms_sandbox - run a user's program in a bubblewrap sandbox that holds
    when the node runs as root

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A program task runs code the node's owner did not write (DESIGN.md
    "Program tasks"). bubblewrap run by root keeps root's capabilities in
    the sandbox (it can remount a read-only bind read-write), and the
    kernel does not enforce RLIMIT_NPROC for uid 0, so the sandbox is
    built from the outside in:

      1. the child of the node drops to an unprivileged uid and gid
         (policy uid, default 65534) and no supplementary groups, then
         sets its rlimits (address space, processes, file size, open
         files, CPU time, no core files); only then does it exec bwrap,
         which is not setuid on Debian and so gains nothing;
      2. bwrap: every namespace new (user, mount, pid, net, ipc, uts,
         cgroup), uid and gid 65534 inside, all capabilities dropped, no
         nested user namespaces, a new session, killed with its parent,
         an empty environment but for an allow-list;
      3. the file system: read-only binds of an allow-list only (/usr and
         the merged-/usr links, a minimal /etc), never /, /home, /root,
         /run, /var, /sys, /tmp or the data dir, and nothing of the
         program's own; a fresh /proc (the sandbox's own pid namespace); a
         minimal /dev; /task, the working directory, on a tmpfs of disk_mb
         into which the program's archive (a .tar.gz the node opened) is
         unpacked from stdin inside the sandbox; /tmp is /task/tmp;
      4. a seccomp filter (libseccomp, compiled to BPF and handed to bwrap
         by descriptor) that makes mount, umount, pivot_root, ptrace,
         bpf, keyctl, add_key, request_key, perf_event_open, userfaultfd,
         io_uring, kexec, mknod, module loading, open_by_handle_at and
         setns fail with EPERM; other architectures' system calls kill;
      5. descriptors: 0 is /dev/null, 1 and 2 pipes to the node, 3 the
         metrics pipe (MESHSWEEP_METRICS=/dev/fd/3: JSON lines, DESIGN.md),
         everything else closed before the program starts.
    The node reads stdout and stderr as the program runs and keeps the
    last MS_SANDBOX_TAIL_BYTES of each; beyond output_cap_bytes in all the
    run is killed ("output limit"). Past timeout_s it is killed
    ("timeout"). Where a limit shows only as the program's own failure
    (an allocation refused under RLIMIT_AS, a write refused on the full
    tmpfs, a fork refused under RLIMIT_NPROC), the reason is read off the
    exit: SIGXCPU, SIGXFSZ, or the error text of the program's last lines
    (MemoryError, "Cannot allocate memory", "No space left on device",
    "Resource temporarily unavailable" after fork).

    These machines mount cgroup v1 only, where an unprivileged node cannot
    make a per-run cgroup: limits are rlimits under the sandbox uid, which
    the tests exercise. RLIMIT_NPROC counts every process of that uid on
    the machine, so each worker should have a uid of its own (policy uid).

    Thread rule: ms_sandbox_run blocks until the program ends; call it from
    a worker process or thread, never the node loop.
    =========================================================================
*/
#ifndef MS_SANDBOX_H
#define MS_SANDBOX_H

#include "ms_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

//  Bytes of stdout and of stderr a run keeps (the tails of each).
#define MS_SANDBOX_TAIL_BYTES (64 * 1024)
//  Longest metrics line taken; a longer one is dropped and counted.
#define MS_SANDBOX_METRICS_LINE_MAX (64 * 1024)

//  What one run may do. Strings and arrays are borrowed for the call.
typedef struct {
    const char *program_archive; // the program's .tar.gz on the host,
                                 // unpacked into /task; NULL: none
    const char *const *argv;     // the command, NULL-terminated; argv[0]
                                 // is looked up in /usr/bin:/bin inside
    const char *const *env;      // extra "KEY=VALUE" (NULL-terminated, or
                                 // NULL), the caller's allow-list
    int threads;                 // OMP/OPENBLAS/MKL_NUM_THREADS (>= 1)
    int64_t memory_mb;           // address space (RLIMIT_AS); 0: no limit
    int64_t disk_mb;             // size of the /task tmpfs (>= 1)
    int nproc;                   // processes of the sandbox uid (>= 1)
    int timeout_s;               // wall-clock limit (>= 1)
    int64_t output_cap_bytes;    // stdout + stderr in all (>= 1)
    uid_t uid;                   // sandbox uid when the node is root
    gid_t gid;                   // sandbox gid when the node is root
    const char *const *devices;  // device nodes to bind (GPU), or NULL
    const char *bwrap;           // bwrap's path; NULL: /usr/bin/bwrap
} ms_sandbox_policy_t;

//  A metrics line from the program (fd 3), as it is read; return non-zero
//  to stop the run ("stopped"). line is NUL-terminated, without '\n';
//  borrowed for the call.
typedef int (*ms_sandbox_metrics_fn)(void *arg, const char *line, size_t n);

//  How a run ended.
typedef struct {
    bool exited;             // exited (exit_code), else killed (signal)
    int exit_code;           // its exit status when exited
    int signal;              // the signal that ended it when not exited
    char limit[64];          // the limit that ended it, "" when none:
                             // timeout, output limit, memory limit, disk
                             // limit, process limit, cpu time limit, file
                             // size limit, stopped
    double wall_s;           // seconds from spawn to exit
    int64_t stdout_bytes;    // bytes it wrote to stdout, all of them
    int64_t stderr_bytes;    // ... to stderr
    int64_t metrics_lines;   // metrics lines handed to the callback
    int64_t metrics_dropped; // metrics lines over the length limit
    char *stdout_tail;       // last MS_SANDBOX_TAIL_BYTES (malloc'd, NUL)
    char *stderr_tail;       // same for stderr
} ms_sandbox_result_t;

//  Fill a policy with the defaults: 1 thread, 2048 MiB, 512 MiB disk,
//  64 processes, 3600 s, 64 MiB of output, uid and gid 65534.
void ms_sandbox_policy_defaults(ms_sandbox_policy_t *policy);

//  Whether programs can be sandboxed here: bwrap exists and a sandbox of
//  the default policy starts (user namespaces allowed by the kernel and
//  the unit or container). Returns MS_OK, or MS_ERR_UNSUPPORTED with the
//  reason in why (why_n bytes), e.g. "bubblewrap is not installed
//  (/usr/bin/bwrap)" or bwrap's own error line.
int ms_sandbox_probe(const char *bwrap, char *why, size_t why_n);

//  The bwrap command line a run uses (for tests and for --verbose logs),
//  with the seccomp filter at descriptor seccomp_fd and the program's
//  archive on stdin. *argv_out is a malloc'd NULL-terminated array
//  of malloc'd strings (free with ms_argv_free, ms_argv.h). Returns MS_OK;
//  MS_ERR_INVALID (diag: the policy field that is out of range);
//  MS_ERR_NOMEM.
int ms_sandbox_argv(const ms_sandbox_policy_t *policy, int seccomp_fd,
                    char ***argv_out, ms_diag_t *diag);

//  Compile the seccomp filter (see above) to BPF in a sealed memory file.
//  Returns MS_OK with *fd a descriptor the caller closes; MS_ERR_IO or
//  MS_ERR_NOMEM (diag: what failed).
int ms_sandbox_seccomp_fd(int *fd, ms_diag_t *diag);

//  Run policy->argv in the sandbox until it ends or a limit stops it,
//  reading its output and its metrics lines (on_metrics may be NULL). On
//  MS_OK *result is filled (free its strings with ms_sandbox_result_clear)
//  and says how the program ended; a program that failed or hit a limit
//  is still MS_OK (an archive that does not unpack is exit code 125, with
//  a line on stderr). Returns MS_ERR_INVALID (diag: a bad policy field);
//  MS_ERR_IO (diag: the archive cannot be opened, or fork or pipe
//  failed); MS_ERR_NOMEM.
int ms_sandbox_run(const ms_sandbox_policy_t *policy,
                   ms_sandbox_metrics_fn on_metrics, void *arg,
                   ms_sandbox_result_t *result, ms_diag_t *diag);

//  Free a result's strings; the struct is zeroed.
void ms_sandbox_result_clear(ms_sandbox_result_t *result);

#ifdef __cplusplus
}
#endif

#endif
