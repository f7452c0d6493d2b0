/*  =========================================================================
    ms_distribution - one sweep parameter's law, as W&B's sweep
    configuration writes it: parse with W&B's inference rules, check, draw

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A parameter of a W&B sweep file is `value`, `values` (with optional
    `probabilities`), or a `distribution` with its keys. W&B's laws, X the
    variable drawn:

      constant                value
      categorical             one of values, uniformly or by probabilities
      int_uniform             integers min..max, uniformly
      uniform                 uniform on [min, max]
      q_uniform               round(X / q) * q, X uniform(min, max)
      log_uniform             exp(X), X uniform(min, max): min and max are
                              natural logs of the bounds
      log_uniform_values      log X uniform on [log min, log max]
      q_log_uniform           round(X / q) * q, X log_uniform
      q_log_uniform_values    round(X / q) * q, X log_uniform_values
      inv_log_uniform         X with log(1/X) uniform on [min, max]
      inv_log_uniform_values  X with log(1/X) uniform on [log(1/max),
                              log(1/min)]
      normal                  normal(mu, sigma); mu 0 and sigma 1 by default
      q_normal                round(X / q) * q, X normal
      log_normal              exp(X), X normal(mu, sigma)
      q_log_normal            round(X / q) * q, X log_normal
      beta                    Beta(a, b); a and b 1 by default
      q_beta                  round(X / q) * q, X beta
    q is 1 by default. Without `distribution` W&B infers one: values ->
    categorical, value -> constant, integer min and max -> int_uniform,
    other min and max -> uniform, mu or sigma -> normal, a or b -> beta.
    A quantised law gives integers when q (and min and max, where it has
    them) are integers, as W&B's agent does.

    Thread rule: a distribution is immutable after parse; draws take the
    caller's rng.
    =========================================================================
*/
#ifndef MS_DISTRIBUTION_H
#define MS_DISTRIBUTION_H

#include "ms_err.h"
#include "ms_rng.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    MS_DISTRIBUTION_CONSTANT,
    MS_DISTRIBUTION_CATEGORICAL,
    MS_DISTRIBUTION_INT_UNIFORM,
    MS_DISTRIBUTION_UNIFORM,
    MS_DISTRIBUTION_Q_UNIFORM,
    MS_DISTRIBUTION_LOG_UNIFORM,
    MS_DISTRIBUTION_LOG_UNIFORM_VALUES,
    MS_DISTRIBUTION_Q_LOG_UNIFORM,
    MS_DISTRIBUTION_Q_LOG_UNIFORM_VALUES,
    MS_DISTRIBUTION_INV_LOG_UNIFORM,
    MS_DISTRIBUTION_INV_LOG_UNIFORM_VALUES,
    MS_DISTRIBUTION_NORMAL,
    MS_DISTRIBUTION_Q_NORMAL,
    MS_DISTRIBUTION_LOG_NORMAL,
    MS_DISTRIBUTION_Q_LOG_NORMAL,
    MS_DISTRIBUTION_BETA,
    MS_DISTRIBUTION_Q_BETA,
} ms_distribution_kind_t;

typedef struct ms_distribution ms_distribution_t;

//  Parse one parameter (a JSON object from the sweep file: value, values,
//  probabilities, distribution, min, max, q, mu, sigma, a, b) found at
//  path (e.g. "parameters.lr", for errors). On MS_OK *self_p is the law
//  (free with ms_distribution_destroy). Returns MS_ERR_INVALID (diag:
//  "PATH.KEY" and the reason: an unknown distribution or key, a key of
//  another law, min > max, a bound <= 0 where a log is taken, sigma, a, b
//  or q <= 0, probabilities that are not one per value, negative, or
//  summing to other than 1 within 1e-6); MS_ERR_NOMEM.
int ms_distribution_parse(ms_distribution_t **self_p, const json_t *param,
                          const char *path, ms_diag_t *diag);

//  The law's kind, and its name as W&B writes it.
ms_distribution_kind_t ms_distribution_kind(const ms_distribution_t *self);
const char *ms_distribution_name(const ms_distribution_t *self);

//  Draw one value (a new JSON value the caller owns: an integer or a real,
//  or a copy of one of the values), using rng.
json_t *ms_distribution_sample(const ms_distribution_t *self, ms_rng_t *rng);

//  The law's value at u in [0, 1) (its quantile function: u is a
//  uniform draw or a quasi-random point, e.g. a sobol coordinate), a new
//  JSON value the caller owns, typed as ms_distribution_sample types it.
//  categorical: values[floor(u n)], or by the cumulative probabilities;
//  int_uniform: min + floor(u (max - min + 1)); the normal laws through
//  the standard normal quantile (u kept above 2^-60). NULL for beta and
//  q_beta (no closed-form quantile; ms_distribution_has_quantile) or when
//  out of memory.
json_t *ms_distribution_quantile(const ms_distribution_t *self, double u);

//  False for the laws ms_distribution_quantile cannot evaluate (beta,
//  q_beta).
bool ms_distribution_has_quantile(const ms_distribution_t *self);

//  True when every draw is an integer number: int_uniform, or a quantised
//  law whose q is an integer (its JSON type still follows W&B: a real
//  unless min and max are integers too).
bool ms_distribution_integral(const ms_distribution_t *self);

//  The closure of a numeric law's support, quantised for the q_ laws:
//  [min, max], [exp min, exp max] for log_uniform, [0, 1] for beta, and
//  -INFINITY / INFINITY where unbounded (normal; log_normal [0, inf)).
//  False (lo and hi untouched) for constant and categorical.
bool ms_distribution_support(const ms_distribution_t *self, double *lo,
                             double *hi);

//  Free; NULL-safe; nulls *self_p.
void ms_distribution_destroy(ms_distribution_t **self_p);

#ifdef __cplusplus
}
#endif

#endif
