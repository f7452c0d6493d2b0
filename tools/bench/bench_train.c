/*  =========================================================================
    bench_train - time per epoch of the training engine on Fashion-MNIST,
    against the single-thread SGEMM rate of the same shapes, and peak RSS

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Usage: bench_train [--layers N] [--width W] [--batch B] [--epochs E]
                       [--seed S] [--dataset NAME] [--param KEY=VALUE]...

    Trains an MLP (relu, he init, adam lr 0.001, no L2, no validation
    split) on the whole Fashion-MNIST training set (60000 x 784, scaled to
    [0, 1]) with the CPU backend and one BLAS thread, and prints one
    "key value" line per figure. --param sets any sweep parameter as
    `meshsweep train` does (architecture=residual, norm=layer, ...); the
    FLOP counts follow the network's layer sizes, so the residual adds
    and norm passes count as overhead, not as work.

      epoch_seconds      median time per epoch over the epochs after the
                         first (the first warms caches and pages; for an
                         even count, the mean of the middle two)
      epoch_seconds_min  the fastest of those epochs
      epoch_cpu_seconds  median CPU time of those epochs (steadier than
                         wall time when other work shares the cores)
      train_gflops       6 B sum(in x out) FLOPs per minibatch (forward and
                         both backward GEMMs, the counting rule)
                         times minibatches, over epoch_seconds
      train_gflops_executed  the same without layer 0's input gradient,
                         which is never computed (PyTorch skips it too)
      sgemm_gflops       the same FLOPs over the CPU time cblas_sgemm alone
                         takes for the same three shapes per layer (best of
                         3, measured right after each epoch; median)
      sgemm_fraction     median over epochs of that epoch's training rate
                         (FLOPs over the epoch's CPU time) over the SGEMM
                         rate measured just after it: CPU time on both
                         sides, so time spent descheduled on a shared
                         machine counts on neither
      sgemm_fraction_wall  the same with the epoch's wall time
      test_accuracy      the final parameters on the test set
      peak_rss_mib       getrusage ru_maxrss of this process
      rss_budget_mib     2 (dataset float32 bytes + 4 x params x 4) + 64 MiB

    train_speed.sh runs it beside tools/bench/bench_torch.py.
*/
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "ms_config_json.h"
#include "ms_dataset.h"
#include "ms_train.h"

//  --------------------------------------------------------------------------
//  CPU seconds of this process (on a shared machine, the time it was
//  actually running).

static double
s_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
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
//  Median of n values (sorts them); the mean of the middle two for even n.

static double
s_median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(double), s_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

//  --------------------------------------------------------------------------
//  Smallest of n values.

static double
s_min(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] < m)
            m = v[i];
    return m;
}

//  --------------------------------------------------------------------------
//  CPU seconds cblas_sgemm alone takes for one minibatch's three GEMMs per
//  layer (best of reps; one BLAS thread, so CPU time is running time).

static double
s_sgemm_seconds(const int *fan, int n_layers, int batch, int reps)
{
    int widest = 0;
    for (int l = 0; l <= n_layers; l++)
        if (fan[l] > widest)
            widest = fan[l];
    size_t big = (size_t) widest * (size_t) (widest > batch ? widest : batch);
    float *a = malloc(big * sizeof(float));
    float *b = malloc(big * sizeof(float));
    float *c = malloc(big * sizeof(float));
    for (size_t i = 0; i < big; i++) {
        a[i] = (float) (i % 17) * 0.01f;
        b[i] = (float) (i % 13) * 0.01f;
        c[i] = 0;
    }
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = s_cpu_now();
        for (int l = 0; l < n_layers; l++) {
            int in = fan[l], out = fan[l + 1];
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, batch, out, in,
                        1.0f, a, in, b, in, 0.0f, c, out);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, batch,
                        1.0f, a, out, b, in, 0.0f, c, in);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, batch, in,
                        out, 1.0f, a, out, b, in, 0.0f, c, in);
        }
        double t = s_cpu_now() - t0;
        if (t < best)
            best = t;
    }
    free(a);
    free(b);
    free(c);
    return best;
}

int
main(int argc, char **argv)
{
    int layers = 1, width = 100, batch = 200, epochs = 3;
    long seed = 1;
    const char *dataset = "fashion-mnist";
    const char *params[64];
    int n_params_set = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--layers") == 0)
            layers = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--width") == 0)
            width = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--batch") == 0)
            batch = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--epochs") == 0)
            epochs = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--dataset") == 0)
            dataset = argv[i + 1];
        else if (strcmp(argv[i], "--seed") == 0)
            seed = atol(argv[i + 1]);
        else if (strcmp(argv[i], "--param") == 0 && n_params_set < 64)
            params[n_params_set++] = argv[i + 1];
        else {
            fprintf(stderr, "bench_train: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (epochs < 2)
        epochs = 2;

    ms_diag_t diag;
    ms_dataset_t *train = NULL, *test = NULL;
    int rc = ms_dataset_load_builtin(dataset, &train, &test, &diag);
    if (rc != MS_OK) {
        char text[1100];
        fprintf(stderr, "bench_train: %s\n",
                ms_diag_format(&diag, text, sizeof text));
        return 2;
    }
    ms_dataset_scale(train, test, MS_SCALE_UNIT);
    ms_dataset_t empty = {.n_features = train->n_features,
                          .n_classes = train->n_classes};

    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    ms_train_config_set_uniform(&cfg, layers, width);
    cfg.batch_size = batch;
    cfg.epochs = epochs;
    cfg.l2 = 0;
    cfg.validation_split = 0;
    cfg.seed = seed;
    for (int i = 0; i < n_params_set; i++) {
        char key[64];
        const char *eq = strchr(params[i], '=');
        if (!eq || (size_t) (eq - params[i]) >= sizeof key) {
            fprintf(stderr, "bench_train: --param %s: expected KEY=VALUE\n",
                    params[i]);
            return 2;
        }
        memcpy(key, params[i], (size_t) (eq - params[i]));
        key[eq - params[i]] = '\0';
        if (ms_config_set_param_string(&cfg, key, eq + 1, &diag) != MS_OK) {
            char text[1100];
            fprintf(stderr, "bench_train: --param: %s\n",
                    ms_diag_format(&diag, text, sizeof text));
            return 2;
        }
    }

    ms_backend_t *backend = ms_backend_cpu_new(1);
    ms_trainer_t *t = NULL;
    rc = ms_trainer_open(&t, &cfg, train, &empty, &empty, backend, &diag);
    if (rc != MS_OK) {
        char text[1100];
        fprintf(stderr, "bench_train: %s\n",
                ms_diag_format(&diag, text, sizeof text));
        return 2;
    }
    //  Shapes and FLOPs per minibatch (the rule: 6 B in out per
    //  layer), and what is executed (layer 0's input gradient is skipped).
    uint32_t sizes[4100];
    layers = ms_trainer_layer_sizes(t, sizes, 4100) - 2;
    int *fan = calloc((size_t) layers + 2, sizeof(int));
    for (int l = 0; l <= layers + 1; l++)
        fan[l] = (int) sizes[l];
    double flops = 0;
    for (int l = 0; l <= layers; l++)
        flops += 6.0 * batch * fan[l] * (double) fan[l + 1];
    double flops_skipped = 2.0 * batch * fan[0] * (double) fan[1];
    double n_batches = (double) ((train->n_samples + batch - 1) / batch);

    //  After each epoch, time cblas_sgemm alone on the same shapes: on a
    //  shared machine the load changes between epochs, and the fraction of
    //  one epoch is measured against the SGEMM rate of the same moment.
    double *secs = calloc((size_t) epochs, sizeof(double));
    double *fracs = calloc((size_t) epochs, sizeof(double));
    double *rates = calloc((size_t) epochs, sizeof(double));
    double *cpu = calloc((size_t) epochs, sizeof(double));
    double *walls = calloc((size_t) epochs, sizeof(double));
    double last_loss = 0;
    for (int e = 0; e < epochs && !ms_trainer_done(t); e++) {
        ms_epoch_metrics_t m;
        double c0 = s_cpu_now();
        if (ms_trainer_epoch(t, &m) != MS_OK)
            return 1;
        cpu[e] = s_cpu_now() - c0;
        secs[e] = m.seconds;
        last_loss = m.train_loss;
        double gemm_s = s_sgemm_seconds(fan, layers + 1, batch, 3);
        rates[e] = flops / gemm_s * 1e-9;
        fracs[e] = flops * n_batches / cpu[e] * 1e-9 / rates[e];
        walls[e] = flops * n_batches / m.seconds * 1e-9 / rates[e];
        fprintf(stderr,
                "epoch %d: %.3f s, loss %.4f, sgemm %.1f GFLOP/s, "
                "fraction %.3f\n",
                e + 1, m.seconds, m.train_loss, rates[e], fracs[e]);
    }
    int rest = epochs - 1;
    double epoch_s = s_median(secs + 1, rest);
    double epoch_min = s_min(secs + 1, rest);
    double epoch_cpu = s_median(cpu + 1, rest);
    double train_gflops = flops * n_batches / epoch_s * 1e-9;
    double sgemm_gflops = s_median(rates + 1, rest);
    double frac = s_median(fracs + 1, rest);
    double frac_wall = s_median(walls + 1, rest);

    int64_t n_params = 0;
    const float *final = ms_trainer_params(t, &n_params);
    double test_loss = 0, test_acc = 0;
    if (ms_trainer_evaluate(t, final, test, &test_loss, &test_acc) != MS_OK)
        return 1;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double data_bytes =
        (double) (ms_dataset_bytes(train) + ms_dataset_bytes(test));
    double budget =
        2.0 * (data_bytes + 16.0 * (double) n_params) + 64.0 * 1048576.0;
    printf("network %d-%s-%d %s %s%s batch %d adam\n", fan[0],
           layers == 1 ? "100" : "hidden", fan[layers + 1],
           ms_activation_name(cfg.activation),
           ms_architecture_name(cfg.architecture),
           cfg.norm != MS_NORM_NONE ? "+norm" : "", batch);
    printf("layers %d\nwidth %d\nparams %lld\n", layers, width,
           (long long) n_params);
    printf("blas_core %s\n", openblas_get_corename());
    printf("final_train_loss %.4f\n", last_loss);
    printf("epoch_seconds %.4f\n", epoch_s);
    printf("epoch_seconds_min %.4f\n", epoch_min);
    printf("epoch_cpu_seconds %.4f\n", epoch_cpu);
    printf("train_gflops %.2f\n", train_gflops);
    printf("train_gflops_executed %.2f\n",
           (flops - flops_skipped) * n_batches / epoch_s * 1e-9);
    printf("sgemm_gflops %.2f\n", sgemm_gflops);
    printf("sgemm_fraction %.3f\n", frac);
    printf("sgemm_fraction_wall %.3f\n", frac_wall);
    printf("test_accuracy %.4f\n", test_acc);
    printf("peak_rss_mib %.1f\n", (double) ru.ru_maxrss / 1024.0);
    printf("rss_budget_mib %.1f\n", budget / 1048576.0);
    free(fan);
    free(secs);
    free(fracs);
    free(rates);
    free(cpu);
    free(walls);
    ms_trainer_destroy(&t);
    ms_backend_destroy(&backend);
    ms_dataset_destroy(&train);
    ms_dataset_destroy(&test);
    return 0;
}
