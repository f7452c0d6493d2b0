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
*/
#include "ms_cuda_internal.h"

#include <assert.h>
#include <limits.h>

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
    MS_CUBLAS_CHECK(
        b, cuda,
        cuda->blas.sgemm(cuda->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                         trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int) n, (int) m,
                         (int) k, &alpha, bm, (int) ldb, a, (int) lda, &beta, c,
                         (int) ldc));
    ms_cuda_prof_mark(b, trans_a ? "gemm_TN" : trans_b ? "gemm_NT" : "gemm_NN",
                      m, n, k);
    return MS_OK;
}
