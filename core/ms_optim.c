/*  =========================================================================
    ms_optim - optimizer step scalars and learning-rate schedules

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_optim.h"

#include <math.h>

#define S_PI 3.14159265358979323846

//  --------------------------------------------------------------------------
//  State floats per parameter.

int
ms_optim_state_per_param(ms_optim_kind_t kind)
{
    switch (kind) {
    case MS_OPTIM_SGD:
        return 0;
    case MS_OPTIM_MOMENTUM:
    case MS_OPTIM_NESTEROV:
        return 1;
    default:
        return 2;
    }
}

//  --------------------------------------------------------------------------
//  Scheduled learning rate.

double
ms_optim_schedule_lr(const ms_train_config_t *cfg, int32_t epoch)
{
    double lr = cfg->learning_rate;
    int32_t e = epoch < 1 ? 0 : epoch - 1;
    switch (cfg->schedule) {
    case MS_SCHEDULE_STEP:
        return lr * pow(cfg->gamma, (double) (e / cfg->step_size));
    case MS_SCHEDULE_COSINE:
        return lr * 0.5 * (1.0 + cos(S_PI * (double) e / (double) cfg->epochs));
    default:
        return lr;
    }
}

//  --------------------------------------------------------------------------
//  Warm-up factor of update t.

double
ms_optim_warmup_factor(const ms_train_config_t *cfg, int64_t t,
                       int64_t steps_per_epoch)
{
    if (!(cfg->warmup_epochs > 0))
        return 1.0;
    double w = ceil(cfg->warmup_epochs * (double) steps_per_epoch);
    if (w < 1.0 || (double) t >= w)
        return 1.0;
    return (double) t / w;
}

//  --------------------------------------------------------------------------
//  Per-step scalars.

void
ms_optim_step_prepare(ms_optim_step_t *step, const ms_train_config_t *cfg,
                      double lr, int64_t t, bool is_bias)
{
    step->kind = cfg->optimizer;
    step->lr = (float) lr;
    step->momentum = (float) cfg->momentum;
    step->beta1 = (float) cfg->beta1;
    step->beta2 = (float) cfg->beta2;
    step->eps = (float) cfg->eps;
    bool decoupled = cfg->optimizer == MS_OPTIM_ADAMW;
    step->l2 = is_bias || decoupled ? 0.0f : (float) cfg->l2;
    step->decay = is_bias || !decoupled ? 0.0f : (float) (lr * cfg->l2);
    double c1 = 1.0 - pow(cfg->beta1, (double) t);
    double c2 = 1.0 - pow(cfg->beta2, (double) t);
    step->bias_c1 = (float) c1;
    step->bias_c2 = (float) c2;
    step->lr_c1 = (float) (lr / c1);
    step->rsqrt_c2 = (float) (1.0 / sqrt(c2));
    step->skip = 0;
}
