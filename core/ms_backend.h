/*  =========================================================================
    ms_backend - the compute backend interface: one table of operations that
    the CPU (OpenBLAS) and the CUDA (cuBLAS) backend implement

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
    live in core/cpu/ms_cpu_<op>.c, CUDA ones in core/cuda/ms_cuda_<op>.cu
    under the same op names.

    A training step must run with no help from the host, so that a GPU can
    replay it (a CUDA Graph) without a round trip per minibatch: the data
    set and the epoch's sample order are uploaded once, gather picks a
    minibatch's rows on the device; the loss ops add into accumulators in
    backend memory; the optimizer reads its per-step scalars from backend
    memory. What changes from one minibatch to the next lives in an
    ms_step_cursor_t in backend memory, which batch_end advances; the
    host reads it once per epoch. capture records the ops a function
    issues into a graph that graph_launch replays (CUDA); a backend that
    cannot (CPU) answers MS_ERR_UNSUPPORTED and the caller runs the
    function itself: one path, two ways to issue it.

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

//  Normalisation constants shared by every backend (ms_backend_ops_t
//  layer_norm_forward, batch_norm_forward): PyTorch's defaults.
#define MS_NORM_EPS 1e-5f     // added to the variance
#define MS_NORM_MOMENTUM 0.1f // batch norm's running-statistics momentum

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
    int32_t skip;         // non-zero: leave w, m, v unchanged (batch_end
                          // sets it after a non-finite minibatch loss)
} ms_optim_step_t;

//  The state of an epoch that training steps read and advance on the
//  device (backend memory; see batch_end). Zero it at the start of an
//  epoch; read it back at the end.
typedef struct {
    int64_t first_row;      // position in the sample order of the current
                            // minibatch's first row
    int64_t n_steps;        // finite minibatches (optimizer steps) so far
    double loss_sum;        // current minibatch: row losses, summed (the
                            // loss ops add to it; batch_end clears it)
    int64_t n_correct;      // current minibatch: argmax hits (idem)
    double loss_acc;        // sum of the finite minibatches' mean losses
    double bad_loss;        // mean loss of the first non-finite minibatch
    int32_t diverged;       // 1 from the first non-finite minibatch on
    int32_t reserved;       // zero
    ms_optim_step_t w_step; // scalars of the current step, weights
    ms_optim_step_t b_step; // and biases (copied from the epoch's table)
} ms_step_cursor_t;

//  A recorded sequence of operations (CUDA Graph); opaque.
typedef struct ms_backend_graph ms_backend_graph_t;

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
    bool tiny_gemm;          // own small-GEMM kernel for tiny products
} ms_backend_info_t;

typedef struct {
    const char *name; // "cpu", "cuda"
    bool host_memory; // buffers are host memory the caller may read

    //  Allocate n_bytes of zeroed device memory (aligned for any op).
    //  Returns NULL when memory runs out. Free it with free_buf.
    void *(*alloc)(ms_backend_t *b, size_t n_bytes);
    //  Free a buffer from alloc; NULL-safe.
    void (*free_buf)(ms_backend_t *b, void *buf);
    //  Host to device, device to host, device to device copies. MS_OK or
    //  MS_ERR_BACKEND. Copies are ordered with the other operations;
    //  upload's src may be reused when it returns; download returns when
    //  dst holds the data (it waits for the operations before it).
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
    //  *n_correct (both in backend memory; n_correct may be NULL); when
    //  delta is not NULL writes delta = grad_scale * (softmax - onehot).
    int (*softmax_xent)(ms_backend_t *b, int64_t rows, int64_t cols,
                        const float *logits, const int32_t *labels,
                        float grad_scale, float *delta, double *loss_sum,
                        int64_t *n_correct);
    //  Mean squared error of rows x cols outputs y against one-hot labels
    //  (labels not NULL; argmax hits counted) or against targets (cols 1):
    //  adds sum over rows of mean over cols of (y - t)^2 to *loss_sum;
    //  when delta is not NULL writes delta = grad_scale * 2 (y - t) / cols.
    //  loss_sum and n_correct (may be NULL) are in backend memory.
    int (*mse)(ms_backend_t *b, int64_t rows, int64_t cols, const float *y,
               const int32_t *labels, const float *targets, float grad_scale,
               float *delta, double *loss_sum, int64_t *n_correct);
    //  One optimizer step on n parameters w with gradients g and state m,
    //  v (NULL when the rule keeps none); see ms_optim.h for the rules.
    //  step is in backend memory (read when the step runs); nothing
    //  changes when step->skip is set.
    int (*optim_step)(ms_backend_t *b, const ms_optim_step_t *step, int64_t n,
                      float *w, const float *g, float *m, float *v);

    //  Gather rows of cols 32-bit words (floats or int32 labels): dst row i
    //  = src row idx[f + i] for i < rows, with f = cursor->first_row
    //  (cursor in backend memory) or 0 when cursor is NULL; idx NULL
    //  means the identity (rows f .. f + rows - 1). src, idx, dst in
    //  backend memory.
    int (*gather)(ms_backend_t *b, int64_t rows, int64_t cols, const void *src,
                  const int64_t *idx, const ms_step_cursor_t *cursor,
                  void *dst);
    //  End of a minibatch of rows rows, after its loss op added into
    //  cursor->loss_sum: with l = loss_sum / rows (double), when not yet
    //  diverged, a finite l is added to loss_acc, w_step and b_step are
    //  copied from table[2 n_steps] and table[2 n_steps + 1] (backend
    //  memory) and n_steps counts it; a non-finite l sets diverged,
    //  bad_loss = l and skip in both steps (no update from then on). Then
    //  first_row += rows and loss_sum, n_correct are cleared.
    int (*batch_end)(ms_backend_t *b, int64_t rows,
                     const ms_optim_step_t *table, ms_step_cursor_t *cursor);
    //  The fused operations of a training step (ms_mlp_train_step): each
    //  does exactly what the composition it names does, with the same bits,
    //  in one launch on the GPU (a small network's step is bound by the
    //  number of dependent launches, docs/CUDA_NOTES.md); the CPU composes
    //  its own ops.
    //  gather_xy: gather(rows, cols, x_src, idx, cursor, x_dst) and
    //  gather(rows, 1, y_src, idx, cursor, y_dst) (labels or targets).
    int (*gather_xy)(ms_backend_t *b, int64_t rows, int64_t cols,
                     const float *x_src, const void *y_src, const int64_t *idx,
                     const ms_step_cursor_t *cursor, float *x_dst, void *y_dst);
    //  act_backward_col_sum: act_backward(act, slope, rows * cols, z, a, g)
    //  then col_sum(rows, cols, g, db): a hidden layer's delta and its
    //  bias gradient.
    int (*act_backward_col_sum)(ms_backend_t *b, ms_activation_t act,
                                float slope, int64_t rows, int64_t cols,
                                const float *z, const float *a, float *g,
                                float *db);
    //  train_loss: the output layer's end of a training step on the
    //  rows x cols pre-bias outputs y: bias_act_forward(LINEAR, rows, cols,
    //  bias, y, y); then softmax_xent (loss MS_LOSS_CROSS_ENTROPY, labels)
    //  or mse (labels, or targets when labels is NULL) with grad_scale
    //  1 / rows into delta, cursor->loss_sum and cursor->n_correct (not
    //  counted for targets); col_sum(rows, cols, delta, db); then
    //  batch_end(rows, table, cursor).
    int (*train_loss)(ms_backend_t *b, ms_loss_kind_t loss, int64_t rows,
                      int64_t cols, const float *bias, float *y,
                      const int32_t *labels, const float *targets, float *delta,
                      float *db, const ms_optim_step_t *table,
                      ms_step_cursor_t *cursor);
    //  optim_all: optim_step on n_segs segments of one parameter block:
    //  segment s is [bounds[s], bounds[s + 1]) (n_segs + 1 ascending
    //  offsets in backend memory; n = bounds[n_segs], the block's
    //  size, from the host), stepped with w_step when s is even and
    //  b_step when odd (the layout of ms_mlp: W(0), b(0), W(1), ...); m
    //  and v (NULL when the rule keeps none) have the block's layout.
    int (*optim_all)(ms_backend_t *b, const ms_optim_step_t *w_step,
                     const ms_optim_step_t *b_step, int32_t n_segs,
                     const int64_t *bounds, int64_t n, float *w, const float *g,
                     float *m, float *v);
    //  The ops of residual and normalised networks (ms_mlp.c says where
    //  each is used). A backend that leaves one NULL lacks it, and
    //  ms_backend_supports refuses the configs that need it.
    //  layer_norm_forward: for each row i of the rows x cols matrix x,
    //  its mean and biased variance over the cols features, rstd_i =
    //  1 / sqrt(var_i + MS_NORM_EPS), y = gamma (x - mean_i) rstd_i +
    //  beta (gamma, beta: cols floats); mean and rstd (rows floats each)
    //  are kept for the backward pass (Ba et al. 2016).
    int (*layer_norm_forward)(ms_backend_t *b, int64_t rows, int64_t cols,
                              const float *x, const float *gamma,
                              const float *beta, float *y, float *mean,
                              float *rstd);
    //  layer_norm_backward: with dy the gradient of y, overwrites dgamma =
    //  sum over rows of dy xhat and dbeta = sum of dy (rows ascending),
    //  and writes (accumulate false; dx may be dy) or adds (accumulate
    //  true; dx must not be dy) the input gradient dx.
    int (*layer_norm_backward)(ms_backend_t *b, int64_t rows, int64_t cols,
                               const float *x, const float *gamma,
                               const float *mean, const float *rstd,
                               const float *dy, float *dx, float *dgamma,
                               float *dbeta, bool accumulate);
    //  batch_norm_forward: training: per column, the mean and biased
    //  variance over the rows into mean and rstd (cols floats, rstd as
    //  above), and, when run_mean is not NULL, run_mean and run_var
    //  moved by MS_NORM_MOMENTUM towards the batch's mean and unbiased
    //  variance; evaluation (training false): mean and rstd from run_mean
    //  and run_var. Then y = gamma (x - mean) rstd + beta (Ioffe and
    //  Szegedy 2015; the running statistics as PyTorch keeps them).
    int (*batch_norm_forward)(ms_backend_t *b, bool training, int64_t rows,
                              int64_t cols, const float *x, const float *gamma,
                              const float *beta, float *run_mean,
                              float *run_var, float *y, float *mean,
                              float *rstd);
    //  batch_norm_backward: as layer_norm_backward, for a training forward
    //  pass's batch statistics.
    int (*batch_norm_backward)(ms_backend_t *b, int64_t rows, int64_t cols,
                               const float *x, const float *gamma,
                               const float *mean, const float *rstd,
                               const float *dy, float *dx, float *dgamma,
                               float *dbeta, bool accumulate);
    //  residual_forward: out[i] = h[i] + s u[i] for n elements, s = *scale
    //  (backend memory: a rezero scale in the parameter block) or 1 when
    //  scale is NULL.
    int (*residual_forward)(ms_backend_t *b, int64_t n, const float *h,
                            const float *scale, const float *u, float *out);
    //  residual_backward: the branch's gradient gu[i] = s g[i] (times
    //  mask[i] when mask is not NULL: the branch's dropout), s as in
    //  residual_forward; when dscale is not NULL, *dscale = sum over i of
    //  g[i] u[i] (in double, index order; backend memory).
    int (*residual_backward)(ms_backend_t *b, int64_t n, const float *g,
                             const float *scale, const float *u,
                             const float *mask, float *gu, float *dscale);
    //  clip_norm: the L2 norm of the n gradients g (squares summed in
    //  double in index order); when it exceeds max_norm, every g[i] is
    //  multiplied by f = max_norm / norm (rounded to float once); *factor
    //  (backend memory, may be NULL) gets f, or 1 when nothing was clipped.
    int (*clip_norm)(ms_backend_t *b, int64_t n, float *g, float max_norm,
                     float *factor);
    //  Profiling (MESHSWEEP_CUDA_PROFILE=1, cuda only; NULL on cpu):
    //  profile_begin holds the stream (a short spin kernel) so that the
    //  operations issued until profile_end run back to back on the device
    //  with an event after each; profile_end waits and keeps each op's
    //  device time for ms_backend_profile_report. profile_begin answers
    //  MS_ERR_UNSUPPORTED when profiling is off.
    int (*profile_begin)(ms_backend_t *b, const char *section);
    int (*profile_end)(ms_backend_t *b);
    //  Record the operations that fn(arg) issues on this backend into a
    //  new graph (*out), without running them. fn must not download.
    //  Returns MS_OK; MS_ERR_UNSUPPORTED (the backend has no graphs: the
    //  caller runs fn itself); fn's error; MS_ERR_BACKEND.
    int (*capture)(ms_backend_t *b, int (*fn)(void *arg), void *arg,
                   ms_backend_graph_t **out);
    //  Run a captured graph once, ordered with the other operations.
    //  MS_OK or MS_ERR_BACKEND.
    int (*graph_launch)(ms_backend_t *b, ms_backend_graph_t *graph);
    //  Free a graph; NULL-safe.
    void (*graph_destroy)(ms_backend_t *b, ms_backend_graph_t *graph);
} ms_backend_ops_t;

//  The capability rule, written once: whether self has every operation
//  that training cfg needs (an op left NULL in the table is one the
//  backend lacks): layer_norm_* for norm layer, batch_norm_* for norm
//  batch, residual_* for the residual architecture, clip_norm for
//  clip_norm > 0. ms_trainer_open refuses such a config with it, and a
//  node's worker never claims a task its backend cannot train. A noop
//  task needs nothing. Returns MS_OK, or MS_ERR_UNSUPPORTED with diag
//  naming the parameter and the missing op ("norm: the cuda backend has
//  no layer_norm_forward").
int ms_backend_supports(const ms_backend_t *self, const ms_train_config_t *cfg,
                        ms_diag_t *diag);

//  The same rule on an operation table, for a caller that holds no open
//  backend (a node deciding what its GPU workers may claim): ops from
//  ms_backend_ops or ms_backend_ops_named. NULL ops (a backend this build
//  lacks) supports nothing but noop tasks. Same returns.
int ms_backend_ops_supports(const ms_backend_ops_t *ops,
                            const ms_train_config_t *cfg, ms_diag_t *diag);

//  The operation table of backend name ("cpu", "cuda") without opening a
//  device; NULL when this build has no such backend. Static, borrowed.
const ms_backend_ops_t *ms_backend_ops_named(const char *name);

//  New CPU backend on OpenBLAS with n_threads BLAS threads (< 1 means 1:
//  one thread per worker by default); sets openblas_set_num_threads.
//  Caller owns the result; free it with ms_backend_destroy(). Returns NULL
//  only when memory runs out.
ms_backend_t *ms_backend_cpu_new(int n_threads);

//  Open a backend by name: "cpu", "cuda" or "auto" (NULL is "auto").
//  "cuda" opens device 0, or the ordinal in MESHSWEEP_CUDA_DEVICE, with a
//  cuBLAS handle (libcublas is loaded at run time, so a CUDA build starts
//  on machines with no GPU, driver or toolkit) and one stream; TF32 is
//  off unless MESHSWEEP_CUDA_TF32=1. "auto" is cuda when this build has
//  the CUDA backend and it opens, else cpu: then ms_backend_note says why
//  in one line, for the caller to print. *out is NULL on failure. Returns
//  MS_OK; MS_ERR_NODEVICE for "cuda" without a usable device, driver or
//  cuBLAS, or in a build without CUDA (diag says which);
//  MS_ERR_INVALID for an unknown name or a bad MESHSWEEP_CUDA_DEVICE
//  (diag names it); MS_ERR_BACKEND (a CUDA call failed; diag names it);
//  MS_ERR_NOMEM.
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

//  Why "auto" chose cpu ("cuda: no CUDA device (...); using cpu"), or ""
//  when nothing was chosen for the caller. Borrowed, valid while the
//  backend lives.
const char *ms_backend_note(const ms_backend_t *self);

//  The last backend error, one line ("cudaMemcpyAsync(...) at
//  ms_cuda_memory.cu:42: an illegal memory access was encountered"), or
//  "" when none. Borrowed, valid while the backend lives.
const char *ms_backend_last_error(const ms_backend_t *self);

//  Fill *out with what the backend runs on (device, versions, TF32,
//  workspace) for the fingerprint. Always MS_OK.
int ms_backend_info(const ms_backend_t *self, ms_backend_info_t *out);

//  The per-operation device times that the cuda backend's profiler
//  recorded (MESHSWEEP_CUDA_PROFILE=1; the trainer profiles one
//  uncaptured full training step and one graph replay per backend), as
//  text: one line "profile SECTION INDEX OP SHAPE MICROSECONDS" per
//  operation and "profile SECTION total MICROSECONDS" per section, into
//  buf (NUL-terminated, truncated to n). Returns the number of sections
//  (0: nothing recorded, or not a cuda backend).
int ms_backend_profile_report(const ms_backend_t *self, char *buf, size_t n);
//  Whether profiling is on (cuda and MESHSWEEP_CUDA_PROFILE=1).
bool ms_backend_profiling(const ms_backend_t *self);

//  Allow (on) or forbid TF32 tensor-core SGEMM on a cuda backend (forbidden
//  by default: float32 results). Returns MS_OK; MS_ERR_UNSUPPORTED on cpu;
//  MS_ERR_BACKEND.
int ms_backend_set_tf32(ms_backend_t *self, bool on);

//  Use (on) or not the CUDA backend's own small-GEMM kernel instead of
//  cuBLAS for tiny products (m * n <= 131072 and k <= 1024; see
//  core/cuda/ms_cuda_gemm.cu): every output element sums over k in
//  ascending order in float, bit-reproducible, graph-capturable. On by
//  default (measured on an H200, docs/CUDA_NOTES.md); the environment
//  MESHSWEEP_CUDA_TINY_GEMM=0 turns it off at open. The choice changes
//  the GEMMs' bits, so it is in the fingerprint (ms_backend_info_t
//  tiny_gemm). Returns MS_OK; MS_ERR_UNSUPPORTED on cpu.
int ms_backend_set_tiny_gemm(ms_backend_t *self, bool on);

#endif
