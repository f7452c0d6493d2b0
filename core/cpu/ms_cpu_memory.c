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

//  --------------------------------------------------------------------------
//  Gather rows by index; the prefetch hides the miss latency of scattered
//  rows (the copies are the same bytes with or without it).

int
ms_cpu_gather(ms_backend_t *b, int64_t rows, int64_t cols, const void *src,
              const int64_t *idx, const ms_step_cursor_t *cursor, void *dst)
{
    (void) b;
    int64_t first = cursor ? cursor->first_row : 0;
    size_t row_bytes = (size_t) cols * 4;
    const char *s = src;
    char *d = dst;
    if (!idx) {
        if (rows > 0)
            memmove(d, s + (size_t) first * row_bytes,
                    (size_t) rows * row_bytes);
        return MS_OK;
    }
    const int64_t *pick = idx + first;
    for (int64_t i = 0; i < rows; i++) {
        if (i + 4 < rows && row_bytes >= 64) {
            const char *ahead = s + (size_t) pick[i + 4] * row_bytes;
            for (size_t k = 0; k < row_bytes; k += 64)
                __builtin_prefetch(ahead + k);
        }
        memcpy(d + (size_t) i * row_bytes, s + (size_t) pick[i] * row_bytes,
               row_bytes);
    }
    return MS_OK;
}

//  --------------------------------------------------------------------------
//  No graphs on the CPU.

int
ms_cpu_capture(ms_backend_t *b, int (*fn)(void *arg), void *arg,
               ms_backend_graph_t **out)
{
    (void) b;
    (void) fn;
    (void) arg;
    *out = NULL;
    return MS_ERR_UNSUPPORTED;
}

//  --------------------------------------------------------------------------
//  Never called.

int
ms_cpu_graph_launch(ms_backend_t *b, ms_backend_graph_t *graph)
{
    (void) b;
    (void) graph;
    return MS_ERR_UNSUPPORTED;
}

//  --------------------------------------------------------------------------
//  Nothing to free.

void
ms_cpu_graph_destroy(ms_backend_t *b, ms_backend_graph_t *graph)
{
    (void) b;
    (void) graph;
}
