/*  =========================================================================
    ms_platform - what a run ran on: backend, CPU, BLAS kernel, build,
    libc, and the node's calibration figure

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A plain value type of fixed char arrays and numbers, so it can be
    copied into a result and printed. The backend fingerprint that results
    record (DESIGN.md "The training engine": backend, device or CPU model,
    BLAS kernel, library versions) is hashed elsewhere from the fields that
    ms_platform_fields lists, in that order; calibration_gflops is a speed
    measurement, differs between runs, and is never part of it.

    Bit-identical results are promised for an identical fingerprint: the
    same CPU features and BLAS core type select the same kernels, and the
    same build flags (with -ffp-contract=off) the same arithmetic.
*/
#ifndef MS_PLATFORM_H
#define MS_PLATFORM_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_backend.h"
#include "ms_err.h"

//  The engine's numerics version: which arithmetic this build's engine
//  does, in the fingerprint's build field ("0.9.0 numerics 2"). The rule:
//  any change that changes a bit of what a training run computes (an
//  init draw, a reduction's order, an op's formula, a new op's output,
//  the optimizer's scalars) bumps it, in the same commit. Two builds of
//  one release with different numbers then have different fingerprints,
//  so verification compares their results with the tolerance it uses
//  across fingerprints rather than calling an honest pair a bit-for-bit
//  mismatch. ms_golden_test pins the numbers of this version (a plain,
//  a residual layer-norm and a batch-norm rezero network with warm-up and
//  clipping) and fails, saying to bump this, when they change. History:
//  1 the engine before the version existed (not recorded in
//  fingerprints); 2 residual blocks, layer and batch norm, rezero,
//  warm-up, clipping (plain networks' bits unchanged from 1).
#define MS_ENGINE_NUMERICS_VERSION 2

typedef struct {
    char backend[16];          // "cpu", "cuda"
    char cpu_model[128];       // /proc/cpuinfo "model name", or "unknown"
    char cpu_flags[128];       // relevant flags present, space-separated,
                               // in a fixed order: "avx avx2 fma avx512f"
    char blas[64];             // "OpenBLAS 0.3.21"
    char blas_config[256];     // openblas_get_config() in full
    char blas_core[32];        // openblas_get_corename(): "Haswell"
    int32_t blas_threads;      // BLAS threads in use
    char build[32];            // MESHSWEEP_VERSION " numerics "
                               // MS_ENGINE_NUMERICS_VERSION
    char compiler[64];         // MESHSWEEP_COMPILER: "GNU 12.2.0"
    char build_flags[256];     // MESHSWEEP_BUILD_FLAGS
    char libc[32];             // "glibc 2.36"
    double calibration_gflops; // single-thread SGEMM GFLOP/s (not hashed)

    // The GPU of a cuda backend ("" and 0 on cpu; ms_backend_info).
    char gpu[128];                  // GPU name: "NVIDIA H200"
    char gpu_cc[8];                 // compute capability: "9.0"
    char gpu_driver[16];            // CUDA driver version: "13.0"
    char cuda_runtime[16];          // CUDA runtime version: "13.0"
    char cublas[16];                // cuBLAS version: "13.0.2"
    bool tf32;                      // GEMMs may use TF32 tensor cores
    int64_t cublas_workspace_bytes; // cuBLAS workspace
    bool tiny_gemm;                 // own small-GEMM kernel for tiny products
} ms_platform_t;

//  Fill *out for backend (NULL: cpu) from /proc/cpuinfo, OpenBLAS, the
//  build and libc, and for a cuda backend its GPU (ms_backend_info).
//  calibration_gflops is left 0: call
//  ms_platform_calibrate. Always returns MS_OK (unreadable facts read
//  "unknown").
int ms_platform_detect(ms_platform_t *out, const ms_backend_t *backend);

//  Measure single-thread SGEMM speed (256 x 256 x 256, best of several
//  runs, well under a second) and return GFLOP/s. Sets OpenBLAS to one
//  thread for the measurement and restores the previous count.
double ms_platform_calibrate(void);

//  The CPUs this process may use: the CPUs of its affinity mask
//  (sched_getaffinity: taskset, cpusets, Slurm), lowered to the CPU quota
//  of its cgroup v2 and the cgroups above it (cpu.max "QUOTA PERIOD",
//  rounded up: docker --cpus, Kubernetes limits, systemd CPUQuota=), at
//  least 1. The default worker count ("one per core") uses this, so a
//  node in a 4-CPU container on a 64-core host starts 4 workers, not 64.
//  Never fails: what cannot be read does not lower the count.
int ms_platform_usable_cpus(void);

//  Call fn(arg, name, value) for each fingerprint field in a fixed order:
//  backend, cpu_model, cpu_flags, blas, blas_core, blas_threads, build,
//  compiler, build_flags, libc (blas_config is covered by blas and
//  blas_core; calibration_gflops is not a fingerprint field); then, only
//  when backend is "cuda", gpu, gpu_cc, gpu_driver, cuda_runtime, cublas,
//  tf32 ("on" or "off"), cublas_workspace_bytes (decimal) and gemm
//  ("cublas+small": the own small-GEMM kernel for tiny products, or
//  "cublas"; the two give different bits), so a CPU
//  fingerprint is the same as before the CUDA backend existed.
typedef void (*ms_platform_field_fn)(void *arg, const char *name,
                                     const char *value);
void ms_platform_fields(const ms_platform_t *self, ms_platform_field_fn fn,
                        void *arg);

#endif
