/*  =========================================================================
    ms_cuda_internal - the CUDA backend's state and checked-call macros,
    shared by the .cu files of core/cuda only

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#ifndef MS_CUDA_INTERNAL_H
#define MS_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

//  The core headers are C: their functions have C linkage.
extern "C" {
#include "ms_backend_internal.h"
}
#include "ms_cuda.h"

//  cuBLAS entry points, resolved with dlsym (see ms_cuda_device.cu).
typedef struct {
    void *lib;                                      // dlopen handle
    decltype(&cublasCreate_v2) create;              // cublasCreate
    decltype(&cublasDestroy_v2) destroy;            // cublasDestroy
    decltype(&cublasSetStream_v2) set_stream;       // cublasSetStream
    decltype(&cublasSetMathMode) set_math_mode;     // cublasSetMathMode
    decltype(&cublasSetWorkspace_v2) set_workspace; // cublasSetWorkspace
    decltype(&cublasGetVersion_v2) get_version;     // cublasGetVersion
    decltype(&cublasGetStatusString) status_string; // cublasGetStatusString
    decltype(&cublasSgemm_v2) sgemm;                // cublasSgemm
} ms_cublas_api_t;

typedef struct ms_cuda_prof ms_cuda_prof_t; // ms_cuda_profile.cu

struct ms_cuda {
    int device;             // ordinal
    cudaStream_t stream;    // every operation goes here, in order
    cublasHandle_t handle;  // bound to stream and workspace
    ms_cublas_api_t blas;   // the loaded library
    void *workspace;        // cuBLAS workspace (device)
    size_t workspace_bytes; // its size
    bool tf32;              // CUBLAS_TF32_TENSOR_OP_MATH when true
    bool tiny_gemm;         // own kernel for tiny GEMMs (ms_cuda_gemm.cu)
    ms_backend_info_t info; // device facts, filled at open
    ms_cuda_prof_t *prof;   // profiler (MESHSWEEP_CUDA_PROFILE=1), or NULL
};

//  Profiler (ms_cuda_profile.cu). open: when MESHSWEEP_CUDA_PROFILE=1,
//  allocate its state and events (MS_OK, or MS_ERR_BACKEND / NOMEM);
//  close frees them. mark: after an op is issued, between profile_begin
//  and profile_end, record an event and the op's name and shape (no-op
//  otherwise, and during a capture).
int ms_cuda_prof_open(ms_backend_t *b);
void ms_cuda_prof_close(ms_backend_t *b);
void ms_cuda_prof_mark(ms_backend_t *b, const char *op, int64_t d0, int64_t d1,
                       int64_t d2);
//  Count a captured graph's nodes by type for the report (profiling on).
void ms_cuda_prof_graph(ms_backend_t *b, cudaGraph_t graph);

//  Record a failed call (what, at file:line: why) as the backend's last
//  error, print it on stderr once per backend, return MS_ERR_BACKEND.
int ms_cuda_fail(ms_backend_t *b, const char *what, const char *file, int line,
                 const char *why);

//  Check a CUDA runtime call: on failure, return MS_ERR_BACKEND from the
//  calling function with the call, file, line and cudaGetErrorString.
#define MS_CUDA_CHECK(b, call)                                                 \
    do {                                                                       \
        cudaError_t ms_e_ = (call);                                            \
        if (ms_e_ != cudaSuccess)                                              \
            return ms_cuda_fail((b), #call, __FILE__, __LINE__,                \
                                cudaGetErrorString(ms_e_));                    \
    } while (0)

//  Check a cuBLAS call the same way (cublasGetStatusString).
#define MS_CUBLAS_CHECK(b, cuda, call)                                         \
    do {                                                                       \
        cublasStatus_t ms_s_ = (call);                                         \
        if (ms_s_ != CUBLAS_STATUS_SUCCESS)                                    \
            return ms_cuda_fail((b), #call, __FILE__, __LINE__,                \
                                (cuda)->blas.status_string(ms_s_));            \
    } while (0)

//  Check the launch just made (bad configuration, no kernel image for
//  this device); faults inside the kernel show at a later call.
#define MS_CUDA_LAUNCHED(b, kernel)                                            \
    do {                                                                       \
        cudaError_t ms_e_ = cudaGetLastError();                                \
        if (ms_e_ != cudaSuccess)                                              \
            return ms_cuda_fail((b), "launch of " kernel, __FILE__, __LINE__,  \
                                cudaGetErrorString(ms_e_));                    \
    } while (0)

#define MS_CUDA_THREADS 256 // threads per block of the element-wise kernels

//  Blocks for n elements at MS_CUDA_THREADS per block, capped: the
//  element-wise kernels loop with a grid stride.
static inline unsigned
ms_cuda_blocks(int64_t n)
{
    int64_t blocks = (n + MS_CUDA_THREADS - 1) / MS_CUDA_THREADS;
    if (blocks > 65535)
        blocks = 65535;
    return blocks < 1 ? 1u : (unsigned) blocks;
}

#endif
