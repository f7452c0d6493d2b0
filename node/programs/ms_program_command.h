/*  =========================================================================
    ms_program_command - a program task's command line, from W&B's
    `command` list and its macros

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A W&B sweep file names its program and, optionally, the command that
    runs it: a list whose items are words or macros. As W&B's agent does,
    an item that is exactly a macro is replaced by the macro's words (none,
    one or many) and any other item is kept as it is:

      ${env}                    /usr/bin/env
      ${interpreter}            the node's program_python (/usr/bin/python3)
      ${program}                the program, as the sweep file names it
      ${args}                   --NAME=VALUE for each parameter
      ${args_no_hyphens}        NAME=VALUE
      ${args_no_boolean_flags}  --NAME=VALUE, but a true boolean is --NAME
                                and a false one is left out
      ${args_json}              one word: the parameters as a JSON object
      ${args_json_file}         one word: the path of a file holding it

    Without a command: ${env} ${interpreter} ${program} ${args} (W&B's
    default). VALUE is written as Python's str() writes the value W&B's
    agent holds (True, False, None, 0.001, 1e-05, 100.0, strings as they
    are, lists and objects as Python literals), so a script's argparse sees
    the words it sees under W&B. Parameters come in the order of the
    config object (the sweep file's order). An unknown macro is refused.

    Thread rule: pure functions; thread-safe.
    =========================================================================
*/
#ifndef MS_PROGRAM_COMMAND_H
#define MS_PROGRAM_COMMAND_H

#include "ms_err.h"

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

//  Build the argv of one run. command: the sweep file's `command` (a JSON
//  array of strings), or NULL for the default; config: the run's
//  parameters (a JSON object; nested objects are values); program: the
//  sweep file's `program`; interpreter: the node's Python; args_json_path:
//  what ${args_json_file} becomes (the caller writes the file; NULL when
//  the command has no such macro). On MS_OK *argv_out is a malloc'd
//  NULL-terminated array of malloc'd strings (free with ms_argv_free).
//  Returns MS_ERR_INVALID (diag: "command[I]", an item that is not a
//  string, an unknown macro, ${args_json_file} without a path, an empty
//  command); MS_ERR_NOMEM.
int ms_program_command_build(const json_t *command, const json_t *config,
                             const char *program, const char *interpreter,
                             const char *args_json_path, char ***argv_out,
                             ms_diag_t *diag);

//  Write value as Python's str() writes it (see above). Caller frees the
//  result; NULL when out of memory.
char *ms_program_command_py_str(const json_t *value);

#ifdef __cplusplus
}
#endif

#endif
