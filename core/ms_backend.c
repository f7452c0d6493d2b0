/*  =========================================================================
    ms_backend - backend construction and lookup by name

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_backend.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

#include "ms_cpu.h"

struct ms_backend {
    const ms_backend_ops_t *ops; // the operation table (static)
    int n_threads;               // BLAS threads
};

//  The CPU backend: OpenBLAS plus the loops in core/cpu/.
static const ms_backend_ops_t s_cpu_ops = {
    .name = "cpu",
    .host_memory = true,
    .alloc = ms_cpu_alloc,
    .free_buf = ms_cpu_free_buf,
    .upload = ms_cpu_upload,
    .download = ms_cpu_download,
    .copy = ms_cpu_copy,
    .gemm = ms_cpu_gemm,
    .bias_act_forward = ms_cpu_bias_act_forward,
    .act_backward = ms_cpu_act_backward,
    .mul = ms_cpu_mul,
    .col_sum = ms_cpu_col_sum,
    .softmax_xent = ms_cpu_softmax_xent,
    .mse = ms_cpu_mse,
    .optim_step = ms_cpu_optim_step,
};

//  --------------------------------------------------------------------------
//  New CPU backend with n_threads BLAS threads.

ms_backend_t *
ms_backend_cpu_new(int n_threads)
{
    ms_backend_t *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->ops = &s_cpu_ops;
    self->n_threads = n_threads < 1 ? 1 : n_threads;
    openblas_set_num_threads(self->n_threads);
    return self;
}

//  --------------------------------------------------------------------------
//  Open a backend by name.

int
ms_backend_open(ms_backend_t **out, const char *name, int n_threads,
                ms_diag_t *diag)
{
    *out = NULL;
    if (!name || strcmp(name, "auto") == 0 || strcmp(name, "cpu") == 0) {
        //  "auto": no CUDA backend is built yet, so auto means cpu.
        *out = ms_backend_cpu_new(n_threads);
        return *out ? MS_OK : MS_ERR_NOMEM;
    }
    if (strcmp(name, "cuda") == 0)
        return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                                "cuda: this build has no CUDA backend");
    return ms_diag_set(diag, "backend",
                       "unknown backend \"%s\" (known: auto, cpu, cuda)", name);
}

//  --------------------------------------------------------------------------
//  Free a backend.

void
ms_backend_destroy(ms_backend_t **self_p)
{
    if (self_p && *self_p) {
        free(*self_p);
        *self_p = NULL;
    }
}

//  --------------------------------------------------------------------------
//  Backend name.

const char *
ms_backend_name(const ms_backend_t *self)
{
    return self->ops->name;
}

//  --------------------------------------------------------------------------
//  Operation table.

const ms_backend_ops_t *
ms_backend_ops(const ms_backend_t *self)
{
    return self->ops;
}

//  --------------------------------------------------------------------------
//  BLAS threads.

int
ms_backend_threads(const ms_backend_t *self)
{
    return self->n_threads;
}
