/*  =========================================================================
    ms_backend_gpu - GPU facts of a backend: the stubs of a build without
    the CUDA backend

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    A build with the CUDA backend (MESHSWEEP_HAVE_CUDA) defines
    ms_backend_gpu_info and ms_backend_cuda_probe in core/cuda/; this file
    then compiles to nothing. Without it no backend has a GPU, and the
    probe says why in the words the node logs when `--backend auto` falls
    back to the CPU.
*/
#include "ms_backend.h"

#include <string.h>

#ifndef MESHSWEEP_HAVE_CUDA

//  --------------------------------------------------------------------------
//  No backend of this build has a GPU.

int
ms_backend_gpu_info(const ms_backend_t *self, ms_gpu_info_t *out)
{
    (void) self;
    memset(out, 0, sizeof *out);
    return MS_ERR_NODEVICE;
}

//  --------------------------------------------------------------------------
//  The cuda backend cannot run: it is not built.

int
ms_backend_cuda_probe(ms_gpu_info_t *out, ms_diag_t *diag)
{
    memset(out, 0, sizeof *out);
    return ms_diag_set_code(diag, MS_ERR_NODEVICE, "backend",
                            "this build has no CUDA backend");
}

#endif
