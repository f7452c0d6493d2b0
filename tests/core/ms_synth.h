/*  =========================================================================
    ms_synth - small synthetic datasets for the core tests

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Built by hand (not through ms_dataset.c) so the engine tests depend on
    nothing but the engine: Gaussian blobs around random class centres
    (separable when spread is small), or a noisy linear regression target.
    Free with ms_synth_free.
*/
#ifndef MS_SYNTH_H
#define MS_SYNTH_H

#include <stdlib.h>

#include "ms_dataset.h"
#include "ms_rng.h"

//  n samples, d features, k classes (k >= 2), drawn from seed.
static inline ms_dataset_t *
ms_synth_blobs(int64_t n, int32_t d, int32_t k, double spread, uint64_t seed)
{
    ms_dataset_t *ds = calloc(1, sizeof *ds);
    ds->n_samples = n;
    ds->n_features = d;
    ds->n_classes = k;
    ds->x = malloc((size_t) (n * d + 1) * sizeof(float));
    ds->labels = malloc((size_t) (n + 1) * sizeof(int32_t));
    ms_rng_t rng;
    ms_rng_seed(&rng, seed, 99);
    double *centres = malloc((size_t) k * (size_t) d * sizeof(double));
    for (int64_t i = 0; i < (int64_t) k * d; i++)
        centres[i] = ms_rng_normal(&rng);
    for (int64_t i = 0; i < n; i++) {
        int32_t c = (int32_t) ms_rng_below(&rng, (uint64_t) k);
        ds->labels[i] = c;
        for (int32_t j = 0; j < d; j++)
            ds->x[i * d + j] =
                (float) (centres[c * d + j] + spread * ms_rng_normal(&rng));
    }
    free(centres);
    return ds;
}

//  n samples, d features, target = sum_j w_j x_j + noise.
static inline ms_dataset_t *
ms_synth_regression(int64_t n, int32_t d, double noise, uint64_t seed)
{
    ms_dataset_t *ds = calloc(1, sizeof *ds);
    ds->n_samples = n;
    ds->n_features = d;
    ds->n_classes = 0;
    ds->x = malloc((size_t) (n * d + 1) * sizeof(float));
    ds->targets = malloc((size_t) (n + 1) * sizeof(float));
    ms_rng_t rng;
    ms_rng_seed(&rng, seed, 98);
    for (int64_t i = 0; i < n; i++) {
        double t = 0;
        for (int32_t j = 0; j < d; j++) {
            double x = ms_rng_normal(&rng);
            ds->x[i * d + j] = (float) x;
            t += x * (double) (j % 3 - 1) * 0.5;
        }
        ds->targets[i] = (float) (t + noise * ms_rng_normal(&rng));
    }
    return ds;
}

//  An empty dataset with d features.
static inline ms_dataset_t *
ms_synth_empty(int32_t d, int32_t k)
{
    ms_dataset_t *ds = calloc(1, sizeof *ds);
    ds->n_features = d;
    ds->n_classes = k;
    return ds;
}

//  Free a synthetic dataset.
static inline void
ms_synth_free(ms_dataset_t **ds_p)
{
    if (*ds_p) {
        free((*ds_p)->x);
        free((*ds_p)->labels);
        free((*ds_p)->targets);
        free(*ds_p);
        *ds_p = NULL;
    }
}

#endif
