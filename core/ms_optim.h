/*  =========================================================================
    ms_optim - optimizer rules and learning-rate schedules

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    Update rules, with g the minibatch gradient of the mean loss, w a
    parameter, l2 the config's L2 coefficient (biases are never decayed):

      sgd       g' = g + l2 w;  w -= lr g'
      momentum  g' = g + l2 w;  v = mu v + g';  w -= lr v
      nesterov  g' = g + l2 w;  v = mu v + g';  w -= lr (g' + mu v)
                (Sutskever et al. 2013, in the form PyTorch uses)
      adam      g' = g + l2 w;  m = b1 m + (1 - b1) g';
                v = b2 v + (1 - b2) g'^2;
                w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
                (Kingma and Ba 2015, Algorithm 1, t = steps taken, from 1),
                evaluated as w -= lr_c1 m / (sqrt(v) rsqrt_c2 + eps) with
                lr_c1 = lr / (1 - b1^t), rsqrt_c2 = 1 / sqrt(1 - b2^t)
                computed once per step: one division per element instead
                of three, eps still added after the bias correction (the
                form PyTorch uses; it differs from the line above only in
                rounding)
      adamw     as adam with g' = g, and first w -= lr l2 w: decay
                decoupled from the gradient (Loshchilov and Hutter 2019,
                with the schedule multiplier folded into lr as PyTorch does)

    L2 here means the penalty (l2 / 2) ||W||^2 added to the loss, so its
    gradient is l2 W; the reported loss excludes it. The element-wise
    arithmetic is float32, the per-step scalars are computed in double once
    and rounded, so every backend can reproduce the same bits.

    Schedules (epoch e is 1-based, E = cfg->epochs):
      constant  lr
      step      lr gamma^floor((e - 1) / step_size)
      cosine    lr (1 + cos(pi (e - 1) / E)) / 2   (Loshchilov and Hutter
                2017, SGDR without restarts, down to 0 after the last epoch)
    and, with warmup_epochs, each step's rate times the warm-up factor
    (ms_optim_warmup_factor), whatever the schedule. The epoch's reported
    learning_rate is the schedule's, before warm-up.
*/
#ifndef MS_OPTIM_H
#define MS_OPTIM_H

#include <stdbool.h>
#include <stdint.h>

#include "ms_backend.h"
#include "ms_config.h"

//  Optimizer state floats kept per parameter: 0 (sgd), 1 (momentum,
//  nesterov), 2 (adam, adamw).
int ms_optim_state_per_param(ms_optim_kind_t kind);

//  Learning rate of 1-based epoch under cfg's schedule.
double ms_optim_schedule_lr(const ms_train_config_t *cfg, int32_t epoch);

//  Linear learning-rate warm-up (Goyal et al. 2017): the factor by which
//  update number t (1-based, counted over the whole run) multiplies the
//  schedule's rate: min(1, t / W) with W = ceil(warmup_epochs x
//  steps_per_epoch) minibatch steps (fractional epochs allowed); 1 when
//  warmup_epochs is 0. Computed in double on the host, so every backend
//  gets the same step scalars.
double ms_optim_warmup_factor(const ms_train_config_t *cfg, int64_t t,
                              int64_t steps_per_epoch);

//  Fill *step for update number t (1-based) at learning rate lr, for a
//  weight segment (decayed) or a bias segment (is_bias: no L2, no decay).
void ms_optim_step_prepare(ms_optim_step_t *step, const ms_train_config_t *cfg,
                           double lr, int64_t t, bool is_bias);

#endif
