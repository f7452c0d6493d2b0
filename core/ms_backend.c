/*  =========================================================================
    ms_backend - backend construction and lookup by name

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    "auto" tries cuda first when this build has it: a node with a GPU
    trains on it, one without trains on the CPU, and the same binary runs
    on both. The CUDA runtime is linked statically and cuBLAS is loaded
    with dlopen (core/cuda/ms_cuda_device.cu says why), so opening cuda on
    a machine without driver, device or toolkit fails cleanly with a
    reason, which auto keeps in the note.
*/
#include "ms_backend.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_backend_internal.h"
#include "ms_cpu.h"
#if defined(MESHSWEEP_HAVE_CUDA)
#include "ms_cuda.h"
#endif

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
    .gather = ms_cpu_gather,
    .batch_end = ms_cpu_batch_end,
    .gather_xy = ms_cpu_gather_xy,
    .act_backward_col_sum = ms_cpu_act_backward_col_sum,
    .train_loss = ms_cpu_train_loss,
    .optim_all = ms_cpu_optim_all,
    .layer_norm_forward = ms_cpu_layer_norm_forward,
    .layer_norm_backward = ms_cpu_layer_norm_backward,
    .batch_norm_forward = ms_cpu_batch_norm_forward,
    .batch_norm_backward = ms_cpu_batch_norm_backward,
    .residual_forward = ms_cpu_residual_forward,
    .residual_backward = ms_cpu_residual_backward,
    .clip_norm = ms_cpu_clip_norm,
    .capture = ms_cpu_capture,
    .graph_launch = ms_cpu_graph_launch,
    .graph_destroy = ms_cpu_graph_destroy,
};

#if defined(MESHSWEEP_HAVE_CUDA)
//  The CUDA backend: cuBLAS plus the kernels in core/cuda/.
static const ms_backend_ops_t s_cuda_ops = {
    .name = "cuda",
    .host_memory = false,
    .alloc = ms_cuda_alloc,
    .free_buf = ms_cuda_free_buf,
    .upload = ms_cuda_upload,
    .download = ms_cuda_download,
    .copy = ms_cuda_copy,
    .gemm = ms_cuda_gemm,
    .bias_act_forward = ms_cuda_bias_act_forward,
    .act_backward = ms_cuda_act_backward,
    .mul = ms_cuda_mul,
    .col_sum = ms_cuda_col_sum,
    .softmax_xent = ms_cuda_softmax_xent,
    .mse = ms_cuda_mse,
    .optim_step = ms_cuda_optim_step,
    .gather = ms_cuda_gather,
    .batch_end = ms_cuda_batch_end,
    .gather_xy = ms_cuda_gather_xy,
    .act_backward_col_sum = ms_cuda_act_backward_col_sum,
    .train_loss = ms_cuda_train_loss,
    .optim_all = ms_cuda_optim_all,
    .layer_norm_forward = ms_cuda_layer_norm_forward,
    .layer_norm_backward = ms_cuda_layer_norm_backward,
    .batch_norm_forward = ms_cuda_batch_norm_forward,
    .batch_norm_backward = ms_cuda_batch_norm_backward,
    .residual_forward = ms_cuda_residual_forward,
    .residual_backward = ms_cuda_residual_backward,
    .clip_norm = ms_cuda_clip_norm,
    .profile_begin = ms_cuda_profile_begin,
    .profile_end = ms_cuda_profile_end,
    .capture = ms_cuda_capture,
    .graph_launch = ms_cuda_graph_launch,
    .graph_destroy = ms_cuda_graph_destroy,
};
#endif

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
//  Open the CUDA backend; diag says why not.

static int
s_cuda_open(ms_backend_t **out, int n_threads, ms_diag_t *diag)
{
#if defined(MESHSWEEP_HAVE_CUDA)
    ms_backend_t *self = calloc(1, sizeof *self);
    if (!self)
        return MS_ERR_NOMEM;
    self->ops = &s_cuda_ops;
    self->n_threads = n_threads < 1 ? 1 : n_threads;
    int rc = ms_cuda_open(self, diag);
    if (rc != MS_OK) {
        free(self);
        return rc;
    }
    *out = self;
    return MS_OK;
#else
    (void) out;
    (void) n_threads;
    return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                            "cuda: this build has no CUDA backend");
#endif
}

//  --------------------------------------------------------------------------
//  Open a backend by name.

int
ms_backend_open(ms_backend_t **out, const char *name, int n_threads,
                ms_diag_t *diag)
{
    *out = NULL;
    if (name && strcmp(name, "cpu") == 0) {
        *out = ms_backend_cpu_new(n_threads);
        return *out ? MS_OK : MS_ERR_NOMEM;
    }
    if (name && strcmp(name, "cuda") == 0)
        return s_cuda_open(out, n_threads, diag);
    if (name && strcmp(name, "auto") != 0)
        return ms_diag_set(diag, "backend",
                           "unknown backend \"%s\" (known: auto, cpu, cuda)",
                           name);
    ms_diag_t why;
    ms_diag_clear(&why);
    int rc = s_cuda_open(out, n_threads, &why);
    if (rc == MS_OK || rc == MS_ERR_NOMEM)
        return rc;
    *out = ms_backend_cpu_new(n_threads);
    if (!*out)
        return MS_ERR_NOMEM;
    //  The reason starts with "cuda: ".
    snprintf((*out)->note, sizeof(*out)->note,
             "backend auto: %.400s; using cpu", why.reason);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Free a backend.

void
ms_backend_destroy(ms_backend_t **self_p)
{
    if (self_p && *self_p) {
#if defined(MESHSWEEP_HAVE_CUDA)
        ms_cuda_close(*self_p);
#endif
        free(*self_p);
        *self_p = NULL;
    }
}

//  --------------------------------------------------------------------------
//  Does the backend have every op the config needs? (The rule is
//  ms_backend_ops_supports.)

int
ms_backend_supports(const ms_backend_t *self, const ms_train_config_t *cfg,
                    ms_diag_t *diag)
{
    return ms_backend_ops_supports(self->ops, cfg, diag);
}

//  --------------------------------------------------------------------------
//  The rule itself, on an operation table.

int
ms_backend_ops_supports(const ms_backend_ops_t *ops,
                        const ms_train_config_t *cfg, ms_diag_t *diag)
{
    if (cfg->kind == MS_KIND_NOOP)
        return MS_OK;
    if (!ops)
        return ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, "backend",
                                "this build has no such backend");
    bool layer = cfg->norm == MS_NORM_LAYER, batch = cfg->norm == MS_NORM_BATCH;
    bool residual = cfg->architecture == MS_ARCH_RESIDUAL;
    bool clip = cfg->clip_norm > 0;
    const struct {
        bool needed;      // the config uses the op
        bool present;     // the backend has it
        const char *key;  // the parameter that needs it
        const char *name; // the op
    } need[] = {
        {layer, ops->layer_norm_forward != NULL, "norm", "layer_norm_forward"},
        {layer, ops->layer_norm_backward != NULL, "norm",
         "layer_norm_backward"},
        {batch, ops->batch_norm_forward != NULL, "norm", "batch_norm_forward"},
        {batch, ops->batch_norm_backward != NULL, "norm",
         "batch_norm_backward"},
        {residual, ops->residual_forward != NULL, "architecture",
         "residual_forward"},
        {residual, ops->residual_backward != NULL, "architecture",
         "residual_backward"},
        {clip, ops->clip_norm != NULL, "clip_norm", "clip_norm"},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (need[i].needed && !need[i].present)
            return ms_diag_set_code(diag, MS_ERR_UNSUPPORTED, need[i].key,
                                    "the %s backend has no %s", ops->name,
                                    need[i].name);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  An operation table by backend name.

const ms_backend_ops_t *
ms_backend_ops_named(const char *name)
{
    if (name && strcmp(name, "cpu") == 0)
        return &s_cpu_ops;
#if defined(MESHSWEEP_HAVE_CUDA)
    if (name && strcmp(name, "cuda") == 0)
        return &s_cuda_ops;
#endif
    return NULL;
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

//  --------------------------------------------------------------------------
//  The profiler's report.

int
ms_backend_profile_report(const ms_backend_t *self, char *buf, size_t n)
{
    if (buf && n)
        buf[0] = 0;
#if defined(MESHSWEEP_HAVE_CUDA)
    if (self->cuda)
        return ms_cuda_profile_report(self, buf, n);
#else
    (void) self;
#endif
    return 0;
}

//  --------------------------------------------------------------------------
//  Profiling on?

bool
ms_backend_profiling(const ms_backend_t *self)
{
#if defined(MESHSWEEP_HAVE_CUDA)
    if (self->cuda)
        return ms_cuda_profiling(self);
#else
    (void) self;
#endif
    return false;
}

//  --------------------------------------------------------------------------
//  Why auto chose cpu.

const char *
ms_backend_note(const ms_backend_t *self)
{
    return self->note;
}

//  --------------------------------------------------------------------------
//  Last backend error.

const char *
ms_backend_last_error(const ms_backend_t *self)
{
    return self->last_error;
}

//  --------------------------------------------------------------------------
//  Device facts for the fingerprint.

int
ms_backend_info(const ms_backend_t *self, ms_backend_info_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "%s", self->ops->name);
#if defined(MESHSWEEP_HAVE_CUDA)
    if (self->cuda)
        ms_cuda_info(self, out);
#endif
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  TF32 on or off (cuda only).

int
ms_backend_set_tf32(ms_backend_t *self, bool on)
{
#if defined(MESHSWEEP_HAVE_CUDA)
    if (self->cuda)
        return ms_cuda_set_tf32(self, on);
#else
    (void) on;
#endif
    (void) self;
    return MS_ERR_UNSUPPORTED;
}

//  --------------------------------------------------------------------------
//  The small-GEMM kernel on or off (cuda only).

int
ms_backend_set_tiny_gemm(ms_backend_t *self, bool on)
{
#if defined(MESHSWEEP_HAVE_CUDA)
    if (self->cuda) {
        ms_cuda_set_tiny_gemm(self, on);
        return MS_OK;
    }
#else
    (void) on;
#endif
    (void) self;
    return MS_ERR_UNSUPPORTED;
}
