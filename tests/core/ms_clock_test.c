/*  =========================================================================
    ms_clock_test - the clocks and the fake clock tests drive

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_clock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

//  --------------------------------------------------------------------------
//  The monotonic clock moves forward in every unit and the units agree;
//  boot time is never behind the monotonic clock (it also counts
//  suspend); the wall clock is the epoch time.

static void
test_system_clocks(void **state)
{
    (void) state;
    int64_t us0 = ms_clock_mono_us(), ms0 = ms_clock_mono_ms();
    double s0 = ms_clock_mono_s();
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    int64_t us1 = ms_clock_mono_us(), ms1 = ms_clock_mono_ms();
    double s1 = ms_clock_mono_s();
    assert_true(us1 - us0 >= 20000);
    assert_true(ms1 - ms0 >= 20);
    assert_true(s1 - s0 >= 0.02);
    assert_true(ms1 - us1 / 1000 <= 1 && us1 / 1000 - ms1 <= 1000);
    assert_true(ms_clock_boot_ms() >= ms_clock_mono_ms() - 1);
    int64_t wall = ms_clock_wall_ms();
    int64_t now = (int64_t) time(NULL) * 1000;
    assert_true(wall >= now - 2000 && wall <= now + 2000);
    const ms_clock_t *sys = ms_clock_system();
    assert_true(sys->mono_ms(sys->ctx) >= ms1);
    assert_true(sys->wall_ms(sys->ctx) >= wall);
}

//  --------------------------------------------------------------------------
//  A fake clock reads what the test set, and follows it when moved.

static void
test_fake_clock(void **state)
{
    (void) state;
    ms_clock_fake_t fake = {.mono_ms = 1000, .boot_ms = 5000, .wall_ms = 7};
    ms_clock_t clock;
    ms_clock_fake(&fake, &clock);
    assert_int_equal(clock.mono_ms(clock.ctx), 1000);
    assert_int_equal(clock.boot_ms(clock.ctx), 5000);
    assert_int_equal(clock.wall_ms(clock.ctx), 7);
    fake.mono_ms += 250;   // time passes for the class under test
    fake.boot_ms += 60000; // ... and a suspend only the boot clock counts
    assert_int_equal(clock.mono_ms(clock.ctx), 1250);
    assert_int_equal(clock.boot_ms(clock.ctx), 65000);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_system_clocks),
        cmocka_unit_test(test_fake_clock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
