/*  =========================================================================
    ms_golden_test - pins the loss curve of a small network on a small
    fixed synthetic dataset

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A 6-16-8-3 relu network (dropout 0.1, adam 0.01, L2 1e-4, batch 16,
    seed 3) trains 8 epochs on 240 Gaussian-blob samples and validates on
    60 more. Its per-epoch training and validation losses must match the
    numbers below within 1e-6 relative. They catch any change to the
    arithmetic of the engine (init draws, shuffle order, dropout masks,
    loss, backward pass, optimizer) that the other tests, which check
    properties, would let through.

    OpenBLAS picks its SGEMM kernel at load time from the CPU, which could
    change the last bits; labels.cmake pins OPENBLAS_CORETYPE=Haswell (and
    OPENBLAS_L2_SIZE, one thread) for this test. Bit-identity is asserted
    only between reruns (ms_train_test); here the tolerance allows for
    other x86-64 CPUs running the same Haswell kernel through different
    libm builds.

    To regenerate after an intended change of the arithmetic: build, then
    run from the build folder
        OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512 OPENBLAS_NUM_THREADS=1 \
            MS_GOLDEN_PRINT=1 ./tests/ms_golden_test
    and paste the two arrays it prints over s_train_loss and s_val_loss,
    saying in the commit message why the numbers changed.
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

#include "ms_synth.h"
#include "ms_train.h"

enum { EPOCHS = 8 };

static const double s_train_loss[EPOCHS] = {
    0.88707672022806849, 0.52394001793039346, 0.45180995747709485,
    0.3984765070073546,  0.3429104932705892,  0.36167391823973816,
    0.32267452794694179, 0.35141223834501806,
};
static const double s_val_loss[EPOCHS] = {
    0.66633606220942687, 0.42293630197664656, 0.39068335953904404,
    0.33315921972815948, 0.31864892102904829, 0.3348106473493585,
    0.32885515110287661, 0.30601715637390475,
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

//  --------------------------------------------------------------------------
static void
test_loss_curve_pinned(void **state)
{
    (void) state;
    ms_dataset_t *all = ms_synth_blobs(300, 6, 3, 1.0, 11);
    ms_dataset_t *train = slice(all, 0, 240), *val = slice(all, 240, 60);
    ms_dataset_t *test = ms_synth_empty(6, 3);
    ms_train_config_t cfg;
    ms_train_config_defaults(&cfg);
    cfg.n_hidden = 2;
    cfg.explicit_sizes = true;
    cfg.width = 0;
    cfg.hidden_sizes[0] = 16;
    cfg.hidden_sizes[1] = 8;
    cfg.dropout = 0.1;
    cfg.learning_rate = 0.01;
    cfg.batch_size = 16;
    cfg.epochs = EPOCHS;
    cfg.seed = 3;
    ms_backend_t *b = ms_backend_cpu_new(1);
    ms_run_result_t r;
    ms_diag_t diag;
    assert_int_equal(
        ms_train_run(&cfg, train, val, test, b, NULL, NULL, &r, &diag), MS_OK);
    assert_int_equal(r.status, MS_RUN_OK);
    assert_int_equal(r.n_curve, EPOCHS);
    if (getenv("MS_GOLDEN_PRINT")) {
        printf("static const double s_train_loss[EPOCHS] = {\n");
        for (int e = 0; e < EPOCHS; e++)
            printf("    %.17g,\n", r.curve[e].train_loss);
        printf("};\nstatic const double s_val_loss[EPOCHS] = {\n");
        for (int e = 0; e < EPOCHS; e++)
            printf("    %.17g,\n", r.curve[e].val_loss);
        printf("};\n");
    } else
        for (int e = 0; e < EPOCHS; e++) {
            double t = r.curve[e].train_loss, v = r.curve[e].val_loss;
            if (fabs(t - s_train_loss[e]) > 1e-6 * fabs(s_train_loss[e]) ||
                fabs(v - s_val_loss[e]) > 1e-6 * fabs(s_val_loss[e]))
                fail_msg("epoch %d: train %.17g (pinned %.17g), val %.17g "
                         "(pinned %.17g)",
                         e + 1, t, s_train_loss[e], v, s_val_loss[e]);
        }
    //  The curve is a learning curve, not noise.
    assert_true(r.curve[EPOCHS - 1].train_loss < 0.7 * r.curve[0].train_loss);
    ms_run_result_clear(&r);
    ms_backend_destroy(&b);
    ms_synth_free(&all);
    ms_synth_free(&train);
    ms_synth_free(&val);
    ms_synth_free(&test);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loss_curve_pinned),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
