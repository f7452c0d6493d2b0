/*  =========================================================================
    ms_be - big-endian integers in byte buffers

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
    The signed and stored encodings (certificates, authority items, store
    keys) write their integers big-endian, so that byte order is numeric
    order and the bytes are the same on every host. These four are the
    one writing of that; each file had its own. Header-only (static
    inline): they are a few instructions each and sit in hot key code.
    No state: any thread.
*/
#ifndef MS_BE_H
#define MS_BE_H

#include <stdint.h>

//  Write V as 4 big-endian bytes at P (room for 4). Returns P + 4.
static inline uint8_t *
ms_be_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t) (v >> 24);
    p[1] = (uint8_t) (v >> 16);
    p[2] = (uint8_t) (v >> 8);
    p[3] = (uint8_t) v;
    return p + 4;
}

//  Write V as 8 big-endian bytes at P (room for 8). Returns P + 8.
static inline uint8_t *
ms_be_put64(uint8_t *p, uint64_t v)
{
    ms_be_put32(p, (uint32_t) (v >> 32));
    return ms_be_put32(p + 4, (uint32_t) v);
}

//  The 4 big-endian bytes at P as a number.
static inline uint32_t
ms_be_get32(const uint8_t *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 |
           (uint32_t) p[2] << 8 | (uint32_t) p[3];
}

//  The 8 big-endian bytes at P as a number.
static inline uint64_t
ms_be_get64(const uint8_t *p)
{
    return (uint64_t) ms_be_get32(p) << 32 | ms_be_get32(p + 4);
}

#endif
