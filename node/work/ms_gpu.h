/*  =========================================================================
    ms_gpu - which workers of a node train on the GPU: the probe, the split
    and the memory budget of a GPU worker

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A node decides once, at start, which backend its workers open
    (DESIGN.md "Programs": --backend auto|cpu|cuda; issue 6: a CUDA build
    runs on a machine with no GPU, falling back to the CPU with one line
    saying why). The core backend does the detection (ms_backend_open
    "cuda", then ms_backend_info); this class runs it in a child process,
    because CUDA does not survive fork() and the node forks its workers
    after the probe: a probe in the node itself would leave every worker
    unable to use the GPU.

    Workers per process (node/work/ms_worker.c) share the GPU: each GPU worker
    has its own CUDA context and stream, and the driver time-slices them.
    `gpu_workers` says how many of the node's workers open the GPU; the
    others stay on the CPU. Its default, auto, is every worker, at most
    one per 2 GiB of the GPU's memory (a context, a dataset copy on the
    device and a network's buffers must fit in each share).

    A worker of either kind gets an equal share of its memory: host
    memory for the CPU workers, device memory (less a context's reserve)
    for the GPU workers. The scheduler claims a task only when it fits
    every kind of worker the node runs (node/work/ms_scheduler.c, "claim
    only what fits"), so any idle worker can take it.
*/
#ifndef MS_GPU_H
#define MS_GPU_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "ms_backend.h"
#include "ms_err.h"

#define MS_GPU_WORKERS_AUTO (-1)      // gpu_workers = auto
#define MS_GPU_WORKERS_MAX 4096       // the most gpu_workers one node takes
#define MS_GPU_PROBE_TIMEOUT_MS 60000 // a probe that takes longer failed
#define MS_GPU_WORKER_BYTES ((int64_t) 2 << 30)    // auto: one worker per 2 GiB
#define MS_GPU_CONTEXT_BYTES ((int64_t) 512 << 20) // a context's reserve

//  What the node runs its workers on.
typedef struct {
    const char *requested;   // "auto" | "cpu" | "cuda" (static)
    const char *gpu_backend; // what the GPU workers open: "cuda", or
                             // "cpu" when no worker uses the GPU
    int n_workers;           // all workers
    int n_gpu_workers;       // workers 0..n_gpu_workers-1 use the GPU
    bool have_gpu;           // the probe found a usable device
    ms_backend_info_t gpu;   // the device (when have_gpu)
    char note[600];          // the line the node logs once at start
                             // (the fallback and why), or ""
} ms_gpu_plan_t;

//  Parse a gpu_workers value: "auto" or a whole number 0..MS_GPU_WORKERS_MAX
//  into *out
//  (MS_GPU_WORKERS_AUTO for auto). Returns MS_OK; MS_ERR_INVALID with
//  diag ("gpu_workers": "'x' is not a whole number in 0..4096 or auto").
int ms_gpu_workers_parse(const char *text, int *out, ms_diag_t *diag);

//  Open the cuda backend in a child process (fork; ms_backend_open "cuda"
//  and ms_backend_info; report over a pipe; exit) and wait for it up to
//  timeout_ms. Returns MS_OK with *gpu filled when the cuda backend can
//  run here; MS_ERR_NODEVICE with diag saying why not (the backend's
//  reason, or how the child failed: crashed, timed out); MS_ERR_IO when
//  fork or pipe fail (diag).
//  Thread rule: any thread; it forks, so call it where forking workers
//  is safe too.
int ms_gpu_probe(ms_backend_info_t *gpu, int timeout_ms, ms_diag_t *diag);

//  Decide the plan: backend ("auto", "cpu", "cuda"; NULL = auto),
//  gpu_workers (MS_GPU_WORKERS_AUTO or 0..n_workers), n_workers >= 1 (the
//  resolved count). probe is ms_gpu_probe (tests pass a stub; NULL = no
//  probe, as if no device); it is not called for "cpu" or gpu_workers 0.
//  Returns MS_OK with *out; MS_ERR_INVALID with diag for an unknown
//  backend, gpu_workers above n_workers, gpu_workers > 0 with backend
//  cpu, or backend cuda without a usable device (diag carries the
//  probe's reason).
typedef int (*ms_gpu_probe_fn)(ms_backend_info_t *gpu, int timeout_ms,
                               ms_diag_t *diag);
int ms_gpu_plan(ms_gpu_plan_t *out, const char *backend, int gpu_workers,
                int n_workers, ms_gpu_probe_fn probe, ms_diag_t *diag);

//  Device memory one GPU worker may use: the device's memory less a
//  context's reserve per GPU worker, shared among them; 0 when the plan
//  has no GPU worker.
int64_t ms_gpu_worker_budget(const ms_gpu_plan_t *plan);

//  The plan as a JSON object for GET /api/v1/status: {requested, workers,
//  gpu_backend, gpu_workers, cpu_workers, gpu: {device, name, cc, sms,
//  memory_bytes, driver, runtime, cublas, cublas_library, tf32,
//  workspace_bytes} or null, note: the start line or null}. Caller owns it;
//  NULL when out of memory.
json_t *ms_gpu_plan_json(const ms_gpu_plan_t *plan);

#endif
