/*  =========================================================================
    ms_cpu_memory - CPU backend buffers: aligned host memory

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_cpu.h"

#include <stdlib.h>
#include <string.h>

#define S_ALIGN 64 // bytes: one cache line, any SIMD width

//  --------------------------------------------------------------------------
//  Zeroed, 64-byte aligned allocation.

void *
ms_cpu_alloc(ms_backend_t *b, size_t n_bytes)
{
    (void) b;
    size_t size = (n_bytes + S_ALIGN - 1) / S_ALIGN * S_ALIGN;
    if (size == 0)
        size = S_ALIGN;
    void *p = aligned_alloc(S_ALIGN, size);
    if (p)
        memset(p, 0, size);
    return p;
}

//  --------------------------------------------------------------------------
//  Free a buffer.

void
ms_cpu_free_buf(ms_backend_t *b, void *buf)
{
    (void) b;
    free(buf);
}

//  --------------------------------------------------------------------------
//  Host to device: a copy.

int
ms_cpu_upload(ms_backend_t *b, void *dst, const void *src, size_t n_bytes)
{
    (void) b;
    if (n_bytes && dst != src)
        memmove(dst, src, n_bytes);
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  Device to host: a copy.

int
ms_cpu_download(ms_backend_t *b, void *dst, const void *src, size_t n_bytes)
{
    return ms_cpu_upload(b, dst, src, n_bytes);
}

//  --------------------------------------------------------------------------
//  Device to device: a copy.

int
ms_cpu_copy(ms_backend_t *b, void *dst, const void *src, size_t n_bytes)
{
    return ms_cpu_upload(b, dst, src, n_bytes);
}
