/*  =========================================================================
    ms_spec_program - the sweep side of program sweeps: `program`,
    `command`, `resources`, free-form and nested parameters, and their
    canonical form (part of ms_spec; ms_spec_internal.h)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A spec with `program` is a program sweep (DESIGN.md "Program tasks"):
    the researcher's own script runs with the sweep's parameters, as W&B's
    agent runs it. What changes against a built-in sweep, and why:

    Parameters are the program's, so any name is taken and no value is
    checked (the program judges its own); the laws, their W&B inference
    rules and the methods are the same as for built-in sweeps. A law of
    integers (int_uniform, or a q_ law with an integer q, which W&B's own
    examples use for "integers between 32 and 256") draws integers; any
    other draws floats. Nested parameters (`optimizer: {parameters: {lr:
    ..., momentum: ...}}`) are W&B's: each leaf is one dimension, named
    "optimizer.lr" in messages and ordered by that name, and a run's
    config holds it nested ({"optimizer": {"lr": ...}}), as W&B passes it.
    A leaf whose dotted name equals another's (a key "a.b" beside a nested
    a: b) is refused: the two would be one dimension drawn twice.

    A task's config is the JSON object of its values, canonical (sorted
    keys, canonical numbers), so ${args} lists the parameters in name
    order, the same on every node.

    `program` is a path relative to the spec's folder (the folder the
    client packs: ms_program_archive), without "..", so it names a file
    inside the archive. `command` is W&B's list; each macro is checked
    here (ms_program_command_build on an empty config), so an unknown one
    is refused at submission with its index, not at every run.
    `resources: {cpus, gpus, memory_mb}` (Ray Tune's per-trial resources):
    defaults 1 core, no GPU, the node's program_memory_mb. They are part
    of the sweep id (a run that asks for a GPU is another experiment).

    Canonical form: the head gains "command" (when given), "program":
    {"blob": HEX, "path": P} and "resources": {"cpus", "gpus",
    "memory_mb"}; "dataset" is left out when the sweep names none. All
    sort before "tasks", so ms_spec_canonical.c's splice holds. The blob
    hash covers every file of the folder, so an edited script is a new
    sweep, and its tasks new tasks. keep_weights is "none": a program has
    no weights (what it leaves in outputs/ is kept as a blob instead).

    Not yet: the node and `meshsweep run` refuse program sweeps until the
    sandboxed runner (node/programs/ms_sandbox) is wired to the workers.
*/
#include "ms_spec_internal.h"

#include "ms_argv.h"
#include "ms_program_command.h"
#include "ms_wire_canon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MAX_DEPTH 4             // nesting levels of `parameters`
#define S_MAX_PARAMS 256          // leaves of one program sweep
#define S_MAX_PROGRAM_PATH 255    // bytes of `program`
#define S_MAX_CPUS 4096           // resources.cpus
#define S_MAX_GPUS 64             // resources.gpus
#define S_MAX_MEMORY_MB (1 << 24) // resources.memory_mb: 16 TiB

//  --------------------------------------------------------------------------
//  Is path a relative path that stays inside its folder? (No leading '/',
//  no empty, "." or ".." component, no control characters.)

static bool
s_path_inside(const char *path)
{
    if (!path[0] || path[0] == '/')
        return false;
    for (const char *c = path; *c; c++)
        if ((unsigned char) *c < 0x20 || *c == 0x7f)
            return false;
    const char *part = path;
    while (*part) {
        size_t len = strcspn(part, "/");
        if (len == 0 || (len == 1 && part[0] == '.') ||
            (len == 2 && part[0] == '.' && part[1] == '.'))
            return false;
        part += len;
        if (*part == '/')
            part++;
        if (!*part && part[-1] == '/')
            return false;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  `program: PATH`.

static int
s_parse_program(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *node)
{
    const char *path;
    int rc = ms_spec_get_string(ctx, node, "program", &path);
    if (rc)
        return rc;
    if (strlen(path) > S_MAX_PROGRAM_PATH || !s_path_inside(path))
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, "program",
                            "'%.80s' is not a path inside the spec's folder "
                            "(relative, without '..', at most %d bytes)",
                            path, S_MAX_PROGRAM_PATH);
    if (!ms_spec_strdup_to(&self->program_path, path))
        return MS_ERR_NOMEM;
    self->program.path = self->program_path;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  `command: [WORD | MACRO, ...]`: each macro known.

static int
s_parse_command(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *node)
{
    if (!node || node->type != YAML_SEQUENCE_NODE)
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, "command",
                            "must be a list of words and macros, not %s",
                            ms_spec_node_kind(node));
    json_t *command = NULL;
    int rc = ms_spec_node_json(ctx, node, "command", 0, &command);
    if (rc)
        return rc;
    size_t i;
    json_t *word;
    json_array_foreach(command, i, word)
    {
        if (!json_is_string(word)) {
            char where[MS_SPEC_PATH_MAX];
            ms_spec_pathf(where, "command[%zu]", i);
            json_decref(command);
            return ms_spec_fail(
                ctx, MS_ERR_INVALID,
                ms_spec_node(ctx, node->data.sequence.items.start[i]), where,
                "must be a string (quote numbers)");
        }
    }
    //  The macros, checked once here rather than at every run.
    json_t *empty = json_object();
    char **argv = NULL;
    ms_diag_t local;
    ms_diag_clear(&local);
    rc = empty ? ms_program_command_build(command, empty, "program",
                                          "/usr/bin/python3", "args.json",
                                          &argv, &local)
               : MS_ERR_NOMEM;
    json_decref(empty);
    ms_argv_free(&argv);
    if (rc == MS_ERR_INVALID) {
        json_decref(command);
        return ms_spec_fail(ctx, rc, node, local.where, "%s", local.reason);
    }
    if (rc) {
        json_decref(command);
        return rc;
    }
    json_decref(self->command);
    self->command = command;
    self->program.command = command;
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  `resources: {cpus, gpus, memory_mb}`.

static int
s_parse_resources(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *node)
{
    int rc = ms_spec_check_mapping(ctx, node, "resources");
    if (rc)
        return rc;
    static const char *const keys[] = {"cpus", "gpus", "memory_mb"};
    const int64_t lo[] = {1, 0, 1};
    const int64_t hi[] = {S_MAX_CPUS, S_MAX_GPUS, S_MAX_MEMORY_MB};
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        yaml_node_t *v = ms_spec_node(ctx, pair->value);
        char where[MS_SPEC_PATH_MAX];
        ms_spec_pathf(where, "resources.%s", ms_spec_scalar(k));
        int i = ms_spec_index_of(keys, MS_SPEC_COUNT(keys), ms_spec_scalar(k));
        if (i < 0)
            return ms_spec_fail(ctx, MS_ERR_INVALID, k, where,
                                "unknown key (expected cpus, gpus, "
                                "memory_mb)");
        double real;
        int64_t value;
        if ((rc = ms_spec_get_number(ctx, v, where, true, &real, &value)))
            return rc;
        if (value < lo[i] || value > hi[i])
            return ms_spec_fail(ctx, MS_ERR_INVALID, v, where,
                                "%lld is out of range [%lld, %lld]",
                                (long long) value, (long long) lo[i],
                                (long long) hi[i]);
        if (i == 0)
            self->program.resources.cpus = (int32_t) value;
        else if (i == 1)
            self->program.resources.gpus = (int32_t) value;
        else
            self->program.resources.memory_mb = value;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A top-level key of a program sweep.

int
ms_spec_program_key(ms_spec_ctx_t *ctx, ms_spec_t *self, const char *key,
                    const yaml_node_t *node)
{
    if (!ctx->program)
        return ms_spec_fail(ctx, MS_ERR_INVALID, node, key,
                            "only for program sweeps (give program: PATH; a "
                            "built-in task's memory need comes from its "
                            "network)");
    if (strcmp(key, "program") == 0)
        return s_parse_program(ctx, self, node);
    if (strcmp(key, "command") == 0)
        return s_parse_command(ctx, self, node);
    return s_parse_resources(ctx, self, node);
}

//  --------------------------------------------------------------------------
//  Order leaves by dotted name.

static int
s_leaf_compare(const void *a, const void *b)
{
    return strcmp(((const ms_spec_param_t *) a)->name,
                  ((const ms_spec_param_t *) b)->name);
}

//  Where the walk collects leaves.
typedef struct {
    ms_spec_param_t *params; // leaves (S_MAX_PARAMS allocated)
    size_t n;                // leaves parsed
} s_leaves_t;

//  --------------------------------------------------------------------------
//  Parse the mapping NODE of parameters at PATH, under the key path KEYS
//  (NULL at the top) and dotted PREFIX ("" at the top), into LEAVES.

static int
s_walk(ms_spec_ctx_t *ctx, ms_spec_t *self, const yaml_node_t *node,
       const char *path, const json_t *keys, const char *prefix, int depth,
       s_leaves_t *leaves)
{
    int rc = ms_spec_check_mapping(ctx, node, path);
    if (rc)
        return rc;
    for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
         pair < node->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = ms_spec_node(ctx, pair->key);
        yaml_node_t *v = ms_spec_node(ctx, pair->value);
        const char *key = ms_spec_scalar(k);
        char sub[MS_SPEC_PATH_MAX], name[MS_SPEC_PATH_MAX];
        ms_spec_pathf(sub, "%s.%s", path, key);
        ms_spec_pathf(name, "%s%s%s", prefix, prefix[0] ? "." : "", key);
        if (!key[0])
            return ms_spec_fail(ctx, MS_ERR_INVALID, k, sub,
                                "a parameter needs a name");
        json_t *below = keys ? json_deep_copy(keys) : json_array();
        if (!below || json_array_append_new(below, json_string(key))) {
            json_decref(below);
            return MS_ERR_NOMEM;
        }
        //  A nested group: {parameters: {...}} and nothing else.
        yaml_node_t *nested = NULL;
        size_t n_keys = 0;
        if (v && v->type == YAML_MAPPING_NODE)
            for (yaml_node_pair_t *q = v->data.mapping.pairs.start;
                 q < v->data.mapping.pairs.top; q++, n_keys++) {
                const char *vk = ms_spec_scalar(ms_spec_node(ctx, q->key));
                if (vk && strcmp(vk, "parameters") == 0)
                    nested = ms_spec_node(ctx, q->value);
            }
        if (nested) {
            char inner[MS_SPEC_PATH_MAX];
            ms_spec_pathf(inner, "%s.parameters", sub);
            if (n_keys != 1)
                rc = ms_spec_fail(ctx, MS_ERR_INVALID, v, sub,
                                  "a nested group takes only `parameters`");
            else if (depth + 1 >= S_MAX_DEPTH)
                rc = ms_spec_fail(ctx, MS_ERR_INVALID, nested, inner,
                                  "nested more than %d levels deep",
                                  S_MAX_DEPTH);
            else
                rc = s_walk(ctx, self, nested, inner, below, name, depth + 1,
                            leaves);
            json_decref(below);
            if (rc)
                return rc;
            continue;
        }
        if (leaves->n >= S_MAX_PARAMS) {
            json_decref(below);
            return ms_spec_fail(ctx, MS_ERR_INVALID, k, sub,
                                "more than %d parameters", S_MAX_PARAMS);
        }
        ms_spec_param_t *param = &leaves->params[leaves->n];
        rc = ms_spec_parse_param(ctx, self, name, sub, k, v, param);
        leaves->n++; // parsed or not, it is freed with the others
        param->keys = below;
        if (rc)
            return rc;
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  A program sweep's parameters, flattened.

int
ms_spec_program_params(ms_spec_ctx_t *ctx, ms_spec_t *self,
                       const yaml_node_t *node, ms_spec_param_t **params,
                       size_t *n_params)
{
    s_leaves_t leaves = {calloc(S_MAX_PARAMS, sizeof *leaves.params), 0};
    *params = leaves.params;
    *n_params = 0;
    if (!leaves.params)
        return MS_ERR_NOMEM;
    int rc = s_walk(ctx, self, node, "parameters", NULL, "", 0, &leaves);
    *n_params = leaves.n;
    if (rc)
        return rc;
    qsort(leaves.params, leaves.n, sizeof *leaves.params, s_leaf_compare);
    for (size_t i = 1; i < leaves.n; i++)
        if (strcmp(leaves.params[i - 1].name, leaves.params[i].name) == 0)
            return ms_diag_set(ctx->diag, "parameters",
                               "'%s' is given twice (once nested; lines %zu "
                               "and %zu)",
                               leaves.params[i].name, leaves.params[i - 1].line,
                               leaves.params[i].line);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Set VALUE (a new reference, taken) at the key path KEYS of OBJ.

static int
s_set_at(json_t *obj, const json_t *keys, json_t *value)
{
    size_t depth = json_array_size(keys);
    for (size_t d = 0; d + 1 < depth; d++) {
        const char *key = json_string_value(json_array_get(keys, d));
        json_t *next = json_object_get(obj, key);
        if (!json_is_object(next)) {
            next = json_object();
            if (!next || json_object_set_new(obj, key, next)) {
                json_decref(value);
                return MS_ERR_NOMEM;
            }
        }
        obj = next;
    }
    const char *leaf = json_string_value(json_array_get(keys, depth - 1));
    return json_object_set_new(obj, leaf, value) ? MS_ERR_NOMEM : MS_OK;
}

//  --------------------------------------------------------------------------
//  One program task's canonical config.

int
ms_spec_program_task(const ms_spec_param_t *params, size_t n_params,
                     json_t *const *values, char **json, size_t *len)
{
    *json = NULL;
    json_t *obj = json_object();
    if (!obj)
        return MS_ERR_NOMEM;
    int rc = MS_OK;
    for (size_t p = 0; p < n_params && rc == MS_OK; p++)
        rc = s_set_at(obj, params[p].keys, json_incref(values[p]));
    if (rc == MS_OK) {
        *json = ms_wire_canon_dump_len(obj, len);
        if (!*json)
            rc = MS_ERR_NOMEM;
    }
    json_decref(obj);
    return rc;
}

//  --------------------------------------------------------------------------
//  The program keys of the canonical head.

int
ms_spec_program_canonical(const ms_spec_t *self, json_t *head)
{
    char hex[MS_HASH_HEX_LEN + 1];
    ms_hash_hex(&self->program.blob, hex);
    const ms_spec_resources_t *r = &self->program.resources;
    json_t *program =
        json_pack("{s:s, s:s}", "blob", hex, "path", self->program_path);
    json_t *resources =
        json_pack("{s:i, s:i, s:I}", "cpus", (int) r->cpus, "gpus",
                  (int) r->gpus, "memory_mb", (json_int_t) r->memory_mb);
    int rc = json_object_set_new(head, "program", program) |
             json_object_set_new(head, "resources", resources);
    if (rc == 0 && self->command)
        rc = json_object_set(head, "command", self->command);
    return rc ? MS_ERR_NOMEM : MS_OK;
}

//  --------------------------------------------------------------------------
//  Read the program keys of a canonical spec back.

int
ms_spec_program_load(ms_spec_t *self, const json_t *root, ms_diag_t *diag)
{
    const json_t *program = json_object_get(root, "program");
    const json_t *resources = json_object_get(root, "resources");
    const json_t *command = json_object_get(root, "command");
    const char *blob = json_string_value(json_object_get(program, "blob"));
    const char *path = json_string_value(json_object_get(program, "path"));
    if (!json_is_object(program) || json_object_size(program) != 2 || !blob ||
        !path || !s_path_inside(path) ||
        ms_hash_from_hex(blob, &self->program.blob) != MS_OK)
        return ms_diag_set(diag, "program", "needs blob (hex) and path");
    json_t *cpus = json_object_get(resources, "cpus");
    json_t *gpus = json_object_get(resources, "gpus");
    json_t *mem = json_object_get(resources, "memory_mb");
    if (!json_is_object(resources) || json_object_size(resources) != 3 ||
        !json_is_integer(cpus) || !json_is_integer(gpus) ||
        !json_is_integer(mem) || json_integer_value(cpus) < 1 ||
        json_integer_value(cpus) > S_MAX_CPUS || json_integer_value(gpus) < 0 ||
        json_integer_value(gpus) > S_MAX_GPUS || json_integer_value(mem) < 0 ||
        json_integer_value(mem) > S_MAX_MEMORY_MB)
        return ms_diag_set(diag, "resources",
                           "needs cpus, gpus, memory_mb "
                           "in range");
    if (command) {
        size_t i;
        json_t *word;
        bool strings = json_is_array(command) && json_array_size(command) > 0;
        json_array_foreach(command, i, word) strings &= json_is_string(word);
        if (!strings)
            return ms_diag_set(diag, "command", "needs a list of strings");
        json_decref(self->command);
        self->command = json_incref((json_t *) command);
    }
    if (!ms_spec_strdup_to(&self->program_path, path))
        return MS_ERR_NOMEM;
    self->program.path = self->program_path;
    self->program.command = self->command;
    self->program.hashed = true;
    self->program.resources.cpus = (int32_t) json_integer_value(cpus);
    self->program.resources.gpus = (int32_t) json_integer_value(gpus);
    self->program.resources.memory_mb = json_integer_value(mem);
    return MS_OK;
}
