/*  =========================================================================
    ms_backend_gpu - what a backend runs on, for a build whose backends
    are all CPU

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    ms_backend_info and ms_backend_set_tf32 as declared by the CUDA
    backend's branch (issue 6), for the CPU backend, so the node and the
    fingerprint can use them before that branch lands. When it lands, its
    core/ms_backend.c defines both for every backend and this file goes
    (a build that kept both would fail to link: duplicate symbols).
*/
#include "ms_backend.h"

#include <stdio.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  What the backend runs on: the CPU backend fills backend only.

int
ms_backend_info(const ms_backend_t *self, ms_backend_info_t *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->backend, sizeof out->backend, "%s",
             self ? ms_backend_name(self) : "cpu");
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  TF32: a CPU backend has none.

int
ms_backend_set_tf32(ms_backend_t *self, bool on)
{
    (void) self;
    (void) on;
    return MS_ERR_UNSUPPORTED;
}
