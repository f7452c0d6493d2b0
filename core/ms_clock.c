/*  =========================================================================
    ms_clock - the clocks: monotonic, boot and wall

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_clock.h"

#include <time.h>

//  --------------------------------------------------------------------------
//  One clock in microseconds.

static int64_t
s_read_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

//  --------------------------------------------------------------------------
//  CLOCK_MONOTONIC, us.

int64_t
ms_clock_mono_us(void)
{
    return s_read_us(CLOCK_MONOTONIC);
}

//  --------------------------------------------------------------------------
//  CLOCK_MONOTONIC, ms.

int64_t
ms_clock_mono_ms(void)
{
    return s_read_us(CLOCK_MONOTONIC) / 1000;
}

//  --------------------------------------------------------------------------
//  CLOCK_MONOTONIC, s.

double
ms_clock_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

//  --------------------------------------------------------------------------
//  CLOCK_BOOTTIME, ms.

int64_t
ms_clock_boot_ms(void)
{
#ifdef CLOCK_BOOTTIME
    return s_read_us(CLOCK_BOOTTIME) / 1000;
#else
    return s_read_us(CLOCK_MONOTONIC) / 1000;
#endif
}

//  --------------------------------------------------------------------------
//  CLOCK_REALTIME, ms since the epoch.

int64_t
ms_clock_wall_ms(void)
{
    return s_read_us(CLOCK_REALTIME) / 1000;
}

//  --------------------------------------------------------------------------
//  The system table.

static int64_t
s_sys_mono(void *ctx)
{
    (void) ctx;
    return ms_clock_mono_ms();
}

static int64_t
s_sys_boot(void *ctx)
{
    (void) ctx;
    return ms_clock_boot_ms();
}

static int64_t
s_sys_wall(void *ctx)
{
    (void) ctx;
    return ms_clock_wall_ms();
}

static const ms_clock_t s_system = {s_sys_mono, s_sys_boot, s_sys_wall, 0};

const ms_clock_t *
ms_clock_system(void)
{
    return &s_system;
}

//  --------------------------------------------------------------------------
//  A fake clock's readers.

static int64_t
s_fake_mono(void *ctx)
{
    return ((const ms_clock_fake_t *) ctx)->mono_ms;
}

static int64_t
s_fake_boot(void *ctx)
{
    return ((const ms_clock_fake_t *) ctx)->boot_ms;
}

static int64_t
s_fake_wall(void *ctx)
{
    return ((const ms_clock_fake_t *) ctx)->wall_ms;
}

void
ms_clock_fake(ms_clock_fake_t *fake, ms_clock_t *clock)
{
    clock->mono_ms = s_fake_mono;
    clock->boot_ms = s_fake_boot;
    clock->wall_ms = s_fake_wall;
    clock->ctx = fake;
}
