/*  =========================================================================
    ms_config_json - a training config as JSON, and setting one parameter
    by name (specs, the CLI)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The JSON form of ms_train_config_t names every parameter of the
    DESIGN.md table with its value, defaults included, so that the
    canonical bytes of a config (ms_wire_canon_dump of this object) are
    what a task id hashes:

      kind, activation, leaky_slope, loss, init, optimizer, learning_rate,
      momentum, beta1, beta2, eps, schedule, step_size, gamma, l2, dropout,
      batch_size, epochs, early_stopping, patience, scale,
      validation_split, seed

    and, only where they differ from their defaults (so that the ids of
    sweeps made before them do not change): architecture, block_layers,
    norm, residual_scale, gain, warmup_epochs, clip_norm. gain is a float
    (> 0) or "auto" (the default, 0 in the struct); residual_scale is
    "1" or "rezero" (the number 1 is read as "1").

    plus the architecture: "hidden_layers" and "width" (integers) for a
    uniform network, or "hidden_sizes" (array of integers) when the config
    has explicit sizes (then neither hidden_layers nor width appears).
    Enums are written by name ("relu", "adamw"), floats as JSON reals
    (always, even 0.0), integers as JSON integers, booleans as true/false.

    Parameter types (ms_config_param_type): int params must be integral
    (a real with an integral value, e.g. 1e3, is accepted), float params
    accept integers, enums take their names, booleans take true/false,
    hidden_sizes takes an array of integers.
*/
#ifndef MS_CONFIG_JSON_H
#define MS_CONFIG_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "ms_config.h"
#include "ms_err.h"

//  The type of a parameter, as ms_config_set_param checks it.
typedef enum {
    MS_CONFIG_PARAM_UNKNOWN, // not a parameter name
    MS_CONFIG_PARAM_INT,     // JSON integer (or integral real)
    MS_CONFIG_PARAM_FLOAT,   // JSON real or integer
    MS_CONFIG_PARAM_BOOL,    // true / false
    MS_CONFIG_PARAM_ENUM,    // a name from a fixed list
    MS_CONFIG_PARAM_SIZES,   // array of integers (hidden_sizes)
} ms_config_param_type_t;

//  Encode every parameter of cfg as a new JSON object (see above).
//  Caller owns the result; release it with json_decref(). Returns NULL
//  only when memory runs out or a float field is NaN/infinite (which
//  ms_train_config_check refuses anyway).
json_t *ms_config_encode_json(const ms_train_config_t *cfg);

//  As ms_config_encode_json, with the parameters it leaves out at their
//  defaults written too (gain "auto" as 0.0, its struct value): a value
//  for every key, for readers of canonical configs that need one (the
//  analysis reads an absent warmup_epochs as this object's). Not the
//  canonical form: never hash it. Same ownership and NULL.
json_t *ms_config_encode_json_all(const ms_train_config_t *cfg);

//  Decode a JSON object into *cfg: start from ms_train_config_defaults,
//  apply every key with ms_config_set_param (architecture keys first,
//  so key order never matters), then, when "init" is absent, set init to
//  ms_init_default_for(activation), then ms_train_config_check. Returns
//  MS_OK; MS_ERR_INVALID when obj is not an object, a key is unknown,
//  a value has the wrong type or is out of range, hidden_sizes is given
//  together with hidden_layers or width: diag->where names the key (or
//  is empty when obj is not an object). *cfg is unspecified on error.
int ms_config_decode_json(const json_t *obj, ms_train_config_t *cfg,
                          ms_diag_t *diag);

//  Set the one parameter key (a DESIGN.md table name; '-' is accepted for
//  '_', so "learning-rate" works) of *cfg to value, with type checking
//  (see above). Architecture: "hidden_layers" keeps the current width
//  (100 when the config had explicit sizes), "width" keeps the current
//  layer count, "hidden_sizes" makes the sizes explicit (width becomes
//  0). Setting "activation" does NOT change init; callers that want the
//  activation's default init apply it themselves (decode_json and
//  ms_spec do). Returns MS_OK; MS_ERR_INVALID for an unknown key
//  (diag reason lists nothing; where = key), a wrong type, a non-integral
//  int, an unknown enum name (reason "unknown activation 'rleu'
//  (expected one of relu, leaky_relu, ...)"); MS_ERR_RANGE for an int
//  that does not fit its field, a layer count or width out of bounds.
//  diag->where is the key as given. cfg is unchanged on error.
int ms_config_set_param(ms_train_config_t *cfg, const char *key,
                        const json_t *value, ms_diag_t *diag);

//  Same as ms_config_set_param, from command-line text parsed for the
//  key's type: ints and floats by strtoll/strtod (the whole text must be
//  a number), booleans from true/false/yes/no/on/off/1/0 (an empty
//  string means true, for a bare "--early-stopping"), enums by name,
//  hidden_sizes as comma-separated integers ("100,10"; "" for none).
//  Same return codes; the reason quotes the text.
int ms_config_set_param_string(ms_train_config_t *cfg, const char *key,
                               const char *text, ms_diag_t *diag);

//  Type of parameter key ('-' or '_' spelling), or
//  MS_CONFIG_PARAM_UNKNOWN. "hidden_layers" and "width" are INT.
ms_config_param_type_t ms_config_param_type(const char *key);

//  Number of parameter names (26: the keys the JSON form can hold).
int ms_config_param_count(void);

//  The i-th parameter name in sorted order (static string, '_' spelling),
//  or NULL when i is out of range. For --help texts and error messages.
const char *ms_config_param_name(int i);

//  For an ENUM parameter: write "a, b, c" (its allowed names) into out
//  (size n, NUL-terminated, truncated if needed) and return out; for any
//  other key write "" and return out.
const char *ms_config_param_choices(const char *key, char *out, size_t n);

#endif
