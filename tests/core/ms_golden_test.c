/*  =========================================================================
    ms_golden_test - pins the loss curve of a small network on a small
    fixed synthetic dataset

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Three small networks train 8 epochs on 240 Gaussian-blob samples and
    validate on 60 more: a 6-16-8-3 relu network (dropout 0.1, adam 0.01,
    L2 1e-4, batch 16, seed 3); a residual relu network of 5 hidden
    layers of 12 with layer norm and one epoch of warm-up; a residual tanh
    network of 6 hidden layers of 12 in two-layer blocks with batch norm,
    rezero, dropout 0.1 and clipping at 0.5. Their per-epoch training and
    validation losses must match the numbers below within 1e-6 relative.
    They catch any change to the arithmetic of the engine (init draws,
    shuffle order, dropout masks, loss, backward pass, norms, residual
    adds, optimizer, warm-up, clipping) that the other tests, which check
    properties, would let through.

    The numbers are those of one MS_ENGINE_NUMERICS_VERSION
    (core/ms_platform.h), which the backend fingerprint carries: a change
    that moves them must bump it, or two builds with different numbers
    would share a fingerprint and an honest pair of results would look
    like a bit-for-bit mismatch. So the test fails, saying to bump it,
    when a run leaves the pins, and the history table below ties each
    version to the digest of its pins: new pins without a new version
    fail, and so does a new version without new pins.

    OpenBLAS picks its SGEMM kernel at load time from the CPU, which could
    change the last bits; labels.cmake pins OPENBLAS_CORETYPE=Haswell (and
    OPENBLAS_L2_SIZE, one thread) for this test. Bit-identity is asserted
    only between reruns (ms_train_test); here the tolerance allows for
    other x86-64 CPUs running the same Haswell kernel through different
    libm builds.

    To regenerate after an intended change of the arithmetic: bump
    MS_ENGINE_NUMERICS_VERSION, build, then run from the build folder
        OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 OPENBLAS_NUM_THREADS=1 \
            MS_GOLDEN_PRINT=1 ./tests/ms_golden_test
    and paste what it prints over s_pins_version, s_train_loss and
    s_val_loss, and its history row at the end of s_history, saying in the
    commit message why the numbers changed.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ms_platform.h"
#include "ms_synth.h"
#include "ms_train.h"

enum { EPOCHS = 8, N_CASES = 3 };

//  The pinned curves, one per case, made by MS_ENGINE_NUMERICS_VERSION
//  s_pins_version.
static const int s_pins_version = 2;
static const double s_train_loss[N_CASES][EPOCHS] = {
    {
        0.88707672022806849,
        0.52394001793039346,
        0.45180995747709485,
        0.3984765070073546,
        0.3429104932705892,
        0.36167391823973816,
        0.32267452794694179,
        0.35141223834501806,
    },
    {
        1.7591862001888339,
        0.64651885480773297,
        0.39717491603454413,
        0.33898670644892176,
        0.32144067587163927,
        0.2997617534850005,
        0.27416512535975401,
        0.26016442977036752,
    },
    {
        0.99167565273750702,
        0.40420949289661257,
        0.34103125639306681,
        0.32824005428055186,
        0.33128281714583285,
        0.30301148189002625,
        0.30647373347698542,
        0.39518219205233079,
    },
};
static const double s_val_loss[N_CASES][EPOCHS] = {
    {
        0.66633606220942687,
        0.42293630197664656,
        0.39068335953904404,
        0.33315921972815948,
        0.31864892102904829,
        0.3348106473493585,
        0.32885515110287661,
        0.30601715637390475,
    },
    {
        0.96713661961396014,
        0.44473725183627821,
        0.38822186049042623,
        0.35017785175557364,
        0.28137658692843764,
        0.37656653107833993,
        0.35279595456526808,
        0.23573846623823233,
    },
    {
        0.51169165149289553,
        0.30153851471903265,
        0.3694959631658763,
        0.26172181520944171,
        0.31976207004895085,
        0.28681827191194559,
        0.2707556348051241,
        0.33714205902337674,
    },
};

//  Every numerics version and the digest (FNV-1a 64 over the bytes of
//  s_train_loss then s_val_loss) of the pins it made. Append a row when
//  the numbers change, never edit one: the last row must be this build's
//  MS_ENGINE_NUMERICS_VERSION and match the pins, so new pins need a new
//  version and a new version needs new pins.
static const struct {
    int version;     // MS_ENGINE_NUMERICS_VERSION
    uint64_t digest; // of the pins it made
} s_history[] = {
    {2, 0xb2f23ba9674aa909ULL},
};

//  Rows [start, start + n) of src as a new dataset.
static ms_dataset_t *
slice(const ms_dataset_t *src, int64_t start, int64_t n)
{
    ms_dataset_t *d = ms_synth_empty(src->n_features, src->n_classes);
    d->n_samples = n;
    d->x = malloc((size_t) (n * src->n_features) * sizeof(float));
    d->labels = malloc((size_t) n * sizeof(int32_t));
    memcpy(d->x, src->x + start * src->n_features,
           (size_t) (n * src->n_features) * sizeof(float));
    memcpy(d->labels, src->labels + start, (size_t) n * sizeof(int32_t));
    return d;
}

//  The config of case c.
static void
case_config(int c, ms_train_config_t *cfg)
{
    ms_train_config_defaults(cfg);
    cfg->learning_rate = 0.01;
    cfg->batch_size = 16;
    cfg->epochs = EPOCHS;
    cfg->seed = 3;
    switch (c) {
    case 0:
        cfg->n_hidden = 2;
        cfg->explicit_sizes = true;
        cfg->width = 0;
        cfg->hidden_sizes[0] = 16;
        cfg->hidden_sizes[1] = 8;
        cfg->dropout = 0.1;
        break;
    case 1:
        ms_train_config_set_uniform(cfg, 5, 12);
        cfg->architecture = MS_ARCH_RESIDUAL;
        cfg->norm = MS_NORM_LAYER;
        cfg->warmup_epochs = 1;
        break;
    default:
        ms_train_config_set_uniform(cfg, 6, 12);
        cfg->activation = MS_ACTIVATION_TANH;
        cfg->init = MS_INIT_XAVIER;
        cfg->architecture = MS_ARCH_RESIDUAL;
        cfg->block_layers = 2;
        cfg->norm = MS_NORM_BATCH;
        cfg->residual_scale = MS_RESIDUAL_SCALE_REZERO;
        cfg->dropout = 0.1;
        cfg->clip_norm = 0.5;
        break;
    }
}

//  FNV-1a 64 over n bytes, continuing from h.
static uint64_t
fnv(uint64_t h, const void *bytes, size_t n)
{
    const unsigned char *p = bytes;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

//  The curves of every case (train then val), trained now.
static void
train_cases(double train[N_CASES][EPOCHS], double val[N_CASES][EPOCHS])
{
    ms_dataset_t *all = ms_synth_blobs(300, 6, 3, 1.0, 11);
    ms_dataset_t *tr = slice(all, 0, 240), *va = slice(all, 240, 60);
    ms_dataset_t *test = ms_synth_empty(6, 3);
    ms_backend_t *b = ms_backend_cpu_new(1);
    for (int c = 0; c < N_CASES; c++) {
        ms_train_config_t cfg;
        case_config(c, &cfg);
        ms_run_result_t r;
        ms_diag_t diag;
        assert_int_equal(
            ms_train_run(&cfg, tr, va, test, b, NULL, NULL, &r, &diag), MS_OK);
        assert_int_equal(r.status, MS_RUN_OK);
        assert_int_equal(r.n_curve, EPOCHS);
        for (int e = 0; e < EPOCHS; e++) {
            train[c][e] = r.curve[e].train_loss;
            val[c][e] = r.curve[e].val_loss;
        }
        //  The curve is a learning curve, not noise.
        assert_true(train[c][EPOCHS - 1] < 0.7 * train[c][0]);
        ms_run_result_clear(&r);
    }
    ms_backend_destroy(&b);
    ms_synth_free(&all);
    ms_synth_free(&tr);
    ms_synth_free(&va);
    ms_synth_free(&test);
}

//  --------------------------------------------------------------------------
static void
test_loss_curve_pinned(void **state)
{
    (void) state;
    double train[N_CASES][EPOCHS], val[N_CASES][EPOCHS];
    train_cases(train, val);
    if (getenv("MS_GOLDEN_PRINT")) {
        printf("static const int s_pins_version = %d;\n",
               MS_ENGINE_NUMERICS_VERSION);
        const char *names[2] = {"s_train_loss", "s_val_loss"};
        for (int k = 0; k < 2; k++) {
            printf("static const double %s[N_CASES][EPOCHS] = {\n", names[k]);
            for (int c = 0; c < N_CASES; c++) {
                printf("    {\n");
                for (int e = 0; e < EPOCHS; e++)
                    printf("        %.17g,\n", k ? val[c][e] : train[c][e]);
                printf("    },\n");
            }
            printf("};\n");
        }
        uint64_t h = fnv(0xcbf29ce484222325ULL, train, sizeof train);
        h = fnv(h, val, sizeof val);
        printf("history row: {%d, 0x%016llxULL},\n", MS_ENGINE_NUMERICS_VERSION,
               (unsigned long long) h);
        return;
    }
    for (int c = 0; c < N_CASES; c++)
        for (int e = 0; e < EPOCHS; e++) {
            double t = train[c][e], v = val[c][e];
            double pt = s_train_loss[c][e], pv = s_val_loss[c][e];
            if (fabs(t - pt) > 1e-6 * fabs(pt) ||
                fabs(v - pv) > 1e-6 * fabs(pv))
                fail_msg("case %d, epoch %d: train %.17g (pinned %.17g), val "
                         "%.17g (pinned %.17g). The engine's numbers changed: "
                         "if that is intended, bump MS_ENGINE_NUMERICS_VERSION "
                         "(core/ms_platform.h, now %d) and regenerate the pins "
                         "(MS_GOLDEN_PRINT=1, the top of this file says how)",
                         c, e + 1, t, pt, v, pv, MS_ENGINE_NUMERICS_VERSION);
        }
}

//  The pins belong to this build's numerics version, and the history
//  ties that version to these pins.
static void
test_pins_match_numerics_version(void **state)
{
    (void) state;
    size_t n = sizeof s_history / sizeof s_history[0];
    for (size_t i = 1; i < n; i++)
        assert_true(s_history[i].version > s_history[i - 1].version);
    if (s_pins_version != MS_ENGINE_NUMERICS_VERSION ||
        s_history[n - 1].version != MS_ENGINE_NUMERICS_VERSION)
        fail_msg("the pins were made by numerics version %d and the history "
                 "ends at %d, but MS_ENGINE_NUMERICS_VERSION is %d: "
                 "regenerate the pins (MS_GOLDEN_PRINT=1) and add the "
                 "history row it prints",
                 s_pins_version, s_history[n - 1].version,
                 MS_ENGINE_NUMERICS_VERSION);
    uint64_t h = fnv(0xcbf29ce484222325ULL, s_train_loss, sizeof s_train_loss);
    h = fnv(h, s_val_loss, sizeof s_val_loss);
    if (h != s_history[n - 1].digest)
        fail_msg("the pins changed (digest 0x%016llx) but numerics version "
                 "%d's row says 0x%016llx: changed numbers need a new "
                 "version; bump MS_ENGINE_NUMERICS_VERSION and add a row",
                 (unsigned long long) h, MS_ENGINE_NUMERICS_VERSION,
                 (unsigned long long) s_history[n - 1].digest);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_curve_pinned),
        cmocka_unit_test(test_pins_match_numerics_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
