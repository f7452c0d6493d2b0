/*  =========================================================================
    ms_prom - a Prometheus text exposition (format 0.0.4) being written

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The /metrics page (docs/METRICS.md). A writer collects families (name,
    type, help) and their samples (label pairs and a value) in any order
    and renders them grouped by family, each with one # HELP and one
    # TYPE line, in the order the families were first declared. It
    checks what the format requires: metric and label names
    ([a-zA-Z_:][a-zA-Z0-9_:]*, labels without ':' and not starting with
    "__"), one family per name, one sample per label set; it escapes
    label values (\\, \", \n) and help text (\\, \n), and writes values
    as the format spells them (NaN, +Inf, -Inf; integers exactly).

    Threads: one writer belongs to one thread.
*/
#ifndef MS_PROM_H
#define MS_PROM_H

#include <stddef.h>

#include "ms_err.h"

typedef struct ms_prom ms_prom_t;

//  Family types used here (untyped, summary and histogram are not).
typedef enum {
    MS_PROM_COUNTER, // only goes up (reset when the process restarts)
    MS_PROM_GAUGE    // goes up and down
} ms_prom_type_t;

//  A new empty writer, or NULL when memory runs out. Caller owns the
//  result; free it with ms_prom_destroy().
ms_prom_t *ms_prom_new(void);

//  Free the writer; NULL-safe; nulls *self_p.
void ms_prom_destroy(ms_prom_t **self_p);

//  Declare the family NAME of TYPE with one line of HELP (copied).
//  Declaring it again with the same type changes nothing.
//  Errors: MS_ERR_INVALID a malformed name or a NULL help;
//  MS_ERR_CONFLICT declared before with another type; MS_ERR_NOMEM.
int ms_prom_family(ms_prom_t *self, const char *name, ms_prom_type_t type,
                   const char *help);

//  Add one sample of the declared family NAME: VALUE with the label pairs
//  that follow (label name, label value, ..., then NULL; values copied,
//  any UTF-8 text). A counter's value must not be negative.
//  Errors: MS_ERR_NOTFOUND the family is not declared; MS_ERR_INVALID a
//  malformed label name, a label given twice, or a negative or NaN
//  counter; MS_ERR_CONFLICT the family has a sample with these labels
//  already; MS_ERR_NOMEM.
int ms_prom_sample(ms_prom_t *self, const char *name, double value, ...)
    __attribute__((sentinel));

//  The exposition text: every family with samples, each family's
//  samples in the order added (families without a sample are written
//  with their HELP and TYPE lines only). *len (may be NULL) gets its
//  length. Caller owns the result; free it with free(). NULL when memory
//  runs out.
char *ms_prom_text(const ms_prom_t *self, size_t *len);

//  Write VALUE as the format spells it into OUT (at least 32 bytes):
//  "NaN", "+Inf", "-Inf", an integral value below 2^53 in plain digits,
//  else the shortest %.17g form that reads back exactly.
void ms_prom_format_value(double value, char out[32]);

#endif
