/*  =========================================================================
    ms_backend_internal - the backend object, shared by ms_backend.c and
    the backends' op files (core/cpu, core/cuda); not for other modules

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#ifndef MS_BACKEND_INTERNAL_H
#define MS_BACKEND_INTERNAL_H

#include "ms_backend.h"

#define MS_BACKEND_TEXT_MAX 512

typedef struct ms_cuda ms_cuda_t; // core/cuda/ms_cuda_internal.h

struct ms_backend {
    const ms_backend_ops_t *ops;          // the operation table (static)
    int n_threads;                        // BLAS threads
    ms_cuda_t *cuda;                      // CUDA state, NULL on cpu
    char note[MS_BACKEND_TEXT_MAX];       // why auto chose cpu, or ""
    char last_error[MS_BACKEND_TEXT_MAX]; // last backend error, or ""
};

#endif
