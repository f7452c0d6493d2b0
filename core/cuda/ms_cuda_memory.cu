/*  =========================================================================
    ms_cuda_memory - CUDA backend buffers, copies, and the gather of
    minibatch rows by a device index vector

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Buffers are cudaMalloc'd (256-byte aligned) and zeroed on the stream.
    upload is cudaMemcpyAsync from pageable host memory: CUDA copies the
    source to a staging buffer before it returns, so the caller may reuse
    it at once, and the transfer is ordered with the operations around it
    (graph replays included). download waits for the stream.
*/
#include "ms_cuda_internal.h"

//  --------------------------------------------------------------------------
//  Zeroed device memory; NULL when it runs out (or on any CUDA error, which
//  is then the last error).

extern "C" void *
ms_cuda_alloc(ms_backend_t *b, size_t n_bytes)
{
    size_t size = (n_bytes + 255) / 256 * 256;
    if (size == 0)
        size = 256;
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, size);
    if (e != cudaSuccess) {
        cudaGetLastError(); // not sticky: clear it for the next check
        if (e != cudaErrorMemoryAllocation)
            ms_cuda_fail(b, "cudaMalloc", __FILE__, __LINE__,
                         cudaGetErrorString(e));
        return NULL;
    }
    e = cudaMemsetAsync(p, 0, size, b->cuda->stream);
    if (e != cudaSuccess) {
        ms_cuda_fail(b, "cudaMemsetAsync", __FILE__, __LINE__,
                     cudaGetErrorString(e));
        cudaFree(p);
        return NULL;
    }
    return p;
}

//  --------------------------------------------------------------------------
//  Free a buffer (cudaFree waits for the work that may use it).

extern "C" void
ms_cuda_free_buf(ms_backend_t *b, void *buf)
{
    if (!buf)
        return;
    cudaError_t e = cudaFree(buf);
    if (e != cudaSuccess)
        ms_cuda_fail(b, "cudaFree", __FILE__, __LINE__, cudaGetErrorString(e));
}

//  --------------------------------------------------------------------------
//  Host to device, on the stream.

extern "C" int
ms_cuda_upload(ms_backend_t *b, void *dst, const void *src, size_t n_bytes)
{
    if (n_bytes == 0)
        return MS_OK;
    MS_CUDA_CHECK(b, cudaMemcpyAsync(dst, src, n_bytes, cudaMemcpyHostToDevice,
                                     b->cuda->stream));
    ms_cuda_prof_mark(b, "upload", (int64_t) n_bytes, 0, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Device to host: waits until dst holds the data.

extern "C" int
ms_cuda_download(ms_backend_t *b, void *dst, const void *src, size_t n_bytes)
{
    if (n_bytes == 0)
        return MS_OK;
    MS_CUDA_CHECK(b, cudaMemcpyAsync(dst, src, n_bytes, cudaMemcpyDeviceToHost,
                                     b->cuda->stream));
    MS_CUDA_CHECK(b, cudaStreamSynchronize(b->cuda->stream));
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Device to device, on the stream.

extern "C" int
ms_cuda_copy(ms_backend_t *b, void *dst, const void *src, size_t n_bytes)
{
    if (n_bytes == 0 || dst == src)
        return MS_OK;
    MS_CUDA_CHECK(b,
                  cudaMemcpyAsync(dst, src, n_bytes, cudaMemcpyDeviceToDevice,
                                  b->cuda->stream));
    ms_cuda_prof_mark(b, "copy", (int64_t) n_bytes, 0, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  dst row i = src row idx[first + i] (or first + i), in units of T (4 or
//  16 bytes); one thread per unit, grid-stride.

template <typename T>
static __global__ void
gather_kernel(int64_t rows, int64_t cols, const T *src, const int64_t *idx,
              const ms_step_cursor_t *cursor, T *dst)
{
    int64_t first = cursor ? cursor->first_row : 0;
    int64_t n = rows * cols;
    for (int64_t k = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; k < n;
         k += (int64_t) gridDim.x * blockDim.x) {
        int64_t i = k / cols, j = k - i * cols;
        int64_t r = idx ? idx[first + i] : first + i;
        dst[k] = src[r * cols + j];
    }
}

//  --------------------------------------------------------------------------
//  Gather rows; 16-byte units when the rows allow.

extern "C" int
ms_cuda_gather(ms_backend_t *b, int64_t rows, int64_t cols, const void *src,
               const int64_t *idx, const ms_step_cursor_t *cursor, void *dst)
{
    if (rows <= 0 || cols <= 0)
        return MS_OK;
    cudaStream_t stream = b->cuda->stream;
    bool wide =
        cols % 4 == 0 && (uintptr_t) src % 16 == 0 && (uintptr_t) dst % 16 == 0;
    if (wide) {
        int64_t c4 = cols / 4;
        gather_kernel<uint4>
            <<<ms_cuda_blocks(rows * c4), MS_CUDA_THREADS, 0, stream>>>(
                rows, c4, (const uint4 *) src, idx, cursor, (uint4 *) dst);
    } else
        gather_kernel<uint32_t>
            <<<ms_cuda_blocks(rows * cols), MS_CUDA_THREADS, 0, stream>>>(
                rows, cols, (const uint32_t *) src, idx, cursor,
                (uint32_t *) dst);
    MS_CUDA_LAUNCHED(b, "gather_kernel");
    ms_cuda_prof_mark(b, "gather", rows, cols, 0);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  gather_kernel for the rows of x (units of T) and, in the same grid, of
//  the labels or targets (one 32-bit word per row): threads k < rows *
//  cols take x, the next rows take y.

template <typename T>
static __global__ void
gather_xy_kernel(int64_t rows, int64_t cols, const T *x_src,
                 const uint32_t *y_src, const int64_t *idx,
                 const ms_step_cursor_t *cursor, T *x_dst, uint32_t *y_dst)
{
    int64_t first = cursor ? cursor->first_row : 0;
    int64_t nx = rows * cols, n = nx + rows;
    for (int64_t k = blockIdx.x * (int64_t) blockDim.x + threadIdx.x; k < n;
         k += (int64_t) gridDim.x * blockDim.x) {
        if (k < nx) {
            int64_t i = k / cols, j = k - i * cols;
            int64_t r = idx ? idx[first + i] : first + i;
            x_dst[k] = x_src[r * cols + j];
        } else {
            int64_t i = k - nx;
            y_dst[i] = y_src[idx ? idx[first + i] : first + i];
        }
    }
}

//  --------------------------------------------------------------------------
//  Gather a minibatch's rows of x and y in one launch.

extern "C" int
ms_cuda_gather_xy(ms_backend_t *b, int64_t rows, int64_t cols,
                  const float *x_src, const void *y_src, const int64_t *idx,
                  const ms_step_cursor_t *cursor, float *x_dst, void *y_dst)
{
    if (rows <= 0 || cols <= 0)
        return MS_OK;
    cudaStream_t stream = b->cuda->stream;
    bool wide = cols % 4 == 0 && (uintptr_t) x_src % 16 == 0 &&
                (uintptr_t) x_dst % 16 == 0;
    if (wide) {
        int64_t c4 = cols / 4;
        gather_xy_kernel<uint4>
            <<<ms_cuda_blocks(rows * c4 + rows), MS_CUDA_THREADS, 0, stream>>>(
                rows, c4, (const uint4 *) x_src, (const uint32_t *) y_src, idx,
                cursor, (uint4 *) x_dst, (uint32_t *) y_dst);
    } else
        gather_xy_kernel<uint32_t><<<ms_cuda_blocks(rows * cols + rows),
                                     MS_CUDA_THREADS, 0, stream>>>(
            rows, cols, (const uint32_t *) x_src, (const uint32_t *) y_src, idx,
            cursor, (uint32_t *) x_dst, (uint32_t *) y_dst);
    MS_CUDA_LAUNCHED(b, "gather_xy_kernel");
    ms_cuda_prof_mark(b, "gather_xy", rows, cols, 0);
    return MS_OK;
}
