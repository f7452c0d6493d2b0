/*  =========================================================================
    ms_err - project-wide status codes and user-facing diagnostics

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Describe a status code.

const char *
ms_strerror(int code)
{
    switch (code) {
    case MS_OK:
        return "success";
    case MS_ERR_NOMEM:
        return "out of memory";
    case MS_ERR_IO:
        return "input/output error";
    case MS_ERR_INVALID:
        return "invalid input";
    case MS_ERR_NOTFOUND:
        return "not found";
    case MS_ERR_CONFLICT:
        return "conflict with existing data";
    case MS_ERR_EXPIRED:
        return "expired";
    case MS_ERR_UNSUPPORTED:
        return "not supported";
    case MS_ERR_RANGE:
        return "value out of range";
    case MS_ERR_INTERRUPTED:
        return "interrupted";
    case MS_ERR_TIMEOUT:
        return "timed out";
    case MS_ERR_BADSIG:
        return "bad signature";
    case MS_ERR_UNTRUSTED:
        return "not a trusted member";
    case MS_ERR_STORE_FULL:
        return "store map is full";
    case MS_ERR_STORE:
        return "store error";
    case MS_ERR_STORE_NFS:
        return "data dir is on a network file system";
    case MS_ERR_NODEVICE:
        return "no usable device";
    case MS_ERR_BACKEND:
        return "backend error";
    case MS_ERR_DATASET:
        return "bad dataset";
    case MS_ERR_PROTOCOL:
        return "protocol error";
    case MS_ERR_HTTP:
        return "HTTP error";
    default:
        return "unknown error";
    }
}

//  --------------------------------------------------------------------------
//  Fill a diagnostic from a va_list.

static void s_diag_vset(ms_diag_t *diag, const char *where, const char *fmt,
                        va_list ap) __attribute__((format(printf, 3, 0)));

static void
s_diag_vset(ms_diag_t *diag, const char *where, const char *fmt, va_list ap)
{
    if (!diag)
        return;
    snprintf(diag->where, sizeof diag->where, "%s", where ? where : "");
    vsnprintf(diag->reason, sizeof diag->reason, fmt, ap);
}

//  --------------------------------------------------------------------------
//  Set a diagnostic; returns MS_ERR_INVALID.

int
ms_diag_set(ms_diag_t *diag, const char *where, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_diag_vset(diag, where, fmt, ap);
    va_end(ap);
    return MS_ERR_INVALID;
}

//  --------------------------------------------------------------------------
//  Set a diagnostic; returns the given code.

int
ms_diag_set_code(ms_diag_t *diag, int code, const char *where, const char *fmt,
                 ...)
{
    va_list ap;
    va_start(ap, fmt);
    s_diag_vset(diag, where, fmt, ap);
    va_end(ap);
    return code;
}

//  --------------------------------------------------------------------------
//  Clear a diagnostic.

void
ms_diag_clear(ms_diag_t *diag)
{
    if (diag) {
        diag->where[0] = '\0';
        diag->reason[0] = '\0';
    }
}

//  --------------------------------------------------------------------------
//  Format "WHERE: REASON".

const char *
ms_diag_format(const ms_diag_t *diag, char *out, size_t out_size)
{
    if (!out || out_size == 0)
        return out;
    if (!diag)
        snprintf(out, out_size, "unknown error");
    else if (diag->where[0])
        snprintf(out, out_size, "%s: %s", diag->where, diag->reason);
    else
        snprintf(out, out_size, "%s", diag->reason);
    return out;
}
