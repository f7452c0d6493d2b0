/*  =========================================================================
    bench_gpu - the GPU benchmark of issue 6: the CUDA backend against the
    CPU backend (correctness), time per epoch, cuBLAS's own SGEMM rate,
    several networks on one GPU at once

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Usage:
      bench_gpu correct [--n N] [--seed S] [--rows R]
      bench_gpu speed --hidden 100,10 [--activation A] [--batch B]
                      [--epochs E] [--backend cuda|cpu] [--tf32 0|1]
      bench_gpu gemm-net --hidden 4096x8 [--batch B] [--tf32 0|1]
      bench_gpu gemm --m M --n N --k K [--tf32 0|1]
      bench_gpu multi --threads N --hidden 100,10 [--activation A]
                      [--batch B] [--epochs E] [--tf32 0|1]

    Every mode prints "key value" lines on stdout (progress on stderr);
    tools/bench/gpu/run.sh collects them and report.py makes the table.
    Data: Fashion-MNIST through ms_dataset_load_builtin (set
    MESHSWEEP_DATASETS_DIR to a folder holding fashion-mnist/ with the IDX
    .gz files), scaled to [0, 1], no validation split; adam lr 0.001, no L2
   unless the mode says otherwise. FLOPs are counted as docs/BENCHMARKS.md does:
   6 B in out per layer per minibatch (forward and the two backward GEMMs).

    correct: N random networks (depth 1..4, width 16..512, activation,
      optimizer, batch drawn from --seed), each trained on the CPU backend
      and on the cuda backend (TF32 off) from the same seed: loss on 2000
      held-out test rows after 20 steps (an epoch of 20 minibatches) and
      after one epoch of R training rows (default all 60000); prints the
      relative differences (issue 6: within 1e-4 after 20 steps, 1e-3
      after one epoch). Without a usable cuda backend it says why and
      prints "cuda_available 0".
    speed: median seconds per epoch over the epochs after the first, the
      fastest of them, FLOPs per epoch, the training rate, and that median
      per minibatch (step_us). With MESHSWEEP_CUDA_PROFILE=1 also
      "profile step|graph INDEX OP SHAPE US" lines: the device time of
      each operation of one uncaptured full step, run back to back behind
      a spin kernel, and of one graph replay, with a total per section
      (ms_backend_profile_report; the profiled epoch's time is not a
      speed figure then).
    gemm-net: cuBLAS SGEMM alone on one minibatch's three GEMMs per layer
      of the network (the shapes the engine issues), best of 20 runs:
      its GFLOP/s, the rate the achieved fraction is measured against.
      gemm: one GEMM M x N x K. Both need a build with the CUDA toolkit
      (BENCH_GPU_HAVE_CUBLAS); otherwise they say so and exit 3.
    multi: N threads, each with its own cuda backend (its own stream),
      train the same network with seeds 1..N at once; aggregate networks
      per second (and epochs per second).
*/
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ms_backend.h"
#include "ms_config.h"
#include "ms_dataset.h"
#include "ms_train.h"

#ifdef BENCH_GPU_HAVE_CUBLAS
#include <cublas_v2.h>
#include <cuda_runtime.h>
#endif

//  Options of every mode.
typedef struct {
    const char *mode;       // correct, speed, gemm-net, gemm, multi
    char hidden[256];       // "100,10" or "4096x8"
    const char *activation; // hidden activation
    const char *backend;    // speed: cuda or cpu
    int batch;              // minibatch
    int epochs;             // epochs (speed, multi)
    int tf32;               // TF32 on (1) or off (0)
    int n;                  // correct: networks
    int seed;               // correct: draws
    int64_t rows;           // correct: training rows of the epoch
    int threads;            // multi: threads
    int64_t m, n_cols, k;   // gemm
} s_args_t;

//  --------------------------------------------------------------------------
//  Wall seconds.

static double
s_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

//  --------------------------------------------------------------------------
//  qsort comparator for doubles.

static int
s_cmp(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

//  --------------------------------------------------------------------------
//  Median of n values (sorts them).

static double
s_median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(double), s_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

//  --------------------------------------------------------------------------
//  Parse "100,10" or "4096x8" into sizes; returns the count (0: bad).

static int
s_parse_hidden(const char *text, int32_t *sizes, int max)
{
    const char *x = strchr(text, 'x');
    if (x) {
        int w = atoi(text), d = atoi(x + 1);
        if (w < 1 || d < 1 || d > max)
            return 0;
        for (int i = 0; i < d; i++)
            sizes[i] = w;
        return d;
    }
    int n = 0;
    for (const char *p = text; *p && n < max;) {
        int w = atoi(p);
        if (w < 1)
            return 0;
        sizes[n++] = w;
        p = strchr(p, ',');
        if (!p)
            break;
        p++;
    }
    return n;
}

//  --------------------------------------------------------------------------
//  A training config: adam lr 0.001, no L2, no validation split.

static ms_train_config_t *
s_config(const int32_t *sizes, int n_hidden, const char *activation, int batch,
         int epochs, int64_t seed)
{
    ms_train_config_t *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return NULL;
    ms_train_config_defaults(cfg);
    cfg->n_hidden = n_hidden;
    cfg->explicit_sizes = true;
    cfg->width = 0;
    for (int i = 0; i < n_hidden; i++)
        cfg->hidden_sizes[i] = sizes[i];
    if (ms_activation_parse(activation, &cfg->activation) != MS_OK) {
        free(cfg);
        return NULL;
    }
    cfg->init = ms_init_default_for(cfg->activation);
    cfg->batch_size = batch;
    cfg->epochs = epochs;
    cfg->l2 = 0;
    cfg->validation_split = 0;
    cfg->seed = seed;
    return cfg;
}

//  --------------------------------------------------------------------------
//  FLOPs of one minibatch by the rule: 6 B in out per layer.

static double
s_flops(const int32_t *sizes, int n_hidden, int n_in, int n_out, int batch)
{
    double f = 0;
    int prev = n_in;
    for (int l = 0; l <= n_hidden; l++) {
        int out = l < n_hidden ? sizes[l] : n_out;
        f += 6.0 * batch * prev * (double) out;
        prev = out;
    }
    return f;
}

//  --------------------------------------------------------------------------
//  Open a backend by name with TF32 set; prints why not on failure.

static ms_backend_t *
s_backend(const char *name, int tf32)
{
    ms_backend_t *b = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    if (ms_backend_open(&b, name, 1, &diag) != MS_OK) {
        char text[1100];
        fprintf(stderr, "bench_gpu: backend %s: %s\n", name,
                ms_diag_format(&diag, text, sizeof text));
        printf("cuda_available 0\ncuda_reason %s\n", diag.reason);
        return NULL;
    }
    if (strcmp(ms_backend_name(b), name) != 0) {
        printf("cuda_available 0\ncuda_reason backend %s opened as %s\n", name,
               ms_backend_name(b));
        ms_backend_destroy(&b);
        return NULL;
    }
    int rc = ms_backend_set_tf32(b, tf32 != 0);
    if (rc != MS_OK && !(rc == MS_ERR_UNSUPPORTED && !tf32)) {
        fprintf(stderr, "bench_gpu: TF32 %s: %s\n", tf32 ? "on" : "off",
                ms_strerror(rc));
        ms_backend_destroy(&b);
        return NULL;
    }
    return b;
}

//  --------------------------------------------------------------------------
//  Epochs of the last s_train that ran as one epoch graph
//  (MESHSWEEP_CUDA_EPOCH_GRAPH=1; ms_trainer_epoch_graphs).
static int32_t s_epoch_graphs;

//  Train cfg on train for its epochs, evaluating on val; *loss gets the
//  last epoch's val_loss; *secs (may be NULL) the epochs' seconds.

static int
s_train(const ms_train_config_t *cfg, const ms_dataset_t *train,
        const ms_dataset_t *val, ms_backend_t *b, double *loss, double *secs)
{
    ms_dataset_t empty = {.n_features = train->n_features,
                          .n_classes = train->n_classes};
    ms_trainer_t *t = NULL;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    int rc =
        ms_trainer_open(&t, cfg, train, val ? val : &empty, &empty, b, &diag);
    if (rc != MS_OK) {
        char text[1100];
        fprintf(stderr, "bench_gpu: trainer: %s\n",
                ms_diag_format(&diag, text, sizeof text));
        return rc;
    }
    int e = 0;
    while (!ms_trainer_done(t)) {
        ms_epoch_metrics_t m;
        rc = ms_trainer_epoch(t, &m);
        if (rc != MS_OK)
            break;
        if (loss)
            *loss = val ? m.val_loss : m.train_loss;
        if (secs)
            secs[e] = m.seconds;
        e++;
    }
    s_epoch_graphs = ms_trainer_epoch_graphs(t);
    ms_trainer_destroy(&t);
    return rc;
}

//  --------------------------------------------------------------------------
//  A draw in 0..n-1 (splitmix64 over the state).

static int
s_draw(uint64_t *state, int n)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (int) ((z ^ (z >> 31)) % (uint64_t) n);
}

//  --------------------------------------------------------------------------
//  correct: CPU against CUDA on random networks.

static int
s_correct(const s_args_t *a, ms_dataset_t *train, ms_dataset_t *test)
{
    static const char *acts[] = {"relu", "tanh",       "sigmoid", "gelu",
                                 "selu", "leaky_relu", "elu"};
    static const char *opts[] = {"sgd", "momentum", "nesterov", "adam",
                                 "adamw"};
    static const double lrs[] = {0.05, 0.01, 0.01, 0.001, 0.001};
    static const int widths[] = {16, 64, 128, 256, 512};
    static const int batches[] = {32, 64, 128, 200, 256};
    ms_backend_t *cpu = s_backend("cpu", 0);
    ms_backend_t *gpu = s_backend("cuda", 0);
    if (!cpu)
        return 1;
    if (gpu)
        printf("cuda_available 1\n");
    ms_dataset_t val = *test; // a view: the first 2000 test rows
    val.n_samples = test->n_samples < 2000 ? test->n_samples : 2000;
    val.owner_ = NULL;
    uint64_t st = (uint64_t) a->seed;
    double worst20 = 0, worst_epoch = 0;
    int n_fail = 0;
    for (int i = 0; i < a->n; i++) {
        int32_t sizes[4];
        int depth = 1 + s_draw(&st, 4);
        for (int l = 0; l < depth; l++)
            sizes[l] = widths[s_draw(&st, 5)];
        const char *act = acts[s_draw(&st, 7)];
        int oi = s_draw(&st, 5);
        int batch = batches[s_draw(&st, 5)];
        ms_train_config_t *cfg = s_config(sizes, depth, act, batch, 1, i + 1);
        ms_optim_parse(opts[oi], &cfg->optimizer);
        cfg->learning_rate = lrs[oi];
        char name[128];
        int used = snprintf(name, sizeof name, "784");
        for (int l = 0; l < depth; l++)
            used += snprintf(name + used, sizeof name - (size_t) used, "-%d",
                             sizes[l]);
        snprintf(name + used, sizeof name - (size_t) used, "-10 %s %s b%d", act,
                 opts[oi], batch);

        ms_dataset_t steps = *train; // 20 minibatches
        steps.n_samples = 20 * (int64_t) batch;
        steps.owner_ = NULL;
        ms_dataset_t epoch = *train;
        if (a->rows > 0 && a->rows < train->n_samples)
            epoch.n_samples = a->rows;
        epoch.owner_ = NULL;
        double l20[2] = {NAN, NAN}, le[2] = {NAN, NAN};
        ms_backend_t *bs[2] = {cpu, gpu};
        for (int k = 0; k < 2; k++) {
            if (!bs[k])
                continue;
            s_train(cfg, &steps, &val, bs[k], &l20[k], NULL);
            s_train(cfg, &epoch, &val, bs[k], &le[k], NULL);
        }
        free(cfg);
        double r20 = fabs(l20[1] - l20[0]) / fabs(l20[0]);
        double re = fabs(le[1] - le[0]) / fabs(le[0]);
        bool ok = gpu && r20 <= 1e-4 && re <= 1e-3;
        if (gpu && !(r20 <= 1e-4 && re <= 1e-3))
            n_fail++;
        if (gpu && (isnan(r20) || r20 > worst20))
            worst20 = isnan(r20) ? INFINITY : r20;
        if (gpu && (isnan(re) || re > worst_epoch))
            worst_epoch = isnan(re) ? INFINITY : re;
        printf("net %d %s | 20 steps cpu %.7g cuda %.7g rel %.2e | epoch cpu "
               "%.7g cuda %.7g rel %.2e | %s\n",
               i + 1, name, l20[0], l20[1], r20, le[0], le[1], re,
               !gpu ? "skipped"
               : ok ? "ok"
                    : "FAIL");
        fflush(stdout);
    }
    printf("correct_networks %d\n", a->n);
    if (gpu) {
        printf("correct_max_rel_20 %.3e\n", worst20);
        printf("correct_max_rel_epoch %.3e\n", worst_epoch);
        printf("correct_failures %d\n", n_fail);
    }
    ms_backend_destroy(&cpu);
    ms_backend_destroy(&gpu);
    return gpu && n_fail ? 4 : 0;
}

//  --------------------------------------------------------------------------
//  speed: seconds per epoch.

static int
s_speed(const s_args_t *a, ms_dataset_t *train)
{
    int32_t sizes[64];
    int depth = s_parse_hidden(a->hidden, sizes, 64);
    if (!depth) {
        fprintf(stderr, "bench_gpu: --hidden %s: expected 100,10 or 4096x8\n",
                a->hidden);
        return 2;
    }
    ms_backend_t *b = s_backend(a->backend, a->tf32);
    if (!b)
        return 3;
    int epochs = a->epochs < 2 ? 2 : a->epochs;
    ms_train_config_t *cfg =
        s_config(sizes, depth, a->activation, a->batch, epochs, 1);
    double *secs = calloc((size_t) epochs, sizeof(double));
    double loss = NAN;
    int rc = s_train(cfg, train, NULL, b, &loss, secs);
    if (rc != MS_OK) {
        fprintf(stderr, "bench_gpu: training failed: %s\n", ms_strerror(rc));
        return 1;
    }
    double fastest = secs[1];
    for (int e = 1; e < epochs; e++)
        fastest = secs[e] < fastest ? secs[e] : fastest;
    double med = s_median(secs + 1, epochs - 1);
    double n_batches = (double) ((train->n_samples + a->batch - 1) / a->batch);
    double flops =
        s_flops(sizes, depth, train->n_features, train->n_classes, a->batch) *
        n_batches;
    printf("network %s %s batch %d adam backend %s tf32 %d\n", a->hidden,
           a->activation, a->batch, a->backend, a->tf32);
    printf("epoch_seconds %.5f\n", med);
    printf("epoch_seconds_min %.5f\n", fastest);
    printf("epoch_seconds_first %.5f\n", secs[0]);
    printf("epoch_flops %.6e\n", flops);
    printf("train_gflops %.2f\n", flops / med * 1e-9);
    printf("final_train_loss %.5f\n", loss);
    printf("step_us %.2f\n", med / n_batches * 1e6);
    printf("epoch_graphs %d\n", (int) s_epoch_graphs);
    //  MESHSWEEP_CUDA_PROFILE=1: the device time of each op of one
    //  uncaptured full step and of one graph replay (ms_backend.h).
    if (ms_backend_profiling(b)) {
        size_t cap = 1 << 20;
        char *text = malloc(cap);
        if (text && ms_backend_profile_report(b, text, cap) > 0)
            fputs(text, stdout);
        free(text);
    }
    free(secs);
    free(cfg);
    ms_backend_destroy(&b);
    return 0;
}

//  --------------------------------------------------------------------------
//  multi: N threads, a backend each, one network each, at once.

typedef struct {
    const s_args_t *a;
    const ms_dataset_t *train;
    int seed;
    int rc;
    pthread_barrier_t *go;
} s_job_t;

static void *
s_job(void *arg)
{
    s_job_t *j = arg;
    int32_t sizes[64];
    int depth = s_parse_hidden(j->a->hidden, sizes, 64);
    ms_backend_t *b = s_backend("cuda", j->a->tf32);
    ms_train_config_t *cfg = s_config(sizes, depth, j->a->activation,
                                      j->a->batch, j->a->epochs, j->seed);
    pthread_barrier_wait(j->go);
    j->rc = b && cfg ? s_train(cfg, j->train, NULL, b, NULL, NULL) : 1;
    free(cfg);
    ms_backend_destroy(&b);
    return NULL;
}

static int
s_multi(const s_args_t *a, ms_dataset_t *train)
{
    int n = a->threads < 1 ? 1 : a->threads;
    pthread_t *th = calloc((size_t) n, sizeof *th);
    s_job_t *jobs = calloc((size_t) n, sizeof *jobs);
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned) n + 1);
    for (int i = 0; i < n; i++) {
        jobs[i] = (s_job_t){.a = a, .train = train, .seed = i + 1, .go = &go};
        pthread_create(&th[i], NULL, s_job, &jobs[i]);
    }
    pthread_barrier_wait(&go); // every backend is open: time the training
    double t0 = s_now();
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        bad += jobs[i].rc != MS_OK;
    }
    double wall = s_now() - t0;
    pthread_barrier_destroy(&go);
    printf("multi_threads %d\n", n);
    printf("multi_failed %d\n", bad);
    printf("multi_seconds %.4f\n", wall);
    printf("multi_networks_per_s %.4f\n", (double) n / wall);
    printf("multi_epochs_per_s %.4f\n", (double) n * a->epochs / wall);
    free(th);
    free(jobs);
    return bad ? 1 : 0;
}

#ifdef BENCH_GPU_HAVE_CUBLAS
//  --------------------------------------------------------------------------
//  Row-major C[m x n] = op(A) op(B) on cuBLAS (column-major): the same
//  product as C^T = op(B)^T op(A)^T.

static cublasStatus_t
s_gemm_rm(cublasHandle_t h, bool ta, bool tb, int m, int n, int k,
          const float *A, int lda, const float *B, int ldb, float *C, int ldc)
{
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                       ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one, B, ldb, A,
                       lda, &zero, C, ldc);
}

//  --------------------------------------------------------------------------
//  gemm / gemm-net: cuBLAS alone, best of 20 timed runs after 3 warm ones.

static int
s_gemm(const s_args_t *a, bool net)
{
    int32_t sizes[64];
    int depth = 0;
    if (net && !(depth = s_parse_hidden(a->hidden, sizes, 64)))
        return 2;
    int fan[66], n_layers = 0;
    if (net) {
        fan[0] = 784;
        for (int l = 0; l < depth; l++)
            fan[l + 1] = sizes[l];
        fan[depth + 1] = 10;
        n_layers = depth + 1;
    }
    size_t big =
        net ? 0 : (size_t) (a->m * a->k + a->k * a->n_cols + a->m * a->n_cols);
    for (int l = 0; net && l < n_layers; l++) {
        size_t w = (size_t) fan[l] * (size_t) fan[l + 1];
        size_t x = (size_t) a->batch *
                   (size_t) (fan[l] > fan[l + 1] ? fan[l] : fan[l + 1]);
        if (w > big)
            big = w;
        if (x > big)
            big = x;
    }
    float *buf[3] = {NULL, NULL, NULL};
    cublasHandle_t h = NULL;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        printf("cuda_available 0\ncuda_reason cublasCreate failed\n");
        return 3;
    }
    cublasSetMathMode(h, a->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH
                                 : CUBLAS_PEDANTIC_MATH);
    for (int i = 0; i < 3; i++)
        if (cudaMalloc((void **) &buf[i], big * sizeof(float)) != cudaSuccess)
            return 1;
    for (int i = 0; i < 3; i++)
        cudaMemset(buf[i], 0, big * sizeof(float));
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    double flops = 0, best = 1e30;
    for (int r = 0; r < 23; r++) {
        cudaEventRecord(e0, 0);
        flops = 0;
        if (net) {
            int B = a->batch;
            for (int l = 0; l < n_layers; l++) {
                int in = fan[l], out = fan[l + 1];
                // forward: z[B x out] = x[B x in] W[out x in]^T
                s_gemm_rm(h, false, true, B, out, in, buf[0], in, buf[1], in,
                          buf[2], out);
                // weight gradient: dW[out x in] = delta^T x
                s_gemm_rm(h, true, false, out, in, B, buf[0], out, buf[1], in,
                          buf[2], in);
                // input gradient: dx[B x in] = delta[B x out] W[out x in]
                s_gemm_rm(h, false, false, B, in, out, buf[0], out, buf[1], in,
                          buf[2], in);
                flops += 6.0 * B * in * (double) out;
            }
        } else {
            s_gemm_rm(h, false, false, (int) a->m, (int) a->n_cols, (int) a->k,
                      buf[0], (int) a->k, buf[1], (int) a->n_cols, buf[2],
                      (int) a->n_cols);
            flops = 2.0 * (double) a->m * (double) a->n_cols * (double) a->k;
        }
        cudaEventRecord(e1, 0);
        cudaEventSynchronize(e1);
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r >= 3 && ms > 0 && ms * 1e-3 < best)
            best = ms * 1e-3;
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) {
        fprintf(stderr, "bench_gpu: %s\n", cudaGetErrorString(err));
        return 1;
    }
    if (net)
        printf("gemm_network %s batch %d tf32 %d\n", a->hidden, a->batch,
               a->tf32);
    else
        printf("gemm_shape %lld x %lld x %lld tf32 %d\n", (long long) a->m,
               (long long) a->n_cols, (long long) a->k, a->tf32);
    printf("gemm_seconds %.6e\n", best);
    printf("gemm_gflops %.1f\n", flops / best * 1e-9);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    for (int i = 0; i < 3; i++)
        cudaFree(buf[i]);
    cublasDestroy(h);
    return 0;
}
#endif

int
main(int argc, char **argv)
{
    s_args_t a = {.activation = "relu",
                  .backend = "cuda",
                  .batch = 200,
                  .epochs = 3,
                  .n = 8,
                  .seed = 1,
                  .rows = 0,
                  .threads = 1};
    snprintf(a.hidden, sizeof a.hidden, "100");
    if (argc < 2) {
        fprintf(stderr, "usage: bench_gpu correct|speed|gemm-net|gemm|multi "
                        "[options] (see the source's header)\n");
        return 2;
    }
    a.mode = argv[1];
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--hidden") == 0)
            snprintf(a.hidden, sizeof a.hidden, "%s", v);
        else if (strcmp(k, "--activation") == 0)
            a.activation = v;
        else if (strcmp(k, "--backend") == 0)
            a.backend = v;
        else if (strcmp(k, "--batch") == 0)
            a.batch = atoi(v);
        else if (strcmp(k, "--epochs") == 0)
            a.epochs = atoi(v);
        else if (strcmp(k, "--tf32") == 0)
            a.tf32 = atoi(v);
        else if (strcmp(k, "--n") == 0)
            a.n = atoi(v);
        else if (strcmp(k, "--seed") == 0)
            a.seed = atoi(v);
        else if (strcmp(k, "--rows") == 0)
            a.rows = atoll(v);
        else if (strcmp(k, "--threads") == 0)
            a.threads = atoi(v);
        else if (strcmp(k, "--m") == 0)
            a.m = atoll(v);
        else if (strcmp(k, "--n-cols") == 0 || strcmp(k, "--nc") == 0)
            a.n_cols = atoll(v);
        else if (strcmp(k, "--k") == 0)
            a.k = atoll(v);
        else {
            fprintf(stderr, "bench_gpu: unknown option %s\n", k);
            return 2;
        }
    }
    if (a.batch < 1 || a.epochs < 1) {
        fprintf(stderr, "bench_gpu: --batch and --epochs must be >= 1\n");
        return 2;
    }
    if (strcmp(a.mode, "gemm") == 0 || strcmp(a.mode, "gemm-net") == 0) {
#ifdef BENCH_GPU_HAVE_CUBLAS
        return s_gemm(&a, strcmp(a.mode, "gemm-net") == 0);
#else
        printf("cuda_available 0\ncuda_reason built without cuBLAS\n");
        return 3;
#endif
    }
    ms_diag_t diag;
    ms_dataset_t *train = NULL, *test = NULL;
    if (ms_dataset_load_builtin("fashion-mnist", &train, &test, &diag) !=
        MS_OK) {
        char text[1100];
        fprintf(stderr, "bench_gpu: %s\n",
                ms_diag_format(&diag, text, sizeof text));
        return 2;
    }
    ms_dataset_scale(train, test, MS_SCALE_UNIT);
    int rc = 2;
    if (strcmp(a.mode, "correct") == 0)
        rc = s_correct(&a, train, test);
    else if (strcmp(a.mode, "speed") == 0)
        rc = s_speed(&a, train);
    else if (strcmp(a.mode, "multi") == 0)
        rc = s_multi(&a, train);
    else
        fprintf(stderr, "bench_gpu: unknown mode %s\n", a.mode);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
    return rc;
}
