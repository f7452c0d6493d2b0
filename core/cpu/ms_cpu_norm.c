/*  =========================================================================
    ms_cpu_norm - layer norm, batch norm, the residual add and its scale,
    global gradient-norm clipping

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Layer norm (Ba et al. 2016) works on one row at a time: the row (one
    sample's fan_in features, 256 bytes at width 64) stays in L1 while its
    mean, its biased variance and the normalised output are computed, so
    forward and backward are each one pass over the matrix. Batch norm
    (Ioffe and Szegedy 2015) reduces over the minibatch's rows per column:
    column sums in row order into the small stats vectors, then one pass
    that writes the output; the matrix of a minibatch (51 KB at 200 x 64)
    stays in L2 between them.

    Reductions. A row sum is split into 8 lanes (lane k sums the elements
    k, k + 8, ...) that are combined in lane order, then the tail: a fixed
    order written in the source, so GCC may vectorise the lanes without
    changing a bit (no -ffast-math is needed, and the build's
    -ffp-contract=off forbids contraction). Column sums run over rows in
    ascending order, like ms_cpu_col_sum. The rezero scale's gradient and
    the global gradient norm sum in double, lanes again, in index order.
    So every result is a fixed function of its inputs: bit-identical
    reruns, whatever the timing (DESIGN.md "The training engine").

    Formulas (xhat = (x - mean) rstd, rstd = 1 / sqrt(var + eps),
    eps = MS_NORM_EPS, N the count reduced over):
        forward   y = gamma xhat + beta
        backward  dgamma = sum dy xhat, dbeta = sum dy (over rows)
                  layer:  g = gamma dy per row;
                          dx = rstd (g - mean(g) - xhat mean(g xhat))
                  batch:  dx = gamma rstd (dy - dbeta / N - xhat dgamma / N)
    Batch norm's running statistics follow PyTorch: running = (1 - m)
    running + m batch with m = MS_NORM_MOMENTUM, the variance unbiased
    (N / (N - 1); a one-row batch keeps its biased 0), and evaluation
    normalises with them.
*/
#include "ms_cpu.h"

#include <math.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Sum of n floats in the fixed 8-lane order.

static inline float
s_sum(const float *restrict x, int64_t n)
{
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++)
            lane[k] += x[j + k];
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        s += lane[k];
    for (; j < n; j++)
        s += x[j];
    return s;
}

//  --------------------------------------------------------------------------
//  Sum of (x - c)^2 over n floats in the fixed 8-lane order.

static inline float
s_sum_sq_dev(const float *restrict x, float c, int64_t n)
{
    float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int k = 0; k < 8; k++) {
            float d = x[j + k] - c;
            lane[k] += d * d;
        }
    float s = 0.0f;
    for (int k = 0; k < 8; k++)
        s += lane[k];
    for (; j < n; j++) {
        float d = x[j] - c;
        s += d * d;
    }
    return s;
}

//  --------------------------------------------------------------------------
//  Layer norm forward: per row, stats then the normalised row.

int
ms_cpu_layer_norm_forward(ms_backend_t *b, int64_t rows, int64_t cols,
                          const float *restrict x, const float *restrict gamma,
                          const float *restrict beta, float *restrict y,
                          float *restrict mean, float *restrict rstd)
{
    (void) b;
    const float inv_n = 1.0f / (float) cols;
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *yr = y + i * cols;
        float mu = s_sum(xr, cols) * inv_n;
        float var = s_sum_sq_dev(xr, mu, cols) * inv_n;
        float rs = 1.0f / sqrtf(var + MS_NORM_EPS);
        mean[i] = mu;
        rstd[i] = rs;
        for (int64_t j = 0; j < cols; j++)
            yr[j] = gamma[j] * ((xr[j] - mu) * rs) + beta[j];
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Layer norm backward: one pass over the rows; dgamma, dbeta summed over
//  rows in order; dx written or added. dx may be dy (not accumulating):
//  each row's sums are taken before its dx is written.

int
ms_cpu_layer_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                           const float *restrict x, const float *restrict gamma,
                           const float *restrict mean,
                           const float *restrict rstd, const float *dy,
                           float *dx, float *restrict dgamma,
                           float *restrict dbeta, bool accumulate)
{
    (void) b;
    const float inv_n = 1.0f / (float) cols;
    memset(dgamma, 0, (size_t) cols * sizeof(float));
    memset(dbeta, 0, (size_t) cols * sizeof(float));
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols, *dyr = dy + i * cols;
        float *dxr = dx + i * cols;
        const float mu = mean[i], rs = rstd[i];
        //  Sums of g = gamma dy and of g xhat, in the 8-lane order.
        float lg[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        float lgx[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t j = 0;
        for (; j + 8 <= cols; j += 8)
            for (int k = 0; k < 8; k++) {
                float xh = (xr[j + k] - mu) * rs;
                float g = gamma[j + k] * dyr[j + k];
                lg[k] += g;
                lgx[k] += g * xh;
            }
        float sg = 0.0f, sgx = 0.0f;
        for (int k = 0; k < 8; k++) {
            sg += lg[k];
            sgx += lgx[k];
        }
        for (; j < cols; j++) {
            float xh = (xr[j] - mu) * rs;
            float g = gamma[j] * dyr[j];
            sg += g;
            sgx += g * xh;
        }
        const float mg = sg * inv_n, mgx = sgx * inv_n;
        for (j = 0; j < cols; j++) {
            float xh = (xr[j] - mu) * rs;
            float d = dyr[j];
            dgamma[j] += d * xh;
            dbeta[j] += d;
            float v = rs * ((gamma[j] * d - mg) - xh * mgx);
            dxr[j] = accumulate ? dxr[j] + v : v;
        }
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Batch norm forward: column stats over the rows (training) or the
//  running ones (evaluation), then the normalised matrix.

int
ms_cpu_batch_norm_forward(ms_backend_t *b, bool training, int64_t rows,
                          int64_t cols, const float *restrict x,
                          const float *restrict gamma,
                          const float *restrict beta, float *run_mean,
                          float *run_var, float *restrict y,
                          float *restrict mean, float *restrict rstd)
{
    (void) b;
    if (training) {
        const float inv_n = 1.0f / (float) rows;
        memset(mean, 0, (size_t) cols * sizeof(float));
        memset(rstd, 0, (size_t) cols * sizeof(float));
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++)
                mean[j] += x[i * cols + j];
        for (int64_t j = 0; j < cols; j++)
            mean[j] *= inv_n;
        for (int64_t i = 0; i < rows; i++)
            for (int64_t j = 0; j < cols; j++) {
                float d = x[i * cols + j] - mean[j];
                rstd[j] += d * d; // sum of squared deviations, for now
            }
        const float m = MS_NORM_MOMENTUM, keep = 1.0f - MS_NORM_MOMENTUM;
        const float unbias =
            rows > 1 ? (float) rows / (float) (rows - 1) : 1.0f;
        for (int64_t j = 0; j < cols; j++) {
            float var = rstd[j] * inv_n;
            if (run_mean) {
                run_mean[j] = keep * run_mean[j] + m * mean[j];
                run_var[j] = keep * run_var[j] + m * (var * unbias);
            }
            rstd[j] = 1.0f / sqrtf(var + MS_NORM_EPS);
        }
    } else
        for (int64_t j = 0; j < cols; j++) {
            mean[j] = run_mean[j];
            rstd[j] = 1.0f / sqrtf(run_var[j] + MS_NORM_EPS);
        }
    for (int64_t i = 0; i < rows; i++) {
        const float *xr = x + i * cols;
        float *yr = y + i * cols;
        for (int64_t j = 0; j < cols; j++)
            yr[j] = gamma[j] * ((xr[j] - mean[j]) * rstd[j]) + beta[j];
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Batch norm backward (training statistics): the column sums, then dx.
//  dx may be dy (not accumulating): the sums are complete first.

int
ms_cpu_batch_norm_backward(ms_backend_t *b, int64_t rows, int64_t cols,
                           const float *restrict x, const float *restrict gamma,
                           const float *restrict mean,
                           const float *restrict rstd, const float *dy,
                           float *dx, float *restrict dgamma,
                           float *restrict dbeta, bool accumulate)
{
    (void) b;
    memset(dgamma, 0, (size_t) cols * sizeof(float));
    memset(dbeta, 0, (size_t) cols * sizeof(float));
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            float d = dy[i * cols + j];
            float xh = (x[i * cols + j] - mean[j]) * rstd[j];
            dgamma[j] += d * xh;
            dbeta[j] += d;
        }
    const float inv_n = 1.0f / (float) rows;
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            int64_t ij = i * cols + j;
            float xh = (x[ij] - mean[j]) * rstd[j];
            float v = gamma[j] * rstd[j] *
                      ((dy[ij] - dbeta[j] * inv_n) - xh * (dgamma[j] * inv_n));
            dx[ij] = accumulate ? dx[ij] + v : v;
        }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Residual add: out = h + s u.

int
ms_cpu_residual_forward(ms_backend_t *b, int64_t n, const float *restrict h,
                        const float *restrict scale, const float *restrict u,
                        float *restrict out)
{
    (void) b;
    if (scale) {
        const float s = *scale;
        for (int64_t i = 0; i < n; i++)
            out[i] = h[i] + s * u[i];
    } else
        for (int64_t i = 0; i < n; i++)
            out[i] = h[i] + u[i];
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Residual backward: the branch's gradient s g (masked), and the scale's
//  gradient sum g u.

int
ms_cpu_residual_backward(ms_backend_t *b, int64_t n, const float *restrict g,
                         const float *restrict scale, const float *restrict u,
                         const float *restrict mask, float *restrict gu,
                         float *restrict dscale)
{
    (void) b;
    const float s = scale ? *scale : 1.0f;
    if (mask)
        for (int64_t i = 0; i < n; i++)
            gu[i] = (s * g[i]) * mask[i];
    else if (scale)
        for (int64_t i = 0; i < n; i++)
            gu[i] = s * g[i];
    else
        memcpy(gu, g, (size_t) n * sizeof(float));
    if (dscale) {
        double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; k++)
                lane[k] += (double) g[i + k] * (double) u[i + k];
        double sum = 0;
        for (int k = 0; k < 8; k++)
            sum += lane[k];
        for (; i < n; i++)
            sum += (double) g[i] * (double) u[i];
        *dscale = (float) sum;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Global gradient-norm clipping.

int
ms_cpu_clip_norm(ms_backend_t *b, int64_t n, float *restrict g, float max_norm,
                 float *restrict factor)
{
    (void) b;
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            lane[k] += (double) g[i + k] * (double) g[i + k];
    double sum = 0;
    for (int k = 0; k < 8; k++)
        sum += lane[k];
    for (; i < n; i++)
        sum += (double) g[i] * (double) g[i];
    double norm = sqrt(sum);
    float f = 1.0f;
    if (norm > (double) max_norm) {
        f = (float) ((double) max_norm / norm);
        for (i = 0; i < n; i++)
            g[i] *= f;
    }
    if (factor)
        *factor = f;
    return MS_OK;
}
