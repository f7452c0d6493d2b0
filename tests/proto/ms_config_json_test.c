/*  =========================================================================
    ms_config_json_test - config <-> JSON, set by name, CLI strings

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_config_json.h"
#include "ms_wire_canon.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

//  The canonical JSON of the default config: every key of DESIGN.md.
#define S_DEFAULT_CANON                                                        \
    "{\"activation\":\"relu\",\"batch_size\":200,\"beta1\":0.9,"               \
    "\"beta2\":0.999,\"dropout\":0.0,\"early_stopping\":false,"                \
    "\"epochs\":10,\"eps\":1e-08,\"gamma\":0.1,\"hidden_layers\":1,"           \
    "\"init\":\"he\",\"kind\":\"train\",\"l2\":0.0001,"                        \
    "\"leaky_slope\":0.01,\"learning_rate\":0.001,"                            \
    "\"loss\":\"cross_entropy\",\"momentum\":0.9,\"optimizer\":\"adam\","      \
    "\"patience\":5,\"scale\":\"unit\",\"schedule\":\"constant\","             \
    "\"seed\":1,\"step_size\":10,\"validation_split\":0.1,\"width\":100}"

//  --------------------------------------------------------------------------
//  A heap config (the struct is about 16 KiB).

static ms_train_config_t *
s_config(void)
{
    ms_train_config_t *cfg = malloc(sizeof *cfg);
    assert_non_null(cfg);
    ms_train_config_defaults(cfg);
    return cfg;
}

//  --------------------------------------------------------------------------
//  Canonical text of a config.

static char *
s_canon(const ms_train_config_t *cfg)
{
    json_t *obj = ms_config_encode_json(cfg);
    assert_non_null(obj);
    char *text = ms_wire_canon_dump(obj);
    json_decref(obj);
    assert_non_null(text);
    return text;
}

static void
test_encode_defaults(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    char *text = s_canon(cfg);
    assert_string_equal(text, S_DEFAULT_CANON);
    free(text);
    //  Every named parameter except hidden_sizes and the seven written
    //  only away from their defaults is a key.
    static const char *s_later[] = {
        "architecture", "block_layers",  "norm",     "residual_scale",
        "gain",         "warmup_epochs", "clip_norm"};
    json_t *obj = ms_config_encode_json(cfg);
    for (int i = 0; i < ms_config_param_count(); i++) {
        const char *name = ms_config_param_name(i);
        bool later = strcmp(name, "hidden_sizes") == 0;
        for (size_t k = 0; k < sizeof s_later / sizeof *s_later; k++)
            later = later || strcmp(name, s_later[k]) == 0;
        if (later)
            assert_null(json_object_get(obj, name));
        else
            assert_non_null(json_object_get(obj, name));
    }
    assert_int_equal(json_object_size(obj), ms_config_param_count() - 8);
    json_decref(obj);
    //  _all writes those seven too, at their defaults (the analysis reads
    //  an absent key as this); hidden_sizes stays out of a uniform net.
    obj = ms_config_encode_json_all(cfg);
    assert_int_equal(json_object_size(obj), ms_config_param_count() - 1);
    assert_true(json_real_value(json_object_get(obj, "warmup_epochs")) == 0.0);
    assert_string_equal(json_string_value(json_object_get(obj, "architecture")),
                        "plain");
    assert_int_equal(json_integer_value(json_object_get(obj, "block_layers")),
                     1);
    json_decref(obj);
    free(cfg);
}

static void
test_encode_explicit_sizes(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    json_t *sizes = json_pack("[i, i]", 100, 10);
    assert_int_equal(ms_config_set_param(cfg, "hidden_sizes", sizes, NULL),
                     MS_OK);
    json_decref(sizes);
    assert_true(cfg->explicit_sizes);
    assert_int_equal(cfg->n_hidden, 2);
    assert_int_equal(cfg->width, 0);
    json_t *obj = ms_config_encode_json(cfg);
    assert_null(json_object_get(obj, "width"));
    assert_null(json_object_get(obj, "hidden_layers"));
    char *text = ms_wire_canon_dump(json_object_get(obj, "hidden_sizes"));
    assert_string_equal(text, "[100,10]");
    free(text);
    json_decref(obj);
    free(cfg);
}

static void
test_round_trip(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    ms_train_config_t *back = s_config();
    //  A config with every field away from its default.
    cfg->kind = MS_KIND_NOOP;
    ms_train_config_set_uniform(cfg, 7, 33);
    cfg->activation = MS_ACTIVATION_SELU;
    cfg->leaky_slope = 0.2;
    cfg->loss = MS_LOSS_MSE;
    cfg->init = MS_INIT_ORTHOGONAL;
    cfg->optimizer = MS_OPTIM_NESTEROV;
    cfg->learning_rate = 0.0031;
    cfg->momentum = 0.95;
    cfg->beta1 = 0.8;
    cfg->beta2 = 0.99;
    cfg->eps = 1e-7;
    cfg->schedule = MS_SCHEDULE_COSINE;
    cfg->step_size = 3;
    cfg->gamma = 0.5;
    cfg->l2 = 0;
    cfg->dropout = 0.25;
    cfg->batch_size = 64;
    cfg->epochs = 4;
    cfg->early_stopping = true;
    cfg->patience = 2;
    cfg->scale = MS_SCALE_STANDARD;
    cfg->validation_split = 0.2;
    cfg->seed = 1234567890123LL;
    json_t *obj = ms_config_encode_json(cfg);
    ms_diag_t diag;
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_OK);
    json_decref(obj);
    char *a = s_canon(cfg);
    char *b = s_canon(back);
    assert_string_equal(a, b);
    assert_int_equal(back->n_hidden, 7);
    assert_int_equal(back->hidden_sizes[6], 33);
    assert_int_equal(back->init, MS_INIT_ORTHOGONAL);
    assert_true(back->seed == 1234567890123LL);
    free(a);
    free(b);
    //  Explicit sizes round-trip too.
    json_t *sizes = json_pack("[i, i, i]", 5, 6, 7);
    ms_config_set_param(cfg, "hidden_sizes", sizes, NULL);
    json_decref(sizes);
    obj = ms_config_encode_json(cfg);
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_OK);
    json_decref(obj);
    assert_true(back->explicit_sizes);
    assert_int_equal(back->n_hidden, 3);
    assert_int_equal(back->hidden_sizes[2], 7);
    free(cfg);
    free(back);
}

static void
test_decode_defaults_and_init(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    ms_diag_t diag;
    //  Missing keys take defaults; init follows the activation.
    json_t *obj = json_pack("{s:s, s:i}", "activation", "selu", "width", 32);
    assert_int_equal(ms_config_decode_json(obj, cfg, &diag), MS_OK);
    assert_int_equal(cfg->activation, MS_ACTIVATION_SELU);
    assert_int_equal(cfg->init, MS_INIT_LECUN);
    assert_int_equal(cfg->width, 32);
    assert_int_equal(cfg->n_hidden, 1);
    assert_int_equal(cfg->batch_size, 200);
    json_decref(obj);
    obj = json_pack("{s:s}", "activation", "tanh");
    assert_int_equal(ms_config_decode_json(obj, cfg, &diag), MS_OK);
    assert_int_equal(cfg->init, MS_INIT_XAVIER);
    json_decref(obj);
    //  An explicit init wins, whatever the key order.
    obj = json_pack("{s:s, s:s}", "init", "he", "activation", "tanh");
    assert_int_equal(ms_config_decode_json(obj, cfg, &diag), MS_OK);
    assert_int_equal(cfg->init, MS_INIT_HE);
    json_decref(obj);
    //  width before hidden_layers in the object: same network.
    obj = json_loads("{\"width\": 64, \"hidden_layers\": 3}", 0, NULL);
    assert_int_equal(ms_config_decode_json(obj, cfg, &diag), MS_OK);
    assert_int_equal(cfg->n_hidden, 3);
    assert_int_equal(cfg->hidden_sizes[2], 64);
    json_decref(obj);
    free(cfg);
}

static void
test_decode_errors(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    ms_diag_t diag;
    struct {
        const char *json;
        const char *where;
        const char *reason_part;
    } cases[] = {
        {"{\"widht\": 3}", "widht", "unknown parameter"},
        {"{\"learning-rate\": 0.1}", "learning-rate", "unknown parameter"},
        {"{\"width\": \"wide\"}", "width", "must be an integer"},
        {"{\"width\": 2.5}", "width", "non-integral"},
        {"{\"width\": 0}", "width", "1..65536"},
        {"{\"hidden_layers\": -1}", "hidden_layers", "0..4096"},
        {"{\"learning_rate\": \"fast\"}", "learning_rate", "must be a number"},
        {"{\"early_stopping\": 1}", "early_stopping", "true or false"},
        {"{\"activation\": \"rleu\"}", "activation",
         "unknown activation 'rleu' (expected one of relu, leaky_relu, elu, "
         "selu, gelu, tanh, sigmoid, linear)"},
        {"{\"optimizer\": 3}", "optimizer", "must be one of"},
        {"{\"hidden_sizes\": [10, \"x\"]}", "hidden_sizes", "hidden_sizes[1]"},
        {"{\"hidden_sizes\": 10}", "hidden_sizes", "list of integers"},
        {"{\"hidden_sizes\": [10], \"width\": 3}", "hidden_sizes", "not both"},
        {"{\"dropout\": 1.5}", "dropout", "[0, 1)"},
        {"{\"batch_size\": 5000000000}", "batch_size", "32 bits"},
        {"[1, 2]", "", "JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *obj = json_loads(cases[i].json, 0, NULL);
        assert_non_null(obj);
        memset(&diag, 0, sizeof diag);
        int rc = ms_config_decode_json(obj, cfg, &diag);
        json_decref(obj);
        if (rc == MS_OK)
            fail_msg("accepted %s", cases[i].json);
        assert_string_equal(diag.where, cases[i].where);
        if (!strstr(diag.reason, cases[i].reason_part))
            fail_msg("%s: reason '%s' lacks '%s'", cases[i].json, diag.reason,
                     cases[i].reason_part);
    }
    free(cfg);
}

static void
test_set_param_types(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    ms_diag_t diag;
    //  Floats accept integers; ints accept integral reals.
    json_t *one = json_integer(1);
    assert_int_equal(ms_config_set_param(cfg, "gamma", one, &diag), MS_OK);
    assert_true(cfg->gamma == 1.0);
    json_decref(one);
    json_t *thousand = json_real(1e3);
    assert_int_equal(ms_config_set_param(cfg, "epochs", thousand, &diag),
                     MS_OK);
    assert_int_equal(cfg->epochs, 1000);
    json_decref(thousand);
    //  Dashes work as underscores.
    json_t *lr = json_real(0.01);
    assert_int_equal(ms_config_set_param(cfg, "learning-rate", lr, &diag),
                     MS_OK);
    assert_true(cfg->learning_rate == 0.01);
    json_decref(lr);
    //  hidden_layers keeps width, width keeps layers.
    json_t *four = json_integer(4), *w = json_integer(256);
    assert_int_equal(ms_config_set_param(cfg, "hidden_layers", four, &diag),
                     MS_OK);
    assert_int_equal(ms_config_set_param(cfg, "width", w, &diag), MS_OK);
    assert_int_equal(cfg->n_hidden, 4);
    assert_int_equal(cfg->hidden_sizes[3], 256);
    json_decref(four);
    json_decref(w);
    //  A refused value leaves cfg unchanged.
    json_t *bad = json_string("rleu");
    ms_activation_t before = cfg->activation;
    assert_int_equal(ms_config_set_param(cfg, "activation", bad, &diag),
                     MS_ERR_INVALID);
    assert_int_equal(cfg->activation, before);
    assert_string_equal(diag.where, "activation");
    json_decref(bad);
    json_t *x = json_integer(1);
    assert_int_equal(ms_config_set_param(cfg, "nope", x, &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.reason, "unknown parameter");
    json_decref(x);
    free(cfg);
}

static void
test_set_param_string(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    ms_diag_t diag;
    assert_int_equal(
        ms_config_set_param_string(cfg, "learning-rate", "0.01", &diag), MS_OK);
    assert_true(cfg->learning_rate == 0.01);
    assert_int_equal(ms_config_set_param_string(cfg, "epochs", "3", &diag),
                     MS_OK);
    assert_int_equal(cfg->epochs, 3);
    assert_int_equal(
        ms_config_set_param_string(cfg, "early-stopping", "", &diag), MS_OK);
    assert_true(cfg->early_stopping);
    assert_int_equal(
        ms_config_set_param_string(cfg, "early_stopping", "no", &diag), MS_OK);
    assert_false(cfg->early_stopping);
    assert_int_equal(
        ms_config_set_param_string(cfg, "activation", "tanh", &diag), MS_OK);
    assert_int_equal(cfg->activation, MS_ACTIVATION_TANH);
    assert_int_equal(
        ms_config_set_param_string(cfg, "hidden-sizes", "100, 10", &diag),
        MS_OK);
    assert_true(cfg->explicit_sizes);
    assert_int_equal(cfg->n_hidden, 2);
    assert_int_equal(cfg->hidden_sizes[0], 100);
    assert_int_equal(cfg->hidden_sizes[1], 10);
    assert_int_equal(ms_config_set_param_string(cfg, "hidden_sizes", "", &diag),
                     MS_OK);
    assert_int_equal(cfg->n_hidden, 0);
    assert_int_equal(ms_config_set_param_string(cfg, "seed", "-7", &diag),
                     MS_OK);
    assert_true(cfg->seed == -7);
    //  Refusals quote the text and name the key.
    assert_int_equal(ms_config_set_param_string(cfg, "epochs", "3x", &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "epochs");
    assert_non_null(strstr(diag.reason, "'3x'"));
    assert_int_equal(ms_config_set_param_string(cfg, "dropout", "lots", &diag),
                     MS_ERR_INVALID);
    assert_int_equal(ms_config_set_param_string(cfg, "dropout", "inf", &diag),
                     MS_ERR_INVALID);
    assert_int_equal(
        ms_config_set_param_string(cfg, "early_stopping", "maybe", &diag),
        MS_ERR_INVALID);
    assert_int_equal(
        ms_config_set_param_string(cfg, "hidden_sizes", "10,,3", &diag),
        MS_ERR_INVALID);
    assert_int_equal(
        ms_config_set_param_string(cfg, "hidden_sizes", "10,0", &diag),
        MS_ERR_RANGE);
    assert_int_equal(
        ms_config_set_param_string(cfg, "optimizer", "adamax", &diag),
        MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "adamw"));
    assert_int_equal(ms_config_set_param_string(cfg, "colour", "red", &diag),
                     MS_ERR_INVALID);
    free(cfg);
}

static void
test_param_table(void **state)
{
    (void) state;
    assert_int_equal(ms_config_param_count(), 33);
    for (int i = 1; i < ms_config_param_count(); i++)
        assert_true(
            strcmp(ms_config_param_name(i - 1), ms_config_param_name(i)) < 0);
    assert_null(ms_config_param_name(33));
    assert_int_equal(ms_config_param_type("width"), MS_CONFIG_PARAM_INT);
    assert_int_equal(ms_config_param_type("learning-rate"),
                     MS_CONFIG_PARAM_FLOAT);
    assert_int_equal(ms_config_param_type("early_stopping"),
                     MS_CONFIG_PARAM_BOOL);
    assert_int_equal(ms_config_param_type("scale"), MS_CONFIG_PARAM_ENUM);
    assert_int_equal(ms_config_param_type("hidden_sizes"),
                     MS_CONFIG_PARAM_SIZES);
    assert_int_equal(ms_config_param_type("x"), MS_CONFIG_PARAM_UNKNOWN);
    char out[128];
    assert_string_equal(ms_config_param_choices("schedule", out, sizeof out),
                        "constant, step, cosine");
    assert_string_equal(ms_config_param_choices("width", out, sizeof out), "");
}

//  The depth parameters: written only away from their defaults, read
//  back, and checked (residual widths, gain, block_layers).
static void
test_depth_params(void **state)
{
    (void) state;
    ms_train_config_t *cfg = s_config();
    ms_train_config_t *back = s_config();
    ms_diag_t diag = {0};
    assert_int_equal(
        ms_config_set_param_string(cfg, "architecture", "residual", &diag),
        MS_OK);
    assert_int_equal(ms_config_set_param_string(cfg, "norm", "layer", &diag),
                     MS_OK);
    assert_int_equal(
        ms_config_set_param_string(cfg, "residual-scale", "rezero", &diag),
        MS_OK);
    assert_int_equal(ms_config_set_param_string(cfg, "gain", "1", &diag),
                     MS_OK);
    assert_int_equal(
        ms_config_set_param_string(cfg, "warmup_epochs", "0.5", &diag), MS_OK);
    assert_int_equal(ms_config_set_param_string(cfg, "clip_norm", "1", &diag),
                     MS_OK);
    assert_int_equal(
        ms_config_set_param_string(cfg, "block_layers", "2", &diag), MS_OK);
    ms_train_config_set_uniform(cfg, 5, 64);
    char *text = s_canon(cfg);
    json_t *obj = ms_config_encode_json(cfg);
    assert_string_equal(json_string_value(json_object_get(obj, "norm")),
                        "layer");
    assert_string_equal(
        json_string_value(json_object_get(obj, "residual_scale")), "rezero");
    assert_true(json_real_value(json_object_get(obj, "gain")) == 1.0);
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_OK);
    char *again = s_canon(back);
    assert_string_equal(text, again);
    assert_int_equal(back->architecture, MS_ARCH_RESIDUAL);
    assert_int_equal(back->block_layers, 2);
    assert_true(back->warmup_epochs == 0.5 && back->clip_norm == 1.0);
    free(text);
    free(again);
    json_decref(obj);
    //  auto gain and residual_scale 1 (YAML's number) are the defaults.
    obj = json_pack("{s:s, s:i}", "gain", "auto", "residual_scale", 1);
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_OK);
    assert_true(back->gain == 0.0);
    assert_int_equal(back->residual_scale, MS_RESIDUAL_SCALE_ONE);
    json_decref(obj);
    text = s_canon(back);
    assert_string_equal(text, S_DEFAULT_CANON);
    free(text);
    //  Refusals, each naming its key.
    obj = json_pack("{s:f}", "gain", -1.0);
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "gain");
    json_decref(obj);
    obj = json_pack("{s:i}", "block_layers", 3);
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "block_layers");
    json_decref(obj);
    obj = json_pack("{s:s, s:[i, i, i]}", "architecture", "residual",
                    "hidden_sizes", 64, 64, 32);
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_ERR_INVALID);
    assert_string_equal(diag.where, "hidden_sizes");
    assert_non_null(strstr(diag.reason, "hidden layer 1 has 64 units, hidden "
                                        "layer 2 has 32"));
    json_decref(obj);
    obj = json_pack("{s:s}", "norm", "group");
    assert_int_equal(ms_config_decode_json(obj, back, &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "none, layer, batch"));
    json_decref(obj);
    free(back);
    free(cfg);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_defaults),
        cmocka_unit_test(test_encode_explicit_sizes),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_decode_defaults_and_init),
        cmocka_unit_test(test_decode_errors),
        cmocka_unit_test(test_set_param_types),
        cmocka_unit_test(test_set_param_string),
        cmocka_unit_test(test_param_table),
        cmocka_unit_test(test_depth_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
