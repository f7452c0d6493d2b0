/*  =========================================================================
    ms_cpu_gemm - row-major SGEMM through OpenBLAS

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    With one BLAS thread OpenBLAS computes each element of C with one
    fixed kernel and loop order, so results are bit-identical between runs
    on one machine with one OPENBLAS_CORETYPE. Threaded OpenBLAS splits C
    by blocks of rows and columns, never along k, so it stays
    deterministic too; the platform fingerprint records the core type.
*/
#include "ms_cpu.h"

#include <assert.h>
#include <cblas.h>
#include <limits.h>

//  --------------------------------------------------------------------------
//  C = alpha op(A) op(B) + beta C.

int
ms_cpu_gemm(ms_backend_t *b, bool trans_a, bool trans_b, int64_t m, int64_t n,
            int64_t k, float alpha, const float *a, int64_t lda,
            const float *bm, int64_t ldb, float beta, float *c, int64_t ldc)
{
    (void) b;
    assert(m <= INT_MAX && n <= INT_MAX && k <= INT_MAX);
    assert(lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX);
    if (m == 0 || n == 0)
        return MS_OK;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int) m, (int) n, (int) k,
                alpha, a, (int) lda, bm, (int) ldb, beta, c, (int) ldc);
    return MS_OK;
}
