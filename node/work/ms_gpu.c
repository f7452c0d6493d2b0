/*  =========================================================================
    ms_gpu - the node's GPU probe, worker split and GPU memory budget

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    See ms_gpu.h for why the probe runs in a child. The child writes one
    fixed-size message (the return code, the info and the diag) to a pipe
    and exits with _exit; the parent polls the pipe up to the timeout,
    then kills and reaps the child whatever happened, so a driver that
    hangs in its initialisation cannot hang the node's start.
*/
#include "ms_gpu.h"

#include "ms_clock.h"
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

//  What the probe child sends back.
typedef struct {
    int rc;                // ms_backend_open's return
    ms_backend_info_t gpu; // ms_backend_info of the backend it opened
    ms_diag_t diag;        // ms_backend_open's diag
} s_probe_msg_t;

//  --------------------------------------------------------------------------
//  Parse a gpu_workers value.

int
ms_gpu_workers_parse(const char *text, int *out, ms_diag_t *diag)
{
    if (text && strcmp(text, "auto") == 0) {
        *out = MS_GPU_WORKERS_AUTO;
        return MS_OK;
    }
    char *end = NULL;
    errno = 0;
    long v = text ? strtol(text, &end, 10) : -1;
    if (!text || *text < '0' || *text > '9' || errno || *end || v < 0 ||
        v > MS_GPU_WORKERS_MAX)
        return ms_diag_set(diag, "gpu_workers",
                           "'%.100s' is not a whole number in 0..%d or auto",
                           text ? text : "", MS_GPU_WORKERS_MAX);
    *out = (int) v;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Monotonic milliseconds.

static int64_t
s_mono_ms(void)
{
    return ms_clock_mono_ms();
}

//  --------------------------------------------------------------------------
//  Read the child's message, up to deadline (monotonic ms); true when
//  the whole message arrived.

static bool
s_read_msg(int fd, s_probe_msg_t *msg, int64_t deadline)
{
    char *p = (char *) msg;
    size_t got = 0;
    while (got < sizeof *msg) {
        int64_t left = deadline - s_mono_ms();
        if (left <= 0)
            return false;
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int n = poll(&pfd, 1, left > 1000 ? 1000 : (int) left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        if (n == 0)
            continue;
        ssize_t r = read(fd, p + got, sizeof *msg - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        got += (size_t) r;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Probe the cuda backend in a child process.

int
ms_gpu_probe(ms_backend_info_t *gpu, int timeout_ms, ms_diag_t *diag)
{
    memset(gpu, 0, sizeof *gpu);
    int fds[2];
    if (pipe(fds) != 0)
        return ms_diag_set_code(diag, MS_ERR_IO, "backend",
                                "GPU probe: pipe: %s", strerror(errno));
    fflush(NULL); // no buffered output duplicated into the child
    pid_t pid = fork();
    if (pid < 0) {
        int err = errno;
        close(fds[0]);
        close(fds[1]);
        return ms_diag_set_code(diag, MS_ERR_IO, "backend",
                                "GPU probe: fork: %s", strerror(err));
    }
    if (pid == 0) {
        close(fds[0]);
        s_probe_msg_t msg;
        memset(&msg, 0, sizeof msg);
        ms_diag_clear(&msg.diag);
        ms_backend_t *backend = NULL;
        msg.rc = ms_backend_open(&backend, "cuda", 1, &msg.diag);
        if (msg.rc == MS_OK)
            msg.rc = ms_backend_info(backend, &msg.gpu);
        ms_backend_destroy(&backend);
        const char *p = (const char *) &msg;
        size_t left = sizeof msg;
        while (left > 0) {
            ssize_t w = write(fds[1], p, left);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0)
                break;
            p += w;
            left -= (size_t) w;
        }
        _exit(0);
    }
    close(fds[1]);
    s_probe_msg_t *msg = calloc(1, sizeof *msg);
    bool got = msg && s_read_msg(fds[0], msg, s_mono_ms() + timeout_ms);
    close(fds[0]);
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == 0) {
        kill(pid, SIGKILL); // hung in the driver, or slow to exit
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    int rc;
    if (!msg)
        rc = MS_ERR_NOMEM;
    else if (got && msg->rc == MS_OK) {
        *gpu = msg->gpu;
        rc = MS_OK;
    } else if (got) {
        msg->diag.reason[sizeof msg->diag.reason - 1] = 0;
        rc = ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend", "%s",
                              msg->diag.reason[0] ? msg->diag.reason
                                                  : ms_strerror(msg->rc));
    } else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL)
        rc = ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                              "the GPU probe crashed (signal %d)",
                              WTERMSIG(status));
    else
        rc = ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                              "the GPU probe gave no answer in %d s",
                              timeout_ms / 1000);
    free(msg);
    return rc;
}

//  --------------------------------------------------------------------------
//  Decide which workers use the GPU.

int
ms_gpu_plan(ms_gpu_plan_t *out, const char *backend, int gpu_workers,
            int n_workers, ms_gpu_probe_fn probe, ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    out->n_workers = n_workers < 1 ? 1 : n_workers;
    out->gpu_backend = "cpu";
    if (!backend || strcmp(backend, "auto") == 0)
        out->requested = "auto";
    else if (strcmp(backend, "cpu") == 0)
        out->requested = "cpu";
    else if (strcmp(backend, "cuda") == 0)
        out->requested = "cuda";
    else
        return ms_diag_set(diag, "backend",
                           "unknown backend '%s' (expected auto, cpu or cuda)",
                           backend);
    if (gpu_workers < MS_GPU_WORKERS_AUTO)
        return ms_diag_set(diag, "gpu_workers", "must be 0..%d or auto, not %d",
                           MS_GPU_WORKERS_MAX, gpu_workers);
    if (gpu_workers > out->n_workers)
        return ms_diag_set(
            diag, "gpu_workers", "%d is more than the node's %d worker%s",
            gpu_workers, out->n_workers, out->n_workers == 1 ? "" : "s");
    bool cpu = strcmp(out->requested, "cpu") == 0;
    if (cpu && gpu_workers > 0)
        return ms_diag_set(diag, "gpu_workers",
                           "%d GPU workers with backend cpu (use backend "
                           "auto or cuda, or gpu_workers 0)",
                           gpu_workers);
    if (cpu || gpu_workers == 0)
        return MS_OK; // every worker on the CPU, as asked: nothing to say

    ms_diag_t why;
    ms_diag_clear(&why);
    int rc = probe ? probe(&out->gpu, MS_GPU_PROBE_TIMEOUT_MS, &why)
                   : ms_diag_set_code(&why, MS_ERR_NODEVICE, "backend",
                                      "no GPU probe");
    if (rc != MS_OK) {
        memset(&out->gpu, 0, sizeof out->gpu);
        if (strcmp(out->requested, "cuda") == 0) {
            //  The backend's reasons start with "cuda: " already.
            const char *reason = why.reason[0] ? why.reason : ms_strerror(rc);
            bool named = strncmp(reason, "cuda: ", 6) == 0;
            return ms_diag_set_code(diag, MS_ERR_INVALID, "backend",
                                    "%s%s (use --backend auto or cpu)",
                                    named ? "" : "cuda: ", reason);
        }
        snprintf(out->note, sizeof out->note,
                 "backend auto: no usable GPU (%s); all %d worker%s train "
                 "on the CPU",
                 why.reason[0] ? why.reason : ms_strerror(rc), out->n_workers,
                 out->n_workers == 1 ? "" : "s");
        return MS_OK;
    }
    out->have_gpu = true;
    out->gpu_backend = "cuda";
    int n = gpu_workers;
    if (n == MS_GPU_WORKERS_AUTO) {
        int64_t fit = out->gpu.memory_bytes / MS_GPU_WORKER_BYTES;
        n = fit < 1 ? 1 : fit < out->n_workers ? (int) fit : out->n_workers;
    }
    out->n_gpu_workers = n;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Device memory of one GPU worker.

int64_t
ms_gpu_worker_budget(const ms_gpu_plan_t *plan)
{
    if (!plan->have_gpu || plan->n_gpu_workers < 1)
        return 0;
    int64_t avail = plan->gpu.memory_bytes -
                    (int64_t) plan->n_gpu_workers * MS_GPU_CONTEXT_BYTES;
    return avail > 0 ? avail / plan->n_gpu_workers : 0;
}

//  --------------------------------------------------------------------------
//  The plan for /status.

json_t *
ms_gpu_plan_json(const ms_gpu_plan_t *plan)
{
    json_t *gpu = json_null();
    if (plan->have_gpu) {
        const ms_backend_info_t *g = &plan->gpu;
        char cc[16], driver[16], runtime[16], cublas[24];
        snprintf(cc, sizeof cc, "%d.%d", (int) g->cc_major, (int) g->cc_minor);
        snprintf(driver, sizeof driver, "%d.%d", (int) g->driver_version / 1000,
                 (int) g->driver_version % 1000 / 10);
        snprintf(runtime, sizeof runtime, "%d.%d",
                 (int) g->runtime_version / 1000,
                 (int) g->runtime_version % 1000 / 10);
        snprintf(
            cublas, sizeof cublas, "%d.%d.%d", (int) g->blas_version / 10000,
            (int) g->blas_version / 100 % 100, (int) g->blas_version % 100);
        gpu = json_pack("{s:i, s:s, s:s, s:i, s:I, s:s, s:s, s:s, s:s, s:b, "
                        "s:I}",
                        "device", (json_int_t) g->device_index, "name",
                        g->device, "cc", cc, "sms", (json_int_t) g->n_sms,
                        "memory_bytes", (json_int_t) g->memory_bytes, "driver",
                        driver, "runtime", runtime, "cublas", cublas,
                        "cublas_library", g->blas_library, "tf32", g->tf32,
                        "workspace_bytes", (json_int_t) g->workspace_bytes);
        if (!gpu)
            return NULL;
    }
    return json_pack("{s:s, s:s, s:i, s:i, s:i, s:o, s:o}", "requested",
                     plan->requested ? plan->requested : "auto", "gpu_backend",
                     plan->gpu_backend ? plan->gpu_backend : "cpu", "workers",
                     (json_int_t) plan->n_workers, "gpu_workers",
                     (json_int_t) plan->n_gpu_workers, "cpu_workers",
                     (json_int_t) (plan->n_workers - plan->n_gpu_workers),
                     "gpu", gpu, "note",
                     plan->note[0] ? json_string(plan->note) : json_null());
}
