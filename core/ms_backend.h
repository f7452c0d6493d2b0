/*  =========================================================================
    ms_backend - the compute backend interface: one table of operations that
    the CPU (OpenBLAS) and, later, the CUDA (cuBLAS) backend implement

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The training engine never touches a number directly: every buffer that
    holds parameters, gradients, optimizer state or activations is an opaque
    device pointer allocated by the backend, and every operation on it goes
    through ms_backend_ops_t. The CPU backend's buffers happen to be host
    memory (ops->host_memory is true), so the trainer can skip a download;
    nothing else may rely on it.

    The operations are the ones an MLP needs, fused where a pass over memory
    is saved: gemm; bias + activation forward; activation backward; dropout
    forward/backward; column sums (bias gradients); softmax cross-entropy
    and MSE, each giving loss, accuracy count and the output delta in one
    pass; one optimizer step over a parameter segment. CPU implementations
    live in core/cpu/ms_cpu_<op>.c, CUDA ones will live in
    core/cuda/ms_cuda_<op>.cu under the same op names.

    Matrices are row-major float32. Every reduction sums in a fixed order
    (never thread-dependent), in double where it leaves the device, so a
    run is bit-identical on one machine (DESIGN.md "The training engine").

    Thread rule: a backend belongs to one thread (one worker process).
*/
#ifndef MS_BACKEND_H
#define MS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ms_config.h"
#include "ms_err.h"

typedef struct ms_backend ms_backend_t;

//  One optimizer update over a parameter segment (weights of one layer, or
//  its biases). The scalars are computed once per step by ms_optim.
typedef struct {
    ms_optim_kind_t kind; // update rule
    float lr;             // learning rate of this step (schedule applied)
    float momentum;       // momentum / nesterov coefficient
    float beta1, beta2;   // Adam moment decays
    float eps;            // Adam epsilon
    float l2;             // coupled L2 (added to the gradient); 0 for biases
    float decay;          // decoupled decay (adamw: lr * l2); 0 otherwise
    float bias_c1;        // 1 - beta1^t (Adam bias correction)
    float bias_c2;        // 1 - beta2^t
    float lr_c1;          // lr / (1 - beta1^t): Adam's step size
    float rsqrt_c2;       // 1 / sqrt(1 - beta2^t)
} ms_optim_step_t;

typedef struct {
    const char *name; // "cpu", "cuda"
    bool host_memory; // buffers are host memory the caller may read

    //  Allocate n_bytes of zeroed device memory (aligned for any op).
    //  Returns NULL when memory runs out. Free it with free_buf.
    void *(*alloc)(ms_backend_t *b, size_t n_bytes);
    //  Free a buffer from alloc; NULL-safe.
    void (*free_buf)(ms_backend_t *b, void *buf);
    //  Host to device, device to host, device to device copies. MS_OK or
    //  MS_ERR_BACKEND.
    int (*upload)(ms_backend_t *b, void *dst, const void *src, size_t n_bytes);
    int (*download)(ms_backend_t *b, void *dst, const void *src,
                    size_t n_bytes);
    int (*copy)(ms_backend_t *b, void *dst, const void *src, size_t n_bytes);

    //  C[m x n] = alpha * op(A) op(B) + beta * C, row-major, op = transpose
    //  when trans_* (BLAS sgemm semantics with CblasRowMajor).
    int (*gemm)(ms_backend_t *b, bool trans_a, bool trans_b, int64_t m,
                int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                const float *bm, int64_t ldb, float beta, float *c,
                int64_t ldc);
    //  For a rows x cols pre-activation z (the GEMM output): z += bias
    //  (broadcast over rows), then a = f(z). a may equal z (in place; z is
    //  then lost, which is fine for every activation but gelu, see
    //  ms_activation_needs_z).
    int (*bias_act_forward)(ms_backend_t *b, ms_activation_t act, float slope,
                            int64_t rows, int64_t cols, const float *bias,
                            float *z, float *a);
    //  g[i] *= f'(z[i]) for n elements, with f' computed from a = f(z)
    //  where possible; z is read only when ms_activation_needs_z(act).
    int (*act_backward)(ms_backend_t *b, ms_activation_t act, float slope,
                        int64_t n, const float *z, const float *a, float *g);
    //  out[i] = x[i] * mask[i] (dropout forward and backward; the mask
    //  holds 0 or 1/keep).
    int (*mul)(ms_backend_t *b, int64_t n, const float *mask, const float *x,
               float *out);
    //  db[j] = sum over i of delta[i, j] (rows x cols), i ascending.
    int (*col_sum)(ms_backend_t *b, int64_t rows, int64_t cols,
                   const float *delta, float *db);
    //  Softmax cross-entropy on rows x cols logits against labels: adds
    //  the summed loss to *loss_sum and the count of argmax hits to
    //  *n_correct; when delta is not NULL writes
    //  delta = grad_scale * (softmax - onehot).
    int (*softmax_xent)(ms_backend_t *b, int64_t rows, int64_t cols,
                        const float *logits, const int32_t *labels,
                        float grad_scale, float *delta, double *loss_sum,
                        int64_t *n_correct);
    //  Mean squared error of rows x cols outputs y against one-hot labels
    //  (labels not NULL; argmax hits counted) or against targets (cols 1):
    //  adds sum over rows of mean over cols of (y - t)^2 to *loss_sum;
    //  when delta is not NULL writes delta = grad_scale * 2 (y - t) / cols.
    int (*mse)(ms_backend_t *b, int64_t rows, int64_t cols, const float *y,
               const int32_t *labels, const float *targets, float grad_scale,
               float *delta, double *loss_sum, int64_t *n_correct);
    //  One optimizer step on n parameters w with gradients g and state m,
    //  v (NULL when the rule keeps none); see ms_optim.h for the rules.
    int (*optim_step)(ms_backend_t *b, const ms_optim_step_t *step, int64_t n,
                      float *w, const float *g, float *m, float *v);
} ms_backend_ops_t;

//  New CPU backend on OpenBLAS with n_threads BLAS threads (< 1 means 1:
//  one thread per worker by default); sets openblas_set_num_threads.
//  Caller owns the result; free it with ms_backend_destroy(). Returns NULL
//  only when memory runs out.
ms_backend_t *ms_backend_cpu_new(int n_threads);

//  Open a backend by name: "cpu", "cuda" or "auto" (cuda when a device is
//  usable, else cpu). *out is NULL on failure. Returns MS_OK;
//  MS_ERR_NODEVICE for "cuda" (not built yet; diag says so);
//  MS_ERR_INVALID for an unknown name (diag names it); MS_ERR_NOMEM.
int ms_backend_open(ms_backend_t **out, const char *name, int n_threads,
                    ms_diag_t *diag);

//  Free a backend; NULL-safe; sets *self_p to NULL.
void ms_backend_destroy(ms_backend_t **self_p);

//  "cpu" or "cuda" (static string).
const char *ms_backend_name(const ms_backend_t *self);

//  The operation table (static, borrowed).
const ms_backend_ops_t *ms_backend_ops(const ms_backend_t *self);

//  BLAS threads this backend was created with.
int ms_backend_threads(const ms_backend_t *self);

//  What a backend runs on, for the platform fingerprint. Strings are empty
//  and numbers 0 where they do not apply (the CPU backend fills backend
//  only).
typedef struct {
    char backend[16];        // "cpu", "cuda"
    char device[128];        // "NVIDIA H200"
    int32_t device_index;    // CUDA device ordinal in use
    int32_t cc_major;        // compute capability, major
    int32_t cc_minor;        // and minor (9, 0 for an H200)
    int32_t n_sms;           // multiprocessors
    int64_t memory_bytes;    // device memory
    int32_t driver_version;  // cudaDriverGetVersion: 13000 = 13.0
    int32_t runtime_version; // cudaRuntimeGetVersion (linked statically)
    int32_t blas_version;    // cublasGetVersion: 130100 = 13.1.0
    char blas_library[256];  // path of the cuBLAS library loaded
    bool tf32;               // SGEMM may use TF32 tensor cores
    int64_t workspace_bytes; // cuBLAS workspace (cublasSetWorkspace)
} ms_backend_info_t;

//  Fill *out with what the backend runs on (device, versions, TF32,
//  workspace) for the fingerprint. Always MS_OK.
int ms_backend_info(const ms_backend_t *self, ms_backend_info_t *out);

//  Allow (on) or forbid TF32 tensor-core SGEMM on a cuda backend (forbidden
//  by default: float32 results). Returns MS_OK; MS_ERR_UNSUPPORTED on cpu;
//  MS_ERR_BACKEND.
int ms_backend_set_tf32(ms_backend_t *self, bool on);

#endif
