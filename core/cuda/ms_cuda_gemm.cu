/*  =========================================================================
    ms_cuda_gemm - row-major SGEMM through cuBLAS

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    cuBLAS is column-major. A row-major matrix X with leading dimension ld
    is, read column-major, X^T with the same ld; so the row-major product
    C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T, which is one
    cublasSgemm with the operands swapped (B first), m and n swapped, and
    each operand's transpose flag as given: op(B)^T read column-major from
    B's buffer is B's buffer as is when trans_b is false (OP_N), its
    transpose when true (OP_T); the same for A. alpha and beta are host
    values (CUBLAS_POINTER_MODE_HOST, the default), captured by value in a
    graph. cuBLAS gives the same bits between runs on one GPU model and
    toolkit with one stream and a fixed workspace; TF32 only when enabled.

    The small-GEMM kernel (MESHSWEEP_CUDA_TINY_GEMM=1 or
    ms_backend_set_tiny_gemm; off by default until measured). cuBLAS
    takes 7-12 us of device time on the tiny products of the sklearn grid
    networks (200 x 10 x 784, 10 x 10 x 200, ...) and 55 us on 10 x 100 x
    200 (H200 profile, docs/CUDA_NOTES.md): far more than their arithmetic.
    tiny_gemm computes C = alpha op(A) op(B) + beta C row-major with one
    thread per output element in 16 x 16 tiles (a block of 256 threads),
    walking k in tiles of 32 staged in shared memory. Each operand tile is
    loaded with consecutive threads on consecutive addresses: along k for
    A untransposed and B transposed (k is their contiguous index), along
    the row (i) or column (j) index otherwise. The next k tile is loaded
    into registers before the current one is consumed, so one tile's
    global latency overlaps the previous tile's arithmetic. Each thread
    sums its products over k in ascending order from 0.0f (no split-K, no
    atomics): the same bits on every run. Out-of-range elements are
    staged as 0 and never stored; beta == 0 stores alpha * sum without
    reading C. No allocation and no sync: it captures in a graph.
    Used when m * n <= 2^17 and k <= 1024: at most 512 blocks (one wave:
    an H100/H200 SM holds 8 blocks of 256 threads, 132 SMs) and at most 32
    dependent k tiles per block (~0.2 us each, an L2 round trip partly
    hidden by the prefetch: ~6 us at worst); every GEMM of the sklearn grid
    networks at batch 200 fits (the largest, 100 x 784 x 200 and 200 x 100
    x 784). Bigger products stay with cuBLAS, whose large tiles win there.
*/
#include "ms_cuda_internal.h"

#include <assert.h>
#include <limits.h>

#define TG_T 16 // output tile: TG_T x TG_T elements, one thread each
#define TG_K 32 // k tile
#define TG_MAX_MN (1 << 17)
#define TG_MAX_K 1024

//  The tile of op(A) (TG_T rows i x TG_K columns p) and of op(B) (TG_K
//  rows p x TG_T columns j) starting at k index p0, into registers: each
//  thread loads TG_T * TG_K / 256 = 2 elements of each, element e of the
//  tile at linear index t + 256 r, decomposed so that consecutive threads
//  read consecutive addresses.
struct tg_regs {
    float a[2], b[2];
};

template <bool TA, bool TB>
__device__ __forceinline__ void
tg_load(tg_regs &r, const float *__restrict__ a, int64_t lda,
        const float *__restrict__ bm, int64_t ldb, int64_t m, int64_t n,
        int64_t k, int64_t i0, int64_t j0, int64_t p0, int t)
{
#pragma unroll
    for (int q = 0; q < 2; q++) {
        int e = t + 256 * q;
        //  A: untransposed A[i * lda + p], p fastest; transposed
        //  A[p * lda + i], i fastest.
        int ai = TA ? e % TG_T : e / TG_K, ap = TA ? e / TG_T : e % TG_K;
        int64_t i = i0 + ai, p = p0 + ap;
        r.a[q] =
            (i < m && p < k) ? (TA ? a[p * lda + i] : a[i * lda + p]) : 0.0f;
        //  B: untransposed B[p * ldb + j], j fastest; transposed
        //  B[j * ldb + p], p fastest.
        int bj = TB ? e / TG_K : e % TG_T, bp = TB ? e % TG_K : e / TG_T;
        int64_t j = j0 + bj;
        p = p0 + bp;
        r.b[q] =
            (j < n && p < k) ? (TB ? bm[j * ldb + p] : bm[p * ldb + j]) : 0.0f;
    }
}

template <bool TA, bool TB>
__device__ __forceinline__ void
tg_store(const tg_regs &r, float (*sa)[TG_K + 1], float (*sb)[TG_T + 1], int t)
{
#pragma unroll
    for (int q = 0; q < 2; q++) {
        int e = t + 256 * q;
        int ai = TA ? e % TG_T : e / TG_K, ap = TA ? e / TG_T : e % TG_K;
        sa[ai][ap] = r.a[q];
        int bj = TB ? e / TG_K : e % TG_T, bp = TB ? e % TG_K : e / TG_T;
        sb[bp][bj] = r.b[q];
    }
}

//  One block per TG_T x TG_T tile of C; thread (x, y) owns C[i0 + y, j0 +
//  x] (x fastest: consecutive threads store consecutive elements of a row).
template <bool TA, bool TB>
__global__ void __launch_bounds__(256)
    tiny_gemm(int64_t m, int64_t n, int64_t k, float alpha,
              const float *__restrict__ a, int64_t lda,
              const float *__restrict__ bm, int64_t ldb, float beta,
              float *__restrict__ c, int64_t ldc)
{
    __shared__ float sa[TG_T][TG_K + 1]; // op(A) tile, [i][p]
    __shared__ float sb[TG_K][TG_T + 1]; // op(B) tile, [p][j]
    int tx = threadIdx.x, ty = threadIdx.y, t = ty * TG_T + tx;
    int64_t i0 = (int64_t) blockIdx.y * TG_T, j0 = (int64_t) blockIdx.x * TG_T;
    float acc = 0.0f;
    tg_regs r;
    tg_load<TA, TB>(r, a, lda, bm, ldb, m, n, k, i0, j0, 0, t);
    for (int64_t p0 = 0; p0 < k; p0 += TG_K) {
        tg_store<TA, TB>(r, sa, sb, t);
        __syncthreads();
        if (p0 + TG_K < k) // the next tile in flight while this one is used
            tg_load<TA, TB>(r, a, lda, bm, ldb, m, n, k, i0, j0, p0 + TG_K, t);
            //  In ascending p. Past k both tiles hold 0, so the tail adds
            //  exact zeros (0 * 0); rows past m and columns past n are never
            //  stored.
#pragma unroll
        for (int p = 0; p < TG_K; p++)
            acc += sa[ty][p] * sb[p][tx];
        __syncthreads();
    }
    int64_t i = i0 + ty, j = j0 + tx;
    if (i < m && j < n) {
        float *cij = c + i * ldc + j;
        *cij = beta == 0.0f ? alpha * acc : alpha * acc + beta * *cij;
    }
}

//  Whether the product is small enough for tiny_gemm (see the top).
static bool
tg_fits(int64_t m, int64_t n, int64_t k)
{
    return m * n <= TG_MAX_MN && k <= TG_MAX_K;
}

extern "C" void
ms_cuda_set_tiny_gemm(ms_backend_t *b, bool on)
{
    b->cuda->tiny_gemm = on;
}

//  --------------------------------------------------------------------------
//  C = alpha op(A) op(B) + beta C.

extern "C" int
ms_cuda_gemm(ms_backend_t *b, bool trans_a, bool trans_b, int64_t m, int64_t n,
             int64_t k, float alpha, const float *a, int64_t lda,
             const float *bm, int64_t ldb, float beta, float *c, int64_t ldc)
{
    assert(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX);
    assert(lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX);
    if (m == 0 || n == 0)
        return MS_OK;
    ms_cuda_t *cuda = b->cuda;
    if (cuda->tiny_gemm && tg_fits(m, n, k)) {
        dim3 grid((unsigned) ((n + TG_T - 1) / TG_T),
                  (unsigned) ((m + TG_T - 1) / TG_T));
        dim3 block(TG_T, TG_T);
        if (trans_a && trans_b)
            tiny_gemm<true, true><<<grid, block, 0, cuda->stream>>>(
                m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc);
        else if (trans_a)
            tiny_gemm<true, false><<<grid, block, 0, cuda->stream>>>(
                m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc);
        else if (trans_b)
            tiny_gemm<false, true><<<grid, block, 0, cuda->stream>>>(
                m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc);
        else
            tiny_gemm<false, false><<<grid, block, 0, cuda->stream>>>(
                m, n, k, alpha, a, lda, bm, ldb, beta, c, ldc);
        MS_CUDA_LAUNCHED(b, "tiny_gemm");
        ms_cuda_prof_mark(b,
                          trans_a   ? (trans_b ? "tgemm_TT" : "tgemm_TN")
                          : trans_b ? "tgemm_NT"
                                    : "tgemm_NN",
                          m, n, k);
        return MS_OK;
    }
    MS_CUBLAS_CHECK(
        b, cuda,
        cuda->blas.sgemm(cuda->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                         trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int) n, (int) m,
                         (int) k, &alpha, bm, (int) ldb, a, (int) lda, &beta, c,
                         (int) ldc));
    ms_cuda_prof_mark(b,
                      trans_a   ? "gemm_TN"
                      : trans_b ? "gemm_NT"
                                : "gemm_NN",
                      m, n, k);
    return MS_OK;
}
