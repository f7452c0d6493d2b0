/*  =========================================================================
    ms_cuda - the CUDA backend's operations (cuBLAS plus our own kernels),
    as plain C functions for the operation table in ms_backend.c

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One function per op of ms_backend_ops_t, same names and semantics as
    the CPU ones (ms_cpu_gemm / ms_cuda_gemm; ms_backend.h documents them).
    Buffers are device memory. Every operation is issued on the backend's
    one stream, in order, and returns once issued: only download (and
    close) waits. Errors are MS_ERR_BACKEND, with the failing call, file,
    line and CUDA's message in ms_backend_last_error and on stderr.
    Built only when MESHSWEEP_HAVE_CUDA; the .cu files define them
    extern "C".
*/
#ifndef MS_CUDA_H
#define MS_CUDA_H

#include "ms_backend.h"

#ifdef __cplusplus
extern "C" {
#endif

//  Open the device (MESHSWEEP_CUDA_DEVICE or 0), load cuBLAS, make the
//  handle, stream and workspace, and hang them on b. Returns MS_OK;
//  MS_ERR_NODEVICE (no driver, no device, no cuBLAS: diag says which);
//  MS_ERR_INVALID (bad MESHSWEEP_CUDA_DEVICE); MS_ERR_BACKEND; MS_ERR_NOMEM.
int ms_cuda_open(ms_backend_t *b, ms_diag_t *diag);
//  Free everything ms_cuda_open made; safe on a backend without CUDA.
void ms_cuda_close(ms_backend_t *b);
//  Device facts for ms_backend_info.
void ms_cuda_info(const ms_backend_t *b, ms_backend_info_t *out);
//  TF32 tensor-core SGEMM on or off; MS_OK or MS_ERR_BACKEND.
int ms_cuda_set_tf32(ms_backend_t *b, bool on);
//  Own small-GEMM kernel for tiny products on or off (ms_cuda_gemm.cu).
void ms_cuda_set_tiny_gemm(ms_backend_t *b, bool on);

void *ms_cuda_alloc(ms_backend_t *b, size_t n_bytes);
void ms_cuda_free_buf(ms_backend_t *b, void *buf);
int ms_cuda_upload(ms_backend_t *b, void *dst, const void *src, size_t n_bytes);
int ms_cuda_download(ms_backend_t *b, void *dst, const void *src,
                     size_t n_bytes);
int ms_cuda_copy(ms_backend_t *b, void *dst, const void *src, size_t n_bytes);
int ms_cuda_gemm(ms_backend_t *b, bool trans_a, bool trans_b, int64_t m,
                 int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                 const float *bm, int64_t ldb, float beta, float *c,
                 int64_t ldc);
int ms_cuda_bias_act_forward(ms_backend_t *b, ms_activation_t act, float slope,
                             int64_t rows, int64_t cols, const float *bias,
                             float *z, float *a);
int ms_cuda_act_backward(ms_backend_t *b, ms_activation_t act, float slope,
                         int64_t n, const float *z, const float *a, float *g);
int ms_cuda_mul(ms_backend_t *b, int64_t n, const float *mask, const float *x,
                float *out);
int ms_cuda_col_sum(ms_backend_t *b, int64_t rows, int64_t cols,
                    const float *delta, float *db);
int ms_cuda_softmax_xent(ms_backend_t *b, int64_t rows, int64_t cols,
                         const float *logits, const int32_t *labels,
                         float grad_scale, float *delta, double *loss_sum,
                         int64_t *n_correct);
int ms_cuda_mse(ms_backend_t *b, int64_t rows, int64_t cols, const float *y,
                const int32_t *labels, const float *targets, float grad_scale,
                float *delta, double *loss_sum, int64_t *n_correct);
int ms_cuda_optim_step(ms_backend_t *b, const ms_optim_step_t *step, int64_t n,
                       float *w, const float *g, float *m, float *v);
int ms_cuda_gather(ms_backend_t *b, int64_t rows, int64_t cols, const void *src,
                   const int64_t *idx, const ms_step_cursor_t *cursor,
                   void *dst);
int ms_cuda_batch_end(ms_backend_t *b, int64_t rows,
                      const ms_optim_step_t *table, ms_step_cursor_t *cursor);
int ms_cuda_gather_xy(ms_backend_t *b, int64_t rows, int64_t cols,
                      const float *x_src, const void *y_src, const int64_t *idx,
                      const ms_step_cursor_t *cursor, float *x_dst,
                      void *y_dst);
int ms_cuda_act_backward_col_sum(ms_backend_t *b, ms_activation_t act,
                                 float slope, int64_t rows, int64_t cols,
                                 const float *z, const float *a, float *g,
                                 float *db);
int ms_cuda_train_loss(ms_backend_t *b, ms_loss_kind_t loss, int64_t rows,
                       int64_t cols, const float *bias, float *y,
                       const int32_t *labels, const float *targets,
                       float *delta, float *db, const ms_optim_step_t *table,
                       ms_step_cursor_t *cursor);
int ms_cuda_optim_all(ms_backend_t *b, const ms_optim_step_t *w_step,
                      const ms_optim_step_t *b_step, int32_t n_segs,
                      const int64_t *bounds, int64_t n, float *w,
                      const float *g, float *m, float *v);
//  Layer norm, batch norm, the residual add and its scale, gradient
//  clipping (ms_cuda_norm.cu).
int ms_cuda_layer_norm_forward(ms_backend_t *b, int64_t rows, int64_t cols,
                               const float *x, const float *gamma,
                               const float *beta, float *y, float *mean,
                               float *rstd);
int ms_cuda_layer_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                                const float *x, const float *gamma,
                                const float *mean, const float *rstd,
                                const float *dy, float *dx, float *dgamma,
                                float *dbeta, bool accumulate);
int ms_cuda_batch_norm_forward(ms_backend_t *b, bool training, int64_t rows,
                               int64_t cols, const float *x, const float *gamma,
                               const float *beta, float *run_mean,
                               float *run_var, float *y, float *mean,
                               float *rstd);
int ms_cuda_batch_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                                const float *x, const float *gamma,
                                const float *mean, const float *rstd,
                                const float *dy, float *dx, float *dgamma,
                                float *dbeta, bool accumulate);
int ms_cuda_residual_forward(ms_backend_t *b, int64_t n, const float *h,
                             const float *scale, const float *u, float *out);
int ms_cuda_residual_backward(ms_backend_t *b, int64_t n, const float *g,
                              const float *scale, const float *u,
                              const float *mask, float *gu, float *dscale);
int ms_cuda_clip_norm(ms_backend_t *b, int64_t n, float *g, float max_norm,
                      float *factor);
//  Profiler (ms_cuda_profile.cu): MESHSWEEP_CUDA_PROFILE=1 at open turns
//  it on. begin: MS_OK, MS_ERR_UNSUPPORTED (off), MS_ERR_BACKEND.
int ms_cuda_profile_begin(ms_backend_t *b, const char *section);
int ms_cuda_profile_end(ms_backend_t *b);
int ms_cuda_profile_report(const ms_backend_t *b, char *buf, size_t n);
bool ms_cuda_profiling(const ms_backend_t *b);
int ms_cuda_capture(ms_backend_t *b, int (*fn)(void *arg), void *arg,
                    ms_backend_graph_t **out);
int ms_cuda_graph_launch(ms_backend_t *b, ms_backend_graph_t *graph);
void ms_cuda_graph_destroy(ms_backend_t *b, ms_backend_graph_t *graph);

#ifdef __cplusplus
}
#endif

#endif
