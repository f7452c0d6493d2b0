/*  =========================================================================
    ms_discovery_test - the default choice's names and the --interface
    check (no beacon is started here: NETWORK SAFETY; the beacons
    themselves are tested in network namespaces, ms_netns_lab_test)

    Copyright (c) the meshsweep developers. MIT licence.
    =========================================================================
*/
#include "ms_discovery.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

//  --------------------------------------------------------------------------
//  Container and virtual bridges are skipped by name; real NICs are not.

static void
test_discovery_virtual_names(void **state)
{
    (void) state;
    const char *skipped[] = {
        "docker0", "docker_gwbridge", "br-3f2a9c", "veth12ab", "virbr0",
        "cni0",    "flannel.1",       "cali8d2f",  "tun0",     "tap3"};
    const char *kept[] = {"eth0",  "eno1", "enp3s0", "wlan0", "wlp2s0",
                          "bond0", "ib0",  "br0",    "lo"};
    for (size_t i = 0; i < sizeof skipped / sizeof skipped[0]; i++)
        assert_true(ms_discovery_virtual_name(skipped[i]));
    for (size_t i = 0; i < sizeof kept / sizeof kept[0]; i++)
        assert_false(ms_discovery_virtual_name(kept[i]));
}

//  --------------------------------------------------------------------------
//  --interface: NULL, "*" and existing names pass; a missing name, an
//  empty entry, '*' in a list and an overlong name are refused, naming
//  the entry.

static void
test_discovery_interface_check(void **state)
{
    (void) state;
    ms_diag_t diag;
    ms_diag_clear(&diag);
    assert_int_equal(ms_discovery_interface_check(NULL, &diag), MS_OK);
    assert_int_equal(ms_discovery_interface_check("*", &diag), MS_OK);
    assert_int_equal(ms_discovery_interface_check("lo", &diag), MS_OK);
    assert_int_equal(ms_discovery_interface_check("lo,lo", &diag), MS_OK);
    assert_int_equal(ms_discovery_interface_check("lo,ms-none9", &diag),
                     MS_ERR_INVALID);
    assert_string_equal(diag.where, "interface");
    assert_non_null(strstr(diag.reason, "ms-none9: no such interface"));
    assert_non_null(strstr(diag.reason, "lo"));
    ms_diag_clear(&diag);
    assert_int_equal(ms_discovery_interface_check("", &diag), MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "empty name"));
    assert_int_equal(ms_discovery_interface_check("lo,", &diag),
                     MS_ERR_INVALID);
    assert_int_equal(ms_discovery_interface_check("lo,*", &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "stands alone"));
    assert_int_equal(ms_discovery_interface_check("a234567890123456", &diag),
                     MS_ERR_INVALID);
    assert_non_null(strstr(diag.reason, "at most 15"));
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_discovery_virtual_names),
        cmocka_unit_test(test_discovery_interface_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
