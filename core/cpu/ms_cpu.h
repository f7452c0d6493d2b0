/*  =========================================================================
    ms_cpu - the CPU backend's operations (OpenBLAS plus plain C loops)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    One function per op of ms_backend_ops_t, same names as the CUDA ones
    (ms_cpu_gemm / ms_cuda_gemm). Semantics, shapes and error
    codes are those documented in ms_backend.h. Buffers are host memory.
    Loops run in one thread, in index order, so results do not depend on
    timing; element-wise loops are written to auto-vectorise, which does
    not change any result (each element is computed on its own, and the
    build uses -ffp-contract=off).
*/
#ifndef MS_CPU_H
#define MS_CPU_H

#include "ms_backend.h"

//  Zeroed, 64-byte aligned host memory; NULL when memory runs out.
void *ms_cpu_alloc(ms_backend_t *b, size_t n_bytes);
//  Free a buffer from ms_cpu_alloc; NULL-safe.
void ms_cpu_free_buf(ms_backend_t *b, void *buf);
//  Copies between host and "device" (both host memory): MS_OK.
int ms_cpu_upload(ms_backend_t *b, void *dst, const void *src, size_t n_bytes);
int ms_cpu_download(ms_backend_t *b, void *dst, const void *src,
                    size_t n_bytes);
int ms_cpu_copy(ms_backend_t *b, void *dst, const void *src, size_t n_bytes);
//  Row-major cblas_sgemm; MS_OK. Sizes must fit in int (asserted).
int ms_cpu_gemm(ms_backend_t *b, bool trans_a, bool trans_b, int64_t m,
                int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                const float *bm, int64_t ldb, float beta, float *c,
                int64_t ldc);
//  z += bias, a = f(z), one pass per row; MS_OK.
int ms_cpu_bias_act_forward(ms_backend_t *b, ms_activation_t act, float slope,
                            int64_t rows, int64_t cols, const float *bias,
                            float *z, float *a);
//  g *= f'(z) from a (z for gelu); MS_OK.
int ms_cpu_act_backward(ms_backend_t *b, ms_activation_t act, float slope,
                        int64_t n, const float *z, const float *a, float *g);
//  out = x * mask, element-wise; MS_OK.
int ms_cpu_mul(ms_backend_t *b, int64_t n, const float *mask, const float *x,
               float *out);
//  db = column sums of delta, rows in order; MS_OK.
int ms_cpu_col_sum(ms_backend_t *b, int64_t rows, int64_t cols,
                   const float *delta, float *db);
//  Softmax cross-entropy: loss sum, argmax hits, delta; MS_OK.
int ms_cpu_softmax_xent(ms_backend_t *b, int64_t rows, int64_t cols,
                        const float *logits, const int32_t *labels,
                        float grad_scale, float *delta, double *loss_sum,
                        int64_t *n_correct);
//  Mean squared error: loss sum, argmax hits, delta; MS_OK.
int ms_cpu_mse(ms_backend_t *b, int64_t rows, int64_t cols, const float *y,
               const int32_t *labels, const float *targets, float grad_scale,
               float *delta, double *loss_sum, int64_t *n_correct);
//  One optimizer step on a parameter segment (ms_optim.h); MS_OK.
int ms_cpu_optim_step(ms_backend_t *b, const ms_optim_step_t *step, int64_t n,
                      float *w, const float *g, float *m, float *v);
//  Rows of src picked by idx from cursor->first_row on; MS_OK.
int ms_cpu_gather(ms_backend_t *b, int64_t rows, int64_t cols, const void *src,
                  const int64_t *idx, const ms_step_cursor_t *cursor,
                  void *dst);
//  Minibatch accounting and the next step's scalars; MS_OK.
int ms_cpu_batch_end(ms_backend_t *b, int64_t rows,
                     const ms_optim_step_t *table, ms_step_cursor_t *cursor);
//  The fused ops of a training step (ms_backend.h): the compositions of
//  the ops above, in the order named there, so the bits are theirs; MS_OK.
int ms_cpu_gather_xy(ms_backend_t *b, int64_t rows, int64_t cols,
                     const float *x_src, const void *y_src, const int64_t *idx,
                     const ms_step_cursor_t *cursor, float *x_dst, void *y_dst);
int ms_cpu_act_backward_col_sum(ms_backend_t *b, ms_activation_t act,
                                float slope, int64_t rows, int64_t cols,
                                const float *z, const float *a, float *g,
                                float *db);
int ms_cpu_train_loss(ms_backend_t *b, ms_loss_kind_t loss, int64_t rows,
                      int64_t cols, const float *bias, float *y,
                      const int32_t *labels, const float *targets, float *delta,
                      float *db, const ms_optim_step_t *table,
                      ms_step_cursor_t *cursor);
int ms_cpu_optim_all(ms_backend_t *b, const ms_optim_step_t *w_step,
                     const ms_optim_step_t *b_step, int32_t n_segs,
                     const int64_t *bounds, int64_t n, float *w, const float *g,
                     float *m, float *v);
//  Layer norm, batch norm, the residual add and its scale, gradient
//  clipping (ms_cpu_norm.c); MS_OK.
int ms_cpu_layer_norm_forward(ms_backend_t *b, int64_t rows, int64_t cols,
                              const float *x, const float *gamma,
                              const float *beta, float *y, float *mean,
                              float *rstd);
int ms_cpu_layer_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                               const float *x, const float *gamma,
                               const float *mean, const float *rstd,
                               const float *dy, float *dx, float *dgamma,
                               float *dbeta, bool accumulate);
int ms_cpu_batch_norm_forward(ms_backend_t *b, bool training, int64_t rows,
                              int64_t cols, const float *x, const float *gamma,
                              const float *beta, float *run_mean,
                              float *run_var, float *y, float *mean,
                              float *rstd);
int ms_cpu_batch_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                               const float *x, const float *gamma,
                               const float *mean, const float *rstd,
                               const float *dy, float *dx, float *dgamma,
                               float *dbeta, bool accumulate);
int ms_cpu_residual_forward(ms_backend_t *b, int64_t n, const float *h,
                            const float *scale, const float *u, float *out);
int ms_cpu_residual_backward(ms_backend_t *b, int64_t n, const float *g,
                             const float *scale, const float *u,
                             const float *mask, float *gu, float *dscale);
int ms_cpu_clip_norm(ms_backend_t *b, int64_t n, float *g, float max_norm,
                     float *factor);
//  No graphs on the CPU: MS_ERR_UNSUPPORTED, *out NULL.
int ms_cpu_capture(ms_backend_t *b, int (*fn)(void *arg), void *arg,
                   ms_backend_graph_t **out);
//  Never called (no graphs): MS_ERR_UNSUPPORTED.
int ms_cpu_graph_launch(ms_backend_t *b, ms_backend_graph_t *graph);
//  NULL-safe no-op.
void ms_cpu_graph_destroy(ms_backend_t *b, ms_backend_graph_t *graph);

#endif
