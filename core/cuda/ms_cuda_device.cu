/*  =========================================================================
    ms_cuda_device - open and close the CUDA backend: device, cuBLAS,
    stream, workspace; errors; graph capture and replay

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Linking. The same binary must start on a machine with no GPU, no
    driver and no CUDA toolkit (the Debian package is one package), and
    use the GPU where there is one. So:
      - the CUDA runtime is linked statically (libcudart_static, CMake's
        CUDA_RUNTIME_LIBRARY Static): it loads the driver (libcuda.so.1)
        itself when first called, and without one cudaGetDeviceCount
        answers "CUDA driver version is insufficient" or "no CUDA-capable
        device", which open turns into MS_ERR_NODEVICE with that text;
      - cuBLAS is loaded with dlopen("libcublas.so.<major>") at open, and
        its few entry points through dlsym. Linking libcublas.so would make
        the dynamic loader refuse to start the program where it is
        missing (no toolkit), and the static libcublas_static.a is not in
        the CUDA 13 toolkit these machines carry (pip layout) and would add
        some 100 MB to every binary. The major version is the one of the
        headers we build with: cuBLAS keeps its ABI within a major.
        MESHSWEEP_CUBLAS names another file to try first;
        /usr/local/cuda/lib64 is tried when the loader path has none.

    Determinism. One stream per backend; cuBLAS bound to it with its own
    workspace (cublasSetWorkspace), which cuBLAS needs to give the same
    bits from run to run with one stream and to be captured in a graph;
    no atomics anywhere. TF32 is off (CUBLAS_DEFAULT_MATH: float32
    products) unless MESHSWEEP_CUDA_TF32=1 or ms_backend_set_tf32; the
    fingerprint records which (ms_backend_info).

    Graphs. capture runs the caller's function between
    cudaStreamBeginCapture and cudaStreamEndCapture (thread-local mode:
    other threads of the process are not disturbed), instantiates the
    graph, and graph_launch replays it on the stream. cuBLAS's SGEMM with
    host-side alpha and beta and a fixed workspace is legal in a capture.
*/
#include "ms_cuda_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_WORKSPACE_BYTES ((size_t) 32 << 20) // cuBLAS workspace: 32 MiB

struct ms_backend_graph {
    cudaGraph_t graph;    // the recorded graph
    cudaGraphExec_t exec; // its executable instance
};

//  --------------------------------------------------------------------------
//  Record and print a failed call.

int
ms_cuda_fail(ms_backend_t *b, const char *what, const char *file, int line,
             const char *why)
{
    const char *base = strrchr(file, '/');
    bool first = b->last_error[0] == 0;
    snprintf(b->last_error, sizeof b->last_error, "%.200s at %s:%d: %.200s",
             what, base ? base + 1 : file, line, why ? why : "?");
    if (first)
        fprintf(stderr, "meshsweep: cuda: %s\n", b->last_error);
    return MS_ERR_BACKEND;
}

//  --------------------------------------------------------------------------
//  dlopen cuBLAS and resolve its entry points; diag says why not.

static int
s_load_cublas(ms_cublas_api_t *api, ms_diag_t *diag)
{
    char soname[64], fallback[128], tried[MS_DIAG_REASON_MAX / 2];
    snprintf(soname, sizeof soname, "libcublas.so.%d", CUBLAS_VER_MAJOR);
    snprintf(fallback, sizeof fallback, "/usr/local/cuda/lib64/%s", soname);
    const char *env = getenv("MESHSWEEP_CUBLAS");
    const char *names[3] = {env && *env ? env : NULL, soname, fallback};
    tried[0] = 0;
    for (int i = 0; i < 3 && !api->lib; i++) {
        if (!names[i])
            continue;
        api->lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!api->lib && !tried[0]) {
            const char *err = dlerror();
            snprintf(tried, sizeof tried, "%s", err ? err : names[i]);
        }
    }
    if (!api->lib)
        return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                                "cuda: cannot load cuBLAS (%s); install "
                                "cuBLAS %d (the CUDA toolkit's libcublas)",
                                tried, CUBLAS_VER_MAJOR);
#define S_SYM(field, name)                                                     \
    do {                                                                       \
        *(void **) &api->field = dlsym(api->lib, name);                        \
        if (!api->field)                                                       \
            return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",          \
                                    "cuda: %s has no %s", soname, name);       \
    } while (0)
    S_SYM(create, "cublasCreate_v2");
    S_SYM(destroy, "cublasDestroy_v2");
    S_SYM(set_stream, "cublasSetStream_v2");
    S_SYM(set_math_mode, "cublasSetMathMode");
    S_SYM(set_workspace, "cublasSetWorkspace_v2");
    S_SYM(get_version, "cublasGetVersion_v2");
    S_SYM(status_string, "cublasGetStatusString");
    S_SYM(sgemm, "cublasSgemm_v2");
#undef S_SYM
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  The device ordinal from MESHSWEEP_CUDA_DEVICE (0 when unset).

static int
s_device_ordinal(int *out, ms_diag_t *diag)
{
    *out = 0;
    const char *env = getenv("MESHSWEEP_CUDA_DEVICE");
    if (!env || !*env)
        return MS_OK;
    char *end = NULL;
    errno = 0;
    long v = strtol(env, &end, 10);
    if (errno || *end || v < 0 || v > 1024)
        return ms_diag_set(diag, "MESHSWEEP_CUDA_DEVICE",
                           "\"%.40s\" is not a device number (0, 1, ...)", env);
    *out = (int) v;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Set the math mode for tf32 on or off.

static int
s_math_mode(ms_backend_t *b, bool tf32)
{
    ms_cuda_t *cuda = b->cuda;
    MS_CUBLAS_CHECK(
        b, cuda,
        cuda->blas.set_math_mode(cuda->handle, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                                    : CUBLAS_DEFAULT_MATH));
    cuda->tf32 = tf32;
    cuda->info.tf32 = tf32;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Device, cuBLAS, stream, handle, workspace, facts.

static int
s_open(ms_backend_t *b, ms_diag_t *diag)
{
    ms_cuda_t *cuda = b->cuda;
    int ordinal;
    int rc = s_device_ordinal(&ordinal, diag);
    if (rc != MS_OK)
        return rc;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError(); // not sticky: clear it
        return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                                "cuda: no usable CUDA driver or device (%s)",
                                cudaGetErrorString(e));
    }
    if (n < 1)
        return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                                "cuda: no CUDA device");
    if (ordinal >= n)
        return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                                "cuda: MESHSWEEP_CUDA_DEVICE=%d but this "
                                "machine has %d device%s",
                                ordinal, n, n == 1 ? "" : "s");
    cuda->device = ordinal;
    cudaDeviceProp prop;
    e = cudaSetDevice(ordinal);
    if (e == cudaSuccess)
        e = cudaGetDeviceProperties(&prop, ordinal);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                                "cuda: device %d unusable (%s)", ordinal,
                                cudaGetErrorString(e));
    }
    if (prop.major * 10 + prop.minor < 75)
        return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                                "cuda: %s has compute capability %d.%d; "
                                "this build needs 7.5 or newer",
                                prop.name, prop.major, prop.minor);
    rc = s_load_cublas(&cuda->blas, diag);
    if (rc != MS_OK)
        return rc;

    ms_backend_info_t *info = &cuda->info;
    snprintf(info->backend, sizeof info->backend, "cuda");
    snprintf(info->device, sizeof info->device, "%.120s", prop.name);
    info->device_index = ordinal;
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->n_sms = prop.multiProcessorCount;
    info->memory_bytes = (int64_t) prop.totalGlobalMem;
    cudaDriverGetVersion(&info->driver_version);
    cudaRuntimeGetVersion(&info->runtime_version);
    Dl_info where;
    if (dladdr((void *) cuda->blas.sgemm, &where) && where.dli_fname)
        snprintf(info->blas_library, sizeof info->blas_library, "%s",
                 where.dli_fname);

    //  From here on a failure is a CUDA error with file and line.
    rc = MS_ERR_BACKEND;
    e = cudaStreamCreateWithFlags(&cuda->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        ms_cuda_fail(b, "cudaStreamCreateWithFlags", __FILE__, __LINE__,
                     cudaGetErrorString(e));
        goto fail;
    }
    {
        cublasStatus_t s = cuda->blas.create(&cuda->handle);
        if (s != CUBLAS_STATUS_SUCCESS) {
            cuda->handle = NULL;
            ms_cuda_fail(b, "cublasCreate", __FILE__, __LINE__,
                         cuda->blas.status_string(s));
            goto fail;
        }
        int version = 0;
        if (cuda->blas.get_version(cuda->handle, &version) ==
            CUBLAS_STATUS_SUCCESS)
            info->blas_version = version;
        s = cuda->blas.set_stream(cuda->handle, cuda->stream);
        if (s != CUBLAS_STATUS_SUCCESS) {
            ms_cuda_fail(b, "cublasSetStream", __FILE__, __LINE__,
                         cuda->blas.status_string(s));
            goto fail;
        }
        e = cudaMalloc(&cuda->workspace, S_WORKSPACE_BYTES);
        if (e != cudaSuccess) {
            cudaGetLastError();
            cuda->workspace = NULL;
            ms_cuda_fail(b, "cudaMalloc(workspace)", __FILE__, __LINE__,
                         cudaGetErrorString(e));
            goto fail;
        }
        cuda->workspace_bytes = S_WORKSPACE_BYTES;
        info->workspace_bytes = (int64_t) S_WORKSPACE_BYTES;
        s = cuda->blas.set_workspace(cuda->handle, cuda->workspace,
                                     cuda->workspace_bytes);
        if (s != CUBLAS_STATUS_SUCCESS) {
            ms_cuda_fail(b, "cublasSetWorkspace", __FILE__, __LINE__,
                         cuda->blas.status_string(s));
            goto fail;
        }
    }
    if (ms_cuda_prof_open(b) != MS_OK)
        goto fail;
    {
        const char *tf32 = getenv("MESHSWEEP_CUDA_TF32");
        if (s_math_mode(b, tf32 && strcmp(tf32, "1") == 0) != MS_OK)
            goto fail;
        const char *tiny = getenv("MESHSWEEP_CUDA_TINY_GEMM");
        cuda->tiny_gemm = !(tiny && strcmp(tiny, "0") == 0);
    }
    return MS_OK;
fail:
    return ms_diag_set_code(diag, rc, "backend", "cuda: %s", b->last_error);
}

//  --------------------------------------------------------------------------
//  Open: state on b, or nothing on failure.

extern "C" int
ms_cuda_open(ms_backend_t *b, ms_diag_t *diag)
{
    b->cuda = (ms_cuda_t *) calloc(1, sizeof(ms_cuda_t));
    if (!b->cuda)
        return MS_ERR_NOMEM;
    int rc = s_open(b, diag);
    if (rc != MS_OK)
        ms_cuda_close(b);
    return rc;
}

//  --------------------------------------------------------------------------
//  Close: wait for the stream, free what open made. The cuBLAS library
//  stays loaded (dlclose of it at run time is not worth the risk).

extern "C" void
ms_cuda_close(ms_backend_t *b)
{
    ms_cuda_t *cuda = b->cuda;
    if (!cuda)
        return;
    if (cuda->stream)
        cudaStreamSynchronize(cuda->stream);
    ms_cuda_prof_close(b);
    if (cuda->handle)
        cuda->blas.destroy(cuda->handle);
    if (cuda->workspace)
        cudaFree(cuda->workspace);
    if (cuda->stream)
        cudaStreamDestroy(cuda->stream);
    cudaGetLastError();
    free(cuda);
    b->cuda = NULL;
}

//  --------------------------------------------------------------------------
//  Device facts.

extern "C" void
ms_cuda_info(const ms_backend_t *b, ms_backend_info_t *out)
{
    *out = b->cuda->info;
    out->tiny_gemm = b->cuda->tiny_gemm;
}

//  --------------------------------------------------------------------------
//  TF32 on or off.

extern "C" int
ms_cuda_set_tf32(ms_backend_t *b, bool on)
{
    return s_math_mode(b, on);
}

//  --------------------------------------------------------------------------
//  Record fn's operations into a graph.

extern "C" int
ms_cuda_capture(ms_backend_t *b, int (*fn)(void *arg), void *arg,
                ms_backend_graph_t **out)
{
    *out = NULL;
    ms_cuda_t *cuda = b->cuda;
    MS_CUDA_CHECK(b, cudaStreamBeginCapture(cuda->stream,
                                            cudaStreamCaptureModeThreadLocal));
    int rc = fn(arg);
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(cuda->stream, &graph);
    if (rc != MS_OK || e != cudaSuccess) {
        if (graph)
            cudaGraphDestroy(graph);
        cudaGetLastError();
        if (rc != MS_OK)
            return rc;
        return ms_cuda_fail(b, "cudaStreamEndCapture", __FILE__, __LINE__,
                            cudaGetErrorString(e));
    }
    ms_cuda_prof_graph(b, graph);
    cudaGraphExec_t exec = NULL;
    e = cudaGraphInstantiate(&exec, graph, 0);
    if (e != cudaSuccess) {
        cudaGraphDestroy(graph);
        return ms_cuda_fail(b, "cudaGraphInstantiate", __FILE__, __LINE__,
                            cudaGetErrorString(e));
    }
    ms_backend_graph_t *g =
        (ms_backend_graph_t *) calloc(1, sizeof(ms_backend_graph_t));
    if (!g) {
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        return MS_ERR_NOMEM;
    }
    g->graph = graph;
    g->exec = exec;
    *out = g;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Replay a graph.

extern "C" int
ms_cuda_graph_launch(ms_backend_t *b, ms_backend_graph_t *graph)
{
    MS_CUDA_CHECK(b, cudaGraphLaunch(graph->exec, b->cuda->stream));
    ms_cuda_prof_mark(b, "graph_launch", 0, 0, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a graph.

extern "C" void
ms_cuda_graph_destroy(ms_backend_t *b, ms_backend_graph_t *graph)
{
    if (!graph)
        return;
    cudaStreamSynchronize(b->cuda->stream);
    cudaGraphExecDestroy(graph->exec);
    cudaGraphDestroy(graph->graph);
    cudaGetLastError();
    free(graph);
}
